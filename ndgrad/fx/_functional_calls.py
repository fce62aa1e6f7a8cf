"""How torch's Python-level ``nn.functional`` functions hand their call to
``__torch_function__``, which is what FX records: the first ``n`` arguments positionally and
the named ones as keywords, every omitted one at its default (``F.relu(x)`` is recorded as
``relu(x, inplace=False)``). ndgrad's functions are called with the user's arguments only, so
FX normalizes calls of these functions to torch's layout; any function not listed is recorded
with the arguments as given (torch's C-level functions behave that way).

Example:
    >>> import ndgrad.nn.functional as F
    >>> from ndgrad.fx._functional_calls import torch_layout
    >>> torch_layout(F.softmax, ("x",), {"dim": 1})
    (('x',), {'dim': 1, '_stacklevel': 3, 'dtype': None})
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Optional, Tuple

from ..nn import functional as F

__all__ = ["torch_layout"]

_LOSS = ("size_average", "reduce", "reduction")
_DROP = ("p", "training", "inplace")
_SOFTMAX = ("dim", "_stacklevel", "dtype")

# name -> (positional count, keyword names), as torch 2.13's functions pass them
LAYOUT: Dict[str, Tuple[int, Tuple[str, ...]]] = {
    "adaptive_avg_pool2d": (2, ()), "adaptive_avg_pool3d": (2, ()),
    "affine_grid": (2, ("align_corners",)),
    "alpha_dropout": (1, _DROP), "dropout": (1, _DROP), "dropout1d": (1, _DROP),
    "dropout2d": (1, _DROP), "dropout3d": (1, _DROP), "feature_alpha_dropout": (1, _DROP),
    "batch_norm": (3, ("weight", "bias", "training", "momentum", "eps")),
    "binary_cross_entropy": (2, ("weight",) + _LOSS),
    "binary_cross_entropy_with_logits": (2, ("weight",) + _LOSS + ("pos_weight",)),
    "celu": (1, ("alpha", "inplace")), "elu": (1, ("alpha", "inplace")),
    "cosine_embedding_loss": (3, ("margin",) + _LOSS),
    "cross_entropy": (2, ("weight", "size_average", "ignore_index", "reduce", "reduction",
                          "label_smoothing")),
    "ctc_loss": (4, ("blank", "reduction", "zero_infinity")),
    "embedding": (2, ("padding_idx", "max_norm", "norm_type", "scale_grad_by_freq",
                      "sparse")),
    "fold": (3, ("dilation", "padding", "stride")),
    "unfold": (2, ("dilation", "padding", "stride")),
    "gaussian_nll_loss": (3, ("full", "eps", "reduction")),
    "glu": (1, ("dim",)),
    "grid_sample": (2, ("mode", "padding_mode", "align_corners")),
    "group_norm": (2, ("weight", "bias", "eps")),
    "gumbel_softmax": (1, ("tau", "hard", "eps", "dim")),
    "hardsigmoid": (1, ("inplace",)), "hardswish": (1, ("inplace",)),
    "hardtanh": (1, ("min_val", "max_val", "inplace")),
    "hinge_embedding_loss": (2, ("margin",) + _LOSS),
    "huber_loss": (2, ("reduction", "delta", "weight")),
    "instance_norm": (1, ("running_mean", "running_var", "weight", "bias", "use_input_stats",
                          "momentum", "eps")),
    "interpolate": (1, ("size", "scale_factor", "mode", "align_corners",
                        "recompute_scale_factor", "antialias")),
    "kl_div": (2, _LOSS + ("log_target",)),
    "l1_loss": (2, _LOSS),
    "layer_norm": (2, ("weight", "bias", "eps")),
    "leaky_relu": (1, ("negative_slope", "inplace")),
    "local_response_norm": (2, ("alpha", "beta", "k")),
    "log_softmax": (1, _SOFTMAX), "softmax": (1, _SOFTMAX), "softmin": (1, _SOFTMAX),
    "lp_pool1d": (3, ("stride", "ceil_mode")), "lp_pool2d": (3, ("stride", "ceil_mode")),
    "lp_pool3d": (3, ("stride", "ceil_mode")),
    "margin_ranking_loss": (3, ("margin",) + _LOSS),
    "max_unpool1d": (3, ("stride", "padding", "output_size")),
    "max_unpool2d": (3, ("stride", "padding", "output_size")),
    "max_unpool3d": (3, ("stride", "padding", "output_size")),
    "mish": (1, ("inplace",)), "relu": (1, ("inplace",)), "relu6": (1, ("inplace",)),
    "selu": (1, ("inplace",)), "silu": (1, ("inplace",)),
    "mse_loss": (2, _LOSS + ("weight",)),
    "multi_margin_loss": (2, ("p", "margin", "weight") + _LOSS),
    "multilabel_margin_loss": (2, _LOSS),
    "multilabel_soft_margin_loss": (2, ("weight",) + _LOSS),
    "nll_loss": (2, ("weight", "size_average", "ignore_index", "reduce", "reduction")),
    "normalize": (1, ("p", "dim", "eps", "out")),
    "pad": (2, ("mode", "value")),
    "poisson_nll_loss": (2, ("log_input", "full", "size_average", "eps", "reduce",
                             "reduction")),
    "rms_norm": (2, ("weight", "eps")),
    "rrelu": (1, ("lower", "upper", "training", "inplace")),
    "smooth_l1_loss": (2, _LOSS + ("beta",)),
    "soft_margin_loss": (2, _LOSS),
    "softsign": (1, ()), "tanhshrink": (1, ()),
    "threshold": (3, ("inplace",)),
    "triplet_margin_loss": (3, ("margin", "p", "eps", "swap") + _LOSS),
    "triplet_margin_with_distance_loss": (3, ("distance_function", "margin", "swap",
                                              "reduction")),
}


def torch_layout(func: Callable, args: Tuple, kwargs: Dict[str, Any]
                 ) -> Tuple[Tuple, Dict[str, Any]]:
    """``(args, kwargs)`` of a call of ``func`` laid out as torch passes them to
    ``__torch_function__`` (unchanged when ``func`` is not one of the listed functions of
    ``nn.functional`` or its arguments do not bind)."""
    name = getattr(func, "__name__", "")
    layout = LAYOUT.get(name)
    if layout is None or not getattr(func, "__module__", "").startswith("ndgrad"):
        return args, kwargs
    if getattr(F, name, None) is not func:
        return args, kwargs
    sig: Optional[inspect.Signature]
    try:
        sig = inspect.signature(func)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return args, kwargs
    bound.apply_defaults()
    values = bound.arguments
    n, names = layout
    params = list(sig.parameters)
    if any(k not in values for k in names) or len(params) < n:
        return args, kwargs
    pos = tuple(values[p] for p in params[:n] if p in values)
    return pos, {k: values[k] for k in names}
