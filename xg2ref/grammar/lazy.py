"""Lazy rules, `name[lazy] ::= body`: committed-shortest matching (xgrammar 0.2.8's rule option),
lowered to plain right-linear rules (XGrammar-2 §2.1 front ends; the automata of regular.py).

xgrammar's Earley parser drops every other state of a lazy rule's occurrence (the rule and the
position it started at) as soon as that occurrence completes. So an occurrence ends at the
first position where its body has matched, and the rule matches

    min(L) = { w in L : no proper prefix of w is in L }          (L: the body's language)

For `root ::= a "b"` with `a[lazy] ::= [a-z]*`, `a` matches only "" (it completes at once), so
the grammar takes "b" and not "ab"; `a[lazy] ::= [^c]* "c"` stops at the first "c".

Lowering (`lower_lazy_rules`): the body becomes an NFA over code-point ranges (the rules it
refers to built in place, `_RuleNFA`); subset construction makes it a DFA; every accepting
state loses its outgoing edges (after a complete match nothing more is read) and states that
can no longer accept are dropped; each remaining state q becomes one rule

    q ::= c1 q1 | c2 q2 | ...          (an edge into an accepting state is just its class)

and the lazy rule's body is the start state's. Its other options stay; `lazy` is removed.

The body must be a regular language of characters (`lazy_rule_problem`): it may refer to other
rules, recursively too when each recursive reference ends its rule (`b ::= "x" b | ""`), but
the lazy rule itself must not be recursive, nor reach a lazy rule, `TagDispatch` or `Token`.
xgrammar 0.2.8 takes fewer bodies (those its normalization flattens into a chain of strings
and classes: it refuses `"ab"*` and `"a"{2,3}`); xg2ref lowers them all.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Optional

from ..exceptions import EBNFError, GrammarLimitError
from .intrinsic import Intrinsic
from .ir import EPSILON, CharClass, Choice, Expr, GrammarIR, Repeat, Rule, RuleRef, Sequence, walk
from .charsets import merge_ranges
from .regular import _NFA, TooLarge, _determinize, _without_epsilon


def is_lazy(rule: Rule) -> bool:
    return bool(rule.option("lazy", False))


def _references(expr: Expr, tail: bool = True):
    """(rule name, whether the reference ends `expr`) for every rule reference in `expr`; a
    reference ends it when nothing can be read after it inside `expr`."""
    stack = [(expr, tail)]
    while stack:
        node, at_end = stack.pop()
        if isinstance(node, RuleRef):
            yield node.name, at_end
        elif isinstance(node, Sequence):
            stack.extend((item, at_end and k == len(node.items) - 1) for k, item in enumerate(node.items))
        elif isinstance(node, Choice):
            stack.extend((alt, at_end) for alt in node.alternatives)
        elif isinstance(node, Repeat):
            stack.append((node.body, at_end and node.max == 1))


def _reachable(rules: dict[str, Rule], name: str) -> set[str]:
    """The rules `name` reaches through one or more references."""
    seen: set[str] = set()
    stack = [name]
    while stack:
        for target, _ in _references(rules[stack.pop()].body):
            if target not in seen and target in rules:
                seen.add(target)
                stack.append(target)
    return seen


def lazy_rule_problem(ir: GrammarIR, name: str) -> Optional[str]:
    """Why the lazy rule `name` cannot be lowered, or None when it can: its body may refer to
    other rules, recursively too as long as every recursive reference ends its rule's body
    (right recursion: `b ::= "x" b | ""` is `"x"*`), but the lazy rule must not be recursive,
    reach a lazy rule, TagDispatch or a token set."""
    rules = {r.name: r for r in ir.rules}
    reach = {name: _reachable(rules, name)}
    if name in reach[name]:
        return f"lazy rule {name!r} is recursive; its body must be a regular language"
    for member in sorted(reach[name]) + [name]:
        rule = rules[member]
        if member != name and is_lazy(rule):
            return f"lazy rule {name!r} refers to the lazy rule {member!r}; a lazy body cannot hold another"
        for node in walk(rule.body):
            if isinstance(node, Intrinsic):
                what = node.title
                where = "" if member == name else f" (through rule {member!r})"
                return f"lazy rule {name!r} reaches {what}{where}; its body must be characters"
        for target, at_end in _references(rule.body):
            if target not in reach:
                reach[target] = _reachable(rules, target)
            if not at_end and member in reach[target]:
                return (f"lazy rule {name!r} reaches rule {member!r}, which refers to {target!r} recursively "
                        "before its end; a lazy body must be a regular language")
    return None


class _RuleNFA(_NFA):
    """Thompson's construction over rules (the code-point NFA of regular.py, thompson.py's walk)
    with references built in place: a reference to a rule outside the current group of
    mutually recursive rules builds a fresh copy of that group (entry per rule, one shared
    exit); a reference inside the group ends its body (`lazy_rule_problem` has checked), so it
    is an epsilon edge to that rule's entry."""

    def __init__(self, rules: dict[str, Rule]):
        super().__init__()
        self.rules = rules
        self.reach: dict[str, set[str]] = {}
        self.entries: dict[str, int] = {}  # the group being built: rule -> its entry state

    def group(self, name: str) -> set[str]:
        for n in [name] + sorted(self.reach.setdefault(name, _reachable(self.rules, name))):
            self.reach.setdefault(n, _reachable(self.rules, n))
        return {m for m in self.reach[name] if name in self.reach[m]}

    def call(self, name: str, src: int) -> int:
        """The fragment of rule `name`'s body from `src`, its group's entries in `entries`."""
        members = self.group(name)
        outer = self.entries
        try:
            if not members:  # not recursive: the body in place
                self.entries = {}
                return self.fragment(self.rules[name].body, src)
            self.entries = entries = {m: self.new_state() for m in sorted(members)}
            exit_state = self.new_state()
            for m, entry in entries.items():
                self.eps(self.fragment(self.rules[m].body, entry), exit_state)
            self.eps(src, entries[name])
            return exit_state
        finally:
            self.entries = outer

    def rule_ref(self, expr: RuleRef, src: int) -> int:
        if expr.name in self.entries:
            self.eps(src, self.entries[expr.name])
            return self.new_state()  # the match goes on from the group's exit
        return self.call(expr.name, src)


def committed_automaton(ir: GrammarIR, name: str):
    """The DFA of min(L) for the body L of rule `name` of `ir`, as (rows, accepting): rows[q]
    lists (interval, dst) pairs, state 0 is the start, every state can still reach an
    accepting one (no rows when min(L) is empty). Raises TooLarge past regular.py's limits."""
    builder = _RuleNFA({r.name: r for r in ir.rules})
    start = builder.new_state()
    final = builder.fragment(builder.rules[name].body, start)
    edges, finals = _without_epsilon(builder, start, final)
    dfa, accepting = _determinize(edges, set(finals))
    rows = [[] if q in accepting else row for q, row in enumerate(dfa)]  # commit on completion
    alive = set(accepting)
    changed = True
    while changed:
        changed = False
        for q, row in enumerate(rows):
            if q not in alive and any(d in alive for _, d in row):
                alive.add(q)
                changed = True
    if 0 not in alive:
        return [], set()
    number = {q: k for k, q in enumerate(sorted(alive))}
    out = [[(interval, number[d]) for interval, d in rows[q] if d in alive] for q in sorted(alive)]
    return _minimized(out, {number[q] for q in accepting if q in alive})


def _runs(row, block) -> tuple:
    """`row` as sorted, merged (low, high, block of the target) runs."""
    runs: list[list[int]] = []
    for (lo, hi), d in sorted(row):
        if runs and runs[-1][1] + 1 == lo and runs[-1][2] == block[d]:
            runs[-1][1] = hi
        else:
            runs.append([lo, hi, block[d]])
    return tuple(map(tuple, runs))


def _minimized(rows, accepting):
    """The minimal DFA (Moore's partition refinement: split blocks of states until states in
    one block go, interval by interval, to the same blocks); the start stays state 0."""
    block = [int(q in accepting) for q in range(len(rows))]
    while True:
        signatures = [(block[q], _runs(rows[q], block)) for q in range(len(rows))]
        index: dict = {}
        refined = [index.setdefault(sig, len(index)) for sig in signatures]
        if len(index) == len(set(block)):
            break
        block = refined
    order = {block[0]: 0}
    for q in range(len(rows)):
        order.setdefault(block[q], len(order))
    out: list = [None] * len(order)
    for q in range(len(rows)):
        if out[order[block[q]]] is None:
            out[order[block[q]]] = [((lo, hi), order[b]) for lo, hi, b in _runs(rows[q], block)]
    return out, {order[block[q]] for q in accepting}


def _fresh(base: str, taken: set[str]) -> str:
    k = 0
    while f"{base}_{k}" in taken:
        k += 1
    taken.add(f"{base}_{k}")
    return f"{base}_{k}"


def _state_rules(name: str, rows, accepting, taken: set[str]) -> tuple[Expr, list[Rule]]:
    """The start state's expression and one rule per other state that is read on to."""
    names: dict[int, str] = {}

    def ref(q: int) -> Optional[str]:  # None: an accepting state, where the match ends
        if q in accepting:
            return None
        if q not in names:
            names[q] = _fresh(f"{name}_lazy", taken)
        return names[q]

    def body(q: int) -> Expr:
        if q in accepting:
            return EPSILON
        by_dst: dict[int, list] = defaultdict(list)
        for interval, d in rows[q]:
            by_dst[d].append(interval)
        alts: list[Expr] = []
        for d, intervals in sorted(by_dst.items()):
            char = CharClass(tuple(merge_ranges(intervals)))
            target = ref(d)
            alts.append(char if target is None else Sequence((char, RuleRef(target))))
        return alts[0] if len(alts) == 1 else Choice(tuple(alts)) if alts else CharClass(())

    start = body(0)
    rules, done = [], set()
    while len(done) < len(names):
        for q, rule_name in list(names.items()):
            if q not in done:
                done.add(q)
                rules.append(Rule(rule_name, body(q)))
    return start, rules


def lower_lazy_rules(ir: GrammarIR) -> GrammarIR:
    """`ir` with every lazy rule's body replaced by right-linear rules for min(L) (see the
    module docstring); `ir` itself when it has no lazy rule. Raises EBNFError for a body that
    is not regular and GrammarLimitError past the automaton size limits of regular.py."""
    if not any(is_lazy(r) for r in ir.rules):
        return ir
    taken = {r.name for r in ir.rules}
    rules: list[Rule] = []
    for rule in ir.rules:
        if not is_lazy(rule):
            rules.append(rule)
            continue
        problem = lazy_rule_problem(ir, rule.name)
        if problem:
            raise EBNFError(problem)
        try:
            rows, accepting = committed_automaton(ir, rule.name)
        except TooLarge as err:
            raise GrammarLimitError(f"lazy rule {rule.name!r}: {err}") from None
        options = tuple((k, v) for k, v in rule.options if k != "lazy")
        if not rows:
            rules.append(Rule(rule.name, CharClass(()), rule.lookahead, options))
            continue
        start, extra = _state_rules(rule.name, rows, accepting, taken)
        rules.append(Rule(rule.name, start, rule.lookahead, options))
        rules.extend(extra)
    return GrammarIR(tuple(rules), ir.root)
