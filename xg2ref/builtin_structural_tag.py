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
2. The model's builder, looked up in a registry (`BUILTIN_MODELS` of
   xg2ref/frontends/structural_tag/models.py, imported here, plus what `register_model_structural_tag`
   adds), turns them into a format tree.
3. The tree is validated into a `StructuralTag` (the pydantic model of xg2ref/structural_tag.py,
   as in xgrammar), which `Grammar.from_structural_tag` and `compile_structural_tag` accept.

The small constructors of format nodes the builders share (`tag`, `sequence`,
`triggered_tags`, ...), the tool readers and `legacy_structural_tag` live in the leaf
xg2ref/frontends/structural_tag/builders.py and are re-exported here.

What it leaves out: malformed function tools raise ValueError instead of being reread as builtin
tools of type "function", as pydantic's union fallback does.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

from .frontends.structural_tag.models import BUILTIN_MODELS
from .structural_tag import StructuralTag
from .frontends.structural_tag.builders import (REASONING_MODES, TOOL_CHOICE_STRINGS, after_reasoning, any_text,  # noqa: F401
                                     builtin_tool_name, const, is_function_tool, json_args, legacy_structural_tag,
                                     normalize_tool_choice, one_of, optional, reasoning_prefix, regex, sequence,
                                     tag, tags_with_separator, text_excludes, tool_arguments_schema,
                                     triggered_tags)

# ---------------------------------------------------------------------------------------------
# Registry and the public entry point.
# ---------------------------------------------------------------------------------------------

ModelBuilder = Callable[..., Any]
_registry: dict[str, ModelBuilder] = dict(BUILTIN_MODELS)  # the builtin models first, in xgrammar's order


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


def _model_getter(model: str, default_reasoning: str = "enabled") -> Callable[..., StructuralTag]:
    """xgrammar 0.2.8's per-model function (`get_llama_structural_tag`, ...): the registered
    builder of `model` called directly, with the tools already split and the choice already
    reduced to "auto", "required" or "forced" (what `get_model_structural_tag` does first)."""
    def get(tools: Optional[list] = None, builtin_tools: Optional[list] = None, tool_choice: str = "auto",
            reasoning: str = default_reasoning, any_order: bool = False, exclude_special_tokens: bool = True,
            max_whitespace_cnt: Optional[int] = None, parallel_tool_calls: bool = True,
            **kwargs: Any) -> StructuralTag:
        if tool_choice not in ("auto", "required", "forced"):
            raise ValueError(f"tool_choice must be 'auto', 'required' or 'forced' here, got {tool_choice!r}")
        if reasoning not in REASONING_MODES:
            raise ValueError(f"The 'reasoning' argument must be one of {REASONING_MODES}, got {reasoning!r}.")
        functions, builtins, _ = normalize_tool_choice(list(tools or []) + list(builtin_tools or []), "auto")
        result = _registry[model](functions, builtins, tool_choice, reasoning, any_order=any_order,
                                  exclude_special_tokens=exclude_special_tokens,
                                  max_whitespace_cnt=max_whitespace_cnt, parallel_tool_calls=parallel_tool_calls)
        return StructuralTag.from_json(result) if isinstance(result, dict) else result

    get.__name__ = get.__qualname__ = f"get_{model}_structural_tag"
    get.__doc__ = f"The structural tag of the {model!r} format (`get_model_structural_tag({model!r}, ...)`)."
    return get


get_cohere_structural_tag = _model_getter("cohere")
get_deepseek_r1_structural_tag = _model_getter("deepseek_r1")
get_deepseek_v3_1_structural_tag = _model_getter("deepseek_v3_1")
get_deepseek_v3_2_structural_tag = _model_getter("deepseek_v3_2")
get_deepseek_v4_structural_tag = _model_getter("deepseek_v4")
get_deepseek_v4_1_structural_tag = _model_getter("deepseek_v4_1")
get_exaone_structural_tag = _model_getter("exaone")
get_glm_4_7_structural_tag = _model_getter("glm_4_7")
get_harmony_structural_tag = _model_getter("harmony")
get_kimi_structural_tag = _model_getter("kimi")
get_kimi_k3_structural_tag = _model_getter("kimi_k3")
get_llama_structural_tag = _model_getter("llama")
get_mimo_structural_tag = _model_getter("mimo")
get_minimax_structural_tag = _model_getter("minimax")
get_minimax_m3_structural_tag = _model_getter("minimax_m3", default_reasoning="auto")  # as in 0.2.8
get_qwen_3_structural_tag = _model_getter("qwen_3")
get_qwen_3_5_structural_tag = _model_getter("qwen_3_5")
get_qwen_3_coder_structural_tag = _model_getter("qwen_3_coder")
