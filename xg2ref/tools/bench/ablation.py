"""`xg2ref bench ablation`: XGrammar-2 §4.4, Table 4, each optimization switched on in turn.

Four `GrammarCompiler` configurations, each one the previous plus one mechanism:

    Baseline                    every entry built at compile time, no sharing, repetitions unrolled
    + JIT                       entries built on first use (§3.5)
    + cross-grammar cache       entries shared between grammars through FSM hashes (§3.3)
    + repetition compression    repetitions above the threshold counted, not unrolled (§3.6)

over a seeded JSONSchemaBench sample (`--sample` schemas per subset). One compiler per
configuration serves the whole sample (the cross-grammar cache lives in it). For every schema:
the preprocessing time (compile; for JIT the entries come later, inside the masks), then the
same token sequence replayed in every configuration, timing each `fill_next_token_bitmask`.
The sequence is a seeded walk under the baseline's masks (`--tokens` tokens at most); every
other configuration must produce the same mask at every step (correctness first). Schemas
that fail to compile, or pass `--timeout` seconds, in any configuration are counted and left
out of the means.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from .jsonschemabench import SUBSETS, time_limit, TimedOut, load_schemas
from ...bitmask import allocate_token_bitmask
from ...compiler import GrammarCompiler
from ...matcher import GrammarMatcher
from ...tokenizer_info import TokenizerInfo

CONFIGS = (
    ("Baseline", dict(jit=False, cross_grammar_cache=False, repetition_compression=False)),
    ("+JIT", dict(jit=True, cross_grammar_cache=False, repetition_compression=False)),
    ("+cross-grammar cache", dict(jit=True, cross_grammar_cache=True, repetition_compression=False)),
    ("+repetition compression", dict(jit=True, cross_grammar_cache=True, repetition_compression=True)),
)


@dataclass
class AblationRow:
    name: str
    preprocess_ms: float  # mean compile time per schema
    mask_us: float  # mean time per mask
    schemas: int
    masks: int


def _walk(compiled, stops: np.ndarray, rng: random.Random, max_tokens: int) -> tuple[list, list]:
    """A seeded walk: (token ids, packed masks) along it."""
    m = GrammarMatcher(compiled)
    ids, masks = [], []
    for _ in range(max_tokens):
        mask = m.compute_bool_mask()
        masks.append(np.packbits(mask))
        allowed = np.flatnonzero(mask & ~stops)
        if not len(allowed):
            break
        t = int(allowed[rng.randrange(len(allowed))])
        assert m.accept_token(t)
        ids.append(t)
    return ids, masks


def _replay(compiled, ids: list, masks: list, name: str, uid: str) -> list:
    """Mask times (seconds) along `ids`, checking each mask against `masks`."""
    m = GrammarMatcher(compiled)
    bitmask = allocate_token_bitmask(1, compiled.tokenizer_info.vocab_size)
    times = []
    for step, want in enumerate(masks):
        start = time.perf_counter()
        m.fill_next_token_bitmask(bitmask)
        times.append(time.perf_counter() - start)
        if not np.array_equal(np.packbits(m.compute_bool_mask()), want):
            raise AssertionError(f"{name}: schema {uid}, step {step}: the mask differs from the baseline's")
        if step < len(ids):
            assert m.accept_token(ids[step])
    return times


def bench_ablation(data_dir: str, vocab: str = "llama3", sample: int = 3, subsets=None, max_tokens: int = 40,
                   timeout: Optional[float] = 60.0, seed: int = 0, out: Callable[[str], None] = print) -> int:
    info = TokenizerInfo.from_quicktok(vocab)
    stops = np.zeros(info.vocab_size, dtype=np.bool_)
    stops[list(info.stop_token_ids)] = True
    schemas = [(uid, s) for rows in load_schemas(data_dir, subsets or SUBSETS, sample, seed).values()
               for uid, s in rows]
    GrammarCompiler(info, jit=True).compile_json_schema({"type": "string", "maxLength": 3})  # kernels warm
    compilers = [(name, GrammarCompiler(info, **cfg)) for name, cfg in CONFIGS]
    compile_ms = {name: [] for name, _ in CONFIGS}
    mask_s = {name: [] for name, _ in CONFIGS}
    skipped = 0
    for k, (uid, schema) in enumerate(schemas):
        per_config = []
        try:
            for name, compiler in compilers:
                with time_limit(timeout):
                    start = time.perf_counter()
                    compiled = compiler.compile_json_schema(schema)
                    per_config.append((name, compiled, (time.perf_counter() - start) * 1e3))
        except (TimedOut, Exception) as err:  # noqa: BLE001 - a schema any configuration cannot compile is left out
            skipped += 1
            out(f"  [{k + 1}/{len(schemas)}] {uid}: left out ({type(err).__name__})")
            continue
        ids, masks = _walk(per_config[0][1], stops, random.Random(f"{seed}/{uid}"), max_tokens)
        for name, compiled, ms in per_config:
            compile_ms[name].append(ms)
            mask_s[name].extend(_replay(compiled, ids, masks, name, uid))
        out(f"  [{k + 1}/{len(schemas)}] {uid}: " + ", ".join(f"{ms:.0f}" for _, _, ms in per_config) + " ms")
    rows = [AblationRow(name, float(np.mean(compile_ms[name])) if compile_ms[name] else float("nan"),
                        float(np.mean(mask_s[name])) * 1e6 if mask_s[name] else float("nan"),
                        len(compile_ms[name]), len(mask_s[name])) for name, _ in CONFIGS]
    out(format_table(rows, skipped))
    return 0


def format_table(rows: list, skipped: int = 0) -> str:
    head = f"{'optimization':<26} {'preprocessing ms':>17} {'':>10} {'mask µs':>9} {'':>10}"
    lines = [head, "-" * len(head)]
    prev = None
    for r in rows:
        if prev is None:
            lines.append(f"{r.name:<26} {r.preprocess_ms:>17.2f} {'':>10} {r.mask_us:>9.2f} {'':>10}")
        else:
            lines.append(f"{r.name:<26} {r.preprocess_ms:>17.2f} {_change(prev.preprocess_ms, r.preprocess_ms):>10} "
                         f"{r.mask_us:>9.2f} {_change(prev.mask_us, r.mask_us):>10}")
        prev = r
    lines.append(f"({rows[0].schemas} schemas, {rows[0].masks} masks per configuration; {skipped} left out; "
                 "each change is against the row above; one thread)")
    return "\n".join(lines)


def _change(before: float, after: float) -> str:
    if not before or not after or before != before or after != after:
        return ""
    return f"({before / after:.1f}x ↓)" if after <= before else f"({after / before:.1f}x ↑)"
