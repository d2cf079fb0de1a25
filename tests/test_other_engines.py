"""The llguidance and outlines-core adapters (xg2ref/oracle/other_engines.py) against xg2ref.

Masks are compared along token walks of regexes and JSON schemas on one small vocabulary. They
must be equal, except where `BY_DESIGN` / `KNOWN_DEFECTS` name a difference; each named
difference has a test that makes it happen and checks its exact shape. Rollback, reset, stop
tokens and the registry are checked too.
"""

from __future__ import annotations

import numpy as np
import pytest

from xg2ref import TokenizerInfo
from xg2ref.oracle import other_engines as oe
from xg2ref.oracle.engines import EngineUnavailable

VOCAB = ([bytes([c]) for c in b'{}[]":, \n0123456789abcdefghijklmnopqrstuvwxyz-+.E\\\x7f']
         + [b'{"', b'": ', b'", "', b", ", b"true", b"false", b"null", b"ab", b"abc", b"12",
            "\u00e9".encode(), "\u0080".encode(), b"", b"<eos>"])
STOP = len(VOCAB) - 1


@pytest.fixture(scope="module")
def info():
    return TokenizerInfo(VOCAB, stop_token_ids=[STOP])


@pytest.fixture(scope="module")
def ref(info):
    return oe.make_engine("xg2ref", info)


@pytest.fixture(scope="module")
def llg(info):
    pytest.importorskip("llguidance")
    return oe.make_engine("llguidance", info)


@pytest.fixture(scope="module")
def outl(info):
    pytest.importorskip("outlines_core")
    return oe.make_engine("outlines", info)


def tokens_of(text: bytes) -> list:
    ids = oe.longest_match_encoder(VOCAB, [STOP])(text)
    assert ids is not None, text
    return ids


def spell(mask) -> set:
    return {VOCAB[i] for i in np.flatnonzero(mask)}


def walk(ref_matcher, other, text: bytes) -> list:
    """[(prefix, xg2ref mask, other mask)] at every step of `text`'s tokens, then the end."""
    steps, prefix = [], b""
    for t in tokens_of(text) + [None]:
        steps.append((prefix, ref_matcher.bool_mask(), other.bool_mask()))
        if t is None:
            break
        assert ref_matcher.accept_token(t) and other.accept_token(t), (prefix, VOCAB[t])
        prefix += VOCAB[t]
    assert ref_matcher.is_completed() and other.is_completed(), text
    return steps


def differing(steps, ignore=()) -> list:
    """[(prefix, tokens only xg2ref allows, tokens only the other allows)] where masks differ,
    token ids `ignore` left out."""
    keep = np.ones(len(VOCAB), dtype=np.bool_)
    keep[list(ignore)] = False
    return [(p, spell(a & ~b & keep), spell(b & ~a & keep)) for p, a, b in steps
            if not np.array_equal(a & keep, b & keep)]


# ---- equal masks ----------------------------------------------------------------------------

# regexes outlines reads right (see test_outlines_accepting_state_defect for those it does not)
REGEXES = [(r"(true|false|null)", b"null"), (r"x?abc", b"abc"), (r"[0-9]+", b"120"), (r"z?", b""),
           (r"(ab|c)*d", b"abcd"), (r"[a-c]+x[0-9]", b"abcx1")]
# tokens whose verdict inside JSON strings differs by design (llguidance: string_del; outlines:
# string_chars); the equal-mask tests leave them out, test_*_string_* check them
STRING_CHAR_TOKENS = [VOCAB.index(b"\x7f"), VOCAB.index("\u0080".encode())]
SCHEMAS = [
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}},
      "required": ["a", "b"], "additionalProperties": False}, b'{"a": 12, "b": true}'),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "null"}},
      "additionalProperties": False}, b'{ "a" : -7 , "b":null\n}'),
    ({"type": "array", "items": {"type": "string"}}, '["ab", "c\u00e9 d"]'.encode()),
    ({"type": "array", "items": {"type": "number"}}, b"[1, -0.5, 20]"),
    ({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, b"false"),
]


@pytest.mark.parametrize("regex,text", REGEXES)
def test_regex_masks_equal_outlines(ref, outl, regex, text):
    steps = walk(ref.compile_front_end("regex", regex), outl.compile_front_end("regex", regex), text)
    assert differing(steps) == []


@pytest.mark.parametrize("schema,text", SCHEMAS)
def test_json_schema_masks_equal(ref, llg, outl, schema, text):
    for engine in (llg, outl):
        steps = walk(ref.compile_front_end("json_schema", schema), engine.compile_front_end("json_schema", schema),
                     text)
        assert differing(steps, STRING_CHAR_TOKENS) == [], engine.name


@pytest.mark.parametrize("regex,text", REGEXES + [(r"abcx", b"abcx"), (r"ab[a-z]*", b"abcxy")])
def test_regex_masks_llguidance(ref, llg, regex, text):
    """Equal, or narrowed to forced text: where they differ llguidance allows nothing more,
    the grammar forces bytes, and every token only xg2ref allows is a proper prefix of them."""
    ref_matcher, matcher = ref.compile_front_end("regex", regex), llg.compile_front_end("regex", regex)
    prefix = b""
    for t in tokens_of(text) + [None]:
        want, have = ref_matcher.bool_mask(), matcher.bool_mask()
        assert not (have & ~want).any(), (regex, prefix)
        forced = matcher.forced_bytes()
        for token in spell(want & ~have):
            assert len(token) < len(forced) and forced.startswith(token), (regex, prefix, token, forced)
        if t is None:
            break
        assert ref_matcher.accept_token(t) and matcher.accept_token(t)
        prefix += VOCAB[t]
    assert matcher.is_completed()


# ---- by-design differences, each made to happen -----------------------------------------------


def test_llguidance_forced_text(ref, llg):
    assert "forced_text" in oe.BY_DESIGN["llguidance"]
    matcher = llg.compile_front_end("regex", "abcx")
    assert matcher.forced_bytes() == b"abcx"
    assert spell(matcher.bool_mask()) == {b"abc"}  # the first token of "abc" + "x"
    assert spell(ref.compile_front_end("regex", "abcx").bool_mask()) == {b"a", b"ab", b"abc"}
    assert matcher.accept_token(VOCAB.index(b"a"))  # a token outside the mask is still consumed


def test_llguidance_greedy_lexemes(ref, llg):
    assert "greedy_lexemes" in oe.BY_DESIGN["llguidance"]
    grammar = 'root ::= word "s"\nword ::= [a-z]+\n'
    ref_matcher, matcher = ref.compile(grammar), llg.compile(grammar)
    for t in tokens_of(b"cats"):
        assert np.array_equal(ref_matcher.bool_mask(), matcher.bool_mask())
        assert ref_matcher.accept_token(t) and matcher.accept_token(t)
    # llguidance read all of "cats" as `word`, and any further "s" extends it too
    assert ref_matcher.is_completed() and not matcher.is_completed()
    assert STOP in np.flatnonzero(ref_matcher.bool_mask()) and STOP not in np.flatnonzero(matcher.bool_mask())
    assert matcher.accept_bytes(b"s") and not matcher.is_completed() and not matcher.accept_token(STOP)


def test_llguidance_additional_properties(ref, llg):
    assert "additional_properties" in oe.BY_DESIGN["llguidance"]
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    diffs = differing(walk(ref.compile_front_end("json_schema", schema),
                           llg.compile_front_end("json_schema", schema), b'{"a": 1}'))
    assert diffs and all(p.startswith(b'{"a": 1') and not only_ref and b"," in only_llg
                         for p, only_ref, only_llg in diffs)


def test_llguidance_string_del(ref, llg):
    assert "string_del" in oe.BY_DESIGN["llguidance"]
    diffs = differing(walk(ref.compile_front_end("json_schema", {"type": "string"}),
                           llg.compile_front_end("json_schema", {"type": "string"}), '"a\u00e9"'.encode()))
    assert len(diffs) == 3 and all(only_ref == {b"\x7f"} and not only_llg for _, only_ref, only_llg in diffs)


def outlines_difference(ref, outl, schema, text: bytes):
    """Walk `text` on both until outlines refuses a token: (prefix, only xg2ref, only outlines, refused)."""
    ref_matcher, matcher = ref.compile_front_end("json_schema", schema), outl.compile_front_end("json_schema", schema)
    prefix = b""
    for t in tokens_of(text):
        want, have = ref_matcher.bool_mask(), matcher.bool_mask()
        if not np.array_equal(want, have):
            assert ref_matcher.accept_token(t)
            return prefix, spell(want & ~have), spell(have & ~want), not matcher.accept_token(t)
        assert ref_matcher.accept_token(t) and matcher.accept_token(t)
        prefix += VOCAB[t]
    raise AssertionError(f"no difference along {text!r}")


def test_outlines_by_design(ref, outl):
    number_array = {"type": "array", "items": {"type": "number"}}
    assert outlines_difference(ref, outl, number_array, b"[1 ,2]") == (b"[1 ", {b",", b", "}, set(), True)
    digits = {bytes([c]) for c in b"0123456789"} | {b"12"}
    assert outlines_difference(ref, outl, number_array, b"[2e5]") == (b"[2e", digits, set(), True)
    string = {"type": "string"}
    assert outlines_difference(ref, outl, string, b'"\\u00e9"') == (b'"', {b"\x7f", "\u0080".encode()}, set(), False)
    ref_m, m = ref.compile_front_end("json_schema", string), outl.compile_front_end("json_schema", string)
    assert ref_m.accept_bytes(b'"\\') and m.accept_bytes(b'"\\')
    assert spell(ref_m.bool_mask() & ~m.bool_mask()) == {b"u"}
    nested = {"$defs": {"n": {"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}},
                              "additionalProperties": False}}, "$ref": "#/$defs/n"}
    prefix, only_ref, only_outlines, refused = outlines_difference(ref, outl, nested, b'{"c":{"c":{"c":{"c":{}}}}}')
    assert prefix == b'{"c":{"c":{"c":' and only_ref == {b'{"'} and not only_outlines and refused
    assert {"whitespace", "exponent_sign", "string_chars", "recursion_depth"} <= set(oe.BY_DESIGN["outlines"])
    assert oe.OUTLINES_MAX_RECURSION_DEPTH == 3


@pytest.mark.parametrize("regex,prefix,missing", [
    ("(ab)+", b"ab", {b"a"}),  # one byte into the next round
    (r"[0-9]+(\.[0-9]+)?", b"12", {b"."}),
    ("a(bc)*", b"", {b"ab"}),  # through the accepting "a", one byte on
    ("[a-z]+s", b"", {b"false"}),  # through the accepting "fals"
])
def test_outlines_accepting_state_defect(ref, outl, regex, prefix, missing):
    """outlines-core 0.2.14 loses tokens around accepting states; it never allows more than
    xg2ref there, and the rest of the mask agrees."""
    assert "accepting_state" in oe.KNOWN_DEFECTS["outlines"]
    ref_matcher, matcher = ref.compile_front_end("regex", regex), outl.compile_front_end("regex", regex)
    assert ref_matcher.accept_bytes(prefix) and matcher.accept_bytes(prefix)
    want, have = ref_matcher.bool_mask(), matcher.bool_mask()
    assert not (have & ~want).any() and spell(want & ~have) == missing
    token = VOCAB.index(sorted(missing)[0])
    assert ref_matcher.accept_token(token) and not matcher.accept_token(token)
    assert np.array_equal(matcher.bool_mask(), have)  # the refused token changed nothing


# ---- rollback, reset, stop tokens, bytes ------------------------------------------------------


@pytest.mark.parametrize("engine_fixture", ["llg", "outl"])
def test_rollback_reset_and_stop(request, ref, engine_fixture):
    engine = request.getfixturevalue(engine_fixture)
    schema = SCHEMAS[0][0]
    matcher = engine.compile_front_end("json_schema", schema)
    ref_matcher = ref.compile_front_end("json_schema", schema)
    masks = [matcher.bool_mask()]
    for t in tokens_of(b'{"a": 12, "b": true}'):
        assert matcher.accept_token(t)
        masks.append(matcher.bool_mask())
    assert matcher.is_completed() and spell(masks[-1]) == {b"<eos>"}
    assert not matcher.accept_token(VOCAB.index(b"x")) and np.array_equal(matcher.bool_mask(), masks[-1])
    assert matcher.accept_token(STOP) and matcher.is_completed() and not matcher.accept_token(STOP)
    matcher.rollback(1)
    assert np.array_equal(matcher.bool_mask(), masks[-1])
    matcher.rollback(3)
    assert np.array_equal(matcher.bool_mask(), masks[-4]) and not matcher.is_completed()
    assert not matcher.accept_token(STOP)
    with pytest.raises(ValueError):
        matcher.rollback(len(masks))
    matcher.reset()
    assert np.array_equal(matcher.bool_mask(), masks[0])
    # bytes: all or nothing, one rollback step, prefix semantics
    assert matcher.accept_bytes(b'{"a') and ref_matcher.accept_bytes(b'{"a')
    assert np.array_equal(matcher.bool_mask(), ref_matcher.bool_mask())
    assert not matcher.accept_bytes(b'": 1x') and np.array_equal(matcher.bool_mask(), ref_matcher.bool_mask())
    assert matcher.accept_bytes(b"") and matcher.accept_bytes(b'": -')
    matcher.rollback(2)
    assert np.array_equal(matcher.bool_mask(), ref_matcher.bool_mask())
    matcher.rollback(1)
    assert np.array_equal(matcher.bool_mask(), masks[0])


def test_outlines_rollback_replays_past_its_memory(info, ref):
    pytest.importorskip("outlines_core")
    engine = oe.OutlinesEngine.from_tokenizer_info(info, max_rollback=2)
    matcher, ref_matcher = engine.compile_front_end("regex", "[a-z]+[0-9]*"), ref.compile_front_end("regex", "[a-z]+[0-9]*")
    for data in (b"ab", b"c", b"x1", b"2", b"12"):
        assert matcher.accept_bytes(data) and ref_matcher.accept_bytes(data)
    matcher.rollback(4)
    ref_matcher.rollback(4)
    assert np.array_equal(matcher.bool_mask(), ref_matcher.bool_mask())
    assert spell(matcher.bool_mask()) >= {b"a", b"0"} and matcher.accept_bytes(b"c3")


def test_two_stop_tokens_and_padding(ref):
    pytest.importorskip("llguidance")
    pytest.importorskip("outlines_core")
    vocab = [b"a", b"b", b"", b"<eos>", b"<eot>"]
    info = TokenizerInfo(vocab, stop_token_ids=[3, 4], vocab_size=8)
    xg2 = oe.make_engine("xg2ref", info).compile_front_end("regex", "ab?")
    for name in ("llguidance", "outlines"):
        matcher = oe.make_engine(name, info).compile_front_end("regex", "ab?")
        assert matcher.bool_mask().shape == (8,)
        assert np.flatnonzero(matcher.bool_mask()).tolist() == [0]
        assert not matcher.accept_token(2) and not matcher.accept_token(7) and matcher.accept_token(0)
        assert np.flatnonzero(matcher.bool_mask()).tolist() == [1, 3, 4]
        assert matcher.accept_token(4) and matcher.is_completed()
        assert np.flatnonzero(matcher.bool_mask()).tolist() == [3, 4]
    assert xg2.accept_token(0) and np.flatnonzero(xg2.bool_mask()).tolist() == [1, 3, 4]


# ---- front ends, encoder, registry --------------------------------------------------------------


def test_llguidance_ebnf_and_lark(ref, llg):
    grammar = 'expr ::= item ("," item)*\nitem ::= [a-z]+ | "null"\n'
    steps = walk(ref.compile(grammar, "expr"), llg.compile(grammar, "expr"), b"ab,null,c")
    assert differing(steps) == []
    lark = llg.compile_front_end("lark", 'start: "x" /[0-9]+/')
    assert spell(lark.bool_mask()) == {b"x"} and lark.accept_bytes(b"x12") and lark.is_completed()
    with pytest.raises(oe.UnsupportedByEngine, match="GBNF converter"):
        llg.compile('root ::= x "c"\nx ::= "a" (= "c")\n')
    with pytest.raises(oe.UnsupportedByEngine, match="rule of that name"):
        llg.compile('root ::= "a"\ntop ::= root\n', "top")
    with pytest.raises(oe.UnsupportedByEngine, match="rejects the grammar"):
        llg.compile_front_end("regex", "(a")
    with pytest.raises(oe.UnsupportedByEngine):
        llg.compile_front_end("structural_tag", {})


def test_outlines_front_ends(outl):
    with pytest.raises(oe.UnsupportedByEngine, match="not EBNF"):
        outl.compile('root ::= "a"')
    with pytest.raises(oe.UnsupportedByEngine):
        outl.compile_front_end("regex", "(a")
    with pytest.raises(oe.UnsupportedByEngine):
        outl.compile_front_end("lark", "start: /a/")
    assert oe.OUTLINES_WHITESPACE in outl.json_schema_regex({"type": "array"})


def test_longest_match_encoder():
    encode = oe.longest_match_encoder([b"a", b"ab", b"bc", b"abc", b"", b"c", b"ab"], excluded=[3])
    assert encode(b"abc") == [1, 5]  # "abc" is excluded; "ab" (lowest id of two) then "c"
    assert encode(b"") == []
    assert encode(b"abd") is None
    encode = oe.longest_match_encoder([b"a", b"ab", b"bc"])
    assert encode(b"abc") == [0, 2]  # the longest first token leaves "c", which nothing spells


def test_registry(info, monkeypatch):
    found = oe.available_engines()
    assert set(found) == {"xg2ref", "xgrammar", "llguidance", "outlines"} and found["xg2ref"]
    for name in ("llguidance", "outlines"):
        if found[name]:
            assert oe.make_engine(name, info).name == name
    with pytest.raises(ValueError, match="unknown engine"):
        oe.make_engine("guidance", info)
    monkeypatch.setitem(oe._PACKAGES, "outlines", ("no_such_module_here", "outlines-core==0.2.14"))
    assert oe.available_engines()["outlines"] is False
    with pytest.raises(EngineUnavailable, match="pip install 'outlines-core==0.2.14'"):
        oe.make_engine("outlines", info)


# ---- xg2ref's JSON-schema options, mapped onto each engine ------------------------------------


@pytest.mark.parametrize("options,texts", [
    ({}, {b'{"a":1}': True, b'{ "a" : 1 }': True}),
    ({"any_whitespace": False}, {b'{"a": 1, "b": 2}': True, b'{"a":1}': False, b'{"a": 1,"b": 2}': False}),
    ({"any_whitespace": False, "separators": (",", ":")}, {b'{"a":1,"b":2}': True, b'{"a": 1}': False}),
    ({"max_whitespace_cnt": 2}, {b'{  "a":1}': True, b'{   "a":1}': False}),
])
def test_json_options_reach_the_engines(request, ref, options, texts):
    """Each engine that can express an option agrees with xg2ref on complete texts under it."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    for name in ("llg", "outl"):
        engine = request.getfixturevalue(name)
        if name == "outl" and options == {"any_whitespace": False}:
            with pytest.raises(oe.UnsupportedByEngine, match="compact separators"):
                engine.compile_front_end("json_schema", schema, **options)
            continue
        matchers = [ref.compile_front_end("json_schema", schema, **options),
                    engine.compile_front_end("json_schema", schema, **options)]
        for text, valid in texts.items():
            for m in matchers:
                m.reset()
                assert (m.accept_bytes(text) and m.is_completed()) == valid, (name, options, text)
    for engine in (request.getfixturevalue("llg"), request.getfixturevalue("outl")):
        with pytest.raises(oe.UnsupportedByEngine, match="indent"):
            engine.compile_front_end("json_schema", schema, indent=2)
        with pytest.raises(oe.UnsupportedByEngine, match="unknown"):
            engine.compile_front_end("json_schema", schema, colour="red")


# ---- the by-design classes that ask the engine again (xg2ref/tools/diff/classes.py) ----------------


def _asker(info, engine, **options):
    from xg2ref.tools.fuzz.shrink import Asker

    return Asker(engine, info, options)


def test_greedy_lexemes_are_recognized(info, llg):
    from xg2ref.tools.diff.classes import by_design
    from xg2ref.tools.fuzz.shrink import Question

    asker = _asker(info, llg)
    grammar = 'root ::= "c" r2 r2\nr1 ::= "bc"\nr2 ::= r1{1,2}\n'  # R2 takes "bcbc" whole, greedily
    q = Question("sentence", b"cbcbc")
    assert asker.engine_says("ebnf", grammar, q) is False and asker.oracle_says("ebnf", grammar, q) is True
    assert by_design("llguidance", "ebnf", grammar, q, False, asker, b"") == "greedy_lexemes"
    # a refusal that one-character lexemes do not lift is not of the class
    assert by_design("llguidance", "ebnf", grammar, Question("sentence", b"cbc"), False, asker, b"") is None


def test_recursion_depth_and_property_order_are_recognized(info, outl, llg):
    from xg2ref.tools.diff.classes import by_design
    from xg2ref.tools.fuzz.shrink import Question

    nested = {"$defs": {"n": {"type": "object", "properties": {"k": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}
    deep = Question("prefix", b'{"k":{"k":{"k":{"k":{')
    asker = _asker(info, outl)
    assert asker.engine_says("json_schema", nested, deep) is False
    assert by_design("outlines", "json_schema", nested, deep, False, asker, b"") == "recursion_depth"
    pair = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    swapped = Question("prefix", b'{"b":1,"a"')
    for name, engine in (("llguidance", llg), ("outlines", outl)):
        unordered = _asker(info, engine, any_order=True)
        assert unordered.engine_says("json_schema", pair, swapped) is False
        assert unordered.oracle_says("json_schema", pair, swapped) is True
        assert by_design(name, "json_schema", pair, swapped, False, unordered, b"") == "property_order"
        assert "property_order" in oe.BY_DESIGN[name]


def test_additional_properties_both_ways(info, outl):
    """outlines takes only listed properties where the schema lists some (even with
    additionalProperties: true), any where it lists none: the first is xg2ref's strict mode, the
    second vanishes once the schema is closed explicitly."""
    from xg2ref.tools.diff.classes import by_design, closed, opened
    from xg2ref.tools.fuzz.shrink import Question

    assert closed({"properties": {}}) == {"properties": {}, "additionalProperties": False}
    assert opened({"type": "object", "additionalProperties": False}) == {"type": "object", "additionalProperties": False}
    listed = {"type": "object", "properties": {"a": {"type": "integer"}}}
    lax = _asker(info, outl, strict_mode=False)
    extra = Question("prefix", b'{"a":1,"z"')
    assert lax.engine_says("json_schema", listed, extra) is False and lax.oracle_says("json_schema", listed, extra)
    assert by_design("outlines", "json_schema", listed, extra, False, lax, b"") == "additional_properties"
    bare = {"type": "object", "required": ["a"]}
    strict = _asker(info, outl)
    other = Question("prefix", b'{"b"')
    assert strict.engine_says("json_schema", bare, other) is True and strict.oracle_says("json_schema", bare, other) is False
    assert by_design("outlines", "json_schema", bare, other, True, strict, b"") == "additional_properties"
