"""The brute-force oracle of DESIGN.md ("Semantics an oracle must get exactly right").

An independent recognizer over the grammar IR and the token masks, string verdicts and next-byte
sets read off it one question at a time. It shares no code with the engine's parser, FSMs or
cache, so the two can check each other. Its modules, from the reading of a grammar to the
engines it is compared with:

    unordered.py      unordered rules (JSON Schema's `any_order`) read as plain rules
    recognizer.py     sentences and viable prefixes of a grammar, straight from the IR
    brute_force.py    masks, verdicts and next bytes, one recognizer call per question
    congruence.py     the exact syntactic congruence of a regular grammar (minimal DFA), for
                      checking token classes
    strategies.py     hypothesis strategies and samplers for the property tests (imported on
                      its own: hypothesis is a test dependency)
    engines.py        one small interface over xg2ref, xgrammar 0.2.8 and the oracle
    other_engines.py  llguidance 1.9.1 and outlines-core 0.2.14 behind the same interface
"""

from .brute_force import brute_force_accepts, brute_force_mask, brute_force_next_bytes
from .congruence import syntactic_classes, valid_nowhere
from .recognizer import MAX_INPUT_BYTES, Recognizer

__all__ = [
    "MAX_INPUT_BYTES",
    "Recognizer",
    "brute_force_accepts",
    "brute_force_mask",
    "brute_force_next_bytes",
    "syntactic_classes",
    "valid_nowhere",
]
