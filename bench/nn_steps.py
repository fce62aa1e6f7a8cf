"""Training steps of small networks, ndgrad against torch (CPU, float32), from one run.

    PYTHONPATH=. python bench/nn_steps.py [--rounds 3] [--budget 1.0] [--workloads cnn,lenet]
    PYTHONPATH=. python bench/nn_steps.py --breakdown [--cpu] [--workloads lenet]

Workloads (issue 9's speed targets and reports):

* ``cnn``: the shared bench's workload: conv2d(1->8, 3x3) - relu - conv2d(8->16, 3x3) - relu -
  mean on x 16x1x28x28, gradients of both kernels;
* ``lenet``: a LeNet-5 step (batch 64, 1x28x28): forward, cross-entropy, backward, SGD update;
* ``lstm``: a 2-layer LSTM (input and hidden 128, sequence 32, batch 16), forward + backward of
  the output's sum; ``gru`` and ``rnn`` (tanh): the same with a 2-layer GRU and Elman RNN;
* ``transformer``: a 2-layer TransformerEncoder (d_model 128, 4 heads, feed-forward 512,
  dropout 0, sequence 64, batch 8), forward + backward of the output's sum.

Every (library, workload) cell runs in its own process (same weights and data: torch's
initialization copied into ndgrad), the libraries alternate within each round, and each cell
times calls for ``--budget`` seconds after warm-up. The table gives, per cell, the median over
rounds of the per-run medians and the minimum over all calls, and the ratios ndgrad/torch of
both. ``--breakdown`` times ndgrad's step in this process with every op-table forward and
backward rule wrapped: exclusive time per op name (a backward rule's own NumPy work, without
the ops it calls, is "<op> (backward rule)", raw rules included), the rest of the step (Python,
module code, autograd engine) as "outside ops", and the convolution kernels' inclusive times.
The children run without ``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE``, as the shared bench's do.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable

import numpy as np

WORKLOADS = ("cnn", "lenet", "lstm", "gru", "rnn", "transformer")
RECURRENT = {"lstm": "LSTM", "gru": "GRU", "rnn": "RNN"}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _lenet(mod: Any, Fm: Any) -> Any:
    class LeNet5(mod.Module):
        def __init__(self):
            super().__init__()
            self.c1 = mod.Conv2d(1, 6, 5, padding=2)
            self.c2 = mod.Conv2d(6, 16, 5)
            self.f1 = mod.Linear(400, 120)
            self.f2 = mod.Linear(120, 84)
            self.f3 = mod.Linear(84, 10)

        def forward(self, x):
            x = Fm.max_pool2d(Fm.relu(self.c1(x)), 2)
            x = Fm.max_pool2d(Fm.relu(self.c2(x)), 2)
            x = x.flatten(1)
            return self.f3(Fm.relu(self.f2(Fm.relu(self.f1(x)))))
    return LeNet5()


def _torch_module(name: str) -> Any:
    import torch
    torch.manual_seed(0)
    if name == "lenet":
        return _lenet(torch.nn, torch.nn.functional)
    if name in RECURRENT:
        return getattr(torch.nn, RECURRENT[name])(128, 128, num_layers=2)
    layer = torch.nn.TransformerEncoderLayer(128, 4, 512, 0.0)
    return torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def _ndgrad_module(name: str, lib: Any) -> Any:
    nn = lib.nn
    if name == "lenet":
        return _lenet(nn, nn.functional)
    if name in RECURRENT:
        return getattr(nn, RECURRENT[name])(128, 128, num_layers=2)
    layer = nn.TransformerEncoderLayer(128, 4, 512, 0.0)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def make_step(lib_name: str, name: str) -> Callable[[], Any]:
    """The step of workload ``name`` in ``lib_name`` ("torch" or "ndgrad"), ready to call."""
    import torch
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    if lib_name == "torch":
        lib: Any = torch
    else:
        import ndgrad
        import ndgrad.nn  # noqa: F401
        lib = ndgrad
    F = lib.nn.functional
    rng = np.random.default_rng(5)
    if name == "cnn":
        x = lib.tensor(rng.standard_normal((16, 1, 28, 28)).astype(np.float32))
        k1 = lib.tensor((rng.standard_normal((8, 1, 3, 3)) / 3).astype(np.float32),
                        requires_grad=True)
        k2 = lib.tensor((rng.standard_normal((16, 8, 3, 3)) / 8.5).astype(np.float32),
                        requires_grad=True)

        def cnn_step():
            k1.grad = None
            k2.grad = None
            h = F.relu(F.conv2d(x, k1))
            out = F.relu(F.conv2d(h, k2)).mean()
            out.backward()
            return out.item(), k1.grad.numpy(), k2.grad.numpy()
        return cnn_step
    tm = _torch_module(name)
    if lib_name == "torch":
        model = tm
    else:
        model = _ndgrad_module(name, lib)
        model.load_state_dict({k: lib.tensor(v.detach().numpy().copy())
                               for k, v in tm.state_dict().items()})
    if name == "lenet":
        x = lib.tensor(rng.standard_normal((64, 1, 28, 28)).astype(np.float32))
        y = lib.tensor(rng.integers(0, 10, 64))
        params = list(model.parameters())

        def lenet_step():
            for p in params:
                p.grad = None
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            with lib.no_grad():
                for p in params:
                    p -= 0.01 * p.grad
            return loss.item()
        return lenet_step
    shape = (32, 16, 128) if name in RECURRENT else (64, 8, 128)
    x = lib.tensor(rng.standard_normal(shape).astype(np.float32))

    def seq_step():
        model.zero_grad()
        out = model(x)
        loss = (out[0] if name in RECURRENT else out).sum()
        loss.backward()
        return loss.item()
    return seq_step


def _time(step: Callable[[], Any], budget: float, warmup: int = 5) -> list:
    for _ in range(warmup):
        step()
    ts: list = []
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < budget or len(ts) < 10:
        t = time.perf_counter()
        step()
        ts.append(time.perf_counter() - t)
    return ts


def _child(lib_name: str, name: str, budget: float) -> None:
    ts = _time(make_step(lib_name, name), budget)
    print("@@RESULT " + json.dumps({"median": float(np.median(ts)), "min": float(np.min(ts))}))


def _run_cell(lib_name: str, name: str, budget: float) -> dict:
    env = dict(os.environ)
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(k, None)
    threads = env.get("OMP_NUM_THREADS", "2")
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = threads
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", lib_name, name,
                          "--budget", str(budget)], env=env, capture_output=True, text=True,
                         timeout=600)
    for line in out.stdout.splitlines():
        if line.startswith("@@RESULT "):
            return json.loads(line[len("@@RESULT "):])
    raise RuntimeError(f"{lib_name}/{name} failed:\n{out.stderr[-2000:]}")


def breakdown(name: str, steps: int = 200, cpu: bool = False) -> None:
    """Print where ndgrad's step of ``name`` spends its time, per op name (``cpu``: the
    thread's CPU time instead of wall time, steadier on a loaded machine with one thread)."""
    clock = time.thread_time if cpu else time.perf_counter
    step = make_step("ndgrad", name)
    from ndgrad.ops._dispatch import Op
    acc: dict = collections.defaultdict(float)
    calls: collections.Counter = collections.Counter()

    stack: list = []

    def timed(f: Callable, key: str) -> Callable:
        # Exclusive times: a rule's time excludes the ops it calls (they count as themselves).
        def run(*a):
            stack.append(0.0)
            t = clock()
            try:
                return f(*a)
            finally:
                dt = clock() - t
                inner = stack.pop()
                acc[key] += dt - inner
                calls[key] += 1
                if stack:
                    stack[-1] += dt
        return run

    def wrap(op: Op) -> None:
        op.forward = timed(op.forward, op.name)
        if op.vjp is not None:
            op.vjp = timed(op.vjp, op.name + " (backward rule)")
        if op.raw is not None:
            op.raw = timed(op.raw, op.name + " (backward rule)")
    for _ in range(3):       # ops made on first use (LSTM cells, attention) exist after this
        step()
    ops = [o for o in gc.get_objects() if isinstance(o, Op)]
    originals = [(o, o.forward, o.vjp, o.raw) for o in ops]
    for o in ops:
        wrap(o)
    # The convolution kernels inside the conv ops and rules, inclusive (their own lines below)
    from ndgrad.ops import nn_conv
    kacc: dict = collections.defaultdict(float)
    kernels = {k: getattr(nn_conv, k) for k in ("_conv_fwd", "_convt_fwd", "_wgrad_fwd",
                                                  "_widen")}

    def kernel(f: Callable, key: str) -> Callable:
        def run(*a, **kw):
            t = clock()
            try:
                return f(*a, **kw)
            finally:
                kacc[key] += clock() - t
        return run
    for k, f in kernels.items():
        setattr(nn_conv, k, kernel(f, k))
    for _ in range(5):
        step()
    acc.clear()
    calls.clear()
    ts = []
    per: list = []
    kper: list = []
    for _ in range(steps):
        acc.clear()
        kacc.clear()
        t = clock()
        step()
        ts.append(clock() - t)
        per.append(dict(acc))
        kper.append(dict(kacc))
    # The machine is shared: a step that was preempted says little about where time goes, so
    # the breakdown averages the fastest quarter of the steps.
    keep = np.argsort(ts)[:max(1, steps // 4)]
    per = [per[i] for i in keep]
    kper = [kper[i] for i in keep]
    tot = float(np.mean([ts[i] for i in keep]))
    names = sorted({k for d in per for k in d}, key=lambda k: -np.mean([d.get(k, 0.0)
                                                                        for d in per]))
    print(f"\n{name}: ndgrad step {tot * 1e6:.0f} us (mean of the fastest {len(keep)} of "
          f"{steps} steps; median of all {np.median(ts) * 1e6:.0f} us)")
    inside = 0.0
    for k in names:
        m = float(np.mean([d.get(k, 0.0) for d in per]))
        inside += m
        if m * 1e6 >= 1.0:
            print(f"  {k:<40} {m * 1e6:8.1f} us  {100 * m / tot:5.1f}%  "
                  f"x{calls[k] // steps}")
    print(f"  {'outside ops (Python, modules, engine)':<40} {(tot - inside) * 1e6:8.1f} us  "
          f"{100 * (tot - inside) / tot:5.1f}%")
    for k in sorted({k for d in kper for k in d}):
        m = float(np.mean([d.get(k, 0.0) for d in kper]))
        print(f"    conv kernel {k:<28} {m * 1e6:8.1f} us  (inclusive, inside the lines above)")
    for o, f, v, r in originals:
        o.forward, o.vjp, o.raw = f, v, r
    for k, f in kernels.items():
        setattr(nn_conv, k, f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=1.0)
    ap.add_argument("--breakdown", action="store_true")
    ap.add_argument("--cpu", action="store_true",
                    help="--breakdown in the thread's CPU time (use with OMP_NUM_THREADS=1)")
    ap.add_argument("--child", nargs=2, metavar=("LIB", "WORKLOAD"))
    a = ap.parse_args()
    if a.child:
        _child(a.child[0], a.child[1], a.budget)
        return
    names = [w for w in a.workloads.split(",") if w]
    for w in names:
        if w not in WORKLOADS:
            raise SystemExit(f"unknown workload {w!r}; known: {', '.join(WORKLOADS)}")
    if a.breakdown:
        for w in names:
            breakdown(w, cpu=a.cpu)
        return
    res: dict = collections.defaultdict(list)
    for r in range(a.rounds):
        for w in names:
            order = ("torch", "ndgrad") if r % 2 == 0 else ("ndgrad", "torch")
            for lib in order:
                c = _run_cell(lib, w, a.budget)
                res[lib, w].append(c)
                print(f"[round {r + 1}] {w:<12} {lib:<7} median {c['median'] * 1e3:8.3f} ms, "
                      f"min {c['min'] * 1e3:8.3f} ms", flush=True)
    print(f"{a.rounds} rounds, {a.budget:.1f} s per cell, "
          f"{os.environ.get('OMP_NUM_THREADS', '2')} threads; ms per step")
    print(f"{'workload':<12} {'torch med':>9} {'ndgrad med':>10} {'ratio':>6} "
          f"{'torch min':>9} {'ndgrad min':>10} {'ratio':>6}")
    for w in names:
        t, n = res["torch", w], res["ndgrad", w]
        tm, nm = np.median([c["median"] for c in t]), np.median([c["median"] for c in n])
        tn, nn_ = min(c["min"] for c in t), min(c["min"] for c in n)
        print(f"{w:<12} {tm * 1e3:9.3f} {nm * 1e3:10.3f} {nm / tm:6.2f} "
              f"{tn * 1e3:9.3f} {nn_ * 1e3:10.3f} {nn_ / tn:6.2f}")


if __name__ == "__main__":
    main()
