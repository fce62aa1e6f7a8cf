"""Declared signatures: torch-style schemas parsed once into argument-checking wrappers.

Note [Declared signatures]
Every public entry point (``ndgrad.sum``, ``Tensor.sum``, ``Tensor.add_`` ...) has a schema in
``ndgrad/_signatures.py`` written like the signatures PyTorch prints in its errors::

    sum(Tensor input, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)

``wrap(schema, impl)`` generates (once, at import) a Python function with exactly that
signature, whose body checks each argument's type with a few inlined ``type(x) is ...`` tests
and then calls ``impl``. So argument-type errors are raised in one place, before any work, with
PyTorch's TypeError wording (``sum(): argument 'keepdim' (position 2) must be bool, not int``),
and Python itself reports missing, surplus or unknown arguments (also a TypeError, as in
PyTorch). An allocation NumPy cannot make (MemoryError) or an axis it refuses (AxisError)
inside the call becomes PyTorch's RuntimeError or IndexError. Implementations stay free of
hand-written type checks; what they still check is what depends on values (dims in range,
shapes that match), with PyTorch's messages.

Types (``?`` after a type also admits None; a default of None without ``?`` means the
argument may be omitted but not passed as None, as ``max(x, None)`` is refused):

=============  ==================================================================
``Tensor``     an ndgrad Tensor
``Scalar``     a Python or NumPy number (bool and complex included) or a 0-d Tensor
``int``        an integer (not bool): Python, NumPy, or a 0-d integer Tensor (passed on as a
               Python int)
``int[]``      a tuple/list/Size of ints; ``int[1]`` also takes a single int
``int...``     varargs sizes: ``f(2, 3)`` or ``f((2, 3))`` (a ``*name`` parameter)
``float``      a real number
``bool``       a Python bool only (PyTorch refuses 0/1 and numpy.bool_ here)
``str``        a string
``ScalarType`` a dtype
``Tensor[]``   a tuple or list of Tensors
``A|B``        either (``Tensor|Scalar`` is PyTorch's pair of overloads)
``Any``        not checked (devices, memory formats, generators: checked by the callee)
=============  ==================================================================

A Tensor (or tensor-list) argument that fails its inline test (a subclass, a tensor-like
object) is looked at for ``__torch_function__`` before its full check, and a live
``TorchFunctionMode`` is one flag test at the top (Note [Torch function protocol] in
``_torch_function.py``): plain tensors pay nothing for the protocol.

Cost, measured on this project's 2-core machine (checked against the unchecked implementation
in one process): about 20-70 ns for a call with tensor and int arguments (``sin(x)``, ``sum(x,
0, True)``), about 0.2 us with Scalar keywords (``add(x, 2.0, alpha=2)``) and 0.4-0.7 us for
varargs sizes (``zeros(2, 3)``, ``x.view(2, 8)``). A function that takes ``out=`` (Note [out=
arguments] in ``_out.py``) pays one ``out is not None`` test when it is not given: about 10-30
ns, within the noise of a ``sin(x)`` call (~1 us).

Example:
    >>> import ndgrad
    >>> from ndgrad._signature import wrap
    >>> f = wrap("twice(Tensor input, bool keepdim=False)", lambda input, keepdim: input * 2)
    >>> f(ndgrad.ones(2))
    tensor([2., 2.])
    >>> f(ndgrad.ones(2), 1)
    Traceback (most recent call last):
    ...
    TypeError: twice(): argument 'keepdim' (position 2) must be bool, not int
"""

from __future__ import annotations

import dis
import inspect
import os
import re
import sys
from typing import Any, Callable, Optional

import numpy as np

from . import _dtype, _layout, _torch_function, types
from ._out import call_with_out
from .tensor import Tensor

__all__ = ["wrap", "parse", "Param"]

_NUMBER_TYPES = (int, float, complex, bool)
_HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------- type predicates
_I64_MIN, _I64_END, _U64_END = -2 ** 63, 2 ** 63, 2 ** 64


def _is_int(v: Any) -> bool:
    """An integer argument (its range is checked after all types, as PyTorch parses)."""
    if type(v) is int:
        return True
    if isinstance(v, np.integer):
        return True
    if isinstance(v, Tensor):
        d = v._data
        return d.ndim == 0 and d.dtype.kind in "iu"
    return isinstance(v, int) and not isinstance(v, bool)


def _as_int(v: Any) -> Any:
    """A NumPy integer or 0-d integer Tensor given for an int parameter, as a Python int (so
    implementations see one kind of int)."""
    if isinstance(v, Tensor):
        return int(v._data)
    return int(v) if isinstance(v, np.integer) else v


def _int_elem(x: Any) -> bool:
    """An element of an int list (out-of-range elements are reported by ``_fail``)."""
    if type(x) is int:
        return _I64_MIN <= x < _I64_END
    return _is_int(x)


def _is_int_list(v: Any) -> bool:
    if not isinstance(v, (tuple, list)):
        return False
    for x in v:
        if type(x) is int:
            if not -9223372036854775808 <= x < 9223372036854775808:
                return False
        elif not _is_int(x):
            return False
    return True


def _is_number_type(v: Any) -> bool:
    if type(v) in _NUMBER_TYPES or isinstance(v, (np.number, np.bool_)):
        return True
    return isinstance(v, Tensor) and v._data.ndim == 0


def _int_range(_value: int) -> None:
    raise ValueError("Overflow when unpacking long long")


def _is_number(v: Any) -> bool:
    """A number operand; Python ints beyond 64 bits raise PyTorch's OverflowError."""
    if type(v) is int:
        # PyTorch converts a Python int operand to int64 or uint64.
        if v < _I64_MIN:
            raise OverflowError("can't convert negative int to unsigned")
        if v >= _U64_END:
            raise OverflowError("int too big to convert")
        return True
    if type(v) in _NUMBER_TYPES or isinstance(v, (np.number, np.bool_)):
        return True
    return isinstance(v, Tensor) and v._data.ndim == 0


def _is_float(v: Any) -> bool:
    if type(v) is float or type(v) is int or type(v) is bool:
        return True
    if isinstance(v, (np.floating, np.integer, np.bool_)):
        return True
    if isinstance(v, Tensor):
        return v._data.ndim == 0 and v._data.dtype.kind in "fiu"
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_tensor_list(v: Any) -> bool:
    return isinstance(v, (tuple, list)) and all([isinstance(x, Tensor) for x in v])


def _is_plain_tensor_list(v: Any) -> bool:
    """A tensor list without subclasses (the fast test; Note [Torch function protocol])."""
    return isinstance(v, (tuple, list)) and all([type(x) is Tensor for x in v])


def _is_size_varargs(v: tuple) -> bool:
    for x in v:                  # the usual case: Python ints in range, no call per element
        if type(x) is not int or not -9223372036854775808 <= x < 9223372036854775808:
            break
    else:
        return bool(v)
    if len(v) == 1 and isinstance(v[0], (tuple, list)):
        return _is_int_list(v[0])
    if not v:
        return False
    if len(v) == 1 and not _int_elem(v[0]):
        return _is_int_list(v[0])
    return all([_int_elem(x) for x in v])


# (inline test for the common case, fallback predicate, name in messages)
_TYPES = {
    "Tensor": ("type({v}) is _Tensor", "isinstance({v}, _Tensor)", "Tensor"),
    "Scalar": ("type({v}) is float or type({v}) is int", "_is_number_type({v})", "Number"),
    "int": ("type({v}) is int", "_is_int({v})", "int"),
    "int[]": ("type({v}) is tuple or type({v}) is list", "False", "tuple of ints"),
    "int[1]": ("type({v}) is int", "_is_int({v}) or _is_int_list({v})", "tuple of ints"),
    "float": ("type({v}) is float or type({v}) is int", "_is_float({v})", "float"),
    "bool": ("type({v}) is bool", "False", "bool"),
    "str": ("type({v}) is str", "False", "str"),
    "ScalarType": ("type({v}) is _DType", "isinstance({v}, _DType)", "dtype"),
    "Layout": ("type({v}) is _Layout", "False", "layout"),
    "Tensor[]": ("_is_plain_tensor_list({v})", "_is_tensor_list({v})", "tuple of Tensors"),
    "Any": ("True", "True", "object"),
}
# Ranges of Python ints, checked after every argument's type (a wrong type anywhere is reported
# first, as by PyTorch's parser): (bound test, what is raised beyond it).
_RANGES = {
    "Scalar": ("-9223372036854775808 <= {v} < 18446744073709551616", "_is_number({v})"),
    "int": ("-9223372036854775808 <= {v} < 9223372036854775808", "_int_range({v})"),
    "int[1]": ("-9223372036854775808 <= {v} < 9223372036854775808", "_int_range({v})"),
}
# int[] elements are checked after the container test.
_LIST_ELEMS = {"int[]": "_is_int_list({v})"}


# The functions PyTorch gives a keyword-only ``out=`` (read from its Python bindings), under
# their schema names (``linalg_inv``, ``fft_fft``, ``special_erf``): ``wrap(..., out=True)``
# for these (Note [out= arguments] in ``_out.py``).
OUT_FUNCTIONS = frozenset("""
absolute arccos arccosh arcsin arcsinh arctan arctanh concat concatenate divide fix greater
greater_equal less less_equal multiply negative not_equal subtract orgqr
bernoulli normal multinomial logspace histc histogram randint randperm
abs acos acosh add addbmm addcdiv addcmul addmm addmv addr alias_copy all amax amin aminmax
angle any arange arctan2 argmax argmin argsort as_strided_copy asin asinh atan atan2 atanh
baddbmm bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor
bmm bucketize cat ceil cholesky cholesky_inverse cholesky_solve clamp clamp_max clamp_min clip
column_stack complex conj_physical copysign cos cosh cross cummax cummin cumprod cumsum deg2rad
diag diagonal_copy diff digamma div dot dstack empty eq erf erfc erfinv exp exp2 expand_copy
expm1 eye fft_fft fft_fft2 fft_fftfreq fft_fftn fft_hfft fft_hfft2 fft_hfftn fft_ifft fft_ifft2
fft_ifftn fft_ihfft fft_ihfft2 fft_ihfftn fft_irfft fft_irfft2 fft_irfftn fft_rfft fft_rfft2
fft_rfftfreq fft_rfftn float_power floor floor_divide fmax fmin fmod frac frexp full gather gcd
ge geqrf ger gt heaviside hstack hypot i0 igamma igammac index_add index_copy index_reduce
index_select inner inverse isin isneginf isposinf kron kthvalue lcm ldexp le lerp lgamma
linalg_cholesky linalg_cholesky_ex linalg_cond linalg_cross linalg_det linalg_eig linalg_eigh
linalg_eigvals linalg_eigvalsh linalg_householder_product linalg_inv linalg_inv_ex
linalg_ldl_factor linalg_ldl_factor_ex linalg_ldl_solve linalg_lstsq linalg_lu linalg_lu_factor
linalg_lu_factor_ex linalg_lu_solve linalg_matrix_exp linalg_matrix_power linalg_matrix_rank
linalg_multi_dot linalg_norm linalg_pinv linalg_qr linalg_slogdet linalg_solve linalg_solve_ex
linalg_solve_triangular linalg_svd linalg_svdvals linalg_tensorinv linalg_tensorsolve
linalg_vecdot linspace log log10 log1p log2 log_softmax logaddexp logaddexp2 logcumsumexp
logical_and logical_not logical_or logical_xor logit logsumexp lt masked_select matmul
matrix_power max maximum mean median min minimum mm mode msort mul mv mvlgamma nan_to_num
nanmean nanmedian nanquantile nansum narrow_copy ne neg nextafter nonzero nonzero_static ones
ormqr outer permute_copy polar polygamma pow prod qr quantile rad2deg rand randn reciprocal
remainder renorm round row_stack rsqrt scatter scatter_add scatter_reduce searchsorted sgn
sigmoid sign signbit sin sinc sinh slice_scatter slogdet softmax sort special_airy_ai
special_bessel_j0 special_bessel_j1 special_bessel_y0 special_bessel_y1
special_chebyshev_polynomial_t special_chebyshev_polynomial_u special_chebyshev_polynomial_v
special_chebyshev_polynomial_w special_digamma special_entr special_erf special_erfc
special_erfcx special_erfinv special_exp2 special_expit special_expm1 special_gammainc
special_gammaincc special_gammaln special_hermite_polynomial_h special_hermite_polynomial_he
special_i0 special_i0e special_i1 special_i1e special_laguerre_polynomial_l
special_legendre_polynomial_p special_log1p special_log_ndtr special_logit special_logsumexp
special_modified_bessel_i0 special_modified_bessel_i1 special_modified_bessel_k0
special_modified_bessel_k1 special_multigammaln special_ndtr special_ndtri special_polygamma
special_psi special_round special_scaled_modified_bessel_k0 special_scaled_modified_bessel_k1
special_shifted_chebyshev_polynomial_t special_shifted_chebyshev_polynomial_u
special_shifted_chebyshev_polynomial_v special_shifted_chebyshev_polynomial_w special_sinc
special_spherical_bessel_j0 special_zeta split_with_sizes_copy sqrt square squeeze_copy stack
std sub sum svd t_copy take take_along_dim tan tanh topk transpose_copy triangular_solve tril
triu true_divide trunc unbind_copy unfold_copy unsqueeze_copy var vdot view_copy vstack where
xlogy zeros
""".split())


_MISSING = object()     # the default of a parameter that may be omitted but not passed as None


class Param:
    """One parameter of a schema."""

    __slots__ = ("name", "types", "optional", "default", "kw_only", "varargs")

    def __init__(self, name: str, types: tuple, optional: bool, default: Any,
                 kw_only: bool, varargs: bool) -> None:
        self.name, self.types, self.optional = name, types, optional
        self.default, self.kw_only, self.varargs = default, kw_only, varargs

    def describe(self) -> str:
        return " or ".join(_TYPES[t][2] for t in self.types)


_PARAM = re.compile(r"^\s*(?P<type>[\w\[\]|.]+?)(?P<opt>\?)?\s+(?P<name>\w+)"
                    r"(\s*=\s*(?P<default>.+))?\s*$")


def parse(schema: str) -> tuple:
    """``(name, [Param, ...])`` of ``"name(Type arg, ..., *, Type kw=default)"``."""
    m = re.match(r"^\s*([\w.]+)\((.*)\)\s*$", schema, re.S)
    if m is None:
        raise ValueError(f"bad schema: {schema!r}")
    name, body = m.group(1), m.group(2).strip()
    params: list = []
    kw_only = False
    for part in _split(body):
        if part == "*":
            kw_only = True
            continue
        p = _PARAM.match(part)
        if p is None:
            raise ValueError(f"bad parameter {part!r} in {schema!r}")
        t = p.group("type")
        varargs = t.endswith("...")
        if varargs:
            t = "int..."
        types = tuple(t.split("|")) if not varargs else ("int...",)
        for ty in types:
            if ty not in _TYPES and ty != "int...":
                raise ValueError(f"unknown type {ty!r} in {schema!r}")
        default = p.group("default")
        params.append(Param(p.group("name"), types, p.group("opt") is not None,
                            default, kw_only, varargs))
    return name, params


def _split(body: str) -> list:
    if not body:
        return []
    return [s.strip() for s in body.split(",")]


# ---------------------------------------------------------------------------- errors
def _typename(v: Any) -> str:
    t = type(v)
    mod = t.__module__
    if mod == "builtins" or mod.startswith("ndgrad"):
        return t.__name__
    return f"{mod.split('.')[0]}.{t.__name__}"


def _fail(fn: str, param: Param, pos: int, value: Any) -> None:
    where = f" (position {pos})" if _passed_by_position(param) else ""
    if "int[]" in param.types or "int[1]" in param.types:
        if isinstance(value, (tuple, list)):
            _fail_elements(fn, param, where, value)
    if "Tensor[]" in param.types and isinstance(value, (tuple, list)):
        for i, x in enumerate(value):
            if not isinstance(x, Tensor):
                raise TypeError(f"{fn}(): argument '{param.name}'{where} must be tuple of "
                                f"Tensors, but found element of type {_typename(x)} at pos {i}")
    raise TypeError(f"{fn}(): argument '{param.name}'{where} must be {param.describe()}, "
                    f"not {_typename(value)}")


def _fail_elements(fn: str, param: Param, where: str, values: Any) -> None:
    """PyTorch's error for the first bad element of an int list: a wrong type as the first
    element is named like a wrong argument, any later one (or an int beyond int64) as a failed
    unpacking, with positions from 1."""
    for i, x in enumerate(values):
        if type(x) is int and not _I64_MIN <= x < _I64_END:
            why = "Overflow when unpacking long long"
        elif not _int_elem(x):
            if i == 0:
                raise TypeError(f"{fn}(): argument '{param.name}'{where} must be tuple of ints, "
                                f"but found element of type {_typename(x)} at pos 0")
            why = f"type must be tuple of ints,but got {_typename(x)}"
        else:
            continue
        raise TypeError(f"{fn}(): argument '{param.name}' failed to unpack the object "
                        f"at pos {i + 1} with error \"{why}\"")


def _fail_varargs(fn: str, param: Param, values: tuple) -> None:
    if not values:
        raise TypeError(f"{fn}() missing 1 required positional arguments: \"{param.name}\"")
    if len(values) == 1 and not isinstance(values[0], (tuple, list)) and type(values[0]) is not int:
        raise TypeError(f"{fn}(): argument '{param.name}' (position 1) must be tuple of ints, "
                        f"not {_typename(values[0])}")
    if len(values) == 1 and isinstance(values[0], (tuple, list)):
        values = tuple(values[0])
    _fail_elements(fn, param, " (position 1)", values)


# Note [Sizes by keyword]
# A schema's ``int... size`` takes the sizes as separate ints or one sequence, and, as in torch,
# by keyword too (``torch.zeros(size=(2, 3))``): the generated function has the varargs under
# another name (``*_va_size``) and a hidden keyword-only ``size``; introspection shows
# ``*size`` (``_declared_signature``). Both at once, or a number by keyword, are torch's
# TypeErrors. A method whose only positional parameter is an ``int[]`` takes further ints as a
# hidden ``*_va_more`` (``x.squeeze(0, 1)``), also left out of its declared signature.
def _size_keyword(fn: str, name: str, given: tuple, value: Any) -> tuple:
    if given:
        raise TypeError(f"{fn}() got multiple values for argument '{name}'")
    if not isinstance(value, (tuple, list)) or not _is_int_list(value):
        raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, not "
                        f"{_typename(value)}")
    return (value,)


_INTERNAL = (MemoryError, ValueError)


def _translate(e: BaseException) -> None:
    """PyTorch's exception for one NumPy raised inside an op (an allocation that cannot be
    made or whose size overflows, an axis NumPy refuses); no NumPy exception type reaches a
    user. Other ValueErrors are PyTorch's own and pass unchanged."""
    if isinstance(e, MemoryError):
        raise RuntimeError(f"DefaultCPUAllocator: can't allocate memory: {e}") from None
    if isinstance(e, np.exceptions.AxisError):
        raise IndexError(f"Dimension out of range ({e})") from None
    if str(e).startswith(("array is too big", "Maximum allowed size exceeded")):
        raise RuntimeError(f"numel: integer multiplication overflow ({e})") from None
    raise e


# Note [Positions in argument errors]
# PyTorch's message names "(position N)" only for an argument passed positionally. The wrapper's
# parameters cannot tell, so on the error path (only there) the caller's call instruction is
# read: the keyword names of a call are a constant tuple next to it (KW_NAMES before the call in
# CPython 3.11/3.12, a constant loaded before CALL_KW from 3.13). When that cannot be read
# (f(*args, **kwargs)), the position is named.
_KW_CACHE: dict = {}


def _passed_by_position(param: Param) -> bool:
    if param.kw_only:
        return False
    try:
        frame = sys._getframe(3)          # _fail <- wrapper <- caller
        names = _call_keywords(frame.f_code, frame.f_lasti)
    except Exception:  # noqa: BLE001 - best effort, only wording depends on it
        return True
    return not isinstance(names, tuple) or param.name not in names


def _call_keywords(code: Any, lasti: int) -> Any:
    key = (code, lasti)
    if key not in _KW_CACHE:
        ins = list(dis.get_instructions(code))
        # f_lasti may point into the call's inline cache entries, which dis does not list.
        at = max(i for i, x in enumerate(ins) if x.offset <= lasti)
        names: Any = ()
        for x in reversed(ins[max(0, at - 3):at + 1]):
            if x.opname == "KW_NAMES" or (x.opname == "LOAD_CONST" and
                                          ins[at].opname == "CALL_KW"):
                names = code.co_consts[x.arg] if x.opname == "KW_NAMES" else x.argval
                break
            if x.opname == "CALL_FUNCTION_EX":
                names = None
                break
        if len(_KW_CACHE) > 1024:
            _KW_CACHE.clear()
        _KW_CACHE[key] = names
    return _KW_CACHE[key]


# ---------------------------------------------------------------------------- the protocol
def _tf_call(func: Any, spec: tuple, args: tuple, kwargs: dict) -> Any:
    """A checking wrapper's call handed to the protocol: ``spec`` is ``(names of the
    positional parameters, {name: default})``; parameters left at their default are dropped
    (trailing positional ones, keyword-only ones), and positional ones the caller passed by
    keyword (read from its call instruction when possible) are passed as keywords, as the
    call was written."""
    names, defaults, nvar = spec
    keywords = _caller_keywords()
    fixed = len(names)
    pos = list(args[:fixed])
    kw = {k: v for k, v in kwargs.items() if not _is_default(v, defaults.get(k, None))}
    if keywords:
        for i, n in enumerate(names):
            if n in keywords:
                kw[n] = pos[i]
        first = next((i for i, n in enumerate(names) if n in keywords), fixed)
        pos = pos[:first]
    if nvar is None:
        while pos and len(pos) > 1 and names[len(pos) - 1] in defaults and \
                _is_default(pos[-1], defaults[names[len(pos) - 1]]):
            pos.pop()
    full = tuple(pos) + tuple(args[fixed:])
    return _torch_function.dispatch(func, _torch_function.overloaded(full, kw), full,
                                   kw or None)


def _is_default(v: Any, default: Any) -> bool:
    return v is default or v is _MISSING or (v is None and default is _MISSING)


def _caller_keywords() -> Any:
    try:
        frame = sys._getframe(3)          # _tf_call <- wrapper <- caller
        names = _call_keywords(frame.f_code, frame.f_lasti)
    except Exception:  # noqa: BLE001 - best effort: only how args are split depends on it
        return None
    return names if isinstance(names, tuple) else None


# ---------------------------------------------------------------------------- code generation
def _condition(param: Param, part: str = "all") -> str:
    """The argument test: its inline tests (``part="fast"``), its fallback predicates
    (``"slow"``, for a value the inline tests refused), or both."""
    v = param.name
    fast, slow = [], []
    for t in param.types:
        f, s, _ = _TYPES[t]
        if t in _LIST_ELEMS:
            f = f"({f.format(v=v)}) and {_LIST_ELEMS[t].format(v=v)}"
            s = f"{_LIST_ELEMS[t].format(v=v)}"
        fast.append(f.format(v=v))
        if s != "False":
            slow.append(s.format(v=v))
    if "Tensor" in param.types:
        # a Tensor subclass seen not to override (Parameter), after the other inline tests
        fast.append(f"type({v}) in _PLAIN_TENSORS")
    if part == "slow":
        return " or ".join(f"({c})" for c in slow) or "False"
    cond = " or ".join(f"({c})" for c in (fast if part == "fast" else fast + slow))
    if param.optional:
        cond = f"{v} is None or {cond}"
    return cond


# Note [Torch function protocol] (in _torch_function.py): a Tensor or tensor-list argument that
# fails the inline test (a subclass, a tensor-like object) is looked at for an override before
# its full type check; ``_TF_CALL`` stands for the hand-over, filled in once all parameters are
# known.
_TF_CALL = "@TF_CALL@"


def _checked(param: Param, fn_name: str, i: int, pos: int, indent: str) -> str:
    """The type check of one argument, with the protocol's look on Tensor arguments."""
    fail = f"_fail({fn_name!r}, _params[{i}], {pos}, {param.name})"
    if "Tensor" not in param.types and "Tensor[]" not in param.types:
        # a tensor-like object where a number or list is expected (an FX Proxy for a size)
        # dispatches as torch's parser does; looked for only once the check has failed
        v = param.name
        return (f"{indent}if not ({_condition(param)}):\n"
                f"{indent}    if _tf({v}) or _tf_seq({v}): {_TF_CALL}\n"
                f"{indent}    {fail}")
    v = param.name
    wants = f"_tf_seq({v})" if "Tensor[]" in param.types else \
        f"type({v}) not in _PLAIN and _tf({v})"
    return (f"{indent}if not ({_condition(param, 'fast')}):\n"
            f"{indent}    if {wants}: {_TF_CALL}\n"
            f"{indent}    if not ({_condition(param, 'slow')}): {fail}")


def wrap(schema: str, impl: Callable, *, method: bool = False, out: bool = False) -> Callable:
    """A function with the schema's signature that checks argument types, then calls
    ``impl`` (positional parameters positionally, keyword-only ones by name).

    ``method``: the first parameter is ``self`` and is not counted in error positions.
    ``out``: add PyTorch's keyword-only ``out=None`` (Note [out= arguments] in ``_out.py``).
    """
    if out:
        schema = _with_out_param(schema)
    name, params = parse(schema)
    fn_name = name.split(".")[-1]
    sig, call, body, ranges = [], [], [], []
    kw_started = False
    env: dict = {"_impl": impl, "_Tensor": Tensor, "_DType": _dtype.dtype,
                 "_is_int": _is_int, "_as_int": _as_int, "_is_int_list": _is_int_list,
                 "_is_number": _is_number,
                 "_is_number_type": _is_number_type, "_int_range": _int_range,
                 "_is_float": _is_float, "_is_tensor_list": _is_tensor_list,
                 "_is_size_varargs": _is_size_varargs, "_fail": _fail,
                 "_fail_varargs": _fail_varargs, "_params": params,
                 "_INTERNAL": _INTERNAL, "_translate": _translate,
                 "_MISSING": _MISSING, "_call_with_out": call_with_out}
    out_call = None
    first: list = []
    varargs_name = None
    # A method whose only positional parameter is a list of ints takes them as separate
    # arguments too, as torch's parser allows (x.squeeze(0, 1), x.broadcast_to(2, 3)).
    lone = [q for q in params[1:] if not q.kw_only and not q.varargs] if method else []
    more_ints: Optional[Param] = lone[0] if len(lone) == 1 and any(
        t in ("int[]", "int[1]") for t in lone[0].types) else None
    aliases = _numpy_aliases(params)
    pre: list = []
    accepted = _accepted_names(impl)
    other_layout = False
    for i, p in enumerate(params):
        pos = i if method else i + 1
        alias = aliases.get(p.name)
        if alias is not None:
            # both names given: torch's parser does not know the alias then
            pre.append(f"    if {alias} is not _MISSING:\n        if {p.name} is not _MISSING: "
                       f"raise TypeError(\"{fn_name}() got an unexpected keyword argument "
                       f"'{alias}'\")\n        {p.name} = {alias}")
            if p.default is None:
                pre.append(f"    elif {p.name} is _MISSING: raise TypeError("
                           f"\"{fn_name}() missing 1 required positional argument: "
                           f"'{p.name}'\")")
            elif not (p.default == "None" and not p.optional and p.types != ("Any",)):
                pre.append(f"    elif {p.name} is _MISSING: {p.name} = _d_{p.name}")
        if p.varargs:
            # ``f(2, 3)``, ``f((2, 3))`` or ``f(size=(2, 3))`` (Note [Sizes by keyword])
            v = f"_va_{p.name}"
            sig.extend([f"*{v}", f"{p.name}=_MISSING"])
            call.append(f"*{v}")
            first.append(f"    if {p.name} is not _MISSING: {v} = _size_keyword({fn_name!r}, "
                         f"{p.name!r}, {v}, {p.name})")
            body.append(f"    if not _is_size_varargs({v}):\n"
                        f"        if len({v}) == 1 and (_tf({v}[0]) or "
                        f"_tf_seq({v}[0])): {_TF_CALL}\n"
                        f"        _fail_varargs({fn_name!r}, _params[{i}], {v})")
            kw_started = True
            varargs_name = p.name
            continue
        if p.kw_only and not kw_started:
            sig.append("*")
            kw_started = True
        if p.name == "out" and p.kw_only and p.types == ("Any",):
            sig.append("out=None")
            # The function's arguments as a tuple and a dict (out is the schema's last).
            positional = "".join(c + ", " for c in call if "=" not in c)
            keywords = ", ".join(f"{c.split('=')[0]!r}: {c.split('=')[0]}"
                                 for c in call if "=" in c)
            out_call = (f"    if out is not None:\n        return _call_with_out({name!r}, "
                        f"_impl, ({positional}), {{{keywords}}}, out)")
            continue
        default = ""
        omitted_none = p.default == "None" and not p.optional and p.types != ("Any",)
        if omitted_none:
            # ``max(x)`` is fine, ``max(x, None)`` is not: omitted is told apart from None.
            default = "=_MISSING"
            body.append(f"    if {p.name} is _MISSING:\n        {p.name} = None\n    else:\n"
                        + _checked(p, fn_name, i, pos, "        "))
        elif p.default is not None:
            env[f"_d_{p.name}"] = _eval_default(p.default)
            default = "=_MISSING" if alias is not None else f"=_d_{p.name}"
        elif alias is not None:
            default = "=_MISSING"
        sig.append(f"{p.name}{default}")
        if more_ints is not None and p is more_ints:
            # x.squeeze(0, 1) for x.squeeze((0, 1)) (Note [Sizes by keyword])
            sig.append("*_va_more")
            kw_started = True
            first.append(f"    if _va_more: {more_ints.name} = ({more_ints.name},) + _va_more")
        consumed = p.kw_only and (p.name, p.types) in _CONSUMED
        if not consumed or accepted is None or p.name in accepted:
            call.append(f"{p.name}={p.name}" if p.kw_only else p.name)
        if consumed and p.name == "pin_memory":
            ranges.append("    if pin_memory: _no_pinned_memory()")
        elif consumed:
            ranges.append(f"    if layout is not None and layout is not _strided: "
                          f"_check_layout({fn_name!r}, layout)")
            other_layout = True
        if p.types != ("Any",) and not omitted_none:
            body.append(_checked(p, fn_name, i, pos, "    "))
        if ("int" in p.types or "int[1]" in p.types) and not omitted_none:
            keep = " and type({v}) is not _Tensor" if "Tensor" in p.types else ""
            ranges.append(f"    if type({p.name}) is not int{keep.format(v=p.name)} and "
                          f"{p.name} is not None: {p.name} = _as_int({p.name})")
        for t in p.types:
            if t in _RANGES:
                ok, bad = _RANGES[t]
                ranges.append(f"    if type({p.name}) is int and not {ok.format(v=p.name)}: "
                              f"{bad.format(v=p.name)}")
                break
    # The try costs nothing unless something is raised (CPython >= 3.11): it turns the
    # exceptions NumPy raises for impossible requests into PyTorch's (Note [Declared signatures]).
    if out_call is not None:
        ranges.append(out_call)
    if aliases:
        sig.extend(([] if kw_started else ["*"]) + [f"{a}=_MISSING" for a in aliases.values()])
        body = pre + body
    if other_layout:
        env.update(_strided=_layout.strided, _check_layout=_layout.check_factory_layout,
                   _with_layout=_layout.factory_layout)
        tail = (f"\n    try:\n        r = _impl({', '.join(call)})\n"
                f"    except _INTERNAL as e:\n        _translate(e)\n"
                "    if layout is None or layout is _strided:\n        return r\n"
                "    return _with_layout(r, layout)\n")
    else:
        tail = (f"\n    try:\n        return _impl({', '.join(call)})\n"
                f"    except _INTERNAL as e:\n        _translate(e)\n")
    env.update(_Layout=_layout.layout, _no_pinned_memory=_layout.no_pinned_memory)
    tf_call = _protocol_call(params, env)
    body.insert(len(pre) if aliases else 0, f"    if _M and _tf_mode(): {tf_call}")
    body = first + body
    env["_size_keyword"] = _size_keyword
    src = (f"def {fn_name}({', '.join(sig)}):\n" + "\n".join(body + ranges) + tail).replace(
        _TF_CALL, tf_call)
    # The pseudo file name lies inside the package, so frame walks that skip ndgrad's own
    # frames (the in-place site of a version error, the profiler's call site) skip it too.
    exec(compile(src, os.path.join(_HERE, f"<signature {name}>"), "exec"), env)
    fn = env[fn_name]
    env["_me"] = fn
    fn._tf_name = f"ndgrad.Tensor.{fn_name}" if method else f"ndgrad.{name}"
    _torch_function.register_env(env)
    fn.__doc__ = getattr(impl, "__doc__", None)
    # What introspection shows is the declared signature, not the implementation's, with the
    # types of Note [Typed API] (in ndgrad/types.py).
    fn.__annotations__ = _annotations(params, impl)
    fn.__signature__ = _declared_signature(fn, params, aliases, varargs_name)
    fn.__wrapped__ = impl
    fn.__qualname__ = name
    fn.__module__ = getattr(impl, "__module__", "ndgrad")
    fn.__signature_schema__ = schema
    _check_compatible(name, params, impl)
    return fn


def _protocol_call(params: list, env: dict) -> str:
    """The statement handing a wrapper's call to the protocol (Note [Torch function protocol]):
    its arguments as positional ones and keyword-only ones, with what ``_torch_function.call``
    needs to drop the ones left at their defaults."""
    positional, keywords, defaults = [], [], {}
    nvar = None
    for p in params:
        if p.varargs:
            nvar = p.name
            continue
        if p.default is not None:
            d = f"_d_{p.name}"
            defaults[p.name] = env[d] if d in env else _MISSING
        if p.kw_only:
            keywords.append(p.name)
        else:
            positional.append(p.name)
    env.update(_tf=_torch_function.wants, _tf_seq=_torch_function.wants_seq,
               _PLAIN=_torch_function.PLAIN, _PLAIN_TENSORS=_torch_function.PLAIN_TENSORS,
               _tf_mode=_torch_function.mode_active, _tf_call=_tf_call,
               _tf_spec=(tuple(positional), defaults, nvar), _is_plain_tensor_list=(
                   _is_plain_tensor_list))
    args = "".join(f"{n}, " for n in positional) + (f"*_va_{nvar}, " if nvar else "")
    kws = ", ".join(f"{n!r}: {n}" for n in keywords)
    return f"return _tf_call(_me, _tf_spec, ({args}), {{{kws}}})"


# Note [NumPy keyword aliases]: like torch's argument parser, ``axis=`` is accepted for a
# parameter named ``dim`` and ``keepdims=`` for ``keepdim`` (``x.sum(axis=0, keepdims=True)``).
# The alias is a hidden keyword-only parameter of the generated function, left out of its
# declared signature (and so of the stubs); passing both names is torch's "unexpected keyword".
_NUMPY_ALIASES = {"dim": "axis", "keepdim": "keepdims"}


def _numpy_aliases(params: list) -> dict:
    """``{parameter: alias}`` for the parameters that take a NumPy-style keyword alias."""
    names = {p.name for p in params}
    out = {}
    for i, p in enumerate(params):
        alias = _NUMPY_ALIASES.get(p.name)
        if alias is None or alias in names or p.varargs:
            continue
        # A required parameter becomes omittable only where no required positional follows.
        if p.default is None and any(q.default is None and not q.kw_only and not q.varargs
                                     for q in params[i + 1:]):
            continue
        out[p.name] = alias
    return out


def _declared_signature(fn: Callable, params: list, aliases: dict,
                        varargs: Optional[str] = None) -> inspect.Signature:
    """``fn``'s signature without the hidden alias parameters (Note [NumPy keyword aliases])
    and with the sizes as ``*size`` (Note [Sizes by keyword])."""
    sig = inspect.signature(fn, follow_wrapped=False)
    if varargs is not None:
        sig = sig.replace(parameters=[
            q.replace(name=varargs, annotation=fn.__annotations__.get(varargs, q.empty))
            if q.kind is q.VAR_POSITIONAL else q
            for q in sig.parameters.values() if q.name != varargs])
    if "_va_more" in sig.parameters:
        sig = sig.replace(parameters=[q for q in sig.parameters.values() if q.name != "_va_more"])
    if not aliases:
        return sig
    declared = {p.name: p for p in params if p.name in aliases}
    hidden = set(aliases.values())

    def default(q: inspect.Parameter) -> inspect.Parameter:
        p = declared.get(q.name)
        if p is None or q.default is not _MISSING:
            return q
        if p.default is None:
            return q.replace(default=inspect.Parameter.empty)
        if p.default == "None" and not p.optional and p.types != ("Any",):
            return q                    # omittable but not None: shown as before
        return q.replace(default=_eval_default(p.default))
    return sig.replace(parameters=[default(q) for q in sig.parameters.values()
                                   if q.name not in hidden])


_TYPE_NAMES = {"Any": Any, **{n: getattr(types, n) for n in (
    "Tensor", "Scalar", "IntLike", "IntList", "IntOrList", "DType", "Layout", "TensorList")}}
_TYPE_CACHE: dict = {}


def _annotations(params: list, impl: Callable) -> dict:
    """A wrapper's ``__annotations__``: each parameter's schema types as a type (Note [Typed
    API]; a few distinct ones, built once), and the implementation's return annotation (a
    string resolved in the implementation's module, where ``typing.get_type_hints`` looks)."""
    ann: dict = {}
    for p in params:
        if p.name == "out" and p.kw_only and p.types == ("Any",):
            ann["out"] = Any
            continue
        key = ("int...",) if p.varargs else p.types, p.optional
        t = _TYPE_CACHE.get(key)
        if t is None:
            t = _TYPE_CACHE[key] = eval(types.schema_annotation(*key), _TYPE_NAMES)  # noqa: S307
        ann[p.name] = t
    ret = getattr(impl, "__annotations__", {}).get("return")
    if ret is not None:
        ann["return"] = ret
    return ann


def _with_out_param(schema: str) -> str:
    """The schema with ``*, Any out=None`` appended (checked by ``call_with_out``)."""
    head, body = schema.rstrip()[:-1], schema.rstrip()[-1]
    assert body == ")", schema
    parts = _split(head.split("(", 1)[1])
    sep = ", " if parts else ""
    kw = "" if "*" in parts else "*, "
    return f"{head}{sep}{kw}Any out=None)"


def _eval_default(src: str) -> Any:
    return {"None": None, "True": True, "False": False}.get(src) if src in (
        "None", "True", "False") else eval(src, {"inf": float("inf")})  # noqa: S307


# Note [Layout and pinned-memory arguments]: factories take torch's ``layout=`` and
# ``pin_memory=`` keywords. The checking wrapper handles them (with ``_layout``'s checks), so
# implementations need not declare them; one that declares the keyword still receives it.
_CONSUMED = {("layout", ("Layout",)), ("pin_memory", ("bool",))}


def _accepted_names(impl: Callable) -> Any:
    """The keyword names ``impl`` accepts, or None when it takes any (``**kwargs``) or cannot
    be inspected."""
    try:
        ps = inspect.signature(impl).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(q.kind is inspect.Parameter.VAR_KEYWORD for q in ps):
        return None
    return {q.name for q in ps}


def _check_compatible(name: str, params: list, impl: Callable) -> None:
    """The implementation must accept the call the wrapper makes (caught at import)."""
    try:
        sig = inspect.signature(impl)
    except (TypeError, ValueError):
        return
    args: list = []
    kwargs: dict = {}
    accepted = {q.name for q in sig.parameters.values()}
    for p in params:
        if p.name == "out" and p.kw_only and p.types == ("Any",):
            continue
        if p.kw_only and (p.name, p.types) in _CONSUMED and p.name not in accepted:
            continue
        if p.varargs:
            args.append(1)
        elif p.kw_only:
            kwargs[p.name] = None
        else:
            args.append(None)
    try:
        sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"schema {name} does not match its implementation {sig}: {e}") from None
