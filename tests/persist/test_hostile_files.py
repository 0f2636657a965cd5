"""Hostile model files (issue 16, points 1-4): memory, special files, zip failures, fields.

Each case is a file the bad-input campaign found, built by hand (zipfile/json/hashlib with every
checksum recomputed, so only rwtool's own checks stand in the way). Cases that could exhaust
the machine or block on the old code run in a child process capped with RLIMIT_AS and a
timeout (tests.helpers.fuzz_models.run_probe), which reports the traced peak memory of the load.
"""

import contextlib
import io
import json
import os
import struct
import zipfile
from types import SimpleNamespace

import numpy as np
import pytest

import rwtool.persist as P
from tests.helpers.fuzz_models import Zeros, make_bases, members, rebuild, run_probe
from rwtool.cli import main
from rwtool.estimators import RKSClassifier, RWClassifier

MB = 1 << 20


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 5))
    return X, np.where(X[:, 0] > 0, "a", "b")


@pytest.fixture(scope="module")
def model_file(tmp_path_factory, data):
    X, y = data
    path = tmp_path_factory.mktemp("hostile") / "base.rwm"
    P.save(RWClassifier(instantiation="rwstumps", n_features=6, random_state=0).fit(X, y), path)
    return path


def doc_of(path):
    parts = members(open(path, "rb").read())
    return parts, json.loads(parts["model.json"])


def fitted(doc, *names):
    node = doc["estimator"]
    for n in names:
        node = node["fitted"]["items"][n]
    return node


def refused(path, *fragments, **kw):
    with pytest.raises(P.ModelFileError) as e:
        P.read_model(path, **kw)
    msg = str(e.value)
    assert "\n" not in msg and os.path.basename(str(path)) in msg
    for f in fragments:
        assert f in msg, msg
    return msg


def cli(*args):
    """``rwtool ARGS`` in this process: (returncode, stdout, stderr) as attributes."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


# ----------------------------------------------------------------------------- 1. memory

@pytest.mark.slow
def test_huge_scaler_refused_before_a_byte_is_decompressed(tmp_path, model_file):
    """The campaign's case: a 5-entry scaler replaced, checksums recomputed, by deflated data
    declaring 256 MB at a ratio of ~900:1 (under the old 1000:1 guard). The old loader
    decompressed it whole (and copied it) before any check; now its shape is compared with
    n_features_in_ first."""
    parts, doc = doc_of(model_file)
    key = fitted(doc, "x_scaler_")["mean"]["id"]
    z = Zeros("<f8", (32 * MB,), mark_every=16384)
    parts[f"arrays/{key}.npy"] = z
    doc["arrays"][key].update(shape=[32 * MB])
    bomb = rebuild(tmp_path / "bomb.rwm", parts, doc, deflate=(f"arrays/{key}.npy",))
    assert os.path.getsize(bomb) < 2 * MB
    (r,) = run_probe([bomb], model_file, limit_mb=1024)
    assert r["outcome"] == "refused", r
    assert "x_scaler_.mean has shape (33554432,)" in r["detail"] and "(5,)" in r["detail"]
    assert r["peak"] < 20 * MB, r


def test_consistent_but_compressed_array_refused_by_its_ratio(tmp_path, model_file):
    """Shapes made to agree with the parameters (n_features raised to match) but the data is a
    deflated run of zeros: no rwtool array compresses 1000:1, so it is refused unread."""
    parts, doc = doc_of(model_file)
    n = MB
    fmap = fitted(doc, "feature_map_")
    bombs = []
    for node, dtype, shape in ((fmap["fitted"]["items"]["idx_"], "<i8", (n,)),
                               (fmap["fitted"]["items"]["thr_"], "<f8", (n,)),
                               (fitted(doc, "coef_"), "<f8", (n, 1))):
        key = node["id"]
        parts[f"arrays/{key}.npy"] = Zeros(dtype, shape)
        doc["arrays"][key].update(dtype=dtype, shape=list(shape))
        bombs.append(f"arrays/{key}.npy")
    fmap["params"]["items"]["n_features"] = n
    msg = refused(rebuild(tmp_path / "r.rwm", parts, doc, deflate=bombs), "fold")
    assert "zip bomb" in msg


def test_member_size_must_match_its_declared_shape(tmp_path, model_file):
    parts, doc = doc_of(model_file)
    key = fitted(doc, "coef_")["id"]
    raw = parts[f"arrays/{key}.npy"]
    parts[f"arrays/{key}.npy"] = raw + bytes(800)          # trailing data after the array
    refused(rebuild(tmp_path / "t.rwm", parts, doc), "bytes for")


def test_the_limit_caps_the_total_and_can_be_raised(tmp_path, data):
    X, y = data
    est = RKSClassifier(base="fourier", n_features=400, random_state=0).fit(X, y)
    path = P.save(est, tmp_path / "m.rwm")
    mf = P.read_model(path)
    need = mf.info["load_bytes"]
    arrays = 8 * (400 * 5 + 400 + 400 + 5 + 5)
    assert arrays <= need < arrays + 64 * 1024
    refused(path, "max_bytes=10000", "raise the limit", max_bytes=10_000)
    assert P.read_model(path, max_bytes=need).estimator.n_features_in_ == 5
    r = cli("info", path, "--max-model-mb", "0.01")
    assert r.returncode == 1 and "max_bytes" in r.stderr and "internal error" not in r.stderr
    assert cli("info", path, "--max-model-mb", "64").returncode == 0


def test_value_heavy_documents_refused(tmp_path, model_file):
    parts, doc = doc_of(model_file)
    doc["notes"] = [[]] * 2_000_000                # 6 MB of JSON, ~130 MB once parsed
    refused(rebuild(tmp_path / "v.rwm", parts, doc), "values, more than any model needs")


@pytest.mark.parametrize("key,value", [("notes", [1, 2]), ("created", 5),
                                       ("feature_names", [1, "a"]), ("classes", {"a": 1}),
                                       ("rwtool_version", {"$": "object"})])
def test_descriptive_fields_must_have_their_type(tmp_path, model_file, key, value):
    """info and the app show these fields: a file cannot make them crash."""
    parts, doc = doc_of(model_file)
    doc[key] = value
    p = rebuild(tmp_path / "h.rwm", parts, doc)
    refused(p, key)
    r = cli("info", p)
    assert r.returncode == 1 and key in r.stderr


def test_every_array_of_every_saved_class_is_in_the_table(tmp_path):
    """A row of persist_validate.SPECS covers every class rwtool saves and every array
    attribute it writes (a new large attribute needs a row: this test names it)."""
    import rwtool.persist._validate as V
    for path in make_bases(tmp_path):
        parts, doc = doc_of(path)
        plan = V.plan_load(doc, doc["arrays"], lambda n: P._lookup(n, path))
        unlisted = [w for w, spec in plan.arrays.values() if spec is None]
        assert not unlisted, f"{os.path.basename(path)}: no table row for {unlisted}"
    for name, cls in P.registered_classes().items():
        assert V.has_spec(cls), f"{name} has no row in persist_validate.SPECS"


# ----------------------------------------------------------------------------- 2. special files

@pytest.mark.slow
def test_special_files_refused_without_reading(tmp_path, model_file):
    fifo = tmp_path / "pipe.rwm"
    os.mkfifo(fifo)
    link = tmp_path / "zero.rwm"
    link.symlink_to("/dev/zero")
    results = run_probe(["/dev/zero", str(fifo), str(link), "/dev/urandom"], model_file,
                        limit_mb=512, timeout=10)
    for r in results:
        assert r["outcome"] == "refused", r
        assert r["peak"] < MB, r
    assert "a device" in results[0]["detail"] and "a FIFO" in results[1]["detail"]
    refused(tmp_path, "is a directory")
    r = cli("info", fifo)
    assert r.returncode == 1 and "FIFO" in r.stderr


# ----------------------------------------------------------------------------- 3. zip failures

def _central(raw: bytes, name: bytes) -> int:
    at = raw.find(b"PK\x01\x02")
    while at >= 0:
        n = struct.unpack("<H", raw[at + 28:at + 30])[0]
        if raw[at + 46:at + 46 + n] == name:
            return at
        at = raw.find(b"PK\x01\x02", at + 4)
    raise AssertionError(name)


@pytest.mark.parametrize("offset,size,value,member,fragment", [
    (6, 2, 99, b"model.json", "not a valid rwtool model file"),     # version needed 9.9
    (6, 2, 99, b"arrays/a0.npy", "not a valid rwtool model file"),
    (8, 2, 1, b"arrays/a1.npy", "encrypted"),
    (10, 2, 12, b"arrays/a1.npy", "compression method 12"),          # bzip2
    (10, 2, 14, b"model.json", "compression method 14"),             # lzma
    (10, 2, 99, b"arrays/a0.npy", "compression method 99"),
    (16, 4, 12345, b"arrays/a1.npy", "CRC"),                         # bad CRC-32
    (42, 4, 10**9, b"arrays/a1.npy", "past the end"),                # local header offset
    (20, 4, 10**9, b"arrays/a1.npy", ""),                            # compressed size
])
def test_every_zip_failure_is_a_model_file_error(tmp_path, model_file, offset, size, value,
                                                 member, fragment):
    raw = bytearray(model_file.read_bytes())
    at = _central(bytes(raw), member) + offset
    raw[at:at + size] = value.to_bytes(size, "little")
    p = tmp_path / "z.rwm"
    p.write_bytes(bytes(raw))
    refused(p, fragment)
    r = cli("info", p)
    assert r.returncode == 1 and "internal error" not in r.stderr, r.stderr


def test_corrupt_deflate_stream_is_a_model_file_error(tmp_path, model_file):
    raw = bytearray(model_file.read_bytes())
    with zipfile.ZipFile(model_file) as zf:
        info = zf.getinfo("model.json")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    for i in range(start + 5, start + 15):
        raw[i] ^= 0xA5
    p = tmp_path / "c.rwm"
    p.write_bytes(bytes(raw))
    refused(p)


def test_oversized_zip_directory_refused(tmp_path, model_file):
    parts, doc = doc_of(model_file)
    with zipfile.ZipFile(tmp_path / "many.rwm", "w") as zf:
        for n, b in parts.items():
            zf.writestr(n, b)
        for i in range(6000):
            zf.writestr(f"pad/{i}", b"")
    refused(tmp_path / "many.rwm", "zip directory")


# ----------------------------------------------------------------------------- 4. fields

@pytest.mark.parametrize("value", ["auto", 1e21, 10**21, 0, -3, True, None, [5]])
def test_n_features_in_must_be_a_real_width(tmp_path, model_file, value):
    parts, doc = doc_of(model_file)
    fitted(doc)["fitted"]["items"]["n_features_in_"] = value
    p = rebuild(tmp_path / "n.rwm", parts, doc)
    refused(p, "n_features_in_")
    r = cli("info", p)
    assert r.returncode == 1 and "n_features_in_" in r.stderr


@pytest.mark.parametrize("field,value,fragment", [
    ("gamma_", -1.0, "gamma_"), ("gamma_", {"$": "float", "v": "nan"}, "gamma_"),
    ("fitted_", "yes", "fitted_"), ("n_features_in_", 4, "feature map takes"),
])
def test_fitted_scalars_of_the_map_validated(tmp_path, model_file, field, value, fragment):
    parts, doc = doc_of(model_file)
    fitted(doc, "feature_map_")["fitted"]["items"][field] = value
    refused(rebuild(tmp_path / "f.rwm", parts, doc), fragment)


def test_greedy_reg_validated(tmp_path, data):
    """GreedyMK records the reg it used (chosen by reg="auto" or typed): a negative one is not
    a model this code could have fitted."""
    from rwtool import GreedyMKRegressor
    X, y = data
    path = tmp_path / "g.rwm"
    P.save(GreedyMKRegressor(n_features=4, reg=1e-3, random_state=0).fit(X, X[:, 0] ** 2),
           path)
    assert P.load(path).reg_ == 1e-3
    parts, doc = doc_of(path)
    fitted(doc)["fitted"]["items"]["reg_"] = -1.0
    refused(rebuild(tmp_path / "g2.rwm", parts, doc), "reg_")


def test_parameters_are_validated_as_fit_would(tmp_path, model_file):
    parts, doc = doc_of(model_file)
    doc["estimator"]["params"]["items"]["standardize"] = "no"
    doc["estimator"]["params"]["items"]["sigma"] = -1.0
    refused(rebuild(tmp_path / "p.rwm", parts, doc), "invalid parameter")


def test_info_refuses_what_load_refuses(tmp_path, model_file):
    """rwtool info exited 0 on an inconsistent model (stump variables out of range) and showed
    an internal AttributeError when params was not a JSON object."""
    parts, doc = doc_of(model_file)
    key = fitted(doc, "feature_map_")["fitted"]["items"]["idx_"]["id"]
    buf = io.BytesIO()
    np.save(buf, np.full(6, 10**6, dtype=np.int64), allow_pickle=False)
    parts[f"arrays/{key}.npy"] = buf.getvalue()
    bad = rebuild(tmp_path / "idx.rwm", parts, doc)
    refused(bad, "out of range")
    r = cli("info", bad)
    assert r.returncode == 1 and "out of range" in r.stderr
    r = cli("info", bad, "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["ok"] is False

    parts, doc = doc_of(model_file)
    doc["estimator"]["params"] = [1, 2]
    bad = rebuild(tmp_path / "params.rwm", parts, doc)
    r = cli("info", bad)
    assert r.returncode == 1 and "mappings" in r.stderr and "internal error" not in r.stderr


def test_taylor_dictionary_must_be_the_one_its_parameters_define(tmp_path):
    from rwtool.estimators import GreedyMKClassifier
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    est = GreedyMKClassifier(n_features=3, sigma=1.0, random_state=0).fit(X, X[:, 0] > 0)
    path = P.save(est, tmp_path / "g.rwm")
    parts, doc = doc_of(path)
    key = fitted(doc, "feature_map_")["fitted"]["items"]["vars_"]["id"]
    vars_ = P.load(path).feature_map_.vars_.copy()
    vars_[-1, 0] = 10**6                               # an index the kernel would not check
    buf = io.BytesIO()
    np.save(buf, vars_, allow_pickle=False)
    parts[f"arrays/{key}.npy"] = buf.getvalue()
    refused(rebuild(tmp_path / "t.rwm", parts, doc), "vars_")


@pytest.mark.parametrize("which", ["W_", "draws_"])
def test_monte_carlo_stump_indices_checked(tmp_path, which):
    """The stump base reads column w[0] of x unchecked: centres and draws must hold indices."""
    from rwtool.estimators import RWRegressor
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    est = RWRegressor(instantiation="mc:stumps:indicator-gaussian:stump:400", n_features=5,
                      gamma=10.0, random_state=0).fit(X, X[:, 0])
    path = P.save(est, tmp_path / "mc.rwm")
    parts, doc = doc_of(path)
    fmap = fitted(doc, "feature_map_")["fitted"]["items"]
    node = fmap["W_"] if which == "W_" else fmap["mc_"]["fitted"]["items"]["draws_"]
    arr = (P.load(path).feature_map_.W_ if which == "W_"
           else P.load(path).feature_map_.mc_.draws_).copy()
    arr[-1, 0] = 10.0 ** 6
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    parts[f"arrays/{node['id']}.npy"] = buf.getvalue()
    refused(rebuild(tmp_path / "bad.rwm", parts, doc), "column index")


# ----------------------------------------------------------------------------- text (issue 27)

@pytest.fixture(scope="module")
def csv_model(tmp_path_factory):
    """A model saved with its preprocessing record (a numeric and a categorical column) and the
    CSV it applies to."""
    from rwtool.data import read_csv
    d = tmp_path_factory.mktemp("text")
    rng = np.random.default_rng(0)
    csv = d / "d.csv"
    csv.write_text("u,k,label\n" + "".join(
        f"{a:.4f},{'abc'[i % 3]},{'pn'[int(a > 0)]}\n"
        for i, a in enumerate(rng.standard_normal(60))))
    ds = read_csv(csv, target="label")
    est = RKSClassifier(base="sign", n_features=5, random_state=0).fit(ds.X, ds.y)
    return P.save(est, d / "m.rwm", preprocessing=ds), csv


def _set(doc, where, value):
    node = doc
    for k in where[:-1]:
        node = node[k]
    node[where[-1]] = value


@pytest.mark.parametrize("where,value,fragment", [
    (("preprocessing", "na_values", 0), "\ud800",
     "the document's preprocessing.na_values[0] holds text that is not valid Unicode "
     "(character 0, '\\ud800', is a lone surrogate)"),
    (("preprocessing", "columns", 1, "categories", 0), "b\udfff",
     "preprocessing.columns[1].categories[0] holds text that is not valid Unicode (character 1"),
    (("feature_names", 0), "u\ud83d", "feature_names[0] holds text that is not valid"),
    (("notes",), "n" * (1 << 16) + "!", "notes holds 65537 characters of text; rwtool "
                                     "writes at most 65536"),
    (("metrics", "items", "bad\ud800key"), 1.0, "metrics.items['bad\\ud800key']"),
])
def test_text_no_writer_can_take_is_refused_at_load(tmp_path, csv_model, where, value,
                                                    fragment):
    """A preprocessing record whose na_values held a lone surrogate ("\\ud800", valid JSON)
    loaded, then crashed with UnicodeEncodeError when applied to a CSV. Every string of the
    document is checked at load -- encodable, bounded -- and refused naming the field, by
    load, info and predict alike."""
    path, csv = csv_model
    parts, doc = doc_of(path)
    _set(doc, where, value)
    bad = rebuild(tmp_path / "t.rwm", parts, doc)
    msg = refused(bad, fragment)
    for args in (("info", bad), ("info", bad, "--json"), ("predict", bad, csv)):
        r = cli(*args)
        assert r.returncode == 1 and msg in r.stderr, (args, r.stderr)
        assert "internal error" not in r.stderr


def test_text_arrays_are_checked_when_saved_and_loaded(tmp_path, data):
    """Class labels saved as a fixed-width text array: a lone surrogate in them is refused by
    save (nothing load would refuse is written) and by load (a file built by hand)."""
    X, y = data
    est = RWClassifier(n_features=6, random_state=0).fit(X, np.where(y == "a", "a", "\ud800"))
    with pytest.raises(P.ModelFileError, match=r"cannot save: .*classes_'\] holds text that is "
                                               r"not valid Unicode \(code point 0xd800\)"):
        P.save(est, tmp_path / "s.rwm")
    assert not list(tmp_path.iterdir())               # nothing written, no temporary left
    good = P.save(RWClassifier(n_features=6, random_state=0).fit(X, y), tmp_path / "g.rwm")
    parts, doc = doc_of(good)
    key = doc["estimator"]["fitted"]["items"]["classes_"]["id"]
    buf = io.BytesIO()
    np.save(buf, np.array(["a", "\ud800"]), allow_pickle=False)
    parts[f"arrays/{key}.npy"] = buf.getvalue()
    doc["arrays"][key].update(dtype="<U1", shape=[2])
    refused(rebuild(tmp_path / "u.rwm", parts, doc), "not valid Unicode (code point 0xd800)")
