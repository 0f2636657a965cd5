"""CSV in, numeric X and y out, with a replayable record of every encoding step.

``read_csv`` turns a CSV file into a :class:`Dataset` (float64 ``X``, labels or values ``y``,
encoded column names) and a :class:`Preprocessing` record that re-applies the same encoding to a
new file (``Preprocessing.apply_csv``) or to rows typed in a GUI (``transform_rows``);
``preview_csv`` gives the GUI the first rows, the detected dialect and per-column types and
missing counts; ``train_test_csv`` makes a holdout split (or reads a separate test file) with the
statistics learned on the training rows only. Every bad input raises a :class:`DataError`
subclass carrying ``file``, ``row`` (the 1-based line of the record in the file, the header
being line 1) and ``column``, so a caller can show it without a traceback.

This package's private modules: _dialect (sources, dialect), _charset (text encodings), _scan
and _read (tokenising and typing on pyarrow.csv), _encoding (the record), _options (the user's
column roles and options), _notes (notes on guesses to check), _dataset (Dataset, splits),
_stream (files larger than memory), _dask_io (many CSV or Parquet files as Dask arrays), _numfmt
(numbers written for people), _samples (the bundled sample files), _errors (the located
DataError subclasses). It must not scale features (the estimators own standardisation), learn
models, or import pandas or scikit-learn.

Must not import: rwtool.features, rwtool.model_selection, rwtool.solvers, rwtool.scale,
    rwtool.estimators, rwtool.persist, rwtool.report, rwtool.cli
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._dialect import _DEFAULT_MAX_BYTES, NA_VALUES, Dialect, open_source, sniff_csv
from ._notes import note_guesses
from ._read import parse
from ._split import load_kernels
from ._errors import (AllMissingError, ColumnNotFoundError, DataError, DuplicateColumnError,
                      EmptyFileError, EncodingError, FileTooLargeError, HeaderError,
                      HeaderOnlyError, HighCardinalityError, MissingColumnError, MissingValueError,
                      NonFiniteError, NonNumericError, QuoteError, RaggedRowError, ScaleError,
                      SingleClassError, TargetError, UnseenCategoryError)
from ._stream import CsvScan, iter_csv, scan_csv
from ._dask_io import read_files
from ._dataset import Dataset, split_indices
from ._samples import list_samples, samples_dir
from ._numfmt import describe_format, parse_formatted
from ._options import TASKS, _candidate_rows, _check_options, _roles
from ._encoding import (_DEFAULT_MAX_ABS, MISSING_POLICIES, Preprocessing, fit_record, infer_task,
                        _column_format, _fit_target, _require_rows)

__all__ = [
    "read_csv", "preview_csv", "train_test_csv", "sniff_csv", "split_indices",
    "scan_csv", "iter_csv", "CsvScan",
    "Dataset", "Preprocessing", "Dialect", "CsvPreview", "ColumnSummary",
    "DataError", "EmptyFileError", "HeaderOnlyError", "RaggedRowError", "NonNumericError",
    "NonFiniteError", "MissingValueError", "AllMissingError", "SingleClassError",
    "DuplicateColumnError", "FileTooLargeError", "HighCardinalityError",
    "UnseenCategoryError", "MissingColumnError", "ColumnNotFoundError", "EncodingError",
    "TargetError", "QuoteError", "HeaderError", "ScaleError", "NA_VALUES", "MISSING_POLICIES",
    "TASKS", "samples_dir", "list_samples", "read_files", "load_kernels",
]

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
    notes: list[str] = field(default_factory=list)    # e.g. the encoding switched

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
                "notes": list(self.notes),
                "suggested_target": self.suggested_target()}


def preview_csv(path, *, n_head: int = 20, nrows: int | None = None, encoding=None,
                delimiter=None, decimal=None, header=None, na_values=NA_VALUES,
                max_bytes=_DEFAULT_MAX_BYTES, names=None) -> CsvPreview:
    """Dialect, first ``n_head`` rows (as text) and a summary of every column.

    The whole file is scanned (or its first ``nrows`` rows) so missing counts and types are
    exact; structural errors (ragged rows, broken quotes) raise as in :func:`read_csv`.
    ``encoding``, ``delimiter``, ``decimal``, ``header`` override the detection and ``names``
    names the columns (see :func:`read_csv`), so a user can correct what was detected.
    """
    src = open_source(path, max_bytes, nrows)
    dialect = sniff_csv(src, encoding=encoding, delimiter=delimiter, decimal=decimal,
                        header=header, na_values=na_values, nrows=nrows)
    table = parse(src, dialect, nrows=nrows, na_values=na_values, head_rows=n_head,
                  fallback=encoding is None, names=names)
    note_guesses(table, header, names)
    cols, tasks, notes = [], {}, list(table.notes)
    for j, name in enumerate(table.names):
        c = table.column_at(j)
        n_num, n_text, n_miss = c.counts()
        kind = c.inferred_kind()
        nums = c.values[c.codes == -1]
        # "$3", "3%": numbers, as read_csv reads them
        fmt = _column_format(c, dialect.decimal, False, kind)[0] if n_text else None
        if fmt is not None:
            kind = "numeric"
            nums = np.concatenate([nums, parse_formatted(c.vocab, fmt)])
            notes.append(f"column {name!r}: numbers written with {describe_format(fmt)}")
        finite = nums[np.isfinite(nums)]
        n_distinct = len(np.unique(nums)) + (0 if fmt else c.n_distinct_text)
        if kind == "numeric":
            examples = c.vocab[:5]
        else:
            counts = c.category_counts(slice(None))
            examples = sorted(counts, key=counts.get, reverse=True)[:5]
        cols.append(ColumnSummary(name, j, kind, n_miss, n_num, n_text, n_distinct,
                                  float(finite.min()) if len(finite) else None,
                                  float(finite.max()) if len(finite) else None, examples))
        tasks[name] = infer_task(c, kind, np.flatnonzero(c.codes != -2))
    return CsvPreview(src.name, table.dialect, table.names, table.head, table.n_rows,
                      cols, nrows is None or table.n_rows < nrows, tasks, notes)


# ============================================================================ read_csv

def _read_table(path, target, features, ignore, categorical, numeric, encoding, delimiter,
                decimal, header, na_values, nrows, max_bytes, names=None):
    src = open_source(path, max_bytes, nrows)
    dialect = sniff_csv(src, encoding=encoding, delimiter=delimiter, decimal=decimal,
                        header=header, na_values=na_values, nrows=nrows)
    table = parse(src, dialect, nrows=nrows, na_values=na_values, fallback=encoding is None,
                  names=names)
    _require_rows(table)
    tname, feats, cat, num = _roles(table, target, features, ignore, categorical, numeric)
    note_guesses(table, header, names, feats)
    return table, tname, feats, cat, num


def read_csv(path, target=None, *, features=None, ignore=None, categorical=None, numeric=None,
             task: str = "auto", missing: str = "error", max_categories: int = 50,
             handle_unknown: str = "error", encoding=None, delimiter=None, decimal=None,
             header=None, na_values=NA_VALUES, max_abs: float = _DEFAULT_MAX_ABS,
             nrows: int | None = None, max_bytes: int | None = _DEFAULT_MAX_BYTES,
             names=None) -> Dataset:
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
        Dialect; None detects it (:func:`sniff_csv`). ``header=True`` reads the first line as
        column names, ``False`` as data.
    names : list of str, optional
        Column names, one per field: they name a header-less file's columns (instead of
        col1, col2, ...) or replace the header line's names. A record learned on a header-less
        file replays its names on the next header-less file.
    na_values : sequence of str
        Cell texts that mean "missing" (compared after stripping spaces).
    max_abs : float, default 1e100
        Values with a larger magnitude are refused (their squares overflow in standardisation).
    nrows : int, optional
        Read only the first ``nrows`` records, at least 1 (the size limit then does not
        apply).
    max_bytes : int or None, default 1 GiB
        Refuse larger files (memory is about three times the file size).

    Raises
    ------
    DataError (a subclass per problem) naming the file, row and column.
    """
    policy = _check_options(task, missing, max_categories, handle_unknown)
    table, tname, feats, cat, num = _read_table(
        path, target, features, ignore, categorical, numeric, encoding, delimiter, decimal,
        header, na_values, nrows, max_bytes, names)
    rows, notes = _candidate_rows(table, tname, policy, tname is not None)
    pre = fit_record(table, tname, feats, cat, num, task, policy, max_categories,
                      handle_unknown, na_values, max_abs, rows)
    ds = pre._encode(table, rows, with_target=tname is not None)
    ds.notes[:0] = notes
    return ds


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
        options.get("nrows"), options.get("max_bytes", _DEFAULT_MAX_BYTES),
        options.get("names"))
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
    # the column kinds and the task from every row, as read_csv decides them; the statistics
    # from the training rows
    pre = fit_record(table, tname, feats, cat, num, probe["task"], policy,
                      options.get("max_categories", 50), options.get("handle_unknown", "error"),
                      na_values, options.get("max_abs", _DEFAULT_MAX_ABS), rows[tr], rows)
    train = pre._encode(table, rows[tr], with_target=True)
    tst = pre._encode(table, rows[te], with_target=True)
    train.notes[:0] = notes
    return train, tst
