"""XGrammar-2 §2.1 and XGrammar §2.2: the grammar IR.

A grammar is a tuple of named rules; each rule body is an expression tree built from six
node kinds (the EBNF elements of xgrammar's dialect, sections 1-4 of its documentation):

    ByteString  "abc"           a fixed run of bytes (UTF-8 of the literal); b"" is epsilon
    CharClass   [a-z] [^"]      one Unicode codepoint from a set of inclusive ranges
    RuleRef     value           a reference to another rule by name
    Sequence    a b c           juxtaposition
    Choice      a | b           alternation
    Repeat      x* x+ x? x{m,n} bounded or unbounded repetition (max None = unbounded)

Every node is a frozen, hashable dataclass, so two grammars compare equal exactly when they
have the same rules with the same trees. A rule may carry a lookahead assertion `(= ...)`:
a hint about what follows the rule. It never changes the language; the mask cache uses it.

Intrinsics are the other leaves: nodes with a language of their own that every stage asks
through one protocol (xg2ref/grammar/intrinsic.py), such as `TagDispatch` (XGrammar-2 §3.2)
and `TokenSet` (one whole *token*, `Token(...)` / `ExcludeToken(...)`), both in
xg2ref/intrinsics/. A rule may carry options (`max_tokens`, `capture`, ...)
in `Rule.options`; they never change the language.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Union

from .intrinsic import Intrinsic

MAX_CODEPOINT = 0x10FFFF


@dataclass(frozen=True, slots=True)
class ByteString:
    """A literal: the UTF-8 bytes of a quoted string. `ByteString(b"")` is epsilon."""

    value: bytes


@dataclass(frozen=True, slots=True)
class CharClass:
    """One codepoint in (or, when `negated`, outside) the union of inclusive `ranges`.

    Ranges are kept as written, so printing gives back the source class. `[^]` is
    `CharClass((), negated=True)` (any codepoint); `[]` is `CharClass(())` (nothing).
    """

    ranges: tuple[tuple[int, int], ...]
    negated: bool = False

    def codepoint_ranges(self) -> list[tuple[int, int]]:
        """The set this class matches, as sorted, merged, inclusive codepoint ranges.

        Example: CharClass(((98, 99), (97, 97)), negated=True).codepoint_ranges()
                 == [(0, 96), (100, 0x10FFFF)]
        """
        merged: list[tuple[int, int]] = []
        for lo, hi in sorted(self.ranges):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))
        if not self.negated:
            return merged
        out, nxt = [], 0
        for lo, hi in merged:
            if lo > nxt:
                out.append((nxt, lo - 1))
            nxt = max(nxt, hi + 1)
        if nxt <= MAX_CODEPOINT:
            out.append((nxt, MAX_CODEPOINT))
        return out


@dataclass(frozen=True, slots=True)
class RuleRef:
    """A reference to the rule called `name`."""

    name: str


@dataclass(frozen=True, slots=True)
class Sequence:
    """`items[0] items[1] ...` matched one after another."""

    items: tuple["Expr", ...]


@dataclass(frozen=True, slots=True)
class Choice:
    """`alternatives[0] | alternatives[1] | ...`."""

    alternatives: tuple["Expr", ...]


@dataclass(frozen=True, slots=True)
class Repeat:
    """`body{min,max}`; `max=None` is unbounded. `*` = {0,}, `+` = {1,}, `?` = {0,1}."""

    body: "Expr"
    min: int
    max: Optional[int]


Expr = Union[ByteString, CharClass, RuleRef, Sequence, Choice, Repeat, Intrinsic]
EPSILON = ByteString(b"")


@dataclass(frozen=True, slots=True)
class Rule:
    """`name[options] ::= body (= lookahead)`. `lookahead` is None when the rule has no
    assertion; `options` are (key, value) pairs in the order xgrammar 0.2.8 prints them,
    whatever order they were written in (`OPTION_ORDER`; xg2ref's own options after those, in
    source order)."""

    name: str
    body: Expr
    lookahead: Optional[Expr] = None
    options: tuple[tuple[str, object], ...] = ()

    def __post_init__(self) -> None:
        if len(self.options) > 1:
            ordered = tuple(sorted(self.options, key=lambda kv: OPTION_ORDER.get(kv[0], len(OPTION_ORDER))))
            if ordered != self.options:
                object.__setattr__(self, "options", ordered)

    def option(self, key: str, default=None):
        """The value of rule option `key` (`max_tokens`, `max_chars`, `capture`, `lazy`,
        `temperature`), or `default` when the rule does not set it."""
        return dict(self.options).get(key, default)


# The rule options that name a stop/suffix marker's two helper rules (their names in the IR;
# xgrammar's printed form writes their places, `capture_hidden_body_rule_id` / `_marker_rule_id`)
MARKER_RULE_KEYS = ("capture_hidden_body_rule", "capture_hidden_marker_rule")
# xgrammar 0.2.8's order of a rule's options (its printer's)
OPTION_ORDER = {k: i for i, k in enumerate((
    "max_tokens", "max_chars", "capture", "capture_hidden_suffix_bytes", "capture_hidden_stop_bytes",
    *MARKER_RULE_KEYS, "stop_capture", "lazy", "temperature"))}


@dataclass(frozen=True, slots=True)
class GrammarIR:
    """A whole grammar: rules in definition order and the name of the root rule."""

    rules: tuple[Rule, ...]
    root: str = "root"

    def rule(self, name: str) -> Rule:
        for r in self.rules:
            if r.name == name:
                return r
        raise KeyError(f"no rule named {name!r}")

    def rule_names(self) -> list[str]:
        return [r.name for r in self.rules]


@dataclass(frozen=True)
class SubGrammar:
    """A closed sub-grammar a front end embeds (a structural tag's JSON schema, regex or EBNF
    content), left for the compiler to link (xg2ref/linking.py): `name` is the stub rule of the
    top grammar that stands for its root, `key` identifies its source for the compiler's cache
    (None: never cached), `make()` builds its IR (raising the front end's errors)."""

    name: str
    key: Optional[tuple]
    make: Callable[[], "GrammarIR"] = field(compare=False)


def children(expr: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of `expr` (empty for leaves)."""
    if isinstance(expr, Sequence):
        return expr.items
    if isinstance(expr, Choice):
        return expr.alternatives
    if isinstance(expr, Repeat):
        return (expr.body,)
    return ()


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of `expr`, pre-order."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def referenced_rules(expr: Expr) -> list[str]:
    """Names of the rules `expr` refers to, in first-occurrence order, without repeats."""
    seen: dict[str, None] = {}
    for node in walk(expr):
        if isinstance(node, RuleRef):
            seen.setdefault(node.name, None)
        elif isinstance(node, Intrinsic):
            for name in node.rule_names():
                seen.setdefault(name, None)
    return list(seen)
