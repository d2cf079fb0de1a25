"""`Substring("chunk", ...)`: a macro of xgrammar's EBNF dialect (section 5), any run of
consecutive whole chunks, the empty one too. `Substring()` with no chunks matches only the
empty string (as in xgrammar 0.2.8). It lowers to one helper rule per chunk, so that no
expression nests deeper than one chunk however many there are (the Lark dialect's
`%regex {"substring_chunks": ...}` lowers the same way, `substring_rules`):

    S_i ::= chunk_i S_i+1?          (a run from chunk i on)
    F_i ::= S_i | F_i+1             (a run from chunk i or a later one; F_n-1 ::= S_n-1)
    Substring = "" | F_0

The starts are a chain too, not one choice of n references: inlined into the call's rule
(grammar/passes.py), n small references would make one machine of every chunk.
"""

from __future__ import annotations

from typing import Callable

from ..grammar.intrinsic import Call, Macro, register
from ..grammar.ir import EPSILON, ByteString, Choice, Expr, Repeat, RuleRef, Sequence
from ..grammar.source_error import SourceError


def substring_rules(chunks: list[bytes], fresh: Callable[[str], str], define: Callable[[str, Expr], object],
                    base: str = "substring") -> Expr:
    """The lowering above: rules S_i named by `fresh(base)` and given to `define(name, body)`;
    returns the expression that stands for the call."""
    if not chunks:
        return EPSILON
    runs = [fresh(base) for _ in chunks]
    starts = [fresh(base + "_from") for _ in chunks]
    for k, chunk in enumerate(chunks):
        head = ByteString(chunk)
        last = k + 1 == len(chunks)
        define(runs[k], head if last else Sequence((head, Repeat(RuleRef(runs[k + 1]), 0, 1))))
        define(starts[k], RuleRef(runs[k]) if last else Choice((RuleRef(runs[k]), RuleRef(starts[k + 1]))))
    return Choice((EPSILON, RuleRef(starts[0])))


@register
class Substring(Macro):
    ebnf_name = "Substring"

    @classmethod
    def from_call(cls, call: Call) -> Expr:
        if call.named:  # (xgrammar's words)
            raise SourceError("Substring() does not accept named arguments", call.pos)
        if any(v.kind != "string" for v in call.positional):
            raise SourceError("Substring() arguments must be strings", call.pos)
        chunks = [v.value.encode("utf-8", "surrogatepass") for v in call.positional]
        return substring_rules(chunks, call.fresh, call.define)
