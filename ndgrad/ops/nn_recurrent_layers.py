"""nn op family: whole recurrent networks as torch's top-level functions ``lstm``, ``gru``,
``rnn_tanh`` and ``rnn_relu`` (stacked layers, both directions, packed sequences), which
``nn.LSTM``/``GRU``/``RNN`` call.

Note [Recurrent networks as functions]
torch's recurrent modules check their arguments in Python, then hand the whole computation to
one call of ``torch.lstm`` (or ``gru``, ``rnn_tanh``, ``rnn_relu``) with the flat weight list,
so a ``__torch_function__`` subclass or mode sees that call (and the module returns what its
handler returns). ndgrad's modules do the same through ``nn/modules/_functional_entries.py``
(Note [Module entries]); the public names (``ndgrad.lstm`` ...) are loaded by
``nn/toplevel_compat.py`` and take part in the protocol. Each takes torch's two overloads:

    lstm(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers,
         float dropout, bool train, bool bidirectional, bool batch_first)
    lstm(Tensor data, Tensor batch_sizes, Tensor[] hx, Tensor[] params, bool has_biases,
         int num_layers, float dropout, bool train, bool bidirectional)

(``hx`` is one Tensor for the others). ``params`` holds, per layer and direction, ``w_ih, w_hh``
then ``b_ih, b_hh`` with ``has_biases``, then the LSTM's projection ``w_hr`` when ``h`` and
``c`` differ in size, as torch decides. The checks and their order follow torch's (the hidden
states' count, the parameters' count, a non-empty sequence); each layer and direction runs as
one op over the sequence (Note [Fused recurrent layers] in ``nn_recurrent.py``), packed data one
fused cell per time step.

Example:
    >>> import ndgrad
    >>> from ndgrad.ops.nn_recurrent_layers import gru
    >>> w = [ndgrad.ones(12, 3), ndgrad.ones(12, 4), ndgrad.zeros(12), ndgrad.zeros(12)]
    >>> out, h = gru(ndgrad.zeros(5, 2, 3), ndgrad.zeros(1, 2, 4), w, True, 1, 0.0, False,
    ...              False, False)
    >>> out.shape, h.shape
    (ndgrad.Size([5, 2, 4]), ndgrad.Size([1, 2, 4]))
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._signature import _as_int, _is_float, _is_int
from ..tensor import Tensor
from . import _autocast
from . import _batching as _bt
from ._batching import _vlevel as _bt_vlevel
from . import nn_linear as _lin
from . import nn_recurrent as _cells
from .nn_dropout import dropout as _dropout
from .shape import cat, stack

__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu"]

# One op per layer and direction over the whole sequence (Note [Fused recurrent layers]);
# False: one cell op per step (the tests compare both).
SEQUENCE_OPS = True

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
_TAIL = (("has_biases", "bool"), ("num_layers", "int"), ("dropout", "float"),
         ("train", "bool"), ("bidirectional", "bool"))


def _overloads(hx_type: str) -> tuple:
    """torch's two parameter lists, in the order its errors list them."""
    data = (("data", "Tensor"), ("batch_sizes", "Tensor"), ("hx", hx_type),
            ("params", "Tensor[]")) + _TAIL
    inp = (("input", "Tensor"), ("hx", hx_type), ("params", "Tensor[]")) + _TAIL + (
        ("batch_first", "bool"),)
    return data, inp


_LSTM_OVERLOADS = _overloads("Tensor[]")
_OTHER_OVERLOADS = _overloads("Tensor")
_WORDS = {"Tensor": "Tensor", "Tensor[]": "tuple of Tensors", "bool": "bool", "int": "int",
          "float": "float"}


def _fits(v: Any, kind: str) -> bool:
    if kind == "Tensor":
        return isinstance(v, Tensor)
    if kind == "Tensor[]":      # torch's parser looks at the first element only
        return isinstance(v, (tuple, list)) and (not v or isinstance(v[0], Tensor))
    if kind == "bool":
        return type(v) is bool
    if kind == "int":
        return _is_int(v)
    return _is_float(v)


def _word(v: Any) -> str:
    if isinstance(v, Tensor):
        return "Tensor"
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _bind(name: str, overloads: tuple, args: tuple, kwargs: dict) -> tuple:
    """(packed, the arguments in the matched overload's order), as torch's parser picks."""
    for packed, params in zip((True, False), overloads):
        if len(args) > len(params) or len(args) + len(kwargs) != len(params):
            continue
        names = [p for p, _ in params]
        if any(k not in names[len(args):] for k in kwargs):
            continue
        vals = list(args) + [kwargs[k] for k in names[len(args):]]
        if all(_fits(v, kind) for v, (_, kind) in zip(vals, params)):
            for pos, (v, (_, kind)) in enumerate(zip(vals, params)):
                if kind == "Tensor[]":
                    for i, e in enumerate(v):
                        if not isinstance(e, Tensor):
                            raise TypeError(f"expected Tensor as element {i} in argument "
                                            f"{pos}, but got {_word(e)}")
            return packed, vals
    got = [_word(a) for a in args] + [f"{k}={_word(v)}" for k, v in kwargs.items()]
    lines = "".join(" * (" + ", ".join(f"{_WORDS[kind]} {p}" for p, kind in params) + ")\n"
                    for params in overloads)
    raise TypeError(f"{name}() received an invalid combination of arguments - got "
                    f"({', '.join(got)}), but expected one of:\n{lines}")


def _dim_error(t: Tensor, d: int) -> IndexError:
    n = max(t.ndim, 1)
    return IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but "
                      f"got {d})")


def _mat_error(a: tuple, w: Tensor) -> RuntimeError:
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a[0]}x{a[1]} and "
                        f"{w.shape[1]}x{w.shape[0]})")


def _expand_error(b: Tensor, target: tuple) -> RuntimeError:
    return RuntimeError(f"The expanded size of the tensor ({target[1]}) must match the existing "
                        f"size ({b.shape[0]}) at non-singleton dimension 1.  Target sizes: "
                        f"[{target[0]}, {target[1]}].  Tensor sizes: [{b.shape[0]}]")


def _check_direction(kind: str, x: Tensor, h: Tensor, c: Any, p: list, has_biases: bool,
                     proj: bool) -> None:
    """The shapes and dtypes one direction's matmuls and additions need, refused with the
    errors torch's would raise (its modules check these before the call; a direct call
    may not)."""
    w_ih, w_hh = p[0], p[1]
    rows = x.shape[0] if x.ndim == 2 else x.shape[0] * x.shape[1]
    for a, w in ((x, w_ih), (h, w_hh)):
        if a.dtype != w.dtype:
            raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                               f"{a.dtype._torch_name} and {w.dtype._torch_name}")
    if w_ih.ndim != 2 or w_hh.ndim != 2 or h.ndim != 2:
        raise RuntimeError("recurrent weights must be 2-D and hidden states 3-D")
    if x.shape[-1] != w_ih.shape[1]:
        raise _mat_error((rows, x.shape[-1]), w_ih)
    B = h.shape[0]
    if h.shape[1] != w_hh.shape[1]:
        raise _mat_error((B, h.shape[1]), w_hh)
    if x.ndim == 3 and B != x.shape[1]:
        raise RuntimeError(f"The size of tensor a ({B}) must match the size of tensor b "
                           f"({x.shape[1]}) at non-singleton dimension 0")
    if c is not None and c.shape[0] != B:
        raise RuntimeError(f"The size of tensor a ({B}) must match the size of tensor b "
                           f"({c.shape[0]}) at non-singleton dimension 0")
    if has_biases:
        for b, target in ((p[2], (rows, w_ih.shape[0])), (p[3], (B, w_hh.shape[0]))):
            if b.ndim != 1 or b.shape[0] != target[1]:
                raise _expand_error(b, target)
    if w_ih.shape[0] != w_hh.shape[0]:
        raise RuntimeError(f"The size of tensor a ({w_ih.shape[0]}) must match the size of "
                           f"tensor b ({w_hh.shape[0]}) at non-singleton dimension 1")
    G = GATES[kind]
    H = c.shape[1] if c is not None else w_hh.shape[1]
    if w_hh.shape[0] != G * H or (c is not None and not proj and H != h.shape[1]):
        raise _mat_error((B, w_hh.shape[0] // G), w_hh)
    if proj and (p[-1].ndim != 2 or p[-1].shape[1] != H or p[-1].shape[0] != h.shape[1]):
        raise _mat_error((B, H), p[-1])


def _direction(kind: str, x: Tensor, h: Tensor, c: Any, p: list, has_biases: bool,
               proj: bool, reverse: bool, batch_sizes: Optional[list]) -> tuple:
    """One layer in one direction over the whole sequence: (outputs, h_last, c_last).
    ``x`` is (T, B, I) or packed data (N, I) with ``batch_sizes``; ``p`` the direction's
    parameters."""
    w_ih, w_hh = p[0], p[1]
    b_ih = p[2] if has_biases else None
    b_hh = p[3] if has_biases else None
    w_hr = p[-1] if proj else None
    if _autocast.active and (kind != "gru" and not proj and (
            kind != "lstm" or batch_sizes is None)):
        # Note [Autocast]: PyTorch's CPU LSTM layer (unpacked, no projection) and its
        # Elman RNN layers run in the region's dtype; its GRU and the others do not
        x, h, c, w_ih, w_hh, b_ih, b_hh = _autocast.lower(x, h, c, w_ih, w_hh, b_ih, b_hh)
    _check_direction(kind, x, h, c, [w_ih, w_hh] + ([b_ih, b_hh] if has_biases else []) + (
        [w_hr] if proj else []), has_biases, proj)
    if batch_sizes is None and SEQUENCE_OPS:
        res = _cells.recurrent_layer(kind, x, h, c, w_ih, w_hh, b_ih, b_hh, reverse, w_hr)
        return res if kind == "lstm" else res + (None,)
    gx = _lin.linear(x, w_ih, b_ih)
    steps = list(gx.unbind(0)) if batch_sizes is None else list(gx.split(batch_sizes, 0))
    T = len(steps)
    order = range(T - 1, -1, -1) if reverse else range(T)
    outs: list = [None] * T
    lstm_ = kind == "lstm"
    done_h: list = []
    done_c: list = []
    h0, c0 = h, c
    cur = h.shape[0]
    if batch_sizes is not None and reverse and T:
        cur = batch_sizes[-1]
        h = h0[:cur]
        if lstm_:
            c = c0[:cur]
    for t in order:
        if batch_sizes is not None:
            n = batch_sizes[t]
            if n < cur:      # forward: sequences end; keep their last state
                done_h.append(h[n:])
                h = h[:n]
                if lstm_:
                    done_c.append(c[n:])
                    c = c[:n]
            elif n > cur:    # reverse: sequences start from the initial state
                h = cat([h, h0[cur:n]], 0)
                if lstm_:
                    c = cat([c, c0[cur:n]], 0)
            cur = n
        if lstm_:
            hf, c = _cells.lstm_cell(steps[t], (h, c), None, w_hh, None, b_hh)
            h = hf if w_hr is None else hf.matmul(w_hr.t())
        elif kind == "gru":
            h = _cells.gru_cell(steps[t], h, None, w_hh, None, b_hh)
        elif kind == "rnn_tanh":
            h = _cells.rnn_tanh_cell(steps[t], h, None, w_hh, None, b_hh)
        else:
            h = _cells.rnn_relu_cell(steps[t], h, None, w_hh, None, b_hh)
        outs[t] = h
    out = stack(outs, 0) if batch_sizes is None else cat(outs, 0)
    if done_h:
        h = cat([h] + done_h[::-1], 0)
        if lstm_:
            c = cat([c] + done_c[::-1], 0)
    return out, h, c


def _network(kind: str, packed: bool, vals: list) -> tuple:
    """The stacked network of ``kind`` on the bound arguments ``vals``: (output, h_n[, c_n])."""
    # torch has no batching rule for its recurrent networks (only for the cells): under vmap
    # any batched input, state or weight is refused
    for v in vals:
        for t in (v if isinstance(v, (tuple, list)) else (v,)):
            if isinstance(t, Tensor) and t._blevel and _bt_vlevel(t):
                raise _bt.VmapError(_bt._NO_FALLBACK.format(
                    f"{kind}.{'data' if packed else 'input'}"))
    if packed:
        x, bs_t, hx, params, has_biases, num_layers, p_drop, train, bidir = vals
        batch_first = False
    else:
        x, hx, params, has_biases, num_layers, p_drop, train, bidir, batch_first = vals
        bs_t = None
    num_layers, p_drop = _as_int(num_layers), float(p_drop)
    lstm_ = kind == "lstm"
    if lstm_:
        if len(hx) != 2:
            raise RuntimeError("lstm expects two hidden states")
        h0, c0 = hx
        for t in (h0, c0):
            if t.ndim < 3:
                raise _dim_error(t, 2)
        proj = h0.shape[2] != c0.shape[2]
    else:
        h0, c0, proj = hx, None, False
    per = (4 if has_biases else 2) + (1 if proj else 0)
    if len(params) % per:
        raise RuntimeError("got an incorrect number of RNN parameters")
    groups = [list(params[i:i + per]) for i in range(0, len(params), per)]
    hs = h0.unbind(0) if h0.ndim else ()
    cs = c0.unbind(0) if c0 is not None else None
    D = 2 if bidir else 1
    if bidir and (len(groups) % 2 or len(hs) % 2):
        raise RuntimeError("Odd number of params or hiddens given to a bidirectional RNN")
    if len(hs) != num_layers * D:
        raise RuntimeError("Expected more hidden states in stacked_rnn")
    if len(groups) != num_layers * D:
        raise RuntimeError("Expected more weights in stacked_rnn")
    if packed:
        if bs_t._data.dtype != np.int64:
            raise RuntimeError(f"expected scalar type Long but found "
                               f"{bs_t.dtype._torch_name}")
        bs: Optional[list] = [int(v) for v in bs_t._data.reshape(-1)]
        if x.ndim < 2:
            raise _dim_error(x, 1)
    else:
        bs = None
        if x.ndim == 2:
            raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but "
                             "got 1)")
        if x.ndim < 2:
            raise RuntimeError("chunk expects at least a 1-dimensional tensor")
        if batch_first:
            x = x.transpose(0, 1)
        if not x.shape[0]:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    h_n, c_n = [], []
    layer_in = x
    for layer in range(num_layers):
        outs = []
        for d in range(D):
            k = layer * D + d
            out, h, c = _direction(kind, layer_in, hs[k], cs[k] if cs is not None else None,
                                   groups[k], has_biases, proj, d == 1, bs)
            outs.append(out)
            h_n.append(h)
            c_n.append(c)
        layer_in = outs[0] if D == 1 else cat(outs, -1)
        if p_drop and train and layer < num_layers - 1:
            layer_in = _dropout(layer_in, p_drop, True)
    if batch_first:
        layer_in = layer_in.transpose(0, 1)
    if lstm_:
        return layer_in, stack(h_n, 0), stack(c_n, 0)
    return layer_in, stack(h_n, 0)


def lstm(*args: Any, **kwargs: Any) -> tuple:
    """A stacked LSTM over a sequence, as ``torch.lstm`` (Note [Recurrent networks as
    functions]): ``(output, h_n, c_n)``; ``hx`` is ``(h_0, c_0)``.

    >>> import ndgrad
    >>> w = [ndgrad.ones(16, 3), ndgrad.ones(16, 4)]
    >>> out, h, c = lstm(ndgrad.zeros(5, 2, 3), (ndgrad.zeros(1, 2, 4), ndgrad.zeros(1, 2, 4)),
    ...                  w, False, 1, 0.0, False, False, False)
    >>> out.shape, c.shape
    (ndgrad.Size([5, 2, 4]), ndgrad.Size([1, 2, 4]))
    """
    packed, vals = _bind("lstm", _LSTM_OVERLOADS, args, kwargs)
    return _network("lstm", packed, vals)


def gru(*args: Any, **kwargs: Any) -> tuple:
    """A stacked GRU over a sequence, as ``torch.gru``: ``(output, h_n)``.

    >>> import ndgrad
    >>> w = [ndgrad.ones(12, 3), ndgrad.ones(12, 4)]
    >>> gru(ndgrad.zeros(2, 5, 3), ndgrad.zeros(1, 2, 4), w, False, 1, 0.0, False, False,
    ...     True)[0].shape
    ndgrad.Size([2, 5, 4])
    """
    packed, vals = _bind("gru", _OTHER_OVERLOADS, args, kwargs)
    return _network("gru", packed, vals)


def rnn_tanh(*args: Any, **kwargs: Any) -> tuple:
    """A stacked Elman RNN with tanh over a sequence, as ``torch.rnn_tanh``: ``(output,
    h_n)``.

    >>> import ndgrad
    >>> w = [ndgrad.ones(4, 3), ndgrad.ones(4, 4)]
    >>> rnn_tanh(ndgrad.zeros(5, 2, 3), ndgrad.zeros(1, 2, 4), w, False, 1, 0.0, False,
    ...          False, False)[1].shape
    ndgrad.Size([1, 2, 4])
    """
    packed, vals = _bind("rnn_tanh", _OTHER_OVERLOADS, args, kwargs)
    return _network("rnn_tanh", packed, vals)


def rnn_relu(*args: Any, **kwargs: Any) -> tuple:
    """A stacked Elman RNN with relu over a sequence, as ``torch.rnn_relu``: ``(output,
    h_n)``.

    >>> import ndgrad
    >>> w = [ndgrad.ones(4, 3), ndgrad.ones(4, 4)]
    >>> rnn_relu(ndgrad.zeros(5, 2, 3), ndgrad.zeros(1, 2, 4), w, False, 1, 0.0, False,
    ...          False, False)[1].shape
    ndgrad.Size([1, 2, 4])
    """
    packed, vals = _bind("rnn_relu", _OTHER_OVERLOADS, args, kwargs)
    return _network("rnn_relu", packed, vals)
