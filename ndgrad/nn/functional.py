"""``ndgrad.nn.functional``: PyTorch's ``torch.nn.functional`` (``import ndgrad.nn.functional
as F``), gathered from the nn op families (Note [nn layout] in ``ndgrad/nn/__init__.py``).

"""

from .._signatures import install_namespace
from ..ops import (nn_activation, nn_attention, nn_conv, nn_distance, nn_dropout, nn_embedding,
                   nn_linear, nn_loss, nn_norm, nn_pad, nn_pool, nn_recurrent, nn_resample)
from ..ops.nn_activation import *  # noqa: F401,F403
from ..ops.nn_attention import *  # noqa: F401,F403
from ..ops.nn_conv import *  # noqa: F401,F403
from ..ops.nn_distance import *  # noqa: F401,F403
from ..ops.nn_dropout import *  # noqa: F401,F403
from ..ops.nn_embedding import *  # noqa: F401,F403
from ..ops.nn_linear import *  # noqa: F401,F403
from ..ops.nn_loss import *  # noqa: F401,F403
from ..ops.nn_norm import *  # noqa: F401,F403
from ..ops.nn_pad import *  # noqa: F401,F403
from ..ops.nn_pool import *  # noqa: F401,F403
from ..ops.nn_recurrent import *  # noqa: F401,F403
from ..ops.nn_resample import *  # noqa: F401,F403
from ..ops import nn_conv_tbc  # compat (session 22): F.conv_tbc
from ..ops.nn_conv_tbc import *  # noqa: F401,F403

_FAMILIES = (nn_activation, nn_attention, nn_conv, nn_distance, nn_dropout, nn_embedding,
             nn_linear, nn_loss, nn_norm, nn_pad, nn_pool, nn_recurrent, nn_resample,
             nn_conv_tbc)
__all__ = [name for fam in _FAMILIES for name in fam.__all__]

for _fam in _FAMILIES:
    install_namespace(globals(), _fam.SIGNATURES, prefix=None)
del _fam
