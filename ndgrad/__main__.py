"""``python -m ndgrad``: a short demonstration.

Trains a small MLP on synthetic regression data for a few steps, printing the loss, then checks
one parameter's gradient against float64 central finite differences.
"""

from __future__ import annotations

import numpy as np

import ndgrad


def init_mlp(sizes: list, dtype=ndgrad.float32) -> list:
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = ndgrad.randn(fan_in, fan_out, dtype=dtype) / float(np.sqrt(fan_in))
        params += [w.requires_grad_(), ndgrad.zeros(fan_out, dtype=dtype, requires_grad=True)]
    return params


def forward(params: list, x: ndgrad.Tensor) -> ndgrad.Tensor:
    h = x
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        if i + 2 < len(params):
            h = h.tanh()
    return h


def mse(pred: ndgrad.Tensor, target: ndgrad.Tensor) -> ndgrad.Tensor:
    return ((pred - target) ** 2).mean()


def train(steps: int = 200, lr: float = 0.1) -> list:
    ndgrad.manual_seed(0)
    x = ndgrad.randn(256, 4)
    y = (x[:, :1] * 2.0).sin() + x[:, 1:2] * x[:, 2:3] - 0.5 * x[:, 3:]   # a smooth target
    params = init_mlp([4, 32, 32, 1])
    losses = []
    for step in range(steps + 1):
        loss = mse(forward(params, x), y)
        loss.backward()
        with ndgrad.no_grad():
            for p in params:
                p -= lr * p.grad
                p.grad = None
        losses.append(loss.item())
        if step % 25 == 0:
            print(f"step {step:4d}  loss {loss.item():.5f}")
    return losses


def gradient_check() -> float:
    """Max abs difference between backward and finite differences for one weight matrix."""
    ndgrad.manual_seed(1)
    params = init_mlp([3, 5, 2], dtype=ndgrad.float64)
    x = ndgrad.randn(7, 3, dtype=ndgrad.float64)
    y = ndgrad.randn(7, 2, dtype=ndgrad.float64)
    mse(forward(params, x), y).backward()
    w = params[0]
    analytic = w.grad.numpy().copy()
    numeric = np.zeros_like(analytic)
    eps = 1e-6
    data = w.detach().numpy()
    with ndgrad.no_grad():
        for idx in np.ndindex(*data.shape):
            old = data[idx]
            data[idx] = old + eps
            plus = mse(forward(params, x), y).item()
            data[idx] = old - eps
            minus = mse(forward(params, x), y).item()
            data[idx] = old
            numeric[idx] = (plus - minus) / (2 * eps)
    err = float(np.abs(analytic - numeric).max())
    print(f"gradient of W1 (3x5): backward vs finite differences, max abs diff = {err:.2e}")
    print("backward:\n", np.array2string(analytic, precision=5))
    return err


def main() -> None:
    print("ndgrad demo: MLP 4-32-32-1 (tanh) on synthetic data, SGD lr=0.1")
    losses = train()
    print(f"loss went from {losses[0]:.4f} to {losses[-1]:.4f}")
    err = gradient_check()
    if err > 1e-6:
        raise SystemExit(f"gradient check failed: {err}")
    print("gradient check passed")


if __name__ == "__main__":
    main()
