"""`serialize_json` / `deserialize_json` for `Grammar` and `CompiledGrammar` (xgrammar 0.2.8's API).

The format is xg2ref's own, JSON with a `__VERSION__` field (`config.get_serialization_version()`):

    Grammar          {"__VERSION__": v, "kind": "Grammar", "root": name, "rules": [rule, ...]}
    CompiledGrammar  {"__VERSION__": v, "kind": "CompiledGrammar", "grammar": <a Grammar's object>,
                      "tokenizer_metadata": {"vocab_type", "vocab_size", "add_prefix_space",
                                             "stop_token_ids"}}

A grammar is its IR written node by node: each IR dataclass (xg2ref/grammar/ir.py) becomes an
object `{"node": class name, field: value, ...}`, bytes become `{"hex": "..."}` and tuples
become lists. So the text holds the IR exactly, intrinsics and rule options included, whatever
the EBNF printer can show.

A compiled grammar is written without its tokenizer and without its FSMs or mask-cache entries:
`CompiledGrammar.deserialize_json(text, tokenizer_info)` compiles the grammar again against
`tokenizer_info`, after checking that the tokenizer's metadata is the one it was compiled
with. Compiling is deterministic and masks are the same in every compiler configuration, so the
result matches the serialized grammar exactly; what it costs is the compile time.

Errors, as in xgrammar: text that is not JSON raises InvalidJSONError; a missing or different
`__VERSION__`, DeserializeVersionError; anything else malformed, or a tokenizer whose metadata
differs, DeserializeFormatError.

This module works on the IR: it reads a `GrammarIR` back, and `Grammar.deserialize_json` /
`CompiledGrammar.deserialize_json` (xg2ref/grammar/grammar.py, xg2ref/compiler.py) wrap and
compile it, handing in `ir_signature` for the check of every node; so it imports neither.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable

from .config import get_serialization_version
from .exceptions import DeserializeFormatError, DeserializeVersionError, InvalidJSONError
from .grammar import ir as IR

VERSION_FIELD = "__VERSION__"
TOKENIZER_METADATA = ("vocab_type", "vocab_size", "add_prefix_space", "stop_token_ids")

# IR classes that may appear in serialized text, by name (SubGrammar stubs never do: a grammar
# is written as its whole IR); the registered intrinsics join them (`_node_class`)
_NODES = {name: cls for name, cls in vars(IR).items()
          if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == IR.__name__
          and name != "SubGrammar"}


def _node_class(name: str):
    """The IR class or registered intrinsic (grammar/intrinsic.py) serialized under `name`."""
    from . import intrinsics  # noqa: F401  (the built-ins register on import)
    from .grammar.intrinsic import REGISTRY, Intrinsic

    if name in _NODES:
        return _NODES[name]
    for cls in REGISTRY.values():
        if cls.__name__ == name and issubclass(cls, Intrinsic) and dataclasses.is_dataclass(cls):
            return cls
    return None


def _encode(value: Any) -> Any:
    """A JSON-ready form of an IR value (iterative over tuples would buy nothing: the IR is a
    tree the converters already built by recursion)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if _node_class(name) is not type(value):
            raise TypeError(f"{name} cannot be serialized")
        out = {"node": name}
        for f in dataclasses.fields(value):
            out[f.name] = _encode(getattr(value, f.name))
        return out
    if isinstance(value, bytes):
        return {"hex": value.hex()}
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"a grammar holds a value of type {type(value).__name__} that cannot be serialized")


def _decode(value: Any, where: str) -> Any:
    if isinstance(value, list):
        return tuple(_decode(v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(value, dict):
        if set(value) == {"hex"}:
            try:
                return bytes.fromhex(value["hex"])
            except (TypeError, ValueError):
                raise DeserializeFormatError(f"{where}: bad hex bytes {value['hex']!r}") from None
        name = value.get("node")
        cls = _node_class(name) if isinstance(name, str) else None
        if cls is None:
            raise DeserializeFormatError(f"{where}: unknown grammar node {name!r}")
        fields = {k: _decode(v, f"{where}.{k}") for k, v in value.items() if k != "node"}
        try:
            return cls(**fields)
        except TypeError as err:
            raise DeserializeFormatError(f"{where}: malformed {name}: {err}") from None
    return value


def grammar_to_object(grammar) -> dict:
    ir = grammar.ir
    return {"kind": "Grammar", "root": ir.root, "rules": [_encode(rule) for rule in ir.rules]}


def grammar_ir_from_object(obj: Any, signature: Callable[[IR.GrammarIR], tuple], where: str = "$") -> IR.GrammarIR:
    """The IR of a serialized Grammar's object. `signature` is `grammar.ir_signature`: with the
    printer it reads every field of every node, so that a malformed one is found here."""
    from .grammar.printer import print_grammar

    if not isinstance(obj, dict) or obj.get("kind") != "Grammar":
        raise DeserializeFormatError(f"{where}: not a serialized Grammar (kind {_kind(obj)!r})")
    rules, root = obj.get("rules"), obj.get("root")
    if not isinstance(rules, list) or not isinstance(root, str):
        raise DeserializeFormatError(f"{where}: a Grammar needs a list of rules and a root name")
    decoded = _decode(rules, f"{where}.rules")
    if not all(isinstance(rule, IR.Rule) for rule in decoded):
        raise DeserializeFormatError(f"{where}.rules: every item must be a Rule")
    names = {rule.name for rule in decoded}
    if root not in names:
        raise DeserializeFormatError(f"{where}: the root rule {root!r} is not among the rules")
    for rule in decoded:
        for node in (rule.body,) if rule.lookahead is None else (rule.body, rule.lookahead):
            missing = [n for n in IR.referenced_rules(node) if n not in names]
            if missing:
                raise DeserializeFormatError(f"{where}: rule {rule.name!r} refers to undefined {missing[0]!r}")
    ir = IR.GrammarIR(decoded, root=root)
    try:  # every node of the right shape: the signature and the printer read each field
        signature(ir)
        print_grammar(ir)
    except Exception as err:  # noqa: BLE001  (any failure here means malformed fields)
        raise DeserializeFormatError(f"{where}: malformed grammar: {err}") from None
    return ir


def _kind(obj: Any) -> Any:
    return obj.get("kind") if isinstance(obj, dict) else type(obj).__name__


def _load(json_string: Any, kind: str) -> dict:
    """The top object of serialized text, its version checked."""
    if isinstance(json_string, bytes):
        json_string = json_string.decode("utf-8", errors="replace")
    if not isinstance(json_string, str):
        raise TypeError(f"deserialize_json needs a JSON string, got {type(json_string).__name__}")
    try:
        obj = json.loads(json_string)
    except json.JSONDecodeError as err:
        raise InvalidJSONError(f"$: not valid JSON: {err}") from None
    except RecursionError:
        raise InvalidJSONError("$: the JSON nests too deeply to be read") from None
    if not isinstance(obj, dict):
        raise DeserializeFormatError(f"a serialized {kind} is a JSON object, got {type(obj).__name__}")
    if VERSION_FIELD not in obj:
        raise DeserializeVersionError(f"missing {VERSION_FIELD} in a serialized {kind}")
    if obj[VERSION_FIELD] != get_serialization_version():
        raise DeserializeVersionError(f"serialized {kind} has version {obj[VERSION_FIELD]!r}; this xg2ref reads "
                                      f"{get_serialization_version()!r}")
    return obj


def serialize_grammar(grammar) -> str:
    """`Grammar.serialize_json` (the module docstring)."""
    obj = grammar_to_object(grammar)
    obj[VERSION_FIELD] = get_serialization_version()
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def deserialize_grammar_ir(json_string: str, signature: Callable[[IR.GrammarIR], tuple]) -> IR.GrammarIR:
    """The IR `Grammar.deserialize_json` wraps (`signature`: `grammar.ir_signature`)."""
    return grammar_ir_from_object(_load(json_string, "Grammar"), signature)


def tokenizer_metadata(tokenizer_info) -> dict:
    """What a compiled grammar remembers of its tokenizer, to check on deserialization."""
    return {"vocab_type": int(tokenizer_info.vocab_type), "vocab_size": int(tokenizer_info.vocab_size),
            "add_prefix_space": bool(tokenizer_info.add_prefix_space),
            "stop_token_ids": [int(t) for t in tokenizer_info.stop_token_ids]}


def serialize_compiled(compiled) -> str:
    """`CompiledGrammar.serialize_json` (the module docstring)."""
    obj = {"kind": "CompiledGrammar", "grammar": grammar_to_object(compiled.grammar),
           "tokenizer_metadata": tokenizer_metadata(compiled.tokenizer_info),
           VERSION_FIELD: get_serialization_version()}
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def deserialize_compiled_ir(json_string: str, tokenizer_info,
                            signature: Callable[[IR.GrammarIR], tuple]) -> IR.GrammarIR:
    """The grammar IR that `CompiledGrammar.deserialize_json` compiles again for `tokenizer_info`,
    after checking that the tokenizer's metadata is the one saved (`signature`:
    `grammar.ir_signature`)."""
    from .tokenizer_info import TokenizerInfo

    if not isinstance(tokenizer_info, TokenizerInfo):
        raise TypeError(f"CompiledGrammar.deserialize_json needs a TokenizerInfo, got {type(tokenizer_info).__name__}")
    obj = _load(json_string, "CompiledGrammar")
    if obj.get("kind") != "CompiledGrammar":
        raise DeserializeFormatError(f"not a serialized CompiledGrammar (kind {_kind(obj)!r})")
    saved = obj.get("tokenizer_metadata")
    if not isinstance(saved, dict) or set(saved) != set(TOKENIZER_METADATA):
        raise DeserializeFormatError(f"a serialized CompiledGrammar needs tokenizer_metadata with {TOKENIZER_METADATA}")
    ours = tokenizer_metadata(tokenizer_info)
    for key in TOKENIZER_METADATA:
        if saved[key] != ours[key]:
            raise DeserializeFormatError(f"the grammar was compiled for a tokenizer with {key}={saved[key]!r}, "
                                         f"this one has {ours[key]!r}")
    return grammar_ir_from_object(obj.get("grammar"), signature, "$.grammar")
