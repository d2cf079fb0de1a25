"""Listed values (`enum`, `const`) against the other keywords of their schema (XGrammar-2 §2.1,
the JSON Schema front end).

A schema such as `allOf: [{enum: [a, b, c]}, {pattern: "^b"}]` merges into one schema with both
keywords; the grammar lists the values, so the values are filtered first: a value stays only
when every keyword this module can check holds for it

    type                            the value's JSON type (an integral float is an integer)
    minLength, maxLength            code points of a string
    pattern, format                 a search / whole match, by the regex front end's automata
    minimum ... exclusiveMaximum    exact decimal comparison (draft 4's boolean forms too)
    multipleOf                      exact decimal remainder
    minItems, maxItems              items of an array
    required, min/maxProperties     members of an object
    const (beside enum)             JSON equality
    FRACTIONAL, NOT_...             the complements of negation.py, likewise

A keyword it cannot check (`not`, `items`, ...) keeps the value, as before filtering: the
grammar is never narrower than the schema because of this module.
"""

from __future__ import annotations

import functools
import json
from decimal import Decimal, InvalidOperation
from typing import Any, Optional

from .keywords import FRACTIONAL, MEMBERS, NOT_MULTIPLE_OF, PRESENT, WITNESS, bounds
from ..regex.parser import RegexError, regex_to_expr
from ...grammar.regular import TooLarge, automaton, matches


def has_type(value: Any, types) -> bool:
    """Whether `value` (parsed JSON) has one of the JSON Schema `types` (a name or a list)."""
    types = [types] if isinstance(types, str) else types
    kind = ("null" if value is None else "boolean" if isinstance(value, bool) else "integer" if isinstance(value, int)
            else "number" if isinstance(value, float) else "string" if isinstance(value, str)
            else "array" if isinstance(value, list) else "object")
    return kind in types or (kind == "integer" and "number" in types) or (
        kind == "number" and "integer" in types and float(value).is_integer())


def json_kind(value: Any) -> str:
    """The JSON kind of a parsed value: null, boolean, number (ints too), string, array, object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "string" if isinstance(value, str) else "array" if isinstance(value, list) else "object"


def _canonical(value: Any) -> Any:
    """`value` with integral floats as ints (JSON Schema equality: 1 and 1.0 are the same)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    return value


def json_equal(a: Any, b: Any) -> bool:
    """Equality of two JSON values as JSON Schema defines it (`enum`, `const`)."""
    return json.dumps(_canonical(a), sort_keys=True) == json.dumps(_canonical(b), sort_keys=True)


def _count_ok(n: int, schema: dict, low: str, high: str) -> bool:
    lo, hi = schema.get(low), schema.get(high)
    return not (isinstance(lo, int) and n < lo) and not (isinstance(hi, int) and n > hi)


@functools.lru_cache(maxsize=1024)
def _automata(key: str, regex: str) -> tuple:
    """The automata a string must be in for a `pattern` (key "pattern": searched, lookaheads
    split off) or a format's regex (key "format": whole), built once per regex."""
    from .strings import FormatAutomaton, FormatGrammar, pattern_languages

    if isinstance(regex, FormatAutomaton):
        return (regex.automaton(),)
    if isinstance(regex, FormatGrammar):
        return ()  # (not checked on values: every string meets it here)
    languages = pattern_languages(regex) if key == "pattern" else [regex_to_expr(regex)]
    return tuple(automaton(language) for language in languages)


def _string_ok(value: str, schema: dict, exact: Optional[bool]) -> bool:
    from .strings import string_checks

    if not _count_ok(len(value), schema, "minLength", "maxLength"):
        return False
    for key, regex in string_checks(schema, exact):  # every pattern and format, those an allOf merged too
        try:
            if key == "not_strings":
                if value in regex:
                    return False
            elif key.startswith("not_"):  # a complement: the value must not be in the language (of
                regexes = regex if isinstance(regex, tuple) else (regex,)  # every regex of a format)
                if all(matches(a, value) for r in regexes for a in _automata(key[4:], r)):
                    return False
            elif not isinstance(regex, tuple) and not all(matches(a, value) for a in _automata(key, regex)):
                return False
        except (RegexError, TooLarge):
            pass  # a pattern the front end cannot read is reported where the schema is compiled
    return True


def witness_key(key: str, witness: dict) -> bool:
    """Whether `key` may be the key of the witness's member (keywords.WITNESS): none of its
    names, no match of its patterns, a match of each of its `inside` patterns."""
    if key in witness.get("names", ()):
        return False
    try:
        def found(p):
            return all(matches(a, key) for a in _automata("pattern", p))
        return (not any(found(p) for p in witness.get("patterns", ()))
                and all(found(p) for p in witness.get("inside", ())))
    except (RegexError, TooLarge):
        return True  # (reported where the schema is compiled)


def _number_ok(value, schema: dict) -> bool:
    try:
        v = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
        lo, lo_x, hi, hi_x = bounds(schema, "$")
    except Exception:  # noqa: BLE001  (a bad bound is reported where the schema is compiled)
        return True
    if lo is not None and (v < lo or (lo_x and v == lo)):
        return False
    if hi is not None and (v > hi or (hi_x and v == hi)):
        return False
    if schema.get(FRACTIONAL) and v == v.to_integral_value():
        return False
    for m in schema.get(NOT_MULTIPLE_OF) or []:
        if isinstance(m, (int, float)) and not isinstance(m, bool) and m > 0 and v % Decimal(repr(m) if isinstance(
                m, float) else m) == 0:
            return False
    k = schema.get("multipleOf")
    if isinstance(k, (int, float)) and not isinstance(k, bool) and k > 0:
        try:
            return v % (Decimal(repr(k)) if isinstance(k, float) else Decimal(k)) == 0
        except InvalidOperation:
            return True
    return True


def value_meets(value: Any, schema: dict, exact_formats: Optional[bool] = None) -> bool:
    """False when a keyword of `schema` that this module checks (docstring) rejects `value`
    (formats as `exact_formats` builds them: formats.format_regexes)."""
    if "type" in schema and isinstance(schema["type"], (str, list)) and not has_type(value, schema["type"]):
        return False
    if "const" in schema and not json_equal(value, schema["const"]):
        return False
    if "const" in schema and isinstance(schema.get("enum"), list) and not any(
            json_equal(value, v) for v in schema["enum"]):
        return False  # a const beside an enum must be listed (checked only then: an enum's own values are)
    if isinstance(value, str):
        return _string_ok(value, schema, exact_formats)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _number_ok(value, schema)
    if isinstance(value, list):
        return _count_ok(len(value), schema, "minItems", "maxItems")
    if isinstance(value, dict):
        required = schema.get("required")
        if isinstance(required, list) and any(isinstance(r, str) and r not in value for r in required):
            return False
        if any(isinstance(r, str) and r not in value for r in schema.get(PRESENT) or []):
            return False
        members = schema.get(MEMBERS)
        if isinstance(members, dict) and any(sub is False and name in value for name, sub in members.items()):
            return False  # a member a complement forbids
        for witness in schema.get(WITNESS) or []:  # a member with such a key (its value is not checked)
            if not any(witness_key(key, witness) for key in value):
                return False
        return _count_ok(len(value), schema, "minProperties", "maxProperties")
    return True
