"""Every entry of torch's ModuleInfo database against ndgrad.nn (see tests/torch_moduledb.py).

Each shipped entry's failing checks must be exactly those listed in ``KNOWN``
(tests/torch_moduledb_known.py) with their reasons, and an entry ndgrad does not ship must be
listed in ``NOT_SHIPPED``: a fix that makes a listed failure pass fails this test until the list
is updated, so the list is always the true state.
"""

from __future__ import annotations

import pytest

import torch_moduledb as db
from torch_moduledb_known import KNOWN, NOT_SHIPPED


@pytest.mark.parametrize("eid", sorted(db.BY_ID))
def test_entry(eid):
    info = db.BY_ID[eid]
    if not db.shipped(info):
        assert eid in NOT_SHIPPED, f"{eid}: not shipped; list it in NOT_SHIPPED with a reason"
        return
    assert eid not in NOT_SHIPPED, f"{eid} is shipped now: remove it from NOT_SHIPPED"
    result = db.run_entry(info)
    got = db.failures(result)
    want = KNOWN.get(eid, {})
    unexpected = {c: m for c, m in got.items() if c not in want}
    fixed = sorted(c for c in want if c not in got)
    assert not unexpected, f"{eid}: new failures {unexpected}"
    assert not fixed, f"{eid}: {fixed} pass now: remove them from KNOWN"
    # something was compared: a check that is n/a for every entry would test nothing
    assert result["forward"] != "n/a", f"{eid}: no forward sample ran"


def test_known_lists_only_entries_of_module_db():
    stale = sorted((set(KNOWN) | set(NOT_SHIPPED)) - set(db.BY_ID))
    assert not stale, f"entries not in torch's module_db: {stale}"
    assert all(isinstance(v, dict) and v for v in KNOWN.values())
