"""States that read every token alike share one mask-cache entry (xg2ref/mask/state_classes.py)."""

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
import xg2ref.mask.state_classes as SC
from xg2ref.compiler import compile_ir_grammar
from xg2ref.grammar.grammar import Grammar
from xg2ref.mask import KIND_ACCEPTED, KIND_BITSET, AdaptiveTokenMaskCache
from xg2ref.mask.cache import BuildPlan
from xg2ref.oracle.strategies import grammars, vocabularies


def entry_of(cache, state: int, vocab_size: int) -> tuple:
    """(accepted ids, uncertain sorted indices) of the entry serving `state`, or None."""
    a = cache.arrays
    e = a.state_entry[state]
    if e < 0:
        return None
    ids = a.list_ids[a.list_indptr[e]:a.list_indptr[e + 1]]
    if a.entry_kind[e] == KIND_BITSET:
        words = a.bitset_words[a.bitset_offset[e]:a.bitset_offset[e] + (vocab_size + 31) // 32]
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:vocab_size]
        accepted = frozenset(np.flatnonzero(bits).tolist())
    elif a.entry_kind[e] == KIND_ACCEPTED:
        accepted = frozenset(ids.tolist())
    else:
        regular = np.unpackbits(a.regular_words.view(np.uint8), bitorder="little")[:vocab_size]
        accepted = frozenset(np.flatnonzero(regular).tolist()) - frozenset(ids.tolist())
    uncertain = frozenset(a.unc_sorted[a.unc_indptr[e]:a.unc_indptr[e + 1]].tolist())
    return accepted, uncertain


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(max_rules=3), vocabularies(b"abc", 10))
def test_a_shared_entry_is_the_entry_the_state_would_get_alone(ir, vocab_spec):
    vocab, stop_ids, _ = vocab_spec
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop_ids))
    compiled = compile_ir_grammar(Grammar.from_ir(ir), info)
    args = (compiled.arrays, info.vocab_arrays(), info.vocab_size)
    shared = compiled.mask_cache
    alone = AdaptiveTokenMaskCache(*args, plan=BuildPlan(share_entries=False))
    shared_again = AdaptiveTokenMaskCache(*args, plan=BuildPlan(share_entries=True))
    for s in range(len(compiled.arrays.state_rule)):
        want = entry_of(alone, s, info.vocab_size)
        assert entry_of(shared, s, info.vocab_size) == want
        assert entry_of(shared_again, s, info.vocab_size) == want


def test_a_long_repetition_needs_few_entries():
    vocab = ["a", "b", "ab", "aaa", "</s>", "\""]  # longest token: 3 bytes
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[4])
    # unrolled (no repetition compression): the chain's states share entries
    compiled = xgr.GrammarCompiler(info, repetition_compression=False).compile_grammar(
        'root ::= "\\"" [a-z]{0,300} "\\""')
    a = compiled.mask_cache.arrays
    scannable = int((np.diff(compiled.arrays.byte_indptr) > 0).sum())
    assert scannable > 300
    # the chain's states more than a token's length from its end all read tokens alike
    assert len(a.entry_state) <= 8
    m = xgr.GrammarMatcher(compiled)
    for t in [5] + [3] * 99:  # 297 letters
        assert m.accept_token(t)
    expected = {0: [0, 1, 2, 3, 5], 1: [0, 1, 2, 5], 2: [0, 1, 5], 3: [5]}  # letters past 297 -> allowed
    for extra in range(4):
        mask = m.compute_bool_mask()
        assert (mask == m._every_token_bool_mask()).all()
        assert np.flatnonzero(mask).tolist() == expected[extra], extra
        if extra < 3:
            assert m.accept_token(0)


def test_hash_collisions_never_merge_states(monkeypatch):
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo(["a"])).compile_grammar(
        'root ::= "x" [a-c]{0,20} "y" | "z" ([a-c] "," x)* \nx ::= [0-9]+')
    fsm = compiled.arrays
    ok = SC.shareable_rules(fsm)
    honest = SC.state_classes(fsm, 10, ok)

    def colliding(fsm, prev, out, lo, hi):  # every state gets the same hash
        out[lo:hi] = 7

    monkeypatch.setattr(SC.KS, "hash_round", colliding)
    forced = SC.state_classes(fsm, 10, ok)
    # the same partition: equal classes in one iff equal in the other
    pairs = {(int(h), int(f)) for h, f in zip(honest, forced)}
    assert len(pairs) == len(set(honest.tolist())) == len(set(forced.tolist()))


def _same_partition(a, b) -> bool:
    return len({(int(x), int(y)) for x, y in zip(a, b)}) == len(set(a.tolist())) == len(set(b.tolist()))


def test_a_range_of_whole_rules_refines_as_in_the_whole_run():
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo(["a"])).compile_grammar(
        'root ::= "x" [a-c]{0,20} "y" | "z" ([a-c] "," x)* \nx ::= [0-9]{3,30} | "q" x')
    fsm = compiled.arrays
    ok = SC.shareable_rules(fsm)
    whole = SC.state_classes(fsm, 6, ok)
    bounds = np.flatnonzero(np.diff(fsm.state_rule)) + 1
    cut = int(bounds[len(bounds) // 2])  # a rule boundary
    assert _same_partition(SC.state_classes(fsm, 6, ok, 0, cut), whole[:cut])
    assert _same_partition(SC.state_classes(fsm, 6, ok, cut), whole[cut:])
    assert len(set(whole[:cut].tolist())) < cut  # the range holds states that share


def test_rules_reading_nullable_rules_keep_their_own_entries():
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo(["a"])).compile_grammar(
        'root ::= ("a" e){0,40} "b"\ne ::= "" | "c"')
    fsm = compiled.arrays
    ok = SC.shareable_rules(fsm)
    root = list(compiled.fsms.rule_names).index("root")
    assert not ok[root]
    classes = SC.state_classes(fsm, 5, ok)
    root_states = np.flatnonzero(fsm.state_rule == root)
    assert len(set(classes[root_states].tolist())) == len(root_states)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(max_rules=3), vocabularies(b"abc", 10), st.integers(0, 2**16))
def test_jit_entries_give_the_eager_masks(ir, vocab_spec, seed):
    vocab, stop_ids, _ = vocab_spec
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop_ids))
    eager = xgr.GrammarMatcher(compile_ir_grammar(Grammar.from_ir(ir), info))
    lazy_compiled = compile_ir_grammar(Grammar.from_ir(ir), info, jit=True)
    lazy = xgr.GrammarMatcher(lazy_compiled)
    cache = lazy_compiled.mask_cache
    assert cache.stats.entries == 0 and cache.unbuilt_entries == eager.compiled_grammar.mask_cache.stats.stores
    rng = random.Random(seed)
    for _ in range(8):
        want = eager.compute_bool_mask()
        assert (lazy.compute_bool_mask() == want).all()
        allowed = [int(t) for t in np.flatnonzero(want) if t not in stop_ids]
        if not allowed:
            break
        t = rng.choice(allowed)
        assert eager.accept_token(t) and lazy.accept_token(t)
    assert cache.stats.stores + cache.unbuilt_entries == eager.compiled_grammar.mask_cache.stats.stores


def test_jit_compiles_a_long_string_schema_without_building_entries():
    info = xgr.TokenizerInfo(["a", "\"", "aa", "</s>"], stop_token_ids=[3])
    # (no entry named for compile time: the cost model's choice depends on the clock)
    compiled = xgr.GrammarCompiler(info, jit=True, jit_eager_entries=0, background_builds=False).compile_json_schema(
        {"type": "string", "maxLength": 5000})
    assert compiled.mask_cache.stats.entries == 0
    m = xgr.GrammarMatcher(compiled)
    assert m.compute_bool_mask().tolist() == [False, True, False, False]
    assert compiled.mask_cache.stats.entries == 1
