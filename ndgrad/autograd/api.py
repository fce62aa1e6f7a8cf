"""``backward`` and ``grad``: the entry points to the engine, with PyTorch's argument checks.

Example:
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> (gx,) = ndgrad.autograd.grad((x ** 3).sum(), x, create_graph=True)
    >>> gx
    tensor([ 3., 12.], grad_fn=<MulBackward0>)
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

from importlib import import_module

import numpy as np

from .._creation import ones_like, zeros_like
from ..ops import stack as _stack
from ..ops._batching import node_supported
from ..ops._dispatch import gradient_edge
from .accumulate_grad import AccumulateGrad
from .batching import batch_level
from .engine import run_backward, run_backward_scalar
from .grad_mode import _state as _grad_state
from .grad_mode import enable_grad
from .graph import GradientEdge

_tensor_mod = import_module("ndgrad.tensor")  # the module; ndgrad.tensor is also a function
_wrap = _tensor_mod._wrap
_Tensor = _tensor_mod.Tensor

__all__ = ["backward", "grad"]

if TYPE_CHECKING:
    from ..tensor import Tensor

TensorOrTensors = Union["Tensor", Sequence["Tensor"]]
_warned_create_graph = [False]


def _tensor_or_tensors_to_tuple(tensors: Any, length: int) -> tuple:
    if tensors is None:
        return (None,) * length
    if isinstance(tensors, _tensor_mod.Tensor):
        return (tensors,)
    return tuple(tensors)


def _check_counts(n_tensors: int, n_grads: int) -> None:
    if n_tensors != n_grads:
        raise RuntimeError(f"got {n_tensors} tensors and {n_grads} gradients")


def _make_grads(outputs: Sequence[Tensor], grads: Sequence[Any],
                is_grads_batched: bool) -> tuple:
    """Check user-given output gradients; create ``ones`` for scalar outputs that need one."""
    new_grads = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if isinstance(g, _tensor_mod.Tensor):
            gshape = g._data.shape[1:] if is_grads_batched else g._data.shape
            if out._data.shape != gshape:
                if is_grads_batched:
                    raise RuntimeError(
                        "If `is_grads_batched=True`, we interpret the first dimension of each "
                        "grad_output as the batch dimension. The sizes of the remaining "
                        "dimensions are expected to match the shape of corresponding output, but "
                        f"a mismatch was detected: grad_output[{i}] has a shape of "
                        f"{_tensor_mod.Size(gshape)} and output[{i}] has a shape of {out.shape}. "
                        "If you only want some tensors in `grad_output` to be considered batched, "
                        "consider using vmap.")
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] "
                    f"has a shape of {out.shape}.")
            if out.dtype.is_complex != g.dtype.is_complex:
                raise RuntimeError(
                    "For complex Tensors, both grad_output and output are required to have the "
                    f"same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} and "
                    f"output[{i}] has a dtype of {out.dtype}.")
            if g._data.dtype != out._data.dtype:
                g = g.to(out.dtype)
            new_grads.append(g)
        elif g is None:
            d = out._data
            if d.ndim == 0 and d.dtype.kind == "f" and out._requires_grad and \
                    not _grad_state.inference and d.__class__ is np.ndarray:
                # the usual loss: a 0-d float seed without ones_like's argument handling
                new_grads.append(_wrap(np.array(1, d.dtype)))
            elif out.requires_grad:
                if out._data.size != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.dtype.is_floating_point:
                    raise RuntimeError("grad can be implicitly created only for real scalar "
                                       f"outputs but got {out.dtype}")
                new_grads.append(ones_like(out))
            else:
                new_grads.append(None)
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
    return tuple(new_grads)


def _root_edges(tensors: Sequence[Any]) -> list:
    edges = []
    for i, t in enumerate(tensors):
        if not isinstance(t, _tensor_mod.Tensor):
            raise TypeError(f"element {i} of tensors is not a Tensor but "
                            f"{type(t).__name__}")
        edge = gradient_edge(t)
        if edge[0] is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        edges.append(edge)
    return edges


def _input_edges(inputs: Sequence[Any], accumulate_grad: bool) -> list:
    edges: list = []
    for x in inputs:
        if isinstance(x, GradientEdge):
            edges.append((x.node, x.output_nr))
            continue
        if not isinstance(x, _tensor_mod.Tensor):
            raise RuntimeError("all inputs have to be Tensors or GradientEdges, but got "
                               f"{type(x).__name__}")
        if accumulate_grad:
            x.retain_grad()
        if not x._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        fn = x._grad_fn
        if fn is not None:
            edges.append((fn, x._output_nr))
        else:
            ref = x._grad_acc
            acc = ref() if ref is not None else None
            # No accumulator yet: the leaf is not part of any graph, so it is unreachable.
            edges.append((acc, 0))
    return edges


def backward(
    tensors: TensorOrTensors,
    grad_tensors: Optional[TensorOrTensors] = None,
    retain_graph: Optional[bool] = None,
    create_graph: bool = False,
    grad_variables: Optional[TensorOrTensors] = None,
    inputs: Optional[Union[TensorOrTensors, GradientEdge, Sequence[GradientEdge]]] = None,
) -> None:
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of graph leaves.

    Non-scalar ``tensors`` need ``grad_tensors`` (the vector of the vector-Jacobian product).
    ``retain_graph`` defaults to ``create_graph``; ``inputs`` restricts accumulation to the given
    tensors (non-leaf ones retain their grad).

    >>> import ndgrad
    >>> x = ndgrad.ones(2, requires_grad=True)
    >>> ndgrad.autograd.backward([x * 3], [ndgrad.ones(2)])
    >>> x.grad
    tensor([3., 3.])
    """
    if (tensors.__class__ is _Tensor and grad_tensors is None and inputs is None
            and not create_graph and grad_variables is None):
        # Note [Lean backward entry] (autograd/engine.py): a 0-d floating point loss
        loss: Any = tensors
        fn = loss._grad_fn
        if fn is not None and loss._base is None:
            d = loss._data
            if d.ndim == 0 and d.dtype.kind == "f" and not _grad_state.inference and \
                    d.__class__ is np.ndarray:       # (not a meta tensor: Note [Meta arrays])
                run_backward_scalar(fn, loss._output_nr, _wrap(np.array(1, d.dtype)),
                                    False if retain_graph is None else retain_graph)
                return
    if grad_variables is not None:
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.",
                      FutureWarning, stacklevel=2)
        if grad_tensors is None:
            grad_tensors = grad_variables
        else:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both "
                               "passed to `backward()`. Please only use `grad_tensors`.")
    single = isinstance(inputs, (_tensor_mod.Tensor, GradientEdge))
    if inputs is not None and not single and len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    tensors = (tensors,) if isinstance(tensors, _tensor_mod.Tensor) else tuple(tensors)
    inputs_t = ((inputs,) if isinstance(inputs, (_tensor_mod.Tensor, GradientEdge))
                else tuple(inputs) if inputs is not None else ())
    grads = _tensor_or_tensors_to_tuple(grad_tensors, len(tensors))
    _check_counts(len(tensors), len(grads))
    grads = _make_grads(tensors, grads, is_grads_batched=False)
    if retain_graph is None:
        retain_graph = create_graph
    roots = _root_edges(tensors)
    input_edges = _input_edges(inputs_t, accumulate_grad=True) if inputs_t else None
    if create_graph and not _warned_create_graph[0]:
        _warned_create_graph[0] = True     # once per process, as PyTorch
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the "
            "parameter and its gradient which can cause a memory leak. We recommend using "
            "autograd.grad when creating the graph to avoid this. If you have to use this "
            "function, make sure to reset the .grad fields of your parameters to None after use "
            "to break the cycle and avoid the leak.", UserWarning, stacklevel=2)
    # inside inference_mode nothing is recorded, create_graph or not (its gradients are
    # inference tensors: AccumulateGrad marks the ones it stores)
    run_backward(roots, grads, retain_graph, create_graph and not _grad_state.inference,
                 input_edges, accumulate_grad=True)


def grad(
    outputs: TensorOrTensors,
    inputs: Union[TensorOrTensors, GradientEdge, Sequence[GradientEdge]],
    grad_outputs: Optional[TensorOrTensors] = None,
    retain_graph: Optional[bool] = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: Optional[bool] = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """Return the gradients of ``outputs`` with respect to ``inputs`` (nothing is accumulated
    into ``.grad``).

    ``allow_unused`` defaults to ``materialize_grads``; ``materialize_grads=True`` returns zeros
    instead of ``None`` for unused inputs; ``is_grads_batched=True`` treats the first dimension
    of each ``grad_outputs`` tensor as a batch of vectors and computes all of them in one
    backward pass that carries the batch dimension (Note [Batched backward] in batching.py).
    Graphs with a node that has no batching rule (a custom Function, a hook, a real/imag view
    written in place) run one backward per row instead, with the same results.

    >>> import ndgrad
    >>> x = ndgrad.tensor([2.0], requires_grad=True)
    >>> ndgrad.autograd.grad(x * x, x, ndgrad.ones(1))
    (tensor([4.]),)
    """
    if (outputs.__class__ is _Tensor and grad_outputs is None and not materialize_grads
            and not is_grads_batched and only_inputs and not allow_unused):
        # Note [Lean grad entry]: ``grad(loss, inputs)`` of a 0-d floating point loss with a
        # history (a gradient penalty's inner gradient, a Hessian's first one) skips the
        # argument handling below (sequences, user grad_outputs, batching): the same seed,
        # edges, checks and engine call, ~1.5 µs less.
        loss: Any = outputs
        ins: Any = inputs
        d = loss._data
        if d.ndim == 0 and d.dtype.kind == "f" and loss._requires_grad and \
                not _grad_state.inference and d.__class__ is np.ndarray:
            lean: tuple = ((ins,) if ins.__class__ is _Tensor else tuple(ins)
                           if ins.__class__ is list or ins.__class__ is tuple else ())
            if lean:
                roots = [gradient_edge(loss)]      # first: it may make a leaf's accumulator
                edges = _input_edges(lean, accumulate_grad=False)
                res = run_backward(roots, (_wrap(np.array(1, d.dtype)),),
                                   create_graph if retain_graph is None else retain_graph,
                                   create_graph, edges, accumulate_grad=False)
                assert res is not None               # the gradients of input_edges
                for i, r in enumerate(res):
                    if r is None:
                        raise RuntimeError(
                            f"The differentiated Tensor at index {i} appears to not have been "
                            "used in the graph. Set allow_unused=True if this is the desired "
                            "behavior.")
                return tuple(res)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    t_outputs = (outputs,) if isinstance(outputs, _tensor_mod.Tensor) else tuple(outputs)
    single = isinstance(inputs, (_tensor_mod.Tensor, GradientEdge))
    inputs_t = (inputs,) if single else tuple(inputs)
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). "
                      "To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", FutureWarning, stacklevel=2)
    if len(inputs_t) == 0:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    grads = _tensor_or_tensors_to_tuple(grad_outputs, len(t_outputs))
    _check_counts(len(t_outputs), len(grads))
    grads = _make_grads(t_outputs, grads, is_grads_batched=is_grads_batched)
    if retain_graph is None:
        retain_graph = create_graph
    roots = _root_edges(t_outputs)
    input_edges = _input_edges(inputs_t, accumulate_grad=False)

    def run(gs: tuple, keep: bool) -> tuple:
        inference = _grad_state.inference
        res = run_backward(roots, gs, keep, create_graph and not inference, input_edges,
                           accumulate_grad=False)
        assert res is not None               # the gradients of input_edges
        if inference:              # made inside inference_mode: inference tensors
            for r in res:
                if r is not None and not any(r is g for g in gs):
                    r._inference = True
        if not allow_unused:
            for i, r in enumerate(res):
                if r is None:
                    raise RuntimeError(
                        f"The differentiated Tensor at index {i} appears to not have been used "
                        "in the graph. Set allow_unused=True if this is the desired behavior.")
        return tuple(res)

    if is_grads_batched:
        result = _batched(run, grads, retain_graph, create_graph, roots)
    else:
        result = run(grads, retain_graph)
    if materialize_grads:
        if any(result[i] is None and not isinstance(inputs_t[i], _tensor_mod.Tensor)
               for i in range(len(inputs_t))):
            raise RuntimeError("materialize_grads cannot be used when the given input is a "
                               "GradientEdge")
        result = tuple(zeros_like(x) if r is None and isinstance(x, _tensor_mod.Tensor) else r
                       for r, x in zip(result, inputs_t))
    return result


def _grad_rows(output: "Tensor", inputs: tuple, seeds: Any, create_graph: bool) -> Any:
    """For each seed (a tensor shaped and typed like ``output``, requiring no grad), what
    ``grad(output, inputs, seed, retain_graph=True, create_graph=create_graph,
    allow_unused=True)`` returns: the rows of a Jacobian (autograd/functional.py). The checks
    and the engine's graph analysis are done once for all rows (``run_backward``'s plan)."""
    roots = _root_edges((output,))
    input_edges = _input_edges(inputs, accumulate_grad=False)
    plan: dict = {}
    for seed in seeds:
        rows = run_backward(roots, (seed,), True, create_graph, input_edges,
                            accumulate_grad=False, plan=plan)
        assert rows is not None   # accumulate_grad=False returns the captured gradients
        yield tuple(rows)


def _batch_size(grads: tuple) -> int:
    """The common size of the first dimension of the batched grad_outputs (PyTorch's vmap
    errors otherwise)."""
    sizes = []
    for g in grads:
        if g is None:
            continue
        if g._data.ndim == 0:
            raise ValueError("vmap(vjp, in_dims=0, ...)(<inputs>): Got in_dim=0 for some input, "
                             "but that input is a Tensor of dimensionality 0 so expected in_dim "
                             "to satisfy 0 <= in_dim < 0.")
        sizes.append(g._data.shape[0])
    if len(set(sizes)) > 1:
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    n = sizes[0] if sizes else 1
    if n == 0:
        raise IndexError("index 0 is out of bounds for dimension 0 with size 0")
    return n


def _graph_supports_batching(roots: Sequence[Any]) -> bool:
    """True if every node reachable from ``roots`` has a batching rule and no hooks (the
    nodes a vectorized backward can run, see Note [Batched backward] in batching.py)."""
    seen: set = set()
    stack = [r for r in roots if r is not None]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node._has_hooks:
            return False
        if type(node) is AccumulateGrad:
            continue
        if not node_supported(node):
            return False
        stack.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
    return True


def _batched(run: Any, grads: tuple, retain_graph: bool, create_graph: bool,
             roots: Sequence[Any]) -> tuple:
    """``is_grads_batched=True``: one backward pass carrying the batch dimension through every
    node when the graph allows it (Note [Batched backward]), else one pass per row."""
    n = _batch_size(grads)
    if not _graph_supports_batching([e[0] for e in roots]):
        return _row_loop(run, grads, retain_graph, n)
    with batch_level() as level:
        seeds: list = []
        for g in grads:
            if g is None:
                seeds.append(None)
                continue
            if create_graph and g._requires_grad:
                with enable_grad():
                    g = g.view(g._data.shape)     # keeps the history of a grad_output
            else:
                g = g._alias()
            g._blevel = level
            seeds.append(g)
        res = run(tuple(seeds), retain_graph)
    batched = [r is not None and r._blevel == level for r in res]
    out = []
    for r, b in zip(res, batched):
        if r is not None:
            if b:
                r._blevel = 0
            else:                   # the same for every row: repeat it
                r = r.unsqueeze(0).expand((n,) + tuple(r._data.shape)).contiguous()
        out.append(r)
    return tuple(out)


def _row_loop(run: Any, grads: tuple, retain_graph: bool, n: int) -> tuple:
    """The fallback: one backward per row of the batched grad_outputs, stacked along dim 0."""
    rows = []
    for b in range(n):
        gs = tuple(g[b] if g is not None else None for g in grads)
        rows.append(run(gs, True if b < n - 1 else retain_graph))
    out = []
    for j in range(len(rows[0])):
        col = [r[j] for r in rows]
        out.append(None if all(c is None for c in col) else _stack(
            [c if c is not None else _zeros_for(col) for c in col]))
    return tuple(out)


def _zeros_for(col: list) -> "Tensor":
    return zeros_like(next(c for c in col if c is not None))
