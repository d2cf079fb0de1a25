"""Numba kernels over flat numpy arrays, in pipeline order:

- `chart`: the Earley chart's flat arrays, the dedup table, growth (XGrammar-2 §3.4).
- `earley`: the Earley recognizer (XGrammar-2 §3.4, App. D Table 6 left half): `predict`,
  `scan`, `complete` with Leo items for right recursion (`leo_top`), LOOP for counted
  repetitions (§3.6), `close_set`, `advance_byte`.
- `token_reads`: reading bytes and whole tokens (the TOKEN rule), the whole-vocabulary check.
- `trie_walk`: the byte-sorted vocabulary as a trie (XGrammar §3.3): prefix reuse and subtree
  skipping, shared by every walk over many tokens.
- `pure_walk`: the pure-state table and its DFA walk; the lookahead filter walk.
- `context_expansion`: CONTEXT, ACCEPT-CTX and FOLLOW1 (XGrammar §3.2, Alg. 2).
- `classify`: ACCEPT / REJECT / UNCERTAIN for every token of a state: building a mask-cache
  entry (XGrammar §3.1, XGrammar-2 §3.4).
- `mask_fill`: the mask from the entries at run time (XGrammar Alg. 1, Table 6 right half).
- `handles`: the per-token kernels (fill, accept) called with one int64 array per group of
  arrays instead of every array (Numba unboxes each argument array on each call).
- `slices`: vocabulary slices a state reads whole (the JSON-string slice), decided on the
  product automaton instead of token by token.
- `cross_grammar`: XGrammar-2 §3.3 inside the entry kernel: a hit's acc0 merged, a miss's record.
- `entry_build`: whole entries in one call per batch (seed, classify, store in the smallest form
  of XGrammar §3.1, publish), and the fill that builds the entries it misses (XGrammar-2 §3.5).
- `build_order`: which entries the background builder builds first (breadth first from where
  the matcher stands, XGrammar-2 §3.5).
- `apply_bitmask`: the bitmask applied to logits.

Under the module names xgrammar 0.2.8 uses, its per-backend bitmask entry points
(`apply_token_bitmask_inplace_cpu`, `_cuda`, `_triton`, `_torch_compile`, `_torch`: each
re-exports the function of that name from xg2ref/apply_mask.py)."""

import glob as _glob
import hashlib as _hashlib
import os as _os


def _drop_stale_caches() -> None:
    """Numba keys a cached kernel by its own file's timestamp, not by the files of the kernels it
    calls and compiles into itself: an edit to `pure_walk.py` would leave `entry_build.py`'s cached
    machine code running the old walk. So the kernels' sources are fingerprinted together, and
    the cache beside them (`__pycache__`, where `cache=True` writes it in a source tree) is
    dropped when the fingerprint changes. An installed package gets new files, and new stamps,
    with every version; a cache elsewhere (NUMBA_CACHE_DIR, an unwritable tree) is left alone."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    cache = _os.path.join(here, "__pycache__")
    digest = _hashlib.sha1()
    for path in sorted(_glob.glob(_os.path.join(here, "*.py"))):
        with open(path, "rb") as f:
            digest.update(_os.path.basename(path).encode() + b"\0" + f.read())
    stamp = _os.path.join(cache, "kernels.fingerprint")
    try:
        with open(stamp, encoding="ascii") as f:
            if f.read() == digest.hexdigest():
                return
    except OSError:
        pass
    try:
        _os.makedirs(cache, exist_ok=True)
    except OSError:
        return
    if not _os.access(cache, _os.W_OK):
        return
    for path in _glob.glob(_os.path.join(cache, "*.nbi")) + _glob.glob(_os.path.join(cache, "*.nbc")):
        try:
            _os.remove(path)
        except OSError:  # another process dropped it first
            pass
    try:
        with open(stamp, "w", encoding="ascii") as f:
            f.write(digest.hexdigest())
    except OSError:
        pass


_drop_stale_caches()
