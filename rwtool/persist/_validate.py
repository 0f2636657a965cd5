"""What a model file may declare: array shapes and fitted scalars per class, and the memory the
load will take, decided from the document alone before any array is read (used by persist.py).

Every class rwtool saves has a row in :data:`SPECS` (looked up along its MRO, base rows first):
``dims`` reads the object's own scalar fields (``n_features_in_``, the ``n_features`` parameter,
the variant...) and binds the symbols its array shapes are written in; ``arrays`` gives each
fitted array attribute its shape, a tuple of ints, symbols of the object (``"n_in"``), symbols of
a child object (``"feature_map_.n_output"``) or free symbols that only have to agree between the
arrays of the object (``"n_train"``); ``derived`` counts the bytes the rebuild computes from the
arrays (BKerNN's prediction tables). A symbol bound by ``dims`` is checked against the object's
own scalars, so a file that declares a 1 GB scaler for a 5-input model is refused before a byte
of it is decompressed. Arrays of a class without a row, or attributes its row does not list,
are "unlisted": they load only within :data:`UNLISTED_BYTES` in total.

To let a new estimator or fitted attribute carry large arrays, add or extend its row here
(tests/persist/test_hostile_files.py names every saved array attribute that has no row). This module
must not read arrays, open files or build models: it only reads the parsed document (and
borrows the Taylor map's size formula).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ..exceptions import human_bytes
from ..features import TaylorMultiKernelFeatures   # its size formula, nothing else

__all__ = ["Arr", "Spec", "SPECS", "SpecError", "Plan", "plan_load", "has_spec", "array_nbytes",
           "check_text", "check_text_array", "MAX_DIM", "MAX_TEXT", "UNLISTED_BYTES"]

#: the largest dimension (inputs, features, rows) a model file may declare
MAX_DIM = 2**31 - 1
#: total bytes of arrays no table row accounts for (future small attributes, arrays in metrics)
UNLISTED_BYTES = 8 << 20
#: Python objects per element of an array saved from an object array (classes_ of strings)
_OBJECT_OVERHEAD = 80
_DTYPE = re.compile(r"^[<>|=]([biufc][0-9]{1,2}|[US][0-9]{1,9})$")


class SpecError(ValueError):
    """A document that declares something no real model has (persist turns it into
    ModelFileError)."""


# ============================================================================ the table

@dataclass(frozen=True)
class Arr:
    """One fitted array: its shape in symbols, the dtype kinds allowed, whether floats must be
    finite (checked after reading)."""

    shape: tuple
    kinds: str = "f"
    finite: bool = True


@dataclass(frozen=True)
class Spec:
    """A class's row: see the module docstring."""

    arrays: Mapping[str, Arr] = field(default_factory=dict)
    dims: Callable[["Fields", dict], None] | None = None
    scalars: Mapping[str, str] = field(default_factory=dict)
    derived: Callable[[dict], int] | None = None
    #: False: the rows of base classes do not apply (a map that is not indexed by centres)
    inherit: bool = True


class Fields:
    """Typed access to the raw scalar fields of one object node, with located errors."""

    def __init__(self, cls_name: str, params: dict, fitted: dict, children: dict):
        self.cls_name, self.params, self.fitted, self.children = cls_name, params, fitted, children

    def _fail(self, name, want, got):
        shown = repr(got) if not isinstance(got, (dict, list)) else type(got).__name__
        raise SpecError(f"{self.cls_name}.{name} must be {want}, got {shown[:60]}")

    def int(self, name, low=0, high=MAX_DIM, param=False, default=None):
        src = self.params if param else self.fitted
        v = src.get(name, default)
        if not (isinstance(v, int) and not isinstance(v, bool) and low <= v <= high):
            self._fail(name, f"a whole number from {low} to {high}", v)
        return v

    def bool(self, name, param=False, default=None):
        v = (self.params if param else self.fitted).get(name, default)
        if not isinstance(v, bool):
            self._fail(name, "true or false", v)
        return v

    def choice(self, name, options, param=True):
        v = (self.params if param else self.fitted).get(name)
        if not (isinstance(v, str) and v.lower() in options):
            self._fail(name, f"one of {list(options)}", v)
        return v.lower()

    def child(self, name) -> dict:
        syms = self.children.get(name)
        if syms is None:
            raise SpecError(f"{self.cls_name} has no {name}")
        return syms


def _scalar_ok(rule: str, v) -> bool:
    if rule == "bool":
        return isinstance(v, bool)
    if rule == "count":
        return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_DIM
    if rule == "estimate":         # a Monte Carlo constant: inf when the estimate overflowed
        return (v == {"$": "float", "v": "inf"}
                or isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0)
    if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)):
        return False
    return {"finite": True, "positive": v > 0, "nonneg": v >= 0}[rule]


_RULE_TEXT = {"bool": "true or false", "count": "a whole number >= 0",
              "estimate": "a number >= 0 or inf",
              "finite": "a finite number", "positive": "a finite number > 0",
              "nonneg": "a finite number >= 0"}


def _map_dims(f: Fields, s: dict) -> None:
    s["n_in"] = f.int("n_features_in_", low=1)
    s["T"] = f.int("n_features", low=1, param=True)
    s["n_output"] = s["T"]


def _fourier_dims(f: Fields, s: dict) -> None:
    if f.choice("variant", ("pair", "phase")) == "pair":
        s["n_output"] = 2 * s["T"]


def _taylor_dims(f: Fields, s: dict) -> None:
    s["n_in"] = d = f.int("n_features_in_", low=1)
    K = f.int("gauss_order", low=0, high=8, param=True)
    linear = f.bool("include_linear", param=True)
    M0 = TaylorMultiKernelFeatures(gauss_order=K, include_linear=linear, include_squares=f.bool(
        "include_squares", param=True))._count(d)
    if M0 > 5_000_000:
        raise SpecError(f"TaylorMultiKernelFeatures would have {M0} columns; rwtool never "
                        f"builds more than 5000000")
    s.update(n_output=M0, K1=max(K, 1), P=2 if linear else 1)


def _estimator_dims(f: Fields, s: dict) -> None:
    s["n_in"] = f.int("n_features_in_", low=1)


def _with_map(f: Fields, s: dict) -> None:
    """The map's input width: the estimator's, plus the bias column of RW/RKS dot products."""
    fmap = f.child("feature_map_")
    bias = int(f.bool("bias_", default=False))
    if fmap["n_in"] != s["n_in"] + bias:
        raise SpecError(f"{f.cls_name}: the feature map takes {fmap['n_in']} inputs but the "
                        f"model has n_features_in_={s['n_in']}" + (" plus a bias" if bias else ""))


def _draws_dims(f: Fields, s: dict) -> None:
    """Monte Carlo features (MonteCarloRKHS, closed_form=False): S shared draws in ``mc_``
    (that centres and draws agree is the map's own check on load)."""
    s["S"] = f.children.get("mc_", {}).get("S", 0)


def _montecarlo_sections(s: dict) -> int:
    # the S x T sections (float64), the float32 matrix of the product plan, and the draws'
    # features of a block of rows
    return 16 * s["S"] * s["T"]


def _bkernn_dims(f: Fields, s: dict) -> None:
    s["m"] = f.int("n_particles", low=1, param=True)


def _bkernn_tables(s: dict) -> int:
    # ridge_tables: knots (m, n) and two prefix-sum tables (m, n + 1, k)
    m, n, k = s["m"], s.get("n_train", 0), s.get("k", 1)
    return 8 * m * (n + (2 * (n + 1) * k))


def _taylor_rederived(s: dict) -> int:
    # persist re-derives the dictionary to compare it with the stored one: its arrays, and
    # the Python lists it is built from (a list and a float object per column)
    return s["n_output"] * (16 * s["K1"] + 200)


_ANY = "biufcUS"

#: qualified class name (the class or any base) -> its row; rows along the MRO are merged
SPECS: dict[str, Spec] = {
    "rwtool._base.BaseEstimator": Spec(
        arrays={"x_scaler_": Arr(("n_in",)), "y_scaler_": Arr(("k",)),
                "classes_": Arr(("n_classes",), _ANY, finite=False),
                "feature_names_in_": Arr(("n_in",), "U", finite=False)}),
    # --- feature maps
    "rwtool.features._base.FeatureMap": Spec(
        dims=_map_dims,
        arrays={"W_": Arr(("T", "n_in")), "b_": Arr(("T",)), "idx_": Arr(("T",), "iu"),
                "thr_": Arr(("T",))},
        scalars={"fitted_": "bool"}),
    "rwtool.features._rkhs.RKHSWeighting": Spec(
        dims=_draws_dims, derived=_montecarlo_sections,
        scalars={"gamma_": "positive", "x_norm_max_": "nonneg", "theta_": "finite",
                 "kappa_": "finite", "normalized_": "bool"}),
    "rwtool.features._fourier.RandomFourierFeatures": Spec(dims=_fourier_dims),
    "rwtool.features._taylor.TaylorMultiKernelFeatures": Spec(
        dims=_taylor_dims, derived=_taylor_rederived, inherit=False, scalars={"fitted_": "bool"},
        arrays={"vars_": Arr(("n_output", "K1"), "i"), "kernel_index_": Arr(("n_output",), "i"),
                "degree_": Arr(("n_output",), "i"), "scale_": Arr(("n_output",)),
                "nu_": Arr(("P",)), "feature_names_in_": Arr(("n_in",), "U", finite=False)}),
    "rwtool.features._rkhs_mc.MonteCarloRKHS": Spec(
        arrays={"W_": Arr(("T", "d"))},
        scalars={"theta_": "estimate", "kappa_": "estimate"}),
    "rwtool.features._montecarlo.MonteCarloDraws": Spec(arrays={"draws_": Arr(("S", "d"))}),
    "rwtool.features._instantiation.Instantiation": Spec(),      # parameters only
    # --- estimators
    "rwtool.estimators._random_features._RandomFeatureModel": Spec(
        dims=lambda f, s: (_estimator_dims(f, s), _with_map(f, s)),
        arrays={"coef_": Arr(("feature_map_.n_output", "k")),
                "posterior_chol_": Arr(("feature_map_.n_output", "feature_map_.n_output")),
                "noise_var_": Arr(("k",))},
        scalars={"bias_": "bool", "reg_": "nonneg"}),
    "rwtool.estimators._rfsgd.RFSGDClassifier": Spec(
        dims=lambda f, s: (_estimator_dims(f, s), _with_map(f, s)),
        arrays={"coef_": Arr(("feature_map_.n_output", "k")),
                "last_iterate_": Arr(("feature_map_.n_output", "k"))},
        scalars={"gamma_": "positive", "eta1_": "positive", "n_iter_": "count"}),
    "rwtool.estimators._greedy_mk._GreedyMK": Spec(
        dims=lambda f, s: (_estimator_dims(f, s), _with_map(f, s)),
        arrays={"support_": Arr(("M",), "i"), "coef_": Arr(("M", "k")),
                "intercept_": Arr(("k",)), "column_scale_": Arr(("M",))},
        scalars={"sigma_": "positive", "reg_": "nonneg"}),
    "rwtool.estimators._bkernn._BKerNN": Spec(
        dims=lambda f, s: (_estimator_dims(f, s), _bkernn_dims(f, s)),
        derived=_bkernn_tables,
        arrays={"particles_": Arr(("n_in", "m")), "train_projections_": Arr(("n_train", "m")),
                "dual_coef_": Arr(("n_train", "k")), "intercept_": Arr(("k",)),
                "history_.*": Arr(("n_history",), "biuf", finite=False)},
        scalars={"reg_": "positive", "n_iter_": "count", "cancelled_": "bool"}),
}


def _spec_rows(cls: type) -> list[Spec]:
    rows = []
    for k in cls.__mro__:
        row = SPECS.get(f"{k.__module__}.{k.__qualname__}")
        if row is not None:
            rows.append(row)
            if not row.inherit:
                break
    return rows[::-1]


def has_spec(cls: type) -> bool:
    """Whether a row of the table other than the generic BaseEstimator one covers ``cls``."""
    return any(r is not SPECS["rwtool._base.BaseEstimator"] for r in _spec_rows(cls))


# ============================================================================ planning

@dataclass
class Plan:
    """What loading the document will read and roughly cost, before anything is read."""

    arrays: dict = field(default_factory=dict)      # key -> (where, Arr or None)
    stored_bytes: int = 0                           # data of every referenced array
    unlisted_bytes: int = 0
    derived_bytes: int = 0                          # built from the arrays at load time
    smoke_bytes: int = 0                            # the one-row prediction
    largest: list = field(default_factory=list)     # (bytes, where) of the biggest arrays

    @property
    def total(self) -> int:
        return self.stored_bytes + self.derived_bytes + self.smoke_bytes

    def describe(self, n=3) -> str:
        top = sorted(self.largest, reverse=True)[:n]
        return ", ".join(f"{where} {human_bytes(b)}" for b, where in top)


# ============================================================================ text

#: the longest string a document may hold (a column name, a category, the notes): rwtool writes
#: names and labels read from CSV cells, far shorter
MAX_TEXT = 1 << 16


def check_text(doc) -> None:
    """Every string of the parsed document, keys included, must be encodable as UTF-8 and at
    most MAX_TEXT characters long: JSON's ``"\\ud800"`` escape is valid JSON but decodes to a
    lone surrogate, which loads and then crashes whatever writes or encodes it (a CSV reader's
    missing-value markers, a predictions file). SpecError naming the field otherwise."""
    stack = [((), doc)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            _check_string(node, path)
        elif isinstance(node, dict):
            for key, value in node.items():
                if isinstance(key, str):
                    _check_string(key, path + (key,))
                stack.append((path + (key,), value))
        elif isinstance(node, list):
            stack.extend((path + (i,), value) for i, value in enumerate(node))


def _check_string(s: str, path: tuple) -> None:
    if len(s) > MAX_TEXT:
        raise SpecError(f"the document's {_field(path)} holds {len(s)} characters of text; "
                        f"rwtool writes at most {MAX_TEXT}")
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SpecError(f"the document's {_field(path)} holds text that is not valid Unicode "
                        f"(character {exc.start}, {ascii(s[exc.start])}, is a lone surrogate)"
                        ) from None


def _field(path: tuple) -> str:
    out = ""
    for k in path:
        if isinstance(k, str) and k.isascii() and k.isidentifier():
            out += f".{k}" if out else k
        else:
            out += f"[{ascii(k)}]"
    return out or "top level"


def check_text_array(arr: np.ndarray, where: str) -> None:
    """The same rule for a text array (class labels saved as fixed-width text): every code point
    a Unicode scalar value (no surrogate, nothing past U+10FFFF), every string at most
    MAX_TEXT characters."""
    if arr.dtype.kind != "U":
        return
    if arr.dtype.itemsize // 4 > MAX_TEXT:
        raise SpecError(f"{where} holds strings of up to {arr.dtype.itemsize // 4} characters; "
                        f"rwtool writes at most {MAX_TEXT}")
    codes = np.ascontiguousarray(arr).view(np.uint32)
    bad = ((codes >= 0xD800) & (codes <= 0xDFFF)) | (codes > 0x10FFFF)
    if bad.any():
        raise SpecError(f"{where} holds text that is not valid Unicode (code point "
                        f"{int(codes[bad].flat[0]):#x})")


def array_nbytes(meta: dict) -> int:
    """Data bytes of a table entry (its dtype string is checked here)."""
    if not _DTYPE.match(meta["dtype"]):
        raise SpecError(f"dtype {meta['dtype']!r} is not allowed (numbers and text only; object "
                        f"arrays are refused)")
    count = math.prod(meta["shape"])
    return count * np.dtype(meta["dtype"]).itemsize


def _items(node) -> dict:
    """The mapping of a params/fitted node (the writer always writes string-keyed items)."""
    if not (isinstance(node, dict) and node.get("$") == "dict"
            and isinstance(node.get("items"), dict)):
        raise SpecError("parameters and fitted state must be mappings")
    return node["items"]


def _array_refs(node, path, depth=0):
    """(path, key, part) of every array under ``node`` (part: "mean"/"scale" of a scaler)."""
    if depth > 64 or not isinstance(node, (dict, list)):
        return
    if isinstance(node, list):
        for x in node:
            yield from _array_refs(x, path + ("#",), depth + 1)
        return
    tag = node.get("$")
    if tag == "array":
        yield path, node.get("id"), None
    elif tag == "standardizer":
        for part in ("mean", "scale"):
            sub = node.get(part)
            if isinstance(sub, dict) and sub.get("$") == "array":
                yield path, sub.get("id"), part
    elif tag == "dict" and isinstance(node.get("items"), dict):
        for k, v in node["items"].items():
            yield from _array_refs(v, path + (k,), depth + 1)
    elif tag in ("tuple", "dict") or tag is None:
        for v in node.values():
            yield from _array_refs(v, path + ("#",), depth + 1)
    # "object" nodes are planned by their own walk


def plan_load(doc: dict, table: dict, lookup: Callable[[Any], type]) -> Plan:
    """Check every declared shape and fitted scalar of ``doc`` against its class's row and
    return what loading will read; raises SpecError (or what ``lookup`` raises)."""
    plan = Plan()
    node = doc.get("estimator")
    if not (isinstance(node, dict) and node.get("$") == "object"):
        raise SpecError("the document holds no estimator")
    top = _plan_object(node, "model", table, lookup, plan, 0)
    n_in = top.get("n_in", 0)
    # the smoke test: a row of zeros, its preprocessed copy, the features and the decision
    plan.smoke_bytes = 8 * (3 * n_in + 2 * top.get("n_output_total", 0) + 2 * top.get("k", 1))
    for _, key, _ in _array_refs(doc.get("metrics"), ("metrics",)):
        _account(plan, table, key, "metrics", None, {}, None)
    unused = set(table) - set(plan.arrays)
    if unused:
        raise SpecError(f"the array table lists {sorted(unused)[:3]} that nothing refers to")
    if plan.unlisted_bytes > UNLISTED_BYTES:
        raise SpecError(f"{human_bytes(plan.unlisted_bytes)} of arrays that no rwtool model "
                        f"attribute accounts for (at most {human_bytes(UNLISTED_BYTES)})")
    return plan


def _plan_object(node, where, table, lookup, plan, depth) -> dict:
    if depth > 8:
        raise SpecError("objects nested too deeply")
    cls = lookup(node.get("class"))
    params, fitted = _items(node.get("params")), _items(node.get("fitted"))
    children = {}
    for k, v in list(params.items()) + list(fitted.items()):
        if isinstance(v, dict) and v.get("$") == "object":
            children[k] = _plan_object(v, f"{where}.{k}", table, lookup, plan, depth + 1)
    rows = _spec_rows(cls)
    syms: dict = {}
    f = Fields(cls.__name__, params, fitted, children)
    arrays, scalars = {}, {}
    for row in rows:
        if row.dims is not None:
            row.dims(f, syms)
        arrays.update(row.arrays)
        scalars.update(row.scalars)
    for name, rule in scalars.items():
        if name in fitted and not _scalar_ok(rule, fitted[name]):
            f._fail(name, _RULE_TEXT[rule], fitted[name])
    for source, items in (("params", params), ("fitted", fitted)):
        for attr, value in items.items():
            for path, key, part in _array_refs(value, (attr,)):
                spec = None
                if source == "fitted":
                    spec = arrays.get(attr) if len(path) == 1 else (
                        arrays.get(f"{attr}.*") if len(path) == 2 else None)
                label = f"{where}.{'.'.join(path)}" + (f".{part}" if part else "")
                _account(plan, table, key, label, spec, syms, children)
    n_classes = syms.get("n_classes")
    if n_classes is not None:
        if n_classes < 2:
            raise SpecError(f"{cls.__name__}.classes_ holds {n_classes} class; a classifier "
                            f"has at least 2")
        want = 1 if n_classes == 2 else n_classes
        if syms.setdefault("k", want) != want:
            raise SpecError(f"{cls.__name__}: {n_classes} classes need {want} decision "
                            f"columns, the arrays have {syms['k']}")
    for row in rows:
        if row.derived is not None:
            plan.derived_bytes += row.derived(syms)
    if "feature_map_" in children:
        syms["n_output_total"] = children["feature_map_"].get("n_output", 0)
    return syms


def _account(plan, table, key, where, spec, syms, children) -> None:
    if not isinstance(key, str) or key not in table:
        raise SpecError(f"{where} refers to an unknown array {key!r}")
    if key in plan.arrays:
        raise SpecError(f"{where} refers to array {key} a second time")
    meta = table[key]
    nbytes = array_nbytes(meta)
    plan.arrays[key] = (where, spec)
    plan.stored_bytes += nbytes
    plan.largest.append((nbytes, where))
    if meta.get("object"):
        plan.derived_bytes += _OBJECT_OVERHEAD * math.prod(meta["shape"])
    if spec is None:
        plan.unlisted_bytes += nbytes
        return
    kind = meta["dtype"][1]
    if kind not in spec.kinds:
        raise SpecError(f"{where} has dtype {meta['dtype']}, expected kind {spec.kinds!r}")
    shape = meta["shape"]
    if len(shape) != len(spec.shape):
        raise SpecError(f"{where} has shape {tuple(shape)}, expected {len(spec.shape)} "
                        f"dimension(s) {_show(spec.shape)}")
    for have, dim in zip(shape, spec.shape):
        if isinstance(dim, int):
            want = dim
        elif "." in dim:
            child, sym = dim.split(".", 1)
            want = (children.get(child) or {}).get(sym)
            if want is None:
                raise SpecError(f"{where} needs {child}, which the model lacks")
        else:
            want = syms.setdefault(dim, have)
        if have != want or have > MAX_DIM:
            raise SpecError(f"{where} has shape {tuple(shape)} where the model's own "
                            f"parameters give {_show(spec.shape, syms, children)}")


def _show(shape, syms=None, children=None) -> str:
    out = []
    for d in shape:
        if isinstance(d, int):
            out.append(str(d))
        elif syms is not None and "." in d:
            out.append(str((children.get(d.split(".")[0]) or {}).get(d.split(".", 1)[1], d)))
        elif syms is not None and d in syms:
            out.append(str(syms[d]))
        else:
            out.append(d)
    return "(" + ", ".join(out) + ("," if len(out) == 1 else "") + ")"
