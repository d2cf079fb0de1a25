"""WGrammar (online): a regular expression translated into operators at request time, WGrammar's
"syntax priors" for formats outside the factory (WGrammar §3.1).

The pattern is read by xg2ref's regex front end (xg2ref/frontends/regex/) and its IR translated
as a template is (templates.py), a run of literal characters being one text to tokenize: literals, classes, concatenation, `|`, `*`, `+`, `?`, groups and
counted repetitions of anything but a class. Anything else is refused by name (lookarounds by the
front end, a counted class by the translator: tokens cannot count characters).

WGrammar's regexes match non-greedily (its §6): where a loop and what follows it can read the
same token, the token leaves the loop. `compile_program(..., overlaps="first")` does exactly
that: at each position an edge loses the tokens of the edges met before it in depth-first
order, where a Star's exit comes before its body and a Choice's alternatives in order. The
machine's language is then a subset of the pattern's token-level reading, so

    every token sequence the program reads decodes to a prefix of a match of the pattern, and
    a sequence at a final position decodes to a full match          (soundness; tested)

while some matches cannot be written as tokens at all (coverage: `coverage` measures the share
of given tokenizations the program takes).
"""

from __future__ import annotations

from .operators import CompiledProgram, compile_program
from .templates import Translator
from .tokensets import OperatorProgramError, TokenSets


def regex_to_operators(pattern: str, sets: TokenSets):
    """The operator program of `pattern` (module docstring); OperatorProgramError for what the
    subset leaves out."""
    from ...grammar.grammar import Grammar

    try:
        ir = Grammar.from_regex(pattern).ir
    except Exception as err:  # (the regex front end's error: a lookaround, a syntax error)
        raise OperatorProgramError(f"regex {pattern!r}: {err}") from None
    return Translator(ir, sets, merge_literals=True).rule(ir.root)


def compile_regex(pattern: str, tokenizer_info) -> CompiledProgram:
    """The online step: translate and compile with first-match resolution."""
    sets = TokenSets.for_vocabulary(tokenizer_info)
    return compile_program(regex_to_operators(pattern, sets), sets, overlaps="first")


def coverage(program: CompiledProgram, tokenizations: list) -> float:
    """The share of `tokenizations` (token id lists) the program reads to a final position."""
    from .matcher import OperatorMatcher

    if not tokenizations:
        return float("nan")
    matcher = OperatorMatcher(program, use_cache=False)
    taken = 0
    for ids in tokenizations:
        matcher.reset()
        taken += all(matcher.accept_token(t) for t in ids) and matcher.is_completed()
    return taken / len(tokenizations)
