"""`not`, `if`/`then`/`else`, exclusive `oneOf` (xg2ref/frontends/json_schema/negation.py) and
`$ref` through base URIs (references.py), against the `jsonschema` validator.

Both directions on every candidate: a value the grammar accepts (written canonically) validates
(soundness), and a value that validates is accepted (completeness). Sentences drawn from the
grammar validate too (hypothesis)."""

import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.frontends.json_schema.converter import SchemaConverter
from xg2ref.oracle.recognizer import Recognizer
from xg2ref.oracle.strategies import sentences
from xg2ref.tools.bench.schema_suite import instance_text

# compiled only: the languages are checked here; the kernels' Python reading is checked by the
# kernel and property tests of the plain-Python run
pytestmark = pytest.mark.jit_only

CANDIDATES = [None, True, False, 0, 1, 2, 3, 6, 7, 12, -1, -3, -10, -11, 100, 1.5, -0.25, 2.5, 10.75,
              "", "a", "ab", "abc", "abcde", "foo", "bar", "b", "ba", "xyz", "1", [], [1], [1, "a"], ["a", "a"],
              [2, 3, 4], {}, {"foo": 1}, {"foo": "x"}, {"bar": 2}, {"foo": "x", "bar": 2}, {"baz": None},
              {"kind": "a", "n": 1}, {"kind": "b", "s": "x"}, {"kind": "a", "s": "x"}, [1, 1], [1, 1, 1, 1], [5],
              [1, 6], [1, 2, 1], {"foo": 1, "bar": 2, "baz": 3}, 4.5, 0.75, -0.5, {"kind": "a", "n": 1, "s": 2},
              {"kind": "b", "n": 1}, {"foo": 1, "x": 2}, [1, "a", "b"], ["a", 1], {"kind": 1, "foo": 2, "bar": 3},
              [1, 1, "a"], [3, 6], [6, 7], [2, 3, 4], ["a", "b", 1], {"bar": 1, "foo": 2, "x": 3},
              {"x": 1, "foo": 2}, {"foo": 1, "baz": 2, "bar": 3, "q": 4}, {"c": "x", "ba": 1}, {"ba": 1, "x": 1.5},
              {"b": 1}, {"bar": "x", "z": None}, {"baz": 1, "quux": 2}, {"quux": 1}, {"\n": 1}]

SCHEMAS = [
    {"not": {"type": "integer"}},
    {"not": {"type": ["string", "number"]}},
    {"not": {"type": "object", "properties": {"foo": {"type": "string"}}}},
    {"not": {"minimum": 2, "maximum": 7}},
    {"not": {"exclusiveMinimum": 2}},
    {"not": {"multipleOf": 3}},
    {"type": "integer", "not": {"multipleOf": 2}, "minimum": -11, "maximum": 12},
    {"not": {"minLength": 2, "maxLength": 3}},
    {"not": {"pattern": "^a"}},
    {"type": "string", "not": {"enum": ["a", "ab", "foo"]}},
    {"not": {"const": 1}},
    {"not": {"enum": [1, "a", None, True]}},
    {"not": {"required": ["foo"]}},
    {"not": {"minItems": 1, "maxItems": 2}},
    {"not": {"prefixItems": [{"type": "integer"}]}},
    {"not": {"contains": {"type": "string"}}},
    {"not": {"anyOf": [{"type": "string"}, {"minimum": 3}]}},
    {"not": {"allOf": [{"type": "number"}, {"minimum": 3}]}},
    {"not": {"not": {"type": "string"}}},
    {"not": {"oneOf": [{"type": "integer"}, {"minimum": 2}]}},
    {"if": {"exclusiveMaximum": 0}, "then": {"minimum": -10}, "else": {"multipleOf": 2}},
    {"if": {"type": "string"}, "then": {"maxLength": 2}},
    {"if": {"properties": {"foo": {"type": "string"}}, "required": ["foo"]}, "then": {"required": ["bar"]},
     "else": {"not": {"required": ["bar"]}}},
    {"if": {"not": {"type": "object"}}, "else": {"required": ["foo"]}},
    {"oneOf": [{"type": "integer"}, {"minimum": 2}]},
    {"type": "string", "oneOf": [{"minLength": 2}, {"maxLength": 4}]},
    {"oneOf": [{"required": ["foo"]}, {"required": ["bar"]}]},
    {"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "n": {"type": "integer"}},
                "required": ["kind"]},
               {"type": "object", "properties": {"kind": {"const": "b"}}, "required": ["kind"]}]},
    {"allOf": [{"properties": {"foo": True}, "additionalProperties": False}, {"properties": {"bar": True}}]},
    {"$id": "http://example.com/root.json", "$defs": {"a": {"$id": "a.json", "$defs": {"n": {"type": "integer"}},
                                                             "$ref": "#/$defs/n"}},
     "$ref": "a.json"},
    {"$defs": {"s": {"$anchor": "word", "type": "string", "maxLength": 3}}, "items": {"$ref": "#word"}},
    {"contains": {"minimum": 5}},
    {"contains": {"const": 1}, "minContains": 2, "maxContains": 3},
    {"prefixItems": [{"type": "integer"}], "contains": {"type": "string"}, "maxItems": 2},
    {"maxProperties": 1},
    {"minProperties": 2},
    {"properties": {"foo": {"type": "integer"}, "bar": True}, "minProperties": 2, "maxProperties": 3},
    {"properties": {"foo": True}, "required": ["foo"], "additionalProperties": {"type": "integer"},
     "maxProperties": 2},
    {"dependentSchemas": {"foo": {"minProperties": 3}, "bar": {"required": ["baz"]}}},
    {"dependentRequired": {"bar": ["foo"]}},
    {"dependentSchemas": {"bar": {"properties": {"foo": {"type": "integer"}}}}},
    {"not": {"items": {"type": "integer"}}},
    {"not": {"maxProperties": 1}},
    {"not": {"contains": {"const": 1}, "minContains": 2}},
    {"not": {"dependentRequired": {"bar": ["foo"]}}},
    {"allOf": [{"properties": {"foo": True}}], "unevaluatedProperties": False},
    {"prefixItems": [{"type": "integer", "minimum": 1, "maximum": 3}, {"enum": [1, 2, "a"]}], "items": False,
     "uniqueItems": True},
    {"items": {"enum": [1, 2, 3, "a"]}, "uniqueItems": True},
    # (an integer range as the domain: five values; the oracle's table grows with the 2^k sets
    # of members the unordered rule is lowered to, so eight values took minutes)
    {"items": {"type": "integer", "minimum": 0, "maximum": 4}, "uniqueItems": True, "minItems": 1},
    # unevaluated keywords decided per clause (unevaluated.py)
    {"anyOf": [{"properties": {"foo": {"type": "integer"}}, "required": ["foo"]},
               {"properties": {"bar": True}, "required": ["bar"]}], "unevaluatedProperties": False},
    {"oneOf": [{"properties": {"foo": True}, "required": ["foo"]}, {"properties": {"bar": True}, "required": ["bar"]}],
     "unevaluatedProperties": False},
    {"if": {"properties": {"kind": {"const": "a"}}, "required": ["kind"]}, "then": {"properties": {"n": True}},
     "else": {"properties": {"s": True}}, "unevaluatedProperties": False},
    {"properties": {"kind": True}, "dependentSchemas": {"foo": {"properties": {"bar": True}}},
     "unevaluatedProperties": False},
    {"if": {"properties": {"foo": {"type": "integer"}}}, "unevaluatedProperties": {"type": "integer"}},
    {"anyOf": [{"prefixItems": [{"type": "integer"}]}, {"prefixItems": [True, {"type": "string"}]}],
     "unevaluatedItems": False},
    {"allOf": [{"prefixItems": [True]}], "unevaluatedItems": {"type": "string"}},
    {"contains": {"type": "string"}, "anyOf": [{"prefixItems": [{"type": "integer"}]}, {"maxItems": 1}],
     "unevaluatedItems": False},
    # the complement of additionalProperties: false (a witness member, objects.py)
    {"not": {"properties": {"foo": True}, "additionalProperties": False}},
    {"not": {"type": "object", "patternProperties": {"^b": True}, "additionalProperties": False}},
    {"oneOf": [{"properties": {"foo": {"type": "integer"}}, "additionalProperties": False},
               {"properties": {"bar": True}, "required": ["bar"]}]},
    {"type": "object", "properties": {"foo": True, "bar": True, "baz": True},
     "not": {"properties": {"foo": True, "bar": True}, "additionalProperties": False}},
    # several contains in one allOf, each counted (arrays.counted_items)
    {"allOf": [{"contains": {"type": "string"}}, {"contains": {"type": "integer"}}]},
    {"allOf": [{"contains": {"type": "string"}, "maxContains": 1}, {"contains": {"const": 1}, "minContains": 2}]},
    {"allOf": [{"contains": {"minimum": 2}}, {"contains": {"maximum": 5}, "minContains": 0, "maxContains": 1}],
     "maxItems": 4},
    {"prefixItems": [{"type": "integer"}], "allOf": [{"contains": {"type": "string"}}, {"contains": {"const": 1}}],
     "unevaluatedItems": False},
    # complements of additionalProperties schemas and of patternProperties (a witness member with
    # a value outside the schema), and of unevaluatedProperties (unevaluated.as_clauses)
    {"not": {"patternProperties": {"^f": {"type": "string"}}}},
    {"not": {"additionalProperties": {"type": "integer"}}},
    {"not": {"properties": {"foo": True}, "additionalProperties": {"type": "integer"}}},
    {"not": {"patternProperties": {"o": {"type": "integer"}, "^b": {"type": "string"}}}},
    {"if": {"patternProperties": {"foo": {"type": "string"}}}, "unevaluatedProperties": False},
    {"not": {"anyOf": [True, {"properties": {"foo": True}}], "unevaluatedProperties": False}},
    {"not": {"anyOf": [{"properties": {"foo": {"type": "integer"}}, "required": ["foo"]},
                       {"properties": {"bar": True}}], "unevaluatedProperties": False}},
    {"not": {"properties": {"kind": True}, "unevaluatedProperties": {"type": "integer"}}},
    # several witnesses in one clause (objects._with_witness: partitions of them into members)
    {"not": {"anyOf": [{"additionalProperties": {"type": "integer"}}, {"patternProperties": {"^b": {"type": "string"}}}]}},
    {"oneOf": [{"properties": {"foo": {"type": "integer"}}, "additionalProperties": False},
               {"properties": {"bar": True}, "additionalProperties": False},
               {"patternProperties": {"^b": {"type": "string"}}, "additionalProperties": False}]},
    # propertyNames: its complement (a witness key outside it), and its lengths on pattern keys
    {"not": {"propertyNames": {"pattern": "^b"}}},
    {"not": {"propertyNames": {"enum": ["foo", "bar"]}}},
    {"not": {"propertyNames": {"const": "foo", "maxLength": 3}}},
    {"not": {"propertyNames": {"minLength": 4}}},
    {"not": {"propertyNames": False}},
    {"patternProperties": {"^b": {"type": "integer"}}, "propertyNames": {"maxLength": 3}},
    {"propertyNames": {"enum": ["foo", "bar", "baz"], "maxLength": 3, "pattern": "^b"}, "patternProperties": {"z$": True}},
    # a $dynamicRef whose anchor the root's resource declares (references.resolve_dynamic)
    {"$id": "https://example.com/derived", "$ref": "./base",
     "$defs": {"derived": {"$dynamicAnchor": "addons", "properties": {"bar": {"type": "integer"}}},
               "base": {"$id": "./base", "unevaluatedProperties": False, "properties": {"foo": True},
                        "$dynamicRef": "#addons", "$defs": {"default": {"$dynamicAnchor": "addons"}}}}},
    # multipleOf a decimal (converter._decimal_multiples)
    {"multipleOf": 1.5},
    {"type": "number", "multipleOf": 0.25, "minimum": -1, "maximum": 3},
    {"allOf": [{"multipleOf": 0.5}, {"multipleOf": 0.75}]},
]


def accepts(schema, value) -> bool:
    grammar = xgr.Grammar.from_json_schema(schema, strict_mode=False, any_order=True)
    return Recognizer(grammar.ir).is_sentence(instance_text(value).encode())


def valid(schema, value) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: json.dumps(s)[:60])
def test_the_grammar_is_the_schema_on_every_candidate(schema):
    grammar = xgr.Grammar.from_json_schema(schema, strict_mode=False, any_order=True)
    recognizer = Recognizer(grammar.ir)
    for value in CANDIDATES:
        assert recognizer.is_sentence(instance_text(value).encode()) == valid(schema, value), value


@pytest.mark.parametrize("schema", SCHEMAS[:24], ids=lambda s: json.dumps(s)[:60])
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_sentences_of_the_grammar_validate(schema, data):
    grammar = xgr.Grammar.from_json_schema(schema, strict_mode=False)
    text = sentences(grammar.ir, data.draw(st.randoms(use_true_random=False)), max_depth=6)
    if text is not None:
        assert valid(schema, json.loads(text)), text


def test_exact_complements_leave_no_approximation_and_others_say_so():
    conv = SchemaConverter({"not": {"minimum": 3}, "if": {"type": "string"}, "then": {"maxLength": 2}},
                           strict_mode=False)
    conv.convert()
    assert conv.approximations == []
    conv = SchemaConverter({"not": {"uniqueItems": True}}, strict_mode=False, approximate=True)
    conv.convert()
    assert [(p, k) for p, k, _ in conv.approximations] == [("$.not", "not")]
    assert "uniqueItems" in conv.approximations[0][2]
    # without the opt-in the same schema is refused, naming the keyword and its path
    with pytest.raises(xgr.JSONSchemaNotExactError, match=r"^\$\.not: not not enforced: .*uniqueItems") as err:
        SchemaConverter({"not": {"uniqueItems": True}}, strict_mode=False).convert()
    assert [(p, k) for p, k, _ in err.value.approximations] == [("$.not", "not")]


@pytest.mark.parametrize("factor", [123456789, 0.123456789])
def test_a_multiple_past_the_automaton_limit_is_refused_or_approximated_on_request(factor):
    """Multiples of 123456789 need its 123456789 remainders: refused by name by default, the
    integers in range with the opt-in (recorded)."""
    schema = {"type": "integer", "multipleOf": factor}
    with pytest.raises(xgr.JSONSchemaNotExactError, match=r"\$\.multipleOf: multipleOf not enforced: .*123456789 states"):
        xgr.Grammar.from_json_schema(schema)
    grammar = xgr.Grammar.from_json_schema(schema, approximate=True)
    assert [k for _, k, _ in grammar.approximations] == ["multipleOf"]
    recognizer = Recognizer(grammar.ir)
    assert recognizer.is_sentence(b"123456789") and recognizer.is_sentence(b"5") and not recognizer.is_sentence(b"1.5")


def test_a_not_that_reaches_itself_is_an_approximation_never_a_hang():
    schema = {"$defs": {"a": {"not": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}
    with pytest.raises(xgr.JSONSchemaNotExactError, match="reaches itself"):
        SchemaConverter(schema, strict_mode=False).convert()
    conv = SchemaConverter(schema, strict_mode=False, approximate=True)
    conv.convert()
    assert any("reaches itself" in how for _, _, how in conv.approximations)


def test_a_definition_named_like_a_value_keyword_is_found():
    """`$defs.default` is a schema, not a default value: its anchors and ids are read."""
    schema = {"$defs": {"default": {"$anchor": "n", "type": "integer"}, "enum": {"$id": "e.json", "type": "null"}},
              "properties": {"a": {"$ref": "#n"}, "b": {"$ref": "e.json"}}}
    for value in ({"a": 1}, {"a": "x"}, {"b": None}, {"b": 1}):
        assert accepts(schema, value) == valid(schema, value), value


def test_references_resolve_against_the_base_of_their_schema():
    from xg2ref.frontends.json_schema.references import References, join

    assert join("http://a.com/x/y.json", "z.json") == "http://a.com/x/z.json"
    assert join("urn:uuid:1", "#/a") == "urn:uuid:1#/a"
    schema = {"$id": "http://e.com/a/", "$defs": {"x": {"$id": "x.json", "type": "number"}},
              "properties": {"p": {"$id": "http://e.com/b/", "$ref": "../a/x.json"}}}
    refs = References(schema)
    node = schema["properties"]["p"]
    assert refs.resolve("../a/x.json", "$", node) is schema["$defs"]["x"]
    assert refs.resolve("http://elsewhere.org/s.json", "$", node) is True
    with pytest.raises(xgr.InvalidJSONError, match="does not point"):
        refs.resolve("#/nothing", "$", schema)


@pytest.mark.parametrize("any_order", [False, True])
def test_member_counts_beside_declared_members(any_order):
    """Counted in the rules in schema order, and with any_order by the unordered rule's bounded
    repetition (members.members_in_any_order): exact either way, nothing approximated."""
    schema = {"properties": {"foo": {}, "bar": {}}, "required": ["foo"], "minProperties": 2, "maxProperties": 2}
    conv = SchemaConverter(schema, strict_mode=False, any_order=any_order)
    conv.convert()
    assert conv.approximations == []
    recognizer = Recognizer(xgr.Grammar.from_json_schema(schema, strict_mode=False, any_order=any_order).ir)
    values = [{"foo": 1}, {"foo": 1, "bar": 2}, {"foo": 1, "x": 2}, {"foo": 1, "bar": 2, "x": 3}, {}, 1,
              {"bar": 1, "x": 2}, {"x": 1, "foo": 2}, {"bar": 1, "foo": 2}, {"x": 1, "y": 2, "foo": 3}]
    for value in values:
        text = instance_text(value).encode()
        assert recognizer.is_sentence(text) == (valid(schema, value) and (any_order or _declared_first(schema, value))), value


def _declared_first(schema, value) -> bool:
    """In schema order the declared members come first, in the order of `properties`."""
    if not isinstance(value, dict):
        return True
    names = list(schema["properties"])
    keys = list(value)
    declared = [k for k in keys if k in names]
    return keys[:len(declared)] == declared and declared == [n for n in names if n in declared]


def test_counts_with_any_order_past_the_unrolling_threshold():
    """A count above grammar/repetition.py's threshold stays unrolled in the unordered rule's
    machine (its items must see every member), and the count holds exactly (the engine's
    matcher against jsonschema: texts this long are past the oracle's reach)."""
    from xg2ref.testing import _get_matcher_from_grammar
    schema = {"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a"],
              "minProperties": 40, "maxProperties": 41}
    matcher = _get_matcher_from_grammar(xgr.Grammar.from_json_schema(schema, strict_mode=False, any_order=True))
    for n in (38, 39, 40, 41, 42):
        for with_b in (False, True):
            value = {**{f"k{i}": i for i in range(n - 1 - with_b)}, "a": 1, **({"b": 2} if with_b else {})}
            matcher.reset()
            text = instance_text(value)
            assert (matcher.accept_string(text) and matcher.is_terminated()) == valid(schema, value), (n, with_b)


def test_a_complement_never_opens_or_closes_an_object_strict_mode_did_not():
    """strict_mode (the default) closes objects that declare `properties`; a complement's pieces
    constrain members without declaring them, so the user's schema decides (negation.py)."""
    free = xgr.Grammar.from_json_schema({"not": {"required": ["a"]}})
    assert xgr.testing._is_grammar_accept_string(free, '{"b": 1}')
    assert not xgr.testing._is_grammar_accept_string(free, '{"a": 1}')
    closed = xgr.Grammar.from_json_schema({"type": "object", "properties": {"x": {"type": "integer"}},
                                           "not": {"properties": {"a": {"type": "string"}}, "required": ["a"]}})
    for text, want in (('{"x": 1}', True), ('{"x": 1, "a": 2}', False), ('{"x": 1, "b": 2}', False)):
        assert xgr.testing._is_grammar_accept_string(closed, text) == want, text
    deps = xgr.Grammar.from_json_schema({"dependentRequired": {"a": ["b"]}})
    for text, want in (('{"c": 1}', True), ('{"a": 1}', False), ('{"b": 2, "a": 1}', True)):
        assert xgr.testing._is_grammar_accept_string(deps, text) == want, text


def test_approximations_are_refused_unless_the_caller_opts_in(monkeypatch):
    """A keyword the grammar cannot enforce is refused by name and path; `approximate=True`, the
    process-wide setting or its environment variable accept the superset (xg2ref/config.py)."""
    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"},
                                                        "uniqueItems": True}}}
    with pytest.raises(xgr.JSONSchemaNotExactError, match=r"^\$\.properties\.tags\.uniqueItems: uniqueItems"):
        xgr.Grammar.from_json_schema(schema)
    with pytest.raises(xgr.InvalidJSONError):  # (a subclass: code catching the base still does)
        xgr.Grammar.from_json_schema(schema)
    grammar = xgr.Grammar.from_json_schema(schema, approximate=True)
    assert [(p, k) for p, k, _ in grammar.approximations] == [("$.properties.tags.uniqueItems", "uniqueItems")]
    assert xgr.testing._is_grammar_accept_string(grammar, '{"tags": ["a", "a"]}')  # the superset, as asked
    assert xgr.Grammar.from_json_schema({"type": "integer"}).approximations == ()
    with xgr.config.json_schema_approximate(True):
        assert xgr.Grammar.from_json_schema(schema).approximations
        with pytest.raises(xgr.JSONSchemaNotExactError):
            xgr.Grammar.from_json_schema(schema, approximate=False)  # (the argument wins)
    with pytest.raises(xgr.JSONSchemaNotExactError):
        xgr.Grammar.from_json_schema(schema)
    monkeypatch.setenv("XG2REF_JSON_SCHEMA_APPROXIMATE", "1")
    assert xgr.Grammar.from_json_schema(schema).approximations
    with pytest.raises(TypeError):
        xgr.Grammar.from_json_schema(schema, approximate="yes")
    monkeypatch.delenv("XG2REF_JSON_SCHEMA_APPROXIMATE")
    # the compiler's cache keeps the two apart
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo([]))
    loose = compiler.compile_json_schema(schema, approximate=True)
    assert loose.grammar.approximations
    with pytest.raises(xgr.JSONSchemaNotExactError):
        compiler.compile_json_schema(schema)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(p=st.integers(1, 40), s=st.integers(1, 3), lo=st.none() | st.integers(-50, 50),
       width=st.integers(0, 60), value=st.decimals(-60, 60, places=4, allow_nan=False, allow_infinity=False))
def test_multiples_of_a_decimal_are_exact(p, s, lo, width, value):
    """multipleOf p / 10^s over a range: a numeral is accepted exactly when its value is a
    multiple (decimal arithmetic: `jsonschema` divides floats) within the bounds."""
    from decimal import Decimal

    m = Decimal(p).scaleb(-s)
    schema = {"type": "number", "multipleOf": float(m)}
    if lo is not None:
        schema.update(minimum=lo, maximum=lo + width)
    grammar = xgr.Grammar.from_json_schema(schema)
    text = format(value.normalize(), "f") if value != 0 else "0"
    want = value % m == 0 and (lo is None or lo <= value <= lo + width)
    assert xgr.testing._is_grammar_accept_string(grammar, text) == want, (schema, text)
