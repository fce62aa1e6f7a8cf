"""A character-level LSTM language model on the Zen of Python (``this.s``, shipped with every
Python), written as plain PyTorch code on ndgrad. It prints a sample of generated text as it
learns.

Run it (about half a minute on two cores)::

    python examples/char_lstm.py --steps 300
"""

from __future__ import annotations

import argparse
import ast
import codecs
import importlib.util

import ndgrad as torch
import ndgrad.nn as nn
import ndgrad.nn.functional as F


def zen() -> str:
    """The Zen of Python: ``this.s`` (ROT13), read from the module's source, since importing
    ``this`` prints it."""
    with open(importlib.util.find_spec("this").origin) as f:
        tree = ast.parse(f.read())
    s = next(n.value.value for n in tree.body if isinstance(n, ast.Assign)
             and getattr(n.targets[0], "id", "") == "s")
    return codecs.decode(s, "rot13")


class CharLSTM(nn.Module):
    """Embedding -> 2-layer LSTM -> linear over the vocabulary."""

    def __init__(self, vocab: int, hidden: int = 128) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 32)
        self.lstm = nn.LSTM(32, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x: torch.Tensor, state=None):
        h, state = self.lstm(self.embed(x), state)
        return self.head(h), state


def sample(model: CharLSTM, stoi: dict, itos: list, prompt: str, n: int,
           temperature: float = 0.8) -> str:
    """Continue ``prompt`` by ``n`` characters, drawing each from the model's softmax."""
    model.eval()
    out = list(prompt)
    with torch.no_grad():
        x = torch.tensor([[stoi[c] for c in prompt]])
        logits, state = model(x)
        for _ in range(n):
            probs = F.softmax(logits[0, -1] / temperature, dim=0)
            nxt = int(torch.multinomial(probs, 1))
            out.append(itos[nxt])
            logits, state = model(torch.tensor([[nxt]]), state)
    model.train()
    return "".join(out)


def main(steps: int = 300, seq: int = 48, batch: int = 16, seed: int = 0,
         verbose: bool = True) -> dict:
    torch.manual_seed(seed)
    text = zen()
    itos = sorted(set(text))
    stoi = {c: i for i, c in enumerate(itos)}
    data = torch.tensor([stoi[c] for c in text])
    model = CharLSTM(len(itos))
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    losses = []
    for step in range(1, steps + 1):
        starts = torch.randint(0, len(text) - seq - 1, (batch,))
        x = torch.stack([data[s:s + seq] for s in starts.tolist()])
        y = torch.stack([data[s + 1:s + seq + 1] for s in starts.tolist()])
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, len(itos)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if verbose and (step % 100 == 0 or step == steps):
            print(f"step {step}: loss {loss.item():.3f}")
            print("   " + sample(model, stoi, itos, "Beautiful ", 60).replace("\n", " | "))
    return {"losses": losses, "sample": sample(model, stoi, itos, "Simple ", 40)}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    main(a.steps, seed=a.seed)
