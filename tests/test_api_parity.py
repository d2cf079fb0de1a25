"""xgrammar 0.2.8's public API, name by name: every name and signature it has, xg2ref has.

tests/data/xgrammar_0_2_8_api.json lists xgrammar 0.2.8's public names: top-level functions,
classes with their public methods and properties (signatures as parameter name, kind and default),
modules and the names defined in them. It was written from xgrammar 0.2.8 itself, and
`test_the_listing_is_xgrammars` checks it against the installed package when there is one.

A signature matches when xg2ref's accepts every parameter of xgrammar's under the same name and
kind with the same default; xg2ref may add optional parameters of its own after them.
Left out: the binding modules (`base`, `load_binding`, `tvm_ffi_binding`: xgrammar's C++ glue)
and pydantic's own `BaseModel` methods beyond the ones a model class gets anyway.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import json
import types
from pathlib import Path

import pytest

import xg2ref

LISTING = json.loads((Path(__file__).parent / "data" / "xgrammar_0_2_8_api.json").read_text())["api"]
CLASSES = sorted(n for n, v in LISTING.items() if v["kind"] == "class")
FUNCTIONS = sorted(n for n, v in LISTING.items() if v["kind"] == "function")
MODULES = sorted(n for n, v in LISTING.items() if v["kind"] == "module")


def _signature(obj) -> list:
    out = []
    for p in inspect.signature(obj).parameters.values():
        out.append([p.name, p.kind.name, None if p.default is inspect.Parameter.empty else repr(p.default)])
    return out


def _signature_gaps(theirs: list, ours_obj) -> list:
    """What xgrammar's parameters `theirs` have that `ours_obj`'s signature lacks."""
    if theirs is None or all(p[0] == "self" or p[1].startswith("VAR_") for p in theirs):
        return []  # xgrammar's (*args, **kwargs): overloads or a binding's constructor; any signature will do
    try:
        ours = {p[0]: p for p in _signature(ours_obj)}
    except (TypeError, ValueError):
        return ["no signature"]
    gaps = []
    for name, kind, default in theirs:
        mine = ours.get(name)
        if mine is None:
            if kind in ("VAR_POSITIONAL", "VAR_KEYWORD") and any(p[1] == kind for p in ours.values()):
                continue
            gaps.append(f"parameter {name!r} missing")
        elif mine[1] != kind and not (kind == "POSITIONAL_OR_KEYWORD" and mine[1] == "POSITIONAL_OR_KEYWORD"):
            gaps.append(f"parameter {name!r} is {mine[1]}, xgrammar's is {kind}")
        elif mine[2] != default and not _same_default(mine[2], default):
            gaps.append(f"parameter {name!r} defaults to {mine[2]}, xgrammar's to {default}")
    return gaps


def _same_default(a, b) -> bool:
    # enum members and floats print differently across packages: compare what they say
    return a is not None and b is not None and a.rsplit(".", 1)[-1].strip(">'") == b.rsplit(".", 1)[-1].strip(">'")


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function(name):
    ours = getattr(xg2ref, name, None)
    assert callable(ours), f"xg2ref.{name} is missing"
    assert _signature_gaps(LISTING[name]["signature"], ours) == []


@pytest.mark.parametrize("name", CLASSES)
def test_class(name):
    ours = getattr(xg2ref, name, None)
    assert inspect.isclass(ours), f"xg2ref.{name} is missing"
    problems = []
    for member, info in LISTING[name]["members"].items():
        if info["kind"] == "attribute" and member.startswith("model_"):
            continue  # pydantic's per-class data (model_fields, ...): present on any model class
        owner = next(iter(ours)) if issubclass(ours, enum.Enum) else ours  # an enum's name/value: on members
        if not hasattr(owner, member) and not _instance_attribute(ours, member):
            problems.append(f"{name}.{member} missing")
            continue
        if info["kind"] in ("method", "staticmethod", "classmethod") and hasattr(ours, member):
            gaps = _signature_gaps(info["signature"], getattr(ours, member))
            problems += [f"{name}.{member}: {g}" for g in gaps]
    assert problems == []


def _instance_attribute(cls, member: str) -> bool:
    """A member set in __init__ (xg2ref keeps some of xgrammar's properties as attributes)."""
    try:
        source = inspect.getsource(cls.__init__)
    except (OSError, TypeError):
        return False
    return f"self.{member} =" in source


@pytest.mark.parametrize("name", MODULES)
def test_module(name):
    info = LISTING[name]
    ours = getattr(xg2ref, name, None)
    if ours is None:
        ours = importlib.import_module(f"xg2ref.{name}")
    assert isinstance(ours, types.ModuleType)
    missing = [n for n in info.get("names", []) if not hasattr(ours, n)]
    for sub, names in info.get("submodules", {}).items():
        module = importlib.import_module(f"xg2ref.{name}.{sub}")
        missing += [f"{sub}.{n}" for n in names if not callable(getattr(module, n, None))]
    assert missing == []


@pytest.mark.xgrammar
def test_the_listing_is_xgrammars():
    """The listing above is what xgrammar 0.2.8 has (the names and signatures, rebuilt live)."""
    xgr = pytest.importorskip("xgrammar")
    importlib.import_module("xgrammar.kernels")  # a subpackage its users import by path
    live = sorted(n for n in dir(xgr) if not n.startswith("_")
                  and n not in ("base", "load_binding", "tvm_ffi_binding"))
    assert live == sorted(LISTING)
    for name in CLASSES:
        cls = getattr(xgr, name)
        for member, info in LISTING[name]["members"].items():
            if info["kind"] in ("method", "staticmethod", "classmethod") and info["signature"] is not None:
                assert _signature(getattr(cls, member)) == info["signature"], f"{name}.{member}"
    for name in FUNCTIONS:
        assert _signature(getattr(xgr, name)) == LISTING[name]["signature"]


def _fresh_python(code: str) -> str:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_xgrammar_alias_resolves_every_path_to_xg2ref_and_uninstalls():
    out = _fresh_python(
        "import sys, xg2ref.contrib.xgrammar_alias as alias\n"
        "alias.install()\n"
        "import xgrammar, xgrammar.structural_tag, xgrammar.exception, xgrammar.config\n"
        "from xgrammar.matcher import BatchGrammarMatcher\n"
        "from xgrammar.compiler import GrammarCompiler\n"
        "import xg2ref\n"
        "print(xgrammar is xg2ref, xgrammar.structural_tag.__name__, BatchGrammarMatcher is xg2ref.BatchGrammarMatcher,\n"
        "      GrammarCompiler is xg2ref.GrammarCompiler, xg2ref.__spec__.name)\n"
        "try:\n"
        "    import xgrammar.no_such_module\n"
        "except ModuleNotFoundError:\n"
        "    print('missing')\n"
        "alias.uninstall()\n"
        "print(sorted(n for n in sys.modules if n.startswith('xgrammar')), alias.installed())\n")
    assert out.splitlines() == ["True xg2ref.structural_tag True True xg2ref", "missing", "[] False"]


@pytest.mark.xgrammar
def test_xgrammar_alias_refuses_once_the_real_one_is_imported():
    pytest.importorskip("xgrammar")
    out = _fresh_python("import xgrammar, xg2ref.contrib.xgrammar_alias as alias\n"
                        "try:\n    alias.install()\nexcept RuntimeError as err:\n    print('refused:', err)\n")
    assert out.startswith("refused: the real xgrammar is already imported")


TAG = {"type": "structural_tag", "format": {"type": "sequence", "elements": [
    {"type": "optional", "content": {"type": "tag", "begin": "<think>", "content": {"type": "any_text"},
                                     "end": "</think>"}},
    {"type": "triggered_tags", "triggers": ["<f="], "tags": [
        {"type": "tag", "begin": "<f=a>", "content": {"type": "json_schema", "json_schema": {"type": "object"}},
         "end": ["</f>", "</F>"]}]},
    {"type": "dispatch", "rules": [["<x>", {"type": "regex", "pattern": "[0-9]+"}]]},
    {"type": "repeat", "min": 1, "max": 2, "content": {"type": "token", "token": "<|eot|>"}}]}}


def test_structural_tag_models_validate_and_dump():
    from xg2ref.structural_tag import JSONSchemaFormat, StructuralTag, StructuralTagItem, TagFormat

    st = StructuralTag.from_json(TAG)
    assert isinstance(st.format.elements[1].tags[0], TagFormat)
    assert isinstance(st.format.elements[1].tags[0].content, JSONSchemaFormat)
    assert StructuralTag.from_json(st.model_dump_json()) == st
    assert st.model_dump()["format"]["elements"][1]["excludes"] == []  # defaults filled
    assert StructuralTag({"type": "const_string", "value": "x"}).format.value == "x"  # the format as the argument
    with pytest.raises(ValueError):
        StructuralTag.from_json({"format": {"type": "no_such_format"}})
    legacy = StructuralTag.from_legacy_structural_tag(
        [StructuralTagItem(begin="<a>", schema='{"type": "string"}', end="</a>")], ["<a"])
    assert legacy.model_dump()["format"]["tags"][0]["content"]["json_schema"] == {"type": "string"}
    legacy.format.at_least_one = True  # a model: fields can be set before compiling, as SGLang does
    info = xg2ref.TokenizerInfo(["<a>", '"x"', "</a>", "y"])
    matcher = xg2ref.GrammarMatcher(xg2ref.GrammarCompiler(info).compile_structural_tag(legacy))
    assert not matcher.accept_string("y") and matcher.accept_string('<a>"x"</a>')


@pytest.mark.xgrammar
def test_structural_tag_models_are_xgrammars():
    """The same fields, defaults and validation: a tag dumped by one package validates in the
    other to the same dump."""
    xgrammar = pytest.importorskip("xgrammar")
    from xg2ref import structural_tag as ours

    theirs = xgrammar.structural_tag
    for name in LISTING["structural_tag"]["names"]:
        a, b = getattr(ours, name), getattr(theirs, name)
        assert list(a.model_fields) == list(b.model_fields), name
        for field, info in b.model_fields.items():
            mine = a.model_fields[field]
            assert mine.is_required() == info.is_required(), (name, field)
            if not info.is_required():
                assert mine.default == info.default, (name, field)
            assert mine.alias == info.alias, (name, field)
    dumped = ours.StructuralTag.from_json(TAG).model_dump()
    assert theirs.StructuralTag.from_json(TAG).model_dump() == dumped
    assert ours.StructuralTag.from_json(theirs.StructuralTag.from_json(TAG).model_dump_json()).model_dump() == dumped
