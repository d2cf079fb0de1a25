"""XGrammar §3.5: the token bitmask reaches the logits. `apply_token_bitmask_inplace` has
xgrammar's signature and semantics and three of its backends:

    cuda          a numba.cuda kernel (xg2ref/kernels/apply_bitmask.py) over torch CUDA tensors,
                  through __cuda_array_interface__, on torch's current stream
    cpu           the same rule as a Numba CPU kernel, over numpy arrays or CPU torch tensors
    torch_native  plain torch operations, on any device torch has
    auto          cuda for CUDA tensors, cpu on the CPU, torch_native elsewhere

The rows masked are all of them (logits and bitmask must then have as many rows), or those in
`indices` (each below both row counts). The tokens masked are those below `vocab_size`, by
default min(logits width, 32 x bitmask words); a bitmask narrower than the logits then leaves
the trailing logits alone, with a warning as in xgrammar. A 1-D logits or bitmask is one row.

Inputs are checked before any write, and each problem raises `BitmaskError` (a ValueError, and
a RuntimeError as xgrammar's C++ checks raise) with a message that names it; xgrammar's own
messages are kept where its Python layer raises them.

The cuda backend compiles its kernel with numba.cuda, which needs the CUDA toolkit's NVVM (a
conda `cudatoolkit`, `CUDA_HOME`, or the `numba-cuda[cu12]` package); torch's wheels do not
carry it. Where it is missing, `auto` falls back to torch_native with one warning, and an
explicit `cuda` raises BitmaskError saying so.
Left out: xgrammar's triton and torch_compile backends (named: a clear BitmaskError).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Optional

import numpy as np

from .bitmask import _is_torch_tensor as _is_tensor
from .exceptions import BitmaskError
from .kernels.apply_bitmask import NEG_INF_BITS, apply_bitmask_rows, launch_cuda

BACKENDS = ("auto", "cpu", "cuda", "torch_native")


def _torch():
    return sys.modules.get("torch")


def _device(x: Any) -> str:
    return str(x.device) if _is_tensor(x) else "cpu"


def _dtype_name(x: Any) -> str:
    return str(x.dtype).replace("torch.", "")


def _rows(logits_rows: int, mask_rows: int, indices) -> np.ndarray:
    """The rows to mask, checked (module docstring)."""
    if indices is None:
        if logits_rows != mask_rows:
            raise BitmaskError(f"without indices, logits and bitmask need the same number of rows, got "
                             f"{logits_rows} and {mask_rows}")
        return np.arange(logits_rows, dtype=np.int32)
    values = indices.tolist() if hasattr(indices, "tolist") else list(indices)
    bound = min(logits_rows, mask_rows)
    for k, i in enumerate(values):
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise BitmaskError(f"indices must be integers, got {type(i).__name__} at position {k}")
        if not 0 <= i < bound:
            raise BitmaskError(f"index {i} is out of bounds: indices must be in [0, {bound}) for {logits_rows} "
                             f"logits rows and {mask_rows} bitmask rows")
    if len(set(values)) != len(values):
        raise BitmaskError("indices must be unique")
    return np.asarray(values, dtype=np.int32).reshape(-1)


def _vocab_size(vocab_size: Optional[int], width: int, words: int) -> int:
    covered = words * 32
    if vocab_size is None:
        if covered < width:
            warnings.warn(f"The bitmask covers only {covered} tokens but logits have {width}, so "
                          f"logits[..., {covered}:] are left unmasked. Allocate the bitmask with the full "
                          "vocab size, or pass vocab_size explicitly.", stacklevel=5)  # the caller of apply_token_bitmask_inplace
        return min(width, covered)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)) or vocab_size < 0:
        raise BitmaskError(f"vocab_size must be a non-negative integer, got {vocab_size!r}")
    if vocab_size > width or vocab_size > covered:
        raise BitmaskError(f"vocab_size {vocab_size} is larger than the logits ({width} per row) or the bitmask "
                         f"covers ({covered} tokens per row)")
    return int(vocab_size)


def _as_rows(x):
    return x.reshape(1, -1) if x.ndim == 1 else x


def _checked(logits, bitmask, indices, vocab_size) -> tuple:
    """What every backend checks once its containers and devices are right: (logits and
    bitmask as rows, the rows to mask, the tokens to mask)."""
    if _dtype_name(bitmask) != "int32":
        raise BitmaskError("bitmask must be of type int32")
    if logits.ndim not in (1, 2):
        raise BitmaskError("logits should be 1D or 2D, but got {}D".format(logits.ndim))
    if bitmask.ndim not in (1, 2):
        raise BitmaskError("bitmask should be 1D or 2D, but got {}D".format(bitmask.ndim))
    if _dtype_name(logits) not in NEG_INF_BITS:
        raise BitmaskError("logits must be of type float32 or bfloat16/float16")
    view, mask = _as_rows(logits), _as_rows(bitmask)
    rows = _rows(view.shape[0], mask.shape[0], indices)
    return view, mask, rows, _vocab_size(vocab_size, view.shape[1], mask.shape[1])


def apply_token_bitmask_inplace(logits, bitmask, *, vocab_size: Optional[int] = None, indices=None,
                                backend: str = "auto") -> None:
    """Set logits[r, t] to -inf for every token t the bitmask disallows in row r (module
    docstring). `logits`: float32, float16 or bfloat16, [batch, width] or [width]; `bitmask`:
    int32 [batch', words] or [words]."""
    if backend in ("triton", "torch_compile"):
        raise BitmaskError(f"backend {backend!r} is one of xgrammar's that xg2ref leaves out; use one of "
                         + ", ".join(BACKENDS))
    if backend not in BACKENDS:
        raise BitmaskError(f"Unknown backend: {backend}. The value should be one of them: "
                         + "[" + ", ".join(f'"{b}"' for b in BACKENDS) + "]")
    if _is_tensor(logits) and _is_tensor(bitmask) and bitmask.device != logits.device:
        raise BitmaskError("logits and bitmask should be on the same device. "
                         + f"But got logits.device: {logits.device}, bitmask.device: {bitmask.device}")
    auto = backend == "auto"
    if auto:
        device = _device(logits).split(":")[0]
        backend = "cpu" if device == "cpu" else "cuda" if device == "cuda" else "torch_native"
    if backend == "cpu":
        _apply_cpu(logits, bitmask, vocab_size, indices)
    elif backend == "cuda":
        _apply_cuda(logits, bitmask, vocab_size, indices, fallback=auto)
    else:
        _apply_torch(logits, bitmask, vocab_size, indices)


def _int_view(logits):
    """(checked logits as raw integers of their width, the bits of -inf)."""
    int_type, bits = NEG_INF_BITS[_dtype_name(logits)]
    if _is_tensor(logits):
        torch = _torch()
        return logits.detach().view(torch.int32 if int_type is np.int32 else torch.int16), int_type(bits)
    return logits.view(int_type), int_type(bits)


def _apply_cpu(logits, bitmask, vocab_size, indices) -> None:
    for name, x in (("logits", logits), ("bitmask", bitmask)):
        if not (isinstance(x, np.ndarray) or _is_tensor(x)):
            raise BitmaskError(f"{name} must be a numpy array or a torch tensor, got {type(x).__name__}")
        if _device(x) != "cpu":
            raise BitmaskError(f"{name} must be on CPU")
    view, mask, rows, n = _checked(logits, bitmask, indices, vocab_size)
    if isinstance(logits, np.ndarray) and not logits.flags.writeable:
        raise BitmaskError("logits is read-only")
    raw, neg_inf = _int_view(view)
    apply_bitmask_rows(raw.numpy() if _is_tensor(raw) else raw, mask.detach().numpy() if _is_tensor(mask) else mask,
                       rows, n, neg_inf)


_CUDA_MISSING: list = []  # why numba.cuda cannot compile here, once found out


def _cuda_support_errors() -> tuple:
    from numba.cuda.cudadrv.error import CudaSupportError, NvvmError, NvvmSupportError

    return CudaSupportError, NvvmError, NvvmSupportError, ImportError, OSError


def _apply_cuda(logits, bitmask, vocab_size, indices, fallback: bool = False) -> None:
    torch = _torch()
    for name, x in (("logits", logits), ("bitmask", bitmask)):
        if not _is_tensor(x) or x.device.type != "cuda":
            raise BitmaskError(f"{name} must be a torch tensor on a CUDA device for the cuda backend")
    view, mask, rows, n = _checked(logits, bitmask, indices, vocab_size)
    if _CUDA_MISSING and fallback:
        return _mask_with_torch(view, mask, rows, n)
    from numba import cuda

    raw, neg_inf = _int_view(view)
    device_rows = torch.as_tensor(rows, device=logits.device)
    try:
        with cuda.gpus[logits.device.index or 0]:
            stream = cuda.external_stream(torch.cuda.current_stream(logits.device).cuda_stream)
            launch_cuda(cuda.as_cuda_array(raw), cuda.as_cuda_array(mask.detach()), cuda.as_cuda_array(device_rows),
                        n, neg_inf, stream)
    except _cuda_support_errors() as err:
        why = f"{type(err).__name__}: {err}".strip()
        if not fallback:
            raise BitmaskError(f"the cuda backend cannot compile its kernel here ({why}); numba.cuda needs the CUDA "
                               "toolkit's NVVM (install numba-cuda[cu12], or set CUDA_HOME)") from None
        if not _CUDA_MISSING:
            warnings.warn(f"numba.cuda cannot compile here ({why}); applying bitmasks with torch_native instead",
                          stacklevel=3)
            _CUDA_MISSING.append(why)
        _mask_with_torch(view, mask, rows, n)


def _apply_torch(logits, bitmask, vocab_size, indices) -> None:
    if not (_is_tensor(logits) and _is_tensor(bitmask)):
        raise BitmaskError("the torch_native backend needs torch tensors")
    _mask_with_torch(*_checked(logits, bitmask, indices, vocab_size))


def _mask_with_torch(view, mask, rows: np.ndarray, n: int) -> None:
    """The torch_native backend on checked rows: unpack the words with shifts, fill, write back."""
    torch = _torch()
    if n == 0 or len(rows) == 0:
        return
    words = (n + 31) // 32
    index = torch.as_tensor(rows, device=view.device, dtype=torch.long)
    shifts = torch.arange(32, device=view.device, dtype=torch.int32)
    bits = (mask.index_select(0, index)[:, :words].unsqueeze(-1) >> shifts) & 1
    disallowed = (bits == 0).reshape(len(rows), words * 32)[:, :n]
    with torch.no_grad():
        view[index, :n] = view[index, :n].masked_fill(disallowed, float("-inf"))


# ---- xgrammar 0.2.8's per-backend entry points (imported by its users from xgrammar.kernels.*;
# xg2ref.kernels.apply_token_bitmask_inplace_* re-export these) ----------------------------------

def apply_token_bitmask_inplace_cpu(logits, bitmask, vocab_size: Optional[int] = None, indices=None) -> None:
    """The cpu backend (CPU tensors or numpy arrays)."""
    apply_token_bitmask_inplace(logits, bitmask, vocab_size=vocab_size, indices=indices, backend="cpu")


def apply_token_bitmask_inplace_cuda(logits, bitmask, indices=None) -> None:
    """The cuda backend (the numba.cuda kernel), over the whole width of the bitmask."""
    apply_token_bitmask_inplace(logits, bitmask, indices=indices, backend="cuda")


def apply_token_bitmask_inplace_triton(logits, bitmask, vocab_size: Optional[int] = None, indices=None) -> None:
    """xgrammar's Triton entry point; here the numba.cuda kernel does the same work (torch_native
    where numba.cuda cannot compile, as `auto` does)."""
    apply_token_bitmask_inplace(logits, bitmask, vocab_size=vocab_size, indices=indices, backend="auto")


def apply_token_bitmask_inplace_torch_compile(logits, bitmask, vocab_size: Optional[int] = None,
                                              indices=None) -> None:
    """xgrammar's torch.compile entry point; here plain torch operations (torch_native)."""
    apply_token_bitmask_inplace(logits, bitmask, vocab_size=vocab_size, indices=indices, backend="torch_native")


def apply_token_bitmask_inplace_torch(logits, bitmask, vocab_size: Optional[int] = None, indices=None) -> None:
    """Plain torch operations on any device (torch_native)."""
    apply_token_bitmask_inplace(logits, bitmask, vocab_size=vocab_size, indices=indices, backend="torch_native")
