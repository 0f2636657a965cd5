"""The kitchen-sink SGD step (solvers/_sgd_rks.py): its constant, its effect on heavy-tailed rows,
and the divergence guard that backs it."""

import numpy as np
import pytest

import rwtool as rw
from rwtool.features import KitchenRelu
from rwtool.losses import get_loss
from rwtool.solvers._sgd_rks import sgd_fit, step_constant


def _heavy_tailed(seed, m=3000, d=10, frac=0.01, scale=20.0):
    """A balanced linear problem where 1% of the rows are 20x larger (the labels are not)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    X[rng.choice(m, int(m * frac), replace=False)] *= scale
    return X, y


@pytest.mark.parametrize("loss,b", [("squared", 50), ("logistic", 7)])
def test_step_constant_matches_its_definition(loss, b):
    """info["step_L"] against smoothness * (mean + (max - mean) / b) of ||psi(x_i)||^2 computed
    with numpy from the transformed rows (all rows sit in the first chunk here)."""
    X, y = _heavy_tailed(0, m=400)
    fmap = KitchenRelu(n_features=60, random_state=0).fit(X)
    sq = np.sum(fmap.transform(X) ** 2, axis=1)
    s = get_loss(loss).smoothness
    Y = np.where(y > 0, 1.0, -1.0)[:, None]
    _, info = sgd_fit(fmap, X, Y, 1e-4, loss=loss, batch_size=b, max_iter=1, random_state=0)
    assert info["step_L"] == pytest.approx(s * (sq.mean() + (sq.max() - sq.mean()) / b),
                                           rel=1e-12)
    # the old rule stays available and is the worst single row
    _, old = sgd_fit(fmap, X, Y, 1e-4, loss=loss, batch_size=b, max_iter=1, random_state=0,
                     step_rule="max")
    assert old["step_L"] == pytest.approx(s * sq.max(), rel=1e-12)
    assert step_constant(np.full(5, 2.0), 0.25, 10) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="step_rule"):
        sgd_fit(fmap, X, Y, 1e-4, step_rule="mean")


@pytest.mark.slow
def test_default_relu_sgd_learns_on_heavy_tailed_rows():
    """With a step set by the largest row (the old rule) the few 20x rows made every step tiny:
    mean accuracy gap to ridge (reg="auto", the exact solve on the same features) 0.106 over
    four seeds (0.17 at worst); with the mini-batch rule 0.026."""
    gaps = []
    for seed in range(4):
        X, y = _heavy_tailed(seed)
        Xtr, Xte, ytr, yte = X[:2000], X[2000:], y[:2000], y[2000:]
        sgd = rw.RKSClassifier(base="relu", solver="sgd", random_state=0).fit(Xtr, ytr)
        ridge = rw.RKSClassifier(base="relu", random_state=0).fit(Xtr, ytr)
        majority = max(np.mean(yte), 1 - np.mean(yte))
        assert sgd.score(Xte, yte) > majority + 0.3
        gaps.append(ridge.score(Xte, yte) - sgd.score(Xte, yte))
    assert np.mean(gaps) < 0.05, gaps


def test_a_batch_far_above_the_measured_curvature_stops_loudly():
    """The step constant is measured on the first chunk; rows 10^4 times larger that it never saw
    blow the batch loss up, and the run stops with NumericalError naming the fix."""
    m = 1000
    X, y = _heavy_tailed(1, m=m, d=5, frac=0.0)
    perm = np.random.default_rng(0).permutation(m)    # sgd_fit's first epoch order
    X[perm[500:503]] *= 1e4                           # not in the first 50-row chunk
    fmap = KitchenRelu(n_features=40, random_state=0).fit(X)
    Y = np.where(y > 0, 1.0, -1.0)[:, None]
    with pytest.raises(rw.NumericalError, match="diverged") as info:
        sgd_fit(fmap, X, Y, 1e-6, batch_size=50, chunk=50, random_state=0)
    assert info.value.solver == "sgd" and "standardize" in info.value.fix
