"""``ndgrad.library``: torch.library for ndgrad: operators written in Python that behave like
built-in ones (checked arguments, autograd formulas, fake kernels for meta tensors), reachable
as ``ndgrad.ops.<namespace>.<name>`` like ``torch.ops``.

Two APIs, as in torch:

- ``custom_op("ns::name", mutates_args=..., device_types=None, schema=None)`` wraps a typed
  Python function (its schema inferred from the hints, ``infer_schema``) into a
  ``CustomOpDef``; ``register_fake``, ``register_autograd(backward, setup_context=...)``,
  ``register_kernel`` and ``opcheck`` complete it. The kernel runs below autograd (nothing
  inside it is recorded); with inputs that require grad the result gets a
  ``GeneratedBackwardFor_<ns>_<name>_default`` node that runs the registered ``backward``, or
  raises torch's "no autograd formula was registered" error on backward when there is none.
- ``Library("ns", "DEF" | "IMPL" | "FRAGMENT")`` with ``define(schema)`` and
  ``impl(name, fn, dispatch_key)``: kernels per dispatch key (``CPU``, ``Meta``,
  ``CompositeImplicitAutograd``, ``CompositeExplicitAutograd``, ``Autograd``); a ``CPU`` kernel
  written with ndgrad ops is differentiable through those ops, as under torch's autograd
  fallback.

Example:
    >>> import ndgrad, numpy as np
    >>> @ndgrad.library.custom_op("libdoc::numpy_sin", mutates_args=())
    ... def numpy_sin(x: ndgrad.Tensor) -> ndgrad.Tensor:
    ...     return ndgrad.from_numpy(np.sin(x.numpy()))
    >>> def setup_context(ctx, inputs, output):
    ...     ctx.save_for_backward(inputs[0])
    >>> def backward(ctx, grad):
    ...     (x,) = ctx.saved_tensors
    ...     return grad * x.cos()
    >>> numpy_sin.register_autograd(backward, setup_context=setup_context)
    >>> x = ndgrad.tensor([0.0, 1.0], requires_grad=True)
    >>> y = ndgrad.ops.libdoc.numpy_sin(x)
    >>> y.grad_fn.name()
    'GeneratedBackwardFor_libdoc_numpy_sin_defaultBackward'
    >>> y.sum().backward(); x.grad
    tensor([1.0000, 0.5403])
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import warnings
import weakref
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from ._library_schema import FunctionSchema, bind, infer_schema, parse_schema, tensors_of
from . import _dtype
from .amp.autocast_mode import autocast as _autocast, is_autocast_enabled
from .autograd import batching as _bt
from .autograd.function import Function
from .autograd.grad_mode import is_grad_enabled, no_grad
from .ops import _batching, _namespaces
from .tensor import Tensor

__all__ = ["Library", "impl", "define", "fallthrough_kernel", "impl_abstract", "register_fake",
           "register_autograd", "register_kernel", "register_vmap", "register_autocast", "get_ctx",
           "custom_op",
           "infer_schema", "opcheck", "CustomOpDef", "OpCheckError"]

_KINDS = ("DEF", "IMPL", "FRAGMENT")
_DEF_NAMESPACES: Dict[str, "Library"] = {}      # namespaces with a live "DEF" library
_DEVICE_KEYS = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta", "mps": "MPS", "xpu": "XPU"}
_KNOWN_DEVICES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                  "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                  "privateuseone")
_NO_META = ("{name}: attempted to run this operator with Meta tensors, but there was no fake "
            "impl or Meta kernel registered. You may have run into this message while using "
            "an operator with PT2 compilation APIs (torch.compile/torch.export); in order to "
            "use this operator with those APIs you'll need to add a fake impl. Please see the "
            "following for next steps:  "
            "https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html")


def fallthrough_kernel() -> None:
    """A dummy kernel: ``impl(name, fallthrough_kernel, key)`` registers nothing for ``key``,
    so the call goes on to the next key (as torch's fallthrough)."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


# ---- operator objects (ndgrad.ops.ns.name and ndgrad.ops.ns.name.overload) ----

class OpOverloadPacket:
    """``ndgrad.ops.ns.name``: the overloads of one operator name; calling it picks the first
    overload whose schema accepts the arguments."""

    def __init__(self, namespace: str, name: str) -> None:
        self._namespace, self._opname = namespace, name
        self._qualified_op_name = f"{namespace}::{name}"
        self._overloads: Dict[str, "OpOverload"] = {}
        self.__name__ = name

    def overloads(self) -> List[str]:
        return list(self._overloads)

    def __getattr__(self, key: str) -> "OpOverload":
        if key.startswith("__"):
            raise AttributeError(key)
        ov = self.__dict__["_overloads"].get(key)
        if ov is None:
            raise AttributeError(f"The underlying op of '{self}' has no overload name '{key}'")
        return ov

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='{self._namespace}.{self._opname}')>"

    def __str__(self) -> str:
        return f"{self._namespace}.{self._opname}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(self._overloads) == 1:
            return next(iter(self._overloads.values()))(*args, **kwargs)
        errors = []
        for ov in self._overloads.values():
            try:
                bind(ov._schema, args, kwargs)
            except RuntimeError as e:
                errors.append(str(e))
                continue
            return ov(*args, **kwargs)
        raise RuntimeError("Overloaded torch operator invoked from Python failed to match any "
                           "schema:\n" + "\n\n".join(errors) + "\n\n")


class OpOverload:
    """``ndgrad.ops.ns.name.overload``: one schema and its kernels per dispatch key."""

    def __init__(self, packet: OpOverloadPacket, schema: FunctionSchema) -> None:
        self.overloadpacket = packet
        self._schema = schema
        self._overloadname = schema.overload_name or "default"
        self._namespace, self._opname = packet._namespace, packet._opname
        self.namespace = packet._namespace
        self.__name__ = f"{packet._opname}.{self._overloadname}"
        self._kernels: Dict[str, Callable] = {}
        self._fake: Optional[Callable] = None
        self._custom: Optional["CustomOpDef"] = None
        self._autograd: Optional[Tuple[Callable, Optional[Callable]]] = None  # register_autograd
        self._autocast: Optional[Tuple[str, Any]] = None     # register_autocast

    def name(self) -> str:
        ov = self._schema.overload_name
        return f"{self._namespace}::{self._opname}" + (f".{ov}" if ov else "")

    def __repr__(self) -> str:
        return (f"<OpOverload(op='{self._namespace}.{self._opname}', "
                f"overload='{self._overloadname}')>")

    def __str__(self) -> str:
        return f"{self._namespace}.{self._opname}.{self._overloadname}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._custom is not None:
            return self._custom._dispatch(args, kwargs)
        return _dispatch_library_op(self, args, kwargs)


def _lookup(qualname: str, create_packet: bool = False) -> OpOverload:
    """The overload called ``ns::name[.overload]`` (RuntimeError if not defined)."""
    ns, sep, rest = qualname.partition("::")
    if not sep:
        raise ValueError(f"Expected there to be a namespace in {qualname}, i.e. The operator "
                         "name should look something like ns::foo")
    name, _, overload = rest.partition(".")
    space = _namespaces.NAMESPACES.get(ns)
    packet = space._packets.get(name) if space is not None else None
    ov = packet._overloads.get(overload or "default") if packet is not None else None
    if ov is None:
        raise RuntimeError(f"operator {qualname} does not exist")
    return ov


# Kernels registered (Library.impl) for an operator not defined yet: torch accepts them and
# uses them once the definition comes.
_PENDING: Dict[str, Dict[str, Callable]] = {}


def _add_overload(ns: str, schema: FunctionSchema) -> OpOverload:
    space = _namespaces.namespace(ns)
    name = schema.name.split("::", 1)[-1]
    packet = space._packets.get(name)
    if packet is None:
        packet = space._packets[name] = OpOverloadPacket(ns, name)
    ov = OpOverload(packet, schema)
    packet._overloads[ov._overloadname] = ov
    pending = _PENDING.pop(ov.name(), {})
    ov._fake = pending.pop("__fake__", None)
    ov._kernels.update(pending)
    return ov


def _remove_overload(ov: OpOverload) -> None:
    packet = ov.overloadpacket
    packet._overloads.pop(ov._overloadname, None)
    space = _namespaces.NAMESPACES.get(ov._namespace)
    if not packet._overloads and space is not None:
        space._packets.pop(ov._opname, None)


def _device_type(tensors: Sequence[Tensor]) -> str:
    for t in tensors:
        dev = getattr(t, "device", None)
        if getattr(dev, "type", "cpu") == "meta":
            return "meta"
    return "cpu"


def _all_tensors(pos: Sequence[Any], kw: Dict[str, Any]) -> List[Tensor]:
    out: List[Tensor] = []
    for v in list(pos) + list(kw.values()):
        out.extend(tensors_of(v))
    return out


def _not_found(ov: OpOverload, backend: str, available: Iterable[str]) -> NotImplementedError:
    return NotImplementedError(
        f"Could not run '{ov.name()}' with arguments from the '{backend}' backend. This could "
        "be because the operator doesn't exist for this backend, or was omitted during the "
        "selective/custom build process (if using custom build). "
        f"'{ov.name()}' is only available for these backends: [{', '.join(available)}].")


def _dispatch_library_op(ov: OpOverload, args: tuple, kwargs: dict) -> Any:
    # Note [Library dispatch]: a simplified form of torch's dispatcher for operators defined
    # with Library: with a tensor that requires grad, an Autograd kernel first, then a
    # CompositeImplicitAutograd one; otherwise the backend's own kernel (CPU or Meta), then
    # CompositeExplicitAutograd, then CompositeImplicitAutograd; meta tensors fall back on the
    # fake impl. Backend kernels run with grad mode as it is, so one written with ndgrad ops
    # records them (torch's autograd fallback).
    pos, kw = bind(ov._schema, args, kwargs)
    rule = ov._autocast
    if rule is not None and is_autocast_enabled(rule[0]):
        with _autocast(rule[0], enabled=False):
            return _dispatch_library_op(ov, *_autocast_args(rule[1], pos, kw))
    jit = sys.modules.get("ndgrad.jit.tracer")  # local import: only when the jit is loaded
    if jit is not None and jit.current_tracer() is not None and ov._schema.returns and \
            not any(a.is_write for a in ov._schema.arguments):
        # recorded whole, as custom ops are (Note [Custom ops in traced code])
        return jit._make_call(ov.name(), _LibraryCall(ov), True)(*pos, **kw)
    return _run_library_op(ov, pos, kw)


class _LibraryCall:
    """A Library operator as the function of a traced ``Call`` node (equal for the same
    operator, so two traces of one program compare equal)."""

    __slots__ = ("ov",)

    def __init__(self, ov: OpOverload) -> None:
        self.ov = ov

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _run_library_op(self.ov, list(args), kwargs)

    def __eq__(self, other: object) -> bool:
        return type(other) is _LibraryCall and other.ov is self.ov

    def __hash__(self) -> int:
        return id(self.ov)


def _run_library_op(ov: OpOverload, pos: list, kw: dict) -> Any:
    tensors = _all_tensors(pos, kw)
    dev = _device_type(tensors)
    k = ov._kernels
    fn: Optional[Callable] = None
    warn = False
    if is_grad_enabled() and any(t.requires_grad for t in tensors):
        if ov._autograd is not None:
            return _autograd_call(ov, pos, kw, lambda p, q: _backend_call(ov, dev, p, q))
        fn = k.get("Autograd") or k.get("AutogradCPU") or k.get("CompositeImplicitAutograd")
        warn = fn is None
    if fn is None:
        backend = _DEVICE_KEYS[dev]
        fn = k.get(backend) or k.get("CompositeExplicitAutograd") or \
            k.get("CompositeImplicitAutograd")
        if fn is None and dev == "meta" and ov._fake is not None:
            fn = ov._fake
        if fn is None:
            if dev == "meta":
                raise NotImplementedError(_NO_META.format(name=ov.name()))
            raise _not_found(ov, backend, sorted(k))
    result = fn(*pos, **kw)
    if warn:
        _warn_on_backward(ov, result)
    return result


def _warn_on_backward(ov: OpOverload, result: Any) -> None:
    # torch's autograd fallback: a backend kernel's outputs are differentiable through the ops
    # it ran, with a warning when the gradient goes through them
    def hook(grad: Any) -> None:
        warnings.warn(
            f"{ov.name()}: an autograd kernel was not registered to the Autograd key(s) but we "
            "are trying to backprop through it. This may lead to silently incorrect behavior. "
            "This behavior is deprecated and will be removed in a future version of PyTorch. "
            "If your operator is differentiable, please ensure you have registered an autograd "
            "kernel to the correct Autograd key (e.g. DispatchKey::Autograd, "
            "DispatchKey::CompositeImplicitAutograd). If your operator is not differentiable, "
            "or to squash this warning and use the previous behavior, please register "
            "torch::CppFunction::makeFallthrough() to DispatchKey::Autograd.", UserWarning,
            stacklevel=2)
    outs = result if isinstance(result, (list, tuple)) else [result]
    for t in outs:
        if isinstance(t, Tensor) and t.requires_grad:
            t.register_hook(hook)


def _backend_call(ov: OpOverload, dev: str, pos: list, kw: dict) -> Any:
    k = ov._kernels
    fn = k.get(_DEVICE_KEYS[dev]) or k.get("CompositeExplicitAutograd") or \
        k.get("CompositeImplicitAutograd")
    if fn is None and dev == "meta":
        fn = ov._fake
    if fn is None:
        raise _not_found(ov, _DEVICE_KEYS[dev], sorted(k))
    with no_grad():
        return fn(*pos, **kw)


# ---- autograd for operators (register_autograd) ----

class _Meta:
    """The last argument of the generated Function's apply: what is not a positional tensor."""

    __slots__ = ("kwargs", "spec", "run", "out_spec")

    def __init__(self, kwargs: dict, spec: list, run: Callable) -> None:
        self.kwargs, self.spec, self.run = kwargs, spec, run
        self.out_spec: Any = None


def _flatten_args(pos: list) -> Tuple[list, list]:
    """Positional arguments as apply's arguments: a list of tensors becomes one slot per
    element (so autograd sees each tensor); ``spec`` records how to put them back."""
    flat: list = []
    spec: List[Optional[int]] = []
    for v in pos:
        if isinstance(v, list) and v and all(x is None or isinstance(x, Tensor) for x in v) \
                and any(isinstance(x, Tensor) for x in v):
            spec.append(len(v))
            flat.extend(v)
        else:
            spec.append(None)
            flat.append(v)
    return flat, spec


def _unflatten(flat: Sequence[Any], spec: list) -> list:
    out, i = [], 0
    for n in spec:
        if n is None:
            out.append(flat[i])
            i += 1
        else:
            out.append(list(flat[i:i + n]))
            i += n
    return out


def _generated_function(ov: OpOverload) -> type:
    cls = getattr(ov, "_generated", None)
    if cls is not None:
        return cls
    has_kwonly = any(a.kwarg_only for a in ov._schema.arguments)

    def forward(ctx: Any, *args: Any) -> Any:
        meta: _Meta = args[-1]
        ctx._nd_meta = meta
        pos = _unflatten(args[:-1], meta.spec)
        result = meta.run(pos, meta.kwargs)
        registered = ov._autograd
        setup = registered[1] if registered is not None else None
        if setup is not None:
            if has_kwonly:
                setup(ctx=ctx, inputs=tuple(pos), keyword_only_inputs=meta.kwargs,
                      output=result)
            else:
                setup(ctx=ctx, inputs=tuple(pos), output=result)
        if isinstance(result, list):           # Tensor[] returns: one output per element
            meta.out_spec = len(result)
            return tuple(result)
        return result

    def backward(ctx: Any, *grads: Any) -> Any:
        registered = ov._autograd
        if registered is None:
            raise RuntimeError(f"Trying to backward through {ov} but no autograd formula was "
                               "registered. Please use register_autograd to add one.")
        meta: _Meta = ctx._nd_meta
        before = ctx.needs_input_grad
        ctx.needs_input_grad = tuple(_unflatten(before[:-1], meta.spec))
        try:
            if meta.out_spec is not None:
                res = registered[0](ctx, list(grads))
            else:
                res = registered[0](ctx, *grads)
        finally:
            ctx.needs_input_grad = before
        res = res if isinstance(res, tuple) else (res,)
        flat: list = []
        for g, n in zip(res, meta.spec + [None] * (len(res) - len(meta.spec))):
            if n is None:
                flat.append(g)
            else:
                items = list(g) if isinstance(g, (list, tuple)) else [None] * n
                flat.extend(items + [None] * (n - len(items)))
        return (*flat, None)

    name = f"GeneratedBackwardFor_{ov._namespace}_{ov._opname}_{ov._overloadname}"
    cls = type(name, (Function,), {"forward": staticmethod(forward),
                                   "backward": staticmethod(backward)})
    ov._generated = cls  # type: ignore[attr-defined]
    return cls


def _autograd_call(ov: OpOverload, pos: list, kw: dict, run: Callable) -> Any:
    """Run the operator through its generated autograd Function (outputs get its node)."""
    cls = _generated_function(ov)
    flat, spec = _flatten_args(pos)
    meta = _Meta(kw, spec, run)
    out = cls.apply(*flat, meta)  # type: ignore[attr-defined]
    if meta.out_spec is not None:
        return list(out) if isinstance(out, tuple) else [out]
    return out


# ---- custom_op ----

class _VmapInfo:
    """What a vmap rule is told about the level (torch's ``VmapInfo``)."""

    __slots__ = ("batch_size", "randomness")

    def __init__(self, batch_size: int, randomness: str) -> None:
        self.batch_size, self.randomness = batch_size, randomness

    def __repr__(self) -> str:
        return f"VmapInfo(batch_size={self.batch_size}, randomness='{self.randomness}')"


class CustomOpDef:
    """What ``custom_op`` returns: callable like the operator, with ``register_kernel``,
    ``register_fake``, ``register_autograd`` and ``set_kernel_enabled``."""

    def __init__(self, namespace: str, name: str, schema: str, fn: Callable) -> None:
        self._namespace, self._name = namespace, name
        self._qualname = f"{namespace}::{name}"
        self._schema_str = schema
        self._init_fn = fn
        self._kernels: Dict[Optional[str], Callable] = {}
        self._disabled: set = set()
        self._abstract_fn: Optional[Callable] = None
        self._backward_fn: Optional[Callable] = None
        self._setup_context_fn: Optional[Callable] = None
        parsed = parse_schema(f"{self._qualname}{schema}")
        _drop_existing(self._qualname)
        self._opoverload = _add_overload(namespace, parsed)
        self._opoverload._custom = self
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._opoverload(*args, **kwargs)

    # -- registration
    def register_kernel(self, device_types: Union[str, Sequence[str], None],
                        fn: Optional[Callable] = None, /) -> Callable:
        """Use ``fn`` for tensors of these device types (``None``: every device)."""
        def inner(f: Callable) -> Callable:
            for d in _device_list(device_types):
                self._kernels[d] = f
            return f
        return inner if fn is None else inner(fn)

    def register_fake(self, fn: Callable, /) -> Callable:
        """The fake (meta) kernel: computes the output's shape and dtype from the inputs'
        (used for meta tensors and by ``opcheck``)."""
        self._abstract_fn = fn
        self._opoverload._fake = fn
        return fn

    def register_autograd(self, backward: Callable, /, *,
                          setup_context: Optional[Callable] = None) -> None:
        """``backward(ctx, *grads)`` returns one gradient per positional input;
        ``setup_context(ctx, inputs, output)`` saves what it needs (run in the forward)."""
        schema = self._opoverload._schema
        if any(a.is_write for a in schema.arguments):
            raise RuntimeError(
                f"Cannot register autograd formula for non-functional operator {self} with "
                f"schema {schema}. Please create a functional operator and register an "
                "autograd formula for that.")
        self._backward_fn, self._setup_context_fn = backward, setup_context
        self._opoverload._autograd = (backward, setup_context)

    @contextlib.contextmanager
    def set_kernel_enabled(self, device_type: str, enabled: bool = True) -> Iterator[None]:
        """Within the block, the kernel registered for ``device_type`` is (not) used."""
        was = device_type in self._disabled
        if enabled:
            self._disabled.discard(device_type)
        else:
            self._disabled.add(device_type)
        try:
            yield
        finally:
            if was:
                self._disabled.add(device_type)
            else:
                self._disabled.discard(device_type)

    # -- calling
    def _kernel_for(self, dev: str) -> Callable:
        if dev == "meta":
            if self._abstract_fn is None:
                raise NotImplementedError(_NO_META.format(name=self._qualname))
            return self._abstract_fn
        for key in (dev, None):
            if key in self._kernels and key not in self._disabled:
                return self._kernels[key]
        if dev in self._disabled and dev in self._kernels and None in self._kernels:
            return self._kernels[None]
        raise _not_found(self._opoverload, _DEVICE_KEYS.get(dev, dev.upper()),
                         sorted(_DEVICE_KEYS.get(d, str(d)) for d in self._kernels
                                if d is not None) + ["Meta"])

    def _run(self, pos: list, kw: dict) -> Any:
        dev = _device_type(_all_tensors(pos, kw))
        fn = self._kernel_for(dev)
        written = self._written(pos, kw)
        before = [t._version for t in written]
        with no_grad():
            result = fn(*pos, **kw)
        if dev != "meta":
            _check_result(self, fn, result, pos, kw)
            # a written argument's version moves on (once, when the kernel wrote through
            # NumPy; its in-place ops counted themselves)
            for t, v in zip(written, before):
                if t._version == v:
                    t._bump_version()
        return result

    def register_vmap(self, func: Optional[Callable] = None, /) -> Callable:
        """``func(info, in_dims, *args, **kwargs) -> (output, out_dims)``: the operator on
        inputs batched by ``vmap`` (``info.batch_size``, ``info.randomness``; a batched
        argument's batch dim is its ``in_dims`` entry, ``None`` if unbatched). Without a rule,
        ``vmap`` runs the operator once per entry."""
        def inner(f: Callable) -> Callable:
            self._vmap_fn = f
            return f
        return inner if func is None else inner(func)

    _vmap_fn: Optional[Callable] = None

    def _dispatch(self, args: tuple, kwargs: dict) -> Any:
        ov = self._opoverload
        pos, kw = bind(ov._schema, args, kwargs)
        rule = ov._autocast
        if rule is not None and is_autocast_enabled(rule[0]):
            with _autocast(rule[0], enabled=False):
                return self._dispatch(*_autocast_args(rule[1], pos, kw))
        if _bt.VMAP:
            level = _batching._args_level(tuple(pos) + tuple(kw.values()))
            if level:
                return self._batched(level, pos, kw)
        return self._bound(pos, kw)

    def _batched(self, level: int, pos: list, kw: dict) -> Any:
        # Note [Custom ops under vmap]: with a vmap rule, the rule runs once on the physical
        # tensors (batch dim 0, the level suspended) and its outputs are marked batched at the
        # level; without one, the operator runs once per entry (torch's fallback).
        if self._vmap_fn is None:
            return _batching.per_entry(lambda *a, **k: self._bound(list(a), k), *pos, **kw)

        def physical(v: Any) -> Tuple[Any, Any]:
            if isinstance(v, Tensor):
                lv = _batching._vlevel(v)
                if not lv:
                    return v, None
                return (v if lv == level else _batching.lift(v, level)), 0
            if isinstance(v, list) and any(isinstance(x, Tensor) for x in v):
                pairs = [physical(x) for x in v]
                return [p for p, _ in pairs], [d for _, d in pairs]
            return v, None
        moved = [physical(v) for v in pos]
        info = _VmapInfo(_bt.VMAP[level], _bt.RANDOMNESS.get(level, "error"))
        with _bt.suspended(level):
            out, out_dims = self._vmap_fn(info, tuple(d for _, d in moved),
                                          *[p for p, _ in moved], **kw)
            single = not isinstance(out, (tuple, list))
            outs = [out] if single else list(out)
            dims = [out_dims] * len(outs) if not isinstance(out_dims, (tuple, list)) \
                else list(out_dims)
            placed = []
            for o, d in zip(outs, dims):
                if not isinstance(o, Tensor):
                    placed.append(o)
                    continue
                if d is None:
                    o = o.unsqueeze(0).expand(info.batch_size, *o.shape).contiguous()
                elif d != 0:
                    o = o.movedim(d, 0)
                placed.append(o)
        placed = [_batching.mark(o, level) if isinstance(o, Tensor) else o for o in placed]
        if single:
            return placed[0]
        return type(out)(placed) if isinstance(out, tuple) else placed

    def _bound(self, pos: list, kw: dict) -> Any:
        jit = sys.modules.get("ndgrad.jit.tracer")  # local import: only when the jit is loaded
        if jit is not None and jit.current_tracer() is not None:
            return self._traced_call(jit, pos, kw)
        return self._eager(pos, kw)

    def _traced_call(self, jit: Any, pos: list, kw: dict) -> Any:
        # Note [Custom ops in traced code]: while ndgrad.compile / jit.trace records a
        # function, a custom operator is recorded whole, as a differentiable Call node (the
        # tracer's own mechanism for Python code outside the op table): its kernel runs at run
        # time, and its backward through the generated autograd node. An operator that
        # returns nothing but writes into arguments is recorded as returning the tensors it
        # writes, so the graph reads them after the call.
        if self._opoverload._schema.returns:
            return jit._make_call(self._qualname, self._eager, True)(pos, kw)
        written = self._written(pos, kw)
        if not written:
            return self._eager(pos, kw)
        fresh = jit._make_call(self._qualname, self._functional, True)(pos, kw)
        for t, new in zip(written, fresh if isinstance(fresh, tuple) else (fresh,)):
            t.copy_(new)
        return None

    def _written(self, pos: list, kw: dict) -> List[Tensor]:
        values = list(pos) + [kw[a.name] for a in self._opoverload._schema.arguments
                              if a.kwarg_only]
        return [t for a, v in zip(self._opoverload._schema.arguments, values)
                if a.is_write for t in tensors_of(v)]

    def _functional(self, pos: list, kw: dict) -> Any:
        # the operator run on copies of the tensors it writes; returns the copies
        copies = {id(t): t.detach().clone() for t in self._written(pos, kw)}

        def swap(v: Any) -> Any:
            if isinstance(v, Tensor):
                return copies.get(id(v), v)
            if isinstance(v, list):
                return [swap(x) for x in v]
            return v
        self._eager([swap(v) for v in pos], {k: swap(v) for k, v in kw.items()})
        out = tuple(copies.values())
        return out[0] if len(out) == 1 else out

    def _eager(self, pos: list, kw: dict) -> Any:
        ov = self._opoverload
        if is_grad_enabled() and ov._schema.returns and any(
                t.requires_grad for v in pos for t in tensors_of(v)):
            return _autograd_call(ov, pos, kw, self._run)
        return self._run(pos, kw)


def _check_result(op: CustomOpDef, fn: Callable, result: Any, pos: list, kw: dict) -> None:
    schema = op._opoverload._schema
    rets = schema.returns
    if len(rets) == 1 and not schema.returns_tuple:
        outs = [result]
    else:
        if not rets:
            return
        if not isinstance(result, (tuple, list)):
            raise TypeError(f"Object of type '{type(result).__name__}' is not an instance of "
                            "'sequence'")
        if len(result) != len(rets):
            raise RuntimeError(f"Expected {len(rets)} return values from {op._qualname} but got "
                               f"{len(result)}")
        outs = list(result)
    produced: List[Tensor] = []
    for r, v in zip(rets, outs):
        if r.type == "Tensor":
            if not isinstance(v, Tensor):
                raise RuntimeError(f"Unable to cast {v!r} to Tensor")
            produced.append(v)
        elif r.type == "Tensor[]":
            if not isinstance(v, (list, tuple)) or not all(isinstance(t, Tensor) for t in v):
                raise RuntimeError(f"Unable to cast {v!r} to Tensor[]")
            produced.extend(v)
    inputs = _all_tensors(pos, kw)
    for i, t in enumerate(produced):
        others = inputs + produced[:i]
        if any(t is u or np.may_share_memory(t._data, u._data) for u in others):
            mod = inspect.getmodule(fn)
            raise RuntimeError(
                f"{op._name} (with implementation in {mod}): The output of this custom operator "
                "(1) must not also be an input to this custom operator and (2) may not alias "
                "any inputs to this custom operator or other returns. The most common way to "
                "trigger this error is if we have y = custom_op(x) and y and x are the same "
                "Tensor. Please instead return a clone of the offending output tensor(s) (e.g. "
                "return x.clone()) or refactor the custom operator to not return y.")


def _device_list(device_types: Union[str, Sequence[str], None]) -> List[Optional[str]]:
    if device_types is None:
        return [None]
    items = [device_types] if isinstance(device_types, str) else list(device_types)
    out: List[Optional[str]] = []
    for d in items:
        base = str(d).split(":")[0]
        if base not in _KNOWN_DEVICES:
            raise RuntimeError(f"Expected one of {', '.join(_KNOWN_DEVICES)} device type at "
                               f"start of device string: {d}")
        out.append(base)
    return out


def _drop_existing(qualname: str) -> None:
    # torch lets custom_op redefine a name (the old definition is dropped)
    try:
        old = _lookup(qualname)
    except RuntimeError:
        return
    if old._custom is not None:
        _remove_overload(old)


def custom_op(name: str, fn: Optional[Callable] = None, /, *, mutates_args: Any,
              device_types: Union[str, Sequence[str], None] = None,
              schema: Optional[str] = None, tags: Any = None) -> Any:
    """Wrap a Python function into an operator ``ns::name`` (a ``CustomOpDef``): its schema
    is inferred from the type hints (or given as ``schema``), ``mutates_args`` names the
    tensors it writes to (``()`` for none, ``"unknown"`` for all), ``device_types`` restricts
    the kernel to those devices. Also a decorator (``@custom_op("ns::f", mutates_args=())``).

    Example:
        >>> import ndgrad
        >>> @ndgrad.library.custom_op("libdoc::add_one", mutates_args=())
        ... def add_one(x: ndgrad.Tensor) -> ndgrad.Tensor:
        ...     return x + 1
        >>> add_one(ndgrad.zeros(2)), add_one._opoverload._schema
        (tensor([1., 1.]), libdoc::add_one(Tensor x) -> Tensor)
    """
    def inner(f: Callable) -> CustomOpDef:
        ns, opname = name.split("::")
        if schema is None:
            schema_str = infer_schema(f, mutates_args=mutates_args)
        else:
            schema_str = schema
        op = CustomOpDef(ns, opname, schema_str, f)
        if schema is not None:
            declared = {a.name for a in op._opoverload._schema.arguments if a.is_write}
            wanted = set(mutates_args) if not isinstance(mutates_args, str) else declared
            if wanted != declared:
                _remove_overload(op._opoverload)
                raise ValueError(
                    f"Attempted to create a custom op with `mutates_args={mutates_args}` and "
                    f"`schema={schema}. The schema suggests that the op mutates {declared}"
                    f"which is different from what was provided to us in `mutates_args` "
                    "({wanted}). Please make these consistent.")
        op.register_kernel(device_types)(f)
        return op
    return inner if fn is None else inner(fn)


# ---- Library (the older API) ----

class Library:
    """A set of operator definitions (``"DEF"``: a namespace's one defining library;
    ``"FRAGMENT"``: more definitions for it; ``"IMPL"``: kernels only) that ``define`` schemas
    and ``impl`` kernels. Deleting it (or ``_destroy()``) removes what it defined.

    Example:
        >>> import ndgrad
        >>> lib = ndgrad.library.Library("libdoc2", "DEF")
        >>> lib.define("scale(Tensor x, float s=3.0) -> Tensor")
        'scale'
        >>> lib.impl("scale", lambda x, s=3.0: x * s, "CPU")
        >>> ndgrad.ops.libdoc2.scale(ndgrad.ones(2))
        tensor([3., 3.])
    """

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in _KINDS:
            raise ValueError(f"Unsupported kind: {kind}")
        if ns in ("aten", "prim", "prims") and kind in ("DEF", "FRAGMENT"):
            raise ValueError(ns + " is a reserved namespace. Please try creating a library with "
                                  "another name.")
        if kind == "DEF":
            if ns in _DEF_NAMESPACES:
                raise RuntimeError(
                    f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; "
                    "please put all of your definitions in a single TORCH_LIBRARY block.  If "
                    "you were trying to specify implementations, consider using "
                    "TORCH_LIBRARY_IMPL (which can be duplicated).  If you really intended to "
                    "define operators for a single namespace in a distributed way, you can use "
                    "TORCH_LIBRARY_FRAGMENT to explicitly indicate this.")
            _DEF_NAMESPACES[ns] = self
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        _namespaces.namespace(ns)          # ndgrad.ops.<ns> exists from now on
        self._defined: List[OpOverload] = []
        self._registered: List[Tuple[OpOverload, str, Optional[Callable]]] = []
        self._op_defs: set = set()
        self._finalizer = weakref.finalize(self, _undo, ns, kind, self._defined,
                                           self._registered)

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema: str, alias_analysis: str = "", *, tags: Any = ()) -> str:
        """Declare an operator of this namespace from its schema (``"name(Tensor x) ->
        Tensor"``; an overload as ``"name.overload(...)"``); returns its name."""
        if self.kind == "IMPL":
            raise RuntimeError(f'def("{schema.split("(")[0]}"): Cannot define an operator '
                               "inside of a TORCH_LIBRARY_IMPL block.  All def()s should be "
                               "placed in the (unique) TORCH_LIBRARY block for their namespace.")
        if alias_analysis not in ("", "FROM_SCHEMA", "CONSERVATIVE"):
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        parsed = parse_schema(schema)
        base = parsed.name
        if "::" in base:
            ns, _, plain = base.partition("::")
            if ns != self.ns:
                raise RuntimeError(f"Explicitly provided namespace ({ns}) in schema string "
                                   f"does not match namespace of enclosing TORCH_LIBRARY block "
                                   f"({self.ns}).")
        else:
            plain = base
        parsed.name = f"{self.ns}::{plain}"
        try:
            _lookup(parsed.name + (f".{parsed.overload_name}" if parsed.overload_name else ""))
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                f"Tried to register an operator ({parsed}) with the same name and overload "
                "name multiple times. Each overload's schema should only be registered with a "
                "single call to def().")
        ov = _add_overload(self.ns, parsed)
        self._defined.append(ov)
        self._op_defs.add(parsed.name)
        return plain

    def impl(self, op_name: Union[str, OpOverload, CustomOpDef], fn: Callable,
             dispatch_key: str = "", *, with_keyset: bool = False,
             allow_override: bool = True) -> None:
        """Register ``fn`` as the operator's kernel for ``dispatch_key`` (``"CPU"``, ``"Meta"``,
        ``"Autograd"``, ``"CompositeImplicitAutograd"`` (the default),
        ``"CompositeExplicitAutograd"``)."""
        if not callable(fn):
            raise TypeError(f"Input function is required to be a callable but found type "
                            f"{type(fn)}")
        if with_keyset:
            raise NotImplementedError("ndgrad.library: Library.impl(..., with_keyset=True) is "
                                      "not supported (ndgrad has no dispatch key sets to "
                                      "redispatch with)")
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        if fn is fallthrough_kernel:
            return
        if isinstance(op_name, str):
            name = op_name if "::" in op_name else f"{self.ns}::{op_name}"
            try:
                _lookup(name)
            except RuntimeError:               # defined later: kept until then
                _PENDING.setdefault(name, {})[key] = fn
                return
        ov = self._resolve(op_name)
        if key in ov._kernels and not allow_override:
            raise RuntimeError(f"This is not allowed since there's already a kernel registered "
                               f"from python overriding {ov.name().split('::', 1)[1]}'s behavior "
                               f"for {key} dispatch key and {ov._namespace} namespace.")
        previous = ov._kernels.get(key)
        ov._kernels[key] = fn
        self._registered.append((ov, key, previous))

    def fallback(self, fn: Callable, dispatch_key: str = "", *, with_keyset: bool = False) -> None:
        raise NotImplementedError("ndgrad.library: Library.fallback (a kernel for every "
                                  "operator of a dispatch key) is not supported")

    def _resolve(self, op_name: Union[str, OpOverload, CustomOpDef]) -> OpOverload:
        if isinstance(op_name, CustomOpDef):
            return op_name._opoverload
        if isinstance(op_name, OpOverload):
            return op_name
        if not isinstance(op_name, str):
            raise RuntimeError(f"impl should be passed either a name or an OpOverload object "
                               f"as the first argument, got {type(op_name)}")
        name = op_name if "::" in op_name else f"{self.ns}::{op_name}"
        return _lookup(name)

    def _destroy(self) -> None:
        self._finalizer()


def _undo(ns: str, kind: str, defined: List[OpOverload],
          registered: List[Tuple[OpOverload, str, Optional[Callable]]]) -> None:
    for ov, key, previous in reversed(registered):
        if previous is None:
            ov._kernels.pop(key, None)
        else:
            ov._kernels[key] = previous
    for ov in defined:
        _remove_overload(ov)
    if kind == "DEF" and ns in _DEF_NAMESPACES:
        del _DEF_NAMESPACES[ns]


# ---- the module-level registration functions ----

_fragments: Dict[str, Library] = {}


def _fragment(ns: str) -> Library:
    lib = _fragments.get(ns)
    if lib is None:
        lib = _fragments[ns] = Library(ns, "FRAGMENT")
    return lib


def _as_overload(op: Any, caller: str) -> OpOverload:
    if isinstance(op, CustomOpDef):
        return op._opoverload
    if isinstance(op, OpOverload):
        return op
    if isinstance(op, OpOverloadPacket):
        return op.default
    if isinstance(op, str):
        try:
            return _lookup(op)
        except RuntimeError:
            ns, _, rest = op.partition("::")
            raise AttributeError(f"'_OpNamespace' '{ns}' object has no attribute "
                                 f"'{rest.split('.')[0]}'") from None
    raise ValueError(f"{caller}({op}): got unexpected type for op: {type(op)}")


def define(qualname: str, schema: str, *, lib: Optional[Library] = None,
           tags: Any = ()) -> None:
    """Declare operator ``ns::name`` with ``schema`` (``"(Tensor x) -> Tensor"``).

    Example:
        >>> import ndgrad
        >>> ndgrad.library.define("libdoc3::neg", "(Tensor x) -> Tensor")
        >>> _ = ndgrad.library.impl("libdoc3::neg", "cpu", lambda x: -x)
        >>> ndgrad.ops.libdoc3.neg(ndgrad.ones(1))
        tensor([-1.])
    """
    if not isinstance(qualname, str):
        raise ValueError(f"define(qualname, schema): expected qualname to be instance of str, "
                         f"got {type(qualname)}")
    ns, name = qualname.split("::")
    if lib is None:
        lib = _fragment(ns)
    lib.define(name + schema, tags=tags)


def impl(qualname: Any, types: Union[str, Sequence[str]], func: Optional[Callable] = None, *,
         lib: Optional[Library] = None) -> Any:
    """Register a kernel of ``qualname`` for the device types ``types`` (``"cpu"``,
    ``"default"`` for all) or a dispatch key name (``"CPU"``, ``"Autograd"`` ...); a
    decorator when ``func`` is omitted."""
    ov = _as_overload(qualname, "impl") if not isinstance(qualname, str) else None
    keys = []
    for t in ([types] if isinstance(types, str) else list(types)):
        if t == "default":
            keys.append("CompositeExplicitAutograd")
        elif t in _DEVICE_KEYS:
            keys.append(_DEVICE_KEYS[t])
        else:
            keys.append(t)

    def inner(f: Callable) -> Callable:
        target = ov if ov is not None else _as_overload(qualname, "impl")
        use = lib if lib is not None else _fragment(target._namespace)
        for k in keys:
            use.impl(target, f, k)
        return f
    return inner if func is None else inner(func)


def register_kernel(op: Any, device_types: Union[str, Sequence[str], None],
                    func: Optional[Callable] = None, /, *,
                    lib: Optional[Library] = None) -> Any:
    """Register a device kernel for an operator (``CustomOpDef.register_kernel`` for custom
    ops; a Library kernel for the device's dispatch key otherwise)."""
    ov = _as_overload(op, "register_kernel")
    if ov._custom is not None:
        return ov._custom.register_kernel(device_types, func)
    keys = ["CompositeExplicitAutograd"] if device_types is None else [
        _DEVICE_KEYS.get(d or "", "CPU") for d in _device_list(device_types)]

    def inner(f: Callable) -> Callable:
        use = lib if lib is not None else _fragment(ov._namespace)
        for k in keys:
            use.impl(ov, f, k)
        return f
    return inner if func is None else inner(func)


def register_fake(op: Any, func: Optional[Callable] = None, /, *,
                  lib: Optional[Library] = None, _stacklevel: int = 1,
                  allow_override: bool = True) -> Any:
    """Register the fake (meta) kernel of an operator; a decorator when ``func`` is
    omitted."""
    if not isinstance(op, (str, OpOverload, OpOverloadPacket, CustomOpDef)):
        raise ValueError(f"register_fake({op}): got unexpected type for op: {type(op)}")

    def inner(f: Callable) -> Callable:
        if isinstance(op, str) and op in _PENDING:     # kernels registered before define
            _PENDING[op]["__fake__"] = f
            return f
        ov = _lookup(op) if isinstance(op, str) else _as_overload(op, "register_fake")
        if ov._custom is not None:
            return ov._custom.register_fake(f)
        ov._fake = f
        return f
    return inner if func is None else inner(func)


impl_abstract = register_fake


def register_autograd(op: Any, backward: Callable, /, *, setup_context: Optional[Callable] = None,
                      lib: Optional[Library] = None) -> None:
    """Register the backward formula of an operator (see ``CustomOpDef.register_autograd``)."""
    ov = _as_overload(op, "register_autograd")
    if ov._custom is not None:
        ov._custom.register_autograd(backward, setup_context=setup_context)
        return
    if any(a.is_write for a in ov._schema.arguments):
        raise RuntimeError(f"Cannot register autograd formula for non-functional operator {ov} "
                           f"with schema {ov._schema}. Please create a functional operator and "
                           "register an autograd formula for that.")
    ov._autograd = (backward, setup_context)


def register_vmap(op: Any, func: Optional[Callable] = None, /, *,
                  lib: Optional[Library] = None) -> Any:
    """Register the vmap rule of a custom operator (see ``CustomOpDef.register_vmap``)."""
    ov = _as_overload(op, "register_vmap")
    if ov._custom is None:
        raise NotImplementedError("ndgrad.library.register_vmap: only operators made with "
                                  "custom_op take a vmap rule; others run per entry under vmap")
    return ov._custom.register_vmap(func)


def _autocast_args(dtype: Any, pos: list, kw: dict) -> Tuple[tuple, dict]:
    # under autocast: floating tensors other than float64 are cast to the registered dtype
    def cast(v: Any) -> Any:
        if isinstance(v, Tensor) and v.is_floating_point() and v.dtype != _dtype.float64:
            return v.to(dtype)
        if isinstance(v, list):
            return [cast(x) for x in v]
        return v
    return tuple(cast(v) for v in pos), {k: cast(v) for k, v in kw.items()}


def register_autocast(op: Any, device_type: str, cast_inputs: Any, /, *,
                      lib: Optional[Library] = None) -> None:
    """Under ``autocast(device_type)``, the operator's floating inputs (not float64) are cast
    to ``cast_inputs`` and it runs with autocast disabled.

    Example:
        >>> import ndgrad
        >>> @ndgrad.library.custom_op("libdoc::mm", mutates_args=())
        ... def mm(x: ndgrad.Tensor, y: ndgrad.Tensor) -> ndgrad.Tensor:
        ...     return x @ y
        >>> ndgrad.library.register_autocast("libdoc::mm", "cpu", ndgrad.bfloat16)
        >>> with ndgrad.autocast("cpu"):
        ...     mm(ndgrad.ones(2, 2), ndgrad.ones(2, 2)).dtype
        ndgrad.bfloat16
    """
    if not isinstance(op, (str, OpOverload, OpOverloadPacket, CustomOpDef)):
        raise ValueError(f"register_autocast({op}): got unexpected type for op: {type(op)}")
    _device_list(device_type)           # torch's error for an unknown device type
    ov = _as_overload(op, "register_autocast")
    ov._autocast = (device_type, cast_inputs)


def get_ctx() -> Any:
    """The context of the fake kernel being run (ndgrad runs fake kernels on meta tensors,
    where sizes are concrete: the context only offers ``new_dynamic_size``, which refuses)."""
    return _FakeCtx()


class _FakeCtx:
    def new_dynamic_size(self, *, min: int = 0, max: Optional[int] = None) -> int:  # noqa: A002
        raise RuntimeError("ndgrad.library.get_ctx().new_dynamic_size: ndgrad has no symbolic "
                           "sizes; an operator whose output size depends on the data cannot "
                           "run on meta tensors")


# ---- opcheck ----

class OpCheckError(Exception):
    """What ``opcheck`` raises when a check fails."""


_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor",
          "test_aot_dispatch_static", "test_aot_dispatch_dynamic")
DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
                      "test_aot_dispatch_dynamic")


def _clone(v: Any) -> Any:
    if isinstance(v, Tensor):
        c = v.detach().clone()
        return c.requires_grad_(v.requires_grad) if v.is_floating_point() or \
            v.is_complex() else c
    if isinstance(v, (list, tuple)):
        return type(v)(_clone(x) for x in v)
    return v


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and bool(
            np.array_equal(a.detach().numpy(), b.detach().numpy(), equal_nan=True))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b) if not isinstance(a, Tensor) and not isinstance(b, Tensor) else False


def _check_schema(ov: OpOverload, args: tuple, kwargs: dict) -> None:
    cargs, ckw = _clone(args), _clone(kwargs)
    before = _clone((cargs, ckw))
    with no_grad():
        ov(*cargs, **ckw)
    pos_names = [a.name for a in ov._schema.arguments]
    for i, (now, was) in enumerate(zip(cargs, before[0])):
        arg = ov._schema.arguments[i] if i < len(pos_names) else None
        if arg is not None and not arg.is_write and tensors_of(now) and not _same(now, was):
            raise RuntimeError(f"Argument {arg.name} is not defined as mutable but was mutated")
    for k, now in ckw.items():
        arg = next(a for a in ov._schema.arguments if a.name == k)
        if not arg.is_write and tensors_of(now) and not _same(now, before[1][k]):
            raise RuntimeError(f"Argument {k} is not defined as mutable but was mutated")


def _check_autograd_registration(ov: OpOverload, args: tuple, kwargs: dict) -> None:
    cargs, ckw = _clone(args), _clone(kwargs)
    if not any(t.requires_grad for t in _all_tensors(list(cargs), ckw)):
        return
    out = ov(*cargs, **ckw)
    outs = [t for t in tensors_of(out if isinstance(out, (list, tuple)) else [out])]
    if ov._custom is not None or ov._autograd is not None or "Autograd" in ov._kernels or \
            "AutogradCPU" in ov._kernels or "CompositeImplicitAutograd" in ov._kernels:
        return
    if any(t.requires_grad for t in outs):
        raise AssertionError(
            f"{ov.name()}: at least one output of this operator has requires_grad=True but the "
            "operator does not have an autograd kernel defined at an autograd key (e.g. "
            "DispatchKey::Autograd). This could mean that you have incorrectly registered an "
            "autograd kernel to a non-Autograd DispatchKey, which may lead to silently "
            "incorrect results. If your operator consists of regular PyTorch operations, "
            "consider not using an operator at all or registering your operator as "
            "CompositeImplicitAutograd. If you have an autograd.Function registered to a "
            "backend (CPU/CUDA) key, the correct location for it is the Autograd key.")


def _check_fake(ov: OpOverload, args: tuple, kwargs: dict) -> None:
    if not ov._schema.returns:
        return
    if ov._fake is None and "Meta" not in ov._kernels and \
            "CompositeImplicitAutograd" not in ov._kernels:
        owner = ov._custom if ov._custom is not None else ov
        short = ov._custom._name if ov._custom is not None else ov._opname
        raise RuntimeError(f"There was no fake impl registered for {owner}. This is necessary "
                           "for torch.compile/export/fx tracing to work. Please use "
                           f"`{short}.register_fake` to add an fake impl.")
    fake = ov._fake or ov._kernels.get("Meta") or ov._kernels["CompositeImplicitAutograd"]
    with no_grad():
        real = ov(*_clone(args), **_clone(kwargs))
        pos, kw = bind(ov._schema, _clone(args), _clone(kwargs))
        guess = fake(*pos, **kw)
    reals = real if isinstance(real, (list, tuple)) else [real]
    guesses = guess if isinstance(guess, (list, tuple)) else [guess]
    for r, g in zip(reals, guesses):
        if isinstance(r, Tensor):
            if not isinstance(g, Tensor):
                raise RuntimeError(f"{ov}: the fake impl returned {type(g).__name__} where the "
                                   "operator returns a Tensor")
            pairs: Tuple[Tuple[str, Any, Any], ...] = (("Shapes", r.shape, g.shape),
                                                       ("Dtypes", r.dtype, g.dtype))
            for what, a, b in pairs:
                if a != b:
                    raise RuntimeError(
                        f"When comparing the output of {ov} on FakeTensor and concrete Tensors, "
                        f"found mismatched tensor metadata: {what} {a} and {b} are not equal!")


def _check_backward(ov: OpOverload, args: tuple, kwargs: dict) -> None:
    cargs, ckw = _clone(args), _clone(kwargs)
    leaves = [t for t in _all_tensors(list(cargs), ckw) if t.requires_grad]
    out = ov(*cargs, **ckw)
    first = _clone(out)
    again = ov(*_clone(args), **_clone(kwargs))
    if not _same(first, again):
        raise RuntimeError(f"{ov}: two runs on the same inputs gave different results")
    if not leaves:
        return
    outs = [t for t in tensors_of(out if isinstance(out, (list, tuple)) else [out])
            if t.requires_grad]
    if not outs:
        return
    from .autograd import grad as _grad  # local import: the autograd API is bound at load
    _grad([o.sum() for o in outs], leaves, allow_unused=True)


def opcheck(op: Any, args: Tuple[Any, ...], kwargs: Optional[Dict[str, Any]] = None, *,
            test_utils: Union[str, Sequence[str]] = DEFAULT_TEST_UTILS,
            raise_exception: bool = True, atol: Any = None,
            rtol: Any = None) -> Dict[str, Any]:
    """Check that an operator is registered consistently, as torch.library.opcheck: the
    schema's mutation annotations match what the kernel writes (``test_schema``), outputs
    that require grad come from an autograd formula (``test_autograd_registration``), the
    fake kernel gives the real outputs' shapes and dtypes (``test_faketensor``), and the
    backward runs (``test_aot_dispatch_*``). Returns ``{test: "SUCCESS" or the error}``.

    Example:
        >>> import ndgrad
        >>> @ndgrad.library.custom_op("libdoc::twice", mutates_args=())
        ... def twice(x: ndgrad.Tensor) -> ndgrad.Tensor:
        ...     return x * 2
        >>> _ = twice.register_fake(lambda x: ndgrad.empty_like(x))
        >>> ndgrad.library.opcheck(twice, (ndgrad.ones(2),))["test_faketensor"]
        'SUCCESS'
    """
    if kwargs is None:
        kwargs = {}
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    if not set(test_utils).issubset(_TESTS):
        raise ValueError(f"opcheck(op, ..., test_utils={test_utils}), expected test_utils to be "
                         f"subset of {_TESTS} but it was not")
    ov = _as_overload(op, "opcheck")
    checks = {"test_schema": _check_schema,
              "test_autograd_registration": _check_autograd_registration,
              "test_faketensor": _check_fake, "test_aot_dispatch_static": _check_backward,
              "test_aot_dispatch_dynamic": _check_backward}
    results: Dict[str, Any] = {}
    for name in test_utils:
        try:
            checks[name](ov, tuple(args), dict(kwargs))
        except Exception as e:
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {e} (scroll up for "
                                   "stack trace)") from e
            results[name] = e
            continue
        results[name] = "SUCCESS"
    return results

