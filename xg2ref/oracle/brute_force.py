"""The brute-force token mask: one recognizer call per token, nothing cached, nothing shared.

DESIGN.md, "Semantics an oracle must get exactly right", read off literally. With `prefix` the
bytes matched so far, token t of a vocabulary is allowed iff

    t < len(vocab)                       padding ids (len(vocab) <= t < vocab_size) never are
    and, if t is a stop token:           prefix is a sentence
    else, if t is special or b"":        never (a token with empty bytes that is not a stop
                                         token is special)
    else:                                prefix + vocab[t] is a prefix of a sentence.

A stop token is judged as a stop token even when it is also listed as special, since the
design only excludes "special tokens that are not stop tokens". The mask is what the engine's
`compute_bool_mask` must return; `brute_force_accepts` and `brute_force_next_bytes` give the
matching verdicts for strings and single bytes, for messages in tests.

For grammars with token sets (`Token(...)`, `ExcludeToken(...)`), `prefix_marks` says which
regular tokens of the prefix were accepted as tokens (position -> (id, length), see
xg2ref/oracle/recognizer.py), and each candidate token is marked at the end of the prefix.

What it leaves out: speed (len(vocab) full recognizer runs per mask, so keep vocabularies and
prefixes small).
"""

from __future__ import annotations

from typing import Iterable, Optional, Union

import numpy as np

from ..grammar.ir import GrammarIR
from .recognizer import Recognizer


def _recognizer(recognizer_or_ir: Union[Recognizer, GrammarIR]) -> Recognizer:
    if isinstance(recognizer_or_ir, Recognizer):
        return recognizer_or_ir
    if isinstance(recognizer_or_ir, GrammarIR):
        return Recognizer(recognizer_or_ir)
    raise TypeError(f"expected a Recognizer or a GrammarIR, got {type(recognizer_or_ir).__name__}")


def brute_force_mask(
    recognizer_or_ir: Union[Recognizer, GrammarIR],
    prefix: bytes,
    vocab: list[bytes],
    stop_token_ids: Iterable[int] = (),
    special_token_ids: Iterable[int] = (),
    vocab_size: Optional[int] = None,
    prefix_marks: Optional[dict] = None,
) -> np.ndarray:
    """The allowed tokens after `prefix`, by asking the recognizer about every token.

    Returns a bool array of shape (vocab_size,), vocab_size defaulting to len(vocab).

    Example: brute_force_mask(ir, b"a", [b"b", b"", b"</s>"], stop_token_ids=[2])
             == [prefix + b"b" is a prefix, False, b"a" is a sentence]
    """
    rec = _recognizer(recognizer_or_ir)
    prefix = bytes(prefix)
    size = len(vocab) if vocab_size is None else int(vocab_size)
    if size < len(vocab):
        raise ValueError(f"vocab_size={size} is smaller than the vocabulary ({len(vocab)} tokens)")
    stops, specials = set(stop_token_ids), set(special_token_ids)
    for t in stops | specials:
        if not 0 <= t < size:
            raise ValueError(f"token id {t} is outside 0..{size - 1}")
    mask = np.zeros(size, dtype=bool)
    marks = dict(prefix_marks or {})
    if not rec.is_prefix(prefix, marks):
        return mask
    is_sentence = rec.is_sentence(prefix, marks)
    for t, token in enumerate(vocab):
        if t in stops:
            mask[t] = is_sentence
        elif t in specials or not token:
            mask[t] = False
        else:
            extra = {len(prefix): (t, len(token))} if rec.has_token_sets else {}
            mask[t] = rec.is_prefix(prefix + bytes(token), {**marks, **extra})
    return mask


def brute_force_accepts(recognizer_or_ir: Union[Recognizer, GrammarIR], data: bytes) -> bool:
    """True iff `data` is a whole sentence of the grammar.

    Example: brute_force_accepts(ir_of('root ::= "a"+'), b"aaa") is True
    """
    return _recognizer(recognizer_or_ir).is_sentence(data)


def brute_force_next_bytes(recognizer_or_ir: Union[Recognizer, GrammarIR], prefix: bytes) -> set[int]:
    """The bytes b such that prefix + [b] is still a prefix of a sentence.

    Example: brute_force_next_bytes(ir_of('root ::= [à-é]'), b"") == {0xC3}
    """
    rec = _recognizer(recognizer_or_ir)
    prefix = bytes(prefix)
    if not rec.is_prefix(prefix):
        return set()
    return {b for b in range(256) if rec.is_prefix(prefix + bytes((b,)))}
