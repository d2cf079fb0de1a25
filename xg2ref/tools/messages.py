"""The command line's messages about bytes (the `check`, `mask` and `trace` commands of
xg2ref/tools/cli.py): what was read, where the input was rejected and which bytes the grammar
expected there, read off the oracle's Earley parser (XGrammar-2 §2 semantics, specs/04)."""

from __future__ import annotations

import numpy as np

EXPECTED_SHOWN = 24  # byte ranges listed in an "expected" message
CONTEXT_BYTES = 40  # bytes of consumed input shown before a failure


def show(data: bytes) -> str:
    """Bytes as a quoted string, escapes for what is not printable UTF-8."""
    return repr(data.decode("utf-8", "backslashreplace"))


def byte_ranges(allowed: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs of True in a bool[256], as inclusive (lo, hi) pairs."""
    out, b = [], 0
    while b < 256:
        if allowed[b]:
            lo = b
            while b + 1 < 256 and allowed[b + 1]:
                b += 1
            out.append((lo, b))
        b += 1
    return out


def describe_expected(parser) -> str:
    """What may come next: byte ranges (as characters where ASCII), and the end if complete."""
    from ..fsm.fsm import format_byte_range

    ranges = byte_ranges(parser.next_bytes())
    parts = [format_byte_range(lo, hi) for lo, hi in ranges[:EXPECTED_SHOWN]]
    if len(ranges) > EXPECTED_SHOWN:
        parts.append(f"... ({len(ranges) - EXPECTED_SHOWN} more ranges)")
    if any(hi >= 0x80 for _, hi in ranges):
        parts.append("(bytes >= 0x80 start or continue a multi-byte UTF-8 character)")
    if parser.is_completed():
        parts.append("or the end of the input")
    return " ".join(parts) if parts else "nothing (no continuation exists)"


def count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def feed(parser, data: bytes) -> int:
    """Advance byte by byte; the number of bytes accepted."""
    for i, b in enumerate(data):
        if not parser.advance(bytes((b,))):
            return i
    return len(data)


def rejection(parser, data: bytes, at: int) -> str:
    """The message for a byte the grammar rejects (`parser` has read data[:at])."""
    line = data[:at].count(b"\n") + 1
    column = at - (data.rfind(b"\n", 0, at) + 1) + 1
    start = max(0, at - CONTEXT_BYTES)
    return (f"rejected at byte {at} (line {line}, column {column}): {show(data[at:at + 1])} "
            f"(0x{data[at]:02X})\n"
            f"  read so far: {'...' if start else ''}{show(data[start:at])}\n"
            f"  expected:    {describe_expected(parser)}")
