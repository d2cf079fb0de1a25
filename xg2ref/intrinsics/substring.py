"""`Substring("chunk", ...)`: a macro of xgrammar's EBNF dialect (section 5), any run of
consecutive whole chunks, the empty one too. `Substring()` with no chunks matches only the
empty string (as in xgrammar 0.2.8). It lowers to plain choices and optional sequences:

    S_i = chunk_i | chunk_i S_i+1         Substring = "" | S_0 | S_1 | ... | S_n-1
"""

from __future__ import annotations

from typing import Optional

from ..grammar.intrinsic import Call, Macro, register
from ..grammar.ir import EPSILON, ByteString, Choice, Expr, Repeat, Sequence


@register
class Substring(Macro):
    ebnf_name = "Substring"

    @classmethod
    def from_call(cls, call: Call) -> Expr:
        call.no_named()
        if any(v.kind != "string" for v in call.positional):
            raise call.fail("Substring takes string arguments (the chunks)")
        chunks = [ByteString(v.value.encode("utf-8", "surrogatepass")) for v in call.positional]
        runs: list = []
        tail: Optional[Expr] = None
        for chunk in reversed(chunks):
            tail = chunk if tail is None else Sequence((chunk, Repeat(tail, 0, 1)))
            runs.append(tail)
        return Choice((EPSILON, *reversed(runs))) if runs else EPSILON
