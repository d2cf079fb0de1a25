"""JSON Schema strings as grammar IR, for `converter.py`: lengths, `pattern` and `format`.

What the quotes of a valid string hold, in code points written canonically
(`json_lexical.encoded_char`), chosen by the cheapest construction that is exact:

    no pattern/format        json_char{minLength, maxLength}       a repetition of one shared rule
    one regex, no bound      the regex, each character encoded
    one regex, easy count    the one repeated character takes the bound (regular.bounded_by_counting)
    otherwise                the regexes intersected and multiplied by a length counter
                             (regular.bounded_length), one right-linear rule per state

A `pattern` is searched (a match anywhere), as the standard says; a `format` names a whole-string
regex (`formats.py`). Patterns beyond a context-free grammar (lookaround, backreferences,
word boundaries) are not enforced. Narrowings (specs/05-front-ends.md): a bound whose counter
product passes the size limit is halved until it fits. A plain string's bounds, and those of a
pattern that repeats one character, are a repetition `x{lo,hi}` that the compiler counts
(XGrammar-2 §3.6, xg2ref/grammar/repetition.py), so they stay exact at any size.
"""

from __future__ import annotations

import functools
from typing import Optional

from ...exceptions import InvalidJSONError
from ...grammar.ir import ByteString, CharClass, Choice, Expr, Repeat, RuleRef, Sequence
from .lexical import NOTHING, any_string_char, encoded_char, json_encode_regex, seq
from .keywords import MORE_FORMATS, MORE_PATTERNS, NOT_FORMATS, NOT_PATTERNS, NOT_STRINGS, count
from ..regex.parser import RegexError, regex_to_expr
from ..regex.anchors import leading_lookaheads
from ...grammar.regular import (LARGE_CLASS_RANGES, MAX_PRODUCT_STATES, TooLarge, bounded_by_counting, bounded_length,
                                complement_automaton, intersection_automaton)
from .formats import EXACT_FORMAT_STATES, LIMITS as FORMAT_LIMITS, FormatAutomaton, FormatGrammar, format_regexes

# a string whose length bound is larger than this becomes a rule of its own, shared by every
# property that uses it (its many states then get their mask-cache entries once)
SHARED_STRING_LENGTH = 16
# RegexError messages of constructs no grammar can enforce (a `pattern` using one is not enforced)
UNENFORCEABLE = ("backreferences", "lookahead", "negative lookahead", "lookbehind", "negative lookbehind",
                 "word boundaries")


def string_expr(conv, schema: dict, path: str) -> Expr:
    """A JSON string valid under `schema`, quotes included."""
    content = string_content(conv, schema, path)
    if content == NOTHING:
        return NOTHING
    string = seq(ByteString(b'"'), content, ByteString(b'"'))
    if isinstance(content, Repeat) and (content.max is None or max(content.min, content.max) > SHARED_STRING_LENGTH):
        name = f"json_string_{content.min}_{content.max}" if content.max is not None else "json_string"
        return conv.rule(("string", content), name if content.min or content.max is not None else "json_string",
                         lambda: string)
    return string


def string_content(conv, schema: dict, path: str) -> Expr:
    """What the quotes of a string valid under `schema` hold (module docstring)."""
    lo = count(schema, "minLength", path, 0)
    hi = count(schema, "maxLength", path, None)
    if hi is not None and hi < lo:
        return NOTHING
    checks = string_checks(schema, conv.exact_formats)
    if conv.exact_formats:  # exact or refused: what a format's grammar still lets in is an approximation
        for name in ([schema["format"]] if "format" in schema else []) + schema.get(MORE_FORMATS, []):
            limit = FORMAT_LIMITS.get((name, True), "") if isinstance(name, str) else ""
            if limit.startswith("wider"):
                conv.approximations.append((f"{path}.format", "format", f"not enforced in full: {limit}"))
    if any(isinstance(r, FormatGrammar) for _, r in checks):
        if len(checks) == 1 and lo == 0 and hi is None:  # a context-free format, alone
            return checks[0][1].expr(conv.rule)
        checks = [c for c in checks if not isinstance(c[1], FormatGrammar)]  # (else an annotation: formats.LIMITS)
    exprs = string_regexes(checks, path)
    if exprs is None:
        conv.approximations.append((f"{path}.pattern", "pattern",
                                    "not enforced: a construct beyond a context-free grammar (lookbehind, a "
                                    "lookahead past the start, backreferences, word boundaries)"))
        return string_content(conv, {k: v for k, v in schema.items() if k not in ("pattern", MORE_PATTERNS)}, path)
    if not exprs:
        char = conv.rule(("char",), "json_char", any_string_char)
        return Repeat(char, lo, hi)
    lone = len(exprs) == 1 and not isinstance(exprs[0], tuple)  # (an automaton goes through the product)
    if lone and lo == 0 and hi is None:
        return json_encode_regex(exprs[0])  # (a lookahead makes two or more languages)
    counted = bounded_by_counting(exprs[0], lo, hi) if lone else None
    if counted is not None:
        return _shared_repeated_chars(conv, json_encode_regex(counted))
    key = ("bounded", tuple(checks), lo, hi)
    if key in conv.memo:  # the same pattern under the same bounds elsewhere in the schema
        return RuleRef(conv.memo[key])
    cap = hi
    while True:
        try:
            start = bounded_length(exprs, lo, cap, lambda ranges: _shared_char(conv, ranges), conv.new_rule,
                                   conv.set_rule, EXACT_FORMAT_STATES if conv.exact_formats else MAX_PRODUCT_STATES)
            break
        except TooLarge as err:
            # a maxLength too long to count exactly is lowered until the automaton fits: the
            # longer strings are left out, never an invalid one let in (specs/05)
            if cap is None or cap // 2 < max(lo, 1):
                raise InvalidJSONError(f"{path}: {' and '.join(dict.fromkeys(k for k, _ in checks))} "
                                       f"with the length bounds: {err}") from None
            cap //= 2
    if isinstance(start, RuleRef):
        conv.memo[key] = start.name
    return start


def _shared_char(conv, ranges) -> Expr:
    """`encoded_char(ranges)`, as one shared rule when it needs escapes: a product of a thousand
    states then refers to the escapes of its class instead of holding a copy each."""
    expr = encoded_char(ranges)
    if not isinstance(expr, CharClass) or len(ranges) > LARGE_CLASS_RANGES:
        return conv.rule(("encoded_char", tuple(map(tuple, ranges))), "json_class", lambda: expr)
    return expr


def string_checks(schema: dict, exact: Optional[bool] = None) -> list:
    """The (key, regex) pairs a string under `schema` must match: each `pattern` and the regexes
    of each `format` that has some (those an allOf merged too; `exact`: `format_regexes`)."""
    patterns = ([schema["pattern"]] if "pattern" in schema else []) + schema.get(MORE_PATTERNS, [])
    formats = ([schema["format"]] if "format" in schema else []) + schema.get(MORE_FORMATS, [])
    regexes = [r for f in formats for r in format_regexes(f, exact)]
    out = [("pattern", p) for p in patterns] + [("format", r) for r in dict.fromkeys(regexes)]
    # the complements (negation.py): no match of these patterns, in none of these formats (all of
    # a format's regexes together: a tuple), none of these strings
    out += [("not_pattern", p) for p in dict.fromkeys(schema.get(NOT_PATTERNS, []))]
    nots = (format_regexes(f, exact) for f in schema.get(NOT_FORMATS, []))
    out += [("not_format", r[0] if len(r) == 1 else r) for r in dict.fromkeys(nots) if r]
    if schema.get(NOT_STRINGS):
        out.append(("not_strings", tuple(sorted(set(schema[NOT_STRINGS])))))
    return out


def string_regexes(checks: list, path: str) -> Optional[list]:
    """The regex IR of each (key, regex) of `checks` ("pattern" searched, "format" whole), or
    None when the pattern uses a construct beyond a context-free grammar (lookaround,
    backreferences): it is then not enforced (specs/05, "Not enforced") and the caller goes on
    without it."""
    exprs = []
    for key, pattern in checks:
        if key in ("not_pattern", "not_format", "not_strings"):
            exprs.append(complement_of_check(key, pattern, path))
            continue
        if isinstance(pattern, FormatAutomaton):
            exprs.append(pattern.automaton())
            continue
        if isinstance(pattern, FormatGrammar):
            continue  # (a context-free format beside other checks is an annotation: formats.LIMITS)
        if not isinstance(pattern, str):
            raise InvalidJSONError(f"{path}.{key}: must be a string")
        try:
            exprs.extend(pattern_languages(pattern) if key == "pattern" else [regex_to_expr(pattern)])
        except RegexError as err:
            if key == "pattern" and err.message.startswith(UNENFORCEABLE):
                return None
            raise InvalidJSONError(f"{path}.{key}: {err.message}") from None
        except TooLarge as err:
            raise InvalidJSONError(f"{path}.{key}: the lookahead's complement: {err}") from None
    return exprs


def literal_strings(values) -> Expr:
    """The regex IR (over code points) of exactly these strings."""
    return Choice(tuple(Sequence(tuple(CharClass(((ord(c), ord(c)),)) for c in v)) if v else Sequence(())
                        for v in values))


def complement_of_check(key: str, value, path: str):
    """The automaton of the strings a complement keyword allows (negation.py): no match of the
    pattern anywhere, not in the format, none of the strings."""
    try:
        return _complement(key, value)
    except RegexError as err:
        raise InvalidJSONError(f"{path}.not.pattern: {err.message}") from None
    except TooLarge as err:
        raise InvalidJSONError(f"{path}.not: the complement of a {key[4:]}: {err}") from None


@functools.lru_cache(maxsize=256)
def _complement(key: str, value):
    if key == "not_strings":
        language = [literal_strings(value)]
    elif key == "not_format":  # (a format of several regexes: the complement of their intersection)
        language = ([regex_to_expr(value)] if isinstance(value, str) else [value.automaton()]
                    if isinstance(value, FormatAutomaton) else [intersection_automaton([regex_to_expr(r) for r in value])])
    else:
        languages = pattern_languages(value)
        language = [intersection_automaton(languages)] if len(languages) > 1 else languages
    return complement_automaton(language)


def pattern_languages(pattern: str) -> list:
    """The languages whose intersection a search for `pattern` matches: its regex IR, or, for
    lookaheads at the start (`^(?!A)rest`, regex.leading_lookaheads), the IR of `^rest` with
    the IR of `^A` (for `(?=A)`) or the automaton of its complement (for `(?!A)`)."""
    split = leading_lookaheads(pattern)
    if split is None:
        return [regex_to_expr(pattern, search=True)]
    lookaheads, rest = split
    out = [regex_to_expr(rest, search=True)]
    for negated, inner in lookaheads:
        prefix = regex_to_expr(f"^(?:{inner})", search=True)
        out.append(complement_automaton([prefix]) if negated else prefix)
    return out


def _shared_repeated_chars(conv, expr: Expr) -> Expr:
    """`expr` with the body of every long repetition made a rule (one per class): a
    thousand-fold repetition is then a chain of references, not a thousand copies of the
    character's escapes."""
    if isinstance(expr, Repeat) and (expr.max or expr.min) > SHARED_STRING_LENGTH:
        body = expr.body
        return Repeat(conv.rule(("encoded", body), "json_class", lambda: body), expr.min, expr.max)
    if isinstance(expr, Sequence):
        return Sequence(tuple(_shared_repeated_chars(conv, e) for e in expr.items))
    if isinstance(expr, Choice):
        return Choice(tuple(_shared_repeated_chars(conv, e) for e in expr.alternatives))
    return expr
