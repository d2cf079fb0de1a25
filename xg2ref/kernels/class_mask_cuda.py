"""The class mask gathered and applied to GPU logits in one kernel (CFGzip §3.1's gather, fused
with the logits mask of XGrammar §3.5; numba.cuda).

An engine run over token classes (xg2ref/token_classes/) fills a bitmask over classes, one row
per sequence. Expanding it to a token bitmask and then masking the logits would write and read a
V-bit row in between; the fused kernel reads the class bit of each token directly:

    r in rows, 0 <= t < vocab_size, c = class_of[t],
    c >= n_classes or bit c of class_words[r] = 0      |-  logits[r, t] := -inf
    otherwise                                          |-  logits[r, t] unchanged

(a class at or past `n_classes` is the class of tokens never allowed). As in kernels/apply_bitmask.py
the logits are seen as raw integers of the float's width and -inf is stored as its bit pattern
(`apply_bitmask.NEG_INF_BITS`), so one kernel serves float32, float16 and bfloat16. One thread
per (row, token): a warp reads 32 adjacent entries of `class_of` and writes 32 adjacent logits,
so both coalesce; the class words are few and stay in cache. Compiled on first launch; with
NUMBA_ENABLE_CUDASIM=1 it runs on numba's CUDA simulator over numpy arrays (tests). The CPU
expansion is kernels/class_mask.py.
"""

from __future__ import annotations

from numba import cuda  # numba.cuda: CUDA simulator or device, found at launch

from .apply_bitmask import launch_per_token


@cuda.jit
def apply_class_mask_cuda(logits, class_words, class_of, n_classes, rows, vocab_size, neg_inf):
    """One thread per (row rows[blockIdx.y], token t): logits[r, t] = neg_inf unless t's class
    is allowed in class_words[r] (module docstring)."""
    t = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if t >= vocab_size:
        return
    r = rows[cuda.blockIdx.y]
    c = class_of[t]
    if c >= n_classes or (class_words[r, c >> 5] >> (c & 31)) & 1 == 0:
        logits[r, t] = neg_inf


def launch_class_mask_cuda(logits, class_words, class_of, n_classes: int, rows, vocab_size: int, neg_inf,
                           stream=0) -> None:
    """Run the fused kernel: device arrays (numba's, or anything with __cuda_array_interface__;
    numpy arrays under the simulator), one block row per entry of `rows`."""
    launch_per_token(apply_class_mask_cuda, rows, vocab_size, stream, logits, class_words, class_of, n_classes, rows,
                     vocab_size, neg_inf)
