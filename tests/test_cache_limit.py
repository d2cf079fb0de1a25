"""The memory account of a compiler (xg2ref/memory.py): `get_cache_size_bytes()` is what the
compiler keeps, checked against tracemalloc, and `cache_limit_bytes` bounds it by eviction, a
grammar in use by a live matcher living on with its matcher."""

import gc
import tracemalloc
import weakref

import numpy as np
import pytest

import xg2ref as xgr

TOKENS = [bytes([b]) for b in range(32, 127)] + [b'{"', b'":', b'",', b'"}', b"true", b"null", b"</s>"]
STOP = [len(TOKENS) - 1]
TYPES = [{"type": "string"}, {"type": "integer", "minimum": 0}, {"type": "boolean"},
         {"type": "array", "items": {"type": "string"}, "maxItems": 3}, {"enum": ["red", "green", "blue"]},
         {"type": "number"}, {"type": "string", "pattern": "^[a-z]{1,4}$"}]


def schema(k: int) -> dict:
    """The k-th of many distinct object schemas: names and member types from k's digits."""
    props, required = {}, []
    for j in range(2 + k % 4):
        name = f"m{k}_{j}"
        props[name] = TYPES[(k // (j + 1) + j) % len(TYPES)]
        if (k + j) % 2:
            required.append(name)
    return {"type": "object", "properties": props, "required": required}


def tokenizer() -> xgr.TokenizerInfo:
    return xgr.TokenizerInfo(TOKENS, stop_token_ids=STOP)


def use(compiled) -> xgr.GrammarMatcher:
    """A matcher of `compiled` with its first mask filled, as a server's first request does."""
    matcher = xgr.GrammarMatcher(compiled)
    matcher.fill_next_token_bitmask(xgr.allocate_token_bitmask(1, len(TOKENS)))
    return matcher


@pytest.mark.jit_only
def test_the_account_is_what_the_compiler_keeps():
    schemas = [schema(k) for k in range(16)]
    warm = xgr.GrammarCompiler(tokenizer(), background_builds=False)  # Numba's types, the front end's memos
    for s in schemas:
        use(warm.compile_json_schema(s))
    del warm
    gc.collect()
    tracemalloc.start()
    try:
        info = tokenizer()
        info.vocab_arrays()
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        compiler = xgr.GrammarCompiler(info, background_builds=False)
        for s in schemas:
            use(compiler.compile_json_schema(s))
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
        account = compiler.memory_account()
        assert compiler.get_cache_size_bytes() == sum(account.values())
        assert set(account) == {"vocabulary", "grammars", "pool", "shapes", "parts"}
        assert abs(sum(account.values()) - kept) <= 0.1 * kept, (account, kept)
        # deleting the compiler frees all of it but its vocabulary's tables, kept for the tokenizer
        gc.collect()
        with_it = tracemalloc.get_traced_memory()[0]
        del compiler
        gc.collect()
        freed = with_it - tracemalloc.get_traced_memory()[0]
        mine = sum(account.values()) - account["vocabulary"]
        assert abs(freed - mine) <= 0.1 * mine, (account, freed)
    finally:
        tracemalloc.stop()


def test_the_limit_bounds_the_account_over_hundreds_of_schemas():
    info = tokenizer()
    unbounded = xgr.GrammarCompiler(info, background_builds=False)
    for k in range(8):
        unbounded.compile_json_schema(schema(k))
    account = unbounded.memory_account()
    limit = (sum(account.values()) - account["vocabulary"]) // 2  # about four of these grammars
    compiler = xgr.GrammarCompiler(info, background_builds=False, cache_limit_bytes=limit)
    first = compiler.compile_json_schema(schema(0))
    held = use(first)  # a live matcher of a grammar the limit will evict
    held.accept_string('{"m0_0": "ab')
    for k in range(1, 240):
        use(compiler.compile_json_schema(schema(k)))
        if k % 20 == 0 or k < 12:
            lines = compiler.memory_account()
            assert sum(lines.values()) - lines["vocabulary"] <= limit, (k, lines, limit)
            assert 1 <= len(compiler._cache) <= 8
    assert compiler.pool.stats.entries < 2000 and len(compiler.pool.shapes) < 2000
    # the evicted grammar lives on with its matcher, whose masks are those of a new compile
    assert all(first is not c for c in compiler._cache.values())
    fresh = xgr.GrammarMatcher(xgr.GrammarCompiler(info, cache_enabled=False).compile_json_schema(schema(0)))
    fresh.accept_string('{"m0_0": "ab')
    for text in ['c"', ", ", '"m0_1": ']:
        assert np.array_equal(held.compute_bool_mask(), fresh.compute_bool_mask())
        assert held.accept_string(text) == fresh.accept_string(text)
    # a compiled grammar asked for again after eviction is compiled again, with the same masks
    again = use(compiler.compile_json_schema(schema(0)))
    assert np.array_equal(again.compute_bool_mask(), xgr.GrammarMatcher(first).compute_bool_mask())


def test_clear_cache_keeps_only_the_vocabulary_tables():
    compiler = xgr.GrammarCompiler(tokenizer(), background_builds=False)
    for k in range(3):
        use(compiler.compile_json_schema(schema(k)))
    assert compiler.memory_account()["grammars"] > 0
    compiler.clear_cache()
    lines = compiler.memory_account()
    assert lines["grammars"] == 0
    assert lines["pool"] + lines["shapes"] + lines["parts"] < 8192  # the empty caches themselves
    assert compiler.get_cache_size_bytes() == sum(lines.values())


@pytest.mark.parametrize("limit_grammars", [None, 3])
def test_the_tally_the_limit_keeps_follows_the_account(limit_grammars):
    """TALLY (memory.py): what compiles are bounded by, counted as parts enter and leave, is
    within 10% of the walked account, with and without evictions."""
    info = tokenizer()
    options = {}
    if limit_grammars is not None:
        probe = xgr.GrammarCompiler(info, background_builds=False)
        use(probe.compile_json_schema(schema(0)))
        lines = probe.memory_account()
        options["cache_limit_bytes"] = limit_grammars * (sum(lines.values()) - lines["vocabulary"])
    compiler = xgr.GrammarCompiler(info, background_builds=False, **options)
    for k in range(30):
        matcher = use(compiler.compile_json_schema(schema(k)))
        matcher.accept_string('{"m%d_0": ' % k)
        matcher.fill_next_token_bitmask(xgr.allocate_token_bitmask(1, len(TOKENS)))
        if k % 6 == 5:
            walked = compiler._bound.walk()
            tally = compiler._bound.tally()
            mine = sum(walked.values()) - walked["vocabulary"]
            assert abs(sum(tally.values()) - mine) <= 0.1 * mine, (k, tally, walked)
    if limit_grammars is not None:
        assert len(compiler._cache) < 30  # (the limit evicted)


def test_compiles_under_a_limit_do_not_walk_everything(monkeypatch):
    """A compile under `cache_limit_bytes` costs a tally of what is new (TALLY), not a walk of
    everything the compiler keeps; `memory_account` walks."""
    from xg2ref import memory

    walks = []
    account = memory.compiler_account
    monkeypatch.setattr(memory, "compiler_account", lambda compiler: walks.append(1) or account(compiler))
    compiler = xgr.GrammarCompiler(tokenizer(), background_builds=False, cache_limit_bytes=2 << 20)
    for k in range(40):
        use(compiler.compile_json_schema(schema(k)))
    assert not walks
    lines = compiler.memory_account()
    assert walks and sum(lines.values()) - lines["vocabulary"] <= 2 << 20


def test_a_grammar_keeps_no_other_grammar_alive_through_the_pool():
    """Pool entries a grammar looked up for entries it has not built yet, and the structure
    checks it made against other grammars' rules, do not keep them alive: once the compiler lets
    a grammar and the pool's entries go, its machines are freed while the other grammar lives."""
    def one_string(name):
        return {"type": "object", "properties": {name: {"type": "string"}}, "required": [name]}

    compiler = xgr.GrammarCompiler(tokenizer(), background_builds=False)
    first = compiler.compile_json_schema(one_string("a"))
    matcher = xgr.GrammarMatcher(first)
    for text in '{"a": "xyz"}':
        matcher.fill_next_token_bitmask(xgr.allocate_token_bitmask(1, len(TOKENS)))
        assert matcher.accept_string(text)
    second = compiler.compile_json_schema(one_string("b"))  # (its string's states: pool hits)
    use(second)
    assert second.mask_cache._pool._resolved  # (hits looked up, their classes not built yet)
    entries = [weakref.ref(e) for e in compiler.pool._entries.values()]
    machines = weakref.ref(first.fsms)
    del first, matcher
    compiler.clear_cache()
    gc.collect()
    assert machines() is None and all(e() is None for e in entries)
    again = use(second)
    fresh = use(xgr.GrammarCompiler(tokenizer(), cache_enabled=False).compile_json_schema(one_string("b")))
    for text in '{"b": "xyz"}':
        assert np.array_equal(again.compute_bool_mask(), fresh.compute_bool_mask())
        assert again.accept_string(text) and fresh.accept_string(text)
