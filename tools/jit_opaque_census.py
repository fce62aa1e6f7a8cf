"""Census of the nodes that are not ops of the table after tracing + differentiate, per op of
tests/op_db.py: ``Call`` nodes in f, ``OpBackward`` and ``CallBackward`` nodes in df.

Run from the repository root: ``python -m tools.jit_opaque_census`` (prints one line per op
that has any, then the totals).
"""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np


def census() -> dict:
    sys.path.insert(0, "tests")
    import ndgrad
    from ndgrad.jit import TraceError, differentiate, trace_graph
    from op_db import OPS, make_inputs
    out: dict = {}
    for op in OPS:
        arrays = make_inputs(op, op.samples[0], np.random.default_rng(0))
        ts = [ndgrad.tensor(a, requires_grad=op.differentiable) for a in arrays]
        try:
            r = trace_graph(lambda *xs, op=op: op.fn(ndgrad, *xs), tuple(ts), check=False)
            g = differentiate(r.graph, arrays)
        except TraceError:
            out[op.name] = Counter({"TraceError": 1})
            continue
        c: Counter = Counter()
        for n in list(g.f.all_nodes()) + list(g.df.all_nodes()):
            if n.kind() in ("Call", "OpBackward", "CallBackward"):
                name = n.attrs.get("name") or (n.attrs["op"].name if "op" in n.attrs else
                                               n.attrs.get("call").attrs.get("name"))
                c[f"{n.kind()}:{name}"] += 1
        if c:
            out[op.name] = c
    return out


if __name__ == "__main__":
    res = census()
    tot: Counter = Counter()
    for name, c in res.items():
        print(f"{name:32s} " + ", ".join(f"{k}x{v}" for k, v in sorted(c.items())))
        for k in c:
            tot[k.split(":")[0]] += 1
    print(f"ops with a non-op node: {len(res)}; by kind (ops): {dict(tot)}")
