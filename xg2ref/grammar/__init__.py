"""Grammars before any vocabulary: the IR (ir.py), its passes and printer, and the front ends
that produce it (EBNF, regex, JSON Schema, structural tags, Lark). `Grammar` (grammar.py) is
also importable from here, the module path xgrammar 0.2.8 gives it (`xgrammar.grammar.Grammar`)."""

from .grammar import Grammar

__all__ = ["Grammar"]
