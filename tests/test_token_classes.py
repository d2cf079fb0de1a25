"""Token classes (xg2ref/token_classes/, specs/09-token-classes.md): the class masks, gathered to
tokens, are the brute-force oracle's along walks with rollbacks; swapping a token for another of
its class never changes the oracle's verdicts (CFGzip's Theorem 1); tokens never allowed stay
masked where a stop token is allowed; saved classes refuse another vocabulary; the constructs
the classes cannot keep exact are refused by name."""

import os
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.compiler import compile_ir_grammar
from xg2ref.grammar.printer import print_grammar
from xg2ref.oracle.brute_force import brute_force_mask
from xg2ref.oracle.engines import OracleMatcher
from xg2ref.oracle.congruence import syntactic_classes, valid_nowhere
from xg2ref.oracle.recognizer import Recognizer
from xg2ref.oracle.strategies import grammars, vocabularies
from xg2ref.token_classes import (RELATIONS, ClassMatcher, TokenClasses, TokenClassesMismatch,
                                  TokenClassesUnsupported, compute_token_classes)


def _setup(ir, vocab, stops):
    grammar = xgr.Grammar(ir)
    info = xgr.TokenizerInfo(vocab, stop_token_ids=stops)
    return grammar, info, compile_ir_grammar(grammar, info)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(alphabet=b"abc", lookaheads=True), vocabularies(alphabet=b"abc"), st.sampled_from(RELATIONS),
       st.integers(0, 10**6))
def test_class_masks_are_the_oracle_s_along_walks_with_rollbacks(ir, vocabulary, relation, seed):
    vocab, stops, special = vocabulary
    grammar, info, compiled = _setup(ir, vocab, stops)
    classes = compute_token_classes(compiled, relation)
    matcher = ClassMatcher.from_grammar(grammar, info, classes)
    oracle = Recognizer(ir)
    rng = random.Random(seed)
    history = [b""]
    for _ in range(8):
        want = brute_force_mask(oracle, history[-1], vocab, stop_token_ids=stops, special_token_ids=special,
                                vocab_size=info.vocab_size)
        assert np.array_equal(matcher.compute_bool_mask(), want), (relation, history[-1])
        allowed = [int(t) for t in np.flatnonzero(want) if t not in stops]
        if len(history) > 1 and (not allowed or rng.random() < 0.25):
            matcher.rollback(1)
            history.pop()
            continue
        if not allowed:
            break
        token = rng.choice(allowed)
        assert matcher.accept_token(token)
        history.append(history[-1] + vocab[token])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(alphabet=b"abc"), vocabularies(alphabet=b"ab", max_tokens=16), st.lists(st.integers(0, 50), max_size=5),
       st.sampled_from(("byte_blocks", "displacement")), st.integers(0, 10**6))
def test_swapping_a_token_for_a_class_member_keeps_the_oracle_s_verdicts(ir, vocabulary, picks, relation, seed):
    """Theorem 1, on the oracle (which shares no code with the classes): a sequence of tokens and
    the same sequence with members swapped for others of their classes are both prefixes, or
    neither, and both sentences, or neither."""
    vocab, stops, _ = vocabulary
    _, _, compiled = _setup(ir, vocab, stops)
    classes = compute_token_classes(compiled, relation)
    regular = [t for t in range(len(vocab)) if classes.class_of[t] < classes.n_regular]
    if not regular:
        return
    rng = random.Random(seed)
    tokens = [regular[p % len(regular)] for p in picks]
    swapped = [int(rng.choice(classes.members(int(classes.class_of[t])))) for t in tokens]
    oracle = Recognizer(ir)
    a, b = b"".join(vocab[t] for t in tokens), b"".join(vocab[t] for t in swapped)
    assert oracle.is_prefix(a) == oracle.is_prefix(b)
    assert oracle.is_sentence(a) == oracle.is_sentence(b)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(alphabet=b"abc", refs=False, max_depth=4), vocabularies(alphabet=b"abc", max_tokens=16))
def test_classes_lie_inside_the_exact_congruence_of_regular_grammars(ir, vocabulary):
    """On a regular grammar the syntactic congruence is exact (the minimal DFA's transformations,
    oracle/congruence.py): every class lies inside one of its classes, tokens valid nowhere are
    exactly those displacement sends to the never class, and displacement classes are unions of
    byte_blocks classes."""
    vocab, stops, special = vocabulary
    _, _, compiled = _setup(ir, vocab, stops)
    regular = [t for t in range(len(vocab)) if t not in stops and t not in special]
    exact = dict(zip(regular, syntactic_classes(ir, [vocab[t] for t in regular])))
    found = {relation: compute_token_classes(compiled, relation) for relation in ("byte_blocks", "displacement")}
    for relation, classes in found.items():
        for t in regular:
            if classes.class_of[t] == classes.never_class:
                continue
            for u in classes.members(int(classes.class_of[t])):
                assert exact[t] == exact[int(u)], (relation, vocab[t], vocab[int(u)])
    disp, blocks = found["displacement"], found["byte_blocks"]
    for t in regular:
        assert (disp.class_of[t] == disp.never_class) == valid_nowhere(ir, vocab[t]), vocab[t]
        for u in regular:
            if blocks.class_of[t] == blocks.class_of[u]:
                assert disp.class_of[t] == disp.class_of[u]


def test_displacement_merges_tokens_of_other_bytes_under_left_recursion():
    grammar = xgr.Grammar.from_ebnf('root ::= e\ne ::= e "+" t | t\nt ::= [0-9]+ | "(" e ")"')
    vocab = [b"1", b"12", b"+", b"+1", b"+12", b"1+", b"1+2", b"a", b"(", b"((", b")", b"))", b"</s>"]
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[12])
    classes = compute_token_classes(xgr.GrammarCompiler(info).compile_grammar(grammar), "displacement")
    same = lambda u, v: classes.class_of[vocab.index(u)] == classes.class_of[vocab.index(v)]  # noqa: E731
    assert same(b"1", b"12") and same(b"+1", b"+12") and not same(b"1+", b"1+2") and not same(b"(", b"((")
    assert not same(b")", b"))") and not same(b"1", b"+1")
    assert classes.class_of[vocab.index(b"a")] == classes.never_class
    assert classes.stats["dead_tokens"] == 1 and classes.stats["fallback_tokens"] == 0


def test_a_frontier_past_its_limit_falls_back_to_one_class_per_signature():
    grammar = xgr.Grammar.from_ebnf('root ::= e\ne ::= e "+" t | t\nt ::= [0-9]+ | "(" e ")"')
    vocab = [b"1", b"12", b"+1", b"+12", b"1+", b"((", b"))", b"</s>"]
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[7])
    compiled = xgr.GrammarCompiler(info).compile_grammar(grammar)
    tight = compute_token_classes(compiled, "displacement", max_frontier=1)
    blocks = compute_token_classes(compiled, "byte_blocks")
    assert tight.stats["fallback_tokens"] > 0
    assert tight.stats["fallback_signatures"] <= tight.stats["signatures"]
    for t in range(7):  # (a signature of its own: the byte_blocks class, exact)
        if tight.class_of[t] != tight.never_class:
            assert set(tight.members(int(tight.class_of[t]))) >= set(blocks.members(int(blocks.class_of[t])))


def test_byte_blocks_group_tokens_the_grammar_cannot_tell_apart():
    grammar = xgr.Grammar.from_ebnf('root ::= [a-c]+ "." [0-9]*')
    vocab = [b"a", b"b", b"x", b"ab", b"ba", b".", b"1", b"22", b"a.", b"</s>"]
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[9])
    classes = compute_token_classes(xgr.GrammarCompiler(info).compile_grammar(grammar), "byte_blocks")
    same = lambda u, v: classes.class_of[vocab.index(u)] == classes.class_of[vocab.index(v)]  # noqa: E731
    assert same(b"a", b"b") and same(b"ab", b"ba") and not same(b"a", b"ab") and not same(b"a", b"x")
    assert classes.representatives[classes.class_of[vocab.index(b"ab")]] == vocab.index(b"ab")  # lowest id
    assert classes.class_of[9] == classes.stop_class and classes.n_regular < 9


def test_tokens_never_allowed_stay_masked_where_a_stop_token_is_allowed():
    """CFGzip's public code gathers its ignored tokens as the last class, the stop class there,
    so they look allowed whenever EOS is; here they have a class of their own, always 0."""
    grammar = xgr.Grammar.from_ebnf('root ::= "ab"')
    vocab = [b"a", b"b", b"", b"</s>", b"ab"]  # id 2: special (empty, not a stop)
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[3], vocab_size=8)  # ids 5..7: padding
    classes = compute_token_classes(xgr.GrammarCompiler(info).compile_grammar(grammar), "byte_blocks")
    assert {int(classes.class_of[t]) for t in (2, 5, 6, 7)} == {classes.never_class}
    matcher = ClassMatcher.from_grammar(grammar, info, classes)
    assert matcher.accept_token(4)
    bitmask = xgr.allocate_token_bitmask(1, 8)
    matcher.fill_next_token_bitmask(bitmask)
    mask = xgr.bitmask.unpack_bitmask(np.asarray(bitmask), 8)[0]
    assert mask.tolist() == [False, False, False, True, False, False, False, False]
    assert not matcher.accept_token(2) and not matcher.accept_token(6)


def test_saved_classes_load_for_their_vocabulary_only(tmp_path):
    grammar = xgr.Grammar.from_ebnf('root ::= [a-c]+')
    info = xgr.TokenizerInfo([b"a", b"b", b"ab", b"</s>"], stop_token_ids=[3])
    compiled = xgr.GrammarCompiler(info).compile_grammar(grammar)
    classes = compute_token_classes(compiled, "byte_blocks")
    path = tmp_path / "classes.npz"
    classes.save(path)
    again = TokenClasses.load(path, compiled)
    assert again.relation == "byte_blocks" and np.array_equal(again.class_of, classes.class_of)
    assert np.array_equal(again.representatives, classes.representatives)
    other = xgr.TokenizerInfo([b"a", b"c", b"ab", b"</s>"], stop_token_ids=[3])
    with pytest.raises(TokenClassesMismatch, match="vocabulary"):
        TokenClasses.load(path, xgr.GrammarCompiler(other).compile_grammar(grammar))
    stops = xgr.TokenizerInfo([b"a", b"b", b"ab", b"</s>"], stop_token_ids=[2])
    with pytest.raises(TokenClassesMismatch, match="stops"):
        TokenClasses.load(path, xgr.GrammarCompiler(stops).compile_grammar(grammar))
    (tmp_path / "bad.npz").write_bytes(b"not a file")
    with pytest.raises(TokenClassesMismatch, match="not a token classes file"):
        TokenClasses.load(tmp_path / "bad.npz")


@pytest.mark.parametrize("ebnf, name", [
    ('root ::= TagDispatch(("<a>", r), excludes=(), loop_after_dispatch=false)\nr ::= "x" "</a>"', None),
    ('root ::= x "b"\nx[max_tokens=2] ::= [ab]*', "budgets"),
    ('root ::= x "b"\nx[max_chars=2] ::= [ab]*', "budgets"),
])
def test_constructs_the_classes_cannot_keep_exact_are_refused_by_name(ebnf, name):
    info = xgr.TokenizerInfo([b"a", b"b", b"<a>", b"x", b"</a>", b"</s>"], stop_token_ids=[5])
    compiled = xgr.GrammarCompiler(info).compile_grammar(xgr.Grammar.from_ebnf(ebnf))
    if name is None:  # (a TagDispatch reads bytes only: supported)
        compute_token_classes(compiled, "byte_blocks")
    else:
        with pytest.raises(TokenClassesUnsupported, match=name):
            compute_token_classes(compiled, "byte_blocks")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), vocabularies(b"abc", 10), st.sampled_from(RELATIONS), st.integers(0, 2**16))
def test_token_sets_refine_the_classes(data, vocab_spec, relation, seed):
    """Token, ExcludeToken, TokenTagDispatch: classes refined by membership, the inner grammar's
    sets rewritten over classes; masks and verdicts are the oracle's (read with token marks)."""
    vocab, stops, _ = vocab_spec
    ir = data.draw(grammars(max_rules=3, token_ids=tuple(range(len(vocab)))))
    grammar = xgr.Grammar.from_ir(ir)
    info = xgr.TokenizerInfo(vocab, stop_token_ids=stops)
    classes = compute_token_classes(compile_ir_grammar(grammar, info), relation)
    matcher, oracle = ClassMatcher.from_grammar(grammar, info, classes), OracleMatcher(ir, info)
    rng = random.Random(seed)
    for _ in range(6):
        want = oracle.bool_mask()
        assert np.array_equal(matcher.compute_bool_mask(), want), (relation, print_grammar(ir), vocab, oracle.prefix)
        allowed = [int(t) for t in np.flatnonzero(want) if t not in stops]
        if not allowed:
            break
        token = rng.choice(allowed)
        assert matcher.accept_token(token) and oracle.accept_token(token)


def test_a_token_set_splits_tokens_of_one_shape():
    grammar = xgr.Grammar.from_ebnf('root ::= ([a-c] | Token(1))+')
    vocab = [b"a", b"b", b"c", b"</s>"]
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[3])
    for relation in ("byte_blocks", "displacement"):
        classes = compute_token_classes(xgr.GrammarCompiler(info).compile_grammar(grammar), relation)
        assert classes.class_of[0] == classes.class_of[2] != classes.class_of[1], relation


def test_unordered_members_are_refused_by_name():
    info = xgr.TokenizerInfo([b"{", b"}", b'"a"', b":", b"1", b",", b'"b"', b"</s>"], stop_token_ids=[7])
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
              "required": ["a", "b"]}
    compiled = xgr.GrammarCompiler(info).compile_json_schema(schema, any_order=True)
    with pytest.raises(TokenClassesUnsupported, match="unordered"):
        compute_token_classes(compiled, "byte_blocks")


@pytest.mark.parametrize("relation", [
    "byte_blocks", pytest.param("displacement", marks=pytest.mark.jit_only)])
def test_a_real_vocabulary_json_schema_walk(relation):
    """llama3 and a JSON schema: the class masks are the full vocabulary's at every step."""
    info = xgr.TokenizerInfo.from_quicktok("llama3")
    grammar = xgr.Grammar.from_json_schema({"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "string", "maxLength": 5}}, "required": ["a"]})
    compiled = xgr.GrammarCompiler(info).compile_grammar(grammar)
    classes = compute_token_classes(compiled, relation)
    assert classes.n_regular < (0.7 * info.vocab_size if relation == "byte_blocks" else 1000)
    matcher, full = ClassMatcher.from_grammar(grammar, info, classes), xgr.GrammarMatcher(compiled)
    rng = random.Random(7)
    for _ in range(12):
        want = full.compute_bool_mask()
        assert np.array_equal(matcher.compute_bool_mask(), want)
        allowed = [int(t) for t in np.flatnonzero(want) if t not in info.stop_token_ids]
        if not allowed:
            break
        token = rng.choice(allowed)
        assert matcher.accept_token(token) and full.accept_token(token)


SIMULATED = textwrap.dedent("""
    import numpy as np
    from xg2ref.kernels.apply_bitmask import NEG_INF_BITS
    from xg2ref.kernels.class_mask import expand_class_bitmask
    from xg2ref.kernels.class_mask_cuda import launch_class_mask_cuda
    rng = np.random.default_rng(3)
    for vocab_size, n_classes in ((1, 1), (40, 5), (300, 37), (1000, 70)):
        class_of = rng.integers(0, n_classes + 2, size=vocab_size).astype(np.int32)  # n_classes + 1: never
        words = (n_classes + 2 + 31) // 32  # (covering the never class, its bit 0: the gather's contract)
        class_words = rng.integers(-2**31, 2**31, size=(3, words)).astype(np.int32)
        bits_of = np.unpackbits(class_words.view(np.uint8), axis=1, bitorder="little")
        bits_of[:, n_classes:] = 0
        class_words = np.packbits(bits_of, axis=1, bitorder="little").view(np.int32)
        for dtype in ("float32", "float16", "bfloat16"):
            int_type, bits = NEG_INF_BITS[dtype]
            raw = rng.integers(-1000, 1000, size=(3, vocab_size)).astype(int_type)
            want = raw.copy()
            rows = [0, 2]
            for r in rows:  # the CPU gather, then the plain mask
                out = np.zeros((vocab_size + 31) // 32, dtype=np.int32)
                expand_class_bitmask(class_words[r].view(np.uint32), class_of, n_classes, out.view(np.uint32))
                for t in range(vocab_size):
                    if (int(out[t // 32]) >> (t % 32)) & 1 == 0:
                        want[r, t] = bits
            launch_class_mask_cuda(raw, class_words, class_of, n_classes, np.array(rows, dtype=np.int32), vocab_size,
                                   int_type(bits))
            assert np.array_equal(raw, want), (vocab_size, n_classes, dtype)
    print("simulated class kernel ok")
""")


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.integers(1, 80), st.integers(0, 2**31))
def test_the_gather_is_a_lookup_of_each_token_s_class_bit(vocab_size, n_classes, seed):
    """kernels/class_mask.py against numpy: token t allowed iff bit class_of[t] of the class mask
    is set, the never class (past n_classes) never; the count is the number allowed."""
    from xg2ref.kernels.class_mask import expand_class_bitmask

    rng = np.random.default_rng(seed)
    class_of = rng.integers(0, n_classes + 2, size=vocab_size).astype(np.int32)
    allowed_classes = rng.random(n_classes) < 0.5
    class_bits = np.zeros(32 * ((n_classes + 2 + 31) // 32), dtype=np.uint8)
    class_bits[:n_classes] = allowed_classes
    class_words = np.packbits(class_bits, bitorder="little").view(np.uint32)
    out = np.full((vocab_size + 31) // 32, -1, dtype=np.int32)
    count = expand_class_bitmask(class_words, class_of, n_classes, out.view(np.uint32))
    want = np.array([c < n_classes and allowed_classes[c] for c in class_of])
    have = np.unpackbits(out.view(np.uint8), bitorder="little")[:vocab_size].astype(bool)
    assert np.array_equal(have, want) and count == want.sum()
    assert not np.unpackbits(out.view(np.uint8), bitorder="little")[vocab_size:].any()


def test_the_fused_cuda_gather_on_the_simulator():
    """The GPU kernel (gather and mask in one) equals the CPU gather followed by the plain mask,
    for every float dtype, rows picked, and tokens of the never class."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    done = subprocess.run([sys.executable, "-c", SIMULATED], env=env, capture_output=True, text=True, timeout=600,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "simulated class kernel ok" in done.stdout


@pytest.mark.xgrammar
@pytest.mark.jit_only
@pytest.mark.parametrize("source", [
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "string"}}},
     "required": ["a"]},
    'root ::= e\ne ::= e [-+] t | t\nt ::= t "*" f | f\nf ::= [0-9]+ | "(" e ")" | "x" Token(1734)',
])
def test_xgrammar_over_the_classes_gives_the_full_vocabulary_s_masks(source):
    """xgrammar 0.2.8 run over the representatives (`ClassMatcher.for_xgrammar`): along a walk
    over llama3, its gathered masks are xg2ref's over the whole vocabulary."""
    pytest.importorskip("xgrammar")
    info = xgr.TokenizerInfo.from_quicktok("llama3")
    grammar = xgr.Grammar.from_json_schema(source) if isinstance(source, dict) else xgr.Grammar.from_ebnf(source)
    compiled = xgr.GrammarCompiler(info).compile_grammar(grammar)
    classes = compute_token_classes(compiled, "displacement")
    matcher, full = ClassMatcher.for_xgrammar(grammar, info, classes), xgr.GrammarMatcher(compiled)
    rng = random.Random(3)
    for _ in range(20):
        want = full.compute_bool_mask()
        assert np.array_equal(matcher.compute_bool_mask(), want)
        allowed = [int(t) for t in np.flatnonzero(want) if t not in info.stop_token_ids]
        if not allowed:
            break
        token = rng.choice(allowed)
        assert matcher.accept_token(token) and full.accept_token(token)
