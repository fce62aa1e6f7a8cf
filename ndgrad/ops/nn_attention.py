"""nn op family: scaled_dot_product_attention, multi_head_attention_forward.

Note [Fused attention]
``softmax(q @ k^T * scale + mask) @ v`` (with an optional dropout of the probabilities) is ONE
op: its NumPy forward keeps the probabilities for the backward (an argument ``saved`` that the
op fills, released with the node). The VJP has two paths, as the recurrent cells'
(Note [Fused recurrent cells] in ops/nn_recurrent.py): in NumPy from the saved probabilities for a
plain backward, and with ndgrad ops (the probabilities recomputed from the saved inputs) under
``create_graph=True`` or batched cotangents, so that second order and vmap work. The JVP is
written with ndgrad ops; the batching rule runs the op per row. Masks arrive as one additive
float tensor (boolean masks, ``is_causal`` and key padding turned into ``0``/``-inf``); a float
mask that requires grad gets the score gradient. Dropout multiplies the probabilities by a kept
mask scaled by ``1 / (1 - p)``, drawn from ndgrad's generator.

``scaled_dot_product_attention`` uses a "safe" softmax as PyTorch's: a row whose scores are all
``-inf`` gives zeros. ``multi_head_attention_forward`` with ``need_weights=True`` returns the
(dropped-out) probabilities as a second output of the same op and uses the plain softmax there,
as PyTorch does.

Example:
    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> q = ndgrad.ones(2, 3, 4, requires_grad=True)
    >>> F.scaled_dot_product_attention(q, q, q).shape
    ndgrad.Size([2, 3, 4])
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .. import _dtype
from ..backends import cuda as _sdp_flags
from .._generator import bernoulli_array, draw
from ..autograd.grad_mode import _state
from ..tensor import Tensor, _wrap
from . import _dispatch
from ._dispatch import Op, apply
from . import _autocast
from .pointwise import _C_TYPE_NAMES

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

# Schemas of this family's public functions (Note [Declared signatures]), installed into
# ndgrad.nn.functional.
SIGNATURES = """
scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, float? scale=None, bool enable_gqa=False)
multi_head_attention_forward(Tensor query, Tensor key, Tensor value, int embed_dim_to_check, int num_heads, Tensor? in_proj_weight, Tensor? in_proj_bias, Tensor? bias_k, Tensor? bias_v, bool add_zero_attn, float dropout_p, Tensor out_proj_weight, Tensor? out_proj_bias, bool training=True, Tensor? key_padding_mask=None, bool need_weights=True, Tensor? attn_mask=None, bool use_separate_proj_weight=False, Tensor? q_proj_weight=None, Tensor? k_proj_weight=None, Tensor? v_proj_weight=None, Tensor? static_k=None, Tensor? static_v=None, bool average_attn_weights=True, bool is_causal=False)
"""  # noqa: E501


def _mT(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


# Note [Low-precision attention weights]
# multi_head_attention_forward with need_weights=True runs torch's explicit path, each step a
# float16/bfloat16 op rounded once: ``q * scale``, the scores ``baddbmm(mask, q, k^T)``, their
# softmax, and its product with ``v``.
#
# Note [Low-precision flash attention]
# torch's CPU flash kernel (scaled_dot_product_attention of float16/bfloat16 without dropout)
# computes the scores, their max and exp(scores - max) in float32, rounds those exponentials
# to the input's dtype for the product with ``v`` (accumulated in float32), then divides by the
# float32 sum of the unrounded exponentials and rounds once. With keys in one block of its
# (fewer than 512 keys) that is bit-identical; longer sequences are rescaled per block there.
_LOWP = _dtype.HALF_NP


def _work(a: np.ndarray) -> np.ndarray:
    """Half-precision arrays are computed in float32 (NumPy's matmul has no half kernels)."""
    return a.astype(np.float32) if a.dtype.itemsize < 4 else a


def _softmax_np(s: np.ndarray, safe: bool) -> np.ndarray:
    m = np.max(s, axis=-1, keepdims=True)
    if safe:
        m = np.where(np.isneginf(m), 0, m)
    e = np.exp(s - m)
    z = np.sum(e, axis=-1, keepdims=True)
    if safe:
        z = np.where(z == 0, 1, z)
    return e / z


# ---------------------------------------------------------------------------- the op
class _AttnLayout:
    __slots__ = ("mask", "drop", "weights", "names")

    def __init__(self, mask: bool, drop: bool, weights: bool) -> None:
        self.mask, self.drop, self.weights = mask, drop, weights
        self.names = ("query", "key", "value") + (("attn_mask",) if mask else ()) + \
            (("dropout_mask",) if drop else ())


def _attn_fwd(lay: _AttnLayout):
    def fwd(*arrs):
        scale, safe, box = arrs[-3:]
        q, k, v = arrs[0], arrs[1], arrs[2]
        dt = q.dtype
        q, k, v = _work(q), _work(k), _work(v)
        rounded = dt in _LOWP and lay.weights    # Note [Low-precision attention weights]
        if rounded:
            s = np.matmul((q * scale).astype(dt).astype(np.float32), _mT(k))
        else:
            s = np.matmul(q, _mT(k)) * scale
        i = 3
        if lay.mask:
            s = s + arrs[i].astype(s.dtype, copy=False)
            i += 1
        if rounded:
            s = s.astype(dt).astype(np.float32)
        p = _softmax_np(s, safe)
        if rounded:
            p = p.astype(dt).astype(np.float32)
        pd = p * arrs[i].astype(p.dtype, copy=False) if lay.drop else p
        if dt in _LOWP and not lay.drop and not lay.weights:
            # Note [Low-precision attention weights]
# multi_head_attention_forward with need_weights=True runs torch's explicit path, each step a
# float16/bfloat16 op rounded once: ``q * scale``, the scores ``baddbmm(mask, q, k^T)``, their
# softmax, and its product with ``v``.
#
# Note [Low-precision flash attention]
            m = np.max(s, axis=-1, keepdims=True)
            m = np.where(np.isneginf(m), 0, m)
            e = np.exp(s - m)
            z = np.sum(e, axis=-1, keepdims=True)
            out = np.matmul(e.astype(dt).astype(np.float32), v) / np.where(z == 0, 1, z)
        else:
            out = np.matmul(pd, v)
        box.append(p)
        if lay.weights:
            return out.astype(dt, copy=False), pd.astype(dt, copy=False)
        return out.astype(dt, copy=False)
    return fwd


def _probs_t(q: Tensor, k: Tensor, mask: Optional[Tensor], scale: float, safe: bool) -> Tensor:
    """The attention probabilities with ndgrad ops (differentiable in q, k and the mask)."""
    s = q.matmul(k.transpose(-2, -1)) * scale
    if mask is not None:
        s = s + mask
    if not safe:
        return s.softmax(-1)
    dead = (s == -math.inf).all(-1, keepdim=True)
    return s.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)


def _plain(grads: tuple) -> bool:
    # not while tracing: the tracer records a backward's ops (nn_recurrent._plain)
    if _state.enabled or _dispatch._TRACING:
        return False
    for g in grads:
        if g is not None and (g._blevel or g._bproxy is not None):
            return False
    return True


def _attn_vjp(lay: _AttnLayout):
    def vjp(ctx, go, gw=None):
        saved = ctx.saved
        q, k, v = saved[0], saved[1], saved[2]
        i = 3
        mask = drop = None
        if lay.mask:
            mask = saved[i]
            i += 1
        if lay.drop:
            drop = saved[i]
            i += 1
        scale, safe, box = saved[i], saved[i + 1], saved[i + 2]
        need = ctx.needs_input_grad
        n = len(lay.names)
        out = [None] * n
        if _plain((go, gw)):
            p = box[0]
            qa, ka, va = _work(q._data), _work(k._data), _work(v._data)
            dt = q._data.dtype
            da = drop._data.astype(p.dtype, copy=False) if drop is not None else None
            pd = p * da if da is not None else p
            dpd = None
            if go is not None:
                ga = _work(go._data)
                if need(2):
                    out[2] = _wrap(np.matmul(_mT(pd), ga).astype(dt, copy=False))
                dpd = np.matmul(ga, _mT(va))
            if gw is not None:
                w = _work(gw._data)
                dpd = w if dpd is None else dpd + w
            if dpd is None:
                return tuple(out)
            dp = dpd * da if da is not None else dpd
            ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))
            if need(0):
                out[0] = _wrap((np.matmul(ds, ka) * scale).astype(dt, copy=False))
            if need(1):
                out[1] = _wrap((np.matmul(_mT(ds), qa) * scale).astype(dt, copy=False))
            if lay.mask and need(3):
                out[3] = _wrap(ds.astype(dt, copy=False))
            return tuple(out)
        p = _probs_t(q, k, mask, scale, safe)
        pd = p * drop if drop is not None else p
        dpd = None
        if go is not None:
            if need(2):
                out[2] = pd.transpose(-2, -1).matmul(go)
            dpd = go.matmul(v.transpose(-2, -1))
        if gw is not None:
            dpd = gw if dpd is None else dpd + gw
        if dpd is None:
            return tuple(out)
        dp = dpd * drop if drop is not None else dpd
        ds = p * (dp - (dp * p).sum(-1, keepdim=True))
        if need(0):
            out[0] = ds.matmul(k) * scale
        if need(1):
            out[1] = ds.transpose(-2, -1).matmul(q) * scale
        if lay.mask and need(3):
            out[3] = ds
        return tuple(out)
    return vjp


def _attn_jvp(lay: _AttnLayout):
    def jvp(ctx, *tangents):
        ins = ctx.inputs
        q, k, v = ins[0], ins[1], ins[2]
        tq, tk, tv = tangents[0], tangents[1], tangents[2]
        i = 3
        mask = drop = tmask = None
        if lay.mask:
            mask, tmask = ins[i], tangents[i]
            i += 1
        if lay.drop:
            drop = ins[i]
        scale, safe = ctx._args[0], ctx._args[1]
        p = _probs_t(q, k, mask, scale, safe)
        pd = p * drop if drop is not None else p
        ts = None
        if tq is not None:
            ts = tq.matmul(k.transpose(-2, -1)) * scale
        if tk is not None:
            t = q.matmul(tk.transpose(-2, -1)) * scale
            ts = t if ts is None else ts + t
        if tmask is not None:
            ts = tmask if ts is None else ts + tmask
        tpd = None
        if ts is not None:
            tp = p * (ts - (ts * p).sum(-1, keepdim=True))
            tpd = tp * drop if drop is not None else tp
        to = None if tpd is None else tpd.matmul(v)
        if tv is not None:
            t = pd.matmul(tv)
            to = t if to is None else to + t
        if to is None:
            to = _wrap(np.zeros(ctx.result[0]._data.shape if lay.weights else
                                ctx.result._data.shape, q._data.dtype))
        if lay.weights:
            return to, tpd
        return to
    return jvp


_OPS: dict = {}


def _attn_op(mask: bool, drop: bool, weights: bool) -> Op:
    key = (mask, drop, weights)
    op = _OPS.get(key)
    if op is None:
        lay = _AttnLayout(mask, drop, weights)
        op = Op("scaled_dot_product_attention", "ScaledDotProductFlashAttentionForCpuBackward0",
                _attn_fwd(lay), _attn_vjp(lay), inputs=lay.names,
                args=("scale", "safe", "saved"), saves=lay.names + ("scale", "safe", "saved"),
                jvp=_attn_jvp(lay), num_outputs=2 if weights else 1)
        from ._batching import RULES
        from .products import per_row
        RULES[op] = per_row
        _OPS[key] = op
    return op


def _attention(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], drop: Optional[Tensor],
               scale: float, safe: bool, weights: bool) -> Any:
    op = _attn_op(mask is not None, drop is not None, weights)
    ts = (q, k, v) + tuple(t for t in (mask, drop) if t is not None)
    dt = q._data.dtype
    arrs = tuple(t._data if t._data.dtype == dt else t._data.astype(dt) for t in ts)
    return apply(op, ts, arrs, (float(scale), bool(safe), []))


# ---------------------------------------------------------------------------- helpers
def _tname(t: Tensor) -> str:
    """The C++ element type name torch's attention messages print ("float", "long int")."""
    name = _dtype._FROM_NP[t._data.dtype].name.split(".")[-1]
    return _C_TYPE_NAMES.get(name, name)


def _neg_inf_mask(mask: Tensor, dtype: Any) -> Tensor:
    """A boolean "may attend" mask (True: attend) as 0 / -inf of ``dtype``."""
    a = np.where(mask._data, 0.0, -np.inf).astype(dtype)
    return _wrap(a)


def _dropout_mask(shape: tuple, p: float, dtype: Any) -> Tensor:
    if p >= 1:
        return _wrap(np.zeros(shape, dtype))
    # through ``draw``: a compiled function draws it at run time (Note [Draws in traced
    # functions] in ndgrad/_generator.py)
    return _wrap(draw(_attention_dropout_noise, tuple(shape), float(p), np.dtype(dtype)))


def _attention_dropout_noise(shape: tuple, p: float, dtype: np.dtype) -> np.ndarray:
    keep = bernoulli_array(shape, 1.0 - p, None)     # torch's draws (Note [Random streams])
    return (keep / (1.0 - p)).astype(dtype)


def _broadcast_batch(a: tuple, b: tuple) -> tuple:
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        n = max(len(a), len(b))
        pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
        for i in range(n - 1, -1, -1):
            if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
                raise RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of "
                                   f"tensor b ({pb[i]}) at non-singleton dimension {i}") from None
        raise


# The backends sdpa_kernel / backends.cuda.enable_*_sdp allow: Note [Attention backend flags]
_MATH, _FLASH = _sdp_flags.MATH, _sdp_flags.FLASH


def _cpu_flash_takes(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], dropout_p: float,
                     enable_gqa: bool) -> bool:
    """Would torch run this call on its CPU flash-attention kernel? That kernel applies an
    ``attn_mask`` together with ``is_causal=True``; torch's math path refuses the pair. It is
    chosen for 4-D inputs with equal batch sizes and head dims, heads equal (or grouped with
    ``enable_gqa``), unit-stride last dims, no dropout, and no mask or a mask not requiring
    grad that is 2-D or 4-D, each dim full or 1."""
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4 or dropout_p > 0:
        return False
    (B, H, L, E), (Bk, Hk, S, Ek), (Bv, Hv, _, Ev) = q.shape, k.shape, v.shape
    if not B == Bk == Bv or not E == Ek == Ev:
        return False
    if not (H == Hk == Hv or (enable_gqa and Hk == Hv and Hk and H % Hk == 0)):
        return False
    if any(t._data.strides[-1] != t._data.itemsize and t.shape[-1] > 1 for t in (q, k, v)):
        return False
    if mask is None:
        return True
    if mask.requires_grad or mask.ndim not in (2, 4):
        return False
    ms = tuple(mask.shape)
    if ms[-2] not in (L, 1) or ms[-1] not in (S, 1):
        return False
    return mask.ndim == 2 or (ms[0] in (B, 1) and ms[1] in (H, 1))


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Optional[Tensor] = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: Optional[float] = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(query @ key^T * scale + mask) @ value`` with PyTorch's masks and dropout.

    ``attn_mask`` is boolean (True: may attend) or float (added to the scores); ``is_causal``
    masks keys after the query's position; ``scale`` defaults to ``1 / sqrt(E)``;
    ``enable_gqa`` repeats key/value heads to the query's head count.

    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> q = ndgrad.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    >>> F.scaled_dot_product_attention(q, q, q, is_causal=True)[0, 0]
    tensor([1., 0.])
    """
    if _autocast.active:  # Note [Autocast]
        query, key, value, attn_mask = _autocast.lower(query, key, value, attn_mask)
    q, k, v = query, key, value
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, "
                           f"but got query.dim: {q.ndim} key.dim: {k.ndim} and value.dim: "
                           f"{v.ndim} instead.")
    if not (q.dtype == k.dtype == v.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {_tname(q)} key.dtype: {_tname(k)} and value.dtype: "
                           f"{_tname(v)} instead.")
    if not q.is_floating_point():
        raise RuntimeError(f"expected scalar type Float but found {q.dtype}")
    if attn_mask is not None and attn_mask.dtype not in (_dtype.bool, _dtype.float32) and \
            attn_mask.dtype != q.dtype:      # "float" is float32: a float64 mask needs one
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: {_tname(attn_mask)} and  "
                           f"query.dtype: {_tname(q)} instead.")
    flash = None                     # would torch's CPU flash kernel take the call?
    allowed = _sdp_flags.SDP_ENABLED["backends"]
    if _MATH not in allowed or _FLASH not in allowed:   # the backends left
        if _MATH not in allowed and _FLASH not in allowed:
            raise RuntimeError("No viable backend for scaled_dot_product_attention was found. "
                               "This is likely due to turning off both the math kernel and the "
                               "fused kernels.")
        flash = _FLASH in allowed and _cpu_flash_takes(q, k, v, attn_mask, dropout_p,
                                                       enable_gqa)
        if not flash and _MATH not in allowed:
            raise RuntimeError("No available kernel.  Aborting execution.")
    if is_causal and attn_mask is not None and not (
            flash if flash is not None else
            _cpu_flash_takes(q, k, v, attn_mask, dropout_p, enable_gqa)):
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got "
                           f"{dropout_p}")
    if enable_gqa and q.ndim >= 3 and k.ndim >= 3 and v.ndim >= 3:
        hq, hk, hv = q.shape[-3], k.shape[-3], v.shape[-3]
        if hk == 0 or hv == 0 or hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of heads "
                               "in query")
        if hk != hq:
            k = k.repeat_interleave(hq // hk, -3)
        if hv != hq:
            v = v.repeat_interleave(hq // hv, -3)
    E = q.shape[-1]
    L, S = q.shape[-2], k.shape[-2]
    batch = _broadcast_batch(tuple(q.shape[:-2]), tuple(k.shape[:-2]))
    if k.shape[-1] != E:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{int(np.prod(batch))}, {E}] but got: "
                           f"[{int(np.prod(batch))}, {k.shape[-1]}].")
    batch = _broadcast_batch(batch, tuple(v.shape[:-2]))
    if v.shape[-2] != S:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{int(np.prod(batch))}, {S}] but got: "
                           f"[{int(np.prod(batch))}, {v.shape[-2]}].")
    dt = q._data.dtype
    mask = None
    if attn_mask is not None:
        try:
            np.broadcast_shapes(attn_mask.shape, batch + (L, S))
        except ValueError:
            ms = tuple(attn_mask.shape)
            full = batch + (L, S)
            n = max(len(ms), len(full))
            pa, pb = (1,) * (n - len(ms)) + ms, (1,) * (n - len(full)) + full
            for i in range(n - 1, -1, -1):
                if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
                    raise RuntimeError(f"The size of tensor a ({pb[i]}) must match the size "
                                       f"of tensor b ({pa[i]}) at non-singleton dimension "
                                       f"{i}") from None
            raise
        causal = _wrap(np.tril(np.ones((L, S), bool))) if is_causal else None
        if attn_mask.dtype == _dtype.bool:
            # with is_causal too, torch keeps what both allow
            mask = _neg_inf_mask(attn_mask if causal is None else attn_mask & causal, dt)
        else:
            mask = attn_mask
            if causal is not None:      # torch adds the causal -inf to a float mask
                mask = mask + _neg_inf_mask(causal, dt)
    elif is_causal:
        mask = _neg_inf_mask(_wrap(np.tril(np.ones((L, S), bool))), dt)
    sc = 1.0 / math.sqrt(E) if scale is None else float(scale)
    drop = _dropout_mask(batch + (L, S), dropout_p, dt) if dropout_p > 0 else None
    return _attention(q, k, v, mask, drop, sc, True, False)


# ---------------------------------------------------------------------------- multi-head
def _linear(x: Tensor, w: Tensor, b: Optional[Tensor]) -> Tensor:
    from .nn_linear import linear     # local import: sibling family, imported after this one
    return linear(x, w, b)


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    if query.ndim == 3:
        if key.ndim != 3 or value.ndim != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be "
                                 f"3-D but found {key.ndim}-D and {value.ndim}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found {key_padding_mask.ndim}-D tensor "
                                 f"instead")
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, "
                                 f"2-D or 3-D but found {attn_mask.ndim}-D tensor instead")
        return True
    if query.ndim == 2:
        if key.ndim != 2 or value.ndim != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be "
                                 f"2-D but found {key.ndim}-D and {value.ndim}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 1-D but found {key_padding_mask.ndim}-D tensor "
                                 f"instead")
        if attn_mask is not None:
            if attn_mask.ndim not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.ndim}-D tensor "
                                     f"instead")
            if attn_mask.ndim == 3:
                exp = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != exp:
                    raise AssertionError(f"Expected `attn_mask` shape to be {exp} but got "
                                         f"{attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.ndim}-D query tensor")


def _canonical_mask(mask: Optional[Tensor], name: str, other: Any, other_name: str,
                    dtype: Any, check_other: bool = True) -> Optional[Tensor]:
    """A boolean mask (True: masked out) as an additive 0/-inf mask of ``dtype``."""
    if mask is None:
        return None
    if mask.dtype != _dtype.bool and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if check_other and other is not None and mask.dtype != other:
        import warnings
        warnings.warn(f"Support for mismatched {name} and {other_name} is deprecated. Use same "
                      f"type for both instead.", stacklevel=3)
    if mask.dtype == _dtype.bool:
        return _wrap(np.where(mask._data, -np.inf, 0.0).astype(_dtype.to_dtype(dtype).np))
    return mask


def _pad_last(t: Tensor) -> Tensor:
    from .shape import cat
    z = _wrap(np.zeros(tuple(t.shape[:-1]) + (1,), t._data.dtype))
    return cat([t, z], -1)


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Optional[Tensor], in_proj_bias: Optional[Tensor],
        bias_k: Optional[Tensor], bias_v: Optional[Tensor], add_zero_attn: bool,
        dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Optional[Tensor],
        training: bool = True, key_padding_mask: Optional[Tensor] = None,
        need_weights: bool = True, attn_mask: Optional[Tensor] = None,
        use_separate_proj_weight: bool = False, q_proj_weight: Optional[Tensor] = None,
        k_proj_weight: Optional[Tensor] = None, v_proj_weight: Optional[Tensor] = None,
        static_k: Optional[Tensor] = None, static_v: Optional[Tensor] = None,
        average_attn_weights: bool = True, is_causal: bool = False) -> tuple:
    """Multi-head attention as ``nn.MultiheadAttention`` computes it (sequence-first inputs
    ``(L, N, E)`` or unbatched ``(L, E)``); returns ``(output, weights or None)``.

    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> x = ndgrad.ones(3, 2, 4)
    >>> out, w = F.multi_head_attention_forward(x, x, x, 4, 2, ndgrad.ones(12, 4), None, None,
    ...                                         None, False, 0.0, ndgrad.ones(4, 4), None)
    >>> out.shape, w.shape
    (ndgrad.Size([3, 2, 4]), ndgrad.Size([2, 3, 3]))
    """
    from .shape import cat
    batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       None if attn_mask is None else attn_mask.dtype,
                                       "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    E = embed_dim
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        w_in, b = in_proj_weight, in_proj_bias
        if key is value:
            if query is key:
                qkv = _linear(query, w_in, b)
                q, k, v = qkv[..., :E], qkv[..., E:2 * E], qkv[..., 2 * E:]
            else:
                q = _linear(query, w_in[:E], None if b is None else b[:E])
                kv = _linear(key, w_in[E:], None if b is None else b[E:])
                k, v = kv[..., :E], kv[..., E:]
        else:
            bq = bk = bv = None
            if b is not None:
                bq, bk, bv = b[:E], b[E:2 * E], b[2 * E:]
            q = _linear(query, w_in[:E], bq)
            k = _linear(key, w_in[E:2 * E], bk)
            v = _linear(value, w_in[2 * E:], bv)
    else:
        for nm, t in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if t is None:
                raise AssertionError(f"use_separate_proj_weight is True but {nm}_proj_weight "
                                     f"is None")
        assert q_proj_weight is not None and k_proj_weight is not None and \
            v_proj_weight is not None     # checked just above, with torch's message
        bq = bk = bv = None
        if in_proj_bias is not None:
            bq, bk, bv = in_proj_bias[:E], in_proj_bias[E:2 * E], in_proj_bias[2 * E:]
        Eq = query.shape[-1]
        for nm, pw, t in (("query", q_proj_weight, query), ("key", k_proj_weight, key),
                          ("value", v_proj_weight, value)):
            if tuple(pw.shape) != (Eq, t.shape[-1]):
                raise AssertionError(f"expecting {nm} weights shape of {(Eq, t.shape[-1])}, but "
                                     f"got {pw.shape}")
        for nm, bb in (("query", bq), ("key", bk), ("value", bv)):
            if bb is not None and tuple(bb.shape) != (Eq,):
                raise AssertionError(f"expecting {nm} bias shape of {(Eq,)}, but got "
                                     f"{bb.shape}")
        q = _linear(query, q_proj_weight, bq)
        k = _linear(key, k_proj_weight, bk)
        v = _linear(value, v_proj_weight, bv)
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.ndim == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = cat([k, bias_k.reshape(1, 1, E).expand(1, bsz, E)])
        v = cat([v, bias_v.reshape(1, 1, E).expand(1, bsz, E)])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    else:
        if bias_k is not None:
            raise AssertionError("bias_k is set but bias_v is None")
        if bias_v is not None:
            raise AssertionError("bias_v is set but bias_k is None")
    H = num_heads
    q = q.reshape(tgt_len, bsz * H, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.reshape(k.shape[0], bsz * H, head_dim).transpose(0, 1)
    else:
        if static_k.shape[0] != bsz * H:
            raise AssertionError(f"expecting static_k.size(0) of {bsz * H}, but got "
                                 f"{static_k.shape[0]}")
        if static_k.shape[2] != head_dim:
            raise AssertionError(f"expecting static_k.size(2) of {head_dim}, but got "
                                 f"{static_k.shape[2]}")
        k = static_k
    if static_v is None:
        v = v.reshape(v.shape[0], bsz * H, head_dim).transpose(0, 1)
    else:
        if static_v.shape[0] != bsz * H:
            raise AssertionError(f"expecting static_v.size(0) of {bsz * H}, but got "
                                 f"{static_v.shape[0]}")
        if static_v.shape[2] != head_dim:
            raise AssertionError(f"expecting static_v.size(2) of {head_dim}, but got "
                                 f"{static_v.shape[2]}")
        v = static_v
    if add_zero_attn:
        zk = _wrap(np.zeros((bsz * H, 1, head_dim), k._data.dtype))
        k = cat([k, zk], 1)
        v = cat([v, _wrap(np.zeros((bsz * H, 1, head_dim), v._data.dtype))], 1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, H, 1, src_len) \
            .reshape(bsz * H, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    dt = q._data.dtype
    drop = _dropout_mask((bsz * H, tgt_len, src_len), dropout_p, dt) if dropout_p > 0 else None
    scale = 1.0 / math.sqrt(head_dim)
    w: Optional[Tensor]       # the attention weights
    if need_weights:
        out, w = _attention(q, k, v, attn_mask, drop, scale, False, True)
    else:
        if is_causal and attn_mask is None:
            attn_mask = _neg_inf_mask(_wrap(np.tril(np.ones((tgt_len, src_len), bool))), dt)
        out = _attention(q, k, v, attn_mask, drop, scale, True, False)
        w = None
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if w is not None:
        w = w.reshape(bsz, H, tgt_len, src_len)
        if average_attn_weights:
            w = w.mean(1)
    if not batched:
        out = out.squeeze(1)
        if w is not None:
            w = w.squeeze(0)
    return out, w
