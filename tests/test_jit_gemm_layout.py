"""Transposed products in generated code (Note [Transposed products in generated code] in
ndgrad/jit/gemm_layout.py): which groups are transposed, and that values, output layouts and
buffer reuse stay as they were."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ndgrad
from ndgrad.jit import codegen, gemm_layout, trace_graph

RNG = np.random.default_rng(11)
B, D_IN, H, D_OUT = 64, 256, 1024, 256      # hidden values of 64 x 1024 = MIN_NUMEL elements


def _params(dtype=np.float32):
    x = RNG.standard_normal((B, D_IN)).astype(dtype)
    t = RNG.standard_normal((B, D_OUT)).astype(dtype)
    ws = [(RNG.standard_normal((a, b)) * (2.0 / a) ** 0.5).astype(dtype)
          for a, b in ((D_IN, H), (H, H), (H, D_OUT))]
    return x, t, ws


def _step(x, t, a, b, c):
    h = ndgrad.relu(x @ a)
    h = ndgrad.relu(h @ b)
    d = h @ c - t
    loss = (d * d).mean()
    return loss.detach(), tuple(ndgrad.autograd.grad(loss, [a, b, c]))


def _torch_step(x, t, ws):
    a, b, c = (torch.tensor(w, requires_grad=True) for w in ws)
    h = torch.relu(torch.tensor(x) @ a)
    h = torch.relu(h @ b)
    d = h @ c - torch.tensor(t)
    loss = (d * d).mean()
    return loss.detach().numpy(), [g.numpy() for g in torch.autograd.grad(loss, [a, b, c])]


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mlp_step_hidden_chain_is_transposed(backend, dtype):
    x, t, ws = _params(dtype)
    args = [ndgrad.tensor(x), ndgrad.tensor(t)] + [ndgrad.tensor(w, requires_grad=True)
                                                   for w in ws]
    f = ndgrad.compile(_step, backend=backend)
    loss, grads = f(*args)
    # both hidden groups: their forward product and their input gradient's product
    assert f.code.count(".T).T  # mm") == 4
    # relu forward and backward still written into the dead (transposed) product buffers
    # (zeros first: Note [Signed zeros in max and min])
    assert sum("_np_maximum((_zeros" in line and ", v1, out=v1)" in line
               for line in f.code.splitlines()) == 1
    # (the numba tier's one-pass form on these large values: tests/test_jit_numba_kernels.py)
    relu_b = "_threshold_backward_into_nb(" if backend == "numba" else "_threshold_backward_into("
    assert f.code.count(relu_b) == 2
    assert "out=v12)" in f.code.replace(", v12)  #", ", out=v12)  #")
    e_loss, e_grads = _step(*args)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(loss.numpy(), e_loss.numpy(), **tol)
    t_loss, t_grads = _torch_step(x, t, ws)
    np.testing.assert_allclose(loss.numpy(), t_loss, rtol=1e-4 if dtype == np.float32 else 1e-10)
    for g, e, tg in zip(grads, e_grads, t_grads):
        assert g.numpy().flags.c_contiguous          # gradients in PyTorch's layout
        np.testing.assert_allclose(g.numpy(), e.numpy(), **tol)
        np.testing.assert_allclose(g.numpy(), tg, rtol=1e-3 if dtype == np.float32 else 1e-9,
                                   atol=1e-5 if dtype == np.float32 else 1e-12)


def _chosen(fn, *arrays):
    tensors = [ndgrad.tensor(a, requires_grad=True) for a in arrays]
    graph = trace_graph(fn, tuple(tensors)).graph
    return gemm_layout.transposed_products(graph, codegen._Gen("f").elementwise)


def test_pinned_groups_keep_their_layout():
    g = RNG.standard_normal((B, H)).astype(np.float32)
    w = RNG.standard_normal((H, H)).astype(np.float32)
    # g @ w.t() feeding relu: transposed
    assert len(_chosen(lambda g, w: (ndgrad.relu(g @ w.t()) * 2.0) @ w, g, w)) == 1
    # its result returned: a graph output keeps the row-major layout
    assert not _chosen(lambda g, w: ndgrad.relu(g @ w.t()), g, w)
    # reduced along a dimension, reshaped, or added to a broadcast bias: left alone
    assert not _chosen(lambda g, w: ndgrad.relu(g @ w.t()).sum(0), g, w)
    assert not _chosen(lambda g, w: (ndgrad.relu(g @ w.t()).reshape(-1) * 2).sum(), g, w)
    assert not _chosen(lambda g, w: ((g @ w.t() + w[0]) @ w).sum(), g, w)
    # the fast form already (g @ w, no t): nothing to gain
    assert not _chosen(lambda g, w: (ndgrad.relu(g @ w) @ w).sum(), g, w)
    # small values: not transposed
    assert not _chosen(lambda g, w: (ndgrad.relu(g[:8] @ w.t()) @ w).sum(), g, w)


def test_transposed_group_meeting_row_major_values_is_left_alone():
    # the group's relu meets a row-major input element-wise: transposing would mix layouts
    g = RNG.standard_normal((B, H)).astype(np.float32)
    w = RNG.standard_normal((H, H)).astype(np.float32)
    assert not _chosen(lambda g, w: ((g @ w.t()) * g @ w).sum(), g, w)
    args = [ndgrad.tensor(g), ndgrad.tensor(w, requires_grad=True)]
    f = ndgrad.compile(lambda g, w: ndgrad.autograd.grad(((g @ w.t()) * g @ w).sum(), [w])[0])
    np.testing.assert_allclose(f(*args).numpy(), ndgrad.autograd.grad(
        ((args[0] @ args[1].t()) * args[0] @ args[1]).sum(), [args[1]])[0].numpy(),
        rtol=1e-4, atol=1e-3)
