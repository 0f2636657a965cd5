"""The errors every rwtool fit shares: a numerical failure, a fit too large for the machine, labels
that are not classes.

A fit that produces non-finite numbers, or an iterative solver that diverges, never returns
quietly: it raises :class:`NumericalError`, which names the solver, the iteration and the fix,
and leaves the estimator unfitted. A fit whose estimated memory exceeds what the machine has
raises :class:`InsufficientMemoryError` before it allocates anything.

This module must not import any solver, estimator or data module: it sits at the bottom of the
dependency graph with rwtool.progress.
"""

from __future__ import annotations

import numpy as np

__all__ = ["NumericalError", "InsufficientMemoryError", "InvalidParameterError",
           "MixedLabelsError", "check_finite_result"]


class InvalidParameterError(ValueError, TypeError):
    """A parameter value outside what its table allows (rwtool._params): the message names the
    parameter, the value and what is allowed. Both a ValueError and a TypeError, so that code
    catching either for a bad value or a value of the wrong type keeps working."""


class NumericalError(ArithmeticError):
    """A fit (or a prediction) produced non-finite numbers, or an iterative solver diverged.

    Attributes
    ----------
    solver : str or None
        The solver or estimator stage that failed ("sfgd", "lstsq", "bkernn", ...).
    iteration : int or None
        The iteration at which the failure was detected, for iterative solvers.
    fix : str or None
        What the user can do about it (a parameter to change, a preprocessing step).
    """

    def __init__(self, message: str, *, solver: str | None = None,
                 iteration: int | None = None, fix: str | None = None):
        parts = [message]
        if solver is not None and iteration is not None:
            parts.append(f"(solver {solver!r}, iteration {iteration})")
        elif solver is not None:
            parts.append(f"(solver {solver!r})")
        if fix:
            parts.append(f"Fix: {fix}")
        super().__init__(" ".join(parts))
        self.solver = solver
        self.iteration = iteration
        self.fix = fix


class InsufficientMemoryError(MemoryError):
    """A fit was refused before it started because its estimated memory exceeds what is available.

    Attributes
    ----------
    required, available : int
        The estimated peak bytes of the fit and the bytes the machine can give it.
    fix : str or None
        What to change (fewer rows, fewer features, another solver path).
    """

    def __init__(self, message: str, *, required: int, available: int, fix: str | None = None):
        text = (f"{message}: the fit needs about {_human(required)} but only "
                f"{_human(available)} is available.")
        if fix:
            text += f" Fix: {fix}"
        super().__init__(text)
        self.required = int(required)
        self.available = int(available)
        self.fix = fix


class MixedLabelsError(ValueError, TypeError):
    """Class labels of several kinds (numbers and text in one object array): they cannot be
    sorted or compared as classes. A ValueError (a bad value of y) and a TypeError (what numpy
    raised for it before), so callers catching either keep working."""


def check_finite_result(arrays, *, solver: str, iteration: int | None = None,
                        fix: str | None = None, what: str = "the fitted coefficients") -> None:
    """Raise :class:`NumericalError` unless every array in ``arrays`` is finite."""
    if isinstance(arrays, np.ndarray):
        arrays = (arrays,)
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
            bad = int(a.size - np.count_nonzero(np.isfinite(a)))
            raise NumericalError(f"{what} contain {bad} non-finite value(s) of {a.size}",
                                 solver=solver, iteration=iteration, fix=fix)


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"
