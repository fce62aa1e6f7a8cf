"""Named tuples of the ops that return several tensors (``torch.return_types``).

Each is a tuple subclass with PyTorch's type name, field names and repr: ``max(dim)`` returns
``ndgrad.return_types.max(values=..., indices=...)``, which unpacks, indexes and compares like a
tuple. Every op module builds its results from the classes here, so ``type(r).__name__`` is the
same as torch's.

Example:
    >>> import ndgrad
    >>> r = ndgrad.tensor([3.0, 1.0, 2.0]).sort()
    >>> type(r).__name__, r.indices
    ('sort', tensor([1, 2, 0]))
    >>> values, indices = r
    >>> ndgrad.tensor([[1.0, 5.0]]).max(1)
    ndgrad.return_types.max(
    values=tensor([5.]),
    indices=tensor([1]))
"""

from __future__ import annotations

from collections import namedtuple

_VI = ("values", "indices")

# name -> field names, as torch.return_types has them.
_FIELDS: dict[str, tuple[str, ...]] = {
    "max": _VI, "min": _VI, "sort": _VI, "topk": _VI, "kthvalue": _VI, "median": _VI,
    "nanmedian": _VI, "mode": _VI, "cummax": _VI, "cummin": _VI,
    "aminmax": ("min", "max"),
    "frexp": ("mantissa", "exponent"),
    "histogram": ("hist", "bin_edges"),
    "histogramdd": ("hist", "bin_edges"),
    "slogdet": ("sign", "logabsdet"),
    "linalg_slogdet": ("sign", "logabsdet"),
    "linalg_inv_ex": ("inverse", "info"),
    "linalg_solve_ex": ("result", "info"),
    "linalg_cholesky_ex": ("L", "info"),
    "linalg_lu_factor": ("LU", "pivots"),
    "linalg_lu_factor_ex": ("LU", "pivots", "info"),
    "linalg_lu": ("P", "L", "U"),
    "lu_unpack": ("P", "L", "U"),
    "triangular_solve": ("solution", "cloned_coefficient"),
    "linalg_qr": ("Q", "R"),
    "qr": ("Q", "R"),
    "linalg_svd": ("U", "S", "Vh"),
    "svd": ("U", "S", "V"),
    "linalg_eigh": ("eigenvalues", "eigenvectors"),
    "linalg_eig": ("eigenvalues", "eigenvectors"),
    "linalg_lstsq": ("solution", "residuals", "rank", "singular_values"),
    "geqrf": ("a", "tau"),
    "linalg_ldl_factor": ("LD", "pivots"),
    "linalg_ldl_factor_ex": ("LD", "pivots", "info"),
}

__all__ = sorted(_FIELDS)


def _repr(self: tuple) -> str:
    body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))  # type: ignore[attr-defined]
    return f"{type(self).__module__}.{type(self).__name__}(\n{body})"


def _make(name: str, fields: tuple[str, ...]) -> type:
    base = namedtuple(name, fields)  # type: ignore[misc]  # one class per op, named as torch's
    cls = type(name, (base,), {"__slots__": (), "__repr__": _repr, "__str__": _repr,
                               "__module__": __name__, "__qualname__": name})
    return cls


max = _make("max", _FIELDS["max"])  # noqa: A001
min = _make("min", _FIELDS["min"])  # noqa: A001
sort = _make("sort", _FIELDS["sort"])
topk = _make("topk", _FIELDS["topk"])
kthvalue = _make("kthvalue", _FIELDS["kthvalue"])
median = _make("median", _FIELDS["median"])
nanmedian = _make("nanmedian", _FIELDS["nanmedian"])
mode = _make("mode", _FIELDS["mode"])
cummax = _make("cummax", _FIELDS["cummax"])
cummin = _make("cummin", _FIELDS["cummin"])
aminmax = _make("aminmax", _FIELDS["aminmax"])
frexp = _make("frexp", _FIELDS["frexp"])
histogram = _make("histogram", _FIELDS["histogram"])
histogramdd = _make("histogramdd", _FIELDS["histogramdd"])
slogdet = _make("slogdet", _FIELDS["slogdet"])
linalg_slogdet = _make("linalg_slogdet", _FIELDS["linalg_slogdet"])
linalg_inv_ex = _make("linalg_inv_ex", _FIELDS["linalg_inv_ex"])
linalg_solve_ex = _make("linalg_solve_ex", _FIELDS["linalg_solve_ex"])
linalg_cholesky_ex = _make("linalg_cholesky_ex", _FIELDS["linalg_cholesky_ex"])
linalg_lu_factor = _make("linalg_lu_factor", _FIELDS["linalg_lu_factor"])
linalg_lu_factor_ex = _make("linalg_lu_factor_ex", _FIELDS["linalg_lu_factor_ex"])
linalg_lu = _make("linalg_lu", _FIELDS["linalg_lu"])
lu_unpack = _make("lu_unpack", _FIELDS["lu_unpack"])
triangular_solve = _make("triangular_solve", _FIELDS["triangular_solve"])
linalg_qr = _make("linalg_qr", _FIELDS["linalg_qr"])
qr = _make("qr", _FIELDS["qr"])
linalg_svd = _make("linalg_svd", _FIELDS["linalg_svd"])
svd = _make("svd", _FIELDS["svd"])
linalg_eigh = _make("linalg_eigh", _FIELDS["linalg_eigh"])
linalg_eig = _make("linalg_eig", _FIELDS["linalg_eig"])
linalg_lstsq = _make("linalg_lstsq", _FIELDS["linalg_lstsq"])
geqrf = _make("geqrf", _FIELDS["geqrf"])
linalg_ldl_factor = _make("linalg_ldl_factor", _FIELDS["linalg_ldl_factor"])
linalg_ldl_factor_ex = _make("linalg_ldl_factor_ex", _FIELDS["linalg_ldl_factor_ex"])

# ``max(x, 0, out=(v, i))`` returns ``max_out``, as torch: the same fields under the name
# ``<op>_out``, one per op above.
OUT_TYPES: dict[str, type] = {name: _make(f"{name}_out", fields)
                              for name, fields in _FIELDS.items()}
globals().update({cls.__name__: cls for cls in OUT_TYPES.values()})
