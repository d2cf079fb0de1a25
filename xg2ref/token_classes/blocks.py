"""Byte blocks and the `byte_blocks` relation (CFGzip §3: a refinement of the syntactic
congruence that is lossless by construction; ../shared/SEED_SYSTEMS.md §3.4).

The byte blocks of a compiled grammar are the coarsest partition of the bytes 0..255 such that
every byte-range edge of every rule machine is a union of blocks: the cuts are each edge's `lo`
and `hi + 1`. A token's *block signature* is the sequence of its bytes' blocks.

    Lemma. Tokens u, v with equal block signatures are congruent (u ≡_L v).

    Every rule machine reads a byte only through its edges, and an edge takes either every byte
    of a block or none; so replacing one byte of a string by another of its block maps each run
    of the Earley parser (each path through the machines) to a run that reads the new string,
    accepting where the old one accepted. Equal signatures mean equal length and blockwise equal
    bytes, so x u y ∈ L ⇔ x v y ∈ L by one substitution per byte.

So tokens with one signature form a class the engine cannot tell apart. Byte edges are all the
engine reads of a grammar without token-level intrinsics, character budgets or unordered members
(those `classes.py` refuses).
"""

from __future__ import annotations

import numpy as np


def byte_blocks(arrays) -> np.ndarray:
    """uint8[256]: the block of each byte under the byte edges of `arrays` (fsm/build.py's
    FSMArrays); blocks are numbered by their lowest byte's order."""
    cuts = np.zeros(257, dtype=np.bool_)
    cuts[0] = True
    cuts[np.asarray(arrays.byte_lo, dtype=np.int64)] = True
    cuts[np.asarray(arrays.byte_hi, dtype=np.int64) + 1] = True
    return (np.cumsum(cuts[:256]) - 1).astype(np.uint8)


def block_signatures(decoded: list, blocks: np.ndarray) -> list:
    """Each token's block signature, as bytes (one block id per byte: at most 256 blocks)."""
    table = bytes(int(b) for b in blocks)
    return [token.translate(table) for token in decoded]
