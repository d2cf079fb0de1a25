"""Context expansion's union chart (kernels/context_expansion.py `union_context`) against a
plain reference: one chart per occurrence, climbing pair by pair (XGrammar §3.2, Algorithm 2).

The union chart reads the rests of one rule in sorted order, rolled back to the bytes each
shares with the one before (ROLLBACK); the answers must be those of a fresh chart per rest
and those of the reference, whatever the order of the questions.
"""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.compiler import compile_ir_grammar
from xg2ref.grammar.grammar import Grammar
from xg2ref.grammar.printer import print_grammar
from xg2ref.kernels import context_expansion as CX
from xg2ref.kernels import earley as K
from xg2ref.oracle.strategies import grammars
from hypothesis_budget import examples

SETTINGS = settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
INFO = xgr.TokenizerInfo(["a", "b", "c"])


def reference_context(fsm, occ_indptr, occ_dst, rule: int, rest: bytes) -> bool:
    """Does some occurrence of `rule`, climbing where its parent may end, read all of `rest`?
    Pairs (C, q): C has just ended after q bytes; each occurrence `src -C-> dst` is read from
    [0, 1, D -> dst] in a chart of its own."""
    chart = K.new_chart(1 << 14, 64, 1 << 12)
    todo, seen = [(rule, 0)], {(rule, 0)}
    while todo:
        c, q0 = todo.pop()
        for o in range(occ_indptr[c], occ_indptr[c + 1]):
            dst = int(occ_dst[o])
            parent = int(fsm.state_rule[dst])
            assert CX.init_chart_at_state(fsm, chart, dst, K.FREE_BASE) == K.OK
            alive = True
            for q in range(q0, len(rest)):
                if CX.start_rule_may_end(fsm, chart) and (parent, q) not in seen:
                    seen.add((parent, q))
                    todo.append((parent, q))
                status = K.advance_byte(fsm, chart, rest[q])
                assert status in (K.OK, K.EMPTY)
                if status == K.EMPTY:
                    alive = False
                    break
            if alive:
                return True
    return False


def _union(fsm, context, chart, work, marks, rule, rests, forget):
    """The union chart's answers to CONTEXT(rule, rest) for `rests` laid out in one byte array."""
    token_bytes = np.frombuffer(b"".join(rests), dtype=np.uint8)
    out, at = [], 0
    for r in rests:
        if forget:
            work[CX.CTX_RULE] = -1
        status, ok, far = CX.union_context(fsm, chart, context, work, marks, token_bytes, rule, at, at + len(r))
        assert status == K.OK
        assert at < far <= at + len(r) or (ok and far == at + len(r)) or far == at
        out.append(bool(ok))
        at += len(r)
    return out


@SETTINGS
@given(grammars(max_rules=4), st.lists(st.binary(min_size=1, max_size=5).map(
    lambda b: bytes(97 + x % 3 for x in b)), min_size=1, max_size=12))
def test_union_chart_answers_equal_one_chart_per_occurrence(ir, rests):
    compiled = compile_ir_grammar(Grammar.from_ir(ir), INFO)
    clf = compiled.mask_cache.classifier
    fsm, context = clf.fsm, clf.inputs.context
    chart = K.new_chart(1 << 14, 64, 1 << 12)
    work = np.full(CX.CTX_CLIMBED + 8, -1, dtype=np.int64)
    marks = np.zeros(len(clf.occ_indptr), dtype=np.int64)
    for ordered in (sorted(rests), rests):
        for rule in range(len(clf.occ_indptr) - 1):
            want = [reference_context(fsm, clf.occ_indptr, clf.occ_dst, rule, r) for r in ordered]
            rolled = _union(fsm, context, chart, work, marks, rule, ordered, forget=False)
            fresh = _union(fsm, context, chart, work, marks, rule, ordered, forget=True)
            assert rolled == fresh == want, (print_grammar(ir), rule, ordered)


def test_a_climb_after_a_dfa_step_adds_its_parents():
    """The set after the first "a" is built by the DFA step, which leaves the dedup table to the
    set before; root ends there and climbs into it, so its continuation must still be added
    (it was lost once, and "aa" came back rejected)."""
    compiled = xgr.GrammarCompiler(INFO, cache_enabled=False).compile_grammar('root ::= ("" | "a" | root) "a"')
    clf = compiled.mask_cache.classifier
    rests = [b"a", b"aa", b"aaa", b"ab", b"b"]
    want = [reference_context(clf.fsm, clf.occ_indptr, clf.occ_dst, 0, r) for r in rests]
    assert want == [True, True, True, False, False]
    chart = K.new_chart()
    work = np.full(CX.CTX_CLIMBED + 8, -1, dtype=np.int64)
    marks = np.zeros(len(clf.occ_indptr), dtype=np.int64)
    for forget in (False, True):
        assert _union(clf.fsm, clf.inputs.context, chart, work, marks, 0, rests, forget) == want
