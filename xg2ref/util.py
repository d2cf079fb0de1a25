"""Small helpers: deep recursion for the front end and the FSM builder, bound Numba kernel entries."""

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


def bound_kernel(kernel, *example_args):
    """The compiled entry point of Numba kernel `kernel` for the types of `example_args`.

    Numba's dispatcher infers the type of every argument on every call; for a NamedTuple of
    arrays that costs about 0.3 µs a field, several µs per call for the mask kernels, whose
    whole run may take 10 µs. A caller that always passes arguments of the same types (its own
    arrays) binds the entry once and calls it directly. Under NUMBA_DISABLE_JIT=1 (no
    dispatcher) the plain function is returned. The entry point does not check types: callers
    must pass exactly the types of `example_args`.

    Numba's own inference of those types costs milliseconds for the mask kernels' arguments
    (every grammar binds its entries anew), so entries are remembered per `layout_key`: the
    few facts Numba's type of each argument depends on.
    """
    if not hasattr(kernel, "overloads"):
        return kernel
    key = (id(kernel), tuple(layout_key(a) for a in example_args))
    entry = _ENTRIES.get(key)
    if entry is None or entry[0] is not kernel:
        from numba import typeof

        signature = tuple(typeof(a) for a in example_args)
        kernel.compile(signature)
        entry = _ENTRIES[key] = (kernel, kernel.overloads[signature].entry_point)
    return entry[1]


_ENTRIES: dict = {}  # (id(kernel), layout keys) -> (kernel, its compiled entry point)


def layout_key(value):
    """What Numba's type of `value` depends on, cheaply: an array's dtype, rank, layout,
    writability and alignment; a tuple's class and its items' keys; otherwise the class (Python
    and NumPy scalars type by class alone)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        f = value.flags
        return (value.dtype.str, value.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    if isinstance(value, tuple):
        return (type(value), tuple(layout_key(v) for v in value))
    return type(value)


def read_json_lines(path):
    """The JSON values of a results file, one per line, in order; a line that does not parse (cut
    short when a run was stopped) is skipped, and a missing file reads as empty."""
    import json
    import os

    if not path or not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue
