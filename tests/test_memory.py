"""What a compiled grammar keeps (xg2ref/mask/classifier.py build buffers, mask/cache.py
COMPACT, mask/cross_grammar.py IndexSet): the vocabulary-sized arrays of a build are leased per
build, not kept per grammar; a grammar whose entries are all built lets go of what only
building reads; none of it changes a mask."""

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
import xg2ref.mask.classifier as C
from xg2ref.compiler import compile_ir_grammar
from xg2ref.grammar.grammar import Grammar
from xg2ref.kernels import cross_grammar as KX
from xg2ref.kernels import handles as H
from xg2ref.mask.cache import AdaptiveTokenMaskCache
from xg2ref.mask.cross_grammar import CrossGrammarCache
from xg2ref.oracle.strategies import grammars, vocabularies
from tests.hypothesis_budget import examples

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}}, "required": ["name"]},
    {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{2,5}$"}, "maxItems": 4},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["x", "yy", "zzz"]}}}},
]


def _walk(matchers, stop_ids, seed, steps=10):
    """Masks of `matchers` (all in the same state) along one random accepted path; each step's
    masks must be equal."""
    rng = random.Random(seed)
    for _ in range(steps):
        masks = [m.compute_bool_mask() for m in matchers]
        for mask in masks[1:]:
            assert np.array_equal(mask, masks[0])
        allowed = [int(t) for t in np.flatnonzero(masks[0]) if t not in stop_ids]
        if not allowed:
            return
        t = rng.choice(allowed)
        assert all(m.accept_token(t) for m in matchers)


def _sets(vocab) -> int:
    """Build sets of `vocab` now: free, or parked with a live grammar."""
    held = [ref() for ref in list(C._parked_sets(vocab).values())]
    return len(C._free_list(vocab)) + sum(1 for h in held if h is not None and h._parked)


def test_grammars_built_one_after_another_share_the_build_arrays():
    """PARKED (mask/classifier.py `lease`): builds of one grammar after another make no new set
    of vocabulary-sized arrays; a grammar holds one only parked, between its builds, and the
    others hold the idle stand-ins."""
    from xg2ref.mask.background import BUILDER

    info = xgr.TokenizerInfo.from_quicktok("llama3")
    vocab = info.vocab_arrays()
    assert BUILDER.wait_idle(120)
    before = _sets(vocab)  # (the process's: earlier tests' builds may have left sets)
    compiler = xgr.GrammarCompiler(info, background_builds=False)
    n = len(vocab.sorted_ids)
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    for schema in SCHEMAS:
        matcher = xgr.GrammarMatcher(compiler.compile_json_schema(schema))
        matcher.fill_next_token_bitmask(bitmask)  # (builds the entries the first mask lacks: JIT)
    holders = 0
    for compiled in compiler._cache.values():
        clf = compiled.mask_cache.classifier
        if clf._leased is None:
            assert len(clf.work.outs.out) == 1 and len(clf.work.merged) == 1 and len(clf.chart.item_state) == 1
        else:
            assert clf._parked and len(clf.work.outs.out) == n
            holders += 1
    assert BUILDER.wait_idle(120)
    assert _sets(vocab) == max(before, 1) and holders <= max(before, 1)  # one build at a time: no new set
    assert all(len(b.outs.out) == n for b in C._free_list(vocab))


def test_a_parked_set_taken_by_another_grammars_build_changes_no_mask(monkeypatch):
    """With one set in the process, grammars building in turn take it from each other (`_unpark`);
    their masks along a walk equal those of grammars that built alone."""
    monkeypatch.setattr(C, "_FREE", {})
    monkeypatch.setattr(C, "_PARKED", {})
    info = xgr.TokenizerInfo.from_quicktok("llama3")
    shared = xgr.GrammarCompiler(info, background_builds=False)
    turns = [xgr.GrammarMatcher(shared.compile_json_schema(schema)) for schema in SCHEMAS]
    alone = [xgr.GrammarMatcher(xgr.GrammarCompiler(info, background_builds=False).compile_json_schema(schema))
             for schema in SCHEMAS]
    rng = random.Random(5)
    stop = set(info.stop_token_ids)
    for _ in range(12):  # a step of each grammar in turn: each build takes the set the last one parked
        for m, solo in zip(turns, alone):
            mask = m.compute_bool_mask()
            assert np.array_equal(mask, solo.compute_bool_mask())
            allowed = [int(t) for t in np.flatnonzero(mask) if t not in stop]
            if allowed and not m.is_terminated():
                t = rng.choice(allowed)
                assert m.accept_token(t) and solo.accept_token(t)
    assert _sets(info.vocab_arrays()) == 1  # (the alone compilers' builds took the same one, in turn)


def test_a_build_that_grew_its_outbox_past_the_bound_returns_a_small_one(monkeypatch):
    """A lease's chart and outbox larger than KEEP_BYTES go when it ends (the sets are kept for
    the process, free or parked); the entries built meanwhile are those of a build that kept them."""
    info = xgr.TokenizerInfo.from_quicktok("llama3")
    schema = SCHEMAS[0]
    kept = xgr.GrammarCompiler(info, jit=False).compile_json_schema(schema)
    monkeypatch.setattr(C, "KEEP_BYTES", 4096)
    monkeypatch.setattr(C, "_FREE", {})  # (the sets of this build only)
    monkeypatch.setattr(C, "_PARKED", {})
    fresh = C._new_records()
    small = xgr.GrammarCompiler(info, jit=False).compile_json_schema(schema)
    held = list(C._free_list(info.vocab_arrays())) + [clf._leased for clf in (small.mask_cache.classifier,)
                                                     if clf._leased is not None]
    assert held
    for b in held:
        assert sum(a.nbytes for a in b.records) <= max(4096, sum(a.nbytes for a in fresh))
        assert len(b.chart.item_state) == len(C.K.new_chart().item_state)
    for x, y in zip(kept.mask_cache.arrays, small.mask_cache.arrays):
        assert np.array_equal(x, y)
    _walk([xgr.GrammarMatcher(kept), xgr.GrammarMatcher(small)], set(info.stop_token_ids), seed=3, steps=20)


def test_a_complete_cache_is_compacted():
    info = xgr.TokenizerInfo.from_quicktok("llama3")
    compiled = xgr.GrammarCompiler(info, jit=False, cache_enabled=False).compile_json_schema(SCHEMAS[0])
    cache = compiled.mask_cache
    assert cache.unbuilt_entries == 0 and cache._complete
    store = cache._store
    assert store.capacity_bytes - store.memory_size_bytes <= 16  # (sizes: the tallies, a fixed 16 bytes more)
    assert len(cache.classifier.pure_next) == 0 and (cache.classifier.pure_row == -1).all()
    assert len(cache._classes.hits.marked) == 0


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(max_rules=3), vocabularies(b"abc", 10), st.integers(0, 2**16))
def test_compaction_changes_no_mask(ir, vocab_spec, seed):
    """Eager and JIT caches, with and without the pool, compacted when complete, give the masks
    of a cache that never compacts; a counted repetition's zones built after the compaction
    fill the pure-state table again."""
    vocab, stop_ids, _ = vocab_spec
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop_ids))
    real = AdaptiveTokenMaskCache._compact_if_complete
    AdaptiveTokenMaskCache._compact_if_complete = lambda self: None
    try:
        never = xgr.GrammarMatcher(compile_ir_grammar(Grammar.from_ir(ir), info, repetition_threshold=2))
    finally:
        AdaptiveTokenMaskCache._compact_if_complete = real
    eager = compile_ir_grammar(Grammar.from_ir(ir), info, repetition_threshold=2)
    assert eager.mask_cache._complete
    lazy = compile_ir_grammar(Grammar.from_ir(ir), info, jit=True, pool=CrossGrammarCache(), repetition_threshold=2)
    matchers = [never, xgr.GrammarMatcher(eager), xgr.GrammarMatcher(lazy)]
    _walk(matchers, stop_ids, seed)


def test_counted_zones_after_compaction():
    """A counted repetition (xg2ref/grammar/repetition.py) whose body reaches a recursive rule
    is not shallow: its zones near the bounds are classified on first use, after the cache was
    compacted at compile time, and fill the pure-state table again."""
    info = xgr.TokenizerInfo.from_quicktok("llama3")
    ebnf = 'root ::= "<" ([a-z] | "(" inner ")"){2,40} ">"\ninner ::= [0-9] | "(" inner ")"'
    compiled = xgr.GrammarCompiler(info, jit=False, cache_enabled=False).compile_grammar(ebnf)
    cache = compiled.mask_cache
    assert cache._complete and not cache.zones.shallow.any()
    real = AdaptiveTokenMaskCache._compact_if_complete
    AdaptiveTokenMaskCache._compact_if_complete = lambda self: None
    try:
        never = xgr.GrammarCompiler(info, jit=False, cache_enabled=False).compile_grammar(ebnf)
    finally:
        AdaptiveTokenMaskCache._compact_if_complete = real
    built = cache.stats.stores
    a, b = xgr.GrammarMatcher(compiled), xgr.GrammarMatcher(never)
    for text in ["<", "a", "(1)", "b" * 30, "((2))", "c" * 6, ">"]:
        assert np.array_equal(a.compute_bool_mask(), b.compute_bool_mask())
        assert a.accept_string(text) and b.accept_string(text)
    assert a.is_completed()
    assert cache.stats.stores > built  # zones built after the compaction ...
    assert (cache.classifier._pure_build.done != 0).any()  # ... through the pure-state table, filled again


def test_outboxes_copied_when_leases_end_hold_the_same_lists():
    """Two builds' pool records, each copied out when its lease ended, read back part by part
    in order, with offsets that point at the same lists; the leased outbox is emptied."""
    def records(events):
        rec = KX.PoolRecords(np.zeros((8, KX.EV_COLUMNS), dtype=np.int64), np.zeros(64, dtype=np.int32),
                             np.zeros(4, dtype=np.int64))
        at = 0
        for k, (c, lists) in enumerate(events):
            rec.event[k, KX.EV_CLASS], rec.event[k, KX.EV_MODE] = c, KX.POOL_MISS
            for col, items in zip((KX.EV_ACC0, KX.EV_ENDS, KX.EV_PASS), lists):
                rec.event[k, col] = at
                rec.data[at:at + len(items)] = items
                at += len(items)
            rec.event[k, KX.EV_END] = at
        rec.sizes[KX.R_EVENTS], rec.sizes[KX.R_DATA] = len(events), at
        return rec

    def lists(rec):
        out = []
        for row in rec.event[:rec.sizes[KX.R_EVENTS]]:
            cols = [KX.EV_ACC0, KX.EV_ENDS, KX.EV_PASS, KX.EV_END]
            out.append((int(row[KX.EV_CLASS]),
                        [rec.data[row[a]:row[b]].tolist() for a, b in zip(cols, cols[1:])]))
        return out

    first = [(3, ([1, 2], [5], [5])), (4, ([], [7, 8], [8]))]
    second = [(9, ([0, 1, 2], [], []))]
    rec1, rec2 = records(first), records(second)
    parts = [C._copied(rec1), C._copied(rec2)]
    assert rec1.sizes[KX.R_EVENTS] == rec2.sizes[KX.R_EVENTS] == 0  # the leased outboxes are emptied
    assert C._copied(rec1) is None  # (nothing left to copy)
    assert [len(p.event) for p in parts] == [2, 1]  # (each of its own size)
    assert lists(parts[0]) + lists(parts[1]) == [(c, [list(x) for x in ls]) for c, ls in first + second]


def test_matchers_share_their_grammars_fill_scratch():
    """SHARED SCRATCH (mask/scratch.py): a thousand matchers filled in turn leave one
    scratch with their grammar; a batch takes one per row and, next time, each row's own back."""
    info = xgr.TokenizerInfo.from_quicktok("llama3")
    compiled = xgr.GrammarCompiler(info, background_builds=False).compile_json_schema(SCHEMAS[0])
    cache = compiled.mask_cache
    bitmask = xgr.allocate_token_bitmask(40, info.vocab_size)
    matchers = [xgr.GrammarMatcher(compiled) for _ in range(1000)]
    for m in matchers:
        m.fill_next_token_bitmask(bitmask)
        assert m.accept_string('{"name": "')
        m.fill_next_token_bitmask(bitmask)
    assert len(cache.scratch) == 1
    batch = xgr.BatchGrammarMatcher(max_threads=2)
    rows = matchers[:40]
    batch.batch_fill_next_token_bitmask(rows, bitmask)
    first = [id(s) for s in cache.scratch.held()]
    if H.ENABLED:  # the rows' kernels run in shares: a scratch per row
        assert len(set(first)) == 40
    else:  # (plain Python: each row is the matcher's own fill, on one of two threads)
        assert 1 <= len(set(first)) <= 2
    want = np.stack([m.compute_bool_mask() for m in rows])
    batch.batch_fill_next_token_bitmask(rows, bitmask)
    if H.ENABLED:
        assert [id(s) for s in cache.scratch.held()] == first  # the same scratch per row, no new one
    words = np.asarray(bitmask.numpy() if hasattr(bitmask, "numpy") else bitmask)
    got = np.unpackbits(words.view(np.uint8), bitorder="little", axis=1)[:, :info.vocab_size].astype(bool)
    assert np.array_equal(got, want)
