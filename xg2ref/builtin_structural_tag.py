"""XGrammar-2 §3.2: structural tags for tool calling, built from a model name and OpenAI-style tools.

`get_model_structural_tag(model, tools, tool_choice, reasoning, ...)` returns the structural tag
that constrains one assistant turn of a known model family: an optional reasoning block, then
free text and/or tool calls written in that family's own call syntax, with every call's
arguments constrained by the tool's JSON schema. The tag it returns is, as a dict, the one
xgrammar 0.2.8 builds for the same arguments (`.model_dump(exclude_none=True)` of its result).

Three steps:

1. `normalize_tool_choice` splits the tools into function tools
   (`{"type": "function", "function": {...}}`) and builtin tools (`{"type": "web_search_preview",
   "name": ..., "parameters": ...}`), applies `tool_choice`, and reduces the choice to
   "auto", "required" or "forced" (exactly one tool).
2. The model's builder, looked up in a registry filled by `register_model_structural_tag`,
   turns them into a format tree (the builtin builders live in builtin_structural_tag_models.py).
3. The tree is wrapped in a `StructuralTag`, a plain-dict stand-in for xgrammar's pydantic model
   that `Grammar.from_structural_tag` and `GrammarCompiler.compile_structural_tag` accept.

This module also holds the small constructors of format nodes the builders share (`tag`,
`sequence`, `triggered_tags`, ...); each returns the node as a dict with xgrammar's field order.

What it leaves out: pydantic-level validation of format trees (`StructuralTag.from_json` checks
the format types and required fields, the grammar converter checks the rest), and the
deprecated `from_legacy_structural_tag`; malformed function tools raise ValueError instead of
being reread as builtin tools of type "function", as pydantic's union fallback does.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Callable, Iterable, Optional, Union

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


# ---------------------------------------------------------------------------------------------
# StructuralTag: the return value.
# ---------------------------------------------------------------------------------------------

_REQUIRED = object()

# Every format type's fields in order, with the default filled in when a field is missing.
_FORMAT_FIELDS: dict[str, tuple[tuple[str, Any], ...]] = {
    "const_string": (("value", _REQUIRED),),
    "json_schema": (("json_schema", _REQUIRED), ("style", "json"), ("any_order", False),
                    ("max_whitespace_cnt", None), ("excludes", [])),
    "any_text": (("excludes", []), ("max_tokens", None), ("max_chars", None)),
    "token": (("token", _REQUIRED),),
    "exclude_token": (("exclude_tokens", []),),
    "any_tokens": (("exclude_tokens", []), ("max_tokens", None)),
    "grammar": (("grammar", _REQUIRED),),
    "regex": (("pattern", _REQUIRED),),
    "qwen_xml_parameter": (("json_schema", _REQUIRED),),
    "sequence": (("elements", _REQUIRED),),
    "or": (("elements", _REQUIRED),),
    "tag": (("begin", _REQUIRED), ("content", _REQUIRED), ("end", _REQUIRED)),
    "triggered_tags": (("triggers", _REQUIRED), ("tags", _REQUIRED), ("at_least_one", False),
                       ("stop_after_first", False), ("excludes", [])),
    "token_triggered_tags": (("trigger_tokens", _REQUIRED), ("tags", _REQUIRED), ("exclude_tokens", []),
                             ("at_least_one", False), ("stop_after_first", False)),
    "tags_with_separator": (("tags", _REQUIRED), ("separator", _REQUIRED), ("at_least_one", False),
                            ("stop_after_first", False)),
    "optional": (("content", _REQUIRED),),
    "plus": (("content", _REQUIRED),),
    "star": (("content", _REQUIRED),),
    "repeat": (("min", _REQUIRED), ("max", _REQUIRED), ("content", _REQUIRED)),
    "dispatch": (("rules", _REQUIRED), ("loop", True), ("excludes", [])),
    "token_dispatch": (("rules", _REQUIRED), ("loop", True), ("exclude_tokens", [])),
}
_CHILD_FIELDS = ("content", "begin", "end")  # fields that may hold a nested format (a dict)
_CHILD_LISTS = ("elements", "tags")


def _complete_format(node: Any, path: str) -> dict:
    """`node` with its fields in order and defaults filled in, children included; unknown
    fields are dropped, as xgrammar's models drop them."""
    if not isinstance(node, dict) or node.get("type") not in _FORMAT_FIELDS:
        kind = node.get("type") if isinstance(node, dict) else type(node).__name__
        raise ValueError(f"{path}: not a structural tag format (type {kind!r}); known types: {sorted(_FORMAT_FIELDS)}")
    out = {"type": node["type"]}
    for name, default in _FORMAT_FIELDS[node["type"]]:
        if name in node:
            out[name] = node[name]
        elif default is _REQUIRED:
            raise ValueError(f"{path}: a {node['type']!r} format needs the field {name!r}")
        else:
            out[name] = copy.copy(default)
    for name in _CHILD_FIELDS:
        if isinstance(out.get(name), dict):
            out[name] = _complete_format(out[name], f"{path}.{name}")
    for name in _CHILD_LISTS:
        if isinstance(out.get(name), list):
            out[name] = [_complete_format(item, f"{path}.{name}[{i}]") for i, item in enumerate(out[name])]
    if out["type"] in ("dispatch", "token_dispatch") and isinstance(out["rules"], list):
        out["rules"] = [[rule[0], _complete_format(rule[1], f"{path}.rules[{i}]")]
                        if isinstance(rule, (list, tuple)) and len(rule) == 2 else rule
                        for i, rule in enumerate(out["rules"])]
    return out


def _drop_none(node: Any) -> Any:
    """A copy of a format tree without its None-valued fields (schemas inside are kept as they are)."""
    if not isinstance(node, dict):
        return copy.deepcopy(node)
    out = {}
    for key, value in node.items():
        if value is None:
            continue
        if key == "json_schema":
            out[key] = copy.deepcopy(value)
        elif key in _CHILD_FIELDS:
            out[key] = _drop_none(value)
        elif key in _CHILD_LISTS:
            out[key] = [_drop_none(item) for item in value]
        elif key == "rules":
            out[key] = [[rule[0], _drop_none(rule[1])] for rule in value]
        else:
            out[key] = copy.deepcopy(value)
    return out


class StructuralTag:
    """A structural tag, `{"type": "structural_tag", "format": {...}}`, held as a plain dict.

    It offers the parts of xgrammar's pydantic `StructuralTag` that callers use:

        >>> st = StructuralTag({"type": "const_string", "value": "hi"})
        >>> st.model_dump()
        {'type': 'structural_tag', 'format': {'type': 'const_string', 'value': 'hi'}}
        >>> StructuralTag.from_json(st.model_dump_json()) == st
        True
    """

    def __init__(self, format: dict):  # noqa: A002  (the field is called "format" in the JSON)
        self.format = format

    def model_dump(self, exclude_none: bool = False, by_alias: bool = False, **_ignored: Any) -> dict:
        """The tag as a fresh dict. With `exclude_none`, format fields whose value is None
        (`max_whitespace_cnt`, `max_tokens`, ...) are left out. `by_alias` changes nothing: no
        field has an alias."""
        fmt = _drop_none(self.format) if exclude_none else copy.deepcopy(self.format)
        return {"type": "structural_tag", "format": fmt}

    def model_dump_json(self, exclude_none: bool = False, indent: Optional[int] = None, **_ignored: Any) -> str:
        """The tag as JSON text (compact unless `indent` is given; non-ASCII kept as is)."""
        separators = (",", ":") if indent is None else None
        return json.dumps(self.model_dump(exclude_none=exclude_none), ensure_ascii=False, indent=indent,
                          separators=separators)

    @staticmethod
    def from_json(value: Union[str, bytes, dict]) -> "StructuralTag":
        """Read a structural tag from JSON text or a dict, filling in every format's defaults.
        Raises ValueError (InvalidStructuralTagError) when it is not a structural tag."""
        from .grammar.structural_tag import load_structural_tag

        return StructuralTag(_complete_format(load_structural_tag(value)["format"], "format"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StructuralTag) and self.format == other.format

    def __repr__(self) -> str:
        return f"StructuralTag(format={self.format!r})"


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


# ---------------------------------------------------------------------------------------------
# Registry and the public entry point.
# ---------------------------------------------------------------------------------------------

ModelBuilder = Callable[..., Any]
_registry: dict[str, ModelBuilder] = {}


def register_model_structural_tag(name: str) -> Callable[[ModelBuilder], ModelBuilder]:
    """Decorator: make `get_model_structural_tag(name, ...)` use the decorated builder.

    The builder is called as `builder(function_tools, builtin_tools, choice, reasoning, *,
    any_order, exclude_special_tokens, max_whitespace_cnt, parallel_tool_calls)`, with the tools
    and choice from `normalize_tool_choice` and reasoning one of "enabled", "disabled", "auto".
    It returns a `StructuralTag` (or its dict form). A later registration under the same name
    replaces the earlier one.

    Example:
        >>> @register_model_structural_tag("my_model")
        ... def build_my_model(functions, builtins, choice, reasoning, **options):
        ...     return StructuralTag(any_text())
    """
    def decorator(builder: ModelBuilder) -> ModelBuilder:
        _registry[name] = builder
        return builder

    return decorator


def registered_models() -> list:
    """The model names `get_model_structural_tag` knows, in registration order."""
    return list(_registry)


def get_model_structural_tag(model: str, tools: Optional[list] = None, tool_choice: Any = "auto",
                             reasoning: Union[bool, str] = "enabled", force_reasoning: bool = False,
                             any_order: bool = False, exclude_special_tokens: bool = True,
                             max_whitespace_cnt: Optional[int] = None,
                             parallel_tool_calls: bool = True) -> StructuralTag:
    """The structural tag for one assistant turn of `model`, as xgrammar 0.2.8 builds it.

    `tools` are OpenAI function tools (`{"type": "function", "function": {"name", "description",
    "parameters", "strict"}}`; no parameters or `strict: false` leaves the arguments any JSON
    value) and builtin tools (`{"type": "web_search_preview", "name": "browser.search",
    "parameters": {...}}`, used by "harmony"). `tool_choice`: see `normalize_tool_choice`.
    `reasoning`: "enabled", "disabled" or "auto" (a reasoning block or none); True and False
    stand for "enabled" and "disabled". `force_reasoning` is accepted and ignored (deprecated).
    `any_order` and `max_whitespace_cnt` go to every argument schema; `exclude_special_tokens`
    keeps the model's special tokens out of free text; with `parallel_tool_calls=False` at most
    one call is made and the turn ends after it. Raises ValueError for an unknown model or bad
    arguments.

    Example:
        >>> weather = {"type": "function", "function": {"name": "get_weather",
        ...            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
        >>> st = get_model_structural_tag("llama", [weather], tool_choice="required")
        >>> st.model_dump()["format"]["tags"][0]["begin"]
        '{"name": "get_weather", "parameters": '
    """
    builder = _registry.get(model)
    if builder is None:
        raise ValueError(f"Unknown model {model!r} for a builtin structural tag; known models: {registered_models()}")
    functions, builtins, choice = normalize_tool_choice(tools, tool_choice)
    if isinstance(reasoning, bool):
        mode = "enabled" if reasoning else "disabled"
    elif isinstance(reasoning, str) and reasoning in REASONING_MODES:
        mode = reasoning
    else:
        raise ValueError(f"The 'reasoning' argument must be a bool or one of {REASONING_MODES}, got {reasoning!r}.")
    if not isinstance(parallel_tool_calls, bool):
        raise ValueError(f"The 'parallel_tool_calls' argument must be a bool, got {parallel_tool_calls!r}.")
    result = builder(functions, builtins, choice, mode, any_order=any_order,
                     exclude_special_tokens=exclude_special_tokens, max_whitespace_cnt=max_whitespace_cnt,
                     parallel_tool_calls=parallel_tool_calls)
    return StructuralTag.from_json(result) if isinstance(result, dict) else result


get_builtin_structural_tag = get_model_structural_tag  # the older name, kept as xgrammar keeps it

from . import builtin_structural_tag_models  # noqa: E402,F401  (registers the builtin models)
