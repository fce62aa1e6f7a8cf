"""Convolution layers, as in ``torch.nn.modules.conv``: ``Conv1d/2d/3d``,
``ConvTranspose1d/2d/3d`` and their ``Lazy`` forms (same constructor signatures, parameter names
and shapes, default initialization, ``padding_mode`` and ``repr``).

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> m = nn.Conv2d(2, 4, 3, stride=2, padding=1)
    >>> m
    Conv2d(2, 4, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))
    >>> m(ndgrad.ones(1, 2, 8, 8)).shape
    ndgrad.Size([1, 4, 4, 4])
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional

from ... import _creation
from . import _functional_entries as F
from ...tensor import Tensor
from .. import init
from ..parameter import Parameter, UninitializedParameter
from .module import LazyModuleMixin, Module
from .utils import _Repeat

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")
_PADDING_STRINGS = ("same", "valid")


def _ntuple(v: Any, n: int) -> tuple:
    if isinstance(v, (list, tuple)):
        return tuple(v)
    return (v,) * n


class _ConvNd(Module):
    """What every convolution layer shares: arguments, parameters, initialization, repr."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode",
                     "output_padding", "in_channels", "out_channels", "kernel_size"]
    _nd = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple, stride: tuple,
                 padding: Any, dilation: tuple, transposed: bool, output_padding: tuple,
                 groups: int, bias: bool, padding_mode: str, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in _PADDING_STRINGS:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{set(_PADDING_STRINGS)}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {set(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's order: last spatial dim first, (left, right) each.
        if isinstance(padding, str):
            rev: list = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    rev[2 * i] = total // 2
                    rev[2 * i + 1] = total - total // 2
        else:
            rev = [p for p in reversed(padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = rev
        fk = {"device": device, "dtype": dtype}
        if transposed:
            shape = (in_channels, out_channels // groups) + tuple(kernel_size)
        else:
            shape = (out_channels, in_channels // groups) + tuple(kernel_size)
        self.weight = Parameter(_creation.empty(shape, **fk))
        if bias:
            self.bias = Parameter(_creation.empty(out_channels, **fk))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the weights again: ``kaiming_uniform_(a=sqrt(5))``, the bias from
        U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

class _Conv(_ConvNd):
    _fn: Any = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        n = self._nd
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, n),
                         _ntuple(stride, n), padding if isinstance(padding, str)
                         else _ntuple(padding, n), _ntuple(dilation, n), False, _ntuple(0, n),
                         groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
        fn = type(self)._fn
        if self.padding_mode != "zeros":
            x = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(x, weight, bias, self.stride, (0,) * self._nd, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution layer over (N, C_in, L) or (C_in, L) inputs; ``weight`` is
    (out_channels, in_channels/groups, kernel_size)."""

    _nd = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution layer over (N, C_in, H, W) or (C_in, H, W) inputs; ``weight`` is
    (out_channels, in_channels/groups, kH, kW)."""

    _nd = 2
    _fn = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution layer over (N, C_in, D, H, W) or (C_in, D, H, W) inputs."""

    _nd = 3
    _fn = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    _fn: Any = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{type(self).__name__}')
        n = self._nd
        # torch's _single/_pair/_triple here: any iterable becomes a tuple of its items (so
        # padding="same" is its characters, refused by the functional at the first call)
        t = _Repeat(n, "_ntuple")
        super().__init__(in_channels, out_channels, t(kernel_size), t(stride), t(padding),
                         t(dilation), True, t(output_padding), groups, bias, padding_mode, device,
                         dtype)

    def _output_padding(self, input: Tensor, output_size: Optional[Any], stride: tuple,
                        padding: tuple, kernel_size: tuple, num_spatial_dims: int,
                        dilation: Optional[tuple] = None) -> tuple:
        if output_size is None:
            return tuple(self.output_padding)
        has_batch = input.dim() == num_spatial_dims + 2
        non_spatial = 2 if has_batch else 1
        given = output_size         # the error shows it as passed (a tuple, a list, a Size)
        output_size = [int(s) for s in output_size]
        if len(output_size) == non_spatial + num_spatial_dims:
            output_size = output_size[non_spatial:]
            given = given[non_spatial:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, "
                             f"output_size must have {num_spatial_dims} or "
                             f"{non_spatial + num_spatial_dims} elements (got "
                             f"{len(output_size)})")
        dil = dilation if dilation is not None else (1,) * num_spatial_dims
        mins = [(input.size(d + non_spatial) - 1) * stride[d] - 2 * padding[d]
                + dil[d] * (kernel_size[d] - 1) + 1 for d in range(num_spatial_dims)]
        maxs = [m + stride[d] - 1 for d, m in enumerate(mins)]
        for d in range(num_spatial_dims):
            if not mins[d] <= output_size[d] <= maxs[d]:
                # torch names input.size()[2:] whether or not the input is batched
                raise ValueError(f"requested an output size of {given}, but valid sizes "
                                 f"range from {mins} to {maxs} (for an input of "
                                 f"{input.shape[2:]})")
        return tuple(output_size[d] - mins[d] for d in range(num_spatial_dims))

    def forward(self, input: Tensor, output_size: Optional[Any] = None) -> Tensor:
        n = self._nd
        if input.dim() not in (n + 1, n + 2):
            raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                               f"conv_transpose{n}d, but got input of size: "
                               f"{list(input.shape)}")
        out_pad = self._output_padding(input, output_size, self.stride, self.padding,
                                       self.kernel_size, n, self.dilation)
        return type(self)._fn(input, self.weight, self.bias, self.stride, self.padding, out_pad,
                              self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution layer; ``weight`` is
    (in_channels, out_channels/groups, kernel_size); ``forward(input, output_size=None)``."""

    _nd = 1
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution layer; ``weight`` is (in_channels, out_channels/groups, kH,
    kW); ``forward(input, output_size=None)`` picks the output padding for ``output_size``."""

    _nd = 2
    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution layer; ``weight`` is
    (in_channels, out_channels/groups, kD, kH, kW)."""

    _nd = 3
    _fn = staticmethod(F.conv_transpose3d)


# ---------------------------------------------------------------------------- lazy forms
class _LazyConvXdMixin(LazyModuleMixin):
    """``in_channels`` read from the first input (dim 0 unbatched, dim 1 batched)."""

    if TYPE_CHECKING:   # the convolution's, which every subclass also derives from
        _nd: int
        in_channels: int
        out_channels: int
        groups: int
        transposed: bool
        kernel_size: tuple
        weight: Any
        bias: Any

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()  # type: ignore[misc]  # the convolution's (next in MRO)

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if self.has_uninitialized_params():
            n = self._nd
            if input.dim() not in (n + 1, n + 2):
                raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input "
                                   f"to {type(self).__name__}, but got input of size: "
                                   f"{list(input.shape)}")
            self.in_channels = input.shape[0 if input.dim() == n + 1 else 1]
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups)
            else:
                shape = (self.out_channels, self.in_channels // self.groups)
            self.weight.materialize(shape + tuple(self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy(base: type, name: str) -> type:
    transposed = issubclass(base, _ConvTransposeNd)

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, *args: Any, bias: bool = True, device: Any = None,
                 dtype: Any = None, **kwargs: Any) -> None:
        # The parent's initialization with one channel and no bias, then uninitialized
        # parameters; the channels are read from the first input.
        names: tuple
        if transposed:
            names = ("output_padding", "groups", "bias", "dilation", "padding_mode")
        else:
            names = ("dilation", "groups", "bias", "padding_mode")
        extra = dict(zip(names, args))
        if "bias" in extra:
            bias = extra.pop("bias")
        extra.update(kwargs)
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, bias=False, **extra)
        self.out_channels = out_channels
        self.in_channels = 0
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    doc = (f"``{base.__name__}`` whose ``in_channels`` is read from the first input; it "
           f"becomes a ``{base.__name__}`` then.")
    return type(name, (_LazyConvXdMixin, base),
                {"__init__": __init__, "cls_to_become": base, "__doc__": doc,
                 "__module__": __name__, "__qualname__": name})


LazyConv1d = _lazy(Conv1d, "LazyConv1d")
LazyConv2d = _lazy(Conv2d, "LazyConv2d")
LazyConv3d = _lazy(Conv3d, "LazyConv3d")
LazyConvTranspose1d = _lazy(ConvTranspose1d, "LazyConvTranspose1d")
LazyConvTranspose2d = _lazy(ConvTranspose2d, "LazyConvTranspose2d")
LazyConvTranspose3d = _lazy(ConvTranspose3d, "LazyConvTranspose3d")
