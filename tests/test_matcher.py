"""GrammarMatcher: xgrammar's semantics on small vocabularies, bad input, and xgrammar itself."""

import json

import numpy as np
import pytest

import xg2ref as xgr
from xg2ref.exceptions import MatcherError
from xg2ref.testing import bitmask_to_bool_mask

VOCAB = ["a", "b", "ab", "c", "<eos>", "", "cd", "abc", "x"]
EOS = 4
GRAMMAR = 'root ::= "ab" | "a" [c-d]*'


@pytest.fixture
def info():
    return xgr.TokenizerInfo(VOCAB, stop_token_ids=[EOS])


@pytest.fixture
def compiled(info):
    return xgr.GrammarCompiler(info).compile_grammar(GRAMMAR)


def allowed(matcher, vocab_size=len(VOCAB)):
    bitmask = xgr.allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    return np.flatnonzero(bitmask_to_bool_mask(bitmask, vocab_size)[0]).tolist()


def test_masks_along_a_trace(compiled):
    m = xgr.GrammarMatcher(compiled)
    assert allowed(m) == [0, 2]             # "a", "ab"; "abc" leaves the language
    assert m.accept_token(0)                # "a"
    assert allowed(m) == [1, 3, 4, 6]       # b, c, <eos> (complete), cd
    assert m.accept_token(6)                # "cd"
    assert allowed(m) == [3, 4, 6]
    assert m.accept_token(EOS) and m.is_terminated()


def test_special_and_padding_tokens_are_never_allowed():
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[EOS], vocab_size=40)
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar('root ::= [^z]*'))
    got = allowed(m, 40)
    assert 5 not in got and all(t < len(VOCAB) for t in got)
    assert not m.accept_token(5) and not m.accept_token(30)


def test_rollback_undoes_tokens_strings_and_termination(compiled):
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string("a") and m.accept_token(3) and m.accept_token(EOS)
    assert m.is_terminated()
    m.rollback(1)
    assert not m.is_terminated() and m.is_completed()
    m.rollback(2)
    assert not m.is_completed() and allowed(m) == [0, 2]
    with pytest.raises(MatcherError, match="only 0"):
        m.rollback(1)


def test_accept_after_termination_and_mask_after_termination(compiled):
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string("ab") and m.accept_token(EOS)
    assert not m.accept_token(0) and not m.accept_string("c")
    with pytest.raises(MatcherError, match="terminated"):
        m.fill_next_token_bitmask(xgr.allocate_token_bitmask(1, len(VOCAB)))


@pytest.mark.parametrize("bad", [-1, len(VOCAB), 10**9])
def test_invalid_token_ids_are_rejected(compiled, bad):
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_token(bad) is False


def test_stop_token_only_at_a_sentence(compiled):
    m = xgr.GrammarMatcher(compiled)
    assert not m.accept_token(EOS)
    assert m.accept_token(0) and m.accept_token(EOS)


def test_terminate_without_stop_token(compiled):
    m = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert m.accept_token(0) and m.is_terminated()
    assert not m.accept_token(EOS)           # as xgrammar: stop tokens are not accepted
    assert m.accept_token(3) and m.is_terminated()


def test_fork_is_independent(compiled):
    m = xgr.GrammarMatcher(compiled)
    m.accept_token(0)
    f = m.fork()
    assert f.accept_token(6)
    assert allowed(m) == [1, 3, 4, 6] and allowed(f) == [3, 4, 6]


def test_jump_forward():
    info = xgr.TokenizerInfo([])
    c = xgr.GrammarCompiler(info).compile_grammar('root ::= "{\\"name\\": " ("1" | "2") "}"')
    m = xgr.GrammarMatcher(c)
    assert m.find_jump_forward_string() == '{"name": '
    assert m.accept_string('{"name": 1')
    assert m.find_jump_forward_string() == "}"
    assert m.accept_string("}") and m.find_jump_forward_string() == ""


def test_empty_vocabulary_string_matching():
    info = xgr.TokenizerInfo([])
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(GRAMMAR), terminate_without_stop_token=True)
    assert m.accept_string(b"a") and m.is_terminated()
    assert not m.accept_string("x") and m.accept_string("cc")


def test_bitmask_rows_and_torch(compiled):
    torch = pytest.importorskip("torch")
    m = xgr.GrammarMatcher(compiled)
    bm = torch.full((3, 1), -1, dtype=torch.int32)
    assert m.fill_next_token_bitmask(bm, index=2) is True
    assert bm[0, 0].item() == -1 and bm[2, 0].item() == (1 << 0) | (1 << 2)
    with pytest.raises(ValueError):
        m.fill_next_token_bitmask(np.zeros((1, 1), dtype=np.float32))
    with pytest.raises(ValueError):
        m.fill_next_token_bitmask(bm, index=3)


def test_override_stop_tokens(info):
    c = xgr.GrammarCompiler(info).compile_grammar(GRAMMAR)
    m = xgr.GrammarMatcher(c, override_stop_tokens=[8])
    assert m.stop_token_ids == [8]
    assert m.accept_token(0) and 8 in allowed(m) and EOS not in allowed(m)
    assert m.accept_token(8) and m.is_terminated()


# ---- against xgrammar 0.2.8 itself ---------------------------------------------------------

GRAMMARS = [
    GRAMMAR,
    'root ::= "[" (item ("," item)*)? "]"\nitem ::= [a-z]+ | root',
    'root ::= e\ne ::= e "+" t | t\nt ::= [0-9]+ | "(" e ")"',
    'root ::= [^\\n]{2,4} "\\n"',
    'root ::= ([\\u00e0-\\u00ff] | "中文")+ "."',
]
TRACES = ["ab", "acdcd", "[ab,[c,d]]", "(1+23)+4", "xyz\n", "é中文à."]


@pytest.mark.xgrammar
@pytest.mark.parametrize("grammar", GRAMMARS)
def test_masks_equal_xgrammar_on_a_byte_vocabulary(grammar):
    xgrammar = pytest.importorskip("xgrammar")
    vocab = [bytes([b]) for b in range(256)] + [b"ab", b"cd", b"[a", b"1+", b"\xe4\xb8", b"\xad\xe6\x96\x87", b"</s>"]
    stop = [len(vocab) - 1]
    ours = xgr.GrammarMatcher(xgr.GrammarCompiler(xgr.TokenizerInfo(vocab, stop_token_ids=stop)).compile_grammar(grammar))
    xinfo = xgrammar.TokenizerInfo(vocab, stop_token_ids=stop)
    theirs = xgrammar.GrammarMatcher(xgrammar.GrammarCompiler(xinfo).compile_grammar(grammar))
    n = len(vocab)
    for text in TRACES:
        ours.reset()
        theirs.reset()
        for b in text.encode():
            a = xgr.allocate_token_bitmask(1, n)
            ours.fill_next_token_bitmask(a)
            x = xgrammar.allocate_token_bitmask(1, n)
            theirs.fill_next_token_bitmask(x)
            # xgrammar sometimes leaves the bits past vocab_size set; only ids < n carry meaning
            assert (bitmask_to_bool_mask(a, n) == bitmask_to_bool_mask(x.numpy(), n)).all(), (grammar, text, b)
            ok = ours.accept_token(b)
            assert ok == theirs.accept_token(b)
            if not ok:
                break


def test_the_mask_lands_in_every_kind_of_row(info, compiled):
    """The fill kernel writes a contiguous int32 row in place and anything else through a copy;
    either way the row holds exactly the mask, its words past the vocabulary zeroed, and the
    other rows untouched."""
    torch = pytest.importorskip("torch")
    words = (len(VOCAB) + 31) // 32
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string("a")
    want = m.compute_bool_mask()
    rows = {
        "numpy, wider, dirty": np.full((3, words + 2), -1, dtype=np.int32),
        "torch, wider, dirty": torch.full((3, words + 2), -1, dtype=torch.int32),
        "numpy, exact": np.zeros((3, words), dtype=np.int32),
        "numpy, 1-D": np.full(words + 1, 7, dtype=np.int32),
    }
    for name, bitmask in rows.items():
        index = 0 if bitmask.ndim == 1 else 1
        for _ in range(2):  # the second call meets the remembered row
            m.fill_next_token_bitmask(bitmask, index)
            row = np.asarray(bitmask)[index] if bitmask.ndim == 2 else np.asarray(bitmask)
            assert np.array_equal(bitmask_to_bool_mask(row, len(VOCAB)), want), name
            assert not row[words:].any(), name
            if bitmask.ndim == 2:
                assert (np.asarray(bitmask)[[0, 2]] == (-1 if "dirty" in name else 0)).all(), name


def test_a_remembered_numpy_row_follows_changes_made_in_place(info, compiled):
    """The matcher remembers the last numpy bitmask's row; a change made to that same array in
    place (its shape, its dtype, its writeable flag) is seen at the next call."""
    words = (len(VOCAB) + 31) // 32
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string("a")
    want = m.compute_bool_mask()
    bitmask = np.zeros((2, words), dtype=np.int32)
    m.fill_next_token_bitmask(bitmask, 1)
    bitmask.shape = (2 * words,)  # one row now: index 0
    bitmask[:] = -1
    m.fill_next_token_bitmask(bitmask, 0)
    assert np.array_equal(bitmask_to_bool_mask(bitmask[:words], len(VOCAB)), want)
    bitmask.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        m.fill_next_token_bitmask(bitmask, 0)
    bitmask.flags.writeable = True
    bitmask.dtype = np.float32
    with pytest.raises(ValueError, match="int32"):
        m.fill_next_token_bitmask(bitmask, 0)


# ---- override_stop_tokens at a sentence and inside a string -----------------------------------

JSON_VOCAB = ["{", '"', "a", '"}', "}", "<eos>", "</s>", " ", '"x', 'a"', "1", ":", '"s"', "<", "</s", "\n"]
OLD_STOP, NEW_STOP, NEWLINE = JSON_VOCAB.index("</s>"), JSON_VOCAB.index("<eos>"), JSON_VOCAB.index("\n")
OLD_STOPS = [OLD_STOP, NEWLINE]  # stop tokens of the vocabulary that the override leaves out
# a walk through {"s": "a</s>a"}: the token after step k is WALK[k]
JSON_WALK = ["{", '"s"', ":", " ", '"', "a", "</s>", "a", '"}', "<eos>"]


def override_matcher(module, **kwargs):
    info = module.TokenizerInfo(JSON_VOCAB, stop_token_ids=[NEW_STOP] + OLD_STOPS)
    compiled = module.GrammarCompiler(info).compile_json_schema(
        json.dumps({"type": "object", "properties": {"s": {"type": "string"}}}))
    return module.GrammarMatcher(compiled, override_stop_tokens=[NEW_STOP], **kwargs)


def test_overridden_stop_tokens_are_text_and_the_mask_is_what_accept_takes():
    m = override_matcher(xgr)
    for k, token in enumerate(JSON_WALK):
        mask = m.compute_bool_mask()
        for t in range(len(JSON_VOCAB)):
            probe = m.fork()
            assert mask[t] == probe.accept_token(t), (JSON_WALK[:k], JSON_VOCAB[t])
        inside = JSON_WALK.index('"') < k <= JSON_WALK.index('"}')
        assert mask[OLD_STOP] == inside  # "</s>" is string text now, and nothing else
        assert mask[NEWLINE] == (k in (1, 2, 3, 4))  # whitespace between tokens, never raw in a string
        assert mask[NEW_STOP] == (k == len(JSON_WALK) - 1)  # the stop only after the complete object
        assert m.accept_token(JSON_VOCAB.index(token)) and m.is_terminated() == (token == "<eos>")
    assert m.stop_token_ids == [NEW_STOP]


def test_overridden_stop_tokens_with_terminate_without_stop_token():
    m = override_matcher(xgr, terminate_without_stop_token=True)
    for token in JSON_WALK[:-1]:
        assert not m.is_terminated()
        assert m.accept_token(JSON_VOCAB.index(token))
    assert m.is_terminated() and not m.accept_token(NEW_STOP)


@pytest.mark.xgrammar
@pytest.mark.parametrize("terminate", [False, True])
def test_overridden_stop_tokens_against_xgrammar(terminate):
    """accept_token and is_terminated equal xgrammar's at every step, for every token; so do the
    masks, but for the tokens that were stop tokens and are not in the override. xgrammar 0.2.8
    does not check those: its mask keeps them where a current state's cache entry lists the
    rejected tokens and drops them where it lists the accepted ones (inside the string it allows
    a raw line feed that its accept_token refuses; between the object's tokens it leaves out the
    line feed that its accept_token takes). xg2ref's mask is what accept_token takes: xgrammar's own
    accept_token verdict."""
    xgrammar = pytest.importorskip("xgrammar")
    ours = override_matcher(xgr, terminate_without_stop_token=terminate)
    theirs = override_matcher(xgrammar, terminate_without_stop_token=terminate)
    n = len(JSON_VOCAB)
    for token in JSON_WALK[:-1] if terminate else JSON_WALK:
        a = xgr.allocate_token_bitmask(1, n)
        ours.fill_next_token_bitmask(a)
        x = xgrammar.allocate_token_bitmask(1, n)
        theirs.fill_next_token_bitmask(x)
        have, other = bitmask_to_bool_mask(a, n)[0], bitmask_to_bool_mask(x.numpy(), n)[0]
        verdicts = []
        for t in range(n):
            ok = theirs.accept_token(t)
            done = theirs.is_terminated()
            if ok:
                theirs.rollback(1)
            verdicts.append(ok)
            probe = ours.fork()
            assert (probe.accept_token(t), probe.is_terminated()) == (ok, done), JSON_VOCAB[t]
        assert have.tolist() == verdicts
        assert [have[t] == other[t] for t in range(n) if t not in OLD_STOPS] == [True] * (n - len(OLD_STOPS))
        t = JSON_VOCAB.index(token)
        assert ours.accept_token(t) == theirs.accept_token(t) is True
        assert ours.is_terminated() == theirs.is_terminated()
