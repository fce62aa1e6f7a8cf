"""The files here are programs that tests/test_distributed.py launches on several ranks; they
run when executed, so pytest must not import them (``--doctest-modules`` imports every file)."""

collect_ignore = ["collectives.py", "ddp.py", "fault.py"]
