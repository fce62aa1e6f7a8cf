"""``GradScaler``: dynamic loss scaling for mixed-precision training, as ``torch.amp.GradScaler``.

``scale(loss)`` multiplies by the current scale; ``unscale_(optimizer)`` divides the
optimizer's gradients by it in place and records whether any is inf or NaN; ``step(optimizer)``
unscales if needed and steps only when every gradient was finite; ``update()`` halves the scale
after an overflow (``backoff_factor``) and doubles it after ``growth_interval`` clean steps
(``growth_factor``). A disabled scaler (``enabled=False``, or device ``"cuda"`` here, which
warns) passes everything through, so ``scaler.scale(loss).backward(); scaler.step(opt);
scaler.update()`` is the plain training step.

Example:
    >>> import ndgrad
    >>> w = ndgrad.ones(2, requires_grad=True)
    >>> opt = ndgrad.optim.SGD([w], lr=0.1)
    >>> scaler = ndgrad.amp.GradScaler("cpu", init_scale=4.0)
    >>> scaler.scale((w * 3).sum()).backward(); w.grad
    tensor([12., 12.])
    >>> scaler.step(opt); scaler.update(); w.grad, scaler.get_scale()
    (tensor([3., 3.]), 4.0)
"""

from __future__ import annotations

import warnings
from enum import Enum
from typing import Any, Optional

import numpy as np

from .. import _dtype
from .._creation import full
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor, device

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state() -> dict:
    return {"stage": OptState.READY, "found_inf": None}


class GradScaler:
    """Loss scaling for mixed precision (see the module docstring)."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = _device_type(device)
        self._enabled = bool(enabled)
        if self._enabled and self._device == "cuda":
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if not backoff_factor < 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = float(init_scale)
        self._scale: Optional[Tensor] = None
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._init_growth_tracker = 0
        self._growth_tracker: Optional[Tensor] = None
        self._per_optimizer_states: dict = {}

    # ---- scaling
    def _lazy_init(self) -> None:
        self._scale = full((), self._init_scale, dtype=_dtype.float32)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=_dtype.int32)

    def _check_scale(self, what: str) -> None:
        if self._scale is None:
            raise AssertionError(f"Attempted {what} but _scale is None.  This may indicate your "
                                 "script did not use scaler.scale(loss or outputs) earlier in "
                                 "the iteration.")

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or nested lists/tuples of them) times the current scale."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._lazy_init()
        scale = self._scale

        def apply(v: Any) -> Any:
            if isinstance(v, Tensor):
                return v * scale
            if isinstance(v, (list, tuple)):
                return type(v)(apply(x) for x in v)
            if hasattr(v, "__iter__") and not isinstance(v, (str, bytes, dict)):
                return map(apply, v)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply(outputs)

    def _grads(self, optimizer: Any) -> list:
        out = []
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    out.append(p)
        return out

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale in place, once per step, recording
        whether any gradient is inf or NaN."""
        if not self._enabled:
            return
        self._check_scale("unscale_")
        assert self._scale is not None
        state = self._per_optimizer_states.setdefault(id(optimizer), _fresh_state())
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv = np.float32(np.reciprocal(np.float64(self._scale._data)))
        found = False
        with no_grad():
            for p in self._grads(optimizer):
                g = p.grad
                if g.dtype == _dtype.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                if g.is_sparse:
                    g = g.coalesce()
                    p.grad = g
                    vals = g._values()
                else:
                    vals = g
                data = vals._data
                if not np.isfinite(data).all():
                    found = True
                vals.mul_(float(inv))
        state["found_inf"] = found
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale (if not yet done) and run ``optimizer.step(*args, **kwargs)`` unless a gradient
        was inf or NaN; returns what the step returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale("step")
        state = self._per_optimizer_states.setdefault(id(optimizer), _fresh_state())
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if state["found_inf"] is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale: Optional[Any] = None) -> None:
        """Adjust the scale for the next iteration: set to ``new_scale`` when given, else back
        off after an overflow in any optimizer's gradients or grow after ``growth_interval``
        clean steps."""
        if not self._enabled:
            return
        self._check_scale("update")
        assert self._scale is not None and self._growth_tracker is not None
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                if not (isinstance(new_scale, Tensor) and new_scale.numel() == 1
                        and new_scale.dtype == _dtype.float32 and not new_scale.requires_grad):
                    raise AssertionError("new_scale should be a float or a 1-element "
                                         "torch.FloatTensor with requires_grad=False.")
                self._scale.copy_(new_scale.reshape(()))
        else:
            found = [s["found_inf"] for s in self._per_optimizer_states.values()
                     if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            scale = float(self._scale._data)
            tracker = int(self._growth_tracker._data)
            if any(found):
                scale *= self._backoff_factor
                tracker = 0
            else:
                tracker += 1
                if tracker == self._growth_interval:
                    grown = np.float32(scale * self._growth_factor)
                    if np.isfinite(grown):
                        scale = float(grown)
                    tracker = 0
            self._scale.fill_(float(np.float32(scale)))
            self._growth_tracker.fill_(tracker)
        self._per_optimizer_states = {}

    # ---- settings and state
    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale._data)

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return int(self._growth_tracker._data)

    def is_enabled(self) -> bool:
        """Whether the scaler scales (False when constructed disabled or for CUDA here)."""
        return self._enabled

    def state_dict(self) -> dict:
        """The scale, the factors, the interval and the growth tracker (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a :meth:`state_dict`."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)


def _device_type(d: Any) -> str:
    return device(d).type
