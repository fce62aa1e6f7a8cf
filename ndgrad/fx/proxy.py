"""FX proxies (``torch.fx.Proxy``): the stand-ins a Tracer passes through the traced code.
Every operation on a Proxy — a Python operator, a Tensor method, an attribute, an ndgrad or
``nn.functional`` function (through the ``__torch_function__`` protocol) — records a Node in
the tracer's graph and returns a new Proxy. Python control flow that needs a concrete value
(``if proxy:``, ``len(proxy)``, iteration) cannot be recorded and raises torch's errors.

Example:
    >>> import ndgrad, ndgrad.fx as fx
    >>> def f(x):
    ...     return ndgrad.relu(x) + x.shape[0]
    >>> [n.op for n in fx.symbolic_trace(f).graph.nodes]
    ['placeholder', 'call_function', 'call_function', 'call_function', 'call_function', 'output']
"""

from __future__ import annotations

import dis
import inspect
import operator
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

import ndgrad

from ._functional_calls import torch_layout
from .node import MAGIC_METHODS, Node, map_aggregate

__all__ = ["Proxy", "Attribute", "TraceError", "TracerBase", "ParameterProxy"]


class TraceError(ValueError):
    """Tracing met something it cannot record (control flow on a traced value)."""


class TracerBase:
    """What a Proxy needs of its tracer: ``create_proxy``, ``create_arg`` and the refusals."""

    graph: Any
    record_stack_traces = False

    def create_node(self, kind: str, target: Any, args: Tuple, kwargs: Dict[str, Any],
                    name: Optional[str] = None, type_expr: Optional[Any] = None) -> Node:
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> "Proxy":
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Any, args: Tuple, kwargs: Dict[str, Any],
                     name: Optional[str] = None, type_expr: Optional[Any] = None,
                     proxy_factory_fn: Optional[Callable[[Node], "Proxy"]] = None) -> "Proxy":
        """Record a node from arguments that may hold Proxies; return its Proxy."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        assert isinstance(args_, tuple) and isinstance(kwargs_, dict)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a: Any) -> Any:
        """A node argument for value ``a`` (Proxies become their nodes)."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return type(a)(*(self.create_arg(e) for e in a))
        if isinstance(a, (tuple, list)):
            return type(a)(self.create_arg(e) for e in a)
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                k = self.create_arg(k)
                if isinstance(k, Node):
                    raise RuntimeError("Keys for dictionaries used as an argument cannot "
                                       f"contain a Node. Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if a is None or a is ... or isinstance(a, (str, int, float, bool, complex)):
            return a
        if isinstance(a, (ndgrad.dtype, ndgrad.device, ndgrad.layout)) or \
                type(a).__name__ == "memory_format" or callable(a):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: "Proxy") -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow")

    def iter(self, obj: "Proxy") -> Iterator:
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function argument. "
                         "See the torch.fx docs on pytorch.org for a more detailed explanation "
                         "of what types of control flow can be traced, and check out the Proxy "
                         "docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj: "Proxy") -> Any:
        return Attribute(obj, "keys")()


class _GraphAppendingTracer(TracerBase):
    """The tracer of a Proxy made directly on a graph's node: appends to that graph."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.tensor_attrs: Dict[int, str] = {}


# Tensor operators reached through ``Tensor.__torch_function__`` (a real tensor on the left)
# are recorded as the method torch names them by.
_DUNDER_METHODS = {"__add__": "add", "__radd__": "add", "__sub__": "sub", "__mul__": "mul",
                   "__rmul__": "mul", "__truediv__": "div", "__matmul__": "matmul",
                   "__pow__": "pow", "__and__": "bitwise_and", "__or__": "bitwise_or",
                   "__xor__": "bitwise_xor", "__eq__": "eq", "__ne__": "ne", "__lt__": "lt",
                   "__le__": "le", "__gt__": "gt", "__ge__": "ge",
                   "__floordiv__": "floor_divide", "__mod__": "remainder"}


class Proxy:
    """A traced value (see the module docstring): ``node`` is the Node it stands for."""

    def __init__(self, node: Node, tracer: Optional[TracerBase] = None) -> None:
        if tracer is None:
            tracer = _GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> "Attribute":
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __getstate__(self) -> dict:
        return self.__dict__

    def __setstate__(self, d: dict) -> None:
        self.__dict__ = d

    def __deepcopy__(self, memo: dict) -> "Proxy":
        return Proxy(self.node, self.tracer)

    def __call__(self, *args: Any, **kwargs: Any) -> "Proxy":
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self) -> Iterator["Proxy"]:
        frame = inspect.currentframe()
        assert frame is not None
        caller = frame.f_back
        assert caller is not None
        for inst in dis.get_instructions(caller.f_code):
            if inst.offset == caller.f_lasti:
                if inst.opname == "UNPACK_SEQUENCE":
                    return (self.tracer.create_proxy("call_function", operator.getitem,
                                                     (self, i), {})
                            for i in range(inst.argval))
                break
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call torch.fx.wrap('len') at "
                           "module scope")

    def keys(self) -> Any:
        return self.tracer.keys(self)

    __hash__ = object.__hash__

    @classmethod
    def __torch_function__(cls, orig_method: Callable, types: Any, args: Tuple = (),
                           kwargs: Optional[Dict[str, Any]] = None) -> "Proxy":
        kwargs = kwargs or {}
        tracers: Dict[Any, None] = {}

        def find(a: Any) -> Any:
            if isinstance(a, Proxy):
                tracers.setdefault(a.tracer)
            return a

        map_aggregate(args, find)
        map_aggregate(kwargs, find)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {list(tracers)} while trying "
                               f"to trace operations {orig_method}")
        tracer = next(iter(tracers))
        name = getattr(orig_method, "__name__", "")
        if getattr(ndgrad.Tensor, name, None) is orig_method or \
                _is_tensor_method(orig_method):
            return tracer.create_proxy("call_method", _DUNDER_METHODS.get(name, name),
                                       args, kwargs)
        args, kwargs = torch_layout(orig_method, tuple(args), kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs,
                                   name=tracer.graph._target_to_str(orig_method))


def _is_tensor_method(f: Callable) -> bool:
    qual = getattr(f, "__qualname__", "")
    return qual.startswith("Tensor.") and getattr(f, "__module__", "").startswith("ndgrad")


class Attribute(Proxy):
    """``proxy.name``: recorded as ``getattr`` when used as a value, as a ``call_method``
    node when called."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Optional[Node] = None

    @property
    def node(self) -> Node:  # type: ignore[override]
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """A proxy for a parameter of the traced module: its shape-like attributes are read from
    the real parameter (they are constants of the trace)."""

    def __init__(self, tracer: TracerBase, node: Node, name: str, param: Any) -> None:
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self) -> Any:
        return self.param.shape

    def size(self, dim: Optional[int] = None) -> Any:
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self) -> int:
        return self.param.dim()

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.nelement()


def _binary(op: Callable, reflected: bool) -> Callable:
    if reflected:
        def impl(self: Proxy, rhs: Any) -> Proxy:
            return self.tracer.create_proxy("call_function", op, (rhs, self), {})
    else:
        def impl(self: Proxy, rhs: Any) -> Proxy:
            return self.tracer.create_proxy("call_function", op, (self, rhs), {})
    return impl


def _unary(op: Callable) -> Callable:
    def impl(self: Proxy) -> Proxy:
        return self.tracer.create_proxy("call_function", op, (self,), {})
    return impl


for _name in list(MAGIC_METHODS) + ["eq", "ne", "lt", "gt", "le", "ge"]:
    _op = getattr(operator, _name)
    _dunder = _name.rstrip("_") if _name in ("and_", "or_") else _name
    setattr(Proxy, f"__{_dunder}__", _binary(_op, False))
    if _name not in ("getitem", "div", "eq", "ne", "lt", "gt", "le", "ge"):
        setattr(Proxy, f"__r{_dunder}__", _binary(_op, True))
for _name in ("neg", "pos", "invert", "abs"):
    setattr(Proxy, f"__{_name}__", _unary(getattr(operator, _name)))
