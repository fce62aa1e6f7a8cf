"""What the collectives, point to point and object collectives share: argument checks, the
reduction table, the start of an MPI call and the fingerprint check.

Note [Collective signature check]
Before a collective moves data, the ranks compare a fingerprint of it (operation, sequence
number, dtype, shapes, root, reduce op and any argument error found locally) with one small
all-reduce. If the fingerprints differ, every rank raises the same RuntimeError naming what each
rank ran, instead of MPI pairing mismatched buffers (which corrupts data or hangs). A rank whose
arguments are invalid raises after the check too, so its peers never wait for it.
``DistributedDataParallel`` skips the check on its gradient buckets (their layout is verified
once at construction).
"""

from __future__ import annotations

import hashlib
import warnings
from typing import Any, Optional, Sequence

import numpy as np

from ..tensor import Tensor
from . import _mpi
from ._mpi import Work, watched
from .distributed_c10d import GroupMember, ProcessGroup, ReduceOp, _default, _group, _state

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
