"""scikit-learn's callback API (>= 1.9) on rwtool's estimators (rwtool._callbacks).

The oracle is scikit-learn's own task tree: its CallbackContext objects, reached through a
recording callback that follows the FitCallback protocol, and scikit-learn's Pipeline, which
propagates its callbacks to the final estimator."""

import numpy as np
import pytest

import rwtool
from rwtool import FitCancelled
from rwtool._callbacks import STEPS

skc = pytest.importorskip("sklearn.callback")
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402


class Recorder:
    """Records every hook as (hook, task path); optionally asks to stop at a stage's leaf."""

    def __init__(self, stop_at=None):
        self.calls, self.stop_at, self.final = [], stop_at, None

    def setup(self, estimator, context):
        self.calls.append(("setup", context.task_name))

    def teardown(self, estimator, context):
        self.calls.append(("teardown", context.task_name))

    def on_fit_task_begin(self, estimator, context, *, X=None, y=None):
        self.calls.append(("begin", _path(context)))

    def on_fit_task_end(self, estimator, context, *, fitted_estimator=None):
        self.calls.append(("end", _path(context)))
        if context.parent is None or context.source_estimator_name is not None:
            self.final = fitted_estimator
        return self.stop_at is not None and self.stop_at in context.task_name


class PropagatedRecorder(Recorder):
    max_propagation_depth = None


def _path(ctx):
    names = []
    while ctx is not None:
        names.append(ctx.task_name)
        ctx = ctx.parent
    return tuple(reversed(names))


def _data(m=400, n=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)


ESTIMATORS = {
    "rw-lstsq": lambda: rwtool.RWClassifier(n_features=40, reg=1e-3, random_state=0),
    "rw-lasso": lambda: rwtool.RWClassifier(n_features=40, solver="lasso", reg=1e-3,
                                            random_state=0),
    "rw-sfgd": lambda: rwtool.RWClassifier(n_features=40, solver="sfgd", random_state=0),
    "rw-osd": lambda: rwtool.RWClassifier(n_features=40, solver="osd", random_state=0),
    "rks-sgd": lambda: rwtool.RKSClassifier(n_features=40, solver="sgd", max_iter=3,
                                            random_state=0),
    "rfsgd": lambda: rwtool.RFSGDClassifier(n_features=40, n_epochs=2, random_state=0),
    "bkernn": lambda: rwtool.BKerNNClassifier(n_particles=5, max_iter=3, random_state=0),
    "greedymk": lambda: rwtool.GreedyMKClassifier(n_features=20, n_candidates=200, random_state=0),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_estimator_reports_its_stages_as_tasks(name):
    X, y = _data()
    rec = Recorder()
    est = ESTIMATORS[name]().set_callbacks(rec)
    est.fit(X, y)
    hooks = [h for h, _ in rec.calls]
    assert hooks[0] == "setup" and hooks[-1] == "teardown"
    assert rec.calls[1] == ("begin", ("fit",)) and rec.calls[-2] == ("end", ("fit",))
    stages = {p[1] for h, p in rec.calls if h == "begin" and len(p) == 2}
    leaves = [p for h, p in rec.calls if h == "end" and len(p) == 3]
    assert stages and leaves, rec.calls[:10]
    # every task that began ended, in nesting order (a well-formed tree)
    open_ = []
    for h, p in rec.calls[1:-1]:
        if h == "begin":
            open_.append(p)
        else:
            assert open_.pop() == p
    assert not open_
    # the root's end carries the fitted model: it predicts as the estimator does
    np.testing.assert_array_equal(rec.final.predict(X), est.predict(X))


def test_a_sized_stage_has_STEPS_leaves():
    X, y = _data(m=3000)
    rec = Recorder()
    rwtool.RWRegressor(n_features=60, reg=1e-3, block_size=256, random_state=0) \
        .set_callbacks(rec).fit(X, X[:, 0])
    per_stage = {}
    for h, p in rec.calls:
        if h == "end" and len(p) == 3:
            per_stage[p[1]] = per_stage.get(p[1], 0) + 1
    assert per_stage.get("features") == STEPS, per_stage


def test_the_same_model_with_and_without_callbacks_and_the_users_callback_still_called():
    X, y = _data()
    events = []
    plain = rwtool.RWClassifier(n_features=40, solver="sfgd", random_state=3).fit(X, y)
    watched = rwtool.RWClassifier(n_features=40, solver="sfgd", random_state=3) \
        .set_callbacks(Recorder()).fit(X, y, callback=events.append)
    np.testing.assert_array_equal(plain.coef_, watched.coef_)   # same process: bit for bit
    assert events and events[-1].kind == "end"
    assert not hasattr(watched, "_callback_fit_ctx")           # torn down


def test_a_stop_request_cancels_the_fit_and_tears_down():
    X, y = _data()
    rec = Recorder(stop_at="sfgd")
    est = rwtool.RWClassifier(n_features=40, solver="sfgd", random_state=0).set_callbacks(rec)
    with pytest.raises(FitCancelled):
        est.fit(X, y)
    assert rec.calls[-1] == ("teardown", "fit")


def test_a_pipeline_propagates_its_callbacks_into_one_task_tree():
    X, y = _data()
    rec = PropagatedRecorder()
    pipe = make_pipeline(StandardScaler(), rwtool.RWClassifier(n_features=40, reg=1e-3,
                                                               random_state=0))
    pipe.set_callbacks(rec).fit(X, y)
    assert [c for c in rec.calls if c[0] == "setup"] == [("setup", "fit")]  # once, outermost
    # (a classifier's fixed-reg fit: "normal equations" then "solve"; G is formed in the solve)
    inner = [p for h, p in rec.calls if h == "begin" and "normal equations" in p]
    assert inner and inner[0][0] == "fit"            # rwtool's stages hang under the pipeline
    assert not hasattr(pipe[-1], "_skl_callbacks") or not pipe[-1]._skl_callbacks


def test_set_callbacks_refuses_what_is_not_a_callback():
    with pytest.raises(TypeError, match="FitCallback"):
        rwtool.RWClassifier().set_callbacks(object())


def test_progress_bar_runs_when_rich_is_installed():
    pytest.importorskip("rich")
    X, y = _data()
    rwtool.RWClassifier(n_features=40, reg=1e-3).set_callbacks(skc.ProgressBar()).fit(X, y)
