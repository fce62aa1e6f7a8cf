"""Symbolic tracing (``torch.fx.symbolic_trace``, ``Tracer``, ``wrap``): run a module's
``forward`` (or a function) on Proxies and record what it does as a Graph.

Submodules the tracer calls *leaf modules* (``Tracer.is_leaf_module``: ndgrad.nn's own layers
except ``Sequential``) are recorded as one ``call_module`` node; others are traced through.
Parameters of the traced module become ``get_attr`` nodes; other tensors the code meets are
attributes of the root (buffers, plain tensor attributes) or new ``_tensor_constant<i>``
attributes.

Example:
    >>> import ndgrad, ndgrad.fx as fx
    >>> class Net(ndgrad.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.lin = ndgrad.nn.Linear(2, 2)
    ...     def forward(self, x):
    ...         return self.lin(x).relu()
    >>> gm = fx.symbolic_trace(Net())
    >>> [(n.op, str(n.target)) for n in gm.graph.nodes]
    [('placeholder', 'x'), ('call_module', 'lin'), ('call_method', 'relu'), ('output', 'output')]
"""

from __future__ import annotations

import builtins
import functools
import inspect
import math
import operator
import types
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from .. import _control_flow, nn
from ..tensor import Tensor
from .graph import Graph
from .graph_module import GraphModule
from .node import Node, _side_effectful, map_aggregate
from .proxy import ParameterProxy, Proxy, TracerBase

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "has_side_effect"]

def has_side_effect(fn: Callable) -> Callable:
    """Mark ``fn`` so that dead-code elimination keeps calls of it."""
    _side_effectful.add(fn)
    return fn


class _PH:
    def __repr__(self) -> str:
        return "PH"


PH = _PH()

# (globals of the module that called wrap, name) to patch while tracing
_wrapped_fns_to_patch: List[Tuple[dict, str]] = []


def wrap(fn_or_name: Union[str, Callable]) -> Union[str, Callable]:
    """At module scope: record calls of this function as ``call_function`` nodes instead of
    tracing through it (needed for functions that use Python control flow or ``len``).

    >>> import ndgrad.fx as fx
    >>> def outside(x):
    ...     return x
    >>> fx.wrap(outside) is outside
    True
    """
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or "
                           "string name")
    if callable(fn_or_name):
        assert not isinstance(fn_or_name, str)
        fn_name = fn_or_name.__name__
    else:
        fn_name = fn_or_name
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    f = frame.f_back
    if f.f_code.co_name not in ("<module>", "<doctest>") and \
            not f.f_code.co_name.startswith("<doctest"):
        if f.f_globals is f.f_locals:
            pass
        else:
            raise NotImplementedError("wrap must be called at the top level of a module")
    if not any(g is f.f_globals and n == fn_name for g, n in _wrapped_fns_to_patch):
        _wrapped_fns_to_patch.append((f.f_globals, fn_name))
    return fn_or_name


class Tracer(TracerBase):
    """Turns a module or function into a Graph (see the module docstring)."""

    def __init__(self, autowrap_modules: Tuple[Any, ...] = (math,),
                 autowrap_functions: Tuple[Callable, ...] = (),
                 param_shapes_constant: bool = False) -> None:
        self._autowrap_functions = tuple(autowrap_functions)
        self._autowrap_check: Callable[[dict], None] = lambda d: None
        self._autowrap_function_ids = {id(f) for f in autowrap_functions}
        self._autowrap_modules = autowrap_modules
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: Optional[Dict[Any, str]] = None
        self.root: Any = None
        self.graph: Graph = Graph()
        self.tensor_attrs: Dict[int, str] = {}

    # ----------------------------------------------------------------- hooks for subclasses
    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        """Whether calls of ``m`` are recorded whole (ndgrad.nn's layers but Sequential)."""
        mod = type(m).__module__
        return (mod.startswith("ndgrad.nn") or mod.startswith("torch.nn")) and \
            not isinstance(m, nn.Sequential)

    def path_of_module(self, mod: nn.Module) -> str:
        """The qualified name of submodule ``mod`` in the root."""
        if self.submodule_paths is not None:
            path = self.submodule_paths.get(mod)
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError("module is not installed as a submodule")

    def call_module(self, m: nn.Module, forward: Callable[..., Any], args: Tuple,
                    kwargs: Dict[str, Any]) -> Any:
        """A call of submodule ``m``: one node for a leaf module, else traced through."""
        module_qualified_name = self.path_of_module(m)
        if not self.is_leaf_module(m, module_qualified_name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", module_qualified_name, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: Dict[str, Any]) -> Any:
        """What reading module attribute ``attr`` gives while tracing: a Proxy of a
        ``get_attr`` node for the root's parameters, else the value."""
        if isinstance(attr_val, nn.Parameter):
            for n, p in self.root.named_parameters():
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        factory = None
                        if self.param_shapes_constant:
                            def factory(node: Node, n: str = n, p: Any = p) -> Proxy:
                                return ParameterProxy(self, node, n, p)
                        parameter_proxy_cache[n] = self.create_proxy(
                            "get_attr", n, (), {}, proxy_factory_fn=factory)
                    return parameter_proxy_cache[n]
        return attr_val

    def create_arg(self, a: Any) -> Any:
        if isinstance(a, nn.Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.getattr(n, a, self._param_cache).node \
                        if hasattr(self, "_param_cache") else \
                        self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor):
            qualname = self.tensor_attrs.get(id(a))
            if qualname is None:
                i = 0
                while True:
                    qualname = f"_tensor_constant{i}"
                    if not hasattr(self.root, qualname):
                        break
                    i += 1
                self.tensor_attrs[id(a)] = qualname
                self._constants.append(a)
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        if isinstance(a, nn.Module):
            return self.create_node("get_attr", self.path_of_module(a), (), {})
        return super().create_arg(a)

    # ----------------------------------------------------------------- tracing
    def trace(self, root: Union[nn.Module, Callable[..., Any]],
              concrete_args: Optional[Dict[str, Any]] = None) -> Graph:
        """Trace ``root`` (a module's forward, or a function) into ``self.graph``."""
        if isinstance(root, nn.Module):
            self.root = root
            fn = type(root).forward
        else:
            self.root = nn.Module()
            fn = root
        self.graph = Graph(tracer_cls=getattr(self, "__class__", None))
        self._param_cache: Dict[str, Any] = {}
        self._constants: List[Any] = []
        self.tensor_attrs = {}
        for mname, m in self.root.named_modules():
            for k, v in vars(m).items():
                if isinstance(v, Tensor) and not isinstance(v, nn.Parameter):
                    self.tensor_attrs.setdefault(id(v), f"{mname}.{k}" if mname else k)
            for k, v in m._buffers.items():
                if v is not None:
                    self.tensor_attrs.setdefault(id(v), f"{mname}.{k}" if mname else k)
        self.submodule_paths = {m: n for n, m in self.root.named_modules()}

        args, kwargs = self._create_args_for_root(fn, isinstance(root, nn.Module),
                                                  concrete_args)
        tracer = self
        orig_call = nn.Module.__call__
        orig_getattr = nn.Module.__getattr__

        @functools.wraps(orig_call)
        def module_call_wrapper(mod: nn.Module, *a: Any, **kw: Any) -> Any:
            def forward(*a2: Any, **kw2: Any) -> Any:
                return orig_call(mod, *a2, **kw2)
            tracer._autowrap_check(getattr(getattr(mod, "forward", mod), "__globals__", {}))
            return tracer.call_module(mod, forward, a, kw)

        @functools.wraps(orig_getattr)
        def module_getattr_wrapper(mod: nn.Module, attr: str) -> Any:
            val = orig_getattr(mod, attr)
            return tracer.getattr(attr, val, tracer._param_cache)

        patched = self._patch_wrapped(getattr(fn, "__globals__", {}))
        nn.Module.__call__ = module_call_wrapper  # type: ignore[method-assign]
        nn.Module.__getattr__ = module_getattr_wrapper  # type: ignore[method-assign]
        try:
            if kwargs.pop("__flattened__", False):
                result = _flattened(fn)(*args)
            else:
                result = fn(*args)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=_annotation(fn, "return"))
        finally:
            nn.Module.__call__ = orig_call  # type: ignore[method-assign]
            nn.Module.__getattr__ = orig_getattr  # type: ignore[method-assign]
            for g, name, old, had in reversed(patched):
                if had:
                    g[name] = old
                else:
                    g.pop(name, None)
        self.submodule_paths = None
        return self.graph

    def _patch_wrapped(self, fn_globals: dict) -> list:
        """Replace the wrapped functions (``fx.wrap``'d names; the functions of the
        autowrap modules, ``math`` by default, in those modules and in the traced function's
        globals) by versions that record a call when given a Proxy. Returns what to undo."""
        patched: list = []
        tracer = self

        def make(orig: Callable, rewrap: bool) -> Callable:
            @functools.wraps(orig)
            def wrapped(*a: Any, **kw: Any) -> Any:
                found: List[Proxy] = []
                map_aggregate((a, kw), lambda v: found.append(v) if isinstance(
                    v, Proxy) else None)
                if found:
                    if rewrap:      # generated code wraps it again (its module's global)
                        tracer.graph._wrapped.add(orig)
                    return tracer.create_proxy("call_function", orig, a, kw)
                return orig(*a, **kw)
            return wrapped

        def patch(d: dict, name: str, orig: Callable, rewrap: bool) -> None:
            patched.append((d, name, d.get(name), name in d))
            d[name] = make(orig, rewrap)

        for g, name in _wrapped_fns_to_patch:
            orig = g[name] if name in g else getattr(builtins, name, None)
            if orig is not None:    # else the module that wrapped it no longer defines it
                patch(g, name, orig, True)
        auto = {id(f): f for f in self._autowrap_functions}
        for mod in self._autowrap_modules:
            auto.update({id(f): f for n, f in vars(mod).items()
                         if not n.startswith("_") and callable(f)})
        visited: set = set()

        def autowrap_check(d: dict) -> None:
            if id(d) in visited:
                return
            visited.add(id(d))
            for name, val in list(d.items()):
                if not name.startswith("_") and callable(val) and id(val) in auto:
                    patch(d, name, val, True)

        self._autowrap_check = autowrap_check
        autowrap_check(fn_globals)
        for mod in self._autowrap_modules:
            autowrap_check(vars(mod))
        return patched

    def _create_args_for_root(self, fn: Callable, is_module: bool,
                              concrete_args: Optional[Dict[str, Any]]) -> Tuple[list, dict]:
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        out: list = [self.root] if is_module else []
        kw_out: dict = {}
        if is_module:
            params = params[1:]
        concrete_args = dict(concrete_args or {})
        by_kind: Dict[Any, list] = {}
        for p in params:
            by_kind.setdefault(p.kind, []).append(self._root_arg(p, fn, concrete_args))
        if concrete_args:
            raise TypeError(f"{fn.__name__}() got unexpected concrete arguments "
                            f"{list(concrete_args)}")
        K = inspect.Parameter
        out += by_kind.get(K.POSITIONAL_ONLY, []) + by_kind.get(K.POSITIONAL_OR_KEYWORD, [])
        rest = by_kind.get(K.KEYWORD_ONLY, []) + by_kind.get(K.VAR_POSITIONAL, []) + \
            by_kind.get(K.VAR_KEYWORD, [])
        if rest:
            out += rest
            kw_out["__flattened__"] = True
        return out, kw_out

    def _root_arg(self, p: inspect.Parameter, fn: Callable, concrete_args: Dict[str, Any]
                  ) -> Any:
        """The value parameter ``p`` of the traced function gets (a placeholder's Proxy, or
        the concrete value)."""
        if p.kind == inspect.Parameter.VAR_POSITIONAL:
            return self.create_proxy("placeholder", "*" + p.name, (), {})
        if p.kind == inspect.Parameter.VAR_KEYWORD:
            return self.create_proxy("placeholder", "**" + p.name, (), {})
        default = () if p.default is inspect.Parameter.empty else (p.default,)
        if p.name in concrete_args:
            value = concrete_args.pop(p.name)
            if isinstance(value, _PH):
                return self.create_proxy("placeholder", p.name, default, {})
            # an input of the graph, checked to have the value the trace assumed
            self.graph._graph_namespace._used.add(p.name)
            ph = self.create_proxy("placeholder", p.name, default, {})
            ph.node.target = ph.node.name
            msg = f"{p.name} has been specialized to have value {value} but got another value"
            if value is None:
                self.create_proxy("call_function", _assert_is_none, (ph, msg), {})
            else:
                eq = self.create_proxy("call_function", operator.eq, (ph, value), {})
                self.create_proxy("call_function", _control_flow._assert, (eq, msg), {})
            return value
        return self.create_proxy("placeholder", p.name, default, {},
                                 type_expr=_annotation(fn, p.name))


def _annotation(fn: Callable, name: str) -> Any:
    """The annotation the graph records for a parameter (or the return value) of the traced
    function; none for ndgrad's own modules (torch's carry no annotations)."""
    if getattr(fn, "__module__", "").startswith("ndgrad."):
        return None
    return getattr(fn, "__annotations__", {}).get(name, None)


def _flattened(fn: Callable) -> Callable:
    """``fn`` as a function of positional parameters only, in its code's order (positional,
    keyword-only, ``*args``, ``**kwargs``): the traced function receives the Proxies of its
    ``*args`` and ``**kwargs`` whole, as torch's tracer passes them."""
    code = fn.__code__
    flags = code.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    total = code.co_argcount + code.co_kwonlyargcount + \
        bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    new_code = code.replace(co_argcount=total, co_posonlyargcount=0, co_kwonlyargcount=0,
                            co_flags=flags)
    return types.FunctionType(new_code, fn.__globals__, fn.__name__, None, fn.__closure__)


def _assert_is_none(value: Any, msg: str) -> None:
    assert value is None, msg


def symbolic_trace(root: Union[nn.Module, Callable[..., Any]],
                   concrete_args: Optional[Dict[str, Any]] = None) -> Any:
    """Trace ``root`` and return a GraphModule that runs the recorded graph.

    >>> import ndgrad, ndgrad.fx as fx
    >>> def f(x, y):
    ...     return ndgrad.relu(x + y).sum()
    >>> print(fx.symbolic_trace(f).code.strip())
    def forward(self, x, y):
        add = x + y;  x = y = None
        relu = torch.relu(add);  add = None
        sum_1 = relu.sum();  relu = None
        return sum_1
    """
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, nn.Module) else root.__name__
    return GraphModule(tracer.root, graph, name)

