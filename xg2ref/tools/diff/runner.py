"""The differential runner behind `xg2ref diff`: xg2ref vs its brute-force oracle vs xgrammar.

DESIGN.md, "Who uses it": engine engineers run xg2ref beside a production engine on the same
grammar, vocabulary and tokens and compare every answer. For each case of the suite:

1. String verdicts. Strings are the case's samples, `sentences()` draws and one `mutate()`d
   near miss of each. Every engine reads each string byte by byte, which gives its verdict on
   every prefix: "still a prefix of a sentence?" and "a whole sentence?". Viable prefixes are
   closed under taking prefixes, so one number, the longest viable prefix, carries all the
   prefix verdicts; the oracle finds it by binary search. The oracle also answers "a whole
   sentence?" at the end of the viable part and at a few random cut points, and the whole
   string goes through `accept_bytes` once (all or nothing). Strings longer than
   `max_oracle_bytes` are compared with the reference only (the "capped" column).
2. Token traces. A sentence is tokenized with the vocabulary's own tokenizer (quicktok for the
   quicktok vocabularies, greedy longest match otherwise) and replayed token by token. At every
   step the FULL xg2ref mask is compared with the full reference mask, and the oracle judges a
   sample of ids: every id where the two engines differ, `oracle_sample` random allowed and as
   many random rejected ids, the next token, the stop and special tokens. After the last token
   the stop tokens must be allowed iff the text is complete; finally the trace rolls back to a
   random step, and the mask there must be the mask first seen at that step.

3. Steered traces (`n_steered`, with a reference): tokens drawn from the reference engine's own
   mask at each step (half the time one that xg2ref refuses), so that the reference's
   over-acceptance is walked into, not only met on paths xg2ref chose; masks compared and
   differences judged as above.

The first few disagreements of each case are kept as `Disagreement`s (xg2ref/tools/diff/report.py),
with each engine's verdict and a command line that replays them.

What it leaves out: shrinking beyond the first disagreement of a string or trace. Any `Engine`
(xg2ref/oracle/engines.py, oracle/other_engines.py) can be the reference; `xg2ref diff FILE...`
runs one pass per engine (xg2ref/tools/diff/user.py).
"""

from __future__ import annotations

import os
import random
import time
import zlib
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from typing import Optional, Sequence, Union

from .report import CaseResult, DiffReport, ProgressBar
from .checks import CaseRun, Context, DiffOptions, greedy_encoder, quicktok_encoder
from ...oracle.engines import Engine, PDAEngine, XG2RefEngine, XGrammarEngine, xgrammar_version
from ...suite import Case, load_cases
from ...tokenizer_info import QUICKTOK_STOP_TOKENS, TokenizerInfo
from ..cluster import RaySpec


QUICK = DiffOptions(n_strings=3, n_traces=1, max_trace_tokens=12, oracle_sample=4, max_oracle_bytes=96)


def _tokenizer_info(vocab: Union[str, TokenizerInfo]) -> TokenizerInfo:
    if isinstance(vocab, TokenizerInfo):
        return vocab
    if vocab in QUICKTOK_STOP_TOKENS:
        return TokenizerInfo.from_quicktok(vocab)
    if os.path.exists(vocab):
        return TokenizerInfo.from_huggingface_file(vocab)
    raise ValueError(f"unknown vocabulary {vocab!r}: a quicktok name ({', '.join(QUICKTOK_STOP_TOKENS)}) "
                     "or a tokenizer.json path")


def _context(vocab, against, engine, opts: DiffOptions, seed: int) -> Context:
    info = _tokenizer_info(vocab)
    name = info.name if info.name in QUICKTOK_STOP_TOKENS else None
    encoder = quicktok_encoder(name) if name else greedy_encoder(info)
    reference = None
    if against == "pda":  # XGrammar-1's executor (xg2ref/baselines/pda/), a second in-house engine
        reference = PDAEngine(info)
    elif isinstance(against, str):
        if against != "xgrammar":
            raise ValueError(f"unknown reference engine {against!r} (only 'xgrammar', 'pda' or None)")
        reference = XGrammarEngine.from_tokenizer_info(info)
    elif against is not None:
        reference = against
    return Context(info=info, engine=engine if engine is not None else XG2RefEngine(info), reference=reference,
                   encoder=encoder, options=opts, seed=seed)


def run_case(case: Case, ctx: Context, progress: Optional[ProgressBar] = None) -> CaseResult:
    """Run one case (string verdicts, then token traces); never raises for a broken case."""
    start = time.perf_counter()
    rng = random.Random(ctx.seed * 1_000_003 + zlib.crc32(case.name.encode()))
    try:
        result = CaseRun(case, ctx, rng, progress).run()
    except Exception as err:  # a crash is reported as a failed case, not a traceback
        result = CaseResult(case.name, error=f"{type(err).__name__}: {err}")
    result.seconds = time.perf_counter() - start
    return result


def _worker(args) -> CaseResult:
    case, vocab, against, opts, seed = args
    return run_case(case, _worker_context(vocab, against, opts, seed))


_WORKER_CONTEXT: dict = {}


def _worker_context(vocab, against, opts, seed) -> Context:
    key = (vocab, against, opts, seed)
    if key not in _WORKER_CONTEXT:
        _WORKER_CONTEXT.clear()
        _WORKER_CONTEXT[key] = _context(vocab, against, None, opts, seed)
    return _WORKER_CONTEXT[key]


def run_diff(cases: Optional[Sequence[Union[str, Case]]] = None, against: Union[str, Engine, None] = "xgrammar",
             vocab: Union[str, TokenizerInfo] = "llama3", seed: int = 0, *, options: Optional[DiffOptions] = None,
             n_strings: Optional[int] = None, n_traces: Optional[int] = None,
             max_trace_tokens: Optional[int] = None, oracle_sample: Optional[int] = None,
             progress: bool = True, engine: Optional[Engine] = None, jobs: int = 1) -> DiffReport:
    """Compare xg2ref (or `engine`) with the brute-force oracle and with `against`.

    Parameters
    ----------
    cases : names or `Case`s of the suite; None runs the whole suite.
    against : "xgrammar", another `Engine`, or None (oracle only).
    vocab : a quicktok name, a tokenizer.json path, or a `TokenizerInfo`.
    engine : the engine under test; defaults to `XG2RefEngine` over the vocabulary.
    jobs : worker processes (cases run in parallel; only with the default engine and a named
        reference and vocabulary), or a `RaySpec` (xg2ref/tools/cluster.py): the cases on Ray
        actors, one per CPU, each building its engines and vocabulary once (`vocab` may then be
        a TokenizerInfo, and `against` any name other_engines.make_engine knows).

    Example: run_diff(["list"], against=None, n_strings=2, n_traces=1).exit_status() == 0
    """
    opts = options or DiffOptions()
    overrides = {k: v for k, v in dict(n_strings=n_strings, n_traces=n_traces, max_trace_tokens=max_trace_tokens,
                                         oracle_sample=oracle_sample).items() if v is not None}
    opts = DiffOptions(**{**opts.__dict__, **overrides})
    case_list = load_cases() if cases is None else [k for c in cases for k in ([c] if isinstance(c, Case) else load_cases([c]))]
    start = time.perf_counter()
    bar = ProgressBar(len(case_list) * (2 + opts.n_traces), enabled=progress)
    on_ray = isinstance(jobs, RaySpec)
    parallel = not on_ray and jobs > 1 and len(case_list) > 1 and engine is None \
        and isinstance(against, (str, type(None))) and isinstance(vocab, str)
    if on_ray:
        if engine is not None or not isinstance(against, (str, type(None))):
            raise ValueError("a diff on Ray names its engines (the actors build them): no Engine objects")
        results = _run_ray(case_list, vocab, against, opts, seed, jobs, bar)
    elif parallel:
        results = _run_parallel(case_list, vocab, against, opts, seed, jobs, bar)
    else:
        ctx = _context(vocab, against, engine, opts, seed)
        results = [run_case(c, ctx, bar) for c in case_list]
    bar.close()
    reference = against if isinstance(against, str) else getattr(against, "name", None)
    info_name = vocab if isinstance(vocab, str) else (vocab.name or "custom")
    return DiffReport(cases=results, reference=reference, vocab=info_name, seed=seed, options=opts.__dict__,
                      seconds=time.perf_counter() - start,
                      reference_version=xgrammar_version() if reference == "xgrammar" else None)


def _largest_first(cases: list) -> list:
    """Case indices, the largest grammars first, so that one slow case does not start last."""
    return sorted(range(len(cases)), key=lambda i: -len(cases[i].text))


def _in_order(cases: list, opts: DiffOptions, bar: ProgressBar, where: str, finished) -> list:
    """The results of `finished` ((index, result) pairs as cases end) in case order, the bar
    moved on as each ends."""
    per_case = 2 + opts.n_traces
    results: list = [None] * len(cases)
    bar.update(0, f"{len(cases)} cases on {where}")
    for done, (i, result) in enumerate(finished, 1):
        results[i] = result
        bar.update(done * per_case, cases[i].name)
    return results


def _run_parallel(cases: list, vocab: str, against, opts: DiffOptions, seed: int, jobs: int,
                  bar: ProgressBar) -> list:
    """Cases in `jobs` spawned processes (each loads the vocabulary once), results in order."""
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(_worker, (cases[i], vocab, against, opts, seed)): i for i in _largest_first(cases)}
        return _in_order(cases, opts, bar, f"{jobs} processes",
                         ((futures[f], f.result()) for f in as_completed(futures)))


class RayCases:
    """What a Ray actor holds for `run_diff(..., jobs=RaySpec(...))`: the vocabulary, the engines
    and the oracle built once, then one case per job (the reference by name: "xgrammar", "pda",
    or any engine other_engines.make_engine knows)."""

    isolated = True

    def __init__(self, vocab, against: Optional[str], opts: DiffOptions, seed: int):
        if against not in (None, "xgrammar", "pda"):
            from ...oracle.other_engines import make_engine

            against = make_engine(against, _tokenizer_info(vocab))
        self.ctx = _context(vocab, against, None, opts, seed)

    def run(self, index: int, case: Case) -> tuple:
        return index, run_case(case, self.ctx)

    @staticmethod
    def failed_record(args: tuple, job: tuple, why: str) -> tuple:
        return job[0], CaseResult(job[1].name, error=why)


def _run_ray(cases: list, vocab, against: Optional[str], opts: DiffOptions, seed: int, spec: RaySpec,
             bar: ProgressBar) -> list:
    """Cases on Ray actors (xg2ref/tools/cluster.py), results in order."""
    from ..cluster import ray_records

    jobs = [(i, cases[i]) for i in _largest_first(cases)]
    return _in_order(cases, opts, bar, "Ray", ray_records(RayCases, (vocab, against, opts, seed), jobs, spec))
