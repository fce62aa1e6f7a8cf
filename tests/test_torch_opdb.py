"""Every in-scope entry of torch's OpInfo database against ndgrad (see tests/torch_opdb.py).

Each entry's failing checks must be exactly those listed in ``KNOWN`` (tests/torch_opdb_known.py)
with their reasons, and an entry ndgrad does not ship must be listed as not shipped: a fix or a
new op that makes a listed failure pass fails this test until the list is updated, so the list
is always the true state (docs/op_coverage.md is generated from the same run).
"""

from __future__ import annotations

import pytest

import torch_opdb as db
from torch_opdb_known import KNOWN, NOT_SHIPPED


@pytest.mark.parametrize("eid", sorted(db.BY_ID))
def test_entry(eid):
    o = db.BY_ID[eid]
    if not db.shipped(o):
        assert eid in NOT_SHIPPED, f"{eid}: not shipped; list it in NOT_SHIPPED with a reason"
        return
    assert eid not in NOT_SHIPPED, f"{eid} is shipped now: remove it from NOT_SHIPPED"
    got = db.failures(db.run_entry(o))
    want = KNOWN.get(eid, {})
    unexpected = {c: m for c, m in got.items() if c not in want}
    fixed = sorted(c for c in want if c not in got)
    assert not unexpected, f"{eid}: new failures {unexpected}"
    assert not fixed, f"{eid}: {fixed} pass now: remove them from KNOWN"


def test_known_lists_only_entries_in_scope():
    stale = sorted((set(KNOWN) | set(NOT_SHIPPED)) - set(db.BY_ID))
    assert not stale, f"entries not in torch's op_db (or out of scope): {stale}"
    assert all(isinstance(v, dict) and v for v in KNOWN.values())
