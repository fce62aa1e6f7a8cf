"""Storage of meta tensors (``device="meta"``): arrays with a shape, a dtype and strides but no
data.

Note [Meta arrays]
A meta tensor is a Tensor whose ``_data`` is a ``MetaArray``: an ndarray subclass whose memory
is a window of a read-only anonymous mapping reserved with MAP_NORESERVE (an arena). Nothing
ever writes there, so the kernel never commits a page of it: a 10**10-element meta tensor costs
address space only, and distinct meta tensors occupy distinct windows (so NumPy's overlap tests
see the same aliasing as for real tensors). Being true ndarrays with real strides, meta arrays
go through every view op unchanged (transpose, slicing, expand, as_strided, diagonal, reshape
of a viewable layout) and come out with the strides torch gives; reading one reads zeros, so no
code path can crash on it.

What must not happen is a kernel computing a full-size result. ``MetaArray`` takes NumPy's
protocols over, so an op-table forward runs unchanged and its shapes come from NumPy's own
rules, sizes included (conv, pool, unfold, arange ... whose output sizes depend on input sizes
would come out wrong from shrunk stand-ins, and a shape function per op would be ~900 functions
to keep in step with the forwards):

- ufuncs (``__array_ufunc__``): a new meta array of the broadcast shape, with the dtype the
  ufunc gives on 0-d stand-ins (``reduce``/``accumulate`` with their axis, keepdims and dtype;
  gufuncs such as matmul by their signature); nothing is computed, and ``out=`` arrays are
  returned untouched (a write into a meta array is a no-op).
- NumPy functions (``__array_function__``): shape rules for those forwards use on large arrays
  (concatenate, stack, where, the ``*_like`` factories, dot, copyto); NumPy's Python-level
  compositions of ufuncs and views (sum, mean, var, transpose, moveaxis, broadcast_to ...) run
  as they are on meta arrays; any other function runs on the zero data when its array
  arguments are small (at most ``SMALL`` elements) and its results become meta arrays (views
  stay views of the same window). On larger arguments it raises NotImplementedError rather
  than allocate.
- the copying ndarray methods (astype, copy, reshape when a copy is needed, flatten, item
  assignment, fill, sort): new meta arrays, or no-ops for writes.

- outputs a forward allocates itself and fills with ``out=``: ``_aligned.empty`` and the kernel
  workspace (ops/_workspace.py) hand out meta arrays while a forward on meta inputs runs
  (Note [Meta forwards] below); a few forwards allocate with ``np.empty_like(x, shape=...)``
  for the same reason. A forward that calls ``np.empty``/``np.zeros`` itself still allocates
  its full output on meta inputs (fine for small ones, a MemoryError for huge ones).

The dispatcher checks every op's inputs and outputs once a meta tensor exists (``_META`` in
ops/_dispatch.py, off until then, like Note [Barebones unsigned dtypes]): mixing meta and cpu
tensors raises torch's device error, data-dependent ops raise torch's errors, and a forward
that produced a plain array from meta inputs has it replaced by a meta array. Backward nodes
whose gradient is meta run their Tensor rule instead of the raw one (the raw rules build plain
arrays). Results therefore have the layout ndgrad's cpu op gives (torch's for most ops).
Cost: nothing for plain tensors until a meta tensor exists; then ~0.1 µs per op (the test of
the op's arrays in ``_meta_forward``).

Example:
    >>> import ndgrad
    >>> x = ndgrad.empty(100000, 100000, device="meta")
    >>> (x @ x).sum(0).shape
    ndgrad.Size([100000])
"""

from __future__ import annotations

import mmap
import threading
from typing import Any, Callable, Optional

import numpy as np

__all__ = ["MetaArray", "empty", "like", "to_meta", "SMALL", "WATCHERS"]

# Largest element count for which a NumPy function without a shape rule runs on zero data.
SMALL = 1 << 22
# Called once when the first meta array is made (the dispatcher turns its checks on).
WATCHERS: list = []
_ARENA_BYTES = 1 << 40
_MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000)
_lock = threading.Lock()
_np: Any = np                # NumPy's calls with arguments its stubs do not describe


# Note [Meta forwards]: how many op forwards on meta inputs run (all threads), and whether the
# running thread runs one: then ``_aligned.empty`` gives its large outputs as meta arrays (the
# forwards that allocate their output and write into it with ``out=``).
FORWARDS = [0]


class _Local(threading.local):
    on = False


_local = _Local()


def in_forward() -> bool:
    return _local.on


def run_forward(fn: Callable, arrays: tuple, args: tuple) -> Any:
    """``fn(*arrays, *args)`` (an op's forward on meta inputs), its outputs as meta arrays."""
    prev = _local.on
    with _lock:
        FORWARDS[0] += 1
    _local.on = True
    try:
        out = fn(*arrays, *args)
    finally:
        _local.on = prev
        with _lock:
            FORWARDS[0] -= 1
    return to_meta(out)


class _Arena:
    __slots__ = ("mm", "pos", "size")

    def __init__(self, size: int) -> None:
        self.mm = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS |
                            _MAP_NORESERVE, prot=mmap.PROT_READ)
        self.pos = 0
        self.size = size


_arena: list = []


def _window(nbytes: int) -> tuple:
    """A fresh (buffer, offset) with ``nbytes`` never-written bytes."""
    with _lock:
        if not _arena:
            for w in WATCHERS:
                w()
        a = _arena[0] if _arena else None
        if a is None or a.pos + nbytes > a.size:
            a = _Arena(max(_ARENA_BYTES, (nbytes + 4095) & ~4095))
            _arena[:] = [a]
        off = a.pos
        a.pos += (nbytes + 63) & ~63
        return a.mm, off


def _contiguous(shape: tuple, itemsize: int, order: Optional[tuple] = None) -> tuple:
    """Strides (in bytes) of a dense layout: C order, or ``order`` (dims, outermost first)."""
    dims = range(len(shape)) if order is None else order
    strides = [0] * len(shape)
    s = itemsize
    for d in reversed(list(dims)):
        strides[d] = s
        s *= max(shape[d], 1)
    return tuple(strides)


def empty(shape: Any, dtype: Any, strides: Optional[tuple] = None,
          order: Optional[tuple] = None) -> "MetaArray":
    """A new meta array (``strides`` in bytes, or a dense layout: C order, or ``order``)."""
    shape = tuple(int(n) for n in shape)
    dt = np.dtype(dtype)
    if strides is None:
        strides = _contiguous(shape, dt.itemsize, order)
    if 0 in shape:
        nbytes = 0
    else:
        nbytes = dt.itemsize + sum((n - 1) * abs(s) for n, s in zip(shape, strides))
    buf, off = _window(nbytes)
    return np.ndarray.__new__(MetaArray, shape, dt, buffer=buf, offset=off, strides=strides)


def _dense_order(a: np.ndarray) -> Optional[tuple]:
    """The dims of ``a`` outermost first when it is dense but not C-ordered (None: C order),
    the layout torch's kernels give results of such an input."""
    if a.flags.c_contiguous or a.ndim < 2:
        return None
    st = a.strides
    if any(s <= 0 for s, n in zip(st, a.shape) if n > 1):
        return None
    order = tuple(sorted(range(a.ndim), key=lambda d: -st[d]))
    expect = a.itemsize
    for d in reversed(order):
        if a.shape[d] > 1 and st[d] != expect:
            return None
        expect *= a.shape[d]
    return order


def like(a: np.ndarray, shape: Any = None, dtype: Any = None) -> "MetaArray":
    """A new meta array with ``a``'s shape (or ``shape``), dtype (or ``dtype``) and, for the
    same shape, its dense layout."""
    shape = a.shape if shape is None else tuple(shape)
    order = _dense_order(a) if shape == a.shape else None
    return empty(shape, a.dtype if dtype is None else dtype, order=order)


def to_meta(a: Any) -> Any:
    """``a`` (an ndarray, scalar or tuple of them) as meta arrays with the same shapes and
    dtypes (meta arrays are returned as they are)."""
    if type(a) is MetaArray:
        return a
    if isinstance(a, tuple):
        return tuple(to_meta(x) for x in a)
    if isinstance(a, list):
        return [to_meta(x) for x in a]
    if isinstance(a, np.ndarray):
        return like(a)
    if isinstance(a, np.generic):
        return empty((), a.dtype)
    return a


def _is_arr(x: Any) -> bool:
    return isinstance(x, np.ndarray)


def _standin(x: Any) -> Any:
    return np.zeros((), x.dtype) if _is_arr(x) else x


def _strip(x: Any) -> Any:
    if type(x) is MetaArray:
        return x.view(np.ndarray)
    if type(x) in (list, tuple):
        return type(x)(_strip(y) for y in x)
    return x


def _numel(x: Any) -> int:
    if type(x) is MetaArray:
        return x.size
    if type(x) in (list, tuple):
        return sum(_numel(y) for y in x)
    return 0


def _metas(x: Any, out: list) -> list:
    if type(x) is MetaArray:
        out.append(x)
    elif type(x) in (list, tuple):
        for y in x:
            _metas(y, out)
    return out


def _remeta(r: Any, sources: list) -> Any:
    """Results of a function run on stripped meta arrays as meta arrays: views of an input stay
    views of its window, other arrays become new meta arrays of their shape and dtype."""
    if type(r) is tuple:
        return tuple(_remeta(x, sources) for x in r)
    if type(r) is list:
        return [_remeta(x, sources) for x in r]
    if isinstance(r, np.ndarray) and type(r) is not MetaArray:
        for s in sources:
            if np.may_share_memory(r, s):
                return r.view(MetaArray)
        return like(r)
    if isinstance(r, np.generic):
        return empty((), r.dtype)
    return r


# ---------------------------------------------------------------------- ufuncs
def _parse_signature(sig: str) -> tuple:
    ins, outs = sig.replace(" ", "").split("->")

    def groups(s: str) -> list:
        return [tuple(d for d in g.split(",") if d) for g in s[1:-1].split("),(")]
    return groups(ins), groups(outs)


def _gufunc(ufunc: Any, inputs: tuple, kwargs: dict) -> Any:
    ins, outs = _parse_signature(ufunc.signature)
    sizes: dict = {}
    batch = []
    stand = []
    for x, core in zip(inputs, ins):
        shape = np.shape(x)
        if len(shape) < len(core):     # missing optional dims (matmul's vectors)
            core = tuple(c for c in core if not c.endswith("?"))
        n = len(core)
        for name, size in zip(core, shape[len(shape) - n:]):
            name = name.rstrip("?")
            if sizes.get(name, size) != size:
                raise ValueError(f"{ufunc.__name__}: Input operand has a mismatch in its core "
                                 f"dimension ({size} is different from {sizes[name]})")
            sizes[name] = size
        batch.append(shape[:len(shape) - n])
        stand.append(np.zeros((1,) * n, x.dtype) if _is_arr(x) else x)
    r = ufunc(*stand, **kwargs)
    lead = np.broadcast_shapes(*batch)
    rs = r if isinstance(r, tuple) else (r,)
    res = []
    for o, core in zip(rs, outs):
        names = [c.rstrip("?") for c in core if not c.endswith("?") or c.rstrip("?") in sizes]
        if len(names) > np.ndim(o):
            names = [c.rstrip("?") for c in core if not c.endswith("?")]
        res.append(empty(lead + tuple(sizes[c] for c in names), np.asarray(o).dtype))
    return tuple(res) if isinstance(r, tuple) else res[0]


def _reduced_shape(shape: tuple, axis: Any, keepdims: bool) -> tuple:
    nd = len(shape)
    if axis is None:
        axes = set(range(nd))
    else:
        axes = {a % nd if nd else a for a in (axis if isinstance(axis, tuple) else (axis,))}
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def _ufunc(ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
    if "where" in kwargs:
        kwargs["where"] = True
    if method == "__call__":
        if ufunc.signature is not None:
            return _gufunc(ufunc, inputs, kwargs)
        shape = np.broadcast_shapes(*(np.shape(x) for x in inputs))
        r = ufunc(*(_standin(x) for x in inputs), **kwargs)
        ref = next((x for x in inputs if _is_arr(x) and x.shape == shape), None)
        if isinstance(r, tuple):
            return tuple(_result(ref, shape, o) for o in r)
        return _result(ref, shape, r)
    x = inputs[0]
    if method in ("reduce", "accumulate"):
        axis = kwargs.get("axis", 0)
        probe = np.zeros((1,) * x.ndim, x.dtype)
        r = getattr(ufunc, method)(probe, **kwargs)
        if method == "accumulate":
            return empty(x.shape, np.asarray(r).dtype)
        return empty(_reduced_shape(x.shape, axis, kwargs.get("keepdims", False)),
                     np.asarray(r).dtype)
    if method == "outer":
        r = ufunc(*(_standin(y) for y in inputs), **kwargs)
        return empty(tuple(n for y in inputs for n in np.shape(y)), np.asarray(r).dtype)
    return _small(getattr(ufunc, method), inputs, kwargs)


def _result(ref: Any, shape: tuple, r: Any) -> "MetaArray":
    dt = np.asarray(r).dtype
    return like(ref, dtype=dt) if ref is not None else empty(shape, dt)


def _small(fn: Callable, args: Any, kwargs: dict) -> Any:
    """``fn`` run on the zero data of small meta arrays, its results made meta."""
    sources = _metas(args, [])
    _metas(list(kwargs.values()), sources)
    if sum(s.size for s in sources) > SMALL:
        name = getattr(fn, "__name__", repr(fn))
        raise NotImplementedError(
            f"ndgrad: '{name}' has no shape rule for meta tensors and its meta inputs hold more "
            f"than {SMALL} elements")
    res = fn(*_strip(args), **{k: _strip(v) for k, v in kwargs.items()})
    return _remeta(res, [s.view(np.ndarray) for s in sources])


# ---------------------------------------------------------------------- NumPy functions
def _concatenate(arrays: Any, axis: Any = 0, out: Any = None, dtype: Any = None,
                 casting: str = "same_kind") -> Any:
    arrays = list(arrays)
    stand = [np.zeros((1,) * np.ndim(a), a.dtype if _is_arr(a) else np.asarray(a).dtype)
             for a in arrays]
    r = _np.concatenate(stand, axis=0 if axis is None else axis, dtype=dtype, casting=casting)
    if out is not None:
        return out
    if axis is None:
        return empty((sum(int(np.size(a)) for a in arrays),), r.dtype)
    shape = list(np.shape(arrays[0]))
    ax = axis % len(shape)
    for a in arrays[1:]:
        s = np.shape(a)
        if len(s) != len(shape) or any(s[i] != shape[i] for i in range(len(s)) if i != ax):
            raise ValueError("all the input array dimensions except for the concatenation axis "
                             "must match exactly")
    shape[ax] = sum(np.shape(a)[ax] for a in arrays)
    return empty(tuple(shape), r.dtype)


def _stack(arrays: Any, axis: int = 0, out: Any = None, dtype: Any = None,
           casting: str = "same_kind") -> Any:
    arrays = list(arrays)
    shapes = {np.shape(a) for a in arrays}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    shape = list(shapes.pop())
    r = _np.stack([np.zeros((), np.asarray(a).dtype if not _is_arr(a) else a.dtype)
                   for a in arrays], dtype=dtype, casting=casting)
    if out is not None:
        return out
    shape.insert(axis % (len(shape) + 1), len(arrays))
    return empty(tuple(shape), r.dtype)


def _where(cond: Any, *xy: Any) -> Any:
    if not xy:
        return _small(np.where, (cond,), {})
    shape = np.broadcast_shapes(*(np.shape(v) for v in (cond,) + xy))
    r = np.where(*(_standin(v) for v in (cond,) + xy))
    return empty(shape, r.dtype)


def _like_factory(kind: str) -> Callable:
    def rule(a: Any, *args: Any, dtype: Any = None, order: str = "K", subok: bool = True,
             shape: Any = None, **kw: Any) -> Any:
        if kind == "full" and args:
            kw.setdefault("fill_value", args[0])
        if kind == "full" and dtype is None:
            dtype = a.dtype
        if shape is not None:
            sh = (shape,) if isinstance(shape, int) else tuple(shape)
            return empty(sh, a.dtype if dtype is None else dtype)
        if order in ("C", "A") and not a.flags.f_contiguous or order == "C":
            return empty(a.shape, a.dtype if dtype is None else dtype)
        return like(a, dtype=dtype)
    return rule


def _copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    return None


def _dot(a: Any, b: Any, out: Any = None) -> Any:
    if out is not None:
        return out
    sa, sb = np.shape(a), np.shape(b)
    dt = np.dot(_standin(a), _standin(b)).dtype if _is_arr(a) and _is_arr(b) else \
        np.result_type(a, b)
    if not sa or not sb:
        return empty(np.broadcast_shapes(sa, sb), dt)
    if sa[-1] != (sb[-2] if len(sb) > 1 else sb[0]):
        raise ValueError(f"shapes {sa} and {sb} not aligned")
    return empty(sa[:-1] + sb[:-2] + sb[-1:] if len(sb) > 1 else sa[:-1], dt)


def _arg_reduce(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
    if out is not None:
        return out
    if axis is not None and a.ndim:
        axis = axis % a.ndim
    return empty(_reduced_shape(a.shape, axis, keepdims), np.intp)


def _take_along_axis(arr: Any, indices: Any, axis: Any = -1) -> Any:
    if axis is None:
        return empty(indices.shape, arr.dtype)
    ax = axis % arr.ndim
    return empty(tuple(i if d == ax else max(a, i) for d, (a, i) in
                       enumerate(zip(arr.shape, indices.shape))), arr.dtype)


def _einsum(subscripts: Any, *operands: Any, out: Any = None, dtype: Any = None,
            **kwargs: Any) -> Any:
    if not isinstance(subscripts, str):           # the interleaved form
        return _small(np.einsum, (subscripts,) + operands, dict(kwargs, out=out, dtype=dtype))
    subs = subscripts.replace(" ", "")
    ins, outs = subs.split("->") if "->" in subs else (subs, None)
    sizes: dict = {}
    counts: dict = {}
    ells = []
    for s, op in zip(ins.split(","), operands):
        shape = np.shape(op)
        if "..." in s:
            pre, post = s.split("...")
            ne = len(shape) - len(pre) - len(post)
            ells.append(shape[len(pre):len(pre) + ne])
            labels = list(pre) + [""] * ne + list(post)
        else:
            labels = list(s)
        if len(labels) != len(shape):
            raise ValueError("einstein sum subscripts string contains too many subscripts for "
                             "operand")
        for lab, n in zip(labels, shape):
            if lab:
                counts[lab] = counts.get(lab, 0) + 1
                if sizes.get(lab, 1) != 1 and n not in (1, sizes[lab]):
                    raise ValueError("operands could not be broadcast together with remapped "
                                     f"shapes for label {lab}")
                sizes[lab] = max(sizes.get(lab, 1), n)
    ell = np.broadcast_shapes(*ells) if ells else ()
    if outs is None:
        outs = ("..." if ells else "") + "".join(sorted(k for k, c in counts.items() if c == 1))
    pre, _, post = outs.partition("...")
    shape = tuple(sizes[c] for c in pre) + (ell if "..." in outs else ()) + \
        tuple(sizes[c] for c in post)
    dt = np.dtype(dtype) if dtype is not None else np.result_type(*operands)
    return out if out is not None else empty(shape, dt)


def _same_shape(dtype: Any = None) -> Callable:
    def rule(a: Any, *args: Any, **kwargs: Any) -> Any:
        return empty(a.shape, a.dtype if dtype is None else dtype)
    return rule


def _pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (array.ndim, 2))
    return empty(tuple(n + int(lo) + int(hi) for n, (lo, hi) in zip(array.shape, widths)),
                 array.dtype)


_RULES: dict = {
    np.concatenate: _concatenate, np.stack: _stack, np.where: _where,
    np.zeros_like: _like_factory("zeros"), np.empty_like: _like_factory("empty"),
    np.ones_like: _like_factory("ones"), np.full_like: _like_factory("full"),
    np.copyto: _copyto, np.dot: _dot, np.argmax: _arg_reduce, np.argmin: _arg_reduce,
    np.pad: _pad, np.take_along_axis: _take_along_axis, np.sort: _same_shape(),
    np.argsort: _same_shape(np.intp), np.partition: _same_shape(),
    np.argpartition: _same_shape(np.intp), np.roll: _same_shape(), np.einsum: _einsum,
}
# Functions that are compositions of ufuncs, views and the methods MetaArray overrides: they
# run on meta arrays of any size.
_AS_IS = frozenset(getattr(np, n) for n in (
    "sum", "mean", "prod", "amax", "amin", "max", "min", "any", "all", "cumsum", "cumprod",
    "var", "std", "nansum", "clip", "round", "around", "real", "imag", "transpose", "reshape",
    "moveaxis", "expand_dims", "squeeze", "swapaxes", "broadcast_to", "broadcast_arrays",
    "diagonal", "ravel", "split", "array_split", "atleast_1d", "atleast_2d", "atleast_3d",
    "flip", "may_share_memory", "shares_memory", "ndim", "shape", "size", "result_type",
    "can_cast", "iscomplexobj", "isrealobj", "matmul", "tensordot", "outer", "abs", "square",
    "sqrt", "exp", "log", "conj", "conjugate", "negative", "trace", "linalg.outer",
    "rollaxis", "permute_dims", "matrix_transpose", "isscalar", "astype",
) if hasattr(np, n))


class MetaArray(np.ndarray):
    """An ndarray with no data: the ``_data`` of a meta tensor (Note [Meta arrays])."""

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, out: Any = None,
                        **kwargs: Any) -> Any:
        if method == "at":
            return None
        if out is not None:
            outs = out if isinstance(out, tuple) else (out,)
            return outs[0] if len(outs) == 1 else outs
        return _ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        rule = _RULES.get(func)
        if rule is not None:
            return rule(*args, **kwargs)
        if func in _AS_IS:
            return _remeta(func._implementation(*args, **kwargs), _metas((args, kwargs), []))
        return _small(func, args, kwargs)

    # the methods that copy or write
    def astype(self, dtype: Any, order: str = "K",  # type: ignore[override]
               casting: str = "unsafe", subok: bool = True, copy: bool = True) -> Any:
        dt = np.dtype(dtype)
        if not _np.can_cast(self.dtype, dt, casting):
            raise TypeError(f"Cannot cast array data from {self.dtype!r} to {dt!r} according "
                            f"to the rule {casting!r}")
        if not copy and dt == self.dtype:
            return self
        return like(self, dtype=dt) if order in ("K", "A") else empty(self.shape, dt)

    def copy(self, order: str = "C") -> Any:  # type: ignore[override]
        return like(self) if order in ("K", "A") else empty(self.shape, self.dtype)

    def __copy__(self) -> Any:
        return self.copy("K")

    def __deepcopy__(self, memo: Any) -> Any:
        return self.copy("K")

    def __reduce__(self) -> Any:
        return (empty, (self.shape, self.dtype))

    def reshape(self, *shape: Any, order: str = "C",  # type: ignore[override]
                copy: Any = None) -> Any:
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        try:
            return _np.ndarray.reshape(self, shape, order=order, copy=False)
        except ValueError:
            if copy is False:
                raise
        # a zero-stride array of the same shape reshapes without a copy: NumPy's shape rules
        probe = _np.broadcast_to(np.zeros((), np.bool_), self.shape).reshape(shape, order=order)
        return empty(probe.shape, self.dtype)

    def flatten(self, order: str = "C") -> Any:  # type: ignore[override]
        return empty((self.size,), self.dtype)

    def ravel(self, order: str = "C") -> Any:  # type: ignore[override]
        if self.flags.c_contiguous:
            return np.ndarray.reshape(self, (self.size,))
        return empty((self.size,), self.dtype)

    def fill(self, value: Any) -> None:
        return None

    def sort(self, axis: Any = -1, kind: Any = None, order: Any = None,
             **kw: Any) -> None:
        return None

    def __setitem__(self, index: Any, value: Any) -> None:
        return None

    def __getitem__(self, index: Any) -> Any:
        base = self.view(np.ndarray)
        r = np.ndarray.__getitem__(base, index)
        if not isinstance(r, np.ndarray):        # all integers: the 0-d view instead
            r = np.ndarray.__getitem__(base, (index if isinstance(index, tuple) else (index,))
                                       + (Ellipsis,))
        if np.may_share_memory(r, base):
            return r.view(MetaArray)
        return like(r)

    def __array_wrap__(self, arr: Any, context: Any = None, return_scalar: bool = False) -> Any:
        return to_meta(arr)

    def __iter__(self) -> Any:
        for i in range(len(self)):
            yield self[i]
