"""rwtool.persist: round trips, integrity checks, refusal of foreign or hostile files (the
fuzzer is tests/persist/test_fuzz.py, the issue-16 cases tests/persist/test_hostile_files.py).

Oracles: the in-memory estimator before saving (predictions must be bit-identical after
reloading) and files built by hand with zipfile/json/hashlib to hold each defect.
"""

import hashlib
import io
import json
import os
import struct
import zipfile

import numpy as np
import pytest

import rwtool
import rwtool.data as D
import rwtool.persist as P
from rwtool.estimators import RKSClassifier, RKSRegressor, RWClassifier, RWRegressor


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((90, 3))
    y2 = np.where(X[:, 0] + X[:, 1] ** 2 > 0.5, "yes", "no")
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    yr = np.sin(X[:, 0]) + X[:, 2]
    return X, y2, y3, yr


def roundtrip(est, path):
    P.save(est, path)
    return P.load(path)


def assert_same(est, est2, X):
    assert type(est2) is type(est)
    assert est2.get_params() == est.get_params()
    np.testing.assert_array_equal(est2.predict(X), est.predict(X))
    if hasattr(est, "decision_function"):
        np.testing.assert_array_equal(est2.decision_function(X), est.decision_function(X))
    if hasattr(est, "classes_"):
        np.testing.assert_array_equal(est2.classes_, est.classes_)
        assert est2.classes_.dtype == est.classes_.dtype


@pytest.mark.parametrize("inst", ["rwsign", "rwexpsign", "rwrelu", "rwexprelu", "rwstumps"])
def test_rw_roundtrip(tmp_path, data, inst):
    X, y2, y3, yr = data
    clf = RWClassifier(instantiation=inst, n_features=25, random_state=1).fit(X, y2)
    assert_same(clf, roundtrip(clf, tmp_path / "c.rwm"), X)
    reg = RWRegressor(instantiation=inst, n_features=25, standardize=False,
                      random_state=2).fit(X, yr)
    assert_same(reg, roundtrip(reg, tmp_path / "r.rwm"), X)


@pytest.mark.parametrize("base", ["sign", "relu", "stumps", "fourier"])
def test_rks_roundtrip_multiclass_and_regression(tmp_path, data, base):
    X, y2, y3, yr = data
    clf = RKSClassifier(base=base, n_features=20, random_state=3).fit(X, y3)
    assert_same(clf, roundtrip(clf, tmp_path / "c.rwm"), X)
    reg = RKSRegressor(base=base, n_features=20, random_state=np.random.default_rng(4))
    reg.fit(X, np.c_[yr, -yr])
    reg2 = roundtrip(reg, tmp_path / "r.rwm")
    assert reg2.random_state is None                 # a Generator is not part of the model
    np.testing.assert_array_equal(reg2.predict(X), reg.predict(X))


@pytest.mark.parametrize("module,cls,kwargs,kind", [
    ("rwtool.estimators._rfsgd", "RFSGDClassifier", {"n_features": 20}, "clf"),
    ("rwtool.estimators._greedy_mk", "GreedyMKClassifier", {"n_features": 8}, "clf"),
    ("rwtool.estimators._greedy_mk", "GreedyMKRegressor", {"n_features": 8}, "reg"),
    ("rwtool.estimators._bkernn", "BKerNNClassifier", {"n_particles": 4}, "clf"),
    ("rwtool.estimators._bkernn", "BKerNNRegressor", {"n_particles": 4}, "reg")])
def test_other_estimators_roundtrip(tmp_path, data, module, cls, kwargs, kind):
    mod = pytest.importorskip(module)
    if not hasattr(mod, cls):
        pytest.skip(f"{cls} not in {module}")
    X, y2, y3, yr = data
    est = getattr(mod, cls)(random_state=0, **kwargs).fit(X, y2 if kind == "clf" else yr)
    assert_same(est, roundtrip(est, tmp_path / "m.rwm"), X)


def test_preprocessing_and_metrics_travel_with_the_model(tmp_path):
    rng = np.random.default_rng(0)
    rows = [[f"{rng.normal():.5f}", rng.choice(["a", "b", "c"]), "" if i % 9 == 0 else
             f"{rng.normal():.5f}", "pos" if rng.uniform() < 0.5 else "neg"] for i in range(60)]
    csv_path = tmp_path / "d.csv"
    csv_path.write_text("u,k,v,label\n" + "\n".join(",".join(r) for r in rows) + "\n")
    ds = D.read_csv(csv_path, target="label", missing="impute-mean")
    clf = RWClassifier(instantiation="rwrelu", n_features=30, random_state=0).fit(ds.X, ds.y)
    path = P.save(clf, tmp_path / "m.rwm", preprocessing=ds, metrics={"train_error": 0.25,
                                                                       "odd": float("inf")})
    mf = P.read_model(path)
    assert mf.preprocessing == ds.preprocessing
    assert mf.metrics == {"train_error": 0.25, "odd": float("inf")}
    again = mf.apply_csv(csv_path)
    np.testing.assert_array_equal(mf.estimator.predict(again.X), clf.predict(ds.X))
    info = P.read_info(path)
    assert info["estimator_class"].endswith("RWClassifier") and info["classes"] == ["neg", "pos"]
    assert info["feature_names"] == ds.feature_names and info["params"]["n_features"] == 30
    assert info["format_version"] == P.FORMAT_VERSION
    assert info["rwtool_version"] == rwtool.__version__
    with pytest.raises(P.ModelFileError, match=f"makes {ds.n_features} columns"):
        P.save(RWClassifier(n_features=5).fit(ds.X[:, :2], ds.y), tmp_path / "x.rwm",
               preprocessing=ds)


# ----------------------------------------------------------------------------- hand-made defects

@pytest.fixture(scope="module")
def model_file(tmp_path_factory, data):
    X, y2, y3, yr = data
    path = tmp_path_factory.mktemp("m") / "base.rwm"
    P.save(RKSClassifier(base="stumps", n_features=6, random_state=0).fit(X, y3), path)
    return path


def members(path):
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def build(path, parts, doc=None, fix_doc_sum=True, fix_arrays=True):
    """Write ``parts`` (name -> bytes) as a zip; optionally recompute every checksum."""
    parts = dict(parts)
    if doc is None:
        doc = json.loads(parts["model.json"])
    if fix_arrays:
        for key, meta in doc.get("arrays", {}).items():
            name = f"arrays/{key}.npy"
            if name in parts and isinstance(meta, dict):
                meta["sha256"] = hashlib.sha256(parts[name]).hexdigest()
    parts["model.json"] = json.dumps(doc).encode()
    if fix_doc_sum:
        parts["model.json.sha256"] = hashlib.sha256(parts["model.json"]).hexdigest().encode()
    with zipfile.ZipFile(path, "w") as zf:
        for n, b in parts.items():
            zf.writestr(n, b)
    return path


def refused(path, match=None):
    with pytest.raises(P.ModelFileError) as e:
        P.load(path)
    msg = str(e.value)
    assert "\n" not in msg and os.path.basename(str(path)) in msg
    if match:
        assert match in msg, msg
    return msg


def test_checksums_detect_modification(tmp_path, model_file):
    parts = members(model_file)
    doc = json.loads(parts["model.json"])
    key = next(iter(doc["arrays"]))
    name = f"arrays/{key}.npy"
    b = bytearray(parts[name])
    b[-1] ^= 0x40
    refused(build(tmp_path / "a.rwm", dict(parts, **{name: bytes(b)}), fix_arrays=False),
            "checksum mismatch")
    doc["estimator"]["params"]["items"]["reg"] = 0.5
    refused(build(tmp_path / "b.rwm", parts, doc=doc, fix_doc_sum=False), "checksum mismatch")


def test_newer_format_version_refused(tmp_path, model_file):
    parts = members(model_file)
    doc = json.loads(parts["model.json"])
    doc["format_version"] = P.FORMAT_VERSION + 1
    refused(build(tmp_path / "v.rwm", parts, doc=doc), "upgrade rwtool")


def test_truncated_files_refused(tmp_path, model_file):
    raw = model_file.read_bytes()
    for cut in (0, 10, len(raw) // 3, len(raw) // 2, len(raw) - 30, len(raw) - 1):
        p = tmp_path / f"t{cut}.rwm"
        p.write_bytes(raw[:cut])
        refused(p)


def test_foreign_files_refused(tmp_path):
    txt = tmp_path / "a.rwm"
    txt.write_text("x,y\n1,2\n")
    refused(txt, "not an rwtool model file")
    npz = tmp_path / "b.npz"
    np.savez(npz, a=np.arange(3))
    refused(npz, "not an rwtool model file")
    with zipfile.ZipFile(tmp_path / "c.rwm", "w") as zf:
        zf.writestr("model.json", json.dumps({"format": "other"}))
        zf.writestr("model.json.sha256", hashlib.sha256(
            json.dumps({"format": "other"}).encode()).hexdigest())
    refused(tmp_path / "c.rwm", "not an rwtool model file")
    refused(tmp_path / "missing.rwm", "not found")


def test_class_outside_allow_list_refused(tmp_path, model_file):
    parts = members(model_file)
    for name in ("os.system", "builtins.eval", "subprocess.Popen", "rwtool.cli.CLIError",
                 "numpy.ndarray", "rwtool.features._base.FeatureMap"):
        doc = json.loads(parts["model.json"])
        doc["estimator"]["class"] = name
        refused(build(tmp_path / "x.rwm", parts, doc=doc), "refusing")


@pytest.mark.parametrize("attr", ["__class__", "__dict__", "predict", "n_features_out_",
                                  "_c", "reg"])
def test_attribute_injection_refused(tmp_path, model_file, attr):
    parts = members(model_file)
    doc = json.loads(parts["model.json"])
    doc["estimator"]["fitted"]["items"][attr] = 1
    refused(build(tmp_path / "i.rwm", parts, doc=doc))


def test_pickled_object_array_never_unpickled(tmp_path, model_file):
    """An object-dtype .npy whose data is a pickle stream calling open(marker, "w") (protocol 0
    opcodes written by hand): loading refuses it at the header and the payload never runs."""
    marker = tmp_path / "pwned"
    header = "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }"
    header += " " * (-(10 + len(header) + 1) % 64) + "\n"
    payload = b"cbuiltins\nopen\n(S'" + str(marker).encode() + b"'\nS'w'\ntR."
    npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload
    parts = members(model_file)
    doc = json.loads(parts["model.json"])
    key = next(iter(doc["arrays"]))
    doc["arrays"][key].update(dtype="|O", shape=[2])
    refused(build(tmp_path / "p.rwm", dict(parts, **{f"arrays/{key}.npy": npy}), doc=doc),
            "object arrays are refused")
    assert not marker.exists()


def test_inconsistent_state_refused(tmp_path, model_file):
    parts = members(model_file)
    doc = json.loads(parts["model.json"])
    fmap = doc["estimator"]["fitted"]["items"]["feature_map_"]
    idx_key = fmap["fitted"]["items"]["idx_"]["id"]
    bad = np.full(6, 10**6, dtype=np.int64)          # stump variables out of range
    buf = io.BytesIO()
    np.save(buf, bad, allow_pickle=False)
    refused(build(tmp_path / "s.rwm", dict(parts, **{f"arrays/{idx_key}.npy": buf.getvalue()}),
                  doc=doc), "out of range")
    coef_key = doc["estimator"]["fitted"]["items"]["coef_"]["id"]
    buf = io.BytesIO()
    np.save(buf, np.zeros((5, 3)), allow_pickle=False)
    doc2 = json.loads(parts["model.json"])
    doc2["arrays"][coef_key].update(shape=[5, 3])
    refused(build(tmp_path / "c.rwm", dict(parts, **{f"arrays/{coef_key}.npy": buf.getvalue()}),
                  doc=doc2), "coef_")


# ----------------------------------------------------------------------------- writing

def test_save_refuses_unfitted_and_foreign_objects(tmp_path):
    with pytest.raises(P.ModelFileError, match="not fitted"):
        P.save(RWClassifier(), tmp_path / "u.rwm")
    with pytest.raises(P.ModelFileError, match="only rwtool estimators"):
        P.save(object(), tmp_path / "o.rwm")
    assert not list(tmp_path.iterdir())


def test_atomic_write_keeps_old_file_on_failure(tmp_path, data):
    X, y2, y3, yr = data
    good = RWClassifier(n_features=10, random_state=0).fit(X, y2)
    path = tmp_path / "m.rwm"
    P.save(good, path)
    before = path.read_bytes()
    bad = RWClassifier(n_features=10, random_state=0).fit(X, y2)
    bad.callback_ = lambda: None                      # not serialisable: save must fail
    with pytest.raises(P.ModelFileError, match="callback_"):
        P.save(bad, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.rwm"]


def test_atomic_write_goes_through_a_temporary_file(tmp_path, data, monkeypatch):
    X, y2, y3, yr = data
    seen = []
    real = os.replace

    def spy(src, dst):
        seen.append((os.path.dirname(src), os.path.basename(src), zipfile.is_zipfile(src)))
        return real(src, dst)
    monkeypatch.setattr(os, "replace", spy)
    P.save(RWClassifier(n_features=5, random_state=0).fit(X, y2), tmp_path / "m.rwm")
    (d, name, complete), = seen
    assert d == str(tmp_path) and name.startswith(".m.rwm.") and complete


def test_registry_is_rwtool_only():
    names = P.registered_classes()
    assert "rwtool.estimators._random_features.RWClassifier" in names
    assert all(n.startswith("rwtool.") for n in names)
    with pytest.raises(TypeError):
        P.register(dict)


def test_model_files_naming_the_old_module_paths_load(tmp_path):
    """Files written before the modules moved into packages name their classes by the old paths
    (rwtool.estimators.random_features, rwtool.features.montecarlo, ...): they load as the same
    classes and predict as the model that was saved (same process: bit for bit)."""
    import hashlib
    import json
    import zipfile

    X = np.random.default_rng(0).normal(size=(60, 3))
    y = X[:, 0] - X[:, 1]
    inst = rwtool.Instantiation("normal", "gaussian", "relu", n_draws=64)
    est = rwtool.RWRegressor(instantiation=inst, n_features=12, reg=1e-3, random_state=0).fit(X, y)
    new = tmp_path / "new.rwm"
    rwtool.save(est, new)
    with zipfile.ZipFile(new) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    text = members["model.json"].decode()
    old_paths = {"rwtool.estimators._random_features.": "rwtool.estimators.random_features.",
                 "rwtool.features._rkhs_mc.": "rwtool.features.montecarlo.",
                 "rwtool.features._montecarlo.": "rwtool.features.montecarlo.",
                 "rwtool.features._instantiation.": "rwtool.instantiation."}
    renamed = 0
    for now, before in old_paths.items():
        renamed += text.count(now)
        text = text.replace(now, before)
    assert renamed >= 3     # the estimator, its map and the map's draws at least
    members["model.json"] = text.encode()
    members["model.json.sha256"] = (hashlib.sha256(text.encode()).hexdigest() + "\n").encode()
    old = tmp_path / "old.rwm"
    with zipfile.ZipFile(old, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    loaded = rwtool.load(old)
    assert type(loaded) is rwtool.RWRegressor
    assert type(loaded.feature_map_) is type(est.feature_map_)
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    assert json.loads(text)    # the rewritten document is the one that was loaded
