"""``gradcheck`` and ``gradgradcheck``: analytical Jacobians against float64 finite differences.

Complex numbers follow PyTorch's convention: for an input ``z`` and output ``s``, the backward
of a grad_output ``v`` is ``conj(v) * ds/dz* + v * conj(ds/dz)`` (Wirtinger derivatives), which
for a real-valued loss is ``dL/dx + i dL/dy``. For a real input the real part is kept.

Example:
    >>> import ndgrad
    >>> from ndgrad.autograd import gradcheck
    >>> x = ndgrad.randn(3, dtype=ndgrad.float64, requires_grad=True)
    >>> gradcheck(lambda t: (t * t).sin(), (x,))
    True
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from importlib import import_module

_tensor_mod = import_module("ndgrad.tensor")  # the module; ndgrad.tensor is also a function

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck``/``gradgradcheck`` when a check fails."""


def _as_tuple(x: Any) -> tuple:
    if isinstance(x, _tensor_mod.Tensor):
        return (x,)
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _diff_inputs(inputs: tuple) -> list:
    return [i for i, t in enumerate(inputs)
            if isinstance(t, _tensor_mod.Tensor) and t.requires_grad]


def _outputs(func: Callable, inputs: tuple) -> tuple:
    return tuple(o for o in _as_tuple(func(*inputs)) if isinstance(o, _tensor_mod.Tensor))


def _diff_outputs(outputs: tuple) -> list:
    return [k for k, o in enumerate(outputs) if o.dtype.is_floating_point or o.dtype.is_complex]


def _numerical_columns(func: Callable, inputs: tuple, i: int, eps: float,
                       out_idx: list) -> list:
    """For input ``i``, per output: (ds/dx, ds/dy or None) as arrays (n_in, n_out)."""
    x = inputs[i]
    data = x.detach().numpy()
    flat = data.reshape(-1) if data.flags.c_contiguous else None
    if flat is None:
        raise GradcheckError("gradcheck expects contiguous inputs")
    is_complex = data.dtype.kind == "c"
    n_in = flat.size

    def eval_outputs() -> list:
        # Not under no_grad: ``func`` may itself differentiate (gradgradcheck).
        outs = _outputs(func, inputs)
        return [np.array(outs[k].detach().numpy(), dtype=np.complex128 if np.iscomplexobj(
            outs[k].detach().numpy()) else np.float64).reshape(-1) for k in out_idx]

    base = eval_outputs()
    dx = [np.zeros((n_in, b.size), dtype=b.dtype) for b in base]
    dy = [np.zeros((n_in, b.size), dtype=np.complex128) for b in base] if is_complex else None
    for j in range(n_in):
        orig = flat[j]
        for direction, store in ((1.0, dx), (1j, dy)):
            if store is None:
                continue
            flat[j] = orig + direction * eps
            plus = eval_outputs()
            flat[j] = orig - direction * eps
            minus = eval_outputs()
            flat[j] = orig
            for k in range(len(out_idx)):
                d = (plus[k] - minus[k]) / (2 * eps)
                if store is dx and not np.iscomplexobj(store[k]) and np.iscomplexobj(d):
                    store[k] = store[k].astype(np.complex128)
                store[k][j] = d
    return [(dx[k], dy[k] if dy is not None else None) for k in range(len(out_idx))]


def _numerical_vjp_rows(cols: tuple, v: complex, input_complex: bool) -> np.ndarray:
    """Numerical backward for grad_output ``v`` at every output element: (n_out, n_in)."""
    ds_dx, ds_dy = cols
    if not input_complex:
        return np.real(np.conj(v) * ds_dx).T
    d_dz = 0.5 * (ds_dx - 1j * ds_dy)
    d_dzc = 0.5 * (ds_dx + 1j * ds_dy)
    return (np.conj(v) * d_dzc + v * np.conj(d_dz)).T


def _analytical_rows(outputs: tuple, k: int, inputs: tuple, i_list: list, v: complex) -> list:
    """Rows of the analytical backward for output ``k`` with grad_output ``v`` * e_row."""
    from .api import grad as autograd_grad
    out = outputs[k]
    n_out = out.numel()
    rows = [np.zeros((n_out, inputs[i].numel()), dtype=np.complex128 if inputs[i].is_complex()
                     else np.float64) for i in i_list]
    if not out.requires_grad:
        return rows
    for r in range(n_out):
        g = np.zeros(n_out, dtype=out.detach().numpy().dtype)
        g[r] = v
        go = _tensor_mod._wrap(g.reshape(out.shape))
        res = autograd_grad(out, [inputs[i] for i in i_list], go, retain_graph=True,
                            allow_unused=True)
        for col, gr in enumerate(res):
            if gr is not None:
                rows[col][r] = gr.detach().numpy().reshape(-1)
    return rows


def _error(k: int, i: int, num: np.ndarray, ana: np.ndarray, what: str = "") -> str:
    with np.printoptions(precision=6, suppress=True, linewidth=100):
        return (f"Jacobian mismatch for output {k} with respect to input {i}{what},\n"
                f"numerical:{num.T}\nanalytical:{ana.T}\n")


def gradcheck(
    func: Callable[..., Any],
    inputs: Union[Any, Sequence[Any]],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: Optional[bool] = None,
) -> bool:
    """Check ``func``'s gradients w.r.t. the inputs that require grad against central finite
    differences (``eps``), element by element within ``atol + rtol * |numerical|``.

    Returns True, or raises :class:`GradcheckError` (returns False with
    ``raise_exception=False``). ``fast_mode`` compares one random projection ``v^T J u``
    instead of the whole Jacobian.
    """
    inputs = _as_tuple(inputs)
    i_list = _diff_inputs(inputs)
    if not i_list:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    for i in i_list:
        d = inputs[i].dtype
        if d.name not in ("float64", "complex128"):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ", UserWarning,
                          stacklevel=2)
    try:
        if check_backward_ad:
            _check_backward(func, inputs, i_list, eps, atol, rtol, fast_mode)
            if check_grad_dtypes:
                _check_grad_dtypes(func, inputs, i_list)
            if check_batched_grad:
                _check_batched(func, inputs, i_list, atol, rtol)
        if check_forward_ad:
            _check_forward(func, inputs, i_list, eps, atol, rtol)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _check_backward(func, inputs, i_list, eps, atol, rtol, fast_mode) -> None:
    outputs = _outputs(func, inputs)
    out_idx = _diff_outputs(outputs)
    if fast_mode:
        _check_fast(func, inputs, outputs, out_idx, i_list, eps, atol, rtol)
        return
    numeric = {i: _numerical_columns(func, inputs, i, eps, out_idx) for i in i_list}
    for pos, k in enumerate(out_idx):
        vs = (1.0, 1j) if outputs[k].is_complex() else (1.0,)
        for v in vs:
            ana = _analytical_rows(outputs, k, inputs, i_list, v)
            for col, i in enumerate(i_list):
                num = _numerical_vjp_rows(numeric[i][pos], v, inputs[i].is_complex())
                a = ana[col]
                if not np.allclose(a, num, rtol=rtol, atol=atol):
                    what = "" if v == 1.0 else " (grad_output = 1j)"
                    raise GradcheckError(_error(k, i, num, a, what))


def _check_fast(func, inputs, outputs, out_idx, i_list, eps, atol, rtol) -> None:
    from .api import grad as autograd_grad
    rng = np.random.default_rng(0)
    for k in out_idx:
        out = outputs[k]
        if not out.requires_grad:
            continue
        v = rng.standard_normal(out.shape)
        if out.is_complex():
            v = v + 1j * rng.standard_normal(out.shape)
        vt = _tensor_mod._wrap(v.astype(out.detach().numpy().dtype))
        ana_grads = autograd_grad(out, [inputs[i] for i in i_list], vt, retain_graph=True,
                                  allow_unused=True)
        for col, i in enumerate(i_list):
            x = inputs[i]
            u = rng.standard_normal(x.shape)
            if x.is_complex():
                u = u + 1j * rng.standard_normal(x.shape)
            data = x.detach().numpy()
            orig = data.copy()
            data[...] = orig + eps * u
            plus = _outputs(func, inputs)[k].detach().numpy().astype(np.complex128)
            data[...] = orig - eps * u
            minus = _outputs(func, inputs)[k].detach().numpy().astype(np.complex128)
            data[...] = orig
            jvp = (plus - minus) / (2 * eps)                     # J u (directional derivative)
            num = np.real(np.vdot(v, jvp)) if not x.is_complex() else None
            g = ana_grads[col]
            ana_g = np.zeros(x.shape) if g is None else g.detach().numpy()
            if x.is_complex():
                # <u, grad> with PyTorch's convention equals Re(conj(v) J u) for real losses.
                num = np.real(np.vdot(v, jvp))
                ana = np.real(np.vdot(ana_g, u))
            else:
                ana = np.real(np.sum(ana_g * u))
            if not np.isclose(ana, num, rtol=rtol, atol=atol):
                raise GradcheckError(
                    f"Jacobian mismatch for output {k} with respect to input {i},\n"
                    f"numerical:{num}\nanalytical:{ana}\n\nThe above quantities relating the "
                    "numerical and analytical jacobians are computed in fast mode (v^T J u).")


def _check_grad_dtypes(func, inputs, i_list) -> None:
    from .api import grad as autograd_grad
    outputs = [o for o in _outputs(func, inputs) if o.requires_grad]
    if not outputs:
        return
    loss = sum((o.real_part() if o.is_complex() else o).sum() for o in outputs)
    grads = autograd_grad(loss, [inputs[i] for i in i_list], allow_unused=True)
    for g, i in zip(grads, i_list):
        if g is not None and g.dtype != inputs[i].dtype:
            raise GradcheckError("Gradient has dtype mismatch")


def _check_batched(func, inputs, i_list, atol, rtol) -> None:
    from .api import grad as autograd_grad
    rng = np.random.default_rng(1)
    for out in _outputs(func, inputs):
        if not out.requires_grad:
            continue
        batch = _tensor_mod._wrap(rng.standard_normal((3,) + tuple(out.shape)).astype(
            out.detach().numpy().dtype))
        batched = autograd_grad(out, [inputs[i] for i in i_list], batch, retain_graph=True,
                                allow_unused=True, is_grads_batched=True)
        for b in range(3):
            single = autograd_grad(out, [inputs[i] for i in i_list], batch[b],
                                   retain_graph=True, allow_unused=True)
            for bg, sg in zip(batched, single):
                if (bg is None) != (sg is None):
                    raise GradcheckError("batched grad: None mismatch")
                if bg is not None and not np.allclose(bg[b].detach().numpy(),
                                                      sg.detach().numpy(), rtol=rtol, atol=atol):
                    raise GradcheckError("For output and input, the batched grad computed "
                                         "using is_grads_batched=True does not match the grad "
                                         "computed in a loop.")


def _check_forward(func, inputs, i_list, eps, atol, rtol) -> None:
    try:
        from . import forward_ad
    except ImportError:
        raise GradcheckError("check_forward_ad=True needs ndgrad.autograd.forward_ad, which is "
                             "not available yet") from None
    forward_ad.check_jvp_against_numerical(func, inputs, i_list, eps, atol, rtol)


def gradgradcheck(
    func: Callable[..., Any],
    inputs: Union[Any, Sequence[Any]],
    grad_outputs: Optional[Union[Any, Sequence[Any]]] = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """``gradcheck`` of the first-order gradients: checks second derivatives (double backward)
    against finite differences of the backward pass."""
    from .api import grad as autograd_grad
    inputs = _as_tuple(inputs)
    i_list = _diff_inputs(inputs)
    outputs = _outputs(func, inputs)
    diff_out = [o for o in outputs if o.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(2)
        grad_outputs = tuple(
            _tensor_mod._wrap((rng.standard_normal(o.shape) + (1j * rng.standard_normal(o.shape)
                               if o.is_complex() else 0)).astype(o.detach().numpy().dtype)
                              ).requires_grad_() for o in diff_out)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def new_func(*all_inputs: Any) -> tuple:
        ins, gos = all_inputs[:n_in], all_inputs[n_in:]
        outs = [o for o in _outputs(func, ins) if o.requires_grad]
        grads = autograd_grad(outs, [ins[i] for i in i_list], gos, create_graph=True,
                              allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(new_func, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception,
                     check_grad_dtypes=check_grad_dtypes,
                     check_batched_grad=check_batched_grad, fast_mode=fast_mode)
