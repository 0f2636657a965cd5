"""How the ``rwtool`` process ends (issue 27): with its command's status, never an abort at exit.

About 3 in 2,300 command-line runs (predict, train) printed a correct result and then died with
"terminate called without an active exception" (exit 134): a C++ library's static destructor
destroying a thread that had not been joined, during the interpreter's exit (pyarrow's thread
pools are such objects). The command now ends with ``os._exit`` once Python's own exit work is
done (rwtool.cli.exit_process), so no native destructor runs.

Oracle: a shared library compiled here whose static object owns an unjoined std::thread -- the
failure mode itself, deterministic: an ordinary interpreter exit aborts (SIGABRT, the shell's
exit 134) -- loaded into the command's process.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow          # every test here starts processes (docs/TESTING.md)

ROOT = Path(__file__).resolve().parents[1]
MOONS = ROOT / "samples" / "moons.csv"
ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           OPENBLAS_NUM_THREADS="1")

POOL = r"""
#include <chrono>
#include <thread>
struct Pool {        // a worker thread its owner never joins
    std::thread worker{[] { std::this_thread::sleep_for(std::chrono::hours(1)); }};
};
static Pool pool;
"""


def _python(code, tmp_path, *args):
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                          text=True, env=ENV, cwd=tmp_path, timeout=300)


@pytest.fixture(scope="module")
def aborting_library(tmp_path_factory):
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("needs a C++ compiler to build the aborting library")
    d = tmp_path_factory.mktemp("pool")
    (d / "pool.cpp").write_text(POOL)
    lib = d / "libpool.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-pthread", "-o", str(lib),
                    str(d / "pool.cpp")], check=True, capture_output=True, timeout=120)
    return lib


def test_a_native_teardown_that_aborts_does_not_end_the_command(aborting_library, tmp_path):
    load = f"import ctypes, sys; ctypes.CDLL({str(aborting_library)!r}); "
    plain = _python(load + "print('done'); sys.exit(0)", tmp_path)
    assert plain.returncode == -6 and "terminate called without an active exception" in \
        plain.stderr                          # the failure mode, on an ordinary exit
    r = _python(load + "sys.argv = ['rwtool', 'inspect', sys.argv[1]]; "
                "from rwtool.cli import run; run()", tmp_path, MOONS)
    assert r.returncode == 0, r.stderr
    assert "suggested target: 'label'" in r.stdout and "terminate" not in r.stderr
    r = _python(load + "sys.argv = ['rwtool', 'info', 'absent.rwm']; "
                "from rwtool.cli import run; run()", tmp_path)
    assert r.returncode == 1 and r.stderr.startswith("rwtool: error: absent.rwm: file not found")


def test_the_status_the_output_and_python_exit_handlers_are_kept(tmp_path):
    """exit_process runs Python's atexit handlers and flushes a large buffered stdout (a
    predictions CSV of every row) before it ends the process."""
    model = tmp_path / "m.rwm"
    r = subprocess.run([sys.executable, "-m", "rwtool", "train", MOONS, "--target", "label",
                        "-T", "20", "--no-bounds", "-q", "--out", model], capture_output=True,
                       text=True, env=ENV, cwd=tmp_path, timeout=300)
    assert r.returncode == 0 and model.exists(), r.stderr
    r = _python("import atexit, sys; atexit.register(print, 'bye', file=sys.stderr); "
                "sys.argv = ['rwtool', 'predict', sys.argv[1], sys.argv[2]]; "
                "from rwtool.cli import run; run()", tmp_path, model, MOONS)
    rows = len(MOONS.read_text().splitlines()) - 1
    assert r.returncode == 0 and r.stderr == "bye\n"
    assert r.stdout.splitlines()[0] == "row,prediction" and len(r.stdout.splitlines()) == rows + 1
    r = subprocess.run([sys.executable, "-m", "rwtool", "--version"], capture_output=True,
                       text=True, env=ENV, cwd=tmp_path, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("rwtool ")
    r = subprocess.run([sys.executable, "-m", "rwtool", "train", MOONS], capture_output=True,
                       text=True, env=ENV, cwd=tmp_path, timeout=300)
    assert r.returncode == 2 and "--target" in r.stderr          # usage error


def test_many_runs_all_end_with_their_status(tmp_path):
    """The command 6 times (pyarrow's threaded reader, numba's kernels and OpenBLAS all
    loaded and used): every run exits 0 with its whole output. The abort came about once in
    800 runs, so no affordable count can prove its absence (60 runs, 70 s of CPU, would catch
    it 7% of the time; 6 runs under 1%): the test above shows the mechanism deterministically,
    and this one that the exit path it installed ends ordinary runs with their status."""
    for _ in range(6):
        r = subprocess.run([sys.executable, "-m", "rwtool", "inspect", MOONS], env=ENV,
                           capture_output=True, text=True, cwd=tmp_path, timeout=300)
        assert r.returncode == 0 and "suggested target" in r.stdout, r.stderr
