"""The state of ndgrad.nn against torch's ModuleInfo database (tests/torch_moduledb.py): for
each entry, the checks it fails and why (``KNOWN``), and the entries whose class ndgrad does not
ship (``NOT_SHIPPED``). tests/test_torch_moduledb.py fails when this file is not the true
state."""

# ruff: noqa: E501
KNOWN: dict = {}

NOT_SHIPPED: dict = {}
