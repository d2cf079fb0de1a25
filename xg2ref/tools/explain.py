"""`xg2ref explain`: why a continuation is allowed or rejected after a prefix (XGrammar-2 §3.4).

The question is the oracle's: after the bytes P, may the bytes T (a text, or a token's bytes)
come next? A regular token is allowed iff P + T is a prefix of some sentence; a stop token iff
P is a sentence; a special token never (xgrammar's rule). The answer is read off an Earley
parse of the grammar *as the user wrote it*: normalized without inlining, so the dotted rules
carry the user's rule names, not the bodies of small rules spliced into their callers:

    ALLOWED    every byte of T has an item that scans it        |-  exit 0
    REJECTED   byte i of T has none                             |-  exit 1, with the items of
                                                                    the set before byte i and
                                                                    what each of them expected

With a vocabulary and a token id, the matcher's mask (the compiled grammar, budgets enforced as
the matcher enforces them) is asked too. Where it disagrees with the byte-level answer, the
reason is one the bytes cannot show: a special token, or a token budget (`max_tokens`) that an
alive rule occurrence has used up, listed with its deadline.

What it leaves out: the tokens of the prefix are not known (it is read as bytes), so a budget
is counted as the matcher counts `accept_string`: the prefix is one step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..compiler import REPETITION_THRESHOLD, GrammarCompiler
from ..earley import EarleyParser, ItemPrinter
from ..fsm.build import build_grammar_fsms
from ..grammar.grammar import Grammar
from ..grammar.passes import normalize
from ..grammar.repetition import compress_repetitions
from ..kernels import earley as K
from ..matcher import GrammarMatcher
from ..tokenizer_info import TokenizerInfo

ITEMS_SHOWN = 30  # items printed per set before "... N more"


@dataclass
class Explanation:
    """The verdict and the lines that justify it."""

    allowed: bool
    lines: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join(self.lines)


def user_parser(grammar: Grammar) -> EarleyParser:
    """An Earley parser over the grammar as written: the user's rules, none inlined (large
    repetitions still counted, as the compiler counts them)."""
    ir = compress_repetitions(normalize(grammar.ir, inline=False), REPETITION_THRESHOLD)
    return EarleyParser(build_grammar_fsms(ir))


def _show(data: bytes) -> str:
    return repr(bytes(data).decode("utf-8", "backslashreplace"))


def describe_set(parser: EarleyParser, printer: ItemPrinter, k: int) -> list[str]:
    """The items of set k as dotted rules, those that read bytes first (`•` marks what each
    expects next: bytes, rules, `<end>`)."""
    items = parser.items(k)
    arrays = parser.arrays
    reads = [it for it in items if arrays.byte_indptr[it.state + 1] > arrays.byte_indptr[it.state]]
    rest = [it for it in items if it not in reads]
    lines = [f"    {printer.format(it)}" for it in (reads + rest)[:ITEMS_SHOWN]]
    if len(items) > ITEMS_SHOWN:
        lines.append(f"    ... {len(items) - ITEMS_SHOWN} more items")
    return lines


def explain_bytes(grammar: Grammar, prefix: bytes, text: Optional[bytes]) -> Explanation:
    """Whether `text` may follow `prefix` (None: whether `prefix` is a sentence, the stop
    token's question), with the items that decide it."""
    parser = user_parser(grammar)
    printer = ItemPrinter(parser.fsms)
    for i, b in enumerate(prefix):
        if not parser.advance(bytes((b,))):
            out = Explanation(False, [f"the prefix itself leaves the language at byte {i}: {_show(prefix[i:i + 1])} "
                                      f"(0x{b:02X}) after {_show(prefix[:i])}",
                                      f"items alive before byte {i}:"])
            out.lines += describe_set(parser, printer, i)
            return out
    n = len(prefix)
    if text is None:
        if parser.is_completed():
            return Explanation(True, [f"a stop token is allowed: {_show(prefix)} is a complete sentence "
                                      f"(the root rule has an item at its end, begun at byte 0)"])
        out = Explanation(False, [f"a stop token is rejected: {_show(prefix)} is not a complete sentence",
                                  f"items alive after byte {n} (none of them completes the root):"])
        out.lines += describe_set(parser, printer, n)
        return out
    for i, b in enumerate(text):
        if not parser.advance(bytes((b,))):
            at = n + i
            out = Explanation(False, [f"rejected at byte {i} of the continuation (byte {at} of the input): "
                                      f"{_show(text[i:i + 1])} (0x{b:02X})",
                                      f"  read so far: {_show((prefix + text[:i])[-40:])}",
                                      "items alive before that byte, and what each expected:"])
            out.lines += describe_set(parser, printer, at)
            return out
    state = "a complete sentence" if parser.is_completed() else "a prefix of a sentence"
    out = Explanation(True, [f"allowed: {_show(prefix + text)[-60:]} is {state}", "items alive after it:"])
    out.lines += describe_set(parser, printer, n + len(text))
    return out


def explain_token(grammar: Grammar, info: TokenizerInfo, prefix: bytes, token: int) -> Explanation:
    """The verdict of token `token` after `prefix`: the byte-level reason, and the matcher's
    mask beside it (module docstring)."""
    if not 0 <= token < info.vocab_size:
        raise ValueError(f"token id {token} is outside the vocabulary [0, {info.vocab_size})")
    stop = token in set(info.stop_token_ids)
    special = token in set(info.special_token_ids) and not stop
    data = info.token_bytes(token)
    head = f"token {token} {data!r}" + (" <stop>" if stop else " <special>" if special else "")
    if special:
        return Explanation(False, [f"{head}: rejected: special tokens are never allowed (they are not text "
                                   f"the grammar can read), as in xgrammar"])
    why = explain_bytes(grammar, prefix, None if stop else data)
    matcher = GrammarMatcher(GrammarCompiler(info).compile_grammar(grammar))
    if not matcher.accept_string(prefix):
        return Explanation(False, [head + ":"] + why.lines)
    in_mask = bool(matcher.compute_bool_mask()[token])
    lines = [f"{head}: {'allowed' if in_mask else 'rejected'} by the matcher's mask"] + why.lines
    if in_mask != why.allowed:
        lines += _budget_lines(matcher)
    return Explanation(in_mask, lines)


def _budget_lines(matcher: GrammarMatcher) -> list[str]:
    """Why the mask differs from the bytes: the alive items of rules with a token budget."""
    parser = matcher.parser
    c, k = parser.chart, parser.position
    names = parser.fsms.rule_names
    budgets = parser.fsms.max_tokens
    token_index = len(matcher._history)  # the index the next token would have
    lines = ["the mask differs from the byte-level answer: a token budget decides"]
    for p in range(int(c.set_start[k]), int(c.set_start[k + 1])):
        rule = int(parser.arrays.state_rule[c.item_state[p]])
        deadline = int(c.item_deadline[p])
        if deadline != K.NO_DEADLINE:
            spent = "used up" if deadline < token_index else f"{deadline - token_index + 1} left"
            own = f"max_tokens={budgets[rule]}" if budgets and budgets[rule] >= 0 else "a budget inherited"
            lines.append(f"    {names[rule]} ({own}) begun at byte {int(c.item_origin[p])}: may read up to token "
                         f"{deadline}; the next token is {token_index}: {spent}")
    return lines
