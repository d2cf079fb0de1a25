"""Known classes of disagreement: which of an engine's answers differ from the oracle by design.

A differential run against production engines finds the same few deliberate differences over
and over (specs/05's list for xgrammar 0.2.8; `BY_DESIGN` in oracle/other_engines.py for
llguidance and outlines-core). Each rule below recognizes one of them from the question alone
(the bytes before it, the token asked about, who allowed it), so that a report can set them
apart and `--strict` does not fail on them:

    engine      class                 the token asked about ...
    xgrammar    escapes (specs/05 3)  holds a backslash and only xg2ref allows it, or holds a byte
                                      below 0x20 and only xgrammar allows it
    xgrammar    surrogates (5/8)      follows `\\u`, starts a lone surrogate (d800-dfff), xgrammar
                                      allows it
    llguidance  string_del            holds U+007F and llguidance refuses it
    outlines    string_chars          holds U+007F..U+009F, or starts with `u` after a backslash,
                                      and outlines refuses it
    outlines    exponent_sign         starts with a digit right after a number's `e`/`E`, and
                                      outlines refuses it
    outlines    whitespace            starts with JSON whitespace and outlines refuses it

An entry no rule recognizes is unclassified: a finding to look at.
"""

from __future__ import annotations

from typing import Callable, Optional

WHITESPACE = b" \t\n\r"


def _escapes(prefix: bytes, token: bytes, says: bool) -> bool:
    return (b"\\" in token and not says) or (says and any(c < 0x20 for c in token))


def _surrogates(prefix: bytes, token: bytes, says: bool) -> bool:
    return says and prefix.endswith(b"\\u") and token[:1] in (b"d", b"D") and \
        (len(token) < 2 or token[1:2] in b"89abcdefABCDEF")


def _string_del(prefix: bytes, token: bytes, says: bool) -> bool:
    return not says and b"\x7f" in token


def _string_chars(prefix: bytes, token: bytes, says: bool) -> bool:
    c1 = any(token[i] == 0xC2 and 0x80 <= token[i + 1] <= 0x9F for i in range(len(token) - 1))
    return not says and (b"\x7f" in token or c1 or (prefix.endswith(b"\\") and token[:1] == b"u"))


def _exponent_sign(prefix: bytes, token: bytes, says: bool) -> bool:
    return (not says and len(prefix) >= 2 and prefix[-1:] in (b"e", b"E") and prefix[-2:-1].isdigit()
            and token[:1].isdigit())


def _whitespace(prefix: bytes, token: bytes, says: bool) -> bool:
    return not says and token[:1] != b"" and token[0] in WHITESPACE


RULES: dict[str, list[tuple[str, Callable[[bytes, bytes, bool], bool]]]] = {
    "xgrammar": [("escapes (specs/05 difference 3)", _escapes),
                 ("lone surrogates (specs/05 difference 8)", _surrogates)],
    "llguidance": [("string_del", _string_del)],
    "outlines": [("string_chars", _string_chars), ("exponent_sign", _exponent_sign), ("whitespace", _whitespace)],
}


def classify(engine: str, prefix: bytes, token: Optional[bytes], says: Optional[bool]) -> Optional[str]:
    """The by-design class of an engine's answer `says` on `token` after `prefix`, or None."""
    if token is None or says is None:
        return None
    for name, rule in RULES.get(engine, ()):
        if rule(prefix, token, says):
            return name
    return None
