"""``DistributedSampler``: each rank's share of a map-style dataset, in torch's order.

The shuffled order is ``randperm(len(dataset))`` of a generator seeded with ``seed + epoch``,
padded (or cut, with ``drop_last``) to a multiple of the number of replicas and dealt out
round-robin; ndgrad's ``Generator`` draws torch's permutation, so the indices equal torch's
``DistributedSampler`` for the same seed and epoch.

Example:
    >>> from ndgrad.utils.data.distributed import DistributedSampler
    >>> s = DistributedSampler(range(10), num_replicas=3, rank=1, seed=0)
    >>> s.set_epoch(2)
    >>> list(s), len(s)
    ([7, 6, 4, 8], 4)
"""

from __future__ import annotations

import math
from typing import Any, Iterator, Optional

from ... import _creation
from ... import distributed as dist
from ..._generator import Generator
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Restrict data loading to this rank's subset of ``dataset`` (``num_replicas`` and
    ``rank`` default to the default process group's)."""

    def __init__(self, dataset: Any, num_replicas: Optional[int] = None,
                 rank: Optional[int] = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        if num_replicas is None:
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size()
        if rank is None:
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas)
                                         / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = _creation.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch: with ``shuffle=True`` each epoch gives another order (the same on
        every rank)."""
        self.epoch = epoch
