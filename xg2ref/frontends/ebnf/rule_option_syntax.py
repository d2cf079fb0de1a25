"""Rule options of xgrammar's EBNF dialect (section 1): `name[max_tokens=8, lazy] ::= ...`,
parsed into `Rule.options`. Each option at most once; kept on the rule, never part of the
language (xg2ref/rule_options.py reads them at compile time; grammar/lazy.py lowers `lazy`).

    max_tokens=N, max_chars=N   budgets (0..MAX_BUDGET)
    capture, capture="label"    what get_captures reports
    lazy                        committed-shortest matching
    temperature=F               a float32 >= 0
    unordered, member=j,        a rule reading members in any order (kernels/earley.py)
    required
    capture_hidden_suffix_bytes=N, capture_hidden_stop_bytes=N
                                the rule ends with a marker that its own capture leaves out
                                (suffix), or its own and every enclosing one (stop): the last
                                N bytes, or, with the two ids, the split into a body of rule
                                `capture_hidden_body_rule_id` then a marker of rule
                                `capture_hidden_marker_rule_id` (xgrammar's printed form of
                                Lark's `suffix=` / `stop=`; ids are rule indices in the text)
    stop_capture="label"        the marker itself, captured under `label`
"""

from __future__ import annotations

import math
import re
import struct
from typing import Optional

from ...grammar.ir import MARKER_RULE_KEYS
from ...grammar.source_error import SourceError

MAX_BUDGET = 2**31 - 1
RULE_OPTIONS = ("max_tokens", "max_chars", "capture", "lazy", "temperature", "unordered", "member", "required",
                "capture_hidden_suffix_bytes", "capture_hidden_stop_bytes", "capture_hidden_body_rule_id",
                "capture_hidden_marker_rule_id", "stop_capture")
# the options of a marker (xg2ref/rule_options.py `Markers`); in the IR the two ids are rule names,
# under MARKER_RULE_KEYS (the parser resolves them once every rule is read, the printer writes ids)
HIDDEN_BYTES = ("capture_hidden_suffix_bytes", "capture_hidden_stop_bytes")
MARKER_RULE_IDS = tuple(f"{key}_id" for key in MARKER_RULE_KEYS)

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
    if all(k in options for k in HIDDEN_BYTES):
        raise SourceError("A rule takes capture_hidden_suffix_bytes or capture_hidden_stop_bytes, not both", begin)
    if sum(k in options for k in MARKER_RULE_IDS) == 1:
        raise SourceError("capture_hidden_body_rule_id and capture_hidden_marker_rule_id go together", begin)
    if (any(k in options for k in MARKER_RULE_IDS) or "stop_capture" in options) and \
            not any(k in options for k in HIDDEN_BYTES):
        raise SourceError("capture_hidden_*_rule_id and stop_capture need capture_hidden_suffix_bytes or "
                          "capture_hidden_stop_bytes", begin)
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
    if key in HIDDEN_BYTES + MARKER_RULE_IDS:
        if raw is None or not raw.isdigit() or int(raw) > MAX_BUDGET:
            raise SourceError(f"Rule option {key} takes an integer in 0..{MAX_BUDGET}", pos)
        return int(raw)
    if key == "member":  # the member's number within its unordered rule
        if raw is None or not raw.isdigit() or int(raw) > MAX_BUDGET:
            raise SourceError(f"Rule option member takes an integer in 0..{MAX_BUDGET}", pos)
        return int(raw)
    if key in ("capture", "stop_capture"):  # the label get_captures reports (xg2ref/rule_options.py)
        if raw is None and key == "capture":
            return rule_name
        if raw is None:
            raise SourceError('Rule option stop_capture takes a string: stop_capture="name"', pos)
        if not (raw.startswith('"') and raw.endswith('"') and len(raw) >= 2) or "\\" in raw:
            raise SourceError(f'Rule option {key} takes a string without escapes: {key}="name"', pos)
        if raw == '""':
            raise SourceError("The capture name must not be empty", pos)
        return raw[1:-1]
    if key == "temperature":  # kept as the float32 xgrammar keeps (printed with 9 digits)
        if raw is None or not _NUMBER.fullmatch(raw):  # (xgrammar's lexer says this of a word)
            raise SourceError("Assign should be preceded by an identifier (rule option temperature takes a "
                              "finite number >= 0)", pos)
        try:
            value = struct.unpack("f", struct.pack("f", float(raw)))[0]
        except OverflowError:  # past the largest float32
            value = math.inf
        if not math.isfinite(value) or value < 0:
            raise SourceError("The temperature must be a finite non-negative number", pos)
        return value
    raise AssertionError(f"unhandled rule option {key}")
