"""nn op family: interpolate/upsample, grid_sample, affine_grid.

Interpolation (every mode: nearest, nearest-exact, (bi/tri)linear, bicubic, antialiased
bilinear/bicubic/Lanczos-3) is separable: along each spatial dim the output is a fixed linear
combination of the input positions, so one (out x in) weight matrix per dim describes it and the
op is the separable map of Note [Pooling as two kernels] (ops/nn_pool.py) with torch's node name
(``UpsampleBilinear2DBackward0`` ...); its VJP applies the transposed matrices. ``area`` is
adaptive average pooling, as in torch. uint8 images resize bilinear/bicubic in fixed point
(Note [uint8 bilinear/bicubic resize]).

grid_sample reads each output position at its own (grid-given) location: one op whose forward
gathers the corners, with a VJP written with ndgrad ops (a scatter-add for the input, the
weights' derivatives for the grid), so it is differentiable again.

Example:
    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> x = ndgrad.tensor([[[1.0, 3.0]]], requires_grad=True)
    >>> y = F.interpolate(x, scale_factor=2, mode="linear")
    >>> y.detach()
    tensor([[[1.0000, 1.5000, 2.5000, 3.0000]]])
    >>> y.grad_fn.name()
    'UpsampleLinear1DBackward0'

"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

import numpy as np

from .. import _creation, _dtype
from .._warn import warn_user
from ..tensor import Tensor, _wrap
from ._batching import call as _bcall
from ._channels_last import keep as _keep_cl
from ._dispatch import Op, apply
from ._jvp import not_implemented
from . import nn_pool
from .nn_pool import _sep_op
from .shape import cat
from ._util import category
from . import _autocast

_INT = _dtype._INT


# ---------------------------------------------------------------------------- weight matrices
def _area_scale(n_in: int, n_out: int, align: bool, scale: Any) -> float:
    """Source step per output step (torch's area_pixel_compute_scale)."""
    if align:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


def _source(o: np.ndarray, step: float, align: bool, cubic: bool) -> np.ndarray:
    if align:
        return step * o
    s = step * (o + 0.5) - 0.5
    return s if cubic else np.maximum(s, 0.0)


def nearest_matrix(n_in: int, n_out: int, scale: Any, exact: bool,
                   shortcuts: bool = False) -> np.ndarray:
    """Selection matrix of nearest (``floor(o * s)``) or nearest-exact (``floor((o + .5) * s)``)
    with the step ``s`` in float32 as torch computes it; ``shortcuts``: torch's 2-d nearest
    kernel maps equal sizes to the identity and doubled sizes to ``o // 2`` whatever the
    scale."""
    o = np.arange(n_out)
    if scale is not None and scale > 0:
        step = np.float32(1.0 / scale)
    else:
        step = np.float32(n_in) / np.float32(n_out)
    if exact:
        src = np.floor((o.astype(np.float32) + np.float32(0.5)) * step).astype(np.int64)
    elif shortcuts and n_out == n_in:
        src = o
    elif shortcuts and n_out == 2 * n_in:
        src = o >> 1
    else:
        src = np.floor(o.astype(np.float32) * step).astype(np.int64)
    src = np.minimum(src, n_in - 1)
    a = np.zeros((n_out, n_in))
    a[o, src] = 1.0
    return a


def linear_matrix(n_in: int, n_out: int, align: bool, scale: Any) -> np.ndarray:
    if n_in == n_out:       # torch copies a dim whose size does not change, whatever the scale
        return np.eye(n_in)
    o = np.arange(n_out)
    src = _source(o, _area_scale(n_in, n_out, align, scale), align, False)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = i0 + (i0 < n_in - 1)
    l1 = np.clip(src - i0, 0.0, 1.0)
    a = np.zeros((n_out, n_in))
    np.add.at(a, (o, i0), 1.0 - l1)
    np.add.at(a, (o, i1), l1)
    return a


def _cubic_weights(t: np.ndarray, A: float) -> list:
    def near(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def cubic_matrix(n_in: int, n_out: int, align: bool, scale: Any) -> np.ndarray:
    o = np.arange(n_out)
    src = _source(o, _area_scale(n_in, n_out, align, scale), align, True)
    i = np.floor(src).astype(np.int64)
    t = src - i
    a = np.zeros((n_out, n_in))
    for k, w in enumerate(_cubic_weights(t, -0.75)):
        np.add.at(a, (o, np.clip(i - 1 + k, 0, n_in - 1)), w)
    return a


def _lanczos3(x: np.ndarray) -> np.ndarray:
    """The Lanczos-3 windowed sinc, ``sinc(x) sinc(x / 3)`` on (-3, 3)."""
    return np.where(np.abs(x) < 3.0, np.sinc(x) * np.sinc(x / 3.0), 0.0)


def antialias_matrix(n_in: int, n_out: int, align: bool, scale: Any, cubic: bool,
                     lanczos: bool = False) -> np.ndarray:
    """Antialiased (bilinear/bicubic/Lanczos-3) weights: the filter widened by the downscaling
    factor, normalized per output position."""
    if n_in == n_out:
        return np.eye(n_in)
    step = _area_scale(n_in, n_out, align, scale)
    size = 6 if lanczos else 4 if cubic else 2
    support = (size / 2) * step if step >= 1.0 else size / 2
    inv = 1.0 / step if step >= 1.0 else 1.0
    a = np.zeros((n_out, n_in))
    for o in range(n_out):   # one small row of weights per output position (not per pixel)
        center = step * (o + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n_in)
        x = (np.arange(lo, hi) - center + 0.5) * inv
        if lanczos:
            w = _lanczos3(x)
        elif cubic:
            ax = np.abs(x)
            A = -0.5
            w = np.where(ax < 1, ((A + 2) * ax - (A + 3)) * ax * ax + 1,
                         np.where(ax < 2, ((A * ax - 5 * A) * ax + 8 * A) * ax - 4 * A, 0.0))
        else:
            w = np.maximum(1.0 - np.abs(x), 0.0)
        tot = w.sum()
        a[o, lo:hi] = w / tot if tot != 0 else w
    return a


# ---------------------------------------------------------------------------- uint8 images
# Note [uint8 bilinear/bicubic resize]
# torch resizes uint8 images (bilinear, bicubic, either antialias) the way Pillow does, not
# through float: per resized dim (the last first), each weight is turned into an integer of
# ``p`` fractional bits (``p`` the largest below 22 that keeps twice the largest weight under
# 2**15 after rounding; rounded half away from zero), the taps' integer products are summed
# with 2**(p-1) and shifted right by ``p`` (a floor), and the result saturates to [0, 255]
# before the next dim. So an output can differ by one from rounding the float result, and
# bicubic's overshoot is clipped. A dim whose size does not change is not resampled at all.
# The sums are exact in float64 (|sum| < 255 * 2**15 * taps).
def _fixed_point(a: np.ndarray) -> tuple:
    """Weights ``a`` (out x in) as integers of ``p`` fractional bits (as float64) and
    ``2**p``."""
    wmax = float(a.max())
    p = 0
    while p < 22 and int(0.5 + wmax * (1 << (p + 1))) < (1 << 15):
        p += 1
    return np.trunc(a * (1 << p) + np.where(a < 0, -0.5, 0.5)), float(1 << p)


def _resize_uint8(x: np.ndarray, mode: str, out: tuple, scales: tuple, align: bool,
                  mats: list) -> np.ndarray:
    """Note [uint8 bilinear/bicubic resize]: ``x`` (..., H, W) uint8 resized to ``out``."""
    y = x.astype(np.float64)
    for j in (1, 0):
        ax = j - 2
        n, o = y.shape[ax], out[j]
        if n == o:
            continue
        m, one = _fixed_point(mats[j])
        t = np.moveaxis(y, ax, -1)
        t = (np.ascontiguousarray(t).reshape(-1, n) @ m.T).reshape(t.shape[:-1] + (o,))
        y = np.moveaxis(t, -1, ax)
        y = np.clip(np.floor((y + one / 2) / one), 0, 255)
    return y.astype(np.uint8)


# an op (not a bare result) so that traces and compiled functions record it; integers carry
# no gradient
UINT8_RESIZE = Op("_upsample_uint8", "UpsampleUint8Backward0",
                  lambda x, mode, out, scales, align, mats: _resize_uint8(x, mode, out, scales,
                                                                          align, list(mats)),
                  args=("mode", "output_size", "scales", "align_corners", "mats"),
                  jvp=lambda ctx, t: None)


# ---------------------------------------------------------------------------- ops
_UP: dict = {}
_NODE = {"nearest": "UpsampleNearest{n}D", "nearest-exact": "UpsampleNearestExact{n}D",
         "linear": "UpsampleLinear1D", "bilinear": "UpsampleBilinear2D",
         "bicubic": "UpsampleBicubic2D", "trilinear": "UpsampleTrilinear3D",
         "bilinear-aa": "UpsampleBilinear2DAa", "bicubic-aa": "UpsampleBicubic2DAa",
         "lanczos-aa": "UpsampleLanczos2DAa"}
for _mode, _node in _NODE.items():
    for _n in ((1, 2, 3) if "{n}" in _node else (int(_node[_node.index("D") - 1]),)):
        _name = "upsample_" + _mode.replace("-", "_") + f"{_n}d"
        _UP[_mode, _n] = _sep_op(_name, _node.format(n=_n) + "Backward0",
                                 ("output_size", "scales", "align_corners"))
del _mode, _node, _n, _name


# the kernel torch's "not implemented for" error names, by mode (else upsample_<mode>_channels_last)
_KERNEL = {"linear": "compute_indices_weights_linear",
           "trilinear": "compute_indices_weights_linear",
           "bicubic": "compute_indices_weights_cubic",
           "bilinear-aa": "compute_index_ranges_weights",
           "bicubic-aa": "compute_index_ranges_weights",
           "lanczos-aa": "compute_index_ranges_weights"}


def _upsample(input: Tensor, mode: str, out: tuple, scales: tuple, align: bool) -> Tensor:
    # Note [Channels-last results] (ops/_channels_last.py); area mode is adaptive pooling's
    return _keep_cl(_upsample_any(input, mode, out, scales, align), input)


def _upsample_any(input: Tensor, mode: str, out: tuple, scales: tuple, align: bool) -> Tensor:
    x = input._data
    nsp = len(out)
    plane = x.shape[x.ndim - nsp:]
    if any(v <= 0 for v in plane) or any(v <= 0 for v in out):
        names = "DHW"[3 - nsp:]
        i_s = ", ".join(f"{a}: {v}" for a, v in zip(names, plane))
        o_s = ", ".join(f"{a}: {v}" for a, v in zip(names, out))
        joint = " and" if nsp == 1 else ""         # torch's 1-d kernels word it so
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({i_s}){joint} output ({o_s})")
    if x.shape[1] == 0:
        raise RuntimeError(f"Non-empty {x.ndim}D data tensor expected but got a tensor with "
                           f"sizes {list(x.shape)}")
    if x.dtype == np.bool_ or x.dtype.kind == "c" or (category(x) <= _INT and not (
            x.dtype == np.uint8 and (mode.startswith("nearest") or nsp == 2))) or (
            mode.endswith("-aa") and x.dtype.name in ("float16", "bfloat16")):
        kernel = _KERNEL.get(mode, f"upsample_{mode.replace('-', '_')}{nsp}d_channels_last")
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_dtype._FROM_NP[x.dtype]._torch_name}'")
    mats = []
    for j in range(nsp):
        n, o, s = plane[j], out[j], scales[j]
        if mode in ("nearest", "nearest-exact"):
            mats.append(nearest_matrix(n, o, s, mode == "nearest-exact", nsp == 2))
        elif mode in ("linear", "bilinear", "trilinear"):
            mats.append(linear_matrix(n, o, align, s))
        elif mode == "bicubic":
            mats.append(cubic_matrix(n, o, align, s))
        else:
            mats.append(antialias_matrix(n, o, align, s, mode == "bicubic-aa",
                                         mode == "lanczos-aa"))
    if x.dtype == np.uint8 and not mode.startswith("nearest"):
        return apply(UINT8_RESIZE, (input,), (x,), (mode, tuple(out), tuple(scales),
                                                    bool(align), tuple(mats)))
    op = _UP[mode, nsp]
    return apply(op, (input,), (x,), (tuple(out), tuple(scales),
                                      None if mode.startswith("nearest") else bool(align),
                                      tuple(mats)))


def _seq(v: Any, n: int) -> Any:
    if isinstance(v, Tensor):
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        return list(v)
    return [v] * n


_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None,
                mode: str = "nearest", align_corners: Any = None,
                recompute_scale_factor: Any = None, antialias: bool = False) -> Tensor:
    """Resample the spatial dims of an (N, C, d1, ...) input to ``size`` or by
    ``scale_factor`` with ``mode`` nearest, nearest-exact, linear, bilinear, bicubic,
    trilinear, lanczos (Lanczos-3, antialiased, 2-d) or area (torch's pixel conventions,
    ``align_corners``, ``antialias``).

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.interpolate(ndgrad.tensor([[[1.0, 2.0]]]), scale_factor=2)
    tensor([[[1., 1., 2., 2.]]])
    """
    if input._blevel:
        r = _bcall(interpolate, input, size, scale_factor, mode, align_corners,
                   recompute_scale_factor, antialias)
        if r is not NotImplemented:
            return r
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    x = input._data
    dim = x.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if not all(isinstance(v, (int, np.integer)) or (
                    isinstance(v, Tensor) and not v.is_floating_point()) for v in size):
                types = [Tensor if isinstance(v, Tensor) else type(v) for v in size]
                names = ", ".join("<class 'torch.Tensor'>" if t is Tensor else str(t)
                                  for t in types)
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, "
                                "int] or Tuple[int, int, int], but got size with types "
                                f"[{names}]")
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(x.shape[2:])} and output size of "
                    f"{size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "output size in (o1, o2, ...,oK) format.")
        output_size = _seq(size, dim)
        scales: Any = None
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)) and len(scale_factor) != dim:
            raise ValueError(
                "Input and scale_factor must have the same number of spatial dimensions, but "
                f"got input with spatial dimensions of {list(x.shape[2:])} and scale_factor of "
                f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                "format and scale_factor in (s1, s2, ...,sK) format.")
        output_size = None
        scales = [float(s) for s in _seq(scale_factor, dim)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor is not None and recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if output_size is None:
        output_size = [int(math.floor(float(x.shape[i + 2]) * scales[i])) for i in range(dim)]
        if recompute_scale_factor:
            scales = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and x.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    sc = tuple(scales) if scales is not None else (None,) * max(dim, 0)
    out = tuple(int(v) for v in output_size) if dim > 0 else ()
    need = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
    if x.ndim in (3, 4, 5):
        if mode in ("nearest", "nearest-exact"):
            return _upsample(input, mode, out, sc, False)
        if mode == "area":
            return {3: nn_pool.adaptive_avg_pool1d, 4: nn_pool.adaptive_avg_pool2d,
                    5: nn_pool.adaptive_avg_pool3d}[x.ndim](input, out)
        if mode == "lanczos" and x.ndim == 4:
            if align_corners:
                raise ValueError("Lanczos mode does not support align_corners=True")
            if not antialias:
                raise ValueError("Lanczos mode requires antialias=True")
            return _upsample(input, "lanczos-aa", out, sc, False)
        if mode in need and not (mode == "bicubic" and x.ndim != 4):
            if x.ndim != need[mode]:
                raise NotImplementedError(f"Got {x.ndim}D input, but {mode} mode needs "
                                          f"{need[mode]}D input")
            m = mode + "-aa" if antialias else mode
            return _upsample(input, m, out, sc, bool(align_corners))
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                              f"{x.ndim}D) for the modes: {_MODES} (got {mode})")


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: Any = None) -> Tensor:
    """Deprecated alias of ``interpolate`` (warns, as torch does).

    >>> import ndgrad, ndgrad.nn.functional as F, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     F.upsample(ndgrad.tensor([[[1.0, 2.0]]]), size=3)
    tensor([[[1., 1., 2.]]])
    """
    warn_user("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
              "instead.")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode="nearest")``.

    >>> import ndgrad, ndgrad.nn.functional as F, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     F.upsample_nearest(ndgrad.tensor([[[1.0, 2.0]]]), scale_factor=2)
    tensor([[[1., 1., 2., 2.]]])
    """
    warn_user("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` "
              "instead.")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode="bilinear", align_corners=True)``.

    >>> import ndgrad, ndgrad.nn.functional as F, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     F.upsample_bilinear(ndgrad.tensor([[[[0.0, 2.0]]]]), size=(1, 3))
    tensor([[[[0., 1., 2.]]]])
    """
    warn_user("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` "
              "instead.")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---------------------------------------------------------------------------- affine_grid
def _base_grid(size: tuple, align: bool, dt: Any = np.float64) -> np.ndarray:
    """(*spatial, nsp + 1) homogeneous coordinates (x first, i.e. the last dim first), in
    ``dt`` and rounded as torch's: its ``linspace(-1, 1, n)`` in that dtype, times ``n - 1``
    then divided by ``n`` when not ``align``."""
    sp = size[2:]
    d = _dtype.from_numpy_dtype(np.dtype(dt))

    def lin(n):
        if n <= 1:
            return np.zeros(max(n, 0), dt)
        v = _creation.linspace(-1, 1, n, dtype=d)._data
        return v if align else v * v.dtype.type(n - 1) / v.dtype.type(n)
    axes = [lin(n) for n in sp]
    mesh = np.meshgrid(*axes, indexing="ij")
    coords = [m for m in reversed(mesh)] + [np.ones(tuple(sp), dt)]
    return np.stack(coords, axis=-1)


def _affine_fwd(theta: np.ndarray, size: tuple, align: bool) -> np.ndarray:
    base = _base_grid(size, align, theta.dtype)
    nsp = len(size) - 2
    b = base.reshape(-1, nsp + 1)
    out = np.matmul(b, np.swapaxes(theta, 1, 2))
    return out.reshape((size[0],) + tuple(size[2:]) + (nsp,))


def _affine_vjp(ctx, g):
    size, align = ctx._args
    nsp = len(size) - 2
    base = _wrap(_base_grid(size, align, g._data.dtype).reshape(-1, nsp + 1))
    gf = g.reshape(size[0], -1, nsp)
    return gf.transpose(1, 2).matmul(base)


def _affine_jvp(ctx, t):
    return apply(AFFINE_GRID, (t,), (t._data,), ctx._args)


AFFINE_GRID = Op("affine_grid_generator", "AffineGridGeneratorBackward0", _affine_fwd,
                 _affine_vjp, args=("size", "align_corners"), jvp=_affine_jvp)


def affine_grid(theta: Tensor, size: Any, align_corners: Any = None) -> Tensor:
    """The sampling grid (N, *spatial, 2 or 3) of the affine maps ``theta`` (N, 2, 3) or
    (N, 3, 4) over normalized [-1, 1] coordinates, for grid_sample.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> F.affine_grid(ndgrad.tensor([[[1.0, 0, 0], [0, 1, 0]]]), (1, 1, 2, 2),
    ...               align_corners=True)
    tensor([[[[-1., -1.],
              [ 1., -1.]],
    <BLANKLINE>
             [[-1.,  1.],
              [ 1.,  1.]]]])
    """
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to "
                      "align_corners=False since 1.3.0. Please specify align_corners=True if "
                      "the old behavior is desired. See the documentation of grid_sample for "
                      "details.", stacklevel=3)
        align_corners = False
    th = theta._data
    if th.dtype.kind not in "f" and th.dtype.name != "bfloat16":
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    given = size                # torch's messages show the size as passed
    size = tuple(int(v) for v in size)
    if len(size) == 4:
        if th.ndim != 3 or th.shape[-2:] != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{given}. Got {theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if th.ndim != 3 or th.shape[-2:] != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{given}. Got {theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {given}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=3)
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {given}")
    if th.shape[0] != size[0]:
        # torch's batched product of the base grid and theta fails
        k = th.shape[-1]
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{size[0]}, {k}] but got: [{th.shape[0]}, {k}].")
    return apply(AFFINE_GRID, (theta,), (th,), (size, bool(align_corners)))


# ---------------------------------------------------------------------------- grid_sample
# Note [grid_sample as taps]
# Along grid component j (x, y, z: the input's last, second-to-last ... spatial dim) the sample
# coordinate is ``ix = a * g + b`` (unnormalized), then the padding mode's piecewise linear map
# ``ixp = s * ix + c`` (border: clip; reflection: reflect then clip; ``s`` and ``c`` are
# constant per position). Each mode reads fixed taps around ``ixp`` (bilinear 2, bicubic 4,
# nearest 1) with weights that are polynomials of ``frac = ixp - floor(ixp)``. The output is
# sum over tap combinations of prod_j w_j(frac_j) * input[taps]. The indices and s, c are
# computed once from the grid's values; the weights are written with arithmetic only, so the
# same code computes them on arrays (forward) and on Tensors (the VJP, differentiable again).
_A_CUBIC = -0.75


def _near(x: Any) -> Any:
    return ((_A_CUBIC + 2) * x - (_A_CUBIC + 3)) * x * x + 1


def _far(x: Any) -> Any:
    return ((_A_CUBIC * x - 5 * _A_CUBIC) * x + 8 * _A_CUBIC) * x - 4 * _A_CUBIC


def _dnear(x: Any) -> Any:
    return (3 * (_A_CUBIC + 2) * x - 2 * (_A_CUBIC + 3)) * x


def _dfar(x: Any) -> Any:
    return (3 * _A_CUBIC * x - 10 * _A_CUBIC) * x + 8 * _A_CUBIC


def _tap_weights(mode: str, t: Any) -> list:
    if mode == "bilinear":
        return [1 - t, t]
    if mode == "bicubic":
        return [_far(t + 1), _near(t), _near(1 - t), _far(2 - t)]
    return [t * 0 + 1]


def _tap_dweights(mode: str, t: Any) -> list:
    if mode == "bilinear":
        return [t * 0 - 1, t * 0 + 1]
    return [_dfar(t + 1), _dnear(t), -_dnear(1 - t), -_dfar(2 - t)]


def _reflect_affine(ix: np.ndarray, lo2: int, hi2: int) -> tuple:
    """``reflect(ix) = s * ix + c`` into [lo2/2, hi2/2] (s = +-1, c per position)."""
    if lo2 == hi2:
        return np.zeros_like(ix), np.zeros_like(ix)
    mn = lo2 / 2
    span = (hi2 - lo2) / 2
    u = ix - mn
    sg = np.where(u < 0, -1.0, 1.0)
    flips = np.floor(np.abs(u) / span)
    even = np.fmod(flips, 2) == 0
    s = np.where(even, sg, -sg)
    c = np.where(even, -sg * mn - flips * span + mn, span + sg * mn + flips * span + mn)
    return s, c


def _pad_affine(ix: np.ndarray, size: int, padding: str, align: bool,
                value: Any = None) -> tuple:
    s, c = np.ones_like(ix), np.zeros_like(ix)
    if padding == "reflection":
        s, c = _reflect_affine(ix, 0, 2 * (size - 1)) if align else \
            _reflect_affine(ix, -1, 2 * size - 1)
    if padding in ("border", "reflection"):
        r = s * ix + c if value is None else value
        low, high = r <= 0, r >= size - 1
        s = np.where(low | high, 0.0, s)
        c = np.where(low, 0.0, np.where(high, size - 1.0, c))
    return s, c


def _pad_value(x: np.ndarray, size: int, padding: str, align: bool) -> np.ndarray:
    s, c = _pad_affine(x, size, padding, align)
    return s * x + c


def _unnormalize(g: np.ndarray, size: int, align: bool, nsp: int) -> np.ndarray:
    """The unnormalized coordinate ``a * g + b`` rounded as torch's CPU kernels round it, in
    the grid's dtype: the sample taps and the border clipping follow from it, and a grid point
    that lands exactly on a pixel (an identity ``affine_grid``) must land on the same side as
    in torch, where bilinear's gradient changes (the 2-D kernel scales ``g + 1`` by a constant
    and subtracts 0.5 in one fused multiply-add, the 3-D kernel multiplies by the size and
    halves)."""
    t = g.dtype.type
    if nsp == 2:        # vectorized and compiled with FMA contraction (Note [linspace's fma])
        return (g + t(1)) * t((size - 1) / 2) if align else \
            _creation._fma(g + t(1), t(size / 2), np.full(g.shape, -0.5, g.dtype))
    return (g + t(1)) / t(2) * t(size - 1) if align else ((g + t(1)) * t(size) - t(1)) / t(2)


def _reflect_value(ix: np.ndarray, size: int, align: bool, nsp: int) -> np.ndarray:
    """``ix`` reflected into the input and clipped, in its dtype and rounded as torch's 2-D
    (vectorized: distance from the low edge modulo twice the span, folded) and 3-D (scalar:
    ``fmod`` by the span, flipped on odd counts) kernels compute it."""
    t = ix.dtype.type
    if nsp == 2:
        if align and size <= 1:
            return np.zeros_like(ix)
        low = t(0) if align else t(-0.5)
        twice = t(size - 1) * t(2) if align else t(size) * t(2)
        a = np.abs(ix - low)
        extra = a - np.trunc(a / twice) * twice
        r = np.minimum(extra, twice - extra) + low
    else:
        lo2, hi2 = (0, 2 * (size - 1)) if align else (-1, 2 * size - 1)
        if lo2 == hi2:
            return np.zeros_like(ix)
        mn = t(lo2) / t(2)
        span = t(hi2 - lo2) / t(2)
        a = np.abs(ix - mn)
        extra = np.fmod(a, span)
        flips = np.floor(a / span)
        r = np.where(np.fmod(flips, 2) == 0, extra + mn, span - extra + mn)
    return np.minimum(t(size - 1), np.maximum(r, t(0)))


class _Taps:
    """The constant part of one grid_sample call (Note [grid_sample as taps])."""

    def __init__(self, grid: np.ndarray, sp: tuple, mode: str, padding: str, align: bool):
        nsp = len(sp)
        N = grid.shape[0]
        g = grid.reshape(N, -1, nsp)
        if g.dtype not in (np.float32, np.float64):
            g = g.astype(np.float32)
        self.a, self.b, self.s, self.c, self.fl = [], [], [], [], []
        self.idx, self.ok = [], []
        for j in range(nsp):
            size = sp[nsp - 1 - j]
            a = (size - 1) / 2 if align else size / 2
            b = (size - 1) / 2
            ix_t = _unnormalize(g[..., j], size, align, nsp)
            ix = ix_t.astype(np.float64)
            if mode == "bicubic":
                s, c = np.ones_like(ix), np.zeros_like(ix)
                ixp = ix
            elif padding == "reflection":
                # the reflected coordinate as torch's kernels round it decides the taps and
                # the clipping; s and c carry the derivative
                ixp = _reflect_value(ix_t, size, align, nsp).astype(np.float64)
                s, c = _pad_affine(ix, size, padding, align, ixp)
            else:
                s, c = _pad_affine(ix, size, padding, align)
                ixp = s * ix + c
            if mode == "nearest":
                base = np.rint(ixp)
                offs = [0]
            else:
                base = np.floor(ixp)
                offs = [0, 1] if mode == "bilinear" else [-1, 0, 1, 2]
            idx, ok = [], []
            for o in offs:
                p = base + o
                if mode == "bicubic" and padding != "zeros":
                    p = np.floor(_pad_value(p, size, padding, align))
                good = np.isfinite(p) & (p >= 0) & (p <= size - 1)
                idx.append(np.where(good, p, 0).astype(np.int64))
                ok.append(good)
            self.a.append(a)
            self.b.append(b)
            self.s.append(s)
            self.c.append(c)
            self.fl.append(np.where(np.isfinite(base), base, 0.0))
            self.idx.append(idx)
            self.ok.append(ok)
        strides = [int(np.prod(sp[nsp - j:], dtype=np.int64)) for j in range(nsp)]
        self.combos = []
        for ks in itertools.product(*(range(len(i)) for i in self.idx)):
            flat = sum(self.idx[j][k] * strides[j] for j, k in enumerate(ks))
            ok = np.logical_and.reduce([self.ok[j][k] for j, k in enumerate(ks)])
            self.combos.append((ks, np.where(ok, flat, 0), ok))

    def frac(self, j: int, gj: Any) -> Any:
        """``ixp - floor`` along component ``j`` from the grid component ``gj`` (array or
        Tensor of shape (N, P))."""
        vals: tuple = (self.a[j], self.b[j], self.s[j], self.c[j] - self.fl[j])
        if isinstance(gj, Tensor):      # array constants as tensors: Tensor <op> ndarray is
            vals = tuple(_wrap(v) if isinstance(v, np.ndarray) else v  # NumPy's
                         for v in vals)
        a, b, s, c = vals
        return (gj * a + b) * s + c


def _gs_forward(x: np.ndarray, grid: np.ndarray, mode: str, padding: str,
                align: bool) -> np.ndarray:
    nsp = grid.shape[-1]
    N, C = x.shape[:2]
    sp = x.shape[2:]
    taps = _Taps(grid, sp, mode, padding, align)
    g = grid.reshape(N, -1, nsp).astype(np.float64)
    ws = [_tap_weights(mode, taps.frac(j, g[..., j])) for j in range(nsp)]
    xs = x.reshape(N, C, -1)
    out = np.zeros((N, C, g.shape[1]), x.dtype)
    for ks, flat, ok in taps.combos:
        w = np.where(ok, np.prod([ws[j][k] for j, k in enumerate(ks)], axis=0), 0.0)
        v = np.take_along_axis(xs, flat[:, None, :], axis=2)
        out += (w[:, None, :] * v).astype(x.dtype, copy=False)
    return out.reshape((N, C) + grid.shape[1:-1])


def _cat(ts: list, dim: int) -> Tensor:
    return ts[0] if len(ts) == 1 else cat(ts, dim)


def _gs_vjp(ctx, g):
    x, grid = ctx.saved
    mode, padding, align = ctx._args
    nsp = grid._data.shape[-1]
    N, C = x._data.shape[:2]
    sp = x._data.shape[2:]
    taps = _Taps(grid._data, sp, mode, padding, align)
    P = int(np.prod(grid._data.shape[1:-1], dtype=np.int64))
    gf = g.reshape(N, C, P)
    gr = grid.reshape(N, P, nsp)
    comps = [gr[:, :, j] for j in range(nsp)]
    fr = [taps.frac(j, comps[j]) for j in range(nsp)]
    ws = [_tap_weights(mode, f) for f in fr]
    dt = x._data.dtype
    gx = gg = None
    if ctx.needs_input_grad(0):
        srcs, idxs = [], []
        for ks, flat, ok in taps.combos:
            w = ws[0][ks[0]]
            for j in range(1, nsp):
                w = w * ws[j][ks[j]]
            srcs.append(gf * (w * _wrap(ok.astype(dt))).unsqueeze(1))
            idxs.append(flat)
        src = _cat(srcs, 2)
        idx = _wrap(np.concatenate(idxs, axis=1)[:, None, :])
        gx = nn_pool.scatter_add(src, idx, (int(np.prod(sp)),)).reshape(x._data.shape)
    if ctx.needs_input_grad(1):
        if mode == "nearest":
            gg = _wrap(np.zeros_like(grid._data))
        else:
            dws = [_tap_dweights(mode, f) for f in fr]
            xs = x.reshape(N, C, -1)
            parts = [None] * nsp
            for ks, flat, ok in taps.combos:
                v = nn_pool.gather(xs, _wrap(flat[:, None, :]), 1)
                gv = (gf * v).sum(1) * _wrap(ok.astype(dt))
                for j in range(nsp):
                    d = dws[j][ks[j]]
                    for i in range(nsp):
                        if i != j:
                            d = d * ws[i][ks[i]]
                    term = gv * d
                    parts[j] = term if parts[j] is None else parts[j] + term
            cols = [parts[j] * _wrap((taps.s[j] * taps.a[j]).astype(dt)) for j in range(nsp)]
            gg = _cat([c.unsqueeze(-1) for c in cols], -1).reshape(grid._data.shape)
    return gx, gg


GRID_SAMPLER2D = Op("grid_sampler_2d", "GridSampler2DBackward0",
                    lambda x, g, m, p, a: _gs_forward(x, g, m, p, a), _gs_vjp,
                    inputs=("input", "grid"), saves=("input", "grid"),
                    args=("interpolation_mode", "padding_mode", "align_corners"),
                    jvp=not_implemented("grid_sampler_2d"))
GRID_SAMPLER3D = Op("grid_sampler_3d", "GridSampler3DBackward0",
                    lambda x, g, m, p, a: _gs_forward(x, g, m, p, a), _gs_vjp,
                    inputs=("input", "grid"), saves=("input", "grid"),
                    args=("interpolation_mode", "padding_mode", "align_corners"),
                    jvp=not_implemented("grid_sampler_3d"))


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: Any = None) -> Tensor:
    """Sample ``input`` (N, C, H, W) or (N, C, D, H, W) at the normalized locations of
    ``grid`` (N, Ho, Wo, 2) / (N, Do, Ho, Wo, 3), ``(x, y[, z])`` in [-1, 1], with ``mode``
    bilinear/nearest/bicubic and ``padding_mode`` zeros/border/reflection.

    >>> import ndgrad, ndgrad.nn.functional as F
    >>> x = ndgrad.tensor([[[[0.0, 2.0]]]])
    >>> F.grid_sample(x, ndgrad.tensor([[[[0.0, 0.0]]]]), align_corners=True)
    tensor([[[[1.]]]])
    """
    if _autocast.active:  # Note [Autocast]
        input, grid = _autocast.fp32(input, grid)
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to "
                      "align_corners=False since 1.3.0. Please specify align_corners=True if "
                      "the old behavior is desired. See the documentation of grid_sample for "
                      "details.", stacklevel=3)
        align_corners = False
    if input._blevel or grid._blevel:
        r = _bcall(grid_sample, input, grid, mode, padding_mode, align_corners)
        if r is not NotImplemented:
            return r
    x, g = input._data, grid._data
    if x.dtype != g.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but "
                           f"input has {input.dtype} and grid has {grid.dtype}")
    if x.ndim not in (4, 5) or x.ndim != g.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(x.shape)} and grid "
                           f"with sizes {list(g.shape)}")
    if x.shape[0] != g.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(x.shape)} and grid with sizes "
                           f"{list(g.shape)}")
    nsp = x.ndim - 2
    if g.shape[-1] != nsp:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nsp} in last "
                           f"dimension, but got grid with sizes {list(g.shape)}")
    if any(v == 0 for v in x.shape[2:]):
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                           f"dimensions, but input has sizes {list(x.shape)} with dimension "
                           f"{2 + [v == 0 for v in x.shape[2:]].index(True)} being empty")
    if mode == "bicubic" and nsp == 3:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if x.dtype.kind not in "f" and x.dtype.name != "bfloat16":
        raise NotImplementedError(f"\"grid_sampler_{nsp}d_cpu\" not implemented for "
                                  f"'{_dtype._FROM_NP[x.dtype]._torch_name}'")
    ct = nn_pool._compute_dtype(x)
    op = GRID_SAMPLER2D if nsp == 2 else GRID_SAMPLER3D
    if ct != x.dtype:    # half precision: sample in float32
        r = grid_sample(input.to(_dtype._FROM_NP[ct]), grid.to(_dtype._FROM_NP[ct]), mode,
                        padding_mode, align_corners)
        return r.to(input.dtype)
    return apply(op, (input, grid), (x, g), (mode, padding_mode, bool(align_corners)))


# ---------------------------------------------------------------------------- batching
def _register() -> None:
    from ._batching import RULES, VJP_ONLY
    from .nn_pool import _trailing_rule
    for op in list(_UP.values()) + [UINT8_RESIZE]:
        RULES[op] = _trailing_rule
    RULES[AFFINE_GRID] = _affine_rule
    VJP_ONLY.update((GRID_SAMPLER2D, GRID_SAMPLER3D))


def _affine_rule(c, args):
    """theta batched: the batch dim joins theta's N (the grid is the same map per row)."""
    size, align = args
    t = c.ts[0]
    B, N = t._data.shape[0], size[0]
    flat = t.reshape((B * N,) + t._data.shape[2:])
    r = apply(AFFINE_GRID, (flat,), (flat._data,), ((B * N,) + tuple(size[1:]), align))
    return r.reshape((B, N) + tuple(r._data.shape[1:]))


_register()

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "affine_grid",
           "grid_sample"]

# Schemas of this family's public functions (Note [Declared signatures]), installed into
# ndgrad.nn.functional.
SIGNATURES = "\n".join([
    "interpolate(Tensor input, Any size=None, Any scale_factor=None, str mode=\"nearest\", "
    "Any align_corners=None, Any recompute_scale_factor=None, bool antialias=False)",
    "upsample(Tensor input, Any size=None, Any scale_factor=None, str mode=\"nearest\", "
    "Any align_corners=None)",
    "upsample_nearest(Tensor input, Any size=None, Any scale_factor=None)",
    "upsample_bilinear(Tensor input, Any size=None, Any scale_factor=None)",
    "affine_grid(Tensor theta, Any size, Any align_corners=None)",
    "grid_sample(Tensor input, Tensor grid, str mode=\"bilinear\", str padding_mode=\"zeros\", "
    "Any align_corners=None)",
])
