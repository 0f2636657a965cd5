"""The runs as a table: one row per run with its data set, task, every parameter and its
headline numbers, for the Runs tab (sortable) and for its CSV export.

Numbers stay numbers (the table sorts them as numbers, the CSV writes them with full
precision); a run without a value has an empty cell.

This module turns runs into rows; it must not build widgets or fit anything.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass, field

import rwtool
from rwtool.persist import atomic_writer
from rwtool.report import fit_summary

from .formats import format_metric, format_param

__all__ = ["Run", "SUMMARY_COLUMNS", "run_row", "runs_rows", "write_runs_csv", "pick_metric",
           "run_labels", "VARIANT_KEYS"]

#: the parameters that say which variant of its method a run is: always in its label
VARIANT_KEYS = ("instantiation", "base", "selector", "penalty", "variant", "solver")
#: at most this many differing parameters in a label (the tooltip and the CSV have them all)
MAX_DIFFERING = 4


@dataclass
class Run:
    run_id: int
    family: str
    title: str
    class_name: str
    params: dict
    data: dict = field(default_factory=dict)       # path and data options
    status: str = "running"
    result: dict | None = None
    curves: dict = field(default_factory=dict)     # name -> (x list, y list)
    x_label: str = "iteration"
    note: str = ""
    #: the rwtool.data.Datasets the run was trained and scored on ("train", "test"): the data
    #: tab's own objects, shared by every run on the same data (never copied)
    rows: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def name(self) -> str:
        return f"#{self.run_id} {self.title}"

    def key_params(self) -> str:
        keys = ("instantiation", "base", "selector", "penalty", "variant", "solver",
                "n_features", "n_particles", "reg", "sigma")
        return ", ".join(f"{k}={self.param_text(k)}" for k in keys if k in self.params)

    def param_text(self, key: str) -> str:
        """The parameter ``key`` as the run's labels show it (reg as the fit used it, an empty
        field as what it means)."""
        if key == "reg":
            return self._reg_text()
        value = self.params[key]
        return self._none_text(key) if value is None else format_param(value)

    def _none_text(self, key: str) -> str:
        """What an empty field means for ``key``: the parameter table's words when they are
        short ("min(500, rows)", "a fresh draw"), else "default"; "None" read as no value
        at all (max_iter=None: no limit?)."""
        param = getattr(getattr(rwtool, self.class_name, None), "_parameters", {}).get(key)
        words = getattr(param, "none", None)
        # a label holds up to four such parameters: a sentence ("1 for sign/relu/stumps,
        # sqrt(d / 2) for fourier") would push the others out of a table cell or a legend
        return words if words and len(words) <= 20 else "default"

    def _reg_text(self) -> str:
        """reg as the fit used it: "auto (1e-07)" when cross-validation chose it, the value
        with "(default)" when the form left it empty (None: the solver's default), which read
        as "no regularisation" when shown as None."""
        given = self.params.get("reg")
        res = self.result or {}
        s = res.get("fit")
        if s is None:
            # once per run (labels are made again at each update of the table; the summary
            # counts the model's non-zero coefficients)
            est = res.get("estimator")
            s = fit_summary(est) if est is not None else {}
            if self.result is not None and est is not None:
                self.result["fit"] = s
        if "reg" in s and (s["reg_auto"] or given is None or given == "auto"):
            chosen = format_param(s["reg"])
            return f"auto ({chosen})" if s["reg_auto"] else f"{chosen} (default)"
        if given is None:
            return "default"
        return format_param(given)

    def headline(self) -> str:
        m = (self.result or {}).get("metrics", {})
        for k in ("test error", "test R^2", "train error", "train R^2"):
            if k in m:
                return f"{k} {format_metric(m[k])}"
        return ""

    def append(self, name: str, x: float, y: float) -> None:
        xs, ys = self.curves.setdefault(name, ([], []))
        xs.append(float(x))
        ys.append(float(y))


def _differing(runs) -> list[str]:
    """The parameters (besides :data:`VARIANT_KEYS`) with more than one value among the runs
    that have them, in first-seen order."""
    keys: list[str] = []
    for r in runs:
        keys += [k for k in r.params if k not in keys and k not in VARIANT_KEYS]
    return [k for k in keys if len({repr(r.params[k]) for r in runs if k in r.params}) > 1]


def run_labels(runs) -> dict[int, str]:
    """``{run_id: label}`` telling each of ``runs`` apart from the others: the method, its
    variant (instantiation, base, selector, penalty, variant, solver), then the parameters
    whose value differs among the runs (at most :data:`MAX_DIFFERING`), and the evaluation or
    data file when those differ, e.g. "RKHS weighting (rwsign, osd, reg=0.01)"."""
    runs = list(runs)
    diff = _differing(runs)
    evals = {r.data.get("evaluation", "holdout") for r in runs}
    files = {os.path.basename(r.data.get("path") or "") for r in runs}
    out = {}
    for r in runs:
        parts = [format_param(r.params[k]) for k in VARIANT_KEYS if k in r.params]
        parts += [f"{k}={r.param_text(k)}" for k in diff if k in r.params][:MAX_DIFFERING]
        if len(evals) > 1:
            parts.append(r.data.get("evaluation", "holdout"))
        if len(files) > 1 and r.data.get("path"):
            parts.append(os.path.basename(r.data["path"]))
        out[r.run_id] = r.title + (f" ({', '.join(parts)})" if parts else "")
    return out


#: the fixed columns, before one column per parameter
SUMMARY_COLUMNS = ("run", "name", "dataset", "target", "task", "method", "estimator", "status",
                   "error / MSE", "AUC / R^2", "baseline", "features used", "fit time (s)",
                   "evaluation")


def pick_metric(metrics: dict, *names: str):
    """The first of ``names`` present in ``metrics``, as (key, value), preferring test rows,
    then cross-validated means, then training rows."""
    for prefix in ("test ", "cv ", "train "):
        for n in names:
            if prefix + n in metrics:
                return prefix + n, metrics[prefix + n]
    return None, None


def run_row(run, label: str | None = None) -> dict:
    res = run.result or {}
    m = res.get("metrics", {})
    task = res.get("task") or run.data.get("task_encoded") or run.data.get("task", "")
    reg = task == "regression"
    _, err = pick_metric(m, "MSE" if reg else "error")
    _, score = pick_metric(m, "R^2" if reg else "AUC")
    base = next((v for k, v in m.items() if k.startswith("baseline")), None)
    path = run.data.get("path") or ""
    row = {"run": run.run_id, "name": label or run.title, "dataset": os.path.basename(path),
           "target":
           run.data.get("target") or "", "task": task, "method": run.title,
           "estimator": run.class_name, "status": run.status, "error / MSE": err,
           "AUC / R^2": score, "baseline": base, "features used": m.get("features used"),
           "fit time (s)": m.get("fit time (s)"),
           "evaluation": run.data.get("evaluation", "holdout")}
    for k, v in run.params.items():
        row[f"param {k}"] = v
    return row


def runs_rows(runs) -> tuple[list[str], list[dict]]:
    """(columns, rows) of ``runs``: the summary columns, then every parameter any run has."""
    runs = list(runs)
    labels = run_labels(runs)
    rows = [run_row(r, labels[r.run_id]) for r in runs]
    params = []
    for r in rows:
        for k in r:
            if k.startswith("param ") and k not in params:
                params.append(k)
    return list(SUMMARY_COLUMNS) + params, rows


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return str(v)


def write_runs_csv(path: str, runs) -> str:
    """Write the runs table to ``path`` as CSV (atomically)."""
    cols, rows = runs_rows(runs)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow([_cell(r.get(c)) for c in cols])
    with atomic_writer(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(buf.getvalue())
    return path
