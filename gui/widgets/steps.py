"""Work of the GUI thread cut into short steps, each in an event-loop turn of its own, with the
thread asleep for a moment between two of them.

On a loaded machine the scheduler serves a thread that wakes up after a sleep at once, for a
few milliseconds, then makes it wait behind the other sessions' tasks: 10-30 ms of the GUI
thread's work in one go (the end of a run: the bar, the run's row, its metrics, its plots)
became a pause of 80-190 ms of the window (bench_gui_load --load 4), and the same work queued
back to back (QTimer.singleShot(0)) kept the thread running just the same. Steps of a few
milliseconds, :data:`STEP_MS` apart (from the end of one to the start of the next), are
served as they come. A step that is a generator
function runs up to its next ``yield`` a step (one costly change of a plot each: its title, a
curve with its legend entry), before the steps queued after it.

This module schedules; it must not know what the steps do.
"""

from __future__ import annotations

import inspect
from collections import deque

from PySide6.QtCore import QObject, QTimer

__all__ = ["Steps", "STEP_MS"]

#: milliseconds between two steps: the thread sleeps between them
STEP_MS = 15


class Steps(QObject):
    """A queue of calls run one per tick of a timer, :data:`STEP_MS` apart, in order."""

    def __init__(self, parent=None, interval: int = STEP_MS):
        super().__init__(parent)
        self._queue: deque = deque()
        self._timer = QTimer(self)
        self._timer.setInterval(int(interval))
        self._timer.timeout.connect(self._next)

    def add(self, fn, *args) -> None:
        """Run ``fn(*args)`` after the steps already queued (a generator function: a step
        up to each of its ``yield``)."""
        self._queue.append((fn, args))
        if not self._timer.isActive():
            self._timer.start()

    def clear(self) -> None:
        """Forget the steps not run yet."""
        self._queue.clear()
        self._timer.stop()

    def flush(self) -> None:
        """Run every queued step now (a new action of the user must find the window in the
        state the steps lead to)."""
        while self._queue:
            self._run_one()
        self._timer.stop()

    @property
    def busy(self) -> bool:
        """True while steps wait."""
        return bool(self._queue)

    def _next(self) -> None:
        if self._queue:
            self._run_one()
        if not self._queue:
            self._timer.stop()
        else:
            # the next step STEP_MS after this one's end, not its start: on a loaded machine
            # a step that waited for a core found the next one due already, and the steps ran
            # back to back without a sleep, one turn of the thread (bench_gui_load
            # --record-turns: 4-6 steps in one turn of 10-19 ms)
            self._timer.start()

    def _run_one(self) -> None:
        fn, args = self._queue.popleft()
        # (generator, None): the rest of a generator step
        gen = fn if args is None else fn(*args)
        if inspect.isgenerator(gen):
            try:
                next(gen)
            except StopIteration:
                return
            self._queue.appendleft((gen, None))
