"""The specs name only what exists: every path, dotted name, CLI command and "Where it lives"
entry in specs/*.md is checked against the code as it is; paths, dotted names and commands in
README.md, notebooks/README.md and docs/*.md too."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted((ROOT / "specs").glob("*.md"))
# the other documents a reader follows into the code: names are checked there too
DOCS = SPECS + [ROOT / "README.md", ROOT / "notebooks" / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
# top-level folders of the repository: a backticked path starting with one must exist
TOP = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")}
# module and package names under xg2ref/: a dotted name starting with one must be written in full
MODULE_NAMES = ({p.stem for p in (ROOT / "xg2ref").rglob("*.py") if p.stem != "__init__"}
                | {p.name for p in (ROOT / "xg2ref").rglob("*") if p.is_dir() and (p / "__init__.py").exists()})

PATH = re.compile(r"(?<![\w./-])((?:\.\./)?[\w.-]+(?:/[\w.-]+)+/?|[\w-]+\.py)(?:::(\w+))?")
DOTTED = re.compile(r"(?<![\w./-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)")
NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?$")


def _ids(paths):
    return [str(p.relative_to(ROOT)) for p in paths]


def spans_by_line(text: str) -> list[tuple[int, str]]:
    """(line number where it starts, span) for every backticked span outside fenced code blocks
    (indented ones too); a span wrapped over two lines is one span, its line break read as a
    space, as Markdown reads it."""
    text = re.sub(r"^[ \t]*```.*?^[ \t]*```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S | re.M)
    return [(text.count("\n", 0, m.start()), " ".join(m.group(1).split())) for m in re.finditer(r"`([^`]+)`", text)]


def inline_spans(text: str) -> list[str]:
    """The backticked spans of `spans_by_line`, without their line numbers."""
    return [span for _, span in spans_by_line(text)]


def defines(path: Path, name: str) -> bool:
    """`path` defines `name` (a def, a class, an assignment, a tuple assignment, or a NamedTuple /
    dataclass field)."""
    source = path.read_text()
    return re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{name}\b|^\s*{name}\s*[:=]"
                     rf"|^\s*(?:\w+\s*,\s*)*{name}\s*(?:,\s*\w+\s*)*=", source, re.M) is not None


def module_file(name: str):
    """The source file of module `name` of this repository, None when there is none."""
    base = ROOT.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def resolve(dotted: str) -> bool:
    """`xg2ref.a.b.c`: import the longest module prefix, getattr the rest. A module whose optional
    dependency is not installed (transformers, torch) is read instead: its source must define the
    first attribute."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        path = module_file(".".join(parts[:cut]))
        if path is None:
            continue
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError as err:
            if err.name and err.name.split(".")[0] != "xg2ref":
                return cut == len(parts) or defines(path, parts[cut])
            raise
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


@pytest.mark.parametrize("spec", DOCS, ids=_ids(DOCS))
def test_paths_exist(spec):
    """A bare file name (`parser.py`) is read in the folder last named on its line
    (`xg2ref/frontends/regex/`), as a table cell lists a package's modules."""
    bad = []
    folder, folder_line = None, -1
    for line, span in spans_by_line(spec.read_text()):
        if line != folder_line:
            folder = None
        for path, member in PATH.findall(span):
            if path.startswith("../"):
                continue  # outside the repository
            first = path.split("/")[0]
            if "/" in path and first not in TOP and not path.endswith(".py"):
                continue  # not a path of this repository (a ratio, a MIME type, ...)
            if path.endswith("/"):
                folder, folder_line = path, line
            target = ROOT / path
            if "/" not in path and folder is not None:
                target = ROOT / folder / path
            if not target.exists():
                bad.append(path)
            elif member and not defines(target, member):
                bad.append(f"{path}::{member}")
    assert not bad, f"{spec.name} names paths that do not exist (write modules as xg2ref/...py): {bad}"


@pytest.mark.parametrize("spec", DOCS, ids=_ids(DOCS))
def test_dotted_names_resolve(spec):
    bad, bare = [], []
    for span in inline_spans(spec.read_text()):
        if span.startswith("%"):
            continue  # a Lark directive (`%import common.X`), not a Python name
        for dotted in DOTTED.findall(span):
            first = dotted.split(".")[0]
            if first == "xg2ref":
                if not resolve(dotted):
                    bad.append(dotted)
            elif first in MODULE_NAMES and not dotted.endswith(".py"):
                bare.append(dotted)
    assert not bad, f"{spec.name} names dotted xg2ref names that do not resolve: {bad}"
    assert not bare, f"{spec.name} names modules without their full path (write xg2ref.x.y): {bare}"


@pytest.mark.parametrize("spec", SPECS, ids=_ids(SPECS))
def test_where_it_lives(spec):
    text = spec.read_text()
    assert "\n## Where it lives\n" in text, f"{spec.name} has no '## Where it lives' section"
    section = text.split("\n## Where it lives\n", 1)[1].split("\n## ", 1)[0]
    bad, listed = [], 0
    for line in section.splitlines():
        current = None
        for span in inline_spans(line):
            if span.endswith(".py") and "/" in span:
                current = ROOT / span
                if not current.exists():
                    bad.append(span)
                    current = None
            elif current is not None and NAME.match(span):
                listed += 1
                owner, _, member = span.rpartition(".")
                if owner and not (defines(current, owner) and defines(current, member)):
                    bad.append(f"{current.relative_to(ROOT)} {span}")
                elif not owner and not defines(current, member):
                    bad.append(f"{current.relative_to(ROOT)} {span}")
    assert listed, f"{spec.name}: 'Where it lives' lists no module and function"
    assert not bad, f"{spec.name}: 'Where it lives' names what the modules do not define: {bad}"


def _cli():
    from xg2ref.tools.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices


@pytest.mark.parametrize("spec", DOCS, ids=_ids(DOCS))
def test_cli_commands_exist(spec):
    commands = _cli()
    bad = []
    for span in inline_spans(spec.read_text()):
        m = re.match(r"^(?:python -m )?xg2ref\s+(.*)$", span)
        if not m:
            continue
        words = m.group(1).split()
        if words and not re.match(r"^-?[a-z][\w-]*$", words[0]):
            continue  # the package's output (`xg2ref [0]`), not a command
        if not words or words[0] not in commands:
            bad.append(span)
            continue
        p = commands[words[0]]
        options = {o for a in p._actions for o in a.option_strings}
        positional = [a for a in p._actions if not a.option_strings and a.dest != "help"]
        rest = words[1:]
        if rest and not rest[0].startswith("-") and positional and positional[0].choices:
            if rest[0] not in positional[0].choices:
                bad.append(span)
        for w in rest:
            if w.startswith("--") and w.split("=")[0] not in options:
                bad.append(f"{span} ({w})")
    assert not bad, f"{spec.name} names CLI commands or options that do not exist: {bad}"
