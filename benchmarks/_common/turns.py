"""What each long turn of a Qt GUI thread's event loop ran: a diagnostic for the benchmarks.

A *turn* is a stretch in which the thread runs without sleeping: the iterations of the event
loop from one sleep to the next (Qt's glib dispatcher emits ``aboutToBlock`` at the start of
each iteration, before its wait, and ``awake`` only after its dispatch, so an iteration is
taken from one ``aboutToBlock`` to the next, and it slept when its wall time exceeds its CPU
and its wait for a core, Linux's schedstat, by more than ``merge_s``). On a loaded machine a
turn of more than ~8 ms of CPU comes as a pause of 50-300 ms (the scheduler serves the
thread, then makes it wait behind other sessions), so :class:`TurnRecorder` reports every
turn whose CPU (the thread's own clock, ``time.thread_time``) exceeds a threshold, with what
ran in it:

- every event Qt delivered in the turn (an application-wide event filter): its type, its
  receiver (for a timer, the QTimer's parent), and the GUI thread's CPU from its start to
  the next event's start (so a paint nested in an UpdateRequest is counted apart);
- the GUI thread's Python stacks, sampled every ``period_s`` by a thread of its own
  (``sys._current_frames``) while a turn runs, each weighted by the GUI thread's CPU since the
  previous sample (``time.pthread_getcpuclockid``): time in Qt's C++ with no Python frame of
  its own shows as the caller's frame (``exec``), and the events say what it was;
- Python's collector passes (``gc.callbacks``) in the turn, their generation and CPU;
- the thread's system time, page faults and preemptions in the turn (``RUSAGE_THREAD``).

What it costs: the event filter about 9 microseconds of the GUI thread per event (a 2 ms burst
with 50 posted events took 2.3 ms of the thread without the recorder, 2.8 ms with it, offscreen
on the shared machine), a call per iteration of the loop (``aboutToBlock``), and the sampler
thread (waking every ``idle_s`` while the thread waits, every ``period_s`` while it dispatches
events: about 0.6% of a core while the GUI thread was busy half the time). It must not be part
of the app's own path: the benchmarks install it on the app they drive.
"""

from __future__ import annotations

import gc
import resource
import sys
import threading
import time
from collections import defaultdict

from PySide6.QtCore import QAbstractEventDispatcher, QEvent, QObject, QTimer

from .procmem import ThreadWait

__all__ = ["TurnRecorder", "format_turns"]

#: the calling thread's resource usage (Linux): its system time, page faults, preemptions
RUSAGE_THREAD = getattr(resource, "RUSAGE_THREAD", None)

#: frames of these files are the driver's, not the app's: left out of a stack's summary
_DRIVER = ("bench_gui_load", "turns.py", "threading.py")


def _where(code_file: str) -> str:
    parts = code_file.replace("\\", "/").split("/")
    for root in ("gui", "rwtool", "pyqtgraph", "benchmarks"):
        if root in parts:
            return "/".join(parts[len(parts) - 1 - parts[::-1].index(root):])
    return parts[-1]


def _event_name(t: int) -> str:
    try:
        return QEvent.Type(t).name
    except ValueError:
        return str(t)


class TurnRecorder(QObject):
    """Record the GUI thread's turns of more than ``threshold_ms`` of CPU (install it on the GUI
    thread after the QApplication exists; :meth:`stop` before the application ends).

    ``label()`` names the moment (a benchmark's phase) in each record."""

    def __init__(self, app, threshold_ms: float = 8.0, period_s: float = 0.001,
                 idle_s: float = 0.002, merge_s: float = 0.001, label=lambda: ""):
        super().__init__()
        self.threshold = threshold_ms / 1000.0
        self.period, self.idle, self.merge = float(period_s), float(idle_s), float(merge_s)
        self.label = label
        self.turns: list[dict] = []          # the long turns
        self._ident = threading.get_ident()
        self._clock = time.pthread_getcpuclockid(self._ident)
        self._wait = ThreadWait(missing=0.0)
        self._app = app
        self._busy = False                   # the thread dispatches (the sampler samples)
        # the iteration's events, collector passes and samples, until its end says whether
        # it slept first (a new turn) or not (the same turn)
        self._events: list = []
        self._gcs: list = []
        self._samples: list = []
        self._gc_start: float | None = None
        self._w, self._c, self._q = time.monotonic(), time.thread_time(), self._queued()
        self._ru = resource.getrusage(RUSAGE_THREAD) if RUSAGE_THREAD is not None else None
        self._turn: dict | None = None
        self._running = True
        self._dispatcher = QAbstractEventDispatcher.instance()
        self._dispatcher.aboutToBlock.connect(self._block)
        app.installEventFilter(self)
        gc.callbacks.append(self._gc)
        self._sampler = threading.Thread(target=self._sample, name="turn-sampler", daemon=True)
        self._sampler.start()

    def _queued(self) -> float:
        """The GUI thread's time waiting for a core while runnable so far (s; 0 off Linux)."""
        return self._wait.seconds()

    # -- the GUI thread ----------------------------------------------------------------------
    def _block(self) -> None:
        """An iteration of the loop ends (the next one starts and may sleep)."""
        w, c, q = time.monotonic(), time.thread_time(), self._queued()
        ru = resource.getrusage(RUSAGE_THREAD) if RUSAGE_THREAD is not None else None
        self._busy = False
        events, self._events = self._events, []
        gcs, self._gcs = self._gcs, []
        samples, self._samples = self._samples, []
        slept = (w - self._w) - (c - self._c) - (q - self._q) > self.merge
        if self._turn is None or slept:
            self._close()
            self._turn = {"t": events[0][0] if events else w, "c0": self._c,
                          "label": self.label(), "events": [], "gc": [], "samples": [],
                          "ru0": self._ru,
                          # the CPU of the loop itself before its first event (glib's poll
                          # and sources, the X connection)
                          "pre": (events[0][1] - self._c) if events else c - self._c}
        turn = self._turn
        turn["events"] += events
        turn["gc"] += gcs
        turn["samples"] += samples
        turn["c1"], turn["t1"], turn["ru1"] = c, w, ru
        self._w, self._c, self._q, self._ru = w, c, q, ru

    def _close(self) -> None:
        """Keep the turn that ended at the last iteration if it was long."""
        turn, self._turn = self._turn, None
        if turn is None or turn["c1"] - turn["c0"] < self.threshold:
            return
        c1 = turn["c1"]
        events = turn["events"]
        spans = [((events[i + 1][1] if i + 1 < len(events) else c1) - at, etype, who)
                 for i, (_, at, etype, who) in enumerate(events)]
        ru0, ru1 = turn["ru0"], turn["ru1"]
        usage = None if ru0 is None or ru1 is None else {
            "sys": ru1.ru_stime - ru0.ru_stime, "minflt": ru1.ru_minflt - ru0.ru_minflt,
            "majflt": ru1.ru_majflt - ru0.ru_majflt, "nivcsw": ru1.ru_nivcsw - ru0.ru_nivcsw}
        self.turns.append({"t": turn["t"], "wall": turn["t1"] - turn["t"],
                           "cpu": c1 - turn["c0"], "label": turn["label"], "events": spans,
                           "gc": turn["gc"], "samples": turn["samples"],
                           "n_events": len(events), "pre": turn["pre"], "usage": usage})

    def eventFilter(self, obj, ev) -> bool:
        self._busy = True
        t = ev.type()
        if t == QEvent.Timer and isinstance(obj, QTimer):
            parent = obj.parent()
            who = f"QTimer of {type(parent).__name__}" if parent is not None else \
                f"QTimer {obj.objectName() or hex(id(obj))}"
        else:
            who = type(obj).__name__
            if who in ("QWidget", "QWidgetWindow") or obj.metaObject().className() == "QWidget":
                # a viewport or a container: named by what holds it
                parent = obj.parent()
                who = f"{who} in {type(parent).__name__}" if parent is not None else who
        self._events.append((time.monotonic(), time.thread_time(), int(t.value), who))
        return False

    def _gc(self, phase: str, info: dict) -> None:
        if threading.get_ident() != self._ident:
            return
        if phase == "start":
            self._gc_start = time.thread_time()
        elif self._gc_start is not None:
            self._gcs.append((info.get("generation"), time.thread_time() - self._gc_start,
                              info.get("collected")))
            self._gc_start = None

    # -- the sampler thread -----------------------------------------------------------------
    def _sample(self) -> None:
        last = None
        while self._running:
            if not self._busy:
                last = None
                time.sleep(self.idle)
                continue
            frame = sys._current_frames().get(self._ident)
            cpu = time.clock_gettime(self._clock)
            stack = []
            while frame is not None and len(stack) < 40:
                code = frame.f_code
                stack.append((code.co_filename, code.co_name, frame.f_lineno))
                frame = frame.f_back
            del frame
            if last is not None and cpu > last:
                self._samples.append((cpu - last, tuple(stack)))
            last = cpu
            time.sleep(self.period)

    def stop(self) -> None:
        """Stop recording (the turn under way is kept if long)."""
        self._running = False
        self._block()
        self._close()
        self._dispatcher.aboutToBlock.disconnect(self._block)
        self._app.removeEventFilter(self)
        if self._gc in gc.callbacks:
            gc.callbacks.remove(self._gc)
        self._sampler.join(1.0)
        self._wait.close()


def _short_stack(stack, depth: int = 7) -> str:
    """The innermost ``depth`` frames of a sampled stack, outermost first, the driver's left
    out."""
    frames = [f for f in stack if not any(d in f[0] for d in _DRIVER)]
    return " > ".join(f"{_where(f[0])}:{f[1]}:{f[2]}" for f in reversed(frames[:depth])) \
        or "(the driver's event loop: Qt's C++)"


def format_turns(turns: list[dict], t0: float = 0.0, top_events: int = 6,
                 top_stacks: int = 4) -> str:
    """A text report of recorded turns: one paragraph each, its events and sampled stacks by
    CPU, longest first within a label."""
    out = []
    for rec in turns:
        u = rec.get("usage")
        extra = "" if u is None else (f", of it {1000 * u['sys']:.1f} ms in the kernel, "
                                      f"{u['minflt']} minor / {u['majflt']} major page faults, "
                                      f"preempted {u['nivcsw']} times")
        out.append(f"## {rec['t'] - t0:8.2f} s  [{rec['label']}]  turn {1000 * rec['cpu']:.1f} ms "
                   f"CPU{extra}, {1000 * rec['wall']:.1f} ms wall, {rec['n_events']} events, "
                   f"{1000 * rec.get('pre', 0.0):.1f} ms of CPU before the first")
        by_event: dict = defaultdict(lambda: [0.0, 0])
        for cpu, etype, who in rec["events"]:
            k = (_event_name(etype), who)
            by_event[k][0] += cpu
            by_event[k][1] += 1
        for (name, who), (cpu, n) in sorted(by_event.items(), key=lambda kv: -kv[1][0])[
                :top_events]:
            out.append(f"   event {name:<18} {who:<34} x{n:<4} {1000 * cpu:6.1f} ms")
        for gen, cpu, collected in rec["gc"]:
            out.append(f"   gc generation {gen}: {1000 * cpu:.1f} ms, {collected} collected")
        by_stack: dict = defaultdict(float)
        for dcpu, stack in rec["samples"]:
            by_stack[_short_stack(stack)] += dcpu
        for stack, cpu in sorted(by_stack.items(), key=lambda kv: -kv[1])[:top_stacks]:
            out.append(f"   py {1000 * cpu:6.1f} ms  {stack}")
    return "\n".join(out)
