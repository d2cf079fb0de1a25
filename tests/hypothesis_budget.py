"""How many examples a property test draws: fewer in the pure-Python pass (NUMBA_DISABLE_JIT=1),
which checks that the same code runs as Python; the compiled pass draws them all."""

import os

PURE_PYTHON = os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0")


def examples(n: int) -> int:
    return max(n // 4, 20) if PURE_PYTHON else n
