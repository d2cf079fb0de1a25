"""`xg2ref bench formats`: XGrammar-2 §4.2, Figures 7 and 8, per-token overhead and compile time
of tool calling in Llama's format and OpenAI's Harmony format.

The paper's turns (CONFETTI: 313 turns over 86 APIs) are not available, so the turns here are
synthetic, seeded, over the BFCL tool pool of §4.1 (../shared/data/bfcl/tool_pool_100.json):

    a turn       k tools drawn from the pool (`--tools`, 20 by default); the assistant's answer is
                 text only (15%), or an optional sentence and then one call (70%) or two (15%)
    a call       a tool of the turn; its arguments from a seeded random walk over xg2ref's masks
                 for the tool's parameter schema, parsed, checked with `jsonschema` and written
                 back as compact JSON
    rendering    in the format's own syntax, as `get_model_structural_tag(format, tools)` reads it:
                 llama   SENTENCE {"name": "NAME", "parameters": ARGS}...
                 harmony <|channel|>analysis<|message|>SENTENCE<|end|><|start|>assistant
                         <|channel|>commentary to=functions.NAME<|constrain|>json<|message|>ARGS<|call|>
                         (text only: <|channel|>final<|message|>SENTENCE<|return|>)
    tokens       quicktok's ordinary encoding of the text: llama3 for Llama's format,
                 o200k_harmony for Harmony. Harmony's markers are special tokens there, decoding to
                 b"" and never allowed, so the byte-level structural tag spells them with ordinary
                 tokens (several per marker): the primary run, "harmony". The sensitivity run,
                 "harmony-tokens", reads a variant of the vocabulary in which each marker is one
                 ordinary token decoding to its text, as a serving stack sees it
                 (formats_engines.marker_vocabulary); every engine gets the same variant.

Every rendered text must be a complete sentence of every engine's grammar; a turn that is not is
counted per engine, and for xg2ref it fails the run.

Engines (xg2ref/tools/bench/formats_engines.py), one thread: xg2ref with its defaults, xgrammar
0.2.8, llguidance 1.9.1, XGrammar-1's pushdown automaton (xg2ref/baselines/pda), and xgrammar
0.1.19 when its side environment exists. For each:
- per token, `accept_token` + `fill_next_token_bitmask` timed together (Fig. 7's per-token
  overhead), split by region: free text or call arguments (the token's first byte);
- per turn, the constraint built and compiled (Fig. 8), and the time to first mask (the compile,
  a matcher and its first mask: JIT moves work there), in two regimes: warm, one compiler per
  format across the turns, as a server runs it; cold, a new compiler per turn (its construction
  not timed). An engine whose compiler keeps nothing across grammars is timed once for both;
  the two pushdown automata compile a turn in seconds, so they read the first `slow_turns`
  turns (`--slow-turns`, 5), and every ratio is taken over the turns both engines read; a
  compile of xgrammar 0.1.19 past `--slow-timeout` seconds (120) is counted, not waited for;
- masks compared with xg2ref's at every step (the words, after the timing): the first step of a
  turn where they differ is classified (`first_difference`) and counted per engine, not fatal.

`--results` keeps one JSON line per turn and engine (benchmarks/formats/records.jsonl by
default): a stopped run goes on where it left off, and the table is computed from the records.

Reported: a table per format and engine (mean, p50, p99 per token; text and arguments apart;
compile and first mask, warm and cold; ratios to xgrammar 0.2.8), and two PNGs of grouped bars
in the paper's shape (benchmarks/formats/fig7.png, fig8.png) with the numbers as JSON.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from typing import Callable, Optional

import numpy as np

from .formats_engines import ENGINES

# a run: (format, quicktok vocabulary); None is o200k_harmony with its markers as single tokens
RUNS = {"llama": ("llama", "llama3"), "harmony": ("harmony", "o200k_harmony"), "harmony-tokens": ("harmony", None)}
DEFAULT_OUT = os.path.join("benchmarks", "formats")
SLOW_TURNS = 5  # turns read by the engines that compile in seconds (the pushdown automata)
SLOW_TIMEOUT = 120.0  # seconds: xgrammar 0.1.19's compile of a turn past it is counted as a timeout
SENTENCES = (
    "Let me look that up for you.",
    "I will check this with the right tool.",
    "Sure, here is what I found.",
    "One moment while I fetch the details.",
    "That needs a call to one of the tools.",
    "Here is the answer to your question.",
    "I can do that with the information you gave.",
    "Thanks for waiting; the result follows.",
)
HARMONY_CALL = "<|channel|>commentary to=functions.{name}<|constrain|>json<|message|>"


class Turn:
    """One assistant turn: its tools, its text, the byte spans of its call arguments."""

    def __init__(self, fmt: str, tools: list, text: str, spans: list):
        self.fmt, self.tools, self.text, self.spans = fmt, tools, text, spans

    def regions(self, tokens: list, decoded: list) -> np.ndarray:
        """Per token, True when its first byte lies inside a call's arguments."""
        out = np.zeros(len(tokens), np.bool_)
        at = 0
        for k, t in enumerate(tokens):
            out[k] = any(lo <= at < hi for lo, hi in self.spans)
            at += len(decoded[t])
        return out


def render(fmt: str, sentence: Optional[str], calls: list) -> tuple:
    """(text, byte spans of the arguments) of one answer: `calls` as (name, args JSON) pairs."""
    parts: list = []
    spans: list = []

    def put(piece: str, is_args: bool = False) -> None:
        start = sum(len(p.encode("utf-8")) for p in parts)
        parts.append(piece)
        if is_args:
            spans.append((start, start + len(piece.encode("utf-8"))))

    if fmt == "llama":
        if sentence:
            put(sentence + (" " if calls else ""))
        for name, args in calls:
            put(f'{{"name": "{name}", "parameters": ')
            put(args, True)
            put("}")
    elif fmt == "harmony":
        if not calls:
            put(f"<|channel|>final<|message|>{sentence or SENTENCES[0]}<|return|>")
        else:
            if sentence:
                put(f"<|channel|>analysis<|message|>{sentence}<|end|><|start|>assistant")
            for k, (name, args) in enumerate(calls):
                if k:
                    put("<|start|>assistant")
                put(HARMONY_CALL.replace("{name}", name))
                put(args, True)
                put("<|call|>")
    else:
        raise ValueError(f"format must be llama or harmony, got {fmt!r}")
    return "".join(parts), spans


class ArgumentMaker:
    """Seeded argument values for a tool: a random walk over xg2ref's masks for its parameter
    schema (the walk of `xg2ref bench jsonschemabench`), checked with `jsonschema`, as compact
    JSON. One compiled schema per tool, kept."""

    def __init__(self, info):
        from ...compiler import GrammarCompiler
        from .jsonschemabench import walk_tables

        self.compiler = GrammarCompiler(info)
        self.decoded = info.decoded_vocab
        self.tables = walk_tables(info)
        self.compiled: dict = {}

    def __call__(self, tool: dict, rng: random.Random, tries: int = 8) -> Optional[str]:
        from ...matcher import GrammarMatcher
        from .jsonschemabench import random_walk, validation_error

        schema = tool["function"].get("parameters") or {"type": "object"}
        name = tool["function"]["name"]
        if name not in self.compiled:
            self.compiled[name] = self.compiler.compile_json_schema(schema)
        stops, closers, lengths = self.tables
        for _ in range(tries):
            text = random_walk(GrammarMatcher(self.compiled[name]), self.decoded, stops,
                               random.Random(rng.random()), closers, lengths)
            if text is None or validation_error(schema, text) is not None:
                continue
            try:  # strict UTF-8: the grammar's byte classes also spell surrogates (specs/02), text cannot
                value = json.loads(text.decode("utf-8"))
            except ValueError:  # (UnicodeDecodeError included)
                continue
            return json.dumps(value, ensure_ascii=False)
        return None


def make_turns(fmt: str, pool: list, n_turns: int, n_tools: int, make_args: ArgumentMaker, seed: int = 0) -> list:
    """`n_turns` seeded turns of format `fmt` (module docstring)."""
    rng = random.Random(f"{seed}/{fmt}/{n_tools}")
    turns = []
    while len(turns) < n_turns:
        tools = rng.sample(pool, n_tools)
        u = rng.random()
        n_calls = 0 if u < 0.15 else (1 if u < 0.85 else 2)
        sentence = rng.choice(SENTENCES) if (n_calls == 0 or rng.random() < 0.6) else None
        calls = []
        for _ in range(n_calls):
            tool = rng.choice(tools)
            args = make_args(tool, rng)
            if args is None:
                break
            calls.append((tool["function"]["name"], args))
        if len(calls) < n_calls:
            continue
        text, spans = render(fmt, sentence, calls)
        turns.append(Turn(fmt, tools, text, spans))
    return turns


def format_vocabulary(run: str) -> tuple:
    """(format, TokenizerInfo, encoder) of a run of RUNS."""
    from ...tokenizer_info import TokenizerInfo
    from ..diff.checks import quicktok_encoder
    from .formats_engines import marker_vocabulary

    fmt, vocab = RUNS[run]
    if vocab is None:
        return (fmt,) + marker_vocabulary()
    return fmt, TokenizerInfo.from_quicktok(vocab), quicktok_encoder(vocab)


def make_engines(info, encode, names=ENGINES, slow_timeout: Optional[float] = SLOW_TIMEOUT,
                 out: Callable[[str], None] = print) -> list:
    """The engines of `names` that are installed (xgrammar 0.1.19 only with its side environment)."""
    import xg2ref

    from ...oracle.engines import import_xgrammar
    from .formats_engines import Engine, LLGuidanceLib, PDAEngine, XG1PeerEngine
    from .mask import _xgrammar_info
    from .xg1_peer import peer_available

    engines = []
    for name in names:
        if name == "xg2ref":
            engines.append(Engine("xg2ref", info, xg2ref))
        elif name == "xgrammar":
            xgr = import_xgrammar()
            engines.append(Engine("xgrammar", info, xgr, _xgrammar_info(xgr, info)))
        elif name == "llguidance":
            engines.append(Engine("llguidance", info, LLGuidanceLib(info, encode)))
        elif name == "pda":
            engines.append(PDAEngine(info))
        elif name == "xgrammar 0.1.19":
            if peer_available():
                engines.append(XG1PeerEngine(info, slow_timeout))
            else:
                out("xgrammar 0.1.19 left out: its side environment is missing (`make peers` builds it)")
        else:
            raise ValueError(f"engine must be one of {ENGINES}, got {name!r}")
    return engines


def bench_formats(data_dir: str, runs=tuple(RUNS), turns: int = 100, tool_counts=(20,), seed: int = 0,
                  engines=ENGINES, slow_turns: int = SLOW_TURNS, slow_timeout: Optional[float] = SLOW_TIMEOUT,
                  results: Optional[str] = None, out_dir: Optional[str] = DEFAULT_OUT, progress: bool = True,
                  out: Callable[[str], None] = print) -> int:
    """Run the bench (module docstring); print its table, write the figures. With `results`, one
    JSON line per turn and engine is kept there, and a turn every planned engine has on record is
    not run again. Returns 1 when a rendered turn is not a sentence of xg2ref's grammar (the
    generator's own check)."""
    from ...util import read_json_lines
    from ..diff.report import ProgressBar
    from .dynamic import load_tools
    from .jsonschemabench import open_results

    pool = load_tools(data_dir)
    kept: dict = {}  # (run, tools, turn) -> {engine: record}
    for r in read_json_lines(results):
        if r.get("seed") == seed:
            kept.setdefault((r["run"], r["tools"], r["turn"]), {})[r["engine"]] = r
    rows: list = []
    status = 0
    sink = open_results(results)
    try:
        for run in runs:
            if run not in RUNS:
                raise ValueError(f"run must be one of {tuple(RUNS)}, got {run!r}")
            fmt, info, encode = format_vocabulary(run)
            live = make_engines(info, encode, engines, slow_timeout, out)
            make_args = ArgumentMaker(info)
            for n_tools in tool_counts:
                sample = make_turns(fmt, pool, turns, n_tools, make_args, seed)
                records, warmed = [], False
                bar = ProgressBar(len(sample), enabled=progress)
                for n, turn in enumerate(sample):
                    planned = [e for e in live if not e.slow or n < slow_turns]
                    have = kept.get((run, n_tools, n), {})
                    if not all(e.name in have for e in planned):
                        if not warmed:  # kernels loaded, kept compilers' caches warmed, on a turn outside the sample
                            warm_up = make_turns(fmt, pool, 1, n_tools, make_args, seed + 1)[0]
                            for engine in (e for e in planned if e.warm_up):
                                engine.run(fmt, warm_up.tools, encode(warm_up.text.encode("utf-8")), True)
                            warmed = True
                        have = run_turn(planned, turn, encode, info, dict(seed=seed, run=run, tools=n_tools, turn=n))
                        for rec in have.values():
                            if sink:
                                sink.write(json.dumps(rec) + "\n")
                                sink.flush()
                    for engine in planned:
                        records.append(have[engine.name])
                        if engine.name == "xg2ref" and have[engine.name]["status"] == "refused":
                            out(f"{run} turn {n}: not a sentence of xg2ref's grammar: {turn.text[:120]!r}")
                            status = 1
                    bar.update(n + 1, f"{run} {n_tools} tools, turn {n + 1}")
                bar.close()
                acc = _accumulate(records, [e.name for e in live])
                for name in acc:
                    rows.append(_row(run, n_tools, name, acc))
            for engine in live:
                if hasattr(engine, "close"):
                    engine.close()
    finally:
        if sink:
            sink.close()
    out(format_table(rows))
    if out_dir:
        write_figures(rows, out_dir)
        out(f"wrote {out_dir}/fig7.png, fig8.png and formats.json")
    return status


def run_turn(engines: list, turn: Turn, encode, info, key: dict) -> dict:
    """One turn through every engine of `engines` (the first one's masks the reference): a record
    per engine, `key` and its status ("done", "refused", "timeout"), its times per token and the
    token's region, compile and first mask warm and cold, the kind of its first difference."""
    tokens = encode(turn.text.encode("utf-8"))
    regions = turn.regions(tokens, info.decoded_vocab)
    out, ref = {}, None
    for engine in engines:
        warm = engine.run(turn.fmt, turn.tools, tokens, True)
        rec = dict(key, engine=engine.name, status="done")
        if warm.get("timed_out"):
            rec["status"] = "timeout"
        elif not warm["completed"]:
            rec["status"] = "refused"
        else:
            cold = warm if engine.stateless else engine.run(turn.fmt, turn.tools, [], False)
            rec.update(us=[round(float(u), 2) for u in warm["us"]], args=[bool(x) for x in regions],
                       compile_warm=warm["compile_ms"], ttfm_warm=warm["ttfm_ms"],
                       compile_cold=cold["compile_ms"], ttfm_cold=cold["ttfm_ms"], difference=None)
            if ref is None:
                ref = warm["words"]
            else:
                rec["difference"] = first_difference(warm["words"], ref, tokens, info)
        out[engine.name] = rec
    return out


def _accumulate(records: list, names: list) -> dict:
    """Per engine, what `_row` reads, from the turns' records."""
    acc = {name: dict(done=[], differ=0, kinds={}, refused=0, timeouts=0) for name in names}
    for r in records:
        a = acc.setdefault(r["engine"], dict(done=[], differ=0, kinds={}, refused=0, timeouts=0))
        if r["status"] == "timeout":
            a["timeouts"] += 1
        elif r["status"] == "refused":
            a["refused"] += 1
        else:
            a["done"].append(dict(turn=r["turn"], us=np.asarray(r["us"], np.float64),
                                  args=np.asarray(r["args"], np.bool_), compile_warm=r["compile_warm"], ttfm_warm=r["ttfm_warm"],
                                  compile_cold=r["compile_cold"], ttfm_cold=r["ttfm_cold"]))
            if r["difference"]:
                a["differ"] += 1
                a["kinds"][r["difference"]] = a["kinds"].get(r["difference"], 0) + 1
    return acc


# The differences specs/05 documents between xg2ref's JSON Schema front end and xgrammar 0.2.8's,
# recognized by the first step where two masks differ: the prefix read so far and the tokens only
# one engine allows (a token's bytes appended to the prefix's end).
_SURROGATE = re.compile(rb'\\u[dD][89a-fA-F]')
_DATE_DAY = re.compile(rb'[0-9]{4}-[0-9]{2}-[0-9]?$')


def classify_difference(prefix: bytes, only_ours: list, only_theirs: list) -> str:
    """The kind of a step where xg2ref's mask (`only_ours`: tokens only it allows) and another
    engine's (`only_theirs`) differ, after `prefix`:

        "-0 (specs/05 JSON 9)"                 xg2ref alone takes a 0 after a minus sign
        "lone surrogate (specs/05 JSON 8)"     the other alone completes a \\u escape of d800-dfff
        "day of month (specs/05 JSON 7)"       the other alone takes a day the month lacks
        "escape / control (specs/05 JSON 3)"   xg2ref alone a backslash, the other a raw control byte
        "other"                                anything else: another language (llguidance's lexemes,
                                               xgrammar 0.1.19's free text) or a bug to look into"""
    tail = prefix[-6:]
    if not only_theirs and prefix.endswith(b"-") and all(t.startswith(b"0") for t in only_ours):
        return "-0 (specs/05 JSON 9)"
    if only_theirs and not only_ours and all(any(m.end() > len(tail) for m in _SURROGATE.finditer(tail + t))
                                             for t in only_theirs):
        return "lone surrogate (specs/05 JSON 8)"
    if only_theirs and not only_ours and _DATE_DAY.search(prefix) and all(t[:2].isdigit() or t.isdigit()
                                                                          for t in only_theirs):
        return "day of month (specs/05 JSON 7)"
    if all(b"\\" in t for t in only_ours) and all(any(c < 0x20 for c in t) for t in only_theirs):
        return "escape / control (specs/05 JSON 3)"
    return "other"


def first_difference(words: list, ref: list, tokens: list, info) -> Optional[str]:
    """None when the two runs' masks agree at every step; else `classify_difference` of the first
    step where they differ."""
    from ...bitmask import unpack_bitmask

    for k, (x, y) in enumerate(zip(words, ref)):
        if not np.array_equal(x, y):
            n, decoded = info.vocab_size, info.decoded_vocab
            theirs, ours = unpack_bitmask(np.asarray(x).reshape(-1), n), unpack_bitmask(np.asarray(y).reshape(-1), n)
            prefix = b"".join(decoded[t] for t in tokens[:k])
            return classify_difference(prefix, [decoded[t] for t in np.flatnonzero(ours & ~theirs)],
                                       [decoded[t] for t in np.flatnonzero(theirs & ~ours)])
    return None


def _row(run: str, n_tools: int, engine: str, acc: dict) -> dict:
    """One engine's figures over its turns, with its ratios to xgrammar 0.2.8 and llguidance over
    the turns both read (a slow engine reads the first `slow_turns` only)."""
    done = acc[engine]["done"]
    us = np.concatenate([d["us"] for d in done]) if done else np.zeros(0)
    args = np.concatenate([d["args"] for d in done]) if done else np.zeros(0, np.bool_)
    mean = (lambda v: float(np.mean(v)) if len(v) else float("nan"))
    pct = (lambda v, q: float(np.percentile(v, q)) if len(v) else float("nan"))
    col = (lambda key: [d[key] for d in done])
    row = dict(format=run, tools=n_tools, engine=engine, turns=len(done), tokens=int(len(us)),
               refused=acc[engine]["refused"], timeouts=acc[engine]["timeouts"], differ=acc[engine]["differ"],
               differences=dict(sorted(acc[engine]["kinds"].items())),
               mean_us=mean(us), p50_us=pct(us, 50),
               p99_us=pct(us, 99), text_us=mean(us[~args]), args_us=mean(us[args]),
               compile_warm_ms=mean(col("compile_warm")), compile_cold_ms=mean(col("compile_cold")),
               ttfm_warm_ms=mean(col("ttfm_warm")), ttfm_cold_ms=mean(col("ttfm_cold")),
               compile_warm_p99_ms=pct(col("compile_warm"), 99))
    for ref in ("xgrammar", "llguidance"):
        theirs = {d["turn"]: d for d in acc.get(ref, {}).get("done", [])}
        both = [d for d in done if d["turn"] in theirs]
        if both:
            t_us = sum(theirs[d["turn"]]["us"].sum() for d in both)
            t_ms = sum(theirs[d["turn"]]["ttfm_warm"] for d in both)
            row[f"token_vs_{ref}"] = float(sum(d["us"].sum() for d in both) / t_us) if t_us else float("nan")
            row[f"ttfm_vs_{ref}"] = float(sum(d["ttfm_warm"] for d in both) / t_ms) if t_ms else float("nan")
    return row


def format_table(rows: list) -> str:
    head = (f"{'run':<15}{'tools':>6} {'engine':<16}{'turns':>6}{'tokens':>7}  {'mean µs':>9}{'p50':>8}{'p99':>9}"
            f"{'text':>9}{'args':>9}  {'compile warm ms':>15}{'cold':>9}  {'1st mask warm':>13}{'cold':>9}"
            f"  {'÷ xgrammar: token, 1st mask':>30}{'÷ llguidance: token, 1st mask':>32}")
    lines = [head, "-" * len(head)]
    for r in rows:
        ratios = []
        for ref in ("xgrammar", "llguidance"):
            ratios.append(f"{r[f'token_vs_{ref}']:.2f}x, {r[f'ttfm_vs_{ref}']:.2f}x"
                          if f"token_vs_{ref}" in r and r["engine"] != ref else "")
        lines.append(f"{r['format']:<15}{r['tools']:>6} {r['engine']:<16}{r['turns']:>6}{r['tokens']:>7}  "
                     f"{r['mean_us']:>9.1f}{r['p50_us']:>8.1f}{r['p99_us']:>9.1f}{r['text_us']:>9.1f}"
                     f"{r['args_us']:>9.1f}  {r['compile_warm_ms']:>15.2f}{r['compile_cold_ms']:>9.2f}  "
                     f"{r['ttfm_warm_ms']:>13.2f}{r['ttfm_cold_ms']:>9.2f}  {ratios[0]:>30}{ratios[1]:>32}")
    lines.append("per token: accept_token + fill_next_token_bitmask; text / args: the token's first byte in free "
                 "text or in a call's arguments; warm: one compiler per format across the turns; cold: a new "
                 "compiler per turn (its construction not timed); ratios: mean per token and first mask with a warm "
                 "compiler (llguidance compiles in its matcher, so its compile alone says little), over the turns "
                 "both engines read; one thread")
    for r in rows:
        if r["differ"] or r["refused"] or r["timeouts"]:
            kinds = ", ".join(f"{k} x{n}" for k, n in r.get("differences", {}).items())
            lines.append(f"  {r['format']} {r['engine']}: masks differ from xg2ref's on {r['differ']} turns "
                         f"({kinds or 'none'}), {r['refused']} turns not read to the end, {r['timeouts']} compiles "
                         f"past the time limit (left out of its figures)")
    return "\n".join(lines)


def write_figures(rows: list, out_dir: str) -> None:
    """Figs. 7 and 8 as grouped bars (formats x engines, log y) and the rows as JSON."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "formats.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)
    formats = sorted({r["format"] for r in rows}, key=list(RUNS).index)
    engines = list(dict.fromkeys(r["engine"] for r in rows))
    width = 0.8 / max(len(engines), 1)
    for name, key, label in (("fig7", "mean_us", "per-token overhead, mean (µs)"),
                             ("fig8", "compile_warm_ms", "compile time per turn, warm compiler (ms)")):
        fig, ax = plt.subplots(figsize=(8.5, 4))
        pos = np.arange(len(formats))
        for i, e in enumerate(engines):
            values = [np.mean([r[key] for r in rows if r["format"] == f and r["engine"] == e] or [np.nan])
                      for f in formats]
            ax.bar(pos + (i - (len(engines) - 1) / 2) * width, values, width, label=e)
        ax.set_xticks(pos)
        ax.set_xticklabels(formats)
        ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.set_title(f"XGrammar-2 Fig. {name[-1]}: {label.split(',')[0]}, synthetic turns over BFCL tools")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, f"{name}.png"), dpi=120)
        plt.close(fig)
