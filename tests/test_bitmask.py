"""Token bitmasks (xg2ref.bitmask) and xgrammar.testing's bitmask helpers (xg2ref.testing)."""

import re
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from xg2ref import bitmask as B
from xg2ref import testing as T

SHAPES = [  # batch, vocab_size, shape
    (1, 0, (1, 0)), (1, 1, (1, 1)), (2, 32, (2, 1)), (2, 33, (2, 2)), (3, 128256, (3, 4008)),
    (1, 151669, (1, 4740)), (4, 201088, (4, 6284)),
]

ROW_ERRORS = [  # bitmask, index, vocab_size, message
    (np.zeros((2, 4), np.float32), 0, 128, "bitmask must have dtype int32, got float32"),
    (np.zeros((2, 4), np.uint32), 0, 128, "bitmask must have dtype int32, got uint32"),
    (np.zeros((2, 3), np.int32), 0, 128256, "bitmask has 3 int32 words per row but vocab_size 128256 needs 4008"),
    (np.zeros((2, 4), np.int32), 5, 128, "index 5 out of range for a bitmask with 2 rows"),
    (np.zeros((1, 4), np.int32), -1, 128, "index -1 out of range for a bitmask with 1 row"),
    (np.zeros(4, np.int32), 1, 128, "index 1 out of range for a 1-D bitmask (a single row: index must be 0)"),
    (np.zeros((2, 2, 4), np.int32), 0, 128,
     "bitmask must be 1-D (one row) or 2-D (batch, words), got 3-D with shape (2, 2, 4)"),
    (np.zeros((4, 2), np.int32).T, 0, 128,
     "bitmask rows must be contiguous, got a column stride of 8 bytes (4 expected)"),
    ([[0, 0]], 0, 64, "bitmask must be a numpy array or a torch tensor, got list"),
    (np.zeros((2, 4), np.int32), 0.0, 128, "index must be an integer, got float"),
]


@pytest.mark.parametrize("batch,vocab_size,shape", SHAPES)
def test_shape_and_allocation(batch, vocab_size, shape):
    assert B.get_bitmask_shape(batch, vocab_size) == shape
    bitmask = B.allocate_token_bitmask(batch, vocab_size)
    assert tuple(bitmask.shape) == shape
    assert (np.asarray(bitmask) == -1).all()


def test_allocation_is_torch_when_available():
    torch = pytest.importorskip("torch")
    bitmask = B.allocate_token_bitmask(2, 40)
    assert isinstance(bitmask, torch.Tensor) and bitmask.dtype == torch.int32 and bitmask.device.type == "cpu"
    assert B.bitmask_dtype is torch.int32


def test_allocation_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    bitmask = B.allocate_token_bitmask(2, 40)
    assert isinstance(bitmask, np.ndarray) and bitmask.dtype == np.int32 and (bitmask == -1).all()
    assert B.bitmask_dtype == np.dtype(np.int32)


def test_module_import_does_not_import_torch():
    import subprocess

    code = "import sys, xg2ref.bitmask, xg2ref.testing; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_reset():
    array = np.zeros((2, 3), np.int32)
    B.reset_token_bitmask(array)
    assert (array == -1).all()
    torch = pytest.importorskip("torch")
    tensor = torch.zeros((2, 3), dtype=torch.int32)
    B.reset_token_bitmask(tensor)
    assert (tensor == -1).all()
    with pytest.raises(ValueError, match="got list"):
        B.reset_token_bitmask([0])


@pytest.mark.parametrize("bitmask,index,vocab_size,message", ROW_ERRORS)
def test_row_view_errors(bitmask, index, vocab_size, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        B.bitmask_row_view(bitmask, index, vocab_size)


def test_row_view_read_only():
    array = np.zeros((1, 2), np.int32)
    array.flags.writeable = False
    with pytest.raises(ValueError, match="^bitmask is read-only$"):
        B.bitmask_row_view(array, 0, 64)
    assert B.bitmask_row_view(array, 0, 64, writable=False).shape == (2,)


def test_row_view_torch_errors():
    torch = pytest.importorskip("torch")
    cases = [
        (torch.zeros((1, 2), dtype=torch.int64), "bitmask must have dtype int32, got int64"),
        (torch.zeros((1, 2), dtype=torch.int32, device="meta"), "bitmask must be on the CPU, got a tensor on meta"),
        (torch.zeros((4, 2), dtype=torch.int32).T,
         "bitmask rows must be contiguous, got a column stride of 8 bytes (4 expected)"),
    ]
    for tensor, message in cases:
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            B.bitmask_row_view(tensor, 0, 64)


def test_row_view_writes_through():
    array = np.full((3, 2), -1, np.int32)
    B.bitmask_row_view(array, 1, 40)[:] = [7, 0]
    assert array.tolist() == [[-1, -1], [7, 0], [-1, -1]]
    one_row = np.zeros(2, np.int32)
    B.bitmask_row_view(one_row, 0, 64)[1] = 5
    assert one_row.tolist() == [0, 5]
    column = np.zeros((3, 4), np.int32)[:, :2]  # rows contiguous, row stride 16 bytes
    B.bitmask_row_view(column, 2, 64)[:] = 9
    assert column.tolist() == [[0, 0], [0, 0], [9, 9]]
    torch = pytest.importorskip("torch")
    tensor = torch.full((2, 2), -1, dtype=torch.int32)
    B.bitmask_row_view(tensor, 1, 64)[:] = [1, 2]
    assert tensor.tolist() == [[-1, -1], [1, 2]]
    assert B.bitmask_rows_view(one_row, 64).shape == (1, 2)


def test_pack_examples():
    mask = np.zeros(40, bool)
    mask[[0, 33]] = True
    out = np.full(3, -1, np.int32)
    B.pack_bool_mask(mask, out)
    assert out.tolist() == [1, 2, 0]  # bits past n and extra words are 0
    B.pack_bool_mask(np.ones(32, bool), out)
    assert out.tolist() == [-1, 0, 0]
    assert B.unpack_bitmask(np.array([5], np.int32), 3).tolist() == [True, False, True]
    assert B.unpack_bitmask(np.array([[1, -(2**31)]], np.int32), 64)[0, [0, 63]].tolist() == [True, True]
    with pytest.raises(ValueError, match="^bitmask has 1 int32 words per row but vocab_size 40 needs 2$"):
        B.pack_bool_mask(mask, np.zeros(1, np.int32))
    with pytest.raises(ValueError, match="^bitmask has 1 int32 words per row but vocab_size 40 needs 2$"):
        B.unpack_bitmask(np.zeros(1, np.int32), 40)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), max_size=300), st.integers(0, 2))
def test_pack_unpack_round_trip(bits, extra_words):
    mask = np.array(bits, dtype=bool)
    out = np.full((len(bits) + 31) // 32 + extra_words, 12345, np.int32)
    B.pack_bool_mask(mask, out)
    assert B.unpack_bitmask(out, len(bits)).tolist() == bits
    assert not B.unpack_bitmask(out, 32 * len(out))[len(bits):].any()
    want = [sum(1 << j for j in range(32) if 32 * w + j < len(bits) and bits[32 * w + j]) for w in range(len(out))]
    assert out.view(np.uint32).tolist() == want


# ---- xg2ref.testing ---------------------------------------------------------------------------

def test_testing_examples():
    bitmask = np.array([[0b0101_0011, -1], [0, 1 << 5]], np.int32)
    assert T._get_masked_tokens_from_bitmask(bitmask, 40, 0) == [2, 3, 5, 7] + list(range(8, 32))
    assert T.get_masked_token_ids(bitmask, 40, 1) == [i for i in range(40) if i != 37]
    assert T.get_allowed_token_ids(bitmask, 40, 0) == [0, 1, 4, 6] + list(range(32, 40))
    assert T._is_single_token_bitmask(bitmask, 40, 1) == (True, 37)
    assert T._is_single_token_bitmask(bitmask, 40, 0) == (False, -1)
    assert T._is_single_token_bitmask(np.array([0, 1 << 8], np.int32), 40) == (True, 40)  # past vocab_size
    assert T._is_single_token_bitmask(np.zeros((1, 2), np.int32), 64) == (False, -1)
    assert T.bool_mask_to_bitmask(np.array([[True, False, True]])).tolist() == [[-3]]
    assert T.bool_mask_to_bitmask(np.array([True] * 33)).tolist() == [-1, -1]
    assert T.bitmask_to_bool_mask(np.array([[5]], np.int32), 3).tolist() == [[True, False, True]]
    assert T.bitmask_to_bool_mask(np.array([5], np.int32)).shape == (32,)


def test_testing_errors():
    with pytest.raises(ValueError, match="^vocab_size 33 is larger than the 32 tokens a bitmask of 1 words holds$"):
        T.bitmask_to_bool_mask(np.zeros((1, 1), np.int32), 33)
    with pytest.raises(ValueError, match="^bitmask must have dtype int32, got int64$"):
        T.bitmask_to_bool_mask(np.zeros((1, 1), np.int64))
    with pytest.raises(ValueError, match="^bool_mask must be 1-D or 2-D, got 3-D$"):
        T.bool_mask_to_bitmask(np.zeros((1, 1, 1), bool))
    with pytest.raises(ValueError, match="^bool_mask must be a numpy array or a torch tensor, got list$"):
        T.bool_mask_to_bitmask([True])
    with pytest.raises(ValueError, match="^index 2 out of range for a bitmask with 2 rows$"):
        T._get_masked_tokens_from_bitmask(np.zeros((2, 1), np.int32), 32, 2)


def test_testing_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    bitmask = T.bool_mask_to_bitmask(torch.tensor([[True, False, True]]))
    assert isinstance(bitmask, torch.Tensor) and bitmask.dtype == torch.int32 and bitmask.tolist() == [[-3]]
    back = T.bitmask_to_bool_mask(bitmask, 3)
    assert isinstance(back, torch.Tensor) and back.tolist() == [[True, False, True]]


masks = hnp.arrays(bool, st.tuples(st.integers(1, 3), st.integers(1, 100)))


@pytest.mark.xgrammar
@settings(max_examples=60, deadline=None)
@given(masks, st.data())
def test_testing_matches_xgrammar(mask, data):
    torch = pytest.importorskip("torch")
    xt = pytest.importorskip("xgrammar.testing")
    n = mask.shape[1]
    want = xt.bool_mask_to_bitmask(torch.from_numpy(mask))
    assert torch.equal(T.bool_mask_to_bitmask(torch.from_numpy(mask)), want)
    assert np.array_equal(T.bool_mask_to_bitmask(mask), want.numpy())
    assert torch.equal(T.bitmask_to_bool_mask(want, n), xt.bitmask_to_bool_mask(want, n))
    assert torch.equal(T.bitmask_to_bool_mask(want), xt.bitmask_to_bool_mask(want))
    single = torch.zeros_like(want)
    bit = data.draw(st.integers(0, 32 * want.shape[1] - 1))
    single[0, bit // 32] = int(np.uint32(1 << bit % 32).view(np.int32))
    for i in range(mask.shape[0]):
        assert T._get_masked_tokens_from_bitmask(want, n, i) == list(xt._get_masked_tokens_from_bitmask(want, n, i))
        assert T._is_single_token_bitmask(want, n, i) == tuple(xt._is_single_token_bitmask(want, n, i))
        assert T._is_single_token_bitmask(single, n, i) == tuple(xt._is_single_token_bitmask(single, n, i))
