"""`xg2ref bench jsonschemabench`: compile rate and output validity on JSONSchemaBench.

For every schema (or a seeded sample of `--sample N` per subset): compile it with xgrammar 0.2.8
(when installed) and with xg2ref, then draw one string by a seeded random walk over xg2ref's
masks (Llama-3 vocabulary) until a stop token or `MAX_WALK_TOKENS` tokens, and validate the
finished ones with `jsonschema` (the schema's own draft, Draft 2020-12 when it names none;
formats checked by that draft's format checker, with the `format-nongpl` extra so that
date-time, time, duration, hostname, uri and uri-reference are really checked). The walk is random but leans toward finishing: at each step it stops when a stop
token is allowed with probability 1/2; otherwise with probability 0.4 it picks among the allowed
tokens that start with `"`, `}` or `]`, with 0.4 among the allowed tokens of at most two bytes,
else among all allowed tokens.

xg2ref compiles with JIT mask-cache entries (XGrammar-2 §3.5: an entry is built when a walk
first meets its state; `--eager` builds them all up front, as xgrammar 0.2.8 does). The table
has, per subset: schemas, compiled by xgrammar and by xg2ref, xg2ref compiles stopped after
`--timeout` seconds, walks finished (a walk also stops after `--timeout` seconds), valid, invalid,
and the validity rate (valid / finished). Then the classes of compile failures (the
error message with names and numbers blanked), the peak memory per schema (tracemalloc: the
arrays and objects xg2ref holds while it compiles the schema and walks it; p50, p99 and the
largest, recorded per schema) and every invalid output with its reason.

The whole benchmark (9,557 schemas) is long: `--jobs N` spreads the schemas over N worker
processes (each engine still one thread per compile), and `--results PATH` appends one JSON
line per schema, so a stopped run goes on where it left off and the table can be printed again
from the file alone (`--report-only`).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import random
import re
import signal
import time
import tracemalloc
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from ...util import read_json_lines
from .workers import worker_records

MAX_WALK_TOKENS = 512
SUBSETS = ("Github_trivial", "Github_easy", "Github_medium", "Github_hard", "Github_ultra", "Glaiveai2K",
           "JsonSchemaStore", "Kubernetes", "Snowplow", "WashingtonPost")


@dataclass
class SubsetRow:
    name: str
    schemas: int = 0
    theirs: int = 0
    ours: int = 0
    finished: int = 0
    valid: int = 0
    invalid: int = 0
    timed_out: int = 0
    seconds: float = 0.0
    failures: Counter = field(default_factory=Counter)
    bad_outputs: list = field(default_factory=list)


def load_schemas(data_dir: str, subsets, sample: Optional[int], seed: int = 0) -> dict:
    """subset -> [(unique_id, schema)], all or a seeded sample of `sample` per subset."""
    out = {}
    for name in subsets:
        path = os.path.join(data_dir, "jsonschemabench", f"{name}.jsonl.gz")
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} not found (pass --data, the folder holding jsonschemabench/)")
        rows = []
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                record = json.loads(line)
                schema = record["json_schema"]
                rows.append((record["unique_id"], json.loads(schema) if isinstance(schema, str) else schema))
        if sample is not None and sample < len(rows):
            rows = random.Random(f"{seed}/{name}").sample(rows, sample)
        out[name] = rows
    return out


def failure_class(err: Exception) -> str:
    """An error message with paths, quoted names and numbers blanked, for counting."""
    text = str(err).split("\n")[0]
    text = re.sub(r"\$[^:\s]*", "$…", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    text = re.sub(r"\d+", "N", text)
    return f"{type(err).__name__}: {text[:110]}"


def random_walk(matcher, decoded: list, stops: np.ndarray, rng: random.Random, first_bytes: np.ndarray,
                lengths: np.ndarray) -> Optional[bytes]:
    """One seeded walk (module docstring) over token bytes `decoded`, stop tokens `stops`
    (bool per id); None when it did not finish."""
    out = bytearray()
    for _ in range(MAX_WALK_TOKENS):
        mask = matcher.compute_bool_mask()
        if (mask & stops).any() and (rng.random() < 0.5 or not (mask & ~stops).any()):
            return bytes(out)
        allowed = mask & ~stops
        if not allowed.any():
            return None
        u = rng.random()
        pool = np.flatnonzero(allowed & first_bytes) if u < 0.4 else np.zeros(0, np.int64)
        if not len(pool) and u < 0.8:
            pool = np.flatnonzero(allowed & (lengths <= 2))
        if not len(pool):
            pool = np.flatnonzero(allowed)
        token = int(pool[rng.randrange(len(pool))])
        if not matcher.accept_token(token):
            raise AssertionError(f"the matcher refused token {token} that its own mask allowed")
        out += decoded[token]
    return None


def walk_tables(info) -> tuple:
    """(stops, closers, lengths) of a vocabulary, as `random_walk` takes them: stop tokens, the
    tokens starting with `"`, `}` or `]`, and each token's length in bytes."""
    v = info.vocab_arrays()
    lengths = np.diff(v.token_offsets)
    first = v.token_bytes[np.minimum(v.token_offsets[:-1], len(v.token_bytes) - 1)]
    closers = (lengths > 0) & np.isin(first, np.frombuffer(b'"}]', dtype=np.uint8))
    stops = np.zeros(info.vocab_size, dtype=np.bool_)
    stops[info.stop_token_ids] = True
    return stops, closers, lengths


class TimedOut(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: Optional[float]):
    """Raise TimedOut in this (main) thread after `seconds` (between kernel calls)."""
    if not seconds or not hasattr(signal, "SIGALRM"):
        yield
        return

    def alarm(signum, frame):
        raise TimedOut()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _Worker:
    """Both engines' compilers over one vocabulary, and the walk's token tables; one per process."""

    def __init__(self, vocab: str, jit: bool, timeout: Optional[float], seed: int):
        from ...compiler import GrammarCompiler
        from ...oracle.engines import EngineUnavailable, import_xgrammar
        from ...tokenizer_info import TokenizerInfo

        info = TokenizerInfo.from_quicktok(vocab)
        self.timeout, self.seed = timeout, seed
        # the peak memory of each schema (Python objects and numpy arrays); tracing slows every
        # allocation of the process, so whoever starts it stops it (`close`)
        self.owns_tracing = not tracemalloc.is_tracing()
        if self.owns_tracing:
            tracemalloc.start()
        self.compiler = GrammarCompiler(info, cache_enabled=False, jit=jit)
        try:
            xgr = import_xgrammar()
            xinfo = xgr.TokenizerInfo(list(info.decoded_vocab), xgr.VocabType.RAW, vocab_size=info.vocab_size,
                                      stop_token_ids=list(info.stop_token_ids))
            self.xcompiler = xgr.GrammarCompiler(xinfo, max_threads=1, cache_enabled=False)
            self.note = None
        except EngineUnavailable as err:
            self.xcompiler, self.note = None, f"xgrammar not installed, its column stays empty ({err})"
        self.decoded = info.decoded_vocab
        self.stops, self.first_bytes, self.lengths = walk_tables(info)

    def close(self) -> None:
        """Stop the memory tracing this worker started."""
        if self.owns_tracing:
            tracemalloc.stop()
            self.owns_tracing = False

    def run(self, subset: str, uid: str, schema) -> dict:
        """One schema: both compiles, one walk, its validation; a JSON-ready record."""
        from ...grammar.grammar import Grammar
        from ...matcher import GrammarMatcher

        rec = {"subset": subset, "uid": uid, "theirs": None, "ours": False, "timed_out": False, "failure": None,
               "finished": False, "valid": None, "text": None, "why": None}
        tracemalloc.reset_peak()
        start = time.perf_counter()
        if self.xcompiler is not None:
            try:
                self.xcompiler.compile_json_schema(json.dumps(schema))
                rec["theirs"] = True
            except Exception:  # xgrammar's own refusals are counted, not explained
                rec["theirs"] = False
            rec["their_seconds"] = round(time.perf_counter() - start, 3)
        ours = time.perf_counter()
        try:
            with time_limit(self.timeout):
                compiled = self.compiler.compile_grammar(Grammar.from_json_schema(schema))
        except TimedOut:
            rec["timed_out"] = True
            return _finish(rec, start)
        except Exception as err:  # every failure is counted by its class
            rec["failure"] = failure_class(err)
            return _finish(rec, start)
        rec["ours"] = True
        rec["compile_seconds"] = round(time.perf_counter() - ours, 3)
        try:
            with time_limit(self.timeout):  # with JIT, the walk builds the entries it meets
                text = random_walk(GrammarMatcher(compiled), self.decoded, self.stops,
                                   random.Random(f"{self.seed}/{uid}"), self.first_bytes, self.lengths)
        except TimedOut:
            text = None
        except Exception as err:  # noqa: BLE001  (an engine error in the walk is a finding, recorded)
            rec.update(finished=True, valid=False, why=f"walk error: {type(err).__name__}: {err}"[:200])
            return _finish(rec, start)
        if text is None:
            return _finish(rec, start)
        rec["finished"] = True
        error = validation_error(schema, text)
        rec["valid"] = error is None
        if error is not None:
            rec["text"], rec["why"] = text[:200].decode("utf-8", "replace"), error[:200]
        return _finish(rec, start)


def _finish(rec: dict, start: float) -> dict:
    rec["seconds"] = round(time.perf_counter() - start, 3)
    rec["peak_mib"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)  # xg2ref's arrays and objects
    return rec


def is_exact_multiple(value, factor) -> bool:
    """Whether the number `value` is an integer multiple of `factor` (> 0), by integer arithmetic
    on the decimal digits and exponents: no division, so `8e30083039` is read as it is."""
    from decimal import Decimal

    x, k = Decimal(str(value)), Decimal(str(factor))
    if x == 0:
        return True
    sign_x, digits_x, exp_x = x.as_tuple()
    _, digits_k, exp_k = k.as_tuple()
    mx, mk = int("".join(map(str, digits_x))), int("".join(map(str, digits_k)))
    shift = exp_x - exp_k  # value / factor = (mx / mk) * 10**shift
    if shift >= 0:
        return mx % mk * pow(10, shift, mk) % mk == 0
    if -shift > len(digits_x) + len(digits_k):
        return False  # mx < mk * 10**-shift: a non-zero fraction
    return mx % (mk * 10 ** -shift) == 0


def _exact_multiple_of(validator, factor, instance, schema):
    """jsonschema's `multipleOf`, exact for numbers of any size (`is_exact_multiple`)."""
    import jsonschema

    if isinstance(instance, float) and instance in (float("inf"), float("-inf")):
        raise OverflowError("a number beyond float range")  # read again as Decimal
    if validator.is_type(instance, "number") and not is_exact_multiple(instance, factor):
        yield jsonschema.ValidationError(f"{instance!r} is not a multiple of {factor}")


def validation_error(schema, text: bytes) -> Optional[str]:
    """None when `text` parses as JSON and validates under `schema` (formats checked), else why not."""
    import jsonschema

    from decimal import Context, Decimal, localcontext

    try:
        validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator = jsonschema.validators.extend(validator, {"multipleOf": _exact_multiple_of})
        checker = validator(schema, format_checker=validator.FORMAT_CHECKER)
        try:
            error = jsonschema.exceptions.best_match(checker.iter_errors(json.loads(text)))
        except (OverflowError, ArithmeticError):
            # a number beyond float range (1e400) read as inf: read the value and the schema's
            # numbers exactly (multipleOf by `is_exact_multiple`, which needs no division)
            exact = validator(json.loads(json.dumps(schema), parse_float=Decimal),
                              format_checker=validator.FORMAT_CHECKER)
            with localcontext(Context(prec=100_000, Emax=10**9, Emin=-10**9)):
                error = jsonschema.exceptions.best_match(exact.iter_errors(json.loads(text, parse_float=Decimal)))
    except (ValueError, jsonschema.exceptions.SchemaError, jsonschema.exceptions.RefResolutionError) as err:
        return str(err)
    except Exception as err:  # noqa: BLE001  (the validator itself failed: reported, never a crash)
        return f"the validator failed: {type(err).__name__}: {err}"
    return None if error is None else str(error.message)


def open_results(path: Optional[str]):
    """A results file opened to append one JSON line per record (None without a path); a last
    line cut short by a stopped run is ended first, so the next record starts its own."""
    if not path:
        return None
    sink = open(path, "a", encoding="utf-8")
    if sink.tell() > 0:
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                sink.write("\n")
    return sink


def bench_jsonschemabench(data_dir: str, sample: Optional[int] = None, subsets=None, vocab: str = "llama3",
                          seed: int = 0, out: Callable[[str], None] = print, progress: bool = True,
                          timeout: Optional[float] = 60.0, jit: bool = True, jobs: int = 1,
                          results: Optional[str] = None, report_only: bool = False,
                          rerun: Optional[str] = None) -> int:
    """Run the benchmark (module docstring) and print its table; `results` keeps one JSON line per
    schema, so an interrupted run goes on where it stopped (the last line of a schema counts).
    `report_only`: run nothing, print the table of the schemas `results` already holds.
    `rerun` ("failures", "invalid" or "both"): run again the recorded xg2ref compile failures and
    timeouts, the invalid outputs, or both (after a fix, or with a longer `timeout`)."""
    from ..diff.report import ProgressBar

    data = load_schemas(data_dir, subsets or SUBSETS, sample, seed)
    # (a line cut short by a stopped run is skipped: that schema runs again)
    done_records = {(rec["subset"], rec["uid"]): rec for rec in read_json_lines(results)}
    if rerun:
        again = {key for key, rec in done_records.items()
                 if (rerun in ("failures", "both") and (not rec["ours"] or rec["timed_out"]))
                 or (rerun in ("invalid", "both") and rec["valid"] is False)}
        done_records = {key: rec for key, rec in done_records.items() if key not in again}
    todo = [(name, uid, schema) for name, rows in data.items() for uid, schema in rows
            if (name, uid) not in done_records]
    random.Random(seed).shuffle(todo)  # a stopped run is still a fair sample of every subset
    wanted = {(name, uid) for name, rows in data.items() for uid, _ in rows}
    if report_only:
        todo, wanted = [], wanted & set(done_records)
    records = [rec for key, rec in done_records.items() if key in wanted]
    bar = ProgressBar(len(wanted), enabled=progress)
    bar.update(len(records))
    sink = open_results(results)
    try:
        for rec in worker_records(_Worker, (vocab, jit, timeout, seed), todo, jobs, out):
            records.append(rec)
            if sink:
                sink.write(json.dumps(rec) + "\n")
                sink.flush()
            bar.update(len(records), f"{rec['subset']} {rec['uid']}")
    finally:
        if sink:
            sink.close()
        bar.close()
    rows = summarize(records, list(data))
    with_xgrammar = any(rec["theirs"] is not None for rec in records)
    out(format_table(rows, with_xgrammar))
    failures = Counter()
    for row in rows:
        failures.update(row.failures)
    if failures:
        out("\nxg2ref compile failures by class:")
        for text, n in failures.most_common():
            out(f"  {n:5d}  {text}")
    peaks = [(rec["peak_mib"], rec["subset"], rec["uid"]) for rec in records if rec.get("peak_mib") is not None]
    if peaks:
        values = np.array([p[0] for p in peaks])
        top = max(peaks)
        out(f"\npeak traced memory per schema (tracemalloc: xg2ref's numpy arrays and Python objects through "
            f"the compile and the walk; xgrammar's C++ heap is not traced): p50 {np.percentile(values, 50):.1f} MiB, p99 {np.percentile(values, 99):.1f} MiB, "
            f"max {top[0]:.1f} MiB ({top[1]} {top[2]})")
    bad = [(row.name, *b) for row in rows for b in row.bad_outputs]
    if bad:
        out("\ninvalid outputs:")
        for name, uid, text, why in bad:
            out(f"  {name} {uid}: {text!r}\n      {why}")
    return 0


def summarize(records: list, subsets: list) -> list:
    """Per-subset rows, in `subsets` order, from per-schema records."""
    rows = {name: SubsetRow(name) for name in subsets}
    for rec in sorted(records, key=lambda r: str(r["uid"])):
        row = rows[rec["subset"]]
        row.schemas += 1
        row.theirs += bool(rec["theirs"])
        row.ours += rec["ours"]
        row.timed_out += rec["timed_out"]
        row.seconds += rec.get("seconds", 0.0)
        if rec["failure"]:
            row.failures[rec["failure"]] += 1
        row.finished += rec["finished"]
        if rec["valid"] is True:
            row.valid += 1
        elif rec["valid"] is False:
            row.invalid += 1
            row.bad_outputs.append((rec["uid"], rec["text"], rec["why"]))
    return list(rows.values())


def format_table(rows: list, with_xgrammar: bool) -> str:
    head = (f"{'subset':<16}{'schemas':>8}{'xgrammar':>10}{'xg2ref':>8}{'timeout':>9}{'finished':>10}{'valid':>7}"
            f"{'invalid':>9}{'validity':>10}{'seconds':>9}")
    lines = [head, "-" * len(head)]
    totals = SubsetRow("total")
    for row in rows + [totals]:
        if row is not totals:
            for f in ("schemas", "theirs", "ours", "timed_out", "finished", "valid", "invalid", "seconds"):
                setattr(totals, f, getattr(totals, f) + getattr(row, f))
        rate = f"{100 * row.valid / row.finished:.1f}%" if row.finished else "-"
        theirs = f"{row.theirs}" if with_xgrammar else "-"
        lines.append(f"{row.name:<16}{row.schemas:>8}{theirs:>10}{row.ours:>8}{row.timed_out:>9}{row.finished:>10}"
                     f"{row.valid:>7}{row.invalid:>9}{rate:>10}{row.seconds:>9.1f}")
    lines.append("(xgrammar, xg2ref: schemas each engine compiles; timeout: xg2ref compiles past --timeout seconds, "
                 "not counted as compiled; validity = valid / finished walks, jsonschema with formats; "
                 "seconds: both engines' compiles and the walks, summed over the subset's schemas)")
    return "\n".join(lines)
