"""An ndgrad.nn module against its torch.nn twin (test helper, not a test module).

``check_module(torch_module, ndgrad_module, *inputs)`` checks that both have the same
``state_dict`` keys, shapes and order, copies torch's weights into ndgrad through
``load_state_dict``, runs both on the same inputs (torch tensors, converted) and compares the
outputs, the gradients of every parameter and of every floating input for the same random
cotangent, and the buffers after the call (running statistics).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

import ndgrad


def to_ndgrad(x: Any, requires_grad: bool = False) -> Any:
    """A torch tensor (or a nested tuple/list of them) as ndgrad tensors with the same values."""
    if isinstance(x, torch.Tensor):
        out = ndgrad.tensor(x.detach().numpy().copy())
        if requires_grad and x.is_floating_point():
            out.requires_grad_(True)
        return out
    if isinstance(x, (tuple, list)):
        return type(x)(to_ndgrad(v, requires_grad) for v in x)
    return x


def to_numpy(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    if isinstance(x, ndgrad.Tensor):
        return x.detach().numpy()
    return np.asarray(x)


def _flat(x: Any) -> list:
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _flat(v)]
    return [x]


def assert_close(got: Any, want: Any, rtol: float = 1e-9, atol: float = 1e-12,
                 what: str = "") -> None:
    g, w = to_numpy(got), to_numpy(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape} != torch's {w.shape}"
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=what)


def copy_state(torch_module: torch.nn.Module, nd_module: Any) -> None:
    """Load torch's state_dict (as NumPy arrays made ndgrad tensors) into the ndgrad module."""
    nd_module.load_state_dict({k: ndgrad.tensor(v.detach().numpy().copy())
                               for k, v in torch_module.state_dict().items()})


def check_module(torch_module: torch.nn.Module, nd_module: Any, *inputs: Any,
                 rtol: float = 1e-9, atol: float = 1e-12, seed: int = 0) -> tuple:
    """Compare the two modules as described in the module docstring; returns both outputs."""
    t_sd, n_sd = torch_module.state_dict(), nd_module.state_dict()
    assert list(n_sd) == list(t_sd), f"state_dict keys {list(n_sd)} != torch's {list(t_sd)}"
    for k in t_sd:
        assert tuple(n_sd[k].shape) == tuple(t_sd[k].shape), f"{k}: shape differs"
    copy_state(torch_module, nd_module)
    t_in = [x.detach().clone().requires_grad_(x.is_floating_point())
            if isinstance(x, torch.Tensor) else x for x in inputs]
    n_in = [to_ndgrad(x, requires_grad=True) for x in inputs]
    t_out, n_out = torch_module(*t_in), nd_module(*n_in)
    t_flat, n_flat = _flat(t_out), _flat(n_out)
    assert len(t_flat) == len(n_flat), "number of outputs differs"
    rng = np.random.default_rng(seed)
    t_loss, n_loss = 0, 0
    for i, (t, n) in enumerate(zip(t_flat, n_flat)):
        if not isinstance(t, torch.Tensor):
            continue
        assert_close(n, t, rtol, atol, f"output {i}")
        if t.requires_grad and t.is_floating_point():
            g = rng.standard_normal(t.shape)
            t_loss = t_loss + (t * torch.from_numpy(g).to(t.dtype)).sum()
            n_loss = n_loss + (n * ndgrad.tensor(g).to(n.dtype)).sum()
    if isinstance(t_loss, torch.Tensor):
        t_loss.backward()
        n_loss.backward()
        n_params = dict(nd_module.named_parameters())
        for name, p in torch_module.named_parameters():
            if p.grad is None:
                assert n_params[name].grad is None, f"{name}: ndgrad has a gradient, torch none"
            else:
                assert_close(n_params[name].grad, p.grad, rtol, atol, f"grad of {name}")
        for i, (t, n) in enumerate(zip(t_in, n_in)):
            if isinstance(t, torch.Tensor) and t.grad is not None:
                assert_close(n.grad, t.grad, rtol, atol, f"grad of input {i}")
    n_bufs = dict(nd_module.named_buffers())
    for name, b in torch_module.named_buffers():
        assert_close(n_bufs[name], b, rtol, atol, f"buffer {name}")
    return t_out, n_out
