"""Code generation: a ``Graph`` as one straight-line Python function over NumPy.

Note [Generated code]
``generate(graph)`` turns a graph (``f`` or ``df`` of a ``Gradient``, or any traced graph) into
the source of one Python function, ``def f(a0, a1, ...): ... return (...)``, compiles it and
registers the source in ``linecache`` under a name like ``<ndgrad-graph-3>``, so a traceback
through generated code shows its lines; ``.code`` holds the source. The function works on
raw ndarrays: no Tensor, no dispatcher, no graph recording.

* Every op node is ``op.forward(*arrays, *args)``, exactly what the eager dispatcher runs
  (Note [Graph interface] in ir.py); the forward function is bound once as a module global.
  For a few hot ops whose forward is a thin wrapper, the wrapper's body for the node's static
  dtypes and arguments is emitted instead (``_direct``): the same NumPy calls in the same
  order, so results are bitwise those of the interpreter and of eager. Scalar operands become
  the same cached read-only 0-d arrays eager uses (Note [Scalars as cached 0-d arrays] in
  ops/pointwise.py); other constants are module globals.
* Shapes are static: broadcast undoing (``SumToSize``) compiles to one reduction over dims
  known at generation time, or to nothing.
* Values are freed (``del``) right after their last use, so peak memory follows the graph's
  liveness, not its length.
* Undefined gradients (``None``, AutogradZero semantics) are resolved at generation time:
  ``generate(graph, undefined=...)`` takes the set of inputs known to be ``None`` and
  propagates it (``AutogradAdd(None, x)`` is ``x``; a ``GradOf`` whose inputs are all ``None``
  yields ``None``; an op inside a ``GradOf`` block with some but not all inputs ``None`` gets
  zeros for them). The executor keeps one generated variant per pattern (executor.py).
* A 0-d result is converted with ``np.asarray`` (the dispatcher does the same: NumPy returns
  scalars for 0-d ufunc results).

Example:
    >>> import ndgrad
    >>> from ndgrad.jit import trace_graph
    >>> from ndgrad.jit.codegen import generate
    >>> x = ndgrad.ones(3)
    >>> g = generate(trace_graph(lambda x: (x * 2).tanh(), (x,)).graph)
    >>> print(g.code)  # doctest: +ELLIPSIS
    def f(a0):
        ...
    >>> g(x.numpy())[0].round(3)
    array([0.964, 0.964, 0.964], dtype=float32)
"""

from __future__ import annotations

import itertools
import linecache
import math
import threading
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

from ..autograd.saved import TensorList
from ..ops import linalg as _linalg
from ..ops import pointwise as _pw
from ..ops import reduction as _red
from ..ops import shape as _shape
from ..tensor import _wrap
from .blas_threads import MAX_MACS, single_blas_thread
from .ir import ArrayArg, Graph, TensorArg, Value

__all__ = ["generate", "GeneratedFunction"]

_counter = itertools.count()
_lock = threading.Lock()
_FAST_FLOATS = frozenset(np.dtype(d) for d in ("float32", "float64", "complex64", "complex128"))
_LITERALS = (int, bool, str, type(None))
_PRODUCTS = frozenset((_linalg.MM, _linalg.BMM, _linalg.MV, _linalg.DOT))
_SMALL_NUMEL = 1 << 18      # functions whose results are all this small, with small products,
#                             run their products on one BLAS thread (blas_threads.py)
_RESHAPES = frozenset((_shape.VIEW, _shape.RESHAPE_COPY, _shape.SQUEEZE, _shape.SQUEEZE_DIM,
                       _shape.SQUEEZE_DIMS, _shape.UNSQUEEZE))


class GeneratedFunction:
    """A compiled graph: call it with one ndarray (or None) per graph input; it returns a tuple
    with one ndarray (or None) per graph output. ``code`` is its source, ``filename`` the name
    tracebacks show."""

    __slots__ = ("fn", "code", "filename", "single_thread", "__weakref__")

    def __init__(self, fn: Callable, code: str, filename: str,
                 single_thread: bool = False) -> None:
        self.fn = fn
        self.code = code
        self.filename = filename
        # Note [Single-threaded small GEMMs] in blas_threads.py
        self.single_thread = single_thread

    def __call__(self, *arrays: Any) -> tuple:
        if self.single_thread:
            with single_blas_thread():
                return self.fn(*arrays)
        return self.fn(*arrays)

    def __repr__(self) -> str:
        return f"<GeneratedFunction {self.filename}>"


def generate(graph: Graph, undefined: Iterable[int] = (), name: str = "f",
             copy_outputs: Iterable[int] = (), backend: str = "numpy",
             private_from: Optional[int] = None) -> GeneratedFunction:
    """Generate, compile and register the code of ``graph``; ``undefined``: indices of inputs
    that are always ``None`` (undefined gradients) for this variant; ``copy_outputs``: output
    positions returned as copies (outputs a pass merged that must stay distinct arrays);
    ``backend="numba"`` runs runs of small elementwise ops in the VM (Note [Elementwise VM] in
    numba_backend.py); outputs from position ``private_from`` on (temporaries only the executor
    sees) may be views of the VM's register array instead of copies."""
    gen = _Gen(name, fuse=backend == "numba")
    gen.private_from = len(graph.outputs()) if private_from is None else private_from
    src, glb = gen.build(graph, frozenset(undefined), frozenset(copy_outputs))
    with _lock:
        n = next(_counter)
    filename = f"<ndgrad-graph-{n}>"
    code = compile(src, filename, "exec")
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = dict(glb)
    # NumPy's floating point warnings are attributed to the caller's module: generated code
    # belongs to ndgrad, whose warning filter silences them (Note [No floating point warnings])
    ns["__name__"] = "ndgrad.jit.generated"
    exec(code, ns)
    single = gen.blas_macs > 0 and gen.blas_macs <= MAX_MACS and gen.max_numel <= _SMALL_NUMEL
    return GeneratedFunction(ns[name], src, filename, single)


# ---------------------------------------------------------------------------- the generator
class _Reg:
    """A value held in row ``idx`` of the register array ``_R`` (numba tier)."""

    __slots__ = ("idx", "value")

    def __init__(self, idx: int, value: Value) -> None:
        self.idx, self.value = idx, value


class _Env(dict):
    """Value -> source name; a value living in a VM register is given a name (a view of its
    row) when some non-VM code reads it."""

    def __init__(self, gen: "_Gen") -> None:
        super().__init__()
        self.gen = gen

    def __getitem__(self, v: Any) -> Any:
        x = dict.__getitem__(self, v)
        if type(x) is _Reg:
            return self.gen.materialize(x)
        return x


class _Gen:
    def __init__(self, name: str, fuse: bool = False) -> None:
        self.name = name
        self.fuse = fuse
        self.cluster: list = []       # pending VM instructions: (opcode, dst, a, b)
        self.loads: list = []         # pending loads: (register, name)
        self.loaded: dict = {}        # name -> register holding it
        self.nreg = 0
        self.rclass: Any = None       # (numel, dtype) of the register array
        self.imms: list = []
        self.mat_names: dict = {}     # register -> materialized name
        self.reg_views: set = set()
        self.view_of: dict = {}       # materialized name -> its register
        self.pending: set = set()     # registers the pending VM call computes
        self.nclusters = 0
        self.private_from = 0
        self.blas_macs = 0            # the largest matrix product (multiply-adds)
        self.max_numel = 0            # the largest op result
        self.glb: dict = {"_np": np, "_asarray": np.asarray, "_wrap": _wrap,
                          "_TensorList": TensorList}
        self._glb_ids: dict = {}
        self.lines: list = []         # (text, used names, defined names)
        self.k = 0
        self.maybe_none: set = set()  # names that may hold None at run time (OpBackward)
        self.const_vals: dict = {}    # constant global name -> its array
        self.folded: dict = {}        # Value -> constant name (constant folding)

    # ---- names
    def fresh(self) -> str:
        self.k += 1
        return f"v{self.k}"

    def bind(self, obj: Any, hint: str) -> str:
        """A module global holding ``obj`` (deduplicated by identity)."""
        key = id(obj)
        hit = self._glb_ids.get(key)
        if hit is not None and self.glb[hit] is obj:
            return hit
        base = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in hint)[:40] or "c"
        nm = f"_{base}"
        i = 0
        while nm in self.glb:
            i += 1
            nm = f"_{base}_{i}"
        self.glb[nm] = obj
        self._glb_ids[key] = nm
        return nm

    def lit(self, a: Any) -> str:
        """Source text for a non-tensor argument: a literal when exact, else a global."""
        t = type(a)
        if t in _LITERALS:
            return repr(a)
        if t is float:
            if a != a or a in (float("inf"), float("-inf")):
                return self.bind(a, "float")
            return repr(a)
        if t is tuple and all(type(x) in _LITERALS for x in a):
            return repr(a)
        return self.bind(a, t.__name__)

    def emit(self, text: str, used: Sequence[str], defined: Sequence[str]) -> None:
        self.lines.append((text, tuple(u for u in used if u), tuple(defined)))

    # ---- graph walk
    def build(self, graph: Graph, undefined: frozenset, copies: frozenset = frozenset()
              ) -> tuple:
        env: dict = _Env(self)
        params = []
        for i, v in enumerate(graph.inputs()):
            nm = f"a{i}"
            params.append(nm)
            env[v] = None if i in undefined else nm
        self.block(graph.block().nodes(), env, in_grad_of=False)
        self.flush()
        outs = []
        for k, v in enumerate(graph.outputs()):
            nm = env[v]
            if nm is not None and (nm in self._const_names or k in copies
                                   or (nm in self.reg_views and k < self.private_from)):
                c = self.fresh()      # a constant returned must not be shared between calls
                self.emit(f"{c} = {nm}.copy()", (nm,), (c,))
                nm = c
            outs.append(nm)
        if self.nreg:
            numel, dt = self.rclass
            d = self.bind(dt, f"dtype_{dt.name}")
            self.lines.insert(0, (f"_R = _np.empty(({self.nreg}, {numel}), {d})", (), ()))
        return self.finish(params, outs), self.glb

    _const_names: frozenset = frozenset()

    def block(self, nodes: Sequence, env: dict, in_grad_of: bool) -> None:
        for n in nodes:
            kind = n.kind()
            if self.fuse and n.op is not None and self.try_fuse(n, env):
                continue
            if n.op is not None:
                self.op_node(n, env, in_grad_of)
            else:
                getattr(self, "prim_" + kind, self.prim_generic)(n, env, in_grad_of)

    # ---- primitives
    def prim_Constant(self, n, env, in_grad_of) -> None:
        env[n.output()] = self.constant(n.attrs["value"])

    def constant(self, val: Any) -> str:
        nm = self.bind(val, "const")
        self._const_names = self._const_names | {nm}
        self.const_vals[nm] = val
        return nm

    def fold(self, n, ins: list, run: Callable) -> bool:
        """Constant folding: a node whose inputs are all constants is run now and its outputs
        become constants (read-only, copied if returned)."""
        if not ins or not all(x in self.const_vals for x in ins):
            return False
        if materializes(n, [self.const_vals[x] for x in ins]):
            return False
        outs = run([self.const_vals[x] for x in ins])
        for o, arr in zip(n.outputs(), outs):
            arr = np.asarray(arr)
            if arr.flags.writeable:
                arr.flags.writeable = False
            env_name = self.constant(arr)
            self.folded[o] = env_name
        return True

    def prim_AutogradZero(self, n, env, in_grad_of) -> None:
        env[n.output()] = None

    def prim_AutogradAdd(self, n, env, in_grad_of) -> None:
        ra, rb = (dict.get(env, v) for v in n.inputs())
        if ra is None or rb is None:
            env[n.output()] = ra if rb is None else rb
            return
        if self.fuse and type(ra) is _Reg and type(rb) is _Reg and \
                n.output().dtype == self.rclass[1]:
            from .numba_backend import OPCODES   # local import: the optional tier
            dst = self.nreg
            self.nreg += 1
            self.cluster.append((OPCODES["add"], dst, ra.idx, rb.idx))
            self.pending.add(dst)
            env[n.output()] = _Reg(dst, n.output())
            return
        a, b = (env[v] for v in n.inputs())
        out = self.fresh()
        if a in self.maybe_none or b in self.maybe_none:
            self.emit(f"{out} = {b} if {a} is None else {a} if {b} is None else {a} + {b}",
                      (a, b), (out,))
            if a in self.maybe_none and b in self.maybe_none:
                self.maybe_none.add(out)
        else:
            self.emit(f"{out} = {a} + {b}", (a, b), (out,))
        env[n.output()] = out

    def prim_Detach(self, n, env, in_grad_of) -> None:
        env[n.output()] = dict.get(env, n.input())

    def prim_SumToSize(self, n, env, in_grad_of) -> None:
        v = n.input()
        shape = tuple(n.attrs["size"])
        if dict.get(env, v) is None or tuple(v.shape) == shape:
            env[n.output()] = dict.get(env, v)
            return
        x = env[v]
        xs = tuple(v.shape)
        lead = len(xs) - len(shape)
        dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                          if s == 1 and xs[lead + i] != 1)
        fwd = self.bind(_red.SUM_TO_SIZE.forward, "sum_to_size")
        out = self.fresh()
        self.emit(f"{out} = {self.guard(x)}{fwd}({x}, {dims!r}, {shape!r})", (x,), (out,))
        self.propagate(x, out)
        self.fix0d(out, n.output())
        env[n.output()] = out

    def prim_Cast(self, n, env, in_grad_of) -> None:
        dt = np.dtype(n.attrs["dtype"])
        if dict.get(env, n.input()) is None or n.input().dtype == dt:
            env[n.output()] = dict.get(env, n.input())
            return
        x = env[n.input()]
        src = x
        out = self.fresh()
        if n.input().dtype.kind == "c" and dt.kind != "c":
            fwd = self.bind(_pw.REAL.forward, "real")
            self.emit(f"{out} = {self.guard(x)}{fwd}({x})", (x,), (out,))
            src = out
            if x in self.maybe_none:
                self.maybe_none.add(out)
            if np.dtype(_real_dtype(n.input().dtype)) == dt:
                env[n.output()] = out
                return
            out = self.fresh()
        d = self.bind(dt, f"dtype_{dt.name}")
        self.emit(f"{out} = {self.guard(src)}{src}.astype({d})", (src,), (out,))
        self.propagate(src, out)
        env[n.output()] = out

    def prim_BroadcastTo(self, n, env, in_grad_of) -> None:
        shape = tuple(n.attrs["size"])
        if dict.get(env, n.input()) is None or tuple(n.input().shape) == shape:
            env[n.output()] = dict.get(env, n.input())
            return
        x = env[n.input()]
        out = self.fresh()
        self.emit(f"{out} = {self.guard(x)}_np.broadcast_to({x}, {shape!r})", (x,), (out,))
        self.propagate(x, out)
        env[n.output()] = out

    def prim_GradOf(self, n, env, in_grad_of) -> None:
        ins = [dict.get(env, v) for v in n.inputs()]
        (blk,) = n.blocks()
        if all(x is None for x in ins):
            for o in n.outputs():
                env[o] = None
            return
        for p, x in zip(blk.inputs(), ins):
            env[p] = x
        self.block(blk.nodes(), env, in_grad_of=True)
        for o, r in zip(n.outputs(), blk.outputs()):
            env[o] = dict.get(env, r)

    def prim_OpBackward(self, n, env, in_grad_of) -> None:
        ins = [env[v] for v in n.inputs()]
        fn = self.bind(_op_backward, "op_backward")
        node = self.bind(n, f"node_{n.attrs['op'].name}")
        outs = [self.fresh() for _ in n.outputs()]
        args = ", ".join(x if x is not None else "None" for x in ins)
        tgt = ", ".join(outs) + ("," if len(outs) == 1 else "")
        self.emit(f"{tgt} = {fn}({node}, [{args}])  # {n.attrs['op'].name} backward rule",
                  ins, outs)
        for o, nm in zip(n.outputs(), outs):
            env[o] = nm
            self.maybe_none.add(nm)

    def prim_generic(self, n, env, in_grad_of) -> None:
        """Any other primitive (``Call`` ...): the interpreter's own rule on Tensors wrapping
        the arrays."""
        ins = [env[v] for v in n.inputs()]
        if n.kind() == "Call" and self.fold(n, ins, lambda arrays: _run_prim(n, arrays)):
            for o in n.outputs():
                env[o] = self.folded.pop(o)
            return
        fn = self.bind(_run_prim, "run_prim")
        node = self.bind(n, f"node_{n.kind()}")
        outs = [self.fresh() for _ in n.outputs()]
        args = ", ".join(x if x is not None else "None" for x in ins)
        tgt = ", ".join(outs) + ("," if len(outs) == 1 else "")
        self.emit(f"{tgt} = {fn}({node}, [{args}])  # {n.kind()}", ins, outs)
        for o, nm in zip(n.outputs(), outs):
            env[o] = nm

    # ---- the numba tier (Note [Elementwise VM] in numba_backend.py)
    def try_fuse(self, n, env) -> bool:
        from .numba_backend import OPCODES, fusible   # local import: the optional tier
        spec = fusible(n)
        if spec is None:
            return False
        out = n.output()
        numel = 1
        for d in out.shape:
            numel *= d
        cls = (numel, out.dtype)
        if self.rclass is None:
            self.rclass = cls
        elif self.rclass != cls:
            return False
        # Optional names; the check below returns on any None.
        raw: list[Any] = [dict.get(env, v) for v in n.inputs()]
        if any(x is None for x in raw):
            return False          # an undefined operand: zeros are materialized by op_node
        regs = [x.idx if type(x) is _Reg else self.view_of[x] if x in self.view_of
                else self.load(x) for x in raw]
        name, imm = spec
        dst = self.nreg
        self.nreg += 1
        if imm is not None:
            b = len(self.imms) + 2
            self.imms.append(imm)
        else:
            b = regs[1] if len(regs) > 1 else 0
        self.cluster.append((OPCODES[name], dst, regs[0], b))
        self.pending.add(dst)
        dict.__setitem__(env, out, _Reg(dst, out))
        return True

    def load(self, name: str) -> int:
        r = self.loaded.get(name)
        if r is None:
            r = self.loaded[name] = self.nreg
            self.nreg += 1
            self.loads.append((r, name))
        return r

    def flush(self) -> None:
        if not self.cluster:
            return
        for r, name in self.loads:
            self.emit(f"_R[{r}] = {name}.reshape(-1)", (name,), ())
        numel, dt = self.rclass
        prog = np.array(self.cluster, dtype=np.int32)
        prog.flags.writeable = False
        imm = np.array([1, 0] + self.imms, dtype=dt)
        self.imms = []
        from .numba_backend import get_vm   # local import: the optional tier
        vm = self.bind(get_vm(), "vm")
        p = self.bind(prog, "prog")
        i = self.bind(imm, "imm")
        self.emit(f"{vm}({p}, {i}, _R)  # {len(self.cluster)} elementwise ops in the VM",
                  (), ())
        self.cluster = []
        self.loads = []
        self.pending = set()
        self.nclusters += 1

    def materialize(self, reg: _Reg) -> str:
        nm = self.mat_names.get(reg.idx)
        if nm is None:
            if reg.idx in self.pending:
                self.flush()          # the value is computed by the pending VM call
            nm = self.mat_names[reg.idx] = self.fresh()
            self.emit(f"{nm} = _R[{reg.idx}].reshape({tuple(reg.value.shape)!r})", (), (nm,))
            self.reg_views.add(nm)
            self.view_of[nm] = reg.idx
        return nm

    # ---- op nodes
    def op_node(self, n, env, in_grad_of) -> None:
        ins = [env[v] for v in n.inputs()]
        k = n.num_tensor_inputs
        if any(x is None or x in self.maybe_none for x in ins):
            # as the interpreter: an undefined operand is zeros (interpret.materialize)
            ins = [self.zeros(v, x) if x is None or x in self.maybe_none else x
                   for v, x in zip(n.inputs(), ins)]
        if self.fold(n, ins, lambda arrays: _run_op(n, arrays)):
            for o in n.outputs():
                env[o] = self.folded.pop(o)
            return
        for o in n.outputs():
            self.max_numel = max(self.max_numel, _numel(o.shape))
        if n.op in _PRODUCTS:
            self.blas_macs = max(self.blas_macs, _numel(n.output().shape) * max(
                1, n.inputs()[0].shape[-1] if n.inputs()[0].shape else 1))
        outs = [self.fresh() for _ in n.outputs()]
        expr = self.direct(n, ins) if len(outs) == 1 else None
        if expr is None:
            fwd = self.bind(n.op.forward, f"{n.op.name}_fwd")
            parts = list(ins[:k]) + [self.arg(a, ins, k) for a in n.args]
            expr = f"{fwd}({', '.join(parts)})"
        tgt = outs[0] if len(outs) == 1 else ", ".join(outs)
        src = f"  # {n.op.name}" + (f"  {n.source}" if n.source else "")
        self.emit(f"{tgt} = {expr}{src}", ins, outs)
        for o, nm in zip(n.outputs(), outs):
            self.fix0d(nm, o)
            env[o] = nm

    def guard(self, x: str) -> str:
        """Prefix making an expression None when ``x`` may be None at run time (which then
        propagates to the result's name)."""
        if x in self.maybe_none:
            return f"None if {x} is None else "
        return ""

    def propagate(self, x: str, out: str) -> None:
        if x in self.maybe_none:
            self.maybe_none.add(out)

    def fix0d(self, nm: str, v: Value) -> None:
        if v.shape == ():
            self.emit(f"{nm} = {self.guard(nm)}_asarray({nm})", (nm,), (nm,))

    def zeros(self, v: Value, x: Optional[str] = None) -> str:
        nm = self.fresh()
        d = self.bind(v.dtype, f"dtype_{v.dtype.name}")
        z = f"_np.zeros({tuple(v.shape)!r}, {d})"
        if x is None:
            self.emit(f"{nm} = {z}", (), (nm,))
        else:
            self.emit(f"{nm} = {z} if {x} is None else {x}", (x,), (nm,))
        return nm

    def arg(self, a: Any, ins: list, k: int) -> str:
        """Source for one argument, with the placeholders of Note [Graph interface] replaced:
        ``TensorArg`` by a Tensor wrapping the input's array, ``ArrayArg`` by the array."""
        t = type(a)
        if t is TensorArg:
            return f"_wrap({ins[k + a.index]})"
        if t is ArrayArg:
            return ins[k + a.index]
        if (t is tuple or t is list or t is TensorList) and _has_placeholder(a):
            items = ", ".join(self.arg(x, ins, k) for x in a)
            if t is list:
                return f"[{items}]"
            body = f"({items}{',' if len(a) == 1 else ''})"
            return body if t is tuple else f"_TensorList({body})"
        return self.lit(a)

    def direct(self, n, ins: list) -> Optional[str]:
        """NumPy source equal to ``n.op.forward(*ins, *n.args)`` for the node's static types,
        or None (then the forward itself is called)."""
        op, args = n.op, n.args
        fwd = op.forward
        k = n.num_tensor_inputs
        if k != len(ins):
            return None
        iv = n.inputs()
        dt = iv[0].dtype if iv else None
        if isinstance(fwd, np.ufunc) and not args and fwd.nin == k:
            f = self.bind(fwd, f"np_{fwd.__name__}")
            return f"{f}({', '.join(ins)})"
        if op in _RESHAPES and k == 1:
            # a view or copy with the traced output shape: the same values either way
            return f"{ins[0]}.reshape({tuple(n.output().shape)!r})"
        if op is _shape.T_OP:
            return f"{ins[0]}.T"
        if op is _shape.TRANSPOSE and len(args) == 2:
            return (f"{ins[0]}.swapaxes({args[0]!r}, {args[1]!r})" if iv[0].shape
                    else f"{ins[0]}[...]")
        if op is _shape.PERMUTE and len(args) == 1:
            return f"{ins[0]}.transpose({self.lit(tuple(args[0]))})"
        if dt not in _FAST_FLOATS or n.output().dtype != dt:
            return None
        if op is _pw.ADD and args in ((), (1,)):
            return f"{ins[0]} + {ins[1]}"
        if op is _pw.SUB and args in ((), (1,)):
            return f"{ins[0]} - {ins[1]}"
        if op in (_pw.MUL_S, _pw.DIV_S, _pw.ADD_S, _pw.SUB_S) and len(args) >= 1:
            if op in (_pw.ADD_S, _pw.SUB_S) and len(args) > 1 and args[1] != 1:
                return None
            s = _pw._s(np.empty((), dt), args[0])
            c = self.bind(s, "scalar") if isinstance(s, np.ndarray) else self.lit(s)
            if type(s) is not np.ndarray and type(s) not in (int, float, bool):
                return None
            sym = {_pw.MUL_S: "np_multiply", _pw.DIV_S: "np_true_divide"}.get(op)
            if sym is not None:
                f = self.bind(np.multiply if op is _pw.MUL_S else np.true_divide, sym)
                return f"{f}({ins[0]}, {c})"
            return f"{ins[0]} {'+' if op is _pw.ADD_S else '-'} {c}"
        if op is _pw.TANH_BACKWARD and dt.kind == "f" and iv[1].dtype == dt:
            one = self.bind(_pw._s(np.empty((), dt), 1), "one")
            return f"{ins[0]} * ({one} - {ins[1]} * {ins[1]})"
        if op in (_linalg.MM, _linalg.BMM, _linalg.MV, _linalg.DOT) and iv[1].dtype == dt:
            f = self.bind(np.matmul, "np_matmul")
            return f"{f}({ins[0]}, {ins[1]})"
        if op in (_red.SUM, _red.SUM_DIM) and len(args) == 3:
            f = self.bind(np.add.reduce, "np_add_reduce")
            return (f"{f}({ins[0]}, axis={self.lit(args[0])}, keepdims={self.lit(args[1])}, "
                    f"dtype={self.lit(args[2])})")
        return None

    # ---- output
    def finish(self, params: list, outs: list) -> str:
        lines = self.lines
        keep = {o for o in outs if o is not None}
        last: dict = {}
        for i, (_, used, defined) in enumerate(lines):
            for u in used:
                last[u] = i
            for d in defined:
                last.setdefault(d, i)
        for p in params:
            last.setdefault(p, -1)
        # frees after line i
        frees: dict = {}
        for nm, i in last.items():
            if nm in keep or nm.startswith("_"):
                continue
            frees.setdefault(i, []).append(nm)
        body = []
        if -1 in frees:
            body.append("del " + ", ".join(sorted(frees[-1])))
        for i, (text, _used, _defined) in enumerate(lines):
            body.append(text)
            dead = frees.get(i)
            if dead:
                body.append("del " + ", ".join(sorted(dead, key=_natural)))
        ret = ", ".join(o if o is not None else "None" for o in outs)
        if len(outs) == 1:
            ret += ","
        body.append(f"return ({ret})")
        head = f"def {self.name}({', '.join(params)}):"
        return head + "\n" + "".join(f"    {ln}\n" for ln in body)


def _op_backward(node: Any, arrays: list) -> tuple:
    """An ``OpBackward`` node (a VJP rule that branches on data) run on arrays: the rule runs
    on Tensors wrapping them (grad mode is off: the raw backward records nothing)."""
    from .differentiate import run_op_backward   # local import: same layer, loaded lazily
    outs = run_op_backward(node, [None if a is None else _wrap(a) for a in arrays])
    return tuple(None if t is None else t._data for t in outs)


def _numel(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _has_placeholder(a: Any) -> bool:
    t = type(a)
    if t is TensorArg or t is ArrayArg:
        return True
    if t is tuple or t is list or t is TensorList:
        return any(_has_placeholder(x) for x in a)
    return False


_FOLD_MAX = 1 << 16     # elements


def materializes(n: Any, arrays: Sequence[Any]) -> bool:
    """True when folding ``n`` would store a large constant bigger than the data its inputs
    hold (an expand of a scalar, arithmetic on one): it is computed at run time instead, so a
    compiled function keeps no dense copy of a broadcast for its lifetime (peak memory)."""
    out = sum(math.prod(o.shape) for o in n.outputs())
    if out <= _FOLD_MAX:
        return False
    held = 1
    for a in arrays:
        a = np.asarray(a)
        if all(st or sh <= 1 for st, sh in zip(a.strides, a.shape)):
            held = max(held, a.size)
    return out > held


def _run_op(node: Any, arrays: list) -> tuple:
    """An op node on arrays, as the dispatcher runs it (constant folding)."""
    k = node.num_tensor_inputs
    args = node.call_args([_wrap(a) for a in arrays])
    out = node.op.forward(*arrays[:k], *args)
    return (out,) if node.op.num_outputs == 1 else tuple(out)


def _run_prim(node: Any, arrays: list) -> tuple:
    from .interpret import run_prim   # local import: same layer, loaded lazily
    outs = run_prim(node, [None if a is None else _wrap(a) for a in arrays], {})
    return tuple(None if t is None else np.asarray(t._data) for t in outs)


def _natural(s: str) -> tuple:
    return (s[0], int(s[1:]) if s[1:].isdigit() else 0, s)


def _real_dtype(dt: np.dtype) -> np.dtype:
    return np.empty((), dt).real.dtype
