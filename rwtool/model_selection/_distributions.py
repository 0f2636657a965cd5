"""The distributions a randomized search draws parameters from: LogUniform, Uniform, Choice.

Each has ``rvs(random_state)`` returning one value, as scipy.stats' frozen distributions do
(which a search space may also hold). A leaf: it imports nothing of rwtool but the seeding rule.
"""

from __future__ import annotations

import math

from .._base import check_random_state

__all__ = ["LogUniform", "Uniform", "Choice"]


class LogUniform:
    """log-uniform on [low, high]: exp(U(log low, log high))."""

    def __init__(self, low: float, high: float):
        if not 0 < low < high:
            raise ValueError(f"LogUniform needs 0 < low < high, got ({low}, {high})")
        self.low, self.high = float(low), float(high)

    def rvs(self, random_state=None):
        rng = check_random_state(random_state)
        return float(math.exp(rng.uniform(math.log(self.low), math.log(self.high))))

    def __repr__(self):
        return f"LogUniform({self.low:g}, {self.high:g})"


class Uniform:
    """Uniform on [low, high]."""

    def __init__(self, low: float, high: float):
        if not low < high:
            raise ValueError(f"Uniform needs low < high, got ({low}, {high})")
        self.low, self.high = float(low), float(high)

    def rvs(self, random_state=None):
        return float(check_random_state(random_state).uniform(self.low, self.high))

    def __repr__(self):
        return f"Uniform({self.low:g}, {self.high:g})"


class Choice:
    """A uniform choice among values."""

    def __init__(self, values):
        self.values = list(values)
        if not self.values:
            raise ValueError("Choice needs at least one value")

    def rvs(self, random_state=None):
        return self.values[int(check_random_state(random_state).integers(len(self.values)))]

    def __repr__(self):
        return f"Choice({self.values!r})"
