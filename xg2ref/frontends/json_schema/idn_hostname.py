"""`format: idn-hostname` as one automaton over code points, for formats.py: JSON Schema 2020-12
Validation section 7.3.3 (an internationalized host name as RFC 5890 section 2.3.2.3 defines it),
with the code points of RFC 5892, their contextual rules (its Appendix A) and the Bidi rule of
RFC 5893 section 2.

A host name is labels between full stops (`.`, U+3002, U+FF0E, U+FF61: RFC 3490 section 3.1),
none empty. A label is

    an ASCII label     letters, digits and hyphens, 1 to 63 of them, no hyphen first or last,
                       and no `--` in the third and fourth places unless it starts `xn--`
                       (an A-label: RFC 5890 section 2.3.1)
    a U-label          one non-ASCII code point at least, every code point PVALID or a
                       CONTEXTJ / CONTEXTO one whose rule holds (below), lower-case ASCII only,
                       no hyphen first or last, no `--` in the third and fourth places, no
                       combining mark first (RFC 5891 section 4.2.3)

The contextual rules (RFC 5892 Appendix A), each a condition on a code point's neighbours or
on its label, so each a few bits of state:

    U+200C ZWNJ        after a virama; or after (L|D) T* and before T* (R|D), in joining types
    U+200D ZWJ         after a virama
    U+00B7 MIDDLE DOT  between two `l`
    U+0375 KERAIA      before a Greek code point
    U+05F3, U+05F4     after a Hebrew code point
    U+30FB KATAKANA MIDDLE DOT   its label has a Hiragana, Katakana or Han code point
    U+0660-0669, U+06F0-06F9     the Arabic-Indic and the extended digits not in one label

The Bidi rule (RFC 5893 section 2), in a host name where some label has an R, AL or AN code
point, holds for every label: it starts with L (a left-to-right label) or with R / AL (a
right-to-left one); a left-to-right label has only L, EN, ES, CS, ET, ON, BN, NSM and ends with
L or EN then NSMs; a right-to-left one has only R, AL, AN, EN, ES, CS, ET, ON, BN, NSM, ends with
R, AL, EN or AN then NSMs, and not both EN and AN.

Each rule is a step on a tuple of small fields (`_step`, `_end_label`); the automaton is the
reachable part of their product over the classes of code points that no rule tells apart
(`_classes`), minimized (Moore's partition refinement). What it leaves out, so lets in (specs/05,
"Formats"): an A-label's Punycode is not decoded; a U-label's A-label is bounded by counting (4
for `xn--`, 1 per code point, 1 for the `-` after the ASCII ones), not by encoding it; NFC is not
checked; nor is the whole name's length. The code point tables are the `idna` package's (IDNA2008
for its Unicode version); bidirectional classes, combining classes and marks are Python's
`unicodedata`.
"""

from __future__ import annotations

import functools
import unicodedata
from typing import Optional

import numpy as np

from ...grammar.charsets import merge_ranges

FULL_STOPS = (0x2E, 0x3002, 0xFF0E, 0xFF61)
MAX_ASCII_LABEL = 63
ZWNJ, ZWJ, MIDDLE_DOT, KERAIA, KATAKANA_MIDDLE_DOT = 0x200C, 0x200D, 0x00B7, 0x0375, 0x30FB
GERESH = (0x05F3, 0x05F4)
ARABIC_INDIC, EXTENDED_ARABIC_INDIC = range(0x0660, 0x066A), range(0x06F0, 0x06FA)
VIRAMA = 9  # its canonical combining class
LTR_CLASSES = {"L", "EN", "ES", "CS", "ET", "ON", "BN", "NSM"}
RTL_CLASSES = {"R", "AL", "AN", "EN", "ES", "CS", "ET", "ON", "BN", "NSM"}


def _decoded(encoded) -> list:
    """The `idna` package's ranges (start << 32 | end, end exclusive) as inclusive pairs."""
    return [(x >> 32, (x & 0xFFFFFFFF) - 1) for x in encoded]


def _within(ranges: list):
    points = set()
    for lo, hi in ranges:
        points.update(range(lo, hi + 1))
    return points


@functools.lru_cache(maxsize=1)
def _classes() -> dict:
    """{signature: ranges}: the code points a host name may hold, grouped by everything a rule
    reads of them (ASCII kind, special code point, script, virama, joining type, bidi class)."""
    from idna import idnadata

    allowed = _decoded(idnadata.codepoint_classes["PVALID"]) + _decoded(idnadata.codepoint_classes["CONTEXTJ"])
    allowed += _decoded(idnadata.codepoint_classes["CONTEXTO"])
    scripts = {name: _within(_decoded(idnadata.scripts[name])) for name in ("Greek", "Hebrew")}
    japanese = _within([r for name in ("Hiragana", "Katakana", "Han") for r in _decoded(idnadata.scripts[name])])
    joining = {}
    for kind, encoded in idnadata.joining_types.items():
        for lo, hi in _decoded(encoded):
            joining.update((c, kind) for c in range(lo, hi + 1))
    by_signature: dict = {}
    points = sorted({c for lo, hi in allowed for c in range(lo, hi + 1) if c >= 0x80}
                    | set(range(0x30, 0x3A)) | set(range(0x41, 0x5B)) | set(range(0x61, 0x7B)) | {0x2D}
                    | set(FULL_STOPS))
    for c in points:
        signature = _signature(c, scripts, japanese, joining)
        ranges = by_signature.setdefault(signature, [])
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1] = (ranges[-1][0], c)
        else:
            ranges.append((c, c))
    return by_signature


def _signature(c: int, scripts: dict, japanese: set, joining: dict) -> tuple:
    """(kind, special, greek, hebrew, japanese, virama, joining type, bidi class, mark)."""
    if c in FULL_STOPS:
        return ("stop",)
    ch = chr(c)
    kind = ("hyphen" if c == 0x2D else "digit" if 0x30 <= c <= 0x39 else "upper" if 0x41 <= c <= 0x5A
            else "lower" if c < 0x80 else "other")
    special = ("zwnj" if c == ZWNJ else "zwj" if c == ZWJ else "middle dot" if c == MIDDLE_DOT
               else "keraia" if c == KERAIA else "geresh" if c in GERESH else "katakana dot" if c == KATAKANA_MIDDLE_DOT
               else "arabic digit" if c in ARABIC_INDIC else "extended digit" if c in EXTENDED_ARABIC_INDIC
               else "l" if c == 0x6C else "x" if c in (0x58, 0x78) else "n" if c in (0x4E, 0x6E) else "")
    return (kind, special, c in scripts["Greek"], c in scripts["Hebrew"], c in japanese and c != KATAKANA_MIDDLE_DOT,
            unicodedata.combining(ch) == VIRAMA, joining.get(c, "U"), unicodedata.bidirectional(ch),
            unicodedata.category(ch).startswith("M"))


# ---- the rules as steps on a state ---------------------------------------------------------------
#
# A state is a tuple: the domain's (seen_rtl, all_ok) and the label's fields below. `_step`
# reads one code point of a label (None: no way on); `_end_label` closes a label at a full stop
# or at the end.

_LABEL = dict(pos=0, upper=False, other=False, hyphen=False, third=False, xn=0, a_label=False,
              after_l=False, after_virama=False, after_hebrew=False, need_l=False, need_greek=False,
              katakana_dot=False, japanese=False, arabic=False, extended=False, left_joins=False,
              joiner_open=False, bidi="start", rtl_label=False)
_FIELDS = tuple(_LABEL)
_START = (False, True) + tuple(_LABEL.values())


def _step(state: tuple, sig: tuple, rules: bool) -> Optional[tuple]:
    seen_rtl, all_ok = state[:2]
    s = dict(zip(_FIELDS, state[2:]))
    kind, special, greek, hebrew, japanese, virama, joins, bidi, mark = sig
    # the label's shape: no hyphen or mark first, at most 63 code points, ASCII upper case only
    # in an ASCII label, `--` in the third and fourth places only after `xn`
    if s["pos"] == 0 and (kind == "hyphen" or mark):
        return None
    if s["pos"] > MAX_ASCII_LABEL or (kind == "other" and (s["upper"] or s["a_label"])):
        return None
    s["pos"] = s["pos"] + 1 if s["pos"] < 5 or kind != "other" and not s["other"] else 5  # (only ASCII counted)
    if s["pos"] > MAX_ASCII_LABEL:
        return None
    if kind == "upper":
        if s["other"]:
            return None
        s["upper"] = True
    s["other"] |= kind == "other"
    if s["pos"] == 1:
        s["xn"] = 1 if special == "x" else -1
    elif s["pos"] == 2:
        s["xn"] = 2 if s["xn"] == 1 and special == "n" else -1
    elif s["pos"] == 3:
        s["third"] = kind == "hyphen"
    if s["pos"] == 4 and kind == "hyphen" and s["third"]:
        if s["xn"] != 2 or s["other"]:
            return None
        s["a_label"] = True
    if s["pos"] > 4:  # (the prefix is read: forgotten, so that states meet again)
        s["xn"], s["third"] = 0, False
    s["hyphen"] = kind == "hyphen"
    if not rules:
        return (seen_rtl, all_ok) + tuple(s[f] for f in _FIELDS)
    # contextual rules (RFC 5892 Appendix A)
    if (s["need_l"] and special != "l") or (s["need_greek"] and not greek):
        return None
    s["need_l"] = s["need_greek"] = False
    if special == "middle dot":
        if not s["after_l"]:
            return None
        s["need_l"] = True
    elif special == "keraia":
        s["need_greek"] = True
    elif special == "geresh" and not s["after_hebrew"]:
        return None
    elif special == "zwj" and not s["after_virama"]:
        return None
    s["katakana_dot"] |= special == "katakana dot"
    s["japanese"] |= japanese
    s["arabic"] |= special == "arabic digit"
    s["extended"] |= special == "extended digit"
    if s["arabic"] and s["extended"]:
        return None
    if s["joiner_open"]:  # a ZWNJ before waits for T* (R|D)
        if joins in ("R", "D"):
            s["joiner_open"] = False
        elif joins != "T":
            return None
    if special == "zwnj" and not s["after_virama"]:
        if not s["left_joins"]:
            return None
        s["joiner_open"] = True
    if joins != "T":
        s["left_joins"] = joins in ("L", "D")
    s["after_l"], s["after_virama"], s["after_hebrew"] = special == "l", virama, hebrew
    # the Bidi rule's reading of the label (RFC 5893 section 2)
    s["rtl_label"] |= bidi in ("R", "AL", "AN")
    s["bidi"] = _bidi_step(s["bidi"], bidi)
    if seen_rtl and s["bidi"] == "bad":
        return None
    return (seen_rtl, all_ok) + tuple(s[f] for f in _FIELDS)


def _bidi_step(state: str, bidi: str) -> str:
    """States: start, bad, ltr+ / ltr- (ends well or not), rtl+ / rtl- with `e` (EN seen) and
    `a` (AN seen) appended; NSM keeps the ending as it was."""
    if state == "bad":
        return state
    if state == "start":
        return "ltr+" if bidi == "L" else "rtl+" if bidi in ("R", "AL") else "bad"
    direction, rest = state[:3], state[4:]
    if bidi not in (LTR_CLASSES if direction == "ltr" else RTL_CLASSES):
        return "bad"
    if bidi == "NSM":
        return state
    if direction == "ltr":
        return "ltr+" if bidi in ("L", "EN") else "ltr-"
    rest = "".join(sorted(set(rest + ("e" if bidi == "EN" else "a" if bidi == "AN" else ""))))
    if rest == "ae":
        return "bad"
    return ("rtl+" if bidi in ("R", "AL", "EN", "AN") else "rtl-") + rest


def _end_label(state: tuple) -> Optional[tuple]:
    seen_rtl, all_ok = state[:2]
    s = dict(zip(_FIELDS, state[2:]))
    if s["pos"] == 0 or s["hyphen"] or s["need_l"] or s["need_greek"] or s["joiner_open"]:
        return None  # (without the rules these fields stay as they start)
    if s["katakana_dot"] and not s["japanese"]:
        return None
    seen_rtl, all_ok = seen_rtl or s["rtl_label"], all_ok and s["bidi"][:4] in ("ltr+", "rtl+")
    if seen_rtl and not all_ok:
        return None
    return (seen_rtl, all_ok) + _START[2:]


# ---- the automaton ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=2)
def idn_hostname_automaton(rules: bool = True) -> tuple:
    """`(edges, finals)` over code points (regular.py's form): state 0 starts; each edge holds
    the ranges of one letter (classes every state treats alike). Without `rules`, the
    contextual rules and the Bidi rule are left out (their code points taken anywhere)."""
    classes = _classes()
    signatures = list(classes)
    index, order, moves = {_START: 0}, [_START], []
    k = 0
    while k < len(order):
        state = order[k]
        row = {}
        for sig in signatures:
            nxt = _end_label(state) if sig == ("stop",) else _step(state, sig, rules)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = len(order)
                    order.append(nxt)
                row[sig] = index[nxt]
        moves.append(row)
        k += 1
    finals = {q for q, state in enumerate(order) if _end_label(state) is not None}
    blocks = _minimal_blocks(moves, finals, signatures)
    return _edges(moves, finals, blocks, classes)


def _minimal_blocks(moves: list, finals: set, signatures: list) -> list:
    """Moore's refinement: the block of each state in the minimal automaton (state 0's is 0).
    Each round splits the blocks by (block, the blocks each letter leads to); a missing move
    leads to an extra dead state."""
    n = len(moves)
    delta = np.full((n + 1, len(signatures)), n, dtype=np.int64)
    for q, row in enumerate(moves):
        for j, sig in enumerate(signatures):
            if sig in row:
                delta[q, j] = row[sig]
    block = np.array([int(q in finals) + 1 for q in range(n)] + [0], dtype=np.int64)
    count = len(np.unique(block))
    while True:
        keys = np.concatenate([block[:, None], block[delta]], axis=1)
        _, refined = np.unique(keys, axis=0, return_inverse=True)
        refined = refined.reshape(-1)
        if len(np.unique(refined)) == count:
            break
        block, count = refined, len(np.unique(refined))
    # renumber: the dead state's block dropped, state 0's block first
    order = {}
    for b in [block[0]] + [b for b in block[:n] if b != block[n]]:
        order.setdefault(int(b), len(order))
    return [order.get(int(b), -1) for b in block[:n]]


def _edges(moves: list, finals: set, blocks: list, classes: dict) -> tuple:
    """The minimal automaton, one edge per letter: the code point classes that every state
    sends to the same block are one letter (so a grammar refers to a few shared classes,
    regular.bounded_length)."""
    count = max(blocks) + 1
    first = {}
    for q, b in enumerate(blocks):
        if b >= 0:  # (-1: states that never reach an end, left out)
            first.setdefault(b, q)
    columns: dict = {}
    for sig in classes:
        column = tuple(blocks[moves[q][sig]] if sig in moves[q] else -1 for b, q in sorted(first.items()))
        columns.setdefault(column, []).extend(classes[sig])
    letters = [(tuple(merge_ranges(r)), column) for column, r in columns.items()]
    edges = [[(ranges, column[b]) for ranges, column in letters if column[b] >= 0] for b in range(count)]
    return edges, {blocks[q] for q in finals}
