"""Fit a small nonlinear regression model, then estimate parameter uncertainty with a Laplace
approximation: the inverse Hessian of the loss at the optimum, computed with
``ndgrad.autograd.functional.hessian`` (vectorized, one batched backward pass), and check one
Hessian-vector product against forward-over-reverse AD.

Run: ``python examples/laplace_uncertainty.py``
"""

from __future__ import annotations

import numpy as np

import ndgrad
from ndgrad.autograd import forward_ad
from ndgrad.autograd.functional import hessian, hvp


def model(theta: ndgrad.Tensor, x: ndgrad.Tensor) -> ndgrad.Tensor:
    """y = a * tanh(b * x + c) + d."""
    a, b, c, d = theta[0], theta[1], theta[2], theta[3]
    return a * (b * x + c).tanh() + d


def loss_fn(theta: ndgrad.Tensor, x: ndgrad.Tensor, y: ndgrad.Tensor) -> ndgrad.Tensor:
    return 0.5 * ((model(theta, x) - y) ** 2).sum()


def main(steps: int = 400, verbose: bool = True) -> dict:
    ndgrad.manual_seed(0)
    true = ndgrad.tensor([2.0, 1.5, -0.5, 0.3], dtype=ndgrad.float64)
    x = ndgrad.linspace(-3, 3, 60, dtype=ndgrad.float64)
    y = model(true, x) + 0.1 * ndgrad.randn(60, dtype=ndgrad.float64)

    theta = ndgrad.tensor([1.0, 1.0, 0.0, 0.0], dtype=ndgrad.float64, requires_grad=True)
    lr = 0.01
    for step in range(steps):
        loss = loss_fn(theta, x, y)
        loss.backward()
        with ndgrad.no_grad():
            theta -= lr * theta.grad
            theta.grad = None
        if verbose and step % 100 == 0:
            print(f"step {step:4d}  loss {loss.item():.4f}")

    fitted = theta.detach()
    H = hessian(lambda t: loss_fn(t, x, y), fitted, vectorize=True)
    # Laplace: posterior covariance ~ sigma^2 * H^-1 with sigma^2 estimated from residuals.
    resid = (model(fitted, x) - y).numpy()
    sigma2 = float(resid @ resid) / (len(resid) - 4)
    cov = sigma2 * np.linalg.inv(H.numpy())
    std = np.sqrt(np.diag(cov))

    # One Hessian-vector product three ways: reverse-over-reverse (hvp), forward-over-reverse,
    # and the dense Hessian.
    v = ndgrad.tensor([1.0, -1.0, 0.5, 2.0], dtype=ndgrad.float64)
    _, hv_rev = hvp(lambda t: loss_fn(t, x, y), fitted, v)
    with forward_ad.dual_level():
        dual = forward_ad.make_dual(fitted.clone().requires_grad_(), v)
        (g,) = ndgrad.autograd.grad(loss_fn(dual, x, y), dual, create_graph=True)
        hv_fwd = forward_ad.unpack_dual(g).tangent.detach()
    hv_dense = H.numpy() @ v.numpy()

    if verbose:
        print("true   ", np.round(true.numpy(), 3))
        print("fitted ", np.round(fitted.numpy(), 3), "+/-", np.round(std, 3))
        print("H v (reverse-over-reverse)", np.round(hv_rev.numpy(), 4))
        print("H v (forward-over-reverse)", np.round(hv_fwd.numpy(), 4))
        print("H v (dense Hessian)       ", np.round(hv_dense, 4))
    return {"true": true.numpy(), "fitted": fitted.numpy(), "std": std,
            "hv": (hv_rev.numpy(), hv_fwd.numpy(), hv_dense)}


if __name__ == "__main__":
    main()
