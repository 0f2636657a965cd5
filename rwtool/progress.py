"""The progress / cancel protocol shared by every solver (DESIGN.md section 3).

A solver reports through a :class:`Progress` object built from the user's ``callback``. The
callback receives a :class:`ProgressEvent` (stage, done, total, metrics) at a bounded rate and
cancels the fit by returning ``True`` (scipy's convention) or by raising :class:`FitCancelled`.
Solvers call :meth:`Progress.update` between chunks of numba work, never inside a kernel.

This module must not import any solver or estimator: it is the bottom of the dependency graph.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from .exceptions import FitCancelled

__all__ = ["ProgressEvent", "FitCancelled", "Progress", "make_progress"]


@dataclass(frozen=True)
class ProgressEvent:
    """One progress report.

    Attributes
    ----------
    stage : str
        What the solver is doing ("features", "normal equations", "solve", "iterations", ...).
    done, total : int
        Units of work finished and planned in this stage (``total`` may be 0 when unknown).
    metrics : mapping
        Numbers worth plotting live (train loss, validation score, non-zeros...), may be empty.
    elapsed : float
        Seconds since the fit started.
    kind : str
        "start" when a stage begins, "update" in between, "end" when the stage ends.
    """

    stage: str
    done: int
    total: int
    metrics: Mapping[str, float] = field(default_factory=dict)
    elapsed: float = 0.0
    kind: str = "update"

    @property
    def fraction(self) -> float:
        """Finished fraction of the stage in [0, 1] (0 when the total is unknown)."""
        return min(1.0, self.done / self.total) if self.total > 0 else 0.0


class Progress:
    """Rate-limited emitter of :class:`ProgressEvent` with cancellation.

    Parameters
    ----------
    callback : callable or None
        ``callback(event) -> bool | None``; a true return value cancels the fit.
    min_interval : float
        Minimum seconds between two "update" events; "start" and "end" events always pass.
    """

    def __init__(self, callback: Optional[Callable[[ProgressEvent], object]] = None,
                 min_interval: float = 0.1):
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")
        self.callback = callback
        self.min_interval = float(min_interval)
        self._t0 = time.perf_counter()
        self._last = -float("inf")
        self.stage_name = ""
        self.total = 0

    #: optional ``monitor(coef) -> {name: value}`` set by an estimator: metrics of the current
    #: model (e.g. its error on a sample of training rows) that solvers holding an iterate add
    #: to their events through :meth:`model_metrics`.
    monitor = None

    @property
    def active(self) -> bool:
        return self.callback is not None

    def due(self) -> bool:
        """Whether an :meth:`update` now would be emitted: a metric that costs work is worth
        computing only then (computed on a turn that is not emitted, it would be dropped)."""
        return (self.callback is not None
                and time.perf_counter() - self._last >= self.min_interval)

    def model_metrics(self, coef_fn, force: bool = False) -> dict:
        """``monitor(coef_fn())`` when an update now would be emitted, else {} (no cost)."""
        if self.monitor is None or self.callback is None or (not force and not self.due()):
            return {}
        return dict(self.monitor(coef_fn()))

    def _emit(self, event: ProgressEvent) -> None:
        if self.callback is None:
            return
        if self.callback(event):
            raise FitCancelled(f"fit cancelled during stage {event.stage!r} "
                               f"({event.done}/{event.total})")

    def start(self, stage: str, total: int = 0, **metrics: float) -> None:
        self.stage_name, self.total = stage, int(total)
        self._emit(ProgressEvent(stage, 0, self.total, metrics, self.elapsed(), "start"))

    def update(self, done: int, force: bool = False, **metrics: float) -> None:
        """Report ``done`` units of the current stage; may raise :class:`FitCancelled`."""
        if self.callback is None:
            return
        now = time.perf_counter()
        if not force and now - self._last < self.min_interval:
            return
        self._last = now
        self._emit(ProgressEvent(self.stage_name, int(done), self.total, metrics,
                                 now - self._t0, "update"))

    def end(self, **metrics: float) -> None:
        self._emit(ProgressEvent(self.stage_name, self.total, self.total, metrics,
                                 self.elapsed(), "end"))

    def elapsed(self) -> float:
        return time.perf_counter() - self._t0


def make_progress(callback) -> Progress:
    """A :class:`Progress` for ``callback`` (which may already be one, or None)."""
    return callback if isinstance(callback, Progress) else Progress(callback)
