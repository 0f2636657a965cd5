"""The window reads no file itself: a CSV's preview, its encoded rows and a model file are read
in the fit process, or in a process started for the read while a fit runs (issue 24,
"Responsiveness under load": rwtool's reader held the window's interpreter lock for 205-369 ms
on the 200,000-row file, and its kernels doubled the window's memory).

Oracles: a spy on rwtool's reader in the test's own process (the window's), which must see no
call; the same file read here with rwtool.data (the arrays that come back equal it bit for bit:
the same code on the same bytes, on this machine); the window's data compared by identity
before and after a failed read; the progress of a fit that never ends by itself, which is still
running when the read is done.
"""

from __future__ import annotations

import multiprocessing
import os

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("pyqtgraph")

# every test here starts the fit process (a forkserver and its child): slow
pytestmark = pytest.mark.slow

import rwtool.data as rwdata  # noqa: E402

from gui.logic.jobs import ReadJob  # noqa: E402
from gui.logic.terms import app_words  # noqa: E402
from tests.gui.test_fit_process import Stalled, pwindow  # noqa: E402,F401
from tests.gui.test_main_window import (  # noqa: E402
    TIMEOUT, choose, load, moons_csv, regression_csv, train, write_csv)


@pytest.fixture
def reader_spy(monkeypatch):
    """Every call of rwtool's reader in this process (the window's): the dialect sniffing that
    every preview and every read starts with, and the writing of X."""
    from rwtool.data import _encoding
    calls = []
    sniff, dense = rwdata.sniff_csv, _encoding.EncodedRows.dense
    monkeypatch.setattr(rwdata, "sniff_csv",
                        lambda *a, **k: (calls.append("sniff"), sniff(*a, **k))[1])
    monkeypatch.setattr(_encoding.EncodedRows, "dense",
                        lambda self: (calls.append("dense"), dense(self))[1])
    return calls


def _sent_jobs(monkeypatch, win):
    """The jobs the worker sends to the fit process, as they go."""
    import gui.logic.jobs as jobs_mod
    sent, real = [], jobs_mod.share_arrays

    def share(job, known):
        sent.append(job)
        return real(job, known)
    monkeypatch.setattr(jobs_mod, "share_arrays", share)
    return sent


def test_opening_a_csv_reads_it_in_the_fit_process(qtbot, pwindow, tmp_path, reader_spy,
                                                   monkeypatch):
    sent = _sent_jobs(monkeypatch, pwindow)
    path = moons_csv(tmp_path / "m.csv", n=300)
    load(qtbot, pwindow, path)
    assert reader_spy == []                       # nothing of the reader ran in the window
    # (the machine's load for the estimate is counted there too: gui.worker.LoadProbe)
    reads = [j.fn.__name__ for j in sent if isinstance(j, ReadJob)]
    assert [n for n in reads if n != "current_load"] == ["preview_csv", "encode"]
    monkeypatch.undo()                            # the oracle reads here
    tr, te = rwdata.train_test_csv(path, "label", test_size=0.25, random_state=0)
    got = pwindow.data_info
    assert np.array_equal(got["train"].X, tr.X) and np.array_equal(got["test"].X, te.X)
    assert np.array_equal(got["train"].y, tr.y) and got["train"].feature_names == \
        tr.feature_names
    assert pwindow.data_panel.preview.n_rows == 300
    # and the model trains on what came back
    choose(pwindow, "rw", n_features=30, random_state=0)
    assert train(qtbot, pwindow).status == "done"


def test_a_read_during_a_fit_does_not_wait_for_it(qtbot, pwindow, tmp_path, reader_spy,
                                                  monkeypatch):
    """While the fit process is busy, a file is read in a process started for it: the Data
    tab gets the new file while the fit (one that never ends by itself) still runs."""
    import gui.worker as worker_mod
    load(qtbot, pwindow, moons_csv(tmp_path / "m.csv"))
    started, real = [], worker_mod.run_in_new_process
    monkeypatch.setattr(worker_mod, "run_in_new_process",
                        lambda ctx, job: (started.append(job.fn.__name__), real(ctx, job))[1])
    monkeypatch.setattr(pwindow.method_panel, "make_estimator",
                        lambda: Stalled(n_features=20, random_state=0))
    with qtbot.waitSignal(pwindow.worker.progress, timeout=TIMEOUT):
        pwindow.train()                            # reports once, then sleeps
    other = regression_csv(tmp_path / "r.csv")
    load(qtbot, pwindow, other)
    assert pwindow.training_panel.running and pwindow.worker.busy   # the fit still runs
    assert pwindow.data_info["train"].task == "regression"
    assert started == ["preview_csv", "encode"]
    assert reader_spy == []
    with qtbot.waitSignal(pwindow.run_finished, timeout=TIMEOUT):
        pwindow.cancel()                           # its process is stopped after the grace


def _ragged(path):
    with open(path, "w") as fh:
        fh.write("a,b,label\n1,2,x\n3,4,y,9\n5,6,x\n")
    return str(path)


def test_a_failed_read_leaves_the_data_and_speaks_the_apps_words(qtbot, pwindow, tmp_path,
                                                                 reader_spy):
    load(qtbot, pwindow, moons_csv(tmp_path / "m.csv"))
    info, preview = pwindow.data_info, pwindow.data_panel.preview
    bad = _ragged(tmp_path / "bad.csv")
    pwindow.open_path(bad)
    qtbot.waitUntil(lambda: pwindow.banner.kind == "error" and pwindow.banner.isVisible(),
                    timeout=TIMEOUT)
    assert reader_spy == []
    with pytest.raises(rwdata.DataError) as exc:    # the oracle: the error read here
        rwdata.preview_csv(bad)
    text = pwindow.banner.text
    assert app_words(exc.value).rstrip(".") in text, text
    assert text.endswith("The data already loaded is unchanged."), text
    assert pwindow.data_info is info and pwindow.data_panel.preview is preview


def _dies(*args, **kwargs):
    """A reader whose process dies (the OOM killer, a crash in compiled code)."""
    if multiprocessing.parent_process() is None:
        raise AssertionError("meant to run in a reading process only")
    os._exit(5)


def test_a_reader_that_dies_is_an_error_and_the_next_read_works(qtbot, pwindow, tmp_path,
                                                                monkeypatch):
    path = moons_csv(tmp_path / "m.csv")
    load(qtbot, pwindow, path)
    info, preview = pwindow.data_info, pwindow.data_panel.preview
    with monkeypatch.context() as m:
        m.setattr(rwdata, "preview_csv", _dies)    # the window names it; the process runs it
        pwindow.open_path(regression_csv(tmp_path / "r.csv"))
        qtbot.waitUntil(lambda: pwindow.banner.kind == "error" and pwindow.banner.isVisible(),
                        timeout=TIMEOUT)
    assert "exit code 5" in pwindow.banner.text, pwindow.banner.text
    assert pwindow.data_info is info and pwindow.data_panel.preview is preview
    other = regression_csv(tmp_path / "r2.csv")
    load(qtbot, pwindow, other)                    # a fresh process reads the next file
    assert pwindow.data_info["train"].task == "regression"


def test_a_model_file_is_read_in_the_fit_process(qtbot, pwindow, tmp_path, monkeypatch):
    from rwtool.persist import read_model
    load(qtbot, pwindow, moons_csv(tmp_path / "m.csv"))
    choose(pwindow, "rw", n_features=30, random_state=0)
    run = train(qtbot, pwindow)
    model = str(tmp_path / "m.rwm")
    from rwtool.persist import save
    save(run.result["estimator"], model, preprocessing=run.data["preprocessing"])
    sent = _sent_jobs(monkeypatch, pwindow)
    n = len(pwindow.run_list.runs)
    pwindow.open_model(model)
    qtbot.waitUntil(lambda: len(pwindow.run_list.runs) == n + 1, timeout=TIMEOUT)
    assert [j.fn for j in sent if isinstance(j, ReadJob) and j.fn.__name__ != "current_load"] \
        == [read_model]
    loaded = pwindow.loaded_model.estimator
    te = pwindow.data_info["test"]
    assert np.array_equal(loaded.predict(te.X), run.result["estimator"].predict(te.X))
    bad = write_csv(tmp_path / "not.rwm", ["a"], [["1"]])
    pwindow.open_model(bad)
    qtbot.waitUntil(lambda: pwindow.banner.kind == "error" and pwindow.banner.isVisible(),
                    timeout=TIMEOUT)
    assert pwindow.banner.text.startswith("Cannot open the model: ")
    assert len(pwindow.run_list.runs) == n + 1
