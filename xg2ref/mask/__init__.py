"""The adaptive token-mask cache (XGrammar-2 §3.4, App. D Table 6 right half; XGrammar §3.1-§3.2),
one module per mechanism, in pipeline order:

- `state_classes`: states that read every token alike share one entry (XGrammar-2 §3.6's
  observation; d-step bisimilarity, the rounds in kernels/state_classes.py).
- `classifier`: `Classifier`, which runs the classify kernel (ACCEPT / REJECT / UNCERTAIN,
  kernels/classify.py, with context expansion of XGrammar §3.2) for one state after another.
- `slices`: the JSON-string slice of each vocabulary and the trie of the other tokens.
- `cross_grammar`: the cross-grammar cache (XGrammar-2 §3.3, Fig. 4: PERFECT / PARTIAL / MISS).
- `entries`: how entries are stored (accepted / rejected / bitset, XGrammar §3.1 Fig. 5), held at
  capacity in `EntryStore` for kernels/entry_build.py to append to.
- `jit`: `JitSchedule`, which entries are built when (XGrammar-2 §3.5: UNBUILT, the cost model).
- `background`: the entries built beside decoding, on the process's builder thread (§3.5), and
  the contract between that writer and the fills that read without locking.
- `counted`: `CountedZones`, a counted repetition's entries per zone of counts (XGrammar-2 §3.6,
  run-time half).
- `cache`: `AdaptiveTokenMaskCache`, building entries and the run-time fill (XGrammar Alg. 1,
  kernels/mask_fill.py).
"""

from .cache import AdaptiveTokenMaskCache, BuildPlan, GrammarFacts
from .classifier import MAX_PURE_ROWS, Classifier, VocabFacts, rule_occurrences, vocab_facts
from .counted import CountedZones, shallow_counted_rules
from .cross_grammar import CrossGrammarCache, IndexSet, PoolEntry, PoolStats, PoolView
from .entries import (KIND_ACCEPTED, KIND_BITSET, KIND_NAMES, KIND_REJECTED, NO_ENTRY, UNBUILT, CacheStats,
                      MaskCacheArrays, pack_ids)
from .jit import AUTO_EAGER_MAX, AUTO_EAGER_SHARE, CONTEXT_WEIGHT, MIN_EAGER_COST, SECONDS_PER_COST, JitSchedule
from .state_classes import shareable_rules

__all__ = [
    "AdaptiveTokenMaskCache", "BuildPlan", "GrammarFacts", "Classifier", "VocabFacts", "vocab_facts", "rule_occurrences", "MAX_PURE_ROWS",
    "shallow_counted_rules", "CountedZones", "JitSchedule", "CrossGrammarCache", "IndexSet", "PoolEntry", "PoolStats", "PoolView",
    "KIND_ACCEPTED", "KIND_REJECTED", "KIND_BITSET", "KIND_NAMES", "UNBUILT", "NO_ENTRY", "CacheStats",
    "MaskCacheArrays", "pack_ids", "AUTO_EAGER_MAX", "AUTO_EAGER_SHARE", "MIN_EAGER_COST", "SECONDS_PER_COST",
    "CONTEXT_WEIGHT",
    "shareable_rules",
]
# (the function `state_classes` stays in its module: the package's name `state_classes` is the module)
