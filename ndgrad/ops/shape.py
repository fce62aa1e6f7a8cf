"""Shape ops: views (view/reshape, transpose/permute/t, expand, squeeze/unsqueeze, select,
narrow, basic indexing, unbind/split/chunk), copies (advanced indexing), cat and stack.

View ops return NumPy views that share the input's memory and version counter and remember
their base (``_base``).

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], requires_grad=True)
    >>> y = x[:, 1:].t()
    >>> y._base is x, y.grad_fn.name()
    (True, 'TBackward0')
    >>> y.sum().backward(); x.grad
    tensor([[0., 1., 1.],
            [0., 1., 1.]])
"""

from __future__ import annotations

import operator
import re
from typing import Any, Sequence

import numpy as np

from .. import _dtype, _layout, _meta, _signature
from .._creation import _infer_array
from .._warn import warn_user
from ..autograd.saved import TensorList
from ..tensor import Tensor, _as_shape, _ptr, _storage_nbytes, _storage_root, _wrap
from ._batching import call as _bcall
from ._batching import marked as _bmarked
from ._batching import refuse_batched_mask as _refuse_mask
from ..autograd.batching import VMAP as _VMAP
from . import _dispatch
from ._dispatch import Op, apply
from ._jvp import linear
from ._util import to_tensor, type_name, wrap_dim
from .pointwise import CLONE_FMT
from .views_inplace import as_strided_gather, view_scatter

_INT64_MAX = (1 << 63) - 1

# ---------------------------------------------------------------------------- view / reshape


def _reshape_vjp(ctx, g):
    shape = ctx.input_shape(0)
    if g._blevel:  # Note [Batched backward]
        return g.reshape(shape)
    # ``reshape`` without its argument parsing: the forward's input shape is valid.
    x = g._data
    try:
        return apply(VIEW, (g,), (x,), (shape,))
    except ValueError:
        return apply(RESHAPE_COPY, (g,), (x,), (shape,))


# ndarray.reshape rather than np.reshape: no Python-level wrapper on every view.
VIEW = Op("view", "ViewBackward0", lambda x, shape: x.reshape(shape, copy=False),
          _reshape_vjp, args=("size",), view=True, jvp=linear)
RESHAPE_COPY = Op("reshape", "UnsafeViewBackward0", lambda x, shape: x.reshape(shape),
                  _reshape_vjp, args=("size",), jvp=linear)


def _infer_shape(shape: tuple, numel: int) -> tuple:
    neg = None
    known = 1
    for i, s in enumerate(shape):
        if s == -1:
            if neg is not None:
                raise RuntimeError("only one dimension can be inferred")
            neg = i
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
        else:
            known *= s
    if neg is not None:
        if known == 0 and numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} "
                               "because the unspecified dimension size -1 can be any value and "
                               "is ambiguous")
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[:neg] + (numel // known,) + shape[neg + 1:]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _int64_sizes(sizes: tuple, fn: str, arg: str) -> tuple:
    """PyTorch's error for sizes that do not fit in int64 (its argument parser's)."""
    for i, n in enumerate(sizes):
        if not -_INT64_MAX - 1 <= n <= _INT64_MAX:
            raise TypeError(f"{fn}(): argument '{arg}' failed to unpack the object at pos {i + 1} "
                            "with error \"Overflow when unpacking long long\"")
    return sizes


def _can_view(x: np.ndarray, shape: tuple) -> bool:
    try:
        np.reshape(x, shape, copy=False)
        return True
    except ValueError:
        return False


def view(input: Tensor, *shape: Any) -> Tensor:
    """A view with another shape; raises if the strides do not allow it (use ``reshape``)."""
    if input._blevel:  # Note [Batched backward]
        r = _bcall(view, input, *shape)
        if r is not NotImplemented:
            return r
    if len(shape) == 1 and isinstance(shape[0], _dtype.dtype):
        raise RuntimeError("view(dtype) is not supported by ndgrad")
    x = input._data
    s = _infer_shape(_int64_sizes(_as_shape(shape), "view", "size"), x.size)
    try:
        # VIEW's forward is np.reshape(copy=False): it raises when the strides do not allow it.
        return apply(VIEW, (input,), (x,), (s,))
    except ValueError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.") from None


def reshape(input: Tensor, *shape: Any) -> Tensor:
    """Reshape: a view when the strides allow it, a copy otherwise."""
    if input._blevel:  # Note [Batched backward]
        r = _bcall(reshape, input, *shape)
        if r is not NotImplemented:
            return r
    x = input._data
    s = _infer_shape(_int64_sizes(_as_shape(shape), "reshape", "shape"), x.size)
    try:
        return apply(VIEW, (input,), (x,), (s,))     # a view when the strides allow it
    except ValueError:
        return apply(RESHAPE_COPY, (input,), (x,), (s,))


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim`` through ``end_dim`` (inclusive) into a single dim.

    >>> import ndgrad
    >>> ndgrad.zeros(2, 3, 4).flatten(1).shape
    ndgrad.Size([2, 12])
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(flatten, input, start_dim, end_dim)
        if r is not NotImplemented:
            return r
    x = input._data
    a, b = wrap_dim(start_dim, x.ndim), wrap_dim(end_dim, x.ndim)
    if x.ndim == 0:
        return reshape(input, 1)
    if a > b:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if a == b:
        return input
    n = 1
    for s in x.shape[a:b + 1]:
        n *= s
    return reshape(input, x.shape[:a] + (n,) + x.shape[b + 1:])


# ---------------------------------------------------------------------------- transpose / permute
TRANSPOSE = Op("transpose", "TransposeBackward0",
               lambda x, a, b: np.swapaxes(x, a, b) if x.ndim else x[...],
               lambda ctx, g: g.transpose(ctx._args[0], ctx._args[1]), args=("dim0", "dim1"),
               view=True, jvp=linear)
# raw: Note [Raw backward rules] (ops/_dispatch.py); the Tensor rule returns a view of ``g``
# too (a gradient penalty's ``W.t()`` runs this node in every backward through it)
T_OP = Op("t", "TBackward0", lambda x: x.T, lambda ctx, g: g.t(), view=True,
          jvp=linear, raw=lambda ctx, g, saved: g.T)
PERMUTE = Op("permute", "PermuteBackward0", lambda x, dims: np.transpose(x, dims),
             lambda ctx, g: g.permute(tuple(np.argsort(ctx._args[0]).tolist())),
             args=("dims",), view=True, jvp=linear)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap dims ``dim0`` and ``dim1``; the result is a view of ``input``."""
    if input._blevel:  # Note [Batched backward]
        r = _bcall(transpose, input, dim0, dim1)
        if r is not NotImplemented:
            return r
    n = input._data.ndim
    a, b = wrap_dim(dim0, n), wrap_dim(dim1, n)
    return apply(TRANSPOSE, (input,), (input._data,), (a, b))


def t(input: Tensor) -> Tensor:
    """Transpose a tensor of at most 2 dims (0-d and 1-d inputs come back as they are).

    >>> import ndgrad
    >>> ndgrad.tensor([[1, 2], [3, 4]]).t().tolist()
    [[1, 3], [2, 4]]
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(t, input)
        if r is not NotImplemented:
            return r
    n = input._data.ndim
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
    return apply(T_OP, (input,), (input._data,))


def permute(input: Tensor, *dims: Any) -> Tensor:
    """Reorder the dims of ``input`` as listed in ``dims``; returns a view."""
    if input._blevel:  # Note [Batched backward]
        r = _bcall(permute, input, *dims)
        if r is not NotImplemented:
            return r
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    n = input._data.ndim
    d = _as_shape(dims)
    if len(d) != n:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal "
            f"to len(dims) = {len(d)}")
    d = tuple(wrap_dim(i, n) for i in d)
    if len(set(d)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return apply(PERMUTE, (input,), (input._data,), (d,))


def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    """Move dimension(s) ``source`` to position(s) ``destination``."""
    if input._blevel:  # Note [Batched backward]
        r = _bcall(movedim, input, source, destination)
        if r is not NotImplemented:
            return r
    n = input._data.ndim
    if isinstance(source, int) != isinstance(destination, int):
        raise TypeError(f"movedim() received an invalid combination of arguments - got "
                        f"({type(source).__name__}, {type(destination).__name__}), but expected "
                        "one of: (int source, int destination) or (tuple of ints source, tuple of "
                        "ints destination)")
    src_in = [source] if isinstance(source, int) else list(source)
    dst_in = [destination] if isinstance(destination, int) else list(destination)
    if len(src_in) != len(dst_in):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src_in} "
                           f"dims) should contain the same number of dims as destination "
                           f"({dst_in} dims)")
    src = [wrap_dim(s, n) for s in src_in]
    dst = [wrap_dim(d, n) for d in dst_in]
    for name, dims, given in (("source", src, src_in), ("destination", dst, dst_in)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({given})")
    if n == 0:        # dims 0 and -1 of a 0-d tensor: an alias, as PyTorch returns
        return apply(_BASIC["AliasBackward0"], (input,), (input._data,), ((Ellipsis,),))
    perm: list = [None] * n
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(i for i in range(n) if i not in src)
    return permute(input, [p if p is not None else next(rest) for p in perm])


# ---------------------------------------------------------------------------- expand / squeeze
def broadcast_view(a: np.ndarray, shape: tuple) -> np.ndarray:
    """``np.broadcast_to(a, shape)``: the same read-only view (strides 0 along the broadcast
    dimensions, ``a`` as its base), built directly for a C-contiguous ``a`` of a NumPy dtype
    and a non-empty result; np.broadcast_to's argument handling costs ~1.3 µs, more than the
    rest of a loss's sum backward or an expand (Note [Per-op cost] in ops/_dispatch.py).

    >>> broadcast_view(np.ones(3), (2, 3)).strides
    (0, 8)
    """
    lead = len(shape) - a.ndim
    if lead < 0 or not a.flags.c_contiguous or a.size == 0 or a.dtype.isbuiltin != 1 or \
            a.__class__ is not np.ndarray:        # (a meta array: Note [Meta arrays])
        return np.broadcast_to(a, shape)
    strides = [0] * lead
    for n, s, st in zip(a.shape, shape[lead:], a.strides):
        if n == 1 and s > 0:
            # 0 also where the size stays 1, as NumPy's (the gradient layout contract tells
            # such a view from a dense array, Note [AccumulateGrad: steal, clone or add])
            strides.append(0)
        elif n == s:
            strides.append(st)
        else:
            return np.broadcast_to(a, shape)     # NumPy's error, or an empty result
    r = np.ndarray(shape, a.dtype, a, 0, tuple(strides))
    r.flags.writeable = False
    return r


EXPAND = Op("expand", "ExpandBackward0", broadcast_view,
            lambda ctx, g: g.sum_to_size(ctx.input_shape(0)), args=("size",), view=True,
            jvp=linear)


def expand(input: Tensor, *sizes: Any) -> Tensor:
    """Broadcast to ``sizes`` without copying (``-1`` keeps a dimension)."""
    if input._blevel:  # Note [Batched backward]
        r = _bcall(expand, input, *sizes)
        if r is not NotImplemented:
            return r
    x = input._data
    target = list(_int64_sizes(_as_shape(sizes), "expand", "size"))
    if len(target) < x.ndim:
        raise RuntimeError(
            f"expand(torch.{_dtype._FROM_NP[x.dtype]._torch_name}Tensor{{{list(x.shape)}}}, "
            f"size={target}): the number of sizes "
            "provided (" + str(len(target)) + ") must be greater or equal to the number of "
            f"dimensions in the tensor ({x.ndim})")
    lead = len(target) - x.ndim
    for i in reversed(range(len(target))):    # PyTorch checks from the last dimension
        s = target[i]
        if i < lead:
            if s == -1:                 # below -1: the numel overflow below, as PyTorch
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a "
                                   "leading, non-existing dimension " + str(i))
            continue
        cur = x.shape[i - lead]
        if s == -1:
            target[i] = cur
        elif cur != s and cur != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(_as_shape(sizes))}.  Tensor "
                f"sizes: {list(x.shape)}")
    shape = tuple(target)
    if any(s < 0 for s in shape):      # a size below -1 over a singleton dimension
        raise RuntimeError("numel: integer multiplication overflow")
    _check_numel(shape, x.itemsize)
    return apply(EXPAND, (input,), (x,), (shape,))


def _check_numel(shape: tuple, item: int) -> None:
    """PyTorch's overflow check of an element count (it multiplies the sizes in order, so a
    size 0 after the overflow does not help), then NumPy's limit: the nonzero sizes times the
    item size must fit in int64, even for an empty or expanded array."""
    numel = nonzero = 1
    for n in shape:
        numel *= n
        if numel > _INT64_MAX:
            raise RuntimeError("numel: integer multiplication overflow")
        nonzero *= n or 1
    if nonzero * item > _INT64_MAX:
        raise RuntimeError(f"ndgrad: a view of shape {list(shape)} with {item}-byte elements is "
                           "larger than NumPy can represent")


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """Broadcast ``input`` to the shape of ``other`` without copying (a view)."""
    if _bmarked((input, other)):  # Note [Batched backward]
        r = _bcall(expand_as, input, other)
        if r is not NotImplemented:
            return r
    return expand(input, other._data.shape)


SQUEEZE = Op("squeeze", "SqueezeBackward0", lambda x, dims: np.squeeze(x, dims), _reshape_vjp,
             args=("dim",), view=True, jvp=linear)
SQUEEZE_DIM = Op("squeeze", "SqueezeBackward1", lambda x, dims: np.squeeze(x, dims),
                 _reshape_vjp, args=("dim",), view=True, jvp=linear)
SQUEEZE_DIMS = Op("squeeze", "SqueezeBackward2", lambda x, dims: np.squeeze(x, dims),
                  _reshape_vjp, args=("dim",), view=True, jvp=linear)
UNSQUEEZE = Op("unsqueeze", "UnsqueezeBackward0",
               lambda x, d: x.reshape(x.shape[:d] + (1,) + x.shape[d:]),
               lambda ctx, g: g.squeeze(ctx._args[0]), args=("dim",), view=True,
               jvp=linear)


def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """Remove size-1 dimensions (all, or those in ``dim`` that have size 1)."""
    if input._blevel:  # Note [Batched backward]
        r = _bcall(squeeze, input, dim)
        if r is not NotImplemented:
            return r
    x = input._data
    if dim is None:
        dims = tuple(i for i, s in enumerate(x.shape) if s == 1)
        return apply(SQUEEZE, (input,), (x,), (dims,))
    if isinstance(dim, (tuple, list)):
        ds = tuple(wrap_dim(d, x.ndim) for d in dim)
        for i, d in enumerate(ds):
            if d in ds[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        dims = tuple(d for d in ds if x.ndim and x.shape[d] == 1)
        return apply(SQUEEZE_DIMS, (input,), (x,), (dims,))
    d = wrap_dim(dim, x.ndim)
    dims = (d,) if x.ndim and x.shape[d] == 1 else ()
    return apply(SQUEEZE_DIM, (input,), (x,), (dims,))


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a new size-1 dim at position ``dim``; returns a view."""
    if input._blevel:  # Note [Batched backward]
        r = _bcall(unsqueeze, input, dim)
        if r is not NotImplemented:
            return r
    n = input._data.ndim + 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return apply(UNSQUEEZE, (input,), (input._data,), (dim + n if dim < 0 else dim,))


# ---------------------------------------------------------------------------- indexing
def _slice_backward_fwd(g, index, shape):
    out = np.zeros(shape, dtype=g.dtype)
    out[index] = g
    return out


def _index_backward_fwd(g, index, shape):
    out = np.zeros(shape, dtype=g.dtype)
    if g.size or _empty_selection(shape, index) is None:
        np.add.at(out, index, g)
    return out


SLICE_BACKWARD = Op("_slice_backward", "SliceBackwardBackward0", _slice_backward_fwd,
                    lambda ctx, g: _getitem_raw(g, ctx._args[0]), args=("index", "shape"),
                    jvp=linear)
INDEX_BACKWARD = Op("_index_backward", "IndexPutBackward0", _index_backward_fwd,
                    lambda ctx, g: _getitem_raw(g, ctx._args[0]), args=("index", "shape"),
                    jvp=linear)


def _basic_vjp(ctx, g):
    return apply(SLICE_BACKWARD, (g,), (g._data,), (ctx._args[0], ctx.input_shape(0)))


def _advanced_vjp(ctx, g):
    _ = ctx.saved      # the index tensors: version-checked, unpacked by the hooks
    return apply(INDEX_BACKWARD, (g,), (g._data,), (ctx._args[0], ctx.input_shape(0)))


def _index_layout(idx: Sequence, ndim: int) -> Any:
    """(item, first dim it indexes) for the items of a normalized index, ``...`` resolved."""
    specified = sum(_index_dims(it) for it in idx)
    d = 0
    for it in idx:
        yield it, d
        d += ndim - specified if it is Ellipsis else _index_dims(it)


def _indexes_empty_dim(idx: tuple, shape: tuple) -> bool:
    """Whether an index array with elements indexes a dim of size 0 (PyTorch checks that
    first, even when the result is empty)."""
    return any(isinstance(it, np.ndarray) and it.dtype != np.bool_ and it.size
               and d < len(shape) and shape[d] == 0 for it, d in _index_layout(idx, len(shape)))


def _empty_selection(shape: tuple, idx: tuple) -> Any:
    """The shape of ``x[idx]`` when it has no element although an index array holds
    out-of-range entries (PyTorch checks only the positions it reads), else None."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    if _indexes_empty_dim(idx, shape):
        return None
    dummy, safe = list(shape), []   # zero-size dims read through an index array become 1
    for it, d in _index_layout(idx, len(shape)):
        if isinstance(it, np.ndarray) and it.dtype != np.bool_ and d < len(shape):
            dummy[d] = n = max(shape[d], 1)
            it = np.clip(it, -n, n - 1)
        safe.append(it)
    try:
        out = np.broadcast_to(np.zeros((), np.bool_), tuple(dummy))[tuple(safe)].shape
    except IndexError:
        return None
    return out if 0 in out else None


def _getitem_fwd(x, index):
    try:
        out = x[index]
    except IndexError:
        shape = _empty_selection(x.shape, index)
        if shape is None:
            raise
        return np.zeros(shape, dtype=x.dtype)
    if type(out) is not np.ndarray and type(out) is not _meta.MetaArray:
        out = x[index + (Ellipsis,)]   # all-integer index: a 0-d view, not a NumPy scalar copy
    return out


_BASIC = {name: Op("getitem", name, _getitem_fwd, _basic_vjp, args=("index",), view=True,
                   jvp=linear)
          for name in ("SelectBackward0", "SliceBackward0", "UnsqueezeBackward0",
                       "AliasBackward0")}
# Advanced indexing: args are the NumPy index and the index tensors saved as ``indices``
# (Note [Saved index tensors]).
INDEX = Op("index", "IndexBackward0", lambda x, index, indices: _getitem_fwd(x, index),
           _advanced_vjp, args=("np_index", "indices"), saves=("indices",), jvp=linear)


# Note [Python indices]
# ``x[index]`` reads a Python index the way PyTorch does, which is not NumPy's way:
# * A non-tuple sequence shorter than 32 holding a tensor, a sequence, a slice, ``...`` or None
#   is read as a tuple (``x[[[0], [1]]]`` is ``x[[0], [1]]``, with a deprecation warning);
#   other lists, ranges and ndarrays are one index.
# * Sequences (lists, tuples or ranges inside the index, ndarrays) become int64 index arrays,
#   floats truncated; bool data stays a mask, and uint8 tensors and ndarrays are masks too.
# * A 0-d integer tensor is an integer (a view); 0-d bool and uint8 tensors act as True/False.
# * Index tensors must be int64, int32, uint8 or bool; Python floats, NumPy bools and other
#   objects are refused (IndexError), as are negative slice steps (ValueError).
# * Several ``...`` may appear: each stands for the dims the other items leave over.
# ``_normalize_index`` turns an index into NumPy form once; getitem, setitem and index_put
# work on that form (applying its basic part first, as a view: ``_split_advanced``).

# Note [Saved index tensors]
# Advanced indexing, setitem and index_put save their index tensors as PyTorch does (its
# ``indices``, one entry per dim of the tensor the advanced part indexes, trailing Nones
# dropped): None for a dim a slice, None or ``...`` keeps; an index tensor the user gave
# itself (so that changing it in place before backward raises); a new int64 tensor for a
# sequence; a bool mask as it is (one entry); ``[0]`` or ``[]`` for a Python or 0-d bool;
# integers select before and have no entry. ``_index_tensors`` builds that ``TensorList``;
# the ops get it as their last argument, beside the NumPy index that their forward uses.
_NOT_AN_INDEX = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                 "Variables are valid indices (got {})")
_BAD_INDEX_TENSOR = "tensors used as indices must be long, int, byte or bool tensors"
_SEQUENCES = (list, tuple, range, np.ndarray, str, bytes)
_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32))


def _index_tuple(index: Any) -> tuple:
    """The items of ``index``: PyTorch's rule for which non-tuple sequences are tuples."""
    if isinstance(index, tuple):
        return index
    if isinstance(index, (list, range, str, bytes)) and len(index) < 32:
        for it in index:
            if isinstance(it, (Tensor, slice) + _SEQUENCES) or it is None or it is Ellipsis:
                warn_user("Using a non-tuple sequence for multidimensional indexing is "
                          "deprecated and will be changed in pytorch 2.9; use x[tuple(seq)] "
                          "instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor "
                          "index, x[torch.tensor(seq)], which will result either in an error or a "
                          "different result")
                return tuple(index)
    return (index,)


class _ByteMask(np.ndarray):
    """A bool mask made from uint8 data (PyTorch refuses some writes through those)."""

    _source: np.ndarray


def _byte_mask(d: np.ndarray) -> np.ndarray:
    warn_user("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
              "torch.bool instead.")
    m = np.asarray(d != 0).view(_ByteMask)
    m._source = d          # the uint8 data, saved as PyTorch saves it
    return m


def _index_tensors(idx: tuple, ndim: int, index: Any = None) -> TensorList:
    """The index tensors PyTorch saves for the normalized advanced index ``idx`` into ``ndim``
    dims (Note [Saved index tensors]); ``index`` is the user's index, whose tensors are saved
    themselves."""
    given = {}
    for t in (index,) if type(index) is Tensor else index if type(index) in (tuple, list) \
            else ():
        if type(t) is Tensor:
            given[id(t._data)] = t
    rest = ndim - sum(_index_dims(it) for it in idx)
    out: list = []
    for it in idx:
        if isinstance(it, np.ndarray) and (it.ndim or it.dtype != np.bool_):
            src = getattr(it, "_source", it)          # a _ByteMask: its uint8 data
            t = given.get(id(src))
            out.append(t if t is not None else _wrap(np.asarray(src)))
        elif isinstance(it, (bool, np.ndarray)):      # Python or 0-d bool
            out.append(_wrap(np.arange(int(bool(it)), dtype=np.int64)))
        elif it is Ellipsis:
            out.extend([None] * rest)
        elif type(it) is not int:                     # a slice or None
            out.append(None)
    while out and out[-1] is None:
        out.pop()
    return TensorList(out)


def _sequence_index(seq: Any) -> Any:
    """A list, tuple, range or ndarray inside an index, as PyTorch turns it into an index
    tensor: bool (and uint8 ndarray) data is a mask, anything else int64 (floats truncated)."""
    if isinstance(seq, np.ndarray):
        if seq.dtype == np.uint8:
            return _byte_mask(seq)
        arr = seq
    else:
        if type(seq) is list and seq and all(type(v) is int for v in seq):
            arr = np.array(seq)            # plain ints (the common case)
            if arr.dtype == np.int64:
                return arr
        arr = _infer_array(seq, _dtype.int64)
        if arr.dtype.kind == "O":
            raise TypeError(f"Could not infer dtype of {type(seq).__name__}")
    if arr.dtype.kind == "b":
        return arr
    if not isinstance(seq, np.ndarray):
        _dtype.check_data(arr, _dtype.int64)
    arr = arr.astype(np.int64)
    return int(arr) if arr.ndim == 0 else arr


def _index_slice(sl: slice) -> slice:
    sl.indices(0)        # Python's own checks: integer-like bounds, a nonzero step
    start, stop, step = (None if v is None else operator.index(v)
                         for v in (sl.start, sl.stop, sl.step))
    if step is not None and step < 0:
        raise ValueError("step must be greater than zero")
    return slice(start, stop, step)


def _normalize_index(index: Any, shape: tuple) -> tuple:
    """Convert an index to NumPy form (Note [Python indices]); return (index, is_basic, node
    name). Masks made from uint8 data are ``_ByteMask`` arrays."""
    fast = _simple_index(index, shape)
    if fast is not None:
        return fast
    items = _index_tuple(index)
    ndim = len(shape)
    specified = sum(_raw_index_dims(it) for it in items)
    if specified > ndim:
        if ndim == 0 and isinstance(index, slice):
            _index_slice(index)
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        if ndim == 0 and isinstance(index, (int, np.integer)) and not isinstance(index, bool):
            if index != 0:
                raise IndexError(f"index {index} is out of bounds for dimension 0 with size 0")
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out: list = []
    basic = True
    bad = None        # the first item PyTorch refuses: raised after the items before it
    for it in items:
        try:
            it, advanced = _index_item(it)
        except (IndexError, TypeError, ValueError) as e:
            # A refused index tensor is noticed only once the basic items are applied.
            late = isinstance(it, Tensor)
            bad = bad or (len(items) if late else len(out), e)
            it, advanced = slice(None), False
        basic = basic and not advanced
        out.append(it)
    # PyTorch applies the items in order, naming a dim by the item's position: an integer out
    # of range is reported before a bad slice after it, and before any index array.
    for k, (it, d) in enumerate(_index_layout(out, ndim)):
        if bad is not None and k >= bad[0]:
            break
        if type(it) is int and d < ndim and not -shape[d] <= it < shape[d]:
            raise IndexError(f"index {it} is out of bounds for dimension {k} with size "
                             f"{shape[d]}")
    if bad is not None:
        raise bad[1]
    if sum(it is Ellipsis for it in out) > 1:
        _check_ellipses(out, ndim, ndim - specified)
        out = _expand_ellipses(out, ndim - specified)
    return tuple(out), basic, _basic_name(out)


_BASIC_ITEM_TYPES = (int, slice, type(None), type(Ellipsis))
_INT_OR_NONE = (int, type(None))


def _simple_index(index: Any, shape: tuple) -> Any:
    """``_normalize_index`` for the common indices that need no conversion: in-range ints,
    plain slices, None, one ``...``, or one int64/bool index tensor. None otherwise."""
    t = type(index)
    if t is Tensor:
        d = index._data
        if d.ndim and shape and (d.dtype == np.int64 or (d.dtype == np.bool_ and d.ndim <= len(
                shape))):
            return (d,), False, "AliasBackward0"
        return None
    if t is list:
        if shape and index and all(type(v) is int for v in index):
            arr = np.array(index)
            if arr.dtype == np.int64:
                return (arr,), False, "AliasBackward0"
        return None
    items = index if t is tuple else (index,) if t in _BASIC_ITEM_TYPES else None
    if items is None or len(items) > len(shape) + 2:
        return None
    ndim = len(shape)
    specified = ellipses = 0
    for it in items:
        ti = type(it)
        if ti is int:
            specified += 1
        elif ti is slice:
            specified += 1
            if not (type(it.start) in _INT_OR_NONE and type(it.stop) in _INT_OR_NONE
                    and (it.step is None or (type(it.step) is int and it.step > 0))):
                return None
        elif it is Ellipsis:
            ellipses += 1
        elif it is not None:
            return None
    if specified > ndim or ellipses > 1:
        return None
    d = 0
    for it in items:
        if type(it) is int:
            if not -shape[d] <= it < shape[d]:
                return None
            d += 1
        elif type(it) is slice:
            d += 1
        elif it is Ellipsis:
            d += ndim - specified
    return items, True, _basic_name(items)


def _index_item(it: Any) -> tuple:
    """One item of a Python index in NumPy form, and whether it is an advanced index."""
    if isinstance(it, Tensor):
        d = it._data
        if d.dtype == np.uint8:
            return _byte_mask(d), True
        if d.dtype.kind == "b":
            return d, True
        if d.dtype.kind in "iu" and d.ndim == 0:
            return int(d), False
        if d.dtype in _INDEX_DTYPES:
            return d, True
        raise IndexError(_BAD_INDEX_TENSOR)
    if it is None or it is Ellipsis:
        return it, False
    if isinstance(it, slice):
        return _index_slice(it), False
    if isinstance(it, bool):
        return it, True
    if isinstance(it, (int, np.integer)):
        if not -2 ** 63 <= int(it) < 2 ** 63:
            raise ValueError("Overflow when unpacking long long")
        return int(it), False
    if isinstance(it, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(it).__name__}'")
    if isinstance(it, _SEQUENCES):
        it = _sequence_index(it)
        return it, isinstance(it, np.ndarray)
    raise IndexError(_NOT_AN_INDEX.format(type_name(it)))


def _raw_index_dims(it: Any) -> int:
    """The dims an item of a Python index counts for in PyTorch's "too many indices" check,
    made before the items are read: a bool or uint8 tensor its ndim, None, ``...`` and Python
    bools nothing, anything else one."""
    if isinstance(it, (Tensor, np.ndarray)):
        d = it._data if isinstance(it, Tensor) else it     # ndarrays: an index normalized before
        return d.ndim if d.dtype == np.bool_ or (isinstance(it, Tensor) and d.dtype == np.uint8) \
            else 1
    return 0 if it is None or it is Ellipsis or it is True or it is False else 1


def _index_dims(it: Any) -> int:
    """How many dims of the indexed tensor an item of a normalized index consumes."""
    if it is None or it is Ellipsis or isinstance(it, bool):
        return 0
    if isinstance(it, np.ndarray) and it.dtype == np.bool_:
        return it.ndim
    return 1


def _check_ellipses(items: list, ndim: int, rest: int) -> None:
    """Several ``...`` move the position past the last dim: PyTorch's error for a new
    dimension (None or a bool) inserted there."""
    dim, cur = 0, ndim
    for it in items:
        if it is Ellipsis:
            dim += rest
        elif it is None or isinstance(it, bool) or (
                isinstance(it, np.ndarray) and it.ndim == 0 and it.dtype == np.bool_):
            if dim > cur:
                raise IndexError(f"Dimension out of range (expected to be in range of "
                                 f"[{-cur - 1}, {cur}], but got {dim})")
            cur += 1
            dim += 1
        elif type(it) is int:
            cur -= 1
        else:
            dim += _index_dims(it)


def _expand_ellipses(items: list, rest: int) -> list:
    """Several ``...``: PyTorch moves on by the ``rest`` dims the other items leave over at
    each, like that many full slices; those past the last dim select nothing."""
    out: list = []
    for it in items:
        out.extend([slice(None)] * rest if it is Ellipsis else [it])
    extra = rest * (sum(it is Ellipsis for it in items) - 1)
    while extra and out and isinstance(out[-1], slice) and out[-1] == slice(None):
        out.pop()
        extra -= 1
    return out


def _basic_name(items: Any) -> str:
    """The node name PyTorch gives a basic index (by its last meaningful item)."""
    name = "AliasBackward0"
    for it in reversed(items):
        if it is Ellipsis:
            continue
        if isinstance(it, int) and not isinstance(it, bool):
            name = "SelectBackward0"
        elif it is None:
            name = "UnsqueezeBackward0"
        elif isinstance(it, slice):
            if it == slice(None) and len(items) > 1:
                continue
            name = "SliceBackward0"
        break
    return name


_OUT_OF_BOUNDS = re.compile(r"index (-?\d+) is out of bounds for axis (\d+) with size (\d+)")


def _index_error(err: IndexError, shape: tuple, idx: tuple = ()) -> IndexError:
    """NumPy's indexing IndexError worded as PyTorch's."""
    msg = str(err)
    if msg.startswith("too many indices"):
        if not shape:
            first = next((it for it in idx if it is not None and it is not Ellipsis
                          and not isinstance(it, bool)), None)
            if isinstance(first, slice):
                return IndexError("slice() cannot be applied to a 0-dim tensor.")
            if isinstance(first, np.ndarray):
                return IndexError("too many indices for tensor of dimension 0")
            return IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                              "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        return IndexError(f"too many indices for tensor of dimension {len(shape)}")
    m = _OUT_OF_BOUNDS.match(msg)
    if m is not None and _indexes_empty_dim(idx, shape):
        return IndexError("index is out of bounds for dimension with size 0")
    if m is not None:
        first = _first_out_of_range(idx, shape)
        if first is not None:
            return IndexError("index {} is out of bounds for dimension {} with size {}".format(
                *first))
        return IndexError(f"index {m.group(1)} is out of bounds for dimension "
                          f"{_tensor_index_pos(idx, int(m.group(2)), len(shape))} with size "
                          f"{m.group(3)}")
    m = _NOT_BROADCAST.match(msg)
    if m is not None:
        shapes = ", ".join(str([int(n) for n in g.split(",") if n])
                           for g in re.findall(r"\(([^)]*)\)", m.group(1)))
        return IndexError("shape mismatch: indexing tensors could not be broadcast together "
                          f"with shapes {shapes}")
    return IndexError(msg.replace("axis", "dimension"))


_NOT_BROADCAST = re.compile(r"shape mismatch: indexing arrays could not be broadcast together "
                            r"with shapes (.*)")


def _first_out_of_range(idx: tuple, shape: tuple) -> Any:
    """(value, position among the index tensors, size) of the out-of-range index PyTorch
    meets first: it walks the broadcast index element by element, dims in order."""
    arrays, k = [], 0
    for it, d in _index_layout(idx, len(shape)):
        if isinstance(it, bool):
            k += 1
        elif isinstance(it, np.ndarray):
            if it.dtype != np.bool_:
                arrays.append((it, k, shape[d]))
            k += max(it.ndim, 1) if it.dtype == np.bool_ else 1
    try:
        bcast = np.broadcast_arrays(*(a for a, _, _ in arrays))
    except ValueError:
        return None
    if not arrays or bcast[0].size == 0:
        return None
    bad = np.stack([(b < -n) | (b >= n) for b, (_, _, n) in zip(bcast, arrays)]).reshape(
        len(arrays), -1)
    hit = bad.any(axis=0)
    if not hit.any():
        return None
    e = int(np.argmax(hit))
    j = int(np.argmax(bad[:, e]))
    return int(bcast[j].reshape(-1)[e]), arrays[j][1], arrays[j][2]


def _tensor_index_pos(idx: tuple, axis: int, ndim: int) -> int:
    """PyTorch reports an out-of-range index array by its position among the index tensors
    (a mask counts one per dim), NumPy by the axis it indexes."""
    specified = sum(_index_dims(it) for it in idx)
    d = k = 0
    for it in idx:
        if it is Ellipsis:
            d += ndim - specified
        elif isinstance(it, bool):
            k += 1
        elif isinstance(it, np.ndarray):
            n = _index_dims(it)
            if it.dtype != np.bool_ and d == axis:
                return k
            d, k = d + n, k + n
        elif it is not None:
            d += 1
    return axis


def _check_masks(idx: tuple, shape: tuple) -> None:
    """PyTorch's error for a bool mask whose shape differs from the dimensions it indexes,
    worded with the shape the tensor has once the basic items are applied (integers drop a
    dim, None and bools insert one)."""
    if not any(isinstance(it, np.ndarray) and it.dtype == np.bool_ for it in idx):
        return
    ndim = len(shape)
    rest = ndim - sum(_index_dims(it) for it in idx)
    d = 0
    res: list = []
    masks = []
    for it in idx:
        if it is Ellipsis:
            res.extend(shape[d:d + rest])
            d += rest
        elif it is None or isinstance(it, bool) or (isinstance(it, np.ndarray)
                                                   and it.dtype == np.bool_ and it.ndim == 0):
            res.append(1)
        elif isinstance(it, slice):
            res.append(len(range(*it.indices(shape[d]))) if d < ndim else 0)
            d += 1
        elif isinstance(it, np.ndarray):
            n = _index_dims(it)
            if it.dtype == np.bool_:
                masks.append((it, len(res)))
            res.extend(shape[d:d + n])
            d += n
        else:
            d += 1
    res.extend(shape[d:])
    for m, p in masks:
        for k, n in enumerate(m.shape):
            if p + k < len(res) and n != res[p + k]:
                raise IndexError(f"The shape of the mask {list(m.shape)} at index {k} does not "
                                 f"match the shape of the indexed tensor {res} at index {p + k}")


def getitem(input: Tensor, index: Any) -> Tensor:
    """``input[index]``: basic indexing gives views, advanced indexing gives copies."""
    if input._blevel:  # Note [Batched backward]
        r = _bcall(getitem, input, index)
        if r is not NotImplemented:
            return r
    idx, basic, name = _normalize_index(index, input._data.shape)
    return _getitem(input, idx, basic, name, index)


def _getitem(input: Tensor, idx: tuple, basic: bool, name: str, index: Any = None) -> Tensor:
    """``getitem`` with a normalized index (``_normalize_index``); ``index`` is the user's
    (Note [Saved index tensors])."""
    x = input._data
    if not basic:
        if _dispatch._META:      # a mask's indices depend on its values (Note [Meta arrays])
            for o in idx:
                if type(o) is _meta.MetaArray and o.dtype == np.bool_:
                    raise _dispatch._meta_refusal("nonzero")
        indices = _index_tensors(idx, x.ndim, index)
        split = _split_advanced(idx, x.shape)
        if split is not None:
            view = _getitem(input, split[0], True, _basic_name(split[0]))
            input, x, idx = view, view._data, split[1]
        _check_masks(idx, x.shape)
    try:
        if basic:
            return apply(_BASIC[name], (input,), (x,), (idx,))
        return apply(INDEX, (input,), (x,), (idx, indices))
    except IndexError as e:
        raise _index_error(e, x.shape, idx) from None


def _split_advanced(idx: tuple, shape: tuple) -> Any:
    """A mixed index, the PyTorch way: its basic part (integers, slices, None) is applied first,
    as a view, and the advanced part (index arrays, masks) to that view. This decides where
    the indexed dimensions go (``x[0, :, [1, 2]]`` has shape ``(3, 2, 5)`` for ``x`` of shape
    ``(2, 3, 4, 5)``, not NumPy's ``(2, 3, 5)``). Returns ``(view_index, advanced_index)``, or
    None when the basic part selects everything."""
    view_items: list = []
    adv_items: list = []
    several = sum(isinstance(o, (bool, np.ndarray)) for o in idx) > 1
    view_ndim = len(shape)                        # the view's dims, ``...`` included
    used = 0                                      # the view's dims the items besides ``...`` use
    for it in idx:
        if several and isinstance(it, np.ndarray) and it.ndim == 0 and it.dtype == np.bool_:
            it = bool(it)                         # a 0-d bool tensor: a Python bool
        if isinstance(it, np.ndarray):
            n = it.ndim if it.dtype == np.bool_ else 1
            view_items.extend([slice(None)] * n)
            adv_items.append(it)
            used += n
        elif isinstance(it, bool):
            # A Python bool is a new dimension of the view indexed by a 0-d mask: as the only
            # advanced item it stays where it stands, of size 1 (True) or 0 (False); beside
            # others it is the index [0] or [] (broadcast with them, as PyTorch's)
            view_items.append(None)
            view_ndim += 1
            used += 1
            if several:
                adv_items.append(np.arange(int(it), dtype=np.int64))
            else:
                adv_items.append(slice(None) if it else slice(0, 0))
        elif isinstance(it, int):
            view_items.append(it)                 # the dimension is gone from the view
            view_ndim -= 1
        elif it is Ellipsis:
            view_items.append(it)
            adv_items.append(it)
        else:                                     # a slice or None: a dimension of the view
            view_items.append(it)
            adv_items.append(slice(None))
            view_ndim += it is None
            used += 1
    view_idx = tuple(view_items)
    if _selects_everything(view_idx, shape):
        return None
    # ``...`` spans the view's dims no other item uses: none at all leaves the advanced items
    # around it adjacent (PyTorch's rule; NumPy would move their dims first)
    adv = tuple(x for it in adv_items
                for x in ([slice(None)] * (view_ndim - used) if it is Ellipsis else [it]))
    return view_idx, adv


def _getitem_raw(g: Tensor, idx: tuple, indices: Any = None) -> Tensor:
    # Used by the backward of the indexing backwards: same index, recorded as an op.
    basic = all(not isinstance(i, np.ndarray) and not isinstance(i, bool) for i in idx)
    if basic:
        return apply(_BASIC["SliceBackward0"], (g,), (g._data,), (idx,))
    if indices is None:
        indices = _index_tensors(idx, g._data.ndim)
    return apply(INDEX, (g,), (g._data,), (idx, indices))


def _zero_at_fwd(g, index):
    out = g.copy()
    if _empty_selection(g.shape, index) is None:
        out[index] = 0
    return out


ZERO_AT: Op = Op("_zero_at", "IndexPutBackward0", _zero_at_fwd,
             lambda ctx, g: apply(ZERO_AT, (g,), (g._data,), ctx._args), args=("indices",),
             jvp=linear)


def _index_put_fwd(x, v, index, indices=None):
    out = x.copy()
    try:
        out[index] = v
    except IndexError:
        if _empty_selection(x.shape, index) is None:
            raise
        np.broadcast_to(v, _empty_selection(x.shape, index))    # the shapes must still agree
    return out


def _saved_indices(ctx) -> Any:
    """The unpacked index tensors of an index_put node (None for a basic setitem)."""
    saved = ctx.saved
    return TensorList(saved[0]) if saved else None


def _index_put_vjp(ctx, g):
    idx = ctx._args[0]
    indices = _saved_indices(ctx)
    gx = apply(ZERO_AT, (g,), (g._data,), (idx,)) if ctx.needs_input_grad(0) else None
    gv = _getitem_raw(g, idx, indices) if ctx.needs_input_grad(1) else None
    return gx, gv


# Args: the NumPy index and the index tensors (Note [Saved index tensors]).
INDEX_PUT = Op("index_put", "IndexPutBackward0", _index_put_fwd, _index_put_vjp,
               inputs=("self", "values"), args=("np_index", "indices"), saves=("indices",),
               jvp=linear)
# ``y[basic index] = v`` writes into a view of ``y`` (PyTorch's CopySlices node); when the index
# selects all of ``y`` the write goes to ``y`` itself: ``copy_`` (CopyBackwards) or, for a 0-d
# value, ``fill_`` (FillBackward3). All compute an out-of-place index_put.
SETITEM_VIEW = Op("setitem", "CopySlices", _index_put_fwd, _index_put_vjp,
                  inputs=("self", "values"), args=("indices",), jvp=linear)
SETITEM_COPY = Op("setitem", "CopyBackwards", _index_put_fwd, _index_put_vjp,
                  inputs=("self", "values"), args=("indices",), jvp=linear,
                  full_name="torch::autograd::CopyBackwards")
SETITEM_FILL = Op("setitem", "FillBackward3", _index_put_fwd, _index_put_vjp,
                  inputs=("self", "values"), args=("indices",), jvp=linear)


def _index_put_acc_fwd(x, v, index, indices):
    out = x.copy()
    try:
        np.add.at(out, index, v)
    except IndexError:
        if _empty_selection(x.shape, index) is None:
            raise
    return out


def _index_put_acc_vjp(ctx, g):
    indices = _saved_indices(ctx)
    return (g if ctx.needs_input_grad(0) else None,
            _getitem_raw(g, ctx._args[0], indices) if ctx.needs_input_grad(1) else None)


INDEX_PUT_ACC = Op("index_put", "IndexPutBackward0", _index_put_acc_fwd, _index_put_acc_vjp,
                   inputs=("self", "values"), args=("np_index", "indices"), saves=("indices",),
                   jvp=linear)


def _selects_everything(idx: tuple, shape: tuple) -> bool:
    """True if the basic index ``idx`` is ``...`` and full step-1 slices only."""
    if any(not (it is Ellipsis or isinstance(it, slice)) for it in idx):
        return False
    if sum(it is Ellipsis for it in idx) > 1:
        return False
    pos = idx.index(Ellipsis) if Ellipsis in idx else len(idx)
    before, after = idx[:pos], idx[pos + 1:]
    if len(before) + len(after) > len(shape):
        return False
    dims = list(zip(before, shape)) + list(zip(after, shape[len(shape) - len(after):]))
    return all(sl.indices(n) == (0, n, 1) for sl, n in dims)


def setitem_writes_view(input: Tensor, index: Any) -> bool:
    """True if ``input[index] = v`` writes through a view (a basic index not selecting all)."""
    idx, basic, _ = _normalize_index(index, input._data.shape)
    return _writes_view(idx, basic, input._data.shape)


def _writes_view(idx: tuple, basic: bool, shape: tuple) -> bool:
    if not basic:
        return _split_advanced(idx, shape) is not None
    return not _selects_everything(idx, shape)


def setitem(input: Tensor, index: Any, values: Any, indices: Any = None) -> Tensor:
    """The out-of-place result of ``input[index] = values``, recorded like PyTorch records it;
    ``indices``: the index tensors to save (Note [Saved index tensors]), else from ``index``."""
    if _bmarked((input, values)):  # Note [Batched backward]
        r = _bcall(setitem, input, index, values, indices)
        if r is not NotImplemented:
            return r
    idx, basic, _ = _normalize_index(index, input._data.shape)
    if not basic:
        if indices is None:
            indices = _index_tensors(idx, input._data.ndim, index)
        return _index_put(input, idx, values, indices)
    v = values if isinstance(values, Tensor) else to_tensor(values)
    x = input._data
    if not _selects_everything(idx, x.shape):
        op = SETITEM_VIEW
    else:
        op = SETITEM_FILL if v._data.ndim == 0 else SETITEM_COPY
    vd = v._data if v._data.dtype == x.dtype else _dtype.cast(v._data, x.dtype)
    try:
        return apply(op, (input, v), (x, vd), (idx,))
    except IndexError as e:
        raise _index_error(e, x.shape, idx) from None
    except ValueError:
        raise _setitem_shape_error(vd.shape, x[idx].shape, v._data.dtype) from None


def _setitem_shape_error(value_shape: tuple, target: tuple, dtype: Any = np.float32) \
        -> RuntimeError:
    if len(value_shape) > len(target):
        name = _dtype._FROM_NP[np.dtype(dtype)]._torch_name
        return RuntimeError(f"expand(torch.{name}Tensor{{{list(value_shape)}}}, size="
                            f"{list(target)}): the number of sizes provided ({len(target)}) must "
                            "be greater or equal to the number of dimensions in the tensor "
                            f"({len(value_shape)})")
    lead = len(target) - len(value_shape)
    for i, s in enumerate(value_shape):
        if s != 1 and s != target[lead + i]:
            return RuntimeError(
                f"The expanded size of the tensor ({target[lead + i]}) must match the existing "
                f"size ({s}) at non-singleton dimension {lead + i}.  Target sizes: "
                f"{list(target)}.  Tensor sizes: {list(value_shape)}")
    return RuntimeError(f"shape mismatch: value tensor of shape {list(value_shape)} cannot be "
                        f"broadcast to indexing result of shape {list(target)}")


def index_put_indices(input: Tensor, indices: Any, values: Any, accumulate: bool = False) \
        -> Tensor:
    """PyTorch's ``index_put(indices, values, accumulate)``: ``indices`` is a tuple of index
    tensors (one per leading dimension); with ``accumulate`` repeated positions add up."""
    if _VMAP:
        _refuse_mask(indices)
    if _bmarked((input, values)):  # Note [Batched backward]
        r = _bcall(index_put_indices, input, indices, values, accumulate)
        if r is not NotImplemented:
            return r
    if isinstance(indices, Tensor) or not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' (position 1) must be tuple of Tensors, "
                        f"not {type(indices).__name__}")
    index = tuple(indices)
    if not accumulate:
        return index_put(input, index, values)
    idx, _, _ = _normalize_index(index, input._data.shape)
    saved = _index_tensors(idx, input._data.ndim, index)
    v = values if isinstance(values, Tensor) else to_tensor(values)
    x = input._data
    vd = v._data if v._data.dtype == x.dtype else _dtype.cast(v._data, x.dtype)
    _check_masks(idx, x.shape)
    try:
        return apply(INDEX_PUT_ACC, (input, v), (x, vd), (idx, saved))
    except IndexError as e:
        raise _index_error(e, x.shape, idx) from None
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(vd.shape)} cannot be "
                           f"broadcast to indexing result of shape {list(x[idx].shape)}") from None


def index_put(input: Tensor, index: Any, values: Any) -> Tensor:
    """Out-of-place ``input[index] = values`` (values broadcast); differentiable in both."""
    if _VMAP:
        _refuse_mask(index)
    if _bmarked((input, values)):  # Note [Batched backward]
        r = _bcall(index_put, input, index, values)
        if r is not NotImplemented:
            return r
    idx, _, _ = _normalize_index(index, input._data.shape)
    return _index_put(input, idx, values, _index_tensors(idx, input._data.ndim, index))


def _index_put(input: Tensor, idx: tuple, values: Any, indices: TensorList) -> Tensor:
    """``index_put`` with a normalized index and the index tensors to save."""
    v = values if isinstance(values, Tensor) else to_tensor(values)
    vd = (v._data if v._data.dtype == input._data.dtype
          else _dtype.cast(v._data, input._data.dtype))
    _check_masks(idx, input._data.shape)
    _check_mask_fill(idx, v, input._data.dtype)
    try:
        return apply(INDEX_PUT, (input, v), (input._data, vd), (idx, indices))
    except IndexError as e:
        raise _index_error(e, input._data.shape, idx) from None
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(v._data.shape)} cannot "
                           f"be broadcast to indexing result of shape "
                           f"{list(input._data[idx].shape)}") from None


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """Take index ``index`` along ``dim``, dropping that dim; returns a view."""
    if input._blevel:  # Note [Batched backward]
        r = _bcall(select, input, dim, index)
        if r is not NotImplemented:
            return r
    x = input._data
    if x.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, x.ndim)
    n = x.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(x.shape)} at dimension {d}")
    idx = (slice(None),) * d + (int(index),)
    return apply(_BASIC["SelectBackward0"], (input,), (x,), (idx,))


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The ``length`` entries of ``dim`` starting at ``start``, as a view."""
    if input._blevel:  # Note [Batched backward]
        r = _bcall(narrow, input, dim, start, length)
        if r is not NotImplemented:
            return r
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if isinstance(start, Tensor):
        if start._data.ndim != 0 or start._data.dtype.kind not in "iu":
            raise RuntimeError("start must be an 0-dim integral Tensor.")
        start = int(start._data)
    for v in (start, length):
        if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
            raise TypeError(f"narrow() received an invalid combination of arguments - got "
                            f"({type_name(dim)}, {type_name(start)}, {type_name(length)}), "
                            "but expected one of:\n * (int dim, Tensor start, int length)\n"
                            " * (int dim, int start, int length)")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = wrap_dim(dim, x.ndim)
    n = x.shape[d]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got "
                         f"{start})")
    if start < 0:
        start += n
    if start > n - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    idx = (slice(None),) * d + (slice(start, start + length),)
    return apply(_BASIC["SliceBackward0"], (input,), (x,), (idx,))


# ---------------------------------------------------------------------------- unbind / split
def _unbind_fwd(x, dim):
    return tuple(x[(slice(None),) * dim + (i,)] for i in range(x.shape[dim]))


UNBIND = Op("unbind", "UnbindBackward0", _unbind_fwd,
            lambda ctx, *gs: stack(gs, ctx._args[0]), args=("dim",), view=True, num_outputs=-1,
            jvp=linear)


def _split_fwd(x, dim, bounds):
    return tuple(x[(slice(None),) * dim + (slice(a, b),)] for a, b in bounds)


SPLIT = Op("split", "SplitBackward0", _split_fwd, lambda ctx, *gs: cat(gs, ctx._args[0]),
           args=("dim", "bounds"), view=True, num_outputs=-1, jvp=linear)
SPLIT_SIZES = Op("split", "SplitWithSizesBackward0", _split_fwd,
                 lambda ctx, *gs: cat(gs, ctx._args[0]), args=("dim", "bounds"), view=True,
                 num_outputs=-1, jvp=linear)


def unbind(input: Tensor, dim: int = 0) -> tuple:
    """Split ``input`` along ``dim`` into a tuple of slices, each without that dim.

    >>> import ndgrad
    >>> [r.tolist() for r in ndgrad.tensor([[1, 2], [3, 4]]).unbind()]
    [[1, 2], [3, 4]]
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(unbind, input, dim)
        if r is not NotImplemented:
            return r
    x = input._data
    if x.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, x.ndim)
    return apply(UNBIND, (input,), (x,), (d,))


def split(input: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple:
    """Cut ``input`` along ``dim`` into pieces of a given size (the last may be
    smaller), or of the sizes in a list; returns a tuple of views."""
    if not isinstance(input, Tensor):
        # ndgrad.split, like torch.split, is a function calling the argument's own split
        return input.split(split_size_or_sections, dim)
    if input._blevel:  # Note [Batched backward]
        r = _bcall(split, input, split_size_or_sections, dim)
        if r is not NotImplemented:
            return r
    x = input._data
    size = split_size_or_sections
    if not _signature._is_int(dim):         # argument types before values, as PyTorch
        raise TypeError(f"split() received an invalid combination of arguments - got (Tensor, "
                        f"{type_name(size)}, {type_name(dim)}), but expected 'int dim'")
    if isinstance(size, Tensor) and size._data.size == 1:
        size = int(size._data.reshape(()))      # PyTorch's Tensor.split reads it as an int
    if isinstance(size, bool):
        raise TypeError("split() received an invalid combination of arguments - got (Tensor, "
                        "bool, int), but expected one of:\n * (Tensor input, int split_size, "
                        "int dim = 0)\n * (Tensor input, tuple of ints split_size, int dim = 0)")
    if not isinstance(size, int):
        return _split_with_sizes(input, _split_sizes(size), dim)
    if x.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    if size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
    d = wrap_dim(dim, x.ndim)
    n = x.shape[d]
    if size == 0 and n:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                           f"dimension size of {n}")
    starts = (list(range(0, n, size)) or [0]) if size > 0 else [0]
    bounds = tuple((s, min(s + size, n)) for s in starts)
    return apply(SPLIT, (input,), (x,), (d, bounds))


def _split_sizes(sizes: Any) -> list:
    """``split``'s list of sizes, with PyTorch's TypeErrors (ints or 0-d int tensors only)."""
    head = "split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints"
    if not isinstance(sizes, (list, tuple)):
        raise TypeError(f"{head}, not {type_name(sizes)}")
    out = []
    for i, k in enumerate(sizes):
        if isinstance(k, Tensor) and k._data.ndim == 0 and k._data.dtype.kind in "iu":
            k = int(k._data)
        elif not isinstance(k, int) or isinstance(k, bool):
            raise TypeError(f"{head}, but found element of type {type_name(k)} at pos {i}")
        out.append(k)
    return out


def _split_with_sizes(input: Tensor, sizes: list, dim: int) -> tuple:
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    if any(k < 0 for k in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, "
                           f"but got split_sizes={sizes}")
    d = wrap_dim(dim, x.ndim)
    n = x.shape[d]
    if sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                           f"tensor's size at dimension {d}), but got split_sizes={sizes}")
    bounds, s = [], 0
    for k in sizes:
        bounds.append((s, s + k))
        s += k
    return apply(SPLIT_SIZES, (input,), (x,), (d, tuple(bounds)))


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """Cut ``input`` along ``dim`` into at most ``chunks`` views of near-equal size.

    >>> import ndgrad
    >>> [c.tolist() for c in ndgrad.arange(5).chunk(2)]
    [[0, 1, 2], [3, 4]]
    """
    if input._blevel:  # Note [Batched backward]
        r = _bcall(chunk, input, chunks, dim)
        if r is not NotImplemented:
            return r
    if isinstance(chunks, Tensor) and chunks._data.ndim == 0 and chunks._data.dtype.kind in "iu":
        chunks = int(chunks._data)
    if not isinstance(chunks, int) or isinstance(chunks, bool):
        raise TypeError(f"chunk(): argument 'chunks' (position 1) must be int, not "
                        f"{type_name(chunks)}")
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    n = input._data.shape[wrap_dim(dim, input._data.ndim)]
    if n == 0:
        return _split_with_sizes(input, [0] * chunks, dim)   # ``chunks`` empty pieces
    return split(input, -(-n // chunks), dim)


# ---------------------------------------------------------------------------- cat / stack
def _cat_vjp(ctx, g):
    dim = ctx._args[0]
    out, start = [], 0
    for i, (shape, _) in enumerate(ctx._input_meta):
        n = shape[dim] if len(shape) > dim and len(shape) else 0
        if ctx.needs_input_grad(i):
            out.append(narrow(g, dim, start, n) if len(shape) else None)
        else:
            out.append(None)
        start += n
    return tuple(out)


CAT = Op("cat", "CatBackward0", lambda *arrs: np.concatenate(arrs[:-1], axis=arrs[-1]),
         _cat_vjp, inputs=(), args=("dim",), jvp=linear)
STACK = Op("stack", "StackBackward0", lambda *arrs: np.stack(arrs[:-1], axis=arrs[-1]),
           lambda ctx, g: tuple(g.select(ctx._args[0], i) if ctx.needs_input_grad(i) else None
                                for i in range(len(ctx._input_meta))),
           inputs=(), args=("dim",), jvp=linear)


def _tensor_list(tensors: Any, fn: str) -> list:
    if isinstance(tensors, Tensor) or not isinstance(tensors, Sequence):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    if len(tensors) == 0:
        raise ValueError(f"torch.{fn}(): expected a non-empty list of Tensors") if fn == "cat" \
            else RuntimeError("stack expects a non-empty TensorList")
    for i, t_ in enumerate(tensors):
        if not isinstance(t_, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t_).__name__}")
    return list(tensors)


def _promoted(tensors: list) -> list:
    dts = {t_._data.dtype for t_ in tensors}
    if len(dts) == 1:
        return [t_._data for t_ in tensors]
    rt = tensors[0].dtype
    for t_ in tensors[1:]:
        rt = _dtype.promote_types(rt, t_.dtype)
    return [t_._data.astype(rt.np, copy=False) for t_ in tensors]


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate along an existing dimension."""
    if _bmarked(tensors):  # Note [Batched backward]
        r = _bcall(cat, tensors, dim)
        if r is not NotImplemented:
            return r
    ts = _tensor_list(tensors, "cat")
    for i, t_ in enumerate(ts):
        if t_._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    arrays = _promoted(ts)
    nd = max(a.ndim for a in arrays)
    d = wrap_dim(dim, nd)
    ref = next(a for a in arrays if a.ndim == nd)
    for i, a in enumerate(arrays):
        if a.ndim == 1 and a.shape[0] == 0 and nd > 1:
            continue  # PyTorch's legacy rule: 1-D empty tensors are skipped
        if a.ndim != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and "
                               f"{a.ndim}")
        for k in range(nd):
            if k != d and a.shape[k] != ref.shape[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{ref.shape[k]} but got size {a.shape[k]} for tensor number {i} in the list.")
    keep = [(t_, a) for t_, a in zip(ts, arrays) if not (a.ndim == 1 and a.shape[0] == 0
                                                         and nd > 1)]
    return _apply_varargs(CAT, [k[0] for k in keep], [k[1] for k in keep], d)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Stack along a new dimension."""
    if _bmarked(tensors):  # Note [Batched backward]
        r = _bcall(stack, tensors, dim)
        if r is not NotImplemented:
            return r
    ts = _tensor_list(tensors, "stack")
    arrays = _promoted(ts)
    d = wrap_dim(dim, arrays[0].ndim + 1)
    for i, a in enumerate(arrays[1:], 1):
        if a.shape != arrays[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(arrays[0].shape)} at entry 0 and {list(a.shape)} at entry "
                               f"{i}")
    return _apply_varargs(STACK, ts, arrays, d)


def _apply_varargs(op: Op, ts: list, arrays: list, d: int) -> Tensor:
    # The forward receives the arrays then the dim; the node stores dim as its argument.
    return apply(op, tuple(ts), tuple(arrays), (d,))


def contiguous(input: Tensor, memory_format: Any = None) -> Tensor:
    """``input`` itself when its data is contiguous (in ``memory_format``, by default C order),
    else a copy that is (CloneBackward0)."""
    x = input._data
    if memory_format is None:
        if x.flags.c_contiguous:
            return input
        fmt = _layout.contiguous_format
    else:
        fmt = _layout.check(memory_format, "contiguous")
        if _layout.is_contiguous(x, fmt):
            return input
        if fmt is _layout.preserve_format:
            raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
        _layout.check_rank(x.ndim, fmt)
    return apply(CLONE_FMT, (input,), (x,), (fmt,))


# ---------------------------------------------------------------------------- diagonal, unfold,
# as_strided, real/imag: views whose backward scatters through the generic view index map
# (ops/views_inplace.py ``view_scatter``), which also sums overlapping elements (unfold).
def _single_step_vjp(ctx, g):
    return view_scatter(g, ((ctx._op, ctx._args, None),), ctx.input_shape(0),
                        ctx.input_dtype(0))


def _diagonal_fwd(x, offset, d1, d2):
    rest = [i for i in range(x.ndim) if i not in (d1, d2)]
    y = np.transpose(x, rest + [d1, d2])
    y = y[..., :, offset:] if offset >= 0 else y[..., -offset:, :]
    n = max(0, min(y.shape[-2], y.shape[-1]))
    # In bounds: element i is y[..., i, i] with i < both sizes of y's last two dimensions.
    return np.lib.stride_tricks.as_strided(
        y, shape=y.shape[:-2] + (n,), strides=y.strides[:-2] + (y.strides[-2] + y.strides[-1],),
        writeable=x.flags.writeable)


DIAGONAL = Op("diagonal", "DiagonalBackward0", _diagonal_fwd, _single_step_vjp,
              args=("offset", "dim1", "dim2"), view=True, jvp=linear)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal(s) of ``input`` w.r.t. ``dim1``/``dim2`` as a (writable) view."""
    n = input._data.ndim
    a, b = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return apply(DIAGONAL, (input,), (input._data,), (int(offset), a, b))


def _unfold_fwd(x, dim, size, step):
    if x.ndim == 0:                   # one window, of size 0 or 1: a 1-d view
        return x.reshape(1)[:size]
    # Overlapping windows (step < size) share memory: read-only, as PyTorch refuses writes to
    # them; disjoint windows are writable.
    w = np.lib.stride_tricks.sliding_window_view(x, size, axis=dim,
                                                 writeable=step >= size and x.flags.writeable)
    return w[(slice(None),) * dim + (slice(None, None, step),)]


UNFOLD = Op("unfold", "UnfoldBackward0", _unfold_fwd, _single_step_vjp,
            args=("dimension", "size", "step"), view=True, jvp=linear)


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """All windows of ``size`` elements along ``dimension``, ``step`` apart (a view)."""
    x = input._data
    d = wrap_dim(dimension, x.ndim)
    n = x.shape[d] if x.ndim else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return apply(UNFOLD, (input,), (x,), (d, int(size), int(step)))


# Note [Storage]
# A tensor's storage is the ndarray at the end of its data's chain of bases (tensor.py
# ``_storage_root``), from that array's first element to the end of its memory
# (``_storage_nbytes``). ``storage_offset()`` and as_strided's offsets count elements of the
# tensor's dtype from there. as_strided refuses any layout reaching outside the storage, as
# PyTorch's setStorage does; ``_storage_view`` is the one place that builds an array from a memory
# address, and checks the bounds again itself.
# Replaying a view on other arrays (gradients, index maps, tangents laid out differently) cannot
# use memory, so there as_strided maps elements by storage position (views_inplace.py
# ``as_strided_gather``): element p of the result is the input's element at position
# ``offset + p . stride``, or 0 where the input has none; a gradient there is dropped, as
# PyTorch's AsStridedBackward0 drops it. Each as_strided step records its input's geometry
# (``_geometry``) for this, and its forward uses memory only for an array with exactly that
# geometry (the input itself, or a tangent laid out like it). An as_strided view of a view is
# recorded as one step from the root base, the way PyTorch regenerates views: in-place writes
# through it (CopySlices) and its regenerated history reach all of the base it reads.


class _StorageWindow:
    """An ``__array_interface__`` over part of a storage; keeps the storage alive (``base``)."""

    __slots__ = ("__array_interface__", "base")

    def __init__(self, interface: dict, base: np.ndarray) -> None:
        self.__array_interface__ = interface
        self.base = base


def _geometry(x: np.ndarray) -> tuple:
    """(shape, strides, storage offset, storage size) of ``x``, in elements of its dtype."""
    root = _storage_root(x)
    item = x.itemsize
    return (x.shape, tuple(s // item for s in x.strides), (_ptr(x) - _ptr(root)) // item,
            _storage_nbytes(root) // item)


def _storage_view(x: np.ndarray, size: tuple, stride: tuple, offset: int) -> np.ndarray:
    """The array with this layout over ``x``'s storage (Note [Storage])."""
    root = _storage_root(x)
    item = x.itemsize
    if (len(size) != len(stride) or offset < 0 or any(n < 0 for n in size)
            or any(s < 0 for s in stride)
            or (0 not in size and (offset + 1 + sum((n - 1) * s for n, s in zip(size, stride)))
                * item > _storage_nbytes(root))):
        raise RuntimeError(f"as_strided: sizes {list(size)}, strides {list(stride)} and storage "
                           f"offset {offset} are out of bounds for the storage")
    # PyTorch refuses writes where elements share memory along a dimension (stride 0).
    writeable = root.flags.writeable and (0 in size or not any(
        s == 0 and n > 1 for n, s in zip(size, stride)))
    # Strides and an offset NumPy cannot hold in bytes only occur where they address nothing
    # (a dimension of size 1, an empty view): there any value does.
    byte_strides = tuple(s * item if s * item <= _INT64_MAX else 0 for s in stride)
    address = _ptr(root) + offset * item
    if address > _INT64_MAX:
        address = _ptr(root)
    window = _StorageWindow({"version": 3, "shape": tuple(size), "typestr": f"|V{item}",
                             "strides": byte_strides, "data": (address, not writeable)}, root)
    return np.asarray(window).view(x.dtype)


def _as_strided_fwd(x, size, stride, storage_offset, geometry):
    if _geometry(x) == geometry:
        return _storage_view(x, size, stride, geometry[2] if storage_offset is None
                             else storage_offset)
    return as_strided_gather(x, size, stride, storage_offset, geometry)


AS_STRIDED = Op("as_strided", "AsStridedBackward0", _as_strided_fwd, _single_step_vjp,
                args=("size", "stride", "storage_offset", "self_geometry"), view=True,
                jvp=linear)


def _int_value(v: Any) -> Any:
    """``v`` as a Python int where PyTorch takes it as one, else None."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, Tensor) and v._data.dtype.kind in "iu" and v._data.size == 1:
        return int(v._data.reshape(()))
    return None


def _int_list(v: Any, fn: str, name: str, pos: int) -> tuple:
    """A tuple-of-ints argument, checked as PyTorch's argument parser checks it."""
    if isinstance(v, Tensor) or not isinstance(v, (tuple, list)):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be tuple of ints, not "
                        f"{type(v).__name__}")
    out = []
    for i, e in enumerate(v):
        n = _int_value(e)
        if n is None:
            raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be tuple of ints, "
                            f"but found element of type {type(e).__name__} at pos {i}")
        if not -_INT64_MAX - 1 <= n <= _INT64_MAX:
            raise TypeError(f"{fn}(): argument '{name}' failed to unpack the object at pos "
                            f"{i + 1} with error \"Overflow when unpacking long long\"")
        out.append(n)
    return tuple(out)


def _check_as_strided(size: tuple, stride: tuple, offset: int, item: int, nbytes: int) -> None:
    """PyTorch's checks of an as_strided layout against a storage of ``nbytes``, in its order."""
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    overflow = RuntimeError(f"Storage size calculation overflowed with sizes={list(size)}"
                            + (f" and strides={list(stride)}" if size else ""))
    if any(n < 0 and s != 0 for n, s in zip(size, stride)):
        raise overflow
    need = 0
    if 0 not in size:
        need = (offset + 1 + sum((n - 1) * s for n, s in zip(size, stride) if n > 0)) * item
        if need > _INT64_MAX:
            raise overflow
    if need > nbytes:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset}, and itemsize {item} requiring a storage size of "
                           f"{need} are out of bounds for storage of size {nbytes}")
    if any(n < 0 for n in size):
        raise RuntimeError("numel: integer multiplication overflow")
    _check_numel(size, item)


def _as_strided(input: Tensor, size: Any, stride: Any, storage_offset: Any, pos: int) -> Tensor:
    size = _int_list(size, "as_strided", "size", pos)
    stride = _int_list(stride, "as_strided", "stride", pos + 1)
    if storage_offset is not None:
        offset = _int_value(storage_offset)
        if offset is None:
            raise TypeError(f"as_strided(): argument 'storage_offset' (position {pos + 2}) must "
                            f"be int, not {type(storage_offset).__name__}")
        if not -_INT64_MAX - 1 <= offset <= _INT64_MAX:
            raise ValueError("Overflow when unpacking long long")
        storage_offset = offset
    x = input._data
    geometry = _geometry(x)
    offset = geometry[2] if storage_offset is None else storage_offset
    _check_as_strided(size, stride, offset, x.itemsize, _storage_nbytes(_storage_root(x)))
    out = apply(AS_STRIDED, (input,), (x,), (size, stride, storage_offset, geometry))
    base = input._base
    if base is not None and base._data.dtype == x.dtype:
        # One step from the root base (Note [Storage]).
        out._view_steps = ((AS_STRIDED, (size, stride, offset, _geometry(base._data)), None),)
    return out


def as_strided(input: Tensor, size: Any, stride: Any, storage_offset: Any = None) -> Tensor:
    """A view of ``input``'s storage with the given sizes and strides, starting
    ``storage_offset`` elements from the start of the storage (default: where ``input``
    starts). Overlapping strides are allowed; nothing outside the storage can be reached.

    >>> import ndgrad
    >>> x = ndgrad.arange(6.0)
    >>> x[2:].as_strided((2, 2), (1, 1), 1).tolist()
    [[1.0, 2.0], [2.0, 3.0]]
    """
    return _as_strided(input, size, stride, storage_offset, 2)


def tensor_as_strided(self: Tensor, size: Any, stride: Any, storage_offset: Any = None) -> Tensor:
    """``Tensor.as_strided`` (see ``as_strided``)."""
    return _as_strided(self, size, stride, storage_offset, 1)


REAL_VIEW = Op("real", "SelectBackward0", lambda x: x.real,
               lambda ctx, g: g.to(_dtype._FROM_NP[ctx.input_dtype(0)]), view=True, jvp=linear)
IMAG_VIEW = Op("imag", "SelectBackward0", lambda x: x.imag,
               # + 0: the real part is +0.0, as torch's zeros (g * 1j gives -0.0 where g < 0)
               lambda ctx, g: g.to(_dtype._FROM_NP[ctx.input_dtype(0)]) * 1j + 0, view=True,
               jvp=linear)


def real(input: Tensor) -> Tensor:
    """The real part as a view (``input`` itself for real tensors)."""
    if input._data.dtype.kind != "c":
        return input
    return apply(REAL_VIEW, (input,), (input._data,))


def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex tensor, as a view."""
    if input._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return apply(IMAG_VIEW, (input,), (input._data,))


# ---------------------------------------------------------------------------- triu / tril
def _tri_fwd(x: np.ndarray, diagonal: int, upper: bool) -> np.ndarray:
    m, n = x.shape[-2:]
    # np.tri(m, n, k): ones on and below diagonal k; triu keeps its complement of k - 1
    keep = np.tri(m, n, diagonal - 1 if upper else diagonal, dtype=bool)
    if upper:
        keep = ~keep
    out = np.zeros(x.shape, x.dtype)       # contiguous, as PyTorch's result
    np.copyto(out, x, where=keep)
    return out


TRIU = Op("triu", "TriuBackward0", lambda x, k: _tri_fwd(x, k, True),
          lambda ctx, g: triu(g, ctx._args[0]), args=("diagonal",), jvp=linear)
TRIL = Op("tril", "TrilBackward0", lambda x, k: _tri_fwd(x, k, False),
          lambda ctx, g: tril(g, ctx._args[0]), args=("diagonal",), jvp=linear)


def _tri(input: Tensor, diagonal: Any, op: Op) -> Tensor:
    # Argument types are checked by the declared signature (Note [Declared signatures]).
    x = input._data
    if x.ndim < 2:
        raise RuntimeError(f"{op.name}: input tensor must have at least 2 dimensions")
    return apply(op, (input,), (x,), (int(diagonal),))


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims of ``input`` (on and above ``diagonal``); the rest
    is zero.

    >>> import ndgrad
    >>> ndgrad.triu(ndgrad.ones(2, 3), 1)
    tensor([[0., 1., 1.],
            [0., 0., 1.]])
    """
    if isinstance(input, Tensor) and input._blevel:  # Note [Batched backward]
        r = _bcall(triu, input, diagonal)
        if r is not NotImplemented:
            return r
    return _tri(input, diagonal, TRIU)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims of ``input`` (on and below ``diagonal``); the rest
    is zero.

    >>> import ndgrad
    >>> ndgrad.tril(ndgrad.ones(2, 3))
    tensor([[1., 0., 0.],
            [1., 1., 0.]])
    """
    if isinstance(input, Tensor) and input._blevel:  # Note [Batched backward]
        r = _bcall(tril, input, diagonal)
        if r is not NotImplemented:
            return r
    return _tri(input, diagonal, TRIL)


def _check_mask_fill(idx: tuple, v: Tensor, dt: np.dtype) -> None:
    """PyTorch writes one element through a single mask as ``masked_fill_``: a mask made from
    uint8 data is refused and the value is read as a number (checked against ``dt``)."""
    if v._data.size != 1:
        return
    arrays = [it for it in idx if isinstance(it, np.ndarray)]
    if len(arrays) != 1 or arrays[0].dtype != np.bool_ or arrays[0].ndim == 0 or any(
            not (it is Ellipsis or (isinstance(it, slice) and it == slice(None)))
            for it in idx if not isinstance(it, np.ndarray)):
        return
    if isinstance(arrays[0], _ByteMask):
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           "unsigned char")
    _dtype.scalar_to(v._data.item(), _dtype._FROM_NP[dt])


def view_dtype(input: Tensor, dtype: _dtype.dtype) -> Tensor:
    """``x.view(dtype)``: the same memory read as ``dtype``. With another element size the last
    dim (of stride 1) is split or merged. Not differentiable, as in PyTorch."""
    x = input._data
    new = dtype.np
    a, b = x.dtype.itemsize, new.itemsize
    if a != b:
        src, dst = _dtype._FROM_NP[x.dtype]._torch_name, dtype._torch_name
        if x.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 to view {src} as {dst} (different "
                               "element sizes)")
        if x.shape[-1] != 1 and x.strides[-1] != a:
            raise RuntimeError(f"self.stride(-1) must be 1 to view {src} as {dst} (different "
                               f"element sizes), but got {x.strides[-1] // a}")
        if b > a and x.shape[-1] % (b // a):
            raise RuntimeError(f"self.size(-1) must be divisible by {b // a} to view {src} as "
                               f"{dst} (different element sizes), but got {x.shape[-1]}")
    try:
        return _wrap(x.view(new))
    except ValueError as e:
        raise RuntimeError(f"view(): cannot view as {dtype._torch_name}: {e}") from None


# ---------------------------------------------------------------------------- index_select
def _index_select_fwd(x: np.ndarray, dim: int, index: Tensor) -> np.ndarray:
    idx = index._data.reshape(-1)
    if x.ndim == 0:
        return x.reshape(1)[idx].reshape(())
    return np.take(x, idx, axis=dim)


def _index_add_zeros_fwd(g: np.ndarray, dim: int, index: Tensor, shape: tuple) -> np.ndarray:
    out = np.zeros(shape, dtype=g.dtype)
    idx = index._data.reshape(-1)
    if out.ndim == 0:
        out.reshape(1)[...] = g.reshape(-1).sum() if idx.size else 0
        return out
    np.add.at(np.moveaxis(out, dim, 0), idx, np.moveaxis(g, dim, 0))
    return out


INDEX_ADD_ZEROS = Op("_index_add_zeros", "IndexAddBackward0", _index_add_zeros_fwd,
                     lambda ctx, g: index_select(g, ctx._args[0], ctx._args[1]),
                     args=("dim", "index", "shape"), jvp=linear)


def _index_select_vjp(ctx, g):
    (index,) = ctx.saved
    return apply(INDEX_ADD_ZEROS, (g,), (g._data,), (ctx._args[0], index, ctx.input_shape(0)))


INDEX_SELECT = Op("index_select", "IndexSelectBackward0", _index_select_fwd, _index_select_vjp,
                  args=("dim", "index"), saves=("index",), jvp=linear)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries at ``index`` (a 1-d int64/int32 tensor) along ``dim``.

    >>> import ndgrad
    >>> ndgrad.tensor([[1, 2, 3], [4, 5, 6]]).index_select(1, ndgrad.tensor([2, 0]))
    tensor([[3, 1],
            [6, 4]])
    """
    if _bmarked((input, index)):  # Note [Batched backward]
        r = _bcall(index_select, input, dim, index)
        if r is not NotImplemented:
            return r
    x, idx = input._data, index._data
    d = wrap_dim(int(dim), x.ndim or 1)
    if idx.dtype != np.int64 and idx.dtype != np.int32:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if idx.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if x.ndim == 0 and idx.size != 1:
        raise RuntimeError("index_select(): Index to scalar can have only 1 value, got "
                           f"{idx.size} value(s)")
    n = x.shape[d] if x.ndim else 1
    bad = (idx >= n) | (idx < 0)
    if bad.any():
        if x.ndim > 1 and d == 1:     # PyTorch's kernel for dim 1 checks with its own words
            raise RuntimeError("INDICES element is out of DATA bounds, "
                               f"id={int(idx[bad].flat[0])} axis_dim={n}")
        raise IndexError("index out of range in self")
    return apply(INDEX_SELECT, (input,), (x,), (d, index))
