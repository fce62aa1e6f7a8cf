"""``Transformer``, ``TransformerEncoder``, ``TransformerDecoder`` and their layers, as in
``torch.nn.modules.transformer``: same constructors, submodule and parameter names
(``self_attn``, ``linear1``, ``norm1``, ``dropout1`` ...), post-norm or ``norm_first``,
relu/gelu/callable activations, masks and key padding masks, causal-mask detection. PyTorch's
inference fast paths (fused encoder layer, nested tensors) are not run, but their visible
result is: Note [Encoder padding in inference].

Note [Encoder padding in inference]
In inference (a layer in eval mode, no gradient needed, a right-padded ``src_key_padding_mask``
and no ``mask``), torch's ``TransformerEncoder`` with ``enable_nested_tensor`` runs its layers on
a nested tensor of the unpadded positions and pads the result with zeros: the padded positions
of its output are 0 (then the final ``norm``, if any). The other positions are what the masked
computation gives, so ndgrad computes as usual and zeroes the padded rows under the same
conditions (``backends.mha.get_fastpath_enabled()``, ``use_nested_tensor``, ``mask_check``).

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16)
    >>> enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    >>> enc(ndgrad.ones(5, 3, 8)).shape
    ndgrad.Size([5, 3, 8])
"""

from __future__ import annotations

import copy
import warnings
from typing import Any, Callable, Optional, Union

import numpy as np

from ... import _dtype, backends
from ...autograd.grad_mode import is_grad_enabled
from ...ops import nn_attention as _att
from ...tensor import Tensor, _wrap
from .. import functional as F
from .. import init
from .activation import GELU, ReLU
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]


def _generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
    """(sz, sz) float mask: 0 on and below the diagonal, -inf above."""
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    a = np.triu(np.full((sz, sz), -np.inf), 1).astype(d.np)
    return _wrap(a)


def _get_seq_len(src: Tensor, batch_first: bool) -> int:
    if src.ndim == 2:
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask: Optional[Tensor], is_causal: Optional[bool] = None,
                           size: Optional[int] = None) -> bool:
    """``is_causal`` if given; otherwise whether ``mask`` equals the causal mask."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.shape[-2]
        causal = _generate_square_subsequent_mask(sz, dtype=mask.dtype)
        if tuple(mask.shape) == tuple(causal.shape):
            make_causal = bool(np.array_equal(mask._data, causal._data))
        else:
            make_causal = False
    return make_causal


def _get_activation_fn(activation: str) -> Callable:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _get_clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class Transformer(Module):
    """Encoder-decoder transformer (Vaswani et al.): ``forward(src, tgt, src_mask=None,
    tgt_mask=None, memory_mask=None, src_key_padding_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
    memory_is_causal=False)``."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Union[str, Callable] = F.relu,
                 custom_encoder: Any = None, custom_decoder: Any = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        fk = {"device": device, "dtype": dtype}
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias, **fk)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            dec_layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout,
                                                activation, layer_norm_eps, batch_first,
                                                norm_first, bias, **fk)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
            self.decoder = TransformerDecoder(dec_layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Optional[Tensor] = None,
                tgt_mask: Optional[Tensor] = None, memory_mask: Optional[Tensor] = None,
                src_key_padding_mask: Optional[Tensor] = None,
                tgt_key_padding_mask: Optional[Tensor] = None,
                memory_key_padding_mask: Optional[Tensor] = None,
                src_is_causal: Optional[bool] = None, tgt_is_causal: Optional[bool] = None,
                memory_is_causal: bool = False) -> Tensor:
        is_batched = src.ndim == 3
        if is_batched:
            b = 0 if self.batch_first else 1
            if src.shape[b] != tgt.shape[b]:
                raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None,
                                        dtype: Any = None) -> Tensor:
        """The causal mask for a sequence of ``sz``: ``-inf`` above the diagonal, 0 elsewhere.

        >>> import ndgrad.nn as nn
        >>> nn.Transformer.generate_square_subsequent_mask(2)
        tensor([[0., -inf],
                [0., 0.]])
        """
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of ``encoder_layer`` and an optional final ``norm``."""

    def __init__(self, encoder_layer: "TransformerEncoderLayer", num_layers: int,
                 norm: Optional[Module] = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why = ""
        enc = "encoder_layer"
        if not isinstance(encoder_layer, TransformerEncoderLayer):
            why = f"{enc} was not TransformerEncoderLayer"
        elif encoder_layer.norm_first:
            why = f"{enc}.norm_first was True"
        elif not encoder_layer.self_attn.batch_first:
            why = (f"{enc}.self_attn.batch_first was not True"
                   "(use batch_first for better inference performance)")
        elif not encoder_layer.self_attn._qkv_same_embed_dim:
            why = f"{enc}.self_attn._qkv_same_embed_dim was not True"
        elif encoder_layer.self_attn.in_proj_bias is None:
            why = f"{enc}.self_attn was passed bias=False"
        elif not encoder_layer.activation_relu_or_gelu:
            why = f"{enc}.activation_relu_or_gelu was not True"
        elif encoder_layer.norm1.eps != encoder_layer.norm2.eps:
            why = f"{enc}.norm1.eps was not equal to {enc}.norm2.eps"
        elif encoder_layer.self_attn.num_heads % 2 == 1:
            why = f"{enc}.self_attn.num_heads is odd"
        if enable_nested_tensor and why:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why}", stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src: Tensor, mask: Optional[Tensor] = None,
                src_key_padding_mask: Optional[Tensor] = None,
                is_causal: Optional[bool] = None) -> Tensor:
        src_key_padding_mask = _att._canonical_mask(
            src_key_padding_mask, "src_key_padding_mask",
            None if mask is None else mask.dtype, "mask", src.dtype)
        mask = _att._canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        output = src
        batch_first = self.layers[0].self_attn.batch_first
        seq_len = _get_seq_len(src, batch_first)
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        padded = self._padded_in_inference(src, mask, src_key_padding_mask)
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal,
                         src_key_padding_mask=src_key_padding_mask)
        if padded is not None:
            output = output.masked_fill(_wrap(padded[:, :, None]), 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output


    def _padded_in_inference(self, src: Tensor, mask: Optional[Tensor],
                             key_padding: Optional[Tensor]) -> Optional[np.ndarray]:
        """The (batch, seq) padded positions torch's nested-tensor path zeroes, or None when
        it would not be taken (Note [Encoder padding in inference])."""
        first = self.layers[0]
        if (not backends.mha.get_fastpath_enabled() or not self.use_nested_tensor
                or first.training or src.dim() != 3 or key_padding is None
                or mask is not None or getattr(src, "is_nested", False)):
            return None
        pad = key_padding._data != 0
        if getattr(self, "mask_check", True):
            # right-padded: no kept position after a padded one in any row
            if (np.diff(pad.astype(np.int8), axis=1) < 0).any():
                return None
        attn = first.self_attn
        args = (src, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight,
                attn.out_proj.bias, first.norm1.weight, first.norm1.bias, first.norm2.weight,
                first.norm2.bias, first.linear1.weight, first.linear1.bias,
                first.linear2.weight, first.linear2.bias)
        if is_grad_enabled() and any(a is not None and a.requires_grad for a in args):
            return None
        return pad          # (batch, seq): use_nested_tensor implies batch_first


class TransformerDecoder(Module):
    """A stack of ``num_layers`` copies of ``decoder_layer`` and an optional final ``norm``."""

    def __init__(self, decoder_layer: "TransformerDecoderLayer", num_layers: int,
                 norm: Optional[Module] = None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Optional[Tensor] = None,
                memory_mask: Optional[Tensor] = None,
                tgt_key_padding_mask: Optional[Tensor] = None,
                memory_key_padding_mask: Optional[Tensor] = None,
                tgt_is_causal: Optional[bool] = None, memory_is_causal: bool = False) -> Tensor:
        output = tgt
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask,
                         memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with dropout, a residual connection and a
    LayerNorm (after the block, or before it with ``norm_first=True``)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Union[str, Callable] = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        fk = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **fk)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **fk)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **fk)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src: Tensor, src_mask: Optional[Tensor] = None,
                src_key_padding_mask: Optional[Tensor] = None,
                is_causal: bool = False) -> Tensor:
        src_key_padding_mask = _att._canonical_mask(
            src_key_padding_mask, "src_key_padding_mask",
            None if src_mask is None else src_mask.dtype, "src_mask", src.dtype)
        src_mask = _att._canonical_mask(src_mask, "src_mask", None, "", src.dtype,
                                        check_other=False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask,
                                   is_causal=is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask,
                                              is_causal=is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Optional[Tensor],
                  key_padding_mask: Optional[Tensor], is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's output (``memory``) and a feed-forward
    block, each with dropout, a residual connection and a LayerNorm."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Union[str, Callable] = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        fk = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, **fk)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias, **fk)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **fk)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **fk)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        if isinstance(activation, str):
            self.activation = _get_activation_fn(activation)
        else:
            self.activation = activation

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Optional[Tensor] = None,
                memory_mask: Optional[Tensor] = None,
                tgt_key_padding_mask: Optional[Tensor] = None,
                memory_key_padding_mask: Optional[Tensor] = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                   tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask,
                                              tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask,
                                               memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Optional[Tensor],
                  key_padding_mask: Optional[Tensor], is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask: Optional[Tensor],
                   key_padding_mask: Optional[Tensor], is_causal: bool = False) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)
