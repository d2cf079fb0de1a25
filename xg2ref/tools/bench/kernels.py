"""`xg2ref bench kernels`: applying a bitmask to logits (XGrammar §3.5), beside xgrammar 0.2.8's
own `apply_token_bitmask_inplace`, for batch 1/16/128 and vocabularies of 128k and 200k tokens.

Correctness first: on each shape every backend's logits must equal those of a numpy reference
(the same random logits and bitmask; about 90% of tokens disallowed, as in a JSON mask), and
xgrammar's too. Then each backend is timed on the same tensors:

    on a CUDA device   xg2ref cuda (numba.cuda), xg2ref torch_native, xgrammar triton and cuda;
                       CUDA events around many launches; the memory-bandwidth bound is the
                       bytes the operation must move (the bitmask read, the logits read and
                       written) over the bandwidth of a device-to-device copy measured here
    on the CPU         xg2ref cpu (Numba) and torch_native beside xgrammar cpu (C++) and
                       torch_native; one thread

Without a CUDA device the GPU rows are left open and the table says so.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

BATCHES = (1, 16, 128)
VOCABS = (128_256, 200_064)
ALLOWED = 0.1  # share of tokens a mask allows


def _inputs(torch, batch: int, vocab: int, device: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    allowed = rng.random((batch, vocab)) < ALLOWED
    words = (vocab + 31) // 32
    packed = np.zeros((batch, words * 32), dtype=np.bool_)
    packed[:, :vocab] = allowed
    bitmask = np.packbits(packed, axis=-1, bitorder="little").view("<i4").reshape(batch, words)
    logits = rng.normal(size=(batch, vocab)).astype(np.float32)
    want = np.where(allowed, logits, -np.inf).astype(np.float32)
    return (torch.from_numpy(logits).to(device), torch.from_numpy(bitmask.copy()).to(device), want)


def _time_cpu(fn: Callable[[], None], repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e6


def _time_cuda(torch, fn: Callable[[], None], repeats: int) -> float:
    fn()
    torch.cuda.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(repeats):
        fn()
    end.record()
    torch.cuda.synchronize()
    return begin.elapsed_time(end) * 1e3 / repeats  # microseconds per call


def _copy_bandwidth(torch) -> float:
    """Bytes per second of a device-to-device copy of 1 GiB (read and write counted)."""
    src = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    us = _time_cuda(torch, lambda: dst.copy_(src), 20)
    return 2 * src.numel() * 4 / (us * 1e-6)


def bench_kernels(out: Callable[[str], None] = print, batches=BATCHES, vocabs=VOCABS, repeats: int = 50) -> int:
    try:
        import torch
    except ImportError:
        out("bench kernels needs torch (pip install 'torch==2.13.0')")
        return 2
    from ...apply_mask import apply_token_bitmask_inplace

    try:
        import xgrammar as xgr
    except ImportError:
        xgr = None
    torch.set_num_threads(1)
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    ours = {"xg2ref " + b: (lambda b: lambda L, B: apply_token_bitmask_inplace(L, B, backend=b))(b)
            for b in (("cuda", "torch_native") if cuda else ("cpu", "torch_native"))}
    theirs = {}
    if xgr is not None:
        for b in (("triton", "cuda") if cuda else ("cpu", "torch_native")):
            theirs["xgrammar " + b] = (lambda b: lambda L, B: xgr.apply_token_bitmask_inplace(L, B, backend=b))(b)
    bandwidth = _copy_bandwidth(torch) if cuda else None
    names = list(ours) + list(theirs)
    head = f"{'batch':>5} {'vocab':>7}  " + "  ".join(f"{n + ' us':>22}" for n in names)
    if cuda:
        head += f"  {'bound us':>9}  {'ours/bound':>10}  {'ours/best xgr':>13}"
    out(f"device: {torch.cuda.get_device_name() if cuda else 'CPU, one thread (no CUDA device: GPU rows left open)'}")
    out(head)
    out("-" * len(head))
    failed = 0
    for batch in batches:
        for vocab in vocabs:
            logits, bitmask, want = _inputs(torch, batch, vocab, device)
            times = {}
            for name, fn in {**ours, **theirs}.items():
                trial = logits.clone()
                try:
                    fn(trial, bitmask)
                except Exception as err:  # a backend xgrammar cannot run here: shown, not timed
                    times[name] = f"error: {type(err).__name__}"
                    continue
                if not np.array_equal(trial.cpu().numpy(), want):
                    times[name] = "WRONG"
                    failed += 1
                    continue
                work = logits.clone()
                times[name] = (_time_cuda(torch, lambda: fn(work, bitmask), repeats) if cuda
                               else _time_cpu(lambda: fn(work, bitmask), max(repeats // 5, 3)))
            cells = [f"{t:>22.1f}" if isinstance(t, float) else f"{t:>22}" for t in (times[n] for n in names)]
            line = f"{batch:>5} {vocab:>7}  " + "  ".join(cells)
            if cuda:
                bound = (2 * logits.numel() * 4 + bitmask.numel() * 4) / bandwidth * 1e6
                mine = times[names[0]]
                best = min((t for n, t in times.items() if n in theirs and isinstance(t, float)), default=None)
                line += f"  {bound:>9.1f}  {mine / bound if isinstance(mine, float) else float('nan'):>10.2f}"
                line += f"  {mine / best if best and isinstance(mine, float) else float('nan'):>13.2f}"
            out(line)
    out("(times: best of repeated calls in microseconds; every backend's logits checked against a numpy "
        "reference first)" if not cuda else
        f"(CUDA events, mean of {repeats} launches; bound: bitmask read + logits read and written at the "
        f"copy bandwidth measured here, {bandwidth / 1e9:.0f} GB/s)")
    return 1 if failed else 0
