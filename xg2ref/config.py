"""Process-wide settings, as in xgrammar 0.2.8's `xgrammar.config`: the nesting limit on JSON
inputs and the serialization version.

The recursion depth bounds how deeply the JSON that front ends read may nest: JSON Schemas
(text, dicts or pydantic models) and structural tags. A document nested deeper is refused
with InvalidJSONError (for a schema) or InvalidStructuralTagError (for a structural tag)
before any conversion starts, so a hostile input never reaches Python's own recursion limit.
The limit is, in order of precedence:

    set_max_recursion_depth(n) was called            |-  n
    XGRAMMAR_MAX_RECURSION_DEPTH is an integer in [1, 1,000,000]  |-  that integer
    otherwise                                        |-  DEFAULT_MAX_RECURSION_DEPTH (10,000)

`max_recursion_depth(n)` sets it for the duration of a `with` block.

JSON Schema keywords xg2ref cannot enforce exactly in a grammar (`uniqueItems` over strings,
a `not` whose complement is not written...: specs/05, "Not enforced") make the conversion raise
JSONSchemaNotExactError, naming each keyword and its path, unless the caller opts into a
superset of the language: `approximate=True` on the JSON Schema front ends, or for the whole
process (scripts written for xgrammar, structural tags):

    approximate=True or False was passed                    |-  that
    set_json_schema_approximate(flag) was called            |-  flag
    XG2REF_JSON_SCHEMA_APPROXIMATE is 1 / true / yes        |-  True
    otherwise                                               |-  False (refuse)

Formats whose exact grammar costs seconds to build (a leap second's 1,440 local times, an IPv6
literal inside every email and URI host, a host name's 253-character whole) are left out of the
default grammars, narrower or wider as specs/05 lists; `exact_formats=True` on the JSON Schema
front ends, or for the whole process, builds them exactly, and makes what a format's grammar still
lets in (an A-label's Punycode...) an approximation, refused unless `approximate`
(xg2ref/frontends/json_schema/formats.py):

    exact_formats=True or False was passed                  |-  that
    set_json_schema_exact_formats(flag) was called          |-  flag
    XG2REF_JSON_SCHEMA_EXACT_FORMATS is 1 / true / yes      |-  True
    otherwise                                               |-  False

The serialization version names the format `serialize_json` writes for `Grammar` and
`CompiledGrammar` (xg2ref/serialization.py); `deserialize_json` refuses another one with
DeserializeVersionError. `TokenizerInfo.serialize_json` writes xgrammar 0.2.8's own layout under
its own version tag instead (xg2ref/tokenizer_json.py), so that each package reads the other's
tokenizer files; a grammar's JSON is xg2ref's alone, and carries xg2ref's tag.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Any, Iterator, Optional

DEFAULT_MAX_RECURSION_DEPTH = 10_000
MAX_RECURSION_DEPTH_ENV = "XGRAMMAR_MAX_RECURSION_DEPTH"
_ENV_CEILING = 1_000_000
SERIALIZATION_VERSION = "xg2ref-v1"

APPROXIMATE_ENV = "XG2REF_JSON_SCHEMA_APPROXIMATE"
EXACT_FORMATS_ENV = "XG2REF_JSON_SCHEMA_EXACT_FORMATS"

_lock = threading.Lock()
_depth: Optional[int] = None  # set by set_max_recursion_depth; None: environment or default
_flags: dict = {}  # "approximate" / "exact_formats" -> the process-wide setting; missing: environment
_FLAG_ENV = {"approximate": APPROXIMATE_ENV, "exact_formats": EXACT_FORMATS_ENV}


def get_max_recursion_depth() -> int:
    """The nesting limit on JSON inputs, shared by the whole process (see the module docstring)."""
    with _lock:
        if _depth is not None:
            return _depth
    text = os.environ.get(MAX_RECURSION_DEPTH_ENV, "").strip()
    try:
        value = int(text)
    except ValueError:
        return DEFAULT_MAX_RECURSION_DEPTH
    return value if 1 <= value <= _ENV_CEILING else DEFAULT_MAX_RECURSION_DEPTH


def set_max_recursion_depth(max_recursion_depth: int) -> None:
    """Set the nesting limit on JSON inputs for the whole process (thread-safe)."""
    global _depth
    if isinstance(max_recursion_depth, bool) or not isinstance(max_recursion_depth, int):
        raise TypeError(f"max_recursion_depth must be an int, got {type(max_recursion_depth).__name__}")
    if max_recursion_depth < 1:
        raise ValueError(f"max_recursion_depth must be >= 1, got {max_recursion_depth}")
    with _lock:
        _depth = max_recursion_depth


@contextmanager
def max_recursion_depth(temp_depth: int) -> Iterator[None]:
    """Within the `with` block the nesting limit is `temp_depth`; the previous one comes back after."""
    global _depth
    with _lock:
        previous = _depth
    set_max_recursion_depth(temp_depth)
    try:
        yield
    finally:
        with _lock:
            _depth = previous


def get_json_schema_approximate(approximate: Optional[bool] = None) -> bool:
    """Whether a JSON Schema conversion may read a keyword it cannot enforce as a superset
    (`approximate` when it is a bool; otherwise the process-wide setting: module docstring)."""
    return _flag("approximate", approximate)


def get_json_schema_exact_formats(exact_formats: Optional[bool] = None) -> bool:
    """Whether a JSON Schema conversion builds the formats' costly exact grammars
    (`exact_formats` when it is a bool; otherwise the process-wide setting: module docstring)."""
    return _flag("exact_formats", exact_formats)


def _flag(name: str, value: Optional[bool]) -> bool:
    if value is not None:
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool or None, got {type(value).__name__}")
        return value
    setting = _flags.get(name)  # (one read of a dict entry is atomic: no lock on this path, once per compile)
    if setting is not None:
        return setting
    text = _environment(_FLAG_ENV[name])
    return bool(text) and text.strip().lower() in ("1", "true", "yes")


def _environment(name: str) -> Optional[str]:
    """`os.environ.get(name)`, read from the mapping's own table when it has one: a missing key
    costs `os.environ.get` an exception, about a microsecond on every compile that asks."""
    try:
        key = _ENCODED.get(name)
        if key is None:
            key = _ENCODED[name] = os.environ.encodekey(name)  # (CPython's os._Environ)
        raw = os.environ._data.get(key)
        return None if raw is None else os.environ.decodevalue(raw)
    except AttributeError:
        return os.environ.get(name)


_ENCODED: dict = {}  # variable name -> its key in os.environ's table


def set_json_schema_approximate(approximate: Optional[bool]) -> None:
    """Let every JSON Schema conversion of the process read the keywords it cannot enforce as
    supersets (True), refuse them (False), or follow the environment again (None)."""
    _set_flag("approximate", approximate)


def set_json_schema_exact_formats(exact_formats: Optional[bool]) -> None:
    """Let every JSON Schema conversion of the process build the formats' costly exact grammars
    (True), leave them out (False), or follow the environment again (None)."""
    _set_flag("exact_formats", exact_formats)


def _set_flag(name: str, value: Optional[bool]) -> None:
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool or None, got {type(value).__name__}")
    with _lock:
        if value is None:
            _flags.pop(name, None)
        else:
            _flags[name] = value


@contextmanager
def _flag_during(name: str, value: Optional[bool]) -> Iterator[None]:
    with _lock:
        previous = _flags.get(name)
    _set_flag(name, value)
    try:
        yield
    finally:
        _set_flag(name, previous)


def json_schema_approximate(approximate: Optional[bool]):
    """Within the `with` block, `set_json_schema_approximate(approximate)`; the previous setting
    comes back after."""
    return _flag_during("approximate", approximate)


def json_schema_exact_formats(exact_formats: Optional[bool]):
    """Within the `with` block, `set_json_schema_exact_formats(exact_formats)`; the previous
    setting comes back after."""
    return _flag_during("exact_formats", exact_formats)


def get_serialization_version() -> str:
    """The version tag `serialize_json` writes and `deserialize_json` requires."""
    return SERIALIZATION_VERSION


def json_depth(value: Any, limit: int) -> int:
    """How deeply `value` (parsed JSON: dicts, lists, scalars) nests, counting each dict or list
    as one level; the walk stops once it passes `limit` and returns limit + 1 then. Iterative,
    so any depth is measured without recursion.

    Example: json_depth({"a": [1, {"b": 2}]}, 100) == 3
    """
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return limit + 1
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check_json_depth(value: Any, error: type, what: str) -> None:
    """Raise `error` when `value` nests deeper than `get_max_recursion_depth()`."""
    limit = get_max_recursion_depth()
    if json_depth(value, limit) > limit:
        raise error(f"{what} nests deeper than the maximum recursion depth {limit} "
                    f"(xg2ref.set_max_recursion_depth or {MAX_RECURSION_DEPTH_ENV} raise it)")
