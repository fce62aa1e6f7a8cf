"""The ``nn.functional`` entries the modules call (Note [Module entries]).

Note [Module entries]
torch's modules call the public ``F.linear``, ``F.conv2d`` ..., which take part in the
``__torch_function__`` protocol: a Tensor subclass or tensor-like input, or an active
``TorchFunctionMode``, sees ``F.linear`` and decides the result (the subclass comes back out of
``nn.Linear``). ndgrad's public ``F`` functions are checking wrappers, and a module has checked
its arguments at construction, so the modules call the implementation behind each wrapper
through ``entry`` instead: it costs a scan of the argument types and dispatches as the public
function would when some argument overrides or a mode is live. A module calling an op family
directly (``ndgrad.ops.nn_linear``) would skip the protocol: call these.

>>> import ndgrad
>>> from ndgrad.nn.modules import _functional_entries as F
>>> class Tagged(ndgrad.Tensor):
...     pass
>>> type(F.linear(ndgrad.ones(2, 3).as_subclass(Tagged), ndgrad.ones(4, 3))).__name__
'Tagged'
"""

from __future__ import annotations

from ..._torch_function import entry
from ...ops import nn_recurrent as _cells
from ...ops import nn_recurrent_layers as _layers
from .. import functional as _F
from .. import toplevel_compat as _top

linear = entry(_F.linear)
bilinear = entry(_F.bilinear)
conv1d = entry(_F.conv1d)
conv2d = entry(_F.conv2d)
conv3d = entry(_F.conv3d)
conv_transpose1d = entry(_F.conv_transpose1d)
conv_transpose2d = entry(_F.conv_transpose2d)
conv_transpose3d = entry(_F.conv_transpose3d)
fold = entry(_F.fold)
unfold = entry(_F.unfold)
pad = entry(_F.pad)
batch_norm = entry(_F.batch_norm)
instance_norm = entry(_F.instance_norm)
group_norm = entry(_F.group_norm)
layer_norm = entry(_F.layer_norm)
local_response_norm = entry(_F.local_response_norm)
rms_norm = entry(_F.rms_norm)
embedding = entry(_F.embedding)
embedding_bag = entry(_F.embedding_bag)
interpolate = entry(_F.interpolate)
multi_head_attention_forward = entry(_F.multi_head_attention_forward)
adaptive_avg_pool1d = entry(_F.adaptive_avg_pool1d)
adaptive_avg_pool2d = entry(_F.adaptive_avg_pool2d)
adaptive_avg_pool3d = entry(_F.adaptive_avg_pool3d)
adaptive_max_pool1d = entry(_F.adaptive_max_pool1d)
adaptive_max_pool2d = entry(_F.adaptive_max_pool2d)
adaptive_max_pool3d = entry(_F.adaptive_max_pool3d)
avg_pool1d = entry(_F.avg_pool1d)
avg_pool2d = entry(_F.avg_pool2d)
avg_pool3d = entry(_F.avg_pool3d)
fractional_max_pool2d = entry(_F.fractional_max_pool2d)
fractional_max_pool3d = entry(_F.fractional_max_pool3d)
lp_pool1d = entry(_F.lp_pool1d)
lp_pool2d = entry(_F.lp_pool2d)
lp_pool3d = entry(_F.lp_pool3d)
max_pool1d = entry(_F.max_pool1d)
max_pool2d = entry(_F.max_pool2d)
max_pool3d = entry(_F.max_pool3d)
max_unpool1d = entry(_F.max_unpool1d)
max_unpool2d = entry(_F.max_unpool2d)
max_unpool3d = entry(_F.max_unpool3d)
# the cells are torch's top-level functions (``torch.lstm_cell``)
rnn_tanh_cell = entry(_top.rnn_tanh_cell, _cells.rnn_tanh_cell)
rnn_relu_cell = entry(_top.rnn_relu_cell, _cells.rnn_relu_cell)
lstm_cell = entry(_top.lstm_cell, _cells.lstm_cell)
gru_cell = entry(_top.gru_cell, _cells.gru_cell)
# the whole networks (Note [Recurrent networks as functions])
lstm = entry(_top.lstm, _layers.lstm)
gru = entry(_top.gru, _layers.gru)
rnn_tanh = entry(_top.rnn_tanh, _layers.rnn_tanh)
rnn_relu = entry(_top.rnn_relu, _layers.rnn_relu)
