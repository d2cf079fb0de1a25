# %% [markdown]
# # 06 — TagDispatch: free text with tag-triggered sub-grammars (XGrammar-2 §3.2, Figure 3, Table 2)
#
# An agent's output mixes free text with structured parts that begin with a tag:
# `OK, let me check. <function=get_weather>{"city": "Paris"}</function> Done.` XGrammar-2 adds an
# EBNF intrinsic for this shape (§3.2):
#
#     TagDispatch(("<tag_1>", rule_1), ..., ("<tag_n>", rule_n), loop_after_dispatch=true, excludes=("stop", ...))
#
# It has two modes. *Dispatching*: any text is allowed while an Aho-Corasick automaton watches
# for the tags (and for the excluded strings, which free text may never contain). When a whole
# tag has been read, *dispatched*: the tag's rule constrains what follows; once it completes,
# free text again (or, without `loop_after_dispatch`, the end). The automaton matches every tag
# at once, one step per byte, falling back along *failure links* when a partial match breaks.
#
# xg2ref compiles the automaton into the rule's byte FSM, so the rest of the engine (Earley
# parser, mask cache) sees an ordinary rule with rule-reference edges to the tags' rules.

# %%
import os

import matplotlib.pyplot as plt

import xg2ref as xgr
from xg2ref.oracle import brute_force_accepts, brute_force_mask
from xg2ref.views.parsing import (aho_corasick, draw_aho_corasick, draw_fsm, format_table, plain_tag_dispatch,
                                  random_tags, rule_fsms, tag_dispatch_sizes, tag_dispatch_table)

# %% [markdown]
# ## The Aho-Corasick automaton
#
# The textbook example (tags `he`, `she`, `his`, `hers`): a trie of the tags, and from every
# node a failure link to the longest proper suffix that is also a trie node (dashed red; links
# to the root are not drawn). Reading `shers` goes 0 →s 3 →h 4 →e 5 (tag `she`), and then `r`
# has no edge from 5: the failure link leads to 2 (`he`), which continues to 8, then 9 (`hers`).

# %%
classic = aho_corasick(["he", "she", "his", "hers"])
print(format_table(classic["nodes"], ["id", "prefix", "fail", "tag"]))
print(f"{classic['states']} states, {classic['transitions']} transitions (goto edges + failure links)")
draw_aho_corasick(classic, title="Aho-Corasick automaton of he, she, his, hers")
plt.show()

# %% [markdown]
# ## Figure 3: a TagDispatch and its automaton
#
# Two tools and an excluded stop string. Above: the automaton with the dispatch edges (blue):
# from the node of a whole tag, the tag's rule, then back to the root. The exclude's node (grey)
# has no way out: free text never contains `</s>`. Below: the rule's FSM as the engine builds it
# (byte edges back to state 0, "any other byte", are left out of the drawing).

# %%
tools = r'''
root ::= TagDispatch(("<f=a>", call_a), ("<f=ab>", call_ab), excludes=("</s>",))
call_a ::= "{" [0-9]+ "}"
call_ab ::= "{" [a-z]+ "}"
'''
view = aho_corasick(["<f=a>", "<f=ab>"], excludes=["</s>"])
fig, axes = plt.subplots(2, 1, figsize=(12, 7))
draw_aho_corasick(view, ax=axes[0], dispatch={"<f=a>": "call_a", "<f=ab>": "call_ab"},
                  title="the automaton: dispatching (black) and dispatched (blue)")
draw_fsm(rule_fsms(tools)["root"], ax=axes[1], hide_returns=True, title="the rule's FSM (returns to 0 not drawn)")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Masks in both modes
#
# In dispatching mode almost every token is allowed (free text), except those that would
# complete the excluded `</s>`. Once `<f=a>` has been read, only `call_a` may follow.

# %%
vocab = [b"Hi", b" ", b"<", b"f", b"=", b"a", b"b", b">", b"<f=", b"<f=a>", b"{", b"}", b"1", b"2", b"x", b"</",
         b"s>", b"</s>", b"<eos>"]
EOS = vocab.index(b"<eos>")
info = xgr.TokenizerInfo(vocab, stop_token_ids=[EOS])
compiled = xgr.GrammarCompiler(info).compile_grammar(tools)
for prefix in ("", "Hi ", "Hi </", "Hi <f=", "Hi <f=a", "Hi <f=a>", "Hi <f=a>{1", "Hi <f=a>{12} "):
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string(prefix)
    mask = m.compute_bool_mask()
    allowed = [vocab[t].decode() for t in range(len(vocab)) if mask[t]]
    blocked = [vocab[t].decode() for t in range(len(vocab)) if not mask[t]]
    shown = f"only {allowed}" if len(allowed) < 10 else f"all but {blocked}"
    print(f"{prefix!r:>16}: {len(allowed):2} allowed, {shown}")

# %% [markdown]
# ## A tag is seen only as the longest suffix on the trie
#
# The automaton follows the longest suffix of the text that is a path of the trie. With tags `b`
# and `abc`, after `xb` the tag `b` has been read and its rule must follow (`xbz` is refused);
# after `ab` the automaton is on the way to `abc`, and the `b` inside passes as free text
# (`abz` is fine). After `abb` the partial match breaks, the failure link lands on `b`, and the
# tag counts again. xgrammar 0.2.8 behaves the same way, and the oracle reads TagDispatch by the
# same definition.

# %%
quirk = 'root ::= TagDispatch(("b", rb), ("abc", rc))\nrb ::= "1"\nrc ::= "2"'
quirk_ir = xgr.Grammar.from_ebnf(quirk).ir
print(format_table([{"text": s, "engine": xgr.testing.is_grammar_accept_string(quirk, s),
                     "oracle": brute_force_accepts(quirk_ir, s.encode())}
                    for s in ("xb1", "xbz", "abz", "ab1", "abc2", "abcz", "abb1", "abbz")]))

# %% [markdown]
# ## Table 2: the same language in plain EBNF
#
# Without the intrinsic, the natural encoding is one rule per automaton state (a right-linear
# grammar: `td_n ::= "" | "c" td_m | [^...] td_0 | ...`). For one tag:

# %%
print(plain_tag_dispatch(["<f=a>"], ["call_a"]))

# %% [markdown]
# Table 2 of the paper measures this encoding for 5 to 100 tags of 10 characters each. Random
# 10-letter tags (seeded) give nearly the same automata; the grammar with the intrinsic stays
# one line per tag, the plain one grows with every state. Compile times are measured here on
# the small vocabulary, for 5 and 20 tags (with `XG2REF_NOTEBOOK_FULL=1`: all four rows, on
# Llama-3).

# %%
counts = (5, 20, 50, 100)
full = os.environ.get("XG2REF_NOTEBOOK_FULL") == "1"
table_vocab = xgr.TokenizerInfo.from_quicktok("llama3") if full else info
timed = {r["tags"]: r for r in tag_dispatch_table([random_tags(n, seed=n) for n in (counts if full else counts[:2])],
                                                  table_vocab)}
table = [timed.get(n) or tag_dispatch_sizes(random_tags(n, seed=n)) for n in counts]
print(format_table(table, ["tags", "total_length", "ac_states", "ac_transitions", "td_bytes", "ebnf_rules",
                           "ebnf_bytes", "td_ms", "ebnf_ms"]))
print("paper, Table 2 (AC #S / #E):", {5: (50, 98), 20: (197, 392), 50: (477, 952), 100: (942, 1882)})

# %%
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(counts, [r["td_bytes"] for r in table], marker="o", label="TagDispatch (bytes of grammar)")
ax.plot(counts, [r["ebnf_bytes"] for r in table], marker="o", label="plain EBNF (bytes of grammar)")
ax.plot(counts, [r["ac_states"] for r in table], marker="s", linestyle="--", label="automaton states")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("number of tags")
ax.set_title("Table 2: grammar size with and without the intrinsic")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## TokenTagDispatch: the same, one level up
#
# When the tags are special tokens (`<tool>` as one token id), the dispatch works on whole
# tokens: `TokenTagDispatch((id, rule), ..., excludes=(id, ...))` lets any token that is neither a
# trigger nor excluded pass as free text, and the trigger token (accepted as a token, never
# spelled out by bytes) dispatches to its rule. It lowers to token-set nodes:

# %%
tvocab = [b"Hi", b" ", b"<tool>", b"<tool", b">", b"{", b"}", b"x", b"<|im_end|>", b"<eos>"]
TOOL, IM_END, TEOS = 2, 8, 9
token_grammar = f'root ::= TokenTagDispatch(({TOOL}, call), excludes=({IM_END},))\ncall ::= "{{" [a-z]* "}}"'
print(xgr.Grammar.from_ebnf(token_grammar))
tinfo = xgr.TokenizerInfo(tvocab, stop_token_ids=[TEOS])
tcompiled = xgr.GrammarCompiler(tinfo).compile_grammar(token_grammar)


def allowed_tokens(matcher) -> list:
    return [tvocab[t].decode() for t in range(len(tvocab)) if matcher.compute_bool_mask()[t]]


m = xgr.GrammarMatcher(tcompiled)
print("start:               ", allowed_tokens(m))
assert m.accept_token(0) and m.accept_token(TOOL)
print("after Hi <tool> (id):", allowed_tokens(m))
spelled = xgr.GrammarMatcher(tcompiled)
assert spelled.accept_token(3) and spelled.accept_token(4)  # "<tool" then ">": free text, no dispatch
print("after <tool + >:     ", allowed_tokens(spelled))

# %% [markdown]
# ## Check against the brute-force oracle
#
# Masks along walks through both grammars equal the oracle's. For the token-level grammar the
# oracle is told which tokens were accepted whole (`prefix_marks`: position → (id, length)).

# %%
tools_ir = xgr.Grammar.from_ebnf(tools).ir
m = xgr.GrammarMatcher(compiled)
prefix = b""
for t in (0, 1, 8, 5, 7, 10, 12, 11, 1, 9, 10, 13, 11, 15):  # Hi <f=a>{1} <f=a>{2}</
    want = brute_force_mask(tools_ir, prefix, vocab, stop_token_ids=[EOS])
    assert (m.compute_bool_mask() == want).all(), prefix
    assert m.accept_token(t)
    prefix += vocab[t]
assert not m.compute_bool_mask()[vocab.index(b"s>")]  # would complete the excluded </s>

token_ir = xgr.Grammar.from_ebnf(token_grammar).ir
m = xgr.GrammarMatcher(tcompiled)
prefix, marks = b"", {}
for t in (0, 1, TOOL, 5, 7, 6, 3, 4, TOOL, 5, 6):
    want = brute_force_mask(token_ir, prefix, tvocab, stop_token_ids=[TEOS], prefix_marks=marks)
    assert (m.compute_bool_mask() == want).all(), prefix
    assert m.accept_token(t)
    marks[len(prefix)] = (t, len(tvocab[t]))
    prefix += tvocab[t]
print("masks agree with the oracle along", prefix)

# %% [markdown]
# Actual code: `xg2ref.intrinsics.tag_dispatch.AhoCorasick`, `xg2ref.intrinsics.tag_dispatch.TagDispatch.fragment`
# (the automaton as FSM edges), `xg2ref.intrinsics.token_sets.TokenTagDispatch` (lowered to token sets),
# `xg2ref.tools.bench.tagdispatch.plain_ebnf` (Table 2).
