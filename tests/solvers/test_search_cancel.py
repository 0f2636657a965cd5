"""reg="auto" can be cancelled inside its search: a Cancel is seen between the folds of a
candidate, each a T x T factorisation, not only after every fold of a batch of candidates
(issue 24: the search of the app's default fit ran 5.6-7.3 s without a report).

Oracle: the number of fold solves run before the cancel took effect, counted by wrapping
SufficientStats.fold_coefs.
"""

import numpy as np
import pytest

from rwtool.features import RandomFourierFeatures
from rwtool.progress import FitCancelled, Progress
from rwtool.solvers import _sufficient
from rwtool.solvers._sufficient import SufficientStats, select_reg


def test_a_cancel_in_the_search_stops_after_the_current_fold(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    fmap = RandomFourierFeatures(n_features=30, variant="phase", random_state=0).fit(X)
    Y = fmap.transform(X) @ rng.normal(size=(30, 1)) + 0.1 * rng.normal(size=(300, 1))
    stats = SufficientStats(30, 1, 3).add(fmap, X, Y)
    calls = []
    solve = SufficientStats.fold_coefs

    def counted(self, fold, *a, **k):
        calls.append(fold)
        return solve(self, fold, *a, **k)
    monkeypatch.setattr(_sufficient.SufficientStats, "fold_coefs", counted)
    stages = []

    def cancel_at_the_first_report(ev):
        stages.append((ev.stage, ev.kind))
        return ev.stage == "search" and ev.kind == "update"
    # every update is emitted (no rate limit), so the first one after a fold cancels there
    with pytest.raises(FitCancelled):
        select_reg(stats, list(np.logspace(-8, -2, 7)), False,
                   progress=Progress(cancel_at_the_first_report, min_interval=0.0))
    assert stages[0] == ("search", "start")
    assert calls == [0], calls          # one fold solved, then the cancel: not all 3 folds
