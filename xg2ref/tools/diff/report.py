"""What `xg2ref diff` finds, and how it is shown: per-case counts, reproducers, the table.

A `Disagreement` is one question two engines answer differently, kept with everything needed
to ask it again: the case, the bytes read so far, the token (or byte) asked about, each
engine's answer, and the command line that replays it (`Disagreement.replay`). The kinds:

    prefix     is prefix + byte still a prefix of a sentence?      (string verdicts)
    sentence   is prefix a whole sentence?                          (string verdicts)
    whole      does accept_bytes(string) succeed, all or nothing?   (string verdicts)
    token      is the token allowed after prefix?                   (token masks)
    accept     accept_token's answer differs from the engine's own mask
    rollback   the mask after rolling back differs from the mask first seen at that step
    captures   get_captures() after accepting prefix differs (as a multiset: the order of the
               events inside one position is a known difference, specs/03); prefix is
               shrunk (ddmin) to bytes both engines still accept with differing captures

`CaseResult` holds one case's counts; `DiffReport` the whole run, its table, its JSON form and
the exit status: 1 when xg2ref disagrees with its brute-force oracle (or a case could not
run), and with `strict` also when it disagrees with the reference engine.

What it leaves out: shrinking a disagreement further than its first occurrence on a string or
trace, and any HTML or plotting.
"""

from __future__ import annotations

import shlex
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Optional, TextIO


def _printable(data: bytes) -> Optional[str]:
    """`data` as text when it is UTF-8 without control characters, else None."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if text.isprintable() else None


def string_argument(data: bytes, flag_hex: str) -> str:
    """A shell argument for `data`: quoted text, or `flag_hex HEX` when it is not printable.

    Example: string_argument(b"a b", "--hex") == "'a b'"; string_argument(b"\\n", "--hex") == "--hex 0a"
    """
    text = _printable(data)
    if text is not None and not text.startswith("-"):
        return shlex.quote(text)
    return f"{flag_hex} {data.hex()}"


@dataclass
class Disagreement:
    """One question two engines answer differently (see the module docstring for `kind`)."""

    case: str
    kind: str
    against: str  # "oracle" or the reference engine's name
    prefix: bytes
    verdicts: dict  # engine name -> bool (None: not asked)
    token_id: Optional[int] = None
    token: Optional[bytes] = None
    note: str = ""

    def replay(self) -> str:
        """A command line that asks xg2ref the same question."""
        case = shlex.quote(self.case)
        if self.kind == "prefix":
            data = self.prefix + (self.token or b"")
            return f"xg2ref check {case} --partial {string_argument(data, '--hex')}"
        if self.kind in ("sentence", "whole"):
            return f"xg2ref check {case} {string_argument(self.prefix, '--hex')}"
        if self.kind == "captures":
            return f"xg2ref check {case} --partial --captures {string_argument(self.prefix, '--hex')}"
        prefix = string_argument(self.prefix, "--prefix-hex") if self.prefix else "''"
        if not prefix.startswith("--prefix-hex"):
            prefix = f"--prefix {prefix}"
        token = f" --token {self.token_id}" if self.token_id is not None else ""
        return f"xg2ref mask {case} {prefix}{token}"

    def describe(self) -> str:
        answers = ", ".join(f"{name}: {_verdict_word(self.kind, v)}" for name, v in self.verdicts.items())
        what = {"prefix": f"byte {self.token!r} after", "sentence": "complete sentence", "whole": "accept_bytes of",
                "token": f"token {self.token_id} {self.token!r} after", "accept": f"accept_token {self.token_id} "
                f"{self.token!r} after", "rollback": "mask after rolling back to",
                "captures": "get_captures() after"}[self.kind]
        text = f"[{self.case}] {what} {self.prefix.decode('utf-8', 'backslashreplace')!r}: {answers}"
        return text + (f" ({self.note})" if self.note else "")

    def to_json(self) -> dict:
        out = asdict(self)
        out["prefix"] = self.prefix.decode("utf-8", "backslashreplace")
        out["prefix_hex"] = self.prefix.hex()
        out["token"] = None if self.token is None else self.token.decode("utf-8", "backslashreplace")
        out["token_hex"] = None if self.token is None else self.token.hex()
        out["replay"] = self.replay()
        return out


def _verdict_word(kind: str, verdict: Optional[bool]) -> str:
    if verdict is None:
        return "-"
    if kind == "captures":  # (the engine's captures, as text)
        return str(verdict)
    if kind in ("token", "accept", "whole"):
        return "allowed" if verdict else "rejected"
    if kind == "rollback":
        return "same" if verdict else "different"
    return "yes" if verdict else "no"


@dataclass
class CaseResult:
    """Counts for one case. `*_oracle` compare xg2ref with the oracle, `*_ref` with the reference."""

    name: str
    strings: int = 0
    verdicts_oracle: int = 0
    verdict_diff_oracle: int = 0
    verdicts_ref: int = 0
    verdict_diff_ref: int = 0
    capped: int = 0  # strings longer than the oracle's cap (compared with the reference only)
    traces: int = 0
    steps: int = 0
    tokens_oracle: int = 0
    mask_diff_oracle_steps: int = 0
    mask_diff_oracle_tokens: int = 0
    mask_diff_ref_steps: int = 0
    mask_diff_ref_tokens: int = 0
    captures_compared: int = 0  # trace steps whose captures were compared with the reference's
    capture_diff_ref: int = 0
    seconds: float = 0.0
    notes: list = field(default_factory=list)
    error: str = ""
    reproducers: list = field(default_factory=list)  # Disagreement

    @property
    def oracle_failures(self) -> int:
        return self.verdict_diff_oracle + self.mask_diff_oracle_tokens + (1 if self.error else 0)

    @property
    def ref_failures(self) -> int:
        return self.verdict_diff_ref + self.mask_diff_ref_tokens + self.capture_diff_ref

    def to_json(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k != "reproducers"}
        out["reproducers"] = [d.to_json() for d in self.reproducers]
        return out


# (header, width, value) of each table column; a value of None prints "-".
_COLUMNS = (
    ("case", 15, lambda r, ref: r.name),
    ("strings", 7, lambda r, ref: r.strings),
    ("verdicts", 8, lambda r, ref: r.verdicts_oracle),
    ("!=oracle", 8, lambda r, ref: r.verdict_diff_oracle),
    ("!=ref", 5, lambda r, ref: r.verdict_diff_ref if ref else None),
    ("capped", 6, lambda r, ref: r.capped),
    ("steps", 5, lambda r, ref: r.steps),
    ("oracle-ids", 10, lambda r, ref: r.tokens_oracle),
    ("!=oracle", 8, lambda r, ref: r.mask_diff_oracle_tokens),
    ("!=ref steps", 11, lambda r, ref: r.mask_diff_ref_steps if ref else None),
    ("!=ref ids", 9, lambda r, ref: r.mask_diff_ref_tokens if ref else None),
    ("time", 7, lambda r, ref: f"{r.seconds:.1f}s"),
)


def table_header() -> str:
    first = " " * (15 + 2) + f"{'string verdicts':<{7 + 8 + 8 + 5 + 6 + 8}}" + "token masks"
    return first.rstrip() + "\n" + "  ".join(
        f"{h:<{w}}" if i == 0 else f"{h:>{w}}" for i, (h, w, _) in enumerate(_COLUMNS))


def table_row(result: CaseResult, reference: Optional[str]) -> str:
    cells = []
    for i, (_, width, value) in enumerate(_COLUMNS):
        v = value(result, reference)
        text = "-" if v is None else (f"{v:,}" if isinstance(v, int) else str(v))
        cells.append(f"{text:<{width}}" if i == 0 else f"{text:>{width}}")
    row = "  ".join(cells)
    return row + ("  ERROR" if result.error else "")


@dataclass
class DiffReport:
    """A whole `xg2ref diff` run."""

    cases: list  # CaseResult
    reference: Optional[str]  # the reference engine's name, None without one
    vocab: str
    seed: int
    options: dict
    seconds: float = 0.0
    reference_version: Optional[str] = None

    def exit_status(self, strict: bool = False) -> int:
        """1 if xg2ref disagrees with its oracle anywhere (or a case failed to run); with
        `strict`, 1 also if it disagrees with the reference engine; else 0."""
        if any(c.oracle_failures for c in self.cases):
            return 1
        if strict and any(c.ref_failures for c in self.cases):
            return 1
        return 0

    @property
    def reproducers(self) -> list:
        return [d for c in self.cases for d in c.reproducers]

    def total(self, attr: str) -> int:
        """The sum of one CaseResult count over all cases."""
        return sum(getattr(c, attr) for c in self.cases)

    def summary(self) -> str:
        total = self.total
        ref = self.reference or "reference"
        lines = [
            f"{len(self.cases)} cases, {total('strings'):,} strings ({total('verdicts_oracle'):,} verdicts vs oracle, "
            f"{total('capped'):,} capped), {total('traces'):,} traces ({total('steps'):,} steps, "
            f"{total('tokens_oracle'):,} token ids vs oracle), {self.seconds:.1f} s",
            f"xg2ref vs oracle: {total('verdict_diff_oracle'):,} verdicts, "
            f"{total('mask_diff_oracle_tokens'):,} mask ids in {total('mask_diff_oracle_steps'):,} steps",
        ]
        if self.reference:
            lines.append(f"xg2ref vs {ref}: {total('verdict_diff_ref'):,} verdicts (of {total('verdicts_ref'):,}), "
                         f"{total('mask_diff_ref_tokens'):,} mask ids in {total('mask_diff_ref_steps'):,} steps "
                         f"(full masks compared at every step)"
                         + (f", captures at {total('capture_diff_ref'):,} of {total('captures_compared'):,} steps"
                            if total('captures_compared') else ""))
        errors = [c for c in self.cases if c.error]
        if errors:
            lines.append("cases that could not run: " + ", ".join(f"{c.name} ({c.error})" for c in errors))
        return "\n".join(lines)

    def format(self, strict: bool = False, per_case: int = 2) -> str:
        """The table, notes, summary, the first reproducers of each case and the verdict."""
        lines = [table_header()] + [table_row(c, self.reference) for c in self.cases]
        notes = [f"  {c.name}: {n}" for c in self.cases for n in c.notes]
        if notes:
            lines += ["", "notes:"] + notes
        lines += ["", self.summary()]
        shown = [d for c in self.cases for d in sorted(c.reproducers, key=lambda d: d.against != "oracle")
                 [:per_case]]
        if shown:
            lines += ["", f"reproducers ({len(shown)} of {len(self.reproducers)} kept; all in --report):"]
            for d in shown:
                lines += [f"  {d.describe()}", f"    replay: {d.replay()}"]
        status = self.exit_status(strict)
        lines += ["", "FAIL: xg2ref disagrees with its oracle" if status and any(c.oracle_failures for c in self.cases)
                  else "FAIL: disagreements with the reference (--strict)" if status else "OK"]
        return "\n".join(lines)

    def to_json(self, strict: bool = False) -> dict:
        return {"reference": self.reference, "reference_version": self.reference_version, "vocab": self.vocab,
                "seed": self.seed, "options": self.options, "seconds": round(self.seconds, 3),
                "exit_status": self.exit_status(strict), "cases": [c.to_json() for c in self.cases]}


class ProgressBar:
    """A one-line progress bar on a terminal (nothing when the stream is not a terminal).

    Example: bar = ProgressBar(10); bar.update(3, "json"); bar.close()
    """

    def __init__(self, total: int, stream: Optional[TextIO] = None, width: int = 30, enabled: bool = True):
        self.total = max(total, 1)
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.enabled = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.perf_counter()
        self.done = 0

    def update(self, done: int, label: str = "") -> None:
        self.done = min(done, self.total)
        if not self.enabled:
            return
        filled = self.width * self.done // self.total
        elapsed = time.perf_counter() - self.start
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} {elapsed:5.1f}s {label}"
        self.stream.write("\r" + line[:100].ljust(100))
        self.stream.flush()

    def advance(self, label: str = "") -> None:
        self.update(self.done + 1, label)

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 100 + "\r")
            self.stream.flush()
