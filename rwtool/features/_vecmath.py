"""Branch-free erf, erfc and exp in numba, for loops that LLVM must vectorise.

numba calls libm's scalar erf / erfc / exp once per element and LLVM cannot vectorise those calls
(no vector math library here), so the closed-form features spent more time in them than in the
GEMM before them. These versions use only arithmetic, comparisons and selects: every lane
evaluates every piece and the piece of its argument is selected, so a loop over them compiles
to packed SIMD instructions.

erf / erfc are Sun's fdlibm s_erf.c algorithm (the same rational approximations and break
points: |x| < 0.84375, < 1.25, < 1/0.35, < 6 / 28), with the two pieces of each half sharing one
rational evaluation through selected coefficients; exp is a range reduction by ln 2, a degree-13
Taylor polynomial on |r| <= ln2/2 (truncation below 1e-17) and a scaling by 2^k in two factors so
that subnormal results stay accurate. Evaluating every piece costs ~5 ns a value, more than
libm's first piece alone (the closed forms' arguments are mostly below 0.84375: all of them on
adults at the default theta), so verf_small gives that piece by itself and the kernels take
it for a chunk of CHUNK values when every |x| in it is below SMALL (the ReLU closed form's
short path is a series of its own, in _rkhs). Accuracy against libm (tests/features/test_vecmath.py):
erf within 1e-15 absolute, erfc and exp within a few ulp relative down to the subnormal range;
nan, +-inf and signed zeros as libm.

Compiled without fast-math flags ('nnan' / 'ninf' would let LLVM drop the nan and inf handling,
and 'contract' lets it fuse a multiply and an add wherever it likes: differently in a loop's
vector body and its scalar remainder, so a value would depend on its neighbours). The
multiply-adds of the polynomials are written as explicit fused multiply-adds instead (``fma``,
LLVM's llvm.fma: one rounding, the same instruction in every copy of the loop, a libm call on a
CPU without FMA, with the same result). The callers' kernels need ``error_model="numpy"`` too:
numba's default checks every division for a zero divisor, a branch that stops the
vectorisation (1/x^2 at x = 0 is computed, then selected away).

The coefficients are fdlibm's:
    Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
    Developed at SunPro, a Sun Microsystems, Inc. business.
    Permission to use, copy, modify, and distribute this software is freely granted, provided
    that this notice is preserved.

This module holds elementary functions only; the features that use them are in _rkhs.
"""

from __future__ import annotations

import math

from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["verf", "verfc", "vexp", "verf_small", "fma", "SMALL", "CHUNK", "VEC_FLAGS"]

#: no fast-math flag, not even "contract": with it LLVM may fuse the vector body and the scalar
#: remainder of a loop differently, and the short and full paths of a chunk differently, so a
#: feature would depend on its neighbours (a few ulps). The fused multiply-adds are explicit
#: (``fma``): the same operations in every copy of a loop, so the short path's bits are the
#: full path's.
_FM = False
#: the njit flags of a kernel that calls these functions: they are inlined into it (numba IR) and
#: compiled with the caller's flags
VEC_FLAGS = {"fastmath": _FM, "error_model": "numpy"}


@intrinsic
def _bits(typingctx, x):
    """The IEEE-754 bits of a float64 as an int64 (a bitcast, vectorisable)."""
    if x != types.float64:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _from_bits(typingctx, i):
    """The float64 whose IEEE-754 bits are the int64 i."""
    if not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@intrinsic
def fma(typingctx, a, b, c):
    """a * b + c rounded once, in float64 (float32 arguments are widened, exactly): llvm.fma
    vectorises to the FMA instruction and is IEEE fusedMultiplyAdd wherever it runs, so every
    copy of a loop gives the same bits."""
    if not all(isinstance(v, types.Float) for v in (a, b, c)):
        return None

    def codegen(context, builder, sig, args):
        d = ir.DoubleType()
        f = builder.module.declare_intrinsic("llvm.fma", [d], ir.FunctionType(d, [d, d, d]))
        wide = [context.cast(builder, v, t, types.float64) for v, t in zip(args, sig.args)]
        return builder.call(f, wide)
    return types.float64(a, b, c), codegen


# ----------------------------------------------------------------------------- exp

_LOG2E = 1.44269504088896338700e+00
_LN2HI = 6.93147180369123816490e-01     # 32 significant bits: k * _LN2HI is exact
_LN2LO = 1.90821492927058770002e-10
_ROUND = 6755399441055744.0             # 1.5 * 2^52: adding it rounds to an integer
_EXP_OVER = 7.09782712893383973096e+02  # exp(x) overflows above
_EXP_UNDER = -7.45133219101941108420e+02  # exp(x) rounds to 0 below
#: 1/12!, ..., 1/2!: the Taylor coefficients below the leading 1/13!
_EXP_TAYLOR = tuple(1.0 / math.factorial(j) for j in range(12, 1, -1))


@njit(inline="always", fastmath=_FM, error_model="numpy", cache=True)
def _exp_reduced(hi, lo, xc):
    """(p, k) with exp(hi + lo) = p 2^k: k = round((hi + lo) / ln 2) from xc (hi + lo, clamped
    by the caller to where the bits below hold), p the polynomial of the rest."""
    u = fma(xc, _LOG2E, _ROUND)
    k = _bits(u) - _bits(_ROUND)
    kf = u - _ROUND
    r = fma(-kf, _LN2HI, hi) + fma(-kf, _LN2LO, lo)   # k ln2hi is exact: the fma changes nothing
    p = 1.0 / 6227020800.0
    for c in _EXP_TAYLOR:
        p = fma(p, r, c)
    return 1.0 + fma(r, r * p, r), k


@njit(inline="always", fastmath=_FM, error_model="numpy", cache=True)
def _exp_sum(hi, lo):
    """exp(hi + lo), with hi - k ln2 formed before lo is added (exact when hi is a short number)."""
    x = hi + lo
    p, k = _exp_reduced(hi, lo, min(max(x, -746.0), 710.0))
    k1 = k >> 1                                # 2^k = 2^k1 2^(k - k1), both factors normal
    s1 = _from_bits((k1 + 1023) << 52)
    s2 = _from_bits((k - k1 + 1023) << 52)
    y = (p * s1) * s2
    y = 0.0 if x < _EXP_UNDER else y
    y = math.inf if x > _EXP_OVER else y
    return x if x != x else y                 # nan stays nan


@njit(inline="always", fastmath=_FM, error_model="numpy", cache=True)
def vexp(x):
    """exp(x), branch-free."""
    return _exp_sum(float(x), 0.0)


# ----------------------------------------------------------------------------- erf, erfc

_ERX = 8.45062911510467529297e-01
# |x| < 0.84375: erf(x) = x + x P(x^2)/Q(x^2); 0.84375 <= |x| < 1.25: erf = erx + P(s)/Q(s),
# s = |x| - 1 (fdlibm pp/qq and pa/qa, the first padded with zeros to the second's degree)
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05, 0.0, 0.0)
_QQ = (3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06, 0.0)
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)
_QA = (1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
# 1.25 <= |x| < 28: erfc(|x|) = exp(-z^2 - 0.5625) exp((z - |x|)(z + |x|) + R(s)/S(s)) / |x|,
# s = 1/x^2, z = |x| with its low 32 bits cleared (z^2 + 0.5625 exact); ra/sa below 1/0.35,
# rb/sb above (padded)
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
       -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
       -8.12874355063065934246e+01, -9.81432934416914548592e+00)
_SA = (1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
       6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
       6.57024977031928170135e+00, -6.04244152148580987438e-02)
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
       -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
       -4.83519191608651397019e+02, 0.0)
_SB = (3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
       3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
       -2.24409524465858183362e+01, 0.0)
_HIGH_MASK = -4294967296                      # ~0xffffffff: keeps the sign, exponent, 20 bits


@njit(inline="always", fastmath=_FM, error_model="numpy", cache=True)
def _horner(v, second, a, b):
    """sum_j c_j v^j with c = b if second else a (one table per lane, chosen by a select)."""
    p = b[len(b) - 1] if second else a[len(a) - 1]
    for j in range(len(a) - 2, -1, -1):
        p = fma(p, v, b[j] if second else a[j])
    return p


@njit(inline="always", fastmath=_FM, error_model="numpy", cache=True)
def _near(ax, x):
    """(y, mid): for |x| < 0.84375 y = P/Q of x^2 (erf = x + x y), else y = P/Q of |x| - 1."""
    mid = ax >= 0.84375
    v = ax - 1.0 if mid else x * x
    p = _horner(v, mid, _PP, _PA)
    q = fma(_horner(v, mid, _QQ, _QA), v, 1.0)
    return p / q, mid


@njit(inline="always", fastmath=_FM, error_model="numpy", cache=True)
def _tail(ax):
    """erfc(|x|) for 1.25 <= |x| < 28 (any value elsewhere: the caller selects it away)."""
    far = ax >= 1.0 / 0.35
    s = 1.0 / (ax * ax)
    r = _horner(s, far, _RA, _RB)
    q = fma(_horner(s, far, _SA, _SB), s, 1.0)
    z = _from_bits(_bits(ax) & _HIGH_MASK)
    return _exp_sum(-z * z - 0.5625, fma(z - ax, z + ax, r / q)) / ax


#: below this |x|, erf takes its first piece alone (verf_small; the ReLU closed form its series)
SMALL = 0.84375
#: values a kernel tests at once for all |x| < SMALL before taking the short path
CHUNK = 64


@njit(inline="always", fastmath=_FM, error_model="numpy", cache=True)
def _small_y(x):
    """P(x^2)/Q(x^2) of the first piece (erf = x + x y for |x| < 0.84375)."""
    z = x * x
    p = _PP[4]
    for j in range(3, -1, -1):
        p = fma(p, z, _PP[j])
    q = _QQ[4]
    for j in range(3, -1, -1):
        q = fma(q, z, _QQ[j])
    return p / fma(q, z, 1.0)


@njit(inline="always", fastmath=_FM, error_model="numpy", cache=True)
def verf_small(x):
    """erf(x) for |x| < SMALL (and nan), the first piece of verf alone: the arguments of the
    closed forms are mostly there, where a full verf evaluates every piece for nothing."""
    x = float(x)
    return fma(x, _small_y(x), x)


@njit(inline="always", fastmath=_FM, error_model="numpy", cache=True)
def verf(x):
    """erf(x), branch-free (fdlibm's approximations; nan -> nan, +-inf -> +-1)."""
    x = float(x)
    ax = abs(x)
    y, mid = _near(ax, x)
    sgn = -1.0 if x < 0.0 else 1.0
    e = fma(x, y, x)                           # nan lands here: every comparison is false
    e = sgn * (_ERX + y) if mid else e
    e = sgn * (1.0 - _tail(ax)) if ax >= 1.25 else e
    return sgn if ax >= 6.0 else e


@njit(inline="always", fastmath=_FM, error_model="numpy", cache=True)
def verfc(x):
    """erfc(x), branch-free (fdlibm's approximations; nan -> nan, +inf -> 0, -inf -> 2)."""
    x = float(x)
    ax = abs(x)
    y, mid = _near(ax, x)
    neg = x < 0.0
    e = 1.0 - fma(x, y, x) if x < 0.25 else 0.5 - fma(x, y, x - 0.5)  # nan: first form
    e = ((1.0 + (_ERX + y)) if neg else ((1.0 - _ERX) - y)) if mid else e
    t = _tail(ax)
    e = (2.0 - t if neg else t) if ax >= 1.25 else e
    e = 2.0 if neg and ax >= 6.0 else e
    return 0.0 if x >= 28.0 else e
