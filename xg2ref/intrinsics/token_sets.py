"""Token-level intrinsics: `Token(id, ...)`, `ExcludeToken(id, ...)` and `TokenTagDispatch`.

A `TokenSet` is a leaf of the grammar that reads one whole token: one whose id is listed
(`Token`) or not listed (`ExcludeToken`). It never matches bytes (`accept_string` cannot spell
one); only `accept_token` of a regular token does (stop and special tokens never match). In a
rule's FSM it is one edge labelled with a token symbol (xg2ref/fsm/fsm.py `TOKEN_SYMBOL_BASE`),
which the Earley kernels read against the token being accepted (kernels/token_reads.py).

TokenTagDispatch is TagDispatch (XGrammar-2 §3.2) one level up, over whole tokens: free text is
any token that is neither a trigger nor an exclude, a trigger token dispatches to its rule, then
free text again (loop) or the end. It is a macro over TokenSet nodes:

    loop:     ( ExcludeToken(T ∪ E) | Token(t1) r1 | ... | Token(tn) rn )*
    no loop:  ExcludeToken(T ∪ E)* ( Token(t1) r1 | ... | Token(tn) rn )?

The oracle reads a token set from `marks`, the tokens of the input read as tokens (position ->
(token id, length); oracle/recognizer.py):

    TOKEN   marks[i] = (t, k), t in the set          ⊢ i+k in reach(T, i)
            marks[i] = (t, k), t in the set, i+k = n ⊢ pre(T, i)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Callable

import numpy as np

from ..bitmask import pack_bool_mask
from ..grammar.intrinsic import Call, Intrinsic, Macro, Value, register
from ..grammar.ir import Choice, Expr, Repeat, RuleRef, Sequence

INF = float("inf")


@dataclass(frozen=True, slots=True)
class TokenSet(Intrinsic):
    """One whole token read atomically: its id is in `ids` (or, when `exclude`, not in `ids`).

    Only tokens that are neither stop tokens nor special ever match, and only as a whole
    token accepted by `accept_token`; bytes (`accept_string`) never match a TokenSet.

    Example: TokenSet((128010,)) is `Token(128010)`; TokenSet((2, 3), exclude=True) is
             `ExcludeToken(2, 3)`
    """

    ids: tuple
    exclude: bool = False
    ebnf_name = "Token"
    level = "token"

    @property
    def title(self) -> str:
        return "Token / ExcludeToken"

    def matches(self, token_id: int) -> bool:
        """Whether token `token_id` is in this set (before the stop/special filter)."""
        return (token_id in self.ids) != self.exclude

    @classmethod
    def from_call(cls, call: Call) -> "TokenSet":
        """`Token(id, ...)`: one whole token whose id is listed."""
        call.no_named()
        return cls(token_ids(call, call.positional, "its arguments"))

    def to_ebnf(self, literal: Callable[[bytes], str]) -> str:
        if self.exclude and not self.ids:
            # any regular token: the dialect has no empty ExcludeToken(); this call reads
            # `ExcludeToken()*`, the same language once under the enclosing repetition
            return "TokenTagDispatch(loop_after_dispatch=false)"
        return ("ExcludeToken(" if self.exclude else "Token(") + ", ".join(map(str, self.ids)) + ")"

    def key(self) -> tuple:
        return (self.ids, self.exclude)

    def nullable(self, nullable: AbstractSet[str]) -> bool:
        return False  # one token

    def productive(self, productive: AbstractSet[str]) -> bool:
        return True  # as in xgrammar, a set with no regular token still counts as one

    def fragment(self, nfa, src: int) -> int:
        dst = nfa.new_state()
        nfa.token_edge(src, self, dst)
        return dst

    def oracle_reach(self, reader, i: int) -> set:
        mark = reader.marks.get(i)
        return {i + mark[1]} if mark is not None and self.matches(mark[0]) else set()

    def oracle_pre(self, reader, i: int) -> bool:
        mark = reader.marks.get(i)
        return mark is not None and self.matches(mark[0]) and i + mark[1] == len(reader.data)

    def shortest(self, shortest_rule: Callable[[str], tuple]) -> tuple:
        return (INF, INF)  # sentences are byte strings: a token set never appears in one

    def sample(self, rng, depth: int, usable, sample_rule, out: bytearray) -> None:
        raise AssertionError("no byte sentence holds a token set")


@register
class ExcludeToken(Macro):
    """`ExcludeToken(id, ...)`: one whole token whose id is not listed."""

    ebnf_name = "ExcludeToken"

    @classmethod
    def from_call(cls, call: Call) -> TokenSet:
        call.no_named()
        return TokenSet(token_ids(call, call.positional, "its arguments"), exclude=True)


@register
class TokenTagDispatch(Macro):
    """`TokenTagDispatch((id, rule), ..., loop_after_dispatch=true, excludes=(id, ...))`."""

    ebnf_name = "TokenTagDispatch"

    @classmethod
    def from_call(cls, call: Call) -> Expr:
        tags: list = []
        for value in call.positional:
            items = value.value if value.kind == "tuple" else None
            if not items or len(items) != 2 or items[0].kind != "integer" or items[1].kind != "rule name":
                raise call.fail("each positional argument is a pair (token_id, rule_name)", value)
            tags.append((items[0].value, call.refer(items[1])))
        call.only_named("loop_after_dispatch", "excludes")
        loop = call.boolean("loop_after_dispatch", True)
        excludes_value = call.named.get("excludes", Value("tuple", [], -1))
        if excludes_value.kind != "tuple" or any(v.kind != "integer" for v in excludes_value.value):
            raise call.fail("excludes must be a tuple of token ids", excludes_value)
        triggers = [t for t, _ in tags]
        for v in excludes_value.value:
            if v.value in triggers:
                raise call.fail(f"token {v.value} is both a trigger and an exclude", v)
        return token_dispatch_expr(tags, loop, [v.value for v in excludes_value.value])


register(TokenSet)


def token_ids(call: Call, values: list, what: str) -> tuple:
    """The distinct ids of integer arguments, in order (at least one)."""
    if not values:
        raise call.fail(f"{call.name} takes one or more token ids")
    ids: dict = {}
    for v in values:
        if v.kind != "integer":
            raise call.fail(f"{what} must be non-negative integers (token ids)", v)
        ids.setdefault(v.value, None)
    return tuple(ids)


def token_dispatch_expr(tags: list, loop: bool, excludes: list) -> Expr:
    """The TokenSet expression of a TokenTagDispatch (see the module docstring)."""
    free = TokenSet(tuple(dict.fromkeys([t for t, _ in tags] + list(excludes))), exclude=True)
    dispatch = [Sequence((TokenSet((t,)), RuleRef(rule))) for t, rule in tags]
    if loop:
        return Repeat(Choice((free, *dispatch)), 0, None)
    body: Expr = Repeat(free, 0, None)
    if dispatch:
        body = Sequence((body, Repeat(dispatch[0] if len(dispatch) == 1 else Choice(tuple(dispatch)), 0, 1)))
    return body


def token_set_tables(token_sets, vocab, is_stop: np.ndarray, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """member[g, t]: regular token t is in token set g; words[g]: the same as bitmask rows.
    Regular = non-empty bytes, neither special nor a stop token (of this matcher)."""
    words = (vocab_size + 31) // 32
    if not token_sets:
        return np.zeros((0, vocab_size), np.bool_), np.zeros((0, words), np.int32)
    regular = np.zeros(vocab_size, np.bool_)
    n = len(vocab.token_offsets) - 1
    regular[:n] = (np.diff(vocab.token_offsets) > 0) & ~vocab.is_special[:n]
    regular &= ~is_stop
    member = np.zeros((len(token_sets), vocab_size), np.bool_)
    for g, ts in enumerate(token_sets):
        ids = np.array([t for t in ts.ids if 0 <= t < vocab_size], dtype=np.int64)
        member[g, ids] = True
        if ts.exclude:
            member[g] = ~member[g]
        member[g] &= regular
    out = np.zeros((len(token_sets), words), np.int32)
    for g in range(len(token_sets)):
        pack_bool_mask(member[g], out[g])
    return member, out
