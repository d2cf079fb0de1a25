"""XGrammar-2 §3.3: the per-rule byte-level FSM as an immutable value.

Every rule of a grammar becomes one finite-state machine over an alphabet of *bytes* and
*rule references*. A path from `start` to a final state spells a body of the rule in which
each rule-reference edge stands for any string of the referenced rule; the Earley parser
(`xg2ref/earley.py`) expands those edges. Three edge kinds:

    byte edge    (src, lo, hi, dst)   scan one byte in lo..hi
    rule edge    (src, rule, dst)     a complete match of rule number `rule`
    epsilon      (src, dst)           only while building; removed by `without_epsilon`

The algorithms are the textbook ones, written for small machines:

- `without_epsilon`: closure(s) = states reachable by epsilon edges; s takes the edges of
  its closure and is final iff its closure holds a final state.
- `trim`: keep states that are reachable from `start` and can reach a final state
  (co-reachable). Dead states must go: an Earley item sitting in one would make a prefix
  look viable when no sentence extends it.
- `determinize`: subset construction. Byte edges leaving a subset are cut into disjoint
  intervals at every range boundary; a rule edge is just another letter.
- `minimize`: Hopcroft's partition refinement over the machine's elementary byte intervals
  and rule numbers, for a partial transition function.

What it leaves out: repetition counters (§3.6); hashing is `hashing.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

ByteEdge = tuple[int, int, int, int]  # (src, lo, hi, dst)

# Token-set k of a grammar is the FSM letter TOKEN_SYMBOL_BASE + k (bytes are 0..255).
TOKEN_SYMBOL_BASE = 256
# The upper bound of a counted repetition R{lo,} in the FSM arrays (`rule_rep_hi`, fsm/build.py),
# read by the Earley kernels (kernels/earley.py).
REPEAT_UNBOUNDED = 2147483647
# Deterministic machines up to this many states are minimized (see FSM.simplified).
MAX_MINIMIZE_STATES = 8192
RuleEdge = tuple[int, int, int]  # (src, rule, dst)
EpsEdge = tuple[int, int]  # (src, dst)


@dataclass(frozen=True)
class FSM:
    """A finite-state machine over bytes and rule references.

    Attributes
    ----------
    num_states : states are 0 .. num_states-1
    start : the start state
    finals : the accepting states
    byte_edges : sorted tuple of (src, lo, hi, dst), 0 <= lo <= hi <= 255
    rule_edges : sorted tuple of (src, rule, dst)
    eps_edges : sorted tuple of (src, dst); empty once `without_epsilon` has run
    """

    num_states: int
    start: int
    finals: frozenset[int]
    byte_edges: tuple[ByteEdge, ...] = ()
    rule_edges: tuple[RuleEdge, ...] = ()
    eps_edges: tuple[EpsEdge, ...] = ()

    # ---- inspection -------------------------------------------------------------------

    @property
    def num_edges(self) -> int:
        return len(self.byte_edges) + len(self.rule_edges) + len(self.eps_edges)

    def out_edges(self) -> tuple[list[list[tuple[int, int, int]]], list[list[tuple[int, int]]], list[list[int]]]:
        """Per-state adjacency lists: byte (lo, hi, dst), rule (rule, dst), epsilon dst."""
        bytes_out: list[list[tuple[int, int, int]]] = [[] for _ in range(self.num_states)]
        rules_out: list[list[tuple[int, int]]] = [[] for _ in range(self.num_states)]
        eps_out: list[list[int]] = [[] for _ in range(self.num_states)]
        for s, lo, hi, d in self.byte_edges:
            bytes_out[s].append((lo, hi, d))
        for s, r, d in self.rule_edges:
            rules_out[s].append((r, d))
        for s, d in self.eps_edges:
            eps_out[s].append(d)
        return bytes_out, rules_out, eps_out

    def is_deterministic(self) -> bool:
        """No epsilon edges, no two byte edges of a state overlap, one edge per rule."""
        if self.eps_edges:
            return False
        bytes_out, rules_out, _ = self.out_edges()
        for s in range(self.num_states):
            ranges = sorted((lo, hi) for lo, hi, _ in bytes_out[s])
            if any(ranges[i][0] <= ranges[i - 1][1] for i in range(1, len(ranges))):
                return False
            rules = [r for r, _ in rules_out[s]]
            if len(rules) != len(set(rules)):
                return False
        return True

    def accepts(self, symbols: Iterable) -> bool:
        """Whether a path spells `symbols`: ints are bytes, ("rule", r) tuples are rule edges.

        Example: fsm.accepts(b"ab") or fsm.accepts([ord("a"), ("rule", 2)])
        """
        machine = self.without_epsilon() if self.eps_edges else self  # renumbered: its own start and finals
        bytes_out, rules_out, _ = machine.out_edges()
        current = {machine.start}
        for sym in symbols:
            nxt = set()
            for s in current:
                if isinstance(sym, tuple):
                    nxt.update(d for r, d in rules_out[s] if r == sym[1])
                else:
                    nxt.update(d for lo, hi, d in bytes_out[s] if lo <= sym <= hi)
            current = nxt
        return bool(current & machine.finals)

    # ---- transformations --------------------------------------------------------------

    def without_epsilon(self) -> "FSM":
        """An equivalent machine without epsilon edges (then trimmed)."""
        if not self.eps_edges:
            return self.trim()
        bytes_out, rules_out, eps_out = self.out_edges()
        byte_edges: set[ByteEdge] = set()
        rule_edges: set[RuleEdge] = set()
        finals = set()
        for s in range(self.num_states):
            # closure(s): every state reachable from s through epsilon edges
            closure, stack = {s}, [s]
            while stack:
                for d in eps_out[stack.pop()]:
                    if d not in closure:
                        closure.add(d)
                        stack.append(d)
            for c in closure:
                byte_edges.update((s, lo, hi, d) for lo, hi, d in bytes_out[c])
                rule_edges.update((s, r, d) for r, d in rules_out[c])
            if closure & self.finals:
                finals.add(s)
        fsm = FSM(self.num_states, self.start, frozenset(finals), tuple(sorted(byte_edges)), tuple(sorted(rule_edges)))
        return fsm.trim()

    def without_rules(self, rules: set[int]) -> "FSM":
        """Drop every rule edge whose rule is in `rules` (used for unproductive rules)."""
        if not rules:
            return self
        kept = tuple(e for e in self.rule_edges if e[1] not in rules)
        return FSM(self.num_states, self.start, self.finals, self.byte_edges, kept, self.eps_edges)

    def with_tail_calls_as_loops(self, rule: int) -> "FSM":
        """The same language with tail self-references turned into jumps back to `start`.

        An edge `s -rule-> d` into a final state d with no edges out is a tail call: after the
        nested match nothing else is read. Replacing it by `s -eps-> start` keeps the language
        (the nested match is a path from start to a final state, which may itself jump again)
        and turns right recursion such as `chars ::= [a-z] chars | "\""` into a loop, so the
        Earley chart stops nesting one item per byte.
        """
        fsm = self.without_epsilon() if self.eps_edges else self
        bytes_out, rules_out, _ = fsm.out_edges()
        tail = {(s, r, d) for s, r, d in fsm.rule_edges
                if r == rule and d in fsm.finals and not bytes_out[d] and not rules_out[d]}
        if not tail:
            return fsm
        kept = tuple(e for e in fsm.rule_edges if e not in tail)
        jumps = tuple(sorted({(s, fsm.start) for s, _, _ in tail}))
        return FSM(fsm.num_states, fsm.start, fsm.finals, fsm.byte_edges, kept, jumps).without_epsilon()

    def trim(self) -> "FSM":
        """Keep the states reachable from start that can reach a final state; renumber BFS order.

        When the start state itself is dead the result is a single non-final start state
        with no edges (the empty language).
        """
        bytes_out, rules_out, eps_out = self.out_edges()
        succ = [[d for _, _, d in bytes_out[s]] + [d for _, d in rules_out[s]] + eps_out[s] for s in range(self.num_states)]
        pred: list[list[int]] = [[] for _ in range(self.num_states)]
        for s in range(self.num_states):
            for d in succ[s]:
                pred[d].append(s)
        alive = set(self.finals)
        stack = list(self.finals)
        while stack:
            for p in pred[stack.pop()]:
                if p not in alive:
                    alive.add(p)
                    stack.append(p)
        if self.start not in alive:
            return FSM(1, 0, frozenset())
        # BFS numbering from start over live states gives a canonical order.
        order, index = [self.start], {self.start: 0}
        i = 0
        while i < len(order):
            for d in succ[order[i]]:
                if d in alive and d not in index:
                    index[d] = len(order)
                    order.append(d)
            i += 1
        keep = index.keys()
        byte_edges = tuple(sorted((index[s], lo, hi, index[d]) for s, lo, hi, d in self.byte_edges if s in keep and d in keep))
        rule_edges = tuple(sorted((index[s], r, index[d]) for s, r, d in self.rule_edges if s in keep and d in keep))
        eps_edges = tuple(sorted((index[s], index[d]) for s, d in self.eps_edges if s in keep and d in keep))
        finals = frozenset(index[s] for s in self.finals if s in keep)
        return FSM(len(order), 0, finals, byte_edges, rule_edges, eps_edges)

    def determinize(self, max_states: int = 4096) -> Optional["FSM"]:
        """Subset construction; None when the DFA would exceed `max_states` states."""
        fsm = self.without_epsilon()
        bytes_out, rules_out, _ = fsm.out_edges()
        start = frozenset([fsm.start])
        index = {start: 0}
        order = [start]
        byte_edges: list[ByteEdge] = []
        rule_edges: list[RuleEdge] = []
        # a single state whose byte edges do not overlap keeps its edges as they are (the long
        # literal chains of a large choice: no interval cutting for them)
        plain = [all(a[1] < b[0] for a, b in zip(sorted(out), sorted(out)[1:])) for out in bytes_out]
        i = 0
        while i < len(order):
            subset = order[i]
            if len(subset) == 1 and plain[next(iter(subset))]:
                cut = [(lo, hi, frozenset((d,))) for lo, hi, d in _merged_ranges(bytes_out[next(iter(subset))])]
            else:
                cut = _disjoint_intervals([e for s in subset for e in bytes_out[s]])
            for lo, hi, targets in cut:
                j = index.setdefault(targets, len(order))
                if j == len(order):
                    order.append(targets)
                byte_edges.append((i, lo, hi, j))
            by_rule: dict[int, set[int]] = {}
            for s in subset:
                for r, d in rules_out[s]:
                    by_rule.setdefault(r, set()).add(d)
            for r in sorted(by_rule):
                targets = frozenset(by_rule[r])
                j = index.setdefault(targets, len(order))
                if j == len(order):
                    order.append(targets)
                rule_edges.append((i, r, j))
            if len(order) > max_states:
                return None
            i += 1
        finals = frozenset(k for k, subset in enumerate(order) if subset & fsm.finals)
        return FSM(len(order), 0, finals, tuple(sorted(byte_edges)), tuple(sorted(rule_edges))).trim()

    def minimize(self) -> "FSM":
        """Hopcroft's partition refinement of a deterministic machine (then BFS-renumbered).

        Letters are the byte intervals between consecutive range boundaries of the machine,
        and the rule numbers. Blocks start as {finals, the rest}. A splitter (block A, letter
        c) cuts every block into the states whose c-edge enters A and the others. After a cut
        the smaller part becomes a new block and waits as a splitter for every letter; the
        larger part keeps the old block's number and whatever it was waiting for (so where the
        old block waited, both parts now do). A missing edge leads nowhere: the machine stays
        partial, which needs every first block to wait for every letter (Béal & Crochemore,
        2008). A splitter whose letter enters none of its block's states cuts nothing, so a
        block waits only for the letters that enter it: a cut costs the smaller part's edges.
        """
        if not self.is_deterministic():
            raise ValueError("minimize needs a deterministic FSM; call determinize() first")
        cuts = sorted({lo for _, lo, _, _ in self.byte_edges} | {hi + 1 for _, _, hi, _ in self.byte_edges})
        letter_of = {cut: k for k, cut in enumerate(cuts)}
        inverse: dict[int, dict[int, list[int]]] = {}  # letter -> dst -> sources
        for src, lo, hi, dst in self.byte_edges:
            for k in range(letter_of[lo], letter_of[hi + 1]):
                inverse.setdefault(k, {}).setdefault(dst, []).append(src)
        for src, rule, dst in self.rule_edges:
            inverse.setdefault(len(cuts) + rule, {}).setdefault(dst, []).append(src)
        entering: list[set[int]] = [set() for _ in range(self.num_states)]  # letters into each state
        for c, by_dst in inverse.items():
            for d in by_dst:
                entering[d].add(c)
        blocks = [b for b in (set(self.finals), set(range(self.num_states)) - set(self.finals)) if b]
        block = [0] * self.num_states
        waiting: list[set[int]] = []  # block -> the letters it waits for as a splitter
        stack: list[tuple[int, int]] = []
        for i, members in enumerate(blocks):
            for s in members:
                block[s] = i
            waiting.append(set().union(*(entering[s] for s in members)))
            stack.extend((i, c) for c in sorted(waiting[i]))
        while stack:
            a, c = stack.pop()
            if c not in waiting[a]:
                continue
            waiting[a].discard(c)
            into = inverse[c]
            touched: dict[int, list[int]] = {}
            for d in blocks[a]:
                for src in into.get(d, ()):
                    touched.setdefault(block[src], []).append(src)
            for y, sources in touched.items():
                if len(sources) == len(blocks[y]):
                    continue
                half = set(sources)
                rest = blocks[y] - half
                small, big = (half, rest) if len(half) <= len(rest) else (rest, half)
                blocks[y] = big
                z = len(blocks)
                blocks.append(small)
                for s in small:
                    block[s] = z
                waiting.append(set().union(*(entering[s] for s in small)))
                stack.extend((z, letter) for letter in waiting[z])
        bytes_out, _, _ = self.out_edges()
        byte_edges = set()
        for s in range(self.num_states):
            for lo, hi, b in _merged_ranges((lo, hi, block[d]) for lo, hi, d in bytes_out[s]):
                byte_edges.add((block[s], lo, hi, b))
        rule_edges = {(block[s], r, block[d]) for s, r, d in self.rule_edges}
        finals = frozenset(block[s] for s in self.finals)
        return FSM(len(blocks), block[self.start], finals, tuple(sorted(byte_edges)), tuple(sorted(rule_edges))).trim()

    def simplified(self, max_dfa_states: int = 4096) -> "FSM":
        """The minimal DFA when determinization stays under `max_dfa_states`, else the trimmed
        NFA. DFAs over MAX_MINIMIZE_STATES states (a long unrolled repetition, already minimal
        but for its ends) are kept as they are; the mask cache shares entries between their
        states anyway (xg2ref/mask/state_classes.py)."""
        dfa = self.determinize(max_dfa_states)
        if dfa is None:
            return self.without_epsilon()
        return dfa.minimize() if dfa.num_states <= MAX_MINIMIZE_STATES else dfa

    # ---- printing ---------------------------------------------------------------------

    def to_text(self, rule_names: Optional[list[str]] = None) -> str:
        """One line per state: `3*: [a-z] -> 4, <value> -> 5` (`*` marks a final state)."""
        bytes_out, rules_out, eps_out = self.out_edges()
        lines = [f"start {self.start}, {self.num_states} states, {self.num_edges} edges"]
        for s in range(self.num_states):
            parts = [f"{format_byte_range(lo, hi)} -> {d}" for lo, hi, d in bytes_out[s]]
            parts += [f"<{rule_names[r] if rule_names else r}> -> {d}" for r, d in rules_out[s]]
            parts += [f"eps -> {d}" for d in eps_out[s]]
            lines.append(f"{s}{'*' if s in self.finals else ''}: " + ", ".join(parts))
        return "\n".join(lines)


def format_byte_range(lo: int, hi: int) -> str:
    """`[a]`, `[a-z]`, `[\\x80-\\xbf]`: a byte range as a class."""

    def one(b: int) -> str:
        if 0x21 <= b < 0x7F and chr(b) not in "\\]-^[":
            return chr(b)
        return f"\\x{b:02x}"

    return f"[{one(lo)}]" if lo == hi else f"[{one(lo)}-{one(hi)}]"


def _disjoint_intervals(edges: list[tuple[int, int, int]]) -> list[tuple[int, int, frozenset[int]]]:
    """Cut overlapping (lo, hi, dst) edges into disjoint intervals with their target sets.

    Adjacent intervals with the same target set are merged.
    Example: [(0, 9, 1), (5, 20, 2)] -> [(0, 4, {1}), (5, 9, {1, 2}), (10, 20, {2})]
    """
    if not edges:
        return []
    cuts = sorted({lo for lo, _, _ in edges} | {hi + 1 for _, hi, _ in edges})
    out: list[tuple[int, int, frozenset[int]]] = []
    for a, b in zip(cuts, cuts[1:]):
        targets = frozenset(d for lo, hi, d in edges if lo <= a and b - 1 <= hi)
        if not targets:
            continue
        if out and out[-1][1] == a - 1 and out[-1][2] == targets:
            out[-1] = (out[-1][0], b - 1, targets)
        else:
            out.append((a, b - 1, targets))
    return out


def _merged_ranges(edges: Iterable[tuple[int, int, int]]) -> tuple[tuple[int, int, int], ...]:
    """Sort disjoint (lo, hi, target) ranges and merge neighbours with the same target."""
    out: list[tuple[int, int, int]] = []
    for lo, hi, t in sorted(edges):
        if out and out[-1][1] == lo - 1 and out[-1][2] == t:
            out[-1] = (out[-1][0], hi, t)
        else:
            out.append((lo, hi, t))
    return tuple(out)
