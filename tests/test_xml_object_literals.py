"""XML parameter styles (xg2ref/frontends/structural_tag/xml_parameters.py): a top-level object enum/const written as
the style's parameters (DeepSeek V4.1's builtin tag among them), and the deprecated
`qwen_xml_parameter` format; verdicts and masks against xgrammar 0.2.8."""

import json

import pytest

import xg2ref as xgr
from tests.walks import check_verdicts
from xg2ref.testing import _is_grammar_accept_string

DS = ('<\uff5cDSML\uff5c parameter name="', "</\uff5cDSML\uff5c parameter>")
DS_OLD = ('<\uff5cDSML\uff5cparameter name="', "</\uff5cDSML\uff5cparameter>")


def ds(name, value, raw=False, tags=DS):
    return f'{tags[0]}{name}" string="{"true" if raw else "false"}">{value}{tags[1]}'


def qp(name, value):
    return f"<parameter={name}>{value}</parameter>"


def fmt(schema, style, **extra):
    return dict({"type": "json_schema", "json_schema": schema, "style": style}, **extra)


M3 = "]<]minimax[>["
# (format, accepted, rejected); the verdicts are xgrammar 0.2.8's (test_verdicts_are_xgrammars)
CASES = [
    (fmt({"const": {"a": 1, "b": "x"}}, "deepseek_v4_1_xml"),
     [ds("a", 1) + ds("b", "x", True), ds("a", 1) + "\n" + ds("b", "x", True),
      " " + ds("a", " 1 ") + ds("b", "x", True)],
     ['{"a":1,"b":"x"}', ds("b", "x", True) + ds("a", 1), ds("a", 1), ds("a", 1) + ds("b", " x ", True)]),
    (fmt({"enum": [{"a": 1}, {"b": "x"}, 3, "s"]}, "deepseek_v4_1_xml"),
     [ds("a", 1), ds("b", "x", True), "\n" + ds("a", 1) + "\n", "3", "s"],
     ['{"a":1}', ds("a", 1) + ds("b", "x", True), '"s"']),
    (fmt({"type": "object", "const": {"a": 1}}, "deepseek_xml"), [ds("a", 1, tags=DS_OLD)], ['{"a":1}']),
    (fmt({"const": {"a": {"c": [1, "q"]}, "n": None}}, "deepseek_v4_1_xml"),
     [ds("a", '{"c":[1,"q"]}') + ds("n", "null")], [ds("a", '{"c": [1, "q"]}') + ds("n", "null")]),
    (fmt({"const": {"a": 1.0, "b": 10**22, "c": 0.1}}, "deepseek_v4_1_xml"),
     [ds("a", 1) + ds("b", "1e+22") + ds("c", "0.10000000000000001")],
     [ds("a", "1.0") + ds("b", "1e+22") + ds("c", "0.1")]),
    (fmt({"const": {'a"&': "1<"}}, "deepseek_v4_1_xml"), [ds('a"&', "1<", True)], []),
    (fmt({"const": {}}, "deepseek_v4_1_xml"), ["", " "], ["{}"]),
    (fmt({"const": [1, 2]}, "deepseek_v4_1_xml"), ["[1,2]"], [" [1,2]"]),
    (fmt({"const": {"a": "<x>"}}, "deepseek_v4_1_xml", excludes=["<x>"]), [], [ds("a", "<x>", True), ""]),
    (fmt({"const": {"a<x>": "1"}}, "deepseek_v4_1_xml", excludes=["<x>"]), [], [ds("a<x>", "1", True), ""]),
    (fmt({"enum": [[{"a": 1}], {"a": [{"b": 1}]}]}, "deepseek_v4_1_xml"), ['[{"a":1}]', ds("a", '[{"b":1}]')], []),
    (fmt({"const": {"a": 1, "b": "x"}}, "qwen_xml"),
     [qp("a", 1) + qp("b", "x"), qp("a", " 1 ") + " " + qp("b", " x ") + " "], ['{"a":1,"b":"x"}']),
    (fmt({"const": {"a": 1, "b": "x"}}, "qwen_xml", any_order=True), [qp("a", 1) + qp("b", "x")],
     [qp("b", "x") + qp("a", 1)]),
    (fmt({"const": {"a": 1, "b": "x"}}, "qwen_xml", max_whitespace_cnt=1), [qp("a", " 1 ") + " " + qp("b", "x")],
     [qp("a", "  1") + qp("b", "x")]),
    (fmt({"const": {"k": [1, 2]}}, "qwen_xml", excludes=["1,"]), [qp("k", "[1,2]")], []),
    (fmt({"const": {"k": "1,"}}, "qwen_xml", excludes=["1,"]), [], [qp("k", "1,")]),
    (fmt({"anyOf": [{"const": {"a": 1}}, {"type": "object", "properties": {"c": {"type": "integer"}}}]}, "qwen_xml"),
     [qp("a", 1), qp("c", 1)], []),
    (fmt({"const": {"a": 1, "b": "x"}}, "minimax_xml"),
     ['<parameter name="a">1</parameter><parameter name="b">x</parameter>'], ['{"a":1,"b":"x"}']),
    (fmt({"const": {"a": 1, "b": "x"}}, "glm_xml"),
     ["<arg_key>a</arg_key> <arg_value>1</arg_value> <arg_key>b</arg_key>\n<arg_value>x</arg_value>"],
     ['{"a":1,"b":"x"}']),
    (fmt({"const": {'a"&': "x", "n": [1]}}, "kimi_k3_xml"),
     ['<|open|>argument key="a&quot;&amp;" type="string"<|sep|>x<|close|>argument<|sep|>'
      '<|open|>argument key="n" type="array"<|sep|>[1]<|close|>argument<|sep|>'], ['{"a":1,"b":"x"}']),
    # cohere keeps compact JSON, MiniMax M3 its own nested markup
    (fmt({"const": {"a": 1, "b": "x"}}, "cohere_xml"), ['{"a":1,"b":"x"}'],
     ['<cofl:value name="a" type="json">1</cofl:value><cofl:value name="b" type="raw">x</cofl:value>']),
    (fmt({"const": {"a": 1, "b": "x"}}, "minimax_m3_xml"), [f"{M3}<a>1{M3}</a>{M3}<b>x{M3}</b>"],
     [f"{M3}<a>1{M3}</a>\n{M3}<b>x{M3}</b>"]),
]
PARAMS = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]}
QWEN = [qp("a", "x"), qp("a", "x") + qp("b", 1), qp("a", "x<y>"), qp("a", "x") + "\n"]
QWEN_NOT = ['{"a": "x"}', qp("b", 1) + qp("a", "x"), qp("a", "x") + qp("c", 1)]
CASES += [  # the deprecated qwen_xml_parameter: json_schema with style qwen_xml, whatever `style` holds
    ({"type": "qwen_xml_parameter", "json_schema": PARAMS}, QWEN, QWEN_NOT),
    ({"type": "qwen_xml_parameter", "json_schema": PARAMS, "style": "json"}, QWEN, QWEN_NOT),
    ({"type": "qwen_xml_parameter", "json_schema": PARAMS, "style": 3}, QWEN, QWEN_NOT),
    ({"type": "qwen_xml_parameter", "json_schema": PARAMS, "any_order": True}, [qp("b", 1) + qp("a", "x")],
     QWEN_NOT[:1]),
    ({"type": "qwen_xml_parameter", "json_schema": PARAMS, "excludes": ["<y>"]}, QWEN[:2], [qp("a", "x<y>")]),
    ({"type": "qwen_xml_parameter", "json_schema": True}, [qp("q", 1), ""], ['{"q": 1}']),
]
IDS = [json.dumps(c[0])[:70] for c in CASES]


@pytest.mark.parametrize("fmt, good, bad", CASES, ids=IDS)
def test_formats_accept_what_they_should(fmt, good, bad):
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


def test_qwen_xml_parameter_is_the_qwen_xml_style():
    as_style = xgr.Grammar.from_structural_tag({"type": "structural_tag", "format": fmt(PARAMS, "qwen_xml")})
    deprecated = xgr.Grammar.from_structural_tag(
        {"type": "structural_tag", "format": {"type": "qwen_xml_parameter", "json_schema": PARAMS}})
    assert str(as_style) == str(deprecated)
    with pytest.raises(xgr.InvalidStructuralTagError, match="format.json_schema: missing"):
        xgr.Grammar.from_structural_tag({"type": "structural_tag", "format": {"type": "qwen_xml_parameter"}})
    with pytest.raises(xgr.InvalidStructuralTagError, match="format.excludes"):
        xgr.Grammar.from_structural_tag({"type": "structural_tag", "format": {
            "type": "qwen_xml_parameter", "json_schema": PARAMS, "excludes": [" y"]}})


# ---- DeepSeek V4.1's builtin tag with object-literal tool parameters ----------------------------

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"const": {"a": 1, "b": "x"}}}},
         {"type": "function", "function": {"name": "g", "parameters": {"enum": [{"q": [1]}, {"r": "s"}]}}}]
INVOKE = ('<\uff5cDSML\uff5c invoke name="', "</\uff5cDSML\uff5c invoke>\n")
CALLS = ("\n\n<\uff5cDSML\uff5c calls>\n", "</\uff5cDSML\uff5c calls>")
CALL_F = f'{INVOKE[0]}f">\n{ds("a", 1)}{ds("b", "x", True)}{INVOKE[1]}'
CALL_G = f'{INVOKE[0]}g">\n{ds("q", "[1]")}\n{INVOKE[1]}'


def deepseek_tag(module, choice):
    return module.get_model_structural_tag("deepseek_v4_1", tools=TOOLS, tool_choice=choice, reasoning="disabled")


@pytest.mark.parametrize("choice", ["auto", "required"])
def test_deepseek_v4_1_writes_object_literals_as_parameters(choice):
    grammar = xgr.Grammar.from_structural_tag(deepseek_tag(xgr, choice))
    lead = "hi" if choice == "auto" else ""
    for body in [CALL_F, CALL_G, CALL_F + CALL_G]:
        assert _is_grammar_accept_string(grammar, lead + CALLS[0] + body + CALLS[1]), body
    for body in [f'{INVOKE[0]}f">\n{{"a":1,"b":"x"}}{INVOKE[1]}', f'{INVOKE[0]}f">\n{ds("a", 1)}{INVOKE[1]}']:
        assert not _is_grammar_accept_string(grammar, lead + CALLS[0] + body + CALLS[1]), body


VOCAB = ["hi", "\n", "\n\n", "<\uff5cDSML\uff5c calls>", "</\uff5cDSML\uff5c calls>", INVOKE[0], INVOKE[1], 'f">\n',
         'g">\n', DS[0], DS[1], 'a" string="false">', 'b" string="true">', 'q" string="false">', "1", "x", "[1]",
         "{", '"a":1', "}", "</s>", " ", "b", "<", "\uff5c"]


def deepseek_masks(module, choice, walk):
    info = module.TokenizerInfo(VOCAB, stop_token_ids=[VOCAB.index("</s>")])
    compiled = module.GrammarCompiler(info).compile_structural_tag(deepseek_tag(module, choice))
    matcher = module.GrammarMatcher(compiled)
    bitmask = module.allocate_token_bitmask(1, info.vocab_size)
    out = []
    for t in walk:
        matcher.fill_next_token_bitmask(bitmask)
        rejected = set(module.testing._get_masked_tokens_from_bitmask(bitmask, info.vocab_size))
        out.append((sorted(set(range(len(VOCAB))) - rejected), matcher.accept_token(VOCAB.index(t))))
    return out


WALK = ["hi", "\n\n", "<\uff5cDSML\uff5c calls>", "\n", INVOKE[0], 'f">\n', DS[0], 'a" string="false">', " ", "1",
        DS[1], DS[0], 'b" string="true">', "x", DS[1], INVOKE[1], "</\uff5cDSML\uff5c calls>", "</s>"]


@pytest.mark.xgrammar
def test_deepseek_v4_1_masks_are_xgrammars(xgrammar):
    assert deepseek_tag(xgr, "auto").model_dump() == deepseek_tag(xgrammar, "auto").model_dump()
    have = deepseek_masks(xgr, "auto", WALK)
    assert have == deepseek_masks(xgrammar, "auto", WALK)
    assert all(ok for _, ok in have)
    after_open = have[WALK.index('f">\n') + 1][0]
    assert VOCAB.index("{") not in after_open and VOCAB.index(DS[0]) in after_open
