"""The x axis of the comparison of runs: one scale for runs of different lengths or units.

Overlaid on their own x, a 60-epoch run and a 5,500,000-iteration run share one linear axis and
the short run is a dot at the origin; runs counted in different units (epochs, iterations,
features added) do not share a scale at all. Such runs are compared along the fraction of
each run's own progress (its x over its last x: 1 where it ended), the axis label says so,
and each run's legend entry gives its own range. A run's length is its last (largest) x:
iterations, epochs, features and candidates count from zero, and a run whose curve holds a
single point still ran that far. Runs of one unit whose lengths are within
:data:`LENGTH_RATIO` of each other keep their own x.

This module computes the axis; it must not draw.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LENGTH_RATIO", "overlay_x", "run_range"]

#: runs whose lengths (last x) differ by more than this factor are compared by their progress
LENGTH_RATIO = 10.0


def _span(x: np.ndarray) -> tuple[float, float]:
    f = x[np.isfinite(x)]
    return (float(f.min()), float(f.max())) if f.size else (0.0, 0.0)


def _number(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,.4g}"


def run_range(x, label: str) -> str:
    """A run's own x range, for its legend entry: ``"iteration 0–5,500,000"`` (one x:
    ``"iteration 18,000"``)."""
    lo, hi = _span(np.asarray(x, float))
    return f"{label} {_number(lo)}" + (f"–{_number(hi)}" if hi > lo else "")


def overlay_x(curves) -> tuple[list[np.ndarray], str, bool]:
    """``(xs, axis label, fractions)`` for ``curves``, a list of ``(x, x label)`` per run.

    ``fractions`` is True when the runs are drawn along the fraction of their own progress
    (their units differ, or their lengths differ by more than LENGTH_RATIO): each x over the
    run's last x, or, for a run with x below zero, its place between its first and last x."""
    xs = [np.asarray(x, float) for x, _ in curves]
    labels = sorted({lab for _, lab in curves})
    ends = [hi for _, hi in map(_span, xs)]
    positive = [e for e in ends if e > 0]
    mixed = len(labels) > 1
    uneven = len(positive) > 1 and max(positive) > LENGTH_RATIO * min(positive)
    unit = " / ".join(labels) or "iteration"
    if not (mixed or uneven):
        return xs, unit, False
    out = []
    for x in xs:
        lo, hi = _span(x)
        if lo >= 0 and hi > 0:
            out.append(x / hi)
        else:
            out.append((x - lo) / (hi - lo) if hi > lo else np.ones_like(x))
    why = "units differ" if mixed else f"lengths differ more than {LENGTH_RATIO:g}x"
    return out, f"fraction of each run's {unit} (its x / its last x; {why})", True
