"""Cases mined from the public issue trackers of xgrammar, llguidance, outlines-core and outlines.

`tests/data/tracker_cases.json` holds one case per reported bug: a grammar source (a JSON schema,
a regex, an xgrammar EBNF or a Lark grammar), front-end options, and complete strings labelled
with the verdict of the standard (JSON Schema 2020-12 and RFC 8259, ECMAScript regexes, Lark's
grammar language, xgrammar's EBNF dialect); each string says which clause decides it. The JSON
schema labels were checked with `jsonschema`'s Draft 2020-12 validator and its format checker.

xg2ref must give the labelled verdict on every string. Where xg2ref departs by design, the case
names the clause of specs/05-front-ends.md (`xg2ref_departs`) and the strings it affects carry
xg2ref's own verdict (`xg2ref_verdict`); the test then pins that verdict, and checks that the
departure is still there. A case marked `xg2ref_refuses` pins a documented refusal to compile. A case marked `empty_language` has no valid string at all; refusing
to compile it would be as right as rejecting every string.

The verdicts of xgrammar, llguidance and outlines on the same cases are in
benchmarks/tracker_cases/results.md, and as data in tests/data/tracker_engine_verdicts.json
(`benchmarks/tracker_cases/run.py` writes both). The last test recomputes them for each installed
engine with run.py's own functions (llguidance in its worker process with a timeout, since it can
spin) and asks for the recorded verdicts, so that an upstream release that fixes or changes one
fails here: then rerun run.py and update docs/findings.md. Compile errors are compared by kind,
not by text. It runs in the compiled pass only (`jit_only`): the engines do not depend on numba,
and one pass is enough.
"""

import importlib.util
import json
from pathlib import Path

import pytest

import xg2ref as xgr

CASES = json.loads((Path(__file__).parent / "data" / "tracker_cases.json").read_text(encoding="utf-8"))
RECORDED = json.loads((Path(__file__).parent / "data" / "tracker_engine_verdicts.json").read_text(encoding="utf-8"))
KINDS = ("json_schema", "regex", "ebnf", "lark")
OTHER_ENGINES = {"xgrammar": "xgrammar", "llguidance": "llguidance", "outlines": "outlines_core"}


def _grammar(case):
    kind, source, options = case["kind"], case["source"], case.get("options", {})
    if kind == "json_schema":
        return xgr.Grammar.from_json_schema(source, **options)
    if kind == "regex":
        return xgr.Grammar.from_regex(source)
    if kind == "ebnf":
        return xgr.Grammar.from_ebnf(source)
    return xgr.Grammar.from_lark(source)


def test_cases_are_well_formed():
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))
    for case in CASES:
        assert case["kind"] in KINDS
        assert case["url"].startswith("https://github.com/")
        assert case["engine_reported"] in ("xgrammar", "llguidance", "outlines-core", "outlines")
        assert case["strings"]
        for s in case["strings"]:
            assert isinstance(s["valid"], bool) and s["why"]
        departs = any("xg2ref_verdict" in s for s in case["strings"]) or case.get("xg2ref_refuses", False)
        assert departs == bool(case.get("xg2ref_departs")), case["id"]
        if case.get("empty_language"):
            assert not any(s["valid"] for s in case["strings"])


def test_json_schema_labels_agree_with_jsonschema():
    jsonschema = pytest.importorskip("jsonschema")
    for case in CASES:
        if case["kind"] != "json_schema":
            continue
        validator = jsonschema.Draft202012Validator(
            case["source"], format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        for s in case["strings"]:
            try:
                instance = json.loads(s["text"])
            except ValueError:
                verdict = False
            else:
                verdict = validator.is_valid(instance)
            assert verdict == s["valid"], (case["id"], s["text"])


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_xg2ref_verdicts(case):
    if case.get("xg2ref_refuses"):  # a documented refusal of the grammar itself
        with pytest.raises(ValueError):
            _grammar(case)
        return
    try:
        grammar = _grammar(case)
    except ValueError:
        if case.get("empty_language"):
            return  # no valid string exists: refusing the grammar is right
        raise
    wrong = []
    for s in case["strings"]:
        got = xgr.testing._is_grammar_accept_string(grammar, s["text"])
        expected = s.get("xg2ref_verdict", s["valid"])
        if got != expected:
            wrong.append((s["text"], "label" if expected == s["valid"] else "pinned departure", expected, got))
    assert not wrong, f"{case['id']}: (text, what, expected, xg2ref) {wrong}"
    if case.get("xg2ref_departs"):
        departing = [s["text"] for s in case["strings"] if s.get("xg2ref_verdict", s["valid"]) != s["valid"]]
        # the documented departure is still there (specs/05-front-ends.md, clause in the case)
        assert departing, f"{case['id']}: no string departs any more; drop xg2ref_departs " \
                          f"({case['xg2ref_departs']})"


def _run_module():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "tracker_cases" / "run.py"
    spec = importlib.util.spec_from_file_location("tracker_cases_run", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_recorded_engine_verdicts_cover_every_string():
    assert set(RECORDED) == {c["id"] for c in CASES}
    for case in CASES:
        record = RECORDED[case["id"]]
        assert set(record) == {"xg2ref", *OTHER_ENGINES}, case["id"]
        for engine, verdicts in record.items():
            assert len(verdicts) == len(case["strings"]), (case["id"], engine)
            assert all(isinstance(v, bool) or v.startswith(("error", "timeout")) for v in verdicts)
        # xg2ref's recorded verdicts are the ones test_xg2ref_verdicts pins (label or departure)
        for s, v in zip(case["strings"], record["xg2ref"]):
            assert v == s.get("xg2ref_verdict", s["valid"]) or case.get("xg2ref_refuses") \
                or (case.get("empty_language") and not s["valid"]), (case["id"], s["text"], v)


@pytest.mark.jit_only
@pytest.mark.parametrize("engine", list(OTHER_ENGINES))
def test_other_engines_still_give_the_recorded_verdicts(engine):
    if importlib.util.find_spec(OTHER_ENGINES[engine]) is None:
        pytest.skip(f"{engine} is not installed")
    run = _run_module()
    if engine == "xgrammar":
        now = [run.xgrammar_verdicts(c) for c in CASES]
    elif engine == "llguidance":
        now = run.llguidance_verdicts(CASES)
    else:
        now = run.outlines_verdicts(CASES)
    changed = []
    for case, verdicts in zip(CASES, now):
        for s, recorded, got in zip(case["strings"], RECORDED[case["id"]][engine], verdicts):
            if not run.same_verdict(recorded, got):
                changed.append(f"{case['id']} {s['text']!r}: recorded {recorded!r}, now {got!r}")
    assert not changed, (f"{engine} answers differently now; rerun benchmarks/tracker_cases/run.py and update "
                         "docs/findings.md:\n" + "\n".join(changed))
