# %% [markdown]
# # 05 — Context expansion and lookahead (XGrammar §3.2, Algorithm 2)
#
# An entry of the token-mask cache (notebook 04) is built from one FSM state of a rule `A`,
# without knowing who called `A`. A token that `A` can read only part of, but where `A` may end
# before the token does, is *context-dependent*: after `A` ends, the rest of the token must be
# read by whatever follows `A`. Left uncertain, every such token is checked against the full
# Earley chart at every step. XGrammar §3.2 shrinks that set before decoding, with the grammar
# itself: whatever can follow `A` is written in the rules that reference `A`.
#
# xg2ref applies four refinements, in this order (specs/04), for a token `t` where `A` may end
# after `d` of its bytes:
#
# | step | question | outcome |
# |---|---|---|
# | LOOKAHEAD | `A` has an assertion `(= L)` (written and proved, or inferred); does the rest `t[d:]` agree with `L`? | no → rejected |
# | CONTEXT (Algorithm 2) | does some occurrence `src -A-> dst` of `A` read the rest from `dst` (climbing to the callers of callers when that rule may end too)? | no → rejected |
# | ACCEPT-CTX | does *every* occurrence of `A` read the rest without its own rule having to end? | yes → accepted in every context |
# | otherwise | | uncertain: checked at run time |
#
# CONTEXT over-approximates what may follow `A`, so what it rejects is rejected in every
# context; ACCEPT-CTX is exact because an item of `A` exists only because one of its occurrences
# predicted it. XGrammar's Algorithm 2 builds the *expanded suffix* automaton of each rule from
# the same occurrences, stopping at rule references; CONTEXT reads the occurrences themselves,
# entering referenced rules.

# %%
import os
import string

import matplotlib.pyplot as plt

import xg2ref as xgr
from xg2ref.oracle import brute_force_mask
from xg2ref.views.parsing import context_expansion, entry_tokens, format_table, lookahead_assertions

# %% [markdown]
# ## One state, token by token
#
# `item` is a word of letters inside a bracketed or parenthesized list. Its state after a letter
# may end, so every token that is not all letters is context-dependent there.

# %%
lists = r'''
root ::= "[" list "]" | "(" list ")"
list ::= item ("," item)*
item ::= [a-z] item | [a-z]
'''
vocab = [b"a", b"b", b"ab", b"[", b"]", b"(", b")", b",", b";", b"1", b"a,", b"a]", b"a)", b"a;", b"a1", b"ab,b",
         b"a]]", b"a,(", b"</s>"]
info = xgr.TokenizerInfo(vocab, stop_token_ids=[len(vocab) - 1])
compiled = xgr.GrammarCompiler(info).compile_grammar(lists)
stages = context_expansion(compiled)
row = next(r for r in stages if r["item"].startswith("item ::= [a-z] •"))
print(row["item"], "\n")
final = entry_tokens(compiled, row["state"])


def verdict(t: int) -> str:
    return next(name for name, ids in final.items() if t in ids)


table = []
for t, tok in enumerate(vocab[:-1]):
    table.append({"token": tok.decode(), "may end inside": t in row["ends_inside"],
                  "kept by CONTEXT": t in row["after_context"] if t in row["ends_inside"] else "",
                  "ACCEPT-CTX": t in row["accepted_by_context"] if t in row["after_context"] else "",
                  "entry": verdict(t)})
print(format_table(table))

# %% [markdown]
# * `ab` is read inside `item`: accepted. `1` dies inside `item` before it can end: rejected.
# * `a,`: `item` ends after `a`, and *every* occurrence of `item` (both in `list`) reads `,`
#   next: accepted in every context (ACCEPT-CTX).
# * `a]` and `a)`: after `item` ends, `list` may end too, and *some* caller of `list` reads `]`
#   (the other reads `)`): CONTEXT keeps them, ACCEPT-CTX cannot accept them; they stay
#   uncertain and are checked against the chart when the state is met.
# * `a;`, `a1`, `a]]`: no caller of `item` or `list` reads the rest: rejected before decoding.

# %% [markdown]
# ## Every entry of a JSON grammar
#
# The builtin JSON grammar on a synthetic vocabulary shaped like a real one (as in
# notebook 04): the number of token-entries left uncertain after each step, summed over the
# entries.

# %%
letters = string.ascii_lowercase
tokens = [bytes([b]) for b in range(0x20, 0x7F)] + [b"\n", b"\t"]
tokens += [(a + b).encode() for a in letters for b in letters]
tokens += [str(i).encode() for i in range(10, 100)] + [b"0.", b".5", b"e+", b"-1"]
tokens += [b'",', b'"}', b'"]', b'":', b'": ', b'{"', b'["', b', "', b"},", b"}]", b"],", b"}}", b"]]", b"1,",
           b"0]", b"2}", b"1.5,", b"true,", b"null}", b" ]", b"  ", b'\\"', b"\\u", "é".encode(), b'"}]', b"</s>"]
tokens = list(dict.fromkeys(tokens))
json_info = xgr.TokenizerInfo(tokens, stop_token_ids=[len(tokens) - 1])
json_compiled = xgr.GrammarCompiler(json_info).compile_builtin_json_grammar()
json_stages = context_expansion(json_compiled)
STEPS = [("ends inside the rule", "ends_inside"), ("after LOOKAHEAD", "after_lookahead"),
         ("after CONTEXT", "after_context"), ("after ACCEPT-CTX", "uncertain")]


def totals(rows) -> list:
    return [sum(len(r[key]) for r in rows) for _, key in STEPS]


counts = totals(json_stages)
print(format_table([{"step": name, "uncertain token-entries": n} for (name, _), n in zip(STEPS, counts)]))
print(f"\n{len(json_stages)} entries, {json_info.vocab_size} tokens")

# %%
fig, ax = plt.subplots(figsize=(8, 3))
ax.bar([name for name, _ in STEPS], counts, color=["tab:gray", "tab:blue", "tab:orange", "tab:green"])
ax.set_yscale("log")
for x, n in enumerate(counts):
    ax.text(x, n, f"{n:,}", ha="center", va="bottom")
ax.set_ylabel("uncertain token-entries (log)")
ax.set_title("Context-dependent tokens of the JSON grammar, step by step")
plt.tight_layout()
plt.show()

# %% [markdown]
# The entries where context decides most: for each, how many tokens each step leaves.

# %%
top = sorted(json_stages, key=lambda r: -len(r["ends_inside"]))[:8]
print(format_table([{"item": r["item"], **{name: len(r[key]) for name, key in STEPS}} for r in top], max_width=52))

# %% [markdown]
# ## Lookahead assertions: inferred, proved, refused
#
# An assertion `A ::= body (= L)` claims that whatever follows `A` begins with a string of `L`;
# it can only save work (a token whose rest disagrees with `L` is rejected before any context
# run). xgrammar trusts the assertions written in a grammar; xg2ref uses one only when it can
# prove it from the grammar (and infers some itself, as xgrammar does). The builtin JSON
# grammar writes eight; seven are proved.

# %%
for kind, found in lookahead_assertions(json_compiled).items():
    for rule, text in found.items():
        print(f"{kind:>10}  {rule} (= {text})")

# %% [markdown]
# The refused one is wrong: `characters_and_embrace` is a string that closes its object
# (`"b"}`) and claims a `}` or `,` must follow, but in `[{"a":"b"}]` a `]` follows. A vocabulary
# with the token `"}]` shows the difference: after `[{"a":"b`, that token is valid, and xgrammar
# 0.2.8, trusting the assertion, masks it out. xg2ref allows it, as the oracle does.

# %%
m = xgr.GrammarMatcher(json_compiled)
assert m.accept_string('[{"a":"b')
token = tokens.index(b'"}]')
print('token "}] allowed after [{"a":"b :', bool(m.compute_bool_mask()[token]))

# %% [markdown]
# Assertions change no entry: with and without them every entry is the same (`same_entry`),
# they only let some tokens be rejected without a context run.

# %%
print("every entry the same with and without assertions:", all(r["same_entry"] for r in json_stages))

# %% [markdown]
# ## Llama-3 (with `XG2REF_NOTEBOOK_FULL=1`)
#
# On the real vocabulary the same steps take the builtin JSON grammar from 1,156,393
# context-dependent token-entries to 1,153,948 after LOOKAHEAD, 3,498 after CONTEXT and 1,854
# after ACCEPT-CTX (the figures of specs/04; about 20 s). XGrammar §3.2 reports 1,134 → 120
# context-dependent tokens on its own automaton; the two counts are not directly comparable.

# %%
if os.environ.get("XG2REF_NOTEBOOK_FULL") == "1":
    llama = xgr.TokenizerInfo.from_quicktok("llama3")
    big = context_expansion(xgr.GrammarCompiler(llama).compile_builtin_json_grammar())
    print(format_table([{"step": name, "uncertain token-entries": n} for (name, _), n in zip(STEPS, totals(big))]))

# %% [markdown]
# ## Check against the brute-force oracle
#
# What the refinements reject must never be a token the oracle allows, and what they accept
# must be one it allows. Along walks through both grammars, the matcher's mask (built from these
# entries) equals the oracle's, including the `"}]` token after `[{"a":"b`.

# %%
lists_ir = xgr.Grammar.from_ebnf(lists).ir
for text in ("[ab,b]", "(a,ab)"):
    m = xgr.GrammarMatcher(compiled)
    for k in range(len(text) + 1):
        want = brute_force_mask(lists_ir, text[:k].encode(), vocab, stop_token_ids=[len(vocab) - 1])
        assert (m.compute_bool_mask() == want).all(), text[:k]
        if k < len(text):
            assert m.accept_string(text[k])

small = [b"[", b"]", b"{", b"}", b'"', b":", b"a", b"b", b'"}]', b'"}', b"}]", b"</s>"]
small_compiled = xgr.GrammarCompiler(xgr.TokenizerInfo(small, stop_token_ids=[11])).compile_builtin_json_grammar()
m = xgr.GrammarMatcher(small_compiled)
prefix = b""
for piece in (b"[", b"{", b'"', b"a", b'"', b":", b'"', b"b"):
    assert m.accept_string(piece)
    prefix += piece
    want = brute_force_mask(small_compiled.grammar.ir, prefix, small, stop_token_ids=[11])
    assert (m.compute_bool_mask() == want).all(), prefix
assert want[small.index(b'"}]')]
print('masks agree with the oracle; "}] is allowed after', prefix)

# %% [markdown]
# Actual code: `xg2ref.kernels.classify.classify_tokens` (LOOKAHEAD and the order of the steps),
# `xg2ref.kernels.context_expansion.union_context` (CONTEXT, one rolled-back chart for every occurrence), `xg2ref.kernels.context_expansion.every_parent_reads`
# (ACCEPT-CTX), `xg2ref.kernels.context_expansion.query_context` (each question asked once per grammar, through
# its first two bytes first), `xg2ref.lookahead.lookahead_arrays` and `xg2ref.lookahead.verify` (assertions).
