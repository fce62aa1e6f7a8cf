"""Sparse CSR/CSC tensors against torch: construction and its invariant errors, the beta
warning, conversions, metadata and repr, products, arithmetic, sums, the errors of unsupported
ops, gradients (layouts and patterns), gradcheck, save/load."""

from __future__ import annotations

import copy
import io
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import ndgrad

pytestmark = [pytest.mark.filterwarnings("ignore:Sparse invariant checks"),
              pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")]

A = [[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0]]
CROW, COL, VAL = [0, 2, 3, 5], [0, 2, 1, 0, 2], [1.0, 2.0, 3.0, 4.0, 5.0]


def _parts(t):
    if t.layout in (torch.sparse_csr, ndgrad.sparse_csr):
        return t.crow_indices(), t.col_indices()
    return t.ccol_indices(), t.row_indices()


def _same(n, t):
    """Same layout, size, dtypes, indices (and their dtype), values and repr."""
    assert str(n.layout).split(".")[1] == str(t.layout).split(".")[1]
    assert tuple(n.shape) == tuple(t.shape) and n.dtype.name == str(t.dtype).split(".")[1]
    if t.layout is torch.strided:
        np.testing.assert_allclose(n.detach().numpy(), t.detach().numpy(), rtol=1e-6)
        return
    if t.layout is torch.sparse_coo:
        np.testing.assert_array_equal(n._indices().numpy(), t._indices().numpy())
        np.testing.assert_allclose(n._values().detach().numpy(), t._values().detach().numpy())
        assert n.is_coalesced() == t.is_coalesced()
        return
    for a, b in zip(_parts(n), _parts(t)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert a.dtype.name == str(b.dtype).split(".")[1]
    np.testing.assert_allclose(n.values().detach().numpy(), t.values().detach().numpy(),
                               rtol=1e-6)
    assert (n._nnz(), n.dense_dim(), n.sparse_dim()) == (t._nnz(), t.dense_dim(), t.sparse_dim())
    assert repr(n) == repr(t).replace("torch.", "ndgrad.")


def _both(fn):
    return fn(ndgrad), fn(torch)


def _raises_same(fn):
    with pytest.raises(Exception) as et:
        fn(torch)
    with pytest.raises(type(et.value)) as en:
        fn(ndgrad)
    assert str(en.value).split("\n")[0][:60] == str(et.value).split("\n")[0][:60]


def test_construction_metadata_and_repr():
    cases = [
        lambda m: m.sparse_csr_tensor(m.tensor(CROW), m.tensor(COL), m.tensor(VAL), (3, 3)),
        lambda m: m.sparse_csr_tensor(CROW, COL, VAL),                  # lists, size inferred
        lambda m: m.sparse_csr_tensor(m.tensor(CROW, dtype=m.int32),
                                      m.tensor(COL, dtype=m.int32), m.tensor(VAL).double()),
        lambda m: m.sparse_csr_tensor([0, 1, 2], [1, 0], [1, 2]),        # int values
        lambda m: m.sparse_csr_tensor(CROW, COL, VAL, dtype=m.float64, requires_grad=True),
        lambda m: m.sparse_csc_tensor(CROW, COL, VAL, (3, 3)),
        lambda m: m.sparse_compressed_tensor(CROW, COL, VAL, (4, 3), layout=m.sparse_csc),
        lambda m: m.sparse_csr_tensor([0, 1, 2], [0, 1], [[1.0, 2.0], [3.0, 4.0]]),  # hybrid
        lambda m: m.sparse_csr_tensor([0, 0, 0], m.tensor([], dtype=m.int64), [], (2, 3)),
        lambda m: m.zeros(2, 3, layout=m.sparse_csr),
    ]
    for case in cases:
        n, t = _both(case)
        _same(n, t)
        assert n.is_sparse is False and n.is_sparse_csr == t.is_sparse_csr
        assert n.numel() == t.numel() and n.dim() == t.dim() and len(n) == len(t)
    n, t = _both(cases[0])
    assert n.to_dense().tolist() == A and repr(n.to_dense()) == repr(t.to_dense())
    for name in ("ccol_indices", "row_indices", "is_coalesced", "indices", "coalesce", "stride",
                 "is_contiguous", "_values", "item", "numpy", "tolist", "__bool__"):
        _raises_same(lambda m, name=name: getattr(cases[0](m), name)())
    for name in ("crow_indices", "col_indices", "ccol_indices", "row_indices", "values"):
        _raises_same(lambda m, name=name: getattr(m.eye(2), name)())


@pytest.mark.parametrize("crow,col,val,size", [
    ([0, 2, 5], COL, VAL, (3, 3)),               # crow length
    ([1, 2, 3, 5], COL, VAL, (3, 3)),            # crow[0] != 0
    ([0, 2, 3, 4], COL, VAL, (3, 3)),            # crow[-1] != nnz
    ([0, 3, 2, 5], COL, VAL, (3, 3)),            # a row's columns unsorted
    ([0, 2, 1, 3], [0, 1, 0], [1.0, 2, 3], (3, 3)),  # crow decreasing
    (CROW, [0, 2, 1, 0, 3], VAL, (3, 3)),        # column out of range
    (CROW, [0, 2, -1, 0, 2], VAL, (3, 3)),       # negative column
    (CROW, [0, 0, 1, 0, 2], VAL, (3, 3)),        # duplicate column
    (CROW, COL, VAL[:4], (3, 3)),                # nnz mismatch
    (CROW, COL, VAL, (9,)),                      # size rank
    ([[0, 2, 3, 5]], COL, VAL, (3, 3)),          # index ranks differ
])
def test_invariant_errors(crow, col, val, size):
    _raises_same(lambda m: m.sparse_csr_tensor(m.tensor(crow), m.tensor(col), m.tensor(val),
                                               size, check_invariants=True))


def test_index_dtype_and_layout_errors():
    T = lambda m, x, d: m.tensor(x, dtype=getattr(m, d))  # noqa: E731
    for dc, dp in (("int32", "int64"), ("int16", "int16"), ("float32", "int64")):
        _raises_same(lambda m, dc=dc, dp=dp: m.sparse_csr_tensor(
            T(m, CROW, dc), T(m, COL, dp), VAL, check_invariants=True))
    _raises_same(lambda m: m.sparse_compressed_tensor(CROW, COL, VAL, (3, 3)))
    _raises_same(lambda m: m.sparse_compressed_tensor(CROW, COL, VAL, layout=m.sparse_coo))
    _raises_same(lambda m: m.sparse_csc_tensor([0, 1, 2], [0, 3], [1.0, 2.0], (2, 2),
                                               check_invariants=True))
    _raises_same(lambda m: m.sparse_csr_tensor([0, 1, 2], [1, 0], [1, 2], requires_grad=True))
    _raises_same(lambda m: m.ones(2, 2, 3).to_sparse_csr(dense_dim=2))
    _raises_same(lambda m: m.tensor([[[1.0, 0], [0, 0]], [[1.0, 1], [0, 0]]]).to_sparse_csr())


def _beta_warnings(m, always):
    before = m.is_warn_always_enabled()
    m.set_warn_always(always)
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m.eye(2).to_sparse_csr()
            m.eye(2).to_sparse_csc()
            m.sparse_csr_tensor([0, 1], [0], [1.0])
    finally:
        m.set_warn_always(before)
    return [x.filename for x in w if "beta state" in str(x.message)]


def test_beta_warning_once_per_process():
    r = subprocess.run([sys.executable, "-c", "import torch, warnings\n"
                        "with warnings.catch_warnings(record=True) as w:\n"
                        "    warnings.simplefilter('always')\n"
                        "    torch.eye(2).to_sparse_csr(); torch.eye(2).to_sparse_csc()\n"
                        "print(sum('beta state' in str(x.message) for x in w))"],
                       capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["1"]                      # torch: once per process
    from ndgrad import _sparse_compressed, _warn
    _warn._warned_once.discard(_sparse_compressed.BETA_WARNING)
    assert _beta_warnings(ndgrad, False) == [__file__]    # at the user's line
    assert _beta_warnings(ndgrad, False) == []
    assert _beta_warnings(torch, True) == [__file__] * 3  # set_warn_always: every time
    assert _beta_warnings(ndgrad, True) == [__file__] * 3


def test_conversions():
    d = [[0.0, 1.5, 0.0], [2.0, 0.0, 3.0]]
    b = np.arange(24.0).reshape(2, 3, 4)
    b[b % 3 == 0] = 0
    for fn in (lambda m: m.tensor(d).to_sparse_csr(),
               lambda m: m.tensor(d).to_sparse_csc(),
               lambda m: m.tensor(d).to_sparse(layout=m.sparse_csr),
               lambda m: m.tensor(d).to_sparse(layout=m.sparse_csc),
               lambda m: m.tensor(d).to_sparse_csr().to_sparse_csc(),
               lambda m: m.tensor(d).to_sparse_csc().to_sparse_csr(),
               lambda m: m.tensor(d).to_sparse_csr().to_sparse(),
               lambda m: m.tensor(d).to_sparse_csc().to_sparse(),
               lambda m: m.tensor(d).to_sparse().to_sparse_csr(),
               lambda m: m.tensor(d).to_sparse().to_sparse_csc(),
               lambda m: m.sparse_coo_tensor([[1, 0, 1], [0, 1, 0]], [1.0, 2, 3],
                                             (2, 2)).to_sparse_csr(),
               lambda m: m.tensor(d).to_sparse_csr().to_dense(),
               lambda m: m.tensor([[1, 0], [0, 2]]).to_sparse_csr(),
               lambda m: m.tensor(b).to_sparse_csr(),               # batched
               lambda m: m.tensor(b).to_sparse_csc(),
               lambda m: m.tensor(b).to_sparse_csr().to_sparse(),
               lambda m: m.tensor(b).to_sparse_csr(dense_dim=1),   # hybrid
               lambda m: m.ones(2, 2, 3).to_sparse(2).to_sparse_csr()):
        _same(*_both(fn))
    _raises_same(lambda m: m.ones(2, 2, 2).to_sparse().to_sparse_csr())
    _raises_same(lambda m: m.eye(2).to_sparse_csr().to_sparse(1))
    _raises_same(lambda m: m.eye(2).to_sparse_csr().to_dense(m.float64))


def test_products_and_arithmetic():
    dm = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    s = lambda m: m.tensor(A).to_sparse_csr()  # noqa: E731
    c = lambda m: m.tensor(A).to_sparse_csc()  # noqa: E731
    e = lambda m: m.eye(3).to_sparse_csr()  # noqa: E731
    for fn in (lambda m: s(m) @ m.tensor(dm), lambda m: c(m) @ m.tensor(dm),
               lambda m: m.mm(s(m), m.tensor(dm)), lambda m: m.matmul(s(m), m.tensor(dm)),
               lambda m: m.sparse.mm(s(m), m.tensor(dm)),
               lambda m: m.addmm(m.ones(3, 2), s(m), m.tensor(dm), beta=2, alpha=0.5),
               lambda m: m.sparse.addmm(m.ones(3, 2), s(m), m.tensor(dm)),
               lambda m: m.mv(s(m), m.ones(3)), lambda m: s(m) @ m.ones(3),
               lambda m: m.tensor(dm).t() @ s(m), lambda m: s(m) @ s(m),
               lambda m: s(m) * 2, lambda m: 2.5 * s(m), lambda m: s(m) * m.tensor(2.0),
               lambda m: m.eye(2, dtype=m.int64).to_sparse_csr() * 2.5,
               lambda m: s(m) * m.ones(3, 3), lambda m: -s(m), lambda m: s(m) + s(m),
               lambda m: s(m) + e(m), lambda m: e(m) + s(m), lambda m: s(m).add(e(m), alpha=2),
               lambda m: (lambda x: x + x)(c(m)), lambda m: s(m) + m.ones(3, 3),
               lambda m: m.ones(3, 3) + s(m), lambda m: s(m).t(), lambda m: c(m).t(),
               lambda m: s(m).transpose(0, 1), lambda m: s(m).mT, lambda m: s(m).sum(),
               lambda m: c(m).sum(), lambda m: s(m).sum(0, keepdim=True),
               lambda m: s(m).sum(dtype=m.float64), lambda m: s(m).clone(),
               lambda m: s(m).detach(), lambda m: s(m).to(m.float64), lambda m: s(m).double(),
               lambda m: s(m).int(), lambda m: s(m).half(), lambda m: s(m).abs(),
               lambda m: m.sin(s(m)), lambda m: s(m).sqrt(), lambda m: m.relu(s(m)),
               lambda m: s(m).clone().mul_(2), lambda m: s(m).clone().zero_(),
               lambda m: s(m).clone().add_(s(m)), lambda m: s(m).clone().fill_(1),
               lambda m: m.ones(2, 2, 2).to_sparse_csr().transpose(1, 2),
               lambda m: m.ones(2, 2, 2).to_sparse_csr().sum(),
               lambda m: m.nn.functional.linear(m.ones(2, 3), s(m))):
        _same(*_both(fn))
    assert s(ndgrad).to(ndgrad.float32) is not None


@pytest.mark.parametrize("op", [
    lambda m, s: s / 2, lambda m, s: s - s, lambda m, s: s.exp(), lambda m, s: s ** 2,
    lambda m, s: s.sigmoid(), lambda m, s: s == s, lambda m, s: m.where(s > 0, s, s),
    lambda m, s: s.mean(), lambda m, s: s.max(), lambda m, s: s.view(9), lambda m, s: s.T,
    lambda m, s: s.reshape(9), lambda m, s: s.unsqueeze(0), lambda m, s: m.cat([s, s]),
    lambda m, s: s.sum(0), lambda m, s: m.sparse.sum(s), lambda m, s: s.norm(),
    lambda m, s: s @ m.ones(3, 2, dtype=m.float64), lambda m, s: s @ m.ones(4, 2),
    lambda m, s: m.mv(s, m.ones(4)), lambda m, s: s + s.to_sparse_csc(),
    lambda m, s: s + m.eye(2).to_sparse_csr(), lambda m, s: s + s.double(),
    lambda m, s: s.to_sparse_csc() + s.to_sparse_csc(), lambda m, s: s.to_sparse_csc() + s,
    lambda m, s: s.t().sum(0, keepdim=True), lambda m, s: s * m.ones(3),
    lambda m, s: m.ones(2, 2, 2).to_sparse_csr().t(),
    lambda m, s: m.ones(2, 2, 2).to_sparse_csr().transpose(0, 1),
    lambda m, s: m.ones(2, 2, 2).to_sparse_csr() @ m.ones(2, 2, 1),
    lambda m, s: s.type(), lambda m, s: s.requires_grad_().mul_(2),
    lambda m, s: s.requires_grad_().zero_(),
])
def test_unsupported_ops_raise_torchs_errors(op):
    _raises_same(lambda m: op(m, m.tensor(A).to_sparse_csr()))


def _leaf(m, layout="csr"):
    t = m.tensor(A, dtype=m.float64)
    return (t.to_sparse_csr() if layout == "csr" else t.to_sparse_csc()).requires_grad_()


@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_gradient_layouts_and_patterns(layout):
    w = np.arange(9.0).reshape(3, 3)
    cases = [
        lambda m, s, d: (s @ d).sum(), lambda m, s, d: m.mm(s, d).sum(),
        lambda m, s, d: m.sparse.mm(s, d).pow(2).sum(),
        lambda m, s, d: m.addmm(m.ones(3, 2, dtype=m.float64), s, d).sum(),
        lambda m, s, d: m.sparse.addmm(m.ones(3, 2, dtype=m.float64), s, d, alpha=2).sum(),
        lambda m, s, d: (s.to_dense() * m.tensor(w)).sum(),
        lambda m, s, d: ((s * 3).to_dense() * m.tensor(w)).sum(),
        lambda m, s, d: ((s + s).to_dense() * m.tensor(w)).sum(),
        lambda m, s, d: (s.values() ** 2).sum(), lambda m, s, d: s.sum(),
        lambda m, s, d: (s.t() @ d).sum(), lambda m, s, d: (s + m.tensor(w)).pow(2).sum(),
        lambda m, s, d: (-s).to_dense().sum() + (s.clone() @ d).sum(),
        lambda m, s, d: m.mv(s, d[:, 0]).sum(),
    ]
    masked = cases[5:9]
    if layout == "csc":         # torch's sparse.mm has no CSC backward: its error
        _raises_same(lambda m: cases[2](m, _leaf(m, layout), m.ones(3, 2, dtype=m.float64))
                     .backward())
        del cases[2:5]
    for case in cases:
        grads = {}
        for m in (ndgrad, torch):
            # torch cannot accumulate a masked CSC gradient ("Sparse CSC tensors do not have
            # is_contiguous"): ndgrad's is torch's CSR one as CSC
            relayout = m is torch and layout == "csc" and case in masked
            s = _leaf(m, "csr" if relayout else layout)
            d = m.tensor(np.arange(6.0).reshape(3, 2), dtype=m.float64, requires_grad=True)
            case(m, s, d).backward()
            grads[m] = (s.grad.to_sparse_csc() if relayout else s.grad, d.grad)
        for gn, gt in zip(grads[ndgrad], grads[torch]):
            if gt is None:
                assert gn is None
            else:
                _same(gn, gt)


def _accumulated(m):
    s = _leaf(m)
    d = m.ones(3, 2, dtype=m.float64)
    (s @ d).sum().backward()                           # dense
    m.sparse.mm(s, d).sum().backward()                 # dense + csr: dense
    s2 = _leaf(m)
    m.sparse.mm(s2, d).sum().backward()
    m.sparse.mm(s2, d).sum().backward()                # csr + csr: csr
    v = m.tensor(VAL, dtype=m.float64, requires_grad=True)
    x = m.eye(3, dtype=m.float64, requires_grad=True)
    y = m.sparse_csr_tensor(CROW, COL, v, (3, 3))
    (y @ m.tensor(np.arange(6.0).reshape(3, 2))).sum().backward()
    (x.to_sparse_csr() @ m.tensor(np.arange(3.0).reshape(3, 1))).sum().backward()
    return s.grad, s2.grad, v.grad, x.grad, y.grad_fn.name()


def test_gradient_accumulates_and_through_construction():
    got, want = _accumulated(ndgrad), _accumulated(torch)
    for g, w in zip(got[:-1], want[:-1]):
        _same(g, w)
    assert got[-1] == want[-1] == "SparseCompressedTensorBackward0"
    # csr, then dense: torch cannot add them (CSR += dense); ndgrad's sum is the dense one
    s = _leaf(ndgrad)
    d = ndgrad.ones(3, 2, dtype=ndgrad.float64)
    ndgrad.sparse.mm(s, d).sum().backward()
    (s @ d).sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), got[0].numpy())


def _gradchecks(m):
    results = []
    for layout in ("csr", "csc"):
        s = _leaf(m, layout)
        d = m.tensor(np.arange(6.0).reshape(3, 2) / 3, dtype=m.float64, requires_grad=True)
        fns = [lambda s, d: s @ d, lambda s, d: s.to_dense() * 2, lambda s, d: s.sum()]
        if layout == "csr":     # torch's sparse.mm has no CSC backward
            fns.append(lambda s, d: m.sparse.mm(s, d))
        for masked in (False, True):
            for f in fns:
                results.append(m.autograd.gradcheck(f, (s, d), masked=masked,
                                                    raise_exception=False))
    return results


def test_gradcheck_csr_inputs_as_torch():
    assert _gradchecks(ndgrad) == _gradchecks(torch)
    v = ndgrad.tensor(VAL, dtype=ndgrad.float64, requires_grad=True)
    d = ndgrad.tensor(np.arange(6.0).reshape(3, 2), dtype=ndgrad.float64, requires_grad=True)
    assert ndgrad.autograd.gradcheck(
        lambda v, d: ndgrad.sparse_csr_tensor(CROW, COL, v, (3, 3)) @ d, (v, d))
    assert ndgrad.autograd.gradgradcheck(
        lambda v, d: ndgrad.sparse.mm(ndgrad.sparse_csr_tensor(CROW, COL, v, (3, 3)), d).sin(),
        (v, d))


def test_save_load_round_trip_with_torch():
    n = ndgrad.sparse_csr_tensor(ndgrad.tensor(CROW, dtype=ndgrad.int32),
                                 ndgrad.tensor(COL, dtype=ndgrad.int32), ndgrad.tensor(VAL))
    t = torch.sparse_csr_tensor(torch.tensor(CROW, dtype=torch.int32),
                                torch.tensor(COL, dtype=torch.int32), torch.tensor(VAL))
    nc, tc = ndgrad.tensor(A).to_sparse_csc(), torch.tensor(A).to_sparse_csc()
    buf = io.BytesIO()
    ndgrad.save({"a": n, "c": nc}, buf)
    buf.seek(0)
    back = torch.load(buf)
    _same(n, back["a"])
    _same(nc, back["c"])
    buf = io.BytesIO()
    torch.save({"a": t, "c": tc}, buf)
    buf.seek(0)
    back = ndgrad.load(buf)
    _same(back["a"], t)
    _same(back["c"], tc)
    _same(pickle.loads(pickle.dumps(n)), t)
    _same(copy.deepcopy(n), t)


@pytest.mark.parametrize("make,conv", [
    ("to_sparse", "to_sparse_csr"), ("to_sparse_csr", "to_sparse_csc"),
    ("to_sparse_csr", "to_sparse"), ("to_sparse", "to_sparse_csc"), ("clone", "to_sparse_csr")])
def test_conversion_gradients_in_the_input_layout(make, conv):
    """A layout conversion's gradient is the incoming one in the input's layout (torch cannot
    accumulate a CSC gradient on a leaf: ndgrad's are compared with torch's CSR ones in
    test_gradient_layouts_and_patterns)."""
    for use in ("mm", "dense"):
        grads = []
        for m in (ndgrad, torch):
            x = getattr(m.tensor(A, dtype=m.float64), make)().requires_grad_()
            r = getattr(x, conv)()
            out = r @ m.ones(3, 1, dtype=m.float64) if use == "mm" else r.to_dense() * 2
            out.sum().backward()
            grads.append((r.grad_fn.name(), x.grad))
        (nn, gn), (nt, gt) = grads
        assert nn == nt
        _same(gn, gt)


def test_coo_autograd_unaffected_by_compressed_nodes():
    """The compressed ops' nodes share torch's names with the COO ones but not their VJPs."""
    s = _leaf(ndgrad)
    ndgrad.sparse.mm(s, ndgrad.ones(3, 2, dtype=ndgrad.float64)).sum().backward()
    (s.to_dense() * 2).sum().backward()
    grads = []
    for m in (ndgrad, torch):
        c = m.tensor(A, dtype=m.float64).to_sparse().requires_grad_()
        m.sparse.mm(c, m.ones(3, 2, dtype=m.float64)).sum().backward()
        (c.to_dense() * 2).sum().backward()
        grads.append(c.grad.coalesce())
    _same(*grads)
