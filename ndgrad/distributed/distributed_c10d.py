"""Process groups and collectives: ``torch.distributed``'s API on MPI.

A process group is an MPI communicator (a duplicate of ``COMM_WORLD`` for the default group, a
sub-communicator for ``new_group``). Collectives work in place on tensors, with torch's argument
conventions (``src``/``dst`` are global ranks), and return a :class:`Work` handle when
``async_op=True``. They are not differentiable (``ndgrad.distributed.nn.functional`` has the
differentiable ones).

Note [Collective signature check]
Before a collective moves data, the ranks compare a fingerprint of it (operation, sequence
number, dtype, shapes, root, reduce op and any argument error found locally) with one small
all-reduce. If the fingerprints differ, every rank raises the same RuntimeError naming what each
rank ran, instead of MPI pairing mismatched buffers (which corrupts data or hangs). A rank whose
arguments are invalid raises after the check too, so its peers never wait for it.
``DistributedDataParallel`` skips the check on its gradient buckets (their layout is verified
once at construction).

Example (a world of one process; under ``python -m ndgrad.distributed.run`` every rank runs
it):
    >>> import ndgrad
    >>> import ndgrad.distributed as dist
    >>> dist.init_process_group(backend="mpi")
    >>> t = ndgrad.arange(4.0)
    >>> dist.all_reduce(t, op=dist.ReduceOp.SUM)
    >>> t * dist.get_world_size() / dist.get_world_size()
    tensor([0., 1., 2., 3.])
    >>> work = dist.broadcast(t, src=0, async_op=True)
    >>> work.wait()
    True
    >>> dist.destroy_process_group()
"""

from __future__ import annotations

import datetime
import enum
import hashlib
import os
import pickle
import sys
import warnings
from typing import Any, List, Optional, Sequence

import numpy as np

from ..tensor import Tensor
from . import _mpi
from ._mpi import Work, watched

__all__ = [
    "Backend", "ReduceOp", "ProcessGroup", "GroupMember", "group", "Work", "P2POp",
    "is_available", "is_mpi_available", "is_gloo_available", "is_nccl_available",
    "is_initialized", "init_process_group", "destroy_process_group", "new_group",
    "get_rank", "get_world_size", "get_backend", "get_global_rank", "get_group_rank",
    "get_process_group_ranks", "all_reduce", "broadcast", "reduce", "all_gather",
    "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter",
    "all_to_all", "all_to_all_single", "barrier", "send", "recv", "isend", "irecv",
    "batch_isend_irecv", "broadcast_object_list", "all_gather_object", "gather_object",
    "scatter_object_list", "default_pg_timeout",
]

default_pg_timeout = datetime.timedelta(minutes=30)


class Backend(str):
    """A backend name; ndgrad has one, ``"mpi"``.

    >>> import ndgrad.distributed as dist
    >>> dist.Backend("MPI") == dist.Backend.MPI
    True
    """

    MPI = "mpi"
    UNDEFINED = "undefined"

    def __new__(cls, name: str) -> "Backend":
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: "
                             f"{type(name)}")
        value = name.lower()
        if value != "mpi":
            raise ValueError(f"ndgrad.distributed runs on MPI only: backend {name!r} is not "
                             "supported, use backend='mpi'")
        return super().__new__(cls, value)


class ReduceOp:
    """The reductions of ``all_reduce``, ``reduce`` and ``reduce_scatter``.

    >>> import ndgrad.distributed as dist
    >>> dist.ReduceOp.SUM, int(dist.ReduceOp.MAX)
    (<RedOpType.SUM: 0>, 4)
    """

    class RedOpType(enum.IntEnum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8
        UNUSED = 9

        def __str__(self) -> str:
            return f"RedOpType.{self.name}"

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM
    UNUSED = RedOpType.UNUSED


class ProcessGroup:
    """A set of ranks that run collectives together (an MPI communicator)."""

    def __init__(self, comm: Any, ranks: List[int], timeout: float) -> None:
        self._comm = comm
        self._ranks = ranks                      # global rank of each group rank
        self._index = {g: i for i, g in enumerate(ranks)}
        self._timeout = timeout
        self._seq = 0

    def rank(self) -> int:
        """This process's rank in the group."""
        return self._comm.Get_rank()

    def size(self) -> int:
        """The number of ranks in the group."""
        return len(self._ranks)

    def name(self) -> str:
        return "mpi"

    def __repr__(self) -> str:
        return f"<ndgrad.distributed.ProcessGroup mpi ranks={self._ranks}>"


class _WorldMeta(type):
    @property
    def WORLD(cls) -> Optional[ProcessGroup]:  # noqa: N802 - torch's name
        return _state.default_pg


class GroupMember(metaclass=_WorldMeta):
    """``GroupMember.WORLD`` is the default group; ``NON_GROUP_MEMBER`` is what ``new_group``
    returns on a rank outside the new group."""

    NON_GROUP_MEMBER = -100


class group(metaclass=_WorldMeta):  # noqa: N801 - torch's name
    """``group.WORLD`` is the default process group."""


class _State:
    def __init__(self) -> None:
        self.default_pg: Optional[ProcessGroup] = None
        self.groups: List[ProcessGroup] = []
        self.prev_excepthook = None


_state = _State()


# ----------------------------------------------------------------------------- setup
def is_available() -> bool:
    """Whether ``ndgrad.distributed`` can run (mpi4py is installed)."""
    return _mpi.available()


def is_mpi_available() -> bool:
    """Whether the MPI backend is available (mpi4py is installed)."""
    return _mpi.available()


def is_gloo_available() -> bool:
    """ndgrad has no Gloo backend."""
    return False


def is_nccl_available() -> bool:
    """ndgrad has no NCCL backend."""
    return False


def is_initialized() -> bool:
    """Whether the default process group exists.

    >>> import ndgrad.distributed as dist
    >>> dist.is_initialized()
    False
    """
    return _state.default_pg is not None


def _seconds(timeout: Any) -> float:
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got "
                    f"{type(timeout).__name__}")


def _excepthook(tp: Any, value: Any, tb: Any) -> None:
    """An uncaught error on one rank ends the whole job (the others would wait forever)."""
    prev = _state.prev_excepthook or sys.__excepthook__
    pg = _state.default_pg
    prev(tp, value, tb)
    if pg is not None and pg.size() > 1:
        _mpi.abort_job(f"[rank {pg.rank()}] ndgrad.distributed: uncaught {tp.__name__} on this "
                       "rank; aborting the job so the other ranks do not wait for it.")


def init_process_group(backend: Optional[str] = None, init_method: Optional[str] = None,
                       timeout: Optional[datetime.timedelta] = None, world_size: int = -1,
                       rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Create the default process group over every process MPI started.

    MPI assigns ranks; torchrun's ``RANK``/``WORLD_SIZE`` variables, when set (as
    ``python -m ndgrad.distributed.run`` sets them), must agree with it.
    """
    if _state.default_pg is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is not None:
        Backend(backend)
    seconds = _seconds(timeout)
    if world_size != -1 or rank != -1:
        warnings.warn(f"For MPI backend, world_size ({world_size}) and rank ({rank}) are "
                      "ignored since they are assigned by the MPI runtime.", stacklevel=2)
    MPI = _mpi.mpi()
    world = MPI.COMM_WORLD
    for var, mine in (("WORLD_SIZE", world.Get_size()), ("RANK", world.Get_rank())):
        env = os.environ.get(var)
        if env is not None and env.strip().lstrip("-").isdigit() and int(env) != mine:
            raise RuntimeError(
                f"init_process_group: the environment says {var}={env} but MPI started this "
                f"process as rank {world.Get_rank()} of {world.Get_size()}: launch the job "
                "with `python -m ndgrad.distributed.run --nproc-per-node N script.py` (or "
                "`mpiexec -n N python script.py`), not with torchrun")
    comm = world.Dup()
    pg = ProcessGroup(comm, list(range(world.Get_size())), seconds)
    _state.default_pg = pg
    _state.groups = [pg]
    _mpi.start_watchdog()
    if sys.excepthook is not _excepthook:
        _state.prev_excepthook = sys.excepthook
        sys.excepthook = _excepthook


def destroy_process_group(group: Optional[ProcessGroup] = None) -> None:
    """Free ``group``, or every group and the default one when ``group`` is None (MPI itself
    stays initialized until the process exits)."""
    if group is None or group is _state.default_pg:
        if _state.default_pg is None:
            raise ValueError("Default process group has not been initialized, please make "
                             "sure to call init_process_group.")
        for pg in _state.groups:
            pg._comm.Free()
        _state.groups = []
        _state.default_pg = None
        _mpi.stop_watchdog()
        if sys.excepthook is _excepthook:
            sys.excepthook = _state.prev_excepthook or sys.__excepthook__
        _state.prev_excepthook = None
        return
    if group == GroupMember.NON_GROUP_MEMBER:
        return
    if group not in _state.groups:
        raise ValueError("Invalid process group specified")
    _state.groups.remove(group)
    group._comm.Free()


def _default() -> ProcessGroup:
    if _state.default_pg is None:
        raise ValueError("Default process group has not been initialized, please make sure "
                         "to call init_process_group.")
    return _state.default_pg


def _group(group: Any) -> Any:
    """The ProcessGroup of a ``group=`` argument (or NON_GROUP_MEMBER)."""
    if group is None:
        return _default()
    _default()
    if group == GroupMember.NON_GROUP_MEMBER:
        return group
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, got {type(group).__name__}")
    if group not in _state.groups:
        raise ValueError("Invalid process group specified")
    return group


def new_group(ranks: Optional[Sequence[int]] = None, timeout: Optional[datetime.timedelta] = None,
              backend: Optional[str] = None, pg_options: Any = None,
              use_local_synchronization: bool = False, group_desc: Optional[str] = None,
              device_id: Any = None) -> Any:
    """A process group of the global ``ranks`` (every rank of the group calls it; ranks
    outside get ``GroupMember.NON_GROUP_MEMBER``)."""
    world = _default()
    if backend is not None:
        Backend(backend)
    n = world.size()
    members = sorted(range(n) if ranks is None else ranks)
    for r in members:
        if not isinstance(r, int) or r < 0 or r >= n:
            raise ValueError(f"Invalid rank {r}, rank should be in the interval [0, {n - 1}]")
    if len(set(members)) != len(members):
        raise ValueError(f"ranks contains duplicates: {members}")
    me = world.rank()
    seconds = _seconds(timeout) if timeout is not None else world._timeout
    if me not in members:
        return GroupMember.NON_GROUP_MEMBER
    mpi_group = world._comm.Get_group().Incl(members)
    with watched(seconds, lambda ms: f"[Rank {me}] new_group({members}) timed out after "
                                     f"{int(ms)} ms: a member rank did not call it; aborting"):
        comm = world._comm.Create_group(mpi_group)
    pg = ProcessGroup(comm, members, seconds)
    _state.groups.append(pg)
    return pg


def get_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (-1 outside it)."""
    pg = _group(group)
    if pg == GroupMember.NON_GROUP_MEMBER:
        return -1
    return pg.rank()


def get_world_size(group: Any = None) -> int:
    """The number of ranks in ``group`` (-1 outside it)."""
    pg = _group(group)
    if pg == GroupMember.NON_GROUP_MEMBER:
        return -1
    return pg.size()


def get_backend(group: Any = None) -> str:
    """The backend name, ``"mpi"``."""
    pg = _group(group)
    if pg == GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return Backend.MPI


def get_process_group_ranks(group: Any) -> List[int]:
    """The global ranks of ``group``, ordered by group rank."""
    pg = _group(group)
    return list(pg._ranks)


def get_global_rank(group: Any, group_rank: int) -> int:
    """The global rank of ``group_rank`` in ``group``."""
    pg = _group(group)
    if not 0 <= group_rank < pg.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
    return pg._ranks[group_rank]


def get_group_rank(group: Any, global_rank: int) -> int:
    """The rank in ``group`` of the process with global rank ``global_rank``."""
    pg = _group(group)
    if global_rank not in pg._index:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}")
    return pg._index[global_rank]


# ----------------------------------------------------------------------------- helpers
_OPS_NAMES = {ReduceOp.SUM: "SUM", ReduceOp.PRODUCT: "PROD", ReduceOp.MIN: "MIN",
              ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND", ReduceOp.BOR: "BOR",
              ReduceOp.BXOR: "BXOR", ReduceOp.AVG: "SUM"}
_BOOL_OPS = {ReduceOp.SUM: "MAX", ReduceOp.PRODUCT: "MIN", ReduceOp.MIN: "MIN",
             ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND", ReduceOp.BOR: "BOR",
             ReduceOp.BXOR: "BXOR"}


def _arr(t: Any, what: str) -> np.ndarray:
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: expected a Tensor, got {type(t).__name__}")
    if t.is_sparse:
        raise RuntimeError(f"{what}: sparse tensors are not supported by the MPI backend")
    return t.detach().numpy()


def _reduce_plan(op: Any, dt: np.dtype, name: str) -> Any:
    """(MPI op, working dtype) of a reduction, or raise torch's error for a bad pairing."""
    if isinstance(op, int) and not isinstance(op, ReduceOp.RedOpType) and 0 <= op <= 9:
        op = ReduceOp.RedOpType(op)
    if not isinstance(op, ReduceOp.RedOpType):
        raise TypeError(f"{name}: op must be a ReduceOp, got {type(op).__name__}")
    MPI = _mpi.mpi()
    kind = dt.kind
    if kind == "c" and op not in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT):
        raise ValueError(f"{name} does not support {op} on complex tensors")
    if op in (ReduceOp.PREMUL_SUM, ReduceOp.UNUSED):
        raise RuntimeError(f"Cannot use {op} with the MPI backend")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and kind not in "iub":
        raise RuntimeError(f"Cannot use {op} with non-integral dtype")
    if op == ReduceOp.AVG and kind not in "fc" and dt.name not in _mpi._UPCAST:
        raise RuntimeError(f"Cannot use {op} with integral or boolean dtype")
    if kind == "b":
        return getattr(MPI, _BOOL_OPS[op]), np.dtype(np.uint8)
    return getattr(MPI, _OPS_NAMES[op]), _mpi.reduce_dtype(dt)


def _plan(op: Any, dt: np.dtype, name: str) -> Any:
    """``_reduce_plan`` with its error returned (folded into the fingerprint check)."""
    try:
        mop, wdt = _reduce_plan(op, dt, name)
        return mop, wdt, None
    except TypeError:
        raise
    except (ValueError, RuntimeError) as e:
        return None, None, e


def _desc(op_type: str, seq: int, arrays: Sequence[np.ndarray], extra: str = "") -> str:
    shapes = ", ".join(str(list(a.shape)) for a in arrays)
    dts = ", ".join(sorted({a.dtype.name for a in arrays}))
    return (f"CollectiveFingerPrint(SequenceNumber={seq}, OpType={op_type}, "
            f"TensorShape={shapes}, TensorDtypes={dts}{extra})")


def _fingerprint_check(pg: ProcessGroup, op_type: str, desc: str,
                       local_error: Optional[BaseException]) -> None:
    """Note [Collective signature check]."""
    pg._seq += 1
    if pg.size() == 1:
        if local_error is not None:
            raise local_error
        return
    key = desc + ("" if local_error is None else f" error={type(local_error).__name__}")
    h = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=7).digest(), "little")
    MPI = _mpi.mpi()
    buf = np.array([h, -h], dtype=np.int64)
    me = pg.rank()
    with watched(pg._timeout, lambda ms: (
            f"[Rank {me}] Watchdog caught collective operation timeout: "
            f"{desc} ran for {int(ms)} milliseconds before timing out (Timeout(ms)="
            f"{int(pg._timeout * 1000)}). Another rank probably failed, exited or did not "
            "call this collective; aborting the job.")):
        pg._comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.MAX)
        if buf[0] != -buf[1]:
            descs = pg._comm.allgather(key)
    if buf[0] != -buf[1]:
        first = descs[0]
        other = next(i for i, d in enumerate(descs) if d != first)
        raise RuntimeError(
            f"Detected mismatch between collectives on ranks. Rank {pg._ranks[0]} is running "
            f"collective: {first}, but Rank {pg._ranks[other]} is running collective: "
            f"{descs[other]}. Collectives differ in the following aspects: "
            + "; ".join(f"rank {pg._ranks[i]}: {d}" for i, d in enumerate(descs)))
    if local_error is not None:
        raise local_error


def _begin(group: Any, name: str) -> Optional[ProcessGroup]:
    pg = _group(group)
    if pg == GroupMember.NON_GROUP_MEMBER:
        warnings.warn(f"Running {name} on global rank {_default().rank()} which does not "
                      "belong to the given group.", stacklevel=3)
        return None
    return pg


def _root(pg: ProcessGroup, glob: Optional[int], grp: Optional[int], name: str,
          role: str) -> Any:
    """The group rank of a root given as a global rank or a group rank (torch's rules)."""
    if glob is not None and grp is not None:
        raise ValueError(f"Can not specify both {role} and group_{role}")
    if grp is not None:
        if not 0 <= grp < pg.size():
            return RuntimeError(f"ProcessGroupMPI::{name}: invalid root rank: {grp}")
        return grp
    glob = 0 if glob is None else glob
    if pg is _state.default_pg:
        if not isinstance(glob, int) or not 0 <= glob < pg.size():
            return RuntimeError(f"ProcessGroupMPI::{name}: invalid root rank: {glob}")
        return glob
    if glob not in pg._index:
        return ValueError(f"Global rank {glob} is not part of group {pg}")
    return pg._index[glob]


def _finish_work(pg: ProcessGroup, op_type: str, requests: list, finish: Any, numel: int,
                 async_op: bool, result: Optional[list] = None) -> Optional[Work]:
    work = Work(requests, finish, op_type=op_type, seq=pg._seq, rank=_default().rank(),
                numel=numel, timeout=pg._timeout, result=result)
    if async_op:
        return work
    work.wait()
    return None


def _start(call: Any, name: str) -> Any:
    MPI = _mpi.mpi()
    try:
        return call()
    except MPI.Exception as e:
        raise _mpi.mpi_error(e, name) from None


# ----------------------------------------------------------------------------- collectives
def all_reduce(tensor: Tensor, op: Any = ReduceOp.SUM, group: Any = None,
               async_op: bool = False) -> Optional[Work]:
    """Reduce ``tensor`` over the ranks with ``op``, in place on every rank.

    >>> import ndgrad, ndgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> t = ndgrad.tensor([1.0, 5.0])
    >>> dist.all_reduce(t, op=dist.ReduceOp.MAX)       # every rank: the elementwise max
    >>> t
    tensor([1., 5.])
    >>> dist.destroy_process_group()
    """
    arr = _arr(tensor, "all_reduce")
    pg = _begin(group, "all_reduce")
    if pg is None:
        return None
    mop, wdt, err = _plan(op, arr.dtype, "all_reduce")
    _fingerprint_check(pg, "ALLREDUCE", _desc("ALLREDUCE", pg._seq + 1, [arr],
                                              f", Op={int(op)}"), err)
    return _all_reduce_array(pg, arr, mop, wdt, op == ReduceOp.AVG, async_op, [tensor])


def _all_reduce_array(pg: ProcessGroup, arr: np.ndarray, mop: Any, wdt: np.dtype, avg: bool,
                      async_op: bool, result: list) -> Optional[Work]:
    MPI = _mpi.mpi()
    direct = arr.flags.c_contiguous and wdt == arr.dtype
    if direct:
        buf = arr
    elif arr.dtype == np.bool_ and arr.flags.c_contiguous:
        buf = arr.view(np.uint8)
        direct = True
    else:
        buf = np.ascontiguousarray(arr, dtype=wdt)
    n = pg.size()

    def finish() -> None:
        if avg:
            np.divide(buf, n, out=buf, casting="unsafe")
        if not direct:
            arr[...] = buf.astype(arr.dtype, copy=False)

    req = _start(lambda: pg._comm.Iallreduce(MPI.IN_PLACE, buf, op=mop), "all_reduce")
    return _finish_work(pg, "ALLREDUCE", [req], finish, arr.size, async_op, result)


def broadcast(tensor: Tensor, src: Optional[int] = None, group: Any = None,
              async_op: bool = False, group_src: Optional[int] = None) -> Optional[Work]:
    """Copy ``tensor`` of rank ``src`` into ``tensor`` on every rank.

    >>> import ndgrad, ndgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> t = ndgrad.arange(3.0)
    >>> dist.broadcast(t, src=0, async_op=True).wait()
    True
    >>> dist.destroy_process_group()
    """
    arr = _arr(tensor, "broadcast")
    pg = _begin(group, "broadcast")
    if pg is None:
        return None
    root = _root(pg, src, group_src, "broadcast", "src")
    err = root if isinstance(root, BaseException) else None
    _fingerprint_check(pg, "BROADCAST", _desc("BROADCAST", pg._seq + 1, [arr],
                                              f", Root={root}"), err)
    buf = _mpi.contiguous(arr)

    def finish() -> None:
        if buf is not arr:
            arr[...] = buf

    req = _start(lambda: pg._comm.Ibcast(_mpi.as_bytes(buf), root=root), "broadcast")
    return _finish_work(pg, "BROADCAST", [req], finish, arr.size, async_op, [tensor])


def reduce(tensor: Tensor, dst: Optional[int] = None, op: Any = ReduceOp.SUM, group: Any = None,
           async_op: bool = False, group_dst: Optional[int] = None) -> Optional[Work]:
    """Reduce ``tensor`` over the ranks into ``tensor`` of rank ``dst`` (the other ranks'
    tensors are left unchanged)."""
    arr = _arr(tensor, "reduce")
    pg = _begin(group, "reduce")
    if pg is None:
        return None
    mop, wdt, err = _plan(op, arr.dtype, "reduce")
    root = _root(pg, dst, group_dst, "reduce", "dst")
    err = err or (root if isinstance(root, BaseException) else None)
    _fingerprint_check(pg, "REDUCE", _desc("REDUCE", pg._seq + 1, [arr],
                                           f", Op={int(op)}, Root={root}"), err)
    MPI = _mpi.mpi()
    if arr.dtype == np.bool_:
        buf = np.ascontiguousarray(arr).view(np.uint8)
    else:
        buf = np.ascontiguousarray(arr, dtype=wdt)
    me = pg.rank()
    if me == root:
        call = lambda: pg._comm.Ireduce(MPI.IN_PLACE, buf, op=mop, root=root)
    else:
        call = lambda: pg._comm.Ireduce(buf, None, op=mop, root=root)
    n = pg.size()

    def finish() -> None:
        if me != root:
            return
        if op == ReduceOp.AVG:
            np.divide(buf, n, out=buf, casting="unsafe")
        if buf is not arr:
            arr[...] = buf.astype(arr.dtype, copy=False) if arr.dtype != np.bool_ else buf != 0

    req = _start(call, "reduce")
    return _finish_work(pg, "REDUCE", [req], finish, arr.size, async_op, [tensor])


def _same_kind(outs: Sequence[Tensor], arr: np.ndarray, name: str, what: str) -> Any:
    for i, t in enumerate(outs):
        a = _arr(t, name)
        if a.dtype != arr.dtype:
            return RuntimeError(f"ProcessGroupMPI::{name}: invalid tensor type at index {i} "
                                f"(expected {arr.dtype.name}, got {a.dtype.name})")
        if a.size != arr.size:
            return RuntimeError(f"ProcessGroupMPI::{name}: invalid tensor size at index {i} "
                                f"(expected {arr.size} elements, got {a.size}) in {what}")
    return None


def all_gather(tensor_list: List[Tensor], tensor: Tensor, group: Any = None,
               async_op: bool = False) -> Optional[Work]:
    """Gather ``tensor`` of every rank into ``tensor_list`` (one entry per rank) on every
    rank.

    >>> import ndgrad, ndgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> out = [ndgrad.zeros(2) for _ in range(dist.get_world_size())]
    >>> dist.all_gather(out, ndgrad.ones(2) * dist.get_rank())
    >>> out[0]
    tensor([0., 0.])
    >>> dist.destroy_process_group()
    """
    arr = _arr(tensor, "all_gather")
    pg = _begin(group, "all_gather")
    if pg is None:
        return None
    n = pg.size()
    err = None
    if len(tensor_list) != n:
        err = RuntimeError(f"ProcessGroupMPI::allgather: invalid output tensor list at index 0 "
                           f"(expected length {n}, got {len(tensor_list)})")
    else:
        err = _same_kind(tensor_list, arr, "allgather", "the output tensor list")
    _fingerprint_check(pg, "ALLGATHER", _desc("ALLGATHER", pg._seq + 1, [arr]), err)
    send = _mpi.contiguous(arr)
    recv = np.empty((n,) + arr.shape, dtype=arr.dtype)
    outs = [t.detach().numpy() for t in tensor_list]

    def finish() -> None:
        for i, o in enumerate(outs):
            o[...] = recv[i].reshape(o.shape)

    req = _start(lambda: pg._comm.Iallgather(_mpi.as_bytes(send), _mpi.as_bytes(recv)),
                 "all_gather")
    return _finish_work(pg, "ALLGATHER", [req], finish, arr.size, async_op, list(tensor_list))


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: Any = None,
                           async_op: bool = False) -> Optional[Work]:
    """Gather ``input_tensor`` of every rank into ``output_tensor`` (concatenated along the
    first dimension, or stacked) on every rank.

    >>> import ndgrad, ndgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> out = ndgrad.zeros(2 * dist.get_world_size())
    >>> dist.all_gather_into_tensor(out, ndgrad.tensor([3.0, 4.0]))
    >>> out[:2]
    tensor([3., 4.])
    >>> dist.destroy_process_group()
    """
    out = _arr(output_tensor, "all_gather_into_tensor")
    arr = _arr(input_tensor, "all_gather_into_tensor")
    pg = _begin(group, "all_gather_into_tensor")
    if pg is None:
        return None
    n = pg.size()
    err = None
    if out.dtype != arr.dtype:
        err = RuntimeError("output tensor must have the same type as input tensor")
    elif out.size != n * arr.size:
        err = ValueError("output tensor size must be equal to world_size times input tensor "
                         "size")
    _fingerprint_check(pg, "_ALLGATHER_BASE", _desc("_ALLGATHER_BASE", pg._seq + 1, [arr]), err)
    send = _mpi.contiguous(arr)
    recv = _mpi.contiguous(out)

    def finish() -> None:
        if recv is not out:
            out[...] = recv

    req = _start(lambda: pg._comm.Iallgather(_mpi.as_bytes(send), _mpi.as_bytes(recv)),
                 "all_gather_into_tensor")
    return _finish_work(pg, "_ALLGATHER_BASE", [req], finish, arr.size, async_op,
                        [output_tensor])


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: Any = ReduceOp.SUM,
                          group: Any = None, async_op: bool = False) -> Optional[Work]:
    """Reduce ``input`` over the ranks and give rank ``i`` the ``i``-th chunk (along the first
    dimension) in ``output``.

    >>> import ndgrad, ndgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> n = dist.get_world_size()
    >>> out = ndgrad.zeros(2)
    >>> dist.reduce_scatter_tensor(out, ndgrad.arange(2.0 * n))
    >>> out                  # on rank r of n: n * [2r, 2r + 1]
    tensor([0., 1.])
    >>> dist.destroy_process_group()
    """
    out = _arr(output, "reduce_scatter_tensor")
    arr = _arr(input, "reduce_scatter_tensor")
    pg = _begin(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    n = pg.size()
    mop, wdt, err = _plan(op, arr.dtype, "reduce_scatter_tensor")
    if err is not None:
        pass
    elif out.dtype != arr.dtype:
        err = RuntimeError("input tensor must be the same type as the output tensor.")
    elif arr.size != n * out.size:
        err = ValueError("input tensor must be the same size as output size times world size")
    _fingerprint_check(pg, "_REDUCE_SCATTER_BASE", _desc(
        "_REDUCE_SCATTER_BASE", pg._seq + 1, [arr, out], f", Op={int(op)}"), err)
    return _reduce_scatter_arrays(pg, out, np.ascontiguousarray(arr), mop, wdt,
                                  op == ReduceOp.AVG, async_op, [output])


def _reduce_scatter_arrays(pg: ProcessGroup, out: np.ndarray, arr: np.ndarray, mop: Any,
                           wdt: np.dtype, avg: bool, async_op: bool,
                           result: list) -> Optional[Work]:
    if arr.dtype == np.bool_:
        send = arr.view(np.uint8)
    else:
        send = arr.astype(wdt, copy=False)
    recv = np.empty(out.size, dtype=send.dtype)
    n = pg.size()

    def finish() -> None:
        if avg:
            np.divide(recv, n, out=recv, casting="unsafe")
        vals = recv != 0 if out.dtype == np.bool_ else recv.astype(out.dtype, copy=False)
        out[...] = vals.reshape(out.shape)

    req = _start(lambda: pg._comm.Ireduce_scatter_block(send.reshape(-1), recv, op=mop),
                 "reduce_scatter")
    return _finish_work(pg, "REDUCE_SCATTER", [req], finish, out.size, async_op, result)


def reduce_scatter(output: Tensor, input_list: List[Tensor], op: Any = ReduceOp.SUM,
                   group: Any = None, async_op: bool = False) -> Optional[Work]:
    """Reduce ``input_list`` (one tensor per rank) over the ranks; rank ``i`` receives the
    reduced ``input_list[i]`` in ``output``."""
    out = _arr(output, "reduce_scatter")
    pg = _begin(group, "reduce_scatter")
    if pg is None:
        return None
    n = pg.size()
    mop, wdt, err = _plan(op, out.dtype, "reduce_scatter")
    if err is not None:
        pass
    elif len(input_list) != n:
        err = RuntimeError(f"ProcessGroupMPI::reduce_scatter: invalid input tensor list "
                           f"(expected length {n}, got {len(input_list)})")
    else:
        err = _same_kind(input_list, out, "reduce_scatter", "the input tensor list")
    _fingerprint_check(pg, "REDUCE_SCATTER", _desc("REDUCE_SCATTER", pg._seq + 1, [out],
                                                   f", Op={int(op)}"), err)
    arr = np.concatenate([_arr(t, "reduce_scatter").reshape(-1) for t in input_list])
    return _reduce_scatter_arrays(pg, out, arr, mop, wdt, op == ReduceOp.AVG, async_op,
                                  [output])


def gather(tensor: Tensor, gather_list: Optional[List[Tensor]] = None, dst: Optional[int] = None,
           group: Any = None, async_op: bool = False,
           group_dst: Optional[int] = None) -> Optional[Work]:
    """Gather ``tensor`` of every rank into ``gather_list`` on rank ``dst``.

    >>> import ndgrad, ndgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> rank, n = dist.get_rank(), dist.get_world_size()
    >>> got = [ndgrad.zeros(1) for _ in range(n)] if rank == 0 else None
    >>> dist.gather(ndgrad.tensor([float(rank)]), got, dst=0)
    >>> got[0] if rank == 0 else ndgrad.tensor([0.0])
    tensor([0.])
    >>> dist.destroy_process_group()
    """
    arr = _arr(tensor, "gather")
    pg = _begin(group, "gather")
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "gather", "dst")
    err = root if isinstance(root, BaseException) else None
    me, n = pg.rank(), pg.size()
    if err is None:
        if me == root:
            if not gather_list:
                err = ValueError("Argument ``gather_list`` must be specified on destination "
                                 "rank.")
            elif len(gather_list) != n:
                err = RuntimeError(f"ProcessGroupMPI::gather: Incorrect output list size "
                                   f"{len(gather_list)}. Output list size should be {n}, same "
                                   "as size of the process group.")
            else:
                err = _same_kind(gather_list, arr, "gather", "the gather list")
        elif gather_list:
            err = ValueError("Argument ``gather_list`` must NOT be specified on "
                             "non-destination ranks.")
    _fingerprint_check(pg, "GATHER", _desc("GATHER", pg._seq + 1, [arr], f", Root={root}"), err)
    send = _mpi.contiguous(arr)
    recv = np.empty((n,) + arr.shape, dtype=arr.dtype) if me == root else None

    def finish() -> None:
        if me == root:
            for i, t in enumerate(gather_list):
                o = t.detach().numpy()
                o[...] = recv[i].reshape(o.shape)

    req = _start(lambda: pg._comm.Igather(
        _mpi.as_bytes(send), None if recv is None else _mpi.as_bytes(recv), root=root), "gather")
    return _finish_work(pg, "GATHER", [req], finish, arr.size, async_op,
                        list(gather_list or []))


def scatter(tensor: Tensor, scatter_list: Optional[List[Tensor]] = None,
            src: Optional[int] = None, group: Any = None, async_op: bool = False,
            group_src: Optional[int] = None) -> Optional[Work]:
    """Give rank ``i`` the tensor ``scatter_list[i]`` of rank ``src``, in ``tensor``.

    >>> import ndgrad, ndgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> rank, n = dist.get_rank(), dist.get_world_size()
    >>> t = ndgrad.zeros(1)
    >>> dist.scatter(t, [ndgrad.tensor([float(i)]) for i in range(n)] if rank == 0 else None)
    >>> t == rank
    tensor([True])
    >>> dist.destroy_process_group()
    """
    arr = _arr(tensor, "scatter")
    pg = _begin(group, "scatter")
    if pg is None:
        return None
    root = _root(pg, src, group_src, "scatter", "src")
    err = root if isinstance(root, BaseException) else None
    me, n = pg.rank(), pg.size()
    if err is None:
        if me == root:
            if not scatter_list:
                err = ValueError("Argument ``scatter_list`` must be specified on source rank.")
            elif len(scatter_list) != n:
                err = RuntimeError(f"ProcessGroupMPI::scatter: Incorrect input list size "
                                   f"{len(scatter_list)}. Input list size should be {n}, same "
                                   "as size of the process group.")
            else:
                err = _same_kind(scatter_list, arr, "scatter", "the scatter list")
        elif scatter_list:
            err = ValueError("Argument ``scatter_list`` must NOT be specified on non-source "
                             "ranks.")
    _fingerprint_check(pg, "SCATTER", _desc("SCATTER", pg._seq + 1, [arr], f", Root={root}"),
                       err)
    send = None
    if me == root:
        send = np.stack([np.ascontiguousarray(t.detach().numpy()).reshape(-1)
                         for t in scatter_list])
    recv = _mpi.contiguous(arr)

    def finish() -> None:
        if recv is not arr:
            arr[...] = recv

    req = _start(lambda: pg._comm.Iscatter(None if send is None else _mpi.as_bytes(send),
                                           _mpi.as_bytes(recv), root=root), "scatter")
    return _finish_work(pg, "SCATTER", [req], finish, arr.size, async_op, [tensor])


def _alltoallv(pg: ProcessGroup, sends: List[np.ndarray], outs: List[np.ndarray],
               op_type: str, async_op: bool, result: list) -> Optional[Work]:
    """Exchange ``sends[j]`` to rank j into ``outs[i]`` from rank i, after checking that the
    byte counts agree on both sides of every pair (one all-gather of the counts)."""
    n = pg.size()
    scounts = np.array([s.nbytes for s in sends], dtype=np.int64)
    rcounts = np.array([o.nbytes for o in outs], dtype=np.int64)
    me = pg.rank()
    allcounts = np.empty((n, n), dtype=np.int64)
    with watched(pg._timeout, lambda ms: f"[Rank {me}] {op_type} timed out after {int(ms)} ms; "
                                         "aborting"):
        pg._comm.Allgather(scounts, allcounts)
    # rank i sends allcounts[i, j] bytes to rank j; rank j expects rcounts[i] from i.
    expected = allcounts[:, me]
    bad = np.nonzero(expected != rcounts)[0]
    ok = np.array([1 if bad.size == 0 else 0], dtype=np.int64)
    MPI = _mpi.mpi()
    with watched(pg._timeout, lambda ms: f"[Rank {me}] {op_type} timed out after {int(ms)} ms; "
                                         "aborting"):
        pg._comm.Allreduce(MPI.IN_PLACE, ok, op=MPI.MIN)
    if not ok[0]:
        if bad.size:
            i = int(bad[0])
            raise RuntimeError(f"{op_type.lower()}: rank {pg._ranks[i]} sends {expected[i]} "
                               f"bytes to rank {pg._ranks[me]}, whose output for it holds "
                               f"{rcounts[i]} bytes")
        raise RuntimeError(f"{op_type.lower()}: the ranks' input and output sizes do not "
                           "match (see the error on the other ranks)")
    send = np.concatenate([_mpi.as_bytes(np.ascontiguousarray(s)) for s in sends]) \
        if sends else np.empty(0, np.uint8)
    recv = np.empty(int(rcounts.sum()), dtype=np.uint8)
    sdispl = np.concatenate([[0], np.cumsum(scounts)[:-1]])
    rdispl = np.concatenate([[0], np.cumsum(rcounts)[:-1]])

    def finish() -> None:
        for o, off, c in zip(outs, rdispl, rcounts):
            o[...] = recv[off:off + c].view(o.dtype).reshape(o.shape)

    req = _start(lambda: pg._comm.Ialltoallv([send, (scounts, sdispl), MPI.BYTE],
                                             [recv, (rcounts, rdispl), MPI.BYTE]), op_type)
    return _finish_work(pg, op_type.upper(), [req], finish, int(scounts.sum()), async_op, result)


def all_to_all(output_tensor_list: List[Tensor], input_tensor_list: List[Tensor],
               group: Any = None, async_op: bool = False) -> Optional[Work]:
    """Rank ``i`` sends ``input_tensor_list[j]`` to rank ``j``, which receives it in its
    ``output_tensor_list[i]``."""
    ins = [_arr(t, "all_to_all") for t in input_tensor_list]
    outs = [_arr(t, "all_to_all") for t in output_tensor_list]
    pg = _begin(group, "all_to_all")
    if pg is None:
        return None
    n = pg.size()
    err = None
    if len(ins) != n or len(outs) != n:
        err = RuntimeError(f"ProcessGroupMPI::alltoall: the input and output tensor lists must "
                           f"have {n} tensors each (got {len(ins)} and {len(outs)})")
    elif len({a.dtype for a in ins + outs}) > 1:
        err = RuntimeError("ProcessGroupMPI::alltoall: tensors must all have the same type")
    dt = ins[0].dtype.name if ins else ""
    _fingerprint_check(pg, "ALLTOALL", f"CollectiveFingerPrint(SequenceNumber={pg._seq + 1}, "
                                       f"OpType=ALLTOALL, TensorDtypes={dt})", err)
    return _alltoallv(pg, ins, outs, "all_to_all", async_op, list(output_tensor_list))


def all_to_all_single(output: Tensor, input: Tensor,
                      output_split_sizes: Optional[List[int]] = None,
                      input_split_sizes: Optional[List[int]] = None, group: Any = None,
                      async_op: bool = False) -> Optional[Work]:
    """``all_to_all`` on one tensor split along its first dimension (equal chunks unless
    ``input_split_sizes``/``output_split_sizes`` are given)."""
    out = _arr(output, "all_to_all_single")
    arr = _arr(input, "all_to_all_single")
    pg = _begin(group, "all_to_all_single")
    if pg is None:
        return None
    n = pg.size()
    err = None
    if out.dtype != arr.dtype:
        err = RuntimeError("all_to_all_single: input and output must have the same dtype")

    def splits(a: np.ndarray, sizes: Optional[List[int]], what: str) -> Any:
        rows = a.shape[0] if a.ndim else 1
        if sizes is None or len(sizes) == 0:
            if rows % n:
                return RuntimeError(f"Tensor's dim 0 does not divide equally across group "
                                    f"size ({what})")
            sizes = [rows // n] * n
        if len(sizes) != n or sum(sizes) != rows:
            return RuntimeError(f"Split sizes doesn't match total dim 0 size ({what})")
        return list(sizes)

    sin, sout = splits(arr, input_split_sizes, "input"), splits(out, output_split_sizes,
                                                                 "output")
    for s in (sin, sout):
        if err is None and isinstance(s, BaseException):
            err = s
    _fingerprint_check(pg, "ALLTOALL_BASE", f"CollectiveFingerPrint(SequenceNumber="
                       f"{pg._seq + 1}, OpType=ALLTOALL_BASE, TensorDtypes={arr.dtype.name})",
                       err)
    ca = np.ascontiguousarray(arr)
    recv = np.empty(out.shape, dtype=out.dtype)
    ins = np.split(ca, np.cumsum(sin)[:-1]) if ca.ndim else [ca]
    outs = np.split(recv, np.cumsum(sout)[:-1]) if recv.ndim else [recv]
    work = _alltoallv(pg, ins, outs, "all_to_all_single", True, [output])
    inner = work._finish

    def finish() -> None:
        inner()
        out[...] = recv

    work._finish = finish
    if async_op:
        return work
    work.wait()
    return None


def barrier(group: Any = None, async_op: bool = False,
            device_ids: Optional[List[int]] = None) -> Optional[Work]:
    """Wait until every rank of ``group`` has reached the barrier.

    >>> import ndgrad, ndgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> dist.barrier()
    >>> dist.destroy_process_group()
    """
    pg = _begin(group, "barrier")
    if pg is None:
        return None
    _fingerprint_check(pg, "BARRIER", f"CollectiveFingerPrint(SequenceNumber={pg._seq + 1}, "
                                      "OpType=BARRIER)", None)
    req = _start(lambda: pg._comm.Ibarrier(), "barrier")
    return _finish_work(pg, "BARRIER", [req], None, 0, async_op)


# ----------------------------------------------------------------------------- point to point
# Note [Point-to-point messages]: a message is a 16-byte header (a dtype code and the byte
# count) followed by the tensor's bytes, received into a scratch buffer and copied into the
# destination only after the header matched, so a mismatched send/recv pair raises instead of
# leaving wrong bytes in the tensor.
_HEADER = 16


def _dtype_code(dt: np.dtype) -> int:
    return int.from_bytes(hashlib.blake2b(dt.name.encode(), digest_size=7).digest(), "little")


def _peer(pg: ProcessGroup, glob: Optional[int], grp: Optional[int], role: str,
          allow_any: bool) -> int:
    if glob is not None and grp is not None:
        raise ValueError(f"Can not specify both {role} and group_{role}")
    if grp is not None:
        if not 0 <= grp < pg.size():
            raise ValueError(f"Group rank {grp} is not part of group {pg}")
        return grp
    if glob is None:
        if allow_any:
            return _mpi.mpi().ANY_SOURCE
        raise ValueError(f"Must specify either {role} or group_{role}")
    if glob not in pg._index:
        if pg is _state.default_pg:
            raise ValueError(f"Invalid {'destination' if role == 'dst' else 'source'} rank: "
                             f"should be in [0, {pg.size() - 1}], got {glob}")
        raise ValueError(f"Global rank {glob} is not part of group {pg}")
    return pg._index[glob]


def isend(tensor: Tensor, dst: Optional[int] = None, group: Any = None, tag: int = 0,
          group_dst: Optional[int] = None) -> Optional[Work]:
    """Start sending ``tensor`` to rank ``dst``; returns a Work handle.

    >>> import ndgrad, ndgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> me = dist.get_rank()
    >>> out = ndgrad.zeros(2)
    >>> recv = dist.irecv(out, src=me)                  # isend/irecv may target this rank
    >>> dist.isend(ndgrad.tensor([1.0, 2.0]), dst=me).wait() and recv.wait()
    True
    >>> out
    tensor([1., 2.])
    >>> dist.destroy_process_group()
    """
    arr = _arr(tensor, "isend")
    pg = _begin(group, "isend")
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "dst", False)
    msg = np.empty(_HEADER + arr.nbytes, dtype=np.uint8)
    msg[:_HEADER].view(np.int64)[:] = (_dtype_code(arr.dtype), arr.nbytes)
    msg[_HEADER:] = _mpi.as_bytes(np.ascontiguousarray(arr))
    req = _start(lambda: pg._comm.Isend(msg, dest=peer, tag=tag), "isend")
    return Work([req], None, op_type="SEND", rank=_default().rank(), numel=arr.size,
                timeout=pg._timeout, result=[tensor])


def irecv(tensor: Tensor, src: Optional[int] = None, group: Any = None, tag: int = 0,
          group_src: Optional[int] = None) -> Optional[Work]:
    """Start receiving into ``tensor`` from rank ``src`` (any rank when None)."""
    arr = _arr(tensor, "irecv")
    pg = _begin(group, "irecv")
    if pg is None:
        return None
    peer = _peer(pg, src, group_src, "src", True)
    MPI = _mpi.mpi()
    msg = np.empty(_HEADER + arr.nbytes, dtype=np.uint8)
    status = MPI.Status()
    code = _dtype_code(arr.dtype)

    def finish() -> None:
        got = status.Get_count(MPI.BYTE)
        sender = pg._ranks[status.Get_source()]
        code_in, nbytes = msg[:_HEADER].view(np.int64)
        if got != msg.nbytes or code_in != code:
            raise RuntimeError(
                f"recv: the message from rank {sender} (tag {tag}) does not match the tensor "
                f"to receive into: it holds {got - _HEADER} bytes"
                f"{' of another dtype' if code_in != code else ''}, the tensor is "
                f"{list(arr.shape)} {arr.dtype.name} ({arr.nbytes} bytes)")
        arr[...] = msg[_HEADER:].view(arr.dtype).reshape(arr.shape)

    req = _start(lambda: pg._comm.Irecv(msg, source=peer, tag=tag), "irecv")
    w = Work([req], finish, op_type="RECV", rank=_default().rank(), numel=arr.size,
             timeout=pg._timeout, result=[tensor], status=status)
    w._pg = pg
    return w


def _wait_p2p(w: Work, what: str) -> None:
    MPI = _mpi.mpi()
    try:
        with watched(w._timeout, w._describe):
            MPI.Request.Waitall(w._requests, [w._status] if w._status is not None else None)
        w._complete()
    except MPI.Exception as e:
        w._done = True
        text = e.Get_error_string().strip()
        w._exception = RuntimeError(
            f"{what}: the message is larger than the tensor to receive into (MPI: {text})")
    if w._exception is not None:
        raise w._exception


def send(tensor: Tensor, dst: Optional[int] = None, group: Any = None, tag: int = 0,
         group_dst: Optional[int] = None) -> None:
    """Send ``tensor`` to rank ``dst`` (returns once the message is out)."""
    if dst is not None and group_dst is None and dst == get_rank():
        raise ValueError("Invalid destination rank: destination rank should not be the same "
                         "as the rank of the current process.")
    w = isend(tensor, dst, group, tag, group_dst)
    if w is not None:
        _wait_p2p(w, "send")


def recv(tensor: Optional[Tensor], src: Optional[int] = None, group: Any = None, tag: int = 0,
         group_src: Optional[int] = None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender's
    global rank."""
    w = irecv(tensor, src, group, tag, group_src)
    if w is None:
        return -1
    _wait_p2p(w, "recv")
    return w._pg._ranks[w._status.Get_source()]


class P2POp:
    """One point-to-point operation for ``batch_isend_irecv``."""

    def __init__(self, op: Any, tensor: Tensor, peer: Optional[int] = None, group: Any = None,
                 tag: int = 0, group_peer: Optional[int] = None) -> None:
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``torch.distributed.isend`` or ``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list: List[P2POp]) -> List[Work]:
    """Start every operation of ``p2p_op_list``; returns their Work handles."""
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]


# ----------------------------------------------------------------------------- objects
def _objects(pg: ProcessGroup, op_type: str, call: Any) -> Any:
    me = pg.rank()
    with watched(pg._timeout, lambda ms: (
            f"[Rank {me}] Watchdog caught collective operation timeout: {op_type} ran for "
            f"{int(ms)} milliseconds before timing out; aborting the job.")):
        return call()


def broadcast_object_list(object_list: List[Any], src: Optional[int] = None, group: Any = None,
                          device: Any = None, group_src: Optional[int] = None) -> None:
    """Replace ``object_list`` on every rank by rank ``src``'s (picklable objects).

    >>> import ndgrad, ndgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> objs = [{"lr": 0.1}, "config"] if dist.get_rank() == 0 else [None, None]
    >>> dist.broadcast_object_list(objs, src=0)
    >>> objs
    [{'lr': 0.1}, 'config']
    >>> dist.destroy_process_group()
    """
    pg = _begin(group, "broadcast_object_list")
    if pg is None:
        return
    root = _root(pg, src, group_src, "broadcast", "src")
    err = root if isinstance(root, BaseException) else None
    _fingerprint_check(pg, "BROADCAST_OBJECT", f"CollectiveFingerPrint(SequenceNumber="
                       f"{pg._seq + 1}, OpType=BROADCAST_OBJECT, Length={len(object_list)}, "
                       f"Root={root})", err)
    data = pickle.dumps(list(object_list)) if pg.rank() == root else None
    got = _objects(pg, "BROADCAST_OBJECT", lambda: pg._comm.bcast(data, root=root))
    if pg.rank() != root:
        object_list[:] = pickle.loads(got)


def all_gather_object(object_list: List[Any], obj: Any, group: Any = None) -> None:
    """Fill ``object_list`` (one entry per rank) with every rank's ``obj``.

    >>> import ndgrad, ndgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> everyone = [None] * dist.get_world_size()
    >>> dist.all_gather_object(everyone, ("rank", dist.get_rank()))
    >>> everyone[0]
    ('rank', 0)
    >>> dist.destroy_process_group()
    """
    pg = _begin(group, "all_gather_object")
    if pg is None:
        return
    _fingerprint_check(pg, "ALLGATHER_OBJECT", f"CollectiveFingerPrint(SequenceNumber="
                       f"{pg._seq + 1}, OpType=ALLGATHER_OBJECT)", None)
    data = pickle.dumps(obj)
    got = _objects(pg, "ALLGATHER_OBJECT", lambda: pg._comm.allgather(data))
    for i, d in enumerate(got):
        object_list[i] = pickle.loads(d)


def gather_object(obj: Any, object_gather_list: Optional[List[Any]] = None,
                  dst: Optional[int] = None, group: Any = None,
                  group_dst: Optional[int] = None) -> None:
    """Gather every rank's ``obj`` into ``object_gather_list`` on rank ``dst``."""
    pg = _begin(group, "gather_object")
    if pg is None:
        return
    root = _root(pg, dst, group_dst, "gather", "dst")
    err = root if isinstance(root, BaseException) else None
    if err is None and pg.rank() == root and object_gather_list is None:
        err = ValueError("Argument ``object_gather_list`` must be specified on destination "
                         "rank.")
    _fingerprint_check(pg, "GATHER_OBJECT", f"CollectiveFingerPrint(SequenceNumber="
                       f"{pg._seq + 1}, OpType=GATHER_OBJECT, Root={root})", err)
    got = _objects(pg, "GATHER_OBJECT", lambda: pg._comm.gather(pickle.dumps(obj), root=root))
    if pg.rank() == root:
        for i, d in enumerate(got):
            object_gather_list[i] = pickle.loads(d)


def scatter_object_list(scatter_object_output_list: List[Any],
                        scatter_object_input_list: Optional[List[Any]] = None,
                        src: Optional[int] = None, group: Any = None,
                        group_src: Optional[int] = None) -> None:
    """Give rank ``i`` the object ``scatter_object_input_list[i]`` of rank ``src``, as
    ``scatter_object_output_list[0]``."""
    pg = _begin(group, "scatter_object_list")
    if pg is None:
        return
    root = _root(pg, src, group_src, "scatter", "src")
    err = root if isinstance(root, BaseException) else None
    if err is None and (not isinstance(scatter_object_output_list, list)
                        or len(scatter_object_output_list) < 1):
        err = ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    if err is None and pg.rank() == root and (scatter_object_input_list is None
                                              or len(scatter_object_input_list) != pg.size()):
        err = ValueError("scatter_object_input_list must hold one object per rank on the "
                         "source rank")
    _fingerprint_check(pg, "SCATTER_OBJECT", f"CollectiveFingerPrint(SequenceNumber="
                       f"{pg._seq + 1}, OpType=SCATTER_OBJECT, Root={root})", err)
    data = [pickle.dumps(o) for o in scatter_object_input_list] if pg.rank() == root else None
    got = _objects(pg, "SCATTER_OBJECT", lambda: pg._comm.scatter(data, root=root))
    scatter_object_output_list[0] = pickle.loads(got)
