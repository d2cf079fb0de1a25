"""Views of the run-time half of the engine, as plain data for people and notebooks.

Each function looks inside one mechanism of XGrammar-2 and returns dicts, lists or numpy
arrays; none changes what the engine computes:

    FSM hashing (§3.3, Algorithms 1-2, Appendix C)     rule_hashes, same_structure
    the cross-grammar cache (§3.3, Figure 4)            pool_lookups, cache_counters
    JIT entries and their cost model (§3.5)             entry_summary, entry_costs, mask_steps
    repetition state compression (§3.6, Algorithm 3)    grammar_size, count_zones, counted_items
    dynamic tool calling (§4.1, Table 1, Figure 6)      load_tools, dynamic_workload
    JSON schemas with gold answers (json-mode-eval)     json_mode_eval
    the ablation (§4.4, Table 4)                        ablation
    JSONSchemaBench (Appendix E, Figure 11)             jsonschemabench_sample, jsonschemabench_run,
                                                        jsonschemabench_records, jsonschemabench_summary
    XGrammar's Table 3, XGrammar-2's Figure 10          xg1_ablation_table, earley_vs_pda_records
    XGrammar-2's Figures 7, 8 and 11                    formats_records, formats_rows, maskbench_records,
                                                        maskbench_summary, formats_small_case
    walks for checks against the oracle                 random_walk
    vocabularies, data and the command line             sub_vocabulary, encode, data_dir, benchmarks_dir,
                                                        run_cli

The benchmark views are the `xg2ref bench ...` commands cut down to a caller's sample and
vocabulary, with their results returned instead of printed; each checks masks before it times
(against xgrammar 0.2.8 where it runs it, against the baseline configuration in `ablation`).

What it leaves out: the Earley chart, the mask cache's entries, TagDispatch and the pushdown
automaton's stacks, which `xg2ref.views.parsing` covers.

    common.py       sub-vocabularies, encoding, the data folders, the command line, random walks
    caches.py       FSM hashing, the cross-grammar cache, JIT entries, repetition zones
    benchmarks.py   dynamic tool calling, the ablation, JSONSchemaBench, the benches' records, as data
"""

from .benchmarks import (ablation, dynamic_workload, earley_vs_pda_records, formats_records, formats_rows,
                         formats_small_case, json_mode_eval, jsonschemabench_records, jsonschemabench_run,
                         jsonschemabench_sample, jsonschemabench_summary, load_tools, maskbench_records,
                         maskbench_summary, xg1_ablation_table)
from .caches import (cache_counters, count_zones, counted_items, entry_costs, entry_summary, grammar_size, mask_steps,
                     pool_lookups, rule_hashes, same_structure)
from .common import benchmarks_dir, data_dir, encode, random_walk, run_cli, sub_vocabulary

__all__ = [
    "rule_hashes", "same_structure", "pool_lookups", "cache_counters", "entry_summary", "entry_costs", "mask_steps",
    "grammar_size", "count_zones", "counted_items", "load_tools", "dynamic_workload", "json_mode_eval", "ablation",
    "jsonschemabench_sample", "jsonschemabench_run", "jsonschemabench_records", "jsonschemabench_summary",
    "xg1_ablation_table", "earley_vs_pda_records", "formats_records", "formats_rows", "maskbench_records",
    "maskbench_summary", "formats_small_case",
    "random_walk", "sub_vocabulary", "encode", "data_dir", "benchmarks_dir", "run_cli",
]
