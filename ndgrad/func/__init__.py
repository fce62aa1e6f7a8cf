"""``ndgrad.func``: composable function transforms with torch.func's names and semantics.

``grad``, ``grad_and_value``, ``vjp`` and ``jacrev`` (reverse mode), ``jvp``, ``linearize``,
``jacfwd`` and ``hessian`` (forward mode), ``vmap`` and ``functional_call``. They compose with
each other (``grad(grad(f))``, ``vmap(grad(f))``, ``jacfwd(jacrev(f))`` ...) and take and
return pytrees (tuples, lists, dicts) of tensors. See Note [Transform levels] in _common.py and
Note [Vectorized vmap] in _vmap.py.

Example:
    >>> import ndgrad
    >>> from ndgrad.func import grad, vmap
    >>> x = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> vmap(grad(lambda r: (r ** 2).sum()))(x)         # per-row gradients
    tensor([[2., 4.],
            [6., 8.]])
"""

from __future__ import annotations

from typing import Any, Optional

from ._forward import hessian, jacfwd, jvp, linearize
from ._reverse import grad, grad_and_value, jacrev, vjp
from ._vmap import vmap
from ._functionalize import functionalize, replace_all_batch_norm_modules_  # compat

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
           "linearize", "functional_call", "stack_module_state", "functionalize",
           "replace_all_batch_norm_modules_"]


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None,
                    kwargs: Optional[dict] = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """Call ``module`` with its parameters and buffers replaced by those named in
    ``parameter_and_buffer_dicts`` (a dict, or a tuple/list of dicts with distinct keys);
    ``args`` is one argument or a tuple of them. The module's own tensors are back afterwards.
    With it, a module is a function of its parameters for the other transforms.

    >>> import ndgrad
    >>> from ndgrad.func import functional_call, grad
    >>> m = ndgrad.nn.Linear(2, 1, bias=False)
    >>> x = ndgrad.tensor([[1.0, 2.0]])
    >>> grad(lambda p: functional_call(m, p, (x,)).sum())({"weight": ndgrad.zeros(1, 2)})
    {'weight': tensor([[1., 2.]])}
    """
    from ..nn.utils import stateless  # local import: ndgrad.func must not load nn at import
    return stateless.call(module, parameter_and_buffer_dicts, args, kwargs,
                          tie_weights=tie_weights, strict=strict)


def stack_module_state(models: Any) -> tuple:
    """``(params, buffers)``: the parameters and buffers of ``models`` (modules of one class,
    all in training or all in eval mode), each name's tensors stacked along a new first
    dimension, for ensembling with :func:`vmap` and :func:`functional_call`. Stacked
    parameters are new leaves (requiring grad when the models' do).

    >>> import ndgrad
    >>> from ndgrad.func import functional_call, stack_module_state, vmap
    >>> models = [ndgrad.nn.Linear(3, 2) for _ in range(4)]
    >>> params, buffers = stack_module_state(models)
    >>> params["weight"].shape
    ndgrad.Size([4, 2, 3])
    >>> vmap(lambda p, b: functional_call(models[0], (p, b), ndgrad.ones(5, 3)))(
    ...     params, buffers).shape
    ndgrad.Size([4, 5, 2])
    """
    from ..ops import stack  # local import: keeps this module's imports at the top light
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({bool(m.training) for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(per_model: list, name: str) -> Any:
        flags = {bool(t.requires_grad) for t in per_model}
        if len(flags) > 1:
            raise RuntimeError(f"Expected {name} from each model to have the same "
                               ".requires_grad")
        out = stack(per_model)
        return out.detach()._set_requires_grad(True) if flags == {True} else out

    named_p = [dict(m.named_parameters()) for m in models]
    named_b = [dict(m.named_buffers()) for m in models]
    params = {k: stacked([d[k] for d in named_p], k) for k in named_p[0]}
    buffers = {k: stacked([d[k] for d in named_b], k) for k in named_b[0]}
    return params, buffers
