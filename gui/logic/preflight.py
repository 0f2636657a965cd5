"""Checks before a fit starts: what it will cost, and choices that cannot work on this data.

``preflight`` looks at the configured estimator and the encoded training rows and returns what
the window must say before submitting the fit: a refusal (the fit needs more memory than the
machine has, or reg="auto"/k-fold needs more rows of a class than there are), warnings (many
classes for the rows, which usually means a numeric quantity picked as a classification
target), and the estimate of memory and time (rwtool.resources: every fit of the plan and
the predictions after it, at the machine's load), with whether it is long enough to ask the
user first. Messages refer to what the form has (Task, reg, the
folds of the evaluation or of the search), never to parameters the user cannot see.

This module decides; it must not fit, and it must not build widgets.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from rwtool.exceptions import human_bytes
from rwtool.resources import (MEMORY_FRACTION, available_memory, cpu_share, estimate_fit,
                              estimate_predict)
# the solvers whose reg='auto' folds come from sums over position-hashed rows (not
# stratified): rwtool.scale's public name for them
from rwtool.scale import STREAM_SOLVERS as FROM_SUMS_SOLVERS

__all__ = ["Preflight", "preflight", "many_classes", "AUTO_REG_FOLDS", "LONG_FIT_S",
           "LARGE_FIT_BYTES", "LIVE_SHARE"]

#: folds of reg="auto" in rwtool (estimators/_random_features.py _fit_auto_reg); only the solvers
#: outside FROM_SUMS_SOLVERS split them by class
AUTO_REG_FOLDS = 3
#: a fit estimated longer than this, or larger than LARGE_FIT_BYTES, is confirmed first
LONG_FIT_S = 60.0
LARGE_FIT_BYTES = 2 << 30


#: share of the fit's time a live validation curve may take (rwtool.solvers._sgd.LIVE_SHARE:
#: averaged SGD evaluates only while its evaluations took at most this share of its steps)
LIVE_SHARE = 0.1


@dataclass
class Preflight:
    """What to tell the user before a run. The time is the wall-clock time of the whole run
    (``seconds``: every fit of the plan, ``fit_seconds``, then the predictions it scores,
    ``after_seconds``) at the machine's load when asked (``share``: rwtool.resources.cpu_share);
    ``estimate`` is the largest single fit's FitEstimate (its memory, and its CPU seconds)."""

    refuse: str = ""                       # non-empty: do not start, show this
    warnings: list = field(default_factory=list)
    estimate: object = None                # rwtool.resources.FitEstimate or None
    available: int = 0
    confirm: str = ""                      # non-empty: ask the user with this text first
    seconds: float | None = None
    fit_seconds: float | None = None
    after_seconds: float | None = None
    share: float = 1.0

    def summary(self) -> str:
        e = self.estimate
        if e is None:
            return ""
        text = f"estimated peak memory {human_bytes(e.peak_bytes)}"
        if self.seconds is not None:
            text += f", about {_duration(self.seconds)}"
            if self.after_seconds and self.after_seconds >= 0.05 * self.seconds:
                text += (f" (training {_duration(self.fit_seconds)}, predictions "
                         f"{_duration(self.after_seconds)})")
            if self.share < 0.95:
                text += (f" on this machine's load (other programs leave this run "
                         f"{100 * self.share:.0f}% of a core)")
        return text + f" ({human_bytes(self.available)} available)"


def _duration(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min"


def many_classes(n_rows: int, n_classes: int) -> str:
    """A warning when a classification target has too many classes for its rows, else ""."""
    if n_classes <= 2:
        return ""
    per = n_rows / n_classes
    if n_classes > 100 or per < 10:
        return (f"the target has {n_classes:,} classes for {n_rows:,} training rows "
                f"({per:.1f} rows per class): a model cannot learn that many classes from so "
                f"few rows each, and a fit costs memory and time per class. If the target is a "
                f"quantity (a numeric column with many values), choose Task: regression on the "
                f"Data tab.")
    return ""


def _class_floor(values, counts, folds: int, why: str) -> str:
    """Why ``folds`` stratified folds cannot be made from these class counts ("" when they can)."""
    low = int(counts.min())
    if low >= folds:
        return ""
    c = values[int(np.argmin(counts))]
    n_low = int(np.count_nonzero(counts < folds))
    return (f"{why} needs at least {folds} rows of every class, but class {c!r} has {low} "
            f"(and {n_low:,} class(es) have fewer than {folds}). Choose Task: regression if "
            f"the target is a quantity, or drop the rare classes from the file")


def _with(est, params: dict):
    """An unfitted copy of ``est`` with ``params`` set (a search candidate's)."""
    return type(est)(**{**est.get_params(), **params})


def preflight(est, X, y, task: str, *, folds: int | None = None,
              folds_what: str = "k-fold evaluation", n_fits: int = 1, fits=None,
              live_curve: bool = False, available: int | None = None,
              load: float | None = None) -> Preflight:
    """What to tell the user before ``est.fit(X, y)`` (see the module docstring).

    ``folds`` is the number of folds the app itself will use (k-fold evaluation or a search),
    with ``folds_what`` naming the form control that sets it. ``fits`` lists the run's fits as
    (training rows, rows predicted after it[, the parameters that fit sets]), one after the
    other (the plan's ``fit_sizes``: folds, candidates, the final fit and its evaluation);
    without it, ``n_fits``
    fits on every row of ``X``, each predicting them once. They add up in time, not in memory.
    ``live_curve``: the final fit draws a live validation curve (at most LIVE_SHARE of its
    time). ``load``: how many scheduling groups compete for the cores
    (rwtool.resources.cpu_share; default: counted now).
    """
    out = Preflight()
    n, d = X.shape
    classification = task != "regression"
    k = 1
    if classification:
        # one sort of the labels (0.5 s for a million text labels, on the GUI thread) serves
        # the class count and every fold check
        values, counts = np.unique(np.asarray(y), return_counts=True)
        k = len(values)
        w = many_classes(n, k)
        if w:
            out.warnings.append(w)
        params = est.get_params() if hasattr(est, "get_params") else {}
        stratified = params.get("solver") not in FROM_SUMS_SOLVERS
        if stratified and isinstance(params.get("reg"), str) and params["reg"].lower() == "auto":
            msg = _class_floor(values, counts, AUTO_REG_FOLDS,
                               f"reg = auto (chosen by {AUTO_REG_FOLDS}-fold cross-validation)")
            if msg:
                out.refuse = msg + ", or type a number in reg."
                return out
        if folds:
            msg = _class_floor(values, counts, int(folds), f"{folds_what} with {folds} folds")
            if msg:
                out.refuse = msg + f", or lower the folds of the {folds_what}."
                return out
    n_outputs = 1 if k <= 2 else k
    out.estimate = estimate_fit(est, n, d, n_outputs)
    fits = list(fits) if fits is not None else [(n, n)] * int(n_fits)
    if len(fits) > 1:
        out.estimate = replace(out.estimate,
                               detail=f"{out.estimate.detail} ({len(fits)} fits)".strip())
    if out.estimate.seconds is not None:
        fit_cpu = after_cpu = 0.0
        for rows, scored, *params in fits:
            one = _with(est, params[0]) if params and params[0] else est
            fit_cpu += (out.estimate.seconds if one is est and rows == n else
                        estimate_fit(one, rows, d, n_outputs).seconds or 0.0)
            after_cpu += estimate_predict(one, scored, d, n_outputs)
        if live_curve:
            fit_cpu += LIVE_SHARE * out.estimate.seconds
        out.share = cpu_share(load)
        out.fit_seconds, out.after_seconds = fit_cpu / out.share, after_cpu / out.share
        out.seconds = out.fit_seconds + out.after_seconds
    out.available = available_memory() if available is None else int(available)
    peak = out.estimate.peak_bytes
    if peak > MEMORY_FRACTION * out.available:
        detail = f" ({out.estimate.detail})" if out.estimate.detail else ""
        out.refuse = (f"this fit would need about {human_bytes(peak)} of memory{detail}, but only "
                      f"{human_bytes(out.available)} is available. Use fewer features or rows"
                      + (", or Task: regression" if k > 2 else "") + ".")
        return out
    secs = out.seconds
    if peak > LARGE_FIT_BYTES or (secs is not None and secs > LONG_FIT_S):
        out.confirm = f"This fit is large: {out.summary()}. Start it?"
    return out
