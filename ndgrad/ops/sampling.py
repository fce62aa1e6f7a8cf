"""Random sampling: ``normal``, ``bernoulli``, ``multinomial`` and the in-place fills
(``x.uniform_()``, ``normal_``, ``cauchy_``, ``exponential_``, ``geometric_``,
``log_normal_``, ``random_``, ``bernoulli_``).

Draws come from the ``generator=`` argument or ndgrad's default generator
(``ndgrad.manual_seed``). ``uniform_``, ``normal_`` and ``normal`` draw torch's numbers for the
seed (Note [Random streams] in ``ndgrad/_generator.py``); the other distributions match
torch's only in distribution. As in PyTorch, a sample is
not differentiated through its parameters: the gradient of ``normal(mean, std)`` with respect
to ``mean`` and ``std`` is zero (``NormalBackward1/2/3``), and so is every in-place fill's
gradient (``UniformBackward0`` ...); forward-mode tangents are zero too.

Example:
    >>> import ndgrad
    >>> _ = ndgrad.manual_seed(0)
    >>> x = ndgrad.empty(3).uniform_(2, 3)
    >>> bool(((x >= 2) & (x < 3)).all())
    True
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import _creation, _dtype, _meta
from .._generator import (TRACE_HOOK, Generator, bernoulli_array, cauchy_array, draw,
                          exponential_array, geometric_array, log_normal_array,
                          multinomial_rows, normal_array, numpy_generator, randint_array,
                          random_full_array, uniform_array)
from ..tensor import Tensor, _wrap
from ._dispatch import Op, apply
from ._jvp import zero
from ._selection_orders import topk_positions
from .pointwise import _zeros_of
from .views_inplace import apply_inplace

__all__ = ["normal", "bernoulli", "multinomial"]


# The generator of the sampling call in progress (None: the default one); a stack, since a
# sampler may run inside another (Note [Random streams]).
_ACTIVE: list = [None]


def _gen() -> np.random.Generator:
    return numpy_generator(_ACTIVE[-1])


def _with_generator(fn: Any) -> Any:
    """Run ``fn`` with its ``generator=`` argument as the active generator."""
    @functools.wraps(fn)
    def run(*args: Any, generator: Any = None, **kwargs: Any) -> Any:
        if generator is not None and not isinstance(generator, Generator):
            raise TypeError(f"{fn.__name__}(): argument 'generator' must be torch.Generator, "
                            f"not {type(generator).__name__}")
        _ACTIVE.append(generator)
        try:
            if TRACE_HOOK[1] is not None:
                TRACE_HOOK[1]()     # Note [Draws in traced functions] in _generator.py
            return fn(*args, **kwargs)
        finally:
            _ACTIVE.pop()
    return run


def _zero_grads(ctx, g):
    """A zero gradient shaped like the input (a sample's gradient, as PyTorch)."""
    return _zeros_of(g.sum_to_size(ctx.input_shape(0)))


def _zero_grads2(ctx, g):
    return (_zeros_of(g.sum_to_size(ctx.input_shape(0))),
            _zeros_of(g.sum_to_size(ctx.input_shape(1))))


# ---------------------------------------------------------------------------- normal
def _normal_fwd(mean, std):
    mean, std = np.asarray(mean), np.asarray(std)
    dt = np.result_type(mean.dtype, std.dtype)
    shape = np.broadcast_shapes(mean.shape, std.shape)
    z = normal_array(shape, 0.0, 1.0, dt if dt.kind == "f" else np.float64, _ACTIVE[-1])
    return (z * std + mean).astype(dt)


NORMAL_TENSOR_FLOAT = Op("normal", "NormalBackward1", lambda m, s: _normal_fwd(m, s),
                         _zero_grads, args=("std",), jvp=zero)
NORMAL_FLOAT_TENSOR = Op("normal", "NormalBackward2", lambda s, m: _normal_fwd(m, s),
                         _zero_grads, inputs=("std",), args=("mean",), jvp=zero)
NORMAL_TENSORS = Op("normal", "NormalBackward3", _normal_fwd, _zero_grads2,
                    inputs=("mean", "std"), jvp=zero)


def _check_std(std: Any) -> None:
    if isinstance(std, Tensor):
        if std._data.size and (std._data < 0).any():
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt(std)}")


def _fmt(v: Any) -> str:
    return f"{float(v):g}"           # as torch's messages print a double (6 significant digits)


@_with_generator
def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Any = None,
           dtype: Any = None, layout: Any = None, device: Any = None,
           pin_memory: Any = None, requires_grad: bool = False) -> Tensor:
    """Samples of N(mean, std^2): ``mean`` and ``std`` tensors (broadcast) or numbers (then
    ``size`` is required). The gradient with respect to ``mean``/``std`` is zero (PyTorch)."""
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got "
                            "(float, float), but expected (float mean, float std, tuple of ints "
                            "size)")
        _check_std(std)
        d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
        if not (d.is_floating_point or d.is_complex):
            raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for "
                                      f"'{d._torch_name}'")
        shape = tuple(size) if isinstance(size, (tuple, list)) else (size,)
        for n in shape:
            if n < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {n}: "
                                   f"{list(shape)}")
        arr = draw(_normal_numbers, shape, float(mean), float(std), d.np, _ACTIVE[-1])
        return _creation._finish(arr, requires_grad, device)
    _check_std(std)
    for t in (mean, std):
        if isinstance(t, Tensor) and not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for "
                                      f"'{t.dtype._torch_name}'")
    if mt and st:
        if mean._data.dtype != std._data.dtype:
            raise RuntimeError(f"expected both inputs to have same dtype, but got "
                               f"{mean.dtype._torch_name} and {std.dtype._torch_name}")
        try:
            np.broadcast_shapes(mean._data.shape, std._data.shape)
        except ValueError:
            raise RuntimeError(f"The size of tensor a ({mean._data.shape[-1]}) must match the "
                               f"size of tensor b ({std._data.shape[-1]}) at non-singleton "
                               f"dimension 0") from None
        return apply(NORMAL_TENSORS, (mean, std), (mean._data, std._data))
    if mt:
        return apply(NORMAL_TENSOR_FLOAT, (mean,), (mean._data,), (float(std),))
    return apply(NORMAL_FLOAT_TENSOR, (std,), (std._data,), (float(mean),))


def _normal_numbers(shape: tuple, mean: float, std: float, nd: np.dtype, generator: Any
                    ) -> np.ndarray:
    """``normal(mean, std, size)``'s samples (through ``draw``: Note [Draws in traced
    functions] in ndgrad/_generator.py)."""
    if nd.kind == "c":
        arr = mean + std * numpy_generator(generator).standard_normal(shape)
    else:
        arr = normal_array(shape, mean, std, nd, generator)
    return arr.astype(nd)


# ---------------------------------------------------------------------------- bernoulli
def _bernoulli_fwd(p):
    return bernoulli_array(p.shape, p, _ACTIVE[-1]).astype(p.dtype)


def _bernoulli_p_fwd(x, p):
    return bernoulli_array(x.shape, p, _ACTIVE[-1]).astype(x.dtype)


BERNOULLI = Op("bernoulli", "BernoulliBackward0", _bernoulli_fwd, _zero_grads, jvp=zero)
BERNOULLI_P = Op("bernoulli", "BernoulliBackward1", _bernoulli_p_fwd, _zero_grads,
                 args=("p",), jvp=zero)


def _check_p(p: np.ndarray) -> None:
    if p.size and not ((p >= 0) & (p <= 1)).all():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  "
                           "(Could this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")


@_with_generator
def bernoulli(input: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:
    """0/1 samples with probabilities ``input`` (or the number ``p``), in ``input``'s dtype."""
    if not (input.dtype.is_floating_point):
        raise NotImplementedError(f"\"bernoulli_tensor_cpu_self_\" not implemented for "
                                  f"'{input.dtype._torch_name}'")
    if p is None:
        _check_p(input._data)
        return apply(BERNOULLI, (input,), (input._data,))
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return apply(BERNOULLI_P, (input,), (input._data,), (float(p),))


# ---------------------------------------------------------------------------- multinomial
@_with_generator
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Any = None) -> Tensor:
    """Indices drawn from the categorical distributions in the rows of ``input`` (weights,
    not necessarily normalized); without ``replacement`` each index at most once per row."""
    x = input._data
    if not (input.dtype.is_floating_point):
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{input.dtype._torch_name}")
    if x.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n = x.shape[-1]
    if n > 2 ** 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    # the weights are read and checked when the samples are drawn: at run time in a compiled
    # function (Note [Draws in traced functions] in ndgrad/_generator.py)
    return _wrap(draw(_multinomial_array, input, int(num_samples), bool(replacement),
                      _ACTIVE[-1]))


def _multinomial_array(input: Tensor, num_samples: int, replacement: bool, generator: Any
                       ) -> np.ndarray:
    x = input._data
    n = x.shape[-1]
    rows = x.reshape(-1, n).astype(np.float64)
    if replacement:
        if not (rows >= 0).all():                     # NaN included, as in PyTorch
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry < 0)")
        if not np.isfinite(rows).all():
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry = infinity or NaN)")
    elif not np.isfinite(rows).all() or (rows < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (rows.sum(-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    # without replacement, zero-weight categories follow the others when the row has too few
    # (PyTorch 2.13 draws them too, in index order)
    out = multinomial_rows(x.reshape(-1, n), num_samples, replacement, generator,
                           lambda keys, k: topk_positions(keys, k, True, True))
    return out.reshape(x.shape[:-1] + (num_samples,))


# ---------------------------------------------------------------------------- in-place fills
def _continuous(self: Tensor, name: str, kernel: str) -> None:
    d = self.dtype
    if not (d.is_floating_point or d.is_complex):
        if kernel.startswith("@"):
            raise RuntimeError(f"{name} distribution is a continuous probability distribution. "
                               f"dtype must be a floating point but you specified "
                               + kernel[1:].format(cpp=_CPP.get(d.name, d.name), t=d._torch_name))
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{d._torch_name}'")


_CPP = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
        "uint8": "unsigned char", "bool": "bool"}


def _draw(x: np.ndarray, f) -> np.ndarray:
    return np.asarray(f(_gen(), x.shape))


def _uniform_fwd(x: np.ndarray, a: float, b: float) -> np.ndarray:
    if x.dtype.kind == "c":
        return _draw(x, lambda g, s: a + (b - a) * g.random(s)).astype(x.dtype)
    return uniform_array(x.shape, a, b, x.dtype, _ACTIVE[-1])


def _normal_fill_fwd(x: np.ndarray, m: float, s: float) -> np.ndarray:
    if x.dtype.kind == "c":
        return _draw(x, lambda g, sh: m + s * g.standard_normal(sh)).astype(x.dtype)
    return normal_array(x.shape, m, s, x.dtype, _ACTIVE[-1])


UNIFORM = Op("uniform", "UniformBackward0", _uniform_fwd, _zero_grads, args=("from", "to"),
             jvp=zero)
NORMAL_ = Op("normal", "NormalBackward0", _normal_fill_fwd, _zero_grads,
             args=("mean", "std"), jvp=zero)
CAUCHY = Op("cauchy", "CauchyBackward0",
            lambda x, m, s: cauchy_array(x.shape, m, s, _ACTIVE[-1]).astype(x.dtype),
            _zero_grads, args=("median", "sigma"), jvp=zero)
EXPONENTIAL = Op("exponential", "ExponentialBackward0",
                 lambda x, lam: exponential_array(x.shape, lam, _ACTIVE[-1]).astype(x.dtype),
                 _zero_grads, args=("lambd",), jvp=zero)
GEOMETRIC = Op("geometric", "GeometricBackward0",
               lambda x, p: geometric_array(x.shape, p, _ACTIVE[-1]).astype(x.dtype),
               _zero_grads, args=("p",), jvp=zero)
LOG_NORMAL = Op("log_normal", "LogNormalBackward0",
                lambda x, m, s: log_normal_array(x.shape, m, s, _ACTIVE[-1]).astype(x.dtype),
                _zero_grads, args=("mean", "std"), jvp=zero)
# random_(from, to) and random_(to) draw as randint does, as in PyTorch
RANDOM_FROM_TO = Op("random", "RandomBackward0",
                    lambda x, a, b: randint_array(a, b, x.shape, _ACTIVE[-1]).astype(x.dtype),
                    _zero_grads, args=("from", "to"), jvp=zero)
RANDOM_TO = Op("random", "RandomBackward1",
               lambda x, a, b: randint_array(a, b, x.shape, _ACTIVE[-1]).astype(x.dtype),
               _zero_grads, args=("from", "to"), jvp=zero)


def _random_full(x: np.ndarray) -> np.ndarray:
    vals = random_full_array(x.shape, _dtype._FROM_NP[x.dtype].name, _ACTIVE[-1])
    if x.dtype.kind in "iub":
        return vals.astype(x.dtype)
    return vals.astype(np.float64).astype(x.dtype)     # exact: at most 2**53


# random_() with no bounds: one draw per element modulo the dtype's range (Note [Random
# streams] in _generator.py)
RANDOM = Op("random", "RandomBackward2", lambda x, a, b: _random_full(x),
            _zero_grads, args=("from", "to"), jvp=zero)
BERNOULLI_FILL_TENSOR = Op("bernoulli", "BernoulliBackward1",
                           lambda x, p: bernoulli_array(x.shape, p, _ACTIVE[-1]
                                                        ).astype(x.dtype),
                           _zero_grads, args=("p",), jvp=zero)
BERNOULLI_FILL = Op("bernoulli", "BernoulliBackward2",
                    lambda x, p: bernoulli_array(x.shape, p, _ACTIVE[-1]).astype(x.dtype),
                    _zero_grads, args=("p",), jvp=zero)


def _fill(self: Tensor, op: Op, *args: Any) -> Tensor:
    if type(self._data) is _meta.MetaArray:      # nothing to draw (Note [Meta arrays])
        return self
    return apply_inplace(self, lambda t: apply(op, (t,), (t._data,), args), overlap="none")


@_with_generator
def uniform_(self: Tensor, from_: float = 0, to: float = 1, *, generator: Any = None) -> Tensor:
    """Fill with samples of U[from, to)."""
    _continuous(self, "uniform", "check_uniform_bounds")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_fmt(from_)} > to={_fmt(to)}")
    return _fill(self, UNIFORM, float(from_), float(to))


@_with_generator
def normal_(self: Tensor, mean: float = 0, std: float = 1, *, generator: Any = None) -> Tensor:
    """Fill with samples of N(mean, std^2)."""
    _continuous(self, "normal", "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt(std)}")
    return _fill(self, NORMAL_, float(mean), float(std))


@_with_generator
def cauchy_(self: Tensor, median: float = 0, sigma: float = 1, *, generator: Any = None) -> Tensor:
    """Fill with samples of the Cauchy distribution."""
    _continuous(self, "Cauchy", "@{cpp}")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_fmt(sigma)}")
    return _fill(self, CAUCHY, float(median), float(sigma))


@_with_generator
def exponential_(self: Tensor, lambd: float = 1, *, generator: Any = None) -> Tensor:
    """Fill with samples of the exponential distribution of rate ``lambd``."""
    _continuous(self, "Exponential", "@{t}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_fmt(lambd)}")
    return _fill(self, EXPONENTIAL, float(lambd))


@_with_generator
def geometric_(self: Tensor, p: float, *, generator: Any = None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_fmt(p)}")
    return _fill(self, GEOMETRIC, float(p))


@_with_generator
def log_normal_(self: Tensor, mean: float = 1, std: float = 2, *, generator: Any = None) -> Tensor:
    """Fill with exp of N(mean, std^2) samples."""
    _continuous(self, "log_normal", "log_normal_cpu")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_fmt(std)}")
    return _fill(self, LOG_NORMAL, float(mean), float(std))


_RANDOM_TOP = {"float16": 2 ** 11, "bfloat16": 2 ** 8, "float32": 2 ** 24, "float64": 2 ** 53,
               "bool": 1}


_UNSET: Any = object()     # random_'s bounds not given (``random_(0, None)`` is another call)
_RANDOM_OVERLOADS = (" * (*, torch.Generator generator = None)\n"
                     " * (int from, int to, *, torch.Generator generator = None)\n"
                     " * (int to, *, torch.Generator generator = None)\n")


@_with_generator
def random_(self: Tensor, from_: Any = _UNSET, to: Any = _UNSET, *,
            generator: Any = None) -> Tensor:
    """Fill with integers: ``random_()`` in [0, the dtype's largest exactly representable
    integer], ``random_(to)`` in [0, to), ``random_(from, to)`` in [from, to), and
    ``random_(from, None)`` from ``from`` up to ``random_()``'s bound."""
    d = self.dtype
    if from_ is None or (from_ is _UNSET and to is None):
        got = ([type(from_).__name__] if from_ is not _UNSET else []) + (
            [type(to).__name__ if from_ is not _UNSET else "to=NoneType, "]
            if to is not _UNSET else [])
        raise TypeError(f"random_() received an invalid combination of arguments - got "
                        f"({', '.join(got)}), but expected one of:\n{_RANDOM_OVERLOADS}")
    if d.is_complex:
        raise NotImplementedError(f"\"random_\" not implemented for '{d._torch_name}'")
    if from_ is _UNSET and to is not _UNSET:     # random_(to=n): random_(n)
        from_, to = to, _UNSET
    top = _RANDOM_TOP.get(d.name)
    if top is None:
        top = int(np.iinfo(d.np).max)
    if from_ is _UNSET:
        return _fill(self, RANDOM, 0, top + 1)
    if to is _UNSET:
        lo, hi, op = 0, from_, RANDOM_TO
    elif to is None:                             # random_(from, None)
        lo, hi, op = from_, top + 1, RANDOM_FROM_TO
    else:
        lo, hi, op = from_, to, RANDOM_FROM_TO
    if not d.is_floating_point:
        _creation._check_random_bounds(lo, lo + 1 if to is None else hi, d)
    elif to is None and lo > top:
        raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than or equal to "
                           f"'to_inc' casted to dtype, but got from={lo} > to_inc={top}")
    elif lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= "
                           f"to={hi}")
    return _fill(self, op, int(lo), int(hi))


@_with_generator
def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fill with 0/1 samples of probability ``p`` (a number or a tensor broadcast to self)."""
    if isinstance(p, Tensor):
        _check_p(p._data)
        return _fill(self, BERNOULLI_FILL_TENSOR, np.broadcast_to(p._data, self._data.shape))
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _fill(self, BERNOULLI_FILL, float(p))


# ---------------------------------------------------------------------------- batching
def _install_rules() -> None:
    from ._batching import RULES, _pointwise
    for op in (NORMAL_TENSOR_FLOAT, NORMAL_FLOAT_TENSOR, NORMAL_TENSORS, BERNOULLI, BERNOULLI_P,
               UNIFORM, NORMAL_, CAUCHY, EXPONENTIAL, GEOMETRIC, LOG_NORMAL, RANDOM_FROM_TO,
               RANDOM_TO, RANDOM, BERNOULLI_FILL, BERNOULLI_FILL_TENSOR):
        RULES[op] = _pointwise()   # independent draws per element: the batch is more elements


_install_rules()
