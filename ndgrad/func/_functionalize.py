"""``func.functionalize`` and ``func.replace_all_batch_norm_modules_``.

ndgrad runs eagerly and has no graph capture to rewrite, so ``functionalize(f)`` is a
function with ``f``'s results (and effects on its inputs: torch's functionalized program
copies mutations back into the inputs too). ``replace_all_batch_norm_modules_`` makes every
batch-norm module of a tree use batch statistics only, so that it can run under ``vmap``.

Example:
    >>> import ndgrad
    >>> from ndgrad.func import functionalize
    >>> def f(x):
    ...     y = x.clone()
    ...     y.add_(1)
    ...     return y
    >>> functionalize(f)(ndgrad.zeros(2)).tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["functionalize", "replace_all_batch_norm_modules_"]

_REMOVE = ("mutations", "mutations_and_views")


def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable[..., Any]:
    """``func`` with torch's ``functionalize`` contract (same results, same effects on its
    inputs); ``remove`` is ``'mutations'`` or ``'mutations_and_views'``."""
    if remove not in _REMOVE:
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove="
            f"{remove}. Valid options are:\n     remove='mutations': all inplace and out= "
            "operators will be removed from the program, and replaced with their out-of-place "
            "equivalents.\n     remove='mutations_and_views': In addition to the above, all "
            "aliasing operators {view} will be replaced with their non-aliasing counterparts, "
            "{view}_copy.\n")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)
    return wrapped


def replace_all_batch_norm_modules_(root: Any) -> Any:
    """In place: every batch-norm module under ``root`` (``root`` included) stops tracking
    running statistics (``running_mean``, ``running_var`` and ``num_batches_tracked`` become
    None). Returns ``root``."""
    for module in root.modules():
        if _is_batch_norm(module):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def _is_batch_norm(module: Any) -> bool:
    # BatchNorm1d/2d/3d and SyncBatchNorm (the classes of nn.modules.batchnorm), found by their
    # base class's name so that ndgrad.func need not import nn
    return any(c.__name__ == "_BatchNorm" and c.__module__.endswith("modules.batchnorm")
               for c in type(module).__mro__)
