"""XGrammar-2 §3.3 (Figure 4): the cross-grammar cache, one pool of token-mask cache entries shared
by every grammar a `GrammarCompiler` compiles.

What an entry owes to what. For a scannable state s of rule A, the class of a token t
(xg2ref/mask/cache.py) is decided by one of three things:

- A's own machine and the rules it references: t is read inside A (accepted in every context),
  or t dies inside A before A could end (rejected in every context);
- A's lookahead assertion L: A may end inside t and no rest of t agrees with L (rejected);
- the grammar around A: A may end inside t and the rest is for A's parents to read
  (ACCEPT-CTX, context expansion), or stays uncertain.

The pool is keyed by what the first two depend on, A's FSM hash and s's canonical number
(xg2ref/fsm/hashing.py), and the lookahead's automaton (compared byte for byte):

    (hash(A), canonical(s), count) -> acc0: tokens read inside A; ends: tokens A may end inside
    ... and L                      -> pass[L]: the tokens of `ends` whose rest agrees with L

A lookup for state s of rule A, with lookahead L, in grammar G:

    PERFECT   the entry and pass[L] exist    |- candidates = pass[L]
    PARTIAL   the entry exists, pass[L] not  |- candidates = ends (pass[L] recorded on the way)
    MISS                                     |- candidates = every token (the entry recorded)

and then only the candidates run through the entry kernel with G's context:
accepted = acc0 ∪ accepted(candidates), uncertain = uncertain(candidates), the rest rejected.
The classes are those a fresh build gives: the tokens left out are decided by A's machine and
L, the same in both grammars. An entry found under a hash is used only once `same_structure`
has confirmed that A and the entry's rule are the same machines (a hash collision is a miss).
A perfect hit still runs G's context over pass[L]; that is G's own business (context
expansion climbs G's rules), and pass[L] is small next to the vocabulary.

Entries are kept in least-recently-used order and evicted beyond `limit_bytes` (the bytes of
their index arrays); `clear` empties the pool.
"""

from __future__ import annotations

import functools
import sys
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..fsm.build import GrammarFSMs
from ..fsm.hashing import RuleHashes, same_structure
from ..fsm.shapes import ShapeCache
from ..kernels import cross_grammar as KX
from ..lookahead import LookaheadArrays

ENTRY_OVERHEAD_BYTES = 128  # what an entry costs beyond its arrays, for the byte limit


class IndexSet:
    """A sorted set of sorted-vocabulary indices in the smallest of three forms (XGrammar §3.1's
    rule, here for the pool): the int32 list of its members, the int32 list of the indices it
    lacks, or a bitset over the sorted vocabulary (n / 8 bytes)."""

    __slots__ = ("_data", "_n", "_form", "_len")

    LIST, COMPLEMENT, BITS = 0, 1, 2

    def __init__(self, indices: np.ndarray, n: int):
        self._n, self._len = n, len(indices)
        sizes = (4 * len(indices), 4 * (n - len(indices)), (n + 7) // 8)
        self._form = int(np.argmin(sizes))
        if self._form == self.LIST:
            self._data = indices.astype(np.int32)
        else:
            mask = np.zeros(n, dtype=np.bool_)
            mask[indices] = True
            self._data = np.packbits(mask) if self._form == self.BITS else np.flatnonzero(~mask).astype(np.int32)

    def _mask(self) -> np.ndarray:
        if self._form == self.BITS:
            return np.unpackbits(self._data, count=self._n).view(np.bool_)
        mask = np.full(self._n, self._form == self.COMPLEMENT, dtype=np.bool_)
        mask[self._data] = self._form == self.LIST
        return mask

    def indices(self) -> np.ndarray:
        if self._form == self.LIST:
            return self._data
        return np.flatnonzero(self._mask()).astype(np.int32)

    def union(self, more: np.ndarray) -> np.ndarray:
        """The sorted indices of this set and of `more` (linear in n: a mask, not a sort)."""
        mask = self._mask()
        mask[more] = True
        return np.flatnonzero(mask).astype(np.int32)

    def __len__(self) -> int:
        return self._len

    @property
    def raw(self) -> np.ndarray:
        """The form the build kernel reads: int32 sorted indices (a list), else uint8
        `np.packbits` of the mask (made here for a complement)."""
        if self._form == self.COMPLEMENT:
            return np.packbits(self._mask())
        return self._data

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes)


MAX_KNOWN_RULES = 1 << 14  # rule hashes kept for the `rules_known` statistic (a compiler lives for days)


@dataclass
class PoolEntry:
    """The part of a state's entry that holds in every grammar (sorted-vocabulary indices)."""

    acc0: IndexSet
    ends: IndexSet
    passes: dict  # lookahead key -> the tokens of `ends` that agree with it (an IndexSet)
    witness: tuple  # (GrammarFSMs, RuleHashes, rule): the rule this entry was built for
    keys: list = field(default_factory=list)  # every (hash, canonical state) leading here

    @property
    def nbytes(self) -> int:
        return (ENTRY_OVERHEAD_BYTES + self.acc0.nbytes + self.ends.nbytes
                + sum(p.nbytes + len(k) for k, p in self.passes.items()))


@dataclass(frozen=True)
class PoolStats:
    """Lookups by outcome, and what the pool holds."""

    perfect: int
    partial: int
    misses: int
    collisions: int  # hash matches that `same_structure` refused
    entries: int
    bytes: int
    rules_seen: int  # hashed rules of the grammars compiled with this pool
    rules_known: int  # of those, rules whose hash an earlier grammar already had

    @property
    def hit_rate(self) -> float:
        n = self.perfect + self.partial + self.misses
        return (self.perfect + self.partial) / n if n else 0.0

    def summary(self) -> str:
        return (f"{self.perfect} perfect, {self.partial} partial, {self.misses} misses "
                f"({100 * self.hit_rate:.1f}% hits); {self.entries} entries, {self.bytes / 1024:.1f} KiB; "
                f"rules {self.rules_known}/{self.rules_seen} known")


def _under_pool_lock(method):
    """Run a method of the pool (or of a view of it) holding the pool's lock: its grammars fill
    and compile from several threads. Lock order: a grammar's cache lock, then the pool's (a
    method holding the pool's lock takes no cache lock; `settle` runs the takes unlocked)."""

    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with (self if isinstance(self, CrossGrammarCache) else self.pool).lock:
            return method(self, *args, **kwargs)

    return locked


class CrossGrammarCache:
    """The pool of one `GrammarCompiler`: shared by all its grammars, bounded by `limit_bytes`
    (negative: no bound). Every method that reads or writes it holds `lock`."""

    def __init__(self, limit_bytes: int = -1):
        self.lock = threading.RLock()
        self.limit_bytes = limit_bytes
        self._entries: "OrderedDict[tuple, PoolEntry]" = OrderedDict()  # first key -> entry
        self._alias: dict = {}  # every key -> first key
        self._bytes = 0
        self._counts = {"perfect": 0, "partial": 0, "misses": 0, "collisions": 0, "seen": 0, "known": 0}
        self._known_rules: dict = {}  # the hashes of rules seen, newest last (at most MAX_KNOWN_RULES)
        self._owed: list = []  # records of kernel-built entries not taken yet (`owed`)
        self._observers: list = []
        self.shapes = ShapeCache()  # rule machines by shape (fsm/shapes.py), for every grammar too

    @property
    def stats(self) -> PoolStats:
        self.settle()
        return self._stats()

    @_under_pool_lock
    def _stats(self) -> PoolStats:
        c = self._counts
        return PoolStats(c["perfect"], c["partial"], c["misses"], c["collisions"], len(self._entries), self._bytes,
                         c["seen"], c["known"])

    def size_bytes(self) -> int:
        self.settle()
        return self._bytes

    def clear(self) -> None:
        self.settle()
        self._clear()

    @_under_pool_lock
    def keyed(self) -> tuple[dict, int, int]:
        """(first key -> entry, a copy; the entries' bytes as `size_bytes` counts them; the
        bytes of the pool's own tables), for the compiler's memory tally (memory.py)."""
        return (dict(self._entries), self._bytes,
                sys.getsizeof(self._entries) + sys.getsizeof(self._alias) + sys.getsizeof(self._known_rules))

    @_under_pool_lock
    def _clear(self) -> None:
        self._entries.clear()
        self._alias.clear()
        self._bytes = 0
        self.shapes.clear()

    @_under_pool_lock
    def note_rules(self, hashes: RuleHashes) -> None:
        """Count the hashed rules of a new grammar, and those an earlier grammar had (the
        substructure reuse of XGrammar-2 Table 1)."""
        mine = {h for h in hashes.hashes if h is not None}
        self._counts["seen"] += len(mine)
        self._counts["known"] += len(mine & self._known_rules.keys())
        self._known_rules.update(dict.fromkeys(mine))
        if len(self._known_rules) > MAX_KNOWN_RULES:  # the statistic forgets the oldest half
            self._known_rules = dict.fromkeys(list(self._known_rules)[-MAX_KNOWN_RULES // 2:])

    def counts(self) -> dict:
        """A copy of the counters: perfect, partial, misses, collisions, seen, known."""
        self.settle()
        with self.lock:
            return dict(self._counts)

    @_under_pool_lock
    def entry(self, key: tuple) -> Optional[PoolEntry]:
        """The entry stored under `key`, or None; unlike `find`, no use is recorded."""
        first = self._alias.get(key)
        return None if first is None else self._entries.get(first)

    @_under_pool_lock
    def find(self, key: tuple) -> Optional[PoolEntry]:
        first = self._alias.get(key)
        if first is None:
            return None
        self._entries.move_to_end(first)
        return self._entries[first]

    @_under_pool_lock
    def add(self, keys: list, entry: PoolEntry) -> None:
        for key in keys:
            if key in self._alias:
                self._drop(self._alias[key])
        entry.keys = list(keys)
        self._entries[keys[0]] = entry
        for key in keys:
            self._alias[key] = keys[0]
        self._bytes += entry.nbytes
        self._evict()

    @_under_pool_lock
    def grew(self, entry: PoolEntry, before: int) -> None:
        """`entry` gained a lookahead; account for its new size."""
        self._bytes += entry.nbytes - before
        self._evict()

    def _drop(self, first: tuple) -> None:
        entry = self._entries.pop(first)
        for key in entry.keys:
            self._alias.pop(key, None)
        self._bytes -= entry.nbytes

    def _evict(self) -> None:
        if self.limit_bytes >= 0:
            self._evict_to(self.limit_bytes)

    def evict_to(self, limit_bytes: int) -> None:
        """Drop least recently used entries until the pool holds at most `limit_bytes`."""
        self.settle()
        with self.lock:
            self._evict_to(limit_bytes)

    def _evict_to(self, limit_bytes: int) -> None:
        while self._entries and self._bytes > limit_bytes:
            self._drop(next(iter(self._entries)))

    def view(self, fsms: GrammarFSMs, hashes: RuleHashes, lookahead: Optional[LookaheadArrays],
             n_sorted: int) -> "PoolView":
        """The pool as the grammar of `fsms` uses it (n_sorted: its vocabulary's regular tokens)."""
        self.settle()
        return PoolView(self, fsms, hashes, lookahead, n_sorted)

    @_under_pool_lock
    def owed(self, take) -> None:
        """`take()` moves records of entries built in a kernel into the pool: called before the
        pool is next read (`settle`), so that building never waits for the pool's bookkeeping."""
        self._owed.append(take)

    def settle(self) -> None:
        """Take every record still owed (`owed`): each `take()` holds its grammar's cache lock,
        then the pool's, so this holds neither."""
        while True:
            with self.lock:
                if not self._owed:
                    return
                take = self._owed.pop(0)
            take()

    def observe(self, callback) -> None:
        """Call `callback(view, state, count, outcome, candidates, accepted, uncertain)` on every
        entry built through the pool from now on (the teaching view `pool_lookups`)."""
        self._observers.append(callback)

    def unobserve(self, callback) -> None:
        self._observers.remove(callback)


class PoolView:
    """The pool as one grammar uses it: turns its states into pool keys and builds entries."""

    def __init__(self, pool: CrossGrammarCache, fsms: GrammarFSMs, hashes: RuleHashes,
                 lookahead: Optional[LookaheadArrays], n_sorted: int):
        self.pool, self.fsms, self.hashes, self.lookahead = pool, fsms, hashes, lookahead
        self.n_sorted = n_sorted
        self.offsets = fsms.state_offsets()
        self.state_rule = np.repeat(np.arange(len(fsms.fsms)), np.diff(self.offsets))
        self._verified: dict = {}  # (rule, serial of the witness's hashes, witness rule) -> bool
        self._la_keys: dict = {}
        # `resolve`: a hit's class -> (weak reference to the entry found, its candidates), until
        # the class is built (weak: a grammar still building keeps no entry the pool let go);
        # the seed count of every class
        self._resolved: dict = {}
        self._seeds = np.zeros(0, dtype=np.int64)

    def key(self, state: int, count: int = 0) -> Optional[tuple]:
        """(hash of the state's rule, its canonical number, seed count), None when the rule has
        no hash."""
        r = int(self.state_rule[state])
        h = self.hashes.hashes[r]
        if h is None:
            return None
        number = int(self.hashes.canonical[r][state - self.offsets[r]])
        return (h, number, count) if number >= 0 else None

    def lookahead_key(self, rule: int) -> bytes:
        """The rule's lookahead filter as bytes, states numbered breadth first (b"" for none)."""
        key = self._la_keys.get(rule)
        if key is None:
            key = self._la_keys[rule] = _filter_key(self.lookahead, rule)
        return key

    def _same(self, rule: int, entry: PoolEntry) -> bool:
        g, h, r = entry.witness
        memo = (rule, h.serial, r)
        known = self._verified.get(memo)
        if known is None:  # (by serial: the memo does not keep the witness's grammar alive)
            known = self._verified[memo] = ((g is self.fsms and r == rule)
                                            or same_structure(self.fsms, self.hashes, rule, g, h, r))
        return known

    @_under_pool_lock
    def build(self, state: int, members: np.ndarray, classifier, count: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(accepted, uncertain) sorted-vocabulary indices of `state`'s entry (shared by the
        states `members`), through the pool, classified from Python (a counted repetition's
        zones; the other entries go through the kernel: `resolve`, `take`). `count`: the seed
        count of a counted repetition's state (its zone's stand-in or one count), part of the key."""
        key = self.key(state, count)
        if key is None:
            classifier.classify(state, count=count)
            acc, unc = classifier.accepted().copy(), classifier.uncertain().copy()
            self._tell(state, count, "unhashed", self.n_sorted, len(acc), len(unc))
            return acc, unc
        rule = int(self.state_rule[state])
        la = self.lookahead_key(rule)
        entry, collided = self._lookup(key, rule)
        n = self.n_sorted
        if entry is None:  # MISS: classify everything, record what holds in every grammar
            classifier.classify(state, record=True, count=count)
            self._add_miss(key, rule, la, members, count, n, *classifier.recorded())
            acc, unc = classifier.accepted().copy(), classifier.uncertain().copy()
            self._count_and_tell(state, count, KX.POOL_COLLISION if collided else KX.POOL_MISS, n, len(acc), len(unc))
            return acc, unc
        passes = entry.passes.get(la)
        if passes is not None:  # PERFECT: only the tokens that reach the context
            classifier.classify(state, marked=passes.indices(), count=count)
            mode, candidates = KX.POOL_PERFECT, len(passes)
        else:  # PARTIAL: the tokens A may end inside, under this lookahead
            classifier.classify(state, marked=entry.ends.indices(), record=True, count=count)
            self._add_passes(entry, la, classifier.recorded()[2])
            mode, candidates = KX.POOL_PARTIAL, len(entry.ends)
        accepted = entry.acc0.union(classifier.accepted())
        unc = classifier.uncertain().copy()
        self._count_and_tell(state, count, mode, candidates, len(accepted), len(unc))
        return accepted, unc

    def _lookup(self, key: tuple, rule: int) -> tuple[Optional[PoolEntry], bool]:
        """(the entry under `key` for `rule`, or None; whether a hash match was refused)."""
        entry = self.pool.find(key)
        if entry is not None and not self._same(rule, entry):
            return None, True
        return entry, False

    def _add_miss(self, key, rule, la, members, count, n, acc0, ends, passes) -> None:
        """A new pool entry from a MISS's record (n: the sorted vocabulary's size)."""
        entry = PoolEntry(IndexSet(acc0, n), IndexSet(ends, n), {la: IndexSet(passes, n)},
                          (self.fsms, self.hashes, rule))
        keys = [k for k in (self.key(int(s), count) for s in members) if k is not None]
        self.pool.add([key] + [k for k in keys if k != key], entry)

    def _add_passes(self, entry: PoolEntry, la: bytes, passes: np.ndarray) -> None:
        before = entry.nbytes
        entry.passes[la] = IndexSet(passes, self.n_sorted)
        if entry.keys and self.pool.entry(entry.keys[0]) is entry:  # (not evicted since it was found)
            self.pool.grew(entry, before)

    def _count_and_tell(self, state, count, mode, candidates, accepted, uncertain) -> None:
        name, counters = _OUTCOMES[mode]
        for counter in counters:
            self.pool._counts[counter] += 1
        self._tell(state, count, name, candidates, accepted, uncertain)

    def _tell(self, state, count, outcome, candidates, accepted, uncertain) -> None:
        for callback in self.pool._observers:
            callback(self, state, count, outcome, candidates, accepted, uncertain)

    @_under_pool_lock
    def resolve(self, class_rep: np.ndarray, class_seed: np.ndarray, in_kernel: np.ndarray) -> KX.PoolHits:
        """Look every kernel-built class up once, before its entry is built (the kernel cannot
        read the pool): its mode, and for a hit the candidates and acc0 it carries. `take`
        settles what the builds owe."""
        n = len(class_rep)
        mode = np.zeros(n, dtype=np.int8)
        marked, acc0_kind = [np.zeros(0, np.int32)], np.zeros(n, dtype=np.int8)
        lists, bits = [np.zeros(0, np.int32)], [np.zeros(0, np.uint8)]
        spans = np.zeros((4, n), dtype=np.int64)  # marked start, end; acc0 start, end
        used = {"marked": 0, KX.ACC0_LIST: 0, KX.ACC0_BITS: 0}
        placed: dict = {}  # what is written already: (id of an entry, lookahead or None) -> span
        self._resolved, self._seeds = {}, class_seed
        for c in np.flatnonzero(in_kernel).tolist():
            s, count = int(class_rep[c]), int(class_seed[c])
            key = self.key(s, count)
            if key is None:
                mode[c] = KX.POOL_UNHASHED
                continue
            rule = int(self.state_rule[s])
            la = self.lookahead_key(rule)
            entry, collided = self._lookup(key, rule)
            if entry is None:
                mode[c] = KX.POOL_COLLISION if collided else KX.POOL_MISS
                continue
            passes = entry.passes.get(la)
            mode[c] = KX.POOL_PERFECT if passes is not None else KX.POOL_PARTIAL
            cands = passes if passes is not None else entry.ends
            self._resolved[c] = (weakref.ref(entry), len(cands))
            where = (id(entry), la if passes is not None else None)
            if where not in placed:
                marked.append(cands.indices())
                used["marked"] += len(cands)
                placed[where] = (used["marked"] - len(cands), used["marked"])
            spans[0, c], spans[1, c] = placed[where]
            data = entry.acc0.raw
            kind = acc0_kind[c] = KX.ACC0_BITS if data.dtype == np.uint8 else KX.ACC0_LIST
            if id(entry) not in placed:
                (bits if kind == KX.ACC0_BITS else lists).append(data)
                used[kind] += len(data)
                placed[id(entry)] = (used[kind] - len(data), used[kind])
            spans[2, c], spans[3, c] = placed[id(entry)]
        return KX.PoolHits(mode, spans[0], spans[1], np.concatenate(marked).astype(np.int32), acc0_kind, spans[2],
                           spans[3], np.concatenate(lists).astype(np.int32), np.concatenate(bits).astype(np.uint8))

    @_under_pool_lock
    def take(self, records: KX.PoolRecords, class_rep: np.ndarray, members_of) -> None:
        """Move the outbox of kernel-built entries into the pool (a MISS's new entry, a PARTIAL
        hit's pass[L]), count the lookups and tell the observers; empty the outbox."""
        z = records.sizes
        ev, data, n = records.event[:z[KX.R_EVENTS]], records.data, self.n_sorted
        for row in ev.tolist():
            c, mode = row[KX.EV_CLASS], row[KX.EV_MODE]
            s = int(class_rep[c])
            if mode == KX.POOL_UNHASHED:
                self._tell(s, 0, "unhashed", n, row[KX.EV_ACCEPTED], row[KX.EV_UNCERTAIN])
                continue
            count, rule = int(self._seeds[c]), int(self.state_rule[s])
            if mode in (KX.POOL_MISS, KX.POOL_COLLISION):  # (the key `resolve` looked up, made again)
                self._add_miss(self.key(s, count), rule, self.lookahead_key(rule), members_of(c), count, n,
                               data[row[KX.EV_ACC0]:row[KX.EV_ENDS]], data[row[KX.EV_ENDS]:row[KX.EV_PASS]],
                               data[row[KX.EV_PASS]:row[KX.EV_END]])
                candidates = n
            else:
                found, candidates = self._resolved.pop(c)  # (a class is built once: its lookup is done)
                if mode == KX.POOL_PARTIAL and (entry := found()) is not None:  # (else the pool let it go)
                    self._add_passes(entry, self.lookahead_key(rule), data[row[KX.EV_PASS]:row[KX.EV_END]])
            self._count_and_tell(s, count, mode, candidates, row[KX.EV_ACCEPTED], row[KX.EV_UNCERTAIN])
        z[KX.R_EVENTS] = z[KX.R_DATA] = 0


_OUTCOMES = {KX.POOL_MISS: ("miss", ("misses",)), KX.POOL_PARTIAL: ("partial", ("partial",)),
             KX.POOL_PERFECT: ("perfect", ("perfect",)), KX.POOL_COLLISION: ("collision", ("collisions", "misses"))}


def _filter_key(lookahead: Optional[LookaheadArrays], rule: int) -> bytes:
    if lookahead is None or lookahead.la_start[rule] < 0:
        return b""
    nxt, final = lookahead.la_next, lookahead.la_final
    number = {int(lookahead.la_start[rule]): 0}
    order = [int(lookahead.la_start[rule])]
    head = 0
    while head < len(order):
        row = nxt[order[head]]
        head += 1
        for t in row.tolist():  # targets numbered in byte order
            if t >= 0 and t not in number:
                number[t] = len(order)
                order.append(t)
    table = np.array([[number[t] if t >= 0 else -1 for t in nxt[q].tolist()] for q in order], dtype=np.int32)
    finals = np.array([bool(final[q]) for q in order], dtype=np.bool_)
    return table.tobytes() + finals.tobytes()
