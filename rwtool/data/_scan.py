"""Record boundaries of CSV bytes: where each record starts and ends, on which line, how many
fields it has, and whether a quote is left open.

pyarrow.csv tokenises the cells but reports neither line numbers nor an unterminated quote (it
keeps the rest of the file as one cell). :func:`scan_records` runs one pass over the bytes with
the same quoting rules (a quote opens a quoted field only at the start of a field; ``""`` inside
quotes is one quote; text after a closing quote joins the field) and the same newlines (``\\n``,
``\\r\\n``, lone ``\\r``), so every record pyarrow returns has a known file line, and broken
structure is refused before any cell is typed. Records too wide for pyarrow.csv are split into
their cells here (:func:`split_columns`). It works on UTF-8 bytes (the structural characters
are ASCII). This module must not decode or type cells.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["scan_records", "compact_records", "split_columns", "BLANK", "TRAILING_EMPTY"]

BLANK = 1              # the record holds only spaces, tabs, delimiters and quotes
TRAILING_EMPTY = 2     # its last field is empty (a trailing delimiter when it has one too many)
NEWLINE_IN_QUOTES = 4  # a quoted field holds a line break


@njit(cache=True, nogil=True, inline="always")
def _emit(starts, ends, lines, nfields, flags, r, start, end, line, nf, fl):
    starts[r], ends[r], lines[r], nfields[r], flags[r] = start, end, line, nf, fl


@njit(cache=True, nogil=True)
def _scan(buf, cls, final, starts, ends, lines, nfields, flags):
    """Fill the per-record arrays; returns (n_records, consumed, n_lines, open_quote_line,
    max_record_bytes). ``cls`` classes each byte value: 0 ordinary text, 1 line feed,
    2 carriage return, 3 delimiter, 4 quote, 5 space or tab. ``consumed`` is the offset after
    the last complete record; with ``final`` the bytes after it form a last record (or an open
    quote: open_quote_line >= 0, the 0-based line where it opened, relative to the buffer)."""
    n = buf.shape[0]
    i = 0
    line = 0
    n_rec = 0
    rec_start = 0
    rec_line = 0
    nf = 1
    fl = BLANK | TRAILING_EMPTY
    field_start = True
    in_q = False
    q_line = -1
    consumed = 0
    consumed_lines = 0
    max_len = 0
    while i < n:
        k = cls[buf[i]]
        if in_q:
            if k == 0 or k == 3:
                j = i + 1          # a run of quoted text: the common case, no branches
                while j < n and (cls[buf[j]] == 0 or cls[buf[j]] == 3):
                    j += 1
                fl &= ~(BLANK | TRAILING_EMPTY)
                i = j
                continue
            if k == 4:
                if i + 1 < n:
                    if buf[i + 1] == buf[i]:
                        fl &= ~(BLANK | TRAILING_EMPTY)
                        i += 2
                        continue
                elif not final:
                    break            # cannot tell "" from a closing quote yet
                in_q = False
                i += 1
                continue
            if k == 1:
                line += 1
                fl |= NEWLINE_IN_QUOTES
            elif k == 2:
                if i + 1 < n and buf[i + 1] == 10:
                    i += 1
                elif i + 1 >= n and not final:
                    break
                line += 1
                fl |= NEWLINE_IN_QUOTES
            i += 1
            continue
        if k == 0:
            j = i + 1              # a run of unquoted text
            while j < n and cls[buf[j]] == 0:
                j += 1
            field_start = False
            fl &= ~(BLANK | TRAILING_EMPTY)
            i = j
            continue
        if k == 3:
            nf += 1
            field_start = True
            fl |= TRAILING_EMPTY
            i += 1
            continue
        if k == 1 or k == 2:
            end = i
            if k == 2:
                if i + 1 < n and buf[i + 1] == 10:
                    i += 1
                elif i + 1 >= n and not final:
                    break
            i += 1
            if end > rec_start:          # pyarrow skips empty lines; so do we
                _emit(starts, ends, lines, nfields, flags, n_rec, rec_start, end, rec_line,
                      nf, fl)
                n_rec += 1
                max_len = max(max_len, end - rec_start)
            line += 1
            consumed = i
            consumed_lines = line
            rec_start = i
            rec_line = line
            nf = 1
            fl = BLANK | TRAILING_EMPTY
            field_start = True
            continue
        if k == 4 and field_start:
            in_q = True
            q_line = line
            field_start = False
            i += 1
            continue
        field_start = False
        if k == 4:
            fl &= ~(BLANK | TRAILING_EMPTY)
        i += 1
    open_q = -1
    if final and i >= n:
        if in_q:
            open_q = q_line
        elif n > rec_start:
            _emit(starts, ends, lines, nfields, flags, n_rec, rec_start, n, rec_line, nf, fl)
            n_rec += 1
            max_len = max(max_len, n - rec_start)
            consumed = n
            consumed_lines = line
    return n_rec, consumed, consumed_lines, open_q, max_len


@njit(cache=True, nogil=True)
def _count_breaks(buf):
    n = 0
    for i in range(buf.shape[0]):
        if buf[i] == 10 or buf[i] == 13:
            n += 1
    return n


def scan_records(buf: np.ndarray, delimiter: str, quotechar: str, final: bool):
    """Records of ``buf`` (uint8): a dict of arrays ``starts``, ``ends`` (byte offsets, the
    line break excluded), ``lines`` (0-based line of each record start, relative to ``buf``),
    ``nfields``, ``flags`` (:data:`BLANK`, :data:`TRAILING_EMPTY`, ``NEWLINE_IN_QUOTES``), and
    ``consumed`` (bytes used: the rest starts a record that continues in the next block),
    ``n_lines`` (line breaks within the consumed bytes), ``open_quote`` (relative line of an
    unclosed quote when ``final``, else -1), ``max_len`` (longest record in bytes)."""
    bound = _count_breaks(buf) + 1
    starts = np.empty(bound, np.int64)
    ends = np.empty(bound, np.int64)
    lines = np.empty(bound, np.int64)
    nfields = np.empty(bound, np.int64)
    flags = np.empty(bound, np.uint8)
    cls = np.zeros(256, np.uint8)
    cls[10], cls[13], cls[32], cls[9] = 1, 2, 5, 5
    cls[ord(delimiter)], cls[ord(quotechar)] = 3, 4
    n, consumed, n_lines, open_q, max_len = _scan(buf, cls, final, starts, ends, lines,
                                                   nfields, flags)
    return {"starts": starts[:n], "ends": ends[:n], "lines": lines[:n],
            "nfields": nfields[:n], "flags": flags[:n], "consumed": int(consumed),
            "n_lines": int(n_lines), "open_quote": int(open_q), "max_len": int(max_len)}


@njit(cache=True, nogil=True)
def _compact(buf, starts, ends, out):
    k = 0
    for r in range(starts.shape[0]):
        for i in range(starts[r], ends[r]):
            out[k] = buf[i]
            k += 1
        out[k] = 10
        k += 1
    return k


def compact_records(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The records ``buf[starts[r]:ends[r]]`` one per line (blank ones and trailing delimiters
    left out by the caller's choice of ranges), as new bytes for the tokeniser."""
    out = np.empty(int(np.sum(ends - starts)) + len(starts), np.uint8)
    k = _compact(buf, starts, ends, out)
    return out[:k]


@njit(cache=True, nogil=True)
def _last_delimiter(buf, starts, ends, delim, out):
    for r in range(starts.shape[0]):
        j = ends[r] - 1
        while j >= starts[r] and buf[j] != delim:
            j -= 1
        out[r] = j if j >= starts[r] else ends[r]


def trim_trailing_field(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                        delimiter: str) -> np.ndarray:
    """New record ends without the last (empty) field and its delimiter."""
    out = np.empty(len(starts), np.int64)
    _last_delimiter(buf, starts, ends, np.uint8(ord(delimiter)), out)
    return out



@njit(cache=True, nogil=True)
def _split(buf, starts, ends, cls, ncols, want, offsets, data):
    """Walk the records column by column (a cursor per record), writing the cells of the
    columns ``want`` (sorted) one column after the other: ``offsets`` (len(want) * n + 1)
    and the unquoted bytes ``data``. With ``data`` empty, only count: returns the bytes the
    cells take, or -1 when a record does not hold exactly ``ncols`` fields."""
    n = starts.shape[0]
    cur = starts.copy()
    write = data.shape[0] > 0
    o = 0
    c = 0                      # cells written
    p = 0                      # next position in want
    for j in range(ncols):
        wanted = p < want.shape[0] and want[p] == j
        if wanted:
            p += 1
        for r in range(n):
            i = cur[r]
            end = ends[r]
            if i > end:
                return -1      # fewer fields than ncols
            if wanted and write:
                offsets[c] = o
                c += 1
            field_start = True
            in_q = False
            while i < end:
                b = buf[i]
                k = cls[b]
                if in_q:
                    if k == 4:
                        if i + 1 < end and buf[i + 1] == b:     # "" inside quotes: one quote
                            i += 1
                        else:
                            in_q = False
                            i += 1
                            continue
                elif k == 3:
                    break
                elif k == 4 and field_start:
                    in_q = True
                    field_start = False
                    i += 1
                    continue
                field_start = False
                if wanted:
                    if write:
                        data[o] = b
                    o += 1
                i += 1
            cur[r] = i + 1     # past the delimiter (past the end after the last field)
    for r in range(n):
        if cur[r] != ends[r] + 1:
            return -1          # more fields than ncols
    if write and want.shape[0]:
        offsets[c] = o
    return o


def split_columns(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, delimiter: str,
                  quotechar: str, ncols: int, want: np.ndarray):
    """The cells of columns ``want`` (sorted positions) of the records ``buf[starts[r]:
    ends[r]]``, each of ``ncols`` fields, one column after the other: (offsets, data) of a
    string array of len(want) * n cells, cell (column want[p], record r) at p * n + r, with
    the quoting rules of :func:`scan_records` (the quotes of a quoted field removed, ``""``
    inside them one quote). For records too wide for a tokeniser (pyarrow.csv holds about
    9 KB per column of a block: 5.8 GB for a 6 MB file of 500,000 columns): one walk over the
    bytes to size the cells, one to write them, and nothing per cell but its offset. None when
    a record does not hold ``ncols`` fields."""
    cls = np.zeros(256, np.uint8)
    cls[ord(delimiter)], cls[ord(quotechar)] = 3, 4
    want = np.asarray(want, np.int64)
    n_cells = len(want) * len(starts)
    size = _split(buf, starts, ends, cls, ncols, want, np.empty(0, np.int64),
                  np.empty(0, np.uint8))
    if size < 0:
        return None
    offsets = np.empty(n_cells + 1, np.int32 if size < 1 << 31 else np.int64)
    data = np.empty(max(size, 1), np.uint8)
    _split(buf, starts, ends, cls, ncols, want, offsets, data)
    if not n_cells:
        offsets[0] = 0
    return offsets, data[:size]
