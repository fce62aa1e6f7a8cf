"""PyTorch's warn-once deprecation messages of the old linear-algebra functions.

``torch.cholesky``, ``torch.lu``, ``torch.lu_solve``, ``torch.qr``, ``torch.triangular_solve``
and ``torch.chain_matmul`` (function and method forms) warn the first time one is called in
the process, naming their ``torch.linalg`` replacement.

>>> import warnings, ndgrad
>>> from ndgrad import _warn
>>> _warn._warned_once.discard(MESSAGES["qr"])
>>> with warnings.catch_warnings(record=True) as w:
...     warnings.simplefilter("always")
...     _ = ndgrad.qr(ndgrad.eye(2))
>>> str(w[0].message).splitlines()[0][:52]
'torch.qr is deprecated in favor of torch.linalg.qr a'
"""

from __future__ import annotations

from .._warn import warn_user_once

__all__ = ["MESSAGES", "warn_deprecated"]

_FUTURE = "will be removed in a future PyTorch release."

MESSAGES = {
    "cholesky": (
        f"torch.cholesky is deprecated in favor of torch.linalg.cholesky and {_FUTURE}\n"
        "L = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\nand\n"
        "U = torch.cholesky(A, upper=True)\nshould be replaced with\n"
        "U = torch.linalg.cholesky(A).mH\nThis transform will produce equivalent results for "
        "all valid (symmetric positive definite) inputs."),
    "lu": (
        "torch.lu is deprecated in favor of torch.linalg.lu_factor / "
        f"torch.linalg.lu_factor_ex and {_FUTURE}\n"
        "LU, pivots = torch.lu(A, compute_pivots)\nshould be replaced with\n"
        "LU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\n"
        "LU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)\n"
        "should be replaced with\nLU, pivots, info = torch.linalg.lu_factor_ex(A, "
        "compute_pivots)"),
    "lu_solve": (
        f"torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand {_FUTURE}\n"
        "Note that torch.linalg.lu_solve has its arguments reversed.\n"
        "X = torch.lu_solve(B, LU, pivots)\nshould be replaced with\n"
        "X = torch.linalg.lu_solve(LU, pivots, B)"),
    "qr": (
        f"torch.qr is deprecated in favor of torch.linalg.qr and {_FUTURE}\n"
        "The boolean parameter 'some' has been replaced with a string parameter 'mode'.\n"
        "Q, R = torch.qr(A, some)\nshould be replaced with\n"
        "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')"),
    "triangular_solve": (
        "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand "
        f"{_FUTURE}\ntorch.linalg.solve_triangular has its arguments reversed and does not "
        "return a copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\n"
        "should be replaced with\nX = torch.linalg.solve_triangular(A, B)."),
    "chain_matmul": (
        f"torch.chain_matmul is deprecated and {_FUTURE} Use torch.linalg.multi_dot instead, "
        "which accepts a list of two or more tensors rather than multiple parameters."),
}


def warn_deprecated(name: str) -> None:
    """Warn (once per process) that the old function ``name`` is deprecated."""
    warn_user_once(MESSAGES[name])
