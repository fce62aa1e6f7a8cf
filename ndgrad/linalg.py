"""``ndgrad.linalg``: PyTorch's ``torch.linalg`` namespace.

The functions live in the op modules (``ndgrad/ops/linalg.py``, ``products.py``,
``linalg_solve.py`` ...); this module only names them as PyTorch does.

Example:
    >>> import ndgrad
    >>> ndgrad.linalg.det(ndgrad.eye(3)).item()
    1.0
"""

from __future__ import annotations

from .ops.linalg import matmul, vector_norm  # noqa: F401

# ---- products and solvers (issue 8) ----
from .ops import linalg_solve as _ls
from .ops import products as _pr

LinAlgError = _ls.LinAlgError
cross = _pr.linalg_cross
multi_dot = _pr.multi_dot
vecdot = _pr.vecdot
matrix_power = _pr.matrix_power
vander = _pr.vander
diagonal = _pr.linalg_diagonal
inv = _ls.linalg_inv
inv_ex = _ls.inv_ex
det = _ls.det
slogdet = _ls.slogdet
solve = _ls.solve
solve_ex = _ls.solve_ex
solve_triangular = _ls.solve_triangular
cholesky = _ls.cholesky
cholesky_ex = _ls.cholesky_ex
lu_factor = _ls.lu_factor
lu_factor_ex = _ls.lu_factor_ex
lu = _ls.lu
lu_solve = _ls.lu_solve
matrix_exp = _ls.matrix_exp
norm = _ls.linalg_norm
matrix_norm = _ls.matrix_norm
cond = _ls.cond
tensorinv = _ls.tensorinv
tensorsolve = _ls.tensorsolve
# ---- end products and solvers (issue 8) ----
