"""A batch of matchers stepped together (XGrammar §3.5: the masks of a batch are made on the CPU
while the GPU runs the model; xgrammar's `BatchGrammarMatcher`).

Each method is the per-matcher method applied row by row, so a batch gives exactly the results
of one matcher per row:

    batch_fill_next_token_bitmask(ms, mask, idx)  =  ms[k].fill_next_token_bitmask(mask, idx[k])
    batch_accept_token(ms, tokens)                =  [ms[k].accept_token(tokens[k])]
    batch_accept_string(ms, strings)              =  [ms[k].accept_string(strings[k])]
    batch_rollback(ms, n)                         =  ms[k].rollback(n[k])
    batch_fill_temperature(ms, temps, idx)        :  temps[idx[k]] = ms[k].temperature (-1 for None)

The rows run one after the other in this thread: `max_threads` is accepted for xgrammar's
signature. Sizes, indices and terminated matchers are checked before any row moves; a problem
raises `BitmaskError` (a ValueError, and a RuntimeError as xgrammar's C++ raises). Where
xgrammar 0.2.8 writes the temperatures before an out-of-range index and then raises, xg2ref
raises before writing any.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np

from .exceptions import BitmaskError
from .matcher import GrammarMatcher


def _check_matchers(matchers) -> list:
    matchers = list(matchers)
    for k, m in enumerate(matchers):
        if not isinstance(m, GrammarMatcher):
            raise TypeError(f"matchers[{k}] is a {type(m).__name__}, not a GrammarMatcher")
    return matchers


def _same_size(matchers: list, values: list, name: str) -> None:
    if len(matchers) != len(values):
        raise BitmaskError(f"The size of matchers ({len(matchers)}) and {name} ({len(values)}) should be the same.")


class BatchGrammarMatcher:
    """Fill, accept and roll back many matchers in one call (module docstring)."""

    def __init__(self, max_threads: Union[int, str] = "auto") -> None:
        if max_threads != "auto" and (isinstance(max_threads, bool) or not isinstance(max_threads, int)
                                      or max_threads < 1):
            raise BitmaskError(f'max_threads must be a positive integer or "auto", got {max_threads!r}')
        self.max_threads = max_threads

    def batch_fill_next_token_bitmask(self, matchers: list, bitmask, indices: Optional[list] = None,
                                      debug_print: bool = False) -> None:
        """Row indices[k] (k by default) of `bitmask` gets the mask of matchers[k]."""
        matchers = _check_matchers(matchers)
        shape = tuple(bitmask.shape)
        if len(shape) != 2:
            raise BitmaskError(f"bitmask must be 2-D (batch, words), got shape {shape}")
        if indices is None:
            if len(matchers) > shape[0]:
                raise BitmaskError(f"{len(matchers)} matchers but the bitmask has {shape[0]} "
                                   f"row{'s' if shape[0] != 1 else ''}")
            rows = list(range(len(matchers)))
        else:
            rows = list(indices)
            _same_size(matchers, rows, "indices")
            if len(set(rows)) != len(rows):
                raise BitmaskError("indices must be unique")
            for k, row in enumerate(rows):
                if isinstance(row, bool) or not isinstance(row, (int, np.integer)) or not 0 <= row < shape[0]:
                    raise BitmaskError(f"indices[{k}] = {row!r} is out of range for a bitmask with {shape[0]} rows")
        for k, m in enumerate(matchers):
            if m.is_terminated():
                raise BitmaskError(f"matchers[{k}] has terminated: it has no next-token mask (leave it out of the "
                                   "batch, or roll it back)")
        for m, row in zip(matchers, rows):
            m.fill_next_token_bitmask(bitmask, row, debug_print=debug_print)

    @staticmethod
    def batch_fill_temperature(matchers: list, temperatures, indices: Optional[list] = None) -> None:
        """Entry indices[k] (k by default) of `temperatures`, a 1-D float32 CPU tensor or numpy
        array, gets matchers[k].temperature, or -1 where it is None (xgrammar's rule; repeated
        indices are allowed, the last matcher wins)."""
        matchers = _check_matchers(matchers)
        device = getattr(temperatures, "device", None)
        values = temperatures
        if not isinstance(temperatures, np.ndarray) and hasattr(temperatures, "detach"):
            values = temperatures.detach().numpy() if str(device).startswith("cpu") else None
        if not isinstance(values, np.ndarray) or values.ndim != 1 or values.dtype != np.float32:
            if values is None:
                raise BitmaskError(f"The temperatures tensor must be on CPU, got device {device}")
            raise BitmaskError("The temperatures tensor must be a 1D float32 tensor, got "
                               f"{getattr(temperatures, 'dtype', type(temperatures).__name__)} with shape "
                               f"{tuple(getattr(temperatures, 'shape', ()))}")
        if indices is None:
            rows = list(range(len(matchers)))
        else:
            rows = list(indices)
            if len(rows) != len(matchers):
                raise BitmaskError(f"The indices size ({len(rows)}) must match the number of matchers "
                                   f"({len(matchers)})")
        for k, row in enumerate(rows):
            if isinstance(row, bool) or not isinstance(row, (int, np.integer)) or not 0 <= row < len(values):
                raise BitmaskError(f"The index {row!r} (matcher {k}) is out of bounds for the temperatures tensor "
                                   f"of size {len(values)}")
        for m, row in zip(matchers, rows):
            t = m.temperature
            values[row] = -1.0 if t is None else t

    @staticmethod
    def batch_accept_token(matchers: list, tokens: list, debug_print: bool = False) -> list[bool]:
        """Whether each matcher accepted its token (a rejected token leaves its matcher as it was)."""
        matchers, tokens = _check_matchers(matchers), list(tokens)
        _same_size(matchers, tokens, "token_ids")
        return [m.accept_token(t, debug_print=debug_print) for m, t in zip(matchers, tokens)]

    @staticmethod
    def batch_accept_string(matchers: list, strings: list, debug_print: bool = False) -> list[bool]:
        """Whether each matcher accepted its string."""
        matchers, strings = _check_matchers(matchers), list(strings)
        _same_size(matchers, strings, "strings")
        return [m.accept_string(s, debug_print=debug_print) for m, s in zip(matchers, strings)]

    @staticmethod
    def batch_rollback(matchers: list, num_tokens: Union[list, int] = 1) -> None:
        """Roll each matcher back by its number of tokens (one number: the same for all)."""
        matchers = _check_matchers(matchers)
        one = isinstance(num_tokens, (int, np.integer)) and not isinstance(num_tokens, bool)
        counts = [int(num_tokens)] * len(matchers) if one else list(num_tokens)
        _same_size(matchers, counts, "num_tokens")
        for k, (m, n) in enumerate(zip(matchers, counts)):
            steps = len(m._history)
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 0 <= n <= steps:
                raise BitmaskError(f"num_tokens[{k}] = {n!r}: matcher {k} can roll back 0 to {steps} tokens")
        for m, n in zip(matchers, counts):
            m.rollback(int(n))
