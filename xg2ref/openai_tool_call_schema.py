"""The OpenAI Chat Completions shapes of `tools` and `tool_choice`, as pydantic models
(`xgrammar.openai_tool_call_schema` in 0.2.8; field names and defaults are its own, which follow
the openai SDK).

`get_builtin_structural_tag(model, tools=..., tool_choice=...)` (xg2ref/builtin_structural_tag.py)
takes these models or the plain dicts they validate; the models let a caller check a request
before it reaches the tag builder:

    tools        [FunctionToolParam(function=FunctionDefinition(name=, description=, parameters=, strict=))
                  | BuiltinToolParam(type=, name=, parameters=)]
    tool_choice  "none" | "auto" | "required"
                 | NamedToolChoiceParam(function=NamedToolChoiceFunction(name=))
                 | AllowedToolChoiceParam(allowed_tools=AllowedToolsParam(mode=, tools=[AllowedToolRef]))
                 | BuiltinToolChoiceParam(type=, name=)
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Union

from pydantic import BaseModel


class FunctionDefinition(BaseModel):
    """A function the model may call: its name, what it does, and its arguments' JSON Schema."""

    name: str
    description: Optional[str] = None
    parameters: Optional[Dict[str, Any]] = None
    strict: Optional[bool] = None


class FunctionToolParam(BaseModel):
    type: Literal["function"] = "function"
    function: FunctionDefinition


class BuiltinToolParam(BaseModel):
    """A tool the serving stack provides itself (a browser, a code interpreter...)."""

    type: str
    name: Optional[str] = None
    parameters: Optional[Dict[str, Any]] = None


class NamedToolChoiceFunction(BaseModel):
    name: str


class NamedToolChoiceParam(BaseModel):
    """tool_choice forcing one named function."""

    type: Literal["function"] = "function"
    function: NamedToolChoiceFunction


class AllowedToolRef(BaseModel):
    """One entry of an allowed-tools list: a function (by `function.name`) or a builtin tool."""

    type: str
    function: Optional[NamedToolChoiceFunction] = None
    name: Optional[str] = None


class AllowedToolsParam(BaseModel):
    mode: Literal["auto", "required"]
    tools: List[AllowedToolRef]


class AllowedToolChoiceParam(BaseModel):
    """tool_choice restricting the call to a subset of the tools (`mode` "required": one must be called)."""

    type: Literal["allowed_tools"] = "allowed_tools"
    allowed_tools: AllowedToolsParam


class BuiltinToolChoiceParam(BaseModel):
    type: str
    name: Optional[str] = None


ToolParam = Union[FunctionToolParam, BuiltinToolParam]
ToolChoiceOptionParam = Union[Literal["none", "auto", "required"], NamedToolChoiceParam, AllowedToolChoiceParam,
                              BuiltinToolChoiceParam]

__all__ = ["AllowedToolChoiceParam", "AllowedToolRef", "AllowedToolsParam", "BuiltinToolChoiceParam",
           "BuiltinToolParam", "FunctionDefinition", "FunctionToolParam", "NamedToolChoiceFunction",
           "NamedToolChoiceParam", "ToolChoiceOptionParam", "ToolParam"]
