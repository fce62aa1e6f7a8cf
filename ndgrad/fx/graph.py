"""FX graphs (``torch.fx.Graph``): a list of Nodes, the Python code they stand for, and the
editing operations passes use (create, insert, erase, dead-code elimination, lint).

Example:
    >>> import operator
    >>> import ndgrad, ndgrad.fx as fx
    >>> g = fx.Graph()
    >>> x = g.placeholder("x")
    >>> y = g.call_function(operator.add, (x, 1))
    >>> _ = g.output(g.call_function(ndgrad.relu, (y,)))
    >>> print(g)
    graph():
        %x : [num_users=1] = placeholder[target=x]
        %add : [num_users=1] = call_function[target=operator.add](args = (%x, 1), kwargs = {})
        %relu : [num_users=1] = call_function[target=torch.relu](args = (%add,), kwargs = {})
        return relu
"""

from __future__ import annotations

import builtins
import inspect
import keyword
import re
import typing
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import ndgrad

from ._names import public_name, qualified_name
from .node import COMPARISONS, MAGIC_METHODS, UNARY, Node, map_arg

__all__ = ["Graph", "PythonCode"]

_ILLEGAL = set(keyword.kwlist) | set(dir(builtins)) | {"self", "torch", "inf", "nan",
                                                       "NoneType"}
_SUFFIX = re.compile(r"(.*)_(\d+)$")
_OPERATOR_FORMAT = {**MAGIC_METHODS, **COMPARISONS, **UNARY}
# in-place operators: ``x += 1;  iadd = x``
_INPLACE = {"iadd": "+", "isub": "-", "imul": "*", "itruediv": "/", "ifloordiv": "//",
            "imod": "%", "ipow": "**", "iand": "&", "ior": "|", "ixor": "^", "ilshift": "<<",
            "irshift": ">>", "imatmul": "@"}


def _snake_case(s: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", s).lower()


class _Namespace:
    """Unique Python identifiers for a graph's nodes (``add``, ``add_1`` ...)."""

    def __init__(self) -> None:
        self._used: set = set()
        self._base_count: Dict[str, int] = {}
        self._obj_to_name: Dict[Any, str] = {}

    def create_name(self, candidate: str, obj: Optional[Any]) -> str:
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        candidate = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate)
        if not candidate:
            candidate = "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        m = _SUFFIX.match(candidate)
        if m is None:
            base, num = candidate, None
        else:
            base, num = m.group(1), int(m.group(2))
        if num is None and candidate not in self._used and candidate not in _ILLEGAL:
            name = candidate
        else:
            if num is not None and candidate not in self._used and base not in _ILLEGAL:
                name = candidate
            else:
                n = self._base_count.get(base, 0)
                while True:
                    n += 1
                    name = f"{base}_{n}"
                    if name not in self._used:
                        break
                self._base_count[base] = n
        self._used.add(name)
        if obj is not None:
            self._obj_to_name[obj] = name
        return name

    def associate_name_with_obj(self, name: str, obj: Any) -> None:
        self._obj_to_name[obj] = name

    def _rename_object(self, obj: Any, name: str) -> None:
        self._obj_to_name[obj] = name


class PythonCode:
    """Generated source of a graph and the globals it needs."""

    def __init__(self, src: str, globals_: Dict[str, Any]) -> None:
        self.src = src
        self.globals = globals_


class _InsertPoint:
    def __init__(self, graph: "Graph", new_insert: Callable) -> None:
        self.graph, self.new = graph, new_insert

    def __enter__(self) -> None:
        self.orig, self.graph._insert = self.graph._insert, self.new

    def __exit__(self, *exc: Any) -> None:
        self.graph._insert = self.orig


class _NodeList:
    def __init__(self, graph: "Graph", direction: str = "_next") -> None:
        self.graph, self.direction = graph, direction

    def __len__(self) -> int:
        return self.graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self.graph._root
        cur = getattr(root, self.direction)
        while cur is not root:
            nxt = getattr(cur, self.direction)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self.graph, "_prev" if self.direction == "_next" else "_next"))

    def __repr__(self) -> str:
        return repr(list(self))


def _format_target(base: str, target: str) -> str:
    out = base
    for atom in target.split("."):
        if atom.isidentifier():
            out = f"{out}.{atom}"
        else:
            out = f'getattr({out}, "{atom}")'
    return out


class Graph:
    """A list of Nodes (see the module docstring)."""

    def __init__(self, owning_module: Optional[Any] = None, tracer_cls: Optional[type] = None,
                 tracer_extras: Optional[dict] = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._used_names: Dict[str, int] = {}
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._wrapped: set = set()      # functions fx.wrap'd in their module's globals

    def __getstate__(self) -> dict:
        # the owning module refers back to the graph; whoever restores the graph owns it
        state = dict(self.__dict__)
        state["_owning_module"] = None
        state["_tracer_cls"] = None
        return state

    @property
    def owning_module(self) -> Optional[Any]:
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod: Optional[Any]) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Any = None, sort: bool = True) -> List[Node]:
        """The nodes with this op (and target)."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ----------------------------------------------------------------- building
    def create_node(self, op: str, target: Any, args: Optional[Tuple] = None,
                    kwargs: Optional[Dict[str, Any]] = None, name: Optional[str] = None,
                    type_expr: Optional[Any] = None) -> Node:
        """A new node at the insertion point (the end of the graph, or where
        ``inserting_before/after`` says)."""
        assert op in ("call_function", "call_method", "get_attr", "call_module",
                      "placeholder", "output")
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        assert isinstance(args, tuple), "args must be a tuple"
        assert isinstance(kwargs, dict), "kwargs must be a dict"
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    def _target_to_str(self, target: Any) -> str:
        if callable(target) and not isinstance(target, str):
            op = getattr(target, "__name__", None) or type(target).__name__
        else:
            op = str(target)
            if op.startswith("__") and op.endswith("__") and len(op) > 4:
                op = op[2:-2]
        return _snake_case(op)

    def placeholder(self, name: str, type_expr: Optional[Any] = None,
                    default_value: Any = inspect.Signature.empty) -> Node:
        """An input of the graph named ``name`` (with a default value if given)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Optional[Any] = None) -> Node:
        """A node reading attribute ``qualified_name`` of the owning module."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: Optional[Tuple] = None,
                    kwargs: Optional[Dict[str, Any]] = None,
                    type_expr: Optional[Any] = None) -> Node:
        """A node calling submodule ``module_name``."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: Optional[Tuple] = None,
                    kwargs: Optional[Dict[str, Any]] = None,
                    type_expr: Optional[Any] = None) -> Node:
        """A node calling method ``method_name`` on ``args[0]``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: Optional[Tuple] = None,
                      kwargs: Optional[Dict[str, Any]] = None,
                      type_expr: Optional[Any] = None) -> Node:
        """A node calling ``the_function``."""
        return self.create_node("call_function", the_function, args, kwargs,
                                type_expr=type_expr)

    def output(self, result: Any, type_expr: Optional[Any] = None) -> Node:
        """The output node returning ``result``."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Any] = lambda x: x) -> Node:
        """A copy of ``node`` (from any graph) here, its node arguments mapped by
        ``arg_transform``."""
        if node.op == "call_function" and node.target in node.graph._wrapped:
            self._wrapped.add(node.target)
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g: "Graph", val_map: Dict[Node, Node], return_output_node: bool = False
                   ) -> Any:
        """Copy every node of ``g`` but its output here; returns what the output returned."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    # ----------------------------------------------------------------- editing
    def inserting_before(self, n: Optional[Node] = None) -> _InsertPoint:
        """``with graph.inserting_before(n):`` new nodes go just before ``n`` (the start of
        the graph when None)."""
        if n is None:
            return self.inserting_after(self._root)
        assert n.graph is self, "Node to insert before is not in graph."
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Optional[Node] = None) -> _InsertPoint:
        """``with graph.inserting_after(n):`` new nodes go just after ``n`` (the end of the
        graph when None)."""
        if n is None:
            return self.inserting_before(self._root)
        assert n.graph is self, "Node to insert after is not in graph."
        return _InsertPoint(self, n.append)

    def erase_node(self, to_erase: Node) -> None:
        """Remove a node that has no users."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            import warnings
            warnings.warn(f"erase_node({to_erase}) on an already erased node", stacklevel=2)
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def eliminate_dead_code(self, is_impure_node: Optional[Callable[[Node], bool]] = None
                            ) -> bool:
        """Erase nodes without users that have no side effects; True if any was."""
        self.lint()
        changed = False
        for node in reversed(list(self.nodes)):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph's invariants: names unique, every argument defined before use and
        in this graph, users consistent; targets of get_attr/call_module exist when the
        graph has an owning module."""
        seen_names: set = set()
        seen_values: set = set()
        for node in self.nodes:
            if node.op not in ("placeholder", "call_method", "call_module", "call_function",
                               "get_attr", "output"):
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to "
                                       "this Graph, but was used as an argument! If you are "
                                       "copying nodes from another graph, make sure to use "
                                       "``arg_transform`` on node_copy() to remap values\n"
                                       f"{self}")
                if arg not in seen_values:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it "
                                       "has been defined! Please check that Nodes in the graph "
                                       "are topologically ordered\n" + str(self))
                if node not in arg.users:
                    raise RuntimeError(f"Node '{node}' is not a user of its argument '{arg}'")
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
            seen_values.add(node)
        mod = self.owning_module
        if mod is None:
            return
        for node in self.nodes:
            if node.op in ("get_attr", "call_module"):
                path = node.target.split(".")
                obj = mod
                for i, atom in enumerate(path):
                    if not hasattr(obj, atom):
                        seen = ".".join(path[:i])
                        raise RuntimeError(f"Node {node} target {node.target} references "
                                           f"nonexistent attribute {atom} of {seen}")
                    obj = getattr(obj, atom)

    # ----------------------------------------------------------------- printing
    def __str__(self) -> str:
        lines = []
        for n in self.nodes:
            s = n.format_node()
            if s is not None:
                lines.append("    " + s)
        return "graph():\n" + "\n".join(lines)

    def print_tabular(self) -> None:
        """Print the nodes as a table: opcode, name, target, args, kwargs (laid out as the
        ``tabulate`` package's "simple" format that torch uses, without needing it)."""
        rows = [[n.op, n.name, str(n.target), str(n.args), str(n.kwargs)] for n in self.nodes]
        headers = ["opcode", "name", "target", "args", "kwargs"]
        widths = [max([len(h) + 2] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

        def line(cells: List[str]) -> str:
            return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

        out = [line(headers), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]
        print("\n".join(out))

    # ----------------------------------------------------------------- code
    def python_code(self, root_module: str = "self", *, verbose: bool = False,
                    include_stride: bool = False, include_device: bool = False,
                    colored: bool = False) -> PythonCode:
        """The graph as the source of ``def forward(self, ...)`` and its globals."""
        globals_: Dict[str, Any] = {"inf": float("inf"), "nan": float("nan")}
        namespace = _Namespace()
        for n in self.nodes:
            namespace._used.add(n.name)

        def add_global(hint: str, obj: Any) -> str:
            if obj is ndgrad:
                globals_["torch"] = obj
                return "torch"
            pub = public_name(obj)
            if pub is not None:
                globals_["torch"] = ndgrad
                return pub
            mod = getattr(obj, "__module__", None)
            if isinstance(mod, str) and mod.startswith("ndgrad.") and \
                    _resolves(ndgrad, mod, getattr(obj, "__qualname__", ""), obj):
                globals_["torch"] = ndgrad
                return qualified_name(obj)
            bname = getattr(obj, "__name__", "")
            if mod == "builtins" and getattr(builtins, bname, None) is obj:
                return str(bname)
            for name, val in globals_.items():
                if val is obj:
                    return name
            name = namespace.create_name(hint, None)
            globals_[name] = obj
            return name

        def fmt(a: Any) -> str:
            return _repr_arg(a, add_global)

        def type_repr(t: Any) -> str:
            if isinstance(t, str):
                return add_global(repr(t), t)
            if t is None or t is type(None):
                return add_global("NoneType", type(None))
            if t is ndgrad.Tensor:
                add_global("torch", ndgrad)
                return "torch.Tensor"
            origin = getattr(t, "__origin__", None)
            if origin is not None:
                name = "Union" if origin is typing.Union else str(
                    getattr(t, "_name", None) or getattr(origin, "__name__", "Any"))
                head = add_global(f"typing_{name}", getattr(typing, name, origin))
                return f"{head}[{','.join(type_repr(a) for a in t.__args__)}]"
            if getattr(t, "__module__", "") == "builtins":
                return t.__name__
            return add_global(getattr(t, "__name__", "T"), t)

        def fmt_args(args: Tuple, kwargs: Dict[str, Any]) -> str:
            parts = [fmt(a) for a in args] + [f"{k} = {fmt(v)}" for k, v in kwargs.items()]
            return ", ".join(parts)

        # which values die at each node: the last user of every value frees it
        last_use: Dict[Node, Node] = {}
        user_to_last: Dict[Node, List[Node]] = {}
        for node in reversed(list(self.nodes)):
            for arg in _arg_nodes(node):
                if arg not in last_use:
                    last_use[arg] = node
                    user_to_last.setdefault(node, []).append(arg)

        free_vars: List[str] = []
        body: List[str] = []
        maybe_return = ""
        wrap_stmts: List[str] = []
        for node in self.nodes:
            if node.op == "placeholder":
                s = node.target
                if s.startswith("*"):
                    free_vars.append(s)
                    body.append(f"{node.name} = {s.lstrip('*')}")
                    continue
                if node.type is not None:
                    s += f" : {type_repr(node.type)}"
                s += _annotation(node, verbose)
                if node.args:
                    s += f" = {fmt(node.args[0])}"
                free_vars.append(s)
                if node.name != node.target:
                    body.append(f"{node.name} = {node.target}")
                continue
            if node.op == "output":
                if node.type is not None:
                    maybe_return = f" -> {type_repr(node.type)}"
                body.append(f"return {fmt(node.args[0])}")
                continue
            if node.op == "get_attr":
                expr = _format_target(root_module, node.target)
            elif node.op == "call_module":
                expr = f"{_format_target(root_module, node.target)}" \
                       f"({fmt_args(node.args, node.kwargs)})"
            elif node.op == "call_method":
                expr = f"{fmt(node.args[0])}.{node.target}" \
                       f"({fmt_args(node.args[1:], node.kwargs)})"
            else:
                expr = self._call_function_code(node, fmt, fmt_args, add_global, wrap_stmts)
            line = f"{node.name}{_annotation(node, verbose)} = {expr}"
            sym = _INPLACE.get(getattr(node.target, "__name__", "")) \
                if node.op == "call_function" and \
                getattr(node.target, "__module__", None) == "_operator" else None
            if sym is not None and len(node.args) == 2 and not node.kwargs:
                target = fmt(node.args[0])
                line = f"{target} {sym}= {fmt(node.args[1])};  {node.name} = {target}"
            dead = [n.name for n in user_to_last.get(node, [])]
            if not node.users:
                dead.append(node.name)
            if dead:
                line += ";  " + " = ".join(dead) + " = None"
            body.append(line)
        if not any(n.op == "output" for n in self.nodes):
            body.append("pass")
        code = "\n".join("    " + b for b in body)
        sig = ", ".join(["self"] + free_vars)
        wraps = "\n".join(dict.fromkeys(wrap_stmts))
        src = f"\n{wraps}\n\ndef forward({sig}){maybe_return}:\n{code}\n    "
        return PythonCode(src, globals_)

    def _call_function_code(self, node: Node, fmt: Callable, fmt_args: Callable,
                            add_global: Callable, wrap_stmts: List[str]) -> str:
        t = node.target
        mod = getattr(t, "__module__", None)
        name = getattr(t, "__name__", "")
        if mod == "_operator" and name in _OPERATOR_FORMAT and not node.kwargs:
            pattern = _OPERATOR_FORMAT[name]
            if pattern.count("{}") == len(node.args):
                if name == "getitem":
                    return f"{fmt(node.args[0])}[{fmt(node.args[1])}]"
                return pattern.format(*(fmt(a) for a in node.args))
        if t is getattr and len(node.args) == 2 and isinstance(node.args[1], str) and \
                node.args[1].isidentifier() and not node.kwargs:
            return f"{fmt(node.args[0])}.{node.args[1]}"
        fname = add_global(qualified_name(t), t)
        if t in self._wrapped:
            wrap_stmts.append(f'torch.fx._symbolic_trace.wrap("{fname}")')
            add_global("torch", ndgrad)
        return f"{fname}({fmt_args(node.args, node.kwargs)})"


_DTYPE_ABBR = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
               "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
               "bool": "b8", "complex64": "c64", "complex128": "c128", "uint16": "u16",
               "uint32": "u32", "uint64": "u64"}


def _annotation(node: Node, verbose: bool) -> str:
    """``: "f32[2, 3]"`` for a node whose result ShapeProp recorded (verbose code only)."""
    meta = node.meta.get("tensor_meta") if verbose else None
    if meta is None or not hasattr(meta, "dtype") or not hasattr(meta, "shape"):
        return ""
    abbr = _DTYPE_ABBR.get(str(meta.dtype).split(".")[-1], str(meta.dtype))
    return f': "{abbr}[{", ".join(str(d) for d in meta.shape)}]"'


def _resolves(root: Any, mod: str, qual: str, obj: Any) -> bool:
    cur = root
    for atom in mod.split(".")[1:] + qual.split("."):
        cur = getattr(cur, atom, None)
        if cur is None:
            return False
    return cur is obj


def _arg_nodes(node: Node) -> List[Node]:
    out: List[Node] = []

    def collect(n: Node) -> Node:
        out.append(n)
        return n

    map_arg(node.args, collect)
    map_arg(node.kwargs, collect)
    seen: List[Node] = []
    for n in out:
        if n not in seen:
            seen.append(n)
    return seen


def _repr_arg(a: Any, add_global: Callable[[str, Any], str]) -> str:
    if isinstance(a, Node):
        return a.name
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        name = add_global(type(a).__name__, type(a))
        return f"{name}({', '.join(_repr_arg(e, add_global) for e in a)})"
    if isinstance(a, tuple):
        items = ", ".join(_repr_arg(e, add_global) for e in a)
        return f"({items},)" if len(a) == 1 else f"({items})"
    if isinstance(a, list):
        return "[" + ", ".join(_repr_arg(e, add_global) for e in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {_repr_arg(v, add_global)}" for k, v in a.items()) + "}"
    if isinstance(a, slice):
        return f"slice({_repr_arg(a.start, add_global)}, {_repr_arg(a.stop, add_global)}, " \
               f"{_repr_arg(a.step, add_global)})"
    if isinstance(a, ndgrad.dtype):
        add_global("torch", ndgrad)
        return f"torch.{str(a).split('.')[-1]}"
    if isinstance(a, ndgrad.device):
        add_global("device", ndgrad.device)
        return repr(a)
    if isinstance(a, ndgrad.memory_format) if hasattr(ndgrad, "memory_format") else False:
        add_global("torch", ndgrad)
        return f"torch.{str(a).split('.')[-1]}"
    if isinstance(a, type) or callable(a) and not isinstance(a, (int, float)):
        if isinstance(a, (str, bytes)):
            return repr(a)
        return add_global(getattr(a, "__name__", "fn"), a)
    return repr(a)

