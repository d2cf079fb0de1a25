"""JSON values under structural-tag `excludes` (xg2ref/frontends/structural_tag/excludes.py): the verdicts
against xgrammar 0.2.8's, masks at every step against xgrammar's, and string bodies against a
plain-Python reading of the rule (no xgrammar needed)."""

import json
import random

import pytest

import xg2ref as xgr
from tests.walks import check_verdicts
from xg2ref.testing import _is_grammar_accept_string


def fmt(schema, excludes, style="json"):
    return {"type": "json_schema", "json_schema": schema, "style": style, "excludes": excludes}


def obj(**props):
    return {"type": "object", "properties": props, "required": list(props)}


def param(value):
    return "<parameter=k>" + value + "</parameter>"


X = ["<x>"]
# (format, accepted, rejected); the verdicts are xgrammar 0.2.8's (test_verdicts_are_xgrammars)
CASES = [
    # plain strings: the content as written holds no exclude, escapes included
    (fmt({"type": "string"}, ["<x>", "12", "nx"]),
     ['"a"', '"\\u003cx>"', '"\\u0031\\u0032"', '"1 2"'],
     ['"<x>"', '"a<x>b"', '"12"', '"a\\nx"', '"\\u00312"']),
    # every exclude that ends is caught, also inside a longer partial match
    (fmt({"type": "string"}, ["abc", "xabcq"]), ['"xab"', '"xabq"'], ['"xabc"', '"abc"', '"xabcq"']),
    # length bounds are dropped beside excludes
    (fmt({"type": "string", "minLength": 3, "maxLength": 5}, X), ['"a"', '"abcdefg"'], ['"<x>"']),
    (fmt({"type": "array", "items": {"type": "string", "minLength": 3}}, X), ['["a"]', '["abcd"]'], ['["a<x>"]']),
    # a pattern is not filtered; numbers and punctuation never are
    (fmt({"type": "string", "pattern": "^[a-z<>]*$"}, X), ['"a<x>"'], ['"A"']),
    (fmt({"type": "integer"}, ["12"]), ["12", "123"], ['"12"']),
    (fmt(obj(a={"type": "string"}), ['":']), ['{"a": "b"}', '{"a":"b"}'], []),
    # enum/const: left out when a string of the value (keys included), as written, holds one
    (fmt({"enum": ["a<x>", "b"]}, X), ['"b"'], ['"a<x>"']),
    (fmt({"enum": [["a<x>"], 1]}, X), ["1"], ['["a<x>"]']),
    (fmt({"const": {"k": "a<x>"}}, X), [], ['{"k":"a<x>"}']),
    (fmt({"enum": [[1, 2], "q"]}, ["1,"]), ["[1,2]", '"q"'], []),
    (fmt({"const": {"a": 1}}, ['"a"']), ['{"a":1}'], []),
    (fmt({"const": {"a": 1}}, ["a"]), [], ['{"a":1}']),
    (fmt({"enum": ["a\nb"]}, ["\\n"]), [], ['"a\\nb"']),
    (fmt({"enum": ["a\nb"]}, ["\n"]), ['"a\\nb"'], []),
    # keys: declared names holding one are left out; other keys avoid them too
    (fmt({"type": "object", "properties": {"a<x>": {"type": "integer"}, "b": {"type": "integer"}}}, X),
     ['{"b": 1}', "{}"], ['{"a<x>": 1}', '{"c": 1}']),
    (fmt({"type": "object", "properties": {"a<x>": {"type": "integer"}}, "required": ["a<x>"]}, X),
     [], ['{"a<x>": 1}', "{}"]),
    (fmt({"type": "object", "properties": {"a": {"type": "string"}}}, ["a"]), ["{}"], ['{"a": "b"}']),
    (fmt({"type": "object", "additionalProperties": {"type": "integer"}}, X), ['{"b": 1}'], ['{"a<x>": 1}']),
    (fmt({"type": "object", "properties": {"b": {"type": "integer"}}, "additionalProperties": {"type": "integer"}},
         ["<x>", "</x>"]),
     ['{"b": 1}', '{"c": 1}', '{"b": 1, "bb": 1}', '{"b": 1, "<\\/x>": 1}'],
     ['{"a<x>": 1}', '{"b": 1, "a<x>": 1}', '{"b": 1, "b": 1}', '{"b": 1, "</x>": 1}']),
    (fmt({"type": "object", "properties": {"free": {"type": "integer"}, 'a"/': {"type": "integer"}},
          "additionalProperties": {"type": "integer"}}, X),
     ['{"free": 1, "fre": 2}', '{"freedom": 1}', '{"a\\"/": 1}', '{"a\\"/": 1, "a\\"": 2}'],
     ['{"free": 1, "free": 2}', '{"a\\"/": 1, "a\\"/": 2}', '{"free": 1, "<x>": 2}']),
    (fmt({"type": "object", "propertyNames": {"maxLength": 2}}, X), ['{"ab": "1"}', '{"abc": 1}'], ['{"a<x>": "1"}']),
    (fmt(True, X), ["1", '{"a": {"b": ["c"]}}'], ['"a<x>"', '{"a<x>": 1}', '{"a": "<x>"}', '["<x>"]']),
    (fmt({"type": "string"}, [" x", "x "]), ['"a"', '"xx"'], ['" x"', '"ax "']),
    # XML styles: JSON-valued parameters are filtered the same way
    (fmt(obj(k=obj(s={"type": "string"})), X, "qwen_xml"),
     [param('{"s": "a"}'), param('{"s": "a<x"}')], [param('{"s": "a<x>"}')]),
    (fmt(obj(k=obj(s={"type": "string", "minLength": 2, "maxLength": 3})), X, "qwen_xml"),
     [param('{"s": "a"}'), param('{"s": "abcd"}')], [param('{"s": "<x>"}')]),
    (fmt(obj(k={"type": "object"}), X, "qwen_xml"),
     [param("{}"), param('{"a": 1}')], [param('{"<x>": 1}'), param('{"a": "<x>"}')]),
    (fmt(obj(k={"type": "array"}), X, "qwen_xml"), [param("[]")], [param('["<x>"]')]),
    (fmt(obj(k={"const": [1, 2]}), ["1,"], "qwen_xml"), [param("[1,2]")], []),
    (fmt(obj(k={"const": {"a": 1}}), ['"a"'], "qwen_xml"), [param('{"a":1}')], []),
    (fmt(obj(k={"const": {"a": 1}}), ["a"], "qwen_xml"), [], [param('{"a":1}')]),
    (fmt(obj(k={"const": ["a\\b"]}), ["\\\\"], "qwen_xml"), [], [param('["a\\\\b"]')]),
    (fmt(obj(k={"const": ["a\\b"]}), ["a\\b"], "qwen_xml"), [param('["a\\\\b"]')], []),
    (fmt(obj(k={"const": 12}), ["12"], "qwen_xml"), [param("12")], []),
    (fmt(obj(k={"type": "string", "minLength": 3}), X, "qwen_xml"), [param("a")], [param("a<x>")]),
]
IDS = [json.dumps(c[0])[:70] for c in CASES]


@pytest.mark.parametrize("fmt, good, bad", CASES, ids=IDS)
def test_excluded_strings_are_filtered(fmt, good, bad):
    check_verdicts(_is_grammar_accept_string, xgr.Grammar.from_structural_tag({"type": "structural_tag", "format": fmt}),
                   good, bad)


@pytest.fixture(scope="module")
def xgrammar():
    return pytest.importorskip("xgrammar")


@pytest.mark.xgrammar
@pytest.mark.parametrize("fmt, good, bad", CASES, ids=IDS)
def test_verdicts_are_xgrammars(xgrammar, fmt, good, bad):
    grammar = xgrammar.Grammar.from_structural_tag(json.dumps({"type": "structural_tag", "format": fmt}))
    check_verdicts(xgrammar.testing._is_grammar_accept_string, grammar, good, bad)


# ---- masks at every step ----------------------------------------------------------------------

VOCAB = ["{", "}", '"', '":', " ", "<x>", "<", "x", ">", "a", '"}', "</f>", "<f>", "\\", "u", "003c", "</s>",
         '"a', "1", "<x", ">a", "\\u003c", ",", "s", '{"', "[", "]", "b", "<parameter=k>", "</parameter>"]
MASK_CASES = [  # (format, text the walk spells, a token at a time, greedily)
    ({"type": "tag", "begin": "<f>", "content": fmt({"type": "object", "properties": {"s": {"type": "string"}}},
                                                    X), "end": "</f>"},
     '<f>{"s": "a\\u003cx>a<x"}</f>'),
    ({"type": "tag", "begin": "<f>", "content": fmt(True, X), "end": "</f>"}, '<f>{"a": ["b<x", 1]}</f>'),
    ({"type": "tag", "begin": "<f>", "content": fmt(obj(k=obj(s={"type": "string"})), X, "qwen_xml"), "end": "</f>"},
     '<f><parameter=k>{"s": "<xa"}</parameter></f>'),
]


def walk_masks(module, fmt, text):
    """The allowed tokens before each token of a greedy tokenization of `text`, and each accept."""
    info = module.TokenizerInfo(VOCAB, stop_token_ids=[VOCAB.index("</s>")])
    compiled = module.GrammarCompiler(info).compile_structural_tag(
        json.dumps({"type": "structural_tag", "format": fmt}))
    matcher = module.GrammarMatcher(compiled)
    bitmask = module.allocate_token_bitmask(1, info.vocab_size)
    out, rest = [], text
    while rest:
        t = max((i for i, v in enumerate(VOCAB) if v and rest.startswith(v)), key=lambda i: len(VOCAB[i]))
        matcher.fill_next_token_bitmask(bitmask)
        rejected = set(module.testing._get_masked_tokens_from_bitmask(bitmask, info.vocab_size))
        out.append((sorted(set(range(len(VOCAB))) - rejected), matcher.accept_token(t)))
        rest = rest[len(VOCAB[t]):]
    return out


@pytest.mark.xgrammar
@pytest.mark.parametrize("fmt, text", MASK_CASES, ids=[c[1] for c in MASK_CASES])
def test_masks_are_xgrammars_at_every_step(xgrammar, fmt, text):
    have = walk_masks(xgr, fmt, text)
    assert have == walk_masks(xgrammar, fmt, text)
    assert all(ok for _, ok in have)
    assert any(VOCAB.index("<x>") not in allowed and VOCAB.index("<") in allowed for allowed, _ in have)


# ---- string bodies against the rule read in plain Python -------------------------------------

PIECES = ["a", "x", "<", ">", "<x", "x>", "\\n", "\\\\", '\\"', "\\u003c", "\\u0078", "\\ud800", "é", "1", "2",
          "\\", '"', "\n", "n"]


def want(body: str, words: list) -> bool:
    """`"body"` is a JSON string (no lone surrogate escapes, as xg2ref's strings) whose body, as
    written, holds none of `words`."""
    try:
        value = json.loads('"' + body + '"')
    except json.JSONDecodeError:
        return False
    if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        return False
    return not any(w in body for w in words)


@pytest.mark.parametrize("words", [["<x>"], ["x<", "<x>", "\\u"], ["n", "\\\\"], ["a", "aa<"]])
def test_string_bodies_match_the_rule(words):
    grammar = xgr.Grammar.from_structural_tag(
        {"type": "structural_tag", "format": fmt({"type": "string"}, words)})
    rng = random.Random(str(words))
    for _ in range(150):
        body = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 5)))
        assert _is_grammar_accept_string(grammar, '"' + body + '"') == want(body, words), body


def test_empty_excludes_are_refused():
    with pytest.raises(xgr.InvalidStructuralTagError, match="format.excludes: an exclude must be a non-empty"):
        xgr.Grammar.from_structural_tag({"type": "structural_tag", "format": fmt({"type": "string"}, ["", "a"])})
    with pytest.raises(xgr.InvalidStructuralTagError, match="format.excludes"):
        xgr.Grammar.from_structural_tag({"type": "structural_tag", "format": fmt({"type": "string"}, [" a"],
                                                                                   "qwen_xml")})


def test_contradictory_bounds_still_give_no_string():
    grammar = xgr.Grammar.from_structural_tag({"type": "structural_tag", "format": fmt(
        {"type": "array", "items": {"type": "string", "minLength": 3, "maxLength": 1}}, X)})
    assert _is_grammar_accept_string(grammar, "[]")
    assert not _is_grammar_accept_string(grammar, '["a"]') and not _is_grammar_accept_string(grammar, '[""]')


@pytest.mark.parametrize("schema, words", [
    ({"type": "object", "required": 5}, "required: must be a list"),
    ({"type": "object", "properties": [1]}, "properties: must be an object"),
    ({"type": "string", "minLength": "x"}, "minLength: must be a non-negative integer"),
    ("{not json", "not valid JSON"),
])
@pytest.mark.parametrize("style", ["json", "qwen_xml"])
def test_bad_schemas_with_excludes_raise(schema, words, style):
    with pytest.raises(xgr.InvalidStructuralTagError, match=words):
        xgr.Grammar.from_structural_tag({"type": "structural_tag", "format": fmt(schema, X, style)})
