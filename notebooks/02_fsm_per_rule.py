# %% [markdown]
# # 02 — One byte-level automaton per rule (XGrammar-2 §3.3)
#
# The engine never reads the grammar tree while decoding. Each rule becomes a finite-state
# machine over *bytes* and *rule references*: a path from the start state to a final state
# spells one body of the rule, where an edge labelled `<value>` stands for any string of rule
# `value`. The Earley parser (notebook 03) walks these machines, one byte at a time. XGrammar-2
# §3.3 represents a grammar this way because machines can be hashed and shared across grammars
# (notebook 07); here we look at how one machine is built:
#
# 1. **Thompson's construction** turns the body into a machine with ε (empty) edges, one small
#    fragment per IR node.
# 2. **ε-removal** gives each state the edges of the states it reaches by ε edges, then
#    **trimming** drops states that are unreachable or cannot reach a final state (an Earley
#    item in a dead state would make a dead prefix look alive).
# 3. **Determinization** (subset construction) cuts overlapping byte ranges into disjoint ones.
# 4. **Minimization** (Hopcroft) merges states with the same future.
#
# Bytes, not characters: a character class over Unicode becomes a few byte-range paths (UTF-8),
# so tokens that split a character in the middle are handled like any other bytes.

# %%
import matplotlib.pyplot as plt

import xg2ref as xgr
from xg2ref.oracle import brute_force_accepts
from xg2ref.views.parsing import draw_fsm, format_table, fsm_stages, fsm_text, rule_fsms, stage_accepts, utf8_pieces

# %% [markdown]
# ## A number, stage by stage

# %%
number = 'root ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)?'
stages = fsm_stages(number, "root")
print(format_table([{"stage": name, "states": v["states"], "edges": len(v["edges"]),
                     "ε edges": sum(kind == "epsilon" for *_, kind in v["edges"])} for name, v in stages]))
print()
print(fsm_text(stages[-1][1]))

# %%
fig, axes = plt.subplots(len(stages), 1, figsize=(11, 2.3 * len(stages) + 1))
for ax, (name, view) in zip(axes, stages):
    draw_fsm(view, ax=ax, title=f"{name}: {view['states']} states")
plt.tight_layout()
plt.show()

# %% [markdown]
# The minimal machine has one state per distinct future: after `-`, after `0`, inside the
# integer part, after `.`, inside the fraction. A final state (double circle) is where the
# rule may end; the Earley parser completes the rule's callers there.

# %% [markdown]
# ## Rule references are edges
#
# In a grammar with several rules, each machine refers to the others by edges labelled with a
# rule name (blue). Recursion is a reference like any other: `root` calls `value`, which calls
# `root` again, and neither can be inlined (notebook 01).

# %%
nested = 'root ::= "[" (value ("," value)*)? "]"\nvalue ::= [0-9]+ | root'
machines = rule_fsms(nested)
fig, axes = plt.subplots(1, 2, figsize=(11, 2.8))
for ax, (name, view) in zip(axes, machines.items()):
    draw_fsm(view, ax=ax, title=f"rule {name}")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Tail self-calls become loops
#
# `chars ::= [a-z] chars | "\""` calls itself as its last step. Kept as a call, the parser would
# stack one nested item per character read; since nothing follows the call, it is replaced by a
# jump back to the start state: the same language, and a chart that does not grow with the
# string (notebook 03 shows both kinds of recursion in the chart).

# %%
tail = 'root ::= "\\"" chars\nchars ::= [a-z] chars | "\\""'
for name, view in fsm_stages(tail, "chars"):
    print(f"--- {name}\n{fsm_text(view)}")

# %% [markdown]
# ## UTF-8: classes of characters as byte paths
#
# A range of code points splits into pieces whose encodings have the same length and whose
# every byte position is an independent byte range. `[à-é]` is one two-byte path; Greek
# lower case needs two; everything but `"` and `\` needs a path per encoding length.

# %%
for lo, hi, label in ((0xE0, 0xE9, "[à-é]"), (0x3B1, 0x3C9, "[α-ω]"), (0x80, 0x10FFFF, "[\\u0080-\\U0010FFFF]")):
    print(f"{label:>24}:  " + "  |  ".join(" ".join(piece) for piece in utf8_pieces(lo, hi)))

# %%
greek = 'root ::= [α-ω]+'
fig, axes = plt.subplots(1, 2, figsize=(11, 2.6))
for ax, (name, view) in zip(axes, [fsm_stages(greek, "root")[0], fsm_stages(greek, "root")[-1]]):
    draw_fsm(view, ax=ax, title=f"[α-ω]+ — {name}: {view['states']} states")
plt.tight_layout()
plt.show()

# %% [markdown]
# A token that ends in the middle of a character is just a byte path that stops inside the
# machine: after `b"\xce"` (the first byte of α) the input is still a viable prefix, but not a
# sentence; once the character is complete it is both.

# %%
matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(xgr.TokenizerInfo([])).compile_grammar(greek))
for piece in (b"\xce", b"\xb1"):
    print(f"read {piece!r}: viable {matcher.accept_string(piece)}, sentence {matcher.is_completed()}")

# %% [markdown]
# ## Check against the brute-force oracle
#
# Every stage must spell exactly the rule's language. The oracle's recognizer reads the grammar
# tree directly; on every byte string up to length 3 over an alphabet that includes the UTF-8
# pieces, each stage's machine must agree with it — and so must the compiled engine.

# %%
import itertools

alphabet = [b"-", b"0", b"1", b"9", b".", b"a", b"\xce", b"\xb1", b"\xcf", b"\x89"]
strings = [b"".join(parts) for n in range(4) for parts in itertools.product(alphabet, repeat=n)]
for ebnf in (number, greek):
    ir = xgr.Grammar.from_ebnf(ebnf).ir
    engine = xgr.GrammarMatcher(xgr.GrammarCompiler(xgr.TokenizerInfo([])).compile_grammar(ebnf))
    for s, have in zip(strings, stage_accepts(ebnf, "root", strings)):
        want = brute_force_accepts(ir, s)
        assert set(have.values()) == {want}, (ebnf, s, have)
        engine.reset()
        assert (engine.accept_string(s) and engine.is_completed()) == want, (ebnf, s)
print(f"{2 * len(strings)} strings: every stage and the engine agree with the oracle")

# %% [markdown]
# Actual code: `xg2ref.fsm.build.rule_fsm` (Thompson), `xg2ref.fsm.fsm.FSM.without_epsilon`,
# `xg2ref.fsm.fsm.FSM.trim`, `xg2ref.fsm.fsm.FSM.determinize`, `xg2ref.fsm.fsm.FSM.minimize`,
# `xg2ref.fsm.fsm.FSM.with_tail_calls_as_loops`, `xg2ref.fsm.utf8.utf8_sequences`,
# `xg2ref.fsm.build.build_grammar_fsms`.
