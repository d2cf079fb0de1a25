"""The scripts under examples/ run and check what they claim (each exits 0 only when its checks hold)."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.jit_only
def test_an_intrinsic_defined_outside_the_package():
    """examples/set_operations.py registers Intersect and Complement from outside the package,
    compiles grammars that use them and checks the intrinsic contract against the oracle."""
    done = subprocess.run([sys.executable, str(EXAMPLES / "set_operations.py")], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("contract holds:") == 3 and "every check holds" in done.stdout
