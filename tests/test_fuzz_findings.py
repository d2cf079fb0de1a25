"""The classes of disagreement `xg2ref fuzz` found, pinned for the oracle, xg2ref and the engines.

`tests/data/fuzz_findings.json` holds one entry per root cause: the engine it was found with, the
smallest grammar source (EBNF, regex or JSON schema) that shows it, and checks. A check is one
question over the fuzz vocabulary (`xg2ref.tools.fuzz.case.default_vocabulary()`), asked the way the
fuzzer asks it (`benchmarks/tracker_cases/run.py` spells the five kinds out): is a text a viable
prefix (`prefix`, byte by byte; `whole`, in one accept), a complete output (`sentence`), is a
token in the mask after it (`token`), does accept_token take it (`accept`). A token is named by
its bytes (or `token_stop` for the stop token), never by an id. Each check carries the
standard's verdict (`valid`) and the clause behind it (`why`), and each engine's verdict in the
versions of pyproject.toml's `oracle` extra (a boolean, "error: ..." for a refused grammar or
input, "crash" for a worker killed by a signal; errors are compared by kind, not by text).

What is checked:

- every label against an independent reading where there is one: `jsonschema`'s 2020-12 validator
  on complete JSON documents, Python's `re` on regex outputs, and a `witness` (a complete output
  that extends a viable prefix) validated the same way;
- the oracle's and xg2ref's verdicts equal the label, or, where the check says so
  (`xg2ref_verdict`), xg2ref's documented departure (specs/05: strict mode and the narrowings of the
  JSON Schema front end; the oracle reads xg2ref's grammar, so it departs alike);
- each installed engine still gives its recorded verdict, so a release that fixes or changes a
  finding fails here and the entry (and docs/findings.md) must be updated. The engines run in
  worker processes (`run.finding_verdicts`): a spin costs FINDING_TIMEOUT_S and is reported, a
  crash is the verdict "crash" only when the worker process died by a signal (xgrammar's
  segmentation fault; a worker that exits otherwise is "died"). Entries marked
  `outlines_via_regex` ask outlines only their sentence questions, through the regex it builds
  for the schema, matched with Python's `re` (indexing those schemas takes outlines 15 s or
  more); the full index gave the same verdicts and answers the rest (`run.py --case ID`).

Replay an entry on every engine: `.venv/bin/python benchmarks/tracker_cases/run.py --case ID`.
"""

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FINDINGS = json.loads((ROOT / "tests" / "data" / "fuzz_findings.json").read_text(encoding="utf-8"))
ENGINES = ("xg2ref", "xgrammar", "llguidance", "outlines")
OTHERS = {"xgrammar": "xgrammar", "llguidance": "llguidance", "outlines": "outlines_core"}
QUESTIONS = ("prefix", "sentence", "whole", "token", "accept")


def _load_run():
    spec = importlib.util.spec_from_file_location("tracker_cases_run", ROOT / "benchmarks" / "tracker_cases" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RUN = _load_run()


def _checks():
    for entry in FINDINGS:
        for j, check in enumerate(entry["checks"]):
            yield entry, j, check


def _where(entry, j, check) -> str:
    return f"{entry['id']} check {j} ({check['question']} {RUN.check_bytes(check)!r})"


def test_findings_are_well_formed():
    ids = [e["id"] for e in FINDINGS]
    assert len(ids) == len(set(ids))
    for entry in FINDINGS:
        assert entry["engine"] in OTHERS and entry["id"].startswith(entry["engine"] + "-fuzz-")
        assert entry["kind"] in ("ebnf", "regex", "json_schema") and entry["summary"]
        assert entry["options"] == {}
        assert entry["by_design"] is None or entry["by_design"].strip()
        assert entry["upstream"] is None or entry["upstream"].startswith("https://github.com/")
        assert entry["replay"] == f".venv/bin/python benchmarks/tracker_cases/run.py --case {entry['id']}"
        assert entry["raw"] and all(r["run"] and r["question"] for r in entry["raw"])
        shown = False
        for check in entry["checks"]:
            assert check["question"] in QUESTIONS and isinstance(check["valid"], bool) and check["why"]
            assert ("text" in check) != ("hex" in check)
            tokens = sum(k in check for k in ("token", "token_hex", "token_stop"))
            assert tokens == (check["question"] in ("token", "accept")), check
            assert set(check["engines"]) == set(ENGINES)
            for verdict in check["engines"].values():
                assert isinstance(verdict, bool) or verdict in ("crash", "hang") or verdict.startswith("error: ")
            shown |= check["engines"][entry["engine"]] != check["valid"] \
                or check.get("xg2ref_verdict", check["valid"]) != check["valid"]
        assert shown, f"{entry['id']}: no check shows the finding"
        if "outlines_via_regex" in entry:
            assert entry["kind"] == "json_schema" and any(c["question"] == "sentence" for c in entry["checks"])


def test_labels_agree_with_independent_readings():
    """JSON documents against jsonschema's 2020-12 validator, regex outputs against Python's `re`
    (the patterns here mean the same in both dialects), witnesses of viable prefixes likewise."""
    jsonschema = pytest.importorskip("jsonschema")
    checked = 0
    for entry, j, check in _checks():
        kind, source = check.get("kind", entry["kind"]), check.get("source", entry["source"])
        data = RUN.check_bytes(check)
        if check["question"] in ("token", "accept") and not check.get("token_stop"):
            data += RUN.check_token_bytes(check)

        def verdict(text: str) -> bool:
            if kind == "regex":
                return re.fullmatch(source, text) is not None
            try:
                value = json.loads(text)
            except ValueError:
                return False
            return jsonschema.Draft202012Validator(source).is_valid(value)

        where = _where(entry, j, check)
        if "witness" in check:
            assert check["valid"], where
            assert check["witness"].encode("utf-8").startswith(data), where
            if kind != "ebnf":  # EBNF witnesses are checked with the oracle below
                assert verdict(check["witness"]), where
                checked += 1
        elif check["question"] == "sentence" and kind != "ebnf":
            assert verdict(data.decode("utf-8")) == check["valid"], where
            checked += 1
    assert checked >= 30


@pytest.fixture(scope="module")
def verdicts():
    """Every verdict at once: the installed engines' workers run while this process answers for
    the oracle and xg2ref."""
    installed = tuple(e for e, module in OTHERS.items() if importlib.util.find_spec(module) is not None)
    return RUN.finding_verdicts(FINDINGS, engines=("oracle", "xg2ref") + installed, fast=True)


@pytest.mark.parametrize("name", ["oracle", "xg2ref"])
def test_oracle_and_xg2ref_give_the_label(name, verdicts):
    wrong = []
    for k, entry in enumerate(FINDINGS):
        for j, check in enumerate(entry["checks"]):
            expected = check.get("xg2ref_verdict", check["valid"])
            got = verdicts[name][k][j]
            if got != expected:
                what = "the label" if expected == check["valid"] else "the documented departure"
                wrong.append(f"{_where(entry, j, check)}: {what} is {expected}, {name} says {got}")
            if name == "xg2ref" and check.get("xg2ref_verdict") is not None:
                # the departure is still there: xg2ref's own verdict differs from the standard's
                assert check["xg2ref_verdict"] != check["valid"], _where(entry, j, check)
    assert not wrong, "\n".join(wrong)


def test_ebnf_witnesses_are_sentences():
    from xg2ref.oracle.recognizer import Recognizer
    from xg2ref.tools.user_cases import case_from_text

    seen = 0
    for entry, j, check in _checks():
        kind, source = check.get("kind", entry["kind"]), check.get("source", entry["source"])
        if kind == "ebnf" and "witness" in check:
            recognizer = Recognizer(case_from_text("witness", source, "ebnf").grammar().ir)
            assert recognizer.is_sentence(check["witness"].encode("utf-8")), _where(entry, j, check)
            seen += 1
    assert seen >= 5


@pytest.mark.parametrize("engine", list(OTHERS))
def test_engine_still_gives_the_recorded_verdict(engine, verdicts):
    if importlib.util.find_spec(OTHERS[engine]) is None:  # (importing xgrammar here would cost seconds)
        pytest.skip(f"{engine} is not installed")
    changed, asked = [], 0
    for k, entry in enumerate(FINDINGS):
        for j, check in enumerate(entry["checks"]):
            recorded, got = check["engines"][engine], verdicts[engine][k][j]
            if got is None:  # outlines_via_regex: only sentence questions are asked
                assert engine == "outlines" and "outlines_via_regex" in entry
                continue
            asked += 1
            if not RUN.same_verdict(recorded, got):
                changed.append(f"{_where(entry, j, check)}: recorded {recorded!r}, now {got!r}")
    assert asked >= 50
    assert not changed, (f"{engine} answers differently now; check the finding (run.py --case ID), then update "
                         "tests/data/fuzz_findings.json and docs/findings.md:\n" + "\n".join(changed))
