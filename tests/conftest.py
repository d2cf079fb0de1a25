"""Shared test configuration: the pure-Python run (NUMBA_DISABLE_JIT=1) skips `jit_only` tests; bound
kernel entries are checked against their arguments' full layout (`util.VERIFY_LAYOUTS`)."""

import os

import pytest

import xg2ref.util

# every bound kernel entry found by a `fixed_layout` class is checked against its full layout
xg2ref.util.VERIFY_LAYOUTS = True


def pytest_collection_modifyitems(config, items):
    if os.environ.get("NUMBA_DISABLE_JIT", "0") in ("", "0"):
        return
    skip = pytest.mark.skip(reason="too slow as pure Python (NUMBA_DISABLE_JIT=1); runs in the compiled pass")
    for item in items:
        if "jit_only" in item.keywords:
            item.add_marker(skip)
