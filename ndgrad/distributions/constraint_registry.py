"""From a constraint to a transform that maps unconstrained reals onto it.

``biject_to(c)`` gives a bijection (for reparameterizing a variable that must stay in ``c``);
``transform_to(c)`` gives any onto map, possibly not injective (``SoftmaxTransform`` for the
simplex). Both are ``ConstraintRegistry`` instances: ``register(constraint_or_type)`` adds a
factory for a constraint class; lookups follow the constraint's class hierarchy.

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import biject_to, constraints
    >>> t = biject_to(constraints.positive)
    >>> bool((t(ndgrad.tensor([-3.0, 0.0, 2.0])) > 0).all())
    True
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from . import constraints
from . import transforms as T

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A table from constraint classes to transform factories ``factory(constraint)``."""

    def __init__(self) -> None:
        self._factories: dict = {}

    def register(self, constraint: Any, factory: Optional[Callable] = None) -> Any:
        """Register ``factory`` for ``constraint``'s class (usable as a decorator)."""
        if factory is None:
            return lambda f: self.register(constraint, f)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not (isinstance(constraint, type) and issubclass(constraint, constraints.Constraint)):
            raise TypeError("Expected constraint to be either a Constraint subclass or "
                            f"instance, but got {constraint}")
        self._factories[constraint] = factory
        return factory

    def __call__(self, constraint: Any) -> T.Transform:
        for klass in type(constraint).__mro__:
            if klass in self._factories:
                return self._factories[klass](constraint)
        raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints")


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()

_C = constraints


def _identity(c: Any) -> T.Transform:
    return T.identity_transform


def _independent(registry: ConstraintRegistry) -> Callable:
    def make(c: Any) -> T.Transform:
        return T.IndependentTransform(registry(c.base_constraint), c.reinterpreted_batch_ndims)
    return make


def _above(c: Any) -> T.Transform:
    return T.ComposeTransform([T.ExpTransform(), T.AffineTransform(c.lower_bound, 1)])


def _below(c: Any) -> T.Transform:
    return T.ComposeTransform([T.ExpTransform(), T.AffineTransform(c.upper_bound, -1)])


def _between(c: Any) -> T.Transform:
    lo, hi = c.lower_bound, c.upper_bound
    if not hasattr(lo, "shape") and not hasattr(hi, "shape") and lo == 0 and hi == 1:
        return T.SigmoidTransform()
    return T.ComposeTransform([T.SigmoidTransform(), T.AffineTransform(lo, hi - lo)])


def _cat(registry: ConstraintRegistry) -> Callable:
    def make(c: Any) -> T.Transform:
        return T.CatTransform([registry(x) for x in c.cseq], c.dim, c.lengths)
    return make


def _stack(registry: ConstraintRegistry) -> Callable:
    def make(c: Any) -> T.Transform:
        return T.StackTransform([registry(x) for x in c.cseq], c.dim)
    return make


for _reg in (biject_to, transform_to):
    _reg.register(_C._Real, _identity)
    _reg.register(_C._IndependentConstraint, _independent(_reg))
    _reg.register(_C._GreaterThan, _above)
    _reg.register(_C._GreaterThanEq, _above)
    _reg.register(_C._LessThan, _below)
    _reg.register(_C._Interval, _between)
    _reg.register(_C._HalfOpenInterval, _between)
    _reg.register(_C._CorrCholesky, lambda c: T.CorrCholeskyTransform())
    _reg.register(_C._Cat, _cat(_reg))
    _reg.register(_C._Stack, _stack(_reg))

biject_to.register(_C._Simplex, lambda c: T.StickBreakingTransform())
transform_to.register(_C._Simplex, lambda c: T.SoftmaxTransform())
transform_to.register(_C._LowerCholesky, lambda c: T.LowerCholeskyTransform())
transform_to.register(_C._PositiveDefinite, lambda c: T.PositiveDefiniteTransform())
transform_to.register(_C._PositiveSemidefinite, lambda c: T.PositiveDefiniteTransform())
