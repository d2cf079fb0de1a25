"""The front-end suites of `xg2ref diff`: JSONSchemaBench schemas, regexes and BFCL tool calling,
each converted by every engine's own front end, checked against the oracle and xgrammar."""

import importlib.util

import pytest

from xg2ref.tools.diff.runner import QUICK, run_diff
from xg2ref.suite import ebnf_case_names, load_cases

HAVE_XGRAMMAR = importlib.util.find_spec("xgrammar") is not None


def test_front_end_cases_expand_and_convert():
    schemas = load_cases(["schemas"])
    assert len(schemas) == 13 and all(c.kind == "json_schema" and c.group == "schemas" for c in schemas)
    assert {c.name.split("-")[1] for c in schemas} >= {"Github_easy", "Kubernetes", "WashingtonPost", "Snowplow"}
    regexes = [c for c in load_cases() if c.kind == "regex"]
    assert len(regexes) == 6
    for case in schemas + regexes:
        assert "root ::=" in case.text  # xg2ref's own conversion, printed
    assert load_cases([schemas[3].name])[0] == schemas[3]
    assert "schemas" not in ebnf_case_names() and "json" in ebnf_case_names()


def test_tool_call_cases_are_the_models_structural_tags():
    llama, harmony = load_cases(["bfcl-llama", "bfcl-harmony"])
    assert llama.kind == harmony.kind == "tool_calls"
    assert llama.spec["model"] == "llama" and harmony.spec["model"] == "harmony"
    assert [t["function"]["name"] for t in llama.spec["tools"]][:2] == ["BattleReignGameAPI.update_player_equipment",
                                                                        "algebra.quadratic_roots"]
    tag = llama.structural_tag()
    assert tag["format"]["type"] == "triggered_tags" and len(tag["format"]["tags"]) == 5
    assert "<|call|>" in harmony.text and "algebra.quadratic_roots" in harmony.text


@pytest.mark.jit_only
@pytest.mark.parametrize("names", [["regex-date", "regex-words"], ["schemas-Kubernetes-1", "schemas-Github_trivial-0"],
                                   ["bfcl-llama", "bfcl-harmony"]])
def test_front_end_cases_agree_with_the_oracle(names):
    report = run_diff(names, against="xgrammar" if HAVE_XGRAMMAR else None, options=QUICK, progress=False)
    for case in report.cases:
        assert not case.error and case.traces > 0 and case.strings > 0, case
        assert case.oracle_failures == 0, case.reproducers
        if HAVE_XGRAMMAR and not names[0].startswith("schemas"):
            assert case.ref_failures == 0, case.reproducers  # no documented difference applies here


class _NumlessEngine:
    """xg2ref, except that its captures leave out every "num": a reference engine with a
    captures bug (its masks are xg2ref's)."""

    name = "numless"

    def __init__(self, info):
        from xg2ref.oracle.engines import XG2RefEngine

        self.inner = XG2RefEngine(info)

    def compile(self, ebnf_text: str, root: str = "root"):
        matcher = self.inner.compile(ebnf_text, root)
        captures = matcher.captures
        matcher.captures = lambda: [c for c in captures() if c[0] != "num"]
        return matcher


@pytest.mark.jit_only
def test_captures_are_compared_with_the_reference_shrunk_and_replayable():
    """The `captures` case (captures and a stop marker): xg2ref agrees with xgrammar's captures
    at every trace step; a reference whose captures differ is a disagreement of the class
    `captures`, shrunk to the fewest bytes that still show it, with a replay command."""
    from xg2ref import TokenizerInfo

    info = TokenizerInfo.from_quicktok("llama3")
    if HAVE_XGRAMMAR:
        report = run_diff(["captures"], against="xgrammar", vocab=info, options=QUICK, progress=False)
        case = report.cases[0]
        assert case.captures_compared > 0 and case.capture_diff_ref == 0, case.reproducers
    report = run_diff(["captures"], against=_NumlessEngine(info), vocab=info, options=QUICK, progress=False)
    case = report.cases[0]
    assert case.capture_diff_ref > 0 and case.ref_failures > 0
    kept = [d for d in case.reproducers if d.kind == "captures"]
    assert kept and all(d.against == "numless" for d in kept)
    shortest = min(kept, key=lambda d: len(d.prefix))
    assert len(shortest.prefix) <= 3 and shortest.prefix[-1:].isdigit(), shortest  # e.g. b"a:1"
    assert "('num'" in shortest.verdicts["xg2ref"] and "('num'" not in shortest.verdicts["numless"]
    assert shortest.replay().startswith("xg2ref check captures --partial --captures ")
