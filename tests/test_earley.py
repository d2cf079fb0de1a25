"""The Earley parser over FSM arrays: table-driven verdicts, rollback, masks, dotted items."""

import numpy as np
import pytest

from xg2ref.earley import EarleyParser, ItemPrinter
from xg2ref.fsm.build import build_grammar_fsms
from xg2ref.grammar.ir import ByteString, CharClass, Choice, GrammarIR, Repeat, Rule, RuleRef, Sequence

DIGIT = CharClass(((ord("0"), ord("9")),))


def lit(s: str) -> ByteString:
    return ByteString(s.encode())


def seq(*items):
    return Sequence(tuple(items))


def alt(*items):
    return Choice(tuple(items))


GRAMMARS = {
    # expr ::= expr "+" term | term ; term ::= [0-9]+ | "(" expr ")"      (left recursion)
    "left": GrammarIR((Rule("root", RuleRef("expr")),
                       Rule("expr", alt(seq(RuleRef("expr"), lit("+"), RuleRef("term")), RuleRef("term"))),
                       Rule("term", alt(Repeat(DIGIT, 1, None), seq(lit("("), RuleRef("expr"), lit(")")))))),
    # list ::= "x" "," list | "x"                                              (right recursion)
    "right": GrammarIR((Rule("root", RuleRef("list")),
                        Rule("list", alt(seq(lit("x"), lit(","), RuleRef("list")), lit("x"))))),
    # s ::= s s | "a" | ""                                                     (nullable, ambiguous)
    "ambiguous": GrammarIR((Rule("root", seq(RuleRef("s"), lit("."))),
                            Rule("s", alt(seq(RuleRef("s"), RuleRef("s")), lit("a"), lit(""))))),
    # root ::= a b c ; a ::= "" ; b ::= a a ; c ::= b "z"                        (chains of nullables)
    "nullable": GrammarIR((Rule("root", seq(RuleRef("a"), RuleRef("b"), RuleRef("c"))),
                           Rule("a", lit("")),
                           Rule("b", seq(RuleRef("a"), RuleRef("a"))),
                           Rule("c", seq(RuleRef("b"), lit("z"))))),
    # balanced parentheses: p ::= "(" p ")" p | ""
    "dyck": GrammarIR((Rule("root", RuleRef("p")),
                       Rule("p", alt(seq(lit("("), RuleRef("p"), lit(")"), RuleRef("p")), lit(""))))),
}

CASES = [
    # grammar, input, viable prefix?, complete sentence?
    ("left", b"1+2", True, True),
    ("left", b"(1+(22))+3", True, True),
    ("left", b"1+", True, False),
    ("left", b"((1", True, False),
    ("left", b"1)", False, False),
    ("left", b"+", False, False),
    ("right", b"x,x,x", True, True),
    ("right", b"x,x,", True, False),
    ("right", b"x,,", False, False),
    ("ambiguous", b"aaa.", True, True),
    ("ambiguous", b".", True, True),
    ("ambiguous", b"aa", True, False),
    ("ambiguous", b"a.a", False, False),
    ("nullable", b"z", True, True),
    ("nullable", b"", True, False),
    ("nullable", b"zz", False, False),
    ("dyck", b"", True, True),
    ("dyck", b"(()())()", True, True),
    ("dyck", b"(()", True, False),
    ("dyck", b"())", False, False),
]


def parser_for(name: str) -> EarleyParser:
    return EarleyParser(build_grammar_fsms(GRAMMARS[name]))


@pytest.mark.parametrize("name, data, prefix, sentence", CASES)
def test_verdicts(name, data, prefix, sentence):
    p = parser_for(name)
    assert p.advance(data) == prefix
    if prefix:
        assert p.is_completed() == sentence
        assert p.position == len(data)
    else:
        assert p.position == 0  # all or nothing


def test_rollback_restores_every_set_exactly():
    p = parser_for("left")
    p.advance(b"(1+")
    before = [p.items(k) for k in range(p.position + 1)]
    assert p.advance(b"(22))+3")
    p.rollback(7)
    assert [p.items(k) for k in range(p.position + 1)] == before
    assert p.advance(b"4)") and p.is_completed()
    with pytest.raises(ValueError, match="roll back"):
        p.rollback(100)


def test_chart_grows_past_its_initial_capacity():
    p = parser_for("dyck")
    deep = b"(" * 3000 + b")" * 3000
    assert p.advance(deep) and p.is_completed()


def test_fill_mask_matches_per_token_checks():
    p = parser_for("left")
    p.advance(b"(1")
    vocab = [b"+", b"+(", b"+2)", b"0", b"00", b")", b"))", b"(", b"x", b"1+", b"+)"]
    data = np.frombuffer(b"".join(vocab), dtype=np.uint8)
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in vocab])]).astype(np.int64)
    order = sorted(range(len(vocab)), key=lambda t: vocab[t])
    lcp = [0] + [len(_common(vocab[a], vocab[b])) for a, b in zip(order, order[1:])]
    out = np.zeros(len(vocab), dtype=np.bool_)
    p.fill_mask(data, offsets, np.array(order, np.int32), np.array(lcp, np.int32), out)
    want = []
    for t in vocab:
        q = parser_for("left")
        q.advance(b"(1")
        want.append(q.advance(t))
    assert out.tolist() == want
    assert p.position == 2  # the mask leaves the parser where it was


def _common(a: bytes, b: bytes) -> bytes:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def test_items_print_as_dotted_rules():
    p = parser_for("left")
    p.advance(b"(1+")
    text = p.format_set()
    assert 'expr ::= expr "+" • term  @1' in text
    assert "term ::= • " in text and "@3" in text


def test_next_bytes():
    p = parser_for("right")
    p.advance(b"x")
    nxt = p.next_bytes()
    assert np.flatnonzero(nxt).tolist() == [ord(",")]
