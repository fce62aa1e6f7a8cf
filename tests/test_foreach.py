"""``ndgrad._foreach_*`` (ndgrad/_foreach.py) against torch: values, dtypes, the list the
in-place forms return, torch's errors for empty lists, mismatched lengths and unsupported
argument forms, and gradients through the out-of-place forms."""

import numpy as np
import pytest
import torch

import ndgrad


def _lists(m):
    return ([m.tensor([1.0, -2.0]), m.tensor([[0.5, 3.0], [4.0, -0.25]])],
            [m.tensor([2.0, 0.5]), m.tensor([[1.5, -1.0], [2.0, 0.75]])],
            [m.tensor([0.25, 4.0]), m.tensor([[2.0, 0.5], [-1.0, 3.0]])])


CALLS = {
    "add_scalar": lambda m, a, b, c: m._foreach_add(a, 1.5),
    "add_scalars": lambda m, a, b, c: m._foreach_add(a, [1, 2.5]),
    "add_list_alpha": lambda m, a, b, c: m._foreach_add(a, b, alpha=0.5),
    "add_tensor_alpha": lambda m, a, b, c: m._foreach_add(a, m.tensor(2.0), alpha=3),
    "add_1d_tensor": lambda m, a, b, c: m._foreach_add(a, m.ones(2)),
    "add_scalar_alpha": lambda m, a, b, c: m._foreach_add(a, 1, alpha=2),
    "add_str": lambda m, a, b, c: m._foreach_add(a, "x"),
    "add_not_list": lambda m, a, b, c: m._foreach_add(a[0], 1),
    "add_bad_element": lambda m, a, b, c: m._foreach_add([a[0], 3], 1),
    "add_mixed_other": lambda m, a, b, c: m._foreach_add(a, [b[0], 1.0]),
    "add_empty": lambda m, a, b, c: m._foreach_add([], 1),
    "add_short_list": lambda m, a, b, c: m._foreach_add(a, b[:1]),
    "add_short_scalars": lambda m, a, b, c: m._foreach_add(a, [1.0]),
    "add_shape_mismatch": lambda m, a, b, c: m._foreach_add(a, b[::-1]),
    "add_int_float_": lambda m, a, b, c: m._foreach_add_([m.ones(2, dtype=m.long)], 1.5),
    "add_int_float": lambda m, a, b, c: m._foreach_add([m.ones(2, dtype=m.long)], [1.5]),
    "add_complex": lambda m, a, b, c: m._foreach_add(a, 1 + 2j),
    "sub_list": lambda m, a, b, c: m._foreach_sub(a, b, alpha=2),
    "sub_scalar_alpha": lambda m, a, b, c: m._foreach_sub(a, 1, alpha=0.5),
    "sub_tensor": lambda m, a, b, c: m._foreach_sub(a, m.tensor(2.0), alpha=2),
    "sub_bool": lambda m, a, b, c: m._foreach_sub([m.ones(2, dtype=m.bool)], 1),
    "mul_tensor": lambda m, a, b, c: m._foreach_mul(a, m.tensor(-2.0)),
    "mul_list": lambda m, a, b, c: m._foreach_mul(a, b),
    "mul_alpha": lambda m, a, b, c: m._foreach_mul(a, b, alpha=0.5),
    "div_scalars": lambda m, a, b, c: m._foreach_div(a, [2, 4]),
    "div_list": lambda m, a, b, c: m._foreach_div(a, b),
    "clamp_min": lambda m, a, b, c: m._foreach_clamp_min(a, 0.75),
    "clamp_max_list": lambda m, a, b, c: m._foreach_clamp_max(a, b),
    "clamp_min_0d": lambda m, a, b, c: m._foreach_clamp_min(a, m.tensor(2.0)),
    "maximum": lambda m, a, b, c: m._foreach_maximum(a, b),
    "minimum_scalars": lambda m, a, b, c: m._foreach_minimum(a, [0.0, 1.0]),
    "pow_scalar": lambda m, a, b, c: m._foreach_pow(a, 2),
    "pow_list": lambda m, a, b, c: m._foreach_pow(b, [2, 3]),
    "pow_rscalar": lambda m, a, b, c: m._foreach_pow(2.0, a),
    "lerp_scalar": lambda m, a, b, c: m._foreach_lerp(a, b, 0.25),
    "lerp_scalars": lambda m, a, b, c: m._foreach_lerp(a, b, [0.5, 0.2]),
    "lerp_list": lambda m, a, b, c: m._foreach_lerp(a, b, c),
    "addcmul": lambda m, a, b, c: m._foreach_addcmul(a, b, c, value=0.5),
    "addcmul_scalars": lambda m, a, b, c: m._foreach_addcmul(a, b, c, [2, 3]),
    "addcdiv_tensor": lambda m, a, b, c: m._foreach_addcdiv(a, b, c, m.tensor([2.0, 3])),
    "addcmul_tensor_2d": lambda m, a, b, c: m._foreach_addcmul(a, b, c, m.ones(1, 2)),
    "addcmul_tensor_len": lambda m, a, b, c: m._foreach_addcmul(a, b, c, m.ones(1)),
    "addcmul_short": lambda m, a, b, c: m._foreach_addcmul(a, b[:1], c),
    "norm": lambda m, a, b, c: m._foreach_norm(a),
    "norm_1": lambda m, a, b, c: m._foreach_norm(a, 1),
    "norm_inf": lambda m, a, b, c: m._foreach_norm(a, float("inf")),
    "norm_dtype": lambda m, a, b, c: m._foreach_norm(a, dtype=m.float64),
    "norm_str": lambda m, a, b, c: m._foreach_norm(a, "fro"),
    "norm_long": lambda m, a, b, c: m._foreach_norm([m.ones(2, dtype=m.long)]),
    "max": lambda m, a, b, c: m._foreach_max(a),
    "max_empty": lambda m, a, b, c: m._foreach_max([m.ones(0)]),
    "exp": lambda m, a, b, c: m._foreach_exp(a),
    "exp_long": lambda m, a, b, c: m._foreach_exp([m.ones(2, dtype=m.long)]),
    "exp_long_": lambda m, a, b, c: m._foreach_exp_([m.ones(2, dtype=m.long)]),
    "neg_bool": lambda m, a, b, c: m._foreach_neg([m.ones(2, dtype=m.bool)]),
    "sign_sqrt_abs": lambda m, a, b, c: (m._foreach_sign(a) + m._foreach_sqrt(
        m._foreach_abs(a)) + m._foreach_reciprocal(b) + m._foreach_sigmoid(c)),
    "copy_": lambda m, a, b, c: m._foreach_copy_(a, b),
    "copy_cast": lambda m, a, b, c: m._foreach_copy_([m.ones(2)], [m.ones(1, dtype=m.long)]),
    "copy_bad_shape": lambda m, a, b, c: m._foreach_copy_(a, [b[0], m.ones(3)]),
    "zero_": lambda m, a, b, c: m._foreach_zero_(a),
    "mul_": lambda m, a, b, c: m._foreach_mul_(a, 3),
    "sub_list_": lambda m, a, b, c: m._foreach_sub_(a, b, alpha=0.1),
    "maximum_": lambda m, a, b, c: m._foreach_maximum_(a, b),
    "lerp_": lambda m, a, b, c: m._foreach_lerp_(a, b, 0.1),
    "addcdiv_": lambda m, a, b, c: m._foreach_addcdiv_(a, b, c, 0.5),
    "sqrt_": lambda m, a, b, c: m._foreach_sqrt_(c),
    "clamp_max_": lambda m, a, b, c: m._foreach_clamp_max_(a, [0.0, 1.0]),
}


def _outcome(m, fn):
    a, b, c = _lists(m)
    try:
        out = fn(m, a, b, c)
    except (TypeError, RuntimeError) as e:
        return (type(e).__name__, str(e).split("\n")[0].split(", but expected")[0])
    # the in-place forms return the very tensors of their first argument, in a list
    same = isinstance(out, list) and all(x is y for x, y in zip(out, a + b + c))
    def values(t):      # NaN as a number that compares equal
        return np.nan_to_num(np.round(t.numpy().astype(complex), 5), nan=1e300).tolist()
    return (type(out).__name__, same, [(str(t.dtype).split(".")[1], values(t)) for t in out],
            [values(t) for t in a + c])


@pytest.mark.parametrize("name", sorted(CALLS))
def test_foreach_matches_torch(name):
    fn = CALLS[name]
    assert _outcome(ndgrad, fn) == _outcome(torch, fn)


@pytest.mark.parametrize("op", ["add", "mul", "lerp", "addcmul", "norm", "pow", "exp"])
def test_foreach_gradients_match_torch(op):
    grads = []
    for m in (torch, ndgrad):
        m.manual_seed(0)
        a = [m.randn(3, dtype=m.float64, requires_grad=True),
             m.randn(2, 2, dtype=m.float64, requires_grad=True)]
        b = [m.randn(3, dtype=m.float64), m.randn(2, 2, dtype=m.float64)]
        calls = {"add": lambda m, a, b: m._foreach_add(a, b, alpha=0.5),
                 "mul": lambda m, a, b: m._foreach_mul(a, a),
                 "lerp": lambda m, a, b: m._foreach_lerp(a, b, 0.3),
                 "addcmul": lambda m, a, b: m._foreach_addcmul(b, a, a, [2.0, -1.0]),
                 "norm": lambda m, a, b: m._foreach_norm(a, 3),
                 "pow": lambda m, a, b: m._foreach_pow(a, 2),
                 "exp": lambda m, a, b: m._foreach_exp(a)}
        out = calls[op](m, a, b)
        sum((o * (i + 1)).sum() for i, o in enumerate(out)).backward()
        grads.append([x.grad.numpy() for x in a])
    for g_t, g_n in zip(*grads):
        np.testing.assert_allclose(g_n, g_t, rtol=1e-12)


def test_foreach_inplace_on_leaf_and_ema():
    for m in (torch, ndgrad):
        leaf = [m.ones(2, requires_grad=True)]
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            m._foreach_mul_(leaf, 2)
        with m.no_grad():
            m._foreach_mul_(leaf, 2)
        assert leaf[0].tolist() == [2.0, 2.0]
    # diffusers' EMA update: ema -= (1 - decay) * (ema - params)
    res = []
    for m in (torch, ndgrad):
        ema, params = [m.zeros(3), m.ones(2)], [m.arange(3.0), m.full((2,), 4.0)]
        m._foreach_sub_(ema, m._foreach_sub(ema, params), alpha=0.1)
        m._foreach_lerp_(ema, params, 0.5)
        m._foreach_mul_(ema, m._foreach_norm(params)[0])
        res.append([e.tolist() for e in ema])
    np.testing.assert_allclose(np.concatenate(res[1]), np.concatenate(res[0]), rtol=1e-6)
