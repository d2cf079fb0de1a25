"""WGrammar's token-level operators (WGrammar §3.2) as frozen data, compiled to one position
per state (WGrammar §1: a finite-state machine, no stack).

WGrammar describes its operators in prose only; the reading below is a reconstruction
(../shared/SEED_SYSTEMS.md §4.1, specs/10-templates-and-operators.md). V is the vocabulary's
regular tokens, sets are ids of tokensets.py, and each step reads one token:

    Write(w1..wn)            the tokens w1 .. wn, one per step
    Wait(W, allow=A)         any number of tokens of F = A \\ W, then one token of W, then `body`
    Wait(W, deny=D)          the same with F = V \\ (D ∪ W)   (W wins over F: first match)
    IfElse(T, E, then, else) one token: in T, `then` follows; in E, `else_` follows
    Sequence(p1..pn)         p1, then p2, ...
    DoWhile(body, C)         body, then: a token of C is read and body runs again; any other
                             token leaves the loop and is read by what follows
    End()                    the program may stop here (stop tokens allowed) or go on

Templates and regexes (templates.py, regex_online.py) also need the two joins WGrammar's
operators spell with IfElse and DoWhile over first sets; they are written directly:

    Choice(p1..pn)           one of the alternatives (None: nothing)
    Star(p)                  p any number of times

The language of a program is regular over token ids. `Program.compile` builds it the way a
Thompson construction does (an edge per set, ε for the joins), then takes ε-closures. The
operators are meant to leave one way to read each token, so a closure's edges must carry
disjoint sets:

    two edges of one ε-closure whose sets share a token t   |-  OperatorProgramError naming the
                                                                 two operators and t
    (IfElse: T ∩ E ≠ ∅; DoWhile: C meets what follows; two Ends' continuations that overlap)

and then every closure reached from one state by one token is the closure of one edge's target,
so the machine is deterministic with one state per position: accept is a scan of the state's
few edges (O(1) in the vocabulary), the mask is the union of their sets (plus the stop tokens
where the program may end), keyed by the edges' set ids (cache.py).

`lower_to_ir` writes the same language as xg2ref's grammar IR over `TokenSet` leaves, from the
operators themselves and not from the machine (the lowering of SEED_SYSTEMS §4.2, with each
operator followed by its continuation k, the rest of the program):

    Write  -> Token(w1) .. Token(wn) k        Wait    -> F* W body k
    IfElse -> T then k | E else k             DoWhile -> body L,  L ::= C body L | k
    End    -> ε | k   (ε: the program stops)   Choice  -> p1 k | .. | pn k
    Star   -> L,  L ::= p L | k

Earley over that IR and the brute-force oracle are the references the executor is tested
against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

from .tokensets import OperatorProgramError, TokenSets


@dataclass(frozen=True)
class Write:
    tokens: tuple


@dataclass(frozen=True)
class Wait:
    wait: int
    allow: Optional[int] = None
    deny: Optional[int] = None
    body: Optional["Operator"] = None


@dataclass(frozen=True)
class IfElse:
    then_set: int
    else_set: int
    then: Optional["Operator"] = None
    else_: Optional["Operator"] = None


@dataclass(frozen=True)
class Sequence:
    parts: tuple


@dataclass(frozen=True)
class DoWhile:
    body: "Operator"
    cont: int


@dataclass(frozen=True)
class End:
    pass


@dataclass(frozen=True)
class Choice:
    alternatives: tuple  # operators; None reads nothing


@dataclass(frozen=True)
class Star:
    body: "Operator"


Operator = Union[Write, Wait, IfElse, Sequence, DoWhile, End, Choice, Star]


@dataclass
class CompiledProgram:
    """The program's machine: state s reads edges edge_start[s]:edge_start[s+1] (edge_set[e],
    edge_target[e]); final[s]: it may stop there. `key[s]` is the mask's cache key."""

    sets: TokenSets
    edge_start: np.ndarray
    edge_set: np.ndarray
    edge_target: np.ndarray
    final: np.ndarray
    keys: list
    start: int = 0

    @property
    def num_states(self) -> int:
        return len(self.final)


class _Builder:
    """The ε-NFA of a program (module docstring): edges (set, target, who) and ε-edges."""

    def __init__(self, sets: TokenSets):
        self.sets = sets
        self.edges: list = []  # per state: [(set id, target, operator path)]
        self.eps: list = []
        self.end = self.state()  # the program's end: final

    def state(self) -> int:
        self.edges.append([])
        self.eps.append([])
        return len(self.edges) - 1

    def edge(self, src: int, set_id: int, dst: int, who: str) -> None:
        self.sets.check(set_id)
        self.edges[src].append((set_id, dst, who))

    def build(self, op, k: int, path: str) -> int:
        """The entry state of `op` followed by state k."""
        if op is None:
            return k
        if isinstance(op, Write):
            if not op.tokens:
                raise OperatorProgramError(f"{path}: Write of no token")
            states = [self.state() for _ in op.tokens[:-1]] + [k]
            entry = self.state()
            src = entry
            for t, dst in zip(op.tokens, states):
                self.edge(src, self.sets.intern([t]), dst, f"{path} (Write)")
                src = dst
            return entry
        if isinstance(op, Wait):
            if (op.allow is None) == (op.deny is None):
                raise OperatorProgramError(f"{path}: a Wait takes exactly one of allow= and deny=")
            if op.allow is not None:
                fill = self.sets.difference(op.allow, op.wait)
            else:
                fill = self.sets.complement(self.sets.union(op.deny, op.wait))
            entry = self.state()
            self.edge(entry, fill, entry, f"{path} (Wait, its free tokens)")
            self.edge(entry, op.wait, self.build(op.body, k, path + ".body"), f"{path} (Wait, its wait set)")
            return entry
        if isinstance(op, IfElse):
            entry = self.state()
            self.edge(entry, op.then_set, self.build(op.then, k, path + ".then"), f"{path} (IfElse, then)")
            self.edge(entry, op.else_set, self.build(op.else_, k, path + ".else_"), f"{path} (IfElse, else)")
            return entry
        if isinstance(op, Sequence):
            for i in range(len(op.parts) - 1, -1, -1):
                k = self.build(op.parts[i], k, f"{path}.parts[{i}]")
            return k
        if isinstance(op, DoWhile):
            loop = self.state()  # after the body: C and again, or what follows
            body = self.build(op.body, loop, path + ".body")
            if body == loop or _reads_nothing(op.body):
                raise OperatorProgramError(f"{path}: a DoWhile body must read a token")
            self.edge(loop, op.cont, body, f"{path} (DoWhile, its continue set)")
            self.eps[loop].append(k)
            return body
        if isinstance(op, End):
            entry = self.state()
            self.eps[entry] += [self.end, k]
            return entry
        if isinstance(op, Choice):
            if not op.alternatives:
                raise OperatorProgramError(f"{path}: a Choice of no alternative")
            entry = self.state()
            self.eps[entry] += [self.build(a, k, f"{path}.alternatives[{i}]") for i, a in enumerate(op.alternatives)]
            return entry
        if isinstance(op, Star):
            if _reads_nothing(op.body):
                raise OperatorProgramError(f"{path}: a Star body must read a token")
            loop = self.state()
            self.eps[loop] += [k, self.build(op.body, loop, path + ".body")]  # (the exit first: first match)
            return loop
        raise OperatorProgramError(f"{path}: {type(op).__name__} is not an operator")


def _reads_nothing(op) -> bool:
    if op is None or isinstance(op, End):
        return True
    if isinstance(op, Sequence):
        return all(_reads_nothing(p) for p in op.parts)
    if isinstance(op, Choice):
        return all(_reads_nothing(a) for a in op.alternatives)
    return False


def compile_program(program: Operator, sets: TokenSets, overlaps: str = "refuse") -> CompiledProgram:
    """The deterministic machine of `program` (module docstring), or OperatorProgramError.

    `overlaps="first"` resolves two edges of a closure that share tokens instead of refusing:
    the edge met first in the closure's depth-first order keeps them, the later one loses them
    (WGrammar's first match: a Star or a DoWhile is left as soon as what follows can read the
    token, a Choice takes its first alternative). The language can only shrink, so every token
    sequence read is still one the program denotes (the online regex path, regex_online.py)."""
    if overlaps not in ("refuse", "first"):
        raise OperatorProgramError(f"overlaps must be 'refuse' or 'first', got {overlaps!r}")
    b = _Builder(sets)
    entry = b.build(program, b.end, "program")
    closures: dict[int, int] = {}  # NFA state -> DFA state (its closure's)
    order: list = []

    def closure(s: int) -> list:
        """The NFA states ε-reachable from s, in depth-first order (priority order)."""
        seen, out, todo = set(), [], [s]
        while todo:
            x = todo.pop()
            if x in seen:
                continue
            seen.add(x)
            out.append(x)
            todo.extend(reversed(b.eps[x]))
        return out

    def dfa_state(s: int) -> int:
        if s not in closures:
            closures[s] = len(order)
            order.append(closure(s))
        return closures[s]

    dfa_state(entry)
    edge_start, edge_set, edge_target, final, keys = [0], [], [], [], []
    i = 0
    while i < len(order):
        members = order[i]
        out = list(dict.fromkeys(e for s in members for e in b.edges[s]))
        if overlaps == "first":
            out = _first_match(out, sets)
        for a in range(len(out)):
            for c in range(a + 1, len(out)):
                common = sets.first_common(out[a][0], out[c][0])
                if common is not None:
                    raise OperatorProgramError(
                        f"two ways to read one token at one position: {out[a][2]} and {out[c][2]} both take "
                        f"token {common} ({sets.token_text(common)!r}); the sets of one position must be disjoint")
        for set_id, target, _ in out:
            edge_set.append(set_id)
            edge_target.append(dfa_state(target))
        edge_start.append(len(edge_set))
        final.append(b.end in members)
        keys.append((tuple(sorted(s for s, _, _ in out)), final[-1]))
        i += 1
    return CompiledProgram(sets, np.array(edge_start, dtype=np.int32), np.array(edge_set, dtype=np.int32),
                           np.array(edge_target, dtype=np.int32), np.array(final, dtype=np.bool_), keys)


def _first_match(edges: list, sets: TokenSets) -> list:
    """Each edge less the tokens of the edges before it; edges left empty dropped."""
    out, taken = [], sets.ids()
    for set_id, target, who in edges:
        rest = sets.difference(set_id, taken)
        if len(sets.members(rest)):
            out.append((rest, target, who))
            taken = sets.union(taken, rest)
    return out


# ---- the lowering to xg2ref's grammar IR ------------------------------------------------

def lower_to_ir(program: Operator, sets: TokenSets):
    """The program's language as a GrammarIR over TokenSet leaves (module docstring), written in
    continuation-passing style: `lower(op, k)` is op followed by k, the IR of everything after op
    up to the program's end, so End is a choice between stopping (ε: nothing follows) and k. A
    continuation read twice (IfElse's branches, a loop) becomes a rule of its own."""
    from ...grammar.ir import Choice as IRChoice
    from ...grammar.ir import GrammarIR, Repeat, Rule, RuleRef
    from ...grammar.ir import Sequence as Seq
    from ...intrinsics.token_sets import TokenSet

    half = len(sets.regular_ids) // 2
    rules: list = []
    nothing = Seq(())

    def leaf(set_id: int):
        members = sets.members(set_id)
        if len(members) > half:  # the complement is the shorter list: ExcludeToken over regular tokens
            rest = np.setdiff1d(sets.regular_ids, members, assume_unique=True)
            return TokenSet(tuple(int(t) for t in rest), exclude=True)
        return TokenSet(tuple(int(t) for t in members))

    def seq(*items):
        flat = []
        for x in items:
            flat += list(x.items) if isinstance(x, Seq) else [x]
        return flat[0] if len(flat) == 1 else Seq(tuple(flat))

    def shared(k):
        """k as something cheap to read twice: itself when it is ε or a rule, else a new rule."""
        if k == nothing or isinstance(k, RuleRef):
            return k
        rules.append(Rule(f"k{len(rules)}", k))
        return RuleRef(rules[-1].name)

    def lower(op, k):
        if op is None:
            return k
        if isinstance(op, Write):
            return seq(*[TokenSet((int(t),)) for t in op.tokens], k)
        if isinstance(op, Wait):
            fill = (sets.difference(op.allow, op.wait) if op.allow is not None
                    else sets.complement(sets.union(op.deny, op.wait)))
            free = [Repeat(leaf(fill), 0, None)] if len(sets.members(fill)) else []
            return seq(*free, leaf(op.wait), lower(op.body, k))
        if isinstance(op, IfElse):
            k = shared(k)
            return IRChoice((seq(leaf(op.then_set), lower(op.then, k)), seq(leaf(op.else_set), lower(op.else_, k))))
        if isinstance(op, Sequence):
            for p in reversed(op.parts):
                k = lower(p, k)
            return k
        if isinstance(op, DoWhile):  # loop ::= C body loop | k;  the operator is body loop
            loop = RuleRef(f"k{len(rules)}")
            rules.append(None)  # (its place, filled once the body is lowered)
            after = shared(k)
            rules[int(loop.name[1:])] = Rule(loop.name, IRChoice((seq(leaf(op.cont), lower(op.body, loop)), after)))
            return lower(op.body, loop)
        if isinstance(op, End):
            return IRChoice((nothing, k)) if k != nothing else nothing
        if isinstance(op, Choice):
            k = shared(k)
            return IRChoice(tuple(lower(a, k) for a in op.alternatives))
        if isinstance(op, Star):  # loop ::= body loop | k
            loop = RuleRef(f"k{len(rules)}")
            rules.append(None)
            after = shared(k)
            rules[int(loop.name[1:])] = Rule(loop.name, IRChoice((lower(op.body, loop), after)))
            return loop
        raise OperatorProgramError(f"{type(op).__name__} is not an operator")

    root = lower(program, nothing)
    return GrammarIR((Rule("root", root),) + tuple(rules), "root")
