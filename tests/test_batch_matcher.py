"""BatchGrammarMatcher (xg2ref/matcher.py): a batch gives exactly the results of one
matcher per row, through fills into permuted rows, accepted and rejected tokens, strings and
rollbacks; sizes are checked before any matcher moves."""

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from tests.hypothesis_budget import examples

VOCAB = ["{", "}", '"', "a", "b", "ab", '"a', ":", ",", " ", "1", "12", "true", "null", '{"', '":', "</s>"]
INFO = xgr.TokenizerInfo(VOCAB, stop_token_ids=[16])
GRAMMARS = [
    'root ::= "{" (pair ("," pair)*)? "}"\npair ::= "\\"" [ab]+ "\\":" value\nvalue ::= [0-9]+ | "true" | "null"',
    'root ::= ("a" | "b")* "1"',
    'root ::= "\\"" [ab]{0,5} "\\""',
]
COMPILER = xgr.GrammarCompiler(INFO)
COMPILED = [COMPILER.compile_grammar(g) for g in GRAMMARS]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, len(GRAMMARS) - 1), min_size=1, max_size=5), st.integers(0, 2**16))
def test_a_batch_steps_like_one_matcher_per_row(kinds, seed):
    rng = random.Random(seed)
    batch = [xgr.GrammarMatcher(COMPILED[k]) for k in kinds]
    alone = [xgr.GrammarMatcher(COMPILED[k]) for k in kinds]
    runner = xgr.BatchGrammarMatcher()
    n = len(kinds)
    for _ in range(12):
        live = [k for k in range(n) if not alone[k].is_terminated()]  # (a terminated matcher has no mask)
        rows = rng.sample(range(n + 2), len(live))  # a padded bitmask, rows in any order
        mask = xgr.allocate_token_bitmask(n + 2, INFO.vocab_size)
        runner.batch_fill_next_token_bitmask([batch[k] for k in live], mask, rows)
        untouched = sorted(set(range(n + 2)) - set(rows))
        assert (np.asarray(mask[untouched]) == -1).all()  # rows no matcher was given stay as allocated
        rows = [rows[live.index(k)] if k in live else n + 1 for k in range(n)]
        for m, row in zip(alone, rows):
            if m.is_terminated():
                continue
            want = xgr.allocate_token_bitmask(1, INFO.vocab_size)
            m.fill_next_token_bitmask(want)
            assert np.array_equal(np.asarray(mask[row]), np.asarray(want[0]))
        step = rng.random()
        if step < 0.6:
            allowed = [xgr.testing.get_allowed_token_ids(mask, INFO.vocab_size, row) for row in rows]
            tokens = [int(rng.choice(a)) if len(a) and rng.random() < 0.8 else rng.randrange(INFO.vocab_size)
                      for a in allowed]
            got = xgr.BatchGrammarMatcher.batch_accept_token(batch, tokens)
            assert got == [m.accept_token(t) for m, t in zip(alone, tokens)]
        elif step < 0.8:
            strings = [rng.choice(['{"a":1}', "ab", '"', "a1", ""]) for _ in range(n)]
            got = xgr.BatchGrammarMatcher.batch_accept_string(batch, strings)
            assert got == [m.accept_string(s) for m, s in zip(alone, strings)]
        else:
            counts = [rng.randint(0, len(m._history)) for m in alone]
            xgr.BatchGrammarMatcher.batch_rollback(batch, counts)
            for m, c in zip(alone, counts):
                m.rollback(c)
        assert [m.is_terminated() for m in batch] == [m.is_terminated() for m in alone]


def test_one_rollback_count_serves_every_row():
    batch = [xgr.GrammarMatcher(COMPILED[1]) for _ in range(3)]
    assert xgr.BatchGrammarMatcher.batch_accept_string(batch, ["ab", "a", "b"]) == [True] * 3
    xgr.BatchGrammarMatcher.batch_rollback(batch)
    assert [len(m._history) for m in batch] == [0, 0, 0]
    assert xgr.BatchGrammarMatcher.batch_accept_string(batch, ["a", "b", "a"]) == [True] * 3
    xgr.BatchGrammarMatcher.batch_rollback(batch, np.int64(1))  # numpy integers, as rollback takes them
    xgr.BatchGrammarMatcher.batch_accept_string(batch, ["a", "a", "a"])
    xgr.BatchGrammarMatcher.batch_rollback(batch, [np.int32(1), 0, 1])
    assert [len(m._history) for m in batch] == [0, 1, 0]


def test_a_terminated_matcher_stops_the_fill_before_any_row_is_written():
    batch = [xgr.GrammarMatcher(COMPILED[1]) for _ in range(2)]
    assert batch[1].accept_string("a1") and batch[1].accept_token(16) and batch[1].is_terminated()
    mask = xgr.allocate_token_bitmask(2, INFO.vocab_size)
    with pytest.raises(ValueError, match=r"matchers\[1\] has terminated"):
        xgr.BatchGrammarMatcher().batch_fill_next_token_bitmask(batch, mask)
    assert (np.asarray(mask) == -1).all()


@pytest.mark.parametrize("call, error, message", [
    (lambda b, ms: xgr.BatchGrammarMatcher.batch_accept_token(ms, [1]), ValueError,
     "The size of matchers (2) and token_ids (1) should be the same."),
    (lambda b, ms: xgr.BatchGrammarMatcher.batch_accept_string(ms, ["a", "b", "c"]), ValueError,
     "The size of matchers (2) and strings (3) should be the same."),
    (lambda b, ms: xgr.BatchGrammarMatcher.batch_rollback(ms, [1]), ValueError,
     "The size of matchers (2) and num_tokens (1) should be the same."),
    (lambda b, ms: xgr.BatchGrammarMatcher.batch_rollback(ms, [0, 2]), ValueError,
     "num_tokens[1] = 2: matcher 1 can roll back 0 to 1 tokens"),
    (lambda b, ms: b.batch_fill_next_token_bitmask(ms, xgr.allocate_token_bitmask(2, INFO.vocab_size), [0, 2]),
     ValueError, "indices[1] = 2 is out of range for a bitmask with 2 rows"),
    (lambda b, ms: b.batch_fill_next_token_bitmask(ms, xgr.allocate_token_bitmask(2, INFO.vocab_size), [1, 1]),
     ValueError, "indices must be unique"),
    (lambda b, ms: xgr.BatchGrammarMatcher.batch_accept_token(ms + ["m"], [1, 1, 1]), TypeError,
     "matchers[2] is a str, not a GrammarMatcher"),
    (lambda b, ms: b.batch_fill_next_token_bitmask(ms, xgr.allocate_token_bitmask(1, INFO.vocab_size)), ValueError,
     "2 matchers but the bitmask has 1 row"),
    (lambda b, ms: xgr.BatchGrammarMatcher(max_threads=0), ValueError,
     'max_threads must be a positive integer or "auto", got 0'),
])
def test_sizes_are_checked_before_any_matcher_moves(call, error, message):
    matchers = [xgr.GrammarMatcher(COMPILED[1]) for _ in range(2)]
    assert xgr.BatchGrammarMatcher.batch_accept_string(matchers, ["a", "b"]) == [True, True]
    with pytest.raises(error) as err:
        call(xgr.BatchGrammarMatcher(), matchers)
    assert str(err.value) == message
    assert error is TypeError or isinstance(err.value, RuntimeError)  # what xgrammar's C++ raises
    assert [len(m._history) for m in matchers] == [1, 1]


@pytest.mark.parametrize("threads", [1, 2])
def test_batch_fills_in_one_kernel_call_give_each_matchers_own_mask(threads):
    """The batch's plain fills are claimed rows (xg2ref/batch_fill.py, kernels/claimed_rows.py):
    entries not built yet (a fresh compiler), a matcher given two rows, a bitmask wider than the
    vocabulary (its extra words cleared) and matchers at every step of their inputs all give the
    rows a matcher alone gives. (No builder thread: the fills build the entries.)"""
    compiled = [xgr.GrammarCompiler(INFO, background_builds=False).compile_grammar(g) for g in GRAMMARS]
    texts = ['{"ab":12,"a":true,"b":null}', "abba1", '"abab"']
    words = (INFO.vocab_size + 31) // 32
    for step in range(max(len(t) for t in texts) + 1):
        batch, alone = [], []
        for c, text in zip(compiled, texts):
            if step <= len(text):
                batch.append(xgr.GrammarMatcher(c))
                batch[-1].accept_string(text[:step])
                alone.append(xgr.GrammarMatcher(c))
                alone[-1].accept_string(text[:step])
        listed = batch + batch[:1]  # the first matcher fills two rows
        mask = np.full((len(listed) + 1, words + 2), -1, dtype=np.int32)
        rows = list(range(len(listed)))[::-1]
        xgr.BatchGrammarMatcher(threads).batch_fill_next_token_bitmask(listed, mask, rows)
        for m, row in zip(alone + alone[:1], rows):
            want = np.full((1, words + 2), -1, dtype=np.int32)
            m.fill_next_token_bitmask(want)
            assert np.array_equal(mask[row], want[0]), (step, row)
        assert (mask[len(listed)] == -1).all()


@pytest.mark.jit_only
def test_claimed_rows_wait_for_their_row_and_leave_a_closed_batch():
    """The claim protocol of kernels/claimed_rows.py on rows skipped (handle 0): a claimer whose
    row is not ready returns it, takes it back when called again, goes on from the front (or
    the back); front and back claims together take each row once; a closed batch sends every
    claimer away."""
    from xg2ref.kernels import claimed_rows as CR

    rows, out, ctl = np.zeros(4, dtype=np.int64), np.zeros((4, 4), dtype=np.int64), np.zeros(CR.CTL, dtype=np.int64)
    assert CR.fill_claimed_rows(rows, out, ctl, -1, False) == 0  # row 0 claimed, not ready: returned
    assert CR.fill_claimed_rows(rows, out, ctl, 0, False) == 0  # still not ready
    CR.publish(rows, ctl, 0, 0)
    CR.publish(rows, ctl, 1, 0)
    assert CR.fill_claimed_rows(rows, out, ctl, 0, False) == 2  # rows 0 and 1 done; row 2 not ready
    assert CR.fill_claimed_rows(rows, out, ctl, -1, True) == 3  # the back claims row 3 (not ready)
    CR.publish(rows, ctl, 2, 0)
    CR.publish(rows, ctl, 3, 0)
    assert CR.fill_claimed_rows(rows, out, ctl, 2, False) == CR.DONE
    assert CR.fill_claimed_rows(rows, out, ctl, 3, True) == CR.DONE
    assert ctl[CR.TAKEN] == 6 and ctl[CR.FRONT] == 3 and ctl[CR.BACK] == 1  # (a claim past the end is counted)
    rows, ctl = np.zeros(3, dtype=np.int64), np.zeros(CR.CTL, dtype=np.int64)
    CR.publish(rows, ctl, 0, 0)
    assert CR.fill_claimed_rows(rows, out, ctl, -1, False) == 1
    CR.close(ctl)
    assert CR.fill_claimed_rows(rows, out, ctl, 1, False) == CR.DONE
    assert CR.fill_claimed_rows(rows, out, ctl, -1, True) == CR.DONE


@pytest.mark.jit_only
@pytest.mark.parametrize("threads", [1, 2])
def test_a_row_whose_preparation_fails_leaves_the_others_filled(threads):
    """A plain row that raises while it is made ready: the batch fills every other row, gives
    every scratch back, then raises that error."""
    compiled = COMPILED[0]
    matchers = [xgr.GrammarMatcher(compiled) for _ in range(6)]
    for k, m in enumerate(matchers):
        m.accept_string('{"ab":1'[:k])
    bitmask = xgr.allocate_token_bitmask(6, INFO.vocab_size)
    xgr.BatchGrammarMatcher(threads).batch_fill_next_token_bitmask(matchers, bitmask)  # (scratches made)
    free = len(compiled.mask_cache.scratch)

    def broken(*args):
        raise MemoryError("no room for row 3")

    matchers[3]._row_view = broken
    bitmask = np.full((6, (INFO.vocab_size + 31) // 32), -1, dtype=np.int32)
    with pytest.raises(MemoryError, match="no room for row 3"):
        xgr.BatchGrammarMatcher(threads).batch_fill_next_token_bitmask(matchers, bitmask)
    for k, m in enumerate(matchers):
        if k != 3:
            want = xgr.allocate_token_bitmask(1, INFO.vocab_size)
            m.fill_next_token_bitmask(want)
            assert np.array_equal(bitmask[k], np.asarray(want)[0]), k
    assert (bitmask[3] == -1).all()
    assert len(compiled.mask_cache.scratch) == free


def test_a_crew_runs_every_share_once_and_raises_the_first_error():
    """util.Crew: each share runs once, on the caller or a helper, however often the crew is
    used; the error of the lowest share is raised after every share has run."""
    import threading

    from xg2ref.util import Crew

    crew = Crew(3, "test-crew")
    for n in (0, 1, 2, 7, 40):
        for _ in range(50):
            seen, lock = [], threading.Lock()

            def work(i):
                with lock:
                    seen.append(i)

            crew.run(work, list(range(n)))
            assert sorted(seen) == list(range(n))
    ran = []

    def failing(i):
        ran.append(i)
        if i in (3, 5):
            raise KeyError(i)

    with pytest.raises(KeyError) as err:
        crew.run(failing, list(range(8)))
    assert err.value.args == (3,) and sorted(ran) == list(range(8))


def test_a_fill_takes_back_the_scratch_its_last_fill_used():
    """mask/scratch.py SHARED SCRATCH: `take(prefer)` gives the preferred scratch while it is
    free, else the last one given back, else a new one."""
    scratches = COMPILED[1].mask_cache.scratch
    a, b = scratches.take(), scratches.take()
    scratches.give(a)
    scratches.give(b)
    assert scratches.take(prefer=a) is a
    assert scratches.take(prefer=a) is b  # (a is taken: the last one given back)
    c = scratches.take(prefer=a)
    assert c is not a and c is not b
    for s in (a, b, c):
        scratches.give(s)
