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

        if len(call.positional) != 1 or call.positional[0].kind != "string":
            raise SourceError("Regex takes exactly one positional argument, the pattern string", call.pos)
        call.only_named("json_string", "flags")
        json_string = call.boolean("json_string", False)
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
