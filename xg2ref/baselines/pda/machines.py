"""XGrammar App. A and §3.4: the pushdown automaton's machines, at three stages, and what
XGrammar-1 could not run.

App. A's pushdown automaton has one finite automaton per rule whose edges read a byte or call a
rule: exactly xg2ref's per-rule FSMs (xg2ref/fsm/build.py). The Earley engine reads them as items;
the PDA of this package reads them as stacks of return states. Three stages of the same machines:

    "nfa"      Thompson's construction per rule, ε edges kept, trimmed (XGrammar's PDA baseline)
    "merged"   + node merging (§3.4) to a fixpoint, `merge_nodes`
    "dfa"      the machines the Earley engine runs: determinized, minimized, tail self-calls
               as loops (`FSM.simplified`, `FSM.with_tail_calls_as_loops`)

Every stage cuts edges into unproductive rules and trims: a configuration in a dead state would
make a prefix look viable when no sentence extends it (specs/03 "Masks").

NODE MERGING (§3.4), two rules, each preserving the language:

    s -L-> t1, s -L-> t2, nothing else enters t1 or t2, neither is the start
        |-  t1 and t2 become one state (its edges the union, final if either was)
    s -ε-> t, s has no other edge out and (s is not final or t is)
        |-  s becomes t (edges into s now enter t; the start moves to t)
    s -ε-> t, nothing else enters t, t is not the start
        |-  t becomes s (t's edges leave s; s is final if t was)

What XGrammar-1 could not run is refused with `UnsupportedByBaseline`, naming the rule: left
recursion (a cycle of "R may call S before reading a byte"), which made its closure loop
(xgrammar #126); token budgets; unordered members; token-level intrinsics. Counted repetitions
are unrolled (`repetition_threshold=None`), as XGrammar-1 did.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from ...exceptions import XG2RefError
from ...fsm.build import (GrammarFSMs, build_grammar_fsms, edge_indptr, nullable_fsm_rules, productive_rules,
                          rule_fsm)
from ...fsm.fsm import FSM
from ...grammar.ir import GrammarIR
from ...grammar.passes import LEAF_INLINE_SIZE, flatten, fuse_byte_strings, inline_small_rules, normalize, \
    remove_dead_rules

STAGES = ("nfa", "merged", "dfa")
INLINE_MODES = ("none", "xg1", "xg2ref")


class UnsupportedByBaseline(XG2RefError):
    """A grammar construct XGrammar-1's pushdown automaton could not run (the message names the
    rule and the construct; the Earley engine runs it)."""


class PDAArrays(NamedTuple):
    """The machines of every rule as flat arrays (global state numbers), as the PDA kernels read
    them: the fields of `FSMArrays` the PDA uses, and the ε edges the "nfa" and "merged" stages
    keep (S states, R rules).

    state_rule : int32[S]   rule_start : int32[R]   is_final : bool_[S]   root_rule : int32[1]
    byte_indptr : int32[S+1], byte_lo, byte_hi, byte_dst : int32[E]   bytes lo..hi lead to dst
    ref_indptr : int32[S+1], ref_rule, ref_dst : int32[F]              a call of ref_rule, returning to ref_dst
    eps_indptr : int32[S+1], eps_dst : int32[P]                         ε edges
    """

    state_rule: np.ndarray
    rule_start: np.ndarray
    is_final: np.ndarray
    root_rule: np.ndarray
    byte_indptr: np.ndarray
    byte_lo: np.ndarray
    byte_hi: np.ndarray
    byte_dst: np.ndarray
    ref_indptr: np.ndarray
    ref_rule: np.ndarray
    ref_dst: np.ndarray
    eps_indptr: np.ndarray
    eps_dst: np.ndarray


class PDAMachines(NamedTuple):
    """A grammar's machines at one stage: per rule (`fsms`) and flat (`arrays`)."""

    stage: str
    fsms: GrammarFSMs
    arrays: PDAArrays


def prepare_ir(ir: GrammarIR, inline: str = "xg1") -> GrammarIR:
    """The normalization passes, with the rule inlining of `inline`: "none"; "xg1", only rules
    that reference no rule (XGrammar §3.4's inlining, close to xgrammar 0.1's RuleInliner);
    "xg2ref", the Earley engine's default pass."""
    if inline not in INLINE_MODES:
        raise ValueError(f"inline must be one of {INLINE_MODES}, got {inline!r}")
    if inline == "xg2ref":
        return normalize(ir)
    ir = normalize(ir, inline=False)
    if inline == "xg1":
        ir = remove_dead_rules(fuse_byte_strings(flatten(inline_small_rules(ir, max_size=0,
                                                                             leaf_size=LEAF_INLINE_SIZE))))
    return ir


def build_machines(ir: GrammarIR, stage: str = "dfa") -> PDAMachines:
    """The machines of a normalized grammar at `stage` (refusing what XGrammar-1 could not run)."""
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
    _refuse_options(ir)
    if stage == "dfa":
        fsms = build_grammar_fsms(ir)
    else:
        fsms = _thompson_machines(ir, merged=stage == "merged")
    if fsms.token_sets:
        raise UnsupportedByBaseline("the grammar reads whole tokens (a token-set intrinsic): XGrammar-1's "
                                    "pushdown automaton reads bytes only")
    cycle = left_recursive_cycle(fsms)
    if cycle is not None:
        raise UnsupportedByBaseline(
            f"rule {cycle[0]!r} is left-recursive ({' -> '.join(cycle)}): XGrammar-1's pushdown automaton would "
            "push frames forever before reading a byte (use the Earley engine, or rewrite the rule)")
    return PDAMachines(stage, fsms, pda_arrays(fsms))


def _refuse_options(ir: GrammarIR) -> None:
    for rule in ir.rules:
        if rule.option("max_tokens") is not None or rule.option("max_chars") is not None:
            raise UnsupportedByBaseline(f"rule {rule.name!r} has a token or character budget: XGrammar-1 had none")
        if rule.option("unordered") or rule.option("member") is not None:
            raise UnsupportedByBaseline(f"rule {rule.name!r} reads unordered members: XGrammar-1 had none")


def _thompson_machines(ir: GrammarIR, merged: bool) -> GrammarFSMs:
    """Per rule, Thompson's ε-NFA (no loops for tail calls), dead rules cut, trimmed, and with
    `merged` the node merging of §3.4."""
    names = tuple(r.name for r in ir.rules)
    rule_ids = {name: i for i, name in enumerate(names)}
    token_sets: dict = {}
    fsms = [rule_fsm(rule.body, rule_ids, rule.name, token_sets).trim() for rule in ir.rules]
    productive = productive_rules(fsms)
    dead = {r for r, ok in enumerate(productive) if not ok}
    fsms = [f.without_rules(dead).trim() for f in fsms]
    if merged:
        fsms = [merge_nodes(f) for f in fsms]
    nullable = nullable_fsm_rules(fsms)
    return GrammarFSMs(names, tuple(fsms), rule_ids[ir.root], tuple(nullable), tuple(productive), tuple(token_sets))


def pda_arrays(fsms: GrammarFSMs) -> PDAArrays:
    """Flatten the machines (`GrammarFSMs.to_arrays`) and add their ε edges as CSR arrays."""
    a = fsms.to_arrays()
    offsets = fsms.state_offsets()
    rows = sorted((int(offsets[r]) + s, int(offsets[r]) + d) for r, f in enumerate(fsms.fsms) for s, d in f.eps_edges)
    eps = np.array(rows, dtype=np.int32).reshape(-1, 2)
    return PDAArrays(a.state_rule, a.rule_start, a.is_final, a.root_rule, a.byte_indptr, a.byte_lo, a.byte_hi,
                     a.byte_dst, a.ref_indptr, a.ref_rule, a.ref_dst, edge_indptr(eps[:, 0], int(offsets[-1])),
                     np.ascontiguousarray(eps[:, 1]))


def left_recursive_cycle(fsms: GrammarFSMs) -> Optional[list[str]]:
    """A cycle of rules R0 -> R1 -> ... -> R0 where each may call the next before reading a
    byte (from its start through ε edges and calls of nullable rules), as rule names with the
    first repeated at the end; None when there is none."""
    calls: list[set[int]] = []
    for fsm in fsms.fsms:
        _, rules_out, eps_out = fsm.out_edges()
        seen, todo, called = {fsm.start}, [fsm.start], set()
        while todo:
            s = todo.pop()
            nxt = list(eps_out[s])
            for r, d in rules_out[s]:
                called.add(r)
                if fsms.nullable[r]:
                    nxt.append(d)
            for d in nxt:
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        calls.append(called)
    colour = [0] * len(calls)  # 0 unvisited, 1 on the path, 2 done
    for root in range(len(calls)):
        if colour[root]:
            continue
        path, iters = [root], [iter(sorted(calls[root]))]
        colour[root] = 1
        while path:
            nxt = next(iters[-1], None)
            if nxt is None:
                colour[path.pop()] = 2
                iters.pop()
            elif colour[nxt] == 1:
                cycle = path[path.index(nxt):] + [nxt]
                return [fsms.rule_names[r] for r in cycle]
            elif colour[nxt] == 0:
                colour[nxt] = 1
                path.append(nxt)
                iters.append(iter(sorted(calls[nxt])))
    return None


# ---- node merging (§3.4) ------------------------------------------------------------------------

def merge_nodes(fsm: FSM) -> FSM:
    """Apply the two merge rules of the module docstring until neither applies (then trim).
    The result accepts the same strings with no more states and no more edges."""
    edges = {(s, ("b", lo, hi), d) for s, lo, hi, d in fsm.byte_edges}
    edges |= {(s, ("r", r), d) for s, r, d in fsm.rule_edges}
    edges |= {(s, ("e",), d) for s, d in fsm.eps_edges if s != d}
    start, finals = fsm.start, set(fsm.finals)
    while True:
        merges = _merge_pass(edges, start, finals)
        if not merges:
            break
        for old, new in merges:
            edges = {(new if s == old else s, label, new if d == old else d) for s, label, d in edges}
            edges = {e for e in edges if not (e[1] == ("e",) and e[0] == e[2])}
            if old in finals:
                finals.discard(old)
                finals.add(new)
            if start == old:
                start = new
    byte_edges = tuple(sorted((s, label[1], label[2], d) for s, label, d in edges if label[0] == "b"))
    rule_edges = tuple(sorted((s, label[1], d) for s, label, d in edges if label[0] == "r"))
    eps_edges = tuple(sorted((s, d) for s, label, d in edges if label[0] == "e"))
    return FSM(fsm.num_states, start, frozenset(finals), byte_edges, rule_edges, eps_edges).trim()


def _merge_pass(edges: set, start: int, finals: set) -> list[tuple[int, int]]:
    """Merges (old state -> the state it becomes) that apply now, no state in two of them (a
    merge only raises the degrees of the state it keeps, so the others stay valid)."""
    indeg: dict[int, int] = {}
    out: dict[int, list] = {}
    for s, label, d in edges:
        indeg[d] = indeg.get(d, 0) + 1
        out.setdefault(s, []).append((label, d))
    touched: set[int] = set()
    merges = []
    for s in sorted(out):
        by_label: dict = {}
        for label, d in out[s]:
            if d != s and d != start and indeg[d] == 1:
                by_label.setdefault(label, []).append(d)
        for label, ds in sorted(by_label.items()):
            ds = [d for d in sorted(ds) if d not in touched]
            if len(ds) >= 2 and s not in touched:
                touched.update(ds)
                touched.add(s)
                merges += [(d, ds[0]) for d in ds[1:]]
    for s, label, t in sorted(edges):
        if label != ("e",) or s in touched or t in touched:
            continue
        if len(out[s]) == 1 and (s not in finals or t in finals):
            merges.append((s, t))
        elif indeg[t] == 1 and t != start:
            merges.append((t, s))
        else:
            continue
        touched.update((s, t))
    return merges
