"""A script that ends right after reading a CSV exits cleanly (issue 27: exit 134 at exit).

pyarrow.csv frees a block of Python-owned bytes on its own thread with the GIL taken; a thread
that asks for the GIL while the interpreter finalizes is ended by Python, and the C++ runtime
aborts the process ("terminate called without an active exception"). rwtool.data._handoff
tracks what it hands to pyarrow and waits at exit until pyarrow has let go of it.

Oracle: the process's own exit status and stderr. The subprocess test stops each script at the
moment the race needs (a pyarrow thread still holds a block when read_csv returns, found by the
tracking itself) and ends it there, with rwtool's exit hook and, as the control, without it.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rwtool
from rwtool.data import _handoff

ROOT = Path(__file__).resolve().parents[2]
MOONS = ROOT / "samples" / "moons.csv"
ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           OPENBLAS_NUM_THREADS="1")

# Read until read_csv returns while a pyarrow thread still holds a block (about 1 read in 30 on
# a busy 2-core machine; 1,000 reads give it its moment there), then end the script at once, holding the GIL as long as it may.
SCRIPT = r"""
import atexit, sys, rwtool
from rwtool.data import _handoff
if sys.argv[1] == "without-hook":
    atexit.unregister(_handoff.wait_for_release)
for _ in range(1000):
    rwtool.read_csv(sys.argv[2], target=-1)
    if _handoff.held():
        sys.setswitchinterval(1.0)
        break
else:
    sys.exit(3)
"""


def test_a_buffer_pyarrow_holds_is_waited_for_and_then_released():
    data = np.frombuffer(b"a,b\n1,2\n", np.uint8)
    before = _handoff.held()
    reader = _handoff.arrow_input(data)
    assert _handoff.held() == before + 1
    assert not _handoff.wait_for_release(timeout=0.01)      # still held: the wait says so
    assert reader.read() == b"a,b\n1,2\n"                    # the same bytes, no copy made
    del reader
    assert _handoff.wait_for_release(timeout=5) and _handoff.held() == 0


def test_read_csv_leaves_nothing_held_once_waited_for():
    ds = rwtool.read_csv(MOONS, target="label")
    assert ds.X.shape == (400, 2)
    assert _handoff.wait_for_release(timeout=5) and _handoff.held() == 0


@pytest.mark.slow
def test_a_script_ending_while_pyarrow_holds_a_block_exits_cleanly(tmp_path):
    runs = 6
    # a file wider than 1,024 columns: its records are tokenised on pyarrow's threads (a
    # narrower file's on the calling thread, which leaves nothing held when read_csv returns)
    wide = tmp_path / "wide.csv"
    cells = np.random.default_rng(0).integers(0, 9, (4, 1100))
    wide.write_text(",".join(f"c{j}" for j in range(1100)) + "\n"
                    + "".join(",".join(map(str, r)) + "\n" for r in cells))

    def statuses(mode):
        out = []
        for _ in range(runs):
            r = subprocess.run([sys.executable, "-c", SCRIPT, mode, str(wide)], env=ENV,
                               cwd=tmp_path, capture_output=True, text=True, timeout=300)
            out.append((r.returncode, r.stderr))
        return out

    # exit 3: the script's 1,000 reads never returned while pyarrow held a block (a quiet
    # machine may not give the race its moment); those runs check nothing
    with_hook = [run for run in statuses("with-hook") if run[0] != 3]
    if not with_hook:
        pytest.skip("the race's moment never came in 6 x 1,000 reads on this machine")
    assert all(code == 0 for code, _ in with_hook), with_hook
    # The control shows the test can fail: without the hook some of these runs abort
    # (5 in 52 measured on a busy 2-core machine, 0 in 52 with it); it is reported, not asserted, as it is a race.
    aborted = sum(code == -6 and "terminate called" in err for code, err in statuses("without-hook"))
    print(f"without the exit hook: {aborted} of {runs} scripts aborted at exit")
