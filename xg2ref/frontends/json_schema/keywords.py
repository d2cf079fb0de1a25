"""A leaf of shared helpers for the JSON Schema front end (XGrammar-2 §2.1): the keyword sets
and the readers of numeric keywords.

The converter (converter.py) and its satellites (merge.py, objects.py,
strings.py, values.py, xg2ref/frontends/structural_tag/excludes.py, xg2ref/frontends/structural_tag/xml_parameters.py) all import this module, so no
satellite imports the converter:

    TYPES                       the seven JSON Schema type names, in the order `type` expands to
    ANNOTATIONS                 keywords that change no language (title, $defs, ...)
    MORE_PATTERNS, MORE_FORMATS where `merge` keeps the second and later patterns / formats of an allOf
    FRACTIONAL, NOT_..., WITNESS   the converter's keywords for complements (negation.py)
    constrains(schema)          whether a schema has a keyword that is not an annotation
    count(schema, key, ...)     a non-negative integer keyword (minLength, maxItems, ...)
    bounds(schema, path)        minimum / maximum with their exclusive forms (draft 4's too)
    decimal_parts(value)        a decimal as p / 10^s (multipleOf)
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Optional

from ...exceptions import InvalidJSONError

TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")
ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$schema", "$id", "id", "$comment",
                         "readOnly", "writeOnly", "deprecated", "$anchor", "definitions", "$defs", "format_",
                         "contentMediaType", "contentEncoding"})
MORE_PATTERNS = "$xg2ref:patterns"  # an allOf of two patterns: the second and later ones (all must hold)
MORE_FORMATS = "$xg2ref:formats"  # an allOf of two formats: the second and later ones (all must hold)
MORE_CONTAINS = "$xg2ref:contains"  # an allOf of two contains: [(C, minContains, maxContains)] past the first
# the converter's own keywords for complements (negation.py): what `not` of a keyword leaves
FRACTIONAL = "$xg2ref:fractional"  # a number whose value is not an integer (written without exponent)
NOT_MULTIPLE_OF = "$xg2ref:not_multiple_of"  # an integer that is a multiple of none of these
NOT_PATTERNS = "$xg2ref:not_patterns"  # a string in which none of these patterns finds a match
NOT_FORMATS = "$xg2ref:not_formats"  # a string that is in none of these formats
NOT_STRINGS = "$xg2ref:not_strings"  # a string that is none of these
MEMBERS = "$xg2ref:members"  # {name: schema}: a member of that name, if present, meets it (declares nothing)
PRESENT = "$xg2ref:present"  # [names]: members that must be there, where the object takes them (opens nothing)
# [{"names": [...], "patterns": [...], "inside": [...], "value": schema}]: the object has a member
# outside these names whose key contains no match of `patterns`, a match of each of `inside`
# (default none), and whose value meets `value` (default true). Each entry is the complement of
# `additionalProperties` (false, or a schema: its `not` as value) or of one `patternProperties`
# entry (its pattern inside, its schema's `not` as value).
WITNESS = "$xg2ref:witness"
COMPLEMENTS = (FRACTIONAL, NOT_MULTIPLE_OF, NOT_PATTERNS, NOT_FORMATS, NOT_STRINGS, MEMBERS, PRESENT, WITNESS)


# every keyword of the JSON Schema drafts 4 to 2020-12 (core, applicator, validation, format,
# content, meta-data, unevaluated); a word outside them has no meaning to the standard
STANDARD = frozenset({
    "$schema", "$id", "id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor",
    "$vocabulary", "$comment", "$defs", "definitions", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    "dependentSchemas", "dependencies", "prefixItems", "items", "additionalItems", "contains", "properties",
    "patternProperties", "additionalProperties", "propertyNames", "unevaluatedItems", "unevaluatedProperties",
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength",
    "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains", "maxProperties",
    "minProperties", "required", "dependentRequired", "format", "contentEncoding", "contentMediaType",
    "contentSchema", "title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples"})


def constrains(schema: dict) -> bool:
    """Whether `schema` has a keyword that is not an annotation."""
    return any(k not in ANNOTATIONS for k in schema)


def count(schema: dict, key: str, path: str, default):
    """The non-negative integer `schema[key]` (an integral float is read as an int), `default`
    when absent; anything else is an InvalidJSONError at `path.key`."""
    if key not in schema:
        return default
    value = schema[key]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidJSONError(f"{path}.{key}: must be a non-negative integer, got {value!r}")
    return value


def number(value: Any, path: str) -> Decimal:
    """A numeric keyword's value as an exact Decimal (a float by its shortest repr)."""
    if isinstance(value, Decimal):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidJSONError(f"{path}: must be a number, got {value!r}")
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def decimal_parts(value: Decimal) -> tuple[int, int]:
    """(p, s) with value = p / 10^s, s >= 0, and p not divisible by 10 when s > 0."""
    _, digit_tuple, exp = value.normalize().as_tuple()
    p = int("".join(map(str, digit_tuple)))
    return (p * 10 ** exp, 0) if exp >= 0 else (p, -exp)


def bounds(schema: dict, path: str) -> tuple[Optional[Decimal], bool, Optional[Decimal], bool]:
    """(lo, lo exclusive, hi, hi exclusive) of a number schema: the tighter of `minimum` and
    `exclusiveMinimum` (a number, or draft 4's boolean on `minimum`), the same for the maximum."""
    lo = hi = None
    lo_x = hi_x = False
    if "minimum" in schema:
        lo = number(schema["minimum"], f"{path}.minimum")
    if "maximum" in schema:
        hi = number(schema["maximum"], f"{path}.maximum")
    x = schema.get("exclusiveMinimum")
    if isinstance(x, bool):  # draft 4
        lo_x = x and lo is not None
    elif x is not None:
        v = number(x, f"{path}.exclusiveMinimum")
        if lo is None or v >= lo:
            lo, lo_x = v, True
    x = schema.get("exclusiveMaximum")
    if isinstance(x, bool):
        hi_x = x and hi is not None
    elif x is not None:
        v = number(x, f"{path}.exclusiveMaximum")
        if hi is None or v <= hi:
            hi, hi_x = v, True
    return lo, lo_x, hi, hi_x
