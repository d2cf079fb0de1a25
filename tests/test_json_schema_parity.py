"""JSON Schema where xg2ref and xgrammar 0.2.8 once parted (specs/05-front-ends.md, "JSON Schema"):
a `$ref` that reaches itself through `anyOf`/`oneOf`/`allOf` with no object or array between,
`format` without `type`, `unevaluatedItems` / `unevaluatedProperties`, and `any_order`.

Each is checked against the standard (the `jsonschema` validator, or `least_valid` below where
the validator would recurse forever) and, where xgrammar follows the standard, against xgrammar
0.2.8: the schema compiles or not, `accept_string` verdicts, and masks along documents on a
small vocabulary.
"""

import json
import random

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.oracle.brute_force import brute_force_mask
from xg2ref.oracle.recognizer import Recognizer
from xg2ref.testing import _get_matcher_from_grammar, bitmask_to_bool_mask


def accepts(schema, text: str, **options) -> bool:
    return Recognizer(xgr.Grammar.from_json_schema(schema, **options).ir).is_sentence(text.encode())


def valid(schema, value) -> bool:
    """`jsonschema` under the schema's own draft (2020-12 when it names none), with formats."""
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return validator(schema, format_checker=validator.FORMAT_CHECKER).is_valid(value)


def verdicts(matcher, texts) -> list:
    """accept_string then is_terminated for each text, on one matcher of either engine (built
    with an empty vocabulary and terminate_without_stop_token, as their testing helpers do)."""
    out = []
    for text in texts:
        matcher.reset()
        out.append(matcher.accept_string(text) and matcher.is_terminated())
    return out


def both_verdicts(xg, schema, texts, **options) -> tuple:
    """(xg2ref's verdicts, xgrammar's) on `texts` under `schema`."""
    from xgrammar.testing import _get_matcher_from_grammar as theirs

    # (xg2ref opts into the supersets xgrammar reads: oneOf as anyOf where a complement is not written)
    mine = _get_matcher_from_grammar(xgr.Grammar.from_json_schema(schema, approximate=True, **options))
    other = theirs(xg.Grammar.from_json_schema(schema, **options))
    return verdicts(mine, texts), verdicts(other, texts)


# ---- an independent reading: the least solution of a schema's equations -----------------------


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _kind(v) -> str:
    return ("null" if v is None else "boolean" if isinstance(v, bool) else "integer" if isinstance(v, int)
            else "number" if isinstance(v, float) else "string" if isinstance(v, str)
            else "array" if isinstance(v, list) else "object")


def _own_ok(root, node: dict, v) -> bool:
    """The keywords of `node` other than $ref/allOf/anyOf/oneOf (those the generator uses)."""
    kind = _kind(v)
    if "type" in node and kind != node["type"] and not (kind == "integer" and node["type"] == "number"):
        return False
    if "const" in node and not _same(v, node["const"]):
        return False
    if "enum" in node and not any(_same(v, w) for w in node["enum"]):
        return False
    if kind in ("integer", "number"):
        if v < node.get("minimum", v) or v > node.get("maximum", v):
            return False
    if kind == "string" and len(v) > node.get("maxLength", len(v)):
        return False
    if kind == "array":
        prefix = node.get("prefixItems", [])
        if len(v) < node.get("minItems", 0):
            return False
        for i, item in enumerate(v):
            sub = prefix[i] if i < len(prefix) else node.get("items", True)
            if not least_valid(root, sub, item):
                return False
    if kind == "object":
        if any(r not in v for r in node.get("required", [])):
            return False
        for key, sub in node.get("properties", {}).items():
            if key in v and not least_valid(root, sub, v[key]):
                return False
    return True


def least_valid(root, schema, value, as_anyof=None) -> bool:
    """Whether `value` is in the least solution of the equations the combinators make: every
    schema reachable through $ref/allOf/anyOf/oneOf starts false and is recomputed, round after
    round, from its own keywords and its combinators until nothing changes. `oneOf` holds when
    exactly one branch does, except the lists whose id is in `as_anyof`, which the converter
    reads as anyOf because a branch's complement cannot be written (a branch reaching itself:
    `conv.oneof_as_anyof`, specs/05); an exact oneOf's branches reach no cycle, so the rounds end."""
    if as_anyof is None:
        from xg2ref.frontends.json_schema.converter import SchemaConverter

        conv = SchemaConverter(root, strict_mode=False, approximate=True)
        conv.convert()
        as_anyof = conv.oneof_as_anyof

    def resolve(ref):
        node = root
        for part in filter(None, ref[2:].split("/")):
            node = node[part]
        return node

    nodes, stack = {}, [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict) and id(node) not in nodes:
            nodes[id(node)] = node
            stack.extend(([resolve(node["$ref"])] if "$ref" in node else []) + node.get("allOf", [])
                         + node.get("anyOf", []) + node.get("oneOf", []))
    own = {k: _own_ok(root, n, value) for k, n in nodes.items()}
    holds = dict.fromkeys(nodes, False)

    def get(s):
        return s if isinstance(s, bool) else holds[id(s)]

    def one_of(n) -> bool:
        if "oneOf" not in n:
            return True
        count = sum(get(b) for b in n["oneOf"])
        return count >= 1 if id(n["oneOf"]) in as_anyof else count == 1

    changed, rounds = True, 0
    while changed:
        changed, rounds = False, rounds + 1
        assert rounds < 10 * len(nodes) + 10, "the rounds do not settle"
        for k, n in nodes.items():
            now = (own[k] and ("$ref" not in n or get(resolve(n["$ref"]))) and all(get(p) for p in n.get("allOf", []))
                   and all(any(get(b) for b in n["anyOf"]) for _ in [0] if "anyOf" in n) and one_of(n))
            if now != holds[k]:
                holds[k], changed = now, True
    return get(schema)


# ---- 1. $ref through anyOf / oneOf / allOf with no object or array between -----------------------

DEFS = "#/$defs/"
RECURSIVE = [  # xgrammar 0.2.8 takes these as the standard does
    {"$defs": {"a": {"anyOf": [{"type": "integer"}, {"$ref": DEFS + "a"}]}}, "$ref": DEFS + "a"},
    {"$defs": {"a": {"oneOf": [{"type": "string"}, {"$ref": DEFS + "a"}]}}, "$ref": DEFS + "a"},
    {"$defs": {"a": {"anyOf": [{"$ref": DEFS + "a"}]}}, "$ref": DEFS + "a"},
    {"$defs": {"a": {"$ref": DEFS + "a"}}, "$ref": DEFS + "a"},
    {"$defs": {"a": {"$ref": DEFS + "b"}, "b": {"$ref": DEFS + "a"}}, "$ref": DEFS + "a"},
    {"$defs": {"a": {"anyOf": [{"type": "integer"}, {"$ref": DEFS + "b"}]},
               "b": {"anyOf": [{"type": "null"}, {"$ref": DEFS + "a"}]}}, "$ref": DEFS + "a"},
    {"anyOf": [{"type": "boolean"}, {"$ref": "#"}, {"type": "array", "items": {"$ref": "#"}}]},
    {"$defs": {"a": {"anyOf": [{"type": "integer"}, {"$ref": DEFS + "a", "minimum": 0}]}}, "$ref": DEFS + "a"},
    {"$defs": {"a": {"$ref": DEFS + "b"}, "b": {"anyOf": [{"$ref": DEFS + "a"}, {"type": "null"}]}},
     "allOf": [{"$ref": DEFS + "a"}]},
    {"type": "object", "properties": {"x": {"$ref": DEFS + "a"}}, "required": ["x"],
     "$defs": {"a": {"oneOf": [{"type": "null"}, {"$ref": DEFS + "a"},
                               {"type": "array", "items": {"$ref": DEFS + "a"}}]}}},
]
DOCUMENTS = ["1", "-3", "0", '"x"', "null", "true", "1.5", "[]", "[null]", "[1, [true]]", "[[null], 2]", "{}",
             '{"x": null}', '{"x": [null, [null]]}', '{"x": 1}', '{"y": null}', "[true, [false, []]]"]


@pytest.mark.parametrize("schema", RECURSIVE, ids=[f"rec{i}" for i in range(len(RECURSIVE))])
def test_recursion_without_a_container_is_the_least_solution(schema):
    """The equations' least solution, as a grammar's rules give it (xg2ref/frontends/json_schema/merge.py);
    a oneOf whose complements are not written is read as anyOf, opted into (approximate=True)."""
    for text in DOCUMENTS:
        assert accepts(schema, text, strict_mode=False, approximate=True) == least_valid(schema, schema, json.loads(text)), text


def test_recursion_beside_other_keywords():
    # a = integer and (minimum 3 or a): the integers from 3 (the loop adds nothing)
    a = {"$defs": {"a": {"type": "integer", "anyOf": [{"minimum": 3}, {"$ref": DEFS + "a"}]}}, "$ref": DEFS + "a"}
    assert [accepts(a, t) for t in ("2", "3", "7", '"x"')] == [False, True, True, False]
    # a = allOf[a, ...] and a = {$ref: a}: nothing; b = a and maxLength 3 with a = string or b
    loop = {"$defs": {"a": {"allOf": [{"$ref": DEFS + "a"}, {"type": "null"}]}}, "$ref": DEFS + "a"}
    assert not accepts(loop, "null")
    b = {"$defs": {"a": {"anyOf": [{"type": "string"}, {"$ref": DEFS + "b"}]},
                   "b": {"$ref": DEFS + "a", "maxLength": 3}}, "$ref": DEFS + "b"}
    assert accepts(b, '"abc"') and not accepts(b, '"abcd"') and not accepts(b, "1")
    # a pure-$ref loop below a merge used to be refused ("refers to itself"): it allows nothing
    c = {"$defs": {"c": {"$ref": DEFS + "c"}}, "anyOf": [{"$ref": DEFS + "c", "type": "integer"}, {"type": "null"}]}
    assert accepts(c, "null") and not accepts(c, "1")


@pytest.mark.parametrize("i", [0, 2, 3, 5])
def test_recursion_without_a_container_in_xml_parameters(i):
    """A structural tag's XML parameters read the same least solution (xg2ref/frontends/structural_tag/xml_parameters.py)."""
    schema = RECURSIVE[i]
    wrapped = {"type": "object", "properties": {"v": {k: v for k, v in schema.items() if k != "$defs"}},
               "required": ["v"], "$defs": schema["$defs"]}
    tag = {"type": "structural_tag", "format": {"type": "tag", "begin": "<f>", "end": "</f>", "content": {
        "type": "json_schema", "json_schema": wrapped, "style": "qwen_xml"}}}
    recognizer = Recognizer(xgr.Grammar.from_structural_tag(json.dumps(tag)).ir)
    for text in ["1", "-3", "null", "[]", '{"x": null}']:
        value = json.loads(text)
        want = least_valid(schema, schema, value)
        have = recognizer.is_sentence(f"<f><parameter=v>\n{text}\n</parameter>\n</f>".encode())
        assert have == want, text


def test_merged_members_follow_the_order_the_schema_writes():
    """allOf [A, B]: A's properties, then B's, whatever was converted before (B here first)."""
    defs = {"A": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            "B": {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}}
    schema = {"$defs": defs, "type": "object", "required": ["first", "both"], "properties": {
        "first": {"$ref": DEFS + "B"}, "both": {"allOf": [{"$ref": DEFS + "A"}, {"$ref": DEFS + "B"}]}}}
    assert accepts(schema, '{"first": {"b": 1}, "both": {"a": 1, "b": 2}}')
    assert not accepts(schema, '{"first": {"b": 1}, "both": {"b": 2, "a": 1}}')


def test_arrays_merge_item_by_item():
    """allOf of a tuple and a list: item i meets both (an `items` applies past its own prefix)."""
    schema = {"allOf": [{"type": "array", "items": {"type": "integer"}},
                        {"prefixItems": [{"minimum": 3}], "items": {"maximum": 9}}]}
    for value in ([], [3], [2], [3, 10], [3, 9, 1], [3.5], [4, "x"]):
        assert accepts(schema, json.dumps(value), strict_mode=False) == valid(schema, value), value
    narrow = {"allOf": [{"items": False}, {"prefixItems": [{"type": "integer"}]}]}  # no item at all
    assert accepts(narrow, "[]") and not accepts(narrow, "[1]")


LEAVES = [{"type": "integer"}, {"type": "string"}, {"type": "null"}, {"minimum": 2}, {"maxLength": 1},
          {"type": "integer", "maximum": 5}, {"const": 3}, {"enum": [1, "x", None]}, {"type": "array"},
          {"items": {"type": "integer"}}, {"prefixItems": [{"type": "string"}]}, {"minItems": 1},
          {"properties": {"p": {"type": "integer"}}}, {"required": ["p"]}]
VALUES = [None, 0, 1, 2, 3, 7, -4, 2.5, "", "x", "ab", [], [1], ["x"], ["x", 1], [None], [1, 2], [[1]], {}, {"p": 1},
          {"p": "x"}, {"p": 3, "q": 1}, {"p": None}, {"p": [1]}, {"p": {"p": 1}}, True]


def _random_schema(rng: random.Random) -> dict:
    refs = [{"$ref": DEFS + n} for n in "abc"]

    def sub(depth: int):
        r = rng.random()
        if depth > 2 or r < 0.3:
            node = dict(rng.choice(refs + LEAVES))
            if "items" in node and rng.random() < 0.5:
                node["items"] = rng.choice(refs)  # recursion below an array
            if "properties" in node and rng.random() < 0.5:
                node["properties"] = {"p": rng.choice(refs)}  # and below an object
            return node
        key = "anyOf" if r < 0.55 else "oneOf" if r < 0.65 else "allOf" if r < 0.85 else "$ref"
        node = dict(rng.choice(refs)) if key == "$ref" else {key: [sub(depth + 1) for _ in range(rng.randint(1, 3))]}
        if rng.random() < 0.4:
            node.update(rng.choice(LEAVES))
        return node

    return {"$defs": {n: sub(0) for n in "abc"}, "$ref": DEFS + "a"}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32))
def test_random_combinations_of_refs_are_their_least_solution(seed):
    """Random definitions that reach each other through anyOf/oneOf/allOf and $ref with sibling
    keywords (with or without an object or array between): every one converts, and a value is
    accepted exactly when it is in the least solution (oneOf exact where its complements are,
    specs/05)."""
    from xg2ref.frontends.json_schema.converter import SchemaConverter

    schema = _random_schema(random.Random(seed))
    conv = SchemaConverter(schema, strict_mode=False, approximate=True)
    recognizer = Recognizer(conv.convert())
    for value in VALUES:
        want = least_valid(schema, schema, value, frozenset(conv.oneof_as_anyof))
        assert recognizer.is_sentence(json.dumps(value).encode()) == want, (json.dumps(schema), value)


# ---- xgrammar 0.2.8: verdicts and masks ------------------------------------------------------------

VOCAB = [bytes([b]) for b in range(32, 127)] + [b"\n", b"\t", b'{"', b'": ', b", ", b'"}', b"null", b"true", b"12",
                                                b"[[", b"]]", b'"x"', b"</s>"]
STOP = len(VOCAB) - 1


def _greedy(text: str) -> list:
    """`text` as token ids of VOCAB, longest match first."""
    data, out, i = text.encode(), [], 0
    by_bytes = {t: k for k, t in enumerate(VOCAB) if k != STOP}
    while i < len(data):
        k = next(k for n in (4, 3, 2, 1) if (k := by_bytes.get(data[i:i + n])) is not None)
        out.append(k)
        i += len(VOCAB[k])
    return out


def _masks_agree(xg, schema, documents, subset: bool = False, **options):
    """Both engines accept each document and allow the same tokens at every step along it (with
    `subset`: xg2ref's tokens are among xgrammar's, and equal before the first one)."""
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[STOP])
    xinfo = xg.TokenizerInfo(VOCAB, stop_token_ids=[STOP])
    mine = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_json_schema(schema, approximate=True, **options))
    theirs = xg.GrammarMatcher(xg.GrammarCompiler(xinfo).compile_json_schema(schema, **options))
    n = len(VOCAB)
    for text in documents:
        mine.reset()
        theirs.reset()
        for step, token in enumerate(_greedy(text) + [STOP]):
            a, b = xgr.allocate_token_bitmask(1, n), xg.allocate_token_bitmask(1, n)
            mine.fill_next_token_bitmask(a)
            theirs.fill_next_token_bitmask(b)
            have, want = np.asarray(bitmask_to_bool_mask(a, n)[0]), xg.testing.bitmask_to_bool_mask(b, n)[0].numpy()
            if subset and step:
                assert not (have & ~want).any(), (text, step, [VOCAB[t] for t in np.flatnonzero(have & ~want)])
            else:
                assert np.array_equal(have, want), (text, step, [VOCAB[t] for t in np.flatnonzero(have != want)])
            assert mine.accept_token(token) and theirs.accept_token(token), (text, step)


@pytest.mark.xgrammar
@pytest.mark.parametrize("schema", RECURSIVE[:7], ids=[f"rec{i}" for i in range(7)])
def test_recursion_verdicts_and_masks_match_xgrammar(schema):
    xg = pytest.importorskip("xgrammar")
    have, want = both_verdicts(xg, schema, DOCUMENTS)
    assert have == want, [t for t, a, b in zip(DOCUMENTS, have, want) if a != b]
    taken = [t for t, ok in zip(DOCUMENTS, want) if ok and "-" not in t]  # (-0: specs/05, difference 9)
    if taken:
        _masks_agree(xg, schema, taken[:3])


# ---- 2. format without type --------------------------------------------------------------------------

FORMAT_SCHEMAS = [
    {"format": "date"},
    {"format": "email", "minimum": 3},
    {"format": "ipv4", "maxItems": 1},
    {"format": "uuid", "enum": ["x", 3, "123e4567-e89b-12d3-a456-426614174000"]},
    {"allOf": [{"format": "date"}, {"format": "date-time"}]},  # no string is both: strings are out
    {"allOf": [{"format": "date"}, {"pattern": "^2024"}, {"format": "no-such-format"}]},
    {"anyOf": [{"format": "date"}, {"type": "integer"}]},
]
FORMAT_VALUES = ["2024-02-29", "2023-02-29", "2024-01-01T10:00:00Z", "a@b.io", "1.2.3.4", "x", "", 7, 2, 1.5, None,
                 True, [], [1, 2], {}, {"a": 1}, "123e4567-e89b-12d3-a456-426614174000"]


@pytest.mark.parametrize("schema", FORMAT_SCHEMAS, ids=[f"fmt{i}" for i in range(len(FORMAT_SCHEMAS))])
def test_format_without_type_constrains_strings_only(schema):
    for value in FORMAT_VALUES:
        assert accepts(schema, json.dumps(value)) == valid(schema, value), value


@pytest.mark.xgrammar
def test_format_with_a_type_list_matches_xgrammar():
    """xgrammar applies `format` to the strings of a type list and leaves the other types free;
    without `type` it takes any value (specs/05, difference 2), xg2ref the standard's reading."""
    xg = pytest.importorskip("xgrammar")
    schema = {"type": ["string", "integer", "null", "boolean"], "format": "date"}
    texts = [json.dumps(v) for v in FORMAT_VALUES]
    have, want = both_verdicts(xg, schema, texts)
    for value, text, a, b in zip(FORMAT_VALUES, texts, have, want):
        if value == "2023-02-29":  # xgrammar takes any day up to 29 in February (specs/05, difference 7)
            assert b and not a
            continue
        assert a == b == valid(schema, value), text
    _masks_agree(xg, schema, ['"2024-01-31"', "12", "true"])  # (a 31-day month: difference 7)


# ---- 3. unevaluatedItems / unevaluatedProperties --------------------------------------------------

UNEVALUATED = [  # (schema, xgrammar 0.2.8 agrees in strict mode and out of it)
    ({"type": "array", "unevaluatedItems": False}, True),
    ({"type": "array", "unevaluatedItems": {"type": "string"}}, True),
    ({"type": "array", "prefixItems": [{"type": "integer"}], "unevaluatedItems": {"type": "string"}}, True),
    ({"type": "array", "prefixItems": [{"type": "integer"}], "unevaluatedItems": True}, True),
    ({"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "string"},
      "unevaluatedItems": False}, True),
    ({"type": "array", "items": {"type": "integer"}, "unevaluatedItems": {"type": "string"}}, True),
    ({"type": "array", "prefixItems": [{"type": "integer"}], "unevaluatedItems": {"type": "string"},
      "minItems": 2, "maxItems": 2}, True),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "unevaluatedProperties": {"type": "string"}}, True),
    ({"type": "object", "unevaluatedProperties": {"type": "string"}}, True),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "integer"},
      "unevaluatedProperties": {"type": "string"}}, True),
    # not in xgrammar 0.2.8: the list form of items (draft 2019-09; it refuses it) and `contains`
    # (only its evaluation of items: with minContains 0 it asks for nothing, specs/05)
    ({"$schema": "https://json-schema.org/draft/2019-09/schema", "type": "array", "items": [{"type": "integer"}],
      "unevaluatedItems": {"type": "string"}}, False),
    ({"type": "array", "contains": {"type": "null"}, "minContains": 0, "unevaluatedItems": {"type": "string"}},
     False),
    # in-place subschemas that evaluate nothing leave the reading exact
    ({"type": "array", "allOf": [{"minItems": 1}], "prefixItems": [{"type": "null"}], "unevaluatedItems": False},
     False),
]
ARRAYS_AND_OBJECTS = ["[]", "[1]", "[1, 2]", '[1, "x"]', '["x"]', '[1, "x", "y"]', "[null]", '[null, "x"]',
                      '[1, "x", true]', "[null, null]", "{}", '{"a": 1}', '{"a": 1, "b": 2}', '{"a": 1, "b": "x"}',
                      '{"b": "x"}', '{"a": "x"}']


@pytest.mark.parametrize("schema", [s for s, _ in UNEVALUATED], ids=[f"unev{i}" for i in range(len(UNEVALUATED))])
@pytest.mark.parametrize("strict_mode", [True, False])
def test_unevaluated_items_and_properties_follow_the_standard(schema, strict_mode):
    for text in ARRAYS_AND_OBJECTS:
        value = json.loads(text)
        if _kind(value) != schema["type"]:
            continue
        assert accepts(schema, text, strict_mode=strict_mode) == valid(schema, value), text


def test_unevaluated_items_after_evaluating_subschemas_is_decided_per_clause():
    """Which items are left unevaluated depends on which in-place branches hold: each clause
    (the branches that hold together) knows its evaluated items (unevaluated.py), so the keyword
    is exact with the standard's semantics."""
    schema = {"type": "array", "anyOf": [{"prefixItems": [{"type": "integer"}]}, {"maxItems": 0}],
              "unevaluatedItems": False}
    texts = ["[]", "[1]", "[1, 2]", '["x"]', '[1, "x"]', '[1, 2, 3]']
    for text in texts:
        assert accepts(schema, text, strict_mode=False) == valid(schema, json.loads(text)), text
        if valid(schema, json.loads(text)):
            assert accepts(schema, text, strict_mode=True), text
    loose = dict(schema, unevaluatedItems={"type": "string"})  # strict mode does not forbid what it allows
    assert valid(loose, [1, "x"]) and accepts(loose, '[1, "x"]', strict_mode=True)
    for text in texts:
        assert accepts(loose, text, strict_mode=False) == valid(loose, json.loads(text)), text


@pytest.mark.xgrammar
@pytest.mark.parametrize("schema", [s for s, agrees in UNEVALUATED if agrees],
                         ids=[f"unev{i}" for i, (_, a) in enumerate(UNEVALUATED) if a])
def test_unevaluated_verdicts_and_masks_match_xgrammar(schema):
    xg = pytest.importorskip("xgrammar")
    for strict_mode in (True, False):
        have, want = both_verdicts(xg, schema, ARRAYS_AND_OBJECTS, strict_mode=strict_mode)
        assert have == want, [t for t, a, b in zip(ARRAYS_AND_OBJECTS, have, want) if a != b]
    _masks_agree(xg, schema, [t for t, ok in zip(ARRAYS_AND_OBJECTS, want) if ok][-2:])


# ---- 4. any_order ----------------------------------------------------------------------------------

ANY_ORDER = [
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "null"}},
     "required": ["a", "c"]},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "null"}},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
     "additionalProperties": {"type": "null"}, "required": ["b"]},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
     "patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": {"type": "null"}},
]
MEMBERS = {"a": [1, "s"], "b": ["x", 2], "c": [None], "z": [None, 1], "xy": [3, None]}


def _objects(schema, n: int) -> list:
    """Objects of up to five members drawn from MEMBERS in any order, declared keys repeated
    sometimes (as JSON text: a dict cannot repeat a key). Other keys are not repeated: no
    grammar here tells two additional keys apart (specs/05, "Not enforced")."""
    rng, out = random.Random(json.dumps(schema)), []
    while len(out) < n:
        keys = [rng.choice(list(MEMBERS)) for _ in range(rng.randint(0, 5))]
        others = [k for k in keys if k not in schema["properties"]]
        if len(set(others)) == len(others):
            out.append([(k, rng.choice(MEMBERS[k])) for k in keys])
    return out


def _standard(schema, members) -> bool:
    """A valid object without a repeated key."""
    keys = [k for k, _ in members]
    return len(set(keys)) == len(keys) and valid(schema, dict(members))


def _text(members) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in members) + "}"


@pytest.mark.parametrize("schema", ANY_ORDER, ids=[f"order{i}" for i in range(len(ANY_ORDER))])
def test_any_order_takes_every_valid_object_and_no_other(schema):
    """Declared members in any order, each at most once, the required ones all; additional and
    pattern members anywhere between them."""
    recognizer = Recognizer(xgr.Grammar.from_json_schema(schema, any_order=True, strict_mode=False).ir)
    for members in _objects(schema, 60):
        assert recognizer.is_sentence(_text(members).encode()) == _standard(schema, members), _text(members)


@pytest.mark.parametrize("schema", ANY_ORDER[:3], ids=[f"order{i}" for i in range(3)])
def test_any_order_masks_equal_the_brute_force_oracle(schema):
    vocab = [b'{"', b'"', b"a", b"b", b"c", b"z", b'": ', b": ", b", ", b"1", b"null", b'"x"', b"}", b'"}', b"</s>"]
    ir = xgr.Grammar.from_json_schema(schema, any_order=True).ir
    oracle = Recognizer(ir)
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo(vocab, stop_token_ids=[len(vocab) - 1])).compile_grammar(
        xgr.Grammar.from_json_schema(schema, any_order=True))
    matcher = xgr.GrammarMatcher(compiled)
    for text in ['{"c": null, "a": 1}', '{"z": null, "a": 1, "b": "x"}']:
        if not oracle.is_sentence(text.encode()):
            continue
        matcher.reset()
        prefix = b""
        for token in _greedy_in(text, vocab):
            bitmask = xgr.allocate_token_bitmask(1, len(vocab))
            matcher.fill_next_token_bitmask(bitmask)
            want = brute_force_mask(oracle, prefix, vocab, stop_token_ids=[len(vocab) - 1])
            assert np.array_equal(bitmask_to_bool_mask(bitmask, len(vocab))[0], want), (text, prefix)
            assert matcher.accept_token(token)
            prefix += vocab[token]


def _greedy_in(text: str, vocab: list) -> list:
    data, out, i = text.encode(), [], 0
    while i < len(data):
        k = max((k for k, t in enumerate(vocab[:-1]) if data.startswith(t, i)), key=lambda k: len(vocab[k]))
        out.append(k)
        i += len(vocab[k])
    return out


@pytest.mark.xgrammar
@pytest.mark.parametrize("schema", ANY_ORDER, ids=[f"order{i}" for i in range(len(ANY_ORDER))])
def test_any_order_against_xgrammar(schema):
    """xgrammar 0.2.8 reads `any_order` loosely: any declared member any number of times and the
    required ones never checked (specs/05, difference 11). On every object valid under the
    standard both accept; on the others, xg2ref accepts a subset of what xgrammar accepts."""
    xg = pytest.importorskip("xgrammar")
    # (a key starting with x: xgrammar matches a pattern against the whole key, difference 1)
    objects = [m for m in _objects(schema, 80) if not any(k.startswith("x") for k, _ in m)]
    texts = [_text(m) for m in objects]
    have, want = both_verdicts(xg, schema, texts, any_order=True, strict_mode=False)
    for members, text, a, b in zip(objects, texts, have, want):
        if _standard(schema, members):
            assert a and b, text
        assert b or not a, text
    assert not all(a == b for a, b in zip(have, want))  # xgrammar takes a repeated member
    valid_texts = [t for m, t in zip(objects, texts) if _standard(schema, m) and "-" not in t]
    _masks_agree(xg, schema, valid_texts[:3], subset=True, any_order=True, strict_mode=False)
