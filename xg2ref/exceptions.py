"""Errors raised by xg2ref.

xgrammar 0.2.8 raises `RuntimeError` for bad grammars and bad matcher calls; xg2ref's errors
subclass both `ValueError` and `RuntimeError`, so code written for either catches them.
"""

from __future__ import annotations


class XG2RefError(ValueError, RuntimeError):
    """Base class of every error xg2ref raises on bad input."""


class EBNFError(XG2RefError):
    """A grammar text that is not valid EBNF in xgrammar's dialect.

    Carries `line` and `column` (1-based) and `excerpt`, the offending source line with a
    caret under the column. `str(err)` reads
    "EBNF parser error at line 2, column 7: <message>" followed by the excerpt.
    """

    def __init__(self, message: str, line: int = 0, column: int = 0, source: str = "", kind: str = "parser"):
        self.message = message
        self.line = line
        self.column = column
        self.excerpt = caret_excerpt(source, line, column) if source and line else ""
        text = f"EBNF {kind} error at line {line}, column {column}: {message}" if line else f"EBNF {kind} error: {message}"
        if self.excerpt:
            text += "\n" + self.excerpt
        super().__init__(text)


class GrammarLimitError(XG2RefError):
    """A grammar past a documented size or depth limit (see specs/01-ebnf.md, "Limits")."""


class InvalidJSONError(XG2RefError):
    """A JSON Schema (or JSON text) that is invalid or uses something xg2ref cannot enforce as a
    grammar; the message starts with the JSON path of the offending part (`$.properties.a`)."""


class JSONSchemaNotExactError(InvalidJSONError):
    """A JSON Schema using keywords xg2ref cannot enforce exactly as a grammar, converted without
    `approximate=True` (xg2ref/config.py). `approximations` lists each as (JSON path, keyword,
    how the superset reads it); the message names them and the opt-in."""

    def __init__(self, approximations):
        self.approximations = tuple(approximations)
        shown = "; ".join(f"{path}: {keyword} {how}" for path, keyword, how in self.approximations[:4])
        more = len(self.approximations) - 4
        super().__init__(
            f"{shown}{f'; and {more} more' if more > 0 else ''}. The grammar would accept values the schema "
            f"rejects; pass approximate=True (or set XG2REF_JSON_SCHEMA_APPROXIMATE=1, or call "
            f"xg2ref.config.set_json_schema_approximate(True)) to accept that superset")


class InvalidStructuralTagError(XG2RefError):
    """A structural tag that is not valid or not supported (the message names the part by its
    JSON path, e.g. `format.tags[0].begin`)."""


class MatcherError(XG2RefError):
    """A matcher call that cannot be honoured (rollback past the start, mask after termination...)."""


class TokenizerError(XG2RefError):
    """A vocabulary or tokenizer file that cannot be read."""


class DeserializeFormatError(XG2RefError):
    """Serialized JSON (`serialize_json` of a TokenizerInfo, Grammar or CompiledGrammar) whose
    fields are missing or malformed, or a CompiledGrammar paired with a tokenizer it was not
    compiled for."""


class DeserializeVersionError(XG2RefError):
    """Serialized JSON without the `__VERSION__` field, or written by another serialization
    version (`xg2ref.get_serialization_version()`)."""


class BitmaskError(XG2RefError):
    """Logits, a bitmask or a batch that do not fit together (shape, dtype, device, rows,
    indices, sizes), or a mask backend that cannot run here."""


class TokenClassesUnsupported(XG2RefError):
    """A grammar with a construct the token classes cannot keep exact (named in the message)."""


class TokenClassesMismatch(XG2RefError):
    """A saved file of token classes for another grammar, vocabulary, stop set or relation."""


def caret_excerpt(source: str, line: int, column: int) -> str:
    """The `line`-th line of `source` with a caret under `column` (both 1-based).

    Example: caret_excerpt('a ::= b\\nroot ::= "x" %', 2, 14) == 'root ::= "x" %\\n             ^'
    """
    lines = source.splitlines() or [""]
    if not 1 <= line <= len(lines):
        return ""
    text = lines[line - 1].replace("\t", " ")
    return f"{text}\n{' ' * max(column - 1, 0)}^"
