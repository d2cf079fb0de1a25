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

Besides results.md, a run writes every engine's verdicts to tests/data/tracker_engine_verdicts.json
({case id: {engine: [verdict per string]}}); tests/test_tracker_cases.py recomputes them for the
installed engines, so a new release that changes one shows up as a failing test.

Fuzz findings. `--case ID` also replays an entry of tests/data/fuzz_findings.json (the classes of
disagreement `xg2ref fuzz` found): each of its checks is one question over the fuzz vocabulary
(`xg2ref.tools.fuzz.case.default_vocabulary()`), put to the oracle and to the four engines as the fuzzer
puts it (`xg2ref/tools/fuzz/shrink.py`):

    prefix    the bytes, one at a time, are all accepted      (oracle: a viable prefix)
    sentence  the same, and then the matcher is complete      (oracle: a sentence)
    whole     one accept of all the bytes                     (oracle: a viable prefix)
    token     after the bytes, the token is in the mask       (oracle: prefix + token viable)
    accept    after the bytes, accept_token(token) succeeds   (oracle: as for token)

xg2ref and the oracle run here; each other engine runs in a worker process, one question at a
time, so a spin (llguidance) or a crash (xgrammar) costs one question: it is recorded as "hang"
(no answer in FINDING_TIMEOUT_S) or "crash" (the worker died by a signal), and a new worker takes
the questions left. `finding_verdicts` is what tests/test_fuzz_findings.py calls.
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))
CASES = ROOT / "tests" / "data" / "tracker_cases.json"
VERDICTS = ROOT / "tests" / "data" / "tracker_engine_verdicts.json"
FINDINGS = ROOT / "tests" / "data" / "fuzz_findings.json"
RESULTS = Path(__file__).resolve().parent / "results.md"
ENGINES = ("xg2ref", "xgrammar", "llguidance", "outlines")
LLG_TIMEOUT_S = 20.0
FINDING_TIMEOUT_S = 120.0


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
        sys.stdout.write(json.dumps({"key": i, "value": verdicts}) + "\n")
        sys.stdout.flush()


def _pump(stream, lines: "queue.Queue") -> None:
    """Copy a worker's output lines to `lines`, then None (bound to this worker's own queue, so that
    a worker that dies late cannot end its successor's)."""
    for line in stream:
        lines.put(line)
    lines.put(None)


def _worker_answers(argv, keys, timeout: float) -> dict:
    """Run `argv + [the pending keys, comma-joined]` as a worker that prints one JSON line
    {"key": k, "value": v} per key, in order. A key with no answer within `timeout` seconds is
    answered "hang" (the worker is killed), one whose worker dies "crash" (killed by a signal) or
    "died"; a new worker takes the keys left."""
    results = {}
    pending = list(keys)
    while pending:
        proc = subprocess.Popen(argv + [",".join(map(str, pending))], cwd=str(ROOT), stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        lines: "queue.Queue" = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        while pending:
            try:
                line = lines.get(timeout=timeout)
            except queue.Empty:
                line = "TIMEOUT"
            if line is None or line == "TIMEOUT":
                stuck = pending.pop(0)
                if line == "TIMEOUT":
                    proc.kill()
                    results[stuck] = "hang"
                else:
                    results[stuck] = "crash" if proc.wait() < 0 else "died"
                proc.wait()
                break
            record = json.loads(line)
            results[record["key"]] = record["value"]
            pending.remove(record["key"])
        else:
            proc.wait()
    return results


def llguidance_verdicts(cases):
    """Every case in a worker process; a case that takes over LLG_TIMEOUT_S kills the worker and
    is recorded as a timeout, and a new worker takes the remaining cases."""
    answers = _worker_answers([sys.executable, __file__, "--llguidance-worker"], range(len(cases)), LLG_TIMEOUT_S)
    out = []
    for i, case in enumerate(cases):
        value = answers[i]
        if value == "hang":
            value = [f"timeout (over {LLG_TIMEOUT_S:.0f} s)"] * len(case["strings"])
        elif isinstance(value, str):
            value = ["error: the worker process died"] * len(case["strings"])
        out.append(value)
    return out


# ---- fuzz findings (tests/data/fuzz_findings.json) -------------------------------------------


def same_verdict(recorded, got) -> bool:
    """Whether two recorded verdicts agree: booleans exactly; otherwise by kind ("error",
    "timeout", "crash", "hang"), since error texts carry adapter wording and source paths."""
    if isinstance(recorded, bool) or isinstance(got, bool):
        return recorded is got

    def kind(verdict) -> str:
        return str(verdict).split(":")[0].split(" ")[0]

    return kind(recorded) == kind(got)


def load_findings():
    with open(FINDINGS, encoding="utf-8") as f:
        return json.load(f)


def check_bytes(check) -> bytes:
    """The input bytes of a check: `hex`, else `text` as UTF-8."""
    return bytes.fromhex(check["hex"]) if "hex" in check else check["text"].encode("utf-8")


def check_token_bytes(check) -> bytes:
    """The bytes of a token/accept check's token: `token_hex`, else `token` as UTF-8."""
    return bytes.fromhex(check["token_hex"]) if "token_hex" in check else check["token"].encode("utf-8")


def check_token(check, info) -> int:
    """The id, in the vocabulary `info`, of the token a token/accept check asks about (found by
    its bytes, or the first stop token for `token_stop`)."""
    if check.get("token_stop"):
        return info.stop_token_ids[0]
    token = check_token_bytes(check)
    for token_id, spelled in enumerate(info.decoded_vocab):
        if bytes(spelled) == token and token_id not in info.stop_token_ids:
            return token_id
    raise KeyError(f"no token {token!r} in the fuzz vocabulary")


def check_source(entry, check):
    """(kind, source text) of a check: its own `kind` and `source` when it has them (a class that
    shows in several shapes), else the entry's."""
    kind, source = check.get("kind", entry["kind"]), check.get("source", entry["source"])
    return kind, json.dumps(source) if kind == "json_schema" else source


def fuzz_vocabulary():
    from xg2ref.tools.fuzz.case import default_vocabulary
    return default_vocabulary()


def _ask(matcher, question: str, data: bytes, token_id):
    """One question (the module docstring) to an engine's matcher."""
    matcher.reset()
    if question in ("prefix", "sentence"):
        walked = all(matcher.accept_bytes(bytes((b,))) for b in data)
        return bool(walked) if question == "prefix" else bool(walked and matcher.is_completed())
    if question == "whole":
        return bool(matcher.accept_bytes(data))
    if data and not matcher.accept_bytes(data):
        return "error: refuses the bytes before the token"
    if question == "token":
        return bool(matcher.bool_mask()[token_id])
    return bool(matcher.accept_token(token_id))


class FindingAsker:
    """One engine, or the oracle ("oracle"), over the fuzz vocabulary; compiled sources are kept.
    `fast`: for entries marked `outlines_via_regex`, outlines answers sentence questions from the
    regex it builds for the schema (Python's `re.fullmatch`) rather than from its index, which
    takes 15 s to minutes there, and leaves the other questions unasked (None)."""

    def __init__(self, name: str, fast: bool = False):
        from xg2ref.oracle.other_engines import make_engine
        self.name, self.fast = name, fast
        self.info = fuzz_vocabulary()
        self.engine = None if name == "oracle" else make_engine(name, self.info)
        self._compiled: dict = {}

    def _compile(self, kind: str, text: str):
        key = (kind, text)
        if key not in self._compiled:
            from xg2ref.tools.diff.checks import compile_case
            from xg2ref.oracle.engines import OracleMatcher
            from xg2ref.tools.user_cases import case_from_text
            try:
                case = case_from_text("finding", text, kind)
                self._compiled[key] = (OracleMatcher(case.grammar().ir, self.info) if self.engine is None
                                       else compile_case(self.engine, case))
            except Exception as err:  # noqa: BLE001 - a refused grammar is the engine's verdict
                self._compiled[key] = _short(err)
        return self._compiled[key]

    def verdict(self, entry, check):
        kind, text = check_source(entry, check)
        question, data = check["question"], check_bytes(check)
        token_id = check_token(check, self.info) if question in ("token", "accept") else None
        if self.fast and self.name == "outlines" and entry.get("outlines_via_regex"):
            return self._outlines_regex_verdict(kind, text, question, data)
        compiled = self._compile(kind, text)
        if isinstance(compiled, str):
            return compiled
        if self.engine is None:
            return self._oracle_verdict(compiled, question, data, token_id)
        encode = getattr(self.engine, "encode", None)
        if encode is not None and not (all(encode(bytes((b,))) is not None for b in data)
                                       if question in ("prefix", "sentence") else encode(data) is not None):
            return "error: the vocabulary cannot spell the bytes"
        try:
            return _ask(compiled, question, data, token_id)
        except Exception as err:  # noqa: BLE001
            return _short(err)

    @staticmethod
    def _oracle_verdict(oracle, question, data, token_id):
        if question in ("prefix", "whole"):
            return bool(oracle.recognizer.is_prefix(data))
        if question == "sentence":
            return bool(oracle.recognizer.is_sentence(data))
        oracle.reset()
        if data and not oracle.accept_bytes(data):
            return "error: refuses the bytes before the token"
        return bool(oracle.token_allowed(token_id))

    def _outlines_regex_verdict(self, kind, text, question, data):
        if kind != "json_schema" or question != "sentence":
            return None  # not asked: a regex match answers whole outputs only
        try:
            pattern = self.engine.json_schema_regex(json.loads(text))
        except Exception as err:  # noqa: BLE001
            return _short(err)
        return re.fullmatch(pattern, data.decode("utf-8")) is not None


def _finding_worker(engine_name: str, mode: str, keys: str):
    """Worker process: one JSON line per key "entry.check" (indices into fuzz_findings.json)."""
    findings = load_findings()
    asker = FindingAsker(engine_name, fast=mode == "fast")
    for key in keys.split(","):
        if key:
            i, j = (int(x) for x in key.split("."))
            value = asker.verdict(findings[i], findings[i]["checks"][j])
            sys.stdout.write(json.dumps({"key": key, "value": value}) + "\n")
            sys.stdout.flush()


def finding_verdicts(findings, engines=("oracle",) + ENGINES, fast: bool = False) -> dict:
    """{engine: [[verdict per check] per entry]} for entries of tests/data/fuzz_findings.json (a
    sub-list in any order). Every engine but the oracle and xg2ref answers in its own worker
    processes, all started first and run side by side while this process answers for the oracle
    and xg2ref. A question that spins is "hang", one that kills its worker "crash"; questions
    recorded as either go last, so that they end a worker rather than make it start again."""
    every = load_findings()
    where = {e["id"]: i for i, e in enumerate(every)}
    positions = [where[e["id"]] for e in findings]
    keys = [(i, j) for i in positions for j in range(len(every[i]["checks"]))]
    table, futures = {}, {}
    remote = [name for name in engines if name not in ("oracle", "xg2ref")]
    with ThreadPoolExecutor(max_workers=max(1, len(remote))) as pool:
        for name in remote:
            recorded = {(i, j): every[i]["checks"][j].get("engines", {}).get(name) for i, j in keys}
            ordered = sorted(keys, key=lambda key: recorded[key] in ("crash", "hang"))
            argv = [sys.executable, __file__, "--finding-worker", name, "fast" if fast else "full"]
            futures[name] = pool.submit(_worker_answers, argv, [f"{i}.{j}" for i, j in ordered], FINDING_TIMEOUT_S)
        for name in engines:
            if name in ("oracle", "xg2ref"):
                asker = FindingAsker(name)
                table[name] = [[asker.verdict(every[i], c) for c in every[i]["checks"]] for i in positions]
        for name, future in futures.items():
            answers = future.result()
            table[name] = [[answers[f"{i}.{j}"] for j in range(len(every[i]["checks"]))] for i in positions]
    return {name: table[name] for name in engines}


def _shown(data: bytes) -> str:
    return json.dumps(data.decode("utf-8", "backslashreplace"), ensure_ascii=False)


def replay_finding(entry) -> int:
    """One fuzz finding's checks on the oracle and the four engines, printed."""
    table = finding_verdicts([entry])
    source = entry["source"] if isinstance(entry["source"], str) else json.dumps(entry["source"], ensure_ascii=False)
    print(f"{entry['id']} ({entry['kind']}, found with {entry['engine']}): {entry['summary']}")
    if entry.get("by_design"):
        print(f"by design: {entry['by_design']}")
    if entry.get("upstream"):
        print(f"upstream: {entry['upstream']}")
    print(f"source: {source}")
    for j, check in enumerate(entry["checks"]):
        own = check.get("source")
        if own is not None:
            shown = own if isinstance(own, str) else json.dumps(own, ensure_ascii=False)
            if "\n" in shown:
                shown = json.dumps(shown, ensure_ascii=False)
            print(f"  {check.get('kind', entry['kind'])} source: {shown}")
        data = _shown(check_bytes(check))
        token = "</s> (the stop token)" if check.get("token_stop") else _shown(check_token_bytes(check)) \
            if check["question"] in ("token", "accept") else ""
        what = {"prefix": f"is {data} a viable prefix (byte by byte)",
                "sentence": f"is {data} a complete output (byte by byte)",
                "whole": f"is {data} a viable prefix (read at once)",
                "token": f"after {data}, is token {token} in the mask",
                "accept": f"after {data}, does accept_token({token}) succeed"}[check["question"]]
        print(f"  {what}? {'yes' if check['valid'] else 'no'} ({check['why']})")
        for name in table:
            verdict = table[name][0][j]
            documented = check.get("xg2ref_verdict", check["valid"]) if name in ("oracle", "xg2ref") else check["valid"]
            word = ("yes" if verdict else "no") if isinstance(verdict, bool) else str(verdict)
            note = "" if verdict == check["valid"] else \
                "   <- documented departure" if verdict == documented else "   <- wrong"
            print(f"      {name:<11} {word}{note}")
    return 0


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
    """One case's verdicts per engine, printed (the replay command of docs/findings.md); the id of a
    fuzz finding replays that finding."""
    cases = [c for c in load_cases() if c["id"] == case_id]
    if not cases:
        findings = [f for f in load_findings() if f["id"] == case_id]
        if findings:
            return replay_finding(findings[0])
        print(f"no case {case_id!r} in tests/data/tracker_cases.json or tests/data/fuzz_findings.json")
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


def write_verdicts(cases, table):
    """tests/data/tracker_engine_verdicts.json: {case id: {engine: [verdict per string]}}."""
    record = {c["id"]: {e: table[e][i] for e in ENGINES} for i, c in enumerate(cases)}
    VERDICTS.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def run():
    cases = load_cases()
    started = time.time()
    table = {"xg2ref": [xg2ref_verdicts(c) for c in cases],
             "xgrammar": [xgrammar_verdicts(c) for c in cases],
             "llguidance": llguidance_verdicts(cases),
             "outlines": outlines_verdicts(cases)}
    elapsed = time.time() - started
    write_verdicts(cases, table)
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
        "`tests/test_tracker_cases.py` pins xg2ref's verdicts against the labels, and every other engine's "
        "verdicts against the record in `tests/data/tracker_engine_verdicts.json` (written by the same run).",
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
          + ", ".join(f"{e} {right[e]}/{n_strings}" for e in ENGINES)
          + f"; wrote {RESULTS.relative_to(ROOT)} and {VERDICTS.relative_to(ROOT)}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--llguidance-worker":
        os.environ.setdefault("PYTHONUNBUFFERED", "1")
        _llguidance_worker([int(x) for x in sys.argv[2].split(",") if x])
    elif len(sys.argv) == 5 and sys.argv[1] == "--finding-worker":
        _finding_worker(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 3 and sys.argv[1] == "--case":
        sys.exit(replay_case(sys.argv[2]))
    else:
        run()
