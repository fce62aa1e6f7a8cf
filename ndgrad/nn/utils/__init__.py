"""``ndgrad.nn.utils``: gradient clipping, parameter vectors, packed sequences, parametrizations
and ``stateless.functional_call``, as in ``torch.nn.utils``."""

from . import clip_grad, convert_parameters, parametrizations, parametrize, rnn, stateless  # noqa
from .clip_grad import *  # noqa: F401,F403
from .convert_parameters import *  # noqa: F401,F403
