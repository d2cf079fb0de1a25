"""`Regex("pattern", json_string=false, flags="")`: a macro of xgrammar's EBNF dialect
(section 5), the pattern's language inline, read in xgrammar's intrinsic regex dialect
(xg2ref/frontends/regex/intrinsic_dialect.py). Giving `flags` at all, even `flags=""`, keeps `.` off the
line feed unless it holds `s`."""

from __future__ import annotations

from ..grammar.intrinsic import Call, Macro, register
from ..grammar.ir import Expr
from ..grammar.source_error import SourceError


@register
class Regex(Macro):
    ebnf_name = "Regex"

    @classmethod
    def from_call(cls, call: Call) -> Expr:
        from ..frontends.regex.parser import RegexError
        from ..frontends.regex.intrinsic_dialect import intrinsic_regex_to_expr

        # the errors in xgrammar's words
        if len(call.positional) != 1:
            raise SourceError("Regex expects exactly one string argument", call.pos)
        if call.positional[0].kind != "string":
            raise SourceError("Regex pattern must be a string literal", call.positional[0].pos)
        for key, value in call.named.items():
            if key not in ("json_string", "flags"):
                raise SourceError(f"Regex does not support the named argument {key}", value.pos)
        json_string = call.named.get("json_string")
        if json_string is not None and json_string.kind != "boolean":
            raise SourceError("json_string must be a boolean", json_string.pos)
        json_string = json_string is not None and json_string.value
        flags = call.named.get("flags")
        if flags is not None and flags.kind != "string":
            raise call.fail("flags must be a string", flags)
        pattern = call.positional[0]
        try:
            return intrinsic_regex_to_expr(pattern.value, json_string=json_string,
                                           flags=None if flags is None else flags.value)
        except RegexError as err:
            raise SourceError(f"Regex: {err.message}" + (f" (pattern offset {err.pos})" if err.pos >= 0 else ""),
                              pattern.pos) from None
