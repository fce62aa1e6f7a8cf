"""``Optimizer``: parameter groups, per-parameter state, ``state_dict`` in torch's layout, step
hooks; the base of every algorithm in ``ndgrad.optim``.

Note [Optimizer updates]
An update changes each parameter's ndarray in place, outside autograd (as torch's updates run
under ``no_grad``): the arithmetic runs on the ndarrays (``p._data``, ``p.grad._data`` and the
state tensors' ``_data``) with in-place ufuncs, and each parameter's version counter is bumped
once, as one in-place op on it would. The ``.grad`` tensors are read, never replaced, so the
identity rules of AccumulateGrad (seed 000) hold across steps. The state is kept as ndgrad
tensors, so ``state_dict()`` returns tensors like torch's (``step`` a float32 scalar).

Example:
    >>> import ndgrad
    >>> w = ndgrad.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = ndgrad.optim.SGD([w], lr=0.5)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([0., 0.], requires_grad=True)
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections import OrderedDict, defaultdict
from typing import Any, Callable, Dict, Iterable, List, Optional

import numpy as np

from .. import _creation
from .. import _dtype, _write_watch
from ..autograd.grad_mode import enable_grad
from ..autograd.hooks import RemovableHandle
from .._sparse import SparseTensor
from ..tensor import Tensor

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """The default of an argument every parameter group must give (``SGD``'s ``lr`` in older
    torch)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_GLOBAL_PRE_HOOKS: "OrderedDict[int, Callable]" = OrderedDict()
_GLOBAL_POST_HOOKS: "OrderedDict[int, Callable]" = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(optimizer, args, kwargs)`` before every optimizer's ``step``; it may return
    ``(new_args, new_kwargs)``."""
    handle = RemovableHandle(_GLOBAL_PRE_HOOKS)
    _GLOBAL_PRE_HOOKS[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(optimizer, args, kwargs)`` after every optimizer's ``step``."""
    handle = RemovableHandle(_GLOBAL_POST_HOOKS)
    _GLOBAL_POST_HOOKS[handle.id] = hook
    return handle


def _typename(obj: Any) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _with_hooks(step: Callable) -> Callable:
    """``step`` wrapped to run the global and per-optimizer step hooks around it."""

    @functools.wraps(step)
    def wrapper(self: "Optimizer", *args: Any, **kwargs: Any) -> Any:
        for hook in list(_GLOBAL_PRE_HOOKS.values()) + list(self._step_pre_hooks.values()):
            out = hook(self, args, kwargs)
            if out is not None:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("optimizer step pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {out}.")
                args, kwargs = out
        result = step(self, *args, **kwargs)
        self._opt_called = True
        for hook in list(self._step_post_hooks.values()) + list(_GLOBAL_POST_HOOKS.values()):
            hook(self, args, kwargs)
        return result
    fn: Any = wrapper
    fn._hooked = True
    return fn


class Optimizer:
    """Base class of the optimizers: ``Optimizer(params, defaults)``.

    ``params`` is an iterable of tensors or of dicts (parameter groups, each with ``"params"``
    and options overriding ``defaults``). Subclasses implement ``step(closure=None)``.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _with_hooks(step)  # type: ignore[method-assign]  # runs the hooks

    def __init__(self, params: Any, defaults: Dict[str, Any]) -> None:
        self.defaults = defaults
        self._step_pre_hooks: OrderedDict = OrderedDict()
        self._step_post_hooks: OrderedDict = OrderedDict()
        self._state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._state_dict_post_hooks: OrderedDict = OrderedDict()
        self._load_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._load_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._opt_called = False
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {_typename(params)}")
        self.state: Dict[Tensor, Dict[str, Any]] = defaultdict(dict)
        self.param_groups: List[Dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # ------------------------------------------------------------------ groups
    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        """Add a group of parameters (a dict with ``"params"``), e.g. layers unfrozen while
        training; options it omits take the optimizer's defaults."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {_typename(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not self.defaults.get("differentiable", None) and not (
                    p.is_leaf or getattr(p, "retains_grad", False)):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        ids = [id(p) for p in param_group["params"]]
        if len(set(ids)) != len(ids):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if seen & set(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ------------------------------------------------------------------ gradients
    def _init_state(self, state: dict, p: Tensor, group: dict) -> None:
        """Fill ``p``'s empty state before its first step; both step paths (eager and
        ``differentiable=True``) call it. Algorithms with state made elsewhere (at construction,
        or lazily like SGD's momentum buffer) keep this one, which adds nothing."""

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (the default), or to zero in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        raise NotImplementedError

    def _closure_loss(self, closure: Optional[Callable[[], Any]]) -> Any:
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # ------------------------------------------------------------------ hooks
    def _register(self, table: OrderedDict, hook: Callable, prepend: bool = False
                  ) -> RemovableHandle:
        handle = RemovableHandle(table)
        table[handle.id] = hook
        if prepend:
            table.move_to_end(handle.id, last=False)
        return handle

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` before ``step``; may return new (args, kwargs)."""
        return self._register(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` after ``step``."""
        return self._register(self._step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False
                                     ) -> RemovableHandle:
        """``hook(optimizer)`` before ``state_dict`` builds its result."""
        return self._register(self._state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False
                                      ) -> RemovableHandle:
        """``hook(optimizer, state_dict)``, which may return a replacement state dict."""
        return self._register(self._state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False
                                          ) -> RemovableHandle:
        """``hook(optimizer, state_dict)``, which may return a replacement state dict."""
        return self._register(self._load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False
                                           ) -> RemovableHandle:
        """``hook(optimizer)`` after ``load_state_dict``."""
        return self._register(self._load_state_dict_post_hooks, hook, prepend)

    # ------------------------------------------------------------------ state dicts
    def state_dict(self) -> Dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [index, ...]}]}``:
        parameters numbered in group order, as torch numbers them; the state tensors are
        returned by reference."""
        for hook in self._state_dict_pre_hooks.values():
            hook(self)
        index: Dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            ids = []
            for p in group["params"]:
                if id(p) not in index:
                    index[id(p)] = len(index)
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {index[id(p)]: v for p, v in self.state.items() if id(p) in index}
        out = {"state": state, "param_groups": groups}
        for hook in self._state_dict_post_hooks.values():
            res = hook(self, out)
            if res is not None:
                out = res
        return out

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Load a state dict from ``state_dict()`` (this optimizer's or another with the same
        groups); state tensors are cast to their parameter's dtype (``step`` kept), and are the
        given tensors themselves when no cast is needed, as in torch (deep-copy a live
        optimizer's ``state_dict()`` to get an independent copy)."""
        state_dict = dict(state_dict)
        for hook in self._load_state_dict_pre_hooks.values():
            res = hook(self, state_dict)
            if res is not None:
                state_dict = res
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = {old: p for g, s in zip(groups, saved_groups)
                  for old, p in zip(s["params"], g["params"])}
        state: Dict[Tensor, Dict[str, Any]] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                p = id_map[k]
                state[p] = {key: self._cast_state(p, val, key) for key, val in v.items()}
            else:
                state[k] = v            # not a parameter's state: kept as given, as torch
        new_groups = []
        for g, s in zip(groups, saved_groups):
            s["params"] = g["params"]
            new_groups.append(s)
        self.state = state
        self.param_groups = new_groups
        for hook in self._load_state_dict_post_hooks.values():
            hook(self)

    @staticmethod
    def _cast_state(param: Tensor, value: Any, key: Any = None) -> Any:
        # As torch: a state tensor is cast to a floating parameter's dtype, and is the given
        # tensor itself when no cast is needed (``step`` never cast): an optimizer loaded from
        # another's live ``state_dict()`` shares its state tensors until one is copied.
        if isinstance(value, Tensor):
            if key != "step" and param.is_floating_point():
                return value.to(param.dtype)
            return value
        if isinstance(value, dict):
            return {k: Optimizer._cast_state(param, v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(Optimizer._cast_state(param, v) for v in value)
        return value

    # ------------------------------------------------------------------ misc
    def __getstate__(self) -> Dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("_step_pre_hooks", "_step_post_hooks", "_state_dict_pre_hooks",
                     "_state_dict_post_hooks", "_load_state_dict_pre_hooks",
                     "_load_state_dict_post_hooks"):
            self.__dict__.setdefault(name, OrderedDict())
        self.__dict__.setdefault("_opt_called", False)

    def __repr__(self) -> str:
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


# ---------------------------------------------------------------------------- helpers
def params_with_grad(group: Dict[str, Any]) -> Iterable[Any]:
    """The parameters of a group that have a gradient (Tensors whose ``grad`` is not None: a
    fact the type ``Tensor`` cannot carry, hence ``Any``)."""
    params = [p for p in group["params"] if p.grad is not None]
    if _write_watch.watch is not None:                  # Note [Write watchers]
        for p in params:
            _write_watch.watch(p._data)
    return params


def grad_array(p: Tensor, maximize: bool = False, sparse: Optional[str] = None) -> np.ndarray:
    """The gradient of ``p`` as an ndarray (negated for ``maximize``; a new array then).

    A sparse gradient is refused with torch's message for the optimizer named by ``sparse``
    (``"Adam"``); ``sparse=""`` accepts it (SGD, Adagrad), densified: where the gradient has
    no entry the dense update is the zero update torch's sparse path leaves out."""
    g = p.grad
    assert g is not None            # called for the parameters of params_with_grad
    if g.__class__ is SparseTensor:
        if sparse is None or sparse:
            name = sparse or "this optimizer"
            extra = ", please consider SparseAdam instead" if name == "Adam" else ""
            raise RuntimeError(f"{name} does not support sparse gradients{extra}")
        a = g._dense()                 # duplicates add up, as coalescing would
        return -a if maximize else a
    a = real_view(g._data)
    return -a if maximize else a


def real_view(a: np.ndarray) -> np.ndarray:
    """A complex array seen as pairs of reals (a view with a trailing axis of 2, as torch's
    ``view_as_real``); other arrays as they are. Optimizers update complex parameters and their
    state through it, so each of the real and imaginary parts gets its own moments, as torch's
    optimizers do."""
    if a.dtype.kind != "c":
        return a
    return a[..., None].view(a.real.dtype)


def step_tensor(state: Dict[str, Any]) -> float:
    """Increment the state's ``step`` (a scalar tensor, see ``scalar_state``) and return its
    new value as a Python float."""
    t = state["step"]
    t._data += 1
    return float(t._data)


def set_scalar(t: Tensor, value: float, via_scalar_dtype: bool = False) -> float:
    """Store ``value`` in a scalar state tensor; return it as stored (rounded to its dtype).
    ``via_scalar_dtype``: the value is first made a tensor of the scalar-state dtype (float32
    unless float64 is the default), as torch builds it before copying into the state."""
    if via_scalar_dtype:
        d = _dtype.float64 if _dtype.get_default_dtype() is _dtype.float64 else _dtype.float32
        value = float(d.np.type(value))
    t._data[...] = value
    return float(t._data)


def hyper(value: Any) -> float:
    """A hyperparameter as a Python float (torch accepts a 0-d tensor ``lr``)."""
    return float(value.item()) if isinstance(value, Tensor) else float(value)


def check_flags(defaults: Dict[str, Any]) -> None:
    """``foreach``, ``fused`` and ``capturable`` are accepted (one CPU code path serves them);
    ``differentiable=True`` selects the recorded path (Note [Differentiable optimizer steps]),
    which ``fused`` refuses as torch does."""
    if defaults.get("differentiable") and defaults.get("fused"):
        raise RuntimeError("`fused` does not support `differentiable`")


def zeros_state(p: Tensor) -> Tensor:
    """A zero state tensor shaped and typed like ``p``."""
    return _creation.zeros_like(p.detach())


def scalar_state(value: float) -> Tensor:
    """A scalar state tensor (``step``, ``eta``, ``mu``): float64 when that is the default
    dtype, else float32, as torch keeps them; updates read it back rounded to that dtype."""
    d = _dtype.float64 if _dtype.get_default_dtype() is _dtype.float64 else _dtype.float32
    return _creation.tensor(value, dtype=d)


def bump(p: Tensor) -> None:
    """Record one in-place update of ``p`` (Note [Optimizer updates])."""
    p._bump_version()


def weight_decay(d: np.ndarray, g: np.ndarray, lr: float, wd: float, decoupled: bool
                 ) -> np.ndarray:
    """Apply weight decay: decoupled (AdamW's ``p *= 1 - lr * wd``, in place) or as L2 (``g +
    wd * p``, returned); the gradient to use is returned either way."""
    if wd == 0:
        return g
    if decoupled:
        np.multiply(d, 1 - lr * wd, out=d)
        return g
    return g + wd * d


def _fma(x: Any, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``x * y + z`` rounded once (a fused multiply-add), for float64 arrays: the product's
    rounding error (Dekker's split) and the sum's (Knuth's two-sum) are added back before the
    final rounding."""
    split = 134217729.0                          # 2**27 + 1
    x = np.broadcast_to(np.asarray(x, dtype=np.float64), y.shape)
    p = x * y
    cx, cy = split * x, split * y
    xh, yh = cx - (cx - x), cy - (cy - y)
    xl, yl = x - xh, y - yh
    e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
    s = p + z
    bb = s - p
    t = (p - (s - bb)) + (z - bb)
    return s + (t + e)


def lerp_(a: np.ndarray, end: np.ndarray, weight: float) -> None:
    """``a = lerp(a, end, weight)`` in place, rounded as torch's CPU kernel, one fused
    multiply-add: ``a + w (end - a)`` for ``|w| < 0.5``, else ``end - (end - a)(1 - w)``
    (another dtype takes the weight in its own precision first, as torch does, and the
    product-sum in float64, rounded once)."""
    diff = end - a
    if a.dtype == np.float64:
        r = _fma(weight, diff, a) if abs(weight) < 0.5 else _fma(-(1 - weight), diff, end)
    else:
        w = a.dtype.type(weight)
        d = diff.astype(np.float64)
        if abs(weight) < 0.5:
            r = a.astype(np.float64) + np.float64(w) * d
        else:
            r = end.astype(np.float64) - d * np.float64(a.dtype.type(1) - w)
    a[...] = r


def adam_moments(m: np.ndarray, v: np.ndarray, g: np.ndarray, beta1: float, beta2: float
                 ) -> None:
    """Adam's moment updates in place: ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 v + (1 -
    beta2) |g|^2``."""
    m += (g - m) * (1 - beta1)
    np.multiply(v, beta2, out=v)
    v += (1 - beta2) * (g * g)


def check_nonneg(what: str, value: Any) -> None:
    """torch's ``ValueError("Invalid <what>: <value>")`` for a negative hyperparameter."""
    v = value.item() if isinstance(value, Tensor) else value
    if not 0.0 <= v:
        raise ValueError(f"Invalid {what}: {value}")


def check_betas(betas: Any) -> None:
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")

