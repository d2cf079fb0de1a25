"""xgrammar's `TokenizerInfo`: a vocabulary decoded to bytes, with its stop and special tokens.

The engine is byte-level (XGrammar-2 §3.4): a token is allowed iff the bytes matched so far
followed by the token's bytes are a prefix of a sentence. This module turns a tokenizer's
*encoded* vocabulary into those bytes, exactly as xgrammar 0.2.8 does:

- `VocabType.RAW`: the bytes as given (a `str` is UTF-8 encoded).
- `VocabType.BYTE_FALLBACK` (SentencePiece): a token of exactly six bytes ``<0xHH>`` becomes
  the byte 0xHH, otherwise every ``▁`` (U+2581) becomes a space.
- `VocabType.BYTE_LEVEL` (GPT-2): each character of the token is mapped back through the
  inverse of GPT-2's `bytes_to_unicode` table; a token with a character outside the table is
  kept as its UTF-8 bytes.

Stop tokens are the ids given (or, when none are given, the tokens that decode to one of
`DETECTION_STOP_TOKENS`). Special tokens are the ids that decode to ``b""`` and are not stop
tokens, plus the padding ids ``[len(encoded_vocab), vocab_size)``; they are never allowed.
Regular tokens are all the others; `vocab_arrays()` lays them out sorted by bytes for the
matching kernels.

The decoding itself, with the xgrammar quirks it mirrors (so that both engines see the same
bytes), is xg2ref/vocab.py's `decode_token`.

Departures from xgrammar, all raising `TokenizerError` where xgrammar is silent: a stop id
outside ``[0, len(encoded_vocab))`` (xgrammar drops it; a padding id stays special).

Elsewhere: reading Hugging Face tokenizers (`from_huggingface`, `from_huggingface_file`,
`_detect_metadata_from_hf`) is `xg2ref.tokenizer_hf`, which returns the constructor's arguments;
`serialize_json`/`deserialize_json` is `xg2ref.tokenizer_json`. Both import only the leaf
`xg2ref.vocab` (`VocabType`, `decode_token`, the stop-token names), which this module re-exports.
Left out: downloading anything.
"""

from __future__ import annotations

import json
import numbers
import os
from typing import Any, NamedTuple, Optional, Sequence, Union

import numpy as np

from .exceptions import TokenizerError
from .vocab import DETECTION_STOP_TOKENS, HF_STOP_TOKEN_NAMES, SERIALIZATION_VERSION, VocabType, decode_token

__all__ = ["VocabType", "TokenizerInfo", "VocabArrays", "decode_token", "DETECTION_STOP_TOKENS",
           "HF_STOP_TOKEN_NAMES", "QUICKTOK_STOP_TOKENS", "SERIALIZATION_VERSION"]


# End-of-turn tokens of the quicktok encodings, by name (id 128008 is Llama 3.1's <|eom_id|>,
# which quicktok's Llama 3.0 table calls <|reserved_special_token_4|>). o200k_harmony follows
# gpt-oss's generation_config.json: <|return|> ends the final message, <|call|> a tool call.
QUICKTOK_STOP_TOKENS = {
    "llama3": ("<|end_of_text|>", 128008, "<|eot_id|>"),
    "qwen3": ("<|endoftext|>", "<|im_end|>"),
    "o200k_harmony": ("<|endoftext|>", "<|return|>", "<|call|>"),
    "cl100k_base": ("<|endoftext|>",),
    "o200k_base": ("<|endoftext|>",),
}


class VocabArrays(NamedTuple):
    """The vocabulary as flat arrays for the matching kernels (n = vocab_size, m regular tokens).

    token_bytes : uint8[total]   every id's decoded bytes, concatenated in id order
    token_offsets : int64[n + 1] id i is token_bytes[token_offsets[i]:token_offsets[i + 1]]
    sorted_ids : int32[m]        regular ids (non-empty, not special, not stop) sorted by bytes,
                                 a shorter prefix first
    sorted_lcp : int32[m]        sorted_lcp[k] = longest common prefix of sorted tokens k-1, k
                                 (0 for k = 0)
    is_special : bool[n]         empty non-stop tokens and padding ids
    is_stop : bool[n]
    sorted_bytes : uint8[...]    the regular tokens' bytes again, concatenated in sorted order
    sorted_offsets : int64[m + 1]  sorted token k is sorted_bytes[sorted_offsets[k]:sorted_offsets[k + 1]]
                                 (kernels that walk the whole sorted vocabulary read memory in order)
    """

    token_bytes: np.ndarray
    token_offsets: np.ndarray
    sorted_ids: np.ndarray
    sorted_lcp: np.ndarray
    is_special: np.ndarray
    is_stop: np.ndarray
    sorted_bytes: np.ndarray
    sorted_offsets: np.ndarray


def _sorted_lcp(token_bytes: np.ndarray, offsets: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """int32[m]: the longest common prefix of each sorted token with the one before it.

    Tokens are laid out as rows of an int16 matrix padded with -1 (never a byte), so the first
    column where two neighbouring rows differ is their common prefix length (equal rows: a
    duplicate token, whose length it is).
    """
    m = len(ids)
    lcp = np.zeros(m, dtype=np.int32)
    if m < 2:
        return lcp
    lens = (offsets[ids + 1] - offsets[ids]).astype(np.int64)
    width = int(lens.max()) + 1
    chunk = max(2, (1 << 24) // width)
    for start in range(1, m, chunk):
        rows = np.arange(start - 1, min(start + chunk, m))
        row_lens = lens[rows]
        total = int(row_lens.sum())
        row_of = np.repeat(np.arange(len(rows)), row_lens)
        col = np.arange(total) - np.repeat(np.cumsum(row_lens) - row_lens, row_lens)
        src = np.repeat(offsets[ids[rows]], row_lens) + col
        grid = np.full((len(rows), width), -1, dtype=np.int16)
        grid[row_of, col] = token_bytes[src]
        differ = grid[1:] != grid[:-1]
        lcp[rows[1:]] = np.where(differ.any(axis=1), np.argmax(differ, axis=1), row_lens[1:])
    return lcp


def stop_token_list(info: "TokenizerInfo", override_stop_tokens, vocab_size: int) -> list[int]:
    """The matcher's stop tokens: the vocabulary's, or `override_stop_tokens` (an id or ids, each
    checked to lie in the vocabulary)."""
    if override_stop_tokens is None:
        return list(info.stop_token_ids)
    stops = [override_stop_tokens] if isinstance(override_stop_tokens, int) else list(override_stop_tokens)
    bad = [t for t in stops if not 0 <= t < vocab_size]
    if bad:
        raise ValueError(f"override_stop_tokens {bad} are outside the vocabulary [0, {vocab_size})")
    return stops


def sorted_regular_tokens(vocab: VocabArrays, is_stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The regular tokens for a matcher with stop tokens of its own (`is_stop`): ids with
    non-empty bytes, neither special nor stop, sorted by bytes, and each one's common prefix
    with its predecessor (`VocabArrays.sorted_ids` and `sorted_lcp` for other stops)."""
    n = len(vocab.token_offsets) - 1
    lengths = np.diff(vocab.token_offsets)
    ids = np.flatnonzero((lengths > 0) & ~is_stop[:n] & ~vocab.is_special[:n])
    data = [vocab.token_bytes[vocab.token_offsets[t]:vocab.token_offsets[t + 1]].tobytes() for t in ids.tolist()]
    ids = ids[np.array(sorted(range(len(ids)), key=data.__getitem__), dtype=np.int64)].astype(np.int32)
    return ids, _sorted_lcp(vocab.token_bytes, vocab.token_offsets, ids.astype(np.int64))


class TokenizerInfo:
    """A vocabulary decoded to bytes, with its stop and special tokens (xgrammar's class).

    Parameters
    ----------
    encoded_vocab : list or tuple of str or bytes
        Token i's encoded spelling.
    vocab_type : VocabType
        How tokens spell bytes (see the module docstring).
    vocab_size : int, optional
        The model's vocabulary size, at least len(encoded_vocab); ids past the encoded vocab
        are padding (special). Defaults to len(encoded_vocab).
    stop_token_ids : int or list of int, optional
        Stop tokens; None auto-detects tokens decoding to a `DETECTION_STOP_TOKENS` name.
    add_prefix_space : bool
        Whether the tokenizer prepends a space to its input (reported only).
    """

    def __init__(self, encoded_vocab: Union[Sequence[Union[str, bytes]], tuple],
                 vocab_type: Union[VocabType, int] = VocabType.RAW, *, vocab_size: Optional[int] = None,
                 stop_token_ids: Union[None, int, Sequence[int]] = None, add_prefix_space: bool = False):
        if isinstance(encoded_vocab, (str, bytes)) or not hasattr(encoded_vocab, "__len__"):
            raise TokenizerError(f"encoded_vocab must be a list of str or bytes, got {type(encoded_vocab).__name__}")
        vtype = _vocab_type(vocab_type)
        decoded = []
        for i, token in enumerate(encoded_vocab):
            if isinstance(token, (bytearray, memoryview)):
                token = bytes(token)
            elif not isinstance(token, (str, bytes)):
                raise TokenizerError(f"encoded_vocab[{i}] must be str or bytes, got {type(token).__name__}")
            try:
                decoded.append(decode_token(token, vtype))
            except UnicodeEncodeError as err:
                raise TokenizerError(f"encoded_vocab[{i}] is not encodable as UTF-8: {err}") from None
        n = len(decoded)
        if vocab_size is None:
            vocab_size = n
        if not isinstance(vocab_size, numbers.Integral) or vocab_size < n:
            raise TokenizerError(f"vocab_size ({vocab_size}) must be an integer at least the number of "
                                 f"tokens in encoded_vocab ({n})")
        if stop_token_ids is None:
            stops = [i for i, t in enumerate(decoded) if t in DETECTION_STOP_TOKENS]
        else:
            stops = _check_stop_ids(stop_token_ids, n, int(vocab_size))
        self._init(decoded, vtype, int(vocab_size), stops, bool(add_prefix_space), None)

    @staticmethod
    def _from_decoded(decoded: list, vocab_type: VocabType, vocab_size: int, stops: list, add_prefix_space: bool,
                      name: Optional[str]) -> "TokenizerInfo":
        """An instance over an already decoded and checked vocabulary (quicktok, `deserialize_json`)."""
        info = TokenizerInfo.__new__(TokenizerInfo)
        info._init(decoded, vocab_type, vocab_size, stops, add_prefix_space, name)
        return info

    @staticmethod
    def _from_arguments(args: Any) -> "TokenizerInfo":
        """An instance from a reader's `TokenizerArguments` (xg2ref/tokenizer_hf.py): the
        constructor's arguments and the name the vocabulary gets."""
        info = TokenizerInfo(args.encoded_vocab, args.vocab_type, vocab_size=args.vocab_size,
                             stop_token_ids=args.stop_token_ids, add_prefix_space=args.add_prefix_space)
        info._name = args.name
        return info

    def _init(self, decoded: list, vocab_type: VocabType, vocab_size: int, stops: list,
              add_prefix_space: bool, name: Optional[str]) -> None:
        self._decoded = decoded  # id -> bytes, len(encoded_vocab) entries
        self._vocab_type = vocab_type
        self._vocab_size = vocab_size
        self._stop = stops  # sorted, unique
        stop_set = set(stops)
        self._special = [i for i, t in enumerate(decoded) if not t and i not in stop_set]
        self._special += range(len(decoded), vocab_size)
        self._add_prefix_space = add_prefix_space
        self._name = name
        self._arrays: Optional[VocabArrays] = None

    def __getstate__(self) -> dict:
        """What a pickle holds: the vocabulary, not the arrays derived from it. They are built
        again where it is unpickled, so they have the flags of arrays built there (Ray hands an
        unpickled array over read-only, and a kernel that met it beside one built here could
        not be typed), and the pickle is smaller."""
        state = dict(self.__dict__)
        state["_arrays"] = None
        state.pop("_offsets_list", None)
        return state

    # ---- xgrammar's properties ----------------------------------------------------------

    @property
    def vocab_type(self) -> VocabType:
        return self._vocab_type

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    @property
    def add_prefix_space(self) -> bool:
        return self._add_prefix_space

    @property
    def prepend_space_in_tokenization(self) -> bool:
        """Deprecated alias of `add_prefix_space` (as in xgrammar)."""
        return self._add_prefix_space

    @property
    def decoded_vocab(self) -> list:
        """list[bytes]: token i's bytes, for the len(encoded_vocab) encoded tokens."""
        return list(self._decoded)

    @property
    def stop_token_ids(self) -> list:
        return list(self._stop)

    @property
    def special_token_ids(self) -> list:
        return list(self._special)

    @property
    def name(self) -> Optional[str]:
        """The vocabulary's name ("llama3", a tokenizer.json path...), None when built from a list."""
        return self._name

    def token_bytes(self, token_id: int) -> bytes:
        """Token `token_id`'s decoded bytes (b"" for padding ids)."""
        if not 0 <= token_id < self._vocab_size:
            raise TokenizerError(f"token id {token_id} out of range [0, {self._vocab_size})")
        return self._decoded[token_id] if token_id < len(self._decoded) else b""

    def dump_metadata(self) -> str:
        """xgrammar's metadata JSON: vocab_type, vocab_size, add_prefix_space, stop_token_ids."""
        return json.dumps({"vocab_type": int(self._vocab_type), "vocab_size": self._vocab_size,
                           "add_prefix_space": self._add_prefix_space, "stop_token_ids": self._stop},
                          separators=(",", ":"))

    @staticmethod
    def from_vocab_and_metadata(encoded_vocab: Sequence[Union[str, bytes]], metadata: str) -> "TokenizerInfo":
        """Rebuild from an encoded vocabulary and `dump_metadata()`'s JSON."""
        try:
            meta = json.loads(metadata)
        except (TypeError, ValueError, RecursionError) as err:
            raise TokenizerError(f"invalid tokenizer metadata {metadata!r}: {err}") from None
        from .tokenizer_json import is_json_kind

        kinds = {"vocab_type": "an integer", "vocab_size": "an integer", "add_prefix_space": "a boolean",
                 "stop_token_ids": "a list of integers"}
        for key, kind in kinds.items():
            if not isinstance(meta, dict) or not is_json_kind(meta.get(key), kind):
                raise TokenizerError(f"invalid tokenizer metadata {metadata!r}: {key!r} must be {kind}")
        return TokenizerInfo(encoded_vocab, meta["vocab_type"], vocab_size=meta["vocab_size"],
                             stop_token_ids=meta["stop_token_ids"], add_prefix_space=meta["add_prefix_space"])

    def serialize_json(self) -> str:
        """The whole tokenizer info as JSON, in xgrammar 0.2.8's layout and version.

        Fields: vocab_type, vocab_size, add_prefix_space, stop_token_ids, special_token_ids,
        decoded_vocab (each byte as the character of that code point: b"\\xe6" is "\\u00e6"),
        sorted_decoded_vocab ([id, token] of the regular tokens, sorted by bytes),
        trie_subtree_nodes_range, xg2ref's optional "name", and "__VERSION__". For the same
        vocabulary the text equals xgrammar's `serialize_json()` (without "name"), and each
        library's `deserialize_json` reads the other's.
        """
        from .tokenizer_json import serialize

        return serialize(self)

    @staticmethod
    def deserialize_json(json_string: str) -> "TokenizerInfo":
        """Read `serialize_json()`'s text (xg2ref's or xgrammar 0.2.8's).

        Raises `InvalidJSONError` when the text is not JSON, `DeserializeVersionError` when
        "__VERSION__" is missing or not `SERIALIZATION_VERSION`, and `DeserializeFormatError`
        when a field is missing, unknown, of the wrong type, or disagrees with what the other
        fields imply (the special ids, the sorted vocabulary and its trie ranges are checked).
        """
        from .tokenizer_json import deserialize

        return deserialize(json_string, TokenizerInfo._from_decoded)

    def __repr__(self) -> str:
        label = f"name={self._name!r}, " if self._name else ""
        return (f"TokenizerInfo({label}vocab_type={self._vocab_type.name}, vocab_size={self._vocab_size}, "
                f"stop_token_ids={self._stop[:8]}{'...' if len(self._stop) > 8 else ''}, "
                f"special={len(self._special)})")

    # ---- flat arrays ----------------------------------------------------------------------

    def vocab_arrays(self) -> VocabArrays:
        """The vocabulary as `VocabArrays` (computed once, cached and shared: do not modify)."""
        if self._arrays is None:
            self._arrays = self._build_arrays()
        return self._arrays

    def token_offsets_list(self) -> list:
        """`vocab_arrays().token_offsets` as a list of Python ints (computed once, shared): the
        matcher's accept reads two of them per token, faster from a list than from numpy."""
        offsets = getattr(self, "_offsets_list", None)
        if offsets is None:
            offsets = self._offsets_list = self.vocab_arrays().token_offsets.tolist()
        return offsets

    def _build_arrays(self) -> VocabArrays:
        n, decoded = self._vocab_size, self._decoded
        lens = np.zeros(n, dtype=np.int64)
        lens[:len(decoded)] = np.fromiter(map(len, decoded), dtype=np.int64, count=len(decoded))
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        token_bytes = np.frombuffer(b"".join(decoded), dtype=np.uint8).copy()
        is_stop = np.zeros(n, dtype=np.bool_)
        is_stop[self._stop] = True
        is_special = np.zeros(n, dtype=np.bool_)
        is_special[self._special] = True
        regular = np.flatnonzero((lens > 0) & ~is_stop & ~is_special)
        sorted_ids = np.array(sorted(regular.tolist(), key=decoded.__getitem__), dtype=np.int32)
        sorted_lcp = _sorted_lcp(token_bytes, offsets, sorted_ids.astype(np.int64))
        sorted_offsets = np.zeros(len(sorted_ids) + 1, dtype=np.int64)
        np.cumsum(lens[sorted_ids], out=sorted_offsets[1:])
        sorted_bytes = np.frombuffer(b"".join(decoded[t] for t in sorted_ids.tolist()), dtype=np.uint8).copy()
        return VocabArrays(token_bytes, offsets, sorted_ids, sorted_lcp, is_special, is_stop, sorted_bytes,
                           sorted_offsets)

    # ---- constructors -----------------------------------------------------------------------

    @staticmethod
    def from_quicktok(name: str, *, vocab_size: Optional[int] = None) -> "TokenizerInfo":
        """One of the encodings shipped with quicktok-v1, as a RAW vocabulary.

        `name` is "llama3" (128,256 ids), "qwen3" (151,669), "o200k_harmony" (201,088),
        "cl100k_base" (100,277) or "o200k_base" (200,019). Special tokens and ids with no token
        decode to b""; the end-of-turn tokens of `QUICKTOK_STOP_TOKENS` are the stop tokens.
        `vocab_size` pads to the model's size (Qwen3 models use 151,936). Instances are cached.
        """
        key = (name, vocab_size)
        if key not in _QUICKTOK_INFOS:
            decoded, stops = _load_quicktok(name)
            size = len(decoded) if vocab_size is None else vocab_size
            if not isinstance(size, numbers.Integral) or size < len(decoded):
                raise TokenizerError(f"vocab_size ({vocab_size}) must be at least {len(decoded)} for {name}")
            _QUICKTOK_INFOS[key] = TokenizerInfo._from_decoded(decoded, VocabType.RAW, int(size), stops, False, name)
        return _QUICKTOK_INFOS[key]

    @staticmethod
    def from_huggingface_file(path: Union[str, os.PathLike], *, vocab_size: Optional[int] = None,
                              stop_token_ids: Union[None, int, Sequence[int]] = None) -> "TokenizerInfo":
        """Read a Hugging Face `tokenizer.json` from disk (no download, no `tokenizers` needed).

        The vocabulary is model.vocab plus added_tokens; added special tokens become empty
        (special, or stop when they end a sequence). The vocab type and add_prefix_space are
        detected as xgrammar's `from_huggingface` does. Without `stop_token_ids`, the special
        tokens named as in `HF_STOP_TOKEN_NAMES` (or, when there are none, any token so named)
        are the stop tokens: pass the model's eos ids to be exact.
        """
        from .tokenizer_hf import read_huggingface_file

        return TokenizerInfo._from_arguments(read_huggingface_file(path, vocab_size=vocab_size,
                                                                   stop_token_ids=stop_token_ids))

    @staticmethod
    def from_huggingface(tokenizer: Any, *, vocab_size: Optional[int] = None,
                         stop_token_ids: Union[None, int, Sequence[int]] = None) -> "TokenizerInfo":
        """From a Hugging Face tokenizer, as xgrammar 0.2.8 builds it (`xg2ref.tokenizer_hf`).

        Takes a transformers fast tokenizer, a tiktoken- or SentencePiece-based slow tokenizer,
        or a `tokenizers.Tokenizer`. The vocabulary is `tokenizer.get_vocab()`, every token
        keeping its text (added special tokens included); `vocab_size` pads or cuts it to the
        model's size; the stop token defaults to the tokenizer's `eos_token_id`.
        """
        from .tokenizer_hf import read_huggingface

        return TokenizerInfo._from_arguments(read_huggingface(tokenizer, vocab_size=vocab_size,
                                                              stop_token_ids=stop_token_ids))

    @staticmethod
    def _detect_metadata_from_hf(backend_str: Any) -> dict:
        """{"vocab_type": VocabType, "add_prefix_space": bool} read off a backend tokenizer's JSON.

        `backend_str` is `tokenizer.backend_tokenizer.to_str()` (or the tokenizer itself).
        """
        from .tokenizer_hf import detect_metadata_from_hf

        return detect_metadata_from_hf(backend_str)


def _vocab_type(value: Any) -> VocabType:
    raw = getattr(value, "value", value)  # also xgrammar's VocabType
    try:
        return VocabType(raw)
    except ValueError:
        raise TokenizerError("vocab_type must be RAW (0), BYTE_FALLBACK (1) or BYTE_LEVEL (2), "
                             f"got {value!r}") from None


def _check_stop_ids(stop_token_ids: Union[int, Sequence[int]], n: int, vocab_size: int) -> list:
    ids = [stop_token_ids] if isinstance(stop_token_ids, numbers.Integral) else list(stop_token_ids)
    for t in ids:
        if not isinstance(t, numbers.Integral) or isinstance(t, bool):
            raise TokenizerError(f"stop token ids must be integers, got {t!r}")
        if not 0 <= t < n:
            padding = f"; ids {n}..{vocab_size - 1} are padding" if vocab_size > n else ""
            raise TokenizerError(f"stop token id {t} is out of range for a vocabulary of {n} tokens{padding}")
    return sorted({int(t) for t in ids})


# ---- quicktok ---------------------------------------------------------------------------------

_QUICKTOK_VOCABS: dict = {}  # name -> (decoded: list[bytes], stop ids: list[int])
_QUICKTOK_INFOS: dict = {}  # (name, vocab_size) -> TokenizerInfo


def _load_quicktok(name: str) -> tuple:
    if name in _QUICKTOK_VOCABS:
        return _QUICKTOK_VOCABS[name]
    if name not in QUICKTOK_STOP_TOKENS:
        raise TokenizerError(f"unknown quicktok encoding {name!r}; choose one of {sorted(QUICKTOK_STOP_TOKENS)}")
    try:
        import quicktok
    except ImportError:
        raise TokenizerError("from_quicktok needs the quicktok-v1 package (pip install quicktok-v1)") from None
    enc = quicktok.get_encoding(name)
    n = max(enc.n_vocab, enc.max_token_value + 1)
    decode, is_special = enc.decode_single_token_bytes, enc.is_special_token
    decoded = []
    for i in range(n):
        try:
            decoded.append(b"" if is_special(i) else decode(i))
        except KeyError:  # an id with no token (cl100k_base has holes)
            decoded.append(b"")
    specials = {s: enc.encode_single_token(s) for s in enc.special_tokens_set}
    stops = sorted(t if isinstance(t, int) else specials[t] for t in QUICKTOK_STOP_TOKENS[name]
                   if isinstance(t, int) or t in specials)
    _QUICKTOK_VOCABS[name] = (decoded, stops)
    return decoded, stops

