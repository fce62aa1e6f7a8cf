"""``ndgrad.nn.utils.rnn``: packed and padded sequences, as ``torch.nn.utils.rnn`` (the
implementation lives in ``ndgrad/nn/packed_sequence.py``, below the recurrent modules that take
``PackedSequence`` input, so no import runs in a circle).

Example:
    >>> import ndgrad
    >>> from ndgrad.nn.utils.rnn import pad_sequence
    >>> pad_sequence([ndgrad.ones(2), ndgrad.ones(1)]).shape
    ndgrad.Size([2, 2])
"""

from ..packed_sequence import *  # noqa: F401,F403
from ..packed_sequence import __all__  # noqa: F401
