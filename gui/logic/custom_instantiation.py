"""The "custom (Monte Carlo)" choice of the RKHS-weighting form: distribution, kernel and base.

The estimators take an instantiation by name; a Monte Carlo instantiation of built-in pieces is
named "mc:<distribution>:<kernel>:<base>[:<n_draws>]" (docs/INSTANTIATIONS.md). The form shows
the choice CUSTOM with four extra fields (``mc_distribution``, ``mc_kernel``, ``mc_base``,
``mc_n_draws``); :func:`fold` turns them into that name for the estimator and :func:`unfold`
does the reverse when a run's parameters are put back in the form.

This module describes fields and translates values; it builds no widget.
"""

from __future__ import annotations

import dataclasses

from rwtool.features import MonteCarloRKHS

from .methods import ParamSpec

__all__ = ["CUSTOM", "FIELDS", "extra_specs", "with_fields", "fold", "unfold", "uses_width"]

CUSTOM = "custom (Monte Carlo)"
FIELDS = ("mc_distribution", "mc_kernel", "mc_base", "mc_n_draws")


def extra_specs() -> list[ParamSpec]:
    """The fields shown under "instantiation", used only when it is CUSTOM."""
    only = ("instantiation", (CUSTOM.lower(),))
    table = MonteCarloRKHS._parameters
    # the map's entries (choices: the built-in pieces and the registered ones, as the
    # estimator accepts), with the form's longer help naming each choice's formula
    params = [
        dataclasses.replace(table["distribution"], help="p, the sampling distribution of w "
                            "(scale sigma): normal N(0, s^2 I), cauchy, laplace, uniform "
                            "U(-s, s)^n, stumps U{1..n} x N(0, s^2)",
                            ref="docs/INSTANTIATIONS.md"),
        dataclasses.replace(table["kernel"], help="K(u, w) of the weight function: gaussian "
                            "exp(-||u - w||^2 / 2g^2), exponential exp(<u, w> / 2g^2), "
                            "indicator-gaussian (stumps), polynomial (1 + <u, w>/g^2)^2"),
        dataclasses.replace(table["base"], help="phi(w, x), the base predictor: sign, relu, "
                            "tanh, sigmoid of <w, x>, or the stump sign(x_{w1} - w2) (with "
                            "distribution stumps)"),
        dataclasses.replace(table["n_draws"], help="S, the number of Monte Carlo draws shared "
                            "by every centre; the features' error shrinks like 1/sqrt(S), "
                            "faster with the quasi-Monte Carlo points used by default"),
    ]
    return [ParamSpec(dataclasses.replace(p, name=f"mc_{p.name}", only=only), p.default)
            for p in params]


def with_fields(specs: list[ParamSpec]) -> list[ParamSpec]:
    """``specs`` with CUSTOM among the instantiations and the extra fields right after it."""
    out = []
    for spec in specs:
        if spec.name == "instantiation":
            out.append(dataclasses.replace(spec, more_choices=(CUSTOM,)))
            out.extend(extra_specs())
        else:
            out.append(spec)
    return out


#: the width parameter that sets gamma for a kernel when gamma is empty (MonteCarloRKHS)
_WIDTH = {"gaussian": "theta", "exponential": "kappa"}


def uses_width(name: str, params: dict) -> bool:
    """Whether ``name`` (theta or kappa) sets the kernel width of a CUSTOM instantiation."""
    return (params.get("instantiation") == CUSTOM
            and _WIDTH.get(str(params.get("mc_kernel", "gaussian")).lower()) == name)


def fold(params: dict) -> dict:
    """Parameters for the estimator: CUSTOM and the extra fields become an "mc:..." name."""
    out = {k: v for k, v in params.items() if k not in FIELDS}
    if params.get("instantiation") == CUSTOM:
        name = (f"mc:{params.get('mc_distribution', 'normal')}:"
                f"{params.get('mc_kernel', 'gaussian')}:{params.get('mc_base', 'sign')}")
        if params.get("mc_n_draws") is not None:
            name += f":{int(params['mc_n_draws'])}"
        out["instantiation"] = name
    return out


def unfold(params: dict) -> dict:
    """Form values for parameters that name an "mc:..." instantiation."""
    inst = params.get("instantiation")
    if not (isinstance(inst, str) and inst.lower().startswith("mc:")):
        return dict(params)
    parts = inst.split(":")
    out = dict(params, instantiation=CUSTOM)
    for field, value in zip(FIELDS[:3], parts[1:4]):
        out[field] = value
    out["mc_n_draws"] = next((int(p) for p in parts[4:] if p.isdigit()), None)
    return out
