"""`xg2ref diff FILE...`: the differential runner on the user's own grammars, against several engines.

Each file becomes a case (xg2ref/tools/user_cases.py) and goes through the same checks as the bundled
suite (xg2ref/tools/diff/runner.py: string verdicts from the oracle's sentence generator and mutations,
token traces with full masks compared at every step, every difference put to the oracle), once
per engine named in `--against`. The runs share the seed, so xg2ref and the oracle see the
same strings and traces in each.

The report flattens every kept reproducer into one list of disagreements, one per engine that
answered differently from the oracle (or, where the oracle could not judge, from xg2ref):

    case, engine, kind ("verdict": a string's prefix or sentence verdict; "mask": a token's
    place in a mask), input_hex (the bytes before the question, then the byte or token asked
    about), tokens (the token id asked about, when there is one), oracle, xg2ref, engine_says,
    replay (a command line that asks xg2ref the same question), by_design (the class of a known
    deliberate difference, xg2ref/tools/diff/classes.py, or null)

Shrinking (`shrink_disagreements`, in xg2ref/tools/fuzz/case.py beside the checker it uses;
requirement of every report): each disagreement that is not by design is asked again on bytes
alone, then minimized as `xg2ref fuzz` does (xg2ref/tools/fuzz/case.py `CaseChecker.finding`: the
input by delta debugging, then a JSON schema's keywords, a regex's text or an EBNF grammar's
rules and alternatives, then the input again), judged by the oracle and, for a JSON-schema
verdict on a JSON document, by `jsonschema`; its class is then named (xg2ref/tools/diff/classes.py
`by_design`, which asks the engine again: forced text, greedy lexemes, recursion depth, property
order, additional properties). The entry gets `shrunk` (the smaller case and question, their
verdicts, a replay command over files written beside the report) and, when the class is a
deliberate one, `by_design`. Each shrink has a time limit (`shrink_seconds`); what it reached by
then is kept.

Exit status: 1 when xg2ref disagrees with its oracle (or a case cannot run); with `strict`, also
when a compared engine disagrees with the oracle other than by design; else 0.
"""

from __future__ import annotations

import os
import shlex
import time
from dataclasses import dataclass, field
from typing import Optional

from .runner import run_diff
from .classes import classify
from .checks import DiffOptions
from .report import DiffReport
from ...tokenizer_info import QUICKTOK_STOP_TOKENS, TokenizerInfo

_VERDICT_KINDS = ("prefix", "sentence", "whole")


@dataclass
class UserDiff:
    """One `xg2ref diff FILE...` run: a DiffReport per engine compared (None: oracle only)."""

    engines: list
    reports: dict  # engine name (or None) -> DiffReport
    seconds: float = 0.0
    seed: int = 0
    disagreements: list = field(default_factory=list)

    def __post_init__(self):
        seen = set()
        for report in self.reports.values():
            for d in report.reproducers:
                for entry in _entries(d):
                    key = (entry["case"], entry["engine"], entry["kind"], entry["input_hex"], str(entry["tokens"]))
                    if key not in seen:
                        seen.add(key)
                        self.disagreements.append(entry)

    def exit_status(self, strict: bool = False) -> int:
        if any(r.exit_status() for r in self.reports.values()):
            return 1
        if strict and any(d["engine"] != "xg2ref" and not d["by_design"] for d in self.disagreements):
            return 1
        return 0

    def format(self, strict: bool = False) -> str:
        parts = []
        for name, report in self.reports.items():
            title = f"== against {name}" if name else "== against the oracle only"
            parts += [title, report.format(strict=strict), ""]
        by_engine: dict = {}
        for d in self.disagreements:
            key = (d["engine"], d["by_design"] or "unclassified")
            by_engine[key] = by_engine.get(key, 0) + 1
        counts = "; ".join(f"{e} {c}: {n}" for (e, c), n in sorted(by_engine.items())) or "none"
        parts.append(f"disagreements with the oracle kept, by engine and class (diff_classes.py): {counts}")
        shrunk = [d for d in self.disagreements if d.get("shrunk")]
        if shrunk:
            parts.append("shrunk (smallest case and input that still disagree):")
        for d in shrunk:
            f = d["shrunk"]
            source = " ".join(f["source"].split())
            token = f" token {bytes.fromhex(f['token_hex'])!r}" if f["token_hex"] is not None else ""
            judged = "" if f["jsonschema_valid"] is None else f", jsonschema: {f['jsonschema_valid']}"
            parts.append(f"  [{d['case']}] {f['class']}\n    case {source[:120]}\n    {f['question']} "
                         f"{bytes.fromhex(f['input_hex'])!r}{token}: oracle {f['oracle']}, {f['engine']} "
                         f"{f['engine_says']}{judged}\n    replay: {f['replay']}")
        status = self.exit_status(strict)
        parts.append("OK" if not status else "FAIL")
        return "\n".join(parts)

    def to_json(self, strict: bool = False) -> dict:
        first = next(iter(self.reports.values()))
        return {"engines": self.engines, "vocab": first.vocab, "seed": first.seed, "options": first.options,
                "seconds": round(self.seconds, 3), "exit_status": self.exit_status(strict),
                "cases": [c.to_json() for c in first.cases],
                "per_engine": {name: [c.to_json() for c in r.cases] for name, r in self.reports.items() if name},
                "disagreements": self.disagreements}


def _entries(d) -> list:
    """The report entries of one reproducer: one per engine whose answer is not the oracle's
    (not xg2ref's where the oracle was not asked)."""
    verdicts = d.verdicts
    oracle = verdicts.get("oracle")
    judge = oracle if oracle is not None else verdicts.get("xg2ref")
    kind = "verdict" if d.kind in _VERDICT_KINDS else "mask"
    asked = d.prefix + (d.token or b"") if d.kind == "prefix" else d.prefix
    out = []
    for engine, says in verdicts.items():
        if engine == "oracle" or says is None or judge is None or says == judge:
            continue
        if engine == "xg2ref" and oracle is None:
            continue
        by_design = classify(engine, d.prefix, d.token, says) if kind == "mask" else None
        out.append({"case": d.case, "engine": engine, "kind": kind, "question": d.kind, "by_design": by_design,
                    "input_hex": asked.hex() if kind == "verdict" else d.prefix.hex(),
                    "token_hex": None if d.token is None else d.token.hex(),
                    "tokens": [] if d.token_id is None else [d.token_id], "oracle": oracle,
                    "xg2ref": verdicts.get("xg2ref"), "engine_says": says, "note": d.note, "replay": d.replay()})
    return out


def user_replay(entry: dict, case, vocab_name: str, stop_id: Optional[int]) -> str:
    """`xg2ref explain` asking the entry's question of the user's file (kind, front-end options
    and vocabulary given), in place of the suite's `check` / `mask` lines."""
    from ..user_cases import replay_flags

    path = shlex.quote(case.source if os.path.exists(case.source) else case.name)
    head = f"xg2ref explain {path}{replay_flags(case)} --vocab {shlex.quote(vocab_name)} --hex"
    data = bytes.fromhex(entry["input_hex"])
    if entry["kind"] == "mask":
        return f"{head} --prefix '{data.hex()}' --token {entry['tokens'][0]}"
    if entry["question"] == "sentence" and stop_id is not None:
        return f"{head} --prefix '{data.hex()}' --token {stop_id}"
    if entry["question"] == "whole":
        return f"{head} --prefix '' --text '{data.hex()}'"
    return f"{head} --prefix '{data[:-1].hex()}' --text '{data[-1:].hex()}'"


def run_user_diff(cases: list, engines: list, info: TokenizerInfo, vocab_name: str, seed: int = 0,
                  options: Optional[DiffOptions] = None, jobs=1, progress: bool = True) -> UserDiff:
    """`cases` (suite.Case) against each engine name of `engines` (none: the oracle only); `jobs`:
    worker processes, or a RaySpec (run_diff)."""
    start = time.perf_counter()
    reports: dict = {}
    vocab = vocab_name if vocab_name in QUICKTOK_STOP_TOKENS else info  # a name lets cases run in parallel
    for name in engines or [None]:
        if name is None or not isinstance(jobs, int):
            against = name  # (on Ray, xg2ref/tools/cluster.py: the actors build the engine)
        elif name == "xgrammar" and isinstance(vocab, str):
            against = "xgrammar"  # by name: the cases may run in parallel
        else:
            from ...oracle.other_engines import make_engine

            against = make_engine(name, info)
        report: DiffReport = run_diff(cases, against=against, vocab=vocab, seed=seed, options=options,
                                      progress=progress, jobs=jobs)
        report.reference = name
        reports[name] = report
    diff = UserDiff(engines=list(engines), reports=reports, seconds=time.perf_counter() - start, seed=seed)
    by_name = {c.name: c for c in cases}
    stop_id = info.stop_token_ids[0] if info.stop_token_ids else None
    for entry in diff.disagreements:
        case = by_name.get(entry["case"])
        if case is not None and entry["question"] != "rollback" and entry["input_hex"] is not None:
            entry["replay"] = user_replay(entry, case, vocab_name, stop_id)
    return diff
