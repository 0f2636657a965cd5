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

The pass reads words: each 64-byte chunk's delimiters and line breaks are found as a bit mask
(64 KiB of the block at a time, in a loop that vectorises), a cell's end is the mask's next set
bit, a text cell is hashed and compared with its dictionary entry 8 bytes at a time, a number
of 1-8 digits (and each run of 8 digits) is read as one word. The words are read
little-endian: on a big-endian machine every block goes to pyarrow.csv.

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

from ..threads import read_only
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
_THREES = np.uint64(0x3333333333333333)
_THREES_0 = np.uint64(0x3030303030303030)  # "0" in every byte
_F0 = np.uint64(0xF0F0F0F0F0F0F0F0)
_SIXES = np.uint64(0x0606060606060606)
_LOW2 = np.uint64(0x000000FF000000FF)
_MUL1 = np.uint64(0x000F424000000064)       # 100 + (1000000 << 32)
_MUL2 = np.uint64(0x0000271000000001)       # 1 + (10000 << 32)
#: every bit of a text cell's hash is used; tests set 0 to make every cell collide
_HASH_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_WINDOW = 1024          # 64-byte chunks whose stops are found at once (64 KiB: in cache)


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


@njit(cache=True, nogil=True)
def _fill_stops(data, c, delim, stops):
    """``stops[k]``: bit i set where byte i of the block's 64-byte chunk c + k is the
    delimiter or a line break (0 past the block's end). Apart from the cells' loop, so that
    it vectorises: 64 bytes compared at once, no branch per byte (the indices unsigned: a
    signed one would be checked for negative values, which stops the vectorising)."""
    L = data.shape[0]
    d = np.uint8(delim)
    full = min(stops.shape[0], max(0, L // 64 - c))
    for k in range(full):
        base = np.uint64((c + k) * 64)
        m = np.uint64(0)
        for i in range(64):
            b = data[base + np.uint64(i)]
            m |= np.uint64((b == d) | (b == 10)) << np.uint64(i)
        stops[k] = m
    for k in range(full, stops.shape[0]):
        base = (c + k) * 64
        m = np.uint64(0)
        for i in range(max(0, min(64, L - base))):
            b = data[base + i]
            m |= np.uint64((b == d) | (b == 10)) << np.uint64(i)
        stops[k] = m


@njit(cache=True, nogil=True, inline="always")
def _hash(data, s, e, L):
    """The hash of the text cell ``data[s:e]``: its bytes in words of 8 from its start (the
    last, of 0-7 bytes, padded with zeros), one multiply each; the last word read whole when
    its 8 bytes are inside ``data``, else byte by byte (the same word)."""
    h = _SEED
    p = s
    while p + 8 <= e:
        h = (h ^ _load8(data, p)) * _PRIME
        p += 8
    r = np.uint64(8 * (e - p))
    if p + 8 <= L:
        w = _load8(data, p) & ((np.uint64(1) << r) - np.uint64(1))
    else:
        w = np.uint64(0)
        for k in range(e - p):
            w |= np.uint64(data[p + k]) << np.uint64(8 * k)
    h = (h ^ w) * _PRIME
    h = (h ^ np.uint64(e - s)) * _PRIME          # the high bits folded down: a table's slot
    return h ^ (h >> np.uint64(32))              # is taken from the low ones


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
def _eight_digits(w):
    """Whether the 8 bytes of ``w`` are all ASCII digits."""
    return ((w & _F0) | (((w + _SIXES) & _F0) >> np.uint64(4))) == _THREES


@njit(cache=True, nogil=True, inline="always")
def _eight_digits_value(w):
    """The number the 8 ASCII digits of ``w`` write (the first in the lowest byte): three
    multiplies, no loop (as fast_float and simdjson read them)."""
    w = w - _THREES_0
    w = w * np.uint64(10) + (w >> np.uint64(8))
    return (((w & _LOW2) * _MUL1) + (((w >> np.uint64(16)) & _LOW2) * _MUL2)) >> np.uint64(32)


@njit(cache=True, nogil=True, inline="always")
def _fast_number(data, s, e, pow10):
    """(status, value) of the number cell ``data[s:e]``: 0 and its value when it is plainly
    written (optional sign, digits, optional decimal point and digits, nothing else) and
    exact by the fast path, as :func:`_parse_number` gives it; otherwise 1 (the caller parses
    it whole). Runs of 8 digits are read a word at a time."""
    i = s
    neg = False
    if i < e and (data[i] == 45 or data[i] == 43):
        neg = data[i] == 45
        i += 1
    n = e - i
    if 0 < n <= 8 and i + 8 <= data.shape[0]:
        # 1-8 bytes: taken as one word, its bytes moved to the top and "0"s put before them
        # (no loop, no branch on the length); whole when they are all digits
        sh = np.uint64(8 * (8 - n))
        w = (_load8(data, i) << sh) | ((_THREES_0 >> (sh ^ np.uint64(56))) >> np.uint64(8))
        if _eight_digits(w):
            v = float(_eight_digits_value(w))
            return 0, -v if neg else v
    m = np.uint64(0)
    digits = 0
    while i + 8 <= e:
        w = _load8(data, i)
        if not _eight_digits(w):
            break
        m = m * np.uint64(100000000) + _eight_digits_value(w)      # wraps past 19 digits:
        digits += 8                                                 # then unused
        i += 8
    while i < e and np.uint8(data[i] - 48) < 10:
        m = m * np.uint64(10) + np.uint64(data[i] - 48)
        digits += 1
        i += 1
    scale = 0
    if i < e and data[i] == 46:
        i += 1
        f = i
        while i + 8 <= e:
            w = _load8(data, i)
            if not _eight_digits(w):
                break
            m = m * np.uint64(100000000) + _eight_digits_value(w)
            i += 8
        while i < e and np.uint8(data[i] - 48) < 10:
            m = m * np.uint64(10) + np.uint64(data[i] - 48)
            i += 1
        scale = i - f
        digits += scale
    if i == e and 0 < digits <= 19 and m < _TWO53 and scale <= 22:
        if m == 0:
            return 0, -0.0 if neg else 0.0
        v = float(m) / pow10[scale] if scale else float(m)
        return 0, -v if neg else v
    return 1, 0.0


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
          slots, ent_start, ent_end, ent_hash, n_ent, unsure, n_unsure, hmask, stops):
    """Split the records of ``data`` from ``pos`` (record ``row``) on: (status, pos, row,
    unsure cells). status 0: done; 1: refused; 2 (a text column's distinct cells) or 3 (the
    unsure cells): that table is full, grow it and go on from ``pos`` (a record's start). No
    array is made or replaced here, so the loop keeps its arrays in registers."""
    ncols = kinds.shape[0]
    L = data.shape[0]
    mask = slots.shape[1] - 1
    cap = ent_start.shape[1]
    # the cursor: the 64-byte chunk ``chunk`` and the bits ``m`` of its stops not yet taken
    # (``stops`` holds the masks of the _WINDOW chunks of its window, see _fill_stops); a
    # cell's end costs a trailing-zero count, not a branch per byte nor one per cell length
    chunk = pos >> 6
    _fill_stops(data, chunk - (chunk & (_WINDOW - 1)), delim, stops)
    m = stops[chunk & (_WINDOW - 1)] & (_ALL << np.uint64(pos & 63))
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
            # the cell's end: the next stop of the cursor (written out here: as an inlined
            # function, the loop ran five times slower)
            while m == 0:
                chunk += 1
                if chunk * 64 >= L:
                    break
                if chunk & (_WINDOW - 1) == 0:
                    _fill_stops(data, chunk, delim, stops)
                m = stops[chunk & (_WINDOW - 1)]
            if m == 0:
                pos = L
            else:
                pos = chunk * 64 + np.int64(trailing_zeros(m))
                m &= m - np.uint64(1)
            if kind == 1:
                c = col_of[j]
                st, v = _fast_number(data, s, pos, pow10)
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
                h = _hash(data, s, pos, L) & hmask
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
    stops = np.empty(_WINDOW, np.uint64)
    # int64, not the literal 0: numba would compile _rows once more for literal arguments
    pos, row, n_unsure = np.int64(0), np.int64(0), np.int64(0)
    while True:
        status, pos, row, n_unsure = _rows(data, pos, row, delim, kinds, col_of, n, na_data,
                                           na_offsets, pow10, nums, codes, slots, ent_start,
                                           ent_end, ent_hash, n_ent, unsure, n_unsure, hmask,
                                           stops)
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
    # a read-only view of every block (the tokens are read-only as frombuffer gives them):
    # one array type, so the splitter compiles half as often on a cold cache
    data = read_only(data)
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


def load_kernels() -> None:
    """Load the splitter's kernels (compile them on a cold numba cache: seconds of CPU,
    docs/DATA.md) by splitting a two-line block with a number, a text and a missing cell, once
    into its own matrix and once into a view of a larger one (the reader parses into its
    matrix's columns: the other array layout). Only the second and later blocks of a file are
    split here, so a small file never loads them: an application calls this while it waits for
    its user, before the first file of realistic size."""
    data = np.frombuffer(b"1.5,a,NA\n2,b,3\n", np.uint8)
    split_plain(data, 2, 3, [0, 1, 2], {0, 2}, ",", ["NA"])
    split_plain(data, 2, 3, [0, 1, 2], {0, 2}, ",", ["NA"], np.empty((3, 4))[:, 1:3])
