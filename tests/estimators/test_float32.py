"""dtype="float32": features and each block's products in float32, sums and solve in float64.

Oracles: the dense float64 products Phi^T Phi, Phi^T Y of numpy; the float64 model of the same
draw, within the tolerance docs/SOLVERS.md states (FLOAT32_RTOL below); the old accumulation
loop, bit for bit, for a fixed block (same process); partial_fit, Dask and a saved file give
the model fit gives.
"""

import hashlib
import json
import zipfile

import numpy as np
import pytest

import rwtool as rw
from rwtool.exceptions import InvalidParameterError, ModelFileError
from rwtool.features import RWRelu, RWSign
from rwtool.features._base import BLOCK_ROWS, auto_block_size
from rwtool.solvers._ridge import normal_equations
from rwtool.solvers._rank_update import mirror_lower, rank_update

#: the tolerance docs/SOLVERS.md states for a float32 model: its decision values within 1e-3 of
#: the float64 model's, relative (2-norm over the rows), when reg >= 1e-6 on standardised
#: inputs. The float32 rounding (unit 6e-8) of the features and of each block's sums perturbs
#: the normal equations by about 1e-7 relative; the solution moves by that times the condition
#: number of A + m reg G + m eps I, which reg >= 1e-6 keeps below about 1e3-1e4 on these
#: problems (measured: at most 3e-5 on the five benchmark sets, docs/bench/float32.md).
FLOAT32_RTOL = 1e-3
ESTIMATORS = [(rw.RWClassifier, {}), (rw.RWRegressor, {"instantiation": "rwrelu"}),
              (rw.RKSClassifier, {}), (rw.RKSRegressor, {"base": "fourier"})]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1500, 6))
    f = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2]
    y = f + 0.1 * rng.standard_normal(len(X))
    return X, y, (f > 0).astype(int)


def _target(cls, data):
    X, y, labels = data
    return labels if cls._estimator_type == "classifier" else y


def _rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def _decision(est, X):
    return est.decision_function(X) if est._estimator_type == "classifier" else est.predict(X)


def test_float32_sums_against_the_dense_float64_products(data):
    """Each block's products in float32, the sums float64: within float32 rounding of the dense
    float64 products (norm-wise 1e-6: the features' and a block's rounding are a few units of
    6e-8 each), and really float32 (not equal to the float64 sums)."""
    X, y, _ = data
    m64 = RWSign(n_features=200, sigma=0.7, random_state=1).fit(X)
    m32 = RWSign(n_features=200, sigma=0.7, random_state=1, dtype="float32").fit(X)
    Y = np.column_stack([y, -y])
    Phi = m64.transform(X)
    assert m32.transform(X).dtype == np.float32 and Phi.dtype == np.float64
    A, B = normal_equations(m32, X, Y, block_size=256)
    assert A.dtype == B.dtype == np.float64
    A_ref, B_ref = Phi.T @ Phi, Phi.T @ Y
    assert 0 < _rel(A, A_ref) < 1e-6 and 0 < _rel(B, B_ref) < 1e-6
    np.testing.assert_array_equal(A, A.T)


def test_fixed_block_gives_the_old_sums_bit_for_bit(data):
    """For a given block_size the float64 accumulation is the loop of rank-k updates over the
    blocks' features (same process, bit for bit), and the dense products to a sum's rounding."""
    X, y, _ = data
    fmap = RWRelu(n_features=150, random_state=2).fit(X)
    Y = y[:, None]
    A, B = normal_equations(fmap, X, Y, block_size=100)
    A_old, B_old = np.zeros((150, 150)), np.zeros((150, 1))
    lower = False
    for start in range(0, len(X), 100):
        Phi = fmap.transform(X[start:start + 100])
        lower |= rank_update(A_old, Phi)
        B_old += Phi.T @ Y[start:start + 100]
    if lower:
        mirror_lower(A_old)
    np.testing.assert_array_equal(A, A_old)
    np.testing.assert_array_equal(B, B_old)
    Phi = fmap.transform(X)
    assert _rel(A, Phi.T @ Phi) < 1e-13


def test_block_rows_by_bytes_and_rows():
    """32 MB of features, and at least BLOCK_ROWS rows (the BLAS rate of the rank-k update);
    float32 fits twice the rows in the bytes."""
    assert BLOCK_ROWS == 2048
    assert auto_block_size(10**6, 100) == 40000
    assert auto_block_size(10**6, 100, 4) == 80000
    assert auto_block_size(10**6, 8000) == 2048          # 32 MB would be 500 rows
    assert auto_block_size(10**6, 3000, 4) == 2666
    assert auto_block_size(700, 8000) == 700
    fmap = RWSign(n_features=8000, random_state=0).fit(np.zeros((1, 3)))
    assert [stop - start for start, stop, _ in fmap.blocks(np.zeros((5000, 3)))] == [2048,
                                                                                     2048, 904]


@pytest.mark.parametrize("cls,kw", ESTIMATORS)
@pytest.mark.parametrize("reg", [1e-3, 1e-6])
def test_float32_model_within_the_stated_tolerance(data, cls, kw, reg):
    """The stated tolerance holds from reg = 1e-6 up (below it, float32 rounding of the sums
    outweighs m reg G: docs/SOLVERS.md)."""
    X, _, _ = data
    y = _target(cls, data)
    a = cls(n_features=200, reg=reg, random_state=5, **kw).fit(X, y)
    b = cls(n_features=200, reg=reg, random_state=5, dtype="float32", **kw).fit(X, y)
    assert b.feature_map_.dtype == "float32" and b.coef_.dtype == np.float64
    assert _rel(_decision(b, X), _decision(a, X)) < FLOAT32_RTOL
    if cls._estimator_type == "classifier":
        assert np.mean(b.predict(X) != a.predict(X)) < 0.005


@pytest.mark.parametrize("cls,kw", ESTIMATORS)
def test_fit_partial_fit_and_save_load_agree_in_float32(tmp_path, data, cls, kw):
    """One chunk: the sums of fit, bit for bit (same blocks, same process); several chunks: the
    blocks differ, so the float32 rounding does, within float32 rounding of the sums. A saved
    float32 model predicts what it predicted."""
    X, _, _ = data
    y = _target(cls, data)
    params = dict(n_features=200, reg=1e-4, random_state=7, standardize=False, dtype="float32",
                  **kw)
    full = cls(**params).fit(X, y)
    first = {"classes": np.unique(y)} if cls._estimator_type == "classifier" else {}
    one = cls(**params).partial_fit(X, y, **first)
    np.testing.assert_array_equal(one.predict(X), full.predict(X))
    np.testing.assert_array_equal(_decision(one, X), _decision(full, X))
    many = cls(**params)
    for k, (i, j) in enumerate([(0, 400), (400, 401), (401, 1500)]):
        many.partial_fit(X[i:j], y[i:j], **(first if k == 0 else {}))
    assert many.feature_map_.dtype == "float32"
    assert _rel(_decision(many, X), _decision(full, X)) < 1e-4
    path = tmp_path / "m.rwm"
    rw.save(full, path)
    loaded = rw.load(path)
    assert loaded.dtype == loaded.feature_map_.dtype == "float32"
    np.testing.assert_array_equal(_decision(loaded, X), _decision(full, X))
    np.testing.assert_array_equal(loaded.predict(X), full.predict(X))


def test_dask_fit_honours_dtype(data):
    da = pytest.importorskip("dask.array")
    X, y, _ = data
    params = dict(n_features=150, reg=1e-4, random_state=4, dtype="float32")
    full = rw.RWRegressor(**params).fit(X, y)
    dist = rw.RWRegressor(**params).fit(da.from_array(X, chunks=500), da.from_array(y, chunks=500))
    assert dist.feature_map_.dtype == "float32"
    assert _rel(dist.predict(X), full.predict(X)) < 1e-4


def _without_dtype(path, out):
    """The file as rwtool wrote it before dtype existed: no dtype among any object's params."""
    with zipfile.ZipFile(path) as zf:
        parts = {n: zf.read(n) for n in zf.namelist()}
    doc = json.loads(parts["model.json"])
    removed = 0

    def walk(node):
        nonlocal removed
        if isinstance(node, dict):
            items = node.get("params", {}).get("items") if node.get("$") == "object" else None
            if isinstance(items, dict) and "dtype" in items:
                del items["dtype"]
                removed += 1
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(doc)
    return doc, parts, removed


def _write(out, parts, doc):
    parts = dict(parts)
    parts["model.json"] = json.dumps(doc).encode()
    parts["model.json.sha256"] = hashlib.sha256(parts["model.json"]).hexdigest().encode()
    with zipfile.ZipFile(out, "w") as zf:
        for n, b in parts.items():
            zf.writestr(n, b)
    return out


def test_model_files_record_the_dtype(tmp_path, data):
    """Old files (no dtype) load as float64; a dtype no fit accepts is refused."""
    X, y, _ = data
    est = rw.RWRegressor(n_features=20, reg=1e-3, random_state=0).fit(X, y)
    path = tmp_path / "m.rwm"
    rw.save(est, path)
    doc, parts, removed = _without_dtype(path, tmp_path)
    assert removed == 2                       # the estimator's and its map's
    old = rw.load(_write(tmp_path / "old.rwm", parts, doc))
    assert old.dtype == old.feature_map_.dtype == "float64"
    np.testing.assert_array_equal(old.predict(X), est.predict(X))
    doc = json.loads(parts["model.json"])
    doc["estimator"]["params"]["items"]["dtype"] = "float16"
    with pytest.raises(ModelFileError, match="invalid parameter.*dtype"):
        rw.load(_write(tmp_path / "bad.rwm", parts, doc))


def test_dtype_errors_name_the_fix(data):
    X, y, _ = data
    with pytest.raises(InvalidParameterError, match="dtype must be one of 'float64' or "
                                                    "'float32'"):
        rw.RWRegressor(dtype="float16").fit(X, y)
    with pytest.raises(ValueError, match="solver='sfgd' computes in float64.*solver='lstsq'"):
        rw.RWRegressor(solver="sfgd", reg=1e-4, dtype="float32").fit(X, y)
    assert rw.RKSRegressor._parameters["dtype"].only == ("solver", ("ridge",))


def test_predict_unchanged_against_the_dense_product(data):
    """predict is Phi(X) a, whatever the blocks: the dense float64 product to rounding."""
    X, y, _ = data
    est = rw.RWRegressor(n_features=300, reg=1e-4, random_state=0).fit(X, y)
    Phi = est.feature_map_.transform(est._prepare_X(X))
    ref = (Phi @ est.coef_)[:, 0] * est.y_scaler_.scale[0] + est.y_scaler_.mean[0]
    np.testing.assert_allclose(est.predict(X), ref, rtol=1e-12, atol=1e-12)
