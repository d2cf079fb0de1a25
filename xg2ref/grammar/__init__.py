"""Grammars before any vocabulary: the IR and what holds for every grammar, whatever format it
came from (the front ends that produce it are xg2ref/frontends/). In pipeline order:

    source_error.py  errors that point into a grammar's text (a leaf)
    intrinsic.py     the Intrinsic and Macro protocols and their registry (XGrammar-2 §3.2's
                     TagDispatch is the model; built-ins in xg2ref/intrinsics/)
    ir.py            the node classes (`GrammarIR`, `Rule`, `Sequence`, `Choice`, `Repeat`, ...)
    charsets.py      code-point sets as ranges, and UTF-8 encoding of one code point
    thompson.py      Thompson's construction: an IR expression as an NFA, whatever the edge
                     labels (bytes for the rule FSMs of xg2ref/fsm/, code-point ranges here)
    regular.py       regular languages on the IR: automata, intersection, complement, length bounds
    lazy.py          `name[lazy]` rules lowered to plain right-linear rules
    passes.py        normalization: inlining, dead rules, nullability, renaming
    repetition.py    repetition compression, the IR half (XGrammar-2 §3.6, Alg. 3)
    printer.py       the IR back to EBNF text
    grammar.py       the public `Grammar` (xgrammar's `xgrammar.grammar.Grammar`): its `from_*`
                     constructors call the front ends

`Grammar` is also importable from here, the module path xgrammar 0.2.8 gives it.
"""

from .grammar import Grammar

__all__ = ["Grammar"]
