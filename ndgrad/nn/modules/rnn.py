"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` (stacked, bidirectional, packed sequences) and the
single-step ``RNNCell``, ``LSTMCell``, ``GRUCell``, as in ``torch.nn.modules.rnn``: same
constructor arguments, parameter names and order (``weight_ih_l0``, ``weight_hh_l0_reverse``,
``weight_hr_l0`` ...), initialization U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), errors.

The modules check their arguments, then call ``ndgrad.lstm``/``gru``/``rnn_tanh``/``rnn_relu``
once with the flat weights, as torch's call ``torch.lstm`` ... (Note [Recurrent networks as
functions] in ops/nn_recurrent_layers.py): each layer and direction runs as one op over all time
steps (Note [Fused recurrent layers] in ops/nn_recurrent.py); packed sequences project the whole
input with one ``linear``, then run one fused cell op per time step (Note [Fused recurrent
cells]).

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> lstm = nn.LSTM(3, 4, num_layers=2)
    >>> out, (h, c) = lstm(ndgrad.ones(5, 2, 3))
    >>> out.shape, h.shape
    (ndgrad.Size([5, 2, 4]), ndgrad.Size([2, 2, 4]))
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, List, Optional

from ... import _creation, _dtype
from ...tensor import Tensor
from .. import init
from ..parameter import Parameter
from ..packed_sequence import PackedSequence
from . import _functional_entries as _entries
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
_KIND = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu"}
_NAMES = {"LSTM": "LSTM", "GRU": "GRU", "RNN_TANH": "RNN", "RNN_RELU": "RNN"}
_NETWORKS = {"LSTM": _entries.lstm, "GRU": _entries.gru, "RNN_TANH": _entries.rnn_tanh,
             "RNN_RELU": _entries.rnn_relu}


def _apply_permutation(t: Tensor, permutation: Tensor, dim: int = 1) -> Tensor:
    return t.index_select(dim, permutation)


class RNNBase(Module):
    """The common base of ``RNN``, ``LSTM`` and ``GRU`` (``mode`` is ``"RNN_TANH"``,
    ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``)."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or \
                not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: "
                            f"{type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: "
                            f"{type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        fk = {"device": device, "dtype": dtype}
        num_directions = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: List[str] = []
        self._all_weights: List[List[str]] = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                params: list = [("weight_ih_l{}{}", (gate_size, layer_input)),
                          ("weight_hh_l{}{}", (gate_size, real_hidden))]
                if bias:
                    params += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    params += [("weight_hr_l{}{}", (proj_size, hidden_size))]
                names = []
                for fmt, shape in params:
                    name = fmt.format(layer, suffix)
                    setattr(self, name, Parameter(_creation.empty(shape, **fk)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    # ------------------------------------------------------------------ weights
    @property
    def _flat_weights(self) -> list:
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> List[List[Parameter]]:
        """The parameters of each layer and direction, in torch's order."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op (PyTorch packs the weights into one buffer for cuDNN)."""

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ------------------------------------------------------------------ checks
    def check_input(self, input: Tensor, batch_sizes: Optional[Tensor]) -> None:
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w.dtype}). Convert input: input.to({w.dtype}), or convert "
                             f"model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.ndim != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.ndim}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes: Optional[Tensor]) -> tuple:
        if batch_sizes is not None:
            mini_batch = int(batch_sizes._data[0])
        else:
            mini_batch = input.shape[0] if self.batch_first else input.shape[1]
        d = 2 if self.bidirectional else 1
        h = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * d, mini_batch, h)

    def check_hidden_size(self, hx: Tensor, expected: tuple,
                          msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(msg.format(tuple(expected), list(hx.shape)))

    def check_forward_args(self, input: Tensor, hidden: Tensor,
                           batch_sizes: Optional[Tensor]) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Any, permutation: Optional[Tensor]) -> Any:
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    def _forward(self, input: Any, hx: Any) -> tuple:
        lstm = self.mode == "LSTM"
        name = _NAMES[self.mode]
        D = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        packed = isinstance(input, PackedSequence)
        if packed:
            x, batch_sizes_t, sorted_indices, unsorted_indices = input
            bs = [int(v) for v in batch_sizes_t._data]
            max_batch = bs[0]
            is_batched = True
        else:
            x = input
            batch_sizes_t, bs, sorted_indices, unsorted_indices = None, None, None, None
            if x.ndim not in (2, 3):
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {x.ndim}D instead")
            is_batched = x.ndim == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                x = x.unsqueeze(batch_dim)
            max_batch = x.shape[0] if self.batch_first else x.shape[1]
        c0: Any                 # the LSTM's cell state (None for RNN and GRU)
        if hx is None:
            dt = x.dtype
            h0 = _creation.zeros(self.num_layers * D, max_batch, real_hidden, dtype=dt)
            c0 = _creation.zeros(self.num_layers * D, max_batch, self.hidden_size,
                                 dtype=dt) if lstm else None
        else:
            if lstm:
                if isinstance(hx, Tensor):
                    # torch reads hx[0] and hx[1] (the IndexError of a single row)
                    h0, c0 = hx[0], hx[1]
                elif not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    if isinstance(hx, (tuple, list)) and len(hx) < 2:
                        hx[1]           # torch reads hx[1] first: Python's IndexError
                    raise RuntimeError("lstm expects two hidden states")
                else:
                    h0, c0 = hx
            else:
                h0, c0 = hx, None
            if not packed:
                want = 3 if is_batched else 2
                if lstm:
                    if h0.ndim != want or c0.ndim != want:
                        kind = "batched 3-D" if is_batched else "unbatched 2-D"
                        raise RuntimeError(f"For {kind} input, hx and cx should also be "
                                           f"{want}-D but got ({h0.ndim}-D, {c0.ndim}-D) "
                                           f"tensors")
                elif h0.ndim != want:
                    kind = "batched 3-D" if is_batched else "unbatched 2-D"
                    raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got "
                                       f"{h0.ndim}-D tensor")
                if not is_batched:
                    h0 = h0.unsqueeze(1)
                    if lstm:
                        c0 = c0.unsqueeze(1)
        self.check_input(x, batch_sizes_t)
        exp_h = self.get_expected_hidden_size(x, batch_sizes_t)
        if lstm:
            self.check_hidden_size(h0, exp_h, "Expected hidden[0] size {}, got {}")
            exp_c = exp_h[:2] + (self.hidden_size,)
            self.check_hidden_size(c0, exp_c, "Expected hidden[1] size {}, got {}")
        else:
            self.check_hidden_size(h0, exp_h)
        if hx is not None and sorted_indices is not None:
            h0 = _apply_permutation(h0, sorted_indices)
            if lstm:
                c0 = _apply_permutation(c0, sorted_indices)
        # one call of the public function (Note [Recurrent networks as functions])
        fn = _NETWORKS[self.mode]
        state = (h0, c0) if lstm else h0
        if packed:
            res = fn(x, batch_sizes_t, state, self._flat_weights, self.bias, self.num_layers,
                     self.dropout, self.training, self.bidirectional)
        else:
            res = fn(x, state, self._flat_weights, self.bias, self.num_layers, self.dropout,
                     self.training, self.bidirectional, self.batch_first)
        out, h_n = res[0], res[1]
        c_n: Any = res[2] if lstm else None
        if unsorted_indices is not None:
            h_n = _apply_permutation(h_n, unsorted_indices)
            if lstm:
                c_n = _apply_permutation(c_n, unsorted_indices)
        hidden = (h_n, c_n) if lstm else h_n
        if packed:
            return PackedSequence(out, batch_sizes_t, sorted_indices, unsorted_indices), hidden
        if not is_batched:
            out = out.squeeze(0 if self.batch_first else 1)
            hidden = (h_n.squeeze(1), c_n.squeeze(1)) if lstm else h_n.squeeze(1)
        return out, hidden

    def forward(self, input: Any, hx: Any = None) -> tuple:
        return self._forward(input, hx)


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (``relu`` with
    ``nonlinearity="relu"``). Arguments: ``input_size, hidden_size, num_layers=1,
    nonlinearity="tanh", bias=True, batch_first=False, dropout=0.0, bidirectional=False``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             f"or 'relu'.")
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o); ``proj_size > 0`` projects ``h`` with
    ``weight_hr``. ``forward(input, (h_0, c_0)=None) -> output, (h_n, c_n)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes: Optional[Tensor]) -> tuple:
        e = self.get_expected_hidden_size(input, batch_sizes)
        return e[:2] + (self.hidden_size,)


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n as PyTorch's). ``forward(input, h_0=None) ->
    output, h_n``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# ---------------------------------------------------------------------------- cells
class RNNCellBase(Module):
    """The common base of the single-step cells."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(_creation.empty((num_chunks * hidden_size, input_size), **fk))
        self.weight_hh = Parameter(_creation.empty((num_chunks * hidden_size, hidden_size), **fk))
        if bias:
            self.bias_ih = Parameter(_creation.empty(num_chunks * hidden_size, **fk))
            self.bias_hh = Parameter(_creation.empty(num_chunks * hidden_size, **fk))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _check_cell(self, input: Tensor, hs: tuple) -> None:
        if input.shape[1] != self.weight_ih.shape[1]:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} "
                               f"expected {self.weight_ih.shape[1]}")
        for i, h in enumerate(hs):
            if input.shape[0] != h.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{i} "
                                   f"batch size {h.shape[0]}")
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.shape[1]}, "
                                   f"expected {self.hidden_size}")
        w = self.weight_ih
        for t in (input,) + hs:
            if t.dtype != w.dtype:
                n = {_dtype.float64: "Double", _dtype.float32: "Float",
                     _dtype.float16: "Half", _dtype.bfloat16: "BFloat16"}
                raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                                   f"{n.get(t.dtype, t.dtype)} and {n.get(w.dtype, w.dtype)}")


def _cell_prep(name: str, input: Tensor, hx: Optional[Tensor], hidden: int,
               what: str = "hidden") -> tuple:
    if input.ndim not in (1, 2):
        raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
    if hx is not None and hx.ndim not in (1, 2):
        raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {hx.ndim}D instead")
    batched = input.ndim == 2
    if not batched:
        input = input.unsqueeze(0)
    if hx is None:
        hx = _creation.zeros(input.shape[0], hidden, dtype=input.dtype)
    elif not batched:
        hx = hx.unsqueeze(0)
    return input, hx, batched


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        input, hx, batched = _cell_prep("RNNCell", input, hx, self.hidden_size)
        self._check_cell(input, (hx,))
        if self.nonlinearity == "tanh":
            fn = _entries.rnn_tanh_cell
        elif self.nonlinearity == "relu":
            fn = _entries.rnn_relu_cell
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        out = fn(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: ``forward(input, (h, c)=None) -> (h', c')``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: Any = None) -> tuple:
        if input.ndim not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.ndim}D "
                             f"instead")
        if hx is not None:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise RuntimeError("lstm_cell expects two hidden states")
            for i in range(2):
                if hx[i].ndim not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{i}] to be 1D or 2D, got "
                                     f"{hx[i].ndim}D instead")
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            z = _creation.zeros(input.shape[0], self.hidden_size, dtype=input.dtype)
            h, c = z, z
        else:
            h, c = hx
            if not batched:
                h, c = h.unsqueeze(0), c.unsqueeze(0)
        self._check_cell(input, (h, c))
        h1, c1 = _entries.lstm_cell(input, (h, c), self.weight_ih, self.weight_hh,
                                    self.bias_ih, self.bias_hh)
        if not batched:
            return h1.squeeze(0), c1.squeeze(0)
        return h1, c1


class GRUCell(RNNCellBase):
    """One GRU step: ``forward(input, h=None) -> h'``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        input, hx, batched = _cell_prep("GRUCell", input, hx, self.hidden_size)
        self._check_cell(input, (hx,))
        out = _entries.gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih,
                                self.bias_hh)
        return out if batched else out.squeeze(0)
