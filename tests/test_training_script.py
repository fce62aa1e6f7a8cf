"""One training program written against PyTorch's API (a model, SGD with momentum, a learning
rate schedule, a shuffling DataLoader, a checkpoint saved mid-way and resumed into fresh
objects) run under ``import torch`` and under ``import ndgrad as torch``: the same loss at
every step (float64)."""

from __future__ import annotations

import io

import numpy as np
import torch as real_torch

import ndgrad


def program(torch):
    """The user's script: nothing in it knows which library ``torch`` is."""
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden = nn.Linear(2, 8)
            self.out = nn.Linear(8, 1)

        def forward(self, x):
            return self.out(torch.tanh(self.hidden(x)))

    def build():
        model = Net().double()
        with torch.no_grad():
            for p in model.parameters():   # a deterministic start, written once
                p.copy_(torch.linspace(-0.5, 0.5, p.numel(), dtype=torch.float64)
                        .reshape(p.shape))
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
        return model, opt, sched

    torch.manual_seed(0)
    x = torch.linspace(-1, 1, 64, dtype=torch.float64).reshape(32, 2)
    y = x[:, :1] * 2 - x[:, 1:] ** 2
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8,
                                         shuffle=True)
    model, opt, sched = build()
    losses = []

    def epoch():
        for xb, yb in loader:
            opt.zero_grad()
            loss = ((model(xb) - yb) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        sched.step()

    for _ in range(3):
        epoch()
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                "sched": sched.state_dict()}, buf)
    buf.seek(0)
    ckpt = torch.load(buf)
    model, opt, sched = build()
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["opt"])
    sched.load_state_dict(ckpt["sched"])
    for _ in range(4):
        epoch()
    return losses


def test_same_losses_under_torch_and_ndgrad():
    want = program(real_torch)
    got = program(ndgrad)
    assert len(got) == len(want) == 28
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got[-1] < got[0] / 2
