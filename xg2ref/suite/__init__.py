"""The bundled grammar suite that `xg2ref diff` and the command line run on.

`cases.json` lists the cases, one object each:

    name      the case's name on the command line (`xg2ref check json '[1]'`)
    file      a grammar file in this directory, or
    builtin   "json": the builtin JSON grammar (`Grammar.builtin_json_grammar()`), no file
    root      the root rule
    samples   a few hand-written sentences of the grammar
    patch     optional [old, new] text replacements applied before parsing (see `note`)
    note      optional: why the case is special
    source, license

Front-end cases (XGrammar-2 §3.2: users hand an engine schemas, regexes and tool formats more
often than EBNF) carry a `kind` instead of a grammar file; every engine converts the source
itself (xg2ref with its own front ends, xgrammar with its own), and the oracle reads xg2ref's
conversion:

    kind "regex"          pattern: the regex (Grammar.from_regex)
    kind "json_schema"    file: a JSON-lines file of {"unique_id", "subset", "json_schema"}; the
                          entry expands to one case per line, named "<name>-<subset>-<k>"
    kind "tool_calls"     model, file (a list of BFCL tools {"name", "description",
                          "parameters"}), tools (how many of them): the case's spec is
                          {"model", "tools"} (tools in the OpenAI shape), and each engine builds
                          its own get_model_structural_tag(model, tools=tools)

`load_cases(["schemas"])` selects every case an entry expanded to.

The eight llama.cpp grammars are byte-identical copies (LICENSE-llama.cpp.md); two of them need
a `patch` because xgrammar 0.2.8 rejects their empty alternative. The four grammars of xg2ref's
own (`escapes`, `classes`, `repetition`, `recursion`) together use every construct of sections
1-4 of xgrammar's EBNF dialect.

`captures.ebnf` (xg2ref's) holds captures and a stop marker in xgrammar's printed rule options,
so that `xg2ref diff` compares `get_captures()` with the reference's (specs/03, "Markers").

What it leaves out: EBNF cases with intrinsics (TagDispatch, Regex, ...) or other rule options.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

SUITE_DIR = Path(__file__).resolve().parent
MANIFEST = SUITE_DIR / "cases.json"


@dataclass(frozen=True)
class Case:
    """One grammar of the suite, with its EBNF text ready to parse."""

    name: str
    text: str
    root: str
    samples: tuple[str, ...]
    source: str
    license: str
    file: Optional[str] = None
    builtin: Optional[str] = None
    note: str = ""
    patch: tuple[tuple[str, str], ...] = field(default=())
    kind: str = "ebnf"
    spec: Any = None  # the regex / JSON schema / Lark text / {"model", "tools"} of a front-end case
    group: str = ""  # the manifest entry a case was expanded from
    # front-end options (JSON Schema's any_whitespace, ...)
    options: dict = field(default_factory=dict, hash=False, compare=False)

    def grammar(self):
        """xg2ref's grammar of the case (its own front end for front-end cases)."""
        from ..grammar.grammar import Grammar

        if self.kind == "ebnf":
            return Grammar.from_ebnf(self.text, root_rule_name=self.root)
        if self.kind == "regex":
            return Grammar.from_regex(self.spec)
        if self.kind == "json_schema":
            return Grammar.from_json_schema(self.spec, **self.options)
        if self.kind == "lark":  # (options: its dialect, "xgrammar" or "llguidance")
            return Grammar.from_lark(self.spec, **self.options)
        if self.kind == "tool_calls":
            return Grammar.from_structural_tag(self.structural_tag())
        return Grammar.from_structural_tag(self.spec)

    def structural_tag(self) -> dict:
        """A tool-calling case's structural tag, as xg2ref builds it for the case's model."""
        from ..builtin_structural_tag import get_model_structural_tag

        return get_model_structural_tag(self.spec["model"], tools=self.spec["tools"]).model_dump(exclude_none=True)


def _builtin_text(name: str) -> str:
    if name != "json":
        raise ValueError(f"unknown builtin grammar {name!r} (only 'json')")
    from ..grammar.grammar import Grammar

    return str(Grammar.builtin_json_grammar())


def _front_end_cases(entry: dict) -> list[Case]:
    kind, common = entry["kind"], dict(source=entry["source"], license=entry["license"], note=entry.get("note", ""),
                                       group=entry["name"])
    if kind == "regex":
        specs = [(entry["name"], entry["pattern"], tuple(entry.get("samples", ())))]
    elif kind == "json_schema":
        lines = (SUITE_DIR / entry["file"]).read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines if line.strip()]
        specs, seen = [], {}
        for rec in records:
            k = seen[rec["subset"]] = seen.get(rec["subset"], -1) + 1
            specs.append((f"{entry['name']}-{rec['subset']}-{k}", rec["json_schema"], ()))
    elif kind == "tool_calls":
        pool = json.loads((SUITE_DIR / entry["file"]).read_text(encoding="utf-8"))[:entry["tools"]]
        tools = [{"type": "function", "function": tool} for tool in pool]
        specs = [(entry["name"], {"model": entry["model"], "tools": tools}, tuple(entry.get("samples", ())))]
    else:
        raise ValueError(f"case {entry['name']}: unknown kind {kind!r} (regex, json_schema, tool_calls)")
    cases = []
    for name, spec, samples in specs:
        case = Case(name=name, text="", root="root", samples=samples, kind=kind, spec=spec, **common)
        object.__setattr__(case, "text", str(case.grammar()))
        cases.append(case)
    return cases


def _cases(entry: dict) -> list[Case]:
    return _front_end_cases(entry) if "kind" in entry else [_case(entry)]


def _case(entry: dict) -> Case:
    patch = tuple((old, new) for old, new in entry.get("patch", ()))
    if "builtin" in entry:
        text = _builtin_text(entry["builtin"])
    else:
        text = (SUITE_DIR / entry["file"]).read_text(encoding="utf-8")
        for old, new in patch:
            if old not in text:
                raise ValueError(f"case {entry['name']}: patch text {old!r} not found in {entry['file']}")
            text = text.replace(old, new)
    return Case(name=entry["name"], text=text, root=entry.get("root", "root"), samples=tuple(entry["samples"]),
                source=entry["source"], license=entry["license"], file=entry.get("file"),
                builtin=entry.get("builtin"), note=entry.get("note", ""), patch=patch)


def load_cases(names: Optional[list[str]] = None) -> list[Case]:
    """The cases of the manifest, in manifest order, or only those named (in that order).

    Example: [c.name for c in load_cases(["json", "c"])] == ["json", "c"]
    """
    entries = json.loads(MANIFEST.read_text(encoding="utf-8"))
    if names is None:
        return [c for e in entries for c in _cases(e)]
    by_name = {e["name"]: e for e in entries}
    out: list[Case] = []
    expanded: Optional[dict] = None
    for n in names:
        if n in by_name:
            out.extend(_cases(by_name[n]))
            continue
        if expanded is None:  # a single case of an expanded entry ("schemas-Kubernetes-0")
            expanded = {c.name: c for e in entries if e.get("kind") == "json_schema" for c in _cases(e)}
        if n not in expanded:
            raise KeyError(f"unknown suite case(s) {n}; known: {', '.join(by_name)}")
        out.append(expanded[n])
    return out


def case_names() -> list[str]:
    """Names of all manifest entries, in manifest order (an expanding entry names its group)."""
    return [e["name"] for e in json.loads(MANIFEST.read_text(encoding="utf-8"))]


def ebnf_case_names() -> list[str]:
    """Names of the grammar cases (EBNF files and builtins), in manifest order."""
    return [e["name"] for e in json.loads(MANIFEST.read_text(encoding="utf-8")) if "kind" not in e]


def compile_case(engine, case: Case):
    """A matcher of `engine` for the case: front-end cases go through the engine's own front end
    when it has one (the oracle and plain engines read the EBNF text of xg2ref's conversion)."""
    if case.kind != "ebnf" and hasattr(engine, "compile_front_end"):
        return engine.compile_front_end(case.kind, case.spec, **case.options)
    return engine.compile(case.text, case.root)
