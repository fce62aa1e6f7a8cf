"""``ndgrad.autograd``: reverse-mode automatic differentiation with PyTorch's semantics.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.autograd.grad((x * x).sum(), x)
    (tensor([2., 4.]),)

Note [Layers]
ndgrad's modules form layers; every import (at module level or inside a function) points to
the importer's own layer or one below, never up. tests/test_layering.py reads the sources and
enforces it. Bottom to top:
  1. bottom: ``_dtype``, ``_layout`` (memory formats, strides), ``_format`` (printing),
     ``tensor`` (Tensor = an ndarray plus autograd state), ``_creation`` (factories),
     ``_signature`` (argument checking), and the runtime's two leaf modules the Tensor's state
     is made of, ``autograd/grad_mode.py`` and ``autograd/hooks.py`` (no ndgrad imports).
  2. the graph runtime, ``autograd/{node,engine,accumulate_grad,saved,anomaly_mode,profiler,
     batching}.py``: nodes and edges, the engine, AccumulateGrad and ``grad_accumulator``,
     saved tensors, the modes. It knows no individual op and never imports ``ndgrad.ops`` or
     the API. What it needs from a layer above is registered by that layer when imported:
     ``ops/pointwise.py`` gives AccumulateGrad its layout-preserving copy (an op, recorded as
     ``CopyBackwards``: ``accumulate_grad._copy_like_layout``); ``ops/_dispatch.py`` registers
     setters for its own hot-path flags with anomaly mode, the profiler and the batch levels
     (``watch``/``attach``, Note [Instrumentation flags] in ops/_dispatch.py). Likewise for the
     bottom layer: ``ops/views_inplace.py`` gives Tensor ``_refresh_view``, forward AD gives
     ``_format`` the tangent a dual tensor prints, and ``_tensor_methods`` binds
     ``Tensor.backward`` (the API) like every other method.
  3. the op table, ``ops/``: first its machinery (``_dispatch``, which records the runtime's
     nodes; ``_jvp``; ``_util``; ``views_inplace``; ``_batching``), then the op families
     (``pointwise``, ``unary``, ``reduction``, ``shape``, ``linalg``, ...), which import the
     machinery and each other but never the API. The two places where the machinery needs a
     family (``_batching.install`` reading every family's Ops, ``views_inplace`` calling
     ``masked_fill`` and the shape ops) import it inside the function (the allow-list in
     tests/test_layering.py).
  4. the API: ``autograd/{api,function,functional,forward_ad,gradcheck,graph}.py``,
     ``_tensor_methods`` (binds Tensor's methods, ``Tensor.backward`` among them),
     ``_signatures``, ``utils/``, and ``ndgrad/__init__.py``.
A function-local import is the exception and says why (``# local import: <why>``).

This package's ``__init__`` runs whenever any of its modules is first imported, Tensor's own
``grad_mode`` included, so at load time it imports only ``grad_mode``; its public API
(``backward``, ``grad``, ``Function``, ``functional`` ...) is bound by ``_load``, which
``ndgrad/__init__.py`` calls once the op table exists.
"""

from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401
from .grad_mode import is_multithreading_enabled, set_multithreading_enabled  # noqa: F401
from .grad_mode import inference_mode, is_inference_mode_enabled  # noqa: F401

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # what _load binds, for type checkers (Note [Typed API] in ndgrad/types.py)
    from . import forward_ad, functional, graph, profiler  # noqa: F401
    from .anomaly_mode import (  # noqa: F401
        detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly)
    from .api import backward, grad  # noqa: F401
    from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
    from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401
    from .node import Node  # noqa: F401

__all__ = ["backward", "grad", "graph", "no_grad", "enable_grad", "set_grad_enabled",
           "is_grad_enabled", "Node", "Function", "FunctionCtx", "once_differentiable",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "profiler", "set_multithreading_enabled",
           "is_multithreading_enabled", "forward_ad", "functional", "gradcheck",
           "gradgradcheck", "GradcheckError", "inference_mode", "is_inference_mode_enabled",
           "is_tensor_like"]


def _load() -> None:
    """Bind the package's public names (the API layer; called by ndgrad/__init__.py)."""
    global forward_ad, functional, graph, profiler, detect_anomaly, is_anomaly_check_nan_enabled
    global is_anomaly_enabled, set_detect_anomaly, backward, grad, Function, FunctionCtx
    global once_differentiable, GradcheckError, gradcheck, gradgradcheck, Node, is_tensor_like
    # local import: the API layer, loaded once the op table exists (this __init__ also runs
    # when tensor.py imports grad_mode, and must not load the API then)
    from . import forward_ad, functional, graph, profiler
    from .anomaly_mode import (  # local import: as above
        detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly)
    from .api import backward, grad  # local import: as above
    from .function import Function, FunctionCtx, once_differentiable  # local import: as above
    from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # local import: as above
    from .node import Node  # local import: as above
    from ._tensor_like import is_tensor_like  # local import: as above
    # As in PyTorch, ``ndgrad.autograd.gradcheck`` is the function (bound just above, after the
    # import of the module set the attribute to the module); the module stays importable as
    # ``ndgrad.autograd.gradcheck`` through ``from ... import`` (sys.modules).
