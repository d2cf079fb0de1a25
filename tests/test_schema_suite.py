"""The JSON-Schema-Test-Suite as a ratchet (xg2ref/tools/bench/schema_suite.py, specs/05 "The
standard's test suite"): xg2ref reads every vendored case; no test the ratchet holds right may go
wrong, and no valid instance of a compiled schema may be refused but those KNOWN_REFUSALS names."""

import json

import pytest

from xg2ref.tools.bench import schema_suite as ss

# compiled only: the suite's verdicts are checked here; the kernels' Python reading is checked by
# the kernel and property tests of the plain-Python run
pytestmark = pytest.mark.jit_only


@pytest.fixture(scope="module")
def suite():
    cases = ss.load_suite()
    return cases, ss.run_suite(cases, ["xg2ref"], timeout=60)


def test_the_vendored_suite_is_whole():
    cases = ss.load_suite()
    groups = {(c.draft, c.group) for c in cases}
    assert ("draft2020-12", "not") in groups and ("draft7", "dependencies") in groups
    assert ("draft2020-12", "format:date-time") in groups
    assert sum(len(c.tests) for c in cases) > 3000
    assert (ss.SUITE_DIR / "LICENSE.md").exists()


def test_no_test_the_ratchet_holds_goes_wrong(suite):
    cases, records = suite
    ratchet = ss.read_ratchet()
    assert ratchet, "the ratchet is missing: xg2ref bench schema-suite --update-ratchet"
    assert ss.ratchet_regressions(records, ratchet) == []


def test_every_valid_instance_of_a_compiled_schema_is_accepted(suite):
    cases, records = suite
    assert ss.valid_refusals(cases, records) == []


def test_exact_formats_accept_every_valid_instance_and_count_a_host_name():
    """exact_formats: leap seconds, IPv6 literals in email and URI hosts, a host name's 253
    characters; no valid instance refused without COSTLY_FORMAT_REFUSALS, no test lost."""
    from xg2ref.config import json_schema_approximate, json_schema_exact_formats

    groups = {"format:time", "format:date-time", "format:email", "format:uri", "format:hostname"}
    # (draft 2020-12's cases only: draft 7's copies of these groups hold a subset of its tests)
    cases = [c for c in ss.load_suite() if c.group in groups and c.draft == "draft2020-12"]
    with json_schema_exact_formats(True), json_schema_approximate(True):  # (the A-labels: approximations)
        records = ss.run_suite(cases, ["xg2ref"], timeout=120)
    assert all(r["compiled"] for r in records)
    assert ss.valid_refusals(cases, records, exact_formats=True) == []
    assert ss.ratchet_regressions(records, {k: v for k, v in ss.read_ratchet().items()
                                            if k in {c.key for c in cases}}) == []
    by_key = {c.key: c for c in cases}
    longest = [(r, i) for r in records for i, t in enumerate(by_key[r["key"]].tests)
               if "maximum overall length" in t[0]]
    assert longest and all(r["right"][i] for r, i in longest)
    assert ss.known_refusal("draft7/format:time/0", "valid leap second, Zulu", exact_formats=True) is None
    assert ss.known_refusal("draft7/format:time/0", "valid leap second, Zulu", exact_formats=False)


def test_the_ratchet_names_only_cases_that_exist():
    keys = {c.key for c in ss.load_suite()}
    assert set(ss.read_ratchet()) <= keys


def test_canonical_instances():
    assert ss.instance_text({"a": [1.0, 1e-05, "é", None, True]}) == '{"a": [1, 0.00001, "é", null, true]}'
    assert ss.instance_text(-2.0) == "-2"
    with pytest.raises(ValueError):
        ss.instance_text(float("nan"))


def test_a_refused_schema_is_a_record_not_a_crash():
    case = ss.SuiteCase("draft2020-12", "made-up", 0, "bad", {"type": "no-such-type"}, [("x", 1, True)])
    rec = ss.run_case(case, "xg2ref")
    assert rec["compiled"] is False and "type" in rec["error"] and rec["right"] is None


def test_suite_table_counts_each_instance_once(suite):
    cases, records = suite
    text = ss.suite_table(cases, records, ["xg2ref"])
    assert "| draft2020-12 | not |" in text and "all required" in text
    counts = ss.group_counts(cases, records)
    assert sum(v["valid"] + v["invalid"] for v in counts.values()) == sum(len(c.tests) for c in cases)


def test_draft7_reads_ref_alone():
    """draft-07: the keywords beside a $ref are ignored (2019-09 and later apply them)."""
    from xg2ref.testing import _is_grammar_accept_string as accepts
    from xg2ref import Grammar

    body = {"definitions": {"a": {"type": "array"}}, "properties": {"foo": {"$ref": "#/definitions/a", "maxItems": 1}}}
    old = Grammar.from_json_schema({"$schema": "http://json-schema.org/draft-07/schema#", **body}, strict_mode=False)
    new = Grammar.from_json_schema({"$schema": "https://json-schema.org/draft/2020-12/schema", **body},
                                   strict_mode=False)
    text = json.dumps({"foo": [1, 2]})
    assert accepts(old, text) and not accepts(new, text)


def test_literals_are_values_not_spellings():
    """const 2.0 is the number 2; const objects take their members in any order with any_order."""
    from xg2ref.testing import _is_grammar_accept_string as accepts
    from xg2ref import Grammar

    two = Grammar.from_json_schema({"const": -2.0})
    assert accepts(two, "-2") and accepts(two, "-2.0") and not accepts(two, "2")
    obj = {"const": {"foo": "bar", "baz": 1}}
    unordered = Grammar.from_json_schema(obj, any_order=True)
    assert accepts(unordered, '{"baz": 1, "foo": "bar"}') and accepts(unordered, '{"foo": "bar", "baz": 1}')
    assert not accepts(unordered, '{"foo": "bar"}') and not accepts(unordered, '{"foo": "bar", "foo": "bar"}')
    ordered = Grammar.from_json_schema(obj)
    assert accepts(ordered, '{"foo": "bar", "baz": 1}') and not accepts(ordered, '{"baz": 1, "foo": "bar"}')
