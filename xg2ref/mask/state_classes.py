"""XGrammar-2 §3.6 (the observation behind repetition state compression): states that look alike
for the length of a token share one token-mask cache entry.

A repetition `[a-z]{0,8192}` unrolls to a chain of 8,193 FSM states, and the mask cache would
build one entry per state. Yet an entry only depends on what a token can meet from its state:
the bytes of one token reach at most L bytes ahead (L = the longest token), so two states whose
machines agree for the next L steps get identical entries. All states of the chain but the last
L or so agree, and one entry serves them all.

"Agree for d steps" is d-step bisimilarity, computed by partition refinement on the whole
grammar's FSM arrays:

    class_0(s)   = (rule of s, s final?)        (states of rules that cannot share: their own class)
    class_d+1(s) = class_d(s) with, in edge order, (lo, hi, class_d(dst)) of every byte edge and
                   (rule, class_d(dst)) of every rule edge

Two states with equal class_L+1 read every token alike: the same bytes lead to states of equal
class, finality (where the rule may end and context expansion takes over, which depends on the
rule only) is met at the same depths, and a rule edge leads into the same rule. Each round
computes a 64-bit hash of the tuple and then checks every state against the first state of its
hash: a mismatch (a hash collision, or equal edges listed in another order) gives the state a
class of its own, so equal classes always mean equal structure, never only equal hashes. The
refinement stops early once a round splits no class.

A rule edge to a nullable rule can be crossed without reading a byte, so L steps might cover
fewer than L bytes: the states of rules with such edges never share. Token edges do not matter:
entries are about bytes, and token sets are OR-ed in per state at run time.

Repetitions above xg2ref/grammar/repetition.py's threshold are not unrolled at all (§3.6: the
parser counts the copies); this sharing serves the shorter ones that still are. Sharing across
grammars is xg2ref/mask/cross_grammar.py.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..fsm.build import FSMArrays
from ..kernels import state_classes as KS


def state_classes(fsm: FSMArrays, steps: int, shareable_rules: np.ndarray, lo: int = 0,
                  hi: Optional[int] = None) -> np.ndarray:
    """class_steps+1 of states lo..hi-1 (int64[hi - lo]; all states by default): states with
    equal classes agree for `steps` steps (module docstring). `shareable_rules[r]` is False for
    rules whose states must keep classes of their own. Classes never join states of two rules,
    so a range of whole rules is refined alone: its classes are those of the whole run."""
    hi = len(fsm.state_rule) if hi is None else hi
    rule = fsm.state_rule.astype(np.int64)
    labels = rule * 2 + fsm.is_final.astype(np.int64)
    alone = ~shareable_rules[fsm.state_rule]
    labels[alone] = 2 * len(fsm.rule_start) + np.flatnonzero(alone)
    count = len(np.unique(labels[lo:hi]))
    hashes = np.zeros(len(labels), dtype=np.uint64)
    nxt = np.zeros(len(labels), dtype=np.int64)
    for _ in range(steps + 1):
        with np.errstate(over="ignore"):  # 64-bit wrap-around is the point (plain Python runs)
            KS.hash_round(fsm, labels, hashes, lo, hi)
        order = lo + np.argsort(hashes[lo:hi], kind="stable")
        new_count = KS.exact_labels(fsm, labels, hashes, order, nxt)
        labels, nxt = nxt, labels
        if new_count == count:
            break  # no class split: every later round gives the same partition
        count = new_count
    return labels[lo:hi]


def shareable_rules(fsm: FSMArrays) -> np.ndarray:
    """bool[R]: rules none of whose rule edges leads into a nullable rule."""
    ok = np.ones(len(fsm.rule_start), dtype=np.bool_)
    src = np.repeat(np.arange(len(fsm.state_rule)), np.diff(fsm.ref_indptr))
    ok[fsm.state_rule[src[fsm.rule_nullable[fsm.ref_rule]]]] = False
    return ok
