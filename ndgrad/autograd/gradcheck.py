"""``gradcheck`` and ``gradgradcheck``: analytical Jacobians against float64 finite differences,
with PyTorch's checks, indices and messages.

What is checked, in order (as PyTorch does):
1. the inputs: a warning for each input that requires grad and is not float64/complex128, an
   error for inputs with a zero stride, ``ValueError`` when no input requires grad;
2. backward mode (``check_backward_ad``): for every output that requires grad and every input
   that requires grad, the analytical Jacobian (one backward per output element, run twice: the
   two must agree within ``nondet_tol``) against central differences with step ``eps``, element
   by element within ``atol + rtol * |numerical|``. ``fast_mode`` compares the single number
   ``v^T J u`` for random unit vectors instead. Indices in messages count only outputs and
   inputs that require grad ("Jacobian mismatch for output 0 with respect to input 1");
3. forward mode (``check_forward_ad``, via ``forward_ad``);
4. ``check_batched_grad``: ``grad(..., is_grads_batched=True)`` against a loop over rows;
5. zero grad_outputs give zero gradients of the input's dtype and size, and backward handles an
   output whose gradient is missing (``check_undefined_grad``).

Complex numbers follow PyTorch's convention. A complex output ``s`` is checked as two real
functions, ``imag(s)`` then ``real(s)`` (messages say which). For a complex input ``z = x + iy``
and a real output, the numerical column is ``ds/dx + i ds/dy``, which is what the backward of a
real grad_output must give (the conjugate Wirtinger derivative, times 2).

Example:
    >>> import ndgrad
    >>> from ndgrad.autograd.gradcheck import gradcheck
    >>> x = ndgrad.randn(3, dtype=ndgrad.float64, requires_grad=True)
    >>> gradcheck(lambda t: (t * t).sin(), (x,))
    True
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from importlib import import_module

from .._creation import zeros_like
from .._generator import uniform_array
from .._sparse import SparseTensor
from .._sparse_compressed import CompressedTensor, full_pattern, stored_positions
from .._sparse import _make as _make_sparse
from . import forward_ad
from .api import grad

_tensor_mod = import_module("ndgrad.tensor")  # the module; ndgrad.tensor is also a function

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]

_BATCHED_GRAD_HELP = (
    "gradcheck or gradgradcheck failed while testing batched gradient computation "
    "(check_batched_grad=True): the gradients computed with "
    "autograd.grad(..., is_grads_batched=True) differ from those computed one grad_output at a "
    "time. The batched backward runs every node once on gradients with an extra leading batch "
    "dimension (see Note [Batched backward] in ndgrad/autograd/batching.py); a backward rule or "
    "batching rule that mishandles that dimension is the usual cause. Pass "
    "check_batched_grad=False to skip this check.")
_NONDET_HELP = (
    "\n\nTwo backward passes with the same inputs and grad_outputs must agree. If the "
    "backward is meant to be non-deterministic, pass nondet_tol=<tolerance>.")
_FAST_SLOW_OK_HELP = (
    "Fast gradcheck failed but element-wise differences are small. This means that the test "
    "might've passed in slow_mode! Call gradcheck/gradgradcheck with fast_mode=False.")


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck``/``gradgradcheck`` when a check fails."""


def _is_tensor(x: Any) -> bool:
    return isinstance(x, _tensor_mod.Tensor)


def _as_tuple(x: Any) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _diff_inputs(inputs: tuple) -> list:
    """Positions of the inputs that require grad."""
    return [i for i, t in enumerate(inputs) if _is_tensor(t) and t.requires_grad]


def _outputs(func: Callable, inputs: tuple) -> tuple:
    """The tensors among ``func``'s outputs."""
    return tuple(o for o in _as_tuple(func(*inputs)) if _is_tensor(o))


def _diff_outputs(outputs: tuple) -> list:
    """Positions of the floating point and complex outputs."""
    return [k for k, o in enumerate(outputs) if o.dtype.is_floating_point or o.dtype.is_complex]


def _np(t: Any) -> np.ndarray:
    """The values of ``t`` as an ndarray (a sparse tensor's dense form)."""
    if t.__class__ is SparseTensor or t.__class__ is CompressedTensor:
        return t._dense()
    return t.detach().numpy()


# Note [gradcheck on sparse inputs]
# As torch's: a sparse COO input is perturbed through its stored values, each value standing
# for its element of the dense Jacobian (rows of unstored elements stay zero). With
# ``masked=False`` (the default) the numerical Jacobian is taken on a copy of the input in which
# every element is stored (zeros added), so it covers every element and a backward that masks
# its gradient to the stored pattern fails; with ``masked=True`` only the stored elements are
# perturbed, so masked gradients pass (and a backward that fills unstored elements fails).
# The analytical Jacobian is the dense form of the (sparse or dense) gradient. Sparse outputs
# are refused, as torch does. CSR/CSC inputs likewise (their stored values, in storage order).
def _is_sparse(x: Any) -> bool:
    return x.__class__ is SparseTensor or x.__class__ is CompressedTensor


def _densify(x: Any) -> Any:
    """A copy of sparse ``x`` storing every element (zeros where ``x`` stores none),
    coalesced, in row-major order, requiring grad as ``x`` does; other values unchanged."""
    if not _is_sparse(x):
        return x
    if x.__class__ is CompressedTensor:
        return full_pattern(x)
    c = SparseTensor._coalesce_unrecorded(x)
    k = x.sparse_dim()
    sshape = x._sp_shape[:k]
    n = int(np.prod(sshape, dtype=np.int64))
    idx = np.stack(np.unravel_index(np.arange(n), sshape)).astype(np.int64).reshape(k, n)
    vals = np.zeros((n,) + x._sp_shape[k:], dtype=x._sp_values.dtype)
    if c._nnz():
        vals[np.ravel_multi_index(tuple(c._sp_indices), sshape)] = c._sp_values
    out = _make_sparse(idx, vals, x._sp_shape, coalesced=True)
    out._requires_grad = x._requires_grad
    return out


def _spread(x: Any, u: Optional[np.ndarray]) -> Optional[np.ndarray]:
    """A vector over the perturbed entries of ``x`` as a vector over its dense elements."""
    if u is None or not _is_sparse(x):
        return u
    full = np.zeros(x.numel(), u.dtype)
    np.add.at(full, _perturbed(x)[1], u)
    return full


def _perturbed(x: Any) -> tuple:
    """(the array perturbed for input ``x``, the dense flat element each of its entries
    stands for)."""
    if not _is_sparse(x):
        data = x.detach().numpy()
        return data, np.arange(data.size)
    if x.__class__ is CompressedTensor:
        vals = x._cs_values
        inner = int(np.prod(x._cs_shape[x._batch_dim() + 2:], dtype=np.int64))
        outer = stored_positions(x)
        return vals, (outer[:, None] * inner + np.arange(inner)[None, :]).reshape(-1)
    vals = x._sp_values
    k = x.sparse_dim()
    dense = x._sp_shape[k:]
    inner = int(np.prod(dense, dtype=np.int64))
    outer = np.ravel_multi_index(tuple(x._sp_indices), x._sp_shape[:k]) if k else \
        np.zeros(x._nnz(), np.int64)
    flat = (outer[:, None] * inner + np.arange(inner)[None, :]).reshape(-1)
    return vals, flat


def _show(a: Any) -> str:
    """An array as ndgrad prints tensors (PyTorch prints its own in these messages)."""
    return repr(_tensor_mod._wrap(np.asarray(a)))


def _numerical_columns(func: Callable, inputs: tuple, i: int, eps: float,
                       out_idx: list) -> list:
    """Central differences w.r.t. input ``i``: per output position in ``out_idx``, the pair
    ``(ds/dx, ds/dy)`` of arrays ``(n_in, n_out)`` (``ds/dy`` only for a complex input). The
    input's memory is perturbed in place and restored."""
    x = inputs[i]
    data, rows = _perturbed(x)
    is_complex = data.dtype.kind == "c"
    n_in = x.numel()

    def eval_outputs() -> list:
        # Not under no_grad: ``func`` may itself differentiate (gradgradcheck).
        outs = _outputs(func, inputs)
        res = []
        for k in out_idx:
            a = _np(outs[k])
            res.append(np.array(a, dtype=np.complex128 if a.dtype.kind == "c"
                                else np.float64).reshape(-1))
        return res

    base = eval_outputs()
    dx = [np.zeros((n_in, b.size), dtype=b.dtype) for b in base]
    dy = [np.zeros((n_in, b.size), dtype=np.complex128) for b in base] if is_complex else None
    for j, idx in enumerate(np.ndindex(data.shape)):
        orig = data[idx]
        for direction, store in ((1.0, dx), (1j, dy)):
            if store is None:
                continue
            data[idx] = orig + direction * eps
            plus = eval_outputs()
            data[idx] = orig - direction * eps
            minus = eval_outputs()
            data[idx] = orig
            for k in range(len(out_idx)):
                d = (plus[k] - minus[k]) / (2 * eps)
                if not np.iscomplexobj(store[k]) and np.iscomplexobj(d):
                    store[k] = store[k].astype(np.complex128)
                store[k][rows[j]] = d
    return [(dx[k], dy[k] if dy is not None else None) for k in range(len(out_idx))]


def _jacobian_dtype(x: Any, jac: np.ndarray) -> np.dtype:
    """The dtype PyTorch's Jacobians of input ``x`` have: ``x``'s (its complex counterpart for a
    complex Jacobian of a real input)."""
    dt = x._data.dtype
    if jac.dtype.kind == "c" and dt.kind != "c":
        return np.dtype(np.complex128 if dt == np.float64 else np.complex64)
    return dt


def _error(k: int, i: int, num: Any, ana: Any, what: str = "", prefix: str = "") -> str:
    """PyTorch's mismatch message; ``num``/``ana`` are (n_in, n_out) Jacobians."""
    return (f"{prefix}Jacobian mismatch for output {k} with respect to input {i}{what},\n"
            f"numerical:{_show(num)}\nanalytical:{_show(ana)}\n")


# ---------------------------------------------------------------------------- entry points
def gradcheck(
    func: Callable[..., Any],
    inputs: Union[Any, Sequence[Any]],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: Optional[bool] = None,
) -> bool:
    """Check ``func``'s gradients w.r.t. the inputs that require grad against central finite
    differences (see the module docstring for the list of checks).

    Returns True, or raises :class:`GradcheckError` (returns False with
    ``raise_exception=False``). Sparse COO inputs are checked as torch's (Note [gradcheck on
    sparse inputs]): ``masked=True`` ignores the gradients of unstored elements.
    ``check_batched_forward_grad=True`` is not supported and raises ``NotImplementedError``.

    >>> import ndgrad
    >>> from ndgrad.autograd.gradcheck import gradcheck
    >>> x = ndgrad.tensor([0.5, 1.5], dtype=ndgrad.float64, requires_grad=True)
    >>> gradcheck(lambda t: t.exp() * t, (x,), fast_mode=True)
    True
    """
    if check_batched_forward_grad:
        raise NotImplementedError("gradcheck: check_batched_forward_grad=True is not supported "
                                  "by ndgrad yet")
    inputs = _as_tuple(inputs)
    _check_inputs(inputs)
    if any(_is_sparse(x) for x in inputs) and (check_forward_ad or check_batched_grad):
        raise NotImplementedError("gradcheck: check_forward_ad and check_batched_grad are not "
                                  "supported by ndgrad for sparse inputs")
    try:
        _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                   check_grad_dtypes, check_batched_grad, check_forward_ad, check_backward_ad,
                   fast_mode, bool(masked))
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _check_inputs(inputs: tuple) -> None:
    any_diff = False
    for idx, x in enumerate(inputs):
        if not (_is_tensor(x) and x.requires_grad):
            continue
        if x.dtype.name not in ("float64", "complex128"):
            warnings.warn(f"Input #{idx} requires gradient and is not a double precision "
                          "floating point or complex. This check will likely fail if all the "
                          "inputs are not of double precision floating point or complex. ",
                          stacklevel=3)
        if not _is_sparse(x) and not all(st > 0 or n <= 1
                                         for st, n in zip(x.stride(), x.shape)):
            raise RuntimeError(
                f"The {idx}th input has a dimension with stride 0. gradcheck only supports "
                "inputs that are non-overlapping to be able to compute the numerical gradients "
                "correctly. You should call .contiguous on the input before passing it to "
                "gradcheck.")
        any_diff = True
    if not any_diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")


def _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
               check_grad_dtypes, check_batched_grad, check_forward_ad, check_backward_ad,
               fast_mode, masked=False) -> None:
    func_out = _as_tuple(func(*inputs))
    outputs = tuple(o for o in func_out if _is_tensor(o) and o.requires_grad)
    if any(_is_sparse(o) for o in func_out):
        raise ValueError("Sparse output is not supported at gradcheck yet. Please call "
                         "to_dense(masked_grad=...) on the output of fn for gradcheck.")
    check = _check_fast if fast_mode else _check_slow
    num_inputs = inputs if masked else tuple(_densify(x) for x in inputs)
    check = functools.partial(check, num_inputs=num_inputs)
    if check_backward_ad:
        if any(_is_tensor(o) and o.is_complex() for o in func_out):
            for part, prefix in (("imag", "While considering the imaginary part of complex "
                                          "outputs only, "),
                                 ("real", "While considering the real part of complex outputs "
                                          "only, ")):
                f = _part_of_complex_outputs(func, part)
                check(f, inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes, prefix)
        else:
            check(func, inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes, "")
    if check_forward_ad:
        _check_forward(func, inputs, _diff_inputs(inputs), eps, atol, rtol)
    if not check_backward_ad:
        return
    if check_batched_grad:
        for k, o in enumerate(outputs):
            _check_batched(inputs, o, k)
    _check_zero_grad_outputs(outputs, inputs, masked)
    if check_undefined_grad and len(outputs) > 1:
        _check_missing_grad_outputs(func, inputs, len(outputs))


def _part_of_complex_outputs(func: Callable, part: str) -> Callable:
    def f(*xs: Any) -> tuple:
        return tuple(getattr(o, part) if _is_tensor(o) and o.is_complex() else o
                     for o in _as_tuple(func(*xs)))
    return f


def _outputs_requiring_grad(func: Callable, inputs: tuple) -> tuple:
    """(all tensor outputs, positions of those that require grad)."""
    outs = _outputs(func, inputs)
    return outs, [k for k, o in enumerate(outs) if o.requires_grad]


def _check_no_diff_outputs(func: Callable, inputs: tuple, eps: float) -> None:
    outs = _outputs(func, inputs)
    idx = _diff_outputs(outs)
    for i in _diff_inputs(inputs):
        for dx, dy in _numerical_columns(func, inputs, i, eps, idx):
            if np.any(dx != 0) or (dy is not None and np.any(dy != 0)):
                raise GradcheckError("Numerical gradient for function expected to be zero")


def _check_slow(func, inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes, prefix,
                num_inputs=None) -> None:
    num_inputs = inputs if num_inputs is None else num_inputs
    outs, diff = _outputs_requiring_grad(func, inputs)
    if not diff:
        _check_no_diff_outputs(func, num_inputs, eps)
        return
    i_list = _diff_inputs(inputs)
    numerical = []      # [input][output] -> (n_in, n_out)
    for i in i_list:
        cols = _numerical_columns(func, num_inputs, i, eps, diff)
        numerical.append([dx if dy is None else dx + 1j * dy for dx, dy in cols])
    for oi, k in enumerate(diff):
        analytical = _analytical_jacobian(inputs, i_list, outs[k], nondet_tol,
                                          check_grad_dtypes)
        for ii in range(len(i_list)):
            a, n = analytical[ii], numerical[ii][oi]
            _check_sizes(a.shape[1], n.shape[1])
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                dt = _jacobian_dtype(inputs[i_list[ii]], n)     # PyTorch's are the input's
                raise GradcheckError(_error(oi, ii, n.astype(dt), a.astype(dt), prefix=prefix))


def _check_sizes(n_out: int, n_numerical: int) -> None:
    """An output whose size changes on the densified input (Note [gradcheck on sparse
    inputs]: ``values()`` of a sparse input, with ``masked=False``) is torch's size error."""
    if n_out != n_numerical:
        raise RuntimeError(f"The expanded size of the tensor ({n_out}) must match the existing "
                           f"size ({n_numerical}) at non-singleton dimension 0: the output has "
                           f"{n_numerical} elements when every element of the sparse input is "
                           "stored (masked=False)")


def _analytical_rows(out: Any, xs: list, vectors: list) -> list:
    """For each grad_output in ``vectors``, the gradients w.r.t. ``xs`` (arrays or None)."""
    rows = []
    for v in vectors:
        res = grad(out, xs, _tensor_mod._wrap(v), retain_graph=True, allow_unused=True)
        rows.append([None if g is None else g for g in res])
    return rows


def _stack_rows(rows: list, xs: list) -> tuple:
    """Jacobians (n_in, n_rows) per input from per-row gradients; and whether dtypes and sizes
    were right."""
    types_ok = sizes_ok = True
    jac = []
    for j, x in enumerate(xs):
        cplx = x.is_complex() or any(r[j] is not None and r[j].is_complex() for r in rows)
        m = np.zeros((x.numel(), len(rows)), dtype=np.complex128 if cplx else np.float64)
        for r, row in enumerate(rows):
            g = row[j]
            if g is None:
                continue
            if g.dtype != x.dtype:
                types_ok = False
            if g.numel() != x.numel():
                sizes_ok = False
                continue
            m[:, r] = _np(g).reshape(-1)
        jac.append(m)
    return jac, types_ok, sizes_ok


def _checked_jacobians(out: Any, xs: list, vectors: list, nondet_tol: float,
                       check_grad_dtypes: bool) -> list:
    """Backward for each vector, twice; PyTorch's dtype, size and reentrancy checks."""
    j1, types_ok, sizes_ok = _stack_rows(_analytical_rows(out, xs, vectors), xs)
    j2, _, _ = _stack_rows(_analytical_rows(out, xs, vectors), xs)
    reentrant = all(a.shape == b.shape and (a.size == 0 or np.max(np.abs(a - b)) <= nondet_tol)
                    for a, b in zip(j1, j2))
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with same input and grad_output "
            "multiple times gives different values, although analytical gradient matches "
            f"numerical gradient.The tolerance for nondeterminism was {nondet_tol}."
            + _NONDET_HELP)
    return j1


def _analytical_jacobian(inputs: tuple, i_list: list, out: Any, nondet_tol: float,
                         check_grad_dtypes: bool) -> list:
    dt = _np(out).dtype
    vectors = []
    for r in range(out.numel()):
        v = np.zeros(out.numel(), dtype=dt)
        v[r] = 1
        vectors.append(v.reshape(tuple(out.shape)))
    return _checked_jacobians(out, [inputs[i] for i in i_list], vectors, nondet_tol,
                              check_grad_dtypes)


# ---------------------------------------------------------------------------- fast mode
def _unit(rng: np.random.Generator, n: int, dtype: Any) -> np.ndarray:
    v = rng.random(n)
    norm = np.linalg.norm(v)
    return (v / norm if norm else v).astype(dtype)


def _check_fast(func, inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes, prefix,
                num_inputs=None) -> None:
    """``v^T J u`` for random unit vectors ``u`` (per input) and ``v`` (per output); for a
    sparse input ``u`` is drawn on its stored elements (Note [gradcheck on sparse inputs])."""
    num_inputs = inputs if num_inputs is None else num_inputs
    rng = np.random.default_rng(0)
    i_list = _diff_inputs(inputs)
    outs, diff = _outputs_requiring_grad(func, inputs)
    all_u: list = []
    num_u: list = []
    for i in i_list:
        x = inputs[i]
        real = np.float64 if x.dtype.name in ("float64", "complex128") else np.float32
        n = _perturbed(x)[0].size if _is_sparse(x) else x.numel()
        raw = _unit(rng, n, real), (_unit(rng, n, real) if x.is_complex() else None)
        dense = tuple(_spread(x, r) for r in raw)
        # the numerical direction: on the stored values of the input it perturbs (the
        # densified copy stores every element, in dense order)
        num = raw if num_inputs[i] is x else dense
        all_u.append(dense if x.is_complex() else dense[0])
        num_u.append(num if x.is_complex() else num[0])
    all_v = [_unit(rng, outs[k].numel(), _np(outs[k]).dtype) for k in diff]
    numerical_ju = [_numerical_ju(func, num_inputs, i, u, eps)
                    for i, u in zip(i_list, num_u)]
    if not diff:
        for ju in numerical_ju:
            for col in ju:
                if col.size and np.max(np.abs(col)) > nondet_tol:
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    for oi, k in enumerate(diff):
        v = all_v[oi]
        vj = _checked_jacobians(outs[k], [inputs[i] for i in i_list],
                                [v.reshape(tuple(outs[k].shape))], nondet_tol,
                                check_grad_dtypes)
        for ii in range(len(i_list)):
            u = all_u[ii]
            g = vj[ii][:, 0]
            if isinstance(u, tuple):
                ana = np.dot(g.real, u[0]) + 1j * np.dot(g.imag, u[1])
                atol_adj = atol * (float(u[0].sum()) + float(u[1].sum())) * float(v.sum().real)
            else:
                ana = np.dot(g, u)
                atol_adj = atol * float(u.sum()) * float(v.sum().real)
            _check_sizes(v.size, numerical_ju[ii][k].size)
            num = np.dot(v, numerical_ju[ii][k])
            if not np.allclose(ana, num, rtol=rtol, atol=atol_adj):
                raise GradcheckError(_error(oi, ii, num, ana, prefix=prefix)
                                     + _slow_mode_report(func, inputs, i_list, diff, ii, oi,
                                                         eps, rtol, atol, num_inputs))


def _numerical_ju(func: Callable, inputs: tuple, i: int, u: Any, eps: float) -> list:
    """``J u`` by central differences along ``u`` (for a complex input, ``u = (ur, ui)``:
    ``ds/dx ur + i ds/dy ui``), per tensor output (flattened)."""
    data = _perturbed(inputs[i])[0]
    orig = data.copy()

    def along(direction: np.ndarray) -> list:
        data[...] = orig + eps * direction.reshape(data.shape)
        plus = [np.asarray(_np(o), dtype=np.complex128).reshape(-1)
                for o in _outputs(func, inputs)]
        data[...] = orig - eps * direction.reshape(data.shape)
        minus = [np.asarray(_np(o), dtype=np.complex128).reshape(-1)
                 for o in _outputs(func, inputs)]
        data[...] = orig
        return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]

    if isinstance(u, tuple):
        ds_dx, ds_dy = along(u[0]), along(1j * u[1])
        res = [a + 1j * b for a, b in zip(ds_dx, ds_dy)]
    else:
        res = along(u)
    return [r if np.any(np.iscomplex(r)) else r.real for r in res]


def _slow_mode_report(func, inputs, i_list, diff, ii, oi, eps, rtol, atol,
                      num_inputs=None) -> str:
    outs = _outputs(func, inputs)
    num_inputs = inputs if num_inputs is None else num_inputs
    dx, dy = _numerical_columns(func, num_inputs, i_list[ii], eps, [diff[oi]])[0]
    num = dx if dy is None else dx + 1j * dy
    ana = _analytical_jacobian(inputs, [i_list[ii]], outs[diff[oi]], float("inf"), False)[0]
    diff_max = np.max(np.abs(num - ana)) if num.size else 0.0
    msg = ("\nThe quantities above are fast-mode ones: v^T J u for random unit vectors u and "
           "v. The same Jacobians recomputed in slow mode (element by element):\n\n"
           f"Numerical:\n {_show(num)}\nAnalytical:\n{_show(ana)}\n\n"
           f"The max per-element difference (slow mode) is: {diff_max}.\n")
    if np.allclose(ana, num, rtol=rtol, atol=atol):
        msg += _FAST_SLOW_OK_HELP
    return msg


# ---------------------------------------------------------------------------- other checks
def _check_forward(func, inputs, i_list, eps, atol, rtol) -> None:
    forward_ad.check_jvp_against_numerical(func, inputs, i_list, eps, atol, rtol)


def _check_batched(inputs: tuple, out: Any, k: int) -> None:
    """``is_grads_batched=True`` for two random grad_outputs against one backward each."""
    xs = [inputs[i] for i in _diff_inputs(inputs)]
    rng = np.random.default_rng(1)
    dt = _np(out).dtype
    gos = []
    for _ in range(2):
        g = rng.standard_normal(tuple(out.shape))
        if dt.kind == "c":
            g = g + 1j * rng.standard_normal(tuple(out.shape))
        gos.append(g.astype(dt))

    def filled(res: Sequence[Any], batch: Optional[int]) -> list:
        shape = (lambda x: ((batch,) if batch else ()) + tuple(x.shape))
        return [np.zeros(shape(x), dtype=_np(x).dtype) if r is None else _np(r)
                for r, x in zip(res, xs)]

    expected = [filled(grad(out, xs, _tensor_mod._wrap(g), retain_graph=True,
                            allow_unused=True), None) for g in gos]
    try:
        batched = grad(out, xs, _tensor_mod._wrap(np.stack(gos)), retain_graph=True,
                       allow_unused=True, is_grads_batched=True)
    except RuntimeError as ex:
        raise GradcheckError(f"While computing batched gradients, got: {ex}\n\n"
                             f"{_BATCHED_GRAD_HELP}") from ex
    for j, res in enumerate(filled(batched, len(gos))):
        exp = np.stack([e[j] for e in expected])
        if not np.allclose(res, exp):
            raise GradcheckError(f"For output {k} and input {j}:\n\n{_BATCHED_GRAD_HELP}\n\n"
                                 f"Got:\n{_show(res)}\n\nExpected:\n{_show(exp)}")


def _check_zero_grad_outputs(outputs: tuple, inputs: tuple, masked: bool = False) -> None:
    """Zero grad_outputs must give zero gradients of the inputs' dtypes, sizes and layouts (a
    sparse gradient: the input's layout, sparse_dim and dense_dim)."""
    xs = [inputs[i] for i in _diff_inputs(inputs)]
    if not xs:
        raise GradcheckError("no Tensors requiring grad found in input")
    if not outputs:
        return
    res = grad(outputs, xs, [zeros_like(o) for o in outputs], allow_unused=True)
    for g, x in zip(res, xs):
        if g is None:
            continue
        if _is_sparse(g):
            if not _is_sparse(x):
                raise GradcheckError(f"grad is incorrect layout ({g.layout} is not "
                                     f"{x.layout})")
            if g.sparse_dim() != x.sparse_dim():
                raise GradcheckError("grad is sparse tensor, but has incorrect sparse_dim "
                                     f"{g.sparse_dim()}, expected {x.sparse_dim()}")
            if g.dense_dim() != x.dense_dim():
                raise GradcheckError("grad is sparse tensor, but has incorrect dense_dim "
                                     f"{g.dense_dim()}, expected {x.dense_dim()}")
        gd = _np(g)
        if (not np.allclose(gd, 0)) if masked else np.any(gd != 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if g.dtype != x.dtype:
            raise GradcheckError("grad is incorrect type")
        if tuple(g.shape) != tuple(x.shape):
            raise GradcheckError("grad is incorrect size")


def _check_missing_grad_outputs(func: Callable, inputs: tuple, n: int) -> None:
    """Backward with the gradient of one output missing (its node gets zeros from the engine)
    must work and, the other grad_outputs being zero, give zero gradients. The function is run
    again for each output (the previous checks freed the graph)."""
    xs = [inputs[i] for i in _diff_inputs(inputs)]
    for skip in range(n):
        outs = [o for o in _as_tuple(func(*inputs)) if _is_tensor(o) and o.requires_grad]
        kept = [o for k, o in enumerate(outs) if k != skip]
        try:
            res = grad(kept, xs, [zeros_like(o) for o in kept], allow_unused=True)
        except RuntimeError as e:
            raise GradcheckError("Expected backward function to handle undefined output "
                                 "grads.") from e
        if any(g is not None and np.any(_np(g) != 0) for g in res):
            raise GradcheckError("Expected all input grads to be undefined or zero when all "
                                 "output grads are undefined or zero.")


# ---------------------------------------------------------------------------- gradgradcheck
def gradgradcheck(
    func: Callable[..., Any],
    inputs: Union[Any, Sequence[Any]],
    grad_outputs: Optional[Union[Any, Sequence[Any]]] = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """``gradcheck`` of the first-order gradients (as functions of the inputs and of the
    grad_outputs): checks second derivatives (double backward) against finite differences of
    the backward pass. Random grad_outputs in [-1, 1) are used when none are given.

    >>> import ndgrad
    >>> from ndgrad.autograd.gradcheck import gradgradcheck
    >>> x = ndgrad.tensor([0.5, 1.5], dtype=ndgrad.float64, requires_grad=True)
    >>> gradgradcheck(lambda t: t.sin() * t, (x,))
    True
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev "
                             "to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to "
                             "be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be "
                             "True")
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        # uniform in [-1, 1) from the default generator, as torch.testing.make_tensor draws
        # them (so the random stream after a gradgradcheck is torch's)
        outs = [o for o in _as_tuple(func(*inputs)) if _is_tensor(o) and o.requires_grad]
        gos = []
        for o in outs:
            dt = _np(o).dtype if (o.dtype.is_floating_point or o.dtype.is_complex) \
                else np.dtype(np.float64)
            shape = tuple(o.shape)
            if dt.kind == "c":
                real = np.dtype(np.float32 if dt == np.complex64 else np.float64)
                a = uniform_array(shape + (2,), -1.0, 1.0, real, None).view(dt)[..., 0]
            else:
                a = uniform_array(shape, -1.0, 1.0, dt, None)
            if gen_non_contig_grad_outputs and a.ndim:
                a = np.repeat(a, 2, axis=-1)[..., ::2]
            gos.append(_tensor_mod._wrap(a).requires_grad_())
        grad_outputs = tuple(gos)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_out = len(grad_outputs)
    diff_in = set(_diff_inputs(inputs))
    diff_go = {i for i, g in enumerate(grad_outputs) if g.requires_grad}

    def new_func(*args: Any) -> tuple:
        ins = tuple(x.requires_grad_() if i in diff_in else x
                    for i, x in enumerate(args[:len(args) - n_out]))
        outs = [o for o in _as_tuple(func(*ins)) if _is_tensor(o) and o.requires_grad]
        gos = tuple(g.requires_grad_() if i in diff_go else g
                    for i, g in enumerate(args[len(args) - n_out:]))
        res = grad(outs, tuple(x for i, x in enumerate(ins) if i in diff_in), gos,
                   create_graph=True, allow_unused=True)
        return tuple(g for g in res if g is not None)

    return gradcheck(new_func, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     fast_mode=fast_mode, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, masked=masked)
