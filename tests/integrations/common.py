"""What the integration scenarios share: the requests they serve (JSON schemas, EBNF and Lark
grammars, regexes, structural tags), each with an output that satisfies it, and the small
helpers integrations write around xgrammar themselves (vLLM's choice-to-EBNF and Lark
detection), restated here.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from .driver import Run, Session

PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
PERSON_OUT = '{"name": "Ada", "age": 36}'
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
           "required": ["city", "unit"]}
WEATHER_ARGS = '{"city": "Paris", "unit": "celsius"}'
SEARCH = {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
          "required": ["query"]}
ANY_OBJECT_OUT = '{"city": "Paris", "coords": [48.85, 2.35], "capital": null}'

PHONE = r"\d{3}-\d{4}"
PHONE_OUT = "555-0199"
DATE = r"\d{4}-\d{2}-\d{2}"
DATE_OUT = "2024-05-17"

CHOICES = ["yes", "no", "maybe", 'say "hi"\n']

SQL_EBNF = r"""root ::= "SELECT " cols " FROM " table (" WHERE " cond)? ";"
cols ::= col (", " col)*
col ::= "name" | "age" | "city"
table ::= "people" | "cities"
cond ::= col " > " [0-9]+
"""
SQL_LARK = r"""// the SQL subset of SQL_EBNF, in Lark
start: "SELECT " cols " FROM " table where? ";"
cols: col (", " col)*
col: "name" | "age" | "city"
table: "people" | "cities"
where: " WHERE " col " > " NUMBER
NUMBER: /[0-9]+/
"""
SQL_OUT = "SELECT name, age FROM people WHERE age > 30;"
PAIRS_LARK = r"""start: pair ("," pair)*
pair: KEY ":" NUMBER
KEY: /[a-z]+/
NUMBER: /[0-9]+/
%ignore " "
"""
PAIRS_OUT = "age: 36, year: 2024"

LEGACY_TAGS = {"structures": [{"begin": "<function=get_weather>", "schema": WEATHER, "end": "</function>"},
                              {"begin": "<function=search>", "schema": SEARCH, "end": "</function>"}],
               "triggers": ["<function="]}
LEGACY_OUT = f"Let me check. <function=get_weather>{WEATHER_ARGS}</function>"
TRIGGERED_TAG = {"type": "structural_tag", "format": {
    "type": "triggered_tags", "triggers": ["<function="], "at_least_one": True, "stop_after_first": True,
    "tags": [{"type": "tag", "begin": "<function=get_weather>", "end": "</function>",
              "content": {"type": "json_schema", "json_schema": WEATHER}},
             {"type": "tag", "begin": "<function=search>", "end": "</function>",
              "content": {"type": "json_schema", "json_schema": SEARCH}}]}}
TRIGGERED_OUT = f"<function=get_weather>{WEATHER_ARGS}</function>"
SEQUENCE_TAG = {"type": "structural_tag", "format": {"type": "sequence", "elements": [
    {"type": "const_string", "value": "Answer: "}, {"type": "regex", "pattern": "(yes|no)"}]}}
SEQUENCE_OUT = "Answer: yes"


def choice_as_grammar(choices: list) -> str:
    """An EBNF alternation of string literals, escaped as vLLM escapes a `choice` request."""
    specials = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}

    def escape(c: str) -> str:
        if c in specials:
            return specials[c]
        return f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else c

    return "root ::= " + " | ".join('"' + "".join(map(escape, s)) + '"' for s in choices)


def looks_like_lark(grammar: str) -> bool:
    """vLLM's test: a grammar is Lark unless some non-comment line defines a rule with `::=`."""
    lines = (re.sub(r"(#|//).*$", "", line).strip() for line in grammar.split("\n"))
    return not any("::=" in line for line in lines if line)


def record_info(run: Run, label: str, info: Any) -> None:
    """The TokenizerInfo properties an integration reads (or the compiler relies on)."""
    if info is None:
        return
    for prop in ("vocab_type", "vocab_size", "add_prefix_space", "stop_token_ids", "special_token_ids"):
        run.call(f"{label}.{prop}", getattr, info, prop)
    run.call(f"{label}.decoded_vocab", lambda: tuple(bytes(t) for t in info.decoded_vocab))


def token_texts(tokenizer: Any) -> list:
    """Each token id's text, the way the tokenizer decodes it alone; None for special tokens."""
    vocab = tokenizer.get_vocab()
    specials = set(tokenizer.all_special_tokens) | set(tokenizer.get_added_vocab())
    out = [None] * len(vocab)
    for piece, i in vocab.items():
        out[i] = None if piece in specials else tokenizer.convert_tokens_to_string([piece])
    return out


def prefix_oracle(texts: list, vocab_size: int, fits) -> np.ndarray:
    """The mask a correct engine fills where `fits(text)` says whether a token's text can come
    next: True for each non-special token it holds for."""
    want = np.zeros(vocab_size, dtype=bool)
    for i, text in enumerate(texts):
        want[i] = text is not None and text != "" and bool(fits(text))
    return want


def expect_mask(run: Run, have: np.ndarray, want: np.ndarray, what: str, texts: list) -> None:
    extra = [(int(i), texts[i] if i < len(texts) else None) for i in np.flatnonzero(have & ~want)[:6]]
    missing = [(int(i), texts[i] if i < len(texts) else None) for i in np.flatnonzero(want & ~have)[:6]]
    run.expect(not extra and not missing, f"{what}: allows {extra} it should not, forbids {missing} it should allow")


def encode(tokenizer: Any, text: str, eos: bool = True) -> list:
    ids = tokenizer.encode(text, add_special_tokens=False)
    return ids + [tokenizer.eos_token_id] if eos else ids


def serve_to_end(run: Run, session: Session, tokens: list, bitmask: Any, row: int = 0) -> None:
    """Teacher-forces `tokens` (a valid output and its stop token); expects each accepted and the
    matcher terminated after them."""
    got = session.decode(tokens, bitmask, row)
    run.expect(got == len(tokens), f"{session.name}: only {got} of the {len(tokens)} tokens of a valid output accepted")
    run.expect(session.is_terminated(), f"{session.name}: not terminated after the stop token")


def dumps(value: Any) -> str:
    return json.dumps(value)


class Env:
    """The tokenizers a scenario serves with, and what the checks derive from them."""

    def __init__(self):
        from .small_tokenizers import byte_fallback_tokenizer, byte_level_tokenizer, padded

        self.byte_level = byte_level_tokenizer()
        self.byte_fallback = byte_fallback_tokenizer()
        self.vocab_size = padded(len(self.byte_level.get_vocab()))  # the model's rows, past the tokenizer's
        self.texts = token_texts(self.byte_level)
        self.ordinary_ids = [i for i, text in enumerate(self.texts) if text]
        self.bad_token = self.byte_level.convert_tokens_to_ids("}")  # a draft the grammars mostly reject

    def describe(self, token: int) -> str:
        texts = self.texts
        return f"{token}:{texts[token]!r}" if token < len(texts) and texts[token] is not None else str(token)
