# %% [markdown]
# # 10 — Repetition state compression
#
# **XGrammar-2 §3.6, Figure 5 and Algorithm 3.**
#
# JSON Schema's `maxLength`, `minItems`, `maxItems` and a regex's `{m,n}` become bounded
# repetitions `R{l,r}`. Unrolled, `R{l,r}` is r copies of R's machine: a string with
# `maxLength: 100000` would need a hundred thousand FSM states, each a place the mask cache must
# know. The paper's remedy (Algorithm 3) keeps a fixed number t of unrolled copies and counts the
# rest: the parser's item for the repetition carries k, the copies read so far.
#
# xg2ref counts every copy of a repetition above the threshold (32 copies): the repetition
# becomes a *counted rule* whose machine is one copy of R, and whose Earley items carry the
# count k. Two rules replace unrolling:
#
#     LOOP  [C -> f, k], f final, k + 1 < r     |-  [C -> start, k + 1]     (another copy)
#     END   [C -> f, k] may complete only if f is final and l <= k + 1
#
# Where Algorithm 3 keeps t copies so that mask-cache entries may ignore k, xg2ref's cache looks
# at the zone k is in. A token of at most L bytes (L: the longest token) completes at most L
# copies, so
#
# | zone | counts | entry |
# |---|---|---|
# | FREE | l <= k + 1 and k + 1 + L < r | one, shared: no bound is within reach of a token |
# | NOEXIT | k + 1 + L < l | one: the rule may not end within a token, and may go on |
# | exact | within L of a bound | one per count, built on first use |
#
# which is exact for every range and costs at most 2L + 2 entries per state, whatever l and r.

# %%
import os
import time

import matplotlib.pyplot as plt
import numpy as np

import xg2ref as xgr
from xg2ref.oracle import brute_force_mask
from xg2ref.views import runtime as rt

FULL = os.environ.get("XG2REF_NOTEBOOK_FULL") == "1"
info = rt.sub_vocabulary(2000)
longest = max(len(t) for t in info.decoded_vocab)
print(info, f"longest token: {longest} bytes")
warm = xgr.GrammarCompiler(info).compile_json_schema({"type": "string", "maxLength": 40})
xgr.GrammarMatcher(warm).compute_bool_mask()  # the kernels load before anything is timed

# %% [markdown]
# ## 1. States against the bound: unrolled and counted
#
# The same schema, `{"type": "string", "maxLength": r}`, compiled with repetitions unrolled
# (`repetition_compression=False`) and counted (the default). `rt.grammar_size` reports the FSM
# states, the classes of scannable states (one mask-cache entry each) and the counted rules.

# %%
bounds = [33, 64, 128, 256, 512, 1024, 10_000, 100_000]
UNROLL_UP_TO = 4096 if FULL else 1024
rows = []
for r in bounds:
    schema = {"type": "string", "maxLength": r}
    row = {"r": r}
    for label, options in (("counted", {}), ("unrolled", {"repetition_compression": False})):
        if label == "unrolled" and r > UNROLL_UP_TO:
            continue
        start = time.perf_counter()
        compiled = xgr.GrammarCompiler(info, **options).compile_json_schema(schema)
        xgr.GrammarMatcher(compiled).compute_bool_mask()
        size = rt.grammar_size(compiled)
        row[label] = {"states": size["states"], "classes": size["classes"], "ms": (time.perf_counter() - start) * 1e3,
                      "counted": size["counted"]}
    rows.append(row)

print(f"{'maxLength':>10}  {'states':>8} {'entries':>8} {'to first mask':>14}   {'states':>8} {'entries':>8} {'to first mask':>14}")
print(f"{'':>10}  {'counted':^32}   {'unrolled':^32}")
for row in rows:
    line = f"{row['r']:>10}  "
    for label in ("counted", "unrolled"):
        x = row.get(label)
        line += (f"{x['states']:>8} {x['classes']:>8} {x['ms']:>11.0f} ms   " if x else f"{'-':>8} {'-':>8} {'-':>14}   ")
    print(line)
print("counted rule of maxLength 100000:", rows[-1]["counted"]["counted"])

# %%
fig, ax = plt.subplots(figsize=(7, 3.8))
for label, colour in (("unrolled", "tab:red"), ("counted", "tab:blue")):
    xs = [row["r"] for row in rows if label in row]
    ax.plot(xs, [row[label]["states"] for row in rows if label in row], marker="o", color=colour,
            label=f"{label}: FSM states")
    ax.plot(xs, [row[label]["classes"] for row in rows if label in row], marker="s", ls="--", color=colour,
            label=f"{label}: mask-cache entries")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("maxLength r")
ax.set_ylabel("count")
ax.set_title("States against the bound (XGrammar-2 §3.6, Fig. 5)")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# Unrolled, the states grow with r; counted, they stay at one copy's machine whatever r is
# (the string's own rules and one counted rule). The entries of the unrolled machine stay few as
# well, for another reason: its copies read every token alike, and states that do share one
# entry (state classes, XGrammar-2's observation behind §3.6); but the states themselves, their
# construction and the chart's items grow with r.
#
# ## 2. Zones of counts
#
# For `R{100, 1000}` and this vocabulary's longest token, the zone of each count k:

# %%
lo, hi = 100, 1000
counts = np.arange(0, hi)
zones = rt.count_zones(lo, hi, longest, counts.tolist())
colour = {"NOEXIT": "tab:purple", "FREE": "tab:green", "exact": "tab:red"}
fig, ax = plt.subplots(figsize=(9, 1.9))
ax.scatter(counts, np.zeros_like(counts), c=[colour[z] for z in zones], marker="|", s=400)
for z, c in colour.items():
    ax.scatter([], [], c=c, label=z, marker="s")
ax.set_yticks([])
ax.set_xlabel(f"copies read k (R{{{lo},{hi}}}, longest token {longest} bytes)")
ax.legend(ncol=3, loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=8, frameon=False)
fig.tight_layout()
plt.show()
runs = []  # (zone, first count, last count), in order
for k, z in zip(counts.tolist(), zones):
    if runs and runs[-1][0] == z:
        runs[-1][2] = k
    else:
        runs.append([z, k, k])
for z, first, last in runs:
    print(f"k = {first:>3} .. {last:>3}: {z}")

# %% [markdown]
# A thousand counts need one FREE entry, one NOEXIT entry and, per state, one entry for each
# count within a token of a bound, built when a mask first meets that count.
#
# ## 3. The count in the chart, and masks at both bounds of `maxLength`
#
# A string with `minLength: 40` and `maxLength: 60`: the matcher's current Earley items of the
# counted rule carry k (`rt.counted_items`). Before k = 40 no closing quote is allowed; at
# k = 60 only the closing quote is; in between, a token is allowed only if its characters still
# fit.

# %%
schema = {"type": "string", "minLength": 40, "maxLength": 60}
compiled = xgr.GrammarCompiler(info).compile_json_schema(schema)
quote = info.decoded_vocab.index(b'"')
lengths = np.array([len(t) for t in info.decoded_vocab])
allowed, longest_allowed, quote_allowed = [], [], []
for k in range(0, 61):
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string('"' + "x" * k)
    mask = m.compute_bool_mask()
    allowed.append(int(mask.sum()))
    longest_allowed.append(int(lengths[mask].max()))
    quote_allowed.append(bool(mask[quote]))
    if k in (0, 38, 39, 45, 59, 60):
        print(f"k = {k:>2}: {allowed[-1]:>4} tokens allowed, the longest {longest_allowed[-1]:>2} bytes, "
              f"closing quote {'allowed' if quote_allowed[-1] else 'not allowed'}; items {rt.counted_items(m)}")

fig, ax = plt.subplots(figsize=(8, 3))
ax.plot(allowed, marker=".", label="tokens allowed")
ax.plot(longest_allowed, marker=".", label="longest allowed token (bytes)")
ax.axvline(40, color="gray", ls=":")
ax.axvline(60, color="gray", ls=":")
ax.set_yscale("log")
ax.set_xlabel('characters read after the opening quote (k)')
ax.set_title('{"type": "string", "minLength": 40, "maxLength": 60}')
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# Near the upper bound the longest allowed token shrinks with the room left: that is the exact
# zone at work (the count is read from the items, so no token can overrun the bound). The bound
# counts characters, not bytes: at k = 59 the longest allowed token has three bytes, one
# character in UTF-8.

# %%
if FULL:  # maxLength 100000 on the full Llama-3 vocabulary: counted only, unrolling it is out of reach
    llama = xgr.TokenizerInfo.from_quicktok("llama3")
    start = time.perf_counter()
    big = xgr.GrammarCompiler(llama).compile_json_schema({"type": "string", "maxLength": 100_000})
    xgr.GrammarMatcher(big).compute_bool_mask()
    print(f"Llama-3, maxLength 100000: {rt.grammar_size(big)['states']} states, "
          f"first mask after {1e3 * (time.perf_counter() - start):.0f} ms")

# %% [markdown]
# ## 4. Check against the brute-force oracle
#
# The oracle reads the repetition as it is written (no counting, no zones) and asks about every
# token. To keep its prefixes short, the check lowers the threshold to 4 copies, so that
# `minLength: 5, maxLength: 12` is counted too, and compares the masks on a 300-token vocabulary
# at counts on both sides of both bounds.

# %%
small = rt.sub_vocabulary(300)
vocab = [bytes(t) for t in small.decoded_vocab]
counted = xgr.GrammarCompiler(small, repetition_threshold=4).compile_json_schema(
    {"type": "string", "minLength": 5, "maxLength": 12})
assert rt.grammar_size(counted)["counted"], "the repetition is counted"
for k in (4, 5, 11, 12):
    text = ('"' + "ab" * 6)[:k + 1]
    m = xgr.GrammarMatcher(counted)
    assert m.accept_string(text)
    want = brute_force_mask(counted.grammar.ir, text.encode(), vocab, stop_token_ids=small.stop_token_ids)
    have = m.compute_bool_mask()
    assert (have == want).all(), k
    print(f"k = {k:>2}: {int(have.sum()):>3} tokens allowed, equal to the oracle's; items {rt.counted_items(m)}")

# %% [markdown]
# Actual code: `xg2ref.grammar.repetition.compress_repetitions`, `xg2ref.kernels.earley.close_set` (LOOP and
# END of counted rules), `xg2ref.kernels.mask_fill.count_zone`, `xg2ref.kernels.mask_fill.item_entry`,
# `xg2ref.mask.cache.AdaptiveTokenMaskCache.ensure_entries` (entries per zone).
