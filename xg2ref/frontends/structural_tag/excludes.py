"""XGrammar-2 §3.2, structural tags: JSON values that never hold an excluded string (the
`excludes` of a `json_schema` format, in xgrammar 0.2.8's meaning).

With excludes W, the JSON text is filtered where it carries free text, and nowhere else:

    string (no pattern/format)  its content as written between the quotes holds no w in W, escapes
                                included (`"\\u003cx>"` does not hold `<x>`; `"\\nx"` holds `nx`);
                                `minLength`/`maxLength` are dropped (xgrammar ignores them beside
                                excludes, with a warning), contradictory ones still give no string
    key                         the same; an additional key also spells no declared name
    enum / const value          left out when one of its strings (object keys included), as
                                written, holds a word: `[1,2]` stays under the exclude `1,`
    declared property           left out when its name, as written, holds a word (a required one:
                                no object is valid)
    numbers, punctuation        not filtered; nor are strings under a `pattern` or a `format`

Everything else is xg2ref's JSON Schema converter (`xg2ref/frontends/json_schema/converter.py`), which this one extends.

The filter is a product: a small automaton of the text's shape (`machine`: state -> [(code-point
ranges, next state)]) read together with the longest suffix of the text that begins a word, the
Aho-Corasick state of the words (`avoiding`). A character that completes a word (any word ending
there, also one inside a longer partial match) has no edge.

What it leaves out: an escaped spelling of a declared name as an additional key (xgrammar 0.2.8
takes `"\\u0062"` beside a declared `"b"`; xg2ref's keys are canonical, as without excludes);
`patternProperties` keys are not filtered.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from ...grammar.ir import EPSILON, MAX_CODEPOINT, ByteString, CharClass, Expr, GrammarIR, RuleRef
from ..json_schema.lexical import NOTHING, RAW_FORBIDDEN, choice, encoded_char, json_string_literal, seq
from ..json_schema.keywords import count
from ..json_schema.converter import SchemaConverter
from ..json_schema.strings import string_checks
from ...grammar.charsets import complement, intersect, merge_ranges, subtract
from ...grammar.regular import automaton

# The written body of a JSON string: raw characters, short escapes, \uXXXX outside the
# surrogates (as xg2ref's own strings, specs/05), each character matched as written.
_HEX = ((0x30, 0x39), (0x41, 0x46), (0x61, 0x66))
JSON_STRING_BODY = {
    "n": [(((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)), "n"), (((0x5C, 0x5C),), "b")],
    "b": [(tuple((ord(c), ord(c)) for c in '"\\/bfnrt'), "n"), (((0x75, 0x75),), "u")],
    "u": [(((0x30, 0x39), (0x41, 0x43), (0x45, 0x46), (0x61, 0x63), (0x65, 0x66)), 3),
          (((0x44, 0x44), (0x64, 0x64)), "d")],
    "d": [(((0x30, 0x37),), 2)],
    3: [(_HEX, 2)], 2: [(_HEX, 1)], 1: [(_HEX, "n")],
}
NOT_NAMES = "$xg2ref:not_names"  # in a propertyNames schema: the declared names an additional key may not spell


def avoiding(conv, words: list, machine: dict, start, finals: set, hint: str) -> Expr:
    """The strings `machine` accepts that hold none of `words`: one rule per pair (machine
    state, longest suffix of the text that begins a word). A character that no word holds
    takes the suffix back to ""; one that completes a word has no edge. The characters of an
    edge that lead to the same pair are one class.

    Example: avoiding(conv, ["ab"], {0: [(((0x61, 0x62),), 0)]}, 0, {0}, "x") matches "ba", not "xab"
    """
    letters = sorted({c for w in words for c in w})
    prefixes = {w[:k] for w in words for k in range(len(w))}
    names: dict = {}

    def step(suffix: str, c: str):
        text = suffix + c
        if any(text.endswith(w) for w in words):  # every word ending here, not only the longest match
            return None
        while text not in prefixes:
            text = text[1:]
        return text

    def ref(q, suffix: str) -> Expr:
        if (q, suffix) not in names:
            names[(q, suffix)] = name = conv.new_rule(hint)
            parts = [EPSILON] if q in finals else []
            for ranges, nq in machine[q]:
                inside = [c for c in letters if any(lo <= ord(c) <= hi for lo, hi in ranges)]
                by_suffix: dict = {"": subtract(list(ranges), [(ord(c), ord(c)) for c in inside])}
                for c in inside:
                    nxt = step(suffix, c)
                    if nxt is not None:
                        by_suffix.setdefault(nxt, []).append((ord(c), ord(c)))
                for nxt, chars in by_suffix.items():
                    if chars:
                        parts.append(seq(CharClass(tuple(merge_ranges(chars))), ref(nq, nxt)))
            conv.set_rule(name, choice(*parts))
        return RuleRef(names[(q, suffix)])

    return ref(start, "")


FREE = ("free",)  # key_machine's state once the key has left every declared name (not a prefix)


def key_machine(names: list) -> tuple[dict, set]:
    """The written keys that spell none of `names` (written canonically, json_lexical.encoded_char),
    as (machine, finals) from state "": the trie of the names, where a character no name
    continues goes to FREE. A character is written raw, or as an escape after a backslash; the
    escapes of one set of characters into one state are built once and shared."""
    machine: dict = {}
    escapes: dict = {}  # (escaped ranges, target) -> the edges that read the backslash

    def edges(ranges: list, target) -> list:
        raw = subtract(ranges, RAW_FORBIDDEN)
        out = [(tuple(raw), target)] if raw else []
        escaped = tuple(intersect(ranges, RAW_FORBIDDEN + ((0x2F, 0x2F),)))
        if escaped and (escaped, target) not in escapes:  # the automaton of the escapes, spliced in
            frag, frag_finals = automaton(encoded_char(list(escaped)))
            base = (len(escapes), target)
            for s, row in enumerate(frag):
                machine[(base, s)] = [(r, target) for r, t in row if t in frag_finals]
                machine[(base, s)] += [(r, (base, t)) for r, t in row if frag[t]]
            escapes[(escaped, target)] = [e for e in machine[(base, 0)] if e[0] == ((0x5C, 0x5C),)]
        return out + (escapes[(escaped, target)] if escaped else [])

    machine[FREE] = edges([(0, MAX_CODEPOINT)], FREE)
    finals = {FREE}
    todo = [""]
    while todo:
        prefix = todo.pop()
        nexts = sorted({n[len(prefix)] for n in names if len(n) > len(prefix) and n.startswith(prefix)})
        row = edges(complement([(ord(c), ord(c)) for c in nexts]), FREE)
        for c in nexts:
            row += edges([(ord(c), ord(c))], prefix + c)
            todo.append(prefix + c)
        machine[prefix] = row
        if prefix not in names:
            finals.add(prefix)
    return machine, finals


def literal_holds(value: Any, words: list, write: Callable[[str], str]) -> bool:
    """Whether a string of `value` (object keys included, at any depth), written by `write`
    without its quotes, holds one of `words`."""
    if isinstance(value, str):
        text = write(value)[1:-1]
        return any(w in text for w in words)
    if isinstance(value, dict):
        return any(literal_holds(k, words, write) or literal_holds(v, words, write) for k, v in value.items())
    if isinstance(value, list):
        return any(literal_holds(v, words, write) for v in value)
    return False


def _json_text(s: str) -> str:
    return json_string_literal(s).decode("utf-8", "surrogatepass")


class FilteringConverter(SchemaConverter):
    """The JSON converter with `words` (the excludes) kept out of plain strings (their length
    bounds dropped), keys, enum/const values and declared names (module docstring)."""

    words: list = []

    def holds(self, name: str) -> bool:
        return literal_holds(name, self.words, _json_text)

    def t_string(self, schema, level, path) -> Expr:
        if not self.words or string_checks(schema):
            return super().t_string(schema, level, path)
        content = self.string_content(schema, path)
        if content == NOTHING:
            return NOTHING
        return self.rule(("avoiding_string",), "json_string_avoiding",
                         lambda: seq(ByteString(b'"'), content, ByteString(b'"')))

    def string_content(self, schema, path) -> Expr:
        if not self.words or string_checks(schema):
            return super().string_content(schema, path)
        lo, hi = count(schema, "minLength", path, 0), count(schema, "maxLength", path, None)
        if hi is not None and hi < lo:  # (checked, then dropped)
            return NOTHING
        names = schema.get(NOT_NAMES)
        if names:
            def build():
                machine, finals = key_machine(names)
                return avoiding(self, self.words, machine, "", finals, "json_key_avoid")

            return self.rule(("avoiding_key", tuple(names)), "json_key_avoiding", build)
        return self.rule(("avoiding",), "json_string_content_avoiding",
                         lambda: avoiding(self, self.words, JSON_STRING_BODY, "n", {"n"}, "json_avoid"))

    def literal(self, value, level) -> Expr:
        if self.words and literal_holds(value, self.words, _json_text):
            return NOTHING
        return super().literal(value, level)

    def t_object(self, schema, level, path, loose=False) -> Expr:
        if not self.words:
            return super().t_object(schema, level, path, loose)
        props, required = schema.get("properties"), schema.get("required")
        required = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
        if isinstance(props, dict) and any(self.holds(n) for n in props if isinstance(n, str)):
            if any(self.holds(n) for n in required):
                return NOTHING
            kept = {n: s for n, s in props.items() if not self.holds(n)}
            schema = dict(schema, properties=kept)
            if not kept:
                schema.setdefault("additionalProperties", False)
        if "propertyNames" not in schema and not schema.get("patternProperties"):
            props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
            declared = list(dict.fromkeys(list(props) + required))
            names: dict = {"type": "string"}  # keys are then strings that avoid the words
            if declared:
                names[NOT_NAMES] = declared  # (and spell no declared name)
            schema = dict(schema, propertyNames=names)
        return super().t_object(schema, level, path, loose)


def filtered_json_schema_to_ir(schema: Any, excludes: list, *, any_order: bool = False,
                               max_whitespace_cnt=None) -> GrammarIR:
    """The JSON grammar of `schema` (any whitespace, strict mode) with `excludes` filtered out
    (module docstring): a `json_schema` format of style "json" with excludes."""
    if isinstance(schema, (str, bytes)):
        from ...exceptions import InvalidJSONError

        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as err:
            raise InvalidJSONError(f"$: the schema is not valid JSON: {err}") from None
    conv = FilteringConverter(schema, any_whitespace=True, max_whitespace_cnt=max_whitespace_cnt, any_order=any_order)
    conv.words = list(dict.fromkeys(excludes))
    return conv.convert()
