"""Everything the results panel shows about a fitted model, computed as plain arrays and numbers.

``evaluate`` runs on the worker thread after a fit (predictions on the training and test rows,
metrics, confusion matrix, ROC curve, decision-region grid, coefficient magnitudes, variable
importance, the model's own curves) and returns a dict of numpy arrays, floats and strings that
the GUI thread draws without touching the estimator again. The scores, the label check, the
confusion matrix, what the fit chose and the bounds table are rwtool.report's, shared with the
command line; this module adds what only the app shows (baselines, per-class report, ROC, plots).

This module computes with numpy only; it must not import Qt or draw.
"""

from __future__ import annotations

import math
import time

import numpy as np

from rwtool.inspect import input_share
from rwtool.report import (RowProgress, bounds_table, check_finite_model, class_index,
                           class_report, fit_summary)
from rwtool.report import evaluate as score_rows

__all__ = ["evaluate", "model_bounds", "merge_bounds", "chose_reg", "roc_curve",
           "coefficient_magnitudes", "model_curves", "drawn_rows", "has_predictive_std", "GRID",
           "COUNT_METRICS", "SCORE_NAMES", "MAX_SCATTER", "Z90"]

#: rwtool.report's score keys -> how the app names them ("test error", "train R^2"...)
SCORE_NAMES = {"error": "error", "mse": "MSE", "r2": "R^2", "mae": "MAE"}

#: metrics that count things (shown as whole numbers, also when a model file stored floats)
COUNT_METRICS = frozenset({"features used", "iterations", "rows", "bound: m"})

#: points per axis of the decision-region grid
GRID = 120
#: points of a ROC curve kept for its plot
ROC_POINTS = 2000
#: points of the fitted curve of a one-input regressor
CURVE_POINTS = 400
#: most points a result scatter draws per set (a random subset beyond; docs/bench/gui.md)
MAX_SCATTER = 3000
#: the standard normal's 95% quantile: mean +/- Z90 std is the 90% predictive interval
Z90 = 1.6448536269514722


def drawn_rows(n: int, limit: int | None = None, seed: int = 0) -> np.ndarray | None:
    """The rows a scatter of n points draws: None for all of them when n <= ``limit``
    (MAX_SCATTER), else a reproducible random subset of ``limit`` rows in their order (a plot
    of every point of 250k rows costs seconds; a subset shows the same cloud)."""
    limit = MAX_SCATTER if limit is None else limit
    if n <= limit:
        return None
    return np.sort(np.random.default_rng(seed).choice(n, limit, replace=False))


def has_predictive_std(est) -> bool:
    """Whether ``est.predict(X, return_std=True)`` gives a standard deviation per row: an exact
    least-squares regressor of one target that kept its posterior factor."""
    return getattr(est, "posterior_chol_", None) is not None and getattr(est, "y_1d_", False)


def _intervals(est, X, y, pred, on: str, rows: RowProgress) -> dict:
    """The 90% predictive intervals the predicted-vs-actual plot draws, on the rows it draws
    of the evaluated set ``on``: ``rows`` (their indices, None for all), ``std`` (from
    ``predict(X, return_std=True)``, O(T^2) a row, so only for those rows), ``half_width``
    (Z90 std) and the share ``coverage`` of them whose actual value lies in its interval."""
    idx = drawn_rows(len(X))
    Xs, ys, fs = (X, y, pred) if idx is None else (X[idx], y[idx], pred[idx])
    std = rows.predict(lambda Z: est.predict(Z, return_std=True)[1], Xs).astype(float)
    half = Z90 * std
    inside = np.abs(np.asarray(ys, float) - np.asarray(fs, float)) <= half
    return {"set": on, "rows": idx, "std": std, "half_width": half,
            "coverage": float(np.mean(inside)), "n": len(std)}


def roc_curve(y01: np.ndarray, score: np.ndarray):
    """(fpr, tpr, auc) of ``score`` for binary labels ``y01`` (1 = positive), ties grouped.

    One point per distinct threshold, from (0, 0) to (1, 1); the AUC is the trapezoid area,
    which equals the Mann-Whitney probability P(s+ > s-) + P(s+ = s-)/2.
    """
    y01 = np.asarray(y01).astype(bool)
    score = np.asarray(score, float)
    P, N = int(y01.sum()), int((~y01).sum())
    if P == 0 or N == 0:
        return np.array([0.0, 1.0]), np.array([0.0, 1.0]), float("nan")
    order = np.argsort(-score, kind="stable")
    s, y = score[order], y01[order]
    last = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]
    tps = np.cumsum(y)[last]
    fps = last + 1 - tps
    tpr = np.r_[0.0, tps / P]
    fpr = np.r_[0.0, fps / N]
    auc = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))
    return fpr, tpr, auc


def thin_curve(fpr: np.ndarray, tpr: np.ndarray, limit: int = ROC_POINTS):
    """At most about ``limit`` points of a ROC curve (one point per distinct score: 50,000
    on 50,000 test rows), evenly spaced along fpr + tpr, which grows from 0 to 2, ends kept:
    what a plot can show, kept with the run and painted at every redraw. The AUC is computed
    from the whole curve before."""
    if len(fpr) <= limit:
        return fpr, tpr
    at = np.unique(np.r_[0, np.searchsorted(fpr + tpr, np.linspace(0.0, 2.0, limit)),
                         len(fpr) - 1].clip(0, len(fpr) - 1))
    return fpr[at], tpr[at]


def fit_notes(est, size: int | None) -> list[str]:
    """What a user should know about how the fit ended (a greedy path stopping early)."""
    notes = []
    info = getattr(est, "solver_info_", None)
    info = info if isinstance(info, dict) else {}
    asked = est.get_params().get("n_features") if hasattr(est, "get_params") else None
    stopped = info.get("stopped")
    if stopped and isinstance(asked, int) and size is not None and size < asked:
        cand = info.get("n_candidates")
        if isinstance(cand, int) and cand <= size:
            notes.append(f"The greedy path stopped at {size} of the {asked} features asked for: "
                         f"the dictionary has only {cand} candidate features for these inputs "
                         f"(raise gauss_order, or add input columns, for more).")
        elif stopped == "tolerance":
            notes.append(f"The greedy path stopped at {size} of the {asked} features asked for: "
                         f"no remaining candidate improves the fit by more than tol.")
        else:
            notes.append(f"The path stopped at {size} of the {asked} features ({stopped}).")
    return notes


def coefficient_magnitudes(est) -> tuple[np.ndarray, str] | None:
    """Per-feature magnitude (||a_t|| over outputs, or particle norms) and what it measures."""
    if hasattr(est, "particles_"):
        return np.linalg.norm(est.particles_, axis=0), "particle norm ||w_j||"
    coef = getattr(est, "coef_", None)
    if isinstance(coef, np.ndarray) and coef.size:
        c = coef if coef.ndim == 2 else coef[:, None]
        if _pair_map(est) and len(c) % 2 == 0:
            # one magnitude per frequency: its cos and sin coefficients together
            M = len(c) // 2
            return (np.sqrt(np.linalg.norm(c[:M], axis=1) ** 2 + np.linalg.norm(c[M:], axis=1)
                            ** 2), "coefficient magnitude per frequency ||(a_cos, a_sin)||")
        return np.linalg.norm(c, axis=1), "coefficient magnitude ||a_t||"
    return None


def _pair_map(est) -> bool:
    """A random Fourier map of the "pair" variant: rows [cos; sin] of M frequencies."""
    return str(getattr(getattr(est, "feature_map_", None), "variant", "")).lower() == "pair"


def model_curves(est) -> dict:
    """The curves a fitted model records itself: ``{"x_label": str, "curves": {name: (x, y)}}``.

    BKerNN keeps ``history_`` per iteration, the greedy selectors ``path_`` per number of
    features, solvers with a regularisation path ``solver_info_["path"]``.
    """
    out: dict = {"x_label": "iteration", "curves": {}}
    hist = getattr(est, "history_", None)
    if isinstance(hist, dict):
        for key in ("objective", "train_loss"):
            y = np.asarray(hist.get(key, []), float)
            if y.ndim == 1 and y.size:
                out["curves"][key] = (np.arange(y.size, dtype=float), y)
        return out
    path = getattr(est, "path_", None)
    if isinstance(path, dict) and "n_features" in path:
        x = np.asarray(path["n_features"], float)
        out["x_label"] = "number of features"
        for key, val in path.items():
            y = np.asarray(val, float) if isinstance(val, (list, np.ndarray)) else None
            if key != "n_features" and y is not None and y.shape == x.shape:
                out["curves"][key] = (x, y)
        return out
    info = getattr(est, "solver_info_", None)
    lpath = info.get("path") if isinstance(info, dict) else None
    if isinstance(lpath, dict) and "lam" in lpath:
        x = np.asarray(lpath["lam"], float)
        out["x_label"] = "lambda"
        out["log_x"] = True
        for key, val in lpath.items():
            y = np.asarray(val, float) if isinstance(val, (list, np.ndarray)) else None
            if key != "lam" and y is not None and y.shape == x.shape:
                out["curves"][key] = (x, y)
    return out


def _scores(est, X, rows: RowProgress):
    """Binary decision scores (positive class classes_[1]) or None."""
    if hasattr(est, "decision_function"):
        d = rows.predict(est.decision_function, X).astype(float, copy=False)
        if d.ndim == 1:
            return d
    if hasattr(est, "predict_proba"):
        p = rows.predict(est.predict_proba, X).astype(float, copy=False)
        if p.ndim == 2 and p.shape[1] == 2:
            return p[:, 1]
    return None


def _grid(est, X, classification: bool, classes, rows: RowProgress):
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = np.where(hi > lo, (hi - lo) * 0.05, 1.0)
    lo, hi = lo - pad, hi + pad
    gx = np.linspace(lo[0], hi[0], GRID)
    gy = np.linspace(lo[1], hi[1], GRID)
    XX, YY = np.meshgrid(gx, gy, indexing="ij")
    pts = np.column_stack([XX.ravel(), YY.ravel()])
    pred = rows.predict(est.predict, pts)
    if classification:
        Z = class_index(pred, classes).astype(float)
    else:
        Z = pred.astype(float).ravel()
    return {"x": gx, "y": gy, "z": Z.reshape(GRID, GRID)}


def _curve(est, X, rows: RowProgress) -> dict:
    """A regressor along its single input, on 400 points spanning the rows (and 5% beyond),
    with the predictive standard deviation ("std") when the model has a posterior (the exact
    least-squares regressors: ``predict(X, return_std=True)``)."""
    lo, hi = float(X[:, 0].min()), float(X[:, 0].max())
    pad = (hi - lo) * 0.05 if hi > lo else 1.0
    x = np.linspace(lo - pad, hi + pad, CURVE_POINTS)
    if has_predictive_std(est):
        y, std = est.predict(x[:, None], return_std=True)
        return {"x": x, "y": np.asarray(y, float), "std": np.asarray(std, float)}
    return {"x": x, "y": rows.predict(est.predict, x[:, None]).astype(float).ravel()}


def chose_reg(est) -> bool:
    """Whether the fit chose its reg by cross-validation (reg="auto": rwtool.report's
    fit_summary)."""
    return bool(fit_summary(est).get("reg_auto"))


def evaluate(est, X_train, y_train, X_test=None, y_test=None, *, task: str,
             feature_names=None, fit_time: float | None = None,
             set_names: tuple[str, str] = ("train", "test"), plots: bool = True,
             score_train: bool = True, bounds: bool = True, callback=None) -> dict:
    """Predictions, metrics and plot data of a fitted estimator (see module docstring).

    ``set_names`` names the two row sets in the metric keys ("train error", "test MSE"...);
    a model applied to a new file passes ("file", ...). ``plots=False`` computes the metrics
    only (cross-validation folds). ``score_train=False`` (with test rows and ``plots=False``)
    does not predict the training rows, whose labels or values still set the baselines: a
    fold's score needs only its held-out rows. Raises rwtool.NumericalError when the model or
    its predictions are not finite, so that no metric comes from NaN or infinite scores.
    ``bounds=False`` leaves out the model's bounds (two more passes over the training rows,
    often longer than the fit: the app computes them when asked, :func:`model_bounds`).
    ``callback`` (rwtool.progress) receives "evaluating" events counting the rows predicted
    (every prediction runs in slices of rows, rwtool.report.RowProgress) and "bounds" events;
    its cancel raises rwtool.FitCancelled within a slice.
    """
    t0 = time.perf_counter()
    tr_name, te_name = set_names
    classification = task != "regression"
    res: dict = {"task": task, "metrics": {}, "warnings": []}
    has_test = X_test is not None and y_test is not None and len(y_test) > 0
    if not score_train and (plots or not has_test):
        raise ValueError("score_train=False needs test rows and plots=False")
    m = res["metrics"]
    check_finite_model(est)
    Xe = X_test if has_test else X_train
    classes = []
    if classification:
        # one sort of the training labels: the majority baseline's counts, and the classes of
        # a model without classes_
        values, counts = np.unique(np.asarray(y_train), return_counts=True)
        classes = list(np.asarray(getattr(est, "classes_", values)).tolist())
    n_in = X_train.shape[1]
    total = len(Xe) + (len(X_train) if score_train and has_test else 0)
    if plots and n_in == 2:
        total += GRID * GRID
    elif plots and n_in == 1 and not classification:
        total += CURVE_POINTS
    with_std = plots and not classification and has_predictive_std(est)
    if with_std:
        total += min(len(Xe), MAX_SCATTER)
    rows = RowProgress(callback, "evaluating", total)
    s = _scores(est, Xe, rows) if len(classes) == 2 else None
    if s is not None:
        check_finite_model(est, ("decision scores", s))
    # a binary rwtool classifier's labels are its decision rule (classes_[f > 0]) applied to
    # f: on the evaluated rows they come from the scores just computed, not a second pass
    labels_from_s = s is not None and getattr(est, "_estimator_type", None) == "classifier"
    if s is not None and not labels_from_s:
        rows.extend(len(Xe))        # the labels of the evaluated rows: one more pass

    def predict(X, evaluated):
        if evaluated and labels_from_s:
            return est._labels(s[:, None])
        return rows.predict(est.predict, X)
    pred_tr = predict(X_train, not has_test) if score_train else None
    res["y_train"], res["pred_train"] = np.asarray(y_train), pred_tr
    if has_test:
        pred_te = predict(X_test, True)
        res["y_test"], res["pred_test"] = np.asarray(y_test), pred_te
    yt, pt = (y_test, pred_te) if has_test else (y_train, pred_tr)
    on = te_name if has_test else tr_name
    # the scores as the command line computes them (rwtool.report): the held-out labels are
    # checked against the model's classes (refused when most are unseen, else a note)
    notes: list[str] = []
    evs = {}
    if score_train:
        evs[tr_name] = score_rows(est, X_train, y_train, task=task, pred=pred_tr,
                                  source="the training rows", classes=classes,
                                  labels_checked=True)
    if has_test:
        evs[te_name] = score_rows(est, X_test, y_test, task=task, pred=pred_te,
                                  source=f"the {te_name} rows", classes=classes)
    for name, ev in evs.items():
        keys = ("error",) if classification else \
            ("mse", "r2", "mae") if name == te_name and has_test else ("mse", "r2")
        m.update({f"{name} {SCORE_NAMES[k]}": ev.scores[k] for k in keys if k in ev.scores})
        notes += ev.notes
    if classification:
        res["classes"] = classes
        # the majority class of the training rows, predicted for every evaluated row
        majority = values[np.argmax(counts)]
        m[f"baseline {on} error (majority class)"] = float(np.mean(np.asarray(yt) != majority))
        res["confusion"] = evs[on].confusion
        rep = class_report(yt, pt, classes, cm=res["confusion"])
        rep["on"] = on
        res["per_class"] = rep
        m[f"{on} balanced accuracy"] = rep["balanced_accuracy"]
        m[f"{on} Cohen's kappa"] = rep["kappa"]
        res["confusion_on"] = on
        if s is not None:
            fpr, tpr, auc = roc_curve(np.asarray(yt) == classes[1], s)
            fpr, tpr = thin_curve(fpr, tpr)
            res["roc"] = {"fpr": fpr, "tpr": tpr, "auc": auc, "positive": str(classes[1])}
            if math.isfinite(auc):
                m[f"{on} AUC"] = auc
    else:
        ye, ytr = np.asarray(yt, float), np.asarray(y_train, float)
        m[f"baseline {on} MSE (training mean)"] = float(np.mean((ye - ytr.mean()) ** 2))
        if with_std:
            res["intervals"] = _intervals(est, Xe, ye, np.asarray(pt, float), on, rows)
    res["fit"] = fit = fit_summary(est)       # (the runs' labels read it too)
    size = fit.get("n_features_out")
    if size is not None:
        m["features used"] = size
    if fit_time is not None:
        m["fit time (s)"] = float(fit_time)
    if fit.get("reg_auto"):
        m["reg chosen (auto)"] = fit["reg"]
    if fit.get("theta_default"):
        m["theta (the instantiation's default)"] = fit["theta"]   # theta=None resolves per kind
    res["notes"] = notes + fit_notes(est, size)
    res["meanings"] = {}
    if not plots:
        rows.end()
        res["eval_time"] = time.perf_counter() - t0
        return res
    names = list(feature_names) if feature_names is not None and len(feature_names) == n_in \
        else [f"x{j}" for j in range(n_in)]
    res["feature_names"] = names
    cm = coefficient_magnitudes(est)
    if cm is not None:
        res["coef_magnitudes"], res["coef_label"] = np.sort(cm[0])[::-1], cm[1]
    vi = input_share(est)
    if vi is not None:
        res["importance"], res["importance_label"] = vi
    Xall = np.vstack([X_train, X_test]) if has_test else X_train
    if n_in == 1 and not classification:
        res["curve"] = _curve(est, Xall, rows)
        res["X_train1"], res["X_test1"] = X_train[:, 0], (X_test[:, 0] if has_test else None)
    if n_in == 2:
        res["grid"] = _grid(est, Xall, classification, res.get("classes"), rows)
        res["X_train2"], res["X_test2"] = X_train, (X_test if has_test else None)
    res["model_curves"] = model_curves(est)
    rows.end()
    res["has_bounds"] = callable(getattr(est, "bounds", None))
    if bounds:
        res.update(model_bounds(est, X_train, y_train, callback))
        merge_bounds(res, res)
    res["eval_time"] = time.perf_counter() - t0
    return res


def model_bounds(est, X_train, y_train, callback=None) -> dict:
    """The model's bounds on its training rows (rwtool.report.bounds_table) as the metrics,
    meanings and note a result adds: ``{"bounds": {name: value}, "bound_meanings": {...},
    "bounds_note": str | None}``. ``callback`` reports "bounds" progress and cancels."""
    rows, note = bounds_table(est, X_train, y_train, callback)
    return {"bounds": {f"bound: {b.key}": b.value for b in rows},
            "bound_meanings": {f"bound: {b.key}": b.meaning for b in rows},
            "bounds_note": note}


def merge_bounds(res: dict, bounds: dict) -> None:
    """Put the entries of :func:`model_bounds` into the metrics, meanings and notes of ``res``
    (after the metrics it has)."""
    res["metrics"].update(bounds.get("bounds", {}))
    res.setdefault("meanings", {}).update(bounds.get("bound_meanings", {}))
    note = bounds.get("bounds_note")
    if note and note not in res.setdefault("notes", []):
        res["notes"].append(note)
    res["bounds_computed"] = True
