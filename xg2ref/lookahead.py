"""XGrammar §3.2 and xgrammar's lookahead assertions: which ones the mask cache may trust, and
the byte automata it checks tokens against while building entries.

An assertion `A ::= body (= L)` claims that whatever follows A begins with a string of L. When
A may end inside a token t after d bytes, the rest t[d:] must then agree with L: some prefix of
it is in L, or it is itself the start of a string of L. If no end position agrees, t is
rejected without running context expansion. Two sources, as in xgrammar:

- **inferred** (xgrammar's `LookaheadAssertionAnalyzer`): A, not the root, occurs exactly once
  in the grammar as an element of a sequence that is not that sequence's last, and is never the
  last element of another rule's sequence. L is the rest of that sequence. True by
  construction: that occurrence is the only way in, and after A comes exactly L.
- **written** by the user. xgrammar trusts them, so a wrong one makes its masks wrong. An
  oracle's masks must follow the language, so a written assertion is used only once VERIFY
  proves it from the grammar; `LookaheadReport.unverified` lists the others.

The automaton. FILTER(L) is L's FSM in which each rule edge `q -C-> q'` becomes byte edges on
FIRST(C) (the bytes C can begin with) into an accepting state, plus `q -eps-> q'` when C is
nullable. Its language contains L's strings' first bytes up to the first rule reference, so
FILTER over-approximates L·(any bytes): a rest it rejects is rejected by L.

    FIRST(C) = bytes on edges out of the states reached from C's start by nullable rule
               edges, and FIRST(D) for every rule edge D out of them

VERIFY(A, F = FILTER(L)) walks pairs (grammar state, F state) from every occurrence
`src -A-> dst`, the F state starting at F's start:

    F state accepting                           |- this path agrees with L: stop
    byte edge q -b-> q', F has no b edge        |- FAIL
    byte edge q -b-> q'                         |- continue at (q', F(b))
    rule edge q -C-> q'                         |- enter C at its start with the same F state;
                                                   each F state C can end with continues at q'
    q final in rule B                           |- continue at every occurrence of B (where the
                                                   root ends the input, nothing follows: agreed)

The walk over-approximates every continuation of A, so when no path FAILs, L is true. Entering
a rule is summarised per (rule, F state) and iterated to a fixed point, which handles
recursion; `MAX_VERIFY_STEPS` bounds the work (beyond it the assertion stays unverified).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

import numpy as np

from .fsm.build import GrammarFSMs, rule_fsm
from .fsm.fsm import FSM
from .grammar.ir import Choice, Expr, GrammarIR, RuleRef, Sequence, referenced_rules

# Filter automata larger than this are not built (the assertion is then not used).
MAX_FILTER_STATES = 256
# Pair steps one VERIFY may take before giving up.
MAX_VERIFY_STEPS = 200_000


class LookaheadArrays(NamedTuple):
    """The filter automata of all rules, for the kernels (R rules, N automaton states).

    la_start : int32[R]         start row of rule r's filter, -1 when r has none
    la_next : int32[N, 256]     next row on a byte, -1 for none
    la_final : bool_[N]         accepting rows (the rest agrees with L from here on)
    """

    la_start: np.ndarray
    la_next: np.ndarray
    la_final: np.ndarray


def no_lookahead(n_rules: int) -> LookaheadArrays:
    """Filters for no rule."""
    return LookaheadArrays(np.full(n_rules, -1, dtype=np.int32), np.zeros((0, 256), dtype=np.int32),
                           np.zeros(0, dtype=np.bool_))


@dataclass
class LookaheadReport:
    """Which assertions the cache uses: rule name -> printed source, for each kind."""

    inferred: dict = field(default_factory=dict)
    verified: dict = field(default_factory=dict)
    unverified: dict = field(default_factory=dict)


def inferred_lookaheads(ir: GrammarIR) -> dict[str, Expr]:
    """xgrammar's inference on a normalized grammar: rule name -> the sequence after its only
    non-last occurrence. Rules with a written assertion are left out (they keep theirs).

    Example: for `root ::= "[" item "]" | "x" ; item ::= [a-z]+`, {"item": Sequence(("]",))}
    """
    non_last: dict[str, int] = defaultdict(int)
    suffix: dict[str, tuple] = {}
    excluded: set[str] = set()
    for rule in ir.rules:
        alternatives = rule.body.alternatives if isinstance(rule.body, Choice) else (rule.body,)
        for alt in alternatives:
            items = alt.items if isinstance(alt, Sequence) else (alt,)
            for i, item in enumerate(items):
                if not isinstance(item, RuleRef):
                    excluded.update(referenced_rules(item))  # nested occurrences: not inferred
                elif i == len(items) - 1:
                    if item.name != rule.name:
                        excluded.add(item.name)
                else:
                    non_last[item.name] += 1
                    suffix.setdefault(item.name, items[i + 1:])
    written = {r.name for r in ir.rules if r.lookahead is not None}
    return {name: Sequence(suffix[name]) for name, count in non_last.items()
            if count == 1 and name not in excluded and name not in written and name != ir.root}


def _nullable_closure(rules_out: list, nullable, q0: int) -> set:
    """The states reached from q0 through edges of nullable rules."""
    seen, stack = {q0}, [q0]
    while stack:
        for c, d in rules_out[stack.pop()]:
            if nullable[c] and d not in seen:
                seen.add(d)
                stack.append(d)
    return seen


def _propagate(sets, includes: list[tuple[int, int]]) -> None:
    """Grow sets[a] |= sets[b] for every (a, b) in `includes` until nothing changes."""
    changed = True
    while changed:
        changed = False
        for a, b in includes:
            if (sets[b] & ~sets[a]).any():
                sets[a] |= sets[b]
                changed = True


def first_bytes(fsms: GrammarFSMs) -> list[np.ndarray]:
    """FIRST(r) of every rule as bool[256] (see the module docstring), to a fixed point."""
    first = [np.zeros(256, dtype=np.bool_) for _ in fsms.fsms]
    includes: list[tuple[int, int]] = []  # (r, c): FIRST(c) <= FIRST(r)
    for r, fsm in enumerate(fsms.fsms):
        bytes_out, rules_out, _ = fsm.out_edges()
        for q in _nullable_closure(rules_out, fsms.nullable, fsm.start):
            for lo, hi, _ in bytes_out[q]:
                first[r][lo:hi + 1] = True
            includes.extend((r, c) for c, _ in rules_out[q])
    _propagate(first, includes)
    return first


def follow_bytes(fsms: GrammarFSMs, first: Optional[list] = None, tails: bool = False):
    """FOLLOW(r) of every rule as bool[R, 256]: the bytes that can come right after r ends, in
    any sentence (the classic analysis, over the FSMs, to a fixed point):

        occurrence q -A-> d in rule B      |-  FIRST(from d) <= FOLLOW(A)
        ... and B may end from d           |-  FOLLOW(B) <= FOLLOW(A)

    FIRST(from d) is the bytes on edges out of the states reached from d through nullable rule
    edges, and FIRST of the rules referenced there. After the root nothing follows. Context
    expansion uses it to drop end positions whose next byte can never follow the rule.

    With `tails`, returns (FOLLOW, TAIL) where TAIL bool[R] marks the rules that may end where
    the root ends (the root, and A whenever (A, B) above with B in TAIL): linked into a larger
    grammar (xg2ref/linking.py), FOLLOW(A) grows by what follows the root there exactly for them.
    """
    first = first if first is not None else first_bytes(fsms)
    follow = np.zeros((len(fsms.fsms), 256), dtype=np.bool_)
    inherits: list[tuple[int, int]] = []  # (A, B): FOLLOW(B) <= FOLLOW(A)
    for b, fsm in enumerate(fsms.fsms):
        bytes_out, rules_out, _ = fsm.out_edges()
        for _, a, d in fsm.rule_edges:
            states = _nullable_closure(rules_out, fsms.nullable, d)
            for q in states:
                for lo, hi, _ in bytes_out[q]:
                    follow[a, lo:hi + 1] = True
                for c, _ in rules_out[q]:
                    follow[a] |= first[c]
            if a != b and any(q in fsm.finals for q in states):
                inherits.append((a, b))
    _propagate(follow, inherits)
    if not tails:
        return follow
    tail = np.zeros((len(fsms.fsms), 1), dtype=np.bool_)
    tail[fsms.root] = True
    _propagate(tail, inherits)
    return follow, tail[:, 0]


def filter_automaton(lookahead: Expr, rule_ids: dict[str, int], fsms: GrammarFSMs,
                     first: list[np.ndarray]) -> Optional[FSM]:
    """FILTER(L) as a DFA without rule edges, or None when it would be too large."""
    nfa = rule_fsm(lookahead, rule_ids, "(lookahead)")
    accept = nfa.num_states
    byte_edges = list(nfa.byte_edges)
    eps_edges = list(nfa.eps_edges)
    for s, c, d in nfa.rule_edges:
        for lo, hi in _ranges(first[c]):
            byte_edges.append((s, lo, hi, accept))
        if fsms.nullable[c]:
            eps_edges.append((s, d))
    fsm = FSM(nfa.num_states + 1, nfa.start, nfa.finals | {accept}, tuple(sorted(byte_edges)), (),
              tuple(sorted(eps_edges))).without_epsilon().trim()
    dfa = fsm.determinize(MAX_FILTER_STATES)
    return None if dfa is None else dfa.minimize()


def _ranges(bits: np.ndarray) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for b in np.flatnonzero(bits).tolist():
        if out and out[-1][1] == b - 1:
            out[-1] = (out[-1][0], b)
        else:
            out.append((b, b))
    return out


class _Dense:
    """A DFA without rule edges as a table: step(l, b) -> next state or -1."""

    def __init__(self, dfa: FSM):
        self.next = np.full((dfa.num_states, 256), -1, dtype=np.int32)
        for s, lo, hi, d in dfa.byte_edges:
            self.next[s, lo:hi + 1] = d
        self.final = np.zeros(dfa.num_states, dtype=np.bool_)
        self.final[list(dfa.finals)] = True
        self.start = dfa.start


class _Edges:
    """Per-rule adjacency lists and the occurrences of every rule, shared by all VERIFY runs."""

    def __init__(self, fsms: GrammarFSMs):
        self.tables = [f.out_edges()[:2] for f in fsms.fsms]
        self.parents: dict[int, list[tuple[int, int]]] = defaultdict(list)  # rule -> [(parent, dst state)]
        for b, f in enumerate(fsms.fsms):
            for _, c, d in f.rule_edges:
                self.parents[c].append((b, d))


def verify(rule: int, dense: _Dense, fsms: GrammarFSMs, edges: Optional[_Edges] = None, open_root: bool = False,
           opaque: frozenset = frozenset()) -> bool:
    """VERIFY (module docstring): True when every continuation of `rule` agrees with the filter.

    For a grammar that will be linked into others (xg2ref/linking.py): with `open_root`, what
    follows the root is unknown, so a climb that reaches the root's end with the filter not yet
    accepting FAILs; a walk that enters an `opaque` rule (a stand-in for a sub-grammar) FAILs."""
    edges = edges if edges is not None else _Edges(fsms)
    tables, parents = edges.tables, edges.parents
    exits: dict[tuple[int, int], set] = defaultdict(set)  # (rule, entry F state) -> F states at its end
    steps = 0

    def walk(r: int, q0: int, l0: int, climb: bool) -> Optional[bool]:
        """Explore rule r from local state q0 with F state l0. Records r's exits for entry l0
        (when not climbing) or climbs to r's occurrences at its ends (when climbing).
        Returns False on FAIL, None when over budget, True otherwise."""
        nonlocal steps
        bytes_out, rules_out = tables[r]
        todo, seen = [(q0, l0)], {(q0, l0)}
        while todo:
            q, l = todo.pop()
            steps += 1
            if steps > MAX_VERIFY_STEPS:
                return None
            if dense.final[l]:
                continue
            follow = []
            for lo, hi, d in bytes_out[q]:
                nxt = set(dense.next[l, lo:hi + 1].tolist())
                if -1 in nxt:
                    return False
                follow.extend((d, x) for x in nxt)
            for c, d in rules_out[q]:
                if c in opaque:
                    return False
                requested.add((c, l))
                follow.extend((d, x) for x in exits[(c, l)])
            if q in fsms.fsms[r].finals:
                if climb:
                    climbing.add((r, l))
                else:
                    exits[(r, l0)].add(l)
            for pair in follow:
                if pair not in seen:
                    seen.add(pair)
                    todo.append(pair)
        return True

    requested: set = set()
    climbing: set = set()
    starts = [(b, d) for b, d in parents[rule]]
    while True:
        before = (sum(map(len, exits.values())), len(requested), len(climbing))
        for r, l in list(requested):
            ok = walk(r, fsms.fsms[r].start, l, climb=False)
            if not ok:
                return False
        pending = [(b, d, dense.start) for b, d in starts]
        done = set()
        while pending:
            b, d, l = pending.pop()
            if (b, d, l) in done:
                continue
            done.add((b, d, l))
            ok = walk(b, d, l, climb=True)
            if not ok:
                return False
            for r, lr in list(climbing):
                if open_root and r == fsms.root:
                    return False
                # where r ends, what follows is read at r's occurrences; the root may also
                # end the input, which agrees with any assertion
                pending.extend((pb, pd, lr) for pb, pd in parents[r])
        if (sum(map(len, exits.values())), len(requested), len(climbing)) == before:
            return True


def lookahead_arrays(ir: GrammarIR, fsms: GrammarFSMs, first: Optional[list] = None, open_root: bool = False,
                     opaque: frozenset = frozenset()) -> tuple[LookaheadArrays, LookaheadReport]:
    """The filters of every inferred and every verified written assertion of a normalized
    grammar (`first`: `first_bytes(fsms)` when the caller has it already; `open_root`,
    `opaque`: see `verify`)."""
    from .grammar.printer import print_expr

    rule_ids = {name: i for i, name in enumerate(fsms.rule_names)}
    first = first if first is not None else first_bytes(fsms)
    edges = _Edges(fsms)
    report = LookaheadReport()
    chosen: dict[int, _Dense] = {}
    candidates = [(r.name, r.lookahead, False) for r in ir.rules if r.lookahead is not None]
    candidates += [(name, expr, True) for name, expr in inferred_lookaheads(ir).items()]
    for name, expr, inferred in candidates:
        r = rule_ids[name]
        dfa = filter_automaton(expr, rule_ids, fsms, first)
        text = print_expr(expr)
        if dfa is None or dfa.start in dfa.finals:
            if not inferred:
                report.unverified[name] = text
            continue
        dense = _Dense(dfa)
        if inferred:
            report.inferred[name] = text
        elif r != fsms.root and verify(r, dense, fsms, edges, open_root, opaque):
            report.verified[name] = text
        else:
            report.unverified[name] = text
            continue
        chosen[r] = dense
    la_start = np.full(len(fsms.fsms), -1, dtype=np.int32)
    tables, finals, rows = [], [], 0
    for r, dense in sorted(chosen.items()):
        nxt = dense.next.copy()
        nxt[nxt >= 0] += rows
        tables.append(nxt)
        finals.append(dense.final)
        la_start[r] = rows + dense.start
        rows += len(dense.final)
    arrays = LookaheadArrays(
        la_start=la_start,
        la_next=np.concatenate(tables) if tables else np.zeros((0, 256), dtype=np.int32),
        la_final=np.concatenate(finals) if finals else np.zeros(0, dtype=np.bool_),
    )
    return arrays, report
