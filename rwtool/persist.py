"""Model files: ``save`` and ``load`` for every rwtool estimator (DESIGN.md section 4).

A model file (``.rwm``) is a zip archive holding

- ``model.json``: format name and version, rwtool/numpy/python versions, the estimator as a
  tagged JSON tree (class name from an allow-list, ``get_params()``, every public fitted
  attribute), the preprocessing record of the data (rwtool.data.Preprocessing), column names,
  class labels, metrics, and for each array its dtype, shape and SHA-256;
- ``model.json.sha256``: the SHA-256 of ``model.json``;
- ``arrays/aN.npy``: numeric (or fixed-width text) arrays, written and read without pickle.

Loading checks the format version, both checksums, each array's header against the recorded
dtype and shape, rebuilds only classes of the allow-list (rwtool's own estimators and feature
maps, found by walking rwtool's packages, never by a name taken from the file), sets only
attribute names that look like fitted attributes, then checks the rebuilt model's consistency
and runs one prediction. Anything else is refused with :class:`ModelFileError`. Files are
written atomically (temporary file in the same directory, fsync, rename).

This module must not use pickle, eval or imports driven by file content, and must not know any
particular estimator beyond the consistency checks registered for it.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import io
import json
import math
import os
import pkgutil
import platform
import re
import tempfile
import threading
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

import numpy as np

from ._base import BaseEstimator, Standardizer

__all__ = ["save", "load", "read_model", "read_info", "ModelFile", "ModelFileError",
           "register", "registered_classes", "atomic_writer", "FORMAT", "FORMAT_VERSION"]

FORMAT = "rwtool-model"
FORMAT_VERSION = 1
_DOC = "model.json"
_DOC_SUM = "model.json.sha256"
_ARRAY_NAME = re.compile(r"^a[0-9]{1,7}$")
_FITTED_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*_$")
_PARAM_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_MAX_DOC_BYTES = 64 << 20
_MAX_DEPTH = 64
_ARRAY_KINDS = "biufcUS"
#: packages walked for allow-listed classes, and single modules (imported when present)
_PACKAGES = ("rwtool.estimators", "rwtool.features")
_MODULES = ("rwtool.bkernn", "rwtool.instantiation")


class ModelFileError(ValueError):
    """A model file that cannot be written or read; ``file`` names it."""

    def __init__(self, message: str, file=None):
        self.file = None if file is None else os.fspath(file)
        self.message = message
        super().__init__(f"{os.path.basename(self.file)}: {message}" if self.file else message)


# ============================================================================ allow-list

_REGISTRY: dict[str, type] = {}
_CHECKS: dict[type, list[Callable[[Any], None]]] = {}
_SCANNED = False
_SCAN_LOCK = threading.Lock()     # the GUI loads and saves from a worker thread


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register(cls: type, check: Callable[[Any], None] | None = None) -> type:
    """Allow ``cls`` in model files (rwtool classes only); ``check(obj)`` validates a loaded
    instance and raises ValueError when its fitted state is inconsistent."""
    if not (isinstance(cls, type) and issubclass(cls, BaseEstimator)
            and cls.__module__.split(".")[0] == "rwtool"):
        raise TypeError(f"only rwtool estimator classes can be registered, got {cls!r}")
    _REGISTRY[_qualname(cls)] = cls
    if check is not None:
        _CHECKS.setdefault(cls, []).append(check)
    return cls


def _scan() -> None:
    global _SCANNED
    if _SCANNED:
        return
    with _SCAN_LOCK:
        if not _SCANNED:
            _scan_modules()
            _SCANNED = True


def _scan_modules() -> None:
    names = list(_MODULES)
    for pkg_name in _PACKAGES:
        pkg = importlib.import_module(pkg_name)
        names.append(pkg_name)
        names.extend(f"{pkg_name}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__))
    for name in names:
        try:
            mod = importlib.import_module(name)
        except Exception:  # a method whose module is absent or broken is simply not offered
            continue
        for _, obj in inspect.getmembers(mod, inspect.isclass):
            if (issubclass(obj, BaseEstimator) and obj.__module__ == mod.__name__
                    and not obj.__name__.startswith("_") and not _has_abstract(obj)):
                _REGISTRY.setdefault(_qualname(obj), obj)
    _register_default_checks()


def _has_abstract(cls: type) -> bool:
    # FeatureMap declares abstract hooks without ABCMeta: inspect.isabstract misses them.
    return inspect.isabstract(cls) or any(
        getattr(inspect.getattr_static(cls, n, None), "__isabstractmethod__", False)
        for n in dir(cls))


def registered_classes() -> dict[str, type]:
    """Qualified name -> class of everything a model file may contain."""
    _scan()
    return dict(_REGISTRY)


def _lookup(name, path) -> type:
    _scan()
    if not isinstance(name, str):
        raise ModelFileError("an object without a class name", path)
    cls = _REGISTRY.get(name)
    if cls is None:
        # A class moved between rwtool modules keeps its short name: accept a unique match.
        short = [c for q, c in _REGISTRY.items() if q.rsplit(".", 1)[-1] == name.rsplit(".", 1)[-1]]
        if len(short) == 1 and name.startswith("rwtool."):
            return short[0]
        raise ModelFileError(f"class {name!r} is not an rwtool model class; refusing to load "
                             f"it (a newer rwtool may know it)", path)
    return cls


def _is_allowed_instance(obj) -> bool:
    _scan()
    return _REGISTRY.get(_qualname(type(obj))) is type(obj)


# ============================================================================ consistency checks

def _feature_map_check(fmap) -> None:
    """Maps of rwtool.features: every centre array has one row per feature, indices in range."""
    n_in = getattr(fmap, "n_features_in_", None)
    if not isinstance(n_in, int) or n_in < 1:
        raise ValueError("feature map without a valid n_features_in_")
    T = fmap.n_features
    if not isinstance(T, int) or T < 1:
        raise ValueError("feature map without a valid n_features")
    for name, v in fmap.fitted_state().items():
        if not isinstance(v, np.ndarray):
            continue
        if v.ndim not in (1, 2) or v.shape[0] != T or (v.ndim == 2 and v.shape[1] != n_in):
            raise ValueError(f"{type(fmap).__name__}.{name} has shape {v.shape}, inconsistent "
                             f"with n_features={T}, n_features_in_={n_in}")
        if v.dtype.kind in "iu" and v.size and (v.min() < 0 or v.max() >= n_in):
            raise ValueError(f"{type(fmap).__name__}.{name} holds indices out of range")
        if v.dtype.kind == "f" and not np.isfinite(v).all():
            raise ValueError(f"{type(fmap).__name__}.{name} holds non-finite values")
        if v.dtype.kind not in "iuf":
            raise ValueError(f"{type(fmap).__name__}.{name} has dtype {v.dtype}")


def _random_feature_model_check(est) -> None:
    """RW/RKS estimators: coefficients, scaler and map agree on their dimensions."""
    n_in = est.n_features_in_
    fmap = est.feature_map_
    coef = est.coef_
    if not isinstance(n_in, int) or n_in < 1:
        raise ValueError("invalid n_features_in_")
    if not isinstance(coef, np.ndarray) or coef.ndim != 2 or coef.dtype.kind != "f":
        raise ValueError("coef_ must be a 2-D float array")
    if coef.shape[0] != fmap.n_output_:
        raise ValueError(f"coef_ has {coef.shape[0]} rows for {fmap.n_output_} features")
    if fmap.n_features_in_ != n_in + int(bool(est.bias_)):
        raise ValueError("the feature map's input width disagrees with n_features_in_")
    for name in ("x_scaler_", "y_scaler_"):
        sc = getattr(est, name, None)
        if sc is not None:
            width = n_in if name == "x_scaler_" else coef.shape[1]
            if sc.mean.shape != (width,) or sc.scale.shape != (width,):
                raise ValueError(f"{name} has the wrong width")
    if hasattr(est, "classes_"):
        k = len(est.classes_)
        if k < 2 or coef.shape[1] != (1 if k == 2 else k):
            raise ValueError("classes_ and coef_ disagree on the number of classes")


def _register_default_checks() -> None:
    from .features import fourier, kitchen, rkhs
    for mod in (rkhs, kitchen, fourier):
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if cls.__module__ == mod.__name__ and _qualname(cls) in _REGISTRY:
                _CHECKS.setdefault(cls, []).append(_feature_map_check)
    from .estimators import random_features
    for cls in (random_features.RWClassifier, random_features.RWRegressor,
                random_features.RKSClassifier, random_features.RKSRegressor):
        _CHECKS.setdefault(cls, []).append(_random_feature_model_check)


# ============================================================================ writing

class _HashWriter:
    """File-like wrapper hashing what goes through it (np.save writes in chunks)."""

    def __init__(self, fh):
        self.fh, self.h, self.n = fh, hashlib.sha256(), 0

    def write(self, data) -> int:
        data = bytes(data)
        self.h.update(data)
        self.n += len(data)
        return self.fh.write(data)

    def flush(self):
        pass


@contextmanager
def atomic_writer(path, mode: str = "wb", **open_kwargs):
    """Open a temporary file next to ``path``; on success fsync it and rename it over ``path``.

    Readers see the old file or the complete new one, never a partial file; on error the
    temporary file is removed and ``path`` is untouched.
    """
    path = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **open_kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        mode_bits = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o644
        os.chmod(tmp, mode_bits)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable (POSIX); harmless to skip where unsupported
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


class _Writer:
    def __init__(self, zf: zipfile.ZipFile):
        self.zf = zf
        self.arrays: dict[str, dict] = {}

    def array(self, arr: np.ndarray, where: str) -> dict:
        as_object = False
        if arr.dtype.hasobject:
            arr, as_object = _object_array(arr, where), True
        if arr.dtype.kind not in _ARRAY_KINDS or arr.dtype.fields is not None:
            raise ModelFileError(f"cannot save {where}: arrays of dtype {arr.dtype} are not "
                                 f"supported (numbers and text only)")
        arr = np.ascontiguousarray(arr)
        key = f"a{len(self.arrays)}"
        info = zipfile.ZipInfo(f"arrays/{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        with self.zf.open(info, "w", force_zip64=arr.nbytes > (1 << 30)) as raw:
            hw = _HashWriter(raw)
            np.lib.format.write_array(hw, arr, allow_pickle=False)
        self.arrays[key] = {"dtype": arr.dtype.str, "shape": list(arr.shape),
                            "sha256": hw.h.hexdigest(), "nbytes": hw.n, "object": as_object}
        return {"$": "array", "id": key}

    def value(self, v, where: str, depth: int = 0):
        if depth > _MAX_DEPTH:
            raise ModelFileError(f"cannot save {where}: nested too deeply")
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, np.bool_):
            return bool(v)
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, (float, np.floating)):
            f = float(v)
            return f if math.isfinite(f) else {"$": "float", "v": repr(f)}
        if isinstance(v, np.ndarray):
            return self.array(v, where)
        if isinstance(v, list):
            return [self.value(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v)]
        if isinstance(v, tuple):
            return {"$": "tuple",
                    "items": [self.value(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v)]}
        if isinstance(v, dict):
            if all(isinstance(k, str) for k in v):
                return {"$": "dict", "items": {k: self.value(x, f"{where}[{k!r}]", depth + 1)
                                               for k, x in v.items()}}
            pairs = []
            for k, x in v.items():
                if not isinstance(k, (int, float, bool, str, np.integer, np.floating)) \
                        and k is not None:
                    raise ModelFileError(f"cannot save {where}: dict key {k!r} is not a "
                                         f"number or a string")
                pairs.append([self.value(k, where, depth + 1),
                              self.value(x, f"{where}[{k!r}]", depth + 1)])
            return {"$": "dict", "pairs": pairs}
        if isinstance(v, Standardizer):
            return {"$": "standardizer", "mean": self.value(v.mean, f"{where}.mean", depth + 1),
                    "scale": self.value(v.scale, f"{where}.scale", depth + 1)}
        if isinstance(v, BaseEstimator) and _is_allowed_instance(v):
            return self.obj(v, where, depth + 1)
        raise ModelFileError(
            f"cannot save {where}: a {type(v).__module__}.{type(v).__qualname__} is not a "
            f"supported value (arrays, numbers, strings, lists/dicts of them, rwtool feature "
            f"maps and estimators)")

    def obj(self, est, where: str, depth: int = 0) -> dict:
        params = {}
        for k, v in est.get_params(deep=False).items():
            if isinstance(v, (np.random.Generator, np.random.RandomState)):
                v = None        # a generator's state is not part of the fitted model
            params[k] = v
        fitted = (est.fitted_state() if hasattr(est, "fitted_state") and callable(
            est.fitted_state) else {k: v for k, v in vars(est).items()
                                    if k.endswith("_") and not k.startswith("_")})
        return {"$": "object", "class": _qualname(type(est)),
                "params": self.value(params, f"{where} parameters", depth + 1),
                "fitted": self.value(dict(fitted), where, depth + 1)}


def _object_array(arr: np.ndarray, where: str) -> np.ndarray:
    flat = arr.ravel().tolist()
    if all(isinstance(x, str) for x in flat):
        return np.array(flat, dtype=str).reshape(arr.shape) if flat else arr.astype("<U1")
    if all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in flat):
        return np.array(flat, dtype=np.int64).reshape(arr.shape)
    if all(isinstance(x, (int, float, np.integer, np.floating)) for x in flat):
        return np.array(flat, dtype=np.float64).reshape(arr.shape)
    raise ModelFileError(f"cannot save {where}: an object array holding "
                         f"{sorted({type(x).__name__ for x in flat})}; only numbers and text "
                         f"can be saved")


def _public_fitted(est) -> dict:
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def save(model, path, *, preprocessing=None, metrics: dict | None = None,
         notes: str | None = None) -> str:
    """Write a fitted rwtool estimator (and how its data was encoded) to ``path``.

    Parameters
    ----------
    model : a fitted rwtool estimator
    path : str or path (".rwm" by convention); replaced atomically if it exists
    preprocessing : rwtool.data.Preprocessing or Dataset, optional
        The encoding of the training CSV; with it, a loaded model applies to raw CSV rows.
    metrics : dict, optional
        Numbers worth keeping with the model (train/test error, fit time...).
    notes : str, optional

    Returns the absolute path written.
    """
    from .data import Dataset, Preprocessing
    path = os.fspath(path)
    if not (isinstance(model, BaseEstimator) and _is_allowed_instance(model)):
        raise ModelFileError(f"cannot save a {type(model).__module__}.{type(model).__qualname__}:"
                             f" only rwtool estimators can be saved")
    if not _public_fitted(model):
        raise ModelFileError(f"this {type(model).__name__} is not fitted yet; call fit first")
    if isinstance(preprocessing, Dataset):
        preprocessing = preprocessing.preprocessing
    if preprocessing is not None and not isinstance(preprocessing, Preprocessing):
        raise TypeError("preprocessing must be a rwtool.data.Preprocessing or Dataset")
    n_in = getattr(model, "n_features_in_", None)
    if preprocessing is not None and n_in is not None and preprocessing.n_features_out != n_in:
        raise ModelFileError(f"the preprocessing record makes {preprocessing.n_features_out} "
                             f"columns but the model was fitted on {n_in}: pass the record of "
                             f"the data the model was trained on", path)
    from . import __version__
    try:
        with atomic_writer(path, "wb") as fh:
            with zipfile.ZipFile(fh, "w", allowZip64=True) as zf:
                w = _Writer(zf)
                tree = w.obj(model, type(model).__name__)
                classes = getattr(model, "classes_", None)
                doc = {
                    "format": FORMAT, "format_version": FORMAT_VERSION,
                    "rwtool_version": __version__, "numpy_version": np.__version__,
                    "python_version": platform.python_version(),
                    "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "estimator_class": _qualname(type(model)),
                    "estimator": tree,
                    "preprocessing": None if preprocessing is None else preprocessing.to_dict(),
                    "feature_names": None if preprocessing is None
                    else preprocessing.feature_names_out,
                    "classes": None if classes is None else np.asarray(classes).tolist(),
                    "metrics": w.value(dict(metrics or {}), "metrics"),
                    "notes": notes,
                    "arrays": w.arrays,
                }
                data = json.dumps(doc, allow_nan=False, indent=1, sort_keys=False,
                                  default=_json_default).encode("utf-8")
                zf.writestr(zipfile.ZipInfo(_DOC, (1980, 1, 1, 0, 0, 0)), data,
                            compress_type=zipfile.ZIP_DEFLATED)
                zf.writestr(zipfile.ZipInfo(_DOC_SUM, (1980, 1, 1, 0, 0, 0)),
                            hashlib.sha256(data).hexdigest() + "\n")
    except ModelFileError as exc:
        raise ModelFileError(exc.message, path) from None
    except OSError as exc:
        raise ModelFileError(f"cannot write the model file ({exc.strerror or exc})",
                             path) from None
    return os.path.abspath(path)


def _json_default(v):
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    raise TypeError(f"{type(v).__name__} is not JSON serialisable")


# ============================================================================ reading

@dataclass
class ModelFile:
    """Everything a model file holds: the estimator, the preprocessing record, metadata."""

    path: str
    estimator: Any
    preprocessing: Any            # rwtool.data.Preprocessing or None
    metrics: dict
    info: dict = field(default_factory=dict)

    def apply_csv(self, path, **kwargs):
        """The Dataset of a raw CSV encoded as the training data was (needs a preprocessing
        record, i.e. a model saved from data read with rwtool.read_csv)."""
        if self.preprocessing is None:
            raise ModelFileError("the model was saved without a preprocessing record, so it "
                                 "cannot read CSV files; pass arrays to its predict()",
                                 self.path)
        return self.preprocessing.apply_csv(path, **kwargs)


class _Reader:
    def __init__(self, zf: zipfile.ZipFile, path: str, table: dict, max_bytes: int):
        self.zf, self.path, self.table, self.max_bytes = zf, path, table, max_bytes
        self.cache: dict[str, np.ndarray] = {}

    def fail(self, msg):
        raise ModelFileError(msg, self.path)

    def array(self, key) -> np.ndarray:
        if not isinstance(key, str) or key not in self.table:
            self.fail(f"reference to an unknown array {key!r}")
        if key in self.cache:
            return self.cache[key]
        meta = self.table[key]
        name = f"arrays/{key}.npy"
        try:
            info = self.zf.getinfo(name)
        except KeyError:
            self.fail(f"array {name} is missing (truncated file?)")
        if info.file_size > self.max_bytes:
            self.fail(f"array {name} declares {info.file_size} bytes, above the limit")
        with self.zf.open(info) as fh:
            data = fh.read(info.file_size + 1)
        if hashlib.sha256(data).hexdigest() != meta["sha256"]:
            self.fail(f"checksum mismatch for {name}: the file is corrupted or was modified")
        arr = _read_npy(data, meta, name, self.fail)
        self.cache[key] = arr
        return arr

    def value(self, node, depth=0):
        if depth > _MAX_DEPTH:
            self.fail("the document is nested too deeply")
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.value(x, depth + 1) for x in node]
        if not isinstance(node, dict):
            self.fail(f"unexpected value of type {type(node).__name__}")
        tag = node.get("$")
        if tag == "float":
            if node.get("v") not in ("nan", "inf", "-inf"):
                self.fail("invalid special float")
            return float(node["v"])
        if tag == "tuple":
            items = node.get("items")
            if not isinstance(items, list):
                self.fail("invalid tuple")
            return tuple(self.value(x, depth + 1) for x in items)
        if tag == "dict":
            if isinstance(node.get("items"), dict):
                return {k: self.value(v, depth + 1) for k, v in node["items"].items()}
            pairs = node.get("pairs")
            if not isinstance(pairs, list):
                self.fail("invalid dict")
            out = {}
            for p in pairs:
                if not (isinstance(p, list) and len(p) == 2):
                    self.fail("invalid dict entry")
                k = self.value(p[0], depth + 1)
                if not (k is None or isinstance(k, (bool, int, float, str))):
                    self.fail("invalid dict key")
                out[k] = self.value(p[1], depth + 1)
            return out
        if tag == "array":
            return self.array(node.get("id"))
        if tag == "standardizer":
            mean, scale = self.value(node.get("mean"), depth + 1), self.value(node.get("scale"),
                                                                              depth + 1)
            if not (isinstance(mean, np.ndarray) and isinstance(scale, np.ndarray)
                    and mean.dtype.kind == "f" and scale.dtype.kind == "f"
                    and mean.shape == scale.shape and mean.ndim == 1
                    and np.isfinite(mean).all() and np.isfinite(scale).all()
                    and (scale > 0).all()):
                self.fail("invalid standardizer")
            return Standardizer(mean, scale)
        if tag == "object":
            return self.obj(node, depth + 1)
        self.fail(f"unknown node type {tag!r}")

    def obj(self, node, depth=0):
        cls = _lookup(node.get("class"), self.path)
        params = self.value(node.get("params"), depth + 1)
        fitted = self.value(node.get("fitted"), depth + 1)
        if not isinstance(params, dict) or not isinstance(fitted, dict):
            self.fail(f"{cls.__name__}: parameters and fitted state must be mappings")
        accepted = set(cls._param_names())
        for k in params:
            if not isinstance(k, str) or not _PARAM_NAME.match(k) or k not in accepted:
                self.fail(f"{cls.__name__} has no parameter {k!r} in this rwtool version")
        for k in fitted:
            if (not isinstance(k, str) or not _FITTED_NAME.match(k) or k in accepted
                    or isinstance(inspect.getattr_static(cls, k, None),
                                  (property, staticmethod, classmethod))
                    or callable(inspect.getattr_static(cls, k, None))):
                self.fail(f"{cls.__name__}: {k!r} is not a fitted attribute")
        if hasattr(cls, "from_fitted_state"):
            obj = cls.from_fitted_state(params, fitted)
        else:
            obj = cls(**params)
            for k, v in fitted.items():
                setattr(obj, k, v)
            prepare = getattr(obj, "_prepare", None)
            if callable(prepare):
                prepare()
        for check in _checks_for(type(obj)):
            check(obj)
        return obj


def _checks_for(cls):
    out = []
    for klass in cls.__mro__:
        out.extend(_CHECKS.get(klass, []))
    return out


def _read_npy(data: bytes, meta: dict, name: str, fail) -> np.ndarray:
    fh = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        else:
            fail(f"{name}: unsupported .npy version {version}")
    except ModelFileError:
        raise
    except Exception as exc:
        fail(f"{name}: not a valid .npy array ({exc})")
    if dtype.hasobject or dtype.kind not in _ARRAY_KINDS or dtype.fields is not None:
        fail(f"{name}: dtype {dtype} is not allowed (object arrays are refused)")
    if dtype.str != meta.get("dtype") or list(shape) != meta.get("shape"):
        fail(f"{name}: header ({dtype.str}, {list(shape)}) disagrees with the document "
             f"({meta.get('dtype')}, {meta.get('shape')})")
    count = math.prod(shape)
    offset = fh.tell()
    if len(data) - offset != count * dtype.itemsize:
        fail(f"{name}: {len(data) - offset} data bytes for {count} values of {dtype}")
    arr = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
    arr = arr.reshape(shape, order="F" if fortran else "C")
    arr = np.array(arr, order="C", copy=True)        # writable, owns its memory
    if meta.get("object"):
        arr = arr.astype(object)
    return arr


def _check_meta(meta_table, fail) -> dict:
    if not isinstance(meta_table, dict):
        fail("invalid array table")
    for key, meta in meta_table.items():
        if (not _ARRAY_NAME.match(str(key)) or not isinstance(meta, dict)
                or not isinstance(meta.get("sha256"), str) or not isinstance(meta.get("dtype"), str)
                or not isinstance(meta.get("shape"), list)
                or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                           for s in meta["shape"])
                or not isinstance(meta.get("object", False), bool)):
            fail(f"invalid entry {key!r} in the array table")
    return meta_table


def _open_doc(path, max_bytes):
    """(zipfile, verified document); the caller closes the zip."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ModelFileError("file not found", path)
    if os.path.isdir(path):
        raise ModelFileError("is a directory, not a model file", path)
    try:
        zf = zipfile.ZipFile(path, "r")
    except zipfile.BadZipFile:
        raise ModelFileError("not an rwtool model file (not a zip archive; truncated or "
                             "another kind of file)", path) from None
    except OSError as exc:
        raise ModelFileError(f"cannot read the file ({exc.strerror or exc})", path) from None
    try:
        names = set(zf.namelist())
        if _DOC not in names or _DOC_SUM not in names:
            raise ModelFileError("not an rwtool model file (a zip archive without "
                                 f"{_DOC})", path)
        total = 0
        for info in zf.infolist():
            total += info.file_size
            if info.compress_type != zipfile.ZIP_STORED and \
                    info.file_size > 1000 * info.compress_size + (1 << 20):
                raise ModelFileError(f"member {info.filename} has an implausible "
                                     f"compression ratio", path)
        if total > max_bytes:
            raise ModelFileError(f"the archive declares {total} bytes, above the limit "
                                 f"max_bytes={max_bytes}", path)
        if zf.getinfo(_DOC).file_size > _MAX_DOC_BYTES:
            raise ModelFileError("the model document is implausibly large", path)
        with zf.open(_DOC) as fh:
            data = fh.read(_MAX_DOC_BYTES + 1)
        with zf.open(_DOC_SUM) as fh:
            expected = fh.read(200).decode("ascii", "replace").strip()
        if hashlib.sha256(data).hexdigest() != expected:
            raise ModelFileError("checksum mismatch for the model document: the file is "
                                 "corrupted or was modified", path)

        def no_constants(name):
            raise ValueError(f"non-standard JSON constant {name}")
        doc = json.loads(data.decode("utf-8"), parse_constant=no_constants)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ModelFileError("not an rwtool model file (unknown document format)", path)
        version = doc.get("format_version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ModelFileError("invalid format version", path)
        if version > FORMAT_VERSION:
            raise ModelFileError(
                f"the file has model format {version}, newer than this rwtool's "
                f"({FORMAT_VERSION}; rwtool {doc.get('rwtool_version', '?')} wrote it): "
                f"upgrade rwtool", path)
        def fail(msg):
            raise ModelFileError(msg, path)
        _check_meta(doc.get("arrays"), fail)
        return zf, doc
    except ModelFileError:
        zf.close()
        raise
    except Exception as exc:  # zlib, zipfile, json and unicode errors alike: a damaged file
        zf.close()
        raise ModelFileError(f"not a valid rwtool model file ({type(exc).__name__}: {exc})",
                             path) from None


def read_info(path, *, max_bytes: int = 1 << 34) -> dict:
    """The verified document of a model file (without rebuilding the estimator): versions,
    class, parameters, preprocessing, metrics. For ``rwtool info``."""
    zf, doc = _open_doc(path, max_bytes)
    try:
        reader = _Reader(zf, os.fspath(path), doc["arrays"], max_bytes)
        for key in doc["arrays"]:
            reader.array(key)       # verify every checksum
        est = doc.get("estimator") or {}
        params = reader.value(est.get("params")) if isinstance(est, dict) else None
        metrics = reader.value(doc.get("metrics", {"$": "dict", "items": {}}))
    except ModelFileError:
        raise
    except Exception as exc:
        raise ModelFileError(f"not a valid rwtool model file ({type(exc).__name__}: {exc})",
                             path) from None
    finally:
        zf.close()
    out = {k: doc.get(k) for k in ("format", "format_version", "rwtool_version",
                                   "numpy_version", "python_version", "created",
                                   "estimator_class", "feature_names", "classes", "notes",
                                   "preprocessing")}
    out["params"] = params
    out["metrics"] = metrics
    out["arrays"] = {k: {"dtype": v["dtype"], "shape": v["shape"]}
                     for k, v in doc["arrays"].items()}
    out["size_bytes"] = os.path.getsize(path)
    return out


def read_model(path, *, max_bytes: int = 1 << 34, smoke_test: bool = True) -> ModelFile:
    """Load a model file completely: estimator, preprocessing record, metrics, metadata.

    ``smoke_test`` runs one prediction on a row of zeros so that an inconsistent file fails
    here with a clear message rather than later. Raises :class:`ModelFileError`.
    """
    from .data import Preprocessing
    path = os.fspath(path)
    zf, doc = _open_doc(path, max_bytes)
    try:
        reader = _Reader(zf, path, doc["arrays"], max_bytes)
        node = doc.get("estimator")
        if not isinstance(node, dict) or node.get("$") != "object":
            raise ModelFileError("the document holds no estimator", path)
        est = reader.obj(node)
        if not (isinstance(est, BaseEstimator) and getattr(est, "_estimator_type", None)
                in ("classifier", "regressor")):
            raise ModelFileError(f"{type(est).__name__} is not an estimator", path)
        pre = doc.get("preprocessing")
        pre = None if pre is None else Preprocessing.from_dict(pre)
        metrics = reader.value(doc.get("metrics", {"$": "dict", "items": {}}))
        if not isinstance(metrics, dict):
            raise ModelFileError("invalid metrics", path)
        n_in = getattr(est, "n_features_in_", None)
        if pre is not None and n_in is not None and pre.n_features_out != n_in:
            raise ModelFileError(f"the preprocessing makes {pre.n_features_out} columns but "
                                 f"the model expects {n_in}", path)
        if smoke_test and isinstance(n_in, int) and 0 < n_in <= 10**7:
            with np.errstate(all="ignore"):
                out = np.asarray(est.predict(np.zeros((1, n_in))))
            if out.shape[:1] != (1,):
                raise ModelFileError("the model predicts the wrong number of rows", path)
    except ModelFileError:
        raise
    except (MemoryError, RecursionError) as exc:
        raise ModelFileError(f"not a valid rwtool model file ({type(exc).__name__})",
                             path) from None
    except Exception as exc:  # any inconsistency met while rebuilding is the file's fault
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelFileError(f"invalid or inconsistent model file ({msg})", path) from None
    finally:
        zf.close()
    info = {k: doc.get(k) for k in ("format_version", "rwtool_version", "numpy_version",
                                    "python_version", "created", "estimator_class", "notes",
                                    "feature_names", "classes")}
    return ModelFile(os.path.abspath(path), est, pre, metrics, info)


def load(path, **kwargs):
    """The estimator saved in ``path`` (see :func:`read_model` for the rest of the file)."""
    return read_model(path, **kwargs).estimator
