"""`xg2ref bench targets`: XGrammar-2 as a user gets it (§3.5's JIT with the cost model's K, §3.3's
cross-grammar cache, §3.6's repetition compression: `GrammarCompiler(info)` and nothing else),
beside xgrammar 0.2.8 with its defaults, in one process, one thread, cold requests included.

The process warms Numba's kernels once (a schema outside the workloads); every workload then
gets fresh compilers on both sides. Masks are compared before anything is reported: the first
masks of every request, and every mask along the texts (modulo specs/05's difference 3, see
`bench_maskbench.compare_masks`).

Rows (each with the ratio xg2ref / xgrammar and the target where one is set):

- time to first mask: 50 BFCL tools sampled per request (mean over the requests, and the first
  request alone), the json-mode-eval schemas (median), the `maxLength: 100` string schema, the
  builtin JSON grammar;
- time between masks (accept a token, fill the next mask) along the json-mode-eval gold
  completions, for each item's own schema compiled by one kept `GrammarCompiler(info)` and by
  one with `cache_enabled=False`, and for the builtin JSON grammar compiled per document (cache
  off): p50, p90, p99, p99.9, max;
- a decoding loop whose forward pass takes `forward_ms` (a sleep, the GIL released): the mask
  time on the critical path, p50 and p99, for each item's own schema;
- every entry built at compile time (`jit=False`; xgrammar always builds them): compile time of
  the builtin JSON grammar, the json-mode-eval schemas (median) and llama.cpp's json, c and
  arithmetic grammars;
- cliffs production engines are known for: a string of `maxLength: 100000` (time to first mask,
  mask p50), an unbounded string of `minLength: 200` (the same), and "any text without X, then X"
  with X one token of the vocabulary, over 5,000 tokens (mask time of the first and the last 500
  steps: it must not grow with the text); no configuration a cliff: the `maxLength: 100` string
  with `cache_enabled=False` beside the defaults (xg2ref against itself), and a grammar of 2,000
  rules each referencing the next twice (compile time or error, each engine in a process of its
  own stopped after `CHAIN_SECONDS`).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import time
from typing import Callable, Optional

import numpy as np

from .dynamic import load_tools, request_tools
from .maskbench import difference_kind, documented_keywords

MARKER = "```"  # the cliff grammar's X (one token of the vocabulary: checked)
CHAIN_RULES = 2000  # the rule-chain cliff: root ::= r1 r1, r1 ::= r2 r2, ..., the last a literal
CHAIN_SECONDS = 120.0
LLAMA_CPP = ("llama_json", "c", "arithmetic")  # llama.cpp's grammars as the bundled suite holds them
FREE_TEXT_WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "and", "then", "some", "more")


class _Side:
    """One engine's library and vocabulary, with the few calls the workloads make."""

    def __init__(self, name: str, lib, info, compiler_factory):
        self.name, self.lib, self.info, self.new_compiler = name, lib, info, compiler_factory

    def first_mask(self, compile_call) -> tuple:
        """(seconds, matcher, bitmask) of compile + matcher + first mask."""
        start = time.perf_counter()
        matcher = self.lib.GrammarMatcher(compile_call())
        bitmask = self.lib.allocate_token_bitmask(1, self.vocab_size)
        matcher.fill_next_token_bitmask(bitmask)
        return time.perf_counter() - start, matcher, bitmask

    @property
    def vocab_size(self) -> int:
        return self.info.vocab_size


def _steps(side: _Side, matcher, bitmask, tokens: list, masks: Optional[list] = None,
           forward_s: float = 0.0) -> list:
    """Seconds of accept + fill for each token (the masks kept in `masks` when given); with
    `forward_s`, a forward pass that long (a sleep) sits between accepting and filling, and only
    the fill, the mask's time on the critical path, is counted."""
    times = []
    for k, t in enumerate(tokens):
        start = time.perf_counter()
        if not matcher.accept_token(t):
            raise AssertionError(f"{side.name} refused token {k} ({t}) of a text its grammar accepts")
        if forward_s:
            time.sleep(forward_s)
            start = time.perf_counter()
        matcher.fill_next_token_bitmask(bitmask)
        times.append(time.perf_counter() - start)
        if masks is not None:
            masks.append(np.asarray(bitmask).copy())
    return times


def _same_masks(ours: list, theirs: list, info, what: str, schema=None, tokens=()) -> None:
    """The masks agree but where specs/05 documents a difference (bench_maskbench.difference_kind;
    `schema`'s keywords attribute the others); raises on any other."""
    keywords = sorted(documented_keywords(schema)) if schema is not None else []
    prefix = b""
    for k, (a, b) in enumerate(zip(ours, theirs)):
        kind, only = difference_kind(a, b, info, keywords, prefix)
        if kind == "undocumented":
            raise AssertionError(f"{what}, mask {k}: tokens allowed by one engine alone: {only}")
        if k < len(tokens):
            prefix += bytes(info.decoded_vocab[tokens[k]])


def _pct(seconds: list, p: float) -> float:
    return float(np.percentile(np.asarray(seconds), p)) if seconds else float("nan")


class Report:
    """Rows of (what, xg2ref, xgrammar, unit, target ratio or None)."""

    def __init__(self, out: Callable[[str], None]):
        self.out, self.rows = out, []

    def add(self, what: str, ours: float, theirs: float, unit: str, target: Optional[float] = None) -> None:
        self.rows.append((what, ours, theirs, unit, target))
        self.out(f"  {self._line(*self.rows[-1])}")

    @staticmethod
    def _line(what, ours, theirs, unit, target) -> str:
        scale = 1e3 if unit == "ms" else 1e6
        ratio = ours / theirs if theirs else float("inf")
        shown = f"1/{1 / ratio:.0f}" if 0 < ratio < 0.1 else f"{ratio:.2f}x"
        verdict = "" if target is None else ("  target <= " + (f"1/{1 / target:.0f}" if target < 0.2 else
                                                               f"{target:g}x") + (": met" if ratio <= target
                                                                                  else ": NOT met"))
        return f"{what:<62} {ours * scale:>10.1f} / {theirs * scale:>9.1f} {unit}  = {shown:>7}{verdict}"

    def table(self) -> str:
        head = f"{'workload (defaults on both sides, cold requests included)':<62} {'xg2ref / xgrammar':>25}"
        return "\n".join([head, "-" * 110] + [self._line(*r) for r in self.rows])


def bench_targets(data_dir: str, vocab: str = "llama3", requests: int = 100, fmt: str = "llama",
                  out: Callable[[str], None] = print, items: Optional[int] = None, cliff_tokens: int = 5000,
                  forward_ms: float = 5.0, chain_rules: int = CHAIN_RULES) -> int:
    """Run every workload of the module docstring; 0 when the masks agreed (targets are reported,
    not enforced: a benchmark measures)."""
    try:
        import xgrammar
    except ImportError:
        out("xgrammar is not installed: `xg2ref bench targets` compares against xgrammar 0.2.8")
        return 2
    import xg2ref

    from .mask import _xgrammar_info
    from ..diff.checks import quicktok_encoder

    info = xg2ref.TokenizerInfo.from_quicktok(vocab)
    xinfo = _xgrammar_info(xgrammar, info)
    encode = quicktok_encoder(vocab)
    ours = _Side("xg2ref", xg2ref, info, lambda **kw: xg2ref.GrammarCompiler(info, **kw))
    theirs = _Side("xgrammar", xgrammar, info,  # (it has no JIT switch: it builds every entry at compile)
                   lambda **kw: xgrammar.GrammarCompiler(xinfo, max_threads=1,
                                                         **{k: v for k, v in kw.items() if k != "jit"}))
    sides = (ours, theirs)
    for side in sides:  # one process-level warm-up of the kernels
        c = side.new_compiler()
        _, m, b = side.first_mask(lambda: c.compile_json_schema('{"type": "object", "properties": {"w": {}}}'))
        _steps(side, m, b, encode(b'{"w": [1, "x"]}'))
    report = Report(out)

    out(f"tool calling: 50 BFCL tools sampled per request, {requests} requests, {fmt} format")
    tools = request_tools(load_tools(data_dir), "dynamic", 50, requests)
    ttfm = {s.name: [] for s in sides}
    for side in sides:
        compiler = side.new_compiler()
        tag = xg2ref.get_model_structural_tag if side is ours else xgrammar.get_model_structural_tag
        firsts = []
        for k, request in enumerate(tools):
            seconds, _, bitmask = side.first_mask(lambda: compiler.compile_structural_tag(tag(fmt, tools=request)))
            ttfm[side.name].append(seconds)
            firsts.append(np.asarray(bitmask).copy())
        side.tool_masks = firsts
    _same_masks(ours.tool_masks, theirs.tool_masks, info, "tool calling, first masks")
    report.add("50 tools: mean time to first mask", np.mean(ttfm["xg2ref"]), np.mean(ttfm["xgrammar"]), "ms", 0.5)
    report.add("50 tools: the first request", ttfm["xg2ref"][0], ttfm["xgrammar"][0], "ms", 1.0)

    path = os.path.join(data_dir, "json_mode_eval", "json_mode_eval_from_maskbench.jsonl")
    with open(path, encoding="utf-8") as f:
        evals = [json.loads(line) for line in f if line.strip()][:items]
    texts = [encode(json.dumps(e["completion"]).encode()) for e in evals]
    out(f"json-mode-eval: {len(evals)} schemas and their gold completions ({sum(map(len, texts))} tokens)")
    workloads = (("schema", "schema", {}), ("schema, cache_enabled=False", "schema", {"cache_enabled": False}),
                 ("builtin JSON", "builtin JSON", {"cache_enabled": False}))
    for label, grammar, options in workloads:
        first, steps, masks = {}, {}, {}
        for side in sides:
            compiler = side.new_compiler(**options)  # kept across the documents
            first[side.name], steps[side.name], masks[side.name] = [], [], []
            for e, tokens in zip(evals, texts):
                call = (lambda: compiler.compile_json_schema(json.dumps(e["schema"]))) if grammar == "schema" \
                    else compiler.compile_builtin_json_grammar
                seconds, matcher, bitmask = side.first_mask(call)
                first[side.name].append(seconds)
                kept = [np.asarray(bitmask).copy()]
                try:
                    steps[side.name] += _steps(side, matcher, bitmask, tokens, kept)
                except AssertionError:
                    pass  # a gold completion its schema refuses (both engines agree: compared below)
                masks[side.name].append(kept)
        for e, tokens, a, b in zip(evals, texts, masks["xg2ref"], masks["xgrammar"]):
            _same_masks(a, b, info, f"json-mode-eval {e['id']}, {label}",
                        e["schema"] if grammar == "schema" else None, tokens)
        if grammar == "schema":
            report.add(f"json-mode-eval {label}: median time to first mask", np.median(first["xg2ref"]),
                       np.median(first["xgrammar"]), "ms", 0.8)
        else:
            report.add("builtin JSON grammar: time to first mask", first["xg2ref"][0], first["xgrammar"][0], "ms", 1.5)
        p50, p99 = (0.5, 1.5) if grammar == "schema" else (1.0, 1.5)
        for p, target in ((50, p50), (90, None), (99, p99), (99.9, None), (100, None)):
            name = "max" if p == 100 else f"p{p:g}"
            report.add(f"{label} along gold completions: time between masks {name}", _pct(steps["xg2ref"], p),
                       _pct(steps["xgrammar"], p), "us", target)

    out(f"a decoding loop with a {forward_ms:g} ms forward pass: the mask on the critical path")
    critical = {}
    for side in sides:
        compiler = side.new_compiler()
        critical[side.name] = []
        for e, tokens in zip(evals, texts):
            _, matcher, bitmask = side.first_mask(lambda: compiler.compile_json_schema(json.dumps(e["schema"])))
            try:
                critical[side.name] += _steps(side, matcher, bitmask, tokens, forward_s=forward_ms / 1e3)
            except AssertionError:
                pass
    for p, target in ((50, None), (99, 1.0)):
        report.add(f"schema, {forward_ms:g} ms forward pass: mask on the critical path p{p}",
                   _pct(critical["xg2ref"], p), _pct(critical["xgrammar"], p), "us", target)

    out("every entry at compile time (xg2ref jit=False; xgrammar builds them all)")
    eager = {"jit": False, "cache_enabled": False}
    from ...suite import load_cases

    sources = [("builtin JSON", None)] + [(f"llama.cpp {case.name.replace('llama_', '')}", case)
                                          for case in load_cases(list(LLAMA_CPP))]
    for what, case in sources:
        took = {}
        for side in sides:
            compiler = side.new_compiler(**eager)
            start = time.perf_counter()
            compiler.compile_grammar(case.text, root_rule_name=case.root) if case else compiler.compile_builtin_json_grammar()
            took[side.name] = time.perf_counter() - start
        report.add(f"{what}, every entry at compile: compile time", took["xg2ref"], took["xgrammar"], "ms", 1.0)
    took = {}
    for side in sides:
        compiler = side.new_compiler(**eager)
        times = []
        for e in evals:
            start = time.perf_counter()
            compiler.compile_json_schema(json.dumps(e["schema"]))
            times.append(time.perf_counter() - start)
        took[side.name] = float(np.median(times))
    report.add("json-mode-eval schemas, every entry at compile: median compile time", took["xg2ref"],
               took["xgrammar"], "ms", 1.0)

    out("strings and cliffs")
    string_100 = {"type": "object", "properties": {"s": {"type": "string", "maxLength": 100}}, "required": ["s"]}
    text = encode(('{"s": "' + "The quick brown fox jumps over the lazy dog; " * 2 + '"}').encode())
    _schema_row(report, sides, info, string_100, text, "maxLength 100", 1 / 50)
    long_text = encode(('{"s": "' + "The quick brown fox jumps over the lazy dog; " * 30 + '"}').encode())
    _schema_row(report, sides, info, {"type": "object", "properties": {"s": {"type": "string", "maxLength": 100000}},
                                      "required": ["s"]}, long_text, "maxLength 100000", None)
    _schema_row(report, sides, info, {"type": "object", "properties": {"s": {"type": "string", "minLength": 200}},
                                      "required": ["s"]}, long_text, "minLength 200", None)
    _cliff_row(report, sides, info, encode, cliff_tokens)
    _configuration_row(report, info, string_100)
    _chain_row(report, vocab, chain_rules)
    out("")
    out(report.table())
    out("(xg2ref: GrammarCompiler(info); xgrammar 0.2.8: GrammarCompiler(info, max_threads=1); one process, "
        "one thread, after one Numba warm-up; every request counted, the cold first ones too)")
    return 0


def _schema_row(report: Report, sides, info, schema: dict, tokens: list, name: str, target: Optional[float]):
    firsts, steps, masks = {}, {}, {}
    for side in sides:
        compiler = side.new_compiler()
        seconds, matcher, bitmask = side.first_mask(lambda: compiler.compile_json_schema(json.dumps(schema)))
        masks[side.name] = [np.asarray(bitmask).copy()]
        firsts[side.name] = seconds
        steps[side.name] = _steps(side, matcher, bitmask, tokens, masks[side.name])
    _same_masks(masks["xg2ref"], masks["xgrammar"], info, name, schema, tokens)
    report.add(f"string {name}: time to first mask", firsts["xg2ref"], firsts["xgrammar"], "ms", target)
    report.add(f"string {name}: time between masks p50 ({len(tokens)} tokens)", _pct(steps["xg2ref"], 50),
               _pct(steps["xgrammar"], 50), "us", 1.0 if target else None)


def _cliff_row(report: Report, sides, info, encode, n_tokens: int) -> None:
    """"Any text without X, then X": the mask time of the first and the last 500 steps."""
    marker = encode(MARKER.encode())
    if len(marker) != 1:
        report.out(f"  (the cliff grammar needs {MARKER!r} as one token of the vocabulary: skipped)")
        return
    ebnf = f'root ::= TagDispatch(("{MARKER}", end), loop_after_dispatch=false)\nend ::= "\\n"'
    rng = random.Random(0)
    words = encode(" ".join(rng.choice(FREE_TEXT_WORDS) for _ in range(n_tokens)).encode())[:n_tokens]
    window = min(500, len(words) // 4)
    rows = {}
    for side in sides:
        compiler = side.new_compiler()
        try:
            _, matcher, bitmask = side.first_mask(lambda: compiler.compile_grammar(ebnf))
        except Exception as err:  # noqa: BLE001  (an engine without this construct: said, not hidden)
            report.out(f"  {side.name} cannot compile the cliff grammar: {err}".splitlines()[0])
            return
        times = _steps(side, matcher, bitmask, words)
        rows[side.name] = (_pct(times[:window], 50), _pct(times[-window:], 50))
    what = f"text without X then X: mask p50, first {window} steps"
    report.add(what, rows["xg2ref"][0], rows["xgrammar"][0], "us")
    report.add(f"... last {window} of {len(words)} steps (must not grow)", rows["xg2ref"][1], rows["xgrammar"][1], "us")


def _configuration_row(report: Report, info, schema: dict) -> None:
    """No configuration is a cliff: the `maxLength: 100` string's first mask with
    `cache_enabled=False` beside the defaults' (xg2ref against itself)."""
    import xg2ref

    took = {}
    for label, options in (("defaults", {}), ("cache_enabled=False", {"cache_enabled": False})):
        compiler = xg2ref.GrammarCompiler(info, **options)
        start = time.perf_counter()
        matcher = xg2ref.GrammarMatcher(compiler.compile_json_schema(json.dumps(schema)))
        matcher.fill_next_token_bitmask(xg2ref.allocate_token_bitmask(1, info.vocab_size))
        took[label] = time.perf_counter() - start
    report.add("string maxLength 100, xg2ref cache_enabled=False / xg2ref defaults: first mask",
               took["cache_enabled=False"], took["defaults"], "ms", 2.0)


def _chain_compile(engine: str, vocab: str, n: int, queue) -> None:
    """Compile the rule chain in this (child) process; put the seconds taken, or the error."""
    try:
        import xg2ref

        info = xg2ref.TokenizerInfo.from_quicktok(vocab)
        text = "\n".join(["root ::= r1 r1"] + [f"r{k} ::= r{k + 1} r{k + 1}" for k in range(1, n - 1)]
                          + [f'r{n - 1} ::= "a"'])
        start = time.perf_counter()
        if engine == "xg2ref":
            matcher = xg2ref.GrammarMatcher(xg2ref.GrammarCompiler(info).compile_grammar(text))
            matcher.fill_next_token_bitmask(xg2ref.allocate_token_bitmask(1, info.vocab_size))
        else:
            import xgrammar

            from .mask import _xgrammar_info

            compiler = xgrammar.GrammarCompiler(_xgrammar_info(xgrammar, info), max_threads=1)
            matcher = xgrammar.GrammarMatcher(compiler.compile_grammar(text))
            matcher.fill_next_token_bitmask(xgrammar.allocate_token_bitmask(1, info.vocab_size))
        queue.put(("seconds", time.perf_counter() - start))
    except Exception as err:  # noqa: BLE001  (a clean error is an answer: reported)
        queue.put(("error", f"{type(err).__name__}: {err}".splitlines()[0][:100]))


def _chain_row(report: Report, vocab: str, n: int) -> None:
    """The grammar of n rules, each referencing the next twice: it must end in seconds or with a
    clean error; each engine in a process of its own, stopped after CHAIN_SECONDS."""
    answers = {}
    spawn = multiprocessing.get_context("spawn")
    for engine in ("xg2ref", "xgrammar"):
        queue = spawn.Queue()
        child = spawn.Process(target=_chain_compile, args=(engine, vocab, n, queue))
        start = time.perf_counter()
        child.start()
        child.join(CHAIN_SECONDS)
        if child.is_alive():
            child.kill()
            child.join()
            answer = ("timeout", f"still running after {CHAIN_SECONDS:g} s")
        else:
            answer = queue.get(timeout=5) if child.exitcode == 0 else ("error", f"exit code {child.exitcode}")
        answers[engine] = answer + (time.perf_counter() - start,)
    for engine, (kind, value, wall) in answers.items():
        said = f"first mask after {value * 1e3:.1f} ms" if kind == "seconds" else value
        report.out(f"  {n:,} rules each referencing the next twice, {engine}: {said} "
                   f"({wall:.1f} s with its process)")
    if answers["xg2ref"][0] == "seconds" and answers["xgrammar"][0] == "seconds":
        report.add(f"{n:,}-rule chain: compile to first mask", answers["xg2ref"][1], answers["xgrammar"][1], "ms")
