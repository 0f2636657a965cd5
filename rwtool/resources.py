"""What a fit will cost before it starts: peak memory, time, and the machine's room.

Every estimator may define ``_estimate_fit(n_samples, n_features_in, n_outputs) -> FitEstimate``
with its own cost model; :func:`estimate_fit` falls back to a generic one. The time is counted
as units of work per kernel (``FitEstimate.work``; ``_estimate_predict`` the same for the
predictions, :func:`estimate_predict`) at the measured CPU rates of :data:`KERNEL_RATES`, and
:func:`wall_seconds` turns CPU time into wall time at the machine's load (:func:`cpu_share`). :func:`check_memory`
turns an estimate into an :class:`rwtool.InsufficientMemoryError` when it exceeds what the
machine can give, and every fit calls :func:`check_fit_memory` once it knows its rows, columns
and classes, before it allocates what grows with them (the app and the CLI show the same
estimate before a long fit).

This module must not import estimators or solvers; it only reads their ``_estimate_fit``.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

from .exceptions import InsufficientMemoryError

__all__ = ["FitEstimate", "estimate_fit", "estimate_predict", "available_memory", "check_memory",
           "check_fit_memory", "cpu_share", "current_load", "runnable_groups", "wall_seconds",
           "KERNEL_RATES", "rate", "seconds_of", "cholesky_work", "CHOLESKY_KNEE"]

# Share of the available memory a single fit may plan to use: the rest is for the interpreter,
# the data the caller holds, and estimation error.
MEMORY_FRACTION = 0.8


@dataclass(frozen=True)
class FitEstimate:
    """The estimated cost of one fit.

    ``peak_bytes`` counts what the fit allocates beyond the input arrays; ``seconds`` is the
    CPU time of the fit on one core of this kind of machine (the estimator's operation counts at
    :data:`KERNEL_RATES`), or None when the estimator has no time model (:func:`wall_seconds`
    turns it into wall-clock time on a loaded machine); ``detail`` says
    which terms dominate, in words a user can act on; ``fix``, when the estimator knows it, what
    to change to need less (else ``detail`` serves as the fix).
    """

    peak_bytes: int
    seconds: float | None = None
    detail: str = ""
    fix: str = ""
    #: the units of work per kernel of KERNEL_RATES that ``seconds`` counts (empty without a
    #: time model)
    work: dict = field(default_factory=dict)


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
    for name, status_field in _RLIMITS:
        soft = resource.getrlimit(getattr(resource, name))[0]
        if soft == resource.RLIM_INFINITY:
            continue
        try:
            with open("/proc/self/status") as f:
                used = next(int(line.split()[1]) * 1024 for line in f if line.startswith(status_field))
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


@dataclass(frozen=True)
class Rate:
    """The measured speed of one kernel on one core: ``value`` units of work a CPU second, where
    the unit (``unit``) is what the cost models count, and where the figure comes from."""

    value: float
    unit: str
    source: str


#: The CPU rates of the kernels the cost models count (one core, no load). Each estimator's
#: ``_estimate_fit`` / ``_estimate_predict`` counts the units of its kernels and divides by
#: these. Measured with ``python -m benchmarks.speed.bench_estimate --csv skin20k.csv
#: --target label --calibrate 20000`` (20,000 rows of skin, 3 inputs; thread CPU time with one
#: numba and one BLAS thread, as the app's worker runs; one kernel unknown per measurement, the
#: others' time taken off; the project's 2-core machine, shared, 2026-11-27), each entry naming
#: the run it comes from. Repeated calibrations agreed within 10% for the kernels measured
#: alone and within a factor 2 for the residual ones (sfgd_step, asgd_step: a small part of
#: their fit). docs/GUI.md gives the check against whole runs on 200,000 rows.
KERNEL_RATES = {
    "blas": Rate(4.4e10, "multiply-add of a dense product or factorisation (BLAS, LAPACK)",
                 "Phi^T Phi of 20,000 x 500 Gaussian numbers"),
    "input": Rate(5.0e7, "(row, input column) element of X in a fit's checks, standardisation "
                  "and copies", "RWClassifier(n_features=10).fit (all but the input negligible) "
                  "on 20,000 adults rows x 108, mnist 1-vs-7's 13,007 x 784 and 20,000 mnist "
                  "rows x 784: 18.5-23 ns an element, user and system (the copies' fresh "
                  "pages, 0.03-0.05 s of 0.2-0.3), benchmarks/speed/bench_estimate_defaults.py, "
                  "2026-11-28, load 1.0"),
    "rw_features": Rate(1.6e8, "(row, centre) pair of an RKHS weighting's closed-form feature",
                        "decision_function of RWClassifier(n_features=1000) on 100,000 rows: "
                        "1.63-1.65e8 in three runs after the closed forms' predictions moved "
                        "to one pool of numba threads (1.2e8 before); least squares' fit on "
                        "100,000 rows within 4% of its estimate at this rate"),
    "rff_features": Rate(6.1e8, "(row, frequency) pair of a random Fourier feature",
                         "decision_function of RKSClassifier(n_features=1000)"),
    "rff_pair_features": Rate(1.0e8, "(row, output) pair of a cos-and-sin random Fourier feature",
                              "decision_function of RFSGDClassifier(n_features=1000)"),
    "sfgd_step": Rate(2.4e8, "(batch row, centre) pair of an SFGD/OSD iteration and output",
                      "RWClassifier(solver='sfgd').fit, less its features"),
    "rks_sgd_step": Rate(2.9e9, "(row, feature) pair of a kitchen-sinks SGD step and output",
                         "RKSClassifier(solver='sgd').fit, less its features"),
    "asgd_step": Rate(1.1e9, "(row, coefficient) pair of an averaged-SGD step and output",
                      "RFSGDClassifier().fit, less its features"),
    "lasso_cd": Rate(4.4e9, "multiply-add of a coordinate-descent sweep",
                     "RWClassifier(solver='lasso').fit, less its features and normal equations"),
    "knn": Rate(7.9e7, "(query, row) distance of the k-NN bandwidth, and its partition",
                "knn_sigma of 2000 queries"),
    "mfga_gradient": Rate(9.9e8, "(row, dictionary column) Taylor term of an MFGA gradient, the "
                          "path's warm-started refits folded in",
                          "GreedyMKClassifier(n_features=90).fit, less the bandwidth"),
    "newton": Rate(9.5e8, "(row, column) pair of A^T W A of a Newton fit on the kept random "
                   "features, its iterations folded in",
                   "GreedyMKClassifier(selector='rks').fit, less the bandwidth and features"),
    "greedy_columns": Rate(6.2e7, "(row, kept random feature) pair of a greedy model's "
                           "prediction", "decision_function of GreedyMKClassifier("
                           "selector='rks')"),
    "bkernn_iteration": Rate(4.8e7, "m n log2(n) of a BKerNN iteration (its sorts, line-search "
                             "trials and CG steps folded in)",
                             "BKerNNClassifier().fit at its default 40 iterations (the first "
                             "few cost twice a later one: max_iter=5 measures 3.1e7), "
                             "--calibrate 20000 80000 150000 --kernels bkernn_iteration, "
                             "2026-11-28, load 0.6-1.0: 4.66-4.82e7 at 20,000 rows, "
                             "4.84-5.68e7 at 80,000, 5.0e7 at 150,000 (the median)"),
    "bkernn_predict": Rate(6.0e7, "m log2(n) binary-search step of a BKerNN prediction",
                           "BKerNNClassifier.decision_function"),
}


#: the order below which a Cholesky factorisation runs under the "blas" rate: numpy's dpotrf on
#: one thread took 0.6 / 1.3 / 5.6 / 25 / 100 ms at order 200 / 250 / 500 / 1000 / 2000 (t^3 / 3
#: at 0.44 / 0.39 / 0.74 / 1.3 / 2.7e10 a second, 28 Nov, load 1.6-2.3): about t^2 / 4e7 s up
#: to here, where it meets the rate of 4.4e10 "blas" units
CHOLESKY_KNEE = 3300


def cholesky_work(order: float) -> float:
    """The "blas" units of a Cholesky factorisation of ``order``: its order^3 / 3 multiply-adds,
    scaled up by CHOLESKY_KNEE / order below the knee (the small factors of the reg search
    ran 3-10x under the unit's rate)."""
    t = float(order)
    return t ** 3 / 3.0 * max(1.0, CHOLESKY_KNEE / t) if t > 0 else 0.0


def rate(kernel: str) -> float:
    """Units of ``kernel``'s work a CPU second (:data:`KERNEL_RATES`)."""
    return KERNEL_RATES[kernel].value


def seconds_of(work: dict) -> float:
    """CPU seconds (one core) of ``work``: units per kernel of :data:`KERNEL_RATES`."""
    return float(sum(units / rate(kernel) for kernel, units in work.items() if units))


def estimate_predict(estimator, n_rows: int, n_features_in: int, n_outputs: int = 1) -> float:
    """CPU seconds (one core) of ``estimator``'s predictions (or decision values) on ``n_rows``
    rows, from the work per kernel its ``_estimate_predict(n_rows, n_features_in, n_outputs)``
    counts; 0.0 when it has no such model."""
    own = getattr(estimator, "_estimate_predict", None)
    if own is None or n_rows <= 0:
        return 0.0
    return seconds_of(own(int(n_rows), int(n_features_in), int(n_outputs)))


def _task_state(path: str) -> str:
    """The one-letter scheduler state in a ``/proc`` ``stat`` file (after the last ')': a
    command name may hold one)."""
    with open(path) as fh:
        return fh.read().rsplit(")", 1)[1].split(None, 1)[0]


def runnable_groups(samples: int = 3, interval: float = 0.0) -> float | None:
    """How many scheduling entities want a core now, counted as the scheduler shares them:
    with Linux's autogroups (``/proc/sys/kernel/sched_autogroup_enabled``, one group a
    session, each group getting an equal share of the cores) the groups with a runnable task,
    else the runnable tasks. The mean of ``samples`` scans of ``/proc`` ``interval`` seconds
    apart (a scan takes milliseconds; a sleep on a loaded machine tens of them, so by default
    none).

    The caller counts by construction (it runs while it scans), not by being found in the
    scan: a thread of its own that ends mid-scan, or another process's unreadable files, must
    not drop it. The scan is trusted only if ``/proc`` reports the calling thread itself as
    running; a sandbox whose ``/proc`` reports no task states would otherwise show an idle
    machine while it works (seen on a CI machine: 0 runnable groups), and then this returns
    None and the callers use the load average. Where the caller's own autogroup file cannot be
    read, tasks are counted instead of groups. None without ``/proc``."""
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as fh:
            by_group = fh.read().strip() == "1"
    except OSError:
        by_group = False
    own_group = None
    if by_group:
        try:
            with open("/proc/self/autogroup") as fh:
                own_group = (fh.read().split(None, 1) or [None])[0]
        except OSError:
            pass
        by_group = own_group is not None
    try:                         # the caller's pid and thread as this /proc mount numbers them
        me = os.readlink("/proc/self")
    except OSError:
        me = str(os.getpid())
    try:
        me_tid = os.readlink("/proc/thread-self").rsplit("/", 1)[-1]
    except OSError:              # kernels before 3.17
        me_tid = str(threading.get_native_id())
    own_stat = f"/proc/{me}/task/{me_tid}/stat"
    counts = []
    for i in range(max(1, int(samples))):
        if i:
            time.sleep(interval)
        try:
            if _task_state(own_stat) != "R":
                return None
            pids = [p for p in os.listdir("/proc") if p.isdigit()]
        except (OSError, IndexError):
            return None
        seen = {own_group}
        n = 1                    # the calling thread
        for pid in pids:
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue         # a process that ended during the scan
            running = 0
            for tid in tids:
                if pid == me and tid == me_tid:
                    continue     # counted above
                try:
                    running += _task_state(f"/proc/{pid}/task/{tid}/stat") == "R"
                except (OSError, IndexError):
                    continue     # a thread that ended during the scan
            if not running:
                continue
            if not by_group:
                n += running
                continue
            try:
                with open(f"/proc/{pid}/autogroup") as fh:
                    group = fh.read().split(None, 1)
            except OSError:
                continue         # a process that ended during the scan
            # an empty file: the process sits in a cgroup's task group, not an autogroup;
            # the scheduler shares the cores with that group as one entity, counted here
            # as one per process (its group's name is not in /proc)
            seen.add(group[0] if group else f"pid {pid}")
        counts.append(len(seen) if by_group else n)
    return sum(counts) / len(counts)


def cpu_share(load: float | None = None, cores: int | None = None) -> float:
    """The share of one core a new single-threaded computation can expect: all of it on a
    quiet machine, ``cores / load`` when more than ``cores`` scheduling entities want one and
    the scheduler shares the cores equally among them. ``load`` defaults to
    :func:`runnable_groups` (the autogroups with a runnable task where Linux groups tasks by
    session, else the runnable tasks), or the 1-minute load average where ``/proc`` is not
    there. On the shared 2-core machine the load average (runnable threads: 15-17 while 7
    sessions ran) put the share at half to a third of what a fit got; the groups gave it within
    30% (bench_estimate, docs/GUI.md)."""
    cores = int(cores or os.cpu_count() or 1)
    if load is None:
        load = current_load()
    return min(1.0, cores / max(float(load), 1e-9))


def current_load() -> float:
    """The load :func:`cpu_share` divides the cores by: :func:`runnable_groups`, else the
    1-minute load average, else 0 (no load average: Windows; assume a quiet machine)."""
    load = runnable_groups()
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            load = 0.0
    return load


def wall_seconds(cpu_seconds: float, load: float | None = None, cores: int | None = None) -> float:
    """Wall-clock seconds of ``cpu_seconds`` of one-core work at this load (:func:`cpu_share`)."""
    return float(cpu_seconds) / cpu_share(load, cores)
