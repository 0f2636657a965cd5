"""How the app writes a metric or a parameter value in its tables, lists and dialogs.

Words only: this module must not import Qt.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["format_metric", "format_param"]


def format_metric(v) -> str:
    """A metric: four decimals, scientific beyond them, "mean ± spread" of k folds."""
    if isinstance(v, str):
        return v
    if isinstance(v, (tuple, list)) and len(v) == 2:      # (mean, spread) of k folds
        return f"{format_metric(v[0])} ± {format_metric(v[1])}"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    v = float(v)
    if not math.isfinite(v):
        return "∞" if v > 0 else ("–∞" if v < 0 else "n/a")
    if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
        return f"{v:.4e}"
    return f"{v:.4f}"


def format_param(v) -> str:
    """A parameter value in the run list (a form field's text: methods.format_value)."""
    return f"{v:g}" if isinstance(v, float) else str(v)
