"""XGrammar §3.4 (rule inlining) and the normalization passes run before FSM building.

Each pass is a function `GrammarIR -> GrammarIR` that returns a new grammar and never changes
the language of any surviving rule, so token masks computed on the result stay exact. The
passes, with their xgrammar counterparts (`cpp/grammar_functor.cc`):

    flatten              splice nested sequences/choices, drop epsilons   SingleElementExprEliminator
    fuse_byte_strings    "a" "b" --> "ab", [a] --> "a"                    ByteStringFuser
    inline_small_rules   replace refs to small non-recursive rules        RuleInliner (XGrammar §3.4)
    join_mutual_tail_calls  a rule used once, calling back last, inlined  (none: xg2ref's own)
    remove_dead_rules    drop rules unreachable from the root             DeadCodeEliminator
    nullable_rules       rules that derive the empty string (analysis)    AllowEmptyRuleAnalyzer
    unproductive_rules   rules whose language is empty (analysis)

`normalize` chains them (see its docstring for the order). Every traversal goes through one
iterative post-order fold (`fold_expr`, and `map_expr` built on it), so trees nested as deep
as the parser allows (1000 groups) never hit Python's recursion limit; the only recursive
step left is the dataclass `__hash__` used to drop duplicate alternatives, which runs under
`deep_recursion`.

What it leaves out: xgrammar's StructureNormalizer (every rule as choices of sequences) is not
needed, since the FSM builder takes any tree; repetition expansion (RepetitionRangeExpander)
and lookahead derivation (LookaheadAssertionAnalyzer) belong to later stages.
"""

from __future__ import annotations

from typing import AbstractSet, Callable, Optional, TypeVar

from .charsets import encode_codepoint
from ..util import deep_recursion
from .lazy import lower_lazy_rules
from .spent_close import with_spent_closes
from .intrinsic import Intrinsic
from .ir import (EPSILON, MARKER_RULE_KEYS, ByteString, CharClass, Choice, Expr, GrammarIR, Repeat, Rule, RuleRef,
                 Sequence, children, referenced_rules, walk)

T = TypeVar("T")

# Bodies of at most this many nodes (repetitions counted unrolled, see `unrolled_size`) are inlined.
DEFAULT_INLINE_SIZE = 16
# A leaf rule (one that references no rule) is inlined up to this size: read through a reference,
# each of its bytes costs an Earley prediction and completion, and the mask cache must expand
# the context of every token that runs past its end (a JSON string's `json_char*`: about 40x
# slower to classify as a rule than in place).
LEAF_INLINE_SIZE = 48
# References under a repetition of more copies than this are not inlined.
MAX_INLINE_COPIES = 16
# A class of more ranges than this is never inlined (`unrolled_size`).
MAX_INLINE_CLASS_RANGES = 64


# --- traversal helpers --------------------------------------------------------------------------

def fold_expr(expr: Expr, fn: Callable[[Expr, list[T]], T]) -> T:
    """Bottom-up fold: `fn(node, values of its children)` for every node, children first.

    Iterative (explicit stack), so depth is bounded by memory, not the recursion limit.
    Example: fold_expr(Sequence((ByteString(b"a"), ByteString(b"bc"))),
                       lambda n, kids: len(n.value) if isinstance(n, ByteString) else sum(kids)) == 3
    """
    values: list[T] = []
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    while stack:
        node, kids_done = stack.pop()
        kids = children(node)
        if kids and not kids_done:
            stack.append((node, True))
            stack.extend((kid, False) for kid in reversed(kids))
            continue
        cut = len(values) - len(kids)
        args = values[cut:]
        del values[cut:]
        values.append(fn(node, args))
    return values[0]


def _with_children(node: Expr, kids: list[Expr]) -> Expr:
    """`node` with its children replaced by `kids` (the node itself when nothing changed)."""
    if all(new is old for new, old in zip(kids, children(node))):
        return node
    if isinstance(node, Sequence):
        return Sequence(tuple(kids))
    if isinstance(node, Choice):
        return Choice(tuple(kids))
    assert isinstance(node, Repeat)
    return Repeat(kids[0], node.min, node.max)


def map_expr(expr: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    """Bottom-up rewrite: rebuild every node from its rewritten children, then apply `fn`.

    Example: map_expr(Sequence((RuleRef("a"),)), lambda n: ByteString(b"x") if n == RuleRef("a") else n)
             == Sequence((ByteString(b"x"),))
    """
    return fold_expr(expr, lambda node, kids: fn(_with_children(node, kids)))


def renamed_rules(ir: GrammarIR, names: dict) -> list[Rule]:
    """The rules of `ir` under new names (`names`: old name -> new), with every reference
    renamed: rule references and the rules intrinsics name, in bodies and lookaheads alike. Options
    are kept. (For embedding one grammar in another: union, concat, Lark, structural tags.)"""
    def rename(node: Expr) -> Expr:
        if isinstance(node, RuleRef):
            return RuleRef(names[node.name])
        if isinstance(node, Intrinsic):
            return node.renamed(names.__getitem__)
        return node

    return [Rule(names[r.name], map_expr(r.body, rename),
                 None if r.lookahead is None else map_expr(r.lookahead, rename), r.options) for r in ir.rules]


def _map_rules(ir: GrammarIR, fn: Callable[[Expr], Expr]) -> GrammarIR:
    """`map_expr(_, fn)` over every rule body and lookahead assertion."""
    with deep_recursion():
        rules = tuple(Rule(r.name, map_expr(r.body, fn), None if r.lookahead is None else map_expr(r.lookahead, fn),
                           r.options) for r in ir.rules)
    return GrammarIR(rules, ir.root)


def unrolled_size(expr: Expr) -> int:
    """Node count of `expr` once the FSM builder unrolls repetitions: x{m,n} holds n copies of
    x (m+1 when unbounded), so inlining a rule copies about this many NFA fragments.

    A class of more than `MAX_INLINE_CLASS_RANGES` ranges counts as too large to inline (its
    UTF-8 automaton grows with them): a rule that is one class of a thousand ranges (idn-hostname's
    letters) stays a rule, shared, rather than a copy in each of a thousand callers; a smaller
    class counts one node.

    Example: unrolled_size(Repeat(Sequence((ByteString(b"a"), RuleRef("b"))), 0, 3)) == 1 + 3 * 3
    """
    def size(node: Expr, kids: list[int]) -> int:
        if isinstance(node, Repeat):
            return 1 + kids[0] * (node.max if node.max is not None else node.min + 1)
        if isinstance(node, CharClass):
            return 1 if len(node.ranges) <= MAX_INLINE_CLASS_RANGES else LEAF_INLINE_SIZE + 1
        return 1 + sum(kids)

    return fold_expr(expr, size)


# --- flatten ------------------------------------------------------------------------------------

def _same(new: list[Expr], old: tuple[Expr, ...]) -> bool:
    """Whether `new` holds exactly the objects of `old` (identity: no deep comparison)."""
    return len(new) == len(old) and all(a is b for a, b in zip(new, old))


def _flatten_node(node: Expr) -> Expr:
    if isinstance(node, Sequence):
        items: list[Expr] = []
        for item in node.items:
            if isinstance(item, Sequence):
                items.extend(item.items)
            elif not (isinstance(item, ByteString) and not item.value):
                items.append(item)
        if not items:
            return EPSILON
        if len(items) == 1:
            return items[0]
        return node if _same(items, node.items) else Sequence(tuple(items))
    if isinstance(node, Choice):
        alts: dict[Expr, None] = {}
        for alt in node.alternatives:
            for a in (alt.alternatives if isinstance(alt, Choice) else (alt,)):
                alts.setdefault(a, None)
        if len(alts) == 1:
            return next(iter(alts))
        return node if _same(list(alts), node.alternatives) else Choice(tuple(alts))
    if isinstance(node, Repeat):
        if node.min == node.max == 1:
            return node.body
        if node.max == 0 or node.body == EPSILON:
            return EPSILON
    return node


def flatten(ir: GrammarIR) -> GrammarIR:
    """Remove structure that does not change the language.

        a ::= ("x" ("y" "z")) | ("p" | "q")   -->   a ::= "x" "y" "z" | "p" | "q"
        a ::= "" "x" ("")                     -->   a ::= "x"
        a ::= "p" | "q" | "p"                 -->   a ::= "p" | "q"
        a ::= x{1,1} y{0,0} ""*               -->   a ::= x

    Sequences inside sequences and choices inside choices are spliced into the parent; a
    sequence or choice of one element becomes that element; empty byte strings are dropped
    from sequences (an emptied sequence is epsilon); x{1,1} is x; x{0,0} and ""{m,n} are
    epsilon; repeated alternatives are dropped (the first is kept). One bottom-up sweep reaches
    the fixpoint: each node is rewritten after its children, which are already flat.
    """
    return _map_rules(ir, _flatten_node)


# --- fuse byte strings --------------------------------------------------------------------------

def _fuse_node(node: Expr) -> Expr:
    if isinstance(node, CharClass):
        ranges = node.codepoint_ranges()
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            return ByteString(encode_codepoint(ranges[0][0]))
        return node
    if isinstance(node, Sequence):
        items: list[Expr] = []
        for item in node.items:
            if items and isinstance(item, ByteString) and isinstance(items[-1], ByteString):
                items[-1] = ByteString(items[-1].value + item.value)
            else:
                items.append(item)
        if _same(items, node.items):
            return node
        return items[0] if len(items) == 1 else Sequence(tuple(items))
    return node


def fuse_byte_strings(ir: GrammarIR) -> GrammarIR:
    """Concatenate adjacent literals and turn one-codepoint classes into literals (ByteStringFuser).

        a ::= "x" "y" b "z" [w]   -->   a ::= "xy" b "zw"
        a ::= [é]                 -->   a ::= "é"            (ByteString b"\\xc3\\xa9")

    A class that matches exactly one codepoint (`[a]`, `[a-a]`, or a negated class leaving one)
    becomes the literal of that codepoint's UTF-8 bytes (`encode_codepoint`, surrogates
    included): the FSM builder turns both into the same chain of single-byte edges. Only
    direct neighbours are fused, so run `flatten` first to expose nested sequences.
    """
    return _map_rules(ir, _fuse_node)


# --- reachability, productivity, nullability ----------------------------------------------------

def marker_rules(ir: GrammarIR) -> set:
    """The rules that stop/suffix markers name (rule options `capture_hidden_*_rule`): rules of
    their own, referenced by no body, that captures split spans with (xg2ref/rule_options.py)."""
    return {v for r in ir.rules for k, v in r.options if k in MARKER_RULE_KEYS}


def _flat_marker_rules(ir: GrammarIR) -> GrammarIR:
    """`ir` with the references in the marker helper rules (`marker_rules`) replaced by their
    bodies, where no recursion forbids it: a helper splits spans by its own machine
    (xg2ref/rule_options.py), which must read bytes only. No body refers to a helper, so no
    language changes."""
    helpers = marker_rules(ir)
    defined = {r.name: r.body for r in ir.rules}
    flat: dict[str, Optional[Expr]] = {}

    def body_of(name: str, active: frozenset) -> Optional[Expr]:
        if name in active or name not in defined:
            return None
        if name not in flat:
            failed = []

            def inline(node: Expr) -> Expr:
                if isinstance(node, RuleRef):
                    found = body_of(node.name, active | {name})
                    if found is None:
                        failed.append(node.name)
                        return node
                    return found
                return node
            result = map_expr(defined[name], inline)
            flat[name] = None if failed else result
        return flat[name]

    rules = []
    for r in ir.rules:
        body = body_of(r.name, frozenset()) if r.name in helpers else None
        rules.append(r if body is None or body == r.body else Rule(r.name, body, r.lookahead, r.options))
    return GrammarIR(tuple(rules), ir.root)


def remove_dead_rules(ir: GrammarIR) -> GrammarIR:
    """Drop rules that the root cannot reach (DeadCodeEliminator); keep definition order.

        root ::= a   a ::= "x"   b ::= "y"   -->   root ::= a   a ::= "x"

    Reachability follows references in bodies and in lookahead assertions. Rules with an empty
    language (`unproductive_rules`) are kept: deleting one would leave dangling references in
    the rules that mention it. The FSM builder cuts the edges into them instead.
    """
    defined = {r.name: r for r in ir.rules}
    if ir.root not in defined:
        raise KeyError(f"root rule {ir.root!r} is not defined")
    reached = {ir.root}
    todo = [ir.root]
    while todo:
        rule = defined[todo.pop()]
        exprs = [rule.body] if rule.lookahead is None else [rule.body, rule.lookahead]
        # (and the body and marker rules a stop/suffix marker names: captures split spans by them)
        named = [v for k, v in rule.options if k in MARKER_RULE_KEYS]
        for name in [n for expr in exprs for n in referenced_rules(expr)] + named:
            if name in defined and name not in reached:
                reached.add(name)
                todo.append(name)
    return GrammarIR(tuple(r for r in ir.rules if r.name in reached), ir.root)


def _least_fixpoint(ir: GrammarIR, holds: Callable[[Expr, AbstractSet[str]], bool]) -> set[str]:
    """The smallest set S of rule names with: name in S <=> holds(body, S)."""
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for rule in ir.rules:
            if rule.name not in found and holds(rule.body, found):
                found.add(rule.name)
                changed = True
    return found


def is_nullable(expr: Expr, nullable: AbstractSet[str]) -> bool:
    """Whether `expr` derives the empty string, given the set of nullable rule names.

        ""  nullable        [a]  never (not even [])       name  iff name in nullable
        a b  all items      a | b  any alternative         x{m,n}  m == 0 or x nullable
        intrinsic  its own answer (grammar/intrinsic.py: no default): TagDispatch always,
                   its free text may end at once; TokenSet never, one token
    """
    def rule(node: Expr, kids: list[bool]) -> bool:
        if isinstance(node, ByteString):
            return not node.value
        if isinstance(node, Intrinsic):
            return node.nullable(nullable)
        if isinstance(node, RuleRef):
            return node.name in nullable
        if isinstance(node, Sequence):
            return all(kids)
        if isinstance(node, Choice):
            return any(kids)
        if isinstance(node, Repeat):
            return node.min == 0 or kids[0]
        return False

    return fold_expr(expr, rule)


def nullable_rules(ir: GrammarIR) -> frozenset[str]:
    """Rules that derive the empty string (AllowEmptyRuleAnalyzer), as a least fixpoint.

        a ::= a "x" | ""   b ::= c c   c ::= b | ""   d ::= d   -->   {a, b, c}

    Starting from the empty set, a rule joins once `is_nullable` holds for its body; `d ::= d`
    never joins, since a derivation of "" would have to be infinite.
    """
    return frozenset(_least_fixpoint(ir, is_nullable))


def _is_productive(expr: Expr, productive: AbstractSet[str]) -> bool:
    """Whether `expr` derives at least one string, given the productive rule names."""
    def rule(node: Expr, kids: list[bool]) -> bool:
        if isinstance(node, CharClass):
            return bool(node.codepoint_ranges())
        if isinstance(node, RuleRef):
            return node.name in productive
        if isinstance(node, Sequence):
            return all(kids)
        if isinstance(node, Choice):
            return any(kids)
        if isinstance(node, Repeat):
            return node.min == 0 or kids[0]
        if isinstance(node, Intrinsic):
            return node.productive(productive)
        return True

    return fold_expr(expr, rule)


def unproductive_rules(ir: GrammarIR) -> set[str]:
    """Rules whose language is empty: the complement of the least productive fixpoint.

        a ::= "x" a   b ::= []   c ::= b | "y"   d ::= b "y"   -->   {a, b, d}

    Only reported; `remove_dead_rules` keeps them (see there). References to undefined rules
    count as unproductive.
    """
    return {r.name for r in ir.rules} - _least_fixpoint(ir, _is_productive)


# --- rule inlining (XGrammar §3.4) --------------------------------------------------------------

def _strongly_connected(graph: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components of `graph`, callees' components before callers'.

    Tarjan's algorithm with an explicit stack of (node, iterator over its successors).
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(graph[start]))]
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(component)
    return components


def inline_small_rules(ir: GrammarIR, max_size: int = DEFAULT_INLINE_SIZE,
                       leaf_size: int = LEAF_INLINE_SIZE) -> GrammarIR:
    """Replace references to small rules by their bodies, then drop those rules (RuleInliner).

        root ::= a b   a ::= "x" c   b ::= "y" b | ""   c ::= [0-9]
          -->
        root ::= ("x" [0-9]) b   b ::= "y" b | ""

    A rule is inlined when it is not the root, has no lookahead assertion, is not recursive
    (it cannot reach itself through body references, directly or via other rules) and its
    body, after its own references were inlined, has `unrolled_size` <= `max_size` (or <=
    `leaf_size` when it references no rule at all: a JSON string's character).
    Substituting a rule's body for a reference to it is one step of a derivation, so every
    language is unchanged and masks stay exact; fewer rules mean fewer Earley predictions.

    - Recursive rules cannot be inlined: substituting `b` into `b ::= "y" b | ""` yields a
      body that still mentions `b`, forever; the recursion must stay a rule reference.
    - Rules a TagDispatch dispatches to are kept: it refers to them by name.
    - Rules with a lookahead assertion are kept: the assertion belongs to the rule (the mask
      cache uses it to settle tokens that run past the rule's end), and inlining would throw
      it away along with the rule.

    - A grammar with budgets (`max_tokens`, `max_chars`) is left as it is: a deadline belongs to a
      rule occurrence, and a rule called from two budgets at one position lives while either
      does; inlined, it would die with the shorter one.
    - References under a repetition of more than `MAX_INLINE_COPIES` copies stay references:
      `json_char{0,8192}` keeps one small rule instead of 8,192 copies of its states.

    Order: a single bottom-up sweep over the strongly connected components of the reference
    graph, callees first (Tarjan), so each rule's body is final before any caller needs it.
    Lookahead assertions are rewritten last, with the final bodies. An inlined rule is removed
    unless a reference to it remains (under a large repetition).
    """
    if any(r.option("max_tokens") is not None or r.option("max_chars") is not None for r in ir.rules):
        return _flat_marker_rules(ir)  # budgets belong to rule occurrences: every rule stays one (specs/05)
    defined = {r.name: r for r in ir.rules}
    graph = {r.name: [n for n in referenced_rules(r.body) if n in defined] for r in ir.rules}
    # an intrinsic names its rules: they must stay rules
    named = {name for r in ir.rules for node in walk(r.body) if isinstance(node, Intrinsic) for name in node.rule_names()}
    named |= marker_rules(ir)  # (and the helper rules a stop/suffix marker names)
    bodies = {r.name: r.body for r in ir.rules}
    inlined: dict[str, Expr] = {}

    def substitute(node: Expr) -> Expr:
        return inlined.get(node.name, node) if isinstance(node, RuleRef) else node

    def substitute_body(node: Expr) -> Expr:
        """`substitute` everywhere but under a repetition of more than MAX_INLINE_COPIES copies
        (a body copied that many times would multiply the FSM; the reference stays)."""
        if isinstance(node, Repeat) and (node.max if node.max is not None else node.min + 1) > MAX_INLINE_COPIES:
            return node
        if isinstance(node, RuleRef):
            return substitute(node)
        kids = children(node)
        return _with_children(node, [substitute_body(k) for k in kids]) if kids else node

    with deep_recursion():
        for component in _strongly_connected(graph):
            recursive = len(component) > 1 or component[0] in graph[component[0]]
            for name in component:
                bodies[name] = body = substitute_body(bodies[name])
                limit = max(max_size, leaf_size) if not graph[name] else max_size
                if (not recursive and name != ir.root and defined[name].lookahead is None and name not in named
                        and not defined[name].options
                        and unrolled_size(body) <= limit):
                    inlined[name] = body
        lookaheads = {r.name: None if r.lookahead is None else map_expr(r.lookahead, substitute) for r in ir.rules}
        kept = {r.name for r in ir.rules if r.name not in inlined}
        still = {n for name in kept for expr in (bodies[name], lookaheads[name]) if expr is not None
                 for n in referenced_rules(expr)}
        rules = tuple(Rule(r.name, bodies[r.name], lookaheads[r.name], r.options) for r in ir.rules
                      if r.name not in inlined or r.name in still)
    return GrammarIR(rules, ir.root)


# --- mutual tail calls (XGrammar-2 §3.4, rule inlining for right recursion) ---------------------
#
# A tail self-call `list ::= item "," list | item` becomes a loop in `list`'s machine
# (`FSM.with_tail_calls_as_loops`), and the Earley chart holds one item per list, not one per
# element. Mutual right recursion escapes that: in xgrammar's JSON grammar
#
#     elements      ::= value elements_rest | ...   (every alternative ends in elements_rest)
#     elements_rest ::= "" | ws "," ws elements
#
# neither rule calls itself. Substituting a rule's body for a reference to it is one step of a
# derivation and changes no language; when the rule is referenced once, the grammar does not
# grow either. So the pass takes the rules it catches, one by one:
#
#     CATCH   B is referenced exactly once in the grammar, from a tail of A's body (A != B),
#             A's body is a tail of B's (so the two rules call each other last),
#             B is not the root, has no options and no lookahead assertion, and no intrinsic
#             or marker names it
#             |-  A's reference to B is replaced by B's body; B is dropped
#
# after which A calls itself last (`elements_rest ::= "" | ws "," ws (value elements_rest | ...)`)
# and its machine loops. A *tail* of a body is a reference that can be the last thing it reads:
# the body itself, the last element of a sequence, any alternative of a choice. Leo items
# (kernels/earley.py) make every right recursion linear; this pass makes the common one free.
# Grammars with token or character budgets are left as they are (a budget belongs to a rule
# occurrence, as in `inline_small_rules`).

def tail_references(expr: Expr) -> set:
    """The rules a reference to which can be the last thing `expr` reads (module docstring).

    Example: tail_references(Choice((Sequence((RuleRef("a"), RuleRef("b"))), RuleRef("c")))) == {"b", "c"}
    """
    out, todo = set(), [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, RuleRef):
            out.add(node.name)
        elif isinstance(node, Sequence) and node.items:
            todo.append(node.items[-1])
        elif isinstance(node, Choice):
            todo.extend(node.alternatives)
    return out


def _reference_counts(ir: GrammarIR) -> dict:
    """How many times each rule is referenced, in bodies and lookahead assertions."""
    counts: dict = {}
    for r in ir.rules:
        for expr in (r.body, r.lookahead):
            if expr is None:
                continue
            for node in walk(expr):
                if isinstance(node, RuleRef):
                    counts[node.name] = counts.get(node.name, 0) + 1
    return counts


def mutual_tail_calls(ir: GrammarIR) -> list:
    """The (A, B) pairs CATCH takes, in rule order: B's body goes in place of A's reference.

    Example: mutual_tail_calls(parse_ebnf('root ::= "[" a "]"\na ::= "x" b\nb ::= "," a | ""')) == [("a", "b")]
    """
    if any(r.option("max_tokens") is not None or r.option("max_chars") is not None for r in ir.rules):
        return []
    defined = {r.name: r for r in ir.rules}
    named = {name for r in ir.rules for node in walk(r.body) if isinstance(node, Intrinsic)
             for name in node.rule_names()} | marker_rules(ir)
    counts = _reference_counts(ir)
    users = {}
    for r in ir.rules:
        for name in referenced_rules(r.body):
            users.setdefault(name, r.name)
    pairs, taken = [], set()
    for b in ir.rules:
        a = users.get(b.name)
        if (counts.get(b.name) != 1 or a is None or a == b.name or b.name == ir.root or b.options
                or b.lookahead is not None or b.name in named or a in taken or b.name in taken):
            continue
        if b.name in tail_references(defined[a].body) and a in tail_references(b.body):
            pairs.append((a, b.name))
            taken |= {a, b.name}
    return pairs


def join_mutual_tail_calls(ir: GrammarIR) -> GrammarIR:
    """`ir` with every CATCH applied (module docstring); the language of every rule kept is the same."""
    pairs = mutual_tail_calls(ir)
    if not pairs:
        return ir
    inlined = {b: a for a, b in pairs}
    bodies = {r.name: r.body for r in ir.rules}
    rules = []
    for r in ir.rules:
        if r.name in inlined:
            continue
        body = r.body
        for a, b in pairs:
            if a == r.name:
                body = map_expr(body, lambda node, b=b: bodies[b] if node == RuleRef(b) else node)
        rules.append(Rule(r.name, body, r.lookahead, r.options))
    return GrammarIR(tuple(rules), ir.root)


# --- the pipeline -------------------------------------------------------------------------------

def normalize(ir: GrammarIR, *, inline: bool = True) -> GrammarIR:
    """The normalization pipeline run before FSM building:

        0. lower_lazy_rules    lazy rules as plain rules (xg2ref/grammar/lazy.py), and
           with_spent_closes   the end of a stop/suffix rule whose character budget is
                               spent (xg2ref/grammar/spent_close.py)
        1. flatten             expose the real structure
        2. fuse_byte_strings   so literal runs count as one node when sizing rules
        3. inline_small_rules  (skipped when `inline=False`, as the next step is)
           join_mutual_tail_calls  mutual right recursion as one rule (its tail calls then loop)
        4. flatten             splice the inlined bodies into their new parents
        5. fuse_byte_strings   fuse literals that inlining made adjacent
        6. remove_dead_rules   drop what the root no longer reaches

    xgrammar's GrammarOptimizer runs ByteStringFuser -> RuleInliner -> ... -> DeadCodeEliminator
    -> AllowEmptyRuleAnalyzer; the analyses (`nullable_rules`, `unproductive_rules`) change
    nothing, so they are separate functions here rather than steps of the pipeline.
    """
    ir = fuse_byte_strings(flatten(with_spent_closes(ir, lower_lazy_rules(ir))))
    if inline:
        ir = fuse_byte_strings(flatten(join_mutual_tail_calls(inline_small_rules(ir))))
    return remove_dead_rules(ir)
