"""Structural tags: every format type against xgrammar 0.2.8's verdicts on strings and tokens,
and bad structural tags naming the offending part."""

import json

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


def test_unlimited_formats():
    assert is_unlimited({"type": "any_text"}) and is_unlimited({"type": "star", "content": {"type": "any_text"}})
    assert is_unlimited({"type": "sequence", "elements": [T1, {"type": "any_tokens"}]})
    assert not is_unlimited({"type": "sequence", "elements": [{"type": "any_text"}, T1]})
    assert not is_unlimited({"type": "triggered_tags", "triggers": ["<f"], "tags": [T1], "at_least_one": True,
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
