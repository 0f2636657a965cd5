"""Where CSV bytes come from and how they are written: the source and the dialect.

:func:`open_source` turns a path, ``"-"`` (standard input), a pipe or ``/dev/stdin`` into a
:class:`Source` that can be read from the start again (a regular file is re-opened; anything else
is read once, within the size limit, and kept in memory). :func:`sniff_csv` detects the text
encoding, delimiter, decimal mark and header line from the first 64 KB. The reader
(rwtool.data._read) checks the encoding over the whole file. This module must not parse whole
files or encode data.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import re
import stat
import sys
from dataclasses import dataclass

import numpy as np

from ._charset import bom_encoding, guess_legacy
from ._errors import DataError, EmptyFileError, EncodingError, FileTooLargeError

__all__ = ["Dialect", "Source", "open_source", "sniff_csv", "NA_VALUES"]

#: cell texts read as a missing value (after stripping spaces); "?" is the UCI convention
NA_VALUES = ("", "NA", "N/A", "n/a", "na", "NaN", "nan", "NAN", "null", "NULL", "Null",
             "None", "none", "?", "#N/A")

_DELIMITERS = ("\t", ";", ",")          # preference order when several split consistently
_SNIFF_BYTES = 1 << 16
_DEFAULT_MAX_BYTES = 1 << 30
_PIPE_READ = 1 << 20

@dataclass(frozen=True)
class Dialect:
    """How the file is written: text encoding, field delimiter, decimal mark, header line."""

    encoding: str = "utf-8"
    delimiter: str = ","
    decimal: str = "."
    header: bool = True
    quotechar: str = '"'
    skip_lines: int = 0     # lines before the header: Excel's "sep=;" line, "#" comments
    skipped: str = ""       # what those lines were, for the note

    def to_dict(self) -> dict:
        return {"encoding": self.encoding, "delimiter": self.delimiter, "decimal": self.decimal,
                "header": self.header, "quotechar": self.quotechar,
                "skip_lines": self.skip_lines}

    def describe(self) -> str:
        names = {"\t": "tab", ";": "semicolon", ",": "comma"}
        return (f"{self.encoding}, {names.get(self.delimiter, repr(self.delimiter))}-delimited, "
                f"decimal {self.decimal!r}, {'with' if self.header else 'no'} header")


class Source:
    """The bytes of one CSV input, readable from the start as often as needed.

    ``name`` is what messages show (the path, or "<stdin>"); ``path`` is set for a regular file,
    which is re-opened on each :meth:`open`; ``data`` holds the whole input otherwise (pipes
    and standard input can be read only once). ``size`` is the byte count.
    """

    def __init__(self, name: str, path: str | None = None, data: bytes | None = None,
                 size: int = 0):
        self.name, self.path, self.data, self.size = name, path, data, size

    def open(self):
        return open(self.path, "rb") if self.data is None else io.BytesIO(self.data)

    def head(self, n: int) -> bytes:
        with self.open() as fh:
            return fh.read(n)


def open_source(path, max_bytes=_DEFAULT_MAX_BYTES, nrows=None) -> Source:
    """A :class:`Source` for ``path``: a regular file, ``"-"`` for standard input, or a pipe,
    FIFO or character device (``<(cat f.csv)``, ``/dev/stdin``), read into memory up to
    ``max_bytes``. Refuses missing paths, folders, empty inputs and files over ``max_bytes``
    (unless ``nrows`` limits the read to the first rows)."""
    if nrows is not None and (not isinstance(nrows, (int, np.integer))
                              or isinstance(nrows, bool) or nrows < 1):
        raise ValueError(f"nrows must be a positive number of rows or None (all rows), got "
                         f"{nrows!r}")
    if isinstance(path, Source):
        return path
    if isinstance(path, str) and path == "-":
        return _read_stream(sys.stdin.buffer, "<stdin>", max_bytes)
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DataError("file not found", file=path, hint="check the path") from None
    except OSError as exc:
        raise DataError(f"cannot open the file ({exc.strerror})", file=path) from None
    if stat.S_ISDIR(st.st_mode):
        raise DataError("is a directory, not a CSV file", file=path)
    if not stat.S_ISREG(st.st_mode):
        # A pipe or FIFO is read once, so it is kept in memory (within max_bytes).
        try:
            with open(path, "rb") as fh:
                return _read_stream(fh, path, max_bytes)
        except OSError as exc:
            raise DataError(f"cannot read ({exc.strerror})", file=path) from None
    size = st.st_size
    if size == 0:
        raise EmptyFileError("the file is empty (0 bytes)", file=path)
    if max_bytes is not None and nrows is None and size > max_bytes:
        raise FileTooLargeError(
            f"the file is {_human(size)}, above the max_bytes limit of {_human(max_bytes)} "
            f"(reading it needs about {_human(3 * size)} of memory)", file=path,
            hint="read the first rows only with nrows=..., or raise max_bytes (max_bytes=None: "
                 "no limit) on a machine with enough memory")
    return Source(path, path=path, size=size)


def _read_stream(fh, name: str, max_bytes) -> Source:
    parts, total = [], 0
    while True:
        chunk = fh.read(_PIPE_READ)
        if not chunk:
            break
        if total == 0 and b"\x00" in chunk[:_SNIFF_BYTES]:
            raise DataError("the input holds NUL bytes: it is binary data, not CSV text",
                            file=name, hint="export the data as CSV text")
        parts.append(chunk)
        total += len(chunk)
        if max_bytes is not None and total > max_bytes:
            raise FileTooLargeError(
                f"the input is larger than the max_bytes limit of {_human(max_bytes)}",
                file=name, fix=("raise the limit ({0}), or save it to a file and read that",
                                [("max_bytes", None)]))
    if total == 0:
        raise EmptyFileError("the input is empty (0 bytes)", file=name,
                             hint="check the command that writes into the pipe")
    data = b"".join(parts)
    return Source(name, data=data, size=total)


def _human(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} TB"


def _detect_encoding(raw: bytes, path, truncated: bool) -> str:
    bom = bom_encoding(raw)
    if bom is not None:
        return bom
    if b"\x00" in raw:
        raise DataError("the file holds NUL bytes: it is a binary file, not a CSV text file",
                        file=path, hint="export the data as CSV text, or pass its encoding "
                                        "(encoding='utf-16' for UTF-16 without a byte-order "
                                        "mark)")
    try:
        codecs.getincrementaldecoder("utf-8")().decode(raw, final=not truncated)
        return "utf-8"
    except UnicodeDecodeError:
        pass
    # cut at a line break: a multi-byte character is never split there (no trail byte of
    # these encodings is a newline)
    cut = raw.rfind(b"\n") if truncated else len(raw)
    return guess_legacy(raw[:cut if cut > 0 else len(raw)])[0]


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
_DOT_GROUPS = re.compile(r"^[+-]?\d{1,3}(\.\d{3})+$")


def _detect_decimal(records: list[list[str]], delimiter: str) -> str:
    if delimiter == ",":
        return "."
    n_comma = n_dot = 0
    for rec in records:
        for cell in rec:
            c = cell.strip()
            if _DEC_COMMA.match(c):
                n_comma += 1
            elif _DEC_DOT.match(c) and not _DOT_GROUPS.match(c):    # "1.234": either mark
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


def _numbered(cells: list[str]) -> bool:
    """Integers with one constant non-zero step, at least three: how columns get numbered."""
    if len(cells) < 3 or not all(re.fullmatch(r"[+-]?[0-9]+", c) for c in cells):
        return False
    v = [int(c) for c in cells]
    step = v[1] - v[0]
    return step != 0 and all(b - a == step for a, b in zip(v, v[1:]))


def _unindexed(cells: list[str]) -> list[str]:
    """The cells after an empty first one: pandas names its index column "" (",0,1,2")."""
    return cells[1:] if cells and cells[0] == "" else cells


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
        # The reverse: a number above a text column (",0,1,...,14" over "State-gov, Male").
        if (numeric * 10 < len(col) and cell.strip() not in na and cell.strip()
                and _is_number(cell, decimal)):
            return True
    cells = [c.strip() for c in first]
    if _numbered(_unindexed(cells)) and not any(
            _numbered(_unindexed([c.strip() for c in r])) for r in rest):
        return True      # column numbers as names ("1,2,3", "0,1,...,783"), not a data row
    # Unnamed leading columns (",,y": an index a spreadsheet or pandas left unnamed) do not
    # make a header data; the named cells decide.
    lead = next((j for j, c in enumerate(cells) if c), len(cells))
    cols = range(lead, len(cells))
    if (lead == len(cells) or any(cells[j] in na or _is_number(cells[j], decimal) for j in cols)
            or len({cells[j] for j in cols}) != len(cols)):
        return False
    # An all-text file: a header names its columns, so its cells do not recur as values.
    return all(cells[j] not in {r[j].strip() for r in rest if j < len(r)} for j in cols)


_SEP_LINE = re.compile(r'^\s*"?sep=(.)"?\s*$')


def _preamble(text: str, truncated: bool):
    """(lines to skip, what they are, the delimiter a "sep=" line names, the text after them).

    Excel writes "sep=;" as the first line to name the delimiter. Lines starting with "#"
    before the header are comments when they do not split like the line after them (a header
    "#id,x,y" splits into as many fields as the rows below it and is kept)."""
    lines = text.split("\n")
    if truncated and len(lines) > 1:
        lines = lines[:-1]
    skip, sep, what = 0, None, []
    if lines and _SEP_LINE.match(lines[0].rstrip("\r")):
        sep = _SEP_LINE.match(lines[0].rstrip("\r")).group(1)
        skip, what = 1, [f"Excel's {lines[0].strip()!r} line, naming the delimiter"]
    n_comments = 0
    while skip + n_comments < len(lines) and lines[skip + n_comments].lstrip().startswith("#"):
        n_comments += 1
    if n_comments and skip + n_comments < len(lines):
        after = "\n".join(lines[skip + n_comments:])
        d = sep or _detect_delimiter(after, truncated)
        width = len(next(csv.reader([lines[skip + n_comments]], delimiter=d), []))
        kept = n_comments
        for k in range(n_comments - 1, -1, -1):     # "#id,x,y" just above the rows: a header
            if len(next(csv.reader([lines[skip + k]], delimiter=d), [])) == width > 1:
                kept = k
            else:
                break
        if kept:
            what.append(f"{kept} comment line(s) starting with '#'")
        skip += kept
    if not skip:
        return 0, "", None, text
    return skip, " and ".join(what), sep, "\n".join(text.split("\n")[skip:])


def sniff_csv(path, *, encoding=None, delimiter=None, decimal=None, header=None,
              na_values=NA_VALUES, max_bytes=_DEFAULT_MAX_BYTES, nrows=None) -> Dialect:
    """Detect the dialect of a CSV file; any argument given explicitly is kept as is.

    Encoding: the byte-order mark's (UTF-8, UTF-16, UTF-32), else UTF-8 when the bytes decode
    so, else the best-scored legacy encoding (rwtool.data._charset: Windows-1252, Shift-JIS,
    EUC-KR, GB18030, Windows-1251), Latin-1 as the last resort.
    Delimiter: the one of tab, semicolon, comma that splits the first rows into a constant number
    (> 1) of fields (quotes respected). Decimal: "," when the delimiter is not a comma and the
    numbers look like "3,14". Header: the first row is a header when a column's first cell is
    text above numbers, or, in an all-text file, when no first-row cell recurs in its column.
    """
    src = open_source(path, max_bytes, nrows)
    path = src.name
    raw = src.head(_SNIFF_BYTES)
    truncated = len(raw) == _SNIFF_BYTES
    if encoding is None:
        encoding = _detect_encoding(raw, path, truncated)
    else:
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise EncodingError(f"unknown text encoding {encoding!r}", file=path,
                                hint="use e.g. 'utf-8', 'cp1252', 'shift_jis', 'gb18030', "
                                     "'euc_kr' or 'latin-1'") from None
    text = codecs.getincrementaldecoder(encoding)(errors="replace").decode(raw, final=False)
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip(" \t\r\n,;"):
        raise EmptyFileError("the file holds no data (only blank lines or delimiters)",
                             file=path)
    skip, skipped, sep, text = _preamble(text, truncated)
    if delimiter is None:
        delimiter = sep if sep is not None else _detect_delimiter(text, truncated)
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
    return Dialect(encoding=encoding, delimiter=delimiter, decimal=decimal, header=bool(header),
                   skip_lines=skip, skipped=skipped)

