"""The app's "custom (Monte Carlo)" instantiation: built-in pieces chosen in the form."""

import numpy as np

from gui.logic.custom_instantiation import CUSTOM, fold, unfold, with_fields
from gui.logic.methods import param_specs
from rwtool import RWClassifier


def test_fold_and_unfold_round_trip():
    form = {"instantiation": CUSTOM, "mc_distribution": "laplace", "mc_kernel": "polynomial",
            "mc_base": "tanh", "mc_n_draws": 800, "sigma": 1.0}
    est = fold(form)
    assert est == {"instantiation": "mc:laplace:polynomial:tanh:800", "sigma": 1.0}
    assert unfold(est) == form
    assert fold({"instantiation": "rwsign", "mc_base": "relu"}) == {"instantiation": "rwsign"}


def test_form_lists_custom_with_builtin_choices():
    """The custom fields offer the built-in pieces, and the pieces registered in this session
    (other tests register some; the estimator accepts them by name)."""
    import rwtool as rw

    def half_sign(w, x):
        return 0.5 * np.sign(np.dot(w, x))

    rw.register_base("half_sign_gui_test", half_sign)
    specs = {s.name: s for s in with_fields(param_specs(RWClassifier))}
    assert CUSTOM in specs["instantiation"].choices
    assert "rwrelu" in specs["instantiation"].choices
    assert {"normal", "cauchy", "laplace", "uniform", "stumps"} <= set(
        specs["mc_distribution"].choices)
    assert {"gaussian", "exponential", "indicator-gaussian", "polynomial"} <= set(
        specs["mc_kernel"].choices)
    assert {"sign", "relu", "stump", "tanh", "sigmoid", "half_sign_gui_test"} <= set(
        specs["mc_base"].choices)
    assert specs["mc_base"].choices[:5] == ("sign", "relu", "stump", "tanh", "sigmoid")


def test_panel_builds_a_custom_instantiation(qtbot):
    from gui.panels.method_panel import MethodPanel
    panel = MethodPanel()
    qtbot.addWidget(panel)
    panel.set_method("rw", {"instantiation": "mc:cauchy:gaussian:relu:600", "n_features": 40,
                            "random_state": 0})
    assert panel.field_widget("mc_base").isEnabled()
    assert panel.field_widget("instantiation").currentData() == CUSTOM
    est = panel.make_estimator()
    assert est.instantiation == "mc:cauchy:gaussian:relu:600"
    X = np.random.default_rng(0).standard_normal((80, 3))
    y = (X[:, 0] > 0).astype(int)
    assert est.fit(X, y).score(X, y) > 0.7
    panel.set_method("rw", {"instantiation": "rwsign"})
    assert not panel.field_widget("mc_base").isEnabled()
    assert panel.params()["instantiation"] == "rwsign" and "mc_base" not in panel.params()


def test_panel_shows_the_theta_that_will_be_used(qtbot):
    """An empty theta field is the estimator's theta=None; the placeholder and the derived
    quantities say what it resolves to for the chosen instantiation (0.1 or 0.5)."""
    from gui.panels.method_panel import MethodPanel
    panel = MethodPanel()
    qtbot.addWidget(panel)
    panel.set_method("rw", {"instantiation": "rwsign"})
    field = panel.field_widget("theta")
    assert field.text() == "" and panel.params()["theta"] is None
    assert field.placeholderText() == "empty = 0.1, the default for rwsign"
    assert panel.make_estimator().theta is None
    panel.set_method("rw", {"instantiation": "mc:cauchy:gaussian:relu"})
    assert field.placeholderText() == "empty = 0.5, the default for Monte Carlo Gaussian kernels"
    panel.set_method("rw", {"instantiation": "rwexpsign"})
    assert "not used" in field.placeholderText()
    panel.set_method("rw", {"instantiation": "rwrelu", "theta": 0.3})
    assert panel.make_estimator().theta == 0.3


def test_width_field_is_enabled_for_a_custom_kernel_that_uses_it(qtbot):
    """theta sets gamma of a custom Gaussian kernel, kappa of an exponential one: the field
    the kernel uses is enabled (it was greyed out for every custom instantiation)."""
    from gui.panels.method_panel import MethodPanel
    panel = MethodPanel()
    qtbot.addWidget(panel)
    panel.set_method("rw", {"instantiation": "mc:cauchy:gaussian:relu", "theta": 0.3})
    assert panel.field_widget("theta").isEnabled()
    assert not panel.field_widget("kappa").isEnabled()
    assert panel.make_estimator().theta == 0.3
    panel.set_method("rw", {"instantiation": "mc:normal:exponential:sign", "kappa": 7.0})
    assert panel.field_widget("kappa").isEnabled()
    assert not panel.field_widget("theta").isEnabled()
    assert panel.make_estimator().kappa == 7.0
    panel.set_method("rw", {"instantiation": "mc:normal:polynomial:sign"})
    assert not panel.field_widget("theta").isEnabled()
    assert not panel.field_widget("kappa").isEnabled()
    panel.set_method("rw", {"instantiation": "rwrelu"})
    assert panel.field_widget("theta").isEnabled()
