"""``AdaptiveLogSoftmaxWithLoss``: the adaptive softmax of Grave et al. (2016), "Efficient
softmax approximation for GPUs", as ``torch.nn.AdaptiveLogSoftmaxWithLoss``.

Classes are split by ``cutoffs`` into a shortlist (the frequent classes, scored by the head
together with one entry per tail cluster) and clusters scored by small two-layer projections
whose hidden width shrinks by ``div_value`` per cluster. The log-probability of a class in a
cluster is the head's log-probability of the cluster plus the cluster's own log-probability of
the class.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any, Sequence

from ...ops.pointwise import where
from ...ops.shape import cat
from ...tensor import Tensor
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax over ``n_classes`` classes split at ``cutoffs``.

    ``forward(input, target)`` returns ``(output, loss)``: ``output[i]`` is the
    log-probability of ``target[i]``, ``loss`` the mean negative log-likelihood. ``log_prob``
    gives the full ``(N, n_classes)`` log-probabilities, ``predict`` the most likely classes.

    >>> import ndgrad, ndgrad.nn as nn
    >>> _ = ndgrad.manual_seed(0)
    >>> asm = nn.AdaptiveLogSoftmaxWithLoss(16, 10, cutoffs=[4, 7], div_value=2.0)
    >>> out, loss = asm(ndgrad.randn(5, 16), ndgrad.tensor([0, 3, 4, 8, 9]))
    >>> out.shape, loss.shape, asm.log_prob(ndgrad.randn(2, 16)).exp().sum(1).round().tolist()
    (ndgrad.Size([5]), ndgrad.Size([]), [1.0, 1.0])
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        kw = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **kw),
                                        Linear(hidden, size, bias=False, **kw)))

    def reset_parameters(self) -> None:
        """Re-initialize the head and every cluster's two projections."""
        self.head.reset_parameters()
        for proj in self.tail:
            for lin in proj.children():
                lin.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> Any:
        """``(output, loss)`` for targets ``target_`` (``(N,)`` with input ``(N, in_features)``,
        or a scalar with input ``(in_features,)``)."""
        tdim = target_.dim()
        if tdim == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        elif tdim == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = tdim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if target.numel() and (bool((target < 0).any()) or
                               bool((target >= self.n_classes).any())):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{target.min().item()}, "
                               f"{target.max().item()}] were found. ")
        # Each target's log-probability is its head entry's (the class itself in the
        # shortlist, else its cluster's entry) plus, for a cluster, the class's log-probability
        # within the cluster, computed only for that cluster's rows.
        starts = self.cutoffs[:-1]
        cluster = (target.unsqueeze(1) >= target.new_tensor(starts).unsqueeze(0)).sum(1) \
            if starts else target.new_zeros(target.shape)
        head_col = where(cluster == 0, target, cluster + (self.shortlist_size - 1))
        head_logp = F.log_softmax(self.head(input), dim=1)
        output = head_logp.gather(1, head_col.unsqueeze(1)).view(-1)
        for c, start in enumerate(starts, 1):
            rows = (cluster == c).nonzero().view(-1)
            if rows.numel() == 0:
                continue
            tail_logp = F.log_softmax(self.tail[c - 1](input.index_select(0, rows)), dim=1)
            inner = (target.index_select(0, rows) - start).unsqueeze(1)
            output = output.index_add(0, rows, tail_logp.gather(1, inner).view(-1))
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        """``(N, n_classes)`` log-probabilities from the input and the head's output."""
        head_logp = F.log_softmax(head_output, dim=1)
        parts = [head_logp[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logp = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logp + head_logp[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of all ``n_classes`` classes for each row of ``input``."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row (``log_prob(input).argmax(dim=1)``, computing the
        clusters only for the rows whose best head entry is a cluster)."""
        head_output = self.head(input)
        best = head_output.argmax(dim=1)
        outside = best >= self.shortlist_size
        if not outside.any():
            return best
        if outside.all():
            return self._full_log_prob(input, head_output).argmax(dim=1)
        best[outside] = self._full_log_prob(input[outside], head_output[outside]).argmax(dim=1)
        return best
