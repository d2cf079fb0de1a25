"""Unordered rules (`any_order=True`): objects of any size, exact (kernels/earley.py, specs/05).

The engine keeps the members seen in its Earley items; the oracle spells the same language out
as plain rules (oracle/unordered.py); `jsonschema` is the third, independent reading.
"""

from __future__ import annotations

import json
import random

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.oracle.brute_force import brute_force_mask
from xg2ref.oracle.recognizer import Recognizer
from xg2ref.testing import _get_matcher_from_grammar, bitmask_to_bool_mask

VOCAB = [b'{"', b'"', b"a", b"b", b"c", b"d", b"z", b'": ', b":", b", ", b",", b" ", b"1", b"12", b"null",
         b'"x"', b"}", b'"}', b"1}", b"</s>"]
STOP = len(VOCAB) - 1
VALUES = {"integer": [0, 12, -1], "string": ["x", ""], "null": [None]}


def _compiled(grammar):
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[STOP])
    return xgr.GrammarCompiler(info, cache_enabled=False).compile_grammar(grammar)


@st.composite
def object_schemas(draw):
    """An object schema of 2-3 declared members (names from a, b, c), some required, with or
    without additional members."""
    names = draw(st.lists(st.sampled_from("abc"), min_size=2, max_size=3, unique=True))
    props = {n: {"type": draw(st.sampled_from(sorted(VALUES)))} for n in names}
    required = [n for n in names if draw(st.booleans())]
    schema = {"type": "object", "properties": props, "required": required}
    extra = draw(st.sampled_from([False, {"type": "null"}, {"type": "integer"}]))
    schema["additionalProperties"] = extra
    return schema


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(object_schemas(), st.booleans(), st.lists(st.integers(0, 10_000), min_size=10, max_size=10),
       st.integers(0, 5))
def test_masks_along_random_walks_equal_the_oracle(schema, any_whitespace, picks, back):
    """At every step of a random walk over the allowed tokens, and again after rolling back,
    the mask equals the brute-force oracle's."""
    grammar = xgr.Grammar.from_json_schema(schema, any_order=True, any_whitespace=any_whitespace)
    oracle = Recognizer(grammar.ir)
    matcher = xgr.GrammarMatcher(_compiled(grammar))
    bitmask = xgr.allocate_token_bitmask(1, len(VOCAB))
    prefixes = [b""]
    masks = []
    for pick in picks:
        matcher.fill_next_token_bitmask(bitmask)
        have = bitmask_to_bool_mask(bitmask, len(VOCAB))[0]
        want = brute_force_mask(oracle, prefixes[-1], VOCAB, stop_token_ids=[STOP])
        assert np.array_equal(have, want), (schema, prefixes[-1])
        masks.append(have)
        allowed = [t for t in np.flatnonzero(have) if t != STOP]
        if not allowed:
            break
        token = allowed[pick % len(allowed)]
        assert matcher.accept_token(int(token))
        prefixes.append(prefixes[-1] + VOCAB[token])
    n = min(back, len(prefixes) - 1)
    if n:
        matcher.rollback(n)
        matcher.fill_next_token_bitmask(bitmask)
        assert np.array_equal(bitmask_to_bool_mask(bitmask, len(VOCAB))[0], masks[len(prefixes) - 1 - n])


@st.composite
def counted_object_schemas(draw):
    """An object schema of `object_schemas` with minProperties and maxProperties (counted by the
    unordered rule's bounded repetition, members.members_in_any_order)."""
    schema = draw(object_schemas())
    lo = draw(st.integers(0, 3))
    schema["minProperties"] = lo
    schema["maxProperties"] = lo + draw(st.integers(0, 2))
    return schema


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(counted_object_schemas(), st.lists(st.integers(0, 10_000), min_size=12, max_size=12))
def test_counted_members_in_any_order_masks_equal_the_oracle(schema, picks):
    """With minProperties / maxProperties beside members in any order, every mask along a random
    walk equals the brute-force oracle's, and a finished walk is an instance jsonschema takes."""
    grammar = xgr.Grammar.from_json_schema(schema, any_order=True)
    oracle = Recognizer(grammar.ir)
    matcher = xgr.GrammarMatcher(_compiled(grammar))
    bitmask = xgr.allocate_token_bitmask(1, len(VOCAB))
    text = b""
    for pick in picks:
        matcher.fill_next_token_bitmask(bitmask)
        have = bitmask_to_bool_mask(bitmask, len(VOCAB))[0]
        assert np.array_equal(have, brute_force_mask(oracle, text, VOCAB, stop_token_ids=[STOP])), (schema, text)
        allowed = [t for t in np.flatnonzero(have) if t != STOP]
        if have[STOP]:
            assert _valid(schema, json.loads(text)), (schema, text)
        if not allowed:
            break
        token = allowed[pick % len(allowed)]
        assert matcher.accept_token(int(token))
        text += VOCAB[token]


def _valid(schema, value) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def _text(members) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in members) + "}"


@pytest.mark.parametrize("width", [12, 40])
def test_wide_objects_take_every_order_and_nothing_else(width):
    """Objects far past the 2^n expansion: every order of a valid member set is taken, a
    repeated member and a missing required one are refused (jsonschema decides validity)."""
    rng = random.Random(width)
    types = ["integer", "string", "null"]
    props = {f"p{i}": {"type": types[i % 3]} for i in range(width)}
    required = [f"p{i}" for i in range(0, width, 3)]
    schema = {"type": "object", "properties": props, "required": required, "additionalProperties": False}
    matcher = _get_matcher_from_grammar(xgr.Grammar.from_json_schema(schema, any_order=True))

    def accepted(text):
        matcher.reset()
        return matcher.accept_string(text) and matcher.is_terminated()

    for _ in range(30):
        names = required + [n for n in props if n not in required and rng.random() < 0.5]
        rng.shuffle(names)
        members = [(n, rng.choice(VALUES[props[n]["type"]])) for n in names]
        assert accepted(_text(members)), _text(members)
        twice = members + [members[rng.randrange(len(members))]]
        rng.shuffle(twice)
        assert not accepted(_text(twice))
        missing = [m for m in members if m[0] != rng.choice(required)]
        assert accepted(_text(missing)) == _valid(schema, dict(missing))


def test_wide_object_compiles_linearly():
    """The grammar has a rule per member (two in JSON: first and after a separator), not one
    per set of members."""
    props = {f"p{i}": {"type": "integer"} for i in range(200)}
    grammar = xgr.Grammar.from_json_schema({"type": "object", "properties": props}, any_order=True)
    assert len(grammar.ir.rules) < 3 * 200 + 10


def test_xml_style_with_many_parameters():
    """The XML styles (structural tags) read parameters in any order too, past 8 of them."""
    props = {f"p{i}": {"type": "integer"} for i in range(10)}
    schema = {"type": "object", "properties": props, "required": ["p3", "p7"]}
    tag = {"type": "structural_tag", "format": {"type": "tag", "begin": "<f>", "end": "</f>", "content": {
        "type": "json_schema", "json_schema": schema, "style": "qwen_xml", "any_order": True}}}
    matcher = _get_matcher_from_grammar(xgr.Grammar.from_structural_tag(json.dumps(tag)))

    def accepted(names):
        matcher.reset()
        body = "".join(f"<parameter={n}>\n{i}\n</parameter>\n" for i, n in enumerate(names))
        return matcher.accept_string(f"<f>{body}</f>") and matcher.is_terminated()

    assert accepted(["p7", "p1", "p3"]) and accepted(["p9", "p8", "p7", "p6", "p5", "p4", "p3"])
    assert not accepted(["p7", "p1"]) and not accepted(["p7", "p3", "p7"])


def test_unordered_rules_in_ebnf_print_and_parse_back():
    text = ('root ::= "[" obj "]"\n'
            'obj[unordered] ::= (x | y) (xs | ys)*\n'
            'x[member=0, required] ::= "x"\n'
            'y[member=1] ::= "y"\n'
            'xs[member=0, required] ::= ",x"\n'
            'ys[member=1] ::= ",y"\n')
    grammar = xgr.Grammar.from_ebnf(text)
    again = xgr.Grammar.from_ebnf(str(grammar))
    matcher = _get_matcher_from_grammar(again)
    for s, want in [("[x]", True), ("[y,x]", True), ("[x,y]", True), ("[y]", False), ("[x,x]", False),
                    ("[x,y,y]", False)]:
        matcher.reset()
        assert (matcher.accept_string(s) and matcher.is_terminated()) == want, s
        assert Recognizer(again.ir).is_sentence(s.encode()) == want, s


def test_a_separator_outside_the_members_is_refused():
    """A member read after bytes of the unordered rule itself could leave an item with no way
    on (the separator read, every member seen): such a rule is refused, with the remedy."""
    text = ('root ::= obj\n'
            'obj[unordered] ::= (x | y) ("," (x | y))*\n'
            'x[member=0] ::= "x"\n'
            'y[member=1] ::= "y"\n')
    with pytest.raises(ValueError, match="put separators inside the member rules"):
        xgr.GrammarCompiler(xgr.TokenizerInfo(VOCAB)).compile_grammar(xgr.Grammar.from_ebnf(text))


def test_a_final_state_without_its_required_members_is_refused():
    """A final state that reads no member, reached by a path without the required member, would
    hold an item that may neither end nor go on (fsm/unordered.py): refused."""
    text = ('root ::= obj\n'
            'obj[unordered] ::= x | y\n'
            'x[member=0, required] ::= "x"\n'
            'y[member=1] ::= "y"\n')
    with pytest.raises(ValueError, match="may block"):
        xgr.GrammarCompiler(xgr.TokenizerInfo(VOCAB)).compile_grammar(xgr.Grammar.from_ebnf(text))


def test_a_counted_repetition_of_members_is_taken_and_exact():
    """Members read in the middle of a bounded repetition: each state there is reached by
    fewer members than it reads, so an item always has one left (fsm/unordered.py)."""
    text = ('root ::= obj\n'
            'obj[unordered] ::= (x | y | z) (x | y | z){1,1}\n'
            'x[member=0] ::= "a"\n'
            'y[member=1] ::= "b"\n'
            'z[member=2] ::= "c"\n')
    grammar = xgr.Grammar.from_ebnf(text)
    matcher = _get_matcher_from_grammar(grammar)
    oracle = Recognizer(grammar.ir)
    for s in ["a", "ab", "ba", "ca", "aa", "abc", "bc", "cc", ""]:
        want = len(s) == 2 and s[0] != s[1]
        matcher.reset()
        assert (matcher.accept_string(s) and matcher.is_terminated()) == want, s
        assert oracle.is_sentence(s.encode()) == want, s


def test_a_required_member_that_matches_nothing_leaves_no_object():
    schema = {"type": "object", "properties": {"a": False, "b": {"type": "null"}}, "required": ["a"]}
    matcher = _get_matcher_from_grammar(xgr.Grammar.from_json_schema(schema, any_order=True))
    for text in ['{"b": null}', '{}']:
        matcher.reset()
        assert not (matcher.accept_string(text) and matcher.is_terminated())


def test_nested_unordered_objects():
    """An unordered object inside another, as a member's value and as an additional member's
    value: each object keeps its own set of members seen."""
    inner = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "null"}}, "required": ["x"],
             "additionalProperties": False}
    schema = {"type": "object", "properties": {"a": inner, "b": {"type": "integer"}}, "required": ["a"],
              "additionalProperties": inner}
    matcher = _get_matcher_from_grammar(xgr.Grammar.from_json_schema(schema, any_order=True))
    texts = ['{"b": 1, "a": {"y": null, "x": 2}}', '{"a": {"x": 2}, "q": {"y": null, "x": 1}, "b": 3}',
             '{"a": {"x": 2, "x": 3}}', '{"a": {"y": null}}', '{"q": {"x": 1}, "a": {"x": 1}, "a": {"x": 1}}',
             '{"q": {"x": 1, "y": null, "y": null}, "a": {"x": 1}}', '{"b": 1, "q": {"x": 1}}']
    for text in texts:
        pairs = json.loads(text, object_pairs_hook=lambda kv: kv)
        repeated = any(len({k for k, _ in kv}) < len(kv) for kv in _pair_lists(pairs))
        want = not repeated and _valid(schema, json.loads(text))
        matcher.reset()
        assert (matcher.accept_string(text) and matcher.is_terminated()) == want, text


def _pair_lists(value):
    """Every object of a value parsed with object_pairs_hook=list, as its (key, value) list."""
    if isinstance(value, list) and all(isinstance(p, tuple) and len(p) == 2 for p in value):
        yield value
        for _, v in value:
            yield from _pair_lists(v)
