"""A temporary file of arrays, written once in order and read back in the same order: where the
streaming reader's pass one puts the typed blocks that do not fit in its memory budget, so that
pass two reads them instead of tokenising the CSV file again (rwtool.data._stream).

The file is created private to the user (``tempfile.mkstemp``) and removed when its owner
closes it or is collected, and at interpreter exit (``weakref.finalize``); the writer's handle is
closed once the last array is written and each reading opens and closes its own, so nothing is
held open between passes. Plain binary writes of the arrays' bytes and ``readinto`` into fresh
arrays: the bits come back as they went. This module must not know what the arrays mean.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from contextlib import contextmanager
from typing import Iterator

import numpy as np

__all__ = ["SpillFile", "SpillError"]


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

    def write(self, a: np.ndarray) -> None:
        """Append ``a``'s bytes (in C order)."""
        a = np.ascontiguousarray(a)
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

    def read(self, shape, dtype) -> np.ndarray:
        """The next array of this ``shape`` and ``dtype``, in a fresh array."""
        return self.fill(np.empty(shape, dtype))

    def fill(self, a: np.ndarray) -> np.ndarray:
        """Read the next ``a.nbytes`` bytes into ``a`` (C-contiguous: e.g. a row of a matrix)."""
        view = memoryview(a).cast("B") if a.nbytes else None
        got = 0
        while got < a.nbytes:
            n = self.fh.readinto(view[got:])
            if not n:
                raise SpillError(f"the spill file {self.path} ends early ({got} of {a.nbytes} "
                                 f"bytes of an array)")
            got += n
        return a
