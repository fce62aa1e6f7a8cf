"""The collectives on tensors (``all_reduce``, ``broadcast``, ``reduce``, ``all_gather``,
``all_gather_into_tensor``, ``reduce_scatter``, ``reduce_scatter_tensor``, ``gather``,
``scatter``, ``all_to_all``, ``all_to_all_single``, ``barrier``): in place, with torch's
argument conventions (``src``/``dst`` are global ranks), a Work handle with ``async_op=True``;
each checked first by Note [Collective signature check] (``_checks.py``)."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from ..tensor import Tensor
from . import _mpi
from ._checks import _arr, _begin, _desc, _fingerprint_check, _finish_work, _plan, _root, _start
from ._mpi import Work, watched
from .distributed_c10d import ProcessGroup, ReduceOp

__all__ = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
           "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "all_to_all",
           "all_to_all_single", "barrier"]


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
    err: Optional[BaseException] = None
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
    err: Optional[BaseException] = None
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
            assert gather_list is not None and recv is not None
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
                         for t in scatter_list or []])
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
    err: Optional[BaseException] = None
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
    err: Optional[BaseException] = None
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
    assert work is not None and work._finish is not None
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
