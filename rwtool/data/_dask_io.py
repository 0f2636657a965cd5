"""Many CSV or Parquet files as Dask arrays, encoded by rwtool's replayable encoding record.

:func:`read_files` turns a glob or a list of files into ``(X, y, preprocessing)``: X a Dask array
of the encoded columns (one partition per file), y the target, and the
:class:`~rwtool.data.Preprocessing` record that encoded them, which a model file keeps so that
``rwtool predict`` replays it on new files. The record is learned on one file (``sample``,
default the first: column kinds, one-hot categories, imputation, classes, by the streaming pass
one of rwtool.data._stream for CSV), or given (``preprocessing=``, e.g. a saved model's). Every
file is then encoded on the workers by replaying that record, with the same located errors as
``rwtool.read_csv`` (a category absent from the sample file is an UnseenCategoryError naming
the file and line, unless the record says ``handle_unknown="ignore"``). Each file must fit in a
worker's memory; the collection need not fit anywhere.

Partition sizes are not known before the files are read, so the estimators count them in one
extra pass (``compute_chunk_sizes``); ``X.persist()`` on a cluster with room keeps the encoded
partitions and saves that re-reading. Dask and pyarrow.parquet are imported here only.
"""

from __future__ import annotations

import glob
import os

import numpy as np

from ._dialect import NA_VALUES, Dialect
from ._encoding import _DEFAULT_MAX_ABS, _require_rows, fit_record
from ._options import _candidate_rows, _check_options, _roles
from ._read import Column, Table
from ._stream import iter_csv, scan_csv

__all__ = ["read_files", "learn_encoding", "encode_file"]

_PARQUET = (".parquet", ".pq", ".parq")


def _expand(paths) -> list[str]:
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    files = []
    for item in items:
        item = os.fspath(item)
        found = sorted(glob.glob(item)) if glob.has_magic(item) else [item]
        if not found:
            raise FileNotFoundError(f"no file matches {item!r}")
        files.extend(found)
    if not files:
        raise ValueError("no file given: pass a path, a glob such as 'data/*.csv', or a list")
    for f in files:
        if not os.path.isfile(f):
            raise FileNotFoundError(f"{f!r} is not a file")
    return files


def _is_parquet(path: str) -> bool:
    return path.lower().endswith(_PARQUET)


def _parquet_table(path, columns=None):
    """A Parquet file as rwtool's parsed-table form: every cell as text, null as empty."""
    import pyarrow.compute as pc   # Parquet files only: not loaded for CSV reading
    import pyarrow.parquet as pq

    tbl = pq.read_table(path, columns=columns)
    names = list(tbl.column_names)
    na = frozenset(NA_VALUES)
    cols = {}
    for j, name in enumerate(names):
        text = pc.fill_null(pc.cast(tbl.column(name), "string"), "").to_pylist()
        col = Column(name, j, 10_000, False)
        col.add_chunk(text, ".", na)
        col.finish()
        cols[j] = col
    lines = np.arange(1, tbl.num_rows + 1, dtype=np.int64)   # "line" = row number in the file
    return Table(os.fspath(path), Dialect(header=True), names, lines, cols, [])


def learn_encoding(path, target=None, *, features=None, ignore=None, categorical=None,
                   numeric=None, task="auto", missing="error", max_categories=50,
                   handle_unknown="error", **csv_options):
    """The encoding record of one CSV or Parquet file (what ``rwtool.read_csv`` would learn)."""
    path = os.fspath(path)
    if not _is_parquet(path):
        # only the record is kept: no typed blocks held or spilled for a pass two not made here
        return scan_csv(path, target, features=features, ignore=ignore, categorical=categorical,
                        numeric=numeric, task=task, missing=missing,
                        max_categories=max_categories, handle_unknown=handle_unknown,
                        moments=False,
                        **{"keep_bytes": 0, "spill_dir": False, **csv_options}).preprocessing
    policy = _check_options(task, missing, max_categories, handle_unknown)
    table = _parquet_table(path)
    _require_rows(table)
    tname, feats, cat, num = _roles(table, target, features, ignore, categorical, numeric)
    rows, _ = _candidate_rows(table, tname, policy, tname is not None)
    return fit_record(table, tname, feats, cat, num, task, policy, max_categories,
                      handle_unknown, NA_VALUES, _DEFAULT_MAX_ABS, rows)


def encode_file(path, preprocessing, with_target: bool):
    """``(X, y)`` of one file encoded by the record (y None without the target)."""
    pre = preprocessing
    if _is_parquet(path):
        need = pre.input_columns + ([pre.target["name"]] if with_target else [])
        table = _parquet_table(path, need)
        ds = pre._encode(table, np.arange(table.n_rows), with_target=with_target,
                         allow_empty=True)
        return ds.X, ds.y
    Xs, ys = [], []
    for ds in iter_csv(path, pre, require_target=with_target):
        Xs.append(ds.X)
        ys.append(ds.y)
    X = np.vstack(Xs) if Xs else np.empty((0, pre.n_features_out))
    y = (np.concatenate(ys) if ys else np.empty(0)) if with_target else None
    return X, y


def read_files(paths, target=None, *, preprocessing=None, sample=None, **options):
    """Read many CSV or Parquet files as Dask arrays: ``(X, y, preprocessing)``.

    Parameters
    ----------
    paths : a path, a glob ("data/part-*.csv") or a list of them; CSV and Parquet (by suffix).
    target : the target column (name or position); ignored when ``preprocessing`` is given.
    preprocessing : a :class:`~rwtool.data.Preprocessing` to replay (a saved model's record);
        None learns one from ``sample``.
    sample : the file the record is learned from (default: the first file).
    options : reading options of ``rwtool.read_csv`` (features, ignore, categorical, numeric,
        task, missing, max_categories, handle_unknown, and the CSV dialect).

    ``y`` is None when the files lack the recorded target.
    """
    import dask                     # optional (rwtool[dask]): loaded only for many files
    import dask.array as da

    files = _expand(paths)
    pre = preprocessing
    if pre is None:
        pre = learn_encoding(sample or files[0], target, **options)
    with_target = pre.target is not None
    encode = dask.delayed(encode_file, pure=True, nout=2)
    parts = [encode(f, pre, with_target) for f in files]
    width = pre.n_features_out
    X = da.concatenate([da.from_delayed(p[0], shape=(np.nan, width), dtype=float)
                        for p in parts])
    y = None
    if with_target:
        kind = pre.target.get("label_kind")
        dtype = float if pre.task == "regression" or kind == "float" else (
            np.int64 if kind == "int" else object)
        y = da.concatenate([da.from_delayed(p[1], shape=(np.nan,), dtype=dtype) for p in parts])
    return X, y, pre
