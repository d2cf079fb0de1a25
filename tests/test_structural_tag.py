"""Structural tags: every format type against xgrammar 0.2.8's verdicts on strings and tokens,
and bad structural tags naming the offending part."""

import json

import numpy as np
import pytest

import xg2ref as xgr
from xg2ref.frontends.structural_tag.converter import is_unlimited
from xg2ref.testing import _is_grammar_accept_string

T1 = {"type": "tag", "begin": "<f1>", "content": {"type": "const_string", "value": "q"}, "end": "</f>"}
T2 = {"type": "tag", "begin": "<g>", "content": {"type": "json_schema", "json_schema": {"type": "integer"}},
      "end": "</g>"}

# (format, accepted strings, rejected strings); the verdicts are xgrammar 0.2.8's
# (test_verdicts_are_xgrammars checks that).
CASES = [
    ({"type": "const_string", "value": "abc"}, ["abc"], ["ab", "abcd", ""]),
    ({"type": "any_text"}, ["", "any text <a>", "\u00e9\n"], []),
    ({"type": "any_text", "excludes": ["zz"]}, ["", "z z", "az"], ["zz", "azzb"]),
    ({"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": "</a>"},
     ["<a></a>", "<a>x < / a</a>"], ["<a>", "<a></a></a>", "<a>x</a>y"]),
    ({"type": "tag", "begin": "<a>", "content": {"type": "json_schema", "json_schema": {"type": "integer"}},
      "end": ["</a>", "</b>"]}, ["<a>12</a>", "<a>-3</b>"], ["<a>1.5</a>", "<a>1</c>"]),
    ({"type": "sequence", "elements": [{"type": "const_string", "value": "x"}, {"type": "regex", "pattern": "[0-9]+"}]},
     ["x1", "x0123"], ["x", "1", "xa"]),
    ({"type": "or", "elements": [{"type": "const_string", "value": "x"},
                                 {"type": "grammar", "grammar": 'root ::= "y" r\nr ::= "z"'}]},
     ["x", "yz"], ["y", "xyz"]),
    ({"type": "triggered_tags", "triggers": ["<f", "<g"], "tags": [T1, T2]},
     ["", "text", "a <f1>q</f> b <g>7</g>", "<"], ["<f", "<f1>r</f>", "<g>x</g>", "<fx"]),
    ({"type": "triggered_tags", "triggers": ["<f"], "tags": [T1], "at_least_one": True},
     ["<f1>q</f>", "<f1>q</f>text<f1>q</f>"], ["", "text<f1>q</f>"]),
    ({"type": "triggered_tags", "triggers": ["<f"], "tags": [T1], "stop_after_first": True, "excludes": ["<e>"]},
     ["", "ab<f1>q</f>"], ["<f1>q</f><f1>q</f>", "a<e>"]),
    ({"type": "triggered_tags", "triggers": ["<f"], "tags": [T1], "at_least_one": True, "stop_after_first": True},
     ["<f1>q</f>"], ["", "x<f1>q</f>", "<f1>q</f>x"]),
    ({"type": "tags_with_separator", "tags": [T1, T2], "separator": ","},
     ["", "<f1>q</f>", "<f1>q</f>,<g>1</g>,<f1>q</f>"], ["<f1>q</f><g>1</g>", ",", "<f1>q</f>,"]),
    ({"type": "tags_with_separator", "tags": [T1], "separator": ",", "at_least_one": True},
     ["<f1>q</f>", "<f1>q</f>,<f1>q</f>"], [""]),
    ({"type": "tags_with_separator", "tags": [T1], "separator": ",", "stop_after_first": True},
     ["", "<f1>q</f>"], ["<f1>q</f>,<f1>q</f>"]),
    ({"type": "optional", "content": T1}, ["", "<f1>q</f>"], ["<f1>q</f><f1>q</f>"]),
    ({"type": "plus", "content": T1}, ["<f1>q</f>", "<f1>q</f><f1>q</f>"], [""]),
    ({"type": "star", "content": T1}, ["", "<f1>q</f><f1>q</f>"], ["<f1>"]),
    ({"type": "repeat", "min": 1, "max": 2, "content": T1}, ["<f1>q</f>", "<f1>q</f><f1>q</f>"],
     ["", "<f1>q</f><f1>q</f><f1>q</f>"]),
    ({"type": "dispatch", "rules": [["<f", {"type": "const_string", "value": "x"}]], "loop": True,
      "excludes": ["</s>"]}, ["", "ab<fx cd<fx"], ["<fy", "a</s>"]),
    ({"type": "tag", "begin": "<a>", "content": {"type": "sequence", "elements": [
        {"type": "const_string", "value": "q"}, {"type": "any_text"}]}, "end": "</a>"},
     ["<a>q</a>", "<a>qrs</a>"], ["<a>r</a>", "<a>q</a>s</a>"]),
    ({"type": "tag", "begin": "<a>", "content": {"type": "star", "content": {"type": "any_text"}}, "end": "</a>"},
     # two free texts in a row can spell the end between them ("</a" then ">"): both engines agree
     ["<a></a>", "<a>xy</a>", "<a></a></a>"], ["<a></a>x"]),
    ({"type": "tag", "begin": "<a>", "content": {"type": "any_text", "excludes": ["zz"]}, "end": ["</a>", ""]},
     ["<a>", "<a>x</a>"], ["<a>zz</a>", "<a></a>x"]),
    ({"type": "tag", "begin": "<a>", "content": {"type": "triggered_tags", "triggers": ["<f"], "tags": [T1]},
      "end": "</a>"}, ["<a></a>", "<a>x<f1>q</f>y</a>"], ["<a>x</a>y</a>"]),
]


@pytest.mark.parametrize("fmt, good, bad", CASES, ids=[json.dumps(c[0])[:60] for c in CASES])
def test_formats_accept_what_they_should(fmt, good, bad):
    grammar = xgr.Grammar.from_structural_tag({"type": "structural_tag", "format": fmt})
    for s in good:
        assert _is_grammar_accept_string(grammar, s), (str(grammar), s)
    for s in bad:
        assert not _is_grammar_accept_string(grammar, s), (str(grammar), s)


@pytest.fixture(scope="module")
def xgrammar():
    return pytest.importorskip("xgrammar")


@pytest.mark.xgrammar
@pytest.mark.parametrize("fmt, good, bad", CASES, ids=[json.dumps(c[0])[:60] for c in CASES])
def test_verdicts_are_xgrammars(xgrammar, fmt, good, bad):
    grammar = xgrammar.Grammar.from_structural_tag({"type": "structural_tag", "format": fmt})
    for s in good:
        assert xgrammar.testing._is_grammar_accept_string(grammar, s), s
    for s in bad:
        assert not xgrammar.testing._is_grammar_accept_string(grammar, s), s


VOCAB = ["a", "b", "ab", "<t>", "</s>", "c", "bc", "x", "</t>", "!", "q"]
TOKEN_CASES = [  # (format, token walk) — masks compared with xgrammar at every step
    ({"type": "tag", "begin": {"type": "token", "token": "<t>"}, "content": {"type": "any_tokens"},
      "end": {"type": "token", "token": 8}}, [3, 0, 2, 8, 4]),
    ({"type": "tag", "begin": {"type": "token", "token": 3}, "content": {"type": "any_text"},
      "end": {"type": "token", "token": 8}}, [3, 0, 5, 8, 4]),
    ({"type": "token_triggered_tags", "trigger_tokens": [3], "exclude_tokens": [7], "tags": [
        {"type": "tag", "begin": {"type": "token", "token": 3}, "content": {"type": "const_string", "value": "q"},
         "end": {"type": "token", "token": 8}}]}, [0, 3, 10, 8, 1, 4]),
    ({"type": "token_triggered_tags", "trigger_tokens": [3], "at_least_one": True, "tags": [
        {"type": "tag", "begin": {"type": "token", "token": 3}, "content": {"type": "const_string", "value": "q"},
         "end": {"type": "token", "token": 8}}]}, [3, 10, 8, 0, 4]),
    ({"type": "token_dispatch", "rules": [[3, {"type": "const_string", "value": "q"}]], "loop": False,
      "exclude_tokens": [7]}, [0, 3, 10, 4]),
    ({"type": "sequence", "elements": [{"type": "exclude_token", "exclude_tokens": [0, "b"]},
                                       {"type": "token", "token": "q"}]}, [5, 10, 4]),
]


def token_masks(module, fmt, walk):
    info = module.TokenizerInfo(VOCAB, stop_token_ids=[4])
    compiled = module.GrammarCompiler(info).compile_structural_tag({"type": "structural_tag", "format": fmt})
    matcher = module.GrammarMatcher(compiled)
    bitmask = module.allocate_token_bitmask(1, info.vocab_size)
    out = []
    for t in walk:
        matcher.fill_next_token_bitmask(bitmask)
        rejected = set(module.testing._get_masked_tokens_from_bitmask(bitmask, info.vocab_size))
        out.append(sorted(set(range(len(VOCAB))) - rejected))
        out.append(matcher.accept_token(t))
    return out


@pytest.mark.xgrammar
@pytest.mark.parametrize("fmt, walk", TOKEN_CASES, ids=[json.dumps(c[0])[:60] for c in TOKEN_CASES])
def test_token_formats_give_xgrammars_masks(xgrammar, fmt, walk):
    have = token_masks(xgr, fmt, walk)
    assert have == token_masks(xgrammar, fmt, walk)
    assert all(v is True for v in have[1::2])


BAD = [  # (structural tag, JSON path in the message, words in the message)
    ({"type": "structural_tag", "format": {"type": "bogus"}}, "format.type", "not recognized"),
    ({"type": "structural_tag", "format": {"type": "sequence", "elements": []}}, "format.elements", "at least one"),
    ({"type": "structural_tag", "format": {"type": "const_string"}}, "format.value", "missing"),
    ({"type": "structural_tag", "format": {"type": "const_string", "value": 3}}, "format.value", "expected a string"),
    ({"type": "structural_tag", "format": {"type": "const_string", "value": "a", "extra": 1}}, "format.extra",
     "unknown field"),
    ({"type": "structural_tag", "format": {"type": "tag", "begin": "<a>", "content": {"type": "any_text"},
                                           "end": ""}}, "format.end", "at least one end string must be non-empty"),
    ({"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<g"], "tags": [T1]}},
     "format.tags[0].begin", "does not match any trigger"),
    ({"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<f", ""], "tags": [T1]}},
     "format.triggers[1]", "non-empty"),
    ({"type": "structural_tag", "format": {"type": "or", "elements": [
        {"type": "json_schema", "json_schema": {"type": "nonsense"}}]}}, "format.elements[0].json_schema", ""),
    ({"type": "structural_tag", "format": {"type": "grammar", "grammar": "root ::= "}}, "format.grammar", "EBNF"),
    ({"type": "structural_tag", "format": {"type": "regex", "pattern": "(a"}}, "format.pattern", ""),
    ({"type": "structural_tag", "format": {"type": "token", "token": "<t>"}}, "format.token", "needs a tokenizer"),
    ({"type": "structural_tag", "format": {"type": "repeat", "min": 3, "max": 2, "content": T1}}, "format", "min"),
    ({"type": "structural_tag", "format": {"type": "json_schema", "json_schema": {}, "style": "yaml"}},
     "format.style", "yaml"),
    ({"type": "other", "format": {"type": "any_text"}}, "type", "structural_tag"),
    ({"type": "structural_tag"}, "format", "missing"),
    ("{not json", "", "not valid JSON"),
]


@pytest.mark.parametrize("tag, path, words", BAD, ids=[json.dumps(b[0])[:60] for b in BAD])
def test_bad_structural_tags_name_the_offending_part(tag, path, words):
    with pytest.raises(xgr.InvalidStructuralTagError) as info:
        xgr.Grammar.from_structural_tag(tag)
    assert str(info.value).startswith(path) and words in str(info.value)


def test_unknown_token_strings_are_refused_at_compile_time():
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo(VOCAB))
    with pytest.raises(xgr.InvalidStructuralTagError, match="not a token of the vocabulary"):
        compiler.compile_structural_tag({"type": "structural_tag", "format": {"type": "token", "token": "zzz"}})


AT = {"type": "any_text", "excludes": ["x"]}
AT0 = {"type": "any_text"}
CONST = {"type": "const_string", "value": "a"}
TAG_U = {"type": "tag", "begin": "<u>", "content": CONST, "end": "</u>"}
# contents of a tag whose only end string is empty, and whether xgrammar 0.2.8 takes them: an
# unlimited content needs a non-empty end unless it is a free-text format with excludes
EMPTY_END_CONTENTS = [
    (AT, True), (AT0, False), ({"type": "star", "content": AT}, False), ({"type": "star", "content": CONST}, False),
    ({"type": "plus", "content": CONST}, False), ({"type": "repeat", "min": 0, "max": -1, "content": CONST}, False),
    ({"type": "repeat", "min": 0, "max": 3, "content": AT0}, False), ({"type": "repeat", "min": 0, "max": 0, "content": AT0}, True),
    ({"type": "tags_with_separator", "tags": [TAG_U], "separator": ","}, False),
    ({"type": "triggered_tags", "triggers": ["<u>"], "tags": [TAG_U], "at_least_one": True, "stop_after_first": True}, False),
    ({"type": "triggered_tags", "triggers": ["<u>"], "tags": [TAG_U], "excludes": ["x"]}, True),
    ({"type": "sequence", "elements": [AT0, CONST]}, False), ({"type": "sequence", "elements": [CONST, AT0]}, False),
    ({"type": "sequence", "elements": [AT, CONST]}, True), ({"type": "or", "elements": [AT, CONST]}, True),
    ({"type": "or", "elements": [AT0, CONST]}, False), ({"type": "optional", "content": AT}, False),
    ({"type": "sequence", "elements": [CONST, {"type": "sequence", "elements": [AT]}]}, True),
]


def _empty_end_tag(content) -> dict:
    return {"type": "structural_tag", "format": {"type": "tag", "begin": "<t>", "content": content, "end": ""}}


@pytest.mark.parametrize("content, taken", EMPTY_END_CONTENTS, ids=[json.dumps(c[0])[:70] for c in EMPTY_END_CONTENTS])
def test_an_unlimited_content_needs_an_end_unless_it_has_excludes(content, taken):
    if taken:
        xgr.Grammar.from_structural_tag(_empty_end_tag(content))
    else:
        with pytest.raises(xgr.InvalidStructuralTagError, match="^format.end: when the content is unlimited"):
            xgr.Grammar.from_structural_tag(_empty_end_tag(content))


@pytest.mark.xgrammar
@pytest.mark.parametrize("content, taken", EMPTY_END_CONTENTS, ids=[json.dumps(c[0])[:70] for c in EMPTY_END_CONTENTS])
def test_the_empty_end_verdicts_are_xgrammars(content, taken):
    xg = pytest.importorskip("xgrammar")
    try:
        xg.Grammar.from_structural_tag(json.dumps(_empty_end_tag(content)))
        theirs = True
    except Exception as e:  # its InvalidStructuralTagError
        assert "at least one end string must be non-empty" in str(e)
        theirs = False
    assert theirs == taken


# A tag whose content ends itself at an exclude, with an empty end, inside triggered tags (a
# dispatch loop whose channels have no end delimiter): the languages xgrammar 0.2.8 gives
EMPTY_END_LANGUAGES = [
    ({"type": "triggered_tags", "triggers": ["<t>"], "tags": [{"begin": "<t>", "content": {"type": "any_text",
      "excludes": ["<t>", "<bad>"]}, "end": ""}]},
     ["<t>", "<t>abc", "<t>ab<bad>", "<t>x<t>y", "ab<t>c", "", "<t", "<bad>"], []),
    ({"type": "tag", "begin": "<t>", "content": {"type": "any_text", "excludes": ["<bad>"]}, "end": ["", ""]},
     ["<t>", "<t>abc", "<t>x<t>y"], ["<t><bad>", "<t>ab<bad>", ""]),
]


@pytest.mark.parametrize("fmt, accepted, refused", EMPTY_END_LANGUAGES, ids=["triggered_tags", "tag"])
def test_a_content_with_excludes_ends_the_tag_where_its_excludes_begin(fmt, accepted, refused):
    grammar = xgr.Grammar.from_structural_tag({"type": "structural_tag", "format": fmt})
    assert [s for s in accepted + refused if _is_grammar_accept_string(grammar, s)] == accepted


@pytest.mark.xgrammar
@pytest.mark.parametrize("fmt, accepted, refused", EMPTY_END_LANGUAGES, ids=["triggered_tags", "tag"])
def test_the_empty_end_languages_are_xgrammars(fmt, accepted, refused):
    xg = pytest.importorskip("xgrammar")
    grammar = xg.Grammar.from_structural_tag(json.dumps({"type": "structural_tag", "format": fmt}))
    assert [s for s in accepted + refused if xg.testing._is_grammar_accept_string(grammar, s)] == accepted


# The end strings of the nearest enclosing tag are excluded by every free-text format of its
# content, wherever it stands (not only its unlimited tail), nested tags aside: xgrammar 0.2.8
NEAREST_TAG_ENDS = [
    ({"type": "tag", "begin": "<t>", "content": {"type": "sequence", "elements": [AT0, CONST]}, "end": "</t>"},
     ["<t>xa</t>", "<t>a</t>"], ["<t></t>a</t>"]),
    ({"type": "tag", "begin": "<t>", "content": {"type": "dispatch", "rules": [["<a>", {"type": "sequence",
      "elements": [AT0, CONST]}]], "loop": False}, "end": "</t>"}, ["<t><a>xa</t>", "<t>q<a>xa</t>"], ["<t><a></t>a</t>"]),
    ({"type": "tag", "begin": "<t>", "content": {"type": "sequence", "elements": [
        {"type": "star", "content": {"type": "sequence", "elements": [AT0, CONST]}}, CONST]}, "end": "</t>"},
     ["<t>xaa</t>"], ["<t></t>aa</t>"]),
    ({"type": "tag", "begin": "<t>", "content": {"type": "sequence", "elements": [{"type": "tag", "begin": "<u>",
      "content": AT0, "end": "</u>"}, AT0]}, "end": "</t>"}, ["<t><u></t></u>z</t>", "<t><u>q</u></t>"], []),
    ({"type": "tag", "begin": "<t>", "content": {"type": "sequence", "elements": [{"type": "triggered_tags",
      "triggers": ["<u>"], "tags": [{"begin": "<u>", "content": CONST, "end": "</u>"}]}, CONST]}, "end": "</t>"},
     ["<t>z<u>a</u>a</t>"], ["<t></t>a</t>"]),
]


@pytest.mark.parametrize("fmt, accepted, refused", NEAREST_TAG_ENDS, ids=[str(k) for k in range(len(NEAREST_TAG_ENDS))])
def test_free_text_anywhere_in_a_tag_excludes_its_end(fmt, accepted, refused):
    grammar = xgr.Grammar.from_structural_tag({"type": "structural_tag", "format": fmt})
    assert [s for s in accepted + refused if _is_grammar_accept_string(grammar, s)] == accepted


@pytest.mark.xgrammar
@pytest.mark.parametrize("fmt, accepted, refused", NEAREST_TAG_ENDS, ids=[str(k) for k in range(len(NEAREST_TAG_ENDS))])
def test_the_nearest_tag_languages_are_xgrammars(fmt, accepted, refused):
    xg = pytest.importorskip("xgrammar")
    grammar = xg.Grammar.from_structural_tag(json.dumps({"type": "structural_tag", "format": fmt}))
    assert [s for s in accepted + refused if xg.testing._is_grammar_accept_string(grammar, s)] == accepted


def test_an_exclude_token_content_excludes_its_tags_end_token():
    """`exclude_token` inside a tag whose end is a token never reads that token (xgrammar 0.2.8:
    the end token is detected and added to the excludes)."""
    vocab = ["<s>", "</s>", "<tool>", "<end>", "hello", "<bad>"]
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[1])
    tag = {"type": "structural_tag", "format": {"type": "tag", "begin": {"type": "token", "token": "<tool>"},
           "content": {"type": "exclude_token", "exclude_tokens": ["<bad>"]}, "end": {"type": "token", "token": "<end>"}}}
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_structural_tag(tag))
    assert matcher.accept_token(2)
    assert [vocab[t] for t in np.flatnonzero(matcher.compute_bool_mask())] == ["<s>", "<tool>", "hello"]
    assert not matcher.accept_token(3) and not matcher.accept_token(5)
    assert matcher.accept_token(4) and matcher.accept_token(3) and matcher.accept_token(1)


def test_unlimited_formats():
    """xgrammar 0.2.8's analysis (the verdicts above are its own): a sequence is unlimited when
    any element is (without excludes), not only its last; triggered tags are, whatever
    `at_least_one` and `stop_after_first` say."""
    assert is_unlimited({"type": "any_text"}) and is_unlimited({"type": "star", "content": {"type": "any_text"}})
    assert is_unlimited({"type": "sequence", "elements": [T1, {"type": "any_tokens"}]})
    assert is_unlimited({"type": "sequence", "elements": [{"type": "any_text"}, T1]})
    assert not is_unlimited({"type": "sequence", "elements": [AT, T1]})
    assert is_unlimited({"type": "triggered_tags", "triggers": ["<f"], "tags": [T1], "at_least_one": True,
                         "stop_after_first": True})


def test_json_text_dict_and_legacy_forms_give_the_same_grammar():
    fmt = {"type": "triggered_tags", "triggers": ["<f"], "tags": [
        {"type": "tag", "begin": "<f>", "content": {"type": "json_schema", "json_schema": {"type": "integer"}},
         "end": "</f>"}]}
    a = xgr.Grammar.from_structural_tag({"type": "structural_tag", "format": fmt})
    b = xgr.Grammar.from_structural_tag(json.dumps({"type": "structural_tag", "format": fmt}))
    c = xgr.Grammar.from_structural_tag([{"begin": "<f>", "schema": {"type": "integer"}, "end": "</f>"}], ["<f"])
    assert str(a) == str(b) == str(c)


@pytest.mark.parametrize("pattern, text, verdict", [
    ("a.b", "a\nb", True),      # `.` takes a newline, as Grammar.from_regex's dialect does
    ("a.b", "axb", True),
    (r"a\qb", "aqb", True),     # an unknown escape is the character itself
    (r"\x41+", "AA", True),
    ("[0-9]+", "a", False),
])
def test_regex_format_reads_the_from_regex_dialect(pattern, text, verdict):
    info = xgr.TokenizerInfo(["a", "\n", "b", "x", "q", "A", "0"])
    compiled = xgr.GrammarCompiler(info).compile_structural_tag(
        {"type": "structural_tag", "format": {"type": "regex", "pattern": pattern}})
    matcher = xgr.GrammarMatcher(compiled)
    assert (matcher.accept_string(text) and matcher.is_completed()) == verdict
