"""Object collectives: ``broadcast_object_list``, ``all_gather_object``, ``gather_object`` and
``scatter_object_list`` (picklable Python objects, pickled by ndgrad and moved by mpi4py)."""

from __future__ import annotations

import pickle
from typing import Any, List, Optional

from ._checks import _begin, _fingerprint_check, _root
from ._mpi import watched
from .distributed_c10d import ProcessGroup

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list"]


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
        assert object_gather_list is not None
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
    data = [pickle.dumps(o) for o in (scatter_object_input_list or [])] \
        if pg.rank() == root else None
    got = _objects(pg, "SCATTER_OBJECT", lambda: pg._comm.scatter(data, root=root))
    scatter_object_output_list[0] = pickle.loads(got)
