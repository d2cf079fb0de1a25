"""XGrammar-2 §3.3, at the front of the pipeline: a rule's FSM built once per *shape*, for every
grammar that holds the rule again.

Where the cross-grammar cache (xg2ref/mask/cross_grammar.py) shares mask entries between rules
with equal machines, building those machines is itself most of a compile: determinizing and
minimizing a rule's NFA costs far more than the rule's text. A tool's argument schema comes
back in request after request under other rule names (`obj3_m1` here, `obj17_m1` there), so
the machine is cached under the rule's shape, the body with rule names replaced by their
order of first appearance:

    shape(body) = the body's tree with each RuleRef(name) written as ("r", k), k the index of
                  name among the body's references in first-appearance order; bytes, classes,
                  token sets, repetitions and TagDispatch tags (their rules by index) verbatim

    shape(A) = shape(B), refs(A) = [a0, a1, ...], refs(B) = [b0, b1, ...]
    |-  fsm(A) = fsm(B) with rule edge bk renamed ak (and token sets renumbered)

The cached machine is the simplified one of the body with the references numbered 0, 1, ...;
the key also holds what changes the build besides the body: whether tail self-calls become
loops (and which reference is the rule itself), a counted repetition's bounds, and the DFA
size limit. Productivity is checked after, on the simplified machines (same languages).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Optional

from ..grammar.intrinsic import Intrinsic
from ..grammar.ir import ByteString, CharClass, Choice, Expr, Repeat, RuleRef, Sequence
from .fsm import FSM, TOKEN_SYMBOL_BASE

MAX_SHAPES = 20_000  # machines kept (least recently used first out)


def shape(body: Expr) -> tuple[tuple, list]:
    """(the body's shape, its references in first-appearance order)."""
    refs: dict[str, int] = {}

    def ref(name: str) -> int:
        return refs.setdefault(name, len(refs))

    def visit(node: Expr):
        if isinstance(node, RuleRef):
            return ("r", ref(node.name))
        if isinstance(node, (ByteString, CharClass)):
            return node
        if isinstance(node, Sequence):
            return ("s",) + tuple(visit(k) for k in node.items)
        if isinstance(node, Choice):
            return ("|",) + tuple(visit(k) for k in node.alternatives)
        if isinstance(node, Repeat):
            return ("*", visit(node.body), node.min, node.max)
        if isinstance(node, Intrinsic):  # its rules by local number
            return ("i", type(node).__name__, node.renamed(lambda name: str(ref(name))).key())
        raise TypeError(f"unknown grammar node {node!r}")

    key = visit(body)
    return key, list(refs)


class ShapeCache:
    """Simplified rule machines by shape: `get` and `put` with local rule numbers, `relabel`
    to a grammar's."""

    def __init__(self, max_shapes: int = MAX_SHAPES):
        self.max_shapes = max_shapes
        self._fsms: "OrderedDict[tuple, tuple]" = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._fsms)

    def get(self, key: tuple) -> Optional[tuple]:
        """(machine with local numbers, its local token sets, its unsimplified size) or None."""
        hit = self._fsms.get(key)
        if hit is None:
            self.misses += 1
            return None
        self._fsms.move_to_end(key)
        self.hits += 1
        return hit

    def put(self, key: tuple, value: tuple) -> None:
        self._fsms[key] = value
        while len(self._fsms) > self.max_shapes:
            self._fsms.popitem(last=False)

    def keyed(self) -> dict:
        """id -> what `get` gives, for every shape kept (for the compiler's memory tally: a
        shape's key is a deep tuple, slow to hash again)."""
        return {id(value): value for value in list(self._fsms.values())}

    def evict_to(self, n: int) -> None:
        """Keep the `n` most recently used machines."""
        while len(self._fsms) > max(n, 0):
            self._fsms.popitem(last=False)

    def clear(self) -> None:
        self._fsms.clear()


def relabel(fsm: FSM, rule_ids: list, local_tokens: list, token_sets: dict) -> FSM:
    """`fsm` (local rule k = rule_ids[k]'s index, local token set k = local_tokens[k]) in a
    grammar's numbers; new token sets join `token_sets`."""
    if not local_tokens and not fsm.rule_edges:
        return fsm  # nothing to renumber (machines are immutable: shared)
    rule_edges = tuple(sorted((s, rule_ids[r], d) for s, r, d in fsm.rule_edges))
    if not local_tokens:
        return FSM(fsm.num_states, fsm.start, fsm.finals, fsm.byte_edges, rule_edges, fsm.eps_edges)
    symbol = [TOKEN_SYMBOL_BASE + token_sets.setdefault(t, len(token_sets)) for t in local_tokens]
    byte_edges = []
    for s, lo, hi, d in fsm.byte_edges:
        if lo < TOKEN_SYMBOL_BASE:
            byte_edges.append((s, lo, min(hi, TOKEN_SYMBOL_BASE - 1), d))
        byte_edges.extend((s, symbol[k - TOKEN_SYMBOL_BASE], symbol[k - TOKEN_SYMBOL_BASE], d)
                          for k in range(max(lo, TOKEN_SYMBOL_BASE), hi + 1))
    return FSM(fsm.num_states, fsm.start, fsm.finals, tuple(sorted(byte_edges)), rule_edges, fsm.eps_edges)
