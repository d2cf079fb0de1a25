"""A new intrinsic defined outside the package: intersection and complement of regular languages.

    Intersect("A", "B")    strings that match both regexes A and B (whole matches)
    Complement("A")        strings of characters (valid UTF-8) that do not match regex A

Neither is in xgrammar 0.2.8's EBNF dialect. Both are intrinsics of the seam of
xg2ref/grammar/intrinsic.py (docs/adding-an-intrinsic.md): a frozen dataclass with the
protocol's methods, registered with `register`. The EBNF parser then reads the calls, and
every stage of the pipeline (printer, grammar passes, FSM builder, Earley parser, mask cache,
brute-force oracle) handles them through the protocol, with no change to the package.

Two readings of the same construct, written apart:

    fragment      the product automaton of the regexes' DFAs, built once over byte intervals
                  (for Complement: the DFA of all UTF-8 strings times the regex's DFA made
                  complete, final where the first is final and the second is not)
    oracle        the two DFAs run side by side on the input, one byte at a time; a prefix is
                  viable when a breadth-first search from the pair reached finds a final pair

Run it: `python examples/set_operations.py`. It checks the contract (xg2ref/intrinsics/
contract.py) on grammars using both calls and prints a few masks; exit status 0 when all hold.
"""

from __future__ import annotations

import sys
from collections import deque
from dataclasses import dataclass
from functools import lru_cache

import xg2ref as xgr
from xg2ref.grammar.intrinsic import Call, Intrinsic, register
from xg2ref.tools.intrinsic_contract import check_intrinsic


@lru_cache(maxsize=None)
def dfa(pattern: str):
    """(start, finals, delta) of the pattern's minimal byte DFA; delta[state] maps each byte to
    the next state (a missing byte: no way on). Built by xg2ref's own regex front end and FSM
    builder."""
    from xg2ref.fsm.build import build_grammar_fsms

    fsms = build_grammar_fsms(xgr.Grammar.from_regex(pattern).ir)
    fsm = fsms.fsms[fsms.root]
    if fsm.rule_edges:
        raise ValueError(f"{pattern!r}: the regex must be one rule's machine")
    delta = [dict() for _ in range(fsm.num_states)]
    for src, lo, hi, dst in fsm.byte_edges:
        for b in range(lo, hi + 1):
            delta[src][b] = dst
    return fsm.start, frozenset(fsm.finals), tuple(delta)


ANY_TEXT = "[^]*"  # the DFA of every UTF-8 string: what a complement is taken within


class _SetOperation(Intrinsic):
    """What Intersect and Complement share: two DFAs and an acceptance rule on a pair."""

    __slots__ = ()

    def machines(self):
        raise NotImplementedError

    def accepts(self, final_a: bool, final_b: bool) -> bool:
        raise NotImplementedError

    def key(self) -> tuple:
        return tuple(getattr(self, f) for f in self.__dataclass_fields__)

    # ---- the FSM: a product over byte intervals -------------------------------------------

    def fragment(self, nfa, src: int) -> int:
        (start_a, finals_a, delta_a), (start_b, finals_b, delta_b) = self.machines()
        exit_ = nfa.new_state()
        state = {}
        todo = deque([(start_a, start_b)])
        state[todo[0]] = nfa.new_state()
        nfa.eps(src, state[todo[0]])
        while todo:
            pair = todo.popleft()
            qa, qb = pair
            if self.accepts(qa in finals_a, qb is not None and qb in finals_b):
                nfa.eps(state[pair], exit_)
            run_start, run_target = 0, None
            for b in range(257):  # one edge per run of bytes with the same next pair
                target = None
                if b < 256 and b in delta_a[qa]:
                    nb = delta_b[qb].get(b) if qb is not None else None
                    if nb is not None or self.complete_b:
                        target = (delta_a[qa][b], nb)
                if target != run_target:
                    if run_target is not None:
                        if run_target not in state:
                            state[run_target] = nfa.new_state()
                            todo.append(run_target)
                        nfa.byte_edge(state[pair], run_start, b - 1, state[run_target])
                    run_start, run_target = b, target
        return exit_

    # ---- the oracle: the two DFAs side by side, byte by byte -------------------------------

    def _run(self, data: bytes, i: int, j: int):
        (start_a, _, delta_a), (start_b, _, delta_b) = self.machines()
        qa, qb = start_a, start_b
        for b in data[i:j]:
            qa = delta_a[qa].get(b)
            qb = delta_b[qb].get(b) if qb is not None else None
            if qa is None or (qb is None and not self.complete_b):
                return None
        return qa, qb

    def _final(self, pair) -> bool:
        (_, finals_a, _), (_, finals_b, _) = self.machines()
        return pair is not None and self.accepts(pair[0] in finals_a, pair[1] is not None and pair[1] in finals_b)

    def oracle_reach(self, reader, i: int) -> set:
        return {j for j in range(i, len(reader.data) + 1) if self._final(self._run(reader.data, i, j))}

    def oracle_pre(self, reader, i: int) -> bool:
        pair = self._run(reader.data, i, len(reader.data))
        return pair is not None and self._reaches_final(pair)

    def _reaches_final(self, pair) -> bool:
        (_, _, delta_a), (_, _, delta_b) = self.machines()
        seen, todo = {pair}, deque([pair])
        while todo:
            qa, qb = todo.popleft()
            if self._final((qa, qb)):
                return True
            for b, na in delta_a[qa].items():
                nb = delta_b[qb].get(b) if qb is not None else None
                if (nb is not None or self.complete_b) and (na, nb) not in seen:
                    seen.add((na, nb))
                    todo.append((na, nb))
        return False

    def nullable(self, nullable) -> bool:
        return self._final(self._run(b"", 0, 0))

    def productive(self, productive) -> bool:
        return self._reaches_final(self._run(b"", 0, 0))

    # ---- property tests: the oracle's search, spelled out ------------------------------------

    def shortest(self, shortest_rule) -> tuple:
        return (len(self._shortest_word()), 0) if self.productive(()) else (float("inf"), float("inf"))

    def sample(self, rng, depth, usable, sample_rule, out: bytearray) -> None:
        out += self._shortest_word()

    def _shortest_word(self) -> bytes:
        (_, _, delta_a), (_, _, delta_b) = self.machines()
        start = self._run(b"", 0, 0)
        back = {start: None}
        todo = deque([start])
        while todo:
            pair = todo.popleft()
            if self._final(pair):
                word = bytearray()
                while back[pair] is not None:
                    pair, b = back[pair]
                    word.append(b)
                return bytes(reversed(word))
            qa, qb = pair
            for b, na in sorted(delta_a[qa].items()):
                nb = delta_b[qb].get(b) if qb is not None else None
                if (nb is not None or self.complete_b) and (na, nb) not in back:
                    back[(na, nb)] = (pair, b)
                    todo.append((na, nb))
        return b""


def _two_patterns(call: Call, count: int) -> list:
    call.no_named()
    if len(call.positional) != count or any(v.kind != "string" for v in call.positional):
        raise call.fail(f"{call.name} takes {count} regex string(s)")
    for v in call.positional:
        try:
            dfa(v.value)
        except Exception as err:
            raise call.fail(f"cannot read the regex {v.value!r}: {err}", v) from None
    return [v.value for v in call.positional]


@register
@dataclass(frozen=True, slots=True)
class Intersect(_SetOperation):
    """Strings in both regexes' languages."""

    a: str
    b: str
    ebnf_name = "Intersect"
    complete_b = False

    @classmethod
    def from_call(cls, call: Call) -> "Intersect":
        return cls(*_two_patterns(call, 2))

    def to_ebnf(self, literal) -> str:
        return f"Intersect({literal(self.a.encode())}, {literal(self.b.encode())})"

    def machines(self):
        return dfa(self.a), dfa(self.b)

    def accepts(self, final_a: bool, final_b: bool) -> bool:
        return final_a and final_b


@register
@dataclass(frozen=True, slots=True)
class Complement(_SetOperation):
    """UTF-8 strings outside the regex's language (the regex's DFA made complete)."""

    a: str
    ebnf_name = "Complement"
    complete_b = True

    @classmethod
    def from_call(cls, call: Call) -> "Complement":
        return cls(*_two_patterns(call, 1))

    def to_ebnf(self, literal) -> str:
        return f"Complement({literal(self.a.encode())})"

    def machines(self):
        return dfa(ANY_TEXT), dfa(self.a)

    def accepts(self, final_any: bool, final_a: bool) -> bool:
        return final_any and not final_a


GRAMMARS = [
    'root ::= Intersect("[a-c]+", "(ab|c)*b?") "."\n',  # words of a, b, c in (ab|c)* form, then "."
    'root ::= "<" Complement("a+") ">"\n',  # anything but a run of a's between brackets
    'root ::= (Intersect("[0-9]{2,4}", "1[0-9]*") ",")* Complement("")\n',
]
VOCAB = [b"a", b"b", b"c", b"ab", b".", b"<", b">", b"1", b"12", b"0", b",", b"aa", b"\xc3\xa9", b"</s>"]


def main() -> int:
    for text in GRAMMARS:
        counts = check_intrinsic(text, VOCAB, stop_token_id=len(VOCAB) - 1, strings=25, walks=4, steps=8)
        print(f"contract holds: {text.strip()}  ({counts['strings']} strings, {counts['steps']} mask steps)")
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[len(VOCAB) - 1])
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(GRAMMARS[0]))
    for piece in (b"", b"ab", b"abc"):
        assert matcher.accept_string(piece)
        allowed = [VOCAB[t].decode("utf-8", "replace") for t, ok in enumerate(matcher.compute_bool_mask()) if ok]
        print(f"after {piece!r}: allowed {allowed}")
    compiled = xgr.GrammarCompiler(info).compile_grammar(GRAMMARS[1])
    for text, complete in ((b"<aa>", False), (b"<ab>", True), (b"<>", True)):
        m = xgr.GrammarMatcher(compiled)
        assert m.accept_string(text) and m.is_completed() == complete, text
    print('Complement("a+"): <ab> and <> are complete, <aa> is not (its > may still be text); every check holds')
    return 0


if __name__ == "__main__":
    sys.exit(main())
