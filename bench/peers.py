"""ndgrad against PyTorch on the shared peers benchmark, as a ratio table (one run).

Runs the shared harness (``../shared/bench/peers.py``, see its README) for the backends
``torch`` and ``ndgrad`` only, with this checkout's ``ndgrad`` first on the path of every
child process, and prints one line per workload: both medians (and minima) and the ratio
``ndgrad / torch`` (below 1: ndgrad is faster). For ``mlp_large`` it also prints the
harness's NumPy float32 GEMM probe as the practical ceiling (the time the step's 23.6 GFLOP
of GEMMs take at the probe's rate) and ndgrad's ratio to it; for ``memory`` the peak increase
over the theoretical minimum.

Usage::

    python bench/peers.py                               # the seven workloads of issue 12
    python bench/peers.py --workloads chain,mlp_small   # a subset
    python bench/peers.py --backends torch,ndgrad,mygrad  # MyGrad's columns too (mlp_large)
    python bench/peers.py --harness /path/to/shared/bench/peers.py --threads 2 --md out.md

The machine's load moves single cells by up to 1.5x between runs: compare ratios of one run,
never numbers of different runs, and say how loaded the machine was.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_WORKLOADS = "chain,mlp_small,mlp_large,hessian,hessian_vec,double_backward,memory"
CANDIDATES = (
    os.path.join(ROOT, "..", "shared", "bench", "peers.py"),
    os.path.join(ROOT, "..", "..", "shared", "bench", "peers.py"),
    "/work/shared/bench/peers.py",
)


def find_harness(given: str | None) -> str:
    """The shared harness's ``peers.py``: ``--harness``, ``$NDGRAD_PEERS``, or the usual
    places next to this checkout."""
    for path in ((given,) if given else ()) + ((os.environ.get("NDGRAD_PEERS"),)
                                               if os.environ.get("NDGRAD_PEERS") else ()) \
            + CANDIDATES:
        if path and os.path.isfile(path):
            return os.path.abspath(path)
    raise SystemExit("shared harness not found: pass --harness PATH/peers.py or set "
                     "NDGRAD_PEERS")


def ratio_table(data: dict, harness: str, others: tuple = ()) -> str:
    """Markdown table of ndgrad / torch per workload and run from the harness's JSON; per
    backend of ``others`` (``mygrad``) two more columns: its median (min) and ndgrad / it."""
    sys.path.insert(0, os.path.dirname(harness))
    try:
        import workloads as wls        # the harness's workload definitions (FLOPs, minimum)
    finally:
        sys.path.pop(0)
    cells = data["cells"]
    by = {(c["round"], c["workload"], c["backend"]): c for c in cells}
    probes = {p["round"]: p for p in data.get("probes", []) if p.get("status") == "ok"}
    workloads = list(dict.fromkeys(c["workload"] for c in cells))
    rounds = sorted({c["round"] for c in cells})
    extra = "".join(f" {o} median (min) | ndgrad / {o} |" for o in others)
    lines = ["| workload | run | torch median (min) | ndgrad median (min) | ndgrad / torch |"
             + extra + " note |", "|---|---|---|---|---|" + "---|---|" * len(others) + "---|"]
    for w in workloads:
        for r in rounds:
            t, n = by.get((r, w, "torch"), {}), by.get((r, w, "ndgrad"), {})
            if w == "memory":
                tv, nv = t.get("peak_increase_mib"), n.get("peak_increase_mib")
                minimum = wls.get("memory").theory["above_baseline_min_bytes"]
                note = (f"ndgrad / theoretical minimum {nv * 2**20 / minimum:.2f}"
                        if nv is not None and minimum else "")
                cols = ""
                for o in others:
                    ov = by.get((r, w, o), {}).get("peak_increase_mib")
                    cols += f" {_num(ov)} | {_ratio(nv, ov)} |"
                lines.append(f"| memory (peak MiB over baseline) | {r} | {_num(tv)} | "
                             f"{_num(nv)} | {_ratio(nv, tv)} |{cols} {note} |")
                continue
            scale, unit = _scale(w)
            tv, nv = _med(t, scale), _med(n, scale)
            note = ""
            if w == "mlp_large" and r in probes and nv is not None:
                ceiling = wls.get("mlp_large").flops / (probes[r]["gflops_median"] * 1e9) * 1e3
                note = (f"NumPy GEMM ceiling {ceiling:.1f} ms; ndgrad / ceiling "
                        f"{nv / ceiling:.2f}")
            for c, name in ((t, "torch"), (n, "ndgrad")):
                if c and c.get("status") != "ok":
                    note += f" {name}: {c.get('status')} {c.get('reason', '')[:60]}"
            cols = ""
            for o in others:
                oc = by.get((r, w, o), {})
                ov = _med(oc, scale)
                cols += (f" {_num(ov)} ({_num(_min(oc, scale))}) | {_ratio(nv, ov)} |"
                         if ov is not None else f" {oc.get('status', 'n/a')} | n/a |")
            lines.append(f"| {w} ({unit}) | {r} | {_num(tv)} ({_num(_min(t, scale))}) | "
                         f"{_num(nv)} ({_num(_min(n, scale))}) | {_ratio(nv, tv)} |{cols} "
                         f"{note.strip()} |")
    return "\n".join(lines)


_UNITS = {"chain": (1e6 / 200, "us/op"), "mlp_small": (1e6, "us/step"),
          "mlp_large": (1e3, "ms/step")}


def _scale(w: str) -> tuple:
    return _UNITS.get(w, (1e3, "ms"))


def _med(c: dict, scale: float):
    return c["median_s"] * scale if c.get("status") == "ok" else None


def _min(c: dict, scale: float):
    return c["min_s"] * scale if c.get("status") == "ok" else None


def _num(v) -> str:
    if v is None:
        return "n/a"
    return f"{v:.3g}" if v < 100 else f"{v:,.0f}"


def _ratio(a, b) -> str:
    return f"**{a / b:.2f}**" if a is not None and b else "n/a"


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default=DEFAULT_WORKLOADS)
    ap.add_argument("--backends", default="torch,ndgrad",
                    help="harness backends; torch and ndgrad are always run, others (mygrad) "
                         "get two more columns")
    ap.add_argument("--harness", help="path of the shared harness's peers.py")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--md", help="also write the harness's full markdown report here")
    ap.add_argument("--json", help="also keep the harness's raw results (JSON) here")
    args = ap.parse_args(argv)
    harness = find_harness(args.harness)
    others = tuple(b for b in dict.fromkeys(args.backends.split(","))
                   if b and b not in ("torch", "ndgrad"))
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with tempfile.TemporaryDirectory(prefix="ndgrad-peers-") as tmp:
        out = os.path.join(tmp, "peers.json")
        cmd = [sys.executable, harness, "--backends", ",".join(("torch", "ndgrad") + others),
               "--workloads",
               args.workloads, "--repeat", str(args.repeat), "--threads", str(args.threads),
               "--json", out]
        cmd += ["--md", os.path.abspath(args.md)] if args.md else ["--no-md"]
        proc = subprocess.run(cmd, env=env, cwd=os.path.dirname(os.path.dirname(harness)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode or not os.path.exists(out):
            print(proc.stdout[-4000:])
            return proc.returncode or 1
        with open(out) as f:
            data = json.load(f)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(data, f)
    print(f"ndgrad ({ROOT}) against torch, {data['date']}, threads={args.threads}, "
          f"one process per cell; ratio = ndgrad / torch (lower is better)\n")
    print(ratio_table(data, harness, others))
    return 0


if __name__ == "__main__":
    sys.exit(main())
