"""The graph IR of ndgrad's graph path (seed 004): ``Graph``, ``Block``, ``Node``, ``Value``.

A ``Graph`` is one SSA program: inputs, a topologically ordered list of nodes, outputs. A node's
kind is either an op of the op table (``node.op`` is the ``ndgrad.ops._dispatch.Op`` object,
``node.kind()`` its name: ``"mul"``) or one of the primitives below. Values carry a static
``shape``, a NumPy ``dtype`` and ``requires_grad`` (eager semantics: what ``t.requires_grad``
was for the traced tensor).

Note [Graph interface] (the contract between the tracer/differentiate and codegen/executor)

* ``Value``: ``.shape`` (tuple of ints), ``.dtype`` (numpy dtype), ``.requires_grad``,
  ``.node()`` (producer, None for graph inputs and block parameters), ``.offset`` (output
  index in its producer, or input index), ``.debug_name``, ``.uses()`` (list of ``Use(user,
  offset)``; a block's outputs are the inputs of its ``Return`` node, ``block.return_node()``).
* ``Node``: ``.kind()``, ``.op`` (None for primitives), ``.inputs()``, ``.outputs()``,
  ``.blocks()``, ``.attrs`` (dict), ``.args`` (op nodes only), ``.source`` (``"file.py:12"`` of
  the user's line, or ``""``), ``.num_tensor_inputs``.
* Op node semantics: ``outs = op.forward(*arrays[:k], *node.call_args(tensors))`` where ``k =
  node.num_tensor_inputs`` and ``arrays``/``tensors`` are the values of ``node.inputs()``.
  Tensor operands that the op table passes among its non-tensor arguments (Note [Tensor
  arguments] in ops/_dispatch.py: an index, a mask) are inputs too, after the first ``k``:
  ``node.args`` holds ``TensorArg(j)`` in their place (``node.inputs()[k + j]``; the op gets a
  Tensor there: its forward reads ``._data``), possibly inside tuples or a ``TensorList``; an
  ndarray argument that is a graph value (the index arrays of ``x[i]``) is ``ArrayArg(j)`` (the
  op gets that input's ndarray); a list the forward fills for the backward (``saved``) is
  ``ScratchList()`` (``attrs["scratch"]`` is then True): a fresh ``[]`` per run.
  ``node.call_args(tensors)`` substitutes them (identity when the node has none).
  ``op.num_outputs`` outputs (``-1``: as many as the node has, unbind/split). Under grad mode
  the executor must run a node whose float outputs do not require grad although a tensor
  input does (recorded in no_grad mode, e.g. the ops of
  ``autograd.grad(create_graph=False)`` inside the function) in no_grad mode, as ``interpret``
  does (``interpret._recorded_without_grad``); codegen of raw arrays need not care.
* Primitives (``node.op is None``), with their attributes:
    - ``Constant``: ``attrs["value"]`` an ndarray (read only); no inputs, one output.
    - ``AutogradZero``: one output, the undefined gradient (None at run time); its shape/dtype
      are those of the value whose gradient it stands for.
    - ``AutogradAdd(a, b)``: ``a + b``; ``None`` + x = x; None + None = None (no broadcasting).
    - ``SumToSize(g)``: ``attrs["size"]``: sum ``g`` down to that shape (broadcast undone, as
      the engine does for eager gradients: ``Tensor._sum_to_checked``); None stays None.
    - ``Cast(x)``: ``attrs["dtype"]``: ``x`` converted to that dtype (a complex value to a real
      dtype keeps the real part, as the engine does for gradients); None stays None.
    - ``BroadcastTo(x)``: ``attrs["size"]``: ``x`` broadcast to that shape.
    - ``Detach(x)``: ``x`` without history (``t.detach()``; also a tensor made a new leaf inside
      the traced function: then its output requires grad but no gradient passes to ``x``).
    - ``Call(*xs)``: a function recorded whole (Note [Functions outside the op table] in
      tracer.py): ``attrs["fn"](*args, **kwargs)`` with ``TensorArg(j)`` in ``attrs["args"]``/
      ``attrs["kwargs"]`` replaced by the Tensor of input j (``interpret.call_node``);
      ``attrs["tuple"]``: it returns a tuple (one output each). Non-differentiable ones
      (all/any, isclose, searchsorted, bucketize, where(condition)) have outputs that never
      require grad; ``attrs["differentiable"]`` ones (quantile, frexp, combinations,
      normalizations, max pooling, ndgrad.masked: their Python wrapper computes part of the
      result from the data outside the op table) are differentiated by a ``CallBackward`` node
      (comparisons, logical ops, argmax and the indices of max(dim)/sort/topk ... are ops of the
      table: ``tools/jit_opaque_census.py`` lists what is left per op of tests/op_db.py). A Call
      may modify a lifted tensor in place (BatchNorm's running statistics), as eager does.
    - ``CallBackward``: the backward of a differentiable Call, ``differentiate.
      run_call_backward(node, input_tensors)``: re-runs the function under grad mode and asks
      autograd (differentiable again under grad mode). Inputs: [output gradients (None
      allowed)][the Call's inputs]; outputs: gradients of the inputs in ``attrs["outputs"]``.
    - ``GradOf``: ``attrs["name"]`` the forward op's name; one block (no parameters) holding the
      gradient formula of one node, reading outer values directly; inputs are the output
      gradients, outputs the block's outputs. ``Gradient.df`` keeps them (the seed's form, for
      printing and counting); ``passes.lower_grad_of(df.block())`` or ``Gradient.lowered_df()``
      inlines them for code generation. Run semantics: if every input is None, every output is
      None; else None inputs are zeros (``interpret.materialize``).
    - ``OpBackward``: an op whose VJP rule reads the data outside the op table
      (scatter_reduce's ties ...; rules that branch on the data for speed have a traceable
      twin instead, Note [Traceable VJP rules] in differentiate.py): the rule itself runs at
      run time, ``differentiate.run_op_backward(node,
      input_tensors)`` (it rebuilds the op's backward node from the inputs and applies it; under
      grad mode it is differentiable). Inputs: [output gradients (None allowed)][the forward
      node's inputs]; outputs: the gradients of the forward inputs listed in
      ``attrs["outputs"]``. Only in df.
* ``Graph``: ``.inputs()``, ``.outputs()``, ``.nodes()`` (top level, topological order),
  ``.all_nodes()`` (recursively), builders (``add_input``, ``create``, ``insert``,
  ``insert_op``, ``insert_prim``, ``insert_constant``, ``register_output``), ``lint()``,
  ``__str__``, ``to_dot()``, ``copy()``.
* Undefined values: at run time a gradient may be ``None`` (AutogradZero semantics); ops never
  see None (a None input is materialized as zeros, ``interpret.materialize``).
* The tracer (tracer.py) gives ``TraceResult``: ``graph`` (inputs: [flattened tensor inputs]
  [lifted tensors]; outputs: [flattened tensor outputs][final values of mutated inputs]),
  ``in_spec``/``out_spec`` (``flatten``/``unflatten``), ``lifted`` (tensors to read at call time),
  ``mutated`` (graph input indices written back after the call), ``num_inputs``,
  ``num_outputs``. ``differentiate`` (differentiate.py) gives a ``Gradient`` (gradient.py, Note
  [Gradient contract]); its ``f`` and ``df`` have every ``requires_grad`` False (they run on
  detached values, as the seed's UpdateDifferentiableGraphRequiresGrad leaves f).

Example:
    >>> import ndgrad
    >>> from ndgrad.jit import trace_graph
    >>> a = ndgrad.ones(2, requires_grad=True)
    >>> g = trace_graph(lambda a: a * a + 1, (a,)).graph
    >>> [n.kind() for n in g.nodes()]
    ['mul', 'add']
    >>> g.lint()
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ..autograd.saved import TensorList

__all__ = ["Graph", "Block", "Node", "Value", "Use", "TensorArg", "ArrayArg", "ScratchList",
           "LintError", "PRIMS", "type_str", "destroy_nodes"]

PRIMS = frozenset({"Call", "CallBackward", "Constant", "AutogradZero", "AutogradAdd",
                   "SumToSize", "Cast", "BroadcastTo", "Detach", "GradOf", "OpBackward",
                   "Return", "Reverse"})


class LintError(AssertionError):
    """A graph invariant does not hold (raised by ``Graph.lint``)."""


class TensorArg:
    """Placeholder in ``node.args`` for the tensor operand ``node.inputs()[k + index]`` (the op
    receives a Tensor there)."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.index})"

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self) and other.index == self.index

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.index))


class ArrayArg(TensorArg):
    """Placeholder for an ndarray argument that is the array of ``node.inputs()[k + index]``
    (an advanced index of ``x[i]`` computed in the graph: the op receives its ndarray)."""

    __slots__ = ()


_PLACEHOLDERS = (TensorArg, ArrayArg)


class ScratchList:
    """Placeholder for a list argument an op's forward fills for its backward (``saved`` of the
    recurrent cells and attention, ``cache`` of ctc_loss): every run gets a fresh ``[]``."""

    __slots__ = ()

    def __eq__(self, other: Any) -> bool:
        return type(other) is ScratchList

    def __hash__(self) -> int:
        return hash("ScratchList")

    def __repr__(self) -> str:
        return "<scratch list>"


_SHORT = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
          "complex64": "c64", "complex128": "c128", "int8": "i8", "int16": "i16", "int32": "i32",
          "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
          "bool": "b8"}


def type_str(shape: Sequence[int], dtype: Any, requires_grad: bool = False) -> str:
    """``f32[2, 3]`` (plus `` grad`` when ``requires_grad``)."""
    name = _SHORT.get(np.dtype(dtype).name, np.dtype(dtype).name)
    return f"{name}[{', '.join(str(s) for s in shape)}]" + (" grad" if requires_grad else "")


class Use:
    """One use of a value: ``user`` (a Node, possibly a block's ``Return``) at input ``offset``."""

    __slots__ = ("user", "offset")

    def __init__(self, user: "Node", offset: int) -> None:
        self.user, self.offset = user, offset

    def __repr__(self) -> str:
        return f"Use({self.user.kind()}, {self.offset})"


class Value:
    """One SSA value."""

    __slots__ = ("_node", "offset", "shape", "dtype", "requires_grad", "_name", "_uses",
                 "_block", "__weakref__")

    def __init__(self, shape: Sequence[int], dtype: Any, requires_grad: bool = False,
                 node: Optional["Node"] = None, offset: int = 0,
                 block: Optional["Block"] = None) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.requires_grad = bool(requires_grad)
        self._node = node
        self.offset = offset
        self._name: Optional[str] = None
        self._uses: List[Use] = []
        self._block = block          # for parameters: the block that owns them

    def node(self) -> Optional["Node"]:
        """The producing node (None for graph inputs and block parameters)."""
        return self._node

    def owning_block(self) -> Optional["Block"]:
        return self._node.owning_block if self._node is not None else self._block

    def uses(self) -> List[Use]:
        return list(self._uses)

    @property
    def debug_name(self) -> str:
        """The name given by the tracer (``a`` for an input named ``a``), else the number the
        printer uses (stable for a graph printed twice), else an id-based name."""
        if self._name is not None:
            return self._name
        names = _PRINT_NAMES.get(id(self))
        return names if names is not None else f"v{id(self):x}"

    @debug_name.setter
    def debug_name(self, name: str) -> None:
        self._name = name

    def type_str(self) -> str:
        return type_str(self.shape, self.dtype, self.requires_grad)

    def copy_metadata(self, other: "Value") -> "Value":
        self.shape, self.dtype, self.requires_grad = other.shape, other.dtype, other.requires_grad
        return self

    def replace_all_uses_with(self, new: "Value") -> None:
        """Every use of this value reads ``new`` instead (linear in the number of uses)."""
        if new is self:
            return
        uses, self._uses = self._uses, []
        for u in uses:
            u.user._inputs[u.offset] = new
        new._uses.extend(uses)

    def __repr__(self) -> str:
        return f"%{self.debug_name} : {self.type_str()}"


_new_object = object.__new__


def _value(shape: tuple, dtype: np.dtype, requires_grad: bool, node: Optional["Node"],
           offset: int) -> Value:
    """``Value(shape, dtype, requires_grad, node, offset)`` from metadata that is already in
    its final form (``shape`` a tuple of ints, ``dtype`` an ``np.dtype``, a bool), without the
    constructor's conversions: for the paths that make one Value per recorded or copied op
    (Note [First-call cost])."""
    v = _new_object(Value)
    v.shape = shape
    v.dtype = dtype
    v.requires_grad = requires_grad
    v._node = node
    v.offset = offset
    v._name = None
    v._uses = []
    v._block = None
    return v


# Numbers for unnamed values, assigned by format_graph in printing order for the duration of one
# printing (see Value.debug_name).
_PRINT_NAMES: dict = {}
_NAMES_LOCK = threading.RLock()


class Node:
    """One operation: an op of the op table or a primitive (see the module docstring)."""

    __slots__ = ("_kind", "op", "_inputs", "_outputs", "_blocks", "attrs", "args",
                 "num_tensor_inputs", "source", "owning_block", "__weakref__")

    def __init__(self, kind: str, op: Any = None, attrs: Optional[dict] = None) -> None:
        self._kind = kind
        self.op = op
        self._inputs: List[Value] = []
        self._outputs: List[Value] = []
        self._blocks: List[Block] = []
        self.attrs = dict(attrs) if attrs else {}
        self.args: tuple = ()
        self.num_tensor_inputs = 0
        self.source = ""
        self.owning_block: Optional[Block] = None

    # ---- TorchScript-like accessors
    def kind(self) -> str:
        return self._kind

    def inputs(self) -> List[Value]:
        return list(self._inputs)

    def outputs(self) -> List[Value]:
        return list(self._outputs)

    def input(self, i: int = 0) -> Value:
        return self._inputs[i]

    def output(self, i: int = 0) -> Value:
        return self._outputs[i]

    def blocks(self) -> List["Block"]:
        return list(self._blocks)

    def owning_graph(self) -> Optional["Graph"]:
        b = self.owning_block
        return b.graph if b is not None else None

    # ---- editing
    def add_input(self, v: Value) -> None:
        v._uses.append(Use(self, len(self._inputs)))
        self._inputs.append(v)

    def add_output(self, shape: Sequence[int], dtype: Any, requires_grad: bool = False) -> Value:
        v = Value(shape, dtype, requires_grad, self, len(self._outputs))
        self._outputs.append(v)
        return v

    def add_block(self) -> "Block":
        b = Block(self.owning_graph(), self)
        self._blocks.append(b)
        return b

    def replace_input(self, i: int, new: Value) -> None:
        old = self._inputs[i]
        for k, u in enumerate(old._uses):
            if u.user is self and u.offset == i:
                del old._uses[k]
                break
        self._inputs[i] = new
        new._uses.append(Use(self, i))

    def replace_input_with(self, old: Value, new: Value) -> None:
        for i, v in enumerate(self._inputs):
            if v is old:
                self.replace_input(i, new)

    def remove_all_inputs(self) -> None:
        for i in range(len(self._inputs)):
            v = self._inputs[i]
            v._uses = [u for u in v._uses if u.user is not self]
        self._inputs = []

    def destroy(self) -> None:
        """Remove the node (its outputs must be unused) from its block. One node costs the
        length of its block; to remove many, ``destroy_nodes`` (linear)."""
        for o in self._outputs:
            if o._uses:
                raise LintError(f"destroying {self.kind()} whose output %{o.debug_name} is used")
        destroy_nodes([self], check=False)

    def destroy_recursive(self) -> None:
        """Remove the node whatever uses its outputs (the users are being removed too)."""
        for o in self._outputs:
            o._uses = []
        self.destroy()

    def move_before(self, other: "Node") -> None:
        assert self.owning_block is not None and other.owning_block is not None, \
            "moving a node that is not in a block"
        self.owning_block._nodes.remove(self)
        blk = other.owning_block
        blk._nodes.insert(blk._nodes.index(other), self)
        self.owning_block = blk

    def move_after(self, other: "Node") -> None:
        assert self.owning_block is not None and other.owning_block is not None, \
            "moving a node that is not in a block"
        self.owning_block._nodes.remove(self)
        blk = other.owning_block
        blk._nodes.insert(blk._nodes.index(other) + 1, self)
        self.owning_block = blk

    def call_args(self, tensors: Sequence[Any]) -> tuple:
        """The op's argument tuple with ``TensorArg`` placeholders replaced by ``tensors[k + j]``
        (``tensors`` one per input, Tensors for the tensor arguments)."""
        k = self.num_tensor_inputs
        if len(self._inputs) == k and not self.attrs.get("scratch"):
            return self.args
        return _substitute(self.args, tensors, k)

    def __repr__(self) -> str:
        return f"<Node {self.kind()}>"


class Block:
    """A list of nodes with parameters (inputs) and outputs (the inputs of its Return node)."""

    __slots__ = ("graph", "owning_node", "_nodes", "_params", "_return", "__weakref__")

    def __init__(self, graph: Optional["Graph"], owning_node: Optional[Node] = None) -> None:
        self.graph = graph
        self.owning_node = owning_node
        self._nodes: List[Node] = []
        self._params: List[Value] = []
        self._return = Node("Return")
        self._return.owning_block = self

    def nodes(self) -> List[Node]:
        return list(self._nodes)

    def inputs(self) -> List[Value]:
        return list(self._params)

    def outputs(self) -> List[Value]:
        return self._return.inputs()

    def return_node(self) -> Node:
        return self._return

    def add_input(self, shape: Sequence[int] = (), dtype: Any = np.float32,
                  requires_grad: bool = False, name: Optional[str] = None) -> Value:
        v = Value(shape, dtype, requires_grad, None, len(self._params), self)
        if name is not None:
            v.debug_name = name
        self._params.append(v)
        return v

    def register_output(self, v: Value) -> int:
        self._return.add_input(v)
        return len(self._return._inputs) - 1

    def append(self, node: Node) -> Node:
        node.owning_block = self
        self._nodes.append(node)
        return node

    def prepend(self, node: Node) -> Node:
        node.owning_block = self
        self._nodes.insert(0, node)
        return node

    def all_nodes(self) -> Iterator[Node]:
        """Every node, recursively into sub-blocks (pre-order)."""
        for n in self._nodes:
            yield n
            for b in n._blocks:
                yield from b.all_nodes()


class Graph:
    """An SSA graph. Build with ``add_input``, ``insert_op``/``create``+``insert``,
    ``register_output``; nodes are inserted at the insertion point (the end of the top block
    unless ``set_insert_point`` moved it)."""

    def __init__(self) -> None:
        self._block = Block(self)
        self._insert_block = self._block
        self._insert_index: Optional[int] = None   # None: append

    # ---- TorchScript-like accessors
    def block(self) -> Block:
        return self._block

    def inputs(self) -> List[Value]:
        return self._block.inputs()

    def outputs(self) -> List[Value]:
        return self._block.outputs()

    def nodes(self) -> List[Node]:
        return self._block.nodes()

    def all_nodes(self) -> Iterator[Node]:
        return self._block.all_nodes()

    # ---- builders
    def add_input(self, shape: Sequence[int] = (), dtype: Any = np.float32,
                  requires_grad: bool = False, name: Optional[str] = None) -> Value:
        return self._block.add_input(shape, dtype, requires_grad, name)

    def register_output(self, v: Value) -> int:
        return self._block.register_output(v)

    def set_insert_point(self, block: Block, index: Optional[int] = None) -> None:
        """Insert into ``block`` before position ``index`` (None: at its end)."""
        self._insert_block = block
        self._insert_index = index

    def insert_point(self) -> tuple:
        return (self._insert_block, self._insert_index)

    def create(self, kind: str, inputs: Iterable[Value] = (), attrs: Optional[dict] = None,
               op: Any = None) -> Node:
        n = Node(kind, op, attrs)
        for v in inputs:
            n.add_input(v)
        return n

    def insert(self, node: Node) -> Node:
        blk = self._insert_block
        node.owning_block = blk
        if self._insert_index is None:
            blk._nodes.append(node)
        else:
            blk._nodes.insert(self._insert_index, node)
            self._insert_index += 1
        for b in node._blocks:
            b.graph = self
        return node

    def append_op(self, op: Any, inputs: list, args: tuple, out_types: list,
                  num_tensor_inputs: int, source: str) -> Node:
        """``insert_op`` for the tracer (Note [First-call cost]): ``inputs`` a fresh list,
        ``args`` a tuple, ``out_types`` already in ``Value`` form (a tuple of ints, an
        ``np.dtype``, a bool)."""
        n = _new_object(Node)
        n._kind = op.name
        n.op = op
        n._inputs = inputs
        n._blocks = []
        n.attrs = {}
        n.args = args
        n.num_tensor_inputs = num_tensor_inputs
        n.source = source
        for i, v in enumerate(inputs):
            v._uses.append(Use(n, i))
        n._outputs = [_value(sh, dt, rg, n, j) for j, (sh, dt, rg) in enumerate(out_types)]
        return self.insert(n)

    def insert_op(self, op: Any, inputs: Sequence[Value], args: tuple,
                  out_types: Sequence[tuple], num_tensor_inputs: Optional[int] = None,
                  source: str = "") -> Node:
        """Insert an op node; ``out_types`` is ``[(shape, dtype, requires_grad)]``."""
        n = self.create(op.name, inputs, op=op)
        n.args = tuple(args)
        n.num_tensor_inputs = len(inputs) if num_tensor_inputs is None else num_tensor_inputs
        n.source = source
        for t in out_types:
            n.add_output(*t)
        return self.insert(n)

    def insert_constant(self, value: Any, source: str = "") -> Value:
        arr = np.array(value, copy=True)
        arr.flags.writeable = False
        n = self.create("Constant", attrs={"value": arr})
        n.source = source
        n.add_output(arr.shape, arr.dtype, False)
        self.insert(n)
        return n.output()

    def insert_prim(self, kind: str, inputs: Sequence[Value], out_types: Sequence[tuple],
                    attrs: Optional[dict] = None, source: str = "") -> Node:
        n = self.create(kind, inputs, attrs)
        n.source = source
        for t in out_types:
            n.add_output(*t)
        return self.insert(n)

    # ---- checks and printing
    def lint(self) -> None:
        """Check the invariants: every use is defined before (topological order, scoping:
        a block may use values of enclosing blocks), one definition per value, use lists
        consistent with inputs, ownership, GradOf arity, unique names, op arity."""
        defined: set = set()
        names: dict = {}
        self._lint_block(self._block, defined, names)

    def _lint_block(self, block: Block, defined: set, names: dict) -> None:
        scope = set(defined)

        def define(v: Value, where: str) -> None:
            if id(v) in scope:
                raise LintError(f"value %{v.debug_name} defined twice ({where})")
            nm = v.debug_name
            if nm in names and names[nm] is not v:
                raise LintError(f"two values named %{nm}")
            names[nm] = v
            scope.add(id(v))

        for p in block._params:
            if p._block is not block or p._node is not None:
                raise LintError(f"parameter %{p.debug_name} not owned by its block")
            define(p, "block parameter")
        for n in block._nodes:
            if n.owning_block is not block:
                raise LintError(f"{n.kind()} node not owned by the block holding it")
            self._lint_uses(n, scope)
            if n.op is None and n._kind not in PRIMS:
                raise LintError(f"unknown primitive {n._kind}")
            if n.op is not None:
                k = n.num_tensor_inputs
                if k > len(n._inputs):
                    raise LintError(f"{n.kind()}: num_tensor_inputs {k} > inputs")
                refs = _arg_refs(n.args)
                if sorted(set(refs)) != list(range(len(n._inputs) - k)):
                    raise LintError(f"{n.kind()}: TensorArg placeholders {sorted(refs)} do not "
                                    f"match its {len(n._inputs) - k} tensor arguments")
                if n.op.num_outputs >= 0 and len(n._outputs) != n.op.num_outputs:
                    raise LintError(f"{n.kind()}: {len(n._outputs)} outputs, the op has "
                                    f"{n.op.num_outputs}")
            if n._kind == "GradOf":
                if len(n._blocks) != 1 or len(n._blocks[0].outputs()) != len(n._outputs):
                    raise LintError("GradOf: one block whose outputs match the node's outputs")
            elif n._kind == "Constant" and "value" not in n.attrs:
                raise LintError("Constant without a value")
            elif n._kind == "AutogradAdd" and len(n._inputs) != 2:
                raise LintError("AutogradAdd takes two inputs")
            for b in n._blocks:
                if b.owning_node is not n:
                    raise LintError(f"block of {n.kind()} not owned by it")
                self._lint_block(b, scope, names)
            for i, o in enumerate(n._outputs):
                if o._node is not n or o.offset != i:
                    raise LintError(f"output %{o.debug_name} of {n.kind()} not owned by it")
                define(o, n.kind())
        self._lint_uses(block._return, scope)

    @staticmethod
    def _lint_uses(n: Node, scope: set) -> None:
        for i, v in enumerate(n._inputs):
            if id(v) not in scope:
                raise LintError(f"%{v.debug_name} used by {n.kind()} before it is defined "
                                f"(or outside its scope)")
            if not any(u.user is n and u.offset == i for u in v._uses):
                raise LintError(f"use of %{v.debug_name} by {n.kind()} missing from its uses")
        for v in set(n._inputs):
            for u in v._uses:
                if u.user is n and (u.offset >= len(n._inputs) or n._inputs[u.offset] is not v):
                    raise LintError(f"stale use of %{v.debug_name} by {n.kind()}")

    def __str__(self) -> str:
        return format_graph(self)

    def __repr__(self) -> str:
        return format_graph(self)

    def to_dot(self, name: str = "graph") -> str:
        """Graphviz DOT source of the graph (``graphviz.Source(g.to_dot())`` renders it)."""
        with _Naming(self):
            return "digraph " + _dot_id(name) + " {\n" + _dot_body(self, "") + "}\n"

    def copy_inputs(self) -> Tuple["Graph", dict]:
        """A new graph with copies of this one's inputs (names kept), and the map from these
        inputs to the copies."""
        g = Graph()
        env: dict = {}
        for v in self.inputs():
            nv = g.add_input(v.shape, v.dtype, v.requires_grad)
            nv._name = v._name
            env[v] = nv
        return g, env

    def copy(self) -> "Graph":
        """A deep copy (new Values and Nodes)."""
        g, env = self.copy_inputs()
        clone_block_into(self._block, g._block, env)
        for v in self.outputs():
            g.register_output(env[v])
        return g


def destroy_nodes(nodes: Iterable[Node], check: bool = True) -> None:
    """Remove ``nodes`` (and everything inside their blocks) in time linear in their number,
    their inputs' uses and the blocks they are in (Note [Linear graph edits]): the use lists
    of their inputs are filtered once per value, each block's node list is rebuilt once.
    ``check``: their outputs may only be used by nodes being removed too.

    Note [Linear graph edits]
    Removing one node from a Python list, or one use from a use list, is linear; a pass that
    does it per node is quadratic (a 20k-node chain took minutes). Passes therefore mark what
    they remove and call ``destroy_nodes`` once; ``replace_all_uses_with`` moves a whole use
    list at once.
    """
    # every node removed (recursively), as keys: nodes, values and blocks hash by identity
    dead: dict = {}
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if n in dead:
            continue
        dead[n] = None
        for b in n._blocks:
            stack.extend(b._nodes)
            dead[b._return] = None
    if check:
        for n in dead:
            for o in n._outputs:
                for u in o._uses:
                    if u.user not in dead:
                        raise LintError(f"destroying {n.kind()} whose output "
                                        f"%{o.debug_name} is used")
    touched: dict = {}
    blocks: dict = {}
    for n in dead:
        for v in n._inputs:
            touched[v] = None
        for o in n._outputs:
            o._uses = []
        b = n.owning_block
        if b is not None and n._kind != "Return":
            blocks[b] = None
    for v in touched:
        v._uses = [u for u in v._uses if u.user not in dead]
    for b in blocks:
        if b._nodes and any(m in dead for m in b._nodes):
            b._nodes = [m for m in b._nodes if m not in dead]
    for n in dead:
        n._inputs = []
        if n._kind != "Return":
            n.owning_block = None
            # Note [Dead nodes die by reference counting]: a removed node keeps no reference to
            # its outputs (each output still names its node), so node and outputs form no
            # cycle and are freed as soon as nothing holds them, instead of waiting for the
            # cyclic collector (a row-by-row Hessian's build removed ~1000 nodes: the
            # collection after its first call traversed them all).
            n._outputs = []


def clone_node(n: Node, env: dict, into: Block, value_map: Optional[Callable] = None) -> Node:
    """Clone ``n`` (recursively) at the end of ``into``; ``env`` maps old values to new ones
    (``value_map(v)`` is asked for values missing from it)."""
    def get(v: Value) -> Value:
        nv = env.get(v)
        if nv is not None:
            return nv
        if value_map is not None:
            return value_map(v)
        raise KeyError(v)
    # Built field by field (Note [First-call cost]): a copy makes one node per node.
    m = _new_object(Node)
    m._kind = n._kind
    m.op = n.op
    m.attrs = dict(n.attrs) if n.attrs else {}
    m.args = n.args
    m.num_tensor_inputs = n.num_tensor_inputs
    m.source = n.source
    m._blocks = []
    m._outputs = []
    ins = []
    for i, v in enumerate(n._inputs):
        nv = env.get(v)
        if nv is None:
            nv = get(v)
        nv._uses.append(Use(m, i))
        ins.append(nv)
    m._inputs = ins
    m.owning_block = into
    into._nodes.append(m)
    for b in n._blocks:
        nb = m.add_block()
        nb.graph = into.graph
        for p in b._params:
            q = nb.add_input(p.shape, p.dtype, p.requires_grad)
            q._name = None
            env[p] = q
        for sub in b._nodes:
            clone_node(sub, env, nb, value_map)
        for v in b.outputs():
            nb.register_output(get(v))
    outs = m._outputs
    for o in n._outputs:
        env[o] = nv = _value(o.shape, o.dtype, o.requires_grad, m, len(outs))
        outs.append(nv)
    return m


def clone_block_into(src: Block, dst: Block, env: dict,
                     value_map: Optional[Callable] = None) -> None:
    for n in src._nodes:
        clone_node(n, env, dst, value_map)


def _substitute(a: Any, tensors: Sequence[Any], k: int) -> Any:
    t = type(a)
    if t is TensorArg:
        return tensors[k + a.index]
    if t is ScratchList:
        return []
    if t is ArrayArg:
        return tensors[k + a.index]._data
    if t is tuple or t is list or t is TensorList:
        return t([_substitute(x, tensors, k) for x in a])
    return a


def _arg_refs(args: Any) -> List[int]:
    refs: List[int] = []

    def walk(a: Any) -> None:
        if type(a) in _PLACEHOLDERS:
            refs.append(a.index)
        elif type(a) in (tuple, list, TensorList):
            for x in a:
                walk(x)
    walk(args)
    return refs


# ---------------------------------------------------------------------------- printing
def _fmt_const(arr: np.ndarray) -> str:
    if arr.size <= 6:
        if arr.ndim == 0:
            return repr(arr.item())
        return np.array2string(arr, separator=", ").replace("\n", "")
    return f"<{type_str(arr.shape, arr.dtype)}>"


def _fmt_arg(a: Any, node: Node) -> str:
    if type(a) in _PLACEHOLDERS:
        return "%" + node._inputs[node.num_tensor_inputs + a.index].debug_name
    if type(a) is TensorList:
        return "[" + ", ".join(_fmt_arg(x, node) for x in a) + "]"
    if type(a) is tuple and (node.op is None or _arg_refs(a)):
        return "(" + ", ".join(_fmt_arg(x, node) for x in a) + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, np.ndarray):
        return _fmt_const(a)
    if isinstance(a, np.dtype):
        return _SHORT.get(a.name, a.name)
    if type(a) is tuple and a and all(type(s) is tuple and len(s) == 3 and hasattr(s[0], "name")
                                      for s in a):      # view steps
        return "<" + ", ".join(s[0].name for s in a) + ">"
    r = repr(a)
    return r if len(r) <= 60 else r[:57] + "..."


def _fmt_attrs(n: Node) -> str:
    parts = []
    if n.op is not None:
        names = n.op.arg_names
        for i, a in enumerate(n.args):
            s = _fmt_arg(a, n)
            parts.append(f"{names[i]}={s}" if i < len(names) else s)
    else:
        for k, v in n.attrs.items():
            if k == "value":
                parts.append(f"value={_fmt_const(v)}")
            elif k == "name":
                parts.append(f'name="{v}"')
            elif k == "op":
                parts.append(f'op="{v.name}"')
            elif k == "name" or k == "fn":
                continue
            elif k in ("args", "kwargs") and v:
                parts.append(f"{k}={_fmt_arg(v, n) if k == 'args' else repr(v)}")
            elif k in ("size", "dtype"):
                parts.append(f"{k}={_fmt_arg(tuple(v) if k == 'size' else v, n)}")
    return "[" + ", ".join(parts) + "]" if parts else ""


def _fmt_node(n: Node, indent: str, lines: List[str]) -> None:
    outs = ", ".join(f"%{o.debug_name} : {o.type_str()}" for o in n._outputs)
    k = n.num_tensor_inputs if n.op is not None else len(n._inputs)
    ins = ", ".join("%" + v.debug_name for v in n._inputs[:k])
    line = f"{indent}{outs + ' = ' if outs else ''}{n.kind()}{_fmt_attrs(n)}({ins})"
    if n.source:
        line = line.ljust(60) + f"  # {n.source}"
    lines.append(line)
    for i, b in enumerate(n._blocks):
        params = ", ".join(f"%{p.debug_name} : {p.type_str()}" for p in b._params)
        lines.append(f"{indent}  block{i}({params}):")
        for sub in b._nodes:
            _fmt_node(sub, indent + "    ", lines)
        lines.append(f"{indent}    -> ({', '.join('%' + v.debug_name for v in b.outputs())})")


class _Naming:
    """Number the unnamed values of ``g`` in printing order while printing."""

    def __init__(self, g: "Graph") -> None:
        self.g = g

    def __enter__(self) -> None:
        _NAMES_LOCK.acquire()
        _PRINT_NAMES.clear()
        taken = {v._name for v in all_values(self.g) if v._name is not None}
        k = 0
        for v in all_values(self.g):
            if v._name is None:
                while str(k) in taken:
                    k += 1
                _PRINT_NAMES[id(v)] = str(k)
                k += 1

    def __exit__(self, *exc: Any) -> None:
        _PRINT_NAMES.clear()
        _NAMES_LOCK.release()


def format_graph(g: Graph, title: str = "graph") -> str:
    """TorchScript-like text: one value per line with its type and the user's source line."""
    with _Naming(g):
        return _format_graph(g, title)


def _format_graph(g: Graph, title: str) -> str:
    ins = ", ".join(f"%{v.debug_name} : {v.type_str()}" for v in g.inputs())
    lines = [f"{title}({ins}):"]
    for n in g.nodes():
        _fmt_node(n, "  ", lines)
    lines.append(f"  return ({', '.join('%' + v.debug_name for v in g.outputs())})")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- DOT
def _dot_id(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _dot_body(g: Graph, prefix: str) -> str:
    out: List[str] = []
    ids: dict = {}

    def vid(v: Value) -> str:
        return ids.setdefault(id(v), f"{prefix}v{len(ids)}")

    out.append('  node [shape=box, fontname="monospace"];\n')
    def label(v: Value, typed: bool = True) -> str:
        return _dot_id("%" + v.debug_name + (" : " + v.type_str() if typed else ""))

    for v in g.inputs():
        out.append(f"  {vid(v)} [shape=ellipse, label={label(v)}];\n")

    def emit_block(b: Block, depth: int) -> None:
        for n in b._nodes:
            nid = f"{prefix}n{id(n)}"
            text = n.kind() + _fmt_attrs(n)
            if n.source:
                text += "\\n" + n.source
            out.append(f"  {nid} [label={_dot_id(text)}];\n")
            for v in n._inputs:
                src = vid(v)
                out.append(f"  {src} -> {nid};\n")
            for o in n._outputs:
                out.append(f"  {vid(o)} [shape=plaintext, label={label(o)}];\n")
                out.append(f"  {nid} -> {vid(o)};\n")
            for sb in n._blocks:
                out.append(f"  subgraph {_dot_id('cluster_' + nid + '_' + str(depth))} {{\n"
                           f"  label={_dot_id(n.kind() + ' block')};\n")
                for p in sb._params:
                    out.append(f"  {vid(p)} [shape=ellipse, label={label(p, False)}];\n")
                emit_block(sb, depth + 1)
                ret = f"{nid}_ret"
                out.append(f"  {ret} [shape=point];\n")
                for v in sb.outputs():
                    out.append(f"  {vid(v)} -> {ret};\n")
                out.append("  }\n")
                out.append(f"  {ret} -> {nid} [style=dashed];\n")
    emit_block(g.block(), 0)
    rid = f"{prefix}return"
    out.append(f"  {rid} [shape=doublecircle, label=\"return\"];\n")
    for i, v in enumerate(g.outputs()):
        out.append(f"  {vid(v)} -> {rid} [label=\"{i}\"];\n")
    return "".join(out)


def dot_side_by_side(graphs: Sequence[tuple]) -> str:
    """DOT source with one cluster per ``(title, graph)``, side by side."""
    parts = ["digraph gradient {\n  rankdir=TB;\n"]
    for k, (title, g) in enumerate(graphs):
        parts.append(f"  subgraph {_dot_id('cluster_' + title)} {{\n  label={_dot_id(title)};\n")
        with _Naming(g):
            parts.append(_dot_body(g, f"g{k}_"))
        parts.append("  }\n")
    parts.append("}\n")
    return "".join(parts)


def all_values(g: Graph) -> Iterator[Value]:
    """Every value of ``g`` in printing order."""
    yield from g.inputs()
    for n in g.all_nodes():
        yield from n._outputs
        for b in n._blocks:
            yield from b._params


def _unused(*_: Any) -> None:
    return None
