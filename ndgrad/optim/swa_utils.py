"""Stochastic weight averaging and exponential moving averages of a model's weights, as
``torch.optim.swa_utils``: ``AveragedModel``, ``SWALR``, ``update_bn`` and the averaging
functions.

Example:
    >>> import ndgrad
    >>> from ndgrad import nn
    >>> from ndgrad.optim.swa_utils import AveragedModel
    >>> model = nn.Linear(2, 1)
    >>> swa = AveragedModel(model)
    >>> swa.update_parameters(model)
    >>> int(swa.n_averaged)
    1
"""

from __future__ import annotations

import copy
import itertools
import math
from typing import Any, Callable, Iterable, List, Optional, Union

from .. import _creation, _dtype
from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from ..tensor import Tensor
from .lr_scheduler import LRScheduler
from .optimizer import Optimizer

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_avg_fn", "get_swa_avg_fn",
           "get_ema_multi_avg_fn", "get_swa_multi_avg_fn"]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] "
                         "range.")


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """``avg = decay * avg + (1 - decay) * current``."""
    _check_decay(decay)

    def ema(averaged: Tensor, current: Tensor, num_averaged: Any) -> Tensor:
        return decay * averaged + (1 - decay) * current
    return ema


def get_swa_avg_fn() -> Callable:
    """The running mean: ``avg + (current - avg) / (n + 1)``."""
    def swa(averaged: Tensor, current: Tensor, num_averaged: Any) -> Tensor:
        return averaged + (current - averaged) / (num_averaged + 1)
    return swa


def _is_float(t: Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """The EMA over lists of tensors of one dtype, in place (integer tensors, such as a
    BatchNorm's ``num_batches_tracked`` under ``use_buffers``, by a truncating copy)."""
    _check_decay(decay)

    def ema_update(averaged: List[Tensor], current: List[Tensor], num_averaged: Any) -> None:
        with no_grad():
            if _is_float(averaged[0]):
                for a, c in zip(averaged, current):
                    a.lerp_(c, 1 - decay)
            else:
                for a, c in zip(averaged, current):
                    a.copy_(a * decay + c * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """The running mean over lists of tensors of one dtype, in place. Integer tensors go
    through ``addcdiv_`` (torch's error with a tensor count) or ``add_`` with a float alpha
    (torch's error for integer tensors)."""
    def swa_update(averaged: List[Tensor], current: List[Tensor], num_averaged: Any) -> None:
        with no_grad():
            if _is_float(averaged[0]):
                w = 1 / (num_averaged + 1)      # a float32 tensor for a tensor count
                for a, c in zip(averaged, current):
                    a.lerp_(c, w)
                return
            for a, c in zip(averaged, current):
                if isinstance(num_averaged, Tensor):
                    a.addcdiv_(c - a, num_averaged + 1)
                else:
                    a.add_(c - a, alpha=1.0 / (num_averaged + 1))
    return swa_update


def _by_dtype(pairs: list) -> list:
    """``pairs`` grouped by the averaged tensor's dtype, groups in order of first appearance
    (torch calls the multi-tensor functions once per device and dtype)."""
    groups: dict = {}
    for a, c in pairs:
        groups.setdefault(a.dtype, []).append((a, c))
    return list(groups.values())


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and buffers, with ``use_buffers``) are a running
    average of the model's, updated by ``update_parameters(model)``; SWA by default, or any
    ``avg_fn(averaged, current, n)`` / ``multi_avg_fn(averaged_list, current_list, n)``."""

    def __init__(self, model: Module, device: Any = None, avg_fn: Optional[Callable] = None,
                 multi_avg_fn: Optional[Callable] = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        self.register_buffer("n_averaged", _creation.tensor(0, dtype=_dtype.long))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average."""
        mine: Iterable[Tensor] = (itertools.chain(self.module.parameters(),
                                                  self.module.buffers())
                                  if self.use_buffers else self.parameters())
        theirs: Iterable[Tensor] = (itertools.chain(model.parameters(), model.buffers())
                                    if self.use_buffers else model.parameters())
        pairs = [(a.detach(), c.detach()) for a, c in zip(mine, theirs)]
        n = int(self.n_averaged)
        with no_grad():
            if n == 0:
                for a, c in pairs:
                    a.copy_(c)
            elif self.multi_avg_fn is not None:
                for group in _by_dtype(pairs):
                    self.multi_avg_fn([a for a, _ in group], [c for _, c in group],
                                      self.n_averaged)
            else:
                # torch's default on the cpu is the per-tensor running mean (its multi-tensor
                # one is for devices with foreach kernels)
                fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                for a, c in pairs:
                    a.copy_(fn(a, c, self.n_averaged))
            if not self.use_buffers:
                for a, c in zip(self.module.buffers(), model.buffers()):
                    a.detach().copy_(c.detach())
        self.n_averaged.add_(1)


def _is_batch_norm(m: Module) -> bool:
    # local import: the batch-norm family is one of the nn modules; duck typing would also
    # catch user modules that merely have running statistics
    from ..nn.modules import batchnorm
    base = getattr(batchnorm, "_BatchNorm", None)
    return base is not None and isinstance(m, base)


def update_bn(loader: Iterable, model: Module, device: Any = None) -> None:
    """Recompute the running statistics of every batch-norm layer of ``model`` with one pass
    over ``loader`` (cumulative averages: ``momentum=None`` for the pass)."""
    momenta = {}
    for m in model.modules():
        if _is_batch_norm(m):
            m.reset_running_stats()
            momenta[m] = m.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for m in momenta:
        m.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        model(batch)
    for m, momentum in momenta.items():
        m.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's rate to its ``swa_lr`` over ``anneal_epochs`` (cos or linear),
    then hold it."""

    def __init__(self, optimizer: Optimizer, swa_lr: Union[float, List[float]],
                 anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        lrs = list(swa_lr) if isinstance(swa_lr, (list, tuple)) else \
            [swa_lr] * len(optimizer.param_groups)
        if len(lrs) != len(optimizer.param_groups):
            raise ValueError("swa_lr must have the same length as optimizer.param_groups: "
                             f"swa_lr has {len(lrs)}, optimizer.param_groups has "
                             f"{len(optimizer.param_groups)}")
        for lr, group in zip(lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must by one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_strategy = anneal_strategy      # torch's attribute (state_dict)
        self.anneal_func = self._cos_anneal if anneal_strategy == "cos" else \
            self._linear_anneal
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cos_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _start_lr(lr: float, swa_lr: float, alpha: float) -> float:
        """The rate the annealing started from, recovered from the current one."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> List[float]:
        self._warn_get_lr()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        span = max(1, self.anneal_epochs)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / span)))
        alpha = self.anneal_func(max(0, min(1, step / span)))
        groups = self.optimizer.param_groups
        starts = [self._start_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, starts)]

    def state_dict(self) -> dict:
        out = super().state_dict()
        out.pop("anneal_func", None)
        return out
