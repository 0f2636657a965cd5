"""How many threads OpenBLAS may use: one thread around small dense solves.

OpenBLAS's worker threads busy-wait between calls. A loop of small solves (the Lasso's active
set: about 1,420 Cholesky solves of about 150 x 150 on diabetes) gains nothing from a second
thread, yet its waiting threads burn a core each and, on a loaded machine, wait for the cores
they spin on: 30 s of CPU against 1 s with one BLAS thread (docs/BENCHMARKS.md).
:func:`single_blas_thread` holds every OpenBLAS loaded in the process (numpy's and scipy's are
two libraries) to one thread and restores the counts it found, also on an exception;
:func:`blas_threads_for` does so only below :data:`SMALL_SOLVE_MAX`. The closed forms' predict
holds it too while its threads each call BLAS for a chunk of rows (:func:`run_shares`, one set
of threads for the pass, rwtool.features._rkhs).

The count is a process-wide setting of OpenBLAS, not a thread's. While any thread is inside
:func:`single_blas_thread`, BLAS runs on one thread in every thread of the process; the counts
come back when the last one leaves (a count of holders under a lock, so the app's threads can
enter and leave in any order). With a BLAS other than OpenBLAS (or none found) it does nothing.

:func:`run_shares` and :func:`run_row_shares` run a sequential, GIL-free numba kernel over
shares of rows on threads started for the call: the feature maps' kernels and BKerNN's fit
and prediction use them instead of numba's ``parallel=True``, which compiled two to three times
as long on a cold cache for the same speed (the cold start of a fresh install, docs/TESTING.md).

:func:`numpy_blas` finds a routine of numpy's own OpenBLAS (its dgemm for numba's kernels, its
dsyrk and dpotrf called in place) under whichever prefix and suffix the build gave the names,
with the integer width the build uses: the libraries that hold the thread counts hold these.

:func:`read_only` gives the kernels' inputs one array type (numba compiles a kernel again for
a read-only array), for the feature maps and the CSV reader alike.

This module must not import anything of rwtool: it sits at the bottom with resources.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import threading
from contextlib import contextmanager, nullcontext

__all__ = ["SMALL_SOLVE_MAX", "blas_thread_counts", "single_blas_thread", "on_one_blas_thread",
           "blas_threads_for", "openblas_paths", "numpy_openblas_paths", "blas_function",
           "numpy_blas", "run_shares", "run_row_shares", "PAIRS_PER_THREAD", "read_only"]

#: the order n of a dense n x n solve (or matrix-vector loop) up to which it runs on one BLAS
#: thread (docs/BENCHMARKS.md, benchmarks/speed/bench_small_solves.py): on the loaded 2-core
#: machine two threads cost 6-45x the CPU and wall time of one from n = 100 to 800 (the waiting
#: thread is descheduled), and one thread's call is still only 10-20 ms at n = 1000, below
#: what a second thread could save on an idle machine
SMALL_SOLVE_MAX = 1000

_lock = threading.Lock()
_holders = 0
_saved: list[int] = []
_libraries = None          # [(get, set)] per OpenBLAS loaded, found on first use


def openblas_paths() -> list[str]:
    """Paths of the OpenBLAS libraries in this process (numpy's and scipy's)."""
    import numpy  # noqa: F401  (loads numpy's BLAS)
    import scipy.linalg  # noqa: F401  (loads scipy's)
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower()}
        return sorted(p for p in paths if os.path.isfile(p))
    except OSError:        # not Linux: the libraries numpy's and scipy's wheels bundle
        found = set()
        for mod in (numpy, scipy):
            base = os.path.dirname(mod.__file__)
            for pattern in (base + ".libs/*openblas*", base + "/.dylibs/*openblas*"):
                found.update(glob.glob(pattern))
        return sorted(found)


#: how OpenBLAS builds spell a routine's name: scipy-openblas's "scipy_" prefix (numpy's and
#: scipy's wheels) or none, and the "64_" or "_64" suffix of builds with 64-bit integers
#: (numpy's wheels) or none (scipy's wheels, most system libraries)
_PREFIXES = ("scipy_", "")
_SUFFIXES = ("64_", "_64", "")


def _spellings(lib, stem: str):
    """(prefix, suffix) of every spelling of ``stem`` that ``lib`` exports, in the order of
    :data:`_PREFIXES` and :data:`_SUFFIXES`."""
    for prefix in _PREFIXES:
        for suffix in _SUFFIXES:
            if getattr(lib, f"{prefix}{stem}{suffix}", None) is not None:
                yield prefix, suffix


def _find_libraries():
    libs = []
    for path in openblas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in _spellings(lib, "openblas_get_num_threads"):
            put = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
            if put is not None:
                get = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}")
                get.restype, get.argtypes = ctypes.c_int, []
                put.restype, put.argtypes = None, [ctypes.c_int]
                libs.append((get, put))
                break
    return libs


def numpy_openblas_paths() -> list[str]:
    """The OpenBLAS numpy itself calls: the one its wheel bundles (under numpy's folder), else
    (numpy built against a system OpenBLAS) those not bundled with scipy."""
    import numpy
    import scipy
    paths = openblas_paths()
    mine = [p for p in paths if p.startswith(os.path.dirname(numpy.__file__))]
    if mine:                                      # numpy.libs, numpy/.dylibs
        return mine
    return [p for p in paths if not p.startswith(os.path.dirname(scipy.__file__))]


def blas_function(lib, stem: str, argtypes):
    """The routine ``stem`` of the loaded library ``lib`` under the first spelling it exports
    (:func:`_spellings`), with ``argtypes(integer)`` for the library's integer type and no
    result, or None. The integer is ctypes.c_int64 where the build uses 64-bit integers (its
    ``openblas_get_config`` names USE64BITINT; without that routine, a 64 suffix says so),
    else ctypes.c_int; the function's ``blas_int`` holds it (for the integers a Fortran
    routine takes by reference)."""
    for prefix, suffix in _spellings(lib, stem):
        config = getattr(lib, f"{prefix}openblas_get_config{suffix}", None)
        if config is not None:
            config.restype, config.argtypes = ctypes.c_char_p, []
            wide = b"USE64BITINT" in (config() or b"")
        else:
            wide = suffix in ("64_", "_64")
        integer = ctypes.c_int64 if wide else ctypes.c_int
        fn = getattr(lib, f"{prefix}{stem}{suffix}")
        fn.restype, fn.argtypes = None, argtypes(integer)
        fn.blas_int = integer
        return fn
    return None


def numpy_blas(stem: str, argtypes):
    """numpy's own BLAS or LAPACK routine ``stem`` ("cblas_dgemm", "dpotrf_") as a ctypes
    function (:func:`blas_function`; ctypes releases the GIL around the call, numba can call
    it from a kernel), however numpy's OpenBLAS build spells it, or None where numpy's BLAS is
    not an OpenBLAS found in this process (the callers then go through numpy)."""
    for path in numpy_openblas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        fn = blas_function(lib, stem, argtypes)
        if fn is not None:
            return fn
    return None


def _get_libraries():
    global _libraries
    if _libraries is None:
        _libraries = _find_libraries()
    return _libraries


def blas_thread_counts() -> list[int]:
    """The thread count of each OpenBLAS loaded in this process (empty with another BLAS)."""
    with _lock:
        return [get() for get, _ in _get_libraries()]


@contextmanager
def single_blas_thread():
    """Run the body with every OpenBLAS of the process on one thread; the counts found on entry
    come back when the last holder (of any thread) leaves, also on an exception."""
    global _holders, _saved
    with _lock:
        libs = _get_libraries()
        if _holders == 0:
            _saved = [get() for get, _ in libs]
            for _, put in libs:
                put(1)
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                for (_, put), count in zip(libs, _saved):
                    put(count)


def on_one_blas_thread(function):
    """``function`` run inside :func:`single_blas_thread` (a decorator): for a computation
    whose result must not depend on the BLAS thread count (OpenBLAS splits the inner dimension
    of some products and dot products among its threads, and its threaded Cholesky blocks
    differently, so the last bits of the results change with the count)."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with single_blas_thread():
            return function(*args, **kwargs)
    return wrapper


def blas_threads_for(n: int):
    """:func:`single_blas_thread` for a dense solve of order ``n`` up to
    :data:`SMALL_SOLVE_MAX`, else a context that changes nothing."""
    return single_blas_thread() if n <= SMALL_SOLVE_MAX else nullcontext()


def run_shares(share, n: int) -> None:
    """``share(p)`` for p = 0 .. n - 1, share 0 on the calling thread and the others on
    threads of their own, all joined before it returns; the first exception is raised again.
    For numba kernels compiled with ``nogil=True`` whose shares write disjoint outputs: the
    threads run them in parallel, and the result cannot depend on ``n`` when the shares'
    boundaries do not change what each unit computes. Threads are started per call (tens of
    microseconds), so a fork in between leaves no pool behind in the child."""
    errors: list[BaseException] = []

    def run(p):
        try:
            share(p)
        except BaseException as exc:      # noqa: BLE001 - raised again in the caller
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(p,), daemon=True) for p in range(1, n)]
    for t in threads:
        t.start()
    run(0)
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


#: units of work (a row times its width: (row, centre) pairs, multiply-adds) below which
#: :func:`run_row_shares` keeps to the calling thread: about a millisecond of work, where
#: starting a thread costs tens of microseconds
PAIRS_PER_THREAD = 1 << 17


def run_row_shares(rows, m: int, width: int) -> None:
    """``rows(a, b)`` for contiguous shares [a, b) of ``m`` rows of ``width`` units of work
    each, on as many threads as ``numba.get_num_threads()`` (the numba setting users already
    set for rwtool's kernels) and the work allows (:data:`PAIRS_PER_THREAD` a thread). For
    sequential, GIL-free numba kernels in place of ``parallel=True`` ones, which compile
    about three times as long on a cold cache for the same speed. A row's result must not
    depend on its share."""
    import numba                 # imported on use: this module sits below rwtool's kernels
    workers = max(1, min(numba.get_num_threads(), m * max(1, width) // PAIRS_PER_THREAD))
    run_shares(lambda p: rows(p * m // workers, (p + 1) * m // workers), workers)


def read_only(X):
    """A read-only view of ``X`` for a kernel that only reads it. numba types a read-only array
    apart from a writable one, so a kernel given both (scikit-learn's checks pass read-only
    memory maps, a loaded model's arrays are read-only, pyarrow's buffers are) compiled twice;
    given this view always, it compiles once."""
    view = X.view()
    view.flags.writeable = False
    return view
