"""The EBNF intrinsics of xgrammar's dialect (section 5) that xg2ref takes, from parsed calls to
IR: `Regex` (xg2ref/grammar/regex.py), `TagDispatch` (xg2ref/grammar/tag_dispatch.py),
`Substring`, and the token-level `Token`, `ExcludeToken` and `TokenTagDispatch`. `ebnf.py`
parses `Name(value, ..., key=value)` into `Value`s and calls the builder registered under the
name; each checks its arguments and raises `_Located` errors at the offending value. The rule
options of section 1 (`name[max_tokens=8, lazy] ::= ...`) are parsed here too.

TokenTagDispatch is TagDispatch one level up, over whole tokens: free text is any token that
is neither a trigger nor an exclude, a trigger token dispatches to its rule, then free text
again (loop) or the end. So it is written with TokenSet nodes:

    loop:     ( ExcludeToken(T ∪ E) | Token(t1) r1 | ... | Token(tn) rn )*
    no loop:  ExcludeToken(T ∪ E)* ( Token(t1) r1 | ... | Token(tn) rn )?

What it leaves out: the printer-internal capture options (`capture_hidden_*`, `stop_capture`).
"""

from __future__ import annotations

import re
import struct
from typing import Optional

from lark import Token

from .ebnf import _Located
import math

from .ir import EPSILON, ByteString, Choice, Expr, Repeat, RuleRef, Sequence, TagDispatch, TokenSet

MAX_BUDGET = 2**31 - 1
RULE_OPTIONS = ("max_tokens", "max_chars", "capture", "lazy", "temperature", "unordered", "member", "required")


class Value:
    """An intrinsic's argument: kind ("string", "integer", "boolean", "rule name", "tuple"),
    value and source offset."""

    __slots__ = ("kind", "value", "pos")

    def __init__(self, kind: str, value, pos: int):
        self.kind, self.value, self.pos = kind, value, pos


def substring(builder, name: Token, positional: list, named: dict) -> Expr:
    """`Substring("chunk", ...)`: any run of consecutive whole chunks, the empty one too;
    `Substring()` with no chunks matches only the empty string (as in xgrammar 0.2.8).

        S_i = chunk_i | chunk_i S_i+1         Substring = "" | S_0 | S_1 | ... | S_n-1
    """
    if named:
        raise _Located(f"Substring takes no named arguments, got {next(iter(named))}", name.start_pos)
    if any(v.kind != "string" for v in positional):
        raise _Located("Substring takes string arguments (the chunks)", name.start_pos)
    chunks = [ByteString(v.value.encode("utf-8", "surrogatepass")) for v in positional]
    runs: list[Expr] = []
    tail: Optional[Expr] = None
    for chunk in reversed(chunks):
        tail = chunk if tail is None else Sequence((chunk, Repeat(tail, 0, 1)))
        runs.append(tail)
    return Choice((EPSILON, *reversed(runs))) if runs else EPSILON


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
    """`Regex("pattern", json_string=false, flags="")`: the pattern's language, inline, read in
    xgrammar's intrinsic dialect (xg2ref/grammar/regex_intrinsic.py). Giving `flags` at all,
    even `flags=""`, keeps `.` off the line feed unless it holds `s`."""
    from .regex import RegexError
    from .regex_intrinsic import intrinsic_regex_to_expr

    if len(positional) != 1 or positional[0].kind != "string":
        raise _Located("Regex takes exactly one positional argument, the pattern string", name.start_pos)
    unknown = sorted(set(named) - {"json_string", "flags"})
    if unknown:
        raise _Located(f"Regex: unknown argument {unknown[0]} (json_string, flags)", named[unknown[0]].pos)
    json_string = named.get("json_string", Value("boolean", False, -1))
    flags = named.get("flags")
    if json_string.kind != "boolean":
        raise _Located("Regex: json_string must be true or false", json_string.pos)
    if flags is not None and flags.kind != "string":
        raise _Located("Regex: flags must be a string", flags.pos)
    try:
        return intrinsic_regex_to_expr(positional[0].value, json_string=json_string.value,
                                       flags=None if flags is None else flags.value)
    except RegexError as err:
        raise _Located(f"Regex: {err.message}" + (f" (pattern offset {err.pos})" if err.pos >= 0 else ""),
                       positional[0].pos) from None


def _token_ids(name: Token, values: list, what: str) -> tuple[int, ...]:
    if not values:
        raise _Located(f"{name} takes one or more token ids", name.start_pos)
    ids: dict[int, None] = {}
    for v in values:
        if v.kind != "integer":
            raise _Located(f"{name}: {what} must be non-negative integers (token ids)", v.pos)
        ids.setdefault(v.value, None)
    return tuple(ids)


def token(builder, name: Token, positional: list, named: dict) -> Expr:
    """`Token(id, ...)`: one whole token whose id is listed."""
    if named:
        raise _Located(f"Token takes no named arguments, got {next(iter(named))}", name.start_pos)
    return TokenSet(_token_ids(name, positional, "its arguments"))


def exclude_token(builder, name: Token, positional: list, named: dict) -> Expr:
    """`ExcludeToken(id, ...)`: one whole token whose id is not listed."""
    if named:
        raise _Located(f"ExcludeToken takes no named arguments, got {next(iter(named))}", name.start_pos)
    return TokenSet(_token_ids(name, positional, "its arguments"), exclude=True)


def token_tag_dispatch(builder, name: Token, positional: list, named: dict) -> Expr:
    """`TokenTagDispatch((id, rule), ..., loop_after_dispatch=true, excludes=(id, ...))`."""
    tags: list[tuple[int, str]] = []
    for value in positional:
        items = value.value if value.kind == "tuple" else None
        if not items or len(items) != 2 or items[0].kind != "integer" or items[1].kind != "rule name":
            raise _Located("TokenTagDispatch: each positional argument is a pair (token_id, rule_name)", value.pos)
        builder.references.append(Token("NAME", items[1].value, start_pos=items[1].pos))
        tags.append((items[0].value, items[1].value))
    unknown = sorted(set(named) - {"loop_after_dispatch", "excludes"})
    if unknown:
        raise _Located(f"TokenTagDispatch: unknown argument {unknown[0]} (loop_after_dispatch, excludes)",
                       named[unknown[0]].pos)
    loop = named.get("loop_after_dispatch", Value("boolean", True, -1))
    if loop.kind != "boolean":
        raise _Located("TokenTagDispatch: loop_after_dispatch must be true or false", loop.pos)
    excludes_value = named.get("excludes", Value("tuple", [], -1))
    if excludes_value.kind != "tuple" or any(v.kind != "integer" for v in excludes_value.value):
        raise _Located("TokenTagDispatch: excludes must be a tuple of token ids", excludes_value.pos)
    triggers = [t for t, _ in tags]
    for v in excludes_value.value:
        if v.value in triggers:
            raise _Located(f"TokenTagDispatch: token {v.value} is both a trigger and an exclude", v.pos)
    return token_dispatch_expr(tags, loop.value, [v.value for v in excludes_value.value])


def token_dispatch_expr(tags: list[tuple[int, str]], loop: bool, excludes: list[int]) -> Expr:
    """The TokenSet expression of a TokenTagDispatch (see the module docstring)."""
    free = TokenSet(tuple(dict.fromkeys([t for t, _ in tags] + list(excludes))), exclude=True)
    dispatch = [Sequence((TokenSet((t,)), RuleRef(rule))) for t, rule in tags]
    if loop:
        return Repeat(Choice((free, *dispatch)), 0, None)
    body: Expr = Repeat(free, 0, None)
    if dispatch:
        body = Sequence((body, Repeat(dispatch[0] if len(dispatch) == 1 else Choice(tuple(dispatch)), 0, 1)))
    return body


INTRINSIC_BUILDERS = {"Regex": regex, "TagDispatch": tag_dispatch, "Substring": substring, "Token": token,
                      "ExcludeToken": exclude_token, "TokenTagDispatch": token_tag_dispatch}


# ---------------------------------------------------------------------------------------------
# Rule options (section 1): name[max_tokens=N, max_chars=N, capture, capture="x", lazy,
# temperature=F] ::= ...   Each at most once; kept on the rule, never part of the language.

_OPTION = re.compile(r'\s*([A-Za-z_]+)\s*(?:=\s*("(?:[^"\\]|\\.)*"|[^,\s]+))?\s*(?:,|$)')


def parse_rule_options(source: str, begin: int, end: int, rule_name: str = "") -> tuple[tuple[str, object], ...]:
    """The options written in source[begin:end] (between the brackets), as (key, value) pairs.
    A bare `capture` takes `rule_name` as its label (xgrammar prints it `capture="name"`)."""
    options: dict[str, object] = {}
    pos = begin
    text = source[:end]
    while pos < end and text[pos:end].strip():
        m = _OPTION.match(text, pos)
        if m is None:
            raise _Located("Invalid rule option: expected key or key=value", pos)
        key, raw = m.group(1), m.group(2)
        if key in options:
            raise _Located(f"Rule option {key} is given twice", m.start(1))
        if key not in RULE_OPTIONS:
            raise _Located(f"Unknown rule option {key} ({', '.join(RULE_OPTIONS)})", m.start(1))
        options[key] = _option_value(key, raw, m.start(2) if raw is not None else m.start(1), rule_name)
        pos = m.end()
    return tuple(options.items())


_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _option_value(key: str, raw: Optional[str], pos: int, rule_name: str = "") -> object:
    if key in ("max_tokens", "max_chars"):
        if raw is None or not raw.isdigit() or int(raw) > MAX_BUDGET:
            raise _Located(f"Rule option {key} takes an integer in 0..{MAX_BUDGET}", pos)
        return int(raw)
    if key in ("lazy", "unordered", "required"):  # lazy: committed-shortest matching (grammar/lazy.py);
        # unordered / required: a rule reading members in any order, a member it must see (kernels/earley.py)
        if raw is not None:
            raise _Located(f"Rule option {key} takes no value", pos)
        return True
    if key == "member":  # the member's number within its unordered rule
        if raw is None or not raw.isdigit() or int(raw) > MAX_BUDGET:
            raise _Located(f"Rule option member takes an integer in 0..{MAX_BUDGET}", pos)
        return int(raw)
    if key == "capture":  # the label get_captures reports (xg2ref/rule_options.py)
        if raw is None:
            return rule_name
        if not (raw.startswith('"') and raw.endswith('"') and len(raw) >= 2) or "\\" in raw:
            raise _Located('Rule option capture takes a string without escapes: capture="name"', pos)
        if raw == '""':
            raise _Located("The capture name must not be empty", pos)
        return raw[1:-1]
    if key == "temperature":  # kept as the float32 xgrammar keeps (printed with 9 digits)
        value = math.nan
        if raw is not None and _NUMBER.fullmatch(raw):
            try:
                value = struct.unpack("f", struct.pack("f", float(raw)))[0]
            except OverflowError:  # past the largest float32
                value = math.inf
        if not math.isfinite(value) or value < 0:
            raise _Located("Rule option temperature takes a finite number >= 0", pos)
        return value
    raise AssertionError(f"unhandled rule option {key}")
