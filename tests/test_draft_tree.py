"""GrammarMatcher.traverse_draft_tree (speculative decoding's token trees), default_temperature, and the
bitmask entry points under xgrammar's module paths (xg2ref.kernels.apply_token_bitmask_inplace_*)."""

import random

import numpy as np
import pytest

import xg2ref as xgr

VOCAB = ["a", "b", "c", "ab", "bc", "ca", "abc", "</s>"]
GRAMMAR = 'root ::= "a" ("b" | "c")* "a"?'
WORDS = 1


def random_tree(rng: random.Random, n: int):
    """A random tree over nodes 0..n-1 in the first-child / next-sibling form, node 0 the root."""
    parent = [-1] + [rng.randrange(i) for i in range(1, n)]
    nxt, sib = [-1] * n, [-1] * n
    last_child = {}
    for i in range(1, n):
        p = parent[i]
        if p in last_child:
            sib[last_child[p]] = i
        else:
            nxt[p] = i
        last_child[p] = i
    tokens = [rng.randrange(len(VOCAB)) for _ in range(n)]
    return parent, nxt, sib, tokens


@pytest.mark.parametrize("seed", range(30))
def test_draft_tree_rows_are_the_masks_along_each_path(seed):
    rng = random.Random(seed)
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[7])
    compiled = xgr.GrammarCompiler(info).compile_grammar(GRAMMAR)
    n = rng.randint(1, 12)
    parent, nxt, sib, tokens = random_tree(rng, n)
    matcher = xgr.GrammarMatcher(compiled)
    prefix = [0] if rng.random() < 0.5 else []  # from the start, or from the middle of a sentence
    assert all(matcher.accept_token(t) for t in prefix)
    start_mask = matcher.compute_bool_mask()
    bitmask = np.full((n, WORDS), 12345, dtype=np.int32)
    temps = np.zeros(n, dtype=np.float32)
    assert matcher.traverse_draft_tree(np.array(nxt), np.array(sib), np.array(tokens), bitmask, temperatures=temps)
    assert np.array_equal(matcher.compute_bool_mask(), start_mask)  # the matcher's state is back
    want = expected_rows(compiled, prefix, parent, tokens, n)
    for node in range(n):
        if node in want:
            assert (bitmask[node] & 0xFF).tolist() == (want[node] & 0xFF).tolist(), node
        else:
            assert bitmask[node].tolist() == [12345], node
    assert (temps == -1).all()


def expected_rows(compiled, prefix, parent, tokens, n):
    """Each node's row the slow way: a fresh matcher along the node's path from the root. A
    node whose own token is rejected gets a zero row; nodes below it, and below a node where the
    matcher has terminated (its row is zero too), are never visited."""
    rows = {}
    for node in range(n):
        path, k = [], node
        while k > 0:
            path.append(tokens[k])
            k = parent[k]
        matcher = xgr.GrammarMatcher(compiled)
        assert all(matcher.accept_token(t) for t in prefix)
        state = "ok"
        for depth, t in enumerate(reversed(path)):
            if matcher.is_terminated():
                state = "unvisited"
                break
            if not matcher.accept_token(t):
                state = "rejected" if depth == len(path) - 1 else "unvisited"
                break
        if state == "ok":
            rows[node] = (np.zeros(1, np.int32) if matcher.is_terminated()
                          else xgr.testing.bool_mask_to_bitmask(matcher.compute_bool_mask()).reshape(-1))
        elif state == "rejected":
            rows[node] = np.zeros(1, np.int32)
    return rows


def test_draft_tree_input_errors_and_timeout():
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[7])
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(GRAMMAR))
    ok = (np.array([1, -1]), np.array([-1, -1]), np.array([0, 0]))
    with pytest.raises(ValueError, match="shape"):
        matcher.traverse_draft_tree(*ok, np.zeros((2, 3), np.int32))
    with pytest.raises(ValueError, match="same length"):
        matcher.traverse_draft_tree(np.array([1]), *ok[1:], np.zeros((2, 1), np.int32))
    with pytest.raises(ValueError, match="outside"):
        matcher.traverse_draft_tree(np.array([5, -1]), *ok[1:], np.zeros((2, 1), np.int32))
    with pytest.raises(ValueError, match="twice"):  # a cycle: 1 -> 1
        matcher.traverse_draft_tree(np.array([1, 1]), np.array([-1, -1]), np.array([0, 0]), np.zeros((2, 1), np.int32))
    assert matcher.compute_bool_mask()[0]  # the failed calls left the state as it was
    assert matcher.traverse_draft_tree(*ok, np.zeros((2, 1), np.int32), time_threshold=-1.0)
    deep = 400
    chain = np.array(list(range(1, deep)) + [-1])
    slow = matcher.traverse_draft_tree(chain, np.full(deep, -1), np.array([0] + [1] * (deep - 1)),
                                       np.zeros((deep, 1), np.int32), time_threshold=1e-9)
    assert slow is False and matcher.compute_bool_mask()[0]


def test_default_temperature():
    info = xgr.TokenizerInfo(VOCAB)
    compiled = xgr.GrammarCompiler(info).compile_grammar(GRAMMAR)
    assert xgr.GrammarMatcher(compiled).temperature is None
    assert xgr.GrammarMatcher(compiled, default_temperature=0.7).temperature == pytest.approx(0.7)
    with pytest.raises(TypeError):
        xgr.GrammarMatcher(compiled, default_temperature="hot")


@pytest.mark.xgrammar
@pytest.mark.parametrize("seed", range(15))
def test_draft_tree_agrees_with_xgrammar(seed):
    xgrammar = pytest.importorskip("xgrammar")
    torch = pytest.importorskip("torch")
    rng = random.Random(seed)
    n = rng.randint(1, 12)
    _, nxt, sib, tokens = random_tree(rng, n)
    ours = xgr.GrammarMatcher(xgr.GrammarCompiler(xgr.TokenizerInfo(VOCAB, stop_token_ids=[7])).compile_grammar(GRAMMAR))
    theirs = xgrammar.GrammarMatcher(xgrammar.GrammarCompiler(
        xgrammar.TokenizerInfo(VOCAB, stop_token_ids=[7])).compile_grammar(GRAMMAR))
    args = [torch.tensor(a, dtype=torch.int64) for a in (nxt, sib, tokens)]
    b1 = torch.full((n, WORDS), 12345, dtype=torch.int32)
    b2 = b1.clone()
    assert ours.traverse_draft_tree(*args, b1) == theirs.traverse_draft_tree(*args, b2)
    # bits past the vocabulary are xgrammar's business (it may leave them set): compare the vocabulary's
    untouched = b2 == 12345
    assert torch.equal(b1 == 12345, untouched)
    assert torch.equal(b1[~untouched] & 0xFF, b2[~untouched] & 0xFF)


@pytest.mark.parametrize("backend", ["cpu", "torch", "torch_compile"])
def test_bitmask_entry_points_under_xgrammars_paths(backend):
    torch = pytest.importorskip("torch")
    import importlib

    module = importlib.import_module(f"xg2ref.kernels.apply_token_bitmask_inplace_{backend}")
    fn = getattr(module, f"apply_token_bitmask_inplace_{backend}")
    logits = torch.zeros((2, 40))
    bitmask = torch.tensor([[5, -1], [-1, 1]], dtype=torch.int32)
    fn(logits, bitmask)
    assert torch.isinf(logits[0, 1]) and not torch.isinf(logits[0, 0]) and not torch.isinf(logits[0, 2])
    assert not torch.isinf(logits[1, :33]).any() and torch.isinf(logits[1, 33:]).all()


def test_max_rollback_tokens_is_reported_as_xgrammar_does():
    """0.2.8 deprecates the argument: accepted with a DeprecationWarning, reported as -1, and
    rollback stays unlimited."""
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo(VOCAB)).compile_grammar('root ::= "b"*')
    with pytest.warns(DeprecationWarning, match="max_rollback_tokens"):
        matcher = xgr.GrammarMatcher(compiled, max_rollback_tokens=2)
    assert matcher.max_rollback_tokens == -1
    assert all(matcher.accept_token(1) for _ in range(5))
    matcher.rollback(5)
    assert xgr.GrammarMatcher(compiled).max_rollback_tokens == -1
