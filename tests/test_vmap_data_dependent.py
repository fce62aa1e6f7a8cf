"""Data-dependent functions under ``vmap`` behave as under ``torch.func.vmap``: the ones torch
refuses (boolean-mask indexing with a batched mask, ``masked_select`` over a batched mask,
``nonzero``, ``unique``, ``where(condition)``, ``equal``, ``allclose``, ``.item()``) raise its
errors, and the ones it runs per entry (``bincount``, ``repeat_interleave``, constant masks)
give its results, or its stacking error when the entries' shapes differ."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ndgrad

LIBS = (ndgrad, torch)

CASES = {
    "masked_select batched mask": lambda L, t: L.masked_select(t, t > 1),
    "masked_select method": lambda L, t: t.masked_select(t > 1),
    "masked_select batched mask only": lambda L, t: L.masked_select(L.ones(3), t > 1),
    "masked_select constant mask": lambda L, t: L.masked_select(t, L.tensor([True, False, True])),
    "bool index": lambda L, t: t[t > 1],
    "bool index after ellipsis": lambda L, t: t[..., t > 1],
    "bool index constant mask": lambda L, t: t[L.tensor([True, False, True])],
    "0-d bool index": lambda L, t: t[L.tensor(True)],
    "index_put batched mask": lambda L, t: t.index_put((t > 1,), L.tensor(0.0)),
    "setitem batched mask": lambda L, t: _set(t, t > 1),
    "setitem constant mask": lambda L, t: _set(t, L.tensor([True, False, True])),
    "masked_fill": lambda L, t: t.masked_fill(t > 1, 0),
    "nonzero": lambda L, t: L.nonzero(t),
    "nonzero as_tuple": lambda L, t: L.nonzero(t, as_tuple=True)[0],
    "where(condition)": lambda L, t: L.where(t > 0)[0],
    "where 3 args": lambda L, t: L.where(t > 1, t, 0.0),
    "unique": lambda L, t: L.unique(t),
    "unique dim": lambda L, t: L.unique(t[None], dim=0),
    "unique_consecutive": lambda L, t: L.unique_consecutive(t),
    "equal": lambda L, t: L.tensor(L.equal(t, t)),
    "allclose": lambda L, t: L.tensor(L.allclose(t, t)),
    "allclose unbatched": lambda L, t: t * L.allclose(L.ones(1), L.ones(1)),
    "item": lambda L, t: L.tensor(t.sum().item()),
    "bincount same sizes": lambda L, t: L.bincount(t.long()),
    "bincount other sizes": lambda L, t: L.bincount(t.long() * L.tensor([1, 1, 2])),
    "repeat_interleave other sizes": lambda L, t: L.repeat_interleave(L.ones(3), t.long()),
    "repeat_interleave same sizes": lambda L, t: L.repeat_interleave(t, L.tensor([1, 2, 1])),
}


def _set(t, mask):
    t = t.clone()
    t[mask] = 0
    return t


def _outcome(lib, fn):
    x = lib.tensor([[1.0, 2.0, 3.0], [3.0, 0.0, 1.0]])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # torch's "performance drop" of its fallback
            r = lib.func.vmap(lambda t: fn(lib, t))(x)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e)
    return "ok", np.asarray(r.numpy()).tolist()


@pytest.mark.parametrize("name", CASES, ids=list(CASES))
def test_data_dependent_under_vmap_as_torch(name):
    ours, theirs = (_outcome(lib, CASES[name]) for lib in LIBS)
    if theirs[0] == "ok":
        assert ours == theirs
    else:
        assert ours[0] == theirs[0] == "RuntimeError", (ours, theirs)
        assert ours[1] == theirs[1]
