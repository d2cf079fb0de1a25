"""The brute-force oracle of DESIGN.md ("Semantics an oracle must get exactly right").

An independent recognizer over the grammar IR (`recognizer.py`) and the token masks, string
verdicts and next-byte sets read off it one question at a time (`brute_force.py`). It shares
no code with the engine, so the two can check each other. The hypothesis strategies used by
the property tests live in `xg2ref.oracle.strategies`, imported on its own because hypothesis
is a test dependency.
"""

from .brute_force import brute_force_accepts, brute_force_mask, brute_force_next_bytes
from .recognizer import MAX_INPUT_BYTES, Recognizer

__all__ = [
    "MAX_INPUT_BYTES",
    "Recognizer",
    "brute_force_accepts",
    "brute_force_mask",
    "brute_force_next_bytes",
]
