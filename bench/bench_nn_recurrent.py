"""ndgrad vs PyTorch (CPU), one run, as ratios (ndgrad time / PyTorch time): a training step
(forward + backward, float32) of

(a) a 2-layer LSTM, input and hidden 128, sequence 32, batch 16;
(b) a 2-layer TransformerEncoder, d_model 128, 4 heads, feed-forward 512, sequence 64, batch 8.

Both libraries start from the same weights. Run: ``python bench/bench_nn_recurrent.py`` (needs
torch); ``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS`` set the threads of both (default 2).
Timings are medians of 10 calls after 2 warm-up calls.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

import numpy as np
import torch

import ndgrad
import ndgrad.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from tests.nn_compare import copy_state  # noqa: E402

warnings.filterwarnings("ignore")
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))


def _median(f, n: int = 10) -> float:
    for _ in range(2):
        f()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def _compare(name: str, tm, nm, x: np.ndarray, first) -> None:
    copy_state(tm, nm)
    tx, nx = torch.tensor(x), ndgrad.tensor(x)

    def tstep():
        tm.zero_grad()
        first(tm(tx)).sum().backward()

    def nstep():
        nm.zero_grad()
        first(nm(nx)).sum().backward()
    a, b = _median(tstep), _median(nstep)
    print(f"{name}: torch {a * 1e3:.2f} ms, ndgrad {b * 1e3:.2f} ms, ratio {b / a:.2f}")


def main() -> None:
    rng = np.random.default_rng(0)
    _compare("LSTM step", torch.nn.LSTM(128, 128, num_layers=2), nn.LSTM(128, 128, num_layers=2),
             rng.standard_normal((32, 16, 128)).astype(np.float32), lambda o: o[0])
    _compare("TransformerEncoder step",
             torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(128, 4, 512, 0.0), 2,
                                         enable_nested_tensor=False),
             nn.TransformerEncoder(nn.TransformerEncoderLayer(128, 4, 512, 0.0), 2,
                                   enable_nested_tensor=False),
             rng.standard_normal((64, 8, 128)).astype(np.float32), lambda o: o)


if __name__ == "__main__":
    main()
