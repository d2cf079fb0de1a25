"""XGrammar-2 §3.2: the structural-tag format as typed pydantic models (`xgrammar.structural_tag` in 0.2.8).

A structural tag is `{"type": "structural_tag", "format": F}`; F is one of the format models
below, told apart by its `type` field (a pydantic discriminated union). Field names, types and
defaults are those of xgrammar 0.2.8, so a tag built with either package validates in the
other; what each format means, and how it becomes a grammar, is xg2ref/frontends/structural_tag/converter.py.

    const_string{value}            json_schema{json_schema, style, any_order, max_whitespace_cnt, excludes}
    grammar{grammar}               regex{pattern}          qwen_xml_parameter{json_schema}
    any_text{excludes, max_tokens, max_chars}              sequence{elements}   or{elements}
    optional / star / plus{content}                        repeat{min, max, content}
    tag{begin, content, end}       triggered_tags{triggers, tags, at_least_one, stop_after_first, excludes}
    tags_with_separator{tags, separator, at_least_one, stop_after_first}
    dispatch{rules, loop, excludes}                        token{token}   exclude_token{exclude_tokens}
    any_tokens{exclude_tokens, max_tokens}                 token_triggered_tags{trigger_tokens, tags, ...}
    token_dispatch{rules, loop, exclude_tokens}

`StructuralTagItem(begin=, schema=, end=)` is the legacy form's item; `StructuralTag.from_legacy_structural_tag(items,
triggers)` turns a legacy `(tags, triggers)` pair into the triggered_tags format it stands for.
Every compile entry point also takes a structural tag as a dict or JSON text; the models are for
code that builds tags in Python and wants them checked as they are built.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Literal, Optional, Tuple, Type, Union

from pydantic import BaseModel, Field
from typing_extensions import Annotated

XML_STYLES = Literal["json", "qwen_xml", "minimax_xml", "minimax_m3_xml", "deepseek_xml", "glm_xml", "cohere_xml",
                     "kimi_k3_xml", "deepseek_v4_1_xml"]


class ConstStringFormat(BaseModel):
    type: Literal["const_string"] = "const_string"
    value: str


class JSONSchemaFormat(BaseModel):
    type: Literal["json_schema"] = "json_schema"
    json_schema: Union[bool, Dict[str, Any]]
    style: XML_STYLES = "json"
    any_order: bool = False
    max_whitespace_cnt: Optional[int] = None
    excludes: List[str] = []


class QwenXMLParameterFormat(BaseModel):
    """Deprecated in xgrammar 0.2.8: `json_schema` with `style="qwen_xml"` says the same."""

    type: Literal["qwen_xml_parameter"] = "qwen_xml_parameter"
    json_schema: Union[bool, Dict[str, Any]]


class GrammarFormat(BaseModel):
    type: Literal["grammar"] = "grammar"
    grammar: str


class RegexFormat(BaseModel):
    type: Literal["regex"] = "regex"
    pattern: str


class AnyTextFormat(BaseModel):
    type: Literal["any_text"] = "any_text"
    excludes: List[str] = []
    max_tokens: Optional[int] = None
    max_chars: Optional[int] = None


class TokenFormat(BaseModel):
    type: Literal["token"] = "token"
    token: Union[int, str]


class ExcludeTokenFormat(BaseModel):
    type: Literal["exclude_token"] = "exclude_token"
    exclude_tokens: List[Union[int, str]] = []


class AnyTokensFormat(BaseModel):
    type: Literal["any_tokens"] = "any_tokens"
    exclude_tokens: List[Union[int, str]] = []
    max_tokens: Optional[int] = None


class SequenceFormat(BaseModel):
    type: Literal["sequence"] = "sequence"
    elements: List["Format"]


class OrFormat(BaseModel):
    type: Literal["or"] = "or"
    elements: List["Format"]


class OptionalFormat(BaseModel):
    type: Literal["optional"] = "optional"
    content: "Format"


class StarFormat(BaseModel):
    type: Literal["star"] = "star"
    content: "Format"


class PlusFormat(BaseModel):
    type: Literal["plus"] = "plus"
    content: "Format"


class RepeatFormat(BaseModel):
    type: Literal["repeat"] = "repeat"
    min: int
    max: int
    content: "Format"


class TagFormat(BaseModel):
    type: Literal["tag"] = "tag"
    begin: Union[str, TokenFormat]
    content: "Format"
    end: Union[str, List[str], TokenFormat]


class TriggeredTagsFormat(BaseModel):
    type: Literal["triggered_tags"] = "triggered_tags"
    triggers: List[str]
    tags: List[TagFormat]
    at_least_one: bool = False
    stop_after_first: bool = False
    excludes: List[str] = []


class TagsWithSeparatorFormat(BaseModel):
    type: Literal["tags_with_separator"] = "tags_with_separator"
    tags: List[TagFormat]
    separator: str
    at_least_one: bool = False
    stop_after_first: bool = False


class TokenTriggeredTagsFormat(BaseModel):
    type: Literal["token_triggered_tags"] = "token_triggered_tags"
    trigger_tokens: List[Union[int, str]]
    tags: List[TagFormat]
    exclude_tokens: List[Union[int, str]] = []
    at_least_one: bool = False
    stop_after_first: bool = False


class DispatchFormat(BaseModel):
    type: Literal["dispatch"] = "dispatch"
    rules: List[Tuple[str, "Format"]]
    loop: bool = True
    excludes: List[str] = []


class TokenDispatchFormat(BaseModel):
    type: Literal["token_dispatch"] = "token_dispatch"
    rules: List[Tuple[Union[int, str], "Format"]]
    loop: bool = True
    exclude_tokens: List[Union[int, str]] = []


Format = Annotated[
    Union[AnyTextFormat, ConstStringFormat, JSONSchemaFormat, GrammarFormat, RegexFormat, QwenXMLParameterFormat,
          OrFormat, SequenceFormat, TagFormat, TriggeredTagsFormat, TokenTriggeredTagsFormat, TagsWithSeparatorFormat,
          OptionalFormat, PlusFormat, StarFormat, TokenFormat, ExcludeTokenFormat, AnyTokensFormat, RepeatFormat,
          DispatchFormat, TokenDispatchFormat],
    Field(discriminator="type"),
]


class StructuralTagItem(BaseModel):
    """One tag of the legacy form: text `begin`, a JSON value valid under `schema` (a dict, JSON
    text or a pydantic model class), text `end`."""

    begin: str
    schema_: Union[str, Type[BaseModel], Dict[str, Any]] = Field(alias="schema")
    end: str


class StructuralTag(BaseModel):
    """A structural tag: `StructuralTag(format=...)`, or `StructuralTag(fmt)` with the format as
    its one positional argument (a format model or its dict)."""

    type: Literal["structural_tag"] = "structural_tag"
    format: Format

    def __init__(self, format: Any = None, /, **data: Any):  # noqa: A002  (the JSON field is "format")
        if format is not None:
            data["format"] = format
        super().__init__(**data)

    @staticmethod
    def from_json(json_str: Union[str, bytes, Dict[str, Any]]) -> "StructuralTag":
        """Validate JSON text or a dict into a StructuralTag (pydantic's ValidationError, a
        ValueError, names what is wrong)."""
        if isinstance(json_str, (str, bytes)):
            return StructuralTag.model_validate_json(json_str)
        if isinstance(json_str, dict):
            return StructuralTag.model_validate(json_str)
        raise ValueError(f"a structural tag is JSON text or a dict, got {type(json_str).__name__}")

    @staticmethod
    def from_legacy_structural_tag(tags: List[StructuralTagItem], triggers: List[str]) -> "StructuralTag":
        """The triggered_tags format the legacy `(tags, triggers)` pair stands for: each item
        becomes tag{begin, json_schema{schema}, end}."""
        def schema_of(item: StructuralTagItem) -> Any:
            schema = item.schema_
            if isinstance(schema, str):
                return json.loads(schema)
            if isinstance(schema, type) and issubclass(schema, BaseModel):
                return schema.model_json_schema()
            return schema

        return StructuralTag(format=TriggeredTagsFormat(
            triggers=list(triggers),
            tags=[TagFormat(begin=t.begin, content=JSONSchemaFormat(json_schema=schema_of(t)), end=t.end) for t in tags]))


for _model in (SequenceFormat, OrFormat, OptionalFormat, StarFormat, PlusFormat, RepeatFormat, TagFormat,
               TriggeredTagsFormat, TagsWithSeparatorFormat, TokenTriggeredTagsFormat, DispatchFormat,
               TokenDispatchFormat, StructuralTag):
    _model.model_rebuild()

__all__ = ["AnyTextFormat", "AnyTokensFormat", "ConstStringFormat", "DispatchFormat", "ExcludeTokenFormat", "Format",
           "GrammarFormat", "JSONSchemaFormat", "OptionalFormat", "OrFormat", "PlusFormat", "QwenXMLParameterFormat",
           "RegexFormat", "RepeatFormat", "SequenceFormat", "StarFormat", "StructuralTag", "StructuralTagItem",
           "TagFormat", "TagsWithSeparatorFormat", "TokenDispatchFormat", "TokenFormat", "TokenTriggeredTagsFormat",
           "TriggeredTagsFormat"]
