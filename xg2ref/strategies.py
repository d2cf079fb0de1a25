"""Random grammars, regexes, JSON schemas and strings for property tests and for `xg2ref fuzz`.

A user testing an engine against xg2ref wants the cases xg2ref's own tests draw. This module
is the public face of those generators, in two forms of each:

    hypothesis strategies (shrinkable, for @given)     seeded generators (random.Random in, value out)
    grammars() byte_strings() vocabularies()           random_grammar(rng)
    regexes()                                          random_regex(rng)
    json_schemas()                                     random_json_schema(rng)
    json_instances(schema)                             random_json_instance(schema, rng)
    strings_inside(ir)                                 sentences(ir, rng)
    strings_outside(ir)                                random_string_outside(ir, rng)
    mutate(data, rng) (a near miss: one byte inserted, deleted or replaced)

Method: the generators new here are written once, against the `random.Random` interface, and
each strategy is `st.randoms(use_true_random=False).map(generator)`, so hypothesis drives (and
shrinks) every choice the generator makes. `grammars`, `byte_strings`, `vocabularies`,
`sentences` and `mutate` hand over to `xg2ref.oracle.strategies` (the oracle's own property
tests); `random_grammar` is a separate, seeded generator of engine-neutral grammars.

What each one draws, so that every engine reads it:

    random_regex        literals and classes over a few letters ([a-c], [ab]), groups, |, *, +,
                        ?, {m,n}: the syntax xg2ref, xgrammar, llguidance and outlines all read
    random_json_schema  an object of 1-4 properties typed integer, number, string, boolean,
                        null, array or enum (an object inside, two levels at most), a subset
                        required, sometimes additionalProperties false, and sometimes
                        minimum/maximum, minLength/maxLength, minItems/maxItems
    random_grammar      xgrammar EBNF over a few letters: recursion, classes (negated and
                        non-ASCII ones too), repetitions; no empty alternative and no {0,0}
                        (xgrammar 0.2.8 rejects both), no token sets or lookaheads, and no
                        unproductive rule (xgrammar allows their dead ends by design)

hypothesis is a test dependency: it is imported when a strategy is built, and its absence is an
ImportError that says `pip install hypothesis`. The seeded generators need nothing beyond the
standard library, except `sentences`, `mutate` and `random_string_outside`, which live with the
hypothesis strategies.

What it leaves out: JSON schemas with $ref, anyOf, patterns or formats; regexes with escapes,
anchors or lookaround; instances of schemas outside what `random_json_schema` draws.
"""

from __future__ import annotations

import random
import string
from typing import Any, Optional

__all__ = ["byte_strings", "grammars", "json_instances", "json_schemas", "mutate", "random_grammar",
           "random_json_instance", "random_json_schema", "random_regex", "random_string_outside", "regexes",
           "sentences", "strings_inside", "strings_outside", "vocabularies"]


def _oracle_strategies():
    try:
        from .oracle import strategies
    except ImportError as err:
        if "hypothesis" not in str(err):
            raise
        raise ImportError(f"xg2ref.strategies needs hypothesis ({err}): pip install hypothesis") from None
    return strategies


def _st():
    try:
        from hypothesis import strategies as st
    except ImportError as err:
        raise ImportError(f"xg2ref.strategies needs hypothesis ({err}): pip install hypothesis") from None
    return st


def grammars(*args, **kwargs):
    """Strategy: random GrammarIR values (xg2ref.oracle.strategies.grammars: recursion, nullable
    and unproductive rules, optional lookaheads and token sets).

    Example: @given(grammars(max_rules=2)) def test(ir): Recognizer(ir)
    """
    return _oracle_strategies().grammars(*args, **kwargs)


def byte_strings(alphabet: bytes = b"abc", max_size: int = 6):
    """Strategy: byte strings of length 0..max_size over `alphabet` (now and then any byte).

    Example: @given(byte_strings(b"ab", 3)) def test(data): ...
    """
    return _oracle_strategies().byte_strings(alphabet, max_size)


def vocabularies(alphabet: bytes = b"abc", max_tokens: int = 12):
    """Strategy: (vocab, stop_ids, special_ids) of a small shuffled vocabulary.

    Example: @given(vocabularies()) def test(v): TokenizerInfo(v[0], stop_token_ids=v[1])
    """
    return _oracle_strategies().vocabularies(alphabet, max_tokens)


def sentences(ir, rng: random.Random, max_depth: int = 6, max_bytes: int = 256) -> Optional[bytes]:
    """A random sentence of `ir` (a GrammarIR or Grammar), None when its language is empty.

    Example: sentences(Grammar.from_ebnf('root ::= "a" root | "b"'), random.Random(1)) might be b"aab"
    """
    return _oracle_strategies().sentences(_ir(ir), rng, max_depth, max_bytes)


def mutate(data: bytes, rng: random.Random, alphabet: bytes = b"abc") -> bytes:
    """`data` with one byte inserted, deleted or replaced.

    Example: mutate(b"ab", random.Random(0)) might be b"acb"
    """
    return _oracle_strategies().mutate(data, rng, alphabet)


def _randoms():
    """A strategy of hypothesis-driven `random.Random`s (shrinkable, reproducible)."""
    return _st().randoms(note_method_calls=False, use_true_random=False)


# ---- regexes --------------------------------------------------------------------------------


def random_regex(rng: random.Random, alphabet: str = "abc", max_depth: int = 2) -> str:
    """A small regex over `alphabet` in the syntax every engine reads (module docstring).

    Example: random_regex(random.Random(4)) might be '(b|ca)*[a-c]{1,3}'
    """
    letters = sorted(set(alphabet))
    if not letters or any(not c.isalnum() for c in letters):
        raise ValueError("the alphabet must be a few letters or digits")
    return _regex_sequence(rng, letters, max_depth)


def _regex_sequence(rng, letters, depth) -> str:
    return "".join(_regex_item(rng, letters, depth) for _ in range(rng.randint(1, 3)))


def _regex_item(rng, letters, depth) -> str:
    kind = rng.randrange(8 if depth > 0 else 6)
    if kind <= 3:
        atom = rng.choice(letters)
    elif kind <= 5:
        atom = _regex_class(rng, letters)
    else:
        alternatives = [_regex_sequence(rng, letters, depth - 1) for _ in range(rng.randint(1, 3))]
        atom = "(" + "|".join(alternatives) + ")"
    if rng.random() < 0.4:
        atom += _regex_quantifier(rng)
    return atom


def _regex_class(rng, letters) -> str:
    lo = rng.randrange(len(letters))
    hi = rng.randrange(lo, len(letters))
    if rng.random() < 0.5 and hi > lo:
        return f"[{letters[lo]}-{letters[hi]}]"
    return "[" + "".join(sorted(set(rng.sample(letters, rng.randint(1, len(letters)))))) + "]"


def _regex_quantifier(rng) -> str:
    kind = rng.randrange(4)
    if kind < 3:
        return "*+?"[kind]
    lo = rng.randint(0, 2)
    return f"{{{lo},{rng.randint(max(lo, 1), lo + 2)}}}"


def regexes(alphabet: str = "abc", max_depth: int = 2):
    """Strategy: `random_regex` drawn by hypothesis.

    Example: @given(regexes()) def test(pattern): Grammar.from_regex(pattern)
    """
    return _randoms().map(lambda rng: random_regex(rng, alphabet, max_depth))


# ---- JSON schemas and their instances -------------------------------------------------------

_NAMES = ("a", "b", "c", "id", "x", "name")
_SCALARS = ("integer", "number", "string", "boolean", "null", "enum")
_ENUM_VALUES = ("x", "yz", 0, 7, -1, True, None, "a b")
_STRING_CHARS = string.ascii_letters[:6] + "xyz 019_-"


def random_json_schema(rng: random.Random, max_depth: int = 2, _depth: int = 1) -> dict:
    """A small object schema (module docstring); objects nest `max_depth` levels at most.

    Example: random_json_schema(random.Random(0)) might be {"type": "object", "properties":
             {"a": {"type": "integer", "minimum": 3}, "x": {"type": "array", "items":
             {"type": "boolean"}, "maxItems": 2}}, "required": ["a"]}
    """
    names = rng.sample(_NAMES, rng.randint(1, 4))
    properties = {name: _property_schema(rng, max_depth, _depth) for name in names}
    schema: dict = {"type": "object", "properties": properties}
    required = [name for name in names if rng.random() < 0.5]
    if required:
        schema["required"] = required
    if rng.random() < 0.3:
        schema["additionalProperties"] = False
    return schema


def _property_schema(rng, max_depth: int, depth: int) -> dict:
    kinds = list(_SCALARS) + ["array"] + (["object"] if depth < max_depth else [])
    kind = rng.choice(kinds)
    if kind == "object":
        return random_json_schema(rng, max_depth, depth + 1)
    if kind == "array":
        schema = {"type": "array", "items": _scalar_schema(rng, rng.choice(_SCALARS))}
        lo = _maybe_bounds(rng, schema, "minItems", "maxItems", 0, 3)
        if lo is not None and "maxItems" not in schema and rng.random() < 0.5:
            schema["maxItems"] = lo + rng.randint(0, 2)
        return schema
    return _scalar_schema(rng, kind)


def _scalar_schema(rng, kind: str) -> dict:
    if kind == "enum":
        return {"enum": rng.sample(_ENUM_VALUES, rng.randint(1, 3))}
    schema = {"type": kind}
    if kind == "integer":
        _maybe_bounds(rng, schema, "minimum", "maximum", -5, 20)
    elif kind == "number":
        _maybe_bounds(rng, schema, "minimum", "maximum", -3, 10, halves=True)
    elif kind == "string":
        _maybe_bounds(rng, schema, "minLength", "maxLength", 0, 4)
    return schema


def _maybe_bounds(rng, schema: dict, low_key: str, high_key: str, lo: int, hi: int, halves: bool = False):
    """Sometimes a lower bound, sometimes an upper one (never below the lower): the lower or None."""
    low = None
    if rng.random() < 0.4:
        low = rng.randint(lo, hi) + (0.5 if halves and rng.random() < 0.5 else 0)
        schema[low_key] = low
    if rng.random() < 0.4:
        base = lo if low is None else low
        schema[high_key] = base + rng.randint(0, 4) + (0.5 if halves and rng.random() < 0.5 else 0)
    return low


def json_schemas(max_depth: int = 2):
    """Strategy: `random_json_schema` drawn by hypothesis.

    Example: @given(json_schemas()) def test(schema): Grammar.from_json_schema(schema)
    """
    return _randoms().map(lambda rng: random_json_schema(rng, max_depth))


def random_json_instance(schema: Any, rng: random.Random) -> Any:
    """A JSON value valid under `schema` (the keywords `random_json_schema` uses; true or {} is
    any value, drawn as a small scalar). Properties come in the schema's order.

    Example: random_json_instance({"type": "integer", "minimum": 3, "maximum": 4}, rng) in (3, 4)
    """
    if schema is True or schema == {}:
        return rng.choice([0, "a", True, None])
    if not isinstance(schema, dict):
        raise ValueError(f"no instance of schema {schema!r}")
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = rng.choice(kind)
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "null"
    if kind == "object":
        required = set(schema.get("required", ()))
        props = schema.get("properties", {})
        return {name: random_json_instance(sub, rng) for name, sub in props.items()
                if name in required or rng.random() < 0.5}
    if kind == "array":
        lo = schema.get("minItems", 0)
        hi = schema.get("maxItems", lo + 3)
        return [random_json_instance(schema.get("items", {}), rng) for _ in range(rng.randint(lo, hi))]
    if kind in ("integer", "number"):
        return _number(schema, rng, kind == "integer")
    if kind == "string":
        lo = schema.get("minLength", 0)
        hi = schema.get("maxLength", lo + 4)
        return "".join(rng.choice(_STRING_CHARS) for _ in range(rng.randint(lo, hi)))
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    raise ValueError(f"no instance of type {kind!r}")


def _number(schema: dict, rng, integer: bool):
    import math

    lo, hi = schema.get("minimum"), schema.get("maximum")
    lo = -10 if lo is None else lo
    hi = lo + 30 if hi is None else hi
    if integer:
        return rng.randint(math.ceil(lo), math.floor(hi))
    value = round(rng.uniform(lo, hi), 2)
    return min(max(value, lo), hi) if value != int(value) else int(value)


def json_instances(schema: Any):
    """Strategy: JSON values valid under `schema` (see `random_json_instance`).

    Example: @given(json_instances(schema)) def test(value): jsonschema.validate(value, schema)
    """
    return _randoms().map(lambda rng: random_json_instance(schema, rng))


# ---- EBNF grammars for every engine ---------------------------------------------------------


def random_grammar(rng: random.Random, max_rules: int = 3, max_depth: int = 3, alphabet: bytes = b"abc"):
    """A random `GrammarIR` (root "root", rules r1, r2, ...) that every EBNF engine reads.

    Example: print_grammar(random_grammar(random.Random(2))) might be
             'root ::= "a" r1* | [b-c]\\nr1 ::= ("b" | root) [^a]?\\n'
    """
    from .grammar.ir import GrammarIR, Rule, referenced_rules
    from .grammar.passes import unproductive_rules

    letters = sorted(set(alphabet))
    for _ in range(10):  # productive grammars only, when ten draws give one
        names = ("root",) + tuple(f"r{k}" for k in range(1, rng.randint(1, max_rules)))
        bodies = {name: _grammar_expr(rng, names, letters, rng.randint(1, max_depth), "", name == "root")
                  for name in names}
        reached, todo = {"root"}, ["root"]  # the rules root reaches, in their order
        while todo:
            for ref in referenced_rules(bodies[todo.pop()]):
                if ref not in reached:
                    reached.add(ref)
                    todo.append(ref)
        ir = GrammarIR(tuple(Rule(n, bodies[n], None) for n in names if n in reached), root="root")
        if not unproductive_rules(ir):
            break
    return ir


def _grammar_expr(rng, names, letters, depth: int, parent: str, compound: bool = False):
    from .grammar.ir import ByteString, CharClass, Choice, Repeat, RuleRef, Sequence

    # `compound`: the root's own body, so that the language is more than one literal or class
    kinds = ([] if compound else ["bytes", "class", "ref"]) + ["seq", "seq", "choice", "choice", "repeat"] * (depth > 0)
    kind = rng.choice([k for k in kinds if k != parent])
    if kind == "bytes":
        return ByteString(bytes(rng.choice(letters) for _ in range(rng.randint(1, 2))))
    if kind == "ref":
        return RuleRef(rng.choice(names))
    if kind == "class":
        roll = rng.random()
        if roll < 0.1:
            return CharClass(((0xE9, 0xEB),))
        lo = rng.choice(letters)
        return CharClass(((lo, rng.choice([c for c in letters if c >= lo])),), negated=roll > 0.8)
    if kind == "repeat":
        lo, hi = rng.choice(((0, 1), (0, None), (1, None), (1, 2), (2, 3), (0, 2)))
        return Repeat(_grammar_expr(rng, names, letters, depth - 1, ""), lo, hi)
    items = tuple(_grammar_expr(rng, names, letters, depth - 1, kind) for _ in range(rng.randint(2, 3)))
    return Sequence(items) if kind == "seq" else Choice(items)


# ---- strings inside and outside a language ----------------------------------------------------


def _ir(grammar):
    return getattr(grammar, "ir", grammar)


def strings_inside(ir):
    """Strategy: sentences of `ir` (a GrammarIR or Grammar) by `sentences`; an empty language
    draws nothing (hypothesis reports the filter as unsatisfiable).

    Example: @given(strings_inside(g.ir)) def test(s): assert Recognizer(g.ir).is_sentence(s)
    """
    ir = _ir(ir)
    return _randoms().map(lambda rng: sentences(ir, rng)).filter(lambda s: s is not None)


def random_string_outside(ir, rng: random.Random, alphabet: bytes = b"abc", attempts: int = 8) -> Optional[bytes]:
    """A near miss of `ir`'s language: a sentence (or b"") mutated until the brute-force oracle
    rejects it as a sentence; None when `attempts` mutations all stayed inside.

    Example: random_string_outside(ir_of('root ::= "ab"'), random.Random(0)) might be b"acb"
    """
    from .oracle.recognizer import Recognizer

    ir = _ir(ir)
    recognizer = Recognizer(ir)
    data = sentences(ir, rng) or b""
    for _ in range(attempts):
        data = mutate(data, rng, alphabet)
        if not recognizer.is_sentence(data):
            return data
    return None


def strings_outside(ir, alphabet: bytes = b"abc"):
    """Strategy: strings the oracle rejects, each a few mutations from a sentence of `ir`.

    Example: @given(strings_outside(g.ir)) def test(s): assert not Recognizer(g.ir).is_sentence(s)
    """
    ir = _ir(ir)
    return _randoms().map(lambda rng: random_string_outside(ir, rng, alphabet)).filter(lambda s: s is not None)
