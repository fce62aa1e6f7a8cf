"""``conv_tbc``: a 1-D convolution over time-major ``(time, batch, channel)`` sequences, as
``torch.conv_tbc`` / ``F.conv_tbc`` (a permuted ``conv1d``, so its gradients are conv1d's).

Example:
    >>> import ndgrad
    >>> import ndgrad.nn.functional as F
    >>> F.conv_tbc(ndgrad.ones(4, 2, 3), ndgrad.ones(2, 3, 5), ndgrad.zeros(5), 1).shape
    ndgrad.Size([5, 2, 5])
"""

from __future__ import annotations

from ..tensor import Tensor
from .nn_conv import conv1d

__all__ = ["conv_tbc"]

SIGNATURES = """
conv_tbc(Tensor input, Tensor weight, Tensor bias, int pad=0)
"""


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """Convolve ``input`` ``(time, batch, in)`` with ``weight`` ``(kernel, in, out)`` and add
    ``bias`` ``(out,)``; ``pad`` zeros on both ends of time. The output is
    ``(time + 2 * pad - kernel + 1, batch, out)``."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    y = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return y.permute(2, 0, 1)
