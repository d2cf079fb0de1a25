"""XGrammar-2 §3.4 and Appendix D: the Earley parser that drives masks, readable layer.

`EarleyParser` owns a chart (`xg2ref/kernels/earley.py`, where the predict / scan /
complete rules are written above the code that performs them) and grows its flat arrays
when a kernel asks for room. It gives the operations the matcher needs: advance over
bytes (all or nothing), roll back bytes exactly (XGrammar §3.3: the chart is its own
history), test completion, list the bytes that may come next, and fill a token mask.

Items print as dotted rules for people. A minimized FSM state is not a position inside the
rule's text, so an item is shown by the shortest path of symbols that reaches its state,
a dot, and the symbols that may follow:

    array ::= "[" ws value • ( "," | "]" )          @3
    value ::= • ( "{" | "[" | "\\"" | <number> | ... ) @5

(`@3` is the origin: the byte position where this rule's match began).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .exceptions import GrammarLimitError
from .fsm.build import TOKEN_SYMBOL_BASE, FSMArrays, GrammarFSMs
from .fsm.fsm import format_byte_range
from .kernels import earley as K
from .kernels import handles as H
from .kernels import token_reads as T
from .util import bound_kernel


@dataclass(frozen=True, slots=True)
class Item:
    """An Earley item: global FSM `state` of rule `rule`, match begun at byte `origin`."""

    rule: int
    state: int
    local_state: int
    origin: int


class ItemPrinter:
    """Turns items into dotted-rule strings (see the module docstring)."""

    def __init__(self, fsms: GrammarFSMs):
        self.fsms = fsms
        self._paths = [self._shortest_paths(r) for r in range(len(fsms.fsms))]

    def _symbol(self, edge) -> str:
        if edge[0] == "byte" and edge[1] >= TOKEN_SYMBOL_BASE:
            return str(self.fsms.token_sets[edge[1] - TOKEN_SYMBOL_BASE])
        if edge[0] == "byte":
            lo, hi = edge[1], edge[2]
            if lo == hi and 0x20 <= lo < 0x7F and lo not in (0x22, 0x5C):
                return f'"{chr(lo)}"'
            return format_byte_range(lo, hi)
        return self.fsms.rule_names[edge[1]]

    def _shortest_paths(self, rule: int) -> dict[int, list]:
        fsm = self.fsms.fsms[rule]
        bytes_out, rules_out, _ = fsm.out_edges()
        paths = {fsm.start: []}
        queue = deque([fsm.start])
        while queue:
            s = queue.popleft()
            nxt = [(("byte", lo, hi), d) for lo, hi, d in bytes_out[s]] + [(("rule", r), d) for r, d in rules_out[s]]
            for edge, d in nxt:
                if d not in paths:
                    paths[d] = paths[s] + [edge]
                    queue.append(d)
        return paths

    def _join(self, edges: list) -> str:
        parts: list[str] = []
        for e in edges:
            sym = self._symbol(e)
            if parts and sym.startswith('"') and parts[-1].startswith('"') and len(sym) == 3:
                parts[-1] = parts[-1][:-1] + sym[1:]
            else:
                parts.append(sym)
        return " ".join(parts)

    def format(self, item: Item) -> str:
        fsm = self.fsms.fsms[item.rule]
        bytes_out, rules_out, _ = fsm.out_edges()
        before = self._join(self._paths[item.rule].get(item.local_state, []))
        after = [self._symbol(("byte", lo, hi)) for lo, hi, _ in bytes_out[item.local_state]]
        after += [self.fsms.rule_names[r] for r, _ in rules_out[item.local_state]]
        if item.local_state in fsm.finals:
            after.append("<end>")
        nxt = after[0] if len(after) == 1 else "( " + " | ".join(after) + " )"
        lhs = f"{self.fsms.rule_names[item.rule]} ::= "
        return f"{lhs}{before + ' ' if before else ''}• {nxt}  @{item.origin}"


# A parser's chart starts small and doubles as its parse needs (kernels/chart.py `grown_chart`):
# a server keeps a chart per live request, most of which hold a few hundred items; at the
# kernels' default sizes each would take about 200 KB before reading a byte.
PARSER_CHART = dict(item_capacity=256, max_sets=64, table_size=64)


class EarleyParser:
    """An Earley recognizer over a grammar's FSM arrays, with exact byte-level rollback."""

    def __init__(self, fsms: GrammarFSMs, arrays: Optional[FSMArrays] = None):
        self.fsms = fsms
        self.arrays = arrays if arrays is not None else fsms.to_arrays()
        self._global_to_local = fsms.state_offsets()
        self.chart = K.new_chart(**PARSER_CHART)
        self._advance_bytes = None  # advance_bytes' compiled entry, bound on first use (util.bound_kernel)
        self._advance_span = None  # ... and advance_span's
        # handles of the NamedTuples the per-token kernels read (kernels/handles.py)
        self._handle_fsm: Optional[np.ndarray] = None
        self._handle_chart = self._hc = None
        self._held: tuple = (None, None, None)  # the entries, vocabulary and scratch of _held_handles
        self._held_handles: tuple = ()
        self.fill_memo: Optional[list] = None  # the mask fill's bound entry and arguments (mask/cache.py)
        self.reset()

    # ---- chart management ---------------------------------------------------------------

    def grow(self, status: int) -> None:
        """Room in the chart for what a kernel's NEED_TABLE / NEED_ITEMS asked for
        (kernels/earley.py `grown_chart`)."""
        self.chart = K.grown_chart(self.chart, status)

    def reset(self) -> None:
        """Back to set 0 (nothing read).

        When the root rule's language is empty (it is unproductive, e.g. `root ::= root`), set 0
        is emptied too: no string, not even the empty one, is then a viable prefix.
        """
        while (status := K.init_chart(self.arrays, self.chart)) != K.OK:
            self.grow(status)
        if not self.fsms.productive[self.fsms.root]:
            self.chart.set_start[1] = self.chart.set_start[0]

    def copy(self) -> "EarleyParser":
        """An independent parser in the same state (for `GrammarMatcher.fork`)."""
        other = object.__new__(EarleyParser)
        other.fsms, other.arrays, other._global_to_local = self.fsms, self.arrays, self._global_to_local
        other._advance_bytes, other._advance_span = self._advance_bytes, self._advance_span
        other._handle_fsm, other._handle_chart, other._hc = self._handle_fsm, None, None
        other._held, other._held_handles, other.fill_memo = (None, None, None), (), None
        other.chart = K.Chart(*(a.copy() for a in self.chart))
        return other

    def __getstate__(self) -> dict:
        """A copy (`copy.deepcopy`, pickle) keeps no handle: a handle holds the addresses of the
        original's arrays, and the copy's are elsewhere (nor the bound entries, made again)."""
        state = self.__dict__.copy()
        state.update(_handle_fsm=None, _handle_chart=None, _hc=None, _held=(None, None, None), _held_handles=(),
                     fill_memo=None, _advance_bytes=None, _advance_span=None)
        return state

    @property
    def position(self) -> int:
        """Number of bytes read (the index of the current Earley set)."""
        return int(self.chart.meta[K.META_N_SETS]) - 1

    # ---- the operations -----------------------------------------------------------------

    def advance(self, data: bytes) -> bool:
        """Read `data`; all or nothing: on rejection nothing is consumed and False returned."""
        return self.read(np.frombuffer(bytearray(data), dtype=np.uint8))  # (writable, as `read` is bound)

    def read(self, buf: np.ndarray) -> bool:
        """`advance` over a uint8 array (a token's bytes in the vocabulary's arrays: no copy)."""
        chart = self.chart
        start = chart.meta[K.META_N_SETS]
        if chart.set_start[start] == chart.set_start[start - 1]:
            return False  # the current set is empty: only an empty language gets here
        if self._advance_bytes is None:  # the dispatcher would type the two NamedTuples on every call
            self._advance_bytes = bound_kernel(T.advance_bytes, self.arrays, self.chart, buf)
        done = 0
        while done < len(buf):
            status, n = self._advance_bytes(self.arrays, self.chart, buf[done:])
            done += n
            if status == K.OK:
                break
            if status == K.EMPTY:
                self.chart.meta[K.META_N_SETS] = start
                return False
            try:
                self.grow(status)
            except GrammarLimitError:  # all or nothing: the sets read so far are dropped
                self.chart.meta[K.META_N_SETS] = start
                raise
        return True

    def handles(self) -> tuple:
        """(machines, chart) as handles (kernels/handles.py), the chart's made again when it has
        grown; the parser holds both NamedTuples while it holds their handles."""
        chart = self.chart
        if self._handle_chart is not chart:
            if self._handle_fsm is None:
                self._handle_fsm = H.handle(self.arrays)
            self._handle_chart, self._hc = chart, H.handle(chart)
        return self._handle_fsm, self._hc

    def fill_handles(self, entries: tuple, vocab: tuple, scratch: tuple) -> tuple:
        """The handles (kernels/handles.py) of the machines, the chart, the mask cache's `entries`,
        the `vocab` and a fill's `scratch`, each made again when its NamedTuple is not the one
        it was made of; the parser holds those NamedTuples while it holds their handles."""
        held = self._held
        if held[0] is not entries or held[1] is not vocab or held[2] is not scratch:
            self._held = (entries, vocab, scratch)
            self._held_handles = (H.handle(entries), H.handle(vocab), H.handle(scratch))
        return self.handles() + self._held_handles

    def read_span(self, data: np.ndarray, begin: int, end: int) -> bool:
        """`read` of data[begin:end] (a token in the vocabulary's bytes), without a slice."""
        entry = self._advance_span
        if entry is None:
            entry = self._advance_span = (bound_kernel(H.advance_span_h, *self.handles(), data, begin, end)
                                          if H.ENABLED else
                                          bound_kernel(T.advance_span, self.arrays, self.chart, data, begin, end))
        done = 0
        while True:
            if H.ENABLED:  # (the parser holds the chart whose handle the kernel reads)
                if self._handle_chart is not self.chart:
                    self.handles()
                status, n = entry(self._handle_fsm, self._hc, data, begin + done, end)
            else:
                status, n = entry(self.arrays, self.chart, data, begin + done, end)
            if status == K.OK:
                return True
            done += n
            if status == K.EMPTY:
                self.chart.meta[K.META_N_SETS] -= done
                return False
            try:
                self.grow(status)
            except GrammarLimitError:  # all or nothing: the sets read so far are dropped
                self.chart.meta[K.META_N_SETS] -= done
                raise

    def advance_token(self, data: bytes, member: np.ndarray) -> bool:
        """Read one whole token: its bytes, and at the same time every token edge of the
        current set whose token set holds it (`member[g]`: the token is in set g). All or
        nothing, like `advance`. The token's sets end at the same position either way, so
        `rollback(len(data))` undoes it."""
        if not len(self.fsms.token_sets) or not member.any():
            return self.advance(data)
        k0 = self.position
        items = T.new_token_items(16)
        n = T.token_successors(self.arrays, self.chart, member, items)
        if n > len(items.state):
            items = T.new_token_items(n)
            T.token_successors(self.arrays, self.chart, member, items)
        if n == 0:
            return self.advance(data)
        fresh = not self.advance(data)
        nchars = sum(1 for b in data if b & 0xC0 != 0x80)
        while (status := T.join_token_items(self.arrays, self.chart, k0, len(data), nchars, items, n, fresh)) != K.OK:
            self.grow(status)
        return True

    # ---- token budgets (kernels/earley.py docstring) ------------------------------------

    def set_token_index(self, index: int, enforce: bool) -> None:
        """The index of the token about to be read (PREDICT counts budgets from it), and whether
        items past their deadline may still read."""
        self.chart.meta[K.META_TOKEN] = index
        self.chart.meta[K.META_ENFORCE] = int(enforce)

    def budget_state(self) -> tuple[bool, bool]:
        """(some scannable item of the current set is past its deadline, some is not), for the
        token index set last."""
        a, c, k = self.arrays, self.chart, self.position
        lo, hi = c.set_start[k], c.set_start[k + 1]
        states = c.item_state[lo:hi]
        scannable = (a.byte_indptr[states + 1] > a.byte_indptr[states]) | (a.tok_indptr[states + 1] > a.tok_indptr[states])
        expired = c.item_deadline[lo:hi] < c.meta[K.META_TOKEN]
        return bool((scannable & expired).any()), bool((scannable & ~expired).any())

    def _live_states(self, whole_token: bool = False) -> np.ndarray:
        """FSM states of the current set's items that may read (all unless budgets are enforced);
        with `whole_token`, that may read a token through a token edge (TOKEN in
        kernels/token_reads.py: not past a character budget that CHAR-ENFORCE holds to)."""
        c, k = self.chart, self.position
        items = slice(c.set_start[k], c.set_start[k + 1])
        live = np.ones(items.stop - items.start, dtype=np.bool_)
        if c.meta[K.META_ENFORCE]:
            live &= c.item_deadline[items] >= c.meta[K.META_TOKEN]
        if whole_token and c.meta[K.META_CHAR_BUDGETS] and K.char_enforced(self.arrays, c, k):
            live &= c.item_char_deadline[items] > c.set_chars[k]
        return c.item_state[items][live]

    def token_sets_here(self) -> np.ndarray:
        """Indices of the token sets that some token edge of the current set reads."""
        a = self.arrays
        states = self._live_states(whole_token=True)
        starts, ends = a.tok_indptr[states], a.tok_indptr[states + 1]
        if not (ends > starts).any():
            return np.zeros(0, np.int32)
        return np.unique(np.concatenate([a.tok_set[b:e] for b, e in zip(starts, ends) if e > b]))

    def single_forced_byte(self) -> Optional[int]:
        """The byte when every byte edge of the current set is that same single byte, else None
        (jump-forward, xg2ref/matcher.py)."""
        a = self.arrays
        forced = None
        if len(self.token_sets_here()):
            return None
        for s in self._live_states():
            for e in range(a.byte_indptr[s], a.byte_indptr[s + 1]):
                lo, hi = int(a.byte_lo[e]), int(a.byte_hi[e])
                if lo != hi or (forced is not None and forced != lo):
                    return None
                forced = lo
        return forced

    def rollback(self, num_bytes: int) -> None:
        """Forget the last `num_bytes` bytes (exact: earlier sets are untouched)."""
        if not 0 <= num_bytes <= self.position:
            raise ValueError(f"cannot roll back {num_bytes} bytes: only {self.position} have been read")
        self.chart.meta[K.META_N_SETS] -= num_bytes

    def is_completed(self) -> bool:
        """The bytes read so far form a sentence of the root rule."""
        return bool(K.is_completed(self.arrays, self.chart))

    def next_bytes(self) -> np.ndarray:
        """bool[256]: bytes that keep the input a viable prefix."""
        out = np.zeros(256, dtype=np.bool_)
        T.next_byte_set(self.arrays, self.chart, out)
        return out

    def fill_mask(self, token_bytes, token_offsets, sorted_ids, sorted_lcp, out: np.ndarray) -> None:
        """out[t] = token t's bytes keep the input a viable prefix, for t in `sorted_ids`."""
        j = 0
        while True:
            status, j = T.fill_token_mask(self.arrays, self.chart, token_bytes, token_offsets,
                                          sorted_ids, sorted_lcp, j, out)
            if status == K.OK:
                return
            self.grow(status)

    # ---- for people ---------------------------------------------------------------------

    def items(self, k: Optional[int] = None) -> list[Item]:
        """Items of set k (default: the current set)."""
        k = self.position if k is None else k
        c = self.chart
        out = []
        for p in range(int(c.set_start[k]), int(c.set_start[k + 1])):
            s = int(c.item_state[p])
            rule = int(self.arrays.state_rule[s])
            out.append(Item(rule, s, s - int(self._global_to_local[rule]), int(c.item_origin[p])))
        return out

    def format_set(self, k: Optional[int] = None, printer: Optional[ItemPrinter] = None) -> str:
        printer = printer or ItemPrinter(self.fsms)
        return "\n".join(printer.format(it) for it in self.items(k))
