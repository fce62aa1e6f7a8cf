"""Learning-rate schedulers with ``torch.optim.lr_scheduler``'s schedules, state dicts and
warnings.

Each scheduler sets ``group["lr"]`` of its optimizer's parameter groups on ``step()``; the
schedule is written in its recursive form (from the groups' current rates, so schedulers
compose as in torch) and, where torch has one, in closed form (used by ``step(epoch)``).

Example:
    >>> import ndgrad
    >>> w = ndgrad.zeros(1, requires_grad=True)
    >>> opt = ndgrad.optim.SGD([w], lr=1.0)
    >>> sched = ndgrad.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for _ in range(5):
    ...     opt.step()
    ...     sched.step()
    ...     lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [1.0, 0.5, 0.5, 0.25, 0.25]
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
           "LinearLR", "ExponentialLR", "PolynomialLR", "CosineAnnealingLR",
           "CosineAnnealingWarmRestarts", "CyclicLR", "OneCycleLR", "ReduceLROnPlateau",
           "SequentialLR", "ChainedScheduler"]

_EPOCH_DEPRECATED = ("The epoch parameter in `scheduler.step()` was not necessary and is being "
                     "deprecated where possible. Please use `scheduler.step()` to step the "
                     "scheduler. During the deprecation, if epoch is different from None, the "
                     "closed form is used instead of the new chainable form, where available. "
                     "Please open an issue if you are unable to replicate your use case: "
                     "https://github.com/pytorch/pytorch/issues/new/choose.")
_ORDER = ("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 "
          "and later, you should call them in the opposite order: `optimizer.step()` before "
          "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first "
          "value of the learning rate schedule. See more details at "
          "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate")


def _check_optimizer(optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


class LRScheduler:
    """Base class: ``base_lrs`` from each group's ``initial_lr`` (set to its ``lr`` when
    ``last_epoch == -1``), ``step()``, ``get_last_lr()``, ``state_dict()``."""

    _get_lr_called_within_step = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        "resuming scheduler with last_epoch >= 0.\nThis typically happens "
                        "when:\n1. You're trying to resume training from a checkpoint but "
                        "haven't properly loaded the optimizer state\n2. You're using "
                        "last_epoch >= 0 for a fresh training run (not recommended)")
        self.base_lrs: List[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self.optimizer._opt_called = False
        self._is_initial = True         # an attribute torch's state_dict carries too
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> List[float]:
        """The rates of the current epoch (recursive form)."""
        raise NotImplementedError

    def _warn_get_lr(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=3)

    def get_last_lr(self) -> List[float]:
        """The rates the last ``step()`` set."""
        return self._last_lr

    def step(self, epoch: Optional[int] = None) -> None:
        """Advance one epoch (or jump to ``epoch``, deprecated) and set the groups' rates."""
        self._step_count += 1
        if self._step_count == 2 and not self.optimizer._opt_called:
            warnings.warn(_ORDER, UserWarning, stacklevel=2)
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                warnings.warn(_EPOCH_DEPRECATED, UserWarning, stacklevel=2)
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> Dict[str, Any]:
        """Every attribute except the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    def _lrs(self) -> List[float]:
        return [group["lr"] for group in self.optimizer.param_groups]


def _per_group(name: str, optimizer: Optimizer, value: Any) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"Expected {len(optimizer.param_groups)} values for {name}, got "
                             f"{len(value)}")
        return list(value)
    return [value] * len(optimizer.param_groups)


class _LambdaBase(LRScheduler):
    def __init__(self, optimizer: Optimizer, lr_lambda: Any, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> Dict[str, Any]:
        """As the base, with each lambda kept only when it is a callable object (functions
        and lambdas are not saved: ``None``)."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        out["lr_lambdas"] = [None if isinstance(f, types.FunctionType) else dict(f.__dict__)
                             for f in self.lr_lambdas]
        return out

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        state_dict["lr_lambdas"] = lambdas
        for f, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                f.__dict__.update(saved)


class LambdaLR(_LambdaBase):
    """``lr = base_lr * lr_lambda(epoch)`` (one lambda, or one per group)."""

    def get_lr(self) -> List[float]:
        self._warn_get_lr()
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaBase):
    """``lr *= lr_lambda(epoch)`` at every epoch after the first."""

    def get_lr(self) -> List[float]:
        self._warn_get_lr()
        if self.last_epoch > 0:
            return [lr * f(self.last_epoch) for f, lr in zip(self.lr_lambdas, self._lrs())]
        return self._lrs()


class StepLR(LRScheduler):
    """``lr = base_lr * gamma ** (epoch // step_size)``."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        self._warn_get_lr()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]

    def _get_closed_form_lr(self) -> List[float]:
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    """``lr = base_lr * gamma ** (number of milestones reached)``."""

    def __init__(self, optimizer: Optimizer, milestones: Sequence[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        self._warn_get_lr()
        if self.last_epoch not in self.milestones:
            return self._lrs()
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in self._lrs()]

    def _get_closed_form_lr(self) -> List[float]:
        reached = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [b * self.gamma ** reached for b in self.base_lrs]


class ConstantLR(LRScheduler):
    """``lr = base_lr * factor`` for the first ``total_iters`` epochs, then ``base_lr``."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        self._warn_get_lr()
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._lrs()]
        if self.last_epoch != self.total_iters:
            return self._lrs()
        return [lr * (1.0 / self.factor) for lr in self._lrs()]

    def _get_closed_form_lr(self) -> List[float]:
        f = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [b * f for b in self.base_lrs]


class LinearLR(LRScheduler):
    """The factor on ``base_lr`` goes linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` epochs."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and "
                             "less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        self._warn_get_lr()
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._lrs()]
        if self.last_epoch > self.total_iters:
            return self._lrs()
        span = self.end_factor - self.start_factor
        ratio = 1.0 + span / (self.total_iters * self.start_factor
                              + (self.last_epoch - 1) * span)
        return [lr * ratio for lr in self._lrs()]

    def _get_closed_form_lr(self) -> List[float]:
        frac = min(self.total_iters, self.last_epoch) / self.total_iters
        return [b * (self.start_factor + (self.end_factor - self.start_factor) * frac)
                for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    """``lr = base_lr * gamma ** epoch``."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        self._warn_get_lr()
        if self.last_epoch == 0:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]

    def _get_closed_form_lr(self) -> List[float]:
        return [b * self.gamma ** self.last_epoch for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """``lr = base_lr * (1 - min(epoch, total_iters) / total_iters) ** power``."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        self._warn_get_lr()
        if self.last_epoch == 0 or self.last_epoch > self.total_iters:
            return self._lrs()
        f = ((1.0 - self.last_epoch / self.total_iters)
             / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [lr * f for lr in self._lrs()]

    def _get_closed_form_lr(self) -> List[float]:
        f = (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
        return [b * f for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """``lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2`` (recursively,
    so it composes with other schedulers)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        self._warn_get_lr()
        e, T, lo = self.last_epoch, self.T_max, self.eta_min
        if e == 0:
            return self._lrs()
        if self._step_count == 1 and e > 0:
            return [lo + (b - lo) * (1 + math.cos(e * math.pi / T)) / 2 for b in self.base_lrs]
        if (e - 1 - T) % (2 * T) == 0:
            return [lr + (b - lo) * (1 - math.cos(math.pi / T)) / 2
                    for b, lr in zip(self.base_lrs, self._lrs())]
        return [(1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T))
                * (lr - lo) + lo for lr in self._lrs()]

    def _get_closed_form_lr(self) -> List[float]:
        return [self.eta_min + (b - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for b in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every ``T_i`` epochs (``T_0``, then times ``T_mult``);
    ``step(epoch)`` accepts fractional epochs."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur: float = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        self._warn_get_lr()
        return [self.eta_min + (b - self.eta_min) * (1 + math.cos(math.pi * self.T_cur
                                                                  / self.T_i)) / 2
                for b in self.base_lrs]

    def step(self, epoch: Optional[float] = None) -> None:
        """Advance one epoch, or set the (possibly fractional) ``epoch``."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        # (torch's override counts no steps: _step_count stays 0, and nothing warns about the
        # order of optimizer.step() and this step)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = self._lrs()


def _momentum_groups(optimizer: Optimizer) -> bool:
    """Whether the optimizer cycles ``betas[0]`` (Adam-like) rather than ``momentum``."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                         "option enabled")
    return "betas" in optimizer.defaults


def _set_momentum(group: dict, use_beta1: bool, value: float) -> None:
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


class CyclicLR(LRScheduler):
    """The rate cycles between ``base_lr`` and ``max_lr`` (modes ``triangular``,
    ``triangular2``, ``exp_range`` or a ``scale_fn``), stepped per batch; momentum cycles
    inversely when ``cycle_momentum``."""

    def __init__(self, optimizer: Optimizer, base_lr: Union[float, List[float]],
                 max_lr: Union[float, List[float]], step_size_up: int = 2000,
                 step_size_down: Optional[int] = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Optional[Callable[[float], float]] = None,
                 scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: Union[float, List[float]] = 0.8,
                 max_momentum: Union[float, List[float]] = 0.9, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode if scale_fn is not None else (
            "iterations" if mode == "exp_range" else "cycle")
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _momentum_groups(optimizer)
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for m, group in zip(self.max_momentums, optimizer.param_groups):
                    _set_momentum(group, self.use_beta1, m)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def scale_fn(self, x: float) -> float:
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self) -> List[float]:
        self._warn_get_lr()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        f = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        s = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [b + (m - b) * f * s for b, m in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, bm, mm in zip(self.optimizer.param_groups, self.base_momentums,
                                     self.max_momentums):
                _set_momentum(group, self.use_beta1, mm - (mm - bm) * f * s)
        return lrs

    def state_dict(self) -> Dict[str, Any]:
        """As the base; a custom ``scale_fn`` is kept only as a callable object's attributes
        (a function or lambda is saved as ``None``)."""
        out = super().state_dict()
        fn = out.pop("_scale_fn_custom", None)
        out["_scale_fn_custom"] = None if fn is None or isinstance(fn, types.FunctionType) \
            else dict(fn.__dict__)
        return out

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        custom = state_dict.pop("_scale_fn_custom", None)
        self.__dict__.update(state_dict)
        if custom is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(custom)


class OneCycleLR(LRScheduler):
    """The 1cycle policy: the rate rises from ``max_lr / div_factor`` to ``max_lr`` over
    ``pct_start`` of ``total_steps``, then anneals (cos or linear) to ``initial_lr /
    final_div_factor``; momentum moves inversely."""

    def __init__(self, optimizer: Optimizer, max_lr: Union[float, List[float]],
                 total_steps: Optional[int] = None, epochs: Optional[int] = None,
                 steps_per_epoch: Optional[int] = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: Union[float, List[float]] = 0.85,
                 max_momentum: Union[float, List[float]] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError("Expected positive integer steps_per_epoch, but got "
                                 f"{steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND "
                             "steps_per_epoch)")
        if not 0 <= pct_start <= 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_func_type = anneal_strategy      # torch's attribute names (state_dict)
        n = self.total_steps
        if three_phase:
            phases = [
                (float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum",
                 "base_momentum"),
                (float(2 * pct_start * n) - 2, "max_lr", "initial_lr", "base_momentum",
                 "max_momentum"),
                (n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            phases = [
                (float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum",
                 "base_momentum"),
                (n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        keys = ("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum")
        self._schedule_phases: List[Dict[str, Any]] = [dict(zip(keys, phase))
                                                       for phase in phases]
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for m, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _momentum_groups(optimizer)
            bms = _per_group("base_momentum", optimizer, base_momentum)
            mms = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for mm, bm, group in zip(mms, bms, optimizer.param_groups):
                    _set_momentum(group, self.use_beta1, mm)
                    group["max_momentum"] = mm
                    group["base_momentum"] = bm
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> List[float]:
        self._warn_get_lr()
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps "
                             f"is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end, lr0, lr1, m0, m1 = (phase["end_step"], phase["start_lr"], phase["end_lr"],
                                         phase["start_momentum"], phase["end_momentum"])
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[lr0], group[lr1], pct))
                    if self.cycle_momentum:
                        _set_momentum(group, self.use_beta1,
                                      self._anneal(group[m0], group[m1], pct))
                    break
                start = end
        return lrs


class ReduceLROnPlateau(LRScheduler):
    """Multiply the rates by ``factor`` when ``step(metric)`` has not improved for
    ``patience`` epochs (``mode`` min or max, relative or absolute ``threshold``,
    ``cooldown``, ``min_lr``)."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr: Union[float, List[float]] = 0,
                 eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got "
                                 f"{len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.patience, self.cooldown, self.cooldown_counter = patience, cooldown, 0
        self.mode, self.threshold, self.threshold_mode, self.eps = mode, threshold, \
            threshold_mode, eps
        self.mode_worse = math.inf if mode == "min" else -math.inf     # torch's state_dict key
        self.last_epoch = 0
        self._last_lr = self._lrs()
        self._reset()

    def _reset(self) -> None:
        self.best = math.inf if self.mode == "min" else -math.inf
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def _better(self, a: float) -> bool:
        best, th = self.best, self.threshold
        if self.mode == "min":
            return a < (best * (1.0 - th) if self.threshold_mode == "rel" else best - th)
        return a > (best * (th + 1.0) if self.threshold_mode == "rel" else best + th)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def step(self, metrics: Any, epoch: Optional[int] = None) -> None:  # type: ignore[override]
        """Record one epoch's metric and reduce the rates after ``patience`` bad epochs."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(_EPOCH_DEPRECATED, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._better(current):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            if len(self.optimizer.param_groups) != len(self.min_lrs):
                if self.default_min_lr is None:
                    raise RuntimeError("The number of param groups in the `optimizer` "
                                       f"({len(self.optimizer.param_groups)}) differs from when "
                                       "`ReduceLROnPlateau` was initialized "
                                       f"({len(self.min_lrs)}), usually due to a new param group "
                                       "being added to the optimizer. Please modify the "
                                       "`min_lrs` field to match the length of the `optimizer` "
                                       "param groups.")
                self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
            for group, lo in zip(self.optimizer.param_groups, self.min_lrs):
                old = float(group["lr"])
                new = max(old * self.factor, lo)
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._lrs()


class SequentialLR(LRScheduler):
    """Hand over from one scheduler to the next at each of ``milestones``."""

    def __init__(self, optimizer: Optimizer, schedulers: List[LRScheduler],
                 milestones: List[int], last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        for i, s in enumerate(schedulers):
            if not hasattr(s, "optimizer"):
                raise TypeError(f"{name} at index {i} should have `optimizer` as its attribute.")
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(f"{name} does not support `ReduceLROnPlateau` scheduler as it "
                                 "requires additional kwargs to be specified when calling "
                                 f"`step`, but got one at index {i} in the given schedulers "
                                 "sequence.")
            if s.optimizer is not optimizer:
                raise ValueError(f"{name} expects all schedulers to belong to the same "
                                 f"optimizer, but got scheduler {type(s).__name__} at index {i} "
                                 f"has {s.optimizer}, which is different from "
                                 f"{type(optimizer).__name__}.")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be "
                             "one more than the number of milestone points, but got number of "
                             f"schedulers {len(schedulers)} and the number of milestones to be "
                             f"equal to {len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for s in schedulers:
            s.last_epoch -= 1
        schedulers[0]._initial_step()
        self._last_lr = schedulers[0].get_last_lr()

    def step(self) -> None:  # type: ignore[override]
        """Advance one epoch with the scheduler of the current stage."""
        self.last_epoch += 1
        i = bisect_right(self._milestones, self.last_epoch)
        s = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            s.step(0)
        else:
            s.step()
        self._last_lr = s.get_last_lr()

    def state_dict(self) -> Dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        out["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return out

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        saved = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for s, sd in zip(self._schedulers, saved):
            s.load_state_dict(sd)


class ChainedScheduler(LRScheduler):
    """Step several schedulers together, each applying its change to the current rates."""

    def __init__(self, schedulers: Sequence[LRScheduler],
                 optimizer: Optional[Optimizer] = None) -> None:
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler to be "
                             "chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        for i, s in enumerate(schedulers):
            if s.optimizer is not optimizer:
                raise ValueError(f"{type(self).__name__} expects all schedulers to belong to the "
                                 f"same optimizer, but got scheduler {type(s).__name__} at "
                                 f"index {i} has {s.optimizer}, which is different from "
                                 f"{type(optimizer).__name__}.")
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = [g["lr"] for g in self._schedulers[-1].optimizer.param_groups]

    def step(self) -> None:  # type: ignore[override]
        """Step every scheduler."""
        for s in self._schedulers:
            s.step()
        self._last_lr = [g["lr"] for g in self._schedulers[-1].optimizer.param_groups]

    state_dict = SequentialLR.state_dict
    load_state_dict = SequentialLR.load_state_dict


_LRScheduler = LRScheduler
