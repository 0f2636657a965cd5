"""Model files: ``save`` and ``load`` for every rwtool estimator (DESIGN.md section 4).

A model file (``.rwm``) is a zip archive holding

- ``model.json``: format name and version, rwtool/numpy/python versions, the estimator as a
  tagged JSON tree (class name from an allow-list, ``get_params()``, every public fitted
  attribute), the preprocessing record of the data (rwtool.data.Preprocessing), column names,
  class labels, metrics, and for each array its dtype, shape and SHA-256;
- ``model.json.sha256``: the SHA-256 of ``model.json``;
- ``arrays/aN.npy``: numeric (or fixed-width text) arrays, written and read without pickle.

Loading reads nothing it has not bounded first: only regular files are opened (never a device
or a FIFO); the zip directory, the document and its parsed size are capped; every member must
be stored or deflated at a ratio real arrays have; every array's declared shape is checked
against the model's own parameters (rwtool.persist._validate, a table per class) and the total
against ``max_bytes`` and the free memory; then each array is decompressed in a stream, capped
at its declared size, with its SHA-256 computed on the way. Only classes of the allow-list are
rebuilt (rwtool's own estimators and feature maps, found by walking rwtool's packages, never by
a name taken from the file), only attribute names that look like fitted attributes are set,
the parameters are checked as fit checks them, the rebuilt model's consistency is checked and
one prediction is run. Anything else, including every zip, zlib and JSON failure, is refused
with :class:`ModelFileError`. Files are written atomically (rwtool.persist._atomic: temporary
file in the same directory, fsync, rename; stale temporaries of killed saves are removed).

This package must not use pickle, eval or imports driven by file content, and must not know any
particular estimator: each class checks its own loaded state (``_check_fitted_state``) and has
its row in the shape table (_validate).

Must not import: rwtool.report, rwtool.cli
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
import stat
import struct
import threading
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable

import numpy as np

from . import _validate
from ._atomic import atomic_writer, removal_note
from ._onnx import onnx_model
from .._base import BaseEstimator, Standardizer
from .._version import __version__
from ..data import Dataset, Preprocessing
from ..exceptions import ModelFileError, human_bytes
from ._validate import MAX_DIM
from ..resources import FitEstimate, check_memory

__all__ = ["save", "load", "read_model", "read_info", "to_onnx", "ModelFile", "ModelFileError",
           "register", "registered_classes", "atomic_writer", "FORMAT", "FORMAT_VERSION",
           "DEFAULT_MAX_BYTES", "SavedPath"]

FORMAT = "rwtool-model"
FORMAT_VERSION = 1
_DOC = "model.json"
_DOC_SUM = "model.json.sha256"
_ARRAY_NAME = re.compile(r"^a[0-9]{1,7}$")
_FITTED_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*_$")
_PARAM_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
#: default cap on what loading one model may take (arrays plus what is rebuilt from them)
DEFAULT_MAX_BYTES = 4 << 30
_MAX_DOC_BYTES = 8 << 20          # model.json: real ones take a few KB to a few MB
_DOC_MEMORY = 48 << 20            # the parsed document (see _parse_doc)
_PER_VALUE = 80                   # bytes of a parsed JSON value, with its slot in a container
_MAX_DIRECTORY_BYTES = 256 << 10  # the zip directory: ~60 bytes per member
_MAX_NPY_HEADER = 16 << 10
_MAX_RATIO = 64                   # deflate ratio allowed for an array (rwtool stores them)
_RATIO_SLACK = 64 << 10
_CHUNK = 1 << 20                  # streaming unit
_EOCD = 22                        # bytes of the zip end-of-directory record
_MAX_DEPTH = 64
_ARRAY_KINDS = "biufcUS"
#: packages walked for allow-listed classes, and single modules (imported when present)
_PACKAGES = ("rwtool.estimators", "rwtool.features")
_MODULES = ("rwtool.estimators._bkernn", "rwtool.features._instantiation")

#: where the modules (or single classes) that define saved classes were before (model files
#: written earlier name their classes by these paths)
_MOVED = {
    "rwtool.bkernn": "rwtool.estimators._bkernn",
    "rwtool.instantiation": "rwtool.features._instantiation",
    "rwtool.estimators.random_features": "rwtool.estimators._random_features",
    "rwtool.estimators.rfsgd": "rwtool.estimators._rfsgd",
    "rwtool.estimators.greedy_mk": "rwtool.estimators._greedy_mk",
    "rwtool.features.base": "rwtool.features._base",
    "rwtool.features.rkhs": "rwtool.features._rkhs",
    "rwtool.features.montecarlo": "rwtool.features._montecarlo",
    "rwtool.features.kitchen": "rwtool.features._kitchen",
    "rwtool.features.fourier": "rwtool.features._fourier",
    "rwtool.features.taylor": "rwtool.features._taylor",
    "rwtool.features.montecarlo.MonteCarloRKHS": "rwtool.features._rkhs_mc.MonteCarloRKHS",
    "rwtool.features._montecarlo.MonteCarloRKHS": "rwtool.features._rkhs_mc.MonteCarloRKHS",
}


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
    if cls is None and isinstance(name, str) and "." in name:
        module, qualname = name.rsplit(".", 1)
        cls = _REGISTRY.get(_MOVED.get(name, f"{_MOVED.get(module, module)}.{qualname}"))
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


#: fitted attributes a model file may leave out (``save(..., keep_posterior=False)``): the
#: posterior factor of the exact least-squares regressors, 8 T^2 bytes that only
#: ``predict(X, return_std=True)`` reads
POSTERIOR_ATTRS = ("posterior_chol_",)


class _Writer:
    def __init__(self, zf: zipfile.ZipFile, drop=()):
        self.zf = zf
        self.arrays: dict[str, dict] = {}
        self.drop = frozenset(drop)

    def array(self, arr: np.ndarray, where: str) -> dict:
        as_object = False
        if arr.dtype.hasobject:
            arr, as_object = _object_array(arr, where), True
        if arr.dtype.kind not in _ARRAY_KINDS or arr.dtype.fields is not None:
            raise ModelFileError(f"cannot save {where}: arrays of dtype {arr.dtype} are not "
                                 f"supported (numbers and text only)")
        try:
            _validate.check_text_array(arr, where)
        except _validate.SpecError as exc:
            raise ModelFileError(f"cannot save: {exc}") from None
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
        fitted = {k: v for k, v in fitted.items() if k not in self.drop}
        return {"$": "object", "class": _qualname(type(est)),
                "params": self.value(params, f"{where} parameters", depth + 1),
                "fitted": self.value(fitted, where, depth + 1)}


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


def _feature_names(model, preprocessing):
    """The names of the model's input columns: the encoded CSV columns of its record, else
    the DataFrame columns it was fitted on (``feature_names_in_``), else None."""
    if preprocessing is not None:
        return preprocessing.feature_names_out
    names = getattr(model, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]


def _public_fitted(est) -> dict:
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def save(model, path, *, preprocessing=None, metrics: dict | None = None,
         notes: str | None = None, keep_posterior: bool = True) -> str:
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
    keep_posterior : bool, default True
        Write the posterior factor ``posterior_chol_`` of an exact least-squares regressor
        (T x T float64, 8 T^2 bytes: 8 MB at T = 1000, 200 MB at T = 5000), so the loaded
        model answers ``predict(X, return_std=True)`` as the saved one did. False leaves it out
        (the file then holds O(T d) numbers); the loaded model predicts the same means and its
        ``return_std=True`` raises a ValueError saying the factor was not saved.

    Returns the absolute path written, a :class:`SavedPath` whose ``removed`` lists the
    temporary files of earlier saves into that folder that were killed (their process gone),
    removed first, and ``note`` says so in a sentence (None when there were none).
    """
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
    removed: list = []
    try:
        with atomic_writer(path, "wb", removed=removed) as fh:
            with zipfile.ZipFile(fh, "w", allowZip64=True) as zf:
                w = _Writer(zf, () if keep_posterior else POSTERIOR_ATTRS)
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
                    "feature_names": _feature_names(model, preprocessing),
                    "classes": None if classes is None else np.asarray(classes).tolist(),
                    "metrics": w.value(dict(metrics or {}), "metrics"),
                    "notes": notes,
                    "arrays": w.arrays,
                }
                try:        # what load would refuse is never written
                    _validate.check_text(doc)
                except _validate.SpecError as exc:
                    raise ModelFileError(f"cannot save: {exc}") from None
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
    return SavedPath(os.path.abspath(path), removed)


def to_onnx(model, path, *, preprocessing=None, dtype=None) -> str:
    """Write the prediction of a fitted estimator as a standard ONNX graph to ``path``.

    Parameters
    ----------
    model : a fitted rwtool estimator, or a :class:`ModelFile` (``read_model``), whose
        preprocessing record is then used
    path : str or path (".onnx" by convention); replaced atomically if it exists
    preprocessing : rwtool.data.Preprocessing or Dataset, optional
        The encoding of the training CSV: the graph then takes the CSV's raw columns (one input
        per column) and replays the encoding; without it, one float input ``X`` (N, d).
    dtype : "float64" or "float32", optional
        The graph's floats; None: the model's own (float64 unless it was fitted in float32).

    The graph uses opset 17 of the default domain (and ai.onnx.ml 2 for text columns), runs in
    onnxruntime and needs the ``onnx`` package to be written (``pip install "rwtool[onnx]"``);
    docs/DEPLOY.md says what each model becomes and how to serve it. Returns the absolute path
    written, a :class:`SavedPath`.
    """
    if isinstance(model, ModelFile):
        model, preprocessing = model.estimator, (model.preprocessing if preprocessing is None
                                                 else preprocessing)
    if isinstance(preprocessing, Dataset):
        preprocessing = preprocessing.preprocessing
    if preprocessing is not None and not isinstance(preprocessing, Preprocessing):
        raise TypeError("preprocessing must be a rwtool.data.Preprocessing or Dataset")
    data = onnx_model(model, preprocessing, dtype).SerializeToString()
    path = os.fspath(path)
    removed: list = []
    try:
        with atomic_writer(path, "wb", removed=removed) as fh:
            fh.write(data)
    except OSError as exc:
        raise ModelFileError(f"cannot write the ONNX file ({exc.strerror or exc})",
                             path) from None
    return SavedPath(os.path.abspath(path), removed)


class SavedPath(str):
    """The absolute path :func:`save` wrote (a str), with ``removed``: the names of the
    temporary files of killed saves it removed from that folder first, and ``note``: a
    sentence about them for the user, or None."""

    def __new__(cls, path: str, removed=()):
        out = super().__new__(cls, path)
        out.removed = tuple(removed)
        out.note = removal_note(out.removed, os.path.dirname(path))
        return out


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
    """Rebuilds the document's values, reading each array once, streamed and capped."""

    def __init__(self, zf: zipfile.ZipFile, path: str, table: dict, plan):
        self.zf, self.path, self.table, self.plan = zf, path, table, plan
        self.cache: dict[str, np.ndarray] = {}

    def fail(self, msg):
        raise ModelFileError(msg, self.path)

    def array(self, key) -> np.ndarray:
        if not isinstance(key, str) or key not in self.plan.arrays:
            self.fail(f"reference to an unknown array {key!r}")
        if key in self.cache:
            return self.cache[key]
        where, spec = self.plan.arrays[key]
        arr = _read_npy(self.zf, self.zf.getinfo(f"arrays/{key}.npy"), self.table[key],
                        self.fail)
        if (spec is not None and spec.finite and arr.dtype.kind in "fc"
                and not np.isfinite(arr).all()):
            self.fail(f"{where} holds non-finite values")
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
        _validate_params(obj, self.fail)
        for check in _checks_for(type(obj)):
            check(obj)
        return obj


def _validate_params(obj, fail) -> None:
    """The checks fit runs on the parameters, so that a file cannot hold values no fit accepts
    (later code relies on them: predict reads ``standardize``, the maps their bandwidths)."""
    own = getattr(obj, "_validate", None)
    try:
        if callable(own):
            own()
        elif callable(getattr(obj, "_validate_params", None)):
            obj._validate_params(getattr(obj, "n_features_in_", 1))
    except (ValueError, TypeError) as exc:
        fail(f"{type(obj).__name__} has an invalid parameter ({_first_line(exc)})")


def _first_line(exc) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _checks_for(cls):
    """The consistency checks of a loaded object: every class of its MRO contributes its own
    ``_check_fitted_state`` (the classes know their fitted state; see FeatureMap) and the
    checks given to :func:`register`."""
    out = []
    for klass in cls.__mro__:
        own = klass.__dict__.get("_check_fitted_state")
        if own is not None:
            out.append(own)
        out.extend(_CHECKS.get(klass, []))
    return out


# ============================================================================ reading the zip

def _open_regular(path):
    """(binary file object, size) of ``path``, refused unless it is a regular file: a device or a
    FIFO would read forever or block. Opened non-blocking and checked again on the descriptor,
    so a file swapped after the first check is refused too."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ModelFileError("file not found", path) from None
    except OSError as exc:
        raise ModelFileError(f"cannot read the file ({exc.strerror or exc})", path) from None
    if stat.S_ISDIR(st.st_mode):
        raise ModelFileError("is a directory, not a model file", path)
    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
             | getattr(os, "O_BINARY", 0))
    fd = None
    if stat.S_ISREG(st.st_mode):
        try:
            fd = os.open(path, flags)
        except OSError as exc:
            raise ModelFileError(f"cannot read the file ({exc.strerror or exc})", path) from None
        st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        if fd is not None:
            os.close(fd)
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device"
                if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise ModelFileError(f"is {kind}, not a model file (model files are regular files "
                             f"written by rwtool.save)", path)
    return os.fdopen(fd, "rb"), st.st_size


def _directory_size(fh, size, fail) -> int:
    """Bytes of the zip central directory, found as zipfile finds it (end record without a
    comment first, then the last one in the final 64 KB, then its zip64 record): zipfile
    reads it whole and builds an object per entry, so it is bounded before zipfile runs."""
    tail_len = min(size, _EOCD + 65535)
    fh.seek(size - tail_len)
    tail = fh.read(tail_len)
    if len(tail) >= _EOCD and tail[-_EOCD:-_EOCD + 4] == b"PK\x05\x06" and tail[-2:] == b"\0\0":
        pos = len(tail) - _EOCD
    else:
        pos = tail.rfind(b"PK\x05\x06")
    if pos < 0 or len(tail) - pos < _EOCD:
        fail("not an rwtool model file (not a zip archive; truncated or another kind of file)")
    size_cd = struct.unpack("<L", tail[pos + 12:pos + 16])[0]
    end = size - tail_len + pos
    if end >= 20 + 56:
        fh.seek(end - 20)
        if fh.read(4) == b"PK\x06\x07":
            fh.seek(end - 20 - 56)
            rec = fh.read(56)
            if rec[:4] == b"PK\x06\x06":
                size_cd = struct.unpack("<Q", rec[40:48])[0]
    return size_cd


def _check_member(info: zipfile.ZipInfo, file_size: int, fail) -> None:
    name = info.filename
    if info.flag_bits & 0x41:
        fail(f"member {name} is encrypted; model files are not")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        fail(f"member {name} uses compression method {info.compress_type}; model files use "
             f"none or deflate")
    if info.header_offset + info.compress_size > file_size:
        fail(f"member {name} extends past the end of the file (truncated?)")
    if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
        fail(f"member {name} declares {info.file_size} bytes but stores {info.compress_size}")
    if (info.compress_type == zipfile.ZIP_DEFLATED and name != _DOC
            and info.file_size > _MAX_RATIO * info.compress_size + _RATIO_SLACK):
        fail(f"member {name} would expand {info.file_size // max(1, info.compress_size)}-fold; "
             f"no model array compresses like that (a zip bomb?)")


def _read_member(zf, info, limit: int, fail) -> bytes:
    """A small member whole, refusing more than ``limit`` bytes (the document, its checksum)."""
    if info.file_size > limit:
        fail(f"member {info.filename} declares {info.file_size} bytes; rwtool writes at most "
             f"{limit}")
    out = bytearray()
    with zf.open(info) as fh:
        while len(out) < info.file_size:
            chunk = fh.read(min(_CHUNK, info.file_size - len(out)))
            if not chunk:
                fail(f"member {info.filename} ends early (truncated or corrupted)")
            out += chunk
    return bytes(out)


def _read_npy(zf, info, meta: dict, fail) -> np.ndarray:
    """One .npy member streamed into its own array: the header is checked against the table
    before the array is allocated, at most the declared bytes are decompressed, and the
    SHA-256 is computed on the way."""
    name = info.filename
    h = hashlib.sha256()
    with zf.open(info) as fh:
        def take(n):
            b = fh.read(n)
            if len(b) != n:
                fail(f"{name} ends early (truncated or corrupted)")
            h.update(b)
            return b

        head = take(8)
        if head[:6] != b"\x93NUMPY" or head[6:8] not in (b"\x01\x00", b"\x02\x00"):
            fail(f"{name}: not a .npy array of version 1.0 or 2.0")
        len_bytes = take(2 if head[6] == 1 else 4)
        hlen = int.from_bytes(len_bytes, "little")
        if hlen > _MAX_NPY_HEADER:
            fail(f"{name}: .npy header of {hlen} bytes (rwtool writes fewer than 200)")
        header = io.BytesIO(head + len_bytes + take(hlen))
        try:
            np.lib.format.read_magic(header)
            read = (np.lib.format.read_array_header_1_0 if head[6] == 1
                    else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read(header)
        except Exception as exc:
            fail(f"{name}: not a valid .npy array ({_first_line(exc)})")
        if dtype.hasobject or dtype.kind not in _ARRAY_KINDS or dtype.fields is not None:
            fail(f"{name}: dtype {dtype} is not allowed (object arrays are refused)")
        if dtype.str != meta.get("dtype") or list(shape) != meta.get("shape"):
            fail(f"{name}: header ({dtype.str}, {list(shape)}) disagrees with the document "
                 f"({meta.get('dtype')}, {meta.get('shape')})")
        count = math.prod(shape)
        nbytes = count * dtype.itemsize
        if info.file_size != header.tell() + nbytes:
            fail(f"{name}: {info.file_size - header.tell()} data bytes for {count} values of "
                 f"{dtype}")
        flat = np.empty(count, dtype=dtype)
        if nbytes:
            buf = flat.view(np.uint8)
            for start in range(0, nbytes, _CHUNK):
                stop = min(nbytes, start + _CHUNK)
                buf[start:stop] = np.frombuffer(take(stop - start), dtype=np.uint8)
        fh.read(1)                                        # end of member: zipfile's CRC check
    if h.hexdigest() != meta["sha256"]:
        fail(f"checksum mismatch for {name}: the file is corrupted or was modified")
    arr = flat.reshape(shape, order="F" if fortran else "C")
    if fortran:
        arr = np.ascontiguousarray(arr)
    if not dtype.isnative:
        arr = arr.astype(dtype.newbyteorder("="))
    try:
        _validate.check_text_array(arr, name)
    except _validate.SpecError as exc:
        fail(str(exc))
    if meta.get("object"):
        arr = arr.astype(object)
    return arr


def _check_meta(meta_table, fail) -> dict:
    if not isinstance(meta_table, dict):
        fail("invalid array table")
    for key, meta in meta_table.items():
        if (not _ARRAY_NAME.match(str(key)) or not isinstance(meta, dict)
                or not isinstance(meta.get("sha256"), str) or not isinstance(meta.get("dtype"), str)
                or not isinstance(meta.get("shape"), list) or len(meta["shape"]) > 32
                or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_DIM
                           for s in meta["shape"])
                or not isinstance(meta.get("object", False), bool)):
            fail(f"invalid entry {key!r} in the array table")
    return meta_table


def _check_header_fields(doc: dict, fail) -> None:
    """The descriptive fields ``info`` and the app show: text, lists of labels, or absent."""
    for key in ("rwtool_version", "numpy_version", "python_version", "created",
                "estimator_class", "notes"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            fail(f"the document's {key} must be text")
    names = doc.get("feature_names")
    if names is not None and not (isinstance(names, list)
                                  and all(isinstance(n, str) for n in names)):
        fail("the document's feature_names must be a list of column names")
    classes = doc.get("classes")
    if classes is not None and not (isinstance(classes, list) and all(
            isinstance(c, (str, int, float, bool)) for c in classes)):
        fail("the document's classes must be a list of labels")


def _parse_doc(data: bytes, fail) -> dict:
    # json builds one Python object per value: bound that before parsing (a document of "[],"
    # repeated costs about 25 times its size).
    values = sum(data.count(c) for c in (b",", b"[", b"{", b":"))
    width = 1 if data.isascii() else 4
    if (1 + width) * len(data) + 2 * _PER_VALUE * values > _DOC_MEMORY:
        fail(f"the model document holds {values} values, more than any model needs")

    def no_constants(name):
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(data.decode("utf-8"), parse_constant=no_constants)


@contextmanager
def _opened(path, max_bytes: int):
    """Yields (zipfile, document, plan, reader) once everything that can be checked without
    reading an array has been: a regular file, a bounded zip directory, the document's
    checksum and format, every member's size and compression, every declared shape against
    the model's own parameters, and the total against ``max_bytes`` and the free memory."""
    path = os.fspath(path)

    def fail(msg):
        raise ModelFileError(msg, path)
    if not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive number of bytes, got {max_bytes!r}")
    fh, size = _open_regular(path)
    zf = None
    try:
        try:
            size_cd = _directory_size(fh, size, fail)
            if size_cd > _MAX_DIRECTORY_BYTES:
                fail(f"the zip directory declares {size_cd} bytes; a model file's takes a few KB")
            fh.seek(0)
            zf = zipfile.ZipFile(fh, "r")
            names = zf.namelist()
            if len(names) != len(set(names)):
                fail("the archive holds two members of the same name")
            if _DOC not in names or _DOC_SUM not in names:
                raise ModelFileError("not an rwtool model file (a zip archive without "
                                     f"{_DOC})", path)
            infos = {i.filename: i for i in zf.infolist()}
            for n in (_DOC, _DOC_SUM):
                _check_member(infos[n], size, fail)
            data = _read_member(zf, infos[_DOC], _MAX_DOC_BYTES, fail)
            expected = _read_member(zf, infos[_DOC_SUM], 200, fail)
            if hashlib.sha256(data).hexdigest() != expected.decode("ascii", "replace").strip():
                fail("checksum mismatch for the model document: the file is corrupted or "
                     "was modified")
            doc = _parse_doc(data, fail)
            del data
            if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                fail("not an rwtool model file (unknown document format)")
            version = doc.get("format_version")
            if not isinstance(version, int) or isinstance(version, bool) or version < 1:
                fail("invalid format version")
            if version > FORMAT_VERSION:
                fail(f"the file has model format {version}, newer than this rwtool's "
                     f"({FORMAT_VERSION}; rwtool {doc.get('rwtool_version', '?')} wrote it): "
                     f"upgrade rwtool")
            table = _check_meta(doc.get("arrays"), fail)
            _check_header_fields(doc, fail)
            try:
                _validate.check_text(doc)
                plan = _validate.plan_load(doc, table, lambda name: _lookup(name, path))
            except _validate.SpecError as exc:
                fail(str(exc))
            stored = infos[_DOC].compress_size + infos[_DOC_SUM].compress_size
            for key in plan.arrays:
                info = infos.get(f"arrays/{key}.npy")
                if info is None:
                    fail(f"array arrays/{key}.npy is missing (truncated file?)")
                _check_member(info, size, fail)
                data_bytes = _validate.array_nbytes(table[key])
                if not 10 <= info.file_size - data_bytes <= 12 + _MAX_NPY_HEADER:
                    fail(f"array arrays/{key}.npy holds {info.file_size} bytes for "
                         f"{data_bytes} bytes of data")
                stored += info.compress_size
            if stored > size:
                fail(f"the members store {stored} bytes in a file of {size} (corrupted)")
        except ModelFileError:
            raise
        except (MemoryError, KeyboardInterrupt):
            raise
        except Exception as exc:  # zlib, zipfile, json and unicode errors alike: a damaged file
            raise ModelFileError(f"not a valid rwtool model file ({type(exc).__name__}: "
                                 f"{_first_line(exc)})", path) from None
        if plan.total > max_bytes:
            fail(f"loading would take about {human_bytes(plan.total)} (largest: "
                 f"{plan.describe()}), above the limit max_bytes={max_bytes}; if the file is "
                 f"trusted, raise the limit (rwtool.load(path, max_bytes=...), or "
                 f"--max-model-mb on the command line)")
        check_memory(FitEstimate(plan.total, detail=f"largest arrays: {plan.describe()}"),
                     f"loading {os.path.basename(path)} needs about "
                     f"{human_bytes(plan.total)}",
                     fix="free memory or load the model on a larger machine")
        yield zf, doc, _Reader(zf, path, table, plan)
    finally:
        if zf is not None:
            zf.close()
        fh.close()


def _load(path, max_bytes: int, smoke_test: bool):
    """(ModelFile, document, reader) with every check of :func:`read_model` passed."""
    path = os.fspath(path)
    with _opened(path, max_bytes) as (zf, doc, reader):
        try:
            est = reader.obj(doc["estimator"])
            if not (isinstance(est, BaseEstimator) and getattr(est, "_estimator_type", None)
                    in ("classifier", "regressor")):
                raise ModelFileError(f"{type(est).__name__} is not an estimator", path)
            pre = doc.get("preprocessing")
            pre = None if pre is None else Preprocessing.from_dict(pre)
            metrics = reader.value(doc.get("metrics", {"$": "dict", "items": {}}))
            if not isinstance(metrics, dict):
                raise ModelFileError("invalid metrics", path)
            params = reader.value(doc["estimator"].get("params"))
            n_in = est.n_features_in_
            if pre is not None and pre.n_features_out != n_in:
                raise ModelFileError(f"the preprocessing makes {pre.n_features_out} columns "
                                     f"but the model expects {n_in}", path)
            if smoke_test:
                with np.errstate(all="ignore"):
                    out = np.asarray(est.predict(np.zeros((1, n_in))))
                if out.shape[:1] != (1,):
                    raise ModelFileError("the model predicts the wrong number of rows", path)
        except ModelFileError:
            raise
        except (MemoryError, KeyboardInterrupt):
            raise
        except RecursionError:
            raise ModelFileError("not a valid rwtool model file (nested too deeply)",
                                 path) from None
        except Exception as exc:  # any inconsistency met while rebuilding is the file's fault
            raise ModelFileError(f"invalid or inconsistent model file ({_first_line(exc)})",
                                 path) from None
    info = {k: doc.get(k) for k in ("format_version", "rwtool_version", "numpy_version",
                                    "python_version", "created", "estimator_class", "notes",
                                    "feature_names", "classes")}
    info["load_bytes"] = reader.plan.total
    mf = ModelFile(os.path.abspath(path), est, pre, metrics, info)
    return mf, doc, params


def read_info(path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> dict:
    """What ``rwtool info`` shows: versions, class, parameters, preprocessing, metrics, arrays.

    The file is loaded completely first (every check of :func:`read_model`), so a file that
    :func:`load` refuses is refused here too, with the same :class:`ModelFileError`.
    """
    mf, doc, params = _load(path, max_bytes, smoke_test=True)
    out = {k: doc.get(k) for k in ("format", "format_version", "rwtool_version",
                                   "numpy_version", "python_version", "created",
                                   "estimator_class", "feature_names", "classes", "notes",
                                   "preprocessing")}
    out["params"] = params
    out["metrics"] = mf.metrics
    out["arrays"] = {k: {"dtype": v["dtype"], "shape": v["shape"]}
                     for k, v in doc["arrays"].items()}
    out["size_bytes"] = os.path.getsize(path)
    out["load_bytes"] = mf.info["load_bytes"]
    return out


def read_model(path, *, max_bytes: int = DEFAULT_MAX_BYTES, smoke_test: bool = True) -> ModelFile:
    """Load a model file completely: estimator, preprocessing record, metrics, metadata.

    Nothing is read before the document's declared shapes are checked against the model's own
    parameters, and loading is refused when it would take more than ``max_bytes`` (arrays plus
    what is rebuilt from them; default 4 GiB: raise it for a trusted larger model) or more
    than the machine has free (:class:`rwtool.InsufficientMemoryError`). ``smoke_test`` runs
    one prediction on a row of zeros so that an inconsistent file fails here with a clear
    message rather than later. Raises :class:`ModelFileError`.
    """
    return _load(path, max_bytes, smoke_test)[0]


def load(path, **kwargs):
    """The estimator saved in ``path`` (see :func:`read_model` for the rest of the file)."""
    return read_model(path, **kwargs).estimator
