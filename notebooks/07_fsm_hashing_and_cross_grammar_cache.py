# %% [markdown]
# # 07 — FSM hashing and the cross-grammar cache
#
# **XGrammar-2 §3.3: Algorithms 1 and 2, Appendix C, Figure 4.**
#
# Requests to a serving engine bring grammars that differ as a whole but share most of their
# pieces: the same string rule, the same tool's argument object, under other rule names. The
# cross-grammar cache lets one grammar reuse the token-mask cache entries another grammar built
# for the same rule machine. Two questions decide how:
#
# 1. *Which rules are the same?* Each rule's FSM gets a hash that covers its own machine and,
#    through its rule edges, every rule it references (Algorithm 1, in a hierarchical order;
#    Algorithm 2 for simple cycles), and each of its states a canonical number, the same in
#    every grammar.
# 2. *How much of an entry carries over?* What a token does inside the rule holds everywhere;
#    what happens after the rule ends depends on the rule's lookahead and on the grammar around
#    it. A *perfect hit* (same machine, same lookahead) reclassifies only the few tokens the
#    lookahead let through; a *partial hit* (same machine, other lookahead) reclassifies the
#    tokens the rule may end inside (Figure 4); a miss classifies the whole vocabulary.
#
# Everything below runs on a small vocabulary: the first 2,000 tokens of Llama-3, and a few
# tokens that run past the end of the rule used in §3 (`!]`, `ab!}`, ...), so that its lookahead
# has something to decide.

# %%
import matplotlib.pyplot as plt
import numpy as np

import xg2ref as xgr
from xg2ref.oracle import brute_force_mask
from xg2ref.views import runtime as rt

straddling = [b"!]", b"!}", b"!]\n", b"!}\n", b"ab!]", b"ab!}", b"!x", b"!!"]
info = rt.sub_vocabulary(2000, extra=straddling)
print(info)

# %% [markdown]
# ## 1. Algorithm 1: a canonical numbering and a hash per rule
#
# Breadth first from the start state, the edges of each state sorted by label (byte range,
# token set, or the hash of the referenced rule); a target gets the next number when first met.
# The hash folds, state by state, whether the state is final and then each edge's label and
# target number. Two machines that are equal up to state names get equal numbers and equal hashes.
#
# Below, the same number rule sits in two grammars under two names (`num`, `n2`), followed by
# different text. (A lookahead assertion keeps a small rule from being inlined into its caller;
# it is not part of the hash: the cache keys lookaheads separately, as §2 shows.)

# %%
compiler = xgr.GrammarCompiler(info)
g_a = compiler.compile_grammar('root ::= "x=" num "z"\nnum ::= [0-9]+ "." [0-9]+ (= "z")')
g_b = compiler.compile_grammar('root ::= "y:" n2 ";"\nn2 ::= [0-9]+ "." [0-9]+ (= ";")')
for name, compiled in (("A", g_a), ("B", g_b)):
    for row in rt.rule_hashes(compiled):
        print(f"grammar {name}  {row['rule']:<5} {row['kind']:<8} hash {row['hash']}  "
              f"states {row['states']}  canonical numbers {row['canonical']}")

# %% [markdown]
# `num` and `n2` have one hash; the roots, which read different bytes, have two. A hash is
# only a claim: 64 bits can collide, and Appendix C notes that the numbering can differ
# between equal machines when a state has two edges with equal labels. So the cache confirms
# each hash match with a structural check: the two machines, under their canonical numberings,
# must have the same edges, and the rules those edges reference must pair up the same way.

# %%
print("num ~ n2:  ", rt.same_structure(g_a, "num", g_b, "n2"))
print("root ~ root:", rt.same_structure(g_a, "root", g_b, "root"))

# %% [markdown]
# ## 2. The hierarchical order and Algorithm 2
#
# A rule edge is hashed with the referenced rule's hash, so callees come first: the strongly
# connected components of the reference graph, in reverse topological order.
#
# | the rule ... | hashed as |
# |---|---|
# | references nothing | `leaf` |
# | references only hashed rules | `acyclic` |
# | references itself only, within its component | `self` (its own edges get a fixed label) |
# | lies on a simple cycle (each member references exactly one other) | `cycle`: Algorithm 2 |
# | lies in (or reaches) any other cycle | `unhashed`: never shared |
#
# Algorithm 2 hashes each member of a cycle by folding the members' local hashes in cycle
# order, starting from that member. The fold is not commutative, so each rotation, and hence
# each member, gets its own hash; the same cycle under other names gets the same hashes.

# %%
cycle_1 = compiler.compile_grammar('root ::= a\na ::= "(" b ")" | "x"\nb ::= "[" a "]" | "y"\n'
                                   'nest ::= "{" nest "}" | "n" (= "}")')
cycle_2 = compiler.compile_grammar('root ::= "!" p\np ::= "(" q ")" | "x"\nq ::= "[" p "]" | "y"')
for name, compiled in (("1", cycle_1), ("2", cycle_2)):
    for row in rt.rule_hashes(compiled):
        print(f"grammar {name}  {row['rule']:<5} {row['kind']:<8} {row['hash']}")
json_kinds = [row["kind"] for row in rt.rule_hashes(compiler.compile_builtin_json_grammar())]
print("builtin JSON grammar:", {k: json_kinds.count(k) for k in sorted(set(json_kinds))})

# %% [markdown]
# `a` and `p` share a hash, as do `b` and `q`; `a` and `b` do not. In the builtin JSON grammar,
# `value`, `array` and `object` reference each other in more than one cycle: those rules (and
# any rule that reaches them) get no hash, and their entries stay with their grammar.
#
# ## 3. Figure 4: perfect and partial hits on a designed triple
#
# Three grammars hold one rule body, `[a-z]+ "!" [a-z]* "!"`, under three names:
#
# - G1: `s`, followed by `"]"` (its lookahead: `]`);
# - G2: `t`, followed by `"}"`: the same machine, another lookahead;
# - G3: `u`, followed by `"]"`: the same machine and the same lookahead as G1.
#
# One compiler compiles them in turn, every entry at compile time (`jit=False`), and
# `rt.pool_lookups` records each lookup in its cross-grammar cache.

# %%
body = '[a-z]+ "!" [a-z]* "!"'
triple = {
    "G1": f'root ::= "[" s "]"\ns ::= {body} (= "]")',
    "G2": f'root ::= "{{" t "}}"\nt ::= {body} (= "}}")',
    "G3": f'root ::= "<" u "]"\nu ::= {body} (= "]")',
}
shared = xgr.GrammarCompiler(info, jit=False)
with rt.pool_lookups(shared) as log:
    triple_compiled = {name: shared.compile_grammar(text) for name, text in triple.items()}

names = list(triple)
print(f"{'grammar':<8}{'rule':<6}{'state':>6}  {'outcome':<9}{'tokens classified':>18}{'accepted':>10}{'uncertain':>10}")
for r in log:
    print(f"{names[r['grammar']]:<8}{r['rule']:<6}{r['state']:>6}  {r['outcome']:<9}"
          f"{r['candidates']:>11} / {r['vocab']:<5}{r['accepted']:>10}{r['uncertain']:>10}")
print(shared.cache_stats.summary())

# %% [markdown]
# Reading the table:
#
# - G1 meets every state for the first time: misses, each classifying all 2,000 tokens.
# - G2's `t` is `s` again (same hash, structure confirmed) under another lookahead: partial
#   hits. Only the tokens inside which `t` may end are classified again, against `}`; the
#   tokens read inside the rule are taken from the pool as they are.
# - G3's `u` is `s` under the same lookahead: perfect hits. Only the tokens that pass `]` go
#   through G3's own context.
# - The roots differ in each grammar: misses.
#
# The pool stores, per state, the tokens read inside the rule (`acc0`), the tokens the rule may
# end inside (`ends`) and, per lookahead, the tokens of `ends` that agree with it (`pass[L]`).
# A perfect hit also runs G3's own context over `pass[L]`, so that context expansion keeps its
# precision; `pass[L]` is small next to the vocabulary.

# %%
fig, ax = plt.subplots(figsize=(7, 3.2))
x = np.arange(len(names))
for offset, part, colour in ((-0.2, "the shared rule (s, t, u)", "tab:blue"), (0.2, "the root", "tab:gray")):
    counts = [sum(r["candidates"] for r in log if r["grammar"] == g and (r["rule"] == "root") == (part == "the root"))
              for g in range(len(names))]
    bars = ax.bar(x + offset, counts, 0.4, color=colour, label=part)
    if part != "the root":
        outcomes = [sorted({r["outcome"] for r in log if r["grammar"] == g and r["rule"] != "root"}) for g in x]
        ax.bar_label(bars, [f"{c} ({', '.join(o)})" for c, o in zip(counts, outcomes)], fontsize=8)
ax.set_xticks(x)
ax.set_xticklabels(names)
ax.set_ylabel("tokens classified at compile time")
ax.set_title("One rule body in three grammars (XGrammar-2 Fig. 4)")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# Each bar sums, over the scannable states of one rule, the tokens the entry kernel had to
# classify: for the shared rule, G2 and G3 pay almost nothing; their roots, new each time, are
# misses.
#
# ## 4. Rule machines by shape, and linked tools
#
# Building a rule's machine (Thompson, determinize, minimize) is itself most of a compile, so
# the same pool also keeps each rule's machine under its *shape*: the body with rule names
# replaced by their order of appearance. And for structural tags, each tool's sub-grammar is
# compiled once per compiler and linked into every grammar that lists it (`part` counters).

# %%
tools = rt.load_tools(4)
tag_compiler = xgr.GrammarCompiler(info)
tag_compiler.compile_structural_tag(xgr.get_model_structural_tag("llama", tools=tools[:3]))
before = rt.cache_counters(tag_compiler)
tag_compiler.compile_structural_tag(xgr.get_model_structural_tag("llama", tools=tools[1:4]))
after = rt.cache_counters(tag_compiler)
for key in ("part_hits", "part_misses", "shape_hits", "shape_misses", "rules_seen", "rules_known"):
    print(f"{key:<13} after the first request {before[key]:>4}, after the second {after[key]:>4}")

# %% [markdown]
# The second request shares two of its three tools with the first: two parts are found whole,
# one is compiled.
#
# ## 5. Check against the brute-force oracle
#
# Entries that came through the pool must give the masks a grammar would build alone. The
# oracle knows nothing of caches: for every token it asks an independent recognizer whether the
# prefix plus the token can still be extended to a sentence. Along a seeded walk in each grammar
# of the triple (a 300-token vocabulary, so that the oracle answers quickly), the masks of the
# shared compiler equal the oracle's at every step.

# %%
small = rt.sub_vocabulary(300, extra=straddling)
vocab = [bytes(t) for t in small.decoded_vocab]
small_compiler = xgr.GrammarCompiler(small)
for name, text in triple.items():
    compiled = small_compiler.compile_grammar(text)
    for step in rt.random_walk(compiled, 5, seed=1):
        want = brute_force_mask(compiled.grammar.ir, step["prefix"], vocab, stop_token_ids=small.stop_token_ids)
        have = step["mask"]
        assert (have == want).all(), (name, step["prefix"])
    print(f"{name}: masks equal the oracle's along {step['prefix']!r}")
print(small_compiler.cache_stats.summary())

# %% [markdown]
# Actual code: `xg2ref.fsm.hashing.hash_rules` (Algorithms 1 and 2), `xg2ref.fsm.hashing.same_structure`,
# `xg2ref.mask.cross_grammar.CrossGrammarCache`, `xg2ref.mask.cross_grammar.PoolView.build` (perfect, partial,
# miss), `xg2ref.fsm.shapes.ShapeCache`, `xg2ref.linking.PartCache`, `xg2ref.linking.link`.
