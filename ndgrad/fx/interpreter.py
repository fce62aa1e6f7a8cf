"""``Interpreter`` and ``Transformer`` (torch.fx's): run a GraphModule's graph node by node,
one overridable method per opcode (``placeholder``, ``get_attr``, ``call_function``,
``call_method``, ``call_module``, ``output``); a Transformer runs them on Proxies to build a
new graph.

Example:
    >>> import operator
    >>> import ndgrad, ndgrad.fx as fx
    >>> class NegAdds(fx.Interpreter):
    ...     def call_function(self, target, args, kwargs):
    ...         if target is operator.add:
    ...             return operator.sub(*args)
    ...         return super().call_function(target, args, kwargs)
    >>> gm = fx.symbolic_trace(lambda x: x + 1)
    >>> NegAdds(gm).run(ndgrad.tensor([5.0]))
    tensor([4.])
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, Optional, Tuple

from .. import nn
from ._symbolic_trace import Tracer
from .graph import Graph
from .graph_module import GraphModule
from .node import Argument, Node, Target, map_aggregate, map_arg
from .proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Runs a GraphModule's graph node by node (see the module docstring)."""

    def __init__(self, module: nn.Module, garbage_collect_values: bool = True,
                 graph: Optional[Graph] = None) -> None:
        self.module = module
        self.submodules = dict(self.module.named_modules())
        self.graph = graph if graph is not None else self.module.graph
        self.env: Dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            node_to_last_use: Dict[Node, Node] = {}
            self.user_to_last_uses: Dict[Node, list] = {}

            def register(n: Node, user: Node) -> None:
                if n not in node_to_last_use:
                    node_to_last_use[n] = user
                    self.user_to_last_uses.setdefault(user, []).append(n)

            for node in reversed(list(self.graph.nodes)):
                for n in node._input_nodes:
                    register(n, node)

    def run(self, *args: Any, initial_env: Optional[Dict[Node, Any]] = None,
            enable_io_processing: bool = True) -> Any:
        """Run the graph on ``args``; returns what its output node returns."""
        self.env = initial_env if initial_env is not None else {}
        self.args_iter: Iterator[Any] = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback and hasattr(e, "add_note"):
                    e.add_note(f"While executing {node.format_node()}")
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n: Node) -> Any:
        """Run one node: fetch its arguments from the environment and call the method named
        by its opcode."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        assert isinstance(args, tuple) and isinstance(kwargs, dict)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ----------------------------------------------------------------- opcodes
    def placeholder(self, target: Target, args: Tuple[Argument, ...],
                    kwargs: Dict[str, Any]) -> Any:
        assert isinstance(target, str)
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one "
                               "was not passed in!") from si

    def get_attr(self, target: Target, args: Tuple[Argument, ...],
                 kwargs: Dict[str, Any]) -> Any:
        assert isinstance(target, str)
        return self.fetch_attr(target)

    def call_function(self, target: Target, args: Tuple[Argument, ...],
                      kwargs: Dict[str, Any]) -> Any:
        assert not isinstance(target, str)
        return target(*args, **kwargs)

    def call_method(self, target: Target, args: Tuple[Argument, ...],
                    kwargs: Dict[str, Any]) -> Any:
        self_obj, *args_tail = args
        assert isinstance(target, str)
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target: Target, args: Tuple[Argument, ...],
                    kwargs: Dict[str, Any]) -> Any:
        assert isinstance(target, str)
        submod = self.fetch_attr(target)
        return submod(*args, **kwargs)

    def output(self, target: Target, args: Tuple[Argument, ...],
               kwargs: Dict[str, Any]) -> Any:
        return args[0]

    # ----------------------------------------------------------------- helpers
    def fetch_attr(self, target: str) -> Any:
        """The attribute at dotted path ``target`` of the module."""
        atoms = target.split(".")
        attr_itr: Any = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(attr_itr, atom):
                raise RuntimeError(f"Node referenced nonexistent target "
                                   f"{'.'.join(atoms[:i + 1])}")
            attr_itr = getattr(attr_itr, atom)
        return attr_itr

    def fetch_args_kwargs_from_env(self, n: Node) -> Tuple[Tuple, Dict]:
        """``n``'s args and kwargs with every node replaced by its value."""
        args = self.map_nodes_to_values(n.args, n)
        kwargs = self.map_nodes_to_values(n.kwargs, n)
        return args, kwargs

    def map_nodes_to_values(self, args: Argument, n: Node) -> Argument:
        """``args`` with every node replaced by its computed value."""
        def load_arg(n_arg: Node) -> Any:
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run "
                                   "Graph.lint() to diagnose such issues")
            return self.env[n_arg]
        return map_arg(args, load_arg)


class _TransformerTracer(Tracer):
    def __init__(self, graph: Graph, root: nn.Module) -> None:
        super().__init__()
        self.graph = graph
        self.root = root
        self.tensor_attrs = {}
        self._constants = []
        self._param_cache = {}

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        return True


class Transformer(Interpreter):
    """An Interpreter that runs the graph on Proxies, so that its (overridden) opcode methods
    build a new graph; ``transform()`` returns it as a GraphModule."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph, module)

    def placeholder(self, target: Target, args: Tuple[Argument, ...],
                    kwargs: Dict[str, Any]) -> Proxy:
        assert isinstance(target, str)
        default = next(iter(args)) if args else _EMPTY
        import inspect
        node = self.new_graph.placeholder(
            target, default_value=inspect.Signature.empty if default is _EMPTY else default)
        return Proxy(node, self.tracer)

    def get_attr(self, target: Target, args: Tuple[Argument, ...],
                 kwargs: Dict[str, Any]) -> Proxy:
        assert isinstance(target, str)
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: Target, args: Tuple[Argument, ...],
                    kwargs: Dict[str, Any]) -> Any:
        assert isinstance(target, str)
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target: Target, args: Tuple[Argument, ...],
                      kwargs: Dict[str, Any]) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self) -> GraphModule:
        """The new graph, as a GraphModule over the same module."""
        self.tracer.submodule_paths = {m: n for n, m in self.module.named_modules()}
        result = super().run(enable_io_processing=False)
        if result is not None:
            def strip_proxy(a: Any) -> Any:
                return a.node if isinstance(a, Proxy) else a
            self.new_graph.output(map_aggregate(result, strip_proxy))
        return GraphModule(self.module, self.new_graph)


_EMPTY = object()
