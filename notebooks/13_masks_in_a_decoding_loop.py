# %% [markdown]
# # 13 — Masks in a decoding loop
#
# **XGrammar §3.5 (overlap with the model's forward pass) and the way a mask reaches the
# logits.**
#
# Everything before this notebook computes *which* tokens are allowed. A serving engine still
# has to use that answer once per step: fill the bitmask on the CPU while the GPU runs the
# model, set the logits of the disallowed tokens to -inf, sample, and tell the matcher which
# token was taken. XGrammar §3.5 overlaps the first step with the forward pass so that the mask
# costs nothing when it is ready before the logits are. This notebook runs that loop on the CPU
# with torch and a random "model", checks every mask against the brute-force oracle, and times
# the three parts of a step.

# %%
import json
import os
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch

import xg2ref as xgr
from xg2ref.oracle import brute_force_mask
from xg2ref.views import runtime as rt

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm's notice about Jupyter widgets

FULL = os.environ.get("XG2REF_NOTEBOOK_FULL") == "1"

# %% [markdown]
# ## 1. The bitmask
#
# One row per sequence of the batch, `ceil(vocab_size / 32)` int32 words per row; bit `t % 32` of
# word `t // 32` is 1 when token t is allowed (xgrammar's layout, so the same kernels read it).

# %%
tiny = xgr.TokenizerInfo(["{", "}", '"', "a", "b", ":", " ", "1", "</s>"], stop_token_ids=[8])
compiled = xgr.GrammarCompiler(tiny).compile_json_schema(
    {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, any_whitespace=False)
matcher = xgr.GrammarMatcher(compiled)
bitmask = xgr.allocate_token_bitmask(1, tiny.vocab_size)
print("shape", tuple(bitmask.shape), bitmask.dtype)
for text in ("", "{", '{"a": ', '{"a": 1'):
    matcher = xgr.GrammarMatcher(compiled)
    assert matcher.accept_string(text)
    matcher.fill_next_token_bitmask(bitmask)
    word = int(bitmask[0, 0]) & 0xFFFFFFFF
    allowed = xgr.testing.get_allowed_token_ids(bitmask, tiny.vocab_size)
    print(f"after {text!r:<9} word {word:032b}  allowed {[tiny.decoded_vocab[t].decode() for t in allowed]}")

# %% [markdown]
# (The word prints bit 31 first: token 0, `{`, is the last digit.)
#
# ## 2. From the bitmask to the logits
#
# `xgr.apply_token_bitmask_inplace(logits, bitmask)` writes -inf where a bit is 0 and leaves the
# other logits untouched. On CPU tensors the default backend is a Numba kernel (`cpu`), which
# skips a word whose 32 bits are all 1; `torch_native` does the same with torch operations, on
# any device. `indices` picks the rows of a batch to mask.

# %%
torch.manual_seed(0)
logits = torch.randn(1, tiny.vocab_size)
masked = logits.clone()
xgr.apply_token_bitmask_inplace(masked, bitmask)
print("before", [f"{x:+.2f}" for x in logits[0].tolist()])
print("after ", [f"{x:+.2f}" for x in masked[0].tolist()])
other = logits.clone()
xgr.apply_token_bitmask_inplace(other, bitmask, backend="torch_native")
assert torch.equal(masked, other)

batch = torch.randn(3, tiny.vocab_size)
rows = torch.zeros(3, bitmask.shape[1], dtype=torch.int32)
rows[1] = bitmask[0]
before = batch.clone()
xgr.apply_token_bitmask_inplace(batch, rows, indices=[1])  # only row 1 is masked
assert torch.equal(batch[0], before[0]) and torch.equal(batch[2], before[2])
print("row 1 masked:", [f"{x:+.2f}" for x in batch[1].tolist()])

# %% [markdown]
# ## 3. A decoding loop with a random model
#
# The "model" is a fixed random bigram table over a 2,000-token vocabulary (the first 2,000
# Llama-3 tokens): the logits of the next token depend on the last one only, so each forward
# pass is one row lookup. The grammar is a small JSON schema. Each step: fill the mask, apply it,
# sample, accept. The loop ends at the stop token.

# %%
info = rt.sub_vocabulary(2000)
schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 120},
                                           "tags": {"type": "array", "items": {"type": "string", "maxLength": 6},
                                                    "maxItems": 3}},
          "required": ["name", "age"], "additionalProperties": False}
compiled = xgr.GrammarCompiler(info).compile_json_schema(schema, any_whitespace=False)
generator = torch.Generator().manual_seed(0)
bigram = torch.randn(info.vocab_size, info.vocab_size, generator=generator) * 3


def decode(compiled, max_steps=80, seed=0, temperature=1.0):
    """One constrained generation: the token ids and the seconds of each step's three parts."""
    gen = torch.Generator().manual_seed(seed)
    m = xgr.GrammarMatcher(compiled)
    mask = xgr.allocate_token_bitmask(1, info.vocab_size)
    last, out, times = 0, [], []
    for _ in range(max_steps):
        t0 = time.perf_counter()
        m.fill_next_token_bitmask(mask)
        t1 = time.perf_counter()
        logits = bigram[last].clone().unsqueeze(0)  # the "forward pass"
        xgr.apply_token_bitmask_inplace(logits, mask)
        t2 = time.perf_counter()
        token = int(torch.multinomial(torch.softmax(logits / temperature, dim=-1), 1, generator=gen))
        assert m.accept_token(token)
        t3 = time.perf_counter()
        times.append((t1 - t0, t2 - t1, t3 - t2))
        if m.is_terminated():
            break
        out.append(token)
        last = token
    return out, np.array(times)


decode(compiled, max_steps=3)  # the kernels load before anything is timed
for seed in range(3):
    ids, times = decode(compiled, seed=seed)
    text = b"".join(bytes(info.decoded_vocab[t]) for t in ids).decode("utf-8", "replace")
    value = json.loads(text)
    print(f"seed {seed}: {len(ids)} tokens  {text}")
print(f"per step (last run): mask {1e6 * times[:, 0].mean():.0f} µs, apply {1e6 * times[:, 1].mean():.0f} µs, "
      f"sample and accept {1e6 * times[:, 2].mean():.0f} µs")

# %% [markdown]
# Every output parses and follows the schema, whatever the random model prefers. Step by step:
# the mask's time depends on where the parser is (a step inside a string, where almost every
# token is allowed, differs from one where a structural character is forced), and the first
# steps also build the mask-cache entries they need (JIT, notebook 09).

# %%
fig, ax = plt.subplots(figsize=(9, 3))
ax.plot(times[:, 0] * 1e6, marker=".", label="fill the mask")
ax.plot(times[:, 1] * 1e6, marker=".", label="model + apply the mask")
ax.plot(times[:, 2] * 1e6, marker=".", label="sample + accept")
ax.set_yscale("log")
ax.set_xlabel("decoding step")
ax.set_ylabel("µs")
ax.set_title("One constrained generation, step by step (2,000 tokens, CPU)")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 4. A batch, and the processor for transformers
#
# `xgr.BatchGrammarMatcher` fills one bitmask for a batch of matchers, row by row, and the same
# `apply_token_bitmask_inplace` masks the batch's logits. `xgr.contrib.hf.LogitsProcessor`
# does both inside `transformers`' `generate()`: here with a four-layer Llama architecture whose
# weights are random, built from a config over this 2,001-token vocabulary (nothing downloaded).

# %%
rows = 4
matchers = [xgr.GrammarMatcher(compiled) for _ in range(rows)]
batch_mask = xgr.allocate_token_bitmask(rows, info.vocab_size)
xgr.BatchGrammarMatcher().batch_fill_next_token_bitmask(matchers, batch_mask)
batch_logits = bigram[:rows].clone()
xgr.apply_token_bitmask_inplace(batch_logits, batch_mask)
print("finite logits per row:", torch.isfinite(batch_logits).sum(dim=1).tolist())

try:
    import transformers
    LogitsProcessor = xgr.contrib.hf.LogitsProcessor  # as in xgrammar: xgr.contrib.hf
except ImportError as err:  # transformers is an optional extra
    print("transformers is not installed:", err)
else:
    transformers.logging.set_verbosity_error()
    config = transformers.LlamaConfig(vocab_size=info.vocab_size, hidden_size=64, intermediate_size=128,
                                      num_hidden_layers=4, num_attention_heads=4, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    processor = LogitsProcessor(compiled)
    prompt = torch.zeros((2, 1), dtype=torch.long)
    start = time.perf_counter()
    out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=60, do_sample=True, top_k=0,
                         logits_processor=[processor], eos_token_id=info.stop_token_ids, pad_token_id=info.stop_token_ids[0])
    seconds = time.perf_counter() - start
    for row in out[:, 1:].tolist():
        text = b"".join(bytes(info.decoded_vocab[t]) for t in row if t not in info.stop_token_ids)
        print(text.decode("utf-8", "replace"))
    print(f"masks: {1e3 * processor.mask_seconds:.0f} ms of {1e3 * seconds:.0f} ms of generate()")

# %%
if FULL:  # every backend beside xgrammar's, batches of 1/16/128 rows, 128k and 200k tokens
    print(rt.run_cli(["bench", "kernels"])["stdout"])

if torch.cuda.is_available():  # on a GPU the default backend is the numba.cuda kernel
    gpu_logits = torch.randn(4, info.vocab_size, device="cuda")
    cpu_logits = gpu_logits.cpu()
    xgr.apply_token_bitmask_inplace(gpu_logits, batch_mask.cuda())
    xgr.apply_token_bitmask_inplace(cpu_logits, batch_mask)
    assert torch.equal(gpu_logits.cpu(), cpu_logits)
    print("CUDA: the same masked logits as on the CPU")

# %% [markdown]
# ## 5. Check against the brute-force oracle
#
# In a decoding loop over a 300-token vocabulary, at every step the matcher's mask equals the
# oracle's (which asks an independent recognizer about every token), and after
# `apply_token_bitmask_inplace` the finite logits are exactly the oracle's allowed tokens.

# %%
small = rt.sub_vocabulary(300)
vocab = [bytes(t) for t in small.decoded_vocab]
small_schema = {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0, "maximum": 120}},
                "required": ["age"], "additionalProperties": False}
small_compiled = xgr.GrammarCompiler(small).compile_json_schema(small_schema, any_whitespace=False)
gen = torch.Generator().manual_seed(1)
m = xgr.GrammarMatcher(small_compiled)
mask = xgr.allocate_token_bitmask(1, small.vocab_size)
prefix = b""
while True:
    m.fill_next_token_bitmask(mask)
    want = brute_force_mask(small_compiled.grammar.ir, prefix, vocab, stop_token_ids=small.stop_token_ids)
    assert (xgr.testing.bitmask_to_bool_mask(mask, small.vocab_size)[0] == want).all(), prefix
    logits = torch.randn(1, small.vocab_size, generator=gen)
    xgr.apply_token_bitmask_inplace(logits, mask)
    assert (torch.isfinite(logits[0]).numpy() == want).all(), prefix
    token = int(torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=gen))
    assert m.accept_token(token)
    if m.is_terminated():
        break
    prefix += vocab[token]
print(f"every mask equal to the oracle's along {prefix!r}")

# %% [markdown]
# Actual code: `xg2ref.apply_mask.apply_token_bitmask_inplace`, `xg2ref.kernels.apply_bitmask.apply_bitmask_rows`,
# `xg2ref.bitmask.allocate_token_bitmask`, `xg2ref.matcher.GrammarMatcher.fill_next_token_bitmask`,
# `xg2ref.contrib.hf.LogitsProcessor`.
