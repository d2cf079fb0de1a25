"""The masks of a batch filled on several cores while the batch is still being made ready
(XGrammar §3.5: the CPU fills a batch's masks while the GPU runs the model; XGrammar-2 §3.5
keeps the per-token loops in compiled code).

A batch fill has two kinds of work: making each row ready (Python: its matcher's bound fill,
the row's scratch, the handle of its arguments, about 2 µs a row) and filling it (the kernel,
without the GIL, from 2 µs for a row whose entries decide every token to 60 µs for one with a
hundred uncertain tokens). Cut into shares that each thread makes ready and then fills, the
threads hand the GIL to one another at every share, and each hand-over waits for a sleeping
thread to wake. CLAIMED ROWS avoids both:

    one thread (the preparer) makes the rows ready in order, publishing each as it is ready
    (`publish`: the row's handle, then the count of rows ready, an atomic store);
    every thread, the preparer too once it is done, claims rows one at a time (an atomic
    fetch-and-add on a shared counter) and fills each claimed row as soon as it is ready,
    all in one kernel call without the GIL (`fill_claimed_rows`).

So the other threads fill rows while the preparer still makes the later ones ready, the Python
of a batch runs on one thread only, and a costly row holds one thread while the others take the
rest (a row at a time: no share is left to one slow thread). A thread that finds no row ready
waits by spinning, a bounded number of turns, then returns the row it holds to its caller
(`STILL_WAITING`), which sleeps briefly and calls again: a preparer that stops for long (a
kernel compiled on first use) does not keep a core busy. A preparer that fails closes the
batch (`close`): every claimer returns, and rows not filled keep status NOT_FILLED.

A row whose handle is 0 is skipped (NOT_FILLED): its matcher is filled another way.
"""

from __future__ import annotations

from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .handles import fill_row_h

# ctl: int64[CTL], shared by the threads of one batch
TAKEN = 0  # rows claimed
FRONT = 1  # rows claimed from the front (the lowest rows)
BACK = 2  # rows claimed from the back
READY = 3  # rows made ready (their handles written)
CLOSED = 4  # nonzero: the preparer failed, claimers leave
CTL = 5
DONE = -1  # `fill_claimed_rows`: every row is claimed
NOT_FILLED = -100  # out[r, 0] of a row not filled (skipped, or its batch closed)
SPINS = 1 << 14  # turns a claimer waits for its row before returning it (0.1-1 ms)


def _atomic(op: str, doc: str):
    """An intrinsic `f(ctl, index, value)` doing LLVM's atomic `op` on ctl[index] with value,
    sequentially consistent (what a thread wrote before is seen by a thread that reads what it
    wrote); it returns the value before."""
    def typed(typingctx, ctl, index, value):
        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
            return builder.atomic_rmw(op, ptr, args[2], "seq_cst")
        return types.int64(ctl, index, value), codegen

    typed.__doc__ = doc
    return intrinsic(typed)


_fetch_add = _atomic("add", "ctl[index] += value atomically; returns the value before.")
_exchange = _atomic("xchg", "ctl[index] = value atomically; returns the value before.")


@njit(cache=True)  # (keeps the GIL: released, a claimer waiting for it would take it at every row)
def publish(rows, ctl, r, address):
    """Row r is ready: its handle's address written, then rows 0..r counted ready."""
    rows[r] = address
    _exchange(ctl, READY, r + 1)


@njit(cache=True)
def close(ctl):
    """The preparer failed: claimers leave."""
    _exchange(ctl, CLOSED, 1)


@njit(cache=True, nogil=True)
def fill_claimed_rows(rows, out, ctl, held, from_back):
    """Claim rows and fill each as it is ready (module docstring) until none is left (DONE), the
    batch is closed (DONE), or a claimed row stayed unready for SPINS turns: that row is returned
    and the caller calls again with it as `held` (else held = -1). A claimer takes the lowest
    row left, or with `from_back` the highest (the preparer, which claims once every row is
    ready: each thread's rows are then one run, the memory it writes one span). out[r] gets
    the kernel's (status, j, n_cand, full)."""
    n = rows.shape[0]
    r = held
    while True:
        if r < 0:
            if _fetch_add(ctl, TAKEN, 1) >= n:  # (front and back claims together never pass n)
                return DONE
            r = n - 1 - _fetch_add(ctl, BACK, 1) if from_back else _fetch_add(ctl, FRONT, 1)
        spins = 0
        while _fetch_add(ctl, READY, 0) <= r:
            if _fetch_add(ctl, CLOSED, 0) != 0:
                return DONE
            spins += 1
            if spins >= SPINS:
                return r
        if rows[r] != 0:
            status, j, n_cand, full = fill_row_h(rows[r])
            out[r, 0], out[r, 1], out[r, 2], out[r, 3] = status, j, n_cand, full
        r = -1
