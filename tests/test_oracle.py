"""The oracle: its recognizer on hand-written grammars, its masks, and its own invariants.

Grammars are built as IR directly, so these tests depend on nothing but `grammar/ir.py`.
`want` is an answer computed a second, independent way: by enumerating the language up to a
length bound (`enumerate_words`), or from the definitions themselves.
"""

import itertools
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xg2ref.grammar.ir import ByteString, CharClass, Choice, GrammarIR, Repeat, Rule, RuleRef, Sequence, walk
from xg2ref.oracle import MAX_INPUT_BYTES, Recognizer, brute_force_accepts, brute_force_mask, brute_force_next_bytes
from xg2ref.oracle.recognizer import codepoints_starting_with
from xg2ref.oracle.strategies import byte_strings, grammars, mutate, sentences, vocabularies

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


def G(root, **rules) -> GrammarIR:
    """A grammar from keyword rules; `root` is the root rule's body."""
    return GrammarIR((Rule("root", root),) + tuple(Rule(n, b) for n, b in rules.items()))


def S(*items):
    return Sequence(tuple(items))


def C(*alternatives):
    return Choice(tuple(alternatives))


B, R = ByteString, RuleRef
EPS = B(b"")


def cc(*ranges, negated=False):
    return CharClass(tuple((ord(r[0]), ord(r[-1])) for r in ranges), negated)


# name: (grammar, sentences, prefixes that are not sentences, strings that are not prefixes)
CASES = {
    "left recursion": (
        G(C(S(R("root"), B(b"+"), R("t")), R("t")), t=cc("09")),
        [b"1", b"1+2", b"1+2+3"], [b"", b"1+", b"1+2+"], [b"+", b"1++", b"12", b"1+a"]),
    "right recursion": (
        G(C(S(B(b"a"), R("root")), B(b"b"))),
        [b"b", b"ab", b"aaab"], [b"", b"a", b"aaa"], [b"ba", b"c", b"abb"]),
    "nullable a ::= '' | a a": (
        G(C(EPS, S(R("root"), R("root")))),
        [b""], [], [b"a", b"\x00"]),
    "nullable with a letter": (
        G(C(EPS, S(R("root"), R("root")), B(b"x"))),
        [b"", b"x", b"xxx"], [], [b"y", b"xy"]),
    "mutual recursion": (
        G(C(S(B(b"("), R("list"), B(b")")), B(b"n")), list=C(R("root"), S(R("root"), B(b","), R("list")))),
        [b"n", b"(n)", b"(n,(n))", b"((n),n)"], [b"(", b"((", b"(n,", b"(n,(n)"], [b"()", b"(n,)", b"n)", b"nn"]),
    "ambiguity": (
        G(C(S(R("root"), R("root")), B(b"a"), B(b"aa"))),
        [b"a", b"aa", b"aaaaa"], [b""], [b"b", b"ab"]),
    "unproductive x ::= 'a' x": (
        G(S(B(b"a"), R("root"))),
        [], [], [b"", b"a", b"aa"]),
    "unproductive alternative": (
        G(C(R("x"), B(b"b")), x=S(B(b"a"), R("x"))),
        [b"b"], [b""], [b"a", b"ab"]),
    "empty language mid-sequence": (
        G(S(B(b"a"), CharClass(()), B(b"b"))),
        [], [], [b"", b"a", b"ab"]),
    "epsilon root": (
        G(EPS),
        [b""], [], [b"a"]),
    "repeat {0,0}": (
        G(S(Repeat(B(b"a"), 0, 0), B(b"b"))),
        [b"b"], [b""], [b"a", b"ab", b"bb"]),
    "repeat {2,3}": (
        G(Repeat(B(b"ab"), 2, 3)),
        [b"abab", b"ababab"], [b"", b"a", b"aba", b"ababa"], [b"abababa", b"b", b"abb"]),
    "repeat of nullable body": (
        G(Repeat(Repeat(B(b"a"), 0, 1), 2, 3)),
        [b"", b"a", b"aa", b"aaa"], [], [b"aaaa", b"b"]),
    "repeat with a large minimum of a nullable body": (
        G(S(Repeat(C(EPS, B(b"a")), 1000, None), B(b"b"))),
        [b"b", b"aaab"], [b"", b"aaaa"], [b"bb", b"ba"]),
    "unbounded repeat of an empty language": (
        G(S(Repeat(R("x"), 0, None), B(b"b")), x=S(B(b"a"), R("x"))),
        [b"b"], [b""], [b"a", b"ab"]),
    "plus in sequence": (
        G(S(Repeat(cc("az"), 1, None), B(b";"))),
        [b"a;", b"xyz;"], [b"", b"a", b"abc"], [b";", b"a;;", b"A;"]),
    "multibyte class": (
        G(cc("àé")),
        [b"\xc3\xa0", b"\xc3\xa9"], [b"", b"\xc3"], [b"\xc4", b"\xc3\xaa", b"\xc3\x9f", b"\xc3\xa9\xa9", b"a"]),
    "three- and four-byte classes": (
        G(S(cc("一"), cc("😀😁"))),
        ["一😀".encode(), "一😁".encode()], [b"\xe4", b"\xe4\xb8", "一".encode(), "一".encode() + b"\xf0\x9f\x98"],
        [b"\xe4\xb9", "一😂".encode(), "一".encode() + b"\xf0\x9f\x99"]),
    "negated class": (
        G(cc("a", negated=True)),
        [b"b", b"\x00", b"\xc3\xa9", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf4\x8f\xbf\xbf", b"\xef\xbf\xbf"],
        [b"", b"\xc2", b"\xe0\xa0", b"\xed", b"\xf4\x8f\xbf"],
        [b"a", b"\x80", b"\xc0", b"\xc1\xbf", b"\xe0\x80", b"\xf0\x80", b"\xf4\x90", b"\xf5", b"\xf8", b"bb"]),
    "surrogates only": (
        G(CharClass(((0xD800, 0xDFFF),))),
        [b"\xed\xa0\x80", b"\xed\xbf\xbf"], [b"\xed", b"\xed\xa0"], [b"\xed\x9f", b"\xee", b"\xed\x80\x80"]),
    "empty class []": (
        G(CharClass(())),
        [], [], [b"", b"a"]),
    "any codepoint [^]": (
        G(CharClass((), negated=True)),
        [b"a", b"\x7f", b"\xdf\xbf", b"\xed\xa0\x80", b"\xf0\x90\x80\x80"], [b"", b"\xf0\x90\x80"],
        [b"\xff", b"\xc0\x80", b"aa"]),
    "lookahead ignored": (
        GrammarIR((Rule("root", S(R("x"), B(b"b"))), Rule("x", B(b"a"), lookahead=B(b"c")))),
        [b"ab"], [b"a"], [b"ac", b"abc"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_recognizer_table(name):
    ir, accepted, prefixes, rejected = CASES[name]
    rec = Recognizer(ir)
    for s in accepted:
        assert rec.is_sentence(s), s
        assert all(rec.is_prefix(s[:k]) for k in range(len(s) + 1)), s
    for s in prefixes:
        assert rec.is_prefix(s), s
        assert not rec.is_sentence(s), s
    for s in rejected:
        assert not rec.is_prefix(s), s
        assert not rec.is_sentence(s), s
    assert rec.language_is_empty == (not accepted and not prefixes)


def test_partial_utf8_next_bytes():
    assert brute_force_next_bytes(G(cc("àé")), b"") == {0xC3}
    assert brute_force_next_bytes(G(cc("àé")), b"\xc3") == set(range(0xA0, 0xAA))
    assert brute_force_next_bytes(G(cc("àé")), b"\xc4") == set()
    assert brute_force_next_bytes(G(CharClass((), negated=True)), b"\xf4") == set(range(0x80, 0x90))


@pytest.mark.parametrize("bad", [
    GrammarIR((Rule("root", R("missing")),)),
    GrammarIR((Rule("start", B(b"a")),)),
    GrammarIR((Rule("root", B(b"a")), Rule("root", B(b"b")))),
    G(Repeat(B(b"a"), 3, 2)),
    G(CharClass(((0x62, 0x61),))),
])
def test_invalid_grammars_raise(bad):
    with pytest.raises(ValueError):
        Recognizer(bad)


def test_input_longer_than_the_limit_raises():
    rec = Recognizer(G(Repeat(B(b"a"), 0, None)))
    assert rec.is_sentence(b"a" * (MAX_INPUT_BYTES // 16))
    with pytest.raises(ValueError, match="MAX_INPUT_BYTES"):
        rec.is_prefix(b"a" * (MAX_INPUT_BYTES + 1))


@given(st.integers(0, 0x10FFFF), st.sampled_from([0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xD800, 0xDFFF, 0xE000,
                                                 0xFFFF, 0x10000, 0x10FFFF]), st.booleans())
def test_codepoints_starting_with_agrees_with_python(cp, boundary, near):
    cp = min(max(boundary + cp % 5 - 2, 0), 0x10FFFF) if near else cp
    encoded = chr(cp).encode("utf-8", "surrogatepass")
    for k in range(1, len(encoded) + 1):
        lo, hi = codepoints_starting_with(encoded[:k])
        assert lo <= cp <= hi
        for end in (lo, hi):
            assert chr(end).encode("utf-8", "surrogatepass").startswith(encoded[:k])
        for outside in (lo - 1, hi + 1):
            if 0 <= outside <= 0x10FFFF:
                assert not chr(outside).encode("utf-8", "surrogatepass").startswith(encoded[:k])


def test_brute_force_mask_partitions_the_vocabulary():
    ir = G(S(B(b"a"), Repeat(B(b"b"), 0, 1)))
    vocab = [b"a", b"b", b"ab", b"", b"</s>", b"bb", b"<eos>"]
    stop, special = [4, 6], [3, 6]
    have = brute_force_mask(ir, b"", vocab, stop, special, vocab_size=9)
    assert have.tolist() == [True, False, True, False, False, False, False, False, False]
    have = brute_force_mask(ir, b"a", vocab, stop, special, vocab_size=9)
    assert have.tolist() == [False, True, False, False, True, False, True, False, False]
    have = brute_force_mask(Recognizer(ir), b"c", vocab, stop, special)
    assert have.shape == (7,) and not have.any()
    assert brute_force_accepts(ir, b"ab") and not brute_force_accepts(ir, b"abb")
    with pytest.raises(ValueError):
        brute_force_mask(ir, b"", vocab, vocab_size=3)


def enumerate_words(ir: GrammarIR, alphabet: bytes, bound: int) -> set[bytes]:
    """The root language restricted to strings over `alphabet` of length <= `bound`.

    A least fixpoint over rules of truncated languages; `b{m,M}` takes at most max(m, bound)
    copies, since more copies of a length-limited word include empty ones that can be dropped.
    """
    def cat(xs, ys):
        return {x + y for x in xs for y in ys if len(x) + len(y) <= bound}

    def words(e, env):
        if isinstance(e, ByteString):
            return {e.value} if len(e.value) <= bound else set()
        if isinstance(e, CharClass):
            return {bytes([c]) for c in alphabet if any(lo <= c <= hi for lo, hi in e.codepoint_ranges())}
        if isinstance(e, Sequence):
            out = {b""}
            for item in e.items:
                out = cat(out, words(item, env))
            return out
        if isinstance(e, Choice):
            return set().union(*(words(a, env) for a in e.alternatives))
        if isinstance(e, Repeat):
            body, layer, out = words(e.body, env), {b""}, set()
            top = max(e.min, bound) if e.max is None else min(e.max, max(e.min, bound))
            for count in range(top + 1):
                if count >= e.min:
                    out |= layer
                layer = cat(layer, body)
            return out
        return env[e.name]

    env = {r.name: set() for r in ir.rules}
    while True:
        new = {r.name: words(r.body, env) for r in ir.rules}
        if new == env:
            return env[ir.root]
        env = new


@SETTINGS
@given(grammars(max_rules=3, max_depth=3))
def test_sentence_verdicts_match_the_enumerated_language(ir):
    alphabet, bound = b"abc", 4
    want_words = enumerate_words(ir, alphabet, bound)
    want_prefixes = {w[:k] for w in want_words for k in range(len(w) + 1)}
    rec = Recognizer(ir)
    for n in range(bound + 1):
        for s in map(bytes, itertools.product(alphabet, repeat=n)):
            assert rec.is_sentence(s) == (s in want_words), s
            if s in want_prefixes:
                assert rec.is_prefix(s), s


@SETTINGS
@given(grammars(), st.randoms(use_true_random=False))
def test_sampled_sentences_and_their_prefixes_are_accepted(ir, rng):
    rec = Recognizer(ir)
    s = sentences(ir, rng)
    if s is None:
        assert rec.language_is_empty and not rec.is_prefix(b"")
        return
    assert rec.is_sentence(s), s
    assert all(rec.is_prefix(s[:k]) for k in range(len(s) + 1)), s


@SETTINGS
@given(grammars(lookaheads=True), st.one_of(byte_strings(b"abc", 6), st.binary(max_size=5)))
def test_skipping_dead_nodes_changes_no_fact(ir, data):
    """At each position the table skips the plain nodes whose words cannot start with the byte
    there (Recognizer._dead_at); every fact it then holds equals the full fixpoint's."""
    pruned, full = Recognizer(ir), Recognizer(ir)
    full._dead_at = lambda byte: [False] * len(full._kind)
    assert pruned._chart(data)[1:] == full._chart(data)[1:]


@SETTINGS
@given(grammars(lookaheads=True), byte_strings(b"abc", 5), st.randoms(use_true_random=False))
def test_verdicts_are_consistent(ir, data, rng):
    rec = Recognizer(ir)
    s = sentences(ir, rng)
    for x in [data] + ([mutate(s, rng), s + data] if s is not None else []):
        if rec.is_sentence(x):
            assert rec.is_prefix(x), x
        if rec.is_prefix(x):
            assert rec.is_prefix(x[:-1]), x
            # A viable prefix is a sentence or can take one more byte.
            assert rec.is_sentence(x) or brute_force_next_bytes(rec, x), x
        else:
            assert not brute_force_next_bytes(rec, x), x


@SETTINGS
@given(grammars(), vocabularies(b"abc", 8), st.randoms(use_true_random=False))
def test_brute_force_mask_properties(ir, vocab_spec, rng):
    vocab, stop_ids, special_ids = vocab_spec
    rec = Recognizer(ir)
    s = sentences(ir, rng) or b""
    prefix = s[: rng.randint(0, len(s))]
    have = brute_force_mask(rec, prefix, vocab, stop_ids, special_ids, vocab_size=len(vocab) + 2)
    assert have.dtype == np.bool_ and have.shape == (len(vocab) + 2,)
    assert not have[len(vocab):].any()
    assert not have[special_ids].any()
    assert all(have[t] == rec.is_sentence(prefix) for t in stop_ids)
    for t, token in enumerate(vocab):
        if t not in stop_ids and t not in special_ids:
            assert have[t] == rec.is_prefix(prefix + token), (prefix, token)


@SETTINGS
@given(grammars(lookaheads=True))
def test_generated_grammars_are_canonical_and_closed(ir):
    names = set(ir.rule_names())
    assert ir.root == "root" and "root" in names
    for rule in ir.rules:
        for node in walk(rule.body):
            if isinstance(node, RuleRef):
                assert node.name in names
            if isinstance(node, (Sequence, Choice)):
                kids = node.items if isinstance(node, Sequence) else node.alternatives
                assert len(kids) >= 2
                assert not any(isinstance(k, type(node)) for k in kids)
                if isinstance(node, Sequence):
                    assert EPS not in kids
            if isinstance(node, Repeat):
                assert (node.min, node.max) != (1, 1)
        assert rule.body != EPS
        assert rule.lookahead is None or rule.name != "root"


def test_mutate_makes_one_edit():
    rng = random.Random(7)
    for data in [b"", b"a", b"abc"]:
        for _ in range(50):
            out = mutate(data, rng)
            short, long = sorted((data, out), key=len)
            k = next((i for i in range(len(short)) if short[i] != long[i]), len(short))
            if len(short) == len(long):
                assert short[k + 1:] == long[k + 1:]
            else:
                assert len(long) == len(short) + 1 and short[k:] == long[k + 1:]
