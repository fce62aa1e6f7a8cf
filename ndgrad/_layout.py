"""Memory formats: ``ndgrad.contiguous_format``, ``preserve_format``, ``channels_last`` and
``channels_last_3d``, and the array layouts they stand for.

A tensor's layout is its ndarray's strides (``Tensor.stride()`` reports them in elements), so a
memory format is realized by allocating the array in that order: ``channels_last`` is an NHWC
buffer seen as NCHW, which gives PyTorch's strides ``(H*W*C, 1, W*C, C)``. ``preserve_format``
keeps the strides of a dense source and otherwise orders the dims by their strides (as PyTorch
does for ``clone`` and ``*_like``).

Example:
    >>> import ndgrad
    >>> x = ndgrad.zeros(2, 3, 4, 5).contiguous(memory_format=ndgrad.channels_last)
    >>> x.stride(), x.is_contiguous(memory_format=ndgrad.channels_last)
    ((60, 1, 15, 3), True)
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import _aligned

__all__ = ["memory_format", "contiguous_format", "preserve_format", "channels_last",
           "channels_last_3d", "layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc",
           "sparse_bsr", "sparse_bsc", "jagged", "check", "check_rank", "is_contiguous", "empty",
           "copy_to", "is_non_overlapping_and_dense"]


def is_non_overlapping_and_dense(arr: np.ndarray) -> bool:
    """True if the array's elements exactly tile a contiguous block of memory in some order."""
    if arr.ndim == 0 or arr.flags.c_contiguous or arr.flags.f_contiguous:
        return True
    item = arr.itemsize
    dims = sorted((abs(s), n) for s, n in zip(arr.strides, arr.shape) if n != 1)
    expected = item
    for stride, n in dims:
        if stride != expected:
            return False
        expected *= n
    return True


class _Constant:
    """A named constant of a class nobody instantiates (``ndgrad.channels_last``,
    ``ndgrad.strided`` ...): printed as ``ndgrad.<name>``, pickled by reference to the module
    constant."""

    __slots__ = ("_name",)
    _name: str

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"cannot create 'ndgrad.{cls.__name__}' instances")

    @classmethod
    def _make(cls, name: str) -> Any:
        obj = object.__new__(cls)
        obj._name = name
        return obj

    def __repr__(self) -> str:
        return f"ndgrad.{self._name}"

    def __reduce__(self) -> str:
        return self._name


class memory_format(_Constant):
    """The layout a tensor is allocated in (``ndgrad.channels_last`` ...); not instantiable."""

    __slots__ = ()


class layout(_Constant):
    """A tensor's storage kind, as ``torch.layout``: ``ndgrad.strided`` for dense tensors,
    ``ndgrad.sparse_coo`` for sparse COO ones, ``ndgrad.sparse_csr``/``sparse_csc`` for
    compressed ones (the block layouts exist for code that compares with them; ndgrad makes no
    tensor of those); not instantiable.

    >>> import ndgrad
    >>> ndgrad.zeros(2).layout is ndgrad.strided, ndgrad.strided
    (True, ndgrad.strided)
    """

    __slots__ = ()


strided = layout._make("strided")
sparse_coo = layout._make("sparse_coo")
sparse_csr = layout._make("sparse_csr")
sparse_csc = layout._make("sparse_csc")
sparse_bsr = layout._make("sparse_bsr")
sparse_bsc = layout._make("sparse_bsc")
jagged = layout._make("jagged")
_mkldnn = layout._make("_mkldnn")

contiguous_format = memory_format._make("contiguous_format")
preserve_format = memory_format._make("preserve_format")
channels_last = memory_format._make("channels_last")
channels_last_3d = memory_format._make("channels_last_3d")

# Physical dim order (outermost first) of the channels-last formats, and their rank.
_ORDER = {channels_last: (0, 2, 3, 1), channels_last_3d: (0, 2, 3, 4, 1)}


def check(fmt: Any, fn: str) -> memory_format:
    """``fmt`` as a memory format (None means ``preserve_format``), with PyTorch's TypeError."""
    if fmt is None:
        return preserve_format
    if type(fmt) is not memory_format:
        raise TypeError(f"{fn}(): argument 'memory_format' must be ndgrad.memory_format, not "
                        f"{type(fmt).__name__}")
    return fmt


def check_rank(ndim: int, fmt: memory_format) -> None:
    """PyTorch's error for a channels-last format on a tensor of another rank."""
    order = _ORDER.get(fmt)
    if order is not None and ndim != len(order):
        raise RuntimeError(f"required rank {len(order)} tensor to use {fmt._name} format")


def is_contiguous(arr: np.ndarray, fmt: memory_format) -> bool:
    """PyTorch's ``is_contiguous(memory_format=fmt)``: the strides are the format's dense ones
    (size-1 dims ignored); a channels-last format of another rank is never contiguous."""
    order = _ORDER.get(fmt)
    if order is None:
        return bool(arr.flags.c_contiguous)
    if arr.ndim != len(order):
        return False
    expected = arr.itemsize
    for d in reversed(order):
        n = arr.shape[d]
        if n != 1:
            if arr.strides[d] != expected:
                return False
            expected *= n
    return True


def infer_dense_strides(shape: tuple, strides: tuple) -> tuple:
    """Dense strides (in elements) ordering the dims as ``strides`` (in any unit) order them:
    torch's rule for a ``preserve_format`` copy of a tensor that overlaps or has gaps (Note
    [Preserved layouts]).

    >>> infer_dense_strides((2, 3), (0, 1)), infer_dense_strides((3, 2), (8, 24))
    ((3, 1), (1, 3))
    """
    n = len(shape)
    if n <= 1:
        return (1,) * n
    perm = list(range(n - 1, -1, -1))          # innermost first, as for a C-ordered tensor

    def after(d0: int, d1: int) -> int:        # 1: d0 goes inside d1, -1: outside, 0: either
        s0, s1 = abs(strides[d0]), abs(strides[d1])
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return 1 if s0 > s1 else -1
        return 1 if shape[d0] > shape[d1] else 0

    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = after(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    out = [0] * n
    step = 1
    for d in perm:
        out[d] = step
        step *= max(shape[d], 1)
    return tuple(out)


# Note [Preserved layouts]
# A ``preserve_format`` result (``clone()``, ``empty_like`` and the other ``*_like``, ``.to``
# with a copy, ``ndgrad.tensor`` of a tensor or an ndarray) keeps its input's strides when the
# input is dense and non-overlapping (a transpose, channels-last, a Fortran array); otherwise
# (an expanded or sliced input) it is dense with the dims in the order of the input's strides,
# compared as torch compares them (``infer_dense_strides``: a dim of stride 0 keeps its place,
# equal strides put the larger dim outside) -- not NumPy's ``order="K"``.
def empty(shape: tuple, dtype: Any, fmt: memory_format,
          like: Optional[np.ndarray] = None) -> np.ndarray:
    """An uninitialized array of ``shape`` laid out in ``fmt`` (``preserve_format``: like
    ``like``, whose shape is ``shape``, Note [Preserved layouts]); a large C-contiguous one
    64-byte aligned (Note [Aligned arrays] in _aligned.py)."""
    if fmt is preserve_format:
        if like is None or like.flags.c_contiguous:
            return _aligned.empty(shape, dtype)
        if is_non_overlapping_and_dense(like) and min(like.strides) >= 0:
            strides = tuple(s // like.itemsize for s in like.strides)
        else:
            strides = infer_dense_strides(like.shape, like.strides)
        if strides == _c_strides(shape):
            return _aligned.empty(shape, dtype)
        # the strides, in elements: a dense permutation of one fresh buffer
        item = np.dtype(dtype).itemsize
        buf = np.empty(like.size, dtype)
        return np.lib.stride_tricks.as_strided(buf, shape, tuple(s * item for s in strides))
    order = _ORDER.get(fmt)
    if order is None:
        return _aligned.empty(shape, dtype)
    check_rank(len(shape), fmt)
    phys = np.empty(tuple(shape[d] for d in order), dtype)
    return phys.transpose(tuple(order.index(d) for d in range(len(order))))


def _c_strides(shape: tuple) -> tuple:
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def preserve_copy(arr: np.ndarray) -> np.ndarray:
    """A copy of ``arr`` laid out as ``preserve_format`` lays it (Note [Preserved layouts])."""
    if arr.flags.c_contiguous or arr.flags.f_contiguous or arr.ndim <= 1:
        return _aligned.copy(arr)
    out = empty(arr.shape, arr.dtype, preserve_format, arr)
    np.copyto(out, arr)
    return out


def copy_to(arr: np.ndarray, fmt: memory_format, dtype: Any = None) -> np.ndarray:
    """A copy of ``arr`` (cast to ``dtype``) laid out in ``fmt``."""
    out = empty(arr.shape, arr.dtype if dtype is None else dtype, fmt, arr)
    np.copyto(out, arr, casting="unsafe")
    return out


_SPARSE_ZEROS = frozenset({"zeros", "empty", "zeros_like", "empty_like", "new_zeros",
                           "new_empty"})


def no_pinned_memory() -> None:
    """``pin_memory=True`` on this CPU-only library: torch's error without an accelerator."""
    raise RuntimeError("pin_memory=True requires a CUDA or other accelerator backend; no pinned "
                       "memory allocator is available on this system.")


def check_factory_layout(fn: str, layout: Any) -> None:
    """Raise unless factory ``fn`` can make a tensor of ``layout`` (not strided): only the
    functions making zeros make sparse COO tensors, as torch's (Note [Layout and pinned-memory
    arguments] in ``_signature.py``)."""
    if layout in (sparse_coo, sparse_csr, sparse_csc) and fn in _SPARSE_ZEROS:
        return
    if layout is sparse_coo and fn in ("ones", "full", "ones_like", "full_like"):
        raise RuntimeError("full(...) is not implemented for sparse layout")
    raise NotImplementedError(f"{fn}(): layout={layout} is not supported (ndgrad makes "
                              f"{strided} tensors, and {sparse_coo}, {sparse_csr} and "
                              f"{sparse_csc} zeros)")


def factory_layout(t: Any, layout: Any) -> Any:
    """The factory result ``t`` (a dense tensor of zeros, or uninitialized) as the all-zero
    sparse COO, CSR or CSC tensor of its shape and dtype that ``layout`` asks for."""
    z = t.detach().new_zeros(t.shape)
    s = z.to_sparse(layout=layout)
    return s.requires_grad_() if t.requires_grad else s
