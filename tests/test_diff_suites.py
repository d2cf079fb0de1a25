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
