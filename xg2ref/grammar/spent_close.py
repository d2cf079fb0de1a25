"""A stop/suffix rule whose character budget is spent ends without its marker (xgrammar 0.2.8's
"forced close" of a budgeted suffix/stop rule; the budgets of specs/05, "Budgets"), lowered to
one more alternative of the rule, whose end the Earley kernel gates on the budget.

A Lark rule `r[max_chars=C, stop=">"]: body` (or `suffix=`) becomes the lazy rule
`r ::= body ">"` with helper rules for its body and its marker (frontends/lark/lazy.py). Once
the occurrence of r that began at position j has read C code points, xgrammar ends it where it
stands, without the marker, if what it has read is a word of the body:

    CLOSE   an occurrence [j, k] of r is alive (its lazy match has not ended before k), its
            character deadline is spent at k (set_chars[k] >= deadline), and d[j:k] is in
            L(body)  |-  r ends at k, as if its marker had been read

(then, as everywhere, items past their budget read nothing more when some item is alive:
CHAR-ENFORCE, kernels/earley.py). An occurrence is alive at k when d[j:k] reaches a state of
the committed automaton of r (grammar/lazy.py: min(L(body marker)), every state of which can
still accept). So the words r may end with are those of

    L_close = L(body)  ∩  prefixes of min(L(body marker))

Lowering (`with_spent_closes`): L_close is built as a DFA (the product of the two automata,
determinized and trimmed) and written as right-linear rules, the first of which, `r_spent_N`,
becomes one more alternative of r's body and carries the rule option `spent_close`. The FSM
builder gives that rule the character budget SPENT_CLOSE (SPENT_CLOSE_NULLABLE when L_close
holds the empty word), which the kernel reads as: predicted like a rule without a budget (the
items inherit r's deadline), never nullable, and

    [j, k, r_spent -> f] final  may COMPLETE only if  its char deadline <= set_chars[k]

(and, when L_close holds the empty word, PREDICT passes over it only under the same test). The
alternative is added after the lazy lowering and only for the Earley engine (`normalize`): the
oracle, which knows no budgets, never sees it. Rules whose body is no regular language keep
their marker: xgrammar requires the body helper to be one automaton too.
"""

from __future__ import annotations

from collections import defaultdict

from .charsets import merge_ranges
from .ir import EPSILON, CharClass, Choice, Expr, GrammarIR, Rule, RuleRef, Sequence
from .lazy import _RuleNFA, _fresh, committed_automaton, is_lazy, lazy_rule_problem
from .regular import TooLarge, _determinize, _product, _without_epsilon, trimmed

OPTION = "spent_close"
SPENT_CLOSE = -2  # rule_char_budget of the gated rule (kernels/earley.py)
SPENT_CLOSE_NULLABLE = -3  # ... when its language holds the empty word


def closable(rule: Rule) -> bool:
    """Whether `rule` is a lazy stop/suffix rule with a character budget and a body helper."""
    return (is_lazy(rule) and rule.option("max_chars") is not None
            and rule.option("capture_hidden_body_rule") is not None)


def close_automaton(ir: GrammarIR, name: str):
    """The trimmed DFA of L_close (module docstring) of rule `name` of `ir` (before the lazy
    lowering), as (edges, finals) with edges[q] = [(ranges, dst)]; None when its body helper is
    no regular language. Raises TooLarge past regular.py's limits."""
    rule = {r.name: r for r in ir.rules}[name]
    body = rule.option("capture_hidden_body_rule")
    if body not in {r.name for r in ir.rules} or lazy_rule_problem(ir, body) is not None:
        return None
    rows, _ = committed_automaton(ir, name)
    alive = ([[((interval,), d) for interval, d in row] for row in rows], set(range(len(rows))))
    builder = _RuleNFA({r.name: r for r in ir.rules})
    start = builder.new_state()
    words = _without_epsilon(builder, start, builder.fragment(builder.rules[body].body, start))
    edges, finals = _product(alive, words) if rows else ([[]], set())
    return trimmed(*_determinize(edges, finals))


def _rules(name: str, edges, finals, taken: set) -> list[Rule]:
    """Right-linear rules for the automaton, the first for its start state (option OPTION)."""
    names = [_fresh(f"{name}_spent", taken) for _ in edges]
    out = []
    for q, row in enumerate(edges):
        by_dst: dict[int, list] = defaultdict(list)
        for ranges, d in row:
            by_dst[d].extend(ranges)
        alts: list[Expr] = [Sequence((CharClass(tuple(merge_ranges(r))), RuleRef(names[d])))
                            for d, r in sorted(by_dst.items())]
        if q in finals:
            alts.append(EPSILON)
        body = alts[0] if len(alts) == 1 else Choice(tuple(alts)) if alts else CharClass(())
        out.append(Rule(names[q], body, None, ((OPTION, True),) if q == 0 else ()))
    return out


def with_spent_closes(source: GrammarIR, lowered: GrammarIR) -> GrammarIR:
    """`lowered` (grammar/lazy.py's lowering of `source`) with the CLOSE alternative of every
    closable rule of `source` (module docstring); `lowered` itself when there is none."""
    names = [r.name for r in source.rules if closable(r)]
    if not names:
        return lowered
    taken = {r.name for r in lowered.rules}
    extra: dict[str, list[Rule]] = {}
    for name in names:
        try:
            found = close_automaton(source, name)
        except TooLarge:  # (the lazy lowering of the same rule would have refused it first)
            found = None
        if found is not None and found[1]:
            extra[name] = _rules(name, *found, taken)
    if not extra:
        return lowered
    rules = []
    for rule in lowered.rules:
        if rule.name in extra:
            spent = RuleRef(extra[rule.name][0].name)
            alts = rule.body.alternatives if isinstance(rule.body, Choice) else (rule.body,)
            alts = tuple(a for a in alts if a != CharClass(()))
            rule = Rule(rule.name, Choice(alts + (spent,)) if alts else spent, rule.lookahead, rule.options)
        rules.append(rule)
    for name in names:
        rules.extend(extra.get(name, ()))
    return GrammarIR(tuple(rules), lowered.root)
