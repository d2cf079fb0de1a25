"""One case of `xg2ref fuzz` (xg2ref/tools/fuzz/runner.py): drawing it, and turning its disagreements into findings.

Case number i of seed s is drawn from `random.Random("xg2ref-fuzz:s:i")` (`draw_case`), the
kinds taking turns:

    ebnf          random_grammar (xg2ref/strategies.py) printed as xgrammar EBNF
    regex         random_regex: literals, [a-c] classes, groups, |, *, +, ?, {m,n}
    json_schema   random_json_schema; one draw in three instead takes a schema of the bundled
                  suite (the `json_schema` files of suite/cases.json) and drops or alters one
                  of its keywords (`mutate_schema`)

`CaseChecker.run` puts the case through the differential checks against the engines
(xg2ref/tools/diff/user.py) over a small vocabulary (`default_vocabulary`: every ASCII character,
some longer tokens, a stop token). Each disagreement with the oracle that is not by design is:

1. confirmed: asked again on bytes alone (fuzz_shrink.Asker), of the engine and of the oracle;
   when the engine turns out to agree with the oracle and xg2ref did not, it is xg2ref's; when
   the engine's adapter cannot be given the bytes (llguidance and outlines read tokens, and the
   vocabulary spells no lone byte of a UTF-8 sequence), it is dropped;
2. shrunk: the input bytes by delta debugging, then the case (a schema's keywords, a regex's
   text, an EBNF's rules and alternatives), then the bytes again (fuzz_shrink.py);
3. classified (`fuzz_shrink.finding_class`) and, for JSON-schema verdicts on input that parses
   as JSON, judged by the `jsonschema` package: `jsonschema_valid` for the shrunk input under
   the shrunk schema, `jsonschema_valid_original` for the input as found.

By-design disagreements are kept as found, once per class. Findings of a class already seen
are dropped; at most `SHRINKS_PER_CASE` disagreements of a case are shrunk, and none of a raw
kind the caller marks stale.

A case that kills the worker process (a crash in native code) or stalls it is pinned on one
engine by probes (`CaseChecker.failure`): the same checks run again in forked processes, first
with xg2ref and the oracle alone, then with each engine alone; a crash is then shrunk by the
case shrinkers, with "the probe crashes" as the test.

Also here, for both commands: `replay_command`, the command line that asks a finding's question
again, and `shrink_disagreements`, which puts each disagreement of `xg2ref diff FILE...`
(xg2ref/tools/diff/user.py) through the same `CaseChecker.finding`. The arrows go one way:
cli -> fuzz -> fuzz_case -> diff_user.

What it leaves out: Lark and structural-tag cases; disagreements that are not questions of
fuzz_shrink.Question (rollback) are kept as found.
"""

from __future__ import annotations

import json
import os
import random
import time
import zlib
from dataclasses import replace
from typing import Optional, Sequence

from ..diff.checks import DiffOptions
from ..diff.classes import by_design
from .shrink import (MASK_QUESTIONS, VERDICT_QUESTIONS, Asker, Question, byte_class, case_source, finding_class,
                          shrink_bytes, shrink_spec)
from ...tokenizer_info import TokenizerInfo

KINDS = ("ebnf", "regex", "json_schema")
SHRINKS_PER_CASE = 3
PROBE_SECONDS = 30.0  # a probe of a stalled case running longer than this hangs
_MULTI = ['{"', '"}', '": ', '", "', ", ", "true", "false", "null", "ab", "bc", "abc", "aa", "12", "-1", ".5",
          "e+", "\\n", '\\"', "\\u00", "  ", "]}", "[{", '""', "\u00e9", "\u00eb", "\u00e9a"]


def default_vocabulary() -> TokenizerInfo:
    """Every ASCII character as a token, some longer ones (JSON pieces, letter pairs, non-ASCII),
    and the stop token "</s>" last."""
    tokens = [chr(c) for c in range(128)] + _MULTI + ["</s>"]
    return TokenizerInfo(tokens, stop_token_ids=[len(tokens) - 1])


# ---- drawing cases ---------------------------------------------------------------------------

_REAL: Optional[list] = None


def real_schemas() -> list:
    """The JSON schemas of the bundled suite's json_schema files (one per line)."""
    global _REAL
    if _REAL is None:
        from ...suite import MANIFEST, SUITE_DIR

        _REAL = []
        for entry in json.loads(MANIFEST.read_text(encoding="utf-8")):
            path = SUITE_DIR / entry.get("file", "")
            if entry.get("kind") == "json_schema" and path.is_file():
                lines = path.read_text(encoding="utf-8").splitlines()
                _REAL += [json.loads(line)["json_schema"] for line in lines if line.strip()]
    return _REAL


_TYPES = ("string", "integer", "number", "boolean", "null", "object", "array")
_INERT = {"$schema", "title", "description", "$id", "$comment", "examples", "default"}


def mutate_schema(schema, rng: random.Random) -> tuple:
    """(schema with one keyword dropped or altered, what was done).

    Example: mutate_schema({"type": "integer", "minimum": 1}, rng) might give
             ({"type": "integer", "minimum": 3}, "altered minimum")
    """
    schema = json.loads(json.dumps(schema))
    spots = []  # (container, key, path) in the copy
    stack = [(schema, "")]
    while stack:
        node, path = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            if isinstance(node, dict) and key not in _INERT:
                spots.append((node, key, f"{path}/{key}"))
            if isinstance(value, (dict, list)):
                stack.append((value, f"{path}/{key}"))
    if not spots:
        return schema, "unchanged"
    node, key, path = spots[rng.randrange(len(spots))]
    value = node[key]
    if rng.random() < 0.5 or isinstance(value, str) and key != "type":
        del node[key]
        return schema, f"dropped {path}"
    if isinstance(value, bool):
        node[key] = not value
    elif isinstance(value, (int, float)):
        node[key] = max(value + rng.choice((-2, -1, 1, 2)), 0) if key.startswith(("min", "max")) and \
            key not in ("minimum", "maximum") else value + rng.choice((-2, -1, 1, 2))
    elif key == "type":
        node[key] = rng.choice([t for t in _TYPES if t != value])
    elif isinstance(value, list) and value:
        del value[rng.randrange(len(value))]
    else:
        node[key] = {}
    return schema, f"altered {path}"


def draw_case(seed: int, index: int, kinds: Sequence[str] = KINDS) -> tuple:
    """(kind, source text, origin) of case `index` of `seed` (module docstring)."""
    from ...grammar.printer import print_grammar
    from ...strategies import random_grammar, random_json_schema, random_regex

    rng = random.Random(f"xg2ref-fuzz:{seed}:{index}")
    kind = kinds[index % len(kinds)]
    if kind == "ebnf":
        return kind, print_grammar(random_grammar(rng)), "random_grammar"
    if kind == "regex":
        return kind, random_regex(rng), "random_regex"
    real = real_schemas()
    if real and rng.random() < 1 / 3:
        k = rng.randrange(len(real))
        schema, how = mutate_schema(real[k], rng)
        return kind, json.dumps(schema), f"suite schema {k}: {how}"
    return kind, json.dumps(random_json_schema(rng)), "random_json_schema"


# ---- one case --------------------------------------------------------------------------------


def _jsonschema_valid(schema, data: bytes) -> Optional[bool]:
    """jsonschema's verdict on `data` when it parses as JSON (None: no verdict)."""
    try:
        import jsonschema

        value = json.loads(data.decode("utf-8"))
        return bool(jsonschema.validators.validator_for(schema)(schema).is_valid(value))
    except Exception:
        return None


class CaseChecker:
    """Runs one case against the engines and turns its disagreements into findings."""

    def __init__(self, against: list, info: TokenizerInfo, seed: int, options: DiffOptions, shrink_seconds: float,
                 front: Optional[dict] = None, root: str = "root"):
        self.against, self.info, self.seed, self.options = list(against), info, seed, options
        self.shrink_seconds = shrink_seconds
        self.front, self.root = dict(front or {}), root  # the case's front-end options, an EBNF case's root
        self.askers: dict = {}
        # how worker and probe processes start: "forkserver" in a Ray actor, where a fork of the
        # actor's many threads can inherit a lock held and hang (xg2ref/tools/fuzz/runner.py)
        self.start_method = "fork"
        self.probe_seconds = PROBE_SECONDS  # (a run with a longer case limit gives its probes longer)

    def asker(self, name: str) -> Asker:
        if name not in self.askers:
            from ...oracle import other_engines

            self.askers[name] = Asker(other_engines.make_engine(name, self.info), self.info, self.front, self.root)
        return self.askers[name]

    def run(self, index: int, kind: str, source: str, seen: set, stale: set) -> dict:
        """{"disagreements", "findings", "shrinks": [(raw key, class)], "error", "skipped"}."""
        from ..diff.user import run_user_diff
        from ..user_cases import case_from_text

        out = {"disagreements": 0, "findings": [], "shrinks": [], "error": None, "skipped": None}
        try:
            case = case_from_text(f"fuzz-{self.seed}-{index}", source, kind)
        except Exception as err:  # xg2ref cannot read the draw: nothing to compare
            out["skipped"] = f"{type(err).__name__}: {err}".splitlines()[0][:200]
            return out
        try:
            diff = run_user_diff([case], self.against, self.info, "fuzz", seed=self.seed, options=self.options,
                                 jobs=1, progress=False)
            errors = [c.error for r in diff.reports.values() for c in r.cases if c.error]
            out["error"] = errors[0] if errors else None
            out["disagreements"] = len(diff.disagreements)
            spec = json.loads(source) if kind == "json_schema" else source
            shrunk = 0
            for d in diff.disagreements:
                raw = _raw_key(d)
                if not d["by_design"] and (raw in stale or shrunk >= SHRINKS_PER_CASE):
                    continue
                shrunk += not d["by_design"]
                try:
                    finding = self.finding(d, kind, spec, index, seen)
                except Exception as err:  # a crash while shrinking: the case's other findings stay
                    out["error"] = f"shrinking: {type(err).__name__}: {err}".splitlines()[0][:300]
                    continue
                if finding is None:
                    continue
                if not d["by_design"]:
                    out["shrinks"].append((raw, finding["class"]))
                if finding["class"] not in seen:
                    seen.add(finding["class"])
                    out["findings"].append(finding)
        except Exception as err:
            out["error"] = f"{type(err).__name__}: {err}".splitlines()[0][:300]
        return out

    def finding(self, d: dict, kind: str, spec, index: int, seen: set) -> Optional[dict]:
        """One disagreement confirmed, shrunk and classified (module docstring); None when it
        is of a known class already or does not hold up."""
        engine, says = d["engine"], d["engine_says"]
        if d["by_design"] and f"{engine}: by design: {d['by_design']}" in seen:
            return None
        q = Question(d["question"], bytes.fromhex(d["input_hex"]), d["tokens"][0] if d["tokens"] else None)
        first, spec0, oracle, note, shrunk = q, spec, d["oracle"], "", False
        if q.kind in VERDICT_QUESTIONS + MASK_QUESTIONS and says is not None and not d["by_design"]:
            asker = self.asker(engine)
            e, o = asker.engine_says(kind, spec, q), asker.oracle_says(kind, spec, q)
            if o is not None and e == o:  # the engine is right: xg2ref is the one that differs
                if d["xg2ref"] is None or d["xg2ref"] == o or engine == "xg2ref":
                    return None
                engine, says, asker = "xg2ref", d["xg2ref"], self.asker("xg2ref")
                e = asker.engine_says(kind, spec, q)
            if e is None and not asker.spellable(q):
                return None  # the engine's adapter cannot be given these bytes: no question
            if o is not None and e == says and o != says:
                deadline = time.monotonic() + self.shrink_seconds

                def holds(data: bytes, spec=spec) -> bool:
                    return asker.differs(kind, spec, replace(q, data=data), says)

                q = replace(q, data=shrink_bytes(q.data, holds, deadline))
                spec = shrink_spec(kind, spec, lambda s: asker.differs(kind, s, q, says), deadline)
                if spec != spec0:
                    q = replace(q, data=shrink_bytes(q.data, lambda b: holds(b, spec), deadline))
                oracle, shrunk = not says, True
            else:
                note = "not shrunk: " + ("the oracle cannot judge it" if o is None else
                                         "asking again on bytes alone gives another answer")
        token = b""
        if q.token_id is not None and q.token_id not in self.info.stop_token_ids:
            token = self.info.decoded_vocab[q.token_id]
        design = d["by_design"] or (by_design(engine, kind, spec, q, says, self.askers.get(engine), token)
                                    if says is not None else None)
        json_verdict = kind == "json_schema" and q.kind in VERDICT_QUESTIONS
        return {"engine": engine, "class": finding_class(engine, kind, spec, q, says, token, design),
                "kind": kind, "question": q.kind, "by_design": design, "source": case_source(kind, spec),
                "original_source": case_source(kind, spec0) if spec != spec0 else None,
                "input_hex": q.data.hex(), "input": q.data.decode("utf-8", "backslashreplace"),
                "original_input_hex": first.data.hex() if first.data != q.data else None,
                "token_hex": token.hex() if q.token_id is not None else None,
                "tokens": [] if q.token_id is None else [q.token_id], "oracle": oracle, "engine_says": says,
                "xg2ref": d["xg2ref"], "shrunk": shrunk, "note": note,
                "jsonschema_valid": _jsonschema_valid(spec, q.data) if json_verdict else None,
                "jsonschema_valid_original": _jsonschema_valid(spec0, first.data) if json_verdict else None,
                "seed": self.seed, "index": index}


    # ---- a case that kills or stalls the worker ----------------------------------------------

    def probe(self, kind: str, source: str, engines: list, timeout: float) -> Optional[str]:
        """"crash", "hang" or None: the case's checks against `engines` alone (xg2ref and the
        oracle besides), in a forked process of their own."""
        import multiprocessing

        context = multiprocessing.get_context(self.start_method)
        proc = context.Process(target=_probe, args=(self, kind, source, engines), daemon=True)
        proc.start()
        proc.join(timeout)
        if proc.is_alive():
            proc.kill()
            proc.join()
            return "hang"
        return "crash" if proc.exitcode else None

    def failure(self, index: int, kind: str, source: str, timeout: Optional[float] = None) -> Optional[dict]:
        """A case that killed or stalled the worker, pinned on one engine: xg2ref when the checks
        with no other engine fail the same way, else the first engine whose checks alone fail.
        A crash is then shrunk (the case only: there is no input to shrink). None when no probe
        fails, or when the checks with no other engine stall too (a case too slow for the oracle).
        A probe stalls past `timeout` (default: `probe_seconds`)."""
        timeout = self.probe_seconds if timeout is None else timeout
        for names in [[]] + [[name] for name in self.against]:
            outcome = self.probe(kind, source, names, timeout)
            if outcome == "hang" and not names:
                return None
            if outcome:
                break
        else:
            return None
        engine = names[0] if names else "xg2ref"
        spec0 = json.loads(source) if kind == "json_schema" else source
        spec = spec0
        if outcome == "crash":
            deadline = time.monotonic() + self.shrink_seconds
            spec = shrink_spec(kind, spec0, lambda s: self.probe(kind, case_source(kind, s), names, 10.0) == "crash",
                               deadline)
        note = ("the process died running the checks" if outcome == "crash"
                else f"no answer within {timeout:.0f} s (xg2ref and the oracle alone finish)")
        return {"engine": engine, "class": f"{engine}: {kind} {outcome}", "kind": kind, "question": outcome,
                "by_design": None, "source": case_source(kind, spec),
                "original_source": source if spec != spec0 else None, "input_hex": "", "input": "",
                "original_input_hex": None, "token_hex": None, "tokens": [], "oracle": None, "engine_says": None,
                "xg2ref": None, "shrunk": spec != spec0, "note": note, "jsonschema_valid": None,
                "jsonschema_valid_original": None, "seed": self.seed, "index": index}


def _probe(checker: CaseChecker, kind: str, source: str, engines: list) -> None:
    import faulthandler

    from ..diff.user import run_user_diff
    from ..user_cases import case_from_text

    faulthandler.disable()  # the crash is expected here: no dump on stderr
    try:
        run_user_diff([case_from_text("probe", source, kind)], engines, checker.info, "fuzz", seed=checker.seed,
                      options=checker.options, jobs=1, progress=False)
    except Exception:
        pass
    os._exit(0)  # a crash never gets here: its exit code is the signal's


def _raw_key(d: dict) -> str:
    data = bytes.fromhex(d["token_hex"] or "") if d["kind"] == "mask" else bytes.fromhex(d["input_hex"])[-1:]
    return f"{d['engine']}|{d['question']}|{d['engine_says']}|{byte_class(data)}"


# ---- replay command lines --------------------------------------------------------------------

def replay_command(finding: dict, info: TokenizerInfo, vocab_label: str, cases_dir: Optional[str],
                   options: Optional[dict] = None) -> str:
    """A command line that asks the finding's question again (files written under `cases_dir`;
    `options`: the case's front-end options)."""
    from ..diff.checks import greedy_encoder
    from ..user_cases import front_end_flags

    ext = {"json_schema": "json", "regex": "regex", "ebnf": "ebnf", "lark": "lark", "structural_tag": "json"}[
        finding["kind"]]
    stem = f"{finding['seed']}-{finding['index']}-{finding['engine']}-{zlib.crc32(finding['class'].encode()) % 10**6}"
    case_path = os.path.join(cases_dir, f"{stem}.{ext}") if cases_dir else f"CASE.{ext}"
    data = bytes.fromhex(finding["input_hex"])
    tokens = greedy_encoder(info)(data)
    if cases_dir:
        with open(case_path, "w", encoding="utf-8") as f:
            f.write(finding["source"])
    against = "none" if finding["engine"] == "xg2ref" else finding["engine"]
    flags = front_end_flags(options or {})
    if finding["question"] in ("crash", "hang"):
        return (f"xg2ref diff {case_path} --kind {finding['kind']}{flags} --against {against} --vocab {vocab_label} "
                f"--seed {finding['seed']}")
    if tokens is None:  # bytes the vocabulary cannot spell: the oracle's reasons only
        head = f"xg2ref explain {case_path} --kind {finding['kind']}{flags} --hex"
        if finding["tokens"]:
            return f"{head} --prefix '{data.hex()}' --token {finding['tokens'][0]} --vocab {vocab_label}"
        return f"{head} --prefix '{data[:-1].hex()}' --text '{data[-1:].hex()}'"
    tokens = tokens + finding["tokens"] + (info.stop_token_ids[:1] if finding["question"] == "sentence" else [])
    tokens_path = os.path.join(cases_dir, f"{stem}.tokens.json") if cases_dir else "TOKENS.json"
    if cases_dir:
        with open(tokens_path, "w", encoding="utf-8") as f:
            json.dump(tokens, f)
    return (f"xg2ref replay {case_path} --kind {finding['kind']}{flags} --tokens {tokens_path} --vocab {vocab_label} "
            f"--against {against}")


# ---- shrinking the disagreements of `xg2ref diff FILE...` ------------------------------------

def case_spec(case) -> tuple:
    """(kind, spec) of a case as the shrinkers read it: a JSON schema as a dict, other kinds as text."""
    kind = case.kind or "ebnf"
    if kind == "json_schema":
        return kind, case.spec
    if kind == "structural_tag":
        return kind, json.dumps(case.spec)
    return kind, case.text if kind == "ebnf" else case.spec


def shrink_disagreements(diff, cases: list, info: TokenizerInfo, vocab_name: str, seconds: float,
                         cases_dir: Optional[str] = None, progress: bool = True) -> None:
    """Shrink and class every disagreement of `diff` (a diff_user.UserDiff) that is not by design
    (xg2ref/tools/diff/user.py's docstring, "Shrinking")."""
    from ..diff.report import ProgressBar

    by_name = {c.name: c for c in cases}
    todo = [d for d in diff.disagreements if not d["by_design"]]
    bar = ProgressBar(len(todo), enabled=progress)
    checkers: dict = {}
    if cases_dir:
        os.makedirs(cases_dir, exist_ok=True)
    for d in diff.disagreements:
        d.setdefault("shrunk", None)
    for i, d in enumerate(todo):
        bar.update(i, f"shrinking {d['case']} ({d['engine']})")
        case = by_name.get(d["case"])
        if case is None or d["question"] == "rollback":
            d["shrunk_note"] = "kept as found: rollback questions are not shrunk"
            continue
        if case.name not in checkers:
            checkers[case.name] = CaseChecker(diff.engines, info, diff.seed, DiffOptions(), seconds,
                                              front=case.options, root=case.root)
        kind, spec = case_spec(case)
        try:
            finding = checkers[case.name].finding(d, kind, spec, index=i, seen=set())
        except Exception as err:  # a crash while shrinking: the disagreement stays as found
            d["shrunk_note"] = f"shrinking failed: {type(err).__name__}: {err}".splitlines()[0][:300]
            continue
        if finding is None:
            d["shrunk_note"] = "asked again on bytes alone, the engine agrees with the oracle (or cannot be asked)"
            continue
        finding["replay"] = replay_command(finding, info, vocab_name, cases_dir, case.options)
        d["shrunk"] = finding
        if finding["by_design"]:
            d["by_design"] = finding["by_design"]
    bar.close()
