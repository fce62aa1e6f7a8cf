"""``ChannelShuffle``, as in ``torch.nn.modules.channelshuffle``.

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> nn.ChannelShuffle(2)(ndgrad.arange(4.0).reshape(1, 4, 1)).reshape(-1).tolist()
    [0.0, 2.0, 1.0, 3.0]
"""

from __future__ import annotations

from .. import functional as F
from ...tensor import Tensor
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Split the channels into ``groups`` groups and interleave them."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
