"""A leaf shared by the EBNF front end and the intrinsics' argument checks: an error at an offset
of the grammar's source text, to which `parse_ebnf` adds the line, column and an excerpt."""

from __future__ import annotations


class SourceError(Exception):
    """An error at offset `pos` of the source; `parse_ebnf` adds line, column and excerpt.
    `kind` is "parser" or "lexer" (the EBNFError's kind); `limit` makes it a GrammarLimitError.

    Example: raise SourceError("TagDispatch: a tag must not be empty", 12)
    """

    def __init__(self, message: str, pos: int, kind: str = "parser", limit: bool = False):
        super().__init__(message)
        self.message, self.pos, self.kind, self.limit = message, pos, kind, limit
