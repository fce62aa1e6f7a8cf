"""``ndgrad.utils.data``: datasets, samplers, collation and the ``DataLoader``, as
``torch.utils.data``.

Example:
    >>> import ndgrad
    >>> from ndgrad.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(ndgrad.arange(8.0))
    >>> g = ndgrad.Generator().manual_seed(0)
    >>> [b[0].tolist() for b in DataLoader(ds, batch_size=3, shuffle=True, generator=g)]
    [[5.0, 3.0, 1.0], [7.0, 2.0, 6.0], [4.0, 0.0]]
"""

from .collate import default_collate, default_convert
from .dataloader import DataLoader, WorkerInfo, get_worker_info
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset,
                      Subset, TensorDataset, random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["DataLoader", "WorkerInfo", "get_worker_info", "default_collate", "default_convert",
           "Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split", "Sampler", "SequentialSampler",
           "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "DistributedSampler"]


def __getattr__(name: str):
    """``DistributedSampler`` (``distributed.py``) loads on first use, with ndgrad.distributed:
    ``import ndgrad.utils.data`` does not load the distributed package."""
    if name == "DistributedSampler":
        from .distributed import DistributedSampler  # local import: loads ndgrad.distributed
        return DistributedSampler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
