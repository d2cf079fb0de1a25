"""FSM hashing for the cross-grammar cache (xg2ref/fsm/hashing.py, XGrammar-2 §3.3)."""

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xg2ref.fsm.build import GrammarFSMs, build_grammar_fsms
from xg2ref.fsm.fsm import FSM
from xg2ref.fsm.hashing import (KIND_ACYCLIC, KIND_CYCLE, KIND_LEAF, KIND_SELF, KIND_UNHASHED, RuleHashes,
                                hash_rules, same_structure)
from xg2ref.grammar.grammar import Grammar
from xg2ref.grammar.ir import GrammarIR
from xg2ref.grammar.passes import normalize
from xg2ref.oracle.strategies import grammars
from tests.hypothesis_budget import examples


def fsms_of(ebnf: str) -> GrammarFSMs:
    return build_grammar_fsms(normalize(Grammar.from_ebnf(ebnf).ir))


def fsms_raw(ebnf: str) -> GrammarFSMs:
    """FSMs of the grammar as written (no inlining), so that each rule keeps its machine."""
    return build_grammar_fsms(Grammar.from_ebnf(ebnf).ir)


def scrambled(g: GrammarFSMs, rng: random.Random) -> tuple[GrammarFSMs, list, list]:
    """The same grammar with rules in another order and every machine's states renumbered.
    Returns (grammar, rule map old -> new, per old rule the state map old -> new)."""
    n = len(g.fsms)
    order = list(range(n))
    rng.shuffle(order)
    new_of = {old: new for new, old in enumerate(order)}
    state_maps, fsms = [], [None] * n
    for old, f in enumerate(g.fsms):
        perm = list(range(f.num_states))
        rng.shuffle(perm)
        state_maps.append(perm)
        fsms[new_of[old]] = FSM(
            f.num_states, perm[f.start], frozenset(perm[s] for s in f.finals),
            tuple(sorted((perm[s], lo, hi, perm[d]) for s, lo, hi, d in f.byte_edges)),
            tuple(sorted((perm[s], new_of[r], perm[d]) for s, r, d in f.rule_edges)))
    names = tuple(g.rule_names[old] for old in order)
    pick = lambda values: tuple(values[old] for old in order) if values else values  # noqa: E731
    out = GrammarFSMs(names, tuple(fsms), new_of[g.root], pick(g.nullable), pick(g.productive), g.token_sets,
                      pick(g.max_tokens), pick(g.max_chars))
    return out, [new_of[r] for r in range(n)], state_maps


def test_kinds_follow_the_reference_graph():
    g = fsms_raw('root ::= "[" a "|" s "|" c1 "]"\n'
                 'a ::= "x" leaf "y" leaf\nleaf ::= [0-9]+\n'
                 's ::= "(" s ")" | "z"\n'
                 'c1 ::= "<" c2 ">" | "p"\nc2 ::= "{" c1 "}" | "q"\n'
                 'x1 ::= "m" x2 x1 "!" | "n"\nx2 ::= "o" x1 | "r"\nuser ::= "u" x1')
    h = hash_rules(g)
    kind = dict(zip(g.rule_names, h.kinds))
    assert kind["leaf"] == KIND_LEAF and kind["a"] == KIND_ACYCLIC and kind["s"] == KIND_SELF
    assert kind["c1"] == kind["c2"] == KIND_CYCLE
    # x1 references itself and x2: not a simple cycle, and a rule reaching it has no hash either
    assert kind["x1"] == kind["x2"] == kind["user"] == KIND_UNHASHED
    assert h.hashes[g.rule_names.index("user")] is None and h.canonical[g.rule_names.index("x1")] is None
    assert kind["root"] == KIND_ACYCLIC


def test_the_members_of_a_cycle_get_their_own_hashes_and_match_across_grammars():
    g1 = fsms_raw('root ::= c1\nc1 ::= "<" c2 ">" | "p"\nc2 ::= "{" c1 "}" | "q"')
    g2 = fsms_raw('root ::= "!" d2\nd2 ::= "{" d1 "}" | "q"\nd1 ::= "<" d2 ">" | "p"')
    h1, h2 = hash_rules(g1), hash_rules(g2)
    i = {n: r for r, n in enumerate(g1.rule_names)}
    j = {n: r for r, n in enumerate(g2.rule_names)}
    assert h1.hashes[i["c1"]] != h1.hashes[i["c2"]]  # Algorithm 2: each rotation differs
    assert h1.hashes[i["c1"]] == h2.hashes[j["d1"]] and h1.hashes[i["c2"]] == h2.hashes[j["d2"]]
    assert same_structure(g1, h1, i["c1"], g2, h2, j["d1"])
    assert not same_structure(g1, h1, i["c1"], g2, h2, j["d2"])
    assert h1.hashes[i["root"]] != h2.hashes[j["root"]]


def test_equal_rules_under_other_names_share_hash_and_numbering():
    g1 = fsms_raw('root ::= "a" str "b" num\nstr ::= "\\"" [a-z]* "\\""\nnum ::= [0-9]+ ("." [0-9]+)?')
    g2 = fsms_raw('root ::= num2 "," str2\nnum2 ::= [0-9]+ ("." [0-9]+)?\nstr2 ::= "\\"" [a-z]* "\\""')
    h1, h2 = hash_rules(g1), hash_rules(g2)
    for a, b in (("str", "str2"), ("num", "num2")):
        ra, rb = g1.rule_names.index(a), g2.rule_names.index(b)
        assert h1.hashes[ra] == h2.hashes[rb] and same_structure(g1, h1, ra, g2, h2, rb)
        # the same state (reached by the same bytes) has the same canonical number
        fa, fb = g1.fsms[ra], g2.fsms[rb]
        for prefix in (b"", b'"', b'"ab', b"1", b"1.", b"1.5"):
            sa, sb = _walk(fa, prefix), _walk(fb, prefix)
            if sa is not None:
                assert h1.canonical[ra][sa] == h2.canonical[rb][sb]
    assert h1.hashes[g1.rule_names.index("str")] != h1.hashes[g1.rule_names.index("num")]


def _walk(f: FSM, data: bytes):
    s = f.start
    for b in data:
        nxt = [d for src, lo, hi, d in f.byte_edges if src == s and lo <= b <= hi]
        if not nxt:
            return None
        s = nxt[0]
    return s


def test_a_forced_collision_is_caught_by_the_structural_check():
    g = fsms_raw('root ::= a b\na ::= "x" [0-9]+\nb ::= "x" [0-8]+')
    h = hash_rules(g)
    a, b = g.rule_names.index("a"), g.rule_names.index("b")
    assert h.hashes[a] != h.hashes[b]
    forged = RuleHashes(tuple(h.hashes[a] if r == b else x for r, x in enumerate(h.hashes)), h.canonical,
                        h.kinds, h.scc)
    assert forged.hashes[a] == forged.hashes[b]
    assert not same_structure(g, forged, a, g, forged, b)
    assert same_structure(g, forged, a, g, forged, a)


def test_a_collision_below_is_caught_too():
    # equal parents whose children differ: the parents' hashes are forged equal as well
    g = fsms_raw('root ::= p q\np ::= "<" a ">"\nq ::= "<" b ">"\na ::= "x" [0-9]+\nb ::= "x" [0-8]+')
    h = hash_rules(g)
    r = {n: i for i, n in enumerate(g.rule_names)}
    hashes = list(h.hashes)
    hashes[r["b"]] = hashes[r["a"]]
    hashes[r["q"]] = hashes[r["p"]]
    forged = RuleHashes(tuple(hashes), h.canonical, h.kinds, h.scc)
    assert not same_structure(g, forged, r["p"], g, forged, r["q"])


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(max_rules=4), st.integers(0, 2**32 - 1))
def test_hashes_do_not_depend_on_names_or_numbering(ir: GrammarIR, seed: int):
    g = build_grammar_fsms(normalize(ir))
    h = hash_rules(g)
    g2, rule_map, state_maps = scrambled(g, random.Random(seed))
    h2 = hash_rules(g2)
    for r in range(len(g.fsms)):
        r2 = rule_map[r]
        assert h.kinds[r] == h2.kinds[r2]
        assert h.hashes[r] == h2.hashes[r2]
        if h.hashes[r] is None:
            continue
        assert same_structure(g, h, r, g2, h2, r2)
        if g.fsms[r].is_deterministic():  # canonical numbers agree state by state
            for s in range(g.fsms[r].num_states):
                assert h.canonical[r][s] == h2.canonical[r2][state_maps[r][s]]


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(max_rules=3), grammars(max_rules=3))
def test_equal_hash_means_equal_structure(ir1: GrammarIR, ir2: GrammarIR):
    g1, g2 = build_grammar_fsms(normalize(ir1)), build_grammar_fsms(normalize(ir2))
    h1, h2 = hash_rules(g1), hash_rules(g2)
    for a in range(len(g1.fsms)):
        for b in range(len(g2.fsms)):
            if h1.hashes[a] is not None and h1.hashes[a] == h2.hashes[b]:
                assert same_structure(g1, h1, a, g2, h2, b)
                # equal structure: equal machines, state for state under the numbering
                f1, f2 = g1.fsms[a], g2.fsms[b]
                assert f1.num_states == f2.num_states and len(f1.byte_edges) == len(f2.byte_edges)
                assert len(f1.finals) == len(f2.finals)
