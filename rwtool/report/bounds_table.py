"""The bounds table: each number a model's ``bounds(X, y)`` reports, with one line saying what it
means, for the command line and the app alike.

The RKHS weightings report the constants of their instantiation and the generalisation bounds
of seed 000 / 003 on the training sample (rwtool.estimators.random_features ``bounds``). The
losses are the squared loss (f - y)^2 / 2 in the units the model is fit in (+/-1 labels,
standardised regression targets), so a bound is read against ``train_loss``, not against the
printed error. This module lays the numbers out; it must not compute a bound itself.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..exceptions import FitCancelled

__all__ = ["Bound", "BOUND_MEANINGS", "bounds_table", "bound_meanings"]

#: key of ``bounds()`` -> what the number is (ASCII: the command line prints it as is)
BOUND_MEANINGS = {
    "theta": "sup_x ||psi_x||_H: |f(x)| <= theta * rkhs_norm (003 Table 2)",
    "kappa": "sup_x sqrt(E_w K(w,w) phi(w,x)^2) (003 Table 2)",
    "tau": "sup_x sqrt(E_w phi(w,x)^2), estimated on the training rows (003 eq. 56, Sec. 7.3)",
    "m": "training rows the bounds are computed on",
    "delta": "each bound holds with probability at least 1 - delta over the training sample",
    "rkhs_norm": "B = ||alpha||_H, the RKHS norm of the learned weighting",
    "l2p_norm": "||alpha||_L2(p), estimated with fresh centres (003 Sec. 7.3)",
    "train_loss": "L_S: mean (f - y)^2 / 2 on the training rows",
    "y_bound": "max |y| on the training rows",
    "rho": "theta * B + y_bound: the loss's Lipschitz constant where |f| <= theta * B",
    "loss_max": "(theta * B + y_bound)^2 / 2: the largest loss where |f| <= theta * B",
    "rademacher_bound": "bound on the expected loss L_D on new data (000 Theorem 10)",
    "gap_theorem62": "bound on L_D - L_S from B and theta (003 Theorem 6.2, eq. 89)",
    "gap_theorem65": "bound on L_D - L_S from ||alpha||_L2(p) and tau (003 Theorem 6.5, "
                     "eq. 95)",
    "train_error": "0-1 error on the training rows",
}

_ESTIMATED = ("theta and kappa of the bounds are Monte Carlo estimates (no closed form for "
              "this instantiation)")


@dataclass(frozen=True)
class Bound:
    """One row of the table: the key of ``bounds()``, its value and what it means."""

    key: str
    value: float | int
    meaning: str


def bounds_table(est, X, y, callback=None) -> tuple[list[Bound], str | None]:
    """``(rows, note)``: the scalar entries of ``est.bounds(X, y)`` with their meanings, in the
    estimator's order, and a note when they could not be computed (the fit still counts) or
    when theta and kappa are Monte Carlo estimates.
    Estimators without ``bounds`` give no rows. Entries with one value per output (several
    classes) are left out. ``callback`` (rwtool.progress) goes to ``est.bounds``, whose
    passes over the rows report "bounds" progress and stop on its cancel (FitCancelled)."""
    if not callable(getattr(est, "bounds", None)):
        return [], None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b = est.bounds(X, y) if callback is None else est.bounds(X, y, callback=callback)
    except FitCancelled:
        raise
    except Exception as exc:  # a bound that cannot be computed is reported, not fatal
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return [], f"bounds not computed ({first})"
    estimated = isinstance(b, dict) and b.get("theta_kappa") == "Monte Carlo estimates"
    rows = []
    for k, v in (b.items() if isinstance(b, dict) else ()):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            continue
        value = int(v) if isinstance(v, (int, np.integer)) else float(v)
        meaning = BOUND_MEANINGS.get(k, "")
        if estimated and k in ("theta", "kappa"):
            meaning = meaning.split(" (003")[0] + " (Monte Carlo estimate)"
        rows.append(Bound(k, value, meaning))
    return rows, (_ESTIMATED if estimated else None)


def bound_meanings(metrics) -> dict:
    """``{name: meaning}`` for the bound entries of a metrics record, named as a model file
    stores them: "bound_theta" (the command line) or "bound: theta" (the app)."""
    out = {}
    for name in metrics:
        for prefix in ("bound_", "bound: "):
            if str(name).startswith(prefix) and name[len(prefix):] in BOUND_MEANINGS:
                out[name] = BOUND_MEANINGS[name[len(prefix):]]
    return out
