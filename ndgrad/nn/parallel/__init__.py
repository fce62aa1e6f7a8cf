"""``ndgrad.nn.parallel``: ``DataParallel`` (CPU form: runs the module) and
``DistributedDataParallel`` (data parallelism over ``ndgrad.distributed``)."""

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
