"""Samplers: the order in which a ``DataLoader`` visits a map-style dataset's keys.

``RandomSampler``, ``SubsetRandomSampler`` and ``BatchSampler`` over them give torch's order for
the same seed (Note [Random streams] in ``ndgrad/_generator.py``).

Example:
    >>> import ndgrad
    >>> from ndgrad.utils.data import BatchSampler, RandomSampler
    >>> g = ndgrad.Generator().manual_seed(0)
    >>> list(BatchSampler(RandomSampler(range(6), generator=g), batch_size=4, drop_last=False))
    [[2, 5, 3, 0], [1, 4]]
"""

from __future__ import annotations

from typing import Iterable, Iterator, List, Optional, Sequence, Sized, Union

import numpy as np

from ... import _creation
from ...ops.sampling import multinomial
from ..._generator import Generator, default_generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


def _shared_seed(generator: Optional[Generator]) -> int:
    """A fresh int64 seed from ``generator`` (or the default one), as torch's
    ``empty((), dtype=int64).random_()`` draws it."""
    return (generator if generator is not None else default_generator).random64() % (2 ** 63)


class Sampler:
    """Base class: an iterable over dataset keys (or over batches of them)."""

    def __init__(self, data_source: Optional[Sized] = None) -> None:
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation (or ``num_samples`` draws with ``replacement``); without a
    ``generator`` each pass seeds a new one from the default generator, as torch does."""

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: Optional[int] = None, generator: Optional[Generator] = None
                 ) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError("replacement should be a boolean value, but got replacement="
                            f"{self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        gen = self.generator
        if gen is None:
            gen = Generator().manual_seed(_shared_seed(None))
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from _creation.randint(0, n, (32,), generator=gen).tolist()
            yield from _creation.randint(0, n, (self.num_samples % 32,),
                                         generator=gen).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from _creation.randperm(n, generator=gen).tolist()
            yield from _creation.randperm(n, generator=gen).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices: Sequence[int], generator: Optional[Generator] = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _creation.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``: one
    ``multinomial`` draw on the generator, so a seed gives torch's indices.

    >>> import ndgrad
    >>> from ndgrad.utils.data import WeightedRandomSampler
    >>> _ = ndgrad.manual_seed(0)
    >>> list(WeightedRandomSampler([0.0, 1.0, 3.0], 4))
    [2, 2, 2, 2]
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Optional[Generator] = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or \
                num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got replacement="
                             f"{replacement}")
        w = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights,
                       dtype=np.float64)
        if w.ndim != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(w.shape)}")
        self.weights = _creation.tensor(w)
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        w = self.weights.numpy()
        if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not self.replacement and self.num_samples > int((w > 0).sum()):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                               "replacement")
        yield from multinomial(self.weights, self.num_samples, self.replacement,
                               generator=self.generator).tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` keys from another sampler (the last one shorter unless
    ``drop_last``)."""

    def __init__(self, sampler: Union[Sampler, Iterable[int]], batch_size: int,
                 drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError("drop_last should be a boolean value, but got drop_last="
                             f"{drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[List[int]]:
        batch: List[int] = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
