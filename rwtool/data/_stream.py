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
    for chunk in iter_csv("big.csv", scan.preprocessing, dialect=scan.dialect):
        est.partial_fit(chunk.X, chunk.y, classes=scan.classes)

Exact for: column kinds, categories, classes, counts, the mean imputation. Bounded: a column
keeps at most ``max_distinct`` distinct numbers (100,000) for the categories of a numeric column
declared categorical, the classes of a numeric target and the most-frequent imputation; past
that the column is refused if categorical (too many categories to one-hot anyway) and the mode
is taken over the values seen first. This module must not fit models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from ._dialect import NA_VALUES, Dialect, Source, open_source, sniff_csv
from ._read import (_STREAM_BLOCK_BYTES, Column, Table, _BadUTF8, add_block, canon,
                    cast_block, fast_cast_ok, iter_blocks, legacy_dialect, out_of_memory,
                    type_cells,
                    check_guess, excel_note, shows_decimal_point, preamble_note)
from ._errors import MissingColumnError, MissingValueError
from ._dataset import Dataset
from ._encoding import (_DEFAULT_MAX_ABS, Preprocessing, _fit_columns, _fit_target, format_note,
                        _require_rows)
from ._options import TARGET_POLICY_FIX, _check_options, _roles

__all__ = ["CsvScan", "scan_csv", "iter_csv"]

_MAX_DISTINCT = 100_000
ALL, FIT = "all", "fit"        # row sets of a streamed column: every row, rows with a target


class _StreamColumn:
    """Running summary of one column over the blocks, answering what the record fitting asks
    a parsed :class:`~rwtool.data._read.Column` (``rows`` is ALL or FIT instead of indices)."""

    def __init__(self, name, index, max_vocab, fast, max_distinct):
        self.name, self.index = name, index
        self._col = Column(name, index, max_vocab, fast)     # interns the text cells
        self.max_distinct = max_distinct
        self.n = {ALL: np.zeros(3, np.int64), FIT: np.zeros(3, np.int64)}
        self.text = {ALL: np.zeros(0, np.int64), FIT: np.zeros(0, np.int64)}
        self.nums = {ALL: {}, FIT: {}}
        self.overflow = {ALL: False, FIT: False}
        self.sum = 0.0
        self.n_finite = 0
        self.max_abs = {ALL: 0.0, FIT: 0.0}
        self.first_txt = {ALL: None, FIT: None}
        self.first_inf = {ALL: None, FIT: None}
        self.marks: set[str] = set()
        self.fraction = False
        self.n_excel = 0
        self.excel_first: int | None = None
        self.excel_texts: set[str] = set()

    @property
    def n_distinct_text(self):
        return self._col.n_distinct_text

    @property
    def vocab(self):
        return self._col.vocab

    def add(self, vals, codes, seen, lines, fit_mask):
        """Count a block's typed cells (:meth:`type`) into the summaries of every row and of
        the rows with a target (``fit_mask``)."""
        self.marks |= seen.marks
        if len(seen.error_rows):
            if self.excel_first is None:
                self.excel_first = int(lines[seen.error_rows[0]])
            self.n_excel += len(seen.error_rows)
            self.excel_texts.update(seen.error_texts)
        for key, m in ((ALL, None), (FIT, fit_mask)):
            c = codes if m is None else codes[m]
            ln = lines if m is None else lines[m]
            t = c[c >= 0]
            if len(t):
                bc = np.bincount(t, minlength=len(self.vocab))
                if len(self.text[key]) < len(bc):
                    self.text[key] = np.concatenate(
                        [self.text[key], np.zeros(len(bc) - len(self.text[key]), np.int64)])
                self.text[key][:len(bc)] += bc
                if self.first_txt[key] is None:
                    i = int(np.flatnonzero(c >= 0)[0])
                    self.first_txt[key] = (int(ln[i]), self.vocab[int(c[i])])
        add_numbers([self], vals[None], codes[None], lines, fit_mask)

    def type(self, cells, decimal, na):
        """(values, codes, what else was seen) of a block's cells, their text interned in
        this column."""
        return type_cells(cells, decimal, na, self._col.fast, self._col._intern)

    # -- the questions rwtool.data._encoding asks --------------------------------------------------
    @staticmethod
    def _key(rows):
        return rows if rows in (ALL, FIT) else ALL

    def counts(self, rows=ALL):
        n = self.n[self._key(rows)]
        return int(n[0]), int(n[1]), int(n[2])

    def inferred_kind(self, rows=ALL):
        n_num, n_text, _ = self.counts(rows)
        if n_num == 0 and n_text == 0:
            return "empty"
        return "numeric" if n_num > n_text else "categorical"

    def category_counts(self, rows=ALL):
        key = self._key(rows)
        out = {}
        for k, cnt in enumerate(self.text[key].tolist()):
            if cnt:
                label = self.vocab[k]
                out[label] = out.get(label, 0) + cnt
        for x, cnt in self.nums[key].items():
            label = canon(x)
            out[label] = out.get(label, 0) + cnt
        if self.overflow[key]:      # more distinct numbers than kept: too many to one-hot
            out.update({f"<number {i}>": 1 for i in range(self.max_distinct)})
        return out

    def decimal_marks(self, decimal):
        if decimal == ",":
            return set(self.marks)
        return {"."} if self.fraction else set()

    def unique_numbers(self, rows=ALL):
        return np.array(sorted(self.nums[self._key(rows)]), dtype=np.float64)

    def first_text(self, rows=ALL):
        return self.first_txt[self._key(rows)]

    def first_nonfinite(self, rows=ALL):
        return self.first_inf[self._key(rows)]

    def max_magnitude(self, rows=ALL):
        return self.max_abs[self._key(rows)]

    def numeric_fill(self, policy, rows=FIT):
        if self.first_inf[FIT] is not None:
            return None
        if policy == "impute-mean":
            return self.sum / self.n_finite if self.n_finite else float("nan")
        d = self.nums[FIT]
        if not d:
            return None
        best = max(d.values())
        return float(min(x for x, c in d.items() if c == best))


def add_numbers(cols, V, C, lines, fit):
    """Count the cells of a block's columns ``cols`` (values ``V`` and codes ``C``, one row of
    each per column) into their summaries: cell counts, first infinite value, largest
    magnitude, decimal point, sum and distinct numbers. Vectorised over the columns, so a
    block of few rows and many columns costs per cell, not per column."""
    for key, m in ((ALL, None), (FIT, fit)):
        v = V if m is None else V[:, m]
        c = C if m is None else C[:, m]
        ln = lines if m is None else lines[m]
        num = c == -1
        counts = np.stack([num.sum(1), (c >= 0).sum(1), (c == -2).sum(1)], axis=1)
        x = np.where(num, v, np.nan)            # the numbers; NaN elsewhere
        fin = np.isfinite(x)
        inf = num & ~fin
        has_inf = inf.any(1)
        first_inf = np.argmax(inf, axis=1)
        top = np.max(np.where(fin, np.abs(x), 0.0), axis=1, initial=0.0)
        has_fin = fin.any(1)
        point = shows_decimal_point(x, axis=1) if key == ALL else None
        if key == FIT:       # one column: summed as before, to the same last bit
            sums = ([np.sum(x[0][fin[0]])] if len(cols) == 1 else np.where(fin, x, 0.0).sum(1))
            n_fin = fin.sum(1)
        # distinct numbers and their counts, by runs of each sorted row (NaN sorts last), for
        # the columns that have not overflowed max_distinct (the others keep no more)
        live = np.flatnonzero([not col.overflow[key] for col in cols])
        srt = np.sort(x[live], axis=1)
        valid = np.arange(srt.shape[1])[None, :] < counts[live, :1]
        start = valid.copy()
        start[:, 1:] &= srt[:, 1:] != srt[:, :-1]
        ci, pos = np.nonzero(start)
        last = np.append(ci[1:] != ci[:-1], True)          # the last run of its row
        runs = np.where(last, counts[live[ci], 0], np.append(pos[1:], 0)) - pos
        vals_u = srt[ci, pos]
        ci = live[ci]
        for k, col in enumerate(cols):
            col.n[key] += counts[k]
            if has_inf[k] and col.first_inf[key] is None:
                col.first_inf[key] = int(ln[first_inf[k]])
            if has_fin[k]:
                col.max_abs[key] = max(col.max_abs[key], float(top[k]))
                if key == ALL and point[k]:
                    col.fraction = True
            if key == FIT:
                col.sum += float(sums[k])
                col.n_finite += int(n_fin[k])
        for k, a, b in zip(ci.tolist(), vals_u.tolist(), runs.tolist()):
            d = cols[k].nums[key]
            d[a] = d.get(a, 0) + b
        for col in cols:
            if len(col.nums[key]) > col.max_distinct:
                col.overflow[key] = True


class _StreamTable:
    """The few Table attributes the record fitting reads."""

    def __init__(self, path, dialect, names, columns):
        self.path, self.dialect, self.names, self.columns = path, dialect, names, columns
        self._index = {n: j for j, n in enumerate(names)}
        self.notes: list[str] = []

    def col(self, name):
        return self.columns[self._index[name]]


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
    once, then held in memory), e.g. ``iter_csv(scan.source, scan.preprocessing, ...)``.
    """

    preprocessing: Preprocessing
    dialect: Dialect
    n_rows: int
    n_records: int
    mean: np.ndarray | None = None
    std: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    source: Source | None = field(default=None, repr=False)

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
             max_distinct: int = _MAX_DISTINCT, max_bytes=None, names=None) -> CsvScan:
    """Pass one over a CSV file too large for memory: learn the encoding record.

    The options are those of :func:`rwtool.data.read_csv` (the record equals the one
    ``read_csv`` learns on the same file), plus ``moments`` (a second read computes the mean
    and standard deviation of each encoded column), ``block_bytes`` (bytes read at a time:
    memory is a small multiple of it) and ``max_distinct`` (see the module docstring).
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
    args = (target, features, ignore, categorical, numeric, na_values, policy, block_bytes,
            max_distinct, names)
    try:
        table, n_rec, n_fit, tname, feats, cat, num = _pass_one(src, dialect, *args)
    except _BadUTF8 as bad:
        if encoding is not None:
            raise bad.error(dialect.encoding, src) from None
        dialect, note = legacy_dialect(src, dialect, bad)
        notes.append(note)
        table, n_rec, n_fit, tname, feats, cat, num = _pass_one(src, dialect, *args)
    if n_rec == 0:
        _require_rows(Table(src.name, dialect, table.names, np.empty(0, np.int64), {}, []))
    notes += [excel_note(c.name, c.n_excel, c.excel_first, c.excel_texts)
              for c in table.columns.values() if c.n_excel]
    if tname is not None:
        tcol = table.col(tname)
        n_miss = int(tcol.counts(ALL)[2])
        if n_miss and policy == "error":
            raise MissingValueError(f"missing target value ({n_miss} row(s))", file=src.name,
                                    column=tname,
                                    fix=TARGET_POLICY_FIX)
        if n_miss:
            notes.append(f"dropped {n_miss} row(s) with a missing target")
    tspec = None if tname is None else _fit_target(table, tname, task, FIT)
    specs = _fit_columns(table, feats, cat, num, policy, max_categories, FIT)
    notes += table.notes + [format_note(c) for c in specs if c.get("format")]
    pre = Preprocessing(specs, tspec, policy, na_values, max_abs, handle_unknown,
                        dialect.header, table.names)
    scan = CsvScan(pre, dialect, n_fit, n_rec, notes=notes, source=src)
    if moments:
        _moments(src, scan, block_bytes)
    return scan


def _pass_one(src, *args):
    try:
        return _summarise(src, *args)
    except MemoryError:
        raise out_of_memory(src.name) from None


def _summarise(src, dialect, target, features, ignore, categorical, numeric, na_values, policy,
               block_bytes, max_distinct, names=None):
    na = frozenset(na_values)
    fast = fast_cast_ok(na)
    cols: dict[int, _StreamColumn] = {}
    table = None
    tname = None
    n_rec = n_fit = 0
    roles = {}

    def wanted(all_names):        # resolve the roles on the header: type only those columns
        t = _StreamTable(src.name, dialect, all_names, {})
        roles["r"] = (t,) + _roles(t, target, features, ignore, categorical, numeric)
        return roles["r"][2] + ([roles["r"][1]] if roles["r"][1] else [])

    for block in iter_blocks(src, dialect, block_bytes=block_bytes, names=names,
                             usecols=wanted):
        if table is None:
            table, tname, feats, cat, num = roles["r"]
            idx = table._index
            cols = {idx[n]: _StreamColumn(n, idx[n], 10_000, fast, max_distinct)
                    for n in feats + ([tname] if tname else [])}
            table.columns = cols
        n = len(block.lines)
        if not n:
            continue
        # the target is typed first (its missing cells say which rows count) and only once;
        # the other columns one at a time, so a block's typed cells are never all held at once
        jt = None if tname is None else table._index[tname]
        typed_t = None if jt is None else cols[jt].type(block.cells[jt], dialect.decimal, na)
        fit = np.ones(n, bool) if jt is None else typed_t[1] != -2
        rest = [j for j in cols if j != jt]
        V = cast_block(block, rest, dialect.decimal, fast)
        if V is not None:        # a wide numeric block: summarised as one matrix
            add_numbers([cols[j] for j in rest], V,
                        np.where(np.isnan(V), -2, -1).astype(np.int32), block.lines, fit)
            rest = []
        if jt is not None:
            cols[jt].add(*typed_t, block.lines, fit)
        for j in rest:
            cols[j].add(*cols[j].type(block.cells[j], dialect.decimal, na), block.lines, fit)
        n_rec += n
        n_fit += int(fit.sum())
    return table, n_rec, n_fit, tname, feats, cat, num


def iter_csv(path, preprocessing: Preprocessing, *, dialect: Dialect | None = None,
             require_target: bool = False, block_bytes: int = _STREAM_BLOCK_BYTES,
             max_bytes=None) -> Iterator[Dataset]:
    """Pass two: the file encoded by ``preprocessing``, one :class:`Dataset` per block.

    ``dialect``: the one :func:`scan_csv` detected (``scan.dialect``), so both passes read
    the file alike; None detects it again. Columns are matched by name as in
    :meth:`Preprocessing.apply_csv`; ``y`` is read when the target column is present (it must
    be when ``require_target``). A chunk may be empty when every row of its block was dropped.
    Errors name the file line, as ``read_csv`` does.
    """
    pre = preprocessing
    src = open_source(path, max_bytes, None)
    if dialect is None:
        dialect = sniff_csv(src, header=pre.header, na_values=pre.na_values)
    need = pre.input_columns + ([pre.target["name"]] if pre.target else [])
    na = frozenset(pre.na_values)
    fast = fast_cast_ok(na)
    names = pre.given_names
    checked = False
    try:
        for block in iter_blocks(src, dialect, usecols=need, block_bytes=block_bytes,
                                 names=names):
            names = block.names
            if not checked:
                _check_columns(pre, names, src.name, dialect, require_target)
                has_target = pre.target is not None and pre.target["name"] in names
                checked = True
            cols = {j: Column(names[j], j, 10_000, fast) for j in block.cells}
            add_block(cols, block, dialect.decimal, na, fast)
            for c in cols.values():
                c.finish()
            table = Table(src.name, dialect, names, block.lines, cols, [])
            yield pre._encode(table, np.arange(len(block.lines)), with_target=has_target,
                              allow_empty=True)
    except _BadUTF8 as bad:
        raise bad.error(dialect.encoding, src,
                        ("pass the dialect scan_csv detected (dialect=scan.dialect)", [])
                        ) from None
    except MemoryError:
        raise out_of_memory(src.name) from None


def _check_columns(pre, names, path, dialect, require_target):
    present = set(names)
    missing = [c for c in pre.input_columns if c not in present]
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
    for chunk in iter_csv(src, scan.preprocessing, dialect=scan.dialect,
                          block_bytes=block_bytes):
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
