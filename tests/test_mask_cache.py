"""The adaptive token-mask cache: entry classes, storage forms, context expansion, tail calls."""

import numpy as np
import pytest

import xg2ref as xgr
from xg2ref.fsm.build import build_grammar_fsms
from xg2ref.fsm.fsm import FSM
from xg2ref.frontends.ebnf.parser import parse_ebnf
from xg2ref.kernels import trie_walk as TW
from xg2ref.mask.entries import KIND_ACCEPTED, KIND_BITSET, KIND_REJECTED


def compile_with(ebnf: str, vocab: list):
    info = xgr.TokenizerInfo(vocab)
    return xgr.GrammarCompiler(info, cache_enabled=False).compile_grammar(ebnf), info


def entry_classes(compiled, vocab: list, rule: str, after: bytes) -> dict:
    """{token: 'accepted' | 'rejected' | 'uncertain'} for the entry of the single scannable
    state of `rule` reached after reading `after` (from the start of the sentence)."""
    matcher = xgr.GrammarMatcher(compiled)
    assert matcher.accept_string(after)
    rule_id = compiled.fsms.rule_names.index(rule)
    states = [it.state for it in matcher._parser.items() if it.rule == rule_id
              and compiled.mask_cache.arrays.state_entry[it.state] >= 0]
    assert len(states) == 1, states
    cache = compiled.mask_cache
    e = cache.arrays.state_entry[states[0]]
    a, v = cache.arrays, cache.vocab
    uncertain = {int(v.sorted_ids[j]) for j in a.unc_sorted[a.unc_indptr[e]:a.unc_indptr[e + 1]]}
    listed = {int(t) for t in a.list_ids[a.list_indptr[e]:a.list_indptr[e + 1]]}
    out = {}
    for t, tok in enumerate(vocab):
        if t in uncertain:
            out[tok] = "uncertain"
        elif a.entry_kind[e] == KIND_ACCEPTED:
            out[tok] = "accepted" if t in listed else "rejected"
        elif a.entry_kind[e] == KIND_REJECTED:
            out[tok] = "rejected" if t in listed else "accepted"
        else:
            word = a.bitset_words[a.bitset_offset[e] + (t >> 5)]
            out[tok] = "accepted" if (int(word) >> (t & 31)) & 1 else "rejected"
    return out


def test_entry_classes_with_context_expansion():
    # item (recursive, so not inlined) may end after a letter; its only parent reads "]", then
    # the sentence ends
    vocab = ["a", "ab", "a]", "a)", "a]x", "]"]
    compiled, _ = compile_with('root ::= "[" item "]"\nitem ::= [a-z] item | [a-z]', vocab)
    got = entry_classes(compiled, vocab, "item", b"[a")
    assert got["a"] == got["ab"] == "accepted"
    assert got["a)"] == "rejected"  # no parent of item reads ")"
    # every parent reads "]" (ACCEPT-CTX); after it only the end of root may come
    assert got["a]"] == "accepted"
    assert got["a]x"] == "rejected"


def test_two_different_parents_leave_a_token_uncertain():
    vocab = ["a", "a]", "a)", "a]x"]
    compiled, _ = compile_with('root ::= "[" item "]" | "(" item ")"\nitem ::= [a-z] item | [a-z]', vocab)
    got = entry_classes(compiled, vocab, "item", b"[a")
    assert got["a]"] == got["a)"] == "uncertain"
    assert got["a]x"] == "rejected"
    for prefix, allowed in ((b"[a", {"a", "a]"}), (b"(a", {"a", "a)"})):
        m = xgr.GrammarMatcher(compiled)
        m.accept_string(prefix)
        mask = m.compute_bool_mask()
        assert {vocab[t] for t in np.flatnonzero(mask)} == allowed
        assert np.array_equal(mask, m._every_token_bool_mask())


def test_accepted_context_keeps_trie_subtrees_apart():
    # "b]" is accepted through the parent; "b]]" and "b]c", which share its bytes, are not
    vocab = ["b", "b]", "b]]", "b]c", "c"]
    compiled, _ = compile_with('root ::= "[" item "]" "c"?\nitem ::= [a-z] item | [a-z]', vocab)
    got = entry_classes(compiled, vocab, "item", b"[b")
    assert got["b]"] == "accepted" and got["b]c"] == "accepted"
    assert got["b]]"] == "rejected"


def test_storage_form_is_the_smallest():
    vocab = [chr(c) for c in range(ord("a"), ord("z") + 1)] + ["0", "1"]
    compiled, info = compile_with('root ::= [a-z]* "0"', vocab)
    a = compiled.mask_cache.arrays
    words = (info.vocab_size + 31) // 32
    for e in range(len(a.entry_state)):
        acc, rej, _ = a.counts[e]
        assert a.entry_kind[e] == int(np.argmin([acc, rej, words]))
    assert set(a.entry_kind) <= {KIND_ACCEPTED, KIND_REJECTED, KIND_BITSET}


def test_tail_self_calls_become_loops():
    ir = parse_ebnf('root ::= "\\"" chars\nchars ::= [a-z] chars | "\\""')
    fsms = build_grammar_fsms(ir)
    chars = fsms.rule_names.index("chars")
    assert not [e for e in fsms.fsms[chars].rule_edges if e[1] == chars]
    for text, ok in ((b'abc"', True), (b'"', True), (b'a', False), (b'a"b', False)):
        assert fsms.fsms[chars].accepts(text) is ok
    # the chart no longer nests one item per byte
    compiled, _ = compile_with('root ::= "\\"" chars\nchars ::= [a-z] chars | "\\""', ["a"])
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string('"')
    sizes = []
    for _ in range(50):
        assert m.accept_string("a")
        sizes.append(len(m._parser.items()))
    assert max(sizes) == min(sizes)


def test_tail_calls_keep_non_tail_references():
    # "b" after the self-reference: not a tail call, the nesting is needed (a^n b^n)
    fsm = build_grammar_fsms(parse_ebnf('root ::= "a" root "b" | ""')).fsms[0]
    assert fsm.rule_edges
    sub = FSM(3, 0, frozenset([1, 2]), ((0, 97, 97, 1),), ((1, 0, 2),))  # s ::= "a" s | "a" (as an NFA)
    loop = sub.with_tail_calls_as_loops(0)
    assert not loop.rule_edges
    assert loop.accepts(b"aaa") and not loop.accepts(b"")


def test_trie_subtree_end():
    vocab = ["a", "ab", "abc", "abd", "b", "ba"]
    info = xgr.TokenizerInfo(vocab)
    v = info.vocab_arrays()
    end = TW.trie_subtree_end(v.token_offsets, v.sorted_ids, v.sorted_lcp)
    order = [vocab[t] for t in v.sorted_ids]
    expect = {"a": 4, "ab": 4, "abc": 3, "abd": 4, "b": 6, "ba": 6}
    assert {order[j]: int(end[j]) for j in range(len(order))} == expect


@pytest.mark.parametrize("ebnf", [
    'root ::= "{" ws members? ws "}"\nmembers ::= pair (ws "," ws pair)*\npair ::= str ws ":" ws str\n'
    'str ::= "\\"" [a-z]* "\\""\nws ::= [ ]*',
    'root ::= item+\nitem ::= "<" [a-z]+ ">" | "x"',
])
def test_cached_masks_match_every_token_masks_on_a_word_vocabulary(ebnf):
    vocab = ['{"', '"}', '":', '",', '"', "a", "ab", "b", " ", ' "', ":", ",", "}", "{", "<", ">", "<a", "a>",
             "a><", "x", "xx", "x<", ">x"]
    compiled, _ = compile_with(ebnf, vocab)
    texts = ['{"ab": "b", "a":"a"}', "<ab>x<a>xx"]
    for text in texts:
        m = xgr.GrammarMatcher(compiled)
        for ch in text:
            assert np.array_equal(m.compute_bool_mask(), m._every_token_bool_mask())
            if not m.accept_string(ch):
                break


@pytest.mark.jit_only
def test_bound_kernel_entries_follow_the_argument_layout():
    """`util.bound_kernel` remembers entries per layout key: the same layout gives the same entry;
    a different dtype, a read-only array or a different tuple gives another, and each computes
    with the types it was compiled for."""
    import numba

    from xg2ref.util import bound_kernel

    @numba.njit
    def total(a, pair):
        return a.sum() + pair[0] + pair[1]

    x = np.arange(4, dtype=np.int64)
    one = bound_kernel(total, x, (1, 2))
    assert bound_kernel(total, np.zeros(9, dtype=np.int64), (5, 6)) is one
    assert one(x, (1, 2)) == 9
    floats = bound_kernel(total, x.astype(np.float64), (1, 2))
    frozen = x.copy()
    frozen.flags.writeable = False
    readonly = bound_kernel(total, frozen, (1, 2))
    mixed = bound_kernel(total, x, (1, 2.5))
    assert len({id(one), id(floats), id(readonly), id(mixed)}) == 4
    assert floats(x.astype(np.float64) / 2, (1, 2)) == 6.0 and readonly(frozen, (0, 0)) == 6
    assert mixed(x, (1, 2.5)) == 9.5
