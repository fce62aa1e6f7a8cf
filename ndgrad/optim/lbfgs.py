"""L-BFGS: limited-memory BFGS with an optional strong-Wolfe line search.

Example:
    >>> import ndgrad
    >>> w = ndgrad.tensor([3.0, -1.0], requires_grad=True)
    >>> opt = ndgrad.optim.LBFGS([w], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = ((w - 1) ** 2).sum()
    ...     loss.backward()
    ...     return loss
    >>> _ = opt.step(closure)
    >>> [round(v, 4) for v in w.tolist()]
    [1.0, 1.0]
"""

from __future__ import annotations

import math
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from .. import _creation
from ..autograd.grad_mode import enable_grad
from .optimizer import Optimizer, bump, real_view

__all__ = ["LBFGS"]


class LBFGS(Optimizer):
    """L-BFGS as ``torch.optim.LBFGS`` (one parameter group; ``step`` needs a closure that
    re-evaluates the loss and its gradients). Each ``step`` runs up to ``max_iter`` iterations:
    a direction from the last ``history_size`` curvature pairs (two-loop recursion, initial
    Hessian scale ``y's / y'y``), then a step of ``lr`` (the first one scaled by ``1 /
    |g|_1``) or, with ``line_search_fn="strong_wolfe"``, the step the strong-Wolfe search
    (cubic interpolation and zoom) finds. Its state (directions, step, counters) persists
    across calls, in ``state_dict()`` as torch keeps it."""

    def __init__(self, params: Any, lr: float = 1, max_iter: int = 20,
                 max_eval: Optional[int] = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: Optional[str] = None) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # ------------------------------------------------------------------ flat views
    def _flat_grad(self) -> np.ndarray:
        # complex parameters take part as pairs of reals, as in torch
        return np.concatenate([np.zeros_like(real_view(p._data)).reshape(-1) if p.grad is None
                               else real_view(p.grad._data).reshape(-1) for p in self._params])

    def _flat_params(self) -> List[np.ndarray]:
        return [p._data.copy() for p in self._params]

    def _set_params(self, values: List[np.ndarray]) -> None:
        for p, v in zip(self._params, values):
            p._data[...] = v
            bump(p)

    def _move(self, t: float, d: np.ndarray) -> None:
        """``params += t * d`` (``d`` flat)."""
        offset = 0
        for p in self._params:
            a = real_view(p._data)
            n = a.size
            a += (t * d[offset:offset + n]).reshape(a.shape).astype(a.dtype, copy=False)
            bump(p)
            offset += n

    def _evaluate(self, closure: Callable, x: List[np.ndarray], t: float, d: np.ndarray
                  ) -> Tuple[float, np.ndarray]:
        """Loss and flat gradient at ``x + t d``; the parameters are restored to ``x``."""
        self._move(t, d)
        with enable_grad():
            loss = _value(closure())
        g = self._flat_grad()
        self._set_params(x)
        return loss, g

    # ------------------------------------------------------------------ step
    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run up to ``max_iter`` L-BFGS iterations; returns the loss of the first closure
        evaluation."""
        if closure is None:
            raise RuntimeError("LBFGS requires a closure that re-evaluates the model")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history, line_search = group["history_size"], group["line_search_fn"]
        if line_search is not None and line_search != "strong_wolfe":
            raise RuntimeError("only 'strong_wolfe' is supported")
        st = self.state[self._params[0]]
        st.setdefault("func_evals", 0)
        st.setdefault("n_iter", 0)

        with enable_grad():
            orig_loss = closure()
        loss = _value(orig_loss)
        evals = 1
        st["func_evals"] += 1
        g = self._flat_grad()
        if np.abs(g).max() <= tol_grad:
            return orig_loss

        d = _arr(st.get("d"))
        t: Any = st.get("t")
        dirs, steps = _arrs(st.get("old_dirs")), _arrs(st.get("old_stps"))
        ro: Any = st.get("ro")
        h_diag: Any = st.get("H_diag")
        g_prev = _arr(st.get("prev_flat_grad"))
        loss_prev = st.get("prev_loss")
        al: list = [None] * history
        it = 0
        while it < max_iter:
            it += 1
            st["n_iter"] += 1
            if st["n_iter"] == 1:
                d, dirs, steps, ro, h_diag = -g, [], [], [], 1.0
            else:
                d, h_diag = self._direction(g, g_prev, d, t, dirs, steps, ro, h_diag, al,
                                            history)
            g_prev, loss_prev = g.copy(), loss
            t = min(1.0, 1.0 / np.abs(g).sum()) * lr if st["n_iter"] == 1 else lr
            gtd = float(g.dot(d))
            if gtd > -tol_change:
                break
            if line_search is not None:
                x0 = self._flat_params()
                loss, g, t, n = _strong_wolfe(
                    lambda x, s, dd: self._evaluate(closure, x, s, dd), x0, t, d, loss, g, gtd)
                self._move(t, d)
                opt_cond = np.abs(g).max() <= tol_grad
            else:
                self._move(t, d)
                n = 0
                opt_cond = False
                if it != max_iter:
                    with enable_grad():
                        loss = _value(closure())
                    g = self._flat_grad()
                    opt_cond = np.abs(g).max() <= tol_grad
                    n = 1
            evals += n
            st["func_evals"] += n
            if it == max_iter or evals >= max_eval or opt_cond:
                break
            if np.abs(d * t).max() <= tol_change or abs(loss - loss_prev) < tol_change:
                break
        # kept as tensors, as torch keeps them (state dicts save and load like torch's)
        st.update(d=_tensor(d), t=t, old_dirs=[_tensor(a) for a in dirs],
                  old_stps=[_tensor(a) for a in steps], ro=ro, H_diag=h_diag,
                  prev_flat_grad=_tensor(g_prev), prev_loss=loss_prev, al=al)
        return orig_loss

    @staticmethod
    def _direction(g: np.ndarray, g_prev: np.ndarray, d: np.ndarray, t: float, dirs: list,
                   steps: list, ro: list, h_diag: float, al: list, history: int
                   ) -> Tuple[np.ndarray, float]:
        """Update the curvature pairs with the last step, then the two-loop recursion."""
        y = g - g_prev
        s = d * t
        ys = float(y.dot(s))
        if ys > 1e-10:
            if len(dirs) == history:
                dirs.pop(0)
                steps.pop(0)
                ro.pop(0)
            dirs.append(y)
            steps.append(s)
            ro.append(1.0 / ys)
            h_diag = ys / float(y.dot(y))
        q = -g
        for i in range(len(dirs) - 1, -1, -1):
            al[i] = float(steps[i].dot(q)) * ro[i]
            q = q - al[i] * dirs[i]
        r = q * h_diag
        for i in range(len(dirs)):
            beta = float(dirs[i].dot(r)) * ro[i]
            r = r + (al[i] - beta) * steps[i]
        return r, h_diag


def _tensor(a: Any) -> Any:
    return None if a is None else _creation.tensor(a)


def _arr(t: Any) -> Any:
    return None if t is None else np.asarray(t.numpy() if hasattr(t, "numpy") else t)


def _arrs(ts: Any) -> Any:
    return None if ts is None else [_arr(t) for t in ts]


def _value(loss: Any) -> float:
    return float(loss.detach().item()) if hasattr(loss, "detach") else float(loss)


# ---------------------------------------------------------------------------- line search
def _cubic_min(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
               bounds: Optional[Tuple[float, float]] = None) -> float:
    """The minimizer of the cubic through two points with their slopes, clamped to
    ``bounds`` (default: between the points); their midpoint when the cubic has none."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 * d1 - g1 * g2
    if disc < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(disc)
    if x1 <= x2:
        x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        x = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(x, lo), hi)


def _strong_wolfe(evaluate: Callable, x: list, t: float, d: np.ndarray, f: float,
                  g: np.ndarray, gtd: float, c1: float = 1e-4, c2: float = 0.9,
                  tol_change: float = 1e-9, max_ls: int = 25
                  ) -> Tuple[float, np.ndarray, float, int]:
    """A step ``t`` along ``d`` meeting the strong Wolfe conditions: bracketing by
    extrapolation, then zoom by safeguarded cubic interpolation. Returns the loss, flat
    gradient, step and number of evaluations."""
    d_norm = np.abs(d).max()
    f_new, g_new = evaluate(x, t, d)
    n = 1
    gtd_new = float(g_new.dot(d))
    # Each bracket end: [step, loss, gradient, directional derivative].
    prev = [0.0, f, g.copy(), gtd]
    done, it = False, 0
    ends: list = []
    while it < max_ls:
        cur = [t, f_new, g_new.copy(), gtd_new]
        if f_new > f + c1 * t * gtd or (it > 1 and f_new >= prev[1]):
            ends = [prev, cur]
            break
        if abs(gtd_new) <= -c2 * gtd:
            ends, done = [cur], True
            break
        if gtd_new >= 0:
            ends = [prev, cur]
            break
        t_next = _cubic_min(prev[0], prev[1], prev[3], t, f_new, gtd_new,
                            bounds=(t + 0.01 * (t - prev[0]), t * 10))
        prev = cur
        t = t_next
        f_new, g_new = evaluate(x, t, d)
        n += 1
        gtd_new = float(g_new.dot(d))
        it += 1
    if it == max_ls:
        ends = [[0.0, f, g, gtd], [t, f_new, g_new, gtd_new]]
    low, high = (0, 1) if ends[0][1] <= ends[-1][1] else (1, 0)
    stalled = False
    while not done and it < max_ls:
        a, b = ends[0], ends[1]
        if abs(b[0] - a[0]) * d_norm < tol_change:
            break
        t = _cubic_min(a[0], a[1], a[3], b[0], b[1], b[3])
        top, bottom = max(a[0], b[0]), min(a[0], b[0])
        margin = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < margin:
            if stalled or t >= top or t <= bottom:
                t = top - margin if abs(t - top) < abs(t - bottom) else bottom + margin
                stalled = False
            else:
                stalled = True
        else:
            stalled = False
        f_new, g_new = evaluate(x, t, d)
        n += 1
        gtd_new = float(g_new.dot(d))
        it += 1
        cur = [t, f_new, g_new.copy(), gtd_new]
        if f_new > f + c1 * t * gtd or f_new >= ends[low][1]:
            ends[high] = cur
            low, high = (0, 1) if ends[0][1] <= ends[1][1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (ends[high][0] - ends[low][0]) >= 0:
                ends[high] = ends[low]
            ends[low] = cur
    best = ends[low]
    return best[1], best[2], best[0], n
