"""Every error and warning rwtool raises, in one place, at the bottom of the dependency graph.

A fit that produces non-finite numbers, or an iterative solver that diverges, never returns
quietly: it raises :class:`NumericalError`, which names the solver, the iteration and the fix,
and leaves the estimator unfitted; a recoverable event (jitter added, a path cut short) is a
:class:`NumericalWarning` (:class:`ConvergenceWarning` for a Lasso stopped at its sweep cap). A
fit whose estimated memory exceeds what the machine has raises
:class:`InsufficientMemoryError` before it allocates anything. :class:`NotFittedError` (a model
used before ``fit``), :class:`FitCancelled` (the progress callback asked to stop),
:class:`DataError` (the base of the located data errors of rwtool.data),
:class:`ModelFileError` (a model file that cannot be written or read),
:class:`InvalidParameterError` (a parameter outside its table, rwtool._params) and
:class:`MixedLabelsError` (labels that are not classes) complete the set; :class:`Note` is a
note whose advice each caller words its own way, as a DataError's fix.

This module must not import any other rwtool module: every layer imports it.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["NumericalError", "NumericalWarning", "ConvergenceWarning", "InsufficientMemoryError",
           "InvalidParameterError", "MixedLabelsError", "NotFittedError", "FitCancelled",
           "DataError", "ModelFileError", "Note", "check_finite_result", "human_bytes"]


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
        text = (f"{message}: the fit needs about {human_bytes(required)} but only "
                f"{human_bytes(available)} is available.")
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


def human_bytes(n: float) -> str:
    """A byte count as people read it: "512 B", "1.5 MiB"."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


class NumericalWarning(RuntimeWarning):
    """A recoverable numerical event (jitter added, solver did not converge...)."""


class ConvergenceWarning(NumericalWarning):
    """The Lasso stopped at its sweep cap before its duality gap met the tolerance: the model
    is finite but not the Lasso solution; the message names the fix."""


class NotFittedError(ValueError, AttributeError):
    """Raised when a model is used before ``fit``."""


class FitCancelled(Exception):
    """Raised by ``fit`` when the progress callback asked to stop.

    ``partial_model`` is True when the estimator keeps the last completed iterate (iterative
    solvers) and can predict; False when it was left unfitted. A solver that re-raises with
    ``partial_model=True`` puts ``(coef, info)`` of that iterate in ``partial``.
    """

    def __init__(self, message: str = "fit cancelled by the progress callback",
                 partial_model: bool = False, partial=None):
        super().__init__(message)
        self.partial_model = partial_model
        self.partial = partial


class DataError(ValueError):
    """A problem with the input data, located in the file.

    Attributes ``file``, ``row`` (1-based line number of the record, header = line 1, or None),
    ``column`` (name, or None) and ``hint`` (how to fix it) let a GUI show each part apart;
    ``str(err)`` is one line: "file, row 12, column 'age': what is wrong; hint".

    A hint that points to settings is given as ``fix=(template, settings)``: ``settings`` are
    ``(name, value)`` pairs and ``template`` has a ``{0}``, ``{1}``, ... where each goes, so
    that each caller names them in its own words (:meth:`phrase`, with rwtool.report's
    ``Terms``: the API's ``ignore=['id']``, the command line's ``--ignore id``, the app's
    control); ``hint`` and ``str(err)`` use the API's words.
    """

    def __init__(self, message: str, *, file=None, row: int | None = None,
                 column: str | None = None, hint: str | None = None, fix=None):
        self.fix = fix
        if fix is not None:
            hint = fix[0].format(*(_api_setting(n, v) for n, v in fix[1]))
        self.message, self.file, self.row, self.column, self.hint = (
            message, None if file is None else str(file), row, column, hint)
        super().__init__(self._text())

    def phrase(self, terms) -> str:
        """The one-line message with the fix in the words of ``terms`` (an object with a
        ``setting(name, value)`` method, rwtool.report.Terms)."""
        if self.fix is None:
            return str(self)
        hint = self.fix[0].format(*(terms.setting(n, v) for n, v in self.fix[1]))
        return self._text()[:-len(self.hint)] + hint if self.hint else self._text()

    def _text(self) -> str:
        where = []
        if self.file:
            where.append(os.path.basename(self.file))
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column is not None:
            where.append(f"column {self.column!r}")
        text = (", ".join(where) + ": " if where else "") + self.message
        return text + (f"; {self.hint}" if self.hint else "")

    def to_dict(self) -> dict:
        return {"error": type(self).__name__, "message": self.message, "file": self.file,
                "row": self.row, "column": self.column, "hint": self.hint, "text": str(self)}


def _api_setting(name: str, value) -> str:
    """A setting as the Python API writes it: ``name=value`` (``header=False``; ``name=...``
    when the value is for the user to choose)."""
    return f"{name}=..." if value is None else f"{name}={value!r}"


class Note(str):
    """A note for the user (``Dataset.notes``) whose advice names settings: the text is the
    API's words, :meth:`phrase` any caller's, as :class:`DataError`'s ``fix`` (a template with
    ``{0}``, ``{1}``, ... and the ``(name, value)`` settings that go there)."""

    def __new__(cls, template: str, settings=()):
        settings = list(settings)
        note = super().__new__(cls, template.format(*(_api_setting(n, v) for n, v in settings)))
        note.fix = (template, settings)
        return note

    @staticmethod
    def literal(text: str) -> str:
        """``text`` (a column name, a cell) written into a template as it is."""
        return str(text).replace("{", "{{").replace("}", "}}")

    def phrase(self, terms) -> str:
        """The note in the words of ``terms`` (rwtool.report.Terms)."""
        return self.fix[0].format(*(terms.setting(n, v) for n, v in self.fix[1]))

    def __reduce__(self):                    # pickled (a Dataset sent to a worker) as a Note
        return (Note, self.fix)


class ModelFileError(ValueError):
    """A model file that cannot be written or read; ``file`` names it."""

    def __init__(self, message: str, file=None):
        self.file = None if file is None else os.fspath(file)
        self.message = message
        super().__init__(f"{os.path.basename(self.file)}: {message}" if self.file else message)
