"""The package's import graph has no cycle: every arrow between xg2ref's modules points one way.

The graph has one node per module of the installed package's source and an arrow A -> B for
every `import` / `from ... import` anywhere in A (inside functions too) that names B: relative
imports are resolved against A's package, and `from pkg import name` names the submodule
`pkg.name` when there is one, else `pkg`. A module reached only as the parent of a named one
(importing `xg2ref.grammar.ir` runs `xg2ref/grammar/__init__.py`) gets no arrow, or every module
would point at `xg2ref`.

The test fails listing each strongly connected component of more than one module, with the
imports that tie it together, and each module that imports itself.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

import xg2ref

PACKAGE_DIR = Path(xg2ref.__file__).resolve().parent


def package_modules(package_dir: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Dotted module name -> source file, for every .py file of the package."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported_names(module: str, is_package: bool, node: ast.AST) -> list[str]:
    """The dotted names an import statement of `module` brings in, relative ones resolved.

    Example: imported_names("xg2ref.frontends.json_schema.converter", False,
                            ast.parse("from .ir import walk").body[0]) == ["xg2ref.grammar.ir.walk"]
    """
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    return [f"{prefix}.{alias.name}" for alias in node.names]


def module_of(name: str, modules) -> Optional[str]:
    """The longest prefix of the dotted `name` that is one of `modules` (None: not ours)."""
    while name not in modules:
        if "." not in name:
            return None
        name = name.rsplit(".", 1)[0]
    return name


def import_graph(modules: dict[str, Path]) -> dict[str, dict[str, list[str]]]:
    """module -> {imported module -> ["line: statement", ...]}, self-imports included."""
    graph: dict[str, dict[str, list[str]]] = {}
    for module, path in modules.items():
        arrows: dict[str, list[str]] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for name in imported_names(module, path.name == "__init__.py", node):
                target = module_of(name, modules)
                if target is not None:
                    arrows.setdefault(target, []).append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        graph[module] = arrows
    return graph


def reachable(graph, start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for target in graph[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted: B is in A's when
    each reaches the other (a few hundred modules: a search from each is quick enough)."""
    reach = {module: reachable(graph, module) for module in graph}
    components, placed = [], set()
    for module in sorted(graph):
        if module in placed:
            continue
        component = sorted(other for other in reach[module] if module in reach[other])
        placed.update(component)
        if len(component) > 1:
            components.append(component)
    return components


def describe(graph, component: list[str]) -> str:
    inside = set(component)
    lines = [" <-> ".join(component)]
    for module in component:
        for target, where in sorted(graph[module].items()):
            if target in inside and target != module:
                lines += [f"    {module} -> {target}   ({w})" for w in where]
    return "\n".join(lines)


def test_the_resolver_reads_relative_and_submodule_imports():
    modules = {"p": Path("p/__init__.py"), "p.a": Path("p/a.py"), "p.sub": Path("p/sub/__init__.py"),
               "p.sub.b": Path("p/sub/b.py")}
    statements = {
        "from . import a": ("p.sub.b", False, ["p.sub"]),  # p.sub.a is not a module: the package
        "from .. import a": ("p.sub.b", False, ["p.a"]),
        "from .b import f": ("p.sub", True, ["p.sub.b"]),
        "from p.sub import b, g": ("p.a", False, ["p.sub.b", "p.sub"]),
        "import p.sub.b": ("p.a", False, ["p.sub.b"]),
        "import numpy": ("p.a", False, []),
    }
    for text, (module, is_package, want) in statements.items():
        names = imported_names(module, is_package, ast.parse(text).body[0])
        have = [m for m in (module_of(n, modules) for n in names) if m is not None]
        assert have == want, text


def test_the_graph_sees_the_package():
    graph = import_graph(package_modules())
    assert len(graph) > 50
    assert "xg2ref.grammar.grammar" in graph["xg2ref.compiler"]  # a top-level import
    assert "xg2ref.tokenizer_hf" in graph["xg2ref.tokenizer_info"]  # one inside a method


def test_no_module_imports_itself():
    graph = import_graph(package_modules())
    selfish = [f"{m}: {graph[m][m]}" for m in sorted(graph) if m in graph[m]]
    assert not selfish, "modules that import themselves:\n" + "\n".join(selfish)


def test_the_import_graph_has_no_cycle():
    graph = import_graph(package_modules())
    found = cycles(graph)
    assert not found, ("import cycles (strongly connected components of the module graph); move what "
                       "both sides share into a module both import:\n" + "\n".join(describe(graph, c) for c in found))


# Arrows that would point up the pipeline (a module group -> groups it must not import). Groups are
# the package's subpackages and top-level modules; see each package's docstring for its place.
# (the baselines of xg2ref/baselines/ run beside the engine: only tools, views and the oracle's
# adapters may import them)
ENGINE_OUTSIDE = ("xg2ref.tools", "xg2ref.views", "xg2ref.baselines")
FORBIDDEN = {
    # the IR and its passes know no input format, no automaton and nothing of run time;
    # only the public facade (grammar/grammar.py) calls the front ends
    "xg2ref.grammar": ("xg2ref.frontends", "xg2ref.intrinsics", "xg2ref.fsm", "xg2ref.kernels", "xg2ref.earley",
                       "xg2ref.mask", "xg2ref.matcher", "xg2ref.compiler", "xg2ref.oracle")
                      + ENGINE_OUTSIDE,
    "xg2ref.frontends": ("xg2ref.fsm", "xg2ref.kernels", "xg2ref.earley", "xg2ref.mask",
                         "xg2ref.matcher", "xg2ref.compiler", "xg2ref.linking", "xg2ref.oracle") + ENGINE_OUTSIDE,
    "xg2ref.intrinsics": ("xg2ref.kernels", "xg2ref.earley", "xg2ref.mask", "xg2ref.matcher",
                          "xg2ref.compiler", "xg2ref.oracle") + ENGINE_OUTSIDE,
    "xg2ref.fsm": ("xg2ref.frontends", "xg2ref.kernels", "xg2ref.earley", "xg2ref.mask",
                   "xg2ref.matcher", "xg2ref.compiler", "xg2ref.oracle") + ENGINE_OUTSIDE,
    "xg2ref.kernels": ("xg2ref.grammar", "xg2ref.frontends", "xg2ref.intrinsics", "xg2ref.fsm", "xg2ref.earley",
                       "xg2ref.mask", "xg2ref.matcher", "xg2ref.compiler", "xg2ref.oracle")
                      + ENGINE_OUTSIDE,
    "xg2ref.earley": ("xg2ref.mask", "xg2ref.matcher", "xg2ref.compiler") + ENGINE_OUTSIDE,
    "xg2ref.mask": ("xg2ref.matcher", "xg2ref.compiler") + ENGINE_OUTSIDE,
    "xg2ref.compiler": ("xg2ref.matcher",) + ENGINE_OUTSIDE,
    "xg2ref.matcher": ENGINE_OUTSIDE,
}
# The facade: `Grammar.from_ebnf`, `from_json_schema`, ... call the front ends (lazily).
FACADES = {"xg2ref.grammar.grammar"}


def in_group(module: str, group: str) -> bool:
    return module == group or module.startswith(group + ".")


def test_no_arrow_points_up_the_pipeline():
    graph = import_graph(package_modules())
    wrong = []
    for module, arrows in sorted(graph.items()):
        if module in FACADES:
            continue
        for group, banned in FORBIDDEN.items():
            if not in_group(module, group):
                continue
            for target, where in sorted(arrows.items()):
                if any(in_group(target, b) for b in banned) and not in_group(target, group):
                    wrong += [f"{module} -> {target}   ({w})" for w in where]
    assert not wrong, "imports that point up the pipeline:\n" + "\n".join(wrong)


MAX_MODULE_LINES = 700


def test_no_module_is_over_700_lines():
    long = {m: n for m, p in package_modules().items() if (n := len(p.read_text(encoding="utf-8").splitlines()))
            > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by mechanism): {long}"
