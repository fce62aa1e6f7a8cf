"""``ndgrad.autograd``: reverse-mode automatic differentiation with PyTorch's semantics.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.autograd.grad((x * x).sum(), x)
    (tensor([2., 4.]),)
"""

from . import forward_ad  # noqa: F401
from . import functional  # noqa: F401
from . import graph  # noqa: F401
from . import profiler  # noqa: F401
from .anomaly_mode import (  # noqa: F401
    detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly)
from .api import backward, grad  # noqa: F401
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401
from .grad_mode import is_multithreading_enabled, set_multithreading_enabled  # noqa: F401
from .grad_mode import inference_mode, is_inference_mode_enabled  # noqa: F401
# As in PyTorch, ``ndgrad.autograd.gradcheck`` is the function; the module stays importable as
# ``ndgrad.autograd.gradcheck`` through ``from ... import`` (sys.modules).
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401,E402
from .node import Node  # noqa: F401

__all__ = ["backward", "grad", "graph", "no_grad", "enable_grad", "set_grad_enabled",
           "is_grad_enabled", "Node", "Function", "FunctionCtx", "once_differentiable",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "profiler", "set_multithreading_enabled",
           "is_multithreading_enabled", "forward_ad", "functional", "gradcheck",
           "gradgradcheck", "GradcheckError", "inference_mode", "is_inference_mode_enabled"]
