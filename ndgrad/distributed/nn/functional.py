"""Differentiable collectives, as ``torch.distributed.nn.functional``: they return new tensors
and their backward is the adjoint collective (the gradient of ``all_reduce`` is an
``all_reduce`` of the gradients, of ``broadcast`` a ``reduce`` to the source, of ``all_gather``
a ``reduce_scatter``, of ``scatter`` a ``gather``, of ``all_to_all`` the reverse
``all_to_all``).

Example:
    >>> import ndgrad
    >>> import ndgrad.distributed as dist
    >>> from ndgrad.distributed.nn import functional as dfn
    >>> dist.init_process_group("mpi")
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> y = dfn.all_reduce(x * x)
    >>> y.sum().backward()
    >>> x.grad * 1                      # 2 x (times the world size)
    tensor([2., 4.])
    >>> dist.destroy_process_group()
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ... import _creation
from ...autograd.function import Function
from ...tensor import Tensor
from ... import distributed as dist
from ..distributed_c10d import ReduceOp

__all__ = ["broadcast", "gather", "scatter", "reduce", "reduce_scatter", "all_gather",
           "all_to_all", "all_to_all_single", "all_reduce", "all_gather_into_tensor"]


def _zeros_like(t: Tensor) -> Tensor:
    return _creation.zeros_like(t)


class _Broadcast(Function):
    @staticmethod
    def forward(ctx: Any, src: int, group: Any, tensor: Tensor) -> Tensor:
        ctx.src, ctx.group = src, group
        ctx.rank = dist.get_rank() if group is None else dist.get_rank(group)
        out = tensor.clone()
        dist.broadcast(out, src, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple:
        gx = _Reduce.apply(ctx.src, ReduceOp.SUM, ctx.group, grad_output)
        if ctx.src != ctx.rank:
            gx = _zeros_like(gx)
        return None, None, gx


class _Reduce(Function):
    @staticmethod
    def forward(ctx: Any, dst: int, op: Any, group: Any, tensor: Tensor) -> Tensor:
        ctx.dst, ctx.group = dst, group
        out = tensor.clone()
        dist.reduce(out, dst, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple:
        return None, None, None, _Broadcast.apply(ctx.dst, ctx.group, grad_output)


class _Gather(Function):
    @staticmethod
    def forward(ctx: Any, dst: int, group: Any, tensor: Tensor) -> Tuple[Tensor, ...]:
        ctx.dst, ctx.group = dst, group
        n = dist.get_world_size(group)
        outs = [_zeros_like(tensor) for _ in range(n)]
        mine = dist.get_rank() == dst
        dist.gather(tensor.contiguous(), outs if mine else None, dst, group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Tensor) -> tuple:
        return None, None, _Scatter.apply(ctx.dst, ctx.group, *grad_outputs)


class _Scatter(Function):
    @staticmethod
    def forward(ctx: Any, src: int, group: Any, *tensors: Tensor) -> Tensor:
        ctx.src, ctx.group = src, group
        out = _zeros_like(tensors[0])
        mine = dist.get_rank() == src
        dist.scatter(out, [t.contiguous() for t in tensors] if mine else None, src,
                     group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple:
        return (None, None) + _Gather.apply(ctx.src, ctx.group, grad_output)


class _AllReduce(Function):
    @staticmethod
    def forward(ctx: Any, op: Any, group: Any, tensor: Tensor) -> Tensor:
        ctx.op, ctx.group = op, group
        out = tensor.clone()
        dist.all_reduce(out, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple:
        return None, None, _AllReduce.apply(ctx.op, ctx.group, grad_output)


class _AllGather(Function):
    @staticmethod
    def forward(ctx: Any, group: Any, tensor: Tensor) -> Tuple[Tensor, ...]:
        ctx.group = group
        n = dist.get_world_size(group)
        outs = [_creation.empty_like(tensor) for _ in range(n)]
        dist.all_gather(outs, tensor.contiguous(), group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Tensor) -> tuple:
        me = dist.get_rank(ctx.group)
        gx = _zeros_like(grad_outputs[me])
        return None, _ReduceScatter.apply(ReduceOp.SUM, ctx.group, gx, *grad_outputs)


class _ReduceScatter(Function):
    @staticmethod
    def forward(ctx: Any, op: Any, group: Any, tensor: Tensor, *inputs: Tensor) -> Tensor:
        ctx.group = group
        out = tensor.clone()
        dist.reduce_scatter(out, [t.contiguous() for t in inputs], op=op, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple:
        return (None, None, None) + _AllGather.apply(ctx.group, grad_output)


class _AllGatherIntoTensor(Function):
    @staticmethod
    def forward(ctx: Any, group: Any, output: Tensor, tensor: Tensor) -> Tensor:
        ctx.group = group
        ctx.shape = tensor.shape
        out = output.clone()
        dist.all_gather_into_tensor(out, tensor.contiguous(), group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple:
        gx = _creation.zeros(ctx.shape, dtype=grad_output.dtype)
        dist.reduce_scatter_tensor(gx, grad_output.contiguous(), ReduceOp.SUM, group=ctx.group)
        return None, None, gx


class _AllToAll(Function):
    @staticmethod
    def forward(ctx: Any, group: Any, outs: List[Tensor], *tensors: Tensor) -> Tuple:
        ctx.group = group
        ctx.sizes = [t.shape for t in tensors]
        outs = [o.clone() for o in outs]
        dist.all_to_all(outs, [t.contiguous() for t in tensors], group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Tensor) -> tuple:
        buffers = [_creation.empty(s, dtype=grad_outputs[0].dtype) for s in ctx.sizes]
        return (None, None) + _AllToAll.apply(ctx.group, buffers, *grad_outputs)


class _AllToAllSingle(Function):
    @staticmethod
    def forward(ctx: Any, group: Any, output: Tensor, out_splits: Any, in_splits: Any,
                tensor: Tensor) -> Tensor:
        ctx.group, ctx.shape = group, tensor.shape
        ctx.out_splits, ctx.in_splits = in_splits, out_splits
        out = output.clone()
        dist.all_to_all_single(out, tensor.contiguous(), out_splits, in_splits, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple:
        buf = _creation.empty(ctx.shape, dtype=grad_output.dtype)
        return (None, None, None, None, _AllToAllSingle.apply(
            ctx.group, buf, ctx.out_splits, ctx.in_splits, grad_output.contiguous()))


def broadcast(tensor: Tensor, src: int, group: Any = None) -> Tensor:
    """A copy of rank ``src``'s ``tensor`` on every rank; the gradient flows back to ``src``
    (summed over the ranks)."""
    return _Broadcast.apply(src, group, tensor)


def gather(tensor: Tensor, dst: int = 0, group: Any = None) -> Tuple[Tensor, ...]:
    """Every rank's ``tensor`` gathered on ``dst`` (zeros elsewhere), differentiably."""
    return _Gather.apply(dst, group, tensor)


def scatter(tensors: List[Tensor], src: int = 0, group: Any = None) -> Tensor:
    """Rank ``i`` receives ``tensors[i]`` of rank ``src``, differentiably."""
    return _Scatter.apply(src, group, *tensors)


def reduce(tensor: Tensor, dst: int, op: Any = ReduceOp.SUM, group: Any = None) -> Tensor:
    """``tensor`` reduced over the ranks on ``dst``, differentiably."""
    return _Reduce.apply(dst, op, group, tensor)


def reduce_scatter(output: Tensor, input_list: List[Tensor], op: Any = ReduceOp.SUM,
                   group: Any = None) -> Tensor:
    """Rank ``i`` receives ``input_list[i]`` reduced over the ranks, differentiably."""
    return _ReduceScatter.apply(op, group, output, *input_list)


def all_gather(tensor: Tensor, group: Any = None) -> Tuple[Tensor, ...]:
    """Every rank's ``tensor`` on every rank, differentiably."""
    return _AllGather.apply(group, tensor)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor,
                           group: Any = None) -> Tensor:
    """Every rank's ``input_tensor`` concatenated (shaped like ``output_tensor``),
    differentiably."""
    return _AllGatherIntoTensor.apply(group, output_tensor, input_tensor)


def all_to_all(output_tensor_list: List[Tensor], input_tensor_list: List[Tensor],
               group: Any = None) -> Tuple[Tensor, ...]:
    """Rank ``i`` sends ``input_tensor_list[j]`` to rank ``j``, differentiably."""
    return _AllToAll.apply(group, output_tensor_list, *input_tensor_list)


def all_to_all_single(output: Tensor, input: Tensor,
                      output_split_sizes: Optional[List[int]] = None,
                      input_split_sizes: Optional[List[int]] = None,
                      group: Any = None) -> Tensor:
    """``all_to_all`` on one tensor split along its first dimension, differentiably."""
    return _AllToAllSingle.apply(group, output, output_split_sizes, input_split_sizes, input)


def all_reduce(tensor: Tensor, op: Any = ReduceOp.SUM, group: Any = None) -> Tensor:
    """``tensor`` reduced over the ranks, differentiably (the gradient is all-reduced too)."""
    return _AllReduce.apply(op, group, tensor)
