"""scikit-learn's callback API (scikit-learn >= 1.9, experimental) on rwtool's estimators.

``est.set_callbacks(*callbacks)`` takes scikit-learn callbacks (``sklearn.callback.ProgressBar``,
``ScoringMonitor``, or any object of the ``FitCallback`` protocol), and a Pipeline or a search
that propagates its callbacks reaches rwtool's estimators the same way. During ``fit`` /
``partial_fit`` the progress events every rwtool solver already emits (rwtool.progress) are
replayed as scikit-learn tasks:

    fit (root task)
    +-- one task per stage ("features", "normal equations", "iterations", "epochs", ...)
        +-- STEPS leaf tasks when the stage's total is known (one per 1/STEPS of it),
            else one leaf per progress event

so a progress bar advances with the work. The root task's end carries the fitted estimator
(``fitted_estimator`` for ScoringMonitor). A callback that asks to stop (``on_fit_task_end``
returning True) cancels the fit exactly as rwtool's own callback returning True does: the fit
raises ``FitCancelled`` (an iterative solver keeps its last iterate, rwtool.progress); scikit-
learn 1.9's own estimators do not yet act on that request either. rwtool's ``callback=``
argument keeps working beside them; without scikit-learn nothing here is imported.

This module must not import any solver or estimator, nor scikit-learn at import time.
"""

from __future__ import annotations

import functools
import inspect

#: leaf tasks per stage of known size: a bar's resolution, and a bound on the hooks' cost
STEPS = 100


def _sklearn_callback():
    try:
        import sklearn.callback as skc
    except ImportError as exc:  # older scikit-learn, or none
        raise ImportError("set_callbacks needs scikit-learn >= 1.9 (its experimental "
                          "sklearn.callback API); rwtool's own `callback=` argument of fit "
                          "reports the same progress without it") from exc
    return skc


class CallbackSupport:
    """``set_callbacks`` in scikit-learn's convention, without importing scikit-learn until a
    callback is set (rwtool has no runtime dependency on it)."""

    def set_callbacks(self, *callbacks):
        """Set scikit-learn callbacks (``sklearn.callback``) reported to during ``fit``."""
        return _sklearn_callback().CallbackSupportMixin.set_callbacks(self, *callbacks)

    def _init_callback_context(self, task_name="fit", task_id=0, max_subtasks=0,
                               sequential_subtasks=True):
        return _sklearn_callback().CallbackSupportMixin._init_callback_context(
            self, task_name, task_id, max_subtasks, sequential_subtasks)


class _StageBridge:
    """rwtool.progress's ``callback(event)`` that replays events as scikit-learn tasks."""

    def __init__(self, estimator, root, user_callback, X, y):
        self.estimator, self.root, self.user = estimator, root, user_callback
        self.X, self.y = X, y
        self.stage = None
        self.leaves = 0
        self.sized = False
        self.stop = False

    def _leaf(self, name):
        leaf = self.stage.subcontext(task_name=name)
        leaf.call_on_fit_task_begin(estimator=self.estimator)
        if leaf.call_on_fit_task_end(estimator=self.estimator):
            self.stop = True

    def _close_stage(self):
        if self.stage is None:
            return
        if self.sized:
            while self.leaves < STEPS:
                self._leaf(f"{self.stage.task_name} {self.leaves}")
                self.leaves += 1
        if self.stage.call_on_fit_task_end(estimator=self.estimator):
            self.stop = True
        self.stage = None

    def __call__(self, event):
        if event.kind == "start" or self.stage is None or event.stage != self.stage.task_name:
            self._close_stage()
            self.sized = event.total > 0
            self.stage = self.root.subcontext(task_name=event.stage,
                                              max_subtasks=STEPS if self.sized else None)
            self.stage.call_on_fit_task_begin(estimator=self.estimator, X=self.X, y=self.y)
            self.leaves = 0
        if event.kind == "end":
            self._close_stage()
        elif self.sized:
            target = min(STEPS, int(STEPS * event.fraction))
            while self.leaves < target:
                self._leaf(f"{event.stage} {self.leaves}")
                self.leaves += 1
        elif event.kind == "update":
            self._leaf(f"{event.stage} {self.leaves}")
            self.leaves += 1
        cancel = bool(self.user(event)) if self.user is not None else False
        return cancel or self.stop


def _fitted_attributes(est):
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def reports_to_sklearn(method):
    """Decorate ``fit`` / ``partial_fit`` (any signature with a ``callback`` argument): with
    scikit-learn callbacks set on the estimator, or propagated to it by a meta-estimator, the
    method runs inside a root task and its progress events feed the callbacks; otherwise it
    runs as it is, at no cost."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        wanted = hasattr(self, "_skl_callbacks") or hasattr(self, "_parent_callback_ctx")
        if not wanted or hasattr(self, "_callback_fit_ctx"):   # none, or a nested call
            return method(self, *args, **kwargs)
        skc = _sklearn_callback()
        bound = signature.bind(self, *args, **kwargs)
        user = bound.arguments.get("callback")
        user = getattr(user, "callback", user)      # a rwtool.progress.Progress: its callable
        X, y = bound.arguments.get("X"), bound.arguments.get("y")
        metadata = {k: bound.arguments[k] for k in ("sample_weight",)
                    if bound.arguments.get(k) is not None}

        @skc.with_callbacks   # tears the callbacks down whether the fit ends or raises
        def run(est):
            root = est._init_callback_context(task_name=method.__name__, max_subtasks=None)
            root.call_on_fit_task_begin(estimator=est, X=X, y=y, metadata=metadata)
            bridge = _StageBridge(est, root, user, X, y)
            bound.arguments["callback"] = bridge
            out = method(*bound.args, **bound.kwargs)
            bridge._close_stage()
            root.call_on_fit_task_end(estimator=est, X=X, y=y, metadata=metadata,
                                      reconstruction_attributes=lambda: _fitted_attributes(est))
            return out

        return run(self)

    return wrapper
