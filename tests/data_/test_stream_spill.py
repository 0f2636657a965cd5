"""The streaming reader's spill file (issue 26, target 2, files past the in-memory budget).

``scan_csv`` writes the typed blocks past ``keep_bytes`` to a temporary file in ``spill_dir``
and ``iter_csv(path, scan)`` reads them back instead of tokenising the file again. The oracle
is the second read itself, ``iter_csv(path, scan.preprocessing, dialect=scan.dialect)``: both
in this process, so the chunks must agree bit for bit (X, y, rows, notes) or raise the same
located error, on numeric, text-category, missing-value, mean-imputed, Excel-error,
decimal-comma and wide files with ``keep_bytes=1`` (every block spilled). The spill file must be
gone after ``close``, a ``with`` block, the scan's collection, an error or an interrupt in
either pass, and the interpreter's exit; on POSIX it has no name from its creation on, so a
process killed with SIGKILL leaves nothing in the folder (a named file, Windows' way, run here
too, is left behind: the test can fail); one descriptor holds it between passes (none for a
named file); a disk without room, a failing write and a changed, removed or cut-short file
fall back to reading the file again, as the docstrings say.
"""

import errno
import os
import signal
import subprocess
import sys

import warnings

import numpy as np
import pytest

import rwtool.data as D
from rwtool.data import _spill
from rwtool.data import _stream as S

from .test_office_csv import CASES as OFFICE
from .test_stream_kept import HOSTILE, _both, _chunks, _mixed, _same, _stacked_equals_read_csv


_PROC = os.path.isdir("/proc/self/fd")
_DELETED = " (deleted)"


def _handles(folder, pid="self"):
    """What the process ``pid`` holds open in ``folder`` (/proc/PID/fd's links; a file without
    its name ends in " (deleted)")."""
    fds, inside = f"/proc/{pid}/fd", os.path.realpath(folder) + os.sep
    out = []
    for f in os.listdir(fds):
        try:
            link = os.readlink(os.path.join(fds, f))
        except OSError:                 # closed meanwhile (listdir's own descriptor)
            continue
        if link.startswith(inside):
            out.append(link)
    return sorted(out)


def _spill_files(folder):
    """The spill files in ``folder``: by name, and those this process holds after their name
    went (POSIX: all of them)."""
    named = [f for f in os.listdir(folder) if f.endswith(".spill")]
    held = ([os.path.basename(h[:-len(_DELETED)]) for h in _handles(folder)
             if h.endswith(".spill" + _DELETED)] if _PROC else [])
    return sorted(named + held)


def _spilled(path, options, folder, block_bytes=None):
    """Scan with every block spilled to ``folder``; served and read again must agree."""
    scan, out = _both(path, {**options, "keep_bytes": 1, "spill_dir": folder}, block_bytes)
    if scan is not None:
        assert scan.spill_bytes > 0 and not scan._kept.in_memory()
        assert _spill_files(folder) or not _PROC
        scan.close()
    assert not os.listdir(folder) and not _spill_files(folder)
    return scan, out


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "spill"
    d.mkdir()
    return d


@pytest.fixture(params=["nameless", "named"])
def named(request, monkeypatch):
    """Whether the spill keeps its name: POSIX's nameless file, and the named file of
    Windows (where an open file cannot be removed) run here too."""
    if request.param == "nameless" and not _spill._UNLINK:
        pytest.skip("an open file keeps its name here")
    monkeypatch.setattr(_spill, "_UNLINK", request.param == "nameless")
    return request.param == "named"


def _numeric(path, n, k, rng):
    X = rng.standard_normal((n, k))
    X[rng.random((n, k)) < 0.05] *= 1e12            # large and small magnitudes
    X[rng.random((n, k)) < 0.05] *= 1e-12
    with open(path, "w") as fh:
        fh.write(",".join(f"c{j}" for j in range(k)) + "\n")
        np.savetxt(fh, X, delimiter=",", fmt="%.17g")
    return path


@pytest.mark.parametrize("name,extra", HOSTILE, ids=[h[0] for h in HOSTILE])
@pytest.mark.parametrize("missing", ["error", "impute-mean", "impute-most-frequent",
                                     "drop-rows"])
def test_spilled_blocks_are_the_second_read(tmp_path, folder, name, extra, missing):
    p = _mixed(tmp_path / "m.csv", 1000, np.random.default_rng(3), extra)
    options = {"target": "y", "missing": missing}
    scan, out = _spilled(p, options, folder, block_bytes=997)
    if out[0] == "ok":
        assert len(out[1]) > 10
        _stacked_equals_read_csv(p, options, out)


def test_numeric_file_spilled(tmp_path, folder, named):
    p = _numeric(tmp_path / "n.csv", 3000, 4, np.random.default_rng(1))
    for options in ({}, {"target": "c3", "task": "regression"}):
        scan, out = _spilled(p, options, folder, block_bytes=4096)
        assert out[0] == "ok" and len(out[1]) > 10
        _stacked_equals_read_csv(p, options, out)


def test_wide_file_spilled(tmp_path, folder):
    """Past 1,024 columns the records are split by rwtool's own splitter."""
    rng = np.random.default_rng(2)
    p = _numeric(tmp_path / "w.csv", 40, 1500, rng)
    text = p.read_text().splitlines()
    text[7] = "#N/A," + text[7].split(",", 1)[1]                    # an Excel error value
    text[9] = ",".join([""] + text[9].split(",")[1:])               # a missing cell
    p.write_text("\n".join(text) + "\n")
    for missing in ("impute-mean", "impute-most-frequent", "error"):
        options = {"target": -1, "task": "regression", "missing": missing}
        scan, out = _spilled(p, options, folder, block_bytes=20000)
        if missing != "error":
            assert out[0] == "ok" and len(out[1]) > 3
            _stacked_equals_read_csv(p, options, out)
        else:
            assert out[0] == "error" and out[1] is D.MissingValueError


@pytest.mark.parametrize("name,data,expect", OFFICE, ids=[c[0] for c in OFFICE])
def test_office_cases_spilled(tmp_path, folder, name, data, expect):
    """Excel error values, decimal commas, currency signs, legacy encodings."""
    p = tmp_path / "case.csv"
    p.write_bytes(data)
    for options in ({"target": "y"}, {"target": "y", "missing": "impute-most-frequent"}):
        _spilled(p, options, folder, block_bytes=64)


def test_samples_spilled(folder):
    for s in D.list_samples():
        options = {"target": s["target"], **s["options"]}
        scan, out = _spilled(s["path"], options, folder, block_bytes=4096)
        assert out[0] == "ok"
        _stacked_equals_read_csv(s["path"], options, out)


def _narrowing(path, n, rng):
    """Columns the spill writes narrower or not: whole numbers (int8 on disk) with -0.0,
    int8's, int16's and int32's bounds and one past them in some blocks, fractions and missing cells in others;
    300 categories (2-byte codes) beside 3 (1-byte); blank lines and quoted line breaks in
    some blocks (their file lines written, the others' counted up from the first)."""
    lines = ["w,edge,frac,many,few,y"]
    for i in range(n):
        w = str(int(rng.integers(-50, 50)))
        if i % 97 == 3:
            w = "-0"                       # parsed as -0.0: must come back as -0.0
        edge = str(int(rng.integers(0, 9)))
        if 400 <= i < 500:
            edge = ["2147483647", "-2147483648", "5"][i % 3]
        if i in (1150, 1350, 1450):         # one past a type, alone in its block
            edge = {1150: "-129", 1350: "128", 1450: "32768"}[i]
        if 300 <= i < 400:
            edge = ["127", "-128", "128", "-129", "32767", "-32768", "32768", "-32769"][
                (i // 10) % 8] if i % 10 == 0 else edge
        if 600 <= i < 700 and i % 5 == 0:
            edge = ["2147483648", "-2147483649", "1e90"][i % 3]
        frac = f"{rng.standard_normal():.5g}" if i >= 800 else str(i % 13)
        if 200 <= i < 300 and i % 7 == 0:
            frac = ""                      # missing: NaN, stays float64
        many = f"t{int(rng.integers(0, 300))}"
        few = ["a", "b", "c"][i % 3]
        y = f'"{few}\n{few}"' if 1000 <= i < 1100 and i % 10 == 0 else few
        lines.append(f"{w},{edge},{frac},{many},{few},{y}")
        if 1200 <= i < 1300 and i % 9 == 0:
            lines.append("")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("missing", ["error", "impute-most-frequent", "impute-mean"])
def test_narrowed_spill_is_the_second_read(tmp_path, folder, missing, named):
    # the spill writes whole numbers as int8/16/32, codes as int8/int16 and consecutive file
    # lines as their first: served chunks equal a real second read bit for bit (-0.0 too)
    p = _narrowing(tmp_path / "n.csv", 1500, np.random.default_rng(5))
    options = {"target": "y", "missing": missing, "max_categories": 400}
    scan, out = _spilled(p, options, folder, block_bytes=2048)
    if missing == "error":
        assert out[0] == "error" and out[1] is D.MissingValueError
        return
    assert out[0] == "ok" and len(out[1]) > 10
    X = np.vstack([c[0] for c in out[1]])
    assert np.signbit(X[:, 0][X[:, 0] == 0]).any()          # -0.0 kept as written
    _stacked_equals_read_csv(p, options, out)


def test_narrow_rows_and_codes_round_trip(tmp_path, named):
    # the oracle: the narrowest of int8, int16, int32 such that the row written as it and
    # widened gives the same bytes (0: none), which narrow_rows must say exactly
    rows = [[1.0, -7, 3e5], [1, -0.0, 2], [1, np.nan, 2], [2**31 - 1, -2**31, 0],
            [2**31, 0, 0], [0.5, 1, 2], [1, np.inf, 2], [-1, -2**31 - 1, 3], [0, 0, 0],
            [-128, 127, 0], [-129, 0, 0], [128, 1, 1], [-32768, 32767, 5], [32768, 0, 0],
            [-32769, 1, 1], [127.5, 0, 0]]
    V = np.array(rows)

    def oracle(r):
        for t in (np.int8, np.int16, np.int32):
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if r.astype(t).astype(np.float64).tobytes() == r.tobytes():
                    return np.dtype(t).itemsize
        return 0
    got = _spill.narrow_rows(V)
    np.testing.assert_array_equal(got, [oracle(r) for r in V])
    # from what block_stats knows of a row (int32 holds it, its range): the same
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok = np.array([r.astype(np.int32).astype(np.float64).tobytes() == r.tobytes()
                       for r in V])
    lo = np.where(ok, np.nanmin(V, axis=1), np.nan)
    hi = np.where(ok, np.nanmax(V, axis=1), -7.0)
    np.testing.assert_array_equal(_spill.int_bytes(ok, lo, hi), got)
    assert [_spill.int_type(b) for b in got[[0, 1, 8, 10, 3]]] == [
        np.dtype(np.int32), None, np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32)]
    assert [str(_spill.narrowest_int(np.array(a, np.int32))) for a in
            ([-2, 127], [-2, 128], [-32768, 32767], [0, 2**31 - 1], [])] == \
        ["int8", "int16", "int16", "int32", "int32"]
    # bounds the values may reach (a column's interned texts so far): the type they need
    assert str(_spill.narrowest_int(np.array([0, 1], np.int32), (-2, 200))) == "int16"
    assert str(_spill.narrowest_int(np.array([0, 1], np.int32), (-2, 127))) == "int8"
    sp = _spill.SpillFile(str(tmp_path))
    assert (sp.path is not None) is named and os.listdir(tmp_path) == (
        [os.path.basename(sp.path)] if named else [])
    codes = np.array([-2, -1, 0, 299], np.int32)
    sp.write(V[:1], np.int32)
    sp.write(codes, _spill.narrowest_int(codes))
    sp.write(V[1:3])
    sp.finish()
    assert sp.nbytes == 12 + 8 + 48
    with sp.reader() as r:
        a = r.read((1, 3), np.float64, np.int32)
        b = r.read(4, np.int32, np.int16)
        c = r.read((2, 3), np.float64)
    assert a.tobytes() == V[:1].tobytes() and b.tobytes() == codes.tobytes()
    assert c.tobytes() == V[1:3].tobytes()
    with sp.reader() as r:                  # read twice, as written
        r.read((1, 3), np.float64, np.int32)
        with sp.reader() as r2:             # two readings at once: each its own position
            assert r2.read((1, 3), np.float64, np.int32).tobytes() == V[:1].tobytes()
        assert r.read(4, np.int32, np.int16).tobytes() == codes.tobytes()
        assert r.read((2, 3), np.float64).tobytes() == V[1:3].tobytes()
        with pytest.raises(_spill.SpillError, match="ends early"):
            r.read(1, np.int8)
    sp.close()
    assert not os.listdir(tmp_path)
    with pytest.raises(_spill.SpillError, match="was removed"):
        with sp.reader():
            pass


def test_the_spill_file_goes_with_close_and_the_with_block(tmp_path, folder, named):
    p = _mixed(tmp_path / "m.csv", 2000, np.random.default_rng(4))
    scan = D.scan_csv(p, "y", missing="impute-mean", block_bytes=2048, keep_bytes=1,
                      spill_dir=folder)
    assert len(_spill_files(folder)) == 1 and scan.spill_bytes > 0
    ref = _chunks(p, scan, True, block_bytes=2048)
    scan.close()
    assert not _spill_files(folder) and scan.spill_bytes == 0
    _same(_chunks(p, scan, True, block_bytes=2048), ref)      # read again after the close
    scan.close()                                              # twice: nothing
    with D.scan_csv(p, "y", missing="impute-mean", block_bytes=2048, keep_bytes=1,
                      spill_dir=folder) as scan:
        assert len(_spill_files(folder)) == 1
    assert not _spill_files(folder)


@pytest.mark.skipif(not _PROC, reason="needs /proc/self/fd")
def test_the_handles_between_passes_and_after_a_broken_loop(tmp_path, folder, named):
    """Between passes a nameless spill is held by its one descriptor and a named one by none;
    a reading holds one more while it runs, let go with the loop."""
    p = _mixed(tmp_path / "m.csv", 2000, np.random.default_rng(4))
    scan = D.scan_csv(p, "y", missing="impute-mean", moments=False, block_bytes=2048,
                      keep_bytes=1, spill_dir=folder)
    between = _handles(folder)
    assert len(_spill_files(folder)) == 1 and len(between) == (0 if named else 1)
    assert named or between[0].endswith(".spill" + _DELETED)
    it = D.iter_csv(p, scan, block_bytes=2048)
    next(it)
    assert len(_handles(folder)) == len(between) + 1           # the reading's own
    it.close()
    assert _handles(folder) == between and len(_spill_files(folder)) == 1
    for _ in D.iter_csv(p, scan, block_bytes=2048):
        break
    assert _handles(folder) == between
    scan.close()
    assert not _handles(folder) and not os.listdir(folder)


@pytest.mark.parametrize("keep_bytes", [1, 1 << 30], ids=["spilled", "in-memory"])
def test_closing_the_scan_mid_iteration_finishes_the_reading(tmp_path, folder, named,
                                                             keep_bytes):
    """scan.close() between two chunks lets go of the blocks for later readings; the reading
    under way still yields every chunk, the same as a reading left alone, and the spill file
    goes when it ends."""
    p = _mixed(tmp_path / "m.csv", 2000, np.random.default_rng(4))
    options = dict(missing="impute-mean", moments=False, block_bytes=2048,
                   keep_bytes=keep_bytes, spill_dir=folder)
    ref = _chunks(p, D.scan_csv(p, "y", **options), True, block_bytes=2048)
    assert ref[0] == "ok" and len(ref[1]) > 5
    scan = D.scan_csv(p, "y", **options)
    assert bool(_spill_files(folder)) == (keep_bytes == 1)
    got = []
    for i, c in enumerate(D.iter_csv(p, scan, dialect=scan.dialect, block_bytes=2048)):
        got.append((c.X, c.y, c.rows, [str(n) for n in c.notes], c.feature_names))
        if i == 2:
            scan.close()
            assert scan.spill_bytes == 0 and not os.listdir(folder)
    _same(("ok", got), ref)
    assert not _spill_files(folder)
    _same(_chunks(p, scan, True, block_bytes=2048), ref)      # and a later one reads again


class _Boom(Exception):
    pass


def test_the_spill_file_goes_with_an_error_mid_iteration(tmp_path, folder, named):
    """A loop over the chunks that raises drops the scan with it: the file goes at once
    (no collection of reference cycles waited for)."""
    p = _mixed(tmp_path / "m.csv", 2000, np.random.default_rng(4))

    def train():
        scan = D.scan_csv(p, "y", missing="impute-mean", moments=False, block_bytes=2048,
                          keep_bytes=1, spill_dir=folder)
        assert _spill_files(folder)
        for i, chunk in enumerate(D.iter_csv(p, scan, block_bytes=2048)):
            if i == 3:
                raise _Boom

    with pytest.raises(_Boom):
        train()
    assert not _spill_files(folder)


def test_the_spill_file_goes_with_the_scan(tmp_path, folder, named):
    p = _mixed(tmp_path / "m.csv", 2000, np.random.default_rng(4))
    scan = D.scan_csv(p, "y", missing="impute-mean", block_bytes=2048, keep_bytes=1,
                      spill_dir=folder)
    assert _spill_files(folder)
    del scan
    assert not _spill_files(folder)


def test_the_spill_file_goes_when_pass_one_fails(tmp_path, folder, monkeypatch, named):
    # a located error after many blocks were spilled: a ragged row near the end
    p = _mixed(tmp_path / "m.csv", 2000, np.random.default_rng(4), ((1990, "1,2,3"),))
    with pytest.raises(D.RaggedRowError):
        D.scan_csv(p, "y", missing="impute-mean", block_bytes=2048, keep_bytes=1,
                      spill_dir=folder)
    assert not _spill_files(folder)
    # after pass one, before pass two: the record's own error (a missing target)
    q = _mixed(tmp_path / "q.csv", 2000, np.random.default_rng(4), ((1990, "9,0.5,red,1,"),))
    with pytest.raises(D.MissingValueError):
        D.scan_csv(q, "y", block_bytes=2048, keep_bytes=1, spill_dir=folder)
    assert not _spill_files(folder)
    # interrupted while writing
    write, calls = _spill.SpillFile.write, []

    def interrupted(self, a, stored=None):
        calls.append(1)
        if len(calls) == 40:
            raise KeyboardInterrupt
        write(self, a, stored)

    monkeypatch.setattr(_spill.SpillFile, "write", interrupted)
    p2 = _mixed(tmp_path / "m2.csv", 2000, np.random.default_rng(4))
    with pytest.raises(KeyboardInterrupt):
        D.scan_csv(p2, "y", missing="impute-mean", block_bytes=2048, keep_bytes=1,
                   spill_dir=folder)
    assert len(calls) >= 40 and not _spill_files(folder)


def _child(p, folder, named, then):
    """Python code: scan ``p`` spilling to ``folder`` (a named file when ``named``), say so,
    then ``then``."""
    return (f"import os, sys, rwtool.data as D\n"
            f"from rwtool.data import _spill\n"
            f"_spill._UNLINK = {not named}\n"
            f"scan = D.scan_csv({str(p)!r}, 'y', missing='impute-mean', keep_bytes=1, "
            f"spill_dir={str(folder)!r})\n"
            f"assert bool(os.listdir({str(folder)!r})) is {named}\n"
            f"print('spilled', scan.spill_bytes, flush=True)\n" + then)


def test_the_spill_file_goes_at_exit(tmp_path, folder, named):
    p = _mixed(tmp_path / "m.csv", 2000, np.random.default_rng(4))
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    r = subprocess.run([sys.executable, "-c", _child(p, folder, named, "")],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0 and "spilled" in r.stdout, r.stderr[-2000:]
    assert not os.listdir(folder)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_killed_process_leaves_no_spill_file(tmp_path, folder, named):
    """SIGKILL runs no finaliser: the nameless spill goes with the process's descriptors; a
    named file (Windows' way) stays behind, which the test must see."""
    p = _mixed(tmp_path / "m.csv", 2000, np.random.default_rng(4))
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    child = subprocess.Popen([sys.executable, "-c",
                              _child(p, folder, named, "sys.stdin.read()\n")],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = child.stdout.readline()
        assert line.startswith("spilled") and int(line.split()[1]) > 0, child.stderr.read()
        if _PROC:
            held = _handles(folder, child.pid)
            assert [h.endswith(".spill" + _DELETED) for h in held] == ([] if named else [True])
        child.kill()
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=600)
    assert child.returncode == -signal.SIGKILL
    left = os.listdir(folder)
    assert ([f.startswith("rwtool-scan-") and f.endswith(".spill") for f in left]
            == ([True] if named else []))


def test_no_room_on_the_disk_reads_the_file_again(tmp_path, folder, monkeypatch):
    p = _mixed(tmp_path / "m.csv", 2000, np.random.default_rng(5))
    options = {"target": "y", "missing": "impute-mean"}
    ref = _both(p, {**options, "keep_bytes": 1, "spill_dir": False}, 2048)[1]
    total = S.shutil.disk_usage

    class Usage:
        free = 50_000        # less than twice the file's typed blocks (about 100 kB)

    monkeypatch.setattr(S.shutil, "disk_usage", lambda folder: Usage)
    scan, out = _both(p, {**options, "keep_bytes": 1, "spill_dir": folder}, 2048)
    assert scan.spill_bytes == 0 and not scan._kept.blocks and not os.listdir(folder)
    assert any("were not written to" in n and "spill_dir" in n for n in scan.notes)
    _same(out, ref)
    monkeypatch.setattr(S.shutil, "disk_usage", total)

    # the disk fills up while pass one writes: the same, the part written removed
    write, calls = _spill.SpillFile.write, []

    def full(self, a, stored=None):
        calls.append(1)
        if len(calls) > 30:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        write(self, a, stored)

    monkeypatch.setattr(_spill.SpillFile, "write", full)
    scan, out = _both(p, {**options, "keep_bytes": 1, "spill_dir": folder}, 2048)
    assert len(calls) > 30 and scan.spill_bytes == 0 and not os.listdir(folder)
    assert any(os.strerror(errno.ENOSPC) in n for n in scan.notes)
    _same(out, ref)
    # a folder that does not exist
    scan, out = _both(p, {**options, "keep_bytes": 1, "spill_dir": tmp_path / "nowhere"},
                      2048)
    assert scan.spill_bytes == 0 and any("nowhere" in n for n in scan.notes)
    _same(out, ref)


def test_a_file_changed_or_a_spill_removed_between_passes(tmp_path, folder, named):
    """Pass two serves the spill only for the unchanged file; a changed file, or a spill file
    removed or cut short by someone else, is read again (the record's outcome, here a located
    error)."""
    p = _mixed(tmp_path / "m.csv", 1000, np.random.default_rng(6))
    scan = D.scan_csv(p, "y", moments=False, block_bytes=1024, keep_bytes=1, spill_dir=folder)
    assert scan._kept.serves(S.open_source(p), scan.dialect, 1024)
    text = p.read_text().replace("red", "rod")          # same size, new contents
    p.write_text(text)
    os.utime(p, ns=(1, 1))
    assert not scan._kept.serves(S.open_source(p), scan.dialect, 1024)
    out = _chunks(p, scan, True, block_bytes=1024)
    assert out[0] == "error" and out[1] is D.UnseenCategoryError
    _same(out, _chunks(p, scan, False, block_bytes=1024))
    scan.close()

    q = _mixed(tmp_path / "q.csv", 1000, np.random.default_rng(6))
    scan = D.scan_csv(q, "y", moments=False, block_bytes=1024, keep_bytes=1, spill_dir=folder)
    if named:
        for f in _spill_files(folder):
            os.remove(folder / f)
        assert not scan._kept.serves(S.open_source(q), scan.dialect, 1024)
        _same(_chunks(q, scan, True, block_bytes=1024),
              _chunks(q, scan, False, block_bytes=1024))
        scan.close()
        scan = D.scan_csv(q, "y", moments=False, block_bytes=1024, keep_bytes=1,
                          spill_dir=folder)
    sp = scan._kept.spill
    assert scan._kept.serves(S.open_source(q), scan.dialect, 1024)
    # cut short (a nameless file by its descriptor: no one else can reach it by name)
    if named:
        os.truncate(sp.path, sp.nbytes - 1)
    else:
        os.ftruncate(sp._fd, sp.nbytes - 1)
    assert not scan._kept.serves(S.open_source(q), scan.dialect, 1024)
    _same(_chunks(q, scan, True, block_bytes=1024), _chunks(q, scan, False, block_bytes=1024))
    with pytest.raises(_spill.SpillError, match="ends early") as err:
        with sp.reader() as r:
            r.read(sp.nbytes, np.int8)
    # the message names the file, else its folder
    assert (sp.path if named else f"in {folder} (nameless") in str(err.value)
    scan.close()
    assert not os.listdir(folder) and not _spill_files(folder)


def test_a_read_given_the_record_lets_go_of_the_blocks_in_memory(tmp_path, folder):
    p = _mixed(tmp_path / "m.csv", 1000, np.random.default_rng(7))
    q = _mixed(tmp_path / "q.csv", 1000, np.random.default_rng(8))
    scan = D.scan_csv(p, "y", missing="drop-rows", moments=False, block_bytes=1024)
    assert scan._kept.in_memory()
    list(D.iter_csv(q, scan.preprocessing, dialect=scan.dialect, block_bytes=1024))
    assert scan._kept.in_memory()                       # another file: kept
    list(D.iter_csv(p, scan.preprocessing, dialect=scan.dialect, block_bytes=1024))
    assert not scan._kept.blocks                        # this file, read again: let go
    # a spill costs no memory: kept for a later pass given the scan
    scan = D.scan_csv(p, "y", missing="drop-rows", moments=False, block_bytes=1024,
                      keep_bytes=1, spill_dir=folder)
    list(D.iter_csv(p, scan.preprocessing, dialect=scan.dialect, block_bytes=1024))
    assert scan.spill_bytes and scan._kept.serves(S.open_source(p), scan.dialect, 1024)


def test_train_streams_from_the_spill(tmp_path, folder, monkeypatch, named):
    """``rwtool train`` on a big file (train_csv): pass one's spill serves its passes (the
    file is tokenised once), the model is the one a second read gives, the file goes after."""
    from rwtool import RWClassifier
    from rwtool.scale import train_csv

    p = _mixed(tmp_path / "m.csv", 3000, np.random.default_rng(9))
    reads, readings = [], []
    blocks, reader = S.iter_blocks, _spill.SpillFile.reader

    def counted(*a, **k):
        reads.append(1)
        return blocks(*a, **k)

    def counted_reader(self):
        readings.append(1)
        return reader(self)

    monkeypatch.setattr(S, "iter_blocks", counted)
    monkeypatch.setattr(_spill.SpillFile, "reader", counted_reader)

    def fit(**options):
        reads.clear()
        readings.clear()
        est = RWClassifier(n_features=20, random_state=0)
        run = train_csv(p, "y", est, block_bytes=4096, ignore=["id"], missing="impute-mean",
                        **options)
        return run, len(reads), len(readings)

    spilled, n_reads, n_readings = fit(keep_bytes=1, spill_dir=folder)
    assert n_reads == 1 and n_readings >= 2 and not os.listdir(folder)
    assert not _spill_files(folder)
    again, n_reads, n_readings = fit(keep_bytes=1, spill_dir=False)
    assert n_reads >= 3 and n_readings == 0
    a, b = spilled.estimator, again.estimator
    assert a.coef_.tobytes() == b.coef_.tobytes()
    timing = {"fit_time_s"}
    assert ({k: v for k, v in spilled.metrics.items() if k not in timing}
            == {k: v for k, v in again.metrics.items() if k not in timing})
