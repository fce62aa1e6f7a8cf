"""The optional numba tier (``ndgrad.compile(fn, backend="numba")``, extra ``ndgrad[fast]``).

Note [Elementwise VM]
On small arrays every NumPy call costs ~0.3 µs whatever it computes, so a chain of elementwise
ops is dominated by call overhead. With ``backend="numba"`` the code generator (codegen.py)
keeps the values of elementwise ops on small float32/float64 arrays (at most ``MAX_NUMEL``
elements, all operands of the op's own shape and dtype, or a Python scalar) in the rows of one
register array ``_R`` and runs each maximal run of such ops as ONE call of a small virtual
machine: ``vm(program, immediates, _R)``. The VM is compiled by numba once per process
(``cache=True``: later processes load it from numba's cache) for float32 and float64 register
arrays; a graph only builds its program (a few int32 rows), so there is no per-graph machine
code compilation. Other ops (matmuls, reductions, larger arrays, float16/bfloat16, complex)
stay NumPy calls; values cross between the two as views of ``_R`` rows.

When a VM call pays. A call is not free: numba's dispatcher types its three arrays (~0.25-0.7
µs; a read-only program array took ~0.6 µs more, so the program stays writeable), each value
entering the VM is copied into its register (``_R[r] = x.reshape(-1)``, ~0.45-0.8 µs) and each
value leaving it is a view (~0.13 µs), while one NumPy call on 16-320 elements costs ~0.2-0.9
µs (timings of one loaded 2-core machine). Generated functions with k add/mul ops on one
32x10 float32 input, VM minus NumPy backend: k=1 +3.8 µs, 2 +2.8, 3 +2.2, 4 +0.9, 5 +0.6,
6 -1.1, 8 -3.8, 12 -9.0 (16 elements: break-even at 4-5 ops; two inputs: 6-8 ops). So a
cluster (``worth_a_call``) runs in the VM only with at least ``MIN_CLUSTER_OPS`` = 6 ops and
at least two ops more than its loads; smaller ones are generated again as plain NumPy calls
(codegen.generate). mlp_small's clusters (its loss head: 2 ops from 2 loads; the backward's
3 ops from 2 loads and an ``np.broadcast_to``) were 5-9 µs slower than NumPy per step and now
stay NumPy; the chain workload's clusters (200 ops from 1 load, 175 ops from 101 loads) stay
in the VM. No minimum element count is needed: the call costs about one NumPy call on 16
elements as on 320. The C library's transcendental functions, though, run one element at a
time (float32 tanh ~7 ns/element above 32 elements: 7.4 µs on 320 where NumPy's SIMD loop
takes 0.3 µs; exp/log/sin 1.3-1.7 µs on 320, even with NumPy at ~128): an op above its
``MAX_NUMEL_LIBM`` size stays a NumPy call.

Accuracy: additions, subtractions, multiplications and divisions are IEEE operations in the
register dtype, as NumPy's (bitwise equal); the transcendental functions are the C library's
(numba's), which may differ from NumPy's vectorized ones in the last bits. The bound, checked
by tests/test_jit_numba.py on random inputs, is ``ULP_BOUND`` units in the last place per op.

Example:
    >>> from ndgrad.jit.numba_backend import OPCODES
    >>> sorted(OPCODES)[:3]
    ['abs', 'add', 'addi']
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import warnings
from typing import Any, Optional

import numpy as np

__all__ = ["available", "get_vm", "lazy_vm", "OPCODES", "MAX_NUMEL", "MIN_CLUSTER_OPS", "ULP_BOUND",
           "fusible", "worth_a_call"]

MAX_NUMEL = 1024     # above this NumPy's SIMD loops beat the VM (measured: mlp_small 32x128)
MIN_CLUSTER_OPS = 6  # smaller clusters stay NumPy calls (Note [Elementwise VM]: measured)
# The C library's transcendental functions run one element at a time, NumPy's are SIMD loops:
# above these sizes NumPy's one call is faster than the op in the VM (Note [Elementwise VM]).
MAX_NUMEL_LIBM = {"tanh": 32, "sin": 32, "cos": 32, "exp": 64, "log": 64}
# Max distance to NumPy's result in units in the last place, per op (the C library's functions
# vs NumPy's vectorized ones; measured max over 100k inputs: f32 sin/cos 1, tanh 3, exp 2,
# log 3; f64 tanh 2, exp 1, log 1, sin/cos 0). Every other op is exact (bitwise NumPy's).
ULP_BOUND = {"sin": 2, "cos": 2, "tanh": 4, "exp": 3, "log": 4}

OPCODES = {name: i for i, name in enumerate((
    "add", "sub", "mul", "div", "addi", "subi", "muli", "divi", "rsubi", "neg", "sin", "cos",
    "tanh", "exp", "log", "sqrt", "abs", "relu", "tanhb", "recip", "square"))}

_lock = threading.Lock()
_vm: Any = None
_FAST = (np.dtype(np.float32), np.dtype(np.float64))


def available() -> bool:
    """Whether numba is installed (the ``ndgrad[fast]`` extra); found, not imported (Note
    [numba is imported by the first VM call])."""
    if "numba" in sys.modules:
        return True
    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):   # a broken or half-imported installation
        return False


def get_vm() -> Any:
    """The VM, compiled on first use (numba is imported only here); NumPy's interpreter of the
    same programs, with a warning, when numba is installed but fails to import."""
    global _vm
    if _vm is None:
        with _lock:
            if _vm is None:
                try:
                    _vm = _build()
                except ImportError as e:
                    warnings.warn(f"ndgrad.compile(backend='numba'): numba is installed but "
                                  f"failed to import ({e}); fused clusters run as NumPy calls",
                                  RuntimeWarning, stacklevel=3)
                    _vm = numpy_vm
    return _vm


def numpy_vm(prog: np.ndarray, imm: np.ndarray, R: np.ndarray) -> int:
    """The VM's programs run by NumPy, one ufunc call per instruction: the fallback when numba
    cannot be imported (the same operations in the same order; transcendental functions may
    differ from numba's in the last bit).

    Example:
        >>> R = np.array([[1.0, 2.0], [0.0, 0.0]])
        >>> imm = np.array([1.0, 0.0, 3.0])
        >>> numpy_vm(np.array([[OPCODES["muli"], 1, 0, 2]]), imm, R), R[1].tolist()
        (0, [3.0, 6.0])
    """
    one, zero = imm[0], imm[1]
    names = _OPNAMES
    for op, d, a, b in prog.tolist():
        name, x, out = names[op], R[a], R[d]
        if name in _BINARY:
            _BINARY[name](x, R[b], out=out)
        elif name in _WITH_IMM:
            _WITH_IMM[name](x, imm[b], out=out)
        elif name == "rsubi":
            np.subtract(imm[b], x, out=out)
        elif name == "relu":
            # x unless below zero: NaN and -0.0 pass (Note [Signed zeros in max and min])
            np.copyto(out, np.where(x < zero, zero, x))
        elif name == "tanhb":
            y = R[b]
            np.multiply(x, one - y * y, out=out)
        elif name == "recip":
            np.divide(one, x, out=out)
        elif name == "square":
            np.multiply(x, x, out=out)
        else:
            _UNARY[name](x, out=out)
    return 0


_OPNAMES = {i: name for name, i in OPCODES.items()}
_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
_WITH_IMM = {"addi": np.add, "subi": np.subtract, "muli": np.multiply, "divi": np.divide}
_UNARY = {"neg": np.negative, "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "exp": np.exp,
          "log": np.log, "sqrt": np.sqrt, "abs": np.absolute}


# Note [numba is imported by the first VM call]
# Importing numba costs ~120-250 ms and ~48 MiB of resident memory (LLVM's library and ~6 MiB
# of malloc'd blocks, which take free heap that the program's arrays would otherwise reuse:
# the shared bench's memory workload peaked 82 MiB over its baseline with numba imported by
# ndgrad.compile, 79.4 without). Most graphs of a numba-tier function have no cluster worth a
# VM call (codegen.flush, worth_a_call), so nothing imports numba ahead of its use:
# ``ndgrad.compile(backend="numba")`` only checks that numba is installed (``available``), and
# generated code holds ``lazy_vm()``, a loader that on its first call imports numba, loads the
# VM (get_vm) and rebinds the caller's global to the VM itself, so later calls cost nothing
# extra. The first call of a compiled function runs the traced eager run, not the generated
# code (Note [The tracing call's result] in api.py), so the import falls to the first run of
# generated code with a VM cluster: the second call of a step whose outputs need no gradient,
# the first call when they do (the compiled forward runs then). That run also loads the
# VM's machine code from numba's cache, which numba does at a dispatcher's first call (it
# always did; before, ndgrad.compile imported numba and the first call created the dispatcher,
# ~35 ms of chain's first call); measured on the loaded 2-core machine: import and dispatcher
# 0.25-0.4 s, the load 0.5-0.6 s, once per process.


class _VMLoader:
    """Stands for the VM in generated code until its first call (Note [numba is imported by
    the first VM call])."""

    def __call__(self, prog: np.ndarray, imm: np.ndarray, R: np.ndarray) -> Any:
        vm = get_vm()
        glb = sys._getframe(1).f_globals     # the generated module calling us
        for k, v in list(glb.items()):
            if v is self:
                glb[k] = vm
        return vm(prog, imm, R)

    def __repr__(self) -> str:
        return "<ndgrad elementwise VM (numba, loaded on first call)>"


_loader = _VMLoader()


def lazy_vm() -> Any:
    """The VM when it is loaded already, else a loader standing for it until its first call.

    Example:
        >>> callable(lazy_vm())
        True
    """
    return _vm if _vm is not None else _loader


def _build() -> Any:
    try:
        import numba
    except ImportError as e:   # pragma: no cover - depends on the environment
        raise ImportError("backend='numba' needs numba: pip install 'ndgrad[fast]'") from e
    c = OPCODES

    ADD, SUB, MUL, DIV = c["add"], c["sub"], c["mul"], c["div"]
    ADDI, SUBI, MULI, DIVI, RSUBI = c["addi"], c["subi"], c["muli"], c["divi"], c["rsubi"]
    NEG, SIN, COS, TANH, EXP, LOG = c["neg"], c["sin"], c["cos"], c["tanh"], c["exp"], c["log"]
    SQRT, ABS, RELU, TANHB, RECIP, SQUARE = (c["sqrt"], c["abs"], c["relu"], c["tanhb"],
                                            c["recip"], c["square"])

    @numba.njit(cache=True, nogil=True, fastmath=False, boundscheck=False)
    def vm(prog, imm, R):  # pragma: no cover - compiled by numba
        n = R.shape[1]
        one = imm[0]           # imm[0] = 1 and imm[1] = 0 in the register dtype
        zero = imm[1]
        for p in range(prog.shape[0]):
            op = prog[p, 0]
            d = prog[p, 1]
            a = prog[p, 2]
            b = prog[p, 3]
            if op == ADD:
                for i in range(n):
                    R[d, i] = R[a, i] + R[b, i]
            elif op == SUB:
                for i in range(n):
                    R[d, i] = R[a, i] - R[b, i]
            elif op == MUL:
                for i in range(n):
                    R[d, i] = R[a, i] * R[b, i]
            elif op == DIV:
                for i in range(n):
                    R[d, i] = R[a, i] / R[b, i]
            elif op == ADDI:
                s = imm[b]
                for i in range(n):
                    R[d, i] = R[a, i] + s
            elif op == SUBI:
                s = imm[b]
                for i in range(n):
                    R[d, i] = R[a, i] - s
            elif op == MULI:
                s = imm[b]
                for i in range(n):
                    R[d, i] = R[a, i] * s
            elif op == DIVI:
                s = imm[b]
                for i in range(n):
                    R[d, i] = R[a, i] / s
            elif op == RSUBI:
                s = imm[b]
                for i in range(n):
                    R[d, i] = s - R[a, i]
            elif op == NEG:
                for i in range(n):
                    R[d, i] = -R[a, i]
            elif op == SIN:
                for i in range(n):
                    R[d, i] = np.sin(R[a, i])
            elif op == COS:
                for i in range(n):
                    R[d, i] = np.cos(R[a, i])
            elif op == TANH:
                for i in range(n):
                    R[d, i] = np.tanh(R[a, i])
            elif op == EXP:
                for i in range(n):
                    R[d, i] = np.exp(R[a, i])
            elif op == LOG:
                for i in range(n):
                    R[d, i] = np.log(R[a, i])
            elif op == SQRT:
                for i in range(n):
                    R[d, i] = np.sqrt(R[a, i])
            elif op == ABS:
                for i in range(n):
                    R[d, i] = abs(R[a, i])
            elif op == RELU:
                for i in range(n):
                    x = R[a, i]
                    R[d, i] = zero if x < zero else x   # NaN and -0.0 pass
            elif op == TANHB:
                for i in range(n):
                    y = R[b, i]
                    R[d, i] = R[a, i] * (one - y * y)
            elif op == RECIP:
                for i in range(n):
                    R[d, i] = one / R[a, i]
            elif op == SQUARE:
                for i in range(n):
                    x = R[a, i]
                    R[d, i] = x * x
        return 0

    return vm


def worth_a_call(nops: int, nloads: int) -> bool:
    """Whether a cluster of ``nops`` VM instructions reading ``nloads`` arrays copied into
    registers runs faster as one VM call than as ``nops`` NumPy calls (Note [Elementwise VM]).

    Example:
        >>> worth_a_call(2, 1), worth_a_call(200, 1)
        (False, True)
    """
    return nops >= MIN_CLUSTER_OPS and nops >= nloads + 2


def fusible(n: Any) -> Optional[tuple]:
    """``(opcode name, immediate or None)`` when op node ``n`` can run in the VM, else None."""
    from ..ops import pointwise as _pw   # local import: the table is loaded by then
    op = n.op
    if op is None or len(n.outputs()) != 1:
        return None
    out = n.output()
    if out.dtype not in _FAST or not 0 < _numel(out.shape) <= MAX_NUMEL:
        return None
    ins = n.inputs()
    if n.num_tensor_inputs != len(ins) or any(v.shape != out.shape or v.dtype != out.dtype
                                              for v in ins):
        return None
    args = n.args
    fwd = op.forward
    if isinstance(fwd, np.ufunc) and not args:
        name = _UFUNCS.get(fwd.__name__)
        if name is None or fwd.nin != len(ins) or \
                _numel(out.shape) > MAX_NUMEL_LIBM.get(name, MAX_NUMEL):
            return None
        return (name, None)
    if op in (_pw.ADD, _pw.SUB) and args in ((), (1,)) and len(ins) == 2:
        return ("add" if op is _pw.ADD else "sub", None)
    if op is _pw.TANH_BACKWARD and len(ins) == 2:
        return ("tanhb", None)
    if op in (_pw.MUL_S, _pw.DIV_S, _pw.ADD_S, _pw.SUB_S) and len(ins) == 1 and args:
        s = args[0]
        if type(s) not in (int, float) or (len(args) > 1 and args[1] != 1):
            return None
        name = {_pw.MUL_S: "muli", _pw.DIV_S: "divi", _pw.ADD_S: "addi", _pw.SUB_S: "subi"}[op]
        return (name, s)
    return None


_UFUNCS = {"add": "add", "subtract": "sub", "multiply": "mul", "true_divide": "div",
           "divide": "div",
           "negative": "neg", "sin": "sin", "cos": "cos", "tanh": "tanh", "exp": "exp",
           "log": "log", "sqrt": "sqrt", "absolute": "abs", "reciprocal": "recip",
           "square": "square"}


def _numel(shape: tuple) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
