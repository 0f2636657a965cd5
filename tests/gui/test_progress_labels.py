"""The training bar says which part of a run is running (issue 24): "fold k of K" and the
fit's own stage during a k-fold evaluation, then the final fit on every training row."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("pyqtgraph")

from tests.gui.test_main_window import (  # noqa: E402,F401
    choose, load, moons_csv, train, window)


def _bar_texts(window):
    """The bar's text and the status line after every progress event, as the user sees them
    within gui.panels.training_panel.SHOW_MS (this slot is connected after the window's own,
    so it reads what the event set)."""
    seen = []
    panel = window.training_panel
    window.worker.progress.connect(
        lambda rid, ev: seen.append((ev.get("stage"), panel.bar_text, panel.phase_text)))
    return seen


@pytest.mark.parametrize("family,params", [("rw", {"n_features": 30}),
                                           ("rw", {"n_features": 30, "solver": "sfgd"})])
def test_kfold_bar_names_the_fold_and_the_phase(qtbot, window, tmp_path, family, params):
    load(qtbot, window, moons_csv(tmp_path / "m.csv", n=300))
    choose(window, family, random_state=0, **params)
    window.eval_panel.set_kfold(3)
    seen = _bar_texts(window)
    run = train(qtbot, window)
    assert run.status == "done"
    # every event inside a fold's fit or its scoring is labelled with that fold, in order
    folds = [int(m.group(1)) for _, bar, _ in seen
             for m in [re.match(r"fold (\d) of 3", bar)] if m]
    assert folds and folds == sorted(folds) and set(folds) == {1, 2, 3}
    inner = [(stage, bar, status) for stage, bar, status in seen
             if stage not in ("cross-validation",) and bar.startswith("fold ")]
    # the fold's phases: its fit's stage and the scoring of its held-out rows
    assert any(stage == "evaluating" and "· evaluating:" in bar for stage, bar, _ in inner)
    assert any(stage != "evaluating" for stage, _, _ in inner)
    assert all(status.startswith(bar.split(" · ")[0]) for _, bar, status in inner)
    # after the three folds, the final fit says so, and so does its evaluation
    last_fold = max(i for i, (_, bar, _) in enumerate(seen) if bar.startswith("fold 3 of 3"))
    after = [bar for _, bar, _ in seen[last_fold + 1:]]
    assert after and all(b.startswith("final fit on every training row") for b in after)
    assert any("evaluating" in b for b in after)


def test_holdout_bar_has_no_fold_label(qtbot, window, tmp_path):
    load(qtbot, window, moons_csv(tmp_path / "m.csv", n=200))
    choose(window, "rw", n_features=20, random_state=0)
    window.eval_panel.set_kfold(3)
    train(qtbot, window)
    window.eval_panel.set_kfold(None)
    seen = _bar_texts(window)
    train(qtbot, window)                 # the previous run's fold label does not carry over
    assert seen and not any("fold" in bar or "final fit" in bar for _, bar, _ in seen)


def test_the_phase_line_is_cleared_when_the_run_ends(qtbot, window, tmp_path):
    load(qtbot, window, moons_csv(tmp_path / "m.csv", n=200))
    choose(window, "rw", n_features=20, random_state=0)
    seen = _bar_texts(window)
    run = train(qtbot, window)
    assert run.status == "done"
    assert any(status for _, _, status in seen)          # phases were named while running
    assert window.training_panel.stage_label.text() == ""
    assert window.statusBar().currentMessage() == f"{run.name} finished: {run.headline()}"
