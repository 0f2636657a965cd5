"""CSV in, numeric X and y out, with a replayable record of every encoding step.

``read_csv`` turns a CSV file into a :class:`Dataset` (float64 ``X``, labels or values ``y``,
encoded column names) and a :class:`Preprocessing` record that re-applies the same encoding to a
new file (``Preprocessing.apply_csv``) or to rows typed in a GUI (``transform_rows``);
``preview_csv`` gives the GUI the first rows, the detected dialect and per-column types and
missing counts; ``train_test_csv`` makes a holdout split (or reads a separate test file) with the
statistics learned on the training rows only. Every bad input raises a :class:`DataError`
subclass carrying ``file``, ``row`` (the 1-based line of the record in the file, the header
being line 1) and ``column``, so a caller can show it without a traceback.

This module reads and encodes data; it must not scale features (the estimators own
standardisation), learn models, or import pandas or scikit-learn.
"""

from __future__ import annotations

import codecs
import csv
import math
import os
import re
from array import array
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

__all__ = [
    "read_csv", "preview_csv", "train_test_csv", "sniff_csv", "split_indices",
    "Dataset", "Preprocessing", "Dialect", "CsvPreview", "ColumnSummary",
    "DataError", "EmptyFileError", "HeaderOnlyError", "RaggedRowError", "NonNumericError",
    "NonFiniteError", "MissingValueError", "AllMissingError", "SingleClassError",
    "DuplicateColumnError", "FileTooLargeError", "HighCardinalityError",
    "UnseenCategoryError", "MissingColumnError", "ColumnNotFoundError", "EncodingError",
    "TargetError", "NA_VALUES", "MISSING_POLICIES", "TASKS", "samples_dir", "list_samples",
]

#: cell texts read as a missing value (after stripping spaces); "?" is the UCI convention
NA_VALUES = ("", "NA", "N/A", "n/a", "na", "NaN", "nan", "NAN", "null", "NULL", "Null",
             "None", "none", "?", "#N/A")
#: what to do with missing feature values
MISSING_POLICIES = ("error", "drop-rows", "impute-mean", "impute-most-frequent")
#: learning tasks; "classification" means binary or multiclass as the labels say
TASKS = ("auto", "binary", "multiclass", "classification", "regression")

_DELIMITERS = ("\t", ";", ",")          # preference order when several split consistently
_SNIFF_BYTES = 1 << 16
_CHUNK_ROWS = 8192
_DEFAULT_MAX_BYTES = 1 << 30
_DEFAULT_MAX_ABS = 1e100
_INTEGER_CLASSES_MAX = 10               # integer targets with at most this many values: classes


# ============================================================================ errors

class DataError(ValueError):
    """A problem with the input data, located in the file.

    Attributes ``file``, ``row`` (1-based line number of the record, header = line 1, or None),
    ``column`` (name, or None) and ``hint`` (how to fix it) let a GUI show each part apart;
    ``str(err)`` is one line: "file, row 12, column 'age': what is wrong; hint".
    """

    def __init__(self, message: str, *, file=None, row: int | None = None,
                 column: str | None = None, hint: str | None = None):
        self.message, self.file, self.row, self.column, self.hint = (
            message, None if file is None else str(file), row, column, hint)
        super().__init__(self._text())

    def _text(self) -> str:
        where = []
        if self.file:
            where.append(os.path.basename(self.file))
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column is not None:
            where.append(f"column {self.column!r}")
        text = (", ".join(where) + ": " if where else "") + self.message
        return text + (f"; {self.hint}" if self.hint else "")

    def to_dict(self) -> dict:
        return {"error": type(self).__name__, "message": self.message, "file": self.file,
                "row": self.row, "column": self.column, "hint": self.hint, "text": str(self)}


class EmptyFileError(DataError):
    """The file holds no data at all."""


class HeaderOnlyError(DataError):
    """The file has a header line and no data rows."""


class RaggedRowError(DataError):
    """A row has more or fewer fields than the header."""


class NonNumericError(DataError):
    """Text in a column that holds numbers."""


class NonFiniteError(DataError):
    """An infinite value, or one too large to compute with (|x| > max_abs)."""


class MissingValueError(DataError):
    """Missing values under the ``missing="error"`` policy."""


class AllMissingError(DataError):
    """A column (or every row) has no usable value."""


class SingleClassError(DataError):
    """A classification target with fewer than two classes."""


class DuplicateColumnError(DataError):
    """Two header fields with the same name."""


class FileTooLargeError(DataError):
    """The file is larger than the ``max_bytes`` limit."""


class HighCardinalityError(DataError):
    """A text column with more categories than ``max_categories``."""


class UnseenCategoryError(DataError):
    """A category absent from the training data (when replaying the preprocessing)."""


class MissingColumnError(DataError):
    """A column the preprocessing needs is absent from the file."""


class ColumnNotFoundError(DataError):
    """A column named in a role (target, features, ignore...) does not exist."""


class EncodingError(DataError):
    """The bytes cannot be decoded with the chosen text encoding."""


class TargetError(DataError):
    """The target column does not fit the task (text for regression, three labels for binary)."""


# ============================================================================ dialect

@dataclass(frozen=True)
class Dialect:
    """How the file is written: text encoding, field delimiter, decimal mark, header line."""

    encoding: str = "utf-8"
    delimiter: str = ","
    decimal: str = "."
    header: bool = True
    quotechar: str = '"'

    def to_dict(self) -> dict:
        return {"encoding": self.encoding, "delimiter": self.delimiter, "decimal": self.decimal,
                "header": self.header, "quotechar": self.quotechar}

    def describe(self) -> str:
        names = {"\t": "tab", ";": "semicolon", ",": "comma"}
        return (f"{self.encoding}, {names.get(self.delimiter, repr(self.delimiter))}-delimited, "
                f"decimal {self.decimal!r}, {'with' if self.header else 'no'} header")


def _check_path(path, max_bytes, nrows):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise DataError("file not found", file=path, hint="check the path")
    if os.path.isdir(path):
        raise DataError("is a directory, not a CSV file", file=path)
    size = os.stat(path).st_size
    if size == 0:
        raise EmptyFileError("the file is empty (0 bytes)", file=path)
    if max_bytes is not None and nrows is None and size > max_bytes:
        raise FileTooLargeError(
            f"the file is {_human(size)}, above the max_bytes limit of {_human(max_bytes)} "
            f"(reading it needs about {_human(3 * size)} of memory)", file=path,
            hint="read the first rows only with nrows=..., or raise max_bytes (max_bytes=None: "
                 "no limit) on a machine with enough memory")
    return path, size


def _human(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} TB"


def _detect_encoding(raw: bytes, path) -> str:
    if raw.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if b"\x00" in raw:
        raise DataError("the file holds NUL bytes: it is a binary file, not a CSV text file",
                        file=path, hint="export the data as CSV text")
    try:
        codecs.getincrementaldecoder("utf-8")().decode(raw, final=False)
        return "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        raw.decode("cp1252")
        return "cp1252"          # Windows' superset of Latin-1 (what spreadsheets write)
    except UnicodeDecodeError:
        return "latin-1"


def _sample_records(text: str, delimiter: str, truncated: bool,
                    limit: int = 60) -> list[list[str]]:
    lines = text.splitlines(keepends=True)
    if truncated and len(lines) > 1:
        lines = lines[:-1]      # the sample ends mid-line (or mid quoted field)
    out = []
    try:
        for rec in csv.reader(lines, delimiter=delimiter, quotechar='"', strict=False):
            if rec and any(c.strip() for c in rec):
                out.append(rec)
            if len(out) >= limit:
                break
    except csv.Error:
        pass
    return out


def _detect_delimiter(text: str, truncated: bool) -> str:
    best, best_key = ",", None
    for rank, d in enumerate(_DELIMITERS):
        recs = _sample_records(text, d, truncated)
        if not recs:
            continue
        counts = [len(r) for r in recs]
        mode = max(set(counts), key=counts.count)
        if mode < 2:
            continue
        consistency = counts.count(mode) / len(counts)
        key = (consistency >= 0.999, consistency, -rank)
        if best_key is None or key > best_key:
            best, best_key = d, key
    return best


_DEC_COMMA = re.compile(r"^[+-]?\d+,\d+([eE][+-]?\d+)?$")
_DEC_DOT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+)([eE][+-]?\d+)?$")


def _detect_decimal(records: list[list[str]], delimiter: str) -> str:
    if delimiter == ",":
        return "."
    n_comma = n_dot = 0
    for rec in records:
        for cell in rec:
            c = cell.strip()
            if _DEC_COMMA.match(c):
                n_comma += 1
            elif _DEC_DOT.match(c):
                n_dot += 1
    return "," if n_comma > 0 and n_comma >= 4 * n_dot else "."


def _is_number(cell: str, decimal: str) -> bool:
    c = cell.strip()
    if decimal == ",":
        c = c.replace(",", ".")
    try:
        float(c)
    except ValueError:
        return False
    return c.lower() not in ("nan", "+nan", "-nan")


def _detect_header(records: list[list[str]], decimal: str, na: frozenset) -> bool:
    first, rest = records[0], records[1:]
    if not rest:
        return not any(_is_number(c, decimal) for c in first)
    for j, cell in enumerate(first):
        col = [r[j] for r in rest if j < len(r) and r[j].strip() not in na]
        if not col:
            continue
        numeric = sum(_is_number(c, decimal) for c in col)
        if (numeric * 2 > len(col) and cell.strip() not in na
                and not _is_number(cell, decimal)):
            return True
    cells = [c.strip() for c in first]
    if any(c in na or _is_number(c, decimal) for c in cells) or len(set(cells)) != len(cells):
        return False
    # An all-text file: a header names its columns, so its cells do not recur as values.
    return all(cells[j] not in {r[j].strip() for r in rest if j < len(r)}
               for j in range(len(cells)))


def sniff_csv(path, *, encoding=None, delimiter=None, decimal=None, header=None,
              na_values=NA_VALUES, max_bytes=_DEFAULT_MAX_BYTES, nrows=None) -> Dialect:
    """Detect the dialect of a CSV file; any argument given explicitly is kept as is.

    Encoding: UTF-8 (with or without BOM), UTF-16 with BOM, else Windows-1252/Latin-1.
    Delimiter: the one of tab, semicolon, comma that splits the first rows into a constant number
    (> 1) of fields (quotes respected). Decimal: "," when the delimiter is not a comma and the
    numbers look like "3,14". Header: the first row is a header when a column's first cell is
    text above numbers, or, in an all-text file, when no first-row cell recurs in its column.
    """
    path, _ = _check_path(path, max_bytes, nrows)
    with open(path, "rb") as fh:
        raw = fh.read(_SNIFF_BYTES)
    if encoding is None:
        encoding = _detect_encoding(raw, path)
    else:
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise EncodingError(f"unknown text encoding {encoding!r}", file=path,
                                hint="use e.g. 'utf-8' or 'latin-1'") from None
    truncated = len(raw) == _SNIFF_BYTES
    text = codecs.getincrementaldecoder(encoding)(errors="replace").decode(raw, final=False)
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip(" \t\r\n,;"):
        raise EmptyFileError("the file holds no data (only blank lines or delimiters)",
                             file=path)
    if delimiter is None:
        delimiter = _detect_delimiter(text, truncated)
    elif not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\"\r\n":
        raise DataError(f"delimiter must be one character other than a quote or newline, got "
                        f"{delimiter!r}", file=path)
    records = _sample_records(text, delimiter, truncated)
    if not records:      # one line cut by the sample limit: take its fields as they are
        records = [next(ln for ln in text.splitlines() if ln.strip()).split(delimiter)]
    if decimal is None:
        decimal = _detect_decimal(records, delimiter)
    elif decimal not in (".", ","):
        raise DataError(f"decimal must be '.' or ',', got {decimal!r}", file=path)
    if decimal == delimiter:
        raise DataError(f"the decimal mark and the delimiter are both {decimal!r}", file=path,
                        hint="numbers with a decimal comma need a ';' or tab delimiter")
    if header is None:
        header = _detect_header(records, decimal, frozenset(na_values))
    return Dialect(encoding=encoding, delimiter=delimiter, decimal=decimal, header=bool(header))


# ============================================================================ parsing

class _Column:
    """One parsed column: numbers, and codes saying which cells are text or missing.

    ``codes[i]`` is -1 for a number (``values[i]``), -2 for a missing cell, k >= 0 for the
    text ``vocab[k]``. Text is interned, so a column costs 12 bytes per row.
    """

    __slots__ = ("name", "index", "values", "codes", "vocab", "_lookup", "_vchunks",
                 "_cchunks", "max_vocab", "n_distinct_text", "fast")

    def __init__(self, name: str, index: int, max_vocab: int, fast: bool = True):
        # fast: no missing-value token reads as a number, so numpy may parse whole chunks
        self.name, self.index, self.max_vocab, self.fast = name, index, max_vocab, fast
        self.vocab: list[str] = []
        self._lookup: dict[str, int] = {}
        self._vchunks: list[np.ndarray] = []
        self._cchunks: list[np.ndarray] = []
        self.n_distinct_text = 0

    def add_chunk(self, cells: Sequence[str], decimal: str, na: frozenset) -> None:
        n = len(cells)
        if self.fast and not (self.vocab and cells and cells[0].strip() in self._lookup):
            try:   # a clean numeric chunk: float() mapped in C, no per-cell Python frame
                src = cells if decimal == "." else (c.replace(",", ".") for c in cells)
                vals = np.fromiter(map(float, src), dtype=np.float64, count=n)
                codes = np.where(np.isnan(vals), -2, -1).astype(np.int32)
                self._vchunks.append(vals)
                self._cchunks.append(codes)
                return
            except ValueError:
                pass
        vals = np.full(n, np.nan)
        codes = np.empty(n, dtype=np.int32)
        lookup, vocab = self._lookup, self.vocab
        for i, raw in enumerate(cells):
            c = raw.strip()
            if c in na:
                codes[i] = -2
                continue
            k = lookup.get(c)
            if k is not None:          # a known category: skip the failing float() call
                codes[i] = k
                continue
            try:
                v = float(c.replace(",", ".") if decimal == "," else c)
            except ValueError:
                self.n_distinct_text += 1
                if len(vocab) >= self.max_vocab:
                    k = self.max_vocab          # shared overflow slot (too many to one-hot)
                    if len(vocab) == self.max_vocab:
                        vocab.append("<other>")
                else:
                    k = len(vocab)
                    vocab.append(c)
                    lookup[c] = k
                codes[i] = k
                continue
            if math.isnan(v):
                codes[i] = -2
            else:
                codes[i] = -1
                vals[i] = v
        self._vchunks.append(vals)
        self._cchunks.append(codes)

    def finish(self) -> None:
        self.values = np.concatenate(self._vchunks) if self._vchunks else np.empty(0)
        self.codes = (np.concatenate(self._cchunks) if self._cchunks
                      else np.empty(0, dtype=np.int32))
        self._vchunks, self._cchunks = [], []

    # -- views used by the encoder -----------------------------------------------------------
    def counts(self, rows=None) -> tuple[int, int, int]:
        c = self.codes if rows is None else self.codes[rows]
        return int(np.sum(c == -1)), int(np.sum(c >= 0)), int(np.sum(c == -2))

    def inferred_kind(self, rows=None) -> str:
        n_num, n_text, _ = self.counts(rows)
        if n_num == 0 and n_text == 0:
            return "empty"
        return "numeric" if n_num > n_text else "categorical"

    def category_ids(self, categories: Mapping[str, int], rows) -> np.ndarray:
        """Per row: index of the cell's category, -1 when missing, -2 when unknown."""
        codes, values = self.codes[rows], self.values[rows]
        ids = np.full(len(codes), -1, dtype=np.int64)
        text = codes >= 0
        if text.any():
            vmap = np.array([categories.get(v, -2) for v in self.vocab] or [-2], dtype=np.int64)
            if len(self.vocab) > self.max_vocab:
                vmap[self.max_vocab] = -2
            ids[text] = vmap[codes[text]]
        num = codes == -1
        if num.any():
            u, inv = np.unique(values[num], return_inverse=True)
            umap = np.array([categories.get(_canon(x), -2) for x in u], dtype=np.int64)
            ids[num] = umap[inv]
        return ids

    def category_counts(self, rows) -> dict[str, int]:
        """Category label -> number of rows, for the non-missing cells of ``rows``."""
        codes, values = self.codes[rows], self.values[rows]
        out: dict[str, int] = {}
        text = codes[codes >= 0]
        if len(text):
            for k, cnt in enumerate(np.bincount(text, minlength=len(self.vocab))):
                if cnt:
                    out[self.vocab[k]] = out.get(self.vocab[k], 0) + int(cnt)
        num = values[codes == -1]
        if len(num):
            u, cnt = np.unique(num, return_counts=True)
            for x, c in zip(u, cnt):
                key = _canon(x)
                out[key] = out.get(key, 0) + int(c)
        return out


def _canon(v: float) -> str:
    """The category label of a number: "3" for 3.0, repr otherwise ("2.5", "inf")."""
    v = float(v)
    if math.isfinite(v) and v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


@dataclass
class _Table:
    path: str | None
    dialect: Dialect
    names: list[str]
    lines: np.ndarray                   # 1-based file line of each record
    columns: dict[int, _Column]
    head: list[list[str]]

    @property
    def n_rows(self) -> int:
        return len(self.lines)

    def col(self, name: str) -> _Column:
        return self.columns[self.names.index(name)]


def _make_names(header: list[str] | None, n: int, path) -> list[str]:
    if header is None:
        return [f"col{j + 1}" for j in range(n)]
    names = []
    for j, h in enumerate(header):
        h = h.strip()
        names.append(h if h else f"col{j + 1}")
    seen: dict[str, int] = {}
    for j, h in enumerate(names):
        if h in seen:
            raise DuplicateColumnError(
                f"duplicate column name {h!r} (fields {seen[h] + 1} and {j + 1} of the header)",
                file=path, row=1, column=h, hint="rename one of the columns")
        seen[h] = j
    return names


def _parse(path, dialect: Dialect, *, usecols=None, nrows=None, na_values=NA_VALUES,
           max_vocab=10_000, head_rows=0, fallback=True) -> _Table:
    """Stream the file once into compact columns (only ``usecols``: names, or all when None).

    ``fallback``: the encoding was detected from the first bytes only, so a decoding error
    further down re-reads the file as Latin-1 (which decodes every byte).
    """
    na = frozenset(na_values)
    try:
        return _parse_with(path, dialect, usecols, nrows, na, max_vocab, head_rows)
    except UnicodeDecodeError as exc:
        if fallback and dialect.encoding in ("utf-8", "cp1252"):
            # Detection saw only the start of the file: fall back to Latin-1, which decodes all.
            latin1 = Dialect("latin-1", dialect.delimiter, dialect.decimal, dialect.header)
            return _parse_with(path, latin1, usecols, nrows, na, max_vocab, head_rows)
        raise EncodingError(f"the bytes are not valid {dialect.encoding} ({exc.reason})",
                            file=path, hint="pass the right encoding, e.g. encoding='latin-1'"
                            ) from None


def _parse_with(path, dialect, usecols, nrows, na, max_vocab, head_rows) -> _Table:
    with open(path, "r", encoding=dialect.encoding, newline="") as fh:
        reader = csv.reader(fh, delimiter=dialect.delimiter, quotechar=dialect.quotechar,
                            strict=False)
        return _parse_records(reader, path, dialect, usecols, nrows, na, max_vocab, head_rows)


def _parse_records(reader, path, dialect, usecols, nrows, na, max_vocab, head_rows) -> _Table:
    names = None
    ncols = 0
    keep: list[int] = []
    columns: dict[int, _Column] = {}
    lines = array("q")
    head: list[list[str]] = []
    buf: list[list[str]] = []
    prev_end = 0
    n_read = 0

    def flush():
        if not buf:
            return
        for j in keep:
            columns[j].add_chunk([r[j] for r in buf], dialect.decimal, na)
        buf.clear()

    def record_iter():
        nonlocal prev_end
        while True:
            try:
                rec = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise DataError(f"the CSV structure is broken ({exc})", file=path,
                                row=reader.line_num,
                                hint="check the quotes: a quote opened and never closed "
                                     "swallows the rest of the file") from None
            start, prev_end = prev_end + 1, reader.line_num
            if not rec or not any(c.strip() for c in rec):
                continue      # blank lines and rows of bare delimiters are not records
            yield start, rec

    for line, rec in record_iter():
        if names is None:
            if rec and rec[0].startswith("\ufeff"):
                rec[0] = rec[0][1:]
            ncols = len(rec)
            names = _make_names(rec if dialect.header else None, ncols, path)
            if usecols is None:
                keep = list(range(ncols))
            else:
                keep = sorted({names.index(c) for c in usecols if c in names})
            fast = not any(_is_number(t, ".") or _is_number(t, ",") for t in na)
            columns = {j: _Column(names[j], j, max_vocab, fast) for j in keep}
            if dialect.header:
                continue
        if len(rec) != ncols:
            if len(rec) == ncols + 1 and not rec[-1].strip():
                rec = rec[:-1]     # a trailing delimiter is an export habit, not a new field
            else:
                raise RaggedRowError(
                    f"this row has {len(rec)} field(s) but the "
                    f"{'header' if dialect.header else 'first row'} has {ncols}", file=path,
                    row=line, hint=f"check the delimiter (read as {dialect.delimiter!r}) and "
                                   f"that text holding it is quoted")
        if len(head) < head_rows:
            head.append(list(rec))
        lines.append(line)
        buf.append(rec)
        n_read += 1
        if len(buf) >= _CHUNK_ROWS:
            flush()
        if nrows is not None and n_read >= nrows:
            break
    flush()
    if names is None:
        raise EmptyFileError("the file holds no data (only blank lines)", file=path)
    for c in columns.values():
        c.finish()
    return _Table(path, dialect, names, np.frombuffer(lines, dtype=np.int64).copy()
                  if len(lines) else np.empty(0, dtype=np.int64), columns, head)


def _table_from_rows(names: list[str], rows: Sequence[Sequence[str]], na, decimal) -> _Table:
    columns = {j: _Column(n, j, 10_000, False) for j, n in enumerate(names)}
    for j, c in columns.items():
        c.add_chunk([r[j] for r in rows], decimal, frozenset(na))
        c.finish()
    return _Table(None, Dialect(decimal=decimal), list(names),
                  np.arange(1, len(rows) + 1, dtype=np.int64), columns, [])


# ============================================================================ preview

@dataclass
class ColumnSummary:
    """What the GUI shows for one column before any role is chosen."""

    name: str
    index: int
    kind: str                 # "numeric", "categorical" or "empty"
    n_missing: int
    n_numeric: int
    n_text: int
    n_distinct: int           # numbers and text together (text counted up to max_vocab)
    min: float | None
    max: float | None
    examples: list[str]       # a few categories (categorical) or non-numeric cells (numeric)

    def to_dict(self) -> dict:
        return dict(vars(self))


@dataclass
class CsvPreview:
    """First rows, dialect and per-column summary of a CSV file (see :func:`preview_csv`)."""

    path: str
    dialect: Dialect
    names: list[str]
    head: list[list[str]]
    n_rows: int
    columns: list[ColumnSummary]
    complete: bool            # False when only the first ``nrows`` rows were scanned
    tasks: dict[str, str] = field(default_factory=dict, repr=False)

    def column(self, name: str) -> ColumnSummary:
        for c in self.columns:
            if c.name == name:
                return c
        raise ColumnNotFoundError(f"no column named {name!r}", file=self.path, column=name,
                                  hint=f"columns are: {', '.join(self.names)}")

    def suggested_target(self) -> str:
        """The last column that is not empty (the usual place for the label)."""
        for c in reversed(self.columns):
            if c.kind != "empty":
                return c.name
        return self.names[-1]

    def infer_task(self, target: str) -> str:
        """"binary", "multiclass" or "regression" for ``target`` (as :func:`read_csv` would)."""
        self.column(target)
        return self.tasks[target]

    def to_dict(self) -> dict:
        return {"path": self.path, "dialect": self.dialect.to_dict(), "names": self.names,
                "head": self.head, "n_rows": self.n_rows, "complete": self.complete,
                "columns": [c.to_dict() for c in self.columns], "tasks": dict(self.tasks),
                "suggested_target": self.suggested_target()}


def preview_csv(path, *, n_head: int = 20, nrows: int | None = None, encoding=None,
                delimiter=None, decimal=None, header=None, na_values=NA_VALUES,
                max_bytes=_DEFAULT_MAX_BYTES) -> CsvPreview:
    """Dialect, first ``n_head`` rows (as text) and a summary of every column.

    The whole file is scanned (or its first ``nrows`` rows) so missing counts and types are
    exact; structural errors (ragged rows, broken quotes) raise as in :func:`read_csv`.
    """
    dialect = sniff_csv(path, encoding=encoding, delimiter=delimiter, decimal=decimal,
                        header=header, na_values=na_values, max_bytes=max_bytes, nrows=nrows)
    table = _parse(path, dialect, nrows=nrows, na_values=na_values, head_rows=n_head,
                   fallback=encoding is None)
    cols, tasks = [], {}
    for j, name in enumerate(table.names):
        c = table.columns[j]
        n_num, n_text, n_miss = c.counts()
        kind = c.inferred_kind()
        nums = c.values[c.codes == -1]
        finite = nums[np.isfinite(nums)]
        n_distinct = len(np.unique(nums)) + c.n_distinct_text
        if kind == "numeric":
            examples = c.vocab[:5]
        else:
            counts = c.category_counts(slice(None))
            examples = sorted(counts, key=counts.get, reverse=True)[:5]
        cols.append(ColumnSummary(name, j, kind, n_miss, n_num, n_text, n_distinct,
                                  float(finite.min()) if len(finite) else None,
                                  float(finite.max()) if len(finite) else None, examples))
        tasks[name] = _infer_task(c, kind, np.flatnonzero(c.codes != -2))
    return CsvPreview(os.fspath(path), table.dialect, table.names, table.head, table.n_rows,
                      cols, nrows is None or table.n_rows < nrows, tasks)


# ============================================================================ the record

def _infer_task(col: _Column, kind: str, rows) -> str:
    if kind == "categorical":
        n = len(col.category_counts(rows))
        return "binary" if n <= 2 else "multiclass"
    v = col.values[rows]
    v = v[np.isfinite(v)]
    u = np.unique(v)
    if len(u) <= 2:
        return "binary"
    if len(u) <= _INTEGER_CLASSES_MAX and np.all(u == np.round(u)):
        return "multiclass"
    return "regression"


class Preprocessing:
    """The recorded encoding of a CSV: which columns, how each becomes numbers, the target.

    Replaying it on a file with the same columns gives the same ``X`` column for column:
    numeric columns are copied (missing cells imputed with the training statistic, or the row
    dropped, as recorded), categorical columns are one-hot encoded over the training categories
    (an unseen category is an error unless ``handle_unknown="ignore"``, which encodes it as all
    zeros). It serialises to plain JSON (:meth:`to_dict`), which model files embed.

    Build it with :func:`read_csv` or :func:`train_test_csv`, not by hand.
    """

    FORMAT = 1

    def __init__(self, columns: list[dict], target: dict | None, missing: str,
                 na_values: Sequence[str] = NA_VALUES, max_abs: float = _DEFAULT_MAX_ABS,
                 handle_unknown: str = "error", header: bool = True,
                 file_columns: Sequence[str] = ()):
        self.columns = columns
        self.target = target
        self.missing = missing
        self.na_values = tuple(na_values)
        self.max_abs = float(max_abs)
        self.handle_unknown = handle_unknown
        self.header = bool(header)
        self.file_columns = list(file_columns)

    # -- description ------------------------------------------------------------------------
    @property
    def input_columns(self) -> list[str]:
        """The CSV columns the encoding reads, in order."""
        return [c["name"] for c in self.columns]

    @property
    def feature_names_out(self) -> list[str]:
        """Names of the columns of ``X``: "age", "color=red", "color=blue", ..."""
        out = []
        for c in self.columns:
            if c["kind"] == "numeric":
                out.append(c["name"])
            else:
                out.extend(f"{c['name']}={k}" for k in c["categories"])
        return out

    @property
    def n_features_out(self) -> int:
        return len(self.feature_names_out)

    @property
    def task(self) -> str | None:
        return None if self.target is None else self.target["task"]

    def describe(self) -> list[str]:
        """One human line per step (for ``rwtool info`` and the GUI)."""
        lines = []
        for c in self.columns:
            if c["kind"] == "numeric":
                s = f"{c['name']}: numeric"
            else:
                s = f"{c['name']}: one-hot over {len(c['categories'])} categories"
            if c.get("fill") is not None:
                s += f", missing -> {c['fill']!r}"
            lines.append(s)
        if self.target is not None:
            t = self.target
            s = f"target {t['name']!r}: {t['task']}"
            if t.get("classes") is not None:
                s += f" over {len(t['classes'])} classes {t['classes'][:10]}"
            lines.append(s)
        lines.append(f"missing values: {self.missing}")
        return lines

    def __repr__(self) -> str:
        return (f"Preprocessing({len(self.columns)} columns -> {self.n_features_out} features, "
                f"target={None if self.target is None else self.target['name']!r}, "
                f"missing={self.missing!r})")

    # -- serialisation -----------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"format": self.FORMAT, "columns": [dict(c) for c in self.columns],
                "target": None if self.target is None else dict(self.target),
                "missing": self.missing, "na_values": list(self.na_values),
                "max_abs": self.max_abs, "handle_unknown": self.handle_unknown,
                "header": self.header, "file_columns": list(self.file_columns)}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Preprocessing":
        """Rebuild from :meth:`to_dict` output, checking every field (it may come from a file)."""
        def fail(what):
            raise ValueError(f"invalid preprocessing record: {what}")

        if not isinstance(d, Mapping) or d.get("format") != cls.FORMAT:
            fail("unknown format")
        cols = d.get("columns")
        if not isinstance(cols, list) or not cols:
            fail("no columns")
        clean = []
        for c in cols:
            if not isinstance(c, Mapping) or not isinstance(c.get("name"), str):
                fail("a column without a name")
            kind = c.get("kind")
            if kind == "numeric":
                fill = c.get("fill")
                if fill is not None and not (isinstance(fill, (int, float))
                                             and not isinstance(fill, bool)
                                             and math.isfinite(fill)):
                    fail(f"column {c['name']!r} has a non-numeric fill value")
                clean.append({"name": c["name"], "kind": "numeric",
                              "fill": None if fill is None else float(fill)})
            elif kind == "categorical":
                cats = c.get("categories")
                if (not isinstance(cats, list) or not cats
                        or not all(isinstance(k, str) for k in cats)
                        or len(set(cats)) != len(cats)):
                    fail(f"column {c['name']!r} has invalid categories")
                fill = c.get("fill")
                if fill is not None and fill not in cats:
                    fail(f"column {c['name']!r} fills with an unknown category")
                clean.append({"name": c["name"], "kind": "categorical", "categories": list(cats),
                              "fill": fill})
            else:
                fail(f"column kind {kind!r}")
        names = [c["name"] for c in clean]
        if len(set(names)) != len(names):
            fail("duplicate column names")
        target = d.get("target")
        if target is not None:
            if (not isinstance(target, Mapping) or not isinstance(target.get("name"), str)
                    or target.get("task") not in ("binary", "multiclass", "regression")):
                fail("invalid target")
            classes = target.get("classes")
            lk = target.get("label_kind")
            if target["task"] != "regression":
                ok_types = {"int": int, "float": float, "str": str}.get(lk)
                if (ok_types is None or not isinstance(classes, list) or len(classes) < 2
                        or not all(isinstance(k, ok_types) and not isinstance(k, bool)
                                   for k in classes)):
                    fail("invalid classes")
            target = {"name": target["name"], "task": target["task"],
                      "classes": None if target["task"] == "regression" else list(classes),
                      "label_kind": None if target["task"] == "regression" else lk}
        missing = d.get("missing")
        if missing not in MISSING_POLICIES:
            fail(f"missing policy {missing!r}")
        na = d.get("na_values")
        if not isinstance(na, list) or not all(isinstance(s, str) for s in na):
            fail("na_values")
        max_abs = d.get("max_abs")
        if (not isinstance(max_abs, (int, float)) or isinstance(max_abs, bool)
                or not max_abs > 0):
            fail("max_abs")
        if d.get("handle_unknown") not in ("error", "ignore"):
            fail("handle_unknown")
        fc = d.get("file_columns", [])
        if not isinstance(fc, list) or not all(isinstance(s, str) for s in fc):
            fail("file_columns")
        return cls(clean, target, missing, na, float(max_abs), d["handle_unknown"],
                   bool(d.get("header", True)), fc)

    def __eq__(self, other) -> bool:
        return isinstance(other, Preprocessing) and self.to_dict() == other.to_dict()

    # -- replay ------------------------------------------------------------------------------
    def apply_csv(self, path, *, require_target: bool = False, encoding=None, delimiter=None,
                  decimal=None, nrows=None, max_bytes=_DEFAULT_MAX_BYTES) -> "Dataset":
        """Encode a new CSV exactly as the training file was.

        The columns are matched by name (by position if the training file had no header);
        extra columns are ignored. ``y`` is read when the target column is present (it must be
        when ``require_target``); rows whose target is missing are then dropped, with a note.
        """
        dialect = sniff_csv(path, encoding=encoding, delimiter=delimiter, decimal=decimal,
                            header=self.header, na_values=self.na_values, max_bytes=max_bytes,
                            nrows=nrows)
        need = self.input_columns + ([self.target["name"]] if self.target else [])
        table = _parse(path, dialect, usecols=need, nrows=nrows, na_values=self.na_values,
                       fallback=encoding is None)
        _require_rows(table)
        missing = [c for c in self.input_columns if c not in table.names]
        if missing:
            raise MissingColumnError(
                f"the model needs column(s) {', '.join(map(repr, missing))}, absent from this "
                f"file", file=path, row=1 if dialect.header else None, column=missing[0],
                hint=f"the file's columns are: {', '.join(table.names)}")
        has_target = self.target is not None and self.target["name"] in table.names
        if require_target and not has_target:
            name = None if self.target is None else self.target["name"]
            raise MissingColumnError(
                "the target column is absent, so the model cannot be evaluated" if name else
                "the model has no recorded target column", file=path, column=name,
                hint=f"the file's columns are: {', '.join(table.names)}")
        return self._encode(table, np.arange(table.n_rows), with_target=has_target)

    def transform_rows(self, rows: Iterable[Mapping[str, Any]]) -> np.ndarray:
        """``X`` for rows given as {column: value} mappings (strings or numbers), e.g. typed
        in a form; missing keys and None are missing values."""
        rows = list(rows)
        names = self.input_columns
        cells = [[("" if r.get(n) is None else (repr(float(r[n])) if isinstance(
            r[n], (float, np.floating)) else str(r[n]))) for n in names] for r in rows]
        if not cells:
            return np.empty((0, self.n_features_out))
        table = _table_from_rows(names, cells, self.na_values, ".")
        ds = self._encode(table, np.arange(len(cells)), with_target=False, drop_ok=False)
        return ds.X

    # -- the encoder -------------------------------------------------------------------------
    def _encode(self, table: _Table, rows: np.ndarray, with_target: bool,
                drop_ok: bool = True) -> "Dataset":
        path = table.path
        notes: list[str] = []
        keep = np.ones(len(rows), dtype=bool)
        y = None
        if with_target:
            y, ymiss = _target_values(table, self.target, rows)
            if ymiss.any():
                notes.append(f"dropped {int(ymiss.sum())} row(s) with a missing target")
                keep &= ~ymiss
        blocks, miss_cols = [], {}
        for spec in self.columns:
            col = table.col(spec["name"])
            if spec["kind"] == "numeric":
                block, miss = _numeric_block(col, rows, spec, self.max_abs, path, table.lines)
            else:
                block, miss = _categorical_block(col, rows, spec, self.handle_unknown, path,
                                                 table.lines)
            if miss.any():
                miss_cols[spec["name"]] = miss
            blocks.append(block)
        if miss_cols:
            anymiss = np.logical_or.reduce(list(miss_cols.values()))
            # Imputed columns have no missing cell left: what remains is an error unless rows
            # may be dropped (not for rows typed in a form, which must each get an answer).
            if self.missing != "drop-rows" or not drop_ok:
                first = int(np.flatnonzero(anymiss & keep)[0]) if (anymiss & keep).any() else None
                if first is not None:
                    col = next(n for n, m in miss_cols.items() if m[first])
                    detail = ", ".join(f"{n!r}: {int(m.sum())}" for n, m in miss_cols.items())
                    raise MissingValueError(
                        f"missing value (missing values per column: {detail})", file=path,
                        row=int(table.lines[rows[first]]), column=col,
                        hint="choose a missing-value policy: missing='drop-rows', "
                             "'impute-mean' or 'impute-most-frequent' (command line: "
                             "--missing ...)")
            elif self.missing == "drop-rows":
                n_drop = int((anymiss & keep).sum())
                keep &= ~anymiss
                if n_drop:
                    notes.append(f"dropped {n_drop} row(s) with missing values")
        X = (np.hstack(blocks) if blocks else np.empty((len(rows), 0)))
        if not keep.all():
            X, rows = X[keep], rows[keep]
            y = None if y is None else y[keep]
        if len(rows) == 0 and len(keep):
            raise AllMissingError(
                "no row is left after dropping the rows with missing values", file=path,
                hint="impute instead (missing='impute-mean') or ignore the mostly-empty columns")
        return Dataset(X=np.ascontiguousarray(X, dtype=np.float64), y=y,
                       feature_names=self.feature_names_out,
                       target=None if self.target is None else self.target["name"],
                       task=self.task, preprocessing=self, rows=table.lines[rows].copy(),
                       source=path, dialect=table.dialect, notes=notes)


def _numeric_block(col: _Column, rows, spec, max_abs, path, lines):
    codes, values = col.codes[rows], col.values[rows]
    text = np.flatnonzero(codes >= 0)
    if len(text):
        i = int(text[0])
        cell = col.vocab[int(codes[i])]
        hint = "fix the value, add it to na_values, or declare the column categorical"
        if re.match(r"^[+-]?\d+,\d+$", cell):
            hint = "it looks like a decimal comma: pass decimal=','"
        raise NonNumericError(
            f"non-numeric text {cell!r} in a numeric column ({len(text)} such cell(s))",
            file=path, row=int(lines[rows[i]]), column=col.name, hint=hint)
    bad = np.flatnonzero((codes == -1) & ~(np.abs(values) <= max_abs))
    if len(bad):
        i = int(bad[0])
        v = values[i]
        what = "an infinite value" if np.isinf(v) else f"the value {v:g}, too large"
        raise NonFiniteError(
            f"{what} (|x| must be at most max_abs={max_abs:g}; {len(bad)} such cell(s))",
            file=path, row=int(lines[rows[i]]), column=col.name,
            hint="fix or rescale the column, or mark such cells missing (na_values)")
    miss = codes == -2
    out = values.copy()
    if miss.any() and spec.get("fill") is not None:
        out[miss] = spec["fill"]
        miss = np.zeros_like(miss)
    return out[:, None], miss


def _categorical_block(col: _Column, rows, spec, handle_unknown, path, lines):
    cats = spec["categories"]
    index = {k: i for i, k in enumerate(cats)}
    ids = col.category_ids(index, rows)
    unknown = np.flatnonzero(ids == -2)
    if len(unknown) and handle_unknown == "error":
        i = int(unknown[0])
        code = int(col.codes[rows[i]])
        cell = col.vocab[code] if code >= 0 else _canon(col.values[rows[i]])
        raise UnseenCategoryError(
            f"category {cell!r} did not occur in the training data (known: "
            f"{', '.join(map(repr, cats[:10]))}{', ...' if len(cats) > 10 else ''})",
            file=path, row=int(lines[rows[i]]), column=col.name,
            hint="fix the value, or encode unseen categories as all zeros "
                 "(handle_unknown='ignore')")
    miss = ids == -1
    if miss.any() and spec.get("fill") is not None:
        ids[miss] = index[spec["fill"]]
        miss = np.zeros_like(miss)
    block = np.zeros((len(ids), len(cats)))
    hit = ids >= 0
    block[np.flatnonzero(hit), ids[hit]] = 1.0
    return block, miss


def _target_values(table: _Table, target: dict, rows):
    col = table.col(target["name"])
    codes, values = col.codes[rows], col.values[rows]
    miss = codes == -2
    path, lines = table.path, table.lines
    if target["task"] == "regression":
        text = np.flatnonzero(codes >= 0)
        if len(text):
            i = int(text[0])
            raise TargetError(f"non-numeric target {col.vocab[int(codes[i])]!r}: regression "
                              f"needs numbers", file=path, row=int(lines[rows[i]]),
                              column=col.name, hint="fix the value or choose a classification "
                                                     "task")
        bad = np.flatnonzero((codes == -1) & ~np.isfinite(values))
        if len(bad):
            i = int(bad[0])
            raise NonFiniteError("an infinite target value", file=path,
                                 row=int(lines[rows[i]]), column=col.name)
        return values.copy(), miss
    kind = target["label_kind"]
    if kind == "str":
        y = np.empty(len(rows), dtype=object)
        t = codes >= 0
        y[t] = np.array(col.vocab, dtype=object)[codes[t]] if t.any() else []
        num = codes == -1
        y[num] = [_canon(v) for v in values[num]]
        y[miss] = ""
        width = max((len(s) for s in y[~miss]), default=1)
        return y.astype(f"<U{max(width, 1)}"), miss
    text = np.flatnonzero(codes >= 0)
    if len(text):
        i = int(text[0])
        raise TargetError(f"text label {col.vocab[int(codes[i])]!r} in a numeric target",
                          file=path, row=int(lines[rows[i]]), column=col.name,
                          hint="fix the value or mark it missing (na_values)")
    if kind == "int":
        frac = np.flatnonzero((codes == -1) & (values != np.round(values)))
        if len(frac):
            i = int(frac[0])
            raise TargetError(f"non-integer label {values[i]:g} in an integer class target",
                              file=path, row=int(lines[rows[i]]), column=col.name)
        return np.where(miss, 0, values).astype(np.int64), miss
    return np.where(miss, 0.0, values), miss


# ============================================================================ dataset

@dataclass
class Dataset:
    """Numeric data ready for an estimator, with where it came from.

    ``X`` (float64, n x d), ``y`` (class labels, int or str, or float values; None when the
    file has no target), ``feature_names`` (the d encoded names), ``task``, ``preprocessing``
    (the replayable :class:`Preprocessing`), ``rows`` (the file line of each row of X),
    ``source`` and ``dialect`` of the file, ``notes`` (rows dropped and the like).
    """

    X: np.ndarray
    y: np.ndarray | None
    feature_names: list[str]
    target: str | None
    task: str | None
    preprocessing: Preprocessing
    rows: np.ndarray
    source: str | None = None
    dialect: Dialect | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    def __len__(self) -> int:
        return self.n_samples

    @property
    def is_classification(self) -> bool:
        return self.task in ("binary", "multiclass")

    @property
    def classes(self):
        """The class labels recorded at training time (None for regression)."""
        t = self.preprocessing.target
        return None if t is None or t["classes"] is None else list(t["classes"])

    def subset(self, idx) -> "Dataset":
        idx = np.asarray(idx)
        return Dataset(self.X[idx], None if self.y is None else self.y[idx],
                       list(self.feature_names), self.target, self.task, self.preprocessing,
                       self.rows[idx], self.source, self.dialect, list(self.notes))

    def split(self, test_size: float = 0.25, random_state=0, stratify: bool | None = None):
        """(train, test) by rows; stratified by class for classification unless told otherwise.

        The encoding was fitted on every row of the file: for imputation statistics learned on
        the training rows only, use :func:`train_test_csv`.
        """
        strat = self.y if (stratify or (stratify is None and self.is_classification)) else None
        tr, te = split_indices(self.n_samples, test_size, random_state, strat)
        return self.subset(tr), self.subset(te)

    def summary(self) -> dict:
        out = {"source": self.source, "n_samples": self.n_samples,
               "n_features": self.n_features, "target": self.target, "task": self.task,
               "notes": list(self.notes)}
        if self.dialect is not None:
            out["dialect"] = self.dialect.to_dict()
        if self.y is not None and self.is_classification:
            u, c = np.unique(self.y, return_counts=True)
            out["class_counts"] = {str(k): int(v) for k, v in zip(u, c)}
        return out


def split_indices(n: int, test_size: float = 0.25, random_state=0, stratify=None):
    """Train and test row indices: a random fraction ``test_size`` held out (per class when
    ``stratify`` holds labels, so each class keeps its proportion and stays in training)."""
    if not (isinstance(test_size, (int, float)) and not isinstance(test_size, bool)
            and 0.0 < test_size < 1.0):
        raise ValueError(f"test_size must be a fraction in (0, 1), got {test_size!r}")
    if n < 2:
        raise ValueError(f"cannot split {n} row(s) into a training and a test part")
    rng = np.random.default_rng(random_state)
    if stratify is None:
        perm = rng.permutation(n)
        n_test = min(n - 1, max(1, int(round(test_size * n))))
        test = perm[:n_test]
    else:
        labels = np.asarray(stratify)
        test_parts = []
        for k in np.unique(labels):
            members = rng.permutation(np.flatnonzero(labels == k))
            n_test = int(round(test_size * len(members)))
            n_test = min(n_test, len(members) - 1)
            test_parts.append(members[:n_test])
        test = np.concatenate(test_parts) if test_parts else np.empty(0, dtype=np.int64)
        if len(test) == 0:
            raise ValueError(f"test_size={test_size} leaves no row for testing; raise it")
    mask = np.zeros(n, dtype=bool)
    mask[test] = True
    return np.flatnonzero(~mask), np.flatnonzero(mask)


# ============================================================================ read_csv

def _norm_policy(missing) -> str:
    key = str(missing).lower().replace("_", "-")
    aliases = {"drop": "drop-rows", "mean": "impute-mean", "most-frequent": "impute-most-frequent",
               "mode": "impute-most-frequent"}
    key = aliases.get(key, key)
    if key not in MISSING_POLICIES:
        raise ValueError(f"missing must be one of {', '.join(MISSING_POLICIES)}, got {missing!r}")
    return key


def _resolve(spec, names, path, what) -> list[str]:
    if spec is None:
        return []
    if isinstance(spec, (str, int, np.integer)):
        spec = [spec]
    out = []
    for s in spec:
        if isinstance(s, str) and s not in names and re.fullmatch(r"-?\d+", s.strip()):
            s = int(s)          # a position typed on a command line ("-1": the last column)
        if isinstance(s, (int, np.integer)) and not isinstance(s, bool):
            if not -len(names) <= s < len(names):
                raise ColumnNotFoundError(f"{what} column index {s} is out of range (the file "
                                          f"has {len(names)} columns)", file=path)
            out.append(names[s])
        elif isinstance(s, str):
            if s not in names:
                close = [n for n in names if n.lower() == s.lower()]
                raise ColumnNotFoundError(
                    f"no column named {s!r} (for {what})", file=path, column=s,
                    hint=(f"did you mean {close[0]!r}? " if close else "")
                    + f"columns are: {', '.join(names)}")
            out.append(s)
        else:
            raise TypeError(f"{what} columns must be names or integer positions, got {s!r}")
    return out


def _fit_target(table: _Table, name: str, task: str, rows) -> dict:
    col = table.col(name)
    path = table.path
    present = rows[col.codes[rows] != -2]
    if len(present) == 0:
        raise AllMissingError("the target column has no value", file=path, column=name)
    kind = col.inferred_kind(present)
    if task == "auto":
        task = _infer_task(col, kind, present)
    if task == "regression":
        return {"name": name, "task": "regression", "classes": None, "label_kind": None}
    if kind == "categorical":
        classes = sorted(col.category_counts(present))
        label_kind = "str"
    else:
        text = present[col.codes[present] >= 0]
        if len(text):
            i = int(text[0])
            raise TargetError(f"text label {col.vocab[int(col.codes[i])]!r} in a numeric "
                              f"target", file=path, row=int(table.lines[i]), column=name,
                              hint="fix the value or mark it missing (na_values)")
        v = col.values[present]
        if not np.all(np.isfinite(v)):
            i = int(present[np.flatnonzero(~np.isfinite(v))[0]])
            raise NonFiniteError("an infinite target value", file=path,
                                 row=int(table.lines[i]), column=name)
        u = np.unique(v)
        if np.all(u == np.round(u)) and np.all(np.abs(u) < 2**53):
            classes, label_kind = [int(x) for x in u], "int"
        else:
            classes, label_kind = [float(x) for x in u], "float"
    if len(classes) < 2:
        raise SingleClassError(
            f"the target has a single class ({classes[0]!r} in all {len(present)} rows); a "
            f"classifier needs at least two", file=path, column=name,
            hint="check the target column, or pass task='regression' for numeric values")
    if task == "binary" and len(classes) > 2:
        raise TargetError(f"task 'binary' but the target has {len(classes)} classes",
                          file=path, column=name, hint="use task='multiclass' or 'auto'")
    if task == "classification":
        task = "binary" if len(classes) == 2 else "multiclass"
    if task == "multiclass" and len(classes) == 2:
        task = "binary"
    return {"name": name, "task": task, "classes": classes, "label_kind": label_kind}


def _fit_columns(table: _Table, features, categorical, numeric, policy, max_categories,
                 fit_rows) -> list[dict]:
    path = table.path
    specs = []
    for name in features:
        col = table.col(name)
        n_num, n_text, n_miss = col.counts(fit_rows)
        if n_num + n_text == 0:
            raise AllMissingError(
                f"every value of this column is missing ({n_miss} row(s))", file=path,
                column=name, hint=f"ignore the column (ignore=[{name!r}]; command line: "
                                  f"--ignore {name})")
        if name in categorical:
            kind = "categorical"
        elif name in numeric:
            kind = "numeric"
        else:
            kind = col.inferred_kind(fit_rows)
        if kind == "numeric":
            spec = {"name": name, "kind": "numeric", "fill": None}
            if policy in ("impute-mean", "impute-most-frequent"):
                codes, vals = col.codes[fit_rows], col.values[fit_rows]
                v = vals[codes == -1]
                if len(v) and not np.all(np.isfinite(v)):
                    spec["fill"] = None    # the non-finite value is reported by the encoder
                elif policy == "impute-mean":
                    spec["fill"] = float(np.mean(v))
                else:
                    u, c = np.unique(v, return_counts=True)
                    spec["fill"] = float(u[np.argmax(c)])
            specs.append(spec)
            continue
        counts = col.category_counts(slice(None))     # the file's vocabulary, all rows
        n_cat = max(len(counts), col.n_distinct_text)
        if n_cat > max_categories:
            raise HighCardinalityError(
                f"{n_cat} distinct values in a text column: one-hot encoding would add "
                f"{n_cat} columns (max_categories={max_categories})", file=path, column=name,
                hint=f"ignore it (ignore=[{name!r}]; command line: --ignore {name}) if it is "
                     f"an identifier or free text, or raise max_categories")
        cats = sorted(counts)
        fill = None
        if policy in ("impute-mean", "impute-most-frequent"):
            fit_counts = col.category_counts(fit_rows) or counts
            fill = max(sorted(fit_counts), key=fit_counts.get)
        specs.append({"name": name, "kind": "categorical", "categories": cats, "fill": fill})
    return specs


def _read_table(path, target, features, ignore, categorical, numeric, encoding, delimiter,
                decimal, header, na_values, nrows, max_bytes):
    dialect = sniff_csv(path, encoding=encoding, delimiter=delimiter, decimal=decimal,
                        header=header, na_values=na_values, max_bytes=max_bytes, nrows=nrows)
    table = _parse(path, dialect, nrows=nrows, na_values=na_values, fallback=encoding is None)
    _require_rows(table)
    path = table.path
    names = table.names
    tname = _resolve(target, names, path, "target")
    tname = tname[0] if tname else None
    ignored = set(_resolve(ignore, names, path, "ignore"))
    cat = set(_resolve(categorical, names, path, "categorical"))
    num = set(_resolve(numeric, names, path, "numeric"))
    if cat & num:
        raise ValueError(f"column(s) {sorted(cat & num)} declared both categorical and numeric")
    if features is None:
        feats = [n for n in names if n != tname and n not in ignored]
    else:
        feats = [n for n in _resolve(features, names, path, "features") if n not in ignored]
        if tname in feats:
            raise ValueError(f"the target {tname!r} cannot also be a feature")
    if not feats:
        raise ColumnNotFoundError("no feature column is left", file=path,
                                  hint="the target and the ignored columns were all the "
                                       "columns")
    return table, tname, feats, cat, num


def _require_rows(table: _Table) -> None:
    if table.n_rows == 0:
        if table.dialect.header:
            raise HeaderOnlyError("the file has a header line but no data rows", file=table.path,
                                  row=1, hint="add data rows below the header")
        raise EmptyFileError("the file holds no data rows", file=table.path)


def _check_options(task, missing, max_categories, handle_unknown):
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}, got {task!r}")
    if not isinstance(max_categories, int) or max_categories < 1:
        raise ValueError(f"max_categories must be a positive integer, got {max_categories!r}")
    if handle_unknown not in ("error", "ignore"):
        raise ValueError(f"handle_unknown must be 'error' or 'ignore', got {handle_unknown!r}")
    return _norm_policy(missing)


def _candidate_rows(table, tname, policy, with_y):
    rows = np.arange(table.n_rows)
    if tname is None:
        return rows, []
    tmiss = table.col(tname).codes == -2
    if tmiss.any() and policy == "error":
        i = int(np.flatnonzero(tmiss)[0])
        raise MissingValueError(f"missing target value ({int(tmiss.sum())} row(s))",
                                file=table.path, row=int(table.lines[i]), column=tname,
                                hint="choose a missing-value policy such as "
                                     "missing='drop-rows' (rows with no target are dropped)")
    if tmiss.all():
        raise AllMissingError("the target column has no value", file=table.path, column=tname)
    return rows[~tmiss], ([f"dropped {int(tmiss.sum())} row(s) with a missing target"]
                          if tmiss.any() else [])


def read_csv(path, target=None, *, features=None, ignore=None, categorical=None, numeric=None,
             task: str = "auto", missing: str = "error", max_categories: int = 50,
             handle_unknown: str = "error", encoding=None, delimiter=None, decimal=None,
             header=None, na_values=NA_VALUES, max_abs: float = _DEFAULT_MAX_ABS,
             nrows: int | None = None, max_bytes: int | None = _DEFAULT_MAX_BYTES) -> Dataset:
    """Read a CSV file into a :class:`Dataset` (numeric ``X``, ``y``, preprocessing record).

    Parameters
    ----------
    path : str or path
    target : str or int, optional
        The target column (name or position; -1 is the last). None: no ``y``.
    features : list of names/positions, optional
        Feature columns (default: all but the target and ``ignore``).
    ignore : list, optional
        Columns to leave out (identifiers, free text).
    categorical, numeric : list, optional
        Force a column's type (by default a column is numeric when most of its non-missing
        cells are numbers, categorical otherwise; text in a numeric column is an error).
    task : {"auto", "binary", "multiclass", "classification", "regression"}
        "auto": text targets and numeric targets with two values are classes, integer targets
        with at most 10 values are multiclass, anything else is regression.
    missing : {"error", "drop-rows", "impute-mean", "impute-most-frequent"}
        Policy for missing feature cells ("impute-mean" imputes categorical columns with their
        most frequent category). Rows with a missing target are an error under "error" and are
        dropped (with a note) under the other policies.
    max_categories : int, default 50
        Largest number of categories one-hot encoded per column.
    handle_unknown : {"error", "ignore"}
        What replaying the record does with a category unseen here.
    encoding, delimiter, decimal, header
        Dialect; None detects it (:func:`sniff_csv`).
    na_values : sequence of str
        Cell texts that mean "missing" (compared after stripping spaces).
    max_abs : float, default 1e100
        Values with a larger magnitude are refused (their squares overflow in standardisation).
    nrows : int, optional
        Read only the first ``nrows`` records (the size limit then does not apply).
    max_bytes : int or None, default 1 GiB
        Refuse larger files (memory is about three times the file size).

    Raises
    ------
    DataError (a subclass per problem) naming the file, row and column.
    """
    policy = _check_options(task, missing, max_categories, handle_unknown)
    table, tname, feats, cat, num = _read_table(
        path, target, features, ignore, categorical, numeric, encoding, delimiter, decimal,
        header, na_values, nrows, max_bytes)
    rows, notes = _candidate_rows(table, tname, policy, tname is not None)
    pre = _fit_record(table, tname, feats, cat, num, task, policy, max_categories,
                      handle_unknown, na_values, max_abs, rows)
    ds = pre._encode(table, rows, with_target=tname is not None)
    ds.notes[:0] = notes
    return ds


def _fit_record(table, tname, feats, cat, num, task, policy, max_categories, handle_unknown,
                na_values, max_abs, fit_rows) -> Preprocessing:
    tspec = None if tname is None else _fit_target(table, tname, task, fit_rows)
    specs = _fit_columns(table, feats, cat, num, policy, max_categories, fit_rows)
    return Preprocessing(specs, tspec, policy, na_values, max_abs, handle_unknown,
                         table.dialect.header, table.names)


def train_test_csv(path, target, *, test_size: float = 0.25, test=None, random_state=0,
                   stratify: bool | None = None, **options):
    """(train, test) Datasets from one file split by rows, or from ``path`` and a ``test`` file.

    The encoding is learned from the training rows only (imputation statistics and the class
    list; the one-hot categories come from the whole training file), then replayed on the test
    rows, so nothing of the test part leaks into training. ``options`` are those of
    :func:`read_csv`. Classification splits are stratified unless ``stratify=False``.
    """
    if test is not None:
        train = read_csv(path, target, **options)
        dialect_opts = {k: options[k] for k in ("encoding", "delimiter", "decimal")
                        if options.get(k) is not None}
        tst = train.preprocessing.apply_csv(test, require_target=True,
                                            max_bytes=options.get("max_bytes",
                                                                  _DEFAULT_MAX_BYTES),
                                            **dialect_opts)
        return train, tst
    policy = _check_options(options.get("task", "auto"), options.get("missing", "error"),
                            options.get("max_categories", 50),
                            options.get("handle_unknown", "error"))
    na_values = options.get("na_values", NA_VALUES)
    table, tname, feats, cat, num = _read_table(
        path, target, options.get("features"), options.get("ignore"),
        options.get("categorical"), options.get("numeric"), options.get("encoding"),
        options.get("delimiter"), options.get("decimal"), options.get("header"), na_values,
        options.get("nrows"), options.get("max_bytes", _DEFAULT_MAX_BYTES))
    if tname is None:
        raise ValueError("train_test_csv needs a target column")
    rows, notes = _candidate_rows(table, tname, policy, True)
    task = options.get("task", "auto")
    probe = _fit_target(table, tname, task, rows)
    strat = None
    if stratify or (stratify is None and probe["task"] != "regression"):
        col = table.col(tname)
        strat = np.where(col.codes[rows] >= 0, col.codes[rows] + 1e9, col.values[rows])
    tr, te = split_indices(len(rows), test_size, random_state, strat)
    pre = _fit_record(table, tname, feats, cat, num, task, policy,
                      options.get("max_categories", 50), options.get("handle_unknown", "error"),
                      na_values, options.get("max_abs", _DEFAULT_MAX_ABS), rows[tr])
    train = pre._encode(table, rows[tr], with_target=True)
    tst = pre._encode(table, rows[te], with_target=True)
    train.notes[:0] = notes
    return train, tst


# ============================================================================ bundled samples

def samples_dir():
    """Folder of the bundled sample CSVs: $RWTOOL_SAMPLES, samples/ next to the rwtool package
    (a source checkout), or <prefix>/share/rwtool/samples where pip installs them (the
    environment's prefix, then the user scheme). Raises DataError when none holds them."""
    import sysconfig
    from pathlib import Path
    env = os.environ.get("RWTOOL_SAMPLES")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parent.parent / "samples")
    schemes = [None] + [s for s in (f"{os.name}_user", "posix_user", "nt_user")
                        if s in sysconfig.get_scheme_names()]
    for scheme in schemes:
        try:
            base = sysconfig.get_path("data", scheme) if scheme else sysconfig.get_path("data")
        except KeyError:
            continue
        c = Path(base) / "share" / "rwtool" / "samples"
        if c not in candidates:
            candidates.append(c)
    for c in candidates:
        if (c / "samples.json").is_file():
            return c
    raise DataError("the bundled samples were not found (looked in "
                    + ", ".join(str(c) for c in candidates) + ")",
                    hint="set RWTOOL_SAMPLES to the folder holding samples.json")


def list_samples() -> list[dict]:
    """The bundled samples from samples.json: name, file, path, target, task, rows, columns,
    description and ``options`` (the read_csv options the sample needs, e.g. columns to
    ignore), so ``read_csv(s["path"], s["target"], **s["options"])`` reads any of them."""
    import json
    d = samples_dir()
    try:
        manifest = json.loads((d / "samples.json").read_text(encoding="utf-8"))
        out = []
        for s in manifest["samples"]:
            s = dict(s)
            s["path"] = str(d / s["file"])
            s.setdefault("options", {})
            out.append(s)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"unreadable sample manifest ({exc})",
                        file=str(d / "samples.json")) from None
    return out
