"""``ndgrad.func``: composable function transforms with torch.func's names and semantics.

``grad``, ``grad_and_value``, ``vjp`` and ``jacrev`` (reverse mode), ``jvp``, ``linearize``,
``jacfwd`` and ``hessian`` (forward mode), ``vmap`` and ``functional_call``. They compose with
each other (``grad(grad(f))``, ``vmap(grad(f))``, ``jacfwd(jacrev(f))`` ...) and take and
return pytrees (tuples, lists, dicts) of tensors. See Note [Transform levels] in _common.py and
Note [vmap by entries] in _vmap.py.

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

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
           "linearize", "functional_call"]


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
    return stateless.functional_call(module, parameter_and_buffer_dicts, args, kwargs,
                                     tie_weights=tie_weights, strict=strict)
