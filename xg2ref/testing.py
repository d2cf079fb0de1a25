"""xgrammar.testing's helpers that a differential test needs: bitmasks and token-id lists.

`bool_mask_to_bitmask`, `bitmask_to_bool_mask`, `_get_masked_tokens_from_bitmask` and
`_is_single_token_bitmask` behave as in xgrammar 0.2.8 and accept numpy arrays as well as
torch tensors (a torch tensor in gives a torch tensor out). `get_masked_token_ids` and
`get_allowed_token_ids` are public names for the rejected and allowed ids of one row.

Semantics checked against xgrammar 0.2.8:

- `bool_mask_to_bitmask` pads the last word with 1 bits (allowed), unlike a matcher fill.
- `_get_masked_tokens_from_bitmask` lists the rejected ids below vocab_size only.
- `_is_single_token_bitmask` looks at every bit of the row's ceil(vocab_size / 32) words,
  including the bits past vocab_size in the last word: (True, id) iff exactly one bit is set.

Departures: 1-D inputs are accepted everywhere (xgrammar's converters need 2-D), and a row may
be wider than ceil(vocab_size / 32) words (see `xg2ref.bitmask`).
The grammar helpers at the end (`_get_matcher_from_grammar`, `_is_grammar_accept_string`, its
public name `is_grammar_accept_string`, `_get_allow_empty_rule_ids`) match strings, not tokens:
they compile against an empty vocabulary, as xgrammar's do.
Left out: xgrammar's private FSM printers and JSON-Schema/regex converters (front ends that do
not exist yet; `xg2ref fsm` prints FSMs).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional, Union

import numpy as np

from .bitmask import _is_torch_tensor, bitmask_row_view, unpack_bitmask

if TYPE_CHECKING:
    from .compiler import CompiledGrammar
    from .grammar.grammar import Grammar
    from .matcher import GrammarMatcher
    from .tokenizer_info import TokenizerInfo

__all__ = ["bool_mask_to_bitmask", "bitmask_to_bool_mask", "get_masked_token_ids", "get_allowed_token_ids",
           "_get_masked_tokens_from_bitmask", "_is_single_token_bitmask", "is_grammar_accept_string",
           "_is_grammar_accept_string", "_get_matcher_from_grammar",
           "_get_matcher_from_grammar_and_tokenizer_info", "_get_allow_empty_rule_ids"]


def _to_numpy(x, what: str) -> tuple:
    """(numpy array, torch device or None) for a numpy array or a torch tensor."""
    if _is_torch_tensor(x):
        return x.detach().cpu().numpy(), x.device
    if isinstance(x, np.ndarray):
        return x, None
    raise ValueError(f"{what} must be a numpy array or a torch tensor, got {type(x).__name__}")


def _like(array: np.ndarray, device):
    """`array` as a torch tensor on `device` when the input was a tensor, else as is."""
    if device is None:
        return array
    import torch

    return torch.from_numpy(np.ascontiguousarray(array)).to(device)


def bool_mask_to_bitmask(bool_mask):
    """bool[..., n] (True = allowed) -> int32[..., ceil(n / 32)]; padding bits are 1.

    Example: bool_mask_to_bitmask(np.array([[True, False, True]])) -> array([[-3]], dtype=int32)
    """
    mask, device = _to_numpy(bool_mask, "bool_mask")
    if mask.ndim not in (1, 2):
        raise ValueError(f"bool_mask must be 1-D or 2-D, got {mask.ndim}-D")
    n = mask.shape[-1]
    padded = np.ones(mask.shape[:-1] + ((n + 31) // 32 * 32,), dtype=np.bool_)
    padded[..., :n] = mask.astype(np.bool_)
    words = np.packbits(padded, axis=-1, bitorder="little").view("<i4").astype(np.int32)
    return _like(words, device)


def bitmask_to_bool_mask(bitmask, vocab_size: Optional[int] = None):
    """int32[..., words] -> bool[..., vocab_size] (True = allowed); vocab_size defaults to 32 * words.

    Example: bitmask_to_bool_mask(np.array([[5]], np.int32), 3) -> array([[ True, False,  True]])
    """
    words, device = _to_numpy(bitmask, "bitmask")
    if words.dtype != np.int32:
        raise ValueError(f"bitmask must have dtype int32, got {words.dtype}")
    if words.ndim not in (1, 2):
        raise ValueError(f"bitmask must be 1-D or 2-D, got {words.ndim}-D")
    if vocab_size is None:
        vocab_size = words.shape[-1] * 32
    if vocab_size > words.shape[-1] * 32:
        raise ValueError(f"vocab_size {vocab_size} is larger than the {words.shape[-1] * 32} tokens "
                         f"a bitmask of {words.shape[-1]} words holds")
    return _like(unpack_bitmask(words, vocab_size), device)


def _row_mask(bitmask, vocab_size: int, index: int) -> np.ndarray:
    return unpack_bitmask(bitmask_row_view(bitmask, index, vocab_size, writable=False), vocab_size)


def get_masked_token_ids(bitmask, vocab_size: int, index: int = 0) -> list:
    """The rejected token ids (bit 0) below vocab_size in row `index`, ascending."""
    return np.flatnonzero(~_row_mask(bitmask, vocab_size, index)).tolist()


def get_allowed_token_ids(bitmask, vocab_size: int, index: int = 0) -> list:
    """The allowed token ids (bit 1) below vocab_size in row `index`, ascending."""
    return np.flatnonzero(_row_mask(bitmask, vocab_size, index)).tolist()


def _get_masked_tokens_from_bitmask(bitmask, vocab_size: int, index: int = 0) -> list:
    """xgrammar's name for `get_masked_token_ids`: the REJECTED ids of row `index`."""
    return get_masked_token_ids(bitmask, vocab_size, index)


def _is_single_token_bitmask(bitmask, vocab_size: int, index: int = 0) -> tuple:
    """(True, id) when exactly one bit of row `index` is set, else (False, -1).

    Every bit of the row's ceil(vocab_size / 32) words counts, as in xgrammar, so a lone bit
    past vocab_size in the last word is reported as that id.
    """
    row = bitmask_row_view(bitmask, index, vocab_size, writable=False)
    words = (vocab_size + 31) // 32
    ids = np.flatnonzero(unpack_bitmask(row[:words], words * 32))
    return (True, int(ids[0])) if len(ids) == 1 else (False, -1)


# ---- grammar helpers (xgrammar.testing: _is_grammar_accept_string, _get_matcher_from_grammar) ----


def _get_matcher_from_grammar_and_tokenizer_info(grammar: Union["Grammar", str],
                                                 tokenizer_info: Optional["TokenizerInfo"] = None,
                                                 **kwargs) -> "GrammarMatcher":
    """A matcher for `grammar` (EBNF text or a Grammar) over `tokenizer_info` (default: an
    empty vocabulary); `kwargs` go to GrammarMatcher. The compiler's cache is off."""
    from .compiler import GrammarCompiler
    from .matcher import GrammarMatcher
    from .tokenizer_info import TokenizerInfo

    info = tokenizer_info if tokenizer_info is not None else TokenizerInfo([])
    compiled = GrammarCompiler(info, cache_enabled=False).compile_grammar(grammar)
    return GrammarMatcher(compiled, **kwargs)


def _get_matcher_from_grammar(grammar: Union["Grammar", str], **kwargs) -> "GrammarMatcher":
    """A string-only matcher: empty vocabulary, terminated as soon as the input is complete."""
    kwargs.setdefault("terminate_without_stop_token", True)
    return _get_matcher_from_grammar_and_tokenizer_info(grammar, None, **kwargs)


def _is_grammar_accept_string(grammar: Union["Grammar", str], input_str: Union[str, bytes], *,
                              debug_print: bool = False, print_time: bool = False,
                              require_termination: bool = True) -> bool:
    """Does `grammar` accept `input_str`?

    With `require_termination` (the default) the whole string must be a sentence; without it,
    a viable prefix suffices. Bad grammars raise EBNFError, as compile_grammar does.
    """
    matcher = _get_matcher_from_grammar(grammar)
    start = time.perf_counter()
    accepted = matcher.accept_string(input_str, debug_print=debug_print)
    if print_time:
        print(f"accept_string({input_str!r}) -> {accepted} in {(time.perf_counter() - start) * 1e6:.1f} us")
    if not accepted:
        return False
    return matcher.is_terminated() if require_termination else True


is_grammar_accept_string = _is_grammar_accept_string


def _get_allow_empty_rule_ids(compiled_grammar: "CompiledGrammar") -> list:
    """Ids of the rules that derive the empty string, in the compiled grammar's rule order."""
    return [r for r, nullable in enumerate(compiled_grammar.fsms.nullable) if nullable]


def _regex_to_ebnf(regex: str, with_rule_name: bool = True) -> str:
    """The EBNF of `Grammar.from_regex(regex)`: `root ::= ...` or, without the rule name, the body."""
    from .grammar.grammar import Grammar

    text = str(Grammar.from_regex(regex))
    return text if with_rule_name else text.split("::=", 1)[1].strip() + "\n"


def _json_schema_to_ebnf(schema, *, any_whitespace: bool = True, indent=None, separators=None,
                         max_whitespace_cnt=None, strict_mode: bool = True, any_order: bool = False,
                         approximate=None, exact_formats=None) -> str:
    """The EBNF of `Grammar.from_json_schema(schema, ...)`."""
    from .grammar.grammar import Grammar

    return str(Grammar.from_json_schema(schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
                                        max_whitespace_cnt=max_whitespace_cnt, strict_mode=strict_mode,
                                        any_order=any_order, approximate=approximate,
                                        exact_formats=exact_formats))
