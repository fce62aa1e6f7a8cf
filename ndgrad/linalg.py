"""``ndgrad.linalg``: PyTorch's ``torch.linalg`` namespace.

The implementations live in the op table (``ndgrad/ops/linalg*.py``); this module gathers the
public functions, each wrapped with its declared signature (Note [Declared signatures] in
``_signature.py``).

Example:
    >>> import ndgrad
    >>> ndgrad.linalg.eigvalsh(ndgrad.tensor([[2.0, 0.0], [0.0, 1.0]])).tolist()
    [1.0, 2.0]
"""

from __future__ import annotations

from ._signature import wrap as _wrap_sig

# ---- decompositions (issue 8) ----
from .ops import linalg_decomp as _dec
from .ops.linalg_decomp import LinAlgError  # noqa: F401

_TOL = "Tensor|float?"
_DECOMPOSITIONS = f"""
linalg_qr(Tensor A, str mode='reduced')
linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None)
linalg_svdvals(Tensor A, *, str? driver=None)
linalg_eigh(Tensor A, str UPLO='L')
linalg_eigvalsh(Tensor A, str UPLO='L')
linalg_eig(Tensor input)
linalg_eigvals(Tensor input)
linalg_pinv(Tensor input, {_TOL} rcond=None, bool hermitian=False, *, {_TOL} atol=None, \
{_TOL} rtol=None)
linalg_lstsq(Tensor self, Tensor b, float? rcond=None, *, str? driver=None)
linalg_householder_product(Tensor input, Tensor tau)
linalg_matrix_rank(Tensor input, {_TOL} tol=None, bool hermitian=False, *, {_TOL} atol=None, \
{_TOL} rtol=None)
linalg_ldl_factor(Tensor A, *, bool hermitian=False)
linalg_ldl_factor_ex(Tensor A, *, bool hermitian=False, bool check_errors=False)
linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False)
"""
_IMPLS = {"linalg_qr": _dec.linalg_qr, "linalg_svd": _dec.linalg_svd,
          "linalg_svdvals": _dec.svdvals, "linalg_eigh": _dec.eigh,
          "linalg_eigvalsh": _dec.eigvalsh, "linalg_eig": _dec.eig,
          "linalg_eigvals": _dec.eigvals, "linalg_pinv": _dec.pinv,
          "linalg_lstsq": _dec.lstsq, "linalg_householder_product": _dec.householder_product,
          "linalg_matrix_rank": _dec.matrix_rank, "linalg_ldl_factor": _dec.ldl_factor,
          "linalg_ldl_factor_ex": _dec.ldl_factor_ex, "linalg_ldl_solve": _dec.ldl_solve}
for _schema in _DECOMPOSITIONS.strip().splitlines():
    _name = _schema.split("(", 1)[0]
    _fn = _wrap_sig(_schema, _IMPLS[_name])
    _fn.__doc__ = _IMPLS[_name].__doc__
    globals()[_name[len("linalg_"):]] = _fn
del _schema, _name, _fn
# ---- end decompositions ----
