"""XGrammar §3.5 (the end of the pipeline): a token bitmask applied to the logits in place, on
the CPU (Numba) and on an NVIDIA GPU (numba.cuda).

The bitmask is xgrammar's (xg2ref/bitmask.py): token t of row r is allowed when bit t % 32 of
word bitmask[r, t // 32] is 1. Applying it sets every disallowed logit to -inf:

    r in rows, 0 <= t < vocab_size, bit t of bitmask[r] = 0   |-  logits[r, t] := -inf
    otherwise                                                   |-  logits[r, t] unchanged

Both kernels see the logits as raw integers of the float's width (int32 for float32, int16 for
float16 and bfloat16) and store the bit pattern of -inf of the float type (`NEG_INF_BITS`): one
kernel serves every dtype, and numpy, which has no bfloat16, can hold any of them. An allowed
logit is never read or written, so the kernels move the bitmask once and only the masked logits.

The GPU kernel runs one thread per (row, token): the 32 threads of a warp read one bitmask word
and write 32 adjacent logits, so reads are shared and writes coalesce. It is compiled on first
launch; with NUMBA_ENABLE_CUDASIM=1 it runs on numba's CUDA simulator over numpy arrays (tests).
"""

from __future__ import annotations

import warnings

import numpy as np
from numba import cuda, njit  # numba.cuda: CUDA simulator or device, found at launch
from numba.core.errors import NumbaPerformanceWarning

# -inf as the integer that holds its bits, per float dtype name (IEEE 754 binary32 and binary16,
# and bfloat16: the top half of binary32)
NEG_INF_BITS = {"float32": (np.int32, -0x00800000), "float16": (np.int16, -0x0400),
                "bfloat16": (np.int16, -0x0080)}

THREADS_PER_BLOCK = 256


@njit(cache=True, _nrt=False)
def apply_bitmask_rows(logits, bitmask, rows, vocab_size, neg_inf):
    """logits[r, t] = neg_inf for r in rows and t < vocab_size whose bit is 0 (module docstring).
    `logits` int32[R, V] or int16[R, V] (any strides), `bitmask` int32[R', W]."""
    words = (vocab_size + 31) // 32
    for k in range(rows.shape[0]):
        r = rows[k]
        for w in range(words):
            word = bitmask[r, w]
            if word == -1:
                continue  # all 32 allowed
            base = w * 32
            top = min(32, vocab_size - base)
            for b in range(top):
                if (word >> b) & 1 == 0:
                    logits[r, base + b] = neg_inf


@cuda.jit
def apply_bitmask_cuda(logits, bitmask, rows, vocab_size, neg_inf):
    """One thread per (row rows[blockIdx.y], token t): logits[r, t] = neg_inf when t's bit is 0.
    Compiled on first launch, for the dtypes and layouts it meets."""
    t = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if t >= vocab_size:
        return
    r = rows[cuda.blockIdx.y]
    if (bitmask[r, t >> 5] >> (t & 31)) & 1 == 0:
        logits[r, t] = neg_inf


def launch_per_token(kernel, rows, vocab_size: int, stream, *args) -> None:
    """Launch a kernel with one thread per (row, token): a block row per entry of `rows`, blocks
    of THREADS_PER_BLOCK tokens; nothing for an empty grid."""
    if vocab_size <= 0 or rows.shape[0] == 0:
        return
    blocks = ((vocab_size + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK, rows.shape[0])
    with warnings.catch_warnings():  # small batches make small grids, and numba says so each time
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        kernel[blocks, THREADS_PER_BLOCK, stream](*args)


def launch_cuda(logits, bitmask, rows, vocab_size: int, neg_inf, stream=0) -> None:
    """Run the GPU kernel: device arrays (numba's, or anything with __cuda_array_interface__;
    numpy arrays under the simulator), one block row per entry of `rows`."""
    launch_per_token(apply_bitmask_cuda, rows, vocab_size, stream, logits, bitmask, rows, vocab_size, neg_inf)
