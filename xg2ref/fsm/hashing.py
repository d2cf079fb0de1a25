"""XGrammar-2 §3.3 (Algorithms 1 and 2, Appendix C): hashing rule FSMs for the cross-grammar cache.

Two grammars often hold the same rule under different names (a string with `maxLength: 100`,
a tool's argument object). To share token-mask cache entries between them, each rule's FSM gets
a 64-bit hash that covers its own structure and, through its rule edges, the structure of every
rule it references; and each of its states a *canonical number*, the same in every grammar.

Canonical numbering and the local hash (Algorithm 1). Breadth first from the start state; the
edges of a state are visited sorted by their label (byte range; token set; referenced rule's
hash), and a target gets the next number when first met:

    visit(s)     h <- mix(h, [s final], K, K)
    byte edge    h <- mix(h, lo, hi, number(dst))
    token edge   h <- mix(h, K, hash(token set), number(dst))
    rule edge    h <- mix(h, K, hash(rule), number(dst))

Hierarchical order. A rule edge needs the referenced rule's hash first, so rules are hashed
callee first, by the strongly connected components of the reference graph (Tarjan):

    no reference, or references to hashed rules      |- local hash
    a rule that references only itself in its SCC    |- its own edges hashed as SELF: local hash
    a simple cycle r0 -> r1 -> ... -> r(n-1) -> r0    |- edges into the cycle hashed as CYCLE;
      (each member references exactly one other         H[i] = mix over j of L[(i + j) mod n]
       member, no member references itself)             (Algorithm 2: the rotation from i)
    any other SCC, or a rule reaching one             |- no hash (never shared)

The mix is not commutative, so the rotation starting at each member gives each its own hash.
Budgets (`max_tokens`, `max_chars`), a counted repetition's bounds (§3.6) and the marks of an
unordered rule and its members (kernels/earley.py) are mixed into the local hash: they change
how a rule parses.

Equal hashes must mean equal structure (Appendix C: the hash is sufficient, not complete), and
64 bits may collide, so a cache never trusts a hash alone: `same_structure` checks that the two
rules' machines are isomorphic under their canonical numberings, edge by edge, pairing the rules
their edges reference and checking those pairs the same way (a pair met again is assumed equal,
which is how the check ends on recursion). Where a hash is ambiguous (two edges of one state with
equal labels, possible in a non-deterministic machine or when two referenced rules have equal
hashes) the numbering may differ between equal rules: the check then fails and the entry is not
shared, never wrongly shared.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..util import strongly_connected
from .build import TOKEN_SYMBOL_BASE, GrammarFSMs

MASK64 = (1 << 64) - 1
K_REF = 0x5F0E_1D2C_3B4A_6978  # marks a non-byte edge (Algorithm 1's constant k)
SELF = 0x243F_6A88_85A3_08D3  # a rule edge to the rule itself
CYCLE = 0x1319_8A2E_0370_7344  # a rule edge to the next member of a simple cycle

_SERIALS = itertools.count()  # (a memo of a check against a rule names its hashes by serial, not holding them)
KIND_LEAF, KIND_ACYCLIC, KIND_SELF, KIND_CYCLE, KIND_UNHASHED = "leaf", "acyclic", "self", "cycle", "unhashed"


def mix(h: int, *values: int) -> int:
    """Fold `values` into hash `h`, in order (splitmix64's finalizer over h * M + v)."""
    for v in values:
        z = (h * 0x9E3779B97F4A7C15 + (v & MASK64) + 0x632BE59BD9B4E019) & MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        h = z ^ (z >> 31)
    return h


@dataclass(frozen=True)
class RuleHashes:
    """The hashes of one grammar's rule FSMs.

    hashes[r] : the hash of rule r, None when r lies in (or reaches) a reference cycle that is
                not simple
    canonical[r] : int32 array, state -> canonical number (-1: unreachable from the start),
                   None where hashes[r] is None
    kinds[r] : how r was hashed (KIND_*)
    scc[r] : the number of r's strongly connected component in the reference graph
    """

    hashes: tuple
    canonical: tuple
    kinds: tuple
    scc: tuple
    serial: int = field(default_factory=lambda: next(_SERIALS), compare=False, repr=False)  # unique to this object

    def edge_labels(self, g: GrammarFSMs, r: int) -> dict:
        """The label each rule edge of r was hashed with: SELF, CYCLE (another member of r's
        simple cycle) or the referenced rule's hash."""
        return {ref: SELF if ref == r else CYCLE if self.scc[ref] == self.scc[r] else self.hashes[ref]
                for _, ref, _ in g.fsms[r].rule_edges}

    def summary(self) -> str:
        counts = {k: self.kinds.count(k) for k in (KIND_LEAF, KIND_ACYCLIC, KIND_SELF, KIND_CYCLE, KIND_UNHASHED)}
        return ", ".join(f"{n} {k}" for k, n in counts.items() if n)


def _token_set_hash(token_set) -> int:
    return mix(0x7, int(token_set.exclude), len(token_set.ids), *token_set.ids)


class _Labeled:
    """One rule's FSM as per-state edge lists sorted by label, ready for Algorithm 1.

    A label is (kind, a, b): (0, lo, hi) a byte range, (1, token-set hash, 0) a token set,
    (2, rule's hash or SELF / CYCLE, 0) a rule edge. `refs[s]` lists, for each edge of s in
    the same order, the rule it references (-1 for bytes and tokens).
    """

    def __init__(self, g: GrammarFSMs, r: int, ref_label: dict):
        fsm = g.fsms[r]
        out: list = [[] for _ in range(fsm.num_states)]
        for s, lo, hi, d in fsm.byte_edges:
            if lo < TOKEN_SYMBOL_BASE:
                out[s].append(((0, lo, min(hi, TOKEN_SYMBOL_BASE - 1)), -1, d))
            for k in range(max(lo, TOKEN_SYMBOL_BASE), hi + 1):
                out[s].append(((1, _token_set_hash(g.token_sets[k - TOKEN_SYMBOL_BASE]), 0), -1, d))
        for s, ref, d in fsm.rule_edges:
            out[s].append(((2, ref_label[ref], 0), ref, d))
        for edges in out:
            edges.sort(key=lambda e: (e[0], e[2]))  # the target only breaks ties (Appendix C)
        self.out, self.start, self.finals = out, fsm.start, fsm.finals

    def local_hash(self, budgets: tuple) -> tuple[int, np.ndarray]:
        """Algorithm 1: (hash, canonical numbering)."""
        number = np.full(len(self.out), -1, dtype=np.int32)
        number[self.start] = 0
        queue, head, n = [self.start], 0, 1
        h = mix(0, *budgets)
        while head < len(queue):
            s = queue[head]
            head += 1
            h = mix(h, int(s in self.finals), K_REF, K_REF)
            for (kind, a, b), _, d in self.out[s]:
                if number[d] < 0:
                    number[d] = n
                    n += 1
                    queue.append(d)
                h = mix(h, a, b, int(number[d])) if kind == 0 else mix(h, K_REF, kind, a, int(number[d]))
        return mix(h, n), number


def _budgets(g: GrammarFSMs, r: int) -> tuple:
    """What a rule parses by besides its machine: budgets, a counted repetition's bounds and an
    unordered rule's or member's marks."""
    lo, hi = (g.repeats[r][0], -2 if g.repeats[r][1] is None else g.repeats[r][1]) if g.repeats and g.repeats[r] \
        else (-1, -1)
    out = (g.max_tokens[r] if g.max_tokens else -1, g.max_chars[r] if g.max_chars else -1, lo, hi)
    mark = g.unordered[r] if g.unordered else None
    if mark is None:
        return out
    return out + ((1, mark[1]) if mark[0] == "unordered" else (2, mark[1], int(mark[2])))


def hash_rules(g: GrammarFSMs, known: Optional[dict] = None) -> RuleHashes:
    """Hash every rule FSM of `g` in hierarchical order (see the module docstring). `known`:
    rule -> (hash, kind) for stand-in rules whose hash was computed elsewhere (the roots of
    linked sub-grammars, xg2ref/linking.py); they get no canonical numbering."""
    known = known or {}
    n = len(g.fsms)
    succ = [sorted({ref for _, ref, _ in f.rule_edges}) for f in g.fsms]
    hashes: list = [None] * n
    canonical: list = [None] * n
    kinds = [KIND_UNHASHED] * n
    scc = [0] * n
    components = strongly_connected(n, succ)
    for c, comp in enumerate(components):
        for r in comp:
            scc[r] = c
    for comp in components:
        members = set(comp)
        outside = {ref for r in comp for ref in succ[r] if ref not in members}
        if any(hashes[ref] is None for ref in outside):
            continue  # reaches an unhashed rule
        if len(comp) == 1 and comp[0] in known:
            hashes[comp[0]], kinds[comp[0]] = known[comp[0]]
            continue
        if len(comp) == 1:
            r = comp[0]
            label = {ref: hashes[ref] for ref in succ[r] if ref != r}
            label[r] = SELF
            hashes[r], canonical[r] = _Labeled(g, r, label).local_hash(_budgets(g, r))
            kinds[r] = KIND_SELF if r in succ[r] else (KIND_ACYCLIC if succ[r] else KIND_LEAF)
            continue
        cycle = _simple_cycle(comp, succ)
        if cycle is None:
            continue
        local = []
        for r in cycle:
            label = {ref: (CYCLE if ref in members else hashes[ref]) for ref in succ[r]}
            h, canonical[r] = _Labeled(g, r, label).local_hash(_budgets(g, r))
            local.append(h)
        m = len(cycle)
        for i, r in enumerate(cycle):  # Algorithm 2: the rotation that starts at member i
            hashes[r] = mix(CYCLE, m, *(local[(i + j) % m] for j in range(m)))
            kinds[r] = KIND_CYCLE
    return RuleHashes(tuple(hashes), tuple(canonical), tuple(kinds), tuple(scc))


def _simple_cycle(comp: list, succ: list) -> Optional[list]:
    """The members of SCC `comp` in cycle order, when each references exactly one other member
    and none references itself; None otherwise."""
    members = set(comp)
    nxt = {}
    for r in comp:
        inner = [ref for ref in succ[r] if ref in members]
        if len(inner) != 1 or inner[0] == r:
            return None
        nxt[r] = inner[0]
    cycle, r = [comp[0]], nxt[comp[0]]
    while r != comp[0]:
        cycle.append(r)
        r = nxt[r]
    return cycle if len(cycle) == len(comp) else None


def canonical_form(g: GrammarFSMs, hashes: RuleHashes, r: int) -> tuple:
    """Rule r's machine under its canonical numbering: (states reached, sorted finals, sorted
    edges (src, label, dst)), and the rules its rule edges reference, in the order of those edges."""
    number = hashes.canonical[r]
    labeled = _Labeled(g, r, hashes.edge_labels(g, r))
    edges, refs = [], []
    for s, out in enumerate(labeled.out):
        if number[s] < 0:
            continue
        for label, ref, d in out:
            edges.append((int(number[s]), label, int(number[d]), ref))
    edges.sort(key=lambda e: e[:3])
    refs = [e[3] for e in edges if e[3] >= 0]
    finals = sorted(int(number[s]) for s in labeled.finals if number[s] >= 0)
    return (int((number >= 0).sum()), tuple(finals), tuple(e[:3] for e in edges), _budgets(g, r)), refs


def same_structure(ga: GrammarFSMs, ha: RuleHashes, ra: int, gb: GrammarFSMs, hb: RuleHashes, rb: int) -> bool:
    """Whether rule ra of grammar ga and rule rb of gb are the same machine up to state names,
    referencing (recursively) rules that are the same in the same way. Both must be hashed."""
    if ha.hashes[ra] is None or hb.hashes[rb] is None or ha.hashes[ra] != hb.hashes[rb]:
        return False
    paired: dict = {}  # rule of ga -> rule of gb, for the pairs assumed or checked equal
    back: dict = {}
    todo = [(ra, rb)]
    while todo:
        a, b = todo.pop()
        if a in paired or b in back:
            if paired.get(a) != b or back.get(b) != a:
                return False
            continue
        paired[a], back[b] = b, a
        if ha.hashes[a] != hb.hashes[b]:
            return False
        form_a, refs_a = canonical_form(ga, ha, a)
        form_b, refs_b = canonical_form(gb, hb, b)
        if form_a != form_b:
            return False
        todo.extend(zip(refs_a, refs_b))
    return True
