"""The binary math family (ops/binary.py) against PyTorch: special values (zeros, signed zeros,
infinities, NaN) in values and gradients without NumPy warnings, dtype promotion with integer,
bool and low-precision operands and Python numbers, in-place variants and operators, errors."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch

import ndgrad

INF, NAN = float("inf"), float("nan")
VALUES = [0.0, -0.0, 1.5, -2.0, 3.0, INF, -INF, NAN]

# differentiable binary ops: (name, fn(m, a, b))
DIFF = {
    "atan2": lambda m, a, b: m.atan2(a, b),
    "remainder": lambda m, a, b: m.remainder(a, b),
    "fmod": lambda m, a, b: m.fmod(a, b),
    "hypot": lambda m, a, b: m.hypot(a, b),
    "fmax": lambda m, a, b: m.fmax(a, b),
    "fmin": lambda m, a, b: m.fmin(a, b),
    "copysign": lambda m, a, b: m.copysign(a, b),
    "xlogy": lambda m, a, b: m.xlogy(a, b),
    "xlog1py": lambda m, a, b: m.special.xlog1py(a, b),
    "logaddexp": lambda m, a, b: m.logaddexp(a, b),
    "logaddexp2": lambda m, a, b: m.logaddexp2(a, b),
    "ldexp": lambda m, a, b: m.ldexp(a, b),
    "nextafter": lambda m, a, b: m.nextafter(a, b),
    "lerp": lambda m, a, b: m.lerp(a, b, 0.25),
    "lerp_far": lambda m, a, b: m.lerp(a, b, 0.75),
    "addcdiv": lambda m, a, b: m.addcdiv(a, a, b, value=0.5),
    "float_power": lambda m, a, b: m.float_power(a, b),
    "remainder_scalar": lambda m, a, b: m.remainder(a, -1.5),
    "xlogy_scalar": lambda m, a, b: m.xlogy(a, 0.0),
    "xlogy_scalar_self": lambda m, a, b: m.xlogy(0.0, b),
    "polar": lambda m, a, b: m.polar(a, b).imag + m.polar(b, a).real,
    "complex": lambda m, a, b: m.complex(a, b).imag - m.complex(b, a).real,
}


def _pairs(m):
    a, b = zip(*itertools.product(VALUES, VALUES))
    return (m.tensor(a, dtype=m.float64, requires_grad=True),
            m.tensor(b, dtype=m.float64, requires_grad=True))


def _np(t):
    return t.detach().numpy()


def _same(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300, equal_nan=True)
    finite = ~np.isnan(want)
    # signed zeros and infinities agree too
    assert (np.signbit(got[finite]) == np.signbit(want[finite])).all()


@pytest.mark.parametrize("name", sorted(DIFF))
def test_special_values_and_gradients_match_torch(name):
    out = []
    for m in (torch, ndgrad):
        a, b = _pairs(m)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", append=True)
            r = DIFF[name](m, a, b)
            g = m.autograd.grad(r.sum(), (a, b), allow_unused=True)
        assert [str(w.message) for w in caught] == []
        out.append((_np(r), type(r.grad_fn).__name__,
                    [None if x is None else _np(x) for x in g]))
    (tr, tn, tg), (nr, nn, ng) = out
    assert nn == tn
    _same(nr, tr)
    for x, y in zip(ng, tg):
        assert (x is None) == (y is None)
        if y is not None:
            np.testing.assert_allclose(x, y, rtol=1e-12, equal_nan=True)


PROMOTION = {
    "atan2": lambda m, a, b: m.atan2(a, b),
    "remainder": lambda m, a, b: m.remainder(a, b),
    "fmod": lambda m, a, b: m.fmod(a, b),
    "copysign": lambda m, a, b: m.copysign(a, b),
    "xlogy": lambda m, a, b: m.xlogy(a, b),
    "fmax": lambda m, a, b: m.fmax(a, b),
    "ldexp": lambda m, a, b: m.ldexp(a, b),
    "float_power": lambda m, a, b: m.float_power(a, b),
    "hypot": lambda m, a, b: m.hypot(a, b),
    "logaddexp": lambda m, a, b: m.logaddexp(a, b),
    "nextafter": lambda m, a, b: m.nextafter(a, b),
    "heaviside": lambda m, a, b: m.heaviside(a, b),
    "gcd": lambda m, a, b: m.gcd(a, b),
    "shift": lambda m, a, b: m.bitwise_left_shift(a, b),
}
OPERANDS = {
    "int64": lambda m: m.tensor([5, -7, 2]),
    "uint8": lambda m: m.tensor([5, 7, 2], dtype=m.uint8),
    "bool": lambda m: m.tensor([True, False, True]),
    "float16": lambda m: m.tensor([1.5, -2.0, 3.0], dtype=m.float16),
    "float32": lambda m: m.tensor([1.5, -2.0, 3.0]),
    "int_scalar": lambda m: 3,
    "float_scalar": lambda m: -2.5,
    "big_int_scalar": lambda m: 300,
}


def _outcome(fn, *args):
    try:
        r = fn(*args)
    except Exception as e:        # noqa: BLE001 - the exception type is compared
        return type(e).__name__
    return str(r.dtype).split(".")[-1], r.detach().double().numpy()


@pytest.mark.parametrize("name", sorted(PROMOTION))
def test_dtype_promotion_matches_torch(name):
    for (ka, fa), (kb, fb) in itertools.product(OPERANDS.items(), OPERANDS.items()):
        if ka.endswith("scalar") and kb.endswith("scalar"):
            continue
        want = _outcome(PROMOTION[name], torch, fa(torch), fb(torch))
        got = _outcome(PROMOTION[name], ndgrad, fa(ndgrad), fb(ndgrad))
        if isinstance(want, str):
            assert got == want, (ka, kb)
        else:
            assert not isinstance(got, str), (ka, kb, got)
            assert got[0] == want[0], (ka, kb)
            np.testing.assert_allclose(got[1], want[1], rtol=1e-3, equal_nan=True)


INPLACE = [
    ("atan2_", lambda x, m: x.atan2_(m.tensor([1.0, -1.0, 2.0]))),
    ("remainder_", lambda x, m: x.remainder_(1.5)),
    ("fmod_", lambda x, m: x.fmod_(m.tensor([1.5]))),
    ("hypot_", lambda x, m: x.hypot_(m.tensor([1.0, 2.0, 3.0]))),
    ("copysign_", lambda x, m: x.copysign_(-1)),
    ("xlogy_", lambda x, m: x.xlogy_(m.tensor([2.0]))),
    ("lerp_", lambda x, m: x.lerp_(m.tensor([1.0, 2.0, 3.0]), 0.5)),
    ("addcmul_", lambda x, m: x.addcmul_(m.tensor([1.0]), m.tensor([2.0]), value=3)),
    ("addcdiv_", lambda x, m: x.addcdiv_(m.tensor([1.0]), m.tensor([2.0]), value=3)),
    ("ldexp_", lambda x, m: x.ldexp_(m.tensor([1, 2, 3]))),
    ("heaviside_", lambda x, m: x.heaviside_(m.tensor([0.5]))),
    ("nextafter_", lambda x, m: x.nextafter_(m.tensor([0.0]))),
    ("true_divide_", lambda x, m: x.true_divide_(2)),
    ("imod", lambda x, m: x.__imod__(1.25)),
    ("float_power_", lambda x, m: x.float_power_(2)),
    ("float_power_double", lambda x, m: x.double().float_power_(2)),
    ("atan2_int", lambda x, m: x.long().atan2_(m.tensor([1]))),
    ("gcd_", lambda x, m: x.long().gcd_(m.tensor([4]))),
    ("ilshift", lambda x, m: x.long().__ilshift__(2)),
]


@pytest.mark.parametrize("name,fn", INPLACE, ids=[n for n, _ in INPLACE])
def test_inplace_matches_torch(name, fn):
    out = []
    for m in (torch, ndgrad):
        x = m.tensor([0.5, -2.0, 3.0])
        try:
            r = fn(x, m)
        except Exception as e:    # noqa: BLE001
            out.append(type(e).__name__)
            continue
        out.append((str(r.dtype).split(".")[-1], r.numpy().tolist(), r._version))
    assert out[1] == out[0]


def test_scalar_forms_and_operators():
    for m in (torch, ndgrad):
        x = m.tensor([5.5, -5.5], requires_grad=True)
        assert type((x % 2).grad_fn).__name__ == "RemainderBackward0"
        assert type((2 % x).grad_fn).__name__ == "NotImplemented"
        assert type(m.fmod(x, 2).grad_fn).__name__ == "FmodBackward0"
        assert type(m.xlogy(2, x).grad_fn).__name__ == "XlogyBackward1"
        assert type(m.xlogy(x, 2).grad_fn).__name__ == "XlogyBackward2"
        assert type(m.rsub(x, x.detach()).grad_fn).__name__ == "RsubBackward0"
        assert (m.tensor([1, 2]) << 3).tolist() == [8, 16]
        assert (1 << m.tensor([1, 2])).tolist() == [2, 4]
        assert (m.tensor([-8]) >> 1).tolist() == [-4]
    x = ndgrad.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for aten::remainder is not implemented"):
        (2 % x).sum().backward()
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        ndgrad.heaviside(x, x).sum().backward()


ERRORS = [
    lambda m: m.remainder(m.tensor([5, 1]), m.tensor([0, 1])),
    lambda m: m.fmod(m.tensor([5]), 0),
    lambda m: m.remainder(m.tensor([True]), m.tensor([True])),
    lambda m: m.fmax(m.tensor([1j]), m.tensor([1.0])),
    lambda m: m.lerp(m.tensor([1.0]), m.tensor([1.0], dtype=m.float64), 0.5),
    lambda m: m.lerp(m.tensor([1, 2]), m.tensor([1, 2]), 0.5),
    lambda m: m.addcdiv(m.tensor([1.0]), m.tensor([1]), m.tensor([2])),
    lambda m: m.heaviside(m.tensor([1.0]), m.tensor([1.0], dtype=m.float64)),
    lambda m: m.complex(m.tensor([1]), m.tensor([2])),
    lambda m: m.complex(m.tensor([1.0]), m.tensor([2.0], dtype=m.float64)),
    lambda m: m.frexp(m.tensor([1])),
    lambda m: m.atan2(m.ones(2, 3), m.ones(4)),
    lambda m: m.tensor([1.0]).float_power_(2),
    lambda m: m.tensor([1]).atan2_(m.tensor([2])),
    lambda m: m.bitwise_left_shift(m.tensor([1.0]), 2),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    kinds = []
    for m in (torch, ndgrad):
        with pytest.raises(Exception) as info:
            ERRORS[i](m)
        kinds.append((type(info.value).__name__, str(info.value).split("\n")[0][:40]))
    assert kinds[1][0] == kinds[0][0]
    assert kinds[1][1] == kinds[0][1]


COMPLEX = {
    "lerp": lambda m, a, b, w: m.lerp(a, b, 0.3 + 0.2j),
    "lerp_tensor": lambda m, a, b, w: m.lerp(a, b, w),
    "addcmul": lambda m, a, b, w: m.addcmul(a, b, w, value=2 - 1j),
    "addcdiv": lambda m, a, b, w: m.addcdiv(a, b, w, value=2 - 1j),
    "logaddexp": lambda m, a, b, w: m.logaddexp(a, b),
    "rsub": lambda m, a, b, w: m.rsub(a, b, alpha=2j),
    "float_power": lambda m, a, b, w: m.float_power(a, b),
    "xlogy_refused": lambda m, a, b, w: m.xlogy(a, b),
    "atan2_refused": lambda m, a, b, w: m.atan2(a, b),
}


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_values_and_gradients_match_torch(name):
    out = []
    for m in (torch, ndgrad):
        a, b, w = (m.tensor(v, dtype=m.complex128, requires_grad=True) for v in (
            [1 + 2j, 3 - 1j, 0j], [2 - 1j, 0.5j, 2 + 0j], [0.3 + 0.1j, 0.8 - 0.2j, 0.5 + 0j]))
        try:
            r = COMPLEX[name](m, a, b, w)
        except Exception as e:    # noqa: BLE001
            out.append((type(e).__name__, str(e)))
            continue
        g = m.autograd.grad(r, (a, b, w), m.tensor([0.7 - 0.3j] * 3, dtype=m.complex128),
                            allow_unused=True)
        out.append([_np(r)] + [None if x is None else _np(x) for x in g])
    if isinstance(out[0], tuple):
        assert out[1] == out[0]
        return
    for x, y in zip(out[1], out[0]):
        assert (x is None) == (y is None)
        if y is not None:
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14, equal_nan=True)


def test_two_numbers_are_refused_like_torch():
    for name in ("remainder", "xlogy", "float_power", "bitwise_left_shift", "bitwise_right_shift"):
        for m in (torch, ndgrad):
            with pytest.raises(TypeError, match=f"{name}\\(\\) received an invalid combination"):
                getattr(m, name)(2, 3)


def test_inplace_comparisons_and_logical_ops_match_torch():
    out = []
    for m in (torch, ndgrad):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        y.eq_(m.tensor([2.0, 2.0]))
        r = [y.tolist(), type(y.grad_fn).__name__, y._version]
        y.sum().backward()
        r.append(x.grad.tolist())
        z = x * 1
        z.lt_(1.5)
        r += [z.tolist(), type(z.grad_fn).__name__]
        w = x * 1
        w.logical_xor_(m.tensor([1.0, 0.0]))
        r += [w.tolist(), type(w.grad_fn).__name__]   # not recorded: the history stays
        i = m.tensor([1, 2])
        i.ge_(m.tensor([1.5, 2.0]))
        b = m.tensor([True, False])
        b &= m.tensor([True, True])
        b |= False
        b ^= True
        f = x * 1
        f.floor_divide_(0.7)
        r += [i.tolist(), b.tolist(), type(f.grad_fn).__name__,
              m.bitwise_and(6, m.tensor([3, 5], dtype=m.int8)).tolist()]
        for bad in (lambda L: L.tensor([1.0]).lt_(L.tensor([1j])),
                    lambda L: L.tensor([1.0]).eq_(L.tensor([1.0, 2.0])),
                    lambda L: L.bitwise_or(L.tensor([1]), 1.5)):
            with pytest.raises(Exception) as info:
                bad(m)
            r.append((type(info.value).__name__, str(info.value)))
        out.append(r)
    assert out[1] == out[0]


@pytest.mark.parametrize("name", sorted(DIFF))
def test_special_values_forward_mode_matches_torch(name):
    a0, b0 = zip(*itertools.product(VALUES, VALUES))
    rng = np.random.default_rng(1)
    ta, tb = rng.standard_normal(len(a0)), rng.standard_normal(len(a0))
    out = []
    for m in (torch, ndgrad):
        fw = m.autograd.forward_ad
        with fw.dual_level():
            a = fw.make_dual(m.tensor(a0, dtype=m.float64), m.tensor(ta, dtype=m.float64))
            b = fw.make_dual(m.tensor(b0, dtype=m.float64), m.tensor(tb, dtype=m.float64))
            t = fw.unpack_dual(DIFF[name](m, a, b)).tangent
            out.append(np.zeros(len(a0)) if t is None else _np(t))
    np.testing.assert_allclose(out[1], out[0], rtol=1e-12, equal_nan=True)


# float_power's second derivative at a zero exponent of a negative or infinite base is pow's
# (ops/pointwise.py), which differs from PyTorch's there.
@pytest.mark.parametrize("name", sorted(set(DIFF) - {"float_power"}))
def test_special_values_second_derivatives_match_torch(name):
    out = []
    for m in (torch, ndgrad):
        a, b = _pairs(m)
        g = m.autograd.grad(DIFF[name](m, a, b).sum(), (a, b), create_graph=True,
                            allow_unused=True)
        terms = [(x * (i + 1.5)).sum() for i, x in enumerate(g)
                 if x is not None and x.requires_grad]
        if not terms:
            out.append(None)
            continue
        gg = m.autograd.grad(sum(terms), (a, b), allow_unused=True)
        out.append([np.zeros(len(VALUES) ** 2) if x is None else _np(x) for x in gg])
    if out[0] is None or out[1] is None:
        assert out[0] is out[1]
        return
    for x, y in zip(out[1], out[0]):
        np.testing.assert_allclose(x, y, rtol=1e-10, equal_nan=True)


def test_bitwise_operators_match_torch():
    cases = (lambda L: L.tensor([1.0]) & 1, lambda L: L.tensor([1]) | 1.5,
             lambda L: 1.5 ^ L.tensor([1]), lambda L: L.tensor([1]) & L.tensor([1j]),
             lambda L: L.tensor([True, False]) & L.tensor([True, True]),
             lambda L: 5 & L.tensor([3], dtype=L.int8),
             lambda L: L.tensor([3], dtype=L.uint8) | 300)
    for case in cases:
        out = []
        for m in (torch, ndgrad):
            try:
                r = case(m)
                out.append((str(r.dtype).split(".")[-1], r.tolist()))
            except Exception as e:    # noqa: BLE001
                out.append((type(e).__name__, str(e)))
        assert out[1] == out[0]
