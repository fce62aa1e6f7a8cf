"""``Module``: the base class of every layer, with PyTorch's registration rules, traversal,
``state_dict``/``load_state_dict``, hooks and ``repr``.

Note [Module attribute rules]
A module keeps its parameters, buffers and submodules in three dicts (``_parameters``,
``_buffers``, ``_modules``), not in ``__dict__``: ``__getattr__`` (called only when normal lookup
fails) finds them there, and ``__setattr__`` routes a ``Parameter`` to ``_parameters``, a
``Module`` to ``_modules``, a ``Buffer`` (or a tensor assigned to an existing buffer name) to
``_buffers``, and removes the name from the other places, as ``torch.nn.Module`` does. The
registration order of these dicts is the order of ``named_parameters``/``state_dict``.

Note [Module backward hooks]
Full backward hooks see the gradients with respect to the module's tensor inputs and outputs.
As in PyTorch, ``__call__`` passes the tensor inputs through an identity custom Function before
``forward`` and the tensor outputs through another after it; a pre-hook on the output identity's
node receives the output gradients (backward pre-hooks run there and may replace them), and a
post-hook on the input identity's node receives the input gradients (the full backward hooks run
there and may replace them). When no input requires grad, the hooks run at the output node with
``None`` input gradients.

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> net = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 1)))
    >>> [name for name, _ in net.named_parameters()]
    ['0.weight', '0.bias', '1.0.weight', '1.0.bias']
    >>> net
    Sequential(
      (0): Linear(in_features=2, out_features=3, bias=True)
      (1): Sequential(
        (0): Linear(in_features=3, out_features=1, bias=True)
      )
    )
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import threading
import warnings
import weakref
from collections import OrderedDict, namedtuple
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Mapping, Optional, SupportsIndex

from ... import _creation, _dtype
from ...ops import _dispatch
from ...autograd import grad_mode
from ...autograd.function import Function
from ...autograd.hooks import HookDict, RemovableHandle
from ...tensor import META_COPY_MSG, Tensor, check_device, typename
from ..parameter import Buffer, Parameter, UninitializedTensorMixin, is_lazy

# Only Module reaches ``ndgrad.nn`` (as in PyTorch); the global hook registrations are
# ``ndgrad.nn.modules.module.register_module_*``.
__all__ = ["Module"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s: str, num_spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * num_spaces + line for line in lines)


# ---------------------------------------------------------------------------- global hooks
_global_buffer_registration_hooks: dict = HookDict()
_global_module_registration_hooks: dict = HookDict()
_global_parameter_registration_hooks: dict = HookDict()
_global_backward_pre_hooks: dict = HookDict()
_global_backward_hooks: dict = HookDict()
_global_is_full_backward_hook: Optional[bool] = None
_global_forward_pre_hooks: dict = HookDict()
_global_forward_hooks: dict = HookDict()
_global_forward_hooks_always_called: dict = {}
_global_forward_hooks_with_kwargs: dict = {}


def _handle(hooks: dict, extra: tuple = ()) -> RemovableHandle:
    h = _ModuleHandle(hooks, extra)
    return h


class _ModuleHandle(RemovableHandle):
    """A handle that also removes its id from the side tables (with_kwargs, always_call)."""

    __slots__ = ("extra",)

    def __init__(self, hooks: dict, extra: tuple = ()) -> None:
        super().__init__(hooks)
        self.extra = extra

    def remove(self) -> None:
        super().remove()
        for d in self.extra:
            d.pop(self.id, None)

    # Picklable (a module pickles with the handles it keeps, e.g. a lazy module's): the hooks
    # dict is pickled with the module and referenced weakly again after loading.
    def __getstate__(self) -> tuple:
        return (self._hooks_ref(), self.id, self.extra)

    def __setstate__(self, state: tuple) -> None:
        hooks, self.id, self.extra = state
        self._hooks_ref = _weakref_or_strong(hooks)


def _weakref_or_strong(obj: Any) -> Any:
    if obj is None:
        return lambda: None
    try:
        return weakref.ref(obj)
    except TypeError:
        return lambda: obj


def _add(hooks: dict, hook: Callable, extra: tuple = (), prepend: bool = False) -> RemovableHandle:
    h = _ModuleHandle(hooks, extra)
    hooks[h.id] = hook
    if prepend:
        items = list(hooks.items())
        hooks.clear()
        hooks[h.id] = hook
        for k, v in items:
            if k != h.id:
                hooks[k] = v
    return h


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """A forward pre-hook run before every module's own (``hook(module, args)``)."""
    return _add(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """A forward hook run before every module's own (``hook(module, args, output)``)."""
    h = _add(_global_forward_hooks, hook,
             (_global_forward_hooks_with_kwargs, _global_forward_hooks_always_called))
    if with_kwargs:
        _global_forward_hooks_with_kwargs[h.id] = True
    if always_call:
        _global_forward_hooks_always_called[h.id] = True
    return h


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """A backward pre-hook for every module (``hook(module, grad_output)``)."""
    return _add(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """A full backward hook for every module (``hook(module, grad_input, grad_output)``)."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = True
    return _add(_global_backward_hooks, hook)


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """The deprecated non-full backward hook, for every module."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = False
    return _add(_global_backward_hooks, hook)


def register_module_buffer_registration_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, name, buffer)`` runs on every ``register_buffer`` and may replace the
    buffer."""
    return _add(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, name, submodule)`` runs on every submodule registration."""
    return _add(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, name, param)`` runs on every ``register_parameter``."""
    return _add(_global_parameter_registration_hooks, hook)


# ---------------------------------------------------------------------------- backward hooks
class BackwardHookFunction(Function):
    """The identity, marking its inputs that do not require grad as non-differentiable (Note
    [Module backward hooks])."""

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        ctx.mark_non_differentiable(*[a for a in args
                                      if isinstance(a, Tensor) and not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        return grads


class _BackwardHook:
    """The module backward hooks of one call (Note [Module backward hooks])."""

    def __init__(self, module: "Module", user_hooks: list, user_pre_hooks: list) -> None:
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs: Any = None
        self.n_outputs = -1
        self.output_tensors_index: Any = None
        self.n_inputs = -1
        self.input_tensors_index: Any = None

    @staticmethod
    def _pack_with_none(indices: list, values: Any, size: int) -> tuple:
        res: list = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def _unpack_none(indices: list, values: Any) -> tuple:
        return tuple(values[idx] for idx in indices)

    def _set_user_hook(self, grad_fn: Any) -> None:
        def hook(grad_input: tuple, _: Any) -> Any:
            if self.grad_outputs is None:
                return None
            res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
            for user_hook in self.user_hooks:
                out = user_hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                       f"got {len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return self._unpack_none(self.input_tensors_index, res)
        grad_fn.register_hook(hook)

    def _apply_on_tensors(self, fn: Callable, args: Any) -> Any:
        is_tuple = True
        if not isinstance(args, tuple):
            args = (args,)
            is_tuple = False
        tensors_idx, tensors = [], []
        requires_grad = False
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors_idx.append(i)
                tensors.append(arg)
                requires_grad |= arg.requires_grad
        if not (requires_grad and grad_mode.is_grad_enabled()):
            return args if is_tuple else args[0], None
        new_tensors = BackwardHookFunction.apply(*tensors)
        if not isinstance(new_tensors, tuple):
            new_tensors = (new_tensors,)
        grad_fns = [t.grad_fn for t in new_tensors
                    if isinstance(t, Tensor) and t.grad_fn is not None]
        if not grad_fns:
            raise RuntimeError("Error while setting up backward hooks. Please open an issue "
                               "with a code sample to reproduce this.")
        fn(grad_fns[0])
        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors):
            arg_list[idx] = val
        res = tuple(arg_list)
        return (res if is_tuple else res[0]), tensors_idx, len(args)

    def setup_input_hook(self, args: Any) -> Any:
        def fn(grad_fn: Any) -> None:
            self._set_user_hook(grad_fn)
        out = self._apply_on_tensors(fn, args)
        if out[1] is None:
            self.n_inputs = len(args) if isinstance(args, tuple) else 1
            self.input_tensors_index = None
            return out[0]
        res, self.input_tensors_index, self.n_inputs = out
        return res

    def setup_output_hook(self, args: Any) -> Any:
        def fn(grad_fn: Any) -> None:
            def hook(grad_output: tuple) -> Any:
                self.grad_outputs = self._pack_with_none(self.output_tensors_index, grad_output,
                                                         self.n_outputs)
                if self.user_pre_hooks:
                    expected = len(self.grad_outputs)
                    for user_pre_hook in self.user_pre_hooks:
                        res = user_pre_hook(self.module, self.grad_outputs)
                        if res is None:
                            continue
                        if len(res) != expected:
                            raise RuntimeError("Backward pre hook returned an invalid number of "
                                               f"grad_output, got {len(res)}, but expected "
                                               f"{expected}")
                        self.grad_outputs = res
                if self.input_tensors_index is None:
                    warnings.warn(
                        "Full backward hook is firing when gradients are computed with respect "
                        "to module outputs since no inputs require gradients. See https://docs."
                        "pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module."
                        "register_full_backward_hook for more details.", stacklevel=5)
                    grad_inputs = self._pack_with_none([], [], self.n_inputs)
                    for user_hook in self.user_hooks:
                        res = user_hook(self.module, grad_inputs, self.grad_outputs)
                        if res is not None and not (isinstance(res, tuple) and
                                                    all(el is None for el in res)):
                            raise RuntimeError(
                                "Backward hook for Modules where no input requires gradient "
                                "should always return None or None for all gradients.")
                    self.grad_outputs = None
                if self.grad_outputs is not None:
                    return self._unpack_none(self.output_tensors_index, self.grad_outputs)
                return None
            grad_fn.register_prehook(hook)

        is_tuple = isinstance(args, tuple)
        out = self._apply_on_tensors(fn, args)
        if out[1] is None:
            return out[0]
        res, self.output_tensors_index, self.n_outputs = out
        return res if is_tuple else res




# ---------------------------------------------------------------------------- Module
class Module:
    """Base class of every neural-network module (``torch.nn.Module``).

    Subclasses call ``super().__init__()`` and assign parameters, buffers and submodules as
    attributes (Note [Module attribute rules]); calling the module runs the forward hooks and
    ``forward``.
    """

    dump_patches: bool = False
    _version: int = 1
    training: bool
    call_super_init: bool = False
    # Set in __init__ with object.__setattr__ (annotations only: no class attributes).
    _parameters: Dict[str, Any]
    _buffers: Dict[str, Any]
    _modules: Dict[str, Any]
    _non_persistent_buffers_set: set
    _is_full_backward_hook: Optional[bool]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        if self.call_super_init is False and bool(args):
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        s = super().__setattr__
        s("training", True)
        s("_parameters", {})
        s("_buffers", {})
        s("_non_persistent_buffers_set", set())
        s("_backward_pre_hooks", HookDict())
        s("_backward_hooks", HookDict())
        s("_is_full_backward_hook", None)
        s("_forward_hooks", HookDict())
        s("_forward_hooks_with_kwargs", {})
        s("_forward_hooks_always_called", {})
        s("_forward_pre_hooks", HookDict())
        s("_forward_pre_hooks_with_kwargs", {})
        s("_state_dict_hooks", HookDict())
        s("_state_dict_pre_hooks", HookDict())
        s("_load_state_dict_pre_hooks", HookDict())
        s("_load_state_dict_post_hooks", HookDict())
        s("_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward: Callable[..., Any]

    def _forward_unimplemented(self, *input: Any) -> None:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    forward = _forward_unimplemented

    # ------------------------------------------------------------------ registration
    def register_buffer(self, name: str, tensor: Optional[Tensor],
                        persistent: bool = True) -> None:
        """Add a buffer (state that is not a parameter, e.g. running statistics); persistent
        buffers are part of ``state_dict``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        for hook in _global_buffer_registration_hooks.values():
            output = hook(self, name, tensor)
            if output is not None:
                tensor = output
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Optional[Parameter]) -> None:
        """Add a parameter (``None`` registers the name without a value)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                f"created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method.")
        for hook in _global_parameter_registration_hooks.values():
            output = hook(self, name, param)
            if output is not None:
                param = output
        self._parameters[name] = param

    def add_module(self, name: str, module: Optional["Module"]) -> None:
        """Add a child module, reachable as the attribute ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        for hook in _global_module_registration_hooks.values():
            output = hook(self, name, module)
            if output is not None:
                module = output
        self._modules[name] = module

    def register_module(self, name: str, module: Optional["Module"]) -> None:
        """Alias of ``add_module``."""
        self.add_module(name, module)

    # ------------------------------------------------------------------ lookup
    def get_submodule(self, target: str) -> "Module":
        """The submodule at the dotted path ``target`` (``''`` is this module)."""
        if target == "":
            return self
        atoms = target.split(".")
        mod = self
        for item in atoms:
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Replace (or with ``strict=False`` add) the submodule at ``target``."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError("`module` is not an nn.Module, found " + str(type(module)))
        if len(atoms) == 1:
            parent = self
        else:
            parent = self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]):
            mod = getattr(parent, atoms[-1])
            if not isinstance(mod, Module):
                raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path ``target``."""
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + param_name + "`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target``."""
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + buffer_name + "`")
        buffer = getattr(mod, buffer_name)
        if buffer_name not in mod._buffers:
            raise AttributeError("`" + buffer_name + "` is not a buffer")
        return buffer

    def get_extra_state(self) -> Any:
        """Extra state for ``state_dict`` (override together with ``set_extra_state``)."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called. Please file an issue at https://github.com/pytorch/"
                           "pytorch/issues/new?template=bug-report.yml to report this bug.")

    def set_extra_state(self, state: Any) -> None:
        """Restore what ``get_extra_state`` returned."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called. Please file an issue at https://github.com/pytorch/"
                           "pytorch/issues/new?template=bug-report.yml to report this bug.")

    # ------------------------------------------------------------------ conversion
    def _apply(self, fn: Callable, recurse: bool = True) -> "Module":
        if recurse:
            for module in self.children():
                module._apply(fn)
        for _key, param in self._parameters.items():
            if param is None:
                continue
            with grad_mode.no_grad():
                param_applied = fn(param)
            # Change the data in place (the Parameter object and its identity are kept, as
            # PyTorch does for tensors of compatible type).
            param._data = param_applied._data
            if param._grad is not None:
                with grad_mode.no_grad():
                    grad_applied = fn(param._grad)
                param._grad._data = grad_applied._data
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call ``fn`` on every submodule (children first) and on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def cuda(self, device: Any = None) -> "Module":
        return self._apply(lambda t: t.cuda(device))

    def cpu(self) -> "Module":
        """Parameters and buffers on the CPU (they already are)."""
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type: Any) -> "Module":
        """Cast every parameter and buffer to ``dst_type``."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self) -> "Module":
        """Cast floating-point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> "Module":
        """Cast floating-point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> "Module":
        """Cast floating-point parameters and buffers to float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> "Module":
        """Cast floating-point parameters and buffers to bfloat16."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def to_empty(self, *, device: Any, recurse: bool = True) -> "Module":
        """Parameters and buffers replaced by uninitialized tensors of the same shapes on
        ``device`` (a meta module made real: ``reset_parameters()`` then initializes them).

        >>> import ndgrad
        >>> m = ndgrad.nn.Linear(3, 2, device="meta").to_empty(device="cpu")
        >>> m.weight.device, m.weight.shape
        (device(type='cpu'), ndgrad.Size([2, 3]))
        """
        return self._apply(lambda t: _creation.empty_like(t, device=device), recurse=recurse)

    def to(self, *args: Any, **kwargs: Any) -> "Module":
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(tensor)``: casts floating
        (and complex) parameters and buffers to ``dtype``; devices other than the CPU raise as
        ``Tensor.to`` does."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() received an invalid combination of arguments - got "
                            f"unexpected keyword {next(iter(kwargs))!r}")
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, _dtype.dtype):
                dtype = a
            elif isinstance(a, bool):
                continue
            else:
                device = a
        if device is not None:
            device = check_device(device)
        if dtype is not None:
            dtype = _dtype.to_dtype(dtype)
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError("nn.Module.to only accepts floating point or complex dtypes, "
                                f"but got desired dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            if device is not None and t.device.type != device.type:
                try:        # to the meta device, or torch's error out of it (Note [Meta arrays])
                    t = t.to(device)
                except NotImplementedError as e:
                    if str(e) == META_COPY_MSG:
                        raise NotImplementedError(
                            f"{e} Please use ndgrad.nn.Module.to_empty() instead of "
                            "ndgrad.nn.Module.to() when moving module from meta to a different "
                            "device.") from None
                    raise
            if dtype is not None and (t.is_floating_point() or t.is_complex()):
                return t.to(dtype)
            return t
        return self._apply(convert)

    def share_memory(self) -> "Module":
        """Move the parameters, their gradients and the buffers into shared memory
        (``Tensor.share_memory_``), so processes started from here work on the same ones."""
        return self._apply(lambda t: t.share_memory_())

    # ------------------------------------------------------------------ hooks
    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` (or ``hook(module, args, kwargs)``) runs before ``forward``
        and may return new args (or ``(args, kwargs)``)."""
        h = _add(self._forward_pre_hooks, hook, (self._forward_pre_hooks_with_kwargs,),
                 prepend)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[h.id] = True
        return h

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)``) runs
        after ``forward`` and may return a new output."""
        h = _add(self._forward_hooks, hook,
                 (self._forward_hooks_with_kwargs, self._forward_hooks_always_called), prepend)
        if with_kwargs:
            self._forward_hooks_with_kwargs[h.id] = True
        if always_call:
            self._forward_hooks_always_called[h.id] = True
        return h

    def register_full_backward_pre_hook(self, hook: Callable,
                                        prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_output)`` runs when the output gradients are computed and may
        return new ones (Note [Module backward hooks])."""
        return _add(self._backward_pre_hooks, hook, (), prepend)

    def register_full_backward_hook(self, hook: Callable,
                                    prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs when the gradients with respect to
        the module's inputs are computed and may return new ones."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        self._is_full_backward_hook = True
        return _add(self._backward_hooks, hook, (), prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """The deprecated non-full backward hook: runs as a post-hook of the output's
        ``grad_fn``."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        self._is_full_backward_hook = False
        return _add(self._backward_hooks, hook)

    def _get_backward_hooks(self) -> tuple:
        full: list = []
        non_full: list = []
        if _global_is_full_backward_hook is True:
            full += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full += self._backward_hooks.values()
        if _global_is_full_backward_hook is False:
            non_full += _global_backward_hooks.values()
        if self._is_full_backward_hook is False:
            non_full += self._backward_hooks.values()
        return full, non_full

    def _get_backward_pre_hooks(self) -> list:
        return [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` runs before ``state_dict`` saves this module."""
        return _add(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` runs after ``state_dict``
        (must return None)."""
        hook._from_public_api = True  # type: ignore[attr-defined]
        return _add(self._state_dict_hooks, hook)

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        return _add(self._state_dict_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` runs before this module loads its part."""
        return _add(self._load_state_dict_pre_hooks, functools.partial(hook, self))

    def _register_load_state_dict_pre_hook(self, hook: Callable,
                                           with_module: bool = False) -> RemovableHandle:
        return _add(self._load_state_dict_pre_hooks,
                    functools.partial(hook, self) if with_module else hook)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` runs after ``load_state_dict`` loaded this
        module (may edit the key lists in place)."""
        return _add(self._load_state_dict_post_hooks, hook)

    # ------------------------------------------------------------------ call
    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        if _dispatch._TRACING:              # Note [Compiled modules and training flags]
            note_traced_call(self)
        forward_call = self.forward
        if not (self._backward_hooks or self._backward_pre_hooks or self._forward_hooks
                or self._forward_pre_hooks or _global_backward_pre_hooks
                or _global_backward_hooks or _global_forward_hooks
                or _global_forward_pre_hooks):
            return forward_call(*args, **kwargs)

        result = None
        called_always = set()

        def inner() -> Any:
            nonlocal result, args, kwargs
            full_backward_hooks, non_full_backward_hooks = [], []
            backward_pre_hooks: list = []
            if self._backward_pre_hooks or _global_backward_pre_hooks:
                backward_pre_hooks = self._get_backward_pre_hooks()
            if self._backward_hooks or _global_backward_hooks:
                full_backward_hooks, non_full_backward_hooks = self._get_backward_hooks()
            if _global_forward_pre_hooks or self._forward_pre_hooks:
                for hook_id, hook in (*_global_forward_pre_hooks.items(),
                                      *self._forward_pre_hooks.items()):
                    if hook_id in self._forward_pre_hooks_with_kwargs:
                        out = hook(self, args, kwargs)
                        if out is not None:
                            if isinstance(out, tuple) and len(out) == 2:
                                args, kwargs = out
                            else:
                                raise RuntimeError(
                                    "forward pre-hook must return None or a tuple of "
                                    f"(new_args, new_kwargs), but got {out}.")
                    else:
                        out = hook(self, args)
                        if out is not None:
                            if not isinstance(out, tuple):
                                out = (out,)
                            args = out
            bw_hook = None
            if full_backward_hooks or backward_pre_hooks:
                bw_hook = _BackwardHook(self, full_backward_hooks, backward_pre_hooks)
                args = bw_hook.setup_input_hook(args)
            result = forward_call(*args, **kwargs)
            if _global_forward_hooks or self._forward_hooks:
                for hook_id, hook in (*_global_forward_hooks.items(),
                                      *self._forward_hooks.items()):
                    if hook_id in self._forward_hooks_always_called or \
                            hook_id in _global_forward_hooks_always_called:
                        called_always.add(hook_id)
                    if hook_id in self._forward_hooks_with_kwargs or \
                            hook_id in _global_forward_hooks_with_kwargs:
                        hook_result = hook(self, args, kwargs, result)
                    else:
                        hook_result = hook(self, args, result)
                    if hook_result is not None:
                        result = hook_result
            if bw_hook:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a "
                                  f"Tensor or a tuple of Tensors but received {type(result)}",
                                  stacklevel=2)
                result = bw_hook.setup_output_hook(result)
            if non_full_backward_hooks:
                var = result
                while not isinstance(var, Tensor):
                    if isinstance(var, dict):
                        var = next(v for v in var.values() if isinstance(v, Tensor))
                    else:
                        var = var[0]
                grad_fn = var.grad_fn
                if grad_fn is not None:
                    for hook in non_full_backward_hooks:
                        grad_fn.register_hook(functools.partial(_wrapped_hook, hook, self))
            return result

        try:
            return inner()
        except Exception:
            for hook_id, hook in _global_forward_hooks.items():
                if hook_id in _global_forward_hooks_always_called and \
                        hook_id not in called_always:
                    try:
                        hook_result = hook(self, args, result)
                        if hook_result is not None:
                            result = hook_result
                    except Exception as e:
                        warnings.warn("global module forward hook with ``always_call=True`` "
                                      "raised an exception that was silenced as another error "
                                      f"was raised in forward: {str(e)}", stacklevel=2)
            for hook_id, hook in self._forward_hooks.items():
                if hook_id in self._forward_hooks_always_called and \
                        hook_id not in called_always:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            hook_result = hook(self, args, kwargs, result)
                        else:
                            hook_result = hook(self, args, result)
                        if hook_result is not None:
                            result = hook_result
                    except Exception as e:
                        warnings.warn("module forward hook with ``always_call=True`` raised an "
                                      "exception that was silenced as another error was raised "
                                      f"in forward: {str(e)}", stacklevel=2)
            raise

    def _wrapped_call_impl(self, *args: Any, **kwargs: Any) -> Any:
        compiled = self.__dict__.get("_compiled_call_impl")
        if compiled is not None:                   # installed by compile()
            return compiled(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    __call__: Callable[..., Any] = _wrapped_call_impl

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict:
        return self.__dict__

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name, default in (("_forward_pre_hooks", HookDict), ("_forward_hooks", HookDict),
                              ("_forward_hooks_with_kwargs", dict),
                              ("_forward_hooks_always_called", dict),
                              ("_forward_pre_hooks_with_kwargs", dict),
                              ("_state_dict_hooks", HookDict), ("_state_dict_pre_hooks", HookDict),
                              ("_load_state_dict_pre_hooks", HookDict),
                              ("_load_state_dict_post_hooks", HookDict),
                              ("_non_persistent_buffers_set", set),
                              ("_is_full_backward_hook", lambda: None),
                              ("_backward_pre_hooks", HookDict), ("_backward_hooks", HookDict)):
            if name not in self.__dict__:
                self.__dict__[name] = default()

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        # HookDicts pickle as dicts; rebuild them so handles can reference them weakly.
        return object.__reduce_ex__(self, protocol)

    # ------------------------------------------------------------------ attributes
    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        if "_parameters" in d:
            p = d["_parameters"]
            if name in p:
                return p[name]
        if "_buffers" in d:
            b = d["_buffers"]
            if name in b:
                return b[name]
        if "_modules" in d:
            m = d["_modules"]
            if name in m:
                return m[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__

        def remove_from(*dicts_or_sets: Any) -> None:
            for ds in dicts_or_sets:
                if name in ds:
                    if isinstance(ds, dict):
                        del ds[name]
                    else:
                        ds.discard(name)

        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = d.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(d, self._parameters, self._buffers, self._non_persistent_buffers_set)
                for hook in _global_module_registration_hooks.values():
                    output = hook(self, name, value)
                    if output is not None:
                        value = output
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{typename(value)}' as child module "
                                    f"'{name}' (torch.nn.Module or None expected)")
                for hook in _global_module_registration_hooks.values():
                    output = hook(self, name, value)
                    if output is not None:
                        value = output
                modules[name] = value
            else:
                buffers = d.get("_buffers")
                if isinstance(value, Buffer) or buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{typename(value)}' as buffer '{name}' "
                                        "(torch.nn.Buffer, torch.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    if buffers is None:
                        raise AttributeError("cannot assign buffer before Module.__init__() "
                                             "call")
                    self.register_buffer(name, value, persistent)
                else:
                    if name != "training":      # Note [Guarded module attributes]
                        d["_attr_version"] = d.get("_attr_version", 0) + 1
                    object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            d = self.__dict__
            d["_attr_version"] = d.get("_attr_version", 0) + 1
            object.__delattr__(self, name)

    def __dir__(self) -> list:
        module_attrs = dir(self.__class__)
        attrs = list(self.__dict__.keys())
        parameters = list(self._parameters.keys())
        modules = list(self._modules.keys())
        buffers = list(self._buffers.keys())
        keys = module_attrs + attrs + parameters + modules + buffers
        keys = [key for key in keys if not key[0].isdigit()]
        return sorted(keys)

    # ------------------------------------------------------------------ state_dict
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if getattr(self.__class__, "get_extra_state", Module.get_extra_state) is not \
                Module.get_extra_state:
            destination[extra_state_key] = self.get_extra_state()

    def state_dict(self, *args: Any, destination: Any = None, prefix: str = "",
                   keep_vars: bool = False) -> dict:
        """The parameters and persistent buffers of the module tree in registration order,
        keyed by dotted name (detached unless ``keep_vars``), with a ``_metadata`` attribute
        holding each module's version."""
        if len(args) > 0:
            warnings.warn(
                "Positional args are being deprecated, use kwargs instead. Refer to "
                "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module."
                "state_dict for details.", FutureWarning, stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            hook_result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if hook_result is not None:
                    destination = hook_result
            elif hook_result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        persistent_buffers = {k: v for k, v in self._buffers.items()
                              if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(),
                                                        persistent_buffers.items())
                       if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  "torch.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(input_param)}")
                continue
            lazy = is_lazy(param)
            if not lazy and param._data.ndim == 0 and input_param._data.shape == (1,):
                input_param = input_param[0]
            if not lazy and input_param.shape != param.shape:
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {input_param.shape} "
                    f"from checkpoint, the shape in current model is {param.shape}.")
                continue
            if not lazy and not assign and param.is_meta and not input_param.is_meta:
                warnings.warn(f"for {key}: copying from a non-meta parameter in the checkpoint "
                              "to a meta parameter in the current model, which is a no-op. "
                              "(Did you mean to pass `assign=True` to assign items in the state "
                              "dictionary to their corresponding key in the module instead of "
                              "copying them in place?)", UserWarning, stacklevel=2)
            try:
                with grad_mode.no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            if not isinstance(input_param, Parameter):
                                input_param = Parameter(input_param,
                                                        requires_grad=param.requires_grad)
                            else:
                                input_param.requires_grad_(param.requires_grad)
                        setattr(self, name, input_param)
                    else:
                        param.copy_(input_param)
            except Exception as ex:
                error_msgs.append(
                    f'While copying the parameter named "{key}", whose dimensions in the model '
                    f"are {param.size()} and whose dimensions in the checkpoint are "
                    f"{input_param.size()}, an exception occurred : {ex.args}.")
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if getattr(self.__class__, "set_extra_state", Module.set_extra_state) is not \
                Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy ``state_dict``'s tensors into the parameters and persistent buffers (or, with
        ``assign=True``, make them the module's tensors). With ``strict``, missing and
        unexpected keys are errors; shape mismatches always are. On an error nothing is
        changed (PyTorch leaves the tensors loaded before the error); the message is
        PyTorch's."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list = []
        unexpected_keys: list = []
        error_msgs: list = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata  # type: ignore[attr-defined]
        snapshot = self._snapshot()

        def load(module: Module, local_state_dict: dict, prefix: str = "") -> None:
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                         missing_keys, unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state_dict = {k: v for k, v in local_state_dict.items()
                                        if k.startswith(child_prefix)}
                    load(child, child_state_dict, child_prefix)
            incompatible_keys = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                out = hook(module, incompatible_keys)
                if out is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be "
                        "modified, it should be done inplace.")

        try:
            load(self, state_dict)
        except BaseException:
            self._restore(snapshot)
            raise
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            self._restore(snapshot)
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    def _snapshot(self) -> list:
        """What ``load_state_dict`` may change, to undo it on an error."""
        snap = []
        for m in self.modules():
            tensors = [(t, t._data.copy(), t._version_counter[0] if t._version_counter else None)
                       for t in itertools.chain(m._parameters.values(), m._buffers.values())
                       if t is not None and not is_lazy(t)]
            snap.append((m, dict(m._parameters), dict(m._buffers), dict(m.__dict__), tensors))
        return snap

    @staticmethod
    def _restore(snapshot: list) -> None:
        for m, params, bufs, attrs, tensors in snapshot:
            m._parameters.clear()
            m._parameters.update(params)
            m._buffers.clear()
            m._buffers.update(bufs)
            for k in [k for k in m.__dict__ if k not in attrs]:
                del m.__dict__[k]
            m.__dict__.update(attrs)
            for t, data, _ in tensors:
                if t._data.shape == data.shape and t._data.dtype == data.dtype:
                    t._data[...] = data
                else:
                    t._data = data

    # ------------------------------------------------------------------ traversal
    def _named_members(self, get_members_fn: Callable, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True) -> Iterator:
        memo: set = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            members = get_members_fn(module)
            for k, v in members:
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                name = module_prefix + ("." if module_prefix else "") + k
                yield name, v

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of this module (and, with ``recurse``, its submodules), each once."""
        for _name, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator:
        """``(dotted name, parameter)`` pairs in registration order."""
        yield from self._named_members(lambda module: module._parameters.items(),
                                       prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers of this module (and, with ``recurse``, its submodules)."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator:
        """``(dotted name, buffer)`` pairs in registration order."""
        yield from self._named_members(lambda module: module._buffers.items(),
                                       prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def children(self) -> Iterator["Module"]:
        """The immediate submodules."""
        for _name, module in self.named_children():
            yield module

    def named_children(self) -> Iterator:
        """``(name, submodule)`` for the immediate submodules, each once."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self) -> Iterator["Module"]:
        """This module and every submodule, depth first, each once."""
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo: Optional[set] = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator:
        """``(dotted name, module)`` for this module and every submodule, depth first."""
        if memo is None:
            memo = set()
        if self not in memo:
            if remove_duplicate:
                memo.add(self)
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                submodule_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    # ------------------------------------------------------------------ modes
    def train(self, mode: bool = True) -> "Module":
        """Set training mode (``mode=False`` is evaluation mode) on the module tree."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Set ``requires_grad`` on every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter (to None by default, else to zeros)."""
        for p in self.parameters():
            if p._grad is not None:
                if set_to_none:
                    p._grad = None
                else:
                    g = p._grad
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    # ------------------------------------------------------------------ repr
    def _get_name(self) -> str:
        return self.__class__.__name__

    def extra_repr(self) -> str:
        """The module's own settings, shown inside its ``repr`` (override in layers)."""
        return ""

    def __repr__(self) -> str:
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"

    def _replicate_for_data_parallel(self) -> "Module":
        replica = self.__new__(type(self))
        replica.__dict__ = self.__dict__.copy()
        replica._parameters = dict()
        replica._buffers = replica._buffers.copy()
        replica._modules = replica._modules.copy()
        return replica

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Compile this module's calls in place: later calls run ``ndgrad.compile(...,
        *args, **kwargs)`` of its call (hooks included), one specialization per kind of input
        and per tuple of the submodules' ``training`` flags (Note [Compiled modules and
        training flags] in nn/compiled.py), as torch's ``Module.compile``.

        >>> import ndgrad
        >>> m = ndgrad.nn.Linear(2, 1)
        >>> m.compile()
        >>> m(ndgrad.ones(3, 2)).shape
        ndgrad.Size([3, 1])
        """
        from ..compiled import LazyCompiledCall  # local import: nn/compiled.py subclasses Module
        if args:
            raise TypeError("Module.compile() takes ndgrad.compile's options as keywords")
        self.__dict__["_compiled_call_impl"] = LazyCompiledCall(self, self._call_impl, kwargs)


_called = threading.local()

# Note [Guarded module attributes]: a compiled graph holds the values its modules read while
# tracing (Dropout's ``p``, BatchNorm's ``momentum`` and ``eps``, a user's ``scale`` or a tensor
# kept as a plain attribute). Assigning or deleting a plain attribute (not ``training``: that
# flag is guarded by itself) bumps the module's ``_attr_version``, and a specialization is valid
# only while the versions of the modules it called are the trace's (``_Specialization.flags_ok``
# in jit/api.py): after ``m.p = 0.2`` the next call traces again. An assignment made by the
# traced call itself (``self.calls += 1``, an attention map kept for plotting, a lazy module's
# first call) is a side effect the generated code would not repeat: that call returns its
# traced (eager) run's result and nothing is cached, so the next call traces again; a function
# that does it on every call then runs eagerly (``CompiledFunction._specialize``). Not seen: a
# change made without assignment (a list attribute appended to, ``__dict__`` written directly).


def note_traced_call(module: "Module") -> None:
    """Record a call of ``module``, with its attribute version (Note [Guarded module
    attributes]), for ``recording_module_calls`` (while a trace records)."""
    seen = _called.__dict__.get("seen")
    if seen is not None:
        seen.append((module, module.__dict__.get("_attr_version", 0)))


@contextlib.contextmanager
def recording_module_calls() -> Iterator[list]:
    """The modules called (in order, with repeats, each with its attribute version when
    called) while a trace records in this thread: a
    compiled function's specialization is only valid for their ``training`` flags (Note
    [Compiled modules and training flags] in nn/compiled.py)."""
    old = _called.__dict__.get("seen")
    seen: list = []
    _called.seen = seen
    try:
        yield seen
    finally:
        _called.seen = old


def _wrapped_hook(hook: Callable, module: Module, grad_inputs: tuple, grad_outputs: tuple) -> Any:
    return hook(module, grad_inputs, grad_outputs)


# UninitializedTensorMixin is re-exported for the lazy modules.
_ = UninitializedTensorMixin


# ---------------------------------------------------------------------------- lazy modules
class LazyModuleMixin:
    """Mixin of the lazy modules (``LazyLinear``, ``LazyConv2d`` ...), as
    ``torch.nn.modules.lazy.LazyModuleMixin``: their parameters are ``UninitializedParameter``s
    until the first call, when ``initialize_parameters(*args, **kwargs)`` materializes them
    from the input's shape; the module then becomes ``cls_to_become``. Loading a state_dict into
    an uninitialized module materializes the parameters with the loaded shapes.

    A subclass lists the mixin first: ``class LazyLinear(LazyModuleMixin, Linear)``.
    """

    cls_to_become: Any = None
    if TYPE_CHECKING:   # the Module's, which every subclass also derives from
        _parameters: Dict[str, Any]
        _buffers: Dict[str, Any]
        _non_persistent_buffers_set: set
        _register_load_state_dict_pre_hook: Callable[..., Any]
        register_forward_pre_hook: Callable[..., Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                if not (is_lazy(param) or keep_vars):
                    param = param.detach()
                destination[prefix + name] = param
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                if not (is_lazy(buf) or keep_vars):
                    buf = buf.detach()
                destination[prefix + name] = buf

    def _lazy_load_hook(self, state_dict: dict, prefix: str, local_metadata: dict,
                        strict: bool, missing_keys: list, unexpected_keys: list,
                        error_msgs: list) -> None:
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None:
                input_param = state_dict[key]
                if is_lazy(param) and not is_lazy(input_param):
                    with grad_mode.no_grad():
                        param.materialize(input_param.shape)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Materialize the parameters from the first input (each lazy module defines it)."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer is still uninitialized."""
        for t in itertools.chain(self._parameters.values(), self._buffers.values()):
            if is_lazy(t):
                return True
        return False

    @staticmethod
    def _infer_parameters(module: Any, args: tuple, kwargs: Optional[dict] = None) -> None:
        kwargs = kwargs if kwargs else {}
        module.initialize_parameters(*args, **kwargs)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self) -> Any:
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DataParallel`. Run a dummy forward pass to correctly initialize "
                           "the modules")
