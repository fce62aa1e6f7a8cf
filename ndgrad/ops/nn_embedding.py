"""nn op family: embedding, embedding_bag, one_hot.

``embedding`` is one op (rows of ``weight`` gathered by an index tensor); its backward is a
second op that scatter-adds the gradient rows into a zero matrix (padding row left out, rows
divided by their index's frequency for ``scale_grad_by_freq``), whose own VJP gathers again,
so higher orders work. With ``sparse=True`` a first-order backward gives the weight a sparse COO
gradient (Note [Sparse COO tensors] in ``ndgrad/_sparse.py``); under ``create_graph`` it is
dense. ``embedding_bag`` is one op reducing bags of rows (sum, mean, max); its
backward is written with the embedding backward op and ndgrad indexing.

Example:
    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> w = ndgrad.tensor([[0.0, 1.0], [2.0, 3.0]], requires_grad=True)
    >>> y = F.embedding(ndgrad.tensor([1, 1, 0]), w)
    >>> y.sum().backward()
    >>> w.grad
    tensor([[1., 1.],
            [2., 2.]])
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

import numpy as np

from .._sparse import make_sparse
from ..autograd import grad_mode
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor, _wrap
from ._dispatch import Op, apply
from ._jvp import FW_STATE, linear

_INDEX_KINDS = (np.dtype(np.int64), np.dtype(np.int32))


def _per_row(c, args):
    from .products import per_row
    return per_row(c, args)


# ---------------------------------------------------------------------------- embedding
def _emb_fwd(w, indices, padding_idx, scale_grad_by_freq, sparse):
    idx = indices._data
    return w[idx]


def _emb_vjp(ctx, g):
    indices, padding_idx, scale, sparse = ctx._args
    shape = ctx.input_shape(0)
    if sparse and not grad_mode._state.enabled and not g._blevel:
        return _sparse_grad(g._data, indices._data, tuple(shape), padding_idx, scale)
    return apply(EMBEDDING_BACKWARD, (g,), (g._data,), (indices, shape[0], padding_idx, scale))


def _sparse_grad(g: np.ndarray, indices: np.ndarray, shape: tuple, padding_idx: int,
                 scale: bool) -> Any:
    """The weight's gradient as a sparse COO tensor (``sparse=True``): one uncoalesced entry
    per looked-up index (padding left out), as torch's sparse embedding backward builds it
    (which refuses ``scale_grad_by_freq``)."""
    if scale:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse "
                           "gradients")
    idx = indices.reshape(-1)
    rows = g.reshape(idx.size, shape[1])
    if padding_idx >= 0:
        keep = idx != padding_idx
        idx, rows = idx[keep], rows[keep]
    return make_sparse(idx[None].astype(np.int64), np.ascontiguousarray(rows), shape)


def _emb_bwd_fwd(g, indices, num_weights, padding_idx, scale):
    idx = indices._data.reshape(-1)
    D = g.shape[-1] if g.ndim else 1
    rows = g.reshape(-1, D) if idx.size else g.reshape(0, D)
    out = np.zeros((num_weights, D), g.dtype)
    if scale:
        counts = np.bincount(idx, minlength=num_weights)
        rows = rows / counts[idx][:, None].astype(g.dtype)
    if padding_idx >= 0:
        keep = idx != padding_idx
        idx, rows = idx[keep], rows[keep]
    np.add.at(out, idx, rows)
    return out


def _emb_bwd_coef(indices: Tensor, num_weights: int, padding_idx: int, scale: bool,
                  dtype: Any) -> Optional[np.ndarray]:
    """Per looked-up position, the factor its gradient row gets (None: all ones)."""
    idx = indices._data
    coef = None
    if scale:
        counts = np.bincount(idx.reshape(-1), minlength=num_weights)
        coef = 1.0 / counts[idx]
    if padding_idx >= 0:
        m = (idx != padding_idx).astype(np.float64)
        coef = m if coef is None else coef * m
    return None if coef is None else coef.astype(dtype)[..., None]


def _emb_bwd_vjp(ctx, gg):
    indices, n, padding_idx, scale = ctx._args
    r = apply(EMBEDDING, (gg,), (gg._data,), (indices, -1, False, False))
    coef = _emb_bwd_coef(indices, n, padding_idx, scale, gg._data.dtype)
    return r if coef is None else r * _wrap(coef)


EMBEDDING = Op("embedding", "EmbeddingBackward0", _emb_fwd, _emb_vjp, inputs=("weight",),
               args=("indices", "padding_idx", "scale_grad_by_freq", "sparse"),
               saves=("indices",), jvp=linear)
EMBEDDING_BACKWARD = Op("embedding_backward", "EmbeddingBackwardBackward0", _emb_bwd_fwd,
                        _emb_bwd_vjp, inputs=("grad",),
                        args=("indices", "num_weights", "padding_idx", "scale_grad_by_freq"),
                        saves=("indices",), jvp=linear)


def _check_indices(input: Tensor, fn: str, arg: str = "indices", pos: int = 1) -> np.ndarray:
    idx = input._data
    if idx.dtype not in _INDEX_KINDS:
        from .. import _dtype
        name = _dtype._FROM_NP[idx.dtype]._torch_name if idx.dtype in _dtype._FROM_NP else \
            str(idx.dtype)
        tname = {"float": "Float", "double": "Double", "half": "Half", "bool": "Bool",
                 "bfloat16": "BFloat16", "uint8": "Byte", "int8": "Char",
                 "int16": "Short"}.get(name, name.capitalize())
        raise RuntimeError(f"Expected tensor for argument #{pos} '{arg}' to have one of the "
                           f"following scalar types: Long, Int; but got ndgrad.{tname}Tensor "
                           f"instead (while checking arguments for {fn})")
    return idx


def _padding(padding_idx: Optional[int], n: int) -> int:
    if padding_idx is None:
        return -1
    p = int(padding_idx)
    if p > 0:
        if p >= n:
            raise AssertionError("Padding_idx must be within num_embeddings")
    elif p < 0:
        if p < -n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        p += n
    return p


def _renorm(weight: Tensor, idx: np.ndarray, max_norm: float, norm_type: float) -> None:
    """Rescale in place, under no_grad, the rows of ``weight`` looked up by ``idx`` whose
    ``norm_type``-norm exceeds ``max_norm`` (PyTorch's embedding_renorm_)."""
    rows = np.unique(idx.reshape(-1))
    if rows.size == 0:
        return
    n = weight.shape[0]
    bad = rows[(rows < -n) | (rows >= n)]      # a row in [-n, 0) wraps, as torch's select
    if bad.size:
        raise IndexError(f"select(): index {int(bad[0])} out of range for tensor of size "
                         f"[{n}, {weight.shape[1]}] at dimension 0")
    w = weight._data[rows]
    p = float(norm_type)
    if p == np.inf:
        norms = np.abs(w).max(1)
    elif p == 0:
        norms = (w != 0).sum(1).astype(w.dtype)
    else:
        norms = (np.abs(w) ** p).sum(1) ** (1.0 / p)
    big = norms > max_norm
    if not big.any():
        return
    scale = (max_norm / (norms[big] + 1e-7)).astype(w.dtype)
    sel = _wrap(rows[big])
    with no_grad(), _fw_suspended():
        # PyTorch's embedding_renorm_ rescales the data only: a forward AD tangent of
        # ``weight`` is left as it is (an in-place write under forward AD would zero its rows)
        weight[sel] = _wrap(w[big] * scale[:, None])


@contextlib.contextmanager
def _fw_suspended() -> Iterator[None]:
    """Forward AD off in this thread for an in-place write (the tangents stay as they are);
    other threads' forward AD is untouched."""
    was = FW_STATE.enabled
    FW_STATE.enabled = False
    try:
        yield
    finally:
        FW_STATE.enabled = was


def embedding(input: Tensor, weight: Tensor, padding_idx: Optional[int] = None,
              max_norm: Optional[float] = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` looked up by the integer tensor ``input`` (shape ``input.shape +
    (D,)``). ``padding_idx``'s row gets no gradient; ``max_norm`` renormalizes the looked-up
    rows of ``weight`` in place first; ``sparse=True`` gives ``weight`` a sparse gradient.

    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> F.embedding(ndgrad.tensor([1]), ndgrad.tensor([[0.0], [5.0]]))
    tensor([[5.]])
    """
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    idx = _check_indices(input, "embedding")
    n = weight.shape[0]
    pad = _padding(padding_idx, n)
    if max_norm is not None:        # before the range check, as torch's
        _renorm(weight, idx, float(max_norm), norm_type)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    if weight._blevel:
        from ._batching import call
        r = call(_embedding_apply, weight, input, pad, bool(scale_grad_by_freq), bool(sparse))
        if r is not NotImplemented:
            return r
    return _embedding_apply(weight, input, pad, bool(scale_grad_by_freq), bool(sparse))


def _embedding_apply(weight: Tensor, input: Tensor, pad: int, scale: bool,
                     sparse: bool) -> Tensor:
    return apply(EMBEDDING, (weight,), (weight._data,), (input, pad, scale, sparse))


# ---------------------------------------------------------------------------- embedding_bag
def _bag_no_jvp(ctx: Any, *tangents: Any) -> Any:
    raise NotImplementedError(
        "Trying to use forward AD with _embedding_bag that does not support it because it has "
        "not been implemented yet.\nPlease file an issue to PyTorch at "
        "https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so that we "
        "can prioritize its implementation or submit a PR adding the implementation to "
        "derivatives.yaml")


_MODES = {"sum": 0, "mean": 1, "max": 2}


def _bag_fwd(w, psw, indices, offsets, mode, padding_idx, bag_of, nbags, scale=False,
             sparse=False):
    if w.dtype.itemsize < 4 and w.dtype.kind in "fV" or str(w.dtype) == "bfloat16":
        # half precision: accumulate in float32, as PyTorch
        r = _bag_fwd(w.astype(np.float32), None if psw is None else psw.astype(np.float32),
                     indices, offsets, mode, padding_idx, bag_of, nbags)
        return r.astype(w.dtype)
    idx = indices._data
    bag = bag_of._data
    D = w.shape[1]
    out = np.zeros((nbags, D), w.dtype)
    keep = idx != padding_idx if padding_idx >= 0 else None
    if keep is not None:
        idx_k, bag_k = idx[keep], bag[keep]
    else:
        idx_k, bag_k = idx, bag
    rows = w[idx_k]
    if mode == 2:
        out.fill(-np.inf)
        np.maximum.at(out, bag_k, rows)
        out[np.isneginf(out)] = 0
        return out
    if psw is not None:
        rows = rows * (psw[keep] if keep is not None else psw)[:, None]
    np.add.at(out, bag_k, rows)
    if mode == 1:
        counts = np.bincount(bag_k, minlength=nbags)
        out /= np.maximum(counts, 1)[:, None].astype(w.dtype)
    return out


def _max_rows(w: np.ndarray, idx: np.ndarray, bag: np.ndarray, nbags: int,
              out: np.ndarray) -> np.ndarray:
    """For mode max: per (bag, column), the weight row that gave the maximum (-1: empty)."""
    L = idx.shape[0]
    hits = w[idx] == out[bag]                               # (L, D)
    pos = np.where(hits, np.arange(L)[:, None], L)
    first = np.full(out.shape, L, np.int64)
    np.minimum.at(first, bag, pos)                          # the first maximum wins
    ext = np.append(idx, -1)
    return ext[first]


def _bag_vjp(ctx, g):
    indices, offsets, mode, padding_idx, bag_of, nbags, scale, sparse = ctx._args
    w, psw = ctx.saved[0], ctx.saved[1]
    idx = indices._data
    bag = bag_of._data
    n, D = ctx.input_shape(0)
    gw = gpsw = None
    keep = (idx != padding_idx) if padding_idx >= 0 else np.ones(idx.shape, bool)
    if mode == 2:
        if ctx.needs_input_grad(0):
            out = _bag_fwd(w._data, None, indices, offsets, mode, padding_idx, bag_of, nbags)
            arg = _max_rows(w._data, idx[keep], bag[keep], nbags, out)
            flat = (arg * D + np.arange(D)).reshape(-1)
            valid = arg.reshape(-1) >= 0
            gflat = g.reshape(-1, 1)
            if not valid.all():
                gflat = gflat * _wrap(valid.astype(g._data.dtype)[:, None])
                flat = np.where(valid, flat, 0)
            gw = apply(EMBEDDING_BACKWARD, (gflat,), (gflat._data,),
                       (_wrap(flat), n * D, -1, False)).reshape(n, D)
        return gw, None
    if sparse and scale and ctx.needs_input_grad(0):
        _sparse_grad(g._data, idx, (n, D), padding_idx, scale)     # torch's refusal
    gb = g[_wrap(bag)]                                   # (L, D): each position's bag gradient
    coef = keep.astype(g._data.dtype)
    if mode == 1:
        counts = np.bincount(bag[keep], minlength=nbags)
        coef = coef / np.maximum(counts, 1)[bag]
    if scale:
        # each row by its own index's count (torch 2.13's CPU kernel divides some rows by
        # another index's count: docs/differences.md)
        coef = coef / np.bincount(idx, minlength=n)[idx]
    if ctx.needs_input_grad(0):
        rows = gb * _wrap(coef.astype(g._data.dtype)[:, None])
        if psw is not None:
            rows = rows * psw.unsqueeze(1)
        if sparse and not grad_mode._state.enabled and not g._blevel:
            # one uncoalesced entry per looked-up index, as torch's sparse bag backward
            gw = make_sparse(idx[keep][None].astype(np.int64),
                             np.ascontiguousarray(rows._data[keep]), (n, D))
        else:
            gw = apply(EMBEDDING_BACKWARD, (rows,), (rows._data,), (indices, n, -1, False))
    if psw is not None and ctx.needs_input_grad(1):
        gpsw = (gb * w[indices]).sum(1) * _wrap(keep.astype(g._data.dtype))
    return gw, gpsw


EMBEDDING_BAG = Op("embedding_bag", "EmbeddingBagBackward0", _bag_fwd, _bag_vjp,
                   inputs=("weight", "per_sample_weights"),
                   args=("indices", "offsets", "mode", "padding_idx", "bag_of", "nbags",
                         "scale_grad_by_freq", "sparse"),
                   saves=("weight", "per_sample_weights", "indices", "offsets"),
                   save_if=(None, lambda ts, e: ts[1] is not _NO_PSW, None, None),
                   jvp=_bag_no_jvp)     # as PyTorch
_NO_PSW: Tensor = _wrap(np.zeros(0))


def embedding_bag(input: Tensor, weight: Tensor, offsets: Optional[Tensor] = None,
                  max_norm: Optional[float] = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Optional[Tensor] = None,
                  include_last_offset: bool = False,
                  padding_idx: Optional[int] = None) -> Tensor:
    """Sums, means or maxima of bags of embedding rows without building the intermediate
    rows: a 2-D ``input`` is one bag per row; a 1-D ``input`` is cut into bags at ``offsets``.
    ``per_sample_weights`` scale each row (mode ``"sum"``); ``padding_idx`` rows are left out.

    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> w = ndgrad.tensor([[1.0], [2.0], [4.0]])
    >>> F.embedding_bag(ndgrad.tensor([0, 1, 2]), w, ndgrad.tensor([0, 1]), mode="sum")
    tensor([[1.],
            [6.]])
    """
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) "
                         f"is not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    idx = _check_indices(input, "embedding_bag")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets"
                             f" of type {type(offsets)}")
        B, L = idx.shape
        off = np.arange(0, B * L, L, dtype=np.int64)
        idx = idx.reshape(-1)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        offsets_t = _wrap(off)
        include_last_offset = False
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        off = _check_indices(offsets, "embedding_bag", "offsets", 3).astype(np.int64)
        offsets_t = offsets
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:        # before the kernel's checks, as torch's
        _renorm(weight, idx, float(max_norm), norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    n = weight.shape[0]
    pad = _padding(padding_idx, n)
    L = idx.shape[0]
    if off.size and off[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {int(off[0])}")
    if off.size and off[-1] > L:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {L} but got "
                           f"offsets[-1] of {int(off[-1])}")
    if (np.diff(off) < 0).any():
        raise RuntimeError("embedding_bag: offsets have to be non-decreasing, but got "
                           f"{off.tolist()}")
    bad = np.flatnonzero((idx < 0) | (idx >= n))
    if bad.size:      # torch's two kernels word it differently
        first = int(idx[bad[0]])
        if mode != "max" and weight._data.dtype != np.float64:
            raise RuntimeError(f"Index {int(bad[0])} of input takes value {first} which is not "
                               f"in the valid range [0, {n})")
        raise RuntimeError("embedding_bag: Expected idx >= 0 && idx < num_embeddings but found "
                           f"idx to be {first}")
    nbags = off.shape[0] - 1 if include_last_offset else off.shape[0]
    nbags = max(nbags, 0)
    starts = off[:nbags]
    bag_of = np.searchsorted(starts, np.arange(L), side="right") - 1
    # (with include_last_offset, the last bag runs to the end of the input, as PyTorch's)
    idx_t = input if input._data.dtype == np.int64 else _wrap(idx.astype(np.int64))
    if nbags == 0 and L:
        raise RuntimeError("embedding_bag: offsets define no bag for a non-empty input")
    psw = per_sample_weights if per_sample_weights is not None else _NO_PSW
    return apply(EMBEDDING_BAG, (weight, psw),
                 (weight._data, per_sample_weights._data if per_sample_weights is not None
                  else None),
                 (idx_t, offsets_t, _MODES[mode], pad, _wrap(bag_of), nbags,
                  bool(scale_grad_by_freq), bool(sparse)))


# ---------------------------------------------------------------------------- one_hot
def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Integer class indices to one-hot vectors (int64, a new last dim of ``num_classes``;
    -1 infers it as the largest class plus one).

    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> F.one_hot(ndgrad.tensor([0, 2]))
    tensor([[1, 0, 0],
            [0, 0, 1]])
    """
    x = tensor._data
    if x.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    num_classes = int(num_classes)
    from ._batching import marked      # lazy: the batching module imports the op modules
    if marked((tensor,)):      # under vmap, as PyTorch: a comparison, without range checks
        if num_classes < 0:
            raise RuntimeError("When vmap-ing torch.nn.functional.one_hot, please provide an "
                               "explicit positive num_classes argument.")
        classes = _wrap(np.arange(num_classes, dtype=np.int64))
        return (tensor.unsqueeze(-1) == classes).long()
    if x.size == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return _wrap(np.zeros(x.shape + (num_classes,), np.int64))
    if x.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(x.max()) + 1
    elif x.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = np.zeros(x.shape + (num_classes,), np.int64)
    np.put_along_axis(out, x[..., None], 1, axis=-1)
    return _wrap(out)


def _register() -> None:
    from ._batching import RULES
    for op in (EMBEDDING, EMBEDDING_BACKWARD, EMBEDDING_BAG):
        RULES[op] = _per_row


_register()

__all__ = ["embedding", "embedding_bag", "one_hot"]

# Schemas of this family's public functions (Note [Declared signatures]), installed into
# ndgrad.nn.functional.
SIGNATURES = """
embedding(Tensor input, Tensor weight, int? padding_idx=None, float? max_norm=None, float norm_type=2.0, bool scale_grad_by_freq=False, bool sparse=False)
embedding_bag(Tensor input, Tensor weight, Tensor? offsets=None, float? max_norm=None, float norm_type=2, bool scale_grad_by_freq=False, str mode="mean", bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, int? padding_idx=None)
one_hot(Tensor tensor, int num_classes=-1)
"""  # noqa: E501
