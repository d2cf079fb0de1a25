# %% [markdown]
# # 16 — XGrammar-1's pushdown automaton and its persistent stack (XGrammar App. A, §3.3, Figure 3)
#
# Before XGrammar-2 replaced it with an Earley parser (notebook 03), XGrammar ran a *pushdown
# automaton*: one finite automaton per rule (the same byte-level machines as notebook 02), and a
# stack of *return states*. A configuration is a state and a stack; the moves are those of
# App. A:
#
# | move | from | to | when |
# |---|---|---|---|
# | CHAR | `(q, γ)` reading `b` | `(q', γ)` | `q -b-> q'` |
# | EPS | `(q, γ)` | `(q', γ)` | `q -ε-> q'` |
# | CALL | `(q, γ)` | `(start_S, q'·γ)` | `q -S-> q'` (push the state to return to) |
# | RETURN | `(q, q'·γ)` | `(q', γ)` | `q` final in its rule (pop) |
#
# A grammar can be ambiguous, so the parser state is a *set* of configurations: XGrammar's
# Figure 3 draws two stacks after `["a`. xg2ref keeps this executor as a baseline
# (`xg2ref.baselines.pda`), over the same front ends and machines as the Earley engine, so the
# two can be compared mask for mask. This notebook shows the stacks, the tree they share, the
# rollback, and the two things that made XGrammar-2 leave the stack behind: stacks that grow
# exponentially on ambiguous grammars, and left recursion.

# %%
import matplotlib.pyplot as plt
import numpy as np

import xg2ref as xgr
from xg2ref.baselines.pda import GrammarLimitError, PDACompiler, PDAMatcher, UnsupportedByBaseline
from xg2ref.oracle import brute_force_mask
from xg2ref.views.parsing import chart_sets, draw_stack_tree, pda_stacks, stack_history

# %% [markdown]
# ## 1. Stacks, byte by byte
#
# The grammar below has two alternatives that open with `[`, so after `[[` the inner `value` may
# have been called from either: two return states, two stacks. `stack_history` reads the input
# byte by byte and lists the configurations of each *record* (the set after that many bytes),
# with the frames (return states) made for the record and those it shares with earlier records.
# States print as `rule:k`, k the state's number in its rule's machine ("nfa" stage: Thompson's
# construction, ε edges kept, as XGrammar's baseline had it).

# %%
grammar = r'''root ::= "[" value "]"
value ::= "\"" [a-z]* "\"" | "[" value "]" | "[" value "," value "]"'''
for record in stack_history(grammar, '[["a', stage="nfa"):
    stacks = sorted({(c["top"], *c["stack"]) for c in record["configurations"]})
    print(f"{record['read']!r:8} {len(stacks)} stacks, frames made {record['made']}, shared {record['shared']}")
    for s in stacks[:4]:
        print("          ", " | ".join(s))

# %% [markdown]
# ## 2. Figure 3: one tree of frames
#
# A frame never changes once made, so every stack is a path from its top to the bottom `⊥` of
# one tree, and stacks with a common bottom share it (§3.3, "persistent"). In xg2ref a frame
# with a given content exists once, so equal stacks are equal configurations. The red labels are
# the configurations' top states, hanging from their top frame.

# %%
info = xgr.TokenizerInfo([b"[", b"]", b'"', b"a", b"ab", b'a"', b",", b'"]', b"</s>", b"1", b"+"],
                        stop_token_ids=[8])
compiled = PDACompiler(info, stage="nfa", mask_cache=False).compile_grammar(grammar)
matcher = PDAMatcher(compiled)
assert matcher.accept_string('[["a')
ax = draw_stack_tree(matcher)
plt.show()

# %% [markdown]
# ## 3. Rollback is a pointer move
#
# The history is a stack of records: rolling back `n` bytes drops the last `n` records and the
# frames made for them, by lowering two counters. Nothing older can point into what is dropped,
# so no reference counts are needed. The stacks after the rollback are exactly those before the
# dropped token.

# %%
before = pda_stacks(matcher)
assert matcher.accept_token(7)  # '"]'
print("after '\"]':", sorted({(c["top"], *c["stack"]) for c in pda_stacks(matcher)}))
matcher.rollback(1)
assert pda_stacks(matcher) == before
print("rolled back: the same", len(before), "configurations")

# %% [markdown]
# ## 4. The mask, and the cache keyed by the top state (§3.1, Alg. 1)
#
# Without a cache, every token is read from every configuration (tokens in byte order, sharing
# the records of their common prefix: §3.3). With the cache, each state that can read a byte has
# an entry built once: the tokens it accepts whatever lies below it on the stack, those it
# rejects, and the *uncertain* ones whose reading pops below it; only the uncertain ones are read
# again against the real stacks. Both give the brute-force oracle's mask.

# %%
cached = PDAMatcher(PDACompiler(info, stage="nfa").compile_grammar(grammar))
ir = xgr.Grammar.from_ebnf(grammar).ir
vocab = [info.decoded_vocab[t] for t in range(info.vocab_size)]
for prefix in ("", "[", "[[", '[["a', '[["a"', '[["a"]'):
    matcher.reset()
    cached.reset()
    assert matcher.accept_string(prefix) and cached.accept_string(prefix)
    want = brute_force_mask(ir, prefix.encode(), vocab, stop_token_ids=[8])
    have, fast = matcher.compute_bool_mask(), cached.compute_bool_mask()
    assert (have == want).all() and (fast == want).all(), prefix
    print(f"{prefix!r:10} allowed: {[vocab[t].decode() for t in np.flatnonzero(want)]}")
stats = cached.compiled_grammar.mask_cache.stats
print(f"{stats.entries} entries: {stats.accepted} accepted, {stats.rejected} rejected, {stats.uncertain} uncertain")

# %% [markdown]
# ## 5. Why XGrammar-2 left the stack: ambiguity (§3.4)
#
# Each `(` below may be read by rule `a` or by rule `b`, and each choice leaves a different return
# state on the stack: after `n` bytes there are `2^n` distinct stacks. The Earley chart holds one
# item per (state, origin) instead, a number that grows with `n`, not `2^n` (xgrammar #339 saw
# 524,288 stacks and 11 s per mask on a nested list). xg2ref's PDA stops at `max_stacks` with a
# `GrammarLimitError`.

# %%
ambiguous = 'root ::= a | b\na ::= "(" root ")" | ""\nb ::= "(" root "]" | ""'
small = xgr.TokenizerInfo([b"(", b")", b"]"])
pda = PDAMatcher(PDACompiler(small, stage="dfa", mask_cache=False, max_stacks=5_000).compile_grammar(ambiguous))
earley = xgr.GrammarMatcher(xgr.GrammarCompiler(small).compile_grammar(ambiguous))
sizes = []
for n in range(1, 20):
    try:
        assert pda.accept_string("(")
    except GrammarLimitError as err:
        print(f"after {n} bytes: {err}")
        break
    assert earley.accept_string("(")
    sizes.append((n, pda.num_stacks, len(chart_sets(earley)[-1])))
ns = [s[0] for s in sizes]
plt.semilogy(ns, [s[1] for s in sizes], "o-", label="PDA: stacks in the record")
plt.semilogy(ns, [s[2] for s in sizes], "s-", label="Earley: items in the set")
plt.xlabel("bytes read"), plt.ylabel("configurations"), plt.legend(), plt.title("2^n stacks")
plt.show()
assert [s[1] for s in sizes][-1] >= 2 ** (len(sizes) - 1)

# %% [markdown]
# ## 6. Left recursion
#
# `expr ::= expr "+" term | term` calls `expr` before reading a byte: a CALL pushes a frame and
# enters `expr` at its start, which calls `expr` again, forever (xgrammar #126: `compile_grammar`
# looped). The PDA baseline refuses such a grammar at compile time, naming the cycle; the Earley
# engine reads it as it is.

# %%
left = 'root ::= expr\nexpr ::= expr "+" term | term\nterm ::= [0-9]+'
try:
    PDACompiler(info).compile_grammar(left)
except UnsupportedByBaseline as err:
    print(err)
earley = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(left))
print("Earley reads 1+2+3:", earley.accept_string("1+2+3"), "complete:", earley.is_completed())

# %% [markdown]
# Actual code: `xg2ref.kernels.pda.close_record` (EPS, CALL, RETURN, written as inference rules
# above the code), `xg2ref.kernels.pda.read_byte` (CHAR), `xg2ref.kernels.pda.make_frame` (frames
# unique by content), `xg2ref.baselines.pda.stack.PersistentStack.rollback`,
# `xg2ref.kernels.pda_cache.entry_walk` and `xg2ref.kernels.pda_cache.fill_from_cache` (the cache
# and Alg. 1), `xg2ref.baselines.pda.machines.left_recursive_cycle`; specs/08-pda-baseline.md.
