"""The programs here are scripts run by tests/test_programs.py, not test modules: pytest must
not import them (``--doctest-modules`` would run each one at collection)."""

collect_ignore_glob = ["*.py"]
