"""The ONNX graph of a fitted rwtool estimator: inputs, the model's own nodes, the outputs.

The graph's inputs are the raw columns of a CSV when the model carries the record of how its
training file was encoded (rwtool.data.Preprocessing: one input per column, numbers as float
tensors of shape (N, 1) with NaN for a missing cell, text columns as string tensors of shape
(N, 1)), otherwise one float tensor ``X`` of shape (N, d). The record is replayed in the graph:
one-hot categories (ai.onnx.ml's LabelEncoder, then Equal), imputation of missing cells with
the recorded statistic, and the |x| <= max_abs check; a row the reader would refuse (a missing
cell the record does not impute, a category unseen in training under handle_unknown="error", a
number beyond max_abs) cannot raise inside a graph, so its outputs are NaN (its label then
reads classes[0], or the first class of the argmax: check the decision for NaN).

Each estimator writes its prediction (``_onnx_decision``) and each feature map its features
(``_onnx``) on the :class:`rwtool.persist._onnx_graph.Graph`; this module adds the inputs and
the outputs every estimator shares: ``label`` (the class labels), ``decision`` (the decision
function) and, for the classifiers with ``predict_proba``, ``probabilities`` (the one-vs-rest
sigmoids, normalised for several classes); ``prediction`` for regressors (the targets' scaling
undone). It writes no file (rwtool.persist.to_onnx does, atomically).
"""

from __future__ import annotations

import numpy as np

from .._version import __version__
from ..data import Preprocessing
from ._onnx_graph import ML_OPSET, OPSET, Graph

__all__ = ["onnx_model", "OPSET", "ML_OPSET"]


def _model_dtype(est, dtype):
    """The graph's dtype: ``dtype`` if given, else the estimator's own (a float32 model
    exports as float32), else float64."""
    if dtype is not None:
        return np.dtype(dtype)
    own = getattr(est, "dtype", None)
    return np.dtype(np.float32) if own is not None and np.dtype(own) == np.float32 \
        else np.dtype(np.float64)


def _numeric_input(g, spec, max_abs):
    v = g.add_input(spec["name"], g.elem, [None, 1])
    nan = g.const(np.nan, "nan")
    # NaN fails the test too: a missing cell is NaN unless the record imputes it
    out = g.where(g.op("LessOrEqual", g.op("Abs", v), g.const(max_abs, "max_abs")), v, nan)
    if spec.get("fill") is not None:
        out = g.where(g.op("IsNaN", v), g.const(spec["fill"], "fill"), out)
    return out


def _categorical_input(g, spec, pre):
    onnx = g.onnx
    v = g.add_input(spec["name"], onnx.TensorProto.STRING, [None, 1])
    cats = list(spec["categories"])
    na = [s for s in dict.fromkeys(pre.na_values) if s not in cats]
    g.uses_ml = True
    # the category's index, -1 for a missing cell (an NA spelling), -2 for an unseen one
    codes = g.op("LabelEncoder", v, domain="ai.onnx.ml", keys_strings=cats + na,
                 values_int64s=list(range(len(cats))) + [-1] * len(na), default_int64=-2)
    missing = g.op("Equal", codes, g.ints(-1, "missing"))
    if spec.get("fill") is not None:
        codes = g.where(missing, g.ints(cats.index(spec["fill"]), "fill"), codes)
        bad = None
    else:
        bad = missing
    if pre.handle_unknown == "error":
        unseen = g.op("Equal", codes, g.ints(-2, "unseen"))
        bad = unseen if bad is None else g.op("Or", bad, unseen)
    onehot = g.cast(g.op("Equal", codes, g.ints(np.arange(len(cats)), "categories")), g.dtype)
    return onehot if bad is None else g.where(bad, g.const(np.nan, "nan"), onehot)


def _inputs(g, est, pre):
    """The name of the (N, d) float tensor the estimator reads, and the inputs it comes from."""
    if pre is None:
        return g.add_input("X", g.elem, [None, int(est.n_features_in_)])
    parts = [(_numeric_input(g, c, pre.max_abs) if c["kind"] == "numeric"
              else _categorical_input(g, c, pre)) for c in pre.columns]
    return parts[0] if len(parts) == 1 else g.concat(parts)


def _free(g, name):
    """``name``, or with underscores appended until no input has it."""
    while name in g._taken:
        name += "_"
    return name


def _label_tensor(g, classes):
    """The class labels as a constant of their own ONNX type, and that type."""
    P = g.onnx.TensorProto
    classes = np.asarray(classes)
    if classes.dtype.kind in "iu":
        return g.ints(classes, "classes"), P.INT64
    if classes.dtype.kind == "b":
        return g.const(classes, "classes", np.bool_), P.BOOL
    if classes.dtype.kind == "f":
        return g.const(classes, "classes", np.float64), P.DOUBLE
    name = g.name("classes")
    g.initializers.append(g.onnx.helper.make_tensor(
        name, P.STRING, [len(classes)], [str(c).encode("utf-8") for c in classes.tolist()]))
    return name, P.STRING


def _heads(g, est, d):
    """The outputs shared by every estimator, from its decision values ``d`` (N, k)."""
    elem = g.elem
    if getattr(est, "_estimator_type", None) == "regressor":
        pred = g.unstandardize(getattr(est, "y_scaler_", None), d)
        if getattr(est, "y_1d_", True):
            g.add_output(g.op("Squeeze", pred, g.ints([1], "axis")), _free(g, "prediction"),
                         elem, [None])
        else:
            g.add_output(pred, _free(g, "prediction"), elem, [None, None])
        return
    classes = np.asarray(est.classes_)
    binary = len(classes) == 2
    if binary:
        d1 = g.op("Squeeze", d, g.ints([1], "axis"))
        index = g.cast(g.op("Greater", d1, g.const(0.0, "zero")), np.int64)
    else:
        d1 = d
        index = g.op("ArgMax", d, axis=1, keepdims=0)
    table, label_elem = _label_tensor(g, classes)
    g.add_output(g.op("Gather", table, index, axis=0), _free(g, "label"), label_elem, [None])
    g.add_output(d1, _free(g, "decision"), elem, [None] if binary else [None, len(classes)])
    if hasattr(est, "predict_proba"):
        p = g.op("Sigmoid", d)
        if binary:
            p = g.concat([g.sub(g.const(1.0, "one"), p), p])
        else:
            p = g.div(p, g.op("ReduceSum", p, g.ints([1], "axis"), keepdims=1))
        g.add_output(p, _free(g, "probabilities"), elem, [None, len(classes)])


def onnx_model(est, preprocessing: Preprocessing | None = None, dtype=None):
    """The ONNX ModelProto of the fitted estimator ``est`` (see the module docstring)."""
    if not hasattr(est, "_onnx_decision"):
        raise TypeError(f"{type(est).__name__} has no ONNX form; the rwtool estimators do")
    if not any(k.endswith("_") and not k.startswith("_") for k in vars(est)):
        raise ValueError(f"this {type(est).__name__} is not fitted yet; call fit first")
    if preprocessing is not None and preprocessing.n_features_out != est.n_features_in_:
        raise ValueError(f"the preprocessing record makes {preprocessing.n_features_out} "
                         f"columns but the model was fitted on {est.n_features_in_}: pass the "
                         f"record of the data the model was trained on")
    g = Graph(_model_dtype(est, dtype))
    x = _inputs(g, est, preprocessing)
    _heads(g, est, est._onnx_decision(g, x))
    meta = {"rwtool_version": __version__, "estimator": type(est).__name__,
            "dtype": str(g.dtype), "opset": OPSET,
            "inputs": "csv columns" if preprocessing is not None else "X"}
    if preprocessing is not None:
        meta["feature_names"] = ",".join(preprocessing.feature_names_out)
    return g.model(doc=f"{type(est).__name__} exported by rwtool {__version__}", metadata=meta)
