"""CSV files larger than memory: learn the encoding in one pass, then encode chunk by chunk.

Pass one, :func:`scan_csv`, reads the file in blocks of bytes (memory bounded by ``block_bytes``
and the number of distinct values per column, never by the row count) and learns what
:func:`rwtool.data.read_csv` learns from the whole table: each column's kind (numeric when most
of its non-missing cells are numbers), the one-hot categories, the imputation statistics, the
target's task and classes. It returns a :class:`CsvScan` holding the :class:`Preprocessing`
record, the detected :class:`Dialect`, the number of rows and, with ``moments=True`` (one more
read), the mean and standard deviation of every encoded column (what an estimator's
standardisation needs before its first ``partial_fit``).

Pass two, :func:`iter_csv`, replays that record on the file block by block and yields
:class:`Dataset` chunks (``X``, ``y``, the file line of each row), so the chunks, stacked, equal
``read_csv(path, ...)`` on the whole file (same columns, same encoding; a row with a missing
target is dropped, as there).

    scan = scan_csv("big.csv", target="y", missing="impute-mean")
    for chunk in iter_csv("big.csv", scan):
        est.partial_fit(chunk.X, chunk.y, classes=scan.classes)

Given the scan (not only its record), pass two reuses pass one's work: pass one keeps its
typed blocks in memory while their estimated total stays within ``keep_bytes`` (64 MiB: 8
bytes per number cell and per row, 4 per cell of a column holding text, about 70 per Excel
error value); past it, it writes them to a temporary spill file (rwtool.data._spill) in
``spill_dir`` instead. :func:`iter_csv` then encodes them instead of reading and typing the
file again (the same chunks, bit for bit), so memory stays bounded by ``block_bytes`` plus at
most ``keep_bytes``, and the disk holds about what the blocks take until the scan is closed.
Without room on the disk (or with ``spill_dir=False``) a larger file keeps nothing and is read
twice.

Exact for: column kinds, categories, classes, counts, the mean imputation. Bounded: a column
keeps at most ``max_distinct`` distinct numbers (100,000) for the categories of a numeric column
declared categorical, the classes of a numeric target and the most-frequent imputation; past
that the column is refused if categorical (too many categories to one-hot anyway) and the mode
is taken over the values seen first. This module must not fit models.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field
from functools import partial
from typing import Iterator

import numpy as np

from ._dialect import NA_VALUES, Dialect, Source, open_source, sniff_csv
from ._read import (_STREAM_BLOCK_BYTES, Column, ColumnCells, NameLookup, Table, TableBuilder,
                    KnownTexts, _BadUTF8, canon, check_guess, column_positions, excel_note, fast_cast_ok,
                    Seen, TypedBlock, gc_paused, iter_blocks, legacy_dialect, number_spellings,
                    out_of_memory, positions, preamble_note, release_freed,
                    type_block, typed_plan, _counts_up, _tally_codes)
from ..exceptions import Note, human_bytes
from ._errors import MissingColumnError, MissingValueError
from ._dataset import Dataset
from ._colstats import block_stats
from ._distinct import DistinctNumbers
from ._encoding import (_DEFAULT_MAX_ABS, Preprocessing, _fit_columns, _fit_target, absent,
                        format_note, _require_rows)
from ._names import select
from ._options import TARGET_POLICY_FIX, _check_options, _roles
from ._spill import SpillFile, int_bytes, int_type, narrow_rows, narrowest_int

__all__ = ["CsvScan", "scan_csv", "iter_csv"]

_MAX_DISTINCT = 100_000
_KEEP_BYTES = 1 << 26          # pass one's typed blocks kept for pass two, at most (64 MiB)
_MAX_VOCAB = 10_000            # distinct texts interned per column (see Column)
ALL, FIT = "all", "fit"        # row sets of a streamed column: every row, rows with a target


_KEYS = {ALL: 0, FIT: 1}
# id(record) -> its scan while the scan lives: a pass two given the record alone lets go of the
# scan's in-memory blocks, which it does not use (see iter_csv)
_SCANS: "weakref.WeakValueDictionary[int, CsvScan]" = weakref.WeakValueDictionary()


class _TextPart:
    """What a streamed column that holds text (or an Excel error value) keeps besides its
    numbers: the interned texts and their counts, the first text cell, the Excel errors."""

    def __init__(self, name, index, max_vocab, fast):
        self.col = Column(name, index, max_vocab, fast)     # interns the text cells
        self.text = [np.zeros(0, np.int64), np.zeros(0, np.int64)]
        self.first_txt = [None, None]
        self.n_excel = 0
        self.excel_first: int | None = None
        self.excel_texts: set[str] = set()

    def add(self, codes, seen, lines, fit_mask, every, counts=None) -> None:
        # every: every row has a target (fit_mask all True): one count for both sets;
        # counts: the cells per code + 2 when typing counted them
        if seen is not None and len(seen.error_rows):
            if self.excel_first is None:
                self.excel_first = int(lines[seen.error_rows[0]])
            self.n_excel += len(seen.error_rows)
            self.excel_texts.update(seen.error_texts)
        bc = None
        for key, m in ((0, None), (1, None if every else fit_mask)):
            c = codes if m is None else codes[m]
            if bc is None or not every:
                # codes >= -2 (-1 a number, -2 missing): counted shifted, no gather of the texts
                bc = (counts if m is None and counts is not None else
                      _tally_codes(c, len(self.col.vocab) + 2))[2:]
            if not bc.any():
                continue
            if len(self.text[key]) < len(bc):
                self.text[key] = np.concatenate(
                    [self.text[key], np.zeros(len(bc) - len(self.text[key]), np.int64)])
            self.text[key][:len(bc)] += bc
            if self.first_txt[key] is None:
                ln = lines if m is None else lines[m]
                i = int(np.flatnonzero(c >= 0)[0])
                self.first_txt[key] = (int(ln[i]), self.col.vocab[int(c[i])])


class _Summary:
    """Running summaries of the streamed columns over the blocks, one array entry per column
    (no Python object per column unless it holds text): cell counts, first infinite value,
    largest magnitude, decimal marks, sum, distinct numbers, for every row (ALL) and for the
    rows with a target (FIT). :meth:`column` answers for one column what the record fitting
    asks a parsed :class:`~rwtool.data._read.Column`."""

    def __init__(self, names, keep, max_vocab, fast, max_distinct, counted=None,
                 sums=True):
        k = len(keep)
        self.names, self.keep = names, np.asarray(keep, np.int64)
        self.max_vocab, self.fast, self.max_distinct = max_vocab, fast, max_distinct
        # [ALL, FIT]: the FIT summaries are the ALL ones until a row lacks a target. A
        # column's text cells are counted by its text part, its missing ones are the rest of
        # the rows; the sum is of the FIT rows' finite numbers, used only where the FIT rows
        # hold no infinite one (so their count is the numbers'); kept only when ``sums`` (the
        # mean fill's policy asks for it)
        self.rows = [0, 0]
        self.n_num = [np.zeros(k, np.int64)] * 2
        self.first_inf = [np.full(k, -1, np.int64)] * 2
        self.max_abs = [np.zeros(k)] * 2
        self.fraction = np.zeros(k, bool)
        self.marks = np.zeros((k, 2), bool)
        self.sum = np.zeros(k) if sums else None
        self.distinct = [DistinctNumbers(k, max_distinct), None]
        # The distinct numbers are asked of the target, of a column declared categorical,
        # for most-frequent fills, and of a column holding text (it may be categorical):
        # ``counted`` (None: all) are counted from the start, a column from the block where
        # its first text is met. One that had numbers before is ``late``: if it turns out
        # categorical, pass one is read again counting all (see _pass_one). A wide file of
        # numbers does not pay for a table of every (column, number) pair (36 of its 54 MB).
        self.counted = np.ones(k, bool) if counted is None else np.asarray(counted, bool)
        self.late = np.zeros(k, bool)
        self.fit_same = True
        self.text: dict[int, _TextPart] = {}

    def column_of(self, j: int) -> Column:
        t = self.text.get(j)
        if t is None:
            t = self.text[j] = _TextPart(self.names[j], j, self.max_vocab, self.fast)
        return t.col

    def add(self, tb, lines, fit) -> np.ndarray:
        """Count a typed block (:func:`~rwtool.data._read.type_block`) in; returns per row of
        its values the bytes of the narrowest integer type holding each cell exactly (see
        :func:`~rwtool.data._spill.narrow_rows`; 0 for an unwritten row), found in the same
        pass."""
        if tb.marks is not None:
            self.marks |= tb.marks
        every = bool(fit.all())
        for j, t in self.text.items():
            kk = int(np.searchsorted(self.keep, j))
            t.add(tb.codes_of(kk), tb.seen.get(kk), lines, fit, every, tb.counts.get(kk))
            if not self.counted[kk]:
                self.counted[kk] = True
                self.late[kk] = self.n_num[0][kk] > 0      # numbers not counted before
        return self._add_numbers(tb.values, tb.unwritten, lines, fit)

    def _add_numbers(self, V, unwritten, lines, fit):
        # one pass over the block per row set (block_stats: the counts, sums, decimal points,
        # whole-number ranges and integer rows together), then the distinct store, which takes
        # those ranges instead of a pass of its own; no temporary of the block's size. The
        # rows ``unwritten`` (columns of categories with no number in this block) are never
        # read. While every row has had a target, the FIT summaries are the ALL ones, kept
        # once
        if self.fit_same and not fit.all():
            self._split_fit()
        skip = None
        if unwritten:
            skip = np.zeros(len(V), bool)
            skip[list(unwritten)] = True
        by_column = len(V) <= 64        # sums column by column, as np.mean sums one
        cols = self.counted if skip is None else self.counted & ~skip
        counted = bool(cols.any())
        cols = None if cols.all() else cols
        narrow = np.zeros(len(V), bool)
        # the ALL pass's ranges: for the distinct store and the integer type a row is spilled as
        all_ranges = np.empty((len(V), 3))
        for key, m in ((0, None),) if self.fit_same else ((0, None), (1, fit)):
            sums = (key == 1 or self.fit_same) and self.sum is not None
            n_rows = V.shape[1] if m is None else int(np.count_nonzero(m))
            self.rows[key] += n_rows
            ranges = all_ranges if m is None else np.empty((len(V), 3)) if counted else None
            # decimal points and integer rows are of every cell: asked in the ALL pass
            every = {} if m is not None else {"narrow": narrow, "shows": self.fraction}
            if sums and by_column:
                n_fin = np.zeros(len(V), np.int64)
                block_stats(V, lines, self.first_inf[key], self.max_abs[key], self.n_num[key],
                            None, m, n_fin, skip, ranges, **every)
                self.sum += [0.0 if skip is not None and skip[kk] else
                             _finite_sum(x if m is None else x[m], f == n_rows)
                             for kk, (x, f) in enumerate(zip(V, n_fin.tolist()))]
            else:
                block_stats(V, lines, self.first_inf[key], self.max_abs[key], self.n_num[key],
                            self.sum if sums else None, m, None, skip, ranges, **every)
            if counted:
                self.distinct[key].add(V, 0, cols, m, ranges)
        return int_bytes(narrow, all_ranges[:, 1], all_ranges[:, 2])

    def _split_fit(self) -> None:
        """A row without a target is met: the FIT summaries start as copies of the ALL ones."""
        self.n_num[1], self.first_inf[1], self.max_abs[1] = self.n_num[0].copy(), \
            self.first_inf[0].copy(), self.max_abs[0].copy()
        self.rows[1] = self.rows[0]
        self.distinct[1] = self.distinct[0].copy()
        self.fit_same = False

    def uncounted(self, impute: bool) -> np.ndarray:
        """The columns whose distinct numbers may be asked (categorical: as many text cells
        as numbers; or, when ``impute``, a number format's fill) but whose first numbers were
        not counted (see ``late``)."""
        late = np.flatnonzero(self.late)
        if impute:
            return late
        return np.array([kk for kk in late.tolist() if self.column(int(self.keep[kk])).counts(
            ALL)[1] >= self.n_num[0][kk]], np.int64)

    def key(self, rows) -> int:
        """The summaries answering for ``rows`` (ALL or FIT): 0 or 1."""
        return 1 if rows == FIT and not self.fit_same else 0

    def column(self, j: int) -> "_StreamColumn":
        return _StreamColumn(self, j, int(np.searchsorted(self.keep, j)))


def _finite_sum(x, all_finite):
    """np.sum of the finite numbers of ``x`` (as np.mean sums them: the same bits for a file
    read in one block)."""
    return np.sum(x if all_finite else x[np.isfinite(x)])


class _StreamColumn:
    """One column of a :class:`_Summary`, answering what the record fitting asks a parsed
    :class:`~rwtool.data._read.Column` (``rows`` is ALL or FIT instead of indices); made when
    asked for, never kept."""

    def __init__(self, summary, index, kk):
        self.s, self.index, self.kk = summary, index, kk
        self.name = summary.names[index]
        self.t = summary.text.get(index)
        self.max_distinct = summary.max_distinct

    @property
    def n_distinct_text(self):
        return 0 if self.t is None else self.t.col.n_distinct_text

    @property
    def vocab(self):
        return [] if self.t is None else self.t.col.vocab

    def _k(self, rows):
        return self.s.key(rows) if isinstance(rows, str) else 0

    def _kt(self, rows):         # the text part keeps both row sets apart
        return _KEYS[rows] if isinstance(rows, str) else 0

    def counts(self, rows=ALL):
        key = self._k(rows)
        n_num = int(self.s.n_num[key][self.kk])
        n_text = 0 if self.t is None else int(self.t.text[self._kt(rows)].sum())
        return n_num, n_text, self.s.rows[key] - n_num - n_text

    def inferred_kind(self, rows=ALL):
        n_num, n_text, _ = self.counts(rows)
        if n_num == 0 and n_text == 0:
            return "empty"
        return "numeric" if n_num > n_text else "categorical"

    def category_counts(self, rows=ALL, decimal="."):
        key = self._k(rows)
        out = {}
        if self.t is not None:
            for k, cnt in enumerate(self.t.text[self._kt(rows)].tolist()):
                if cnt:
                    label = self.vocab[k]
                    out[label] = out.get(label, 0) + cnt
        for x, cnt in zip(*(a.tolist() for a in self.s.distinct[key].of(self.kk))):
            label = canon(x, decimal)
            out[label] = out.get(label, 0) + cnt
        if self.s.distinct[key].overflowed(self.kk):   # too many distinct numbers to one-hot
            out.update({f"<number {i}>": 1 for i in range(self.max_distinct)})
        return out

    def decimal_marks(self, decimal):
        if decimal == ",":
            return {m for m, on in zip((",", "."), self.s.marks[self.kk]) if on}
        return {"."} if self.s.fraction[self.kk] else set()

    def unique_numbers(self, rows=ALL):
        return np.array(self.s.distinct[self._k(rows)].of(self.kk)[0], dtype=np.float64)

    def first_text(self, rows=ALL):
        return None if self.t is None else self.t.first_txt[self._kt(rows)]

    def first_nonfinite(self, rows=ALL):
        line = int(self.s.first_inf[self._k(rows)][self.kk])
        return None if line < 0 else line

    def max_magnitude(self, rows=ALL):
        return float(self.s.max_abs[self._k(rows)][self.kk])

    def numeric_fill(self, policy, rows=FIT):
        if self.first_nonfinite(FIT) is not None:
            return None
        if policy == "impute-mean":
            n = int(self.s.n_num[self._k(FIT)][self.kk])     # all finite, as checked above
            return float(self.s.sum[self.kk]) / n if n else float("nan")
        vals, cnt = self.s.distinct[self._k(FIT)].of(self.kk)
        if not len(vals):
            return None
        return float(vals[np.flatnonzero(cnt == cnt.max())[0]])    # the smallest mode


class _StreamTable(NameLookup):
    """The few Table attributes the record fitting reads."""

    def __init__(self, path, dialect, names, summary=None):
        self.path, self.dialect, self.names, self.summary = path, dialect, names, summary
        self.notes: list[str] = []
        self.spellings = None

    def col(self, name):
        return self.summary.column(self.position(name))

    def column_at(self, j: int):
        return self.summary.column(j)

    def number_stats(self, names, fit_rows, kind_rows, policy):
        """As :meth:`rwtool.data._read.Table.number_stats` (a fill is asked of the column)."""
        s = self.summary
        js = positions(self.names, names)
        kk = np.searchsorted(s.keep, js)
        del js
        dense = (~np.isin(s.keep[kk], np.fromiter(s.text, np.int64, len(s.text))) if s.text
                 else np.ones(len(kk), bool))       # numbers only: no positions gathered
        n_fit = s.n_num[s.key(fit_rows)][kk]
        same = s.key(kind_rows) == s.key(fit_rows)      # one array, not two alike
        return (dense, n_fit, n_fit if same else s.n_num[s.key(kind_rows)][kk],
                np.full(len(names), np.nan) if policy.startswith("impute") else None)


class _Kept:
    """Pass one's typed blocks, kept so that pass two encodes them instead of reading and
    typing the file again: in memory while those read so far, scaled to the whole input's
    size, stay within ``budget`` bytes (numbers, text codes, file lines); past it, written to a
    spill file in ``spill_dir`` (None: the system's temporary folder) and read back by pass
    two, so pass one holds at most ``budget`` bytes more than without them. With
    ``spill_dir=False``, when the disk lacks room (free space under twice the estimated
    total) or a write fails, nothing is kept (``note`` says why) and pass two reads the file
    again. Served only to a pass over the same input, unchanged (device, inode, size and
    modification time of a file; the same in-memory input), with the same dialect and block
    size, so the chunks are the ones a second read would give."""

    def __init__(self, src, budget, block_bytes, dialect, spill_dir=None):
        self.src, self.budget, self.block_bytes, self.dialect = src, budget, block_bytes, dialect
        self.spill_dir = spill_dir
        self.stamp = _stamp(src)
        # (lines, TypedBlock) in memory, or _OnDisk once spilled (``spill`` then set)
        self.blocks: list = []
        self.spill: SpillFile | None = None
        self.held = self.read = 0
        self.names = self.keep = None
        self.vocab: dict[int, list[str]] = {}
        self.texts = None       # position in keep -> the texts its codes index so far
        self.fast = True
        self.on = True
        self.note: str | None = None

    def add(self, block, tb, narrow=None) -> None:
        """Keep the typed block ``tb`` of ``block`` (``narrow``: the integer type of its rows'
        bytes on disk, when known: see :func:`~rwtool.data._spill.narrow_rows`)."""
        if not self.on:
            return
        self.held += (block.lines.nbytes + tb.values.nbytes
                      + sum(c.nbytes for c in tb.codes.values())
                      # an Excel error value's row and text (a Python string each)
                      + sum(sn.error_rows.nbytes + 64 * len(sn.error_texts)
                            for sn in tb.seen.values()))
        self.read += block.nbytes
        size = self.src.size
        whole = self.held * size / self.read if 0 < self.read < size else self.held
        if self.spill is None and max(self.held, whole) > self.budget:
            self._start_spill(max(self.held, whole))
            if not self.on:
                return
        if self.spill is None:
            self.blocks.append((block.lines, tb))
            return
        try:
            self.blocks.append(self._write(block.lines, tb, narrow))
        except OSError as exc:
            self._failed(exc)

    def _start_spill(self, whole) -> None:
        """The blocks pass the budget: write those kept so far to a new spill file, or keep
        none when not spilling or when the disk lacks room."""
        if self.spill_dir is False:
            self.drop()
            return
        folder = tempfile.gettempdir() if self.spill_dir is None else os.fspath(self.spill_dir)
        try:
            free = shutil.disk_usage(folder).free
            if free < 2 * whole:
                self.drop(_spill_note(f"were not written to {folder}: {human_bytes(free)} "
                                      f"free there, under twice their estimated "
                                      f"{human_bytes(whole)}"))
                return
            self.spill = SpillFile(folder, prefix="rwtool-scan-")
            held, self.blocks = self.blocks, []
            for lines, tb in held:
                self.blocks.append(self._write(lines, tb))
        except OSError as exc:
            self._failed(exc, folder)

    def _write(self, lines, tb, narrow=None) -> "_OnDisk":
        sp = self.spill
        # the file lines of a block without a multi-line record or a blank line count up by
        # one: their first is enough
        first = int(lines[0]) if len(lines) and _counts_up(lines) else None
        if first is None:
            sp.write(lines)
        # a column of categories with no number in the block has a row of NaN: not written,
        # read back as unwritten (the table gives it NaN, as a second read's typing does)
        blank = tuple(sorted(set(tb.unwritten) | {kk for kk, c in tb.codes.items()
                                                  if kk not in tb.unwritten
                                                  and not (c == -1).any()}))
        # rows of whole numbers as int8/16/32 (the same bits back): adults' 8 bytes a cell
        # down to 2.4 on average
        whole = narrow_rows(tb.values) if narrow is None else narrow
        for a, b, size in _written(len(tb.values), blank, whole):
            sp.write(tb.values[a:b], int_type(size))
        # codes index at most _MAX_VOCAB texts: 1 or 2 bytes a cell instead of 4, from the
        # texts interned so far (-2 missing, -1 a number, at most one less than their count)
        codes = [(kk, c, narrowest_int(c, None if self.texts is None else
                                        (-2, len(self.texts(kk)) - 1)))
                 for kk, c in sorted(tb.codes.items())]
        for _, c, stored in codes:
            sp.write(c, stored)
        seen = []
        for kk, sn in sorted(tb.seen.items()):
            sp.write(sn.error_rows)
            # Excel error values: a few distinct texts, one code a cell
            texts = list(dict.fromkeys(sn.error_texts))
            at = {t: i for i, t in enumerate(texts)}
            sp.write(np.array([at[t] for t in sn.error_texts], np.int32))
            seen.append((kk, sn.marks, len(sn.error_rows), sn.error_rows.dtype, texts,
                         len(sn.error_texts), sn.no_values))
        return _OnDisk(len(lines), lines.dtype, first, tb.values.shape,
                       [(kk, c.dtype, stored) for kk, c, stored in codes], tb.marks, seen,
                       blank, whole)

    def _failed(self, exc, folder=None) -> None:
        folder = folder or self.spill.folder
        self.drop(_spill_note(f"could not be written to {folder} ({exc.strerror or exc})"))

    def drop(self, note: str | None = None) -> None:
        """Keep nothing (remove the spill file): pass two reads the file again."""
        self.blocks, self.vocab, self.on, self.texts = [], {}, False, None
        if self.spill is not None:
            self.spill.close()
            self.spill = None
        if note is not None:
            self.note = note

    def in_memory(self) -> bool:
        return self.on and self.spill is None and bool(self.blocks)

    def finish(self, names, keep, summary, fast) -> None:
        """After pass one's last block: the columns' names and texts the codes index (a column
        past ``_MAX_VOCAB`` distinct texts is read again: its codes share one slot)."""
        self.texts = None       # the summaries go before pass two
        if any(t.col.n_distinct_text > t.col.max_vocab for t in summary.text.values()):
            self.drop()
        if self.spill is not None:
            try:
                self.spill.finish()
            except OSError as exc:
                self._failed(exc)
        if self.on:
            self.names, self.keep, self.fast = names, keep, fast
            self.vocab = {j: t.col.vocab for j, t in summary.text.items()}

    def same_source(self, src) -> bool:
        return src is self.src if self.src.path is None else (
            src.path is not None and _stamp(src) == self.stamp)

    def serves(self, src, dialect, block_bytes) -> bool:
        return (self.on and self.same_source(src) and dialect == self.dialect
                and block_bytes == self.block_bytes
                and (self.spill is None or self.spill.exists()))

    def tables(self, path, dialect) -> Iterator[Table]:
        """The :class:`Table` of each kept block, as pass two types it from the file. A
        :meth:`drop` (the scan closed) while the tables are being read does not cut them
        short: the reading holds what it needs (the block list, the texts, its own handle
        of the spill file)."""
        names, keep, fast, vocab = self.names, self.keep, self.fast, self.vocab

        def column(j: int) -> Column:
            c = Column(names[j], j, _MAX_VOCAB, fast)
            c.vocab = vocab.get(j, [])          # pass one's texts, in the order interned
            return c

        for lines, tb in self._typed():
            builder = TableBuilder(names, keep, _MAX_VOCAB, fast)
            builder.add_typed(tb, column)
            yield builder.table(path, dialect, lines, [], None)

    def _typed(self) -> Iterator[tuple[np.ndarray, TypedBlock]]:
        if self.spill is None:
            yield from self.blocks
            return
        # fresh arrays, not one reused buffer: a chunk's encoded rows refer to its table's
        # number matrix (not copied), and the caller may still hold the chunk
        with self.spill.reader() as r:
            for d in self.blocks:
                lines = (r.read(d.n, d.lines_dtype) if d.first_line is None else
                         np.arange(d.first_line, d.first_line + d.n, dtype=d.lines_dtype))
                values = np.empty(d.shape)
                for a, b, size in _written(d.shape[0], d.unwritten, d.whole):
                    r.fill(values[a:b], int_type(size))
                codes = {kk: r.read(d.n, dt, stored) for kk, dt, stored in d.codes}
                seen = {}
                for kk, marks, n_err, rdt, texts, n_txt, no_values in d.seen:
                    rows = r.read(n_err, rdt)
                    at = r.read(n_txt, np.int32)
                    seen[kk] = Seen(marks, rows, [texts[i] for i in at.tolist()], no_values)
                yield lines, TypedBlock(values, codes, d.marks, seen, d.unwritten)


def _written(k: int, unwritten: tuple, whole: np.ndarray):
    """The runs ``(a, b, size)`` of a typed block's ``k`` rows of values that are spilled,
    each written and read as one array: all rows but those of columns ``unwritten``
    (categories none of which is a number: NaN, never read; sorted), cut where ``whole``
    (the bytes of the integer type a row is written as, 0 for float64:
    :func:`~rwtool.data._spill.narrow_rows`) changes."""
    cuts = np.flatnonzero(np.diff(whole)) + 1
    a = 0
    for u in sorted({*unwritten, *cuts.tolist()}):
        if u > a:
            yield a, u, int(whole[a])
        a = max(a, u + 1) if u in unwritten else u
    if a < k:
        yield a, k, int(whole[a])


def _spill_note(what: str) -> Note:
    return Note(f"the file's typed blocks {Note.literal(what)}: pass two reads the file again "
                f"({{0}} or the TMPDIR variable chooses another folder)", [("spill_dir", None)])


@dataclass
class _OnDisk:
    """A spilled block: what reads it back (its arrays are in the spill file, in the order
    :meth:`_Kept._write` wrote them) and its small parts."""

    n: int
    lines_dtype: np.dtype
    first_line: int | None      # the lines count up from it (not written), or None
    shape: tuple
    codes: list                 # (position, dtype, the type written)
    marks: np.ndarray | None
    seen: list
    unwritten: tuple
    whole: np.ndarray           # per row of values: the bytes of its integer type (0: float64)


def _stamp(src):
    """What identifies a file's contents between two passes (None: an in-memory input)."""
    if src.path is None:
        return None
    st = os.stat(src.path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


@dataclass
class CsvScan:
    """What pass one learned: the record to replay, the dialect to read with, and counts.

    ``n_rows``: the rows :func:`iter_csv` will yield (rows with a missing target, and under
    ``missing="drop-rows"`` rows with a missing feature, are left out; without ``moments``,
    the rows with a target, missing features not counted); ``n_records``: every data record
    of the file; ``mean``/``std``: of
    each encoded column over those rows (None unless ``moments=True``); ``classes``: the
    target's classes (None for regression); ``notes``: what was dropped or switched;
    ``source``: the input, to give :func:`iter_csv` when it is standard input or a pipe (read
    once, then held in memory), e.g. ``iter_csv(scan.source, scan)``.

    Given to :func:`iter_csv` in place of the record, the scan also hands it the typed blocks
    pass one kept (in memory when the whole file's fit in ``keep_bytes``, else in a spill
    file, see :func:`scan_csv`), which it then encodes without reading the file again. They
    are held until :meth:`close` (or the end of a ``with`` block, or the scan's collection, or
    the interpreter's exit: the spill file is removed then).
    """

    preprocessing: Preprocessing
    dialect: Dialect
    n_rows: int
    n_records: int
    mean: np.ndarray | None = None
    std: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    source: Source | None = field(default=None, repr=False)
    _kept: _Kept | None = field(default=None, repr=False, compare=False)

    def close(self) -> None:
        """Let go of the kept blocks (the spill file is removed): a later ``iter_csv(path,
        scan)`` reads the file again."""
        if self._kept is not None:
            self._kept.drop()

    def __enter__(self) -> "CsvScan":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def spill_bytes(self) -> int:
        """Bytes of the spill file this scan holds (0: none)."""
        k = self._kept
        return 0 if k is None or k.spill is None else k.spill.nbytes

    @property
    def classes(self):
        t = self.preprocessing.target
        return None if t is None or t["classes"] is None else list(t["classes"])

    @property
    def task(self):
        return self.preprocessing.task


def scan_csv(path, target=None, *, features=None, ignore=None, categorical=None, numeric=None,
             task: str = "auto", missing: str = "error", max_categories: int = 50,
             handle_unknown: str = "error", encoding=None, delimiter=None, decimal=None,
             header=None, na_values=NA_VALUES, max_abs: float = _DEFAULT_MAX_ABS,
             moments: bool = True, block_bytes: int = _STREAM_BLOCK_BYTES,
             max_distinct: int = _MAX_DISTINCT, max_bytes=None, names=None,
             keep_bytes: int = _KEEP_BYTES, spill_dir=None) -> CsvScan:
    """Pass one over a CSV file too large for memory: learn the encoding record.

    The options are those of :func:`rwtool.data.read_csv` (the record equals the one
    ``read_csv`` learns on the same file), plus ``moments`` (a second read computes the mean
    and standard deviation of each encoded column), ``block_bytes`` (bytes read at a time:
    memory is a small multiple of it), ``max_distinct`` (see the module docstring) and
    ``keep_bytes`` and ``spill_dir``: when the file's typed blocks (8 bytes per number cell
    and per row, 4 per cell of a column holding text, about 70 per Excel error value) come to
    at most ``keep_bytes`` (64 MiB), the scan keeps them in memory; a larger file's are
    written to a temporary file in ``spill_dir`` (None: ``tempfile.gettempdir()``, i.e.
    TMPDIR) as pass one types them, and read back from it; either way ``iter_csv(path, scan)``
    encodes them instead of reading and typing the file again (the same chunks), and pass one
    never holds more than ``keep_bytes`` of them in memory. The spill takes 8 bytes per number
    cell (1, 2 or 4 in a block where int8, int16 or int32 holds the column's numbers exactly),
    1 or 2 per text cell and 8 per row where the file lines do not count up (about 0.2x the
    CSV's size for adults' mix
    of whole numbers and categories, 0.6x for numbers printed with 10 digits); it is removed by
    :meth:`CsvScan.close`, when the scan is collected, at the interpreter's exit, and at once
    when pass one fails or is interrupted. With ``spill_dir=False``, or when the folder has
    less free space than twice the blocks' estimated size in memory, or a write to it fails,
    nothing past the budget is kept: pass two reads the file again (a note says so unless
    ``spill_dir=False``).
    ``max_bytes`` defaults to None here (no size limit: the file is never held whole).
    ``names`` names the columns as in ``read_csv``.
    Raises the same located :class:`~rwtool.data.DataError` subclasses as ``read_csv``.
    """
    policy = _check_options(task, missing, max_categories, handle_unknown)
    src = open_source(path, max_bytes, None)
    dialect = sniff_csv(src, encoding=encoding, delimiter=delimiter, decimal=decimal,
                        header=header, na_values=na_values)
    dialect, notes = check_guess(src, dialect) if encoding is None else (dialect, [])
    notes += preamble_note(dialect)
    made: list[_Kept] = []      # each pass one's kept blocks: dropped at once if the scan fails
    args = (target, features, ignore, categorical, numeric, na_values, policy, block_bytes,
            max_distinct, names, keep_bytes, spill_dir, made)
    try:
        try:
            table, n_rec, n_fit, tname, feats, cat, num, kept = _pass_one(src, dialect, *args)
        except _BadUTF8 as bad:
            if encoding is not None:
                raise bad.error(dialect.encoding, src) from None
            dialect, note = legacy_dialect(src, dialect, bad)
            notes.append(note)
            table, n_rec, n_fit, tname, feats, cat, num, kept = _pass_one(src, dialect, *args)
        if n_rec == 0:
            _require_rows(Table(src.name, dialect, table.names, np.empty(0, np.int64), {}, []))
        notes += [excel_note(t.col.name, t.n_excel, t.excel_first, t.excel_texts)
                  for _, t in sorted(table.summary.text.items()) if t.n_excel]
        if tname is not None:
            tcol = table.col(tname)
            n_miss = int(tcol.counts(ALL)[2])
            if n_miss and policy == "error":
                raise MissingValueError(f"missing target value ({n_miss} row(s))",
                                        file=src.name, column=tname, fix=TARGET_POLICY_FIX)
            if n_miss:
                notes.append(f"dropped {n_miss} row(s) with a missing target")
        tspec = None if tname is None else _fit_target(table, tname, task, FIT)
        specs = _fit_columns(table, feats, cat, num, policy, max_categories, FIT)
        notes += table.notes + [format_note(specs[i])
                                for i in np.flatnonzero(specs.layout()[3])]
        if kept.note is not None:
            notes.append(kept.note)
        pre = Preprocessing(specs, tspec, policy, na_values, max_abs, handle_unknown,
                            dialect.header, table.names)
        scan = CsvScan(pre, dialect, n_fit, n_rec, notes=notes, source=src, _kept=kept)
        _SCANS[id(pre)] = scan
        table = tcol = None     # the summaries (about 100 bytes a column) go before pass two
        release_freed()
        if moments:
            _moments(src, scan, block_bytes)
            release_freed()
        return scan
    except BaseException:
        # a failed or interrupted scan removes its spill file now, not when the traceback's
        # frames go
        for k in made:
            k.drop()
        raise


def _pass_one(src, *args):
    try:
        out = _summarise(src, *args)
        summary = out[0].summary
        if summary is not None and len(summary.uncounted(args[7].startswith("impute"))):
            out[-1].drop()
            out = summary = None          # free the first summaries before the second
            release_freed()
            out = _summarise(src, *args, count_all=True)
        return out
    except MemoryError:
        raise out_of_memory(src.name) from None


@gc_paused()
def _summarise(src, dialect, target, features, ignore, categorical, numeric, na_values, policy,
               block_bytes, max_distinct, names=None, keep_bytes=0, spill_dir=None, made=None,
               count_all=False):
    na = frozenset(na_values)
    fast = fast_cast_ok(na)
    table = summary = None
    tname = None
    n_rec = n_fit = 0
    roles = {}
    kept = _Kept(src, keep_bytes, block_bytes, dialect, spill_dir)
    if made is not None:
        made.append(kept)

    def wanted(all_names):        # resolve the roles on the header: type only those columns
        t = _StreamTable(src.name, dialect, all_names)
        roles["r"] = (t,) + _roles(t, target, features, ignore, categorical, numeric)
        roles["keep"] = _typed(t, roles["r"][2], roles["r"][1])
        return select(all_names, roles["keep"])      # by position: Names stay Names

    plan = typed_plan(dialect, na, fast)
    given: list[np.ndarray] = []      # the matrix the plan parsed this block's numbers into

    def block_out(rows):
        given.append(np.empty((len(summary.keep), rows)))
        return given[-1]

    for block in iter_blocks(src, dialect, block_bytes=block_bytes, names=names,
                             usecols=wanted, plan=plan):
        out = given.pop() if given else None
        if out is not None and out.shape[1] != len(block.lines):
            out = None             # the block was split another way after all
        if table is None:
            table, tname, feats, cat, num = roles["r"]
            # the block's own array of them where it has one (the same positions)
            keep = (block.cells.columns() if isinstance(block.cells, ColumnCells)
                    else roles["keep"])
            del roles["keep"]
            jt = None if tname is None else table.position(tname)
            counted = None
            if not count_all and policy != "impute-most-frequent":
                at = np.union1d(column_positions(table.names, sorted(cat)),
                                [] if jt is None else [jt]).astype(np.int64)
                counted = np.isin(keep, at)
            summary = table.summary = _Summary(table.names, keep, _MAX_VOCAB, fast, max_distinct,
                                               counted, sums=policy == "impute-mean")
            known = KnownTexts(_MAX_VOCAB)
            kept.texts = lambda kk: summary.column_of(int(summary.keep[kk])).vocab
            table.spellings = partial(number_spellings, src, dialect, na,
                                      block_bytes=block_bytes, names=names)
            if plan is not None:
                # the numbers of the next blocks parsed straight into their typed block's
                # matrix, as read_csv parses them into its table's (no copy, no second array)
                plan.out = block_out
        n = len(block.lines)
        if not n:
            kept.drop()          # pass two yields an empty chunk here: it reads the file
            continue
        # a column of categories with no number leaves its row of values unwritten (as
        # read_csv's typing does): NaN written and read back for nothing
        tb = type_block(block, summary.keep, dialect.decimal, na, fast, summary.column_of,
                        out, fill=False, known=known, count=True)
        out = None
        block.cells = {}        # typed: its text goes before the summaries are taken
        fit = (np.ones(n, bool) if tname is None else
               tb.codes_of(int(np.searchsorted(summary.keep, jt))) != -2)
        narrow = summary.add(tb, block.lines, fit)
        kept.add(block, tb, narrow)
        del tb
        n_rec += n
        n_fit += int(fit.sum())
    if summary is not None:
        kept.finish(table.names, summary.keep, summary, fast)
    return table, n_rec, n_fit, tname, feats, cat, num, kept


def _typed(table, feats, tname) -> np.ndarray:
    """The sorted positions of the features and the target in the table's names."""
    keep = column_positions(table.names, feats)
    if tname is None:
        return keep
    j = table.position(tname)
    at = int(np.searchsorted(keep, j))
    return keep if at < len(keep) and keep[at] == j else np.insert(keep, at, j)


def iter_csv(path, preprocessing: Preprocessing | CsvScan, *, dialect: Dialect | None = None,
             require_target: bool = False, block_bytes: int = _STREAM_BLOCK_BYTES,
             max_bytes=None) -> Iterator[Dataset]:
    """Pass two: the file encoded by ``preprocessing``, one :class:`Dataset` per block.

    ``preprocessing``: a record, or the :class:`CsvScan` of this file (its record and its
    dialect; the blocks it kept, in memory or spilled, are then encoded without reading the
    file again, when the file is unchanged and ``dialect`` and ``block_bytes`` are the scan's:
    the same chunks). Given the record alone, the file is read again; when that record is a
    live scan's of this same file, the scan's in-memory blocks are let go of first (a later
    ``iter_csv(path, scan)`` reads the file too; a spill file is kept).
    ``dialect``: the one :func:`scan_csv` detected (``scan.dialect``), so both passes read
    the file alike; None detects it again (or takes the scan's). Columns are matched by name
    as in :meth:`Preprocessing.apply_csv`; ``y`` is read when the target column is present
    (it must be when ``require_target``). A chunk may be empty when every row of its block
    was dropped. Errors name the file line, as ``read_csv`` does.
    """
    scan = preprocessing if isinstance(preprocessing, CsvScan) else None
    pre = preprocessing if scan is None else scan.preprocessing
    src = open_source(path, max_bytes, None)
    if dialect is None:
        dialect = scan.dialect if scan is not None else sniff_csv(
            src, header=pre.header, na_values=pre.na_values)
    if scan is None:
        owner = _SCANS.get(id(pre))
        if (owner is not None and owner.preprocessing is pre and owner._kept is not None
                and owner._kept.in_memory() and owner._kept.same_source(src)):
            owner._kept.drop()
        owner = None
    kept = None if scan is None else scan._kept
    if kept is not None and kept.serves(src, dialect, block_bytes):
        yield from _served(pre, kept, src, dialect, require_target)
        return
    n_need = len(pre._inputs) + (pre.target is not None)

    def need(names):        # the columns to type: all, when the file's are the record's own
        if names is pre.file_columns and len(names) == n_need:     # (a wide file's Names:
            return None     # no list of the wanted names, no lookup of them)
        return pre._inputs + ([pre.target["name"]] if pre.target else [])

    na = frozenset(pre.na_values)
    fast = fast_cast_ok(na)
    names = pre.given_names
    checked = False
    try:
        for block in iter_blocks(src, dialect, usecols=need, block_bytes=block_bytes,
                                 names=names, like=pre.file_columns,
                                 plan=typed_plan(dialect, na, fast)):
            names = block.names
            if not checked:
                _check_columns(pre, names, src.name, dialect, require_target)
                has_target = pre.target is not None and pre.target["name"] in names
                checked = True
            cols = (block.cells.columns() if isinstance(block.cells, ColumnCells)
                    else sorted(block.cells))
            builder = TableBuilder(names, cols, _MAX_VOCAB, fast)
            builder.add(block, dialect.decimal, na)
            block.cells = {}
            table = builder.table(src.name, dialect, block.lines, [], None)
            yield pre._encode(table, np.arange(len(block.lines)), with_target=has_target,
                              allow_empty=True)
    except _BadUTF8 as bad:
        raise bad.error(dialect.encoding, src,
                        ("pass the dialect scan_csv detected (dialect=scan.dialect)", [])
                        ) from None
    except MemoryError:
        raise out_of_memory(src.name) from None


def _served(pre, kept, src, dialect, require_target) -> Iterator[Dataset]:
    """:func:`iter_csv`'s chunks from the blocks pass one kept."""
    _check_columns(pre, kept.names, src.name, dialect, require_target)
    has_target = pre.target is not None and pre.target["name"] in kept.names
    try:
        for table in kept.tables(src.name, dialect):
            yield pre._encode(table, np.arange(table.n_rows), with_target=has_target,
                              allow_empty=True)
    except MemoryError:
        raise out_of_memory(src.name) from None


def _check_columns(pre, names, path, dialect, require_target):
    missing = absent(names, pre._inputs)
    if missing:
        raise MissingColumnError(
            f"the record needs column(s) {', '.join(map(repr, missing))}, absent from this "
            f"file", file=path, row=1 if dialect.header else None, column=missing[0],
            hint=f"the file's columns are: {', '.join(names)}")
    if require_target and (pre.target is None or pre.target["name"] not in names):
        name = None if pre.target is None else pre.target["name"]
        raise MissingColumnError("the target column is absent", file=path, column=name,
                                 hint=f"the file's columns are: {', '.join(names)}")


def _moments(src, scan: CsvScan, block_bytes: int) -> None:
    """Mean and standard deviation of each encoded column (Chan et al.'s pairwise update)."""
    n = 0
    mean = m2 = None
    for chunk in iter_csv(src, scan, block_bytes=block_bytes):
        k = chunk.n_samples
        if not k:
            continue
        cm = chunk.X.mean(axis=0)
        c2 = ((chunk.X - cm) ** 2).sum(axis=0)
        if mean is None:
            n, mean, m2 = k, cm, c2
            continue
        delta = cm - mean
        tot = n + k
        mean = mean + delta * (k / tot)
        m2 = m2 + c2 + delta ** 2 * (n * k / tot)
        n = tot
    if mean is not None:
        scan.mean, scan.std = mean, np.sqrt(m2 / n)
        scan.n_rows = n
