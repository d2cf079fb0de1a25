"""A leaf of shared helpers for the builtin structural tags (XGrammar-2 §3.2): the constructors of
format nodes, the reading of OpenAI-style tools and `tool_choice`, and the reasoning block.

The model builders (models.py) build their format trees from these, and
the registry (builtin_structural_tag.py, which re-exports every name here) reads the tools with
`normalize_tool_choice`; neither imports the other's way up, so the arrows point one way:

    builtin_structural_tag  ->  builtin_structural_tag_models  ->  structural_tag_formats

Each node constructor (`const`, `tag`, `sequence`, `triggered_tags`, ...) returns the node as a
dict with xgrammar's field order; `legacy_structural_tag` writes the old `(tags, triggers)` form
as a structural tag (read by xg2ref/frontends/structural_tag/converter.py too).
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Optional, Union

from ...exceptions import InvalidStructuralTagError
from ...structural_tag import StructuralTag

REASONING_MODES = ("enabled", "disabled", "auto")
TOOL_CHOICE_STRINGS = ("none", "auto", "required")

# ---------------------------------------------------------------------------------------------
# Format nodes. Field order follows xgrammar's models, so `model_dump_json` text matches too.
# ---------------------------------------------------------------------------------------------


def const(value: str) -> dict:
    """A fixed string."""
    return {"type": "const_string", "value": value}


def regex(pattern: str) -> dict:
    """Text matching a regular expression."""
    return {"type": "regex", "pattern": pattern}


def any_text(excludes: Iterable[str] = ()) -> dict:
    """Free text that never contains any of `excludes`."""
    return {"type": "any_text", "excludes": list(excludes), "max_tokens": None, "max_chars": None}


def json_args(schema: Union[bool, dict], style: str = "json", *, any_order: bool = False,
              max_whitespace_cnt: Optional[int] = None, excludes: Iterable[str] = ()) -> dict:
    """Tool arguments: a value of `schema`, written in `style` ("json" or one of the XML styles)."""
    return {"type": "json_schema", "json_schema": schema, "style": style, "any_order": any_order,
            "max_whitespace_cnt": max_whitespace_cnt, "excludes": list(excludes)}


def tag(begin: str, content: dict, end: Union[str, list]) -> dict:
    """`begin`, then `content`, then `end` (a string or a list of alternative end strings)."""
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def sequence(*elements: dict) -> dict:
    """The elements one after another."""
    return {"type": "sequence", "elements": list(elements)}


def one_of(*elements: dict) -> dict:
    """Any one of the elements (xgrammar's "or" format)."""
    return {"type": "or", "elements": list(elements)}


def optional(content: dict) -> dict:
    """`content` or nothing."""
    return {"type": "optional", "content": content}


def triggered_tags(triggers: list, tags: list, excludes: Iterable[str] = (), *, at_least_one: bool = False,
                   stop_after_first: bool = False) -> dict:
    """Free text in which each trigger string starts one of the tags whose begin starts with it."""
    return {"type": "triggered_tags", "triggers": list(triggers), "tags": list(tags), "at_least_one": at_least_one,
            "stop_after_first": stop_after_first, "excludes": list(excludes)}


def tags_with_separator(tags: list, separator: str, *, at_least_one: bool = False,
                        stop_after_first: bool = False) -> dict:
    """Tags back to back, `separator` between two of them, and no free text."""
    return {"type": "tags_with_separator", "tags": list(tags), "separator": separator, "at_least_one": at_least_one,
            "stop_after_first": stop_after_first}


def legacy_structural_tag(tags: list, triggers: list) -> dict:
    """The old `(tags, triggers)` form: each tag `{begin, schema, end}` (or an object with those
    attributes) holds a JSON schema; free text dispatches on the triggers."""
    out = []
    for k, tag in enumerate(tags):
        item = tag if isinstance(tag, dict) else {"begin": tag.begin, "schema": getattr(tag, "schema_", None)
                                                  or getattr(tag, "schema", None), "end": tag.end}
        schema = item.get("schema")
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError as err:
                raise InvalidStructuralTagError(f"tags[{k}].schema: not valid JSON: {err}") from None
        elif hasattr(schema, "model_json_schema"):
            schema = schema.model_json_schema()
        out.append({"type": "tag", "begin": item.get("begin"), "end": item.get("end"),
                    "content": {"type": "json_schema", "json_schema": schema}})
    return {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": list(triggers), "tags": out}}


# ---------------------------------------------------------------------------------------------
# Tools and tool_choice.
# ---------------------------------------------------------------------------------------------

_TRUE_WORDS = ("1", "on", "t", "true", "y", "yes")
_FALSE_WORDS = ("0", "off", "f", "false", "n", "no")


def _as_dict(value: Any) -> Any:
    """Objects with `model_dump` (xgrammar's pydantic tool models) become dicts."""
    return value.model_dump() if hasattr(value, "model_dump") else value


def _optional_field(holder: dict, name: str, kinds: tuple, where: str) -> Any:
    value = holder.get(name)
    if value is not None and not isinstance(value, kinds):
        wanted = " or ".join(k.__name__ for k in kinds)
        raise ValueError(f"{where}: '{name}' must be a {wanted} or None, got {type(value).__name__}")
    return value


def _optional_bool(value: Any, where: str) -> Optional[bool]:
    """A bool, None, or one of the spellings pydantic's lax mode reads as a bool (1, "yes", ...)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in _TRUE_WORDS + _FALSE_WORDS:
        return value.lower() in _TRUE_WORDS
    raise ValueError(f"{where}: 'strict' must be a bool or None, got {value!r}")


def _read_tool(tool: Any, where: str) -> dict:
    """One entry of `tools` in its complete form: a function tool
    `{"type": "function", "function": {"name", "description", "parameters", "strict"}}` or a
    builtin tool `{"type", "name", "parameters"}`."""
    tool = _as_dict(tool)
    if not isinstance(tool, dict):
        raise ValueError(f"{where} must be a dict, got {type(tool).__name__}")
    if "function" in tool and tool.get("type", "function") == "function":
        function = _as_dict(tool["function"])
        if not isinstance(function, dict):
            raise ValueError(f"{where}: 'function' must be a dict, got {type(function).__name__}")
        where = f"{where}.function"
        if not isinstance(function.get("name"), str):
            raise ValueError(f"{where}: 'name' is required and must be a string")
        return {"type": "function", "function": {
            "name": function["name"],
            "description": _optional_field(function, "description", (str,), where),
            "parameters": _optional_field(function, "parameters", (dict,), where),
            "strict": _optional_bool(function.get("strict"), where),
        }}
    if not isinstance(tool.get("type"), str):
        raise ValueError(f"{where}: a tool needs a string 'type' (\"function\" with a 'function' object, "
                         "or a builtin tool type)")
    return {"type": tool["type"], "name": _optional_field(tool, "name", (str,), where),
            "parameters": _optional_field(tool, "parameters", (dict,), where)}


def is_function_tool(tool: dict) -> bool:
    """Is this normalized tool a function tool (rather than a builtin one)?"""
    return "function" in tool


def tool_arguments_schema(tool: dict) -> Union[bool, dict]:
    """The schema a call's arguments must follow: the tool's `parameters`, or `True` (any JSON
    value) when they are missing or when a function tool says `strict: false`."""
    if is_function_tool(tool):
        function = tool["function"]
        if function["strict"] is False or function["parameters"] is None:
            return True
        return function["parameters"]
    return True if tool["parameters"] is None else tool["parameters"]


def builtin_tool_name(tool: dict) -> str:
    """The name a builtin tool is called by in the model's output: its `name`, else its `type`."""
    return tool["name"] or tool["type"]


def _read_function_ref(ref: Any, where: str) -> str:
    ref = _as_dict(ref)
    if not isinstance(ref, dict) or not isinstance(ref.get("name"), str):
        raise ValueError(f"{where} must be {{'name': <string>}}")
    return ref["name"]


def _read_tool_choice(choice: Any) -> tuple[str, Any]:
    """`tool_choice` as (kind, detail): ("auto" | "none" | "required", None),
    ("function", name), ("builtin", type) or ("allowed_tools", (mode, refs))."""
    choice = _as_dict(choice)
    if choice is None:
        return "auto", None
    if isinstance(choice, str):
        if choice not in TOOL_CHOICE_STRINGS:
            raise ValueError(f"tool_choice must be one of {TOOL_CHOICE_STRINGS} or a dict, got {choice!r}")
        return choice, None
    if not isinstance(choice, dict):
        raise ValueError(f"tool_choice must be a string or a dict, got {type(choice).__name__}")
    kind = choice.get("type")
    if "function" in choice and kind in (None, "function"):
        return "function", _read_function_ref(choice["function"], "tool_choice['function']")
    if "allowed_tools" in choice and kind in (None, "allowed_tools"):
        allowed = _as_dict(choice["allowed_tools"])
        if not isinstance(allowed, dict) or allowed.get("mode") not in ("auto", "required") \
                or not isinstance(allowed.get("tools"), list):
            raise ValueError("tool_choice['allowed_tools'] must be {'mode': 'auto' | 'required', 'tools': [...]}")
        return "allowed_tools", (allowed["mode"], [_as_dict(ref) for ref in allowed["tools"]])
    if not isinstance(kind, str):
        raise ValueError("a tool_choice dict needs a string 'type': \"function\" with {'function': {'name': ...}}, "
                         "\"allowed_tools\", or a builtin tool type")
    _optional_field(choice, "name", (str,), "tool_choice")
    return "builtin", kind


def _keep_allowed(functions: list, builtins: list, refs: list) -> tuple[list, list]:
    """The tools named by an allowed_tools list: function refs by name, builtin refs by type."""
    names, types = set(), set()
    for i, ref in enumerate(refs):
        where = f"tool_choice['allowed_tools']['tools'][{i}]"
        if not isinstance(ref, dict) or not isinstance(ref.get("type"), str):
            raise ValueError(f"{where} must be a dict with a string 'type'")
        if ref["type"] != "function":
            types.add(ref["type"])
        elif ref.get("function") is None:
            raise ValueError(f"{where}: a function reference needs {{'function': {{'name': ...}}}}")
        else:
            names.add(_read_function_ref(ref["function"], f"{where}['function']"))
    missing = names - {tool["function"]["name"] for tool in functions}
    if missing:
        raise ValueError(f"Allowed function tools are not found in the tools list: {sorted(missing)}.")
    missing = types - {tool["type"] for tool in builtins}
    if missing:
        raise ValueError(f"Allowed builtin tools are not found in the tools list: {sorted(missing)}.")
    return ([tool for tool in functions if tool["function"]["name"] in names],
            [tool for tool in builtins if tool["type"] in types])


def normalize_tool_choice(tools: Optional[list] = None, tool_choice: Any = "auto") -> tuple[list, list, str]:
    """Split `tools` into function and builtin tools, apply `tool_choice`, and reduce it to
    "auto", "required" or "forced", as xgrammar 0.2.8 does before calling a model's builder.

    Returns `(function_tools, builtin_tools, choice)`, tools in their complete dict form (see
    `_read_tool`). `tool_choice` may be "auto" (or None), "none" (drops every tool), "required",
    `{"type": "function", "function": {"name": ...}}` (that one function), `{"type": <builtin
    type>}` (the one builtin tool of that type), or `{"type": "allowed_tools", "allowed_tools":
    {"mode": "auto" | "required", "tools": [refs]}}` (a subset, then the mode). Raises ValueError
    for malformed arguments, a name or type not among the tools, "required" with no tool left,
    and a forced choice that does not come down to exactly one tool.

    Example:
        >>> weather = {"type": "function", "function": {"name": "get_weather"}}
        >>> fns, builtins, choice = normalize_tool_choice([weather], {"type": "function",
        ...                                                "function": {"name": "get_weather"}})
        >>> [t["function"]["name"] for t in fns], builtins, choice
        (['get_weather'], [], 'forced')
    """
    if tools is None:
        tools = []
    if not isinstance(tools, list):
        raise ValueError(f"The 'tools' argument must be a list, got {type(tools).__name__}.")
    read = [_read_tool(tool, f"tools[{i}]") for i, tool in enumerate(tools)]
    functions = [tool for tool in read if is_function_tool(tool)]
    builtins = [tool for tool in read if not is_function_tool(tool)]

    kind, detail = _read_tool_choice(tool_choice)
    if kind == "allowed_tools":
        mode, refs = detail
        functions, builtins = _keep_allowed(functions, builtins, refs)
        choice = mode
    elif kind == "function":
        functions = [tool for tool in functions if tool["function"]["name"] == detail]
        if not functions:
            raise ValueError(f"The tool with name '{detail}' is not found in the tools list.")
        builtins, choice = [], "forced"
    elif kind == "builtin":
        builtins = [tool for tool in builtins if tool["type"] == detail]
        if len(builtins) != 1:
            raise ValueError(f"Builtin tool choice {detail!r} must match exactly one builtin tool, "
                             f"got {len(builtins)} matches.")
        functions, choice = [], "forced"
    elif kind == "none":
        functions, builtins, choice = [], [], "auto"
    else:
        choice = kind

    if choice == "required" and not functions and not builtins:
        raise ValueError("The 'tools' list is empty, which is not allowed when 'tool_choice' is 'required'.")
    if choice == "forced" and len(functions) + len(builtins) != 1:
        raise ValueError("Forced tool choice must resolve to exactly one tool.")
    return functions, builtins, choice


# ---------------------------------------------------------------------------------------------
# Reasoning.
# ---------------------------------------------------------------------------------------------


def text_excludes(exclude_special_tokens: bool, tokens: Iterable[str]) -> list:
    """The strings free text must avoid: `tokens`, or none when special tokens are allowed."""
    return list(tokens) if exclude_special_tokens else []


def reasoning_prefix(mode: str, think_begin: str, think_end: str, excludes: Iterable[str], *,
                     exclude_special_tokens: bool, prompt_opens_think: bool = True,
                     after_think: str = "") -> Optional[dict]:
    """The reasoning block that comes before the answer, or None when `mode` is "disabled".

    "enabled": the block is there; when the prompt already ends with `think_begin`
    (`prompt_opens_think`), the output starts inside it, so only the body and `think_end` remain.
    "auto": a complete block (`think_begin` included) or nothing. `after_think` is fixed text
    that follows the block (e.g. a blank line).

    Example:
        >>> reasoning_prefix("enabled", "<think>", "</think>", [], exclude_special_tokens=True)["begin"]
        ''
    """
    if mode not in REASONING_MODES:
        raise ValueError(f"reasoning mode must be one of {REASONING_MODES}, got {mode!r}")
    if mode == "disabled":
        return None
    begin = "" if mode == "enabled" and prompt_opens_think else think_begin
    block = tag(begin, any_text(text_excludes(exclude_special_tokens, excludes)), think_end)
    if after_think:
        block = sequence(block, const(after_think))
    return optional(block) if mode == "auto" else block


def after_reasoning(prefix: Optional[dict], body: dict) -> StructuralTag:
    """The structural tag: `body`, preceded by the reasoning block `prefix` when there is one."""
    return StructuralTag(body if prefix is None else sequence(prefix, body))
