# %% [markdown]
# # 17 — XGrammar's ablation (Table 3) and XGrammar-2's Figure 10, reproduced
#
# **XGrammar §4.3, Table 3** takes XGrammar-1's pushdown automaton from a plain baseline to the
# shipped engine one optimization at a time, on unconstrained JSON (the builtin JSON grammar,
# Llama-3.1 8B's vocabulary), and reports the mean time to generate a mask:
#
# | row | the paper (ms per token) |
# |---|---|
# | PDA baseline | 65.776 |
# | + node merging | 38.280 |
# | + adaptive token mask cache | 0.154 |
# | + rule inlining | 0.035 |
# | + context expansion | 0.018 |
#
# **XGrammar-2 §4.4, Figure 10** puts XGrammar-2 with a PDA parser against XGrammar-2 with its
# Earley parser, both compiling the JSON schemas of JSONSchemaBench ahead of time: "the Earley
# Parser can significantly reduce the grammar compilation". The figure itself is missing from
# the paper and no number is quoted, so what follows is our reading of its text: compile time as
# the main panel, time per mask beside it.
#
# Both come from committed records: `xg2ref bench xg1-ablation` (benchmarks/xg1_ablation/) and
# `xg2ref bench earley-vs-pda --jobs 2 --results benchmarks/earley_vs_pda/records.jsonl`
# (the default sample, 20 schemas per subset; the run resumes from its records, and the first
# cell says how many of the 200 they hold). Each bench
# checks masks before it times anything: every row of Table 3 against xg2ref's Earley engine at
# every step, and the PDA against the Earley engine at every step of every walk.
#
# **How our setup differs from the papers'.**
# - The engines are Python with Numba kernels, on a shared 2-core virtual machine, not C++ on an
#   AMD Ryzen 9 7950X. Absolute times are not comparable; the ratios between rows are what can be.
# - The PDA is xg2ref's own (`xg2ref.baselines.pda`), over xg2ref's machines: the "nfa" stage is
#   Thompson's construction, "merged" applies the paper's two node-merging rules. XGrammar-1's
#   own baseline is not published, so its exact machines are unknown.
# - Rows without a cache read the whole 128k vocabulary per mask; they run on the first 10
#   completions, at most 64 tokens each. The others run on all 100 json-mode-eval completions.
# - Figure 10's PDA (P) is the same executor over the Earley engine's own machines, with every
#   entry built at compile time; E is the Earley engine with the same parity (no JIT, no
#   cross-grammar cache, no repetition compression, one entry per state); E+ the Earley engine
#   ahead of time with state classes and repetition compression, as XGrammar-2 ships it. A
#   compile past 60 s counts as a timeout.
# - The real XGrammar-1 (xgrammar 0.1.19) runs in a side process when `make peers` has built it;
#   it is given the same EBNF, and its masks differ from the PDA's in two character-class cases
#   (specs/08 §4), so it is timed but not counted as exact.

# %%
import matplotlib.pyplot as plt
import numpy as np

import xg2ref as xgr
from xg2ref.baselines.pda import PDACompiler, PDAMatcher
from xg2ref.views import runtime as rt

table = rt.xg1_ablation_table()
records = rt.earley_vs_pda_records()
per_subset = {}
for r in records:
    per_subset[r["subset"]] = per_subset.get(r["subset"], 0) + 1
print(f"Table 3: {len(table)} rows; Figure 10: {len(records)} of the default sample's 200 schemas")
print("  per subset:", ", ".join(f"{k} {v}" for k, v in sorted(per_subset.items())))

# %% [markdown]
# The last of the 200 to go on record, Github_medium `o9769`, has strings of `maxLength` 32,767
# and arrays of `maxItems` 1,000. With repetitions unrolled (E's parity with P), one entry per
# state, E spends about 120 ms on each entry of the unrolled string: each of those states calls
# `json_char` and may end the string, so every token is read by Earley steps, where P's stack
# tops walk a table. E passes the 60 s limit (entry builds give way to Python every few tens of
# milliseconds, so the limit holds inside a build), while P compiles it in about 30 s and E+, which
# counts the repetitions instead of unrolling them, in about 12 s. The records come from
# successive versions of xg2ref: this schema's from the version that made the limit hold.
#
# One finished instance is not valid under `jsonschema` (JsonSchemaStore `github-issue-forms`): its
# required properties sit in `if`/`then` branches, which xg2ref (like xgrammar) does not apply
# (specs/05, "Not enforced"), so the walk may leave them out.

# %% [markdown]
# ## 1. Table 3
#
# Each row is the row above plus one optimization; the speed-up is measured on the steps both
# rows ran (the first masks of the short subset when either row has no cache).

# %%
print(f"{'row':<42}{'masks':>6}{'mean ms':>10}{'p50 ms':>9}{'p99 ms':>9}{'ours ×':>8}{'paper ms':>10}{'paper ×':>9}")
for i, row in enumerate(table):
    ours = f"{row['speed_up']:.1f}" if row.get("speed_up") else ""
    paper = f"{row['paper_ms']:.3f}" if row["paper_ms"] is not None else ""
    paper_up = f"{table[i - 1]['paper_ms'] / row['paper_ms']:.1f}" if ours else ""
    print(f"{row['name']:<42}{row['masks']:>6}{row['mean_ms']:>10.3f}{row['p50_ms']:>9.3f}{row['p99_ms']:>9.3f}"
          f"{ours:>8}{paper:>10}{paper_up:>9}")
by = {r["name"]: r for r in table}
xgrammar = by["xgrammar 0.2.8"]
for r in table:
    if not r["slow"] and r is not xgrammar:
        print(f"  {r['name']:<42} {r['mean_ms'] / xgrammar['mean_ms']:.2f}x xgrammar 0.2.8's mean, same run")

# %%
names = [r["name"] for r in table]
pos = np.arange(len(table))
fig, ax = plt.subplots(figsize=(10, 4))
ax.bar(pos - 0.2, [r["mean_ms"] for r in table], 0.4, label="xg2ref (2-core VM, Python + Numba)")
ax.bar(pos + 0.2, [r["paper_ms"] or 0 for r in table], 0.4, label="XGrammar Table 3 (Ryzen 9 7950X, C++)")
ax.set_yscale("log")
ax.set_ylabel("mask time per token, mean (ms)")
ax.set_xticks(pos)
ax.set_xticklabels(names, rotation=25, ha="right", fontsize=8)
ax.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# Reading it against the paper:
#
# - **The adaptive cache** is the step that matters, in both: two to three orders of magnitude,
#   because a mask stops reading the vocabulary and reads only the uncertain tokens of the tops.
#   Ours is larger than the paper's because our baseline pays Python's price for every one of
#   the 128k tokens per mask.
# - **Node merging** and **rule inlining** give a factor between 1 and 2 here; the paper's 1.7x and
#   4.4x come from XGrammar-1's own machines, which had more ε edges and more calls to begin with
#   (our "nfa" stage is already trimmed, and the JSON grammar's rules are few and large).
# - **Context expansion** gives little here, in time and in count (below): the builtin grammar's
#   rules return into many contexts (a value ends inside an object, an array, at the root), and
#   the union of what those contexts read accepts most of the suffixes after a pop. The rules'
#   lookahead assertions, which xgrammar 0.1 also used to prune, do more (the `lookahead` switch,
#   counted live below).
# - The cache over the Earley engine's determinized machines, and the Earley engine itself, are
#   faster still: the stack has more configurations to follow per uncertain token than the
#   Earley sets have items, which is the point of Figure 10.

# %%
no_ctx, ctx = by["+ rule inlining"]["stats"], by["+ context expansion"]["stats"]
print(f"uncertain tokens over all entries: {no_ctx['uncertain']:,} without context expansion, "
      f"{ctx['uncertain']:,} with it (the paper: 1,134 -> 120)")
print(f"cache: {ctx['entries']} entries, {ctx['stored_bytes'] / 2**20:.2f} MiB stored against "
      f"{ctx['bitset_bytes'] / 2**20:.2f} MiB as one bitset per entry (the paper: 160 MB -> 0.46 MB)")
print(f"bytes read while building: {ctx['bytes_read'] / ctx['bytes_total']:.1%} of the vocabulary's bytes "
      f"times the entries (the paper: 30%)")

# %% [markdown]
# The paper's counts are over its grammar's states with its vocabulary; ours are over xg2ref's
# machines with Llama-3's, so only the direction carries over: adaptive storage keeps the cache a
# fraction of one bitset per state, and the build reads a small share of the vocabulary's bytes
# thanks to the shared prefixes. The uncertain tokens, counted live on the same grammar and
# vocabulary, without Alg. 2, with it, and with the lookahead filters as well:

# %%
llama3 = xgr.TokenizerInfo.from_quicktok("llama3")
for label, options in (("no context expansion", dict(context_expansion=False)), ("Alg. 2", {}),
                       ("Alg. 2 and lookahead", dict(lookahead=True))):
    stats = PDACompiler(llama3, stage="merged", **options).compile_builtin_json_grammar().mask_cache.stats
    print(f"{label:<22} uncertain {stats.uncertain:>6,}   entries {stats.entries}   balanced (bitsets) {stats.balanced}")

# %% [markdown]
# ## 2. Figure 10: Earley against the pushdown automaton on JSONSchemaBench

# %%
engines = [e for e in ("P", "E", "E+", "xgrammar", "xg1") if any(e in r for r in records)]
labels = {"P": "P: pushdown automaton", "E": "E: Earley, same parity", "E+": "E+: Earley as shipped",
          "xgrammar": "xgrammar 0.2.8", "xg1": "xgrammar 0.1.19 (side process)"}
print(f"{'engine':<34}{'compiled':>9}{'p50 ms':>9}{'p90 ms':>9}{'max ms':>10}{'mask p50 µs':>13}{'p99 µs':>9}")
for e in engines:
    ms = [r[e]["ms"] for r in records if "ms" in r.get(e, {})]
    us = [u for r in records for u in r.get(e, {}).get("mask_us", [])]
    q = (lambda v, p: f"{np.percentile(v, p):.1f}" if len(v) else "-")
    print(f"{labels[e]:<34}{len(ms):>9}{q(ms, 50):>9}{q(ms, 90):>9}{q(ms, 100):>10}{q(us, 50):>13}{q(us, 99):>9}")
failed = {}
for r in records:
    for e in engines:
        if "failed" in r.get(e, {}):
            failed[(e, r[e]["failed"])] = failed.get((e, r[e]["failed"]), 0) + 1
for (e, why), n in sorted(failed.items()):
    print(f"  {e} failed: {why} x{n}")
both = [r for r in records if "ms" in r["P"] and "ms" in r["E"]]
wins = sum(r["E"]["ms"] < r["P"]["ms"] for r in both)
walked = [r for r in both if r["P"].get("mask_us") and r["E"].get("mask_us")]
faster = sum(np.mean(r["E"]["mask_us"]) < np.mean(r["P"]["mask_us"]) for r in walked)
print(f"E compiles faster than P on {wins} of {len(both)} schemas ({wins / len(both):.0%}); its mean mask is lower "
      f"on {faster} of {len(walked)} walks")
print(f"masks of P and E differ on {sum('mismatch' in r for r in records)} walks; "
      f"{sum(r.get('valid') is True for r in records)} of {sum('valid' in r for r in records)} finished instances "
      f"are valid under jsonschema")

# %%
fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4))
for e in engines:
    ms = np.sort([r[e]["ms"] for r in records if "ms" in r.get(e, {})])
    a.plot(ms, np.arange(1, len(ms) + 1) / len(records), label=labels[e])
    us = np.sort([u for r in records for u in r.get(e, {}).get("mask_us", [])])
    if len(us):
        b.plot(us, np.arange(1, len(us) + 1) / len(us), label=labels[e])
a.set_xscale("log"), a.set_xlabel("compile time, every entry built (ms)"), a.set_ylabel("share of all schemas")
b.set_xscale("log"), b.set_xlabel("time per mask along the walk (µs)"), b.set_ylabel("share of masks")
a.legend(fontsize=8), b.legend(fontsize=8)
fig.suptitle("Figure 10 as its text describes it (our reading): compile time and time per mask")
fig.tight_layout()
plt.show()

# %% [markdown]
# A curve that stops below 1 is an engine that did not compile every schema in 60 s (xgrammar
# 0.1.19's also stops where its side process was not run: its "compiled" count above says on how
# many schemas it was). The paper
# also says that "the long-tail is caused by the huge inputs, instead of the complexity of the
# algorithm": per schema, the two parsers side by side and against the size of the schema.

# %%
fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))
p_ms = np.array([r["P"]["ms"] for r in both])
e_ms = np.array([r["E"]["ms"] for r in both])
size = np.array([r["schema_bytes"] for r in both])
a.scatter(e_ms, p_ms, s=10)
lim = [min(e_ms.min(), p_ms.min()), max(e_ms.max(), p_ms.max())]
a.plot(lim, lim, "k--", lw=0.8, label="equal")
a.set_xscale("log"), a.set_yscale("log"), a.set_xlabel("E compile (ms)"), a.set_ylabel("P compile (ms)")
a.legend()
a.set_title("each schema compiled by both: above the line, Earley wins")
b.scatter(size, e_ms, s=10, label="E")
b.scatter(size, p_ms, s=10, label="P", alpha=0.6)
b.set_xscale("log"), b.set_yscale("log"), b.set_xlabel("schema size (bytes of JSON)"), b.set_ylabel("compile (ms)")
b.legend()
fig.tight_layout()
plt.show()
big = size >= np.percentile(size, 90)
print(f"P / E compile time per schema: median {np.median(p_ms / e_ms):.1f}x, p90 {np.percentile(p_ms / e_ms, 90):.1f}x")
print(f"the largest 10% of schemas: median compile E {np.median(e_ms[big]):.0f} ms, P {np.median(p_ms[big]):.0f} ms; "
      f"all schemas: E {np.median(e_ms):.0f} ms, P {np.median(p_ms):.0f} ms")

# %% [markdown]
# What differs inside the pair besides the parser is the filter of uncertain tokens at build
# time (P: XGrammar-1's Alg. 2; E: the Earley engine's context and lookahead checks). The summed
# counts say how much of P's extra work is tokens it cannot decide at build time:

# %%
print(f"uncertain tokens summed over all entries, schemas both compiled: "
      f"P {sum(r['P']['uncertain'] for r in both):,}, E {sum(r['E']['uncertain'] for r in both):,}")

# %% [markdown]
# ## 3. The mechanism behind the records, live
#
# On a cut-down vocabulary, one schema compiled by both parsers ahead of time, and a valid
# instance read byte by byte with the two masks compared at every step.

# %%
info = rt.sub_vocabulary(3000)
schema = {"type": "object", "properties": {"id": {"type": "integer"}, "tags": {"type": "array", "items": {
    "type": "string"}}}, "required": ["id"]}
pda = PDAMatcher(PDACompiler(info, inline="xg2ref").compile_json_schema(schema))
earley = xgr.GrammarMatcher(xgr.GrammarCompiler(info, jit=False, cross_grammar_cache=False).compile_json_schema(schema))
instance = '{"id": 7, "tags": ["a", "b"]}'
for ch in instance:
    assert np.array_equal(pda.compute_bool_mask(), earley.compute_bool_mask()), ch
    assert pda.accept_string(ch) and earley.accept_string(ch)
print(f"{len(instance)} masks equal; both complete: {pda.is_completed()} {earley.is_completed()}")

# %% [markdown]
# Actual code: `xg2ref.tools.bench.xg1_ablation.bench_xg1_ablation` (Table 3's rows, masks checked
# first), `xg2ref.tools.bench.earley_vs_pda.bench_earley_vs_pda` (Figure 10's engines, walks and
# records), `xg2ref.baselines.pda.PDACompiler` and `xg2ref.baselines.pda.PDAMatcher` (the pushdown
# automaton), `xg2ref.tools.bench.xg1_peer.XG1Peer` (xgrammar 0.1.19 in its side process);
# specs/08-pda-baseline.md.
