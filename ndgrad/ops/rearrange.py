"""Rearranging ops: flips, rolls, repeats, stacking and splitting, diagonal builders, the
``*_scatter`` ops, the ``*_copy`` variants of views, and aliases of existing views.

Ops of their own (``Op`` entries): flip, roll, rot90, repeat, block_diag, diag_embed,
narrow_copy, the scatters (select/slice/diagonal/as_strided), unsafe_split, fill, view_as_real,
view_as_complex, conj_physical and one copy op per view op (``PermuteBackward0_copy`` ...).
Everything else is composed from ndgrad ops the way PyTorch composes it, so the graph records
the same nodes (``fliplr`` records ``FlipBackward0``, ``hstack`` ``CatBackward0``,
``repeat_interleave`` a view of a clone of an expand ...). Results are views exactly where
PyTorch returns views.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> y = ndgrad.flip(x, (0,))
    >>> y.grad_fn.name(), y.tolist()
    ('FlipBackward0', [[3.0, 4.0], [1.0, 2.0]])
"""

from __future__ import annotations

import functools
import itertools
import warnings
from typing import Any, Callable

import numpy as np

from .. import _dtype
from ..tensor import Tensor, _wrap
from . import shape as _shape
from ._batching import call as _bcall, marked as _bmarked
from . import _dispatch
from ._dispatch import Op, apply
from ._jvp import linear, zero
from ._util import type_name, wrap_dim

__all__ = [
    "flip", "fliplr", "flipud", "roll", "rot90", "repeat", "tile", "repeat_interleave",
    "broadcast_to", "broadcast_tensors", "broadcast_shapes", "ravel", "swapdims", "moveaxis",
    "hstack", "vstack", "dstack", "column_stack", "row_stack", "atleast_1d", "atleast_2d",
    "atleast_3d", "meshgrid", "cartesian_prod", "combinations", "block_diag", "diag",
    "diag_embed", "diagflat", "tensor_split", "hsplit", "vsplit", "dsplit", "split_with_sizes",
    "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk", "unflatten", "narrow_copy",
    "select_scatter", "slice_scatter", "diagonal_scatter", "as_strided_scatter",
    "view_as_real", "view_as_complex", "conj_physical", "resolve_conj", "resolve_neg", "fill",
    "adjoint"]


def _batchable(fn: Callable) -> Callable:
    """Run ``fn`` on logical proxies when an argument is batched (Note [Batched backward])."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for a in itertools.chain(args, kwargs.values()):
            if (isinstance(a, Tensor) and a._blevel) or _bmarked(a):
                r = _bcall(fn, *args, **kwargs)
                if r is not NotImplemented:
                    return r
                break
        return fn(*args, **kwargs)
    return wrapper


def _dims(dims: Any, ndim: int, fn: str) -> tuple:
    """A tuple of distinct wrapped dims (an int is one dim)."""
    if isinstance(dims, (int, np.integer)):
        dims = (int(dims),)
    out = tuple(wrap_dim(int(d), max(ndim, 1)) for d in dims)
    seen: set = set()
    for d in out:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)
    return out


# ---------------------------------------------------------------------------- flip / roll / rot90
def _flip_fwd(x: np.ndarray, dims: tuple) -> np.ndarray:
    if x.ndim == 0:
        return x.copy()
    return np.flip(x, dims).copy()


FLIP = Op("flip", "FlipBackward0", _flip_fwd, lambda ctx, g: flip(g, ctx._args[0]),
          args=("dims",), jvp=linear)


@_batchable
def flip(input: Tensor, dims: Any) -> Tensor:
    """Reverse the order of elements along ``dims`` (a copy).

    >>> import ndgrad
    >>> ndgrad.flip(ndgrad.arange(3), (0,)).tolist()
    [2, 1, 0]
    """
    x = input._data
    return apply(FLIP, (input,), (x,), (_dims(dims, x.ndim, "flip"),))


@_batchable
def fliplr(input: Tensor) -> Tensor:
    """Flip the columns (dim 1); ``input`` needs at least 2 dims."""
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@_batchable
def flipud(input: Tensor) -> Tensor:
    """Flip the rows (dim 0); ``input`` needs at least 1 dim."""
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def _roll_fwd(x: np.ndarray, shifts: tuple, dims: tuple) -> np.ndarray:
    if not dims:
        return np.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    return np.roll(x, shifts, axis=dims)


ROLL = Op("roll", "RollBackward0", _roll_fwd,
          lambda ctx, g: _roll(g, tuple(-s for s in ctx._args[0]), ctx._args[1]),
          args=("shifts", "dims"), jvp=linear)


def _roll(g: Tensor, shifts: tuple, dims: tuple) -> Tensor:
    return apply(ROLL, (g,), (g._data,), (shifts, dims))


def _int_tuple(v: Any) -> tuple:
    if isinstance(v, (int, np.integer)) or (isinstance(v, Tensor) and v._data.ndim == 0):
        return (int(v),)
    return tuple(int(e) for e in v)


@_batchable
def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Shift elements cyclically by ``shifts`` along ``dims`` (over the flattened tensor when no
    dims are given).

    >>> import ndgrad
    >>> ndgrad.roll(ndgrad.arange(4), 1).tolist()
    [3, 0, 1, 2]
    """
    x = input._data
    shifts = _int_tuple(shifts)
    dims = () if dims is None else _int_tuple(dims)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) == 1:
        return apply(ROLL, (input,), (x,), (shifts, ()))
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    dims = tuple(wrap_dim(d, x.ndim) for d in dims)
    return apply(ROLL, (input,), (x,), (shifts, dims))


ROT90 = Op("rot90", "Rot90Backward0",
           lambda x, k, dims: np.rot90(x, k, dims).copy(),
           lambda ctx, g: _rot90(g, -ctx._args[0], ctx._args[1]), args=("k", "dims"),
           jvp=linear)


def _rot90(g: Tensor, k: int, dims: tuple) -> Tensor:
    return apply(ROT90, (g,), (g._data,), (k % 4, dims))


@_batchable
def rot90(input: Tensor, k: int = 1, dims: Any = (0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``, from the first towards the
    second dim."""
    x = input._data
    dims = (0, 1) if dims is None else tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {x.ndim}")
    a, b = wrap_dim(int(dims[0]), x.ndim), wrap_dim(int(dims[1]), x.ndim)
    if a == b:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {a} and dim1 "
                           f"= {b}")
    return apply(ROT90, (input,), (x,), (int(k) % 4, (a, b)))


# ---------------------------------------------------------------------------- repeat / tile
def _repeat_vjp(ctx, g):
    reps = ctx._args[0]
    shape = tuple(ctx.input_shape(0))
    lead = len(reps) - len(shape)
    # (leading repeats, then (repeat, size) pairs): the sum over the repeats has the input's
    # shape, not a view of it (torch's gradient is no view)
    split = list(reps[:lead])
    for r, s in zip(reps[lead:], shape):
        split += [r, s]
    dims = tuple(range(lead)) + tuple(range(lead, lead + 2 * len(shape), 2))
    return g.reshape(split).sum(dims)


REPEAT = Op("repeat", "RepeatBackward0", lambda x, reps: np.tile(x, reps),
            _repeat_vjp, args=("repeats",), jvp=linear)


@_batchable
def repeat(input: Tensor, *repeats: Any) -> Tensor:
    """Tile ``input`` ``repeats[i]`` times along each dim (leading repeats add dims)."""
    if len(repeats) == 1 and isinstance(repeats[0], (tuple, list)):
        repeats = tuple(repeats[0])
    reps = tuple(int(r) for r in repeats)
    x = input._data
    if len(reps) < x.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if any(r < 0 for r in reps):       # PyTorch reports the result's sizes
        sizes = [n * r for n, r in zip((1,) * (len(reps) - x.ndim) + x.shape, reps)]
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{next(n for n in sizes if n < 0)}: {sizes}")
    return apply(REPEAT, (input,), (x,), (reps,))


@_batchable
def tile(input: Tensor, dims: Any) -> Tensor:
    """``repeat`` with fewer repeats than dims allowed (missing ones are 1)."""
    reps = tuple(int(r) for r in dims)
    n = input._data.ndim
    if len(reps) < n:
        reps = (1,) * (n - len(reps)) + reps
    return repeat(input, reps)


def _repeat_interleave_index(repeats: np.ndarray, fn: str = "repeat_interleave") -> np.ndarray:
    if repeats.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats.dtype.kind not in "iu":
        raise RuntimeError("repeats has to be Long or Int tensor")
    if repeats.size and repeats.min() < 0:
        raise RuntimeError("repeats can not be negative")
    return np.repeat(np.arange(repeats.size, dtype=np.int64), repeats)


@_batchable
def repeat_interleave(input: Tensor, repeats: Any = None, dim: Any = None, *,
                      output_size: Any = None) -> Tensor:
    """Repeat each element ``repeats`` times along ``dim`` (the flattened tensor if None);
    ``repeats`` an int or a tensor of per-element counts. With only a tensor of counts,
    the indices repeated by them."""
    if output_size is None:
        _dispatch.meta_refuse("repeat_interleave", input, repeats)
    if repeats is None:                                  # repeat_interleave(repeats)
        r = input._data
        if r.ndim == 0:
            r = r.reshape(1)
        idx = _repeat_interleave_index(r)
        if output_size is not None and idx.size != output_size:
            raise RuntimeError("allocated size does not match required size")
        return _wrap(idx.astype(r.dtype if r.dtype.kind in "iu" else np.int64))
    x = input._data
    if dim is None:
        input = _shape.flatten(input)
        d = 0
    else:
        d = wrap_dim(int(dim), x.ndim or 1)
    n = input._data.shape[d] if input._data.ndim else 1
    if isinstance(repeats, Tensor) and repeats._data.ndim == 1 and repeats._data.size != 1:
        r = repeats._data
        if r.shape[0] != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {r.shape[0]} and input.size({d}) = {n}")
        idx = _repeat_interleave_index(r)
        if output_size is not None and idx.size != output_size:
            raise RuntimeError("allocated size does not match required size")
        if input._data.ndim == 0:
            input = _shape.reshape(input, (1,))
        return _shape.index_select(input, d, _wrap(idx))
    if isinstance(repeats, Tensor):
        if repeats._data.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if repeats._data.dtype.kind not in "iu":
            raise RuntimeError("repeats has to be Long or Int tensor")
        repeats = int(repeats._data.reshape(()))
    k = int(repeats)
    if k < 0:
        raise RuntimeError("Repeats must be non-negative")
    if output_size is not None and n * k != output_size:
        raise RuntimeError("allocated size does not match required size")
    if input._data.ndim == 0:
        input = _shape.reshape(input, (1,))
    shape = input._data.shape
    e = _shape.unsqueeze(input, d + 1)
    e = _shape.expand(e, shape[:d + 1] + (k,) + shape[d + 1:])
    from .pointwise import clone
    from .._layout import contiguous_format
    return _shape.flatten(clone(e, memory_format=contiguous_format), d, d + 1)


# ---------------------------------------------------------------------------- broadcasting
def broadcast_shapes(*shapes: Any) -> tuple:
    """The shape all of ``shapes`` broadcast to."""
    from ..tensor import Size
    out: list = []
    for s in shapes:
        s = (int(s),) if isinstance(s, (int, np.integer)) else tuple(int(k) for k in s)
        for k in s:
            if k < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {k}: "
                                   f"{list(s)}")
        n = max(len(out), len(s))
        a = [1] * (n - len(out)) + out
        b = [1] * (n - len(s)) + list(s)
        for i in range(n):
            if a[i] != b[i] and a[i] != 1 and b[i] != 1:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single "
                                   f"shape.  Mismatch is at dim {i}")
            a[i] = b[i] if a[i] == 1 else a[i]
        out = a
    return Size(out)


@_batchable
def broadcast_to(input: Tensor, size: Any) -> Tensor:
    """``input.expand(size)`` (a view)."""
    return _shape.expand(input, tuple(size))


def _tensors_arg(tensors: tuple, fn: str) -> list:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type_name(t)}")
    return list(tensors)


@_batchable
def broadcast_tensors(*tensors: Any) -> tuple:
    """Expand all tensors to their common broadcast shape (tensors already of that shape are
    returned as they are)."""
    ts = _tensors_arg(tensors, "broadcast_tensors")
    shape: tuple = ()
    for t in ts:
        s = t._data.shape
        n = max(len(shape), len(s))
        a = (1,) * (n - len(shape)) + tuple(shape)
        b = (1,) * (n - len(s)) + s
        for i in range(n):
            if a[i] != b[i] and a[i] != 1 and b[i] != 1:
                raise RuntimeError(f"The size of tensor a ({a[i]}) must match the size of "
                                   f"tensor b ({b[i]}) at non-singleton dimension {i}")
        shape = tuple(y if x == 1 else x for x, y in zip(a, b))
    return tuple(t if t._data.shape == shape else _shape.expand(t, shape) for t in ts)


# ---------------------------------------------------------------------------- aliases and views
@_batchable
def ravel(input: Tensor) -> Tensor:
    """The elements as a 1-d tensor: a view when ``input`` is contiguous, else a view of a
    contiguous copy."""
    return _shape.view(_shape.contiguous(input), -1)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Alias of ``transpose``."""
    return _shape.transpose(input, dim0, dim1)


def moveaxis(input: Tensor, source: Any, destination: Any) -> Tensor:
    """Alias of ``movedim``."""
    return _shape.movedim(input, source, destination)


def _T(self: Tensor) -> Tensor:
    n = self._data.ndim
    if n == 0:
        warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity in "
                      "these cases.", UserWarning, stacklevel=2)
    elif n != 2:
        warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their "
                      "shape is deprecated and it will throw an error in a future release. "
                      "Consider `x.mT` to transpose batches of matrices or `x.permute(*torch."
                      "arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.",
                      UserWarning, stacklevel=2)
    return _shape.permute(self, tuple(range(n - 1, -1, -1)))


def _mT(self: Tensor) -> Tensor:
    n = self._data.ndim
    if n < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got "
                           f"{n}-D tensor.")
    return _shape.transpose(self, -2, -1)


def _conj_if_complex(t: Tensor) -> Tensor:
    if t._data.dtype.kind == "c":
        from .pointwise import conj
        return conj(t)
    return t


def _H(self: Tensor) -> Tensor:
    n = self._data.ndim
    if n not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {n}-D "
                           "tensor.")
    if n == 0:
        warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().",
                      UserWarning, stacklevel=2)
    return _conj_if_complex(_shape.transpose(self, 0, 1) if n == 2 else self)


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims (``x.mH``)."""
    n = input._data.ndim
    if n < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {n}-D tensor.")
    return _conj_if_complex(_shape.transpose(input, -2, -1))


def _mH(self: Tensor) -> Tensor:
    n = self._data.ndim
    if n < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got "
                           f"{n}-D tensor.")
    return _conj_if_complex(_shape.transpose(self, -2, -1))


@_batchable
def unflatten(input: Tensor, dim: int, sizes: Any) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one may be -1), as a view."""
    x = input._data
    sizes = tuple(int(s) for s in sizes)
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(int(dim), x.ndim)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = x.shape[d]
    if sizes.count(-1) > 1:
        raise RuntimeError("unflatten got an unexpected error:\nonly one dimension can be "
                           "inferred")
    known = 1
    for s in sizes:
        if s != -1:
            known *= s
    if -1 in sizes:
        if known == 0 or n % known:
            raise RuntimeError(f"shape '{list(sizes)}' is invalid for input of size {n}")
        sizes = tuple(n // known if s == -1 else s for s in sizes)
    elif known != n:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({n}) in the input tensor")
    return _shape.view(input, x.shape[:d] + sizes + x.shape[d + 1:])


# ---------------------------------------------------------------------------- atleast / stacking
def _atleast(tensors: tuple, fn: Callable, name: str) -> Any:
    if len(tensors) == 1 and isinstance(tensors[0], Tensor):
        return fn(tensors[0])
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of "
                            f"Tensors, not {type_name(t)}")
    return tuple(fn(t) for t in tensors)


def _atleast_1d(t: Tensor) -> Tensor:
    return _shape.reshape(t, (1,)) if t._data.ndim == 0 else t


def _atleast_2d(t: Tensor) -> Tensor:
    n = t._data.ndim
    if n == 0:
        return _shape.reshape(t, (1, 1))
    return _shape.unsqueeze(t, 0) if n == 1 else t


def _atleast_3d(t: Tensor) -> Tensor:
    n = t._data.ndim
    if n == 0:
        return _shape.reshape(t, (1, 1, 1))
    if n == 1:
        return _shape.unsqueeze(_shape.unsqueeze(t, 0), -1)
    return _shape.unsqueeze(t, -1) if n == 2 else t


@_batchable
def atleast_1d(*tensors: Any) -> Any:
    """Each tensor viewed with at least 1 dim (a tuple for several)."""
    return _atleast(tensors, _atleast_1d, "atleast_1d")


@_batchable
def atleast_2d(*tensors: Any) -> Any:
    """Each tensor viewed with at least 2 dims (a 1-d tensor becomes a row)."""
    return _atleast(tensors, _atleast_2d, "atleast_2d")


@_batchable
def atleast_3d(*tensors: Any) -> Any:
    """Each tensor viewed with at least 3 dims."""
    return _atleast(tensors, _atleast_3d, "atleast_3d")


def _stack_list(tensors: Any, fn: str) -> list:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type_name(tensors)}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type_name(t)}")
    if not tensors:
        raise RuntimeError(f"{fn} expects a non-empty TensorList")
    return list(tensors)


@_batchable
def hstack(tensors: Any) -> Tensor:
    """Concatenate column-wise (along dim 1; dim 0 for 1-d tensors)."""
    ts = [_atleast_1d(t) for t in _stack_list(tensors, "hstack")]
    return _shape.cat(ts, 0 if ts[0]._data.ndim == 1 else 1)


@_batchable
def vstack(tensors: Any) -> Tensor:
    """Concatenate row-wise (1-d tensors become rows)."""
    ts = [_atleast_2d(t) for t in _stack_list(tensors, "vstack")]
    return _shape.cat(ts, 0)


row_stack = vstack


@_batchable
def dstack(tensors: Any) -> Tensor:
    """Concatenate depth-wise (along dim 2, after ``atleast_3d``)."""
    ts = [_atleast_3d(t) for t in _stack_list(tensors, "dstack")]
    return _shape.cat(ts, 2)


@_batchable
def column_stack(tensors: Any) -> Tensor:
    """Stack 0-d and 1-d tensors as columns, then concatenate along dim 1."""
    ts = _stack_list(tensors, "column_stack")
    cols = [_shape.reshape(t, (t._data.size, 1)) if t._data.ndim <= 1 else t for t in ts]
    return _shape.cat(cols, 1)


# ---------------------------------------------------------------------------- meshgrid and friends
@_batchable
def meshgrid(*tensors: Any, indexing: Any = None) -> tuple:
    """Coordinate grids of 0-d/1-d tensors (views: ``expand`` of a ``view``); ``indexing`` 'ij'
    (matrix, the default) or 'xy' (Cartesian: the first two grid dims swapped)."""
    ts = _tensors_arg(tensors, "meshgrid")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: '
                           f'{indexing}')
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in ts:
        if t._data.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
    dts = {t._data.dtype for t in ts}
    if len(dts) > 1:
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts = [ts[1], ts[0]] + ts[2:]
    shape = tuple(t._data.size for t in ts)
    out = []
    for i, t in enumerate(ts):
        vs = [1] * len(ts)
        vs[i] = -1
        out.append(_shape.expand(_shape.view(t, tuple(vs)), shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


@_batchable
def cartesian_prod(*tensors: Any) -> Tensor:
    """All tuples of elements of the 1-d tensors, one per row (a tensor alone is returned
    as is)."""
    ts = _tensors_arg(tensors, "cartesian_prod")
    for t in ts:
        if t._data.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t._data.shape)}")
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    return _shape.stack([_shape.flatten(g) for g in grids], 1)


def _masked_select_vjp(ctx, g):
    mask, _ = ctx.saved
    idx = np.nonzero(mask._data)
    return apply(_shape.INDEX_BACKWARD, (g,), (g._data,), (idx, ctx.input_shape(0)))


# ``grid.masked_select(mask)`` for a mask of the grid's shape (combinations' building block,
# recorded as PyTorch records it: MaskedSelectBackward0 saving the mask, then the grid).
MASKED_SELECT = Op("_combinations_select", "MaskedSelectBackward0",
                   lambda x, mask: x[mask._data], _masked_select_vjp, args=("mask",),
                   saves=("mask", "self"), jvp=linear)


@_batchable
def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """All length-``r`` combinations of the elements of a 1-d tensor (with repeats of an
    element if ``with_replacement``), one per row, in lexicographic order of positions."""
    x = input._data
    if x.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(x.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _wrap(np.empty((0,), dtype=x.dtype))
    n = x.shape[0]
    ind = np.indices((n,) * r)
    mask = np.ones((n,) * r, dtype=bool)
    for k in range(r - 1):
        mask &= (ind[k] <= ind[k + 1]) if with_replacement else (ind[k] < ind[k + 1])
    m = _wrap(mask)
    grids = meshgrid(*([input] * r), indexing="ij")
    cols = [apply(MASKED_SELECT, (g,), (g._data,), (m,)) for g in grids]
    return _shape.stack(cols, 1)


# ---------------------------------------------------------------------------- block_diag
def _block_dims(shape: tuple) -> tuple:
    if len(shape) == 2:
        return shape
    return (1, shape[0]) if len(shape) == 1 else (1, 1)


def _block_diag_fwd(*arrays: np.ndarray) -> np.ndarray:
    dt = arrays[-1]
    arrs = arrays[:-1]
    dims = [_block_dims(a.shape) for a in arrs]
    out = np.zeros((sum(d[0] for d in dims), sum(d[1] for d in dims)), dtype=dt)
    r = c = 0
    for a, (n, m) in zip(arrs, dims):
        out[r:r + n, c:c + m] = a.reshape(n, m)
        r, c = r + n, c + m
    return out


def _block_diag_vjp(ctx, g):
    out = []
    r = c = 0
    for i, (shape, _) in enumerate(ctx._input_meta):
        n, m = _block_dims(shape)
        if ctx.needs_input_grad(i):
            out.append(_shape.getitem(g, (slice(r, r + n), slice(c, c + m))).reshape(shape))
        else:
            out.append(None)
        r, c = r + n, c + m
    return tuple(out)


BLOCK_DIAG = Op("block_diag", "BlockDiagBackward0", _block_diag_fwd, _block_diag_vjp,
                inputs=(), args=("dtype",), jvp=linear)


@_batchable
def block_diag(*tensors: Any) -> Tensor:
    """A block diagonal matrix of the given 0-, 1- or 2-d tensors."""
    ts = _tensors_arg(tensors, "block_diag")
    for i, t in enumerate(ts):
        if t._data.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t._data.ndim} dimensions")
    if not ts:
        return _wrap(np.zeros((1, 0), dtype=_dtype.get_default_dtype().np))
    rt = ts[0].dtype
    for t in ts[1:]:
        rt = _dtype.promote_types(rt, t.dtype)
    return apply(BLOCK_DIAG, tuple(ts), tuple(t._data for t in ts), (rt.np,))


# ---------------------------------------------------------------------------- diagonals
def _diag_embed_fwd(x: np.ndarray, offset: int, d1: int, d2: int) -> np.ndarray:
    n = x.shape[-1] + abs(offset) if x.ndim else 1 + abs(offset)
    rest = list(x.shape[:-1])
    shape = [0] * (len(rest) + 2)
    it = iter(rest)
    for i in range(len(shape)):
        shape[i] = n if i in (d1, d2) else next(it)
    out = np.zeros(shape, dtype=x.dtype)
    _shape._diagonal_fwd(out, offset, d1, d2)[...] = x
    return out


DIAG_EMBED = Op("diag_embed", "DiagEmbedBackward0", _diag_embed_fwd,
                lambda ctx, g: _shape.diagonal(g, *ctx._args),
                args=("offset", "dim1", "dim2"), jvp=linear)


@_batchable
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Tensors whose diagonals (w.r.t. ``dim1``, ``dim2``) are the last dim of ``input``."""
    x = input._data
    n = x.ndim + 1
    a, b = wrap_dim(int(dim1), n), wrap_dim(int(dim2), n)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if x.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    return apply(DIAG_EMBED, (input,), (x,), (int(offset), a, b))


@_batchable
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-d tensor's diagonal matrix, or a 2-d tensor's diagonal (a copy)."""
    n = input._data.ndim
    if n == 1:
        return diag_embed(input, diagonal, 0, 1)
    if n == 2:
        return diagonal_copy(input, diagonal)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {n}D")


@_batchable
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The diagonal matrix of the flattened input."""
    return diag_embed(_shape.flatten(input), offset, 0, 1)


# ---------------------------------------------------------------------------- splitting
def _sections(n: int, k: int) -> list:
    q, r = divmod(n, k)
    sizes = [q + 1] * r + [q] * (k - r)
    out, s = [], 0
    for z in sizes:
        out.append((s, s + z))
        s += z
    return out


def _slice_dim(input: Tensor, d: int, a: Any, b: Any) -> Tensor:
    return _shape.getitem(input, (slice(None),) * d + (slice(a, b),))


@_batchable
def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple:
    """Split into ``n`` near-equal parts, or at the given indices, along ``dim`` (views)."""
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    ios = indices_or_sections
    _check_ios(ios, "tensor_split")
    d = wrap_dim(int(dim), x.ndim)
    if isinstance(ios, Tensor):
        a = ios._data
        if a.dtype.kind not in "iu":
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have "
                               f"integer dtype, but got {_dtype._FROM_NP[a.dtype]}")
        if a.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {a.ndim} dims")
        ios = int(a) if a.ndim == 0 else [int(v) for v in a]
    if isinstance(ios, (int, np.integer)):
        k = int(ios)
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        return tuple(_slice_dim(input, d, a, b) for a, b in _sections(x.shape[d], k))
    idx = [int(i) for i in ios]
    bounds = [None] + idx + [None]
    return tuple(_slice_dim(input, d, bounds[j], bounds[j + 1]) for j in range(len(idx) + 1))


def _check_ios(ios: Any, name: str) -> None:
    ok = isinstance(ios, Tensor) or (isinstance(ios, (int, np.integer)) and
                                     not isinstance(ios, bool))
    if isinstance(ios, (list, tuple)):
        ok = all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) or
                 (isinstance(i, Tensor) and i._data.ndim == 0 and i._data.dtype.kind in "iu")
                 for i in ios)
    if not ok:
        raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                        f"{type_name(ios)}), but expected one of:\n * (Tensor input, int "
                        "sections)\n * (Tensor input, tuple of ints indices)")


def _dir_split(input: Tensor, ios: Any, d: int, name: str, need: int) -> tuple:
    _check_ios(ios, name)
    n = input._data.ndim
    if n < need:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {need} dimension, but "
                           f"got a tensor with {n} dimensions!")
    if isinstance(ios, (int, np.integer)):
        k = int(ios)
        size = input._data.shape[d]
        if k == 0 or size % k:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the "
                               f"size of the dimension {size} is not divisible by the split_size "
                               f"{k}!")
    return tensor_split(input, ios, d)


@_batchable
def hsplit(input: Tensor, indices_or_sections: Any) -> tuple:
    """``tensor_split`` along dim 1 (dim 0 for 1-d tensors); sections must divide evenly."""
    d = 0 if input._data.ndim == 1 else 1
    return _dir_split(input, indices_or_sections, d, "hsplit", 1)


@_batchable
def vsplit(input: Tensor, indices_or_sections: Any) -> tuple:
    """``tensor_split`` along dim 0 of a tensor with at least 2 dims."""
    return _dir_split(input, indices_or_sections, 0, "vsplit", 2)


@_batchable
def dsplit(input: Tensor, indices_or_sections: Any) -> tuple:
    """``tensor_split`` along dim 2 of a tensor with at least 3 dims."""
    return _dir_split(input, indices_or_sections, 2, "dsplit", 3)


@_batchable
def split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple:
    """Split along ``dim`` into pieces of the given sizes (views)."""
    return _shape._split_with_sizes(input, _shape._split_sizes(split_sizes), dim)


def _unsafe_split_fwd(x, dim, bounds):
    return tuple(x[(slice(None),) * dim + (slice(a, b),)].copy() for a, b in bounds)


UNSAFE_SPLIT = Op("unsafe_split", "UnsafeSplitBackward0", _unsafe_split_fwd,
                  lambda ctx, *gs: _cat_grads(ctx, gs), args=("dim", "bounds"),
                  num_outputs=-1, jvp=linear)
UNSAFE_SPLIT_SIZES = Op("unsafe_split_with_sizes", "UnsafeSplitWithSizesBackward0",
                        _unsafe_split_fwd, lambda ctx, *gs: _cat_grads(ctx, gs),
                        args=("dim", "bounds"), num_outputs=-1, jvp=linear)


def _cat_grads(ctx, gs: tuple) -> Tensor:
    return _shape.cat(list(gs), ctx._args[0])


def _unsafe_of(pieces: tuple, op: Op, input: Tensor) -> tuple:
    if not pieces:
        return pieces
    v = pieces[0]
    d = v._view_steps[-1][1][0] if v._view_steps else 0
    bounds = v._view_steps[-1][1][1]
    return apply(op, (input,), (input._data,), (d, bounds))


@_batchable
def unsafe_split(input: Tensor, split_size: Any, dim: int = 0) -> tuple:
    """``split`` returning copies (one UnsafeSplitBackward0 node)."""
    probe = _wrap(input._data)
    pieces = _shape.split(probe, split_size, dim)
    op = UNSAFE_SPLIT if isinstance(split_size, (int, np.integer)) else UNSAFE_SPLIT_SIZES
    return _unsafe_of(pieces, op, input)


@_batchable
def unsafe_split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple:
    """``split_with_sizes`` returning copies."""
    pieces = split_with_sizes(_wrap(input._data), split_sizes, dim)
    return _unsafe_of(pieces, UNSAFE_SPLIT_SIZES, input)


@_batchable
def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """``chunk`` returning copies (UnsafeSplitBackward0)."""
    pieces = _shape.chunk(_wrap(input._data), chunks, dim)
    return _unsafe_of(pieces, UNSAFE_SPLIT, input)


# ---------------------------------------------------------------------------- narrow_copy
def _narrow_copy_fwd(x, dim, start, length):
    return x[(slice(None),) * dim + (slice(start, start + length),)].copy()


def _narrow_copy_vjp(ctx, g):
    dim, start, length = ctx._args
    idx = (slice(None),) * dim + (slice(start, start + length),)
    return apply(_shape.SLICE_BACKWARD, (g,), (g._data,), (idx, ctx.input_shape(0)))


NARROW_COPY = Op("narrow_copy", "NarrowCopyBackward0", _narrow_copy_fwd, _narrow_copy_vjp,
                 args=("dim", "start", "length"), jvp=linear)


@_batchable
def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``narrow`` as a copy."""
    x = input._data
    if x.ndim and dim >= x.ndim:
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, "
                           "but got false.")
    if x.ndim and length < 0 and -x.ndim <= dim:
        n = x.shape[dim]
        if -n <= start <= n:
            raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                               f"({n}).")
    v = _shape.narrow(_wrap(input._data), dim, start, length)
    sl = v._view_steps[-1][1][0]
    d = len(sl) - 1
    return apply(NARROW_COPY, (input,), (input._data,), (d, sl[d].start, sl[d].stop - sl[d].start))


# ---------------------------------------------------------------------------- scatters
def _select_view(x: np.ndarray, dim: int, index: int) -> np.ndarray:
    return x[(slice(None),) * dim + (index, Ellipsis)]


def _slice_view(x: np.ndarray, dim: int, start: int, end: int, step: int) -> np.ndarray:
    return x[(slice(None),) * dim + (slice(start, end, step),)]


def _scatter_fwd(view: Callable) -> Callable:
    def fwd(x: np.ndarray, src: np.ndarray, *args: Any) -> np.ndarray:
        out = x.copy()
        view(out, *args)[...] = src
        return out
    return fwd


def _scatter_vjp(gather: Callable) -> Callable:
    def vjp(ctx, g):
        op, args = ctx._op, ctx._args
        gs = None
        gx = None
        if ctx.needs_input_grad(1):
            gs = gather(g, *args)
        if ctx.needs_input_grad(0):
            z = gather(g, *args)
            from .pointwise import _zeros_of
            z = _zeros_of(z)
            gx = apply(op, (g, z), (g._data, z._data), args)
        return gx, gs
    return vjp


def _select_t(g: Tensor, dim: int, index: int) -> Tensor:
    return _shape.select(g, dim, index)


def _slice_t(g: Tensor, dim: int, start: int, end: int, step: int) -> Tensor:
    return _shape.getitem(g, (slice(None),) * dim + (slice(start, end, step),))


def _diagonal_t(g: Tensor, offset: int, d1: int, d2: int) -> Tensor:
    return _shape.diagonal(g, offset, d1, d2)


SELECT_SCATTER = Op("select_scatter", "SelectScatterBackward0", _scatter_fwd(_select_view),
                    _scatter_vjp(_select_t), inputs=("self", "src"), args=("dim", "index"),
                    jvp=linear)
SLICE_SCATTER = Op("slice_scatter", "SliceScatterBackward0", _scatter_fwd(_slice_view),
                   _scatter_vjp(_slice_t), inputs=("self", "src"),
                   args=("dim", "start", "end", "step"), jvp=linear)
DIAGONAL_SCATTER = Op("diagonal_scatter", "DiagonalScatterBackward0",
                      _scatter_fwd(_shape._diagonal_fwd), _scatter_vjp(_diagonal_t),
                      inputs=("self", "src"), args=("offset", "dim1", "dim2"), jvp=linear)


def _check_src(src: Tensor, want: tuple, x: Tensor, fn: str) -> None:
    if tuple(src._data.shape) != tuple(want):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._data.shape)}, slice size = {list(want)}")


def _like(src: Tensor, x: Tensor) -> np.ndarray:
    """``src``'s data in ``x``'s dtype (the scatters write into a copy of ``x``)."""
    a, dt = src._data, x._data.dtype
    return a if a.dtype == dt else a.astype(dt)


@_batchable
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input.select(dim, index)``."""
    v = _shape.select(_wrap(input._data), dim, index)
    sl = v._view_steps[-1][1][0]
    d = len(sl) - 1
    _check_src(src, v._data.shape, input, "select_scatter")
    return apply(SELECT_SCATTER, (input, src), (input._data, _like(src, input)), (d, sl[d]))


@_batchable
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: Any = None, end: Any = None,
                  step: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input[..., start:end:step]`` along
    ``dim``."""
    x = input._data
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(int(dim), x.ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    n = x.shape[d]
    a, b, _ = slice(start, end, step).indices(n)
    b = max(a, b)
    want = x[(slice(None),) * d + (slice(a, b, step),)].shape
    _check_src(src, want, input, "slice_scatter")
    return apply(SLICE_SCATTER, (input, src), (x, _like(src, input)), (d, a, b, int(step)))


@_batchable
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written into its diagonal."""
    v = _shape.diagonal(_wrap(input._data), offset, dim1, dim2)
    args = v._view_steps[-1][1]
    _check_src(src, v._data.shape, input, "diagonal_scatter")
    return apply(DIAGONAL_SCATTER, (input, src), (input._data, _like(src, input)), args)


def _as_strided_scatter_fwd(x, src, size, stride, offset):
    out = np.ascontiguousarray(x).copy()
    flat = out.reshape(-1)
    item = out.itemsize
    view = np.lib.stride_tricks.as_strided(flat[offset:], size, tuple(s * item for s in stride))
    view[...] = src
    return out


def _as_strided_steps(shape: tuple, args: tuple) -> tuple:
    size, stride, offset = args
    geometry = (tuple(shape), _contiguous_strides(shape), 0, int(np.prod(shape)))
    return ((_shape.AS_STRIDED, (size, stride, offset, geometry), None),)


def _contiguous_strides(shape: tuple) -> tuple:
    out, acc = [], 1
    for k in reversed(shape):
        out.append(acc)
        acc *= max(k, 1)
    return tuple(reversed(out))


def _as_strided_scatter_vjp(ctx, g):
    from . import views_inplace as vi
    steps = _as_strided_steps(ctx.input_shape(0), ctx._args)
    gs = gx = None
    if ctx.needs_input_grad(1) or ctx.needs_input_grad(0):
        part = apply(vi.VIEW_REPLAY, (g,), (g._data,), (steps,))
        if ctx.needs_input_grad(1):
            gs = part
        if ctx.needs_input_grad(0):
            from .pointwise import _zeros_of
            z = _zeros_of(part)
            gx = apply(AS_STRIDED_SCATTER, (g, z), (g._data, z._data), ctx._args)
    return gx, gs


AS_STRIDED_SCATTER = Op("as_strided_scatter", "AsStridedScatterBackward0",
                        _as_strided_scatter_fwd, _as_strided_scatter_vjp,
                        inputs=("self", "src"), args=("size", "stride", "storage_offset"),
                        jvp=linear)


@_batchable
def as_strided_scatter(input: Tensor, src: Tensor, size: Any, stride: Any,
                       storage_offset: Any = None) -> Tensor:
    """A copy of ``input`` (contiguous) with ``src`` written into its
    ``as_strided(size, stride, storage_offset)`` view."""
    size = tuple(int(s) for s in size)
    stride = tuple(int(s) for s in stride)
    offset = 0 if storage_offset is None else int(storage_offset)
    x = input._data
    _shape._check_as_strided(size, stride, offset, x.itemsize, x.size * x.itemsize)
    _check_src(src, size, input, "as_strided_scatter")
    return apply(AS_STRIDED_SCATTER, (input, src), (x, _like(src, input)), (size, stride, offset))


# ---------------------------------------------------------------------------- *_copy variants
def _copied(out: Any) -> Any:
    if isinstance(out, tuple):
        return tuple(np.array(o, copy=True) for o in out)
    return np.array(out, copy=True)


def _scatter_through(view_op: Op) -> Callable:
    def vjp(ctx, g):
        from .views_inplace import view_scatter
        return view_scatter(g, ((view_op, ctx._args, None),), ctx.input_shape(0),
                            ctx.input_dtype(0))
    return vjp


def _copy_op(view_op: Op, vjp: Any = None) -> Op:
    fwd = view_op.forward
    return Op(view_op.name + "_copy", view_op.node_name + "_copy",
              lambda *a: _copied(fwd(*a)), vjp or view_op.vjp, saves=view_op.saved_names,
              inputs=view_op.inputs, args=view_op.arg_names, jvp=linear,
              num_outputs=view_op.num_outputs)


_s = _shape
COPY_OPS = {op: _copy_op(op) for op in (
    _s.VIEW, _s.EXPAND, _s.PERMUTE, _s.SQUEEZE, _s.SQUEEZE_DIM, _s.SQUEEZE_DIMS, _s.UNSQUEEZE,
    _s.T_OP, _s.TRANSPOSE, _s.UNBIND, _s.SPLIT_SIZES)}
for _op in (_s.DIAGONAL, _s.UNFOLD, _s.AS_STRIDED):
    COPY_OPS[_op] = _copy_op(_op, _scatter_through(_op))
# view_copy copies any layout (PyTorch's view_copy does not need a viewable input).
COPY_OPS[_s.VIEW].forward = lambda x, shape: np.reshape(x, shape).copy()
ALIAS_COPY = Op("alias_copy", "AliasBackward0_copy", lambda x: x.copy(), lambda ctx, g: g,
                jvp=linear)


def _copy_variant(view_fn: Callable, name: str) -> Callable:
    """The ``*_copy`` function of a view function: the view's op, run as a copy."""
    @_batchable
    def fn(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type_name(input)}")
        probe = _wrap(np.ascontiguousarray(input._data) if view_fn is _view_fn else input._data)
        v = view_fn(probe, *args, **kwargs)
        first = v[0] if isinstance(v, tuple) else v
        if isinstance(v, tuple) and not v:
            return v
        if first is probe or first._base is not probe:
            return apply(ALIAS_COPY, (input,), (input._data,))
        op, op_args, _ = first._view_steps[-1]
        return apply(COPY_OPS[op], (input,), (input._data,), op_args)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{view_fn.__name__}`` as a copy (the view's op, without sharing memory)."
    return fn


def _view_fn(input: Tensor, *size: Any) -> Tensor:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return _shape.view(input, *size)


def _squeeze_fn(input: Tensor, dim: Any = None) -> Tensor:
    return _shape.squeeze(input, dim)


def _expand_fn(input: Tensor, size: Any, implicit: bool = False) -> Tensor:
    return _shape.expand(input, tuple(size))


def _permute_fn(input: Tensor, dims: Any) -> Tensor:
    return _shape.permute(input, tuple(dims))


view_copy = _copy_variant(_view_fn, "view_copy")
expand_copy = _copy_variant(_expand_fn, "expand_copy")
permute_copy = _copy_variant(_permute_fn, "permute_copy")
squeeze_copy = _copy_variant(_squeeze_fn, "squeeze_copy")
unsqueeze_copy = _copy_variant(_shape.unsqueeze, "unsqueeze_copy")
t_copy = _copy_variant(_shape.t, "t_copy")
transpose_copy = _copy_variant(_shape.transpose, "transpose_copy")
unbind_copy = _copy_variant(_shape.unbind, "unbind_copy")
split_with_sizes_copy = _copy_variant(split_with_sizes, "split_with_sizes_copy")
diagonal_copy = _copy_variant(_shape.diagonal, "diagonal_copy")
unfold_copy = _copy_variant(_shape.unfold, "unfold_copy")
as_strided_copy = _copy_variant(_shape.as_strided, "as_strided_copy")


def alias_copy(input: Tensor) -> Tensor:
    """A copy of ``input`` (AliasBackward0_copy)."""
    return apply(ALIAS_COPY, (input,), (input._data,))


# ---------------------------------------------------------------------------- complex views
def _view_as_real_fwd(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind != "c":      # replaying the view on index maps and gradients of the base
        return np.stack([x, x], -1)
    r = x.real
    return np.lib.stride_tricks.as_strided(r, x.shape + (2,), r.strides + (r.itemsize,),
                                           writeable=x.flags.writeable)


def _view_as_complex_fwd(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind != "f":      # replaying the view on index maps and gradients of the base
        return x[..., 0]
    ct = np.dtype(np.complex64 if x.dtype == np.float32 else np.complex128)
    first = x[..., 0]
    if x.size == 0:
        return np.zeros(first.shape, dtype=ct)
    from ..tensor import _ptr
    window = _shape._StorageWindow({"version": 3, "shape": first.shape, "typestr": ct.str,
                                    "strides": first.strides,
                                    "data": (_ptr(first), not x.flags.writeable)}, x)
    return np.asarray(window)


VIEW_AS_REAL = Op("view_as_real", "ViewAsRealBackward0", _view_as_real_fwd,
                  lambda ctx, g: view_as_complex(_shape.contiguous(g)), view=True,
                  jvp=lambda ctx, t: view_as_real(t))
VIEW_AS_COMPLEX = Op("view_as_complex", "ViewAsComplexBackward0", _view_as_complex_fwd,
                     lambda ctx, g: view_as_real(g), view=True,
                     jvp=lambda ctx, t: view_as_complex(_shape.contiguous(t)))


def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor's real and imaginary parts as a last dim of size 2 (a view)."""
    x = input._data
    if x.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return apply(VIEW_AS_REAL, (input,), (x,))


def view_as_complex(input: Tensor) -> Tensor:
    """A float tensor with a last dim of size 2 seen as complex numbers (a view)."""
    x = input._data
    if x.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, but "
                           f"got a tensor of scalar type: {_dtype._FROM_NP[x.dtype]._torch_name}")
    if x.ndim == 0 or x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    item = x.itemsize
    if x.strides[-1] != item:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % (2 * item) for s, n in zip(x.strides[:-1], x.shape[:-1]) if n > 1):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if _s._geometry(x)[2] % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return apply(VIEW_AS_COMPLEX, (input,), (x,))


CONJ_PHYSICAL = Op("conj_physical", "ConjPhysicalBackward0", np.conjugate,
                   lambda ctx, g: conj_physical(g), jvp=linear)


def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate, computed (a real tensor is returned as is)."""
    x = input._data
    if x.dtype.kind != "c":
        return input
    return apply(CONJ_PHYSICAL, (input,), (x,))


# The in-place form records ConjPhysicalBackward1 for every dtype (a real tensor too).
CONJ_PHYSICAL_ = Op("conj_physical_", "ConjPhysicalBackward1", np.conjugate,
                    lambda ctx, g: conj_physical(g), jvp=linear)


def conj_physical_(self: Tensor) -> Tensor:
    """In-place ``conj_physical`` (bumps the version counter)."""
    from .views_inplace import apply_inplace
    return apply_inplace(self, lambda s: apply(CONJ_PHYSICAL_, (s,), (s._data,)))


def resolve_conj(input: Tensor) -> Tensor:
    """``input`` (ndgrad computes conjugates eagerly: there is no conjugate bit to resolve)."""
    return input


def resolve_neg(input: Tensor) -> Tensor:
    """``input`` (ndgrad has no negative bit to resolve)."""
    return input


# ---------------------------------------------------------------------------- fill
def _fill_fwd(x: np.ndarray, v: Any) -> np.ndarray:
    return np.full_like(x, v)


def _fill_t_vjp(ctx, g):
    from .pointwise import _zeros_of
    gx = _zeros_of(g) if ctx.needs_input_grad(0) else None
    gv = g.sum() if ctx.needs_input_grad(1) else None
    return gx, gv


def _fill_s_vjp(ctx, g):
    from .pointwise import _zeros_of
    return _zeros_of(g)


FILL_S = Op("fill", "FillBackward0", _fill_fwd, _fill_s_vjp, args=("value",), jvp=zero)
FILL_T = Op("fill", "FillBackward1", _fill_fwd, _fill_t_vjp, inputs=("self", "value"),
            jvp=lambda ctx, tx, tv: None if tv is None else
            _shape.expand(tv, ctx.inputs[0]._data.shape) * 1)


def fill(input: Tensor, value: Any) -> Tensor:
    """A tensor like ``input`` filled with ``value`` (a number or a 0-d tensor)."""
    x = input._data
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value._data.ndim} dimensions.")
        v = value._data.astype(x.dtype) if value._data.dtype != x.dtype else value._data
        return apply(FILL_T, (input, value), (x, v))
    if x.dtype.kind not in "c" and isinstance(value, complex):
        raise RuntimeError("value cannot be converted to type "
                           f"{_dtype._FROM_NP[x.dtype]._torch_name.lower()} without overflow")
    return apply(FILL_S, (input,), (x,), (value,))


# ---------------------------------------------------------------------------- batching rules
def _install_rules() -> None:
    from . import _batching as b
    R = b.RULES

    def shift_dims(c, args):
        return apply(c.op, tuple(c.ts), tuple(c.arrs), (tuple(d + 1 for d in args[0]),)
                     + tuple(args[1:]))

    def flip_rule(c, args):
        if not c.ls[0]:
            return apply(c.op, tuple(c.ts), tuple(c.arrs), ((),))
        return shift_dims(c, args)
    R[FLIP] = flip_rule

    def roll_rule(c, args):
        shifts, dims = args
        if dims:
            return apply(c.op, tuple(c.ts), tuple(c.arrs), (shifts, tuple(d + 1 for d in dims)))
        t = _shape.reshape(c.ts[0], (c.B, -1))
        r = apply(c.op, (t,), (t._data,), (shifts, (1,)))
        return _shape.reshape(r, (c.B,) + tuple(c.ls[0]))
    R[ROLL] = roll_rule
    R[ROT90] = lambda c, args: apply(c.op, tuple(c.ts), tuple(c.arrs),
                                     (args[0], tuple(d + 1 for d in args[1])))

    def repeat_rule(c, args):
        reps = tuple(args[0])
        t = b._pad(c.ts[0], c.B, c.ls[0], len(reps))
        return apply(c.op, (t,), (b._arr(t, c.arrs[0]),), ((1,) + reps,))
    R[REPEAT] = repeat_rule

    def block_diag_rule(c, args):
        dt = np.dtype(args[0])
        ts = []
        for t, bd, ls in zip(c.ts, c.bd, c.ls):
            n, m = _block_dims(ls)
            t = _shape.reshape(t, (c.B, n, m)) if bd else \
                b._batch_expand(_shape.reshape(t, (n, m)), c.B)
            ts.append(t.to(_dtype._FROM_NP[dt]) if t._data.dtype != dt else t)
        total = sum(t._data.shape[2] for t in ts)
        rows, col = [], 0
        for t in ts:
            n, m = t._data.shape[1:]
            parts = [t]
            if col:
                parts.insert(0, _wrap(np.zeros((c.B, n, col), dt)))
            if total - col - m:
                parts.append(_wrap(np.zeros((c.B, n, total - col - m), dt)))
            rows.append(_shape.cat(parts, 2) if len(parts) > 1 else t)
            col += m
        return _shape.cat(rows, 1)
    R[BLOCK_DIAG] = block_diag_rule

    def diag_rule(c, args):
        return apply(c.op, tuple(c.ts), tuple(c.arrs), (args[0], args[1] + 1, args[2] + 1))
    R[DIAG_EMBED] = diag_rule
    R[_s.DIAGONAL] = diag_rule

    def unfold_rule(c, args):
        if c.ls[0]:
            return apply(c.op, tuple(c.ts), tuple(c.arrs), (args[0] + 1,) + tuple(args[1:]))
        t = _shape.reshape(c.ts[0], (c.B, 1))
        r = apply(c.op, (t,), (t._data,), (1,) + tuple(args[1:]))
        return _shape.reshape(r, (c.B, -1))
    R[_s.UNFOLD] = unfold_rule
    R[NARROW_COPY] = b._dim_first
    R[UNSAFE_SPLIT] = R[UNSAFE_SPLIT_SIZES] = b._dim_first

    def scatter_rule(shift):
        def rule(c, args):
            (x, src), (bx, bs) = c.ts, c.bd
            if not bx:
                x = b._batch_expand(x, c.B)
            if not bs:
                src = b._batch_expand(src, c.B)
            return apply(c.op, (x, src), (b._arr(x, c.arrs[0]), b._arr(src, c.arrs[1])),
                         shift(args))
        return rule
    R[SELECT_SCATTER] = scatter_rule(lambda a: (a[0] + 1, a[1]))
    R[SLICE_SCATTER] = scatter_rule(lambda a: (a[0] + 1,) + tuple(a[1:]))
    R[DIAGONAL_SCATTER] = scatter_rule(lambda a: (a[0], a[1] + 1, a[2] + 1))
    R[VIEW_AS_REAL] = R[VIEW_AS_COMPLEX] = R[CONJ_PHYSICAL] = b._pointwise()
    R[CONJ_PHYSICAL_] = b._pointwise()
    R[ALIAS_COPY] = b._pointwise()
    R[FILL_S] = b._pointwise()

    def masked_select_rule(c, args):
        g = _shape.reshape(c.ts[0], (c.B, -1))
        return b._flat_index(g, b._arr(g, c.arrs[0]), np.flatnonzero(args[0]._data))
    R[MASKED_SELECT] = masked_select_rule
    R[FILL_T] = b._fill_like
    for view_op, copy_op in COPY_OPS.items():
        rule = R.get(view_op)
        if rule is not None:
            R[copy_op] = rule
    # as_strided_copy: the batched copy reads the view's elements by their positions in the
    # logical input (as the replay of an as_strided view does).
    R[COPY_OPS[_s.AS_STRIDED]] = lambda c, args: b._view_replay(
        c, (((_s.AS_STRIDED, args, None),),))

    def as_strided_scatter_rule(c, args):
        size, stride, offset = args
        from .views_inplace import storage_positions
        flat = storage_positions(size, stride, offset).reshape(-1)
        (x, src), (bx, bs) = c.ts, c.bd
        x = _shape.reshape(x if bx else b._batch_expand(x, c.B), (c.B, -1))
        src = _shape.reshape(src if bs else b._batch_expand(src, c.B), (c.B, -1))
        idx = (slice(None), flat)
        r = apply(_s.INDEX_PUT, (x, src), (b._arr(x, c.arrs[0]), b._arr(src, c.arrs[0])),
                  (idx, _s._index_tensors(idx, 2)))
        return _shape.reshape(r, (c.B,) + tuple(c.ls[0]))
    R[AS_STRIDED_SCATTER] = as_strided_scatter_rule


_install_rules()
