"""Handles (kernels/handles.py): the per-token kernels read the grammar's machines, the chart, the
mask-cache entries, the vocabulary and a fill's scratch through one int64 array each, views of
the same memory, with the same answers."""

import numpy as np
import pytest

import xg2ref as xgr
from xg2ref.fsm.build import FSMArrays
from xg2ref.kernels import handles as H
from xg2ref.kernels import mask_fill as MF
from xg2ref.mask.entries import MaskCacheArrays


def test_the_views_have_the_fields_of_the_namedtuples_they_stand_for():
    assert H.FSMView._fields == FSMArrays._fields
    assert H.CacheView._fields == MaskCacheArrays._fields


def test_a_handle_holds_each_arrays_address_and_lengths_and_refuses_what_a_view_cannot_read():
    a, b = np.arange(5, dtype=np.int32), np.zeros((4, 3), dtype=np.int64)
    h = H.handle(MF.FillScratch(b[:, 0].copy(), a, a, a, np.zeros(1, np.int64)))
    assert h.dtype == np.int64 and len(h) == 15
    assert h[3] == a.ctypes.data and h[4] == 5 and h[5] == 0
    with pytest.raises(ValueError, match="cand"):
        H.handle(MF.FillScratch(a, a, b[:, 0], a, a))  # a column: not contiguous
    with pytest.raises(ValueError, match="entry_mark"):
        H.handle(MF.FillScratch(np.zeros((2, 2, 2)), a, a, a, a))


@pytest.mark.jit_only
def test_fills_and_accepts_through_handles_equal_the_plain_kernels():
    """Along a walk on a real vocabulary: every mask from the handle kernel equals the plain
    kernel's over the same NamedTuples, and the chart grows under the handles (a new handle per
    new chart) without a difference."""
    from xg2ref.util import bound_kernel

    info = xgr.TokenizerInfo.from_quicktok("llama3")
    compiled = xgr.GrammarCompiler(info).compile_builtin_json_grammar()
    matcher = xgr.GrammarMatcher(compiled)
    parser, cache = matcher._parser, compiled.mask_cache
    text = '{"a": [1, 2.5, "x\\u00e9y", {"b": null}], "c": [' + ", ".join(["[true, false]"] * 300) + "]}"
    charts = set()
    for step, token in enumerate(_encode(text)):
        matcher.compute_bool_mask()  # (builds what the state needs)
        plain, handed = np.zeros_like(matcher._words), np.zeros_like(matcher._words)
        args = (parser.arrays, parser.chart, cache._store.kernel_arrays, cache.vocab, cache.scratch.take(),
                matcher._not_regular, matcher._stop_array)
        bound_kernel(MF.fill_mask, *args, plain)(*args, plain)
        hargs = parser.fill_handles(*args[2:5]) + args[5:]
        bound_kernel(H.fill_mask_h, *hargs, handed)(*hargs, handed)
        assert np.array_equal(plain, handed), step
        assert matcher.accept_token(token), step
        charts.add(id(parser.chart))
    assert len(charts) > 1  # the chart grew on the way
    assert matcher.is_terminated() is False and matcher.accept_token(info.stop_token_ids[0])


def _encode(text: str) -> list:
    from xg2ref.tools.diff.checks import quicktok_encoder

    return quicktok_encoder("llama3")(text.encode())


def test_a_deep_copy_of_a_parser_reads_its_own_chart():
    """A copied parser keeps no handle of the original's arrays: reading on in the copy leaves
    the original as it was."""
    import copy

    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo([b"a"])).compile_grammar('root ::= "[" [0-9]* "]"')
    parser = xgr.GrammarMatcher(compiled)._parser
    data = np.frombuffer(b"[12", dtype=np.uint8)
    assert parser.read_span(data, 0, 3)
    twin = copy.deepcopy(parser)
    assert twin._hc is None and twin.read_span(np.frombuffer(b"3]", dtype=np.uint8), 0, 2) and twin.is_completed()
    assert parser.position == 3 and not parser.is_completed() and twin.position == 5
