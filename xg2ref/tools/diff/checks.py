"""One case of `xg2ref diff`: string verdicts and token traces (the method is in xg2ref/tools/diff/runner.py).

`CaseRun` compiles one grammar in the engine under test ("have"), the reference engine
("ref", optional) and the brute-force oracle, then asks all of them the same questions and
counts the answers that differ into a `CaseResult`. The oracle is the judge: a difference
between have and ref is always put to the oracle too (when the input is short enough for it),
so a bug that both engines share is found by the random samples and a bug in either one by
the adjudication.

What it leaves out: the reference's own disagreements with the oracle are reported in the
reproducers but not counted (xg2ref is the engine under test).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from .report import CaseResult, Disagreement, ProgressBar
from ...oracle.engines import Engine, OracleMatcher
from ...oracle.recognizer import MAX_INPUT_BYTES
from ...oracle.strategies import mutate, sentences
from ..fuzz.shrink import shrink_bytes
from ...suite import Case, compile_case
from ...tokenizer_info import TokenizerInfo

# Ids where have and ref differ that the oracle judges per step (a random subset beyond this).
MAX_ADJUDICATED_IDS = 64
# Random cut points per string at which the oracle answers "a whole sentence?".
SENTENCE_CUTS = 2
# Attempts at drawing a UTF-8 sentence for a trace.
DRAW_ATTEMPTS = 8
# Seconds a captures disagreement is shrunk for.
SHRINK_SECONDS = 5.0

Encoder = Callable[[bytes], Optional[list]]


@dataclass(frozen=True)
class DiffOptions:
    """How much each case is exercised (defaults: `make run`, a few minutes on 2 cores)."""

    n_strings: int = 8  # sentences() draws per case, besides the samples; each is also mutated
    n_traces: int = 3  # token traces per case (samples first, then sentences() draws)
    max_trace_tokens: int = 24
    n_steered: int = 1  # traces that follow the reference engine's own mask (with a reference)
    oracle_sample: int = 8  # random allowed and as many random rejected ids per trace step
    max_oracle_bytes: int = 128  # longest string or prefix the oracle judges beyond adjudication
    max_reproducers: int = 5  # kept per case and per engine compared


@dataclass
class Context:
    """What every case of one run shares."""

    info: TokenizerInfo
    engine: Engine
    reference: Optional[Engine]
    encoder: Encoder
    options: DiffOptions
    seed: int


def quicktok_encoder(name: str) -> Encoder:
    """Bytes -> token ids with quicktok's encoding `name` (None for text that is not UTF-8)."""
    import quicktok

    enc = quicktok.get_encoding(name)

    def encode(data: bytes) -> Optional[list]:
        try:
            return list(enc.encode_ordinary(data.decode("utf-8")))
        except UnicodeDecodeError:
            return None

    return encode


def greedy_encoder(info: TokenizerInfo) -> Encoder:
    """Bytes -> token ids by greedy longest match over the regular tokens (None: no cover).

    Example: with tokens [b"a", b"ab", b"b"], greedy_encoder(info)(b"abb") == [1, 2]
    """
    excluded = set(info.stop_token_ids) | set(info.special_token_ids)
    ids = {tok: t for t, tok in enumerate(info.decoded_vocab) if tok and t not in excluded}
    longest = max(map(len, ids), default=0)

    def encode(data: bytes) -> Optional[list]:
        out, i = [], 0
        while i < len(data):
            for size in range(min(longest, len(data) - i), 0, -1):
                t = ids.get(data[i:i + size])
                if t is not None:
                    out.append(t)
                    i += size
                    break
            else:
                return None
        return out

    return encode


def _walk(matcher, data: bytes) -> tuple[int, list]:
    """Feed `data` byte by byte: (longest accepted prefix length, is_completed after each)."""
    matcher.reset()
    completed = [matcher.is_completed()]
    for b in data:
        if not matcher.accept_bytes(bytes((b,))):
            break
        completed.append(matcher.is_completed())
    return len(completed) - 1, completed


def _whole(matcher, data: bytes) -> tuple[bool, Optional[bool]]:
    """accept_bytes(data) in one call: (accepted, is_completed after it or None)."""
    matcher.reset()
    accepted = matcher.accept_bytes(data)
    return accepted, (matcher.is_completed() if accepted else None)


class CaseRun:
    """The checks of one case; `run()` returns its `CaseResult`."""

    def __init__(self, case: Case, ctx: Context, rng: random.Random, progress: Optional[ProgressBar] = None):
        self.case, self.ctx, self.rng, self.opts = case, ctx, rng, ctx.options
        self.progress = progress
        self.result = CaseResult(case.name)
        self.result.notes.extend([case.note] if case.note else [])
        self.ir = case.grammar().ir
        self.have = compile_case(ctx.engine, case)
        self.ref = None
        self.ref_name = getattr(ctx.reference, "name", "reference")
        if ctx.reference is not None:
            try:
                self.ref = compile_case(ctx.reference, case)
            except Exception as err:
                self.result.notes.append(f"{self.ref_name} cannot compile it: {err}".splitlines()[0])
        self.oracle = OracleMatcher(self.ir, ctx.info)
        self.rec = self.oracle.recognizer
        self.vocab = ctx.info.decoded_vocab
        self.stops = list(ctx.info.stop_token_ids)
        self.specials = list(ctx.info.special_token_ids)
        self.never = np.zeros(ctx.info.vocab_size, dtype=np.bool_)
        self.never[self.stops + self.specials] = True
        self.kept = {"oracle": 0, self.ref_name: 0}
        # captures compared at each trace step: the grammar captures (a rule's own or a marker's) and
        # both engines report them
        self.captured = (hasattr(self.have, "captures") and hasattr(self.ref, "captures")
                         and any(k in ("capture", "stop_capture") for r in self.ir.rules for k, _ in r.options))
        self._tick("compiled")

    def _tick(self, label: str) -> None:
        if self.progress is not None:
            self.progress.advance(f"{self.case.name}: {label}")

    def keep(self, d: Disagreement) -> None:
        if self.kept.get(d.against, 0) < self.opts.max_reproducers:
            self.kept[d.against] = self.kept.get(d.against, 0) + 1
            self.result.reproducers.append(d)

    def run(self) -> CaseResult:
        for s in self.strings():
            self.check_string(s)
        self._tick("strings")
        for i in range(self.opts.n_traces):
            self.trace(self.trace_sentence(i))
            self._tick(f"trace {i + 1}")
        for _ in range(self.opts.n_steered if self.ref is not None else 0):
            self.steered_trace()
        if self.result.capped:
            self.result.notes.append(f"{self.result.capped} strings longer than {self.opts.max_oracle_bytes} bytes: "
                                     "verdicts compared with the reference only")
        return self.result

    # ---- string verdicts --------------------------------------------------------------------

    def strings(self) -> list:
        samples = [s.encode("utf-8") for s in self.case.samples]
        drawn = [sentences(self.ir, self.rng) for _ in range(self.opts.n_strings)]
        base = samples + [s for s in drawn if s is not None]
        alphabet = bytes(sorted(set(b"".join(samples)))) or b"abc"
        mutants = [mutate(s, self.rng, alphabet) for s in base]
        return list(dict.fromkeys(base + mutants))

    def check_string(self, s: bytes) -> None:
        r = self.result
        r.strings += 1
        h_len, h_comp = _walk(self.have, s)
        h_whole = _whole(self.have, s)
        judged: dict = {}  # (kind, k) -> the oracle's verdict, once asked and compared
        if len(s) <= self.opts.max_oracle_bytes:
            self.versus_oracle(s, h_len, h_comp, h_whole, judged)
        else:
            r.capped += 1
        if self.ref is not None:
            self.versus_ref(s, h_len, h_comp, h_whole, judged)

    def viable_length(self, s: bytes) -> int:
        """The longest k with s[:k] a prefix of a sentence (-1: the language is empty)."""
        if self.rec.is_prefix(s):
            return len(s)
        if not self.rec.is_prefix(b""):
            return -1
        lo, hi = 0, len(s) - 1  # s[:lo] is viable; the answer is in [lo, hi]
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.rec.is_prefix(s[:mid]):
                lo = mid
            else:
                hi = mid - 1
        return lo

    def versus_oracle(self, s: bytes, h_len: int, h_comp: list, h_whole: tuple, judged: dict) -> None:
        r = self.result
        o_len = self.viable_length(s)
        r.verdicts_oracle += len(s) + 1
        for k in range(len(s) + 1):
            judged[("prefix", k)] = k <= o_len
        if h_len != o_len:
            r.verdict_diff_oracle += abs(h_len - o_len)
            m = max(min(h_len, o_len), 0)
            self.keep(Disagreement(self.case.name, "prefix", "oracle", s[:m], {"xg2ref": h_len > m, "oracle": o_len > m},
                                   token=s[m:m + 1]))
        common = min(h_len, o_len)
        cuts = {common, *self.rng.sample(range(common + 1), min(SENTENCE_CUTS, common + 1))} if common >= 0 else set()
        for k in sorted(cuts, reverse=True):  # the longest first: its table is the one kept
            want = self.rec.is_sentence(s[:k])
            judged[("sentence", k)] = want
            r.verdicts_oracle += 1
            if h_comp[k] != want:
                r.verdict_diff_oracle += 1
                self.keep(Disagreement(self.case.name, "sentence", "oracle", s[:k], {"xg2ref": h_comp[k], "oracle": want}))
        r.verdicts_oracle += 1
        if h_whole[0] != (o_len == len(s)):
            r.verdict_diff_oracle += 1
            self.keep(Disagreement(self.case.name, "whole", "oracle", s, {"xg2ref": h_whole[0], "oracle": o_len == len(s)}))

    def oracle_says(self, kind: str, s: bytes, n: int, have: bool, judged: dict) -> Optional[bool]:
        """The oracle's verdict on s[:n], a question have and ref answer differently: "prefix"
        (is s[:n] viable) or "sentence" (is it complete). `judged` holds the verdicts compared
        before, keyed (kind, n); one not compared before that goes against have counts as an
        oracle disagreement."""
        if (kind, n) in judged:
            return judged[(kind, n)]
        if n > MAX_INPUT_BYTES:
            return None
        data = s[:n]
        want = self.rec.is_prefix(data) if kind == "prefix" else self.rec.is_sentence(data)
        judged[(kind, n)] = want
        if want != have:
            self.result.verdict_diff_oracle += 1
            if kind == "prefix":
                self.keep(Disagreement(self.case.name, kind, "oracle", s[:n - 1], {"xg2ref": have, "oracle": want},
                                       token=s[n - 1:n]))
            else:
                self.keep(Disagreement(self.case.name, kind, "oracle", data, {"xg2ref": have, "oracle": want}))
        return want

    def versus_ref(self, s: bytes, h_len: int, h_comp: list, h_whole: tuple, judged: dict) -> None:
        r, name = self.result, self.ref_name
        x_len, x_comp = _walk(self.ref, s)
        x_whole = _whole(self.ref, s)
        r.verdicts_ref += len(s) + 1
        if h_len != x_len:
            r.verdict_diff_ref += abs(h_len - x_len)
            m = min(h_len, x_len)
            want = self.oracle_says("prefix", s, m + 1, h_len > m, judged)
            self.keep(Disagreement(self.case.name, "prefix", name, s[:m],
                                   {"xg2ref": h_len > m, name: x_len > m, "oracle": want}, token=s[m:m + 1]))
        common = min(h_len, x_len)
        r.verdicts_ref += common + 1
        differ = [k for k in range(common + 1) if h_comp[k] != x_comp[k]]
        r.verdict_diff_ref += len(differ)
        if differ:
            k = differ[0]
            want = self.oracle_says("sentence", s, k, h_comp[k], judged)
            self.keep(Disagreement(self.case.name, "sentence", name, s[:k],
                                   {"xg2ref": h_comp[k], name: x_comp[k], "oracle": want}))
        r.verdicts_ref += 1
        if h_whole != x_whole:
            r.verdict_diff_ref += 1
            verdicts = {"xg2ref": h_whole[0], name: x_whole[0]}
            if h_whole[0] != x_whole[0]:  # accept_bytes(s) is the question "is s viable"
                verdicts["oracle"] = self.oracle_says("prefix", s, len(s), h_whole[0], judged)
            self.keep(Disagreement(self.case.name, "whole", name, s, verdicts,
                                   note=f"is_completed after it: xg2ref {h_whole[1]}, {name} {x_whole[1]}"))

    # ---- token traces -------------------------------------------------------------------------

    def trace_sentence(self, i: int) -> Optional[bytes]:
        """Trace 0 replays the longest sample, the others `sentences()` draws (or samples)."""
        samples = sorted((s.encode("utf-8") for s in self.case.samples), key=len, reverse=True)
        if i > 0 or not samples:
            for _ in range(DRAW_ATTEMPTS):
                s = sentences(self.ir, self.rng)
                if s and self.ctx.encoder(s) is not None:
                    return s
        return samples[i % len(samples)] if samples else None

    def tokenize(self, s: bytes) -> Optional[list]:
        ids = self.ctx.encoder(s)
        if ids is None or b"".join(self.vocab[t] for t in ids) != s:
            self.result.notes.append(f"trace skipped: {s[:40]!r} does not tokenize to its own bytes")
            return None
        return ids[:self.opts.max_trace_tokens]

    def trace(self, s: Optional[bytes]) -> None:
        ids = None if s is None else self.tokenize(s)
        if ids is None:
            return
        r = self.result
        r.traces += 1
        ref = self.ref
        for m in (self.have, ref, self.oracle):
            if m is not None:
                m.reset()
        seen: list = []  # (have's mask, ref's mask, prefix) at each step
        prefix = b""
        for step in range(len(ids) + 1):
            mask = self.have.bool_mask()
            ref_mask = ref.bool_mask() if ref is not None else None
            seen.append((mask, ref_mask, prefix))
            nxt = ids[step] if step < len(ids) else None
            self.check_mask(prefix, mask, ref_mask, nxt)
            if nxt is None:
                self.check_stop(prefix, mask, ref)
                break
            if not self.have.accept_token(nxt):
                r.mask_diff_oracle_steps += 1
                r.mask_diff_oracle_tokens += 1
                self.keep(Disagreement(self.case.name, "accept", "oracle", prefix, {"xg2ref": False, "oracle": True},
                                       token_id=nxt, token=self.vocab[nxt], note="trace stopped"))
                return
            if ref is not None and not ref.accept_token(nxt):
                self.keep(Disagreement(self.case.name, "accept", self.ref_name, prefix,
                                       {"xg2ref": True, self.ref_name: False}, token_id=nxt, token=self.vocab[nxt],
                                       note=f"{self.ref_name} left out for the rest of this trace"))
                r.mask_diff_ref_steps += 1
                r.mask_diff_ref_tokens += 1
                ref = None
            if not self.oracle.accept_token(nxt):
                r.notes.append(f"trace stopped: the oracle rejects token {nxt} after {prefix[-40:]!r}")
                return
            prefix += self.vocab[nxt]
            if ref is not None and self.captured and not self.check_captures(prefix, ref):
                ref = None  # (one captures reproducer per trace: the rest of it would repeat it)
        self.check_rollback(seen, ref)

    # ---- captures ---------------------------------------------------------------------------

    def check_captures(self, data: bytes, ref) -> bool:
        """Compare get_captures() after `data` with the reference's; keep a shrunk reproducer
        when they differ (as multisets: specs/03's known difference of order). Returns whether
        they agree."""
        r = self.result
        r.captures_compared += 1
        ours, theirs = self.have.captures(), ref.captures()
        if sorted(ours) == sorted(theirs):
            return True
        r.capture_diff_ref += 1
        data, ours, theirs = self.shrink_captures(data, ours, theirs)
        self.keep(Disagreement(self.case.name, "captures", self.ref_name, data,
                               {"xg2ref": repr(ours), self.ref_name: repr(theirs)},
                               note="get_captures() differs; the rest of this trace is not compared"))
        return False

    def shrink_captures(self, data: bytes, ours: list, theirs: list) -> tuple:
        """`data` shrunk by ddmin to bytes both engines accept with captures that still differ
        (fresh matchers of the case), with those captures."""
        try:
            mine, refs = compile_case(self.ctx.engine, self.case), compile_case(self.ctx.reference, self.case)
        except Exception:
            return data, ours, theirs
        found: dict = {}

        def differs(d: bytes) -> bool:
            mine.reset()
            refs.reset()
            if not (mine.accept_bytes(d) and refs.accept_bytes(d)):
                return False
            a, b = mine.captures(), refs.captures()
            found[d] = (a, b)
            return sorted(a) != sorted(b)

        if not differs(data):
            return data, ours, theirs
        small = shrink_bytes(data, differs, time.monotonic() + SHRINK_SECONDS)
        differs(small)
        return (small,) + found[small]

    def steered_trace(self) -> None:
        """A trace that follows the reference engine's own mask: at each step a random token it
        allows (half the time one that xg2ref refuses, when there is one), so that the reference's
        over-acceptance is walked into, not only met on xg2ref's path. Every step's masks are
        compared and their differences judged as in `trace`; the trace ends where xg2ref cannot
        follow (that difference is already judged), at the token limit, or when only stop
        tokens are left."""
        r, ref = self.result, self.ref
        r.traces += 1
        for m in (self.have, ref, self.oracle):
            m.reset()
        prefix = b""
        for _ in range(self.opts.max_trace_tokens):
            mask, ref_mask = self.have.bool_mask(), ref.bool_mask()
            self.check_mask(prefix, mask, ref_mask, None)
            choices = np.flatnonzero(ref_mask & ~self.never)
            if not len(choices):
                return
            only_ref = np.flatnonzero(ref_mask & ~mask & ~self.never)
            pool = only_ref if len(only_ref) and self.rng.random() < 0.5 else choices
            t = int(pool[self.rng.randrange(len(pool))])
            if not self.have.accept_token(t):
                return
            if not ref.accept_token(t) or not self.oracle.accept_token(t):
                return
            prefix += self.token_bytes(t)

    def oracle_ids(self, prefix: bytes, mask: np.ndarray, differ: np.ndarray, nxt: Optional[int]) -> list:
        """Token ids for the oracle at this step (see the module docstring of xg2ref/tools/diff/runner.py)."""
        ids = set(differ.tolist())
        if len(ids) > MAX_ADJUDICATED_IDS:
            ids = set(self.rng.sample(sorted(ids), MAX_ADJUDICATED_IDS)) | {int(differ[0])}
        if len(prefix) <= self.opts.max_oracle_bytes:
            for pool in (np.flatnonzero(mask & ~self.never), np.flatnonzero(~mask & ~self.never)):
                picks = self.rng.sample(range(len(pool)), min(self.opts.oracle_sample, len(pool)))
                ids.update(pool[picks].tolist())
            ids.update(self.rng.sample(self.specials, min(2, len(self.specials))))
        ids.update(self.stops)
        if nxt is not None:
            ids.add(nxt)
        return sorted(t for t in ids if len(prefix) + len(self.vocab[t] if t < len(self.vocab) else b"")
                      <= MAX_INPUT_BYTES)

    def check_mask(self, prefix: bytes, mask: np.ndarray, ref_mask: Optional[np.ndarray], nxt: Optional[int]) -> None:
        r = self.result
        r.steps += 1
        differ = np.flatnonzero(mask != ref_mask) if ref_mask is not None else np.zeros(0, dtype=np.int64)
        if differ.size:
            r.mask_diff_ref_steps += 1
            r.mask_diff_ref_tokens += int(differ.size)
        ids = self.oracle_ids(prefix, mask, differ, nxt)
        want = self.oracle.mask_on(ids)
        r.tokens_oracle += len(ids)
        bad = [t for t, w in zip(ids, want) if mask[t] != w]
        if bad:
            r.mask_diff_oracle_steps += 1
            r.mask_diff_oracle_tokens += len(bad)
            t = bad[0]
            verdicts = {"xg2ref": bool(mask[t]), "oracle": not mask[t]}
            if ref_mask is not None:
                verdicts[self.ref_name] = bool(ref_mask[t])
            self.keep(Disagreement(self.case.name, "token", "oracle", prefix, verdicts, token_id=t,
                                   token=self.token_bytes(t), note=f"ids differing from the oracle at this step: {len(bad)} of {len(ids)} judged"))
        elif differ.size:  # an oracle reproducer above already carries the reference's verdict
            t = int(differ[0])
            judged = dict(zip(ids, want))
            self.keep(Disagreement(self.case.name, "token", self.ref_name, prefix,
                                   {"xg2ref": bool(mask[t]), self.ref_name: bool(ref_mask[t]),
                                    "oracle": bool(judged[t]) if t in judged else None},
                                   token_id=t, token=self.token_bytes(t),
                                   note=f"ids differing from {self.ref_name} at this step: {differ.size}"))

    def token_bytes(self, t: int) -> bytes:
        return self.vocab[t] if t < len(self.vocab) else b""

    def check_stop(self, prefix: bytes, mask: np.ndarray, ref) -> None:
        """At the end: accepting an allowed stop token completes the match; roll it back."""
        allowed = [t for t in self.stops if mask[t]]
        if not allowed:
            return
        t = allowed[0]
        for name, matcher in (("xg2ref", self.have), (self.ref_name, ref)):
            if matcher is None:
                continue
            ok = matcher.accept_token(t) and matcher.is_completed()
            if ok:
                matcher.rollback(1)
            if not ok:
                if name == "xg2ref":
                    self.result.mask_diff_oracle_steps += 1
                    self.result.mask_diff_oracle_tokens += 1
                else:
                    self.result.mask_diff_ref_tokens += 1
                self.keep(Disagreement(self.case.name, "accept", "oracle" if name == "xg2ref" else name, prefix,
                                       {name: False, "oracle": True}, token_id=t, token=b"",
                                       note="stop token allowed by the mask but not accepted"))

    def check_rollback(self, seen: list, ref) -> None:
        """Roll back to a random step; the masks there must be those first seen."""
        taken = len(seen) - 1
        back = self.rng.randint(0, taken)
        for name, matcher, col in (("xg2ref", self.have, 0), (self.ref_name, ref, 1)):
            if matcher is None:
                continue
            matcher.rollback(taken - back)
            first = seen[back][col]
            now = matcher.bool_mask()
            differ = int(np.count_nonzero(now != first))
            if not differ:
                continue
            if name == "xg2ref":
                self.result.mask_diff_oracle_steps += 1
                self.result.mask_diff_oracle_tokens += differ
            else:
                self.result.mask_diff_ref_steps += 1
                self.result.mask_diff_ref_tokens += differ
            self.keep(Disagreement(self.case.name, "rollback", "oracle" if name == "xg2ref" else name, seen[back][2],
                                   {name: False}, note=f"rolled back {taken - back} of {taken} tokens; "
                                   f"ids differing from the mask first seen: {differ}"))
