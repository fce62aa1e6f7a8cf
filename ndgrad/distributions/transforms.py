"""Invertible maps between constrained spaces, with the log absolute Jacobian determinant a
change of variables needs (``TransformedDistribution``, ``biject_to``).

A transform is called on ``x`` to give ``y``; ``t.inv`` maps back; ``log_abs_det_jacobian(x,
y)`` is ``log |dy/dx|`` per event (``domain.event_dim`` rightmost dimensions of ``x`` form one
event). With ``cache_size=1`` the last pair is remembered, so ``t.inv(t(x))`` returns ``x``
itself.

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions.transforms import ExpTransform
    >>> t = ExpTransform()
    >>> y = t(ndgrad.tensor([0.0, 1.0]))
    >>> [round(v, 4) for v in t.inv(y).tolist()]
    [0.0, 1.0]
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Optional, Sequence

import ndgrad
from ndgrad.tensor import Tensor

from . import constraints
from .utils import _sum_last, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
           "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
           "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
           "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform",
           "Transform", "identity_transform"]


class Transform:
    """The base class of transforms. Subclasses define ``_call`` (forward), ``_inverse``,
    ``log_abs_det_jacobian``, ``domain`` and ``codomain``; ``bijective`` and ``sign`` when
    they apply."""

    bijective = False
    domain: Any = constraints.real
    codomain: Any = constraints.real

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._last: tuple = (None, None)
        self._inverse_obj: Optional[Transform] = None

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> "Transform":
        """The inverse transform (one object per transform, so ``t.inv.inv is t``)."""
        if self._inverse_obj is None:
            self._inverse_obj = _InverseTransform(self)
        return self._inverse_obj

    @property
    def sign(self) -> Any:
        """+1 or -1 for monotone increasing or decreasing element-wise transforms."""
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> "Transform":
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x: Tensor) -> Tensor:
        if not self._cache_size:
            return self._call(x)
        seen_x, seen_y = self._last
        if x is seen_x:
            return seen_y
        y = self._call(x)
        self._last = (x, y)
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if not self._cache_size:
            return self._inverse(y)
        seen_x, seen_y = self._last
        if y is seen_y:
            return seen_x
        x = self._inverse(y)
        self._last = (x, y)
        return x

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        raise NotImplementedError

    def forward_shape(self, shape: Any) -> Any:
        """The shape of ``self(x)`` for an ``x`` of ``shape``."""
        return shape

    def inverse_shape(self, shape: Any) -> Any:
        """The shape of ``self.inv(y)`` for a ``y`` of ``shape``."""
        return shape

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform, sharing its cache."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._forward = transform

    @property
    def domain(self) -> Any:
        return self._forward.codomain

    @property
    def codomain(self) -> Any:
        return self._forward.domain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self._forward.bijective

    @property
    def sign(self) -> Any:
        return self._forward.sign

    @property
    def inv(self) -> Transform:
        return self._forward

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self._forward.with_cache(cache_size).inv

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _InverseTransform) and self._forward == other._forward

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._forward!r})"

    def __call__(self, x: Tensor) -> Tensor:
        return self._forward._inv_call(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._forward.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: Any) -> Any:
        return self._forward.inverse_shape(shape)

    def inverse_shape(self, shape: Any) -> Any:
        return self._forward.forward_shape(shape)


def _lift(rule: Any, depth: int) -> Any:
    """``rule`` with its event widened to ``depth`` dimensions."""
    if depth > rule.event_dim:
        return constraints.independent(rule, depth - rule.event_dim)
    return rule


class ComposeTransform(Transform):
    """``parts`` applied left to right."""

    def __init__(self, parts: Sequence[Transform], cache_size: int = 0) -> None:
        if cache_size:
            parts = [p.with_cache(cache_size) for p in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self) -> Any:
        if not self.parts:
            return constraints.real
        depth = self.parts[-1].codomain.event_dim
        for p in reversed(self.parts):
            depth += p.domain.event_dim - p.codomain.event_dim
            depth = max(depth, p.domain.event_dim)
        return _lift(self.parts[0].domain, depth)

    @property
    def codomain(self) -> Any:
        if not self.parts:
            return constraints.real
        depth = self.parts[0].domain.event_dim
        for p in self.parts:
            depth += p.codomain.event_dim - p.domain.event_dim
            depth = max(depth, p.codomain.event_dim)
        return _lift(self.parts[-1].codomain, depth)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(p.bijective for p in self.parts)

    @property
    def sign(self) -> Any:
        total = 1
        for p in self.parts:
            total = total * p.sign
        return total

    @property
    def inv(self) -> Transform:
        if self._inverse_obj is None:
            back = ComposeTransform([p.inv for p in reversed(self.parts)])
            back._inverse_obj = self
            self._inverse_obj = back
        return self._inverse_obj

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x: Tensor) -> Tensor:
        for p in self.parts:
            x = p(x)
        return x

    def _inv_call(self, y: Tensor) -> Tensor:
        for p in reversed(self.parts):
            y = p.inv(y)
        return y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if not self.parts:
            return ndgrad.zeros_like(x)
        depth = self.domain.event_dim
        total: Any = 0
        for p in self.parts:
            nxt = p(x)
            total = total + _sum_last(p.log_abs_det_jacobian(x, nxt),
                                      depth - p.domain.event_dim)
            depth += p.codomain.event_dim - p.domain.event_dim
            x = nxt
        return total

    def forward_shape(self, shape: Any) -> Any:
        for p in self.parts:
            shape = p.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: Any) -> Any:
        for p in reversed(self.parts):
            shape = p.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """``base_transform`` with ``reinterpreted_batch_ndims`` more dimensions in its event."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @property
    def domain(self) -> Any:
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @property
    def codomain(self) -> Any:
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self.base_transform.bijective

    @property
    def sign(self) -> Any:
        return self.base_transform.sign

    def _call(self, x: Tensor) -> Tensor:
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return _sum_last(self.base_transform.log_abs_det_jacobian(x, y),
                         self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.base_transform!r}, "
                f"{self.reinterpreted_batch_ndims})")

    def forward_shape(self, shape: Any) -> Any:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: Any) -> Any:
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Reshapes the rightmost ``in_shape`` dimensions to ``out_shape`` (same element count)."""

    bijective = True

    def __init__(self, in_shape: Any, out_shape: Any, cache_size: int = 0) -> None:
        self.in_shape = ndgrad.Size(tuple(in_shape))
        self.out_shape = ndgrad.Size(tuple(out_shape))
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self) -> Any:
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self) -> Any:
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        lead = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(lead + tuple(self.out_shape))

    def _inverse(self, y: Tensor) -> Tensor:
        lead = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(lead + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x.new_zeros(tuple(x.shape[:x.dim() - len(self.in_shape)]))

    def _swap(self, shape: Any, have: Any, want: Any) -> Any:
        if len(shape) < len(have):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(have)
        if tuple(shape[cut:]) != tuple(have):
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got "
                             f"{have}")
        return tuple(shape[:cut]) + tuple(want)

    def forward_shape(self, shape: Any) -> Any:
        return self._swap(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape: Any) -> Any:
        return self._swap(shape, self.out_shape, self.in_shape)


class ExpTransform(Transform):
    """``y = exp(x)``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on positive numbers."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = _as_tensors(exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self) -> Any:
        return self.exponent.sign()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PowerTransform) and bool(self.exponent.eq(other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape: Any) -> Any:
        return ndgrad.broadcast_shapes(shape, tuple(self.exponent.shape))

    def inverse_shape(self, shape: Any) -> Any:
        return ndgrad.broadcast_shapes(shape, tuple(self.exponent.shape))


def _as_tensors(*values: Any) -> tuple:
    return tuple(v if isinstance(v, Tensor) else ndgrad.tensor(v) for v in values)


class SigmoidTransform(Transform):
    """``y = 1 / (1 + exp(-x))``."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        eps = ndgrad.finfo(x.dtype).eps
        return ndgrad.sigmoid(x).clamp(min=eps, max=1 - eps)

    def _inverse(self, y: Tensor) -> Tensor:
        eps = ndgrad.finfo(y.dtype).eps
        y = y.clamp(min=eps, max=1 - eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        # log sigmoid'(x) = -softplus(-x) - softplus(x)
        return -ndgrad.nn.functional.softplus(-x) - ndgrad.nn.functional.softplus(x)


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftplusTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return ndgrad.nn.functional.softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        # x = log(exp(y) - 1) = y + log(1 - exp(-y))
        return y + (-(-y).exp()).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -ndgrad.nn.functional.softplus(-x)


class TanhTransform(Transform):
    """``y = tanh(x)``."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.atanh()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        # log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)), stable for large |x|
        return 2.0 * (math.log(2.0) - x - ndgrad.nn.functional.softplus(-2.0 * x))


class AbsTransform(Transform):
    """``y = |x|`` (not injective: the inverse picks the positive root)."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x`` (``event_dim`` rightmost dimensions form one event)."""

    bijective = True

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def domain(self) -> Any:
        return _lift(constraints.real, self._event_dim)

    @property
    def codomain(self) -> Any:
        return _lift(constraints.real, self._event_dim)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        for a, b in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
                if a != b:
                    return False
            elif not bool((ndgrad.as_tensor(a) == ndgrad.as_tensor(b)).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self) -> Any:
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if isinstance(self.scale, numbers.Real):
            each = ndgrad.full_like(x, math.log(abs(self.scale)))
        else:
            each = self.scale.abs().log()
        if self._event_dim:
            lead = tuple(each.shape[:each.dim() - self._event_dim]) + (-1,)
            each = each.reshape(lead).sum(-1)
            shape = tuple(x.shape[:x.dim() - self._event_dim])
            return each.expand(ndgrad.broadcast_shapes(tuple(each.shape), shape))
        return each.expand(ndgrad.broadcast_shapes(tuple(each.shape), tuple(x.shape)))

    def _param_shape(self) -> tuple:
        return ndgrad.broadcast_shapes(*[tuple(getattr(v, "shape", ())) for v in
                                         (self.loc, self.scale)])

    def forward_shape(self, shape: Any) -> Any:
        return ndgrad.broadcast_shapes(shape, self._param_shape())

    def inverse_shape(self, shape: Any) -> Any:
        return ndgrad.broadcast_shapes(shape, self._param_shape())


class SoftmaxTransform(Transform):
    """Unconstrained vectors to the simplex by ``exp`` and normalization (not bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        shifted = (x - x.max(-1, keepdim=True)[0]).exp()
        return shifted / shifted.sum(-1, keepdim=True)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def forward_shape(self, shape: Any) -> Any:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


class StickBreakingTransform(Transform):
    """Vectors of length ``K - 1`` to the ``K``-simplex: each entry, through a shifted sigmoid,
    takes a fraction of the stick left over by the entries before it."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    @staticmethod
    def _shift(x: Tensor) -> Tensor:
        # log of the remaining entries' count, so that x = 0 breaks the stick evenly
        remaining = x.shape[-1] + 1 - ndgrad.arange(1, x.shape[-1] + 1, dtype=x.dtype)
        return remaining.log()

    def _call(self, x: Tensor) -> Tensor:
        frac = ndgrad.sigmoid(x - self._shift(x))
        left = (1 - frac).cumprod(-1)
        pad = ndgrad.nn.functional.pad
        return pad(frac, [0, 1], value=1) * pad(left, [1, 0], value=1)

    def _inverse(self, y: Tensor) -> Tensor:
        head = y[..., :-1]
        eps = ndgrad.finfo(y.dtype).tiny
        left = (1 - head.cumsum(-1)).clamp(min=eps)
        before = ndgrad.cat([ndgrad.ones_like(head[..., :1]), left[..., :-1]], -1)
        frac = head / before
        return frac.log() - (-frac).log1p() + self._shift(head)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        z = x - self._shift(x)
        # d y_k / d x_k = sigmoid'(z_k) * (stick left before k); log sigmoid' = -sp(-z) - sp(z)
        sp = ndgrad.nn.functional.softplus
        return (-sp(-z) - sp(z)).sum(-1) + _stick_logs(y)

    def forward_shape(self, shape: Any) -> Any:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape: Any) -> Any:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


def _stick_logs(y: Tensor) -> Tensor:
    """Sum over k < K of log(stick left before step k) = log(1 - sum_{j<k} y_j)."""
    head = y[..., :-1]
    left = 1 - head.cumsum(-1)
    before = ndgrad.cat([ndgrad.zeros_like(head[..., :1]), left[..., :-1].log()], -1)
    return before.sum(-1)


class LowerCholeskyTransform(Transform):
    """Square matrices to lower-triangular ones with a positive diagonal: the strict lower
    part kept, the diagonal exponentiated."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Square matrices to positive-definite ones: ``L L^T`` of the lower Cholesky transform."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        low = LowerCholeskyTransform()(x)
        return low @ low.mT

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(ndgrad.linalg.cholesky(y))


class CorrCholeskyTransform(Transform):
    """Vectors of ``D(D-1)/2`` reals to Cholesky factors of ``D x D`` correlation matrices:
    ``tanh`` gives partial correlations, each row is then filled so its norm is one."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        eps = ndgrad.finfo(x.dtype).eps
        r = x.tanh().clamp(min=-1 + eps, max=1 - eps)
        z = vec_to_tril_matrix(r, -1)
        side = z.shape[-1]
        eye = ndgrad.eye(side, dtype=x.dtype)
        # row i: entries w_ij = z_ij * sqrt(1 - sum_{k<j} w_ik^2), diagonal what is left
        keep = (1 - z.square()).sqrt()
        ones = ndgrad.ones_like(keep[..., :1])
        cum = ndgrad.cat([ones, keep[..., :-1]], -1).cumprod(-1)
        return (z + eye) * cum

    def _inverse(self, y: Tensor) -> Tensor:
        # partial correlation: w_ij over the norm left in row i before column j
        left = 1 - y.square().cumsum(-1)
        before = ndgrad.cat([ndgrad.ones_like(left[..., :1]), left[..., :-1]], -1)
        z = y / before.sqrt()
        return tril_matrix_to_vec(z, -1).atanh()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        # d w_ij / d z_ij = sqrt(left before j) (triangular Jacobian) and d tanh = 1 - r^2
        left = 1 - y.square().cumsum(-1)
        before = ndgrad.cat([ndgrad.ones_like(left[..., :1]), left[..., :-1]], -1)
        half_logs = tril_matrix_to_vec(before, -1).log() * 0.5
        tanh_logs = 2.0 * (math.log(2.0) - x - ndgrad.nn.functional.softplus(-2.0 * x))
        return (half_logs + tanh_logs).sum(-1)

    def forward_shape(self, shape: Any) -> Any:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        side = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if side * (side - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (side, side)

    def inverse_shape(self, shape: Any) -> Any:
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        side = shape[-1]
        return tuple(shape[:-2]) + (side * (side - 1) // 2,)


class CatTransform(Transform):
    """Transforms applied to consecutive slices of ``dim`` (of sizes ``lengths``)."""

    def __init__(self, tseq: Sequence[Transform], dim: int = 0,
                 lengths: Optional[Sequence[int]] = None, cache_size: int = 0) -> None:
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError("lengths and transforms must have the same length")
        self.dim = dim

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _slices(self, x: Tensor, name: str = "x") -> list:
        if x.shape[self.dim] != self.length:
            # torch raises AssertionError here; kept for programs that catch it
            raise AssertionError(f"{name}.size({self.dim}) = {x.shape[self.dim]} must equal "
                                 f"length {self.length}")
        out, start = [], 0
        for n in self.lengths:
            out.append(x.narrow(self.dim, start, n))
            start += n
        return out

    def _call(self, x: Tensor) -> Tensor:
        return ndgrad.cat([t(v) for t, v in zip(self.transforms, self._slices(x))], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        return ndgrad.cat([t.inv(v) for t, v in zip(self.transforms, self._slices(y, "y"))],
                          self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        parts = []
        depth = self.event_dim
        for t, xs, ys in zip(self.transforms, self._slices(x), self._slices(y)):
            term = t.log_abs_det_jacobian(xs, ys)
            term = _sum_last(term, depth - t.event_dim)
            parts.append(term)
        # slices along an event dimension are summed; along a batch dimension concatenated
        dim = self.dim if self.dim >= 0 else x.dim() + self.dim
        if dim >= x.dim() - depth:
            return sum(parts[1:], parts[0])
        return ndgrad.cat(parts, dim)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self) -> Any:
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self) -> Any:
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Transforms applied to the slices of ``dim``, one each."""

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0) -> None:
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, x: Tensor, name: str = "x") -> tuple:
        if x.shape[self.dim] != len(self.transforms):
            # torch raises AssertionError here; kept for programs that catch it
            raise AssertionError(f"{name}.size({self.dim}) = {x.shape[self.dim]} must equal "
                                 f"len(transforms) {len(self.transforms)}")
        return x.unbind(self.dim)

    def _call(self, x: Tensor) -> Tensor:
        return ndgrad.stack([t(v) for t, v in zip(self.transforms, self._slices(x))], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        return ndgrad.stack([t.inv(v) for t, v in zip(self.transforms, self._slices(y, "y"))],
                            self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        terms = [t.log_abs_det_jacobian(a, b)
                 for t, a, b in zip(self.transforms, self._slices(x), self._slices(y))]
        return ndgrad.stack(terms, self.dim)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self) -> Any:
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self) -> Any:
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: the support of ``distribution`` onto the unit interval."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> Any:
        return self.distribution.support

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self.distribution.log_prob(x)
