"""Autograd through sparse COO tensors against torch (Note [Sparse autograd]): node names,
gradient layouts (masked sparse gradients where torch gives them, dense where torch's dense
ops do), indices, coalesced flags and values, for sparse tensors that require grad."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ndgrad

warnings.filterwarnings("ignore", message="Sparse invariant checks")
D = {"torch": torch.float64, "ndgrad": ndgrad.float64}

IDX = [[1, 0, 1], [2, 2, 2]]                 # uncoalesced: (1, 2) twice
VAL = [3.0, 4.0, 5.0]
W = np.arange(6.0).reshape(2, 3) - 2.5


def _leaf(lib, idx=IDX, val=VAL, size=(2, 3)):
    return lib.sparse_coo_tensor(idx, lib.tensor(val, dtype=lib.float64), size,
                                 requires_grad=True)


def _weights(lib, shape=(2, 3)):
    return lib.tensor(np.arange(float(np.prod(shape))).reshape(shape) - 2.5, dtype=lib.float64)


def _same(n, t):
    """Same layout, and for sparse the same indices (as stored), coalesced flag and values."""
    assert n is not None and t is not None
    assert n.is_sparse == t.is_sparse
    if t.is_sparse:
        assert n.is_coalesced() == t.is_coalesced()
        np.testing.assert_array_equal(n._indices().numpy(), t._indices().numpy())
        np.testing.assert_allclose(n._values().numpy(), t._values().numpy(), rtol=1e-14)
        assert tuple(n.shape) == tuple(t.shape)
    else:
        np.testing.assert_allclose(n.detach().numpy(), t.detach().numpy(), rtol=1e-14)


def _names(t):
    """The node names of ``t``'s graph, depth first (AccumulateGrad included)."""
    out, stack, seen = [], [t.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        out.append(fn.name())
        stack.extend(f for f, _ in reversed(fn.next_functions))
    return out


def _check(build, accumulate=True):
    """``build(lib) -> (output, leaves)``: same output, node names and gradients (from
    ``autograd.grad``, and accumulated into ``.grad`` by ``backward``)."""
    res = {}
    for lib in (torch, ndgrad):
        out, leaves = build(lib)
        names = _names(out)
        y = out.to_dense() if out.is_sparse else out
        loss = (y * _weights(lib, tuple(y.shape))).sum()
        grads = list(lib.autograd.grad(loss, leaves, retain_graph=True))
        if accumulate:
            loss.backward()
            grads += [leaf.grad for leaf in leaves]
        res[lib.__name__] = (out, names, grads)
    (tout, tnames, tgrads), (nout, nnames, ngrads) = res["torch"], res["ndgrad"]
    assert nnames == tnames
    _same(nout.detach() if not nout.is_sparse else nout, tout.detach() if not tout.is_sparse
          else tout)
    for n, t in zip(ngrads, tgrads):
        _same(n, t)


def test_leaf_requires_grad_and_to_dense_masked_gradient():
    def build(lib):
        s = _leaf(lib)
        assert s.requires_grad and s.is_leaf and s.grad_fn is None
        return s.to_dense(), [s]
    _check(build)


def test_to_dense_unmasked_gradient():
    def build(lib):
        s = _leaf(lib)
        return s.to_dense(masked_grad=False), [s]
    _check(build)


def test_constructor_from_values_that_require_grad():
    def build(lib):
        v = lib.tensor(VAL, dtype=lib.float64, requires_grad=True)
        return lib.sparse_coo_tensor(IDX, v, (2, 3)).to_dense(), [v]
    _check(build)

    def build2(lib):                  # the values' gradient from a sparse gradient
        v = lib.tensor(VAL, dtype=lib.float64, requires_grad=True)
        return lib.sparse_coo_tensor(IDX, v, (2, 3)) * 2.0, [v]
    _check(build2)


def test_to_sparse_of_a_tensor_that_requires_grad():
    x = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])

    def build(lib):
        t = lib.tensor(x, requires_grad=True)
        return t.to_sparse() * 3.0, [t]

    def build1(lib):
        t = lib.tensor(x, requires_grad=True)
        return t.to_sparse(1), [t]
    _check(build)
    _check(build1)


def test_coalesce_and_values():
    def build(lib):
        s = _leaf(lib)
        return s.coalesce(), [s]

    def build_values(lib):
        s = _leaf(lib)
        return s.coalesce().values() * lib.tensor([1.0, 10.0], dtype=lib.float64), [s]
    _check(build)
    _check(build_values)
    for lib in (torch, ndgrad):        # _values() and indices() are not differentiable
        s = _leaf(lib) * 1.0
        assert not s._values().requires_grad and not s._indices().requires_grad
        c = _leaf(lib).coalesce()
        assert c.values().requires_grad and not c.indices().requires_grad


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_sparse_sum(dim):
    def build(lib):
        s = _leaf(lib)
        return (lib.sparse.sum(s) if dim is None else lib.sparse.sum(s, dim)), [s]
    _check(build)


@pytest.mark.parametrize("dim", [0, 1, (0, 1)])
def test_sparse_sum_hybrid(dim):
    """One sparse and one dense dimension: summed dense dims come back broadcast."""
    def build(lib):
        s = lib.sparse_coo_tensor([[0, 2, 0]], lib.tensor(np.arange(6.0).reshape(3, 2) + 1),
                                  (3, 2), requires_grad=True)
        return lib.sparse.sum(s, dim), [s]
    _check(build)


def test_sparse_mm_and_addmm():
    def build_mm(lib):
        s = _leaf(lib)
        m = lib.tensor(np.arange(6.0).reshape(3, 2) - 1, requires_grad=True)
        return lib.sparse.mm(s, m), [s, m]

    def build_addmm(lib):
        s = _leaf(lib)
        m = lib.tensor(np.arange(6.0).reshape(3, 2) - 1, requires_grad=True)
        c = lib.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True)
        return lib.sparse.addmm(c, s, m, beta=0.5, alpha=2.0), [c, s, m]

    def build_dense_mm(lib):           # torch.mm on a sparse input: a dense gradient
        s = _leaf(lib)
        m = lib.tensor(np.arange(6.0).reshape(3, 2) - 1, requires_grad=True)
        return lib.mm(s, m), [s, m]
    _check(build_mm)
    _check(build_addmm)
    _check(build_dense_mm)


def test_arithmetic():
    def build(lib):
        a = _leaf(lib)
        b = _leaf(lib, [[0, 1], [0, 2]], [1.0, -2.0])
        return (a + b) - b * 3.0 + (-a) / 4.0 + 2.0 * a, [a, b]

    # The engine's sum of several sparse gradients is then stolen by AccumulateGrad, which
    # torch's flags coalesced and ndgrad's does not (torch's decision reads the use count of
    # the indices inside its sparse add): compared without accumulating.

    def build_dense_plus_sparse(lib):
        a = _leaf(lib)
        d = lib.ones(2, 3, dtype=lib.float64, requires_grad=True)
        return d + a, [a, d]
    _check(build, accumulate=False)
    _check(build_dense_plus_sparse)


def test_gradients_accumulate_sparse_over_two_backwards():
    res = []
    for lib in (torch, ndgrad):
        s = _leaf(lib)
        lib.sparse.sum(s * 2.0).backward()
        first = s.grad
        (s.to_dense() * _weights(lib)).sum().backward()
        res.append((first, s.grad))
    _same(res[1][1], res[0][1])


def test_create_graph_through_sparse_mm():
    """Second order: d/dm of |d(loss)/ds|^2 through the masked sparse gradient."""
    res = []
    for lib in (torch, ndgrad):
        s = _leaf(lib)
        m = lib.tensor(np.arange(6.0).reshape(3, 2) - 1, requires_grad=True)
        loss = (lib.sparse.mm(s, m) ** 2).sum()
        (gs,) = lib.autograd.grad(loss, s, create_graph=True)
        (gm,) = lib.autograd.grad((gs.to_dense() ** 2).sum(), m)
        res.append((gs.detach().coalesce(), gm))
    _same(res[1][0], res[0][0])
    _same(res[1][1], res[0][1])


def test_no_history_without_grad_mode_or_requires_grad():
    for lib in (torch, ndgrad):
        s = lib.sparse_coo_tensor(IDX, lib.tensor(VAL), (2, 3))
        assert s.to_dense().grad_fn is None and not lib.sparse.sum(s).requires_grad
        with lib.no_grad():
            assert _leaf(lib).to_dense().grad_fn is None


def test_integer_sparse_cannot_require_grad():
    for lib in (torch, ndgrad):
        with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
            lib.sparse_coo_tensor([[0]], lib.tensor([1]), (2,), requires_grad=True)


def test_sparse_times_dense():
    """``sparse * dense`` (either order) is sparse on the sparse operand's stored pattern; both
    gradients are sparse on its coalesced pattern (torch's dense-factor gradient is on the
    stored pattern: the same tensor, compared dense for an uncoalesced factor)."""
    def build(lib):
        a = _leaf(lib, [[0, 1], [0, 2]], [1.0, -2.0])
        d = lib.tensor(W + 7.0, dtype=lib.float64, requires_grad=True)
        return a * d * 0.5 + (d * a), [a, d]
    _check(build, accumulate=False)
    grads = []
    for lib in (torch, ndgrad):
        a = _leaf(lib)
        d = lib.tensor(W + 7.0, dtype=lib.float64, requires_grad=True)
        out = a * d
        assert out.is_sparse and not out.is_coalesced()
        assert out.grad_fn.name() == "MulBackward0"
        (out.to_dense() * _weights(lib)).sum().backward()
        assert a.grad.is_sparse and d.grad.is_sparse
        grads.append((out.to_dense().detach().numpy(), a.grad.to_dense().numpy(),
                      d.grad.to_dense().numpy()))
    for t, n in zip(*grads):
        np.testing.assert_allclose(n, t, rtol=1e-14)


def test_sparse_times_dense_double_backward():
    """Under create_graph, a duplicated entry counts once: the second derivative matches the
    dense computation."""
    res = []
    for sparse in (True, False):
        s = ndgrad.sparse_coo_tensor(IDX, ndgrad.tensor(VAL, dtype=ndgrad.float64), (2, 3),
                                     requires_grad=True)
        d = ndgrad.tensor(W + 7.0, dtype=ndgrad.float64, requires_grad=True)
        x = s if sparse else s.to_dense()
        y = ndgrad.sparse.sum(x * d * d) if sparse else (x * d * d).sum()
        (gd,) = ndgrad.autograd.grad(y, [d], create_graph=True)
        (gd.to_dense() if gd.is_sparse else gd).pow(2).sum().backward()
        res.append((s.grad.to_dense().numpy(), d.grad.to_dense().numpy() if d.grad.is_sparse
                    else d.grad.numpy()))
    for n, t in zip(*res):
        np.testing.assert_allclose(n, t, rtol=1e-14)


def test_sparse_times_dense_broadcast_and_dtype():
    for lib in (torch, ndgrad):
        s = lib.sparse_coo_tensor(IDX, lib.tensor(VAL, dtype=lib.float32), (2, 3))
        r = s * lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
        assert r.is_sparse and str(r.dtype).endswith("float64")
        np.testing.assert_array_equal(r.to_dense().numpy(),
                                      np.array([[0, 0, 12], [0, 0, 24.0]]))
    # the broadcast dense factor's gradient: dense, summed over the broadcast (torch fails)
    s = ndgrad.sparse_coo_tensor(IDX, ndgrad.tensor(VAL, dtype=ndgrad.float64), (2, 3))
    row = ndgrad.tensor([1.0, 2.0, 3.0], dtype=ndgrad.float64, requires_grad=True)
    ndgrad.sparse.sum(s * row).backward()
    np.testing.assert_array_equal(row.grad.numpy(), [0.0, 0.0, 12.0])


@pytest.mark.parametrize("call", [lambda s, d: s + d, lambda s, d: s - d, lambda s, d: s + 1,
                                  lambda s, d: s.add(d), lambda s, d: s / d,
                                  lambda s, d: s * d[:, :2]])
def test_sparse_with_dense_refusals_as_torch(call):
    errs = []
    for lib in (torch, ndgrad):
        s = lib.sparse_coo_tensor(IDX, lib.tensor(VAL), (2, 3))
        with pytest.raises(RuntimeError) as e:
            call(s, lib.ones(2, 3))
        errs.append(str(e.value))
    assert errs[0] == errs[1]
