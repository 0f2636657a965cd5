"""CSV bytes to typed columns: pyarrow.csv tokenises, a numba scan locates, pyarrow types.

The file is read in blocks of bytes. Each block is scanned once (rwtool.data._scan) for record
boundaries, file lines, field counts and open quotes; structural problems (ragged rows, an
unterminated quote) are refused there with their line. pyarrow.csv then splits the cells of the
block's complete records (multi-threaded, as text; a plainly clean block after the first, once
its numbers are known, by one numba pass with the same result: rwtool.data._split), and each
column is typed with pyarrow compute: a cell is a number when it is ASCII digits with an optional sign, decimal mark and
exponent, or inf/nan (so neither "1_000" nor Arabic-Indic digits are numbers); a cell in
``na_values`` (after stripping spaces) or an Excel error value ("#DIV/0!") is missing; anything
else is text, interned per column. In a decimal-comma file "1.234" is left as text for the
column's number format to decide (rwtool.data._numfmt).

:func:`iter_blocks` yields the blocks (the streaming reader builds on it); :func:`type_block`
types a block's columns and :func:`parse` collects them into a :class:`Table`: the columns that
hold text as :class:`Column` objects, all others as rows of one number matrix, so a wide file
costs no Python object per column. The text encoding is decided for the whole
file: a legacy encoding guessed from the first bytes is checked against every byte, a file
detected as UTF-8 from its first bytes that is not valid UTF-8 further down is read again, from
the start, in the best-scored legacy encoding (rwtool.data._charset), and the choice is
reported in the table's notes; lines before the header (Excel's "sep=;", "#" comments) are
skipped as the dialect says. This module must not decide column roles, encode features or fit
anything.
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import csv
import dataclasses
import gc
import functools
import math
from array import array
import re
import sys
from collections import abc
from functools import partial
from types import MappingProxyType
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

import numpy as np
from numba import njit

from ..exceptions import Note
from ..threads import read_only
from ._charset import encoding_name, guess_legacy
from ._dialect import _DOT_GROUPS, NA_VALUES, Dialect, Source, open_source
from ._scan import (BLANK, NEWLINE_IN_QUOTES, TRAILING_EMPTY, compact_records, scan_records,
                    split_columns, trim_trailing_field)
from ._handoff import Deferred, arrow_input, held
from ._split import split_plain
from ._names import Names, as_arrow, origin
from ._errors import (DataError, DuplicateColumnError, EmptyFileError, EncodingError,
                      FileTooLargeError, HeaderError, QuoteError, RaggedRowError)

# pyarrow is imported on the first read (rwtool.data._handoff.Deferred)
pa = Deferred("pyarrow", globals(), "pa")
pc = Deferred("pyarrow.compute", globals(), "pc")
pacsv = Deferred("pyarrow.csv", globals(), "pacsv")

__all__ = ["Column", "Table", "TableBuilder", "Block", "iter_blocks", "parse",
           "table_from_rows", "canon", "type_block", "number_spellings", "positions",
           "NameLookup"]

_BLOCK_BYTES = 1 << 26                 # bytes read at a time (whole-file reads)
_STREAM_BLOCK_BYTES = 1 << 24          # ... when the caller wants bounded memory
_PLAIN_BLOCK = 1 << 22                # pyarrow.csv's block on the plain path (lines up to it)
_WIDE = 1024                           # columns above which records are split by split_columns
_SAMPLE = 256                          # cells looked at before choosing how to type a chunk
_FIRST_BLOCK = 1 << 20                 # the first block of a typed read: its text sets the plan
_TYPED_MAX = 64                        # columns typed while split (wider: cast_block's casts)
_SLAB = 1 << 16                        # cells cast at a time by cast_block
_NUMBER = (r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
           r"|^[+-]?(?i:inf|infinity|nan)$")


_NOTHING = np.empty(0, np.int64)
_NO_TEXT: tuple = ()                   # the text parts of a column of numbers, shared
_NO_MARKS: frozenset = frozenset()
_NO_LOOKUP = MappingProxyType({})


def canon(v: float, decimal: str = ".") -> str:
    """The category label of a number: "3" for 3.0, repr otherwise ("2.5", "inf"), with the
    file's ``decimal`` mark ("2,5": the label a decimal-comma file writes)."""
    v = float(v)
    if math.isfinite(v) and v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(v) if decimal == "." else repr(v).replace(".", decimal)


def is_number_text(cell: str) -> bool:
    """Whether a stripped cell is a number by the reader's rule (ASCII digits only)."""
    return bool(pc.match_substring_regex(pa.array([cell]), _NUMBER)[0].as_py())


class Column:
    """One parsed column: numbers, and codes saying which cells are text or missing.

    ``codes[i]`` is -1 for a number (``values[i]``), -2 for a missing cell, k >= 0 for the
    text ``vocab[k]``. Text is interned, so a column costs 12 bytes per row; past ``max_vocab``
    distinct texts, further ones share the slot ``"<other>"``.
    """

    __slots__ = ("name", "index", "values", "_codes", "vocab", "_lookup", "_vchunks",
                 "_cchunks", "max_vocab", "n_distinct_text", "fast", "lines", "_full", "marks",
                 "_n", "_errors", "excel_rows", "excel_texts")

    def __init__(self, name: str, index: int, max_vocab: int, fast: bool = True):
        # fast: no missing-value token reads as a number, so a clean chunk is cast whole
        self.name, self.index, self.max_vocab, self.fast = name, index, max_vocab, fast
        self.vocab: list[str] = []
        self._lookup: dict[str, int] = {}
        self._vchunks: list[np.ndarray] = []
        self._cchunks: list[np.ndarray] = []
        self.n_distinct_text = 0
        self._full = None
        self.lines = None       # file line of each cell; set by the Table holding the column
        self.marks: set[str] = set()      # decimal marks written in the number cells
        self._n = 0
        self._errors: list[tuple[np.ndarray, list[str]]] = []
        self.excel_rows = _NOTHING                  # rows holding an Excel error value
        self.excel_texts: list[str] = []            # ... and its text
        self._codes = None

    @classmethod
    def of_numbers(cls, name: str, index: int, values: np.ndarray, lines) -> "Column":
        """The column of a table that holds numbers and missing cells only (NaN), as a view
        of its row of the table's number matrix: made when asked for, never kept. Nothing is
        built per call: its codes are made from the values when first asked for (a question
        on the values alone, asked of every column of a wide file, must not cost a pass),
        and its empty text parts are shared (never added to: the column holds no text)."""
        c = cls.__new__(cls)
        c.name, c.index, c.values, c.lines, c._codes = name, index, values, lines, None
        c.max_vocab, c.fast, c.n_distinct_text, c._full, c._n = 0, True, 0, None, len(values)
        c.vocab, c._lookup, c._vchunks, c._cchunks = _NO_TEXT, _NO_LOOKUP, (), ()
        c.marks, c._errors, c.excel_rows, c.excel_texts = _NO_MARKS, (), _NOTHING, _NO_TEXT
        return c

    @property
    def codes(self) -> np.ndarray:
        if self._codes is None:         # a column of numbers (see of_numbers)
            self._codes = number_codes(self.values)
        return self._codes

    @codes.setter
    def codes(self, codes: np.ndarray) -> None:
        self._codes = codes

    def add_chunk(self, cells, decimal: str, na: frozenset) -> None:
        vals, codes, seen = type_cells(cells, decimal, na, self.fast, self._intern)
        self.marks |= seen.marks
        if len(seen.error_rows):
            self._errors.append((seen.error_rows + self._n, seen.error_texts))
        self.add_typed(vals, codes)

    def add_typed(self, values: np.ndarray, codes: np.ndarray) -> None:
        self._vchunks.append(values)
        self._cchunks.append(codes)
        self._n += len(codes)

    def _intern(self, texts: list[str]) -> np.ndarray:
        out = np.empty(len(texts), dtype=np.int32)
        lookup, vocab = self._lookup, self.vocab
        for i, t in enumerate(texts):
            k = lookup.get(t)
            if k is None:
                self.n_distinct_text += 1
                if len(vocab) >= self.max_vocab:
                    k = self.max_vocab          # shared overflow slot (too many to one-hot)
                    if len(vocab) == self.max_vocab:
                        vocab.append("<other>")
                else:
                    k = len(vocab)
                    vocab.append(t)
                    lookup[t] = k
            out[i] = k
        return out

    def finish(self) -> None:
        self.values = (self._vchunks[0] if len(self._vchunks) == 1 else
                       np.concatenate(self._vchunks) if self._vchunks else np.empty(0))
        self.codes = (self._cchunks[0] if len(self._cchunks) == 1 else
                      np.concatenate(self._cchunks) if self._cchunks
                      else np.empty(0, dtype=np.int32))
        self._vchunks, self._cchunks = [], []
        self._full = None
        if self._errors:
            self.excel_rows = np.concatenate([r for r, _ in self._errors])
            self.excel_texts = [t for _, ts in self._errors for t in ts]
            self._errors = []

    def _all(self, rows) -> bool:
        return all_rows(rows, len(self.codes))

    def _pick(self, a: np.ndarray, rows) -> np.ndarray:
        """``a[rows]`` for a question whose answer does not depend on the rows' order: ``a``
        itself (no gather of every cell) when ``rows`` are all of them."""
        return a if self._all(rows) else a[rows]

    # -- views used by the encoder -----------------------------------------------------------
    def _tally(self, rows) -> np.ndarray:
        """Cells of ``rows`` per code + 2: missing, numbers, then each text (one pass over
        the codes; kept for all rows, which the record asks about more than once)."""
        if self._all(rows) and self._full is not None:
            return self._full
        out = _tally_codes(self._pick(self.codes, rows), len(self.vocab) + 2)
        if self._all(rows):
            self._full = out
        return out

    def counts(self, rows=None) -> tuple[int, int, int]:
        t = self._tally(rows)
        n_miss, n_num = int(t[0]), int(t[1])
        return n_num, int(t[2:].sum()), n_miss

    def inferred_kind(self, rows=None) -> str:
        n_num, n_text, _ = self.counts(rows)
        if n_num == 0 and n_text == 0:
            return "empty"
        return "numeric" if n_num > n_text else "categorical"

    def category_ids(self, categories: Mapping[str, int], rows,
                     ordered: bool | None = None) -> np.ndarray:
        """Per row: index of the cell's category, -1 when missing, -2 when unknown (int32).
        ``ordered``: whether ``rows`` are all of them in order, when the caller knows."""
        if in_order(rows, len(self.codes)) if ordered is None else ordered:
            codes, values = self.codes, self.values
        else:
            codes, values = self.codes[rows], self.values[rows]
        # one lookup per cell, by its code + 2: missing (-1), a number (set below), a text
        vmap = np.array([-1, -2] + [categories.get(v, -2) for v in self.vocab], np.int32)
        if len(self.vocab) > self.max_vocab:
            vmap[self.max_vocab + 2] = -2
        ids = _gather_codes(vmap, codes, 2)
        num = codes == -1
        if num.any():
            u, inv = np.unique(values[num], return_inverse=True)
            umap = np.array([categories.get(canon(x), -2) for x in u], dtype=np.int64)
            ids[num] = umap[inv]
        return ids

    def decimal_marks(self, decimal: str) -> set:
        """The decimal marks the column's number cells show: those seen while typing in a
        decimal-comma file; in a decimal-point file "." when a number has a fraction."""
        if decimal == ",":
            return set(self.marks)
        return {"."} if shows_decimal_point(self.values[self.codes == -1]) else set()

    def unique_numbers(self, rows) -> np.ndarray:
        """The distinct numbers among the cells of ``rows``, sorted."""
        v = self._pick(self.values, rows)
        return np.unique(v[self._pick(self.codes, rows) == -1])

    def first_text(self, rows):
        """(file line, text) of the first text cell of ``rows``, or None."""
        r = np.asarray(np.arange(len(self.codes))[rows])
        hit = np.flatnonzero(self.codes[r] >= 0)
        if not len(hit):
            return None
        i = int(r[hit[0]])
        return int(self.lines[i]), self.vocab[int(self.codes[i])]

    def first_nonfinite(self, rows):
        """File line of the first infinite number of ``rows``, or None."""
        r = np.asarray(np.arange(len(self.codes))[rows])
        hit = np.flatnonzero((self.codes[r] == -1) & ~np.isfinite(self.values[r]))
        return int(self.lines[int(r[hit[0]])]) if len(hit) else None

    def max_magnitude(self, rows) -> float:
        """The largest finite |number| of ``rows`` (0 when none)."""
        v = np.abs(self._pick(self.values, rows))
        v = v[np.isfinite(v)]            # text and missing cells hold NaN
        return float(v.max()) if len(v) else 0.0

    def numeric_fill(self, policy: str, rows):
        """The mean or the most frequent number of ``rows`` (None when one is infinite)."""
        if policy != "impute-mean":
            return most_frequent(self._pick(self.values, rows), self._pick(self.codes, rows))
        v = self._pick(self.values, rows)[self._pick(self.codes, rows) == -1]
        if len(v) and not np.all(np.isfinite(v)):
            return None
        return float(np.mean(v))

    def category_counts(self, rows, decimal: str = ".") -> dict[str, int]:
        """Category label -> number of rows, for the non-missing cells of ``rows`` (numbers
        labelled with the ``decimal`` mark, see :func:`canon`)."""
        tally = self._tally(rows)
        out: dict[str, int] = {}
        for k in np.flatnonzero(tally[2:]).tolist():
            out[self.vocab[k]] = out.get(self.vocab[k], 0) + int(tally[k + 2])
        if tally[1]:
            codes, values = self._pick(self.codes, rows), self._pick(self.values, rows)
            num = values[codes == -1]
            u, cnt = np.unique(num, return_counts=True)
            for x, c in zip(u, cnt):
                key = canon(x, decimal)
                out[key] = out.get(key, 0) + int(c)
        return out


def all_rows(rows, n: int) -> bool:
    """Whether ``rows`` (None, a slice or distinct indices) selects all ``n`` cells, in any
    order: as many distinct indices as there are cells are all of them."""
    if rows is None:
        return True
    if isinstance(rows, slice):
        return rows == slice(None)
    return len(rows) == n


def in_order(rows, n: int) -> bool:
    """Whether ``rows`` (None, a slice or indices) selects all ``n`` cells in their order."""
    if rows is None:
        return True
    if isinstance(rows, slice):
        return rows == slice(None)
    return len(rows) == n and (n == 0 or (int(rows[0]) == 0 and int(rows[-1]) == n - 1
                                          and _counts_up(np.asarray(rows))))


def _read_only(a: np.ndarray, dtype) -> np.ndarray:
    """A read-only contiguous view of ``a`` as ``dtype`` (a copy only when it is not one)."""
    return read_only(np.ascontiguousarray(a, dtype))


def _tally_codes(codes: np.ndarray, size: int) -> np.ndarray:
    """Cells per code + 2 of ``codes`` (-2: missing, -1: a number, k: text k), at least
    ``size`` counts: ``np.bincount(codes + 2, minlength=size)`` in one pass with no
    temporary (numpy's shifts the codes and widens them first)."""
    out, ok = _tally(_read_only(codes, np.int32), np.int64(size))
    return out if ok else np.bincount(codes + 2, minlength=size)


@njit(cache=True, nogil=True)
def _tally(codes, size):
    out = np.zeros(size, np.int64)
    for i in range(codes.shape[0]):
        k = codes[i] + 2
        if k < 0 or k >= size:
            return out, False
        out[k] += 1
    return out, True


def _gather_codes(table: np.ndarray, idx: np.ndarray, offset: int, out=None,
                  per_entry=None) -> np.ndarray:
    """``table[idx + offset]`` (int32), an index past either end taken as that end (numpy's
    take with mode="clip"), into ``out``: one pass with no temporary (numpy's take makes the
    shifted indices first). ``per_entry`` (int64, one per entry of ``table``): how many
    cells took each entry, added to in the same pass."""
    if out is None:
        out = np.empty(len(idx), np.int32)
    _gather(_read_only(table, np.int32), _read_only(idx, np.int32), np.int64(offset), out,
            np.empty(0, np.int64) if per_entry is None else per_entry)
    return out


@njit(cache=True, nogil=True)
def _gather(table, idx, offset, out, per_entry):
    last = table.shape[0] - 1
    if per_entry.shape[0]:
        for i in range(idx.shape[0]):
            k = min(max(idx[i] + offset, 0), last)
            out[i] = table[k]
            per_entry[k] += 1
        return
    for i in range(idx.shape[0]):
        out[i] = table[min(max(idx[i] + offset, 0), last)]


@njit(cache=True, nogil=True)
def _counts_up(rows) -> bool:
    """Whether each of ``rows`` is the one before plus one (no temporary arrays)."""
    for i in range(1, rows.shape[0]):
        if rows[i] != rows[i - 1] + 1:
            return False
    return True


def most_frequent(values: np.ndarray, codes: np.ndarray):
    """The most frequent number of a column's cells (``codes == -1``), the smallest among ties
    (what ``np.unique(v, return_counts=True)`` gives, in one pass over the cells with no
    copy and no sort); None when one is infinite or NaN, or there is none."""
    keys, counts, finite = _count_numbers(values, codes)
    if not finite or not len(keys):
        return None
    return float(keys.view(np.float64)[counts == counts.max()].min())


@njit(cache=True, nogil=True)
def _count_numbers(values, codes):
    """(distinct numbers as their bits, their counts, whether all are finite) of the cells
    with code -1: tallied when they are whole numbers in a short range, else by open
    addressing on the bits (-0.0 counted as 0.0)."""
    lo, hi, n, integral = np.inf, -np.inf, 0, True
    for i in range(values.shape[0]):
        if codes[i] == -1:
            x = values[i]
            if not np.isfinite(x):
                return np.empty(0, np.uint64), np.empty(0, np.int64), False
            lo, hi, n = min(lo, x), max(hi, x), n + 1
            integral = integral and x == np.floor(x)
    # whole numbers in a short range (and exact as offsets): a tally
    if n and integral and hi - lo < 4 * n + 1024 and -2.0**52 < lo and hi < 2.0**52:
        tally = np.zeros(np.int64(hi - lo) + 1, np.int64)
        for i in range(values.shape[0]):
            if codes[i] == -1:
                tally[np.int64(values[i] - lo)] += 1
        at = np.flatnonzero(tally)
        found = np.empty(at.shape[0], np.float64)
        for k in range(at.shape[0]):
            found[k] = at[k] + lo + 0.0           # + 0.0: -0.0 is 0.0
        return found.view(np.uint64), tally[at], True
    mult = np.uint64(0x9E3779B97F4A7C15)
    bits = values.view(np.uint64)
    lg = 10
    keys = np.empty(1 << lg, np.uint64)
    counts = np.zeros(1 << lg, np.int64)
    n_keys = 0
    for i in range(values.shape[0]):
        if codes[i] != -1:
            continue
        x = bits[i] if values[i] != 0.0 else np.uint64(0)
        mask = (1 << lg) - 1
        j = np.int64((x * mult) >> np.uint64(64 - lg))
        while counts[j] != 0 and keys[j] != x:
            j = (j + 1) & mask
        if counts[j] == 0:
            keys[j] = x
            n_keys += 1
        counts[j] += 1
        if 2 * n_keys > (1 << lg):          # at most half full: grow and re-insert
            lg += 1
            mask = (1 << lg) - 1
            old_keys, old_counts = keys, counts
            keys = np.empty(1 << lg, np.uint64)
            counts = np.zeros(1 << lg, np.int64)
            for k in range(old_keys.shape[0]):
                if old_counts[k] != 0:
                    m = np.int64((old_keys[k] * mult) >> np.uint64(64 - lg))
                    while counts[m] != 0:
                        m = (m + 1) & mask
                    keys[m] = old_keys[k]
                    counts[m] = old_counts[k]
    used = counts != 0
    return keys[used], counts[used], True


#: the error values a spreadsheet writes for a formula that failed: missing values to a reader
EXCEL_ERRORS = ("#DIV/0!", "#VALUE!", "#N/A", "#REF!", "#NAME?", "#NUM!", "#NULL!",
                "#GETTING_DATA", "#SPILL!", "#CALC!", "#FIELD!", "#BLOCKED!", "#UNKNOWN!")


@functools.cache
def _excel_set():
    # made on first use, not on import: pa.array of a list imports pandas (about 0.4 s)
    return pa.array(EXCEL_ERRORS, pa.string())


@dataclass
class Seen:
    """What typing a chunk saw besides values: the decimal marks written in its number cells
    (decimal-comma files only) and the positions and texts of its Excel error values."""

    marks: set
    error_rows: np.ndarray
    error_texts: list
    no_values: bool = False     # the values were not written: no cell is a number (all NaN)
    # cells per code + 2 (as _tally_codes counts them), when typing counted them on its way
    counts: np.ndarray | None = None


def type_cells(cells, decimal: str, na: frozenset, fast: bool, intern, out=None,
               fill: bool = True, known: dict | None = None, count: bool = False):
    """(values, codes, :class:`Seen`) of a chunk of cells (a pyarrow string array or a list of
    str); text cells get their codes from ``intern(list of distinct texts) -> codes``. Excel
    error values are missing cells (code -2), reported in ``Seen``. In a decimal-comma file a
    cell written "1.234" is left as text, for the column's number format to read (a thousands
    dot beside "0,5", a decimal point beside "0.25").

    Each cell is typed by its text alone, so the work is chosen by what the chunk holds, never
    changing the result: a numeric chunk is cast whole in C (tried on a sample first: a cast
    that fails costs as much as one that succeeds), a chunk of few distinct texts (categories)
    types only its dictionary, and any other chunk is typed cell by cell, vectorised.
    ``out``: where to write the values (returned as them); ``fill`` False: a chunk of
    categories none of which is a number may leave ``out`` unwritten (``seen.no_values``),
    its values all NaN (writing them is a pass over fresh memory). ``known``: the column's
    texts typed in its earlier chunks and its ``max_vocab`` (see :func:`_type_known`), or
    None; ``count``: a chunk typed by its dictionary gives its cells per code in
    ``Seen.counts``."""
    vals, codes, seen = _type_any(cells, decimal, na, fast, intern, out, fill, known, count)
    if out is not None and vals is not out:
        out[:] = vals
        vals = out
    return vals, codes, seen


def _type_any(cells, decimal, na, fast, intern, out, fill=True, known=None, count=False):
    arr = cells if isinstance(cells, (pa.Array, pa.ChunkedArray)) else pa.array(
        list(cells), pa.string())
    if pa.types.is_floating(arr.type):        # converted while split (TypePlan)
        vals = np.empty(len(arr)) if out is None else out
        _copy_numbers(arr, vals)
        return vals, number_codes(vals), Seen(set(), _NOTHING, [])
    if pa.types.is_dictionary(arr.type):      # encoded while split (rwtool.data._split)
        return _type_dictionary(arr.dictionary, [arr.indices.to_numpy()], decimal, na, intern,
                                out, fill, known, count)
    n = len(arr)
    sample = _sample(arr) if n > 2 * _SAMPLE else None
    # the cast and the dictionary take the tokeniser's chunks as they are (joining a
    # column's strings first cost as much as encoding them)
    if fast and decimal == "." and (sample is None or _casts(sample)):
        try:
            vals = pc.cast(arr, pa.float64(), memory_pool=_pool()).to_numpy()
            return vals, number_codes(vals), Seen(set(), _NOTHING, [])
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    if sample is not None and len(pc.unique(sample)) <= _SAMPLE // 4:
        enc = pc.dictionary_encode(arr, memory_pool=_pool())
        # a chunked column's chunks share one dictionary, in the order of first occurrence
        chunks = enc.chunks if isinstance(enc, pa.ChunkedArray) else [enc]
        return _type_dictionary(chunks[-1].dictionary,
                                [c.indices.to_numpy(zero_copy_only=False) for c in chunks],
                                decimal, na, intern, out, fill, known, count)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return _type_cells(arr, decimal, na, intern)


def _type_dictionary(dictionary, parts, decimal, na, intern, out=None, fill=True,
                     known=None, count=False):
    """:func:`type_cells` of the cells ``dictionary[idx]``, ``idx`` given in ``parts`` (index
    arrays, one after the other): each distinct text typed once (the dictionary in the order
    of first occurrence, so the texts are interned in that order), or looked up in ``known``
    (:func:`_type_known`). The values and codes are written part by part (no joined index
    array); the values only gathered when a dictionary entry is a number (else every value
    is NaN: written only when ``fill``). With ``count``, the gather also counts each entry's
    cells, giving the cells per code + 2 (``Seen.counts``)."""
    typed = None if known is None else _type_known(dictionary, decimal, na, intern, known)
    dvals, dcodes, dseen = typed or _type_cells(dictionary, decimal, na, intern)
    n = sum(len(ix) for ix in parts)
    vals = np.empty(n) if out is None else out
    codes = np.empty(n, np.int32)
    numbers = bool((dcodes == -1).any())
    if not numbers and fill:
        vals.fill(np.nan)
    at = 0
    per_entry = np.zeros(len(dcodes) if count else 0, np.int64)    # cells of each entry
    for ix in parts:
        _gather_codes(dcodes, ix, 0, codes[at:at + len(ix)], per_entry if count else None)
        if numbers:
            np.take(dvals, ix, out=vals[at:at + len(ix)], mode="clip")
        at += len(ix)
    seen = Seen(dseen.marks, _NOTHING, [], not numbers and not fill,
                np.bincount(dcodes + 2, per_entry).astype(np.int64) if len(per_entry)
                else None)
    if len(dseen.error_rows):
        idx = np.concatenate(parts) if len(parts) != 1 else parts[0]
        seen.error_rows = np.flatnonzero(np.isin(idx, dseen.error_rows))
        text_of = dict(zip(dseen.error_rows.tolist(), dseen.error_texts))
        seen.error_texts = [text_of[k] for k in idx[seen.error_rows].tolist()]
    return vals, codes, seen


_KNOWN_MAX = 1024         # texts of a column remembered by _type_known


class KnownTexts:
    """The texts of each column typed in its earlier blocks (see :func:`_type_known`), for
    :func:`type_block`: ``column(j)`` is column j's (text -> value, code, Excel error's text
    or None); ``max_vocab`` is the columns' (a code at it is the shared overflow slot)."""

    def __init__(self, max_vocab: int):
        self.max_vocab, self._of = max_vocab, {}

    def column(self, j: int) -> tuple[dict, int]:
        return self._of.setdefault(j, {}), self.max_vocab


def _type_known(dictionary, decimal, na, intern, known):
    """:func:`_type_cells` of ``dictionary`` (distinct texts) from ``known`` (a column's
    texts typed in its earlier blocks and its ``max_vocab``: :meth:`KnownTexts.column`),
    typing only the texts not in it (in their order, so that new texts are interned in the
    order of first occurrence) and adding them: a block's dictionary of categories is typed
    by a lookup instead of a dozen pyarrow calls. Each cell is typed by its text alone and a
    text interned before gets its code again, so the result is :func:`_type_cells`'; a text
    past the column's interned ones (it shares the overflow slot, and counts again each time
    it is met) is never remembered. None (type the whole dictionary) in a decimal-comma
    file (its decimal marks are of the whole chunk), with a null entry, or when the column
    has more than ``_KNOWN_MAX`` texts."""
    known, max_vocab = known
    if decimal != "." or dictionary.null_count:
        return None
    texts = dictionary.to_pylist()
    new = [i for i, t in enumerate(texts) if t not in known]
    if len(known) + len(new) > _KNOWN_MAX:
        return None
    fresh = {}
    if new:
        sub = dictionary.take(pa.array(new)) if len(new) < len(texts) else dictionary
        vals, codes, seen = _type_cells(sub, decimal, na, intern)
        err = dict(zip(seen.error_rows.tolist(), seen.error_texts))
        for i, t, v, c in zip(range(len(new)), (texts[i] for i in new), vals.tolist(),
                              codes.tolist()):
            fresh[t] = (v, c, err.get(i))
            if c < max_vocab:
                known[t] = fresh[t]
    entries = [fresh[t] if t in fresh else known[t] for t in texts]
    vals = np.array([e[0] for e in entries], np.float64)
    codes = np.array([e[1] for e in entries], np.int32)
    rows = [i for i, e in enumerate(entries) if e[2] is not None]
    seen = Seen(set(), np.array(rows, np.int64) if rows else _NOTHING,
                [entries[i][2] for i in rows])
    return vals, codes, seen


def _sample(arr):
    """_SAMPLE cells spread evenly over ``arr`` (text often starts further down a column),
    taken chunk by chunk from a chunked array (pyarrow's take of a chunked array joins its
    chunks first: a copy of the column for 256 cells)."""
    at = np.linspace(0, len(arr) - 1, _SAMPLE).astype(np.int64)
    if not isinstance(arr, pa.ChunkedArray):
        return arr.take(pa.array(at))
    parts, start = [], 0
    for ch in arr.chunks:
        sel = at[(at >= start) & (at < start + len(ch))] - start
        if len(sel):
            parts.append(ch.take(pa.array(sel)))
        start += len(ch)
    return pa.concat_arrays(parts)


def _casts(arr) -> bool:
    try:
        pc.cast(arr, pa.float64())
        return True
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False


def _type_cells(arr, decimal, na, intern):
    """(values, codes, :class:`Seen`) of ``arr`` cell by cell: trimmed, missing, a number, an
    Excel error value or text."""
    n = len(arr)
    t = pc.utf8_trim_whitespace(arr)
    tnum = pc.replace_substring(t, ",", ".") if decimal == "," else t
    is_na = pc.is_in(t, value_set=pa.array(sorted(na), pa.string()))
    is_num = pc.and_not(pc.match_substring_regex(tnum, _NUMBER), is_na)
    marks = set()
    if decimal == ",":
        # "1.234": a thousands dot or a decimal point, decided per column
        is_num = pc.and_not(is_num, pc.match_substring_regex(t, _DOT_GROUPS.pattern))
        for m in (",", "."):
            if pc.any(pc.and_(is_num, pc.match_substring(t, m))).as_py():
                marks.add(m)
    num = is_num.to_numpy(zero_copy_only=False)
    vals = np.full(n, np.nan)
    codes = np.full(n, -2, dtype=np.int32)
    if num.any():
        v = pc.cast(pc.filter(tnum, is_num), pa.float64()).to_numpy(zero_copy_only=False)
        vals[num] = v
        codes[num] = np.where(np.isnan(v), -2, -1)
    text = ~num & ~is_na.to_numpy(zero_copy_only=False)
    err_rows, err_texts = _NOTHING, []
    if text.any():
        err = text & pc.is_in(t, value_set=_excel_set()).to_numpy(zero_copy_only=False)
        if err.any():
            err_rows = np.flatnonzero(err)
            err_texts = pc.take(t, pa.array(err_rows)).to_pylist()
            text &= ~err
    if text.any():
        enc = pc.dictionary_encode(pc.filter(t, pa.array(text)))
        gmap = intern(enc.dictionary.to_pylist())
        codes[text] = gmap[enc.indices.to_numpy(zero_copy_only=False)]
    return vals, codes, Seen(marks, err_rows, err_texts)


def shows_decimal_point(x: np.ndarray, axis=None, skip=None):
    """Whether numbers read in a decimal-point file show that their dot is a decimal point: a
    fraction that is not three digits after a group of one to three ("0.25", "2.3456"; not
    "1.234", which may be a thousands dot, nor 2.5, which may have been written "2.500").
    NaN and infinities show nothing; ``axis=1`` answers for each row of a matrix (one pass,
    stopping at a row's first such number: no temporary arrays over a block); ``skip`` (a
    bool per row, with ``axis=1``): rows not read (they may be unwritten), showing nothing."""
    m = np.ascontiguousarray(x, np.float64)
    shows = _shows_point(m.reshape(1, -1) if axis is None else m,
                         np.empty(0, np.bool_) if skip is None else skip)
    return bool(shows[0]) if axis is None else shows


@njit(cache=True, nogil=True)
def _shows_point(x, skip):
    out = np.zeros(x.shape[0], np.bool_)
    for r in range(x.shape[0]):
        if skip.shape[0] and skip[r]:
            continue
        for i in range(x.shape[1]):
            v = x[r, i]
            if not np.isfinite(v) or v == np.floor(v):
                continue
            if _shows(abs(v)):
                out[r] = True
                break
    return out


@njit(cache=True, nogil=True, inline="always")
def _shows(a):
    """Whether the magnitude ``a`` of a finite number that is not whole shows a decimal
    point (see :func:`shows_decimal_point`)."""
    if 1.0 <= a < 1000.0:
        k = a * 1000.0
        if abs(k - np.floor(k + 0.5)) <= 1e-9 * k:      # three digits: maybe grouped
            return False
    return True


def excel_note(name: str, n: int, first_line: int, texts) -> str:
    """The note on a column's Excel error values, read as missing values."""
    kinds = ", ".join(sorted(set(texts)))
    return (f"column {name!r}: {n} Excel error value(s) ({kinds}; first on line {first_line}) "
            f"read as missing values")


def positions(names: Sequence[str], wanted: Sequence[str]) -> np.ndarray:
    """The position in ``names`` of each of ``wanted`` (-1 when absent): by a walk when they
    come in the names' order, else by a hash lookup in C (a wide file's names are many, and a
    dict of them costs 60 bytes per column)."""
    if not len(wanted):
        return np.empty(0, np.int64)
    (root, pos), (wroot, wpos) = origin(names), origin(wanted)
    if root is not None and root is wroot:      # selected from the same names: known
        wpos = np.arange(len(wanted)) if wpos is None else wpos
        if pos is None:
            return wpos.copy()
        back = np.full(len(root), -1, np.int64)
        back[pos] = np.arange(len(pos))
        return back[wpos]
    if root is None and 4 * len(wanted) >= len(names):
        found = _in_order(names, wanted)
        if found is not None:
            return found
    if root is not None and wroot is None and len(wanted) <= 32:     # a few names asked
        return np.array([names.find(w) for w in wanted], np.int64)
    idx = pc.index_in(as_arrow(wanted), value_set=as_arrow(names))
    return idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _in_order(names: list[str], wanted: Sequence[str]) -> np.ndarray | None:
    """The positions of ``wanted`` in ``names`` when they occur there in that order (the
    features of a file, a record replayed on the file it was learned on), by one walk of
    both lists; None otherwise. No table of the names: a hash table of a wide file's names
    costs tens of MB and more time than the walk."""
    out = array("q")
    walk = enumerate(names)
    for w in wanted:
        for j, n in walk:
            if n == w:
                out.append(j)
                break
        else:
            return None
    return np.frombuffer(out, np.int64) if len(out) else np.empty(0, np.int64)


class NameLookup:
    """Name -> column position for a table of ``names``: a scan of the list for the first few
    names asked (the target, a column with a missing cell), a dict once more are asked, so a
    wide table builds none unless it needs one."""

    names: list[str]
    _index = None
    _asked = 0

    def position(self, name: str) -> int:
        if isinstance(self.names, Names):
            j = self.names.find(name)
            if j < 0:
                raise KeyError(name)
            return j
        if self._index is None:
            self._asked += 1
            if self._asked <= 32 or len(self.names) <= 1024:
                try:
                    return self.names.index(name)
                except ValueError:
                    raise KeyError(name) from None
            self._index = {n: j for j, n in enumerate(self.names)}
        return self._index[name]


@dataclass
class Table(NameLookup):
    """A parsed file. The columns that hold text (or an Excel error value) are
    :class:`Column` objects in ``columns``; every other column read is a row of ``numbers``
    (float64, NaN for a missing cell; ``number_pos[j]`` is column j's row, -1 when it is not
    one), so a wide file costs 8 bytes per cell and no Python object per column.
    :meth:`col` answers for either kind with a :class:`Column`."""

    path: str | None
    dialect: Dialect
    names: list[str]
    lines: np.ndarray                   # 1-based file line of each record
    columns: dict[int, Column]          # the columns that hold text
    head: list[list[str]]
    notes: list[str] = field(default_factory=list)
    numbers: np.ndarray | None = None   # (number columns, rows)
    number_pos: np.ndarray | None = None
    spellings = None     # name -> number_spellings of the file (None: rows typed in a form)

    def __post_init__(self):
        for c in self.columns.values():
            if getattr(c, "lines", None) is None:
                c.lines = self.lines
        if self.number_pos is None:
            self.number_pos = np.full(len(self.names), -1, np.int64)
            self.numbers = np.empty((0, len(self.lines)))

    @property
    def n_rows(self) -> int:
        return len(self.lines)

    def col(self, name: str) -> Column:
        return self.column_at(self.position(name))

    def column_at(self, j: int) -> Column:
        c = self.columns.get(j)
        if c is not None:
            return c
        p = int(self.number_pos[j])
        if p < 0:
            raise KeyError(self.names[j])         # a column that was not read
        return Column.of_numbers(self.names[j], j, self.numbers[p], self.lines)

    def number_rows(self, names) -> np.ndarray:
        """The row of ``numbers`` holding each named column, -1 for a text column."""
        return self.number_pos[positions(self.names, names)] if len(names) else \
            np.empty(0, np.int64)

    def _number_cells(self, pos, rows) -> np.ndarray:
        """The cells ``rows`` of the number-matrix rows ``pos``, gathered in one copy."""
        if len(pos) and int(pos[-1]) - int(pos[0]) == len(pos) - 1 and bool(
                np.all(pos[1:] > pos[:-1])):
            pos = slice(int(pos[0]), int(pos[0]) + len(pos))   # a run: a view, no gather
        if all_rows(rows, self.n_rows):
            return self.numbers[pos]
        if isinstance(rows, slice):
            return self.numbers[pos, rows]
        return self.numbers[pos][:, rows] if isinstance(pos, slice) else \
            self.numbers[np.ix_(pos, rows)]

    def number_stats(self, names, fit_rows, kind_rows, policy):
        """For the record fitting, per named column: (whether it holds numbers only, its
        numbers among ``fit_rows``, among ``kind_rows``, the mean fill when ``policy`` is
        "impute-mean" and one is computed here: NaN where the column must be asked; None
        unless the policy imputes)."""
        pos = self.number_rows(names)
        dense = pos >= 0
        # every column of numbers (a wide file's usual case): the counts are the arrays made
        # here, with no copy of the positions or per-column zeros (8 bytes a column each)
        whole = bool(dense.all())
        fill = np.full(len(names), np.nan) if policy.startswith("impute") else None
        if not dense.any():
            none = np.zeros(len(names), np.int64)
            return dense, none, none, fill

        def spread(x, zero):
            if whole:
                return x
            out = np.full(len(names), zero, x.dtype)
            out[dense] = x
            return out

        p = pos if whole else pos[dense]
        mean = policy == "impute-mean"
        if mean or not all_rows(fit_rows, self.n_rows):
            M = self._number_cells(p, fit_rows)    # gathered once for counts and means
            n_fit = spread(np.count_nonzero(~np.isnan(M), axis=1), 0)
        else:                                       # counted in place: no copy
            M = None
            n_fit = spread(_count_present(self.numbers, p), 0)
        n_kind = n_fit if kind_rows is fit_rows else spread(np.count_nonzero(
            ~np.isnan(self._number_cells(p, kind_rows)), axis=1), 0)
        if mean and M.shape[1]:
            # as np.mean of the column gives it (the same pairwise sum per row); NaN when
            # a cell is missing or infinite: the caller asks the column
            with np.errstate(invalid="ignore", over="ignore"):
                m = M.mean(axis=1)
            fill = spread(np.where(np.isfinite(m), m, np.nan), np.nan)
        return dense, n_fit, n_kind, fill


@njit(cache=True, nogil=True)
def _count_present(numbers, pos):
    """The cells that are not NaN in each row ``pos`` of ``numbers``."""
    out = np.zeros(pos.shape[0], np.int64)
    for k in range(pos.shape[0]):
        row = numbers[pos[k]]
        n = 0
        for i in range(row.shape[0]):
            n += not np.isnan(row[i])
        out[k] = n
    return out


def number_codes(values: np.ndarray) -> np.ndarray:
    """The cell codes of numbers and missing cells (NaN): -1 and -2 (see :class:`Column`)."""
    return np.subtract(-1, np.isnan(values), dtype=np.int32)


def make_names(header: list[str] | None, n: int, path) -> Sequence[str]:
    """The column names of a header (stripped; an empty one named by its position), or
    col1, col2, ... without one: a list, or :class:`Names` past ``_WIDE`` columns."""
    if header is None:
        names = [f"col{j + 1}" for j in range(n)]
        return Names.of(names) if n > _WIDE else names
    names = []
    for j, h in enumerate(header):
        h = h.strip()
        names.append(h if h else f"col{j + 1}")
    if len(names) > _WIDE and _distinct_hashes(names):
        return Names.of(names)      # no two names alike: a wide header needs no dict of them
    seen: dict[str, int] = {}
    for j, h in enumerate(names):
        if h in seen:
            raise DuplicateColumnError(
                f"duplicate column name {h!r} (fields {seen[h] + 1} and {j + 1} of the header)",
                file=path, row=1, column=h, hint="rename one of the columns")
        seen[h] = j
    return Names.of(names) if len(names) > _WIDE else names


def _distinct_hashes(names: list[str]) -> bool:
    """Whether the strings' hashes are all different (so are the strings), in 8 bytes per
    name where a set of them takes about 50."""
    h = np.fromiter(map(hash, names), np.int64, len(names))
    h.sort()
    return not bool(np.any(h[1:] == h[:-1]))


# ============================================================================ blocks

@dataclass
class Block:
    """The complete records of one block of the file: ``lines`` (1-based file line of each
    record), ``cells`` (column index -> pyarrow string array, only the columns asked for) and
    ``head`` (the first records as text, when asked). A reader that has typed ``cells``
    drops them (``block.cells = {}``): :func:`iter_blocks` holds none while it yields."""

    names: list[str]
    lines: np.ndarray
    cells: Mapping[int, pa.ChunkedArray]      # a dict, or ColumnCells for a wide block
    head: list[list[str]]
    nbytes: int = 0                           # bytes of the file these records took


class _Decoder:
    """Bytes of a file in another encoding to UTF-8 bytes (UTF-8 files are read as they are,
    see :func:`_next_bytes`, and checked by :func:`_check_utf8`)."""

    def __init__(self, encoding: str):
        self.encoding = codecs.lookup(encoding).name
        self.utf8 = self.encoding in ("utf-8", "utf-8-sig")
        self.dec = None if self.utf8 else codecs.getincrementaldecoder(encoding)()
        self.first = True

    def __call__(self, raw: bytes, final: bool) -> bytes:
        """UTF-8 bytes of the next block of a file in another encoding."""
        text = self.dec.decode(raw, final)
        if text.startswith("\ufeff"):
            text = text[1:]
        return text.encode("utf-8")


def _check_utf8(buf: np.ndarray, consumed: int, path, line_base: int, encoding: str):
    part = buf[:consumed]
    if not len(part) or int(part.max()) < 0x80:
        return
    try:
        part.tobytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        line = line_base + int(np.count_nonzero(part[:exc.start] == 10))
        raise _BadUTF8(line, exc.reason) from None


class _BadUTF8(Exception):
    def __init__(self, line, reason):
        super().__init__(reason)
        self.line, self.reason = line, reason

    def error(self, encoding: str, src, fix=None) -> EncodingError:
        """The user-facing error for this invalid byte; by default the fix names the legacy
        encoding whose decoding of the file looks most like text."""
        if fix is None:
            enc = guess_legacy(_non_ascii_lines(src), lambda e: _decodes(src, e))[0]
            fix = (f"pass the file's encoding: its bytes read best as {encoding_name(enc)} "
                   f"({{0}})", [("encoding", enc)])
        return EncodingError(f"the bytes are not valid {encoding} ({self.reason})",
                             file=src.name, row=self.line, fix=fix)


def iter_blocks(source, dialect: Dialect, *, usecols=None, nrows=None, head_rows: int = 0,
                block_bytes: int | None = None, names=None, like=None,
                plan: "TypePlan | None" = None) -> Iterator[Block]:
    """The file's records, block by block, checked for structure (see the module docstring).

    ``usecols``: column names to type (None: all; a callable gets the names and returns
    them); ``nrows``: stop after that many records;
    ``names``: the column names to use (one per field; they replace the header line when the
    file has one, and col1, col2, ... when it has none); ``like``: names the file's are
    expected to equal (a record's), used in their place when they do (a wide file's names
    are then held once); ``plan``: a :class:`TypePlan` to learn from the first block (read
    small, as text) and to convert the columns of the others with while they are split
    (their cells are then float64 arrays).
    Raises :class:`RaggedRowError`, :class:`QuoteError`, :class:`EmptyFileError`,
    :class:`DuplicateColumnError`; an invalid UTF-8 byte raises the internal ``_BadUTF8``
    (:func:`parse` and the streaming reader turn it into a re-read or an EncodingError).
    """
    src = open_source(source, None, nrows)
    path = src.name
    block_bytes = block_bytes or _BLOCK_BYTES
    given = None if names is None else [str(n) for n in names]
    dec = _Decoder(dialect.encoding)
    delim, quote = dialect.delimiter, dialect.quotechar
    names = None
    ncols = 0
    keep: list[int] = []
    carry = np.empty(0, np.uint8)
    spare = None                # the last block's array, to read the next one into
    line_base = 1
    n_read = 0
    head: list[list[str]] = []
    first = True
    with src.open() as fh:
        while True:
            learn = plan is not None and plan.types is None
            buf, final, spare = _next_bytes(fh, dec, carry, min(_FIRST_BLOCK, block_bytes)
                                            if learn and first else block_bytes, spare)
            first = False
            if line_base == 1 and dialect.skip_lines:     # the lines before the header
                nl = np.flatnonzero(buf == 10)[:dialect.skip_lines]
                cut = int(nl[-1]) + 1 if len(nl) else len(buf)
                buf, line_base = buf[cut:], 1 + len(nl)
            if final and not len(buf):
                break
            plain = None if nrows is not None else _plain_block(
                buf, final, dialect, names, given, usecols, head_rows - len(head), line_base,
                path, dec.utf8, None if learn else plan)
            if plain is not None:
                block, consumed, n_lines = plain
                if names is None:
                    names = block.names = like if block.names == like else block.names
                    ncols = len(names)
                    keep = column_positions(names, _usecols(usecols, names))
                    unnamed_last = (dialect.header and given is None
                                    and names[-1] == f"col{ncols}")
                head.extend(block.head)
                n_read += len(block.lines)
                if learn:
                    plan.learn(block.cells, keep)
                out = Block(names, block.lines, block.cells, head if block.head else [],
                            consumed)
                del block, plain
                yield out       # held only by the caller, who may drop its cells once typed
                del out
                line_base += n_lines
                carry = buf[consumed:].copy()
                del buf
                if final:
                    break
                continue
            sc = scan_records(buf, delim, quote, final)
            if sc["open_quote"] >= 0:
                line = line_base + sc["open_quote"]
                raise QuoteError(
                    "a quote opens here and is never closed: it would swallow the rest of the "
                    "file into one cell", file=path, row=line,
                    hint="close the quote, or remove the stray quote character")
            if dec.utf8:
                _check_utf8(buf, sc["consumed"], path, line_base, dialect.encoding)
            starts, ends, flags = sc["starts"], sc["ends"], sc["flags"]
            nf, rel = sc["nfields"], sc["lines"]
            nonblank = (flags & BLANK) == 0
            if not nonblank.all():
                starts, ends, flags, nf, rel = (a[nonblank] for a in (starts, ends, flags, nf,
                                                                       rel))
            lines = rel + line_base
            if names is None and len(starts):
                ncols = int(nf[0])
                if _header_is(buf[starts[0]:ends[0]], like, dialect, given, ncols):
                    names, keep = like, column_positions(like, _usecols(usecols, like))
                else:
                    rec = buf[starts[0]:ends[0]]
                    names = (_plain_header(rec, dialect, ncols)
                             if given is None and dialect.header and ncols > _WIDE else None)
                    if names is None:
                        names, keep = _names(_split_one(rec, dialect), ncols, dialect, given,
                                             usecols, path, int(lines[0]))
                    else:
                        keep = column_positions(names, _usecols(usecols, names))
                    names = like if names == like else names
                    del rec
                unnamed_last = dialect.header and given is None and names[-1] == f"col{ncols}"
                if dialect.header:
                    starts, ends, flags, nf, lines = (a[1:] for a in (starts, ends, flags, nf,
                                                                       lines))
            if nrows is not None and n_read + len(starts) > nrows:
                m = nrows - n_read
                starts, ends, flags, nf, lines = (a[:m] for a in (starts, ends, flags, nf,
                                                                   lines))
            if len(starts):
                ends, trimmed = _check_fields(buf, starts, ends, flags, nf, lines, ncols,
                                              dialect, path, unnamed_last)
                cells, hd = _tokenise(buf, starts, ends, flags, sc["max_len"], ncols, keep,
                                      dialect, path, head_rows - len(head), trimmed,
                                      None if learn else plan)
                head.extend(hd)
                n_read += len(starts)
                if learn:
                    plan.learn(cells, keep)
                out = Block(names, lines, cells, head if hd else [], int(sc["consumed"]))
                del cells
                yield out
                del out
            if nrows is not None and n_read >= nrows:
                break
            line_base += sc["n_lines"]
            carry = buf[sc["consumed"]:].copy()      # a copy: the block's bytes can go now
            del buf, sc, starts, ends, flags, nf, rel, lines
            if final:
                break
    if names is None:
        raise EmptyFileError("the file holds no data (only blank lines)", file=path)
    if n_read == 0:
        yield Block(names, np.empty(0, np.int64), {}, [])


def _header_is(rec: np.ndarray, like, dialect: Dialect, given, ncols: int) -> bool:
    """Whether the header line ``rec`` (UTF-8 bytes) is the names ``like`` written plainly
    (no quotes, spaces or mark), so they are taken without splitting it into new strings."""
    if like is None or given is not None or not dialect.header or len(like) != ncols \
            or len(like) <= _WIDE or not _distinct_hashes(like):
        return False
    if isinstance(like, Names):
        return like.written_as(rec, dialect.delimiter)
    return rec.tobytes() == dialect.delimiter.join(like).encode("utf-8")


# bytes a header needs the general split for: ASCII spaces (a name is stripped) and non-ASCII
# bytes (Unicode spaces); the quote character is added per dialect
_NOT_PLAIN = np.zeros(256, bool)
_NOT_PLAIN[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
_NOT_PLAIN[128:] = True


def _plain_header(rec: np.ndarray, dialect: Dialect, ncols: int) -> "Names | None":
    """The names of a wide header line ``rec`` (UTF-8 bytes) made straight from its bytes,
    when they are plain ASCII (no quote, no space to strip, none empty, no two alike): the
    general split makes a Python string per name first, about 60 bytes each (30 MB for
    500,000 names, then kept in pieces by the allocator). None: ask :func:`make_names`."""
    if len(rec) >= 3 and bytes(rec[:3]) == codecs.BOM_UTF8:
        rec = rec[3:]
    odd = _NOT_PLAIN.copy()
    odd[ord(dialect.quotechar)] = True
    delim = ord(dialect.delimiter)
    if odd[delim] or odd[rec].any():
        return None
    d = np.flatnonzero(rec == delim)
    if len(d) != ncols - 1 or len(rec) - len(d) >= 1 << 31:
        return None
    # name j starts after j delimiters: at d[j - 1] + 1 in the line, d[j - 1] + 1 - j without them
    offsets = np.empty(ncols + 1, np.int32)
    offsets[0] = 0
    offsets[1:-1] = d + 1 - np.arange(1, ncols)
    offsets[-1] = len(rec) - len(d)
    del d
    if np.any(offsets[1:] == offsets[:-1]):     # an empty name is named by its position
        return None
    data = rec[rec != delim]
    names = Names(pa.StringArray.from_buffers(ncols, pa.py_buffer(offsets),
                                              pa.py_buffer(data)))
    return names if _distinct_hashes(names) else None


def _names(header_cells, ncols, dialect, given, usecols, path, line):
    """(column names, indices of the columns to type) from the first record."""
    if header_cells and header_cells[0].startswith("\ufeff"):
        header_cells[0] = header_cells[0][1:]
    names = make_names(header_cells if dialect.header else None, ncols, path)
    if given is not None:
        if len(given) != ncols:
            raise HeaderError(f"{len(given)} column name(s) given for a file of {ncols} "
                              f"column(s)", file=path, row=line,
                              hint="give one name per column")
        names = make_names(given, ncols, path)
    return names, column_positions(names, _usecols(usecols, names))


def _usecols(usecols, names):
    return usecols(names) if callable(usecols) else usecols


def column_positions(names, usecols) -> np.ndarray:
    """Sorted positions of the ``usecols`` names present in ``names`` (all when None); by a
    lookup table, since a wide file's names are many (a list search per name is quadratic)."""
    if usecols is None:
        return np.arange(len(names))
    p = positions(names, usecols if isinstance(usecols, Names) else
                  [c for c in usecols if isinstance(c, str)])
    p = p[p >= 0]
    if len(p) > 1 and not np.all(p[1:] > p[:-1]):      # mostly sorted and distinct already
        p = np.unique(p)
    return p


def _next_bytes(fh, dec, carry, block_bytes, spare=None):
    """(the carried bytes followed by the next block as UTF-8, whether the file ended, the
    array they are in). UTF-8 files are read straight into the block's array: no second copy
    of each block; into ``spare`` (the previous block's array) when it is large enough and
    pyarrow has let go of every buffer handed to it (nothing made from the previous block
    refers to it), so a file of many blocks costs no fresh memory per block (a fresh page
    costs more than the read: its zeroing, by the kernel)."""
    if dec.utf8:
        need = len(carry) + block_bytes
        if spare is not None and len(spare) >= need and held() == 0:
            buf = spare
        else:
            buf = np.empty(need + (1 << 16), np.uint8)      # room for a longer carry
        spare = buf
        buf = buf[:need]
        buf[:len(carry)] = carry
        n = fh.readinto(memoryview(buf)[len(carry):])
        if dec.first and dec.encoding == "utf-8-sig" and n >= 3 and \
                bytes(buf[:3]) == codecs.BOM_UTF8:
            buf = buf[3:]
        dec.first = False
        return buf[:len(buf) - (block_bytes - n)], n == 0, spare
    raw = fh.read(block_bytes)
    data = np.frombuffer(dec(raw, not raw), np.uint8)
    return (np.concatenate([carry, data]) if len(carry) else data), not raw, None


def _split_one(rec: np.ndarray, dialect: Dialect) -> list[str]:
    """The fields of one record (the header line), with the tokeniser's quoting rules."""
    text = rec.tobytes().decode("utf-8", errors="replace")
    try:
        return next(csv.reader([text], delimiter=dialect.delimiter,
                               quotechar=dialect.quotechar, strict=False))
    except (csv.Error, StopIteration):        # a field over csv's size limit: ask pyarrow
        opts = pacsv.ParseOptions(delimiter=dialect.delimiter, quote_char=dialect.quotechar,
                                  newlines_in_values=True)
        reader = pacsv.open_csv(arrow_input(rec.tobytes() + b"\n"),
                                read_options=pacsv.ReadOptions(
                                    block_size=max(1 << 20, 2 * len(rec) + 2)),
                                parse_options=opts)
        return list(reader.schema.names)


def _check_fields(buf, starts, ends, flags, nf, lines, ncols, dialect, path,
                  unnamed_last=False):
    bad = nf != ncols
    if bad.any():
        trailing = (nf == ncols + 1) & ((flags & TRAILING_EMPTY) != 0)
        if (bad & ~trailing).any():
            i = int(np.flatnonzero(bad & ~trailing)[0])
            if unnamed_last and nf[i] == ncols - 1:
                raise RaggedRowError(
                    f"the header line ends with a delimiter, which makes an unnamed column "
                    f"{ncols}, but this row has {int(nf[i])} field(s)", file=path,
                    row=int(lines[i]), hint="remove the delimiter at the end of the header "
                                            "line")
            raise RaggedRowError(
                f"this row has {int(nf[i])} field(s) but the "
                f"{'header' if dialect.header else 'first row'} has {ncols}", file=path,
                row=int(lines[i]), hint=f"check the delimiter (read as {dialect.delimiter!r}) "
                                        f"and that text holding it is quoted")
        # a trailing delimiter is an export habit, not a new field
        ends = ends.copy()
        ends[bad] = trim_trailing_field(buf, starts[bad], ends[bad], dialect.delimiter)
    return ends, bool(bad.any())


def _tokenise(buf, starts, ends, flags, max_len, ncols, keep, dialect, path, head_rows,
              trimmed, plan=None):
    if ncols > _WIDE:
        return _tokenise_wide(buf, starts, ends, ncols, keep, dialect, path, head_rows)
    contiguous = not trimmed and _only_line_breaks_between(buf, starts, ends)
    if contiguous:
        data = buf[starts[0]:ends[-1]]
    else:
        data = compact_records(buf, starts, ends)
    try:
        table, pos = _pyarrow_cells(data, ncols, keep, dialect, head_rows,
                                    int(max(1 << 20, 2 * max_len + 16)),
                                    bool(np.any(flags & NEWLINE_IN_QUOTES)), plan, _pool())
    except pa.ArrowInvalid as exc:
        raise DataError(f"the CSV structure is broken ({' '.join(str(exc).split())[:200]})",
                        file=path, row=None) from None
    if table.num_rows != len(starts):
        raise DataError(f"the CSV structure is broken ({table.num_rows} records tokenised, "
                        f"{len(starts)} expected)", file=path,
                        hint="check the quotes and line breaks")
    return _cells_and_head(table, pos, ncols, keep, head_rows)


def _tokenise_wide(buf, starts, ends, ncols, keep, dialect, path, head_rows):
    """The cells of a wide block, split by :func:`split_columns` straight into the file's
    columns, one after the other: pyarrow.csv holds about 9 KB per column of a block (5.8 GB
    for a 6 MB file of 500,000 columns), and folding the records into narrow lines for it
    still took about 5 times the block (the folded copy, its table, the cells gathered back
    by an index per cell)."""
    n = len(starts)
    want = np.arange(ncols) if head_rows > 0 else np.asarray(keep, np.int64)   # sorted
    split = split_columns(buf, starts, ends, dialect.delimiter, dialect.quotechar, ncols, want)
    if split is None:
        raise DataError(f"the CSV structure is broken (a record of {n} does not hold "
                        f"{ncols} fields)", file=path, hint="check the quotes and line breaks")
    offsets, data = split
    kind = pa.string() if offsets.dtype == np.int32 else pa.large_string()
    flat = pa.Array.from_buffers(kind, len(offsets) - 1,
                                 [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    del split, offsets, data
    cells = ColumnCells(flat, n, want, keep)
    head = []
    if head_rows > 0:
        rows = min(head_rows, n)
        at = np.arange(ncols, dtype=np.int64) * n      # every column is wanted for a head
        head = [flat.take(pa.array(at + i)).to_pylist() for i in range(rows)]
    return cells, head


class ColumnCells(abc.Mapping):
    """Column index -> its cells in a block, as slices of one array holding the cells of the
    columns ``cols`` (sorted) one column after the other (``n`` each); only the ``keep``
    columns (sorted, among ``cols``) are keys. ``flat`` gives whole runs of columns to a cast
    without a slice per column. A column is found by a binary search in those arrays (the
    caller's own, not copied): a wide block must not cost an object, or an index array, per
    column."""

    def __init__(self, flat, n: int, cols, keep):
        self.flat, self.n = flat, n
        self._cols = np.asarray(cols, np.int64)
        self._keys = np.asarray(keep, np.int64)

    def _at(self, j) -> int:
        for a in (self._keys, self._cols):
            p = int(np.searchsorted(a, j))
            if p >= len(a) or a[p] != j:
                return -1
        return p

    def __getitem__(self, j):
        p = self._at(j)
        if p < 0:
            raise KeyError(j)
        return self.flat.slice(p * self.n, self.n)

    def __iter__(self):
        return iter(self._keys.tolist())

    def __len__(self):
        return len(self._keys)

    def __contains__(self, j):
        return self._at(j) >= 0

    def columns(self) -> np.ndarray:
        """The keys, sorted, as an array (no Python int per column)."""
        return self._keys

    def run(self, js):
        """The cells of columns ``js`` one after the other, or None unless they are stored
        so (keys at consecutive positions)."""
        js = np.asarray(js, np.int64)
        if not len(js):
            return None
        p, q = self._at(int(js[0])), int(np.searchsorted(self._keys, js[0]))
        if p >= 0 and np.array_equal(self._cols[p:p + len(js)], js) \
                and np.array_equal(self._keys[q:q + len(js)], js):
            return self.flat.slice(p * self.n, len(js) * self.n)
        return None


@functools.cache
def _libc():
    try:
        return ctypes.CDLL(None)
    except (OSError, TypeError):        # no C library of the process to load (Windows)
        return None


@functools.cache
def _pool():
    """The memory pool of pyarrow's arrays of a block, where the C library can give freed
    memory back (glibc's ``malloc_trim``, called once the file is read): its allocator, whose
    blocks freed by one block's arrays the next block's reuse. pyarrow's default, mimalloc,
    gave the pages back between blocks, and a fresh page costs its zeroing: on 10^6 rows of
    adults, 0.46 s of system time against 0.19 s, of a read of 0.9-1.1 s (after the read,
    0.12 GB held against 0.24 GB). None elsewhere: pyarrow's default. With this pool the
    tokeniser runs on the calling thread (:func:`_pyarrow_cells`): the C library gives each
    thread that allocates an arena of its own, 64 MB of address space each (a process capped
    in address space was refused a 6 MB file), and its threads saved no CPU time here (0.92
    against 0.94 s on adults, 0.20 against 0.20 s on 10^6 x 3, in one process, interleaved).
    """
    return pa.system_memory_pool() if hasattr(_libc(), "malloc_trim") else None


def _pyarrow_cells(data, ncols, keep, dialect, head_rows, block_size, newlines, plan=None,
                   pool=None):
    """pyarrow.csv's table of the records in ``data`` (every field as text, or as ``plan``
    says: a column whose conversion fails is read as text from then on, the block split
    again) and the position of each wanted column in it. ``pool``: :func:`_pool` (then on
    the calling thread), or None (pyarrow's default pool, on its threads)."""
    names = [f"f{j}" for j in range(ncols)]
    want = sorted(set(keep) | (set(range(ncols)) if head_rows > 0 else set()))
    types = plan.types if plan is not None and head_rows <= 0 and plan.types else {}
    ro = pacsv.ReadOptions(column_names=names, block_size=block_size,
                           use_threads=pool is None)
    po = pacsv.ParseOptions(delimiter=dialect.delimiter, quote_char=dialect.quotechar,
                            double_quote=True, ignore_empty_lines=True,
                            newlines_in_values=newlines)
    while True:
        co = pacsv.ConvertOptions(
            column_types={names[j]: types.get(j, pa.string()) for j in want},
            include_columns=[names[j] for j in want], strings_can_be_null=False,
            quoted_strings_can_be_null=False, check_utf8=False,
            null_values=plan.na if types else [])
        try:
            table = pacsv.read_csv(arrow_input(data), read_options=ro, parse_options=po,
                                   convert_options=co, memory_pool=pool)
            break
        except pa.ArrowInvalid as exc:
            j = plan.failed(str(exc)) if types else None
            if j is None:
                raise
    return table, {j: k for k, j in enumerate(want)}    # by position: a name lookup is O(d)


class TypePlan:
    """The columns pyarrow.csv converts to numbers while it splits a narrow file, learned from
    the first block's text: a column whose cells all cast to numbers (missing-value tokens
    aside) is read as float64, any other as text. Converting while splitting saves a string
    per cell and a second pass over them (pyarrow's dictionary conversion of text columns was
    slower than encoding their strings after the split: 0.72 against 0.48 s of CPU on 10^6
    rows of adults).

    The cells read the same as the text path reads them (:func:`type_cells`): the conversion
    to float64 is the cast the text path applies to a whole column (pyarrow's; spaces and
    tabs around a number are stripped first, as the cell-by-cell path strips them), a
    missing-value token is matched as written (NaN: missing), and a cell that is neither fails
    the conversion: the column is then read as text from that block on (:meth:`failed`), so an
    Excel error value, a currency or a stray word is typed, located and reported as before."""

    def __init__(self, na):
        self.na = sorted(na)
        self.types: dict | None = None          # column -> pyarrow type; None: not learned
        # rows -> the (kept columns, rows) matrix where the next block's numbers are to go
        # (the reader's table: parsed there, not copied; see rwtool.data._split); None: anywhere
        self.out = None

    def learn(self, cells, keep) -> None:
        """The types of the columns ``keep`` from their ``cells`` (text) in the first block
        that has records (until one has, nothing is learned)."""
        if len(keep) and not len(cells[int(keep[0])]):
            return
        self.types = {}
        if len(keep) > _TYPED_MAX:
            return
        na = pa.array(self.na, pa.string())
        for j in keep:
            arr = cells[int(j)]
            rest = pc.filter(arr, pc.invert(pc.is_in(arr, value_set=na)))
            # the first cells first: a cast that fails costs pyarrow a pass over the whole
            # column (2.5 ms for 8,000 cells of text, against 0.09 ms for 256)
            if len(rest) and _casts(rest.slice(0, _SAMPLE)) and _casts(rest):
                self.types[int(j)] = pa.float64()

    def failed(self, message: str):
        """The column whose conversion pyarrow refused (``message``), now read as text; None
        when the message names no typed column (a structural problem: the caller's)."""
        # (the row is named when the tokeniser runs on one thread)
        m = re.match(r"In CSV column #(\d+): (?:Row #\d+: )?CSV conversion error", message)
        j = int(m.group(1)) if m else None
        if j is None or self.types.get(j) != pa.float64():
            return None
        del self.types[j]
        return j


def _cells_and_head(table, pos, ncols, keep, head_rows):
    cells = {j: table.column(pos[j]) for j in keep}
    head = []
    if head_rows > 0:
        m = min(head_rows, table.num_rows)
        cols = [table.column(pos[j]).slice(0, m).to_pylist() for j in range(ncols)]
        head = [[c[i] for c in cols] for i in range(m)]
    return cells, head


def _plain_block(buf, final, dialect, names, given, usecols, head_rows, line_base, path,
                 utf8, plan=None):
    """(Block, bytes consumed, line breaks consumed) of a block of UTF-8 bytes that is plainly
    clean, read without the record scan: no quote character, no carriage return, no empty or
    blank line, every record as wide as the header, not wide (so each line is one record,
    on the line it is on). Anything else (or any tokeniser complaint: ragged rows, trailing
    delimiters, overlong rows) returns None and the scanning reader takes the block, which
    also locates the errors. Most files take this path; it saves the scan's pass over the
    bytes, the tokeniser checking the rest. ``utf8``: the file's own bytes, to check."""
    n_breaks, last_break, first_break, odd = _plain_stats(buf, ord(dialect.quotechar))
    if odd or (n_breaks == 0 and not final) or first_break == 0:
        return None
    consumed = len(buf) if final else last_break + 1
    if utf8:
        _check_utf8(buf, consumed, path, line_base, dialect.encoding)
    start = 0
    if names is None:                           # the block holds the header
        eol = first_break if first_break >= 0 else len(buf)
        if np.count_nonzero(buf[:eol] == ord(dialect.delimiter)) >= _WIDE:
            return None     # split by the scanning reader (no quotes here: fields = delims + 1)
        cells = _split_one(buf[:eol], dialect)
        names, keep = _names(cells, len(cells), dialect, given, usecols, path, line_base)
        start = eol + 1 if dialect.header else 0
    else:
        keep = column_positions(names, _usecols(usecols, names))
    ncols = len(names)
    if ncols > _WIDE:
        return None
    data = buf[min(start, consumed):consumed]
    n = n_breaks - (1 if start else 0)
    if final and len(data) and data[-1] != 10:
        n += 1                                  # a last line without a line break
    if n <= 0:
        return None
    first = line_base + (1 if start else 0)
    lines = np.arange(first, first + n, dtype=np.int64)
    if plan is not None and plan.types is not None and head_rows <= 0 and \
            0 < len(keep) <= _TYPED_MAX:
        cells = split_plain(data, n, ncols, keep, plan.types, dialect.delimiter, plan.na,
                            None if plan.out is None else plan.out(n))
        if cells is not None:
            return Block(names, lines, cells, []), consumed, n_breaks
    try:
        table, pos = _pyarrow_cells(data, ncols, keep, dialect, head_rows, _PLAIN_BLOCK, False,
                                    plan, _pool())
    except pa.ArrowInvalid:         # ragged, or a line longer than the tokeniser's blocks
        return None
    if table.num_rows != n or _has_blank_row(table):   # an empty line was skipped, or ",,"
        return None
    cells, head = _cells_and_head(table, pos, ncols, keep, head_rows)
    return Block(names, lines, cells, head), consumed, n_breaks


@njit(cache=True, nogil=True)
def _plain_stats(buf, quote):
    """(line breaks, offset of the last, offset of the first, whether a quote character or a
    carriage return occurs) of the bytes ``buf``. Counted without a branch per byte (the
    loop vectorises); the first and last breaks are searched for from either end."""
    n = 0
    odd = 0
    for i in range(buf.shape[0]):
        b = buf[i]
        n += b == 10
        odd |= (b == quote) | (b == 13)
    first = 0
    while first < buf.shape[0] and buf[first] != 10:
        first += 1
    last = buf.shape[0] - 1
    while last >= 0 and buf[last] != 10:
        last -= 1
    return n, last, first if first < buf.shape[0] else -1, odd != 0


def _has_blank_row(table) -> bool:
    """Whether a row has only spaces in every field (a blank record, skipped by the reader);
    in a typed table a missing number counts as blank (the scanning reader then decides)."""
    mask = None
    for col in table.columns:
        blank = _blank(col if mask is None else pc.filter(col, mask))
        if mask is None:
            mask = blank
        else:
            idx = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
            m = np.zeros(len(mask), bool)
            m[idx[blank.to_numpy(zero_copy_only=False)]] = True
            mask = pa.array(m)
        if not pc.any(mask).as_py():
            return False
    return True


def _blank(col):
    """Per cell of a column as split (text or float64): whether it is blank."""
    if pa.types.is_floating(col.type):
        return pc.is_null(col).combine_chunks() if isinstance(col, pa.ChunkedArray) else \
            pc.is_null(col)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    return pc.equal(pc.utf8_trim_whitespace(col), "")


def _only_line_breaks_between(buf, starts, ends) -> bool:
    """Whether the records follow each other with only line breaks between them (so the
    tokeniser may read the bytes as they are, with no copy)."""
    if len(starts) < 2:
        return True
    gaps = starts[1:] - ends[:-1]
    if int(gaps.max()) > 2:        # an empty line, a dropped blank record: compact instead
        return bool(_gaps_are_newlines(buf, ends[:-1], gaps))
    return True


def _gaps_are_newlines(buf, ends, gaps) -> bool:
    idx = np.flatnonzero(gaps > 2)
    for i in idx[:1000]:
        seg = buf[ends[i]:ends[i] + gaps[i]]
        if not np.all((seg == 10) | (seg == 13)):
            return False
    return len(idx) <= 1000


# ============================================================================ whole tables

def parse(source, dialect: Dialect, *, usecols=None, nrows=None, na_values=NA_VALUES,
          max_vocab: int = 10_000, head_rows: int = 0, fallback: bool = True,
          names=None) -> Table:
    """Read the file into compact columns (only ``usecols``: names, or all when None).

    ``fallback``: the encoding was detected, not given. A legacy encoding guessed from the
    file's start is then checked against the whole file (:func:`check_guess`), and a file that
    is not valid UTF-8 past the sniffed start is re-read whole in the best-scored legacy
    encoding, with a note; otherwise an invalid byte is an :class:`EncodingError` naming its
    line.
    """
    src = open_source(source, None, nrows)
    dialect, notes = check_guess(src, dialect) if fallback else (dialect, [])
    notes += preamble_note(dialect)
    try:
        try:
            return _parse_with(src, dialect, usecols, nrows, na_values, max_vocab, head_rows,
                               notes, names)
        except _BadUTF8 as bad:
            if not (fallback and dialect.encoding in ("utf-8", "utf-8-sig")):
                raise bad.error(dialect.encoding, src) from None
            d2, note = legacy_dialect(src, dialect, bad)
            return _parse_with(src, d2, usecols, nrows, na_values, max_vocab, head_rows,
                               [note] + preamble_note(d2), names)
    except MemoryError:
        raise out_of_memory(src.name) from None


@contextlib.contextmanager
def gc_paused():
    """Python's cycle collector paused for the block. A read makes objects by the tens of
    thousands (a column object and its lists per column of a wide file) and none of them in
    a cycle; the collector, triggered by their number, walked them again and again: 60% of
    reading 5 rows x 30,000 columns. Reference counting still frees everything."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def release_freed() -> None:
    """Give the memory a finished pass freed back to the system before the next pass. glibc
    keeps freed blocks of a few MB (a wide file's per-column arrays, the header's names) in
    its heap for reuse, and pyarrow's pool keeps its pages, so each pass of the streaming
    reader started where the last one peaked: on 500,000 columns, 100 MB kept after pass
    one, trimmed to 10 MB. A no-op where the C library has no ``malloc_trim``."""
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is not None:
        trim(0)
    if "pyarrow" in sys.modules:
        pa.default_memory_pool().release_unused()


def out_of_memory(path) -> FileTooLargeError:
    """The error for a read that ran out of the memory the process may use (a MemoryError;
    the tokeniser's own allocations are bounded, so none of them aborts the process)."""
    return FileTooLargeError(
        "reading this file needs more memory than the process may use", file=path,
        hint="read fewer columns (features=[...] or ignore=[...]; command line: --ignore) "
             "or fewer rows (nrows=...), or run where more memory is available")


def preamble_note(dialect: Dialect) -> list[str]:
    """The note on the lines skipped before the header, if any."""
    if not dialect.skip_lines:
        return []
    return [f"the first {dialect.skip_lines} line(s) of the file ({dialect.skipped}) were "
            f"skipped: the header is line {dialect.skip_lines + 1}"]


_UNICODE = ("utf-8", "utf-8-sig", "utf-16", "utf-32")


def check_guess(src: Source, dialect: Dialect):
    """(dialect, notes) for a file whose encoding was detected: a legacy encoding guessed from
    the first bytes is checked against the whole file (the best-scored one that decodes all
    of it is kept) and named in a note; a Unicode encoding is kept as it is."""
    if codecs.lookup(dialect.encoding).name in _UNICODE:
        return dialect, []
    d2, note = legacy_dialect(src, dialect, None)
    return d2, [note]


def legacy_dialect(src: Source, dialect: Dialect, bad: _BadUTF8 | None):
    """(dialect, note) for a file that is not UTF-8 (``bad``: its first invalid byte, when it
    was read as UTF-8 first): the best-scored legacy encoding that decodes the whole file,
    scored on the lines that hold non-ASCII bytes (rwtool.data._charset)."""
    enc, best, scored = guess_legacy(_non_ascii_lines(src), lambda e: _decodes(src, e))
    # named as close only when it decodes the whole file too (the score reads a sample): those
    # ranked before the winner did not, those after it are asked
    ranked = [e for e, _ in sorted(scored, key=lambda es: -es[1])]
    after = ranked[ranked.index(enc) + 1:] if enc in ranked else []
    close = [encoding_name(e) for e, s in scored if e in after and s >= best - 0.05 and s > 0
             and _decodes(src, e)]
    where = f" (first invalid byte on line {bad.line})" if bad is not None else ""
    note = Note(f"the file is not valid UTF-8{where}: its text was read as "
                f"{encoding_name(enc)}, the legacy encoding whose decoding looks most like text"
                + (f" ({', '.join(close)} scored about as well)" if close else "")
                + "; pass {0} if that is wrong", [("encoding", None)])
    return dataclasses.replace(dialect, encoding=enc), note


def _decodes(src: Source, encoding: str) -> bool:
    dec = codecs.getincrementaldecoder(encoding)()
    try:
        with src.open() as fh:
            while True:
                raw = fh.read(_STREAM_BLOCK_BYTES)
                dec.decode(raw, not raw)
                if not raw:
                    return True
    except UnicodeDecodeError:
        return False


def _non_ascii_lines(src: Source, limit: int = 1 << 16) -> bytes:
    """Up to ``limit`` bytes of the file's lines that hold a byte >= 0x80, whole lines only."""
    out, total = [], 0
    carry = b""
    with src.open() as fh:
        while total < limit:
            raw = fh.read(1 << 20)          # non-ASCII text is usually found early
            data = carry + raw
            cut = len(data) if not raw else data.rfind(b"\n") + 1
            carry, data = data[cut:], data[:cut]
            buf = np.frombuffer(data, np.uint8)
            high = np.flatnonzero(buf >= 0x80)[:limit - total]    # enough for the limit
            if len(high):
                nl = np.flatnonzero(buf == 10)
                # the line of each high byte: from the newline before it to the one after it
                k = np.searchsorted(nl, high)
                k = k[np.r_[True, k[1:] != k[:-1]]]         # sorted: one per line
                starts = np.where(k > 0, nl[np.maximum(k - 1, 0)] + 1, 0)
                ends = np.where(k < len(nl), nl[np.minimum(k, len(nl) - 1)] + 1, len(buf))
                for a, b in zip(starts.tolist(), ends.tolist()):
                    out.append(data[a:b])
                    total += b - a
                    if total >= limit:
                        break
            if not raw:
                break
    return b"".join(out)


def typed_plan(dialect, na, fast) -> "TypePlan | None":
    """A :class:`TypePlan` for a read, or None where the text path decides each cell alone: a
    decimal-comma file (a column's marks and thousands dots are read from its text) or a
    missing-value token that reads as a number (``fast`` False)."""
    return TypePlan(na) if fast and dialect.decimal == "." else None


@functools.lru_cache(maxsize=8)
def fast_cast_ok(na: frozenset) -> bool:
    """Whether a clean chunk may be cast whole: no missing-value token reads as a number other
    than NaN ("-999" must stay missing, not become -999)."""
    return not any(is_number_text(t.strip().replace(",", "."))
                   and not math.isnan(float(t.strip().replace(",", "."))) for t in na
                   if t.strip())


def _run(block, js):
    """The cells of columns ``js`` of a block one column after the other, as one array."""
    cells = block.cells
    run = cells.run(js) if isinstance(cells, ColumnCells) else None
    if run is None:
        run = pa.concat_arrays([a for j in js for a in (
            cells[j].chunks if isinstance(cells[j], pa.ChunkedArray) else [cells[j]])])
    return run


def cast_block(block, js, decimal, fast, out=None):
    """The cells of columns ``js`` of a wide block as one (len(js), rows) float matrix (into
    ``out`` when given) when every one is a plain number, else None (the caller types column
    by column; ``out`` may then hold some columns). Cast in runs of columns of about 65,536
    cells: few calls in C (the per-column overhead would otherwise dominate a block of few
    rows), and no temporary of the block's size (pyarrow's array of the cast, then copied)."""
    n = len(block.lines)
    if not (fast and decimal == "." and len(js) > 64 and n):
        return None
    V = np.empty((len(js), n)) if out is None else out
    step = max(1, _SLAB // n)
    try:
        for a in range(0, len(js), step):
            V[a:a + step] = pc.cast(_run(block, js[a:a + step]), pa.float64()).to_numpy(
                zero_copy_only=False).reshape(-1, n)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return V


@dataclass
class TypedBlock:
    """A block's columns ``js`` typed: ``values`` (len(js), rows) as in :class:`Column`,
    ``codes`` position in ``js`` -> codes (as in :class:`Column`) of the columns where text
    was met (the others hold numbers and NaN for a missing cell), ``marks`` (len(js), 2)
    whether a number cell shows a decimal comma / a dot (decimal-comma files; None
    otherwise), ``seen``: position in ``js`` -> :class:`Seen` of the columns that hold an
    Excel error value; ``unwritten``: positions in ``js`` of the columns of categories whose
    values were left unwritten (all NaN: see ``fill`` of :func:`type_block`); ``counts``:
    position in ``js`` -> cells per code + 2 (``_tally_codes``'), of the columns of ``codes``
    whose typing counted them (a dictionary's)."""

    values: np.ndarray
    codes: dict
    marks: np.ndarray | None
    seen: dict
    unwritten: tuple = ()
    counts: dict = field(default_factory=dict)

    def codes_of(self, k: int) -> np.ndarray:
        c = self.codes.get(k)
        return number_codes(self.values[k]) if c is None else c

    def code_matrix(self) -> np.ndarray:
        """The codes of every column, (len(js), rows)."""
        C = number_codes(self.values)
        for k, c in self.codes.items():
            C[k] = c
        return C


def type_block(block, js, decimal, na, fast, column_of, out=None,
               fill: bool = True, known: KnownTexts | None = None,
               count: bool = False) -> TypedBlock:
    """Type the cells of columns ``js`` of a block (each cell by its text alone, as
    :func:`type_cells`), with no Python object per column unless it holds text:
    ``column_of(j)`` gives the :class:`Column` interning column j's text, called only for a
    column where text (or an Excel error value) is met. A wide block is cast in one call when
    it is all plain numbers, else classified in one vectorised pass, the columns holding text
    then typed again one by one; a narrow block is typed column by column (a column the
    tokeniser converted to numbers, see :class:`TypePlan`, is copied in). ``out``: the
    (len(js), rows) matrix to write the values in; ``fill`` False: a column of categories
    none of which is a number leaves its row unwritten (``TypedBlock.unwritten``);
    ``known``: the texts typed in the earlier blocks, looked up instead of typed again (and
    added to); ``count``: the cells per code of the columns typed by their dictionary, in
    ``TypedBlock.counts``."""
    n, k = len(block.lines), len(js)
    if not n:
        return TypedBlock(np.empty((k, 0)), {}, None, {})
    V = cast_block(block, js, decimal, fast, out)
    if V is not None:
        return TypedBlock(V, {}, None, {})
    V = np.empty((k, n)) if out is None else out
    codes = {}
    marks = np.zeros((k, 2), bool) if decimal == "," else None
    seen = {}
    unwritten = []
    counts = {}
    if k > 64 and n:
        run = _run(block, js)
        v, c, s = _type_cells(run, decimal, na, lambda texts: np.zeros(len(texts), np.int32))
        V[:], C = v.reshape(k, n), c.reshape(k, n)
        if marks is not None:
            for m, mark in enumerate((",", ".")):
                shows = pc.match_substring(run, mark).to_numpy(zero_copy_only=False)
                marks[:, m] = (shows.reshape(k, n) & (C == -1)).any(axis=1)
        again = (C >= 0).any(axis=1)
        again[s.error_rows // n] = True
        todo = np.flatnonzero(again)
        del C
    else:
        todo = range(k)
    for kk in todo:
        j = int(js[kk])
        cells = block.cells[j]
        if pa.types.is_floating(cells.type):
            _copy_numbers(cells, V[kk])
            continue
        _, c, sn = type_cells(cells, decimal, na, fast,
                              lambda texts, j=j: column_of(j)._intern(texts), V[kk], fill,
                              None if known is None else known.column(j), count)
        if c.max(initial=-1) >= 0:
            codes[int(kk)] = c
            if sn.counts is not None:
                counts[int(kk)] = sn.counts
            if sn.no_values:
                unwritten.append(int(kk))
        elif sn.no_values:          # missing cells only: their codes are read from the NaN
            V[kk].fill(np.nan)
        if marks is not None:
            marks[kk] = ("," in sn.marks, "." in sn.marks)
        if len(sn.error_rows):
            column_of(j)
            seen[int(kk)] = sn
    return TypedBlock(V, codes, marks, seen, tuple(unwritten), counts)


def _copy_numbers(cells, out) -> None:
    """The float64 cells of a column (null: a missing-value token) into ``out``, NaN for
    missing: chunk by chunk, with no whole-column temporary; nothing to copy when they were
    parsed into ``out`` (:class:`TypePlan`'s ``out``)."""
    at = 0
    for ch in (cells.chunks if isinstance(cells, pa.ChunkedArray) else [cells]):
        if ch.null_count:
            ch = pc.fill_null(ch, math.nan)
        src, dst = ch.to_numpy(zero_copy_only=False), out[at:at + len(ch)]
        if src.ctypes.data != dst.ctypes.data:
            dst[:] = src
        at += len(ch)


class TableBuilder:
    """Collects the typed blocks of a file into a :class:`Table`: one number matrix, each
    block typed straight into its columns (no copy of the blocks joined at the end), and a
    :class:`Column` only for the columns where text is met (see :func:`type_block`).
    ``size``: the file's bytes, from which the matrix's rows are estimated (0: unknown)."""

    def __init__(self, names, keep, max_vocab, fast, size: int = 0):
        self.names, self.keep = names, np.asarray(keep, np.int64)
        self.max_vocab, self.fast = max_vocab, fast
        self.text: dict[int, Column] = {}
        self.V = np.empty((len(self.keep), 0))     # the numbers; columns past n: room
        self.codes: list[dict] = []        # per block: position in keep -> codes (text columns)
        self.unwritten: list[tuple] = []   # per block: positions whose values were not written
        self.spans: list[tuple[int, int]] = []
        self.marks = np.zeros((len(keep), 2), bool)
        self.n = 0
        self.size, self.nbytes = size, 0
        self.known = KnownTexts(max_vocab)

    def block_out(self, rows: int) -> np.ndarray:
        """Where the numbers of the next block, of ``rows`` records, are to go (see
        :class:`TypePlan`'s ``out``): its columns of the number matrix."""
        self._room(rows)
        return self.V[:, self.n:self.n + rows]

    def column_of(self, j: int) -> Column:
        c = self.text.get(j)
        if c is None:
            c = self.text[j] = Column(self.names[j], j, self.max_vocab, self.fast)
        return c

    def _room(self, rows: int) -> None:
        """Room for ``rows`` more: the rows of the whole file estimated at the bytes per row
        read so far (2% over), at least a quarter more than now when grown again."""
        need, cap = self.n + rows, self.V.shape[1]
        if need <= cap:
            return
        est = need
        if self.size and 0 < self.nbytes < self.size:
            # slack of at most 16 rows and 65,536 cells: a wide file's few rows are long, and
            # 16 rows of 500,000 columns would be 64 MB more than the file's 6 MB
            est = int(need * self.size / self.nbytes * 1.02) + min(
                16, 1 + (1 << 16) // max(len(self.keep), 1))
        V = np.empty((len(self.keep), max(need, est, cap + cap // 4)))
        V[:, :self.n] = self.V[:, :self.n]
        self.V = V

    def add(self, block, decimal, na) -> None:
        nb = len(block.lines)
        self.nbytes += block.nbytes
        self._room(nb)
        tb = type_block(block, self.keep, decimal, na, self.fast, self.column_of,
                        self.V[:, self.n:self.n + nb], fill=False, known=self.known)
        self._count(tb, nb)

    def add_typed(self, tb: TypedBlock, text_column) -> None:
        """Add a block typed before (the streaming reader's pass one keeps them), as
        :meth:`add` would have typed it: ``text_column(j)`` is the :class:`Column` of a column
        whose text ``tb``'s codes index. The first block's values are taken, not copied."""
        nb = tb.values.shape[1]
        if self.n == 0:
            self.V = tb.values
        else:
            self._room(nb)
            self.V[:, self.n:self.n + nb] = tb.values
        for kk in sorted(set(tb.codes) | set(tb.seen)):
            j = int(self.keep[kk])
            if j not in self.text:
                self.text[j] = text_column(j)
        self._count(tb, nb)

    def _count(self, tb: TypedBlock, nb: int) -> None:
        self.unwritten.append(tb.unwritten)
        pos = np.searchsorted(self.keep, list(self.text)) if self.text else []
        self.codes.append({int(kk): tb.codes_of(kk) for kk in pos})
        for kk, sn in tb.seen.items():
            self.text[int(self.keep[kk])]._errors.append((sn.error_rows + self.n,
                                                          sn.error_texts))
        if tb.marks is not None:
            self.marks |= tb.marks
        self.spans.append((self.n, self.n + nb))
        self.n += nb

    def table(self, path, dialect, lines, head, notes) -> Table:
        """The table of the blocks added (``notes``: where to say which columns held Excel
        error values; None says nothing)."""
        pos = np.full(len(self.names), -1, np.int64)
        pos[self.keep] = np.arange(len(self.keep))
        V = self.V[:, :self.n]
        if 8 * (self.V.shape[1] - self.n) > self.n:     # estimated too many rows: trim
            V = V.copy()
        self.V = np.empty((len(self.keep), 0))
        for j, c in self.text.items():       # a block before its first text: from NaN
            kk = int(pos[j])
            codes = [b[kk] if kk in b else number_codes(V[kk, s:e])
                     for b, (s, e) in zip(self.codes, self.spans)]
            c._cchunks = [codes[0] if len(codes) == 1 else np.concatenate(codes)]
        self.codes = []
        nan = None
        for j, c in sorted(self.text.items()):
            kk = int(pos[j])
            pos[j] = -1
            blank = [kk in u for u in self.unwritten]
            if all(blank):          # no number in the column: one array of NaN for all such
                if nan is None:
                    nan = np.full(self.n, np.nan)
                    nan.flags.writeable = False
                c._vchunks = [nan]
            else:
                for (s, e), b in zip(self.spans, blank):
                    if b:
                        V[kk, s:e] = np.nan
                c._vchunks = [V[kk]]
            c.marks |= {m for m, on in zip((",", "."), self.marks[kk]) if on}
            c.finish()
            c.lines = lines
            if len(c.excel_rows) and notes is not None:
                notes.append(excel_note(c.name, len(c.excel_rows),
                                        int(lines[c.excel_rows[0]]), c.excel_texts))
        self.spans, self.unwritten = [], []
        return Table(path, dialect, self.names, lines, dict(sorted(self.text.items())), head,
                     [] if notes is None else notes, V, pos)


def number_spellings(src, dialect, na, name: str, **read) -> list[tuple[str, list]]:
    """The labels of column ``name``'s number cells that the file writes more than one way
    ("1" and "1.0" both label 1): [(label, [(spelling, first file line), ...]), ...], in the
    order of their first cells; the file is read again (``read``: options of
    :func:`iter_blocks`) for that column alone."""
    first: dict[str, tuple[int, float]] = {}      # spelling -> (first line, value)
    j = None
    decimal = dialect.decimal
    for block in iter_blocks(src, dialect, usecols=[name], **read):
        if not len(block.lines):
            continue
        j = block.names.index(name) if j is None else j
        cells = block.cells[j]
        vals, codes, _ = type_cells(cells, decimal, na, False,
                                    lambda texts: np.zeros(len(texts), np.int32))
        num = np.flatnonzero(codes == -1)
        if not len(num):
            continue
        arr = cells.combine_chunks() if isinstance(cells, pa.ChunkedArray) else cells
        enc = pc.dictionary_encode(pc.utf8_trim_whitespace(arr.take(pa.array(num))))
        _, at = np.unique(enc.indices.to_numpy(zero_copy_only=False), return_index=True)
        for spelling, i in zip(enc.dictionary.to_pylist(), at.tolist()):
            if spelling not in first:
                first[spelling] = (int(block.lines[num[i]]), float(vals[num[i]]))
    labels: dict[str, list] = {}
    for spelling, (line, v) in sorted(first.items(), key=lambda kv: kv[1][0]):
        labels.setdefault(canon(v), []).append((spelling, line))
    return [(k, sp) for k, sp in labels.items() if len(sp) > 1]


@gc_paused()
def _parse_with(src, dialect, usecols, nrows, na_values, max_vocab, head_rows, notes,
                names=None) -> Table:
    na = frozenset(na_values)
    fast = fast_cast_ok(na)
    builder = None
    lines = []
    head: list[list[str]] = []
    plan = typed_plan(dialect, na, fast)
    for block in iter_blocks(src, dialect, usecols=usecols, nrows=nrows, head_rows=head_rows,
                             names=names, plan=plan):
        if builder is None:
            keep = (block.cells.columns() if isinstance(block.cells, ColumnCells)
                    else column_positions(block.names, usecols))    # the block's own array
            builder = TableBuilder(block.names, keep, max_vocab, fast,
                                   src.size if nrows is None else 0)
            if plan is not None:
                plan.out = builder.block_out
        builder.add(block, dialect.decimal, na)
        block.cells = {}        # typed: its text goes before the next block is split
        lines.append(block.lines)
        if block.head:
            head = block.head
    all_lines = (lines[0] if len(lines) == 1 else np.concatenate(lines) if lines
                 else np.empty(0)).astype(np.int64, copy=False)
    table = builder.table(src.name, dialect, all_lines, head[:head_rows], notes)
    if _pool() is not None:
        _libc().malloc_trim(0)      # give back what the blocks' arrays freed
    table.spellings = partial(number_spellings, src, dialect, na, nrows=nrows, names=names)
    return table


def table_from_rows(names: list[str], rows: Sequence[Sequence[str]], na, decimal) -> Table:
    """A table from rows already split into cells (rows typed in a form)."""
    columns = {j: Column(n, j, 10_000, False) for j, n in enumerate(names)}
    lines = np.arange(1, len(rows) + 1, dtype=np.int64)
    for j, c in columns.items():
        c.add_chunk([r[j] for r in rows], decimal, frozenset(na))
        c.finish()
        c.lines = lines
    return Table(None, Dialect(decimal=decimal), list(names), lines, columns, [])
