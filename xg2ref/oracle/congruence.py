"""The exact syntactic congruence of a regular grammar (Myhill; CFGzip Definition 1), to check
token classes against (specs/09-token-classes.md, "Checks").

    u ≡_L v   iff   for all x, y:  x u y ∈ L ⇔ x v y ∈ L
              iff   δ(q, u) = δ(q, v) for every state q of L's minimal complete DFA

(Every state of the minimal DFA is reached by some x, and two different states are told apart by
some y.) So on a regular grammar the classes of ≡_L are computable, and a relation's classes
must each lie inside one of them.

Built from the IR, sharing with the engine only the IR walk of Thompson's construction
(grammar/thompson.py, whose one construction every automaton builder subclasses): the letters
here are code-point intervals, and the subset construction over the intervals the grammar's
classes cut, then Moore minimization, are this module's own, not the FSM builder's. It takes grammars whose root refers to no rule and whose literals are ASCII, and
ASCII tokens: for such a token u, contexts x and y with x u y ∈ L are whole UTF-8 strings
themselves (an ASCII byte never sits inside a multi-byte character), so the byte-level
congruence is the codepoint-level one computed here.

What it leaves out: rules, intrinsics and non-ASCII literals (`syntactic_classes` returns None).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Optional

from ..grammar.ir import MAX_CODEPOINT, ByteString, CharClass, GrammarIR
from ..grammar.thompson import Thompson


class _NotRegular(Exception):
    pass


class _NFA(Thompson):
    """The ε-NFA of an expression over code points (states 0..n-1; edges[s] = [(ranges or None for
    ε, d)]): a literal one edge per ASCII character, a class one edge labelled with its ranges;
    rules, intrinsics and non-ASCII literals are outside this module's reach."""

    def __init__(self):
        self.edges: list = []

    def new_state(self) -> int:
        self.edges.append([])
        return len(self.edges) - 1

    def eps(self, src: int, dst: int) -> None:
        self.edges[src].append((None, dst))

    def edge(self, src: int, label, dst: int) -> None:
        self.edges[src].append((label, dst))

    def letters(self, expr: ByteString) -> list:
        if any(b >= 0x80 for b in expr.value):
            raise _NotRegular
        return [((b, b),) for b in expr.value]

    def class_paths(self, expr: CharClass) -> list:
        ranges = tuple(expr.codepoint_ranges())
        return [(ranges,)] if ranges else []

    def unsupported(self, expr) -> Exception:
        return _NotRegular()


def minimal_dfa(ir: GrammarIR) -> Optional[tuple]:
    """(cuts, delta, accepting, start) of the minimal complete DFA of `ir`'s language over
    codepoints, None when `ir` is not a plain regular grammar (module docstring). Symbol k is the
    codepoint interval [cuts[k], cuts[k+1]); delta[q][k] is a state."""
    nfa = _NFA()
    start = nfa.new_state()
    try:
        final = nfa.fragment(ir.rule(ir.root).body, start)
    except _NotRegular:
        return None
    points = {0, MAX_CODEPOINT + 1}
    for edges in nfa.edges:
        for ranges, _ in edges:
            for lo, hi in ranges or ():
                points.update((lo, hi + 1))
    cuts = sorted(points)
    n_sym = len(cuts) - 1

    def closure(states) -> frozenset:
        seen, todo = set(states), list(states)
        while todo:
            for ranges, d in nfa.edges[todo.pop()]:
                if ranges is None and d not in seen:
                    seen.add(d)
                    todo.append(d)
        return frozenset(seen)

    # the subset construction (the empty set is the dead state, so the DFA is complete)
    first = closure([start])
    index, subsets, delta = {first: 0}, [first], []
    while len(delta) < len(subsets):
        subset = subsets[len(delta)]
        row = []
        for k in range(n_sym):
            moved = {d for s in subset for ranges, d in nfa.edges[s]
                     if ranges is not None and any(lo <= cuts[k] <= hi for lo, hi in ranges)}
            target = closure(moved)
            if target not in index:
                index[target] = len(subsets)
                subsets.append(target)
            row.append(index[target])
        delta.append(row)
    # Moore: refine {accepting, not} by the blocks of successors until stable
    kinds: dict = {}
    block = [kinds.setdefault(final in subset, len(kinds)) for subset in subsets]
    while True:
        sigs: dict = {}
        new = [sigs.setdefault((block[q], tuple(block[d] for d in delta[q])), len(sigs)) for q in range(len(delta))]
        if len(sigs) == len(set(block)):
            break
        block = new
    n = len(set(block))
    small = [[0] * n_sym for _ in range(n)]
    accepting = [False] * n
    for q in range(len(delta)):
        small[block[q]] = [block[d] for d in delta[q]]
        accepting[block[q]] = final in subsets[q]
    return cuts, small, accepting, block[0]


def syntactic_classes(ir: GrammarIR, tokens: list) -> Optional[list]:
    """The class of ≡_L of each token (bytes, ASCII) by the minimal DFA, numbered in order of first
    appearance; None when the grammar or a token is outside this module's reach."""
    dfa = minimal_dfa(ir)
    if dfa is None or any(b >= 0x80 for token in tokens for b in token):
        return None
    cuts, delta, _, _ = dfa
    keys: dict = {}
    out = []
    for token in tokens:
        symbols = [bisect_right(cuts, b) - 1 for b in token]
        ends = []
        for q in range(len(delta)):
            for k in symbols:
                q = delta[q][k]
            ends.append(q)
        out.append(keys.setdefault(tuple(ends), len(keys)))
    return out


def valid_nowhere(ir: GrammarIR, token: bytes) -> Optional[bool]:
    """Whether no x, y make x token y a sentence (every state goes dead on it)."""
    dfa = minimal_dfa(ir)
    if dfa is None:
        return None
    cuts, delta, accepting, _ = dfa
    # the dead state: the one non-accepting state whose every move stays put
    dead = [q for q in range(len(delta)) if not accepting[q] and all(d == q for d in delta[q])]
    ends = set()
    for q in range(len(delta)):
        for b in token:
            q = delta[q][bisect_right(cuts, b) - 1]
        ends.add(q)
    return bool(dead) and ends == {dead[0]}
