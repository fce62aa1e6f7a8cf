"""``out=`` arguments: the result of a function written into tensors the caller gives.

Note [out= arguments]
The functions PyTorch gives an ``out=`` keyword (``OUT_FUNCTIONS`` in ``_signature.py``) take
``*, out=None`` in their declared signature; the generated wrapper calls ``call_with_out``
only when ``out`` is given, so a call without it pays one ``is not None`` test. With ``out``:

* the function runs as usual; its result is then written into ``out`` (a Tensor, or a tuple
  of Tensors for functions with several results, ``max(x, 0, out=(values, indices))``), and
  ``out`` is returned (a tuple as the function's own result type);
* when autograd would have to record the call (grad mode on and the result or ``out``
  requires grad) it is refused: out= functions are not differentiable (as in PyTorch);
* the result's dtype must be castable to ``out``'s (no complex -> real, float -> integer,
  number -> bool): PyTorch's "result type Float can't be cast to the desired output type
  Long"; a few functions (and every multi-result one) want the exact dtype, with their own
  wording (``_EXACT``);
* an ``out`` of another shape is resized: silently when it has no elements or the function
  is a factory, else with PyTorch's deprecation UserWarning; the 1-D sequence factories
  (``arange``, ``linspace``, ``fftfreq`` ...) keep an ``out`` with the right number of
  elements as it is, and ``arange`` and ``fftfreq`` warn in their own words otherwise;
* ``out`` may be one of the inputs (the result is computed first, then written); it may not
  partly overlap an input or have elements that share memory (PyTorch's "unsupported
  operation"); ``_NO_OVERLAP`` functions refuse any overlap with their inputs;
* ``out``'s version counter moves once per written tensor;
* a factory (``arange(5, out=t)``) without ``dtype=`` takes ``out``'s dtype.

Nothing is written before every check has passed, so a refused call leaves ``out`` as it was.

Example:
    >>> import ndgrad
    >>> t = ndgrad.zeros(3)
    >>> ndgrad.add(ndgrad.ones(3), 1, out=t) is t, t
    (True, tensor([2., 2., 2.]))
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from . import _creation, _dtype, _write_watch
from . import return_types as _return_types
from .autograd.grad_mode import is_grad_enabled
from .tensor import Tensor, _wrap

__all__ = ["call_with_out"]

_RESIZE_MSG = (
    "An output with one or more elements was resized since it had shape {old}, which does not "
    "match the required output shape {new}. This behavior is deprecated, and in a future "
    "PyTorch release outputs will not be resized unless they have zero elements. You can "
    "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
    "t.resize_(0).")
_OVERLAP_MSG = ("unsupported operation: some elements of the input tensor and the written-to "
                "tensor refer to a single memory location. Please clone() the tensor before "
                "performing the operation.")
_INTERNAL_OVERLAP_MSG = ("unsupported operation: more than one element of the written-to tensor "
                         "refers to a single memory location. Please clone() the tensor before "
                         "performing the operation.")
# C++ type names, as PyTorch's "Expected out tensor to have dtype ..." messages print them.
_CPP_NAMES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
              "float64": "double", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>", "uint8": "unsigned char",
              "int8": "signed char", "int16": "short int", "int32": "int", "int64": "long int",
              "bool": "bool"}
_CAN_CAST_MSG = ("Expected canCast( typeMetaToScalarType(self.dtype()), "
                 "typeMetaToScalarType(out.dtype())) to be true, but got false.  (Could this "
                 "error message be improved?  If so, please report an enhancement request to "
                 "PyTorch.)")
_EXPECTED_OUT = "Expected out tensor to have dtype {want}, but got {got} instead"
# Functions whose out must have exactly the result's dtype, with their message.
_EXACT = {
    "amax": "Expected the dtype for input and out to match, but got {want_t} for input's "
            "dtype and {got_t} for out's dtype.",
    "amin": "Expected the dtype for input and out to match, but got {want_t} for input's "
            "dtype and {got_t} for out's dtype.",
    "complex": "Expected object of scalar type {want_t} but got scalar type {got_t} for "
               "argument 'out'",
    "gather": _EXPECTED_OUT,
    "multinomial": "multinomial expects Long tensor out, got: {got_t}",
    "index_select": _EXPECTED_OUT,
    "take": _EXPECTED_OUT,
    "masked_select": _EXPECTED_OUT,
}
# Functions whose result dtype is fixed: torch checks their out before reading the input.
_FIXED_DTYPE = {"multinomial": _dtype.int64}
# Functions that read their input at other positions than they write: no overlap at all.
_NO_OVERLAP = frozenset({"gather", "index_select", "take", "take_along_dim", "masked_select"})
_FACTORIES = frozenset({"arange", "zeros", "ones", "full", "empty", "eye", "linspace",
                        "logspace", "rand", "randn", "fft_fftfreq", "fft_rfftfreq", "range",
                        "randint", "randperm"})
# Factories of a 1-D sequence: an out with the right number of elements keeps its shape;
# another count is resized, with their own warning for ``_COUNT_WARN`` (the other factories
# resize silently).
_RANGES = frozenset({"arange", "range", "linspace", "logspace", "fft_fftfreq", "fft_rfftfreq"})
_COUNT_WARN = frozenset({"arange", "fft_fftfreq", "fft_rfftfreq"})
_RANGE_RESIZE_MSG = (
    "The number of elements in the out tensor of shape {old} is {n} which does not match the "
    "computed number of elements {m}. Note that this may occur as a result of rounding error. "
    "The out tensor will be resized to a tensor of shape ({m},).")


def _no_grad_msg(name: str) -> str:
    return (f"{name}(): functions with out=... arguments don't support automatic "
            f"differentiation, but one of the arguments requires grad.")


def _castable(src: _dtype.dtype, dst: _dtype.dtype) -> bool:
    """PyTorch's canCast: no complex -> non-complex, float -> integral, non-bool -> bool."""
    if src.is_complex and not dst.is_complex:
        return False
    if src.is_floating_point and not (dst.is_floating_point or dst.is_complex):
        return False
    return not (src is not _dtype.bool and dst is _dtype.bool)


def _check_dtype(name: str, result: Any, out: Tensor, exact: bool) -> None:
    """``result``: the result tensor, or its dtype when known before the call."""
    src, dst = getattr(result, "dtype", result), out.dtype
    if src is dst:
        return
    msg = _EXACT.get(name, _EXPECTED_OUT if exact else None)
    if msg is not None:
        raise RuntimeError(msg.format(want=_CPP_NAMES[src.name], got=_CPP_NAMES[dst.name],
                                      want_t=src._torch_name, got_t=dst._torch_name))
    if not _castable(src, dst):
        raise RuntimeError(f"result type {src._torch_name} can't be cast to the desired "
                           f"output type {dst._torch_name}")


def _inputs(args: tuple, kwargs: dict) -> list:
    found = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            found.append(a._data)
        elif isinstance(a, (tuple, list)):
            found.extend(x._data for x in a if isinstance(x, Tensor))
    return found


def _same_layout(a: np.ndarray, b: np.ndarray) -> bool:
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape and a.strides == b.strides)


def _check_overlap(name: str, out: np.ndarray, inputs: list) -> None:
    if out.size > 1 and any(s == 0 and n > 1 for s, n in zip(out.strides, out.shape)):
        raise RuntimeError(_INTERNAL_OVERLAP_MSG)
    for arr in inputs:
        if not np.may_share_memory(arr, out):
            continue
        try:
            # NumPy documents any bound; its stub admits only -1 and 0.
            shared = np.shares_memory(arr, out, max_work=10000)  # type: ignore[arg-type]
        except np.exceptions.TooHardError:      # undecided: allowed, as PyTorch's check does
            continue
        if shared and (name in _NO_OVERLAP or not _same_layout(arr, out)):
            raise RuntimeError(_OVERLAP_MSG)


# Multi-result functions whose other overloads make PyTorch's parser report a non-tuple
# ``out`` as a mismatch of all of them (``max(x, 1, out=t)``), with their overloads.
_OVERLOADED_OUT = {
    "max": " * (Tensor input, *, Tensor out = None)\n * (Tensor input, Tensor other, *, Tensor "
           "out = None)\n * (Tensor input, int dim, bool keepdim = False, *, tuple of Tensors "
           "out = None)\n",
    "sort": " * (Tensor input, *, bool stable, int dim = -1, bool descending = False, tuple of "
            "Tensors out = None)\n * (Tensor input, int dim = -1, bool descending = False, *, "
            "tuple of Tensors out = None)\n"}
_OVERLOADED_OUT["min"] = _OVERLOADED_OUT["max"]
# Functions with several overloads, all taking ``out``: PyTorch's parser reports any out that is
# not a Tensor as a mismatch of all of them (``sum(x, out=1)``). Reductions given a ``dim``
# match one overload only, and get the single-argument error.
_TWO = (" * (Tensor input, Tensor {o}, *, Tensor out = None)\n"
        " * (Tensor input, Number {o}, *, Tensor out = None)\n")
_THREE = (" * (Tensor input, Tensor {o}, *, Tensor out = None)\n"
          " * (Number self, Tensor {o}{k})\n"
          " * (Tensor input, Number {o}, *, Tensor out = None)\n")
_REDUCE = (" * (Tensor input, *, torch.dtype dtype = None{k})\n"
           " * (Tensor input, {d} dim, bool keepdim = False, *, torch.dtype dtype = None, "
           "Tensor out = None)\n")
_ALL_ANY = (" * (Tensor input, *, Tensor out = None)\n"
            " * (Tensor input, tuple of ints dim = None, bool keepdim = False, *, Tensor out = "
            "None)\n * (Tensor input, int dim, bool keepdim = False, *, Tensor out = None)\n")
_OVERLOADED_OUT.update({
    "sum": _REDUCE.format(d="tuple of ints", k=""),
    "prod": _REDUCE.format(d="int", k=""),
    "mean": _REDUCE.format(d="tuple of ints", k=", Tensor out = None"),
    "mm": (" * (Tensor input, Tensor mat2, *, Tensor out = None)\n"
           " * (Tensor input, Tensor mat2, torch.dtype out_dtype, *, Tensor out = None)\n"),
    "pow": _THREE.format(o="exponent", k=", *, Tensor out = None"),
    "float_power": _THREE.format(o="exponent", k=", *, Tensor out = None"),
    "xlogy": _THREE.format(o="other", k=", *, Tensor out = None"),
    "remainder": _THREE.format(o="other", k=""),
    "clamp": (" * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)\n"
              " * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n"),
    "lerp": (" * (Tensor input, Tensor end, Tensor weight, *, Tensor out = None)\n"
             " * (Tensor input, Tensor end, Number weight, *, Tensor out = None)\n"),
    "all": _ALL_ANY, "any": _ALL_ANY,
    "div": (" * (Tensor input, Tensor other, *, Tensor out = None)\n"
            " * (Tensor input, Tensor other, *, str rounding_mode, Tensor out = None)\n"
            " * (Tensor input, Number other, *, str rounding_mode)\n")})
_OVERLOADED_OUT["bmm"] = _OVERLOADED_OUT["mm"]
for _n in ("fmod", "eq", "ne", "lt", "le", "gt", "ge"):
    _OVERLOADED_OUT[_n] = _TWO.format(o="other")
for _n in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _OVERLOADED_OUT[_n] = _THREE.format(o="other", k="")
# reductions whose ``dim`` selects one overload (then ``out``'s own error)
_DIM_SELECTS = frozenset({"sum", "prod"})
# Binary ops whose ``out`` may be a Python number: PyTorch's parser wraps it into a 0-d tensor
# (int64, bool, the default float or complex dtype), so the result's dtype is checked against
# it (``add(x, y, out=3)``: "result type Float can't be cast ...") or the result is written into
# a temporary (a float).
_NUMBER_OUT = frozenset({"add", "sub", "mul", "div", "true_divide", "floor_divide",
                         "multiply", "subtract", "divide"})
# where ``out`` is in PyTorch's signature, when not after all of ndgrad's declared arguments
_OUT_POSITION = {"sort": 3}


def _arg_word(v: Any) -> str:
    if isinstance(v, Tensor):
        return "Tensor"
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _got(args: tuple, kwargs: Any, out: Any) -> list:
    """PyTorch's listing of the arguments given: the positional ones (those left at their
    default None/False at the end are taken as not given), ``out``, the keywords set."""
    pos = list(args)
    while pos and (pos[-1] is None or pos[-1] is False):
        pos.pop()
    got = [_arg_word(a) for a in pos]
    got.append(f"out={_arg_word(out)}")
    got.extend(f"{k}={_arg_word(v)}" for k, v in (kwargs or {}).items() if v is not None)
    return got


def _check_out_type(name: str, out: Any, n: int, args: tuple = (), kwargs: Any = None) -> None:
    if n < 0:
        if not isinstance(out, Tensor):
            if name in _OVERLOADED_OUT and not (name in _DIM_SELECTS and len(args) > 1
                                                and args[1] is not None):
                if name in ("max", "min"):
                    got = [_arg_word(a) for a in args if a is not None and a is not False]
                    got.append(f"out={_arg_word(out)}")
                else:
                    got = _got(args, kwargs, out)
                raise TypeError(f"{name}() received an invalid combination of arguments - got "
                                f"({', '.join(got)}), but expected one of:\n"
                                f"{_OVERLOADED_OUT[name]}")
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
        return
    if not isinstance(out, (tuple, list)):
        if name in _OVERLOADED_OUT and not (len(args) > 2 and args[2]):
            got = [_arg_word(a) for a in args if a is not None and a is not False]
            got.append(f"out={_arg_word(out)}")
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"({', '.join(got)}), but expected one of:\n{_OVERLOADED_OUT[name]}")
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not "
                        f"{type(out).__name__}")
    if len(out) != n:
        raise TypeError(f"expected tuple of {n} elements but got {len(out)}")
    pos = _OUT_POSITION.get(name, len(args) + len(kwargs or ()))
    for i, t in enumerate(out):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {pos}, but got "
                            f"{_arg_word(t)}")


def _write(name: str, dst: Tensor, src: Tensor) -> None:
    if src.is_sparse and not dst.is_sparse:
        # torch fails an internal assert here (its sparse kernels expect a sparse out)
        raise RuntimeError(f"{name}(): a sparse result cannot be written into the strided "
                           "out tensor: expected a sparse out (self.is_sparse())")
    if _write_watch.watch is not None:                  # Note [Write watchers]
        _write_watch.watch(dst._data)
    shape = src._data.shape
    if dst._data.shape != shape:
        if name in _RANGES:
            if dst._data.size == src._data.size:     # PyTorch keeps out's shape: same count
                _dtype.copyto(dst._data, src._data.reshape(dst._data.shape))
                dst._bump_version()
                return
            if dst._data.size and name in _COUNT_WARN:
                warnings.warn(_RANGE_RESIZE_MSG.format(old=list(dst._data.shape),
                                                       n=dst._data.size, m=src._data.size),
                              UserWarning, stacklevel=4)
        elif dst._data.size and name not in _FACTORIES:   # factories resize silently
            warnings.warn(_RESIZE_MSG.format(old=list(dst._data.shape), new=list(shape)),
                          UserWarning, stacklevel=4)
        dst._data = np.empty(shape, dtype=dst._data.dtype)
    _dtype.copyto(dst._data, src._data)
    dst._bump_version()


def _number_tensor(v: Any) -> Tensor:
    """A Python number given as ``out``, as PyTorch's parser wraps it: a 0-d tensor."""
    return _creation.tensor(v)


_NO_DTYPE = object()


def _fftfreq_in_shape(out: Tensor, result: Tensor, args: tuple, kwargs: dict) -> Tensor:
    """torch's ``fftfreq(n, out=...)`` into an out of n elements and several dims: it writes
    ``arange(n)`` into out (keeping its shape), then the negative frequencies into a 1-D
    window of out's memory that starts at row ``(n + 1) // 2`` of out, past its end unless
    a row holds one element, so they are lost; then it scales."""
    n = int(args[0])
    d = args[1] if len(args) > 1 else kwargs.get("d", 1.0)
    shape, strides = tuple(out.shape), out.stride()
    span = 1 + sum((a - 1) * abs(b) for a, b in zip(shape, strides))
    mem = np.zeros(span)                      # out's memory, laid out by its strides
    logical = np.lib.stride_tricks.as_strided(mem, shape, [abs(b) * 8 for b in strides])
    logical[...] = np.arange(n, dtype=np.float64).reshape(shape)
    start, m = (n + 1) // 2 * abs(strides[0]), n // 2
    if start < span:
        mem[start:start + m] = np.arange(-m, 0)[:span - start]
    nd = result.dtype.np
    work = np.dtype(np.float32) if nd.itemsize == 2 else nd      # half types: in float32
    scaled = logical.astype(work) * work.type(1.0 / (n * d))     # torch's mul_ in out's dtype
    return _wrap(np.asarray(scaled, dtype=nd))


def call_with_out(name: str, impl: Callable, args: tuple, kwargs: dict, out: Any) -> Any:
    """``impl(*args, **kwargs)`` written into ``out`` (Note [out= arguments])."""
    if name in _NUMBER_OUT and isinstance(out, (bool, int, float, complex)):
        out = _number_tensor(out)
    if name in _FACTORIES and isinstance(out, Tensor):
        dt = kwargs.get("dtype", _NO_DTYPE)
        if dt is None:
            kwargs = {**kwargs, "dtype": out.dtype}
        elif dt is not _NO_DTYPE and _dtype.to_dtype(dt) is not out.dtype:
            raise RuntimeError(f"dtype {_dtype.to_dtype(dt)._torch_name} does not match dtype "
                               f"of out parameter ({out.dtype._torch_name})")
    if isinstance(out, Tensor) and is_grad_enabled() and out.requires_grad:
        if name in ("empty", "randn"):      # torch resizes their out first
            raise RuntimeError("cannot resize variables that require grad")
        raise RuntimeError(_no_grad_msg(("aten::" + name) if name in _FACTORIES else name))
    if name in _FIXED_DTYPE and isinstance(out, Tensor):
        _check_dtype(name, _FIXED_DTYPE[name], out, False)
    wants_grad = False
    if name in _FACTORIES and kwargs.get("requires_grad") and isinstance(out, Tensor) and \
            (out.dtype.is_floating_point or out.dtype.is_complex):
        # torch fills out and makes it a leaf that requires grad
        kwargs = {**kwargs, "requires_grad": False}
        wants_grad = True
    result = impl(*args, **kwargs)
    if name == "fft_fftfreq" and isinstance(out, Tensor) and out.dim() > 1 and \
            out.numel() == result.numel():
        result = _fftfreq_in_shape(out, result, args, kwargs)
    multi = isinstance(result, (tuple, list))
    results = tuple(result) if multi else (result,)
    _check_out_type(name, out, len(results) if multi else -1, args, kwargs)
    outs = tuple(out) if multi else (out,)
    if is_grad_enabled() and any(t.requires_grad for t in (*results, *outs)):
        raise RuntimeError(_no_grad_msg(name))
    inputs = _inputs(args, kwargs)
    if (name in ("max", "min") and not multi and not isinstance(args[1], Tensor)
            and not _castable(result.dtype, out.dtype)):       # the full reduction's wording
        raise RuntimeError(_CAN_CAST_MSG)
    for r, o in zip(results, outs):
        _check_dtype(name, r, o, multi)
        _check_overlap(name, o._data, inputs)
    for r, o in zip(results, outs):
        _write(name, o, r)
    if wants_grad:
        out.requires_grad_(True)
    if not multi:
        return out
    if isinstance(result, list):
        return list(outs)
    if hasattr(result, "_fields"):
        return _return_types.OUT_TYPES.get(type(result).__name__, type(result))(*outs)
    return outs
