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
* Large results are written into the buffer of an input that dies at that line (Note
  [Buffers reused in place]).
* A 0-d result is converted with ``np.asarray`` (the dispatcher does the same: NumPy returns
  scalars for 0-d ufunc results).

Note [Expands left to broadcasting]
``expand`` (a broadcast view) is not emitted where it is made: an element-wise node reading it
(a ufunc, add/sub, a scalar op) reads the unexpanded source and lets NumPy broadcast, which
computes every element from the same operands, so the same bits; its result keeps the smaller
shape (again pending broadcasting) until its shape is the traced one. Any other reader (a
reduction, a product, an output, the VM) gets the ``np.broadcast_to`` view the eager forward
makes, emitted at its first use. A mean's or sum's backward (a gradient expanded from a
scalar, then divided) thus divides one element and broadcasts in the next product.

Note [Buffers reused in place]
A line computing a new array element by element (a ufunc, add/sub, a scalar op, relu, relu's
and tanh's backward, ``AutogradAdd``) is rewritten to write into an operand's buffer (``out=``)
when, at generation time, that operand: is a new array made by an earlier line of this function
(never an input, a constant or a VM register: inputs include the captured values df receives);
has the result's shape and dtype; is used for the last time there, and so is every name that
may share memory with it (a line not known to allocate is assumed to return views of all its
operands); and neither it nor any such view is returned (f's outputs include the temporaries
df captures). Element-wise loops give the same bits whether they write into a new array or an
operand's, but a new array takes the memory layout of its operands (and a later reduction or
product then sums in that layout's order): the rewrite is used only when every operand is
C-contiguous, known at generation time (matrix products and element-wise results of C-contiguous
operands are) or checked at run time (``out=(v if x.flags.c_contiguous else None)``, the plain
call when the check fails). Only results of ``INPLACE_MIN_NUMEL`` elements or more are
rewritten: below that the ``out=`` keyword costs more than a new array. The tests run the
op-table comparisons with the threshold at 0.

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

from .. import _aligned
from ..autograd.saved import TensorList
from ..ops import linalg as _linalg
from ..ops import pointwise as _pw
from ..ops import reduction as _red
from ..ops import shape as _shape
from ..ops._ties import _order as _tie_order
from ..ops._workspace import zeros_operand
from ..tensor import _wrap
from .blas_threads import MAX_MACS, column_major_first_is_faster, run_single_threaded
from .gemm_layout import transposed_products
from . import numba_kernels as _nk   # imports numba only when a kernel first runs
from .ir import ArrayArg, Graph, Node, ScratchList, TensorArg, Value
from .random_nodes import is_random

__all__ = ["generate", "GeneratedFunction"]


def _relu_operands(x: str, zero: str, dt: np.dtype) -> list:
    """``np.maximum``'s operands for relu, ordered so that ``relu(-0.0)`` is ``-0.0`` (Note
    [Signed zeros in max and min] in ops/_ties.py)."""
    return [zero, x] if _tie_order(np.maximum, dt) else [x, zero]

_counter = itertools.count()
_lock = threading.Lock()
_FAST_FLOATS = frozenset(np.dtype(d) for d in ("float32", "float64", "complex64", "complex128"))
_LITERALS = (int, bool, str, type(None))
_PRODUCTS = frozenset((_linalg.MM, _linalg.BMM, _linalg.MV, _linalg.DOT))
INPLACE_MIN_NUMEL = 1 << 13  # results this large are written into dead buffers (smaller
#                              ones pay more for ufunc keywords than for a new array)
_SMALL_NUMEL = 1 << 18      # functions whose results are all this small, with small products,
#                             run their products on one BLAS thread (blas_threads.py)
_RESHAPES = frozenset((_shape.VIEW, _shape.RESHAPE_COPY, _shape.SQUEEZE, _shape.SQUEEZE_DIM,
                       _shape.SQUEEZE_DIMS, _shape.UNSQUEEZE))


class GeneratedFunction:
    """A compiled graph: call it with one ndarray (or None) per graph input; it returns a tuple
    with one ndarray (or None) per graph output. ``code`` is its source, ``filename`` the name
    tracebacks show."""

    __slots__ = ("fn", "code", "filename", "single_thread", "owned", "__weakref__")

    def __init__(self, fn: Callable, code: str, filename: str,
                 single_thread: bool = False, owned: bool = False) -> None:
        self.fn = fn
        self.code = code
        self.filename = filename
        # Note [Single-threaded small GEMMs] in blas_threads.py
        self.single_thread = single_thread
        self.owned = owned

    def __call__(self, *arrays: Any) -> tuple:
        if self.owned:
            return self.call_owned(list(arrays))
        if self.single_thread:
            return run_single_threaded(self.fn, arrays)
        return self.fn(*arrays)

    def call_owned(self, arrays: list) -> tuple:
        """Call with the inputs in ``arrays``, which is emptied: an input the function no
        longer reads is freed while it runs when the caller holds no other reference (Note
        [Arguments owned by the backward])."""
        if not self.owned:
            args = tuple(arrays)
            arrays.clear()
            return self(*args)
        if self.single_thread:
            return run_single_threaded(self.fn, (arrays,))
        return self.fn(arrays)

    def __repr__(self) -> str:
        return f"<GeneratedFunction {self.filename}>"


def generate(graph: Graph, undefined: Iterable[int] = (), name: str = "f",
             copy_outputs: Iterable[int] = (), backend: str = "numpy",
             private_from: Optional[int] = None, owned: bool = False) -> GeneratedFunction:
    """Generate, compile and register the code of ``graph``; ``undefined``: indices of inputs
    that are always ``None`` (undefined gradients) for this variant; ``copy_outputs``: output
    positions returned as copies (outputs a pass merged that must stay distinct arrays);
    ``backend="numba"`` runs runs of small elementwise ops in the VM (Note [Elementwise VM] in
    numba_backend.py); outputs from position ``private_from`` on (temporaries only the executor
    sees) may be views of the VM's register array instead of copies. ``owned``: the function
    takes its inputs as one list, which it empties (Note [Arguments owned by the backward])."""
    no_fuse: frozenset = frozenset()
    while True:
        gen = _Gen(name, fuse=backend == "numba", no_fuse=no_fuse)
        gen.owned = owned
        gen.private_from = len(graph.outputs()) if private_from is None else private_from
        src, glb = gen.build(graph, frozenset(undefined), frozenset(copy_outputs))
        if not gen.rejected:
            break
        # VM clusters too small to pay for the call (Note [Elementwise VM]): generated
        # again with their nodes as NumPy calls (each pass rejects new nodes: it ends)
        no_fuse = no_fuse | gen.rejected
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
    # Note [Generated code touches warm pages]
    # A generated function with results of megabytes frees and allocates them on every call.
    # glibc serves blocks above its (dynamic) mmap threshold from fresh pages and trims the
    # heap top past twice that, so every call would fault its results' pages in again: the
    # mlp_large step (GEMM outputs of 2-4 MiB) took ~4300 page faults, several ms of a 55 ms
    # step. The malloc tuning of Note [Kernel workspace] (ops/_workspace.py: blocks below
    # 32 MiB from the heap, 64 MiB of free heap top kept) removes them; the dispatcher applies
    # it when ndgrad is imported, so generated code needs nothing of its own.
    return GeneratedFunction(ns[name], src, filename, single, owned)


def _tt_form(n: Any) -> bool:
    """A small ``g @ t(W)`` (``t`` of a 2-d value) that runs faster as ``asfortranarray(g) @
    t(W)`` (Note [Small products with a transposed second operand] in blas_threads.py)."""
    if n.op is not _linalg.MM:
        return False
    a, b = n.inputs()
    out = n.output()
    src = b.node()
    if src is None or src.op is not _shape.T_OP or out.dtype not in _TT_FLOATS or \
            a.dtype != out.dtype or b.dtype != out.dtype or len(a.shape) != 2 or \
            (a.node() is not None and a.node().op is _shape.T_OP):
        return False
    (m, k), nn = a.shape, b.shape[1]
    return m * k * nn <= MAX_MACS and column_major_first_is_faster(m, k, nn, out.dtype)


_TT_FLOATS = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


# ---------------------------------------------------------------------------- the generator
class _Reg:
    """A value held in row ``idx`` of the register array ``_R`` (numba tier)."""

    __slots__ = ("idx", "value")

    def __init__(self, idx: int, value: Value) -> None:
        self.idx, self.value = idx, value


class _Lazy:
    """An ``expand`` not emitted yet: its value is ``np.broadcast_to(src, value.shape)`` where
    ``src`` has the (smaller) shape ``shape``. Element-wise consumers read ``src`` and let
    NumPy broadcast; any other reader gets the view emitted (Note [Expands left to
    broadcasting])."""

    __slots__ = ("src", "shape", "value", "name", "view")

    def __init__(self, src: str, shape: tuple, value: Value, view: bool = True) -> None:
        self.src, self.shape, self.value = src, shape, value
        self.name: Optional[str] = None
        self.view = view     # an expand's view; False: a computed value, emitted as a new array


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
        if type(x) is _Lazy:
            return self.gen.broadcast(x)
        return x


class _Gen:
    def __init__(self, name: str, fuse: bool = False, no_fuse: frozenset = frozenset()
                 ) -> None:
        self.name = name
        self.fuse = fuse
        self.no_fuse = no_fuse        # ids of nodes emitted as NumPy (their cluster was small)
        self.rejected: set = set()    # ids of nodes of this pass's too small clusters
        self.cluster: list = []       # pending VM instructions: (opcode, dst, a, b)
        self.cluster_nodes: list = []  # the nodes of the pending instructions
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

    def emit(self, text: str, used: Sequence[str], defined: Sequence[str],
             fresh: Optional[Value] = None, inplace: Optional[tuple] = None,
             c_order: Any = False) -> None:
        """One line of the body. ``fresh``: the line defines one new array (owned by the
        function, aliasing nothing) with this value's shape and dtype, C-contiguous whatever
        its operands when ``c_order`` (the transpose of one when ``"F"``); ``inplace``:
        ``(candidates, forms, big)`` from ``inplace_forms`` (Note [Buffers reused in place])."""
        meta = None
        if fresh is not None and fresh.shape != () and not any(d in self.maybe_none
                                                                  for d in defined):
            meta = (tuple(fresh.shape), np.dtype(fresh.dtype), c_order)
        self.lines.append((text, tuple(u for u in used if u), tuple(defined), meta, inplace))

    # ---- graph walk
    def build(self, graph: Graph, undefined: frozenset, copies: frozenset = frozenset()
              ) -> tuple:
        env: dict = _Env(self)
        params = []
        for i, v in enumerate(graph.inputs()):
            nm = f"a{i}"
            params.append(nm)
            env[v] = None if i in undefined else nm
        # Note [Transposed products in generated code] (gemm_layout.py)
        self.transposed = transposed_products(graph, self.elementwise)
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
            self.lines.insert(0, (f"_R = _np.empty(({self.nreg}, {numel}), {d})", (), (),
                                  None, None))
        return self.finish(params, outs), self.glb

    _const_names: frozenset = frozenset()
    owned = False
    transposed: frozenset = frozenset()

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
        if not ins or not all(x in self.const_vals for x in ins) or is_random(n):
            return False            # a draw runs at run time (Note [Random nodes])
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
                n.output().dtype == self.rclass[1] and id(n) not in self.no_fuse:
            from .numba_backend import OPCODES   # local import: the optional tier
            dst = self.nreg
            self.nreg += 1
            self.cluster.append((OPCODES["add"], dst, ra.idx, rb.idx))
            self.cluster_nodes.append(n)
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
            v = n.output()
            same = [x for x, iv in zip((a, b), n.inputs()) if iv.dtype == v.dtype and
                    tuple(iv.shape) == tuple(v.shape)]
            ip = None
            if v.shape != () and v.dtype in _FAST_FLOATS and all(
                    iv.dtype == v.dtype for iv in n.inputs()):
                ip = self._ufunc_forms(self.bind(np.add, "np_add"), [a, b], out, same)
            self.emit(f"{out} = {a} + {b}", (a, b), (out,), v if ip is not None else None, ip)
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
        out = self.fresh()
        if v.dtype.kind in "fc":
            # the forward's own reduction (ops/reduction.py _sum_to_fwd), without its call and
            # without keepdims + reshape when the kept dims are only leading ones
            red = self.bind(np.add.reduce, "np_add_reduce")
            kept = lead < len(dims)
            expr = f"{red}({x}, {dims!r}" + (f", None, None, True).reshape({shape!r})" if kept
                                             else ")")
        else:
            fwd = self.bind(_red.SUM_TO_SIZE.forward, "sum_to_size")
            expr = f"{fwd}({x}, {dims!r}, {shape!r})"
        self.emit(f"{out} = {self.guard(x)}{expr}", (x,), (out,))
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
        if is_random(n):
            self.draw(n, ins, env)
            return
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

    def draw(self, n, ins: list, env) -> None:
        """A random ``Call`` node (Note [Random nodes] in random_nodes.py): its drawing
        function called directly, on arrays (Tensors for its tensor arguments)."""
        a = n.attrs
        fn = self.bind(a["args"][0], f"draw_{a['name']}")
        parts = ", ".join(self.arg(x, ins, 0) for x in a["args"][1:])
        outs = [self.fresh() for _ in n.outputs()]
        tgt = ", ".join(outs) + ("," if a["tuple"] else "")
        src = f"  # {a['name']}" + (f"  {n.source}" if n.source else "")
        self.emit(f"{tgt} = {fn}({parts}){src}", ins, outs)
        for o, nm in zip(n.outputs(), outs):
            env[o] = nm

    # ---- the numba tier (Note [Elementwise VM] in numba_backend.py)
    def try_fuse(self, n, env) -> bool:
        from .numba_backend import OPCODES, fusible   # local import: the optional tier
        if id(n) in self.no_fuse:
            return False
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
        raw: list[Any] = [env[v] if type(dict.get(env, v)) is _Lazy else dict.get(env, v)
                          for v in n.inputs()]
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
        self.cluster_nodes.append(n)
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
        from .numba_backend import worth_a_call   # local import: the optional tier
        if not worth_a_call(len(self.cluster), len(self.loads)):
            self.rejected.update(id(x) for x in self.cluster_nodes)
        for r, name in self.loads:
            self.emit(f"_R[{r}] = {name}.reshape(-1)", (name,), ())
        numel, dt = self.rclass
        # left writeable: numba's dispatcher takes ~0.6 us longer to type a read-only array
        prog = np.array(self.cluster, dtype=np.int32)
        imm = np.array([1, 0] + self.imms, dtype=dt)
        self.imms = []
        from .numba_backend import lazy_vm   # local import: the optional tier
        vm = self.bind(lazy_vm(), "vm")       # numba is imported by its first call
        p = self.bind(prog, "prog")
        i = self.bind(imm, "imm")
        self.emit(f"{vm}({p}, {i}, _R)  # {len(self.cluster)} elementwise ops in the VM",
                  (), ())
        self.cluster = []
        self.cluster_nodes = []
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
    def broadcast(self, lz: _Lazy) -> str:
        """Emit a lazy expand's view (the eager forward's ``broadcast_view``: np.broadcast_to's
        view, built without its ~1.3 µs of argument handling)."""
        if lz.name is not None:
            return lz.name
        nm = lz.name = self.fresh()
        f = self.bind(_shape.broadcast_view, "broadcast_view")
        if lz.view:
            self.emit(f"{nm} = {f}({lz.src}, {tuple(lz.value.shape)!r})  # expand",
                      (lz.src,), (nm,))
        else:        # an element-wise result: a new array, as the plain call makes
            self.emit(f"{nm} = {f}({lz.src}, {tuple(lz.value.shape)!r}).copy()",
                      (lz.src,), (nm,))
        return nm

    def lazy_node(self, n, env) -> bool:
        """Note [Expands left to broadcasting]: an expand becomes a ``_Lazy``; an element-wise
        node reading one reads its source instead. True when the node was handled here."""
        if n.op is _shape.EXPAND and len(n.outputs()) == 1 and n.num_tensor_inputs == 1:
            x = dict.get(env, n.input())
            if type(x) is _Lazy:
                if not x.view:
                    return False      # expanding a pending result: emit that result first
                env[n.output()] = _Lazy(x.src, x.shape, n.output())
                return True
            if type(x) is str and x not in self.maybe_none:
                # a constant too: a mean's backward expands a 0-d gradient and divides it
                env[n.output()] = _Lazy(x, tuple(n.input().shape), n.output())
                return True
            return False
        raw = [dict.get(env, v) for v in n.inputs()]
        if not any(type(x) is _Lazy for x in raw) or not self.elementwise(n):
            return False
        ins = [x.src if type(x) is _Lazy else env[v] for v, x in zip(n.inputs(), raw)]
        if any(x is None or x in self.maybe_none for x in ins):
            return False
        shapes = [x.shape if type(x) is _Lazy else tuple(v.shape)
                  for v, x in zip(n.inputs(), raw)]
        phys = tuple(np.broadcast_shapes(*shapes))
        v = n.output()
        if all(x in self.const_vals for x in ins):
            # constants only: folded at their unexpanded shapes (the same elements)
            (arr,) = _run_op(n, [self.const_vals[x] for x in ins])
            arr = np.asarray(arr)
            if arr.flags.writeable:
                arr.flags.writeable = False
            nm = self.constant(arr)
            env[v] = nm if phys == tuple(v.shape) else _Lazy(nm, phys, v, view=False)
            return True
        expr = self.direct(n, ins)
        if expr is None:
            return False
        out = self.fresh()
        src = f"  # {n.op.name}" + (f"  {n.source}" if n.source else "")
        fresh = inplace = None
        if phys == tuple(v.shape):
            # a full-size result: written into a dead operand's buffer as op_node does (never
            # into a broadcast source, whose graph value has the expanded shape)
            ip = self.inplace_forms(n, ins, out)
            if ip is not None:
                lazy = {x.src for x in raw if type(x) is _Lazy}
                keep = [i for i, c in enumerate(ip[0]) if c not in lazy]
                fresh = v
                inplace = (tuple(ip[0][i] for i in keep), tuple(ip[1][i] + src for i in keep),
                           None if ip[2] is None else ip[2] + src)
        self.emit(f"{out} = {expr}{src}", ins, (out,), fresh, inplace)
        if phys == ():
            self.emit(f"{out} = _asarray({out})", (out,), (out,))
        env[v] = out if phys == tuple(v.shape) else _Lazy(out, phys, v, view=False)
        return True

    def elementwise(self, n) -> bool:
        """Whether ``direct`` emits the node as one broadcasting element-wise NumPy call."""
        op, args = n.op, n.args
        fwd = op.forward
        if len(n.outputs()) != 1:
            return False
        if isinstance(fwd, np.ufunc):
            return not args and fwd.nin == n.num_tensor_inputs == len(n.inputs())
        return (op in (_pw.ADD, _pw.SUB) and args in ((), (1,))
                or op in (_pw.MUL_S, _pw.DIV_S) and len(args) >= 1
                or op in (_pw.ADD_S, _pw.SUB_S) and len(args) >= 1 and (
                    len(args) == 1 or args[1] == 1))

    def op_node(self, n, env, in_grad_of) -> None:
        if self.lazy_node(n, env):
            return
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
        # an op with a variable number of results (split, unbind) returns a sequence even
        # when the node has one result: unpack it
        tgt = (outs[0] if len(outs) == 1 and n.op.num_outputs == 1
               else ", ".join(outs) + ("," if len(outs) == 1 else ""))
        src = f"  # {n.op.name}" + (f"  {n.source}" if n.source else "")
        expr = self.direct(n, ins) if len(outs) == 1 and n.op.num_outputs == 1 else None
        fresh = inplace = None
        if expr is None:
            fwd = self.bind(n.op.forward, f"{n.op.name}_fwd")
            parts = list(ins[:k]) + [self.arg(a, ins, k) for a in n.args]
            expr = f"{fwd}({', '.join(parts)})"
        else:
            ip = self.inplace_forms(n, ins, tgt)
            if ip is not None:
                fresh = n.output()
                inplace = (ip[0], tuple(t + src for t in ip[1]),
                           None if ip[2] is None else ip[2] + src)
        # a 2-d matrix product's result is a new C-contiguous array whatever its operands; a
        # transposed one (gemm_layout.py) the transpose of one
        c_order: Any = fresh is not None and n.op in _PRODUCTS
        if c_order and n in self.transposed:
            out = self.aligned_out(n, True)
            expr = f"{self.bind(np.matmul, 'np_matmul')}({ins[1]}.T, {ins[0]}.T{out}).T"
            c_order = "F"
        elif c_order and _tt_form(n):     # Note [Small products with a transposed second
            #                                operand] (blas_threads.py)
            asf = self.bind(np.asfortranarray, "np_asfortranarray")
            expr = f"{self.bind(np.matmul, 'np_matmul')}({asf}({ins[0]}), {ins[1]})"
        self.emit(f"{tgt} = {expr}{src}", ins, outs, fresh, inplace, c_order)
        for o, nm in zip(n.outputs(), outs):
            self.fix0d(nm, o)
            env[o] = nm

    def aligned_out(self, n: Node, transposed: bool = False) -> str:
        """``, out=...`` giving matrix product ``n`` (of ``transposed`` layout) a result at a
        64-byte boundary when it is large (Note [Aligned arrays] in ndgrad/_aligned.py), else
        nothing; the same bits as NumPy's own result."""
        o = n.output()
        a, b = n.inputs()
        if (n.op is not _linalg.MM or len(o.shape) != 2 or a.dtype != o.dtype
                or b.dtype != o.dtype or o.dtype not in _linalg._ALIGN_DTYPES
                or _numel(o.shape) * o.dtype.itemsize < _aligned.MIN_BYTES):
            return ""
        shape = tuple(o.shape)[::-1] if transposed else tuple(o.shape)
        e = self.bind(_aligned.empty, "aligned_empty")
        return f", out={e}({shape!r}, {self.bind(o.dtype, f'dtype_{o.dtype.name}')})"

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
        ``TensorArg`` by a Tensor wrapping the input's array, ``ArrayArg`` by the array,
        ``ScratchList`` by a fresh list per run."""
        t = type(a)
        if t is TensorArg:
            return f"_wrap({ins[k + a.index]})"
        if t is ArrayArg:
            return ins[k + a.index]
        if t is ScratchList:
            return "[]"
        if (t is tuple or t is list or t is TensorList) and _has_placeholder(a):
            items = ", ".join(self.arg(x, ins, k) for x in a)
            if t is list:
                return f"[{items}]"
            body = f"({items}{',' if len(a) == 1 else ''})"
            return body if t is tuple else f"_TensorList({body})"
        return self.lit(a)

    def inplace_forms(self, n, ins: list, tgt: str) -> Optional[tuple]:
        """For a node whose direct code makes one new array computed element by element (or a
        2-d matrix product): ``(candidates, forms, big)``, ``forms[i]`` the statement writing
        the result into ``candidates[i]``'s buffer (``{out}`` stands for the buffer, or for
        None when a run-time layout check fails), ``big`` a form with fewer temporaries used
        for large results when no buffer is free; None for other nodes (Note [Buffers reused
        in place])."""
        op, args = n.op, n.args
        iv = n.inputs()
        out = n.output()
        if out.shape == () or len(ins) != n.num_tensor_inputs or not ins:
            return None
        dt = out.dtype
        same = [x for v, x in zip(iv, ins) if v.dtype == dt and tuple(v.shape) == tuple(
            out.shape)]
        fwd = op.forward
        if isinstance(fwd, np.ufunc) and not args and fwd.nin == len(ins) and fwd.nout == 1:
            if any(v.dtype != dt for v in iv):
                return None    # a mixed-type or type-changing loop: keep the plain call
            f = self.bind(fwd, f"np_{fwd.__name__}")
            return self._ufunc_forms(f, ins, tgt, same)
        if dt not in _FAST_FLOATS or iv[0].dtype != dt:
            return None
        if op is _pw.ADD and args in ((), (1,)) or op is _pw.SUB and args in ((), (1,)):
            f = self.bind(np.add if op is _pw.ADD else np.subtract,
                          "np_add" if op is _pw.ADD else "np_subtract")
            return self._ufunc_forms(f, ins, tgt, same)
        if op in (_pw.MUL_S, _pw.DIV_S, _pw.ADD_S, _pw.SUB_S):
            # direct() accepted it: the expression is ``x <op> c`` with a 0-d constant or an
            # exact Python scalar; the ufunc form is the same call
            s = _pw._s(np.empty((), dt), args[0])
            c = self.bind(s, "scalar") if isinstance(s, np.ndarray) else self.lit(s)
            uf = {_pw.MUL_S: np.multiply, _pw.DIV_S: np.true_divide, _pw.ADD_S: np.add,
                  _pw.SUB_S: np.subtract}[op]
            f = self.bind(uf, "np_" + uf.__name__)
            return self._ufunc_forms(f, [ins[0], c], tgt, same)
        if op is _pw.RELU and dt.kind == "f":
            f = self.bind(np.maximum, "np_maximum")
            return self._ufunc_forms(f, _relu_operands(ins[0], self._relu_zero(ins[0], iv[0]),
                                                       dt), tgt, same)
        if op is _pw.TANH_BACKWARD and dt.kind == "f" and iv[1].dtype == dt:
            g, y = ins
            one = self.bind(_pw._s(np.empty((), dt), 1), "one")
            mul = self.bind(np.multiply, "np_multiply")
            sub = self.bind(np.subtract, "np_subtract")
            cands, forms = [], []
            if y in same:
                cands.append(y)
                forms.append(f"{tgt} = {mul}({y}, {y}, out={{out}}); "
                             f"{sub}({one}, {tgt}, out={tgt}); {mul}({g}, {tgt}, out={tgt})")
            big: Optional[str] = (f"{tgt} = {mul}({y}, {y}); {sub}({one}, {tgt}, out={tgt}); "
                                  f"{mul}({g}, {tgt}, out={tgt})")
            if g in same and g != y:
                cands.append(g)
                forms.append(f"{tgt} = {mul}({y}, {y}); {sub}({one}, {tgt}, out={tgt}); "
                             f"{tgt} = {mul}({g}, {tgt}, out={{out}})")
            if tuple(iv[0].shape) != tuple(out.shape) or tuple(iv[1].shape) != tuple(out.shape):
                big = None     # y * y may be smaller than the result: keep the plain form
            return tuple(cands), tuple(forms), big
        if op is _pw.THRESHOLD_BACKWARD and dt.kind == "f" and iv[1].dtype == dt:
            # the numba tier: one pass on large arrays (Note [Large relu backward in one pass]
            # in numba_kernels.py)
            fn = (self.bind(_threshold_backward_into_nb, "threshold_backward_into_nb")
                  if self.fuse and _numel(tuple(out.shape)) >= _nk.MIN_NUMEL
                  else self.bind(_threshold_backward_into, "threshold_backward_into"))
            g, r = ins
            cands = [x for x in (g,) if x in same]
            return (tuple(cands), tuple(f"{tgt} = {fn}({g}, {r}, {{out}})" for _ in cands),
                    None)
        if op in _PRODUCTS and len(out.shape) == 2 and iv[1].dtype == dt:
            return (), (), None      # a new C-contiguous array: a buffer for later nodes
        return None

    def _relu_zero(self, x: str, v: Any) -> str:
        """relu's second operand for ``x`` (value ``v``): a bound array of zeros in ``x``'s
        layout when it is C- or F-contiguous at run time, else 0 (Note [Zero operands] in
        ops/_workspace.py: the same bits, NumPy's faster loop, and the output keeps ``x``'s
        layout either way)."""
        if len(v.shape) < 2:
            return self.bind(zeros_operand(tuple(v.shape), np.dtype(v.dtype)), "zeros") \
                if v.shape else "0"
        z = self.bind(zeros_operand(tuple(v.shape), np.dtype(v.dtype)), "zeros")
        zt = self.bind(zeros_operand(tuple(v.shape)[::-1], np.dtype(v.dtype)).T, "zeros_f")
        return f"({z} if {x}.flags.c_contiguous else {zt} if {x}.flags.f_contiguous else 0)"

    def _ufunc_forms(self, f: str, ops: list, tgt: str, same: list) -> tuple:
        cands = tuple(dict.fromkeys(x for x in ops if x in same))
        call = ", ".join(ops)
        return cands, tuple(f"{tgt} = {f}({call}, out={{out}})" for _ in cands), None

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
        if op is _pw.RELU and dt.kind == "f":
            # relu's forward for a float input: np.maximum(x, 0), already of x's dtype
            ops = _relu_operands(ins[0], self._relu_zero(ins[0], iv[0]), dt)
            return f"{self.bind(np.maximum, 'np_maximum')}({ops[0]}, {ops[1]})"
        if op is _pw.THRESHOLD_BACKWARD and dt.kind == "f" and iv[1].dtype == dt:
            fn = self.bind(_threshold_backward_into, "threshold_backward_into")
            return f"{fn}({ins[0]}, {ins[1]}, None)"
        if op in (_linalg.MM, _linalg.BMM, _linalg.MV, _linalg.DOT) and iv[1].dtype == dt:
            f = self.bind(np.matmul, "np_matmul")
            return f"{f}({ins[0]}, {ins[1]}{self.aligned_out(n)})"
        if op is _red.MEAN and len(args) == 3 and args[2] is None and dt.itemsize >= 4 \
                and type(args[0]) is tuple and n.output().dtype == dt:
            # ops/reduction.py _mean_fwd's own calls for a float32/64 or complex input
            count = 1
            for d in args[0]:
                count *= iv[0].shape[d]
            red = self.bind(np.add.reduce, "np_add_reduce")
            div = self.bind(np.true_divide, "np_true_divide")
            d = self.bind(dt, f"dtype_{dt.name}")
            return (f"{div}({red}({ins[0]}, axis={self.lit(args[0])}, "
                    f"keepdims={self.lit(args[1])}), {count}, dtype={d})")
        if op in (_red.SUM, _red.SUM_DIM) and len(args) == 3:
            f = self.bind(np.add.reduce, "np_add_reduce")
            return (f"{f}({ins[0]}, axis={self.lit(args[0])}, keepdims={self.lit(args[1])}, "
                    f"dtype={self.lit(args[2])})")
        return None

    # ---- buffers reused in place
    def reuse_buffers(self, keep: set, last: dict) -> None:
        """Rewrite lines to write their result into the buffer of an input that dies there
        (Note [Buffers reused in place])."""
        lines = self.lines
        roots: dict = {}       # name -> the buffers it may share memory with (itself included)
        for _text, used, defined, meta, _ip in lines:
            if meta is not None:
                for d in defined:
                    roots[d] = {d}
                continue
            shared: set = set()
            for u in used:
                shared |= roots.get(u, {u})
            for d in defined:
                roots[d] = shared | roots.get(d, set()) | {d}
        holders: dict = {}
        for nm, rs in roots.items():
            for r in rs:
                holders.setdefault(r, []).append(nm)
        blocked: set = set()
        for o in keep:
            blocked |= roots.get(o, {o})
        c_known: set = set()      # names known C-contiguous at generation time
        f_known: set = set()      # names known to be transposes of C-contiguous arrays

        def c_ok(u: str) -> bool:
            if u in c_known:
                return True
            val = self.const_vals.get(u)
            return val is not None and (val.ndim == 0 or val.flags.c_contiguous)

        def f_ok(u: str) -> bool:
            # transposed (gemm_layout.py), or a 0-d constant, which fits either layout
            if u in f_known:
                return True
            val = self.const_vals.get(u)
            return val is not None and val.ndim == 0

        metas: dict = {}
        for i, (_text, used, defined, meta, ip) in enumerate(lines):
            if meta is None:
                continue
            shape, dtype, c_order = meta
            plain = all(c_ok(u) for u in used)
            # every operand transposed: a new array would be transposed too, so writing into
            # a dead transposed buffer gives the same layout and bits
            flipped = c_order == "F" or bool(used) and not plain and all(f_ok(u) for u in used)
            new = None
            if ip is not None and _numel(shape) >= INPLACE_MIN_NUMEL:
                cands, forms, big = ip
                for x, form in zip(cands, forms):
                    if metas.get(x, ())[:2] != (shape, dtype) or x in blocked or max(
                            last.get(h, -1) for h in holders.get(x, (x,))) != i:
                        continue
                    if flipped and x in f_known:
                        new = form.format(out=x)
                        break
                    checks = [u for u in dict.fromkeys((x,) + tuple(used)) if not c_ok(u)]
                    if checks and ";" in form:
                        continue      # several statements: only when no check is needed
                    cond = " and ".join(f"{u}.flags.c_contiguous" for u in checks)
                    new = form.format(out=f"({x} if {cond} else None)" if checks else x)
                    plain = plain and not checks
                    break
                if new is None and big is not None and (plain or flipped):
                    new = big
            if new is not None:
                lines[i] = (new, used, defined, meta, ip)
            if c_order is True or plain:
                c_known.update(defined)
            elif flipped:
                f_known.update(defined)
            for d in defined:
                metas[d] = meta

    # ---- output
    def finish(self, params: list, outs: list) -> str:
        lines = self.lines
        keep = {o for o in outs if o is not None}
        last: dict = {}
        for i, (_, used, defined, _m, _ip) in enumerate(lines):
            for u in used:
                last[u] = i
            for d in defined:
                last.setdefault(d, i)
        for p in params:
            last.setdefault(p, -1)
        self.reuse_buffers(keep, last)
        # frees after line i
        frees: dict = {}
        for nm, i in last.items():
            if nm in keep or nm.startswith("_"):
                continue
            frees.setdefault(i, []).append(nm)
        body = []
        if -1 in frees:
            body.append("del " + ", ".join(sorted(frees[-1])))
        for i, (text, _used, _defined, _m, _ip) in enumerate(lines):
            body.append(text)
            dead = frees.get(i)
            if dead:
                body.append("del " + ", ".join(sorted(dead, key=_natural)))
        ret = ", ".join(o if o is not None else "None" for o in outs)
        if len(outs) == 1:
            ret += ","
        body.append(f"return ({ret})")
        head = f"def {self.name}({', '.join(params)}):"
        if self.owned:
            # Note [Arguments owned by the backward]
            head = f"def {self.name}(_A):"
            if params:
                body.insert(0, f"{', '.join(params)}, = _A")
                body.insert(1, "_A.clear()")
        return head + "\n" + "".join(f"    {ln}\n" for ln in body)


def _op_backward(node: Any, arrays: list) -> tuple:
    """An ``OpBackward`` node (a VJP rule that branches on data) run on arrays: the rule runs
    on Tensors wrapping them (grad mode is off: the raw backward records nothing)."""
    from .differentiate import run_op_backward   # local import: same layer, loaded lazily
    outs = run_op_backward(node, [None if a is None else _wrap(a) for a in arrays])
    return tuple(None if t is None else t._data for t in outs)


def _threshold_backward_into(g: np.ndarray, r: np.ndarray, out: Any) -> np.ndarray:
    """relu's backward with the bits of eager's (ops/pointwise.py ``_threshold_backward_fwd``),
    written into ``out`` (``g`` itself when it is dead: ``relu_backward_bits``, one mask and one
    and-pass) or a new array (None)."""
    if out is not None and g.dtype in _pw._INT_OF and r.dtype == g.dtype and g.ndim:
        return _pw.relu_backward_bits(g, r)
    return _pw._threshold_backward_fwd(g, r)


def _threshold_backward_into_nb(g: np.ndarray, r: np.ndarray, out: Any) -> np.ndarray:
    """``_threshold_backward_into`` of the numba tier: into ``out`` (``g``, dead) in one pass
    when Note [Large relu backward in one pass] (numba_kernels.py) applies; the same bits."""
    if out is not None and _nk.relu_backward_into(g, r):
        return g
    return _threshold_backward_into(g, r, out)


def _numel(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _has_placeholder(a: Any) -> bool:
    t = type(a)
    if t is TensorArg or t is ArrayArg or t is ScratchList:
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
