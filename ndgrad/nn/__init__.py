"""``ndgrad.nn``: PyTorch's ``torch.nn`` on ndgrad: ``Module`` and its layers, ``Parameter``,
``functional`` (``import ndgrad.nn.functional as F``), ``init`` and ``utils``.

Note [nn layout]
The differentiable kernels of ``nn.functional`` are op-table entries in ``ndgrad/ops/nn_*.py``
(one family per file, each with its ``__all__`` and its ``SIGNATURES`` block);
``nn/functional.py`` only gathers them and installs their argument checks. The modules in
``nn/modules/`` are written with public ops and the Tensor API, like user code.

"""

from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parameter import *  # noqa: F401,F403
from .parameter import __all__ as _parameter_all

__all__ = ["functional", "init", "utils"] + list(_parameter_all) + list(_modules_all)
