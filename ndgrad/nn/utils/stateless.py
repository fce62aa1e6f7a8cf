"""``functional_call``: call a module with some of its parameters and buffers replaced, as
``torch.nn.utils.stateless`` (and ``torch.func.functional_call``). The module's own tensors
are put back afterwards, even if the call raises.

    >>> import ndgrad
    >>> from ndgrad.nn.utils.stateless import call
    >>> m = ndgrad.nn.Linear(2, 1)
    >>> call(m, {"weight": ndgrad.ones(1, 2), "bias": ndgrad.zeros(1)},
    ...                 (ndgrad.tensor([[1.0, 2.0]]),))
    tensor([[3.]])
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

from ..._warn import warn_user
from ...tensor import Tensor
from ..modules.module import Module

__all__ = ["functional_call"]

_MISSING = object()


def _untie_named_tensors_map(module: Module, parameters_and_buffers: dict) -> dict:
    """Give every name tied to a given one (the same tensor in the module) the given value;
    several different values for one tied group are an error."""
    all_named: dict = {}
    all_named.update(module.named_parameters(remove_duplicate=False))
    all_named.update(module.named_buffers(remove_duplicate=False))
    by_tensor: dict = {}
    for name, tensor in all_named.items():
        by_tensor.setdefault(id(tensor), set()).add(name)
    tied: dict = {}
    for names in by_tensor.values():
        if len(names) > 1:
            for n in names:
                tied[n] = names
    given = set(parameters_and_buffers)
    given_tied = {n for n in given if n in tied}
    for g in given_tied:
        names = tied[g]
        if len(names & given_tied) > 1 and \
                len({id(parameters_and_buffers[n]) for n in names & given_tied}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             "which are tied. Consider using tie_weights=False")
    untied = dict(parameters_and_buffers)
    for g in given_tied:
        for n in tied[g]:
            untied[n] = parameters_and_buffers[g]
    return untied


def _swap_tensor(module: Module, name: str, tensor: Any) -> Any:
    if tensor is not _MISSING and not isinstance(tensor, Tensor) and tensor is not None:
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if name in module._parameters:
        orig = module._parameters[name]
        if tensor is _MISSING:
            del module._parameters[name]
        else:
            module._parameters[name] = tensor
    elif name in module._buffers:
        orig = module._buffers[name]
        if tensor is _MISSING:
            del module._buffers[name]
        else:
            module._buffers[name] = tensor
    else:
        orig = getattr(module, name) if hasattr(module, name) else _MISSING
        if orig is not _MISSING and not isinstance(orig, Tensor) and orig is not None:
            raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
        if tensor is not _MISSING:
            setattr(module, name, tensor)
        elif hasattr(module, name):
            delattr(module, name)
    return orig


def _swap_all(module: Module, tensors: dict) -> dict:
    orig = {}
    for full, tensor in tensors.items():
        prefix, _, attr = full.rpartition(".")
        orig[full] = _swap_tensor(module.get_submodule(prefix), attr, tensor)
    return orig


@contextlib.contextmanager
def _reparametrize_module(module: Module, parameters_and_buffers: dict,
                          tie_weights: bool = False, strict: bool = False) -> Iterator[None]:
    untied = _untie_named_tensors_map(module, parameters_and_buffers) if tie_weights \
        else parameters_and_buffers
    if strict:
        valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        keys = set(untied)
        missing, unexpected = sorted(valid - keys), sorted(keys - valid)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(msgs)))
    orig: dict = {}
    try:
        orig = _swap_all(module, untied)
        yield
    finally:
        _swap_all(module, orig)


def functional_call(module: Module, parameter_and_buffer_dicts: Any, args: Any = None,
                    kwargs: Optional[dict] = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """The deprecated ``torch.nn.utils.stateless.functional_call`` (a ``FutureWarning``, then
    ``call``, which ``ndgrad.func.functional_call`` is)."""
    warn_user("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and "
              "will be removed in a future version of PyTorch. Please use "
              "`torch.func.functional_call` instead which is a drop-in replacement.",
              FutureWarning)
    return call(module, parameter_and_buffer_dicts, args, kwargs, tie_weights=tie_weights,
                strict=strict)


def call(module: Module, parameter_and_buffer_dicts: Any, args: Any = None,
         kwargs: Optional[dict] = None, *, tie_weights: bool = True,
         strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the named parameters and buffers of
    ``parameter_and_buffer_dicts`` (a dict, or a sequence of dicts with distinct keys) in
    place of the module's own. With ``tie_weights``, a value given for one of several tied
    names is used for all of them; with ``strict``, the keys must be exactly the module's."""
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        seen: dict = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                seen[k] = seen.get(k, 0) + 1
        repeated = [k for k, n in seen.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts
                                  for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple "
                         f"of dicts, but got {type(parameter_and_buffer_dicts)}")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights,
                               strict=strict):
        return module(*args, **kwargs)
