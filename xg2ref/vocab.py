"""A leaf of shared helpers for the tokenizer modules: `VocabType`, the byte decodings and the
stop-token names.

`TokenizerInfo` (xg2ref/tokenizer_info.py), its Hugging Face readers (tokenizer_hf.py) and its
JSON layout (tokenizer_json.py) all import this module and nothing of each other's but what
tokenizer_info.py calls, so the import arrows point one way.

`decode_token(token, vocab_type)` is the byte-level view of XGrammar-2 §3.4: the bytes an encoded
token stands for, exactly as xgrammar 0.2.8 decodes them (the rules are listed in
tokenizer_info.py's docstring). xgrammar quirks mirrored here (so that both engines see the same
bytes):

- ``<0xHH>`` is read digit by digit as ``c - '0'`` or ``c - 'A' + 10`` without checking the
  character, so ``<0x0a>`` decodes to ``b"*"`` (0x2A), and a value outside 0..255
  (``<0xab>``, ``<0xZZ>``) is an error.
- BYTE_LEVEL parses the token only up to its first NUL byte (C string) and accepts overlong
  and out-of-range UTF-8 forms: ``"Ā\\x00Ā"`` decodes to ``b"\\x00"`` and ``b"\\xc0\\xa1"`` to
  ``b"!"``.
"""

from __future__ import annotations

import enum
from typing import Union

from .exceptions import TokenizerError

__all__ = ["VocabType", "decode_token", "SERIALIZATION_VERSION", "DETECTION_STOP_TOKENS", "HF_STOP_TOKEN_NAMES",
           "BYTE_TO_CHAR", "BYTE_LEVEL_CHARSET"]


class VocabType(enum.IntEnum):
    """How the encoded vocabulary spells bytes (xgrammar's `VocabType`)."""

    RAW = 0  # tiktoken-style: the token is its bytes
    BYTE_FALLBACK = 1  # SentencePiece: "<0x1B>" is byte 0x1B, "▁" is a space
    BYTE_LEVEL = 2  # GPT-2: one printable character per byte ("Ġ" is a space)


# xgrammar 0.2.8's `get_serialization_version()`: `serialize_json` writes its layout under it.
SERIALIZATION_VERSION = "v16"

# xgrammar 0.2.8's list for stop-token auto-detection (matched against decoded bytes).
DETECTION_STOP_TOKENS = frozenset(s.encode() for s in (
    "</s>", "<|end_of_text|>", "<|eot_id|>", "<|endoftext|>", "<eos>", "<|eos|>", "<end_of_turn>",
    "<｜end▁of▁sentence｜>"))

# Names that mark an end-of-sequence token in a tokenizer.json (its tokenizer_config.json,
# which names the real eos token, is not read): xgrammar's list plus chat-model end markers.
HF_STOP_TOKEN_NAMES = frozenset(DETECTION_STOP_TOKENS | {
    s.encode() for s in ("<|eom_id|>", "<|im_end|>", "<|return|>", "<|call|>")})


def _gpt2_byte_to_char() -> str:
    """GPT-2's `bytes_to_unicode`: the i-th character stands for byte i."""
    kept = {*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)}
    shifted = iter(range(256, 512))  # the other bytes, in order, become U+0100, U+0101, ...
    return "".join(chr(b) if b in kept else chr(next(shifted)) for b in range(256))


BYTE_TO_CHAR = _gpt2_byte_to_char()  # BYTE_LEVEL: character i stands for byte i
BYTE_LEVEL_CHARSET = frozenset(BYTE_TO_CHAR)
_CHAR_TO_BYTE = {c: b for b, c in enumerate(BYTE_TO_CHAR)}
_BYTE_LEVEL_TRANS = str.maketrans({c: chr(b) for b, c in enumerate(BYTE_TO_CHAR)})
_UTF8_FIRST_BYTE_MASK = (0, 0x7F, 0x1F, 0x0F, 0x07)
_METASPACE = "\u2581".encode()


def _utf8_length(first: int) -> int:
    """Bytes in a UTF-8 sequence by its first byte, as xgrammar's table (0: invalid)."""
    if first < 0x80:
        return 1
    if first < 0xC0:
        return 0
    return 2 if first < 0xE0 else 3 if first < 0xF0 else 4 if first < 0xF8 else 0


def _decode_byte_level_lenient(token: bytes) -> bytes:
    """BYTE_LEVEL decoding of a token that is not strict UTF-8, as xgrammar's `ParseUTF8`."""
    data = token.split(b"\0", 1)[0]
    out, i = bytearray(), 0
    while i < len(data):
        n = _utf8_length(data[i])
        if n == 0 or i + n > len(data) or any(c & 0xC0 != 0x80 for c in data[i + 1:i + n]):
            return token  # invalid UTF-8: the token is kept as is
        cp = data[i] & _UTF8_FIRST_BYTE_MASK[n]
        for c in data[i + 1:i + n]:
            cp = (cp << 6) | (c & 0x3F)
        if cp >= 0x110000 or chr(cp) not in _CHAR_TO_BYTE:
            return token
        out.append(_CHAR_TO_BYTE[chr(cp)])
        i += n
    return bytes(out)


def _decode_byte_level(token: Union[str, bytes]) -> bytes:
    if isinstance(token, bytes):
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            return _decode_byte_level_lenient(token)
    else:
        text = token
    head = text.split("\0", 1)[0] if "\0" in text else text
    if BYTE_LEVEL_CHARSET.issuperset(head):
        return head.translate(_BYTE_LEVEL_TRANS).encode("latin-1")
    return token if isinstance(token, bytes) else token.encode("utf-8")


def _decode_byte_fallback(token: bytes) -> bytes:
    if len(token) == 6 and token[:3] == b"<0x" and token[5] == 0x3E:
        value = 0
        for c in token[3:5]:
            s = c - 256 if c >= 128 else c  # C++ `char` is signed
            value = value * 16 + (s - 48 if 48 <= s <= 57 else s - 65 + 10)
        if not 0 <= value < 256:
            raise TokenizerError(f"byte-fallback token {token!r} does not name a byte: write <0xHH> "
                                 "with upper-case hex digits (xgrammar 0.2.8 rejects it too)")
        return bytes([value])
    return token.replace(_METASPACE, b" ")


def decode_token(token: Union[str, bytes], vocab_type: VocabType = VocabType.RAW) -> bytes:
    """The bytes an encoded token stands for, as xgrammar 0.2.8 decodes it.

    Example: decode_token("Ġhello", VocabType.BYTE_LEVEL) == b" hello"
    """
    if vocab_type == VocabType.BYTE_LEVEL:
        return _decode_byte_level(token)
    raw = token.encode("utf-8") if isinstance(token, str) else token
    return _decode_byte_fallback(raw) if vocab_type == VocabType.BYTE_FALLBACK else raw
