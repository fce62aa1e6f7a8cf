"""Errors, dtype rules and ties of softmax, logsumexp, cumsum, var/std and amax/amin vs torch."""

import numpy as np
import pytest
import torch

import ndgrad


def _both(fn):
    """(ndgrad result or exception type, torch result or exception type)."""
    out = []
    for m in (ndgrad, torch):
        try:
            out.append(fn(m))
        except Exception as e:  # noqa: BLE001
            out.append(type(e))
    return out


CASES = {
    "softmax_int": lambda m: m.tensor([1, 2, 3]).softmax(0),
    "log_softmax_int": lambda m: m.tensor([1, 2, 3]).log_softmax(0),
    "softmax_int_dtype": lambda m: m.tensor([1, 2, 3]).softmax(0, dtype=m.float64),
    "softmax_dim_range": lambda m: m.ones(2, 3).softmax(2),
    "softmax_0d": lambda m: m.tensor(2.0).softmax(0),
    "softmax_inf": lambda m: m.tensor([float("-inf"), 0.0, 1000.0]).softmax(0),
    "log_softmax_large": lambda m: m.tensor([1000.0, 0.0]).log_softmax(0),
    "logsumexp_int": lambda m: m.tensor([1, 2, 3]).logsumexp(0),
    "logsumexp_large": lambda m: m.tensor([1000.0, 1000.0]).logsumexp(0),
    "logsumexp_all_neg_inf": lambda m: m.tensor([float("-inf")] * 2).logsumexp(0),
    "logsumexp_dim_range": lambda m: m.ones(2, 3).logsumexp(-3),
    "cumsum_int8": lambda m: m.tensor([1, 2], dtype=m.int8).cumsum(0),
    "cumsum_bool": lambda m: m.tensor([True, False, True]).cumsum(0),
    "cumsum_dtype": lambda m: m.tensor([1, 2]).cumsum(0, dtype=m.float32),
    "cumsum_dim_range": lambda m: m.ones(2).cumsum(1),
    "var_int": lambda m: m.tensor([1, 2]).var(),
    "var_legacy_unbiased": lambda m: m.tensor([1.0, 2.0, 4.0]).var(False),
    "std_one_element": lambda m: m.tensor([1.0]).std(),
    "var_dim_range": lambda m: m.ones(2).var(1),
    "amax_empty_dim": lambda m: m.ones(0, 3).amax(0),
    "amax_empty_other_dim": lambda m: m.ones(0, 3).amax(1),
    "amax_int": lambda m: m.tensor([[1, 5], [3, 2]]).amax(1),
    "index_select_float_index": lambda m: m.ones(2, 3).index_select(1, m.tensor([0.0])),
    "index_select_out_of_range": lambda m: m.ones(2, 3).index_select(1, m.tensor([5])),
    # PyTorch raises IndexError except in its dim-1 kernel of a tensor of 2 or more dims
    "index_select_out_of_range_1d": lambda m: m.ones(3).index_select(0, m.tensor([3])),
    "index_select_negative_index": lambda m: m.ones(3).index_select(0, m.tensor([-1])),
    "index_select_out_of_range_dim0": lambda m: m.ones(2, 3).index_select(0, m.tensor([2])),
    "index_select_out_of_range_dim2": lambda m: m.ones(2, 3, 4).index_select(2, m.tensor([4])),
    "index_select_out_of_range_0d": lambda m: m.tensor(1.0).index_select(0, m.tensor([1])),
    "index_select_2d_index": lambda m: m.ones(2, 3).index_select(1, m.tensor([[0]])),
    "index_select_scalar": lambda m: m.tensor(1.0).index_select(0, m.tensor([0, 0])),
    "index_select_0d_index": lambda m: m.ones(2, 3).index_select(1, m.tensor(1)),
    "amin_dim_range": lambda m: m.ones(2, 3).amin(3),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    got, want = _both(CASES[name])
    if isinstance(want, type):
        assert got is want
        return
    assert not isinstance(got, type), got
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(np.asarray(got.tolist(), dtype=float),
                               np.asarray(want.tolist(), dtype=float), rtol=1e-6)


@pytest.mark.parametrize("fn", ["amax", "amin"])
def test_ties_share_gradient(fn):
    vals = [[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]] if fn == "amax" else [[1.0, 1.0, 3.0], [2.0] * 3]
    grads = []
    for m in (ndgrad, torch):
        x = m.tensor(vals, requires_grad=True)
        getattr(x, fn)(1).sum().backward()
        grads.append(np.asarray(x.grad.tolist()))
    np.testing.assert_allclose(grads[0], grads[1])


def test_node_names_and_saved():
    x = ndgrad.randn(2, 3, requires_grad=True)
    y = x.softmax(1)
    assert y.grad_fn.name() == "SoftmaxBackward0" and y.grad_fn._saved_dim == 1
    assert ndgrad.equal(y.grad_fn._saved_result, y)
    assert x.std(1).grad_fn.name() == "StdBackward0"
    assert x.amin(1).grad_fn.name() == "AminBackward0"


@pytest.mark.parametrize("fn", ["std", "std_mean"])
def test_std_of_constant_slice_has_zero_gradient(fn):
    # std = 0 on a constant row: torch's derivative masks the 0/0 (backward, double backward
    # and forward mode), so a loss with x.std() stays finite on constant inputs
    def run(m):
        import importlib
        fw = importlib.import_module(m.__name__ + ".autograd.forward_ad")
        x = m.tensor([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]], dtype=m.float64, requires_grad=True)
        s = getattr(m, fn)(x, 1)
        s = s[0] if isinstance(s, tuple) else s
        (g,) = m.autograd.grad(s.sum(), x, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), x)
        with fw.dual_level():
            d = fw.make_dual(x.detach(), m.ones(2, 3, dtype=m.float64))
            out = getattr(m, fn)(d, 1)
            tan = fw.unpack_dual(out[0] if isinstance(out, tuple) else out).tangent
        return [g.tolist(), gg.tolist(), tan.tolist()]

    got, want = run(ndgrad), run(torch)
    np.testing.assert_allclose(np.array(got[0]), np.array(want[0]), rtol=1e-12)
    np.testing.assert_allclose(np.array(got[1]), np.array(want[1]), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.array(got[2]), np.array(want[2]), atol=1e-15)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name,fn", [
    ("sum_dim", lambda t: t.sum(0)), ("sum_all", lambda t: t.sum()),
    ("sum_dims", lambda t: t.sum((0, 2), keepdim=True)), ("mean_dim", lambda t: t.mean(0)),
    ("mean_all", lambda t: t.mean()), ("nansum", lambda t: t.nansum(1)),
    ("cumsum", lambda t: t.cumsum(0)), ("sum_to_size", lambda t: t.sum_to_size(1, 9, 1)),
    ("var_dim", lambda t: t.var(0)), ("std_all", lambda t: t.std()),
    ("std_dims", lambda t: t.std((0, 2), correction=0)),
])
def test_low_precision_sums_accumulate_in_float32(dtype, name, fn):
    # torch sums float16/bfloat16 in float32 and rounds each result once: the results (and a
    # bias gradient, a sum over the batch) are bit-identical; NumPy's reduce rounds each step
    x = torch.randn(64, 9, 5, generator=torch.Generator().manual_seed(0)).to(getattr(torch, dtype))
    want = fn(x)
    got = fn(ndgrad.tensor(x.float().numpy()).to(getattr(ndgrad, dtype)))
    assert str(got.dtype) == str(want.dtype).replace("torch", "ndgrad")
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    if name == "sum_dim":
        w = torch.zeros(5, 9, dtype=x.dtype, requires_grad=True)
        b = torch.zeros(5, dtype=x.dtype, requires_grad=True)
        torch.nn.functional.linear(x[:, :, 0], w, b).backward(x[:, :5, 1])
        nx = ndgrad.tensor(x.float().numpy()).to(getattr(ndgrad, dtype))
        nw = ndgrad.zeros(5, 9, dtype=nx.dtype, requires_grad=True)
        nb = ndgrad.zeros(5, dtype=nx.dtype, requires_grad=True)
        ndgrad.nn.functional.linear(nx[:, :, 0], nw, nb).backward(nx[:, :5, 1])
        np.testing.assert_array_equal(nb.grad.float().numpy(), b.grad.float().numpy())


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("fn", ["var_mean", "std_mean"])
def test_low_precision_var_std_mean_round_once(dtype, fn):
    # a constant row has std 0 (accumulating in bfloat16 gave 0.15), and random rows match
    x = torch.randn(4, 300, generator=torch.Generator().manual_seed(1)) * 3
    x[0] = 1.0
    want = getattr(torch, fn)(x.to(getattr(torch, dtype)), 1)
    got = getattr(ndgrad, fn)(ndgrad.tensor(x.numpy()).to(getattr(ndgrad, dtype)), 1)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.float().numpy(), b.float().numpy())
