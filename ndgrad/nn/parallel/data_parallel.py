"""``DataParallel``: torch's single-process data parallelism, in its CPU-only form.

torch's ``DataParallel`` replicates a module over the visible GPUs; on a machine without an
accelerator it keeps the module, sets ``device_ids`` to ``[]`` and its forward simply calls the
module (inside a ``DataParallel.forward`` profiler range). ndgrad has no accelerator, so this is
that behaviour: programs written for GPUs that wrap their model run unchanged, and their
checkpoints keep the ``module.`` prefix of the wrapped state dict.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ...autograd.profiler import record_function
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Run ``module`` as is (no device to spread it over), keeping torch's wrapper shape:
    ``.module``, ``device_ids == []``, state dict keys prefixed ``module.``.

    >>> import ndgrad, ndgrad.nn as nn
    >>> model = nn.DataParallel(nn.Linear(2, 3))
    >>> model(ndgrad.ones(4, 2)).shape, list(model.state_dict())
    (ndgrad.Size([4, 3]), ['module.weight', 'module.bias'])
    """

    def __init__(self, module: Module, device_ids: Optional[Sequence[Any]] = None,
                 output_device: Optional[Any] = None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids: list = []

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Call the wrapped module with the same arguments."""
        with record_function("DataParallel.forward"):
            return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs: Any, device_ids: Optional[Sequence[Any]] = None,
                  output_device: Optional[Any] = None, dim: int = 0,
                  module_kwargs: Optional[Any] = None) -> Any:
    """The functional form of ``DataParallel``: like torch's without an accelerator it
    cannot choose a device and raises ``RuntimeError``.

    >>> import ndgrad, ndgrad.nn as nn
    >>> try:
    ...     nn.parallel.data_parallel(nn.Linear(2, 2), ndgrad.ones(1, 2))
    ... except RuntimeError as e:
    ...     print(e)
    device type could not be determined
    """
    raise RuntimeError("device type could not be determined")
