"""The rules half of the method form: which fields matter for which choices, and the
derived quantities of a chosen model on the training rows, from the estimators' own rules.

Which parameter a choice disables comes from the parameter tables' ``only`` entries; gamma from
theta or kappa, theta and kappa of seed 003 Table 2, the SGD step-size offset and BKerNN's
automatic lambda come from the estimators (``width_rule``, ``step_rule``, ``resolved_reg``), so
what the form shows is what the fit uses.

This module computes; it must not import Qt or build widgets, and it must not fit a model.
"""

from __future__ import annotations

import math

import numpy as np

from rwtool.features import INSTANTIATIONS
from rwtool.report import METHODS

__all__ = ["DataStats", "derived_quantities", "relevance_rules", "theta_hint"]


def relevance_rules(specs) -> dict:
    """parameter -> (controlling parameter, values for which it matters), from the parameter
    tables' ``only`` entries (a Lasso tolerance matters only with solver="lasso")."""
    return {s.name: (s.only[0], set(s.only[1])) for s in specs if s.only}


#: rows of a block of :meth:`DataStats.steps` (1-2 ms of the GUI thread for 3 columns; the
#: whole of 150,000 rows at once was 17 ms under load, the longest turn of opening a file)
STEP_ROWS = 16_384


class DataStats:
    """What the derived quantities need from the training rows, computed once per dataset:
    the number of inputs and rows, and max_i ||x_i||^2 raw and standardised.

    ``later=True`` leaves the passes over the rows to :meth:`steps`, a block of rows a step
    (gui.widgets.steps); :attr:`ready` says when they are done. The column means and standard
    deviations are merged block by block (Chan et al.'s pairwise update), so the blocks give
    the whole array's numbers up to rounding."""

    def __init__(self, X: np.ndarray, later: bool = False):
        self.n_rows, self.n_inputs = X.shape
        self.sq_max: dict[bool, float] = {}
        self._left = self._passes(np.asarray(X, float))
        if not later:
            for _ in self._left:
                pass

    @property
    def ready(self) -> bool:
        return len(self.sq_max) == 2

    def steps(self):
        """The passes left, up to each ``yield`` a block of STEP_ROWS rows."""
        return self._left

    def _passes(self, X: np.ndarray):
        blocks = [X[i:i + STEP_ROWS] for i in range(0, len(X), STEP_ROWS)]
        n, mean, m2, raw = 0, np.zeros(X.shape[1]), np.zeros(X.shape[1]), 0.0
        for b in blocks:
            nb, mb = len(b), b.mean(axis=0)
            delta = mb - mean
            m2 += ((b - mb) ** 2).sum(axis=0) + delta ** 2 * (n * nb / (n + nb))
            mean += delta * (nb / (n + nb))
            n += nb
            raw = max(raw, float(np.einsum("ij,ij->i", b, b).max()))
            yield
        sd = np.sqrt(m2 / n) if n else m2
        sd = np.where(sd > 0, sd, 1.0)
        std = 0.0
        for b in blocks:
            z = (b - mean) / sd
            std = max(std, float(np.einsum("ij,ij->i", z, z).max()))
            yield
        self.sq_max = {False: raw, True: std}

    def norm_max(self, standardize: bool) -> float:
        """sup ||x|| over the rows, raw or standardised (the estimators add their bias
        column themselves)."""
        return math.sqrt(self.sq_max[bool(standardize)])


def derived_quantities(family: str, params: dict, data) -> list[tuple[str, str]]:
    """``[(label, value text)]`` of what the parameters imply on the training rows ``data``
    (an array or its :class:`DataStats`; the list may be empty), from the estimators' rules.

    RKHS weighting (seed 003 Tables 2 and 4): gamma from theta (RWSign, RWRelu) or kappa
    (RWExpSign, RWExpRelu), gamma = sigma for RWStumps, then theta and kappa of the instantiation
    with n the number of columns the map sees (inputs plus the bias column) and sup ||x|| on the
    training rows as the estimator prepares them (``width_rule``). SGD (seed 002 Theorem 3):
    the step-size offset gamma and eta_1 = 2 / (lambda (gamma + 1)) (``step_rule``). BKerNN:
    lambda = max_i ||x_i|| / n for reg="auto" (``resolved_reg``).
    """
    out: list[tuple[str, str]] = []
    if isinstance(data, np.ndarray) and data.ndim == 2 and data.size:
        data = DataStats(data)
    if not isinstance(data, DataStats):
        return [("", "Load data to see the derived quantities.")]
    method = METHODS.get(family)
    cls = None if method is None else (method.classifier or method.regressor)
    if cls is None:
        return out
    est = cls(**params)
    if family == "rw":
        w = est.width_rule(data.n_inputs, data.norm_max(bool(est.standardize)))
        origin = "" if est.theta is not None else _theta_origin(params)
        if not w["closed_form"]:
            if w["theta_target"] is not None:
                out.append(("θ (sets γ)", f"{w['theta_target']:g}{origin}"))
            return out + [("θ, κ", "no closed form: Monte Carlo estimates in the bounds after "
                                   "training (docs/INSTANTIATIONS.md)")]
        rule = w["gamma_rule"]
        how = (f"from θ = {w['theta_target']:g}{origin} (003 Table 4)" if rule == "theta" else
               f"from κ = {w['kappa_target']:g} (003 Table 4)" if rule == "kappa" else
               "= σ" if rule == "sigma" else "given")
        out.append(("γ (kernel width)", f"{w['gamma']:.4g}  {how}"))
        out.append(("θ (sup |ψ|, 003 Table 2)", _fmt(w["theta"])))
        out.append(("κ (003 Table 2)", _fmt(w["kappa"])))
        out.append(("n, sup ‖x‖", f"{w['n']} columns seen by the map, {w['x_norm_max']:.3g}"))
    elif family == "rfsgd":
        r = est.step_rule()
        out.append(("γ (step offset)", f"{r['gamma']:.6g}" + ("" if r["gamma_given"] else
                                                            "  (smallest meeting Thm 3)")))
        out.append(("η₁ = 2/(λ(γ+1))", f"{r['eta1']:.4g}" + (
            "" if r["meets_theorem"] else f"  > {r['bound']:.3g}: breaks Thm 3")))
    elif family == "bkernn" and est.reg == "auto":
        lam = est.resolved_reg(data.n_rows, data.norm_max(bool(est.standardize)))
        out.append(("λ (auto)", f"{lam:.4g} = max‖x‖ / n (001 Sec. 5.3)"))
    return out


def _fmt(v: float) -> str:
    return "∞" if not math.isfinite(v) else f"{v:.4g}"


def _theta_used(params: dict):
    """The theta the gamma rule of the chosen instantiation will use (None: it uses none)."""
    # the estimator's own rule, before fitting (the fit uses the same call)
    est = METHODS["rw"].classifier(instantiation=params.get("instantiation", "rwsign"),
                                   theta=params.get("theta"), gamma=params.get("gamma"))
    return est.width_rule(1)["theta_target"]


def _theta_origin(params: dict) -> str:
    """Whose default an empty theta is (called only when the instantiation uses a theta)."""
    if params.get("theta") is not None:
        return ""
    inst = str(params.get("instantiation", "rwsign")).lower()
    return f", the default for {inst}" if inst in INSTANTIATIONS else \
        ", the default for Monte Carlo Gaussian kernels"


def theta_hint(params: dict) -> str:
    """What an empty theta field means for the chosen instantiation (the field's placeholder)."""
    try:
        theta = _theta_used(dict(params, theta=None))
    except (ValueError, TypeError):
        return "empty = None"
    if theta is None:
        return "empty = None (θ is not used here)"
    return f"empty = {theta:g}{_theta_origin(dict(params, theta=None))}"
