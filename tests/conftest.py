"""Test-session setup.

pytest imports ndgrad while collecting, inside its own ``warnings.catch_warnings`` block, which
drops the warning filter ndgrad installs at import (see ``ndgrad/ops/_dispatch.py``,
Note [No floating point warnings]). Installing it again at configure time gives the tests the
state a user's program has after ``import ndgrad``.
"""

import ndgrad.ops._dispatch as _dispatch


def pytest_configure(config):
    _dispatch.install_warning_filter()
