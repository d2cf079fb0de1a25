# %% [markdown]
# # 03 — The Earley chart: predict, scan, complete (XGrammar-2 App. D, Table 6, left half)
#
# XGrammar-2 replaces XGrammar's pushdown automaton with an Earley parser (§3.4). An *item*
# `[i, k, A → μ • ν]` says: rule `A` began at byte `i`, and after reading bytes `i..k` its body
# stands at the dot. Set `k` of the chart holds every item alive after `k` bytes. Table 6 (left
# half) gives three rules that fill it:
#
# | rule | premises | conclusion |
# |---|---|---|
# | ① Predict | `[i, j, A → μ • B ν]`, `B → ρ` a production | `[j, j, B → • ρ]` |
# | ② Scan | `[i, j, A → μ • a ν]`, the next byte is `a` | `[i, j+1, A → μ a • ν]` |
# | ③ Complete | `[j, k, B → ρ •]`, `[i, j, A → μ • B ν]` | `[i, k, A → μ B • ν]` |
#
# starting from `[0, 0, S' → • S]`; the input is a sentence when set `N` holds `[0, N, S' → S •]`.
#
# In xg2ref the dot is a state of the rule's minimized automaton (notebook 02), so an item is a
# pair (FSM state, origin). Items print as dotted rules: the shortest path of symbols into the
# state, a dot, and what may be read next (`<end>`: the rule may end here). Because states are
# shared after minimization, the printed path is one way to reach the state, not necessarily
# the one this parse took. One more rule handles nullable rules (Aycock and Horspool): when
# `B` may derive the empty string, *predict* also moves the dot over `B` at once. In the traces
# below every item carries the rule(s) that put it there, read off the real chart.

# %%
import matplotlib.pyplot as plt

import xg2ref as xgr
from xg2ref.oracle import brute_force_accepts, brute_force_mask, brute_force_next_bytes
from xg2ref.views.parsing import chart_sets, earley_trace, format_table

COLUMNS = ["set", "item", "how", "premises"]


def show(grammar: str, data: str) -> list:
    rows = earley_trace(grammar, data)
    print(format_table(rows, COLUMNS, max_width=80))
    return rows


# %% [markdown]
# ## Left recursion
#
# `expr ::= expr "+" term | term`. Predicting `expr` inside `expr` adds the same item
# `[k, k, expr → • …]` again, which the set already holds, so left recursion costs nothing.
# After each `+` the chart looks the same: the number of items per set does not grow.

# %%
left = 'root ::= expr\nexpr ::= expr "+" term | term\nterm ::= [0-9]+ | "(" expr ")"'
left_rows = show(left, "1+2+3")

# %% [markdown]
# ## Right recursion
#
# `root ::= "a" t; t ::= root | "b"`: each `a` predicts a new `t` and a new `root` one byte
# further, while the items waiting for them stay behind in the earlier sets. The final `b`
# sets off a cascade of completions back to origin 0: by ③ alone the last set would hold two
# items per `a` read, so the work of that one byte, and of every byte of a JSON array's last
# element, grows with the input. (A rule that calls *itself* last is turned into a loop when its
# automaton is built, notebook 02, so `chars ::= [a-z] chars | "\""` never grows; the compiler
# also joins a rule used once into its caller when the two call each other last, as here, but
# the traces below show the grammar as written.)
#
# **Leo items** (Leo 1991; specs/03) complete such a chain in one step. The item
# `root ::= "a" • t @2` in set 3 is a *link*: `t` is the last thing it reads, and the set its
# rule began in holds exactly one item waiting for `root`. Completing `t` there can only complete
# the next link, and the next, so xg2ref adds the chain's last item at once (`leo` below) and
# remembers that last item with the link, so the next element costs one step too. First the
# trace without Leo items (`leo=False`, every item of the cascade), then the real one.

# %%
right = 'root ::= "a" t\nt ::= root | "b"'
plain_rows = earley_trace(right, "aaab", leo=False)
print(format_table([r for r in plain_rows if r["set"] == 4], COLUMNS, max_width=80))
right_rows = show(right, "aaab")

# %% [markdown]
# ## Nullable rules
#
# `a` and `b` may be empty. In set 0, *predict (nullable)* moves the dot of `root` over `a` and
# then over `b` without reading anything, so `"c"` is expected at once.

# %%
nullable = 'root ::= a b "c"\na ::= "x"?\nb ::= "y"*'
nullable_rows = show(nullable, "xc")

# %% [markdown]
# ## The chart as a picture
#
# Items per set, by the rule that derived them (the first one, when several do), for longer
# inputs. Left recursion stays flat; right recursion completed by ③ alone is flat until its last
# set, which holds the whole completion cascade; with Leo items that set holds three items; the
# tail-recursive version (a loop after construction) stays at one item per set.

# %%
cases = [("left recursion", left, "1+2+3+4+5+6+7", True), ("right recursion, ③ alone", right, "aaaaaaaaaaab", False),
         ("right recursion, Leo items", right, "aaaaaaaaaaab", True),
         ("tail self-call (a loop)", 'root ::= "a" root | "b"', "aaaaaaaaaaab", True)]
kinds = ["init", "scan", "predict", "predict (nullable)", "complete", "leo"]
colors = {"init": "tab:gray", "scan": "tab:blue", "predict": "tab:orange", "predict (nullable)": "tab:olive",
          "complete": "tab:green", "leo": "tab:red"}
fig, axes = plt.subplots(1, 4, figsize=(16, 3.2), sharey=True)
for ax, (title, grammar, data, leo) in zip(axes, cases):
    rows = earley_trace(grammar, data, leo=leo)
    bottom = [0] * (len(data) + 1)
    for kind in kinds:
        counts = [sum(1 for r in rows if r["set"] == k and r["how"][0] == kind) for k in range(len(data) + 1)]
        ax.bar(range(len(data) + 1), counts, bottom=bottom, color=colors[kind], label=kind)
        bottom = [b + c for b, c in zip(bottom, counts)]
    ax.set_xticks(range(len(data) + 1))
    ax.set_xticklabels(["∅"] + list(data))
    ax.set_title(title)
    ax.set_xlabel("set (after the byte shown)")
axes[0].set_ylabel("items (by first derivation)")
axes[-1].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Leo items on a long list
#
# A JSON-like list whose two rules both have other callers, so nothing joins them before the
# engine: `elements ::= value elements_rest`, `elements_rest ::= "" | "," elements`. Below, the
# items in each set while a list of 400 numbers is read, with Leo items and without
# (`GrammarCompiler(info, leo_items=False)`, the ablation): without them every comma adds an item
# that each later completion walks again, so the sets grow with the list and the whole read is
# quadratic; with them the sets stay as small as after the first element.

# %%
import numpy as np

json_list = r"""
root ::= "[" elements "]" | "[]" | "<" elements_rest ">"
elements ::= value elements_rest
elements_rest ::= "" | "," elements
value ::= [0-9]+ | "[" elements "]" | "[]"
"""
text = "[" + ",".join(str(n % 97) for n in range(400)) + "]"
byte_info = xgr.TokenizerInfo([bytes([b]) for b in range(256)])
sizes = {}
for label, leo in (("Leo items", True), ("③ alone", False)):
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(byte_info, leo_items=leo).compile_grammar(json_list))
    assert m.accept_string(text) and m.is_completed()
    sizes[label] = np.diff(m.parser.chart.set_start[:m.parser.position + 2])
fig, ax = plt.subplots(figsize=(8, 3))
for label, counts in sizes.items():
    ax.plot(counts, label=label, lw=0.8)
ax.set_xlabel("set (bytes read)")
ax.set_ylabel("items in the set")
ax.legend()
plt.tight_layout()
plt.show()
print({label: int(counts[-40:].max()) for label, counts in sizes.items()}, "items in the last sets")
assert sizes["Leo items"][-200:].max() == sizes["Leo items"][:60].max() < sizes["③ alone"][-200:].max() / 20

# %% [markdown]
# ## Rollback is dropping sets (XGrammar §3.3)
#
# A set is never changed once it is built, so the chart is its own history: to undo the last
# token, drop the sets it added. Below, a matcher reads four tokens; rolling back two leaves
# exactly the first sets, untouched, and the parser goes on from there.

# %%
vocab = [b"(", b"1", b"+", b"2", b")", b"+2", b"</s>"]
info = xgr.TokenizerInfo(vocab, stop_token_ids=[6])
matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(left))
for token in (0, 1, 5, 2):  # "(", "1", "+2", "+"
    assert matcher.accept_token(token)
before = chart_sets(matcher)
matcher.rollback(2)  # undo "+" and "+2"
after = chart_sets(matcher)
print(f"sets before: {len(before)}, after rolling back 2 tokens (3 bytes): {len(after)}")
assert after == before[:len(after)]
for k, items in enumerate(after):
    print(f"set {k}: " + " | ".join(items))

# %% [markdown]
# ## Check against the brute-force oracle
#
# The oracle's recognizer reads the grammar tree and knows nothing of items. For every prefix
# of every input above: the bytes the items of set `k` may scan next are exactly the bytes the
# oracle lets follow the first `k` bytes; the root has ended at set `k` exactly when the prefix
# is a sentence; and every item was derived by one of the rules. Then the masks along the
# token walk above agree with the oracle's.

# %%
for grammar, data, rows in ((left, "1+2+3", left_rows), (right, "aaab", right_rows),
                            (nullable, "xc", nullable_rows)):
    ir = xgr.Grammar.from_ebnf(grammar).ir
    assert all(r["how"] != ["other"] for r in rows)
    for k in range(len(data) + 1):
        here = [r for r in rows if r["set"] == k]
        scannable = set().union(*(r["next_bytes"] for r in here))
        assert scannable == brute_force_next_bytes(ir, data[:k].encode()), (grammar, k)
        ended = any(r["final"] and r["rule"] == "root" and r["origin"] == 0 for r in here)
        assert ended == brute_force_accepts(ir, data[:k].encode()), (grammar, k)

walk = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(left))
prefix = b""
for token in (0, 1, 5, 2, 3, 4):
    want = brute_force_mask(xgr.Grammar.from_ebnf(left).ir, prefix, vocab, stop_token_ids=[6])
    assert (walk.compute_bool_mask() == want).all(), prefix
    assert walk.accept_token(token)
    prefix += vocab[token]
print("chart and masks agree with the oracle; final text", prefix, "complete:", walk.is_completed())

# %% [markdown]
# Actual code: `xg2ref.kernels.earley.close_set` (predict and complete, written as inference rules
# above the code), `xg2ref.kernels.earley.leo_top` (Leo items), `xg2ref.kernels.earley.advance_byte` (scan), `xg2ref.earley.EarleyParser.advance`,
# `xg2ref.earley.EarleyParser.rollback`, `xg2ref.matcher.GrammarMatcher.rollback`.
