"""Process groups and collectives: ``torch.distributed``'s API on MPI.

A process group is an MPI communicator (a duplicate of ``COMM_WORLD`` for the default group, a
sub-communicator for ``new_group``). Collectives work in place on tensors, with torch's argument
conventions (``src``/``dst`` are global ranks), and return a :class:`Work` handle when
``async_op=True``. They are not differentiable (``ndgrad.distributed.nn.functional`` has the
differentiable ones).

The tensor collectives are in ``collectives.py``, point to point in ``point_to_point.py``,
the object collectives in ``object_collectives.py``; what they share (argument checks and
Note [Collective signature check]) in ``_checks.py``.

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
import os
import sys
import warnings
from typing import Any, List, Optional, Sequence

from . import _mpi
from ._mpi import Work, watched

__all__ = [
    "Backend", "ReduceOp", "ProcessGroup", "GroupMember", "group", "Work",
    "is_available", "is_mpi_available", "is_gloo_available", "is_nccl_available",
    "is_initialized", "init_process_group", "destroy_process_group", "new_group",
    "get_rank", "get_world_size", "get_backend", "get_global_rank", "get_group_rank",
    "get_process_group_ranks", "default_pg_timeout",
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
        self.prev_excepthook: Any = None


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
