"""The memory account of a `GrammarCompiler`: every byte it keeps, by part, and the bound
`cache_limit_bytes` enforces on it (XGrammar §3.1 stores entries compactly; xgrammar's
`GrammarCompiler.get_cache_size_bytes` reports what its caches hold, and this is ours).

HELD. The bytes an object keeps are those of every object reachable from it (Python objects at
`sys.getsizeof`, numpy arrays with their buffers, a view through its base), each counted once,
stopping at what is not the compiler's to free: types, modules and functions, the tokenizer's
own objects, and the parts another account counts (`stop`). The walk is exact where the heap is:
a test checks it against tracemalloc.

ACCOUNT. What the compiler keeps is counted in one walk, part by part, each object charged to
the first part that reaches it:

| part | its roots |
|---|---|
| vocabulary | the tables kept for the compiler's vocabulary (string slices, tries, idle build buffers) and the build buffers lent to builds running now |
| grammars | the compiled grammars cached (FSMs, flat arrays, FOLLOW and lookahead tables, the mask cache with its entries and fill scratch), not entering the pool or the parts |
| pool | the cross-grammar pool's entries, not entering the shape cache |
| shapes | the shape cache's machines |
| parts | linked parts (sub-grammars compiled once) |

So a machine or part several grammars share is counted once.
"""

from __future__ import annotations

import gc
import sys
import types
from typing import Iterable, Optional

import numpy as np

from .mask.classifier import shared_build_bytes
from .util import vocabulary_entry

# objects no account follows: code, not data
_NOT_DATA = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
             types.CodeType, types.FrameType, types.MethodWrapperType, types.WrapperDescriptorType)


_CODE: dict = {}  # type -> whether its objects are code (the walks ask for each object)


def _is_code(obj) -> bool:
    kind = type(obj)
    code = _CODE.get(kind)
    if code is None:
        code = _CODE[kind] = issubclass(kind, _NOT_DATA) or kind.__module__.startswith("numba.")
    return code


# HELD: each object reachable from the roots once, at its own size; an array's buffer with the
# array that owns it (a view adds its header and follows its base); nothing past `stop` or code
def held_bytes(roots: Iterable, stop: set = frozenset()) -> int:
    """Bytes of every object reachable from `roots`, each counted once, not past the ids in
    `stop` (see HELD)."""
    return _walk(roots, set(), stop if isinstance(stop, (set, frozenset)) else set(stop))


def tokenizer_ids(info) -> set:
    """The tokenizer and what it holds, two levels down: what grammars share with it (its
    vocabulary's arrays), which is the user's, not the compiler's."""
    out = {id(info)}
    for value in list(vars(info).values()) + [info.vocab_arrays()]:
        out.add(id(value))
        if isinstance(value, tuple):
            out.update(id(v) for v in value)
    return out


def vocabulary_tables(vocab) -> list:
    """What the process keeps for one vocabulary, shared by every compiler over it: the tries
    and facts of the classifier, the JSON-string slice, the idle build buffers and the bitset
    of its regular tokens."""
    from .mask import classifier, entries, slices

    held = (vocabulary_entry(table, vocab) for table in (classifier._TRIES, slices._SLICES, classifier._FREE,
                                                          entries._REGULAR))
    return [value for value in held if value is not None]


# ACCOUNT: one walk over everything the compiler keeps, in the order of the table above; each
# part is charged what it holds beyond the parts before it, so the lines add up to the bytes the
# compiler keeps (what deleting it would free, its vocabulary's tables aside)
def compiler_account(compiler) -> dict:
    """Bytes the compiler keeps, by part: grammars, pool, shapes, parts, vocabulary
    (`GrammarCompiler.memory_account`)."""
    info = compiler.tokenizer_info
    grammars = list(compiler._cache.values())
    tables = vocabulary_tables(info.vocab_arrays()) + [  # (and those lent to builds running now)
        b for b in (g.mask_cache._classifier.leased() for g in grammars) if b is not None]
    seen = tokenizer_ids(info)
    pool, parts = compiler.pool, compiler.parts
    lines = {}
    for name, roots, also in (("vocabulary", tables, ()),
                              ("grammars", grammars, (pool, parts)),
                              ("pool", [pool] if pool is not None else [], (pool.shapes,) if pool is not None else ()),
                              ("shapes", [pool.shapes] if pool is not None else [], ()),
                              ("parts", [parts] if parts is not None else [], ())):
        lines[name] = _walk(roots, seen, {id(o) for o in also if o is not None})
    return lines


def _walk(roots, seen: set, fence: set) -> int:
    """`held_bytes` sharing `seen` across calls (objects counted once over every part), not
    entering the objects of `fence` (another part's, walked later)."""
    stack = list(roots)
    total = 0
    code, size, referents, array = _CODE, sys.getsizeof, gc.get_referents, np.ndarray  # (a loop over millions)
    while stack:
        obj = stack.pop()
        i = id(obj)
        if i in seen or i in fence:
            continue
        skip = code.get(type(obj))
        if skip or (skip is None and _is_code(obj)):
            continue
        seen.add(i)
        total += size(obj)
        if isinstance(obj, array):
            if obj.base is not None:
                stack.append(obj.base)
            continue
        stack.extend(referents(obj))
    return total


def array_bytes(compiled) -> int:
    """Bytes of what a compiled grammar grows after it is compiled: its entries, the fills'
    scratch and the rows of the pure-state table (JIT entries and fills on new threads add to
    them)."""
    cache = compiled.mask_cache
    return (cache._store.capacity_bytes + sum(int(a.nbytes) for s in cache.scratch.held() for a in s)
            + int(cache._classifier.pure_next.nbytes))


# TALLY: what each part holds is counted when it enters the compiler and taken off when it
# leaves, so that keeping the account costs a dictionary difference per part and a walk of what
# is new, not a walk of everything kept:
#
#   a grammar cached     walked alone (not into the pool, the parts or its rule machines), then
#                        its arrays' growth
#   a pool entry         walked alone (not into its witness), then the pool's own count of what
#                        its entries grew by
#   a witness            (the grammar a pool entry was built for, which the entry keeps) walked
#                        alone, once, while an entry names it and no cached grammar counts it
#   a shape, a part      walked alone when first seen
#   a rule machine       counted once while a grammar, a witness or a shape holds it, on the
#                        line of the first of those (ACCOUNT's order)
#
# What else two holders share is counted with each, and what grows unseen (a chart) is missed:
# over the JSONSchemaBench sample on Llama-3 the tally is within 6% of the account either way.
class _Keyed:
    """The items of one keyed part, each sized once when first seen."""

    def __init__(self):
        self.items: dict = {}  # key -> (item, bytes)
        self.total = 0

    def update(self, current: dict, size) -> tuple[list, list]:
        """Follow `current` (key -> item): (items new since the last call, items gone)."""
        items = self.items
        gone = [items.pop(k) for k in items.keys() - current.keys()]
        gone += [items.pop(k) for k in [k for k, (item, _) in items.items() if current[k] is not item]]
        new = [(k, current[k]) for k in current.keys() - items.keys()]
        for key, item in new:
            items[key] = (item, size(item))
        self.total += sum(items[k][1] for k, _ in new) - sum(b for _, b in gone)
        return [item for _, item in new], [item for item, _ in gone]


GRAMMARS, WITNESSES, SHAPES = range(3)  # who holds a rule machine, in the order its bytes are charged


class _Machines:
    """The pieces of rule machines by identity, each counted once while something holds it: a
    machine and its edge tuples (a machine relabeled for a grammar keeps its shape's byte edges,
    and every grammar with that shape holds them)."""

    def __init__(self):
        self.held: dict = {}  # id -> [piece, bytes, holders of each kind]
        self.lines = [0, 0, 0]  # bytes charged to grammars, witnesses, shapes

    def hold(self, machines, kind: int, step: int) -> None:
        """`machines` gained (step 1) or lost (-1) a holder of `kind`."""
        pieces = {}  # id -> (piece, what its walk does not enter)
        for m in machines:
            edges = (m.finals, m.byte_edges, m.rule_edges, m.eps_edges)
            pieces[id(m)] = (m, {id(e) for e in edges})
            pieces.update((id(e), (e, ())) for e in edges)
        for i, (piece, fence) in pieces.items():
            held = self.held.get(i)
            if held is None:
                held = self.held[i] = [piece, _walk([piece], set(), fence), [0, 0, 0]]
            before = _first(held[2])
            held[2][kind] += step
            after = _first(held[2])
            if before != after:
                if before is not None:
                    self.lines[before] -= held[1]
                if after is not None:
                    self.lines[after] += held[1]
            if after is None:
                del self.held[i]


def _first(counts: list):
    return next((kind for kind, n in enumerate(counts) if n), None)


# LIMIT: after each compile the tally is kept under the compiler's limit, its vocabulary's tables
# aside (fixed for a tokenizer, shared by every compiler over it: nothing to evict). Past 90% of
# the limit, the pool, shapes and parts are halved while they hold more than a third of it, then
# least recently used grammars go (a grammar a live matcher holds lives on with the matcher; the
# compiler no longer keeps it), until the tally is under 80% of the limit. `memory_account` walks
# everything (ACCOUNT); were that ever over the limit, the same eviction runs on the walked figure.
class CacheBound:
    """The account of one compiler, kept under `limit` bytes (negative: none) at each compile,
    the vocabulary's tables aside."""

    def __init__(self, compiler):
        self.compiler = compiler
        self.lines: dict = {}
        self._walked_at = None  # `_signature()` at the last walk
        self._grammars: dict = {}  # id of a cached grammar -> (grammar, bytes when cached, its arrays' bytes then)
        self._entries, self._shapes, self._parts = _Keyed(), _Keyed(), _Keyed()
        self._machines = _Machines()
        self._witnesses: dict = {}  # id of a witness's machine set -> [entries naming it, bytes, machines, the set]
        self._grown_from = 0  # the pool's count of its entries' bytes, less their growth
        self._vocabulary = (None, set())  # (the vocabulary's tables, what they and the tokenizer hold)

    def _signature(self) -> tuple:
        """What changes when anything the account counts does (the grammars cached, whether each
        holds a parked build set, and their arrays; the pool's entries; machines and parts kept;
        the vocabulary's build buffers)."""
        c = self.compiler
        pool = (id(c.pool), c.pool.size_bytes(), c.pool.stats.entries, len(c.pool.shapes)) if c.pool is not None else ()
        return (tuple((id(g), g.mask_cache.classifier._leased is not None) for g in c._cache.values()),
                sum(array_bytes(g) for g in c._cache.values()), pool,
                len(c.parts) if c.parts is not None else 0,
                len(vocabulary_tables(c.tokenizer_info.vocab_arrays())), shared_build_bytes())

    def walk(self) -> dict:
        """The exact account, by part (ACCOUNT). A walk is taken again only when something it
        counts may have changed."""
        c = self.compiler
        if c.pool is not None:
            c.pool.settle()
        sign = self._signature()
        if not self.lines or sign != self._walked_at:
            self._walked_at = sign
            self.lines = compiler_account(c)
        return dict(self.lines)

    def _stop(self) -> set:
        """What a part's walk does not enter: the pool and the parts (their own lines), and every
        object of the tokenizer and of the vocabulary's tables (a grammar shares their arrays)."""
        c = self.compiler
        tables = vocabulary_tables(c.tokenizer_info.vocab_arrays())
        key = (tuple(id(t) for t in tables), shared_build_bytes())
        if self._vocabulary[0] != key:
            seen = tokenizer_ids(c.tokenizer_info)
            _walk(tables, seen, set())
            self._vocabulary = (key, seen)
        stop = self._vocabulary[1] | {id(c.pool), id(c.parts)}
        _walk([b for b in (g.mask_cache._classifier.leased() for g in c._cache.values()) if b is not None], stop,
              set())  # (build buffers lent to a grammar: the vocabulary's line)
        return stop

    def note(self, compiled, stop: Optional[set] = None) -> None:
        """A grammar joined the cache."""
        stop = self._stop() if stop is None else stop
        machines = compiled.fsms.fsms
        self._machines.hold(machines, GRAMMARS, 1)
        self._grammars[id(compiled)] = (compiled, _walk([compiled], {id(m) for m in machines}, stop),
                                        array_bytes(compiled), machines)

    def tally(self) -> dict:
        """The bytes of each part by TALLY: grammars, pool, shapes, parts."""
        c = self.compiler
        if c.pool is not None:
            c.pool.settle()  # (records a build owes the pool leave its grammar for the pool)
        stop = self._stop()
        cached = {id(g): g for g in c._cache.values()}
        for i in self._grammars.keys() - cached.keys():
            self._machines.hold(self._grammars.pop(i)[3], GRAMMARS, -1)
        for i in cached.keys() - self._grammars.keys():
            self.note(cached[i], stop)
        lines = {"grammars": sum(b + array_bytes(g) - a for g, b, a, _ in self._grammars.values()),
                 "pool": 0, "shapes": 0, "parts": 0}
        if c.parts is not None:
            self._parts.update(c.parts.keyed(), lambda part: held_bytes([part], stop))
            lines["parts"] = self._parts.total
        if c.pool is not None:
            self._tally_shapes(stop)
            lines["shapes"] = self._shapes.total
            lines["pool"] = self._tally_pool(stop, {id(g.fsms) for g in c._cache.values()})
        for kind, line in ((GRAMMARS, "grammars"), (WITNESSES, "pool"), (SHAPES, "shapes")):
            lines[line] += self._machines.lines[kind]
        return lines

    def _tally_shapes(self, stop: set) -> None:
        def size(value):
            return _walk([value], {id(value[0])}, stop)

        new, gone = self._shapes.update(self.compiler.pool.shapes.keyed(), size)
        for values, step in ((new, 1), (gone, -1)):
            self._machines.hold([v[0] for v in values], SHAPES, step)

    def _tally_pool(self, stop: set, cached: set) -> int:
        """The pool's line, its witnesses' machines aside (`cached`: the ids of the cached
        grammars' machine sets, whose witnesses they count)."""
        entries, nbytes, dicts = self.compiler.pool.keyed()
        new, gone = self._entries.update(entries, lambda e: _walk([e], {id(e.witness)}, stop))
        for entry in gone:
            self._grown_from -= entry.nbytes
            witness = self._witnesses[id(entry.witness[0])]
            witness[0] -= 1
            if not witness[0]:
                del self._witnesses[id(entry.witness[0])]
                self._machines.hold(witness[2], WITNESSES, -1)
        for entry in new:
            self._grown_from += entry.nbytes
            witness = self._witnesses.get(id(entry.witness[0]))
            if witness is None:
                fsms = entry.witness[0]
                machines = fsms.fsms
                self._machines.hold(machines, WITNESSES, 1)
                witness = self._witnesses[id(fsms)] = [0, _walk(list(entry.witness[:2]), {id(m) for m in machines},
                                                                stop), machines, fsms]
            witness[0] += 1
        return (self._entries.total + max(0, nbytes - self._grown_from) + dicts
                + sum(w[1] for i, w in self._witnesses.items() if i not in cached))

    def _kept(self) -> tuple:
        """How many grammars, machines, pool entries and parts the compiler keeps."""
        c = self.compiler
        return (len(c._cache), len(c.pool.shapes) if c.pool is not None else 0,
                c.pool.stats.entries if c.pool is not None else 0, len(c.parts) if c.parts is not None else 0)

    def enforce(self, limit: int, walked: bool = False) -> None:
        """Evict until the tally (`walked`: the account) is under 80% of `limit`, when it has
        passed 90% of it (LIMIT)."""
        if limit < 0:
            return
        figure = self.walk if walked else self.tally
        lines = figure()
        if sum(lines.values()) - lines.get("vocabulary", 0) <= 0.9 * limit:
            return
        c = self.compiler
        while sum(lines.values()) - lines.get("vocabulary", 0) > 0.8 * limit:
            aux = lines["pool"] + lines["shapes"] + lines["parts"]
            sizes = self._kept()
            if aux > 0 and (aux > limit // 3 or not c._cache):
                if c.pool is not None:
                    c.pool.evict_to(c.pool.size_bytes() // 2)
                    c.pool.shapes.evict_to(len(c.pool.shapes) // 2)
                if c.parts is not None:
                    c.parts.evict_to(len(c.parts) // 2)
            elif c._cache:
                average = lines["grammars"] / len(c._cache)
                excess = sum(lines.values()) - lines.get("vocabulary", 0) - 0.8 * limit
                for _ in range(max(1, min(len(c._cache), int(excess / max(average, 1)) + 1))):
                    c._cache.popitem(last=False)
            if sizes == self._kept():
                return  # nothing left to let go
            lines = figure()
