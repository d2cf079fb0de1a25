"""The notebooks in notebooks/: each runs as a script, has an executed .ipynb beside it that is up
to date with its jupytext source, and uses the public API only."""

import ast
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import xg2ref

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.py"))

# What a notebook may import from xg2ref: the xgrammar-compatible API, the testing helpers, the
# oracle's package-level names, the strategies, the teaching views, and the baselines.
PUBLIC_MODULES = {"xg2ref", "xg2ref.testing", "xg2ref.oracle", "xg2ref.strategies", "xg2ref.views",
                  "xg2ref.views.parsing", "xg2ref.views.runtime", "xg2ref.contrib", "xg2ref.contrib.hf",
                  "xg2ref.baselines.pda", "xg2ref.baselines.wgrammar", "xg2ref.token_classes"}
# Names reachable as attributes of the package: its __all__ and xgrammar's module attributes.
PUBLIC_ATTRIBUTES = set(xg2ref.__all__) | {"__version__", "testing", "config", "exception", "structural_tag",
                                          "openai_tool_call_schema", "contrib", "hf", "bitmask_dtype"}


def test_there_are_notebooks():
    assert NOTEBOOKS


def test_every_notebook_is_numbered():
    assert sorted(NOTEBOOK_DIR.glob("*.py")) == NOTEBOOKS


def test_every_notebook_of_the_index_is_there():
    """notebooks/README.md lists 00-15; both sets of notebooks count (fails until they exist)."""
    assert len(NOTEBOOKS) >= 12, [p.name for p in NOTEBOOKS]


@pytest.mark.jit_only
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, tmp_path):
    done = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_executed_notebook_is_up_to_date(path):
    """The .ipynb beside the .py holds the same cells (type and source) and was executed: every
    code cell has an execution count and no error output."""
    jupytext = pytest.importorskip("jupytext")
    nbformat = pytest.importorskip("nbformat")
    executed = path.with_suffix(".ipynb")
    assert executed.exists(), f"{executed.name} is missing: execute {path.name} (notebooks/README.md)"
    want = jupytext.read(path)
    have = nbformat.read(executed, as_version=4)
    assert [(c.cell_type, c.source) for c in have.cells] == [(c.cell_type, c.source) for c in want.cells], \
        f"{executed.name} is out of date with {path.name}: execute it again"
    for i, cell in enumerate(have.cells):
        if cell.cell_type != "code":
            continue
        assert cell.get("execution_count") is not None, f"{executed.name}: code cell {i} was not executed"
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, f"{executed.name}: code cell {i} raised {errors[0].get('ename')}: {errors[0].get('evalue')}"


def private_uses(source: str) -> list[str]:
    """What a notebook's code reaches that is not public: imports of xg2ref modules outside
    PUBLIC_MODULES, names starting with "_" imported from xg2ref, attributes of the package
    outside PUBLIC_ATTRIBUTES, and attributes starting with "_" (not dunder) of anything."""
    found = []
    package_names = set()  # local names bound to the xg2ref package
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "xg2ref" or alias.name.startswith("xg2ref."):
                    if alias.name not in PUBLIC_MODULES:
                        found.append(f"line {node.lineno}: import {alias.name}")
                    if alias.name == "xg2ref":
                        package_names.add(alias.asname or "xg2ref")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and \
                (node.module == "xg2ref" or node.module.startswith("xg2ref.")):
            if node.module not in PUBLIC_MODULES:
                found.append(f"line {node.lineno}: from {node.module} import ...")
            for alias in node.names:
                if alias.name.startswith("_"):
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
                elif node.module == "xg2ref" and alias.name not in PUBLIC_ATTRIBUTES | {"oracle", "strategies",
                                                                                          "views"}:
                    found.append(f"line {node.lineno}: from xg2ref import {alias.name}")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        if node.attr.startswith("_") and not (node.attr.startswith("__") and node.attr.endswith("__")):
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node.value, ast.Name) and node.value.id in package_names and node.attr not in PUBLIC_ATTRIBUTES:
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_uses_the_public_api_only(path):
    assert private_uses(path.read_text(encoding="utf-8")) == []


def resolves(dotted: str) -> bool:
    """Whether `xg2ref.module.name.attr` names something: the longest importable module
    prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                target = getattr(target, attr)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_ends_with_the_actual_code(path):
    """The closing "Actual code:" line names where the mechanism lives; every `xg2ref....` name in
    it must still exist (a moved or renamed function shows up here)."""
    text = path.read_text(encoding="utf-8")
    assert "Actual code:" in text, f"{path.name} has no closing 'Actual code:' line"
    tail = text[text.rindex("Actual code:"):]
    names = re.findall(r"`(xg2ref(?:\.\w+)+)`", tail)
    missing = [name for name in names if not resolves(name)]
    assert not missing, f"{path.name} names code that does not exist: {missing}"


@pytest.mark.parametrize("source,bad", [
    ("import xg2ref as xgr\nxgr.GrammarMatcher", False),
    ("from xg2ref.oracle import brute_force_mask", False),
    ("from xg2ref.views.parsing import earley_trace", False),
    ("import xg2ref.testing", False),
    ("from xg2ref.earley import EarleyParser", True),
    ("import xg2ref.mask.cache", True),
    ("from xg2ref.oracle.brute_force import brute_force_mask", True),
    ("from xg2ref.testing import _get_matcher_from_grammar", True),
    ("from xg2ref import earley", True),
    ("import xg2ref as xgr\nxgr.mask.cache.AdaptiveTokenMaskCache", True),
    ("m = object()\nm._parser", True),
    ("x = object()\nx.__class__", False),
])
def test_the_private_use_check(source, bad):
    assert bool(private_uses(source)) == bad


def test_the_actual_code_check():
    assert resolves("xg2ref.matcher.GrammarMatcher.rollback")
    assert not resolves("xg2ref.matcher.GrammarMatcher.no_such_method")
    assert not resolves("xg2ref.no_such_module.f")


def test_the_reproduction_index_names_commands_and_notebooks_that_exist():
    """notebooks/README.md's reproduction index: every `xg2ref bench X` is a bench the command
    line has, every notebook number a notebook that exists, every status one of the legend's,
    every reproduced row the paper's figure beside ours."""
    from xg2ref.tools.cli import build_parser

    text = (NOTEBOOK_DIR / "README.md").read_text(encoding="utf-8")
    index = text[text.index("## Reproduction index"):]
    index = index[:index.index("\n## ", 1)]
    rows = [line.split("|")[1:-1] for line in index.splitlines() if line.startswith("| XG") or
            line.startswith("| WG") or line.startswith("| CZ")]
    assert len(rows) >= 40
    bench = next(a for a in build_parser()._subparsers._group_actions[0].choices["bench"]._actions
                 if a.dest == "what")
    numbers = {p.name[:2] for p in NOTEBOOKS}
    for artefact, status, command, notebook, figures, _ in (map(str.strip, r) for r in rows):
        assert status in {"reproduced", "stand-ins", "taught", "partly", "not yet", "out of reach"}, artefact
        if status == "reproduced":  # the paper's figure beside ours
            assert "paper" in figures and "ours" in figures and "ours: —" not in figures, artefact
        for what in re.findall(r"`xg2ref bench ([\w-]+)`", command):
            assert what in bench.choices, (artefact, what)
        for n in re.findall(r"\d\d", notebook):
            assert n in numbers, (artefact, n)
