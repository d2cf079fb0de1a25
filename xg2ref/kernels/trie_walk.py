"""XGrammar §3.3 (the byte-sorted vocabulary, prefix reuse and rollback): the vocabulary trie
walk shared by every kernel that runs many tokens through the Earley chart.

The tokens are visited in byte order, so the tokens under a prefix are contiguous (a trie laid
out flat). Two savings follow, and every walk (`classify.classify_tokens` building entries,
`token_reads.fill_token_mask` checking a whole vocabulary, `mask_fill.check_candidates`
checking a cache entry's uncertain tokens) makes both through the helpers here:

    TRIE-SHARE  token t shares lcp bytes with the token read before it
                |-  t reuses the Earley sets of those bytes (`reuse_sets`: the chart is its own
                    history, rolling back is lowering the set count)
    TRIE-SKIP   a prefix t[:L] was rejected and the next token shares at least L bytes
                |-  that token is rejected unread (`under_rejected_prefix`); when t itself is
                    the rejected prefix, its whole subtree is jumped (`next_after_rejected`,
                    through `subtree_end`)

The lcp with the previous token comes from the sorted vocabulary's `sorted_lcp` when the walk
visits consecutive tokens (`shared_with_previous`), or is measured (`common_prefix`) when it
visits a subset (the candidates of `check_candidates`).

What each walk does with a token in between (the whole Earley step, a pure-state DFA walk, the
SELF-LOOP test, context expansion) is the walk's own: `classify_tokens` also keeps per-byte
facts (`comp`) and the pure walk's states along the shared prefix, so the loops themselves are
not merged into one; they share these steps.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .earley import META_N_SETS

NO_FAIL = 0  # fail_len when no prefix is rejected


class TrieArrays(NamedTuple):
    """The byte-sorted vocabulary as a trie (n tokens; sorted position j is token j's "id").

    token_bytes : uint8[...]      the tokens' bytes, in sorted order
    token_offsets : int64[n + 1]  token j is token_bytes[token_offsets[j]:token_offsets[j + 1]]
    sorted_ids : int32[n]         the id of sorted token j in `token_offsets`
    sorted_lcp : int32[n]         bytes token j shares with token j - 1
    subtree_end : int64[n]        first sorted index after j not under token j (`trie_subtree_end`)
    """

    token_bytes: np.ndarray
    token_offsets: np.ndarray
    sorted_ids: np.ndarray
    sorted_lcp: np.ndarray
    subtree_end: np.ndarray


@njit(cache=True, _nrt=False)
def shared_with_previous(sorted_lcp, j, j_start):
    """TRIE-SHARE: the bytes sorted token j shares with the token visited before it, when the
    walk visits consecutive sorted tokens from j_start on (0 for the first)."""
    return sorted_lcp[j] if j > j_start else 0


@njit(cache=True, _nrt=False)
def common_prefix(token_bytes, a_begin, a_len, b_begin, b_len):
    """The bytes two tokens share, for a walk over a subset of the sorted vocabulary (whose
    neighbours' lcp is not tabulated)."""
    limit = a_len if a_len < b_len else b_len
    n = 0
    while n < limit and token_bytes[a_begin + n] == token_bytes[b_begin + n]:
        n += 1
    return n


@njit(cache=True, _nrt=False)
def under_rejected_prefix(lcp, fail_len):
    """TRIE-SKIP: the token shares the rejected prefix t[:fail_len] of the token visited before
    it (fail_len NO_FAIL: nothing rejected)."""
    return fail_len != NO_FAIL and lcp >= fail_len


@njit(cache=True, _nrt=False)
def next_after_rejected(subtree_end, j, length, fail_len):
    """The next sorted token to visit once token j (of `length` bytes) is rejected at prefix
    t[:fail_len]: past its whole trie subtree when token j is itself the rejected prefix,
    else j + 1."""
    if length == fail_len and subtree_end[j] > j + 1:
        return subtree_end[j]
    return j + 1


@njit(cache=True, _nrt=False)
def reuse_sets(chart, n_sets0, lcp):
    """TRIE-SHARE on the chart: keep the sets of the (at most) lcp bytes the token shares with
    the token read before it, after the n_sets0 sets the walk started from. Returns the
    number of bytes kept (the token is read on from there)."""
    depth = chart.meta[META_N_SETS] - n_sets0
    common = lcp if lcp < depth else depth
    chart.meta[META_N_SETS] = n_sets0 + common
    return common


@njit(cache=True)  # allocates its result: needs Numba's reference counting
def trie_subtree_end(token_offsets, sorted_ids, sorted_lcp):
    """end[j] = first sorted index after j whose token does not start with token j's bytes.

    In byte order the tokens that extend token j follow it contiguously, and token i (of L
    bytes) is a prefix of the next token exactly when L <= the next LCP. A stack holds the
    chain of tokens that are prefixes of the current one, shortest at the bottom.
    """
    n = sorted_ids.shape[0]
    end = np.empty(n, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    top = 0
    for j in range(n):
        while top > 0:
            tid = sorted_ids[stack[top - 1]]
            if token_offsets[tid + 1] - token_offsets[tid] <= sorted_lcp[j]:
                break
            end[stack[top - 1]] = j
            top -= 1
        stack[top] = j
        top += 1
    for q in range(top):
        end[stack[q]] = n
    return end
