"""`xg2ref fuzz`: random cases against other engines for a time budget, findings shrunk and deduplicated.

`xg2ref diff` checks the grammars a user already has; the fuzzer makes new ones until the
budget is spent, and keeps what an engine gets wrong in its smallest form:

    loop      draw case i of the seed (EBNF, regex or JSON schema, some of them mutated suite
              schemas: xg2ref/tools/fuzz/case.py), run the differential checks against every engine
              named, confirm and shrink each disagreement with the oracle that is not by
              design (xg2ref/tools/fuzz/shrink.py), keep the first finding of each class
    classes   by-design classes, else the engine, case kind, question, over- or under-
              acceptance, the byte or token class asked about and, for schemas, the keywords
              left in the shrunk case (fuzz_shrink.finding_class); shrinking is no longer tried
              for a raw kind of disagreement (engine, question, answer, byte class) once it
              has led `STALE_AFTER` times to a class already known
    isolation each case runs in a forked worker process with a time limit, since an engine
              can spin for good inside native code (llguidance's lexeme spin, in
              other_engines.KNOWN_DEFECTS) or crash (xgrammar 0.2.8 on `r ::= r{0,2}`). A case
              over `CASE_TIMEOUT`, or one that kills the worker, is probed to pin it on one
              engine (fuzz_case.CaseChecker.failure, each probe given a third of the case's
              limit, at least `PROBE_SECONDS`): a "crash" finding (shrunk) or a "hang"
              finding; unpinned, a timeout or an error of the run. The last case, if it runs
              more than `BUDGET_GRACE` past the budget, is cut off and left untried
    resume    the results file (--results) holds JSON lines: {"type": "finding", ...} per
              finding and {"type": "progress", "seed", "index", ...} per case tried, written
              after its findings; a run with the same file skips the (seed, index) pairs
              already tried and the classes already found. PATH.cases/ holds each finding's
              shrunk case, its tokens and the vocabulary, for the `xg2ref replay` command line
              each finding carries
    parallel  with --ray the cases run on Ray actors, one per CPU (xg2ref/tools/cluster.py), each
              holding its engines and its worker process (started by forkserver) for all its
              cases. A case is sent with the classes and stale kinds known when it starts and
              its answer is recorded in the order of the indices, so the results file is a
              local run's (the seconds aside). The one way the two can part: a case run beside an earlier one does not
              yet know the kinds that one makes stale, and may shrink a disagreement a local
              run would have skipped. --cases N fixes the indices run (0..N-1), so that two
              runs can be compared

Exit status (`main`): 1 when a finding (of this run or of the results file) is xg2ref's own: a
disagreement with the oracle, a crash or a hang; 2 for bad options; else 0.

What it leaves out: shrinking hangs, and a case that stalls only while shrinking (a variant
makes an engine spin: no probe fails, so it stays a timeout and its findings are lost); a time
limit, and surviving a crash, without fork (cases then run in this process).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

from .. import cluster
from ..diff.checks import DiffOptions
from .case import KINDS, PROBE_SECONDS, CaseChecker, default_vocabulary, draw_case, replay_command
from ...tokenizer_info import QUICKTOK_STOP_TOKENS, TokenizerInfo
from ..user_cases import UsageError, load_vocab
from ...util import read_json_lines

__all__ = ["FuzzResult", "KINDS", "OPTIONS", "add_arguments", "main", "run_fuzz"]

OPTIONS = DiffOptions(n_strings=3, n_traces=1, max_trace_tokens=14, n_steered=1, oracle_sample=3,
                      max_oracle_bytes=96, max_reproducers=4)
SHRINK_SECONDS = 15.0  # per finding
CASE_TIMEOUT = 90.0  # per case, shrinking included: longer is a timeout
BUDGET_GRACE = 30.0  # how long the last case may run past the budget before it is cut off
STALE_AFTER = 3


# ---- the worker process ------------------------------------------------------------------------


def _serve(conn, checker: CaseChecker) -> None:
    import faulthandler

    faulthandler.disable()  # a crash is reported as a finding, not as a dump on stderr
    while True:
        job = conn.recv()
        if job is None:
            return
        conn.send(checker.run(*job))


class _Worker:
    """A forked process running `CaseChecker.run`, started again after a timeout. Without fork
    (not on Linux or macOS) cases run in this process, with no time limit."""

    def __init__(self, checker: CaseChecker):
        import multiprocessing

        self.checker = checker
        method = checker.start_method
        self.ctx = multiprocessing.get_context(method) if method in multiprocessing.get_all_start_methods() else None
        self.proc = None

    def run(self, job: tuple, timeout: float) -> Optional[dict]:
        if self.ctx is None:
            return self.checker.run(*job)
        if self.proc is None:
            self.conn, child = self.ctx.Pipe()
            self.proc = self.ctx.Process(target=_serve, args=(child, self.checker), daemon=True)
            self.proc.start()
            child.close()
        self.conn.send(job)
        if self.conn.poll(timeout):
            try:
                return self.conn.recv()
            except EOFError:  # the worker died (a crash inside an engine)
                self.close()
                return {"died": True}
        self.close()
        return None

    def close(self, wait: float = 0.0) -> None:
        """Stop the worker: asked to end when `wait` > 0 (then given that long), else killed."""
        if self.proc is not None:
            if wait and self.proc.is_alive():
                try:
                    self.conn.send(None)
                except OSError:
                    pass
                self.proc.join(wait)
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join()
            self.conn.close()
            self.proc = None


# ---- the run ---------------------------------------------------------------------------------


@dataclass
class FuzzResult:
    """One `xg2ref fuzz` run: new findings, and those of earlier runs of the results file."""

    against: list
    seed: int
    budget_seconds: float
    cases_tried: int = 0
    skipped: int = 0  # draws xg2ref cannot read
    by_kind: dict = field(default_factory=dict)
    errors: list = field(default_factory=list)  # (index, message)
    timeouts: list = field(default_factory=list)  # (index, kind, source)
    findings: list = field(default_factory=list)
    earlier_findings: list = field(default_factory=list)
    seconds: float = 0.0
    results_path: Optional[str] = None

    def exit_status(self) -> int:
        return 1 if any(f["engine"] == "xg2ref" for f in self.findings + self.earlier_findings) else 0

    def format(self) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.by_kind.items())) or "none"
        lines = [f"fuzzed against {', '.join(self.against) or 'the oracle only'} for {self.seconds:.0f} s "
                 f"(seed {self.seed}): {self.cases_tried} cases ({kinds}), {self.skipped} draws xg2ref cannot "
                 f"read, {len(self.errors)} errors, {len(self.timeouts)} timeouts"]
        if self.earlier_findings:
            lines.append(f"{len(self.earlier_findings)} findings of earlier runs in {self.results_path} (not repeated)")
        lines.append(f"{len(self.findings)} new findings (one per class):")
        for f in self.findings:
            lines.append(f"  [{f['class']}]")
            lines.append(f"    {f['kind']}: {_short(f['source'])}")
            asked = f"input {f['input']!r}" + (f", token {f['tokens'][0]} {bytes.fromhex(f['token_hex'])!r}"
                                                if f["tokens"] else "")
            if f["question"] in ("crash", "hang"):
                lines.append(f"    {f['question']}: {f['note']}")
            else:
                valid = f", jsonschema valid {f['jsonschema_valid']}" if f["jsonschema_valid"] is not None else ""
                lines.append(f"    {f['question']} question, {asked}: oracle {f['oracle']}, {f['engine']} "
                             f"{f['engine_says']}{valid}" + (f" ({f['note']})" if f["note"] else ""))
            lines.append(f"    replay: {f['replay']}")
        for index, message in self.errors[:5]:
            lines.append(f"  error in case {index}: {message}")
        for index, kind, source in self.timeouts[:5]:
            lines.append(f"  timeout in case {index} ({kind}): {_short(source)}")
        lines.append("FAIL: xg2ref disagrees with its oracle" if self.exit_status() else "OK")
        return "\n".join(lines)


def _short(text: str, width: int = 160) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[:width - 3] + "..."


def _read_results(path: Optional[str]) -> tuple:
    """({(seed, index) tried}, [findings]) of an earlier results file."""
    tried, findings = set(), []
    for entry in read_json_lines(path):  # (a line cut short by an interrupted run is skipped)
        if entry.get("type") == "progress":
            tried.add((entry["seed"], entry["index"]))
        elif entry.get("type") == "finding":
            findings.append(entry)
    return tried, findings


def _failed(checker: CaseChecker, index: int, kind: str, source: str, timed_out: bool) -> dict:
    """What a case that stalled or killed the worker gives: a finding pinned on one engine
    (`CaseChecker.failure`), else a timeout or an error of the run."""
    failure = checker.failure(index, kind, source)
    return {"findings": [failure] if failure else [], "shrinks": [], "disagreements": int(failure is not None),
            "skipped": None, "error": None if failure or timed_out else "the worker process died",
            "timeout": failure is None and timed_out, "failure": "timeout" if timed_out else "crash"}


def _vocabulary(vocab, cases_dir: Optional[str]) -> tuple:
    """(TokenizerInfo, how a command line names it)."""
    if vocab is None:
        info = default_vocabulary()
        label = "VOCAB.json"
        if cases_dir:
            label = os.path.join(cases_dir, "vocab.json")
            with open(label, "w", encoding="utf-8") as f:
                json.dump([t.decode("utf-8") for t in info.decoded_vocab], f)
        return info, label
    if isinstance(vocab, TokenizerInfo):
        return vocab, vocab.name or "VOCAB"
    return load_vocab(vocab), vocab


class CaseRunner:
    """Runs the cases of one campaign, one at a time, in a forked worker with a time limit
    (module docstring, "isolation"): in this process, or held by a Ray actor (`--ray`), which
    builds the engines and the vocabulary once for all the cases it runs."""

    isolated = True

    def __init__(self, against: list, vocab, seed: int, options: DiffOptions, shrink_seconds: float,
                 timeout: float = CASE_TIMEOUT, start_method: str = "fork"):
        info = vocab if isinstance(vocab, TokenizerInfo) else _vocabulary(vocab, None)[0]
        checker = CaseChecker(against, info, seed, options, shrink_seconds)
        checker.start_method = start_method
        # a probe of a case that killed or stalled the worker may take a third of a case's limit
        checker.probe_seconds = max(PROBE_SECONDS, timeout / 3)
        self.worker = _Worker(checker)
        self.timeout = timeout

    def run(self, index: int, kind: str, source: str, seen: set, stale: set, limit: float) -> dict:
        """CaseChecker.run's answer, with "seconds"; {"cut": True} when `limit` (what is left of
        the budget) ran out first; a stall or a crash pinned by `_failed`."""
        start = time.monotonic()
        got = self.worker.run((index, kind, source, set(seen), stale), limit)
        if got is None and limit < self.timeout:
            return {"cut": True}  # cut off by the budget, not stuck: a later run tries it again
        if got is None or got.get("died"):
            got = _failed(self.worker.checker, index, kind, source, got is None)
        got["seconds"] = round(time.monotonic() - start, 3)
        return got

    @staticmethod
    def failed_record(args: tuple, job: tuple, why: str) -> dict:
        """The answer for a case whose Ray actor died twice (xg2ref/tools/cluster.py)."""
        return {"findings": [], "shrinks": [], "disagreements": 0, "skipped": None, "error": why,
                "failure": "crash", "seconds": 0.0}

    def close(self) -> None:
        self.worker.close(wait=2.0)


class _Campaign:
    """The driver's side of a run: each case's answer, taken in the order of the indices,
    turned into findings (one per class) and results-file lines."""

    def __init__(self, result: FuzzResult, seen: set, info: TokenizerInfo, vocab_label: str,
                 cases_dir: Optional[str], out):
        self.result, self.seen, self.info, self.vocab_label = result, seen, info, vocab_label
        self.cases_dir, self.out = cases_dir, out
        self.stale_counts: dict = {}

    def stale(self) -> set:
        return {k for k, n in self.stale_counts.items() if n >= STALE_AFTER}

    def record(self, seed: int, index: int, kind: str, source: str, origin: str, got: dict) -> None:
        result = self.result
        entry = {"type": "progress", "seed": seed, "index": index, "kind": kind, "origin": origin,
                 "source": source, "seconds": got["seconds"]}
        if "failure" in got:
            entry["failure"] = got["failure"]
        if got.get("timeout"):
            result.timeouts.append((index, kind, source))
        for raw, cls in got["shrinks"]:
            if cls in self.seen:
                self.stale_counts[raw] = self.stale_counts.get(raw, 0) + 1
        kept = 0
        for finding in got["findings"]:
            if finding["class"] in self.seen:  # (a case run beside an earlier one found it too)
                continue
            self.seen.add(finding["class"])
            kept += 1
            finding["replay"] = replay_command(finding, self.info, self.vocab_label, self.cases_dir)
            result.findings.append(finding)
            if self.out:
                self.out.write(json.dumps({"type": "finding", **finding}) + "\n")
        entry.update(disagreements=got["disagreements"], findings=kept, error=got["error"], skipped=got["skipped"])
        if got["error"]:
            result.errors.append((index, got["error"]))
        if got["skipped"]:
            result.skipped += 1
        else:
            result.cases_tried += 1
            result.by_kind[kind] = result.by_kind.get(kind, 0) + 1
        if self.out:
            self.out.write(json.dumps(entry) + "\n")
            self.out.flush()


def run_fuzz(against: list, budget_seconds: Optional[float], seed: int = 0, kinds: Sequence[str] = KINDS,
             results_path: Optional[str] = None, vocab: Union[None, str, TokenizerInfo] = None, progress: bool = True,
             options: DiffOptions = OPTIONS, shrink_seconds: float = SHRINK_SECONDS,
             case_timeout: float = CASE_TIMEOUT, max_cases: Optional[int] = None, jobs=1,
             runner=CaseRunner) -> FuzzResult:
    """Fuzz xg2ref and the engines `against` (names; [] = xg2ref vs the oracle only) for about
    `budget_seconds` (module docstring), or over the case indices below `max_cases` (those the
    results file holds are not run again), whichever ends first. `vocab`: None
    (default_vocabulary), a quicktok name, a tokenizer.json or JSON token list path, or a
    TokenizerInfo. `jobs`: a `RaySpec` runs the cases on Ray actors (xg2ref/tools/cluster.py;
    `runner` is what each actor holds), else in this process.

    Example: run_fuzz(["xgrammar"], 60, seed=1, results_path="fuzz.jsonl").format()
    """
    from ..diff.report import ProgressBar
    from ...oracle import other_engines

    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise ValueError(f"unknown case kinds {bad}: choose from {', '.join(KINDS)}")
    if budget_seconds is None and max_cases is None:
        raise ValueError("a fuzz run needs a budget in seconds, a number of cases, or both")
    budget = float("inf") if budget_seconds is None else budget_seconds
    cases_dir = None
    if results_path:
        cases_dir = results_path + ".cases"
        os.makedirs(cases_dir, exist_ok=True)
    info, vocab_label = _vocabulary(vocab, cases_dir)
    for name in against:  # fail early (EngineUnavailable, unknown name), not once per case
        other_engines.make_engine(name, info)
    tried, earlier = _read_results(results_path)
    result = FuzzResult(list(against), seed, budget, earlier_findings=earlier, results_path=results_path)
    every = itertools.count() if max_cases is None else range(max_cases)
    indices = (i for i in every if (seed, i) not in tried)
    if max_cases is not None:
        todo = sum(1 for i in range(max_cases) if (seed, i) not in tried)
        bar = ProgressBar(todo, enabled=progress)
    else:
        bar = ProgressBar(max(int(budget), 1), enabled=progress)
    out = open(results_path, "a", encoding="utf-8") if results_path else None
    campaign = _Campaign(result, {f["class"] for f in earlier}, info, vocab_label, cases_dir, out)
    # a quicktok name travels as a name; a file's vocabulary as read here (a node may lack the file)
    by_name = vocab is None or (isinstance(vocab, str) and vocab in QUICKTOK_STOP_TOKENS)
    worker_args = (list(against), vocab if by_name else info, seed, options, shrink_seconds, case_timeout)
    run = _on_ray if isinstance(jobs, cluster.RaySpec) else _here
    start = time.monotonic()
    try:
        run(runner, worker_args, jobs, campaign, indices, tuple(kinds), seed, budget, case_timeout, start,
            lambda: bar.update(result.cases_tried + result.skipped if max_cases is not None
                               else int(time.monotonic() - start),
                               f"case {result.cases_tried + result.skipped}, {len(result.findings)} findings"))
    finally:
        bar.close()
        if out:
            out.close()
    result.seconds = time.monotonic() - start
    return result


def _limit(budget: float, start: float, case_timeout: float) -> float:
    """A case's time limit: its timeout, or less where the budget (and its grace) ends first."""
    return min(case_timeout, budget - (time.monotonic() - start) + BUDGET_GRACE)



def _here(runner, worker_args: tuple, jobs, campaign: _Campaign, indices, kinds: tuple, seed: int, budget: float,
          case_timeout: float, start: float, tick) -> None:
    """The cases one after another in this process (its forked worker)."""
    worker = runner(*worker_args)
    try:
        for index in indices:
            if time.monotonic() - start >= budget:
                break
            kind, source, origin = draw_case(seed, index, kinds)
            got = worker.run(index, kind, source, set(campaign.seen), campaign.stale(),
                             _limit(budget, start, case_timeout))
            if got.get("cut"):
                break
            campaign.record(seed, index, kind, source, origin, got)
            tick()
    finally:
        worker.close()


def _on_ray(runner, worker_args: tuple, spec, campaign: _Campaign, indices, kinds: tuple, seed: int,
            budget: float, case_timeout: float, start: float, tick) -> None:
    """The cases on Ray actors, one per CPU: each sent with the classes known when it starts,
    and recorded in the order of the indices, so that its records are a local run's (a case
    run beside an earlier one may shrink what that one's class would have let a local run skip)."""
    pool = cluster.ActorPool(runner, worker_args + ("forkserver",), spec)
    drawn: dict = {}  # index -> (kind, source, origin), in the order sent
    done: dict = {}  # index -> the answer, until the indices before it are recorded
    try:
        while True:
            while pool.idle and time.monotonic() - start < budget and (index := next(indices, None)) is not None:
                drawn[index] = draw_case(seed, index, kinds)
                kind, source, _ = drawn[index]
                pool.submit(index, (index, kind, source, set(campaign.seen), campaign.stale(),
                                    _limit(budget, start, case_timeout)))
            if not pool.busy():
                break
            index, answer = pool.next()
            if answer.get("cut"):
                drawn.pop(index)
            else:
                done[index] = answer
            while drawn and next(iter(drawn)) in done:  # the earliest case sent has its answer
                first = next(iter(drawn))
                campaign.record(seed, first, *drawn.pop(first), done.pop(first))
                tick()
        for index in sorted(done):  # cut off behind a case still running: kept all the same
            campaign.record(seed, index, *drawn[index], done.pop(index))
    finally:
        pool.close()


# ---- the command line -----------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of `xg2ref fuzz`."""
    p.add_argument("--against", default="xgrammar",
                   help="engines compared, comma-separated: xgrammar (default), llguidance, outlines; or none")
    p.add_argument("--budget", type=float, metavar="SECONDS", help="how long to fuzz (this, --cases, or both)")
    p.add_argument("--cases", type=int, metavar="N",
                   help="fuzz the case indices 0..N-1 of the seed (those in --results are not run again)")
    p.add_argument("--case-timeout", type=float, default=CASE_TIMEOUT, metavar="SECONDS",
                   help=f"per case, shrinking included; a case past it is a timeout (default {CASE_TIMEOUT:g})")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kind", default=",".join(KINDS), help=f"case kinds, comma-separated (default {','.join(KINDS)})")
    p.add_argument("--results", metavar="PATH",
                   help="JSON-lines results file; a run with the same file continues where the last stopped")
    p.add_argument("--vocab", help="a quicktok name, a tokenizer.json or a JSON list of tokens "
                                   "(default: a small built-in vocabulary)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    cluster.add_arguments(p, "the cases")


def main(args) -> int:
    """`xg2ref fuzz`: print the findings; exit 1 when xg2ref disagrees with its oracle, 2 on bad options."""
    from ...oracle.engines import EngineUnavailable

    against = [n.strip() for n in args.against.split(",") if n.strip() and n.strip() != "none"]
    kinds = [k.strip() for k in args.kind.split(",") if k.strip()]
    try:
        result = run_fuzz(against, args.budget, seed=args.seed, kinds=kinds, results_path=args.results,
                          vocab=args.vocab, progress=not args.no_progress, max_cases=args.cases,
                          jobs=cluster.RaySpec.from_args(args) or 1, case_timeout=args.case_timeout)
    except (EngineUnavailable, ValueError, UsageError) as err:  # UsageError: load_vocab's
        print(f"xg2ref fuzz: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        kept = f"{args.results} keeps the cases tried: the same command goes on from there" if args.results \
            else "nothing kept (no --results file)"
        print(f"xg2ref fuzz: interrupted; {kept}", file=sys.stderr)
        return 130
    print(result.format())
    if args.results:
        print(f"results appended to {args.results}")
    return result.exit_status()
