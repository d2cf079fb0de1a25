"""Run the issue-tracker cases (tests/data/tracker_cases.json) on every engine and write results.md.

    cd /work/main && .venv/bin/python benchmarks/tracker_cases/run.py

Each case is a grammar source (JSON schema, regex, xgrammar EBNF or Lark) and labelled complete
strings. Every engine compiles the source once and is asked, for each string, whether it accepts
the whole string as a complete output:

    xg2ref      xg2ref.testing._is_grammar_accept_string(Grammar.from_<kind>(source, **options), s)
    xgrammar    xgrammar.testing._is_grammar_accept_string(Grammar.from_<kind>(...), s)   (0.2.8)
    llguidance  adapter from xg2ref.oracle.other_engines.make_engine: compile_front_end(kind, source)
                or compile(ebnf); accept_bytes(s.encode()) and is_completed()              (1.9.1)
    outlines    the same through the outlines-core adapter (regex and JSON schema only)     (0.2.14)

The adapters run over a byte-level vocabulary (the 256 single bytes plus a stop token "</s>"), so
any UTF-8 text can be spelled. llguidance runs in a worker process: a case that makes it spin
(llguidance 1.9.1 can loop on some lexeme layouts) is killed after 20 s and recorded as a timeout.

A verdict is right when it equals the label. A compile error is a verdict on no string (it counts
as wrong), except in cases marked "empty_language": the schema has no valid instance, so refusing
it is as right as rejecting every string. JSON-schema options ("strict_mode", ...) go to xg2ref
and xgrammar only; llguidance uses flexible whitespace, outlines `OUTLINES_WHITESPACE`.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "data" / "tracker_cases.json"
RESULTS = Path(__file__).resolve().parent / "results.md"
ENGINES = ("xg2ref", "xgrammar", "llguidance", "outlines")
LLG_TIMEOUT_S = 20.0


def load_cases():
    with open(CASES, encoding="utf-8") as f:
        return json.load(f)


def _short(err: BaseException) -> str:
    text = " ".join(str(err).split())
    text = re.sub(r"^\[\d\d:\d\d:\d\d\] ", "", text)  # xgrammar's log timestamp
    return f"error: {type(err).__name__}: {text[:120]}"


# ---- per-engine verdicts ---------------------------------------------------------------------


def _grammar_verdicts(module, case, json_text: bool):
    """xg2ref or xgrammar: compile with Grammar.from_<kind>, then the accept-string helper."""
    kind, source, options = case["kind"], case["source"], case.get("options", {})
    texts = [s["text"] for s in case["strings"]]
    try:
        if kind == "json_schema":
            grammar = module.Grammar.from_json_schema(json.dumps(source) if json_text else source, **options)
        elif kind == "regex":
            grammar = module.Grammar.from_regex(source)
        elif kind == "ebnf":
            grammar = module.Grammar.from_ebnf(source)
        elif kind == "lark":
            grammar = module.Grammar.from_lark(source)
        else:
            raise ValueError(f"unknown kind {kind!r}")
    except Exception as err:  # noqa: BLE001 - an engine that cannot compile records the error
        return [_short(err)] * len(texts)
    out = []
    for text in texts:
        try:
            out.append(bool(module.testing._is_grammar_accept_string(grammar, text)))
        except Exception as err:  # noqa: BLE001
            out.append(_short(err))
    return out


def xg2ref_verdicts(case):
    import xg2ref as xgr
    return _grammar_verdicts(xgr, case, json_text=False)


def xgrammar_verdicts(case):
    import xgrammar
    return _grammar_verdicts(xgrammar, case, json_text=True)


def _tokenizer_info():
    import xg2ref as xgr
    return xgr.TokenizerInfo([bytes([b]) for b in range(256)] + [b"</s>"], stop_token_ids=[256])


def adapter_verdicts(engine, case):
    """llguidance / outlines through the adapters of xg2ref.oracle.other_engines."""
    texts = [s["text"] for s in case["strings"]]
    kind, source = case["kind"], case["source"]
    try:
        matcher = engine.compile(source) if kind == "ebnf" else engine.compile_front_end(kind, source)
    except Exception as err:  # noqa: BLE001
        return [_short(err)] * len(texts)
    out = []
    for text in texts:
        try:
            matcher.reset()
            out.append(bool(matcher.accept_bytes(text.encode("utf-8")) and matcher.is_completed()))
        except Exception as err:  # noqa: BLE001
            out.append(_short(err))
    return out


def outlines_verdicts(cases):
    from xg2ref.oracle.other_engines import make_engine
    engine = make_engine("outlines", _tokenizer_info())
    return [adapter_verdicts(engine, case) for case in cases]


def _llguidance_worker(indices):
    """Worker process: one JSON line per case, in order."""
    from xg2ref.oracle.other_engines import make_engine
    cases = load_cases()
    engine = make_engine("llguidance", _tokenizer_info())
    for i in indices:
        verdicts = adapter_verdicts(engine, cases[i])
        sys.stdout.write(json.dumps({"index": i, "verdicts": verdicts}) + "\n")
        sys.stdout.flush()


def llguidance_verdicts(cases):
    """Every case in a worker process; a case that takes over LLG_TIMEOUT_S kills the worker and
    is recorded as a timeout, and a new worker takes the remaining cases."""
    results = {}
    pending = list(range(len(cases)))
    while pending:
        proc = subprocess.Popen([sys.executable, __file__, "--llguidance-worker", ",".join(map(str, pending))],
                                cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines: "queue.Queue" = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout] + [lines.put(None)],
                         daemon=True).start()
        while pending:
            try:
                line = lines.get(timeout=LLG_TIMEOUT_S)
            except queue.Empty:
                line = "TIMEOUT"
            if line is None or line == "TIMEOUT":
                stuck = pending.pop(0)
                why = "timeout" if line == "TIMEOUT" else "error: the worker process died"
                results[stuck] = [f"{why} (over {LLG_TIMEOUT_S:.0f} s)" if why == "timeout" else why] \
                    * len(cases[stuck]["strings"])
                proc.kill()
                proc.wait()
                break
            record = json.loads(line)
            results[record["index"]] = record["verdicts"]
            pending.remove(record["index"])
        else:
            proc.wait()
    return [results[i] for i in range(len(cases))]


# ---- scoring and the report ------------------------------------------------------------------


def is_right(verdict, label: bool, case) -> bool:
    if isinstance(verdict, bool):
        return verdict == label
    return bool(case.get("empty_language")) and not label and str(verdict).startswith("error")


def cell(verdict, label, case) -> str:
    if isinstance(verdict, bool):
        word = "accept" if verdict else "reject"
    else:
        word = str(verdict).replace("|", "/")
    return word if is_right(verdict, label, case) else f"**{word}** ✗"


def md_text(text: str) -> str:
    shown = json.dumps(text, ensure_ascii=False)[1:-1]
    return "`" + shown.replace("`", "\\`").replace("|", "\\|") + "`"


def replay_case(case_id: str) -> int:
    """One case's verdicts per engine, printed (the replay command of docs/findings.md)."""
    cases = [c for c in load_cases() if c["id"] == case_id]
    if not cases:
        print(f"no case {case_id!r} in tests/data/tracker_cases.json")
        return 2
    c = cases[0]
    table = {"xg2ref": xg2ref_verdicts(c), "xgrammar": xgrammar_verdicts(c),
             "llguidance": llguidance_verdicts(cases)[0], "outlines": outlines_verdicts(cases)[0]}
    print(f"{c['id']} ({c['kind']}): {c['url']}\n{c['summary']}\nsource: {json.dumps(c['source'], ensure_ascii=False)}")
    for j, s in enumerate(c["strings"]):
        print(f"  {json.dumps(s['text'], ensure_ascii=False)}: {'valid' if s['valid'] else 'invalid'} ({s['why']})")
        for e in ENGINES:
            v = table[e][j]
            print(f"      {e:<11} {v if not isinstance(v, bool) else ('accept' if v else 'reject')}"
                  f"{'' if is_right(v, s['valid'], c) else '   <- wrong'}")
    return 0


def run():
    cases = load_cases()
    started = time.time()
    table = {"xg2ref": [xg2ref_verdicts(c) for c in cases],
             "xgrammar": [xgrammar_verdicts(c) for c in cases],
             "llguidance": llguidance_verdicts(cases),
             "outlines": outlines_verdicts(cases)}
    elapsed = time.time() - started
    n_strings = sum(len(c["strings"]) for c in cases)
    right = {e: 0 for e in ENGINES}
    errors = {e: 0 for e in ENGINES}
    compiled = {e: [0, 0] for e in ENGINES}  # [right, strings] over the cases the engine compiled
    for e in ENGINES:
        for c, verdicts in zip(cases, table[e]):
            ran = any(isinstance(v, bool) for v in verdicts)
            for s, v in zip(c["strings"], verdicts):
                right[e] += is_right(v, s["valid"], c)
                errors[e] += not isinstance(v, bool)
                if ran:
                    compiled[e][0] += is_right(v, s["valid"], c)
                    compiled[e][1] += 1

    versions = {}
    for name, module in (("xgrammar", "xgrammar"), ("llguidance", "llguidance"), ("outlines-core", "outlines_core")):
        try:
            from importlib.metadata import version
            versions[name] = version(name)
        except Exception:  # noqa: BLE001
            versions[name] = "?"
    lines = [
        "# Issue-tracker cases: verdicts of four engines",
        "",
        f"{len(cases)} cases, {n_strings} labelled strings, from the public issue trackers of xgrammar, llguidance, "
        "outlines-core and outlines (a few reached through vLLM's and SGLang's trackers). The cases, their "
        "sources and the clause behind each label are in `tests/data/tracker_cases.json`; "
        "`tests/test_tracker_cases.py` pins xg2ref's verdicts.",
        "",
        "Regenerate with:",
        "",
        "    cd /work/main && .venv/bin/python benchmarks/tracker_cases/run.py",
        "",
        f"Engines: xg2ref (this repository), xgrammar {versions['xgrammar']}, llguidance {versions['llguidance']}, "
        f"outlines-core {versions['outlines-core']}; llguidance and outlines through "
        "`xg2ref.oracle.other_engines` over a byte-level vocabulary (256 single bytes and `</s>`). "
        f"Run time {elapsed:.0f} s.",
        "",
        "Strings are shown as JSON string contents (`\\n` is a line feed, `\\\"` a quote). "
        "A verdict is whether the engine accepts the whole string as a complete output. `accept`/`reject` in "
        "bold with ✗ disagree with the label. A compile error counts as wrong, except in cases marked "
        "empty-language (no valid instance exists, so refusing the schema is right). llguidance cases that "
        f"ran over {LLG_TIMEOUT_S:.0f} s were killed (`timeout`). JSON-schema options apply to xg2ref and "
        "xgrammar only.",
        "",
        "## Totals",
        "",
        "| engine | right | of | compile/run errors or timeouts | right in the cases it compiled |",
        "|---|---|---|---|---|",
    ]
    for e in ENGINES:
        lines.append(f"| {e} | {right[e]} | {n_strings} | {errors[e]} | {compiled[e][0]} of {compiled[e][1]} |")
    lines += ["", "outlines reads no EBNF or Lark (it has no such front end), so those cases count against it in "
              "the first total; the last column leaves out every case an engine did not compile.", "",
              "xg2ref's disagreements with the labels (a departure named in specs/05-front-ends.md is pinned "
              "by the test as such):", ""]
    for c, verdicts in zip(cases, table["xg2ref"]):
        for s, v in zip(c["strings"], verdicts):
            if not is_right(v, s["valid"], c):
                what = (f"departs by design: {c['xg2ref_departs']}" if "xg2ref_verdict" in s or c.get("xg2ref_refuses")
                        else "not a listed departure")
                lines.append(f"- {c['id']}: {md_text(s['text'])} is {'valid' if s['valid'] else 'invalid'}, "
                             f"xg2ref: {cell(v, s['valid'], c)} ({what})")
    lines += ["", "Right per case (strings right / strings):", "",
              "| case | kind | " + " | ".join(ENGINES) + " |", "|---|---|" + "---|" * len(ENGINES)]
    for i, c in enumerate(cases):
        row = []
        for e in ENGINES:
            ok = sum(is_right(v, s["valid"], c) for s, v in zip(c["strings"], table[e][i]))
            mark = "" if ok == len(c["strings"]) else " ✗"
            row.append(f"{ok}/{len(c['strings'])}{mark}")
        lines.append(f"| [{c['id']}](#{c['id']}) | {c['kind']} | " + " | ".join(row) + " |")
    lines += ["", "## Cases", ""]
    for i, c in enumerate(cases):
        src, note = c["source"], ""
        if not isinstance(src, str):
            src = json.dumps(src, ensure_ascii=False)
        elif any(ord(ch) < 32 and ch not in "\n" for ch in src):
            src, note = json.dumps(src, ensure_ascii=False), " (holds control characters: shown as a JSON string)"
        lines += [f"### {c['id']}", "",
                  f"Reported against {c['engine_reported']}: <{c['url']}>. {c['summary']}", ""]
        if c.get("options"):
            lines += [f"Options (xg2ref, xgrammar): `{json.dumps(c['options'])}`.", ""]
        if c.get("empty_language"):
            lines += ["Empty language: refusing to compile counts as right.", ""]
        if c.get("xg2ref_departs"):
            lines += [f"xg2ref departs by design: {c['xg2ref_departs']}.", ""]
        fence = "```"
        lines += [f"{c['kind']}{note}:", "", fence, src, fence, "",
                  "| string | label | " + " | ".join(ENGINES) + " | why |",
                  "|---|---|" + "---|" * len(ENGINES) + "---|"]
        for j, s in enumerate(c["strings"]):
            label = "valid" if s["valid"] else "invalid"
            cells = [cell(table[e][i][j], s["valid"], c) for e in ENGINES]
            lines.append(f"| {md_text(s['text'])} | {label} | " + " | ".join(cells) + f" | {s['why'].replace('|', '/')} |")
        lines.append("")
    RESULTS.write_text("\n".join(lines), encoding="utf-8")
    print(f"{len(cases)} cases, {n_strings} strings; right: "
          + ", ".join(f"{e} {right[e]}/{n_strings}" for e in ENGINES) + f"; wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--llguidance-worker":
        os.environ.setdefault("PYTHONUNBUFFERED", "1")
        _llguidance_worker([int(x) for x in sys.argv[2].split(",") if x])
    elif len(sys.argv) == 3 and sys.argv[1] == "--case":
        sys.exit(replay_case(sys.argv[2]))
    else:
        run()
