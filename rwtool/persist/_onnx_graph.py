"""A small builder of ONNX graphs: the vocabulary the feature maps and estimators write in.

Each feature map and estimator states its own prediction as a graph (a ``_onnx`` method that
receives a :class:`Graph` and the name of its input tensor and returns the name of its output);
this module gives them the operators they need, in one dtype (float64 or float32) throughout,
with names that never collide with the graph's inputs. It knows no estimator and no feature map.

Operators are those of the default ONNX domain at :data:`OPSET` (and ``ai.onnx.ml`` for the
category lookup of a CSV's text columns). ONNX Runtime has no float64 kernel for ``Erf``
(onnxruntime 1.32: NOT_IMPLEMENTED), so a float64 graph writes erf and erfc with W. J. Cody's
rational approximations (Math. Comp. 23, 1969; the SPECFUN routine CALERF), elementary
operators only, accurate to a few units in the last place; a float32 graph uses ``Erf`` itself.

The ``onnx`` package is imported when a Graph is built, never when rwtool is imported.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["Graph", "OPSET", "ML_OPSET", "require_onnx"]

#: the default domain's opset the graphs are written for (ONNX 1.12, onnxruntime >= 1.12)
OPSET = 17
#: ai.onnx.ml's opset (LabelEncoder with string keys and int64 values)
ML_OPSET = 2

# W. J. Cody's coefficients (CALERF): erf on |x| <= 0.5, erfc on 0.5 < |x| <= 4 and beyond
_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
      3.20937758913846947e03, 1.85777706184603153e-1)
_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
      2.84423683343917062e03)
_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
      2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
      2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
      1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
      3.43936767414372164e03, 1.23033935480374942e03)
_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
      1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_Q = (2.56852019228982242e00, 1.87295284992346725e00, 5.27905102951428412e-1,
      6.05183413124413191e-2, 2.33520497626869185e-3)
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)


def require_onnx():
    """The ``onnx`` module, or an ImportError that says how to install it."""
    try:
        import onnx  # optional: only the export needs it
    except ImportError:
        raise ImportError("writing an ONNX graph needs the onnx package: pip install "
                          "\"rwtool[onnx]\" (or pip install onnx)") from None
    return onnx


class Graph:
    """Nodes, constants and inputs of one ONNX graph in ``dtype`` (np.float64 or np.float32).

    Every method adds nodes and returns the name of the tensor it made; constants are stored as
    initializers in the graph's dtype (integer constants as int64).
    """

    def __init__(self, dtype=np.float64):
        self.onnx = require_onnx()
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype(np.float64), np.dtype(np.float32)):
            raise ValueError(f"an ONNX graph is written in float64 or float32, not {self.dtype}")
        self.nodes, self.initializers, self.inputs, self.outputs = [], [], [], []
        self._taken: set[str] = set()
        self._count = 0
        self.uses_ml = False

    # -- names, tensors ----------------------------------------------------------------------
    @property
    def elem(self) -> int:
        """The ONNX element type of the graph's floats."""
        P = self.onnx.TensorProto
        return P.DOUBLE if self.dtype == np.float64 else P.FLOAT

    def name(self, hint: str) -> str:
        """A fresh tensor name (never an input's: inputs are named after the data's columns)."""
        while True:
            self._count += 1
            out = f"rw/{hint}/{self._count}"
            if out not in self._taken:
                self._taken.add(out)
                return out

    def add_input(self, name: str, elem: int, shape) -> str:
        if name in self._taken:
            raise ValueError(f"two inputs of the ONNX graph would be named {name!r}")
        self._taken.add(name)
        self.inputs.append(self.onnx.helper.make_tensor_value_info(name, elem, list(shape)))
        return name

    def add_output(self, tensor: str, name: str, elem: int, shape) -> None:
        if name in self._taken:
            raise ValueError(f"the ONNX output {name!r} would collide with an input's name")
        self._taken.add(name)
        self.op("Identity", tensor, out=name)
        self.outputs.append(self.onnx.helper.make_tensor_value_info(name, elem, list(shape)))

    def const(self, value, hint: str = "c", dtype=None) -> str:
        """An initializer holding ``value`` (the graph's float dtype unless ``dtype``)."""
        arr = np.asarray(value, dtype=self.dtype if dtype is None else dtype)
        name = self.name(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(arr, name))
        return name

    def ints(self, value, hint: str = "i") -> str:
        return self.const(np.asarray(value, dtype=np.int64), hint, np.int64)

    def op(self, op_type: str, *inputs: str, out: str | None = None, domain: str = "",
           **attrs) -> str:
        out = out or self.name(op_type.lower())
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), [out],
                                                     domain=domain, **attrs))
        return out

    # -- arithmetic ----------------------------------------------------------------------------
    def add(self, a, b):
        return self.op("Add", a, b)

    def sub(self, a, b):
        return self.op("Sub", a, b)

    def mul(self, a, b):
        return self.op("Mul", a, b)

    def div(self, a, b):
        return self.op("Div", a, b)

    def matmul(self, a, b):
        return self.op("MatMul", a, b)

    def scaled(self, x, factor: float):
        """x * factor (a scalar constant)."""
        return self.mul(x, self.const(factor, "k"))

    def cast(self, x, dtype):
        to = {np.dtype(np.float64): self.onnx.TensorProto.DOUBLE,
              np.dtype(np.float32): self.onnx.TensorProto.FLOAT,
              np.dtype(np.int64): self.onnx.TensorProto.INT64}[np.dtype(dtype)]
        return self.op("Cast", x, to=to)

    def row_norms(self, x):
        """sqrt(sum_j x_ij^2) as an (n, 1) column."""
        sq = self.op("ReduceSumSquare", x, axes=[1], keepdims=1)
        return self.op("Sqrt", sq)

    def gather_columns(self, x, index) -> str:
        """x[:, index] for an integer array ``index`` (any shape: the result is (n, *shape))."""
        return self.op("Gather", x, self.ints(index, "cols"), axis=1)

    def append_ones(self, x):
        """x with a column of ones appended (the bias column of the estimators)."""
        return self.op("Pad", x, self.ints([0, 0, 0, 1], "pads"), self.const(1.0, "one"),
                       mode="constant")

    def standardize(self, scaler, x):
        """``scaler.transform`` (rwtool's Standardizer, or None: x itself), in its order of
        operations."""
        if scaler is None:
            return x
        u = scaler._unit
        if u is None:
            return self.div(self.sub(x, self.const(scaler.mean, "mean")),
                            self.const(scaler.scale, "scale"))
        z = self.sub(self.div(x, self.const(u, "unit")), self.const(scaler.mean / u, "mean"))
        return self.div(z, self.const(scaler.scale / u, "scale"))

    def unstandardize(self, scaler, z):
        """``scaler.inverse_transform`` (None: z itself)."""
        if scaler is None:
            return z
        u = scaler._unit
        if u is None:
            return self.add(self.mul(z, self.const(scaler.scale, "scale")),
                            self.const(scaler.mean, "mean"))
        z = self.add(self.mul(z, self.const(scaler.scale / u, "scale")),
                     self.const(scaler.mean / u, "mean"))
        return self.mul(z, self.const(u, "unit"))

    def where(self, cond, a, b):
        return self.op("Where", cond, a, b)

    def concat(self, parts, axis: int = 1):
        return self.op("Concat", *parts, axis=axis)

    def polynomial(self, y, coef_high, coefs, last):
        """Horner's scheme as CALERF writes it: ((c_high y + c_0) y + c_1) y ... + last."""
        acc = self.scaled(y, coef_high)
        for c in coefs:
            acc = self.mul(self.add(acc, self.const(c, "k")), y)
        return self.add(acc, self.const(last, "k"))

    # -- erf, erfc -------------------------------------------------------------------------------
    def _erfc_tail(self, y):
        """erfc(y) for y = |x| > 0.5 (CALERF's second and third ranges), with exp(-y^2) split
        as exp(-ysq^2) exp(-(y - ysq)(y + ysq)), ysq = floor(16 y) / 16, as CALERF does (the
        relative accuracy of erfc far in its tail)."""
        mid = self.div(self.polynomial(y, _C[8], _C[:7], _C[7]),
                       self.polynomial(y, 1.0, _D[:7], _D[7]))
        inv2 = self.div(self.const(1.0, "one"), self.mul(y, y))
        tail = self.div(self.mul(inv2, self.polynomial(inv2, _P[5], _P[:4], _P[4])),
                        self.polynomial(inv2, 1.0, _Q[:4], _Q[4]))
        tail = self.div(self.sub(self.const(_INV_SQRT_PI, "k"), tail), y)
        r = self.where(self.op("LessOrEqual", y, self.const(4.0, "k")), mid, tail)
        ysq = self.scaled(self.op("Floor", self.scaled(y, 16.0)), 1.0 / 16.0)
        dl = self.mul(self.sub(y, ysq), self.add(y, ysq))
        e = self.mul(self.op("Exp", self.op("Neg", self.mul(ysq, ysq))),
                     self.op("Exp", self.op("Neg", dl)))
        return self.mul(e, r)

    def _erf_small(self, x):
        y2 = self.mul(x, x)
        return self.mul(x, self.div(self.polynomial(y2, _A[4], _A[:3], _A[3]),
                                    self.polynomial(y2, 1.0, _B[:3], _B[3])))

    def erf(self, x):
        """erf(x): the Erf operator in float32, Cody's approximation in float64."""
        if self.dtype == np.float32:
            return self.op("Erf", x)
        y = self.op("Abs", x)
        small = self.op("LessOrEqual", y, self.const(0.5, "k"))
        big = self.mul(self.op("Sign", x),
                       self.sub(self.const(1.0, "one"), self._erfc_tail(y)))
        return self.where(small, self._erf_small(x), big)

    def erfc(self, x):
        """erfc(x): in float64 Cody's ranges (relative accuracy in the right tail, where 1 - erf
        cancels); in float32 1 - Erf (its absolute error, 6e-8, is float32's own rounding of
        the features that read it)."""
        if self.dtype == np.float32:
            return self.sub(self.const(1.0, "one"), self.op("Erf", x))
        y = self.op("Abs", x)
        one = self.const(1.0, "one")
        tail = self._erfc_tail(y)
        far = self.where(self.op("Greater", x, self.const(0.0, "zero")), tail,
                         self.sub(self.const(2.0, "k"), tail))
        small = self.op("LessOrEqual", y, self.const(0.5, "k"))
        return self.where(small, self.sub(one, self._erf_small(x)), far)

    # -- the model -------------------------------------------------------------------------
    def model(self, doc: str = "", metadata: dict | None = None):
        """The ModelProto of the graph (checked by onnx.checker)."""
        onnx = self.onnx
        graph = onnx.helper.make_graph(self.nodes, "rwtool", self.inputs, self.outputs,
                                       self.initializers)
        opsets = [onnx.helper.make_opsetid("", OPSET)]
        if self.uses_ml:
            opsets.append(onnx.helper.make_opsetid("ai.onnx.ml", ML_OPSET))
        model = onnx.helper.make_model(graph, opset_imports=opsets, producer_name="rwtool",
                                       doc_string=doc)
        model.ir_version = 8          # what onnxruntime >= 1.12 reads (ONNX 1.12, opset 17)
        for key, value in (metadata or {}).items():
            entry = model.metadata_props.add()
            entry.key, entry.value = str(key), str(value)
        onnx.checker.check_model(model)
        return model
