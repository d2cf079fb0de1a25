"""`TokenizerInfo.serialize_json` / `deserialize_json`: xgrammar 0.2.8's JSON layout, version "v16".

The layout is xgrammar's, field for field, so that each library reads the other's text:

    {"vocab_type":1,"vocab_size":7,"add_prefix_space":true,"stop_token_ids":[3],
     "special_token_ids":[2,5,6],"decoded_vocab":["a","A","","</s>","b c"],
     "sorted_decoded_vocab":[[1,"A"],[0,"a"],[4,"b c"]],"trie_subtree_nodes_range":[1,2,3],
     "__VERSION__":"v16"}

Token bytes are written one character per byte (the character with that code point: b"\\xe6"
is "\\u00e6"), so any bytes round-trip. xgrammar's writer escapes DEL (U+007F) and Python's does
not; `serialize` does, so that for the same vocabulary the two texts are equal. xg2ref adds an
optional "name" (xgrammar ignores fields it does not know).

xgrammar trusts what it reads; `deserialize` checks it: a missing, unknown or mistyped field, a
stop id out of range, special ids, a sorted vocabulary or trie ranges other than those the
vocabulary implies are a `DeserializeFormatError`; a missing or other "__VERSION__" is a
`DeserializeVersionError` (checked first, as xgrammar does); text that is not JSON is an
`InvalidJSONError`.

This module imports only the leaf xg2ref/vocab.py: `serialize` reads a `TokenizerInfo` through
its public properties, and `deserialize` is handed the function that builds one
(`TokenizerInfo._from_decoded`), so that tokenizer_info.py alone imports this module.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from .exceptions import DeserializeFormatError, DeserializeVersionError, InvalidJSONError
from .vocab import SERIALIZATION_VERSION, VocabType

__all__ = ["serialize", "deserialize", "is_json_kind", "trie_subtree_ranges"]

_SERIALIZED_KINDS = {  # field -> the kind `is_json_kind` checks
    "vocab_type": "an integer", "vocab_size": "an integer", "add_prefix_space": "a boolean",
    "stop_token_ids": "a list of integers", "special_token_ids": "a list of integers",
    "decoded_vocab": "a list of strings", "sorted_decoded_vocab": "a list of [integer, string] pairs",
    "trie_subtree_nodes_range": "a list of integers"}


def is_json_kind(value: Any, kind: str) -> bool:
    """Whether a parsed JSON value is of `kind`, one of the phrases in `_SERIALIZED_KINDS`
    (booleans are not integers).

    Example: is_json_kind([[1, "a"]], "a list of [integer, string] pairs") is True
    """
    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "an integer":
        return is_int(value)
    if kind == "a boolean":
        return isinstance(value, bool)
    if not isinstance(value, list):
        return False
    if kind == "a list of integers":
        return all(map(is_int, value))
    if kind == "a list of strings":
        return all(isinstance(v, str) for v in value)
    return all(isinstance(p, list) and len(p) == 2 and is_int(p[0]) and isinstance(p[1], str) for p in value)


def trie_subtree_ranges(sorted_tokens: list) -> list:
    """xgrammar's `trie_subtree_nodes_range`: token k's subtree is sorted tokens [k, range[k]).

    A token stays open while the following tokens contain it; xgrammar tests containment
    anywhere in the token (`find`), not only as a prefix, and so does this, so that the two
    write the same ranges: for the sorted ["a", "ba"] both give [2, 2].
    """
    ranges = [0] * len(sorted_tokens)
    stack: list = []  # indices of the open tokens
    for k, token in enumerate(sorted_tokens):
        while stack and sorted_tokens[stack[-1]] not in token:
            ranges[stack.pop()] = k
        stack.append(k)
    for k in stack:
        ranges[k] = len(sorted_tokens)
    return ranges


def _latin1_bytes(text: str, where: str) -> bytes:
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        raise DeserializeFormatError(f"{where} holds a character above U+00FF; each character of a "
                                     "serialized token stands for one byte") from None


def serialize(info) -> str:
    """`info.serialize_json()` (see the module docstring)."""
    decoded = info.decoded_vocab
    sorted_ids = info.vocab_arrays().sorted_ids.tolist()
    sorted_tokens = [decoded[i] for i in sorted_ids]
    obj = {"vocab_type": int(info.vocab_type), "vocab_size": info.vocab_size,
           "add_prefix_space": info.add_prefix_space, "stop_token_ids": info.stop_token_ids,
           "special_token_ids": info.special_token_ids, "decoded_vocab": [t.decode("latin-1") for t in decoded],
           "sorted_decoded_vocab": [[i, t.decode("latin-1")] for i, t in zip(sorted_ids, sorted_tokens)],
           "trie_subtree_nodes_range": trie_subtree_ranges(sorted_tokens)}
    if info.name is not None:
        obj["name"] = info.name
    obj["__VERSION__"] = SERIALIZATION_VERSION
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).replace("\x7f", "\\u007f")


def deserialize(text: Any, from_decoded: Callable[..., Any]):
    """`TokenizerInfo.deserialize_json(text)` (see the module docstring). `from_decoded(decoded,
    vocab_type, vocab_size, stop_ids, add_prefix_space, name)` builds the `TokenizerInfo` of an
    already decoded vocabulary (`TokenizerInfo._from_decoded`)."""
    if not isinstance(text, str):
        raise DeserializeFormatError(f"deserialize_json takes a str, got {type(text).__name__}")
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise InvalidJSONError(f"$: not valid JSON: {err}") from None
    if not isinstance(obj, dict):
        raise DeserializeFormatError(f"a serialized TokenizerInfo is a JSON object, got {type(obj).__name__}")
    if "__VERSION__" not in obj:
        raise DeserializeVersionError("the serialized TokenizerInfo has no __VERSION__ field")
    if obj["__VERSION__"] != SERIALIZATION_VERSION:
        raise DeserializeVersionError(f"the serialized TokenizerInfo has version {obj['__VERSION__']!r}; "
                                      f"this code reads {SERIALIZATION_VERSION!r}")
    unknown = sorted(set(obj) - set(_SERIALIZED_KINDS) - {"name", "__VERSION__"})
    if unknown:
        raise DeserializeFormatError(f"unknown field {unknown[0]!r} in a serialized TokenizerInfo")
    for key, kind in _SERIALIZED_KINDS.items():
        if key not in obj:
            raise DeserializeFormatError(f"the serialized TokenizerInfo has no {key!r} field")
        if not is_json_kind(obj[key], kind):
            raise DeserializeFormatError(f"{key!r} must be {kind}")
    name = obj.get("name")
    if name is not None and not isinstance(name, str):
        raise DeserializeFormatError(f"'name' must be a string, got {name!r}")
    decoded = [_latin1_bytes(t, f"decoded_vocab[{i}]") for i, t in enumerate(obj["decoded_vocab"])]
    n, size, stops = len(decoded), obj["vocab_size"], obj["stop_token_ids"]
    if obj["vocab_type"] not in (0, 1, 2):
        raise DeserializeFormatError(f"'vocab_type' must be 0, 1 or 2, got {obj['vocab_type']}")
    if size < n:
        raise DeserializeFormatError(f"'vocab_size' ({size}) is less than the {n} decoded tokens")
    if size - n > len(obj["special_token_ids"]):  # checked before the padding ids are listed
        raise DeserializeFormatError(f"'special_token_ids' must list the {size - n} padding ids {n}..{size - 1}")
    if stops != sorted(set(stops)) or any(not 0 <= t < n for t in stops):
        raise DeserializeFormatError(f"'stop_token_ids' must be increasing ids in [0, {n}), got {stops}")
    info = from_decoded(decoded, VocabType(obj["vocab_type"]), size, list(stops), obj["add_prefix_space"], name)
    special = info.special_token_ids
    if obj["special_token_ids"] != special:
        raise DeserializeFormatError("'special_token_ids' must be the ids of the empty non-stop tokens and "
                                     f"of the padding: {special}, got {obj['special_token_ids']}")
    pairs = obj["sorted_decoded_vocab"]
    sorted_tokens = [_latin1_bytes(t, f"sorted_decoded_vocab[{k}]") for k, (_, t) in enumerate(pairs)]
    regular = info.vocab_arrays().sorted_ids.tolist()
    if (sorted(i for i, _ in pairs) != sorted(regular) or sorted_tokens != sorted(sorted_tokens)
            or any(decoded[i] != t for (i, _), t in zip(pairs, sorted_tokens))):
        raise DeserializeFormatError("'sorted_decoded_vocab' must list every regular token (neither special "
                                     "nor stop) once as [id, decoded token], sorted by bytes")
    if obj["trie_subtree_nodes_range"] != trie_subtree_ranges(sorted_tokens):
        raise DeserializeFormatError("'trie_subtree_nodes_range' does not match 'sorted_decoded_vocab'")
    return info
