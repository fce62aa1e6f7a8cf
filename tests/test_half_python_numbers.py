"""A Python float meeting a float16/bfloat16 tensor, bitwise as torch (Note [Double to half] in
ndgrad/_dtype.py): torch converts the double to float first, so a number just past a rounding
tie of the half type (``1 + 2**-11 + 2**-40``) lands on the tie in float32 and rounds to even,
where a direct rounding would go up. Per op, torch either rounds the number to the dtype that
way or computes in float32 with the number in float32; each case below is checked bitwise
against torch over numbers picked just past ties (where the two roundings differ) and tensors
holding both candidate roundings.

Tensors have 64 elements: torch's vectorized kernels process the tail that fills no vector
with a scalar loop that can round differently (add with alpha rounds ``alpha * y`` to the
dtype there); ndgrad follows the vector loop.
"""

import ml_dtypes
import numpy as np
import pytest
import torch

import ndgrad

CASES = {
    # the number rounded to the dtype
    "clamp": "x.clamp(v, v + 1)", "clamp_max": "x.clamp(max=v)", "clamp_min": "T.clamp_min(x, v)",
    "clamp_max_fn": "T.clamp_max(x, v)", "clamp_": "x.clone().clamp_(v, v + 1)",
    "hardtanh": "T.nn.functional.hardtanh(x, -abs(v), abs(v))",
    "hardtanh_": "T.nn.functional.hardtanh(x.clone(), -abs(v), abs(v), inplace=True)",
    "nan_to_num": "T.tensor([float('nan'), float('inf'), -float('inf')] * 22, dtype=D)"
                  ".nan_to_num(v, abs(v), -abs(v))",
    "fill_": "x.clone().fill_(v)", "full": "T.full((64,), v, dtype=D)",
    "full_like": "T.full_like(x, v)", "new_full": "x.new_full((64,), v)",
    "tensor": "T.tensor([v, -v] * 32, dtype=D)", "tensor_0d": "T.tensor(v, dtype=D)",
    "masked_fill": "x.masked_fill(x > 0, v)", "masked_fill_": "x.clone().masked_fill_(x > 0, v)",
    "where_other": "T.where(x > 0, x, v)", "where_self": "T.where(x > 0, v, x)",
    "index_fill": "x.index_fill(0, T.tensor([0, 5]), v)",
    "scatter_value": "x.scatter(0, T.tensor([0, 5]), v)",
    "setitem": "(lambda y: (y.__setitem__(slice(0, 9), v), y)[1])(x.clone())",
    # arange: 16 elements (torch's vector loop re-rounds its running start every vector)
    "arange": "T.arange(v, v + 15.5, dtype=D)", "arange_step": "T.arange(v, 16 * v, v, dtype=D)",
    "linspace": "T.linspace(v, 30 * v, 64, dtype=D)",
    "threshold_value": "T.nn.functional.threshold(x, 0.5, v)",
    "hardshrink": "T.nn.functional.hardshrink(x, abs(v))",
    "eq": "x == v", "ne": "x != v", "lt": "x < v", "le": "x <= v", "gt": "x > v", "ge": "x >= v",
    "fmod": "T.fmod(x, v)", "remainder": "T.remainder(x, v)", "rfloordiv": "v // x",
    "pow": "x.abs().pow(abs(v))",
    "pow_": "x.abs().pow_(abs(v))", "rpow": "abs(v) ** x", "xlogy": "T.xlogy(v, x.abs())",
    "xlogy_other": "T.xlogy(x, abs(v))", "add": "x + v", "sub": "x - v", "rsub": "v - x",
    "add_alpha": "T.add(x, x.flip(0), alpha=v)", "sub_alpha": "T.sub(x, x.flip(0), alpha=v)",
    "addcmul": "T.addcmul(x, x, x.flip(0), value=v)",
    # computed in float32 with the number in float32
    "threshold": "T.nn.functional.threshold(x, v, 0.0)", "mul": "x * v", "div": "x / v",
    "softshrink": "T.nn.functional.softshrink(x, abs(v))", "floor_divide": "T.floor_divide(x, v)",
    "div_floor": "T.div(x, v, rounding_mode='floor')", "rdiv": "v / x",
    "div_trunc": "T.div(x, v, rounding_mode='trunc')",
    # sampled in float32 from float32 parameters
    "normal_": "(T.manual_seed(0), T.empty(64, dtype=D).normal_(v, abs(v)))[1]",
    "uniform_": "(T.manual_seed(0), T.empty(64, dtype=D).uniform_(v, v + 1))[1]",
}

def _direct(v, nd):
    """``v`` rounded to ``nd`` in one step, to nearest even (NumPy's float16 cast does this;
    ml_dtypes' bfloat16 cast goes through float32 itself, so computed here)."""
    bits = 11 if nd is np.float16 else 8
    m, e = np.frexp(v)
    return float(np.ldexp(np.round(m * 2.0 ** bits), e - bits))   # exact in float64


def _numbers(nd):
    """Floats just past ties of ``nd``, where rounding through float32 (to even) and rounding
    directly disagree: above the tie of an even value and below the tie of an odd one."""
    h = np.random.default_rng(2024).uniform(-4, 4, 24).astype(nd)
    up = np.nextafter(h, np.array(np.inf, nd)).astype(np.float64)
    tie = (h.astype(np.float64) + up) / 2
    out = [float(t * (1 + s * 2.0 ** -40)) for t in tie for s in (1, -1)]
    return [v for v in out if float(nd(np.float32(v))) != _direct(v, nd)][:8]


def _inputs(nd, v):
    x = np.random.default_rng(hash(v) % 2 ** 32).uniform(-4, 4, 64).astype(nd)
    x[:4] = [nd(np.float32(v)), _direct(v, nd), nd(-np.float32(v)), -_direct(v, nd)]  # both
    return [float(e) for e in x.astype(np.float32)]


def _run(lib, expr, dname, v, xs):
    d = getattr(lib, dname)
    x = lib.tensor(xs).to(d)
    r = eval(expr, {"T": lib, "D": d, "x": x, "v": v})
    return r.float().numpy()


@pytest.mark.parametrize("dname", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_python_float_into_half_bitwise(case, dname):
    nd = np.float16 if dname == "float16" else ml_dtypes.bfloat16
    for v in _numbers(nd):
        xs = _inputs(nd, v)
        want = _run(torch, CASES[case], dname, v, xs)
        got = _run(ndgrad, CASES[case], dname, v, xs)
        np.testing.assert_array_equal(got, want, err_msg=f"{case} {dname} v={v!r}")


GRAD_CASES = ["clamp", "clamp_max", "hardtanh", "threshold", "hardshrink", "softshrink", "pow",
              "rpow", "xlogy", "fmod", "remainder", "mul", "add_alpha"]


@pytest.mark.parametrize("dname", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", GRAD_CASES)
def test_gradients_bitwise(case, dname):
    """The backward keeps torch's view of the number too (hardtanh and threshold compare in
    float32 with the number in float32 there, though the forward rounds it)."""
    nd = np.float16 if dname == "float16" else ml_dtypes.bfloat16
    for v in _numbers(nd)[:4]:
        xs = _inputs(nd, v)
        grads = []
        for lib in (torch, ndgrad):
            x = lib.tensor(xs).to(getattr(lib, dname)).requires_grad_()
            y = eval(CASES[case], {"T": lib, "x": x, "v": v})
            y.backward(lib.ones_like(y))
            grads.append(x.grad.float().numpy())
        np.testing.assert_array_equal(grads[1], grads[0], err_msg=f"{case} {dname} v={v!r}")


def test_the_numbers_do_round_differently():
    """There are enough numbers where the two roundings disagree (else the test above would
    prove nothing)."""
    for nd in (np.float16, ml_dtypes.bfloat16):
        assert len(_numbers(nd)) == 8


@pytest.mark.parametrize("expr", [
    "T.nn.functional.softshrink(T.ones(2, dtype=T.float16), -1.0004882812509095)",
    "T.nn.functional.softshrink(T.ones(2, dtype=T.bfloat16), -0.5)",
    "T.nn.functional.softshrink(T.ones(2), -1e-7)",
    "T.empty(2).normal_(0, -1.0004882812509095)", "T.normal(0.0, -123456789.0, (2,))",
    "T.empty(2).exponential_(-2.0)", "T.empty(2).cauchy_(0, -0.25012207031)",
    "T.empty(2).log_normal_(0, -1e-7)", "T.empty(2).geometric_(-0.25012207031)",
])
def test_messages_print_numbers_as_torch(expr):
    """A number in an error message prints as torch's C++ stream does (6 significant
    digits), and softshrink's range names the dtype's own largest value."""
    msgs = []
    for lib in (torch, ndgrad):
        with pytest.raises(RuntimeError) as info:
            eval(expr, {"T": lib})
        msgs.append(str(info.value))
    assert msgs[1] == msgs[0]
