"""Linking compiled sub-grammars (xg2ref/linking.py): a structural tag compiled from cached parts
has the masks of the brute-force oracle on the grammar as one IR, and of the same tag compiled
without linking."""

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.exceptions import InvalidStructuralTagError, XG2RefError
from xg2ref.grammar.grammar import Grammar
from xg2ref.grammar.printer import print_grammar
from xg2ref.frontends.structural_tag.converter import structural_tag_to_ir
from xg2ref.oracle.brute_force import brute_force_mask
from xg2ref.oracle.recognizer import Recognizer
from xg2ref.oracle.strategies import grammars, sentences, vocabularies
from tests.hypothesis_budget import examples


def tag(kind: str, texts: list, begins=("<a", "<b", "<c")) -> dict:
    """A structural tag over EBNF sub-grammars: tags behind a trigger, or a sequence with one
    sub-grammar outside any tag."""
    tags = [{"begin": b, "content": {"type": "grammar", "grammar": t}, "end": ">"} for b, t in zip(begins, texts)]
    triggered = {"type": "triggered_tags", "triggers": ["<"], "tags": tags}
    if kind == "triggered":
        fmt = triggered
    elif kind == "separated":
        fmt = {"type": "tags_with_separator", "tags": tags, "separator": "|"}
    else:
        fmt = {"type": "sequence", "elements": [{"type": "grammar", "grammar": texts[0]},
                                                {"type": "const_string", "value": "|"}, triggered]}
    return {"type": "structural_tag", "format": fmt}


def check_against_oracle(compiled, plain, structural_tag, info, vocab, stop_ids, seed: int) -> None:
    """Masks of the linked `compiled` and of `plain` against the brute-force oracle after prefixes
    of sentences of the whole grammar."""
    ir = structural_tag_to_ir(structural_tag)
    oracle = Recognizer(ir)
    rng = random.Random(seed)
    for _ in range(4):
        text = sentences(ir, rng) or b""
        prefix = text[:rng.randint(0, len(text))]
        if not oracle.is_prefix(prefix):
            continue
        want = brute_force_mask(oracle, prefix, vocab, stop_token_ids=stop_ids,
                                special_token_ids=info.special_token_ids, vocab_size=info.vocab_size)
        for c in (compiled, plain):
            matcher = xgr.GrammarMatcher(c)
            assert matcher.accept_string(prefix)
            assert np.array_equal(matcher.compute_bool_mask(), want), (print_grammar(ir), prefix, vocab)


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(max_rules=3, lookaheads=True), grammars(max_rules=3, lookaheads=True),
       vocabularies(b"abc<>|", 12), st.sampled_from(["triggered", "separated", "sequence"]), st.integers(0, 2**16))
def test_linked_masks_match_the_brute_force_mask(ir1, ir2, vocab_spec, kind, seed):
    vocab, stop_ids, _ = vocab_spec
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop_ids))
    compiler = xgr.GrammarCompiler(info, jit=True)
    plain = xgr.GrammarCompiler(info, cross_grammar_cache=False)
    texts = [str(Grammar.from_ir(ir1)), str(Grammar.from_ir(ir2))]
    for text in texts:
        try:
            Grammar.from_ebnf(text)
        except XG2RefError:  # e.g. `root ::= root`, which the EBNF parser rejects
            assume(False)
    # the second tag reuses both parts under other names and in another order
    for st_ in (tag(kind, texts), tag(kind, texts[::-1], begins=("<b", "<ca"))):
        compiled = compiler.compile_structural_tag(st_)
        assert compiled.grammar.parts is not None  # the linked path
        check_against_oracle(compiled, plain.compile_structural_tag(st_), st_, info, vocab, stop_ids, seed)
    assert compiler.parts.hits >= 1


def tools(names):
    return [{"type": "function", "function": {"name": n, "parameters": {
        "type": "object", "properties": {"x": {"type": "integer"}, n: {"type": "string", "maxLength": 3}},
        "required": ["x"]}}} for n in names]


LLAMA_VOCAB = xgr.TokenizerInfo([b"{", b'{"name": ', b'"f', b'"g', b'"h', b'", "parameters": ', b'"x"', b": ", b"1",
                                 b"}", b"}}", b", ", b'"', b"ab", b"a", b"</s>", b"f", b"g", b"h", b"x", b" "],
                                stop_token_ids=[15])


def test_parts_are_compiled_once_per_compiler():
    compiler = xgr.GrammarCompiler(LLAMA_VOCAB, jit=True)
    first = compiler.compile_structural_tag(xgr.get_model_structural_tag("llama", tools=tools(["f", "g"])))
    assert (compiler.parts.misses, compiler.parts.hits) == (2, 0)
    second = compiler.compile_structural_tag(xgr.get_model_structural_tag("llama", tools=tools(["g", "h"])))
    assert (compiler.parts.misses, compiler.parts.hits) == (3, 1)
    assert compiler.get_cache_size_bytes() > 0
    plain = xgr.GrammarCompiler(LLAMA_VOCAB, cross_grammar_cache=False)
    for compiled, names in ((first, ["f", "g"]), (second, ["g", "h"])):
        alone = plain.compile_structural_tag(xgr.get_model_structural_tag("llama", tools=tools(names)))
        for text in ("", '{"name": ', f'{{"name": "{names[1]}", "parameters": {{"x": 1, "{names[1]}": "a',
                     f'{{"name": "{names[0]}", "parameters": {{"x": 1}}}}'):
            a, b = xgr.GrammarMatcher(compiled), xgr.GrammarMatcher(alone)
            assert a.accept_string(text) and b.accept_string(text)
            assert np.array_equal(a.compute_bool_mask(), b.compute_bool_mask()), text
        assert str(compiled.grammar) == str(alone.grammar)  # the one-IR form, built on demand
    compiler.clear_cache()
    compiler.compile_structural_tag(xgr.get_model_structural_tag("llama", tools=tools(["f"])))
    assert compiler.parts.misses == 4


def test_a_written_lookahead_is_verified_with_the_sequel_of_the_part_unknown():
    # alone, after `a` comes "x" or the end of the input: the assertion holds; in the sequence,
    # "|" may follow, so it must not be used (a token "b|" would be wrongly rejected)
    info = xgr.TokenizerInfo([b"b|", b"b", b"x", b"|", b"<a", b"</s>"], stop_token_ids=[5])
    st_ = tag("sequence", ['root ::= a "x"?\na ::= "b" (= "x")'])
    compiled = xgr.GrammarCompiler(info).compile_structural_tag(st_)
    assert any(name.endswith(".a") for name in compiled.lookahead_report.unverified)
    matcher = xgr.GrammarMatcher(compiled)
    assert matcher.compute_bool_mask()[0]  # "b|"
    assert matcher.accept_string("b|")


@pytest.mark.parametrize("content", ['root ::= "a"*', 'root ::= root "a"', 'root ::= "a" root | "b"',
                                     'root ::= "" | "b" r\nr ::= "a" (= ">")'])
def test_stub_facts_for_nullable_empty_and_recursive_roots(content):
    vocab = [b"<a", b"a", b"aa", b"b", b">", b"a>", b">>", b"<", b"</s>"]
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[8])
    for kind in ("triggered", "sequence"):
        st_ = tag(kind, [content])
        compiled = xgr.GrammarCompiler(info).compile_structural_tag(st_)
        plain = xgr.GrammarCompiler(info, cross_grammar_cache=False).compile_structural_tag(st_)
        check_against_oracle(compiled, plain, st_, info, vocab, [8], seed=len(content))


def test_errors_of_a_part_name_their_place():
    bad = {"type": "structural_tag", "format": {"type": "tag", "begin": "<", "end": ">", "content": {
        "type": "json_schema", "json_schema": {"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}}}}}
    with pytest.raises(InvalidStructuralTagError, match=r"format\.content\.json_schema"):
        xgr.GrammarCompiler(LLAMA_VOCAB).compile_structural_tag(bad)
    bad_regex = {"type": "structural_tag", "format": {"type": "regex", "pattern": "(a"}}
    with pytest.raises(InvalidStructuralTagError, match=r"format\.pattern"):
        xgr.GrammarCompiler(LLAMA_VOCAB).compile_structural_tag(bad_regex)


def test_the_top_lookahead_of_a_part_root_is_dropped_when_the_part_references_its_root():
    # in the sequence, "|" follows the part's root; inside the part, "b" follows it too
    info = xgr.TokenizerInfo([b"a", b"cb", b"c|", b"|", b"b", b"</s>"], stop_token_ids=[5])
    st_ = tag("sequence", ['root ::= "a" root "b" | "c"'])
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_structural_tag(st_))
    assert matcher.accept_string("a")
    assert matcher.compute_bool_mask()[1]  # "cb": the inner root ends inside it, "b" follows
    assert matcher.accept_string("cb|")


def test_a_written_lookahead_of_the_top_never_trusts_a_stand_in():
    # the stand-in for the part "bd" reads one byte of FIRST and ends: through it, VERIFY would
    # prove r's assertion "bc"; the part itself refutes it
    from xg2ref.compiler import compile_linked_grammar
    from xg2ref.grammar.ir import SubGrammar
    from xg2ref.linking import PartCache

    info = xgr.TokenizerInfo([b"a", b"abd", b"ab", b"d", b"</s>"], stop_token_ids=[4])
    top = Grammar.from_ebnf('root ::= r part\nr ::= "a" (= "bc")\npart ::= "x"').ir
    sub = SubGrammar("part", ("grammar", "bd"), lambda: Grammar.from_ebnf('root ::= "bd"').ir)
    whole = Grammar.from_ebnf('root ::= r part\nr ::= "a" (= "bc")\npart ::= "bd"')
    grammar = Grammar._assembled(lambda: whole.ir, top, (sub,))
    compiled = compile_linked_grammar(grammar, info, PartCache())
    assert "r" in compiled.lookahead_report.unverified
    matcher = xgr.GrammarMatcher(compiled)
    assert matcher.compute_bool_mask()[1]  # "abd"
    assert matcher.accept_string("abd") and matcher.is_terminated() is False and matcher.accept_token(4)


def test_state_classes_from_the_pieces_are_those_of_the_whole_grammar():
    from xg2ref.mask.state_classes import shareable_rules, state_classes

    def long_tools(names):  # unrolled strings of up to 30 characters: their states share classes
        return [{"type": "function", "function": {"name": n, "parameters": {
            "type": "object", "properties": {n: {"type": "string", "maxLength": 30}}}}} for n in names]

    compiler = xgr.GrammarCompiler(LLAMA_VOCAB, jit=True)
    compiler.compile_structural_tag(xgr.get_model_structural_tag("llama", tools=long_tools(["f", "g"])))
    compiled = compiler.compile_structural_tag(xgr.get_model_structural_tag("llama", tools=long_tools(["g", "h", "f"])))
    assert compiler.parts.hits == 2  # f and g: their classes come from the parts
    arrays, cache = compiled.arrays, compiled.mask_cache
    steps = int(np.diff(LLAMA_VOCAB.vocab_arrays().token_offsets).max()) + 1
    whole = state_classes(arrays, steps, shareable_rules(arrays))
    scannable = cache._state_class >= 0
    linked, alone = cache._state_class[scannable], whole[scannable]
    assert len({(int(a), int(b)) for a, b in zip(linked, alone)}) == len(set(linked.tolist())) == len(set(alone.tolist()))
    assert len(set(linked.tolist())) < int(scannable.sum())  # some states share an entry
