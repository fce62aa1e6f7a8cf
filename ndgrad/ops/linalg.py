"""Matrix products: ``matmul`` (``@``) and its special cases ``mm``, ``bmm``, ``mv``, ``dot``.

``mm`` and ``bmm`` share one VJP rule; ``mv`` and ``dot`` share the vector one (vectors are
promoted to matrices, the two products taken). ``matmul`` is a composite of these, as in
PyTorch, so it records PyTorch's nodes.

Example:
    >>> import ndgrad
    >>> a = ndgrad.ones(2, 3, requires_grad=True)
    >>> b = ndgrad.ones(3, 4)
    >>> (a @ b).sum().backward()
    >>> a.grad
    tensor([[4., 4., 4.],
            [4., 4., 4.]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _aligned, _dtype
from ..tensor import Tensor, _wrap
from ._batching import call as _bcall
from ._batching import marked as _bmarked
from ._dispatch import Op, apply
from ._jvp import bilinear, linear
from ._util import broadcast_error, check_tensor, dims_tuple
from .shape import RESHAPE_COPY
from .shape import t as _t
from . import _autocast


def _mT(x: Tensor) -> Tensor:
    return x.transpose(-1, -2) if x.ndim >= 2 else x


def _matmul_vjp(ctx, g):
    # Each operand is saved only if the other one needs a gradient (Op.save_if): shapes come
    # from the recorded input metadata.
    a, b = ctx.saved
    sa, sb = ctx.input_shape(0), ctx.input_shape(1)
    a_nd, b_nd = len(sa), len(sb)
    if a_nd == 1 and b_nd == 1:
        g1 = g.reshape(1, 1)
    elif a_nd == 1:
        g1 = g.unsqueeze(-2)
    elif b_nd == 1:
        g1 = g.unsqueeze(-1)
    else:
        g1 = g
    ga = gb = None
    if ctx.needs_input_grad(0):
        b1 = b.unsqueeze(-1) if b_nd == 1 else b
        ga = matmul(g1, _mT(b1).conj()).sum_to_size((1,) + sa if a_nd == 1 else sa)
        if a_nd == 1:
            ga = ga.squeeze(0)
    if ctx.needs_input_grad(1):
        a1 = a.unsqueeze(0) if a_nd == 1 else a
        gb = matmul(_mT(a1).conj(), g1).sum_to_size(sb + (1,) if b_nd == 1 else sb)
        if b_nd == 1:
            gb = gb.squeeze(-1)
    return ga, gb


def _mv_vjp(ctx, g):
    # PyTorch's rule: the matrix gets the outer product, the vector ``A^H g`` as one mv, so a
    # create_graph backward records 1-2 nodes instead of unsqueeze, mm, squeeze.
    a, b = ctx.saved
    ga = gb = None
    if ctx.needs_input_grad(0):
        ga = g.unsqueeze(-1) * (b.conj() if b._data.dtype.kind == "c" else b)
    if ctx.needs_input_grad(1):
        at = _t(a)
        gb = _mv_raw(at.conj() if at._data.dtype.kind == "c" else at, g)
    return ga, gb


def _mv_raw(a: Tensor, b: Tensor) -> Tensor:
    # As _mm_raw: shapes were checked by the forward.
    ad, bd = a._data, b._data
    if a._blevel or b._blevel or ad.dtype is not bd.dtype:
        return mv(a, b)
    return apply(MV, (a, b), (ad, bd))


def _mm_raw(a: Tensor, b: Tensor) -> Tensor:
    # Shapes were checked by the forward; skip the public checks in backward rules.
    ad, bd = a._data, b._data
    if ad.dtype is not bd.dtype:
        return mm(a, b)
    return apply(MM, (a, b), (_nt_lhs(ad, bd), bd))


# Note [Small NT products]
# A backward rule's ``g @ W.T`` (row-major ``g``, ``W.T`` a transposed view) is OpenBLAS's NT
# form, which for a few dozen rows and a 128x128 weight runs a slow small-matrix kernel: 11.4
# µs for 32x128 @ 128x128 float32 on one thread (CPU time, this machine's OpenBLAS 0.3.31),
# where the TT form with ``g`` copied to column-major first takes 6.2 (the copy included; the
# result is row-major either way, so nobody sees a different layout) and the same product as
# ``(W @ g.T).T`` 7.7 (column-major). It also went multi-threaded on 2 threads (~14 µs of the
# main thread alone on a loaded machine). Measured wins (µs, NT against TT): 16x128x128 8.7 /
# 4.5, 32x64x128 6.4 / 3.9, 32x100x100 7.5 / 4.5, 48x128x128 12.9 / 9.4, float64 alike;
# losses outside the window: 8x128x128 2.3 / 4.0, 64x128x128 15.6 / 18.4, 32x128x256 21.8 /
# 23.3, 32x32x32 1.4 / 1.7. So ``_nt_lhs`` copies the left operand only inside that window;
# the raw rule and the Tensor rule (``_mm_raw``) both call it, so both compute the same bits.
# The copy can change the last bits against ``np.matmul(g, W.T)`` (a different kernel), never
# the layout.
def _nt_lhs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a`` as the left operand of ``a @ b``: copied to column-major where that is faster
    (Note [Small NT products])."""
    if a.ndim == 2 and b.ndim == 2 and 16 <= a.shape[0] < 64:
        k, n = b.shape
        if (k * n <= 16384 and a.shape[0] * k * n >= 262144 and a.dtype in _NT_DTYPES
                and a.flags.c_contiguous and b.flags.f_contiguous and not b.flags.c_contiguous):
            return np.asfortranarray(a)
    return a


_NT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _transposed(x: Any) -> bool:
    """A matrix laid out column-major (a transposed view): Note [Gradient layout of mm]."""
    return x is not None and x.ndim == 2 and x.flags.f_contiguous and not x.flags.c_contiguous


# Note [mlp_large time budget]
# The shared bench's mlp_large step (relu MLP 1024-2048-2048-1024, batch 512, float32, MSE,
# gradients of the three weights) is 23.6 GFLOP in eight GEMMs; everything else is ~2% of it.
# ``python bench/mlp_large_budget.py --threads 1 --cpu`` (CPU time of one thread, minima,
# 2026-11-27, session 21, machine loaded by other jobs, load average 8-12), in ms:
#
#   GEMMs     forward 3 (x@W1, h1@W2, h2@W3)                  9.7 + 19.7 + 9.8   = 39.2
#             weight gradients 3 (h.T @ g, K = 512)           9.6 + 18.9 + 9.6   = 38.1
#             input gradients 2, NumPy's g @ W.T             10.1 + 20.4        = 30.5
#             the same as (W @ g.T).T                          9.5 + 18.7        = 28.2
#             sum: default orientation 107.8, best 105.5
#   the rest  relu forward 2 x 0.33, relu backward 2 x 0.45 (in place, bit masks; 0.2 on an
#             idle core), y - t 0.13, d * d 0.05, its sum 0.09, the loss gradient 0.04: 1.9
#   steps     eager 112.2 (1.06 x the best GEMM sum), compiled 110.1 numpy / 109.2 numba
#             (1.04; the GEMMs alone in a tight loop are faster than inside a step, whose
#             operands come from memory rather than cache)
#
# The lead's quiet 2-thread wall times (the harness's setting): GEMMs 19.6 + 19.4 + 14.6 = 53.6
# at the best orientation per product, ~55 at NumPy's default; the harness's ceiling, 23.6 GFLOP
# at the 2048^3 probe's best rate, is 51.8. What this session cut: compiled steps compute both
# hidden layers transposed, so the input-gradient GEMMs run as ``(W @ g.T).T`` (Note [Transposed
# products in generated code] in jit/gemm_layout.py; -2.3 of CPU time, up to -1.4 wall by the
# lead's figures); glibc's mmap threshold is 32 MiB (Note [Kernel workspace]): the 16 MiB
# gradient of W2 was mmapped fresh every step, ~270 page faults and 2-6 ms of system time, now
# none; eager relu writes into
# its temporary product (Note [relu in place on a temporary] in ops/pointwise.py: one 4 MB
# array less per layer; no change measurable in CPU time, the malloc tuning already served the
# new array from warm heap). What remains: eager's input gradients use NumPy's default
# orientation (its result's layout is visible to hooks and must stay row-major, and a
# transposed gradient would meet relu's row-major saved result in the next node: mixed-layout
# element-wise ops are several times slower), ~2 ms of CPU time; eager's loss makes two new
# 2 MB arrays (``y - t``, ``d * d``) where the compiled step reuses buffers; and in every mode
# the element-wise work runs on one thread while OpenBLAS uses two.
#
# Session 22 (``python bench/mlp_large_steps.py --threads 1 --cpu``: every product of a step
# timed inside it and again alone on the same arrays; load average 5-9 throughout, so only
# single-thread CPU time was usable), ms, minima of 12:
#
#   eager     step 110.8 = products 107.6 (alone 105.7) + the rest 3.1; 1.12 x the 1-thread
#             ceiling (probe 239 GFLOP/s, 98.8 ms)
#   compiled  step 107.7 (numpy) / 108.1 (numba) = products 105.4 (alone 104.2) + 2.3;
#             1.09 x; no page faults in a steady step (the first two only)
#
# The products alone at their best orientation are 1.055 x the ceiling on one thread: each
# runs at 91-97% of the 2048^3 probe's rate (M = 512; the forward ones lowest), so a step
# cannot come below that, and with two BLAS threads the single-threaded rest (relu 4 passes
# ~1.6, the loss ~0.4, Python ~0.3 for compiled, ~1 for eager) weighs twice as much: ~0.05 of
# the ceiling compiled, ~0.06 eager, plus eager's slow input-gradient form (~2 ms CPU, ~1 wall).
# Tried and dropped: (1) eager input gradients as ``(W @ g.T).T``: its column-major result meets
# relu's row-major saved output in relu's backward, 3.4 ms instead of 0.48 (NumPy walks one
# operand across rows; row tiles of 32-128 rows do no better, a transposed copy alone is 2.8):
# a loss. (2) relu's large loops split over two threads (the caller and a daemon worker taking
# pieces, GIL released in the loops): on the loaded machine every minimum was worse (the rest
# of a step +0.5 ms over 4 loops: hand-offs and GIL waits), and OpenBLAS's pool thread spins
# (sched_yield) on the other core after every product, so a quiet machine may gain little
# (at most ~0.2 ms per loop). (3) 64-byte aligned product outputs (malloc gives 16): up to
# 1.5%, dW2 only.
# Importing numba (the numba tier's only difference for this graph: the generated code is the
# same) changes no product's time on one thread; the numba tier's higher ratios in earlier
# runs were two-thread harness runs of their own, not measured side by side.
#
# Session 23 (load average 5-8 throughout: single-thread CPU time, minima; two-thread wall
# times were 2-10x the quiet ones and are not used). ``python bench/mlp_large_gemms.py
# --threads 1 --cpu`` times the eight products through each GEMM entry: NumPy's ``np.matmul``
# (its OpenBLAS 0.3.31) and SciPy's ``sgemm`` (SciPy's own OpenBLAS 0.3.30; both pick the
# SkylakeX kernels on this Zen 5), with a row- or column-major result, fresh or into a kept
# array. Sums, x the 1-thread ceiling: NumPy default 1.046, NumPy best orientation 1.026, SciPy
# row-major 1.069, SciPy column-major 1.039, into kept arrays the same as fresh; the best entry
# per product 1.020. SciPy's entry buys nothing, and copying an operand to the other layout to
# get another BLAS form costs more than any form saves (+9-25% per product, the copy included).
# perf (1 thread): 86% of a step in the sgemm kernel, 7.5% in its packing copies, 1.1% in
# OpenBLAS zeroing every result before the product (beta = 0: a memset of C, no way around it
# through the BLAS interface), ~2% everything else; no page faults in a steady step (eager and
# both tiers); huge pages under the operands and results change no product by more than the
# noise (+-1.7%).
# OpenBLAS's idle worker (NumPy's build imports no sched_yield; strace shows no system call
# while it waits) spins for 2^28 TSC ticks (~0.1 s here) after each product before it sleeps,
# so within a step it never sleeps: a second NumPy thread on the other core time-shares with a
# spinning thread, which is why splitting element-wise work over two threads loses (session
# 22); ``OPENBLAS_THREAD_TIMEOUT`` would shorten the spin but is read when the library loads,
# before ndgrad can set it. Cut this session: the numba tier writes relu's backward in one pass
# (Note [Large relu backward in one pass] in jit/numba_kernels.py): 0.44 -> 0.22 ms per layer
# inside a step (bench/mlp_large_budget.py), the compiled step's rest 1.76 -> 1.48 ms. (A
# numba relu forward in place would save ~0.03 ms per layer: not done.)
# Eager's Python (the engine and dispatch of ~20 ops) costs ~0.4-0.7 ms in this step against
# 0.08 ms on tiny shapes: the products flush the caches that the interpreter's code and
# objects live in.
# Session 24 (load average 4-7 throughout: the harness's 2-thread wall times were 4-10x the
# quiet ones, 250-700 ms a step, and are not used). Operand alignment: with the mmap threshold
# raised, every operand and result sat 16, 32 or 48 bytes past a 64-byte boundary 3 times in 4,
# and the four products of this step alone, every array placed by hand, take 56.2 / 55.9 ms
# (16 / 32 bytes past) against 54.4 at 64 bytes (1 thread, CPU time, medians of 28 interleaved
# rounds); 4 KiB or 2 MiB boundaries gain nothing over 64 bytes. So large arrays ndgrad makes
# are 64-byte aligned (Note [Aligned arrays] in ndgrad/_aligned.py): ``tensor()`` copies, mm's
# results (``_matmul``, eager and raw rules; ``aligned_out`` in jit/codegen.py), relu's new
# results, its backward's, ``y - t`` and ``x * x``'s gradient. ``python
# bench/mlp_large_align.py --threads 1`` (one process, the configurations interleaved, CPU
# time of one thread, medians of 12/20/25 rounds), off -> on, ms: eager 106.8 -> 105.5, 108.7
# -> 106.5, 108.2 -> 107.0 (-1.1 to -2.0%); compiled numpy 105.8 -> 104.4, 106.5 -> 105.2,
# 106.9 -> 105.6 (-1.2%); numba 105.5 -> 104.1, 105.9 -> 105.2, 105.2 -> 105.3 (0 to -1.3%).
# At 2 threads only minima of 25 rounds were usable (load 5): eager 60.7 -> 59.5, numpy
# 57.4 -> 57.2, numba 56.5 -> 56.5. The input-gradient forms with aligned operands, 1 thread:
# ``g @ W.T`` 9.87 / 19.41 ms against ``(W @ g.T).T`` 9.40 / 18.76 (the same gap as before:
# eager keeps NumPy's form, for the reasons above). Huge pages for the first call's page
# faults: measured, not used (Note [Aligned arrays]).


# Note [Gradient layout of mm]
# As PyTorch's mm backward, the gradient of an operand laid out column-major (``W.t()``) is
# computed transposed, ``(g^T a)^T`` instead of ``a^T g``: it comes out column-major too, so
# the transpose's backward hands a row-major gradient to ``W``, and summing it with W's other
# gradients (a gradient penalty's ``g1 @ W.t()`` and ``x @ W``) reads both arrays in order
# (a row-major plus a column-major 128x128 sum is ~8x slower in NumPy). Which operand is
# column-major is read from the other saved operand, as both are saved when both need
# gradients; the raw rule below makes the same choice, so both give the same bits.
def _c(t: Tensor) -> Tensor:
    """``t.conj()`` (which is ``t`` itself for a real tensor) without the call for real ones."""
    return t.conj() if t._data.dtype.kind == "c" else t


def _mm_vjp(ctx, g):
    b, a = ctx.saved
    if len(ctx.input_shape(0)) == 2:       # mm: plain transposes
        ga = gb = None
        if ctx.needs_input_grad(0):
            ga = (_mm_raw(_c(b), g.t()).t() if a is not None and _transposed(a._data)
                  else _mm_raw(g, _c(b.t())))
        if ctx.needs_input_grad(1):
            gb = (_mm_raw(g.t(), _c(a)).t() if b is not None and _transposed(b._data)
                  else _mm_raw(_c(a.t()), g))
        return ga, gb
    return (bmm(g, _mT(b).conj()) if ctx.needs_input_grad(0) else None,
            bmm(_mT(a).conj(), g) if ctx.needs_input_grad(1) else None)


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.matmul(a, b)`` for a 2-d product with a result of at least ``_ALIGN_MIN`` bytes:
    one float or complex dtype goes into an aligned result of NumPy's layout (C-contiguous),
    the same bits (Note [Aligned arrays]). Callers test the size first, inline: small
    products pay no call."""
    if a.shape[1] == b.shape[0] and a.dtype is b.dtype and a.dtype in _ALIGN_DTYPES:
        return np.matmul(a, b, out=_aligned.empty((a.shape[0], b.shape[1]), a.dtype))
    return np.matmul(a, b)


_ALIGN_DTYPES = frozenset(np.dtype(d) for d in ("float32", "float64", "complex64", "complex128"))
_ALIGN_MIN = _aligned.MIN_BYTES


def _matmul_fwd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r = (_matmul(a, b) if a.ndim == 2 and b.ndim == 2
         and a.shape[0] * b.shape[1] * a.itemsize >= _ALIGN_MIN else np.matmul(a, b))
    # ml_dtypes' bfloat16 matmul accumulates and returns float32.
    return r if r.dtype is a.dtype or r.dtype == a.dtype else r.astype(a.dtype)


def _product_jvp(name: str):
    # bilinear: op(ta, b) + op(a, tb), the op applied directly (shapes were checked)
    def f(a: Tensor, b: Tensor) -> Tensor:
        return apply(_PRODUCTS[name], (a, b), (a._data, b._data))
    return bilinear(f)


# Each operand is needed only for the gradient of the other one. mm and bmm save (and pack,
# with saved tensor hooks) ``mat2`` first, mv and dot ``self`` first, as PyTorch's; the names
# are PyTorch's too (``grad_fn._saved_mat2``).
def _kw(other: str, other_first: bool) -> dict:
    if other_first:
        return dict(saves=(other, "self"), inputs=("self", other), save_if=((0,), (1,)))
    return dict(saves=("self", other), inputs=("self", other), save_if=((1,), (0,)))


def _mm_arrays(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # what _mm_raw computes, on arrays (Note [Small NT products]); as _matmul_fwd's
    if a.shape[0] * b.shape[1] * a.itemsize >= _ALIGN_MIN:
        return _matmul(_nt_lhs(a, b), b)
    return np.matmul(_nt_lhs(a, b), b)


def _mm_raw_rule(ctx, g, saved):
    # Note [Raw backward rules] (ops/_dispatch.py): _mm_vjp's 2-D case, transposes as views.
    # Note [Gradient layout of mm]: a column-major operand's gradient computed transposed
    # (_transposed inlined: one flags object).
    b, a = saved
    ga = gb = None
    n0, n1 = ctx.needs_input_grads()
    if n0:
        f = a.flags if a is not None and a.ndim == 2 else None
        if f is not None and f.f_contiguous and not f.c_contiguous:
            ga = _mm_arrays(b, g.T).T
        else:
            ga = _mm_arrays(g, b.T)
    if n1:
        f = b.flags if b is not None and b.ndim == 2 else None
        if f is not None and f.f_contiguous and not f.c_contiguous:
            gb = _mm_arrays(g.T, a).T
        else:
            gb = _mm_arrays(a.T, g)
    return ga, gb


MM = Op("mm", "MmBackward0", _matmul_fwd, _mm_vjp, jvp=_product_jvp("mm"), raw=_mm_raw_rule,
        **_kw("mat2", True))
BMM = Op("bmm", "BmmBackward0", _matmul_fwd, _mm_vjp, jvp=_product_jvp("bmm"),
         **_kw("mat2", True))
MV = Op("mv", "MvBackward0", _matmul_fwd, _mv_vjp, jvp=_product_jvp("mv"),
        **_kw("vec", False))
DOT = Op("dot", "DotBackward0", _matmul_fwd, _matmul_vjp, jvp=_product_jvp("dot"),
         **_kw("tensor", False))
_PRODUCTS = {"mm": MM, "bmm": BMM, "mv": MV, "dot": DOT}
# The last step of 1-D @ 2-D (PyTorch squeezes the mm result in place: SqueezeBackward4).
SQUEEZE_RESULT = Op("squeeze_", "SqueezeBackward4", lambda x, d: np.squeeze(x, d),
                    lambda ctx, g: g.reshape(ctx.input_shape(0)), args=("dim",), jvp=linear)


def _same_dtype(a: Tensor, b: Tensor) -> None:
    if a._data.dtype != b._data.dtype:
        ta, tb = _dtype._FROM_NP[a._data.dtype], _dtype._FROM_NP[b._data.dtype]
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_cpp(ta)} != {_cpp(tb)}")


def _bmm_dtypes(a: Tensor, b: Tensor) -> None:
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected scalar type {_dtype._FROM_NP[a._data.dtype]._torch_name} "
                           f"but found {_dtype._FROM_NP[b._data.dtype]._torch_name}")


def _mv_dtypes(mat: Tensor, vec: Tensor) -> None:
    if mat._data.dtype != vec._data.dtype:     # PyTorch's mv is addmv into a result of vec's type
        tm, tv = (_dtype._FROM_NP[t._data.dtype]._torch_name for t in (mat, vec))
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {tv}, {tm}, "
                           f"and {tv}")


def _cpp(d: _dtype.dtype) -> str:
    return {"float32": "float", "float64": "double", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}.get(
        d.name, d.name)


def _check_tensor(x: object, fn: str, arg: str, pos: int) -> None:
    if not isinstance(x, Tensor):
        check_tensor(x, fn, arg, pos)


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Matrix product of two 2-D tensors."""
    if _bmarked((input, mat2)):  # Note [Batched backward]
        r = _bcall(mm, input, mat2)
        if r is not NotImplemented:
            return r
    if _autocast.active:  # Note [Autocast]
        input, mat2 = _autocast.lower(input, mat2)
    _check_tensor(input, "mm", "input", 1)
    _check_tensor(mat2, "mm", "mat2", 2)
    a, b = input._data, mat2._data
    if a.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]}"
                           f" and {b.shape[0]}x{b.shape[1]})")
    _same_dtype(input, mat2)
    return apply(MM, (input, mat2), (a, b))


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of two 3-D tensors with the same batch size."""
    if _bmarked((input, mat2)):  # Note [Batched backward]
        r = _bcall(bmm, input, mat2)
        if r is not NotImplemented:
            return r
    if _autocast.active:  # Note [Autocast]
        input, mat2 = _autocast.lower(input, mat2)
    _check_tensor(input, "bmm", "input", 1)
    _check_tensor(mat2, "bmm", "mat2", 2)
    a, b = input._data, mat2._data
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    _bmm_dtypes(input, mat2)
    return apply(BMM, (input, mat2), (a, b))


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product of a 2-d ``input`` and a 1-d ``vec``."""
    if _bmarked((input, vec)):  # Note [Batched backward]
        r = _bcall(mv, input, vec)
        if r is not NotImplemented:
            return r
    _check_tensor(input, "mv", "input", 1)
    _check_tensor(vec, "mv", "vec", 2)
    a, b = input._data, vec._data
    if a.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if a.ndim != 2 or b.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {a.ndim}, {b.ndim}")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({a.shape[0]}), mat "
                           f"({a.shape[0]}x{a.shape[1]}), vec ({b.shape[0]})")
    _mv_dtypes(input, vec)
    return apply(MV, (input, vec), (a, b))


def dot(input: Tensor, other: Tensor) -> Tensor:
    """Inner product of two 1-d tensors of the same length.

    >>> import ndgrad
    >>> ndgrad.dot(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([3.0, 4.0])).item()
    11.0
    """
    if _bmarked((input, other)):  # Note [Batched backward]
        r = _bcall(dot, input, other)
        if r is not NotImplemented:
            return r
    _check_tensor(input, "dot", "input", 1)
    _check_tensor(other, "dot", "tensor", 2)
    a, b = input._data, other._data
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.dtype != b.dtype:
        raise RuntimeError("dot : expected both vectors to have same dtype, but found "
                           f"{_dtype._FROM_NP[a.dtype]._torch_name} and "
                           f"{_dtype._FROM_NP[b.dtype]._torch_name}")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    _same_dtype(input, other)
    return apply(DOT, (input, other), (a, b))


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with NumPy/PyTorch semantics for 1-D and batched operands.

    Like PyTorch, matmul is a composite: dot, mv or mm for 1-D/2-D operands; a batch against a
    matrix or vector is folded into one mm/mv; other batches are broadcast and go to bmm. The
    graph (``grad_fn`` and its edges) is therefore the one PyTorch records.
    """
    if _bmarked((input, other)):  # Note [Batched backward]
        r = _bcall(matmul, input, other)
        if r is not NotImplemented:
            return r
    if _autocast.active:  # Note [Autocast]
        input, other = _autocast.lower(input, other)
    _check_tensor(input, "matmul", "input", 1)
    _check_tensor(other, "matmul", "other", 2)
    na, nb = input._data.ndim, other._data.ndim
    if na == 0 or nb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{na}D and {nb}D")
    if na == 1 and nb == 1:
        return dot(input, other)
    if na == 2 and nb == 1:
        return mv(input, other)
    if na == 1 and nb == 2:
        r = mm(input.unsqueeze(0), other)
        return apply(SQUEEZE_RESULT, (r,), (r._data,), (0,))
    if na == 2 and nb == 2:
        return mm(input, other)
    if na == 3 and nb == 3:
        # A batch of one that requires grad is squeezed, so its gradient comes from one mm
        # instead of a broadcast bmm followed by a sum.
        a0, b0 = input._data.shape[0], other._data.shape[0]
        if a0 == 1 and b0 != 1 and input._requires_grad:
            return matmul(input.squeeze(0), other)
        if b0 == 1 and a0 != 1 and other._requires_grad:
            return matmul(input, other.squeeze(0))
    if input._data.dtype != other._data.dtype:  # the words of the product PyTorch reaches
        if na >= 3 and nb == 2:
            _same_dtype(input, other)
        if na >= 3 and nb == 1:
            _mv_dtypes(input, other)
        _bmm_dtypes(input, other)
    if _should_fold(input, other):
        return _folded_matmul(input, other)
    return _batched_matmul(input, other)


def _unsafe_view(t: Tensor, shape: tuple) -> Tensor:
    return apply(RESHAPE_COPY, (t,), (t._data,), (tuple(shape),))


def _should_fold(a: Tensor, b: Tensor) -> bool:
    """Fold the batch of the larger operand (>= 3-D) into an mm/mv with the smaller (<= 2-D)?

    Yes when the smaller one requires grad (its gradient is then one mm, not a bmm over the
    expanded batch and a sum), otherwise only when the fold is a view (and the smaller operand
    is not the 2-D left one, which would need a transposed copy of the result).
    """
    a_larger = a._data.ndim >= b._data.ndim
    big = a._data if a_larger else np.swapaxes(b._data, -1, -2)
    small = b if a_larger else a
    if big.ndim < 3 or small._data.ndim > 2:
        return False
    if small._requires_grad:
        return True
    if a._data.ndim == 2:
        return False
    if big.size == 0:
        return True
    st, sh = big.strides, big.shape
    return all(st[i] == st[i + 1] * sh[i + 1] for i in range(big.ndim - 2))


def _folded_matmul(a: Tensor, b: Tensor) -> Tensor:
    transpose = b._data.ndim > a._data.ndim
    if transpose:   # (b.mT @ a.mT).mT
        t1 = b.transpose(-1, -2)
        t2 = a.t() if a._data.ndim == 2 else a
    else:
        t1, t2 = a, b
    sizes = t1._data.shape
    out_shape = sizes[:-1]
    rows = int(np.prod(out_shape))
    folded = t1.reshape(rows, sizes[-1])
    if t2._data.ndim == 1:
        return _unsafe_view(mv(folded, t2), out_shape)
    out = _unsafe_view(mm(folded, t2), out_shape + (t2._data.shape[1],))
    return out.transpose(-1, -2).contiguous() if transpose else out


def _batched_matmul(a: Tensor, b: Tensor) -> Tensor:
    sa, sb = a._data.shape, b._data.shape
    na, nb = len(sa), len(sb)
    n = sa[-2] if na > 1 else 1
    m1 = sa[-1]
    m2 = sb[-2] if nb > 1 else sb[0]
    p = sb[-1] if nb > 1 else 1
    batch_a, batch_b = sa[:max(na - 2, 0)], sb[:max(nb - 2, 0)]
    try:
        batch = tuple(np.broadcast_shapes(batch_a, batch_b))
    except ValueError:
        raise broadcast_error(batch_a, batch_b) from None
    size = int(np.prod(batch))
    a3 = a.expand(batch + (n, m1)).reshape(size, n, m1)
    if nb == 1:
        b3 = b.expand(batch + (m2,)).reshape(size, m2).unsqueeze(2)
    else:
        b3 = b.expand(batch + (m2, p)).reshape(size, m2, p)
    out = bmm(a3, b3)
    if nb == 1:
        out = out.squeeze(-1)
    return _unsafe_view(out, batch + ((n,) if na > 1 else ()) + ((p,) if nb > 1 else ()))


# ---------------------------------------------------------------------------- norms
# One op, LinalgVectorNormBackward0, as PyTorch records for ``torch.norm`` and
# ``torch.linalg.vector_norm``: the forward reduces |x| with the order ``ord``; the derivative
# is ``_norm_direction`` (d norm / d x, conjugated for complex inputs), built from ndgrad ops so
# that it differentiates again.
_INF = float("inf")


def _vector_norm_fwd(x: np.ndarray, dims: tuple, keepdim: bool, ord: float,
                     dt: np.dtype) -> np.ndarray:
    if x.dtype != dt:
        x = x.astype(dt)
    a = np.abs(x)
    out_dt = a.dtype
    if a.dtype.itemsize < 4:           # float16/bfloat16 accumulate in float32
        a = a.astype(np.float32)
    if ord == 0:
        r = np.add.reduce(a != 0, axis=dims, keepdims=keepdim, dtype=a.dtype)  # type: ignore[call-overload]
    elif ord == 1:
        r = np.add.reduce(a, axis=dims, keepdims=keepdim)  # type: ignore[call-overload]
    elif ord == 2:
        r = np.sqrt(np.add.reduce(a * a, axis=dims, keepdims=keepdim))  # type: ignore[call-overload]
    elif ord == _INF:
        r = np.max(a, axis=dims, keepdims=keepdim)
    elif ord == -_INF:
        r = np.min(a, axis=dims, keepdims=keepdim)
    else:
        r = np.add.reduce(a ** ord, axis=dims, keepdims=keepdim) ** (1.0 / ord)  # type: ignore[call-overload]
    return np.asarray(r, dtype=out_dt)


def _norm_direction(x: Tensor, r: Tensor, ord: float, dims: tuple, keepdim: bool) -> Tensor:
    """d norm / d x for input ``x`` and norm ``r`` (conjugated for complex ``x``): the VJP is
    ``direction * grad``. Zero where the norm is zero; divisions use safe denominators so that
    the rule has no inf/nan to differentiate through."""
    if not keepdim:
        for d in sorted(dims):
            r = r.unsqueeze(d)
    zero = r == 0
    if ord == 1:
        return x.sgn()
    if ord == 2:
        return x / r.masked_fill(zero, 1)
    if ord == _INF or ord == -_INF:
        # the mask from comparison ops (ops of the table), so that the jit records it
        hit = (x.abs() == r) | (x.isnan() & r.isnan())
        m = hit.to(_dtype._FROM_NP[r._data.dtype])
        return x.sgn() * m / m.sum(dims, keepdim=True)
    if ord < 2:
        xz = x == 0
        scaled = x.sgn() * x.abs().masked_fill(xz, 1).pow(ord - 1)
    else:
        scaled = x * x.abs().pow(ord - 2)
    return scaled * r.masked_fill(zero, 1).pow(1 - ord).masked_fill(zero, 0)


def _wrap_mask(mask: np.ndarray, like: Tensor) -> Tensor:
    return _wrap(mask.astype(like._data.dtype))


def _norm_input(ctx_x: Tensor, dt: np.dtype) -> Tensor:
    return ctx_x if ctx_x._data.dtype == dt else ctx_x.to(_dtype._FROM_NP[dt])


def _vector_norm_vjp(ctx, g):
    x, r = ctx.saved
    dims, keepdim, ord, dt = ctx._args
    if ord == 0:
        return None
    if not keepdim:
        for d in sorted(dims):
            g = g.unsqueeze(d)
    return _norm_direction(_norm_input(x, dt), r, ord, dims, keepdim) * g


def _vector_norm_jvp(ctx, t):
    dims, keepdim, ord, dt = ctx._args
    r = ctx.result
    if ord == 0:
        return _wrap(np.zeros_like(r._data))
    x = _norm_input(ctx.inputs[0], dt)
    t = _norm_input(t, dt)
    d = _norm_direction(x, r, ord, dims, keepdim)
    prod = (d.conj() * t).real_part() if dt.kind == "c" else d * t
    return prod.sum(dims, keepdim) if dims else prod


VECTOR_NORM = Op("linalg_vector_norm", "LinalgVectorNormBackward0", _vector_norm_fwd,
                 _vector_norm_vjp, saves=("self", "result"),
                 args=("dim", "keepdim", "ord", "dtype"), jvp=_vector_norm_jvp)


def _torch_name(d: np.dtype) -> str:
    return _dtype._FROM_NP[np.dtype(d)]._torch_name


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """The vector ``ord``-norm of ``x`` over ``dim`` (all elements by default), as
    ``torch.linalg.vector_norm``: ``ord`` is a number, ``inf``, ``-inf`` or 0 (the count of
    nonzero elements).

    >>> import ndgrad
    >>> vector_norm(ndgrad.tensor([3.0, -4.0])), vector_norm(ndgrad.tensor([3.0, -4.0]), 1)
    (tensor(5.), tensor(7.))
    """
    _check_tensor(x, "linalg_vector_norm", "input", 1)
    if x._blevel:  # Note [Batched backward]
        r = _bcall(vector_norm, x, ord, dim, keepdim, dtype=dtype)
        if r is not NotImplemented:
            return r
    if isinstance(ord, Tensor) and ord._data.ndim == 0:
        ord = ord.item()                  # a 0-d tensor passes as a number
    if isinstance(ord, Tensor) or not _is_number(ord):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not "
                        f"{type(ord).__name__}")
    if isinstance(ord, complex):
        raise RuntimeError("linalg.vector_norm: Expected a non-complex scalar as the order of "
                           "norm.")
    ord = float(ord)
    a = x._data
    kind = a.dtype.kind
    if _dtype._FROM_NP[a.dtype]._category < _dtype._FLOAT:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_torch_name(a.dtype)}")
    dt = a.dtype
    if dtype is not None:
        d = _dtype.to_dtype(dtype)
        if not (d.is_floating_point or d.is_complex):
            raise RuntimeError("linalg.vector_norm: dtype should be floating point or complex, "
                               f"but got {d._torch_name}")
        if kind == "c" and not d.is_complex:
            raise RuntimeError("linalg.vector_norm: dtype should be complex for complex inputs, "
                               f"but got {d._torch_name}")
        if kind != "c" and d.is_complex:
            raise RuntimeError("linalg.vector_norm: dtype should be real for real inputs, but "
                               f"got {d._torch_name}")
        if _dtype.promote_types(_dtype._FROM_NP[a.dtype], d) is not d:
            raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({_torch_name(dt)}) "
                               "should be convertible without narrowing to the specified dtype "
                               f"({d._torch_name})")
        dt = d.np
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        dims = tuple(range(a.ndim))
        whole = True
    else:
        dims = dims_tuple(dim, a.ndim)
        if not a.ndim:         # a 0-d tensor accepts dim 0 and -1 and reduces nothing
            dims = ()
        whole = False
    if ord < 0 or ord == _INF:
        if whole and a.size == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_ord_str(ord)} norm on "
                               "an empty tensor because the operation does not have an identity")
        for ax in dims:
            if a.shape[ax] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {_ord_str(ord)} norm "
                                   f"on the dimension {ax}because this dimension is empty and "
                                   "the operation does not have an identity")
    return apply(VECTOR_NORM, (x,), (a,), (dims, bool(keepdim), ord, np.dtype(dt)))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, complex, np.number, np.bool_))


def _type_name(v: Any) -> str:
    return "ndgrad.dtype" if isinstance(v, _dtype.dtype) else type(v).__name__


def _ord_str(ord: float) -> str:
    if ord == _INF:
        return "inf"
    if ord == -_INF:
        return "-inf"
    return f"{ord:g}"


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False,
         out: Any = None, dtype: Any = None) -> Tensor:
    """The norm of ``input`` (PyTorch's ``torch.norm``): the vector ``p``-norm over ``dim`` (all
    elements by default; ``"fro"`` and None mean 2). Records LinalgVectorNormBackward0.

    >>> import ndgrad
    >>> x = ndgrad.tensor([[3.0, 4.0], [0.0, 0.0]], requires_grad=True)
    >>> ndgrad.norm(x, dim=1)
    tensor([5., 0.], grad_fn=<LinalgVectorNormBackward0>)
    >>> x.norm().backward(); x.grad
    tensor([[0.6000, 0.8000],
            [0.0000, 0.0000]])
    """
    if out is not None:
        if not isinstance(out, Tensor):
            raise TypeError(f"linalg_vector_norm(): argument 'out' must be Tensor, not "
                            f"{_type_name(out)}")
        raise NotImplementedError("ndgrad: norm(..., out=) is not supported")
    dims = [dim] if isinstance(dim, int) else dim
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            return vector_norm(input, 2, dims, keepdim, dtype=dtype)
        # the nuclear norm or an unsupported string: PyTorch's matrix_norm errors
        if dims is None:
            dims = list(range(input.ndim))
        if p not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
        if input.ndim < 2:
            raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                               "dimensions.")
        if len(dims) != 2:
            raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got "
                               + " ".join(str(d) for d in dims))
        from .linalg_decomp import nuclear_norm    # the sum of the singular values
        return nuclear_norm(input, tuple(dims), keepdim)
    return vector_norm(input, 2.0 if p is None else p, dims, keepdim, dtype=dtype)
