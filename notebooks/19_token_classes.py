# %% [markdown]
# # 19 — Token classes: the syntactic congruence and displacement (CFGzip §2–§3)
#
# A grammar cannot tell some tokens apart. Inside a JSON string, `abc` and `hello` do the same
# thing; after a digit, `1` and `7` do. CFGzip (seed 004) makes this precise with the
# *syntactic congruence* of the grammar's language L (its Definition 1):
#
#     u ≡_L v   iff   for all x, y:  x u y ∈ L  ⇔  x v y ∈ L
#
# and its Theorem 1: tokens congruent one by one give congruent sequences, so an engine may run
# over one *representative* per class and gather its mask back to the vocabulary without
# changing a single bit. This notebook shows the congruence where it can be computed exactly (a
# regular grammar), the two refinements xg2ref computes on any grammar (`byte_blocks`,
# `displacement`), and the check that matters: masks equal to the brute-force oracle's.

# %%
import matplotlib.pyplot as plt
import numpy as np

import xg2ref as xgr
from xg2ref.oracle import Recognizer, brute_force_mask, syntactic_classes
from xg2ref.token_classes import ClassMatcher, compute_token_classes

# %% [markdown]
# ## 1. The exact congruence of a regular grammar
#
# For a regular language the congruence is computable: u ≡_L v exactly when u and v move every
# state of the minimal DFA to the same state (Myhill). `xg2ref.oracle.syntactic_classes` builds
# that DFA from the grammar's IR (its own subset construction and minimization) and groups the tokens.

# %%
regular = 'root ::= [a-z]+ ("=" [0-9]+)? (";" [a-z]+ ("=" [0-9]+)?)*'
vocab = [b"a", b"ab", b"key", b"=", b"=1", b"1", b"12", b";", b";x", b"x=", b"x=1", b"==", b"</s>"]
grammar = xgr.Grammar.from_ebnf(regular)
exact = syntactic_classes(grammar.ir, vocab[:-1])
groups: dict = {}
for token, cls in zip(vocab, exact):
    groups.setdefault(cls, []).append(token.decode())
print("exact congruence classes:", list(groups.values()))

# %% [markdown]
# ## 2. Two refinements that work on any grammar
#
# For context-free languages the congruence is undecidable, so xg2ref computes relations that
# *imply* it (every class lies inside one congruence class):
#
# - `byte_blocks`: bytes that every edge of every rule machine treats alike form a block; tokens
#   with the same sequence of blocks are congruent. Cheap, but only tokens of one length merge.
# - `displacement` (CFGzip §3.2): in the Greibach normal form of the grammar, a token's
#   displacement is the set of pairs (α, β) such that reading it pops α off the parser's stack
#   and pushes β. Equal displacements are congruent (Theorem 2), whatever the bytes.

# %%
info = xgr.TokenizerInfo(vocab, stop_token_ids=[len(vocab) - 1])
compiled = xgr.GrammarCompiler(info).compile_grammar(grammar)
found = {relation: compute_token_classes(compiled, relation) for relation in ("byte_blocks", "displacement")}
for relation, classes in found.items():
    print(f"{relation:13} {classes.n_regular} classes:",
          [[vocab[t].decode() for t in classes.members(c)] for c in range(classes.n_regular)])
    print(f"{'':13} valid nowhere (the never class):",
          [vocab[t].decode() for t in classes.members(classes.never_class)])

# %% [markdown]
# Here displacement finds the exact congruence, and byte_blocks splits it by length. Every class
# of both lies inside one exact class:

# %%
for relation, classes in found.items():
    for c in range(classes.n_regular):
        assert len({exact[t] for t in classes.members(c)}) == 1, relation
print("every class lies inside one class of the congruence")

# %% [markdown]
# ## 3. A context-free grammar, left recursion included
#
# Expressions with left recursion: the normal form removes it (Paull's algorithm), and the
# displacement relation then merges `1` with `12`, and `+1` with `-12`, but never `1+` with `1+2`
# (after the first, a digit must come; after the second, it may not be needed).

# %%
expr = 'root ::= e\ne ::= e [-+] t | t\nt ::= [0-9]+ | "(" e ")"'
vocab2 = [b"1", b"12", b"7", b"+", b"-", b"+1", b"-12", b"1+", b"1+2", b"(", b"((", b"(1", b")", b"))", b"1)",
          b"a", b"</s>"]
info2 = xgr.TokenizerInfo(vocab2, stop_token_ids=[len(vocab2) - 1])
grammar2 = xgr.Grammar.from_ebnf(expr)
compiled2 = xgr.GrammarCompiler(info2).compile_grammar(grammar2)
disp = compute_token_classes(compiled2, "displacement")
blocks = compute_token_classes(compiled2, "byte_blocks")
print({k: disp.stats[k] for k in ("gnf_symbols", "gnf_productions", "signatures", "displacements")})

fig, axes = plt.subplots(1, 2, figsize=(11, 3.2))
for ax, (name, classes) in zip(axes, (("byte_blocks", blocks), ("displacement", disp))):
    cmap = plt.get_cmap("tab20")
    for t, token in enumerate(vocab2[:-1]):
        c = int(classes.class_of[t])
        color = "lightgray" if c >= classes.n_regular else cmap(c % 20)
        ax.add_patch(plt.Rectangle((t, 0), 0.92, 1, color=color))
        ax.text(t + 0.46, 0.5, token.decode(), ha="center", va="center", fontsize=9)
    ax.set_xlim(0, len(vocab2) - 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    ax.set_title(f"{name}: {classes.n_regular} classes (gray: never allowed)")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 4. An engine over the representatives, checked against the oracle
#
# `ClassMatcher` runs an engine over one representative per class (here xg2ref itself; with
# `ClassMatcher.for_xgrammar`, xgrammar 0.2.8) and gathers its mask over classes back to the
# vocabulary. Along a walk, the gathered masks are the brute-force oracle's, bit for bit.

# %%
matcher = ClassMatcher.from_grammar(grammar2, info2, disp)
oracle = Recognizer(grammar2.ir)
text = b""
for token in [b"(", b"12", b"+", b"7", b")", b"-", b"1"]:
    want = brute_force_mask(oracle, text, vocab2, stop_token_ids=[len(vocab2) - 1])
    have = matcher.compute_bool_mask()
    assert np.array_equal(have, want), text
    assert matcher.accept_token(vocab2.index(token))
    text += token
print("masks equal to the oracle's along", text.decode(), "; the inner engine saw", disp.n_regular + 1,
      "tokens instead of", len(vocab2))

# %% [markdown]
# On real vocabularies the saving is large: `xg2ref classes json --vocab llama3 -o DIR` finds 291
# displacement classes for the built-in JSON grammar over 128,256 tokens (notebook 20 reproduces
# CFGzip's Tables 1 and 3).
#
# Actual code: `xg2ref.token_classes.blocks.byte_blocks`, `xg2ref.token_classes.gnf.stack_grammar`
# (the normal form, Paull's algorithm, stack adjacency), `xg2ref.token_classes.displacement.displacement_keys`,
# `xg2ref.kernels.displacement.displacement_ids` (Algorithm 1, memoized on frontier sets),
# `xg2ref.token_classes.matcher.ClassMatcher`, `xg2ref.kernels.class_mask.expand_class_bitmask`,
# `xg2ref.oracle.congruence.syntactic_classes`; specs/09-token-classes.md.
