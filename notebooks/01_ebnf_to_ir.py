# %% [markdown]
# # 01 — From EBNF to the grammar IR, and the normalization passes (XGrammar §3.4)
#
# Every front end (EBNF text, JSON Schema, regular expressions, structural tags) produces the
# same intermediate representation: a list of named rules whose bodies are trees of six kinds
# of nodes — byte strings, character classes, rule references, sequences, choices and bounded
# repetitions (plus the TagDispatch and token-set intrinsics, notebook 06). Printing the IR
# gives EBNF that parses back to the same tree, so the text *is* the IR for a reader.
#
# Before any automaton is built, a few passes rewrite the IR without changing its language.
# The one the XGrammar paper discusses (§3.4, "rule inlining") replaces references to small
# rules by their bodies: each reference costs the parser a prediction and a completion, and a
# token that runs past the end of a rule cannot be decided from the rule alone (notebook 05),
# so fewer, larger rules make both the parser and the token-mask cache cheaper.

# %%
import matplotlib.pyplot as plt

import xg2ref as xgr
from xg2ref.oracle import brute_force_accepts
from xg2ref.strategies import mutate, sentences
from xg2ref.views.parsing import earley_trace, format_table, ir_outline, normalization_steps, rule_fsms

# %% [markdown]
# ## The dialect
#
# xgrammar's EBNF: `name ::= body`, literals in double quotes with C escapes, character classes
# (negated with `^`, any Unicode code point), `?`, `*`, `+` and `{m,n}`, grouping, comments, and
# lookahead assertions `(= ...)` that state what must follow a rule. The root rule is `root`.

# %%
ebnf = r'''
# a list of signed integers, e.g. [1, -20, 300]
root   ::= "[" ws ( number ( ws "," ws number )* )? ws "]"
number ::= sign? digits (= ws [,\]])
sign   ::= "-"
digits ::= [0-9] | [1-9] [0-9]{1,8}
ws     ::= [ \t\n]*
'''
grammar = xgr.Grammar.from_ebnf(ebnf)
print(grammar)

# %% [markdown]
# The same grammar as an IR tree (one node per line). A repetition `x?` is `Repeat {0,1}`,
# `x*` is `{0,}`; a character class keeps its code-point ranges.

# %%
print("\n".join(ir_outline(grammar)))

# %% [markdown]
# ## The print round trip
#
# `str(grammar)` prints EBNF in a canonical layout; parsing that text gives back the same IR.

# %%
again = xgr.Grammar.from_ebnf(str(grammar))
assert again.ir == grammar.ir and str(again) == str(grammar)
print("print -> parse -> print is the identity")

# %% [markdown]
# Errors name the place (line and column) and what was expected there.

# %%
try:
    xgr.Grammar.from_ebnf('root ::= "a" | ( "b" \n')
except xgr.EBNFError as err:
    print(err)

# %% [markdown]
# Other front ends give the same IR. A regular expression and a JSON Schema, printed as EBNF:

# %%
print(xgr.Grammar.from_regex(r"-?(0|[1-9][0-9]*)"))
print(xgr.Grammar.from_json_schema({"type": "array", "items": {"type": "integer"}, "maxItems": 2},
                                   any_whitespace=False))

# %% [markdown]
# ## Normalization, pass by pass
#
# The compiler runs, in order: `lower_lazy_rules`, `flatten` (splice nested sequences and
# choices), `fuse_byte_strings` (`"a" "b"` → `"ab"`), `inline_small_rules` (XGrammar §3.4),
# `flatten` and `fuse_byte_strings` again (inlining makes new neighbours), `remove_dead_rules`,
# and finally `compress_repetitions` (XGrammar-2 §3.6, notebook 10). Only the passes that
# change something are shown.

# %%
steps = normalization_steps(grammar)
previous = None
for name, text in steps:
    if text != previous:
        print(f"--- after {name}\n{text}")
    previous = text

# %% [markdown]
# `sign`, `digits` and `ws` reference no other rule and are small, so they are put in place;
# `number` carries a lookahead assertion and stays a rule. Inlining is not free: a body copied
# into many places makes the caller's automaton larger. The sizes below count rules and the
# states of their minimized automata (notebook 02) before and after.

# %%
before, after = rule_fsms(grammar, inline=False), rule_fsms(grammar, inline=True)
print(format_table([{"": "as written", "rules": len(before), "states": sum(v["states"] for v in before.values())},
                    {"": "inlined", "rules": len(after), "states": sum(v["states"] for v in after.values())}]))

# %% [markdown]
# What inlining buys: the Earley chart (notebook 03) holds fewer items, because the parser no
# longer predicts and completes `ws`, `sign` and `digits` around every byte.

# %%
data = "[1, -20, 300]"
sizes = {}
for label, inline in (("as written", False), ("inlined", True)):
    rows = earley_trace(grammar, data, inline=inline)
    sizes[label] = [sum(1 for r in rows if r["set"] == k) for k in range(len(data) + 1)]
fig, ax = plt.subplots(figsize=(8, 2.8))
for label, counts in sizes.items():
    ax.plot(range(len(counts)), counts, marker="o", label=f"{label}: {sum(counts)} items")
ax.set_xticks(range(len(data) + 1))
ax.set_xticklabels(["∅"] + list(data))
ax.set_xlabel("Earley set (after the byte shown)")
ax.set_ylabel("items")
ax.set_title("Chart size with and without rule inlining")
ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Check against the brute-force oracle
#
# No pass may change the language. The oracle's recognizer reads the grammar printed after each
# pass; on sentences sampled from the original grammar, and on mutations of them, every
# version must give the original's verdict, and so must the engine.

# %%
import random

rng = random.Random(0)
samples = [s for s in (sentences(grammar.ir, rng) for _ in range(40)) if s is not None]
samples += [mutate(s, rng, alphabet=b"[]-, 0123") for s in samples]
versions = [xgr.Grammar.from_ebnf(text) for _, text in steps]
for s in samples:
    want = brute_force_accepts(grammar.ir, s)
    assert all(brute_force_accepts(v.ir, s) == want for v in versions), s
    assert xgr.testing.is_grammar_accept_string(grammar, s) == want, s
print(f"{len(samples)} strings, {sum(brute_force_accepts(grammar.ir, s) for s in samples)} of them sentences: "
      f"every pass keeps the language, and the engine agrees")

# %% [markdown]
# Actual code: `xg2ref.frontends.ebnf.parser.parse_ebnf`, `xg2ref.grammar.printer.print_grammar`,
# `xg2ref.grammar.passes.normalize`, `xg2ref.grammar.passes.inline_small_rules`,
# `xg2ref.grammar.repetition.compress_repetitions`.
