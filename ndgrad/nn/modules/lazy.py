"""``LazyModuleMixin`` (defined in ``module.py``), importable from here as from
``torch.nn.modules.lazy``."""

from .module import LazyModuleMixin

__all__ = ["LazyModuleMixin"]
