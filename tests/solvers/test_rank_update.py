"""A += Phi^T Phi (solvers._rank_update) against numpy's dense product, and the mirror.

The oracle is numpy's Phi.T @ Phi + A0 in the same process. dsyrk and numpy's product sum
each entry over the block's rows in BLAS's own order, so the two agree to the rounding of a
sum of k products: gamma_k times the sum of |terms| (plus A0's own rounding step).
"""

import numpy as np
import pytest

from rwtool.solvers._rank_update import DIRECT, mirror_lower, rank_update


def _bound(A0, Phi):
    k = Phi.shape[0] + 1
    gamma = k * np.finfo(float).eps / (1 - k * np.finfo(float).eps)
    return gamma * (np.abs(A0) + np.abs(Phi).T @ np.abs(Phi))


@pytest.mark.parametrize("rows, T", [(1, 5), (37, 64), (300, 129)])
def test_update_adds_the_product(rows, T):
    rng = np.random.default_rng(rows)
    S = rng.standard_normal((T, T))
    A0 = S + S.T
    Phi = rng.standard_normal((rows, T)) * rng.choice([1e-3, 1.0, 1e3], T)
    A = A0.copy()
    lower = rank_update(A, Phi)
    assert lower == DIRECT
    if lower:
        # the upper triangle untouched until the mirror
        iu = np.triu_indices(T, 1)
        assert np.array_equal(A[iu], A0[iu])
        mirror_lower(A)
    ref = A0 + Phi.T @ Phi
    assert np.all(np.abs(A - ref) <= _bound(A0, Phi))
    assert np.array_equal(A, A.T)


def test_row_slices_and_strided_rows():
    """A slice of a block's rows (what normal_equations passes for a fold) and every other row
    (a row stride above T): the same sums as their contiguous copies."""
    rng = np.random.default_rng(3)
    Phi = rng.standard_normal((200, 70))
    for part in (Phi[13:151], Phi[::3]):
        A, B = np.zeros((70, 70)), np.zeros((70, 70))
        if rank_update(A, part):
            mirror_lower(A)
        if rank_update(B, np.ascontiguousarray(part)):
            mirror_lower(B)
        assert np.array_equal(A, B)
        assert np.all(np.abs(A - part.T @ part) <= _bound(np.zeros((70, 70)), part))


def test_float32_block_is_added_in_float64():
    """A float32 block: its product in float32 (numpy's SSYRK), added to the float64 sum."""
    rng = np.random.default_rng(4)
    Phi = rng.standard_normal((90, 33)).astype(np.float32)
    A = np.ones((33, 33))
    assert rank_update(A, Phi, np.empty((33, 33), dtype=np.float32)) is False
    np.testing.assert_array_equal(A, 1.0 + (Phi.T @ Phi).astype(np.float64))


@pytest.mark.parametrize("T", [1, 2, 511, 512, 513, 1100])
def test_mirror_copies_the_lower_triangle(T):
    """Across panel bounds (512 rows): every upper entry becomes its lower mirror, the lower
    triangle and the diagonal stay."""
    rng = np.random.default_rng(T)
    A = rng.standard_normal((T, T))
    low = np.tril(A)
    mirror_lower(A)
    np.testing.assert_array_equal(A, low + np.tril(low, -1).T)


def test_same_bits_whatever_the_blas_threads():
    """The sums do not depend on BLAS's thread count (dsyrk sums each entry in one thread;
    numpy's Phi.T @ Phi of this block gave other bits with 1 and 2 threads here, 1e-13 apart)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    rng = np.random.default_rng(0)
    Phi = rng.standard_normal((2048, 1500))
    out = []
    for n in (1, 2):
        with threadpoolctl.threadpool_limits(n, user_api="blas"):
            A = np.zeros((1500, 1500))
            if rank_update(A, Phi):
                mirror_lower(A)
            out.append(A)
    assert np.array_equal(out[0], out[1])
