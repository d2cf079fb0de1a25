"""`TokenizerInfo` from Hugging Face tokenizers, as xgrammar 0.2.8's `from_huggingface` builds it.

The readers here return the `TokenizerInfo` constructor's arguments (`TokenizerArguments`), which
`TokenizerInfo.from_huggingface` and `.from_huggingface_file` (xg2ref/tokenizer_info.py) build
the instance from; this module imports only the leaf xg2ref/vocab.py, not tokenizer_info.py.

`read_huggingface(tokenizer)` (for `from_huggingface`) takes the vocabulary from
`tokenizer.get_vocab()` (token i's spelling at index i; ids with no token are ``""``, hence
special) and keeps every token's text, added special tokens such as ``<|im_start|>`` included. The rest depends on the backend, tried
in xgrammar's order:

1. A fast tokenizer (transformers `PreTrainedTokenizerFast`): the vocab type and
   add_prefix_space come from the backend's tokenizer.json (`detect_metadata`): a ``ByteLevel``
   or ``ByteFallback`` decoder (alone or in a ``Sequence``); a ``Prepend("▁")`` normalizer or a
   ``Metaspace`` pre-tokenizer that prepends. When the vocabulary itself is clear evidence of
   another type (`vocab_type_from_vocab`: the 256 ``<0xHH>`` pieces, or GPT-2's byte alphabet),
   the vocabulary wins and add_prefix_space is read off the encoding of ``"a"``.
2. A tiktoken tokenizer (its `.tokenizer` is a `tiktoken.Encoding`, or its vocab file is named
   ``*tiktoken*``; only when tiktoken is installed): RAW, or BYTE_LEVEL when ``" "`` encodes to
   ``"Ġ"``; add_prefix_space is False.
3. A SentencePiece tokenizer (a `sentencepiece.SentencePieceProcessor` at `.sp_model`,
   `.tokenizer.sp_model` or `.tok`; only when sentencepiece is installed): BYTE_FALLBACK when
   ``"<0x0A>"`` is a token, else RAW; add_prefix_space is True.

Stop tokens: `stop_token_ids` when given, else the tokenizer's `eos_token_id`, else (SentencePiece
only) the model's `eos_id()`, else a warning and `TokenizerInfo`'s own detection by name.

Also here: `read_huggingface_file` (for `from_huggingface_file`), xg2ref's reader of a
tokenizer.json on disk. Without the tokenizer's config it cannot know the eos token, so it makes
added *special* tokens empty (special, or stop when named as in `HF_STOP_TOKEN_NAMES`) instead
of keeping their text, and when tokenizer.json has no decoder it also looks at the pre-tokenizer
and the model.

Extensions: `from_huggingface` also takes a bare `tokenizers.Tokenizer` (read like a fast
tokenizer). Departures: bad input raises `TokenizerError` (an empty vocabulary, a negative id,
an unsupported tokenizer), and a stop id past the vocabulary is an error, not dropped.
"""

from __future__ import annotations

import json
import numbers
import os
import warnings
from typing import Any, NamedTuple, Optional, Sequence, Union

from .exceptions import TokenizerError
from .vocab import BYTE_LEVEL_CHARSET, HF_STOP_TOKEN_NAMES, VocabType, decode_token

__all__ = ["TokenizerArguments", "detect_metadata", "detect_metadata_from_hf", "vocab_type_from_vocab",
           "read_huggingface", "read_huggingface_file"]

class TokenizerArguments(NamedTuple):
    """What a reader found: `TokenizerInfo(encoded_vocab, vocab_type, vocab_size=...,
    stop_token_ids=..., add_prefix_space=...)`, and the `name` the instance gets."""

    encoded_vocab: list
    vocab_type: VocabType
    vocab_size: int
    stop_token_ids: Optional[list]
    add_prefix_space: bool
    name: str


_NO_STOP_WARNING = ("When constructing TokenizerInfo from a huggingface tokenizer, stop_token_ids is "
                    "neither provided by user nor found from the tokenizer. It will be automatically detected.")


# ---- tokenizer.json analysis ------------------------------------------------------------------

def _typed(value: Any) -> Optional[str]:
    """value["type"] when value is an object with a string type, else None."""
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        return value["type"]
    return None


def _decoder_vocab_type(obj: dict) -> VocabType:
    """The first ByteLevel / ByteFallback decoder decides; a malformed decoder means RAW."""
    top = obj.get("decoder")
    kind = _typed(top)
    if kind is None:
        return VocabType.RAW
    decoders = top.get("decoders") if kind == "Sequence" else [top]
    if not isinstance(decoders, list):
        return VocabType.RAW
    for decoder in decoders:
        kind = _typed(decoder)
        if kind is None:  # xgrammar stops at the first entry it cannot read
            return VocabType.RAW
        if kind == "ByteLevel":
            return VocabType.BYTE_LEVEL
        if kind == "ByteFallback":
            return VocabType.BYTE_FALLBACK
    return VocabType.RAW


def _prepends_metaspace(obj: dict) -> bool:
    """A Prepend("▁") normalizer (alone or in a Sequence) or a top-level prepending Metaspace."""
    top = obj.get("normalizer")
    kind = _typed(top)
    normalizers = top.get("normalizers") if kind == "Sequence" else [top] if kind else None
    if isinstance(normalizers, list) and any(
            _typed(n) == "Prepend" and n.get("prepend") == "\u2581" for n in normalizers):
        return True
    pre = obj.get("pre_tokenizer")
    return _typed(pre) == "Metaspace" and pre.get("prepend_scheme") in ("always", "first")


def detect_metadata(obj: dict) -> tuple:
    """(VocabType, add_prefix_space) of a parsed tokenizer.json, by xgrammar 0.2.8's rules.

    Example: detect_metadata({"decoder": {"type": "ByteLevel"}}) == (VocabType.BYTE_LEVEL, False)
    """
    return _decoder_vocab_type(obj), _prepends_metaspace(obj)


def detect_metadata_from_hf(backend: Any) -> dict:
    """`TokenizerInfo._detect_metadata_from_hf`: {"vocab_type": VocabType, "add_prefix_space": bool}.

    `backend` is the backend tokenizer's JSON text (what xgrammar takes), or a fast tokenizer
    or `tokenizers.Tokenizer` whose JSON is read.
    """
    if not isinstance(backend, (str, bytes)):
        backend = _backend_str(backend)
    try:
        obj = json.loads(backend)
    except ValueError as err:
        raise TokenizerError(f"the backend tokenizer JSON is not valid JSON: {err}") from None
    if not isinstance(obj, dict):
        raise TokenizerError(f"the backend tokenizer JSON must be an object, got {type(obj).__name__}")
    vocab_type, add_prefix_space = detect_metadata(obj)
    return {"vocab_type": vocab_type, "add_prefix_space": add_prefix_space}


def vocab_type_from_vocab(vocab: dict) -> Optional[VocabType]:
    """The type a vocabulary spells itself in, or None when it is not clear.

    BYTE_FALLBACK when at least 128 of the 256 pieces ``<0xHH>`` are tokens; BYTE_LEVEL when at
    least 128 of GPT-2's 256 byte characters are tokens and 99% of the tokens use only them.
    """
    if sum(f"<0x{b:02X}>" in vocab for b in range(256)) >= 128:
        return VocabType.BYTE_FALLBACK
    if sum(c in vocab for c in BYTE_LEVEL_CHARSET) < 128:
        return None
    in_charset = sum(isinstance(t, str) and BYTE_LEVEL_CHARSET.issuperset(t) for t in vocab)
    return VocabType.BYTE_LEVEL if in_charset >= 0.99 * len(vocab) else None


def _prefix_space_by_encoding(tokenizer: Any, vtype: VocabType) -> bool:
    """Whether the first token of "a" starts with "▁" (BYTE_FALLBACK) or "Ġ" (otherwise)."""
    try:
        tokens = tokenizer.convert_ids_to_tokens(tokenizer.encode("a", add_special_tokens=False))
    except (AttributeError, TypeError, ValueError):
        return False
    if not tokens or not tokens[0]:
        return False
    return tokens[0].startswith("\u2581" if vtype == VocabType.BYTE_FALLBACK else "\u0120")


# ---- backends ---------------------------------------------------------------------------------

def _is_fast(tokenizer: Any) -> bool:
    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError:
        return False
    return isinstance(tokenizer, PreTrainedTokenizerFast)


def _is_tokenizers_object(tokenizer: Any) -> bool:
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return False
    return isinstance(tokenizer, Tokenizer)


def _is_tiktoken(tokenizer: Any) -> bool:
    try:
        import tiktoken
    except ImportError:
        return False
    if isinstance(getattr(tokenizer, "tokenizer", None), tiktoken.Encoding):
        return True
    names = getattr(tokenizer, "vocab_files_names", None)
    return isinstance(names, dict) and "tiktoken" in str(names.get("vocab_file", ""))


def _sentencepiece_model(tokenizer: Any) -> Any:
    """The tokenizer's `SentencePieceProcessor`, or None."""
    try:
        import sentencepiece
    except ImportError:
        return None
    processor = sentencepiece.SentencePieceProcessor
    inner = getattr(tokenizer, "tokenizer", None)
    for model in (getattr(tokenizer, "sp_model", None), getattr(inner, "sp_model", None),
                  getattr(tokenizer, "tok", None)):
        if isinstance(model, processor):
            return model
    return None


def _encodes_space_as_byte_level(tokenizer: Any) -> bool:
    """xgrammar's test for a byte-level tiktoken tokenizer: " " encodes to "Ġ" first."""
    try:
        ids = tokenizer.encode(" ")
        return len(ids) >= 1 and tokenizer.convert_ids_to_tokens(ids)[0] == "\u0120"
    except (AttributeError, TypeError, ValueError, KeyError) as err:
        raise TokenizerError(f"cannot encode ' ' with the tiktoken tokenizer {type(tokenizer).__name__}: "
                             f"{err!r}") from None


def _backend_str(tokenizer: Any) -> str:
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    if not hasattr(backend, "to_str"):
        raise TokenizerError(f"{type(tokenizer).__name__} has no backend tokenizer JSON (to_str)")
    return backend.to_str()


def _eos_stop(tokenizer: Any, sp_model: Any = None) -> Optional[list]:
    eos = getattr(tokenizer, "eos_token_id", None)
    if eos is not None:
        return [eos]
    if sp_model is not None and sp_model.eos_id() != -1:
        return [sp_model.eos_id()]
    warnings.warn(_NO_STOP_WARNING, stacklevel=4)
    return None


# ---- read_huggingface ---------------------------------------------------------------------------

_MAX_ID = 2 ** 31 - 1  # token ids are int32, as in xgrammar

def _encoded_vocab(vocab: dict, vocab_size: Optional[int]) -> tuple:
    """(encoded vocabulary of `vocab_size` entries, that size): token at its id, "" in the holes."""
    if not vocab:
        raise TokenizerError("the tokenizer's vocabulary (get_vocab()) is empty")
    if vocab_size is not None and (not isinstance(vocab_size, numbers.Integral) or isinstance(vocab_size, bool)
                                   or vocab_size < 0):
        raise TokenizerError(f"vocab_size must be a non-negative integer, got {vocab_size!r}")
    ids = list(vocab.values())
    if not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < _MAX_ID for i in ids):
        bad = next(i for i in ids if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < _MAX_ID)
        raise TokenizerError(f"the tokenizer's vocabulary maps a token to {bad!r}, not a token id")
    size = int(vocab_size or max(len(vocab), max(ids) + 1))  # 0 or None: the tokenizer's own size
    encoded: list = [""] * size
    for token, idx in vocab.items():
        if idx < size:
            encoded[idx] = token
    return encoded, size


def read_huggingface(tokenizer: Any, *, vocab_size: Optional[int] = None,
                     stop_token_ids: Union[None, int, Sequence[int]] = None) -> TokenizerArguments:
    """The arguments of `TokenizerInfo.from_huggingface` (see the module docstring)."""
    if isinstance(stop_token_ids, numbers.Integral):
        stop_token_ids = [stop_token_ids]
    elif stop_token_ids is not None:
        if not hasattr(stop_token_ids, "__iter__") or isinstance(stop_token_ids, (str, bytes)):
            raise TokenizerError(f"stop_token_ids must be an integer or a list of integers, got {stop_token_ids!r}")
        stop_token_ids = list(stop_token_ids)
        if not stop_token_ids:
            raise TokenizerError("stop_token_ids cannot be empty")
    try:
        vocab = dict(tokenizer.get_vocab())
    except AttributeError:
        raise TokenizerError(f"cannot get the vocabulary of {type(tokenizer).__name__}: from_huggingface "
                             "needs a tokenizer with a get_vocab method") from None
    encoded, size = _encoded_vocab(vocab, vocab_size)
    if _is_fast(tokenizer) or _is_tokenizers_object(tokenizer):
        if stop_token_ids is None:
            stop_token_ids = _eos_stop(tokenizer)
        meta = detect_metadata_from_hf(_backend_str(tokenizer))
        vocab_type, add_prefix_space = meta["vocab_type"], meta["add_prefix_space"]
        by_vocab = vocab_type_from_vocab(vocab)
        if by_vocab is not None and by_vocab != vocab_type:  # the vocabulary is the better witness
            vocab_type, add_prefix_space = by_vocab, _prefix_space_by_encoding(tokenizer, by_vocab)
    elif _is_tiktoken(tokenizer):
        if stop_token_ids is None:
            stop_token_ids = _eos_stop(tokenizer)
        by_space = _encodes_space_as_byte_level(tokenizer)
        vocab_type, add_prefix_space = (VocabType.BYTE_LEVEL if by_space else VocabType.RAW), False
    elif (sp_model := _sentencepiece_model(tokenizer)) is not None:
        if stop_token_ids is None:
            stop_token_ids = _eos_stop(tokenizer, sp_model)
        vocab_type = VocabType.BYTE_FALLBACK if "<0x0A>" in vocab else VocabType.RAW
        add_prefix_space = True
    else:
        raise TokenizerError(f"unsupported tokenizer type {type(tokenizer).__name__}: from_huggingface takes a "
                             "transformers fast tokenizer, a tiktoken or SentencePiece tokenizer, or a "
                             "tokenizers.Tokenizer")
    return TokenizerArguments(encoded, vocab_type, size, stop_token_ids, add_prefix_space,
                              str(getattr(tokenizer, "name_or_path", "") or "huggingface"))


# ---- read_huggingface_file ----------------------------------------------------------------------

def _file_vocab_type(obj: dict, vocab: dict) -> VocabType:
    """The vocab type of a tokenizer.json on disk.

    As `from_huggingface`, except that without a decoder object (where xgrammar takes RAW) a
    ByteLevel pre-tokenizer or model.byte_fallback decides.
    """
    by_vocab = vocab_type_from_vocab(vocab)
    if by_vocab is not None:
        return by_vocab
    if not isinstance(obj.get("decoder"), dict):
        pre = obj.get("pre_tokenizer")
        pres = pre.get("pretokenizers") if _typed(pre) == "Sequence" else [pre]
        if any(_typed(p) == "ByteLevel" for p in pres or []):
            return VocabType.BYTE_LEVEL
        if (obj.get("model") or {}).get("byte_fallback"):
            return VocabType.BYTE_FALLBACK
    return _decoder_vocab_type(obj)


def _model_vocab(obj: dict, source: str) -> dict:
    model = obj.get("model")
    if not isinstance(model, dict):
        raise TokenizerError(f"{source}: tokenizer.json has no model object")
    kind = model.get("type") or ("BPE" if "merges" in model else "unknown")
    if kind == "BPE" and isinstance(model.get("vocab"), dict):
        return dict(model["vocab"])
    if kind == "Unigram" and model.get("byte_fallback") and isinstance(model.get("vocab"), list):
        return {piece[0]: i for i, piece in enumerate(model["vocab"])}
    detail = " without byte_fallback" if kind == "Unigram" else ""
    raise TokenizerError(f"{source}: the {kind} model{detail} is not supported: its tokens cannot be "
                         "decoded to bytes (supported: BPE, byte-level, byte-fallback or raw; Unigram "
                         "with byte_fallback)")


def read_huggingface_file(path: Union[str, os.PathLike], *, vocab_size: Optional[int] = None,
                          stop_token_ids: Union[None, int, Sequence[int]] = None) -> TokenizerArguments:
    """The arguments of `TokenizerInfo.from_huggingface_file` (see the module docstring)."""
    source = os.fspath(path)
    try:
        with open(path, "rb") as f:
            obj = json.load(f)
    except FileNotFoundError:
        raise TokenizerError(f"tokenizer file not found: {source}") from None
    except (OSError, ValueError) as err:
        raise TokenizerError(f"cannot read tokenizer file {source}: {err}") from None
    if not isinstance(obj, dict):
        raise TokenizerError(f"{source}: tokenizer.json must hold a JSON object")
    added = [a for a in obj.get("added_tokens") or [] if isinstance(a, dict) and "id" in a]
    vocab = _model_vocab(obj, source)
    vocab.update({a["content"]: int(a["id"]) for a in added if isinstance(a.get("content"), str)})
    if isinstance(stop_token_ids, list) and not stop_token_ids:
        raise TokenizerError("stop_token_ids cannot be empty")
    vtype = _file_vocab_type(obj, vocab)
    add_prefix_space = _prepends_metaspace(obj)
    size = vocab_size or (max(len(vocab), max(vocab.values()) + 1) if vocab else 0)
    encoded: list = [""] * size
    for token, idx in vocab.items():
        if 0 <= idx < size:
            encoded[idx] = token
    special = sorted(i for i in {int(a["id"]) for a in added if a.get("special")} if 0 <= i < size)
    if stop_token_ids is None:  # named special tokens first: "</s>" may also be plain text
        def named(ids):
            return [i for i in ids
                    if encoded[i].startswith("<") and decode_token(encoded[i], vtype) in HF_STOP_TOKEN_NAMES]
        stop_token_ids = named(special) or named(range(size)) or None
    for i in special:
        encoded[i] = ""
    return TokenizerArguments(encoded, vtype, size, stop_token_ids, add_prefix_space, source)
