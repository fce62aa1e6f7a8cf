"""The hook-based (deprecated) ``nn.utils.weight_norm`` and ``remove_weight_norm``, as
``torch.nn.utils.weight_norm``: the weight is replaced by parameters ``<name>_g`` and
``<name>_v`` and recomputed by a forward pre-hook. Prefer
``nn.utils.parametrizations.weight_norm``."""

from __future__ import annotations

import warnings
from typing import Any, Optional

from ..modules.module import Module
from ..parameter import Parameter, UninitializedParameter
from .parametrizations import _norm_except_dim, _weight_norm

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook recomputing ``<name>`` from ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name: str, dim: Optional[int]) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Any:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: Optional[int]) -> "WeightNorm":
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                      stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError("Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "weight normalization")
        g = _norm_except_dim(weight, 2, dim)       # its IndexError leaves the module as it was
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(g.data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: Optional[int] = 0) -> Module:
    """Replace ``module.<name>`` by ``g * v / ||v||`` with parameters ``<name>_g`` and
    ``<name>_v`` (deprecated: see ``parametrizations.weight_norm``)."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo ``weight_norm``: ``<name>`` becomes a parameter again."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
