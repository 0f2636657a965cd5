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

Every :class:`Steps` queue of the window is served by one scheduler with one timer: a step of
one queue a tick, the queues in turn. Each queue with a timer of its own (the window's, the
results panel's, its preparation's...) found the others' timers due when the thread woke up,
and 3-6 steps of different queues ran in one turn of 17-25 ms at the end of every run
(bench_gui_load --record-turns).

This module schedules; it must not know what the steps do.
"""

from __future__ import annotations

import inspect
import time
from collections import deque

from PySide6.QtCore import QAbstractEventDispatcher, QObject, QTimer, Signal
from shiboken6 import isValid

__all__ = ["Steps", "STEP_MS", "scheduler"]

#: milliseconds between two steps: the thread sleeps between them
STEP_MS = 15
#: an event-loop iteration with more CPU than this (s) after a step (the step's own, then its
#: paints and layouts) delays the next step by STEP_MS from its end, at most POSTPONE times
#: (a thread kept busy by other work still runs its steps)
BUSY_S, POSTPONE = 0.001, 4


class _Scheduler(QObject):
    """Runs the waiting queues' steps, one step a tick of a single-shot timer started again at
    the end of each step and of each busy event-loop iteration after it, the queues in turn
    (each one step, then the next queue waiting)."""

    #: a step of this queue has run (tests follow the ticks)
    stepped = Signal(object)

    def __init__(self):
        super().__init__()
        self._waiting: deque = deque()          # Steps with steps queued, in turn order
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._tick)
        # the next step's delay runs again from the end of every busy event-loop iteration
        # after a step (its paints and layouts come in the next iterations): counted from the
        # step's end, they took more than STEP_MS of wall time under load (waiting for a core
        # between slices), the next step was due before the thread slept, and 3-5 steps ran in
        # one turn of 24-31 ms of CPU (bench_gui_load --load 4 --record-turns)
        self._postpone = 0                      # busy iterations that may still postpone
        self._cpu = time.thread_time()          # the thread's CPU at the last iteration's end
        dispatcher = QAbstractEventDispatcher.instance(self.thread())
        if dispatcher is not None:
            dispatcher.aboutToBlock.connect(self._iteration_ended)

    def want(self, steps: "Steps") -> None:
        if steps not in self._waiting:
            self._waiting.append(steps)
        if not self._timer.isActive():
            self._start()

    def drop(self, steps: "Steps") -> None:
        try:
            self._waiting.remove(steps)
        except ValueError:
            pass
        if not self._waiting:
            self._timer.stop()

    def _drop_queue(self, queue: deque) -> None:
        """Forget the queue whose steps are ``queue`` (its Steps object is being deleted)."""
        queue.clear()
        gone = [s for s in self._waiting if s._queue is queue]
        for steps in gone:
            self._waiting.remove(steps)
        # (at the application's exit the scheduler's timer may be deleted before the queues)
        if gone and not self._waiting and isValid(self._timer):
            self._timer.stop()

    @property
    def waiting(self) -> int:
        """How many queues have steps waiting."""
        return len(self._waiting)

    def _start(self) -> None:
        self._timer.start(self._waiting[0].interval)
        self._postpone = POSTPONE

    def _tick(self) -> None:
        try:
            while self._waiting:
                steps = self._waiting.popleft()
                if steps.busy:
                    try:
                        steps._run_one()
                    finally:
                        if steps.busy and steps not in self._waiting:
                            self._waiting.append(steps)
                    self.stepped.emit(steps)
                    break
        finally:
            # the next step STEP_MS after this one's end, not its start: on a loaded machine
            # a step that waited for a core found the next one due already, and the steps ran
            # back to back without a sleep, one turn of the thread (bench_gui_load
            # --record-turns: 4-6 steps in one turn of 10-19 ms); after a step that raised
            # too, so that the other steps still run
            if self._waiting and not self._timer.isActive():
                self._start()

    def _iteration_ended(self) -> None:
        cpu = time.thread_time()
        busy = cpu - self._cpu > BUSY_S
        self._cpu = cpu
        if busy and self._postpone and self._waiting and isValid(self._timer):
            self._postpone -= 1
            self._timer.start(self._waiting[0].interval)


_SCHEDULER: _Scheduler | None = None


def scheduler() -> _Scheduler:
    """The scheduler of the GUI thread's steps (made with the first queue)."""
    global _SCHEDULER
    if _SCHEDULER is None:
        _SCHEDULER = _Scheduler()
    return _SCHEDULER


class Steps(QObject):
    """A queue of calls run in order, a call a tick of the shared scheduler, the ticks
    ``interval`` (:data:`STEP_MS`) ms apart whatever the queue."""

    def __init__(self, parent=None, interval: int = STEP_MS):
        super().__init__(parent)
        self._queue: deque = deque()
        self._clears = 0                    # clear() calls so far (see _run_one)
        self.interval = int(interval)
        self._scheduler = scheduler()
        # a queue deleted with its owner (a closed window) leaves the scheduler's turn
        self.destroyed.connect(lambda *_, s=self._scheduler, q=self._queue: s._drop_queue(q))

    def add(self, fn, *args) -> None:
        """Run ``fn(*args)`` after the steps already queued (a generator function: a step
        up to each of its ``yield``)."""
        self._queue.append((fn, args))
        self._scheduler.want(self)

    def clear(self) -> None:
        """Forget the steps not run yet."""
        self._clears += 1
        self._queue.clear()
        self._scheduler.drop(self)

    def flush(self) -> None:
        """Run every queued step now (a new action of the user must find the window in the
        state the steps lead to)."""
        while self._queue:
            self._run_one()
        self._scheduler.drop(self)

    @property
    def busy(self) -> bool:
        """True while steps wait."""
        return bool(self._queue)

    def _next(self) -> None:
        """Run this queue's next step now (tests drive a queue's steps by hand)."""
        if self._queue:
            self._run_one()
        if not self._queue:
            self._scheduler.drop(self)

    def _run_one(self) -> None:
        fn, args = self._queue.popleft()
        # (generator, None): the rest of a generator step
        gen = fn if args is None else fn(*args)
        if inspect.isgenerator(gen):
            clears = self._clears
            try:
                next(gen)
            except StopIteration:
                return
            # a clear() inside the generator's own step (a new drawing replacing the one it
            # belongs to) forgets its rest too: queued again, it ran after the new steps
            if self._clears == clears:
                self._queue.appendleft((gen, None))
