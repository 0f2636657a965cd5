"""Exports of a run: the model file, its ONNX graph, predictions as CSV and a Python snippet
(the plots are exported by gui.widgets.plots.export_plot).

The model file is rwtool's own format (rwtool.persist.save, with the preprocessing record of the
training CSV so the saved model reads raw CSV rows again); predictions are written with the file
line of each row by rwtool.report's CSV writer (the one `rwtool predict` uses); the snippet
reproduces the run with the public API (same CSV options, same estimator parameters, same
seed). Files are written atomically through rwtool.persist.

This module writes files; it must not fit models, build widgets or import Qt.
"""

from __future__ import annotations

import os

import numpy as np

from rwtool.persist import save as save_model_file
from rwtool.persist import to_onnx
from rwtool.report import write_predictions

from .read_options import KEYS as READ_KEYS

__all__ = ["save_model", "export_onnx", "write_predictions", "python_snippet",
           "numeric_metrics", "READ_OPTIONS"]

#: reading options of rwtool.data.read_csv the app records when the user overrides them
READ_OPTIONS = READ_KEYS


def numeric_metrics(metrics: dict) -> dict:
    return {k: float(v) for k, v in metrics.items()
            if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
            and np.isfinite(v)}


def save_model(run, path: str, preprocessing=None) -> str:
    """Write the run's fitted estimator (and the data's preprocessing record) to ``path``;
    returns rwtool.persist.save's SavedPath (``note``: the temporaries of killed saves it
    removed from that folder)."""
    res = run.result or {}
    est = res.get("estimator")
    if est is None:
        raise ValueError(f"run {run.name} has no fitted model to save")
    note = f"trained in rwtool-gui, run {run.name}"
    if run.data.get("path"):
        note += f", data {os.path.basename(run.data['path'])}"
    return save_model_file(est, path, preprocessing=preprocessing,
                           metrics=numeric_metrics(res.get("metrics", {})), notes=note)


def export_onnx(run, path: str, preprocessing=None) -> str:
    """Write the run's fitted estimator as an ONNX graph (rwtool.persist.to_onnx; with the
    training CSV's record the graph takes the CSV's columns); returns the SavedPath."""
    est = (run.result or {}).get("estimator")
    if est is None:
        raise ValueError(f"run {run.name} has no fitted model to export")
    return to_onnx(est, path, preprocessing=preprocessing)


def run_predictions(run, train_rows=None, test_rows=None) -> dict:
    """The columns of a run's predictions CSV: set, file line, actual, predicted."""
    res = run.result or {}
    sets, lines, actual, pred = [], [], [], []
    for name, y, f, rows in (("train", res.get("y_train"), res.get("pred_train"), train_rows),
                             ("test", res.get("y_test"), res.get("pred_test"), test_rows)):
        if y is None or f is None:
            continue
        sets += [name] * len(y)
        lines += list(rows) if rows is not None and len(rows) == len(y) else [""] * len(y)
        actual += np.asarray(y).tolist()
        pred += np.asarray(f).tolist()
    return {"set": sets, "line": lines, "actual": actual, "predicted": pred}


def python_snippet(run, class_module: str) -> str:
    """Python code that reproduces ``run`` with the public API."""
    d = run.data
    cls = run.class_name
    if run.status == "loaded":
        return "\n".join([
            f'"""Uses the model of {run.name} (rwtool-gui)."""',
            "from rwtool.persist import read_model", "",
            f"mf = read_model({d.get('path')!r})",
            "model = mf.estimator",
            'data = mf.apply_csv("new.csv")          # encoded as the training CSV was',
            "print(model.predict(data.X))", ""])
    lines = [
        f'"""Reproduces {run.name} of rwtool-gui (same data, parameters and seeds: the same '
        f'numbers)."""',
        "import numpy as np",
        "",
        "from rwtool.data import read_csv, train_test_csv",
        f"from {class_module} import {cls}",
        "from rwtool.persist import save",
        "",
    ]
    opts = [f"features={d.get('features')!r}", f"missing={d.get('missing', 'error')!r}",
            f"task={d.get('task', 'auto')!r}"]
    opts += [f"{k}={d[k]!r}" for k in READ_OPTIONS if d.get(k) is not None]
    path = d.get("path", "data.csv")
    if d.get("test_size", 0) > 0:
        lines.append(f"train, test = train_test_csv({path!r}, {d.get('target')!r}, "
                     f"test_size={d['test_size']!r}, random_state={d.get('random_state', 0)!r},")
        lines.append("                             " + ", ".join(opts) + ")")
    else:
        lines.append(f"train = read_csv({path!r}, {d.get('target')!r}, " + ", ".join(opts)
                     + ")")
        lines.append("test = None")
    args = ",\n    ".join(f"{k}={v!r}" for k, v in run.params.items())
    fit_kw = ""
    if d.get("balanced"):
        lines += ["", "# class weights n / (k n_c): every class counts the same in the loss",
                  "classes, inverse, counts = np.unique(train.y, return_inverse=True, "
                  "return_counts=True)",
                  "weights = (len(train.y) / (len(classes) * counts))[inverse]"]
        fit_kw = "weights"
    lines += ["", f"params = dict(\n    {args},\n)", f"model = {cls}(**params)",
              "model.fit(train.X, train.y, sample_weight=weights)" if fit_kw else
              "model.fit(train.X, train.y)"]
    if d.get("prune"):
        p = d["prune"]
        lines.append(f"model = model.prune(eps={p['eps']!r}, accept={p['accept']!r}, "
                     f"X=train.X, y=train.y)")
    regression = (run.result or {}).get("task") == "regression"
    if regression:
        lines += ["", "def scores(est, X, y):", "    pred = est.predict(X)",
                  "    ss = float(np.sum((y - y.mean()) ** 2))",
                  '    return {"MSE": float(np.mean((pred - y) ** 2)),',
                  '            "R^2": 1.0 - float(np.sum((y - pred) ** 2)) / ss}']
    else:
        lines += ["", "def scores(est, X, y):",
                  '    return {"error": float(np.mean(est.predict(X) != y))}']
    lines += ["", "metrics = {f\"train {k}\": v for k, v in scores(model, train.X, train.y)"
                  ".items()}",
              "if test is not None:",
              "    metrics.update({f\"test {k}\": v for k, v in scores(model, test.X, test.y)"
              ".items()})"]
    k = d.get("cv_k")
    if k:
        lines += ["", f"# {k}-fold cross-validation on the training rows (the app's folds)",
                  "from rwtool.model_selection import kfold_indices",
                  f"folds = kfold_indices(train.y, {int(k)}, {not regression}, "
                  f"{d.get('random_state', 0)!r})",
                  f"per_fold = [scores({cls}(**params)."
                  + ("fit(train.X[tr], train.y[tr], sample_weight=weights[tr])"
                     if d.get("balanced")
                     else "fit(train.X[tr], train.y[tr])")
                  + ", train.X[va], train.y[va]) for tr, va in folds]",
                  "for key in per_fold[0]:",
                  "    vals = np.array([f[key] for f in per_fold])",
                  "    metrics[f\"cv {key}\"] = float(vals.mean())",
                  "    metrics[f\"cv {key} (std over {len(folds)} folds)\"] = "
                  "float(vals.std(ddof=1))"]
    lines += ["", "for key, value in metrics.items():", "    print(key, value)", "",
              'save(model, "model.rwm", preprocessing=train.preprocessing)', ""]
    return "\n".join(lines)
