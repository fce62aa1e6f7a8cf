"""AccumulateGrad: the node at the end of every path to a leaf tensor.

Note [AccumulateGrad: steal, clone or add]
First gradient for a leaf (``.grad`` is None):
  * grad mode off, nothing else references the incoming gradient and it obeys the layout
    contract: steal it (``.grad`` becomes that very tensor's data, no copy);
  * otherwise: copy it into a new tensor that obeys the layout contract (the leaf's strides when
    the leaf is non-overlapping and dense, contiguous otherwise). Under ``create_graph`` the copy
    is recorded (``CopyBackwards``), so ``.grad`` has history.
Later gradients:
  * grad mode off: add in place, so ``.grad`` keeps its identity and ``data_ptr()``;
  * grad mode on (``create_graph``): ``.grad = .grad + new`` out of place, recorded.
"Nothing else references it" is PyTorch's use_count test; here it is the CPython reference
count of the incoming Tensor object. The engine (engine.py) hands the gradient over in a list
it owns and keeps no other reference; tensor hooks that keep the gradient raise the count and so
force a copy, as in PyTorch. A node with post hooks keeps its input list alive for those hooks:
one more expected reference.

Example:
    >>> import ndgrad
    >>> w = ndgrad.ones(2, requires_grad=True)
    >>> (w * 2).sum().backward()
    >>> g = w.grad
    >>> (w * 2).sum().backward()
    >>> w.grad is g, w.grad.tolist()
    (True, [4.0, 4.0])
"""

from __future__ import annotations

import sys
import threading
import warnings
import weakref
from importlib import import_module
from typing import Any

import numpy as np

from .._layout import is_non_overlapping_and_dense
from .._sparse import SparseTensor, add_into_dense
from .._sparse_compressed import CompressedTensor
from .._sparse import _make as _make_sparse
from . import grad_mode
from .grad_mode import _state as _grad_state
from .._refcounts import SOLE_REFERENCE_TESTS
from .node import Node

_Tensor = import_module("ndgrad.tensor").Tensor    # the module (ndgrad.tensor is a function)

__all__ = ["AccumulateGrad", "grad_accumulator", "obeys_layout_contract",
           "is_non_overlapping_and_dense"]

_getrefcount = sys.getrefcount
# References to the incoming gradient when nobody else holds it: the local name in ``apply``,
# the parameter of ``_accumulate`` and the argument of ``sys.getrefcount``.
# Below any possible count when the interpreter's counts are not the ones verified (Note
# [Sole-reference tests] in ndgrad/_refcounts.py): then no gradient is stolen.
_BASE_REFS = 3 if SOLE_REFERENCE_TESTS else -8
_warned_layout = [False]


def obeys_layout_contract(grad: np.ndarray, var: np.ndarray) -> bool:
    """The gradient layout contract: ``grad`` has ``var``'s strides if ``var`` is non-overlapping
    and dense (ignoring size-1 dimensions, which must not be 0-strided), else is contiguous."""
    if grad.shape != var.shape:
        return False
    if grad.strides == var.strides and var.flags.c_contiguous and 0 not in var.strides:
        return True           # the common case: both dense row-major
    if is_non_overlapping_and_dense(var):
        for n, gs, vs in zip(grad.shape, grad.strides, var.strides):
            if n != 1:
                if gs != vs:
                    return False
            elif gs == 0:
                return False
        return True
    return grad.flags.c_contiguous


def _check_result(result: Any, var: Any) -> None:
    if not _warned_layout[0] and not obeys_layout_contract(result._data, var._data):
        _warned_layout[0] = True
        warnings.warn(
            "grad and param do not obey the gradient layout contract. This is not an error, but "
            f"may impair performance.\ngrad.sizes() = {list(result.shape)}, strides() = "
            f"{list(result.stride())}\nparam.sizes() = {list(var.shape)}, strides() = "
            f"{list(var.stride())}", UserWarning, stacklevel=3)


class AccumulateGrad(Node):
    """Accumulates the incoming gradient into ``variable.grad``."""

    # Runs as soon as it is ready, before any op node (PyTorch gives it the largest number).
    _sequence_nr = sys.maxsize
    next_functions = ()
    # Tensor hooks live on the variable; Tensor.register_hook sets this when it adds one, so
    # the engine's fast path is only taken when there are none (see engine.py).
    _has_hooks = False

    def __init__(self, variable: Any) -> None:
        # grad_accumulator (below) builds the leaf's node without this frame: keep both in step
        self.variable = variable
        self._lock = threading.Lock()
        if variable._hooks:
            self._has_hooks = True

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def apply(self, grads: list) -> tuple:
        if len(grads) != 1:
            raise RuntimeError(f"AccumulateGrad: invalid number of inputs (expected 1, got "
                               f"{len(grads)})")
        new_grad = grads[0]
        if new_grad is None:
            return ()
        var = self.variable
        if var._grad_fn is not None:
            raise RuntimeError("leaf variable has been moved into the graph interior")
        if not var._requires_grad:
            return ()
        # the engine keeps a copy of ``grads`` for post hooks: one more expected reference
        expected = _BASE_REFS + 1 if self._post_hooks else _BASE_REFS
        grads[0] = None
        lock = self._lock
        lock.acquire()
        before = var._grad
        try:
            # Fast path of _accumulate's steal (the usual first gradient of a plain backward):
            # one reference fewer here (no parameter of _accumulate).
            if (var._grad is None and new_grad.__class__ is _Tensor
                    and _getrefcount(new_grad) < expected and not _grad_state.enabled
                    and new_grad._grad_fn is None and not new_grad._requires_grad
                    and new_grad._base is None):
                d, vd = new_grad._data, var._data
                if d.strides == vd.strides and d.shape == vd.shape and \
                        vd.flags.c_contiguous and 0 not in vd.strides:
                    var._grad = new_grad
                else:
                    self._accumulate(var, new_grad, expected)
            elif (var._grad.__class__ is _Tensor and new_grad.__class__ is _Tensor
                  and not _grad_state.enabled):
                # Fast path of _accumulate's in-place add (a later gradient of a plain
                # backward, the usual leaf that keeps its .grad across steps): same checks
                vgrad = var._grad
                data, d = vgrad._data, new_grad._data
                if data.dtype is d.dtype and data.flags.writeable and not vgrad._inference:
                    np.add(data, d, out=data)
                    vgrad._bump_version()
                    vd = var._data
                    # _check_result; its usual case (both dense row-major) without the calls
                    if not (data.strides == vd.strides and data.shape == vd.shape
                            and vd.flags.c_contiguous and 0 not in vd.strides):
                        _check_result(vgrad, var)
                else:
                    self._accumulate(var, new_grad, expected)
            else:
                self._accumulate(var, new_grad, expected)
            del new_grad
            if _grad_state.inference:
                # a .grad made inside inference_mode is an inference tensor (one added into
                # in place stays what it was)
                g = var._grad
                if g is not before and g is not None:
                    g._inference = True
        finally:
            lock.release()
        hooks = var._post_acc_hooks
        if hooks:
            for hook in tuple(hooks.values()):
                r = hook(var)
                if r is not None:       # torch's errors; the gradient stays accumulated
                    if isinstance(r, _Tensor):
                        raise RuntimeError("Tensor post accumulate grad hooks should return "
                                           "None.")
                    raise TypeError(f"expected Variable, but hook returned "
                                    f"'{type(r).__name__}'")
        return ()

    @staticmethod
    def _accumulate(var: Any, new_grad: Any, expected_refs: int) -> None:
        vgrad = var._grad
        enabled = grad_mode._state.enabled
        if new_grad.__class__ is SparseTensor or vgrad.__class__ is SparseTensor:
            _accumulate_sparse(var, vgrad, new_grad, enabled, expected_refs + 1)
            return
        if new_grad.__class__ is CompressedTensor or vgrad.__class__ is CompressedTensor:
            _accumulate_compressed(var, vgrad, new_grad, enabled)
            return
        if vgrad is None:
            if (not enabled and _getrefcount(new_grad) <= expected_refs
                    and obeys_layout_contract(new_grad._data, var._data)):
                # Steal: nobody else can see this gradient.
                # (a gradient a backward made as a view of its own temporary is stored as a
                # plain tensor: torch's ``.grad`` is no view there, and ``detach_()`` works)
                if (new_grad._grad_fn is None and not new_grad._requires_grad
                        and new_grad._base is None):
                    var._grad = new_grad
                else:
                    var._grad = new_grad.detach()
            else:
                var._grad = _clone_obey_contract(new_grad, var)
        elif not enabled:
            _check_inference(vgrad)
            data = vgrad._data
            if (data.flags.writeable
                    and np.can_cast(new_grad._data.dtype, data.dtype, "same_kind")):
                np.add(data, new_grad._data, out=data)
                vgrad._bump_version()
                _check_result(vgrad, var)
            else:
                result = vgrad + new_grad
                _check_result(result, var)
                var._grad = result
        else:
            result = vgrad + new_grad
            _check_result(result, var)
            var._grad = result


def _check_inference(vgrad: Any) -> None:
    """torch accumulates into an existing ``.grad`` in place when grad mode is off: an
    inference tensor there (``.grad`` set inside ``inference_mode``) refuses it, as any
    in-place update outside the mode (raised before anything is written)."""
    if vgrad._inference and not _grad_state.inference:
        raise RuntimeError(
            "Inplace update to inference tensor outside InferenceMode is not allowed.You can "
            "make a clone to get a normal tensor before doing inplace update.See "
            "https://github.com/pytorch/rfcs/pull/17 for more details.")


def _accumulate_sparse(var: Any, vgrad: Any, new_grad: Any, enabled: bool,
                       expected_refs: int) -> None:
    """Seed 000's rules when either gradient is sparse (Note [Sparse COO tensors]):
    a first sparse gradient is stolen (a new sparse tensor over the same indices and values)
    when grad mode is off and nobody else holds it, else cloned; later, sparse + sparse stays
    sparse (uncoalesced unless both were), dense += sparse in place, and sparse + dense is a
    new dense gradient (``new + old``, so the dense one leads)."""
    if vgrad is None:
        if new_grad.__class__ is SparseTensor:
            if not enabled and _getrefcount(new_grad) <= expected_refs and \
                    _getrefcount(new_grad._sp_indices) <= 2 and \
                    _getrefcount(new_grad._sp_values) <= 2:
                # stolen: a new tensor over the same arrays (unless another tensor shares
                # them, like torch's indices use_count), which torch does not flag coalesced
                var._grad = _make_sparse(new_grad._sp_indices, new_grad._sp_values,
                                         new_grad._sp_shape)
            else:
                var._grad = new_grad.clone()
        else:
            var._grad = _clone_obey_contract(new_grad, var)
        return
    if vgrad.__class__ is SparseTensor and new_grad.__class__ is not SparseTensor:
        var._grad = new_grad + vgrad                # dense + sparse: dense, a new tensor
        return
    if not enabled:
        _check_inference(vgrad)
        if vgrad.__class__ is SparseTensor:
            vgrad.add_(new_grad)                    # stays sparse, coalesced when needed
        else:
            add_into_dense(vgrad._data, new_grad)
            vgrad._bump_version()
        return
    var._grad = vgrad + new_grad


def _accumulate_compressed(var: Any, vgrad: Any, new_grad: Any, enabled: bool) -> None:
    """A CSR/CSC gradient (Note [Compressed sparse autograd] in ops/sparse_compressed.py): the
    first one is cloned; later, compressed + compressed stays compressed (in place when grad
    mode is off), dense += compressed in place, compressed + dense is a new dense gradient."""
    if vgrad is None:
        var._grad = new_grad.clone().detach() if new_grad.__class__ is CompressedTensor else \
            _clone_obey_contract(new_grad, var)
    elif vgrad.__class__ is CompressedTensor and new_grad.__class__ is not CompressedTensor:
        var._grad = new_grad + vgrad
    elif not enabled:
        if vgrad.__class__ is CompressedTensor:
            vgrad.add_(new_grad)
        else:
            np.add(vgrad._data, new_grad._data, out=vgrad._data)
            vgrad._bump_version()
    else:
        var._grad = vgrad + new_grad


def _clone_obey_contract(new_grad: Any, var: Any) -> Any:
    """A copy of ``new_grad`` laid out by the contract (recorded as ``CopyBackwards``)."""
    return _copy_like_layout(new_grad, var)


# The layout-preserving copy is an op of the op table (``CopyBackwards``, recorded under
# create_graph); the runtime may not import the op table (Note [Layers] in autograd/__init__.py),
# so ops/pointwise.py registers it here when it is imported.
_copy_like_layout: Any = None


def grad_accumulator(t: Any) -> AccumulateGrad:
    """The leaf's AccumulateGrad node (created on demand, referenced weakly by the tensor)."""
    ref = t._grad_acc
    acc = ref() if ref is not None else None
    if acc is None:
        with _ACC_LOCK:  # two threads must not create two accumulators for one leaf
            ref = t._grad_acc
            acc = ref() if ref is not None else None
            if acc is None:
                # AccumulateGrad(t) without its __init__ frame (one per leaf and step; the
                # same three fields as __init__ sets)
                acc = _new(AccumulateGrad)
                acc.variable = t
                acc._lock = _Lock()
                if t._hooks:
                    acc._has_hooks = True
                t._grad_acc = weakref.ref(acc)
    return acc


_ACC_LOCK = threading.Lock()
_Lock = threading.Lock
_new = object.__new__
