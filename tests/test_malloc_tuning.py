"""glibc's malloc thresholds (Note [Kernel workspace] in ndgrad/ops/_workspace.py): a freed
block of up to 32 MiB (mlp_large's 2048x2048 float32 weight gradient is 16 MiB) is served again
from warm heap pages, without page faults."""

from __future__ import annotations

import subprocess
import sys

import ndgrad  # noqa: F401  (the import tunes malloc)
from ndgrad.ops import _workspace

_CHILD = """
import resource, numpy as np
import ndgrad
def step():
    a = np.empty((2048, 2048), np.float32); a.fill(1.0)   # 16 MiB, every page touched
    return float(a[0, 0])
step(); step()
r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0)
"""


def test_malloc_is_tuned_on_glibc():
    libc = sys.platform.startswith("linux") and bool(__import__("platform").libc_ver()[0])
    assert _workspace.MALLOC_TUNED == libc


def test_a_16_mib_block_is_reused_without_page_faults():
    # in a fresh process, so that no other test's heap state counts
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                         check=True).stdout
    faults = int(out.strip().splitlines()[-1])
    assert faults < 50, faults       # 5 x 4096 pages when each block came from a new mmap
