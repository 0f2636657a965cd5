"""A temporary file of arrays, written once in order and read back in the same order: where the
streaming reader's pass one puts the typed blocks that do not fit in its memory budget, so that
pass two reads them instead of tokenising the CSV file again (rwtool.data._stream).

The file is created private to the user (``tempfile.mkstemp``). On POSIX its name is removed at
once and the file lives only as the one descriptor its owner holds (each reading dups it and
reads by offset, ``os.preadv``): the kernel frees the space when the last descriptor closes,
however the process ends (a SIGKILL, a crash, the OOM killer leave nothing in the
folder). On Windows, where an open file cannot be removed, the named file is removed when its
owner closes it or is collected and at interpreter exit (``weakref.finalize``), but a killed
process leaves it behind; there the writer's handle is closed once the last array is written
and each reading opens and closes its own, so nothing is held open between passes. Plain binary
writes of the arrays' bytes and reads into fresh arrays: the bits come back as they went. An
array may be written as a narrower type that holds each of its values exactly
(:func:`narrow_rows`, :func:`narrowest_int`: whole numbers as int8, int16 or int32, small codes
as int8) and is widened back on reading, the same bits again: less to write and read. This
module must not know what the arrays mean.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from contextlib import contextmanager
from typing import Iterator

import numpy as np
from numba import njit

__all__ = ["SpillFile", "SpillError", "narrow_rows", "narrowest_int", "int_bytes",
           "int_type"]

_INT_DTYPES = {1: np.dtype(np.int8), 2: np.dtype(np.int16), 4: np.dtype(np.int32)}
# each type's range as floats: the bounds the numba kernel and int_bytes both test
_I8_LO, _I8_HI = float(np.iinfo(np.int8).min), float(np.iinfo(np.int8).max)
_I16_LO, _I16_HI = float(np.iinfo(np.int16).min), float(np.iinfo(np.int16).max)
_I32_LO, _I32_HI = float(np.iinfo(np.int32).min), float(np.iinfo(np.int32).max)


@njit(cache=True, nogil=True, inline="always")
def _int_bytes(lo, hi):
    """The bytes of the narrowest of int8, int16, int32 holding the whole numbers from ``lo``
    to ``hi``, 0 when none does."""
    if _I8_LO <= lo and hi <= _I8_HI:
        return 1
    if _I16_LO <= lo and hi <= _I16_HI:
        return 2
    if _I32_LO <= lo and hi <= _I32_HI:
        return 4
    return 0


@njit(cache=True, nogil=True)
def _narrow_rows(V, out):
    bits = V.view(np.uint64)
    for r in range(V.shape[0]):
        lo, hi = np.inf, -np.inf
        for i in range(V.shape[1]):
            v = V[r, i]
            # NaN fails the range test; -0.0 would come back as 0.0
            if not (_I32_LO <= v <= _I32_HI and v == np.floor(v)) or (
                    bits[r, i] == np.uint64(0x8000000000000000)):
                lo = np.nan
                break
            lo, hi = min(lo, v), max(hi, v)
        out[r] = _int_bytes(lo, hi) if lo == lo else 0


def narrow_rows(V: np.ndarray) -> np.ndarray:
    """Per row of the float64 matrix ``V`` (C order): the bytes of the narrowest of int8,
    int16, int32 that holds each of its values exactly (whole numbers within its range; no
    NaN, no -0.0), so that the row written as that type reads back as the same bits; 0 when
    none does (see :func:`int_type`)."""
    out = np.zeros(V.shape[0], np.int8)
    if V.size:
        _narrow_rows(np.ascontiguousarray(V), out)
    return out


def int_bytes(ok: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per row, as :func:`narrow_rows` says it, from what is known of the rows: ``ok``
    (int32 holds the row exactly) and its smallest and largest numbers ``lo``, ``hi`` (read
    only where ``ok``)."""
    out = np.where(ok, 4, 0).astype(np.int8)
    if ok.any():
        with np.errstate(invalid="ignore"):         # (NaN or garbage where not ok)
            out[ok & (lo >= _I16_LO) & (hi <= _I16_HI)] = 2
            out[ok & (lo >= _I8_LO) & (hi <= _I8_HI)] = 1
    return out


def int_type(nbytes: int):
    """The signed integer type of ``nbytes`` bytes (1, 2, 4), None for 0: how
    :func:`narrow_rows` says a row is written."""
    return _INT_DTYPES.get(int(nbytes))


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


# POSIX lets an open file lose its name: the descriptor is then the file's only hold
_UNLINK = os.name == "posix"
_PREADV = hasattr(os, "preadv")


def _remove(path, out, fd) -> None:
    try:
        if not out.closed:
            out.close()
    except OSError:
        pass                # a flush failing (disk full): the bytes are being thrown away
    finally:
        if fd is not None:
            os.close(fd)
        if path is not None:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass


class SpillFile:
    """Arrays appended with :meth:`write`, read back in order with :meth:`reader`. ``path`` is
    None where the file has no name (POSIX: removed from ``folder`` when created)."""

    def __init__(self, folder: str, prefix: str = "rwtool-"):
        self.folder = folder
        fd, path = tempfile.mkstemp(prefix=prefix, suffix=".spill", dir=folder)
        try:
            if _UNLINK:
                os.remove(path)
                path = None
            # buffered: a large write goes straight through; the descriptor outlives the
            # writer where it is the file
            self._out = open(fd, "wb", closefd=path is not None)
        except BaseException:
            os.close(fd)
            if path is not None:
                os.remove(path)
            raise
        self.path = path
        self._fd = None if path is not None else fd
        self.nbytes = 0
        self._finalizer = weakref.finalize(self, _remove, path, self._out, self._fd)

    def __str__(self) -> str:
        return (f"the spill file {self.path}" if self.path is not None else
                f"the spill file in {self.folder} (nameless: removed from the folder when "
                f"created)")

    def write(self, a: np.ndarray, stored=None) -> None:
        """Append ``a``'s bytes (in C order), converted to the type ``stored`` when given (one
        that holds each value exactly: read back with the same ``stored``)."""
        a = np.ascontiguousarray(a) if stored is None or stored == a.dtype else \
            a.astype(stored)
        if a.nbytes:
            self._out.write(memoryview(a).cast("B"))
            self.nbytes += a.nbytes

    def finish(self) -> None:
        """The last array is written: the writer's handle is closed (flushed, where the
        descriptor is the file)."""
        self._out.close()

    def exists(self) -> bool:
        """Whether the file is still there and, once finished, whole (removed or cut short by
        someone else: not)."""
        if not self._finalizer.alive:
            return False
        try:
            size = (os.fstat(self._fd).st_size if self.path is None else
                    os.path.getsize(self.path))
        except OSError:
            return False
        return size >= self.nbytes or not self._out.closed

    @contextmanager
    def reader(self) -> Iterator["_Reader"]:
        """A reading from the start, its handle (if any) closed when the block ends."""
        if not self._finalizer.alive:
            raise SpillError(f"{self} was removed (closed)")
        if self.path is None:
            # a descriptor of the reading's own: the file stays whole if the owner closes
            # meanwhile, as a named file's open reading does (its closed number could be
            # another file's by then)
            fd = os.dup(self._fd)
            try:
                yield _Reader(str(self), fd=fd)
            finally:
                os.close(fd)
            return
        try:
            fh = open(self.path, "rb")     # buffered: a large readinto goes straight through
        except FileNotFoundError:
            raise SpillError(f"{self} was removed") from None
        try:
            yield _Reader(str(self), fh=fh)
        finally:
            fh.close()

    def close(self) -> None:
        """Remove the file now (again: nothing)."""
        self._finalizer()


class _Reader:
    def __init__(self, name, fh=None, fd=None):
        self.name, self.fh, self.fd = name, fh, fd
        self.at = 0         # by offset: no shared position to move (a fork, another reading)

    def _readinto(self, view) -> int:
        if self.fh is not None:
            return self.fh.readinto(view)
        if _PREADV:
            n = os.preadv(self.fd, [view], self.at)
        else:
            b = os.pread(self.fd, len(view), self.at)
            n = len(b)
            view[:n] = b
        self.at += n
        return n

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
            n = self._readinto(view[got:])
            if not n:
                raise SpillError(f"{self.name} ends early ({got} of {a.nbytes} "
                                 f"bytes of an array)")
            got += n
        return a
