"""What keeps the window's GUI thread's share of the CPU small (issue 24, "Responsiveness under
load"): the fit process runs niced in a session of its own (Linux's scheduler shares the CPU
between sessions first), and progress events only store their figures, drawn on timers in a
bounded number of paints, by live curves drawn cheaply. Checked on what Linux reports of the
process (os.getsid, os.getpriority) and by counting redraws and widget updates, never by
time: benchmarks/speed/bench_gui_load.py measures the gaps.
"""

from __future__ import annotations

import os
import sys

import pytest

pytest.importorskip("pytestqt")

from gui.app import create_app  # noqa: E402
from gui.worker import FIT_NICE, WarmUpJob, WorkerController  # noqa: E402

TIMEOUT = 60_000


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sessions: os.setsid")
def test_the_fit_process_runs_niced_in_a_session_of_its_own(qtbot):
    create_app()
    ctl = WorkerController(processes=True)
    try:
        with qtbot.waitSignal(ctl.called, timeout=TIMEOUT):
            ctl.submit(WarmUpJob(()))          # starts the fit process, fits nothing
        pid = ctl.worker.fits.proc.pid
        assert os.getsid(pid) == pid != os.getsid(0)
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(
            19, os.getpriority(os.PRIO_PROCESS, os.getpid()) + FIT_NICE)
    finally:
        ctl.shutdown()

