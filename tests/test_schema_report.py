"""`xg2ref.schema_report` and `xg2ref schema-report FILE`: one row per keyword of a schema with
xg2ref's status (exact, approximated, refused, annotation, unknown keyword), beside the other
engines' compile and their JSON-Schema-Test-Suite figures."""

import json

import pytest

import xg2ref
from xg2ref.tools.cli import main
from xg2ref.tools.schema_report import status_kind, suite_figures, walk


def xg2ref_rows(schema, **options) -> dict:
    """{path: xg2ref's status} of the report's rows."""
    return {row.path: row.status["xg2ref"] for row in xg2ref.schema_report(schema, engines=(), **options).rows}


UNIQUE_STRINGS = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}


@pytest.mark.parametrize("schema, path, kind", [
    (UNIQUE_STRINGS, "$.uniqueItems", "approximated"),
    (UNIQUE_STRINGS, "$.items.type", "exact"),
    ({"type": "array", "items": {"enum": [1, 2, 3]}, "uniqueItems": True}, "$.uniqueItems", "exact"),
    ({"not": {"type": "string"}}, "$.not", "exact"),
    ({"not": {"type": "string"}}, "$.not.type", "exact"),
    ({"type": "object", "title": "point", "description": "d"}, "$.title", "annotation"),
    ({"type": "object", "x-vendor": 1}, "$.x-vendor", "unknown keyword"),
    ({"properties": {"a": {"type": "string", "minLength": 2}}}, "$.properties.a.minLength", "exact"),
    ({"properties": {"a": {"minLength": -1}}, "required": ["a"]}, "$.properties.a.minLength", "refused"),
    ({"properties": {"a": {"minLength": -1}}, "required": ["a"]}, "$.required", "not converted"),
    ({"type": "strnig"}, "$.type", "refused"),
    ({"format": "color"}, "$.format", "annotation"),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "#/definitions/a", "minimum": 3,
      "definitions": {"a": {"type": "integer"}}}, "$.minimum", "ignored beside $ref"),
    ({"$defs": {"a": {"type": "array", "items": {"type": "number"}, "uniqueItems": True}}, "$ref": "#/$defs/a"},
     "#/$defs/a.uniqueItems", "approximated"),
    ({"items": [{"type": "string"}], "additionalItems": {"type": "integer", "minimum": 1}},
     "$.additionalItems.minimum", "exact"),
])
def test_xg2ref_status_of_a_keyword(schema, path, kind):
    rows = xg2ref_rows(schema)
    assert path in rows, sorted(rows)
    assert status_kind(rows[path]) == kind, rows[path]


def test_an_approximation_says_how():
    assert xg2ref_rows(UNIQUE_STRINGS)["$.uniqueItems"].startswith("approximated (not enforced: an item domain")


def test_a_refusal_quotes_the_message():
    assert "must be a non-negative integer" in xg2ref_rows({"minLength": -1})["$.minLength"]


def test_a_merged_approximation_is_a_row_and_marks_the_branch():
    schema = {"allOf": [{"type": "array", "uniqueItems": True}, {"items": {"type": "number"}}]}
    rows = xg2ref_rows(schema)
    assert status_kind(rows["$.uniqueItems"]) == "approximated"  # where the converter merged it
    assert status_kind(rows["$.allOf[0].uniqueItems"]) == "approximated"


def test_the_walk_reaches_every_subschema_location():
    schema = {"properties": {"a": {}}, "patternProperties": {"^x": {}}, "additionalProperties": {},
              "prefixItems": [{}], "items": {}, "contains": {}, "propertyNames": {}, "dependentSchemas": {"a": {}},
              "allOf": [{}], "anyOf": [{}], "oneOf": [{}], "not": {}, "if": {}, "then": {}, "else": {},
              "$defs": {"d": {}}, "unevaluatedItems": {}, "unevaluatedProperties": {}}
    have = {node.names[0] for node in walk(schema)}
    assert have == {"$", "$.properties.a", "$.patternProperties.^x", "$.additionalProperties", "$.prefixItems[0]",
                    "$.items", "$.contains", "$.propertyNames", "$.dependentSchemas.a", "$.allOf[0]", "$.anyOf[0]",
                    "$.oneOf[0]", "$.not", "$.if", "$.then", "$.else", "#/$defs/d", "$.unevaluatedItems",
                    "$.unevaluatedProperties"}


def test_summary_and_json():
    report = xg2ref.schema_report({"type": "string", "title": "t", "x-y": 0}, engines=())
    assert report.summary() == {"xg2ref": {"exact": 1, "annotation": 1, "unknown keyword": 1}}
    data = json.loads(report.to_json())
    assert [r["path"] for r in data["rows"]] == ["$.type", "$.title", "$.x-y"]
    assert report.to_markdown().splitlines()[0] == "| path | keyword | xg2ref |"
    assert report.exact()


@pytest.mark.parametrize("counts, want", [
    (dict(cases=9, compiled=9, invalid=24, invalid_ok=0), "ignored: rejects 0 of 24 invalid instances"),
    (dict(cases=3, compiled=3, invalid=12, invalid_ok=12), "enforced: rejects 12/12 invalid instances"),
    (dict(cases=6, compiled=5, invalid=15, invalid_ok=7), "partly: rejects 7/15 invalid instances"),
    (dict(cases=4, compiled=0, invalid=6, invalid_ok=0), "refused on the suite"),
])
def test_suite_figures(counts, want):
    assert suite_figures({"draft2020-12": {"not": counts}}, "draft2020-12", "not").startswith(want)


# ---- the other engines ---------------------------------------------------------------------------


def test_xgrammar_refuses_a_schema_with_a_false_branch():
    pytest.importorskip("xgrammar")
    report = xg2ref.schema_report({"anyOf": [{"type": "string"}, False]}, engines=("xgrammar",))
    assert "xgrammar" in report.refused
    assert all(status_kind(row.status["xgrammar"]) == "refused" for row in report.rows)
    assert all(status_kind(row.status["xg2ref"]) == "exact" for row in report.rows)


def test_xgrammar_column_reads_the_suite_summary(tmp_path):
    pytest.importorskip("xgrammar")
    groups = {"xgrammar": {"draft2020-12": {"not": dict(cases=9, compiled=9, invalid=24, invalid_ok=0,
                                                         valid=16, valid_ok=16)}}}
    path = tmp_path / "groups.json"
    path.write_text(json.dumps(groups))
    report = xg2ref.schema_report({"not": {"type": "string"}}, engines=("xgrammar",), groups=path)
    status = {row.path: row.status["xgrammar"] for row in report.rows}
    assert status["$.not"].startswith("ignored: rejects 0 of 24 invalid instances of the suite's not tests")
    assert "ignores `not`" in status["$.not"]  # the documented note
    assert status["$.not.type"] == "not measured"  # no `type` group in this summary


# (keyword schema, its type, an instance the keyword rejects) for each of XGRAMMAR_TYPED
TYPED = {
    "minimum": ({"minimum": 3}, "number", "2"), "maximum": ({"maximum": 3}, "number", "4"),
    "exclusiveMinimum": ({"exclusiveMinimum": 3}, "number", "3"),
    "exclusiveMaximum": ({"exclusiveMaximum": 3}, "number", "3"),
    "multipleOf": ({"multipleOf": 2}, "integer", "3"), "pattern": ({"pattern": "^a"}, "string", '"b"'),
    "minLength": ({"minLength": 2}, "string", '"a"'), "maxLength": ({"maxLength": 1}, "string", '"ab"'),
    "minItems": ({"minItems": 1}, "array", "[]"), "maxItems": ({"maxItems": 1}, "array", "[1, 2]"),
    "minProperties": ({"minProperties": 1}, "object", "{}"),
    "maxProperties": ({"maxProperties": 1}, "object", '{"a": 1, "b": 2}'),
    "propertyNames": ({"propertyNames": {"maxLength": 1}}, "object", '{"ab": 1}'),
    "patternProperties": ({"patternProperties": {"^a": {"type": "integer"}}}, "object", '{"ab": "x"}'),
}


@pytest.mark.parametrize("keyword", sorted(TYPED))
def test_the_xgrammar_note_on_untyped_schemas_holds(keyword):
    """NOTES: xgrammar holds these keywords beside a `type`, and reads them without one as any value."""
    xgr = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    from xg2ref.tools.schema_report import XGRAMMAR_TYPED

    assert set(TYPED) == set(XGRAMMAR_TYPED)
    schema, type_, instance = TYPED[keyword]
    untyped = xgr.Grammar.from_json_schema(json.dumps(schema), strict_mode=False)
    typed = xgr.Grammar.from_json_schema(json.dumps({"type": type_, **schema}), strict_mode=False)
    assert _is_grammar_accept_string(untyped, instance)
    assert not _is_grammar_accept_string(typed, instance)


def test_group_summary_writes_the_counts_per_engine_draft_and_group(tmp_path):
    from xg2ref.tools.bench.schema_suite import SuiteCase, write_group_summary

    case = SuiteCase("draft7", "not", 0, "d", {"not": {}}, [("v", 1, True), ("i", "a", False), ("j", 2, False)])
    records = [{"key": case.key, "engine": "xgrammar", "compiled": True, "right": [True, False, True]}]
    write_group_summary([case], records, tmp_path / "groups.json")
    assert json.loads((tmp_path / "groups.json").read_text()) == {"xgrammar": {"draft7": {"not": dict(
        cases=1, compiled=1, valid=1, valid_ok=1, invalid=2, invalid_ok=1)}}}


def test_the_committed_suite_summary_has_every_engine():
    from xg2ref.tools.schema_report import GROUPS, read_groups

    summary = read_groups(GROUPS)
    assert set(summary) >= {"xg2ref", "xgrammar", "llguidance"}
    assert summary["xg2ref"]["draft2020-12"]["not"]["invalid"] > 0


# ---- the command line ---------------------------------------------------------------------------


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_reports_a_file(tmp_path, capsys):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps({"type": "object", "properties": {"tags": UNIQUE_STRINGS}, "title": "t"}))
    status, out, _ = run(capsys, "schema-report", str(path), "--engines", "none")
    assert status == 1  # an approximation: the default conversion refuses this schema
    assert "| $.properties.tags.uniqueItems | uniqueItems | approximated (" in out
    assert "| $.title | title | annotation |" in out
    assert "xg2ref: " in out


def test_cli_json_and_options(tmp_path, capsys):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps({"type": "string", "minLength": 1}))
    status, out, _ = run(capsys, "schema-report", str(path), "--engines", "none", "--json", "--no-strict-mode",
                         "--any-order")
    assert status == 0
    assert json.loads(out)["summary"] == {"xg2ref": {"exact": 2}}


def test_cli_refuses_a_file_that_is_not_json(tmp_path, capsys):
    path = tmp_path / "schema.json"
    path.write_text('{"type": ')
    status, out, err = run(capsys, "schema-report", str(path))
    assert status == 2
    assert err.startswith("error: ") and "is not a JSON file" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_the_readme_coverage_table_is_the_suite_summary():
    """README's "JSON Schema coverage" table is `coverage_table` of the committed groups.json."""
    from pathlib import Path

    from xg2ref.tools.schema_report import GROUPS, coverage_table, read_groups

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    marker = "<!-- coverage-table: xg2ref.tools.schema_report.coverage_table -->\n"
    assert marker in readme
    have = readme.split(marker, 1)[1].split("\n\n", 1)[0]
    assert have == coverage_table(read_groups(GROUPS))


def test_a_format_row_says_what_its_grammar_leaves_out_or_lets_in(tmp_path, capsys):
    """formats.LIMITS: a narrower format is `narrower (...)`, a wider one `approximated (...)`;
    --exact-formats puts the costly parts in (specs/05, "Formats")."""
    path = tmp_path / "schema.json"
    path.write_text(json.dumps({"type": "object", "properties": {"t": {"type": "string", "format": "time"},
                                                                 "d": {"type": "string", "format": "date"}}}))
    status, out, _ = run(capsys, "schema-report", str(path), "--engines", "none")
    assert status == 0 and "| $.properties.t.format | format | narrower (no leap second" in out
    assert "| $.properties.d.format | format | exact |" in out
    status, out, _ = run(capsys, "schema-report", str(path), "--engines", "none", "--exact-formats")
    assert status == 0 and "| $.properties.t.format | format | exact |" in out
    path.write_text(json.dumps({"type": "string", "format": "hostname"}))
    status, out, _ = run(capsys, "schema-report", str(path), "--engines", "none")
    assert status == 1 and "| $.format | format | approximated (wider: more than 253 characters" in out
    status, out, _ = run(capsys, "schema-report", str(path), "--engines", "none", "--exact-formats")
    assert status == 1 and "| $.format | format | approximated (not enforced in full: wider: the Punycode" in out
