# %% [markdown]
# # 01 — From an EBNF grammar to an exact token mask
#
# XGrammar-2 §3.3–§3.4: every rule becomes a byte-level FSM, and an Earley parser over those
# FSMs decides which tokens may come next. This notebook walks one small grammar through the
# pipeline with xg2ref's public API. Run it as a script (`python notebooks/01_from_ebnf_to_masks.py`)
# or open it in Jupyter through jupytext.

# %%
import time

import numpy as np

import xg2ref as xgr
from xg2ref.earley import EarleyParser

# %% [markdown]
# ## 1. A grammar with left recursion, a character class and a repetition

# %%
ebnf = r"""
root ::= expr
expr ::= expr "+" term | term      # left recursive
term ::= [0-9]+ | "(" expr ")"
"""
grammar = xgr.Grammar.from_ebnf(ebnf)
print(grammar)

# %% [markdown]
# ## 2. One FSM per rule
#
# Edges are byte ranges or references to other rules (`<term>`); `*` marks final states.

# %%
compiled = xgr.GrammarCompiler(xgr.TokenizerInfo([])).compile_grammar(grammar)
for name, fsm in zip(compiled.fsms.rule_names, compiled.fsms.fsms):
    print(f"== {name}")
    print(fsm.to_text(list(compiled.fsms.rule_names)))

# %% [markdown]
# ## 3. The Earley chart, byte by byte
#
# Each set holds items `rule ::= seen • next  @origin`. Rolling back is dropping sets.

# %%
parser = EarleyParser(compiled.fsms, compiled.arrays)
for byte in b"(1+":
    assert parser.advance(bytes([byte]))
    print(f"--- after {chr(byte)!r} (set {parser.position})")
    print(parser.format_set())
print("complete?", parser.is_completed())
parser.rollback(2)
print("after rolling back 2 bytes, position", parser.position)

# %% [markdown]
# ## 4. A mask over a real vocabulary (Llama-3, 128,256 tokens)

# %%
info = xgr.TokenizerInfo.from_quicktok("llama3")
compiler = xgr.GrammarCompiler(info)
matcher = xgr.GrammarMatcher(compiler.compile_grammar(grammar))
matcher.accept_string("(12+")
bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
start = time.perf_counter()
matcher.fill_next_token_bitmask(bitmask)
elapsed = time.perf_counter() - start
allowed = xgr.testing.get_allowed_token_ids(bitmask, info.vocab_size)
print(f"{len(allowed)} of {info.vocab_size} tokens allowed after '(12+' ({elapsed * 1e3:.1f} ms)")
print([info.decoded_vocab[t] for t in allowed[:12]])
assert all(info.decoded_vocab[t][:1] in b"(0123456789" for t in allowed)
