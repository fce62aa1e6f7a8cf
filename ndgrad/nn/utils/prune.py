"""Pruning, as ``torch.nn.utils.prune``: a pruned parameter ``name`` becomes ``name + "_orig"``
(the same Parameter object, so optimizers keep updating it) times a buffer ``name + "_mask"``,
recomputed into the plain attribute ``name`` by a forward pre-hook before every call.

Note [Masks of repeated pruning]
Pruning a parameter again prunes only what is left: the hook becomes a ``PruningContainer``
holding every method applied so far, and the newest method computes its mask on the entries
(unstructured) or channels (structured, along its ``dim``) the previous mask kept; a
``"global"`` method sees the whole tensor. It ranks the values of the pruned attribute ``name``
as they stand (``name_orig`` times the old mask, as of the last forward or pruning), not
``name_orig``: a norm over a channel counts only its surviving entries. ``amount`` always
counts entries or channels of what the method sees: a float is a fraction rounded to the
nearest count, an int a count.

Example:
    >>> import ndgrad
    >>> from ndgrad import nn
    >>> from ndgrad.nn.utils import prune
    >>> lin = nn.Linear(4, 2)
    >>> _ = prune.l1_unstructured(lin, "weight", amount=0.5)
    >>> int((lin.weight == 0).sum()), sorted(b for b, _ in lin.named_buffers())
    (4, ['weight_mask'])
    >>> _ = prune.remove(lin, "weight")
    >>> sorted(p for p, _ in lin.named_parameters())
    ['bias', 'weight']
"""

from __future__ import annotations

import numbers
import operator
from abc import ABC, abstractmethod
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ... import _creation
from ...ops import cat
from ...tensor import Tensor
from ..modules.module import Module

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


# ---------------------------------------------------------------------------- amounts
def _check_amount(amount: Any) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if isinstance(amount, numbers.Integral):
        bad = operator.index(amount) < 0
    else:
        bad = not 0.0 <= float(amount) <= 1.0
    if bad:
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _count(amount: Any, size: int) -> int:
    """How many of ``size`` entries or channels ``amount`` prunes."""
    if isinstance(amount, numbers.Integral):
        if operator.index(amount) > size:
            raise ValueError(f"amount={amount} should be smaller than the number of "
                             f"parameters to prune={size}")
        return int(amount)
    return round(amount * size)


def _check_structured(t: Tensor) -> None:
    if t.dim() <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {t.shape} with {t.dim()} dims")


def _check_dim(t: Tensor, dim: int) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _channel_mask(t: Tensor, dim: int, keep: Tensor) -> Tensor:
    """Ones on the channels ``keep`` selects (indices or a boolean vector) along ``dim``."""
    mask = _creation.zeros_like(t)
    index: List[Any] = [slice(None)] * t.dim()
    index[dim] = keep
    mask[tuple(index)] = 1
    return mask


# ---------------------------------------------------------------------------- methods
class BasePruningMethod(ABC):
    """A pruning method: ``compute_mask`` decides, ``apply`` installs it on a module's
    parameter (as a forward pre-hook that refreshes the pruned attribute)."""

    PRUNING_TYPE: str = "unstructured"
    _tensor_name: str

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for ``t``, given the mask already in force (``default_mask``)."""

    def apply_mask(self, module: Module) -> Tensor:
        """``name_orig * name_mask`` of ``module``."""
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any,
              importance_scores: Optional[Tensor] = None, **kwargs: Any) -> Any:
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)`` (Note [Masks of repeated
        pruning]) and return the method installed as the hook."""
        previous = [(k, h) for k, h in module._forward_pre_hooks.items()
                    if isinstance(h, BasePruningMethod) and h._tensor_name == name]
        if len(previous) > 1:
            raise RuntimeError(f"Avoid adding multiple pruning hooks to the same tensor {name} "
                               f"of module {module}. Use a PruningContainer.")
        method: BasePruningMethod = cls(*args, **kwargs)
        method._tensor_name = name
        first = not previous
        if first:
            getattr(module, name)       # torch's AttributeError for a name the module lacks
            if name not in module._parameters:
                raise AttributeError(f"Module {type(module).__name__} has no parameter named "
                                     f"'{name}'")
            orig = module._parameters[name]
            default_mask = _creation.ones_like(orig)
        else:
            # the next method ranks the pruned attribute, not name_orig (Note [Masks of
            # repeated pruning])
            orig = getattr(module, name)
            default_mask = getattr(module, name + "_mask").detach().clone()
            old = previous[0][1]
            container = old if isinstance(old, PruningContainer) else PruningContainer(old)
            container.add_pruning_method(method)
            method = container
        scores = orig if importance_scores is None else importance_scores
        if scores.shape != orig.shape:
            raise AssertionError(f"importance_scores should have the same shape as parameter "
                                 f"{name} of {module}, got {scores.shape} vs {orig.shape}")
        mask = method.compute_mask(scores, default_mask=default_mask)   # may raise: no change yet
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
        else:
            del module._forward_pre_hooks[previous[0][0]]
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t: Tensor, default_mask: Optional[Tensor] = None,
              importance_scores: Optional[Tensor] = None) -> Tensor:
        """``t`` times the mask this method computes for it (on ``importance_scores`` if
        given)."""
        scores = t if importance_scores is None else importance_scores
        if scores.shape != t.shape:
            raise ValueError("importance_scores should have the same shape as tensor t")
        base = _creation.ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(scores, default_mask=base)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``name`` is a Parameter again, holding the pruned
        values; ``name_orig`` and ``name_mask`` are deleted."""
        name = self._tensor_name
        if name + "_orig" not in module._parameters:
            raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before "
                             "pruning can be removed")
        pruned = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        orig = module._parameters.pop(name + "_orig")
        orig.data = pruned.data
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)


class PruningContainer(BasePruningMethod):
    """The methods applied to one parameter so far; the newest computes the next mask on what
    the others left (Note [Masks of repeated pruning])."""

    def __init__(self, *args: BasePruningMethod) -> None:
        self._pruning_methods: Tuple[BasePruningMethod, ...] = ()
        methods = tuple(args[0]) if len(args) == 1 and not isinstance(
            args[0], BasePruningMethod) else args
        for m in methods:
            self.add_pruning_method(m)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Append ``method`` (it must act on the same parameter as the ones held)."""
        if method is None:
            return
        if not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        held = self._pruning_methods
        if held and held[0]._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{held[0]._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._tensor_name = method._tensor_name
        self._pruning_methods = held + (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Any:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: Any) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        method = self._pruning_methods[-1]
        kind = method.PRUNING_TYPE
        new_mask = default_mask.clone()
        if kind == "unstructured":
            kept = default_mask == 1
            part = method.compute_mask(t[kept], default_mask=default_mask[kept])
            new_mask[kept] = part.to(dtype=new_mask.dtype)
        elif kind == "structured":
            dim = getattr(method, "dim", -1) % t.dim()
            others = [d for d in range(t.dim()) if d != dim]
            alive = default_mask.sum(dim=others) != 0
            index: List[Any] = [slice(None)] * t.dim()
            index[dim] = alive
            part = method.compute_mask(t[tuple(index)],
                                       default_mask=default_mask[tuple(index)])
            new_mask[tuple(index)] = part.to(dtype=new_mask.dtype)
        elif kind == "global":
            new_mask = method.compute_mask(t, default_mask=default_mask).to(
                dtype=new_mask.dtype)
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing (a mask of ones)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> Any:  # type: ignore[override]
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Prunes ``amount`` entries, the ones ``_pick`` chooses."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: Any) -> None:
        _check_amount(amount)
        self.amount = amount

    def _pick(self, t: Tensor, k: int) -> Tensor:
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        k = _count(self.amount, t.numel())
        mask = default_mask.clone()
        if k:
            mask.view(-1)[self._pick(t, k)] = 0
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes ``amount`` entries chosen at random (the largest of ``rand_like(t)``)."""

    def _pick(self, t: Tensor, k: int) -> Tensor:
        return _creation.rand_like(t).reshape(-1).topk(k).indices

    @classmethod
    def apply(cls, module: Module, name: str, amount: Any) -> Any:  # type: ignore[override]
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes the ``amount`` entries of smallest absolute value."""

    def _pick(self, t: Tensor, k: int) -> Tensor:
        return t.abs().reshape(-1).topk(k, largest=False).indices

    @classmethod
    def apply(cls, module: Module, name: str, amount: Any,  # type: ignore[override]
              importance_scores: Optional[Tensor] = None) -> Any:
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` channels along ``dim`` chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: Any, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _check_structured(t)
        _check_dim(t, self.dim)
        k = _count(self.amount, t.shape[self.dim])
        if k == 0:
            return default_mask
        draws = _creation.rand(t.shape[self.dim])
        cut = draws.kthvalue(k).values
        return _channel_mask(t, self.dim, draws > cut) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, amount: Any,  # type: ignore[override]
              dim: int = -1) -> Any:
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` of smallest ``n``-norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: Any, n: Any, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _check_structured(t)
        _check_dim(t, self.dim)
        size = t.shape[self.dim]
        k = _count(self.amount, size)
        if k == 0:
            return default_mask
        dim = self.dim % t.dim()
        norms = t.norm(p=self.n, dim=[d for d in range(t.dim()) if d != dim])
        keep = norms.topk(size - k).indices
        return _channel_mask(t, dim, keep) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, amount: Any, n: Any,  # type: ignore[override]
              dim: int, importance_scores: Optional[Tensor] = None) -> Any:
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is zero."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match "
                                 f"self.mask shape {self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> Any:  # type: ignore[override]
        return super().apply(module, name, mask=mask)


# ---------------------------------------------------------------------------- functions
def identity(module: Module, name: str) -> Module:
    """Install an all-ones mask on ``module.<name>``; returns ``module``."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: Any) -> Module:
    """Prune ``amount`` random entries of ``module.<name>``; returns ``module``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: Any,
                    importance_scores: Optional[Tensor] = None) -> Module:
    """Prune the ``amount`` entries of ``module.<name>`` of smallest magnitude (of
    ``importance_scores`` if given); returns ``module``."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: Any, dim: int) -> Module:
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount: Any, n: Any, dim: int,
                  importance_scores: Optional[Tensor] = None) -> Module:
    """Prune the ``amount`` channels of ``module.<name>`` along ``dim`` of smallest
    ``n``-norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.<name>`` where ``mask`` is zero."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters: Iterable[Tuple[Module, str]], pruning_method: Any,
                        importance_scores: Optional[Dict[Tuple[Module, str], Tensor]] = None,
                        **kwargs: Any) -> None:
    """Prune the given parameters together: one unstructured method (``L1Unstructured``,
    ``RandomUnstructured`` ...) decides on all their entries at once.

    >>> import ndgrad
    >>> from ndgrad.nn.utils import prune
    >>> a, b = ndgrad.nn.Linear(3, 2), ndgrad.nn.Linear(2, 2)
    >>> prune.global_unstructured([(a, "weight"), (b, "weight")],
    ...                           pruning_method=prune.L1Unstructured, amount=5)
    >>> int((a.weight == 0).sum() + (b.weight == 0).sum())
    5
    """
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    scores = importance_scores if importance_scores is not None else {}
    if not isinstance(scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    flat = cat([scores.get((m, n), getattr(m, n)).reshape(-1) for m, n in parameters])
    base = cat([getattr(m, n + "_mask", _creation.ones_like(getattr(m, n))).reshape(-1)
                for m, n in parameters])
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container = PruningContainer(method)
    mask = container.compute_mask(flat, default_mask=base)
    start = 0
    for m, n in parameters:
        p = getattr(m, n)
        custom_from_mask(m, n, mask=mask[start:start + p.numel()].view_as(p))
        start += p.numel()


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent (see ``BasePruningMethod.remove``)."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     "can be removed")


def is_pruned(module: Module) -> bool:
    """True when ``module`` or a submodule holds a pruning hook."""
    return any(isinstance(h, BasePruningMethod)
               for m in module.modules() for h in m._forward_pre_hooks.values())
