"""Point to point: ``send``, ``recv``, ``isend``, ``irecv`` and ``batch_isend_irecv``."""

from __future__ import annotations

import hashlib
from typing import Any, List, Optional

import numpy as np

from ..tensor import Tensor
from . import _mpi
from ._checks import _arr, _begin, _start
from ._mpi import Work, watched
from .distributed_c10d import ProcessGroup, _default, _state, get_rank

__all__ = ["send", "recv", "isend", "irecv", "P2POp", "batch_isend_irecv"]

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


def recv(tensor: Tensor, src: Optional[int] = None, group: Any = None, tag: int = 0,
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
