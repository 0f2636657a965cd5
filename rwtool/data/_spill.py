"""A temporary file of arrays, written once in order and read back in the same order: where the
streaming reader's pass one puts the typed blocks that do not fit in its memory budget, so that
pass two reads them instead of tokenising the CSV file again (rwtool.data._stream).

The file is created private to the user (``tempfile.mkstemp``) and removed when its owner
closes it or is collected, and at interpreter exit (``weakref.finalize``); the writer's handle is
closed once the last array is written and each reading opens and closes its own, so nothing is
held open between passes. Plain binary writes of the arrays' bytes and ``readinto`` into fresh
arrays: the bits come back as they went. An array may be written as a narrower type that holds
each of its values exactly (:func:`narrow_rows`, :func:`narrowest_int`: whole numbers as
int32, small codes as int8) and is widened back on reading, the same bits again: less to write
and read. This module must not know what the arrays mean.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from contextlib import contextmanager
from typing import Iterator

import numpy as np
from numba import njit

__all__ = ["SpillFile", "SpillError", "narrow_rows", "narrowest_int"]

_I32_LO, _I32_HI = float(np.iinfo(np.int32).min), float(np.iinfo(np.int32).max)


@njit(cache=True, nogil=True)
def _narrow_rows(V, out):
    bits = V.view(np.uint64)
    for r in range(V.shape[0]):
        ok = True
        for i in range(V.shape[1]):
            v = V[r, i]
            # NaN fails the range test; -0.0 would come back as 0.0
            if not (_I32_LO <= v <= _I32_HI and v == np.floor(v)) or (
                    bits[r, i] == np.uint64(0x8000000000000000)):
                ok = False
                break
        out[r] = ok


def narrow_rows(V: np.ndarray) -> np.ndarray:
    """Per row of the float64 matrix ``V`` (C order): whether int32 holds each of its values
    exactly (whole numbers within int32's range; no NaN, no -0.0), so that the row written as
    int32 reads back as the same bits."""
    out = np.zeros(V.shape[0], bool)
    if V.size:
        _narrow_rows(np.ascontiguousarray(V), out)
    return out


def narrowest_int(a: np.ndarray, bounds=None) -> np.dtype:
    """The smallest signed integer type holding every value of the integer array ``a``
    (``bounds``: (smallest, largest) that its values may be, when known: no pass over it)."""
    if not a.size:
        return a.dtype
    lo, hi = (int(a.min()), int(a.max())) if bounds is None else bounds
    for t in (np.int8, np.int16, np.int32):
        i = np.iinfo(t)
        if i.min <= lo and hi <= i.max:
            return np.dtype(t) if np.dtype(t).itemsize < a.dtype.itemsize else a.dtype
    return a.dtype


class SpillError(OSError):
    """The spill file cannot be read back as written (removed or cut short meanwhile)."""


def _remove(path: str, out) -> None:
    if out is not None and not out.closed:
        out.close()
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


class SpillFile:
    """Arrays appended with :meth:`write`, read back in order with :meth:`reader`."""

    def __init__(self, folder: str, prefix: str = "rwtool-"):
        fd, self.path = tempfile.mkstemp(prefix=prefix, suffix=".spill", dir=folder)
        try:
            self._out = open(fd, "wb")      # buffered: a large write goes straight through
        except BaseException:
            os.close(fd)
            os.remove(self.path)
            raise
        self.nbytes = 0
        self._finalizer = weakref.finalize(self, _remove, self.path, self._out)

    def write(self, a: np.ndarray, stored=None) -> None:
        """Append ``a``'s bytes (in C order), converted to the type ``stored`` when given (one
        that holds each value exactly: read back with the same ``stored``)."""
        a = np.ascontiguousarray(a) if stored is None or stored == a.dtype else \
            a.astype(stored)
        if a.nbytes:
            self._out.write(memoryview(a).cast("B"))
            self.nbytes += a.nbytes

    def finish(self) -> None:
        """The last array is written: the writer's handle is closed."""
        self._out.close()

    def exists(self) -> bool:
        return self._finalizer.alive and os.path.exists(self.path)

    @contextmanager
    def reader(self) -> Iterator["_Reader"]:
        """A reading from the start, its handle closed when the block ends."""
        try:
            fh = open(self.path, "rb")     # buffered: a large readinto goes straight through
        except FileNotFoundError:
            raise SpillError(f"the spill file {self.path} was removed") from None
        try:
            yield _Reader(fh, self.path)
        finally:
            fh.close()

    def close(self) -> None:
        """Remove the file now (again: nothing)."""
        self._finalizer()


class _Reader:
    def __init__(self, fh, path):
        self.fh, self.path = fh, path

    def read(self, shape, dtype, stored=None) -> np.ndarray:
        """The next array of this ``shape`` and ``dtype`` (written as ``stored``), in a fresh
        array."""
        return self.fill(np.empty(shape, dtype), stored)

    def fill(self, a: np.ndarray, stored=None) -> np.ndarray:
        """Read the next array into ``a`` (C-contiguous: e.g. rows of a matrix), written as
        ``stored`` (None: ``a``'s own type)."""
        if stored is not None and stored != a.dtype:
            a[...] = self._fill(np.empty(a.shape, stored))
            return a
        return self._fill(a)

    def _fill(self, a: np.ndarray) -> np.ndarray:
        view = memoryview(a).cast("B") if a.nbytes else None
        got = 0
        while got < a.nbytes:
            n = self.fh.readinto(view[got:])
            if not n:
                raise SpillError(f"the spill file {self.path} ends early ({got} of {a.nbytes} "
                                 f"bytes of an array)")
            got += n
        return a
