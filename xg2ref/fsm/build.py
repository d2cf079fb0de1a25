"""XGrammar-2 §3.3: from a rule body to its byte-level FSM, and from a grammar to flat arrays.

`rule_fsm` is Thompson's construction over the IR (xg2ref/grammar/thompson.py, which gives
the rule for every node kind) with bytes for letters, `_NFABuilder`:

    "ab"        s -a-> . -b-> f
    [a-c]       s -[a-c]-> f          (multi-byte classes: one byte-range path per UTF-8 piece)
    value       s -<value>-> f        (a rule-reference edge)
    x{m,}       the loop on a fresh state has a fresh entry and a fresh exit
    Token(..)   s -<256+k>-> f        (a token edge: symbol 256+k for the grammar's k-th
                                       token set; the FSM algorithms treat it as one more
                                       letter, bytes never match it)

then `FSM.simplified` removes epsilons, determinizes and minimizes when the machine stays
small. `build_grammar_fsms` does this for every rule, finds the productive and the nullable
rules, cuts edges into unproductive rules (a rule with an empty language can never be
completed, so an item waiting on it is dead) and trims again. `GrammarFSMs.to_arrays()`
flattens all machines into one `FSMArrays` of CSR arrays with global state numbers: the only
form the Earley kernels see.

Repetitions above xg2ref/grammar/repetition.py's threshold are not unrolled: they arrive here as
counted rules (§3.6), whose machine is one copy of the body.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional

import numpy as np

from ..exceptions import GrammarLimitError
from ..grammar.intrinsic import Intrinsic
from ..grammar.ir import EPSILON, MARKER_RULE_KEYS, ByteString, CharClass, Expr, GrammarIR, RuleRef, referenced_rules
from ..grammar.thompson import Thompson
from ..util import deep_recursion
from ..grammar.spent_close import OPTION as SPENT_OPTION, SPENT_CLOSE, SPENT_CLOSE_NULLABLE
from .fsm import FSM, REPEAT_UNBOUNDED, TOKEN_SYMBOL_BASE
from .shapes import ShapeCache, relabel, shape
from .unordered import unordered_table
from .utf8 import class_sequences

# Documented limits (specs/02-fsm.md): states of one rule's unrolled NFA, and of a grammar.
MAX_RULE_NFA_STATES = 200_000
MAX_GRAMMAR_STATES = 2_000_000
MAX_DFA_STATES = 4096



class _NFABuilder(Thompson):
    """One rule's NFA during Thompson's construction (grammar/thompson.py): letters are bytes,
    a class is spelt as the byte-range sequences of its UTF-8 encodings, rule references and
    token sets are edges of their own, an intrinsic writes its fragment through the public
    edges below."""

    fresh_loop_ends = True

    def __init__(self, rule_ids: dict[str, int], rule_name: str, token_sets: dict):
        self.rule_ids = rule_ids
        self.token_sets = token_sets
        self.rule_name = rule_name
        self.num_states = 0
        self.byte_edges: list[tuple[int, int, int, int]] = []
        self.rule_edges: list[tuple[int, int, int]] = []
        self.eps_edges: list[tuple[int, int]] = []

    def new_state(self) -> int:
        self.num_states += 1
        if self.num_states > MAX_RULE_NFA_STATES:
            raise GrammarLimitError(
                f"rule {self.rule_name!r} needs more than {MAX_RULE_NFA_STATES} FSM states once its "
                "repetitions are unrolled; lower the {m,n} bounds or split the rule")
        return self.num_states - 1

    # ---- the public edges an intrinsic's `fragment` writes (grammar/intrinsic.py) -------------

    def eps(self, src: int, dst: int) -> None:
        """An ε-edge."""
        self.eps_edges.append((src, dst))

    def byte_edge(self, src: int, lo: int, hi: int, dst: int) -> None:
        """An edge on the bytes lo..hi (inclusive)."""
        self.byte_edges.append((src, lo, hi, dst))

    def rule_edge(self, src: int, rule_name: str, dst: int) -> None:
        """An edge that reads a whole word of rule `rule_name`."""
        self.rule_edges.append((src, self.rule_ids[rule_name], dst))

    def token_edge(self, src: int, token_set, dst: int) -> None:
        """An edge that reads one whole token of `token_set` (a token symbol, fsm/fsm.py)."""
        symbol = TOKEN_SYMBOL_BASE + self.token_sets.setdefault(token_set, len(self.token_sets))
        self.byte_edges.append((src, symbol, symbol, dst))

    # ---- what Thompson's construction asks of a byte-level NFA --------------------------------

    def edge(self, src: int, label: tuple[int, int], dst: int) -> None:
        """A letter: the byte range `label` = (lo, hi)."""
        self.byte_edges.append((src, label[0], label[1], dst))

    def letters(self, expr: ByteString) -> list[tuple[int, int]]:
        """A literal's bytes, one range each."""
        return [(b, b) for b in expr.value]

    def class_paths(self, expr: CharClass):
        """A class's UTF-8 byte-range sequences (fsm/utf8.py)."""
        return class_sequences(expr.codepoint_ranges())

    def rule_ref(self, expr: RuleRef, src: int) -> int:
        """value: s -<value>-> f, f fresh."""
        dst = self.new_state()
        self.rule_edge(src, expr.name, dst)
        return dst

    def intrinsic(self, expr: Intrinsic, src: int) -> int:
        """The node writes its own fragment through the public edges above."""
        return expr.fragment(self, src)


def rule_fsm(body: Expr, rule_ids: dict[str, int], rule_name: str = "?", token_sets: Optional[dict] = None) -> FSM:
    """The epsilon-NFA of one rule body (not yet simplified). `token_sets` numbers the
    grammar's TokenSet nodes (shared by its rules; new ones are added)."""
    builder = _NFABuilder(rule_ids, rule_name, {} if token_sets is None else token_sets)
    start = builder.new_state()
    with deep_recursion():
        end = builder.fragment(body, start)
    return FSM(builder.num_states, start, frozenset([end]), tuple(builder.byte_edges),
               tuple(builder.rule_edges), tuple(builder.eps_edges))


class FSMArrays(NamedTuple):
    """All rule FSMs of a grammar as flat arrays (S = total states, R = rules).

    state_rule : int32[S]      rule owning each global state
    rule_start : int32[R]      global start state of each rule
    is_final : bool_[S]
    byte_indptr : int32[S+1]   CSR over byte edges: edges of s are byte_indptr[s]:byte_indptr[s+1]
    byte_lo, byte_hi : int32[E]  inclusive byte range of each edge
    byte_dst : int32[E]
    ref_indptr : int32[S+1]    CSR over rule-reference edges
    ref_rule : int32[F]        referenced rule
    ref_dst : int32[F]
    rule_nullable : bool_[R]   rule derives the empty string
    root_rule : int32[1]       the root rule
    tok_indptr : int32[S+1]    CSR over token edges (letters >= 256: one whole token)
    tok_set : int32[G]         the edge's token set (index into GrammarFSMs.token_sets)
    tok_dst : int32[G]
    rule_budget : int32[R]     the rule's `max_tokens` option, -1 when it has none
    rule_char_budget : int32[R]  the rule's `max_chars` option, -1 when it has none
    rule_rep_lo, rule_rep_hi : int32[R]  a counted repetition's bounds (kernels/earley.py),
                               -1 for other rules; hi is REPEAT_UNBOUNDED for none
    rule_required : int32[R]   an unordered rule's count of required members (option
                               `unordered`, kernels/earley.py), -1 for other rules
    rule_member : int32[R]     a tracked member rule's 2 * number + required (options `member=j`,
                               `required`), -1 for other rules
    rule_leo : uint8[R]        1 where Leo items may pass the rule (kernels/earley.py, "Leo items";
                               `leo_rules`), 0 elsewhere; all 0 turns them off
    """

    state_rule: np.ndarray
    rule_start: np.ndarray
    is_final: np.ndarray
    byte_indptr: np.ndarray
    byte_lo: np.ndarray
    byte_hi: np.ndarray
    byte_dst: np.ndarray
    ref_indptr: np.ndarray
    ref_rule: np.ndarray
    ref_dst: np.ndarray
    rule_nullable: np.ndarray
    root_rule: np.ndarray
    tok_indptr: np.ndarray
    tok_set: np.ndarray
    tok_dst: np.ndarray
    rule_budget: np.ndarray
    rule_char_budget: np.ndarray
    rule_rep_lo: np.ndarray
    rule_rep_hi: np.ndarray
    rule_required: np.ndarray
    rule_member: np.ndarray
    rule_leo: np.ndarray


class Marker(NamedTuple):
    """A rule's stop/suffix marker (xg2ref/rule_options.py, "Markers")."""

    stop: bool  # hidden from every enclosing capture too (stop), or from the rule's own (suffix)
    hidden_bytes: int  # the marker's length when no helper rules split the span
    body_rule: int  # the helper rules whose languages split a span (-1: none)
    marker_rule: int
    label: Optional[str]  # stop_capture
    ends: tuple = ()  # without helper rules, a TagDispatch body's triggers: the marker is the one a span ends with
    before: bool = False  # an empty rule that stands right after its marker (a dispatch trigger)


@dataclass(frozen=True)
class GrammarFSMs:
    """One simplified FSM per rule, with the facts the Earley engine needs."""

    rule_names: tuple[str, ...]
    fsms: tuple[FSM, ...]
    root: int
    nullable: tuple[bool, ...]
    productive: tuple[bool, ...]
    token_sets: tuple = ()  # the TokenSet nodes, by token symbol
    max_tokens: tuple[int, ...] = ()  # per rule, -1 for none (empty: no rule has a token budget)
    max_chars: tuple[int, ...] = ()  # per rule, -1 for none (empty: no rule has a character budget)
    repeats: tuple = ()  # per rule, (lo, hi) of a counted repetition or None (empty: no rule is one)
    captures: tuple = ()  # per rule, its `capture` label or None (empty: no rule captures)
    temperatures: tuple = ()  # per rule, its `temperature` as a float32 value or None (empty: none has one)
    # per rule, ("unordered", required members) or ("member", j, required) or None (empty: none)
    unordered: tuple = ()
    # per rule, its stop/suffix marker (rule_options.Marker) or None (empty: no rule has one)
    markers: tuple = ()

    @property
    def num_states(self) -> int:
        return sum(f.num_states for f in self.fsms)

    def loop_view(self) -> "GrammarFSMs":
        """The grammar as the static analyses (FIRST, FOLLOW, VERIFY) must see it: each counted
        repetition's machine also gets, at every final state, the start state's edges (R+, the
        copies without their count; with l = 0 the rule is nullable). A superset of each
        rule's language, state numbers unchanged."""
        if not self.repeats:
            return self
        fsms = []
        for f, rep in zip(self.fsms, self.repeats):
            if rep is None:
                fsms.append(f)
                continue
            starts_b = [(lo, hi, d) for s, lo, hi, d in f.byte_edges if s == f.start]
            starts_r = [(r, d) for s, r, d in f.rule_edges if s == f.start]
            byte_edges = set(f.byte_edges) | {(q, lo, hi, d) for q in f.finals for lo, hi, d in starts_b}
            rule_edges = set(f.rule_edges) | {(q, r, d) for q in f.finals for r, d in starts_r}
            fsms.append(FSM(f.num_states, f.start, f.finals, tuple(sorted(byte_edges)), tuple(sorted(rule_edges))))
        return GrammarFSMs(self.rule_names, tuple(fsms), self.root, self.nullable, self.productive, self.token_sets,
                           self.max_tokens, self.max_chars, self.repeats, self.captures, self.temperatures,
                           self.unordered, self.markers)

    def state_offsets(self) -> np.ndarray:
        """offsets[r] = global number of rule r's state 0."""
        return np.concatenate([[0], np.cumsum([f.num_states for f in self.fsms])]).astype(np.int64)

    def to_arrays(self) -> FSMArrays:
        """Intern every machine into one `FSMArrays` (global state numbers)."""
        offsets = self.state_offsets()
        total = int(offsets[-1])
        state_rule = np.repeat(np.arange(len(self.fsms), dtype=np.int32), [f.num_states for f in self.fsms])
        is_final = np.zeros(total, dtype=np.bool_)
        byte_rows: list[tuple[int, int, int, int]] = []
        ref_rows: list[tuple[int, int, int]] = []
        tok_rows: list[tuple[int, int, int]] = []
        for r, fsm in enumerate(self.fsms):
            base = int(offsets[r])
            for s in fsm.finals:
                is_final[base + s] = True
            for s, lo, hi, d in fsm.byte_edges:
                if lo < TOKEN_SYMBOL_BASE:
                    byte_rows.append((base + s, lo, min(hi, 255), base + d))
                tok_rows.extend((base + s, k - TOKEN_SYMBOL_BASE, base + d)
                                for k in range(max(lo, TOKEN_SYMBOL_BASE), hi + 1))
            ref_rows.extend((base + s, rule, base + d) for s, rule, d in fsm.rule_edges)
        byte_rows.sort()
        ref_rows.sort()
        tok_rows.sort()
        b = np.array(byte_rows, dtype=np.int32).reshape(-1, 4)
        f = np.array(ref_rows, dtype=np.int32).reshape(-1, 3)
        t = np.array(tok_rows, dtype=np.int32).reshape(-1, 3)
        return FSMArrays(
            state_rule=state_rule,
            rule_start=np.array([offsets[r] + fsm.start for r, fsm in enumerate(self.fsms)], dtype=np.int32),
            is_final=is_final,
            byte_indptr=edge_indptr(b[:, 0], total),
            byte_lo=np.ascontiguousarray(b[:, 1]),
            byte_hi=np.ascontiguousarray(b[:, 2]),
            byte_dst=np.ascontiguousarray(b[:, 3]),
            ref_indptr=edge_indptr(f[:, 0], total),
            ref_rule=np.ascontiguousarray(f[:, 1]),
            ref_dst=np.ascontiguousarray(f[:, 2]),
            rule_nullable=np.array(self.nullable, dtype=np.bool_),
            root_rule=np.array([self.root], dtype=np.int32),
            tok_indptr=edge_indptr(t[:, 0], total),
            tok_set=np.ascontiguousarray(t[:, 1]),
            tok_dst=np.ascontiguousarray(t[:, 2]),
            rule_budget=np.array(self.max_tokens or [-1] * len(self.fsms), dtype=np.int32),
            rule_char_budget=np.array(self.max_chars or [-1] * len(self.fsms), dtype=np.int32),
            rule_rep_lo=np.array([r[0] if r else -1 for r in self.repeats] or [-1] * len(self.fsms), dtype=np.int32),
            rule_rep_hi=np.array([(REPEAT_UNBOUNDED if r[1] is None else r[1]) if r else -1 for r in self.repeats]
                                 or [-1] * len(self.fsms), dtype=np.int32),
            rule_required=np.array([u[1] if u and u[0] == "unordered" else -1 for u in self.unordered]
                                   or [-1] * len(self.fsms), dtype=np.int32),
            rule_member=np.array([2 * u[1] + u[2] if u and u[0] == "member" else -1 for u in self.unordered]
                                 or [-1] * len(self.fsms), dtype=np.int32),
            rule_leo=leo_rules(self),
        )


def leo_rules(fsms: GrammarFSMs) -> np.ndarray:
    """Per rule, 1 when Leo items may pass it (kernels/earley.py, "Leo items"): not a counted
    repetition (its final items LOOP), not unordered (its completions are guarded), and none
    where the grammar has captures or markers (their events are the completed items Leo items
    leave out)."""
    n = len(fsms.fsms)
    if fsms.captures or fsms.markers:
        return np.zeros(n, np.uint8)
    counted = [r is not None for r in fsms.repeats] if fsms.repeats else [False] * n
    unordered = [u is not None and u[0] == "unordered" for u in fsms.unordered] if fsms.unordered else [False] * n
    return np.array([not (c or u) for c, u in zip(counted, unordered)], dtype=np.uint8)


def edge_indptr(sources: np.ndarray, num_states: int) -> np.ndarray:
    """CSR offsets of edges sorted by source state: state s's edges are [out[s], out[s + 1])."""
    counts = np.bincount(sources, minlength=num_states) if len(sources) else np.zeros(num_states, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)


def build_grammar_fsms(ir: GrammarIR, *, max_dfa_states: int = MAX_DFA_STATES,
                       shapes: Optional["ShapeCache"] = None) -> GrammarFSMs:
    """Build, simplify and clean the FSM of every rule of `ir` (rules keep their order).

    A counted repetition `C ::= R{l,r}` (option `counted`, xg2ref/grammar/repetition.py) gets
    R's machine; its items count the copies (kernels/earley.py). With `shapes` (fsm/shapes.py),
    a rule whose shape was built before, in any grammar, takes that machine renamed."""
    names = tuple(r.name for r in ir.rules)
    rule_ids = {name: i for i, name in enumerate(names)}
    token_sets: dict = {}  # TokenSet -> its index (token symbol - TOKEN_SYMBOL_BASE)
    repeats = tuple((rule.body.min, rule.body.max) if rule.option("counted") else None for rule in ir.rules)
    fsms, raw_states = [], 0
    for r, rule in enumerate(ir.rules):
        body = rule.body.body if repeats[r] else rule.body
        # a rule with a token budget keeps its tail self-calls: each call is a new occurrence with
        # its own deadline (kernels/earley.py), which a loop would not give; so does a captured
        # rule, whose every occurrence is a capture (xg2ref/rule_options.py)
        loops = (rule.option("max_tokens") is None and rule.option("max_chars") is None and not repeats[r]
                 and rule.option("capture") is None)
        if shapes is None:
            fsm = rule_fsm(body, rule_ids, rule.name, token_sets)
            fsms.append(fsm.with_tail_calls_as_loops(r) if loops else fsm)
            raw_states += fsm.num_states
            continue
        key, refs = shape(body)
        own = refs.index(rule.name) if loops and rule.name in refs else -1
        key = (key, own, loops, repeats[r], max_dfa_states)
        hit = shapes.get(key)
        if hit is None:
            local_tokens: dict = {}
            fsm = rule_fsm(body, {name: k for k, name in enumerate(refs)}, rule.name, local_tokens)
            if raw_states + fsm.num_states > MAX_GRAMMAR_STATES:
                raise GrammarLimitError(f"the grammar needs more than {MAX_GRAMMAR_STATES} FSM states")
            hit = ((fsm.with_tail_calls_as_loops(own) if own >= 0 else fsm).simplified(max_dfa_states),
                   list(local_tokens), fsm.num_states)
            shapes.put(key, hit)
        raw_states += hit[2]
        fsms.append(relabel(hit[0], [rule_ids[name] for name in refs], hit[1], token_sets))
    if raw_states > MAX_GRAMMAR_STATES:
        raise GrammarLimitError(f"the grammar needs more than {MAX_GRAMMAR_STATES} FSM states")
    productive = productive_rules(fsms, repeats)
    # an unordered rule must see its required members: with one of them unproductive, so is it
    needs = {r: [rule_ids[m] for m in referenced_rules(rule.body)
                 if m in rule_ids and ir.rules[rule_ids[m]].option("member") is not None
                 and ir.rules[rule_ids[m]].option("required")]
             for r, rule in enumerate(ir.rules) if rule.option("unordered")}
    while any(productive[r] and not all(productive[m] for m in ms) for r, ms in needs.items()):
        for r, ms in needs.items():
            if not all(productive[m] for m in ms):
                fsms[r] = FSM(1, 0, frozenset())
        productive = productive_rules(fsms, repeats)
    dead = {r for r, ok in enumerate(productive) if not ok}
    if shapes is None:
        fsms = [f.without_rules(dead).simplified(max_dfa_states) for f in fsms]
    elif dead:  # the cached machines are simplified already: only rules that lost edges again
        fsms = [f.without_rules(dead).simplified(max_dfa_states) if any(e[1] in dead for e in f.rule_edges) else f
                for f in fsms]
    # a spent-budget close (grammar/spent_close.py) is never nullable to the closure: PREDICT
    # passes over it only when the budget is spent (its char budget says whether it may at all)
    gated = {r for r, rule in enumerate(ir.rules) if rule.option(SPENT_OPTION)}
    nullable = nullable_fsm_rules([FSM(1, 0, frozenset()) if r in gated else f for r, f in enumerate(fsms)],
                                  repeats)
    budgets = tuple(int(rule.option("max_tokens", -1)) for rule in ir.rules)
    char_budgets = tuple(_char_budget(rule, fsms[r], nullable) if r in gated else int(rule.option("max_chars", -1))
                         for r, rule in enumerate(ir.rules))
    captures, temperatures = rule_option_tables(ir)
    unordered = unordered_table(ir, fsms, nullable, rule_ids, productive)  # (unordered.py)
    markers = marker_table(ir, rule_ids)
    return GrammarFSMs(names, tuple(fsms), rule_ids[ir.root], tuple(nullable), tuple(productive), tuple(token_sets),
                       budgets if any(b >= 0 for b in budgets) else (),
                       char_budgets if any(b >= 0 for b in char_budgets) else (),
                       repeats if any(repeats) else (), captures, temperatures, unordered, markers)


def _char_budget(rule, fsm: FSM, nullable: list) -> int:
    """The `rule_char_budget` of a spent-budget close: SPENT_CLOSE_NULLABLE when its machine
    accepts the empty word (through its start, or references to nullable rules)."""
    empty = _path_exists(fsm, lambda r: nullable[r], False)
    return SPENT_CLOSE_NULLABLE if empty else SPENT_CLOSE


def marker_table(ir: GrammarIR, rule_ids: dict) -> tuple:
    """Per rule of `ir`, its stop/suffix marker (rule options `capture_hidden_*`, `stop_capture`;
    xg2ref/rule_options.py `Marker`) or None; () when no rule has one."""
    from ..intrinsics.tag_dispatch import TagDispatch

    out = []
    for r in ir.rules:
        suffix, stop = r.option("capture_hidden_suffix_bytes"), r.option("capture_hidden_stop_bytes")
        if suffix is None and stop is None:
            out.append(None)
            continue
        body, marker = (r.option(key) for key in MARKER_RULE_KEYS)
        ends = tuple(t for t, _ in r.body.tags) if isinstance(r.body, TagDispatch) and not r.body.loop else ()
        out.append(Marker(stop is not None, int(stop if stop is not None else suffix),
                          rule_ids.get(body, -1) if body is not None else -1,
                          rule_ids.get(marker, -1) if marker is not None else -1, r.option("stop_capture"), ends,
                          r.body == EPSILON))
    return tuple(out) if any(m is not None for m in out) else ()


def rule_option_tables(ir: GrammarIR) -> tuple[tuple, tuple]:
    """Per rule of `ir`, its capture label (a bare `capture` is labelled with the rule's name)
    and its temperature rounded to float32 (as xgrammar keeps it), None where the rule has none;
    each is () when no rule has the option, so grammars without them carry nothing."""
    captures = tuple(None if r.option("capture") is None else (r.option("capture") or r.name) for r in ir.rules)
    temperatures = tuple(None if r.option("temperature") is None
                         else float(np.float32(r.option("temperature"))) for r in ir.rules)
    return (captures if any(c is not None for c in captures) else (),
            temperatures if any(t is not None for t in temperatures) else ())


def productive_rules(fsms: list[FSM], repeats: tuple = ()) -> list[bool]:
    """Least fixpoint: a rule is productive when a path start -> final uses only bytes and
    references to productive rules (its language is non-empty); a counted R{0,r} always is."""
    return _rule_fixpoint(fsms, allow_bytes=True, repeats=repeats)


def nullable_fsm_rules(fsms: list[FSM], repeats: tuple = ()) -> list[bool]:
    """Least fixpoint: a rule is nullable when a path start -> final uses only references to
    nullable rules (no byte edge); a counted R{l,r} is nullable exactly when l = 0 (R is not)."""
    return _rule_fixpoint(fsms, allow_bytes=False, repeats=repeats)


def _rule_fixpoint(fsms: list[FSM], allow_bytes: bool, repeats: tuple = ()) -> list[bool]:
    """The rules with a path start -> final over epsilons, references to rules already known
    to hold, and (`allow_bytes`) bytes. A worklist: a rule is looked at again only when a rule
    it references has just been found to hold. A counted repetition R{l,r} with l = 0 holds
    outright (it matches the empty string); with l > 0 its machine decides."""
    holds = [False] * len(fsms)
    adjacency = [f.out_edges() for f in fsms]
    users: list[set[int]] = [set() for _ in fsms]
    for r, fsm in enumerate(fsms):
        for _, ref, _ in fsm.rule_edges:
            users[ref].add(r)
    todo = list(range(len(fsms) - 1, -1, -1))
    queued = [True] * len(fsms)
    while todo:
        r = todo.pop()
        queued[r] = False
        if holds[r]:
            continue
        empty_repeat = bool(repeats) and repeats[r] is not None and repeats[r][0] == 0
        if not empty_repeat and not _path_exists(fsms[r], lambda rule: holds[rule], allow_bytes, adjacency[r]):
            continue
        holds[r] = True
        for u in users[r]:
            if not holds[u] and not queued[u]:
                queued[u] = True
                todo.append(u)
    return holds


def _path_exists(fsm: FSM, rule_ok, allow_bytes: bool, adjacency=None) -> bool:
    bytes_out, rules_out, eps_out = adjacency if adjacency is not None else fsm.out_edges()
    seen, stack = {fsm.start}, [fsm.start]
    while stack:
        s = stack.pop()
        if s in fsm.finals:
            return True
        nxt = [d for r, d in rules_out[s] if rule_ok(r)] + eps_out[s]
        if allow_bytes:
            nxt += [d for _, _, d in bytes_out[s]]
        for d in nxt:
            if d not in seen:
                seen.add(d)
                stack.append(d)
    return False
