"""``DistributedDataParallel``: data-parallel training over ``ndgrad.distributed`` (MPI).

Note [DDP buckets]
Gradients are averaged in buckets: the parameters, taken in reverse registration order (the
order in which backward usually produces their gradients), are grouped per dtype into flat
buffers of at most ``bucket_cap_mb`` (the first one at most 1 MiB when the cap is the default,
so communication starts early), exactly as torch's ``_compute_bucket_assignment_by_size``
groups them. A post-accumulate-grad hook on every parameter marks it ready; when every
parameter of a bucket is ready (and every bucket before it has been started, so all ranks start
the same all-reduces in the same order), the bucket's gradients are copied into its buffer and a
non-blocking MPI all-reduce starts, while backward goes on computing the remaining gradients;
each later hook drives MPI's progress, and so does a helper thread that polls MPI every
~100 us while buckets are in flight (an MPI library on shared memory or TCP moves data only
inside MPI calls; the thread polls the group's communicator with ``Iprobe``, never touching
the buckets' requests, and sleeps in between, so it costs little;
``NDGRAD_DDP_PROGRESS_THREAD=0`` turns it off). When
the last bucket has started, the reducer waits for all of them, divides by the world size and
writes the averages back into ``.grad``.
``no_sync()`` forwards skip all of this (gradients accumulate locally and are averaged with the
next synchronized backward). With ``find_unused_parameters=True`` the forward's output graph is
searched for the parameters it reaches; the others are marked ready at once, and a parameter
unused on every rank keeps its ``.grad`` untouched (one extra small all-reduce of a bitmap).
torch rebuilds its buckets after the first iteration from the order gradients arrived in;
ndgrad keeps the reverse-registration order.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from typing import Any, Iterator, List, Optional

import numpy as np

from ... import distributed as dist
from ..._creation import from_numpy
from ...autograd import grad_mode
from ...distributed import _mpi
from ...tensor import Tensor
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_MB = 1024 * 1024
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024
_DEFAULT_BUCKET_CAP_MB = 25


def _compute_bucket_assignment_by_size(tensors: List[Any], limits: List[int]) -> tuple:
    """Group tensor indices into buckets per dtype, closing a bucket once it holds at least the
    current limit (``limits[0]`` for the first bucket of a dtype, then the next limits, the last
    one repeated); buckets are ordered by their first tensor. Returns (buckets, per-bucket
    limits), as torch's ``torch.distributed._compute_bucket_assignment_by_size``."""
    open_: dict = {}
    which: dict = {}
    done: List[tuple] = []
    for i, t in enumerate(tensors):
        key = t.dtype
        idx, size = open_.get(key, ([], 0))
        idx = idx + [i]
        size += t.numel() * t.element_size()
        k = which.get(key, 0)
        limit = limits[min(k, len(limits) - 1)]
        if size >= limit:
            done.append((idx, limit))
            which[key] = k + 1
            open_.pop(key, None)
        else:
            open_[key] = (idx, size)
    for key, (idx, _) in open_.items():
        done.append((idx, limits[min(which.get(key, 0), len(limits) - 1)]))
    done.sort(key=lambda b: b[0][0])
    return [b[0] for b in done], [b[1] for b in done]


class _ProgressThread:
    """Polls MPI while any DDP bucket is in flight (Note [DDP buckets])."""

    def __init__(self, comm: Any, interval: float = 1e-4) -> None:
        self._comm = comm
        self._interval = interval
        self._active = 0
        self._cv = threading.Condition()
        threading.Thread(target=self._run, name="ndgrad-ddp-progress", daemon=True).start()

    def start(self) -> None:
        with self._cv:
            self._active += 1
            self._cv.notify()

    def stop(self) -> None:
        with self._cv:
            self._active -= 1

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._active == 0:
                    self._cv.wait()
            try:
                self._comm.Iprobe()
            except Exception:  # noqa: BLE001 - a freed communicator ends the thread
                return
            time.sleep(self._interval)


_pollers: dict = {}


def _progress_thread(comm: Any) -> Optional[_ProgressThread]:
    """The polling thread of ``comm`` (MPICH progresses a communicator's operations when
    another call on that communicator enters the library; a call on COMM_SELF does not)."""
    if os.environ.get("NDGRAD_DDP_PROGRESS_THREAD", "1") == "0":
        return None
    MPI = _mpi.mpi()
    if MPI.Query_thread() != MPI.THREAD_MULTIPLE:
        return None
    if id(comm) not in _pollers:
        _pollers[id(comm)] = _ProgressThread(comm)
    return _pollers[id(comm)]


def _find_tensors(obj: Any) -> Iterator[Tensor]:
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _find_tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _find_tensors(o)


class _Bucket:
    __slots__ = ("index", "params", "offsets", "buffer", "pending", "request", "launched")

    def __init__(self, index: int, params: List[int], offsets: List[int], buffer: np.ndarray):
        self.index = index
        self.params = params           # parameter indices
        self.offsets = offsets         # start of each parameter in the flat buffer
        self.buffer = buffer
        self.pending = len(params)
        self.request: Any = None
        self.launched = False


class DistributedDataParallel(Module):
    """Run ``module`` on every rank, averaging gradients over the ranks during backward.

    Construction broadcasts rank 0's parameters and buffers; gradients are averaged by
    bucketed all-reduces that start from post-accumulate-grad hooks while backward is still
    running (Note [DDP buckets]); ``no_sync()`` accumulates gradients locally.
    ``gradient_as_bucket_view`` and ``static_graph`` are accepted and change nothing (gradients
    are copied into the buckets and the averages back); ``device_mesh``, ``mixed_precision`` and
    delayed all-reduces raise NotImplementedError.

    >>> import ndgrad, ndgrad.nn as nn
    >>> import ndgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> _ = ndgrad.manual_seed(0)
    >>> model = nn.parallel.DistributedDataParallel(nn.Linear(3, 2))
    >>> model(ndgrad.ones(4, 3)).sum().backward()
    >>> model.module.bias.grad
    tensor([4., 4.])
    >>> dist.destroy_process_group()
    """

    def __init__(self, module: Module, device_ids: Optional[List[Any]] = None,
                 output_device: Any = None, dim: int = 0,
                 broadcast_buffers: Optional[bool] = None, init_sync: bool = True,
                 process_group: Any = None, bucket_cap_mb: Optional[float] = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params: Any = None, param_to_hook_all_reduce: Any = None,
                 mixed_precision: Any = None, device_mesh: Any = None,
                 skip_all_reduce_unused_params: bool = False,
                 bucket_cap_mb_list: Optional[List[int]] = None, batched_grad_copy: bool = False,
                 forward_sync_buffers: Optional[bool] = None) -> None:
        super().__init__()
        if process_group is not None and device_mesh is not None:
            raise RuntimeError("Cannot specify both process_group and device_mesh arguments.")
        if device_mesh is not None or mixed_precision is not None or \
                delay_all_reduce_named_params is not None or param_to_hook_all_reduce is not None:
            raise NotImplementedError("ndgrad's DistributedDataParallel does not support "
                                      "device_mesh, mixed_precision or delayed all-reduces")
        pg = dist.distributed_c10d._group(process_group)
        if pg == dist.GroupMember.NON_GROUP_MEMBER:
            raise RuntimeError("DistributedDataParallel: this rank is not a member of "
                               "process_group")
        self.process_group = pg
        ignore = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        self.parameters_to_ignore = ignore
        named = [(n, p) for n, p in module.named_parameters() if n not in ignore]
        self._module_parameters = [p for _, p in named]
        if not any(p.requires_grad for p in self._module_parameters):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        if device_ids or output_device:
            devices = {p.device for p in self._module_parameters}
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with "
                "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                f"{device_ids}, output_device {output_device}, and module parameters "
                f"{devices}.")
        self.device_ids = None
        self.output_device = None
        self.dim = dim
        self.module = module
        if broadcast_buffers is not None:
            if forward_sync_buffers is not None:
                warnings.warn("Both `broadcast_buffers` and `forward_sync_buffers` were "
                              "specified. `broadcast_buffers` is deprecated and its value is "
                              "ignored when `forward_sync_buffers` is provided.", FutureWarning,
                              stacklevel=2)
            else:
                warnings.warn("`broadcast_buffers` is deprecated. Use `forward_sync_buffers` "
                              "instead. IMPORTANT: unlike `broadcast_buffers=False`, "
                              "`forward_sync_buffers=False` still syncs buffers at init. If you "
                              "rely on buffers NOT being synced at init (e.g. rank-local "
                              "buffers), keep using `broadcast_buffers=False` until "
                              "`init_sync_buffers` is available.", FutureWarning, stacklevel=2)
        if forward_sync_buffers is not None:
            self.forward_sync_buffers = forward_sync_buffers
            init_sync_buffers = True
        else:
            self.forward_sync_buffers = True if broadcast_buffers is None else broadcast_buffers
            init_sync_buffers = self.forward_sync_buffers
        self.broadcast_buffers = self.forward_sync_buffers
        if check_reduction:
            warnings.warn("The `check_reduction` argument in `DistributedDataParallel` module "
                          "is deprecated. Please avoid using it.", FutureWarning, stacklevel=2)
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self._buffers_to_sync = [b for n, b in module.named_buffers() if n not in ignore]

        self._verify_same_model(named)
        if init_sync:
            self._broadcast_from_rank0(
                self._module_parameters + (self._buffers_to_sync if init_sync_buffers else []))

        if bucket_cap_mb_list:
            limits = [int(mb * _MB) for mb in bucket_cap_mb_list]
            cap = max(limits)
        elif bucket_cap_mb is None:
            cap = _DEFAULT_BUCKET_CAP_MB * _MB
            limits = [_DEFAULT_FIRST_BUCKET_BYTES, cap]
        else:
            cap = int(bucket_cap_mb * _MB)
            limits = [cap]
        self.bucket_bytes_cap = cap
        params = [p for p in self._module_parameters if p.requires_grad]
        self._params = params
        order = list(range(len(params)))[::-1]
        groups, _ = _compute_bucket_assignment_by_size([params[i] for i in order], limits)
        self._buckets: List[_Bucket] = []
        self._where: List[Any] = [None] * len(params)      # param -> (bucket, position)
        for b, members in enumerate(groups):
            idx = [order[m] for m in members]
            offsets, total = [], 0
            for i in idx:
                offsets.append(total)
                total += params[i].numel()
            # float16/bfloat16 gradients are reduced in float32 (MPI has no such type)
            buf = np.empty(total, dtype=_mpi.reduce_dtype(params[idx[0]].detach().numpy().dtype))
            self._buckets.append(_Bucket(b, idx, offsets, buf))
            for pos, i in enumerate(idx):
                self._where[i] = (b, pos)
        self._ready = np.zeros(len(params), dtype=bool)
        self._used = np.zeros(len(params), dtype=np.uint8)
        self._unused_marked: List[int] = []
        self._unused_pending = False
        self._expect_reduction = False        # a synchronized forward awaits its backward
        self._next_bucket = 0
        self._warned_no_unused = False
        self._last_wait_seconds = 0.0
        self._last_hidden_bytes = (0, 0)
        self._poller: Optional[_ProgressThread] = None
        self._hook_handles = [p.register_post_accumulate_grad_hook(self._make_hook(i))
                              for i, p in enumerate(params)]

    # ------------------------------------------------------------------ construction
    def _verify_same_model(self, named: list) -> None:
        pg = self.process_group
        mine = [(tuple(p.shape), str(p.dtype)) for _, p in named]
        everyone: list = [None] * pg.size()
        dist.all_gather_object(everyone, mine, group=pg)
        ref = everyone[0]
        for r, theirs in enumerate(everyone):
            if len(theirs) != len(ref):
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank {r} has "
                                   f"{len(theirs)} params, while rank 0 has inconsistent "
                                   f"{len(ref)} params.")
            for k, (a, b) in enumerate(zip(theirs, ref)):
                if a != b:
                    raise RuntimeError(
                        f"DDP expects same model across all ranks, but Rank {r} has parameter "
                        f"{k} ({named[k][0]}) of shape {list(a[0])} and dtype {a[1]}, while "
                        f"rank 0 has it of shape {list(b[0])} and dtype {b[1]}.")

    def _broadcast_from_rank0(self, tensors: List[Tensor]) -> None:
        """Rank 0's values of ``tensors``, one broadcast per dtype."""
        pg = self.process_group
        if pg.size() == 1 or not tensors:
            return
        by_dtype: dict = {}
        for t in tensors:
            by_dtype.setdefault(str(t.dtype), []).append(t.detach().numpy())
        for arrays in by_dtype.values():
            flat = np.concatenate([a.reshape(-1) for a in arrays])
            req = pg._comm.Ibcast(_mpi.as_bytes(flat), root=0)
            self._wait([req], "BROADCAST")
            off = 0
            for a in arrays:
                a[...] = flat[off:off + a.size].reshape(a.shape)
                off += a.size

    def _wait(self, requests: list, op_type: str) -> None:
        MPI = _mpi.mpi()
        pg = self.process_group
        me = pg.rank()
        with _mpi.watched(pg._timeout, lambda ms: (
                f"[Rank {me}] Watchdog caught collective operation timeout: WorkMPI(OpType="
                f"{op_type}, DistributedDataParallel, Timeout(ms)={int(pg._timeout * 1000)}) "
                f"ran for {int(ms)} milliseconds before timing out. Another rank probably "
                "failed, exited or did not run the same backward; aborting the job.")):
            MPI.Request.Waitall(requests)

    # ------------------------------------------------------------------ forward
    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, forward/backward passes accumulate gradients locally without communication;
        the first synchronized backward after it averages the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        sync = grad_mode.is_grad_enabled() and self.require_backward_grad_sync
        if sync and self._expect_reduction:
            self._unfinished_error()
        if self.forward_sync_buffers and self.require_forward_param_sync and \
                self.process_group.size() > 1 and self._buffers_to_sync:
            self._broadcast_from_rank0(self._buffers_to_sync)
        output = self.module(*inputs, **kwargs)
        if sync:
            self.require_forward_param_sync = True
            self._prepare_for_backward(output)
        else:
            self.require_forward_param_sync = False
        return output

    def _unfinished_error(self) -> None:
        missing = [i for i in range(len(self._params)) if not self._ready[i]]
        if self.find_unused_parameters:
            advice = ("Since `find_unused_parameters=True` is enabled, this likely  means that "
                      "not all `forward` outputs participate in computing loss. You can fix "
                      "this by making sure all `forward` function outputs participate in "
                      "calculating loss. ")
        else:
            advice = ("You can enable unused parameter detection by passing the keyword "
                      "argument `find_unused_parameters=True` to "
                      "`torch.nn.parallel.DistributedDataParallel`, and by making sure all "
                      "`forward` function outputs participate in calculating loss. ")
        raise RuntimeError(
            "Expected to have finished reduction in the prior iteration before starting a new "
            "one. This error indicates that your module has parameters that were not used in "
            "producing loss. " + advice +
            "If you already have done the above, then the distributed data parallel module "
            "wasn't able to locate the output tensors in the return value of your module's "
            "`forward` function. Please include the loss function and the structure of the "
            "return value of `forward` of your module when reporting this issue (e.g. list, "
            "dict, iterable).\nParameter indices which did not receive grad for rank "
            f"{self.process_group.rank()}: {' '.join(map(str, missing))}\n In addition, you "
            "can set the environment variable TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL "
            "to print out information about which particular parameters did not receive "
            "gradient on this rank as part of this error")

    def _prepare_for_backward(self, output: Any) -> None:
        self._ready[:] = False
        self._used[:] = 0
        self._next_bucket = 0
        for b in self._buckets:
            b.pending = len(b.params)
            b.launched = False
            b.request = None
        self._expect_reduction = True
        self._unused_marked = []
        if not self.find_unused_parameters:
            return
        seen, reached = set(), set()
        stack = [t.grad_fn for t in _find_tensors(output) if t.grad_fn is not None]
        index = {id(p): i for i, p in enumerate(self._params)}
        for t in _find_tensors(output):
            if t.grad_fn is None and id(t) in index:
                reached.add(index[id(t)])
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            var = getattr(node, "variable", None)
            if var is not None and id(var) in index:
                reached.add(index[id(var)])
            stack.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
        self._unused_marked = [i for i in range(len(self._params)) if i not in reached]
        self._unused_pending = bool(self._unused_marked)
        if not self._unused_marked and not self._warned_no_unused:
            self._warned_no_unused = True
            warnings.warn(
                "find_unused_parameters=True was specified in DDP constructor, but did not "
                "find any unused parameters in the forward pass. This flag results in an extra "
                "traversal of the autograd graph every iteration,  which can adversely affect "
                "performance. If your model indeed never has any unused parameters in the "
                "forward pass, consider turning this flag off. Note that this warning may be a "
                "false positive if your model has flow control causing later iterations to "
                "have unused parameters.", UserWarning, stacklevel=3)

    # ------------------------------------------------------------------ backward
    def _make_hook(self, i: int) -> Any:
        def hook(param: Tensor) -> None:
            self._on_grad_ready(i)
        return hook

    def _on_grad_ready(self, i: int) -> None:
        if not self._expect_reduction:
            return
        if self._ready[i]:
            raise RuntimeError(
                f"Expected to mark a variable ready only once. This error is caused by one of "
                f"the following reasons: 1) Use of a module parameter outside the `forward` "
                f"function. 2) Reused parameters in multiple reentrant backward passes. "
                f"Parameter at index {i} has been marked as ready twice. This means that "
                "multiple autograd engine hooks have fired for this particular parameter "
                "during this iteration.")
        if self._unused_pending:
            self._unused_pending = False
            for j in self._unused_marked:
                self._mark_ready(j, used=False)
        self._mark_ready(i, used=True)
        self._launch_ready_buckets()

    def _mark_ready(self, i: int, used: bool) -> None:
        self._ready[i] = True
        if used:
            self._used[i] = 1
        b, _ = self._where[i]
        self._buckets[b].pending -= 1

    def _launch_ready_buckets(self) -> None:
        MPI = _mpi.mpi()
        buckets = self._buckets
        started = False
        while self._next_bucket < len(buckets) and buckets[self._next_bucket].pending == 0:
            b = buckets[self._next_bucket]
            buf = b.buffer
            for i, off in zip(b.params, b.offsets):
                g = self._params[i].grad
                n = self._params[i].numel()
                if g is None:
                    buf[off:off + n] = 0
                else:
                    if g.is_sparse:          # sparse gradients are averaged densely
                        g = g.to_dense()
                    buf[off:off + n] = g.detach().numpy().reshape(-1)
            b.request = self.process_group._comm.Iallreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
            b.launched = True
            if self._next_bucket == 0:
                self._poller = _progress_thread(self.process_group._comm)
                if self._poller is not None:
                    self._poller.start()
            self._next_bucket += 1
            started = True
        inflight = [b.request for b in buckets[:self._next_bucket] if b.request is not None]
        if not started and inflight:
            MPI.Request.Testall(inflight)      # drive MPI's progress while backward runs
        if self._next_bucket == len(buckets):
            self._finalize()

    def _finalize(self) -> None:
        MPI = _mpi.mpi()
        pg = self.process_group
        requests = [b.request for b in self._buckets]
        used = None
        if self.find_unused_parameters:
            used = self._used.copy()
            requests.append(pg._comm.Iallreduce(MPI.IN_PLACE, used, op=MPI.MAX))
        # Measured for bench/ddp.py: the share of the bucket bytes already reduced when backward
        # ended (hidden behind it), and how long the end of backward waited.
        done = sum(b.buffer.nbytes for b in self._buckets if b.request.Test())
        self._last_hidden_bytes = (done, sum(b.buffer.nbytes for b in self._buckets))
        t0 = time.perf_counter()
        try:
            self._wait(requests, "ALLREDUCE")
        finally:
            if self._poller is not None:
                self._poller.stop()
                self._poller = None
        self._last_wait_seconds = time.perf_counter() - t0
        n = pg.size()
        with grad_mode.no_grad():
            for b in self._buckets:
                buf = b.buffer
                buf /= n
                for i, off in zip(b.params, b.offsets):
                    if used is not None and not used[i]:
                        continue        # unused on every rank: .grad stays as it was
                    p = self._params[i]
                    avg = buf[off:off + p.numel()].reshape(tuple(p.shape))
                    if p.grad is None or p.grad.is_sparse:
                        p.grad = from_numpy(avg.astype(p.detach().numpy().dtype))
                    else:
                        p.grad.detach().numpy()[...] = avg
                b.request = None
        self._expect_reduction = False
