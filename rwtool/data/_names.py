"""The column names of a wide file as one text buffer, read as a sequence of str.

500,000 names held as Python strings cost about 60 bytes each (the string object and a list
slot), five times the bytes of the header they came from, and a list again for every copy
(the table's names, the record's columns, the features, ``Dataset.feature_names``).
:class:`Names` holds them as one pyarrow string array (the name bytes and a 4-byte offset
each) and reads as an immutable sequence of str: a name is made when asked for, a slice or a
selection (:func:`select`) stays one array and remembers its positions in the names it was
taken from, so finding those positions again (:func:`origin`) costs no lookup, and a name
asked by value is found by a scan or, once many are asked, by a sorted index (no dict of
them). It compares equal to a list holding the same names. The readers use it for files of
more than ``rwtool.data._read._WIDE`` columns; narrower files keep lists. This module must
not read files or decide column roles.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np

from ._handoff import Deferred

pa = Deferred("pyarrow", globals(), "pa")
pc = Deferred("pyarrow.compute", globals(), "pc")

__all__ = ["Names", "select", "origin", "concat", "as_arrow"]

_SCANS = 32           # names found by a scan before a sorted index is built
_CHUNK = 1 << 14      # names made at a time when iterating


class Names(Sequence):
    """An immutable sequence of str held in a pyarrow string array ``arr``. ``root`` and
    ``pos``: the Names these were selected from and their positions there (an array, or a
    range for a run; None: they are the root)."""

    __slots__ = ("arr", "root", "pos", "_asked", "_order", "_sorted")

    def __init__(self, arr, root: "Names | None" = None, pos: np.ndarray | None = None):
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        self.arr = arr if arr.type == pa.string() else arr.cast(pa.string())
        self.root, self.pos = root, pos
        self._asked = 0
        self._order = self._sorted = None

    @classmethod
    def of(cls, names) -> "Names":
        """Names holding ``names`` (an iterable of str, or Names: returned as it is)."""
        if isinstance(names, Names):
            return names
        if not isinstance(names, (list, tuple)):
            names = list(names)
        return cls(pa.array(names, pa.string()))

    def __len__(self) -> int:
        return len(self.arr)

    def __getitem__(self, i):
        if isinstance(i, slice):
            a, b, step = i.indices(len(self))
            if step == 1:                 # a run: a view, no index array
                return _run(self, a, max(b - a, 0))
            return select(self, np.arange(a, b, step))
        n = len(self.arr)
        i = i.__index__()
        if not -n <= i < n:
            raise IndexError("name index out of range")
        return self.arr[i % n].as_py()

    def __iter__(self):
        for a in range(0, len(self.arr), _CHUNK):
            yield from self.arr.slice(a, _CHUNK).to_pylist()

    def __contains__(self, name) -> bool:
        return self.find(name) >= 0

    def index(self, name, start: int = 0, stop: int | None = None) -> int:
        j = self.find(name) if start == 0 and stop is None else -1
        if j < 0 and (start != 0 or stop is not None):
            return list(self).index(name, start, len(self) if stop is None else stop)
        if j < 0:
            raise ValueError(f"{name!r} is not in the names")
        return j

    def find(self, name) -> int:
        """The first position of ``name``, -1 when absent: a scan in C for the first few
        names asked, then a binary search of the names sorted once (4 bytes a name and a
        sorted copy, where a dict of them takes about 100 bytes a name)."""
        if not isinstance(name, str):
            return -1
        self._asked += 1
        if self._asked <= _SCANS:
            return int(pc.index(self.arr, pa.scalar(name, pa.string())).as_py())
        if self._order is None:
            self._order = pc.array_sort_indices(self.arr)        # stable: first ones first
            self._sorted = self.arr.take(self._order)
        srt = self._sorted
        k = bisect.bisect_left(_Lazy(srt), name)
        if k < len(srt) and srt[k].as_py() == name:
            return int(self._order[k].as_py())
        return -1

    def written_as(self, rec: np.ndarray, delimiter: str) -> bool:
        """Whether the UTF-8 bytes ``rec`` are these names joined by ``delimiter`` (compared
        on the array's buffers: no string is made)."""
        d = delimiter.encode("utf-8")
        n = len(self.arr)
        if len(d) != 1 or not n:
            return rec.tobytes() == delimiter.join(self).encode("utf-8")
        offs = np.frombuffer(self.arr.buffers()[1], np.int32, n + 1, 4 * self.arr.offset)
        data = np.frombuffer(self.arr.buffers()[2], np.uint8)[offs[0]:offs[-1]]
        if len(rec) != len(data) + n - 1:
            return False
        cuts = offs[1:-1] - offs[0] + np.arange(n - 1)      # where each delimiter is
        keep = np.ones(len(rec), bool)
        keep[cuts] = False
        return bool(np.all(rec[cuts] == d[0])) and np.array_equal(rec[keep], data)

    def tolist(self) -> list[str]:
        return self.arr.to_pylist()

    def __eq__(self, other) -> bool:
        if isinstance(other, Names):
            return self.arr.equals(other.arr)
        if not isinstance(other, (list, tuple)) or len(other) != len(self):
            return False
        if not all(isinstance(s, str) for s in other):
            return False
        return self.arr.equals(pa.array(list(other), pa.string()))

    __hash__ = None

    def __add__(self, other) -> "Names":
        return concat([self, other], lookup=True)

    def __radd__(self, other) -> "Names":
        return concat([other, self], lookup=True)

    def __repr__(self) -> str:
        head = ", ".join(repr(s) for s in self.arr.slice(0, 3).to_pylist())
        return f"Names([{head}{', ...' if len(self) > 3 else ''}], {len(self)} names)"

    def __reduce__(self):
        return Names, (self.arr,)


class _Lazy:
    """A sorted string array as bisect reads a list: one name made per probe."""

    def __init__(self, arr):
        self.arr = arr

    def __len__(self):
        return len(self.arr)

    def __getitem__(self, k):
        return self.arr[k].as_py()


def origin(names) -> tuple["Names | None", np.ndarray | None]:
    """(the root Names ``names`` were selected from, their positions there as an array;
    None when they are the root), or (None, None) when they are not Names."""
    if not isinstance(names, Names):
        return None, None
    if names.root is None:
        return names, None
    return names.root, _array(names.pos)


def _array(pos) -> np.ndarray:
    return np.arange(pos.start, pos.stop, dtype=np.int64) if isinstance(pos, range) else pos


def select(names, idx):
    """``names[i] for i in idx``: Names stay Names, positions remembered (a run of
    consecutive names is a view of the same buffer, any other selection one take), a list
    gives a list."""
    idx = np.asarray(idx, np.int64)
    if not isinstance(names, Names):
        return [names[i] for i in idx.tolist()]
    root, pos = (names, None) if names.root is None else (names.root, names.pos)
    n = len(idx)
    if n and int(idx[-1]) - int(idx[0]) == n - 1 and (n < 3 or bool(np.all(idx[1:] > idx[:-1]))):
        return _run(names, int(idx[0]), n)      # increasing and spanning n: a run
    return Names(names.arr.take(pa.array(idx)), root,
                 idx if pos is None else pos.start + idx if isinstance(pos, range) else pos[idx])


def _run(names: Names, a: int, n: int) -> Names:
    """``names[a:a + n]``: a view of the same buffer, its positions a range."""
    root, pos = (names, None) if names.root is None else (names.root, names.pos)
    arr = names.arr.slice(a, n)
    if pos is None:
        return Names(arr, root, range(a, a + n))
    return Names(arr, root, range(pos.start + a, pos.start + a + n)
                 if isinstance(pos, range) else pos[a:a + n])


def concat(parts, lookup: bool = False) -> "Names":
    """Names holding the names of ``parts`` (Names or lists of str) one after the other; the
    positions in a shared root are kept when every part has them (with ``lookup``, a short
    list's names are looked up there: ``names + [target]``)."""
    parts = [p for p in parts if len(p)]
    if len(parts) == 1 and isinstance(parts[0], Names):
        return parts[0]
    roots = {id(origin(p)[0]): origin(p)[0] for p in parts if isinstance(p, Names)}
    root = next(iter(roots.values())) if len(roots) == 1 else None
    arrays, pos = [], []
    for p in parts:
        if isinstance(p, Names):
            arrays.append(p.arr)
            o = origin(p)[1]
            pos.append(np.arange(len(p)) if o is None else o)
        else:
            arrays.append(pa.array(list(p), pa.string()))
            found = (np.array([root.find(s) for s in p], np.int64)
                     if lookup and root is not None and len(p) <= _SCANS else None)
            if found is None or (found < 0).any():
                root = None
            pos.append(found)
    arr = pa.concat_arrays(arrays) if arrays else pa.array([], pa.string())
    if root is None:
        return Names(arr)
    return Names(arr, root, np.concatenate(pos) if pos else np.empty(0, np.int64))


def as_arrow(names):
    """``names`` (Names or a sequence of str) as a pyarrow string array."""
    return names.arr if isinstance(names, Names) else pa.array(list(names), pa.string())
