"""The layers of ``ndgrad.nn``, one file per family as in ``torch.nn.modules``."""

from .module import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .channelshuffle import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .instancenorm import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .adaptive import *  # noqa: F401,F403
from . import (activation, adaptive, attention, batchnorm, channelshuffle, container, conv,
               distance, dropout, flatten, fold, instancenorm, linear, loss, module,
               normalization, padding, pixelshuffle, pooling, rnn, sparse, transformer,
               upsampling)

__all__ = [name for mod in (module, container, linear, flatten, conv, fold, pooling, upsampling,
                            padding, pixelshuffle, channelshuffle, activation, dropout, batchnorm,
                            instancenorm, normalization, sparse, loss, distance, rnn, attention,
                            transformer, adaptive)
           for name in mod.__all__]
