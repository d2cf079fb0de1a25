"""Replays an integration's xgrammar call sequence on one engine and records what it observes.

A scenario is a function `scenario(run, env)` that makes the calls an integration makes (vLLM,
SGLang, TensorRT-LLM, Outlines, transformers), through `run.xgr`: the module `xgrammar` or
`xg2ref`. Every observable goes into `run.steps` as `(label, value)`:

    return values            bools, ints, strings, tuples of them; enums as ints; objects as
                             their class name (`CompiledGrammar`)
    token masks              `Mask`: the allowed token ids below the vocabulary size (xgrammar
                             may leave the padding bits of the last int32 word set)
    masked logits            `Mask`: the ids whose logit is still finite
    exceptions               `Raised`: the class name and its bases' names (the message is
                             kept for reports, not compared)

Running a scenario on both engines and comparing the two step lists is the parity test
(`differences`). Two exceptions agree when xg2ref's class is, or derives from, a class named
like xgrammar's: every `except` clause written for xgrammar's then catches xg2ref's (xg2ref
raises `EBNFError`, a RuntimeError, where xgrammar raises RuntimeError).

Engine-free expectations are checked while the scenario runs (`run.expect`, and `Session`: masks
against accept_token and against themselves after rollback/reset), so a run on xg2ref alone
tests something where xgrammar is not installed; on xgrammar they check the scenario itself.

Example:

    run = run_scenario(xg2ref, my_scenario, env)
    assert run.unmet == []
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np


@dataclass(frozen=True)
class Raised:
    """An exception a call raised: its class name and the names of its classes, most derived first."""

    name: str
    message: str = field(default="", compare=False)
    mro: tuple = field(default=(), compare=False)

    @staticmethod
    def of(exc: BaseException) -> "Raised":
        return Raised(type(exc).__name__, str(exc), tuple(c.__name__ for c in type(exc).__mro__))

    def __str__(self) -> str:
        return f"raised {self.name}({self.message[:120]!r})"


@dataclass(frozen=True)
class Mask:
    """The allowed token ids of one bitmask row (or one logits row), below the vocabulary size."""

    allowed: tuple

    def __str__(self) -> str:
        return f"Mask({len(self.allowed)} allowed)"


def mask_bits(bitmask: Any, row: int, vocab_size: int) -> np.ndarray:
    """Bit j of int32 word j // 32 of `bitmask[row]`, for j < vocab_size, as a bool array.

    Example: mask_bits(torch.tensor([[5]], dtype=torch.int32), 0, 3) -> [True, False, True]
    """
    words = np.ascontiguousarray(np.asarray(bitmask[row]), dtype=np.int32)
    return np.unpackbits(words.view(np.uint8), bitorder="little")[:vocab_size].astype(bool)


def finite_ids(logits_row: Any) -> Mask:
    """The ids whose logit is not -inf (a torch row of any float dtype, or an array)."""
    values = np.asarray(logits_row.float() if hasattr(logits_row, "float") else logits_row, dtype=np.float32)
    return Mask(tuple(int(i) for i in np.flatnonzero(np.isfinite(values))))


def normalize(value: Any) -> Any:
    """A value both engines can be compared on."""
    if value is None or isinstance(value, (bool, str, bytes, Mask, Raised)):
        return value
    if isinstance(value, enum.Enum):
        return int(value.value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), normalize(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(normalize(v) for v in value)
    return type(value).__name__


class Run:
    """One scenario on one engine: the engine module, the steps recorded, the unmet expectations."""

    def __init__(self, engine: Any):
        self.xgr = engine
        self.engine = engine.__name__
        self.steps: list = []  # [(label, normalized value)]
        self.unmet: list = []  # [str]
        self.checked = 0  # expectations evaluated
        self.aborted: Optional[Raised] = None
        self.ordinary_ids: Optional[list] = None  # token ids a grammar may allow (not special, not padding)

    def record(self, label: str, value: Any) -> Any:
        self.steps.append((label, normalize(value)))
        return value

    def call(self, label: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """fn(*args, **kwargs), its value recorded; an exception is recorded and None returned."""
        try:
            value = fn(*args, **kwargs)
        except Exception as exc:  # the class name is the observable
            self.steps.append((label, Raised.of(exc)))
            return None
        self.record(label, value)
        return value

    def call_as(self, label: str, observe: Callable, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """As `call`, recording `observe(value)` instead of the value (for engine-specific text
        such as serialized JSON: `observe=lambda s: type(s).__name__`)."""
        try:
            value = fn(*args, **kwargs)
        except Exception as exc:
            self.steps.append((label, Raised.of(exc)))
            return None
        self.record(label, observe(value))
        return value

    def expect(self, ok: bool, what: str) -> bool:
        self.checked += 1
        if not ok:
            self.unmet.append(f"{self.engine}: {what}")
        return ok

    def mask(self, label: str, bitmask: Any, row: int, vocab_size: int) -> np.ndarray:
        bits = mask_bits(bitmask, row, vocab_size)
        self.record(label, Mask(tuple(int(i) for i in np.flatnonzero(bits))))
        return bits

    def logits(self, label: str, logits: Any) -> list:
        rows = [finite_ids(r) for r in logits]
        self.record(label, tuple(rows))
        return rows


class Session:
    """One GrammarMatcher of a scenario, under a name, with the checks every integration relies on.

    - an accepted token was allowed by the mask filled at that position, a rejected one was not
      (the bitmask and `accept_token` agree: xgrammar #382 was a break of this);
    - where a mask is first filled, a fork of the matcher accepts a spread of its allowed tokens
      and rejects a spread of the forbidden ordinary ones (`run.ordinary_ids`);
    - a mask filled again after the same tokens (after `rollback` or `reset`) equals the first one;
    - the stop token terminates the matcher.
    """

    def __init__(self, run: Run, name: str, matcher: Any, vocab_size: int, stop_ids: tuple = ()):
        self.run, self.name, self.matcher, self.vocab_size = run, name, matcher, vocab_size
        self.stop_ids = set(stop_ids)
        self.pos = 0  # tokens accepted and not rolled back
        self.path: list = []  # the tokens accepted at each position, kept past `pos` after a rollback
        self.history: dict = {}  # position -> the bool mask first filled there, for the tokens on `path`

    def fill(self, bitmask: Any, row: int = 0) -> np.ndarray:
        self.run.call(f"{self.name}.fill_next_token_bitmask(bitmask, {row})", self.matcher.fill_next_token_bitmask,
                      bitmask, row)
        bits = self.run.mask(f"{self.name}.mask@{self.pos}", bitmask, row, self.vocab_size)
        if self.pos not in self.history:
            self._probe(bits)
        seen = self.history.setdefault(self.pos, bits)
        self.run.expect(np.array_equal(seen, bits), f"{self.name}: the mask at position {self.pos} changed after a "
                        f"rollback/reset: {_set_diff(seen, bits)}")
        return bits

    def _probe(self, bits: np.ndarray, spread: int = 24) -> None:
        """Forks of the matcher try some allowed and some forbidden tokens (not recorded)."""
        allowed = np.flatnonzero(bits)
        ordinary = self.run.ordinary_ids if self.run.ordinary_ids is not None else []
        forbidden = [t for t in ordinary if t < self.vocab_size and not bits[t]]
        for tokens, want in ((allowed, True), (forbidden, False)):
            picks = [tokens[int(k)] for k in np.linspace(0, len(tokens) - 1, min(spread, len(tokens)))]
            wrong = [int(t) for t in picks if bool(self.matcher.fork().accept_token(int(t))) != want]
            self.run.expect(not wrong, f"{self.name}: the mask at position {self.pos} "
                            f"{'allows' if want else 'forbids'} {wrong[:6]} but accept_token says otherwise")

    def accept(self, token: int) -> bool:
        ok = bool(self.run.call(f"{self.name}.accept_token({token})", self.matcher.accept_token, token))
        mask = self.history.get(self.pos)
        if mask is not None and 0 <= token < self.vocab_size:
            self.run.expect(ok == bool(mask[token]), f"{self.name}: accept_token({token}) -> {ok} but the mask at "
                            f"position {self.pos} {'allowed' if mask[token] else 'forbade'} it")
        if ok:
            if self.path[self.pos:self.pos + 1] != [token]:  # a new path: the masks past here are stale
                self.path = self.path[:self.pos] + [token]
                self.history = {p: m for p, m in self.history.items() if p <= self.pos}
            self.pos += 1
            if token in self.stop_ids:
                self.run.expect(bool(self.matcher.is_terminated()), f"{self.name}: stop token {token} accepted but "
                                "the matcher is not terminated")
        return ok

    def rollback(self, n: int) -> None:
        self.run.call(f"{self.name}.rollback({n})", self.matcher.rollback, n)
        self.pos -= n

    def reset(self) -> None:
        self.run.call(f"{self.name}.reset()", self.matcher.reset)
        self.pos = 0

    def is_terminated(self) -> bool:
        return bool(self.run.call(f"{self.name}.is_terminated()", self.matcher.is_terminated))

    def jump_forward(self) -> str:
        return self.run.call(f"{self.name}.find_jump_forward_string()", self.matcher.find_jump_forward_string)

    def decode(self, tokens: list, bitmask: Any, row: int = 0) -> int:
        """Teacher forcing: fill then accept each token in turn; returns how many were accepted."""
        for k, token in enumerate(tokens):
            self.fill(bitmask, row)
            if not self.accept(token):
                return k
        return len(tokens)


def _set_diff(a: np.ndarray, b: np.ndarray) -> str:
    return f"only before {np.flatnonzero(a & ~b)[:8].tolist()}, only after {np.flatnonzero(b & ~a)[:8].tolist()}"


def run_scenario(engine: Any, scenario: Callable, env: Any) -> Run:
    """Runs `scenario(run, env)` on `engine`; an exception that escapes it ends the record."""
    run = Run(engine)
    run.ordinary_ids = getattr(env, "ordinary_ids", None)
    try:
        scenario(run, env)
    except Exception as exc:
        run.aborted = Raised.of(exc)
        run.steps.append(("scenario aborted", run.aborted))
    return run


def differences(want: Run, have: Run, describe: Callable = str, limit: int = 12) -> list:
    """The steps where `have` (xg2ref) differs from `want` (xgrammar), as sentences; stops at the
    first step where the two call sequences part (a label differs)."""
    out = []
    for i, ((label, w), (other, h)) in enumerate(zip(want.steps, have.steps)):
        if label != other:
            out.append(f"step {i}: the sequences part: {want.engine} `{label}` = {_show(w)}, "
                       f"{have.engine} `{other}` = {_show(h)}")
            return out[:limit]
        if not agree(w, h):
            out.append(f"step {i} `{label}`: {want.engine} {_show(w)} | {have.engine} {_show(h)}"
                       + _mask_delta(w, h, describe, want.engine, have.engine))
    if len(want.steps) != len(have.steps):
        longer = want if len(want.steps) > len(have.steps) else have
        i = min(len(want.steps), len(have.steps))
        out.append(f"step {i}: only {longer.engine} goes on: `{longer.steps[i][0]}` = "
                   f"{_show(longer.steps[i][1])}")
    return out[:limit]


def matching_steps(want: Run, have: Run) -> int:
    """How many steps agree on both engines, counted up to where the call sequences part."""
    same = 0
    for (label, w), (other, h) in zip(want.steps, have.steps):
        if label != other:
            break
        same += agree(w, h)
    return same


def agree(want: Any, have: Any) -> bool:
    """`have` (xg2ref's value) agrees with `want` (xgrammar's): equal, or an exception that every
    `except` clause catching xgrammar's also catches."""
    if isinstance(want, Raised) and isinstance(have, Raised):
        return want.name in have.mro
    if isinstance(want, tuple) and isinstance(have, tuple) and len(want) == len(have):
        return all(agree(w, h) for w, h in zip(want, have))
    return want == have


def _show(value: Any) -> str:
    if isinstance(value, tuple) and value and all(isinstance(v, Mask) for v in value):
        return "(" + ", ".join(str(v) for v in value) + ")"
    text = str(value)
    return text if len(text) < 200 else text[:200] + "..."


def _mask_delta(w: Any, h: Any, describe: Callable, w_name: str, h_name: str) -> str:
    """Which token ids only one engine allows, row by row."""
    pairs = [(w, h)] if isinstance(w, Mask) and isinstance(h, Mask) else (
        list(zip(w, h)) if isinstance(w, tuple) and isinstance(h, tuple) and len(w) == len(h)
        and all(isinstance(v, Mask) for v in w + h) else [])
    parts = []
    for row, (a, b) in enumerate(pairs):
        only_w = sorted(set(a.allowed) - set(b.allowed))
        only_h = sorted(set(b.allowed) - set(a.allowed))
        if only_w or only_h:
            where = f"row {row}: " if len(pairs) > 1 else ""
            parts.append(f"{where}only {w_name} allows {[describe(t) for t in only_w[:8]]}"
                         f"{'...' if len(only_w) > 8 else ''}; only {h_name} allows {[describe(t) for t in only_h[:8]]}"
                         f"{'...' if len(only_h) > 8 else ''}")
    return (" -- " + "; ".join(parts)) if parts else ""
