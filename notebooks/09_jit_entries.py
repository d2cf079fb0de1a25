# %% [markdown]
# # 09 — JIT construction of the token-mask cache
#
# **XGrammar-2 §3.5.**
#
# The adaptive token-mask cache (notebook 04) holds, for every scannable state of the grammar,
# the tokens accepted and rejected there whatever the stack, and the few left uncertain. Built
# eagerly, every entry is paid for at compile time, before the first token, although a given
# output visits only some of the states. With JIT (just in time), an entry is built the first
# time a mask needs it, and only the K entries estimated to cost most are built up front, where
# the paper overlaps them with the model's prefill. Masks are the same either way; what moves
# is *when* the work happens:
#
# | configuration | compile | first mask | later masks |
# |---|---|---|---|
# | eager (`jit=False`) | every entry | lookups | lookups |
# | JIT, K = 0 (`jit_eager_entries=0`) | no entry | builds the entries it meets | build what is new |
# | JIT, K = k | the k costliest | as above, minus those | as above |
# | JIT with the cost model | the few the model picks | ... | ... |
# | the default: the cost model and the builder thread | the few the model picks | builds what no one built yet | what the builder has not reached |
#
# In the default configuration a builder thread builds the missing entries beside decoding,
# nearest to where the matcher stands first, its kernels outside the GIL (`background_builds`;
# specs/04, "Threads"); the other JIT rows switch it off to show when the fills themselves build.
#
# The workload: the first eight json-mode-eval schemas with their gold answers, on the first
# 16,000 tokens of Llama-3 (`XG2REF_NOTEBOOK_FULL=1`: all 100 schemas on the full vocabulary).

# %%
import os
import time

import matplotlib.pyplot as plt
import numpy as np

import xg2ref as xgr
from xg2ref.oracle import brute_force_mask
from xg2ref.views import runtime as rt

FULL = os.environ.get("XG2REF_NOTEBOOK_FULL") == "1"
info = xgr.TokenizerInfo.from_quicktok("llama3") if FULL else rt.sub_vocabulary(16000)
items = rt.json_mode_eval(None if FULL else 8)
print(info, f"{len(items)} schemas; the first:")
print(items[0]["schema"])
print(items[0]["completion"])

# %% [markdown]
# ## 1. Compile, first mask, the whole answer
#
# For each configuration, one compiler (the cross-grammar cache off, so that each schema builds
# its own entries) compiles every schema; then a matcher walks the gold answer token by token,
# filling a mask before every token (`rt.mask_steps` times each fill and counts the entries it
# built).

# %%
configs = {
    "eager": dict(jit=False),
    "JIT, K=0": dict(jit_eager_entries=0, background_builds=False),
    "JIT, K=4": dict(jit_eager_entries=4, background_builds=False),
    "JIT, cost model": dict(background_builds=False),
    "default (builder)": dict(),
}
for options in configs.values():  # load the kernels before timing anything
    warm = xgr.GrammarCompiler(info, **options).compile_json_schema({"type": "object"})
    rt.mask_steps(warm, rt.encode(info, '{"a": [1, "b"]}'))

results = {}
for name, options in configs.items():
    compiler = xgr.GrammarCompiler(info, cross_grammar_cache=False, **options)
    rows = []
    for item in items:
        start = time.perf_counter()
        compiled = compiler.compile_json_schema(item["schema"])
        compile_s = time.perf_counter() - start
        at_compile = rt.entry_summary(compiled)
        steps = rt.mask_steps(compiled, rt.encode(info, item["completion"]))
        in_the_end = rt.entry_summary(compiled)
        rows.append({"compile": compile_s, "first": steps[0]["seconds"], "steps": steps,
                     "answer": sum(s["seconds"] for s in steps), "classes": at_compile["classes"],
                     "built_at_compile": at_compile["built"], "built_in_the_end": in_the_end["built"],
                     "entry_s_at_compile": at_compile["build_seconds"],
                     "entry_s_in_answer": in_the_end["build_seconds"] - at_compile["build_seconds"]})
    results[name] = rows


def mean_ms(name, key):
    return 1e3 * np.mean([r[key] for r in results[name]])


print(f"{'':<16}{'compile':>9}{'(entries)':>10}{'first mask':>11}{'answer':>8}{'(entries)':>10}"
      f"{'entries built: at compile':>27}{'in the end':>11}{'of':>6}")
for name in results:
    print(f"{name:<16}{mean_ms(name, 'compile'):>9.1f}{mean_ms(name, 'entry_s_at_compile'):>10.1f}"
          f"{mean_ms(name, 'first'):>11.2f}{mean_ms(name, 'answer'):>8.1f}{mean_ms(name, 'entry_s_in_answer'):>10.1f}"
          f"{sum(r['built_at_compile'] for r in results[name]):>27}{sum(r['built_in_the_end'] for r in results[name]):>11}"
          f"{sum(r['classes'] for r in results[name]):>6}")

# %% [markdown]
# (Milliseconds, means per schema; *(entries)*: the part of the time before it spent building
# mask-cache entries, the cache's setup included; *answer*: all the masks of the gold answer, the
# first included; *entries built*: classes of scannable states, one entry each, summed over the
# schemas.)
#
# Eagerly, every entry is built inside the compile, and the answers' masks are cheap lookups.
# With K = 0 the compile builds none, and the answers build the entries of the states they visit,
# well under half of them: the rest are never paid for. The rest of the compile (normalizing the
# grammar and building its FSMs, in Python here) is the same in every configuration, and on this
# 16,000-token vocabulary it is most of it; the entries' share grows with the vocabulary
# (an entry classifies every token), which is what §3.5 is about. In the default row the builder
# thread starts as soon as the cache exists: its "at compile" count is what it had built when
# the compile returned, and its answers cost about what the eager ones do, with JIT's compile.

# %%
fig, ax = plt.subplots(figsize=(7.5, 3.2))
names = list(results)
other = [mean_ms(n, "compile") - mean_ms(n, "entry_s_at_compile") for n in names]
at_compile = [mean_ms(n, "entry_s_at_compile") for n in names]
in_answer = [mean_ms(n, "entry_s_in_answer") for n in names]
ax.barh(names, other, color="tab:gray", label="compile: grammar and FSMs")
ax.barh(names, at_compile, left=other, color="tab:blue", label="compile: entries")
ax.barh(names, in_answer, left=np.add(other, at_compile), color="tab:orange", label="entries built while decoding")
ax.invert_yaxis()
ax.set_xlabel("ms per schema (mean)")
ax.set_title("Where the entries are paid for (XGrammar-2 §3.5)")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 2. Step by step
#
# One schema, mask after mask: with JIT a step that meets new states builds their entries (the
# spikes), and a step that meets none costs what it costs eagerly. With the builder thread some
# of those entries are already there when the matcher arrives (this loop has no forward pass to
# hide them behind, so the fills still meet many first).

# %%
k = int(np.argmax([len(r["steps"]) for r in results["eager"]]))
fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 4.5), sharex=True)
for name in ("eager", "JIT, K=0", "default (builder)"):
    steps = results[name][k]["steps"]
    top.plot([s["seconds"] * 1e6 for s in steps], marker=".", label=name)
top.set_yscale("log")
top.set_ylabel("mask time (µs)")
top.legend()
bottom.bar(range(len(results["JIT, K=0"][k]["steps"])), [s["built"] for s in results["JIT, K=0"][k]["steps"]],
           color="tab:orange")
bottom.set_ylabel("entries built (JIT)")
bottom.set_xlabel(f"token of the answer to {items[k]['id']}")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 3. The cost model
#
# Which entries are worth building before the first token? §3.5 estimates each state's cost and
# builds the K most expensive. xg2ref's estimate for a class of states: the regular tokens whose
# first byte the state may read (through its byte edges and the FIRST set of its rule edges), a
# quarter of that for a *pure* state whose tokens are read by a table walk, plus a context term
# for a final state: twice the tokens whose first byte may follow its rule (each asks context
# expansion what follows). A string's content state, which reads almost any byte, tops the list.
# With no K given, the compiler builds the costliest classes (at most two, each worth at least a
# fifth of the vocabulary) whose predicted time fits in half of the grammar's own compile time.

# %%
compiled = xgr.GrammarCompiler(info, background_builds=False).compile_json_schema(items[k]["schema"])
costs = rt.entry_costs(compiled)
print(f"{'class':>5}  {'rule':<28}{'state':>6}{'estimated cost':>16}  built by the cost model")
for row in costs[:8]:
    print(f"{row['class']:>5}  {row['rule'][:27]:<28}{row['state']:>6}{row['cost']:>16.0f}  {row['built']}")
print(f"... {len(costs)} classes in all, {sum(r['built'] for r in costs)} built at compile time")

fig, ax = plt.subplots(figsize=(8, 2.8))
ax.bar(range(len(costs)), [r["cost"] for r in costs],
       color=["tab:green" if r["built"] else "tab:gray" for r in costs])
ax.set_xlabel("class of scannable states, costliest first")
ax.set_ylabel("estimated cost (tokens)")
ax.set_title("The cost model's estimates; green: built at compile time")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 4. Check against the brute-force oracle
#
# JIT changes when entries are built, never what a mask is. Along each gold answer, the masks of
# the four configurations are equal at every step; and along seeded walks in a small schema on a
# 300-token vocabulary (small enough for the oracle, which asks its recognizer about every token),
# a JIT matcher's masks equal the oracle's.

# %%
for item in items[:2]:
    masks = {}
    for name, options in configs.items():
        c = xgr.GrammarCompiler(info, **options).compile_json_schema(item["schema"])
        m = xgr.GrammarMatcher(c)
        seq = []
        for t in rt.encode(info, item["completion"]):
            seq.append(np.packbits(m.compute_bool_mask()))
            assert m.accept_token(t)
        masks[name] = seq
    assert all(len(masks[n]) == len(masks["eager"]) and all((a == b).all() for a, b in zip(masks[n], masks["eager"]))
               for n in masks)
print("the four configurations give the same masks along the first two answers")

small = rt.sub_vocabulary(300)
vocab = [bytes(t) for t in small.decoded_vocab]
schema = {"type": "object", "properties": {"id": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
          "required": ["id"]}
jit = xgr.GrammarCompiler(small, jit_eager_entries=0).compile_json_schema(schema, any_whitespace=False)
for seed in range(2):
    for step in rt.random_walk(jit, 8, seed=seed):
        want = brute_force_mask(jit.grammar.ir, step["prefix"], vocab, stop_token_ids=small.stop_token_ids)
        assert (step["mask"] == want).all(), step["prefix"]
    print(f"walk {seed}: masks equal the oracle's along {step['prefix']!r}")

# %% [markdown]
# Actual code: `xg2ref.kernels.entry_build.fill_mask_building` (the fill kernel builds the entries it
# misses, a batch per step), `xg2ref.mask.cache.AdaptiveTokenMaskCache.fill`,
# `xg2ref.mask.cache.AdaptiveTokenMaskCache.ensure_entries` (the entries built from Python: counted zones, unordered rules),
# `xg2ref.mask.jit.JitSchedule.estimated_costs`, `xg2ref.mask.jit.JitSchedule.auto_eager`,
# `xg2ref.kernels.mask_fill.fill_mask` (its `NEED_ENTRY` status), `xg2ref.compiler.GrammarCompiler` (`jit`,
# `jit_eager_entries`, `background_builds`), `xg2ref.mask.background.BackgroundBuilder` and
# `xg2ref.kernels.build_order.reach_order` (the builder thread and its order).
