"""The x axis of the comparison of runs: one scale for runs of different lengths or units.

Overlaid on their own x, a 60-epoch run and a 5,500,000-iteration run share one linear axis and
the short run is a dot at the origin; runs counted in different units (epochs, iterations,
features added) do not share a scale at all. Such runs are compared along the fraction of
each run's own progress (0 at its first point, 1 at its last), the axis label says so, and
each run's legend entry gives its own range. Runs of one unit whose lengths are within
:data:`LENGTH_RATIO` of each other keep their own x.

This module computes the axis; it must not draw.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LENGTH_RATIO", "overlay_x", "run_range"]

#: runs whose x spans differ by more than this factor are compared by their fraction of progress
LENGTH_RATIO = 10.0


def _span(x: np.ndarray) -> tuple[float, float]:
    f = x[np.isfinite(x)]
    return (float(f.min()), float(f.max())) if f.size else (0.0, 0.0)


def _number(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,.4g}"


def run_range(x, label: str) -> str:
    """A run's own x range, for its legend entry: ``"iteration 0-5,500,000"``."""
    lo, hi = _span(np.asarray(x, float))
    return f"{label} {_number(lo)}–{_number(hi)}"


def overlay_x(curves) -> tuple[list[np.ndarray], str, bool]:
    """``(xs, axis label, fractions)`` for ``curves``, a list of ``(x, x label)`` per run.

    ``fractions`` is True when the runs are drawn along the fraction of their own progress
    (their units differ, or their spans differ by more than LENGTH_RATIO); the x of a run
    with a single point (or all at one x) is then 1, a finished run."""
    xs = [np.asarray(x, float) for x, _ in curves]
    labels = sorted({lab for _, lab in curves})
    spans = [hi - lo for lo, hi in map(_span, xs)]
    positive = [s for s in spans if s > 0]
    mixed = len(labels) > 1
    uneven = len(positive) > 1 and max(positive) > LENGTH_RATIO * min(positive)
    if not (mixed or uneven):
        return xs, " / ".join(labels) or "iteration", False
    out = []
    for x in xs:
        lo, hi = _span(x)
        out.append((x - lo) / (hi - lo) if hi > lo else np.ones_like(x))
    unit = " / ".join(labels) or "iteration"
    why = "units differ" if mixed else f"lengths differ more than {LENGTH_RATIO:g}x"
    return out, f"fraction of each run's range of {unit} (0 = its first point, 1 = its last; " \
                f"{why})", True
