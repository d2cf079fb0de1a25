"""Vocabulary slices (xg2ref/kernels/slices.py, xg2ref/mask/slices.py): the JSON-string slice's
language, the trie of the other tokens, and entries built with a slice equal to entries built by
walking every token."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.kernels import slices as KS
from xg2ref.mask.slices import json_string_dfa, json_string_slice

FORBIDDEN = {0x22, 0x5C, 0x7F}  # `"`, `\` and DEL; and every control character below U+0020


def _allowed(cp: int) -> bool:
    return cp >= 0x20 and cp not in FORBIDDEN and not 0xD800 <= cp <= 0xDFFF


_PREFIXES: set = set()


def _proper_prefixes() -> set:
    """Every proper prefix (1 to 3 bytes) of the UTF-8 encoding of an allowed code point."""
    if not _PREFIXES:
        for cp in range(0x80, 0x110000):
            if _allowed(cp):
                enc = chr(cp).encode("utf-8")
                _PREFIXES.update(enc[:k] for k in range(1, len(enc)))
    return _PREFIXES


def _in_slice(data: bytes) -> bool:
    """The slice's definition, from Python's UTF-8 decoder: whole allowed characters, then
    possibly the first bytes of one more allowed character."""
    for cut in range(len(data), max(len(data) - 4, -1), -1):
        try:
            text = data[:cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
        if all(_allowed(ord(c)) for c in text) and (cut == len(data) or data[cut:] in _proper_prefixes()):
            return True
    return False


def _dfa_reads(data: bytes) -> bool:
    inside = np.zeros(1, dtype=np.bool_)
    KS.slice_members(json_string_dfa(), np.frombuffer(data, dtype=np.uint8).copy(),
                     np.array([0, len(data)], dtype=np.int64), inside)
    return bool(inside[0])


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(max_size=6),
                 st.text(max_size=4).map(lambda t: t.encode("utf-8", "surrogatepass")),
                 st.tuples(st.text(min_size=1, max_size=3), st.integers(0, 3)).map(
                     lambda x: x[0].encode("utf-8", "surrogatepass")[:max(1, len(x[0].encode("utf-8", "surrogatepass"))
                                                                         - x[1])])))
def test_the_dfa_reads_exactly_the_json_string_slice(data):
    assert _dfa_reads(data) == _in_slice(data), data


def test_the_rest_is_a_trie_of_its_own():
    info = xgr.TokenizerInfo([b'"', b"a", b"ab", b'a"', b'a"b', b"\\", b"\\n", b"b", b'b"', b"\x7f", b"\xe2\x82",
                              b"\xe2\x82\xac", b"\xed\xa0\x80", b"}"])
    v = info.vocab_arrays()
    sl = json_string_slice(v)
    tokens = [bytes(v.sorted_bytes[v.sorted_offsets[k]:v.sorted_offsets[k + 1]]) for k in range(len(v.sorted_ids))]
    assert [tokens[k] for k in sl.ids] == [t for t in tokens if _in_slice(t)]
    rest = sl.rest.sorted_ids.tolist()
    assert sorted(rest + sl.ids.tolist()) == list(range(len(tokens)))
    for a, (j, k) in enumerate(zip([None] + rest[:-1], rest)):
        if j is not None:
            shared = 0
            while shared < min(len(tokens[j]), len(tokens[k])) and tokens[j][shared] == tokens[k][shared]:
                shared += 1
            assert sl.rest.sorted_lcp[a] == shared
        under = [b for b in range(a + 1, len(rest)) if tokens[rest[b]].startswith(tokens[k])]
        assert sl.rest.subtree_end[a] == (max(under) + 1 if under else a + 1)


@pytest.mark.jit_only
@pytest.mark.slow
def test_entries_with_the_slice_equal_the_walk_over_every_token():
    """Every class of the builtin JSON grammar and of schemas with strings, built by the batch
    kernel (which takes the slice where a state contains it), against the classifier walking
    all 128k tokens of Llama-3 from Python."""
    info = xgr.TokenizerInfo.from_quicktok("llama3")
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {
        "type": "string", "pattern": "^[a-z\u00e9]+$"}}, "c": {"type": "string", "format": "date"}}}
    used = 0
    for grammar in (xgr.Grammar.builtin_json_grammar(), xgr.Grammar.from_json_schema(json.dumps(schema))):
        compiled = xgr.GrammarCompiler(info, jit=False, cache_enabled=False).compile_grammar(grammar)
        cache = compiled.mask_cache
        clf = cache.classifier
        pairs = np.zeros(2 * KS.MAX_SLICE_PAIRS, dtype=np.int64)
        a, ids = cache.arrays, info.vocab_arrays().sorted_ids
        regular = set(ids.tolist())
        for s in cache.class_representatives.tolist():
            e = int(a.state_entry[s])
            with clf.lease():
                clf.classify(s)  # (fills the rows of s's rule in the pure-state table, let go once all was built)
                used += KS.slice_contained(clf.inputs.slice.dfa, clf.inputs.pure, s, pairs)
                want_acc = {int(ids[j]) for j in clf.accepted()}
                want_unc = set(clf.uncertain().tolist())
            listed = set(a.list_ids[a.list_indptr[e]:a.list_indptr[e + 1]].tolist())
            unc = set(a.unc_sorted[a.unc_indptr[e]:a.unc_indptr[e + 1]].tolist())
            if a.entry_kind[e] == xgr.mask.KIND_ACCEPTED:
                acc = listed
            elif a.entry_kind[e] == xgr.mask.KIND_REJECTED:
                acc = regular - listed - {int(ids[j]) for j in unc}
            else:
                words = a.bitset_words[a.bitset_offset[e]:a.bitset_offset[e] + (info.vocab_size + 31) // 32]
                acc = set(np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little")).tolist())
            assert (acc, unc) == (want_acc, want_unc), compiled.fsms.rule_names[compiled.arrays.state_rule[s]]
    assert used >= 5  # the builtin grammar's four string states, the schema's plain string
