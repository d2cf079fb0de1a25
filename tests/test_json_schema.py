"""JSON Schema front end (xg2ref/frontends/json_schema/converter.py) against the `jsonschema` validator.

Soundness: every sentence drawn from the grammar parses and validates. Completeness: every
valid value, serialized canonically in the layout, is accepted.
"""

import json
import random
import re
from decimal import Decimal

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.frontends.json_schema.lexical import integer_range, number_range
from xg2ref.grammar.ir import GrammarIR, Rule
from xg2ref.oracle.recognizer import Recognizer
from xg2ref.oracle.strategies import sentences


def accepts(schema, text: str, **options) -> bool:
    return Recognizer(xgr.Grammar.from_json_schema(schema, **options).ir).is_sentence(text.encode())


def valid(schema, value) -> bool:
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER  # RFC 3339 times, not draft 3's
    return jsonschema.Draft202012Validator(schema, format_checker=checker).is_valid(value)


SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 5, "maximum": 120},
                                      "b": {"type": "string", "maxLength": 3}}, "required": ["a"]},
    {"type": "array", "items": {"type": "number", "exclusiveMinimum": 0.5, "maximum": 7}, "minItems": 1, "maxItems": 3},
    {"type": "array", "prefixItems": [{"type": "boolean"}, {"type": "null"}], "items": {"enum": ["x", 2]}},
    {"type": "object", "properties": {"k": {"const": [1, {"z": None}]}}, "additionalProperties": {"type": "integer"}},
    {"type": "object", "patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False},
    {"type": "object", "propertyNames": {"pattern": "^[a-c]+$"}, "additionalProperties": {"type": "boolean"}},
    {"anyOf": [{"type": "string", "minLength": 2}, {"type": "integer", "maximum": -3}]},
    {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
               {"properties": {"b": {"type": "integer"}}, "required": ["b"]}]},
    {"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                                                          "next": {"$ref": "#/$defs/node"}}, "required": ["v"]}},
     "$ref": "#/$defs/node"},
    {"type": "string", "pattern": "a[0-9]"},
    {"type": "string", "format": "date"},
    {"type": ["string", "null"], "enum": ["a", None, 3]},
    {"minLength": 2},
    {"type": "integer", "multipleOf": 7, "minimum": -30, "maximum": 30},
    # allOf of two anyOf lists: their product (also what happens when a $ref'd schema brings one)
    {"allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]},
               {"anyOf": [{"minimum": 5}, {"maxLength": 1}, {"type": "array"}]}]},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[json.dumps(s)[:50] for s in SCHEMAS])
def test_sentences_validate(schema):
    ir = xgr.Grammar.from_json_schema(schema).ir
    rng = random.Random(0)
    drawn = 0
    for _ in range(60):
        text = sentences(ir, rng)
        if text is None:
            continue
        drawn += 1
        value = json.loads(text)
        assert valid(schema, value), (schema, text)
    assert drawn > 0


VALUES = [None, True, False, 0, -1, 3, 5, 7, 120, 121, -7, -28, 2.5, 0.5, 0.75, "", "a", "ab", "abc", "abcd", "a1",
          "xa5y", "2024-02-29", "2023-02-29", "2024-13-01", [], [1], [0.6, 7], [0.6, 7, 1.0, 2], [True, None, "x", 2],
          [True], {}, {"a": 7}, {"a": 7, "b": "xy"}, {"b": "x"}, {"a": 4}, {"k": [1, {"z": None}], "q": 3},
          {"x1": 1, "xy": -2}, {"y": 1}, {"ab": True, "c": False}, {"ad": True}, {"a": "s", "b": 1},
          {"v": 1, "next": {"v": 2}}, {"next": {"v": 2}}]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[json.dumps(s)[:50] for s in SCHEMAS])
@pytest.mark.parametrize("any_whitespace", [True, False])
def test_valid_values_are_accepted_and_invalid_rejected(schema, any_whitespace):
    for value in VALUES:
        text = json.dumps(value, ensure_ascii=False)
        if isinstance(value, float) and value.is_integer():
            continue
        assert accepts(schema, text, any_whitespace=any_whitespace) == valid(schema, value), (schema, text)


def test_layouts():
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}, "required": ["a"]}
    value = {"a": [1, 2]}
    assert accepts(schema, json.dumps(value), any_whitespace=False)
    assert not accepts(schema, json.dumps(value, separators=(",", ":")), any_whitespace=False)
    assert accepts(schema, json.dumps(value, separators=(",", ":")), any_whitespace=False, separators=(",", ":"))
    assert accepts(schema, json.dumps(value, indent=2), any_whitespace=False, indent=2)
    assert not accepts(schema, json.dumps(value, indent=4), any_whitespace=False, indent=2)
    assert accepts(schema, '{ "a" :\n[1 ,2]\t}')
    assert accepts(schema, '{"a":  [1]}', max_whitespace_cnt=2) and not accepts(schema, '{"a":   [1]}',
                                                                                   max_whitespace_cnt=2)


def test_strict_mode_and_any_order():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
    assert not accepts(schema, '{"a": 1, "c": 2}') and accepts(schema, '{"a": 1, "c": 2}', strict_mode=False)
    assert not accepts(schema, '{"a": 1, "a": 2}', strict_mode=False)  # a declared name is no additional key
    assert not accepts(schema, '{"b": 1, "a": 2}') and accepts(schema, '{"b": 1, "a": 2}', any_order=True)
    assert not accepts({**schema, "required": ["a"]}, '{"b": 1}', any_order=True)
    tuple_schema = {"type": "array", "prefixItems": [{"type": "integer"}]}
    assert not accepts(tuple_schema, "[1, 2]") and accepts(tuple_schema, "[1, 2]", strict_mode=False)


def test_strings_escape_and_count_code_points():
    schema = {"type": "string", "minLength": 2, "maxLength": 2}
    assert accepts(schema, '"\\u00e9\\n"') and accepts(schema, '"é😀"')
    assert not accepts(schema, '"\\ud83d\\ude00"')  # one code point as two escapes: not taken
    assert not accepts(schema, '"a\tb"'[:-1] + '"')  # a raw control character is not JSON
    assert accepts({"type": "string", "pattern": '^a"b$'}, '"a\\"b"')
    assert accepts({"type": "string", "pattern": "^a/b$"}, '"a\\/b"')


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.none(), st.integers(-300, 300)), st.one_of(st.none(), st.integers(-300, 300)),
       st.integers(-400, 400))
def test_integer_ranges(lo, hi, v):
    r = Recognizer(GrammarIR((Rule("root", integer_range(lo, hi)),)))
    assert r.is_sentence(str(v).encode()) == ((lo is None or v >= lo) and (hi is None or v <= hi))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.none(), st.decimals(-50, 50, places=2)), st.booleans(),
       st.one_of(st.none(), st.decimals(-50, 50, places=2)), st.booleans(), st.decimals(-60, 60, places=3))
def test_number_ranges(lo, lo_x, hi, hi_x, v):
    r = Recognizer(GrammarIR((Rule("root", number_range(lo, lo_x, hi, hi_x)),)))
    want = (lo is None or (v > lo if lo_x else v >= lo)) and (hi is None or (v < hi if hi_x else v <= hi))
    text = format(v, "f")
    assert r.is_sentence(text.encode()) == want, (lo, lo_x, hi, hi_x, text)


@pytest.mark.parametrize("schema, message", [
    ({"type": "strin"}, r"\$.type: must be one of"),
    ({"properties": {"a": {"type": 3}}}, r"\$.properties.a.type"),
    ({"type": "string", "pattern": "(ab"}, r"\$.pattern: missing '\)'"),
    ({"$ref": "#/definitions/missing"}, r"does not point into the schema"),
    ({"type": "array", "minItems": -1}, r"\$.minItems: must be a non-negative integer"),
    ({"type": "number", "minimum": "3"}, r"\$.minimum: must be a number"),
    ({"items": {"type": "object", "required": "a"}}, r"\$.items.required: must be a list"),
    ("{not json", "not valid JSON"),
])
def test_bad_schemas_name_the_part(schema, message):
    with pytest.raises(xgr.InvalidJSONError, match=message):
        xgr.Grammar.from_json_schema(schema)


def test_unenforceable_patterns_are_not_enforced():
    # lookbehind (and lookahead past the start) is beyond this front end: the pattern is dropped
    # (documented), the rest still holds
    schema = {"type": "string", "pattern": "a(?<!x)", "maxLength": 2}
    with pytest.raises(xgr.JSONSchemaNotExactError, match=r"^\$\.pattern: pattern not enforced"):
        xgr.Grammar.from_json_schema(schema)
    assert xgr.Grammar.from_json_schema(schema, approximate=True).approximations[0][:2] == ("$.pattern", "pattern")
    assert all(accepts(schema, t, approximate=True) for t in ('"xy"', '"ab"'))
    assert not accepts(schema, '"abc"', approximate=True)
    # a lookahead at the start is enforced: intersection with (the complement of) its prefixes
    schema = {"type": "string", "pattern": "^(?!x)", "maxLength": 2}
    assert not accepts(schema, '"xy"') and accepts(schema, '"ab"') and not accepts(schema, '"abc"')
    merged = {"allOf": [{"type": "integer", "x-note": "a"}, {"minimum": 3, "x-note": "b"}]}
    assert accepts(merged, "3") and not accepts(merged, "2")


def test_api():
    info = xgr.TokenizerInfo([b'{"', b'a', b'":', b' 1', b'}', b'</s>'], stop_token_ids=[5])
    compiled = xgr.GrammarCompiler(info).compile_json_schema(
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, any_whitespace=False)
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string('{"a": 1}') and m.is_completed()
    assert "root ::=" in xgr.testing._json_schema_to_ebnf({"type": "integer"})
    assert Decimal("0.5") == Decimal(repr(0.5))


@pytest.mark.parametrize("schema, yes, no", [
    ({"type": "string", "pattern": "^[a-z]+$", "maxLength": 3}, ["a", "abc"], ["", "abcd", "A"]),
    ({"type": "string", "pattern": "x", "minLength": 2, "maxLength": 4}, ["xa", "aaax", "x\\n"], ["x", "aaaax"]),
    ({"type": "string", "format": "email", "maxLength": 8}, ["a@b.cd"], ["ab@cd.efg"]),
    ({"type": "string", "format": "date", "maxLength": 10}, ["2020-01-31"], []),
    ({"type": "string", "format": "date", "maxLength": 9}, [], ["2020-01-31"]),
])
def test_patterns_and_formats_under_length_bounds(schema, yes, no):
    for text in yes:
        assert accepts(schema, f'"{text}"'), text
    for text in no:
        assert not accepts(schema, f'"{text}"'), text


def test_pattern_and_format_together():
    schema = {"type": "string", "format": "date", "pattern": "^20"}
    assert accepts(schema, '"2024-02-29"') and not accepts(schema, '"1999-01-01"') and not accepts(schema, '"20"')
    bounded = {"type": "string", "format": "email", "pattern": "@x", "maxLength": 6}
    assert accepts(bounded, '"a@x.io"') and not accepts(bounded, '"a@y.io"') and not accepts(bounded, '"ab@x.io"')


def test_min_and_max_properties_at_the_edges():
    schema = {"type": "object", "minProperties": 1}
    assert not accepts(schema, "{}") and accepts(schema, '{"a": 1}')
    assert accepts({"type": "object", "maxProperties": 0}, "{}")
    assert not accepts({"type": "object", "maxProperties": 0}, '{"a": 1}')


def test_keywords_that_are_not_enforced_never_block_an_allof():
    merged = {"allOf": [{"type": "integer", "uniqueItems": True, "contains": {"type": "string"}},
                        {"maximum": 100, "uniqueItems": False, "contains": {"type": "number"}}]}
    plain = {"type": "integer", "maximum": 100}
    # (array keywords on an integer: two contains, each counted, and uniqueItems change nothing)
    assert str(xgr.Grammar.from_json_schema(merged)) == str(xgr.Grammar.from_json_schema(plain))
    assert xgr.Grammar.from_json_schema(merged).approximations == ()
    # if / then / else are enforced (negation.py): two of them in an allOf both hold
    both = {"allOf": [{"type": "integer", "if": {"minimum": 3}, "then": {"maximum": 9}},
                      {"if": {"maximum": 0}, "then": {"minimum": -9}, "maximum": 100}]}
    for n in range(-20, 120):
        assert accepts(both, str(n)) == valid(both, n), n
    # two multipleOf values: multiples of their least common multiple (7.5 for 2.5 and 1.5)
    both = {"allOf": [{"multipleOf": 2.5}, {"multipleOf": 1.5}]}
    for text in ("0", "7.5", "15", "-22.5", "2.5", "1.5", "3.75", "30.0", "7.50", "7.51"):
        assert accepts(both, text) == (Decimal(text) % Decimal("7.5") == 0), text


def test_an_allof_of_patterns_and_of_constants():
    both = {"allOf": [{"type": "string", "pattern": "a"}, {"pattern": "b$"}, {"pattern": "^x", "maxLength": 5}]}
    for text in ("xab", "xaab", "xbab", "xab1", "ab", "xaaaab", "xb"):
        assert accepts(both, json.dumps(text)) == valid(both, text), text
    assert not accepts({"allOf": [{"const": 1}, {"const": 2}]}, "1")
    assert accepts({"allOf": [{"const": 1}, {"const": 1.0}]}, "1")


def test_long_plain_strings_share_one_rule_per_length_range():
    schema = {"type": "object", "properties": {k: {"type": "string", "maxLength": 300} for k in "abc"}
              | {"d": {"type": "string", "maxLength": 5}}, "required": ["a", "b", "c", "d"]}
    ir = xgr.Grammar.from_json_schema(schema).ir
    shared = [r for r in ir.rules if r.name.startswith("json_string_0_300")]
    assert len(shared) == 1
    text = str(xgr.Grammar.from_json_schema(schema))
    assert text.count("json_string_0_300") == 4 and "json_char{0,5}" in text  # a short bound stays inline


PATTERN_SCHEMAS = [
    {"type": "object", "patternProperties": {".{1,}": {"type": "string"}}, "additionalProperties": True},
    {"type": "object", "properties": {"id": {"type": "integer"}},
     "patternProperties": {"^x-": {"type": "string"}, "^[0-9]": {"type": "boolean"}},  # disjoint
     "additionalProperties": {"type": "integer"}},
    {"type": "object", "properties": {"ab": {"type": "null"}}, "patternProperties": {"^a+$": {"type": "integer"}},
     "additionalProperties": {"type": "string"}},
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(PATTERN_SCHEMAS))),
       st.lists(st.tuples(st.text("abx-1", max_size=4),
                          st.one_of(st.integers(-9, 9), st.booleans(), st.none(), st.text("ab", max_size=2))),
                max_size=3, unique_by=lambda kv: kv[0]))
def test_additional_keys_avoid_pattern_keys(k, members):
    """An additional member whose key matches a pattern answers to the pattern's schema: the
    grammar accepts a canonical object exactly when it validates (declared members first; the
    patterns are disjoint, as a key matched by two needs only one of them, specs/05)."""
    schema = PATTERN_SCHEMAS[k]
    declared = [m for m in members if m[0] in schema.get("properties", {})]
    value = dict(declared + [m for m in members if m not in declared])
    assert accepts(schema, json.dumps(value), any_whitespace=False) == valid(schema, value)


def test_definitions_that_reach_each_other_through_allof_refs():
    """A -> allOf[$ref B] -> allOf[$ref A]: the merged schemas end at rules (was a RecursionError)."""
    schema = {"definitions": {
        "A": {"type": "object", "properties": {"b": {"allOf": [{"$ref": "#/definitions/B"}, {"title": "b"}]},
                                               "n": {"type": "integer"}}, "required": ["n"]},
        "B": {"type": "object", "properties": {"a": {"allOf": [{"$ref": "#/definitions/A"}, {"title": "a"}]}}}},
        "$ref": "#/definitions/A"}
    yes = {"b": {"a": {"b": {}, "n": 2}}, "n": 1}  # members in schema order
    assert valid(schema, yes) and accepts(schema, json.dumps(yes))
    no = {"b": {"a": {"b": {}}}, "n": 1}
    assert not valid(schema, no) and not accepts(schema, json.dumps(no))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["[ab]*", "a(bc|d)[ab]+", "(x|yy)z*", "ab", "(a|bb|ccc)", "q[ab]{2}c*", "(a|b)(c|dd)e+",
                        "a*b*", "(a[bc]*|d)"]),
       st.integers(0, 5), st.one_of(st.none(), st.integers(0, 7)),
       st.lists(st.text("abcdexyzq", max_size=9), min_size=1, max_size=10), st.data())
def test_length_bounds_by_counting_keep_the_language(body, lo, hi, texts, data):
    """`bounded_by_counting` (one unbounded repetition of a single character takes the bound)
    accepts exactly the pattern's strings with lo <= length <= hi; shapes it cannot count
    (two repetitions) give None."""
    from xg2ref.frontends.regex.parser import regex_to_expr
    from xg2ref.grammar.regular import bounded_by_counting

    expr = regex_to_expr(body)
    counted = bounded_by_counting(expr, lo, hi)
    if body == "a*b*":
        assert counted is None
        return
    assert counted is not None
    whole = Recognizer(GrammarIR((Rule("root", expr),), root="root"))
    cut = Recognizer(GrammarIR((Rule("root", counted),), root="root"))
    texts = texts + data.draw(st.lists(st.from_regex(body, fullmatch=True), min_size=5, max_size=10))
    for text in texts:
        want = whole.is_sentence(text.encode()) and lo <= len(text) and (hi is None or len(text) <= hi)
        assert cut.is_sentence(text.encode()) == want, (body, lo, hi, text)


def test_a_bounded_pattern_used_twice_is_built_once():
    field = {"type": "string", "pattern": "^[a-c]+x", "maxLength": 6}
    one = xgr.Grammar.from_json_schema({"type": "object", "properties": {"a": field}, "required": ["a"]}).ir
    two = xgr.Grammar.from_json_schema({"type": "object", "properties": {"a": field, "b": dict(field)},
                                        "required": ["a", "b"]}).ir
    assert sum(r.name.startswith("len") for r in two.rules) == sum(r.name.startswith("len") for r in one.rules) > 0
    schema = {"type": "object", "properties": {"a": field, "b": dict(field)}, "required": ["a", "b"]}
    assert accepts(schema, '{"a": "abx", "b": "cxyz"}') and not accepts(schema, '{"a": "abx", "b": "cxyzzzz"}')


@pytest.mark.jit_only  # (the oracle alone, pure Python in either run)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 40), st.one_of(st.none(), st.integers(-5000, 5000)), st.one_of(st.none(), st.integers(-5000, 5000)),
       st.lists(st.integers(-10**7, 10**7), min_size=1, max_size=12))
def test_multiple_of_over_any_range(k, lo, hi, values):
    """A few multiples are listed; more (or an open range) use the remainder automaton of k."""
    schema = {"type": "integer", "multipleOf": k} | ({"minimum": lo} if lo is not None else {}) \
        | ({"maximum": hi} if hi is not None else {})
    recognizer = Recognizer(xgr.Grammar.from_json_schema(schema).ir)
    for v in values + [k * (v // k) for v in values]:
        want = v % k == 0 and (lo is None or v >= lo) and (hi is None or v <= hi)
        assert recognizer.is_sentence(str(v).encode()) == want, (schema, v)
    assert not recognizer.is_sentence(b"0" + str(k).encode()) and not recognizer.is_sentence(b"")


def test_merged_refs_and_long_objects_end_without_deep_recursion():
    # an anyOf branch `$ref` beside a sibling keyword is merged with it; the definition reaches
    # itself through that merge, which must end at a rule (JSON Schema Store's resjson)
    schema = {"type": "object", "additionalProperties": {"minProperties": 1, "anyOf": [
        {"type": "string"}, {"$ref": "#/definitions/res"}]},
        "definitions": {"res": {"type": "object", "additionalProperties": {
            "minProperties": 1, "anyOf": [{"type": "string"}, {"$ref": "#/definitions/res"}]}}}}
    assert accepts(schema, '{"a": {"b": {"c": "x"}}}') and not accepts(schema, '{"a": {}}')
    assert not accepts(schema, '{"a": 1}')
    wide = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(600)},
            "required": ["p599"]}
    assert accepts(wide, '{"p0": 1, "p599": 2}') and not accepts(wide, '{"p0": 1}')


LOOKAHEAD_PATTERNS = [r"^(?!@@)[\w@]+$", r"^(?!(ab|b)$)[a-c]*$", r"^(?=a)(?!ab)[abc]{0,3}", r"^(?!a|b$)c?",
                      r"^(?!ab)(?=.*c)"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(LOOKAHEAD_PATTERNS), st.booleans(), st.lists(st.text("abc@", max_size=5), min_size=1, max_size=6))
def test_leading_lookaheads_in_patterns_and_pattern_properties(pattern, as_key, texts):
    """`^(?!A)rest` / `^(?=A)rest` in a `pattern` or a `patternProperties` key, against Python's
    re (`$` there is ECMAScript's end of input, Python's `\\Z`)."""
    python = re.compile(pattern.replace("$", r"\Z"), re.ASCII)
    schema = ({"type": "object", "patternProperties": {pattern: {"type": "integer"}},
               "additionalProperties": {"type": "boolean"}} if as_key else {"type": "string", "pattern": pattern})
    recognizer = Recognizer(xgr.Grammar.from_json_schema(schema).ir)
    for text in texts:
        want = bool(python.search(text))
        if as_key:
            assert recognizer.is_sentence(json.dumps({text: 1}).encode()) == want, (pattern, text)
            assert recognizer.is_sentence(json.dumps({text: True}).encode()) != want, (pattern, text)
        else:
            assert recognizer.is_sentence(json.dumps(text).encode()) == want, (pattern, text)


def test_refs_by_name_find_anchor_dollar_id_and_draft4_id():
    for marker in ({"$anchor": "pos"}, {"$id": "#pos"}, {"id": "#pos"}):
        schema = {"type": "object", "properties": {"a": {"$ref": "#pos"}, "id": {"type": "string"}},
                  "required": ["a"], "definitions": {"p": {"type": "integer", "minimum": 1} | marker}}
        assert accepts(schema, '{"a": 3}') and not accepts(schema, '{"a": 0}'), marker
    with pytest.raises(xgr.InvalidJSONError, match="no \\$anchor, \\$id or id 'nope'"):
        xgr.Grammar.from_json_schema({"$ref": "#nope"})


def test_a_ref_to_the_schemas_own_uri_is_local():
    schema = {"$id": "https://example.com/s.json", "type": "object", "required": ["a"],
              "properties": {"a": {"$ref": "https://example.com/s.json#/definitions/n"}},
              "definitions": {"n": {"type": "integer", "maximum": 2}}}
    assert accepts(schema, '{"a": 2}') and not accepts(schema, '{"a": 3}')
    # a reference into another document is never fetched: refused, or any value when the caller
    # opts into that superset (specs/05)
    remote = dict(schema, properties={"a": {"$ref": "https://other.org/s.json#/x"}})
    with pytest.raises(xgr.JSONSchemaNotExactError, match=r"^\$\.properties\.a\.\$ref: \$ref not enforced"):
        xgr.Grammar.from_json_schema(remote)
    assert accepts(remote, '{"a": 3}', approximate=True) and accepts(remote, '{"a": [true, "x"]}', approximate=True)


MEMBER_SCHEMAS = [
    {"type": "object", "patternProperties": {"^[A-Z]": {"type": "integer"}}, "required": ["Va"],
     "additionalProperties": True},
    {"type": "object", "properties": {"Ab": {"minimum": 3}, "b": {"type": "string"}},
     "patternProperties": {"b$": {"type": "integer"}}, "additionalProperties": False},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "boolean"},
     "required": ["a", "c"]},
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(MEMBER_SCHEMAS))),
       st.dictionaries(st.sampled_from(["Va", "Ab", "b", "a", "c", "Vb"]),
                       st.one_of(st.integers(0, 5), st.booleans(), st.text("x", max_size=1)), max_size=4))
def test_members_meet_their_matching_pattern_properties(k, value):
    """A member named in `properties` or `required` also meets every `patternProperties` schema
    its name matches; a required name nothing declares meets `additionalProperties`."""
    schema = MEMBER_SCHEMAS[k]
    order = list(schema.get("properties", {})) + schema.get("required", [])  # declared members come first
    value = dict(sorted(value.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))
    text = json.dumps(value)
    assert accepts(schema, text) == valid(schema, value), (schema, text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([{"enum": ["ab", "b", "x-y"]}, {"pattern": "^[ab]+$"}, {"$ref": "#/definitions/n"}]),
       st.dictionaries(st.sampled_from(["ab", "b", "x-y", "ba", "", "c"]), st.integers(0, 3), max_size=3))
def test_pattern_members_meet_property_names(names, value):
    schema = {"type": "object", "propertyNames": names, "patternProperties": {".*": {"type": "integer"}},
              "additionalProperties": False, "definitions": {"n": {"enum": ["b", "c"]}}}
    assert accepts(schema, json.dumps(value)) == valid(schema, value), (names, value)


@pytest.mark.parametrize("fmt, yes, no", [
    ("json-pointer", ["", "/", "/a~0b/~1/0", "//"], ["a", "/~", "/~2", "~0"]),
    ("relative-json-pointer", ["0", "1#", "12/a/~1", "100/x"], ["", "#", "01", "-1/a", "1/~"]),
    # RFC 3986: authority (userinfo, host, digits for a port), paths, query, fragment
    ("uri", ["http://a.b/c?d=e#f", "mailto:x@y.z", "urn:isbn:0451450523", "http://u:p@h:8080/", "file:///x",
             "http://1.2.3.4/", "a:"], ["//a.b/c", "/x", "http://a b", "http://h:8a/", "http://2001:db8::1/",
                                       "1a:b", "http://\u00e9.fr/", "http://a/%zz"]),
    ("uri-reference", ["/x/y?z", "a/b", "#f", "", "//h/p", "http://a/b"], ["a b", "%x", "\\x", "h:/[x]"]),
    # RFC 3987: the same, with non-ASCII characters and IP-literal hosts
    ("iri", ["http://\u00e9x.fr/\u00fc?\ue000", "http://[::1]:80/", "http://[v1.x]/", "urn:x"],
     ["/\u00e9", "http://[::1/", "http://h/a b", "http://h/\ue000"]),
    ("iri-reference", ["\u00e9t\u00e9/x", "#\u00e9", "//[2001:db8::1]/"], ["a b", "http://[x]/"]),
    # RFC 6570 level 4
    ("uri-template", ["http://e.com/{user}/{+path}{?q,lang}", "{var:30}", "{list*}", "x{#a.b}", ""],
     ["{}", "{a", "a}", "{var:0}", "{a b}", "{%zz}", "<>"]),
    # RFC 6531: non-ASCII atoms, labels and quoted local parts
    ("idn-email", ["\u00e9l\u00e8ve@\u00e9cole.fr", "a@b.c", '"\u00e9 x"@h'], ["a", "a@", "@b", "a\uff20b.c"]),
])
def test_string_formats(fmt, yes, no):
    schema = {"type": "string", "format": fmt}
    for text in yes:
        assert accepts(schema, json.dumps(text, ensure_ascii=False)), text
    for text in no:
        assert not accepts(schema, json.dumps(text, ensure_ascii=False)), text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([
    {"allOf": [{"enum": ["atomic", "history", "h2", "", 3, 4.5, [1], {"a": 1}]}, {"pattern": "^h"}]},
    {"enum": ["ab", "abc", 7, 12, 3.5, None], "maxLength": 2, "minimum": 8},
    {"enum": [[1, 2], [], {"a": 1}, {}], "minItems": 1, "required": ["a"]},
    {"enum": [10, 15, 20, 2.5], "multipleOf": 5, "exclusiveMaximum": 20},
    {"const": "x-1", "format": "date"},
    {"enum": ["2024-02-30", "2024-02-29", "x"], "format": "date"},
    {"allOf": [{"enum": ["ax", "ab", "b", "xab"]}, {"pattern": "a"}, {"pattern": "b$"}]},  # both patterns
]), st.integers(0, 7))
def test_listed_values_meet_the_other_keywords(schema, k):
    """enum/const beside other keywords: only the values every keyword allows are listed."""
    values = schema["allOf"][0]["enum"] if "allOf" in schema else schema.get("enum", [schema.get("const")])
    value = values[k % len(values)]
    assert accepts(schema, json.dumps(value)) == valid(schema, value), (schema, value)


def test_shared_long_strings_are_shared_only_when_their_characters_agree():
    # a plain string and a pattern string with the same length bounds (Github o6199): the
    # pattern's rule must not be the plain one's
    schema = {"type": "object", "required": ["a", "b"], "properties": {
        "a": {"type": "string", "minLength": 1, "maxLength": 255},
        "b": {"type": "string", "pattern": "^[0-9a-zA-Z_-]{1,255}$"}}}
    assert accepts(schema, '{"a": "x y", "b": "ab"}') and not accepts(schema, '{"a": "x y", "b": "a b"}')
    flipped = dict(schema, properties={"b": schema["properties"]["b"], "a": schema["properties"]["a"]})
    assert accepts(flipped, '{"b": "ab", "a": "x y"}') and not accepts(flipped, '{"b": "a b", "a": "x y"}')


def test_allof_of_two_refs_and_of_one_anyof_twice():
    defs = {"a": {"type": "object", "properties": {"x": {"$ref": "#/definitions/int"}}},
            "b": {"type": "object", "properties": {"x": {"$ref": "#/definitions/small"}}},
            "int": {"type": "integer"}, "small": {"maximum": 3}}
    both = {"definitions": defs, "allOf": [{"$ref": "#/definitions/a"}, {"$ref": "#/definitions/b"}]}
    for value in ({"x": 2}, {"x": 4}, {"x": 2.5}, {}):
        assert accepts(both, json.dumps(value)) == valid(both, value), value
    twice = {"definitions": defs, "type": "object", "properties": {"by": {"anyOf": [{"$ref": "#/definitions/a"},
                                                                                   {"type": "string"}]}},
             "patternProperties": {"^b": {"anyOf": [{"$ref": "#/definitions/a"}, {"type": "string"}]}}}
    for value in ({"by": "s"}, {"by": {"x": 1}}, {"by": 3}, {"bz": "t"}):
        assert accepts(twice, json.dumps(value)) == valid(twice, value), value


def test_a_schema_converts_to_the_same_text_every_time():
    # rule names must not depend on earlier conversions: the grammar-level cache keys on the text
    schema = {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}}},
              "required": ["a"]}
    texts = {str(xgr.Grammar.from_json_schema(schema)) for _ in range(3)}
    assert len(texts) == 1


def test_an_empty_properties_map_declares_an_object_with_no_members_in_strict_mode():
    # as xgrammar 0.2.8: `properties: {}` is a declaration (`{}` only); no `properties`: any object
    assert accepts({"type": "object", "properties": {}}, "{}")
    assert not accepts({"type": "object", "properties": {}}, '{"a": 1}')
    assert accepts({"type": "object"}, '{"a": 1}')
    assert accepts({"type": "object", "properties": {}, "additionalProperties": True}, '{"a": 1}')


def test_a_const_beside_an_enum_must_be_listed():
    """allOf [enum, ...] with a sibling const: the const alone was written, the enum dropped."""
    schema = {"allOf": [{"enum": [1, "x", None]}], "const": 3}
    assert not xgr.testing._is_grammar_accept_string(xgr.Grammar.from_json_schema(schema), "3")
    schema = {"allOf": [{"enum": [1, 3]}], "const": 3}
    assert xgr.testing._is_grammar_accept_string(xgr.Grammar.from_json_schema(schema), "3")



def _byte_matcher(schema, **options):
    """A matcher over a vocabulary of single bytes, for checking many strings against one
    costly grammar (the oracle's recognizer reads a grammar of thousands of rules slowly)."""
    info = xgr.TokenizerInfo([bytes([b]) for b in range(256)])
    compiled = xgr.GrammarCompiler(info, cache_enabled=False).compile_json_schema(schema, **options)

    def accepts_text(text: str) -> bool:
        matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        return matcher.accept_string(text) and matcher.is_terminated()
    return accepts_text


@pytest.fixture(scope="module")
def exact_time():
    """`format: time` under exact_formats, compiled once (its leap seconds: about 3 s)."""
    return _byte_matcher({"type": "string", "format": "time"}, exact_formats=True)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 23), st.integers(0, 59), st.sampled_from([58, 59, 60, 61]), st.sampled_from("+-Z"),
       st.integers(0, 23), st.integers(0, 59), st.booleans())
def test_exact_formats_take_a_leap_second_at_23_59_utc_only(exact_time, hh, mm, ss, sign, oh, om, fraction):
    """RFC 3339 section 5.7: hh:mm:60 is valid exactly when the offset makes it 23:59:60 UTC
    (local time minus offset, modulo a day); seconds up to 59 always; 61 never."""
    offset = "Z" if sign == "Z" else f"{sign}{oh:02d}:{om:02d}"
    text = f"{hh:02d}:{mm:02d}:{ss:02d}{'.25' if fraction else ''}{offset}"
    shift = 0 if sign == "Z" else (1 if sign == "+" else -1) * (oh * 60 + om)
    expected = ss < 60 or (ss == 60 and (hh * 60 + mm - shift) % 1440 == 1439)
    assert exact_time(json.dumps(text)) == expected, text
    if ss == 60:  # the default grammar leaves every leap second out (specs/05, narrower)
        assert not accepts({"type": "string", "format": "time"}, json.dumps(text))


def test_exact_formats_take_ip_literals():
    email, uri = {"type": "string", "format": "email"}, {"type": "string", "format": "uri"}
    exact = dict(exact_formats=True, approximate=True)  # (email's A-labels: refused without approximate)
    for schema, text in ((email, "a@[IPv6:2001:db8::1]"), (uri, "http://[::1]:80/x"), (uri, "http://[v1.x]/")):
        assert accepts(schema, json.dumps(text), **exact) and not accepts(schema, json.dumps(text)), text
    assert not accepts(email, json.dumps("a@[IPv6:1::2::3]"), **exact)


def test_exact_formats_refuse_what_no_grammar_checks_unless_approximate():
    """exact_formats: exact or refused; a format's remaining wider part (formats.LIMITS: an
    A-label's Punycode) is an approximation, named by path."""
    schema = {"type": "object", "properties": {"h": {"type": "string", "format": "hostname"},
                                               "t": {"type": "string", "format": "time"}}}
    with pytest.raises(xgr.exceptions.JSONSchemaNotExactError, match=r"\$\.properties\.h\.format.*Punycode"):
        xgr.Grammar.from_json_schema(schema, exact_formats=True)
    assert xgr.Grammar.from_json_schema(schema).approximations == ()  # the default: wider, listed in LIMITS
    grammar = xgr.Grammar.from_json_schema(schema, exact_formats=True, approximate=True)
    assert [a[0] for a in grammar.approximations] == ["$.properties.h.format"]


@pytest.mark.jit_only  # (a front end's grammar; its automaton is large for the Python reading)
def test_exact_formats_count_a_host_name_and_its_complement():
    host = {"type": "string", "format": "hostname"}
    name = ".".join(["a" * 63] * 3 + ["b" * 61])  # 253 characters
    exact = _byte_matcher(host, exact_formats=True, approximate=True)
    assert exact(json.dumps(name)) and not exact(json.dumps(name + "b")) and not exact(json.dumps("a..b"))
    assert accepts(host, json.dumps(name + "b"))  # the default grammar: any number of labels (specs/05)
    # not (labels and at most 253) = not labels, or more than 253 characters: exact, no approximation
    grammar = xgr.Grammar.from_json_schema({"type": "string", "not": host}, exact_formats=True)
    assert grammar.approximations == ()
    complement = _byte_matcher({"type": "string", "not": host}, exact_formats=True)
    assert complement(json.dumps(name + "b")) and complement(json.dumps("a..b")) and not complement(json.dumps(name))
