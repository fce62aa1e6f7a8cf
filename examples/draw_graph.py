"""Draw a small model's backward graph the way torchviz draws PyTorch's: a two-layer MLP with
a mean-squared-error loss, its parameters named, and the tensors each node saved for backward
shown in orange.

Run it (needs ``pip install graphviz`` and the Graphviz programs, e.g.
``apt-get install graphviz``)::

    python examples/draw_graph.py --out docs/backward_graph.png
"""

from __future__ import annotations

import argparse
import pathlib

import ndgrad as torch
import ndgrad.nn as nn
from ndgrad.viz import make_dot


def main(out: str = "backward_graph.png", render: bool = True, verbose: bool = True) -> dict:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))
    x, target = torch.randn(8, 4), torch.randn(8, 1)
    loss = nn.functional.mse_loss(model(x), target)
    dot = make_dot(loss, params=dict(model.named_parameters()), show_saved=True)
    path = None
    if render:
        p = pathlib.Path(out)
        # graphviz's render writes <stem>.<format>; the DOT source is removed afterwards
        path = dot.render(str(p.with_suffix("")), format=p.suffix.lstrip(".") or "png",
                          cleanup=True)
        if verbose:
            print(f"backward graph written to {path}")
    return {"dot": str(dot), "path": path}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="backward_graph.png")
    main(ap.parse_args().out)
