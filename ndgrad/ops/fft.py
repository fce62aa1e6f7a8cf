"""Discrete Fourier transforms (``ndgrad.fft``): three primitive ops and their compositions.

Note [FFT primitives]
Every transform of ``ndgrad.fft`` is built, as in PyTorch, from three ops over a tuple of dims,
each with a normalization code (0: none, 1: ``1/sqrt(N)``, 2: ``1/N``, ``N`` the product of the
signal sizes):

* ``_fft_c2c(x, dim, norm, forward)``: complex to complex, ``exp(-2 pi i jk/n)`` when
  ``forward`` else ``exp(+...)``. It is complex-linear, so its VJP is the adjoint: the same
  transform in the other direction with the same normalization code.
* ``_fft_r2c(x, dim, norm, onesided)``: real to complex, forward direction; ``onesided`` keeps
  only ``n // 2 + 1`` entries along the last dim. As a map from R^n its VJP is the real part of
  the adjoint: the cotangent, zero-padded back to ``n`` along the last dim, transformed in the
  inverse direction.
* ``_fft_c2r(x, dim, norm, last_dim_size)``: a Hermitian half spectrum to a real signal
  (inverse direction). The output is ``Re(sum_k w_k X_k e^{+2 pi i kt/n})`` with ``w_k = 2``
  for the entries that stand for a conjugate pair and ``w_k = 1`` for the zero-frequency entry
  and (``n`` even) the Nyquist entry, so its VJP is ``w * r2c(g, onesided=True)``.

The public functions pad or trim the input to the requested sizes (``ConstantPadNdBackward0``
and ``SliceBackward0`` nodes), cast real inputs to complex where PyTorch does
(``ToCopyBackward0``), and conjugate for the Hermitian transforms, in PyTorch's order, so the
recorded graph is PyTorch's. NumPy's pocketfft computes the transforms; float32 stays complex64.

``stft``/``istft`` (``ndgrad.stft``) compose the same primitives with ``unfold`` (the frames),
reflection padding and an overlap-add op (PyTorch's ``unfold_backward``).

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    >>> y = ndgrad.fft.rfft(x)
    >>> y.grad_fn.name()
    'FftR2CBackward0'
    >>> ndgrad.fft.irfft(y, n=4)
    tensor([1., 2., 3., 4.], grad_fn=<FftC2RBackward0>)
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Sequence, Tuple

import numpy as np

from .. import _dtype
from .._warn import warn_user_once
from ..tensor import Tensor, _wrap
from . import pointwise as _pw
from . import shape as _shape
from ._dispatch import Op, apply
from ._jvp import linear
from ._util import wrap_dim

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftshift",
           "ifftshift", "fftfreq", "rfftfreq", "stft", "istft"]

# numpy's ``norm=`` for a normalization code, by direction of the transform.
_NpNorm = Literal["backward", "ortho", "forward"]
_NP_NORM_FORWARD: Tuple[_NpNorm, ...] = ("backward", "ortho", "forward")
_NP_NORM_INVERSE: Tuple[_NpNorm, ...] = ("forward", "ortho", "backward")
_COMPLEX_OF: dict = {np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128)}


# ---------------------------------------------------------------------------- forwards
def _c2c_fwd(x: np.ndarray, dim: tuple, normalization: int, forward: bool) -> np.ndarray:
    if forward:
        out = np.fft.fftn(x, axes=dim, norm=_NP_NORM_FORWARD[normalization])
    else:
        out = np.fft.ifftn(x, axes=dim, norm=_NP_NORM_INVERSE[normalization])
    return out.astype(x.dtype, copy=False)


def _r2c_fwd(x: np.ndarray, dim: tuple, normalization: int, onesided: bool) -> np.ndarray:
    norm = _NP_NORM_FORWARD[normalization]
    out = np.fft.rfftn(x, axes=dim, norm=norm) if onesided else \
        np.fft.fftn(x, axes=dim, norm=norm)
    return out.astype(_COMPLEX_OF[x.dtype], copy=False)


def _c2r_fwd(x: np.ndarray, dim: tuple, normalization: int, last_dim_size: int) -> np.ndarray:
    s = [x.shape[d] for d in dim[:-1]] + [last_dim_size]
    out = np.fft.irfftn(x, s=s, axes=dim, norm=_NP_NORM_INVERSE[normalization])
    return out.astype(np.real(x[:0]).dtype, copy=False)


# ---------------------------------------------------------------------------- VJPs
def _as_complex(g: Tensor, like: np.dtype) -> Tensor:
    return g if g._data.dtype.kind == "c" else g.to(_dtype._FROM_NP[np.dtype(like)])


def _c2c(x: Tensor, dim: tuple, normalization: int, forward: bool) -> Tensor:
    return apply(FFT_C2C, (x,), (x._data,), (dim, normalization, forward))


def _r2c(x: Tensor, dim: tuple, normalization: int, onesided: bool) -> Tensor:
    return apply(FFT_R2C, (x,), (x._data,), (dim, normalization, onesided))


def _c2r(x: Tensor, dim: tuple, normalization: int, last_dim_size: int) -> Tensor:
    return apply(FFT_C2R, (x,), (x._data,), (dim, normalization, last_dim_size))


def _c2c_vjp(ctx, g):
    dim, normalization, forward = ctx._args
    cdt = ctx._input_meta[0][1]
    return _c2c(_as_complex(g, cdt), dim, normalization, not forward)


def _r2c_vjp(ctx, g):
    # Shapes come from the node's metadata, not from ``g``: under a batched backward ``g`` has
    # a leading batch dim (Note [Batched backward]).
    dim, normalization, onesided = ctx._args
    shape, dt = ctx._input_meta[0]
    g = _as_complex(g, _COMPLEX_OF.get(np.dtype(dt), np.complex128))
    last = dim[-1]
    n = shape[last]
    if onesided and n // 2 + 1 != n:
        g = _pad_dim(g, len(shape), last, n - (n // 2 + 1))
    return _pw.real_part(_c2c(g, dim, normalization, False))


def _hermitian_weights(n: int, m: int, last: int, ndim: int, dt: np.dtype) -> Tensor:
    """``w_k`` of Note [FFT primitives] for a half spectrum of ``m`` entries (signal ``n``),
    shaped to broadcast along dim ``last`` of an ``ndim``-dim tensor (aligned from the right,
    so a leading batch dim does not disturb it)."""
    w = np.full(m, 2.0, dtype=dt)
    w[0] = 1.0
    if n % 2 == 0 and m > n // 2:
        w[n // 2] = 1.0
    w[min(m, n // 2 + 1):] = 0.0   # entries past the half spectrum are ignored by c2r
    return _wrap(w.reshape((m,) + (1,) * (ndim - 1 - last)))


def _c2r_vjp(ctx, g):
    # The input has last_dim_size // 2 + 1 entries along the last dim (the public functions
    # resize it so), as many as r2c of the cotangent.
    dim, normalization, last_dim_size = ctx._args
    shape, cdt = ctx._input_meta[0]
    real_dt = np.real(np.zeros(0, cdt)).dtype
    if g._data.dtype.kind == "c":
        g = _pw.real_part(g)
    gi = _r2c(g, dim, normalization, True)
    return gi * _hermitian_weights(last_dim_size, shape[dim[-1]], dim[-1], len(shape), real_dt)


FFT_C2C = Op("_fft_c2c", "FftC2CBackward0", _c2c_fwd, _c2c_vjp,
             args=("dim", "normalization", "forward"), jvp=linear)
FFT_R2C = Op("_fft_r2c", "FftR2CBackward0", _r2c_fwd, _r2c_vjp, saves=("self",),
             args=("dim", "normalization", "onesided"), jvp=linear)
FFT_C2R = Op("_fft_c2r", "FftC2RBackward0", _c2r_fwd, _c2r_vjp,
             args=("dim", "normalization", "last_dim_size"), jvp=linear)


# ---------------------------------------------------------------------------- helper ops
def _pad_fwd(x: np.ndarray, pad: tuple) -> np.ndarray:
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return np.pad(x, widths)


def _pad_vjp(ctx, g):
    shape = ctx._input_meta[0][0]
    pad = ctx._args[0]
    idx = [slice(None)] * len(shape)
    for i in range(len(pad) // 2):
        d = len(shape) - 1 - i
        idx[d] = slice(pad[2 * i], pad[2 * i] + shape[d])
    return g[tuple(idx)]


# Zero padding at the end of dims (PyTorch's constant_pad_nd, as the FFTs use it).
CONSTANT_PAD = Op("constant_pad_nd", "ConstantPadNdBackward0", _pad_fwd, _pad_vjp,
                  args=("pad",), jvp=linear)


def _pad_dim(x: Tensor, ndim: int, d: int, amount: int) -> Tensor:
    """``x`` (logically ``ndim``-dim) with ``amount`` zeros appended along dim ``d``."""
    return _pad_end_list(x, [0, 0] * (ndim - 1 - d) + [0, amount])


def _pad_end_list(x: Tensor, pad: list) -> Tensor:
    return apply(CONSTANT_PAD, (x,), (x._data,), (tuple(pad),))


def _pad_end(x: Tensor, sizes: dict) -> Tensor:
    """``x`` zero-padded at the end of each dim ``d`` in ``sizes`` to ``sizes[d]``."""
    pad: list = []
    for d in range(x.ndim - 1, min(sizes) - 1, -1):
        pad += [0, sizes[d] - x.shape[d] if d in sizes else 0]
    return _pad_end_list(x, pad)


def _roll_fwd(x: np.ndarray, dims: tuple, shifts: tuple) -> np.ndarray:
    return np.roll(x, shifts, axis=dims) if dims else x.copy()


def _roll_vjp(ctx, g):
    dims, shifts = ctx._args
    return apply(ROLL, (g,), (g._data,), (dims, tuple(-s for s in shifts)))


ROLL = Op("roll", "RollBackward0", _roll_fwd, _roll_vjp, args=("dims", "shifts"), jvp=linear)
CONJ_PHYSICAL: Op = Op("conj_physical", "ConjPhysicalBackward0", np.conjugate,
                   lambda ctx, g: apply(CONJ_PHYSICAL, (g,), (g._data,)), jvp=linear)


# ---------------------------------------------------------------------------- argument handling
def _norm_code(norm: Optional[str], forward: bool) -> int:
    if norm is None or norm == "backward":
        return 0 if forward else 2
    if norm == "ortho":
        return 1
    if norm == "forward":
        return 2 if forward else 0
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _wrap_fft_dim(d: int, ndim: int) -> int:
    if ndim == 0:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    if not -ndim <= d < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {d})")
    return d + ndim if d < 0 else d


def _dims_and_sizes(input: Tensor, s: Optional[Sequence[int]], dim: Any,
                    default_dim: Any = None) -> tuple:
    """The transformed dims and the requested signal sizes (-1: the input's size) of an n-dim
    transform (PyTorch's rules: ``s`` alone means the last ``len(s)`` dims)."""
    nd = input.ndim
    if dim is None and default_dim is not None:
        dim = default_dim
    if isinstance(dim, int):
        dim = (dim,)
    if s is not None and isinstance(s, int):
        s = (s,)
    if dim is not None:
        dims = tuple(_wrap_fft_dim(int(d), nd) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > nd:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{nd} dimensions.")
        dims = tuple(range(nd - len(s), nd))
    else:
        dims = tuple(range(nd))
    if s is None:
        sizes = tuple(-1 for _ in dims)
    else:
        sizes = tuple(int(n) for n in s)
        for n in sizes:
            if n != -1 and n < 1:
                raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return dims, sizes


def _check_n(n: Optional[int]) -> None:
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _torch_name(dt: np.dtype) -> str:
    return _dtype._FROM_NP[np.dtype(dt)]._torch_name


def _float_input(input: Tensor) -> Tensor:
    """Integer and bool inputs as the default float dtype; float16/bfloat16 refused (PyTorch
    has no CPU kernel for them)."""
    dt = input._data.dtype
    if dt.kind in "biu":
        return input.to(_dtype.get_default_dtype())
    if dt == np.float16 or dt == _dtype.bfloat16.np:
        raise RuntimeError(f"Unsupported dtype {_torch_name(dt)}")
    return input


def _to_complex(input: Tensor) -> Tensor:
    dt = input._data.dtype
    if dt.kind == "c":
        return input
    return input.to(_dtype._FROM_NP[_COMPLEX_OF[dt]])


def _resize(x: Tensor, dims: tuple, sizes: tuple) -> Tensor:
    """Trim (slices) and then zero-pad (one pad) ``x`` to ``sizes`` along ``dims``."""
    for d, n in zip(dims, sizes):
        if n != -1 and n < x.shape[d]:
            x = _shape.narrow(x, d, 0, n)
    grow = {d: n for d, n in zip(dims, sizes) if n != -1 and n > x.shape[d]}
    if grow:
        x = _pad_end(x, grow)
    return x


def _real_only(input: Tensor, msg: str) -> None:
    dt = input._data.dtype
    if dt.kind == "c":
        raise RuntimeError(f"{msg}, but got {_torch_name(dt)}")


# ---------------------------------------------------------------------------- 1-d transforms
def _one(input: Tensor, n: Optional[int], dim: int) -> tuple:
    d = _wrap_fft_dim(int(dim), input.ndim)
    _check_n(n)
    return d, -1 if n is None else int(n)


def fft(input: Tensor, n: Optional[int] = None, dim: int = -1,
        norm: Optional[str] = None) -> Tensor:
    """One-dimensional discrete Fourier transform along ``dim`` (``n`` points: the input is
    trimmed or zero-padded); ``norm`` is ``"backward"`` (default, no scaling), ``"ortho"``
    (``1/sqrt(n)``) or ``"forward"`` (``1/n``).

    >>> import ndgrad
    >>> ndgrad.fft.fft(ndgrad.tensor([1.0, 0.0, 0.0, 0.0]))
    tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    d, size = _one(input, n, dim)
    code = _norm_code(norm, True)
    x = _float_input(input)
    x = _resize(x, (d,), (size,))
    if x._data.dtype.kind == "c":
        return _c2c(x, (d,), code, True)
    return _r2c(x, (d,), code, False)


def ifft(input: Tensor, n: Optional[int] = None, dim: int = -1,
         norm: Optional[str] = None) -> Tensor:
    """One-dimensional inverse discrete Fourier transform along ``dim`` (see ``fft``; the
    default ``"backward"`` scales by ``1/n``).

    >>> import ndgrad
    >>> ndgrad.fft.ifft(ndgrad.tensor([4.0, 0.0, 0.0, 0.0])).real.tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    d, size = _one(input, n, dim)
    code = _norm_code(norm, False)
    x = _float_input(input)
    x = _resize(x, (d,), (size,))
    if x._data.dtype.kind == "c":
        return _c2c(x, (d,), code, False)
    return _pw.conj(_r2c(x, (d,), code, False))   # for real x, ifft(x) = conj(fft(x)) / n


def rfft(input: Tensor, n: Optional[int] = None, dim: int = -1,
         norm: Optional[str] = None) -> Tensor:
    """Fourier transform of a real signal: the ``n // 2 + 1`` non-negative frequencies.

    >>> import ndgrad
    >>> ndgrad.fft.rfft(ndgrad.tensor([1.0, 1.0, 1.0, 1.0]))
    tensor([4.+0.j, 0.+0.j, 0.+0.j])
    """
    d, size = _one(input, n, dim)
    code = _norm_code(norm, True)
    _real_only(input, "rfft expects a real input tensor")
    x = _resize(_float_input(input), (d,), (size,))
    return _r2c(x, (d,), code, True)


def irfft(input: Tensor, n: Optional[int] = None, dim: int = -1,
          norm: Optional[str] = None) -> Tensor:
    """Inverse of ``rfft``: a real signal of ``n`` points (default ``2 * (m - 1)`` for ``m``
    input frequencies) from its non-negative frequencies.

    >>> import ndgrad
    >>> ndgrad.fft.irfft(ndgrad.tensor([4.0, 0.0, 0.0]))
    tensor([1., 1., 1., 1.])
    """
    d, size = _one(input, n, dim)
    code = _norm_code(norm, False)
    x = _to_complex(_float_input(input))
    out_n = 2 * (x.shape[d] - 1) if size == -1 else size
    _check_n(out_n)
    x = _resize(x, (d,), (out_n // 2 + 1,))
    return _c2r(x, (d,), code, out_n)


def hfft(input: Tensor, n: Optional[int] = None, dim: int = -1,
         norm: Optional[str] = None) -> Tensor:
    """Fourier transform of a Hermitian-symmetric signal given by its first half: a real
    spectrum of ``n`` points (default ``2 * (m - 1)``).

    >>> import ndgrad
    >>> ndgrad.fft.hfft(ndgrad.tensor([1.0, 0.0, 0.0]))
    tensor([1., 1., 1., 1.])
    """
    d, size = _one(input, n, dim)
    code = _norm_code(norm, True)
    x = _to_complex(_float_input(input))
    out_n = 2 * (x.shape[d] - 1) if size == -1 else size
    _check_n(out_n)
    x = _resize(x, (d,), (out_n // 2 + 1,))
    return _c2r(_pw.conj(x), (d,), code, out_n)


def ihfft(input: Tensor, n: Optional[int] = None, dim: int = -1,
          norm: Optional[str] = None) -> Tensor:
    """Inverse of ``hfft``: the first ``n // 2 + 1`` entries of the inverse transform of a real
    signal.

    >>> import ndgrad
    >>> ndgrad.fft.ihfft(ndgrad.tensor([1.0, 1.0, 1.0, 1.0]))
    tensor([1.-0.j, 0.-0.j, 0.-0.j])
    """
    d, size = _one(input, n, dim)
    code = _norm_code(norm, False)
    _real_only(input, "ihfft expects a real input tensor")
    x = _resize(_float_input(input), (d,), (size,))
    return _pw.conj(_r2c(x, (d,), code, True))


# ---------------------------------------------------------------------------- n-d transforms
def _c2c_n(input: Tensor, s: Any, dim: Any, norm: Optional[str], forward: bool,
           default_dim: Any = None) -> Tensor:
    dims, sizes = _dims_and_sizes(input, s, dim, default_dim)
    code = _norm_code(norm, forward)
    x = _to_complex(_float_input(input))
    x = _resize(x, dims, sizes)
    if not dims:
        return x.clone() if x is input else x
    return _c2c(x, dims, code, forward)


def fftn(input: Tensor, s: Optional[Sequence[int]] = None, dim: Any = None,
         norm: Optional[str] = None) -> Tensor:
    """N-dimensional discrete Fourier transform over ``dim`` (default: all dims, or the last
    ``len(s)``), the input trimmed or zero-padded to ``s``.

    >>> import ndgrad
    >>> ndgrad.fft.fftn(ndgrad.ones(2, 2)).real.tolist()
    [[4.0, 0.0], [0.0, 0.0]]
    """
    return _c2c_n(input, s, dim, norm, True)


def ifftn(input: Tensor, s: Optional[Sequence[int]] = None, dim: Any = None,
          norm: Optional[str] = None) -> Tensor:
    """N-dimensional inverse discrete Fourier transform (see ``fftn``).

    >>> import ndgrad
    >>> ndgrad.fft.ifftn(ndgrad.ones(2, 2)).real.tolist()
    [[1.0, 0.0], [0.0, 0.0]]
    """
    return _c2c_n(input, s, dim, norm, False)


def fft2(input: Tensor, s: Optional[Sequence[int]] = None, dim: Any = (-2, -1),
         norm: Optional[str] = None) -> Tensor:
    """Two-dimensional discrete Fourier transform (``fftn`` over the last two dims).

    >>> import ndgrad
    >>> ndgrad.fft.fft2(ndgrad.ones(2, 2)).real.tolist()
    [[4.0, 0.0], [0.0, 0.0]]
    """
    return _c2c_n(input, s, dim, norm, True, (-2, -1))


def ifft2(input: Tensor, s: Optional[Sequence[int]] = None, dim: Any = (-2, -1),
          norm: Optional[str] = None) -> Tensor:
    """Two-dimensional inverse discrete Fourier transform.

    >>> import ndgrad
    >>> ndgrad.fft.ifft2(ndgrad.ones(2, 2)).real.tolist()
    [[1.0, 0.0], [0.0, 0.0]]
    """
    return _c2c_n(input, s, dim, norm, False, (-2, -1))


def _rfftn_common(input: Tensor, s: Any, dim: Any, name: str, default_dim: Any = None) -> tuple:
    """Dims and sizes of the real/Hermitian n-d transforms (at least one dim)."""
    dims, sizes = _dims_and_sizes(input, s, dim, default_dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    return dims, sizes


def rfftn(input: Tensor, s: Optional[Sequence[int]] = None, dim: Any = None,
          norm: Optional[str] = None) -> Tensor:
    """N-dimensional Fourier transform of a real input; the last transformed dim keeps its
    ``n // 2 + 1`` non-negative frequencies.

    >>> import ndgrad
    >>> ndgrad.fft.rfftn(ndgrad.ones(2, 2)).shape
    ndgrad.Size([2, 2])
    """
    return _rfftn(input, s, dim, norm)


def _rfftn(input, s, dim, norm, default_dim=None):
    dims, sizes = _rfftn_common(input, s, dim, "rfftn", default_dim)
    code = _norm_code(norm, True)
    _real_only(input, "rfftn expects a real-valued input tensor")
    x = _resize(_float_input(input), dims, sizes)
    return _r2c(x, dims, code, True)


def rfft2(input: Tensor, s: Optional[Sequence[int]] = None, dim: Any = (-2, -1),
          norm: Optional[str] = None) -> Tensor:
    """``rfftn`` over the last two dims.

    >>> import ndgrad
    >>> ndgrad.fft.rfft2(ndgrad.ones(2, 4)).shape
    ndgrad.Size([2, 3])
    """
    return _rfftn(input, s, dim, norm, (-2, -1))


def _half_input(input: Tensor, s: Any, dim: Any, norm: Optional[str], name: str,
                default_dim: Any, forward: bool) -> tuple:
    """Resized complex input of irfftn/hfftn, its dims and the output's last size."""
    dims, sizes = _rfftn_common(input, s, dim, name, default_dim)
    code = _norm_code(norm, forward)
    x = _to_complex(_float_input(input))
    last = dims[-1]
    out_n = 2 * (x.shape[last] - 1) if sizes[-1] == -1 else sizes[-1]
    _check_n(out_n)
    x = _resize(x, dims, sizes[:-1] + (out_n // 2 + 1,))
    return x, dims, code, out_n


def irfftn(input: Tensor, s: Optional[Sequence[int]] = None, dim: Any = None,
           norm: Optional[str] = None) -> Tensor:
    """Inverse of ``rfftn``: a real signal whose last transformed dim has ``s[-1]`` points
    (default ``2 * (m - 1)``).

    >>> import ndgrad
    >>> ndgrad.fft.irfftn(ndgrad.ones(2, 2)).shape
    ndgrad.Size([2, 2])
    """
    return _irfftn(input, s, dim, norm)


def _irfftn(input, s, dim, norm, default_dim=None):
    x, dims, code, out_n = _half_input(input, s, dim, norm, "irfftn", default_dim, False)
    return _c2r(x, dims, code, out_n)


def irfft2(input: Tensor, s: Optional[Sequence[int]] = None, dim: Any = (-2, -1),
           norm: Optional[str] = None) -> Tensor:
    """``irfftn`` over the last two dims.

    >>> import ndgrad
    >>> ndgrad.fft.irfft2(ndgrad.ones(2, 3)).shape
    ndgrad.Size([2, 4])
    """
    return _irfftn(input, s, dim, norm, (-2, -1))


def _hfftn(input, s, dim, norm, default_dim=None):
    x, dims, code, out_n = _half_input(input, s, dim, norm, "hfftn", default_dim, True)
    if len(dims) > 1:
        x = _c2c(x, dims[:-1], code, True)
    return _c2r(_pw.conj(x), dims[-1:], code, out_n)


def hfftn(input: Tensor, s: Optional[Sequence[int]] = None, dim: Any = None,
          norm: Optional[str] = None) -> Tensor:
    """N-dimensional ``hfft``: the real Fourier transform of a Hermitian-symmetric signal given
    by the first half of its last transformed dim.

    >>> import ndgrad
    >>> ndgrad.fft.hfftn(ndgrad.ones(2, 2)).shape
    ndgrad.Size([2, 2])
    """
    return _hfftn(input, s, dim, norm)


def hfft2(input: Tensor, s: Optional[Sequence[int]] = None, dim: Any = (-2, -1),
          norm: Optional[str] = None) -> Tensor:
    """``hfftn`` over the last two dims.

    >>> import ndgrad
    >>> ndgrad.fft.hfft2(ndgrad.ones(2, 3)).shape
    ndgrad.Size([2, 4])
    """
    return _hfftn(input, s, dim, norm, (-2, -1))


def _ihfftn(input, s, dim, norm, default_dim=None):
    dims, sizes = _rfftn_common(input, s, dim, "ihfftn", default_dim)
    code = _norm_code(norm, False)
    dt = input._data.dtype
    if dt.kind == "c":
        raise RuntimeError(f"Only supports floating-point dtypes, but found: {_torch_name(dt)}")
    x = _resize(_float_input(input), dims, sizes)
    y = _r2c(x, dims[-1:], code, True)
    if len(dims) == 1:
        return _pw.conj(y)
    y = apply(CONJ_PHYSICAL, (y,), (y._data,))
    return _c2c(y, dims[:-1], code, False)


def ihfftn(input: Tensor, s: Optional[Sequence[int]] = None, dim: Any = None,
           norm: Optional[str] = None) -> Tensor:
    """N-dimensional ``ihfft`` of a real input (the last transformed dim keeps ``n // 2 + 1``
    entries).

    >>> import ndgrad
    >>> ndgrad.fft.ihfftn(ndgrad.ones(2, 2)).shape
    ndgrad.Size([2, 2])
    """
    return _ihfftn(input, s, dim, norm)


def ihfft2(input: Tensor, s: Optional[Sequence[int]] = None, dim: Any = (-2, -1),
           norm: Optional[str] = None) -> Tensor:
    """``ihfftn`` over the last two dims.

    >>> import ndgrad
    >>> ndgrad.fft.ihfft2(ndgrad.ones(2, 4)).shape
    ndgrad.Size([2, 3])
    """
    return _ihfftn(input, s, dim, norm, (-2, -1))


# ---------------------------------------------------------------------------- shifts
def _shift(input: Tensor, dim: Any, inverse: bool) -> Tensor:
    nd = input.ndim
    if dim is None:
        dims = tuple(range(nd))
    else:
        dims = tuple(wrap_dim(int(d), nd) for d in ((dim,) if isinstance(dim, int) else dim))
    shifts = tuple(-(input.shape[d] // 2) if inverse else input.shape[d] // 2 for d in dims)
    if not dims:
        return apply(ROLL, (input,), (input._data,), ((), ()))
    return apply(ROLL, (input,), (input._data,), (dims, shifts))


def fftshift(input: Tensor, dim: Any = None) -> Tensor:
    """The zero-frequency entry moved to the center of ``dim`` (default: all dims), a roll by
    half of each size.

    >>> import ndgrad
    >>> ndgrad.fft.fftshift(ndgrad.tensor([0, 1, 2, -2, -1])).tolist()
    [-2, -1, 0, 1, 2]
    """
    return _shift(input, dim, False)


def ifftshift(input: Tensor, dim: Any = None) -> Tensor:
    """Inverse of ``fftshift``.

    >>> import ndgrad
    >>> ndgrad.fft.ifftshift(ndgrad.tensor([-2, -1, 0, 1, 2])).tolist()
    [0, 1, 2, -2, -1]
    """
    return _shift(input, dim, True)


# ---------------------------------------------------------------------------- frequencies
def _freq_dtype(dtype: Any, fn: str = "fftfreq") -> Any:
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{fn} requires a floating point or complex dtype")
    if dt.is_complex:       # torch builds the frequencies with arange, which has no complex
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{dt._torch_name}'")
    return dt


def _freq(values: np.ndarray, dtype: Any, requires_grad: bool) -> Tensor:
    out = _wrap(values.astype(dtype.np))
    if requires_grad:
        out._set_requires_grad(True)
    return out


def fftfreq(n: int, d: float = 1.0, *, dtype: Any = None, layout: Any = None,
            device: Any = None, requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an ``n``-point ``fft`` with sample spacing ``d``.

    >>> import ndgrad
    >>> ndgrad.fft.fftfreq(4).tolist()
    [0.0, 0.25, -0.5, -0.25]
    """
    dt = _freq_dtype(dtype)
    k = np.concatenate([np.arange((n + 1) // 2), np.arange(-(n // 2), 0)]) if n > 0 else \
        np.zeros(0)
    return _freq(k / (d * n) if n > 0 else k, dt, requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, dtype: Any = None, layout: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an ``n``-point ``rfft`` (``n // 2 + 1`` of them).

    >>> import ndgrad
    >>> ndgrad.fft.rfftfreq(4).tolist()
    [0.0, 0.25, 0.5]
    """
    dt = _freq_dtype(dtype, "rfftfreq")
    k = np.arange(n // 2 + 1) if n > 0 else np.zeros(0)
    return _freq(k / (d * n) if n > 0 else k, dt, requires_grad)


# ---------------------------------------------------------------------------- stft / istft
def _overlap_add_fwd(frames: np.ndarray, hop: int, length: int) -> np.ndarray:
    """``out[..., t * hop + k] += frames[..., t, k]`` (frames along the last two dims)."""
    n_frames, n = frames.shape[-2:]
    out = np.zeros(frames.shape[:-2] + (length,), frames.dtype)
    starts = np.arange(n_frames) * hop
    for k in range(n):
        out[..., starts + k] += frames[..., :, k]
    return out


def _overlap_add_vjp(ctx, g):
    hop = ctx._args[0]
    shape = ctx._input_meta[0][0]     # (..., n_frames, n); the output's last dim is len - 2
    # apply, not the public unfold: its checks would see a batched cotangent's physical shape.
    return apply(_shape.UNFOLD, (g,), (g._data,), (len(shape) - 2, shape[-1], hop))


# The overlap-add of istft: PyTorch's unfold_backward (the adjoint of unfold), whose own
# gradient is unfold.
OVERLAP_ADD = Op("unfold_backward", "UnfoldBackwardBackward0", _overlap_add_fwd,
                 _overlap_add_vjp, args=("step", "length"), jvp=linear)


def _reflect_fwd(x: np.ndarray, p: int) -> np.ndarray:
    widths = [(0, 0)] * (x.ndim - 1) + [(p, p)]
    return np.pad(x, widths, mode="reflect")


def _reflect_backward_fwd(g: np.ndarray, p: int) -> np.ndarray:
    """The adjoint of reflection padding: each padded sample added back to its mirror."""
    n = g.shape[-1] - 2 * p
    out = g[..., p:p + n].copy()
    out[..., 1:p + 1] += g[..., p - 1::-1] if p else 0
    out[..., n - 1 - p:n - 1] += g[..., :p + n - 1:-1] if p else 0
    return out


# Reflection padding of the last dim (stft's ``center``), and its adjoint, each the other's
# derivative.
REFLECT_PAD = Op("reflection_pad1d", "ReflectionPad1DBackward0", _reflect_fwd,
                 lambda ctx, g: apply(REFLECT_PAD_BACKWARD, (g,), (g._data,), ctx._args),
                 saves=("self",), args=("padding",), jvp=linear)
REFLECT_PAD_BACKWARD: Op = Op("reflection_pad1d_backward", "ReflectionPad1DBackwardBackward0",
                          _reflect_backward_fwd,
                          lambda ctx, g: apply(REFLECT_PAD, (g,), (g._data,), ctx._args),
                          args=("padding",), jvp=linear)


_LEGACY_TENSOR_NAMES = ("Float", "Double", "Half", "Byte", "Char", "Short", "Int", "Long")


def _stft_signature(name: str, input: Tensor, n_fft: int, hop: Any, win: Any, window: Any,
                    **more: Any) -> str:
    # PyTorch's words: istft names its input's type CPU<Name>Type, stft torch.<Name>Tensor; the
    # window by its own type; flags as 0/1
    def kind(t: Tensor) -> str:
        name = _dtype._FROM_NP[t._data.dtype]._torch_name
        if name in _LEGACY_TENSOR_NAMES:
            return "torch." + name + "Tensor"
        return f"CPU{name}Type"     # the dtypes without a legacy torch.<Name>Tensor class

    src = (f"CPU{_dtype._FROM_NP[input._data.dtype]._torch_name}Type" if name == "istft"
           else kind(input))
    w = "None" if window is None else f"{kind(window)}{{{list(window.shape)}}}"
    extra = "".join(f", {k}={int(v) if isinstance(v, bool) else v}" for k, v in more.items())
    return (f"{name}({src}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={w}{extra}) : ")


def _padded_window(window: Optional[Tensor], n_fft: int, win_length: int, like: Tensor) -> Any:
    """The window centered in ``n_fft`` samples (None: rectangular, no multiplication)."""
    if window is None:
        if win_length == n_fft:
            return None
        w = np.zeros(n_fft, np.real(like._data[:0]).dtype)
        left = (n_fft - win_length) // 2
        w[left:left + win_length] = 1
        return _wrap(w)
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        return _pad_end_list(window, [left, n_fft - win_length - left])
    return window


def _pad_signal(x: Tensor, p: int, mode: str) -> Tensor:
    """``x`` padded by ``p`` samples at both ends of its last dim."""
    n = x.shape[-1]
    if mode == "constant":
        return _pad_end_list(x, [p, p])
    if mode == "reflect":
        if p >= n:
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({p}, {p}) at dimension "
                               f"{x.ndim} of input {[1] * (3 - x.ndim) + list(x.shape)}")
        # As PyTorch: the (batch, length) signal padded as a (1, batch, length) tensor.
        x3 = _shape.reshape(x, (1,) + tuple(x.shape))
        y = apply(REFLECT_PAD, (x3,), (x3._data,), (p,))
        return _shape.reshape(y, (x.shape[0], n + 2 * p))
    if mode == "replicate":
        idx = np.concatenate([np.zeros(p, np.int64), np.arange(n), np.full(p, n - 1)])
    elif mode == "circular":
        idx = np.arange(-p, n + p) % n
    else:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    return x[..., _wrap(idx.astype(np.int64))]


def stft(input: Tensor, n_fft: int, hop_length: Optional[int] = None,
         win_length: Optional[int] = None, window: Optional[Tensor] = None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided: Optional[bool] = None,
         return_complex: Optional[bool] = None) -> Tensor:
    """Short-time Fourier transform: the Fourier transforms of the windowed frames of
    ``n_fft`` samples, ``hop_length`` apart, of a 1-d signal or a batch of them (shape
    ``(..., n_fft // 2 + 1 or n_fft, n_frames)``).

    >>> import ndgrad
    >>> ndgrad.stft(ndgrad.ones(8), 4, return_complex=True).shape
    ndgrad.Size([3, 9])
    """
    if window is None:
        warn_user_once("A window was not provided. A rectangular window will be applied,which "
                       "is known to cause spectral leakage. Other windows such as "
                       "torch.hann_window or torch.hamming_window are recommended to reduce "
                       "spectral leakage.To suppress this warning and use a rectangular window, "
                       "explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    x = input
    real_in = x._data.dtype.kind != "c" and (window is None or window._data.dtype.kind != "c")
    given_complex = return_complex          # the messages show the argument as passed
    if return_complex is None:
        if real_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in a "
                               "future PyTorch release.")
        return_complex = True
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    flags = {"normalized": normalized, "onesided": onesided, "return_complex": given_complex,
             "align_to_window": None}
    if x.ndim not in (1, 2):
        shown = x
        if center and x.ndim == 3 and n_fft // 2 < x.shape[-1]:
            # torch pads a 3-d signal's last dim before it looks at the dims
            shown = _wrap(np.empty(x.shape[:-1] + (x.shape[-1] + n_fft // 2 * 2,),
                                   x._data.dtype))
        raise RuntimeError(_stft_signature("stft", shown, n_fft, hop, win, window, **flags) +
                           "expected a 1D or 2D tensor")
    if x.ndim == 1:
        x = _shape.unsqueeze(x, 0)
    if center:
        if x._data.dtype == np.bool_ and pad_mode == "reflect" and n_fft // 2 < x.shape[-1]:
            raise NotImplementedError("\"reflection_pad1d\" not implemented for 'Bool'")
        x = _pad_signal(x, n_fft // 2, pad_mode)
    length = x.shape[-1]
    sig = _stft_signature("stft", x if x.ndim == 2 and input.ndim == 2 else
                          _shape.squeeze(x, 0), n_fft, hop, win, window, **flags)
    # torch checks the (padded) signal's dtype before its sizes: no integers
    if x._data.dtype.kind in "biu":
        raise RuntimeError(sig + "expected a tensor of floating point or complex values")
    if not 0 < n_fft <= length:
        raise RuntimeError(sig + f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(sig + f"expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(sig + f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(sig + "expected a 1D window tensor of size equal to win_length="
                           f"{win}, but got window with size {list(window.shape)}")
    if x._data.dtype in (np.float16, _dtype.bfloat16.np):     # at the transform, in torch
        raise RuntimeError(f"MKL FFT doesn't support tensors of type: "
                           f"{_torch_name(x._data.dtype)}")
    frames = _shape.unfold(x, 1, n_fft, hop)
    w = _padded_window(window, n_fft, win, x)
    if w is not None:
        frames = frames * w
    if onesided is None:
        onesided = real_in
    elif onesided and not real_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    code = 1 if normalized else 0
    if frames._data.dtype.kind == "c":
        y = _c2c(frames, (2,), code, True)
    else:
        y = _r2c(frames, (2,), code, bool(onesided))
    y = _shape.transpose(y, 1, 2)
    if input.ndim == 1:
        y = _shape.squeeze(y, 0)
    if not return_complex:
        y = _shape.stack([_shape.real(y), _shape.imag(y)], -1)
    return y


def istft(input: Tensor, n_fft: int, hop_length: Optional[int] = None,
          win_length: Optional[int] = None, window: Optional[Tensor] = None, center: bool = True,
          normalized: bool = False, onesided: Optional[bool] = None,
          length: Optional[int] = None, return_complex: bool = False) -> Tensor:
    """Inverse short-time Fourier transform: overlap-add of the inverse transforms of the
    frames, divided by the overlap-added squared window.

    >>> import ndgrad
    >>> x = ndgrad.arange(8.0)
    >>> y = ndgrad.istft(ndgrad.stft(x, 4, return_complex=True), 4, length=8)
    >>> (y - x).abs().max().item() < 1e-5
    True
    """
    if input._data.dtype.kind != "c":
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    sig = _stft_signature("istft", input, n_fft, hop, win, window, center=center,
                          normalized=normalized, onesided=onesided, length=length,
                          return_complex=return_complex)
    if input.ndim not in (2, 3):
        nd = max(input.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [-{nd}, {nd - 1}], "
                         "but got -3)")
    if window is None:
        warn_user_once("A window was not provided. A rectangular window will be applied.Please "
                       "provide the same window used by stft to make the inversion lossless.To "
                       "suppress this warning and use a rectangular window, explicitly set "
                       "`window=torch.ones(n_fft, device=<device>)`.")
    x = input if input.ndim == 3 else _shape.unsqueeze(input, 0)
    n_freq, n_frames = x.shape[1:]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided and n_fft // 2 + 1 != n_freq:
        raise RuntimeError(sig + f"expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                           f"{n_freq}")
    if not onesided and n_freq != n_fft:
        raise RuntimeError(sig + "expected the frequency dimension (3rd to the last) of the input "
                           f"tensor to match n_fft when onesided=False, but got {n_freq}")
    if not 0 < win <= n_fft:
        raise RuntimeError(sig + "expected 0 < win_length <= n_fft")
    if not 0 < hop <= win:
        raise RuntimeError(sig + "expected 0 < hop_length <= win_length")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(sig + "Invalid window shape. window has to be 1D and length of "
                           "`win_length`")
    frames = _shape.transpose(x, 1, 2)
    code = 1 if normalized else 2
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        y = _c2c(frames, (2,), code, False)
    else:
        if window is not None and window._data.dtype.kind == "c":
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        # A real signal: the transform of the first n_fft // 2 + 1 bins, taken as one half of
        # a Hermitian spectrum (the rest of a full spectrum is ignored, as in PyTorch).
        y = _c2r(_resize(frames, (2,), (n_fft // 2 + 1,)), (2,), code, n_fft)
    w = _padded_window(window, n_fft, win, y)
    if w is None:    # PyTorch multiplies by a window of ones
        w = _wrap(np.ones(n_fft, np.real(y._data[:0]).dtype))
    y = y * _shape.reshape(w, (1, 1, n_fft))
    expected = n_fft + hop * (n_frames - 1)
    y = apply(OVERLAP_ADD, (y,), (y._data,), (hop, expected))
    # The squared window overlap-added: differentiable in the window, as in PyTorch.
    wsq = _shape.expand(_shape.reshape(w * w, (1, 1, n_fft)), (1, n_frames, n_fft))
    env = apply(OVERLAP_ADD, (wsq,), (wsq._data,), (hop, expected))
    start = n_fft // 2 if center else 0
    end = expected - n_fft // 2 if center else expected
    if length is not None:
        end = start + length
    y = _shape.narrow(y, 1, start, min(end, expected) - start)
    env = _shape.narrow(env, 1, start, min(end, expected) - start)
    if env._data.size and np.abs(env._data).min() < 1e-11:
        # PyTorch prints its check's boolean (1) here, without the colon of its other messages
        raise RuntimeError(sig[:-3] + " window overlap add min: 1\n[ CPUBoolType{} ]")
    y = y / env
    if end > expected:
        y = _pad_dim(y, 2, 1, end - expected)
    if input.ndim == 2:
        y = _shape.squeeze(y, 0)
    return y


# ---------------------------------------------------------------------------- batching rules
def _rule_dims(c, args):
    """Ops whose first argument is a tuple of dims (the transforms, roll)."""
    return apply(c.op, tuple(c.ts), tuple(c.arrs), (tuple(d + 1 for d in args[0]),) + args[1:])


def _install_batching() -> None:
    from ._batching import RULES, _dim_first, _pointwise
    for op in (FFT_C2C, FFT_R2C, FFT_C2R, ROLL):
        RULES[op] = _rule_dims
    for op in (REFLECT_PAD, REFLECT_PAD_BACKWARD):   # on the last dim
        RULES[op] = lambda c, args: apply(c.op, tuple(c.ts), tuple(c.arrs), args)
    # The overlap-add acts on the last two dims: a leading batch dim does not change it.
    RULES[OVERLAP_ADD] = lambda c, args: apply(c.op, tuple(c.ts), tuple(c.arrs), args)
    # The overlap-add's gradient is unfold (of a cotangent with at least one logical dim).
    RULES.setdefault(_shape.UNFOLD, _dim_first)
    # The pad list counts dims from the last one: a leading batch dim does not change it.
    RULES[CONSTANT_PAD] = lambda c, args: apply(c.op, tuple(c.ts), tuple(c.arrs), args)
    RULES[CONJ_PHYSICAL] = _pointwise()


_install_batching()
