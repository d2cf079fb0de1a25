"""Budgets (`rule[max_tokens=N]`, `rule[max_chars=N]`): deadlines per rule occurrence, ENFORCE /
RELAX at each mask (matcher.py) and CHAR-ENFORCE at each code point (kernels/earley.py), against
xgrammar 0.2.8 on hand-picked grammars, and the matcher's own consistency (cached mask ==
every-token mask == what accept_token takes) on random ones."""

import random

import numpy as np
import pytest

import xg2ref as xgr

VOCAB = ["<s>", "</s>", "a", "b", "aa", "ab", "c", "ac", "bb", "ca", "cc", "abc", "ba"]
STOP = 1


def compiled(grammar: str):
    info = xgr.TokenizerInfo(VOCAB, xgr.VocabType.RAW, stop_token_ids=[STOP])
    return xgr.GrammarCompiler(info).compile_grammar(grammar)


def allowed(matcher) -> list[str]:
    return [VOCAB[i] for i in np.flatnonzero(matcher.compute_bool_mask())]


# (grammar, tokens, the masks before each token and after the last, as xgrammar 0.2.8 gives them)
CASES = [
    # x is predicted before the first token: it may read tokens 0 and 1, then only "c" is left
    ('root ::= x "c"\nx[max_tokens=2] ::= [ab]*', ["a", "a"],
     [["a", "b", "aa", "ab", "c", "ac", "bb", "abc", "ba"], ["a", "b", "aa", "ab", "c", "ac", "bb", "abc", "ba"],
      ["c"]]),
    # predicted while token 0 is read: tokens 1 and 2
    ('root ::= "c" x "c"\nx[max_tokens=2] ::= [ab]*', ["c", "a", "a"],
     [["c", "ca", "cc"], ["a", "b", "aa", "ab", "c", "ac", "bb", "abc", "ba"],
      ["a", "b", "aa", "ab", "c", "ac", "bb", "abc", "ba"], ["c"]]),
    # a nested budget ends with its parent's
    ('root ::= x "c"\nx[max_tokens=3] ::= "a" y\ny[max_tokens=5] ::= [ab]*', ["a", "a", "a"],
     [["a", "aa", "ab", "ac", "abc"], ["a", "b", "aa", "ab", "c", "ac", "bb", "abc", "ba"],
      ["a", "b", "aa", "ab", "c", "ac", "bb", "abc", "ba"], ["c"]]),
    # nothing else is alive and x cannot end: RELAX, x runs on until it can
    ('root ::= x "c"\nx[max_tokens=2] ::= [ab]* "b"', ["a", "a", "a", "b"],
     [["a", "b", "aa", "ab", "bb", "abc", "ba"]] * 4 + [["c"]]),
    # ENFORCE kills x's way through "a a": the second alternative is what is left
    ('root ::= x "c" | "a" "a"* "b"\nx[max_tokens=1] ::= [a]*', ["a", "a", "a", "b"],
     [["a", "aa", "ab", "c", "ac"], ["a", "b", "aa", "ab", "c"], ["a", "b", "aa", "ab"], ["a", "b", "aa", "ab"],
      ["</s>"]]),
    # max_tokens=0 before the first token is no budget at all (xgrammar's -1 means none) ...
    ('root ::= r\nr[max_tokens=0] ::= [ab]*', ["a", "b", "a"],
     [["</s>", "a", "b", "aa", "ab", "bb", "ba"]] * 4),
    # ... but predicted after it, it is a budget of no token
    ('root ::= "c" r\nr[max_tokens=0] ::= [ab]*', ["ca"],
     [["c", "ca"], ["</s>"]]),
    # the root's own budget: once expired, only the end is left
    ('root[max_tokens=1] ::= [ab]*', ["a"],
     [["</s>", "a", "b", "aa", "ab", "bb", "ba"], ["</s>"]]),
    # character budgets act inside a token: "ac" passes x's end, "aa" would read a fourth character
    ('root ::= x "c"\nx[max_chars=3] ::= [ab]*', ["aa", "a"],
     [["a", "b", "aa", "ab", "c", "ac", "bb", "abc", "ba"], ["a", "b", "c", "ac"], ["c"]]),
    # ... and give way while the rule cannot end
    ('root ::= x "c"\nx[max_chars=3] ::= [ab]* "b"', ["aa", "a", "a", "b"],
     [["a", "b", "aa", "ab", "bb", "abc", "ba"]] + [["a", "b", "aa", "ab", "abc"]] * 3 + [["c"]]),
    ('root ::= "c" x "c"\nx[max_chars=2] ::= [ab]*', ["ca", "b"],
     [["c", "ca", "cc"], ["a", "b", "c", "ac"], ["c"]]),
    ('root ::= x "c"\nx[max_chars=4] ::= "a" y\ny[max_chars=1] ::= [ab]*', ["ab"],
     [["a", "aa", "ab", "ac", "abc"], ["c"]]),
    ('root[max_chars=2] ::= [abc]*', ["a", "b"],
     [["</s>", "a", "b", "aa", "ab", "c", "ac", "bb", "ca", "cc", "ba"], ["</s>", "a", "b", "c"], ["</s>"]]),
]


@pytest.mark.parametrize("grammar, tokens, masks", CASES, ids=[c[0].split("\n")[-1][:40] for c in CASES])
def test_masks_follow_the_budgets(grammar, tokens, masks):
    matcher = xgr.GrammarMatcher(compiled(grammar))
    for k, token in enumerate(tokens):
        assert allowed(matcher) == masks[k], (k, tokens[:k])
        assert matcher.accept_token(VOCAB.index(token))
    assert allowed(matcher) == masks[-1]


@pytest.mark.xgrammar
@pytest.mark.parametrize("grammar, tokens, masks", CASES, ids=[c[0].split("\n")[-1][:40] for c in CASES])
def test_the_expected_masks_are_xgrammars(grammar, tokens, masks):
    _check_xgrammar_walk(VOCAB, grammar, tokens, masks)


# Token edges under character budgets, as xgrammar 0.2.8 reads them: a token edge reads while
# the rule's budget is not spent, whatever the token's length (best effort), and its code
# points then count; CHAR-ENFORCE decides, as for a code point read from bytes
TOKEN_VOCAB = ["<s>", "</s>", "a", "ab", "<T>", "<U>", ">", "中文", "中"]
TOKEN_CASES = [
    # one code point left: the token edge may read (3 code points), then the budget is spent
    ('root ::= r ">"\nr[max_chars=2] ::= [a-z]* Token(4)?', ["a", "<T>"],
     [["a", "ab", "<T>", ">"], ["a", "<T>", ">"], [">"]]),
    # spent by bytes: no token edge
    ('root ::= r ">"\nr[max_chars=2] ::= [a-z]* Token(4)?', ["ab"], [["a", "ab", "<T>", ">"], [">"]]),
    # spent by a token: nothing more, of either kind
    ('root ::= r ">"\nr[max_chars=2] ::= ([a-z] | Token(4))*', ["<T>"], [["a", "ab", "<T>", ">"], [">"]]),
    # a budget of nothing reads no token
    ('root ::= r ">"\nr[max_chars=0] ::= Token(4)?', [], [[">"]]),
    ('root ::= r ">"\nr[max_chars=1] ::= Token(4) Token(5)?', ["<T>"], [["<T>"], [">"]]),
    # ... unless the rule cannot end and nothing else is alive: the budget gives way
    ('root ::= r ">"\nr[max_chars=1] ::= Token(4) Token(5)', ["<T>", "<U>"], [["<T>"], ["<U>"], [">"]]),
    # code points, not bytes: 中文 is 2 of 3
    ('root ::= r ">"\nr[max_chars=3] ::= Token(7) [a-z]*', ["中文", "a"], [["中文"], ["a", ">"], [">"]]),
    ('root ::= r ">"\nr[max_chars=3] ::= (Token(7, 8) | [a-z])*', ["中文"],
     [["a", "ab", ">", "中文", "中"], ["a", ">", "中文", "中"]]),
    # the end of the sentence counts as alive
    ('root ::= r\nr[max_chars=1] ::= [a-z]* Token(4)?', ["a"], [["</s>", "a", "<T>"], ["</s>"]]),
]


def _token_case_matcher(grammar: str):
    info = xgr.TokenizerInfo(TOKEN_VOCAB, xgr.VocabType.RAW, stop_token_ids=[STOP])
    return xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(grammar))


@pytest.mark.parametrize("grammar, tokens, masks", TOKEN_CASES, ids=[c[0].split("\n")[-1][:48] for c in TOKEN_CASES])
def test_token_edges_follow_character_budgets(grammar, tokens, masks):
    matcher = _token_case_matcher(grammar)
    for k, token in enumerate(tokens + [None]):
        mask = matcher.compute_bool_mask()
        assert [TOKEN_VOCAB[i] for i in np.flatnonzero(mask)] == masks[k], (k, tokens[:k])
        for t in range(len(TOKEN_VOCAB)):  # what the mask says is what accept_token does
            assert matcher.fork().accept_token(t) == bool(mask[t]), (k, TOKEN_VOCAB[t])
        if token is not None:
            assert matcher.accept_token(TOKEN_VOCAB.index(token))


@pytest.mark.xgrammar
@pytest.mark.parametrize("grammar, tokens, masks", TOKEN_CASES, ids=[c[0].split("\n")[-1][:48] for c in TOKEN_CASES])
def test_the_expected_token_edge_masks_are_xgrammars(grammar, tokens, masks):
    _check_xgrammar_walk(TOKEN_VOCAB, grammar, tokens, masks)


def _check_xgrammar_walk(vocab: list, grammar: str, tokens: list, masks: list) -> None:
    """xgrammar 0.2.8's mask before each of `tokens` (token texts of `vocab`) and after the last
    is `masks`' (allowed token texts), each token accepted."""
    xg = pytest.importorskip("xgrammar")
    info = xg.TokenizerInfo(vocab, xg.VocabType.RAW, stop_token_ids=[STOP])
    matcher = xg.GrammarMatcher(xg.GrammarCompiler(info, cache_enabled=False).compile_grammar(grammar))
    for k, token in enumerate(tokens + [None]):
        bitmask = xg.allocate_token_bitmask(1, len(vocab))
        matcher.fill_next_token_bitmask(bitmask)
        theirs = [vocab[i] for i in range(len(vocab)) if (int(bitmask[0, i // 32]) >> (i % 32)) & 1]
        assert theirs == masks[k], (k, tokens[:k])
        if token is not None:
            assert matcher.accept_token(vocab.index(token))


def test_enforcement_follows_a_mask():
    """Without a mask computed first, a token is read by every item (xgrammar does the same),
    and rollback forgets the decision of the last mask."""
    grammar = compiled('root ::= x "c"\nx[max_tokens=2] ::= [ab]*')
    quiet = xgr.GrammarMatcher(grammar)
    assert all(quiet.accept_token(VOCAB.index("a")) for _ in range(3))
    masked = xgr.GrammarMatcher(grammar)
    for _ in range(2):
        allowed(masked)
        assert masked.accept_token(VOCAB.index("a"))
    assert allowed(masked) == ["c"]
    assert not masked.accept_token(VOCAB.index("a"))
    masked.rollback(1)
    assert masked.accept_token(VOCAB.index("a")) and masked.accept_token(VOCAB.index("a"))
    assert masked.accept_string("a")  # accept_string never enforces


def test_budgeted_rules_stay_rules():
    """A budget belongs to a rule occurrence: no rule of a budgeted grammar is inlined, and a
    budgeted rule's tail self-call stays a call."""
    fsms = compiled('root ::= x "c"\nx[max_tokens=2] ::= [ab] x?\ny ::= "q"').fsms
    assert "x" in fsms.rule_names and fsms.max_tokens[fsms.rule_names.index("x")] == 2
    x = fsms.rule_names.index("x")
    assert any(rule == x for _, rule, _ in fsms.fsms[x].rule_edges)


def _random_grammar(rng: random.Random, option: str = "max_tokens") -> str:
    def expr(depth, me):
        k = rng.random()
        if depth == 0 or k < 0.3:
            return rng.choice(['"a"', '"b"', '"c"', '"ab"', "[ab]", "[abc]", '""'] + [f"r{i}" for i in range(me + 1, 4)])
        if k < 0.55:
            return " ".join(expr(depth - 1, me) for _ in range(rng.randint(2, 3)))
        if k < 0.8:
            return "(" + " | ".join(expr(depth - 1, me) for _ in range(rng.randint(2, 3))) + ")"
        return "(" + expr(depth - 1, me) + ")" + rng.choice(["*", "+", "?"])
    lines = []
    for i in range(4):
        opt = f"[{option}={rng.randint(0, 4)}]" if rng.random() < 0.6 else ""
        body = expr(3, i)
        if i and rng.random() < 0.3:
            body = f"({body}) r{i}?"
        lines.append(f"{'root' if i == 0 else f'r{i}'}{opt} ::= {body}")
    return "\n".join(lines)


@pytest.mark.parametrize("option", ["max_tokens", "max_chars"])
@pytest.mark.parametrize("seed", range(30))
def test_masks_are_what_accept_takes(seed, option):
    """On random budgeted grammars and random walks: the cached mask equals the every-token
    mask, and a token is in the mask exactly when accept_token takes it."""
    rng = random.Random(seed)
    grammar = compiled(_random_grammar(rng, option))
    matcher = xgr.GrammarMatcher(grammar)
    for _ in range(7):
        mask = matcher.compute_bool_mask()
        assert (mask == matcher._every_token_bool_mask()).all()
        for token in range(len(VOCAB)):
            trial = matcher.fork()
            assert trial.accept_token(token) == bool(mask[token]), (VOCAB[token], matcher._history)
        choices = np.flatnonzero(mask)
        if not len(choices):
            break
        token = int(rng.choice(list(choices)))
        assert matcher.accept_token(token)
        if token == STOP:
            break


TAG_VOCAB = VOCAB + ["<", "</t>", ">"]
BUDGETED_TAGS = [
    {"type": "sequence", "elements": [{"type": "any_text", "max_tokens": 2}, {"type": "const_string", "value": "c"}]},
    {"type": "tag", "begin": "<", "content": {"type": "any_text", "max_tokens": 2}, "end": "</t>"},
    {"type": "triggered_tags", "triggers": ["<"],
     "tags": [{"type": "tag", "begin": "<", "content": {"type": "any_text", "max_tokens": 1}, "end": ">"}]},
]


@pytest.mark.xgrammar
@pytest.mark.parametrize("option", ["max_tokens", "max_chars"])
@pytest.mark.parametrize("fmt", BUDGETED_TAGS, ids=[f["type"] for f in BUDGETED_TAGS])
def test_structural_tag_budgets_match_xgrammar(fmt, option):
    """`any_text.max_tokens` / `max_chars` (the budgets structural tags use): the same masks as
    xgrammar along random walks over its masks."""
    xg = pytest.importorskip("xgrammar")
    import json

    tag = json.loads(json.dumps({"type": "structural_tag", "format": fmt}).replace('"max_tokens"', f'"{option}"'))
    theirs_c = xg.GrammarCompiler(xg.TokenizerInfo(TAG_VOCAB, xg.VocabType.RAW, stop_token_ids=[STOP]),
                                  cache_enabled=False).compile_structural_tag(json.dumps(tag))
    ours_c = xgr.GrammarCompiler(xgr.TokenizerInfo(TAG_VOCAB, xgr.VocabType.RAW, stop_token_ids=[STOP])) \
        .compile_structural_tag(tag)
    for seed in range(20):
        rng = random.Random(seed)
        theirs, ours = xg.GrammarMatcher(theirs_c), xgr.GrammarMatcher(ours_c)
        for _ in range(8):
            bitmask = xg.allocate_token_bitmask(1, len(TAG_VOCAB))
            theirs.fill_next_token_bitmask(bitmask)
            want = [i for i in range(len(TAG_VOCAB)) if (int(bitmask[0, i // 32]) >> (i % 32)) & 1]
            assert list(np.flatnonzero(ours.compute_bool_mask())) == want
            if not want:
                break
            token = rng.choice(want)
            assert theirs.accept_token(token) and ours.accept_token(token)
            if token == STOP:
                break


# ---- a spent budget closes a rule with a marker (xg2ref/marker_close.py, FORCE) --------------------

MARKER_VOCAB = ["x", "<", ">", "a!", "b!", "a", "b", "!"]


def _lark_matcher(mod, lark: str, vocab: list):
    """A matcher of `lark` over `vocab` in engine `mod` (xg2ref or xgrammar), and its mask reader."""
    info = mod.TokenizerInfo(vocab)
    grammar = mod.Grammar.from_lark(lark, tokenizer_info=info)
    matcher = mod.GrammarMatcher(mod.GrammarCompiler(info, cache_enabled=False).compile_grammar(grammar),
                                 terminate_without_stop_token=True)
    bitmask = mod.allocate_token_bitmask(1, info.vocab_size)

    def allowed(m) -> list:
        m.fill_next_token_bitmask(bitmask)
        rejected = set(mod.testing._get_masked_tokens_from_bitmask(bitmask, info.vocab_size))
        return [t for t in range(info.vocab_size) if t not in rejected]

    return matcher, allowed


def _walk_marker(mod, lark: str, vocab: list, steps: list) -> list:
    """(allowed ids, verdict) per step of `steps` (token ids; "rollback", "fork"), as one list."""
    matcher, allowed = _lark_matcher(mod, lark, vocab)
    out = []
    for step in steps:
        if step == "rollback":
            matcher.rollback(1)
            continue
        if step == "fork":
            matcher = matcher.fork()
            continue
        out.append(allowed(matcher))
        out.append(matcher.accept_token(step))
    out.append((matcher.is_terminated(), matcher.get_captures()))
    return out


MARKER_CASES = [
    # a marker of its own rule (END), begun inside the budget and ended past it: the split is found
    # (the marker's helper rule reads bytes, though a budget keeps every other rule a rule)
    ('start[capture="all"]: value ">"\nvalue[max_tokens=1, capture="body", {a}=END, stop_capture="marker"]: /[ab]*/\n'
     'END: /!!+/', MARKER_VOCAB, [3, 7, 2]),
    # the budget spent inside the body: the rule ends without "!", ">" is the one way on; a token the
    # rebuilt set rejects commits nothing, a fork carries the pending close, and a rollback past the
    # close takes the marker-first path again
    ('start[capture="all"]: value ">"\nvalue[max_tokens=2, capture="body", {a}="!", stop_capture="marker"]: /[ab]*/',
     MARKER_VOCAB, [5, 6, 0, "fork", 2, "rollback", "rollback", 3, 2]),
    # closing the inner rule reaches the outer one's deadline too: its expired "y" does not survive
    ('start: outer "z"\nouter[max_tokens=1]: inner | inner "y"\ninner[max_tokens=1, {a}="!"]: /x*/',
     ["x", "!", "z", "y"], [0, 2]),
]


@pytest.mark.parametrize("attribute", ["stop", "suffix"])
@pytest.mark.parametrize("lark, vocab, steps", MARKER_CASES, ids=["marker-rule", "same-rule", "expired-parent"])
def test_a_spent_budget_closes_a_rule_without_its_marker(lark, vocab, steps, attribute):
    walk = _walk_marker(xgr, lark.replace("{a}", attribute), vocab, steps)
    if "END" in lark:
        assert walk == [[3, 4, 5, 6, 7], True, [7], True, [2], True,
                        (True, [("marker", b"!!"), ("body", b"a"),
                                ("all", b"a!!>" if attribute == "suffix" else b"a>")])]
    elif vocab is MARKER_VOCAB:
        free = [3, 4, 5, 6, 7]
        assert walk == [free, True, free, True, [2], False, [2], True, free, True, [2], True,
                        (True, [("marker", b"!"), ("body", b"aa"),
                                ("all", b"aa!>" if attribute == "suffix" else b"aa>")])]
        # the close's own captures: the body is all the rule read, and there is no marker
        assert _walk_marker(xgr, lark.replace("{a}", attribute), vocab, [5, 6, 2])[-1] == \
            (True, [("body", b"ab"), ("all", b"ab>")])
    else:
        assert walk == [[0, 1], True, [2], True, (True, [])]


@pytest.mark.xgrammar
@pytest.mark.parametrize("attribute", ["stop", "suffix"])
@pytest.mark.parametrize("lark, vocab, steps", MARKER_CASES, ids=["marker-rule", "same-rule", "expired-parent"])
def test_the_marker_closes_are_xgrammars(lark, vocab, steps, attribute):
    import xgrammar
    text = lark.replace("{a}", attribute)
    assert _walk_marker(xgr, text, vocab, steps) == _walk_marker(xgrammar, text, vocab, steps)


# ---- character budgets on stop/suffix rules (grammar/spent_close.py) -----------------------

CHAR_VOCAB = MARKER_VOCAB + ["ab>", "ab!", "é", "aé>"]
CHAR_CASES = [
    # spent at a token boundary ("a" "b"): the rule ends there, ">" is the one way on
    ('start[capture="all"]: value ">"\nvalue[max_chars=2, capture="body", {a}="!", stop_capture="marker"]: /[ab]*/',
     [5, 6, 2]),
    # spent inside a token: "ab>" closes the rule after "ab" and reads ">"; "ab!" cannot go on
    ('start[capture="all"]: value ">"\nvalue[max_chars=2, capture="body", {a}="!", stop_capture="marker"]: /[ab]*/',
     [8]),
    ('start[capture="all"]: value ">"\nvalue[max_chars=2, capture="body", {a}="!", stop_capture="marker"]: /[ab]*/',
     [5, 3]),
    # the marker inside the body's language ends the lazy match first: no close after it
    ('start: value ">"\nvalue[max_chars=3, {a}="!"]: /[ab!]*/', [5, 7, 2]),
    ('start: value ">"\nvalue[max_chars=3, {a}="!"]: /[ab!]*/', [5, 8]),
    # code points, not bytes
    ('start: value ">"\nvalue[max_chars=2, {a}="!"]: /[aé]*/', [10, 5, 2]),
    ('start: value ">"\nvalue[max_chars=2, {a}="!"]: /[aé]*/', [11]),
    # a budget of nothing: the rule ends before it reads anything
    ('start: value ">"\nvalue[max_chars=0, {a}="!"]: /[ab]*/', [2]),
    # a body that cannot end yet: the budget gives way until it can
    ('start: value ">"\nvalue[max_chars=1, {a}="!"]: /[ab]+/', [2]),
    ('start: value+ ">"\nvalue[max_chars=1, {a}="!"]: /[ab]*/', [5, 6, 8]),
    ('start: value ">"\nvalue[max_chars=2, {a}="!"]: /[ab]*/', [5, 6, "rollback", 6, 2]),
    # the start rule itself, its marker and captures as xgrammar prints them (start_stop_body, ...)
    ('start[capture="c", max_chars=2, {a}="!", stop_capture="m"]: /[ab]*/', [5, 6]),
    ('start[capture="c", {a}="!", stop_capture="m"]: /[ab]*/', [9]),
]


def _walk_accepts(mod, lark: str, steps: list) -> list:
    """Per step of `steps` (token ids, "rollback"): the tokens a fork of the matcher accepts, the
    mask, and the verdict on the step's token; then (terminated, captures)."""
    matcher, allowed = _lark_matcher(mod, lark, CHAR_VOCAB)
    out = []
    for step in steps:
        if step == "rollback":
            matcher.rollback(1)
            continue
        takes = [t for t in range(len(CHAR_VOCAB)) if matcher.fork().accept_token(t)]
        out.append((takes, allowed(matcher), matcher.accept_token(step)))
    out.append((matcher.is_terminated(), matcher.get_captures()))
    return out


@pytest.mark.parametrize("attribute", ["stop", "suffix"])
@pytest.mark.parametrize("lark, steps", CHAR_CASES, ids=[f"{c[0].split(chr(10))[-1][:36]}-{c[1]}" for c in CHAR_CASES])
def test_a_spent_character_budget_ends_a_rule_without_its_marker(lark, steps, attribute):
    walk = _walk_accepts(xgr, lark.replace("{a}", attribute), steps)
    for takes, mask, _ in walk[:-1]:
        assert mask == takes  # the mask is what accept_token takes
    if steps == [8]:  # closed inside the token, captured as the body alone
        assert walk == [([3, 4, 5, 6, 7, 8], [3, 4, 5, 6, 7, 8], True), (True, [("body", b"ab"), ("all", b"ab>")])]
    if steps == [2] and "max_chars=0" in lark:
        assert walk == [([2], [2], True), (True, [])]


@pytest.mark.xgrammar
@pytest.mark.parametrize("attribute", ["stop", "suffix"])
@pytest.mark.parametrize("lark, steps", CHAR_CASES, ids=[f"{c[0].split(chr(10))[-1][:36]}-{c[1]}" for c in CHAR_CASES])
def test_the_character_budget_closes_are_xgrammars(lark, steps, attribute):
    """xgrammar 0.2.8's accept_token, step by step, with its captures. Its masks leave out the
    tokens inside which the rule closes ("ab>" at the start; specs/05, "Budgets", difference 3),
    and hold nothing where a budget of 0 closes the rule at once: xg2ref's masks are what both
    engines' accept_token takes."""
    import xgrammar
    text = lark.replace("{a}", attribute)
    ours, theirs = _walk_accepts(xgr, text, steps), _walk_accepts(xgrammar, text, steps)
    assert [(takes, ok) for takes, _, ok in ours[:-1]] == [(takes, ok) for takes, _, ok in theirs[:-1]]
    assert ours[-1] == theirs[-1]
    for (_, mask, _), (takes, their_mask, _) in zip(ours[:-1], theirs[:-1]):
        assert set(their_mask) <= set(takes) and mask == takes


def test_the_kernel_reads_the_close_budgets_the_builder_writes():
    from xg2ref.grammar import spent_close
    from xg2ref.kernels import earley

    assert (spent_close.SPENT_CLOSE, spent_close.SPENT_CLOSE_NULLABLE) == (earley.SPENT_CLOSE, earley.SPENT_CLOSE_NULLABLE)
