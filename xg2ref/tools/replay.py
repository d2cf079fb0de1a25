"""`xg2ref replay`: a generation log checked step by step by the oracle and by each engine.

An engine engineer's question after a generation went wrong: did the log leave the language,
and if so where; and did an engine's mask ever disagree with the oracle before that? A log is a
list of token ids. At step i (before token i) every engine fills its mask, and:

    SIZE       each engine's number of allowed tokens is recorded
    DIFFER     ids where an engine's mask differs from xg2ref's are put to the oracle, and so are
               `oracle_sample` random ids of each side of xg2ref's mask; an engine whose verdict
               on one of them is not the oracle's disagrees with it at step i
    LEAVE      token i is not allowed by the oracle: the log leaves the language at step i (the
               replay stops there: no engine may read it)
    END        after the last token, whether the bytes read are a sentence

The oracle is the brute-force recognizer (xg2ref/oracle/recognizer.py); past its input limit
(`MAX_INPUT_BYTES`) xg2ref's own verdicts stand in for it, and the report says so. An engine
that refuses a token the oracle allows is dropped from the later steps (it cannot follow).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..suite import compile_case
from ..oracle.engines import OracleMatcher
from ..oracle.recognizer import MAX_INPUT_BYTES
from ..suite import Case
from ..tokenizer_info import TokenizerInfo


@dataclass
class ReplayStep:
    index: int
    token: int
    sizes: dict  # engine -> allowed tokens at this step
    allowed: dict  # engine -> token allowed by its mask
    oracle: Optional[bool]  # the oracle's verdict on the token (None: past its input limit)
    wrong: dict = field(default_factory=dict)  # engine -> ids where its mask is not the oracle's


@dataclass
class ReplayResult:
    engines: list
    steps: list = field(default_factory=list)
    left_at: Optional[int] = None  # the step whose token the oracle refuses
    first_wrong: dict = field(default_factory=dict)  # engine -> first step where it disagrees with the oracle
    dropped: dict = field(default_factory=dict)  # engine -> step where it refused a token the oracle allows
    complete: Optional[bool] = None  # after the last token read
    unjudged: int = 0  # steps past the oracle's input limit
    unavailable: dict = field(default_factory=dict)  # engine -> why it could not compile the grammar

    def exit_status(self) -> int:
        return 1 if self.left_at is not None or self.first_wrong or self.dropped else 0


def read_log(text: str) -> list[int]:
    """Token ids from a log: a JSON list, or one id per line (blank lines and # comments skipped)."""
    import json

    stripped = text.strip()
    if stripped.startswith("["):
        ids = json.loads(stripped)
    else:
        ids = [line.split("#")[0].strip() for line in stripped.splitlines()]
        ids = [x for x in ids if x]
    try:
        return [int(x) for x in ids]
    except (TypeError, ValueError):
        raise ValueError("a token log holds integers: a JSON list or one id per line") from None


def replay(case: Case, info: TokenizerInfo, tokens: list, engines: dict, oracle_sample: int = 8,
           seed: int = 0) -> ReplayResult:
    """Replay `tokens` on xg2ref and `engines` (name -> Engine, xg2ref's first) against the oracle."""
    for t in tokens:
        if not 0 <= t < info.vocab_size:
            raise ValueError(f"token id {t} is outside the vocabulary [0, {info.vocab_size})")
    matchers, unavailable = {}, {}
    for name, engine in engines.items():
        try:
            matchers[name] = compile_case(engine, case)
        except Exception as err:  # an engine that cannot read this kind of grammar sits out
            if not matchers and not unavailable:
                raise  # xg2ref itself
            unavailable[name] = f"{type(err).__name__}: {err}"
    names = list(matchers)
    oracle = OracleMatcher(case.grammar().ir, info)
    rng = random.Random(seed)
    out = ReplayResult(engines=names, unavailable=unavailable)
    longest = max((len(b) for b in info.decoded_vocab), default=0)
    for i, token in enumerate(tokens):
        masks = {name: m.bool_mask() for name, m in matchers.items()}
        judged = len(oracle.prefix) + longest <= MAX_INPUT_BYTES
        step = ReplayStep(i, token, {n: int(m.sum()) for n, m in masks.items()},
                          {n: bool(m[token]) for n, m in masks.items()}, None)
        ours = masks[names[0]]
        if judged:
            step.oracle = oracle.token_allowed(token)
            ids = set()
            for mask in masks.values():
                ids.update(np.flatnonzero(mask != ours).tolist())
            for side in (np.flatnonzero(ours), np.flatnonzero(~ours)):
                ids.update(rng.sample(side.tolist(), min(oracle_sample, len(side))))
            ids = sorted(ids)
            verdicts = oracle.mask_on(ids)
            for name, mask in masks.items():
                wrong = [t for t, v in zip(ids, verdicts) if bool(mask[t]) != bool(v)]
                if wrong:
                    step.wrong[name] = wrong
                    out.first_wrong.setdefault(name, i)
        else:
            out.unjudged += 1
        out.steps.append(step)
        allowed = step.oracle if step.oracle is not None else step.allowed[names[0]]
        if not allowed:
            out.left_at = i
            return out
        for name in list(matchers):
            if not matchers[name].accept_token(token):
                out.dropped[name] = i
                del matchers[name]
        oracle.accept_token(token)
    out.complete = oracle.is_completed() if len(oracle.prefix) <= MAX_INPUT_BYTES else \
        matchers[names[0]].is_completed() if names[0] in matchers else None
    return out


def format_replay(result: ReplayResult, info: TokenizerInfo) -> str:
    """The step table and the findings, for people."""
    names = result.engines
    lines = ["step  token     " + "".join(f"{n[:10]:>12}" for n in names) + "   oracle  bytes"]
    for s in result.steps:
        cells = "".join(f"{s.sizes[n]:>10,}{'+' if s.allowed[n] else '-':>2}" if n in s.sizes else f"{'':>12}"
                        for n in names)
        verdict = {True: "allows", False: "REFUSES", None: "?"}[s.oracle]
        lines.append(f"{s.index:>4}  {s.token:>7}  {cells}   {verdict:>6}  {info.token_bytes(s.token)!r}")
        for name, ids in s.wrong.items():
            shown = ", ".join(f"{t} {info.token_bytes(t)!r}" for t in ids[:6])
            lines.append(f"      {name}'s mask is not the oracle's on {len(ids)} id(s): {shown}"
                         f"{' ...' if len(ids) > 6 else ''}")
    lines.append("(+/-: the logged token is in / out of that engine's mask; sizes count allowed tokens)")
    if result.left_at is not None:
        lines.append(f"the log leaves the language at step {result.left_at} "
                     f"(token {result.steps[result.left_at].token})")
    else:
        lines.append("the log stays in the language" + {True: "; it ends with a complete sentence",
                                                         False: "; it ends inside a sentence (not complete)",
                                                         None: ""}[result.complete])
    for name in names:
        if name in result.first_wrong:
            lines.append(f"{name} first disagrees with the oracle at step {result.first_wrong[name]}")
        if name in result.dropped:
            lines.append(f"{name} refused the token of step {result.dropped[name]}, which the oracle allows")
    for name, why in result.unavailable.items():
        lines.append(f"{name} sat out: it could not compile the grammar ({why})")
    if result.unjudged:
        lines.append(f"{result.unjudged} step(s) past the oracle's {MAX_INPUT_BYTES}-byte input limit: xg2ref's "
                     f"verdicts stand in")
    return "\n".join(lines)
