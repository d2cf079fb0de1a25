"""XGrammar-1's executor (XGrammar App. A, §3.1–§3.4) as a baseline over xg2ref's per-rule machines.

    machines.py   the machines at three stages (nfa, merged, dfa), node merging, what XGrammar-1 refused
    stack.py      the persistent execution stack (§3.3) as the Python side holds it
    cache.py      the adaptive token mask cache keyed by stack-top state, context expansion (Alg. 2)
    matcher.py    PDACompiler, PDACompiledGrammar, PDAMatcher (xgrammar's matcher API)

The kernels are xg2ref/kernels/pda.py (the moves, the stack) and xg2ref/kernels/pda_cache.py (the
vocabulary walks, the entries, Alg. 1). specs/08-pda-baseline.md derives them.
"""

from ...exceptions import GrammarLimitError
from .machines import STAGES, UnsupportedByBaseline, build_machines, merge_nodes, prepare_ir
from .matcher import PDACompiledGrammar, PDACompiler, PDAMatcher
from .stack import Frame, PersistentStack

__all__ = ["GrammarLimitError", "STAGES", "UnsupportedByBaseline", "build_machines", "merge_nodes", "prepare_ir", "PDACompiler",
           "PDACompiledGrammar", "PDAMatcher", "Frame", "PersistentStack"]
