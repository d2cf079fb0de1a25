"""Views of the parsing half of the engine, as plain data for people and notebooks.

Each function looks inside one mechanism and returns lists, dicts, strings or numpy arrays:

    the grammar IR and its passes (XGrammar §3.4)        ir_outline, normalization_steps
    per-rule byte FSMs (XGrammar-2 §3.3)                  fsm_stages, stage_accepts, rule_fsms, fsm_text,
                                                          draw_fsm, utf8_pieces
    the Earley chart (XGrammar-2 §3.4, App. D Table 6,    earley_trace, chart_sets
      left half; rollback, XGrammar §3.3)
    the adaptive token-mask cache (Table 6, right half;   mask_cache_entries, entry_forms, entry_tokens,
      XGrammar §3.1, Figures 4 and 5, Algorithm 1)        mask_from_cache, every_token_mask
    context expansion and lookahead (XGrammar §3.2)       context_expansion, lookahead_assertions
    XGrammar-1's persistent stack (XGrammar §3.3,         pda_stacks, stack_history, draw_stack_tree
      Figure 3; xg2ref/baselines/pda/)
    TagDispatch (XGrammar-2 §3.2, Figure 3, Table 2)      aho_corasick, draw_aho_corasick,
                                                          plain_tag_dispatch, tag_dispatch_sizes,
                                                          tag_dispatch_table, random_tags
    printing                                              format_table

Rule names are the grammar's own: `inline=False` views read the grammar normalized without
rule inlining (as `xg2ref explain` does), so no small rule disappears into its callers;
`inline=True` views, and every view of a compiled grammar or a matcher, read what the compiler
built. Items print as dotted rules (`xg2ref/earley.py`, `ItemPrinter`): the shortest path of
symbols into the item's FSM state, a dot, what may follow, and `@origin`.

What it leaves out: the views are for small grammars and vocabularies (they run in Python,
state by state); views of the mask cache ignore the per-count entries of counted repetitions
(§3.6; `xg2ref.views.runtime` shows their counts and zones) and the member sets of unordered
rules.

    grammar_fsm.py    the IR, its normalization, the per-rule FSMs and their stages, drawn
    chart_cache.py    the Earley chart, the token-mask cache's entries, context expansion
    tag_dispatch.py   the Aho-Corasick automaton of TagDispatch, Table 2; a text table printer
    pda.py            the pushdown automaton's stacks and their shared tree of frames
"""

from .chart_cache import (chart_sets, context_expansion, earley_trace, entry_forms, entry_tokens, every_token_mask,
                          lookahead_assertions, mask_cache_entries, mask_from_cache)
from .grammar_fsm import (draw_fsm, fsm_stages, fsm_text, ir_outline, normalization_steps, rule_fsms, stage_accepts,
                          utf8_pieces)
from .pda import draw_stack_tree, pda_stacks, stack_history
from .tag_dispatch import (aho_corasick, draw_aho_corasick, format_table, plain_tag_dispatch, random_tags,
                           tag_dispatch_sizes, tag_dispatch_table)

__all__ = [
    "ir_outline", "normalization_steps",
    "fsm_stages", "stage_accepts", "rule_fsms", "fsm_text", "draw_fsm", "utf8_pieces",
    "earley_trace", "chart_sets",
    "mask_cache_entries", "entry_forms", "entry_tokens", "mask_from_cache", "every_token_mask",
    "context_expansion", "lookahead_assertions",
    "aho_corasick", "draw_aho_corasick", "plain_tag_dispatch", "tag_dispatch_sizes", "tag_dispatch_table",
    "random_tags",
    "format_table",
]
