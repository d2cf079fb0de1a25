"""The seeds' other systems, run beside XGrammar-2 as baselines over xg2ref's own front ends and
machines: `pda`, XGrammar-1's pushdown automaton with its persistent stack (XGrammar §3, App. A);
`wgrammar`, WGrammar's token-level operators with a global, set-keyed mask cache (WGrammar §3).

Nothing in the engine imports this package; only the tools, the oracle's adapters and the views do.
"""
