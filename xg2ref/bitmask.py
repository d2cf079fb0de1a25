"""xgrammar's token bitmask: int32 words, bit 1 = allowed, least significant bit first.

Token t of row r lives in bit ``t % 32`` of word ``bitmask[r, t // 32]``; a row has
``ceil(vocab_size / 32)`` words (XGrammar §3.5 applies the mask to the logits from this
layout). This module allocates and validates bitmasks and converts them to and from numpy
boolean masks. Bits past vocab_size in the last word are 0 after a fill, as in xgrammar.

The matcher writes through `bitmask_row_view`, which accepts a numpy array or a CPU torch
tensor; torch is imported only inside `allocate_token_bitmask` and when `bitmask_dtype` is
read, never when this module is imported.

Departure from xgrammar: a row may have *more* words than vocab_size needs (xgrammar's
`fill_next_token_bitmask` demands exactly ceil(vocab_size / 32)); the extra words are zeroed.
Applying a bitmask to logits is `apply_token_bitmask_inplace` (xg2ref/apply_mask.py).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = ["get_bitmask_shape", "allocate_token_bitmask", "reset_token_bitmask", "bitmask_row_view",
           "bitmask_rows_view", "pack_bool_mask", "unpack_bitmask", "bitmask_dtype"]

_FULL_WORD = -1  # all 32 tokens allowed


def __getattr__(name: str) -> Any:
    """`bitmask_dtype`: torch.int32 when torch is installed (as xgrammar), else numpy's int32."""
    if name == "bitmask_dtype":
        try:
            import torch
        except ImportError:
            return np.dtype(np.int32)
        return torch.int32
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_bitmask_shape(batch_size: int, vocab_size: int) -> tuple[int, int]:
    """(batch_size, ceil(vocab_size / 32)).

    Example: get_bitmask_shape(2, 128256) == (2, 4008)
    """
    return (int(batch_size), (int(vocab_size) + 31) // 32)


def allocate_token_bitmask(batch_size: int, vocab_size: int):
    """A bitmask with every token allowed: int32[batch_size, ceil(vocab_size / 32)] filled with -1.

    A CPU torch tensor when torch is importable (as xgrammar), else a numpy array.
    """
    shape = get_bitmask_shape(batch_size, vocab_size)
    try:
        import torch
    except ImportError:
        return np.full(shape, _FULL_WORD, dtype=np.int32)
    return torch.full(shape, _FULL_WORD, dtype=torch.int32)


def reset_token_bitmask(bitmask) -> None:
    """Allow every token again: fill with -1 (numpy array or torch tensor, any device)."""
    if isinstance(bitmask, np.ndarray):
        bitmask.fill(_FULL_WORD)
    elif _is_torch_tensor(bitmask):
        bitmask.fill_(_FULL_WORD)
    else:
        raise ValueError(f"bitmask must be a numpy array or a torch tensor, got {type(bitmask).__name__}")


def _is_torch_tensor(x: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _as_numpy(bitmask, writable: bool = True) -> np.ndarray:
    """The bitmask as an int32 numpy array sharing its memory, or ValueError."""
    if _is_torch_tensor(bitmask):
        if bitmask.device.type != "cpu":
            raise ValueError(f"bitmask must be on the CPU, got a tensor on {bitmask.device}")
        if str(bitmask.dtype) != "torch.int32":
            raise ValueError(f"bitmask must have dtype int32, got {str(bitmask.dtype).replace('torch.', '')}")
        array = bitmask.detach().numpy()
    elif isinstance(bitmask, np.ndarray):
        array = bitmask
        if array.dtype != np.int32:
            raise ValueError(f"bitmask must have dtype int32, got {array.dtype}")
    else:
        raise ValueError(f"bitmask must be a numpy array or a torch tensor, got {type(bitmask).__name__}")
    if writable and not array.flags.writeable:
        raise ValueError("bitmask is read-only")
    if array.ndim not in (1, 2):
        raise ValueError(f"bitmask must be 1-D (one row) or 2-D (batch, words), got {array.ndim}-D "
                         f"with shape {tuple(array.shape)}")
    if array.shape[-1] > 1 and array.strides[-1] != 4:
        raise ValueError(f"bitmask rows must be contiguous, got a column stride of {array.strides[-1]} "
                         "bytes (4 expected)")
    return array


def _check_width(array: np.ndarray, vocab_size: int) -> None:
    need = (vocab_size + 31) // 32
    if array.shape[-1] < need:
        raise ValueError(f"bitmask has {array.shape[-1]} int32 words per row but vocab_size "
                         f"{vocab_size} needs {need}")


def bitmask_row_view(bitmask, index: int, vocab_size: int, *, writable: bool = True) -> np.ndarray:
    """An int32[words] numpy view of row `index` of a numpy or CPU torch bitmask.

    `bitmask` is int32[batch, words] or int32[words] (one row: index must be 0), with
    words >= ceil(vocab_size / 32) and contiguous rows. Writing to the view writes the bitmask
    (`writable=False` also accepts a read-only array). Raises ValueError naming what is wrong.
    """
    array = _as_numpy(bitmask, writable)
    _check_width(array, vocab_size)
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise ValueError(f"index must be an integer, got {type(index).__name__}")
    if array.ndim == 1:
        if index != 0:
            raise ValueError(f"index {index} out of range for a 1-D bitmask (a single row: index must be 0)")
        return array
    rows = array.shape[0]
    if not 0 <= index < rows:
        raise ValueError(f"index {index} out of range for a bitmask with {rows} row{'s' if rows != 1 else ''}")
    return array[index]


def bitmask_rows_view(bitmask, vocab_size: int) -> np.ndarray:
    """A writable int32[batch, words] numpy view of a whole bitmask (a 1-D one as one row)."""
    array = _as_numpy(bitmask)
    _check_width(array, vocab_size)
    return array.reshape(1, -1) if array.ndim == 1 else array


def pack_bool_mask(mask: np.ndarray, out: np.ndarray) -> None:
    """Write bool[n] `mask` into int32[words] `out` (bit 1 = allowed); bits past n become 0.

    Example: m = np.zeros(40, bool); m[[0, 33]] = True; pack_bool_mask(m, w) gives w = [1, 2]
    """
    n = mask.shape[0]
    words = out.shape[0]
    if words * 32 < n:
        raise ValueError(f"bitmask has {words} int32 words per row but vocab_size {n} needs {(n + 31) // 32}")
    packed = np.packbits(mask.astype(np.bool_, copy=False), bitorder="little")
    raw = np.zeros(words * 4, dtype=np.uint8)
    raw[:packed.shape[0]] = packed
    out[:] = raw.view("<i4")


def unpack_bitmask(words: np.ndarray, vocab_size: int) -> np.ndarray:
    """The allowed tokens of int32[..., words] as bool[..., vocab_size] (1-D or 2-D input).

    Example: unpack_bitmask(np.array([5], np.int32), 3).tolist() == [True, False, True]
    """
    words = np.ascontiguousarray(words, dtype="<i4")
    if words.shape[-1] * 32 < vocab_size:
        raise ValueError(f"bitmask has {words.shape[-1]} int32 words per row but vocab_size "
                         f"{vocab_size} needs {(vocab_size + 31) // 32}")
    bits = np.unpackbits(words.view(np.uint8), axis=-1, bitorder="little")
    return bits[..., :vocab_size].astype(np.bool_)
