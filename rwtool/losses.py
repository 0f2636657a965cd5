"""The two losses of the spec (methods/rkhs-weightings.md section 3): squared and logistic.

    squared   l(f, y) = (f - y)^2 / 2        l'(f, y) = f - y                l'' = 1
    logistic  l(f, y) = log(1 + exp(-y f))   l'(f, y) = -y / (1 + exp(y f))  l'' = s (1 - s),
              s = 1 / (1 + exp(-y f))

with y in {-1, +1} for the logistic loss. The 1/2 on the squared loss makes the same ``reg`` mean
the same model for every solver and makes the Lasso objective scikit-learn's.

The numba scalar functions (``loss_value``, ``loss_deriv``, ``loss_deriv2``) take an integer loss
code so solver kernels can switch on it; the :class:`Loss` objects are their Python face, with
the constants the bounds need: rho, the Lipschitz constant of l(., y) on predictions bounded by
F (000 Theorem 10 / 003 Theorem 6.2), M, the largest loss value there, and the smoothness (the
Lipschitz constant of l', used for step sizes). This module computes losses; it does not learn.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np
from numba import njit

__all__ = ["Loss", "SquaredLoss", "LogisticLoss", "LOSSES", "get_loss", "SQUARED", "LOGISTIC",
           "loss_value", "loss_deriv", "loss_deriv2"]

SQUARED = 0
LOGISTIC = 1


@njit(cache=True, nogil=True)
def loss_value(code, f, y):
    """l(f, y) for loss ``code``; the logistic form is evaluated without overflow."""
    if code == SQUARED:
        d = f - y
        return 0.5 * d * d
    z = -y * f
    if z > 0.0:
        return z + math.log1p(math.exp(-z))
    return math.log1p(math.exp(z))


@njit(cache=True, nogil=True)
def loss_deriv(code, f, y):
    """dl/df at (f, y)."""
    if code == SQUARED:
        return f - y
    z = y * f
    # -y / (1 + exp(z)) written so that neither branch overflows
    if z >= 0.0:
        e = math.exp(-z)
        return -y * e / (1.0 + e)
    return -y / (1.0 + math.exp(z))


@njit(cache=True, nogil=True)
def loss_deriv2(code, f, y):
    """d^2 l / df^2 at (f, y) (y^2 = 1 for the logistic loss)."""
    if code == SQUARED:
        return 1.0
    z = y * f
    e = math.exp(-abs(z))
    return e / ((1.0 + e) * (1.0 + e))


class Loss(ABC):
    """A loss with its value, derivative and the constants the bounds and step sizes use."""

    name = ""
    code = -1
    #: Lipschitz constant of l' in f (the smoothness)
    smoothness = 1.0

    @abstractmethod
    def value(self, f, y) -> np.ndarray:
        """l(f_i, y_i) element-wise."""

    @abstractmethod
    def derivative(self, f, y) -> np.ndarray:
        """dl/df element-wise."""

    def mean(self, f, y) -> float:
        """(1/m) sum_i l(f_i, y_i)."""
        return float(np.mean(self.value(f, y)))

    @abstractmethod
    def lipschitz(self, f_bound: float, y_bound: float = 1.0) -> float:
        """rho: Lipschitz constant of f -> l(f, y) on |f| <= f_bound, |y| <= y_bound."""

    @abstractmethod
    def max_value(self, f_bound: float, y_bound: float = 1.0) -> float:
        """M: the largest loss on |f| <= f_bound, |y| <= y_bound."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SquaredLoss(Loss):
    """l(f, y) = (f - y)^2 / 2."""

    name = "squared"
    code = SQUARED
    smoothness = 1.0

    def value(self, f, y):
        d = np.asarray(f, dtype=float) - np.asarray(y, dtype=float)
        return 0.5 * d * d

    def derivative(self, f, y):
        return np.asarray(f, dtype=float) - np.asarray(y, dtype=float)

    def second_derivative(self, f, y):
        return np.ones(np.broadcast(np.asarray(f), np.asarray(y)).shape)

    def lipschitz(self, f_bound, y_bound=1.0):
        # |d/df (f - y)^2 / 2| = |f - y| <= F + Y: half the 2(F + 1) of 000 Appendix (Y = 1);
        # regressors fit standardised targets, whose |y| often exceeds 1
        return float(f_bound) + float(y_bound)

    def max_value(self, f_bound, y_bound=1.0):
        return 0.5 * (float(f_bound) + float(y_bound)) ** 2


class LogisticLoss(Loss):
    """l(f, y) = log(1 + exp(-y f)), y in {-1, +1}."""

    name = "logistic"
    code = LOGISTIC
    smoothness = 0.25

    def value(self, f, y):
        z = -np.asarray(y, dtype=float) * np.asarray(f, dtype=float)
        return np.logaddexp(0.0, z)

    def derivative(self, f, y):
        y = np.asarray(y, dtype=float)
        return -y * _expit(-y * np.asarray(f, dtype=float))

    def second_derivative(self, f, y):
        # e / (1 + e)^2 with e = exp(-|y f|) keeps the tails that s (1 - s) rounds away
        e = np.exp(-np.abs(np.asarray(y, dtype=float) * np.asarray(f, dtype=float)))
        return e / ((1.0 + e) * (1.0 + e))

    def lipschitz(self, f_bound, y_bound=1.0):
        return 1.0                      # y is +/-1: y_bound does not enter

    def max_value(self, f_bound, y_bound=1.0):
        return float(np.logaddexp(0.0, float(f_bound)))


def _expit(z):
    out = np.empty_like(z, dtype=float)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    e = np.exp(z[~pos])
    out[~pos] = e / (1.0 + e)
    return out


LOSSES = {"squared": SquaredLoss, "logistic": LogisticLoss}


def get_loss(name) -> Loss:
    """The loss called ``name`` ("squared" or "logistic"), or ``name`` itself if already a Loss."""
    if isinstance(name, Loss):
        return name
    if not isinstance(name, str) or name.lower() not in LOSSES:
        raise ValueError(f"loss must be one of {', '.join(map(repr, LOSSES))}, got {name!r}")
    return LOSSES[name.lower()]()
