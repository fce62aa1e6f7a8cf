"""``DataLoader``: batches from a dataset, in the main process or in worker processes, with
torch's arguments, checks, ordering and seeding.

Note [DataLoader seeding]
Each iteration (epoch) first draws a base seed from the loader's ``generator`` (or the default
generator) and only then, lazily on the first batch, the sampler draws its own seed: the order
torch draws them in, so a ``RandomSampler`` (``shuffle=True``) visits torch's indices for the
same seed (Note [Random streams] in ``ndgrad/_generator.py``). Worker ``i`` seeds Python's
``random``, ndgrad's default generator (``base_seed + i``) and NumPy's global generator (from
``base_seed`` and ``i``) before ``worker_init_fn`` runs.

Note [DataLoader workers]
With ``num_workers > 0`` each worker is a process with its own index queue; the main process
keeps up to ``prefetch_factor * num_workers`` batches in flight, hands out batch indices round
robin and yields results in sampler order (``in_order=True``; out-of-order arrivals wait in
``_task_info``). An exception in a worker comes back wrapped and is re-raised in the main
process with the worker's traceback; an iterable dataset's worker reports its end once and is
skipped from then on. A worker that dies, or no batch within ``timeout``, raises.

Example:
    >>> import ndgrad
    >>> from ndgrad.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(ndgrad.arange(6.0).reshape(6, 1), ndgrad.arange(6))
    >>> [y.tolist() for _, y in DataLoader(ds, batch_size=4)]
    [[0, 1, 2, 3], [4, 5]]
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import queue
import random
import sys
import traceback
import warnings
from typing import Any, Callable, Iterable, Iterator, List, Optional

import numpy as np

from ... import _creation
from ..._generator import Generator
from .collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _shared_seed

__all__ = ["DataLoader", "get_worker_info", "WorkerInfo"]

_POLL = 5.0     # seconds between liveness checks while waiting for a batch


# ---------------------------------------------------------------------------- worker side
class WorkerInfo:
    """What a worker process knows about itself (``get_worker_info()``): ``id``,
    ``num_workers``, ``seed`` and its copy of ``dataset``."""

    __initialized = False

    def __init__(self, **kwargs: Any) -> None:
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key: str, val: Any) -> None:
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        super().__setattr__(key, val)

    def __repr__(self) -> str:
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{type(self).__name__}({items})"


_worker_info: Optional[WorkerInfo] = None


def get_worker_info() -> Optional[WorkerInfo]:
    """In a DataLoader worker process, its ``WorkerInfo``; in the main process, None."""
    return _worker_info


class _ExceptionWrapper:
    """An exception raised in a worker, carried to the main process by pickling."""

    def __init__(self, where: str) -> None:
        exc_type, exc, tb = sys.exc_info()
        assert exc_type is not None         # made in an except clause
        self.exc_type = exc_type
        self.msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self) -> None:
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.msg}"
        try:
            exc = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exc


class _IterableEnd:
    """An iterable dataset's worker has no more batches."""

    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


class _Resume:
    """Start a new epoch (persistent workers)."""


class _InfiniteConstantSampler(Sampler):
    """``None`` forever: the sampler of an iterable dataset."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class _Fetcher:
    """Turns one item of the index sampler (a key, or a list of keys with auto-collation)
    into a (collated) batch."""

    def __init__(self, dataset: Any, iterable: bool, auto_collation: bool,
                 collate_fn: Callable, drop_last: bool) -> None:
        self.dataset, self.iterable = dataset, iterable
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, \
            drop_last
        self._it: Any = iter(dataset) if iterable else None
        self.ended = False

    def fetch(self, index: Any) -> Any:
        if self.iterable:
            if self.ended:
                raise StopIteration
            if self.auto_collation:
                data = []
                for _ in index:
                    try:
                        data.append(next(self._it))
                    except StopIteration:
                        self.ended = True
                        break
                if not data or (self.drop_last and len(data) < len(index)):
                    raise StopIteration
            else:
                data = next(self._it)
            return self.collate_fn(data)
        if self.auto_collation:
            many = getattr(self.dataset, "__getitems__", None)
            data = many(index) if many is not None else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


def _seed_worker(base_seed: int, worker_id: int) -> int:
    seed = base_seed + worker_id
    random.seed(seed)
    _creation.manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
    return seed


def _worker_loop(dataset: Any, iterable: bool, index_queue: Any, result_queue: Any,
                 done_event: Any, auto_collation: bool, collate_fn: Callable, drop_last: bool,
                 base_seed: int, init_fn: Optional[Callable], worker_id: int,
                 num_workers: int) -> None:
    """A worker process: fetch the batches the main process asks for until told to stop."""
    global _worker_info
    where = f"in DataLoader worker process {worker_id}"
    try:
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_error = None
        fetcher: Any = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _Fetcher(dataset, iterable, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = _ExceptionWrapper(where)
        ended = False
        while True:
            try:
                task = index_queue.get(timeout=_POLL)
            except queue.Empty:
                if done_event.is_set():
                    break
                continue
            if task is None:
                break
            if isinstance(task, _Resume):
                result_queue.put((task, None))
                ended = False
                if init_error is None:
                    fetcher = _Fetcher(dataset, iterable, auto_collation, collate_fn,
                                       drop_last)
                continue
            if done_event.is_set() or ended:
                continue
            idx, index = task
            if init_error is not None:
                data: Any = init_error
                init_error = None
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if not iterable:
                        data = _ExceptionWrapper(where)
                    else:
                        data = _IterableEnd(worker_id)
                        ended = True
                except Exception:
                    data = _ExceptionWrapper(where)
            result_queue.put((idx, data))
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        result_queue.cancel_join_thread()
        result_queue.close()


# ---------------------------------------------------------------------------- main side
class _SingleProcessIter:
    def __init__(self, loader: "DataLoader") -> None:
        self._loader = loader
        self._base_seed = loader._shared_seed()           # Note [DataLoader seeding]
        self._sampler_iter = iter(loader._index_sampler)
        self._fetcher = _Fetcher(loader.dataset, loader._iterable, loader._auto_collation,
                                 loader.collate_fn, loader.drop_last)
        self._num_yielded = 0

    def __iter__(self) -> "_SingleProcessIter":
        return self

    def __next__(self) -> Any:
        index = next(self._sampler_iter)
        data = self._fetcher.fetch(index)
        self._num_yielded += 1
        return data

    def __len__(self) -> int:
        return len(self._loader)


class _MultiProcessIter:
    def __init__(self, loader: "DataLoader") -> None:
        self._loader = loader
        n = self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor if loader.prefetch_factor is not None else 2
        self._persistent = loader.persistent_workers
        self._timeout = loader.timeout
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = mp.get_context()
        elif isinstance(ctx, str):
            ctx = mp.get_context(ctx)
        self._base_seed = loader._shared_seed()           # Note [DataLoader seeding]
        self._done = ctx.Event()
        self._results = ctx.Queue()
        self._index_queues: List[Any] = []
        self._workers: List[Any] = []
        for i in range(n):
            q = ctx.Queue()
            q.cancel_join_thread()
            w = ctx.Process(target=_worker_loop, args=(
                loader.dataset, loader._iterable, q, self._results, self._done,
                loader._auto_collation, loader.collate_fn, loader.drop_last, self._base_seed,
                loader.worker_init_fn, i, n), daemon=True)
            w.start()
            self._index_queues.append(q)
            self._workers.append(w)
        self._shutdown = False
        self._reset(first=True)

    def _reset(self, first: bool = False) -> None:
        self._sampler_iter = iter(self._loader._index_sampler)
        self._send_idx = self._rcvd_idx = 0
        self._task_info: dict = {}
        self._outstanding = 0
        self._active = [True] * self._num_workers
        self._cycle = itertools.cycle(range(self._num_workers))
        if not first:
            for q in self._index_queues:
                q.put(_Resume())
            pending = self._num_workers
            while pending:
                idx, _ = self._get()
                if isinstance(idx, _Resume):
                    pending -= 1
        for _ in range(self._prefetch * self._num_workers):
            self._put_index()

    def _put_index(self) -> None:
        if self._outstanding >= self._prefetch * self._num_workers:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            w = next(self._cycle)
            if self._active[w]:
                break
        else:
            return
        self._index_queues[w].put((self._send_idx, index))
        self._task_info[self._send_idx] = (w,)
        self._outstanding += 1
        self._send_idx += 1

    def _get(self) -> tuple:
        waited = 0.0
        while True:
            try:
                return self._results.get(timeout=_POLL if self._timeout <= 0
                                         else min(_POLL, self._timeout))
            except queue.Empty:
                waited += _POLL if self._timeout <= 0 else min(_POLL, self._timeout)
                dead = [w.pid for w in self._workers if not w.is_alive()]
                if dead:
                    self._shutdown_workers()
                    pids = ", ".join(map(str, dead))
                    raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited "
                                       "unexpectedly") from None
                if self._timeout > 0 and waited >= self._timeout:
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds"
                                       ) from None

    def __iter__(self) -> "_MultiProcessIter":
        return self

    def __next__(self) -> Any:
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info[self._rcvd_idx]
                if len(info) == 2 or self._active[info[0]]:
                    break
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._deliver(data)
            idx, data = self._get()
            self._outstanding -= 1
            if isinstance(data, _IterableEnd):
                self._active[data.worker_id] = False
                self._put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._deliver(data)

    def _deliver(self, data: Any) -> Any:
        self._put_index()
        if isinstance(data, _ExceptionWrapper):
            self._shutdown_workers()
            data.reraise()
        return data

    def __len__(self) -> int:
        return len(self._loader)

    def _shutdown_workers(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        self._done.set()
        for q in self._index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for w in self._workers:
            w.join(timeout=_POLL)
            if w.is_alive():
                w.terminate()
        for q in self._index_queues:
            q.close()
        self._results.cancel_join_thread()
        self._results.close()

    def __del__(self) -> None:
        try:
            self._shutdown_workers()
        except Exception:
            pass


class DataLoader:
    """Iterate over a dataset in batches, as ``torch.utils.data.DataLoader``.

    Map-style datasets are visited in the order of ``sampler`` (``SequentialSampler``, or a
    ``RandomSampler`` with ``shuffle=True`` drawing from ``generator``), grouped by
    ``batch_size`` (or by a ``batch_sampler``) and collated by ``collate_fn``
    (``default_collate``; ``default_convert`` when ``batch_size=None``). Iterable datasets are
    read in order. ``num_workers > 0`` fetches in worker processes (Note [DataLoader
    workers]); ``pin_memory`` is accepted and has no effect on the CPU.
    """

    _initialized = False
    _FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
               "persistent_workers")

    def __init__(self, dataset: Dataset, batch_size: Optional[int] = 1,
                 shuffle: Optional[bool] = None, sampler: Optional[Iterable] = None,
                 batch_sampler: Optional[Iterable] = None, num_workers: int = 0,
                 collate_fn: Optional[Callable] = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Optional[Callable[[int], None]] = None,
                 multiprocessing_context: Any = None, generator: Optional[Generator] = None,
                 *, prefetch_factor: Optional[int] = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(dataset)  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator: Any = None
        self._initialized = True

    def __setattr__(self, attr: str, val: Any) -> None:
        if self._initialized and attr in self._FROZEN:
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    def _shared_seed(self) -> int:
        return _shared_seed(self.generator)

    def __iter__(self) -> Any:
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._iterator is None:
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset()
            return self._iterator
        return _MultiProcessIter(self)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)

    def check_worker_number_rationality(self) -> None:
        """Warn when more workers are asked for than the machine has cores."""
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            os.cpu_count()
        if cores and self.num_workers > cores:
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                          f"total. Our suggested max number of worker in current system is "
                          f"{cores}, which is smaller than what this DataLoader is going to "
                          "create. Please be aware that excessive worker creation might get "
                          "DataLoader running slow or even freeze, lower the worker number to "
                          "avoid potential slowness/freeze if necessary.", stacklevel=2)
