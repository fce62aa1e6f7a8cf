"""Sparse COO tensors and sparse gradients against torch: construction and its errors,
coalescing, conversions, ndgrad.sparse ops, seed 000's AccumulateGrad rules for every
sparse/dense combination, the optimizers that take sparse gradients, save/load."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import torch

import ndgrad

warnings.filterwarnings("ignore", message="Sparse invariant checks")

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]
VAL = [3.0, 4.0, 5.0, 1.0]


def _both(lib, idx=IDX, val=VAL, size=(2, 3)):
    return lib.sparse_coo_tensor(idx, val, size)


def _same(n, t):
    assert n.is_sparse == t.is_sparse
    if t.is_sparse:
        assert n.is_coalesced() == t.is_coalesced()
        np.testing.assert_array_equal(n._indices().numpy(), t._indices().numpy())
        np.testing.assert_allclose(n._values().numpy(), t._values().numpy())
        assert tuple(n.shape) == tuple(t.shape)
    np.testing.assert_allclose(n.to_dense().numpy(), t.to_dense().numpy())


def test_construction_coalesce_and_conversions():
    n, t = _both(ndgrad), _both(torch)
    _same(n, t)
    assert n.layout is ndgrad.sparse_coo and n._nnz() == 4
    assert (n.sparse_dim(), n.dense_dim()) == (t.sparse_dim(), t.dense_dim())
    _same(n.coalesce(), t.coalesce())
    _same(n + n, t + t)
    _same((n * 2).coalesce(), (t * 2).coalesce())
    for fn in ("values", "indices"):
        with pytest.raises(RuntimeError, match=f"Cannot get {fn} on an uncoalesced tensor"):
            getattr(n, fn)()
    d = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, 0.0]])
    _same(ndgrad.tensor(d).to_sparse(), torch.tensor(d).to_sparse())
    _same(ndgrad.tensor(d).to_sparse(1), torch.tensor(d).to_sparse(1))
    hybrid_n = ndgrad.sparse_coo_tensor([[0, 2]], ndgrad.ones(2, 3), (4, 3))
    hybrid_t = torch.sparse_coo_tensor([[0, 2]], torch.ones(2, 3), (4, 3))
    _same(hybrid_n, hybrid_t)
    assert repr(n).startswith("tensor(indices=tensor([[0, 1, 1, 0],")
    assert "layout=ndgrad.sparse_coo" in repr(n)   # ndgrad names its own layouts and dtypes


@pytest.mark.parametrize("idx,val,size,msg", [
    ([[0, -1]], [1.0, 2.0], (3,), "found negative index -1 for dim 0"),
    ([[0, 3]], [1.0, 2.0], (3,), "size is inconsistent with indices: for dim 0, size is 3 but "
                                 "found index 3"),
    ([[0, 1]], [1.0], (3,), "indices and values must have same nnz"),
])
def test_construction_errors_like_torch(idx, val, size, msg):
    # (torch checks only when asked: an invalid tensor would crash its kernels)
    for lib in (torch, ndgrad):
        with pytest.raises(RuntimeError, match=msg):
            lib.sparse_coo_tensor(idx, val, size, check_invariants=True)


def test_sparse_namespace():
    n, t = _both(ndgrad), _both(torch)
    assert ndgrad.sparse.sum(n).item() == torch.sparse.sum(t).item()
    _same(ndgrad.sparse.sum(n, 1), torch.sparse.sum(t, 1))
    dn = ndgrad.arange(6.0).reshape(3, 2).requires_grad_(True)
    dt = torch.arange(6.0).reshape(3, 2).requires_grad_(True)
    out_n, out_t = ndgrad.sparse.mm(n, dn), torch.sparse.mm(t, dt)
    np.testing.assert_allclose(out_n.detach().numpy(), out_t.detach().numpy())
    out_n.sum().backward()
    out_t.sum().backward()
    np.testing.assert_allclose(dn.grad.numpy(), dt.grad.numpy())


def _sparse_grad_fn(lib):
    class SparseGrad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, w):
            return w.sum()

        @staticmethod
        def backward(ctx, g):
            return lib.sparse_coo_tensor([[0, 1], [1, 2]], [1.0, 2.0], (2, 3))
    return SparseGrad.apply


def _scenario(lib, steps, create_graph=False):
    """Run backward passes giving sparse ('s') or dense ('d') gradients; record after each
    the gradient's layout, values, coalescing and whether it is the same object as before."""
    w = lib.ones(2, 3, requires_grad=True)
    sparse_grad = _sparse_grad_fn(lib)
    seen, prev = [], None
    for kind in steps:
        out = sparse_grad(w) if kind == "s" else (w * 2).sum()
        out.backward(create_graph=create_graph)
        g = w.grad
        seen.append((g.is_sparse, g.to_dense().detach().numpy().tolist(),
                     g.is_coalesced() if g.is_sparse else None, g is prev))
        prev = g
    return seen


@pytest.mark.parametrize("steps", ["s", "ss", "sd", "ds", "dss", "sds", "ssd"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_accumulate_grad_sparse_rules_like_torch(steps, create_graph):
    """Seed 000: sparse + sparse stays sparse (uncoalesced), dense += sparse in place, sparse +
    dense becomes a new dense gradient; under create_graph everything is out of place."""
    assert _scenario(ndgrad, steps, create_graph) == _scenario(torch, steps, create_graph)


def test_optimizers_with_sparse_gradients():
    for name in ("SGD", "Adagrad", "SparseAdam", "Adam", "RMSprop"):
        res = []
        for lib in (torch, ndgrad):
            w = lib.zeros(3, 2, requires_grad=True)
            opt = getattr(lib.optim, name)([w], lr=0.1)
            try:
                for k in range(3):
                    w.grad = lib.sparse_coo_tensor([[0, 2, 0]], lib.ones(3, 2) * (k + 1),
                                                   (3, 2))
                    opt.step()
                res.append(w.detach().numpy().copy())
            except RuntimeError as e:
                res.append(str(e))
        if isinstance(res[0], str):
            assert res[1] == res[0]
        else:
            np.testing.assert_allclose(res[1], res[0], rtol=1e-6)
    w = ndgrad.zeros(2, requires_grad=True)
    w.grad = ndgrad.ones(2)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        ndgrad.optim.SparseAdam([w]).step()


def test_save_load_sparse_both_ways():
    n = _both(ndgrad)
    buf = io.BytesIO()
    ndgrad.save({"s": n}, buf)
    buf.seek(0)
    _same(n, torch.load(buf)["s"])
    buf = io.BytesIO()
    torch.save({"s": _both(torch).coalesce()}, buf)
    buf.seek(0)
    _same(ndgrad.load(buf)["s"], _both(torch).coalesce())


@pytest.mark.parametrize("kw", [dict(), dict(padding_idx=0)])
def test_embedding_sparse_gradient_trains_like_torch(kw):
    """embedding(sparse=True): a sparse COO gradient per backward (torch's indices and
    values), accumulated sparse, and SparseAdam's update equal to torch's."""
    res = []
    for lib in (torch, ndgrad):
        emb = lib.nn.Embedding(5, 3, sparse=True, **kw)
        with lib.no_grad():
            emb.weight.copy_(lib.arange(15.0).reshape(5, 3))
        opt = lib.optim.SparseAdam(emb.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            (emb(lib.tensor([[1, 2, 1], [0, 4, 1]])) ** 2).sum().backward()
            (emb(lib.tensor([3, 1])) ** 2).sum().backward()
            g = emb.weight.grad
            opt.step()
        res.append((g.is_sparse, g.is_coalesced(), g._indices().numpy(), g._values().numpy(),
                    emb.weight.detach().numpy()))
    assert res[1][:2] == res[0][:2] == (True, False)
    np.testing.assert_array_equal(res[1][2], res[0][2])
    np.testing.assert_allclose(res[1][3], res[0][3], rtol=1e-6)
    np.testing.assert_allclose(res[1][4], res[0][4], rtol=1e-6)


def test_embedding_sparse_refuses_scale_grad_by_freq():
    for lib in (torch, ndgrad):
        emb = lib.nn.Embedding(5, 3, sparse=True, scale_grad_by_freq=True)
        with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
            emb(lib.tensor([1, 1])).sum().backward()


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_sparse_gradient_like_torch(mode):
    out = []
    for lib in (torch, ndgrad):
        w = lib.arange(12.0).reshape(4, 3).requires_grad_(True)
        psw = lib.tensor([1.0, 2.0, 0.5, 1.0]) if mode == "sum" else None
        try:
            lib.nn.functional.embedding_bag(lib.tensor([1, 2, 1, 3]), w, lib.tensor([0, 2]),
                                            mode=mode, sparse=True,
                                            per_sample_weights=psw).sum().backward()
            g = w.grad
            out.append((g.is_sparse, g._indices().tolist(), g._values().tolist()))
        except ValueError as e:
            out.append(str(e))
    assert out[1] == out[0]


def test_spdiags_matches_torch():
    # entries diagonal by diagonal with values taken at the column index, uncoalesced, no
    # derivative (backward raises torch's error), torch's errors for bad offsets and layouts
    d = np.arange(1.0, 13.0).reshape(3, 4)

    def run(m):
        out = []
        D = m.tensor(d)
        for offs, shape in (([0, 1, -2], (4, 5)), ([0, -1, -2], (3, 3)), ([2, -1, 0], (4, 4)),
                            ([1, 0, -1], (3, 4))):
            s = m.sparse.spdiags(D, m.tensor(offs), shape)
            out.append((s._indices().numpy().tolist(), s._values().numpy().tolist(),
                        s.is_coalesced(), s.to_dense().numpy().tolist()))
        out.append(m.sparse.spdiags(D[0], m.tensor(1), (4, 4)).to_dense().numpy().tolist())
        s = m.sparse.spdiags(m.tensor(d, requires_grad=True), m.tensor([0, 1, -2]), (4, 5))
        with pytest.raises(RuntimeError) as e:
            s.to_dense().sum().backward()
        out.append((s.requires_grad, str(e.value)))
        for offs, kw in (([0, 0, 1], {}), ([0, 1], {}), ([0.0, 1.0, 2.0], {}),
                         ([0, 1, 2], {"layout": m.strided}), ([[0, 1, 2]], {})):
            with pytest.raises(RuntimeError) as e:
                m.sparse.spdiags(D, m.tensor(offs), (4, 4), **kw)
            out.append(str(e.value))
        with pytest.raises(RuntimeError) as e:
            m.sparse.spdiags(D, m.tensor([0, 1, 2]), (4, 4, 4))
        out.append(str(e.value))
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert run(ndgrad) == run(torch)


def test_spdiags_in_compressed_layouts_matches_torch():
    d = np.arange(1.0, 13.0).reshape(3, 4)

    def run(m):
        out = []
        for layout, parts in ((m.sparse_csr, ("crow_indices", "col_indices")),
                              (m.sparse_csc, ("ccol_indices", "row_indices"))):
            s = m.sparse.spdiags(m.tensor(d), m.tensor([0, 1, -2]), (4, 5), layout=layout)
            out.append([str(s.layout).split(".")[-1], s.to_dense().numpy().tolist()]
                       + [getattr(s, p)().numpy().tolist() for p in parts]
                       + [s.values().numpy().tolist()])
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert run(ndgrad) == run(torch)
