"""The Numba kernels take their arrays grouped by meaning (NamedTuples such as `Chart`,
`FSMArrays`, `TrieArrays`, `ClassifyScratch`), not one by one: no @njit function of the package
has more than MAX_KERNEL_PARAMETERS parameters."""

from __future__ import annotations

import ast
from pathlib import Path

import xg2ref

MAX_KERNEL_PARAMETERS = 10
PACKAGE = Path(xg2ref.__file__).parent


def _is_njit(decorator: ast.expr) -> bool:
    """@njit, @njit(...), @numba.njit, @nb.njit(...), ..."""
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(node, ast.Attribute):
        return node.attr == "njit"
    return isinstance(node, ast.Name) and node.id == "njit"


def _parameters(f: ast.FunctionDef) -> int:
    a = f.args
    return (len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None)
            + (a.kwarg is not None))


def njit_functions():
    """(module path, function name, line, parameter count) of every @njit function."""
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    _is_njit(d) for d in node.decorator_list):
                yield path.relative_to(PACKAGE.parent).as_posix(), node.name, node.lineno, _parameters(node)


def test_the_walk_finds_the_kernels():
    names = {name for _, name, _, _ in njit_functions()}
    assert {"classify_tokens", "add_item", "advance_byte", "fill_mask"} <= names


def test_no_kernel_takes_more_than_ten_parameters():
    wide = [f"{path}:{line} {name} ({n} parameters)" for path, name, line, n in njit_functions()
            if n > MAX_KERNEL_PARAMETERS]
    assert not wide, "kernels with more than 10 parameters (group their arrays in NamedTuples):\n" + "\n".join(wide)


def test_decorator_forms_are_recognised():
    source = "@njit\ndef a(): pass\n@njit(cache=True)\ndef b(): pass\n@numba.njit\ndef c(): pass\n" \
             "@nb.njit(cache=True)\ndef d(): pass\n@other\ndef e(): pass\n"
    found = [f.name for f in ast.walk(ast.parse(source)) if isinstance(f, ast.FunctionDef)
             and any(_is_njit(d) for d in f.decorator_list)]
    assert found == ["a", "b", "c", "d"]
