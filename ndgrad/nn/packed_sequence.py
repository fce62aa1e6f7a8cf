"""``ndgrad.nn.utils.rnn``: packed sequences, as ``torch.nn.utils.rnn``.

A ``PackedSequence`` holds a batch of variable-length sequences time step by time step: ``data``
stacks, for every step ``t``, the ``batch_sizes[t]`` sequences still running (sorted by
decreasing length); ``sorted_indices``/``unsorted_indices`` remember the permutation when the
input was not sorted. Packing and unpacking are one indexing op each (differentiable).

    >>> import ndgrad
    >>> from ndgrad.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    >>> x = ndgrad.arange(6.0).reshape(3, 2)        # (time, batch)
    >>> p = pack_padded_sequence(x, [3, 1])
    >>> p.data, p.batch_sizes
    (tensor([0., 1., 2., 4.]), tensor([2, 1, 1]))
    >>> pad_packed_sequence(p)[0]
    tensor([[0., 1.],
            [2., 0.],
            [4., 0.]])
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any, Iterable, List, Optional, Union

import numpy as np

from .. import _dtype
from ..ops.shape import cat
from ..tensor import Tensor, _wrap

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]

_PackedSequenceBase = namedtuple("PackedSequence",
                                 ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def invert_permutation(permutation: Optional[Tensor]) -> Optional[Tensor]:
    """The inverse of a permutation of ``0..n-1`` (None stays None)."""
    if permutation is None:
        return None
    p = np.asarray(permutation._data, dtype=np.int64)
    out = np.empty_like(p)
    out[p] = np.arange(p.size, dtype=np.int64)
    r = _wrap(out)
    return r if type(permutation) is Tensor else r.as_subclass(type(permutation))


class PackedSequence(_PackedSequenceBase):
    """A packed batch of variable-length sequences (see the module docstring). Built by
    ``pack_padded_sequence``/``pack_sequence``, accepted and returned by ``nn.RNN``/``LSTM``/
    ``GRU``."""

    def __new__(cls, data: Tensor, batch_sizes: Optional[Tensor] = None,
                sorted_indices: Optional[Tensor] = None,
                unsorted_indices: Optional[Tensor] = None) -> "PackedSequence":
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.dtype != _dtype.int64:
                raise RuntimeError("batch_sizes should always be on CPU and of dtype int64. "
                                   "Instances of PackedSequence should never be created "
                                   "manually. They should be instantiated by functions like "
                                   "pack_sequence and pack_padded_sequences in "
                                   "nn.utils.rnn. "
                                   "https://pytorch.org/docs/stable/nn.html"
                                   "#torch.nn.utils.rnn.pack_sequence")
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        # PackedSequence((data, batch_sizes)): the pair form
        data, batch_sizes = data[0], data[1]
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> "PackedSequence":
        """``data.to(...)``; the indices stay int64."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self) -> "PackedSequence":
        return self

    def double(self) -> "PackedSequence":
        return self.to(dtype=_dtype.float64)

    def float(self) -> "PackedSequence":
        return self.to(dtype=_dtype.float32)

    def half(self) -> "PackedSequence":
        return self.to(dtype=_dtype.float16)

    def long(self) -> "PackedSequence":
        return self.to(dtype=_dtype.int64)

    def int(self) -> "PackedSequence":
        return self.to(dtype=_dtype.int32)

    @property
    def is_cuda(self) -> bool:
        return False

    def is_pinned(self) -> bool:
        return False


def _lengths_array(lengths: Any) -> np.ndarray:
    if isinstance(lengths, Tensor):
        a = lengths._data
    else:
        a = np.asarray([int(v._data) if isinstance(v, Tensor) else v for v in lengths])
    return np.asarray(a).astype(np.int64).reshape(-1)


def _packed_rows(lengths: np.ndarray, T: int, B: int) -> tuple:
    """(batch_sizes, flat row index t * B + b of every packed element, in packed order) for
    lengths sorted in decreasing order."""
    steps = int(lengths[0]) if lengths.size else 0
    t = np.arange(steps)
    batch_sizes = (lengths[None, :] > t[:, None]).sum(1).astype(np.int64)
    rows = np.concatenate([k * B + np.arange(n) for k, n in enumerate(batch_sizes)]) \
        if steps else np.zeros(0, np.int64)
    return batch_sizes, rows.astype(np.int64)


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) whose sequences
    have the given lengths. With ``enforce_sorted=False`` the lengths may come in any order."""
    lens = _lengths_array(lengths)
    sorted_indices = None
    bdim = 0 if batch_first else 1
    if enforce_sorted:
        if lens.size > 1 and np.any(lens[:-1] < lens[1:]):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = _wrap(order.astype(np.int64))
        if isinstance(lengths, Tensor) and type(lengths) is not Tensor:
            sorted_indices = sorted_indices.as_subclass(type(lengths))     # torch.sort's
        input = input.index_select(bdim, sorted_indices)
    if lens.size and lens.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    if batch_first:
        input = input.transpose(0, 1)
    T, B = input.shape[0], input.shape[1]
    if lens.size != B:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lens.size} (batch_size={B})")
    if lens.size and lens[0] > T:
        raise RuntimeError(f"Expected sequence length to be at most the padded length {T}, "
                           f"but got a length of {int(lens[0])}")
    batch_sizes, rows = _packed_rows(lens, T, B)
    flat = input.reshape((T * B,) + tuple(input.shape[2:]))
    data = flat[_wrap(rows)]
    bs = _wrap(batch_sizes)
    # torch packs with one op of (input, lengths): a tensor subclass among them is the type of
    # both its results (data and batch_sizes)
    cls = next((type(t) for t in (input, lengths) if isinstance(t, Tensor) and
                type(t) is not Tensor), None)
    if cls is not None:
        data, bs = data.as_subclass(cls), bs.as_subclass(cls)
    return PackedSequence(data, bs, sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: Optional[int] = None) -> tuple:
    """Undo ``pack_padded_sequence``: ``(padded, lengths)`` with the original batch order;
    ``total_length`` pads the time dimension to that length."""
    data, batch_sizes = sequence.data, sequence.batch_sizes
    bs = np.asarray(batch_sizes._data, dtype=np.int64)
    T = int(bs.size)
    if total_length is not None:
        if total_length < T:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {T}")
        T_out = int(total_length)
    else:
        T_out = T
    B = int(bs[0]) if T else 0
    lengths = (bs[None, :] > np.arange(B)[:, None]).sum(1).astype(np.int64)
    _, rows = _packed_rows(lengths, T, B)
    rest = tuple(data.shape[1:])
    base = data.new_full((T_out * B,) + rest, padding_value)
    padded = base.index_put((_wrap(rows),), data).reshape((T_out, B) + rest)
    if batch_first:
        padded = padded.transpose(0, 1)
    lens = _wrap(lengths)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lens = _wrap(lengths[np.asarray(sequence.unsorted_indices._data, dtype=np.int64)])
    bst = sequence.batch_sizes
    if isinstance(bst, Tensor) and type(bst) is not Tensor:
        lens = lens.as_subclass(type(bst))      # torch derives them from batch_sizes
    return padded, lens


def pad_sequence(sequences: Union[Tensor, List[Tensor]], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack sequences of different lengths ``(L_i, *)`` into ``(L, B, *)`` (``(B, L, *)`` with
    ``batch_first``), padded with ``padding_value`` on the ``padding_side``."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    seqs = list(sequences.unbind(0)) if isinstance(sequences, Tensor) else list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    rest = tuple(seqs[0].shape[1:])
    for s in seqs[1:]:
        r = tuple(s.shape[1:])
        if r != rest:
            for i in range(min(len(r), len(rest)) - 1, -1, -1):
                if r[i] != rest[i]:
                    raise RuntimeError(f"The size of tensor a ({rest[i]}) must match the size "
                                       f"of tensor b ({r[i]}) at non-singleton dimension "
                                       f"{i + 1}")
            raise RuntimeError(f"The expanded size of the tensor must match the existing size: "
                               f"{rest} vs {r}")
    dt = seqs[0].dtype
    for s in seqs[1:]:
        dt = _dtype.promote_types(dt, s.dtype)
    seqs = [s if s.dtype == dt else s.to(dt) for s in seqs]
    lens = [int(s.shape[0]) for s in seqs]
    L, B = max(lens), len(seqs)
    rows = []
    for b, n in enumerate(lens):
        start = L - n if padding_side == "left" else 0
        rows.append(b * L + start + np.arange(n))
    index = np.concatenate(rows).astype(np.int64)
    data = cat(seqs, 0)
    base = data.new_full((B * L,) + rest, padding_value)
    out = base.index_put((_wrap(index),), data).reshape((B, L) + rest)
    return out if batch_first else out.transpose(0, 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Any,
                   batch_first: bool = False) -> List[Tensor]:
    """The list of sequences of ``pad_sequence``'s output, cut to their ``lengths``."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    lens = _lengths_array(lengths)
    return [seq[:int(n)] for seq, n in zip(padded_sequences.unbind(0), lens)]


def pack_sequence(sequences: Iterable[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences ``(L_i, *)`` (sorted by decreasing length unless
    ``enforce_sorted=False``)."""
    sequences = list(sequences)
    lengths = [int(v.shape[0]) for v in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> List[Tensor]:
    """The list of sequences packed in ``packed_sequences`` (in their original order)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
