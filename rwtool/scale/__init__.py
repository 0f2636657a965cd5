"""Past memory: fits from chunks of rows, from Dask collections, and from CSV files on disk.

The exact least-squares solvers learn from sums over rows (rwtool.solvers), so the rows can come
in pieces. _streaming: ``partial_fit`` over chunks of rows, solved lazily from the sums;
_dask: the same fit on dask.array / dask.dataframe partitions (Dask is imported only when a Dask
collection is given); _train_csv: ``rwtool train`` on a CSV file larger than memory, read in
blocks by rwtool.data's two-pass reader. The estimators reach this package through their
partial_fit and Dask hooks (rwtool.estimators).

Must not import: rwtool.estimators, rwtool.persist, rwtool.report, rwtool.cli
"""

from ._dask import as_dask_arrays, fold_scores
from ._streaming import (AUTO_FOLDS, STREAM_SOLVERS, Moments, partial_fit, scan_moments,
                         solve_from_stats)
from ._train_csv import BLOCK_BYTES, StreamTraining, can_stream, train_csv

__all__ = ["Moments", "scan_moments", "partial_fit", "solve_from_stats", "STREAM_SOLVERS",
           "AUTO_FOLDS", "fold_scores", "as_dask_arrays", "StreamTraining", "train_csv",
           "can_stream", "BLOCK_BYTES"]
