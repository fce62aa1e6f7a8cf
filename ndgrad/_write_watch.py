"""Functions told of every array an in-place write is about to change.

Note [Write watchers]
Some state outlives a forward and must notice when memory it derives from is overwritten in
ways the version counter alone does not settle: a convolution's kept input columns
(ops/nn_conv.py, Note [Forward columns]) and ``allow_mutation_on_saved_tensors``, which copies
a saved tensor before its first in-place change (autograd/graph.py). Each registers a watcher
under its name here; ``watch`` is then one callable calling them all (None while none is
registered, so the writers pay one module-attribute test). Writers call ``watch(array)``
BEFORE writing: in-place ops (``views_inplace._check_inplace``, which also keeps the
unrecorded ``+=`` fast path off while a watcher exists), ``out=`` writes (``_out._write``) and
the optimizers' direct updates of parameters (``optim.optimizer.params_with_grad``).

>>> seen = []
>>> set_watcher("doc", lambda arr: seen.append(arr.shape))
>>> import ndgrad
>>> _ = ndgrad.zeros(2).add_(1)
>>> set_watcher("doc", None)
>>> seen, watch is None
([(2,)], True)
"""

from __future__ import annotations

from typing import Callable, Dict, Optional

import numpy as np

__all__ = ["watch", "set_watcher"]

Watcher = Callable[[np.ndarray], None]

watch: Optional[Watcher] = None
_watchers: Dict[str, Watcher] = {}


def set_watcher(name: str, fn: Optional[Watcher]) -> None:
    """Register ``fn`` as the watcher called ``name`` (None removes it)."""
    global watch
    if fn is None:
        _watchers.pop(name, None)
    else:
        _watchers[name] = fn
    fns = tuple(_watchers.values())
    if not fns:
        watch = None
    elif len(fns) == 1:
        watch = fns[0]
    else:
        def watch_all(arr: np.ndarray) -> None:
            for f in fns:
                f(arr)
        watch = watch_all
