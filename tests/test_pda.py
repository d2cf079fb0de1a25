"""XGrammar-1's pushdown automaton (xg2ref/baselines/pda/): its masks against the Earley engine and
the brute-force oracle in every switch configuration, node merging against the unmerged
machines, the persistent stack's invariants, and each refusal."""

import functools
import random
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.baselines.pda import (PDACompiler, PDAMatcher, UnsupportedByBaseline, build_machines, merge_nodes,
                                  prepare_ir)
from xg2ref.baselines.pda.machines import left_recursive_cycle
from xg2ref.compiler import compile_ir_grammar
from xg2ref.exceptions import GrammarLimitError, MatcherError
from xg2ref.grammar.grammar import Grammar
from xg2ref.grammar.printer import print_grammar
from xg2ref.oracle.brute_force import brute_force_mask
from xg2ref.oracle.recognizer import Recognizer
from xg2ref.oracle.strategies import byte_strings, grammars, sentences, vocabularies
from xg2ref.suite import SUITE_DIR, ebnf_case_names, load_cases

from hypothesis_budget import examples

SETTINGS = settings(max_examples=examples(120), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
# Random grammars are often ambiguous enough that the stacks grow exponentially (XGrammar-2 §3.4):
# past this many at one position the example is dropped (test_a_stack_blow_up_stops_at_max_stacks
# checks the limit itself).
MAX_STACKS = 2_000
CONFIGS = [dict(stage=stage, mask_cache=cache, inline=inline, context_expansion=ctx)
           for stage in ("nfa", "merged", "dfa") for cache in (False, True)
           for inline, ctx in (("none", False), ("xg1", True), ("xg2ref", True))]


def pda_or_skip(info, grammar, **options):
    """The grammar compiled for the PDA; the example is dropped when XGrammar-1 could not run it
    (left recursion) or its stacks blow up."""
    try:
        return PDACompiler(info, max_stacks=MAX_STACKS, **options).compile_grammar(grammar)
    except (UnsupportedByBaseline, GrammarLimitError):
        assume(False)


def dropped_on_blow_up(test):
    """Drop a hypothesis example whose stacks pass MAX_STACKS on the way."""
    @functools.wraps(test)
    def run(*args, **kwargs):
        try:
            test(*args, **kwargs)
        except GrammarLimitError:
            assume(False)
    return run


def walk_and_compare(pda: PDAMatcher, earley, rng: random.Random, steps: int, check=None) -> None:
    """A random walk over the allowed tokens, with rollbacks: the masks agree at every step."""
    taken = 0
    for step in range(steps):
        have, want = pda.compute_bool_mask(), earley.compute_bool_mask()
        assert np.array_equal(have, want), (step, np.flatnonzero(have ^ want))
        if check is not None:
            check(have)
        allowed = np.flatnonzero(want)
        if len(allowed) == 0 or pda.is_terminated():
            break
        if taken and rng.random() < 0.25:
            n = rng.randint(1, taken)
            pda.rollback(n)
            earley.rollback(n)
            taken -= n
            continue
        t = int(rng.choice(list(allowed)))
        assert pda.accept_token(t) and earley.accept_token(t)
        taken += 1
        if pda.is_terminated():
            assert earley.is_terminated()
            pda.rollback(1)
            earley.rollback(1)
            taken -= 1
        assert pda.is_completed() == earley.is_completed()


@SETTINGS
@given(grammars(), vocabularies(b"abc", 12), st.sampled_from(CONFIGS), st.integers(0, 2**16))
@dropped_on_blow_up
def test_masks_match_earley_and_the_oracle_along_walks(ir, vocab_spec, config, seed):
    vocab, stop_ids, _ = vocab_spec
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop_ids))
    grammar = Grammar.from_ir(ir)
    pda = PDAMatcher(pda_or_skip(info, grammar, **config))
    earley = xgr.GrammarMatcher(compile_ir_grammar(grammar, info))
    oracle = Recognizer(ir)
    rng = random.Random(seed)
    prefix = sentences(ir, rng) or b""
    prefix = prefix[: rng.randint(0, len(prefix))]
    if oracle.is_prefix(prefix):
        assert pda.accept_string(prefix) and earley.accept_string(prefix)
        want = brute_force_mask(oracle, prefix, vocab, stop_token_ids=stop_ids,
                                special_token_ids=info.special_token_ids, vocab_size=info.vocab_size)
        assert np.array_equal(pda.compute_bool_mask(), want), (print_grammar(ir), prefix)
    walk_and_compare(pda, earley, rng, 12)


@SETTINGS
@given(grammars(lookaheads=True), vocabularies(b"abc", 12), st.sampled_from(["nfa", "merged", "dfa"]),
       st.booleans(), st.integers(0, 2**16))
@dropped_on_blow_up
def test_lookahead_filters_keep_the_masks_exact(ir, vocab_spec, stage, context, seed):
    """Lookahead assertions (which never change a language) prune the entries' uncertain tokens
    with the switch on; the masks stay the Earley engine's."""
    vocab, stop_ids, _ = vocab_spec
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop_ids))
    grammar = Grammar.from_ir(ir)
    pda = PDAMatcher(pda_or_skip(info, grammar, stage=stage, lookahead=True, context_expansion=context))
    earley = xgr.GrammarMatcher(compile_ir_grammar(grammar, info))
    walk_and_compare(pda, earley, random.Random(seed), 12)


@SETTINGS
@given(grammars(), byte_strings(b"abc", 6), st.sampled_from(["nfa", "merged", "dfa"]))
@dropped_on_blow_up
def test_prefix_verdicts_match_the_oracle(ir, data, stage):
    info = xgr.TokenizerInfo([b"a"])
    compiled = pda_or_skip(info, Grammar.from_ir(ir), stage=stage, mask_cache=False)
    matcher, oracle = PDAMatcher(compiled), Recognizer(ir)
    assert matcher.accept_string(data) == oracle.is_prefix(data), (print_grammar(ir), data)
    if oracle.is_prefix(data):
        assert matcher.is_completed() == oracle.is_sentence(data)


@SETTINGS
@given(grammars(refs=False), st.lists(byte_strings(b"abc", 6), max_size=12), st.integers(0, 2**16))
def test_node_merging_keeps_each_rules_language(ir, strings, seed):
    ir = prepare_ir(ir, "none")
    nfa, merged = build_machines(ir, "nfa").fsms.fsms, build_machines(ir, "merged").fsms.fsms
    rng = random.Random(seed)
    strings = list(strings) + [s for s in (sentences(ir, rng) for _ in range(4)) if s is not None]
    for a, b in zip(nfa, merged):
        assert b.num_states <= a.num_states and b.num_edges <= a.num_edges
        for s in strings:
            assert a.accepts(s) == b.accepts(s), s
        again = merge_nodes(b)
        assert (again.num_states, again.num_edges) == (b.num_states, b.num_edges)


def test_node_merging_merges_what_the_paper_describes():
    # "ab" | "ac" as Thompson builds it: a choice of two paths joined by ε edges
    fsm = build_machines(prepare_ir(Grammar.from_ebnf('root ::= "ab" | "ac"').ir, "none"), "nfa").fsms.fsms[0]
    merged = merge_nodes(fsm)
    assert not merged.eps_edges and merged.num_states < fsm.num_states
    assert merged.num_states == 3  # start -a-> one state -[bc]-> the end
    assert all(merged.accepts(s) == fsm.accepts(s) for s in (b"ab", b"ac", b"a", b"b", b"abc", b""))


@SETTINGS
@given(grammars(), vocabularies(b"abc", 8), st.lists(st.integers(0, 2**16), min_size=1, max_size=20))
@dropped_on_blow_up
def test_the_stack_is_restored_exactly_by_rollback(ir, vocab_spec, choices):
    vocab, stop_ids, _ = vocab_spec
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop_ids))
    matcher = PDAMatcher(pda_or_skip(info, Grammar.from_ir(ir), stage="nfa", mask_cache=False))
    stack = matcher.stack
    seen = [(stack.stacks(), stack.tree())]
    for c in choices:
        allowed = [t for t in np.flatnonzero(matcher.compute_bool_mask()) if t not in stop_ids]
        if not allowed:
            break
        assert matcher.accept_token(int(allowed[c % len(allowed)]))
        seen.append((stack.stacks(), stack.tree()))
        # every configuration's frames were made before it: none dangles after a rollback
        live = int(stack.st.hist_nodes[stack.records])
        k = stack.records
        tops = stack.st.tops_parent[stack.st.hist_tops[0]:stack.st.hist_tops[k]]
        assert (tops < live).all()
    while len(seen) > 1:
        seen.pop()
        matcher.rollback(1)
        assert (stack.stacks(), stack.tree()) == seen[-1]
    matcher.reset()
    assert (stack.stacks(), stack.tree()) == seen[0]


def test_the_stacks_read_as_xgrammar_fig3_draws_them():
    info = xgr.TokenizerInfo([b"a"])
    grammar = 'root ::= "[" value "]"\nvalue ::= "\\"" [a-z]* "\\"" | "[" value "]"'
    matcher = PDAMatcher(PDACompiler(info, stage="dfa", mask_cache=False).compile_grammar(grammar))
    assert matcher.accept_string('["a')
    stacks = matcher.stack.stacks()
    # inside the string of `value`, called from root: (state in value, return state in root)
    assert stacks and all(len(s) == 2 for s in stacks)
    frame = matcher.stack.frame(int(matcher.stack.st.tops_parent[matcher.stack.st.hist_tops[matcher.stack.records - 1]]))
    assert frame is not None and frame.below is None


@pytest.mark.parametrize("name", ["recursion.ebnf"])
def test_left_recursion_is_refused_naming_the_rule(name):
    text = (SUITE_DIR / name).read_text()
    with pytest.raises(UnsupportedByBaseline, match="left-recursive") as err:
        PDACompiler(xgr.TokenizerInfo([b"a"]), mask_cache=False).compile_grammar(text)
    assert any(rule in str(err.value) for rule in ("sum-expr", "product", "'s'"))


@pytest.mark.parametrize("grammar, words", [
    ('root ::= a "x"\na ::= b | "y"\nb ::= c "z"\nc ::= "" | a', "left-recursive"),
    ('root ::= x "c"\nx[max_tokens=2] ::= [ab]*', "budget"),
    ('root ::= "a" Token(3) "b"', "whole tokens"),
])
def test_what_xgrammar1_could_not_run_is_refused(grammar, words):
    info = xgr.TokenizerInfo([b"a", b"b", b"x", b"y", b"z"])
    with pytest.raises(UnsupportedByBaseline, match=words):
        PDACompiler(info, mask_cache=False).compile_grammar(grammar)


def test_the_left_recursion_check_passes_right_recursion():
    ir = prepare_ir(Grammar.from_ebnf('root ::= "a" root | ""\nr ::= "b" | root r').ir, "none")
    assert left_recursive_cycle(build_machines(ir, "nfa").fsms) is None


@pytest.mark.parametrize("stage", ["nfa", "dfa"])
def test_a_stack_blow_up_stops_at_max_stacks(stage):
    # every "(" may be read by rule a or by rule b: 2^n distinct stacks after n bytes
    grammar = 'root ::= a | b\na ::= "(" root ")" | ""\nb ::= "(" root "]" | ""'
    compiled = PDACompiler(xgr.TokenizerInfo([b"("]), stage=stage, mask_cache=False,
                           max_stacks=1_000).compile_grammar(grammar)
    matcher = PDAMatcher(compiled)
    began = time.perf_counter()
    with pytest.raises(GrammarLimitError, match="max_stacks"):
        for _ in range(40):
            matcher.accept_string("(")
    assert time.perf_counter() - began < 10
    # the matcher is still usable: the failed byte was not committed
    assert matcher.num_stacks <= 1_000 and matcher.accept_string("") is True


@pytest.mark.parametrize("name", ebnf_case_names())
def test_suite_grammars_walk_like_earley(name):
    case = load_cases([name])[0]
    grammar = case.grammar()
    text = "".join(case.samples) + case.text
    vocab = sorted({bytes([b]) for b in text.encode() if 32 <= b < 127} | {b"\n", b" ", b"true", b"null", b'":',
                                                                          b", ", b"ab", b"12", b"</s>"})
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[vocab.index(b"</s>")])
    if name == "recursion":
        with pytest.raises(UnsupportedByBaseline, match="left-recursive"):
            PDACompiler(info).compile_grammar(grammar)
        return
    earley_compiled = xgr.GrammarCompiler(info).compile_grammar(grammar)
    for config in (dict(stage="nfa", mask_cache=False), dict(stage="merged"), dict(stage="dfa", inline="xg2ref")):
        pda = PDAMatcher(PDACompiler(info, **config).compile_grammar(grammar))
        earley = xgr.GrammarMatcher(earley_compiled)
        for seed in range(3):
            pda.reset()
            earley.reset()
            walk_and_compare(pda, earley, random.Random(seed), 25)


def test_the_cache_counts_what_xgrammar_reports():
    info = xgr.TokenizerInfo([b'"', b"a", b'a"', b'",', b"1", b"[", b"]", b",", b" ", b'":'])
    compiled = PDACompiler(info, stage="dfa").compile_builtin_json_grammar()
    s = compiled.mask_cache.stats
    assert s.entries > 0 and s.accepted + s.rejected + s.uncertain == s.entries * 10
    assert 0 < s.read_share <= 1
    # adaptive storage: entries with two short lists keep one, balanced ones a bitset
    kinds = set(compiled.mask_cache.entries.kind[compiled.mask_cache.entries.kind > 0].tolist())
    assert 0 < s.balanced < s.entries and len(kinds) >= 2
    without = PDACompiler(info, stage="dfa", context_expansion=False).compile_builtin_json_grammar()
    assert without.mask_cache.stats.uncertain >= s.uncertain
    assert without.mask_cache.stats.entries == s.entries
    # the builtin grammar's assertions (e.g. a string item is followed by [ \n\r\t]* [,\]]) prune more
    filtered = PDACompiler(info, stage="dfa", lookahead=True).compile_builtin_json_grammar()
    assert filtered.mask_cache.stats.uncertain < s.uncertain


def test_bad_arguments_are_clear_errors():
    info = xgr.TokenizerInfo([b"a"])
    with pytest.raises(ValueError, match="stage"):
        PDACompiler(info, stage="lr")
    with pytest.raises(ValueError, match="inline"):
        PDACompiler(info, inline="all")
    with pytest.raises(TypeError):
        PDAMatcher(xgr.GrammarCompiler(info).compile_grammar('root ::= "a"'))
    matcher = PDAMatcher(PDACompiler(info).compile_grammar('root ::= "a"'))
    with pytest.raises(MatcherError, match="only 0"):
        matcher.rollback(1)


@pytest.mark.jit_only
def test_builtin_json_on_a_real_vocabulary_matches_earley():
    """Llama-3's 128k tokens, the builtin JSON grammar, a document read byte by byte: every mask
    equal, with the cache (uncertain tokens read through the real stacks, many frames made and
    rolled back per mask) and without it."""
    info = xgr.TokenizerInfo.from_quicktok("llama3")
    earley = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_builtin_json_grammar())
    document = '{"a": [1, -2.5e3, "x\\u00e9\\n"], "b": {"c": null, "d": true}, "e": []}'
    for config in (dict(stage="dfa"), dict(stage="nfa", inline="none", context_expansion=False),
                   dict(stage="merged", mask_cache=False)):
        pda = PDAMatcher(PDACompiler(info, **config).compile_builtin_json_grammar())
        earley.reset()
        for ch in document:
            assert np.array_equal(pda.compute_bool_mask(), earley.compute_bool_mask()), (config, ch)
            assert pda.accept_string(ch) and earley.accept_string(ch)
        assert pda.is_completed() and np.array_equal(pda.compute_bool_mask(), earley.compute_bool_mask())


@pytest.mark.jit_only
def test_diff_against_pda_runs_the_suite_through_both_executors():
    from xg2ref.tools.diff.runner import run_diff

    report = run_diff(["list", "recursion"], against="pda", vocab="llama3", n_strings=4, n_traces=2)
    assert report.exit_status() == 0, report.format()
    text = report.format()
    assert "pda cannot compile it" in text and "left-recursive" in text


def test_the_views_read_the_stacks_and_draw_the_tree():
    import matplotlib

    matplotlib.use("Agg")
    from xg2ref.views.parsing import draw_stack_tree, pda_stacks, stack_history

    grammar = 'root ::= "[" value "]"\nvalue ::= "\\"" [a-z]* "\\"" | "[" value "]" | "[" value "," value "]"'
    history = stack_history(grammar, '[["a', stage="nfa")
    assert [r["read"] for r in history] == [b"", b"[", b"[[", b'[["', b'[["a']
    # inside the inner string: every stack is value's state over one of value's two return
    # states (after "[" value, two alternatives) over root's: the frames are shared, none made
    last = history[-1]
    assert last["made"] == [] and len(last["shared"]) == 3
    assert {tuple(s.split(":")[0] for s in c["stack"]) for c in last["configurations"]} == {("value", "root")}
    assert len({c["stack"][0] for c in last["configurations"]}) == 2
    matcher = PDAMatcher(PDACompiler(xgr.TokenizerInfo([b"a"]), stage="nfa", mask_cache=False).compile_grammar(grammar))
    assert matcher.accept_string('[["a')
    assert pda_stacks(matcher) == last["configurations"]
    ax = draw_stack_tree(matcher)
    assert "stacks sharing 3 frames" in ax.get_title()
