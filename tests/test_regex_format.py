"""`format: regex` (xg2ref/frontends/json_schema/regex_format.py, specs/05 "Formats"): ECMA-262's
Pattern grammar checked against `regress` (an ECMAScript regex engine: what it compiles with the
`u` flag, the grammar takes), against the JSON-Schema-Test-Suite, and with its documented limits."""

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.tools.bench.schema_suite import load_suite

regress = pytest.importorskip("regress")


@pytest.fixture(scope="module")
def accepts():
    info = xgr.TokenizerInfo([bytes([b]) for b in range(256)])
    compiled = xgr.GrammarCompiler(info, cache_enabled=False).compile_json_schema({"type": "string", "format": "regex"})

    def run(pattern: str) -> bool:
        matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        return matcher.accept_string(json.dumps(pattern, ensure_ascii=False)) and matcher.is_terminated()
    return run


def ecmascript(pattern: str, flags: str = "u") -> bool:
    try:
        regress.Regex(pattern, flags)
        return True
    except Exception:  # (regress raises its own error type for a syntax error)
        return False


PIECES = ["a", "b", "(", ")", "(?:", "(?=", "(?!", "(?<=", "(?<!", "(?<n>", "\\k<n>", "\\1", "[", "]", "[^", "-",
          "*", "+", "?", "{2}", "{1,}", "{1,3}", "|", "^", "$", ".", "\\d", "\\w", "\\b", "\\p{L}", "\\u0041",
          "\\x41", "\\cA", "\\n", "\\/", "\\.", "\\a", "\\-", "{", "}", "\"", "\\", "é", "(?i:", "(?P<n>"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), max_size=7).map("".join))
def test_every_pattern_ecmascript_compiles_with_the_u_flag_is_taken(accepts, pattern):
    # (regress takes a quantified \b or \B with the u flag; ECMA-262 does not: Term is an
    # Assertion or an Atom with its Quantifier, and V8 says "Nothing to repeat")
    quantified_boundary = re.search(r"\\[bB][*+?{]", pattern) is not None
    if ecmascript(pattern, "u") and not quantified_boundary:
        assert accepts(pattern), pattern
    if not ecmascript(pattern, "") and not ecmascript(pattern, "u"):
        # refused by both readings: the grammar refuses it too, unless it is one of the checks
        # a grammar cannot make (specs/05): a group reference, names, order of bounds
        if not any(p in pattern for p in ("\\k<n>", "\\1", "(?<n>", "{", "-")):
            assert not accepts(pattern), pattern


@pytest.mark.parametrize("pattern, ok", [
    ("^(abc]", False), ("(?P<name>x)", False), ("(?#comment)a", False), ("(?i)abc", False), ("\\a", False),
    ("a**", False), ("^*", False), ("(", False), ("[", False), ("\\", False), ("(?<1a>x)", False),
    ("[]", True), ("[^]", True), ("\\cA", True), ("(?<=a+)b", True), ("(?<n>a)\\k<n>", True),
    ("\\p{Letter}+|\\u{1F600}", True), ("(?i:a)(?-s:b)", True), ("", True), ("[a-z\\d-]", True),
])
def test_patterns(accepts, pattern, ok):
    assert accepts(pattern) == ok


def test_the_suite_s_regex_instances(accepts):
    cases = [c for c in load_suite() if c.group in ("format:regex", "format:ecmascript-regex")]
    assert cases
    for case in cases:
        for description, data, valid in case.tests:
            if isinstance(data, str):
                assert accepts(data) == valid, (case.key, description)


def test_beside_a_pattern_or_a_length_it_is_an_annotation():
    """No automaton to intersect with (formats.LIMITS): the other keywords alone."""
    from xg2ref.testing import _is_grammar_accept_string as grammar_accepts

    grammar = xgr.Grammar.from_json_schema({"type": "string", "format": "regex", "maxLength": 3})
    assert grammar_accepts(grammar, '"(("') and not grammar_accepts(grammar, '"abcd"')
    with pytest.raises(xgr.exceptions.JSONSchemaNotExactError, match="complement of format regex is not written"):
        xgr.Grammar.from_json_schema({"type": "string", "not": {"format": "regex"}})
