"""``ndgrad.nn.parallel``: ``DistributedDataParallel`` (data parallelism over
``ndgrad.distributed``)."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
