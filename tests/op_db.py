"""The op database: the one list every op must be on.

Each ``OpInfo`` names one op or variant and holds a callable ``fn(m, *tensors)`` written so that
the same code runs with ``m = ndgrad`` and ``m = torch``; ``samples`` lists the shapes of the
tensor arguments for each sample input (``()`` is a 0-d tensor). Inputs are float tensors drawn
from the op's ``domain``:

``real``      uniform in [-2, 2]
``positive``  uniform in [0.5, 2] (log, sqrt, fractional powers)
``nonzero``   magnitude in [0.5, 2], random sign (divisors, reciprocal)
``distinct``  all elements of all inputs distinct, at least ~0.25 apart and away from 0 and from
              the clamp bounds used below: no ties or kinks for abs/relu/max/min/clamp/where
``one_zero``  ``real`` with one exact zero per input (prod's zero branch)
``two_zeros`` ``real`` with two exact zeros per input, in the same reduced slice
``unit``      uniform in [-0.9, 0.9] (asin, acos, atanh, erfinv)
``prob``      uniform in [0.1, 0.9] (logit)
``above_one`` uniform in [1.2, 3] (acosh)

``differentiable`` is False for ops whose outputs never require grad (comparisons ...);
``double_backward`` says whether the gradient is itself differentiable (gradgrad tested).
``fd_eps``/``fd_atol`` are the finite-difference step and tolerance, raised only for casts to
float32/float16 (whose outputs cannot resolve a 1e-6 step).
Constant operands (index tensors, masks, Python scalars) are built inside ``fn``, with ``m``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class OpInfo:
    name: str
    fn: Callable
    samples: tuple
    domain: str = "real"
    differentiable: bool = True
    double_backward: bool = True
    fd_eps: float = 1e-6    # larger for ops whose output has less precision than float64
    fd_atol: float = 1e-6

    def __repr__(self) -> str:
        return f"OpInfo({self.name})"


CLAMP_LO, CLAMP_HI = -0.4, 0.2


def make_inputs(op: OpInfo, shapes: tuple, rng: np.random.Generator) -> list:
    """Float64 arrays for one sample of ``op`` (one per shape), drawn from ``op.domain``."""
    sizes = [int(np.prod(s)) for s in shapes]
    if op.domain == "distinct":
        n = sum(sizes)
        # Grid 0.07 + 0.3 k, jittered by < 0.02: distinct, off zero and off the clamp bounds.
        flat = (rng.permutation(n) - n // 2) * 0.3 + 0.07 + rng.uniform(-0.02, 0.02, n)
        out, start = [], 0
        for s, k in zip(shapes, sizes):
            out.append(flat[start:start + k].reshape(s))
            start += k
        return out
    out = []
    for s, k in zip(shapes, sizes):
        if op.domain == "positive":
            a = rng.uniform(0.5, 2.0, k)
        elif op.domain == "unit":
            a = rng.uniform(-0.9, 0.9, k)
        elif op.domain == "prob":
            a = rng.uniform(0.1, 0.9, k)
        elif op.domain == "above_one":
            a = rng.uniform(1.2, 3.0, k)
        elif op.domain == "nonzero":
            a = rng.uniform(0.5, 2.0, k) * rng.choice([-1.0, 1.0], k)
        else:
            a = rng.uniform(-2.0, 2.0, k)
        if op.domain == "one_zero":
            a[rng.integers(k)] = 0.0
        elif op.domain == "two_zeros":
            a[:2] = 0.0
        out.append(a.reshape(s))
    return out


# ---------------------------------------------------------------------------- sample shapes
UNARY = (((2, 3),), ((),), ((4,),))
BINARY = (((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((2, 3), ()), ((), ()),
          ((3,), (2, 1)), ((), (2, 2)))
M23 = (((2, 3),),)
M234 = (((2, 3, 2),),)


def _op(name, fn, samples, domain="real", differentiable=True, double_backward=None,
        fd_eps=1e-6, fd_atol=1e-6):
    if double_backward is None:
        double_backward = differentiable
    return OpInfo(name, fn, samples, domain, differentiable, double_backward, fd_eps, fd_atol)


F32_FD = dict(fd_eps=1e-3, fd_atol=1e-3)


def _MASK23(m):    # ---- reduce (issue 8): a fixed mask for (2, 3) samples
    return m.tensor([[True, False, True], [True, True, False]])
# ---- decompositions (issue 8) ----
def _gauge_svd(r):
    u, s, vh = r
    return u * u, s, vh * vh


def _gauge_eig(r):
    return r[0], r[1] * r[1]
# ---- end decompositions ----


def _setitem(index, value=None):
    """``y = x.clone(); y[index(m, x)] = v`` (v the second tensor, or the scalar ``value``)."""
    def fn(m, x, *v):
        y = x.clone()
        y[index(m, x)] = v[0] if v else value
        return y
    return fn


OPS = [
    # ------------------------------------------------------------------ add / sub
    _op("add", lambda m, x, y: m.add(x, y), BINARY),
    _op("add_alpha", lambda m, x, y: m.add(x, y, alpha=2), BINARY[:3]),
    _op("add_operator", lambda m, x, y: x + y, BINARY),
    _op("add_method", lambda m, x, y: x.add(y), BINARY[:2]),
    _op("add_scalar", lambda m, x: x + 2.5, UNARY),
    _op("add_int_scalar", lambda m, x: x + 2, UNARY),
    _op("add_scalar_alpha", lambda m, x: m.add(x, 2.5, alpha=3), UNARY[:2]),
    _op("radd_scalar", lambda m, x: 2.5 + x, UNARY),
    _op("sub", lambda m, x, y: m.sub(x, y), BINARY),
    _op("sub_alpha", lambda m, x, y: m.sub(x, y, alpha=0.5), BINARY[:3]),
    _op("sub_operator", lambda m, x, y: x - y, BINARY),
    _op("sub_scalar", lambda m, x: x - 1.5, UNARY),
    _op("rsub_scalar", lambda m, x: 2 - x, UNARY),
    _op("rsub_float_scalar", lambda m, x: 0.5 - x, UNARY[:2]),
    # ------------------------------------------------------------------ mul / div
    _op("mul", lambda m, x, y: m.mul(x, y), BINARY),
    _op("mul_operator", lambda m, x, y: x * y, BINARY),
    _op("mul_self", lambda m, x: x * x, UNARY),
    _op("mul_scalar", lambda m, x: x * 2, UNARY),
    _op("mul_float_scalar", lambda m, x: m.mul(x, -1.5), UNARY),
    _op("rmul_scalar", lambda m, x: 3 * x, UNARY),
    _op("div", lambda m, x, y: m.div(x, y), BINARY, "nonzero"),
    _op("div_operator", lambda m, x, y: x / y, BINARY, "nonzero"),
    _op("div_method", lambda m, x, y: x.div(y), BINARY[:2], "nonzero"),
    _op("div_scalar", lambda m, x: x / 2, UNARY),
    _op("rdiv_scalar", lambda m, x: 2 / x, UNARY, "nonzero"),
    _op("rdiv_float_scalar", lambda m, x: 1.5 / x, UNARY[:2], "nonzero"),
    _op("div_floor", lambda m, x, y: m.div(x, y, rounding_mode="floor"), BINARY[:3], "nonzero"),
    _op("div_trunc", lambda m, x, y: m.div(x, y, rounding_mode="trunc"), BINARY[:3], "nonzero"),
    _op("div_floor_scalar", lambda m, x: m.div(x, 0.7, rounding_mode="floor"), UNARY[:2]),
    # floor_divide has no derivative: PyTorch records a node whose backward raises.
    _op("floordiv_operator", lambda m, x, y: x // y, BINARY[:3], "nonzero", differentiable=False),
    _op("floordiv_scalar", lambda m, x: x // 0.7, UNARY[:2], differentiable=False),
    _op("rfloordiv_scalar", lambda m, x: 2 // x, UNARY[:2], "nonzero", differentiable=False),
    # ------------------------------------------------------------------ pow
    _op("pow_scalar_2", lambda m, x: x ** 2, UNARY),
    _op("pow_scalar_3", lambda m, x: m.pow(x, 3), UNARY),
    _op("pow_scalar_0", lambda m, x: x ** 0, UNARY[:2]),
    _op("pow_scalar_1", lambda m, x: x ** 1, UNARY[:2]),
    _op("pow_scalar_half", lambda m, x: x ** 0.5, UNARY, "positive"),
    _op("pow_scalar_neg", lambda m, x: x ** -1, UNARY, "nonzero"),
    _op("pow_scalar_float", lambda m, x: x.pow(-1.5), UNARY, "positive"),
    _op("pow_tensor", lambda m, x, y: m.pow(x, y), BINARY, "positive"),
    _op("pow_operator", lambda m, x, y: x ** y, BINARY, "positive"),
    _op("rpow_scalar", lambda m, x: 2 ** x, UNARY),
    _op("rpow_float_scalar", lambda m, x: 0.5 ** x, UNARY[:2]),
    _op("pow_scalar_base", lambda m, x: m.pow(2.5, x), UNARY[:2]),
    # ------------------------------------------------------------------ unary math
    _op("neg", lambda m, x: m.neg(x), UNARY),
    _op("neg_operator", lambda m, x: -x, UNARY),
    _op("exp", lambda m, x: m.exp(x), UNARY),
    _op("exp_method", lambda m, x: x.exp(), UNARY[:1]),
    _op("log", lambda m, x: m.log(x), UNARY, "positive"),
    _op("sin", lambda m, x: m.sin(x), UNARY),
    _op("cos", lambda m, x: m.cos(x), UNARY),
    _op("tanh", lambda m, x: m.tanh(x), UNARY),
    _op("tanh_method", lambda m, x: x.tanh(), UNARY[:1]),
    _op("sigmoid", lambda m, x: m.sigmoid(x), UNARY),
    _op("sigmoid_method", lambda m, x: x.sigmoid(), UNARY[:1]),
    _op("relu", lambda m, x: m.relu(x), UNARY, "distinct"),
    _op("relu_method", lambda m, x: x.relu(), UNARY[:1], "distinct"),
    _op("sqrt", lambda m, x: m.sqrt(x), UNARY, "positive"),
    _op("abs", lambda m, x: m.abs(x), UNARY, "distinct"),
    _op("abs_operator", lambda m, x: abs(x), UNARY[:1], "distinct"),
    _op("reciprocal", lambda m, x: m.reciprocal(x), UNARY, "nonzero"),
    _op("sign", lambda m, x: m.sign(x), UNARY, "distinct"),
    # ------------------------------------------------------------------ unary math (ops/unary.py)
    _op("exp2", lambda m, x: m.exp2(x), UNARY),
    _op("expm1", lambda m, x: m.expm1(x), UNARY),
    _op("log2", lambda m, x: m.log2(x), UNARY, "positive"),
    _op("log10", lambda m, x: m.log10(x), UNARY, "positive"),
    _op("log1p", lambda m, x: m.log1p(x), UNARY, "positive"),
    _op("rsqrt", lambda m, x: m.rsqrt(x), UNARY, "positive"),
    _op("square", lambda m, x: m.square(x), UNARY),
    _op("tan", lambda m, x: m.tan(x), UNARY, "unit"),
    _op("asin", lambda m, x: m.asin(x), UNARY, "unit"),
    _op("acos", lambda m, x: m.acos(x), UNARY, "unit"),
    _op("atan", lambda m, x: m.atan(x), UNARY),
    _op("sinh", lambda m, x: m.sinh(x), UNARY),
    _op("cosh", lambda m, x: m.cosh(x), UNARY),
    _op("asinh", lambda m, x: m.asinh(x), UNARY),
    _op("acosh", lambda m, x: m.acosh(x), UNARY, "above_one"),
    _op("atanh", lambda m, x: m.atanh(x), UNARY, "unit"),
    _op("erf", lambda m, x: m.erf(x), UNARY),
    _op("erfc", lambda m, x: m.erfc(x), UNARY),
    _op("erfinv", lambda m, x: m.erfinv(x), UNARY, "unit"),
    _op("lgamma", lambda m, x: m.lgamma(x), UNARY, "positive"),
    _op("digamma", lambda m, x: m.digamma(x), UNARY, "positive"),
    _op("floor", lambda m, x: m.floor(x), UNARY, "distinct"),
    _op("ceil", lambda m, x: m.ceil(x), UNARY, "distinct"),
    _op("trunc", lambda m, x: m.trunc(x), UNARY, "distinct"),
    _op("frac", lambda m, x: m.frac(x), UNARY, "distinct"),
    _op("round", lambda m, x: m.round(x), UNARY, "distinct"),
    _op("round_decimals", lambda m, x: m.round(x, decimals=1), UNARY, "distinct"),
    _op("round_neg_decimals", lambda m, x: m.round(x * 10, decimals=-1), UNARY[:1], "distinct"),
    _op("deg2rad", lambda m, x: m.deg2rad(x), UNARY),
    _op("rad2deg", lambda m, x: m.rad2deg(x), UNARY),
    _op("logit", lambda m, x: m.logit(x), UNARY, "prob"),
    _op("logit_eps", lambda m, x: m.logit(x, eps=0.25), UNARY, "prob"),
    _op("sinc", lambda m, x: m.sinc(x), UNARY),
    _op("angle", lambda m, x: m.angle(x), UNARY, "nonzero"),
    _op("positive", lambda m, x: m.positive(x) * 2, UNARY),
    _op("signbit", lambda m, x: m.signbit(x), UNARY, "nonzero", differentiable=False),
    _op("nan_to_num", lambda m, x: m.nan_to_num(x), UNARY),
    _op("nan_to_num_args", lambda m, x: m.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0),
        UNARY),
    _op("tan_method", lambda m, x: x.tan(), UNARY[:1], "unit"),
    _op("erf_method", lambda m, x: x.erf(), UNARY[:1]),
    _op("round_method", lambda m, x: x.round(decimals=2), UNARY[:1], "distinct"),
    _op("logit_method", lambda m, x: x.logit(0.2), UNARY[:1], "prob"),
    _op("nan_to_num_method", lambda m, x: x.nan_to_num(posinf=1.0), UNARY[:1]),
    # ------------------------------------------------------------------ clamp
    _op("clamp", lambda m, x: m.clamp(x, CLAMP_LO, CLAMP_HI), UNARY, "distinct"),
    _op("clamp_min_only", lambda m, x: m.clamp(x, min=CLAMP_LO), UNARY, "distinct"),
    _op("clamp_max_only", lambda m, x: m.clamp(x, max=CLAMP_HI), UNARY, "distinct"),
    _op("clamp_method", lambda m, x: x.clamp(CLAMP_LO, CLAMP_HI), UNARY[:1], "distinct"),
    _op("clip_method", lambda m, x: x.clip(CLAMP_LO, CLAMP_HI), UNARY[:1], "distinct"),
    _op("clamp_min_method", lambda m, x: x.clamp_min(CLAMP_LO), UNARY, "distinct"),
    _op("clamp_max_method", lambda m, x: x.clamp_max(CLAMP_HI), UNARY, "distinct"),
    _op("clamp_tensor", lambda m, x, lo, hi: m.clamp(x, lo, hi),
        (((2, 3), (2, 3), (2, 3)), ((2, 3), (3,), ()), ((), (), ())), "distinct"),
    _op("clamp_tensor_min_only", lambda m, x, lo: m.clamp(x, min=lo),
        (((2, 3), (2, 3)), ((2, 3), (3,))), "distinct"),
    _op("clamp_tensor_max_only", lambda m, x, hi: m.clamp(x, max=hi),
        (((2, 3), (2, 3)), ((2, 3), ())), "distinct"),
    _op("clamp_min_tensor_method", lambda m, x, lo: x.clamp_min(lo),
        (((2, 3), (2, 3)), ((2, 3), (3,))), "distinct"),
    _op("clamp_max_tensor_method", lambda m, x, hi: x.clamp_max(hi),
        (((2, 3), (2, 3)), ((2, 3), ())), "distinct"),
    # ------------------------------------------------------------------ where / max / min
    _op("where", lambda m, x, y: m.where(x > 0, x, y), BINARY, "distinct"),
    _op("where_cond_other", lambda m, x, y: m.where(y > 0, x, y), BINARY[:3], "distinct"),
    _op("where_scalar_other", lambda m, x: m.where(x > 0, x, 0.5), UNARY, "distinct"),
    _op("where_scalar_input", lambda m, x: m.where(x > 0, -1.5, x), UNARY[:2], "distinct"),
    _op("where_method", lambda m, x, y: x.where(x > 0, y), BINARY[:3], "distinct"),
    _op("maximum", lambda m, x, y: m.maximum(x, y), BINARY, "distinct"),
    _op("minimum", lambda m, x, y: m.minimum(x, y), BINARY, "distinct"),
    _op("max_binary", lambda m, x, y: m.max(x, y), BINARY[:3], "distinct"),
    _op("min_binary", lambda m, x, y: m.min(x, y), BINARY[:3], "distinct"),
    _op("maximum_method", lambda m, x, y: x.maximum(y), BINARY[:2], "distinct"),
    # ------------------------------------------------------------------ comparisons
    *[_op(f"{cmp}", (lambda c: lambda m, x, y: getattr(m, c)(x, y))(cmp), BINARY[:4],
          "distinct", differentiable=False) for cmp in ("eq", "ne", "lt", "le", "gt", "ge")],
    *[_op(f"{cmp}_scalar", (lambda c: lambda m, x: getattr(x, c)(0.37))(cmp), UNARY[:2],
          "distinct", differentiable=False) for cmp in ("eq", "ne", "lt", "le", "gt", "ge")],
    _op("eq_broadcast_row", lambda m, x: x == x[0], M23, differentiable=False),
    _op("ne_operator", lambda m, x: x != x[:, :1], M23, differentiable=False),
    _op("lt_operator", lambda m, x, y: x < y, BINARY[:3], "distinct", differentiable=False),
    _op("le_operator", lambda m, x: x <= x[0], M23, differentiable=False),
    _op("gt_operator", lambda m, x: x > 0.5, UNARY, differentiable=False),
    _op("ge_operator_reflected", lambda m, x: 0.5 >= x, UNARY, differentiable=False),
    _op("logical_and", lambda m, x, y: m.logical_and(x > 0, y > 0), BINARY[:3], "distinct",
        differentiable=False),
    _op("logical_or", lambda m, x, y: m.logical_or(x > 0, y > 0), BINARY[:3], "distinct",
        differentiable=False),
    _op("logical_not", lambda m, x: m.logical_not(x > 0), UNARY[:2], "distinct",
        differentiable=False),
    # ------------------------------------------------------------------ reductions
    _op("sum", lambda m, x: x.sum(), UNARY + M234),
    _op("sum_function", lambda m, x: m.sum(x), UNARY[:1]),
    _op("sum_dim", lambda m, x: x.sum(1), M23 + M234),
    _op("sum_neg_dim", lambda m, x: x.sum(-1), M23 + UNARY[2:]),
    _op("sum_keepdim", lambda m, x: x.sum(1, keepdim=True), M23 + M234),
    _op("sum_neg_dim_keepdim", lambda m, x: m.sum(x, -2, keepdim=True), M23 + M234),
    _op("sum_dims", lambda m, x: x.sum((0, -1)), M23 + M234),
    _op("sum_dims_keepdim", lambda m, x: x.sum(dim=(0, 2), keepdim=True), M234),
    _op("sum_0d_dim", lambda m, x: x.sum(0), (((),),)),
    _op("mean", lambda m, x: x.mean(), UNARY + M234),
    _op("mean_function", lambda m, x: m.mean(x), UNARY[:1]),
    _op("mean_dim", lambda m, x: x.mean(1), M23 + M234),
    _op("mean_keepdim", lambda m, x: x.mean(-1, keepdim=True), M23 + M234),
    _op("mean_dims", lambda m, x: m.mean(x, (0, 2)), M234),
    _op("mean_dims_keepdim", lambda m, x: x.mean((-1, 0), keepdim=True), M23 + M234),
    _op("prod", lambda m, x: x.prod(), UNARY + M234),
    _op("prod_one_zero", lambda m, x: x.prod(), M23 + UNARY[2:], "one_zero"),
    _op("prod_two_zeros", lambda m, x: x.prod(), M23 + UNARY[2:], "two_zeros"),
    _op("prod_dim", lambda m, x: x.prod(1), M23 + M234),
    _op("prod_function", lambda m, x: m.prod(x, 0), M23),
    _op("prod_keepdim", lambda m, x: x.prod(-1, keepdim=True), M23 + M234),
    _op("prod_dim_one_zero", lambda m, x: x.prod(1), M23, "one_zero"),
    _op("prod_dim_two_zeros", lambda m, x: x.prod(1, keepdim=True), M23, "two_zeros"),
    _op("prod_0d_dim", lambda m, x: x.prod(0), (((),),)),
    _op("max", lambda m, x: x.max(), UNARY + M234, "distinct"),
    _op("max_function", lambda m, x: m.max(x), UNARY[:1], "distinct"),
    _op("max_dim", lambda m, x: x.max(1), M23 + M234, "distinct"),
    _op("max_dim_function", lambda m, x: m.max(x, 0), M23, "distinct"),
    _op("max_neg_dim_keepdim", lambda m, x: x.max(-1, keepdim=True), M23 + M234, "distinct"),
    _op("max_dim_values", lambda m, x: x.max(dim=0).values, M23, "distinct"),
    _op("max_0d_dim", lambda m, x: x.max(0), (((),),), "distinct"),
    _op("min", lambda m, x: x.min(), UNARY + M234, "distinct"),
    _op("min_dim", lambda m, x: x.min(1), M23 + M234, "distinct"),
    _op("min_dim_keepdim", lambda m, x: m.min(x, -2, keepdim=True), M23 + M234, "distinct"),
    _op("argmax", lambda m, x: x.argmax(), M23, "distinct", differentiable=False),
    _op("argmax_dim", lambda m, x: m.argmax(x, 1), M23, "distinct", differentiable=False),
    _op("argmin_dim_keepdim", lambda m, x: x.argmin(-1, keepdim=True), M23, "distinct",
        differentiable=False),
    # ------------------------------------------------------------------ matrix products
    _op("matmul", lambda m, x, y: m.matmul(x, y),
        (((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 2)), ((2, 2, 3), (3, 2)),
         ((2, 2, 3), (3,)), ((2, 3), (2, 3, 2)), ((3,), (2, 3, 2)), ((2, 2, 3), (2, 3, 2)),
         ((2, 1, 2, 3), (2, 3, 1)), ((1, 2, 3), (2, 3, 2)), ((2, 2, 3), (1, 3, 2)),
         ((1, 2, 3), (1, 3, 2)), ((2, 1, 3), (3,)), ((1, 3), (2, 3, 2)))),
    _op("matmul_operator", lambda m, x, y: x @ y,
        (((3,), (3,)), ((2, 3), (3, 2)), ((2, 2, 3), (3, 2)), ((2, 2, 3), (2, 3, 2)),
         ((3,), (2, 3, 2)), ((2, 3), (2, 3, 2)))),
    _op("matmul_method", lambda m, x, y: x.matmul(y), (((2, 3), (3,)), ((2, 1, 3), (2, 3, 1)))),
    _op("matmul_transposed", lambda m, x, y: x.mT @ y,
        (((2, 3, 2), (3, 2)), ((3, 2), (2, 3, 2)), ((2, 3, 2), (2, 3, 1)))),
    _op("mm", lambda m, x, y: m.mm(x, y), (((2, 3), (3, 2)), ((1, 3), (3, 1)))),
    _op("mm_method", lambda m, x, y: x.mm(y), (((2, 3), (3, 4)),)),
    _op("bmm", lambda m, x, y: m.bmm(x, y), (((2, 2, 3), (2, 3, 2)), ((1, 2, 3), (1, 3, 1)))),
    _op("mv", lambda m, x, y: m.mv(x, y), (((2, 3), (3,)),)),
    _op("dot", lambda m, x, y: m.dot(x, y), (((3,), (3,)), ((1,), (1,)))),
    # ------------------------------------------------------------------ norms
    _op("norm", lambda m, x: m.norm(x), UNARY + M234),
    _op("norm_method_dim", lambda m, x: x.norm(dim=1), M23 + M234),
    _op("norm_p1", lambda m, x: m.norm(x, 1), UNARY, "distinct"),
    _op("norm_p3_dims_keepdim", lambda m, x: x.norm(3, (0, -1), keepdim=True), M23 + M234),
    _op("norm_p_half", lambda m, x: m.norm(x, 0.5, -1), M23 + UNARY[2:], "nonzero"),
    _op("norm_p_1_5", lambda m, x: m.norm(x, 1.5, 0), M23, "nonzero"),
    _op("norm_p_neg", lambda m, x: m.norm(x, -2, 1), M23, "nonzero"),
    _op("norm_inf", lambda m, x: m.norm(x, float("inf")), UNARY, "distinct"),
    _op("norm_neg_inf_dim", lambda m, x: x.norm(-float("inf"), 1), M23 + M234, "distinct"),
    _op("norm_p0", lambda m, x: m.norm(x, 0, 1), M23),
    _op("norm_fro_dims", lambda m, x: m.norm(x, "fro", (1, 2)), M234),
    _op("norm_0d_dim", lambda m, x: m.norm(x, 2, 0), (((),),), "nonzero"),
    # ------------------------------------------------------------------ triangles
    _op("triu", lambda m, x: m.triu(x), M23 + M234 + (((3, 2),),)),
    _op("triu_diagonal", lambda m, x: x.triu(1), M23 + M234),
    _op("triu_neg_diagonal", lambda m, x: m.triu(x, diagonal=-1), (((3, 2),), ((2, 2, 3),))),
    _op("tril", lambda m, x: m.tril(x), M23 + M234),
    _op("tril_diagonal", lambda m, x: x.tril(-1), M23 + (((3, 2),),)),
    _op("tril_transposed", lambda m, x: x.mT.tril(1), M23 + M234),
    _op("triu_inplace", lambda m, x: (x * 1).triu_(1), M23 + M234),
    _op("tril_inplace", lambda m, x: x.clone().tril_(), M23),
    # ------------------------------------------------------------------ views and reshapes
    _op("reshape", lambda m, x: x.reshape(3, 2), M23),
    _op("reshape_infer", lambda m, x: m.reshape(x, (-1,)), UNARY + M234),
    _op("reshape_0d", lambda m, x: x.reshape(()), (((1, 1),), ((),))),
    _op("reshape_copy", lambda m, x: x.t().reshape(6), M23),
    _op("view", lambda m, x: x.view(3, 2), M23),
    _op("view_infer", lambda m, x: x.view(-1, 2), M23 + M234),
    _op("view_tuple", lambda m, x: x.view((2, 1, 3)), M23),
    _op("view_as", lambda m, x, y: x.view_as(y), (((2, 3), (3, 2)),)),
    _op("reshape_as", lambda m, x, y: x.reshape_as(y), (((2, 3), (6,)),)),
    _op("transpose", lambda m, x: x.transpose(0, 1), M23 + M234),
    _op("transpose_neg", lambda m, x: m.transpose(x, -1, 0), M23 + M234),
    _op("transpose_0d", lambda m, x: x.transpose(0, -1), (((),),)),
    _op("swapaxes", lambda m, x: x.swapaxes(0, 2), M234),
    _op("t", lambda m, x: x.t(), M23 + UNARY[1:]),
    _op("t_function", lambda m, x: m.t(x), M23),
    _op("T", lambda m, x: x.T, M23 + (((1, 3),),)),
    _op("mT", lambda m, x: x.mT, M23 + M234),
    _op("permute", lambda m, x: x.permute(2, 0, 1), M234),
    _op("permute_tuple_neg", lambda m, x: m.permute(x, (-1, 0)), M23),
    _op("permute_0d", lambda m, x: x.permute(()), (((),),)),
    _op("movedim", lambda m, x: x.movedim(0, -1), M23 + M234),
    _op("movedim_multi", lambda m, x: m.movedim(x, (0, 1), (2, 0)), M234),
    _op("expand", lambda m, x: x.expand(2, 3), (((1, 3),), ((3,),), ((),))),
    _op("expand_keep", lambda m, x: x.expand(-1, 3), (((2, 1),),)),
    _op("expand_new_dims", lambda m, x: x.expand(2, 2, 3), (((2, 1, 3),), ((1, 3),))),
    _op("expand_tuple", lambda m, x: x.expand((3, 2)), (((1, 2),),)),
    _op("expand_as", lambda m, x, y: x.expand_as(y), (((1, 3), (2, 3)),)),
    _op("squeeze", lambda m, x: x.squeeze(), (((1, 3, 1),), ((1,),), ((),), ((2, 3),))),
    _op("squeeze_dim", lambda m, x: x.squeeze(0), (((1, 3),), ((2, 3),), ((),))),
    _op("squeeze_neg_dim", lambda m, x: m.squeeze(x, -1), (((2, 1),), ((2, 3),))),
    _op("squeeze_dims", lambda m, x: x.squeeze((0, 2)), (((1, 3, 1),), ((1, 3, 2),))),
    _op("unsqueeze", lambda m, x: x.unsqueeze(0), UNARY),
    _op("unsqueeze_neg", lambda m, x: m.unsqueeze(x, -1), UNARY),
    _op("unsqueeze_middle", lambda m, x: x.unsqueeze(1), M23),
    _op("flatten", lambda m, x: x.flatten(), UNARY + M234),
    _op("flatten_start", lambda m, x: m.flatten(x, 1), M23 + M234),
    _op("flatten_range", lambda m, x: x.flatten(0, 1), M234),
    _op("flatten_same_dim", lambda m, x: x.flatten(1, 1), M23),
    _op("flatten_non_contiguous", lambda m, x: x.t().flatten(), M23),
    _op("select", lambda m, x: x.select(1, -1), M23 + M234),
    _op("select_function", lambda m, x: m.select(x, 0, 1), M23 + UNARY[2:]),
    _op("narrow", lambda m, x: x.narrow(1, 1, 2), M23 + M234),
    _op("narrow_neg", lambda m, x: m.narrow(x, -1, 0, 1), M23 + UNARY[2:]),
    _op("unbind", lambda m, x: x.unbind(0), M23 + UNARY[2:]),
    _op("unbind_neg", lambda m, x: m.unbind(x, -1), M23 + M234),
    _op("split", lambda m, x: x.split(2, 1), M23 + M234),
    _op("split_uneven", lambda m, x: m.split(x, 3, 0), UNARY[2:]),
    _op("split_sizes", lambda m, x: x.split([1, 2], -1), M23),
    _op("chunk", lambda m, x: x.chunk(2, 0), M23 + UNARY[2:]),
    _op("chunk_neg", lambda m, x: m.chunk(x, 3, -1), M23),
    # ------------------------------------------------------------------ cat / stack
    _op("cat", lambda m, x, y: m.cat([x, y]), (((2, 3), (1, 3)), ((2,), (3,)))),
    _op("cat_dim", lambda m, x, y: m.cat((x, y), 1), (((2, 3), (2, 1)), ((2, 1, 2), (2, 2, 2)))),
    _op("cat_neg_dim", lambda m, x, y, z: m.cat([x, y, z], -1),
        (((2, 1), (2, 3), (2, 2)), ((1,), (2,), (1,)))),
    _op("cat_single", lambda m, x: m.cat([x], 0), M23),
    _op("stack", lambda m, x, y: m.stack([x, y]), (((2, 3), (2, 3)), ((), ()))),
    _op("stack_neg_dim", lambda m, x, y: m.stack((x, y), -1), (((2, 3), (2, 3)), ((3,), (3,)))),
    _op("stack_dim", lambda m, x, y, z: m.stack([x, y, z], 1), (((2,), (2,), (2,)),)),
    # ------------------------------------------------------------------ indexing
    _op("getitem_int", lambda m, x: x[1], M23 + UNARY[2:]),
    _op("getitem_neg_int", lambda m, x: x[-1], M23),
    _op("getitem_ints", lambda m, x: x[0, -1], M23),
    _op("getitem_slice", lambda m, x: x[1:], M23 + UNARY[2:]),
    _op("getitem_step", lambda m, x: x[::2], UNARY[2:] + M234),
    _op("getitem_slices", lambda m, x: x[:, ::2], M23 + M234),
    _op("getitem_slice_int", lambda m, x: x[1:, 0], M23 + M234),
    _op("getitem_full_slice", lambda m, x: x[:], M23),
    _op("getitem_none", lambda m, x: x[None], UNARY),
    _op("getitem_none_middle", lambda m, x: x[:, None, 1:], M23),
    _op("getitem_ellipsis", lambda m, x: x[..., 1], M23 + M234),
    _op("getitem_ellipsis_only", lambda m, x: x[...], M23),
    _op("getitem_ellipsis_none", lambda m, x: x[None, ..., 0], M234),
    _op("getitem_list", lambda m, x: x[[0, 1, 1]], M23),
    _op("getitem_lists", lambda m, x: x[[1, 0], [2, 2]], M23),
    _op("getitem_int_list", lambda m, x: x[1, [0, 2, 0]], M23),
    _op("getitem_slice_list", lambda m, x: x[:, [2, 0]], M23 + M234),
    _op("getitem_ellipsis_list", lambda m, x: x[..., [1, 0]], M234),
    _op("getitem_tensor", lambda m, x: x[m.tensor([1, 0, 1])], M23 + UNARY[2:]),
    _op("getitem_tensor_2d", lambda m, x: x[m.tensor([[0, 1], [1, 1]])], M23),
    _op("getitem_tensor_0d", lambda m, x: x[m.tensor(1)], M23),
    _op("getitem_tensor_pair", lambda m, x: x[m.tensor([0, 1]), m.tensor([2, 0])], M23),
    _op("getitem_mask", lambda m, x: x[x > 0], M23 + M234, "distinct"),
    _op("getitem_mask_row", lambda m, x: x[m.tensor([True, False])], M23),
    _op("getitem_mask_col", lambda m, x: x[:, m.tensor([True, False, True])], M23),
    _op("getitem_mask_list", lambda m, x: x[[False, True]], M23),
    # ------------------------------------------------------------------ index_put / setitem
    _op("setitem_int", _setitem(lambda m, x: 0), (((3, 4), (4,)), ((3, 4), ()))),
    _op("setitem_slice", _setitem(lambda m, x: (slice(None), slice(1, 3))),
        (((3, 4), (3, 2)), ((3, 4), (2,)))),
    _op("setitem_step", _setitem(lambda m, x: (slice(1, None), slice(None, None, 2))),
        (((3, 4), (2, 2)),)),
    _op("setitem_scalar", _setitem(lambda m, x: 1, 2.5), (((3, 4),),)),
    _op("setitem_tensor", _setitem(lambda m, x: m.tensor([0, 2])),
        (((3, 4), (2, 4)), ((3, 4), (4,)))),
    _op("setitem_tensor_pair", _setitem(lambda m, x: (m.tensor([0, 2]), m.tensor([1, 3]))),
        (((3, 4), (2,)),)),
    _op("setitem_list", _setitem(lambda m, x: [2, 0]), (((3, 4), (2, 4)),)),
    _op("setitem_mask_scalar", _setitem(lambda m, x: x > 0, 0.5), (((3, 4),),), "distinct"),
    _op("setitem_mask_0d", _setitem(lambda m, x: x > 0), (((3, 4), ()),), "distinct"),
    _op("index_put", lambda m, x, v: x.clone().index_put((m.tensor([1, 0]),), v),
        (((3, 4), (2, 4)), ((3, 4), ()))),
    _op("index_put_accumulate",
        lambda m, x, v: x.index_put((m.tensor([1, 1]), m.tensor([0, 0])), v, accumulate=True),
        (((3, 4), (2,)), ((3, 4), ()))),
    # ------------------------------------------------------------------ var / std / amax
    _op("var", lambda m, x: x.var(), UNARY[::2] + M234),
    _op("var_dim", lambda m, x: m.var(x, 1), M23 + M234),
    _op("var_correction0_keepdim", lambda m, x: x.var(-1, keepdim=True, correction=0), M23),
    _op("var_unbiased_positional", lambda m, x: x.var(1, False, True), M23),
    _op("std", lambda m, x: x.std(), UNARY[::2]),
    _op("std_dim", lambda m, x: m.std(x, (0, 2)), M234),
    _op("std_correction0_keepdim", lambda m, x: x.std(-1, keepdim=True, correction=0), M23),
    _op("amax", lambda m, x: x.amax(), UNARY + M234, "distinct"),
    _op("amax_dim", lambda m, x: m.amax(x, 1), M23 + M234, "distinct"),
    _op("amax_dims_keepdim", lambda m, x: x.amax((0, -1), keepdim=True), M234, "distinct"),
    _op("amin_dim", lambda m, x: m.amin(x, -1), M23 + M234, "distinct"),
    # ------------------------------------------------------------------ softmax / scans
    _op("softmax", lambda m, x: m.softmax(x, 1), M23 + M234),
    _op("softmax_method_neg_dim", lambda m, x: x.softmax(-1), UNARY),
    _op("softmax_dtype", lambda m, x: x.float().softmax(0, dtype=m.float64), M23, **F32_FD),
    _op("log_softmax", lambda m, x: m.log_softmax(x, 1), M23 + M234),
    _op("log_softmax_method_neg_dim", lambda m, x: x.log_softmax(-1), UNARY),
    _op("logsumexp", lambda m, x: m.logsumexp(x, 1), M23 + M234),
    _op("logsumexp_keepdim_neg", lambda m, x: x.logsumexp(-1, keepdim=True), UNARY),
    _op("logsumexp_dims", lambda m, x: x.logsumexp((0, 2)), M234),
    _op("cumsum", lambda m, x: m.cumsum(x, 1), M23 + M234),
    _op("cumsum_method_neg_dim", lambda m, x: x.cumsum(-1), UNARY),
    # ------------------------------------------------------------------ gather / masked_fill
    _op("gather", lambda m, x: m.gather(x, 1, m.tensor([[0, 0, 2], [1, 0, 1]])), M23),
    _op("index_select", lambda m, x: m.index_select(x, 1, m.tensor([2, 0, 2])), M23 + M234),
    _op("index_select_neg_dim", lambda m, x: x.index_select(-1, m.tensor([1])), M23),
    _op("index_select_int32", lambda m, x: x.index_select(0, m.tensor([1, 1], dtype=m.int32)),
        M23),
    _op("gather_dim0", lambda m, x: x.gather(0, m.tensor([[1, 0, 1]])), M23),
    _op("gather_neg_dim", lambda m, x: x.gather(-1, m.tensor([[2], [2]])), M23),
    _op("gather_smaller_index", lambda m, x: x.gather(1, m.tensor([[2, 0]])), M23),
    _op("gather_int32_index", lambda m, x: x.gather(0, m.tensor([[1, 0]], dtype=m.int32)), M23),
    _op("masked_fill", lambda m, x: x.masked_fill(x > 0, 0.5), M23 + UNARY[1:], "distinct"),
    _op("masked_fill_broadcast", lambda m, x: x.masked_fill(x[0] > 0, -1.0), M23, "distinct"),
    _op("masked_fill_tensor", lambda m, x, v: x.masked_fill(x > 0, v), (((2, 3), ()),),
        "distinct"),
    # ---- reduce (issue 8) ----
    _op("var_mean", lambda m, x: m.var_mean(x, 1), M23 + M234),
    _op("std_mean_correction0_keepdim", lambda m, x: m.std_mean(x, (0, 2), correction=0,
                                                                 keepdim=True), M234),
    _op("var_mean_all", lambda m, x: m.var_mean(x), UNARY[::2]),
    _op("aminmax_dim", lambda m, x: x.aminmax(dim=1), M23, "distinct"),
    _op("aminmax_all", lambda m, x: m.aminmax(x), UNARY, "distinct"),
    _op("nansum", lambda m, x: m.nansum(x, 1), M23),
    _op("nansum_nan", lambda m, x: m.where(x > -0.5, x, float("nan")).nansum(), M23, "distinct"),
    _op("nanmean", lambda m, x: x.nanmean(-1), M23),
    _op("count_nonzero", lambda m, x: m.count_nonzero(x, 1), M23, differentiable=False),
    _op("cumprod", lambda m, x: m.cumprod(x, 1), M23 + M234),
    _op("cumprod_one_zero", lambda m, x: x.cumprod(-1), UNARY[2:], "one_zero"),
    _op("cumprod_two_zeros", lambda m, x: x.cumprod(1), M23, "two_zeros"),
    _op("cummax", lambda m, x: m.cummax(x, 1), M23, "distinct"),
    _op("cummin", lambda m, x: x.cummin(0), M23 + UNARY[1:2], "distinct"),
    _op("logcumsumexp", lambda m, x: m.logcumsumexp(x, 1), M23 + M234),
    _op("logcumsumexp_neg_dim", lambda m, x: x.logcumsumexp(-1), UNARY),
    _op("sort", lambda m, x: m.sort(x, 1), M23, "distinct"),
    _op("sort_default", lambda m, x: x.sort(), UNARY, "distinct"),
    _op("sort_descending_stable", lambda m, x: x.sort(dim=0, descending=True, stable=True), M23,
        "distinct"),
    _op("argsort", lambda m, x: x.argsort(), M23, "distinct", differentiable=False),
    _op("msort", lambda m, x: m.msort(x), M23, "distinct"),
    _op("topk", lambda m, x: m.topk(x, 2), M23 + M234, "distinct"),
    _op("topk_smallest_dim0", lambda m, x: x.topk(1, 0, largest=False), M23, "distinct"),
    _op("kthvalue", lambda m, x: m.kthvalue(x, 2, 1), M23, "distinct"),
    _op("kthvalue_keepdim", lambda m, x: x.kthvalue(1, 0, True), M23, "distinct"),
    _op("median", lambda m, x: x.median(), UNARY, "distinct"),
    _op("median_dim", lambda m, x: m.median(x, 1), M23 + M234, "distinct"),
    _op("nanmedian", lambda m, x: m.nanmedian(m.where(x > -0.5, x, float("nan"))), M23,
        "distinct"),
    _op("nanmedian_dim_keepdim", lambda m, x: x.nanmedian(-1, True), M23, "distinct"),
    _op("mode", lambda m, x: m.mode(x.round(), 1), M23, "distinct"),
    _op("quantile", lambda m, x: m.quantile(x, 0.3), M23, "distinct"),
    _op("quantile_q_dim_keepdim",
        lambda m, x: x.quantile(m.tensor([0.25, 0.9]).to(x.dtype), 1, True), M23, "distinct"),
    _op("quantile_midpoint", lambda m, x: x.quantile(0.5, 0, interpolation="midpoint"), M23,
        "distinct"),
    _op("nanquantile", lambda m, x: m.nanquantile(m.where(x > -0.5, x, float("nan")), 0.4, 1),
        M23, "distinct"),
    _op("diff", lambda m, x: m.diff(x), M23 + M234),
    _op("diff_n2_prepend", lambda m, x, p: x.diff(2, 0, prepend=p), (((2, 3), (1, 3)),)),
    _op("trace", lambda m, x: m.trace(x), M23 + (((3, 3),),)),
    _op("cov", lambda m, x: m.cov(x), M23),
    _op("cov_weights", lambda m, x, a: m.cov(x, correction=0, fweights=m.tensor([1, 2, 1]),
                                             aweights=a.abs() + 0.5), (((2, 3), (3,)),)),
    _op("corrcoef", lambda m, x: m.corrcoef(x), M23),
    _op("trapezoid", lambda m, x: m.trapezoid(x), M23 + UNARY[2:]),
    _op("trapezoid_x", lambda m, y, x: m.trapezoid(y, x, dim=1), (((2, 3), (3,)),)),
    _op("trapz_dx", lambda m, y: m.trapz(y, dx=0.5, dim=0), M23),
    _op("cumulative_trapezoid", lambda m, y: m.cumulative_trapezoid(y), M23),
    _op("cumulative_trapezoid_x", lambda m, y, x: m.cumulative_trapezoid(y, x),
        (((2, 3), (2, 3)),)),
    _op("renorm", lambda m, x: x.renorm(2, 0, 1.0), M23 + M234),
    _op("renorm_p1_dim1", lambda m, x: m.renorm(x, 1, 1, 1.5), M23),
    _op("dist", lambda m, x, y: m.dist(x, y), BINARY[:3]),
    _op("dist_p3", lambda m, x, y: x.dist(y, 3), BINARY[:2], "distinct"),
    _op("masked_sum", lambda m, x: m.masked.sum(x, 1, mask=x > 0), M23, "distinct"),
    _op("masked_mean_keepdim", lambda m, x: m.masked.mean(x, 0, keepdim=True, mask=_MASK23(m)),
        M23),
    _op("masked_amax", lambda m, x: m.masked.amax(x, -1, mask=_MASK23(m)), M23, "distinct"),
    _op("masked_prod", lambda m, x: m.masked.prod(x, 1, mask=_MASK23(m)), M23),
    _op("masked_cumprod", lambda m, x: m.masked.cumprod(x, 1, mask=_MASK23(m)), M23),
    _op("masked_softmax", lambda m, x: m.masked.softmax(x, 1, mask=_MASK23(m)), M23),
    _op("masked_var", lambda m, x: m.masked.var(x, 1, mask=_MASK23(m)), M23),
    _op("masked_std_all", lambda m, x: m.masked.std(x, mask=_MASK23(m)), M23),
    _op("masked_median", lambda m, x: m.masked.median(x, 1, mask=_MASK23(m)), M23, "distinct"),
    _op("masked_logsumexp", lambda m, x: m.masked.logsumexp(x, 1, mask=_MASK23(m)), M23),
    _op("masked_norm", lambda m, x: m.masked.norm(x, 2.0, 1, mask=_MASK23(m)), M23),
    _op("masked_normalize", lambda m, x: m.masked.normalize(x, 2.0, 1, mask=_MASK23(m)), M23),
    # ---- end reduce ----
    # ------------------------------------------------------------------ copies and casts
    _op("to_float32", lambda m, x: x.to(m.float32), UNARY[:2], **F32_FD),
    _op("to_float64", lambda m, x: x.to(m.float64), UNARY[:2]),
    _op("to_dtype_kwarg", lambda m, x: x.to(dtype=m.float16), UNARY[:1], fd_eps=0.1,
        fd_atol=2e-2),
    _op("double", lambda m, x: x.double(), UNARY[:1]),
    _op("float", lambda m, x: x.float(), UNARY[:1], **F32_FD),
    _op("type_as", lambda m, x, y: x.type_as(y.float()), (((2, 3), (1,)),), **F32_FD),
    _op("clone", lambda m, x: x.clone(), UNARY),
    _op("clone_function", lambda m, x: m.clone(x), UNARY[:1]),
    _op("contiguous", lambda m, x: x.contiguous(), UNARY[:1]),
    _op("contiguous_copy", lambda m, x: x.t().contiguous(), M23),
    _op("to_int", lambda m, x: x.to(m.int64), UNARY[:1], differentiable=False),
    _op("contiguous_channels_last", lambda m, x: x.contiguous(memory_format=m.channels_last),
        (((1, 2, 2, 3),),)),
    _op("clone_channels_last", lambda m, x: m.clone(x, memory_format=m.channels_last),
        (((2, 3, 1, 2),),)),
    _op("to_channels_last", lambda m, x: x.to(memory_format=m.channels_last), (((1, 3, 2, 2),),)),
    _op("float_channels_last", lambda m, x: x.float(memory_format=m.channels_last),
        (((1, 2, 3, 2),),), **F32_FD),
    # ---- binary (issue 8) ----
    _op("atan2", lambda m, x, y: m.atan2(x, y), BINARY[:4]),
    _op("atan2_method", lambda m, x, y: x.arctan2(y), BINARY[:1]),
    _op("remainder", lambda m, x, y: m.remainder(x, y), BINARY[:3], "nonzero"),
    _op("remainder_scalar", lambda m, x: m.remainder(x, -0.7), UNARY[:2], "nonzero"),
    _op("rremainder_scalar", lambda m, x: m.remainder(1.3, x), UNARY[:1], "nonzero",
        differentiable=False),
    _op("mod_operator", lambda m, x, y: x % y, BINARY[:2], "nonzero"),
    _op("fmod", lambda m, x, y: m.fmod(x, y), BINARY[:3], "nonzero"),
    _op("fmod_scalar", lambda m, x: x.fmod(0.7), UNARY[:2], "nonzero"),
    _op("hypot", lambda m, x, y: m.hypot(x, y), BINARY[:3], "nonzero"),
    _op("fmax", lambda m, x, y: m.fmax(x, y), BINARY[:3], "distinct"),
    _op("fmin", lambda m, x, y: m.fmin(x, y), BINARY[:3], "distinct"),
    _op("copysign", lambda m, x, y: m.copysign(x, y), BINARY[:3], "nonzero"),
    _op("copysign_scalar", lambda m, x: m.copysign(x, -2.0), UNARY[:2], "nonzero"),
    _op("xlogy", lambda m, x, y: m.xlogy(x, y), BINARY[:3], "positive"),
    _op("xlogy_scalar", lambda m, x: m.xlogy(x, 2.5), UNARY[:2], "positive"),
    _op("xlogy_scalar_self", lambda m, y: m.xlogy(3, y), UNARY[:2], "positive"),
    _op("xlog1py", lambda m, x, y: m.special.xlog1py(x, y), BINARY[:3], "positive"),
    _op("logaddexp", lambda m, x, y: m.logaddexp(x, y), BINARY[:3]),
    _op("logaddexp2", lambda m, x, y: x.logaddexp2(y), BINARY[:3]),
    _op("lerp_scalar", lambda m, x, y: m.lerp(x, y, 0.3), BINARY[:2]),
    _op("lerp_tensor", lambda m, x, y, w: m.lerp(x, y, w),
        (((2, 3), (2, 3), (2, 3)), ((2, 3), (3,), ()))),
    _op("addcmul", lambda m, x, y, z: m.addcmul(x, y, z, value=0.5),
        (((2, 3), (2, 3), (2, 3)), ((2, 3), (3,), ()))),
    _op("addcdiv", lambda m, x, y, z: x.addcdiv(y, z, value=2), (((2, 3), (2, 3), (2, 3)),
                                                                  ((3,), (2, 1), ())), "nonzero"),
    _op("ldexp", lambda m, x, y: m.ldexp(x, y), BINARY[:3]),
    _op("ldexp_int", lambda m, x: m.ldexp(x, m.tensor([1, 0, 3])), M23),
    _op("float_power", lambda m, x, y: m.float_power(x, y), BINARY[:2], "positive"),
    _op("float_power_scalar", lambda m, x: m.float_power(x, 3), UNARY[:2]),
    _op("nextafter", lambda m, x, y: m.nextafter(x, y), BINARY[:2], "distinct"),
    _op("heaviside", lambda m, x, y: m.heaviside(x, y), BINARY[:2], "distinct",
        differentiable=False),
    _op("rsub_tensor", lambda m, x, y: m.rsub(x, y, alpha=2), BINARY[:3]),
    _op("true_divide", lambda m, x, y: m.true_divide(x, y), BINARY[:2], "nonzero"),
    _op("frexp", lambda m, x: m.frexp(x)[0], UNARY[:2], "nonzero"),
    # (polar saves its complex result, which tests/test_robustness_autograd.py's pack-order
    # test cannot compare: polar is tested in tests/test_binary.py)
    _op("complex_parts", lambda m, x, y: m.complex(x, y).imag * 2 + m.complex(y, x).real,
        BINARY[:3]),
    # ---- end binary ----
    # ---- products and solvers (issue 8) ----
    _op("addmm", lambda m, x, a, b: m.addmm(x, a, b, beta=0.5, alpha=2),
        (((2, 2), (2, 3), (3, 2)), ((2,), (2, 3), (3, 2)))),
    _op("addmv", lambda m, x, a, v: x.addmv(a, v), (((2,), (2, 3), (3,)),)),
    _op("addr", lambda m, x, a, b: m.addr(x, a, b, alpha=3), (((2, 3), (2,), (3,)),)),
    _op("baddbmm", lambda m, x, a, b: m.baddbmm(x, a, b), (((2, 2, 2), (2, 2, 3), (2, 3, 2)),)),
    _op("addbmm", lambda m, x, a, b: m.addbmm(x, a, b, beta=2), (((2, 2), (2, 2, 3), (2, 3, 2)),)),
    _op("tensordot", lambda m, x, y: m.tensordot(x, y, ([1, 0], [0, 2])),
        (((2, 3), (3, 2, 2)),)),
    _op("kron", lambda m, x, y: m.kron(x, y), (((2, 3), (2, 2)), ((2,), (2, 1, 2)))),
    _op("linalg_cross", lambda m, x, y: m.linalg.cross(x, y), (((2, 3), (1, 3)),)),
    _op("cross_dim0", lambda m, x, y: m.cross(x, y, dim=0), (((3, 2), (3, 2)),)),
    _op("inner", lambda m, x, y: m.inner(x, y), (((2, 3), (4, 3)), ((), (2,)))),
    _op("outer", lambda m, x, y: m.outer(x, y), (((2,), (3,)),)),
    _op("vdot", lambda m, x, y: m.vdot(x, y), (((3,), (3,)),)),
    _op("multi_dot", lambda m, x, y, z: m.linalg.multi_dot([x, y, z]),
        (((3,), (3, 2), (2, 4)), ((2, 3), (3, 4), (4, 1)))),
    _op("vecdot", lambda m, x, y: m.linalg.vecdot(x, y, dim=0), (((3, 2), (3, 1)),)),
    _op("matrix_power", lambda m, x: m.linalg.matrix_power(x, 3), (((2, 2),), ((2, 2, 2),))),
    _op("matrix_power_neg", lambda m, x: m.linalg.matrix_power(
        x + 4 * m.eye(2, dtype=x.dtype), -2), (((2, 2),),)),
    _op("linalg_inv", lambda m, x: m.linalg.inv(x + 4 * m.eye(x.shape[-1], dtype=x.dtype)),
        (((3, 3),), ((2, 2, 2),))),
    _op("solve_triangular", lambda m, a, b: m.linalg.solve_triangular(
        a + 4 * m.eye(3, dtype=a.dtype), b, upper=True), (((3, 3), (3, 2)),)),
    _op("solve_triangular_unit_right", lambda m, a, b: m.linalg.solve_triangular(
        a, b, upper=False, left=False, unitriangular=True), (((3, 3), (2, 3)),)),
    _op("linalg_cholesky", lambda m, x: m.linalg.cholesky(
        x @ x.mT + m.eye(x.shape[-1], dtype=x.dtype)),
        (((3, 3),), ((2, 2, 2),))),
    _op("linalg_cholesky_upper", lambda m, x: m.linalg.cholesky(
        x @ x.mT + m.eye(3, dtype=x.dtype), upper=True), (((3, 3),),)),
    _op("matrix_exp", lambda m, x: m.linalg.matrix_exp(x), (((3, 3),), ((2, 2, 2),))),
    _op("matrix_norm_1", lambda m, x: m.linalg.matrix_norm(x, 1), (((2, 3),),), "distinct"),
    _op("matrix_norm_inf_keepdim", lambda m, x: m.linalg.matrix_norm(
        x, float("inf"), keepdim=True), (((2, 2, 3),),), "distinct"),
    _op("linalg_norm_fro", lambda m, x: m.linalg.norm(x, "fro"), (((2, 3),),)),
    _op("linalg_det", lambda m, x: m.linalg.det(x), (((3, 3),), ((2, 2, 2),))),
    _op("linalg_slogdet", lambda m, x: m.linalg.slogdet(x)[1], (((3, 3),),)),
    _op("linalg_solve", lambda m, a, b: m.linalg.solve(
        a + 4 * m.eye(a.shape[-1], dtype=a.dtype), b), (((3, 3), (3,)), ((2, 2, 2), (2, 1)))),
    _op("linalg_solve_right", lambda m, a, b: m.linalg.solve(
        a + 4 * m.eye(3, dtype=a.dtype), b, left=False), (((3, 3), (2, 3)),)),
    # (logdet, triangular_solve, cholesky_solve, cholesky_inverse, the LU family, tensorsolve
    # and vander are tested in tests/test_linalg_solvers.py, where the generic comparisons do
    # not apply: saved tensors PyTorch computes differently (LU factors, cumprod), and PyTorch's
    # wrong forward AD of triangular_solve and cholesky_inverse)
    # ---- decompositions (issue 8) ----
    # Singular vectors and eigenvectors are compared through gauge-invariant quantities
    # (squared moduli); Q and R of QR are unique in LAPACK's convention. The saved-tensor
    # packing test compares saved singular vectors by value, and their signs depend on the
    # LAPACK build (PyTorch's MKL, NumPy's OpenBLAS): the samples are ones where they agree.
    # eig (complex saved values), the randomized low-rank SVDs, householder_product and ormqr
    # are checked against PyTorch's OpInfo samples instead (see the note below).
    _op("linalg_qr", lambda m, x: m.linalg.qr(x), (((3, 2),), ((2, 3),), ((2, 2, 2),))),
    _op("qr_method_complete", lambda m, x: x.qr(some=False), (((3, 3),),)),
    _op("linalg_svd", lambda m, x: _gauge_svd(m.linalg.svd(x, full_matrices=False)),
        (((3, 2),), ((2, 3, 2),))),
    _op("svd_function", lambda m, x: _gauge_svd(m.svd(x)), (((3, 2),),)),
    _op("linalg_svdvals", lambda m, x: m.linalg.svdvals(x), (((3, 2),),)),
    _op("linalg_eigh", lambda m, x: _gauge_eig(m.linalg.eigh(x + x.mT)), (((3, 3),),)),
    _op("linalg_eigvalsh_upper", lambda m, x: m.linalg.eigvalsh(x + x.mT, UPLO="U"),
        (((3, 3),), ((2, 2, 2),))),
    _op("linalg_pinv", lambda m, x: m.linalg.pinv(x), (((3, 2),), ((2, 3),))),
    _op("linalg_pinv_hermitian", lambda m, x: m.linalg.pinv(x + x.mT, hermitian=True),
        (((3, 3),),)),
    _op("pinverse_method", lambda m, x: x.pinverse(), (((2, 3),),)),
    _op("linalg_lstsq", lambda m, a, b: m.linalg.lstsq(a, b, driver="gelsd").solution,
        (((3, 2), (3, 2)),)),
    # linalg.householder_product and ormqr are checked against PyTorch's OpInfo samples
    # instead: PyTorch has no forward AD for ormqr, and torch.func's forward-over-forward of
    # householder_product disagrees with finite differences (ndgrad's agrees).
    _op("geqrf", lambda m, x: m.geqrf(x), (((3, 2),),), differentiable=False),
    _op("linalg_ldl_factor", lambda m, x: m.linalg.ldl_factor(x + x.mT), (((3, 3),),),
        differentiable=False),
    # ---- end decompositions ----
]

# ---- indexing (issue 8) ----
# scatter_reduce(prod) and index_reduce are in tests/test_indexing.py: PyTorch has no tangent
# for them (None, or NotImplementedError) where ndgrad computes one.
_IDX23 = [[0, 2, 1], [1, 0, 1]]      # along dim 1 of a (2, 3): a repeated position in row 1
OPS += [
    _op("scatter", lambda m, x, s: m.scatter(x, 1, m.tensor([[0, 2, 1], [2, 0, 1]]), s),
        (((2, 3), (2, 3)), ((2, 4), (2, 3)))),
    _op("scatter_value", lambda m, x: x.scatter(0, m.tensor([[1, 0, 1]]), 1.5), M23),
    _op("scatter_0d", lambda m, x, s: x.scatter(0, m.tensor(0), s), (((), ()),)),
    _op("scatter_inplace", lambda m, x, s: x.clone().scatter_(1, m.tensor([[2], [0]]), s),
        (((2, 3), (2, 1)),)),
    _op("scatter_add", lambda m, x, s: m.scatter_add(x, 1, m.tensor(_IDX23), s),
        (((2, 3), (2, 3)),)),
    _op("scatter_reduce_sum", lambda m, x, s: x.scatter_reduce(1, m.tensor(_IDX23), s, "sum"),
        (((2, 3), (2, 3)),)),
    _op("scatter_reduce_mean", lambda m, x, s: m.scatter_reduce(
        x, 1, m.tensor(_IDX23), s, "mean", include_self=False), (((2, 3), (2, 3)),)),
    _op("scatter_reduce_amax", lambda m, x, s: x.scatter_reduce(1, m.tensor(_IDX23), s, "amax"),
        (((2, 3), (2, 3)),), "distinct"),
    _op("scatter_reduce_amin", lambda m, x, s: x.scatter_reduce(
        0, m.tensor([[1, 1, 0]]), s, "amin", include_self=False), (((2, 3), (1, 3)),),
        "distinct"),
    _op("index_add", lambda m, x, s: m.index_add(x, 1, m.tensor([2, 0, 2]), s, alpha=2),
        (((2, 3), (2, 3)),)),
    _op("index_add_inplace", lambda m, x, s: x.clone().index_add_(0, m.tensor([0]), s),
        (((2, 3), (1, 3)), ((), ()))),
    _op("index_copy", lambda m, x, s: x.index_copy(-1, m.tensor([2, 0]), s),
        (((2, 3), (2, 2)),)),
    _op("index_fill", lambda m, x: x.index_fill(1, m.tensor([0, 2, 0]), -1.0), M23 + M234),
    _op("index_fill_tensor", lambda m, x, v: m.index_fill(x, 0, m.tensor([1]), v),
        (((2, 3), ()),)),
    _op("masked_select", lambda m, x: x.masked_select(x > 0), M23 + UNARY[1:], "distinct"),
    _op("masked_select_broadcast", lambda m, x: m.masked_select(x, m.tensor([[True], [False]])),
        (((3,),), ((2, 3),))),
    _op("masked_scatter", lambda m, x, s: x.masked_scatter(m.tensor([True, False, True]), s),
        (((2, 3), (2, 4)), ((3,), (2,)))),
    _op("take", lambda m, x: m.take(x, m.tensor([[0, -1], [3, 3]])), M23 + M234),
    _op("take_along_dim", lambda m, x: x.take_along_dim(m.tensor([[2, 0, 1]]), 1), M23),
    _op("take_along_dim_flat", lambda m, x: m.take_along_dim(x, m.tensor([5, 0])), M23),
    _op("put", lambda m, x, s: x.put(m.tensor([4, 0]), s), (((2, 3), (2,)),)),
    _op("put_accumulate", lambda m, x, s: m.put(x, m.tensor([[0, 0]]), s, accumulate=True),
        (((2, 3), (2,)), ((), (2,)))),
]

# ---- fft / special (issue 8) ----
# Complex results are taken back to real ones by a second transform (the tests compare real
# outputs), so each entry checks two transforms and their composition. igamma/igammac and zeta,
# which PyTorch does not differentiate in forward mode, are tested in test_special_fft.py.
V4, V23 = (((4,),),), (((2, 3),),)
OPS += [
    _op("fft_rfft_irfft", lambda m, x: m.fft.irfft(m.fft.rfft(x, norm="ortho"), n=5), V4 + V23),
    _op("fft_fft_hfft", lambda m, x: m.fft.hfft(m.fft.fft(x, n=5), n=4), V4 + V23),
    _op("fft_ifft_hfft_dim0", lambda m, x: m.fft.hfft(m.fft.ifft(x, dim=0), dim=0), V23),
    _op("fft_ihfft_hfft", lambda m, x: m.fft.hfft(m.fft.ihfft(x, norm="forward")), V4),
    _op("fft_irfft_real_input", lambda m, x: m.fft.irfft(x), V4),
    _op("fft_fft2_irfft2", lambda m, x: m.fft.irfft2(m.fft.fft2(x, s=(2, 4))), V23),
    _op("fft_ifftn_hfftn", lambda m, x: m.fft.hfftn(m.fft.ifftn(x, norm="forward"), s=(3, 3)),
        V23),
    _op("fft_rfftn_irfftn", lambda m, x: m.fft.irfftn(m.fft.rfftn(x, dim=(1, 0)), s=(3, 2),
                                                       dim=(1, 0)), V23),
    _op("fft_ihfft2_hfft2", lambda m, x: m.fft.hfft2(m.fft.ihfft2(x, norm="ortho")), V23),
    _op("fft_hfft2_real_input", lambda m, x: m.fft.hfft2(x), V23),
    _op("fft_fftshift", lambda m, x: m.fft.fftshift(x), V4 + V23),
    _op("fft_ifftshift_dim", lambda m, x: m.fft.ifftshift(x, dim=1), V23),
    # (center=False: PyTorch's reflection padding links its double backward to the input, a
    # zero gradient where ndgrad's is None.)
    _op("stft_istft", lambda m, x: m.istft(m.stft(x, 4, center=False, return_complex=True), 4,
                                           center=False), (((6,),), ((2, 6),))),
    _op("stft_istft_window", lambda m, x: m.istft(
        m.stft(x, 4, hop_length=2, window=m.ones(4) * 0.75 + 0.25, normalized=True,
               center=False, return_complex=True), 4, hop_length=2,
        window=m.ones(4) * 0.5 + 0.5, normalized=True, center=False), (((8,),),)),
    _op("stft_reflect_istft_length", lambda m, x: m.istft(
        m.stft(x, 4, return_complex=True), 4, length=7), (((6,),),), double_backward=False),
    # special functions
    _op("i0", lambda m, x: m.i0(x), UNARY),
    _op("i0_method", lambda m, x: x.i0(), UNARY[:1]),
    _op("special_i0e", lambda m, x: m.special.i0e(x), UNARY),
    _op("special_i1", lambda m, x: m.special.i1(x), UNARY),
    _op("special_i1e", lambda m, x: m.special.i1e(x), UNARY),
    _op("special_ndtr", lambda m, x: m.special.ndtr(x), UNARY),
    _op("special_ndtri", lambda m, x: m.special.ndtri(x), UNARY, "prob"),
    _op("special_log_ndtr", lambda m, x: m.special.log_ndtr(x), UNARY),
    _op("special_erfcx", lambda m, x: m.special.erfcx(x), UNARY),
    _op("special_entr", lambda m, x: m.special.entr(x), UNARY, "positive"),
    _op("polygamma_2", lambda m, x: m.polygamma(2, x), UNARY, "positive"),
    _op("polygamma_method_0", lambda m, x: x.polygamma(0), UNARY[:1], "positive"),
    _op("special_polygamma_3", lambda m, x: m.special.polygamma(3, x), UNARY[:1], "positive"),
    _op("mvlgamma_3", lambda m, x: m.mvlgamma(x, 3), UNARY, "above_one"),
    _op("special_multigammaln_1", lambda m, x: m.special.multigammaln(x, 1), UNARY[:1],
        "positive"),
]
# ---- end fft / special (issue 8) ----

OPS_BY_NAME = {op.name: op for op in OPS}
assert len(OPS_BY_NAME) == len(OPS), "op names must be unique"

# ---- rearrange (issue 8) ----
OPS += [
    _op("flip", lambda m, x: m.flip(x, (0, -1)), M23 + M234),
    _op("flip_method", lambda m, x: x.flip(1), M23),
    _op("fliplr", lambda m, x: m.fliplr(x), M23),
    _op("flipud", lambda m, x: x.flipud(), UNARY[2:] + M23),
    _op("roll", lambda m, x: m.roll(x, 1, 0), M23 + UNARY[2:]),
    _op("roll_flat", lambda m, x: x.roll(2), M23 + ((((),),))),
    _op("roll_dims", lambda m, x: m.roll(x, (1, -1), (0, 2)), M234),
    _op("rot90", lambda m, x: m.rot90(x), M23),
    _op("rot90_k_dims", lambda m, x: x.rot90(3, (2, 0)), M234),
    _op("rot90_2", lambda m, x: x.rot90(2), M23),
    _op("repeat", lambda m, x: x.repeat(2, 1, 3), M23 + ((((),),))),
    _op("repeat_same_rank", lambda m, x: x.repeat((1, 2)), M23),
    _op("tile", lambda m, x: m.tile(x, (2,)), M23 + UNARY[2:]),
    _op("repeat_interleave", lambda m, x: x.repeat_interleave(2, dim=1), M23),
    _op("repeat_interleave_flat", lambda m, x: m.repeat_interleave(x, 2), M23),
    _op("repeat_interleave_tensor",
        lambda m, x: x.repeat_interleave(m.tensor([1, 0, 2]), dim=1), M23),
    _op("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 2, 3)), (((1, 3),), ((2, 1, 3),))),
    _op("broadcast_tensors", lambda m, x, y: m.broadcast_tensors(x, y), (((2, 1), (3,)),)),
    _op("ravel", lambda m, x: x.ravel(), M23),
    _op("ravel_non_contiguous", lambda m, x: m.ravel(x.t()), M23),
    _op("H", lambda m, x: x.H, M23),
    _op("mH", lambda m, x: x.mH, M234),
    _op("adjoint", lambda m, x: m.adjoint(x), M23),
    _op("swapdims", lambda m, x: x.swapdims(0, -1), M234),
    _op("moveaxis", lambda m, x: m.moveaxis(x, 0, 2), M234),
    _op("hstack", lambda m, x, y: m.hstack([x, y]), (((2, 3), (2, 1)), ((3,), (2,)))),
    _op("vstack", lambda m, x, y: m.vstack((x, y)), (((3,), (2, 3)),)),
    _op("dstack", lambda m, x, y: m.dstack([x, y]), (((2, 3), (2, 3)), ((3,), (3,)))),
    _op("column_stack", lambda m, x, y: m.column_stack([x, y]), (((3,), (3, 2)),)),
    _op("atleast_3d", lambda m, x: m.atleast_3d(x), UNARY),
    _op("atleast_2d_tuple", lambda m, x, y: m.atleast_2d(x, y), (((), (3,)),)),
    _op("meshgrid", lambda m, x, y: m.meshgrid(x, y, indexing="ij"), (((2,), (3,)),)),
    _op("meshgrid_xy", lambda m, x, y, z: m.meshgrid([x, y, z], indexing="xy"),
        (((2,), (3,), ()),)),
    _op("cartesian_prod", lambda m, x, y: m.cartesian_prod(x, y), (((2,), (3,)),)),
    _op("combinations", lambda m, x: m.combinations(x), (((4,),),)),
    _op("combinations_replacement", lambda m, x: m.combinations(x, 3, True), (((3,),),)),
    _op("block_diag", lambda m, x, y, z: m.block_diag(x, y, z), (((2, 3), (2,), ()),)),
    _op("diag", lambda m, x: m.diag(x), (((3,),), ((3, 4),))),
    _op("diag_offset", lambda m, x: x.diag(-1), (((3,),), ((3, 4),))),
    _op("diag_embed", lambda m, x: m.diag_embed(x), M23),
    _op("diag_embed_dims", lambda m, x: x.diag_embed(1, 0, 2), M23),
    _op("diagflat", lambda m, x: m.diagflat(x, 1), M23),
    _op("tensor_split", lambda m, x: m.tensor_split(x, 2, 1), M23),
    _op("tensor_split_indices", lambda m, x: x.tensor_split([1, 2], dim=1), M234),
    _op("hsplit", lambda m, x: m.hsplit(x, [1]), M23),
    _op("vsplit", lambda m, x: x.vsplit(2), M23 + M234),
    _op("dsplit", lambda m, x: m.dsplit(x, 2), M234),
    _op("split_with_sizes", lambda m, x: x.split_with_sizes([1, 2], 1), M23),
    _op("unsafe_split", lambda m, x: x.unsafe_split(2, 1), M23),
    _op("unsafe_chunk", lambda m, x: m.unsafe_chunk(x, 2), M23),
    _op("unflatten", lambda m, x: x.unflatten(1, (3, 1)), M23),
    _op("unflatten_infer", lambda m, x: m.unflatten(x, -1, (-1, 2)), (((2, 4),),)),
    _op("narrow_copy", lambda m, x: x.narrow_copy(1, 1, 2), M23),
    _op("select_scatter", lambda m, x, y: m.select_scatter(x, y, 1, 0), (((2, 3), (2,)),)),
    _op("slice_scatter", lambda m, x, y: m.slice_scatter(x, y, 1, 0, 3, 2),
        (((2, 3), (2, 2)),)),
    _op("diagonal_scatter", lambda m, x, y: m.diagonal_scatter(x, y, 1), (((3, 4), (3,)),)),
    _op("permute_copy", lambda m, x: m.permute_copy(x, (2, 0, 1)), M234),
    _op("t_copy", lambda m, x: m.t_copy(x), M23),
    _op("transpose_copy", lambda m, x: m.transpose_copy(x, 0, 1), M23),
    _op("expand_copy", lambda m, x: m.expand_copy(x, (2, 2, 3)), (((2, 1, 3),),)),
    _op("diagonal_copy", lambda m, x: m.diagonal_copy(x, 1), M23),
    _op("unfold_copy", lambda m, x: m.unfold_copy(x, 1, 2, 1), M23),
    _op("as_strided_copy", lambda m, x: m.as_strided_copy(x, (2, 2), (1, 2), 1), M23),
    _op("view_copy", lambda m, x: m.view_copy(x, (3, 2)), M23),
    _op("squeeze_copy", lambda m, x: m.squeeze_copy(x, 0), (((1, 3),),)),
    _op("unsqueeze_copy", lambda m, x: m.unsqueeze_copy(x, 1), M23),
    _op("unbind_copy", lambda m, x: m.unbind_copy(x, 1), M23),
    _op("split_with_sizes_copy", lambda m, x: m.split_with_sizes_copy(x, [2, 1], 1), M23),
    _op("alias_copy", lambda m, x: m.alias_copy(x), M23),
    _op("view_as_real", lambda m, x: m.view_as_real(x.to(m.complex128)), M23),
    _op("view_as_complex_conj_physical",
        lambda m, x: m.view_as_real(m.view_as_complex(x).conj_physical()), (((3, 2),),)),
    _op("fill", lambda m, x: m.fill(x, 2.5), M23, differentiable=False),
    _op("fill_tensor", lambda m, x, v: m.fill(x, v), (((2, 3), ()),)),
]
OPS_BY_NAME = {op.name: op for op in OPS}
assert len(OPS_BY_NAME) == len(OPS), "op names must be unique"
