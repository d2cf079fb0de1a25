"""Memory and limits: inputs a server must survive get an exact grammar or a clear error, fast.

`GrammarCompiler(max_grammar_bytes=...)` bounds one compiled grammar (FSM arrays and mask-cache
entries); numbers past int32 compile exactly or raise; a deep chain of rules compiles in seconds.
"""

import time

import pytest

import xg2ref as xgr
from xg2ref.compiler import DEFAULT_MAX_GRAMMAR_BYTES
from xg2ref.exceptions import GrammarLimitError, InvalidJSONError, XG2RefError
from xg2ref.grammar.repetition import MAX_COUNT
from xg2ref.oracle.recognizer import Recognizer

SMALL = xgr.TokenizerInfo([b"a", b"aa", b'"', b"0", b"1", b"3", b"-", b"[", b"]", b","])
LLAMA = xgr.TokenizerInfo.from_quicktok("llama3")  # full-vocabulary work: compiled pass only
SIX_STRINGS = {"type": "object", "properties": {k: {"type": "string"} for k in "abcdef"}}


def test_the_default_bound_is_far_below_the_machine():
    compiler = xgr.GrammarCompiler(SMALL)
    assert compiler.max_grammar_bytes == DEFAULT_MAX_GRAMMAR_BYTES <= 4 << 30


@pytest.mark.jit_only
def test_eager_entries_past_the_bound_raise_at_compile_time():
    whole = xgr.GrammarCompiler(LLAMA, jit=False, max_grammar_bytes=-1).compile_json_schema(SIX_STRINGS)
    compiler = xgr.GrammarCompiler(LLAMA, jit=False, max_grammar_bytes=whole.memory_size_bytes // 2)
    with pytest.raises(GrammarLimitError, match="max_grammar_bytes") as info:
        compiler.compile_json_schema(SIX_STRINGS)
    assert isinstance(info.value, XG2RefError)


@pytest.mark.jit_only
def test_jit_entries_past_the_bound_raise_when_a_mask_needs_them():
    # no entry at compile time (jit_eager_entries=0; the cost model's choice depends on the clock) and
    # none built beside decoding (background_builds=False): the fill builds, and raises;
    # the walk holds about 8 kB of entries after its fourth step, and its fifth needs room for a
    # bitset (the bound is checked when the arrays grow; entries of equal content are stored once)
    compiled = xgr.GrammarCompiler(LLAMA, jit_eager_entries=0, max_grammar_bytes=12_000,
                                   background_builds=False).compile_json_schema(SIX_STRINGS)
    assert compiled.mask_cache.stats.entries == 0
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, LLAMA.vocab_size)
    with pytest.raises(GrammarLimitError, match="max_grammar_bytes"):
        for text in ['{', '"a"', ':', ' "', 'xx', '",', '"b": "', 'x', '", "c', '":', ' 1']:
            matcher.fill_next_token_bitmask(bitmask)
            matcher.accept_string(text)


def test_fsm_arrays_past_the_bound_raise():
    with pytest.raises(GrammarLimitError, match="FSM arrays"):
        xgr.GrammarCompiler(SMALL, max_grammar_bytes=100).compile_grammar('root ::= "abc" [0-9]+')


def test_a_multiple_of_1e30_is_exact():
    schema = {"type": "integer", "multipleOf": 1e30}
    start = time.perf_counter()
    compiled = xgr.GrammarCompiler(SMALL).compile_json_schema(schema)
    assert time.perf_counter() - start < 30
    oracle = Recognizer(xgr.Grammar.from_json_schema(schema).ir)
    for text, valid in [("0", True), ("-0", True), ("1" + "0" * 30, True), ("-3" + "0" * 30, True),
                        ("12" + "0" * 31, True), ("3" + "0" * 29, False), ("30", False), ("1" + "0" * 29 + "1", False)]:
        assert oracle.is_sentence(text.encode()) == valid, text
        matcher = xgr.GrammarMatcher(compiled)
        assert (matcher.accept_string(text) and matcher.is_completed()) == valid, text


def test_a_multiple_past_the_automaton_limit_is_a_clear_error():
    start = time.perf_counter()
    with pytest.raises(InvalidJSONError, match="multipleOf"):
        xgr.Grammar.from_json_schema({"type": "integer", "multipleOf": 10**9 + 7})
    assert time.perf_counter() - start < 5
    # a bounded range with few multiples is listed, whatever the size of the number
    oracle = Recognizer(xgr.Grammar.from_json_schema(
        {"type": "integer", "multipleOf": 10**9 + 7, "minimum": 0, "maximum": 3 * 10**9}).ir)
    assert oracle.is_sentence(str(2 * (10**9 + 7)).encode()) and not oracle.is_sentence(b"7")


def test_lengths_past_int32():
    schema = {"type": "array", "items": {"type": "string", "maxLength": 2**32}}
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(SMALL).compile_json_schema(schema))
    assert matcher.accept_string('["aaa","' + "a" * 300 + '"]') and matcher.is_completed()
    with pytest.raises(GrammarLimitError, match=str(MAX_COUNT)):
        xgr.GrammarCompiler(SMALL).compile_json_schema({"type": "string", "minLength": 2**32})
    # the same bound in EBNF: counted when compression is on, a clear error when it is off
    assert xgr.GrammarMatcher(xgr.GrammarCompiler(SMALL).compile_grammar('root ::= "a"{0,4294967296}')).accept_string(
        "aaaa")
    start = time.perf_counter()
    with pytest.raises(GrammarLimitError):
        xgr.GrammarCompiler(SMALL, repetition_compression=False).compile_grammar('root ::= "a"{0,4294967296}')
    assert time.perf_counter() - start < 30


@pytest.mark.parametrize("config", [{}, {"jit": False}, {"cache_enabled": False, "repetition_compression": False}])
def test_a_chain_of_2000_rules_each_naming_the_next_twice_compiles_in_seconds(config):
    n = 2000
    ebnf = "\n".join([f"r{i} ::= r{i + 1} r{i + 1}" for i in range(n)] + [f'r{n} ::= "a"'])
    start = time.perf_counter()
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(SMALL, **config).compile_grammar(ebnf, root_rule_name="r0"))
    assert matcher.accept_string("a" * 40) and not matcher.is_completed()  # the sentence is 2^2000 bytes long
    mask = matcher.compute_bool_mask()
    assert mask[0] and mask[1] and not mask[2]
    assert time.perf_counter() - start < 30


@pytest.mark.parametrize("schema", [{"$ref": 0}, {"properties": {"a": {"$ref": 0}}}, {"items": {"$ref": None}},
                                    {"anyOf": [{"$ref": ["#"]}]}, '{"$ref": 0}'])
def test_a_ref_that_is_not_a_string_is_invalid_json_schema(schema):
    with pytest.raises(InvalidJSONError, match=r"\$ref: must be a string"):
        xgr.GrammarCompiler(SMALL).compile_json_schema(schema)


def test_a_chart_past_its_limit_is_a_clear_error(monkeypatch):
    """The Earley chart grows on demand up to `kernels.chart.MAX_CHART_ITEMS`; a parse that needs more
    raises GrammarLimitError (never takes the machine's memory). The matcher is unchanged by
    the refused input."""
    from xg2ref.kernels import chart

    monkeypatch.setattr(chart, "MAX_CHART_ITEMS", 1 << 12)
    # every split of a run of a's into s's: the sets hold items from every earlier position
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(SMALL).compile_grammar('root ::= s\ns ::= s s | "a"'))
    with pytest.raises(GrammarLimitError, match="MAX_CHART_ITEMS"):
        matcher.accept_string("a" * 400)
    assert matcher._parser.position == 0
    monkeypatch.setattr(chart, "MAX_CHART_ITEMS", 1 << 25)
    assert matcher.accept_string("aa") and matcher._parser.position == 2 and matcher.is_completed()
