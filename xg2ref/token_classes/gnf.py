"""The grammar in Greibach normal form, as a pushdown automaton with one stack symbol per
nonterminal, and its stack adjacency (CFGzip §2.1, §3.2 and App. C; ../shared/SEED_SYSTEMS.md
§3.1, whose reconstruction of the lost formulas this follows).

In Greibach normal form every production reads a terminal first, `A → a B1 … Bn`. Its PDA keeps a
stack of nonterminals, the start symbol at first; reading a byte of terminal a, it pops A and
pushes B1 … Bn (B1 on top) for some production `A → a B1 … Bn`; a string is a sentence when the
stack can be empty at its end. Displacement (displacement.py) watches what a token does to that
stack, so the stack must move one production per byte: hence the normal form.

From the rule machines (fsm/build.py's FSMArrays, built without repetition compression) to the
normal form, each step one small rewrite:

    one nonterminal per machine state s     N_s → P N_d      byte edge s -[lo-hi]-> d, P its blocks
                                            N_s → N_r N_d    rule edge s -R-> d, r = R's start
                                            N_s → T_k N_d    token edge (a token set's terminal)
                                            N_s → ε          s final
    a fresh start                           S′ → N_{root start}       (S′ on no right-hand side)
    ε removal          A → X Y, Y nullable              adds  A → X
    unit removal       A → B, B → γ                     gives A → γ
    useless removal    keep symbols that derive a string and that S′ reaches
    Paull              A_i → A_j γ, j < i               gives A_i → δ γ for A_j → δ
                       A → A α | β                      gives A → β | β A′,  A′ → α | α A′
    substitution       A → B γ, B → a δ                 gives A → a δ γ  (B in normal form first)
    merging            nonterminals with the same productions, up to merged names, are one
                       (the coarsest such partition, refined as Moore minimization refines)

Terminals are sets of byte blocks (blocks.py): every byte of a block reads the same productions.
Productions that differ only in their terminal's blocks are one production over the union.

Stack adjacency (App. C): `(X, Y) ∈ ADJ` when Y can lie right below X on a stack the PDA reaches
and X then pops pushing nothing (`X → a`). Y lies below X when some body holds `… A Y …` and X
is A or, following last symbols of bodies, a right-most descendant of A:

    A → a γ, γ = … B Y …                 ⊢ Y below B
    Y below A, A → a γ, γ ends with B    ⊢ Y below B
    Y below X, X → a                     ⊢ (X, Y) ∈ ADJ

Displacement pulls a symbol from the unknown stack below only through ADJ (after popping X) or,
at a token's first byte, any symbol but S′.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

import numpy as np

from ..exceptions import TokenClassesUnsupported

MAX_GNF_PRODUCTIONS = 400_000  # past this the normal form is refused (TokenClassesUnsupported)


class StackGrammar(NamedTuple):
    """The normal form, flat, for kernels/displacement.py (n symbols, P productions, W words).

    start : int                 S′, the start symbol (on no right-hand side)
    prod_indptr : int32[n+1]    CSR: the productions of symbol X
    push_indptr : int32[P+1]    CSR: the symbols each production pushes, top first
    push_syms : int32[...]
    adj_indptr : int32[n+1]     CSR: the symbols Y with (X, Y) in ADJ
    adj_syms : int32[...]
    first_indptr : int32[B+1]   CSR over blocks: the symbols but S′ with a production reading it
    first_syms : int32[...]
    read_indptr : int32[n*B+1]  CSR over (symbol X, block b) at X * B + b: X's productions reading b
    read_prods : int32[...]
    token_prods : int32         productions reading a token set (kept out of the byte walk)
    """

    start: int
    prod_indptr: np.ndarray
    push_indptr: np.ndarray
    push_syms: np.ndarray
    adj_indptr: np.ndarray
    adj_syms: np.ndarray
    first_indptr: np.ndarray
    first_syms: np.ndarray
    read_indptr: np.ndarray
    read_prods: np.ndarray
    token_prods: int

    @property
    def n_symbols(self) -> int:
        return len(self.prod_indptr) - 1

    @property
    def n_productions(self) -> int:
        return len(self.push_indptr) - 1


def _check_size(prods: dict) -> None:
    count = sum(len(ps) for ps in prods.values())
    if count > MAX_GNF_PRODUCTIONS:
        raise TokenClassesUnsupported(f"the grammar's Greibach normal form passes {MAX_GNF_PRODUCTIONS:,} productions "
                                      f"(MAX_GNF_PRODUCTIONS); the relation byte_blocks needs no normal form")


# Symbols: a nonterminal is an int >= 0; a terminal is an int < 0, -1 - k for terminal k, and
# terminals[k] is a block mask (an int, bit b for block b) or ("token", set index).

def machine_grammar(arrays, blocks: np.ndarray) -> tuple:
    """(prods, start, terminals): the CFG of the rule machines (module docstring), over the states
    S′ reaches. prods: symbol -> set of bodies (tuples of symbols)."""
    terminals: list = []
    index: dict = {}

    def terminal(key) -> int:
        if key not in index:
            index[key] = len(terminals)
            terminals.append(key)
        return -1 - index[key]

    n_states = len(arrays.is_final)
    start = n_states
    prods: dict = {start: {(int(arrays.rule_start[arrays.root_rule[0]]),)}}
    todo = [int(arrays.rule_start[arrays.root_rule[0]])]
    while todo:
        s = todo.pop()
        if s in prods:
            continue
        bodies = prods[s] = set()
        for e in range(arrays.byte_indptr[s], arrays.byte_indptr[s + 1]):
            lo, hi = int(blocks[arrays.byte_lo[e]]), int(blocks[arrays.byte_hi[e]])
            bodies.add((terminal(((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)), int(arrays.byte_dst[e])))
        for e in range(arrays.ref_indptr[s], arrays.ref_indptr[s + 1]):
            bodies.add((int(arrays.rule_start[arrays.ref_rule[e]]), int(arrays.ref_dst[e])))
        for e in range(arrays.tok_indptr[s], arrays.tok_indptr[s + 1]):
            bodies.add((terminal(("token", int(arrays.tok_set[e]))), int(arrays.tok_dst[e])))
        if arrays.is_final[s]:
            bodies.add(())
        todo.extend(x for body in bodies for x in body if x >= 0 and x not in prods)
    return prods, start, terminals


def remove_epsilon(prods: dict) -> dict:
    """ε removal: every body with each nullable symbol kept or dropped, the empty bodies gone."""
    nullable: set = set()
    changed = True
    while changed:
        changed = False
        for a, bodies in prods.items():
            if a not in nullable and any(all(x in nullable for x in body) for body in bodies):
                nullable.add(a)
                changed = True
    out: dict = {}
    for a, bodies in prods.items():
        new = out[a] = set()
        for body in bodies:
            variants = [()]
            for x in body:
                variants = [v + (x,) for v in variants] + (variants if x in nullable else [])
            new.update(v for v in variants if v)
    return out


def remove_units(prods: dict) -> dict:
    """Unit removal: A → B replaced by B's bodies (through chains of units)."""
    out: dict = {}
    for a in prods:
        seen, todo, new = {a}, [a], set()
        while todo:
            for body in prods[todo.pop()]:
                if len(body) == 1 and body[0] >= 0:
                    if body[0] not in seen:
                        seen.add(body[0])
                        todo.append(body[0])
                else:
                    new.add(body)
        out[a] = new
    return out


def remove_useless(prods: dict, start: int) -> dict:
    """Only the symbols that derive some string and that `start` reaches."""
    productive: set = set()
    changed = True
    while changed:
        changed = False
        for a, bodies in prods.items():
            if a not in productive and any(all(x < 0 or x in productive for x in body) for body in bodies):
                productive.add(a)
                changed = True
    kept = {a: {b for b in bodies if all(x < 0 or x in productive for x in b)} for a, bodies in prods.items()
            if a in productive}
    reach, todo = {start}, [start]
    while todo:
        for body in kept.get(todo.pop(), ()):
            for x in body:
                if x >= 0 and x not in reach:
                    reach.add(x)
                    todo.append(x)
    return {a: kept.get(a, set()) for a in reach}


def bfs_order(prods: dict, start: int) -> list:
    """The symbols in breadth-first order from `start` (CFGzip's order for Paull's algorithm)."""
    order, seen, queue = [], {start}, deque([start])
    while queue:
        a = queue.popleft()
        order.append(a)
        for body in sorted(prods[a]):
            for x in body:
                if x >= 0 and x not in seen:
                    seen.add(x)
                    queue.append(x)
    return order


def remove_left_recursion(prods: dict, start: int) -> dict:
    """Paull's algorithm (module docstring); new symbols A′ are numbered after the others."""
    prods = {a: set(bodies) for a, bodies in prods.items()}
    order = bfs_order(prods, start)
    rank = {a: i for i, a in enumerate(order)}
    fresh = max(prods) + 1
    for i, a in enumerate(order):
        # A_i → A_j γ, j < i: A_j's bodies already lead with symbols ranked past j
        while True:
            lead = [body for body in prods[a] if body[0] >= 0 and rank.get(body[0], len(order)) < i]
            if not lead:
                break
            for body in lead:
                prods[a].discard(body)
                prods[a].update(delta + body[1:] for delta in prods[body[0]])
            _check_size(prods)
        recursive = {body[1:] for body in prods[a] if body[0] == a}
        if recursive:  # A → A α | β  gives  A → β | β A′,  A′ → α | α A′
            base = {body for body in prods[a] if body[0] != a}
            prods[a] = base | {beta + (fresh,) for beta in base}
            prods[fresh] = recursive | {alpha + (fresh,) for alpha in recursive}
            fresh += 1
    return prods


def substitute_leading(prods: dict) -> dict:
    """Every body led by a terminal: leading symbols replaced by their bodies, each symbol after
    the symbols it leads with (after Paull they form no cycle)."""
    leads = {a: {body[0] for body in bodies if body[0] >= 0} for a, bodies in prods.items()}
    done: dict = {}
    for root in prods:
        stack = [(root, False)]
        while stack:
            a, expanded = stack.pop()
            if a in done:
                continue
            if not expanded:
                stack.append((a, True))
                for b in leads[a]:
                    if b not in done:
                        if any(x == b and e is True for x, e in stack):
                            raise TokenClassesUnsupported("left recursion left after Paull's algorithm")
                        stack.append((b, False))
                continue
            out = set()
            for body in prods[a]:
                if body[0] < 0:
                    out.add(body)
                else:
                    out.update(delta + body[1:] for delta in done[body[0]])
            done[a] = out
            if len(out) > MAX_GNF_PRODUCTIONS:
                _check_size(done)
    return done


def merge_terminals(prods: dict, terminals: list) -> dict:
    """Symbol -> {(terminal key, tail)}: bodies with one tail merged over their blocks (key: the
    block mask), token-set bodies kept apart (key: ("token", k))."""
    out: dict = {}
    for a, bodies in prods.items():
        masks: dict = {}
        tokens = set()
        for body in bodies:
            term = terminals[-1 - body[0]]
            if isinstance(term, tuple):
                tokens.add((term, body[1:]))
            else:
                masks[body[1:]] = masks.get(body[1:], 0) | term
        out[a] = {(mask, tail) for tail, mask in masks.items()} | tokens
    return out


def merge_equivalent(prods: dict, start: int) -> tuple:
    """(prods over merged symbols, start): the coarsest partition in which symbols of one part
    have the same productions up to parts, S′ alone (a refinement to the fixed point, as Moore
    minimization); merged symbols derive the same strings, so the language is kept."""
    symbols = sorted(prods)
    part = {a: (0 if a == start else 1) for a in symbols}
    count = len(set(part.values()))
    while True:
        keys: dict = {}
        new = {}
        for a in symbols:
            merged: dict = {}
            for term, tail in prods[a]:
                k = (term if isinstance(term, tuple) else "bytes", tuple(part[x] for x in tail))
                merged[k] = merged.get(k, 0) | (0 if isinstance(term, tuple) else term)
            sig = (part[a], frozenset(merged.items()))
            new[a] = keys.setdefault(sig, len(keys))
        part = new
        if len(keys) == count:
            break
        count = len(keys)
    out: dict = {}
    for a in symbols:
        p = part[a]
        if p not in out:
            merged = {}
            for term, tail in prods[a]:
                k = (term if isinstance(term, tuple) else "bytes", tuple(part[x] for x in tail))
                merged[k] = merged.get(k, 0) | (0 if isinstance(term, tuple) else term)
            out[p] = {(kind if kind != "bytes" else mask, tail) for (kind, tail), mask in merged.items()}
    return out, part[start]


def adjacency(prods: dict) -> dict:
    """X -> the set of Y with (X, Y) in ADJ (module docstring), as Python ints (bit Y)."""
    below: dict = {a: 0 for a in prods}
    last: dict = {a: set() for a in prods}  # A -> the last symbols of its bodies
    for a, bodies in prods.items():
        for _, tail in bodies:
            for x, y in zip(tail, tail[1:]):
                below[x] |= 1 << y
            if tail:
                last[a].add(tail[-1])
    todo = deque(prods)
    while todo:  # Y below A, B ends a body of A  ⊢  Y below B
        a = todo.popleft()
        for b in last[a]:
            if below[a] & ~below[b]:
                below[b] |= below[a]
                todo.append(b)
    return {x: below[x] for x, bodies in prods.items() if any(not tail for _, tail in bodies)}


def _bits(value: int) -> list:
    out = []
    while value:
        low = value & -value
        out.append(low.bit_length() - 1)
        value ^= low
    return out


def stack_grammar(arrays, blocks: np.ndarray) -> StackGrammar:
    """The Greibach normal form of the machines `arrays` over byte blocks `blocks`, merged, flat."""
    prods, start, terminals = machine_grammar(arrays, blocks)
    prods = remove_useless(remove_units(remove_epsilon(prods)), start)
    if not prods.get(start):
        prods = {start: set()}
    prods = substitute_leading(remove_left_recursion(prods, start))
    prods = remove_useless(prods, start)
    _check_size(prods)
    prods, start = merge_equivalent(merge_terminals(prods, terminals), start)
    n = len(prods)
    n_blocks = int(blocks.max()) + 1
    words = (n_blocks + 63) // 64
    prod_indptr, push_indptr, push_syms, masks, token_prods = [0], [0], [], [], 0
    for a in range(n):
        for term, tail in sorted(prods[a], key=repr):
            if isinstance(term, tuple):
                token_prods += 1
                continue
            masks.append([(term >> (64 * w)) & 0xFFFFFFFFFFFFFFFF for w in range(words)])
            push_syms.extend(tail)
            push_indptr.append(len(push_syms))
        prod_indptr.append(len(push_indptr) - 1)
    adj = adjacency(prods)
    adj_indptr, adj_syms = [0], []
    for x in range(n):
        adj_syms.extend(_bits(adj.get(x, 0)))
        adj_indptr.append(len(adj_syms))
    first: list = [[] for _ in range(n_blocks)]
    for a in range(n):
        if a != start:
            reads = 0
            for term, _ in prods[a]:
                if not isinstance(term, tuple):
                    reads |= term
            for b in _bits(reads):
                first[b].append(a)
    first_indptr = np.cumsum([0] + [len(f) for f in first]).astype(np.int32)
    reading: list = [[] for _ in range(n * n_blocks)]
    for a in range(n):
        for p in range(prod_indptr[a], prod_indptr[a + 1]):
            mask = 0
            for w in range(words):
                mask |= int(masks[p][w]) << (64 * w)
            for b in _bits(mask):
                reading[a * n_blocks + b].append(p)
    read_indptr = np.cumsum([0] + [len(r) for r in reading]).astype(np.int32)
    i32 = lambda v: np.asarray(v, dtype=np.int32)  # noqa: E731
    return StackGrammar(start, i32(prod_indptr), i32(push_indptr), i32(push_syms), i32(adj_indptr), i32(adj_syms),
                        first_indptr, i32([a for f in first for a in f]), read_indptr, i32([p for r in reading for p in r]),
                        token_prods)
