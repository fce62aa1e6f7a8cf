"""Tensor data in shared memory, and how it crosses process boundaries (``share_memory_``,
``is_shared``, the reducers ``ndgrad.multiprocessing`` relies on).

Note [Shared memory]
``t.share_memory_()`` copies the tensor's storage (its data's root array, Note [Storage] in
ops/shape.py) into a block of anonymous shared memory and points the tensor (and the bases it
is a view of) at the copy, with the same offsets and strides. A block is an ``mmap`` over a file
descriptor with no name: ``memfd_create`` on Linux, an unlinked temporary file elsewhere. So
  * a child created by ``fork`` inherits the mapping: parent and child write the same memory;
  * a tensor pickled by ``multiprocessing`` (process arguments under ``spawn``, queues, pipes,
    pools) travels as a handle: the descriptor (passed by ``multiprocessing.reduction.DupFd``,
    through the spawned child's inherited descriptors or the sender's resource sharer) plus the
    array's layout; the receiver maps the same block (once per process: blocks are cached by
    device and inode) and builds its tensor over it;
  * nothing is ever named in ``/dev/shm``: the kernel frees a block when the last process
    holding its descriptor or mapping lets go, however the processes end. In a process a block
    lives as long as an array over it (the mmap closes its descriptor when collected).
Only tensors already in shared memory travel by handle (torch also moves a plain tensor put on
a queue into shared memory; ndgrad pickles its bytes). The reducer is registered on NumPy arrays
in ``ForkingPickler`` (so Tensors, Parameters and views all take it through their ``_data``);
an array not in a block pickles as before. Views of the storage created before
``share_memory_`` keep the old memory (torch moves the storage under all of them).
"""

from __future__ import annotations

import mmap
import os
import tempfile
import threading
import weakref
from typing import Any, Optional

import numpy as np

from .tensor import Tensor, _ptr, _storage_root

__all__ = ["share_memory_", "is_shared", "register_reducers"]

_LOCK = threading.Lock()
_blocks: "weakref.WeakValueDictionary[tuple, _Block]" = weakref.WeakValueDictionary()
_registered = False


class _Block(mmap.mmap):
    """A shared mapping that owns its file descriptor (closed when the mapping is collected)."""

    fd: int
    key: tuple


def _adopt(fd: int, size: int) -> _Block:
    """The block over ``fd`` in this process (mapped once per process; ``fd`` is kept by the
    block or closed)."""
    st = os.fstat(fd)
    key = (st.st_dev, st.st_ino)
    with _LOCK:
        block = _blocks.get(key)
        if block is not None and not block.closed:
            os.close(fd)
            return block
        block = _Block(fd, size)
        block.fd = fd
        block.key = key
        weakref.finalize(block, os.close, fd)
        _blocks[key] = block
        return block


def _new_block(nbytes: int) -> _Block:
    size = max(int(nbytes), 1)
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("ndgrad-shared", os.MFD_CLOEXEC)
    else:
        f = tempfile.TemporaryFile(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        fd = os.dup(f.fileno())
        f.close()
    os.ftruncate(fd, size)
    return _adopt(fd, size)


def _block_of(arr: np.ndarray) -> Optional[tuple]:
    """``(block, root)`` when ``arr``'s storage is in a shared block, else None."""
    root = _storage_root(arr)
    owner: Any = root.base
    if isinstance(owner, memoryview):
        owner = owner.obj
    if isinstance(owner, _Block):
        return owner, root
    return None


def is_shared(t: Tensor) -> bool:
    """Whether the tensor's data lives in shared memory (``Tensor.is_shared``).

    >>> import ndgrad
    >>> t = ndgrad.zeros(3)
    >>> t.is_shared(), t.share_memory_().is_shared()
    (False, True)
    """
    return _block_of(t._data) is not None


def _bounds(arr: np.ndarray) -> tuple:
    """First and one-past-last byte addresses ``arr`` reaches."""
    lo = hi = _ptr(arr)
    if arr.size == 0:
        return lo, lo
    for n, s in zip(arr.shape, arr.strides):
        if s >= 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi + arr.itemsize


def _over(base: np.ndarray, like: np.ndarray, old_base_ptr: int) -> np.ndarray:
    """An array laid out like ``like`` over ``base`` (``like`` sat ``ptr - old_base_ptr`` bytes
    from the old base)."""
    out = np.ndarray(like.shape, like.dtype, buffer=base, offset=_ptr(like) - old_base_ptr,
                     strides=like.strides)
    if not like.flags.writeable:
        out.flags.writeable = False
    return out


def share_memory_(t: Tensor) -> Tensor:
    """Move the tensor's storage into shared memory (no-op when it is already there); returns
    the tensor (Note [Shared memory]).

    >>> import ndgrad
    >>> w = ndgrad.arange(4.0).share_memory_()
    >>> w.add_(1)
    tensor([1., 2., 3., 4.])
    >>> w.is_shared()
    True
    """
    if _block_of(t._data) is not None:
        return t
    register_reducers()
    chain = [t]
    b = t._base
    while b is not None:
        chain.append(b)
        b = b._base
    root = _storage_root(t._data)
    lo, hi = _bounds(root)
    for x in chain:
        xlo, xhi = _bounds(x._data)
        lo, hi = min(lo, xlo), max(hi, xhi)
    block = _new_block(hi - lo)
    whole = np.frombuffer(block, dtype=np.uint8, count=hi - lo)
    whole[:] = np.asarray(_Raw(lo, hi - lo, root))
    new_root = _over(whole, root, lo)
    for x in chain:
        x._data = new_root if x._data is root else _over(new_root, x._data, _ptr(root))
    return t


class _Raw:
    """A read-only byte window ``[addr, addr + n)`` of memory kept alive by ``owner``."""

    def __init__(self, addr: int, n: int, owner: Any) -> None:
        self.__array_interface__ = {"data": (addr, True), "shape": (n,), "typestr": "|u1",
                                    "version": 3}
        self.owner = owner


# ---------------------------------------------------------------------------- pickling
def _rebuild_array(handle: Any, size: int, root_meta: tuple, meta: tuple) -> np.ndarray:
    fd = handle.detach()
    block = _adopt(fd, size)
    whole = np.frombuffer(block, dtype=np.uint8, count=size)
    shape, dtype, strides, offset, writeable = root_meta
    root = np.ndarray(shape, dtype, buffer=whole, offset=offset, strides=strides)
    shape, dtype, strides, offset, writeable = meta
    if offset is None:
        return root
    arr = np.ndarray(shape, dtype, buffer=root, offset=offset, strides=strides)
    if not writeable:
        arr.flags.writeable = False
    return arr


def _reduce_array(arr: np.ndarray) -> Any:
    found = _block_of(arr)
    if found is None:
        return arr.__reduce__()
    from multiprocessing.reduction import DupFd
    block, root = found
    whole_ptr = _ptr(np.frombuffer(block, dtype=np.uint8, count=1))
    root_meta = (root.shape, root.dtype, root.strides, _ptr(root) - whole_ptr, True)
    meta = (arr.shape, arr.dtype, arr.strides,
            None if arr is root else _ptr(arr) - _ptr(root), arr.flags.writeable)
    return _rebuild_array, (DupFd(block.fd), len(block), root_meta, meta)


def _reduce_tensor(t: Tensor) -> Any:
    if t._requires_grad and t._grad_fn is not None:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries.  If you just want to transfer the "
            "data, call detach() on the tensor before serializing (e.g., putting it on the "
            "queue).")
    return t.__reduce_ex__(2)


def register_reducers() -> None:
    """Teach ``multiprocessing``'s pickler to send shared arrays by handle (idempotent)."""
    global _registered
    if _registered:
        return
    from multiprocessing.reduction import ForkingPickler
    ForkingPickler.register(np.ndarray, _reduce_array)
    ForkingPickler.register(Tensor, _reduce_tensor)
    _registered = True

