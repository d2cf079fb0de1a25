"""Small helpers shared by the front end and the FSM builder."""

from __future__ import annotations

import contextlib
import sys

# Expression trees may nest up to the parser's limit (1000 groups); recursive walks over
# them need more Python frames than the default limit allows.
RECURSION_HEADROOM = 20_000


@contextlib.contextmanager
def deep_recursion(limit: int = RECURSION_HEADROOM):
    """Temporarily raise Python's recursion limit for walks over deeply nested trees."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)
