"""Entries built off the token's path (xg2ref/mask/background.py, kernels/build_order.py): the
builder's order is breadth first from where the matcher stands, a fill never takes an entry
its own view of the store does not hold, masks with the builder racing the fills are the
masks of a serial run, and a byte limit crossed by the builder is raised by the next build."""

import collections
import json
import os
import signal
import time

import numpy as np
import pytest

import xg2ref as xgr
from xg2ref.compiler import compile_ir_grammar
from xg2ref.exceptions import GrammarLimitError
from xg2ref.kernels import build_order as BO
from xg2ref.kernels import earley as K
from xg2ref.kernels import entry_build as EB
from xg2ref.kernels import mask_fill as MF
from xg2ref.mask import background
from xg2ref.mask.entries import UNBUILT

VOCAB = ["a", "b", "ab", "1", "12", "[", "]", ",", '"', 'a"', '",', "[1", "1]", "</s>"]
LIST = 'root ::= "[" item ("," item)* "]"\nitem ::= num | str\nnum ::= [0-9]+\nstr ::= "\\"" [a-z]* "\\""'


def _edges(fsm, s: int) -> list:
    """kernels/build_order.py's edge relation, in Python."""
    out = list(fsm.byte_dst[fsm.byte_indptr[s]:fsm.byte_indptr[s + 1]])
    out += list(fsm.tok_dst[fsm.tok_indptr[s]:fsm.tok_indptr[s + 1]])
    for q in range(fsm.ref_indptr[s], fsm.ref_indptr[s + 1]):
        out += [fsm.rule_start[fsm.ref_rule[q]], fsm.ref_dst[q]]
    if fsm.is_final[s]:
        out += [fsm.ref_dst[q] for q in np.flatnonzero(fsm.ref_rule == fsm.state_rule[s])]
    return [int(t) for t in out]


@pytest.mark.parametrize("grammar", [LIST, "builtin"])
def test_reach_order_is_breadth_first_over_unbuilt_classes(grammar):
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[len(VOCAB) - 1])
    g = xgr.Grammar.builtin_json_grammar() if grammar == "builtin" else xgr.Grammar.from_ebnf(LIST)
    mc = compile_ir_grammar(g, info, jit=True, eager_entries=0).mask_cache
    fsm, classes = mc._fsm, mc._classes
    ptr, dst = BO.callers_of(fsm)
    for r in range(len(fsm.rule_start)):  # the callers' CSR: where each rule returns to
        want = sorted(fsm.ref_dst[fsm.ref_rule == r].tolist())
        assert sorted(dst[ptr[r]:ptr[r + 1]].tolist()) == want
    ahead = background.AheadState(fsm, len(mc._class_rep))
    room = len(mc._class_rep) + 1  # room for every class
    for start in range(0, len(fsm.state_rule), 7):
        starts = np.array([start], dtype=np.int32)
        dist = {start: 0}
        queue = collections.deque([start])
        while queue:
            s = queue.popleft()
            for t in _edges(fsm, s):
                if t not in dist:
                    dist[t] = dist[s] + 1
                    queue.append(t)
        class_dist = {}
        for s, d in dist.items():
            c = int(mc._state_class[s])
            if mc.state_entry[s] == UNBUILT and classes.in_kernel[c]:
                class_dist[c] = min(d, class_dist.get(c, d))
        listed = ahead.walk(fsm, starts, mc.state_entry, classes, room)
        assert sorted(listed) == sorted(class_dist)  # every reachable class without an entry, once
        assert [class_dist[c] for c in listed] == sorted(class_dist[c] for c in listed)  # nearest first
    mc.ensure_entries(np.arange(len(fsm.state_rule), dtype=np.int32))
    assert ahead.walk(fsm, ahead.root, mc.state_entry, classes, room) == []  # nothing left: nothing listed


def test_a_fill_never_takes_an_entry_its_view_of_the_store_lacks():
    """A reader holds the store's arrays from before a growth; the entry it needs is stored in
    the grown arrays and published: it must answer NEED_ENTRY, not read the old arrays."""
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[len(VOCAB) - 1])
    compiled = compile_ir_grammar(xgr.Grammar.from_ebnf(LIST), info, jit=True, eager_entries=0)
    whole = compile_ir_grammar(xgr.Grammar.from_ebnf(LIST), info, jit=False)
    mc = compiled.mask_cache
    matcher, reference = xgr.GrammarMatcher(compiled), xgr.GrammarMatcher(whole)
    for m in (matcher, reference):
        assert m.accept_string("[1")
    old, old_scratch = mc._store.kernel_arrays, mc.scratch.new()
    store = mc._store
    store.sizes[EB.SIZE_NEED_ENTRIES] = len(store.entry_kind) + 1  # a growth, as a NEED_STORE asks
    store.grow()
    assert store.kernel_arrays.entry_kind is not old.entry_kind
    parser = matcher._parser
    c = parser.chart
    k = int(c.meta[K.META_N_SETS]) - 1
    assert mc.ensure_entries(c.item_state[c.set_start[k]:c.set_start[k + 1]]) > 0  # stored in the new arrays
    words = np.zeros((info.vocab_size + 31) // 32, dtype=np.int32)
    args = (matcher._not_regular, matcher._stop_array, words)
    new_scratch = mc.scratch.fit(old_scratch)
    for arrays, scratch in ((old, old_scratch), (old, new_scratch), (store.kernel_arrays, old_scratch)):
        status = MF.fill_mask(parser.arrays, c, arrays, mc.vocab, scratch, *args)[0]
        assert status == MF.NEED_ENTRY
    status = MF.fill_mask(parser.arrays, c, store.kernel_arrays, mc.vocab, new_scratch, *args)[0]
    assert status == MF.OK
    want = xgr.allocate_token_bitmask(1, info.vocab_size)
    reference.fill_next_token_bitmask(want)
    assert np.array_equal(words, np.asarray(want)[0])


def _walk(compiler, schema, tokens, info, pause: float = 0.0) -> list:
    matcher = xgr.GrammarMatcher(compiler.compile_json_schema(json.dumps(schema)))
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    masks = [np.asarray(bitmask).copy()]
    for t in tokens:
        assert matcher.accept_token(t)
        if pause:
            time.sleep(pause)
        matcher.fill_next_token_bitmask(bitmask)
        masks.append(np.asarray(bitmask).copy())
    return masks


@pytest.mark.jit_only
def test_masks_with_the_builder_racing_the_fills_are_the_serial_masks():
    from xg2ref.tools.diff.checks import quicktok_encoder

    info = xgr.TokenizerInfo.from_quicktok("llama3")
    encode = quicktok_encoder("llama3")
    with open("../shared/data/json_mode_eval/json_mode_eval_from_maskbench.jsonl", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f if line.strip()][:4]
    serial = xgr.GrammarCompiler(info, jit=False, cache_enabled=False)
    for e in docs:
        tokens = encode(json.dumps(e["completion"]).encode())
        want = _walk(serial, e["schema"], tokens, info)
        # a new compiler each time: the builder starts from nothing; without a pause the fills
        # outrun it, with one it gets ahead; the kept compiler adds the cross-grammar cache
        for compiler, pause in ((xgr.GrammarCompiler(info, cache_enabled=False), 0.0),
                                (xgr.GrammarCompiler(info, cache_enabled=False), 2e-4),
                                (xgr.GrammarCompiler(info), 0.0)):
            assert compiler.background_builds
            got = _walk(compiler, e["schema"], tokens, info, pause)
            assert len(got) == len(want)
            assert all(np.array_equal(a, b) for a, b in zip(got, want))
    assert background.BUILDER.wait_idle()


@pytest.mark.jit_only
def test_the_builder_builds_every_reachable_entry_and_stops():
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[len(VOCAB) - 1])
    compiled = xgr.GrammarCompiler(info, cache_enabled=False).compile_grammar(LIST)
    mc = compiled.mask_cache
    assert background.BUILDER.wait_idle()
    assert not mc.building_ahead
    reps = mc.class_representatives
    assert (mc.state_entry[reps[mc._classes.in_kernel]] >= 0).all()
    off = xgr.GrammarCompiler(info, cache_enabled=False, background_builds=False).compile_grammar(LIST)
    assert not off.mask_cache.building_ahead and off.mask_cache.unbuilt_entries > 0


@pytest.mark.jit_only
def test_a_byte_limit_crossed_by_the_builder_is_raised_by_the_next_build():
    info = xgr.TokenizerInfo.from_quicktok("llama3")
    schema = {"type": "object", "properties": {k: {"type": "string"} for k in "abcdef"}}
    compiled = xgr.GrammarCompiler(info, max_grammar_bytes=12_000).compile_json_schema(schema)
    assert background.BUILDER.wait_idle()
    mc = compiled.mask_cache
    assert not mc.building_ahead
    assert mc.stats.memory_bytes > 0
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    with pytest.raises(GrammarLimitError, match="max_grammar_bytes"):
        for text in ['{', '"a"', ':', ' "', 'xx', '",', '"b": "', 'x', '", "c', '":', ' 1']:
            matcher.fill_next_token_bitmask(bitmask)
            matcher.accept_string(text)


@pytest.mark.jit_only
@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_child_forked_while_the_builder_runs_fills_its_masks():
    """A fork waits for the builder thread to be between two steps (holding no cache's lock and
    none of Numba's, which the child, without that thread, could never take): the child builds
    for itself, with a builder of its own, and its masks are exact."""
    info = xgr.TokenizerInfo.from_quicktok("llama3")
    schema = {"type": "object", "properties": {k: {"type": "string"} for k in "abcdefgh"}}
    text = json.dumps({k: "x" * 3 for k in "abcdefgh"})
    from xg2ref.tools.diff.checks import quicktok_encoder

    tokens = quicktok_encoder("llama3")(text.encode())
    want = _walk(xgr.GrammarCompiler(info, jit=False, cache_enabled=False), schema, tokens, info)
    for _ in range(3):
        compiler = xgr.GrammarCompiler(info, cache_enabled=False)
        compiled = compiler.compile_json_schema(json.dumps(schema))  # the builder starts on it now
        pid = os.fork()
        if pid == 0:  # the child: a hang ends in SIGALRM, a wrong mask in exit status 1
            signal.alarm(60)
            try:
                matcher = xgr.GrammarMatcher(compiled)
                bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
                ok = True
                for k, t in enumerate([None] + tokens):
                    if t is not None:
                        ok = ok and matcher.accept_token(t)
                    matcher.fill_next_token_bitmask(bitmask)
                    ok = ok and np.array_equal(np.asarray(bitmask), want[k])
            except BaseException:
                ok = False
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


@pytest.mark.jit_only
def test_matchers_of_one_grammar_filled_from_several_threads_give_the_serial_masks():
    """Each matcher fills with a scratch of its own; builds (the fills' and the builder's) take
    the cache's lock one at a time; plain fills read published entries without locking."""
    from concurrent.futures import ThreadPoolExecutor

    from xg2ref.tools.diff.checks import quicktok_encoder

    info = xgr.TokenizerInfo.from_quicktok("llama3")
    encode = quicktok_encoder("llama3")
    with open("../shared/data/json_mode_eval/json_mode_eval_from_maskbench.jsonl", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f if line.strip()][4:8]
    serial = xgr.GrammarCompiler(info, jit=False, cache_enabled=False)
    for e in docs:
        tokens = encode(json.dumps(e["completion"]).encode())
        want = _walk(serial, e["schema"], tokens, info)
        for _ in range(2):
            compiled = xgr.GrammarCompiler(info, cache_enabled=False).compile_json_schema(json.dumps(e["schema"]))

            def walk(_):
                matcher = xgr.GrammarMatcher(compiled)
                bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
                masks = []
                for t in [None] + tokens:
                    if t is not None:
                        assert matcher.accept_token(t)
                    matcher.fill_next_token_bitmask(bitmask)
                    masks.append(np.asarray(bitmask).copy())
                return masks

            with ThreadPoolExecutor(8) as pool:
                for got in pool.map(walk, range(8)):
                    assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want))


def _serial_walks(first: int, stop: int, max_tokens: int) -> tuple:
    """(llama3 info, [(schema, gold tokens)], [their serial masks]) for json-mode-eval items
    first..stop-1, each completion cut to `max_tokens` tokens."""
    from xg2ref.tools.diff.checks import quicktok_encoder

    info = xgr.TokenizerInfo.from_quicktok("llama3")
    encode = quicktok_encoder("llama3")
    with open("../shared/data/json_mode_eval/json_mode_eval_from_maskbench.jsonl", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f if line.strip()][first:stop]
    serial = xgr.GrammarCompiler(info, jit=False, cache_enabled=False)
    jobs = [(e["schema"], encode(json.dumps(e["completion"]).encode())[:max_tokens]) for e in docs]
    return info, jobs, [_walk(serial, schema, tokens, info) for schema, tokens in jobs]


@pytest.mark.jit_only
def test_one_kept_compiler_compiling_and_filling_from_eight_threads_gives_the_serial_masks():
    """xgrammar's contract: a `GrammarCompiler` may be called from any number of threads. Eight
    threads each compile schemas through one kept compiler (its grammar cache, cross-grammar
    pool, shape cache and parts shared) and walk them along their gold completions while the
    others compile: the schemas share rules, so builds and pool lookups race."""
    from concurrent.futures import ThreadPoolExecutor

    info, jobs, want = _serial_walks(8, 16, 40)
    for _ in range(2):
        kept = xgr.GrammarCompiler(info)
        order = list(range(len(jobs))) * 2  # each schema twice: the second one is a grammar-cache hit

        def walk(k):
            return k, _walk(kept, *jobs[k], info)

        with ThreadPoolExecutor(8) as pool:
            for k, got in pool.map(walk, order):
                assert len(got) == len(want[k]) and all(np.array_equal(a, b) for a, b in zip(got, want[k]))
        assert kept.grammar_cache_hits == len(jobs)  # one compile per schema, the other thread waited for it
        assert kept.cache_stats.entries > 0


@pytest.mark.jit_only
def test_a_batch_filled_on_eight_threads_gives_the_serial_masks():
    """`BatchGrammarMatcher(8)` fills its rows on eight threads: sixteen matchers, four schemas
    (four matchers of each compiled grammar, JIT entries built by whichever fill meets them
    first, one matcher listed twice), every row equal to a serial walk of its document."""
    info, jobs, want = _serial_walks(16, 20, 30)
    kept = xgr.GrammarCompiler(info)
    compiled = [kept.compile_json_schema(json.dumps(schema)) for schema, _ in jobs]
    rows = [(k, xgr.GrammarMatcher(compiled[k])) for k in range(len(jobs)) for _ in range(4)]
    batch = xgr.BatchGrammarMatcher(8)
    twice = rows[0][1]
    bitmask = xgr.allocate_token_bitmask(len(rows) + 1, info.vocab_size)
    for step in range(max(len(t) for _, t in jobs) + 1):
        live = [(k, m) for k, m in rows if step <= len(jobs[k][1])]
        batch.batch_fill_next_token_bitmask([m for _, m in live] + [twice], bitmask,
                                            list(range(len(live))) + [len(rows)])
        for row, (k, _) in enumerate(live):
            assert np.array_equal(np.asarray(bitmask)[row], want[k][step][0]), (k, step)
        if step <= len(jobs[0][1]):
            assert np.array_equal(np.asarray(bitmask)[len(rows)], np.asarray(bitmask)[0])
        for k, m in live:
            if step < len(jobs[k][1]):
                assert m.accept_token(jobs[k][1][step])


@pytest.mark.jit_only
def test_the_concurrency_soak_patterns_give_the_serial_masks():
    """`xg2ref bench concurrency`'s three patterns (shared grammars, compiles through one kept
    compiler, batches), a second each on eight threads: every mask equal to a serial walk, no
    exception."""
    from xg2ref.tools.bench.concurrency import RUNNERS, Engine, fill_rates, load_docs

    info = xgr.TokenizerInfo.from_quicktok("llama3")
    engine = Engine("xg2ref", xgr, info, load_docs("../shared/data", info, "llama3", 4))
    for pattern, run in RUNNERS.items():
        row = run(engine, 8, 1.0)
        assert row.masks > 0 and row.wrong == 0 and row.errors == 0, (pattern, row)
    for threads in (2, 8):  # SCALING's batch fills (one thread and several taking turns): the serial masks too
        one, many, wrong = fill_rates(engine, threads, 1.0, batch=16)
        assert one > 0 and many > 0 and wrong == 0, threads
