"""The JSON-Schema-Test-Suite (draft 2020-12 and draft-07, required tests and the format
assertions) read by the JSON Schema front ends of xg2ref, xgrammar 0.2.8 and llguidance 1.9.1
(specs/05, "The standard's test suite"; XGrammar-2 §3.2 names JSON Schema the front end users
hand an engine most).

A test case is a schema and instances, each marked valid or invalid by the standard. An engine
*compiles* the schema as a new user would: its JSON Schema front end with its defaults, except
where the standard reads objects otherwise (`OPTIONS`): additional properties are allowed
(`strict_mode=False`) and members come in any order (`any_order=True`), since the suite's valid
instances carry members no `properties` declares, in orders no schema gives. (llguidance has
neither option to set: it allows additional members and keeps the declared order.) Each instance is written canonically
(`instance_text`: an integral number without fraction, no exponent, raw non-ASCII characters)
and given to a fresh matcher over the schema's grammar:

    the schema compiles, the instance is valid,   accepted   |-  right (completeness)
    the schema compiles, the instance is invalid, refused    |-  right (soundness)
    the schema is refused (an error naming it)               |-  the case counts as not compiled

Per keyword group (the suite's file, `format:<name>` for the optional format files) the table
counts cases compiled, valid instances accepted and invalid ones refused (with `--table`, the same
counts as JSON in `GROUPS`, beside the vendored suite: `group_summary`, read by `xg2ref schema-report`). The ratchet
(`RATCHET`, beside the vendored suite) keeps, per draft and group, the instances xg2ref gets right;
`tests/test_schema_suite.py` fails when one of them goes wrong, or when a valid instance of a
compiled schema is refused. `xg2ref bench schema-suite` prints the three engines' table side by
side and rewrites the ratchet with `--update-ratchet`; with `--exact-formats` xg2ref builds the
formats' costly exact grammars (formats.py), and the valid instances they put in
(`COSTLY_FORMAT_REFUSALS`) must then be accepted too.

What it leaves out: the suite's optional tests other than formats (bignum, ECMAScript regex
corner cases, unknown keywords), and `refRemote` cases' remote documents (nothing is fetched:
specs/05).
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional
from ...config import get_json_schema_exact_formats

SUITE_DIR = Path(__file__).resolve().parents[2] / "suite" / "json_schema_test_suite"
DRAFTS = ("draft2020-12", "draft7")
ENGINES = ("xg2ref", "xgrammar", "llguidance")
RATCHET = SUITE_DIR / "ratchet.json"
GROUPS = SUITE_DIR / "groups.json"  # the counts per engine, draft and group (`group_summary`)
# JSON objects are unordered and members beyond `properties` are allowed: the standard's reading
OPTIONS = {"strict_mode": False, "any_order": True}
DRAFT_URIS = {"draft2020-12": "https://json-schema.org/draft/2020-12/schema",
              "draft7": "http://json-schema.org/draft-07/schema#"}


@dataclass
class SuiteCase:
    draft: str
    group: str       # the file's stem, or "format:<stem>" for optional/format
    index: int       # the case's place in its file
    description: str
    schema: object
    tests: list      # [(description, instance, valid)]

    @property
    def key(self) -> str:
        return f"{self.draft}/{self.group}/{self.index}"


def load_suite(drafts: Iterable[str] = DRAFTS, groups: Optional[Iterable[str]] = None) -> List[SuiteCase]:
    """The vendored cases of `drafts`, in file order; `groups` keeps those groups only."""
    wanted = set(groups) if groups else None
    cases = []
    for draft in drafts:
        root = SUITE_DIR / draft
        if not root.is_dir():
            raise FileNotFoundError(f"no vendored JSON-Schema-Test-Suite for {draft!r} under {SUITE_DIR}")
        files = [(p.stem, p) for p in sorted(root.glob("*.json"))]
        files += [(f"format:{p.stem}", p) for p in sorted((root / "optional" / "format").glob("*.json"))]
        for group, path in files:
            if wanted and group not in wanted:
                continue
            for index, case in enumerate(json.loads(path.read_text(encoding="utf-8"))):
                tests = [(t["description"], t["data"], bool(t["valid"])) for t in case["tests"]]
                cases.append(SuiteCase(draft, group, index, case["description"], case["schema"], tests))
    return cases


REMOTE = "http://localhost:1234/"  # where the suite's `remotes/` documents live, by its README


def schema_for(case: SuiteCase):
    """The case's schema, naming its draft when it does not (a boolean schema stays as it is),
    with the suite's remote documents it refers to bundled in as embedded resources (`$defs`,
    or `definitions` for draft-07, each with its `$id`: JSON Schema 2020-12 Core §9.3's
    compound documents), since nothing is fetched."""
    schema = case.schema
    if isinstance(schema, dict) and "$schema" not in schema:
        schema = {"$schema": DRAFT_URIS[case.draft], **schema}
    return bundle_remotes(schema, "definitions" if case.draft == "draft7" else "$defs")


def bundle_remotes(schema, where: str):
    """`schema` with every document under REMOTE that it reaches (transitively) embedded."""
    from ...frontends.json_schema.references import References

    if not isinstance(schema, dict):
        return schema
    out, added = dict(schema), {}
    while True:
        refs = References(out)
        wanted = set()
        for node in _subschemas(out):
            for key in ("$ref", "$dynamicRef"):
                ref = node.get(key)
                if isinstance(ref, str):
                    uri = refs.resolve_uri(ref, node).partition("#")[0]
                    if uri.startswith(REMOTE) and uri not in refs.resources and uri not in added:
                        wanted.add(uri)
        wanted = {u for u in wanted if (SUITE_DIR / "remotes" / u[len(REMOTE):]).is_file()}
        if not wanted:
            return out
        defs = dict(out.get(where) or {})
        for uri in sorted(wanted):
            doc = json.loads((SUITE_DIR / "remotes" / uri[len(REMOTE):]).read_text(encoding="utf-8"))
            if isinstance(doc, dict):
                doc = {**doc, "$id": doc.get("$id", uri)} if "$id" in doc or "id" not in doc else doc
            defs[f"remote:{uri[len(REMOTE):]}"] = added[uri] = doc
        out[where] = defs


def _subschemas(node):
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(v for k, v in node.items() if k not in ("enum", "const", "default", "examples"))
        elif isinstance(node, list):
            stack.extend(node)


def instance_text(value) -> str:
    """`value` as JSON text in the canonical forms the front ends promise to accept (specs/05):
    integral numbers as integers, others in positional notation, strings with raw characters.

    Example: instance_text({"a": [1.0, 1e-05, "é"]}) == '{"a": [1, 0.00001, "é"]}'
    """
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{value!r} has no JSON form")
        if value.is_integer():
            return str(int(value))
        return format(Decimal(repr(value)), "f")
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(instance_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {instance_text(v)}"
                               for k, v in value.items()) + "}"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


# ---- engines: schema -> (text -> accepted?) -----------------------------------------------------


def xg2ref_acceptor(schema) -> Callable[[str], bool]:
    from ...compiler import GrammarCompiler
    from ...grammar import Grammar
    from ...matcher import GrammarMatcher
    from ...tokenizer_info import TokenizerInfo

    compiled = GrammarCompiler(TokenizerInfo([]), cache_enabled=False).compile_grammar(
        Grammar.from_json_schema(schema, **OPTIONS))

    def accepts(text: str) -> bool:
        matcher = GrammarMatcher(compiled, terminate_without_stop_token=True)
        return matcher.accept_string(text) and matcher.is_terminated()
    return accepts


def xgrammar_acceptor(schema) -> Callable[[str], bool]:
    import xgrammar as xgr

    grammar = xgr.Grammar.from_json_schema(json.dumps(schema), **OPTIONS)
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False).compile_grammar(grammar)

    def accepts(text: str) -> bool:
        matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        return matcher.accept_string(text) and matcher.is_terminated()
    return accepts


_LLG_ENGINE = []


def llguidance_acceptor(schema) -> Callable[[str], bool]:
    from ...oracle.other_engines import LLGuidanceEngine

    if not _LLG_ENGINE:  # one byte per token, and a stop token
        _LLG_ENGINE.append(LLGuidanceEngine([bytes([b]) for b in range(256)] + [b""], [256], 257))
    engine = _LLG_ENGINE[0]
    matcher = engine.compile_front_end("json_schema", schema)

    def accepts(text: str) -> bool:
        matcher.reset()
        return matcher.accept_bytes(text.encode("utf-8")) and matcher.is_completed()
    return accepts


ACCEPTORS = {"xg2ref": xg2ref_acceptor, "xgrammar": xgrammar_acceptor, "llguidance": llguidance_acceptor}


def run_case(case: SuiteCase, engine: str, timeout: Optional[float] = 30.0, compiled: Optional[dict] = None) -> dict:
    """One case read by one engine: {"key", "engine", "compiled", "error", "right": [bool per
    test] (None when not compiled), "seconds"}. `compiled` (schema text -> acceptor), when
    given, holds the engine's acceptors of the schemas read before: the suite repeats a schema
    over several cases (a format's valid and invalid tests), each compiled once."""
    from .jsonschemabench import TimedOut, time_limit

    start = time.perf_counter()
    rec = {"key": case.key, "engine": engine, "compiled": False, "error": None, "right": None}
    try:
        with time_limit(timeout):
            schema = schema_for(case)  # (inside: a schema that cannot be bundled is a record too)
            key = json.dumps(schema, sort_keys=True)
            accepts = compiled.get(key) if compiled is not None else None
            if accepts is None:
                accepts = ACCEPTORS[engine](schema)
                if compiled is not None:
                    compiled[key] = accepts
            rec["compiled"] = True
            rec["right"] = [bool(accepts(instance_text(data))) == valid for _, data, valid in case.tests]
    except TimedOut:
        rec["compiled"], rec["right"] = False, None
        rec["error"] = f"past the {timeout:g} s limit"
    except Exception as err:  # noqa: BLE001  (a refusal is a figure of the table, never a crash)
        rec["compiled"], rec["right"] = False, None
        rec["error"] = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:300]
    rec["seconds"] = round(time.perf_counter() - start, 4)
    return rec


def run_suite(cases: List[SuiteCase], engines: Iterable[str] = ENGINES, timeout: Optional[float] = 30.0,
              progress: Optional[Callable[[int, int], None]] = None) -> List[dict]:
    records, engines = [], list(engines)
    total = len(cases) * len(engines)
    for engine in engines:
        compiled: dict = {}
        for case in cases:
            records.append(run_case(case, engine, timeout, compiled))
            if progress:
                progress(len(records), total)
    return records


# ---- tables and the ratchet ---------------------------------------------------------------------


def group_counts(cases: List[SuiteCase], records: List[dict]) -> Dict[tuple, dict]:
    """{(draft, group, engine): {"cases", "compiled", "valid", "valid_ok", "invalid", "invalid_ok",
    "invalid_compiled"}}: instances of schemas not compiled count in "valid"/"invalid" but not as right."""
    by_key = {c.key: c for c in cases}
    out: Dict[tuple, dict] = {}
    for rec in records:
        case = by_key[rec["key"]]
        row = out.setdefault((case.draft, case.group, rec["engine"]),
                             dict(cases=0, compiled=0, valid=0, valid_ok=0, invalid=0, invalid_ok=0,
                                  valid_compiled=0, invalid_compiled=0))
        row["cases"] += 1
        row["compiled"] += rec["compiled"]
        for i, (_, _, valid) in enumerate(case.tests):
            kind = "valid" if valid else "invalid"
            row[kind] += 1
            if rec["compiled"]:
                row[kind + "_compiled"] += 1
                row[kind + "_ok"] += rec["right"][i]
    return out


def ratchet_from(records: List[dict], engine: str = "xg2ref") -> dict:
    """{key: [indexes of the tests `engine` gets right]} over the compiled cases."""
    return {rec["key"]: [i for i, ok in enumerate(rec["right"]) if ok]
            for rec in records if rec["engine"] == engine and rec["compiled"]}


def ratchet_regressions(records: List[dict], ratchet: dict, engine: str = "xg2ref") -> List[str]:
    """The tests the ratchet holds right that `records` get wrong (or whose case no longer compiles)."""
    now = {rec["key"]: rec for rec in records if rec["engine"] == engine}
    lost = []
    for key, right in sorted(ratchet.items()):
        rec = now.get(key)
        if rec is None:
            continue
        if not rec["compiled"]:
            lost.append(f"{key}: no longer compiles ({rec['error']})")
            continue
        lost += [f"{key} test {i}" for i in right if not rec["right"][i]]
    return lost


def write_ratchet(records: List[dict], path: Path = RATCHET) -> None:
    data = ratchet_from(records)
    os.makedirs(path.parent, exist_ok=True)
    path.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n", encoding="utf-8")


def read_ratchet(path: Path = RATCHET) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


# valid instances xg2ref refuses by design: (case key, or a prefix ending in "/"; words of the
# test's description, or "") -> the reason
KNOWN_REFUSALS = {
    ("draft2020-12/format/", ""): "xg2ref asserts `format` (the format-assertion vocabulary, as structured "
                                  "generation wants); 2020-12 reads it as an annotation by default",
    ("draft2020-12/vocabulary/0", ""): "its $schema is a meta-schema in another document, which is never fetched",
}
# those the default formats leave out and exact_formats puts in (formats.py)
COSTLY_FORMAT_REFUSALS = {
    ("draft2020-12/format:time/", "leap second"): "a leap second's validity depends on the offset (23:59:60 in UTC: "
                                                  "1,440 local times), 3 s to build: exact_formats only (specs/05)",
    ("draft2020-12/format:date-time/", "leap second"): "as for time",
    ("draft7/format:time/", "leap second"): "as for time",
    ("draft7/format:date-time/", "leap second"): "as for time",
    ("draft2020-12/format:email/", "IPv6-address-literal"): "an IPv6 literal's automaton would make every email "
                                                             "schema's grammar ten times larger: exact_formats only",
    ("draft2020-12/format:uri/", "a valid URL"): "its host is an IPv6 literal (as for email)",
    ("draft7/format:email/", "IPv6-address-literal"): "as for draft 2020-12",
    ("draft7/format:uri/", "a valid URL"): "as for draft 2020-12",
}


def known_refusal(key: str, description: str, exact_formats: Optional[bool] = None) -> Optional[str]:
    """The reason xg2ref refuses this valid instance by design, or None (`exact_formats`: as the
    cases were run, None for the process-wide setting)."""
    known = dict(KNOWN_REFUSALS)
    if not get_json_schema_exact_formats(exact_formats):
        known.update(COSTLY_FORMAT_REFUSALS)
    for (prefix, words), why in known.items():
        if (key.startswith(prefix) if prefix.endswith("/") else key == prefix) and words in description:
            return why
    return None


def _share(ok: int, total: int) -> str:
    return f"{ok}/{total} ({100 * ok / total:.0f}%)" if total else "-"


def suite_table(cases: List[SuiteCase], records: List[dict], engines: List[str]) -> str:
    """A Markdown table: per draft and group, each engine's cases compiled, valid instances
    accepted and invalid ones refused (of all, compiled or not); totals for the required tests
    and for the format assertions."""
    counts = group_counts(cases, records)
    groups = sorted({(c.draft, c.group) for c in cases}, key=lambda g: (g[0], g[1].startswith("format:"), g[1]))
    head = "| draft | group | " + " | ".join(f"{e}: compiled | valid accepted | invalid refused" for e in engines)
    lines = [head + " |", "|" + "---|" * (2 + 3 * len(engines))]

    def cells(rows: List[dict]) -> str:
        tot = {k: sum(r[k] for r in rows) for k in ("cases", "compiled", "valid", "valid_ok", "invalid", "invalid_ok")}
        return (f"{_share(tot['compiled'], tot['cases'])} | {_share(tot['valid_ok'], tot['valid'])} | "
                f"{_share(tot['invalid_ok'], tot['invalid'])}")

    for draft, group in groups:
        lines.append(f"| {draft} | {group} | " + " | ".join(cells([counts[(draft, group, e)]]) for e in engines
                                                            if (draft, group, e) in counts) + " |")
    for label, keep in (("required", lambda g: not g.startswith("format:")), ("formats", lambda g: g.startswith("format:"))):
        for draft in sorted({c.draft for c in cases}):
            rows = {e: [v for (d, g, en), v in counts.items() if d == draft and en == e and keep(g)] for e in engines}
            if any(rows.values()):
                lines.append(f"| **{draft}** | **all {label}** | " + " | ".join(cells(rows[e]) for e in engines) + " |")
    return "\n".join(lines)


GROUPS_FIELDS = ("cases", "compiled", "valid", "valid_ok", "invalid", "invalid_ok")


def group_summary(cases: List[SuiteCase], records: List[dict]) -> dict:
    """{engine: {draft: {group: {"cases", "compiled", "valid", "valid_ok", "invalid", "invalid_ok"}}}}
    from `group_counts`: what `xg2ref schema-report` reads per keyword (xg2ref/tools/schema_report.py)."""
    out: dict = {}
    for (draft, group, engine), row in sorted(group_counts(cases, records).items()):
        out.setdefault(engine, {}).setdefault(draft, {})[group] = {k: row[k] for k in GROUPS_FIELDS}
    return out


def write_group_summary(cases: List[SuiteCase], records: List[dict], path) -> None:
    """`group_summary` as JSON at `path` (`GROUPS` for the committed run)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(group_summary(cases, records), indent=1, sort_keys=True) + "\n",
                          encoding="utf-8")


def bench_schema_suite(drafts=DRAFTS, engines=ENGINES, timeout: Optional[float] = 30.0,
                       update_ratchet: bool = False, out: Callable[[str], None] = print,
                       progress: bool = True, table: Optional[str] = None) -> int:
    """Run the suite (module docstring) for each installed engine and print the table; with
    `update_ratchet`, write xg2ref's right answers to RATCHET (only when none is lost). Exit 1
    when xg2ref loses a test the ratchet holds or refuses a valid instance of a compiled schema
    (outside KNOWN_REFUSALS)."""
    from ..diff.report import ProgressBar

    cases = load_suite(drafts)
    usable = []
    for engine in engines:
        if engine not in ACCEPTORS:
            raise ValueError(f"unknown engine {engine!r}: {', '.join(ACCEPTORS)}")
        if engine != "xg2ref" and importlib.util.find_spec({"xgrammar": "xgrammar", "llguidance": "llguidance"}[engine]) is None:
            out(f"{engine} is not installed: its columns are left out")
            continue
        usable.append(engine)
    bar = ProgressBar(len(cases) * len(usable)) if progress else None
    records = run_suite(cases, usable, timeout, progress=(lambda done, total: bar.update(done, "schema suite")) if bar else None)
    if bar:
        bar.close()
    text = suite_table(cases, records, usable)
    out(text)
    if table:
        Path(table).parent.mkdir(parents=True, exist_ok=True)
        Path(table).write_text(text + "\n", encoding="utf-8")
        write_group_summary(cases, records, GROUPS)
    if "xg2ref" not in usable:
        return 0
    lost = ratchet_regressions(records, read_ratchet())
    refused = valid_refusals(cases, records)
    for line in lost:
        out(f"ratchet: {line}")
    for line in refused:
        out(f"valid instance refused: {line}")
    if update_ratchet and not lost:
        write_ratchet(records)
        out(f"ratchet written: {RATCHET}")
    return 1 if lost or refused else 0


def valid_refusals(cases: List[SuiteCase], records: List[dict], engine: str = "xg2ref",
                   exact_formats: Optional[bool] = None) -> List[str]:
    """Valid instances of compiled schemas that `engine` refuses, outside KNOWN_REFUSALS (and
    COSTLY_FORMAT_REFUSALS unless `exact_formats`: `known_refusal`)."""
    by_key = {c.key: c for c in cases}
    out = []
    for rec in records:
        if rec["engine"] != engine or not rec["compiled"]:
            continue
        case = by_key[rec["key"]]
        out += [f"{rec['key']} test {i} ({case.tests[i][0]})" for i, ok in enumerate(rec["right"])
                if not ok and case.tests[i][2] and not known_refusal(rec["key"], case.tests[i][0], exact_formats)]
    return out
