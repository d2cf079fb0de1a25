"""Rule options that act on a matcher's state, not on its language: xgrammar 0.2.8's `capture`
(`GrammarMatcher.get_captures`) and `temperature` (`GrammarMatcher.temperature`).

Both are read off the Earley chart (XGrammar-2 §3.4; specs/03-earley.md), which is its own
history: set k holds every item after k accepted bytes, and rolling back only moves the current
set. So nothing is recorded while tokens are accepted: `rollback`, `reset` and `fork` are exact
for free, and masks and jump-forward, which read past the current set and come back, leave no
trace. The matcher only keeps the accepted bytes, to cut the spans out of them.

Captures. Each completion of a captured rule A on the accept path is an event, and its span is
the bytes between the item's origin j and its set k:

    CAPTURE   [j, k, A -> f] in set k, f final, A captured, 1 <= k <= n   |-  event (A, j, k)

Set 0 is built before anything is accepted and records nothing (so an empty completion at the
very start is no event), while an empty completion later (j = k >= 1) is one. Events come in
the order of their sets; inside a set, in the order the closure first reached a final item of
(A, j) (inner rules complete before the rules that contain them). Every parse hypothesis
counts, so an occurrence that is still growing (`[0-9]+`) has an event at each of its ends, and
so does one whose hypothesis later dies. With `deduplicate`, only the last event of each
occurrence (A, j) stays, in its place: the longest span so far.

Temperature. An item's active temperature rule is the nearest rule on its prediction chain
that has a `temperature`: its own rule if that rule has one, else the active rule of the items
that predicted it (the items of set j that reference A). The temperature of the next token is
the largest temperature over the scannable items of the current set (those with a byte or
token edge, less those a character budget holds back, CHAR-ENFORCE in kernels/earley.py: a rule
whose `max_chars` is spent gives no temperature); when none has an active temperature rule,
`default_temperature`. A rule predicted
by several items inherits from all of them, so the search below walks every (rule, origin)
ancestor once:

    ACTIVE    node (A, j), A has temperature T                   |-  T is a candidate
    INHERIT   node (A, j), A has none, [i, j, B -> s], s -A-> t   |-  node (B, i)

Values are float32, as in xgrammar. After a stop token the current set is unchanged, and so is
the temperature.

Markers (Lark's `suffix=M` / `stop=M`, xgrammar's printed `capture_hidden_*_bytes`,
`capture_hidden_*_rule_id` and `stop_capture`). A rule R with a marker ends with it; the split of
one of its spans w = data[j:k] is the first p with w[:p] in the body's language and w[p:] in the
marker's (the two helper rules), or, without them, p = k - N (N the hidden bytes; for a body of
free text up to a trigger, a TagDispatch, the trigger the span ends with; for an empty rule
that stands right after its marker, xgrammar's mark of a dispatch trigger, the N bytes before
it); no split means the marker was not read (free text that ended without it, a budget that
closed R):

    MARKER    event (R, j, k), split p, R has stop_capture L   |-  (L, data[p:k]) before R's own
    OWN       event (R, j, k), split p, R captured              |-  R's text is data[j:p]
    HIDE      event (A, j, k) of a captured A, event (R, j', k') of a stop rule with split p,
              j <= j', k' <= k, (A, j) an ancestor of (R, j') (INHERIT's walk)
                                                                |-  data[p:k'] left out of A's text

(for each occurrence (R, j'), its last event that ends by k). A suffix marker stays in the
enclosing captures. What this leaves out: xgrammar's warning when live rules disagree.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .exceptions import MatcherError
from .kernels import earley as K
from .fsm.build import FSMArrays, GrammarFSMs, Marker


class RuleOptionTables:
    """What the two queries read, per compiled grammar (S global states, R rules).

    state_rule : int32[S]      the rule of each state (FSMArrays.state_rule)
    capture_labels : tuple[str | None, ...]   per rule, its capture label (None: not captured)
    capture_end : bool_[S]     the state is final in a captured rule (None: no rule captures)
    rule_temperature : float64[R]   per rule, its float32 temperature, NaN for none (None: no
                               rule has one)
    referrers : list of int32 arrays   per rule, the sorted states with a reference edge to it
    """

    def __init__(self, fsms: GrammarFSMs, arrays: FSMArrays):
        self.state_rule = arrays.state_rule
        self.capture_labels = fsms.captures or (None,) * len(fsms.fsms)
        self.markers = fsms.markers
        self.fsms = fsms.fsms
        self.capture_end = None
        if fsms.captures or fsms.markers:
            # (a rule with a marker has events of its own: its stop_capture, what it hides above)
            captured = np.array([c is not None for c in self.capture_labels], dtype=np.bool_)
            if fsms.markers:
                captured |= np.array([m is not None for m in fsms.markers], dtype=np.bool_)
            self.capture_end = arrays.is_final & captured[arrays.state_rule]
        self.rule_temperature = None
        self.referrers: list[np.ndarray] = []
        if fsms.temperatures:
            self.rule_temperature = np.array([math.nan if t is None else t for t in fsms.temperatures])
        if fsms.temperatures or fsms.markers:
            sources = np.repeat(np.arange(len(arrays.ref_indptr) - 1, dtype=np.int32), np.diff(arrays.ref_indptr))
            order = np.argsort(arrays.ref_rule, kind="stable")
            bounds = np.searchsorted(arrays.ref_rule[order], np.arange(len(fsms.fsms) + 1))
            self.referrers = [np.unique(sources[order[bounds[r]:bounds[r + 1]]]) for r in range(len(fsms.fsms))]


def capture_events(tables: RuleOptionTables, chart, position: int) -> np.ndarray:
    """The CAPTURE events of sets 1..position (module docstring), as int64 rows (rule, start,
    end) in order, one per distinct event.

    Example: for `root ::= n "x"`, `n[capture] ::= [0-9]+` after "12x": [[1, 0, 1], [1, 0, 2]]
    """
    if tables.capture_end is None or position < 1:
        return np.zeros((0, 3), np.int64)
    bounds = chart.set_start[:position + 2]
    lo, hi = int(bounds[1]), int(bounds[position + 1])
    states = chart.item_state[lo:hi]
    hit = np.flatnonzero(tables.capture_end[states])
    if not len(hit):
        return np.zeros((0, 3), np.int64)
    # set k holds items bounds[k]:bounds[k+1]; the last k whose start is <= p owns item p
    ends = np.searchsorted(bounds, hit + lo, side="right") - 1
    rows = np.stack([tables.state_rule[states[hit]].astype(np.int64), chart.item_origin[lo:hi][hit].astype(np.int64),
                     ends.astype(np.int64)], axis=1)
    _, first = np.unique(rows, axis=0, return_index=True)
    return rows[np.sort(first)]


def captures(tables: RuleOptionTables, chart, position: int, data: bytes, deduplicate: bool = True
             ) -> list[tuple[str, bytes]]:
    """`GrammarMatcher.get_captures`: (label, span) per event; with `deduplicate`, the last event
    of each occurrence (rule, start) only, where it stands. `data` holds the accepted bytes.
    Markers (module docstring) split, label and hide parts of the spans."""
    every = capture_events(tables, chart, position).tolist()
    rows = every
    if deduplicate and rows:
        last: dict[tuple[int, int], int] = {}
        for n, (rule, start, _) in enumerate(rows):
            last[(rule, start)] = n
        rows = [rows[n] for n in sorted(last.values())]
    labels, markers = tables.capture_labels, tables.markers
    if not markers:
        return [(labels[rule], bytes(data[start:end])) for rule, start, end in rows]
    splits = {(r, j, k): _marker_start(tables, markers[r], data, j, k) for r, j, k in every if markers[r] is not None}
    stops = [(r, j, k) for r, j, k in every if markers[r] is not None and markers[r].stop
             and splits[(r, j, k)] is not None]
    out = []
    for rule, start, end in rows:
        marker = markers[rule]
        split = splits.get((rule, start, end))
        if marker is not None and marker.label is not None and split is not None:
            out.append((marker.label, bytes(data[split:end])))  # MARKER
        if labels[rule] is None:
            continue
        hidden = [(split, end)] if split is not None else []  # OWN
        hidden += _hidden_inside(tables, chart, stops, splits, rule, start, end)  # HIDE
        out.append((labels[rule], _without(data, start, end, hidden)))
    return out


def _marker_start(tables: RuleOptionTables, marker: "Marker", data, start: int, end: int) -> Optional[int]:
    """Where the marker of occurrence data[start:end] begins (None: no marker was read). An
    empty rule standing after its marker (`before`, a dispatch trigger) has it in the N bytes
    before it."""
    if marker.before:
        m = end - marker.hidden_bytes
        tail = tables.fsms[marker.marker_rule] if marker.marker_rule >= 0 else None
        return m if m >= 0 and (tail is None or tail.accepts(bytes(data[m:end]))) else None
    split = _split(tables, marker, bytes(data[start:end]))
    return None if split is None else start + split


def _split(tables: RuleOptionTables, marker: "Marker", span: bytes) -> Optional[int]:
    """Where the marker starts in `span` (None: the span holds no marker at its end)."""
    if marker.body_rule < 0 or marker.marker_rule < 0:
        if marker.ends:  # free text up to a trigger: read only when the span ends with one
            return next((len(span) - len(t) for t in marker.ends if span.endswith(t)), None)
        return len(span) - marker.hidden_bytes if len(span) >= marker.hidden_bytes else None
    body, tail = tables.fsms[marker.body_rule], tables.fsms[marker.marker_rule]
    for p in range(len(span) + 1):
        if tail.accepts(span[p:]) and body.accepts(span[:p]):
            return p
    return None


def _hidden_inside(tables: RuleOptionTables, chart, stops: list, splits: dict, rule: int, start: int, end: int
                   ) -> list:
    """HIDE: the markers of stop rules below occurrence (rule, start) that end by `end`."""
    latest: dict = {}
    for r, j, k in stops:
        if start <= j and k <= end and (r, j) != (rule, start):
            latest[(r, j)] = k  # (events come in order: the last one that ends by `end`)
    return [(splits[(r, j, k)], k) for (r, j), k in latest.items() if _is_ancestor(tables, chart, (rule, start), (r, j))]


def _is_ancestor(tables: RuleOptionTables, chart, top: tuple, node: tuple) -> bool:
    """Whether occurrence `top` predicted occurrence `node`, directly or not (INHERIT's walk)."""
    todo, seen = [node], {node}
    while todo:
        for parent in _predictors(tables, chart, *todo.pop()):
            if parent == top:
                return True
            if parent not in seen and parent[1] >= top[1]:
                seen.add(parent)
                todo.append(parent)
    return False


def _predictors(tables: RuleOptionTables, chart, rule: int, j: int) -> list:
    """The occurrences (rule, origin) that predicted occurrence (rule, j): the items of set j
    with a reference edge to the rule."""
    a, b = int(chart.set_start[j]), int(chart.set_start[j + 1])
    parents = np.flatnonzero(np.isin(chart.item_state[a:b], tables.referrers[rule])) + a
    return list(zip(tables.state_rule[chart.item_state[parents]].tolist(), chart.item_origin[parents].tolist()))


def _without(data, start: int, end: int, hidden: list) -> bytes:
    """data[start:end] less the `hidden` (begin, end) intervals."""
    out, pos = bytearray(), start
    for lo, hi in sorted(hidden):
        if lo > pos:
            out += data[pos:lo]
        pos = max(pos, hi)
    out += data[pos:end]
    return bytes(out)


def active_temperature(tables: RuleOptionTables, arrays: FSMArrays, chart, position: int) -> Optional[float]:
    """The largest temperature over the active rules of the current set's scannable items (ACTIVE
    and INHERIT in the module docstring), or None when none has one."""
    temps = tables.rule_temperature
    if temps is None:
        return None
    start, origin = chart.set_start, chart.item_origin
    lo, hi = int(start[position]), int(start[position + 1])
    states = chart.item_state[lo:hi]
    scannable = ((arrays.byte_indptr[states + 1] > arrays.byte_indptr[states])
                 | (arrays.tok_indptr[states + 1] > arrays.tok_indptr[states]))
    if chart.meta[K.META_CHAR_BUDGETS] and K.char_enforced(arrays, chart, position):
        scannable &= chart.item_char_deadline[lo:hi] > chart.set_chars[position]
    todo = list(dict.fromkeys(zip(arrays.state_rule[states[scannable]].tolist(), origin[lo:hi][scannable].tolist())))
    seen = set(todo)
    best = -math.inf
    while todo:
        rule, j = todo.pop()
        t = temps[rule]
        if t == t:  # ACTIVE
            best = max(best, t)
            continue
        for node in _predictors(tables, chart, rule, j):  # INHERIT
            if node not in seen:
                seen.add(node)
                todo.append(node)
    return None if best == -math.inf else float(best)


def float32_temperature(value) -> Optional[float]:
    """`default_temperature` as xgrammar keeps it: None, or a finite float32 >= 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"default_temperature must be a number or None, got {type(value).__name__}")
    with np.errstate(over="ignore"):
        out = float(np.float32(value))
    if not (np.isfinite(out) and out >= 0):
        raise MatcherError(f"default_temperature must be a finite non-negative float32, got {value!r}")
    return out
