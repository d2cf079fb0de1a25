"""`xg2ref bench ...`: each reproduces a table or figure of the papers, with xg2ref beside
xgrammar 0.2.8 in the same process and the ratio (correctness checked first):

    mask.py             per-token mask time on the bundled workloads (`bench mask`)
    jsonschemabench.py  JSONSchemaBench's own metrics: compile rate and validity
    maskbench.py        compile, first mask and between masks on JSON schemas (XGrammar-2 Fig. 11)
    maskbench_report.py its tables (one per subset) and CDFs
    ablation.py         the ablation of XGrammar-2 Table 4
    tagdispatch.py      TagDispatch against plain EBNF (XGrammar-2 Table 2)
    dynamic.py          dynamic tool calling (XGrammar-2 Table 1, Fig. 6)
    targets.py          the user-facing targets: GrammarCompiler defaults, cold first requests, p99
    kernels.py          the bitmask kernels (XGrammar §3.5)
    xg1_ablation.py     XGrammar's Table 3 on XGrammar-1's pushdown automaton
    earley_vs_pda.py    Earley against the pushdown automaton (XGrammar-2 Fig. 10)
    formats.py          tool calling in the llama and harmony formats (XGrammar-2 Figs. 7, 8)
    formats_engines.py  its engines: xgrammar, llguidance (Lark), the PDA, xgrammar 0.1.19
    xg1_peer.py         xgrammar 0.1.19 in its side environment (xg1_peer_worker.py runs there)
    token_classes.py    CFGzip's Tables 1 and 3 (token_classes_grammars.py: its C++ and XML grammars)
    wgrammar.py         WGrammar's Fig. 6 and Table 1 components (wgrammar_workloads.py: the three
                        workloads; wgrammar_report.py: the tables, the record, the figure)
    dispatch.py         the call each bench is run with, from the command line's options
"""
