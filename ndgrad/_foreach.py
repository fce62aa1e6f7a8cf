"""``ndgrad._foreach_*``: the list-at-a-time ops EMA helpers, optimizers and gradient clipping
code call (``torch._foreach_lerp_(ema, params, 0.1)``, ``torch._foreach_mul_(grads, c)``).

Each applies the tensor op to every element of a list, with torch's argument forms: a second
operand that is a Python number, a list of numbers (one per tensor), a list of tensors, or (for
``add``/``mul``/``div``) a 0-d tensor; torch's checks on list lengths come first. The
out-of-place forms return a tuple of new tensors (differentiable, each through its op's own
backward), the in-place forms (trailing ``_``) modify the tensors and return them in a list;
``_foreach_norm`` and ``_foreach_max`` return a tuple of 0-d tensors.

Example:
    >>> import ndgrad
    >>> ema = [ndgrad.zeros(2), ndgrad.zeros(3)]
    >>> params = [ndgrad.ones(2), ndgrad.full((3,), 2.0)]
    >>> _ = ndgrad._foreach_lerp_(ema, params, 0.5)
    >>> [e.tolist() for e in ema]
    [[0.5, 0.5], [1.0, 1.0, 1.0]]
    >>> [float(n) for n in ndgrad._foreach_norm(params)]
    [1.4142135381698608, 3.464101552963257]
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence

from .ops import linalg as _linalg
from .tensor import Tensor

_UNARY = ("abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 log1p "
          "log2 neg reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh trunc").split()
# binary ops: which second-operand forms each takes (torch's overloads)
_BINARY = {"add": "scalar scalars tensor tensors", "sub": "scalar scalars tensors",
           "mul": "scalar scalars tensor tensors", "div": "scalar scalars tensor tensors",
           "clamp_min": "scalar scalars tensors", "clamp_max": "scalar scalars tensors",
           "maximum": "scalar scalars tensors", "minimum": "scalar scalars tensors",
           "pow": "scalar scalars tensors"}
_ALPHA = ("add", "sub")                 # the tensor-list (and add's tensor) forms take alpha


def _is_number(x: Any) -> bool:
    return isinstance(x, (bool, int, float, complex))


def _tensors(fname: str, value: Any, pos: int) -> List[Tensor]:
    """``value`` as a non-empty list of tensors (argument ``pos``, counted from 0)."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{fname}(): argument 'self' (position {pos + 1}) must be tuple of "
                        f"Tensors, not {type(value).__name__}")
    for i, t in enumerate(value):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {pos}, but got "
                            f"{type(t).__name__}")
    if not value:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return list(value)


def _same_length(a: Sequence, b: Sequence) -> None:
    if len(a) != len(b):
        raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(a)} "
                           f"and {len(b)}")


def _scalars(a: Sequence, scalars: Sequence) -> list:
    if len(a) != len(scalars):
        raise RuntimeError("Tensor list must have same number of elements as scalar list.")
    return list(scalars)


def _scalar_tensor(t: Tensor) -> Tensor:
    if t.dim() != 0:
        raise RuntimeError(f"scalar tensor expected to be 0 dim but it has {t.dim()} dimensions "
                           f"and {t.numel()} elements.")
    return t


def _invalid(fname: str, args: tuple, kwargs: Dict[str, Any]) -> TypeError:
    got = ", ".join([type(a).__name__ for a in args] +
                    [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
    return TypeError(f"{fname}() received an invalid combination of arguments - got ({got})")


def _others(fname: str, forms: str, tensors: List[Tensor], other: Any, kwargs: dict) -> list:
    """The second operand per tensor, after torch's checks for the form ``other`` has."""
    if isinstance(other, (list, tuple)):
        if other and all(_is_number(o) for o in other) and "scalars" in forms and not kwargs:
            return _scalars(tensors, other)
        if "tensors" not in forms:
            raise _invalid(fname, (tensors, other), kwargs)
        others = _tensors(fname, other, 1) if other else other
        _same_length(tensors, others)
        return list(others)
    if isinstance(other, Tensor) and "tensor" in forms.split():
        return [_scalar_tensor(other)] * len(tensors)
    if isinstance(other, Tensor) and other.dim() == 0 and "scalar" in forms and not kwargs:
        return [other] * len(tensors)                 # a 0-d tensor read as a number
    if _is_number(other) and "scalar" in forms.split() and not kwargs:
        return [other] * len(tensors)
    if "tensors" in forms and not _is_number(other) and not isinstance(other, Tensor):
        raise _invalid(fname, (tensors, other), kwargs)
    if fname.startswith("_foreach_sub"):
        raise TypeError(f"{fname}(): argument 'other' (position 2) must be tuple of Tensors, "
                        f"not {type(other).__name__}")
    raise _invalid(fname, (tensors, other), kwargs)


def _make_unary(name: str, inplace: bool) -> Callable:
    fname = f"_foreach_{name}{'_' if inplace else ''}"

    def op(self: Sequence[Tensor]) -> Any:
        tensors = _tensors(fname, self, 0)
        if inplace:
            for t in tensors:
                getattr(t, name + "_")()
            return tensors
        return tuple(getattr(t, name)() for t in tensors)
    op.__name__ = op.__qualname__ = fname
    op.__doc__ = f"``{name}`` of every tensor in the list" + (" (in place)." if inplace else ".")
    return op


def _apply_binary(name: str, t: Tensor, o: Any, alpha: Any, inplace: bool) -> Any:
    kw = {} if alpha is None else {"alpha": alpha}
    if name in ("maximum", "minimum"):
        if not isinstance(o, Tensor):           # a number: the clamp it amounts to
            name = "clamp_min" if name == "maximum" else "clamp_max"
        elif inplace:                           # no Tensor.maximum_: written back with copy_
            return t.copy_(getattr(t, name)(o))
    return getattr(t, name + "_" if inplace else name)(o, **kw)


def _make_binary(name: str, inplace: bool) -> Callable:
    fname = f"_foreach_{name}{'_' if inplace else ''}"
    forms = _BINARY[name]

    def op(self: Any, other: Any = None, **kwargs: Any) -> Any:
        if name == "pow" and _is_number(self):        # (Scalar self, TensorList exponent)
            if inplace:
                raise _invalid(fname, (self, other), kwargs)
            exps = _tensors(fname, other, 1)
            return tuple(_rpow(self, e) for e in exps)
        if set(kwargs) - ({"alpha"} if name in _ALPHA else set()) or not isinstance(
                self, (list, tuple)):                 # several overloads: torch's summary
            raise _invalid(fname, (self, other), kwargs)
        tensors = _tensors(fname, self, 0)
        alpha = kwargs.get("alpha")
        others = _others(fname, forms, tensors, other, kwargs)
        out = [_apply_binary(name, t, o, alpha, inplace) for t, o in zip(tensors, others)]
        return tensors if inplace else tuple(out)
    op.__name__ = op.__qualname__ = fname
    op.__doc__ = (f"``{name}`` of each tensor with a number, a list of numbers or a list of "
                  f"tensors" + (" (in place)." if inplace else "."))
    return op


def _rpow(base: Any, exponent: Tensor) -> Tensor:
    return base ** exponent


def _make_lerp(inplace: bool) -> Callable:
    fname = "_foreach_lerp_" if inplace else "_foreach_lerp"

    def op(self: Sequence[Tensor], tensors1: Sequence[Tensor], weight: Any) -> Any:
        if not isinstance(self, (list, tuple)):
            raise _invalid(fname, (self, tensors1, weight), {})
        tensors = _tensors(fname, self, 0)
        ends = _tensors(fname, tensors1, 1)
        _same_length(tensors, ends)
        if isinstance(weight, (list, tuple)) and all(_is_number(w) for w in weight) and weight:
            weights = _scalars(tensors, weight)
        elif isinstance(weight, (list, tuple)):
            weights = _tensors(fname, weight, 2)
            _same_length(tensors, weights)
        else:
            weights = [weight] * len(tensors)
        if inplace:
            for t, e, w in zip(tensors, ends, weights):
                t.lerp_(e, w)
            return tensors
        return tuple(t.lerp(e, w) for t, e, w in zip(tensors, ends, weights))
    op.__name__ = op.__qualname__ = fname
    op.__doc__ = "``lerp`` of each tensor towards its partner by a weight" + (
        " (in place)." if inplace else ".")
    return op


def _make_addc(name: str, inplace: bool) -> Callable:
    fname = f"_foreach_{name}{'_' if inplace else ''}"

    def op(self: Sequence[Tensor], tensor1: Sequence[Tensor], tensor2: Sequence[Tensor],
           value: Any = 1, *, scalars: Any = None) -> Any:
        tensors = _tensors(fname, self, 0)
        a, b = _tensors(fname, tensor1, 1), _tensors(fname, tensor2, 2)
        _same_length(tensors, a)
        _same_length(tensors, b)
        value = value if scalars is None else scalars
        if isinstance(value, Tensor):
            if value.dim() != 1:
                raise RuntimeError(f"Expected packed scalar Tensor to be of dimension 1. Got "
                                   f"{value.dim()} instead.")
            if value.numel() != len(tensors):
                raise RuntimeError(f"Expected length of scalars to match input of length "
                                   f"{len(tensors)} but got {value.numel()} instead.")
            values = value.tolist()
        elif isinstance(value, (list, tuple)):
            values = _scalars(tensors, value)
        else:
            values = [value] * len(tensors)
        if inplace:
            for t, x, y, v in zip(tensors, a, b, values):
                getattr(t, name + "_")(x, y, value=v)
            return tensors
        return tuple(getattr(t, name)(x, y, value=v) for t, x, y, v in zip(tensors, a, b, values))
    op.__name__ = op.__qualname__ = fname
    op.__doc__ = f"``{name}`` on each triple of tensors" + (" (in place)." if inplace else ".")
    return op


def _foreach_norm(self: Sequence[Tensor], ord: Any = 2, dtype: Any = None) -> tuple:
    """The vector norm of every tensor in the list, as a tuple of 0-d tensors."""
    tensors = _tensors("_foreach_norm", self, 0)
    if not _is_number(ord) or isinstance(ord, complex):
        raise TypeError(f"_foreach_norm(): argument 'ord' (position 2) must be Number, not "
                        f"{type(ord).__name__}")
    return tuple(_linalg.vector_norm(t, ord, dtype=dtype) for t in tensors)


def _foreach_max(self: Sequence[Tensor]) -> tuple:
    """The largest element of every tensor in the list, as a tuple of 0-d tensors."""
    tensors = _tensors("_foreach_max", self, 0)
    for t in tensors:
        if t.numel() == 0:
            raise RuntimeError("_foreach_max cannot compute the maximum of an empty tensor; max "
                               "over zero elements is undefined.")
    return tuple(t.max() for t in tensors)


def _foreach_copy_(self: Sequence[Tensor], src: Sequence[Tensor],
                   non_blocking: bool = False) -> list:
    """Copy every ``src`` tensor into its partner in ``self`` (broadcasting, casting)."""
    tensors = _tensors("_foreach_copy_", self, 0)
    sources = _tensors("_foreach_copy_", src, 1)
    _same_length(tensors, sources)
    for t, s in zip(tensors, sources):
        t.copy_(s)
    return tensors


def _foreach_zero_(self: Sequence[Tensor]) -> list:
    """Fill every tensor in the list with zeros."""
    tensors = _tensors("_foreach_zero_", self, 0)
    for t in tensors:
        t.zero_()
    return tensors


FUNCTIONS: Dict[str, Callable] = {"_foreach_norm": _foreach_norm, "_foreach_max": _foreach_max,
                                  "_foreach_copy_": _foreach_copy_,
                                  "_foreach_zero_": _foreach_zero_}
for _inplace in (False, True):
    _suffix = "_" if _inplace else ""
    for _n in _UNARY:
        FUNCTIONS[f"_foreach_{_n}{_suffix}"] = _make_unary(_n, _inplace)
    for _n in _BINARY:
        FUNCTIONS[f"_foreach_{_n}{_suffix}"] = _make_binary(_n, _inplace)
    FUNCTIONS[f"_foreach_lerp{_suffix}"] = _make_lerp(_inplace)
    for _n in ("addcmul", "addcdiv"):
        FUNCTIONS[f"_foreach_{_n}{_suffix}"] = _make_addc(_n, _inplace)
