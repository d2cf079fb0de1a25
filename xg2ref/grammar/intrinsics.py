"""The EBNF intrinsics of xgrammar's dialect (section 5) that xg2ref takes, from parsed calls to
IR: `Regex` (xg2ref/grammar/regex.py), `TagDispatch` (xg2ref/grammar/tag_dispatch.py) and
`Substring`. `ebnf.py` parses `Name(value, ..., key=value)` into `Value`s and calls the builder
registered under the name; each checks its arguments and raises `_Located` errors at the
offending value.

What it leaves out: TokenTagDispatch, Token and ExcludeToken (token-level edges).
"""

from __future__ import annotations

from typing import Optional

from lark import Token

from .ebnf import _Located
from .ir import EPSILON, ByteString, Choice, Expr, Repeat, Sequence, TagDispatch


class Value:
    """An intrinsic's argument: kind ("string", "integer", "boolean", "rule name", "tuple"),
    value and source offset."""

    __slots__ = ("kind", "value", "pos")

    def __init__(self, kind: str, value, pos: int):
        self.kind, self.value, self.pos = kind, value, pos


def substring(builder, name: Token, positional: list, named: dict) -> Expr:
    """`Substring("chunk", ...)`: any run of consecutive whole chunks, the empty one too.

        S_i = chunk_i | chunk_i S_i+1         Substring = "" | S_0 | S_1 | ... | S_n-1
    """
    if named:
        raise _Located(f"Substring takes no named arguments, got {next(iter(named))}", name.start_pos)
    if not positional or any(v.kind != "string" for v in positional):
        raise _Located("Substring takes one or more string arguments (the chunks)", name.start_pos)
    chunks = [ByteString(v.value.encode("utf-8", "surrogatepass")) for v in positional]
    runs: list[Expr] = []
    tail: Optional[Expr] = None
    for chunk in reversed(chunks):
        tail = chunk if tail is None else Sequence((chunk, Repeat(tail, 0, 1)))
        runs.append(tail)
    return Choice((EPSILON, *reversed(runs)))


def tag_dispatch(builder, name: Token, positional: list, named: dict) -> Expr:
    """`TagDispatch(("tag", rule), ..., loop_after_dispatch=true, excludes=("s", ...))`."""
    tags = []
    for value in positional:
        items = value.value if value.kind == "tuple" else None
        if not items or len(items) != 2 or items[0].kind != "string" or items[1].kind != "rule name":
            raise _Located("TagDispatch: each positional argument is a pair (\"tag\", rule_name)", value.pos)
        if not items[0].value:
            raise _Located("TagDispatch: a tag must not be empty", items[0].pos)
        builder.references.append(Token("NAME", items[1].value, start_pos=items[1].pos))
        tags.append((items[0].value.encode("utf-8", "surrogatepass"), items[1].value))
    unknown = sorted(set(named) - {"loop_after_dispatch", "excludes"})
    if unknown:
        raise _Located(f"TagDispatch: unknown argument {unknown[0]} (loop_after_dispatch, excludes)",
                       named[unknown[0]].pos)
    loop = named.get("loop_after_dispatch", Value("boolean", True, -1))
    if loop.kind != "boolean":
        raise _Located("TagDispatch: loop_after_dispatch must be true or false", loop.pos)
    excludes_value = named.get("excludes", Value("tuple", [], -1))
    if excludes_value.kind != "tuple" or any(v.kind != "string" or not v.value for v in excludes_value.value):
        raise _Located("TagDispatch: excludes must be a tuple of non-empty strings", excludes_value.pos)
    excludes = tuple(v.value.encode("utf-8", "surrogatepass") for v in excludes_value.value)
    for e, value in zip(excludes, excludes_value.value):
        for tag, _ in tags:
            if tag.startswith(e):
                raise _Located(f"TagDispatch: exclude {value.value!r} is a prefix of tag "
                               f"{tag.decode('utf-8', 'surrogatepass')!r}", value.pos)
    return TagDispatch(tuple(tags), loop.value, excludes)


def regex(builder, name: Token, positional: list, named: dict) -> Expr:
    """`Regex("pattern", json_string=false, flags="")`: the pattern's language, inline."""
    from .regex import RegexError, regex_to_expr

    if len(positional) != 1 or positional[0].kind != "string":
        raise _Located("Regex takes exactly one positional argument, the pattern string", name.start_pos)
    unknown = sorted(set(named) - {"json_string", "flags"})
    if unknown:
        raise _Located(f"Regex: unknown argument {unknown[0]} (json_string, flags)", named[unknown[0]].pos)
    json_string = named.get("json_string", Value("boolean", False, -1))
    flags = named.get("flags", Value("string", "", -1))
    if json_string.kind != "boolean":
        raise _Located("Regex: json_string must be true or false", json_string.pos)
    if flags.kind != "string":
        raise _Located("Regex: flags must be a string", flags.pos)
    try:
        return regex_to_expr(positional[0].value, json_string=json_string.value, flags=flags.value)
    except RegexError as err:
        raise _Located(f"Regex: {err.message}" + (f" (pattern offset {err.pos})" if err.pos >= 0 else ""),
                       positional[0].pos) from None


INTRINSIC_BUILDERS = {"Regex": regex, "TagDispatch": tag_dispatch, "Substring": substring}
