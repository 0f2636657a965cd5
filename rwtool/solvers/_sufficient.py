"""The sufficient statistics of least squares on a fixed feature map: per-fold sums over rows.

For rows (x_i, y_i) with features phi(x_i), everything the exact least-squares solvers need is a
sum over rows (003 eq. 80-82; spec section 4.1):

    A_f = sum_{i in f} w_i phi(x_i) phi(x_i)^T,   B_f = sum_{i in f} w_i phi(x_i) y_i^T,
    m_f = sum_{i in f} w_i,   s_f = sum_{i in f} w_i y_i,   yy_f = sum_{i in f} w_i y_i * y_i

for each fold f of a k-fold split, w_i the row's weight (1 without ``sample_weight``; n_f
counts the rows themselves). A row of integer weight c adds exactly what c copies of it add, and
the copies share its fold (below), so every solve and every cross-validation score from these
sums treats weights as repeated rows; the search over reg needs to know nothing of weights. Sums add: chunks of a stream (``partial_fit``), partitions of a
Dask collection and blocks of an in-memory array all give the same statistics, and the model is
one T x T solve of the total, ``(A + m reg R + m eps I) a = B`` (ridge.py). The per-fold sums also
score any reg by cross-validation without a second pass over the data: for a fold f with
training-fold solution a = a(A - A_f, B - B_f), the validation residual is

    ||Y_f - Phi_f a||^2 = yy_f - 2 a^T B_f + a^T A_f a,

so the choice of reg on a stream costs one pass (:func:`select_reg`, the one criterion of every
mode). Accuracy is not such a sum: for classifiers the statistics may keep a
:class:`ValidationSample`, the rows with the smallest hash of their content, scored by
prediction. The Lasso in Gram mode solves from the same sums (Q = A / m, q = B / m,
||y||^2 / m). A row's fold is a deterministic function of its content -- the float64 values of
the row as the estimator receives it, before standardisation and features (:func:`row_keys`,
then a SplitMix64 hash, :func:`fold_of`) -- so a stream, a file read in chunks and a
partitioned collection split the same rows the same way, and the copies of a row (resampled or
upsampled data) share one fold: they are never on both sides of a validation split, which
would reward the reg that memorises them (a grouped k-fold, the groups being identical rows).

The sums of an in-memory fit that only chooses reg by :func:`select_reg` can keep the folds
apart on the leading ``fold_features`` columns alone, the model it searches with: A_f is then
t x t, and the total A of all T columns is accumulated over all rows at once beside them
(``A_total``; ridge.normal_equations ``joint``): the rows sorted by fold, A_f is the growth of
the total's leading t x t block over fold f's rows. The pass then costs a one-fold pass, the
same products of all T columns (at T = 8000 per-fold T x T sums held three 512 MB sums and a
fourth for their total; per-fold products of the t columns beside products of the rest ran
8-24% slower at T = 1000-2000), and the final solve reads ``A_total`` in place. Streams and Dask collections keep every column per fold (their
rows' count, which sets the search's columns, is known only at the end), as does the Lasso.

A chunk whose sums are not finite is refused with NumericalError before anything is added:
the sums stay exactly as they were, and a stream goes on with the next chunk.

This module knows feature maps only through ridge.normal_equations and ``linear_predict`` (the
validation sample's accuracy); it must not import estimators or Dask.
"""

from __future__ import annotations

import numpy as np
from numpy.linalg import LinAlgError

from ..exceptions import NumericalError
from ..progress import make_progress
from ..threads import single_blas_thread
from ._ridge import GramRows, RegPath, normal_equations, solve_normal_equations

__all__ = ["SufficientStats", "ValidationSample", "row_keys", "fold_of", "position_uniform",
           "select_reg", "search_features", "search_columns", "leading_model", "SEARCH_COST", "SEARCH_MIN_FEATURES",
           "COARSE_FEATURES",
           "class_of", "coded_accuracy", "block_accuracies", "FoldAccuracy",
           "scored_folds", "search_steps", "search_work", "TYPICAL_CANDIDATES", "best_index", "extension", "grow_grid", "COARSE_STRIDE",
           "PATH_MIN_REGS", "EXTEND_MAX", "REG_LIMITS", "REG_TIE", "REG_TIE_ABS"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _splitmix(positions, seed: int) -> np.ndarray:
    """SplitMix64 of each position: a well-mixed 64-bit hash any process can recompute."""
    offset = np.uint64(((int(seed) + 1) * int(_GOLDEN)) & 0xFFFFFFFFFFFFFFFF)
    z = np.asarray(positions, dtype=np.uint64) + offset   # arrays wrap around silently
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


#: seed of the rows' content hash (independent of the folds' and the sample's)
_ROW_SEED = 2
#: float64 values hashed per block of rows (512 KB: the block's temporaries stay in cache;
#: 2^20 took 5.7 / 15.6 ms against 3.0 / 10.9 ms on the adults / mnist 1-vs-7 training rows)
_HASH_BLOCK = 1 << 16


def row_keys(X) -> np.ndarray:
    """A 64-bit key per row of ``X``, a function of the row's float64 values alone (0.0 and
    -0.0 are one value): identical rows get identical keys, distinct rows distinct keys but
    with probability about 2^-64. A sum of the values' bits times odd per-column multipliers
    (wrapping, exact in any order) then mixed by SplitMix64; one pass over X in blocks."""
    X = np.asarray(X, dtype=np.float64)
    X = X[:, None] if X.ndim == 1 else X
    n, d = X.shape
    weights = _splitmix(np.arange(d, dtype=np.uint64), _ROW_SEED) | np.uint64(1)
    out = np.empty(n, dtype=np.uint64)
    step = max(1, _HASH_BLOCK // max(d, 1))
    for i in range(0, n, step):
        bits = (np.ascontiguousarray(X[i:i + step]) + 0.0).view(np.uint64)
        out[i:i + step] = (bits * weights).sum(axis=1, dtype=np.uint64)
    return _splitmix(out, _ROW_SEED)


def fold_of(keys, n_folds: int, seed: int = 0) -> np.ndarray:
    """The fold (0..n_folds-1) of each row, from its key (:func:`row_keys`; a row number works
    too, as any unsigned 64-bit key does).

    A hash of the key: folds look shuffled (a file sorted by class or time still gets every
    kind of row in every fold), yet any process computes a row's fold from the row alone,
    whatever the chunking.
    """
    return (_splitmix(keys, seed) % np.uint64(n_folds)).astype(np.int64)


def position_uniform(keys, seed: int = 0) -> np.ndarray:
    """A number in [0, 1) per key (a row's position or :func:`row_keys`), uniform and
    independent across keys and seeds (a holdout of fraction p is
    ``position_uniform(pos, seed) < p``)."""
    return (_splitmix(keys, seed) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def class_of(D: np.ndarray) -> np.ndarray:
    """The class of each row of decision values or +/-1 codes ``D`` (n, k): the index of the
    largest column, or for one column whether it is positive."""
    return np.argmax(D, axis=1) if D.shape[1] > 1 else D[:, 0] > 0


def coded_accuracy(D: np.ndarray, truth: np.ndarray, weights=None) -> float:
    """The share (weighted by ``weights``) of rows whose class (:func:`class_of`) is ``truth``;
    NaN when ``D`` is not finite (no score from non-finite decision values)."""
    if not np.isfinite(D).all():
        return float("nan")
    return float(np.average(class_of(D) == truth, weights=weights))


#: seed of the hash that picks the validation sample (independent of the folds' hash)
SAMPLE_SEED = 1


class ValidationSample:
    """The ``size`` rows (preprocessed X, coded Y, fold) whose keys (:func:`row_keys`) have the
    smallest :func:`position_uniform` hash under ``SAMPLE_SEED``, ties broken by position: a
    uniform sample of the data (all of it when it has at most ``size`` rows) whose membership
    depends on the rows alone -- chunks and partitions merged in any order keep the same rows
    (a bottom-k sketch), and the copies of a row are in it together, as they are in one fold.
    It lets reg="auto" score classifiers by accuracy, which is not a function of the sums, in
    every mode at the memory of ``size`` rows. Rows are kept in increasing (hash, position),
    except in a fresh sample that keeps every row offered: in the order offered (an in-memory
    fit offers its rows grouped by fold, so that each fold's are one slice).

    With ``features`` > 0 (an in-memory fit, which knows the columns the search scores with
    before its pass: :func:`search_columns`) the sample keeps, instead of X, the first
    ``features`` columns of the rows' features (``Phi``), captured as the blocks of the sums pass
    (:meth:`SufficientStats.add`): the search never featurises the rows again. Otherwise (a
    stream or Dask partitions, whose search columns depend on all the rows) it keeps X, and
    the search featurises it (:class:`FoldAccuracy`)."""

    def __init__(self, size: int, features: int = 0):
        self.size, self.features = int(size), int(features)
        self.key = np.empty(0)
        self.pos = np.empty(0, dtype=np.int64)
        self.fold = np.empty(0, dtype=np.int64)
        self.weight = np.empty(0)
        self.X = self.Y = self.Phi = None

    @property
    def nbytes(self) -> int:
        return int(self.key.nbytes * 4 + sum(0 if a is None else a.nbytes
                                             for a in (self.X, self.Y, self.Phi)))

    def candidates(self, keys, weights=None) -> np.ndarray:
        """The positions in a chunk of the rows that may enter the sample, in increasing
        (hash, position): weight above zero (rows of weight 0 are not data) and a hash below
        the largest one kept, at most ``size`` of them; :meth:`offer` keeps those the merge
        with the sample retains."""
        live = (np.arange(len(keys)) if weights is None or np.all(weights)
                else np.flatnonzero(np.asarray(weights) > 0))
        key = position_uniform(np.asarray(keys)[live], SAMPLE_SEED)
        if len(self.key) >= self.size:
            take = np.flatnonzero(key < self.key.max())
        elif len(key) > self.size:
            take = np.argpartition(key, self.size - 1)[:self.size]
        else:
            take = np.arange(len(live))
        return live[take[np.lexsort((live[take], key[take]))]]

    def offer(self, keys, positions, folds, X, Y, weights=None, rows=None,
              features=None) -> None:
        """Keep the rows of (X, Y) (their :func:`row_keys`, positions, folds, weights) that
        belong to the sample. ``rows``: :meth:`candidates` of the chunk, in that order
        (computed when None); ``features``: their features, aligned with ``rows``, which a
        sample of ``features`` columns needs and keeps (X is then not read)."""
        if self.features and (features is None or features.shape[1] != self.features):
            raise ValueError(f"this validation sample keeps {self.features} feature columns "
                             f"of its rows: offer their features (SufficientStats.add "
                             f"captures them as its blocks pass)")
        rows = self.candidates(keys, weights) if rows is None else np.asarray(rows)
        weight = np.ones(len(rows)) if weights is None else np.asarray(weights, dtype=float)[rows]
        self._merge(position_uniform(np.asarray(keys)[rows], SAMPLE_SEED),
                    np.asarray(positions, dtype=np.int64)[rows], np.asarray(folds)[rows],
                    weight, np.asarray(Y, dtype=float)[rows],
                    features if self.features else np.asarray(X, dtype=float),
                    None if self.features else rows)

    def _merge(self, key, pos, fold, weight, Y, data, data_rows=None):
        """Merge rows (hashes ``key``, positions, folds, weights, coded ``Y``) into the sample;
        their X (or features) are the rows ``data_rows`` of ``data`` (None: aligned with them),
        gathered once -- not at all when the sample was empty and they come in its order."""
        old = len(self.key)
        key, pos = np.concatenate([self.key, key]), np.concatenate([self.pos, pos])
        # a fresh sample keeping every row offered keeps their order (no copy of their data)
        order = (np.arange(len(key)) if not old and len(key) <= self.size
                 else np.lexsort((pos, key))[:self.size])
        self.key, self.pos = key[order], pos[order]
        self.fold = np.concatenate([self.fold, fold]).astype(np.int64)[order]
        self.weight = np.concatenate([self.weight, weight])[order]
        mine, new = order < old, np.flatnonzero(order >= old)
        picked = order[new] - old

        def gather(kept, incoming, at):
            if not old and at is None and np.array_equal(picked, np.arange(len(incoming))):
                return incoming                 # already the sample, in its order
            at = picked if at is None else at[picked]
            out = np.empty((len(order), incoming.shape[1]), dtype=incoming.dtype)
            if not old:     # only new rows: one gather, no temporary
                return np.take(incoming, at, axis=0, out=out)
            out[new] = incoming[at]
            out[mine] = kept[order[mine]]
            return out

        self.Y = gather(self.Y, Y, None)
        if self.features:
            self.Phi = gather(self.Phi, data, data_rows)
        else:
            self.X = gather(self.X, data, data_rows)

    def __add__(self, other: "ValidationSample") -> "ValidationSample":
        out = ValidationSample(self.size, self.features)
        for part in (self, other):
            if part.Y is not None:
                out._merge(part.key, part.pos, part.fold, part.weight, part.Y,
                           part.Phi if part.features else part.X)
        return out

    def accuracy(self, fold: int, feature_map, coefs: np.ndarray, n_outputs: int) -> np.ndarray:
        """Accuracy (weighted by the rows' weights) on the sample's rows of ``fold`` of each block
        of ``n_outputs`` columns of ``coefs`` (one block per reg; NaN where the decision values
        are not finite). A sample of features scores the coefficients of the leading
        ``len(coefs)`` columns of the map it was captured with (``feature_map`` unused).
        One use of :class:`FoldAccuracy`, which the search keeps across its candidates."""
        return FoldAccuracy(self, feature_map, [fold], n_outputs)(0, coefs)


def block_accuracies(D: np.ndarray, truth: np.ndarray, n_outputs: int,
                     weights=None) -> np.ndarray:
    """:func:`coded_accuracy` (weighted by the rows' ``weights``) of each block of
    ``n_outputs`` columns of decision values ``D`` (one block per candidate)."""
    return np.array([coded_accuracy(D[:, j:j + n_outputs], truth, weights)
                     for j in range(0, D.shape[1], n_outputs)])


class FoldAccuracy:
    """Accuracy on the validation sample's rows of fold ``folds[j]`` of the column blocks of a
    fold's coefficients (one block of ``n_outputs`` per candidate). The rows' features are the
    sample's captured ones when it keeps features (``sample.Phi``: leading columns of
    ``feature_map``, the map the sums were accumulated with), else computed by ``feature_map``
    once per fold, on first use; either way kept: every candidate, the grid's extensions and
    every lam of a Lasso path reuse them (at most ``sample.size`` x T numbers in all)."""

    def __init__(self, sample: ValidationSample, feature_map, folds, n_outputs: int):
        self.sample, self.feature_map, self.folds = sample, feature_map, list(folds)
        self.n_outputs = int(n_outputs)
        self._Phi, self._truth, self._weight = {}, {}, {}

    def __call__(self, j: int, coefs: np.ndarray, scale: float = 1.0) -> np.ndarray:
        """Accuracies of ``coefs``; with fewer rows than the map has features, the coefficients
        of the model on the map's leading ``len(coefs)`` features, whose columns are the map's
        divided by ``scale`` (:func:`leading_model`)."""
        if j not in self._Phi:
            rows = np.flatnonzero(self.sample.fold == self.folds[j])
            if not self.sample.features:
                self._Phi[j] = self.feature_map.transform(np.ascontiguousarray(
                    self.sample.X[rows]))
            elif len(rows) and rows[-1] - rows[0] + 1 == len(rows):
                self._Phi[j] = self.sample.Phi[rows[0]:rows[-1] + 1]    # grouped by fold
            else:
                self._Phi[j] = self.sample.Phi[rows]
            self._truth[j] = class_of(self.sample.Y[rows])
            self._weight[j] = self.sample.weight[rows]
        if coefs.shape[0] > self._Phi[j].shape[1]:
            raise ValueError(f"the validation sample keeps {self._Phi[j].shape[1]} feature "
                             f"columns, fewer than the {coefs.shape[0]} scored; capture at "
                             f"least search_columns of the rows (SufficientStats' "
                             f"sample_features)")
        D = self._Phi[j][:, :coefs.shape[0]] @ coefs
        return block_accuracies(D if scale == 1.0 else D / scale, self._truth[j],
                                self.n_outputs, self._weight[j])


#: from this many reg values on, one eigendecomposition per fold (ridge.RegPath) costs less than
#: a Cholesky solve per value: measured at T = 250 ... 1500 (one thread), numpy's eigh costs
#: 7 to 14 Cholesky factorisations, plus 2 to 6 for the reduction by G's factor
PATH_MIN_REGS = 10


class SufficientStats:
    """Per-fold sums A_f, B_f, n_f, m_f, s_f, yy_f of a least-squares problem (module doc);
    ``w`` holds the weight sums m_f, ``n`` the row counts.

    Parameters
    ----------
    n_features : int
        T, the number of columns of the feature matrix.
    n_outputs : int
        k, the number of target columns (classes one-vs-rest, or outputs).
    n_folds : int, default 1
        Folds kept apart for cross-validation (1: only the total, for a fixed reg).
    fold_seed : int, default 0
        Seed of :func:`fold_of`.
    sample_rows : int, default 0
        Size of the :class:`ValidationSample` kept beside the sums (``sample``; 0: none).
    sample_features : int, default 0
        The sample keeps the first this many columns of its rows' features, captured by
        :meth:`add` as the blocks pass, instead of the rows (0: the rows; see
        :class:`ValidationSample`). At least :func:`search_columns` of the rows' total weight.
    fold_features : int or None, default None
        t: the leading columns whose sums are kept per fold (A is F x t x t); the total of all
        T columns is then ``A_total`` (None when t = T, the default: every column per fold,
        the total their sum). At least :func:`search_columns` of the rows' total weight, for
        :func:`select_reg`; the per-fold solves and scores of more columns than t raise.

    The arrays are plain float64 numpy arrays, so the object pickles to Dask workers and back;
    it is never written to a model file.
    """

    def __init__(self, n_features: int, n_outputs: int, n_folds: int = 1, fold_seed: int = 0,
                 sample_rows: int = 0, sample_features: int = 0,
                 fold_features: int | None = None):
        if n_folds < 1:
            raise ValueError(f"n_folds must be >= 1, got {n_folds}")
        T, k, F = int(n_features), int(n_outputs), int(n_folds)
        t = T if fold_features is None else min(int(fold_features), T)
        if t < 1 and T > 0:
            raise ValueError(f"fold_features must be at least 1, got {fold_features}")
        self.A = np.zeros((F, t, t))
        self.A_total = np.zeros((T, T)) if t < T else None
        self.B = np.zeros((F, T, k))
        self.n = np.zeros(F, dtype=np.int64)
        self.w = np.zeros(F)
        self.ysum = np.zeros((F, k))
        self.yy = np.zeros((F, k))
        self.fold_seed = int(fold_seed)
        self.sample = (ValidationSample(sample_rows, min(int(sample_features), T))
                       if sample_rows else None)

    # -- shape -------------------------------------------------------------------------------
    @property
    def n_folds(self) -> int:
        return self.A.shape[0]

    @property
    def n_features(self) -> int:
        return self.B.shape[1]

    @property
    def fold_features(self) -> int:
        """t, the leading columns whose sums are kept per fold (n_features: all of them)."""
        return self.A.shape[1]

    @property
    def n_outputs(self) -> int:
        return self.B.shape[2]

    @property
    def n_samples(self) -> int:
        """Rows added so far (the position of the next row of a stream)."""
        return int(self.n.sum())

    @property
    def nbytes(self) -> int:
        return int(sum(getattr(self, name).nbytes for name in self._SUMS
                       if getattr(self, name) is not None)
                   + (0 if self.sample is None else self.sample.nbytes))

    # -- accumulation ------------------------------------------------------------------------
    def add(self, feature_map, X: np.ndarray, Y: np.ndarray, *, rows=None,
            start: int | None = None, folds: np.ndarray | None = None,
            block_size: int | None = None, progress=None,
            weights: np.ndarray | None = None) -> "SufficientStats":
        """Add the rows (X, Y) (X preprocessed, Y coded), weighted by ``weights`` (checked by
        the caller: finite, >= 0; None: 1 each), and return self.

        ``rows`` are the same rows as the estimator received them (before standardisation and
        bias; default X): their content sets each row's fold (:func:`row_keys`) unless
        ``folds`` gives them explicitly (an index-based k-fold split). ``start`` is the position
        of X's first row in the whole data (default: the rows added so far, as in a stream),
        which breaks ties in the validation sample; the sample, if kept, is offered the rows
        (a sample of features: the leading columns of the features of those that may enter
        it, copied as the blocks of the sums pass, so the search featurises nothing again).

        All or nothing: when the rows' sums, or the totals with them, are not finite (a chunk
        of values near 1e200), NumericalError is raised and the statistics are exactly as
        before the call.
        """
        Y = np.asarray(Y, dtype=float)
        if Y.ndim != 2 or Y.shape[1] != self.n_outputs or len(Y) != len(X):
            raise ValueError(f"Y must have shape ({len(X)}, {self.n_outputs}), got {Y.shape}")
        first = self.n_samples if start is None else int(start)
        keys = None
        if folds is None and (self.n_folds > 1 or self.sample is not None):
            keys = row_keys(X if rows is None else rows)
            folds = fold_of(keys, self.n_folds, self.fold_seed)
        folds = np.zeros(len(X), dtype=np.int64) if folds is None else np.asarray(folds)
        # A fresh object takes the sums directly (cleared if they fail); otherwise the rows'
        # sums are formed apart, checked, and the totals with them checked before they replace
        # the old ones -- never undone by subtraction, which would not restore them exactly.
        fresh = self.n_samples == 0
        part = self if fresh else SufficientStats(self.n_features, self.n_outputs,
                                                  self.n_folds, self.fold_seed,
                                                  fold_features=self.fold_features)
        candidates = features = None
        if self.sample is not None:
            if keys is None:
                keys = row_keys(X if rows is None else rows)
            candidates = self.sample.candidates(keys, weights)
            if self.sample.features:
                # in the order the pass meets them (rows sorted by fold): their features are
                # copied by one gather a block, and each fold's are one slice for the search
                candidates = candidates[np.lexsort((candidates, folds[candidates]))]
            if self.sample.features:
                features = np.empty((len(candidates), self.sample.features),
                                    dtype=feature_map.feature_dtype_)
                # its pages faulted in one sweep now, not as the pass's gathers first write
                # them between the blocks' products: adults T = 2000 (10000 x 1000 numbers),
                # the capture 0.08-0.15 s of CPU a fit that way against 0.02 s + 0.01 s here
                features.fill(0.0)
        try:
            part._add_sorted(feature_map, X, Y, folds, block_size, progress, weights,
                             candidates, features)
            if not fresh:
                for name in self._SUMS:
                    if getattr(part, name) is not None:
                        getattr(part, name).__iadd__(getattr(self, name))
            # normal_equations checked the rows' A and B (NumericalError), all a fresh object
            # holds of them; added to older sums they are new totals (a T x T scan each: 0.2 s
            # at T = 8000 for three folds)
            sums = (part.ysum, part.yy) if fresh else (part.A, part.B, part.A_total, part.ysum,
                                                       part.yy)
            finite = all(np.isfinite(a).all() for a in sums if a is not None)
        except NumericalError:          # normal_equations' own check of a fold's sums
            finite = False
        except BaseException:
            if fresh:
                self._clear()
            raise
        if not finite:
            if fresh:
                self._clear()
            raise NumericalError(
                f"the least-squares sums of these {len(X)} row(s) overflow float64, so they "
                f"were not added (the sums are as before them)", solver="normal equations",
                fix="check these rows' values against the data's scale (values near 1e200?); "
                    "standardise with the statistics of all the data (x_scaler=, y_scaler=) "
                    "or lower sigma")
        if not fresh:
            for name in self._SUMS:
                setattr(self, name, getattr(part, name))
        if self.sample is not None:
            self.sample.offer(keys, np.arange(first, first + len(X)), folds, np.asarray(X), Y,
                              weights, candidates, features)
        return self

    def _add_sorted(self, feature_map, X, Y, folds, block_size, progress, weights=None,
                    candidates=None, features=None):
        """Add rows (X, Y) of ``folds`` to the per-fold sums: the rows taken in fold order (a
        fold's rows in their order; X's gathered a block at a time), one sequence of feature
        blocks split at the folds' bounds (normal_equations ``bounds``): as many blocks as a
        one-fold pass, not a partial block per fold. ``features``: the sample's rows
        ``candidates`` (positions in X, in the order of the rows sorted by fold: :meth:`add`)
        get their leading features copied there as the blocks pass."""
        F = self.n_folds
        counts = np.bincount(folds, minlength=F)
        bounds = np.concatenate([[0], np.cumsum(counts)])
        order = None
        if counts.max() < len(X):       # rows of several folds: sorted, each fold's in order
            order = np.argsort(folds, kind="stable")
            # X's rows gathered a block at a time by the pass (normal_equations ``order``)
            Y = np.take(Y, order, axis=0)
            weights = None if weights is None else weights[order]
        capture = None
        if features is not None:        # candidates in the order of the sorted rows
            if order is None:
                capture = (np.asarray(candidates), features)
            else:
                position = np.empty_like(order)
                position[order] = np.arange(len(order))
                capture = (position[candidates], features)
        normal_equations(feature_map, X, Y, block_size, progress,
                         out=[(self.A[f], self.B[f]) for f in range(F)], weights=weights,
                         capture=capture, bounds=bounds, joint=self.A_total, order=order)
        for f in np.flatnonzero(counts):
            rows = slice(bounds[f], bounds[f + 1])
            Yf = Y[rows]
            self.n[f] += counts[f]
            if weights is None:
                self.w[f] += counts[f]
                self.ysum[f] += Yf.sum(axis=0)
                self.yy[f] += np.einsum("ij,ij->j", Yf, Yf)
            else:
                wf = weights[rows]
                self.w[f] += wf.sum()
                self.ysum[f] += wf @ Yf
                self.yy[f] += np.einsum("i,ij,ij->j", wf, Yf, Yf)

    #: the arrays that are sums over rows (A_total None when every column is kept per fold)
    _SUMS = ("A", "A_total", "B", "n", "w", "ysum", "yy")

    def _clear(self) -> None:
        for name in self._SUMS:
            if getattr(self, name) is not None:
                getattr(self, name)[...] = 0

    def __add__(self, other: "SufficientStats") -> "SufficientStats":
        """The statistics of the union of two disjoint sets of rows (a reduction step)."""
        if not isinstance(other, SufficientStats):
            return NotImplemented
        size = (None if self.sample is None else (self.sample.size, self.sample.features),
                None if other.sample is None else (other.sample.size, other.sample.features))
        if (self.A.shape, self.B.shape, self.fold_seed, size[0]) != (
                other.A.shape, other.B.shape, other.fold_seed, size[1]):
            raise ValueError(f"cannot merge statistics of shapes {self.B.shape} and "
                             f"{other.B.shape} (folds x features x outputs), of "
                             f"{self.fold_features} and {other.fold_features} columns per "
                             f"fold, or fold seeds "
                             f"{self.fold_seed} and {other.fold_seed}, or validation samples "
                             f"of (rows, feature columns) {size[0]} and {size[1]}")
        out = SufficientStats.__new__(SufficientStats)
        out.A, out.B = self.A + other.A, self.B + other.B
        out.A_total = None if self.A_total is None else self.A_total + other.A_total
        out.n, out.ysum, out.yy = self.n + other.n, self.ysum + other.ysum, self.yy + other.yy
        out.w = self.w + other.w
        out.fold_seed = self.fold_seed
        out.sample = None if self.sample is None else self.sample + other.sample
        return out

    # -- totals and solves -------------------------------------------------------------------
    def total(self):
        """(A, B, m) summed over the folds, m the weight sum (the rows without weights). A is
        ``A_total`` itself when the folds keep fewer columns than T (read it, do not modify)."""
        if getattr(self, "_spent", False):
            raise ValueError("these statistics were spent by solve(spend=True) (their total "
                             "holds the factored system); accumulate them again")
        A = self.A.sum(axis=0) if self.A_total is None else self.A_total
        return A, self.B.sum(axis=0), float(self.w.sum())

    def _check_fold_columns(self, what: str) -> None:
        """ValueError naming the fix when ``what`` needs every column's per-fold sums."""
        if self.A_total is not None:
            raise ValueError(f"{what} needs the per-fold sums of all {self.n_features} "
                             f"columns, but these keep {self.fold_features} per fold (the "
                             f"search's); make the statistics with fold_features=None, or "
                             f"use leading_model() on at most {self.fold_features} columns")

    def solve(self, reg: float, R: np.ndarray | None = None, eps: float = 0.0,
              spend: bool = False):
        """``(coef, info)`` of (A + m reg R + m eps I) a = B on all rows (ridge.py); ``info``
        also has the totals ``A``, ``B`` and ``m`` solved, as ridge's (the posterior needs
        them).

        ``spend`` (a caller that needs neither the factor nor these statistics afterwards: a
        classifier's in-memory fit): the system is formed and factored in the total's own
        memory (ridge.solve_normal_equations ``overwrite_a``), as the fixed-reg fit does,
        instead of in a fresh T x T matrix (512 MB at T = 8000, whose first touch cost 0.5-2 s
        of system CPU on the shared machine); the same coefficients to the bit. ``info``'s
        ``chol`` and ``A`` are then None, and when the folds keep fewer columns than T the
        statistics are spent (``A_total`` is overwritten: anything but this solve raises).
        A total summed over the folds is a new matrix, so the statistics of a stream
        (``partial_fit``) stay whole either way."""
        A, B, m = self.total()
        self._check_rows(m)
        if spend and self.A_total is not None:
            self._spent = True
        with single_blas_thread():  # the model's factor, whatever the BLAS thread count
            coef, info = solve_normal_equations(A, B, m, float(reg), R, eps, factor=not spend,
                                                overwrite_a=spend)
        info.update(A=None if spend else A, B=B, m=m)
        return coef, info

    def gram_form(self, fold: int | None = None):
        """(Q, q, yy) = (A / m, B / m, ||y||^2 / m) of all rows, or of the rows outside ``fold``:
        the Gram form of the Lasso (lasso.lasso_gram)."""
        A, B, m = self.total()
        yy = self.yy.sum(axis=0)
        if fold is not None:
            self._check_fold_columns("gram_form(fold)")
            A, B, m, yy = A - self.A[fold], B - self.B[fold], m - self.w[fold], yy - self.yy[fold]
        self._check_rows(m)
        return A / m, B / m, yy / m

    def _check_rows(self, m):
        if not m > 0:
            raise ValueError("no rows (of weight above zero) were added: the least-squares "
                             "sums are empty")

    def fold_coefs(self, fold: int, regs, R: np.ndarray | None = None, eps: float = 0.0,
                   Linv: np.ndarray | None = None, use_path: bool | None = None,
                   total=None, work: np.ndarray | None = None) -> np.ndarray:
        """Solutions on the rows outside ``fold`` for every reg, side by side: (T, len(regs) k).

        With many reg values one eigendecomposition serves them all (ridge.RegPath; ``Linv`` is
        RegPath.for_gram(R), computed once by the caller); its worst-conditioned solution (the
        smallest reg) is checked, and the Cholesky route (with jitter if needed) takes over when
        the path is not accurate or not applicable. Below ``PATH_MIN_REGS`` values one Cholesky
        solve each is cheaper than the eigensolve. ``total``: :meth:`total`, if the caller has it.
        ``work``: two (t, t) float64 matrices in C order (t the columns kept per fold), A - A_f
        and the regularised system written into them instead of new ones: a caller solving
        many folds and values reuses them (two new t x t matrices a solve otherwise, each
        freshly allocated and written). The same arithmetic either way.
        """
        self._check_fold_columns("fold_coefs")
        A, B, m = self.total() if total is None else total
        A_tr = (A - self.A[fold] if work is None
                else np.subtract(A, self.A[fold], out=work[0]))
        B_tr, m_tr = B - self.B[fold], m - float(self.w[fold])
        self._check_rows(m_tr)
        regs = [float(r) for r in regs]
        if use_path is None:
            use_path = len(regs) >= PATH_MIN_REGS and (R is None or Linv is not None)
        if use_path:
            try:
                path = RegPath(A_tr, B_tr, m_tr, eps, Linv)
                coefs = np.hstack([path.solve(r) for r in regs])
                j, q = int(np.argmin(regs)), B_tr.shape[1]
                if path.accurate(A_tr, B_tr, R, regs[j], coefs[:, j * q:(j + 1) * q]):
                    return coefs
            except LinAlgError:
                pass    # rounding made the system indefinite: the jittered route
        return np.hstack([solve_normal_equations(A_tr, B_tr, m_tr, r, R, eps, factor=False,
                                                 work=None if work is None else work[1])[0]
                          for r in regs])

    def each_fold_coefs(self, regs, R: np.ndarray | None = None, eps: float = 0.0) -> list:
        """:meth:`fold_coefs` of every fold, with R factored once for all of them."""
        Linv = RegPath.for_gram(R) if len(regs) >= PATH_MIN_REGS and R is not None else None
        return [self.fold_coefs(f, regs, R, eps, Linv) for f in range(self.n_folds)]

    def validation_scores(self, fold: int, coefs: np.ndarray, classifier: bool) -> np.ndarray:
        """Scores on fold ``fold`` of the column blocks of ``coefs`` (one block of k per reg),
        from the sums alone: R^2 averaged over outputs (regression), or minus the mean squared
        error of the +/-1 codes averaged over classes (classification: the loss being
        minimised; accuracy is not a sum over rows of these statistics). Higher is better."""
        self._check_fold_columns("validation_scores")
        k = self.n_outputs
        n_f = float(self.w[fold])
        A_f, B_f = self.A[fold], self.B[fold]
        # ||Y_f - Phi_f a||^2 = yy_f - 2 a^T B_f + a^T A_f a, per output column
        quad = np.einsum("ij,ij->j", coefs, A_f @ coefs)
        cross = np.einsum("ij,ij->j", coefs, np.tile(B_f, (1, coefs.shape[1] // k)))
        res = np.maximum(np.tile(self.yy[fold], coefs.shape[1] // k) - 2.0 * cross + quad, 0.0)
        res = res.reshape(-1, k)
        if classifier:
            return -(res / n_f).mean(axis=1)
        ss_tot = self.yy[fold] - self.ysum[fold] ** 2 / n_f
        ss_tot = np.where(ss_tot > 0, ss_tot, 1.0)
        return (1.0 - res / ss_tot).mean(axis=1)


#: the grid-extension rule of every reg="auto": when the chosen value is at an end of the grid,
#: add the next decade beyond it, at most EXTEND_MAX times, within REG_LIMITS
EXTEND_MAX, REG_LIMITS = 6, (1e-18, 1e3)
#: candidates whose validation loss (the ceiling of the score minus the score: 1 - R^2, the mean
#: squared error, 1 - accuracy) is within a factor 1 + REG_TIE (plus REG_TIE_ABS) of the best
#: count as tied, and the largest tied reg is chosen: losses that differ by rounding (sums added
#: in another order, a plateau of tiny regs) then choose the same value in every mode, and a
#: plateau at the small end does not extend the grid
REG_TIE, REG_TIE_ABS = 1e-6, 1e-12


def best_index(means, ceiling: float = 1.0) -> int:
    """The chosen candidate among increasing regs, from their mean validation scores (higher is
    better, at most ``ceiling``: 1 for R^2 and accuracy, 0 for minus a squared error): the
    largest reg tied with the best (``REG_TIE``). NaN (a diverged candidate) is never chosen."""
    loss = float(ceiling) - np.asarray(means, dtype=float)
    valid = np.isfinite(loss)
    if not valid.any():
        raise NumericalError("every reg candidate diverged or gave non-finite validation "
                             "scores", solver="reg='auto'",
                             fix="standardize the inputs, or pass a number for reg")
    low = max(float(loss[valid].min()), 0.0)
    tied = np.flatnonzero(valid & (loss <= low * (1.0 + REG_TIE) + REG_TIE_ABS))
    return int(tied[-1])


def extension(regs, means, upper: float = REG_LIMITS[1], ceiling: float = 1.0):
    """The value to add beyond the end of the increasing grid ``regs`` the choice
    (:func:`best_index`) sits at -- a decade further, within REG_LIMITS and ``upper`` -- or None
    when the choice is inside the grid."""
    if len(regs) < 2:
        return None
    j = best_index(means, ceiling)
    if j == 0 and regs[0] / 10.0 >= REG_LIMITS[0]:
        return regs[0] / 10.0
    if j == len(regs) - 1 and regs[-1] * 10.0 <= min(upper, REG_LIMITS[1]):
        return regs[-1] * 10.0
    return None


#: select_reg scores every COARSE_STRIDE-th value of its grid first (and its last), then the
#: neighbours of the best until both of the best's neighbours are scored (grow_grid ``stride``)
COARSE_STRIDE = 3


def grow_grid(grid, score, means_of, *, ceiling: float = 1.0, upper: float = REG_LIMITS[1],
              max_extend: int | None = EXTEND_MAX, stride: int = 1,
              start: float | None = None) -> list:
    """The grid search every reg="auto" shares: ``score(regs)`` scores values of the increasing
    ``grid``, ``means_of(regs)`` gives the mean scores of scored values. First every
    ``stride``-th value and the last are scored (or, with ``start``, that value and the next
    one up in the grid, ``start`` joining the grid if it is not in it); then, while a
    neighbour in the grid of the choice (:func:`best_index`) is unscored, the unscored
    neighbours are; and while the choice sits at an end (:func:`extension`), the next decade
    that way is added and scored, at most ``max_extend`` times (None: until REG_LIMITS or
    ``upper`` stops it). With ``stride`` 1 every value is scored (the whole grid); otherwise the
    search climbs from the best of the first values to a local best, and chooses what the whole
    grid would whenever the mean scores rise strictly to a best value (or a plateau of tied
    best values) and then fall strictly; a plateau elsewhere can stop the climb there.
    Returns the values scored, increasing."""
    lattice = sorted(float(v) for v in grid)
    if start is None:
        first = lattice[::stride] + ([lattice[-1]] if (len(lattice) - 1) % stride else [])
    else:       # upwards first: the value below is scored only if ``start`` stays the best
        lattice = sorted(set(lattice) | {float(start)})
        i = lattice.index(float(start))
        first = lattice[i:i + 2] if i + 1 < len(lattice) else lattice[i - 1:i + 1]
    score(first)
    done, added = set(first), 0
    while True:
        regs = sorted(done)
        i = lattice.index(regs[best_index(means_of(regs), ceiling)])
        todo = [lattice[k] for k in (i - 1, i + 1)
                if 0 <= k < len(lattice) and lattice[k] not in done]
        if not todo and (max_extend is None or added < max_extend):
            more = extension(regs, means_of(regs), upper, ceiling)
            if more is not None:
                lattice, todo, added = sorted(lattice + [more]), [more], added + 1
        if not todo:
            return regs
        score(todo)
        done.update(todo)


def scored_folds(stats: SufficientStats, classifier: bool, feature_map=None):
    """``(accuracy, used)``: whether a classifier is scored by accuracy on the validation
    sample (its sums keep one and ``feature_map`` can featurise it), and the folds that can be
    scored (rows in the fold and outside it, and sample rows when scoring by accuracy).
    Raises ValueError, naming the fix, when fewer than two folds are left."""
    accuracy = classifier and stats.sample is not None and feature_map is not None
    used = [f for f in range(stats.n_folds) if stats.w[f] > 0 and stats.w.sum() > stats.w[f]
            and (not accuracy or bool(np.any(stats.sample.fold == f)))]
    if len(used) < 2:
        raise ValueError(f"reg='auto' needs rows in at least two of the {stats.n_folds} "
                         f"cross-validation folds, but {stats.n_samples} row(s) were given; "
                         f"add rows or pass a number for reg")
    return accuracy, used


#: reg="auto" scores its candidates on the model of the first T_s of the map's T features (the
#: same draws, so T_s columns of the sums: a sub-block, free), T_s = (m T^2 / SEARCH_COST)^(1/3)
#: but at most T/2, within [min(T, SEARCH_MIN_FEATURES), T]: the search then costs about a fixed
#: share of the pass over the data (m T^2 flops for the Gram) whatever T, where a search at T
#: (one T x T eigendecomposition per fold, 13 Cholesky solves of CPU at T = 4000) cost four
#: times the fixed-reg fit; T/2 because at small T the validation sample's features and small,
#: slow factorisations weigh more against a cheap fit. First, the whole grid is searched
#: coarsely on the first max(COARSE_FEATURES, T_s / 4): a start close to T_s's best.
#: SEARCH_COST 60 rather than 40: the 9 or so T_s^3 / 3 factorisations were 15% of the fit at
#: T = 4000 (mnist 1-vs-7 at T = 8000: 1.33x the fixed-reg fit), a third less with 60, the same
#: regs but one within the full-T fold spread (mnist T = 4000: 1e-11 for 1e-9).
#: Measured in docs/BENCHMARKS.md (reg="auto"), with the full-T cross-validation of the choice.
SEARCH_COST, SEARCH_MIN_FEATURES, COARSE_FEATURES = 60.0, 500, 200


def search_features(n_samples: int, n_features: int) -> int:
    """T_s, the number of leading features reg="auto" scores its candidates with, for ``n_samples``
    rows and ``n_features`` features (see ``SEARCH_COST``): a function of the two counts alone,
    so every mode (fit, partial_fit, Dask) scores the same model."""
    t = round((float(n_samples) * float(n_features) ** 2 / SEARCH_COST) ** (1.0 / 3.0))
    return int(min(n_features, max(SEARCH_MIN_FEATURES, min(n_features // 2, t))))


def search_steps(top: int) -> list:
    """The sizes of the leading models :func:`select_reg` scores candidates on, in order: T_0 =
    max(COARSE_FEATURES, T_s / 4), then T_s = ``top``; ``top`` alone when it is under twice
    COARSE_FEATURES."""
    return [top] if top < 2 * COARSE_FEATURES else [max(COARSE_FEATURES, top // 4), top]


#: the candidates :func:`select_reg` scores at each step of :func:`search_steps` on typical data,
#: for the cost model: every COARSE_STRIDE-th value of the grid and the best's neighbours, 7-8
#: (adults and mnist 1-vs-7, T = 1000-4000, and tests/test_time_estimates.py's data); then from
#: the coarse choice and the next value up to a local best, 3 there and 5 on the tests' data.
#: A count, not a bound: a grid that extends past its ends scores more
TYPICAL_CANDIDATES = (8, 4)


def search_work(n_samples: int, n_features: int, n_folds: int, sample_rows: int = 0,
                cost=None):
    """``(factor, score)``: :func:`select_reg`'s work on ``n_samples`` rows and ``n_features``
    features for the cost model (rwtool.resources), ``TYPICAL_CANDIDATES`` at each step: a
    Cholesky factorisation of each step's t columns per fold and candidate, ``cost(t)`` each
    (None: its t^3 / 3 multiply-adds), and the multiply-adds of the decision values of a
    classifier's ``sample_rows`` validation rows (t per row and candidate; 0 rows for a
    regressor, scored from the sums), per output column. The T x T final solve is not in it."""
    t = search_features(n_samples, n_features)
    steps = list(zip(TYPICAL_CANDIDATES, search_steps(t)))
    cost = (lambda s: s ** 3 / 3.0) if cost is None else cost
    factor = n_folds * sum(c * cost(s) for c, s in steps)
    score = sum(c * s for c, s in steps) * float(sample_rows)
    return factor, score


def search_columns(feature_map, weight_sum: float, n_search: int | None = None) -> int:
    """The leading features of ``feature_map`` :func:`select_reg` scores its candidates with,
    on rows of total weight ``weight_sum`` (a row of weight c counts as its c copies):
    :func:`search_features` (or ``n_search``), but all of them for a map without one column
    per centre (Fourier "pair"), which :func:`leading_model` cannot restrict."""
    T = feature_map.n_output_
    top = (search_features(round(float(weight_sum)), T) if n_search is None
           else min(int(n_search), T))
    return top if _one_column_per_centre(feature_map) else T


def _one_column_per_centre(feature_map) -> bool:
    """Whether the map's columns are its centres, one each (not Fourier "pair"): the maps
    :func:`leading_model` can restrict to their leading columns."""
    return getattr(feature_map, "n_features", feature_map.n_output_) == feature_map.n_output_


def _subset_scale(feature_map, n_keep):
    from ._prune import subset_scale
    return subset_scale(feature_map, n_keep)


def leading_model(stats: SufficientStats, R: np.ndarray | None, feature_map, n_keep: int):
    """``(stats, R, feature_map)`` of the model on the first ``n_keep`` features: the same
    draws, as if the map had been fitted with ``n_features=n_keep``. The sums are the leading
    blocks A[:n, :n], B[:n] divided by c^2 and c, c = prune.subset_scale (kitchen sinks and
    Fourier features scale every column by 1/sqrt(T); RKHS weightings, whose R = G is then the
    leading block of G, do not: c = 1); every other sum (rows or weights per fold, target sums)
    and the sample are shared, not copied. None when the map has no one-to-one centres and
    columns (Fourier "pair"). ``R``: G, None or a :class:`GramRows` (a classifier's fit, which
    never holds G whole: the leading block is the map's kernel on its first ``n_keep`` centres
    alone, ``gram_rows(0, n_keep)``, the same symmetric product as G's)."""
    from ._prune import subset_map      # _prune imports the Lasso: keep it lazy
    T = stats.n_features
    if (feature_map is None or feature_map.n_output_ != T
            or not _one_column_per_centre(feature_map)):
        return None
    c = _subset_scale(feature_map, n_keep)
    out = SufficientStats.__new__(SufficientStats)
    out.__dict__.update(stats.__dict__)   # every per-fold sum not over features, as it is
    if n_keep > stats.fold_features:
        raise ValueError(f"the leading model of {n_keep} features needs their per-fold sums, "
                         f"but these statistics keep {stats.fold_features} columns per fold")
    # c = 1 (RKHS weightings): views, as the other sums (the search only reads them; a copy
    # of the searched columns' folds was 24 MB at T = 2000, 184 MB at T = 8000)
    out.A = (stats.A[:, :n_keep, :n_keep] if c == 1.0
             else stats.A[:, :n_keep, :n_keep] * (1.0 / (c * c)))
    out.A_total = None
    out.B = stats.B[:, :n_keep] if c == 1.0 else stats.B[:, :n_keep] * (1.0 / c)
    R = (None if R is None else R.rows(0, n_keep) if isinstance(R, GramRows)
         else np.ascontiguousarray(R[:n_keep, :n_keep]))
    return out, R, subset_map(feature_map, np.arange(n_keep))


def select_reg(stats: SufficientStats, values, classifier: bool, R: np.ndarray | None = None,
               eps: float = 0.0, progress=None, feature_map=None, n_search: int | None = None):
    """reg="auto" from per-fold sums, the one criterion of every mode: ``(best, table)``.

    Every candidate reg is solved on the rows outside each non-empty fold f (from A - A_f,
    B - B_f; :meth:`SufficientStats.fold_coefs`) and scored on f from the sums alone
    (:meth:`SufficientStats.validation_scores`: R^2 for regression, minus the mean squared
    error of the +/-1 codes for classification) -- or, for a classifier whose sums keep a
    :class:`ValidationSample` when ``feature_map`` is given, by accuracy on the sample's rows of
    the fold (the squared error of the codes can prefer a worse classifier: a few rows with huge
    decision values dominate it); the choice is the best mean score over the folds
    (:func:`best_index`: the largest reg among those tied to rounding). Each candidate solves
    the least squares (A + m reg R + m eps I) a = B (the Lasso walks its own path with the same
    folds and scores: solvers/_lasso_cv.py). Only the sums enter: weighted rows enter through
    them, and nothing here looks at a row again (except the validation sample's).

    The candidates are searched coarse to fine (:func:`grow_grid`), in reg and in features:

    1. on the model of the map's first T_0 = max(COARSE_FEATURES, T_s / 4) features (T_s when
       T_s is less than twice COARSE_FEATURES)
       (:func:`leading_model`: leading blocks of the sums, nothing recomputed), every
       ``COARSE_STRIDE``-th value of ``values`` and then the neighbours of the best until the
       best's neighbours are scored, the grid growing by a decade past an end the choice sits
       at (:func:`extension`);
    2. if T_s > T_0, on the model of the first T_s features (``n_search``, default
       :func:`search_features` of the rows and T), from the value step 1 chose and the next one
       up (the best reg grows with the features: more of them fit the noise more closely), then,
       the same way, the neighbours of the best.

    A candidate costs one Cholesky solve per fold at its model's size (below ``PATH_MIN_REGS``
    values at once, always here), so the search costs about 24 solves of T_0 and 9 to 15 of T_s
    instead of an eigendecomposition of T x T per fold.

    ``progress`` (a Progress or callback) gets stage "search": the candidates scored so far and
    ``best_score``. The table lists the candidates of the last step: ``reg`` (increasing),
    ``mean_score`` and ``std_score`` over the folds, ``fold_scores`` (one list per reg),
    ``score`` ("r2", "accuracy" or "neg_mse"), ``folds`` (used) and ``features`` (T_s, the
    leading features they were scored with); with two steps, ``coarse`` holds step 1's
    ``features``, ``reg`` and ``mean_score``.
    """
    accuracy, used = scored_folds(stats, classifier, feature_map)
    T, full_map = stats.n_features, feature_map
    top = T if feature_map is None else search_columns(feature_map, stats.w.sum(), n_search)
    if top < T:
        stats, R, feature_map = leading_model(stats, R, feature_map, top)
    if isinstance(R, GramRows):         # the whole model searched: G whole, formed once
        R = R.full()
    # the sample's features captured with the sums (the full map's leading columns) serve
    # every model, each rescaled to the full map's columns (c = subset_scale)
    captured = accuracy and stats.sample.features > 0
    accuracies = FoldAccuracy(stats.sample, full_map if captured else feature_map, used,
                              stats.n_outputs) if accuracy else None
    ceiling = 0.0 if classifier and not accuracy else 1.0
    progress = make_progress(progress)
    progress.start("search", len(values))
    count, start, coarse = [0], None, None
    sizes = [top] if feature_map is None else search_steps(top)
    for size in sizes:
        model = (stats, R, feature_map) if size == top else leading_model(
            stats, R, feature_map, size)
        if model is None:            # a map without one column per centre: the whole model
            continue
        scale = (_subset_scale(full_map, size) if captured
                 else 1.0 if size == top else _subset_scale(feature_map, size))
        scored = _FoldScores(model, used, classifier, eps, accuracies, scale, progress, count)
        grid = grow_grid(values, scored, lambda g: [scored.table[r].mean() for r in g],
                         ceiling=ceiling, stride=COARSE_STRIDE, start=start)
        means = np.array([scored.table[r].mean() for r in grid])
        start = grid[best_index(means, ceiling)]
        if size < top:
            coarse = {"features": int(size), "reg": grid, "mean_score": means.tolist()}
    progress.end()
    table = {"reg": grid, "mean_score": means.tolist(),
             "std_score": [float(scored.table[r].std()) for r in grid],
             "fold_scores": [scored.table[r].tolist() for r in grid],
             "score": "accuracy" if accuracy else "neg_mse" if classifier else "r2",
             "folds": len(used), "features": int(top)}
    if coarse is not None:
        table["coarse"] = coarse
    return start, table


class _FoldScores:
    """``score(regs)`` of :func:`grow_grid` for one model ``(stats, R, feature_map)``: the fold
    scores of each reg in ``table``; ``scale`` relates the model's columns to those the
    accuracies were computed with (FoldAccuracy)."""

    def __init__(self, model, used, classifier, eps, accuracies, scale, progress, count):
        self.stats, self.R, _ = model
        self.used, self.classifier, self.eps = used, classifier, eps
        self.accuracies, self.scale, self.progress, self.count = accuracies, scale, progress, count
        self.total, self.Linv, self.table = self.stats.total(), None, {}
        t = self.total[0].shape[0]
        self.work = np.empty((2, t, t))        # every candidate's and fold's systems

    def __call__(self, regs):
        regs = [r for r in regs if r not in self.table]
        if not regs:
            return
        if self.Linv is None and self.R is not None and len(regs) >= PATH_MIN_REGS:
            self.Linv = RegPath.for_gram(self.R)
        rows = np.empty((len(regs), len(self.used)))
        for j, f in enumerate(self.used):
            coefs = self.stats.fold_coefs(f, regs, self.R, self.eps, self.Linv, total=self.total,
                                          work=self.work)
            rows[:, j] = (self.accuracies(j, coefs, self.scale) if self.accuracies is not None
                          else self.stats.validation_scores(f, coefs, self.classifier))
            # each fold is a T x T factorisation per candidate: a Cancel is seen between them
            self.progress.update(self.count[0])
        self.table.update(zip(regs, rows))
        self.count[0] += len(regs)
        means = np.array([row.mean() for row in self.table.values()])
        self.progress.update(self.count[0], force=True,
                             best_score=float(np.max(means[np.isfinite(means)], initial=-np.inf)))
