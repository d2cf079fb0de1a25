"""The rules of an object's members, for `objects.py` (xgrammar's object conversion, and
XGrammar-2 §3.3's unordered rules for `any_order`).

The members `m_0 .. m_{n-1}` in their order, then the additional members after them:

    R(i, first)  the members from i on, `first` when nothing is written yet
    R(i, f)      = sep? m_i R(i+1, no)              m_i required
                 | sep? m_i R(i+1, no) | R(i+1, f)    m_i optional
    R(n, f)      = the additional members (none, or one or more with separators)

`sep?` is the item separator unless `first`. Each R(i, f) is a rule, so the size stays linear
(`_member_rules`); with a count of members, R(i, c) counts them instead of `first`
(`_counted_member_rules`). With `any_order` the state is the set of members written so far,
and the additional members may come between any two (`members_in_any_order`: one rule whose
items remember the members seen).
"""

from __future__ import annotations

from ...grammar.ir import EPSILON, Expr, Repeat, RuleRef
from .lexical import NOTHING, choice, seq


def _counted_member_rules(conv, serial: int, members: list, required: list, sep: Expr, extra: Expr, lo: int,
                          hi) -> tuple:
    """(whether `{}` is valid, the rest) of the object whose member count lies in lo..hi: the
    rules R(i, c) of `_member_rules` with c, the members written so far (capped at lo when
    there is no hi), in place of `first`; after the declared members the additional ones take
    the count that is left: extra (sep extra){need - 1, room - 1}."""
    n = len(members)
    names: dict = {}

    def rule(i: int, c: int) -> Expr:
        if hi is not None and c > hi:
            return NOTHING
        c = min(c, lo) if hi is None else c
        if (i, c) in names:
            return RuleRef(names[(i, c)])
        if i == n:
            return end(c)
        name = names[(i, c)] = conv.new_rule(f"obj{serial}_n{i}_{c}")
        with_m = seq(EPSILON if c == 0 else sep, members[i], rule(i + 1, c + 1))
        conv.set_rule(name, with_m if required[i] else choice(with_m, rule(i + 1, c)))
        return RuleRef(name)

    def end(c: int) -> Expr:
        need = max(lo - c, 0)
        room = None if hi is None else hi - c
        done = EPSILON if need == 0 and c > 0 else NOTHING
        if extra == NOTHING or room == 0:
            return done
        if c == 0:
            return seq(extra, Repeat(seq(sep, extra), max(need - 1, 0), None if room is None else room - 1))
        return Repeat(seq(sep, extra), need, room)

    if hi is not None and hi < lo:
        return False, NOTHING
    return lo == 0 and not any(required), rule(0, 0)


def _member_rules(conv, serial: int, members: list, required: list, sep: Expr, tail) -> Expr:
    """R(0, first=True) of the rules R(i, first) ::= [sep] member_i R(i+1, false)
    | R(i+1, first) (the second alternative only when member i is optional), R(n, first) ::=
    tail(first). The names are given in the order a depth-first build from R(0) meets them,
    but without recursion: an object with thousands of properties is a long chain."""
    n = len(members)
    order, stack = [], [(0, True)]
    while stack:
        i, first = stack.pop()
        key = ("members", serial, i, first)
        if key in conv.memo:
            continue
        conv.memo[key] = conv.new_rule(f"obj{serial}_m{i}{'f' if first else ''}")
        order.append((i, first))
        if i < n:
            stack.extend([(i + 1, first)] if not required[i] else [])
            stack.append((i + 1, False))
    for i, first in order:
        if i == n:
            body = tail(first)
        else:
            with_m = seq(EPSILON if first else sep, members[i], RuleRef(conv.memo[("members", serial, i + 1, False)]))
            body = with_m if required[i] else choice(with_m, RuleRef(conv.memo[("members", serial, i + 1, first)]))
        conv.set_rule(conv.memo[("members", serial, i, first)], body)
    return RuleRef(conv.memo[("members", serial, 0, True)])


def members_in_any_order(conv, serial: int, members: list, required: list, sep: Expr, tail, extra=None,
                         counts=None) -> Expr:
    """The declared members in any order, each at most once, the required ones all: one rule
    with the option `unordered` whose items remember the members they have seen
    (kernels/earley.py), so its size is linear in the members. Member j is a rule with the
    options `member=j` (and `required`); the separator goes inside the member rule, so a member
    that may not come again is refused before its separator:

        O[unordered]  ::= (P_0 | ... | P_n-1 | extra) (Q_0 | ... | Q_n-1 | sep extra)*
        P_j[member=j] ::= m_j            Q_j[member=j] ::= sep m_j

    With `extra` (the additional and pattern members, JSON), they may come anywhere, any number
    of times, as in xgrammar 0.2.8. With `counts` (lo, hi), the members written, declared or
    not, number lo..hi (at least one). The r required members are all there when O ends, so the
    count is that of the others, k in max(lo - r, 0)..hi - r, and the machine counts only them:

        O  ::= (P_req) Q_req* (O' Q_req*){m, k}  |  (P_opt | extra) Q_req* (O' Q_req*){m-1, k-1}
        O' ::= Q_opt | sep extra                  (m = max(lo - r, 0); the second needs k >= 1)

    A required member never moves the count, so no item spends the count before the required
    ones are in (fsm/unordered.py proves the machine never blocks). The repetitions stay
    unrolled in O's machine (grammar/repetition.py leaves an unordered rule's as they are), so
    that O's items see every member; `sep extra` is a rule of its own, so a copy costs a
    reference. Without it (the XML styles, `sep` empty: each member reads
    its own leading whitespace), `tail(first)` follows the declared members, as in
    `_member_rules`: O ::= P_0 | ... (P_0 | ...)* then tail(false), or tail(true) alone when no
    member is required.
    """
    if any(m == NOTHING and r for m, r in zip(members, required)):
        return NOTHING  # a required member no value meets
    kept = [(j, m, r) for j, (m, r) in enumerate(zip(members, required)) if m != NOTHING]

    def member(j: int, body: Expr, req: bool, hint: str) -> Expr:
        name = conv.new_rule(hint)
        conv.set_rule(name, body)
        conv.options[name] = (("member", j),) + ((("required", True),) if req else ())
        return RuleRef(name)

    def unordered(body: Expr) -> Expr:
        name = conv.new_rule(f"obj{serial}_any_order")
        conv.set_rule(name, body)
        conv.options[name] = (("unordered", True),)
        return RuleRef(name)

    firsts = [member(j, m, r, f"obj{serial}_p{j}") for j, m, r in kept]
    if extra is None:
        body = unordered(seq(choice(*firsts), Repeat(choice(*firsts), 0, None)))
        return choice(seq(body, tail(False)), *([tail(True)] if not any(required) else []))
    more = [member(j, seq(sep, m), r, f"obj{serial}_q{j}") for j, m, r in kept]
    extras = ([extra], [seq(sep, extra)]) if extra != NOTHING else ([], [])
    if counts is None:
        return unordered(seq(choice(*firsts, *extras[0]), Repeat(choice(*more, *extras[1]), 0, None)))
    lo, hi = counts
    if (hi is not None and hi < max(lo, 1)) or (not extras[1] and lo > len(kept)):
        return NOTHING  # (no count in range, or more members than there are)
    if extras[1]:
        name = conv.new_rule(f"obj{serial}_extra")
        conv.set_rule(name, extras[1][0])
        extras = (extras[0], [RuleRef(name)])
    needed = [i for i, (_, _, r) in enumerate(kept) if r]
    others = [i for i, (_, _, r) in enumerate(kept) if not r]
    m, k = max(lo - len(needed), 0), None if hi is None else hi - len(needed)
    if k is not None and k < m:
        return NOTHING
    loop = Repeat(choice(*[more[i] for i in needed]), 0, None) if needed else EPSILON
    step = seq(choice(*[more[i] for i in others], *extras[1]), loop)
    starts = [seq(choice(*[firsts[i] for i in needed]), loop, Repeat(step, m, k))] if needed else []
    if k is None or k >= 1:
        starts.append(seq(choice(*[firsts[i] for i in others], *extras[0]), loop,
                          Repeat(step, max(m - 1, 0), None if k is None else k - 1)))
    return unordered(choice(*starts))
