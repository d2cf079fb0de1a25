"""Lark's two dialects: xgrammar 0.2.8's and llguidance 1.9.1's (its docs/syntax.md).

`Grammar.from_lark(src, dialect=...)` reads a grammar in either; without `dialect` a grammar
whose first item is `%llguidance {...}` is read in llguidance's, any other in xgrammar's (as
SGLang and llama.cpp hand llguidance grammars that start with the directive). What the
llguidance dialect adds to xgrammar's reading (specs/01-ebnf.md lists where one text means two
different things):

    %llguidance {json}               options, merged over the grammar: allow_initial_skip,
                                     ignore_once (the %ignore language once, not repeated),
                                     no_forcing (no effect on the language); allow_invalid_utf8
                                     is refused; other keys are ignored, as llguidance ignores them
    "\\xHH" in string literals        the code point U+00HH (llguidance rewrites it as \\u00HH)
    T: A & B, T: ~A (terminals)      intersection and complement (converter.py `set_operation`)
    name::_ ... %if cond, r::expr    parametric rules (parametric.py)
    %regex {"substring_words": s}    the substrings of s made of whole chunks, a chunk being a
                                     run of word characters (alphanumeric or `_`), of whitespace,
                                     or of anything else (`chunk_words`)
    stop=""                          the rule ends at the end of the output (llguidance's EOS
                                     stop): allowed where nothing can follow the rule, its
                                     body read greedily, as llguidance reads it there

xgrammar's dialect refuses each of these with xgrammar's own message.
"""

from __future__ import annotations

HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
DIALECTS = ("xgrammar", "llguidance")
LLGUIDANCE_OPTIONS = ("allow_initial_skip", "ignore_once", "no_forcing", "allow_invalid_utf8")


def lark_dialect(source: str) -> str:
    """"llguidance" when the grammar's first item is `%llguidance {...}`, else "xgrammar"."""
    for line in source.splitlines():
        text = line.strip()
        if text and not text.startswith(("#", "//")):
            return "llguidance" if text.startswith("%llguidance") else "xgrammar"
    return "xgrammar"


def hex_escapes(text: str, fail) -> str:
    """`text` (a string literal) with each `\\xHH` escape written `\\u00HH`; others kept."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            if text[i + 1] == "x":
                digits = text[i + 2:i + 4]
                if len(digits) != 2 or not set(digits) <= HEX_DIGITS:
                    fail()
                out.append("\\u00" + digits)
                i += 4
                continue
            out.append(text[i:i + 2])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _chunk_kind(c: str) -> int:
    if c.isspace():
        return 0
    return 1 if c.isalnum() or c == "_" else 2


def chunk_words(text: str) -> list[str]:
    """`substring_words`' chunks: maximal runs of one kind of character (whitespace, word
    characters, others). Example: chunk_words("foo bar. baz") == ["foo", " ", "bar", ".", " ", "baz"]"""
    chunks: list[str] = []
    for c in text:
        if chunks and _chunk_kind(chunks[-1][-1]) == _chunk_kind(c):
            chunks[-1] += c
        else:
            chunks.append(c)
    return chunks


def read_options(values: list, fail) -> dict:
    """The `%llguidance` values (JSON value, line, col) merged into one dict of known options;
    `fail(message, line, col)` raises."""
    out = {key: False for key in LLGUIDANCE_OPTIONS}
    for value, line, col in values:
        if not isinstance(value, dict):
            fail("failed to parse %llguidance declaration: an object is needed", line, col)
        for key, option in value.items():
            if key not in LLGUIDANCE_OPTIONS:
                continue
            if not isinstance(option, bool):
                fail(f"failed to parse %llguidance declaration: {key} must be a boolean", line, col)
            if key == "allow_invalid_utf8" and option:
                fail("%llguidance option 'allow_invalid_utf8' is not supported (xg2ref's grammars are over "
                     "UTF-8 text)", line, col)
            out[key] = out[key] or option
    return out
