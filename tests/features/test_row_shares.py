"""The feature kernels that share rows among threads (rwtool.threads.run_row_shares).

Each kernel is sequential and its callers hand contiguous shares of rows to threads of their
own, so a row's values must not depend on the share it falls in. Two checks per kernel:

* the same bits with the rows in 1, 2 and 3 shares (``numba.get_num_threads`` read as the
  count and a share as small as one unit of work, so that these small inputs are cut too,
  in the middle of the 32-row tasks of the fixed-order products);
* a dense numpy oracle at the rounding of the computation it checks: element-wise maps of a
  product X W^T of d terms within d eps sum |x w| (times their Lipschitz constant 1), erf
  within 1e-14 relative (rwtool.features._vecmath's accuracy, tests/features/test_vecmath.py),
  exp and the Monte Carlo products as tests/features/test_montecarlo_rows.py states.
"""

import math

import numba
import numpy as np
import pytest
from scipy.special import erf, expit

import rwtool.threads
from rwtool.features import (KitchenRelu, KitchenSign, KitchenStumps, RandomFourierFeatures,
                             RWStumps)
from rwtool.features._montecarlo import base_into, kernel_sections
from rwtool.features._rkhs_mc import MonteCarloRKHS
from rwtool.features._taylor import TaylorMultiKernelFeatures, taylor_gaussian_kernel
from tests.features.test_montecarlo import soft_sign
from tests.features.test_montecarlo_rows import _oracle, laplace_kernel

EPS = np.finfo(float).eps


@pytest.fixture
def shares(monkeypatch):
    """``run(f, n)``: f() with every row kernel's rows cut into n shares."""
    monkeypatch.setattr(rwtool.threads, "PAIRS_PER_THREAD", 1)

    def run(f, n):
        monkeypatch.setattr(numba, "get_num_threads", lambda: n)
        return f()
    return run


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((45, 5))
    X[0] = 0.0
    X[3] *= 20.0
    return X


def _dot_bound(X, W):
    """d eps sum_j |x_j w_j|: the rounding of the d-term sums of X W^T."""
    return X.shape[1] * EPS * (np.abs(X) @ np.abs(W).T)


def _kitchen(X):
    out = []
    for cls, phi in ((KitchenSign, np.sign), (KitchenRelu, lambda z: np.maximum(z, 0.0))):
        f = cls(n_features=37, sigma=0.7, random_state=3).fit(X)
        # sign: exact, as no <w, x> of these rows is within rounding of 0 (checked)
        Z = X @ f.W_.T
        assert np.all((np.abs(Z) > 10 * _dot_bound(X, f.W_)) | (np.abs(X).sum(1) == 0)[:, None])
        out.append((f.transform, phi(Z) / math.sqrt(37), _dot_bound(X, f.W_) / math.sqrt(37)))
    f = KitchenStumps(n_features=37, sigma=0.7, random_state=3).fit(X)
    out.append((f.transform, np.sign(X[:, f.idx_] - f.thr_) / math.sqrt(37), 0.0))
    return out


def _fourier(X):
    out = []
    for variant in ("pair", "phase"):
        f = RandomFourierFeatures(n_features=29, sigma=1.3, variant=variant,
                                  random_state=4).fit(X)
        Z = X @ f.W_.T
        # the argument's rounding (its sum, and the phase's addition), then cos/sin's and
        # the scaling's own
        err = _dot_bound(X, f.W_) + 4 * EPS * (np.abs(Z) + 2 * np.pi + 1)
        if variant == "pair":
            want = np.hstack([np.cos(Z), np.sin(Z)]) / math.sqrt(29)
            out.append((f.transform, want, np.hstack([err, err]) / math.sqrt(29)))
        else:
            want = math.sqrt(2 / 29) * np.cos(Z + f.b_)
            out.append((f.transform, want, math.sqrt(2 / 29) * err))
    return out


def _stumps(X):
    f = RWStumps(n_features=41, sigma=0.8, random_state=5).fit(X)
    want = f._c * erf(f._k * (X[:, f.idx_] - f._shift))
    arg = (f.thr_[:, None] - f.thr_[None, :]) ** 2 / (2.0 * f.gamma_ ** 2)
    gram = (f.idx_[:, None] == f.idx_[None, :]) * np.exp(-arg)
    # exp's rounding and that of its argument (relative 4 eps, times |arg| in the result)
    return [(f.transform, want, 1e-14 * np.abs(want) + 1e-300),
            (lambda _: f.kernel_matrix(), gram, 4 * EPS * (1 + arg) * gram)]


def _taylor(X):
    """The features' Gram matrix against the truncated kernel they expand (test_taylor.py)."""
    Xs = X / np.abs(X).max()
    f = TaylorMultiKernelFeatures(sigma=1.5, gauss_order=3, include_linear=False).fit(Xs)
    want = taylor_gaussian_kernel(Xs, Xs, 1.5, 3)
    return [(lambda A: (lambda P: P @ P.T)(f.transform(A / np.abs(X).max())), want,
             1e-12 * np.abs(want).max())]


def _monte_carlo(X):
    from rwtool import register_base, register_kernel
    register_base("soft_sign", soft_sign)
    register_kernel("laplace_kernel", laplace_kernel)
    out, maps = [], []
    for kw, tol in ((dict(base="relu"), 1e-4), (dict(base="tanh", kernel="laplace_kernel"), 1e-4),
                    (dict(distribution="stumps", kernel="indicator-gaussian", base="stump"),
                     1e-10),
                    (dict(base="soft_sign"), 1e-10)):
        f = MonteCarloRKHS(n_features=23, random_state=2, **kw).fit(X)
        want = _oracle(f, X)
        out.append((f.transform, want, tol * np.abs(want).max()))
        maps.append(f)
    # the user kernel's sections, and the sigmoid base of the draws (phi_inplace)
    D, U = maps[1].mc_.draws_, maps[1].W_
    sections = np.array([[laplace_kernel.py_func(w, u) for u in U] for w in D])
    out.append((lambda _: kernel_sections("laplace_kernel", D, U), sections, 4 * EPS * sections))
    Z = X @ D.T
    out.append((lambda A: base_into("sigmoid", A, D, np.empty((len(A), len(D)))), expit(Z),
                _dot_bound(X, D) + 4 * EPS))
    return out


CASES = {"kitchen": _kitchen, "fourier": _fourier, "rwstumps": _stumps, "taylor": _taylor,
         "monte carlo": _monte_carlo}


@pytest.mark.parametrize("case", list(CASES))
def test_every_share_count_gives_the_same_bits_and_the_oracle(case, X, shares):
    for compute, want, tol in CASES[case](X):
        got = [shares(lambda: compute(X), n) for n in (1, 2, 3)]
        assert np.array_equal(got[0], got[1]) and np.array_equal(got[0], got[2])
        assert np.all(np.abs(got[0] - want) <= tol), case


def test_a_read_only_input_compiles_no_other_signature(X):
    """The kernels that only read X (and the stumps' fitted arrays) are given read-only views
    (numba types read-only arrays apart; the fixed-order product X W^T, whose kernel predict's
    writable chunks share, a writable copy): a read-only input, as scikit-learn's memory-map
    checks pass, and a loaded model's read-only arrays give the same features without
    another compilation."""
    from rwtool.features import _dot, _kitchen, _rkhs, _rowwise, _taylor
    maps = [RWStumps(n_features=9, random_state=0), KitchenStumps(n_features=9, random_state=0),
            TaylorMultiKernelFeatures(gauss_order=2),
            MonteCarloRKHS(n_features=9, random_state=0, base="relu"),
            MonteCarloRKHS(n_features=9, random_state=0, distribution="stumps",
                           kernel="indicator-gaussian", base="stump"),
            RandomFourierFeatures(n_features=9, random_state=0),
            RandomFourierFeatures(n_features=9, random_state=0, dtype="float32")]
    kernels = (_rkhs._stump_rows, _kitchen._stump_sign_rows, _taylor._monomial_rows,
               _rowwise._dot_base_tasks, _rowwise._stump_prefix_rows, _dot._fixed_order_rows)
    frozen = X.copy()
    frozen.flags.writeable = False
    for f in maps:
        f.fit(X)
        want = f.transform(X)
        before = [len(k.signatures) for k in kernels]
        assert np.array_equal(f.transform(frozen), want)
        for name in ("idx_", "thr_", "_shift", "_c"):      # as a loaded model's arrays
            if isinstance(getattr(f, name, None), np.ndarray):
                getattr(f, name).flags.writeable = False
        assert np.array_equal(f.transform(X), want)
        assert [len(k.signatures) for k in kernels] == before, type(f).__name__
