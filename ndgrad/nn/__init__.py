"""``ndgrad.nn``: PyTorch's ``torch.nn`` on ndgrad: ``Module`` and its layers, ``Parameter``,
``functional`` (``import ndgrad.nn.functional as F``), ``init`` and ``utils``.

Note [nn layout]
The differentiable kernels of ``nn.functional`` are op-table entries in ``ndgrad/ops/nn_*.py``
(one family per file, each with its ``__all__`` and its ``SIGNATURES`` block);
``nn/functional.py`` only gathers them and installs their argument checks. The modules in
``nn/modules/`` are written with public ops and the Tensor API, like user code.
``Module`` (``nn/modules/module.py``) keeps PyTorch's registration rules, traversal order,
``state_dict`` keys and hooks, so model code and checkpoints carry over unchanged.

Example:
    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> import ndgrad.nn.functional as F
    >>> _ = ndgrad.manual_seed(0)
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.Flatten(), nn.Linear(8, 2))
    >>> list(model.state_dict())
    ['0.weight', '0.bias', '2.weight', '2.bias']
    >>> x, y = ndgrad.randn(16, 4), ndgrad.randn(16, 2)
    >>> losses = []
    >>> for step in range(5):
    ...     model.zero_grad()
    ...     loss = ((model(x) - y) ** 2).mean()
    ...     loss.backward()
    ...     _ = nn.utils.clip_grad_norm_(model.parameters(), max_norm=10.0)
    ...     with ndgrad.no_grad():
    ...         for p in model.parameters():
    ...             p -= 0.1 * p.grad
    ...     losses.append(loss.item())
    >>> losses[-1] < losses[0]
    True
    >>> F.linear(ndgrad.ones(1, 4), model[0].weight).shape
    ndgrad.Size([1, 8])
"""

from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parameter import *  # noqa: F401,F403
from .parameter import __all__ as _parameter_all

from . import attention  # noqa: F401,E402  (sdpa_kernel, SDPBackend)
from . import parallel  # noqa: F401,E402  (DistributedDataParallel; distributed loads MPI lazily)
from .parallel import DataParallel  # noqa: F401,E402

__all__ = ["functional", "init", "utils"] + list(_parameter_all) + list(_modules_all)
