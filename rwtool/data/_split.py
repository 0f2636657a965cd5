"""A plainly clean block of CSV bytes split and typed in one numba pass, as pyarrow.csv would.

The reader's plain blocks (rwtool.data._read: no quote character, no carriage return, every
line one record) are split here once the first block has said which columns hold numbers
(:class:`rwtool.data._read.TypePlan`): a number column's cells are parsed to float64, a text
column's cells are dictionary-encoded by their bytes (each distinct cell once, in the order of
first occurrence, with an int32 index per cell: no string per cell, and no second pass to
encode them). The result is what pyarrow.csv gives for the same block under the same plan,
float64 arrays and dictionary arrays of the same texts, so the reader types it as before.

A number is parsed here only when its decimal value is exact in the arithmetic (at most 19
significant digits, the mantissa below 2^53, a power of ten up to 10^22: one correctly rounded
multiplication or division, Clinger's fast path); any other cell of the number grammar is
handed to pyarrow's cast (correctly rounded, the conversion pyarrow.csv applies). A cell that
is not a number of that grammar (optional spaces or tabs, sign, digits, decimal point,
exponent) nor a missing-value token as written, a line with another field count, an empty or
blank line: the block is refused (None) and pyarrow.csv splits it as before, which also
demotes a column that holds text and leaves structural problems to the record scan.

This module must not read files, decide a column's type from its cells, or type text cells:
it only splits and parses what the plan says are numbers.
"""

from __future__ import annotations

import sys

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

from ._handoff import Deferred

pa = Deferred("pyarrow", globals(), "pa")
pc = Deferred("pyarrow.compute", globals(), "pc")

__all__ = ["split_plain"]

SKIP, NUMBER, TEXT = 0, 1, 2
_OK, _UNSURE, _OTHER = 0, 1, 2

# 10^0 .. 10^22: each exact in float64
_POW10 = np.array([10.0 ** k for k in range(23)])
_TWO53 = np.uint64(1) << np.uint64(53)
_SEED = np.uint64(14695981039346656037)
_PRIME = np.uint64(0x9E3779B97F4A7C15)      # odd, well mixed: a multiply spreads every bit up
_ONES = np.uint64(0x0101010101010101)
_HIGHS = np.uint64(0x8080808080808080)
_NLW = np.uint64(0x0A0A0A0A0A0A0A0A)        # "\n" in every byte
#: every bit of a text cell's hash is used; tests set 0 to make every cell collide
_HASH_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True, nogil=True, inline="always")
def _parse_number(data, s, e, pow10):
    """(status, value, start, end) of the cell ``data[s:e]``: _OK and its value when exact by
    the fast path; _UNSURE when it is of the grammar but needs exact arithmetic (``start``,
    ``end``: the number without its spaces); _OTHER when it is not a number of the grammar."""
    while s < e and (data[s] == 32 or data[s] == 9):
        s += 1
    while e > s and (data[e - 1] == 32 or data[e - 1] == 9):
        e -= 1
    i = s
    neg = False
    if i < e and (data[i] == 43 or data[i] == 45):
        neg = data[i] == 45
        i += 1
    m = np.uint64(0)
    digits = 0               # all digits of the mantissa, leading zeros too
    scale = 0                # digits after the decimal point
    while i < e and 48 <= data[i] <= 57:
        m = m * np.uint64(10) + np.uint64(data[i] - 48)      # wraps past 19 digits: unused
        digits += 1
        i += 1
    if i < e and data[i] == 46:
        i += 1
        while i < e and 48 <= data[i] <= 57:
            m = m * np.uint64(10) + np.uint64(data[i] - 48)
            digits += 1
            scale += 1
            i += 1
    if digits == 0:
        return _OTHER, 0.0, s, e
    ex = 0
    if i < e and (data[i] == 101 or data[i] == 69):
        i += 1
        eneg = False
        if i < e and (data[i] == 43 or data[i] == 45):
            eneg = data[i] == 45
            i += 1
        if i >= e or not (48 <= data[i] <= 57):
            return _OTHER, 0.0, s, e
        while i < e and 48 <= data[i] <= 57:
            if ex < 100000:
                ex = ex * 10 + (data[i] - 48)
            i += 1
        if eneg:
            ex = -ex
    if i != e:
        return _OTHER, 0.0, s, e
    if digits > 19 or m >= _TWO53:       # (leading zeros count: then pyarrow's cast decides)
        return _UNSURE, 0.0, s, e
    if m == 0:
        return _OK, -0.0 if neg else 0.0, s, e
    p = ex - scale
    v = float(m)
    if 0 <= p <= 22:
        v = v * pow10[p]
    elif -22 <= p < 0:
        v = v / pow10[-p]
    else:
        return _UNSURE, 0.0, s, e
    return _OK, -v if neg else v, s, e


@intrinsic
def _load8(typingctx, data, i):
    """The 8 bytes ``data[i:i + 8]`` as a little-endian uint64, in one unaligned load (the
    caller makes sure they are inside the array)."""
    if not (isinstance(data, types.Array) and data.dtype == types.uint8):
        return None

    def codegen(context, builder, sig, args):
        arr = context.make_array(sig.args[0])(context, builder, args[0])
        at = context.cast(builder, args[1], sig.args[1], types.intp)
        ptr = builder.bitcast(builder.gep(arr.data, [at]), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)
    return types.uint64(data, i), codegen


@njit(cache=True, nogil=True, inline="always")
def _stops(w, dw):
    """Nonzero where a byte of the word ``w`` is the delimiter (``dw``: it in every byte) or a
    line break: its lowest set bit is exact (the high bit of the first such byte); bits above
    it may be wrong (the borrow of the subtraction), and are not used."""
    x = w ^ dw
    y = w ^ _NLW
    return (((x - _ONES) & ~x) | ((y - _ONES) & ~y)) & _HIGHS


@njit(cache=True, nogil=True, inline="always")
def _cell_end(data, pos, L, delim, dw):
    """Where the cell from ``pos`` ends: the offset of the next delimiter or line break, or L.
    8 bytes at a time while they are inside ``data``, then byte by byte."""
    while pos + 8 <= L:
        m = _stops(_load8(data, pos), dw)
        if m != 0:
            return pos + (np.int64(trailing_zeros(m)) >> 3)
        pos += 8
    while pos < L and data[pos] != delim and data[pos] != 10:
        pos += 1
    return pos


@njit(cache=True, nogil=True, inline="always")
def _text_cell(data, pos, L, delim, dw):
    """(end, hash) of the text cell from ``pos``: the end as :func:`_cell_end` finds it, the
    hash of its bytes on the way, one multiply per 8 bytes. The bytes are taken in words of
    8 from the cell's start (the last one, of 0-7 bytes, padded with zeros) whether they are
    read as words or, near the end of ``data``, byte by byte: equal cells hash equal."""
    s = pos
    h = _SEED
    while pos + 8 <= L:
        w = _load8(data, pos)
        m = _stops(w, dw)
        if m != 0:
            k = np.uint64(trailing_zeros(m)) & np.uint64(0x38)     # 8 x the bytes before
            h = (h ^ (w & ((np.uint64(1) << k) - np.uint64(1)))) * _PRIME
            pos += np.int64(k >> np.uint64(3))
            return pos, _fold(h, pos - s)
        h = (h ^ w) * _PRIME
        pos += 8
    w = np.uint64(0)
    sh = np.uint64(0)
    while pos < L and data[pos] != delim and data[pos] != 10:
        w |= np.uint64(data[pos]) << sh
        sh += np.uint64(8)
        pos += 1
        if sh == np.uint64(64):
            h = (h ^ w) * _PRIME
            w = np.uint64(0)
            sh = np.uint64(0)
    h = (h ^ w) * _PRIME
    return pos, _fold(h, pos - s)


@njit(cache=True, nogil=True, inline="always")
def _fold(h, n):
    """The hash ``h`` of a cell of ``n`` bytes, its high bits folded down (a table's slot is
    taken from the low bits, which the multiplies leave poorly mixed)."""
    h = (h ^ np.uint64(n)) * _PRIME
    return h ^ (h >> np.uint64(32))


@njit(cache=True, nogil=True, inline="always")
def _same_cell(data, a, s, n, L):
    """Whether data[a:a + n] and data[s:s + n] hold the same bytes (a <= s): 8 at a time, the
    last word masked, while the words are inside ``data``."""
    k = 0
    while k + 8 <= n:
        if _load8(data, a + k) != _load8(data, s + k):
            return False
        k += 8
    if k == n:
        return True
    if s + k + 8 <= L:
        x = _load8(data, a + k) ^ _load8(data, s + k)
        return (x & ((np.uint64(1) << np.uint64(8 * (n - k))) - np.uint64(1))) == 0
    for i in range(k, n):
        if data[a + i] != data[s + i]:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _number_cell(data, pos, L, delim, dw, pow10):
    """(end, status, value) of the number cell from ``pos``, read on the way when it is
    plainly written (optional sign, digits, optional decimal point and digits, nothing else)
    and exact by the fast path: status 0 and its value, as :func:`_parse_number` gives it.
    Otherwise status 1 and the cell's end only (the caller parses it whole)."""
    s = pos
    neg = False
    if pos < L and (data[pos] == 45 or data[pos] == 43):
        neg = data[pos] == 45
        pos += 1
    m = np.uint64(0)
    digits = 0
    while pos < L and np.uint8(data[pos] - 48) < 10:
        m = m * np.uint64(10) + np.uint64(data[pos] - 48)
        digits += 1
        pos += 1
    scale = 0
    if pos < L and data[pos] == 46:
        pos += 1
        while pos < L and np.uint8(data[pos] - 48) < 10:
            m = m * np.uint64(10) + np.uint64(data[pos] - 48)
            digits += 1
            scale += 1
            pos += 1
    if (pos == L or data[pos] == delim or data[pos] == 10) and 0 < digits <= 19 and \
            m < _TWO53 and scale <= 22:
        if m == 0:
            return pos, 0, -0.0 if neg else 0.0
        v = float(m) / pow10[scale] if scale else float(m)
        return pos, 0, -v if neg else v
    return _cell_end(data, s, L, delim, dw), 1, 0.0


@njit(cache=True, nogil=True, inline="always")
def _same_bytes(x, i, y, j, n):
    """Whether x[i:i + n] and y[j:j + n] hold the same bytes."""
    for k in range(n):
        if x[i + k] != y[j + k]:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _is_na(data, s, e, na_data, na_offsets):
    for t in range(na_offsets.shape[0] - 1):
        a, b = na_offsets[t], na_offsets[t + 1]
        if b - a == e - s and _same_bytes(data, s, na_data, a, e - s):
            return True
    return False


@njit(cache=True, nogil=True, inline="always")
def _maybe_blank(data, s, e):
    """Whether a text cell may be blank once trimmed: ASCII white space only, or a byte of a
    non-ASCII character (a Unicode space: left to pyarrow's check)."""
    for k in range(s, e):
        b = data[k]
        if not (b == 32 or 9 <= b <= 13 or 28 <= b <= 31 or b >= 128):
            return False
    return True


@njit(cache=True, nogil=True)
def _grow(slots, ent_start, ent_end, ent_hash, n_ent):
    """The hash tables twice as large, every column's entries inserted again."""
    size = slots.shape[1] * 2
    new = np.zeros((slots.shape[0], size), np.int32)
    mask = np.uint64(size - 1)
    for t in range(slots.shape[0]):
        for k in range(n_ent[t]):
            h = np.int64(ent_hash[t, k] & mask)
            while new[t, h] != 0:
                h = (h + 1) & (size - 1)
            new[t, h] = k + 1
    cap = size // 2
    s2 = np.empty((slots.shape[0], cap), np.int64)
    e2 = np.empty((slots.shape[0], cap), np.int64)
    h2 = np.empty((slots.shape[0], cap), np.uint64)
    for t in range(slots.shape[0]):       # loops: an array assignment compiles numba's
        for k in range(ent_start.shape[1]):  # shape-error message (docs/TESTING.md)
            s2[t, k] = ent_start[t, k]
            e2[t, k] = ent_end[t, k]
            h2[t, k] = ent_hash[t, k]
    return new, s2, e2, h2


@njit(cache=True, nogil=True)
def _rows(data, pos, row, delim, kinds, col_of, n, na_data, na_offsets, pow10, nums, codes,
          slots, ent_start, ent_end, ent_hash, n_ent, unsure, n_unsure, hmask):
    """Split the records of ``data`` from ``pos`` (record ``row``) on: (status, pos, row,
    unsure cells). status 0: done; 1: refused; 2 (a text column's distinct cells) or 3 (the
    unsure cells): that table is full, grow it and go on from ``pos`` (a record's start). No
    array is made or replaced here, so the loop keeps its arrays in registers."""
    ncols = kinds.shape[0]
    L = data.shape[0]
    mask = slots.shape[1] - 1
    cap = ent_start.shape[1]
    dw = _ONES * np.uint64(delim)
    while pos < L:
        if row >= n:
            return 1, pos, row, n_unsure
        line, line_unsure = pos, n_unsure
        j = 0
        blank = True
        while True:
            if j >= ncols:
                return 1, pos, row, n_unsure
            kind = kinds[j]
            s = pos
            if kind == 1:
                c = col_of[j]
                pos, st, v = _number_cell(data, pos, L, delim, dw, pow10)
                if st == 0:
                    nums[c, row] = v
                    blank = False
                else:
                    st, v, a, b = _parse_number(data, s, pos, pow10)
                    if st == 0:
                        nums[c, row] = v
                        blank = False
                    elif st == 1:
                        if n_unsure == unsure.shape[0]:
                            return 3, line, row, line_unsure
                        unsure[n_unsure, 0] = row
                        unsure[n_unsure, 1] = c
                        unsure[n_unsure, 2] = a
                        unsure[n_unsure, 3] = b
                        n_unsure += 1
                        blank = False
                    elif _is_na(data, s, pos, na_data, na_offsets):
                        nums[c, row] = np.nan
                    else:
                        return 1, pos, row, n_unsure
            elif kind == 2:
                t = col_of[j]
                pos, h = _text_cell(data, pos, L, delim, dw)
                h &= hmask
                w = pos - s
                at = np.int64(h & np.uint64(mask))
                k = -1
                while slots[t, at] != 0:
                    q = slots[t, at] - 1
                    if (ent_hash[t, q] == h and ent_end[t, q] - ent_start[t, q] == w
                            and _same_cell(data, ent_start[t, q], s, w, L)):
                        k = q
                        break
                    at = (at + 1) & mask
                if k < 0:                  # first met: a new entry
                    k = n_ent[t]
                    if k + 1 >= cap:
                        return 2, line, row, line_unsure
                    slots[t, at] = k + 1
                    ent_start[t, k] = s
                    ent_end[t, k] = pos
                    ent_hash[t, k] = h
                    n_ent[t] = k + 1
                codes[t, row] = k
                if blank and not _maybe_blank(data, s, pos):
                    blank = False
            else:
                pos = _cell_end(data, pos, L, delim, dw)
            j += 1
            if pos >= L or data[pos] == 10:
                pos += 1
                break
            pos += 1
        if j != ncols or blank:
            return 1, pos, row, n_unsure
        row += 1
    return (0 if row == n else 1), pos, row, n_unsure


@njit(cache=True, nogil=True)
def _split(data, delim, kinds, col_of, n, na_data, na_offsets, pow10, nums, hmask):
    """(status, codes (text columns, n), each text column's distinct cells as (start, end) in
    ``data`` and their count, the unsure number cells as (row, row of ``nums``, start, end)
    and their count); number column j written in row ``col_of[j]`` of ``nums``. status 0:
    split; 1: refused."""
    n_text = 0
    for j in range(kinds.shape[0]):
        if kinds[j] == 2:
            n_text += 1
    codes = np.empty((n_text, n), np.int32)
    size = 1024
    slots = np.zeros((n_text, size), np.int32)         # entry + 1, 0: empty
    ent_start = np.empty((n_text, size // 2), np.int64)
    ent_end = np.empty((n_text, size // 2), np.int64)
    ent_hash = np.empty((n_text, size // 2), np.uint64)
    n_ent = np.zeros(n_text, np.int64)
    unsure = np.empty((64, 4), np.int64)
    # int64, not the literal 0: numba would compile _rows once more for literal arguments
    pos, row, n_unsure = np.int64(0), np.int64(0), np.int64(0)
    while True:
        status, pos, row, n_unsure = _rows(data, pos, row, delim, kinds, col_of, n, na_data,
                                           na_offsets, pow10, nums, codes, slots, ent_start,
                                           ent_end, ent_hash, n_ent, unsure, n_unsure, hmask)
        if status < 2:
            return status, codes, ent_start, ent_end, n_ent, unsure, n_unsure
        if status == 3:
            more = np.empty((2 * unsure.shape[0], 4), np.int64)
            for i in range(unsure.shape[0]):   # a loop, as in _grow
                for c in range(4):
                    more[i, c] = unsure[i, c]
            unsure = more
        else:
            slots, ent_start, ent_end, ent_hash = _grow(slots, ent_start, ent_end, ent_hash,
                                                        n_ent)


@njit(cache=True, nogil=True)
def _gather(data, starts, ends):
    """The bytes ``data[starts[i]:ends[i]]`` one after the other, and their offsets (int32)."""
    offsets = np.empty(starts.shape[0] + 1, np.int32)
    offsets[0] = 0
    for i in range(starts.shape[0]):
        offsets[i + 1] = offsets[i] + (ends[i] - starts[i])
    out = np.empty(offsets[-1], np.uint8)
    for i in range(starts.shape[0]):
        o, a = offsets[i], starts[i]
        for k in range(ends[i] - a):
            out[o + k] = data[a + k]
    return out, offsets


def _strings(data, starts, ends):
    """A pyarrow string array of the cells ``data[starts[i]:ends[i]]``."""
    out, offsets = _gather(data, starts, ends)
    return pa.StringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(out))


def split_plain(data: np.ndarray, n: int, ncols: int, keep, numbers, delimiter: str,
                na, out: np.ndarray | None = None) -> dict | None:
    """Column index -> its cells, for the columns ``keep`` of the ``n`` records in ``data``
    (UTF-8 bytes of a plain block: no quote character, no carriage return): a pyarrow float64
    array (NaN for a missing cell) for the columns in ``numbers``, a dictionary array of the
    texts for the others; None when the block must be split by pyarrow.csv instead (see the
    module docstring). ``na``: the missing-value tokens, matched as written. ``out``: a
    (len(keep), n) float64 matrix to parse the numbers into (the row of a column's position
    in ``keep``; the float64 arrays are then views of it), so they need no copy."""
    d = delimiter.encode("utf-8")
    if len(d) != 1 or not len(keep) or n <= 0 or sys.byteorder != "little":
        return None         # (the words of 8 bytes are read little-endian)
    kinds = np.zeros(ncols, np.int8)
    col_of = np.zeros(ncols, np.int64)
    nn = nt = 0
    for kk, j in enumerate(keep):
        j = int(j)
        if j in numbers:
            kinds[j], col_of[j] = NUMBER, (nn if out is None else kk)
            nn += 1
        else:
            kinds[j], col_of[j] = TEXT, nt
            nt += 1
    tokens = [t.encode("utf-8") for t in na]
    na_offsets = np.cumsum([0] + [len(t) for t in tokens]).astype(np.int64)
    na_data = np.frombuffer(b"".join(tokens), np.uint8)
    if data.flags.writeable:
        # numba compiles a kernel once per array type, and a read-only array is a type of
        # its own: a read-only view of every block (and of the tokens, read-only as
        # frombuffer gives them) halves the splitter's cold-cache compilations
        data = data.view()
        data.flags.writeable = False
    nums = np.empty((nn, n)) if out is None else out
    status, codes, ent_start, ent_end, n_ent, unsure, n_unsure = _split(
        data, d[0], kinds, col_of, n, na_data, na_offsets, _POW10, nums, _HASH_MASK)
    if status:
        return None
    if n_unsure:
        u = unsure[:n_unsure]
        try:
            vals = pc.cast(_strings(data, u[:, 2], u[:, 3]), pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        nums[u[:, 1], u[:, 0]] = vals.to_numpy(zero_copy_only=False)
    cells = {}
    for j in keep:
        j = int(j)
        c = int(col_of[j])
        if kinds[j] == NUMBER:
            cells[j] = pa.array(nums[c])
        else:
            k = int(n_ent[c])
            dictionary = _strings(data, ent_start[c, :k], ent_end[c, :k])
            cells[j] = pa.DictionaryArray.from_arrays(pa.array(codes[c]), dictionary)
    return cells
