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
from typing import Iterable

import numpy as np

from .mask.classifier import shared_build_bytes
from .util import vocabulary_entry

# objects no account follows: code, not data
_NOT_DATA = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
             types.CodeType, types.FrameType, types.MethodWrapperType, types.WrapperDescriptorType)


def _is_code(obj) -> bool:
    return isinstance(obj, _NOT_DATA) or type(obj).__module__.startswith("numba.")


# HELD: each object reachable from the roots once, at its own size; an array's buffer with the
# array that owns it (a view adds its header and follows its base); nothing past `stop` or code
def held_bytes(roots: Iterable, stop: set = frozenset()) -> int:
    """Bytes of every object reachable from `roots`, each counted once, not past the ids in
    `stop` (see HELD)."""
    return _walk(roots, set(stop), set())


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
    while stack:
        obj = stack.pop()
        i = id(obj)
        if i in seen or i in fence or _is_code(obj):
            continue
        seen.add(i)
        total += sys.getsizeof(obj)
        if isinstance(obj, np.ndarray):
            if obj.base is not None:
                stack.append(obj.base)
            continue
        stack.extend(gc.get_referents(obj))
    return total


def array_bytes(compiled) -> int:
    """Bytes of what a compiled grammar grows after it is compiled: its entries and the fills'
    scratch (JIT entries and fills on new threads add to them)."""
    cache = compiled.mask_cache
    return cache._store.capacity_bytes + sum(int(a.nbytes) for s in cache.scratch.held() for a in s)


# LIMIT: after each compile, the account is kept under the compiler's limit, its vocabulary's
# tables aside (fixed for a tokenizer, shared by every compiler over it: nothing to evict). A full walk costs
# about 4 ms per cached grammar, so between walks the account is estimated from above: the last
# walk, plus each new grammar walked alone (its shared machines counted again), plus what the
# pool and the grammars' arrays grew by. Past 90% of the limit, a walk gives the exact figure;
# past the limit, the pool, shapes and parts are halved while they hold more than a third of it,
# then least recently used grammars go (a grammar a live matcher holds lives on with the
# matcher; the compiler no longer keeps it), until the account is under 80% of the limit.
class CacheBound:
    """The account of one compiler, kept under `limit` bytes (negative: none) at each compile,
    the vocabulary's tables aside."""

    def __init__(self, compiler):
        self.compiler = compiler
        self.lines: dict = {}
        self.added = 0  # bytes of the grammars compiled since the last walk, each walked alone
        self._at_walk = (0, 0)  # (pool estimate, grammars' array bytes) at the last walk
        self._walked_at = None  # `_signature()` at the last walk

    def _signature(self) -> tuple:
        """What changes when anything the account counts does (the grammars cached, whether each
        holds a parked build set, and their arrays; the pool's entries; machines and parts kept;
        the vocabulary's build buffers)."""
        c = self.compiler
        pool = (id(c.pool), c.pool.size_bytes(), c.pool.stats.entries, len(c.pool.shapes)) if c.pool is not None else ()
        return (tuple((id(g), g.mask_cache.classifier._leased is not None) for g in c._cache.values()),
                self._arrays(), pool,
                len(c.parts) if c.parts is not None else 0,
                len(vocabulary_tables(c.tokenizer_info.vocab_arrays())), shared_build_bytes())

    def walk(self) -> dict:
        """The exact account, by part (ACCOUNT); the estimate starts again from it. A walk is
        taken again only when something it counts may have changed."""
        c = self.compiler
        if c.pool is not None:
            c.pool.settle()
        sign = self._signature()
        if self.lines and sign == self._walked_at:
            return dict(self.lines)
        self._walked_at = sign
        self.lines = compiler_account(c)
        self.added = 0
        self._at_walk = (c.pool.size_bytes() if c.pool is not None else 0, self._arrays())
        return dict(self.lines)

    def _arrays(self) -> int:
        return sum(array_bytes(g) for g in self.compiler._cache.values())

    def estimate(self) -> int:
        c = self.compiler
        pool = c.pool.size_bytes() if c.pool is not None else 0
        return (sum(self.lines.values()) - self.lines.get("vocabulary", 0) + self.added + max(0, pool - self._at_walk[0])
                + max(0, self._arrays() - self._at_walk[1]))

    def note(self, compiled) -> None:
        """A grammar joined the cache."""
        c = self.compiler
        stop = tokenizer_ids(c.tokenizer_info) | {id(c.pool), id(c.parts)} | {
            id(t) for t in vocabulary_tables(c.tokenizer_info.vocab_arrays())}
        self.added += held_bytes([compiled], stop)

    def _kept(self) -> tuple:
        """How many grammars, machines, pool entries and parts the compiler keeps."""
        c = self.compiler
        return (len(c._cache), len(c.pool.shapes) if c.pool is not None else 0,
                c.pool.stats.entries if c.pool is not None else 0, len(c.parts) if c.parts is not None else 0)

    def enforce(self, limit: int) -> None:
        if limit < 0 or self.estimate() <= 0.9 * limit:
            return
        c = self.compiler
        lines = self.walk()
        while sum(lines.values()) - lines["vocabulary"] > 0.8 * limit:
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
                excess = sum(lines.values()) - lines["vocabulary"] - 0.8 * limit
                for _ in range(max(1, min(len(c._cache), int(excess / max(average, 1)) + 1))):
                    c._cache.popitem(last=False)
            if sizes == self._kept():
                return  # nothing left to let go
            lines = self.walk()
