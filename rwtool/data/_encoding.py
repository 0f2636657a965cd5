"""The replayable encoding of a CSV: which columns, how each becomes numbers, the target.

:class:`Preprocessing` is learned from a parsed table (``fit_record``: column kinds, one-hot
categories, imputation statistics, the target's task and classes) and replayed on any table with
the same columns (``Preprocessing._encode``), a new file (``apply_csv``) or rows typed in a form
(``transform_rows``). It serialises to plain JSON, which model files embed. This module must not
tokenise files (rwtool.data._read does) or scale features (the estimators standardise).
"""

from __future__ import annotations

import math
import re
from array import array
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from numba import njit

from ._dialect import _DEFAULT_MAX_BYTES, NA_VALUES, open_source, sniff_csv
from ._names import Names, concat, select
from ._read import Column, Table, canon, gc_paused, in_order, parse, positions, table_from_rows
from ._errors import (AllMissingError, HighCardinalityError, MissingColumnError, MissingValueError,
                      NonFiniteError, NonNumericError, SingleClassError, TargetError,
                      UnseenCategoryError, HeaderOnlyError, EmptyFileError, ScaleError)
from ..exceptions import Note
from ._dataset import Dataset
from ._numfmt import check_format, describe_format, detect_format, parse_formatted

__all__ = ["Preprocessing", "fit_record", "MISSING_POLICIES", "norm_policy", "infer_task"]

#: what to do with missing feature values
MISSING_POLICIES = ("error", "drop-rows", "impute-mean", "impute-most-frequent")

_DEFAULT_MAX_ABS = 1e100
_INTEGER_CLASSES_MAX = 10               # integer targets with at most this many values: classes
#: the fix of a missing value: a policy (each caller names the setting its own way)
_POLICY_FIX = ("choose a missing-value policy: {0}, {1} or {2}",
               [("missing", "drop-rows"), ("missing", "impute-mean"),
                ("missing", "impute-most-frequent")])
#: the number format of "1.234" beside "0,5": the thousands dot of a decimal-comma file
_DOT_THOUSANDS = {"currency": None, "percent": False, "thousands": ".", "decimal": ","}
_MIN_SCALE = 1e-150                     # below this, squares underflow (1e-150**2 ~ 1e-300)


def absent(names: Sequence[str], wanted: Sequence[str]) -> list[str]:
    """The names of ``wanted`` that ``names`` lacks, found together (either may be a wide
    file's :class:`~rwtool.data._names.Names`: no name is looked up one by one)."""
    return list(select(wanted, np.flatnonzero(positions(names, wanted) < 0)))


def infer_task(col: Column, kind: str, rows) -> str:
    if kind == "categorical":
        n = len(col.category_counts(rows))
        return "binary" if n <= 2 else "multiclass"
    u = col.unique_numbers(rows)
    u = u[np.isfinite(u)]
    if len(u) <= 2:
        return "binary"
    if len(u) <= _INTEGER_CLASSES_MAX and np.all(u == np.round(u)):
        return "multiclass"
    return "regression"


class ColumnSpecs(Sequence):
    """The column specs of a record, as a list of dicts reads them, each item a fresh dict.
    A plain numeric column (no number format) is kept as its name and fill in arrays, any other
    as its dict: a 500,000-column record must not cost a dict per column (90 MB). The names
    of a wide file's columns come as :class:`~rwtool.data._names.Names` and stay so (runs
    of them added in bulk are joined when first read)."""

    def __init__(self, specs: Iterable[Mapping] = ()):
        self._parts: list = []          # Names, or lists of str, one after the other
        self._n = 0
        self._fill = array("d")
        self._has_fill = array("b")
        self._other: dict[int, dict] = {}
        for spec in specs:
            self.append(spec)

    def append(self, spec: Mapping) -> None:
        plain = spec["kind"] == "numeric" and set(spec) <= {"name", "kind", "fill"}
        fill = spec.get("fill")
        self._add_names([spec["name"]])
        self._fill.append(fill if plain and fill is not None else 0.0)
        self._has_fill.append(plain and fill is not None)
        if not plain:
            self._other[self._n - 1] = dict(spec)

    def _add_names(self, names) -> None:
        if isinstance(names, Names):
            self._parts.append(names)
        elif self._parts and isinstance(self._parts[-1], list):
            self._parts[-1].extend(names)
        else:
            self._parts.append(list(names))
        self._n += len(names)

    @property
    def _names(self) -> Sequence[str]:
        """Every column's name: a list, or Names when a part is (read-only either way)."""
        if len(self._parts) != 1:
            self._parts = [concat(self._parts) if any(isinstance(p, Names) for p in
                                                      self._parts)
                           else [n for p in self._parts for n in p]]
        return self._parts[0]

    def extend_numeric(self, names: Sequence[str], fill: np.ndarray | None = None) -> None:
        """Plain numeric columns ``names`` with their ``fill`` (None: no fill), in bulk."""
        self._add_names(names)
        if fill is None:
            self._fill.frombytes(bytes(8 * len(names)))
            self._has_fill.frombytes(bytes(len(names)))
        else:
            self._fill.frombytes(np.asarray(fill, np.float64).tobytes())
            self._has_fill.frombytes(np.ones(len(names), np.int8).tobytes())

    def feature_names(self) -> Sequence[str]:
        """The names of the columns of ``X`` (see :attr:`Preprocessing.feature_names_out`),
        without a dict per plain column: a new list, or Names for a wide file's columns."""
        names = self._names
        parts, done = [], 0
        for i in sorted(self._other):
            parts.append(names[done:i])
            spec = self._other[i]
            if spec["kind"] == "numeric":
                parts.append([spec["name"]])
            else:
                parts.append([f"{spec['name']}={k}" for k in spec["categories"]])
            done = i + 1
        parts.append(names[done:])
        if isinstance(names, Names):
            return parts[0] if len(parts) == 1 else concat(parts)
        return [n for p in parts for n in p]

    def plain(self) -> bool:
        """Whether every column is a plain numeric one (no dict kept)."""
        return not self._other

    def layout(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """(names, widths in X, whether numeric, whether it has a number format) of every
        column, as arrays made without a dict per plain column."""
        n = len(self._names)
        widths = np.ones(n, np.int64)
        isnum = np.ones(n, bool)
        fmt = np.zeros(n, bool)
        for i, spec in self._other.items():
            isnum[i] = spec["kind"] == "numeric"
            widths[i] = 1 if isnum[i] else len(spec["categories"])
            fmt[i] = bool(spec.get("format"))
        return self._names, widths, isnum, fmt

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        i = range(len(self))[i]                 # negative positions; IndexError past the end
        other = self._other.get(i)
        if other is not None:
            return dict(other)
        return {"name": self._names[i], "kind": "numeric",
                "fill": self._fill[i] if self._has_fill[i] else None}

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and all(
            a == b for a, b in zip(self, other))

    def __repr__(self) -> str:
        return f"ColumnSpecs({list(self)!r})"


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

    def __init__(self, columns: Sequence[dict], target: dict | None, missing: str,
                 na_values: Sequence[str] = NA_VALUES, max_abs: float = _DEFAULT_MAX_ABS,
                 handle_unknown: str = "error", header: bool = True,
                 file_columns: Sequence[str] = ()):
        self.columns = columns if isinstance(columns, ColumnSpecs) else ColumnSpecs(columns)
        self.target = target
        self.missing = missing
        self.na_values = tuple(na_values)
        self.max_abs = float(max_abs)
        self.handle_unknown = handle_unknown
        self.header = bool(header)
        # a wide file's Names are immutable: held as they are, not copied
        self.file_columns = (file_columns if isinstance(file_columns, Names)
                             else list(file_columns))

    # -- description ------------------------------------------------------------------------
    @property
    def input_columns(self) -> list[str]:
        """The CSV columns the encoding reads, in order."""
        return list(self._inputs)

    @property
    def _inputs(self) -> Sequence[str]:
        """:attr:`input_columns` as the record holds them (Names for a wide file), not to be
        changed: what the readers look up."""
        return self.columns._names

    @property
    def given_names(self) -> list[str] | None:
        """The column names to give the reader of a new file: those of a headerless training
        file that were named by the user, None when the file's header (or col1, col2, ...)
        names them."""
        if self.header or all(n == f"col{j + 1}" for j, n in enumerate(self.file_columns)):
            return None
        return self.file_columns

    @property
    def feature_names_out(self) -> list[str]:
        """Names of the columns of ``X``: "age", "color=red", "color=blue", ..."""
        return list(self.columns.feature_names())

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
                if c.get("format"):
                    s += f" (written with {describe_format(c['format'])})"
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
                spec = {"name": c["name"], "kind": "numeric",
                        "fill": None if fill is None else float(fill)}
                if "format" in c:
                    if not check_format(c["format"]):
                        fail(f"column {c['name']!r} has an invalid number format")
                    spec["format"] = dict(c["format"])
                clean.append(spec)
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
        src = open_source(path, max_bytes, nrows)
        path = src.name
        dialect = sniff_csv(src, encoding=encoding, delimiter=delimiter, decimal=decimal,
                            header=self.header, na_values=self.na_values, nrows=nrows)
        need = self._inputs + ([self.target["name"]] if self.target else [])
        table = parse(src, dialect, usecols=need, nrows=nrows, na_values=self.na_values,
                      fallback=encoding is None, names=self.given_names)
        _require_rows(table)
        missing = absent(table.names, self._inputs)
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
        table = table_from_rows(names, cells, self.na_values, ".")
        ds = self._encode(table, np.arange(len(cells)), with_target=False, drop_ok=False)
        return ds.X

    # -- the encoder -------------------------------------------------------------------------
    @gc_paused()
    def _encode(self, table: Table, rows: np.ndarray, with_target: bool,
                drop_ok: bool = True, allow_empty: bool = False) -> "Dataset":
        path = table.path
        notes: list[str] = list(getattr(table, "notes", []))
        keep = np.ones(len(rows), dtype=bool)
        y = None
        # asked once: each column's question would be a pass over the row indices
        ordered = in_order(rows, table.n_rows)
        if with_target:
            y, ymiss = _target_values(table, self.target, rows, self.max_abs, ordered)
            if ymiss.any():
                notes.append(f"dropped {int(ymiss.sum())} row(s) with a missing target")
                keep &= ~ymiss
        # arrays from the specs: a wide record must not cost an object per column here
        if self.columns.plain():
            # every column a plain number (a wide file's usual record): column i is X's
            # column i and number i, one array for all three (no widths, offsets or slots)
            names = self.columns._names
            num = slot = voff = np.arange(len(names))
            cat = ioff = np.empty(0, np.int64)
            width, fmt = len(names), False
            numeric = names
        else:
            names, widths, isnum, fmt = self.columns.layout()
            offs = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
            num, cat = np.flatnonzero(isnum), np.flatnonzero(~isnum)
            slot = np.empty(len(isnum), np.int64)
            slot[num], slot[cat] = np.arange(len(num)), np.arange(len(cat))
            voff, ioff, width = offs[num], offs[cat], int(offs[-1])
            numeric = select(names, num)
        # Numeric columns are gathered and checked as one matrix (a 30,000-column file must
        # not pay numpy's per-call overhead per column); a column with a NaN (missing or
        # text), a value over max_abs or a number format goes through the per-column path.
        pos = table.number_rows(numeric)
        if bool(np.all(pos >= 0)) and ordered:
            # the table's own rows, not copied (copied below if a column is changed)
            V, vrow = table.numbers, pos
        else:
            dense = np.flatnonzero(pos >= 0)
            V, vrow = np.empty((len(num), len(rows))), np.arange(len(num))
            if len(dense):
                V[dense] = table.numbers[np.ix_(pos[dense], rows)]
            text = np.flatnonzero(pos < 0)
            for k, j in zip(text.tolist(),
                            positions(table.names, select(names, num[text])).tolist()):
                V[k] = table.column_at(j).values[rows]
        quick = np.zeros(len(names), bool)
        quick[num] = _within(V, vrow, self.max_abs)
        ids = np.empty((len(cat), len(rows)), np.int32)
        miss_cols = {}
        slow = np.flatnonzero(~quick | fmt)
        # found together: a wide file's names are looked up without a dict of them
        where = positions(table.names, select(names, slow))
        for i, j in zip(slow.tolist(), where.tolist()):
            spec = self.columns[i]
            if spec.get("format"):
                notes.append(format_note(spec))
            col = table.column_at(j)
            if spec["kind"] == "numeric":
                if V is table.numbers:          # the table is not changed: copy its rows
                    V, vrow = V[vrow], np.arange(len(num))
                V[slot[i]], miss = _numeric_block(col, rows, spec, self.max_abs, path,
                                                  table.lines, table.dialect.decimal)
            else:
                ids[slot[i]], miss = _categorical_block(col, rows, spec, self.handle_unknown,
                                                        path, table.lines, ordered)
            if miss.any():
                miss_cols[spec["name"]] = miss
        if miss_cols:
            anymiss = np.logical_or.reduce(list(miss_cols.values()))
            # Imputed columns have no missing cell left: what remains is an error unless rows
            # may be dropped (not for rows typed in a form, which must each get an answer).
            if self.missing != "drop-rows" or not drop_ok:
                first = int(np.flatnonzero(anymiss & keep)[0]) if (anymiss & keep).any() else None
                if first is not None:
                    col = next(n for n, m in miss_cols.items() if m[first])
                    detail = ", ".join(f"{n!r}: {int(m.sum())}" for n, m in miss_cols.items())
                    c = table.col(col)
                    excel = np.flatnonzero(getattr(c, "excel_rows", ()) == rows[first])
                    what = ("missing value" if not len(excel) else
                            f"the Excel error value {c.excel_texts[int(excel[0])]!r}, a missing "
                            f"value")
                    raise MissingValueError(
                        f"{what} (missing values per column: {detail})", file=path,
                        row=int(table.lines[rows[first]]), column=col,
                        fix=_POLICY_FIX)
            elif self.missing == "drop-rows":
                n_drop = int((anymiss & keep).sum())
                keep &= ~anymiss
                if n_drop:
                    notes.append(f"dropped {n_drop} row(s) with missing values")
        if keep.all():
            sel = np.arange(len(keep))          # no gather of the rows and y
        else:
            sel = np.flatnonzero(keep)
            rows = rows[sel]
            y = None if y is None else y[sel]
        if len(rows) == 0 and len(keep) and not allow_empty:
            raise AllMissingError(
                "no row is left after dropping the rows with missing values", file=path,
                fix=("impute instead ({0}) or ignore the mostly-empty columns",
                     [("missing", "impute-mean")]))
        return Dataset(X=EncodedRows(V, vrow, voff, ids, ioff, width, sel),
                       y=y, feature_names=self.columns.feature_names(),
                       target=None if self.target is None else self.target["name"],
                       task=self.task, preprocessing=self, rows=np.take(table.lines, rows),
                       source=path, dialect=table.dialect, notes=notes)


class EncodedRows:
    """The rows of ``X`` before the one-hot expansion: numbers (numeric column k is row
    ``vrow[k]`` of ``V``: the table's own number matrix, not copied, when no column was
    changed) and the category code of each categorical cell ``ids`` (-1, -2: all zeros), of
    the table rows ``sel``. What a :class:`Dataset` holds until its ``X`` is asked for: 8
    bytes per numeric cell and 4 per categorical one, where ``X`` takes 8 per category."""

    __slots__ = ("V", "vrow", "voff", "ids", "ioff", "width", "sel")

    def __init__(self, V, vrow, voff, ids, ioff, width: int, sel):
        self.V, self.vrow, self.voff, self.ids, self.ioff = V, vrow, voff, ids, ioff
        self.width, self.sel = width, sel

    @property
    def n_rows(self) -> int:
        return len(self.sel)

    def take(self, idx) -> "EncodedRows":
        """These rows' ``idx`` rows (no copy of the columns)."""
        return EncodedRows(self.V, self.vrow, self.voff, self.ids, self.ioff, self.width,
                           self.sel[idx])

    def dense(self) -> np.ndarray:
        """The float64 ``X``, written once, row by row."""
        X = np.empty((len(self.sel), self.width))
        _fill_rows(X, self.sel, self.V, self.vrow, self.voff, self.ids, self.ioff)
        return X


@njit(cache=True, nogil=True)
def _within(V, vrow, max_abs):
    """Per row ``vrow[k]`` of ``V``: whether every value is at most ``max_abs`` in magnitude
    (NaN is not), without the temporary arrays of ``np.abs(V) <= max_abs``."""
    out = np.ones(vrow.shape[0], np.bool_)
    for k in range(vrow.shape[0]):
        v = V[vrow[k]]
        for i in range(v.shape[0]):
            if not abs(v[i]) <= max_abs:
                out[k] = False
                break
    return out


@njit(cache=True, nogil=True)
def _fill_rows(X, sel, V, vrow, voff, ids, ioff):
    """``X[r]`` from row ``sel[r]`` of the encoded columns: numbers ``V[vrow[k]]`` at
    ``voff[k]``, a one at ``ioff[k] + ids[k]`` (none when negative), zeros elsewhere. Row by
    row, so the (possibly gigabyte) ``X`` is written once, in order."""
    for r in range(X.shape[0]):
        s = sel[r]
        row = X[r]
        row[:] = 0.0
        for k in range(vrow.shape[0]):
            row[voff[k]] = V[vrow[k], s]
        for k in range(ids.shape[0]):
            c = ids[k, s]
            if c >= 0:
                row[ioff[k] + c] = 1.0


def format_note(spec: dict) -> str:
    """The note on a numeric column read in a number format ("3,50 €")."""
    return f"column {spec['name']!r}: numbers written with {describe_format(spec['format'])}"


def _numeric_block(col: Column, rows, spec, max_abs, path, lines, decimal="."):
    codes, values = col.codes[rows], col.values[rows]
    text = np.flatnonzero(codes >= 0)
    fmt = spec.get("format")
    if fmt and len(text):
        parsed = parse_formatted(col.vocab, fmt)[codes[text]]
        ok = ~np.isnan(parsed)
        values, codes = values.copy(), codes.copy()
        values[text[ok]], codes[text[ok]] = parsed[ok], -1
        text = text[~ok]
    if len(text):
        i = int(text[0])
        cell = col.vocab[int(codes[i])]
        lit = Note.literal(cell)
        fix = ("fix the value, mark it missing (na_values), or declare the column categorical "
               "({1})", [("numeric", [col.name]), ("categorical", [col.name])])
        # what the cell looks like beside the column's other cells ("1,234" beside 0.25)
        cell_fmt, _ = detect_format([cell], decimal, False, col.decimal_marks(decimal))
        declare = "declare the column numeric ({0}) to read such cells as numbers"
        if re.match(r"^[+-]?\d+,\d+$", cell) and (cell_fmt or {}).get("thousands") != ",":
            fix = (f"it looks like a decimal comma: pass {{2}} or {declare}",
                   fix[1] + [("decimal", ",")])
        elif cell_fmt is not None and not fmt:
            fix = (f"it looks like a number written with "
                   f"{describe_format(cell_fmt)}: {declare}", fix[1])
        elif any(ch.isdigit() and not ch.isascii() for ch in cell):
            fix = ("only the digits 0-9 are read as numbers: convert the other digits "
                   "(Arabic-Indic, full-width, ...) in the file", [])
        elif re.fullmatch(r"\(\s*[$€£¥]?\s*[0-9][0-9.,' ]*\s*\)", cell):
            fix = (f"{lit} is how accounting writes a negative number: write it with a minus "
                   f"sign (-{lit.strip('() ')}) in the file, or export the column "
                   f"unformatted", [])
        elif re.fullmatch(r"[+-]?[0-9]+(_[0-9]+)+(\.[0-9]*)?", cell):
            fix = ("'_' is not a digit separator in a CSV number: remove it from the file", [])
        raise NonNumericError(
            f"non-numeric text {cell!r} in a numeric column ({len(text)} such cell(s))",
            file=path, row=int(lines[rows[i]]), column=col.name, fix=fix)
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
    return out, miss


def _categorical_block(col: Column, rows, spec, handle_unknown, path, lines, ordered=None):
    cats = spec["categories"]
    index = {k: i for i, k in enumerate(cats)}
    ids = col.category_ids(index, rows, ordered)
    unknown = np.flatnonzero(ids == -2)
    if len(unknown) and handle_unknown == "error":
        i = int(unknown[0])
        code = int(col.codes[rows[i]])
        cell = col.vocab[code] if code >= 0 else canon(col.values[rows[i]])
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
    return ids, miss             # -1 (missing) and -2 (unknown, ignored): all zeros


def _target_values(table: Table, target: dict, rows, max_abs: float = _DEFAULT_MAX_ABS,
                   ordered: bool | None = None):
    """(the target per row of ``rows``, whether it is missing); ``ordered``: whether ``rows``
    are all of the table's in order, when the caller knows (None: asked here)."""
    col = table.col(target["name"])
    if in_order(rows, table.n_rows) if ordered is None else ordered:   # no gather of cells
        codes, values = col.codes, col.values
    else:
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
        bad = np.flatnonzero((codes == -1) & ~(np.abs(values) <= max_abs))
        if len(bad):
            i = int(bad[0])
            v = values[i]
            raise NonFiniteError(
                "an infinite target value" if np.isinf(v) else
                f"the target value {v:g} is too large (|y| must be at most max_abs="
                f"{max_abs:g}: squared errors would overflow)", file=path,
                row=int(lines[rows[i]]), column=col.name,
                hint="rescale the target (divide it by a power of ten) or model log(y)")
        return values.copy(), miss
    kind = target["label_kind"]
    if kind == "str":
        # the labels are few: index an array of them rather than build a string per row;
        # label 0 is "" (a missing cell), then the texts, then the numbers
        num = codes == -1
        u, inv = np.unique(values[num], return_inverse=True)
        labels = np.array([""] + list(col.vocab) + [canon(v, table.dialect.decimal)
                                                   for v in u])
        ids = np.maximum(codes + np.int32(1), 0)
        if len(u):
            ids[num] = 1 + len(col.vocab) + inv.ravel()
        used = np.bincount(ids if not miss.any() else ids[~miss], minlength=len(labels)) > 0
        width = max((len(s) for s in labels[used]), default=1)
        # a label longer than the used ones is never taken: the cast may cut it
        return np.take(labels.astype(f"<U{max(width, 1)}"), ids), miss
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


def _mixed_target(col, rows, first, path) -> TargetError:
    """The error of a class target holding numbers and text: no reading of it is right (as
    numbers "1" and "1.0" are one class and the text is no number; as text they are two)."""
    n_num, n_text, _ = col.counts(rows)
    nums = ", ".join(canon(v) for v in col.unique_numbers(rows)[:5])
    return TargetError(
        f"the target mixes numbers ({n_num} cell(s): {nums}) and text ({n_text} cell(s), the "
        f"first {first[1]!r}): read as numbers the text is no label, read as text a number "
        f"written two ways ('1', '1.0') would be two classes", file=path, row=first[0],
        column=col.name,
        fix=("write every label the same way in the file (all numbers or all words), or blank "
             "the odd cells and choose {0} to drop their rows", [("missing", "drop-rows")]))


def _check_spellings(table, name) -> None:
    """Refuse a text-label target that writes one number two ways ("1" and "1.0"): as text
    they are two classes, as numbers one, and nothing in the file says which was meant (a
    spreadsheet writing one cell as a number is the usual cause). The file is read again for
    the column's cells: only such targets (text labels and some numbers) pay for it."""
    dups = table.spellings(name)
    if not dups:
        return
    label, spellings = dups[0]
    (a, la), (b, lb) = spellings[:2]
    raise TargetError(
        f"the target's labels are text, and the label {a!r} (first on line {la}) is also "
        f"written {b!r}: as text these are two classes, as numbers one, and the file does not "
        f"say which is meant" + (f" ({len(dups)} such labels)" if len(dups) > 1 else ""),
        file=table.path, row=lb, column=name,
        fix=(f"write each label one way in the file (e.g. every {b!r} as {a!r}, or the "
             f"other way round if they are different classes)", []))


def norm_policy(missing) -> str:
    key = str(missing).lower().replace("_", "-")
    aliases = {"drop": "drop-rows", "mean": "impute-mean", "most-frequent": "impute-most-frequent",
               "mode": "impute-most-frequent"}
    key = aliases.get(key, key)
    if key not in MISSING_POLICIES:
        raise ValueError(f"missing must be one of {', '.join(MISSING_POLICIES)}, got {missing!r}")
    return key


def _fit_target(table: Table, name: str, task: str, rows) -> dict:
    """The target's task and classes from its cells in ``rows`` (every one present)."""
    col = table.col(name)
    path = table.path
    n_num, n_text, _ = col.counts(rows)
    if n_num + n_text == 0:
        raise AllMissingError("the target column has no value", file=path, column=name)
    kind = col.inferred_kind(rows)
    if task == "auto":
        task = infer_task(col, kind, rows)
    if task == "regression":
        _check_scale(col, rows, path, "target")
        return {"name": name, "task": "regression", "classes": None, "label_kind": None}
    if kind == "categorical":
        if n_num and table.spellings is not None:
            _check_spellings(table, name)
        # a number among text labels is named as the file writes it ("2,5", not 2.5)
        classes = sorted(col.category_counts(rows, table.dialect.decimal))
        label_kind = "str"
    else:
        first = col.first_text(rows)
        if first is not None:
            raise _mixed_target(col, rows, first, path)
        u = col.unique_numbers(rows)
        if not np.all(np.isfinite(u)):
            raise NonFiniteError("an infinite target value", file=path,
                                 row=col.first_nonfinite(rows), column=name)
        if np.all(u == np.round(u)) and np.all(np.abs(u) < 2**53):
            classes, label_kind = [int(x) for x in u], "int"
        else:
            classes, label_kind = [float(x) for x in u], "float"
    if len(classes) < 2:
        raise SingleClassError(
            f"the target has a single class ({classes[0]!r} in all {n_num + n_text} rows); a "
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


def _column_format(col, decimal, declared, kind):
    """(format, reason, located) of the column's text cells, read beside its number cells.

    ``kind``: the column's kind by its cell counts. A few formatted cells among plain numbers
    ("1 000" among "25") get no format unless the column is ``declared`` numeric: the encoder
    refuses them, located (``located``); but "1.234" among "0,5" in a decimal-comma file is
    that file's thousands dot (the reader left such cells as text)."""
    located = kind == "numeric" and not declared
    if col.n_distinct_text > len(col.vocab):
        return None, None, located      # more distinct texts than kept: not one number style
    fmt, why = detect_format(col.vocab, decimal, declared, col.decimal_marks(decimal))
    return (None if located and fmt != _DOT_THOUSANDS else fmt), why, located


def _formatted_fill(col, rows, fmt, policy):
    counts = col.category_counts(rows)
    labels = list(counts)
    vals = parse_formatted(labels, fmt)
    plain = np.isnan(vals)
    vals[plain] = [float(x) if _is_float(x) else np.nan for x in np.array(labels)[plain]]
    cnt = np.array([counts[k] for k in labels], dtype=np.float64)
    ok = np.isfinite(vals)
    if not ok.any():
        return None
    if policy == "impute-mean":
        return float(np.sum(vals[ok] * cnt[ok]) / np.sum(cnt[ok]))
    best = cnt[ok].max()
    return float(np.min(vals[ok][cnt[ok] == best]))


def _is_float(x: str) -> bool:
    try:
        float(x)
        return True
    except ValueError:
        return False


def _trailing_delimiter(table, name) -> bool:
    """Whether ``name`` is the unnamed last column a delimiter at the end of every line makes
    (the header's included): an export habit, not a column."""
    n_num, n_text, _ = table.col(name).counts(slice(None))      # over every row
    return (table.dialect.header and name == table.names[-1] == f"col{len(table.names)}"
            and n_num + n_text == 0)


def _check_scale(col, rows, path, what):
    # Features on any scale are fine (the estimators standardise in units of each column's
    # largest value); a regression target this small makes every error metric underflow.
    top = col.max_magnitude(rows)
    if 0.0 < top < _MIN_SCALE:
        raise ScaleError(
            f"every value of this {what} is below {_MIN_SCALE:g} in magnitude (largest "
            f"{top:.3g}): squared errors underflow to zero, so no error or R^2 can be computed",
            file=path, column=col.name,
            hint=f"rescale it (e.g. multiply by 1e{-int(np.floor(np.log10(top)))}) before "
                 f"training")


def _fit_columns(table: Table, features, categorical, numeric, policy, max_categories,
                 fit_rows, kind_rows=None) -> "ColumnSpecs":
    """The feature columns' specs. A column's kind and number format are decided from
    ``kind_rows`` (default ``fit_rows``): a split file's training rows alone must not make
    a numeric column with one stray text cell categorical, which the whole file refuses."""
    path = table.path
    kind_rows = fit_rows if kind_rows is None else kind_rows
    # A column holding numbers only (and some in the rows asked) is numeric whatever else is
    # decided below: its spec is made from the table's arrays, not from a column object (a
    # 500,000-column file must not cost one per column).
    dense, n_fit, n_kind, mean = table.number_stats(features, fit_rows, kind_rows, policy)
    quick = dense & (n_fit > 0) & (n_kind > 0)
    impute = policy in ("impute-mean", "impute-most-frequent")
    # runs of such columns whose fill is known are added together, without a dict each
    bulk = quick & ~np.isnan(mean) if impute else quick.copy()
    if categorical:
        bulk &= np.fromiter((n not in categorical for n in features), bool, len(features))
    specs = ColumnSpecs()
    done = 0
    asked = np.flatnonzero(~bulk)
    # the columns asked one by one are found together (no dict of a wide file's names)
    where = positions(table.names, select(features, asked)).tolist() + [-1]
    for i, j in zip(asked.tolist() + [len(features)], where):
        if i > done:
            specs.extend_numeric(features[done:i], mean[done:i] if impute else None)
        done = i + 1
        if i == len(features):
            break
        name = features[i]
        if quick[i] and name not in categorical:
            spec = {"name": name, "kind": "numeric", "fill": None}
            if policy in ("impute-mean", "impute-most-frequent"):
                spec["fill"] = (float(mean[i]) if not np.isnan(mean[i]) else
                                table.column_at(j).numeric_fill(policy, fit_rows))
            specs.append(spec)
            continue
        col = table.column_at(j)
        n_num, n_text, n_miss = col.counts(fit_rows)
        if n_num + n_text == 0 and _trailing_delimiter(table, name):
            table.notes.append(f"every line ends with a delimiter: the unnamed empty column "
                               f"{len(table.names)} this makes ({name!r}) was left out")
            continue
        if n_num + n_text == 0:
            raise AllMissingError(
                f"every value of this column is missing ({n_miss} row(s))", file=path,
                column=name, fix=("ignore the column ({0})", [("ignore", [name])]))
        if name in categorical:
            kind = "categorical"
        elif name in numeric:
            kind = "numeric"
        else:
            kind = col.inferred_kind(kind_rows)
        fmt = None
        if col.counts(kind_rows)[1] and name not in categorical:
            # "$3", "3%", "1 000", "0,5", "1.234" beside "0,5": numbers when every text cell
            # is a number in one style shared with the column's number cells
            fmt, why, located = _column_format(col, table.dialect.decimal, name in numeric,
                                               kind)
            kind = "numeric" if fmt is not None else kind
            if why is not None and "comma" in why and not located:
                raise NonNumericError(
                    f"numbers like {col.vocab[0]!r}: {why}", file=path, column=name,
                    fix=("declare the column numeric ({0}) to read the comma as the file's "
                         "decimal mark says, or write the numbers without it",
                         [("numeric", [name])]))
        if kind == "numeric":
            spec = {"name": name, "kind": "numeric", "fill": None}
            if fmt is not None:
                spec["format"] = fmt
            if policy in ("impute-mean", "impute-most-frequent"):
                # None when a value is not finite: the encoder reports it
                spec["fill"] = (col.numeric_fill(policy, fit_rows) if fmt is None
                                else _formatted_fill(col, fit_rows, fmt, policy))
            specs.append(spec)
            continue
        counts = col.category_counts(slice(None))     # the file's vocabulary, all rows
        n_cat = max(len(counts), col.n_distinct_text)
        if n_cat > max_categories:
            raise HighCardinalityError(
                f"{n_cat} distinct values in a text column: one-hot encoding would add "
                f"{n_cat} columns (max_categories={max_categories})", file=path, column=name,
                fix=("ignore it ({0}) if it is an identifier or free text, or raise {1}",
                     [("ignore", [name]), ("max_categories", None)]))
        cats = sorted(counts)
        fill = None
        if policy in ("impute-mean", "impute-most-frequent"):
            fit_counts = col.category_counts(fit_rows) or counts
            fill = max(sorted(fit_counts), key=fit_counts.get)
        specs.append({"name": name, "kind": "categorical", "categories": cats, "fill": fill})
    return specs


@gc_paused()
def fit_record(table, tname, feats, cat, num, task, policy, max_categories, handle_unknown,
                na_values, max_abs, fit_rows, kind_rows=None) -> Preprocessing:
    """The record learned on ``fit_rows``, the column kinds decided on ``kind_rows`` (the
    whole file's rows with a target, when the fit sees a split of them)."""
    tspec = None if tname is None else _fit_target(table, tname, task, fit_rows)
    specs = _fit_columns(table, feats, cat, num, policy, max_categories, fit_rows, kind_rows)
    return Preprocessing(specs, tspec, policy, na_values, max_abs, handle_unknown,
                         table.dialect.header, table.names)


def _require_rows(table: Table) -> None:
    if table.n_rows == 0:
        if table.dialect.header:
            raise HeaderOnlyError("the file has a header line but no data rows", file=table.path,
                                  row=1, hint="add data rows below the header")
        raise EmptyFileError("the file holds no data rows", file=table.path)
