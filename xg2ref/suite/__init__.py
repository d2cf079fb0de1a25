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

The eight llama.cpp grammars are byte-identical copies (LICENSE-llama.cpp.md); two of them need
a `patch` because xgrammar 0.2.8 rejects their empty alternative. The four grammars of xg2ref's
own (`escapes`, `classes`, `repetition`, `recursion`) together use every construct of sections
1-4 of xgrammar's EBNF dialect.

What it leaves out: intrinsics (TagDispatch, Regex, ...), rule options, JSON Schemas.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

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


def _builtin_text(name: str) -> str:
    if name != "json":
        raise ValueError(f"unknown builtin grammar {name!r} (only 'json')")
    from ..grammar.grammar import Grammar

    return str(Grammar.builtin_json_grammar())


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
    by_name = {e["name"]: e for e in entries}
    if names is None:
        return [_case(e) for e in entries]
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise KeyError(f"unknown suite case(s) {', '.join(unknown)}; known: {', '.join(by_name)}")
    return [_case(by_name[n]) for n in names]


def case_names() -> list[str]:
    """Names of all cases, in manifest order."""
    return [e["name"] for e in json.loads(MANIFEST.read_text(encoding="utf-8"))]
