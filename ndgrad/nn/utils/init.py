"""``skip_init``, as ``torch.nn.utils.init``."""

from __future__ import annotations

import inspect
from typing import Any

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls: Any, *args: Any, **kwargs: Any) -> Module:
    """An instance of ``module_cls`` whose parameters and buffers hold uninitialized memory
    (the class must take a ``device`` argument, as PyTorch requires)."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = final_device
    return module_cls(*args, **kwargs).to_empty(device=final_device)
