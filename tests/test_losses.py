"""Losses: values, derivatives (finite differences), Lipschitz constants, maxima (brute force)."""

import numpy as np
import pytest

from rwtool.losses import LOSSES, get_loss, loss_deriv, loss_deriv2, loss_value


@pytest.mark.parametrize("name", list(LOSSES))
def test_numba_scalars_match_numpy_and_finite_differences(name):
    loss = get_loss(name)
    rng = np.random.default_rng(0)
    f = rng.uniform(-40, 40, 200)
    f[:5] = [0.0, 1e-8, -1e-8, 700.0, -700.0]
    y = rng.choice([-1.0, 1.0], 200)
    v = np.array([loss_value(loss.code, a, b) for a, b in zip(f, y)])
    d = np.array([loss_deriv(loss.code, a, b) for a, b in zip(f, y)])
    d2 = np.array([loss_deriv2(loss.code, a, b) for a, b in zip(f, y)])
    assert np.all(np.isfinite(v)) and np.all(np.isfinite(d))
    np.testing.assert_allclose(v, loss.value(f, y), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(d, loss.derivative(f, y), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(d2, loss.second_derivative(f, y), rtol=1e-12, atol=1e-300)
    h = 1e-6
    small = np.abs(f) < 30
    fd = (loss.value(f + h, y) - loss.value(f - h, y)) / (2 * h)
    np.testing.assert_allclose(d[small], fd[small], rtol=1e-6, atol=1e-8)
    fd2 = (loss.derivative(f + h, y) - loss.derivative(f - h, y)) / (2 * h)
    np.testing.assert_allclose(d2[small], fd2[small], rtol=1e-5, atol=1e-8)


def test_closed_forms():
    sq, lg = get_loss("squared"), get_loss("logistic")
    assert sq.value(3.0, 1.0) == pytest.approx(2.0)
    assert lg.value(0.0, 1.0) == pytest.approx(np.log(2.0))
    assert lg.value(2.0, -1.0) == pytest.approx(np.log1p(np.exp(2.0)))
    assert lg.value(-800.0, 1.0) == pytest.approx(800.0)   # no overflow


@pytest.mark.parametrize("name", list(LOSSES))
@pytest.mark.parametrize("F", [0.5, 3.0])
def test_lipschitz_and_max_by_brute_force(name, F):
    loss = get_loss(name)
    f = np.linspace(-F, F, 4001)
    for y in (-1.0, 1.0):
        v = loss.value(f, y)
        slopes = np.abs(np.diff(v) / np.diff(f))
        assert slopes.max() <= loss.lipschitz(F) * (1 + 1e-9)
        assert slopes.max() >= 0.9 * loss.lipschitz(F) or name == "logistic"
        assert v.max() <= loss.max_value(F) * (1 + 1e-12)
    # the smoothness bounds the second derivative
    assert loss.second_derivative(f, 1.0).max() <= loss.smoothness + 1e-12


def test_get_loss_errors():
    with pytest.raises(ValueError, match="loss must be one of"):
        get_loss("hinge")
    assert get_loss(get_loss("squared")).name == "squared"
