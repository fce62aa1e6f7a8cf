"""Datasets: map-style (``Dataset``) and iterable (``IterableDataset``), and the ways to
combine and split them, as ``torch.utils.data``.

Example:
    >>> import ndgrad
    >>> from ndgrad.utils.data import TensorDataset, random_split
    >>> ds = TensorDataset(ndgrad.arange(10.0), ndgrad.arange(10))
    >>> ds[3]
    (tensor(3.), tensor(3))
    >>> train, test = random_split(ds, [0.8, 0.2], generator=ndgrad.Generator().manual_seed(0))
    >>> len(train), len(test)
    (8, 2)
"""

from __future__ import annotations

import bisect
import math
import warnings
from typing import Any, Generic, Iterable, Iterator, List, Optional, Sequence, TypeVar, Union

from ... import _creation
from ...tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split"]

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map from keys (usually ``0 .. len-1``) to samples: implement ``__getitem__`` (and
    ``__len__`` for the default samplers). ``a + b`` concatenates."""

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A stream of samples: implement ``__iter__``. With worker processes each worker iterates
    its own copy; use ``get_worker_info()`` to split the stream between them."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset) -> "ChainDataset":  # type: ignore[override]  # as torch
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the rows of tensors that share their first dimension."""

    def __init__(self, *tensors: Tensor) -> None:
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Samples are tuples (positional datasets) or dicts (keyword datasets) of the samples of
    datasets of equal length."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args:
            if kwargs:
                raise ValueError("Supported either ``tuple``- (via ``args``) or"
                                 "``dict``- (via ``kwargs``) like input/output, but both types "
                                 "are given.")
            self._length = _len(args[0])
            if any(self._length != _len(d) for d in args):
                raise ValueError("Size mismatch between datasets")
            self.datasets: Any = args
        elif kwargs:
            values = list(kwargs.values())
            self._length = _len(values[0])
            if any(self._length != _len(d) for d in values):
                raise ValueError("Size mismatch between datasets")
            self.datasets = kwargs
        else:
            raise ValueError("At least one dataset should be passed")

    def __getitem__(self, index: Any) -> Any:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """Map-style datasets one after the other."""

    @staticmethod
    def cumsum(sequence: Sequence[Dataset]) -> List[int]:
        out, total = [], 0
        for d in sequence:
            total += _len(d)
            out.append(total)
        return out

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> Any:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after the other."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += _len(d)
        return total


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: List[int]) -> List[Any]:
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def _len(dataset: Any) -> int:
    """``len`` of a dataset that must have one (``Dataset`` declares no ``__len__``, as torch's
    does not; one without it fails here with Python's TypeError)."""
    return len(dataset)


def random_split(dataset: Dataset, lengths: Sequence[Union[int, float]],
                 generator: Optional[Any] = None) -> List[Subset]:
    """Split into non-overlapping subsets of the given lengths, or of the given fractions of
    ``len(dataset)`` (the remainder spread one by one from the first subset), by a random
    permutation drawn as torch draws it (the same seed gives torch's split)."""
    n = _len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(int(math.floor(n * frac)))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, s in enumerate(sizes):
            if s == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              "empty dataset.", stacklevel=2)
        lengths = sizes
    counts: Sequence[Any] = lengths
    if sum(counts) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = _creation.randperm(sum(counts), generator=generator).tolist()
    out, offset = [], 0
    for size in counts:
        out.append(Subset(dataset, perm[offset:offset + size]))
        offset += size
    return out
