"""Public views of the engine's inner workings, for teaching and for the notebooks.

The engine's own modules are free to change shape; these functions are the stable, documented
way to look inside it (the notebooks in notebooks/ import nothing else beyond the top-level API):

    views.parsing   the grammar IR, the per-rule FSMs, the Earley chart set by set (dotted
                    rules in the grammar's own names), the token-mask cache's entries
    views.runtime   the cross-grammar cache, JIT entries, repetition compression, masks in a
                    decoding loop

Each function returns plain data (lists, dicts, numpy arrays) that a notebook can print or plot.
"""
