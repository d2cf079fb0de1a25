"""The oracle's reading of unordered rules (JSON Schema's `any_order`), as plain rules.

A rule `M[unordered]` reads its body with a memory: each reference in the body to a rule with
the option `member=j` is member j, no member may be read twice, and M ends only when every
member marked `required` that its body names has been read. The engine keeps that memory in its
Earley items (kernels/earley.py); the oracle rewrites M into plain rules that spell it out, one
expression per (set before, set after), and hands them to its CYK table like any grammar:

    P(x, S)          = {S: x}                                  x reads no member
    P(member j, S)   = {S + j: member j}  if j not in S,  {} otherwise
    P(a b, S)        = {U: x y  for (T, x) in P(a, S), (U, y) in P(b, T)}
    P(a | b, S)      = P(a, S) merged with P(b, S)
    P(b*, S)         = {T: L(S, T)}  with rules  L(S, T) ::= "" (S = T) | x L(U, T) for (U, x) in P(b, S)
    P(b{m,n}, S)     = P(b ... b b{0,n-m}, S),  b{0,n} = "" | b b{0,n-1}
    M                ::= the alternatives of P(body, {}) whose set holds the required members

The sets are all subsets of the members, so the rewrite is exponential in their number: it is
an oracle for small objects, written from the definition and sharing nothing with the engine.
"""

from __future__ import annotations

from ..grammar.ir import (EPSILON, CharClass, Choice, Expr, GrammarIR, Repeat, Rule, RuleRef, Sequence, referenced_rules,
                         walk)


def lower_unordered_rules(ir: GrammarIR) -> GrammarIR:
    """`ir` with every unordered rule rewritten into plain rules (module docstring)."""
    if not any(r.option("unordered") for r in ir.rules):
        return ir
    members = {r.name: (int(r.option("member")), bool(r.option("required")))
               for r in ir.rules if r.option("member") is not None}
    out: list[Rule] = []
    loops: list[Rule] = []
    for rule in ir.rules:
        if not rule.option("unordered"):
            out.append(rule)
            continue
        named = [m for m in referenced_rules(rule.body) if m in members]
        required = frozenset(members[m][0] for m in named if members[m][1])
        ends = _Paths(rule.name, members, loops).of(rule.body, frozenset())
        body = _choice([x for seen, x in ends.items() if required <= seen])
        options = tuple(o for o in rule.options if o[0] != "unordered")
        out.append(Rule(rule.name, body, rule.lookahead, options))
    return GrammarIR(tuple(out + loops), ir.root)


def _choice(alternatives: list) -> Expr:
    if not alternatives:
        return CharClass(())  # matches nothing
    return alternatives[0] if len(alternatives) == 1 else Choice(tuple(alternatives))


def _set_name(s: frozenset) -> str:
    return "_".join(str(j) for j in sorted(s)) or "none"


class _Paths:
    """P(expr, S) of the module docstring, for the body of one unordered rule."""

    def __init__(self, owner: str, members: dict, loops: list):
        self.owner, self.members, self.loops = owner, members, loops
        self.loop_names: dict = {}

    def reads_member(self, expr: Expr) -> bool:
        return any(isinstance(n, RuleRef) and n.name in self.members for n in walk(expr))

    def of(self, expr: Expr, seen: frozenset) -> dict:
        if not self.reads_member(expr):
            return {seen: expr}
        if isinstance(expr, RuleRef):
            j = self.members[expr.name][0]
            return {} if j in seen else {seen | {j}: expr}
        if isinstance(expr, Sequence):
            now = {seen: EPSILON}
            for item in expr.items:
                after: dict = {}
                for s, x in now.items():
                    for t, y in self.of(item, s).items():
                        after.setdefault(t, []).append(Sequence((x, y)))
                now = {t: _choice(xs) for t, xs in after.items()}
            return now
        if isinstance(expr, Choice):
            merged: dict = {}
            for alt in expr.alternatives:
                for t, x in self.of(alt, seen).items():
                    merged.setdefault(t, []).append(x)
            return {t: _choice(xs) for t, xs in merged.items()}
        if isinstance(expr, Repeat):
            if expr.min > 0:
                rest = Repeat(expr.body, 0, None if expr.max is None else expr.max - expr.min)
                return self.of(Sequence((expr.body,) * expr.min + (rest,)), seen)
            if expr.max is not None:
                if expr.max == 0:
                    return {seen: EPSILON}
                return self.of(Choice((EPSILON, Sequence((expr.body, Repeat(expr.body, 0, expr.max - 1))))), seen)
            return {t: RuleRef(self.loop(expr.body, seen, t)) for t in self.reachable(expr.body, seen)}
        raise ValueError(f"unordered rule {self.owner}: a member inside {type(expr).__name__} is not supported")

    def reachable(self, body: Expr, seen: frozenset) -> list:
        """The sets b* may end with, from `seen`."""
        found, todo = {seen}, [seen]
        while todo:
            for t in self.of(body, todo.pop()):
                if t not in found:
                    found.add(t)
                    todo.append(t)
        return sorted(found, key=lambda s: (len(s), sorted(s)))

    def loop(self, body: Expr, seen: frozenset, end: frozenset) -> str:
        """The rule L(seen, end) for body*: its name, built once."""
        key = (body, seen, end)
        name = self.loop_names.get(key)
        if name is None:
            name = self.loop_names[key] = f"{self.owner}@{len(self.loop_names)}_{_set_name(seen)}_to_{_set_name(end)}"
            alternatives = [EPSILON] if seen == end else []
            for t, x in self.of(body, seen).items():
                if end >= t:
                    alternatives.append(Sequence((x, RuleRef(self.loop(body, t, end)))))
            self.loops.append(Rule(name, _choice(alternatives)))
        return name
