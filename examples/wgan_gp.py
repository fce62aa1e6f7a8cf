"""A Wasserstein GAN with gradient penalty (WGAN-GP) on a 2-D toy distribution, with ndgrad,
written exactly as PyTorch code.

The real data are eight Gaussians on a ring. A generator (an MLP from 2-D noise) learns to
produce them against a critic (an MLP scoring points) trained to estimate the Wasserstein
distance between real and generated samples. The critic is kept 1-Lipschitz by the gradient
penalty ``(|grad_x critic(x)| - 1)^2`` on points between real and generated samples: a
derivative of a derivative, computed with ``autograd.grad(..., create_graph=True)``. Both
networks train with Adam.

The program prints the Wasserstein estimate and the mean distance of generated points to the
nearest of the eight modes as it trains, then writes a PNG (real vs generated samples over the
critic's contours, and the two curves) and prints its path.

Run it (about 30 s on two cores)::

    python -m pip install -e ".[examples]" && python examples/wgan_gp.py

Options: ``--steps N`` (generator steps), ``--out PATH`` (the PNG), ``--seed S``.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import tempfile
import time

import numpy as np

import ndgrad as torch                # the rest of the file is plain PyTorch code
import ndgrad.nn as nn

MODES = torch.tensor([[2.0 * math.cos(a), 2.0 * math.sin(a)]
                      for a in np.arange(8) * (2 * math.pi / 8)])
NOISE = 2


def real_batch(n: int) -> torch.Tensor:
    """``n`` points from eight Gaussians (standard deviation 0.05) on a ring of radius 2."""
    return MODES[torch.randint(0, 8, (n,))] + 0.05 * torch.randn(n, 2)


def mlp(n_in: int, n_out: int, hidden: int = 64) -> nn.Module:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                         nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, n_out))


def gradient_penalty(critic: nn.Module, real: torch.Tensor, fake: torch.Tensor) -> torch.Tensor:
    """Mean of ``(|grad critic(x)| - 1)^2`` at random points ``x`` between real and fake
    samples; differentiable w.r.t. the critic's parameters (``create_graph=True``)."""
    alpha = torch.rand(real.shape[0], 1)
    x = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    (grad,) = torch.autograd.grad(critic(x).sum(), x, create_graph=True)
    return ((grad.norm(2, dim=1) - 1) ** 2).mean()


def mode_distance(points: torch.Tensor) -> float:
    """Mean distance from each point to the nearest of the eight modes."""
    return torch.cdist(points, MODES).min(dim=1).values.mean().item()


def plot(generator: nn.Module, critic: nn.Module, history: dict, path: str) -> None:
    import matplotlib                                          # the examples extra
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax, ax_w, ax_d) = plt.subplots(1, 3, figsize=(15, 4.8),
                                         gridspec_kw={"width_ratios": [1.3, 1, 1]})
    with torch.no_grad():
        grid = np.linspace(-3, 3, 121)
        gx, gy = np.meshgrid(grid, grid)
        pts = torch.tensor(np.stack([gx.ravel(), gy.ravel()], 1), dtype=torch.float32)
        score = critic(pts).reshape(gx.shape).numpy()
        real = real_batch(1000).numpy()
        fake = generator(torch.randn(1000, NOISE)).numpy()
    cs = ax.contourf(gx, gy, score, levels=20, cmap="RdBu_r", alpha=0.7)
    fig.colorbar(cs, ax=ax, label="critic score")
    ax.scatter(real[:, 0], real[:, 1], s=4, c="black", label="real")
    ax.scatter(fake[:, 0], fake[:, 1], s=4, c="orange", label="generated")
    ax.set(xlim=(-3, 3), ylim=(-3, 3), aspect="equal",
           title=f"real vs generated after {len(history['w'])} generator steps")
    ax.legend(loc="upper right", markerscale=3)
    steps = np.arange(1, len(history["w"]) + 1)
    ax_w.plot(steps, history["w"], lw=0.5, alpha=0.4, color="tab:blue")
    ax_w.plot(steps, _smooth(history["w"]), color="tab:blue")
    ax_w.set(xlabel="generator step", ylabel="critic's estimate", title="Wasserstein estimate")
    ax_d.plot(steps, history["mode_distance"], lw=0.5, alpha=0.4, color="tab:green")
    ax_d.plot(steps, _smooth(history["mode_distance"]), color="tab:green")
    ax_d.set(xlabel="generator step", ylabel="mean distance", yscale="log",
             title="generated points to the nearest mode")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _smooth(values: list, width: int = 25) -> np.ndarray:
    """Running mean over the last ``width`` values."""
    v = np.asarray(values, dtype=float)
    return np.array([v[max(0, i - width + 1):i + 1].mean() for i in range(len(v))])


def main(steps: int = 1500, out: str = "", seed: int = 0, critic_iters: int = 5,
         batch: int = 256, gp_weight: float = 0.1, verbose: bool = True) -> dict:
    with _one_blas_thread():
        return _train(steps, out, seed, critic_iters, batch, gp_weight, verbose)


def _one_blas_thread() -> contextlib.AbstractContextManager:
    # The matrices are small (256 x 64): one BLAS thread is faster than several, and far faster
    # on a loaded machine. threadpoolctl comes with scikit-learn (the examples extra).
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def _train(steps: int, out: str, seed: int, critic_iters: int, batch: int, gp_weight: float,
           verbose: bool) -> dict:
    torch.manual_seed(seed)
    generator, critic = mlp(NOISE, 2), mlp(2, 1)
    opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3, betas=(0.5, 0.9))
    opt_c = torch.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.5, 0.9))
    history: dict = {"w": [], "mode_distance": []}
    start = time.perf_counter()
    for step in range(steps):
        for _ in range(critic_iters):
            real = real_batch(batch)
            with torch.no_grad():
                fake = generator(torch.randn(batch, NOISE))
            wasserstein = critic(real).mean() - critic(fake).mean()
            loss_c = -wasserstein + gp_weight * gradient_penalty(critic, real, fake)
            opt_c.zero_grad()
            loss_c.backward()
            opt_c.step()
        fake = generator(torch.randn(batch, NOISE))
        loss_g = -critic(fake).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
        history["w"].append(wasserstein.item())
        history["mode_distance"].append(mode_distance(fake.detach()))
        if verbose and (step + 1) % max(1, steps // 10) == 0:
            print(f"step {step + 1:5d}: Wasserstein estimate {history['w'][-1]:.4f}  "
                  f"distance to nearest mode {history['mode_distance'][-1]:.4f}")
    seconds = time.perf_counter() - start
    path = out or os.path.join(tempfile.gettempdir(), "ndgrad_wgan_gp.png")
    plot(generator, critic, history, path)
    with torch.no_grad():
        sample = generator(torch.randn(2000, NOISE))
    nearest = torch.cdist(sample, MODES).argmin(dim=1)
    covered = int((torch.bincount(nearest, minlength=8) > 2000 * 0.02).sum())
    if verbose:
        print(f"\ntrained in {seconds:.1f} s; {covered} of 8 modes covered; mean distance to "
              f"the nearest mode {mode_distance(sample):.3f}")
        print(f"real vs generated samples and the critic's contours: {path}")
    return {"history": history, "png": path, "modes_covered": covered,
            "final_mode_distance": mode_distance(sample), "seconds": seconds}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--out", default="")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    main(a.steps, a.out, a.seed)
