"""Vocabulary slices, per vocabulary (kernels/slices.py has the rules): the JSON-string slice,
the tokens that could sit whole inside a JSON string, and the trie of the other tokens.

The slice's language is every byte string that a JSON string's content may start with: UTF-8
encodings of the code points U+0020 to U+10FFFF other than `"`, `\\` and U+007F (surrogates
have no UTF-8 encoding), then possibly the first bytes of one more. On the Llama-3 vocabulary
about 96% of the tokens are in it, and a string state that contains it walks the other 4%.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..kernels import slices as KS
from ..kernels import trie_walk as TW
from ..tokenizer_info import VocabArrays
from ..util import per_vocabulary

# the DFA's states: at a character boundary, or inside a character with what its next byte may be
_BOUNDARY, _CONT1, _CONT2, _CONT3, _E0, _ED, _F0, _F4 = range(8)


def json_string_dfa() -> np.ndarray:
    """int32[8, 256]: the JSON-string slice's DFA (every state accepting, -1 for no edge)."""
    nxt = np.full((8, 256), -1, dtype=np.int32)
    for b in range(0x20, 0x7F):
        if b not in (0x22, 0x5C):  # `"` and `\`
            nxt[_BOUNDARY, b] = _BOUNDARY
    nxt[_BOUNDARY, 0xC2:0xE0] = _CONT1
    nxt[_BOUNDARY, 0xE0] = _E0
    nxt[_BOUNDARY, 0xE1:0xED] = _CONT2
    nxt[_BOUNDARY, 0xED] = _ED
    nxt[_BOUNDARY, 0xEE:0xF0] = _CONT2
    nxt[_BOUNDARY, 0xF0] = _F0
    nxt[_BOUNDARY, 0xF1:0xF4] = _CONT3
    nxt[_BOUNDARY, 0xF4] = _F4
    nxt[_CONT1, 0x80:0xC0] = _BOUNDARY
    nxt[_CONT2, 0x80:0xC0] = _CONT1
    nxt[_CONT3, 0x80:0xC0] = _CONT2
    nxt[_E0, 0xA0:0xC0] = _CONT1  # no overlong three-byte forms
    nxt[_ED, 0x80:0xA0] = _CONT1  # no surrogates
    nxt[_F0, 0x90:0xC0] = _CONT2  # no overlong four-byte forms
    nxt[_F4, 0x80:0x90] = _CONT2  # nothing past U+10FFFF
    return nxt


class VocabSlice(NamedTuple):
    """A slice of one vocabulary (m regular tokens, in sorted positions).

    dfa : int32[k, 256]     the slice's language (kernels/slices.py)
    ids : int32[...]        the sorted positions of the tokens in the slice, ascending
    rest : TrieArrays       the other tokens as a trie: its `sorted_ids` are their sorted
                            positions, its lcp and subtree ends their own
    """

    dfa: np.ndarray
    ids: np.ndarray
    rest: TW.TrieArrays


_SLICES: dict = {}  # id(sorted_offsets) -> (weak reference to it, VocabSlice)


def json_string_slice(vocab: VocabArrays) -> VocabSlice:
    """The JSON-string slice of a vocabulary, computed once (its arrays are read-only)."""
    return per_vocabulary(_SLICES, vocab, lambda: _json_string_slice(vocab))


def _json_string_slice(vocab: VocabArrays) -> VocabSlice:
    dfa = json_string_dfa()
    inside = np.zeros(len(vocab.sorted_ids), dtype=np.bool_)
    KS.slice_members(dfa, vocab.sorted_bytes, vocab.sorted_offsets, inside)
    rest = np.flatnonzero(~inside).astype(np.int32)
    # the bytes each rest token shares with the rest token before it
    lcp_all = vocab.sorted_lcp.astype(np.int64)
    lcp = np.zeros(len(rest), dtype=np.int32)
    if len(rest) > 1:
        lcp[1:] = _range_min(lcp_all, rest)
    subtree_end = TW.trie_subtree_end(vocab.sorted_offsets, rest, lcp)
    trie = TW.TrieArrays(vocab.sorted_bytes, vocab.sorted_offsets, rest, lcp, subtree_end)
    return VocabSlice(dfa, np.flatnonzero(inside).astype(np.int32), trie)


def _range_min(lcp: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """For consecutive rest positions a < b: min(lcp[a + 1 .. b]), the bytes tokens a and b share."""
    starts = np.concatenate([rest[:-1] + 1, [rest[-1] + 1]])  # segment k: lcp[rest[k] + 1 : rest[k + 1] + 1]
    return np.minimum.reduceat(np.concatenate([lcp, [0]]), starts)[:len(rest) - 1].astype(np.int32)
