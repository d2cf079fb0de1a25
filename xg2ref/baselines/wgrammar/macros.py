"""WGrammar's operators as EBNF calls (WGrammar §3.2): macros over `TokenSet` leaves.

Importing `xg2ref.baselines.wgrammar` registers four calls with the intrinsic registry
(xg2ref/grammar/intrinsic.py); until then a rule named `Write` or `Wait` is a rule like any other.
Each call takes token ids, so the grammar stays independent of the vocabulary, and lowers to
nodes the pipeline knows (docs/adding-an-intrinsic.md, "prefer a macro"):

    Write(w1, .., wn)                 Token(w1) .. Token(wn)
    Wait((W..), allow=(A..))          Token(A \\ W)* Token(W)
    Wait((W..), deny=(D..))           ExcludeToken(D ∪ W)* Token(W)
    IfElse((T..), (E..), p, q)        Token(T) p | Token(E) q       (p, q: rule names, optional)
    DoWhile(p, (C..))                 p (Token(C) p)*

A body or a branch is a rule, written after the call (`Wait(...) body`) or named in it. The EBNF
form reads the same language whether or not the program is well formed in operators.py's sense
(Earley takes both ways where two sets overlap); IfElse's T ∩ E = ∅ is checked here, where it is
local, and the rest by `compile_program`.
"""

from __future__ import annotations

from ...grammar.intrinsic import Call, Macro, register
from ...grammar.ir import Choice, Expr, Repeat, RuleRef, Sequence
from ...intrinsics.token_sets import TokenSet, token_ids


def _id_tuple(call: Call, value, what: str) -> tuple:
    if value.kind == "integer":
        return (value.value,)
    if value.kind != "tuple":
        raise call.fail(f"{what} must be a token id or a tuple of token ids", value)
    return token_ids(call, value.value, what)


def _seq(*items) -> Expr:
    return items[0] if len(items) == 1 else Sequence(tuple(items))


class WriteCall(Macro):
    """`Write(id, ...)`: these tokens, one per step."""

    ebnf_name = "Write"

    @classmethod
    def from_call(cls, call: Call) -> Expr:
        call.no_named()
        if not call.positional:
            raise call.fail("Write takes one or more token ids")
        ids = []
        for v in call.positional:
            if v.kind != "integer":
                raise call.fail("Write's arguments must be token ids", v)
            ids.append(TokenSet((v.value,)))
        return _seq(*ids)


class WaitCall(Macro):
    """`Wait((id, ...), allow=(id, ...))` or `Wait((id, ...), deny=(id, ...))`."""

    ebnf_name = "Wait"

    @classmethod
    def from_call(cls, call: Call) -> Expr:
        call.only_named("allow", "deny")
        if len(call.positional) != 1:
            raise call.fail("Wait takes one positional argument, the wait set")
        if ("allow" in call.named) == ("deny" in call.named):
            raise call.fail("Wait takes exactly one of allow= and deny=")
        wait = _id_tuple(call, call.positional[0], "the wait set")
        if "allow" in call.named:
            free = tuple(t for t in _id_tuple(call, call.named["allow"], "allow") if t not in wait)
            if not free:  # nothing to wait over: one token of W
                return TokenSet(wait)
            return Sequence((Repeat(TokenSet(free), 0, None), TokenSet(wait)))
        deny = _id_tuple(call, call.named["deny"], "deny")
        return Sequence((Repeat(TokenSet(tuple(dict.fromkeys(deny + wait)), exclude=True), 0, None), TokenSet(wait)))


class IfElseCall(Macro):
    """`IfElse((id, ...), (id, ...), then_rule, else_rule)` (the rules may be left out)."""

    ebnf_name = "IfElse"

    @classmethod
    def from_call(cls, call: Call) -> Expr:
        call.no_named()
        if len(call.positional) not in (2, 4):
            raise call.fail("IfElse takes two token sets, then optionally two rule names")
        then_set = _id_tuple(call, call.positional[0], "the then set")
        else_set = _id_tuple(call, call.positional[1], "the else set")
        common = [t for t in then_set if t in else_set]
        if common:
            raise call.fail(f"token {common[0]} is in both sets of the IfElse", call.positional[1])
        rules = [RuleRef(call.refer(v)) if v.kind == "rule name" else None for v in call.positional[2:]]
        for v, r in zip(call.positional[2:], rules):
            if r is None:
                raise call.fail("IfElse's branches must be rule names", v)
        then, else_ = rules or (None, None)
        return Choice((_seq(TokenSet(then_set), *([then] if then else [])),
                       _seq(TokenSet(else_set), *([else_] if else_ else []))))


class DoWhileCall(Macro):
    """`DoWhile(body_rule, (id, ...))`: the body, then a continue token and the body again."""

    ebnf_name = "DoWhile"

    @classmethod
    def from_call(cls, call: Call) -> Expr:
        call.no_named()
        if len(call.positional) != 2 or call.positional[0].kind != "rule name":
            raise call.fail("DoWhile takes a rule name (the body) and the continue set")
        body = RuleRef(call.refer(call.positional[0]))
        cont = _id_tuple(call, call.positional[1], "the continue set")
        return Sequence((body, Repeat(Sequence((TokenSet(cont), body)), 0, None)))


MACROS = (WriteCall, WaitCall, IfElseCall, DoWhileCall)


def register_macros() -> None:
    """Make the four calls EBNF calls (done once, when the package is imported)."""
    from ...grammar.intrinsic import REGISTRY

    for macro in MACROS:
        if REGISTRY.get(macro.ebnf_name) is not macro:
            register(macro)
