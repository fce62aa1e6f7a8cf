"""Which ops accept the barebones unsigned dtypes (uint16, uint32, uint64), and torch's error
for the others (Note [Barebones unsigned dtypes] in _dtype.py).

Example:
    >>> import ndgrad
    >>> a = ndgrad.tensor([1, 2], dtype=ndgrad.uint16)
    >>> (a * a).tolist()
    [1, 4]
    >>> a + a
    Traceback (most recent call last):
    NotImplementedError: "add_stub" not implemented for 'UInt16'
"""

from __future__ import annotations

from typing import Any

from . import _dtype

# Ops (by op-table name) that run on the barebones dtypes as torch's CPU kernels do.
ALLOWED = frozenset((
    # creation, copies and casts
    "clone", "copy_", "to", "cat", "stack", "where", "constant_pad_nd", "diag_embed", "repeat",
    "roll", "unfold",
    # views and indexing with integer or boolean indices
    "as_strided", "expand", "getitem", "index", "permute", "split", "unbind", "unsqueeze",
    "view", "squeeze", "transpose", "t", "reshape", "block_diag", "fill_", "zero_",
    # sorting; rounding and nan_to_num are the identity on integers
    "sort", "sort_indices", "ceil", "floor", "round", "trunc", "nan_to_num",
    # random_ with bounds (not without: REFUSED_NODES)
    "random",
    # comparisons for equality, bitwise and/or/xor, the float tests
    "eq", "ne", "bitwise_and", "bitwise_or", "bitwise_xor", "isnan", "isinf", "isfinite",
    "isreal", "signbit",
    # the few arithmetic kernels: products and sums (whose results are int64)
    "mul", "sum", "nansum", "prod", "cumsum", "cumprod",
))


def _clamp(arrays: Any, args: Any) -> str:
    return "clamp_scalar_cpu" if len(arrays) == 1 else "clamp_cpu"


def _extreme(base: str, pos: int) -> Any:
    return lambda arrays, args: f"{base if args[pos] else base.replace('max', 'min')}_cpu"


def _div_mode(arrays: Any, args: Any) -> str:
    return f"div_{args[0] if args else 'floor'}_cpu"


# torch's kernel name in the error of a refused op, when it is not "<op>_cpu" (a function of
# the op's arrays and arguments where the overload decides).
KERNELS: dict = {
    "add": "add_stub", "sub": "add_stub", "rsub": "add_stub", "max": "max_all",
    "min": "min_all", "max_indices": _extreme("max", 2),
    "amax": "max_values_cpu", "amin": "min_values_cpu", "topk_indices": "topk_cpu",
    "kthvalue_indices": "kthvalue_cpu", "cummax_indices": _extreme("cummax", 1),
    "div": _div_mode, "floor_divide": _div_mode,
    "pow": "pow", "clamp": _clamp, "clamp_min": "clamp_min_scalar_cpu",
    "clamp_max": "clamp_max_scalar_cpu", "relu": "clamp_min_scalar_cpu",
    "masked_fill": "masked_fill", "gather": "scatter_gather_tensor_cpu",
    "scatter": "scatter_gather_tensor_cpu", "scatter_add": "scatter_gather_tensor_cpu",
    "index_select": "index_select", "index_put": "index_put", "index_put_": "index_put",
    "tril": "tril", "triu": "triu", "histc": "aminmax_cpu", "aminmax": "aminmax_cpu",
    "dot": "dot", "mm": "addmm_impl_cpu_", "matmul": "dot", "mv": "addmv_impl_cpu",
    "nonzero": "nonzero_count_cpu", "count_nonzero": "nonzero_count_cpu",
    "searchsorted": "searchsorted_out_cpu", "bucketize": "searchsorted_out_cpu",
    "bitwise_left_shift": "lshift_cpu", "bitwise_right_shift": "rshift_cpu",
    "bernoulli": "bernoulli_scalar_cpu_", "take": "take_cpu", "put": "take_put_cpu",
    "index_fill": "index_fill_cpu", "index_add": "index_add_", "masked_scatter": "masked_scatter",
    "mode_indices": "mode_cpu", "trace": "trace", "sgn": "sign_cpu",
}


# Ops refused although their name is allowed, by node name: random_() without bounds.
REFUSED_NODES = {"RandomBackward2": "random_kernel_cpu"}


def _error(kernel: str, d: _dtype.dtype) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for \'{d._torch_name}\'')


def check(name: str, arrays: Any, args: Any = (), node: str = "") -> None:
    """Raise torch's error if op ``name`` (its node ``node``) is refused and one of
    ``arrays`` is barebones."""
    refused = REFUSED_NODES.get(node)
    if refused is None and name in ALLOWED:
        return
    for a in arrays:
        dt = getattr(a, "dtype", None)
        if dt in _dtype.BAREBONES_NP:
            k = refused or KERNELS.get(name, name + "_cpu")
            raise _error(k(arrays, args) if callable(k) else k, _dtype._FROM_NP[dt])


def check_dtype(kernel: str, d: Any) -> None:
    """Raise torch's error for ``kernel`` (a creation or output-dtype check) if ``d`` is a
    barebones dtype."""
    if isinstance(d, _dtype.dtype) and d in _dtype.BAREBONES:
        raise _error(kernel, d)
