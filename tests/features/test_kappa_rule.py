"""kappa = 10: the default of the exponential-kernel gamma rule (issue 12).

Oracles: 003 Table 4's rule gamma_from_kappa evaluated directly, the estimator with the value
written out, and model files (tests/data/*_kappa_default_5.rwm) written by rwtool before the
change, when the default was 5, with their predictions stored as hex floats. Those were
computed on another machine: they are compared within the rounding tolerance of the problem
(conftest.rounding_tolerance), never bit for bit.
"""

import inspect
import json
from pathlib import Path

import numpy as np
import pytest

import rwtool
import rwtool.persist as P
from rwtool.estimators import RWClassifier, RWRegressor
from rwtool.features import RWExpRelu, RWExpSign, gamma_from_kappa
from rwtool.features._rkhs_mc import MonteCarloRKHS
from rwtool.features._instantiation import make_feature_map

DATA = Path(__file__).resolve().parent.parent / "data"


def _old():
    return json.loads((DATA / "kappa_default_5.json").read_text())


def test_every_signature_defaults_to_10():
    """The estimators, the feature maps, Monte Carlo maps and the factories agree (the app
    builds its form from these signatures)."""
    for f in (RWClassifier, RWRegressor, RWExpSign, RWExpRelu, MonteCarloRKHS,
              make_feature_map, rwtool.Instantiation.make_map):
        assert inspect.signature(f).parameters["kappa"].default == 10.0, f


@pytest.mark.parametrize("inst", ["rwexpsign", "rwexprelu"])
def test_default_equals_explicit_10(inst, stored_model_data):
    X, y, _ = stored_model_data
    a = RWClassifier(instantiation=inst, n_features=30, random_state=0).fit(X, y)
    b = RWClassifier(instantiation=inst, n_features=30, kappa=10.0, random_state=0).fit(X, y)
    assert a.feature_map_.gamma_ == b.feature_map_.gamma_ \
        == gamma_from_kappa(X.shape[1] + 1, 1.0, 10.0)        # n counts the bias column
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


def test_monte_carlo_exponential_default_is_10(stored_model_data):
    X, y, _ = stored_model_data
    a = RWClassifier(instantiation="mc:normal:exponential:sign:256", n_features=20,
                     random_state=0).fit(X, y)
    b = RWClassifier(instantiation="mc:normal:exponential:sign:256", n_features=20, kappa=10.0,
                     random_state=0).fit(X, y)
    assert a.feature_map_.gamma_ == b.feature_map_.gamma_
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_old_model_files_load_and_predict_as_before(stored_model_data, from_hex,
                                                    rounding_tolerance, outputs_with_coef):
    """The stored predictions were computed on another machine: equal within the rounding of
    the model's products (inputs and coefficients perturbed by one epsilon). The loaded gamma
    is the stored float itself."""
    X = stored_model_data[0]
    ref = _old()
    clf = P.load(DATA / "rwexpsign_kappa_default_5.rwm")
    assert clf.kappa == 5.0 and clf.feature_map_.kappa == 5.0
    assert clf.feature_map_.gamma_ == float.fromhex(ref["rwexpsign_gamma"])
    tol = rounding_tolerance(outputs_with_coef(clf, "decision_function"), X, clf.coef_)
    np.testing.assert_allclose(clf.decision_function(X), from_hex(ref["rwexpsign_decision"]),
                               rtol=0, atol=tol)
    reg = P.load(DATA / "rwexprelu_kappa_default_5.rwm")
    assert reg.kappa == 5.0
    tol = rounding_tolerance(outputs_with_coef(reg, "predict"), X, reg.coef_)
    np.testing.assert_allclose(reg.predict(X), from_hex(ref["rwexprelu_predict"]),
                               rtol=0, atol=tol)


def test_explicit_5_reproduces_the_old_default(stored_model_data, from_hex, reproduces):
    """kappa=5 gives the model the default gave before, within the rounding tolerance of the
    fit (the stored values come from another machine's BLAS: 3e-11 apart on a newer OpenBLAS);
    the default no longer does. gamma is a few libm calls (log, expm1, sqrt), each within an
    ulp on any platform: 8 ulps. The reg is the one the old model files hold
    (test_theta_rule.py says why)."""
    X, y, yr = stored_model_data
    ref = _old()
    ulps = 8 * np.finfo(float).eps
    reg_c = P.load(DATA / "rwexpsign_kappa_default_5.rwm").reg_
    reg_r = P.load(DATA / "rwexprelu_kappa_default_5.rwm").reg_
    clf = reproduces(lambda Xk: RWClassifier(instantiation="rwexpsign", n_features=20,
                                             kappa=5.0, reg=reg_c, random_state=0).fit(Xk, y),
                     X, "decision_function", from_hex(ref["rwexpsign_decision"]))
    assert clf.feature_map_.gamma_ == gamma_from_kappa(4, 1.0, 5.0)
    assert clf.feature_map_.gamma_ == pytest.approx(float.fromhex(ref["rwexpsign_gamma"]),
                                                    rel=ulps)
    reg = reproduces(lambda Xk: RWRegressor(instantiation="rwexprelu", n_features=20,
                                            kappa=5.0, reg=reg_r, random_state=0).fit(Xk, yr),
                     X, "predict", from_hex(ref["rwexprelu_predict"]))
    assert reg.feature_map_.gamma_ == pytest.approx(float.fromhex(ref["rwexprelu_gamma"]),
                                                    rel=ulps)
    new = RWClassifier(instantiation="rwexpsign", n_features=20, random_state=0).fit(X, y)
    assert new.feature_map_.gamma_ < clf.feature_map_.gamma_   # a larger kappa, a narrower kernel
    assert not np.array_equal(new.decision_function(X), clf.decision_function(X))


def test_bounds_grow_with_kappa(stored_model_data):
    """theta_ (and every bound of bounds()) grows with kappa: the price of the new default."""
    X, y, _ = stored_model_data
    b5 = RWClassifier(instantiation="rwexpsign", n_features=40, kappa=5.0,
                      random_state=0).fit(X, y).bounds(X, y, n_draws=50)
    b10 = RWClassifier(instantiation="rwexpsign", n_features=40,
                       random_state=0).fit(X, y).bounds(X, y, n_draws=50)
    assert b10["theta"] > b5["theta"] and b10["kappa"] == pytest.approx(10.0, rel=1e-9)


def test_app_derives_gamma_from_the_default_kappa(stored_model_data):
    """The app's derived quantities use the estimators' default when kappa is not given."""
    from gui.logic.method_rules import derived_quantities
    X, y, _ = stored_model_data
    rows = dict(derived_quantities("rw", {"instantiation": "rwexpsign", "bias": True}, X))
    est = RWClassifier(instantiation="rwexpsign", n_features=10, random_state=0).fit(X, y)
    assert rows["γ (kernel width)"].startswith(f"{est.feature_map_.gamma_:.4g}")
    assert rows["γ (kernel width)"].startswith(f"{gamma_from_kappa(4, 1.0, 10.0):.4g}")
