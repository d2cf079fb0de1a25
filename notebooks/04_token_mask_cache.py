# %% [markdown]
# # 04 — The adaptive token-mask cache (XGrammar §3.1, Figures 4–5, Algorithm 1; XGrammar-2 Table 6, right half)
#
# Checking every token of a 128k vocabulary against the Earley chart at every step is far too
# slow. The observation of XGrammar §3.1: for most tokens the answer depends only on *where in
# one rule* the parser stands, not on the rest of the stack. For every scannable FSM state `s`
# of a rule `A` (a state with byte edges) the vocabulary splits, once, before decoding:
#
# * **accepted** (context-independent): the token's bytes are read inside `A`;
# * **rejected** (context-independent): the token dies inside `A` before `A` could end;
# * **uncertain** (context-dependent): `A` may end inside the token, and what follows depends on
#   the rules that called `A`.
#
# XGrammar-2 writes this as Table 6 (right half): the cache maps an item `[*, *, A → μ • a ν]` to
# `(𝒜, ℛ, 𝒰)`, a partition of the vocabulary. At run time (① retrieve, ② check, ③ output) the
# entries of the current set's items are merged, and only the uncertain tokens are run through
# the full chart. Each entry is stored in the smallest of three forms (Figure 5): the list of
# accepted ids, the list of rejected ids, or a bitset over the vocabulary.
#
# The vocabulary below is a synthetic one of about 1,100 tokens shaped like a real one (single
# bytes, letter pairs, words with and without a leading space, a few quoted keys, numbers,
# JSON punctuation, some non-ASCII); with `XG2REF_NOTEBOOK_FULL=1` the last cells use Llama-3.

# %%
import os
import string

import matplotlib.pyplot as plt
import numpy as np

import xg2ref as xgr
from xg2ref.oracle import brute_force_mask
from xg2ref.views.parsing import (entry_forms, entry_tokens, every_token_mask, format_table, mask_cache_entries,
                                  mask_from_cache)

# %%
letters = string.ascii_lowercase
words = ["name", "id", "type", "value", "items", "data", "text", "user", "email", "city", "true", "false", "null",
         "the", "and", "for", "with", "this", "that", "from", "have", "what", "when", "where", "Ada", "Paris"]
tokens = [bytes([b]) for b in range(0x20, 0x7F)] + [b"\n", b"\t", b"\r"]
tokens += [(a + b).encode() for a in letters for b in letters]
tokens += [(" " + a + b).encode() for a in letters for b in "aeiou"]
for w in words:
    tokens += [w.encode(), b" " + w.encode(), w.capitalize().encode()]
for w in words[:8]:
    tokens += [b'"' + w.encode(), b'"' + w.encode() + b'":', b'"' + w.encode() + b'": ']
tokens += [str(i).encode() for i in range(10, 100)] + [b"100", b"2024", b"0.", b".5", b"e-", b"e+", b"-1"]
tokens += [b'",', b'"}', b'"]', b'":', b'": ', b'{"', b'["', b', "', b"},", b"}]", b"],", b"}}", b"]]", b"[[",
           b"{}", b"[]", b"  ", b"\n  ", b"\n    ", b'\\"', b"\\n", b"\\u", "é".encode(), "中".encode(),
           "€".encode(), b"\xe4\xb8", b"</s>"]
tokens = list(dict.fromkeys(tokens))
STOP = len(tokens) - 1
info = xgr.TokenizerInfo(tokens, stop_token_ids=[STOP])
compiled = xgr.GrammarCompiler(info).compile_builtin_json_grammar()
print(f"{info.vocab_size} tokens; xgrammar's builtin JSON grammar")

# %% [markdown]
# ## The entries
#
# One row per entry: the FSM state it was built for (as a dotted rule), its storage form and the
# sizes of its three classes. (States that read every token alike share one entry; the cache
# builds entries on first use, and this view builds the ones not built yet.)

# %%
rows = mask_cache_entries(compiled)
print(format_table(rows[::6], ["entry", "item", "form", "accepted", "rejected", "uncertain", "bytes"], max_width=58))
totals = {k: sum(r[k] for r in rows) for k in ("accepted", "rejected", "uncertain")}
print(f"\n{len(rows)} entries; token-entries: {totals}")

# %% [markdown]
# ## Figure 4: accepted, rejected, uncertain
#
# Inside a JSON string almost every token is accepted: the string's characters loop on one
# state. (The builtin grammar has one string rule per context — followed by a comma, a colon,
# a closing brace — so even the closing quote and what comes right after it are read inside
# the rule; tokens with a raw newline are rejected.) At the end of a number (here, in its
# exponent), digits are accepted, letters rejected, and the tokens that begin with something
# that may follow a number (`,` `]` `}` whitespace) are uncertain: the number's rule may end
# there, and whether they fit depends on the rule that called it.

# %%
string_row = next(r for r in rows if r["item"].startswith("characters_and_comma ::= •"))
number_row = max(rows, key=lambda r: (r["uncertain"], r["accepted"]))
for row in (string_row, number_row):
    print(row["item"])
    for name, ids in entry_tokens(compiled, row["state"]).items():
        print(f"  {name:>9}: {len(ids):4}  e.g. {[tokens[t].decode('utf-8', 'replace') for t in ids[:10]]}")

# %% [markdown]
# Every entry as a bar: green accepted, orange uncertain, red rejected, sorted by the accepted
# share. Most entries are nearly all one colour: a state either reads almost anything (inside
# strings) or almost nothing (between JSON tokens), and the uncertain part is small.

# %%
order = sorted(rows, key=lambda r: r["accepted"])
acc = np.array([r["accepted"] for r in order])
unc = np.array([r["uncertain"] for r in order])
rej = np.array([r["rejected"] for r in order])
fig, ax = plt.subplots(figsize=(10, 3))
x = np.arange(len(order))
ax.bar(x, acc, color="tab:green", width=1.0, label="accepted")
ax.bar(x, unc, bottom=acc, color="tab:orange", width=1.0, label="uncertain")
ax.bar(x, rej, bottom=acc + unc, color="tab:red", width=1.0, label="rejected")
ax.set_xlabel("cache entry (sorted by accepted tokens)")
ax.set_ylabel("regular tokens")
ax.set_title("The three classes of every entry (XGrammar Figure 4)")
ax.legend(loc="upper left", fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Figure 5: adaptive storage
#
# An entry keeps the uncertain ids, plus whichever is smallest: the accepted ids (4 bytes each,
# *reject-heavy* states), the rejected ids (*accept-heavy* states), or a bitset of
# ⌈V / 32⌉ words. With Llama-3 a bitset costs 16 KB, and 110 of the JSON grammar's 122 entries
# are lists; with this small vocabulary a bitset is only a few dozen words, so it wins more
# often. The memory is compared with a bitset for every entry.

# %%
forms = entry_forms(compiled)
words_per_bitset = (info.vocab_size + 31) // 32
stored = sum(r["bytes"] for r in rows)
fig, axes = plt.subplots(1, 2, figsize=(10, 3))
axes[0].bar(list(forms), list(forms.values()), color=["tab:green", "tab:red", "tab:gray"])
axes[0].set_title("storage form per entry (Figure 5)")
axes[0].set_ylabel("entries")
share = [r["accepted"] / (r["accepted"] + r["rejected"] + r["uncertain"]) for r in rows]
axes[1].hist(share, bins=20, color="tab:blue")
axes[1].set_title("accepted share per entry: accept- or reject-heavy")
axes[1].set_xlabel("accepted / regular tokens")
plt.tight_layout()
plt.show()
print(forms, f"(a bitset is {words_per_bitset} words here)")
print(f"entries take {stored:,} bytes; a bitset for each would take {4 * words_per_bitset * len(rows):,}")

# %% [markdown]
# ## Table 6, right half, at run time (and Algorithm 1)
#
# At a given position: ① retrieve the entry of every scannable item of the current Earley set;
# ② check the uncertain tokens that no entry accepts against the full chart (𝒰_𝒜 may follow,
# 𝒰_ℛ may not); ③ output 𝒜' = ∪𝒜 ∪ 𝒰_𝒜 (and the stop token when the input is a sentence).
# When several items are alive (an ambiguous position: a number that may go on or end), their
# entries are merged, as Algorithm 1 merges the masks of parallel stacks.

# %%
summary, details = [], {}
for prefix in ('{"name": "Ada', '{"id": 12', '{"items": [1, 2', '[true, "x"]'):
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string(prefix)
    steps = details[prefix] = mask_from_cache(m)
    summary.append({"prefix": prefix, "scannable items": len(steps["items"]), "∪A": len(steps["accepted"]),
                    "U checked": len(steps["uncertain"]), "U_A": len(steps["uncertain_accepted"]),
                    "U_R": len(steps["uncertain_rejected"]), "stop": len(steps["stop"]),
                    "allowed": int(steps["mask"].sum())})
    assert (steps["mask"] == m.compute_bool_mask()).all()
print(format_table(summary))
print("\nafter '{\"items\": [1, 2': the entries merged, and the uncertain tokens checked")
print(format_table(details['{"items": [1, 2']["items"], max_width=70))
print("U_A:", [tokens[t] for t in details['{"items": [1, 2']["uncertain_accepted"]],
      " U_R:", [tokens[t] for t in details['{"items": [1, 2']["uncertain_rejected"]])

# %% [markdown]
# ## Llama-3 (with `XG2REF_NOTEBOOK_FULL=1`)
#
# The same statistics on the real vocabulary: 128,256 tokens. The run behind this notebook gave
# 122 entries (110 accepted lists, 12 bitsets), 637,638 accepted, 14,976,508 rejected and 1,854
# uncertain token-entries, 512 KiB: the figures of specs/04.

# %%
if os.environ.get("XG2REF_NOTEBOOK_FULL") == "1":
    llama = xgr.TokenizerInfo.from_quicktok("llama3")
    big = xgr.GrammarCompiler(llama).compile_builtin_json_grammar()
    big_rows = mask_cache_entries(big)
    print(len(big_rows), "entries;", entry_forms(big))
    print({k: sum(r[k] for r in big_rows) for k in ("accepted", "rejected", "uncertain")})
    print(f"{sum(r['bytes'] for r in big_rows) / 1024:.0f} KiB of entries")

# %% [markdown]
# ## Check: cached mask == every-token mask == oracle
#
# Three ways to the same mask: the cache (what the matcher uses), every regular token through
# the Earley chart with no cache, and the brute-force oracle (an independent recognizer asked
# about each token). The first two are compared along a JSON text on the vocabulary above;
# the oracle is slow on JSON, so it joins on a 22-token vocabulary.

# %%
walk = ['{"', "name", '": ', '"', "Ada", '",', ' "', "items", '": ', "[", "1", ", ", "2", "]", "}"]
m = xgr.GrammarMatcher(compiled)
for piece in walk:
    have = m.compute_bool_mask()
    assert (every_token_mask(m) == have).all() and (mask_from_cache(m)["mask"] == have).all(), piece
    assert m.accept_string(piece)

small = [b"{", b"}", b"[", b"]", b'"', b":", b",", b" ", b"1", b"2", b"a", b"b", b'",', b'":', b'"}', b'{"', b"12",
         b"true", b"null", b'"a', b'a"', b"</s>"]
small_info = xgr.TokenizerInfo(small, stop_token_ids=[len(small) - 1])
small_compiled = xgr.GrammarCompiler(small_info).compile_builtin_json_grammar()
m = xgr.GrammarMatcher(small_compiled)
prefix = b""
for piece in (b'{"', b"a", b'":', b" ", b"[", b"1", b",", b" ", b'"', b"b", b'"', b"]", b"}"):
    want = brute_force_mask(small_compiled.grammar.ir, prefix, small, stop_token_ids=[len(small) - 1])
    have = m.compute_bool_mask()
    assert (want == have).all() and (every_token_mask(m) == have).all(), prefix
    assert m.accept_string(piece)
    prefix += piece
print("cached == every-token == oracle along", prefix)

# %% [markdown]
# Actual code: `xg2ref.mask.cache.AdaptiveTokenMaskCache` (entries and their forms),
# `xg2ref.kernels.classify.classify_tokens` (accepted / rejected / uncertain),
# `xg2ref.kernels.entry_build.build_entries` (seed, classify, store and publish a batch of entries in one
# call), `xg2ref.kernels.entry_build.store_entry` (the smallest of the three forms),
# `xg2ref.kernels.slices.slice_contained` (a string state takes the JSON-string slice whole),
# `xg2ref.kernels.mask_fill.fill_mask` (Table 6 right half, Algorithm 1),
# `xg2ref.matcher.GrammarMatcher.fill_next_token_bitmask`.
