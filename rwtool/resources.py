"""What a fit will cost before it starts: peak memory (and, where known, time) and the machine's room.

Every estimator may define ``_estimate_fit(n_samples, n_features_in, n_outputs) -> FitEstimate``
with its own cost model; :func:`estimate_fit` falls back to a generic one. :func:`check_memory`
turns an estimate into an :class:`rwtool.InsufficientMemoryError` when it exceeds what the
machine can give, and every fit calls :func:`check_fit_memory` once it knows its rows, columns
and classes, before it allocates what grows with them (the app and the CLI show the same
estimate before a long fit).

This module must not import estimators or solvers; it only reads their ``_estimate_fit``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .exceptions import InsufficientMemoryError

__all__ = ["FitEstimate", "estimate_fit", "available_memory", "check_memory", "check_fit_memory"]

# Share of the available memory a single fit may plan to use: the rest is for the interpreter,
# the data the caller holds, and estimation error.
MEMORY_FRACTION = 0.8


@dataclass(frozen=True)
class FitEstimate:
    """The estimated cost of one fit.

    ``peak_bytes`` counts what the fit allocates beyond the input arrays; ``seconds`` is a rough
    time on this kind of machine, or None when the estimator has no time model; ``detail`` says
    which terms dominate, in words a user can act on; ``fix``, when the estimator knows it, what
    to change to need less (else ``detail`` serves as the fix).
    """

    peak_bytes: int
    seconds: float | None = None
    detail: str = ""
    fix: str = ""


def available_memory() -> int:
    """Bytes this process can still allocate: the smallest of MemAvailable, the cgroup limit
    less its usage, and the soft RLIMIT_AS and RLIMIT_DATA (``ulimit -v``, ``ulimit -d``) less
    the current use they count (when each is known)."""
    limits = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    limits.append(int(line.split()[1]) * 1024)
                    break
    except OSError:
        pass
    for cur, lim in (("/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory.max"),
                     ("/sys/fs/cgroup/memory/memory.usage_in_bytes",
                      "/sys/fs/cgroup/memory/memory.limit_in_bytes")):
        try:
            with open(lim) as f:
                text = f.read().strip()
            if text != "max" and int(text) < 1 << 60:
                with open(cur) as f:
                    limits.append(int(text) - int(f.read().strip()))
            break
        except (OSError, ValueError):
            continue
    limits.extend(_rlimit_rooms())
    if not limits:
        try:
            return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError):
            return 1 << 62
    return max(0, min(limits))


#: soft resource limits on this process's memory, and the /proc/self/status field of the use each
#: one counts: the whole address space (VmSize) and the private writable memory (VmData, what
#: Linux counts against RLIMIT_DATA since 4.7: heap and anonymous mappings, numpy's buffers)
_RLIMITS = (("RLIMIT_AS", "VmSize:"), ("RLIMIT_DATA", "VmData:"))


def _rlimit_rooms() -> list:
    """Soft limit minus current use of every memory rlimit that is set (bytes)."""
    try:
        import resource
    except ImportError:          # not a POSIX system
        return []
    rooms = []
    for name, field in _RLIMITS:
        soft = resource.getrlimit(getattr(resource, name))[0]
        if soft == resource.RLIM_INFINITY:
            continue
        try:
            with open("/proc/self/status") as f:
                used = next(int(line.split()[1]) * 1024 for line in f if line.startswith(field))
        except (OSError, StopIteration, ValueError):
            used = 0             # no /proc: the limit alone still bounds what is left
        rooms.append(soft - used)
    return rooms


def estimate_fit(estimator, n_samples: int, n_features_in: int, n_outputs: int = 1) -> FitEstimate:
    """The estimated cost of ``estimator.fit`` on data of this size.

    ``n_outputs`` is the number of classes for a classifier (1 for binary and regression).
    Uses the estimator's own ``_estimate_fit`` when it has one; otherwise a generic bound: the
    standardised copy of X plus a few float64 arrays of one row per sample.
    """
    own = getattr(estimator, "_estimate_fit", None)
    if own is not None:
        return own(int(n_samples), int(n_features_in), int(n_outputs))
    n, d = int(n_samples), int(n_features_in)
    return FitEstimate(peak_bytes=8 * n * (2 * d + 4 * max(1, n_outputs)), seconds=None,
                       detail="generic estimate: copies of X and the targets")


def check_memory(estimate: FitEstimate, what: str, fix: str | None = None,
                 available: int | None = None) -> None:
    """Raise :class:`InsufficientMemoryError` when ``estimate`` needs more than the machine has."""
    room = available_memory() if available is None else int(available)
    if estimate.peak_bytes > MEMORY_FRACTION * room:
        raise InsufficientMemoryError(what, required=estimate.peak_bytes, available=room,
                                      fix=fix or estimate.fix or estimate.detail or None)


def check_fit_memory(estimator, n_samples: int, n_features_in: int, n_outputs: int = 1) -> None:
    """Refuse ``estimator.fit`` on data of this size before it allocates, when its estimate
    (:func:`estimate_fit`) exceeds what the machine can give: InsufficientMemoryError with the
    estimate, the room and what to change (the estimate's ``detail``)."""
    classes = getattr(estimator, "_estimator_type", None) == "classifier"
    what = f"{type(estimator).__name__} on {int(n_samples)} rows x {int(n_features_in)} columns"
    if n_outputs > (2 if classes else 1):
        what += f" and {int(n_outputs)} {'classes' if classes else 'outputs'}"
    estimate = estimate_fit(estimator, n_samples, n_features_in, n_outputs)
    if estimate.fix and estimate.detail:
        what += f" ({estimate.detail})"
    check_memory(estimate, what)
