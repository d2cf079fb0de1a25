"""WGrammar (seed 002): token-level operators with a global, set-keyed mask cache.

    tokensets.py   allowable token sets over one vocabulary, interned by content (WGrammar §3.2)
    operators.py   Write, Wait, IfElse, Sequence, DoWhile, End: frozen data, compiled to one
                   position per state; their lowering to xg2ref's grammar IR (WGrammar §3.2)
    cache.py       GlobalMaskCache: masks keyed by set ids, for every program of a vocabulary
                   (WGrammar §3.3)
    matcher.py     OperatorMatcher: constant-time accept, cached masks, rollback (xgrammar's API)
    templates.py   templates (EBNF with $name parameters) compiled offline into a Factory,
                   instantiated per request from JSON (WGrammar §1, §3.1)
    regex_online.py  "WGrammar (online)": a regex translated into operators at request time,
                   first match where a loop and what follows overlap
    macros.py      Write, Wait, IfElse, DoWhile as EBNF calls over Token sets, registered when
                   this package is imported (and not before: a rule may be named Write)

specs/10-templates-and-operators.md gives the operators' semantics, marking what is reconstructed
from WGrammar's prose.
"""

from .cache import GlobalMaskCache
from .macros import MACROS, register_macros
from .matcher import OperatorMatcher
from .operators import (Choice, CompiledProgram, DoWhile, End, IfElse, Sequence, Star, Wait, Write, compile_program,
                        lower_to_ir)
from .regex_online import compile_regex, coverage, regex_to_operators
from .templates import Factory
from .tokensets import OperatorProgramError, TokenSets, vocabulary_fingerprint

register_macros()

__all__ = ["compile_regex", "coverage", "regex_to_operators", "Factory", "MACROS", "register_macros", "GlobalMaskCache", "OperatorMatcher", "Choice", "Star", "CompiledProgram", "DoWhile", "End", "IfElse", "Sequence", "Wait",
           "Write", "compile_program", "lower_to_ir", "OperatorProgramError", "TokenSets", "vocabulary_fingerprint"]
