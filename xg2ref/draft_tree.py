"""Speculative decoding's draft trees (xgrammar 0.2.8's `GrammarMatcher.traverse_draft_tree`):
the mask of every node of a tree of draft tokens in one call, with the matcher's own
accept / fill / rollback (XGrammar §3.3: rollback is exact, so a depth-first walk that undoes
each token on the way back up leaves the matcher where it was).

Node 0 is the current state (its draft token is not read). Node i's children are
`retrieve_next_token[i]` and that child's chain of `retrieve_next_sibling`. A child whose
draft token the state of its parent accepts gets, in row c of `token_bitmask`, the mask
after that token, and its own children are visited; a rejected child gets an all-zero row
and its subtree is left unwritten; a node where the matcher has terminated (after a stop
token, or at a complete input with terminate_without_stop_token) gets an all-zero row and
its subtree is left unwritten. The matcher ends in the state it started in.
`temperatures` (float32, one per node), when given, gets -1 everywhere except the visited,
unterminated nodes' `temperature` (where one is set). Returns False when `time_threshold`
seconds (> 0) ran out before the tree was done.

The walk keeps, per depth, the next child to try (-1: none left); a node is never visited twice
(a tree that reaches one twice is refused), and whatever happens the tokens accepted on the way
are rolled back before it returns.
"""

from __future__ import annotations

import time

import numpy as np

from .bitmask import bitmask_row_view


def _int64_vector(values, name: str) -> np.ndarray:
    """A 1-D int64 numpy copy of a torch tensor, an array or a list."""
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    out = np.asarray(values)
    if out.ndim != 1 or (out.size and not np.issubdtype(out.dtype, np.integer)):
        raise ValueError(f"{name} must be a 1-D integer tensor, got shape {out.shape} and dtype {out.dtype}")
    return out.astype(np.int64, copy=False)


def traverse_draft_tree(matcher, vocab_size: int, retrieve_next_token, retrieve_next_sibling, draft_tokens,
                        token_bitmask, time_threshold: float = -1.0, temperatures=None) -> bool:
    """`matcher.traverse_draft_tree` (module docstring) for a matcher over `vocab_size` tokens
    with xgrammar's matcher API."""
    nxt, sib, tokens = (_int64_vector(a, name) for a, name in ((retrieve_next_token, "retrieve_next_token"),
                                                                (retrieve_next_sibling, "retrieve_next_sibling"),
                                                                (draft_tokens, "draft_tokens")))
    n = len(tokens)
    if len(nxt) != n or len(sib) != n or n == 0:
        raise ValueError(f"the draft tree's three index arrays must have the same length > 0, got "
                         f"{len(nxt)}, {len(sib)}, {len(tokens)}")
    words = (vocab_size + 31) // 32
    shape = tuple(token_bitmask.shape)
    if len(shape) != 2 or shape[0] < n or shape[1] != words:
        raise ValueError(f"token_bitmask must have shape ({n}, {words}), got {shape}")
    temps = None
    if temperatures is not None:
        temps = temperatures.numpy() if hasattr(temperatures, "numpy") else np.asarray(temperatures)
        if temps.ndim != 1 or len(temps) < n:
            raise ValueError(f"temperatures must be 1-D with at least {n} entries, got shape {temps.shape}")
        temps[:n] = -1.0
    start = time.perf_counter()
    seen = np.zeros(n, dtype=np.bool_)
    accepted = 0  # tokens accepted on the way down, not yet rolled back

    def fill(node: int) -> bool:
        """Row `node` and its temperature; False (a zero row) where the matcher has terminated."""
        seen[node] = True
        if matcher.is_terminated():
            bitmask_row_view(token_bitmask, node, vocab_size)[:] = 0
            return False
        matcher.fill_next_token_bitmask(token_bitmask, node)
        temperature = matcher.temperature if temps is not None else None
        if temperature is not None:
            temps[node] = temperature
        return True

    def child(c: int) -> int:
        if not -1 <= c < n:
            raise ValueError(f"draft tree index {c} is outside [-1, {n})")
        return c

    try:
        stack = [child(int(nxt[0])) if fill(0) else -1]  # per depth: the next child to try (-1: none left)
        while stack:
            c = stack[-1]
            if c < 0:
                stack.pop()
                if stack:  # back to the parent's depth: undo the parent's token, go on to its sibling
                    matcher.rollback(1)
                    accepted -= 1
                    stack[-1] = child(int(sib[stack[-1]]))
                continue
            if 0 < time_threshold < time.perf_counter() - start:
                return False
            if seen[c]:
                raise ValueError(f"the draft tree reaches node {c} twice")
            if matcher.accept_token(int(tokens[c])):
                accepted += 1
                stack.append(child(int(nxt[c])) if fill(c) else -1)
            else:
                seen[c] = True
                bitmask_row_view(token_bitmask, c, vocab_size)[:] = 0
                stack[-1] = child(int(sib[c]))
        return True
    finally:
        if accepted:
            matcher.rollback(accepted)
