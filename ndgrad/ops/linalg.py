"""Matrix products: ``matmul`` (``@``) and its special cases ``mm``, ``bmm``, ``mv``, ``dot``.

All of them share one VJP rule, the general ``matmul`` one: vectors are promoted to matrices,
the two products are taken, and batch broadcasting is undone with ``sum_to_size``.

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

import numpy as np

from .. import _dtype
from ..tensor import Tensor
from ._dispatch import Op, apply


def _mT(x: Tensor) -> Tensor:
    return x.transpose(-1, -2) if x.ndim >= 2 else x


def _matmul_vjp(ctx, g):
    a, b = ctx.saved
    a_nd, b_nd = a.ndim, b.ndim
    a1 = a.unsqueeze(0) if a_nd == 1 else a
    b1 = b.unsqueeze(-1) if b_nd == 1 else b
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
        ga = matmul(g1, _mT(b1).conj()).sum_to_size(a1.shape)
        if a_nd == 1:
            ga = ga.squeeze(0)
    if ctx.needs_input_grad(1):
        gb = matmul(_mT(a1).conj(), g1).sum_to_size(b1.shape)
        if b_nd == 1:
            gb = gb.squeeze(-1)
    return ga, gb


def _mm_vjp(ctx, g):
    a, b = ctx.saved
    if a._data.ndim == 2:       # mm: plain transposes
        return (mm(g, b.t().conj()) if ctx.needs_input_grad(0) else None,
                mm(a.t().conj(), g) if ctx.needs_input_grad(1) else None)
    return (bmm(g, _mT(b).conj()) if ctx.needs_input_grad(0) else None,
            bmm(_mT(a).conj(), g) if ctx.needs_input_grad(1) else None)


def _matmul_fwd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r = np.matmul(a, b)
    # ml_dtypes' bfloat16 matmul accumulates and returns float32.
    return r if r.dtype == a.dtype else r.astype(a.dtype)


_KW = dict(saves=("self", "other"), inputs=("self", "other"))
MM = Op("mm", "MmBackward0", _matmul_fwd, _mm_vjp, **_KW)
BMM = Op("bmm", "BmmBackward0", _matmul_fwd, _mm_vjp, **_KW)
MV = Op("mv", "MvBackward0", _matmul_fwd, _matmul_vjp, **_KW)
DOT = Op("dot", "DotBackward0", _matmul_fwd, _matmul_vjp, **_KW)
MATMUL = Op("matmul", "MatmulBackward0", _matmul_fwd, _matmul_vjp, **_KW)


def _same_dtype(a: Tensor, b: Tensor) -> None:
    if a._data.dtype != b._data.dtype:
        ta, tb = _dtype._FROM_NP[a._data.dtype], _dtype._FROM_NP[b._data.dtype]
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_cpp(ta)} != {_cpp(tb)}")


def _cpp(d: _dtype.dtype) -> str:
    return {"float32": "float", "float64": "double", "int64": "long int",
            "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}.get(
        d.name, d.name)


def _check_tensor(x: object, fn: str, arg: str, pos: int) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Matrix product of two 2-D tensors."""
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
    a, b = input._data, mat2._data
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    _same_dtype(input, mat2)
    return apply(BMM, (input, mat2), (a, b))


def mv(input: Tensor, vec: Tensor) -> Tensor:
    a, b = input._data, vec._data
    if a.ndim != 2 or b.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {a.ndim}, {b.ndim}")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({a.shape[0]}), mat "
                           f"({a.shape[0]}x{a.shape[1]}), vec ({b.shape[0]})")
    _same_dtype(input, vec)
    return apply(MV, (input, vec), (a, b))


def dot(input: Tensor, other: Tensor) -> Tensor:
    a, b = input._data, other._data
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    _same_dtype(input, other)
    return apply(DOT, (input, other), (a, b))


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with NumPy/PyTorch semantics for 1-D and batched operands."""
    _check_tensor(input, "matmul", "input", 1)
    _check_tensor(other, "matmul", "other", 2)
    a, b = input._data, other._data
    na, nb = a.ndim, b.ndim
    if na == 0 or nb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{na}D and {nb}D")
    if na == 2 and nb == 2:
        return mm(input, other)
    if na == 1 and nb == 1:
        return dot(input, other)
    if na == 2 and nb == 1:
        return mv(input, other)
    if na == 3 and nb == 3 and a.shape[0] == b.shape[0]:
        return bmm(input, other)
    _same_dtype(input, other)
    ka = a.shape[-1]
    kb = b.shape[-2] if nb >= 2 else b.shape[0]
    if ka != kb:
        ra = int(np.prod(a.shape[:-1])) if na > 1 else 1
        cb = b.shape[-1] if nb > 1 else 1
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({ra}x{ka} and {kb}x{cb})")
    try:
        return apply(MATMUL, (input, other), (a, b))
    except ValueError as e:
        raise RuntimeError(str(e)) from None
