"""Token budgets on rules with a stop/suffix marker, as xgrammar 0.2.8 enforces them: a rule
`r[max_tokens=N, stop="!"]` whose budget is spent may end without its marker, when what it has
read is a word of its body (xg2ref/rule_options.py, "Markers"; the inference rule, CLOSE, is
in xg2ref/kernels/marker_close.py).

The matcher's protocol extends ENFORCE (xg2ref/matcher.py) by one step, before it:

    FORCE   at a mask, some occurrence of such a rule is past its deadline and may CLOSE, and
            the set rebuilt by CLOSE allows a token or is a sentence  |-  the mask is that of
            the rebuilt set (its items past their deadline held back when some item is not, or
            the set is a sentence), and the next `accept_token` reads from the rebuilt set
            (a token it rejects leaves the set as it was, and the close pending)

The rebuilt set replaces the current one, so the close is undone with the token read after it:
`Closes` keeps the set's items as they were, restored when a rollback reaches back to it.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .kernels import marker_close as MK
from .kernels.chart import OK


class Closes:
    """The rules that may close without their marker, and the closes a matcher has made.

    `made` lists (history length, set index, saved items, saved end, saved pool) per close, in
    order; `rollback_to(n)` restores those made at a history length >= n."""

    def __init__(self, rules: dict, owners: Optional[dict] = None, made: Optional[list] = None):
        self.rules = rules  # rule -> the FSM of its body
        self.owners = owners or {}  # a rule of a lazy rule's lowering (grammar/lazy.py) -> that rule
        self.made: list = made if made is not None else []
        self.pending: Optional[tuple] = None  # (rules, origins) of the close a mask decided

    @classmethod
    def for_grammar(cls, fsms) -> Optional["Closes"]:
        """None unless some rule has both a token budget and a marker with a body rule."""
        if not fsms.max_tokens or not fsms.markers:
            return None
        rules = {r: fsms.fsms[m.body_rule] for r, m in enumerate(fsms.markers)
                 if m is not None and m.body_rule >= 0 and fsms.max_tokens[r] >= 0}
        if not rules:
            return None
        # a stop/suffix rule is lazy: its states are spread over the rules of its lowering, which
        # it alone reaches (their bodies are characters and references to one another)
        owners: dict = {}
        for r in rules:
            todo, seen = [r], {r}
            while todo:
                for _, callee, _ in fsms.fsms[todo.pop()].rule_edges:
                    if callee not in seen:
                        seen.add(callee)
                        todo.append(callee)
            for callee in seen - {r}:
                owners[callee] = r if owners.get(callee, r) == r else -1
        return cls(rules, {h: r for h, r in owners.items() if r >= 0})

    def copy(self) -> "Closes":
        other = Closes(self.rules, self.owners, list(self.made))
        other.pending = self.pending
        return other

    def _owning(self, parser, referrers, rule: int, j: int) -> list:
        """The occurrences (R, j') of a rule R of `rules` whose lowering holds occurrence (rule, j):
        up through the items that predicted it, within R's lowering."""
        if rule in self.rules:
            return [(rule, j)]
        owner = self.owners.get(rule)
        if owner is None:
            return []
        chart, state_rule = parser.chart, parser.arrays.state_rule
        out, todo, seen = [], [(rule, j)], {(rule, j)}
        while todo:
            r, i = todo.pop()
            a, b = int(chart.set_start[i]), int(chart.set_start[i + 1])
            parents = np.flatnonzero(np.isin(chart.item_state[a:b], referrers[r])) + a
            for pr, pj in zip(state_rule[chart.item_state[parents]].tolist(), chart.item_origin[parents].tolist()):
                if (pr, pj) in seen or (pr != owner and self.owners.get(pr) != owner):
                    continue
                seen.add((pr, pj))
                (out if pr == owner else todo).append((pr, pj))
        return out

    def occurrences(self, parser, referrers, accepted: bytes, token: int) -> Optional[tuple]:
        """(rules, origins) of the occurrences in the current set that may CLOSE at token index
        `token` (`referrers[r]`: the states with a reference edge to rule r), or None."""
        chart, k = parser.chart, parser.position
        lo, hi = chart.set_start[k], chart.set_start[k + 1]
        expired = np.flatnonzero(chart.item_deadline[lo:hi] < token) + lo
        rules_of = parser.arrays.state_rule[chart.item_state[expired]]
        found: dict = {}
        for rule, j in sorted(set(zip(rules_of.tolist(), chart.item_origin[expired].tolist()))):
            for key in self._owning(parser, referrers, rule, j):
                if key not in found:
                    found[key] = self.rules[key[0]].accepts(accepted[key[1]:k])
        chosen = [key for key, ok in found.items() if ok]
        if not chosen:
            return None
        return (np.array([r for r, _ in chosen], np.int32), np.array([j for _, j in chosen], np.int32))

    def apply(self, parser, token: int, occurrences: tuple, history_length: int) -> None:
        """Rebuild the current set by CLOSE, keeping what it held (`made`)."""
        chart, k = parser.chart, parser.position
        lo, hi = int(chart.set_start[k]), int(chart.set_start[k + 1])
        saved = tuple(a[lo:hi].copy() for a in (chart.item_state, chart.item_origin, chart.item_deadline,
                                                  chart.item_char_deadline, chart.item_count))
        self.made.append((history_length, k, saved, hi, int(chart.set_pool[k])))
        rules, origins = occurrences
        finals = np.array([self._final(parser.arrays, r) for r in rules.tolist()], np.int32)
        while (status := MK.close_without_marker(parser.arrays, parser.chart, k, token, rules, origins, finals,
                                                 len(rules))) != OK:
            parser.grow(status)

    @staticmethod
    def _final(a, rule: int) -> int:
        """A final state of `rule` without edges (a lazy rule has one), or -1."""
        edgeless = ((a.byte_indptr[1:] == a.byte_indptr[:-1]) & (a.ref_indptr[1:] == a.ref_indptr[:-1])
                    & (a.tok_indptr[1:] == a.tok_indptr[:-1]))
        found = np.flatnonzero((a.state_rule == rule) & a.is_final & edgeless)
        return int(found[0]) if len(found) else -1

    def undo_last(self, parser) -> None:
        """Restore the set the last close rebuilt (the current set again)."""
        _, k, saved, hi, pool = self.made.pop()
        chart = parser.chart
        lo = int(chart.set_start[k])
        for a, values in zip((chart.item_state, chart.item_origin, chart.item_deadline, chart.item_char_deadline,
                              chart.item_count), saved):
            a[lo:hi] = values
        chart.item_leo[lo:hi] = MK.LEO_UNKNOWN
        chart.set_start[k + 1] = hi
        chart.set_pool[k] = pool

    def rollback_to(self, parser, history_length: int) -> None:
        """Undo the closes made at a history length >= `history_length` (the parser is back
        at or before their sets)."""
        self.pending = None
        while self.made and self.made[-1][0] >= history_length:
            self.undo_last(parser)

    # ---- the matcher's protocol (FORCE, module docstring) ---------------------------------

    def forced_mask(self, matcher) -> Optional[np.ndarray]:
        """FORCE at this mask: the mask of the rebuilt set (and the close pending, with whether the
        next token is read under ENFORCE), or None when no close applies."""
        parser, token = matcher._parser, len(matcher._history)
        self.pending = None
        found = self.occurrences(parser, matcher._options.referrers, bytes(matcher._accepted), token)
        if found is None:
            return None
        self.apply(parser, token, found, token)
        try:
            expired, alive = parser.budget_state()
            completed = parser.is_completed()
            enforce = expired and (alive or completed)
            parser.set_token_index(token, enforce)
            mask = matcher._every_token_mask()
        finally:
            parser.set_token_index(token, False)
            self.undo_last(parser)
        if not (mask.any() or completed):
            return None
        self.pending = found
        matcher._enforce_pending = enforce
        return mask

    def accept_closed(self, matcher, token_id: int) -> bool:
        """`accept_token` with a close pending: the close, then the token; a rejected token
        undoes the close and leaves it pending."""
        found, self.pending = self.pending, None
        self.apply(matcher._parser, len(matcher._history), found, len(matcher._history))
        if matcher.accept_token(token_id):
            return True
        self.undo_last(matcher._parser)
        self.pending = found
        return False
