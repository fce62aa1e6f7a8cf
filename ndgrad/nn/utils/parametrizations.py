"""Parametrizations built on ``parametrize``, as ``torch.nn.utils.parametrizations``:
``weight_norm`` (``weight = g * v / ||v||``, the originals being ``original0 = g`` and
``original1 = v``), ``spectral_norm`` (``weight / sigma`` with ``sigma`` estimated by power
iteration, its vectors kept as buffers ``_u`` and ``_v``) and ``orthogonal`` (the matrix
exponential, Cayley map or Householder product of an unconstrained matrix).

    >>> import ndgrad
    >>> import ndgrad.nn as nn
    >>> from ndgrad.nn.utils.parametrizations import weight_norm
    >>> m = weight_norm(nn.Linear(20, 40))
    >>> m.parametrizations.weight.original0.shape, m.parametrizations.weight.original1.shape
    (ndgrad.Size([40, 1]), ndgrad.Size([40, 20]))
"""

from __future__ import annotations

from enum import Enum, auto
from typing import Optional

import numpy as np

from ... import _creation
from ... import cat, eye, geqrf, zeros, zeros_like
from ...autograd import grad_mode
from ... import linalg as _la
from ...ops import linalg as _linalg
from ...tensor import Tensor
from .. import init
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _norm_except_dim(v: Tensor, pow: float, dim: int) -> Tensor:
    """The ``pow``-norm of ``v`` over every dim except ``dim`` (kept, the others of size 1);
    over all of ``v`` (0-d) when ``dim == -1``."""
    if dim == -1:
        return _linalg.vector_norm(v, pow)
    nd = v.dim()
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{nd}, {nd - 1}], "
                         f"but got {dim})")
    dim %= nd                   # another negative dim counts from the end
    others = tuple(d for d in range(nd) if d != dim)
    return _linalg.vector_norm(v, pow, dim=others, keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    return v * (g / _norm_except_dim(v, 2, dim))


def _normalize(x: Tensor, eps: float) -> Tensor:
    return x / _linalg.vector_norm(x, 2, dim=0, keepdim=True).clamp_min(eps)


class _WeightNorm(Module):
    def __init__(self, dim: Optional[int] = 0) -> None:
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple:
        return _norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: Optional[int] = 0) -> Module:
    """Parametrize ``module.<name>`` as ``g * v / ||v||`` (norm over every dim but ``dim``;
    ``dim=None`` is the norm of the whole tensor). State dicts of the old
    ``nn.utils.weight_norm`` (``<name>_g``/``<name>_v`` keys) load too."""
    _wn = _WeightNorm(dim)
    parametrize.register_parametrization(module, name, _wn, unsafe=True)

    def _weight_norm_compat_hook(state_dict: dict, prefix: str, local_metadata: dict,
                                 strict: bool, missing_keys: list, unexpected_keys: list,
                                 error_msgs: list) -> None:
        g_key = f"{prefix}{name}_g"
        v_key = f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            original0 = state_dict.pop(g_key)
            original1 = state_dict.pop(v_key)
            state_dict[f"{prefix}parametrizations.{name}.original0"] = original0
            state_dict[f"{prefix}parametrizations.{name}.original1"] = original1

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = init.normal_(_creation.empty(h, dtype=weight.dtype), 0, 1)
            v = init.normal_(_creation.empty(w, dtype=weight.dtype), 0, 1)
            self.register_buffer("_u", _normalize(u, self.eps))
            self.register_buffer("_v", _normalize(v, self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with grad_mode.no_grad():
            w = weight_mat.detach()
            for _ in range(n_power_iterations):
                self._u.copy_(_normalize(w.mv(self._v), self.eps))
                self._v.copy_(_normalize(w.mH.mv(self._u), self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return _normalize(weight, self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.vdot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: Optional[int] = None) -> Module:
    """Parametrize ``module.<name>`` as itself divided by its largest singular value
    (estimated by ``n_power_iterations`` of power iteration per training-mode access)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    base: Tensor

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = cat([X, zeros(*X.shape[:-2], n, n - k, dtype=X.dtype)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _la.matrix_exp(A)
            else:
                Id = eye(n, dtype=A.dtype)
                Q = _la.solve(Id - A * 0.5, Id + A * 0.5)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _la.householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        with grad_mode.no_grad():
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                A, tau = _geqrf(Q)
                A.diagonal(dim1=-2, dim2=-1).sign_()
                A.diagonal(dim1=-2, dim2=-1)[tau == 0.0] *= -1
                return A.mT if transpose else A
            if n == k:
                if not _is_orthogonal(Q):
                    Q = _make_orthogonal(Q)
                else:
                    Q = Q.clone()
            else:
                N = init.normal_(_creation.empty(*(Q.size()[:-2] + (n, n - k)),
                                                 dtype=Q.dtype), 0, 1)
                Q = cat([Q, N], dim=-1)
                Q = _make_orthogonal(Q)
            self.base = Q
            neg_Id = zeros_like(Q_init)
            neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_Id


def _is_orthogonal(Q: Tensor, eps: Optional[float] = None) -> bool:
    n, k = Q.size(-2), Q.size(-1)
    Id = eye(k, dtype=Q.dtype)
    eps = 10.0 * n * _finfo_eps(Q)
    return bool((Q.mH @ Q).sub(Id).abs().max() <= eps) if Q.numel() else True


def _geqrf(A: Tensor) -> tuple:
    return geqrf(A)


def _finfo_eps(Q: Tensor) -> float:
    return float(np.finfo(Q._data.dtype).eps)


def _make_orthogonal(A: Tensor) -> Tensor:
    X, tau = _geqrf(A)
    Q = _la.householder_product(X, tau)
    Q = Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)
    return Q


def orthogonal(module: Module, name: str = "weight", orthogonal_map: Optional[str] = None,
               *, use_trivialization: bool = True) -> Module:
    """Parametrize the matrix (or batch of matrices) ``module.<name>`` to be orthogonal
    (``orthogonal_map``: ``"matrix_exp"``, ``"cayley"`` or ``"householder"``)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.size(-2) == weight.size(-1)
                          or weight.is_complex() else "householder")
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module

