"""The `displacement` relation (CFGzip §3.2, Theorem 2 and Algorithm 1; ../shared/SEED_SYSTEMS.md
§3.1): tokens that do the same to the stack of the grammar's Greibach-normal-form PDA are
congruent, whatever their bytes.

    D(t) = {(α, β) : reading t pops α from a stack it does not know and pushes β}
    Theorem 2.  D(u) = D(v)  ⇒  u ≡_L v

(From any stack the PDA reaches, reading u or v leaves the same stacks, so every context x, y
sees the same thing.) Only stacks the PDA can reach matter, so the symbols pulled from below are
restricted by stack adjacency (gnf.py), as CFGzip's App. C restricts them: without it the walk
does not end in memory.

The steps, each in its module:

    1. the machines without repetition compression (a counted repetition is no stack symbol)
    2. byte blocks and each token's block signature (blocks.py): equal signatures are congruent,
       so only distinct signatures are walked
    3. the Greibach normal form, merged, and ADJ (gnf.py)
    4. Algorithm 1 over the signatures in trie order (xg2ref/kernels/displacement.py), the
       frontier of a shared prefix computed once
    5. tokens grouped by D; an empty D is a token valid nowhere (classes.py puts it with the
       tokens never allowed); a frontier past MAX_FRONTIER leaves its signatures in classes of
       their own (one per signature: the byte_blocks classes, still exact), counted

The kernel's tables grow when they fill (the walk restarts); the frontier's limit is what bounds
time and memory, and `max_frontier` lowers or raises it.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

import numpy as np

from ..exceptions import TokenClassesUnsupported
from ..fsm.build import build_grammar_fsms
from ..grammar.passes import normalize
from ..kernels.displacement import (CELLS_FULL, DEAD, FALLBACK, LISTS_FULL, MAX_CELLS, OK, SETS_FULL,
                                    displacement_ids, workspace)
from .blocks import byte_blocks
from .gnf import stack_grammar

MAX_FRONTIER = 1 << 14  # frontier elements at one trie node; past it, one class per signature
MAX_SYMBOLS = (1 << 16) - 2  # σ + 1 fits 16 bits of a frontier element
CHUNK = 4096  # signatures per kernel call (a progress report after each)


def uncompressed_arrays(compiled):
    """The compiled grammar's machines, rebuilt without repetition compression when it has a
    counted repetition (whose copies a stack of symbols cannot count)."""
    if not np.any(np.asarray(compiled.arrays.rule_rep_lo) >= 0):
        return compiled.arrays
    return build_grammar_fsms(normalize(compiled.grammar.ir)).to_arrays()


def _shared_prefixes(signatures: list) -> np.ndarray:
    """lcp[i]: the length of the prefix signature i shares with signature i - 1 (0 for the first)."""
    lcp = np.zeros(len(signatures), dtype=np.int64)
    for i in range(1, len(signatures)):
        a, b = signatures[i - 1], signatures[i]
        n, k = min(len(a), len(b)), 0
        while k < n and a[k] == b[k]:
            k += 1
        lcp[i] = k
    return lcp


def displacement_of_signatures(arrays, blocks: np.ndarray, signatures: list, max_frontier: int = MAX_FRONTIER,
                               progress: Optional[Callable[[int, int], None]] = None):
    """(ids, stats): for each distinct signature of `signatures` (bytes of block ids, sorted, no
    repeats), the id of its displacement among the distinct ones, DEAD or FALLBACK;
    `progress(done, total)` after each chunk of signatures."""
    grammar = stack_grammar(arrays, blocks)
    if grammar.n_symbols > MAX_SYMBOLS:
        raise TokenClassesUnsupported(f"the Greibach normal form has {grammar.n_symbols:,} symbols, more than "
                                      f"{MAX_SYMBOLS:,}; the relation byte_blocks needs none")
    pool = np.frombuffer(b"".join(signatures), dtype=np.uint8)
    indptr = np.zeros(len(signatures) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(s) for s in signatures])
    lcp = _shared_prefixes(signatures)
    cells, entries, set_entries, n_sets = 1 << 18, 1 << 18, 1 << 20, 1 << 14
    out = np.zeros(len(signatures), dtype=np.int32)
    chunks = list(range(0, len(signatures), CHUNK)) + [len(signatures)]
    while True:  # the tables persist across chunks; a full one restarts the walk, larger
        ws = workspace(cells, 8 * max_frontier + 1, entries, len(signatures), set_entries, n_sets)
        for a, b in zip(chunks, chunks[1:]):
            shared = lcp[a:b].copy()
            shared[0] = 0  # (each chunk starts from the trie's root)
            status = displacement_ids(grammar, pool, indptr[a:b + 1], shared, max_frontier, ws, out[a:b])
            if status != OK:
                break
            if progress is not None:
                progress(b, len(signatures))
        if status == CELLS_FULL:
            if cells >= MAX_CELLS:
                raise TokenClassesUnsupported(f"the displacement walk needs more than {MAX_CELLS:,} stack cells; "
                                              f"lower max_frontier or use the relation byte_blocks")
            cells = min(4 * cells, MAX_CELLS)
        elif status == LISTS_FULL:
            entries *= 4
        elif status == SETS_FULL:
            set_entries, n_sets = 4 * set_entries, 4 * n_sets
        else:
            break
    stats = {"gnf_symbols": grammar.n_symbols, "gnf_productions": grammar.n_productions,
             "signatures": len(signatures), "displacements": int(ws.count[1]),
             "dead_signatures": int(np.sum(out == DEAD)), "fallback_signatures": int(np.sum(out == FALLBACK)),
             "stack_cells": int(ws.count[0]), "frontier_sets": int(ws.count[3]), "steps": int(ws.count[5]),
             "max_frontier": max_frontier}
    return out, stats


def displacement_keys(compiled, decoded: list, max_frontier: int = MAX_FRONTIER,
                      progress: Optional[Callable[[int, int], None]] = None) -> tuple:
    """(keys, stats): a key per token of `decoded` (regular tokens' bytes), equal keys only for
    congruent tokens: ("d", id) for displacement id, ("s", signature) for a signature past the
    frontier's limit, None for a token valid nowhere."""
    start = time.perf_counter()
    arrays = uncompressed_arrays(compiled)
    blocks = byte_blocks(arrays)
    table = bytes(int(b) for b in blocks)
    token_sigs = [token.translate(table) for token in decoded]
    distinct = sorted(set(token_sigs))
    ids, stats = displacement_of_signatures(arrays, blocks, distinct, max_frontier, progress)
    by_sig = dict(zip(distinct, ids.tolist()))
    keys = []
    for sig in token_sigs:
        d = by_sig[sig]
        keys.append(("d", d) if d >= 0 else ("s", sig) if d == FALLBACK else None)
    stats["byte_blocks"] = int(blocks.max()) + 1
    stats["displacement_seconds"] = round(time.perf_counter() - start, 4)
    return keys, stats
