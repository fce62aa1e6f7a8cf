"""``torch.nn.attention.bias``: causal masks that ``scaled_dot_product_attention`` takes as
``attn_mask`` without a materialised mask where it can.

``causal_upper_left(L, S)`` is the mask of ``is_causal=True`` (query ``i`` sees keys ``0..i``);
``causal_lower_right(L, S)`` aligns the triangle to the bottom-right corner (query ``i`` sees
keys ``0..i + S - L``), the mask of decoding ``L`` new tokens after ``S - L`` cached ones. The
bias is a Tensor subclass whose ``__torch_function__`` takes over the attention call: the
upper-left variant (or a square lower-right one) becomes ``is_causal=True``, a non-square
lower-right one a materialised boolean mask, as on torch's CPU build.

Example:
    >>> import ndgrad
    >>> from ndgrad.nn.attention.bias import causal_lower_right
    >>> bias = causal_lower_right(2, 4)
    >>> bias._materialize().int().tolist()
    [[1, 1, 1, 0], [1, 1, 1, 1]]
    >>> q, kv = ndgrad.ones(1, 1, 2, 8), ndgrad.ones(1, 1, 4, 8)
    >>> ndgrad.nn.functional.scaled_dot_product_attention(q, kv, kv, attn_mask=bias).shape
    ndgrad.Size([1, 1, 2, 8])
"""

from __future__ import annotations

import warnings
from enum import IntEnum
from typing import Any, Optional

import ndgrad
from ndgrad import Tensor
from ndgrad.nn import functional as F

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(IntEnum):
    """Where the causal triangle is anchored: ``UPPER_LEFT`` (``is_causal=True``) or
    ``LOWER_RIGHT`` (the last query row sees every key)."""

    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias(Tensor):
    """A causal attention mask of ``seq_len_q`` x ``seq_len_kv`` described by its variant;
    ``scaled_dot_product_attention`` reads it through ``__torch_function__``. (Constructed as
    torch's: the Tensor constructor also receives the three arguments, so the object's own
    storage is an uninitialised tensor of that shape; only the description matters.)"""

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> None:
        if not isinstance(variant, CausalVariant):
            raise AssertionError(f"variant must be a CausalVariant, got {type(variant).__name__}")
        super().__init__(int(variant), seq_len_q, seq_len_kv)
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when "
                          "seq_len_q > seq_len_kv!", stacklevel=2)

    def _materialize(self, device: Any = None) -> Tensor:
        """The mask as a boolean ``seq_len_q`` x ``seq_len_kv`` tensor (True: attend)."""
        ones = ndgrad.ones(self.seq_len_q, self.seq_len_kv, dtype=ndgrad.bool,
                           device=device if device is not None else "cpu")
        if self.variant == CausalVariant.UPPER_LEFT:
            return ones.tril()
        return ones.tril(diagonal=self.seq_len_kv - self.seq_len_q)

    @staticmethod
    def _dispatch(query: Tensor, key: Tensor, value: Tensor, attn_mask: "CausalBias",
                  dropout_p: float = 0.0, is_causal: bool = False,
                  scale: Optional[float] = None, enable_gqa: bool = False) -> Tensor:
        """``scaled_dot_product_attention`` with this bias as its mask."""
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if attn_mask.variant not in (CausalVariant.UPPER_LEFT, CausalVariant.LOWER_RIGHT):
            raise ValueError(f"CausalBias.variant must be a CausalVariant type, but found: "
                             f"{attn_mask.variant}")
        square = attn_mask.seq_len_q == attn_mask.seq_len_kv
        if square or attn_mask.variant == CausalVariant.UPPER_LEFT:
            return F.scaled_dot_product_attention(query, key, value, attn_mask=None,
                                                  dropout_p=dropout_p, is_causal=True,
                                                  scale=scale, enable_gqa=enable_gqa)
        # no CPU kernel takes the lower-right triangle: the mask is built (torch's CPU path)
        return F.scaled_dot_product_attention(query, key, value,
                                              attn_mask=attn_mask._materialize(query.device),
                                              dropout_p=dropout_p, is_causal=False,
                                              scale=scale, enable_gqa=enable_gqa)

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            return cls._dispatch(*args, **kwargs)
        # Tensor gets its default __torch_function__ at import time (ndgrad/_torch_function.py)
        return super().__torch_function__(func, types, args, kwargs)  # type: ignore[misc]

    def __repr__(self) -> str:
        return repr(self._materialize())


def _sizes(size: tuple, name: str) -> tuple:
    if len(size) != 2:
        raise AssertionError(f"{name} only supports 2D tensors")
    return size


def causal_upper_left(*size: int) -> CausalBias:
    """The causal mask of ``is_causal=True`` for ``(seq_len_q, seq_len_kv)``: query ``i``
    attends to keys ``0..i``.

    >>> from ndgrad.nn.attention.bias import causal_upper_left
    >>> causal_upper_left(2, 3)._materialize().int().tolist()
    [[1, 0, 0], [1, 1, 0]]
    """
    seq_len_q, seq_len_kv = _sizes(size, "causal_upper_left")
    return CausalBias(CausalVariant.UPPER_LEFT, seq_len_q, seq_len_kv)


def causal_lower_right(*size: int) -> CausalBias:
    """The causal mask aligned to the bottom-right corner for ``(seq_len_q, seq_len_kv)``:
    query ``i`` attends to keys ``0..i + seq_len_kv - seq_len_q`` (new tokens after a cache).

    >>> from ndgrad.nn.attention.bias import causal_lower_right
    >>> causal_lower_right(1, 3)._materialize().int().tolist()
    [[1, 1, 1]]
    """
    seq_len_q, seq_len_kv = _sizes(size, "causal_lower_right")
    return CausalBias(CausalVariant.LOWER_RIGHT, seq_len_q, seq_len_kv)
