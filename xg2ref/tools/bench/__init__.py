"""`xg2ref bench ...`: each reproduces a table or figure of the papers, with xg2ref beside
xgrammar 0.2.8 in the same process and the ratio (correctness checked first):

    mask.py             per-token mask time on the bundled workloads (`bench mask`)
    jsonschemabench.py  JSONSchemaBench compile rate and validity (XGrammar-2 Fig. 11)
    maskbench.py        MaskBench-style mask times over JSONSchemaBench samples
    ablation.py         the ablation of XGrammar-2 Table 4
    tagdispatch.py      TagDispatch against plain EBNF (XGrammar-2 Table 2)
    dynamic.py          dynamic tool calling (XGrammar-2 Table 1, Fig. 6)
    targets.py          the user-facing targets: GrammarCompiler defaults, cold first requests, p99
    kernels.py          the bitmask kernels (XGrammar §3.5)
"""
