"""The intrinsic contract (xg2ref/tools/intrinsic_contract.py) over every registered construct.

Each built-in EBNF call, and each of WGrammar's calls (registered when xg2ref.baselines.wgrammar
is imported, as here), has example grammars here; a registered call without one fails
`test_every_registered_call_has_examples`, so a new intrinsic cannot skip its contract. The
contract sets the intrinsic's FSM fragment against its own oracle reading, the grammar passes'
nullability against the FSMs', and the masks against brute force.
"""

from __future__ import annotations

import pytest

import xg2ref.baselines.wgrammar  # noqa: F401  (registers Write, Wait, IfElse, DoWhile)
from xg2ref.grammar.intrinsic import REGISTRY, Intrinsic, Macro
from xg2ref.tools.intrinsic_contract import check_intrinsic

VOCAB = [b"<a>", b"</a>", b"<", b">", b"a", b"b", b"c", b"x", b"ab", b"ca", b"1", b"2", b"12", b" ", b"</s>"]
STOP = len(VOCAB) - 1

EXAMPLES = {
    "TagDispatch": [
        'root ::= TagDispatch(("<a>", tail), ("ab", num), loop_after_dispatch=true, excludes=("</a>",))\n'
        'tail ::= "x" | "b" tail\nnum ::= [1-2]+ ">"\n',
        'root ::= TagDispatch(("<", close), loop_after_dispatch=false) "!"?\nclose ::= "a>"\n',
        'root ::= (TagDispatch(("ca", e), excludes=("bb",)) ",")*\ne ::= ""\n',
    ],
    "Token": ['root ::= Token(4, 5) "c" | Token(12)+\n', 'root ::= "x" Token(0) r\nr ::= Token(1)?\n'],
    "ExcludeToken": ['root ::= ExcludeToken(4, 5, 6) "c"?\n', 'root ::= (ExcludeToken(0, 1) | "ab")*\n'],
    "TokenTagDispatch": ['root ::= TokenTagDispatch((0, body), excludes=(1,))\nbody ::= "x" | Token(4)\n',
                         'root ::= TokenTagDispatch((2, e), (3, e), loop_after_dispatch=false)\ne ::= "ab"\n'],
    "Substring": ['root ::= Substring("ab", "c", "12") "x"?\n', 'root ::= Substring() | "<" Substring("a") ">"\n'],
    "Regex": ['root ::= Regex("(ab|c)+[1-2]?") " "?\n', 'root ::= "<" Regex("[^<>]{1,3}", flags="") ">"\n'],
    "Write": ['root ::= Write(0, 4) Write(1)?\n', 'root ::= (Write(10) | Write(11, 12))+\n'],
    "Wait": ['root ::= Wait((1,), allow=(4, 5, 8)) Token(13)?\n', 'root ::= Write(2) Wait((3, 1), deny=(0,))\n'],
    "IfElse": ['root ::= IfElse((4, 8), (5,), r, s)\nr ::= Write(1)\ns ::= Write(6)*\n',
               'root ::= IfElse((0,), (2, 3)) | Write(7)\n'],
    "DoWhile": ['root ::= DoWhile(item, (13,)) Write(1)\nitem ::= Wait((10, 11), allow=(4, 5))\n',
                'root ::= DoWhile(r, (9,))\nr ::= Write(4) | Write(5, 6)\n'],
}
TOKEN_LEVEL = ("Token", "ExcludeToken", "TokenTagDispatch", "Write", "Wait", "IfElse", "DoWhile")


def test_every_registered_call_has_examples():
    assert set(REGISTRY) == set(EXAMPLES)
    for name, cls in REGISTRY.items():
        assert issubclass(cls, (Intrinsic, Macro)) and cls.ebnf_name == name


@pytest.mark.parametrize("name,index", [(n, i) for n, grammars in EXAMPLES.items() for i in range(len(grammars))])
def test_the_contract_holds(name, index):
    counts = check_intrinsic(EXAMPLES[name][index], VOCAB, STOP, seed=index, strings=25, walks=4, steps=10)
    assert counts["steps"] >= 4 and counts["rules"] >= 1
    if name not in TOKEN_LEVEL:
        assert counts["strings"] >= 10  # byte-level: the reading was compared on strings


def test_a_broken_intrinsic_is_caught(monkeypatch):
    """The contract is not vacuous: a TagDispatch whose grammar-pass nullability is wrong, or
    whose automaton drops its excludes, fails it."""
    from xg2ref.intrinsics.tag_dispatch import TagDispatch

    grammar = EXAMPLES["TagDispatch"][0]
    monkeypatch.setattr(TagDispatch, "nullable", lambda self, nullable: False)
    with pytest.raises(AssertionError, match="nullability"):
        check_intrinsic(grammar, VOCAB, STOP)
    monkeypatch.undo()
    real = TagDispatch.fragment
    monkeypatch.setattr(TagDispatch, "fragment",
                        lambda self, nfa, src: real(TagDispatch(self.tags, self.loop, ()), nfa, src))
    with pytest.raises(AssertionError, match="reading|masks"):
        check_intrinsic(grammar, VOCAB, STOP, strings=60)


def test_a_call_registered_twice_is_refused():
    from xg2ref.grammar.intrinsic import register

    class Other(Macro):
        ebnf_name = "Substring"

    with pytest.raises(ValueError, match="already registered"):
        register(Other)
