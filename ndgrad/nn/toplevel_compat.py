"""More ``nn.functional`` kernels under the names and signatures torch gives them at its top
level (``torch.kl_div(input, target, reduction=1)``, ``torch.convolution(...)``,
``torch.native_layer_norm(...)`` ...): the reduction is an int (0 none, 1 mean, 2 sum), modes
are ints, and the ``native_*``/``*_with_indices`` forms return torch's tuples. ``ndgrad.<name>``
loads them on first use (``ndgrad.__getattr__``), as ``toplevel.py``'s.

Example:
    >>> import ndgrad
    >>> x = _creation.tensor([[1.0, 2.0, 3.0]])
    >>> ndgrad.constant_pad_nd(x, [1, 1], 0.5).tolist()
    [[0.5, 1.0, 2.0, 3.0, 0.5]]
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence

import numpy as np

from .. import _creation, _dtype, ops
from .. import linalg as _linalg
from ..ops import nn_dropout as _drop
from .._torch_function import python_functions
from ..ops import nn_recurrent as _recurrent
from ..ops import nn_recurrent_layers as _layers
from ..tensor import Tensor
from . import functional as F

# Note [Top-level loss reductions]
# torch 2.13's top-level losses document ``reduction=1`` (mean) as the default, but called
# without it they return the unreduced losses (checked against the installed torch in
# tests/test_compat_nn_toplevel.py); ndgrad follows what torch does: an omitted reduction is 0.
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}
_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}
_INTERP = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def _reduction(reduction: Any) -> str:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


def _check_input(x: Any, fn: str, arg: str = "input", pos: int = 1) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


# ---- losses (integer reductions) ----
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Optional[Tensor] = None,
                                     pos_weight: Optional[Tensor] = None,
                                     reduction: int = 0) -> Tensor:
    """``F.binary_cross_entropy_with_logits`` with torch's top-level argument order."""
    _check_input(input, "binary_cross_entropy_with_logits")
    return F.binary_cross_entropy_with_logits(input, target, weight,
                                              reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 0) -> Tensor:
    _check_input(input1, "cosine_embedding_loss", "input1")
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction))


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: int = 0, zero_infinity: bool = False) -> Tensor:
    _check_input(log_probs, "ctc_loss", "log_probs")
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction(reduction), zero_infinity)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         reduction: int = 0) -> Tensor:
    _check_input(input, "hinge_embedding_loss")
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def kl_div(input: Tensor, target: Tensor, reduction: int = 0, *,
           log_target: bool = False) -> Tensor:
    """``torch.kl_div``: reduction 1 is the plain mean over elements (not ``batchmean``);
    omitted, none (Note [Top-level loss reductions])."""
    _check_input(input, "kl_div")
    r = _reduction(reduction)
    out = F.kl_div(input, target, reduction="none" if r == "mean" else r, log_target=log_target)
    return out.mean() if r == "mean" else out      # torch's top level does not warn


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 0) -> Tensor:
    _check_input(input1, "margin_ranking_loss", "input1")
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction(reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    """``torch.poisson_nll_loss``: every argument required, as torch's."""
    _check_input(input, "poisson_nll_loss")
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                        reduction: int = 0) -> Tensor:
    _check_input(anchor, "triplet_margin_loss", "anchor")
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction))


# ---- embedding_bag ----
def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor,
                  scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                  per_sample_weights: Optional[Tensor] = None,
                  include_last_offset: bool = False,
                  padding_idx: Optional[int] = None) -> tuple:
    """``torch.embedding_bag``: weight first, an int mode (0 sum, 1 mean, 2 max); returns
    ``(output, offset2bag, bag_size, max_indices)`` as torch's CPU kernel."""
    _check_input(weight, "embedding_bag", "weight")
    if mode not in _BAG_MODES:
        raise RuntimeError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got "
                           f"{mode}")
    pad = None if padding_idx is None or padding_idx < 0 and padding_idx == -1 else padding_idx
    out = F.embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                          mode=_BAG_MODES[mode], sparse=sparse,
                          per_sample_weights=per_sample_weights,
                          include_last_offset=include_last_offset, padding_idx=pad)
    idx = indices._data.reshape(-1)
    offs = offsets._data.astype(np.int64)
    nbags = out.shape[0]
    starts = offs[:nbags]
    ends = np.append(offs[1:], idx.size)[:nbags] if not include_last_offset else offs[1:]
    sizes = np.array([np.sum(idx[s:e] != pad) if pad is not None else e - s
                      for s, e in zip(starts, ends)], dtype=np.int64)
    bag_of = np.zeros(idx.size, dtype=np.int64)
    for b, (s, e) in enumerate(zip(starts, ends)):
        bag_of[s:e] = b
    long = _dtype.int64
    if mode == 0:
        # torch's CPU kernel fills offset2bag for sum only off its float32 fast path
        o2b = np.zeros(0, np.int64) if weight.dtype == _dtype.float32 else bag_of
        return (out, _creation.tensor(o2b), _creation.zeros(nbags, dtype=long),
                _creation.zeros(nbags, dtype=long))
    if mode == 1:
        return (out, _creation.tensor(bag_of), _creation.tensor(sizes),
                _creation.tensor(sizes.copy()))
    w = weight._data
    argmax = np.zeros((nbags, w.shape[1]), dtype=np.int64)
    for b, (s, e) in enumerate(zip(starts, ends)):
        rows = [r for r in idx[s:e] if pad is None or r != pad]
        if rows:
            vals = w[np.asarray(rows)]
            argmax[b] = np.asarray(rows)[np.argmax(vals, axis=0)]
    return out, _creation.tensor(bag_of), _creation.tensor(sizes), _creation.tensor(argmax)


# ---- padding, convolution, sampling ----
def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:
    """``F.pad(input, pad, value=value)``."""
    _check_input(input, "constant_pad_nd")
    return F.pad(input, list(pad), value=value)


def convolution(input: Tensor, weight: Tensor, bias: Optional[Tensor], stride: Sequence[int],
                padding: Sequence[int], dilation: Sequence[int], transposed: bool,
                output_padding: Sequence[int], groups: int) -> Tensor:
    """The convolution of ``weight.dim() - 2`` spatial dims, transposed or not, with every
    argument explicit (``torch.convolution``)."""
    _check_input(input, "convolution")
    n = weight.dim() - 2
    if n not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a 3-D, 4-D or 5-D weight, got "
                           f"{weight.dim()}-D")
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[n - 1]
        return fn(input, weight, bias, list(stride), list(padding), list(output_padding),
                  groups, list(dilation))
    conv = (F.conv1d, F.conv2d, F.conv3d)[n - 1]
    return conv(input, weight, bias, list(stride), list(padding), list(dilation), groups)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """``F.conv_tbc``: a 1-D convolution over ``(time, batch, channel)`` input."""
    _check_input(input, "conv_tbc")
    return F.conv_tbc(input, weight, bias, pad)


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """``F.grid_sample`` with torch's integer modes (0 bilinear/zeros, 1 nearest/border,
    2 bicubic/reflection)."""
    _check_input(input, "grid_sampler")
    if interpolation_mode not in _INTERP:
        raise RuntimeError(f"grid_sampler(): invalid interpolation_mode {interpolation_mode}")
    if padding_mode not in _PADDING:
        raise RuntimeError(f"grid_sampler(): invalid padding_mode {padding_mode}")
    return F.grid_sample(input, grid, _INTERP[interpolation_mode], _PADDING[padding_mode],
                         align_corners)


def affine_grid_generator(theta: Tensor, size: Sequence[int], align_corners: bool) -> Tensor:
    """``F.affine_grid``."""
    _check_input(theta, "affine_grid_generator", "theta")
    return F.affine_grid(theta, list(size), align_corners)


def adaptive_max_pool1d(input: Tensor, output_size: Any) -> tuple:
    """``(values, indices)``, as torch's top-level form."""
    _check_input(input, "adaptive_max_pool1d")
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = (),
                            padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False) -> tuple:
    """``(values, indices)``; an empty ``stride`` means the kernel size."""
    _check_input(input, "max_pool1d_with_indices")
    s = None if stride is None or (isinstance(stride, (list, tuple)) and not stride) else stride
    return F.max_pool1d(input, kernel_size, s, padding, dilation, ceil_mode,
                        return_indices=True)


# ---- normalization ----
def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Optional[Tensor] = None,
             eps: Optional[float] = None) -> Tensor:
    _check_input(input, "rms_norm")
    return F.rms_norm(input, list(normalized_shape), weight, eps)


def native_layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Optional[Tensor],
                      bias: Optional[Tensor], eps: float) -> tuple:
    """``(output, mean, rstd)``: the statistics keep the normalized dims as size 1."""
    _check_input(input, "native_layer_norm")
    out = F.layer_norm(input, list(normalized_shape), weight, bias, eps)
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    x = input.detach()
    mean = x.mean(dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dims, keepdim=True)
    return out, mean, (var + eps).rsqrt()


def native_batch_norm(input: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                      running_mean: Optional[Tensor], running_var: Optional[Tensor],
                      training: bool, momentum: float, eps: float) -> tuple:
    """``(output, save_mean, save_invstd)``: the batch statistics in training, empty tensors
    otherwise (running statistics updated as ``F.batch_norm`` does)."""
    _check_input(input, "native_batch_norm")
    out = F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        empty = _creation.empty(0, dtype=input.dtype)
        return out, empty, empty.clone()
    dims = tuple(d for d in range(input.dim()) if d != 1)
    x = input.detach()
    mean = x.mean(dims)
    var = ((x - mean.reshape([1, -1] + [1] * (input.dim() - 2))) ** 2).mean(dims)
    return out, mean, (var + eps).rsqrt()


# ---- dropout variants ----
def native_dropout(input: Tensor, p: float, train: Optional[bool]) -> tuple:
    """``(output, mask)``: the kept elements scaled by ``1 / (1 - p)`` and the boolean mask of
    kept elements (``train=None`` counts as training, as torch's)."""
    _check_input(input, "native_dropout")
    if train is False:
        return input.clone(), _creation.ones(input.shape, dtype=_dtype.bool)
    x = input._data
    if p == 1:
        keep = np.zeros(x.shape, bool)
    else:
        keep = _drop._keep_mask(x.shape, p, x)
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    mask = _creation.tensor(keep)
    return input * (mask.to(input.dtype) * scale), mask


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Zero whole feature maps ``input[n, c]`` with probability ``p``."""
    _check_input(input, "feature_dropout")
    return _drop._dropout_impl(input, p, train, False, True, False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    _check_input(input, "feature_dropout_")
    return _drop._dropout_impl(input, p, train, True, True, False)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    _check_input(input, "alpha_dropout_")
    return _drop._dropout_impl(input, p, train, True, False, True)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    _check_input(input, "feature_alpha_dropout_")
    return _drop._dropout_impl(input, p, train, True, True, True)


# ---- norms ----
def frobenius_norm(input: Tensor, dim: Sequence[int], keepdim: bool = False) -> Tensor:
    """The 2-norm over ``dim`` (one or two dims)."""
    _check_input(input, "frobenius_norm")
    d = [dim] if isinstance(dim, int) else list(dim)
    if len(d) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(d)} dimensions "
                           "instead.")
    return _linalg.vector_norm(input, 2, d, keepdim)


def nuclear_norm(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The sum of singular values over the last two dims (or ``dim``)."""
    _check_input(input, "nuclear_norm")
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    d = (-2, -1) if dim is None else tuple(dim)
    return _linalg.matrix_norm(input, "nuc", d, keepdim)


def norm_except_dim(v: Tensor, pow: int = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of each slice ``v.select(dim, i)``, shaped to broadcast against
    ``v`` (``dim=-1``: the norm of all of ``v``)."""
    _check_input(v, "norm_except_dim", "v")
    if dim == -1:
        return v.norm(pow)
    nd = v.dim()
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{nd}, {nd - 1}], "
                         f"but got {dim})")
    d = dim % nd
    others = [i for i in range(nd) if i != d]
    return _linalg.vector_norm(v, pow, others, True)


# ---- recurrent cells (same order as F's internals) ----
def _cell(name: str):
    impl = getattr(_recurrent, name)

    def cell(input: Tensor, hx: Any, w_ih: Tensor, w_hh: Tensor,
             b_ih: Optional[Tensor] = None, b_hh: Optional[Tensor] = None) -> Any:
        _check_input(input, name)
        return impl(input, hx, w_ih, w_hh, b_ih, b_hh)
    cell.__name__ = cell.__qualname__ = name
    cell.__doc__ = f"One step of a {name[:-5].upper()} cell, as ``torch.{name}``."
    return cell


lstm_cell = _cell("lstm_cell")
gru_cell = _cell("gru_cell")
rnn_tanh_cell = _cell("rnn_tanh_cell")
rnn_relu_cell = _cell("rnn_relu_cell")

# the whole networks (torch.lstm ...), which nn.LSTM/GRU/RNN call (Note [Recurrent networks as
# functions] in ops/nn_recurrent_layers.py): public, so subclasses and modes see them
lstm, gru, rnn_tanh, rnn_relu = _layers.lstm, _layers.gru, _layers.rnn_tanh, _layers.rnn_relu
python_functions(globals(), ("lstm", "gru", "rnn_tanh", "rnn_relu"))


# ---- segment_reduce ----
_EMPTY = {"sum": 0.0, "mean": math.nan, "max": -math.inf, "min": math.inf, "prod": 1.0}
_SEGMENT_NAMES = {"sum": "sum", "mean": "mean", "prod": "prod", "max": "max", "amax": "max",
                  "min": "min", "amin": "min"}


def segment_reduce(data: Tensor, reduce: str, *, lengths: Optional[Tensor] = None,
                   indices: Optional[Tensor] = None, offsets: Optional[Tensor] = None,
                   axis: int = 0, unsafe: bool = False, initial: Any = None) -> Tensor:
    """Reduce consecutive segments of ``data`` along ``axis`` (``lengths`` or ``offsets`` of
    1-D segments) with ``sum``/``mean``/``max``/``min``/``prod``; an empty segment is
    ``initial`` or the reduction's identity (NaN for ``mean``).

    Example:
        >>> import ndgrad
        >>> ndgrad.segment_reduce(_creation.tensor([1.0, 2.0, 3.0]), "sum",
        ...                       lengths=_creation.tensor([2, 1])).tolist()
        [3.0, 3.0]
    """
    _check_input(data, "segment_reduce", "data")
    if reduce not in _SEGMENT_NAMES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    reduce = _SEGMENT_NAMES[reduce]
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined")
    ax = axis % data.dim() if data.dim() else 0
    if data._data.dtype.kind not in "f":
        raise NotImplementedError(f'"_segment_reduce_cpu" not implemented for '
                                  f"'{_dtype._FROM_NP[data._data.dtype]._torch_name}'")
    if lengths is not None:
        lens = lengths._data.astype(np.int64)
        if lens.ndim != 1:
            raise RuntimeError("segment_reduce(): Currently only 1D lengths are supported.")
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    else:
        offs = offsets._data.astype(np.int64)  # type: ignore[union-attr]
        if offs.ndim != 1:
            raise RuntimeError("segment_reduce(): Currently only 1D offsets are supported.")
        starts, lens = offs[:-1], np.diff(offs)
    if ax != 0:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of "
                           f"lengths but got {ax}.")
    if not unsafe:
        if (lens < 0).any():
            raise RuntimeError("lengths contains negative value!")
        if int(lens.sum()) != data.shape[ax]:
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to "
                               "sum to data.size(lengths.dim()-1) when !unsafe.")
    pieces = []
    for s, n in zip(starts.tolist(), lens.tolist()):
        seg = data.narrow(ax, s, n)
        if n == 0:
            shape = list(data.shape)
            shape[ax] = 1
            fill = _EMPTY[reduce] if initial is None else initial
            piece = _creation.full(shape, fill, dtype=data.dtype).squeeze(ax)
        elif reduce == "sum":
            piece = seg.sum(ax)
        elif reduce == "mean":
            piece = seg.mean(ax)
        elif reduce == "prod":
            piece = seg.prod(ax)
        else:
            piece = seg.amax(ax) if reduce == "max" else seg.amin(ax)
        if n and initial is not None:
            init = _creation.full_like(piece, initial)
            piece = (piece + init if reduce == "sum" else piece * init if reduce == "prod"
                     else ops.maximum(piece, init) if reduce == "max"
                     else ops.minimum(piece, init) if reduce == "min"
                     else (seg.sum(ax) + init) / n)
        pieces.append(piece)
    if not pieces:
        shape = list(data.shape)
        shape[ax] = 0
        return _creation.empty(shape, dtype=data.dtype)
    return ops.stack(pieces, ax)


NAMES = frozenset((
    "binary_cross_entropy_with_logits", "cosine_embedding_loss", "ctc_loss",
    "hinge_embedding_loss", "kl_div", "margin_ranking_loss", "poisson_nll_loss",
    "triplet_margin_loss", "embedding_bag", "constant_pad_nd", "convolution", "conv_tbc",
    "grid_sampler", "affine_grid_generator", "adaptive_max_pool1d", "max_pool1d_with_indices",
    "rms_norm", "native_layer_norm", "native_batch_norm", "native_dropout", "feature_dropout",
    "feature_dropout_", "alpha_dropout_", "feature_alpha_dropout_", "frobenius_norm",
    "nuclear_norm", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
    "segment_reduce", "norm_except_dim", "lstm", "gru", "rnn_tanh", "rnn_relu"))


# every name takes part in the __torch_function__ protocol, as torch's builtins do
python_functions(globals(), sorted(NAMES - {"lstm", "gru", "rnn_tanh", "rnn_relu"}))


def get(name: str) -> Any:
    return globals()[name]


__all__: List[str] = sorted(NAMES)
