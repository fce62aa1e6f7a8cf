"""``ndgrad.export`` (torch.export): trace a module on example inputs into an
``ExportedProgram`` — one flat graph with every submodule inlined, the parameters and buffers
lifted to inputs, and a signature saying which input is which.

It is built on ``ndgrad.fx``: the module runs on Proxies that carry the example values, so
Python code that reads shapes, dtypes or sizes sees the example's (static) values and the graph
is specialized to them, as torch.export's is for static dimensions; Python control flow on a
tensor's value is refused, as torch's is. The recorded operations are
ndgrad's functions and Tensor methods (``torch.nn.functional.linear``, ``torch.Tensor.view``),
not torch's ATen operators (``torch.ops.aten.linear.default``): node names agree with torch's,
targets do not. ``dynamic_shapes`` marks dimensions that may change: ``ep.module()`` accepts
other sizes there and traces again for each new size (the graph shown is the example's).

Example:
    >>> import ndgrad
    >>> from ndgrad.export import export
    >>> ep = export(ndgrad.nn.Linear(3, 2), (ndgrad.ones(4, 3),))
    >>> [s.arg.name for s in ep.graph_signature.input_specs]
    ['p_weight', 'p_bias', 'input']
    >>> ep.module()(ndgrad.ones(4, 3)).shape
    ndgrad.Size([4, 2])
"""

from __future__ import annotations

import operator
from enum import Enum, auto
from types import MappingProxyType
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import ndgrad

from .. import nn
from ..fx import Graph, GraphModule, Tracer
from ..fx.node import Node, map_aggregate, map_arg
from ..fx.passes.shape_prop import _extract_tensor_metadata
from ..fx.proxy import Attribute, Proxy
from ..tensor import Tensor
from ..utils import _pytree as pytree

__all__ = ["export", "ExportedProgram", "ExportGraphSignature", "InputSpec", "OutputSpec",
           "InputKind", "OutputKind", "TensorArgument", "Dim", "UserError",
           "GuardOnDataDependentSymNode"]


class GuardOnDataDependentSymNode(RuntimeError):
    """Python control flow on a tensor's value met while exporting (torch's
    ``torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode``)."""


class UserError(RuntimeError):
    """A wrong use of export (torch._dynamo.exc.UserError's role)."""


# ------------------------------------------------------------------------------ signature
class InputKind(Enum):
    USER_INPUT = auto()
    PARAMETER = auto()
    BUFFER = auto()
    CONSTANT_TENSOR = auto()


class OutputKind(Enum):
    USER_OUTPUT = auto()


class TensorArgument:
    """A graph value that is a tensor, by node name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"TensorArgument(name='{self.name}')"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorArgument) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


class ConstantArgument:
    """A graph input or output that is not a tensor."""

    def __init__(self, name: str, value: Any) -> None:
        self.name, self.value = name, value

    def __repr__(self) -> str:
        return f"ConstantArgument(name='{self.name}', value={self.value!r})"


class InputSpec:
    """One input of the graph: its kind, argument, and for parameters and buffers the
    state_dict key (``target``) and whether it is persistent."""

    def __init__(self, kind: InputKind, arg: Any, target: Optional[str],
                 persistent: Optional[bool] = None) -> None:
        self.kind, self.arg, self.target, self.persistent = kind, arg, target, persistent

    def __repr__(self) -> str:
        return f"InputSpec(kind=<InputKind.{self.kind.name}: {self.kind.value}>, " \
               f"arg={self.arg!r}, target={self.target!r}, persistent={self.persistent!r})"

    def __str__(self) -> str:
        s = f"{self.arg.name}: {self.kind.name}"
        if self.target is not None:
            s += f" target={self.target!r}"
        if self.persistent is not None:
            s += f" persistent={self.persistent}"
        return s


class OutputSpec:
    """One output of the graph."""

    def __init__(self, kind: OutputKind, arg: Any, target: Optional[str]) -> None:
        self.kind, self.arg, self.target = kind, arg, target

    def __repr__(self) -> str:
        return f"OutputSpec(kind=<OutputKind.{self.kind.name}: {self.kind.value}>, " \
               f"arg={self.arg!r}, target={self.target!r})"

    def __str__(self) -> str:
        return f"{self.arg.name}: {self.kind.name}"


class ExportGraphSignature:
    """Which graph input is a parameter, a buffer or a user input; which output is what."""

    def __init__(self, input_specs: List[InputSpec], output_specs: List[OutputSpec]) -> None:
        self.input_specs = input_specs
        self.output_specs = output_specs

    def _of(self, kind: Any) -> Tuple[str, ...]:
        return tuple(str(s.target) for s in self.input_specs if s.kind is kind)

    @property
    def parameters(self) -> Tuple[str, ...]:
        return self._of(InputKind.PARAMETER)

    @property
    def buffers(self) -> Tuple[str, ...]:
        return self._of(InputKind.BUFFER)

    @property
    def user_inputs(self) -> Tuple[Any, ...]:
        return tuple(s.arg.name for s in self.input_specs if s.kind is InputKind.USER_INPUT)

    @property
    def user_outputs(self) -> Tuple[Any, ...]:
        return tuple(s.arg.name for s in self.output_specs)

    @property
    def inputs_to_parameters(self) -> Mapping[str, str]:
        return MappingProxyType({s.arg.name: str(s.target) for s in self.input_specs
                                 if s.kind is InputKind.PARAMETER})

    @property
    def inputs_to_buffers(self) -> Mapping[str, str]:
        return MappingProxyType({s.arg.name: str(s.target) for s in self.input_specs
                                 if s.kind is InputKind.BUFFER})

    def __str__(self) -> str:
        ins = "\n".join(str(s) for s in self.input_specs)
        outs = "\n".join(str(s) for s in self.output_specs)
        return f"\n# inputs\n{ins}\n\n# outputs\n{outs}\n"


class _Text(str):
    """A string that prints without quotes (a symbol or range in range_constraints)."""

    def __repr__(self) -> str:
        return str(self)


class Dim:
    """A dimension that may take other sizes than the example's (``Dim("batch")``)."""

    def __init__(self, name: str, *, min: Optional[int] = None, max: Optional[int] = None
                 ) -> None:
        self.__name__ = name
        self.min = 0 if min is None else min
        self.max = max

    def __repr__(self) -> str:
        return f"Dim('{self.__name__}')"

    AUTO: Any = None
    STATIC: Any = None
    DYNAMIC: Any = None


Dim.AUTO = Dim("AUTO")
Dim.DYNAMIC = Dim("DYNAMIC")


# ------------------------------------------------------------------------------ tracing
_SHAPE_ATTRS = ("shape", "dtype", "device", "ndim", "is_cuda", "layout", "is_sparse",
                "requires_grad", "is_leaf")
_SHAPE_METHODS = ("size", "dim", "numel", "stride", "is_contiguous", "is_floating_point",
                  "element_size", "nelement", "is_complex", "ndimension", "get_device")
_OPERATORS = {operator.add: ndgrad.add, operator.sub: ndgrad.sub, operator.mul: ndgrad.mul,
              operator.truediv: ndgrad.div, operator.matmul: ndgrad.matmul,
              operator.neg: ndgrad.neg, operator.pow: ndgrad.pow}


class _ValueProxy(Proxy):
    """A Proxy carrying its example value: shape-like reads are answered from it."""

    value: Any

    def __getattr__(self, k: str) -> Any:
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        if k in _SHAPE_ATTRS:
            return getattr(self.value, k)
        if k in _SHAPE_METHODS:
            return getattr(self.value, k)
        return Attribute(self, k)

    def __bool__(self) -> bool:
        if isinstance(self.value, Tensor):
            raise GuardOnDataDependentSymNode(
                "Could not guard on data-dependent expression: the truth value of a tensor "
                "computed from the inputs (Python control flow on tensor values cannot be "
                "exported; use torch.cond or compute the branch on the tensors)")
        return bool(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __iter__(self) -> Any:
        return (operator.getitem(self, i) for i in range(len(self.value)))

    def __index__(self) -> int:
        return operator.index(self.value)


class _ExportTracer(Tracer):
    def __init__(self) -> None:
        super().__init__()
        self.lifted: Dict[int, Proxy] = {}
        self._node_values: Dict[Node, Any] = {}
        self.lift_constant: Callable[[Tensor], Proxy] = lambda t: Proxy(Node(None, "", "root",
                                                                              "", (), {}))

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        return False

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: Dict[str, Any]) -> Any:
        return self.lifted.get(id(attr_val), attr_val)

    def proxy(self, node: Node) -> Proxy:
        p = _ValueProxy(node, self)
        p.value = self._value(node)
        return p

    def create_arg(self, a: Any) -> Any:
        if isinstance(a, Tensor) and id(a) in self.lifted:
            return self.lifted[id(a)].node
        if isinstance(a, Tensor) and not isinstance(a, nn.Parameter):
            # a tensor made while tracing (torch.ones(2), a constant's arithmetic): lifted as
            # a constant input, as torch lifts the tensors it cannot trace
            return self.lift_constant(a).node
        return super().create_arg(a)

    def create_node(self, kind: str, target: Any, args: Tuple, kwargs: Dict[str, Any],
                    name: Optional[str] = None, type_expr: Optional[Any] = None) -> Node:
        if kind == "call_method":
            kind, target = "call_function", getattr(ndgrad.Tensor, target)
        elif kind == "call_function" and target in _OPERATORS and args and \
                isinstance(args[0], Node) and isinstance(self._node_values.get(args[0]),
                                                         Tensor):
            target = _OPERATORS[target]
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        return node

    def _value(self, node: Node) -> Any:
        if node in self._node_values:
            return self._node_values[node]

        def val(n: Node) -> Any:
            return self._node_values[n]

        args = map_aggregate(node.args, lambda a: val(a) if isinstance(a, Node) else a)
        kwargs = map_aggregate(node.kwargs, lambda a: val(a) if isinstance(a, Node) else a)
        if node.op == "call_function":
            v = node.target(*args, **kwargs)
        elif node.op == "get_attr":
            v = self.root
            for atom in node.target.split("."):
                v = getattr(v, atom)
        else:
            raise AssertionError(f"unexpected node {node.op} while exporting")
        self._node_values[node] = v
        return v


def _placeholder(graph: Graph, name: str) -> Node:
    """A placeholder named exactly ``name`` (an argument name may be a builtin's, such as
    ``input``, which FX's naming would change)."""
    node = graph.placeholder(name)
    if node.name != name and name.isidentifier() and \
            name not in graph._graph_namespace._used:
        graph._graph_namespace._used.add(name)
        node.name = name
    return node


def _arg_names(fn: Callable, n: int) -> List[str]:
    import inspect
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][1:]   # not self
    names = [p.name for p in params[:n]]
    return names + [f"args_{i}" for i in range(len(names), n)]


def _trace(mod: nn.Module, args: Tuple, kwargs: Dict[str, Any]
           ) -> Tuple[GraphModule, ExportGraphSignature, Any, Any, Dict[str, Any],
                      Dict[str, Any]]:
    tracer = _ExportTracer()
    tracer.root = mod
    tracer.graph = graph = Graph()
    tracer._node_values = {}
    tracer._param_cache = {}
    tracer._constants = []
    tracer.tensor_attrs = {}
    tracer.submodule_paths = {m: n for n, m in mod.named_modules()}
    input_specs: List[InputSpec] = []
    state: Dict[str, Any] = {}
    constants: Dict[str, Any] = {}

    def lift(prefix: str, target: str, value: Tensor, kind: InputKind,
             persistent: Optional[bool]) -> None:
        node = _placeholder(graph, f"{prefix}_{target.replace('.', '_')}")
        tracer._node_values[node] = value
        p = tracer.proxy(node)
        tracer.lifted[id(value)] = p
        input_specs.append(InputSpec(kind, TensorArgument(node.name), target, persistent))
        if kind is InputKind.CONSTANT_TENSOR or persistent is False:
            constants[target] = value
        else:
            state[target] = value

    for name, p in mod.named_parameters():
        lift("p", name, p, InputKind.PARAMETER, None)
    non_persistent = {f"{mn}.{b}" if mn else b for mn, m in mod.named_modules()
                      for b in m._non_persistent_buffers_set}
    for name, b in mod.named_buffers():
        lift("b", name, b, InputKind.BUFFER, name not in non_persistent)
    plain_attrs = []        # (module, name, tensor): read as their lifted Proxies while tracing
    for mname, m in mod.named_modules():
        for k, v in vars(m).items():
            if isinstance(v, Tensor) and not isinstance(v, nn.Parameter) and \
                    id(v) not in tracer.lifted:
                lift("c", f"{mname}.{k}" if mname else k, v, InputKind.CONSTANT_TENSOR, None)
            if isinstance(v, Tensor) and not isinstance(v, nn.Parameter):
                plain_attrs.append((m, k, v))
    n_lifted = [len(input_specs)]
    first_user: List[Optional[Node]] = [None]

    def lift_constant(t: Tensor) -> Proxy:
        i = sum(1 for s in input_specs if s.target and s.target.startswith("lifted_tensor_"))
        target = f"lifted_tensor_{i}"
        anchor = first_user[0]
        ctx = graph.inserting_before(anchor) if anchor is not None else \
            graph.inserting_before(None)
        with ctx:
            node = _placeholder(graph, f"c_{target}")
        tracer._node_values[node] = t
        p = tracer.proxy(node)
        tracer.lifted[id(t)] = p
        input_specs.insert(n_lifted[0], InputSpec(InputKind.CONSTANT_TENSOR,
                                                  TensorArgument(node.name), target))
        n_lifted[0] += 1
        constants[target] = t
        return p

    tracer.lift_constant = lift_constant

    leaves, in_spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
    names = _arg_names(type(mod).forward, len(args))
    user_names = []
    for i, (path, _leaf) in enumerate(pytree.tree_flatten_with_path((tuple(args),
                                                                     dict(kwargs)))[0]):
        top = path[1]
        base = names[top.idx] if path[0].idx == 0 else str(top.key)
        user_names.append(base if len(path) == 2 else f"{base}_{i}")
    proxies = []
    for name, leaf in zip(user_names, leaves):
        if isinstance(leaf, Tensor):
            node = _placeholder(graph, name)
            if first_user[0] is None:
                first_user[0] = node
            tracer._node_values[node] = leaf
            proxies.append(tracer.proxy(node))
            input_specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(node.name),
                                         None))
        else:
            proxies.append(leaf)
    targs, tkwargs = pytree.tree_unflatten(proxies, in_spec)

    orig_call, orig_getattr = nn.Module.__call__, nn.Module.__getattr__

    def module_call(m: nn.Module, *a: Any, **kw: Any) -> Any:
        return orig_call(m, *a, **kw)

    def module_getattr(m: nn.Module, attr: str) -> Any:
        return tracer.getattr(attr, orig_getattr(m, attr), {})

    nn.Module.__getattr__ = module_getattr  # type: ignore[method-assign]
    for m, k, v in plain_attrs:
        m.__dict__[k] = tracer.lifted[id(v)]
    try:
        with ndgrad.no_grad():
            result = orig_call(mod, *targs, **tkwargs)
    finally:
        nn.Module.__call__ = orig_call  # type: ignore[method-assign]
        nn.Module.__getattr__ = orig_getattr  # type: ignore[method-assign]
        for m, k, v in plain_attrs:
            m.__dict__[k] = v
    _ = module_call
    out_leaves, out_spec = pytree.tree_flatten(result)
    out_nodes = [tracer.create_arg(o) for o in out_leaves]
    graph.output(tuple(out_nodes))
    output_specs = [OutputSpec(OutputKind.USER_OUTPUT,
                               TensorArgument(n.name) if isinstance(n, Node)
                               else ConstantArgument("", n), None) for n in out_nodes]
    for node in graph.nodes:
        v = tracer._node_values.get(node)
        if isinstance(v, Tensor):
            node.meta["val"] = v
            node.meta["tensor_meta"] = _extract_tensor_metadata(v)
    gm = GraphModule(mod, graph)
    return gm, ExportGraphSignature(input_specs, output_specs), in_spec, out_spec, state, \
        constants


# ------------------------------------------------------------------------------ program
class ExportedProgram:
    """The result of ``export``: ``graph_module`` (parameters and buffers as inputs),
    ``graph``, ``graph_signature``, ``state_dict`` and ``module()``."""

    def __init__(self, root: nn.Module, graph_module: GraphModule,
                 graph_signature: ExportGraphSignature, state_dict: Dict[str, Any],
                 in_spec: Any, out_spec: Any, example_inputs: Tuple[Tuple, Dict[str, Any]],
                 dynamic: Dict[int, Dict[int, Any]], range_constraints: Dict[str, Any]
                 ) -> None:
        self._root = root
        self.graph_module = graph_module
        self.graph_signature = graph_signature
        self.state_dict = state_dict
        self.constants: Dict[str, Any] = {}
        self._in_spec, self._out_spec = in_spec, out_spec
        self.example_inputs = example_inputs
        self._dynamic = dynamic
        self.range_constraints = range_constraints

    @property
    def graph(self) -> Graph:
        return self.graph_module.graph

    @property
    def call_spec(self) -> Tuple[Any, Any]:
        return self._in_spec, self._out_spec

    def module(self) -> nn.Module:
        """A callable module taking the original arguments and returning the original output
        structure, with the parameters and buffers as attributes."""
        return _UnliftedModule(self)

    def run_decompositions(self, decomp_table: Optional[Dict[Any, Any]] = None
                           ) -> "ExportedProgram":
        """The program itself: its graph has no decomposable ATen operators."""
        return self

    def __str__(self) -> str:
        code = self.graph_module.print_readable(print_output=False).split("\n")
        sig = str(self.graph_signature).split("\n")
        return "ExportedProgram:\n" + "\n".join("    " + line for line in code) + \
            "\nGraph signature: " + "\n".join(sig[:1] + ["    " + line for line in sig[1:]]) + \
            f"\nRange constraints: {self.range_constraints}\n"

    def __repr__(self) -> str:
        return str(self)


class _UnliftedModule(GraphModule):
    """``ExportedProgram.module()``: the program's graph with the lifted inputs read from
    attributes (``get_attr``), called with the original arguments: it checks their structure
    and static sizes, returns the original output structure, and traces again for new sizes
    of dynamic dimensions."""

    def __init__(self, ep: ExportedProgram) -> None:
        g = Graph()
        env: Dict[Node, Any] = {}
        specs = ep.graph_signature.input_specs
        placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
        for n, s in zip(placeholders, specs):
            if s.kind is InputKind.USER_INPUT:
                env[n] = _placeholder(g, n.name)
        for n, s in zip(placeholders, specs):
            if s.kind is not InputKind.USER_INPUT:
                assert s.target is not None
                env[n] = g.get_attr(s.target)
        for n in ep.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                g.output(map_arg(n.args[0], env.__getitem__))
                break
            env[n] = g.node_copy(n, env.__getitem__)
        holder = nn.Module()     # the lifted values at their targets
        for target, value in {**ep.state_dict, **ep.constants}.items():
            *path, field = target.split(".")
            owner = holder
            for atom in path:
                if atom not in owner._modules:
                    owner.add_module(atom, nn.Module())
                owner = owner._modules[atom]
            if isinstance(value, nn.Parameter):
                owner.register_parameter(field, value)
            else:
                owner.register_buffer(field, value, persistent=target in ep.state_dict)
        super().__init__(holder, g)
        self.__dict__["_ep"] = ep
        self.__dict__["_graphs"] = {}

    def _check(self, leaves: List[Any]) -> Tuple[int, ...]:
        ep = self._ep
        key: List[int] = []
        ex_leaves = pytree.tree_leaves(ep.example_inputs)
        for i, (leaf, ex) in enumerate(zip(leaves, ex_leaves)):
            if not isinstance(ex, Tensor):
                continue
            if not isinstance(leaf, Tensor):
                raise RuntimeError(f"Expected input at *args[{i}] to be a tensor, but got "
                                   f"{type(leaf).__name__}")
            if leaf.dim() != ex.dim():
                raise RuntimeError(f"Expected input at *args[{i}].dim() to be equal to "
                                   f"{ex.dim()}, but got {leaf.dim()}")
            dyn = ep._dynamic.get(i, {})
            for d, (a, b) in enumerate(zip(leaf.shape, ex.shape)):
                if d in dyn:
                    key.append(a)
                elif a != b:
                    raise AssertionError(f"Guard failed: {_leaf_name(ep, i)}.size()[{d}] == "
                                         f"{b}")
        return tuple(key)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ep = self._ep
        leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
        if spec != ep._in_spec:
            raise ValueError(f"Trying to flatten user inputs with exported input tree spec: "
                             f"\n{ep._in_spec}\nbut actually got inputs with tree spec of: "
                             f"\n{spec}")
        key = self._check(leaves)
        ex_key = tuple(s for i, t in enumerate(pytree.tree_leaves(ep.example_inputs))
                       if isinstance(t, Tensor)
                       for d, s in enumerate(t.shape) if d in ep._dynamic.get(i, {}))
        user = [x for x in leaves if isinstance(x, Tensor)]
        if key == ex_key:
            out = super().__call__(*user)
        else:
            gm = self._graphs.get(key)
            if gm is None:
                gm = _trace(ep._root, args, kwargs)[0]
                self._graphs[key] = gm
            lifted = [ep.state_dict[s.target] if s.target in ep.state_dict
                      else ep.constants[s.target] for s in ep.graph_signature.input_specs
                      if s.kind is not InputKind.USER_INPUT]
            out = gm(*lifted, *user)
        return pytree.tree_unflatten(list(out), ep._out_spec)


def _leaf_name(ep: ExportedProgram, i: int) -> str:
    names = list(ep.graph_signature.user_inputs)
    return names[i] if i < len(names) else f"args[{i}]"


def export(mod: nn.Module, args: Tuple[Any, ...], kwargs: Optional[Dict[str, Any]] = None, *,
           dynamic_shapes: Optional[Any] = None, strict: bool = False,
           preserve_module_call_signature: Tuple[str, ...] = ()) -> ExportedProgram:
    """Trace ``mod`` on the example ``args``/``kwargs`` into an ExportedProgram (see the
    module docstring)."""
    if not isinstance(mod, nn.Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got "
                         f"{type(mod)}.")
    if not isinstance(args, tuple):
        raise UserError(f"Expecting `args` to be a tuple of example positional inputs, got "
                        f"{type(args)}")
    kwargs = {} if kwargs is None else kwargs
    dynamic, constraints = _dynamic_dims(mod, args, kwargs, dynamic_shapes)
    gm, sig, in_spec, out_spec, state, constants = _trace(mod, args, kwargs)
    ep = ExportedProgram(mod, gm, sig, state, in_spec, out_spec, (tuple(args), dict(kwargs)),
                         dynamic, constraints)
    ep.constants = constants
    return ep


def _dynamic_dims(mod: nn.Module, args: Tuple, kwargs: Dict[str, Any], spec: Any
                  ) -> Tuple[Dict[int, Dict[int, Any]], Dict[str, Any]]:
    """{input leaf index: {dim: Dim}} from ``dynamic_shapes``, and the range constraints."""
    if spec is None:
        return {}, {}
    names = _arg_names(type(mod).forward, len(args)) + list(kwargs)
    values = list(args) + list(kwargs.values())
    if isinstance(spec, dict):
        if set(spec) != set(names):
            raise UserError(
                "When `dynamic_shapes` is specified as a dict, its top-level keys must be the "
                f"arg names {names} of `inputs`, but here they are {list(spec)}. "
                "Alternatively, you could also ignore arg names entirely and specify "
                "`dynamic_shapes` as a list/tuple matching `inputs`.")
        per_arg = [spec[n] for n in names]
    else:
        per_arg = list(spec)
    out: Dict[int, Dict[int, Any]] = {}
    constraints: Dict[str, Any] = {}
    leaf = 0
    for value, s in zip(values, per_arg):
        for t in pytree.tree_leaves(value):
            if isinstance(t, Tensor) and isinstance(s, dict):
                out[leaf] = {d: dim for d, dim in s.items() if dim is not None}
                for d, dim in out[leaf].items():
                    name = getattr(dim, "__name__", f"s{leaf}_{d}")
                    constraints[_Text(name)] = _Text(
                        f"VR[{max(getattr(dim, 'min', 0), 0)}, "
                        f"{getattr(dim, 'max', None) or 'int_oo'}]")
            elif isinstance(t, Tensor) and isinstance(s, (list, tuple)):
                out[leaf] = {d: dim for d, dim in enumerate(s) if dim is not None}
            leaf += 1
    return out, constraints
