"""`xg2ref bench xg1-ablation`: XGrammar §4.3's ablation (its Table 3) on XGrammar-1's pushdown
automaton (xg2ref/baselines/pda/), each row the one above plus one optimization:

    PDA baseline                  Thompson's ε-NFA per rule, every token read per mask (with prefix reuse)
    + node merging                the merged machines (§3.4)
    + adaptive token mask cache   entries per stack-top state, Alg. 1 (§3.1)
    + rule inlining               rules that reference no rule inlined (§3.4)
    + context expansion           Alg. 2 (§3.2)

and, beside the table, the same cache over the Earley engine's DFAs, xg2ref's Earley engine with
its defaults, and xgrammar 0.2.8 (one thread, its cache off), all in this process; and the real
XGrammar-1, xgrammar 0.1.19, in its side process when `make peers` has built it (the same EBNF,
its fills timed inside that process; its masks are compared, a difference counted and not fatal:
specs/08 lists what they come from).

Workload (the paper's "CFG (unconstrained JSON)" task): the builtin JSON grammar, the Llama-3
vocabulary, the gold completions of json-mode-eval tokenized with the vocabulary's tokenizer.
The two rows without a cache read the whole vocabulary per mask, so they run on the first
`--slow-texts` completions, at most `--slow-steps` tokens each; the others on every completion.

Correctness first: a first pass compares every row's mask with the Earley engine's at every step
it will time (and xgrammar's, a documented xgrammar difference aside); a difference is printed
and the command exits 1 before anything is timed. Times: `fill_next_token_bitmask` only (the
paper's "mask generation time"), mean, p50 and p99 per token, and each row's speed-up over the
row above on the steps both ran; the rows take turns completion by completion, so a change of
the machine's speed during the run falls on all of them. Also printed: the cache's uncertain tokens without and with
context expansion (the paper: 1,134 -> 120), its bytes against one bitset per entry (160 MB ->
0.46 MB) and the share of the vocabulary's bytes its build read (30%).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Optional

import numpy as np

from ...baselines.pda import PDACompiler, PDAMatcher
from ...bitmask import allocate_token_bitmask
from ...compiler import GrammarCompiler
from ...matcher import GrammarMatcher
from ...testing import bitmask_to_bool_mask
from ...tokenizer_info import TokenizerInfo
from .mask import DEFAULT_DATA, json_mode_eval_texts

ROWS = (
    ("PDA baseline", dict(stage="nfa", mask_cache=False, inline="none", context_expansion=False), 65.776),
    ("+ node merging", dict(stage="merged", mask_cache=False, inline="none", context_expansion=False), 38.280),
    ("+ adaptive token mask cache", dict(stage="merged", mask_cache=True, inline="none", context_expansion=False),
     0.154),
    ("+ rule inlining", dict(stage="merged", mask_cache=True, inline="xg1", context_expansion=False), 0.035),
    ("+ context expansion", dict(stage="merged", mask_cache=True, inline="xg1", context_expansion=True), 0.018),
)
EXTRA = (("PDA cache over the Earley engine's DFAs", dict(stage="dfa", mask_cache=True, inline="xg1",
                                                          context_expansion=True)),)
DEFAULT_OUT = os.path.join("benchmarks", "xg1_ablation")


@dataclass
class AblationRow:
    name: str
    paper_ms: Optional[float] = None
    slow: bool = False  # runs on the slow subset only
    compile_ms: float = 0.0
    times_us: list = field(default_factory=list)  # per step, in the order of the steps
    stats: dict = field(default_factory=dict)

    def mean_us(self, steps: Optional[int] = None) -> float:
        values = self.times_us[:steps] if steps is not None else self.times_us
        return float(np.mean(values)) if values else float("nan")


class _Engine:
    """One row's compiled grammar and a matcher factory, with `mask(matcher, out)` and the
    bool mask of the last fill."""

    def __init__(self, kind: str, info: TokenizerInfo, grammar: str, options: Optional[dict] = None, xgr=None,
                 xinfo=None):
        self.kind, self.n = kind, info.vocab_size
        start = time.perf_counter()
        if kind == "pda":
            self.compiled = PDACompiler(info, **options).compile_grammar(grammar)
        elif kind == "earley":
            self.compiled = GrammarCompiler(info).compile_grammar(grammar)
        else:
            self.compiled = xgr.GrammarCompiler(xinfo, max_threads=1, cache_enabled=False).compile_grammar(grammar)
        self.compile_ms = (time.perf_counter() - start) * 1e3
        self.xgr = xgr
        self.bitmask = (xgr.allocate_token_bitmask(1, self.n) if kind == "xgrammar"
                        else allocate_token_bitmask(1, self.n).numpy())

    def matcher(self):
        if self.kind == "pda":
            return PDAMatcher(self.compiled)
        if self.kind == "earley":
            return GrammarMatcher(self.compiled)
        return self.xgr.GrammarMatcher(self.compiled)

    def bool_mask(self) -> np.ndarray:
        words = self.bitmask.numpy()[0] if self.kind == "xgrammar" else self.bitmask[0]
        return bitmask_to_bool_mask(words, self.n)


def _streams(texts: list, encode, limit_steps: Optional[int]) -> list:
    out = []
    for text in texts:
        ids = encode(text.encode("utf-8"))
        if ids is not None:
            out.append(ids[:limit_steps] if limit_steps else ids)
    return out


def _walk(engine: _Engine, streams: list, visit) -> None:
    """Fill a mask before each token of each stream and after the last; `visit(step, µs)` after
    each fill (it may read `engine.bool_mask()`)."""
    step = 0
    for ids in streams:
        m = engine.matcher()
        for k in range(len(ids) + 1):
            t0 = time.perf_counter()
            m.fill_next_token_bitmask(engine.bitmask)
            visit(step, (time.perf_counter() - t0) * 1e6)
            step += 1
            if k < len(ids) and not m.accept_token(ids[k]):
                raise AssertionError(f"token {ids[k]} rejected")


def reference_masks(engine: _Engine, streams: list) -> list:
    """The packed masks along the streams (the Earley engine's: the reference every row meets)."""
    masks: list = []
    _walk(engine, streams, lambda step, us: masks.append(np.packbits(engine.bool_mask())))
    return masks


def differences(engine: _Engine, streams: list, reference: list) -> int:
    """Steps whose mask differs from the reference's."""
    bad = [0]

    def visit(step, us):
        bad[0] += not np.array_equal(np.packbits(engine.bool_mask()), reference[step])

    _walk(engine, streams, visit)
    return bad[0]


def timed(engine: _Engine, streams: list) -> list:
    times: list = []
    _walk(engine, streams, lambda step, us: times.append(us))
    return times


def bench_xg1_ablation(data_dir: str = DEFAULT_DATA, vocab: str = "llama3", texts: Optional[int] = None,
                       slow_texts: int = 10, slow_steps: int = 64, grammar: str = "json",
                       out_dir: Optional[str] = DEFAULT_OUT, peer: bool = True, out=print) -> int:
    """Run the ablation on `grammar` (a bundled case whose sentences the completions are: "json",
    the builtin grammar, or "llama_json", llama.cpp's, closer to XGrammar-1's own); print its table
    (and write JSON and a PNG to `out_dir`). Returns 1 when some row's masks differ from the
    Earley engine's."""
    from ...suite import load_cases

    from ..diff.checks import quicktok_encoder
    from ...oracle.engines import import_xgrammar
    from .mask import _xgrammar_info

    xgr = import_xgrammar()
    text = load_cases([grammar])[0].text
    info = TokenizerInfo.from_quicktok(vocab)
    xinfo = _xgrammar_info(xgr, info)
    encode = quicktok_encoder(vocab)
    all_texts = json_mode_eval_texts(data_dir, texts)
    fast = _streams(all_texts, encode, None)
    slow = _streams(all_texts[:slow_texts], encode, slow_steps)
    out(f"grammar {grammar}, {vocab} ({info.vocab_size:,} ids), {len(fast)} json-mode-eval completions "
        f"({sum(map(len, fast)) + len(fast):,} masks); rows without a cache: {len(slow)} completions, at most "
        f"{slow_steps} tokens ({sum(map(len, slow)) + len(slow):,} masks)")
    start = time.perf_counter()
    earley = _Engine("earley", info, text)
    out(f"warm-up and the Earley engine's reference masks... ({time.perf_counter() - start:.1f} s)")
    ref_fast, ref_slow = reference_masks(earley, fast), reference_masks(earley, slow)
    rows, engines = [], []
    for name, options, paper in ROWS + tuple((n, o, None) for n, o in EXTRA):
        engine = _Engine("pda", info, text, options)
        row = AblationRow(name, paper, slow=not options["mask_cache"], compile_ms=engine.compile_ms)
        if engine.compiled.mask_cache is not None:
            row.stats = asdict(engine.compiled.mask_cache.stats)
        rows.append(row)
        engines.append(engine)
    rows.append(AblationRow("xg2ref Earley (defaults)", compile_ms=earley.compile_ms))
    engines.append(earley)
    x = _Engine("xgrammar", info, text, xgr=xgr, xinfo=xinfo)
    rows.append(AblationRow("xgrammar 0.2.8", compile_ms=x.compile_ms))
    engines.append(x)
    peer_row = _peer_row(info, text, fast, ref_fast, out) if peer else None
    problems = []
    for row, engine in zip(rows, engines):  # correctness first
        streams, ref = (slow, ref_slow) if row.slow else (fast, ref_fast)
        bad = differences(engine, streams, ref)
        if bad and engine.kind != "xgrammar":
            problems.append(f"{row.name}: {bad} masks differ from the Earley engine's")
        elif bad:
            out(f"note: xgrammar's mask differs from xg2ref's at {bad} steps (specs/01 lists its inexactness)")
    if problems:
        for p in problems:
            out("MISMATCH " + p)
        return 1
    out("masks: every row equals the Earley engine's at every step")
    # timed one completion at a time, every row in turn: a drift of the machine's speed during
    # the run falls on every row alike
    for streams, is_slow in ((fast, False), (slow, True)):
        for ids in streams:
            for row, engine in zip(rows, engines):
                if row.slow == is_slow:
                    row.times_us += timed(engine, [ids])
    if peer_row is not None:  # after xgrammar 0.2.8's, which stays the last row the ratios divide by
        rows.insert(len(rows) - 1, peer_row)
    out(format_table(rows, len(ref_slow)))
    if out_dir:
        _write(rows, speed_ups(rows, len(ref_slow)), out_dir, out)
    return 0


def _peer_row(info: TokenizerInfo, text: str, streams: list, reference: list, out) -> Optional[AblationRow]:
    """xgrammar 0.1.19's row from its side process (None when `make peers` has not run): its
    compile and fill times, and its masks compared with the reference's."""
    from .xg1_peer import XG1Peer, peer_available

    if not peer_available():
        out("xgrammar 0.1.19 not set up (`make peers`): no row for it")
        return None
    peer = XG1Peer(info)
    try:
        row = AblationRow(f"xgrammar {peer.version} (side process)", compile_ms=peer.compile("ebnf", text))
        step, bad, cut = 0, 0, 0
        for ids in streams:
            us, masks = peer.masks(ids)
            row.times_us += us
            bad += sum(not np.array_equal(np.packbits(m), reference[step + k]) for k, m in enumerate(masks))
            cut += len(ids) + 1 - len(masks)  # steps after a token it rejected
            step += len(ids) + 1
    finally:
        peer.close()
    row.stats = dict(differing_masks=bad, steps_not_reached=cut)
    out(f"xgrammar {peer.version}: its mask differs from the Earley engine's at {bad} steps, {cut} steps not "
        f"reached after a token it rejected (specs/08 lists why)" if bad or cut else
        f"xgrammar {peer.version}: masks equal the Earley engine's at every step")
    return row


def speed_ups(rows: list, slow_steps: int) -> list:
    """Each row of the table's speed-up over the row above (None for the first and for the rows
    beside the table), on the steps both ran: the slow subset's first masks when either is slow."""
    ups: list = [None] * len(rows)
    for i in range(1, min(len(ROWS), len(rows))):
        r, above = rows[i], rows[i - 1]
        steps = slow_steps if (r.slow or above.slow) else None
        ups[i] = above.mean_us(steps) / r.mean_us(steps)
    return ups


def format_table(rows: list, slow_steps: int) -> str:
    """Mean / p50 / p99 per token (ms), the speed-up over the row above (`speed_ups`), the
    paper's figures."""
    head = (f"{'row':<40}{'masks':>6}  {'mean ms':>9}  {'p50 ms':>9}  {'p99 ms':>9}  {'speed-up':>8}  "
            f"{'paper ms':>8}  {'paper':>6}  {'compile ms':>10}")
    lines = [head, "-" * len(head)]
    for i, (r, up) in enumerate(zip(rows, speed_ups(rows, slow_steps))):
        ours = f"{up:.1f}x" if up is not None else ""
        paper_up = f"{rows[i - 1].paper_ms / r.paper_ms:.1f}x" if up is not None else ""
        t = np.array(r.times_us) / 1e3
        paper = f"{r.paper_ms:.3f}" if r.paper_ms is not None else ""
        lines.append(f"{r.name:<40}{len(t):>6}  {t.mean():>9.3f}  {np.percentile(t, 50):>9.3f}  "
                     f"{np.percentile(t, 99):>9.3f}  {ours:>8}  {paper:>8}  {paper_up:>6}  {r.compile_ms:>10.0f}")
    x = rows[-1].mean_us()
    lines.append("(one thread, one process; the paper's figures from an AMD Ryzen 9 7950X with Llama-3.1 8B)")
    lines.append("ratios to xgrammar 0.2.8 (mean per token, the full set of completions): " + ", ".join(
        f"{r.name} {r.mean_us() / x:.2f}x" for r in rows[:-1] if not r.slow))
    by = {r.name: r.stats for r in rows}
    no_ctx, ctx = by["+ rule inlining"], by["+ context expansion"]
    lines.append(f"uncertain tokens over all entries: {no_ctx['uncertain']:,} without context expansion, "
                 f"{ctx['uncertain']:,} with it (the paper: 1,134 -> 120)")
    lines.append(f"cache bytes: {ctx['stored_bytes']:,} stored against {ctx['bitset_bytes']:,} as one bitset per "
                 f"entry (the paper: 160 MB -> 0.46 MB); entries: {ctx['entries']}")
    lines.append(f"bytes read while building the entries: {ctx['bytes_read'] / max(ctx['bytes_total'], 1):.1%} of "
                 f"the vocabulary's bytes times the entries (the paper: 30% of the characters)")
    return "\n".join(lines)


def _write(rows: list, ups: list, out_dir: str, out) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    record = [dict(name=r.name, paper_ms=r.paper_ms, slow=r.slow, compile_ms=r.compile_ms, masks=len(r.times_us),
                   mean_ms=r.mean_us() / 1e3, p50_ms=float(np.percentile(r.times_us, 50)) / 1e3,
                   p99_ms=float(np.percentile(r.times_us, 99)) / 1e3, speed_up=up, stats=r.stats)
              for r, up in zip(rows, ups)]
    with open(os.path.join(out_dir, "table3.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    names = [r.name for r in rows]
    pos = np.arange(len(rows))
    ax.bar(pos - 0.2, [r.mean_us() / 1e3 for r in rows], 0.4, label="xg2ref (this machine)")
    ax.bar(pos + 0.2, [r.paper_ms if r.paper_ms is not None else 0 for r in rows], 0.4,
           label="XGrammar Table 3 (paper)")
    ax.set_yscale("log")
    ax.set_ylabel("mask time per token, mean (ms)")
    ax.set_xticks(pos)
    ax.set_xticklabels(names, rotation=25, ha="right", fontsize=8)
    ax.set_title("XGrammar's ablation on XGrammar-1's pushdown automaton: builtin JSON, Llama-3, json-mode-eval", fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "table3.png"), dpi=120)
    out(f"wrote {out_dir}/table3.json and table3.png")
