"""Rule options of xgrammar's EBNF dialect (section 1): `name[max_tokens=8, lazy] ::= ...`,
parsed into `Rule.options`. Each option at most once; kept on the rule, never part of the
language (xg2ref/rule_options.py reads them at compile time; grammar/lazy.py lowers `lazy`).

    max_tokens=N, max_chars=N   budgets (0..MAX_BUDGET)
    capture, capture="label"    what get_captures reports
    lazy                        committed-shortest matching
    temperature=F               a float32 >= 0
    unordered, member=j,        a rule reading members in any order (kernels/earley.py)
    required
"""

from __future__ import annotations

import math
import re
import struct
from typing import Optional

from ...grammar.source_error import SourceError

MAX_BUDGET = 2**31 - 1
RULE_OPTIONS = ("max_tokens", "max_chars", "capture", "lazy", "temperature", "unordered", "member", "required")

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
            raise SourceError("Invalid rule option: expected key or key=value", pos)
        key, raw = m.group(1), m.group(2)
        if key in options:
            raise SourceError(f"Rule option {key} is given twice", m.start(1))
        if key not in RULE_OPTIONS:
            raise SourceError(f"Unknown rule option {key} ({', '.join(RULE_OPTIONS)})", m.start(1))
        options[key] = _option_value(key, raw, m.start(2) if raw is not None else m.start(1), rule_name)
        pos = m.end()
    return tuple(options.items())


_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _option_value(key: str, raw: Optional[str], pos: int, rule_name: str = "") -> object:
    if key in ("max_tokens", "max_chars"):
        if raw is None or not raw.isdigit() or int(raw) > MAX_BUDGET:
            raise SourceError(f"Rule option {key} takes an integer in 0..{MAX_BUDGET}", pos)
        return int(raw)
    if key in ("lazy", "unordered", "required"):  # lazy: committed-shortest matching (grammar/lazy.py);
        # unordered / required: a rule reading members in any order, a member it must see (kernels/earley.py)
        if raw is not None:
            raise SourceError(f"Rule option {key} takes no value", pos)
        return True
    if key == "member":  # the member's number within its unordered rule
        if raw is None or not raw.isdigit() or int(raw) > MAX_BUDGET:
            raise SourceError(f"Rule option member takes an integer in 0..{MAX_BUDGET}", pos)
        return int(raw)
    if key == "capture":  # the label get_captures reports (xg2ref/rule_options.py)
        if raw is None:
            return rule_name
        if not (raw.startswith('"') and raw.endswith('"') and len(raw) >= 2) or "\\" in raw:
            raise SourceError('Rule option capture takes a string without escapes: capture="name"', pos)
        if raw == '""':
            raise SourceError("The capture name must not be empty", pos)
        return raw[1:-1]
    if key == "temperature":  # kept as the float32 xgrammar keeps (printed with 9 digits)
        value = math.nan
        if raw is not None and _NUMBER.fullmatch(raw):
            try:
                value = struct.unpack("f", struct.pack("f", float(raw)))[0]
            except OverflowError:  # past the largest float32
                value = math.inf
        if not math.isfinite(value) or value < 0:
            raise SourceError("Rule option temperature takes a finite number >= 0", pos)
        return value
    raise AssertionError(f"unhandled rule option {key}")
