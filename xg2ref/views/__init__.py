"""Public views of the engine's inner workings, for teaching and for the notebooks.

The engine's own modules are free to change shape; these functions are the stable, documented
way to look inside it (the notebooks in notebooks/ import nothing else beyond the top-level API):

    views.parsing   the grammar IR and the per-rule FSMs (grammar_fsm.py, XGrammar-2 §3.3), the
                    Earley chart set by set and the token-mask cache's entries (chart_cache.py,
                    §3.4, XGrammar §3.1-3.2), TagDispatch's automaton (tag_dispatch.py, §3.2)
    views.runtime   FSM hashing and the cross-grammar cache (§3.3), JIT entries (§3.5),
                    repetition compression (§3.6) (caches.py); the paper's benchmarks as data
                    (benchmarks.py); what both share (common.py)

Each function returns plain data (lists, dicts, numpy arrays) that a notebook can print or plot.
"""
