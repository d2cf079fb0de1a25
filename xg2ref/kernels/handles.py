"""XGrammar Algorithm 1 at run time (XGrammar-2 §3.5): the per-token kernels called with one
small array per group of arrays, not with every array.

Numba unboxes each array of each argument on every call, about 30 ns apiece: the fill of a mask
takes 69 arrays (the grammar's machines, the chart, the mask-cache entries, the vocabulary, the
fill's scratch), about 2.3 µs before any work, and the accept of a token 38. A *handle* is an
int64 array of (data address, length, second length) per array of a NamedTuple; the kernel
entry rebuilds the NamedTuple as views of the same memory (`carray`), one unboxing instead of
dozens.

What keeps it safe: `handle` checks every array's dtype, rank and contiguity against the
NamedTuple's spec; a handle is kept beside the NamedTuple it was made of and used only while
the caller holds that NamedTuple (so its arrays are alive: a chart that grows, a scratch that is
refitted, entries another thread republishes each make a new NamedTuple and a new handle); the
views have the arrays' lengths, so NUMBA_BOUNDSCHECK checks them as before. Under
NUMBA_DISABLE_JIT the callers pass the NamedTuples themselves.

The grammar's machines (fsm/build.py `FSMArrays`) and the entries (mask/entries.py
`MaskCacheArrays`) are defined in modules the kernels may not import; the views here are
NamedTuples of the same fields, which the kernels read by name (tests/test_handles.py holds
the lists equal). The vocabulary is rebuilt as tokenizer_info.py's `VocabArrays` itself.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import carray, literal_unroll, njit, types
from numba.core import cgutils
from numba.core.errors import NumbaError
from numba import config
from numba.extending import intrinsic

from .. import util
from ..tokenizer_info import VocabArrays
from .chart import Chart
from .mask_fill import FillScratch, fill_mask
from .token_reads import advance_span

# the fields of fsm/build.py FSMArrays and mask/entries.py MaskCacheArrays (modules the kernels may not import)
class FSMView(NamedTuple):
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


class CacheView(NamedTuple):
    state_entry: np.ndarray
    entry_state: np.ndarray
    entry_kind: np.ndarray
    list_indptr: np.ndarray
    list_ids: np.ndarray
    bitset_offset: np.ndarray
    bitset_words: np.ndarray
    unc_indptr: np.ndarray
    unc_sorted: np.ndarray
    regular_words: np.ndarray
    counts: np.ndarray
    noexit_entry: np.ndarray
    ex_key: np.ndarray
    ex_entry: np.ndarray
    count_slack: np.ndarray
    sizes: np.ndarray
    content_key: np.ndarray
    content_entry: np.ndarray


# handles are used where kernels are compiled (under NUMBA_DISABLE_JIT there is nothing to unbox)
ENABLED = not config.DISABLE_JIT


@intrinsic
def _address(typingctx, src):
    """The int64 `src` as a pointer (`carray`'s first argument)."""
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)
    return types.voidptr(src), codegen


def handle(arrays: tuple) -> np.ndarray:
    """int64[3 * fields]: per array of NamedTuple `arrays` its address and its one or two
    lengths. Refuses an array that is not C-contiguous or of rank above 2 (the views would read
    other memory). The caller keeps `arrays` alive while a kernel uses the handle.

    Written by `write_handle` (about 2.5 µs for a chart, which a decoding loop hands over again
    whenever it grows; reading each array's address from Python costs over 1 µs an array). With
    util.VERIFY_LAYOUTS, as in the tests, it is compared with the Python reading."""
    if ENABLED:
        out = np.empty(3 * len(arrays), dtype=np.int64)
        try:
            bad = write_handle(arrays, out)
        except (TypeError, NumbaError):  # (a field that is not an array: the Python reading names it)
            bad = 0
        if bad < 0 and not util.VERIFY_LAYOUTS:
            return out
        py = _handle_py(arrays)  # (raises, naming the field it refuses)
        if bad < 0 and not np.array_equal(py, out):
            raise AssertionError(f"{type(arrays).__name__}: write_handle gave {out.tolist()}, not {py.tolist()}")
        return py
    return _handle_py(arrays)


@njit(cache=True)
def write_handle(arrays, out):
    """`handle` into `out` for a NamedTuple of arrays; returns the first field it refuses (not
    C-contiguous or of rank above 2), else -1."""
    i = 0
    for a in literal_unroll(arrays):
        if not a.flags.c_contiguous or a.ndim > 2:
            return i
        dims = a.shape + (0, 0)  # (a rank-1 array's second length is 0)
        out[3 * i] = a.ctypes.data
        out[3 * i + 1] = dims[0]
        out[3 * i + 2] = dims[1]
        i += 1
    return -1


def _handle_py(arrays: tuple) -> np.ndarray:
    out = np.zeros(3 * len(arrays), dtype=np.int64)
    for i, a in enumerate(arrays):
        if not isinstance(a, np.ndarray) or not a.flags.c_contiguous or a.ndim > 2:
            raise ValueError(f"field {arrays._fields[i]} of {type(arrays).__name__} cannot be handed over "
                             "(a C-contiguous array of rank 1 or 2 is needed)")
        out[3 * i] = a.ctypes.data
        out[3 * i + 1] = a.shape[0]
        out[3 * i + 2] = a.shape[1] if a.ndim == 2 else 0
    return out


@njit(cache=True, nogil=True)
def unpack_fsm(h):
    """The FSMArrays (as FSMView) of handle `h` (`handle`)."""
    return FSMView(
        state_rule=carray(_address(h[0]), (h[1],), np.int32),
        rule_start=carray(_address(h[3]), (h[4],), np.int32),
        is_final=carray(_address(h[6]), (h[7],), np.bool_),
        byte_indptr=carray(_address(h[9]), (h[10],), np.int32),
        byte_lo=carray(_address(h[12]), (h[13],), np.int32),
        byte_hi=carray(_address(h[15]), (h[16],), np.int32),
        byte_dst=carray(_address(h[18]), (h[19],), np.int32),
        ref_indptr=carray(_address(h[21]), (h[22],), np.int32),
        ref_rule=carray(_address(h[24]), (h[25],), np.int32),
        ref_dst=carray(_address(h[27]), (h[28],), np.int32),
        rule_nullable=carray(_address(h[30]), (h[31],), np.bool_),
        root_rule=carray(_address(h[33]), (h[34],), np.int32),
        tok_indptr=carray(_address(h[36]), (h[37],), np.int32),
        tok_set=carray(_address(h[39]), (h[40],), np.int32),
        tok_dst=carray(_address(h[42]), (h[43],), np.int32),
        rule_budget=carray(_address(h[45]), (h[46],), np.int32),
        rule_char_budget=carray(_address(h[48]), (h[49],), np.int32),
        rule_rep_lo=carray(_address(h[51]), (h[52],), np.int32),
        rule_rep_hi=carray(_address(h[54]), (h[55],), np.int32),
        rule_required=carray(_address(h[57]), (h[58],), np.int32),
        rule_member=carray(_address(h[60]), (h[61],), np.int32),
        rule_leo=carray(_address(h[63]), (h[64],), np.uint8),
    )


@njit(cache=True, nogil=True)
def unpack_chart(h):
    """The Chart of handle `h` (`handle`)."""
    return Chart(
        item_state=carray(_address(h[0]), (h[1],), np.int32),
        item_origin=carray(_address(h[3]), (h[4],), np.int32),
        item_deadline=carray(_address(h[6]), (h[7],), np.int32),
        item_char_deadline=carray(_address(h[9]), (h[10],), np.int32),
        item_count=carray(_address(h[12]), (h[13],), np.int32),
        item_leo=carray(_address(h[15]), (h[16],), np.int32),
        set_start=carray(_address(h[18]), (h[19],), np.int64),
        set_chars=carray(_address(h[21]), (h[22],), np.int32),
        tbl_key=carray(_address(h[24]), (h[25],), np.int64),
        tbl_gen=carray(_address(h[27]), (h[28],), np.int64),
        tbl_cnt=carray(_address(h[30]), (h[31],), np.int64),
        meta=carray(_address(h[33]), (h[34],), np.int64),
        pool_parent=carray(_address(h[36]), (h[37],), np.int32),
        pool_member=carray(_address(h[39]), (h[40],), np.int32),
        set_pool=carray(_address(h[42]), (h[43],), np.int64),
    )


@njit(cache=True, nogil=True)
def unpack_cache(h):
    """The MaskCacheArrays (as CacheView) of handle `h` (`handle`)."""
    return CacheView(
        state_entry=carray(_address(h[0]), (h[1],), np.int32),
        entry_state=carray(_address(h[3]), (h[4],), np.int32),
        entry_kind=carray(_address(h[6]), (h[7],), np.int8),
        list_indptr=carray(_address(h[9]), (h[10],), np.int64),
        list_ids=carray(_address(h[12]), (h[13],), np.int32),
        bitset_offset=carray(_address(h[15]), (h[16],), np.int64),
        bitset_words=carray(_address(h[18]), (h[19],), np.int32),
        unc_indptr=carray(_address(h[21]), (h[22],), np.int64),
        unc_sorted=carray(_address(h[24]), (h[25],), np.int32),
        regular_words=carray(_address(h[27]), (h[28],), np.int32),
        counts=carray(_address(h[30]), (h[31], h[32]), np.int64),
        noexit_entry=carray(_address(h[33]), (h[34],), np.int32),
        ex_key=carray(_address(h[36]), (h[37],), np.int64),
        ex_entry=carray(_address(h[39]), (h[40],), np.int32),
        count_slack=carray(_address(h[42]), (h[43],), np.int64),
        sizes=carray(_address(h[45]), (h[46],), np.int64),
        content_key=carray(_address(h[48]), (h[49],), np.int64),
        content_entry=carray(_address(h[51]), (h[52],), np.int32),
    )


@njit(cache=True, nogil=True)
def unpack_vocab(h):
    """The VocabArrays of handle `h` (`handle`)."""
    return VocabArrays(
        token_bytes=carray(_address(h[0]), (h[1],), np.uint8),
        token_offsets=carray(_address(h[3]), (h[4],), np.int64),
        sorted_ids=carray(_address(h[6]), (h[7],), np.int32),
        sorted_lcp=carray(_address(h[9]), (h[10],), np.int32),
        is_special=carray(_address(h[12]), (h[13],), np.bool_),
        is_stop=carray(_address(h[15]), (h[16],), np.bool_),
        sorted_bytes=carray(_address(h[18]), (h[19],), np.uint8),
        sorted_offsets=carray(_address(h[21]), (h[22],), np.int64),
    )


@njit(cache=True, nogil=True)
def unpack_scratch(h):
    """The FillScratch of handle `h` (`handle`)."""
    return FillScratch(
        entry_mark=carray(_address(h[0]), (h[1],), np.int64),
        or_words=carray(_address(h[3]), (h[4],), np.int32),
        cand=carray(_address(h[6]), (h[7],), np.int32),
        cand_tmp=carray(_address(h[9]), (h[10],), np.int32),
        sized=carray(_address(h[12]), (h[13],), np.int64),
    )


@njit(cache=True, nogil=True)
def advance_span_h(hf, hc, data, begin, end):
    """`token_reads.advance_span` with the machines and the chart as handles."""
    return advance_span(unpack_fsm(hf), unpack_chart(hc), data, begin, end)


@njit(cache=True, nogil=True)
def fill_mask_h(hf, hc, hk, hv, hs, not_regular, stop_ids, words):
    """`mask_fill.fill_mask` with the machines, the chart, the entries, the vocabulary and the
    scratch as handles."""
    return fill_mask(unpack_fsm(hf), unpack_chart(hc), unpack_cache(hk), unpack_vocab(hv), unpack_scratch(hs),
                     not_regular, stop_ids, words)


# ---- a batch of fills in one call (XGrammar §3.5: the masks of a batch, made while the GPU runs) ----

def row_handle(args: tuple) -> np.ndarray:
    """int64[16]: `fill_mask_h`'s arguments (five handles, then not_regular, stop_ids, words) as
    (address, length) pairs, for `fill_row_h`. The caller keeps `args` alive meanwhile."""
    out = np.zeros(16, dtype=np.int64)
    for i, (a, dtype) in enumerate(zip(args, (np.int64,) * 7 + (np.int32,))):
        if not isinstance(a, np.ndarray) or a.dtype != dtype or a.ndim != 1 or not a.flags.c_contiguous:
            raise ValueError(f"argument {i} of a fill cannot be handed over (a C-contiguous 1-D {np.dtype(dtype)} "
                             "array is needed)")
        out[2 * i], out[2 * i + 1] = a.ctypes.data, a.shape[0]
    return out


@njit(cache=True, nogil=True)
def fill_row_h(address):
    """`fill_mask_h` of the `row_handle` at `address`: (status, j, n_cand, full)."""
    h = carray(_address(address), (16,), np.int64)
    return fill_mask_h(
        carray(_address(h[0]), (h[1],), np.int64), carray(_address(h[2]), (h[3],), np.int64),
        carray(_address(h[4]), (h[5],), np.int64), carray(_address(h[6]), (h[7],), np.int64),
        carray(_address(h[8]), (h[9],), np.int64), carray(_address(h[10]), (h[11],), np.int64),
        carray(_address(h[12]), (h[13],), np.int64), carray(_address(h[14]), (h[15],), np.int32))
