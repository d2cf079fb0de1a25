"""Normalization passes: before/after tables, fixpoint analyses, inlining, language preservation."""

import itertools
import sys

import pytest
import xg2ref as xgr
from hypothesis import given, settings
from hypothesis import strategies as st

from xg2ref.fsm.utf8 import class_sequences
from xg2ref.grammar.ir import (EPSILON, ByteString, CharClass, Choice, Expr, GrammarIR, Repeat, Rule, RuleRef,
                               Sequence)
from xg2ref.grammar.passes import (flatten, fold_expr, fuse_byte_strings, inline_small_rules, is_nullable, map_expr,
                                   normalize, nullable_rules, remove_dead_rules, unproductive_rules, unrolled_size)

# --- compact IR builders: str is a literal, ref("a") a rule reference ---------------------------


def _e(x) -> Expr:
    return ByteString(x.encode()) if isinstance(x, str) else x


def seq(*xs):
    return Sequence(tuple(map(_e, xs)))


def alt(*xs):
    return Choice(tuple(map(_e, xs)))


def rep(x, lo, hi):
    return Repeat(_e(x), lo, hi)


def cls(*ranges, negated=False):
    """cls("a", "c-e") is [ac-e]."""
    return CharClass(tuple((ord(r[0]), ord(r[-1])) for r in ranges), negated)


ref = RuleRef


def G(**rules) -> GrammarIR:
    """G(root=..., a=...) in definition order; a value (body, lookahead) adds an assertion."""
    return GrammarIR(tuple(Rule(name, _e(v[0]), _e(v[1])) if isinstance(v, tuple) else Rule(name, _e(v))
                           for name, v in rules.items()))


def one(pass_, expr):
    """Run a grammar pass on a one-rule grammar and return the rewritten body."""
    return pass_(G(root=expr)).rule("root").body


# --- flatten ------------------------------------------------------------------------------------

@pytest.mark.parametrize("before, after", [
    (alt(seq("x", seq("y", "z")), alt("p", "q")), alt(seq("x", "y", "z"), "p", "q")),
    (seq("x", seq("y", seq("z", "w"))), seq("x", "y", "z", "w")),
    (alt(alt("p", alt("q", "r")), "s"), alt("p", "q", "r", "s")),
    (seq("x"), _e("x")),
    (alt("x"), _e("x")),
    (seq("", "x", seq("")), _e("x")),
    (seq("", ""), EPSILON),
    (seq(), EPSILON),
    (rep("x", 1, 1), _e("x")),
    (rep("x", 0, 0), EPSILON),
    (rep("", 0, None), EPSILON),
    (rep(seq("", seq()), 2, 5), EPSILON),
    (alt("p", "q", "p"), alt("p", "q")),
    (alt(seq("a", seq("b")), seq("a", "b")), seq("a", "b")),
    (seq("a", rep(seq("b", "c"), 1, 1)), seq("a", "b", "c")),
    (rep(seq(seq("a")), 0, None), rep("a", 0, None)),
    (alt("", "x", ""), alt("", "x")),
    (alt(), alt()),
    (rep("x", 0, 1), rep("x", 0, 1)),
])
def test_flatten_table(before, after):
    assert one(flatten, before) == after


def test_flatten_rewrites_lookahead_and_keeps_input():
    g = G(root=seq(ref("a"), "y"), a=(seq("x"), seq("y", seq("z"))))
    have = flatten(g)
    assert have == G(root=seq(ref("a"), "y"), a=("x", seq("y", "z")))
    assert g.rule("a").body == seq("x")


# --- fuse_byte_strings --------------------------------------------------------------------------

@pytest.mark.parametrize("before, after", [
    (seq("x", "y", ref("b"), "z", cls("w")), seq("xy", ref("b"), "zw")),
    (seq("a", "b"), _e("ab")),
    (cls("a"), _e("a")),
    (cls("a-a"), _e("a")),
    (cls("é"), ByteString("é".encode())),
    (CharClass(((0, 0x10FFFE),), negated=True), ByteString(chr(0x10FFFF).encode())),
    (CharClass(((0xD800, 0xD800),)), ByteString(b"\xed\xa0\x80")),
    (seq(cls("a"), "b", cls("c")), _e("abc")),
    (cls("a", "b"), cls("a", "b")),
    (cls("a", negated=True), cls("a", negated=True)),
    (alt(seq("a", "b"), cls("c")), alt("ab", "c")),
    (seq("a", rep(seq("b", "c"), 0, None)), seq("a", rep("bc", 0, None))),
])
def test_fuse_table(before, after):
    assert one(fuse_byte_strings, before) == after


@pytest.mark.parametrize("cp", [0x61, 0xE9, 0x4E2D, 0xD800, 0x1F600, 0x10FFFF])
def test_fused_class_is_the_byte_chain_the_fsm_builder_makes(cp):
    have = one(fuse_byte_strings, CharClass(((cp, cp),)))
    assert class_sequences([(cp, cp)]) == [tuple((b, b) for b in have.value)]


# --- dead and unproductive rules ----------------------------------------------------------------

@pytest.mark.parametrize("before, after", [
    (G(root=ref("a"), b="y", a="x", c=ref("b")), G(root=ref("a"), a="x")),
    (G(root=(ref("a"), ref("c")), a="x", b="y", c="z"), G(root=(ref("a"), ref("c")), a="x", c="z")),
    (G(root=ref("a"), a=seq("x", ref("a")), b="q"), G(root=ref("a"), a=seq("x", ref("a")))),
    (G(root="x"), G(root="x")),
])
def test_remove_dead_rules_table(before, after):
    assert remove_dead_rules(before) == after


def test_unproductive_rules_are_reported_not_removed():
    g = G(root=alt("x", ref("a"), ref("d")), a=seq("x", ref("a")), b=cls(), c=alt(ref("b"), "y"),
          d=seq(ref("b"), "y"), e=rep(ref("a"), 0, None), f=ref("missing"))
    assert unproductive_rules(g) == {"a", "b", "d", "f"}
    assert remove_dead_rules(g).rule_names() == ["root", "a", "b", "d"]


# --- nullable -----------------------------------------------------------------------------------

@pytest.mark.parametrize("rules, want", [
    ({"a": alt(seq(ref("a"), "x"), "")}, {"a"}),                                   # left recursive
    ({"a": alt(seq(ref("a"), "x"), "y")}, set()),
    ({"b": seq(ref("c"), ref("c")), "c": alt(ref("b"), "")}, {"b", "c"}),          # mutual
    ({"c": ref("d"), "d": ref("c")}, set()),                                       # least fixpoint
    ({"a": ref("a")}, set()),
    ({"e": rep(cls("a"), 0, None), "f": rep(cls("a"), 1, None)}, {"e"}),
    ({"g": rep(ref("h"), 2, 3), "h": alt("x", rep("y", 0, 1))}, {"g", "h"}),
    ({"a": cls(negated=True), "b": cls(), "c": ByteString(b"")}, {"c"}),
    ({"a": alt(), "b": seq()}, {"b"}),
])
def test_nullable_rules(rules, want):
    assert nullable_rules(G(**rules)) == frozenset(want)


@pytest.mark.parametrize("expr, nullable, want", [
    (EPSILON, set(), True),
    (_e("x"), set(), False),
    (cls("a"), set(), False),
    (ref("a"), {"a"}, True),
    (ref("a"), set(), False),
    (seq(ref("a"), rep("x", 0, 3)), {"a"}, True),
    (seq(ref("a"), rep("x", 1, 3)), {"a"}, False),
    (alt("x", ref("a")), {"a"}, True),
    (rep(ref("a"), 5, None), {"a"}, True),
])
def test_is_nullable(expr, nullable, want):
    assert is_nullable(expr, frozenset(nullable)) is want


# --- inline_small_rules -------------------------------------------------------------------------

B_REC = alt(seq("y", ref("b")), "")


@pytest.mark.parametrize("before, after", [
    # the docstring example: a and c inlined, recursive b kept
    (G(root=seq(ref("a"), ref("b")), a=seq("x", ref("c")), b=B_REC, c=cls("0-9")),
     G(root=seq(seq("x", cls("0-9")), ref("b")), b=B_REC)),
    # a chain is inlined in one sweep, callees first
    (G(root=seq(ref("a"), "!"), a=seq(ref("b"), "a"), b=seq(ref("c"), "b"), c="c"),
     G(root=seq(seq(seq("c", "b"), "a"), "!"))),
    # mutual recursion c <-> d is kept; its small callee e is inlined
    (G(root=ref("c"), c=alt("x", seq("(", ref("d"))), d=seq(ref("c"), ref("e")), e=")"),
     G(root=ref("c"), c=alt("x", seq("(", ref("d"))), d=seq(ref("c"), ")"))),
    # a rule with a lookahead assertion is kept
    (G(root=seq(ref("a"), "y"), a=("x", "y")), G(root=seq(ref("a"), "y"), a=("x", "y"))),
    # references to the root are not inlined
    (G(root="x", a=(seq(ref("root"), "y"), "z")), G(root="x", a=(seq(ref("root"), "y"), "z"))),
    # lookahead assertions are rewritten with the inlined bodies
    (G(root=seq(ref("a"), "y"), a=("x", ref("b")), b="y"), G(root=seq(ref("a"), "y"), a=("x", "y"))),
    # x{0,100} unrolls to 101 nodes: too big to copy into callers
    (G(root=seq(ref("a"), ref("a")), a=rep("x", 0, 100)), G(root=seq(ref("a"), ref("a")), a=rep("x", 0, 100))),
    # references to undefined rules are left alone
    (G(root=seq(ref("a"), ref("zz")), a="x"), G(root=seq("x", ref("zz")))),
])
def test_inline_table(before, after):
    assert inline_small_rules(before) == after


def test_inline_respects_max_size():
    g = G(root=seq(ref("a"), ref("b")), a=seq("p", "q", "r"), b="s")
    assert inline_small_rules(g, max_size=3, leaf_size=3) == G(root=seq(ref("a"), "s"), a=seq("p", "q", "r"))
    assert inline_small_rules(g, max_size=4, leaf_size=3) == G(root=seq(seq("p", "q", "r"), "s"))
    # a leaf (a rule referencing none) has its own, larger limit
    assert inline_small_rules(g, max_size=3, leaf_size=4) == G(root=seq(seq("p", "q", "r"), "s"))
    c = G(root=seq(ref("a"), ref("b")), a=seq("p", "q", "r"), b=seq(ref("a"), "s"))
    assert inline_small_rules(c, max_size=3, leaf_size=4) == G(root=seq(seq("p", "q", "r"), ref("b")),
                                                               b=seq(seq("p", "q", "r"), "s"))


def test_json_string_characters_are_read_in_place():
    # `json_char*` in a rule's own machine: its states read the string's bytes, no prediction per byte
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo([b"a", b'"', b"ab"]), cache_enabled=False)
    fsms = compiled.compile_json_schema({"type": "string"}).fsms
    assert "json_char" not in fsms.rule_names


def test_inline_never_touches_recursive_root_or_lookahead_rules():
    g = G(root=seq(ref("l"), ref("s"), ref("m"), ref("root2")),
          l=alt(seq(ref("l"), "x"), "x"),               # left recursive
          s=alt(seq("(", ref("s"), ")"), ""),           # self recursive
          m=alt("m", seq(ref("n"), "!")), n=ref("m"),   # mutually recursive
          root2=("k", "z"))                             # lookahead
    have = inline_small_rules(g)
    assert have == g
    assert inline_small_rules(G(root=alt("x", seq("(", ref("root"), ")")))).rule_names() == ["root"]


def test_unrolled_size():
    assert unrolled_size(_e("abc")) == 1
    assert unrolled_size(seq("a", ref("b"))) == 3
    assert unrolled_size(rep(seq("a", ref("b")), 0, 3)) == 1 + 3 * 3
    assert unrolled_size(rep("a", 2, None)) == 1 + 3


# --- normalize ----------------------------------------------------------------------------------

def test_normalize_pipeline():
    g = G(root=seq(ref("greet"), seq("", cls(" ")), ref("name"), rep(ref("punct"), 1, 1)),
          greet=alt("hi", alt("hello", "hi")), name=seq(cls("A-Z"), rep(cls("a-z"), 0, None)),
          punct=cls("!"), unused=ref("unused"))
    want = G(root=seq(alt("hi", "hello"), " ", cls("A-Z"), rep(cls("a-z"), 0, None), "!"))
    assert normalize(g) == want
    assert normalize(g, inline=False) == G(root=seq(ref("greet"), " ", ref("name"), ref("punct")),
                                           greet=alt("hi", "hello"),
                                           name=seq(cls("A-Z"), rep(cls("a-z"), 0, None)), punct="!")


def test_map_and_fold_helpers():
    e = seq("a", alt(ref("x"), "bc"))
    assert fold_expr(e, lambda n, kids: len(n.value) if isinstance(n, ByteString) else sum(kids)) == 3
    assert map_expr(e, lambda n: _e("z") if n == ref("x") else n) == seq("a", alt("z", "bc"))
    assert map_expr(e, lambda n: n) is e


# --- deep trees ---------------------------------------------------------------------------------

DEPTH = 900


def test_deep_nesting_within_default_recursion_limit():
    assert sys.getrecursionlimit() <= 1000 + 100  # the depth below would not fit in recursive walks
    nested_seq = _e("a")
    for _ in range(DEPTH):
        nested_seq = seq("a", nested_seq)
    assert one(normalize, nested_seq) == _e("a" * (DEPTH + 1))

    nested_alt = _e("x0")
    for i in range(1, DEPTH):
        nested_alt = alt(f"x{i}", nested_alt)
    have = one(flatten, nested_alt)
    assert isinstance(have, Choice) and len(have.alternatives) == DEPTH

    mixed = _e("b")
    for i in range(DEPTH):
        mixed = [seq("", mixed), rep(mixed, 1, 1), alt(mixed), seq(cls("a"), mixed)][i % 4]
    g = G(root=seq(ref("a"), ref("a")), a=mixed)
    assert normalize(g) == G(root=("a" * (DEPTH // 4) + "b") * 2)
    assert nullable_rules(g) == frozenset() and unproductive_rules(g) == set()
    assert unrolled_size(mixed) == 6 * (DEPTH // 4) + 1

    still_deep = _e("c")
    for _ in range(DEPTH // 2):
        still_deep = seq("a", alt("b", still_deep))
    twice = G(root=alt(still_deep, seq(still_deep)))
    have = flatten(twice).rule("root").body
    assert have is still_deep
    assert is_nullable(have, frozenset()) is False


# --- language preservation ----------------------------------------------------------------------

MAX_LEN = 4


def _cat(xs: set, ys: set) -> set:
    return {x + y for x in xs for y in ys if len(x) + len(y) <= MAX_LEN}


def _lang(expr: Expr, env: dict) -> set:
    """Strings of length <= MAX_LEN derived by `expr`, given those of each rule in `env`."""
    if isinstance(expr, ByteString):
        return {expr.value} if len(expr.value) <= MAX_LEN else set()
    if isinstance(expr, CharClass):
        return {chr(cp).encode() for lo, hi in expr.codepoint_ranges() for cp in range(lo, hi + 1)}
    if isinstance(expr, RuleRef):
        return env[expr.name]
    if isinstance(expr, Choice):
        return set().union(*(_lang(a, env) for a in expr.alternatives))
    if isinstance(expr, Sequence):
        out = {b""}
        for item in expr.items:
            out = _cat(out, _lang(item, env))
        return out
    body, power, out = _lang(expr.body, env), {b""}, set()
    for _ in range(expr.min):
        power = _cat(power, body)
    if expr.max is None:                 # body^min body^*: grow until nothing new appears
        while not _cat(power, body) <= power:
            power |= _cat(power, body)
        return power
    for _ in range(expr.min, expr.max + 1):
        out |= power
        power = _cat(power, body)
    return out


def languages(g: GrammarIR) -> dict:
    """Each rule's strings of length <= MAX_LEN: the least fixpoint, by Kleene iteration."""
    env = {r.name: set() for r in g.rules}
    while True:
        new = {r.name: _lang(r.body, env) for r in g.rules}
        if new == env:
            return env
        env = new


def test_languages_oracle_table():
    g = G(root=alt(seq(ref("root"), "a"), "b"), p=rep(cls("a-b"), 2, 3), q=rep(alt("", "ab"), 1, None))
    have = languages(g)
    assert have["root"] == {b"b", b"ba", b"baa", b"baaa"}
    assert have["p"] == {bytes(s) for n in (2, 3) for s in itertools.product(b"ab", repeat=n)}
    assert have["q"] == {b"", b"ab", b"abab"}


RULES = ("root", "r1", "r2", "r3")
_leaves = st.sampled_from([EPSILON, _e("a"), _e("b"), _e("ab"), cls("a"), cls("b"), cls("a-b"), cls()])


def _exprs(num_rules: int):
    leaf = st.one_of(_leaves, st.sampled_from(RULES[:num_rules]).map(RuleRef))
    bounds = st.integers(0, 2).flatmap(lambda m: st.tuples(st.just(m), st.sampled_from([m, m + 1, m + 2, None])))
    return st.recursive(leaf, lambda inner: st.one_of(
        st.lists(inner, min_size=0, max_size=3).map(lambda xs: Sequence(tuple(xs))),
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: Choice(tuple(xs))),
        st.tuples(inner, bounds).map(lambda t: Repeat(t[0], *t[1])),
    ), max_leaves=6)


@st.composite
def grammars(draw):
    n = draw(st.integers(1, len(RULES)))
    rules = []
    for name in RULES[:n]:
        lookahead = draw(st.sampled_from([None, None, _e("a"), RuleRef(RULES[0])]))
        rules.append(Rule(name, draw(_exprs(n)), lookahead))
    return GrammarIR(tuple(rules))


@settings(max_examples=300, deadline=None)
@given(grammars())
def test_normalize_keeps_the_language(g):
    want = languages(g)
    for have_ir in (normalize(g), normalize(g, inline=False), flatten(g), fuse_byte_strings(g),
                    inline_small_rules(g, max_size=4)):
        have = languages(have_ir)
        assert have["root"] == want["root"]
        assert all(have[name] == want[name] for name in have_ir.rule_names())
    assert nullable_rules(g) == {name for name, strings in want.items() if b"" in strings}
    assert all(not want[name] for name in unproductive_rules(g))


def test_references_under_large_repetitions_are_not_inlined():
    from xg2ref.frontends.ebnf.parser import parse_ebnf
    from xg2ref.grammar.passes import MAX_INLINE_COPIES, inline_small_rules

    ir = parse_ebnf(f'root ::= c{{0,{MAX_INLINE_COPIES + 1}}} "-" c{{0,3}}\nc ::= [a-z] | "_"')
    out = inline_small_rules(ir)
    assert out.rule_names() == ["root", "c"]  # still referenced under the large repetition
    body = out.rule("root").body
    assert body.items[0].body == RuleRef("c") and body.items[2].body == ir.rule("c").body
