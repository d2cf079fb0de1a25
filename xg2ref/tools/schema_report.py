"""Per-keyword coverage of one JSON Schema: what xg2ref's converter does with each keyword of the
document, beside what xgrammar 0.2.8, llguidance 1.9.1 and outlines-core 0.2.14 are known to do
with it (specs/05-front-ends.md, "JSON Schema": "Keywords", "Not enforced", "Not supported yet",
"Differences from xgrammar 0.2.8"; `xg2ref schema-report FILE`, `xg2ref.schema_report`).

The walk visits every subschema location the standard defines (`properties`, `items`, `allOf[i]`,
`$defs` entries, ...) and gives one row per keyword, at its JSON path as the converter writes it
(`$.properties.a.minLength`; a `$defs` entry at its reference, `#/$defs/node.contains`). xg2ref's
column comes from one conversion with `approximate=True`:

    keyword in ANNOTATION_WORDS (title, $defs, ...)           |-  annotation
    keyword beside a `$ref` of drafts up to 7                 |-  ignored beside $ref
    `format` of a format xg2ref does not assert               |-  annotation
    keyword of another draft the converter does not read      |-  not read
    keyword outside the vocabularies                          |-  unknown keyword
    the conversion raised, its message starting at the row    |-  refused (message)
    the conversion raised elsewhere                           |-  not converted
    an approximation recorded at the row's path               |-  approximated (how)
    `format` whose grammar lets in more than the RFC's (formats.LIMITS)  |-  approximated (what)
    `format` whose grammar leaves out some of the RFC's       |-  narrower (what)
    otherwise                                                 |-  exact

An approximation at a path the walk did not produce (a clause merged from `allOf` branches, a
target reached through `$anchor`) is a row of its own, and the rows of that keyword merged into
it (the same instance location, reached in place) say so too.

Each other engine's column: `refused` on every row when the engine's own compile of the schema
fails (under a time limit); otherwise what the JSON-Schema-Test-Suite measured for the keyword's
group: the share of the group's invalid instances the engine refuses
(`xg2ref/suite/json_schema_test_suite/groups.json`, written by `xg2ref bench schema-suite --table PATH`),
with the documented facts of `NOTES` appended. outlines-core has no suite column ("not
measured").

What it leaves out: whether a valid instance is left out ("Narrower than the standard" in
specs/05), and the options' effect on the other engines' suite figures (they were measured with
`strict_mode=False`, `any_order=True`).
"""

from __future__ import annotations

import importlib.util
import json
import re
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence

from ..exceptions import GrammarLimitError, InvalidJSONError
from ..frontends.json_schema.formats import (AUTOMATON_FORMATS, FORMAT_REGEXES, GRAMMAR_FORMATS,
                                             LIMITS as FORMAT_LIMITS, format_regexes)
from ..frontends.json_schema.keywords import ANNOTATIONS
from ..frontends.json_schema.merge import APPLICATORS, VOCABULARY

ENGINES = ("xgrammar", "llguidance", "outlines")
PACKAGES = {"xgrammar": "xgrammar", "llguidance": "llguidance", "outlines": "outlines_core"}
GROUPS = Path(__file__).resolve().parents[1] / "suite" / "json_schema_test_suite" / "groups.json"
COMPILE_SECONDS = 20.0  # an engine's compile of the schema, past which it counts as refused

# keywords that change no language: the converter's, the core identifiers and the content vocabulary
ANNOTATION_WORDS = (ANNOTATIONS - {"format_"}) | {"$dynamicAnchor", "$recursiveAnchor", "$vocabulary",
                                                  "contentSchema"}
# standard keywords the converter does not read (other drafts' spellings)
NOT_READ = {"$recursiveRef": "draft 2019-09's", "extends": "draft 3's", "disallow": "draft 3's",
            "divisibleBy": "draft 3's"}
KNOWN = (VOCABULARY | set(APPLICATORS)) - {k for k in VOCABULARY if k.startswith("$xg2ref:")}

# ---- the walk: every subschema location of the standard ----------------------------------------

# keyword -> how its value holds subschemas
SCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions")
ONE_SCHEMA = ("additionalProperties", "additionalItems", "contains", "propertyNames", "not", "if", "then", "else",
              "unevaluatedItems", "unevaluatedProperties", "contentSchema")
SCHEMA_LISTS = ("prefixItems", "allOf", "anyOf", "oneOf")
# applicators whose subschemas apply to the same instance (the converter merges them in place)
IN_PLACE = frozenset({"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies"})


@dataclass
class Node:
    """A subschema object met by the walk."""

    names: tuple        # its paths: the one shown first, then the converter's other spellings
    schema: dict
    site: str           # the shown path of the schema whose instance it applies to (in place)


def _pointer(tokens: Sequence) -> str:
    """A JSON pointer fragment: `#/$defs/a~1b` for ("$defs", "a/b")."""
    return "#" + "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


def walk(root: Any) -> Iterator[Node]:
    """The subschema objects of `root` in document order (a stack, so any depth is walked). A
    child's names are each parent name with each spelling of the step, and its JSON pointer; a
    `$defs` / `definitions` entry is shown at its pointer, as a `$ref` to it is written."""
    if not isinstance(root, dict):
        return
    stack = [(("$",), (), root, "$")]
    while stack:
        names, tokens, schema, site = stack.pop()
        yield Node(names, schema, site)
        children = []
        for key, value in schema.items():
            for steps, child_tokens, child in _children(key, value):
                if not isinstance(child, dict):
                    continue
                pointer = _pointer(tokens + child_tokens)
                spelled = tuple(dict.fromkeys([n + s for n in names for s in steps] + [pointer]))
                if key in ("$defs", "definitions"):
                    spelled = (pointer,) + tuple(n for n in spelled if n != pointer)
                children.append((spelled, tokens + child_tokens, child, site if key in IN_PLACE else spelled[0]))
        stack.extend(reversed(children))


def _children(key: str, value: Any) -> List[tuple]:
    """([spellings of the step], pointer tokens, subschema) under keyword `key`."""
    if key in SCHEMA_MAPS and isinstance(value, dict):
        return [([f".{key}.{name}"], (key, name), sub) for name, sub in value.items()]
    if key in ONE_SCHEMA:
        # (draft 2019's additionalItems after a list `items`: the converter calls it `items`)
        return [([f".{key}", ".items"] if key == "additionalItems" else [f".{key}"], (key,), value)]
    if key == "items":
        if isinstance(value, list):  # draft 2019's tuple: the converter calls it prefixItems
            return [([f".items[{i}]", f".prefixItems[{i}]"], (key, i), sub) for i, sub in enumerate(value)]
        return [([".items"], (key,), value)]
    if key in SCHEMA_LISTS and isinstance(value, list):
        return [([f".{key}[{i}]"], (key, i), sub) for i, sub in enumerate(value)]
    return []


# ---- the report -------------------------------------------------------------------------------


@dataclass
class KeywordRow:
    path: str        # the keyword's JSON path: its schema's path, ".", the keyword
    keyword: str
    status: Dict[str, str] = field(default_factory=dict)  # engine -> what it does with the keyword
    site: str = ""   # the shown path of the schema it applies to (rows merged in place share it)
    group: str = ""  # the suite's keyword group (`format:date` for a format the suite tests apart)


def status_kind(status: str) -> str:
    """The status's first words: "approximated (...)" -> "approximated", "ignored: ..." -> "ignored"."""
    return re.split(r" \(|:|;", status, maxsplit=1)[0]


@dataclass
class SchemaReport:
    rows: List[KeywordRow]
    engines: List[str]              # the columns: "xg2ref" first
    refused: Dict[str, str]         # engine -> why it refuses the whole schema

    def summary(self) -> Dict[str, Dict[str, int]]:
        """{engine: {status kind: rows}}."""
        out: Dict[str, Dict[str, int]] = {}
        for engine in self.engines:
            counts = out.setdefault(engine, {})
            for row in self.rows:
                kind = status_kind(row.status.get(engine, "-"))
                counts[kind] = counts.get(kind, 0) + 1
        return out

    def exact(self) -> bool:
        """Whether xg2ref converts the schema as it is, with no approximation and no refusal."""
        return all(status_kind(r.status["xg2ref"]) not in ("approximated", "refused", "not converted")
                   for r in self.rows) and "xg2ref" not in self.refused

    def to_dict(self) -> dict:
        return {"engines": self.engines, "refused": self.refused, "summary": self.summary(),
                "rows": [asdict(r) for r in self.rows]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    def to_markdown(self, width: int = 160) -> str:
        """A table: path | keyword | one column per engine (cells cut at `width` characters)."""
        def cell(text: str) -> str:
            text = " ".join(str(text).split()).replace("|", "\\|")
            return text if len(text) <= width else text[:width - 3] + "..."

        def shown(row: KeywordRow, engine: str) -> str:
            status = row.status.get(engine, "-")
            whole = engine != "xg2ref" and engine in self.refused
            return "refused (the schema, below)" if whole and status == f"refused ({self.refused[engine]})" else status

        lines = ["| path | keyword | " + " | ".join(self.engines) + " |", "|---" * (2 + len(self.engines)) + "|"]
        for row in self.rows:
            lines.append("| " + " | ".join(cell(c) for c in [row.path, row.keyword]
                                           + [shown(row, e) for e in self.engines]) + " |")
        lines += [f"\n{engine} refuses the schema: {why}" for engine, why in self.refused.items() if engine != "xg2ref"]
        return "\n".join(lines)


def schema_report(schema: Any, *, engines: Sequence[str] = ENGINES, groups: Optional[Path] = None,
                  timeout: Optional[float] = COMPILE_SECONDS, **converter_options) -> SchemaReport:
    """Each keyword of `schema` (a dict, a bool or JSON text) with what xg2ref's converter does
    with it under `converter_options` (`strict_mode`, `any_order`, ...), beside `engines`
    (module docstring). `groups`: the suite summary (default `GROUPS`).

    Example: schema_report({"type": "string", "title": "t"}, engines=()).rows[0].status
             == {"xg2ref": "exact"}
    """
    if isinstance(schema, (str, bytes)):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as err:
            raise InvalidJSONError(f"$: the schema is not valid JSON: {err}") from None
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        raise ValueError(f"unknown engine {unknown[0]!r}: {', '.join(ENGINES)}")
    converter_options.pop("approximate", None)
    rows, by_name, sites = keyword_rows(schema)
    report = SchemaReport(rows, ["xg2ref"] + list(engines), {})
    xg2ref_column(report, schema, by_name, sites, converter_options)
    summary = read_groups(groups or GROUPS)
    draft = "draft7" if _old_draft(schema) else "draft2020-12"
    for engine in engines:
        engine_column(report, engine, schema, converter_options, summary.get(engine), draft, timeout)
    return report


def keyword_rows(schema: Any) -> tuple:
    """(rows, {path: row} under every spelling, {schema path: site}): a row per keyword of every
    subschema object, with xg2ref's status as far as the keyword alone tells it."""
    beside_ref = _old_draft(schema)
    rows, by_name, sites = [], {}, {}
    for node in walk(schema):
        sites.update((name, node.site) for name in node.names)
        for key, value in node.schema.items():
            group = f"format:{value}" if key == "format" and isinstance(value, str) else GROUP_OF.get(key, key)
            row = KeywordRow(f"{node.names[0]}.{key}", key, site=node.site, group=group)
            for name in node.names:
                by_name.setdefault(f"{name}.{key}", row)
            if key in ANNOTATION_WORDS:
                row.status["xg2ref"] = "annotation"
            elif beside_ref and "$ref" in node.schema and key != "$ref":
                row.status["xg2ref"] = "ignored beside $ref (drafts up to 7, as the standard says)"
            elif key == "format" and not format_regexes(value, False):
                asserted = len(FORMAT_REGEXES) + len(AUTOMATON_FORMATS) + len(GRAMMAR_FORMATS)
                row.status["xg2ref"] = f"annotation (xg2ref asserts {asserted} formats, not {value!r})"
            elif key in NOT_READ:
                row.status["xg2ref"] = f"not read ({NOT_READ[key]} keyword: no constraint)"
            elif key in KNOWN:
                row.status["xg2ref"] = "exact"
            else:
                row.status["xg2ref"] = "unknown keyword (ignored, as the standard says)"
            rows.append(row)
    return rows, by_name, sites


def _old_draft(schema: Any) -> bool:
    from ..frontends.json_schema.converter import reads_ref_alone

    return reads_ref_alone(schema)


# ---- xg2ref's column: one conversion, approximations allowed ------------------------------------


def xg2ref_column(report: SchemaReport, schema: Any, by_name: dict, sites: dict, options: dict) -> None:
    """Convert once with `approximate=True`; mark the approximations' rows and a refusal's row."""
    from ..config import check_json_depth
    from ..frontends.json_schema.converter import SchemaConverter

    try:
        check_json_depth(schema, InvalidJSONError, "$: the schema")
        conv = SchemaConverter(schema, approximate=True, **options)
        try:
            conv.convert()
        except RecursionError:
            raise GrammarLimitError("$: the schema nests too deeply to convert") from None
    except (InvalidJSONError, GrammarLimitError) as err:
        _mark_refusal(report, by_name, str(err))
        return
    for row in report.rows:  # a format asserted as far as its grammar goes (formats.LIMITS)
        limit = FORMAT_LIMITS.get((row.group[len("format:"):], conv.exact_formats))
        if row.keyword == "format" and row.status.get("xg2ref") == "exact" and limit:
            row.status["xg2ref"] = (f"approximated ({limit})" if "wider" in limit
                                    else f"narrower ({limit.split(': ', 1)[1]})")
    for path, keyword, how in conv.approximations:
        _mark_approximation(report, by_name, sites, path, keyword, how)


def _mark_approximation(report: SchemaReport, by_name: dict, sites: dict, path: str, keyword: str,
                        how: str) -> None:
    """The row at `path`; else the rows of `keyword` at the schema `path` names (or its parent);
    else a row of its own, and the rows of that keyword merged into it."""
    status = f"approximated ({how})"
    words = keyword.split(" / ")
    if path in by_name:
        by_name[path].status["xg2ref"] = status
        return
    for node_path in (path, path.rsplit(".", 1)[0]):
        hits = [by_name[f"{node_path}.{w}"] for w in words if f"{node_path}.{w}" in by_name]
        if hits:
            for row in hits:
                row.status["xg2ref"] = status
            return
    site = sites.get(path.rsplit(".", 1)[0], sites.get(path))
    merged = [r for r in report.rows if site is not None and r.site == site and r.keyword in words]
    for row in merged:
        row.status["xg2ref"] = f"approximated (merged at {path}: {how})"
    report.rows.append(KeywordRow(path, keyword, {"xg2ref": status}, site or "", GROUP_OF.get(words[0], words[0])))


def _mark_refusal(report: SchemaReport, by_name: dict, message: str) -> None:
    """The row whose path starts the message (the longest) is refused; the rest is not converted."""
    report.refused["xg2ref"] = message
    starts = [n for n in by_name if message.startswith(n) and message[len(n):len(n) + 1] in (":", ".", "[", " ")]
    where = message.split(": ", 1)[0]
    if starts:
        row = by_name[max(starts, key=len)]
    else:
        keyword = where.rsplit(".", 1)[-1] if "." in where else "-"
        row = KeywordRow(where, keyword, {}, where, GROUP_OF.get(keyword, keyword))
        report.rows.append(row)
    row.status["xg2ref"] = f"refused ({message})"
    for other in report.rows:
        if other is not row and other.status.get("xg2ref") == "exact":
            other.status["xg2ref"] = f"not converted (the schema is refused at {where})"


# ---- the other engines: their compile, then the suite's figures -----------------------------------


def engine_column(report: SchemaReport, engine: str, schema: Any, options: dict, summary: Optional[dict],
                  draft: str, timeout: Optional[float]) -> None:
    if importlib.util.find_spec(PACKAGES[engine]) is None:
        for row in report.rows:
            row.status[engine] = "not installed"
        return
    why = compile_refusal(engine, schema, options, timeout)
    if why is not None:
        report.refused[engine] = why
    for row in report.rows:
        row.status[engine] = f"refused ({why})" if why is not None else engine_status(engine, row, summary, draft)


# a row's kind of xg2ref status -> the same for every engine (the keyword changes no language)
SHARED = ("annotation", "unknown keyword", "ignored beside $ref")
# keyword -> the suite's group (the file's stem) where they differ
GROUP_OF = {"if": "if-then-else", "then": "if-then-else", "else": "if-then-else", "$ref": "ref", "$defs": "defs",
            "$dynamicRef": "dynamicRef", "$dynamicAnchor": "dynamicRef", "$anchor": "anchor",
            "contentMediaType": "content", "contentEncoding": "content", "contentSchema": "content",
            "$vocabulary": "vocabulary"}

# Documented facts, appended to a row's suite figures: engine -> keyword -> note (with its source).
_NOT_IF = "ignores `not` and `if`/`then`/`else` (specs/05, Differences from xgrammar 0.2.8, 15)"
_WARNED = "its converter warns and ignores it (mlc-ai/xgrammar, json_schema_converter.cc)"
# xgrammar reads a schema without `type` as any value, so the suite's figures (its schemas name
# none) say "ignored" for keywords it holds beside a `type` (tests/test_schema_report.py checks it)
_UNTYPED = "beside a `type` it holds: the suite's schemas name none, read by xgrammar as any value"
XGRAMMAR_TYPED = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "pattern", "minLength",
                  "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "propertyNames",
                  "patternProperties")
_XGRAMMAR = {
    "not": _NOT_IF, "if": _NOT_IF, "then": _NOT_IF, "else": _NOT_IF,
    "oneOf": "reads `oneOf` as `anyOf` (specs/05, Differences 15)",
    "allOf": "more than one subschema: any value (specs/05, Differences 11)",
    "pattern": "matched against the whole string, not searched (specs/05, Differences 1)",
    "minLength": "dropped beside a `pattern` (specs/05, Differences 5)",
    "maxLength": "dropped beside a `pattern` (specs/05, Differences 5)",
    "format": "dates regardless of the month's length, 2023-04-31 taken (specs/05, Differences 7)",
    "$ref": "the document's own `#/` pointers only, no `$id` bases (specs/05, Differences 15)",
    "required": "not checked with `any_order` (the suite's reading; specs/05, Differences 12), nor without "
                "`properties` (Differences 14)",
    "unevaluatedItems": "without `type`, an array is required (specs/05, Differences 13)",
    "unevaluatedProperties": "without `type`, an object is required (specs/05, Differences 13)",
    "uniqueItems": _WARNED, "contains": _WARNED, "minContains": _WARNED, "maxContains": _WARNED,
    "multipleOf": "integers only: ignored on other numbers (mlc-ai/xgrammar#670)",
}
NOTES = {
    "xgrammar": {k: "; ".join(n for n in (_UNTYPED if k in XGRAMMAR_TYPED else "", _XGRAMMAR.get(k, "")) if n)
                 for k in list(_XGRAMMAR) + [k for k in XGRAMMAR_TYPED if k not in _XGRAMMAR]},
    "llguidance": {
        "properties": "members in the declared order only: no `any_order` (xg2ref/tools/bench/schema_suite.py)",
    },
    "outlines": {
        "$ref": "recursion unrolled `OUTLINES_MAX_RECURSION_DEPTH` levels (xg2ref/oracle/other_engines.py)",
    },
}


def read_groups(path: Path) -> dict:
    """The suite summary {engine: {draft: {group: counts}}}; {} when it was never written."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def engine_status(engine: str, row: KeywordRow, summary: Optional[dict], draft: str) -> str:
    """What the suite measured for the row's keyword group, and the documented note."""
    kind = status_kind(row.status.get("xg2ref", ""))
    if kind in SHARED:
        return kind if kind == "annotation" else row.status["xg2ref"]
    keyword = row.keyword.split(" / ")[0]
    status = suite_figures(summary, draft, row.group) if summary else "not measured"
    note = NOTES.get(engine, {}).get(keyword)
    return f"{status}; {note}" if note else status


def suite_figures(summary: dict, draft: str, group: str) -> str:
    """The share of the keyword group's invalid instances the engine refuses, in `draft` (the
    other draft when that one has no such group; a format's own group, else `format`).

    Example: suite_figures({"draft7": {"not": {"cases": 9, "compiled": 9, "invalid": 24,
             "invalid_ok": 0}}}, "draft7", "not") ==
             "ignored: rejects 0 of 24 invalid instances of the suite's not tests"
    """
    tried = [group, "format"] if group.startswith("format:") else [group]
    found = [(g, summary[d][g]) for g in tried for d in (draft, "draft2020-12", "draft7") if g in summary.get(d, {})]
    if not found:
        return "not measured"
    group, counts = found[0]
    n, k = counts["invalid"], counts["invalid_ok"]
    if counts["compiled"] == 0:
        return f"refused on the suite: compiles none of its {counts['cases']} {group} cases"
    if n == 0:
        return f"not measured (the suite's {group} tests have no invalid instance)"
    share = (f"enforced: rejects {k}/{n}" if k == n else f"ignored: rejects 0 of {n}" if k == 0
             else f"partly: rejects {k}/{n}")
    compiled = "" if counts["compiled"] == counts["cases"] else \
        f" ({counts['compiled']} of {counts['cases']} cases compile)"
    return f"{share} invalid instances of the suite's {group} tests{compiled}"


def compile_refusal(engine: str, schema: Any, options: dict, timeout: Optional[float]) -> Optional[str]:
    """Why `engine` refuses the schema (its error's first line), None when it compiles it."""
    from .bench.jsonschemabench import TimedOut, time_limit

    limit = timeout if threading.current_thread() is threading.main_thread() else None
    try:
        with time_limit(limit):
            COMPILERS[engine](schema, options, timeout)
    except TimedOut:
        return f"its compile ran past {timeout:g} s"
    except Exception as err:  # noqa: BLE001  (a refusal is the column's answer, never a crash)
        text = str(err).strip().splitlines()
        return f"{type(err).__name__}: {text[0] if text else ''}"[:300]
    return None


def _xgrammar(schema: Any, options: dict, timeout: Optional[float]) -> None:
    import xgrammar as xgr

    grammar = xgr.Grammar.from_json_schema(json.dumps(schema), **{"strict_mode": False, "any_whitespace": True,
                                                                   **options})
    xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False).compile_grammar(grammar)


def _byte_vocabulary() -> tuple:
    """(tokens, stop ids, vocabulary size): one token per byte and a stop token."""
    return [bytes([b]) for b in range(256)] + [b""], [256], 257


def _llguidance(schema: Any, options: dict, timeout: Optional[float]) -> None:
    from ..oracle.other_engines import LLGuidanceEngine

    LLGuidanceEngine(*_byte_vocabulary()).compile_front_end("json_schema", schema, **_json_options(options))


def _outlines(schema: Any, options: dict, timeout: Optional[float]) -> None:
    """The regex outlines builds, then its index, first in a forked child (a build can run for
    minutes in native code, where no alarm reaches it: `probe_in_fork` kills it)."""
    from ..oracle.other_engines import OutlinesEngine
    from .bench.workers import probe_in_fork

    engine = OutlinesEngine(*_byte_vocabulary())
    regex = engine.json_schema_regex(schema, **_json_options(options))
    died = probe_in_fork(lambda: engine.oc.Index(regex, engine.vocabulary), timeout)
    if died == "timeout":
        raise TimeoutError(f"its index build ran past {timeout:g} s")
    if died:
        raise RuntimeError(f"its index build {died}")
    engine.compile_front_end("json_schema", schema, **_json_options(options))


# the options the engine adapters take (xg2ref/oracle/other_engines.py)
ENGINE_OPTIONS = ("any_whitespace", "indent", "separators", "strict_mode", "max_whitespace_cnt", "any_order")


def _json_options(options: dict) -> dict:
    return {k: v for k, v in options.items() if k in ENGINE_OPTIONS}


COMPILERS = {"xgrammar": _xgrammar, "llguidance": _llguidance, "outlines": _outlines}


# ---- the README's coverage table ---------------------------------------------------------------


COVERAGE_ENGINES = (("xg2ref", "xg2ref"), ("xgrammar", "xgrammar 0.2.8"), ("llguidance", "llguidance 1.9.1"))


def coverage_table(summary: dict, draft: str = "draft2020-12") -> str:
    """A Markdown table from the suite summary: per required keyword group of `draft`, each engine's
    invalid instances refused, and its schemas compiled when not all are (README, "JSON Schema
    coverage").

    Example row: | not | 23/24 (8/9 compiled) | 0/24 | 0/24 (0/9 compiled) |
    """
    def cell(counts: Optional[dict]) -> str:
        if not counts:
            return "-"
        text = f"{counts['invalid_ok']}/{counts['invalid']}" if counts["invalid"] else "no invalid instance"
        if counts["compiled"] == counts["cases"]:
            return text
        return f"{text} ({counts['compiled']}/{counts['cases']} compiled)"

    groups = sorted({g for e, _ in COVERAGE_ENGINES for g in summary.get(e, {}).get(draft, {})
                     if not g.startswith("format:")}, key=str.lower)
    lines = ["| keyword group | " + " | ".join(label for _, label in COVERAGE_ENGINES) + " |",
             "|---" * (1 + len(COVERAGE_ENGINES)) + "|"]
    for group in groups:
        lines.append(f"| {group} | " + " | ".join(cell(summary.get(e, {}).get(draft, {}).get(group))
                                                  for e, _ in COVERAGE_ENGINES) + " |")
    return "\n".join(lines)
