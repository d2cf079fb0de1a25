"""XGrammar-2 §3.4: the storage of the Earley chart that `earley.py`'s inference rules fill.

Every set since the start lives in one chart of flat arrays, an item as five int32 values
(FSM state, origin, token deadline, character deadline, count) plus its Leo memo
(`item_leo`, the top of the completion chain it starts: `earley.py`, "Leo items"). Set k holds
the items `set_start[k]:set_start[k + 1]`; a set is never changed once the next one is built,
so the chart is its own history and rolling back n bytes is lowering the set count by n
(XGrammar §3.3). A set being built is deduplicated through an open-addressing hash table whose
slots belong to the current generation (`meta[META_GEN]`); starting a set is one increment.

When a kernel runs out of room it answers NEED_ITEMS or NEED_TABLE and commits nothing; the
caller grows the chart (`grown_chart`, a copy with twice the room) and calls again, up to
MAX_CHART_ITEMS. Status codes, the meta slots and the stand-in counts are defined here and
re-exported by `earley.py`, whose docstring gives their meaning.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..exceptions import GrammarLimitError


OK = 0
EMPTY = 1
NEED_ITEMS = 2
NEED_TABLE = 3
NEED_SETS = 4  # the chart needs room for more sets (grown apart from the items: they grow at other rates)
# add_item's answer when the item is in the set already (a new end is >= 0, a NEED_* code is
# returned negated, below DUPLICATE)
DUPLICATE = -1
# _dfa_step's answer when the single-item shortcut does not apply (the general step runs)
GENERAL_STEP = -1

NO_DEADLINE = 2147483647
# stand-in counts (module docstring): FREE_BASE + n, NOEXIT_BASE + n, STRICT_BASE + n after n LOOPs
FREE_BASE = 1 << 30
NOEXIT_BASE = 1 << 29
STRICT_BASE = 1 << 28
BEFORE_FIRST_TOKEN = -1  # meta[META_TOKEN] before the first token
# chart.meta slots
META_N_SETS = 0     # the number of sets (the current set is meta[META_N_SETS] - 1)
META_GEN = 1        # the generation of the dedup table (a slot is in use iff tbl_gen[slot] == it)
META_TOKEN = 2      # index of the token being read (BEFORE_FIRST_TOKEN); PREDICT counts budgets from it
META_ENFORCE = 3    # 1: items past their deadline neither SCAN nor TOKEN
META_RAISED = 4     # set when a deadline rose during a closure (the closure runs again)
META_BUDGETS = 5    # 1: the grammar has token budgets (deadlines are tracked)
META_CHAR_BUDGETS = 6  # 1: the grammar has character budgets
META_POOL = 7       # links in the member-set pool while the current set is built (unordered rules)
META_WORK = 8       # items closed since a caller last took the count (kernels/classify.py's work meter)
# item_leo before the item's chain is asked about (earley.py, "Leo items")
LEO_UNKNOWN = -1


class Chart(NamedTuple):
    """The Earley chart: every set since the start, in flat arrays.

    item_state : int32[capacity]   FSM state of each item
    item_origin : int32[capacity]  origin (byte position) of each item
    item_deadline : int32[capacity]  last token index the item's derivation may read (token budgets)
    item_char_deadline : int32[capacity]  code points its derivation may have read in all (character budgets)
    item_count : int32[capacity]   passes completed by a counted repetition's item (0 for others)
    item_leo : int32[capacity]     the item's Leo memo (earley.py, "Leo items"): the index of the
                                   top waiter of its completion chain, LEO_UNKNOWN before it is asked
    set_start : int64[max_sets+1]  set k holds items set_start[k] : set_start[k+1]
    set_chars : int32[max_sets+1]  code points (UTF-8 lead bytes) among the bytes before set k
    tbl_key : int64[T]             dedup table of the set being built (T a power of two)
    tbl_gen : int64[T]             slot is in use iff tbl_gen[slot] == meta[META_GEN]
    tbl_cnt : int64[T]             the count of the item in the slot
    meta : int64[8]                the META_* slots above
    pool_parent : int32[P]         member-set pool: set n is set pool_parent[n] plus member
    pool_member : int32[P]           pool_member[n] // 2 (required when odd); 0 is the empty set
    set_pool : int64[max_sets+1]   links in the pool once set k is built
    """

    item_state: np.ndarray
    item_origin: np.ndarray
    item_deadline: np.ndarray
    item_char_deadline: np.ndarray
    item_count: np.ndarray
    item_leo: np.ndarray
    set_start: np.ndarray
    set_chars: np.ndarray
    tbl_key: np.ndarray
    tbl_gen: np.ndarray
    tbl_cnt: np.ndarray
    meta: np.ndarray
    pool_parent: np.ndarray
    pool_member: np.ndarray
    set_pool: np.ndarray


def new_chart(item_capacity: int = 4096, max_sets: int = 1024, table_size: int = 1024) -> Chart:
    """An empty chart (no sets yet; call `init_chart`)."""
    return Chart(
        item_state=np.zeros(item_capacity, dtype=np.int32),
        item_origin=np.zeros(item_capacity, dtype=np.int32),
        item_deadline=np.full(item_capacity, NO_DEADLINE, dtype=np.int32),
        item_char_deadline=np.full(item_capacity, NO_DEADLINE, dtype=np.int32),
        item_count=np.zeros(item_capacity, dtype=np.int32),
        item_leo=np.full(item_capacity, LEO_UNKNOWN, dtype=np.int32),
        set_start=np.zeros(max_sets + 1, dtype=np.int64),
        set_chars=np.zeros(max_sets + 1, dtype=np.int32),
        tbl_key=np.zeros(table_size, dtype=np.int64),
        tbl_gen=np.zeros(table_size, dtype=np.int64),
        tbl_cnt=np.zeros(table_size, dtype=np.int64),
        meta=np.zeros(9, dtype=np.int64),
        pool_parent=np.zeros(item_capacity, dtype=np.int32),
        pool_member=np.zeros(item_capacity, dtype=np.int32),
        set_pool=np.ones(max_sets + 1, dtype=np.int64),
    )


# A chart never grows past this many items (about 20 bytes each) or dedup-table slots (24
# bytes each): a parse that needs more raises GrammarLimitError instead of taking the machine's
# memory (the grammar's ambiguity or an input far longer than any generation).
MAX_CHART_ITEMS = 1 << 25


def grown_chart(c: Chart, status: int) -> Chart:
    """A copy of chart `c` with room for what a kernel's NEED_TABLE / NEED_ITEMS / NEED_SETS
    asked for: twice the table slots, the items (with the member-set pool) or the sets. Items
    and sets grow apart, so neither keeps more than twice the room it uses."""
    if status == NEED_SETS:
        sets = len(c.set_start) * 2
        if sets > MAX_CHART_ITEMS:
            raise GrammarLimitError(f"the Earley chart needs more than {MAX_CHART_ITEMS:,} sets (MAX_CHART_ITEMS)")
        return c._replace(set_start=_grown(c.set_start, sets, 0), set_chars=_grown(c.set_chars, sets, 0),
                          set_pool=_grown(c.set_pool, sets, 1))
    needed = len(c.tbl_key) * 4 if status == NEED_TABLE else len(c.item_state) * 2
    if needed > MAX_CHART_ITEMS:
        raise GrammarLimitError(f"the Earley chart needs more than {MAX_CHART_ITEMS:,} "
                                f"{'dedup-table slots' if status == NEED_TABLE else 'items'} (MAX_CHART_ITEMS)")
    if status == NEED_TABLE:
        return c._replace(tbl_key=np.zeros(needed, np.int64), tbl_gen=np.zeros(needed, np.int64),
                          tbl_cnt=np.zeros(needed, np.int64))
    if status != NEED_ITEMS:
        raise AssertionError(f"unexpected kernel status {status}")
    return c._replace(item_state=_grown(c.item_state, needed, 0), item_origin=_grown(c.item_origin, needed, 0),
                      item_deadline=_grown(c.item_deadline, needed, NO_DEADLINE),
                      item_char_deadline=_grown(c.item_char_deadline, needed, NO_DEADLINE),
                      item_count=_grown(c.item_count, needed, 0), item_leo=_grown(c.item_leo, needed, LEO_UNKNOWN),
                      pool_parent=_grown(c.pool_parent, needed, 0), pool_member=_grown(c.pool_member, needed, 0))


def _grown(a: np.ndarray, size: int, fill: int) -> np.ndarray:
    """`a` copied into a new array of `size`, the rest `fill`."""
    out = np.full(size, fill, a.dtype)
    out[:len(a)] = a
    return out


@njit(cache=True, _nrt=False)
def add_item(chart, set_begin, end, state, origin, deadline, char_deadline, count):
    """Append (state, origin, count) with `deadline` to the set being built (items set_begin:end)
    unless present; a present item keeps the larger deadline (and meta[META_RAISED] notes a rise).

    The chart's dedup table: a slot is in use iff its tbl_gen equals meta[META_GEN]. Returns the
    new end, DUPLICATE when the item was already there, -NEED_ITEMS or -NEED_TABLE.
    """
    tbl_key = chart.tbl_key
    tbl_gen = chart.tbl_gen
    tbl_cnt = chart.tbl_cnt
    gen = chart.meta[META_GEN]
    item_state = chart.item_state
    item_origin = chart.item_origin
    item_deadline = chart.item_deadline
    item_char_deadline = chart.item_char_deadline
    item_count = chart.item_count
    meta = chart.meta
    mask = tbl_key.shape[0] - 1
    if (end - set_begin) * 2 >= mask:
        return -NEED_TABLE
    key = (np.int64(state) << 32) | np.int64(origin)
    # state < 2^22, origin and count < 2^31: the sum stays below 2^48 (no overflow, in Numba or numpy)
    x = np.int64(state) * 0x9E37 + np.int64(origin) * 0x85EB + np.int64(count) * 0xC2B3
    h = (x ^ (x >> 15)) & mask
    while tbl_gen[h] == gen:
        if tbl_key[h] == key and tbl_cnt[h] == count:
            if meta[META_BUDGETS] != 0 or meta[META_CHAR_BUDGETS] != 0:
                for q in range(set_begin, end):
                    if item_state[q] == state and item_origin[q] == origin and item_count[q] == count:
                        if deadline > item_deadline[q]:
                            item_deadline[q] = deadline
                            meta[META_RAISED] = 1
                        if char_deadline > item_char_deadline[q]:
                            item_char_deadline[q] = char_deadline
                            meta[META_RAISED] = 1
                        break
            return DUPLICATE
        h = (h + 1) & mask
    if end >= item_state.shape[0]:
        return -NEED_ITEMS
    tbl_gen[h] = gen
    tbl_key[h] = key
    tbl_cnt[h] = count
    item_count[end] = count
    chart.item_leo[end] = LEO_UNKNOWN
    item_state[end] = state
    item_origin[end] = origin
    item_deadline[end] = deadline
    item_char_deadline[end] = char_deadline
    return end + 1
