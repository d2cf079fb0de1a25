"""The analyses of a grammar that the compiler and the linker share: normalize -> repetitions ->
rule FSMs -> FIRST / lookahead / FOLLOW -> FSM hashes.

`analyse(ir)` is the front half of compiling (XGrammar-2 §3.3, §3.6; XGrammar §3.2): the
normalization passes (xg2ref/grammar/passes.py), repetition compression (§3.6,
xg2ref/grammar/repetition.py), one byte FSM per rule (§3.3, xg2ref/fsm/build.py), then the facts
the adaptive token-mask cache reads (xg2ref/lookahead.py: FIRST, the lookahead filters, FOLLOW
and TAIL) and, for the cross-grammar cache, the FSM hashes (§3.3, Alg. 1–2, xg2ref/fsm/hashing.py).

`compile_ir_grammar` (xg2ref/compiler.py) analyses a whole grammar; `compile_part`
(xg2ref/linking.py) analyses a closed sub-grammar with its root's sequel left open, and the top
grammar around stand-ins for the parts. Both import this module, so neither imports the other's
way up.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import numpy as np

from .fsm.build import FSMArrays, GrammarFSMs, build_grammar_fsms
from .fsm.hashing import RuleHashes, hash_rules
from .grammar.ir import GrammarIR
from .grammar.passes import normalize
from .grammar.repetition import REPETITION_THRESHOLD, compress_repetitions
from .lookahead import LookaheadArrays, LookaheadReport, first_bytes, follow_bytes, lookahead_arrays


class Analysis(NamedTuple):
    """A grammar's machines and the facts the mask cache reads from them (`analyse`)."""

    ir: GrammarIR  # normalized, repetitions compressed
    fsms: GrammarFSMs
    first: np.ndarray  # bool[R, 256]
    follow: np.ndarray  # bool[R, 256]
    tail: Optional[np.ndarray]  # bool[R], with `tails`: may end where the root ends
    lookahead: LookaheadArrays
    report: LookaheadReport
    hashes: Optional[RuleHashes]  # with `hashed`

    def analysed(self) -> "AnalysedGrammar":
        """The handoff to the mask cache (the machines flattened)."""
        return AnalysedGrammar(self.fsms, self.fsms.to_arrays(), self.first, self.follow, self.lookahead, self.report,
                               self.hashes)


class AnalysedGrammar(NamedTuple):
    """What compiling hands the mask cache (xg2ref/compiler.py `_assemble`): the machines, flat,
    and what the analyses found. A linked grammar (xg2ref/linking.py) gives its state classes
    from its pieces (`state_classes(steps)`); a whole grammar leaves them to the cache."""

    fsms: GrammarFSMs
    arrays: FSMArrays
    first: np.ndarray  # bool[R, 256]
    follow: np.ndarray  # bool[R, 256]
    lookahead: LookaheadArrays
    report: LookaheadReport
    hashes: Optional[RuleHashes]
    state_classes: Optional[Callable[[int], np.ndarray]] = None


def analyse(ir: GrammarIR, *, shapes=None, repetition_threshold: Optional[int] = REPETITION_THRESHOLD,
            hashed: bool = False, tails: bool = False, open_root: bool = False,
            stand_ins: Optional[dict] = None) -> Analysis:
    """Normalize, compress repetitions, build the rule machines (through `shapes`, fsm/shapes.py),
    then FIRST, lookahead filters, FOLLOW (and TAIL) and, when `hashed`, the FSM hashes.
    For linking (xg2ref/linking.py): `open_root` leaves what follows the root unknown, and
    `stand_ins` (rule name -> (hash, kind)) names the stubs of sub-grammars, opaque to VERIFY
    and hashed as given."""
    ir = normalize(ir)
    if repetition_threshold is not None:
        ir = compress_repetitions(ir, repetition_threshold)
    fsms = build_grammar_fsms(ir, shapes=shapes)
    known = {r: stand_ins[name] for r, name in enumerate(fsms.rule_names) if name in stand_ins} if stand_ins else {}
    analysed = fsms.loop_view()  # counted repetitions as R+ (FIRST, FOLLOW, VERIFY over-approximate)
    first = first_bytes(analysed)
    lookahead, report = lookahead_arrays(ir, analysed, first, open_root=open_root, opaque=frozenset(known))
    follow, tail = follow_bytes(analysed, first, tails=True) if tails else (follow_bytes(analysed, first), None)
    return Analysis(ir, fsms, np.array(first, dtype=np.bool_).reshape(-1, 256), follow, tail, lookahead, report,
                    hash_rules(fsms, known=known) if hashed else None)
