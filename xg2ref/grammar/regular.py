"""Regular languages intersected and under a length bound, as right-linear rules (for JSON
Schema strings with a `pattern` and a `format`, or either with `minLength`/`maxLength`).

The regex's IR (no rule references) becomes an NFA over code-point ranges (Thompson's
construction, xg2ref/grammar/thompson.py; bounded repeats unrolled). Its length range [a, b] is
read off the NFA (shortest path; longest path, or unbounded when a cycle lies on an accepting
path). When [a, b] already lies inside the bound the regex is returned as it is; otherwise the
NFA is multiplied by a counter:

    (q, k) -c-> (q', k + 1)     for an edge q -c-> q', k + 1 <= max   (k saturates at min when
                                                                         there is no max)
    (q, k) accepting            when q is and min <= k

and each product state becomes one rule `s ::= c1 t1 | c2 t2 | ... | ""` (the empty
alternative when accepting). Two regexes are intersected first, by the same pairing of states
(an edge for every overlap of two edges' ranges). `MAX_PRODUCT_STATES` bounds both products.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Optional

from .charsets import merge_ranges
from .ir import EPSILON, ByteString, CharClass, Choice, Expr, Repeat, RuleRef, Sequence
from .thompson import Thompson

MAX_NFA_STATES = 20_000
MAX_PRODUCT_STATES = 4_000
# a class of more ranges than this is an edge of its own in `bounded_length`'s rules (and a rule
# of its own in the JSON Schema front end's encoding): automata over Unicode classes, such as
# idn-hostname's, then share a few class rules
LARGE_CLASS_RANGES = 8


class TooLarge(Exception):
    """The automaton would pass its size limit."""


class _NFA(Thompson):
    """An NFA over code-point ranges by Thompson's construction (thompson.py): a letter is a
    tuple of ranges, a class one edge labelled with all of them, a literal one edge per
    character; the loop of x{m,} is its exit. Rule references and intrinsics are not regular."""

    fresh_loop_ends = False

    def __init__(self):
        self.edges: list[list[tuple[tuple, int]]] = []  # state -> [(ranges, dst)]
        self.eps_out: list[list[int]] = []  # state -> [dst of each ε-edge]

    def new_state(self) -> int:
        if len(self.edges) >= MAX_NFA_STATES:
            raise TooLarge(f"more than {MAX_NFA_STATES} automaton states")
        self.edges.append([])
        self.eps_out.append([])
        return len(self.edges) - 1

    def eps(self, src: int, dst: int) -> None:
        self.eps_out[src].append(dst)

    def edge(self, src: int, label: tuple, dst: int) -> None:
        self.edges[src].append((label, dst))

    def letters(self, expr: ByteString) -> list[tuple]:
        return [((ord(c), ord(c)),) for c in expr.value.decode("utf-8", "surrogatepass")]

    def class_paths(self, expr: CharClass) -> list[tuple]:
        ranges = tuple(expr.codepoint_ranges())
        return [(ranges,)] if ranges else []

    def unsupported(self, expr) -> Exception:
        return TooLarge(f"{type(expr).__name__} in a regular expression")

    def closure(self, q: int) -> set:
        seen, stack = {q}, [q]
        while stack:
            for d in self.eps_out[stack.pop()]:
                if d not in seen:
                    seen.add(d)
                    stack.append(d)
        return seen


def _without_epsilon(nfa: _NFA, start: int, final: int):
    """(edges per state, finals) of the epsilon-free NFA, states renumbered from 0 = start."""
    order, index = [start], {start: 0}
    edges: list[list] = []
    finals = set()
    k = 0
    while k < len(order):
        q = order[k]
        out = []
        for c in nfa.closure(q):
            if c == final:
                finals.add(k)
            for ranges, d in nfa.edges[c]:
                if d not in index:
                    index[d] = len(order)
                    order.append(d)
                out.append((ranges, index[d]))
        edges.append(out)
        k += 1
    return edges, finals


def _length_range(edges, finals) -> tuple[Optional[int], Optional[int], bool]:
    """(shortest, longest accepted length or None when unbounded, empty language?)."""
    n = len(edges)
    rev = defaultdict(list)
    for q, out in enumerate(edges):
        for _, d in out:
            rev[d].append(q)
    alive, stack = set(finals), list(finals)
    while stack:
        for p in rev[stack.pop()]:
            if p not in alive:
                alive.add(p)
                stack.append(p)
    if 0 not in alive:
        return None, None, True
    dist, frontier, shortest = {0: 0}, [0], None
    while frontier and shortest is None:
        nxt = []
        for q in frontier:
            if q in finals:
                shortest = dist[q]
                break
            for _, d in edges[q]:
                if d not in dist:
                    dist[d] = dist[q] + 1
                    nxt.append(d)
        frontier = nxt
    # longest: a cycle among live states reachable from 0 makes it unbounded
    state = [0] * n  # 0 new, 1 on stack, 2 done
    longest: dict[int, int] = {}

    def visit(q: int) -> Optional[int]:
        stack = [(q, iter(edges[q]))]
        state[q] = 1
        while stack:
            node, it = stack[-1]
            advanced = False
            for _, d in it:
                if d not in alive:
                    continue
                if state[d] == 1:
                    return None
                if state[d] == 0:
                    state[d] = 1
                    stack.append((d, iter(edges[d])))
                    advanced = True
                    break
            if not advanced:
                stack.pop()
                state[node] = 2
                best = 0 if node in finals else -1
                for _, d in edges[node]:
                    if d in alive and longest.get(d, -1) >= 0:
                        best = max(best, longest[d] + 1)
                longest[node] = best
        return longest[q]

    return shortest, visit(0), False


def _epsilon_free(expr: Expr):
    nfa = _NFA()
    start = nfa.new_state()
    final = nfa.fragment(expr, start)
    return _without_epsilon(nfa, start, final)


def _product(a, b, limit: int = MAX_PRODUCT_STATES):
    """The intersection of two epsilon-free NFAs (pairs of states, ranges intersected), of at
    most `limit` states."""
    (ea, fa), (eb, fb) = a, b
    index, order, edges, finals = {(0, 0): 0}, [(0, 0)], [], set()
    k = 0
    while k < len(order):
        p, q = order[k]
        if p in fa and q in fb:
            finals.add(k)
        out = []
        for ra, da in ea[p]:
            for rb, db in eb[q]:
                common = [(max(x, y), min(u, v)) for x, u in ra for y, v in rb if max(x, y) <= min(u, v)]
                if common:
                    if (da, db) not in index:
                        if len(order) >= limit:
                            raise TooLarge(f"more than {limit} states for the intersection")
                        index[(da, db)] = len(order)
                        order.append((da, db))
                    out.append((tuple(common), index[(da, db)]))
        edges.append(out)
        k += 1
    return edges, finals


def divisible_numerals(k: int, divisible: bool = True):
    """The automaton `(edges, finals)` of the integer numerals (an optional `-`, then `0` or
    digits without a leading zero) whose value is a multiple of k >= 1: one state per
    remainder, reading digit d from remainder r goes to (10 r + d) mod k (the numeral's value
    so far, mod k), and remainder 0 accepts (with `divisible=False`, every other remainder:
    the numerals that are no multiple of k). States: 0 start, 1 after `-`, 2 after a lone `0`,
    3 + r remainder r. Raises TooLarge when k passes MAX_PRODUCT_STATES."""
    if k > MAX_PRODUCT_STATES:
        raise TooLarge(f"a remainder automaton of {k} states (more than {MAX_PRODUCT_STATES})")
    edges: list[list] = [[], [], []] + [[] for _ in range(k)]
    for start in (0, 1):
        edges[start].append((((ord("0"), ord("0")),), 2))
        for d in range(1, 10):
            edges[start].append((((ord("0") + d, ord("0") + d),), 3 + d % k))
    edges[0].append((((ord("-"), ord("-")),), 1))
    for r in range(k):
        for d in range(10):
            edges[3 + r].append((((ord("0") + d, ord("0") + d),), 3 + (10 * r + d) % k))
    return edges, ({2, 3} if divisible else {3 + r for r in range(1, k)})


def language_is_empty(item) -> bool:
    """Whether an automaton `(edges, finals)` (or a regex IR) accepts no string."""
    edges, finals = automaton(item)
    return _length_range(edges, finals)[2]


def decimal_multiple_numerals(p: int, s: int):
    """The automaton `(edges, finals)` of the numerals without exponent (`-`? integer part, then
    `.` and digits or not) whose value is a multiple of p / 10^s (p >= 1, s >= 1). The value
    times 10^s must be an integer divisible by p: the fraction has at most s digits that are not
    trailing zeros, and the digits read so far as one integer keep their remainder mod p:

        integer part, remainder r           accepts when r * 10^s     = 0 (mod p)
        after `.` and j <= s digits, r      accepts when r * 10^(s-j) = 0 (mod p)   (j >= 1)
        after s fraction digits             reads only `0` more (the value does not change)

    States: 0 start, 1 after `-`, 2 + r integer remainder r (a lone `0` is 2 with no more
    digits: state 2 + p), then p dot states and p * s fraction states. Raises TooLarge past
    MAX_PRODUCT_STATES."""
    total = 3 + p + p + p * s
    if total > MAX_PRODUCT_STATES:
        raise TooLarge(f"a remainder automaton of {total} states (more than {MAX_PRODUCT_STATES})")
    zero, dot, frac = 2 + p, 3 + p, 3 + 2 * p  # zero: a lone `0`; dot + r; frac + r * s + (j - 1)
    edges: list[list] = [[] for _ in range(total)]

    def digit(d: int) -> tuple:
        return ((ord("0") + d, ord("0") + d),)
    edges[0].append((((ord("-"), ord("-")),), 1))
    for start in (0, 1):
        edges[start].append((digit(0), zero))
        for d in range(1, 10):
            edges[start].append((digit(d), 2 + d % p))
    for r in range(p):
        for d in range(10):
            edges[2 + r].append((digit(d), 2 + (10 * r + d) % p))
        edges[2 + r].append((((ord("."), ord(".")),), dot + r))
        for d in range(10):
            edges[dot + r].append((digit(d), frac + ((10 * r + d) % p) * s))
        for j in range(1, s + 1):
            state = frac + r * s + j - 1
            if j < s:
                for d in range(10):
                    edges[state].append((digit(d), frac + ((10 * r + d) % p) * s + j))
            else:
                edges[state].append((digit(0), state))
    edges[zero].append((((ord("."), ord(".")),), dot))
    finals = {2 + r for r in range(p) if r * 10 ** s % p == 0} | {zero}
    finals |= {frac + r * s + j - 1 for r in range(p) for j in range(1, s + 1) if r * 10 ** (s - j) % p == 0}
    return edges, finals


def bounded_length(exprs, lo: int, hi: Optional[int], encode: Callable[[list], Expr],
                   new_rule: Callable[[str], str], set_rule: Callable[[str, Expr], None],
                   limit: int = MAX_PRODUCT_STATES) -> Expr:
    """The strings every regex IR of `exprs` (one expression or a list; an item may also be an
    automaton `(edges, finals)` such as `divisible_numerals(k)`) matches, with
    lo <= length <= hi (code points), each character written by `encode(ranges)`;
    `new_rule(hint) -> name` and `set_rule(name, body)` make the rules. Raises TooLarge past
    the size limits (`limit` states for each product)."""
    exprs = exprs if isinstance(exprs, list) else [exprs]
    edges, finals = intersection_automaton(exprs, limit)
    shortest, longest, empty = _length_range(edges, finals)
    if empty or (hi is not None and shortest > hi) or (longest is not None and longest < lo):
        return CharClass(())
    if (len(exprs) == 1 and not isinstance(exprs[0], tuple) and shortest >= lo
            and (hi is None or (longest is not None and longest <= hi))):
        return _encode_tree(exprs[0], encode)
    if hi is None and lo <= shortest:
        lo, cap = 0, 0  # the length bound says nothing: the automaton alone
    else:
        cap = hi if hi is not None else lo
    names: dict[tuple, str] = {}
    pending = [(0, 0)]
    seen = {(0, 0)}
    while pending:  # reachable product states
        q, k = pending.pop()
        for _, d in edges[q]:
            nk = min(k + 1, cap) if hi is None else k + 1
            if hi is not None and nk > hi:
                continue
            if (d, nk) not in seen:
                seen.add((d, nk))
                pending.append((d, nk))
                if len(seen) > limit:
                    raise TooLarge(f"more than {limit} states for the length bound")
    for state in sorted(seen):
        names[state] = new_rule("len")
    for (q, k) in sorted(seen):
        by_dst: dict[tuple, list] = defaultdict(list)
        large = []  # (a large class keeps its own edge: one shared rule, not one copy per union)
        for ranges, d in edges[q]:
            nk = min(k + 1, cap) if hi is None else k + 1
            if (d, nk) in seen:
                if len(ranges) > LARGE_CLASS_RANGES:
                    large.append((ranges, (d, nk)))
                else:
                    by_dst[(d, nk)].extend(ranges)
        alts = [Sequence((encode(merge_ranges(r)), RuleRef(names[t]))) for r, t in [(r, t) for t, r in by_dst.items()] + large]
        if q in finals and k >= lo:
            alts.append(EPSILON)
        body = alts[0] if len(alts) == 1 else Choice(tuple(alts)) if alts else CharClass(())
        set_rule(names[(q, k)], body)
    return RuleRef(names[(0, 0)])


def _split(ranges_list) -> list[tuple[int, int]]:
    """The coarsest intervals of [0, 0x10FFFF] that every range of `ranges_list` is a union of."""
    cuts = {0, 0x110000}
    for ranges in ranges_list:
        for lo, hi in ranges:
            cuts.update((lo, hi + 1))
    points = sorted(cuts)
    return [(a, b - 1) for a, b in zip(points, points[1:])]


def _determinize(edges, finals):
    """A complete DFA of an epsilon-free NFA (subset construction over code-point intervals):
    (transitions per state as [(interval, dst)], accepting states); state 0 is the start, and a
    dead state catches every interval no NFA edge reads."""
    index, order, out, accepting = {frozenset((0,)): 0}, [frozenset((0,))], [], set()
    k = 0
    while k < len(order):
        subset = order[k]
        if subset & finals:
            accepting.add(k)
        moves = [(ranges, d) for q in subset for ranges, d in edges[q]]
        row = []
        for lo, hi in _split([r for r, _ in moves]):
            target = frozenset(d for ranges, d in moves if any(a <= lo and hi <= b for a, b in ranges))
            if target not in index:
                if len(order) >= MAX_PRODUCT_STATES:
                    raise TooLarge(f"more than {MAX_PRODUCT_STATES} states for the complement")
                index[target] = len(order)
                order.append(target)
            row.append(((lo, hi), index[target]))
        out.append(row)
        k += 1
    return out, accepting


def complement_automaton(exprs):
    """The automaton `(edges, finals)` of the strings (of code points) that no item of `exprs`
    (regex IR or automata) matches, trimmed to the states from which it accepts something.

    The union of the NFAs (a fresh start that reads what each of their starts reads) is
    determinized; the complete DFA's non-accepting states accept the complement."""
    edges, finals = [[]], set()
    for part_edges, part_finals in map(automaton, exprs):
        base = len(edges)
        edges.extend([(ranges, base + d) for ranges, d in row] for row in part_edges)
        edges[0].extend(edges[base])  # the fresh start reads what the part's start reads
        finals.update(base + q for q in part_finals)
        if 0 in part_finals:
            finals.add(0)
    dfa, accepting = _determinize(edges, finals)
    return trimmed(dfa, set(range(len(dfa))) - accepting)  # the complement accepts where the DFA does not


def trimmed(dfa, accepting):
    """The automaton `(edges, finals)` of a DFA of `_determinize` with `accepting` states, cut to
    the states from which it accepts something (`([[]], set())` when the start is not one)."""
    alive = set(accepting)
    changed = True
    while changed:
        changed = False
        for q, row in enumerate(dfa):
            if q not in alive and any(d in alive for _, d in row):
                alive.add(q)
                changed = True
    if 0 not in alive:
        return [[]], set()
    number = {q: k for k, q in enumerate(sorted(alive))}
    out = [[((interval,), number[d]) for interval, d in dfa[q] if d in alive] for q in sorted(alive)]
    return out, {number[q] for q in accepting}


def automaton(item):
    """The automaton `(edges, finals)` of `item` (regex IR, or already an automaton)."""
    return item if isinstance(item, tuple) else _epsilon_free(item)


def matches(item, text: str) -> bool:
    """Whether `text` is in the language of `item` (regex IR or an automaton `(edges, finals)`):
    the NFA run over its code points, a set of states at a time."""
    edges, finals = automaton(item)
    states = {0}
    for c in map(ord, text):
        states = {d for q in states for ranges, d in edges[q] if any(lo <= c <= hi for lo, hi in ranges)}
        if not states:
            return False
    return bool(states & set(finals))


def intersection_automaton(items, limit: int = MAX_PRODUCT_STATES):
    """The automaton `(edges, finals)` of the strings every item (regex IR or automaton) matches,
    each product of at most `limit` states."""
    automata = [automaton(e) for e in items]
    result = automata[0]
    for other in automata[1:]:
        result = _product(result, other, limit)
    return result


def complement_of(exprs, encode: Callable[[list], Expr], new_rule: Callable[[str], str],
                  set_rule: Callable[[str, Expr], None]) -> Expr:
    """The strings (of code points) that no item of `exprs` (regex IR or automata) matches, as
    right-linear rules (`complement_automaton`), each character written by `encode(ranges)`.
    Raises TooLarge past the size limits."""
    edges, finals = complement_automaton(exprs)
    if not finals:
        return CharClass(())
    names = [new_rule("not") for _ in edges]
    for q, row in enumerate(edges):
        by_dst: dict[int, list] = defaultdict(list)
        for ranges, d in row:
            by_dst[d].extend(ranges)
        alts = [Sequence((encode(merge_ranges(r)), RuleRef(names[d]))) for d, r in sorted(by_dst.items())]
        if q in finals:
            alts.append(EPSILON)
        set_rule(names[q], alts[0] if len(alts) == 1 else Choice(tuple(alts)) if alts else CharClass(()))
    return RuleRef(names[0])


MAX_SPREAD_ALTERNATIVES = 64


def _fixed_length(expr: Expr) -> Optional[int]:
    """The number of code points every string of `expr` has, or None when it varies."""
    if isinstance(expr, ByteString):
        return len(expr.value.decode("utf-8", "surrogatepass"))
    if isinstance(expr, CharClass):
        return 1
    if isinstance(expr, Sequence):
        lengths = [_fixed_length(e) for e in expr.items]
        return None if None in lengths else sum(lengths)
    if isinstance(expr, Choice):
        lengths = {_fixed_length(e) for e in expr.alternatives}
        return lengths.pop() if len(lengths) == 1 and None not in lengths else None
    if isinstance(expr, Repeat) and expr.max == expr.min:
        inner = _fixed_length(expr.body)
        return None if inner is None else inner * expr.min
    return None


def _alternatives(expr: Expr) -> Optional[list[list[Expr]]]:
    """`expr` as a choice of sequences of items, choices of fixed-length items spread out
    (`a(bc|d)e*` is `abce* | ade*`); None past MAX_SPREAD_ALTERNATIVES."""
    if isinstance(expr, Choice):
        out: list[list[Expr]] = []
        for alt in expr.alternatives:
            part = _alternatives(alt)
            if part is None or len(out) + len(part) > MAX_SPREAD_ALTERNATIVES:
                return None
            out.extend(part)
        return out
    items = list(expr.items) if isinstance(expr, Sequence) else [expr]
    rows: list[list[Expr]] = [[]]
    for item in items:
        if isinstance(item, (Choice, Sequence)) and _fixed_length(item) is None:
            spread = _alternatives(item)
            if spread is None or len(rows) * len(spread) > MAX_SPREAD_ALTERNATIVES:
                return None
            rows = [row + tail for row in rows for tail in spread]
        else:
            rows = [row + [item] for row in rows]
    return rows


def bounded_by_counting(expr: Expr, lo: int, hi: Optional[int]) -> Optional[Expr]:
    """`expr` restricted to lengths lo..hi without an automaton, when the length is easy to
    count: a choice of sequences in which every item has a fixed length but at most one, an
    unbounded repetition of a single character (`[0-9a-z]*`, `x+`). That repetition takes the
    bound (minus the fixed part): `^data:(png|jpeg);[a-z]*$` under maxLength 100 is
    `data:png;[a-z]{0,91} | data:jpeg;[a-z]{0,90}`. None when `expr` has another shape."""
    rows = _alternatives(expr)
    if rows is None:
        return None
    out = []
    for row in rows:
        free = [i for i, item in enumerate(row) if _fixed_length(item) is None]
        fixed = sum(_fixed_length(item) or 0 for item in row)
        if not free:
            if lo <= fixed and (hi is None or fixed <= hi):
                out.append(Sequence(tuple(row)) if len(row) != 1 else row[0])
            continue
        if len(free) > 1:
            return None
        rep = row[free[0]]
        if not (isinstance(rep, Repeat) and rep.max is None and _fixed_length(rep.body) == 1):
            return None
        least = max(rep.min, lo - fixed)
        most = None if hi is None else hi - fixed
        if most is not None and most < least:
            continue
        row = row[:free[0]] + [Repeat(rep.body, least, most)] + row[free[0] + 1:]
        out.append(Sequence(tuple(row)) if len(row) != 1 else row[0])
    if not out:
        return CharClass(())
    return out[0] if len(out) == 1 else Choice(tuple(out))


def _encode_tree(expr: Expr, encode) -> Expr:
    """`expr` with every character class and literal character written by `encode`."""
    if isinstance(expr, CharClass):
        return encode(expr.codepoint_ranges())
    if isinstance(expr, ByteString):
        chars = [encode([(ord(c), ord(c))]) for c in expr.value.decode("utf-8", "surrogatepass")]
        return EPSILON if not chars else chars[0] if len(chars) == 1 else Sequence(tuple(chars))
    if isinstance(expr, Sequence):
        return Sequence(tuple(_encode_tree(e, encode) for e in expr.items))
    if isinstance(expr, Choice):
        return Choice(tuple(_encode_tree(e, encode) for e in expr.alternatives))
    if isinstance(expr, Repeat):
        return Repeat(_encode_tree(expr.body, encode), expr.min, expr.max)
    raise TooLarge(f"{type(expr).__name__} in a regular expression")
