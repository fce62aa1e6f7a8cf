"""FX nodes: one operation of a ``Graph`` (``torch.fx.Node``).

A node has an ``op`` (``placeholder``, ``get_attr``, ``call_function``, ``call_method``,
``call_module`` or ``output``), a ``target`` (the argument name, the attribute path, the
callable, the method name or the submodule path), ``args``/``kwargs`` in which other nodes
appear, a unique ``name``, its ``users`` (the nodes whose arguments mention it) and a ``meta``
dict for passes. Nodes live in their graph's doubly linked list (``prev``/``next``).

Example:
    >>> import ndgrad.fx as fx
    >>> g = fx.Graph()
    >>> x = g.placeholder("x")
    >>> y = g.call_function(abs, (x,))
    >>> list(x.users), y.args
    ([abs_1], (x,))
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

import ndgrad

from ._names import public_name, qualified_name

__all__ = ["Node", "map_arg", "map_aggregate", "Argument", "Target"]

Argument = Any
Target = Any

_OPCODES = ("placeholder", "call_method", "call_module", "call_function", "get_attr",
            "output", "root")


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Apply ``fn`` to every value inside nested tuples, lists, dicts and slices.

    >>> map_aggregate((1, [2, {"k": 3}]), lambda v: v * 10)
    (10, [20, {'k': 30}])
    """
    if isinstance(a, tuple):
        t = tuple(map_aggregate(e, fn) for e in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return [map_aggregate(e, fn) for e in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[["Node"], Argument]) -> Argument:
    """Apply ``fn`` to every Node inside ``a`` (other values kept).

    >>> map_arg((1, "s"), lambda n: n)
    (1, 's')
    """
    assert callable(fn), "torch.fx.map_arg(a, fn): fn must be a callable"
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _qualified_name(func: Any) -> str:
    """The dotted name by which generated code and graph text name ``func``."""
    return qualified_name(func)


# functions dead-code elimination keeps (``has_side_effect``)
_side_effectful: set = set()


def _format_arg(arg: Any, max_list_len: float = float("inf")) -> str:
    if hasattr(arg, "_custom_fx_repr_fn"):
        return arg._custom_fx_repr_fn()
    if isinstance(arg, list):
        items = ", ".join(_format_arg(a) for idx, a in enumerate(arg) if idx < max_list_len)
        extra = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        return f"[{items}{extra}]"
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for idx, a in enumerate(arg) if idx < max_list_len)
        extra = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        maybe_comma = "," if len(arg) == 1 else ""
        return f"({items}{maybe_comma}{extra})"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


class Node:
    """One operation of a Graph (see the module docstring)."""

    def __init__(self, graph: Any, name: str, op: str, target: Target, args: Tuple,
                 kwargs: Dict[str, Any], return_type: Optional[Any] = None) -> None:
        if op not in _OPCODES:
            raise ValueError(f"Unknown opcode {op}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target)} but a Callable is expected")
        if op in ("call_method", "call_module", "get_attr", "placeholder", "output") and \
                not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: Dict[Node, None] = {}
        self.users: Dict[Node, None] = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta: Dict[str, Any] = {}
        self._args: Tuple = ()
        self._kwargs: Dict[str, Any] = {}
        self._update_args_kwargs(args, kwargs)

    # ----------------------------------------------------------------- linked list
    @property
    def next(self) -> "Node":
        return self._next

    @property
    def prev(self) -> "Node":
        return self._prev

    def prepend(self, x: "Node") -> None:
        """Move ``x`` just before this node."""
        assert self.graph == x.graph, "Attempting to move a Node into a different Graph"
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: "Node") -> None:
        """Move ``x`` just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # ----------------------------------------------------------------- arguments
    @property
    def args(self) -> Tuple:
        return self._args

    @args.setter
    def args(self, a: Tuple) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> Dict[str, Any]:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: Dict[str, Any]) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list:
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx: int, arg: Argument) -> None:
        args = list(self.args)
        args.insert(idx, arg)
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args: Any, new_kwargs: Any) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        self._args = tuple(map_arg(tuple(new_args), self._track))
        self._kwargs = dict(map_arg(dict(new_kwargs), self._track))
        for n in self._input_nodes:
            n.users.setdefault(self)

    def _track(self, n: "Node") -> "Node":
        self._input_nodes.setdefault(n)
        return n

    # ----------------------------------------------------------------- rewriting
    def replace_all_uses_with(self, replace_with: "Node",
                              delete_user_cb: Callable[["Node"], bool] = lambda user: True,
                              *, propagate_meta: bool = False) -> list:
        """Make every user of this node use ``replace_with`` instead; returns the users
        changed."""
        if propagate_meta:
            assert len(replace_with.meta) == 0, \
                "Called node.replace_all_uses_with(replace_with, propagate_meta=True), but " \
                "replace_with already has .meta keys"
            replace_with.meta.update(self.meta)
        to_process = list(self.users)
        skipped = []
        for use in to_process:
            if not delete_user_cb(use):
                skipped.append(use)
                continue
            use.replace_input_with(self, replace_with)
        return [u for u in to_process if u not in skipped]

    def replace_input_with(self, old_input: "Node", new_input: "Node") -> None:
        """Use ``new_input`` wherever this node's arguments mention ``old_input``."""
        def swap(n: Node) -> Node:
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def is_impure(self) -> bool:
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_module" and self.graph.owning_module is not None:
            mod = self.graph.owning_module.get_submodule(self.target)
            return bool(getattr(mod, "_is_impure", False))
        if self.op == "call_method" and isinstance(self.target, str) and \
                self.target.endswith("_") and not self.target.endswith("__"):
            return True
        if self.op == "call_function":
            return self.target in _side_effectful
        return False

    def __getstate__(self) -> dict:
        # ndgrad's public functions pickle by their public path (the checking wrappers are not
        # importable by their qualified names)
        state = dict(self.__dict__)
        if self.op == "call_function":
            pub = public_name(self.target)
            if pub is not None:
                state["target"] = _PublicFunction(pub)
        return state

    def __setstate__(self, state: dict) -> None:
        if isinstance(state.get("target"), _PublicFunction):
            state["target"] = state["target"].resolve()
        self.__dict__.update(state)

    # ----------------------------------------------------------------- printing
    def __repr__(self) -> str:
        return self.name

    def _pretty_print_target(self, target: Any) -> str:
        if isinstance(target, str):
            return target
        if hasattr(target, "__module__"):
            name = getattr(target, "__name__", None)
            if name is None:
                return _qualified_name(target)
            if target.__module__ == "builtins":
                return f"builtins.{name}"
            if target.__module__ == "_operator":
                return f"operator.{name}"
        return _qualified_name(target)

    def format_node(self, placeholder_names: Optional[list] = None,
                    maybe_return_typename: Optional[list] = None) -> Optional[str]:
        """This node as a line of the graph's text (``%name : [...] = op[target=...](...)``);
        None for a placeholder when ``placeholder_names`` collects them."""
        if self.op == "placeholder":
            assert isinstance(self.target, str)
            arg_str = self.target
            if self.args:
                arg_str += f" = {self.args[0]!r}"
            if placeholder_names is not None:
                placeholder_names.append(arg_str)
                return None
            default = f"(default={self.args[0]})" if self.args else ""
            return f"%{self.name} : {self._type_str()}[num_users={len(self.users)}] = " \
                   f"{self.op}[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"%{self.name} : {self._type_str()}[num_users={len(self.users)}] = " \
                   f"{self.op}[target={self._pretty_print_target(self.target)}]"
        if self.op == "output":
            return f"return {self.args[0]}"
        return f"%{self.name} : {self._type_str()}[num_users={len(self.users)}] = " \
               f"{self.op}[target={self._pretty_print_target(self.target)}](args = " \
               f"{_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})"

    def _type_str(self) -> str:
        if self.type is None:
            return ""
        t = self.type
        if isinstance(t, str):
            return f"{t!r} "
        if getattr(t, "__origin__", None) is not None:
            return str(t).replace("ndgrad.tensor.Tensor", "torch.Tensor") + " "
        name = getattr(t, "__qualname__", None) or str(t)
        mod = getattr(t, "__module__", "builtins")
        return (name if mod == "builtins" else f"{_public_module(mod)}.{name}") + " "


class _PublicFunction:
    """A pickled reference to one of ndgrad's public functions (``torch.<path>``)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def resolve(self) -> Any:
        obj: Any = ndgrad
        for atom in self.path.split(".")[1:]:
            obj = getattr(obj, atom)
        return obj


def _public_module(mod: str) -> str:
    return "torch" if mod.startswith("ndgrad") else mod


# Python operators that generated code spells with their symbol.
MAGIC_METHODS = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
    "truediv": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
    "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}", "or_": "{} | {}",
    "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
}
COMPARISONS = {"eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}",
               "le": "{} <= {}", "ge": "{} >= {}"}
UNARY = {"neg": "-{}", "pos": "+{}", "invert": "~{}"}
