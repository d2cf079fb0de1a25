# %% [markdown]
# # 22 — WGrammar's Fig. 6 and Table 1, reproduced on the CPU side
#
# WGrammar (seed 002, §4) reports its overhead over unstructured decoding (Table 1: time to
# first token and per output token, against Outlines and XGrammar 0.1.18) and breaks it down
# on Outline-Generation (Fig. 6: grammar compilation, state tracking, mask creation). Its two
# production data sets are private; `xg2ref bench wgrammar` runs json-mode-eval (real) and two
# seeded stand-ins (specs/10-templates-and-operators.md), for WGrammar's templates and its online
# regex path beside xg2ref (plain, and with the request's repeated parts linked in as
# sub-grammars of a structural tag), xgrammar 0.2.8, llguidance 1.9.1 and XGrammar-1's pushdown
# automaton (the stand-in for XGrammar 0.1.18), on qwen3's vocabulary, one thread. Only the CPU
# components are measured (no model, no vLLM): compile or instantiate, accept and fill per
# token. This notebook reads the recorded run, `benchmarks/wgrammar/results.json`.

# %%
import json
import os

import matplotlib.pyplot as plt
import numpy as np

import xg2ref as xgr
from xg2ref.baselines.wgrammar import Factory, OperatorMatcher, TokenSets, lower_to_ir
from xg2ref.oracle import Recognizer, brute_force_mask

HERE = os.path.dirname(os.path.abspath(__file__)) if "__file__" in globals() else os.getcwd()
RESULTS = next(path for path in (os.path.join(HERE, "..", "benchmarks", "wgrammar", "results.json"),
                                 os.path.join(os.getcwd(), "benchmarks", "wgrammar", "results.json"))
               if os.path.exists(path))
with open(RESULTS, encoding="utf-8") as f:
    record = json.load(f)
ENGINES = ("wgrammar", "wgrammar-online", "xg2ref", "xg2ref-linked", "xgrammar", "llguidance", "pda")
WORKLOADS = ("json", "outline", "lookup")
PAPER = {"outline": {"xgrammar": (2747.83, 1.61), "wgrammar-online": (64.25, 0.93), "wgrammar": (10.93, 0.69)},
         "lookup": {"xgrammar": (116.89, 0.51), "wgrammar-online": (4.17, 0.42), "wgrammar": (4.70, 0.50)},
         "json": {"xgrammar": (137.68, 0.89), "wgrammar-online": (7.56, 0.70), "wgrammar": (1.38, 0.67)}}


def figures(workload, engine):
    runs = [r for r in record["runs"] if r["workload"] == workload and r["engine"] == engine and not r["error"]]
    accept = [x for r in runs for x in r["accept_us"]]
    fill = [x for r in runs for x in r["fill_us"]]
    step = [a + f for r in runs for a, f in zip(r["accept_us"], r["fill_us"])]
    return {"requests": len(runs), "compile_ms": np.mean([r["compile_ms"] for r in runs]),
            "first_ms": np.mean([r["first_ms"] for r in runs]), "accept_us": np.mean(accept),
            "fill_us": np.mean(fill), "step_us": np.mean(step), "step_p99": np.percentile(step, 99)}


table = {(w, e): figures(w, e) for w in WORKLOADS for e in ENGINES
         if any(r["workload"] == w and r["engine"] == e and not r["error"] for r in record["runs"])}
print(f"{'workload':8} {'engine':16} {'req':>4} {'compile ms':>11} {'accept us':>10} {'fill us':>9} "
      f"{'TTFT ms':>8} {'TPOT us':>8} {'TPOT p99':>9}")
for (w, e), f in table.items():
    print(f"{w:8} {e:16} {f['requests']:4} {f['compile_ms']:11.2f} {f['accept_us']:10.1f} {f['fill_us']:9.1f} "
          f"{f['first_ms']:8.2f} {f['step_us']:8.1f} {f['step_p99']:9.1f}")

# %% [markdown]
# ## 1. Fig. 6: the overhead's three parts
#
# WGrammar's Fig. 6 (Outline-Generation, against XGrammar 0.1.18): compilation 175x faster,
# state tracking 7–8x, mask creation about 2x. The bars below are the same parts for every engine
# and workload (log scale).

# %%
fig, axes = plt.subplots(1, 3, figsize=(13, 4))
for ax, (key, title) in zip(axes, (("compile_ms", "compile or instantiate (ms)"), ("accept_us", "accept (µs/token)"),
                                   ("fill_us", "fill (µs/token)"))):
    for k, engine in enumerate(ENGINES):
        values = [table.get((w, engine), {}).get(key, np.nan) for w in WORKLOADS]
        ax.bar(np.arange(3) + (k - 3) * 0.12, values, 0.12, label=engine)
    ax.set_xticks(np.arange(3), WORKLOADS)
    ax.set_yscale("log")
    ax.set_title(title, fontsize=10)
axes[0].legend(fontsize=7)
plt.tight_layout()
plt.show()
for w in WORKLOADS:
    wg, pda = table.get((w, "wgrammar")), table.get((w, "pda"))
    if wg and pda:
        print(f"{w:8} pushdown automaton / WGrammar: compile {pda['compile_ms'] / wg['compile_ms']:.0f}x, "
              f"accept {pda['accept_us'] / wg['accept_us']:.1f}x, fill {pda['fill_us'] / wg['fill_us']:.1f}x")

# %% [markdown]
# ## 2. Table 1's components beside the paper's overheads
#
# The paper's numbers are end-to-end overheads in vLLM on an A100 (ms); ours are the CPU
# components alone, so the ratios are what to compare: the paper's XGrammar 0.1.18 over
# WGrammar against our pushdown automaton over WGrammar, time to first mask and per token.

# %%
print(f"{'workload':8} {'engine':16} {'ours: pda / engine (TTFT, TPOT)':>32} {'paper: XGrammar 0.1.18 / engine':>32}")
for w in WORKLOADS:
    pda = table.get((w, "pda"))
    for e in ("wgrammar", "wgrammar-online"):
        f, paper = table.get((w, e)), PAPER[w].get(e)
        ours = f"{pda['first_ms'] / f['first_ms']:.0f}x, {pda['step_us'] / f['step_us']:.2f}x" if f and pda else "-"
        theirs = f"{PAPER[w]['xgrammar'][0] / paper[0]:.0f}x, {PAPER[w]['xgrammar'][1] / paper[1]:.2f}x"
        print(f"{w:8} {e:16} {ours:>32} {theirs:>32}")

# %% [markdown]
# ## 3. The global cache as requests accumulate

# %%
plt.figure(figsize=(6, 3))
for w in WORKLOADS:
    runs = [r for r in record["runs"] if r["workload"] == w and r["engine"] == "wgrammar" and not r["error"]]
    hits, asked = np.cumsum([r["hits"] for r in runs]), np.cumsum([r["hits"] + r["misses"] for r in runs])
    plt.plot(np.arange(1, len(runs) + 1), hits / np.maximum(asked, 1), label=w)
plt.xlabel("requests so far")
plt.ylabel("hit rate (cumulative)")
plt.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 4. The price of token-level semantics
#
# WGrammar reads one tokenization of a text: each literal as tokenized in the template, free text
# in whole tokens of its class. The canonical tokenization (what a model trained on the tokenizer
# emits) is another, and the program refuses it.

# %%
for w, p in record["price"].items():
    inside = p["instances"] - len(p["outside"])
    print(f"{w:8} {p['instances']} instances, {len(p['outside'])} outside the factory, "
          f"{len(p['wg_untokenizable'])} not writable as WGrammar tokens; canonical tokenizations taken: "
          f"{p['canonical_taken']} of {inside}; WGrammar tokens / canonical {np.mean(p['token_ratio']):.3f}; "
          f"online path covers {p['online_covered']}")

# %% [markdown]
# ## 5. A live check on a small part
#
# The Outline-Generation template: over qwen3, a request's program against Earley over its
# lowering along a section's head; over a small vocabulary, the same against the brute-force
# oracle (which reads whole tokens through its marks) at every step of a section.

# %%
TEMPLATE = 'document ::= $sections\nsection ::= "<sec>" $id ": " [^<]* "<pad>" [^<]* "</sec>\\n"\n'
request = {"structure": "document", "args": {"sections": [{"structure": "section", "args": {"id": "s_1"}}]}}


def check(info, tokens, oracle: bool):
    factory = Factory.from_text(TEMPLATE, info)
    sets = TokenSets.for_vocabulary(info)
    ir = lower_to_ir(factory.instantiate(request), sets)
    ops = OperatorMatcher(factory.compile(request))
    earley = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(xgr.Grammar.from_ir(ir)))
    recognizer, prefix, marks = Recognizer(ir), b"", {}
    vocab = [info.decoded_vocab[k] for k in range(info.vocab_size)] if oracle else None
    for t in tokens:
        want = ops.compute_bool_mask()
        assert (earley.compute_bool_mask() == want).all()
        if oracle:
            assert np.array_equal(want, brute_force_mask(recognizer, prefix, vocab, stop_token_ids=info.stop_token_ids,
                                                         special_token_ids=info.special_token_ids, prefix_marks=marks))
        marks[len(prefix)] = (t, len(info.decoded_vocab[t]))
        prefix += info.decoded_vocab[t]
        assert ops.accept_token(t) and earley.accept_token(t)
    return prefix, ops.is_completed() and earley.is_completed()


qwen3 = xgr.TokenizerInfo.from_quicktok("qwen3", vocab_size=151936)
qsets = TokenSets.for_vocabulary(qwen3)
head = [t for literal in ("<sec>", "s_1", ": ", "Scope") for t in qsets.literal(literal)]
print("qwen3, Earley's masks along", check(qwen3, head, oracle=False))
small = xgr.TokenizerInfo(["<sec>", "<pad>", "</sec>\n", "s_1", ": ", "Scope", " of", "<", "a<", "x", "</s>"],
                          stop_token_ids=[10])
print("small vocabulary, Earley's and the oracle's masks along", check(small, [0, 3, 4, 5, 6, 1, 9, 2], oracle=True))

# %% [markdown]
# Actual code: `xg2ref.tools.bench.wgrammar.bench_wgrammar`, `xg2ref.tools.bench.wgrammar_workloads`
# (the three workloads, `wg_tokenize`), `xg2ref.tools.bench.wgrammar_report` (tables and figure),
# `xg2ref.baselines.wgrammar`; specs/10-templates-and-operators.md.
