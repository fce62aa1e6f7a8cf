"""The budget of one small op, forward and backward, step by step (Note [Per-op cost]).

One op is ``sin`` on a (16,) float32 tensor: the NumPy kernel costs a few hundred
nanoseconds, so everything else is ndgrad's overhead. Each line is measured on its own
(best of several rounds of many calls, in ns) and the steps are differences of such
measurements, so they add up only roughly. Run ``python bench/per_op_cost.py``; the machine's
load moves every line, so compare lines of one run.
"""

from __future__ import annotations

import time

import numpy as np

import ndgrad as nd
from ndgrad.autograd import engine
from ndgrad.autograd.accumulate_grad import grad_accumulator
from ndgrad.autograd.grad_mode import _state
from ndgrad.autograd.saved import SavedTensor
from ndgrad.ops import _dispatch, pointwise

N_CHAIN = 200


def best_ns(fn, number: int = 200, repeat: int = 60) -> float:
    """Fastest of ``repeat`` short rounds of ``number`` calls, ns per call. Short rounds and
    the minimum: on a shared virtual machine the CPU is taken away in bursts of milliseconds,
    which would otherwise land in whole rounds."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number * 1e9)
    return best


def measure() -> dict:
    a = np.random.default_rng(0).uniform(-1, 1, 16).astype(np.float32)
    plain = nd.tensor(a)
    leaf = nd.tensor(a, requires_grad=True)
    h = leaf * 1.0                          # a non-leaf that requires grad
    r = {}
    r["numpy kernel np.sin"] = best_ns(lambda: np.sin(a))
    r["apply(SIN), no grad"] = best_ns(lambda: _dispatch.apply(pointwise.SIN, (plain,), (a,)))
    r["pointwise.sin, no grad"] = best_ns(lambda: pointwise.sin(plain))
    r["ndgrad.sin (signature wrapper), no grad"] = best_ns(lambda: nd.sin(plain))
    r["ndgrad.sin, recorded"] = best_ns(lambda: nd.sin(h))
    r["SavedTensor(x)"] = best_ns(lambda: SavedTensor(h))
    r["x * 2.0, recorded"] = best_ns(lambda: h * 2.0)
    r["x * y, recorded"] = best_ns(lambda: h * h)

    node = nd.sin(h).grad_fn
    g = nd.ones_like(h)

    def rule_no_grad():
        prev = _state.enabled
        _state.enabled = False
        node.apply([g])
        _state.enabled = prev
    r["SinBackward0 rule (cos, mul), no grad"] = best_ns(rule_no_grad)
    raw, d, x = node._op.raw, g._data, h._data
    r["SinBackward0 raw rule alone (np.cos, np.multiply)"] = best_ns(lambda: raw(node, d, (x,)))
    r["SinBackward0 rule (cos, mul), recorded"] = best_ns(lambda: node.apply([g]))

    def chain():
        y = leaf
        for _ in range(N_CHAIN):
            y = pointwise.sin(y)
        return y

    def chain_backward():
        leaf._grad = None
        y = chain()
        engine.run_backward(((y.grad_fn, 0),), (g,), False, False)
    t_fwd = best_ns(chain, number=2, repeat=60)
    t_all = best_ns(chain_backward, number=2, repeat=60)
    r["backward per SinBackward0 node (engine + rule)"] = (t_all - t_fwd) / N_CHAIN
    acc = grad_accumulator(leaf)

    def accumulate():
        # grad mode off, as in the engine's plain backward: the gradient is stolen
        leaf._grad = None
        prev = _state.enabled
        _state.enabled = False
        acc.apply([nd.ones_like(leaf)])
        _state.enabled = prev

    def ones():
        leaf._grad = None
        prev = _state.enabled
        _state.enabled = False
        nd.ones_like(leaf)
        _state.enabled = prev
    r["AccumulateGrad, first gradient (stolen) + ones_like"] = best_ns(accumulate)
    r["ones_like"] = best_ns(ones)

    def one_node(create_graph):
        def f():
            leaf._grad = None
            y = pointwise.sin(leaf)
            engine.run_backward(((y.grad_fn, 0),), (g,), create_graph, create_graph)
        return f
    r["sin + backward of it (run_backward, 2 nodes)"] = best_ns(one_node(False), number=50)
    r["sin + create_graph backward of it"] = best_ns(one_node(True), number=50)

    # Note [Lean backward entry]: loss.backward() of a 0-d loss whose node feeds one leaf,
    # against the general path (autograd.backward with the gradient given, which the lean
    # entry does not take) and against the graph's forward alone
    w = nd.tensor(a, requires_grad=True)
    one = nd.ones(())

    def loss():
        w._grad = None
        return (w * w).sum()

    def lean():
        loss().backward()

    def general():
        nd.autograd.backward(loss(), one)
    r["(w * w).sum() forward"] = best_ns(loss, number=50)
    r["(w * w).sum().backward() (lean entry)"] = best_ns(lean, number=50)
    r["(w * w).sum() + autograd.backward(loss, ones) (general entry)"] = best_ns(general,
                                                                              number=50)

    def new_accumulator():
        w._grad_acc = None
        grad_accumulator(w)

    def no_accumulator():
        w._grad_acc = None
    r["grad_accumulator: a new AccumulateGrad"] = (best_ns(new_accumulator)
                                                   - best_ns(no_accumulator))
    r.update(penalty_phases())
    return r


def penalty_phases(rounds: int = 400) -> dict:
    """The shared bench's gradient penalty (double_backward) on a 4x8 input and an 8x8 weight,
    float64, so that the NumPy kernels are a few hundred ns and the rest is ndgrad's: the
    fastest of ``rounds`` steps per phase, in ns."""
    rng = np.random.default_rng(0)
    w = nd.tensor(rng.standard_normal((8, 8)) * 8 ** -0.5, requires_grad=True)
    x = nd.tensor(rng.standard_normal((4, 8)), requires_grad=True)
    clock = time.perf_counter_ns
    best = [float("inf")] * 4
    for i in range(rounds + 20):
        t0 = clock()
        w.grad = None
        s = nd.tanh(x @ w).sum()
        t1 = clock()
        (g,) = nd.autograd.grad(s, [x], create_graph=True)
        t2 = clock()
        loss = (g * g).sum()
        t3 = clock()
        loss.backward()
        t4 = clock()
        if i >= 20:
            for k, t in enumerate((t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                best[k] = min(best[k], t)
    names = ("penalty: forward (x @ W, tanh, sum)", "penalty: grad(s, x, create_graph=True)",
             "penalty: (g * g).sum()", "penalty: loss.backward() (9 nodes)")
    return dict(zip(names, best))


def budget(r: dict) -> list:
    """The steps of one op, derived from the measurements."""
    k = r["numpy kernel np.sin"]
    return [
        ("forward: NumPy kernel", k),
        ("forward: apply (flags, forward call, wrap), no grad", r["apply(SIN), no grad"] - k),
        ("forward: op function (dtype check) ", r["pointwise.sin, no grad"]
         - r["apply(SIN), no grad"]),
        ("forward: signature wrapper", r["ndgrad.sin (signature wrapper), no grad"]
         - r["pointwise.sin, no grad"]),
        ("forward: recording (node, edges, metadata) without saving",
         r["ndgrad.sin, recorded"] - r["ndgrad.sin (signature wrapper), no grad"]
         - r["SavedTensor(x)"]),
        ("forward: saving one tensor (SavedTensor)", r["SavedTensor(x)"]),
        ("backward: raw rule g * cos(x) on arrays (Note [Raw backward rules])",
         r["SinBackward0 raw rule alone (np.cos, np.multiply)"]),
        ("backward: node apply around it (checks, unpack, wrap)",
         r["SinBackward0 rule (cos, mul), no grad"]
         - r["SinBackward0 raw rule alone (np.cos, np.multiply)"]),
        ("backward: engine scheduling per node",
         r["backward per SinBackward0 node (engine + rule)"]
         - r["SinBackward0 rule (cos, mul), no grad"]),
        ("backward: AccumulateGrad, stolen first gradient",
         r["AccumulateGrad, first gradient (stolen) + ones_like"] - r["ones_like"]),
        ("backward: loss.backward() entry, lean (whole backward of a 2-node graph)",
         r["(w * w).sum().backward() (lean entry)"] - r["(w * w).sum() forward"]),
        ("backward: the same through the general entry",
         r["(w * w).sum() + autograd.backward(loss, ones) (general entry)"]
         - r["(w * w).sum() forward"]),
        ("forward: a leaf's new AccumulateGrad (per leaf and step)",
         r["grad_accumulator: a new AccumulateGrad"]),
        ("create_graph: the rule recording its 2 ops (extra)",
         r["SinBackward0 rule (cos, mul), recorded"] - r["SinBackward0 rule (cos, mul), no grad"]),
        ("create_graph: whole one-node backward (extra over plain)",
         r["sin + create_graph backward of it"]
         - r["sin + backward of it (run_backward, 2 nodes)"]),
    ]


def main() -> None:
    import json
    import subprocess
    import sys
    if "--child" in sys.argv:
        print(json.dumps(measure()))
        return
    runs = [json.loads(subprocess.run([sys.executable, __file__, "--child"], check=True,
                                      capture_output=True, text=True).stdout)
            for _ in range(3)]
    r = {k: min(run[k] for run in runs) for k in runs[0]}
    print("measurements (ns per call, minimum over 3 processes):")
    for name, v in r.items():
        print(f"  {name:55s} {v:8.0f}")
    print("\nbudget of one op (ns):")
    for name, v in budget(r):
        print(f"  {name:60s} {v:8.0f}")


if __name__ == "__main__":
    main()
