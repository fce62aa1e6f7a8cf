"""``Distribution``: the interface every probability distribution implements.

A distribution has a ``batch_shape`` (independent, differently parameterized copies) and an
``event_shape`` (the shape of one draw). ``sample(sample_shape)`` returns a tensor of shape
``sample_shape + batch_shape + event_shape``; ``rsample`` does the same but keeps the graph to
the parameters (reparameterized draws) when ``has_rsample`` is true. Parameters and values are
checked against ``arg_constraints`` and ``support`` when validation is on (the default; see
``Distribution.set_default_validate_args``).

Example:
    >>> import ndgrad
    >>> from ndgrad.distributions import Normal
    >>> d = Normal(ndgrad.zeros(3), 1.0)
    >>> tuple(d.batch_shape), tuple(d.sample((2,)).shape)
    ((3,), (2, 3))
"""

from __future__ import annotations

import warnings
from typing import Any, Optional

import ndgrad
from ndgrad.tensor import Tensor

from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


def _as_size(shape: Any) -> ndgrad.Size:
    return ndgrad.Size(tuple(shape))


def _brief(value: Tensor) -> Any:
    """A parameter as a repr shows it: the value when it has one element, else its size."""
    if value.numel() == 1:
        return value.item() if value.dim() == 0 else value
    return value.size()


class Distribution:
    """The abstract base class of probability distributions."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions created afterwards without an
        explicit ``validate_args``."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: Any = (), event_shape: Any = (),
                 validate_args: Optional[bool] = None) -> None:
        self._batch_shape = _as_size(batch_shape)
        self._event_shape = _as_size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self) -> None:
        try:
            rules = self.arg_constraints
        except NotImplementedError:
            rules = {}
            warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                          "`arg_constraints = {}` or initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
        for name, rule in rules.items():
            if constraints.is_dependent(rule):
                continue
            if name not in self.__dict__ and isinstance(getattr(type(self), name, None),
                                                        lazy_property):
                continue                # the other parameterization was given
            value = getattr(self, name)
            ok = rule.check(value)
            if not bool(ok.all()):
                raise ValueError(self._invalid_parameter_message(name, value, rule))

    def _invalid_parameter_message(self, name: str, value: Tensor, rule: Any) -> str:
        return (f"Expected parameter {name} ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                f"{rule!r}, but found invalid values:\n{value}")

    # --- shapes -------------------------------------------------------------------------

    @property
    def batch_shape(self) -> ndgrad.Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> ndgrad.Size:
        """The shape of one sample without batching."""
        return self._event_shape

    def _extended_shape(self, sample_shape: Any = ()) -> ndgrad.Size:
        return _as_size(tuple(sample_shape) + tuple(self._batch_shape)
                        + tuple(self._event_shape))

    def expand(self, batch_shape: Any, _instance: Any = None) -> "Distribution":
        """A new distribution (same type) with parameters broadcast to ``batch_shape``."""
        raise NotImplementedError

    def _new_for_expand(self, family: type, _instance: Any) -> Any:
        """The object an ``expand`` fills in: ``_instance`` or a bare instance of ``type(self)``
        (a subclass with its own ``__init__`` must write its own ``expand``)."""
        if _instance is not None:
            return _instance
        if type(self).__init__ is not family.__init__:  # type: ignore[misc]
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of {family.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return type(self).__new__(type(self))

    def _expand_params(self, family: type, batch_shape: Any, _instance: Any,
                       names: tuple) -> Any:
        """``expand`` for a family whose parameters ``names`` have the batch shape (plus the
        event shape): each one present on ``self`` is broadcast onto the new instance; a
        family with more state sets it on the returned object."""
        new = self._new_for_expand(family, _instance)
        shape = _as_size(batch_shape)
        event = tuple(self._event_shape)
        for name in names:
            if name in self.__dict__:
                value = self.__dict__[name]
                extra = tuple(value.shape[value.dim() - len(event):]) if event else ()
                setattr(new, name, value.expand(tuple(shape) + extra))
        return self._finish_expand(new, shape)

    def _finish_expand(self, new: "Distribution", batch_shape: Any,
                       event_shape: Any = None) -> "Distribution":
        event = self._event_shape if event_shape is None else event_shape
        Distribution.__init__(new, batch_shape, event, validate_args=False)
        new._validate_args = self._validate_args
        return new

    # --- abstract interface -------------------------------------------------------------

    @property
    def arg_constraints(self) -> dict:
        """The constraint each parameter must satisfy, by name."""
        raise NotImplementedError

    @property
    def support(self) -> Any:
        """The constraint the samples satisfy."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Draws of shape ``sample_shape + batch_shape + event_shape``, without a graph."""
        with ndgrad.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """Reparameterized draws: differentiable in the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """``sample((n,))`` (deprecated spelling)."""
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning,
                      stacklevel=2)
        return self.sample((n,))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse cumulative distribution function at ``value``."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete support, along a new leading dimension."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The (differential) entropy, per batch element."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """``exp(entropy)``."""
        return ndgrad.exp(self.entropy())

    # --- validation of values -----------------------------------------------------------

    def _validate_sample(self, value: Any) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape = tuple(value.shape)
        event = tuple(self._event_shape)
        if len(event) and shape[len(shape) - len(event):] != event or len(shape) < len(event):
            raise ValueError("The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        expected = tuple(self._batch_shape) + event
        for have, want in zip(reversed(shape), reversed(expected)):
            if have != 1 and want != 1 and have != want:
                raise ValueError("Value is not broadcastable with batch_shape+event_shape: "
                                 f"{value.size()} vs {_as_size(expected)}.")
        try:
            rule = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
            return
        if not bool(rule.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape "
                             f"{tuple(value.shape)}) to be within the support ({rule!r}) of the "
                             f"distribution {self!r}, but found invalid values:\n{value}")

    def __repr__(self) -> str:
        try:
            names = [k for k in self.arg_constraints if k in self.__dict__]
        except NotImplementedError:
            names = []
        shown = ", ".join(f"{k}: {_brief(self.__dict__[k])}" for k in names)
        return f"{type(self).__name__}({shown})"
