"""Shrinking one disagreement of `xg2ref fuzz` to a small case, and naming its class.

A disagreement (xg2ref/tools/diff/user.py) is one question an engine answers differently from the
brute-force oracle. `Asker` puts such a `Question` to one engine and to the oracle on any
variant of the case; the shrinkers keep a variant while the engine still gives its original
answer and the oracle the other one:

    prefix    is `data` a prefix of a sentence?     engine: reads `data` byte by byte, all accepted
    sentence  is `data` a whole sentence?           engine: reads it byte by byte, then is_completed
    whole     is `data` a prefix (all or nothing)?  engine: one accept_bytes(data)
    token     is token t allowed after `data`?      engine: accept_bytes(data), then its mask at t
    accept    is token t accepted after `data`?     engine: accept_bytes(data), then accept_token(t)

(the oracle answers the prefix questions with `Recognizer.is_prefix`, the sentence question
with `is_sentence`, the token questions with `OracleMatcher.token_allowed` after the same bytes.
A token question whose bytes either side refuses is no question, and neither is one whose bytes
the adapter of an engine that reads tokens only cannot spell: neither counts).

Method. Input bytes shrink by delta debugging (`shrink_bytes`): remove chunks of halving size
while the question still differs; the last round removes single bytes, so the result is
1-minimal (dropping any one byte loses the difference). The case shrinks greedily, one
candidate at a time, biggest deletions first, keeping each that still differs:

    json_schema   delete half the entries of a big object or list; then one keyword, one
                  property, or one element of a list (a `required` name, an `enum` value, an
                  `anyOf` branch)
    regex         delete a chunk of the pattern's text, halves down to single characters
                  (a variant some engine cannot parse fails)
    ebnf          drop a rule; replace a choice by one alternative or drop one; drop an item of a
                  sequence; replace a repetition by its body; cut a literal to its first byte

`finding_class` names a shrunk finding for deduplication: a known by-design class first
(xg2ref/tools/diff/classes.py `by_design`, which may ask the engine again through the `Asker`).
Else the class is the engine, the case kind, the question, over- or under-acceptance, the
class of the byte or token asked about, and for JSON schemas the constraint keywords and
scalar types left in the shrunk schema (`keywords`).

What it leaves out: shrinking rollback questions (they are kept as found); simplifying bytes
(only deleting them); shrinking a schema's numbers or strings (only deleting keywords);
by-design classes other than diff_classes.py's.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Optional

from ...suite import compile_case
from ..diff.classes import keywords
from ...oracle.engines import OracleMatcher
from ...oracle.recognizer import MAX_INPUT_BYTES
from ..user_cases import case_from_text

VERDICT_QUESTIONS = ("prefix", "sentence", "whole")
MASK_QUESTIONS = ("token", "accept")
_CACHE_LIMIT = 64


@dataclass(frozen=True)
class Question:
    """One question of the module docstring: `data` is the input (verdicts) or the prefix (tokens)."""

    kind: str
    data: bytes
    token_id: Optional[int] = None


def case_source(kind: str, spec: Any) -> str:
    """The source text of a case: the JSON text of a schema, a regex or EBNF text as is."""
    return json.dumps(spec) if kind == "json_schema" else spec


class Asker:
    """One engine and the oracle over one vocabulary; compiled variants are remembered by source.
    `options` are the case's front-end options, `root` an EBNF case's root rule."""

    def __init__(self, engine, info, options: Optional[dict] = None, root: str = "root"):
        self.engine, self.info = engine, info
        self.options, self.root = dict(options or {}), root
        self._matchers: dict = {}
        self._oracles: dict = {}
        self._deeper = None

    def _remember(self, table: dict, key, make):
        if key not in table:
            if len(table) >= _CACHE_LIMIT:
                table.clear()
            try:
                table[key] = make()
            except Exception:  # a variant an engine cannot read: no answer
                table[key] = None
        return table[key]

    def case(self, kind: str, spec):
        return case_from_text("fuzz", case_source(kind, spec), kind, self.options, root=self.root)

    def matcher(self, kind: str, spec):
        return self._remember(self._matchers, (kind, case_source(kind, spec)),
                              lambda: compile_case(self.engine, self.case(kind, spec)))

    def oracle_grammar(self, kind: str, spec):
        """xg2ref's GrammarIR of the case (what the oracle reads)."""
        return self.case(kind, spec).grammar().ir

    def oracle(self, kind: str, spec) -> Optional[OracleMatcher]:
        return self._remember(self._oracles, (kind, case_source(kind, spec)),
                              lambda: OracleMatcher(self.oracle_grammar(kind, spec), self.info))

    def with_options(self, **changes) -> "Asker":
        """An asker of the same engine for the case under other front-end options."""
        return Asker(self.engine, self.info, {**self.options, **changes}, self.root)

    def deeper(self) -> Optional["Asker"]:
        """An asker of the same engine with recursion unrolled 4 levels deeper (engines with a
        `max_recursion_depth`), or None."""
        depth = getattr(self.engine, "max_recursion_depth", None)
        if depth is None:
            return None
        if self._deeper is None:
            engine = type(self.engine).from_tokenizer_info(self.info, max_recursion_depth=depth + 4)
            self._deeper = Asker(engine, self.info, self.options, self.root)
        return self._deeper

    def spellable(self, q: Question) -> bool:
        """Whether an engine that reads tokens only (its adapter has `encode`) can be given the
        question's bytes: each byte alone for the byte-by-byte questions, else all of them."""
        encode = getattr(self.engine, "encode", None)
        if encode is None:
            return True
        if q.kind in ("prefix", "sentence"):
            return all(encode(bytes((b,))) is not None for b in q.data)
        return encode(q.data) is not None

    def engine_says(self, kind: str, spec, q: Question) -> Optional[bool]:
        """The engine's answer (None: it cannot compile the case, cannot be given the bytes, or
        refuses a token question's bytes)."""
        return self.ask(self.matcher(kind, spec), q)

    def ask(self, m, q: Question) -> Optional[bool]:
        """The answer of the engine's matcher `m` (None: no matcher, or as `engine_says`)."""
        if m is None or not self.spellable(q):
            return None
        try:
            m.reset()
            if q.kind in ("prefix", "sentence"):
                walked = all(m.accept_bytes(bytes((b,))) for b in q.data)
                return walked if q.kind == "prefix" else walked and m.is_completed()
            if q.kind == "whole":
                return m.accept_bytes(q.data)
            if not m.accept_bytes(q.data):
                return None
            return bool(m.bool_mask()[q.token_id]) if q.kind == "token" else m.accept_token(q.token_id)
        except Exception:
            return None

    def oracle_says(self, kind: str, spec, q: Question) -> Optional[bool]:
        """The oracle's answer (None: no grammar, input past its limit, or bytes it refuses)."""
        o = self.oracle(kind, spec)
        if o is None or len(q.data) + 8 > MAX_INPUT_BYTES:
            return None
        if q.kind in ("prefix", "whole"):
            return o.recognizer.is_prefix(q.data)
        if q.kind == "sentence":
            return o.recognizer.is_sentence(q.data)
        o.reset()
        if q.data and not o.accept_bytes(q.data):
            return None
        return o.token_allowed(q.token_id)

    def differs(self, kind: str, spec, q: Question, says: bool) -> bool:
        """The engine still answers `says` and the oracle the other way."""
        return self.engine_says(kind, spec, q) == says and self.oracle_says(kind, spec, q) == (not says)


# ---- delta debugging and greedy deletion ------------------------------------------------------


def shrink_bytes(data: bytes, test: Callable[[bytes], bool], deadline: float = float("inf")) -> bytes:
    """A 1-minimal subsequence of `data` that passes `test` (which `data` passes), by ddmin.

    Example: shrink_bytes(b"xaybz", lambda s: b"a" in s and b"b" in s) == b"ab"
    """
    data, n = bytes(data), 2
    while data and time.monotonic() < deadline:
        n = min(n, len(data))
        size = -(-len(data) // n)
        for start in range(0, len(data), size):
            candidate = data[:start] + data[start + size:]
            if test(candidate):
                data, n = candidate, max(n - 1, 2)
                break
        else:
            if n == len(data):
                break
            n = min(2 * n, len(data))
    return data


def shrink_greedy(value, candidates: Callable[[Any], Iterator], test: Callable[[Any], bool],
                  deadline: float = float("inf")):
    """Keep the first candidate that passes `test`, and go on from there until none passes.
    After a success the scan resumes at the same position (the earlier ones failed already);
    it stops after a full pass from the beginning finds nothing."""
    start = 0
    while time.monotonic() < deadline:
        for i, candidate in enumerate(candidates(value)):
            if i < start:
                continue
            if time.monotonic() >= deadline:
                return value
            if test(candidate):
                value, start = candidate, i
                break
        else:
            if start == 0:
                return value
            start = 0
    return value


def schema_deletions(schema) -> Iterator:
    """Schemas with one keyword, property or list element (a `required` name, an `enum` value,
    an `anyOf` branch, ...) fewer, outer ones first; before them, the schemas without one half
    of a container of four entries or more.

    Example: list(schema_deletions({"type": "integer", "enum": [1, 2]}))[0] == {"enum": [1, 2]}
    """
    containers = []  # (path, node), breadth first
    queue = [((), schema)]
    while queue:
        path, node = queue.pop(0)
        containers.append((path, node))
        kids = node.items() if isinstance(node, dict) else enumerate(node)
        queue += [(path + (k,), v) for k, v in kids if isinstance(v, (dict, list))]
    keyed = [(path, list(node) if isinstance(node, dict) else list(range(len(node)))) for path, node in containers]
    for path, keys in keyed:
        if len(keys) >= 4:
            yield _without(schema, path, set(keys[:len(keys) // 2]))
            yield _without(schema, path, set(keys[len(keys) // 2:]))
    for (path, keys), (_, node) in zip(keyed, containers):
        if isinstance(node, list) and len(node) == 1 and path[-1:] != ("required",):
            continue
        for key in keys:
            yield _without(schema, path, {key})


def _without(node, path: tuple, keys: set):
    if path:
        head = path[0]
        if isinstance(node, dict):
            return {k: (_without(v, path[1:], keys) if k == head else v) for k, v in node.items()}
        return [(_without(v, path[1:], keys) if i == head else v) for i, v in enumerate(node)]
    if isinstance(node, dict):
        return {k: v for k, v in node.items() if k not in keys}
    return [v for i, v in enumerate(node) if i not in keys]


def text_deletions(text: str) -> Iterator[str]:
    """`text` with one chunk deleted: halves, quarters, ... single characters."""
    size = max(len(text) // 2, 1)
    while True:
        for start in range(0, len(text), size):
            yield text[:start] + text[start + size:]
        if size == 1:
            return
        size = max(size // 2, 1)


def grammar_reductions(text: str) -> Iterator[str]:
    """EBNF texts one step smaller than `text` (module docstring); unreadable ones fail the test."""
    from ...grammar.grammar import Grammar
    from ...grammar.ir import GrammarIR
    from ...grammar.printer import print_grammar

    ir = Grammar.from_ebnf(text).ir
    rules = list(ir.rules)
    variants = [rules[:i] + rules[i + 1:] for i, r in enumerate(rules) if r.name != ir.root]
    for i, rule in enumerate(rules):
        variants += [rules[:i] + [replace(rule, body=b)] + rules[i + 1:] for b in _expr_reductions(rule.body)]
    for variant in variants:
        try:
            yield print_grammar(GrammarIR(tuple(variant), root=ir.root))
        except ValueError:
            continue


def _expr_reductions(e) -> Iterator:
    from ...grammar.ir import ByteString, Choice, Repeat, Sequence

    if isinstance(e, (Choice, Sequence)):
        kids = e.alternatives if isinstance(e, Choice) else e.items
        make = Choice if isinstance(e, Choice) else Sequence
        if isinstance(e, Choice):
            yield from kids
        for i in range(len(kids)):
            rest = kids[:i] + kids[i + 1:]
            yield rest[0] if len(rest) == 1 else make(rest)
        for i, kid in enumerate(kids):
            for smaller in _expr_reductions(kid):
                yield make(kids[:i] + (smaller,) + kids[i + 1:])
    elif isinstance(e, Repeat):
        yield e.body
        for smaller in _expr_reductions(e.body):
            yield Repeat(smaller, e.min, e.max)
    elif isinstance(e, ByteString) and len(e.value) > 1:
        yield ByteString(e.value[:1])


def shrink_spec(kind: str, spec, test: Callable[[Any], bool], deadline: float = float("inf")):
    """The smallest variant of a case's spec (schema, regex or EBNF text) found that passes `test`."""
    if kind == "json_schema":
        return shrink_greedy(spec, schema_deletions, test, deadline)
    if kind == "regex":
        return shrink_greedy(spec, text_deletions, test, deadline)
    if kind == "ebnf":
        return shrink_greedy(spec, grammar_reductions, test, deadline)
    return spec


# ---- classes ---------------------------------------------------------------------------------


def byte_class(data: bytes) -> str:
    """A coarse name for the first byte of `data`: digit, letter, whitespace, control,
    non-ASCII, the character itself for other ASCII, or "nothing"."""
    if not data:
        return "nothing"
    c = data[0]
    if chr(c).isdigit():
        return "digit"
    if chr(c).isalpha() and c < 0x80:
        return "letter"
    if c in b" \t\n\r":
        return "whitespace"
    if c < 0x20 or c == 0x7F:
        return "control"
    return "non-ASCII" if c >= 0x80 else repr(chr(c))


def finding_class(engine: str, kind: str, spec, q: Question, says: Optional[bool], token: bytes,
                  design: Optional[str]) -> str:
    """The deduplication key of a finding (module docstring)."""
    if design:
        return f"{engine}: by design: {design}"
    if says is None:  # a rollback: no answer to compare
        return f"{engine}: {kind} {q.kind}"
    asked = token if q.kind in MASK_QUESTIONS else q.data[-1:]
    what = "stop token" if q.kind in MASK_QUESTIONS and not token else byte_class(asked)
    detail = f" [{', '.join(keywords(spec))}]" if kind == "json_schema" else ""
    return f"{engine}: {kind} {q.kind}: {'over' if says else 'under'}-accepts {what}{detail}"
