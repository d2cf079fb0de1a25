"""Thompson's construction exists once (xg2ref/grammar/thompson.py), and its users agree.

The tripwire: a *Thompson construction* is a function that dispatches on the IR's composite
node kinds (an `isinstance` test naming at least two of Sequence, Choice, Repeat) and, in the
same body, makes automaton states or edges (calls something named `*state*`, `*edge*` or
`eps`). A module that defines classes of those names itself (WGrammar's operators, another
language than the IR) dispatches on its own classes, not the IR's. Printers, passes and the oracle walk the IR without making states; the three copies
this module replaced (fsm/build.py, grammar/regular.py, grammar/lazy.py) each met the
definition, and `Thompson.fragment` is now the only function in the package that does.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import xg2ref
from xg2ref.fsm.build import rule_fsm
from xg2ref.grammar import regular
from xg2ref.grammar.ir import ByteString, CharClass, Choice, Repeat, Rule, Sequence
from xg2ref.grammar.lazy import _RuleNFA
from tests.hypothesis_budget import examples

PACKAGE_DIR = Path(xg2ref.__file__).resolve().parent
EXAMPLES_DIR = PACKAGE_DIR.parent / "examples"
COMPOSITES = {"Sequence", "Choice", "Repeat"}
MAKES_STATES = re.compile(r"state|edge|^eps$", re.IGNORECASE)


def _name(node: ast.AST):
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def thompson_constructions(source: str) -> list[str]:
    """The functions of `source` that meet the module docstring's definition.

    Example: thompson_constructions("def f(e):\\n    if isinstance(e, (Choice, Repeat)):\\n"
                                    "        return self.new_state()") == ["f"]
    """
    found = []
    tree = ast.parse(source)
    own = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}  # not the IR's kinds
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        kinds, makes = set(), False
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            name = _name(node.func)
            if name == "isinstance" and len(node.args) == 2:
                tested = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                kinds.update(n for n in map(_name, tested) if n in COMPOSITES - own)
            elif name and MAKES_STATES.search(name):
                makes = True
        if len(kinds) >= 2 and makes:
            found.append(fn.name)
    return found


def test_one_thompson_construction():
    found = []
    for root in (PACKAGE_DIR, EXAMPLES_DIR):
        for path in sorted(root.rglob("*.py")):
            found += [f"{path.relative_to(root.parent)}: {fn}"
                      for fn in thompson_constructions(path.read_text(encoding="utf-8"))]
    assert found == ["xg2ref/grammar/thompson.py: fragment"], (
        "a second Thompson construction; subclass xg2ref.grammar.thompson.Thompson instead:\n" + "\n".join(found))


def test_the_tripwire_sees_a_copy():
    # the shape of the former code-point copy (grammar/regular.py's `_NFA.build`)
    copy = '''
class _NFA:
    def build(self, expr, src):
        if isinstance(expr, Sequence):
            for item in expr.items:
                src = self.build(item, src)
            return src
        if isinstance(expr, Choice):
            end = self.state()
            for alt in expr.alternatives:
                start = self.state()
                self.eps[src].append(start)
                self.eps[self.build(alt, start)].append(end)
            return end
'''
    assert thompson_constructions(copy) == ["build"]
    walk_only = "def size(e):\n    if isinstance(e, (Sequence, Choice)):\n        return sum(map(size, children(e)))\n"
    assert thompson_constructions(walk_only) == []
    other_language = "class Sequence:\n    pass\n\n\nclass Choice:\n    pass\n\n\n" + copy.strip("\n")
    assert thompson_constructions(other_language) == []


def test_every_state_maker_is_a_thompson_subclass():
    """A class that makes automaton states from the IR (`new_state`) inherits the walk."""
    strays = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        for cls in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(cls, ast.ClassDef) and cls.name != "Thompson" and any(
                    isinstance(f, ast.FunctionDef) and f.name == "new_state" for f in cls.body):
                if "Thompson" not in {_name(b) for b in cls.bases}:
                    strays.append(f"{path.relative_to(PACKAGE_DIR.parent)}: {cls.name}")
    assert not strays, strays


# ---- the numbering is part of the contract (FSM hashes, the rules regular.py names) ----------


def test_rule_fsm_numbering():
    # "a"*: the loop 1, its entry 2, the exit 3, the copy's letter into 4
    fsm = rule_fsm(Repeat(ByteString(b"a"), 0, None), {})
    assert (fsm.num_states, fsm.start, fsm.finals) == (5, 0, frozenset([3]))
    assert fsm.byte_edges == ((2, 97, 97, 4),)
    assert fsm.eps_edges == ((0, 1), (1, 2), (4, 1), (1, 3))
    # ("a" | [é]){1,2}: choice exit, then each alternative's entry; the class's exit before the
    # middle state of its UTF-8 path (C3 A9); the optional copy's exit 7 comes before it
    fsm = rule_fsm(Repeat(Choice((ByteString(b"a"), CharClass(((0xE9, 0xE9),)))), 1, 2), {})
    assert (fsm.num_states, fsm.finals) == (14, frozenset([7]))
    assert fsm.byte_edges == ((2, 97, 97, 3), (4, 0xC3, 0xC3, 6), (6, 0xA9, 0xA9, 5),
                              (9, 97, 97, 10), (11, 0xC3, 0xC3, 13), (13, 0xA9, 0xA9, 12))
    assert fsm.eps_edges == ((0, 2), (3, 1), (0, 4), (5, 1), (1, 7), (1, 9), (10, 8), (1, 11), (12, 8), (8, 7))


def test_code_point_numbering():
    # "a"*: the loop 1 is the copy's entry and the exit
    nfa = regular._NFA()
    assert nfa.fragment(Repeat(ByteString(b"a"), 0, None), nfa.new_state()) == 1
    assert nfa.edges == [[], [(((97, 97),), 2)], []]
    assert nfa.eps_out == [[1], [], [1]]
    # [A-Bé]{0,2} "b": one edge per class, labelled with all its ranges
    expr = Sequence((Repeat(CharClass(((0xE9, 0xE9), (0x41, 0x42))), 0, 2), ByteString(b"b")))
    nfa = regular._NFA()
    assert nfa.fragment(expr, nfa.new_state()) == 4
    cls = ((0x41, 0x42), (0xE9, 0xE9))
    assert nfa.edges == [[(cls, 2)], [(((98, 98),), 4)], [(cls, 3)], [], []]
    assert nfa.eps_out == [[1], [], [1], [1], []]
    assert regular.automaton(expr) == ([[(cls, 1), (((98, 98),), 2)], [(((98, 98),), 2), (cls, 3)], [],
                                        [(((98, 98),), 2)]], {2})


# ---- the users agree on random regular IR ------------------------------------------------------

LETTERS = "ab\u00e9\u4e2d\U0001F600"


def _classes():
    points = st.sampled_from([ord(c) for c in LETTERS] + [0, 0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000])
    ranges = st.lists(st.tuples(points, points).map(sorted).map(tuple), max_size=2).map(tuple)
    return st.builds(CharClass, ranges, st.booleans())


def _exprs():
    leaves = st.one_of(st.text(LETTERS, max_size=2).map(lambda s: ByteString(s.encode())), _classes())
    bounds = st.sampled_from([(0, None), (1, None), (0, 1), (2, 3), (0, 0), (2, None)])
    return st.recursive(leaves, lambda kids: st.one_of(
        st.lists(kids, max_size=3).map(lambda xs: Sequence(tuple(xs))),
        st.lists(kids, min_size=1, max_size=3).map(lambda xs: Choice(tuple(xs))),
        st.tuples(kids, bounds).map(lambda t: Repeat(t[0], *t[1]))), max_leaves=6)


@settings(max_examples=examples(200), deadline=None)
@given(_exprs(), st.lists(st.text(LETTERS, max_size=4), min_size=1, max_size=4))
def test_byte_and_code_point_automata_agree(expr, texts):
    """The rule FSM (bytes) and regular.py's NFA (code points) accept the same strings."""
    fsm = rule_fsm(expr, {})
    for text in texts:
        assert fsm.accepts(text.encode("utf-8")) == regular.matches(expr, text), (expr, text)


@settings(max_examples=examples(100), deadline=None)
@given(_exprs())
def test_lazy_rule_nfa_is_the_code_point_nfa(expr):
    """Without references, lazy.py's rule NFA is regular.py's NFA, state for state."""
    plain = regular._NFA()
    plain_final = plain.fragment(expr, plain.new_state())
    rules = _RuleNFA({"r": Rule("r", expr)})
    rules_final = rules.fragment(expr, rules.new_state())
    assert (plain.edges, plain.eps_out, plain_final) == (rules.edges, rules.eps_out, rules_final)
