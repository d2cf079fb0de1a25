# %% [markdown]
# # 00 — A tour: the xgrammar API and what a token mask is (XGrammar Figure 2)
#
# A language model writes one token at a time. Constrained decoding puts a *token mask* between
# the model and the sampler: at every step, each token of the vocabulary is either allowed (its
# bytes keep the output on the way to a sentence of the grammar) or blocked, and blocked tokens
# get a logit of −∞, so they are never sampled (XGrammar §2.1, Figure 2).
#
# xg2ref has xgrammar 0.2.8's Python API, so the code below is what one writes for xgrammar:
# a `TokenizerInfo` (the vocabulary), a `GrammarCompiler` (grammar + vocabulary → a
# `CompiledGrammar`), a `GrammarMatcher` (one per request: it tracks the output so far and fills
# the mask), and `apply_token_bitmask_inplace` (the mask meets the logits).
#
# The vocabulary here has 32 tokens so that every mask can be printed; the last cell repeats the
# step on Llama-3's 128,256 tokens when `XG2REF_NOTEBOOK_FULL=1`.

# %%
import os
import time

import matplotlib.pyplot as plt
import numpy as np

import xg2ref as xgr
from xg2ref.oracle import brute_force_mask

# %% [markdown]
# ## A vocabulary and a grammar
#
# A `TokenizerInfo` can be built from a list of byte strings (token id = position). Token 31 is
# the end-of-sequence token; the matcher allows it only where the output is a whole sentence.
# The grammar comes from a JSON Schema; the compiler turns it into EBNF first (printed below),
# the format every front end (EBNF, JSON Schema, regex, structural tags) meets in.

# %%
vocab = [b"{", b"}", b'"', b":", b" ", b",", b"-", b"'", b"0", b"1", b"2", b"3", b"4", b"5", b"6", b".",
         b'{"', b'":', b'": ', b', "', b'"}', b"name", b"age", b"Ada", b"Love", b"lace", b"36", b"null",
         b"a", b"e", b"g", b"</s>"]
STOP = vocab.index(b"</s>")
info = xgr.TokenizerInfo(vocab, stop_token_ids=[STOP])

schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"]}
print(xgr.Grammar.from_json_schema(schema, any_whitespace=False))
compiled = xgr.GrammarCompiler(info).compile_json_schema(schema, any_whitespace=False)

# %% [markdown]
# ## The decoding loop
#
# The "model" is random logits (seeded) with a slight preference for a few tokens; it knows
# nothing about JSON. The mask alone makes its output valid. Each step: fill the bitmask, apply
# it to the logits, pick the best token, tell the matcher.

# %%
rng = np.random.default_rng(3)


def model(text: bytes) -> np.ndarray:
    """Stand-in for a language model: noise, plus a liking for a few tokens."""
    logits = rng.normal(0.0, 1.0, info.vocab_size).astype(np.float32)
    for tok in (b'"', b"}", b"</s>", b"Ada", b"Love", b"lace", b"36"):
        logits[vocab.index(tok)] += 1.5
    return logits


matcher = xgr.GrammarMatcher(compiled)
bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
text, steps = b"", []  # steps: (bytes before the step, allowed bool[V], chosen token)
while not matcher.is_terminated():
    logits = model(text)
    matcher.fill_next_token_bitmask(bitmask)
    xgr.apply_token_bitmask_inplace(logits, bitmask)
    token = int(np.argmax(logits))
    allowed = np.zeros(info.vocab_size, dtype=bool)
    allowed[xgr.testing.get_allowed_token_ids(bitmask, info.vocab_size)] = True
    steps.append((text, allowed, token))
    assert matcher.accept_token(token)
    text += vocab[token] if token != STOP else b""
print(text.decode())

# %% [markdown]
# ## What the mask is
#
# The bitmask is an int32 array of ⌈V / 32⌉ words per row (a torch tensor when torch is
# installed, as in xgrammar; numpy otherwise); bit *t* is 1 when token *t* is allowed. After
# `{"name": ` a string must begin, so only the tokens that start with a quote are allowed
# (`":` too: it opens a string whose first character is a colon).

# %%
m = xgr.GrammarMatcher(compiled)
m.accept_string('{"name": ')
m.fill_next_token_bitmask(bitmask)
print("bitmask words:", bitmask, "shape", xgr.get_bitmask_shape(1, info.vocab_size))
print("allowed:", [vocab[t] for t in xgr.testing.get_allowed_token_ids(bitmask, info.vocab_size)])

# %% [markdown]
# ## Figure 2: one mask per step
#
# Rows are decoding steps, columns the 32 tokens; green cells are allowed, the dot is the token
# chosen. Inside the string almost everything is allowed; between members only a few tokens are.

# %%
grid = np.array([a for _, a, _ in steps])
fig, ax = plt.subplots(figsize=(10, 0.32 * len(steps) + 1.5))
ax.imshow(grid, cmap="Greens", vmin=-0.3, vmax=1.2, aspect="auto")
ax.scatter([t for *_, t in steps], range(len(steps)), color="black", s=12)
ax.set_xticks(range(info.vocab_size))
ax.set_xticklabels([tok.decode() for tok in vocab], rotation=90, fontsize=8)
ax.set_yticks(range(len(steps)))
ax.set_yticklabels([repr(before.decode()[-14:]) for before, _, _ in steps], fontsize=7)
ax.set_xlabel("token")
ax.set_ylabel("output before the step")
ax.set_title("Per-token masks (XGrammar Figure 2): green = allowed, dot = chosen")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Other entry points
#
# Rolling back undoes accepted tokens exactly (a model's speculative tokens may be rejected);
# `find_jump_forward_string` returns bytes the grammar forces next; `fork` copies a matcher.

# %%
m = xgr.GrammarMatcher(compiled)
for tok in (b'{"', b"name", b'": '):
    assert m.accept_token(vocab.index(tok))
print("forced next:", repr(m.find_jump_forward_string()))
m.rollback(2)
print("after rolling back 2 tokens, forced next:", repr(m.find_jump_forward_string()))
print("accept the string 'x'? ", xgr.testing.is_grammar_accept_string(xgr.Grammar.from_regex("x+"), "x"))

# %% [markdown]
# ## Llama-3 (with `XG2REF_NOTEBOOK_FULL=1`)
#
# The same step on a real vocabulary and xgrammar's builtin JSON grammar.

# %%
if os.environ.get("XG2REF_NOTEBOOK_FULL") == "1":
    llama = xgr.TokenizerInfo.from_quicktok("llama3")
    json_matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(llama).compile_builtin_json_grammar())
    json_matcher.accept_string('{"name": "Ada", "age": 3')
    big = xgr.allocate_token_bitmask(1, llama.vocab_size)
    start = time.perf_counter()
    json_matcher.fill_next_token_bitmask(big)
    took = time.perf_counter() - start
    ids = xgr.testing.get_allowed_token_ids(big, llama.vocab_size)
    print(f"{len(ids):,} of {llama.vocab_size:,} tokens allowed ({took * 1e6:.0f} µs), e.g.",
          [llama.decoded_vocab[t] for t in ids[:8]])

# %% [markdown]
# ## Check against the brute-force oracle
#
# The oracle (`xg2ref.oracle`) shares no code with the engine: it asks an independent recognizer,
# token by token, whether the output so far followed by the token is still a prefix of a
# sentence. At every step of the walk above, its mask must be the matcher's.

# %%
grammar = xgr.Grammar.from_json_schema(schema, any_whitespace=False)
for before, have, _ in steps:
    want = brute_force_mask(grammar.ir, before, vocab, stop_token_ids=[STOP])
    assert (want == have).all(), before
print(f"oracle and engine agree at all {len(steps)} steps")

# %% [markdown]
# Actual code: `xg2ref.compiler.GrammarCompiler.compile_json_schema`,
# `xg2ref.matcher.GrammarMatcher.fill_next_token_bitmask`, `xg2ref.apply_mask.apply_token_bitmask_inplace`,
# `xg2ref.oracle.brute_force.brute_force_mask`.
