"""XGrammar-2 §3.2: the builtin per-model structural tags (each family's tool-call and reasoning syntax).

Sixteen of the eighteen models xgrammar 0.2.8 knows differ only in their strings, so each is a
row of `SYNTAXES` (a `CallSyntax`) read by one builder, `build_from_syntax`. A row writes one
tool call as a template with three holes: `{name}` (the function name), `{index}` (a decimal
call id the model picks) and `{args}` (the arguments, constrained by the tool's schema); the
text after `{args}` closes the call. The calls are then laid out in one of two ways:

* flat: every call is a tag of its own, started by `trigger` anywhere in free text
  (Llama, Qwen3, Qwen3.5/Qwen3-Coder, EXAONE, GLM-4.7, MiMo);
* sectioned: the calls sit back to back inside `section` = (begin, end), and the section's
  begin is the trigger (Kimi-K2, DeepSeek R1/V3.1/V3.2/V4/V4.1, MiniMax M2.5/M3, Cohere).

For each tool choice: "auto" gives free text with triggered calls (or plain free text when no
tool is left), "required" at least one call, "forced" exactly the one tool. With
`parallel_tool_calls=False` at most one call is made. A reasoning block (`think`) may come first.
Kimi-K3's block protocol and Harmony's (gpt-oss) channel messages get builders of their own.

The builders are collected in `BUILTIN_MODELS` (model name -> builder), which the registry of
builtin_structural_tag.py imports; they build their trees from the node constructors of the leaf
builders.py.

What it leaves out: builtin tools are used by Harmony only (MiMo and MiniMax M3 reject them,
the others ignore them), as in xgrammar; Gemma 4, which xgrammar 0.2.8 does not register.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ...structural_tag import StructuralTag
from .builders import (after_reasoning, any_text, builtin_tool_name, const, json_args, one_of, optional,
                                     reasoning_prefix, regex, sequence, tag, tags_with_separator, text_excludes,
                                     tool_arguments_schema, triggered_tags)

THINK = ("<think>", "</think>")
GLM_ARG_TOKENS = ("<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>")
MIMO_TEXT_EXCLUDES = (*THINK, "</tool_call>", "<function=")
COHERE_THINK = ("<|START_THINKING|>", "<|END_THINKING|>")
M3 = "]<]minimax[>["  # MiniMax M3 prefixes every element of its tool-call XML with this namespace
M3_THINK = ("<mm:think>", "</mm:think>")
M3_TEXT_EXCLUDES = (*M3_THINK, M3 + "</tool_call>", M3 + "<invoke", M3 + "</invoke>")
DS_CALLS = ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>")


@dataclass(frozen=True)
class CallSyntax:
    """How one model family writes tool calls and reasoning.

    `forced` / `required` say how a forced call / the required calls are laid out in a sectioned
    syntax: "wrap" (fixed `lead` + section begin, the call(s), fixed section end), "merge" (the
    section markers glued onto the one call's own begin and end), "nest" (a section tag around
    the one call), "tag" (a section tag around the calls) or "triggered" (free text, then at
    least one triggered section). `plain_excludes` guard free text when no tool is available,
    `always_plain_excludes` likewise but kept even when special tokens are allowed.
    `enabled_reasoning_unguarded`: a reasoning block the prompt opened excludes nothing.
    `auto_skips_with_think_end`: in "auto" mode a bare think-end may replace the block.
    `disabled_preamble`: fixed strings written first when reasoning is disabled (no block).
    """

    call: str
    trigger: str
    style: str = "json"
    section: Optional[tuple[str, str]] = None
    separator: str = ""
    lead: str = ""
    forced: str = "wrap"
    required: str = "wrap"
    text_excludes: tuple = THINK
    plain_excludes: tuple = THINK
    always_plain_excludes: tuple = ()
    think: Optional[tuple[str, str]] = THINK
    reasoning_excludes: tuple = THINK
    enabled_reasoning_unguarded: bool = False
    prompt_opens_think: bool = True
    after_think: str = ""
    auto_skips_with_think_end: bool = False
    disabled_preamble: tuple = ()
    builtin_tools_rejected_by: str = ""


def _dsml(invoke: str, calls: str, style: str, **extra) -> CallSyntax:
    """The DeepSeek DSML family (V3.2, V4, V4.1): XML invokes inside a calls block."""
    return CallSyntax(call=f'<｜DSML｜{invoke} name="{{name}}">\n{{args}}</｜DSML｜{invoke}>\n',
                      trigger=f"<｜DSML｜{calls}>", style=style,
                      section=(f"<｜DSML｜{calls}>\n", f"</｜DSML｜{calls}>"), lead="\n\n", **extra)


_QWEN_XML = CallSyntax(call="<tool_call>\n<function={name}>\n{args}\n</function>\n</tool_call>",
                       trigger="<tool_call>\n<function=", style="qwen_xml", after_think="\n\n")

SYNTAXES: dict[str, CallSyntax] = {
    "llama": CallSyntax(call='{"name": "{name}", "parameters": {args}}', trigger='{"name": ', think=None),
    "qwen_3": CallSyntax(call='<tool_call>\n{"name": "{name}", "arguments": {args}}\n</tool_call>',
                         trigger="<tool_call>", after_think="\n\n"),
    "qwen_3_5": _QWEN_XML,
    "qwen_3_coder": _QWEN_XML,
    "exaone": CallSyntax(call='<tool_call>{"name": "{name}", "arguments": {args}}</tool_call>',
                         trigger="<tool_call>", after_think="\n\n", enabled_reasoning_unguarded=True),
    "glm_4_7": CallSyntax(call="<tool_call>{name}{args}</tool_call>", trigger="<tool_call>", style="glm_xml",
                          text_excludes=(*THINK, "</tool_call>", *GLM_ARG_TOKENS),
                          plain_excludes=(*THINK, "<tool_call>", "</tool_call>", *GLM_ARG_TOKENS),
                          reasoning_excludes=(*THINK, "<tool_call>", "</tool_call>", *GLM_ARG_TOKENS)),
    "mimo": CallSyntax(call="<tool_call><function={name}>{args}</function></tool_call>", trigger="<tool_call>",
                       style="qwen_xml", text_excludes=MIMO_TEXT_EXCLUDES,
                       plain_excludes=("<tool_call>", *MIMO_TEXT_EXCLUDES),
                       reasoning_excludes=("<tool_call>", *MIMO_TEXT_EXCLUDES), prompt_opens_think=False,
                       builtin_tools_rejected_by="MiMo"),
    "kimi": CallSyntax(call="<|tool_call_begin|>functions.{name}:{index}<|tool_call_argument_begin|>{args}"
                            "<|tool_call_end|>",
                       trigger="<|tool_calls_section_begin|>",
                       section=("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"),
                       text_excludes=(*THINK, "<|tool_call_begin|>"), enabled_reasoning_unguarded=True),
    "deepseek_r1": CallSyntax(call="<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{args}\n```"
                                   "<｜tool▁call▁end｜>",
                              trigger=DS_CALLS[0], section=DS_CALLS, separator="\n", forced="merge", required="tag"),
    "deepseek_v3_1": CallSyntax(call="<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{args}<｜tool▁call▁end｜>",
                                trigger=DS_CALLS[0], section=DS_CALLS, forced="merge", required="tag"),
    "deepseek_v3_2": _dsml("invoke", "function_calls", "deepseek_xml"),
    "deepseek_v4": _dsml("invoke", "tool_calls", "deepseek_xml"),
    "deepseek_v4_1": _dsml(" invoke", " calls", "deepseek_v4_1_xml", always_plain_excludes=("<｜DSML｜ calls>",)),
    "minimax": CallSyntax(call='<invoke name="{name}">\n{args}</invoke>\n', trigger="<minimax:tool_call>",
                          style="minimax_xml", section=("<minimax:tool_call>\n", "</minimax:tool_call>"), lead="\n",
                          after_think="\n\n", enabled_reasoning_unguarded=True,
                          disabled_preamble=("\n</think>\n\n", "\n\n")),
    "minimax_m3": CallSyntax(call=M3 + '<invoke name="{name}">{args}' + M3 + "</invoke>\n",
                             trigger=M3 + "<tool_call>", style="minimax_m3_xml",
                             section=(M3 + "<tool_call>\n", M3 + "</tool_call>"), forced="nest", required="triggered",
                             text_excludes=M3_TEXT_EXCLUDES, plain_excludes=(M3 + "<tool_call>", *M3_TEXT_EXCLUDES),
                             think=M3_THINK, reasoning_excludes=(M3 + "<tool_call>", *M3_TEXT_EXCLUDES),
                             auto_skips_with_think_end=True, builtin_tools_rejected_by="MiniMax M3"),
    "cohere": CallSyntax(call='<cofl:tool_call id="{index}" name="{name}">{args}</cofl:tool_call>',
                         trigger="<cofl:tool_calls>", style="cohere_xml",
                         section=("<cofl:tool_calls>", "</cofl:tool_calls>"), text_excludes=COHERE_THINK,
                         plain_excludes=COHERE_THINK, think=COHERE_THINK, reasoning_excludes=COHERE_THINK,
                         enabled_reasoning_unguarded=True),
}


def call_tag(template: str, name: str, args: dict) -> dict:
    """One tool call as a tag, from a `CallSyntax.call` template.

    The tag's begin is the template up to the first of `{index}` / `{args}`, its end the text
    after `{args}`. An `{index}` becomes a `\\d+` regex at the start of the content, followed by
    the fixed text up to `{args}`.

    Example:
        >>> call_tag("<c id={index} n={name}>{args}</c>", "f", {"type": "any_text"})["begin"]
        '<c id='
    """
    head, end = template.split("{args}")
    if "{index}" not in head:
        return tag(head.replace("{name}", name), args, end)
    before, after = head.split("{index}")
    return tag(before.replace("{name}", name),
               sequence(regex(r"\d+"), const(after.replace("{name}", name)), args), end)


def _flat_body(syntax: CallSyntax, calls: list, choice: str, excludes: list, one_call: bool) -> dict:
    if choice == "forced":
        return calls[0]
    return triggered_tags([syntax.trigger], calls, excludes, at_least_one=choice == "required",
                          stop_after_first=one_call)


def _sectioned_body(syntax: CallSyntax, calls: list, choice: str, excludes: list, one_call: bool) -> dict:
    begin, end = syntax.section
    if choice == "forced":
        layout, inner = syntax.forced, calls[0]
    else:
        layout = "triggered" if choice == "auto" else syntax.required
        inner = tags_with_separator(calls, syntax.separator, at_least_one=True, stop_after_first=one_call)
    if layout == "wrap":
        return sequence(const(syntax.lead + begin), inner, const(end))
    if layout == "merge":
        return tag(begin + inner["begin"], inner["content"], inner["end"] + end)
    if layout in ("nest", "tag"):
        return tag(begin, inner, end)
    return triggered_tags([syntax.trigger], [tag(begin, inner, end)], excludes, at_least_one=choice == "required",
                          stop_after_first=one_call)


def build_from_syntax(syntax: CallSyntax, functions: list, builtins: list, choice: str, reasoning: str, *,
                      any_order: bool = False, exclude_special_tokens: bool = True,
                      max_whitespace_cnt: Optional[int] = None, parallel_tool_calls: bool = True) -> StructuralTag:
    """The structural tag of a model described by a `CallSyntax` row (see the module docstring)."""
    if builtins and syntax.builtin_tools_rejected_by:
        raise ValueError(f"{syntax.builtin_tools_rejected_by} does not support builtin tools.")
    calls = [call_tag(syntax.call, tool["function"]["name"],
                      json_args(tool_arguments_schema(tool), syntax.style, any_order=any_order,
                                max_whitespace_cnt=max_whitespace_cnt))
             for tool in functions]
    if choice == "forced" and not calls:
        raise ValueError("Forced tool choice must resolve to exactly one tool.")
    if choice == "required" and not calls:
        raise ValueError("Required tool choice needs at least one function tool; this model has no builtin tools.")
    if choice not in ("auto", "required", "forced"):
        raise ValueError(f"Unsupported tool choice: {choice!r}")

    if choice == "auto" and not calls:
        body = any_text(text_excludes(exclude_special_tokens, syntax.plain_excludes)
                        + list(syntax.always_plain_excludes))
    else:
        lay_out = _flat_body if syntax.section is None else _sectioned_body
        body = lay_out(syntax, calls, choice, text_excludes(exclude_special_tokens, syntax.text_excludes),
                       not parallel_tool_calls)

    if reasoning == "disabled" and syntax.disabled_preamble:
        return StructuralTag(sequence(*(const(text) for text in syntax.disabled_preamble), body))
    if syntax.think is None:
        return StructuralTag(body)
    unguarded = syntax.enabled_reasoning_unguarded and reasoning == "enabled"
    prefix = reasoning_prefix(reasoning, *syntax.think, () if unguarded else syntax.reasoning_excludes,
                              exclude_special_tokens=exclude_special_tokens,
                              prompt_opens_think=syntax.prompt_opens_think, after_think=syntax.after_think)
    if syntax.auto_skips_with_think_end and reasoning == "auto":
        prefix = optional(one_of(prefix["content"], const(syntax.think[1])))
    return after_reasoning(prefix, body)


def _syntax_builder(name: str, syntax: CallSyntax) -> Callable[..., StructuralTag]:
    """The builder of the model `name`: `build_from_syntax` with its `SYNTAXES` row."""
    def builder(functions, builtins, choice, reasoning, **options):
        return build_from_syntax(syntax, functions, builtins, choice, reasoning, **options)

    builder.__name__ = f"build_{name}_structural_tag"
    builder.__doc__ = f"The {name!r} structural tag (see `SYNTAXES[{name!r}]`)."
    return builder


# ---------------------------------------------------------------------------------------------
# Kimi-K3: <|open|>NAME<|sep|> ... <|close|>NAME<|sep|> blocks: think, response, tools, message end.
# ---------------------------------------------------------------------------------------------

def _k3_block(name: str) -> tuple[str, str]:
    return f"<|open|>{name}<|sep|>", f"<|close|>{name}<|sep|>"


def build_kimi_k3_structural_tag(functions: list, builtins: list, choice: str, reasoning: str, *,
                                 any_order: bool = False, exclude_special_tokens: bool = True,
                                 max_whitespace_cnt: Optional[int] = None,
                                 parallel_tool_calls: bool = True) -> StructuralTag:
    """Kimi-K3: an optional think block, a response block, an optional tools block, then the
    message end marker. The prompt already opened the first block (think, or response when
    reasoning is disabled), so the output starts inside it. Arguments use the "kimi_k3_xml"
    style; builtin tools are ignored.
    """
    markers = ("<|open|>", "<|close|>")
    argument_excludes = text_excludes(exclude_special_tokens, (*markers, "<|sep|>"))
    calls = [call_tag('<|open|>call tool="{name}" index="{index}"<|sep|>{args}<|close|>call<|sep|>',
                      tool["function"]["name"],
                      json_args(tool_arguments_schema(tool), "kimi_k3_xml", any_order=any_order,
                                max_whitespace_cnt=max_whitespace_cnt, excludes=argument_excludes))
             for tool in functions]
    if choice == "forced" and not calls:
        raise ValueError("Forced tool choice must resolve to exactly one tool.")
    if choice == "required" and not calls:
        raise ValueError("Required tool choice needs at least one function tool; this model has no builtin tools.")

    tools_begin, tools_end = _k3_block("tools")
    tools_part = None
    if choice == "forced":
        tools_part = sequence(const(tools_begin), calls[0], const(tools_end))
    elif calls:
        group = tags_with_separator(calls, "", at_least_one=True, stop_after_first=not parallel_tool_calls)
        tools_part = (optional(tag(tools_begin, group, tools_end)) if choice == "auto"
                      else sequence(const(tools_begin), group, const(tools_end)))

    response_begin, response_end = _k3_block("response")
    elements = []
    prefix = reasoning_prefix(reasoning, *_k3_block("think"), markers, exclude_special_tokens=exclude_special_tokens)
    if prefix is not None:
        elements.append(prefix)
    elements.append(tag("" if reasoning == "disabled" else response_begin,
                        any_text(text_excludes(exclude_special_tokens, markers)), response_end))
    if tools_part is not None:
        elements.append(tools_part)
    elements.append(const("<|close|>message<|sep|>"))
    return StructuralTag(sequence(*elements))


# ---------------------------------------------------------------------------------------------
# Harmony (gpt-oss): a stream of channel messages separated by "<|start|>assistant".
# ---------------------------------------------------------------------------------------------

HARMONY_CALL_END = "<|call|>"
HARMONY_MESSAGE_END = ["<|end|>", "<|return|>"]
HARMONY_SEPARATOR = "<|start|>assistant"
# The header orders gpt-oss is seen to use for a call: to= inside or before the channel.
HARMONY_FUNCTION_HEADERS = ("<|channel|>commentary to=functions.{name}<|constrain|>json<|message|>",
                            " to=functions.{name}<|channel|>commentary <|constrain|>json<|message|>",
                            " to=functions.{name}<|channel|>commentary json<|message|>")
HARMONY_BUILTIN_HEADERS = ("<|channel|>commentary to={name} code<|message|>",
                           " to={name}<|channel|>commentary code<|message|>")


def _harmony_calls(headers: tuple, name: str, args: dict) -> list:
    return [tag(header.replace("{name}", name), args, HARMONY_CALL_END) for header in headers]


def build_harmony_structural_tag(functions: list, builtins: list, choice: str, reasoning: str, *,
                                 any_order: bool = False, exclude_special_tokens: bool = True,
                                 max_whitespace_cnt: Optional[int] = None,
                                 parallel_tool_calls: bool = True) -> StructuralTag:
    """Harmony: messages on the final, analysis (unless reasoning is disabled) and commentary
    (tool call) channels, any number of them. Function tools are called as `functions.NAME`
    with JSON arguments, builtin tools by their output name with "code" arguments. "auto" adds a
    final-answer message; "required" and "forced" leave only the call (and analysis) messages.
    `exclude_special_tokens` has nothing to act on here. With `parallel_tool_calls=False` the
    other messages may come first, then at most one call, which ends the turn.
    """
    def args(tool: dict) -> dict:
        return json_args(tool_arguments_schema(tool), any_order=any_order, max_whitespace_cnt=max_whitespace_cnt)

    def function_calls(tool: dict) -> list:
        return _harmony_calls(HARMONY_FUNCTION_HEADERS, tool["function"]["name"], args(tool))

    def builtin_calls(tool: dict) -> list:
        return _harmony_calls(HARMONY_BUILTIN_HEADERS, builtin_tool_name(tool), args(tool))

    tags: list = []
    if choice == "auto":
        for tool in functions:
            tags += function_calls(tool)
        for tool in builtins:
            tags += builtin_calls(tool)
        tags.append(tag("<|channel|>final<|message|>", any_text(), HARMONY_MESSAGE_END))
    elif choice == "forced":
        if builtins:
            tags += builtin_calls(builtins[0])
        elif functions:
            tags += function_calls(functions[0])
        else:
            raise ValueError("Forced tool choice must resolve to exactly one tool.")
    elif choice == "required":
        for tool in builtins:
            tags += builtin_calls(tool)
        for tool in functions:
            tags += function_calls(tool)
        if not tags:
            raise ValueError("Required tool choice needs at least one tool.")
    else:
        raise ValueError(f"Unsupported tool choice: {choice!r}")
    if reasoning != "disabled":
        tags.append(tag("<|channel|>analysis<|message|>", any_text(), HARMONY_MESSAGE_END))

    calls = [t for t in tags if t["end"] == HARMONY_CALL_END]
    messages = [t for t in tags if t["end"] != HARMONY_CALL_END]
    if parallel_tool_calls or not calls:
        return StructuralTag(tags_with_separator(tags, HARMONY_SEPARATOR))
    last_call = tags_with_separator(calls, HARMONY_SEPARATOR, at_least_one=True, stop_after_first=True)
    if not messages:
        return StructuralTag(optional(last_call))
    return StructuralTag(one_of(
        tags_with_separator(messages, HARMONY_SEPARATOR),
        last_call,
        sequence(tags_with_separator(messages, HARMONY_SEPARATOR, at_least_one=True), const(HARMONY_SEPARATOR),
                 last_call),
    ))


# ---------------------------------------------------------------------------------------------
# The builtin models, by name, in xgrammar 0.2.8's registration order: the registry of
# builtin_structural_tag.py starts from this table.
# ---------------------------------------------------------------------------------------------

BUILTIN_MODELS: dict[str, Callable[..., StructuralTag]] = {
    **{name: _syntax_builder(name, syntax) for name, syntax in SYNTAXES.items()},
    "kimi_k3": build_kimi_k3_structural_tag,
    "harmony": build_harmony_structural_tag,
}
