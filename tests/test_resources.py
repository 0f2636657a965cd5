"""rwtool.resources.available_memory under the process's own memory limits (ulimit -v, -d)."""

import subprocess
import sys

import pytest

resource = pytest.importorskip("resource")

CHILD = """
import resource, sys
from rwtool.resources import available_memory
def used(field):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith(field))
name, field = sys.argv[1], sys.argv[2]
room = 300 * 2**20
limit = used(field) + room
resource.setrlimit(getattr(resource, name), (limit, resource.getrlimit(getattr(resource, name))[1]))
avail = available_memory()
import numpy as np
try:
    np.ones(int(1.2 * avail) // 8)
    verdict = "allocated"
except MemoryError:
    verdict = "refused"
print(room, avail, verdict)
"""


@pytest.mark.slow
@pytest.mark.parametrize("name, field", [("RLIMIT_DATA", "VmData:"), ("RLIMIT_AS", "VmSize:")])
def test_available_memory_honours_the_soft_rlimits(name, field):
    """A process limited to 300 MB more than it uses is told about 300 MB, not the machine's
    RAM. Oracle: the limit the child set itself, and a numpy allocation beyond it failing."""
    out = subprocess.run([sys.executable, "-c", CHILD, name, field], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    room, avail, verdict = out.stdout.split()
    assert 0.8 * int(room) < int(avail) <= int(room)
    assert verdict == "refused"          # the limit is real: 1.2 x the answer cannot be had
