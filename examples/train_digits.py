"""Train a small CNN on real handwritten digits with ndgrad, written exactly as PyTorch code.

The data are scikit-learn's bundled digits: 1,797 real 8x8 images, so nothing is downloaded.
The program:
- trains a two-convolution network with ``ndgrad.nn``, ``ndgrad.optim`` and
  ``ndgrad.utils.data``, showing a tqdm progress bar per epoch with loss and accuracy;
- prints the held-out test accuracy;
- writes a PNG with the loss and accuracy curves and some misclassified digits, and prints its
  path;
- checks the gradient of one layer against finite differences.

Run it (about 10-20 s on two cores)::

    python -m pip install -e ".[examples]" && python examples/train_digits.py

Options: ``--epochs N``, ``--out PATH`` (the PNG), ``--seed S``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import ndgrad as torch                # the rest of the file is plain PyTorch code
import ndgrad.nn as nn
import ndgrad.nn.functional as F
from ndgrad.utils.data import DataLoader, TensorDataset, random_split


class DigitNet(nn.Module):
    """conv(1->16) -> relu -> conv(16->32) -> relu -> maxpool(2) -> linear(512->64) -> relu ->
    dropout -> linear(64->10)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.drop = nn.Dropout(0.2)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = self.pool(F.relu(self.conv2(x)))
        x = self.drop(F.relu(self.fc1(x.flatten(1))))
        return self.fc2(x)


def load_digits() -> TensorDataset:
    from sklearn.datasets import load_digits as sk_digits   # the examples extra
    d = sk_digits()
    x = torch.tensor((d.images / 16.0).astype(np.float32)).unsqueeze(1)   # (N, 1, 8, 8)
    y = torch.tensor(d.target.astype(np.int64))
    return TensorDataset(x, y)


def evaluate(model: nn.Module, loader: DataLoader) -> tuple:
    model.eval()
    correct, total, wrong = 0, 0, []
    with torch.no_grad():
        for x, y in loader:
            pred = model(x).argmax(1)
            correct += int((pred == y).sum())
            total += len(y)
            for i in torch.nonzero(pred != y).flatten().tolist():
                wrong.append((x[i, 0].numpy(), int(y[i]), int(pred[i])))
    model.train()
    return correct / total, wrong


def gradient_check(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """The largest relative difference between autograd's gradient of the loss with respect to
    ``fc2.weight`` and central finite differences (float64)."""
    w = model.fc2.weight.detach().double().requires_grad_(True)
    b = model.fc2.bias.detach().double()
    with torch.no_grad():
        h = F.relu(model.fc1(model.pool(F.relu(model.conv2(F.relu(model.conv1(x)))))
                             .flatten(1))).double()

    def loss_of(weight: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(h @ weight.T + b, y)

    (g,) = torch.autograd.grad(loss_of(w), w)
    num = np.zeros(w.shape)
    base = w.detach()
    eps = 1e-6
    for idx in np.ndindex(*w.shape):
        e = torch.zeros_like(base)
        e[idx] = eps
        num[idx] = (loss_of(base + e).item() - loss_of(base - e).item()) / (2 * eps)
    return float(np.abs(g.numpy() - num).max() / max(np.abs(num).max(), 1e-12))


def plot(history: dict, wrong: list, path: str) -> None:
    import matplotlib                                          # the examples extra
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(11, 4))
    ax = fig.add_subplot(1, 3, 1)
    ax.plot(history["loss"], label="train loss")
    ax.set_xlabel("epoch")
    ax.set_title("loss")
    ax.legend()
    ax = fig.add_subplot(1, 3, 2)
    ax.plot(history["train_acc"], label="train")
    ax.plot(history["test_acc"], label="test")
    ax.set_xlabel("epoch")
    ax.set_title("accuracy")
    ax.legend()
    for k, (img, label, pred) in enumerate(wrong[:6]):
        ax = fig.add_subplot(2, 9, 7 + (k % 3) + 9 * (k // 3))
        ax.imshow(img, cmap="gray_r")
        ax.set_title(f"{label}->{pred}", fontsize=8)
        ax.axis("off")
    fig.suptitle("ndgrad: a CNN on scikit-learn's handwritten digits (true->predicted)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(epochs: int = 15, out: str = "", seed: int = 0, verbose: bool = True) -> dict:
    from tqdm import tqdm                                      # the examples extra
    torch.manual_seed(seed)
    data = load_digits()
    train_set, test_set = random_split(data, [0.8, 0.2],
                                       generator=torch.Generator().manual_seed(seed))
    train = DataLoader(train_set, batch_size=64, shuffle=True)
    test = DataLoader(test_set, batch_size=256)
    model = DigitNet()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    history: dict = {"loss": [], "train_acc": [], "test_acc": []}
    start = time.perf_counter()
    for epoch in range(epochs):
        total, correct, seen = 0.0, 0, 0
        bar = tqdm(train, desc=f"epoch {epoch + 1:2d}/{epochs}", leave=False,
                   disable=not verbose)
        for x, y in bar:
            opt.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            total += loss.item() * len(y)
            correct += int((logits.argmax(1) == y).sum())
            seen += len(y)
            bar.set_postfix(loss=f"{total / seen:.3f}", acc=f"{correct / seen:.3f}")
        sched.step()
        test_acc, _ = evaluate(model, test)
        history["loss"].append(total / seen)
        history["train_acc"].append(correct / seen)
        history["test_acc"].append(test_acc)
        if verbose:
            print(f"epoch {epoch + 1:2d}: loss {total / seen:.4f}  train acc "
                  f"{correct / seen:.4f}  test acc {test_acc:.4f}")
    seconds = time.perf_counter() - start
    test_acc, wrong = evaluate(model, test)
    path = out or os.path.join(tempfile.gettempdir(), "ndgrad_digits.png")
    plot(history, wrong, path)
    x, y = next(iter(test))
    rel = gradient_check(model, x[:32], y[:32])
    if verbose:
        print(f"\nheld-out test accuracy: {test_acc:.4f} ({len(test_set)} images, "
              f"{len(wrong)} wrong), trained in {seconds:.1f} s")
        print(f"curves and misclassified digits: {path}")
        print(f"gradient check of fc2.weight against finite differences: max relative "
              f"difference {rel:.1e} ({'passed' if rel < 1e-6 else 'FAILED'})")
    return {"test_acc": test_acc, "history": history, "png": path, "grad_rel_err": rel,
            "seconds": seconds}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--out", default="")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    main(a.epochs, a.out, a.seed)
