"""`xg2ref bench concurrency`: the thread-safety contract (README, "Threads") under load, beside
xgrammar 0.2.8 in the same process.

The contract is xgrammar's: a `GrammarCompiler` may be called from any number of threads, a
`CompiledGrammar` may back any number of matchers used in any threads at once, one
`GrammarMatcher` is used by one thread at a time, and `BatchGrammarMatcher` fills in parallel.
Three patterns exercise it, each for `--seconds` per engine, on json-mode-eval schemas and their
gold completions (a real vocabulary, `--vocab`):

    shared     `--threads` threads, each walking matchers of its own over one CompiledGrammar per
               schema (compiled once, shared by every thread), filling a mask before every token
    compiles   the same, but every walk compiles its schema again through one kept compiler (its
               caches shared: the second compile of a schema is a cache hit, the first ones race)
    batch      `BatchGrammarMatcher(threads)` filling a batch of matchers, one row each, at
               staggered positions; a matcher that reaches its end starts over

Every mask is compared with a serial walk of the same engine (computed first, one thread, a
compiler of its own), so a wrong mask, an exception or a crash is counted, not hidden. The table
gives masks per second, masks checked, wrong masks and exceptions per pattern and engine, and the
scaling of `shared`: masks per second with `--threads` threads over one thread. Those rates
include each walk's own work (a copy and a comparison of every mask, under the GIL).

Then SCALING, the parallel speed of the fills themselves: a batch of 64 matchers with their
entries built, filled by `BatchGrammarMatcher(1)` and by `BatchGrammarMatcher(--threads)`, only
the fills timed, the two widths taking turns (`fill_rates`), beside xgrammar's in the same run, and the machine's own
scaling (`machine_scaling`: a compute kernel in cache, on as many threads): on a shared or
virtual machine two threads may not get two cores' worth, and no fill scales past that.

What it leaves out: processes (a crash ends the run; rerun a pattern alone to see which).
"""

from __future__ import annotations

import gc
import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
from numba import njit

from ...compiler import GrammarCompiler
from ...matcher import GrammarMatcher
from ...tokenizer_info import TokenizerInfo
from .mask import _xgrammar_info

PATTERNS = ("shared", "compiles", "batch")


@dataclass
class Row:
    pattern: str
    engine: str
    threads: int
    masks: int = 0
    wrong: int = 0
    errors: int = 0
    seconds: float = 0.0
    first_error: str = ""

    @property
    def rate(self) -> float:
        return self.masks / self.seconds if self.seconds else 0.0


class Engine:
    """One engine's module (xg2ref or xgrammar), its vocabulary and the serial masks."""

    def __init__(self, name: str, module, info, docs: list):
        self.name, self.module, self.info, self.docs = name, module, info, docs
        self.vocab_size = info.vocab_size
        self.serial: list = []  # per doc: the bitmask rows (int32) before each token and after the last
        compiler = self.compiler(cache=False)
        for schema, tokens in docs:
            self.serial.append(self.walk(compiler.compile_json_schema(schema), tokens))

    def fresh_grammars(self) -> list:
        """Each doc's schema compiled anew (JIT entries not built yet: the threads race for them)."""
        compiler = self.compiler(cache=False)
        return [compiler.compile_json_schema(schema) for schema, _ in self.docs]

    def compiler(self, cache: bool = True):
        kwargs = {"max_threads": 1} if self.name == "xgrammar" else {}
        return self.module.GrammarCompiler(self.info, cache_enabled=cache, **kwargs)

    def walk(self, compiled, tokens: list) -> list:
        """The masks (int32 rows) before each token and after the last; ends at a refused token."""
        m = self.module.GrammarMatcher(compiled)
        bitmask = self.module.allocate_token_bitmask(1, self.vocab_size)
        out = []
        for t in tokens + [None]:
            m.fill_next_token_bitmask(bitmask)
            out.append(np.asarray(bitmask)[0].copy())
            if t is not None and not m.accept_token(t):
                break
        return out

    def check(self, compiled, i: int) -> tuple[int, int]:
        """(masks, wrong masks) of a walk of doc i against the serial one."""
        rows, want = self.walk(compiled, self.docs[i][1]), self.serial[i]
        return len(rows), sum(not np.array_equal(a, b) for a, b in zip(rows, want)) + abs(len(rows) - len(want))


def _run_threads(threads: int, seconds: float, body: Callable[[int, Row], None], row: Row) -> Row:
    """`body(thread, row)` repeated in `threads` threads until `seconds` have passed; counts merged."""
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def worker(k: int) -> None:
        mine = Row(row.pattern, row.engine, threads)
        while time.perf_counter() < stop:
            try:
                body(k, mine)
            except Exception as err:  # counted: a wrong answer of the contract
                mine.errors += 1
                mine.first_error = mine.first_error or f"{type(err).__name__}: {err}"[:160]
        with lock:
            row.masks, row.wrong, row.errors = row.masks + mine.masks, row.wrong + mine.wrong, row.errors + mine.errors
            row.first_error = row.first_error or mine.first_error

    start = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    row.seconds = time.perf_counter() - start
    return row


def run_shared(engine: Engine, threads: int, seconds: float) -> Row:
    compiled = engine.fresh_grammars()
    turn = [0] * threads

    def body(k: int, row: Row) -> None:
        i = (k + turn[k]) % len(engine.docs)
        turn[k] += 1
        masks, wrong = engine.check(compiled[i], i)
        row.masks, row.wrong = row.masks + masks, row.wrong + wrong

    return _run_threads(threads, seconds, body, Row("shared", engine.name, threads))


def run_compiles(engine: Engine, threads: int, seconds: float) -> Row:
    kept = engine.compiler(cache=True)
    turn = [0] * threads

    def body(k: int, row: Row) -> None:
        i = (3 * k + turn[k]) % len(engine.docs)
        turn[k] += 1
        masks, wrong = engine.check(kept.compile_json_schema(engine.docs[i][0]), i)
        row.masks, row.wrong = row.masks + masks, row.wrong + wrong

    return _run_threads(threads, seconds, body, Row("compiles", engine.name, threads))


class _Slots:
    """A batch of matchers, matchers[s] walking doc docs[s] of `compiled`, started `lead`
    tokens in (staggered); `where[s]` is its position in its doc's gold tokens."""

    def __init__(self, engine: Engine, compiled: list, count: int, stagger: int):
        self.engine, self.docs, self.matchers, self.where = engine, [], [], []
        for k in range(count):
            i = k % len(engine.docs)
            m, tokens = engine.module.GrammarMatcher(compiled[i]), engine.docs[i][1]
            lead = min(k % stagger, len(tokens))
            for t in tokens[:lead]:
                m.accept_token(t)
            self.docs.append(i)
            self.matchers.append(m)
            self.where.append(lead)

    def step(self, rows) -> int:
        """Each matcher takes its next gold token (starting over at its doc's end); with `rows`
        (the batch's bitmask rows before the step), the wrong masks among them."""
        wrong = 0
        for s, i in enumerate(self.docs):
            if rows is not None:
                wrong += not np.array_equal(rows[s], self.engine.serial[i][self.where[s]])
            tokens = self.engine.docs[i][1]
            if self.where[s] < len(tokens) and self.matchers[s].accept_token(tokens[self.where[s]]):
                self.where[s] += 1
            else:
                self.matchers[s].reset()
                self.where[s] = 0
        return wrong


def run_batch(engine: Engine, threads: int, seconds: float) -> Row:
    mod = engine.module
    slots = _Slots(engine, engine.fresh_grammars(), 4 * threads, 7)
    matchers = slots.matchers
    batch = mod.BatchGrammarMatcher(threads)
    bitmask = mod.allocate_token_bitmask(len(matchers), engine.vocab_size)
    row = Row("batch", engine.name, threads)
    stop, start = time.perf_counter() + seconds, time.perf_counter()
    while time.perf_counter() < stop:
        try:
            batch.batch_fill_next_token_bitmask(matchers, bitmask)
        except Exception as err:
            row.errors += 1
            row.first_error = row.first_error or f"{type(err).__name__}: {err}"[:160]
            break
        row.masks += len(matchers)
        row.wrong += slots.step(np.asarray(bitmask))
    row.seconds = time.perf_counter() - start
    return row


RUNNERS = {"shared": run_shared, "compiles": run_compiles, "batch": run_batch}


BLOCK = 20  # SCALING: rounds of one width before the other's turn


def fill_rates(engine: Engine, threads: int, seconds: float, batch: int = 64) -> tuple[float, float, int]:
    """SCALING (module docstring): masks per second of `BatchGrammarMatcher(1)` and of
    `BatchGrammarMatcher(threads)` filling a batch of `batch` matchers (the docs' grammars,
    staggered starts) with their entries built (each doc walked once first), once xg2ref's
    builder thread has nothing left to build. The two take turns, BLOCK rounds each, for
    `seconds` in all, so both meet the same rows and the same moments of a shared machine, each
    in its steady state (a thread's caches hold what it filled last); only the fills
    are timed; after each round every matcher takes its next gold token (starting over at its
    end). Returns (one thread's rate, `threads` threads' rate, wrong masks): every mask of the
    first 2 * `batch` rounds is compared with the serial walk."""
    mod = engine.module
    compiled = engine.fresh_grammars()
    for i, c in enumerate(compiled):
        engine.walk(c, engine.docs[i][1])  # (entries built: the walk's masks are the serial ones)
    if engine.name == "xg2ref":  # its builder thread builds the rest meanwhile (mask/background.py), and
        # would go on with the grammars of the patterns before, dropped but not yet collected
        from ...mask import background

        gc.collect()
        background.BUILDER.wait_idle(120)
    slots = _Slots(engine, compiled, batch, 11)
    fillers = (mod.BatchGrammarMatcher(1), mod.BatchGrammarMatcher(threads))
    bitmask = mod.allocate_token_bitmask(batch, engine.vocab_size)
    spent, rounds, wrong = [0.0, 0.0], [0, 0], 0
    while sum(spent) < seconds:
        k = (rounds[0] + rounds[1]) // BLOCK % 2
        start = time.perf_counter()
        fillers[k].batch_fill_next_token_bitmask(slots.matchers, bitmask)
        spent[k] += time.perf_counter() - start
        wrong += slots.step(np.asarray(bitmask) if rounds[k] < 2 * batch else None)
        rounds[k] += 1
    return batch * rounds[0] / spent[0], batch * rounds[1] / max(spent[1], 1e-9), wrong


@njit(cache=True, nogil=True)
def _busy(words, rounds):
    """A kernel of the fill's kind (int32 words in cache, read and written), for the machine's
    own scaling (`machine_scaling`)."""
    for k in range(rounds):
        for w in range(words.shape[0]):
            words[w] = (words[w] * 31 + w) ^ k
    return words[0]


def machine_scaling(threads: int, repeats: int = 20) -> float:
    """What this machine gives `threads` threads at once: `_busy` over 16 KB of words each (a
    Llama-3 row), the best of `repeats` runs of all threads at once against one thread's run
    of the same total, one after another. A shared or busy machine gives less than `threads`;
    the fills cannot scale better than this."""
    rows = [np.arange(4096, dtype=np.int32) for _ in range(threads)]
    _busy(rows[0], 1)
    one = many = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for r in rows:
            _busy(r, 2000)
        one = min(one, time.perf_counter() - start)
        pool = [threading.Thread(target=_busy, args=(r, 2000)) for r in rows]
        start = time.perf_counter()
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        many = min(many, time.perf_counter() - start)
    return one / many


def load_docs(data_dir: str, info: TokenizerInfo, vocab: str, limit: int) -> list:
    """(schema text, gold token ids) of json-mode-eval items whose completion the schema takes."""
    from ..diff.checks import quicktok_encoder
    from .token_classes_grammars import json_mode_eval_schemas

    encode = quicktok_encoder(vocab)
    compiler = GrammarCompiler(info, cache_enabled=False)
    docs = []
    for _, schema, completion in json_mode_eval_schemas(data_dir):
        schema, tokens = json.dumps(schema), encode(completion.encode())
        m = GrammarMatcher(compiler.compile_json_schema(schema))
        if tokens and all(m.accept_token(t) for t in tokens):
            docs.append((schema, tokens))
        if len(docs) >= limit:
            break
    return docs


def bench_concurrency(data_dir: str, vocab: str = "llama3", threads: int = 8, seconds: float = 10.0,
                      limit: int = 12, patterns=PATTERNS, scaling: bool = True, batch: int = 64) -> int:
    """Run the patterns (module docstring) for xg2ref and xgrammar; print the table. Exit 1 if any
    engine gave a wrong mask or raised."""
    import xg2ref

    info = TokenizerInfo.from_quicktok(vocab)
    docs = load_docs(data_dir, info, vocab, limit)
    engines = [Engine("xg2ref", xg2ref, info, docs)]
    try:
        import xgrammar

        engines.append(Engine("xgrammar", xgrammar, _xgrammar_info(xgrammar, info), docs))
    except ImportError:
        print("xgrammar is not installed: xg2ref alone")
    rows = []
    for pattern in patterns:
        for engine in engines:
            rows.append(RUNNERS[pattern](engine, threads, seconds))
            if pattern == "shared":
                rows.append(run_shared(engine, 1, seconds))
    print(f"{len(docs)} json-mode-eval schemas, {vocab}, {threads} threads, {seconds:g} s per run, "
          f"{os.cpu_count()} cores")
    print(f"{'pattern':<9} {'engine':<9} {'threads':>7} {'masks/s':>9} {'masks':>8} {'wrong':>6} {'errors':>6}")
    for r in rows:
        print(f"{r.pattern:<9} {r.engine:<9} {r.threads:>7} {r.rate:>9,.0f} {r.masks:>8,} {r.wrong:>6} {r.errors:>6}"
              + (f"  {r.first_error}" if r.first_error else ""))
    for engine in engines if "shared" in patterns else ():
        many = next(r for r in rows if r.pattern == "shared" and r.engine == engine.name and r.threads == threads)
        one = next(r for r in rows if r.pattern == "shared" and r.engine == engine.name and r.threads == 1)
        if one.rate:
            print(f"scaling, {engine.name}: {threads} threads give {many.rate / one.rate:.2f}x the masks/s of one")
    wrong = 0
    if scaling:
        print(f"fills with entries built, a batch of {batch} matchers, only the fills timed (1 and {threads} threads "
              f"taking turns, {2 * seconds:g} s in all):")
        print(f"{'engine':<9} {'1 thread':>12} {f'{threads} threads':>12} {'scaling':>8}")
        for engine in engines:
            one, many, w = fill_rates(engine, threads, 2 * seconds, batch)
            wrong += w
            print(f"{engine.name:<9} {one:>12,.0f} {many:>12,.0f} {many / one:>7.2f}x" + (f"  {w} wrong masks" if w else ""))
        print(f"this machine: {threads} threads of a compute kernel on 16 KB each give "
              f"{machine_scaling(threads):.2f}x one thread's rate (the ceiling of the fills' scaling)")
    return 1 if wrong or any(r.wrong or r.errors for r in rows) else 0

