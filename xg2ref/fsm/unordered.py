"""XGrammar-2 §3.3's per-rule machines, for unordered rules (JSON Schema's `any_order`): the
member table the Earley kernel reads, and the check that the engine never takes a prefix that
is a dead end.

A rule `O[unordered]` reads rules with the option `member=j`; its Earley items carry the set S
of members read so far, and member j is predicted only while j is not in S; O ends only when S
holds its `required` members (kernels/earley.py, PREDICT and COMPLETE). The set is what the
machine of O does not see, so a machine state q can block: an item at q whose members are all
in S, with no other way on, is a prefix the engine takes and no sentence extends. The check
below proves, from O's machine alone, that this never happens. With R the required members,
read(q) the members q reads, and a path's members those on its member edges (a path never
reads one twice: the set forbids it):

    q final, read(q) >= R, or every path to q reads all of R      |-  q may end, or reads a
                                                                       missing required member
    q reaches such a final state on edges that read no member     |-  it goes on without members
    q is the start, never entered again                          |-  S is empty
    for X = read(q) or X = read(q) - R: every path to q reads      |-  some member of X is not
    fewer than |X| members of X                                        in S, and q reads it

Every state that reads a member, and every final state, must meet one of them. A counted
repetition of members (`(Q_0 | ... | extra){lo-1, hi-1}`, minProperties with any_order, unrolled
in O's machine) passes by the third or fourth line: its states count the members read.
"""

from __future__ import annotations

from collections import deque

from ..grammar.ir import referenced_rules
from ..util import strongly_connected


def unordered_table(ir, fsms: list, nullable: list, rule_ids: dict, productive=None) -> tuple:
    """Per rule of `ir`: ("unordered", n) for a rule with option `unordered` whose machine
    references members of which n distinct numbers are required, ("member", j, required) for a
    rule with option `member=j`, None for the others; () when no rule is either.

    Members must not derive the empty string: the seen-set grows when a member completes, and
    an empty completion would let one position read a member twice. Raises ValueError when an
    unordered rule's machine may block (module docstring)."""
    if not any(r.option("unordered") or r.option("member") is not None for r in ir.rules):
        return ()
    table = []
    for r, rule in enumerate(ir.rules):
        if rule.option("member") is not None:
            if nullable[r]:
                raise ValueError(f"member rule {rule.name} must not derive the empty string")
            table.append(("member", int(rule.option("member")), bool(rule.option("required"))))
        else:
            table.append(None)
    for r, rule in enumerate(ir.rules):
        if rule.option("unordered"):
            f = fsms[r]
            numbers = {ref: table[ref][1] for _, ref, _ in f.rule_edges if table[ref] and table[ref][0] == "member"}
            # the required members its body names, productive or not (an unproductive one made
            # the rule unproductive above)
            marks = [table[rule_ids[m]] for m in referenced_rules(rule.body) if m in rule_ids]
            required = {mark[1] for mark in marks if mark and mark[0] == "member" and mark[2]}
            blocked = _blocking_state(f, numbers, required, productive)
            if blocked is not None:
                raise ValueError(
                    f"unordered rule {rule.name}: state {blocked} of its machine may block (every member it reads "
                    f"already read, or a required one missing where it ends); members may be read at the rule's "
                    f"start, where it may end, or where fewer have been read than it reads (put separators "
                    f"inside the member rules)")
            table[r] = ("unordered", len(required))
    return tuple(table)


def _blocking_state(f, numbers: dict, required: set, productive):
    """The first state of machine `f` that meets no line of the module docstring, or None."""
    reads = [set() for _ in range(f.num_states)]
    for s, ref, _ in f.rule_edges:
        if ref in numbers:
            reads[s].add(numbers[ref])
    entered = {d for _, _, _, d in f.byte_edges} | {d for _, _, d in f.rule_edges}
    fewest = _fewest(f, [numbers[ref] in required if ref in numbers else False for ref in range(_refs(f))])
    ends = {q for q in f.finals if reads[q] >= required or fewest[q] >= len(required)}
    free = _reaching(f, ends, numbers, productive)
    longest: dict = {}
    for q in range(f.num_states):
        if not reads[q] and q not in f.finals:
            continue
        if q in ends or q in free or (q == f.start and q not in entered):
            continue
        if any(x and _longest(f, numbers, x, longest)[q] < len(x) for x in (frozenset(reads[q]),
                                                                              frozenset(reads[q] - required))):
            continue
        return q
    return None


def _refs(f) -> int:
    return 1 + max((ref for _, ref, _ in f.rule_edges), default=-1)


def _reaching(f, targets: set, numbers: dict, productive) -> set:
    """The states from which a state of `targets` is reached on bytes and on rules that are no
    member (and productive, when `productive` is given)."""
    back: dict = {}
    for s, _, _, d in f.byte_edges:
        back.setdefault(d, []).append(s)
    for s, ref, d in f.rule_edges:
        if ref not in numbers and (productive is None or productive[ref]):
            back.setdefault(d, []).append(s)
    for s, d in f.eps_edges:
        back.setdefault(d, []).append(s)
    found, todo = set(targets), list(targets)
    while todo:
        for s in back.get(todo.pop(), ()):
            if s not in found:
                found.add(s)
                todo.append(s)
    return found


def _edges(f, weight) -> list:
    """Per state, (target, weight) of its out-edges; `weight(ref)` for a rule edge, 0 otherwise."""
    out: list = [[] for _ in range(f.num_states)]
    for s, _, _, d in f.byte_edges:
        out[s].append((d, 0))
    for s, ref, d in f.rule_edges:
        out[s].append((d, weight(ref)))
    for s, d in f.eps_edges:
        out[s].append((d, 0))
    return out


def _fewest(f, counted: list) -> list:
    """Per state, the fewest counted rule edges on a path from the start to it (0-1 BFS;
    infinity where none reaches it)."""
    out = _edges(f, lambda ref: 1 if counted[ref] else 0)
    best = [float("inf")] * f.num_states
    best[f.start] = 0
    todo = deque([f.start])
    while todo:
        v = todo.popleft()
        for d, w in out[v]:
            if best[v] + w < best[d]:
                best[d] = best[v] + w
                (todo.append if w else todo.appendleft)(d)
    return best


def _longest(f, numbers: dict, members: frozenset, memo: dict) -> list:
    """Per state, the most edges reading a member of `members` on a path from the start to it:
    -1 where no path reaches it, infinity past a cycle that reads one. Longest paths over the
    strongly connected components; memoized per set."""
    if members in memo:
        return memo[members]
    out = _edges(f, lambda ref: 1 if numbers.get(ref, -1) in members else 0)
    components = strongly_connected(f.num_states, [[d for d, _ in e] for e in out])
    component = [0] * f.num_states
    for c, states in enumerate(components):
        for v in states:
            component[v] = c
    depth = [-1] * f.num_states
    depth[f.start] = 0
    for c in range(len(components) - 1, -1, -1):  # (sources first: an SCC comes after those it reaches)
        states = components[c]
        best = max(depth[v] for v in states)
        if best < 0:
            continue
        if any(w and component[d] == c for v in states for d, w in out[v]):
            best = float("inf")
        for v in states:
            depth[v] = best
            for d, w in out[v]:
                if component[d] != c:
                    depth[d] = max(depth[d], best + w)
    memo[members] = depth
    return depth
