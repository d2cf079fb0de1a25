"""Masks are the same in every configuration of `GrammarCompiler` (XGrammar-2's mechanisms on by
default; each switch kept for the ablation): JIT or eager entries, K chosen by the cost model or
by the caller, the cross-grammar cache on or off, repetitions counted or unrolled.

Two random grammars are compiled one after the other on one compiler (so that the second meets
entries and rule machines the first left in the cross-grammar cache); at every byte of a random
sentence of each, the mask equals the every-token Earley mask and, for short prefixes, the
brute-force oracle's.
"""

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.grammar.grammar import Grammar
from xg2ref.grammar.printer import print_grammar
from xg2ref.oracle.brute_force import brute_force_mask
from xg2ref.oracle.recognizer import Recognizer
from xg2ref.oracle.strategies import grammars, sentences, vocabularies

from hypothesis_budget import examples

configurations = st.fixed_dictionaries({
    "jit": st.booleans(),
    "jit_eager_entries": st.sampled_from([None, 0, 1, 3]),
    "cache_enabled": st.booleans(),
    "cross_grammar_cache": st.sampled_from([None, True, False]),
    "repetition_compression": st.booleans(),
    "repetition_threshold": st.sampled_from([1, 2, 32]),  # small: the random grammars' repetitions get counted
})


def test_the_defaults_are_xgrammar_2s():
    info = xgr.TokenizerInfo([b"a", b"b"])
    compiler = xgr.GrammarCompiler(info)
    assert compiler.jit and compiler.jit_eager_entries is None  # K from the cost model
    assert compiler.pool is not None and compiler.parts is not None  # cross-grammar cache and linking
    assert compiler.repetition_threshold is not None  # repetition compression


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(max_rules=3), grammars(max_rules=3), vocabularies(b"abc", 12), configurations,
       st.integers(0, 2**16))
def test_masks_are_the_same_in_every_configuration(first, second, vocab_spec, config, seed):
    vocab, stop_ids, _ = vocab_spec
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop_ids))
    compiler = xgr.GrammarCompiler(info, **config)
    rng = random.Random(seed)
    for ir in (first, second):
        matcher = xgr.GrammarMatcher(compiler.compile_grammar(Grammar.from_ir(ir)))
        oracle = Recognizer(ir)
        text = sentences(ir, rng) or b""
        for k in range(min(len(text), 10) + 1):
            if k:
                assert matcher.accept_string(text[k - 1:k])
            have = matcher.compute_bool_mask()
            assert np.array_equal(have, matcher._every_token_bool_mask()), (config, print_grammar(ir), text[:k])
            if k <= 5:
                want = brute_force_mask(oracle, text[:k], vocab, stop_token_ids=stop_ids,
                                        special_token_ids=info.special_token_ids, vocab_size=info.vocab_size)
                assert np.array_equal(have, want), (config, print_grammar(ir), text[:k], vocab)


def test_the_cost_model_builds_the_costliest_entries_that_fit_its_budget():
    from xg2ref.mask.jit import AUTO_EAGER_MAX, SECONDS_PER_COST

    info = xgr.TokenizerInfo.from_quicktok("llama3")
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}},
              "required": ["a", "b"]}
    # (no builder thread: this is about what is built at compile time)
    cache = xgr.GrammarCompiler(info, cache_enabled=False, background_builds=False).compile_json_schema(schema).mask_cache
    assert cache.stats.entries <= AUTO_EAGER_MAX and cache.unbuilt_entries > 10  # the rest waits for JIT
    costs = cache.schedule.estimated_costs()
    order = np.argsort(-costs, kind="stable")
    assert cache.schedule.auto_eager(0.0) == []
    # room for the costliest (a string's content, which reads almost every token) and no more
    room = costs[order[0]] * SECONDS_PER_COST
    assert cache.schedule.auto_eager(room * 1.001) == [int(order[0])]
    assert costs[order[0]] >= 0.2 * len(info.vocab_arrays().sorted_ids)
    # a generous budget: the AUTO_EAGER_MAX costliest, costliest first
    assert cache.schedule.auto_eager(1e9) == [int(c) for c in order[:AUTO_EAGER_MAX]]


def test_estimated_costs_are_the_per_state_sums():
    """The vectorized estimate equals the definition, state by state: the regular tokens whose
    first byte the state may read (byte edges, FIRST of rule edges), a quarter of that for a
    pure state, plus CONTEXT_WEIGHT for each token whose first byte may follow the rule of a
    final state (the context term)."""
    from xg2ref.kernels import pure_walk as PW
    from xg2ref.mask.jit import CONTEXT_WEIGHT

    info = xgr.TokenizerInfo([b"a", b"ab", b"{", b'"', b"1", b"12", b" ", b"x}", b"true"])
    for grammar in (xgr.Grammar.builtin_json_grammar(),
                    xgr.Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "string"}}}),
                    xgr.Grammar.from_ebnf('root ::= "[" item ("," item)* "]"\nitem ::= [a-z]+ | root')):
        compiled = xgr.GrammarCompiler(info, cache_enabled=False, jit_eager_entries=0).compile_grammar(grammar)
        cache, fsm = compiled.mask_cache, compiled.arrays
        v = info.vocab_arrays()
        heads = np.zeros(256)
        for t in v.sorted_ids.tolist():
            data = v.token_bytes[v.token_offsets[t]:v.token_offsets[t + 1]]
            if len(data):
                heads[data[0]] += 1
        first, follow = cache.schedule.first, compiled.mask_cache._classifier.follow1 != 0
        pure = np.full(len(fsm.state_rule), -1, dtype=np.int32)
        PW.mark_pure_states(fsm, 0, len(pure), 0, len(pure), pure)
        want = []
        for s in cache._class_rep.tolist():
            readable = np.zeros(256, dtype=np.bool_)
            for e in range(fsm.byte_indptr[s], fsm.byte_indptr[s + 1]):
                readable[fsm.byte_lo[e]:fsm.byte_hi[e] + 1] = True
            for e in range(fsm.ref_indptr[s], fsm.ref_indptr[s + 1]):
                readable |= first[fsm.ref_rule[e]]
            cost = heads[readable].sum() * (0.25 if pure[s] >= 0 else 1.0)
            if fsm.is_final[s]:
                cost += CONTEXT_WEIGHT * heads[follow[fsm.state_rule[s]]].sum()
            want.append(cost)
        assert np.allclose(cache.schedule.estimated_costs(follow), want)
