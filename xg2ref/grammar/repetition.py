"""XGrammar-2 §3.6 (Algorithm 3): repetition state compression.

`R{l,r}` unrolled is r copies of R's machine: a JSON string with `maxLength: 100000` would
need 100,000 FSM states and a mask-cache entry for most of them. Compressed, it is one rule
whose Earley items count the copies already read (kernels/earley.py, LOOP and END):

    R{l,r}, r <= t (or r = inf and l <= t)          |- unrolled as before (Algorithm 3, case 1)
    R{l,r} otherwise, R never empty                  |- a reference to a counted rule
                                                        C ::= R{l,r}  [counted]
    R{l,r}, R may be empty                           |- R{0,r} when l > 0 (the same language:
                                                        the missing copies may be empty), and
                                                        unrolled; such R is rare and small

The counted rule's machine is R's; its items carry the count k of copies completed, so a
range of any size costs the states of one copy. Equal repetitions (same body, same bounds)
share one counted rule. A counted rule is never inlined (it carries an option). A body that is a
reference to a small rule referencing none (a JSON string's `json_char`, left a rule by the
inliner because unrolling would copy it r times) is put in place: the counted machine then
reads the bytes itself, so its states carry the mask-cache entries and know the count.

Where Algorithm 3 keeps t unrolled copies beside the counter so that cache entries inside the
counter may ignore k, here the mask cache knows the count's zone instead (xg2ref/mask/cache.py):
with L the longest token, a token can complete at most L copies, so

    FREE     l <= k + 1 and k + 1 + L < r       the count changes nothing within one token
    NOEXIT   k + 1 + L < l                      no end within one token, copies unbounded
    exact    otherwise (within L of a bound)    an entry for that count

which is exact for every range and builds at most 2L + 2 entries per state whatever l and r.
"""

from __future__ import annotations

from ..exceptions import GrammarLimitError
from .ir import Expr, GrammarIR, Repeat, Rule, RuleRef, children, referenced_rules
from .passes import _with_children, is_nullable, nullable_rules, remove_dead_rules, unrolled_size

# Repetitions with more copies than this are counted instead of unrolled (xgrammar unrolls up to
# 128; counting is cheaper here once entries near a bound derive from one record, see xg2ref/mask/counted.py).
REPETITION_THRESHOLD = 32
COUNTED = "counted"  # the rule option that marks a counted repetition
MAX_PLACED_SIZE = 256  # a referenced rule this small (unrolled_size) is put in place in a counted body
# The largest copy count an Earley item holds (int32). The parser's positions are int32 too, so no
# input it can hold has more than MAX_COUNT copies of a body that is never empty: an upper bound
# past it is no bound (the same language over every such input), a lower bound past it is refused.
MAX_COUNT = (1 << 31) - 2


def is_counted(rule: Rule) -> bool:
    return bool(rule.option(COUNTED, False))


def compress_repetitions(ir: GrammarIR, threshold: int = REPETITION_THRESHOLD) -> GrammarIR:
    """Replace every repetition above `threshold` copies whose body never derives the empty
    string by a reference to a counted rule (module docstring)."""
    nullable = None  # computed when the first large repetition is met
    taken = {r.name for r in ir.rules}
    defined = {r.name: r for r in ir.rules}

    def leaf_body(node: Expr) -> Expr:
        """The body of a small rule without references, options or lookahead that `node` names."""
        rule = defined.get(node.name) if isinstance(node, RuleRef) else None
        if (rule is None or rule.options or rule.lookahead is not None or referenced_rules(rule.body)
                or unrolled_size(rule.body) > MAX_PLACED_SIZE):
            return node
        return rule.body
    made: dict[Repeat, str] = {}
    new_rules: list[Rule] = []

    def large(node: Repeat) -> bool:
        return (node.max if node.max is not None else node.min) > threshold

    def visit(node: Expr, owner: str) -> Expr:
        kids = children(node)
        if kids:
            new_kids = [visit(k, owner) for k in kids]
            if any(a is not b for a, b in zip(new_kids, kids)):
                node = _with_children(node, new_kids)
        nonlocal nullable
        if not isinstance(node, Repeat) or not large(node):
            return node
        if nullable is None:
            nullable = set(nullable_rules(ir))
        # (counted rules made below this node are in `nullable` when their minimum is 0: an
        # outer repetition of one, `(a{0,2}){0,2}`, has a body that may be empty)
        if is_nullable(node.body, nullable):
            return Repeat(node.body, 0, node.max) if node.min else node
        if node.min > MAX_COUNT:
            raise GrammarLimitError(f"a repetition of at least {node.min} copies: the parser counts and reads at "
                                    f"most {MAX_COUNT}")
        hi = node.max if node.max is not None and node.max <= MAX_COUNT else None
        node = Repeat(leaf_body(node.body), node.min, hi)
        name = made.get(node)
        if name is None:
            name = f"{owner}_repeat"
            n = 1
            while name in taken:
                n += 1
                name = f"{owner}_repeat_{n}"
            taken.add(name)
            made[node] = name
            new_rules.append(Rule(name, node, None, ((COUNTED, True),)))
            if node.min == 0:
                nullable.add(name)
        return RuleRef(name)

    rules = []
    for rule in ir.rules:
        if is_counted(rule) or rule.option("unordered"):
            # (an unordered rule's repetitions read its members: its items must see each one,
            # so they stay unrolled in its machine; the JSON front end bounds their size)
            rules.append(rule)
            continue
        body = visit(rule.body, rule.name)
        rules.append(rule if body is rule.body else Rule(rule.name, body, rule.lookahead, rule.options))
    if not new_rules:
        return ir
    return remove_dead_rules(GrammarIR(tuple(rules) + tuple(new_rules), ir.root))
