"""Builtin model structural tags: the tags equal xgrammar 0.2.8's for every registered model over a
grid of tools, tool choices, reasoning modes and options; bad arguments raise ValueError; and
the tags compile and accept the tool calls the models write."""

import itertools
import json

import pytest

import xg2ref as xgr
from xg2ref import builtin_structural_tag as bst
from xg2ref.testing import _is_grammar_accept_string

MODELS = ["cohere", "deepseek_r1", "deepseek_v3_1", "deepseek_v3_2", "deepseek_v4", "deepseek_v4_1", "exaone",
          "glm_4_7", "harmony", "kimi", "kimi_k3", "llama", "mimo", "minimax", "minimax_m3", "qwen_3", "qwen_3_5",
          "qwen_3_coder"]
JSON_STYLE_MODELS = ["deepseek_r1", "deepseek_v3_1", "exaone", "harmony", "kimi", "llama", "qwen_3"]

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
CLOCK = {"type": "function", "function": {"name": "get_time",
                                          "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}}}
PING = {"type": "function", "function": {"name": "ping"}}
LOOSE = {"type": "function", "function": {"name": "loose", "parameters": {"type": "object"}, "strict": False}}
SEARCH = {"type": "web_search_preview", "name": "browser.search",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}
PYTHON = {"type": "code_interpreter"}

TOOL_SETS = [None, [], [WEATHER], [WEATHER, CLOCK], [PING], [LOOSE], [WEATHER, SEARCH, PYTHON], [SEARCH]]
FORCE_WEATHER = {"type": "function", "function": {"name": "get_weather"}}
CHOICES = ["auto", "none", "required", None, FORCE_WEATHER, {"type": "web_search_preview"},
           {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [FORCE_WEATHER]}},
           {"type": "allowed_tools", "allowed_tools": {
               "mode": "required", "tools": [FORCE_WEATHER, {"type": "web_search_preview"}]}}]
REASONING = ["enabled", "disabled", "auto", True, False]
OPTIONS = [{}, {"parallel_tool_calls": False}, {"exclude_special_tokens": False}, {"any_order": True},
           {"max_whitespace_cnt": 2}, {"force_reasoning": True}]


@pytest.fixture(scope="module")
def xgrammar():
    return pytest.importorskip("xgrammar")


def _outcome(build):
    try:
        return "ok", build()
    except Exception as err:  # noqa: BLE001  (the kind of error is what is compared)
        return "error", err


# ---------------------------------------------------------------------------------------------
# Against xgrammar
# ---------------------------------------------------------------------------------------------


@pytest.mark.xgrammar
def test_same_models_as_xgrammar(xgrammar):
    assert sorted(xgrammar.builtin_structural_tag._structural_tag_registry) == MODELS


@pytest.mark.xgrammar
@pytest.mark.parametrize("model", MODELS)
def test_tags_equal_xgrammars(xgrammar, model):
    equal = errors = 0
    for tools, choice, reasoning, options in itertools.product(TOOL_SETS, CHOICES, REASONING, OPTIONS):
        kwargs = dict(tools=tools, tool_choice=choice, reasoning=reasoning, **options)
        theirs = _outcome(lambda: xgrammar.get_model_structural_tag(model, **kwargs).model_dump(exclude_none=True))
        ours = _outcome(lambda: xgr.get_model_structural_tag(model, **kwargs).model_dump(exclude_none=True))
        if theirs[0] == "ok":
            assert ours == theirs, kwargs
            equal += 1
        else:
            # xgrammar's failed assertion (tool_choice="required" with builtin tools only, on a model
            # without builtin tools) is a ValueError here.
            assert isinstance(theirs[1], (ValueError, AssertionError)), (kwargs, theirs[1])
            assert ours[0] == "error" and isinstance(ours[1], ValueError), (kwargs, ours)
            errors += 1
    assert equal >= 300 and errors > 0


@pytest.mark.xgrammar
@pytest.mark.parametrize("model", MODELS)
def test_full_dump_and_json_text_equal_xgrammars(xgrammar, model):
    for tools, choice in [([WEATHER, CLOCK], "auto"), ([WEATHER], FORCE_WEATHER), ([], "auto")]:
        theirs = xgrammar.get_model_structural_tag(model, tools, choice, reasoning="auto")
        ours = xgr.get_model_structural_tag(model, tools, choice, reasoning="auto")
        assert ours.model_dump() == theirs.model_dump()
        assert ours.model_dump_json() == theirs.model_dump_json()
        assert ours.model_dump_json(indent=2) == theirs.model_dump_json(indent=2)
        assert xgr.StructuralTag.from_json(theirs.model_dump_json()) == ours


@pytest.mark.xgrammar
@pytest.mark.parametrize("tools, choice", [
    ([WEATHER, SEARCH], "auto"), ([WEATHER, SEARCH], "none"), ([WEATHER, SEARCH], None),
    ([WEATHER, SEARCH], FORCE_WEATHER), ([WEATHER, SEARCH], {"type": "web_search_preview", "name": "x"}),
    ([WEATHER, CLOCK, SEARCH], {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [
        {"type": "function", "function": {"name": "get_time"}}, {"type": "web_search_preview"}]}}),
    ([{"type": "function", "name": "flat"}], "auto"),  # the flat (Responses API) shape is a builtin tool
    ([{"function": {"name": "untyped", "strict": "yes"}}], "required"),
])
def test_normalize_tool_choice_equals_xgrammars(xgrammar, tools, choice):
    functions, builtins, simple = xgrammar.builtin_structural_tag.normalize_tool_choice(tools, choice)
    assert xgr.normalize_tool_choice(tools, choice) == (
        [tool.model_dump() for tool in functions], [tool.model_dump() for tool in builtins], simple)


BAD_ARGUMENTS = [
    ("no_such_model", {}),
    ("llama", {"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "nope"}}}),
    ("llama", {"tools": [], "tool_choice": "required"}),
    ("qwen_3", {"tool_choice": "required"}),
    ("qwen_3", {"tools": [WEATHER], "tool_choice": "sometimes"}),
    ("qwen_3", {"tools": [WEATHER], "tool_choice": 7}),
    ("qwen_3", {"tools": [WEATHER], "reasoning": "maybe"}),
    ("qwen_3", {"tools": [WEATHER], "reasoning": None}),
    ("qwen_3", {"tools": [WEATHER], "parallel_tool_calls": "no"}),
    ("kimi", {"tools": {"a": WEATHER}}),
    ("kimi", {"tools": [3]}),
    ("kimi", {"tools": [{"name": "no_type"}]}),
    ("kimi", {"tools": [WEATHER, WEATHER], "tool_choice": FORCE_WEATHER}),
    ("harmony", {"tools": [SEARCH, SEARCH], "tool_choice": {"type": "web_search_preview"}}),
    ("harmony", {"tools": [WEATHER], "tool_choice": {"type": "web_search_preview"}}),
    ("harmony", {"tools": [WEATHER], "tool_choice": {"type": "allowed_tools", "allowed_tools": {
        "mode": "auto", "tools": [{"type": "function", "function": {"name": "get_time"}}]}}}),
    ("harmony", {"tools": [WEATHER], "tool_choice": {"type": "allowed_tools", "allowed_tools": {
        "mode": "auto", "tools": [{"type": "function", "name": "get_weather"}]}}}),
    ("harmony", {"tools": [WEATHER], "tool_choice": {"type": "allowed_tools", "allowed_tools": {
        "mode": "required", "tools": []}}}),
    ("mimo", {"tools": [WEATHER, SEARCH]}),
    ("minimax_m3", {"tools": [SEARCH], "tool_choice": "required"}),
    ("llama", {"tools": [SEARCH], "tool_choice": {"type": "web_search_preview"}}),
]


@pytest.mark.xgrammar
@pytest.mark.parametrize("model, kwargs", BAD_ARGUMENTS)
def test_bad_arguments_raise_value_error_in_both(xgrammar, model, kwargs):
    with pytest.raises(ValueError):
        xgrammar.get_model_structural_tag(model, **kwargs)
    with pytest.raises(ValueError):
        xgr.get_model_structural_tag(model, **kwargs)


@pytest.mark.xgrammar
def test_xgrammars_pydantic_tools_are_accepted(xgrammar):
    from xgrammar.openai_tool_call_schema import BuiltinToolParam, FunctionToolParam, NamedToolChoiceParam

    tools = [FunctionToolParam.model_validate(WEATHER), BuiltinToolParam.model_validate(SEARCH)]
    choice = NamedToolChoiceParam.model_validate(FORCE_WEATHER)
    assert (xgr.get_model_structural_tag("harmony", tools, choice).model_dump(exclude_none=True)
            == xgrammar.get_model_structural_tag("harmony", tools, choice).model_dump(exclude_none=True))


# ---------------------------------------------------------------------------------------------
# Without xgrammar
# ---------------------------------------------------------------------------------------------


def test_every_model_is_registered_and_the_alias_is_the_same_function():
    assert sorted(bst.registered_models()) == MODELS
    assert xgr.get_builtin_structural_tag is xgr.get_model_structural_tag


def test_llama_required_tag_in_full():
    fmt = xgr.get_model_structural_tag("llama", [WEATHER, PING], "required").model_dump(exclude_none=True)["format"]
    assert fmt == {
        "type": "triggered_tags", "triggers": ['{"name": '], "at_least_one": True, "stop_after_first": False,
        "excludes": ["<think>", "</think>"],
        "tags": [{"type": "tag", "begin": '{"name": "get_weather", "parameters": ', "end": "}",
                  "content": {"type": "json_schema", "json_schema": WEATHER["function"]["parameters"],
                              "style": "json", "any_order": False, "excludes": []}},
                 {"type": "tag", "begin": '{"name": "ping", "parameters": ', "end": "}",
                  "content": {"type": "json_schema", "json_schema": True, "style": "json", "any_order": False,
                              "excludes": []}}]}


def test_options_reach_the_tag():
    fmt = xgr.get_model_structural_tag("qwen_3", [LOOSE], reasoning="disabled", parallel_tool_calls=False,
                                       any_order=True, max_whitespace_cnt=2,
                                       exclude_special_tokens=False).model_dump()["format"]
    assert fmt["stop_after_first"] is True and fmt["excludes"] == []
    args = fmt["tags"][0]["content"]
    assert args["json_schema"] is True  # strict=False leaves the arguments unconstrained
    assert args["any_order"] is True and args["max_whitespace_cnt"] == 2


def test_reasoning_modes_shape_the_prefix():
    def prefix(model, reasoning):
        return xgr.get_model_structural_tag(model, reasoning=reasoning).model_dump()["format"]["elements"][0]

    assert prefix("deepseek_r1", "enabled")["begin"] == ""  # the prompt opened <think>
    assert prefix("deepseek_r1", True) == prefix("deepseek_r1", "enabled")
    assert prefix("deepseek_r1", "auto")["content"]["begin"] == "<think>"
    assert prefix("mimo", "enabled")["begin"] == "<think>"  # MiMo's prompt does not open it
    assert prefix("qwen_3", "enabled")["elements"][1] == {"type": "const_string", "value": "\n\n"}
    assert xgr.get_model_structural_tag("qwen_3", reasoning=False).model_dump()["format"]["type"] == "any_text"
    minimax = xgr.get_model_structural_tag("minimax", reasoning="disabled").model_dump()["format"]["elements"]
    assert [e.get("value") for e in minimax[:2]] == ["\n</think>\n\n", "\n\n"]
    m3_auto = prefix("minimax_m3", "auto")["content"]
    assert m3_auto["type"] == "or" and m3_auto["elements"][1]["value"] == "</mm:think>"


def test_sectioned_layouts():
    def fmt(model, choice, reasoning="disabled"):
        return xgr.get_model_structural_tag(model, [WEATHER], choice, reasoning=reasoning).model_dump()["format"]

    r1 = fmt("deepseek_r1", FORCE_WEATHER)
    assert r1["begin"].startswith("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather")
    assert r1["end"] == "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    v32 = fmt("deepseek_v3_2", "required")
    assert v32["elements"][0]["value"] == "\n\n<｜DSML｜function_calls>\n"
    assert v32["elements"][1]["type"] == "tags_with_separator"
    cohere = fmt("cohere", FORCE_WEATHER)["elements"][1]
    assert cohere["begin"] == '<cofl:tool_call id="'
    assert cohere["content"]["elements"][1]["value"] == '" name="get_weather">'
    assert fmt("deepseek_v4_1", "none")["excludes"] == ["<think>", "</think>", "<｜DSML｜ calls>"]
    k3 = fmt("kimi_k3", "auto", "enabled")["elements"]
    assert [e["type"] for e in k3] == ["tag", "tag", "optional", "const_string"]


def test_normalize_tool_choice_without_xgrammar():
    functions, builtins, choice = xgr.normalize_tool_choice([WEATHER, CLOCK, SEARCH], {
        "type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
            {"type": "function", "function": {"name": "get_time"}}, {"type": "web_search_preview"}]}})
    assert [t["function"]["name"] for t in functions] == ["get_time"]
    assert builtins == [{"type": "web_search_preview", "name": "browser.search",
                         "parameters": SEARCH["parameters"]}]
    assert choice == "required"
    assert xgr.normalize_tool_choice([WEATHER], "none") == ([], [], "auto")
    assert xgr.normalize_tool_choice(None, None) == ([], [], "auto")
    assert xgr.normalize_tool_choice([SEARCH], {"type": "web_search_preview"})[2] == "forced"


@pytest.mark.parametrize("model, kwargs, message", [
    ("gpt-9", {}, "Unknown model"),
    ("llama", {"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "x"}}}, "'x'"),
    ("llama", {"tool_choice": "required"}, "required"),
    ("llama", {"reasoning": "sometimes"}, "reasoning"),
    ("llama", {"parallel_tool_calls": 1}, "parallel_tool_calls"),
    ("llama", {"tools": [{"type": "function", "function": {"name": "f", "parameters": True}}]}, "parameters"),
    ("llama", {"tools": [SEARCH], "tool_choice": "required"}, "function tool"),
    ("mimo", {"tools": [SEARCH]}, "builtin tools"),
])
def test_errors_name_the_problem(model, kwargs, message):
    with pytest.raises(ValueError, match=message):
        xgr.get_model_structural_tag(model, **kwargs)


def test_structural_tag_dumps_and_reads_json():
    st = xgr.get_model_structural_tag("kimi", [WEATHER], reasoning="auto")
    full, short = st.model_dump(), st.model_dump(exclude_none=True)
    assert '"max_whitespace_cnt": null' in json.dumps(full) and "max_whitespace_cnt" not in json.dumps(short)
    assert st.model_dump(by_alias=True) == full
    assert xgr.StructuralTag.from_json(st.model_dump_json()) == st
    assert xgr.StructuralTag.from_json(short) == st  # the defaults come back
    filled = xgr.StructuralTag.from_json({"format": {"type": "triggered_tags", "triggers": ["<"], "tags": []}})
    assert filled.model_dump()["format"] == {"type": "triggered_tags", "triggers": ["<"], "tags": [],
                                             "at_least_one": False, "stop_after_first": False, "excludes": []}
    with pytest.raises(ValueError, match="value"):  # pydantic names the missing field's path
        xgr.StructuralTag.from_json({"format": {"type": "const_string"}})
    with pytest.raises(ValueError):
        xgr.StructuralTag.from_json('{"type": "something_else", "format": {}}')


def test_register_model_structural_tag(monkeypatch):
    monkeypatch.setattr(bst, "_registry", dict(bst._registry))
    seen = {}

    @xgr.register_model_structural_tag("toy")
    def build_toy(functions, builtins, choice, reasoning, **options):
        seen.update(choice=choice, reasoning=reasoning, names=[t["function"]["name"] for t in functions], **options)
        return {"type": "structural_tag", "format": {"type": "const_string", "value": "ok"}}

    st = xgr.get_model_structural_tag("toy", [WEATHER, CLOCK], "required", reasoning=False)
    assert st.model_dump()["format"] == {"type": "const_string", "value": "ok"}
    assert seen == {"choice": "required", "reasoning": "disabled", "names": ["get_weather", "get_time"],
                    "any_order": False, "exclude_special_tokens": True, "max_whitespace_cnt": None,
                    "parallel_tool_calls": True}


@pytest.mark.parametrize("model", MODELS)
def test_every_model_without_tools_converts(model):
    for reasoning in ("enabled", "disabled", "auto"):
        xgr.Grammar.from_structural_tag(xgr.get_model_structural_tag(model, reasoning=reasoning))


@pytest.mark.parametrize("model", JSON_STYLE_MODELS)
def test_json_style_models_convert_for_every_choice(model):
    for choice, reasoning, parallel in itertools.product(["auto", "required", FORCE_WEATHER],
                                                         ["enabled", "disabled", "auto"], [True, False]):
        st = xgr.get_model_structural_tag(model, [WEATHER, PING], choice, reasoning=reasoning,
                                          parallel_tool_calls=parallel)
        xgr.Grammar.from_structural_tag(st)


CALL = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
QWEN_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
HARMONY_CALL = ('<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>{"city": "Paris"}'
                '<|call|>')


@pytest.mark.parametrize("model, kwargs, good, bad", [
    ("llama", {"tool_choice": "required"}, [CALL, CALL + CALL],
     ["", "hello", CALL.replace("get_weather", "get_time"), CALL.replace("city", "town")]),
    ("llama", {"parallel_tool_calls": False}, ["", "Let me look. " + CALL], [CALL + CALL, "<think>"]),
    ("qwen_3", {}, ["Paris it is.</think>\n\nSure. " + QWEN_CALL, "ok</think>\n\n"],
     ["ok</think>\n\n<think>", QWEN_CALL, "ok</think>\n\n" + QWEN_CALL.replace("city", "zip")]),
    ("qwen_3", {"reasoning": "disabled", "tool_choice": FORCE_WEATHER}, [QWEN_CALL], ["", "x" + QWEN_CALL]),
    ("harmony", {}, ["<|channel|>analysis<|message|>need weather<|end|><|start|>assistant" + HARMONY_CALL,
                     "<|channel|>final<|message|>Sunny.<|return|>", ""],
     [HARMONY_CALL.replace('"Paris"', "7"), "<|channel|>analysis<|message|>x<|end|>" + HARMONY_CALL]),
    ("harmony", {"reasoning": "disabled", "parallel_tool_calls": False},
     [HARMONY_CALL, "<|channel|>final<|message|>a<|end|><|start|>assistant" + HARMONY_CALL],
     ["<|channel|>analysis<|message|>x<|end|>", HARMONY_CALL + "<|start|>assistant" + HARMONY_CALL]),
])
def test_compiled_tags_accept_model_output(model, kwargs, good, bad):
    grammar = xgr.Grammar.from_structural_tag(xgr.get_model_structural_tag(model, [WEATHER], **kwargs))
    for text in good:
        assert _is_grammar_accept_string(grammar, text), text
    for text in bad:
        assert not _is_grammar_accept_string(grammar, text), text


def test_compiler_takes_the_structural_tag_object():
    vocab = ["<think>", "</think>", "{", "}", '"', "a", " ", ":", "<|end_of_text|>"]
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo(vocab, stop_token_ids=[8]))
    compiled = compiler.compile_structural_tag(xgr.get_model_structural_tag("llama", [WEATHER]))
    matcher = xgr.GrammarMatcher(compiled)
    assert matcher.accept_string("a a")
    assert not matcher.accept_string("<think>")


PER_MODEL_GETTERS = sorted(n for n in dir(bst) if n.startswith("get_") and n.endswith("_structural_tag")
                           and n not in ("get_builtin_structural_tag", "get_model_structural_tag"))


def test_per_model_getters_are_the_registered_builders():
    assert len(PER_MODEL_GETTERS) == 18
    for name in PER_MODEL_GETTERS:
        model = name[len("get_"):-len("_structural_tag")]
        st = getattr(bst, name)(tools=[WEATHER], tool_choice="required", reasoning="disabled")
        assert isinstance(st, xgr.StructuralTag)
        assert st == xgr.get_model_structural_tag(model, [WEATHER], tool_choice="required", reasoning="disabled")
    with pytest.raises(ValueError, match="tool_choice"):
        bst.get_llama_structural_tag(tools=[WEATHER], tool_choice="none")


@pytest.mark.xgrammar
@pytest.mark.parametrize("name", PER_MODEL_GETTERS)
def test_per_model_getters_agree_with_xgrammar(name):
    xgrammar = pytest.importorskip("xgrammar")
    from xgrammar import builtin_structural_tag as theirs
    from xgrammar.openai_tool_call_schema import FunctionToolParam

    for kwargs in ({}, {"tool_choice": "required"}, {"reasoning": "disabled"}, {"reasoning": "auto"}):
        want = getattr(theirs, name)(tools=[FunctionToolParam(**WEATHER)], **kwargs)
        have = getattr(bst, name)(tools=[WEATHER], **kwargs)
        assert have.model_dump(exclude_none=True) == want.model_dump(exclude_none=True), kwargs
    assert xgrammar  # (imported for the models above)
