"""Rearranging ops (ops/rearrange.py) beyond what op_db checks: which results are views, the
nodes composites record, errors against PyTorch's, and as_strided_scatter's gradient (checked
against finite differences: PyTorch's own backward of it disagrees with them)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.autograd import gradcheck


def _pair(shape=(3, 4), complex_=False):
    a = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    if complex_:
        a = a * (1 + 0.5j)
    return ndgrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


VIEWS = {
    "unflatten": lambda m, b: b.unflatten(1, (2, 2)),
    "ravel": lambda m, b: b.ravel(),
    "T": lambda m, b: b.T,
    "mT": lambda m, b: b.mT,
    "atleast_3d": lambda m, b: m.atleast_3d(b),
    "tensor_split": lambda m, b: m.tensor_split(b, 2, 1)[0],
    "hsplit": lambda m, b: m.hsplit(b, [1, 3])[1],
    "swapdims": lambda m, b: b.swapdims(0, 1),
    "moveaxis": lambda m, b: m.moveaxis(b, 0, 1),
    "broadcast_to": lambda m, b: m.broadcast_to(b, (2, 3, 4)),
    "meshgrid": lambda m, b: m.meshgrid(b[0], b[1], indexing="ij")[0],
    "repeat_interleave": lambda m, b: b.repeat_interleave(2),
    "flip": lambda m, b: m.flip(b, (0,)),
    "roll": lambda m, b: m.roll(b, 1),
    "repeat": lambda m, b: b.repeat(1, 2),
    "diag": lambda m, b: m.diag(b),
    "unsafe_split": lambda m, b: b.unsafe_split(2)[0],
    "narrow_copy": lambda m, b: b.narrow_copy(1, 0, 2),
    "permute_copy": lambda m, b: m.permute_copy(b, (1, 0)),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_exactly_where_torch_has_them(name):
    x, tx = _pair()
    y, ty = VIEWS[name](ndgrad, x * 1), VIEWS[name](torch, tx * 1)
    assert (y._base is not None) == ty._is_view()
    assert y.grad_fn.name() == ty.grad_fn.name()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy())


WRITES = {
    "unflatten": lambda m, b: b.unflatten(1, (2, 2)),
    "T": lambda m, b: b.T,
    "tensor_split": lambda m, b: m.tensor_split(b, 2, 1)[1],
    "unfold": lambda m, b: b.unfold(1, 2, 2),
    "view_as_real": lambda m, b: m.view_as_real(b),
    "view_as_real_of_transpose": lambda m, b: m.view_as_real(b.T),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_in_place_through_views_matches_torch(name):
    cplx = name.startswith("view_as_real")
    out = []
    for m, x in zip((ndgrad, torch), _pair(complex_=cplx)):
        b = x * 1
        v = WRITES[name](m, b)
        before = b._version
        v.mul_(2)
        loss = (b * b).abs().sum() if cplx else (b * b).sum()
        (g,) = m.autograd.grad(loss, x)
        out.append((b.detach().resolve_conj().numpy(), b._version - before,
                    g.resolve_conj().numpy()))
    (b1, v1, g1), (b2, v2, g2) = out
    np.testing.assert_allclose(b1, b2)
    assert v1 == v2
    np.testing.assert_allclose(g1, g2)


def test_view_as_complex_shares_memory():
    x = ndgrad.zeros(3, 2)
    c = ndgrad.view_as_complex(x)
    c[1] = 1 + 2j
    assert x.tolist() == [[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]]
    assert c._base is x and x._version == c._version == 1


@pytest.mark.parametrize("args", [((2, 2), (1, 2), 0), ((2, 2), (1, 2), 1), ((3,), (4,), 0)])
def test_as_strided_scatter_gradient_against_finite_differences(args):
    x = ndgrad.randn(3, 4, dtype=ndgrad.float64, requires_grad=True)
    src = ndgrad.randn(*args[0], dtype=ndgrad.float64, requires_grad=True)
    assert gradcheck(lambda a, b: ndgrad.as_strided_scatter(a, b, *args), (x, src),
                     check_forward_ad=True)
    y = ndgrad.as_strided_scatter(x, src, *args)
    ty = torch.as_strided_scatter(torch.tensor(x.detach().numpy()),
                                  torch.tensor(src.detach().numpy()), *args)
    np.testing.assert_allclose(y.detach().numpy(), ty.numpy())


ERRORS = [
    "m.flip(x, (0, 0))", "m.roll(x, (1, 2), 0)", "m.roll(x, (1, 2))", "m.rot90(v)",
    "m.rot90(x, 1, (0, 0))", "x.repeat(2)", "m.repeat_interleave(x, m.tensor([1, 2]), 1)",
    "m.repeat_interleave(x, -1)", "m.broadcast_tensors(x, m.zeros(4))", "m.hstack([])",
    "m.meshgrid(x, v, indexing='ij')", "m.combinations(x)", "m.block_diag(m.zeros(1, 1, 1))",
    "m.diag(m.zeros(1, 1, 1))", "m.diag_embed(x, 0, 0, 0)", "m.tensor_split(x, 0)",
    "m.hsplit(x, 2)", "m.vsplit(v, 1)", "m.dsplit(x, 2)", "x.unflatten(1, (2, 2))",
    "m.select_scatter(x, m.zeros(4), 1, 0)", "m.view_as_real(x)", "m.view_as_complex(x)",
    "m.view_as_complex(m.zeros(3, 2).t())", "m.fill(x, m.zeros(2))", "v.mT", "v.mH", "v.H",
    "m.narrow_copy(x, 1, 0, 5)", "m.narrow_copy(x, 3, 0, 1)", "m.squeeze_copy(x, 5)",
]


@pytest.mark.parametrize("expr", ERRORS)
def test_errors_match_torch(expr):
    got = []
    for m in (torch, ndgrad):
        env = {"m": m, "x": m.zeros(2, 3), "v": m.zeros(3)}
        with pytest.raises(Exception) as info:
            eval(expr, env)   # noqa: S307
        got.append(info.value)
    assert type(got[1]) is type(got[0])
    assert str(got[1])[:30] == str(got[0])[:30]


def test_small_behaviours():
    x = ndgrad.randn(2, 3, requires_grad=True)
    assert ndgrad.resolve_conj(x) is x and ndgrad.resolve_neg(x) is x
    assert not x.is_conj() and not x.is_neg()
    assert ndgrad.conj_physical(x) is x and ndgrad.atleast_2d(x) is x
    assert ndgrad.cartesian_prod(x[0]) is not None
    assert ndgrad.repeat_interleave(ndgrad.tensor([2, 0, 1])).tolist() == [0, 0, 2]
    c = ndgrad.tensor([1 + 1j, 2 - 1j])
    c.conj_physical_()
    assert c.tolist() == [1 - 1j, 2 + 1j] and c._version == 1
    a, b = ndgrad.broadcast_tensors(x, x[0])
    assert a is x and b.shape == x.shape
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ndgrad.meshgrid(x[0], x[1])
        _ = ndgrad.zeros(2, 3, 4).T
    assert len(w) == 2
