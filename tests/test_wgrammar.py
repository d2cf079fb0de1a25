"""WGrammar's operators (xg2ref/baselines/wgrammar/): the executor against Earley over the
lowered program and against the brute-force oracle, along walks with rollbacks, on generated
programs; the global cache against no cache; token sets; ill-formed programs refused by name."""

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from hypothesis_budget import examples
from xg2ref.baselines.wgrammar import (Choice, DoWhile, End, GlobalMaskCache, IfElse, OperatorMatcher, OperatorProgramError,
                                       Sequence, Star, TokenSets, Wait, Write, compile_program, lower_to_ir)
from xg2ref.baselines.wgrammar.cache import ALLOW, DENY, WORDS, _expand, _store
from xg2ref.compiler import compile_ir_grammar
from xg2ref.exceptions import EBNFError, MatcherError
from xg2ref.grammar.grammar import Grammar
from xg2ref.grammar.printer import print_grammar
from xg2ref.oracle.engines import OracleMatcher

VOCAB = ["1", "2", "12", ".", ".5", "a", "</s>", "", "x1", "ab", "b", "<t>"]
STOP = 6


@pytest.fixture
def info():
    return xgr.TokenizerInfo(VOCAB, stop_token_ids=[STOP])


@pytest.fixture
def sets(info):
    return TokenSets(info)


# ---- token sets ---------------------------------------------------------------------------

def test_sets_are_regular_tokens_interned_by_content(sets):
    assert sets.ids(2, 0, 0) == sets.ids(0, 2) != sets.ids(0)
    assert sets.members(sets.chars("[0-9]")).tolist() == [0, 1, 2]
    assert sets.members(sets.chars(str.isalpha)).tolist() == [5, 9, 10]
    assert sets.members(sets.complement(sets.chars("[0-9.]"))).tolist() == [5, 8, 9, 10, 11]
    assert sets.literal("12.5ab") == (2, 4, 9)  # longest match first
    assert sets.contains(sets.ids(3, 4), 4) and not sets.contains(sets.ids(3, 4), 5)
    with pytest.raises(OperatorProgramError, match="stop, special or empty"):
        sets.ids(STOP)
    with pytest.raises(OperatorProgramError, match="stop, special or empty"):
        sets.ids(7)
    with pytest.raises(OperatorProgramError, match="outside the vocabulary"):
        sets.ids(99)
    with pytest.raises(OperatorProgramError, match="no regular token spells"):
        sets.literal("q")


def test_chars_by_ranges_is_chars_by_predicate():
    info = xgr.TokenizerInfo(["a", "é", "aé", "1", "a1", "</s>", "", "z", "éz"], stop_token_ids=[5])
    sets = TokenSets(info)
    for ranges in (((97, 97),), ((97, 97), (233, 233)), ((48, 57), (97, 122)), ()):
        by_predicate = sets.chars(lambda c: any(lo <= ord(c) <= hi for lo, hi in ranges))
        assert sets.chars(ranges) == by_predicate
    assert sets.members(sets.chars(((97, 97), (233, 233)))).tolist() == [0, 1, 2]


def test_one_interner_per_vocabulary(info):
    again = xgr.TokenizerInfo(VOCAB, stop_token_ids=[STOP])
    assert TokenSets.for_vocabulary(info) is TokenSets.for_vocabulary(again)
    other = xgr.TokenizerInfo(VOCAB, stop_token_ids=[3])
    assert TokenSets.for_vocabulary(other) is not TokenSets.for_vocabulary(info)


# ---- ill-formed programs ------------------------------------------------------------------

def test_ill_formed_programs_are_refused_by_name(sets):
    digits, dot = sets.chars("[0-9]"), sets.ids(3)
    with pytest.raises(OperatorProgramError, match=r"IfElse, then\).*IfElse, else\).*token 0"):
        compile_program(IfElse(digits, sets.ids(0, 5)), sets)
    with pytest.raises(OperatorProgramError, match="DoWhile, its continue set"):
        compile_program(Sequence((DoWhile(Write((5,)), dot), Write((3,)))), sets)
    with pytest.raises(OperatorProgramError, match="exactly one of allow= and deny="):
        compile_program(Wait(digits), sets)
    with pytest.raises(OperatorProgramError, match="Write of no token"):
        compile_program(Write(()), sets)
    with pytest.raises(OperatorProgramError, match="DoWhile body must read a token"):
        compile_program(DoWhile(Sequence((End(),)), dot), sets)
    with pytest.raises(OperatorProgramError, match="not a set of this vocabulary"):
        compile_program(Wait(999, allow=digits), sets)
    with pytest.raises(OperatorProgramError, match="not an operator"):
        compile_program(Sequence(("Write",)), sets)


def test_the_worked_example(info, sets):
    r"""WGrammar's worked example \d+(\.\d+)* in this reading, with a number token for \d+: a
    number, then a period and a number any number of times (DoWhile: the continue token is read,
    then the body again), then the end."""
    digits, dot = sets.chars("[0-9]"), sets.ids(3)
    program = Sequence((DoWhile(Wait(digits, allow=sets.ids()), dot), End()))
    m = OperatorMatcher(compile_program(program, sets))
    assert np.flatnonzero(m.compute_bool_mask()).tolist() == [0, 1, 2]
    assert m.accept_token(2) and np.flatnonzero(m.compute_bool_mask()).tolist() == [3, STOP]
    assert not m.accept_token(0) and m.accept_token(3) and m.accept_token(1)
    assert m.is_completed() and m.accept_token(STOP) and m.is_terminated()
    with pytest.raises(MatcherError, match="terminated"):
        m.compute_bool_mask()
    m.rollback(2)
    assert not m.is_terminated() and np.flatnonzero(m.compute_bool_mask()).tolist() == [0, 1, 2]
    with pytest.raises(MatcherError, match="accept_token"):
        m.accept_string("1")
    assert not m.accept_token(7) and not m.accept_token(-1) and not m.accept_token(len(VOCAB))
    with pytest.raises(TypeError):
        m.accept_token("1")


# ---- generated programs against Earley and the oracle ------------------------------------

def regular_ids(info):
    return [t for t, b in enumerate(info.decoded_vocab) if b and t not in info.stop_token_ids]


@st.composite
def operator_programs(draw, regular: list, depth: int = 3):
    """A random operator program over token ids `regular` (sets as id lists, interned later)."""
    subset = st.lists(st.sampled_from(regular), max_size=4, unique=True).map(tuple)

    def op(d):
        kinds = ["write", "wait", "end"] + (["ifelse", "seq", "dowhile", "choice", "star"] if d > 0 else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "write":
            return ("write", tuple(draw(st.lists(st.sampled_from(regular), min_size=1, max_size=3))))
        if kind == "wait":
            body = op(d - 1) if d > 0 and draw(st.booleans()) else None
            return ("wait", draw(subset), draw(st.booleans()), draw(subset), body)
        if kind == "end":
            return ("end",)
        if kind == "ifelse":
            both = draw(st.lists(st.sampled_from(regular), min_size=2, max_size=6, unique=True))
            cut = draw(st.integers(1, len(both) - 1))
            branches = [op(d - 1) if draw(st.booleans()) else None for _ in range(2)]
            return ("ifelse", tuple(both[:cut]), tuple(both[cut:]), *branches)
        if kind == "seq":
            return ("seq", tuple(op(d - 1) for _ in range(draw(st.integers(1, 3)))))
        if kind == "choice":
            return ("choice", tuple(op(d - 1) if draw(st.integers(0, 4)) else None for _ in range(draw(st.integers(1, 3)))))
        if kind == "star":
            return ("star", ("write", (draw(st.sampled_from(regular)),)) if draw(st.booleans()) else op(d - 1))
        return ("dowhile", ("write", (draw(st.sampled_from(regular)),)) if draw(st.booleans()) else op(d - 1),
                draw(subset))

    return op(depth)


def build(spec, sets):
    kind = spec[0]
    if kind == "write":
        return Write(spec[1])
    if kind == "wait":
        _, wait, allow, other, body = spec
        free = {"allow": sets.intern(other)} if allow else {"deny": sets.intern(other)}
        return Wait(sets.intern(wait), body=None if body is None else build(body, sets), **free)
    if kind == "end":
        return End()
    if kind == "ifelse":
        return IfElse(sets.intern(spec[1]), sets.intern(spec[2]), *(None if b is None else build(b, sets)
                                                                   for b in spec[3:]))
    if kind == "seq":
        return Sequence(tuple(build(p, sets) for p in spec[1]))
    if kind == "choice":
        return Choice(tuple(None if p is None else build(p, sets) for p in spec[1]))
    if kind == "star":
        return Star(build(spec[1], sets))
    return DoWhile(build(spec[1], sets), sets.intern(spec[2]))


WALK_INFO = xgr.TokenizerInfo(VOCAB, stop_token_ids=[STOP])


@settings(max_examples=examples(150), deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=operator_programs(regular_ids(WALK_INFO)), seed=st.integers(0, 2**16))
def test_operator_masks_are_earleys_and_the_oracles_along_walks(spec, seed):
    sets = TokenSets.for_vocabulary(WALK_INFO)
    program = build(spec, sets)
    try:
        compiled = compile_program(program, sets)
    except OperatorProgramError:
        return  # (a program with two ways to read a token: refused, tested above)
    ir = lower_to_ir(program, sets)
    earley = xgr.GrammarMatcher(compile_ir_grammar(Grammar.from_ir(ir), WALK_INFO))
    oracle = OracleMatcher(ir, WALK_INFO)
    cached, uncached = OperatorMatcher(compiled), OperatorMatcher(compiled, use_cache=False)
    rng = random.Random(seed)
    for _ in range(8):
        want = oracle.bool_mask()
        for m in (cached, uncached, earley):
            assert (m.compute_bool_mask() == want).all(), (print_grammar(ir), oracle.prefix)
        assert cached.is_completed() == oracle.is_completed() == earley.is_completed()
        allowed = np.flatnonzero(want).tolist()
        refused = [t for t in range(len(VOCAB)) if t not in allowed]
        if refused:  # a refused token leaves every state as it was
            t = rng.choice(refused)
            assert not cached.accept_token(t) and not earley.accept_token(t)
        if not allowed:
            break
        t = rng.choice(allowed)
        for m in (cached, uncached, earley, oracle):
            assert m.accept_token(t)
        if t == STOP:
            assert cached.is_terminated()
            for m in (cached, uncached, earley, oracle):
                m.rollback(1)
        elif rng.random() < 0.25:
            for m in (cached, uncached, earley, oracle):
                m.rollback(1)


# ---- the global cache ---------------------------------------------------------------------

def test_cache_storage_is_adaptive_and_exact():
    n = 200
    words = np.zeros((n + 31) // 32, dtype=np.uint32)
    for allowed, kind in (([3, 150], ALLOW), (list(range(n))[:-2], DENY), (list(range(0, n, 2)), WORDS)):
        words[:] = 0
        for t in allowed:
            words[t >> 5] |= np.uint32(1 << (t & 31))
        entry = _store(words, n, len(allowed))
        assert entry[0] == kind
        out = np.full_like(words, 0x5A5A5A5A)
        assert _expand(entry, out, n) == len(allowed)
        assert (out == words).all()


def test_the_cache_counts_hits_and_keeps_its_bound(info):
    sets = TokenSets(info)
    cache = GlobalMaskCache(sets, limit_bytes=4)  # room for one word (one mask of this vocabulary)
    out = np.zeros(sets.n_words, dtype=np.uint32)
    a, b = ((sets.ids(0),), False), ((sets.ids(1), sets.ids(3)), True)
    cache.fill(a, out)
    cache.fill(a, out)
    assert (cache.hits, cache.misses) == (1, 1)
    cache.fill(b, out)  # over the bound: the oldest goes first
    assert cache.evictions == 1 and cache.bytes == 4 and len(cache.stats()) == 6
    want = np.zeros_like(out)
    cache.compute(b, want)
    cache.fill(b, out)
    assert (out == want).all()
    with pytest.raises(ValueError):
        GlobalMaskCache(sets, limit_bytes=-1)


# ---- the EBNF calls -------------------------------------------------------------------------

# (their intrinsic contract: tests/test_intrinsic_contract.py, with the built-in calls)


def test_a_call_lowers_as_its_operator(info, sets):
    """`Wait` and `DoWhile` written as calls read the language of the operators."""
    from xg2ref.grammar.printer import print_grammar as show

    grammar = xgr.Grammar.from_ebnf('root ::= DoWhile(item, (3,)) Write(11)\nitem ::= Wait((0, 1), allow=(5, 9))')
    assert "ExcludeToken" not in show(grammar.ir) and "Token(5, 9)*" in show(grammar.ir)
    program = Sequence((DoWhile(Wait(sets.ids(0, 1), allow=sets.ids(5, 9)), sets.ids(3)), Write((11,))))
    ops = OperatorMatcher(compile_program(program, sets), use_cache=False)
    earley = xgr.GrammarMatcher(compile_ir_grammar(grammar, info))
    for t in [5, 9, 0, 3, 1, 11, STOP]:
        assert (ops.compute_bool_mask() == earley.compute_bool_mask()).all()
        assert ops.accept_token(t) and earley.accept_token(t)


def test_the_calls_are_refused_by_name():
    for ebnf, message in [('root ::= Wait((1,))', "exactly one of allow= and deny="),
                          ('root ::= IfElse((1, 2), (2,))', "token 2 is in both sets"),
                          ('root ::= Write()', "one or more token ids"),
                          ('root ::= DoWhile((1,), (2,))', "a rule name"),
                          ('root ::= Write("a")', "token ids")]:
        with pytest.raises(EBNFError, match=message):
            xgr.Grammar.from_ebnf(ebnf)


def test_a_rule_named_write_is_a_rule_until_the_package_is_imported():
    import subprocess
    import sys

    code = ("import xg2ref as xgr\n"
            "g = xgr.Grammar.from_ebnf('root ::= Write \"!\"\\nWrite ::= \"a\"')\n"
            "print(sorted(r.name for r in g.ir.rules))\n"
            "import xg2ref.baselines.wgrammar\n"
            "print(xgr.Grammar.from_ebnf('root ::= Write(3)').ir.rules[0].body)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "['Write', 'root']" and out[1] == "TokenSet(ids=(3,), exclude=False)"


# ---- templates ------------------------------------------------------------------------------

TEMPLATE_VOCAB = ["<", "s>", "<s>", "a", "b", " ", "ab", "</s>", "1", ".", "\"", "[", "]", ",", "{", "}", ":", "x",
                  "<e>", "</e>", "\"a", "1.", "b\""]
TEMPLATE_STOP = 7
TEMPLATE = {
    "doc": "$sections",
    "section": '"<s>" $id " " [^<]* "<e>"',
    "refs": '"[" $ref ("," $ref)* "]"',
    "entry": '"{" "\\"a\\":" $topic "," $refs "}" [ab]?',
}


def template_text(rules: dict) -> str:
    return "\n".join(f"{name} ::= {body}" for name, body in rules.items())


def written_out(request, rules: dict, out: dict) -> str:
    """The EBNF of `request` with every argument written in place (a rule per instance)."""
    import json as _json

    if isinstance(request, str):
        return _json.dumps(request)
    if isinstance(request, list):
        return "(" + " ".join(written_out(v, rules, out) for v in request) + ")" if request else '""'
    if "one_of" in request:
        return "(" + " | ".join(_json.dumps(v) for v in request["one_of"]) + ")"
    body = rules[request["structure"]]
    for name, value in request.get("args", {}).items():
        body = body.replace("$" + name, written_out(value, rules, out))
    out[f"i{len(out)}"] = body
    return f"i{len(out) - 1}"


@st.composite
def template_requests(draw):
    ident = st.text("ab1.", min_size=1, max_size=3)
    enum = st.lists(st.sampled_from(['"a"', '"b"', '"ab"', "1", "1.1", "x"]), min_size=1, max_size=4, unique=True)
    kind = draw(st.sampled_from(["doc", "refs", "entry"]))
    if kind == "doc":
        return {"structure": "doc", "args": {"sections": [{"structure": "section", "args": {"id": draw(ident)}}
                                                          for _ in range(draw(st.integers(1, 3)))]}}
    refs = {"structure": "refs", "args": {"ref": {"one_of": draw(enum)}}}
    if kind == "refs":
        return refs
    return {"structure": "entry", "args": {"topic": {"one_of": draw(enum)}, "refs": refs}}


TEMPLATE_INFO = xgr.TokenizerInfo(TEMPLATE_VOCAB, stop_token_ids=[TEMPLATE_STOP])


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(request=template_requests(), seed=st.integers(0, 2**16))
def test_instantiating_a_template_is_compiling_the_written_out_program(request, seed):
    """Factory.instantiate (translated offline, arguments put in online) gives the masks of the
    template written out with its arguments, of Earley over the lowering, and of the oracle."""
    from xg2ref.baselines.wgrammar.templates import Factory

    sets = TokenSets.for_vocabulary(TEMPLATE_INFO)
    factory = Factory.from_text(template_text(TEMPLATE), TEMPLATE_INFO)
    rules: dict = {}
    root = written_out(request, TEMPLATE, rules)
    plain = Factory.from_text(f"root ::= {root}\n" + template_text(rules), TEMPLATE_INFO)
    assert plain.structures["root"].params == ()
    program = factory.instantiate(request)
    again = Factory.from_text(print_grammar(factory.written_out(request)), TEMPLATE_INFO)  # the package's own
    ir = lower_to_ir(program, sets)
    matchers = [OperatorMatcher(compile_program(program, sets)),
                OperatorMatcher(plain.compile({"structure": "root"})),
                OperatorMatcher(again.compile({"structure": "root"})),
                xgr.GrammarMatcher(compile_ir_grammar(Grammar.from_ir(ir), TEMPLATE_INFO))]
    oracle = OracleMatcher(ir, TEMPLATE_INFO)
    rng = random.Random(seed)
    for step in range(12):
        want = matchers[0].compute_bool_mask()
        for m in matchers[1:]:
            assert (m.compute_bool_mask() == want).all(), (request, step)
        if step < 4:
            assert (oracle.bool_mask() == want).all(), (request, step)
        allowed = [t for t in np.flatnonzero(want) if t != TEMPLATE_STOP]
        if not allowed:
            assert want[TEMPLATE_STOP] and all(m.is_completed() for m in matchers)
            break
        t = int(rng.choice(allowed))
        assert all(m.accept_token(t) for m in matchers) and oracle.accept_token(t)


def test_templates_and_requests_are_refused_by_name():
    from xg2ref.baselines.wgrammar.templates import Factory

    factory = Factory.from_text(template_text(TEMPLATE), TEMPLATE_INFO)
    for request, message in [({"structure": "nope"}, "no structure 'nope'"),
                             ({"structure": "section", "args": {}}, "no argument 'id'"),
                             ({"structure": "section", "args": {"id": "1", "other": "x"}}, "takes"),
                             ({"structure": "section", "args": {"id": 3}}, "a request value is"),
                             ("{not json", "not JSON"),
                             ({"structure": "section", "args": {"id": "q"}}, "no regular token spells")]:
        with pytest.raises(OperatorProgramError, match=message):
            factory.instantiate(request)
    for text, message in [('r ::= "a" r | "b"', "recursive"), ('r ::= "a" $', "parameter name"),
                          ('r ::= [a]{2,3}', "counted character class"), ('r ::= "a"{1,100}', "more than 64")]:
        with pytest.raises(OperatorProgramError, match=message):
            Factory.from_text(text, TEMPLATE_INFO)


def test_an_enumeration_that_begins_alike_is_factored(info):
    """One of '"a"', '"b"', '"ab"', '1': '"a"' and '"ab"' both start with the token '"a' (the
    greedy tokenization), a choice that is deterministic once the two share it."""
    from xg2ref.baselines.wgrammar.templates import Factory

    factory = Factory.from_text('r ::= "[" $x "]"', TEMPLATE_INFO)
    m = OperatorMatcher(factory.compile({"structure": "r", "args": {"x": {"one_of": ['"a"', '"b"', '"ab"', "1"]}}}))
    texts = lambda: [TEMPLATE_VOCAB[t] for t in np.flatnonzero(m.compute_bool_mask())]  # noqa: E731
    assert m.accept_token(11) and texts() == ["1", "\"", "\"a"]
    assert m.accept_token(20) and texts() == ["\"", "b\""]
    assert m.accept_token(22) and texts() == ["]"]


# ---- the online regex path ------------------------------------------------------------------

REGEX_VOCAB = ["a", "b", "1", ".", "ab", "ba", "11", "a.", "1.1", "aab", ".b", "x", "</s>", "", "b1"]
REGEX_STOP = 12
REGEX_INFO = xgr.TokenizerInfo(REGEX_VOCAB, stop_token_ids=[REGEX_STOP])


@st.composite
def regexes(draw, depth: int = 3):
    """A regex of the online subset over the letters a, b, 1, '.'."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(["a", "b", "1", r"\.", "ab", "[ab]", "[0-9]", "[a-b.]", "(a|b1)"]))
    kind = draw(st.sampled_from(["cat", "alt", "star", "plus", "opt", "count"]))
    inner = draw(regexes(depth - 1))
    if kind == "cat":
        return inner + draw(regexes(depth - 1))
    if kind == "alt":
        return f"({inner}|{draw(regexes(depth - 1))})"
    if kind == "count" and not inner.startswith("["):
        return f"({inner}){{1,2}}"
    return f"({inner})" + {"star": "*", "plus": "+", "opt": "?", "count": "?"}[kind]


@settings(max_examples=examples(120), deadline=None, suppress_health_check=list(HealthCheck))
@given(pattern=regexes(), seed=st.integers(0, 2**16))
def test_the_online_regex_path_reads_only_what_the_regex_matches(pattern, seed):
    """Soundness: every token sequence the online program reads is a prefix of a match (xg2ref's
    byte-level matcher over the same regex takes its bytes) and, where the program may stop, a
    full match (Python's re agrees)."""
    import re

    from xg2ref.baselines.wgrammar import compile_regex

    program = compile_regex(pattern, REGEX_INFO)
    ops = OperatorMatcher(program, use_cache=False)
    exact = xgr.GrammarMatcher(xgr.GrammarCompiler(REGEX_INFO).compile_grammar(xgr.Grammar.from_regex(pattern)))
    rng, text = random.Random(seed), b""
    for _ in range(10):
        if ops.is_completed():
            assert exact.is_completed() and re.fullmatch(pattern, text.decode()), (pattern, text)
        allowed = [t for t in np.flatnonzero(ops.compute_bool_mask()) if t != REGEX_STOP]
        if not allowed:
            break
        t = int(rng.choice(allowed))
        assert ops.accept_token(t) and exact.accept_string(REGEX_VOCAB[t]), (pattern, text, REGEX_VOCAB[t])
        text += REGEX_VOCAB[t].encode()


def test_first_match_and_coverage():
    r"""`a*a(b|1)` in WGrammar's reading: an 'a' always leaves the loop, so 'a' 'a' 'b' is not
    taken (the regex matches it) and 'a' 'b' is; without first match the program is refused."""
    from xg2ref.baselines.wgrammar import compile_regex, coverage

    program = compile_regex("a*a(b|1)", REGEX_INFO)
    ids = {v: i for i, v in enumerate(REGEX_VOCAB)}
    assert coverage(program, [[ids["a"], ids["b"]]]) == 1.0
    assert coverage(program, [[ids["a"], ids["a"], ids["b"]], [ids["a"], ids["b"]]]) == 0.5
    with pytest.raises(OperatorProgramError, match="Lookahead"):
        compile_regex("(?=a)b", REGEX_INFO)
    with pytest.raises(OperatorProgramError, match="counted character class"):
        compile_regex("[ab]{2}", REGEX_INFO)
    with pytest.raises(OperatorProgramError, match="two ways"):
        compile_program(Sequence((Star(Write((0,))), Write((0,)))), TokenSets.for_vocabulary(REGEX_INFO))


@settings(max_examples=examples(30), deadline=None, suppress_health_check=list(HealthCheck))
@given(request=template_requests(), seed=st.integers(0, 2**16))
def test_the_written_out_constraint_as_a_regex_reads_the_same_bytes(request, seed):
    """`regex_of(written_out(request))`, the online path's input, has the written-out grammar's
    language: sampled sentences of the one are sentences of the other, and edits of them agree."""
    from xg2ref.baselines.wgrammar.templates import Factory, regex_of
    from xg2ref.oracle.recognizer import Recognizer
    from xg2ref.oracle.strategies import mutate, sentences

    ir = Factory.from_text(template_text(TEMPLATE), TEMPLATE_INFO).written_out(request)
    regex_ir = Grammar.from_regex(regex_of(ir)).ir
    grammar, regex = Recognizer(ir), Recognizer(regex_ir)
    rng = random.Random(seed)
    for _ in range(5):
        text = sentences(ir, rng)
        assert text is not None and regex.is_sentence(text)
        for _ in range(3):
            text = mutate(text, rng, alphabet=b'ab1.<>"')
            assert grammar.is_sentence(text) == regex.is_sentence(text), (regex_of(ir), text)


# ---- the bench's templates ------------------------------------------------------------------

WORKLOAD_VOCAB = ["{", "}", "[", "]", "\"", ", ", ": ", "\"a", "b\"", "a", "b", " ", "1", "2", "-", ".", "true",
                  "false", "null", "<sec>", "<pad>", "</sec>\n", "s", "_", "x", "\"topic\": [", "\"reference\": [",
                  "{\"topic\": [", "], \"reference\": [", "]}", "</s>", "", "1.", ".1"]
WORKLOAD_INFO = xgr.TokenizerInfo(WORKLOAD_VOCAB, stop_token_ids=[WORKLOAD_VOCAB.index("</s>")])


def workload_requests():
    """Requests of the bench's three templates (xg2ref/tools/bench/wgrammar_workloads.py) that
    this small vocabulary can spell."""
    from xg2ref.tools.bench.wgrammar_workloads import json_request

    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {"type": "integer"}},
                                               "x": {"enum": ["a", "b", 1]}, "s": {"type": "number"},
                                               "ab": {"type": "boolean"}, "bb": {"type": "null"}}}
    return [("json", json_request(schema)),
            ("outline", {"structure": "document", "args": {"sections": [
                {"structure": "section", "args": {"id": "s_1"}}, {"structure": "section", "args": {"id": "s_2"}}]}}),
            ("lookup", {"structure": "lookup", "args": {"entry": {"structure": "entry", "args": {
                "topic": {"one_of": ["1", "2", "12"]}, "ref": {"one_of": ['"1"', '"1.1"', '"2"']}}}}})]


@pytest.mark.parametrize("index", range(3))
@settings(max_examples=examples(12), deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**16))
def test_the_bench_templates_are_exact(index, seed):
    """Every template of the bench's workloads: the executor's masks (with and without the global
    cache) equal Earley's over the lowering at every step of walks with rollbacks, and the
    oracle's at the first steps; instantiating equals compiling the written-out request."""
    from xg2ref.baselines.wgrammar.templates import Factory
    from xg2ref.tools.bench.wgrammar_workloads import JSON_TEMPLATE, LOOKUP_TEMPLATE, OUTLINE_TEMPLATE

    name, request = workload_requests()[index]
    factory = Factory.from_text({"json": JSON_TEMPLATE, "outline": OUTLINE_TEMPLATE, "lookup": LOOKUP_TEMPLATE}[name],
                                WORKLOAD_INFO)
    sets = TokenSets.for_vocabulary(WORKLOAD_INFO)
    program = factory.instantiate(request)
    ir = lower_to_ir(program, sets)
    written = Factory.from_text(print_grammar(factory.written_out(request)), WORKLOAD_INFO).compile({"structure": "root"})
    matchers = [OperatorMatcher(compile_program(program, sets)), OperatorMatcher(compile_program(program, sets), use_cache=False),
                OperatorMatcher(written), xgr.GrammarMatcher(compile_ir_grammar(Grammar.from_ir(ir), WORKLOAD_INFO))]
    oracle = OracleMatcher(ir, WORKLOAD_INFO)
    rng = random.Random(seed)
    stop = WORKLOAD_VOCAB.index("</s>")
    for step in range(30):
        want = matchers[0].compute_bool_mask()
        for m in matchers[1:]:
            assert (m.compute_bool_mask() == want).all(), (name, step)
        if step < 3:
            assert (oracle.bool_mask() == want).all(), (name, step)
        allowed = [int(t) for t in np.flatnonzero(want) if t != stop]
        if not allowed:
            break
        t = rng.choice(allowed)
        assert all(m.accept_token(t) for m in matchers) and oracle.accept_token(t)
        if rng.random() < 0.2:
            for m in matchers + [oracle]:
                m.rollback(1)
