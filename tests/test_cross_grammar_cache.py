"""The cross-grammar cache (xg2ref/mask/cross_grammar.py, XGrammar-2 §3.3) and JIT with eager
entries (§3.5): shared entries equal the entries a grammar builds alone."""

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
import xg2ref.analysis as C
from xg2ref.compiler import compile_ir_grammar
from xg2ref.mask.cross_grammar import CrossGrammarCache, IndexSet
from xg2ref.fsm.hashing import RuleHashes
from xg2ref.grammar.grammar import Grammar
from xg2ref.oracle.strategies import grammars, vocabularies
from tests.hypothesis_budget import examples
from tests.test_state_classes import entry_of


def entries(compiled, vocab_size):
    return [entry_of(compiled.mask_cache, s, vocab_size) for s in range(len(compiled.arrays.state_rule))]


def wrapped(ir, prefix: str, suffix: str) -> Grammar:
    """The grammar of `ir` under a new root: its rules keep their machines, not their context."""
    text = str(Grammar.from_ir(ir))
    return Grammar.from_ebnf(text + f'\nwrapper_root_ ::= "{prefix}" {ir.root} "{suffix}"', root_rule_name="wrapper_root_")


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(max_rules=3), grammars(max_rules=3), vocabularies(b"abc", 10))
def test_entries_through_the_pool_equal_entries_built_alone(ir1, ir2, vocab_spec):
    vocab, stop_ids, _ = vocab_spec
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop_ids))
    pool = CrossGrammarCache()
    built_by_first = None
    for grammar in (Grammar.from_ir(ir1), Grammar.from_ir(ir2), wrapped(ir1, "a", "c"), wrapped(ir1, "c", "a"),
                    Grammar.from_ir(ir1)):
        shared = compile_ir_grammar(grammar, info, pool=pool)
        # alone: a pool of its own, empty, so that rule machines are numbered the same way (a
        # machine built through the shape cache may number its states otherwise than one built
        # without it; the masks agree, see the JIT test below)
        alone = compile_ir_grammar(grammar, info, pool=CrossGrammarCache())
        assert entries(shared, info.vocab_size) == entries(alone, info.vocab_size)
        built_by_first = pool.stats.misses if built_by_first is None else built_by_first
    if built_by_first:  # the first grammar built entries, and the last grammar is the first again
        assert pool.stats.perfect + pool.stats.partial > 0


def lookahead_grammars():
    body = '[a-z]+ "!" [a-z]* "!"'
    return (f'root ::= "[" s "]"\ns ::= {body} (= "]")', f'root ::= "{{" t "}}"\nt ::= {body} (= "}}")',
            f'root ::= "<" u "]"\nu ::= {body} (= "]")')


VOCAB = ["a", "b", "ab", "!", "]", "}", "a!", "!]", "!}", "!a", "</s>"]


def test_perfect_and_partial_hits():
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[10])
    # (no builder thread: what the pool holds when the next grammar compiles is what compiling put there)
    compiler = xgr.GrammarCompiler(info, background_builds=False)
    g1, g2, g3 = lookahead_grammars()
    compiler.compile_grammar(g1)
    first = compiler.cache_stats
    assert first.perfect == first.partial == 0 and first.misses > 0
    compiler.compile_grammar(g2)  # the same rule body under another lookahead
    second = compiler.cache_stats
    assert second.partial > 0 and second.perfect == 0
    compiler.compile_grammar(g3)  # the same body and the same lookahead as g1
    third = compiler.cache_stats
    assert third.perfect > 0 and third.partial == second.partial
    assert third.rules_seen == 6 and third.rules_known == 2  # s = t = u; the roots differ
    for text in (g1, g2, g3):
        shared = compiler.compile_grammar(text)
        alone = xgr.GrammarCompiler(info, cache_enabled=False, cross_grammar_cache=True,
                                    background_builds=False).compile_grammar(text)
        assert entries(shared, info.vocab_size) == entries(alone, info.vocab_size)
    # "!}" after "[a!": s may end after "!", and its lookahead "]" rejects the "}"
    m = xgr.GrammarMatcher(compiler.compile_grammar(g1))
    assert m.accept_string("[a!")
    assert not m.compute_bool_mask()[VOCAB.index("!}")] and m.compute_bool_mask()[VOCAB.index("!]")]


def test_a_hash_collision_is_a_miss(monkeypatch):
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[10])
    real = C.hash_rules

    def forged(fsms, known=None):  # every hashed rule gets the same hash
        h = real(fsms, known)
        return RuleHashes(tuple(None if x is None else 12345 for x in h.hashes), h.canonical, h.kinds, h.scc)

    monkeypatch.setattr(C, "hash_rules", forged)
    compiler = xgr.GrammarCompiler(info, jit=False)  # every entry through the pool at compile time
    texts = ('root ::= "[" s "]"\ns ::= [a-z]+ "!" [a-z]* "!" (= "]")', 'root ::= "(" [ab]+ ")"')
    for text in texts:
        shared = compiler.compile_grammar(text)
        alone = xgr.GrammarCompiler(info, cache_enabled=False, cross_grammar_cache=True, jit=False).compile_grammar(text)
        assert entries(shared, info.vocab_size) == entries(alone, info.vocab_size)
    assert compiler.cache_stats.collisions > 0


def test_byte_limit_clear_and_size():
    info = xgr.TokenizerInfo.from_quicktok("llama3")
    schemas = [{"type": "object", "properties": {f"p{i}": {"type": "string", "maxLength": 5 + i}}} for i in range(3)]
    # every entry built at compile time (jit=False): under the defaults the cost model decides from
    # measured compile times how many to build, and the pool's contents would depend on the clock
    unbounded = xgr.GrammarCompiler(info, jit=False)
    for s in schemas:
        unbounded.compile_json_schema(s)
    pool_bytes = unbounded.pool.size_bytes()
    assert pool_bytes > 0 and unbounded.get_cache_size_bytes() > pool_bytes
    limit = 3 * (pool_bytes // 2)  # a third of it for the pool: half of what it held
    bounded = xgr.GrammarCompiler(info, jit=False, cache_limit_bytes=limit)
    for s in schemas:
        bounded.compile_json_schema(s)
        assert bounded.pool.size_bytes() <= limit // 3
    assert bounded.pool.stats.entries < unbounded.pool.stats.entries
    bounded.clear_cache()
    # what is left is the vocabulary's tables (shared by every compiler over it) and the empty caches
    lines = bounded.memory_account()
    assert lines["grammars"] == 0 and bounded.pool.stats.entries == 0 and lines["pool"] < 8192
    off = xgr.GrammarCompiler(info, cross_grammar_cache=False)
    off.compile_json_schema(schemas[0])
    assert off.pool is None and off.cache_stats is None


def test_index_sets_round_trip_in_the_smallest_form():
    """Each of the three forms (list, complement list, bitset) is chosen where it is smallest,
    and reads back the same set: as indices, joined with more, as the kernel's raw form, and
    as its length."""
    rng = np.random.default_rng(0)
    forms = set()
    for n, k in ((1000, 3), (1000, 900), (1000, 999), (128_000, 60_000), (128_000, 127_990), (17, 0), (17, 17)):
        idx = np.sort(rng.choice(n, size=k, replace=False)).astype(np.int32)
        s = IndexSet(idx, n)
        forms.add(s._form)
        assert s.indices().tolist() == idx.tolist() and len(s) == k
        assert s.nbytes <= min(4 * k, 4 * (n - k), (n + 7) // 8)
        more = rng.choice(n, size=min(40, n), replace=False).astype(np.int32)
        assert s.union(more).tolist() == np.union1d(idx, more).tolist()
        raw = s.raw
        got = raw if raw.dtype == np.int32 else np.flatnonzero(np.unpackbits(raw, count=n))
        assert got.tolist() == idx.tolist()
    assert forms == {IndexSet.LIST, IndexSet.COMPLEMENT, IndexSet.BITS}


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(max_rules=3), vocabularies(b"abc", 10), st.integers(0, 3), st.integers(0, 2**16))
def test_jit_with_eager_entries_and_the_pool_gives_the_eager_masks(ir, vocab_spec, k, seed):
    vocab, stop_ids, _ = vocab_spec
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop_ids))
    eager = xgr.GrammarMatcher(compile_ir_grammar(Grammar.from_ir(ir), info))
    total = eager.compiled_grammar.mask_cache.stats.stores  # (classes built: kernels/entry_content.py)
    lazy_compiled = compile_ir_grammar(Grammar.from_ir(ir), info, jit=True, eager_entries=k, pool=CrossGrammarCache())
    cache = lazy_compiled.mask_cache
    assert cache.stats.stores == min(k, total)
    lazy = xgr.GrammarMatcher(lazy_compiled)
    rng = random.Random(seed)
    for _ in range(8):
        want = eager.compute_bool_mask()
        assert (lazy.compute_bool_mask() == want).all()
        allowed = [int(t) for t in np.flatnonzero(want) if t not in stop_ids]
        if not allowed:
            break
        t = rng.choice(allowed)
        assert eager.accept_token(t) and lazy.accept_token(t)


def test_the_eager_entries_are_the_costliest():
    info = xgr.TokenizerInfo.from_quicktok("llama3")
    compiled = xgr.GrammarCompiler(info, jit=True, jit_eager_entries=2, background_builds=False).compile_json_schema(
        {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}}, "required": ["a", "b"]})
    cache = compiled.mask_cache
    costs = cache.schedule.estimated_costs()
    built = sorted(cache.arrays.entry_state.tolist())
    top = sorted(int(cache._class_rep[c]) for c in np.argsort(-costs, kind="stable")[:2])
    assert built == top
    # inside a string almost every token may be read; after `true` only a few
    inside = cache.arrays.entry_state.tolist()
    assert all(costs[c] >= np.median(costs) for c in np.argsort(-costs, kind="stable")[:2])
    assert len(inside) == 2


def test_the_same_structural_tag_twice_is_a_grammar_cache_hit_and_counts_as_reuse():
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[10])
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}}}]
    compiler = xgr.GrammarCompiler(info)
    first = compiler.compile_structural_tag(xgr.get_model_structural_tag("llama", tools=tools))
    seen = compiler.cache_stats.rules_seen
    again = compiler.compile_structural_tag(xgr.get_model_structural_tag("llama", tools=tools))
    assert again is first and compiler.grammar_cache_hits == 1 and compiler.grammar_cache_lookups == 2
    stats = compiler.cache_stats
    assert stats.rules_seen == 2 * seen and stats.rules_known == seen  # the second time every rule is known


def test_rule_machines_are_reused_under_other_names():
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[10])
    compiler = xgr.GrammarCompiler(info)
    first = 'root ::= "[" item ("," item)* "]"\nitem ::= "<" [a-z]+ (":" item)? ">" | "!"'
    second = 'top ::= "[" elem ("," elem)* "]"\nelem ::= "<" [a-z]+ (":" elem)? ">" | "!"'
    compiler.compile_grammar(first)
    before = compiler.pool.shapes.hits
    renamed = compiler.compile_grammar(second, root_rule_name="top")
    assert compiler.pool.shapes.hits - before == len(renamed.fsms.fsms)  # every machine came from the first
    plain = xgr.GrammarCompiler(info, cache_enabled=False).compile_grammar(second, root_rule_name="top")
    for text in ("[<ab:!>,!]", "[<a", "[!,<b:<c:!>>]"):
        m, p = xgr.GrammarMatcher(renamed), xgr.GrammarMatcher(plain)
        for k in range(len(text) + 1):
            assert (m.compute_bool_mask() == p.compute_bool_mask()).all(), (text, k)
            if k < len(text):
                assert m.accept_string(text[k]) == p.accept_string(text[k])


@pytest.mark.parametrize("jit", [False, True])
def test_a_rule_shared_in_another_context_gets_that_contexts_mask(jit):
    # json_string ends inside `"]` and `"]]`; in the object schema nothing after it reads `]`, so
    # both are rejected there (`"]]` under the rejected prefix `"]`); the pool must record that the
    # class came from the context, not from json_string, and in the nested array, where `]]`
    # follows it, both are allowed
    vocab = ["a", '"', '"]', '"]\n', '"}', '"]]', "[", "{", "}", "]", "\n", '"a"', ":", "</s>"]
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[13])
    first = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    second = {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}
    compiler = xgr.GrammarCompiler(info, jit=jit)
    m = xgr.GrammarMatcher(compiler.compile_json_schema(first))
    for text in ("", "{", '"a"', ":", '"', "a"):  # (with JIT, the entries of json_string are built here)
        assert m.accept_string(text)
        m.compute_bool_mask()
    shared = xgr.GrammarMatcher(compiler.compile_json_schema(second))
    alone = xgr.GrammarMatcher(xgr.GrammarCompiler(info, cross_grammar_cache=False, jit=jit).compile_json_schema(second))
    for text in ("", "[", "[", '"', "a"):
        assert shared.accept_string(text) and alone.accept_string(text)
        want = alone.compute_bool_mask()
        assert (shared.compute_bool_mask() == want).all(), text
    assert compiler.cache_stats.perfect + compiler.cache_stats.partial > 0  # json_string's entries were found
    assert want[vocab.index('"]')] and want[vocab.index('"]]')] and not want[vocab.index('"}')]
