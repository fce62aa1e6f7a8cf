"""``ndgrad.linalg``: PyTorch's ``torch.linalg`` namespace.

The functions live in the op modules (``ndgrad/ops/linalg.py``, ``products.py``,
``linalg_solve.py`` ...); this module only names them as PyTorch does.

Example:
    >>> import ndgrad
    >>> ndgrad.linalg.det(ndgrad.eye(3)).item()
    1.0
    >>> ndgrad.linalg.eigvalsh(ndgrad.tensor([[2.0, 0.0], [0.0, 1.0]])).tolist()
    [1.0, 2.0]
"""

from __future__ import annotations

from .ops.linalg import matmul, vector_norm  # noqa: F401

# ---- products and solvers (issue 8) ----
from ._signature import OUT_FUNCTIONS as _OUT_FUNCTIONS
from ._signature import wrap as _sig
from .ops import linalg_solve as _ls
from .ops import products as _pr

LinAlgError = _ls.LinAlgError
LinAlgError.__module__ = "ndgrad.linalg"
_LinAlgError = LinAlgError       # the class's own name, so pickle finds it
_PRODUCTS_AND_SOLVERS = {
    "cross(Tensor input, Tensor other, *, int dim=-1)": _pr.linalg_cross,
    "multi_dot(Tensor[] tensors)": _pr.multi_dot,
    "vecdot(Tensor x, Tensor y, *, int dim=-1)": _pr.vecdot,
    "matrix_power(Tensor input, int n)": _pr.matrix_power,
    "vander(Tensor x, *, int? N=None)": _pr.vander,
    "diagonal(Tensor A, *, int offset=0, int dim1=-2, int dim2=-1)": _pr.linalg_diagonal,
    "inv(Tensor A)": _ls.linalg_inv,
    "inv_ex(Tensor A, *, bool check_errors=False)": _ls.inv_ex,
    "det(Tensor A)": _ls.det,
    "slogdet(Tensor A)": _ls.slogdet,
    "solve(Tensor A, Tensor B, *, bool left=True)": _ls.solve,
    "solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False)": _ls.solve_ex,
    "solve_triangular(Tensor input, Tensor B, *, bool upper, bool left=True, "
    "bool unitriangular=False)": _ls.solve_triangular,
    "cholesky(Tensor A, *, bool upper=False)": _ls.cholesky,
    "cholesky_ex(Tensor A, *, bool upper=False, bool check_errors=False)": _ls.cholesky_ex,
    "lu_factor(Tensor A, *, bool pivot=True)": _ls.lu_factor,
    "lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False)": _ls.lu_factor_ex,
    "lu(Tensor A, *, bool pivot=True)": _ls.lu,
    "lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, bool adjoint=False)":
        _ls.lu_solve,
    "matrix_exp(Tensor A)": _ls.matrix_exp,
    "norm(Tensor A, Scalar|str? ord=None, int[1]? dim=None, bool keepdim=False, *, "
    "ScalarType? dtype=None)": _ls.linalg_norm,
    "cond(Tensor A, Scalar|str? p=None)": _ls.cond,
    "tensorinv(Tensor A, int ind=2)": _ls.tensorinv,
    "tensorsolve(Tensor A, Tensor B, int[]? dims=None)": _ls.tensorsolve,
}
for _schema, _impl in _PRODUCTS_AND_SOLVERS.items():
    _fn = _sig("linalg_" + _schema, _impl,
               out="linalg_" + _schema.split("(", 1)[0] in _OUT_FUNCTIONS)
    _fn.__doc__ = _impl.__doc__
    globals()[_schema.split("(", 1)[0]] = _fn
matrix_norm = _ls.matrix_norm     # its tuple default is beyond the schema syntax
del _schema, _impl, _fn
# ---- end products and solvers (issue 8) ----
from ._signature import wrap as _wrap_sig  # noqa: E402

# ---- decompositions (issue 8) ----
from .ops import linalg_decomp as _dec  # noqa: E402

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
    _fn = _wrap_sig(_schema, _IMPLS[_name], out=_name in _OUT_FUNCTIONS)
    _fn.__doc__ = _IMPLS[_name].__doc__
    globals()[_name[len("linalg_"):]] = _fn
del _schema, _name, _fn
# ---- end decompositions ----

# ---- autocast (Note [Autocast] in ops/_autocast.py) ----
from .ops import _autocast  # noqa: E402

for _name in _autocast.FP32_LINALG:
    globals()[_name] = _autocast.fp32_op(globals()[_name])
del _name
