"""``MultiheadAttention``, as in ``torch.nn.modules.activation``: same constructor, parameter
names (``in_proj_weight`` or ``q/k/v_proj_weight``, ``in_proj_bias``, ``bias_k``/``bias_v``,
``out_proj``), initialization and ``forward``; computed by ``F.multi_head_attention_forward``
(PyTorch's fused inference fast path is not reproduced: the results are the same).

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> mha = nn.MultiheadAttention(4, 2, batch_first=True)
    >>> x = ndgrad.ones(3, 5, 4)
    >>> out, w = mha(x, x, x)
    >>> out.shape, w.shape
    (ndgrad.Size([3, 5, 4]), ndgrad.Size([3, 5, 5]))
"""

from __future__ import annotations

from typing import Any, Optional

from ... import _creation
from ...ops import nn_attention as _att
from ...tensor import Tensor
from .. import init
from ..parameter import Parameter
from . import _functional_entries as _entries
from .linear import Linear
from .module import Module

__all__ = ["MultiheadAttention"]


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` (PyTorch marks MultiheadAttention's output projection with this class)."""


class MultiheadAttention(Module):
    """Attention of ``query`` over ``key``/``value`` with ``num_heads`` heads of size
    ``embed_dim // num_heads``: ``forward(query, key, value, key_padding_mask=None,
    need_weights=True, attn_mask=None, average_attn_weights=True, is_causal=False) ->
    (output, weights or None)``."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: Optional[int] = None, vdim: Optional[int] = None,
                 batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        fk = {"device": device, "dtype": dtype}
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(_creation.empty((embed_dim, embed_dim), **fk))
            self.k_proj_weight = Parameter(_creation.empty((embed_dim, self.kdim), **fk))
            self.v_proj_weight = Parameter(_creation.empty((embed_dim, self.vdim), **fk))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(_creation.empty((3 * embed_dim, embed_dim), **fk))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(_creation.empty(3 * embed_dim, **fk))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **fk)
        self.bias_k: Optional[Parameter]
        self.bias_v: Optional[Parameter]
        if add_bias_kv:
            self.bias_k = Parameter(_creation.empty((1, 1, embed_dim), **fk))
            self.bias_v = Parameter(_creation.empty((1, 1, embed_dim), **fk))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Optional[Tensor] = None, need_weights: bool = True,
                attn_mask: Optional[Tensor] = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple:
        is_batched = query.ndim == 3
        key_padding_mask = _att._canonical_mask(
            key_padding_mask, "key_padding_mask",
            None if attn_mask is None else attn_mask.dtype, "attn_mask", query.dtype)
        attn_mask = _att._canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                         check_other=False)
        if self.batch_first and is_batched:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        common: dict = dict(training=self.training, key_padding_mask=key_padding_mask,
                      need_weights=need_weights, attn_mask=attn_mask,
                      average_attn_weights=average_attn_weights, is_causal=is_causal)
        if not self._qkv_same_embed_dim:
            out, weights = _entries.multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
                self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
                self.out_proj.weight, self.out_proj.bias, use_separate_proj_weight=True,
                q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
                v_proj_weight=self.v_proj_weight, **common)
        else:
            out, weights = _entries.multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
                self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
                self.out_proj.weight, self.out_proj.bias, **common)
        if self.batch_first and is_batched:
            return out.transpose(1, 0), weights
        return out, weights

    def merge_masks(self, attn_mask: Optional[Tensor], key_padding_mask: Optional[Tensor],
                    query: Tensor) -> tuple:
        """One additive mask of shape (N, num_heads, L, S) from both masks, and its type
        (0: attn_mask only, 1: key_padding_mask only, 2: both), as PyTorch's."""
        mask_type = None
        merged = None
        if key_padding_mask is not None:
            mask_type = 1
            merged = key_padding_mask
        if attn_mask is not None:
            bsz, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.ndim == 3:
                attn_mask_e = attn_mask.reshape(bsz, -1, seq_len, seq_len)
            else:
                attn_mask_e = attn_mask.reshape(1, 1, seq_len, seq_len).expand(
                    bsz, self.num_heads, -1, -1)
            merged = attn_mask_e
            if key_padding_mask is not None:
                kpm = key_padding_mask.reshape(bsz, 1, 1, seq_len).expand(
                    -1, self.num_heads, -1, -1)
                merged = attn_mask_e + kpm
        return merged, mask_type
