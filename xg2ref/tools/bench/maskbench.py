"""`xg2ref bench maskbench`: time to first mask and time between masks on JSON schemas, for
xg2ref, xgrammar 0.2.8 and llguidance 1.9.1 in one process, as a user meets them (XGrammar-2 §4:
the system with all its mechanisms on, `GrammarCompiler(info)` and nothing else).

The sample: `--sample N` schemas per JSONSchemaBench subset (seeded), and N json-mode-eval items.
An instance is a JSON text the schema accepts, tokenized with the vocabulary's own encoder: the
gold completion of a json-mode-eval item, or for a JSONSchemaBench schema a seeded random walk over
xg2ref's masks (`bench_jsonschema.random_walk`) that `jsonschema` validates (schemas without one
get their time to first mask only).

Correctness first, nothing timed: along each instance, xg2ref's mask and xgrammar's are compared
at every step (fresh compilers, caches off). A step that differs is *documented* when it is
specs/05's difference 3 or 8 by its tokens (every token only xg2ref allows holds a backslash,
every token only xgrammar allows a byte below 0x20; or after `\\u` xgrammar alone takes a lone
surrogate), or *attributed* when the schema uses a keyword of another difference specs/05 lists
(`pattern`; `properties` without `type`; number bounds; `patternProperties`, `propertyNames`,
`enum`, `const`, `multipleOf`; `format`; `oneOf`, `anyOf`); any other is
*undocumented*, printed with its tokens, and makes the exit status 1. Attributed ones are
recorded with the keywords that explain them, so that a reader can check them one by one.

Then, per schema and engine, with one compiler per engine kept across the whole run (caches on,
as a server keeps them; cold first requests included; the process has warmed Numba's kernels
once on a schema outside the sample):

- time to first mask: compile the schema, make a matcher, fill the first bitmask;
- time between masks: for each token of the instance, accept it and fill the next bitmask.

The report gives time to first mask p50 / p99 and time between masks avg / p50 / p90 / p99 /
p99.9 / max per engine with the ratio to xgrammar's; `--plot` draws the per-token distributions
as CDFs (PNG); `--results` keeps one JSON line per schema (`benchmarks/maskbench/`).
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import Callable, Optional

import numpy as np

from .jsonschemabench import SUBSETS, load_schemas, random_walk, validation_error, walk_tables
from ...bitmask import unpack_bitmask
from ..diff.report import ProgressBar

JSON_MODE_EVAL = "json-mode-eval"
ENGINES = ("xg2ref", "xgrammar", "llguidance")
PERCENTILES = (50, 90, 99, 99.9)


def load_sample(data_dir: str, sample: Optional[int], seed: int) -> list:
    """[(subset, uid, schema, instance text or None)]: `sample` schemas per JSONSchemaBench subset
    and `sample` json-mode-eval items (their gold completions as instances); None: all."""
    out = [(subset, uid, schema, None) for subset, rows in load_schemas(data_dir, SUBSETS, sample, seed).items()
           for uid, schema in rows]
    path = os.path.join(data_dir, "json_mode_eval", "json_mode_eval_from_maskbench.jsonl")
    with open(path, encoding="utf-8") as f:
        items = [json.loads(line) for line in f if line.strip()]
    count = len(items) if sample is None else min(sample, len(items))  # None: all of them
    for item in random.Random(f"{seed}/{JSON_MODE_EVAL}").sample(items, count):
        out.append((JSON_MODE_EVAL, item["id"], item["schema"], json.dumps(item["completion"])))
    return out


class _Engines:
    """The three engines over one vocabulary: adapters with one shape (compile, first mask, step)."""

    def __init__(self, vocab: str):
        import xgrammar

        from .mask import _xgrammar_info
        from ..diff.checks import quicktok_encoder
        from ...tokenizer_info import TokenizerInfo

        self.info = TokenizerInfo.from_quicktok(vocab)
        self.encode = quicktok_encoder(vocab)
        self.xgr = xgrammar
        self.xinfo = _xgrammar_info(xgrammar, self.info)
        self.lltok = self._llguidance_tokenizer()
        self.walk_tables = walk_tables(self.info)  # for the instances' random walks

    def _llguidance_tokenizer(self):
        """llguidance's tokenizer over the same tokens, encoding with the same encoder."""
        try:
            import llguidance
        except ImportError:
            return None
        info, encode = self.info, self.encode

        class Vocabulary:
            eos_token_id = info.stop_token_ids[0] if info.stop_token_ids else 0
            bos_token_id = None
            tokens = [bytes(t) for t in info.decoded_vocab]
            special_token_ids = list(info.special_token_ids)

            def __call__(self, data: bytes):
                return encode(data) or []

        return llguidance.LLTokenizer(llguidance.TokenizerWrapper(Vocabulary()), n_vocab=info.vocab_size,
                                      eos_token=list(info.stop_token_ids) or None)

    def compilers(self) -> dict:
        """A fresh compiler per engine, defaults on (llguidance compiles per matcher)."""
        from ...compiler import GrammarCompiler

        out = {"xg2ref": GrammarCompiler(self.info), "xgrammar": self.xgr.GrammarCompiler(self.xinfo, max_threads=1)}
        if self.lltok is not None:
            out["llguidance"] = self.lltok
        return out

    def first_mask(self, engine: str, compiler, schema_text: str):
        """Compile, make a matcher, fill the first bitmask: (matcher, bitmask, step function)."""
        if engine == "llguidance":
            import llguidance
            import llguidance.numpy as lnp

            grammar = llguidance.LLMatcher.grammar_from_json_schema(schema_text,
                                                                     defaults={"whitespace_flexible": True})
            matcher = llguidance.LLMatcher(compiler, grammar, log_level=0)
            if matcher.is_error():
                raise ValueError(matcher.get_error())
            bitmask = lnp.allocate_token_bitmask(1, self.info.vocab_size)
            lnp.fill_next_token_bitmask(matcher, bitmask, 0)

            def step(token: int) -> bool:
                ok = matcher.consume_token(token)
                lnp.fill_next_token_bitmask(matcher, bitmask, 0)
                return ok and not matcher.is_error()
            return matcher, bitmask, step
        lib = self.xgr if engine == "xgrammar" else _xg2ref()
        matcher = lib.GrammarMatcher(compiler.compile_json_schema(schema_text))
        bitmask = lib.allocate_token_bitmask(1, self.info.vocab_size)
        matcher.fill_next_token_bitmask(bitmask)

        def step(token: int) -> bool:
            ok = matcher.accept_token(token)
            matcher.fill_next_token_bitmask(bitmask)
            return ok
        return matcher, bitmask, step


def _xg2ref():
    import xg2ref

    return xg2ref


def make_instance(engines: _Engines, uid: str, schema, seed: int) -> Optional[str]:
    """A seeded random walk over xg2ref's masks that `jsonschema` validates, or None."""
    from ...compiler import GrammarCompiler
    from ...matcher import GrammarMatcher

    info = engines.info
    stops, closers, lengths = engines.walk_tables
    try:
        compiled = GrammarCompiler(info, cache_enabled=False).compile_json_schema(json.dumps(schema))
        text = random_walk(GrammarMatcher(compiled), info.decoded_vocab, stops, random.Random(f"{seed}/{uid}"),
                           closers, lengths)
    except Exception:  # noqa: BLE001  (a schema xg2ref refuses has no instance; its refusal shows when timed)
        return None
    if text is None or validation_error(schema, text) is not None:
        return None
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError:
        return None


def compare_masks(engines: _Engines, schema_text: str, tokens: list) -> dict:
    """xg2ref's and xgrammar's masks at every step of `tokens` (fresh compilers, caches off):
    {"steps", "documented", "undocumented", "example"} (module docstring)."""
    import xg2ref

    info, xgr = engines.info, engines.xgr
    ours = xg2ref.GrammarMatcher(xg2ref.GrammarCompiler(info, cache_enabled=False).compile_json_schema(schema_text))
    theirs = xgr.GrammarMatcher(xgr.GrammarCompiler(engines.xinfo, max_threads=1, cache_enabled=False)
                                .compile_json_schema(schema_text))
    a = xg2ref.allocate_token_bitmask(1, info.vocab_size)
    b = xgr.allocate_token_bitmask(1, info.vocab_size)
    out = {"steps": 0, "documented": 0, "attributed": 0, "undocumented": 0, "example": None}
    keywords = sorted(documented_keywords(json.loads(schema_text)))
    prefix = bytearray()
    for k in range(len(tokens) + 1):
        ours.fill_next_token_bitmask(a)
        theirs.fill_next_token_bitmask(b)
        out["steps"] += 1
        kind, only = difference_kind(np.asarray(a), np.asarray(b), info, keywords, bytes(prefix))
        if kind is not None:
            out[kind] += 1
            if kind != "documented" and out["example"] is None:
                out["example"] = {"step": k, "tokens_only_in": only, "keywords": keywords}
        if k == len(tokens):
            break
        if not (ours.accept_token(tokens[k]) and theirs.accept_token(tokens[k])):
            out["refused_at"] = k
            break
        prefix += bytes(info.decoded_vocab[tokens[k]])
    return out


def difference_kind(ours: np.ndarray, theirs: np.ndarray, info, keywords, prefix: bytes) -> tuple:
    """(None, []) when two bitmasks agree; else (kind, a few (engine, token) pairs allowed by one
    engine alone), kind as the module docstring says: "documented" for specs/05's difference 3
    (escapes against raw control characters) and difference 8 (after `\\u`, xgrammar alone takes
    the escape of a lone surrogate, `d800`-`dfff`), "attributed" when the schema uses a keyword of
    another listed difference, else "undocumented"."""
    v, n = info.vocab_arrays(), info.vocab_size
    mine, other = unpack_bitmask(ours.reshape(-1), n), unpack_bitmask(theirs.reshape(-1), n)
    diff = np.flatnonzero(mine != other)
    if not len(diff):
        return None, []
    texts = [(bool(mine[t]), v.token_bytes[v.token_offsets[t]:v.token_offsets[t + 1]].tobytes()) for t in diff.tolist()]
    escapes = all((b"\\" in data) if only_ours else any(c < 0x20 for c in data) for only_ours, data in texts)
    surrogates = prefix.endswith(b"\\u") and all(not only_ours and data[:1] in (b"d", b"D") and
                                                   (len(data) < 2 or data[1:2] in b"89abcdefABCDEF")
                                                   for only_ours, data in texts)
    kind = "documented" if escapes or surrogates else "attributed" if keywords else "undocumented"
    only = [("xg2ref" if o else "xgrammar", d.decode("utf-8", "replace")) for o, d in texts[:5]]
    return kind, only


# keywords of the differences specs/05 lists (other than difference 3, recognized by its tokens)
DIFFERENCE_KEYWORDS = frozenset({"pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                 "patternProperties", "propertyNames", "enum", "const", "multipleOf", "oneOf",
                                 "anyOf"})


def documented_keywords(schema) -> set:
    """The keywords of documented differences anywhere in `schema` (and "properties without
    type" for specs/05's difference 2)."""
    found, stack = set(), [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found |= DIFFERENCE_KEYWORDS & node.keys()
            if "properties" in node and "type" not in node:
                found.add("properties without type")
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def time_schema(engines: _Engines, compilers: dict, schema_text: str, tokens: Optional[list]) -> dict:
    """Each engine's time to first mask and its time between masks along `tokens`."""
    rec = {}
    for engine, compiler in compilers.items():
        row = {"ttfm": None, "steps": [], "error": None}
        try:
            start = time.perf_counter()
            _, _, step = engines.first_mask(engine, compiler, schema_text)
            row["ttfm"] = time.perf_counter() - start
            for k, t in enumerate(tokens or []):
                start = time.perf_counter()
                ok = step(t)
                row["steps"].append(time.perf_counter() - start)
                if not ok:
                    row["error"] = f"refused token {k} of the instance"
                    break
        except Exception as err:  # noqa: BLE001  (an engine's refusal of a schema is recorded, not fatal)
            row["error"] = f"{type(err).__name__}: {err}".splitlines()[0][:200]
        rec[engine] = row
    return rec


def summarize(records: list) -> dict:
    """Per engine: schemas timed, time to first mask p50/p99, time between masks avg and
    percentiles, over the schemas every engine compiled (and the instances every engine read)."""
    both = [r for r in records if all(r["timing"].get(e, {}).get("ttfm") is not None for e in r["timing"])]
    engines = sorted({e for r in records for e in r["timing"]}, key=ENGINES.index)
    common = [r for r in both if all(not r["timing"][e]["error"] for e in engines)]
    out = {}
    for e in engines:
        ttfm = np.array([r["timing"][e]["ttfm"] for r in both if e in r["timing"]])
        steps = np.array([s for r in common for s in r["timing"][e]["steps"]])
        row = {"schemas": int(len(ttfm)), "ttfm_p50": _pct(ttfm, 50), "ttfm_p99": _pct(ttfm, 99),
               "tokens": int(len(steps)), "tbm_avg": float(steps.mean()) if len(steps) else None,
               "tbm_max": float(steps.max()) if len(steps) else None}
        for p in PERCENTILES:
            row[f"tbm_p{p}"] = _pct(steps, p)
        row["failed"] = sum(1 for r in records if r["timing"].get(e, {}).get("error"))
        out[e] = row
    return out


def _pct(a: np.ndarray, p: float) -> Optional[float]:
    return float(np.percentile(a, p)) if len(a) else None


def format_report(summary: dict) -> str:
    cols = [("ttfm_p50", "ttfm p50"), ("ttfm_p99", "ttfm p99"), ("tbm_avg", "tbm avg")] + \
        [(f"tbm_p{p}", f"p{p}") for p in PERCENTILES] + [("tbm_max", "max")]
    head = f"{'engine':<12}{'schemas':>8}{'tokens':>8}" + "".join(f"{name:>17}" for _, name in cols)
    lines = [head, "-" * len(head)]
    ref = summary.get("xgrammar", {})
    for engine, row in summary.items():
        cells = []
        for key, _ in cols:
            value = row[key]
            if value is None:
                cells.append(f"{'-':>17}")
                continue
            text = f"{value * 1e3:.2f} ms" if key.startswith("ttfm") else f"{value * 1e6:.0f} us"
            if engine != "xgrammar" and ref.get(key):
                text += f" {value / ref[key]:.2f}x"
            cells.append(f"{text:>17}")
        lines.append(f"{engine:<12}{row['schemas']:>8}{row['tokens']:>8}" + "".join(cells))
    lines.append("(ttfm: compile + matcher + first mask, cold first requests included; tbm: accept a token and fill "
                 "the next mask, over the instances every engine read; ratios to xgrammar 0.2.8 in the same run)")
    return "\n".join(lines)


def plot_cdf(records: list, path: str) -> None:
    """The per-token times of each engine as a CDF, log time axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    engines = sorted({e for r in records for e in r["timing"]}, key=ENGINES.index)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for e in engines:
        steps = np.sort([s for r in records for s in r["timing"].get(e, {}).get("steps", [])])
        if len(steps):
            ax.plot(steps * 1e6, np.arange(1, len(steps) + 1) / len(steps), label=e)
    ax.set_xscale("log")
    ax.set_xlabel("time between masks (µs, log scale)")
    ax.set_ylabel("share of tokens")
    ax.set_title("MaskBench sample: per-token time, defaults on every engine")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def bench_maskbench(data_dir: str, sample: int = 5, vocab: str = "llama3", seed: int = 0,
                    results: Optional[str] = None, plot: Optional[str] = None, progress: bool = True,
                    out: Callable[[str], None] = print) -> int:
    """Run the benchmark (module docstring); exit status 1 when a mask difference is undocumented."""
    try:
        engines = _Engines(vocab)
    except ImportError:
        out("xgrammar is not installed: `xg2ref bench maskbench` compares against xgrammar 0.2.8")
        return 2
    if engines.lltok is None:
        out("llguidance is not installed: its column stays empty")
    sample_rows = load_sample(data_dir, sample, seed)
    # one process-level warm-up of every engine's kernels, on a schema outside the sample
    warm = engines.compilers()
    time_schema(engines, warm, json.dumps({"type": "object", "properties": {"w": {"type": "string"}}}),
                engines.encode(b'{"w": "x"}'))
    bar = ProgressBar(2 * len(sample_rows), enabled=progress)
    prepared = []
    for subset, uid, schema, instance in sample_rows:
        bar.advance(f"check {subset} {uid}")
        if instance is None:
            instance = make_instance(engines, uid, schema, seed)
        tokens = engines.encode(instance.encode()) if instance is not None else None
        check = None
        if tokens is not None:
            try:
                check = compare_masks(engines, json.dumps(schema), tokens)
            except Exception as err:  # noqa: BLE001  (an engine refusing the schema: no comparison)
                check = {"error": f"{type(err).__name__}: {err}".splitlines()[0][:200]}
        prepared.append((subset, uid, schema, tokens, check))
    compilers = engines.compilers()
    records = []
    sink = open(results, "w", encoding="utf-8") if results else None
    try:
        for subset, uid, schema, tokens, check in prepared:
            bar.advance(f"time {subset} {uid}")
            rec = {"subset": subset, "uid": uid, "tokens": len(tokens) if tokens is not None else None,
                   "mask_check": check, "timing": time_schema(engines, compilers, json.dumps(schema), tokens)}
            records.append(rec)
            if sink:
                sink.write(json.dumps(rec) + "\n")
                sink.flush()
    finally:
        bar.close()
        if sink:
            sink.close()
    checked = [r["mask_check"] for r in records if r["mask_check"] and "steps" in r["mask_check"]]
    undocumented = [r for r in records if r["mask_check"] and r["mask_check"].get("undocumented")]
    out(f"{len(records)} schemas ({sample} per subset, seed {seed}, {vocab}); masks compared at "
        f"{sum(c['steps'] for c in checked)} steps of {len(checked)} instances: "
        f"{sum(c['documented'] for c in checked)} steps differ as specs/05's difference 3, "
        f"{sum(c['attributed'] for c in checked)} in schemas using the keywords of its other differences, "
        f"{sum(c['undocumented'] for c in checked)} otherwise")
    for r in undocumented:
        out(f"  undocumented difference: {r['subset']} {r['uid']}: {r['mask_check']['example']}")
    summary = summarize(records)
    out(format_report(summary))
    for engine, row in summary.items():
        if row["failed"]:
            out(f"{engine}: {row['failed']} schemas refused or failed (records say why)")
    if plot:
        plot_cdf(records, plot)
        with open(os.path.splitext(plot)[0] + ".json", "w", encoding="utf-8") as f:
            json.dump({"sample": sample, "seed": seed, "vocab": vocab, "summary": summary}, f, indent=1)
        out(f"CDF: {plot}")
    return 1 if undocumented else 0
