# %% [markdown]
# # 21 — WGrammar: templates, token-level operators and a global mask cache (WGrammar §1, §3)
#
# WGrammar (seed 002) splits a format into a **static template**, compiled once, and **dynamic
# arguments**, given per request. Its engine reads whole tokens with four operators (Write,
# Wait, IfElse, DoWhile) whose state is one position, no stack; and since a position's mask
# depends only on its token sets, masks are cached **globally**, across requests. This notebook
# builds each piece on a small vocabulary, checks the engine against Earley and the brute-force
# oracle, and sets it beside XGrammar-2's own answer to the same problem: byte-level grammars
# with a cross-grammar cache. The operators' semantics are a reconstruction from WGrammar's
# prose (specs/10-templates-and-operators.md marks where).

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

import xg2ref as xgr
from xg2ref.baselines.wgrammar import (DoWhile, End, Factory, GlobalMaskCache, OperatorMatcher, Sequence, TokenSets,
                                       Wait, Write, compile_program, compile_regex, coverage, lower_to_ir)
from xg2ref.oracle import Recognizer, brute_force_mask

VOCAB = ["<s>", "<e>", "1", "2", "12", ".", "1.", "a", "b", "ab", " ", "a b", "</s>", "", ":", "x"]
info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[12])
sets = TokenSets.for_vocabulary(info)  # the vocabulary's one interner (set ids are the cache's keys)


def shown(mask):
    return [VOCAB[t] for t in np.flatnonzero(mask)]


# %% [markdown]
# ## 1. Token sets and operators
#
# Sets hold *regular* tokens (no stop, no special token). A character class becomes the tokens
# made only of its characters; a literal its greedy tokenization.

# %%
digits, dot, letters = sets.chars("[0-9]"), sets.ids(5), sets.chars("[a-z ]")
print("digits:", [VOCAB[t] for t in sets.members(digits)], " letters:", [VOCAB[t] for t in sets.members(letters)])
print("literal '12.':", [VOCAB[t] for t in sets.literal("12.")])

# <s>, a number (a digit token, then a period and a digit token any number of times), text up to <e>
program = Sequence((Write((0,)), DoWhile(Wait(digits, allow=sets.ids()), dot),
                    Wait(sets.ids(1), allow=letters), End()))
compiled = compile_program(program, sets)
print(compiled.num_states, "positions; final:", compiled.final.tolist())

# %% [markdown]
# The machine has one state per position. Drawn: each edge labelled with its token set.

# %%
fig, ax = plt.subplots(figsize=(8, 2.6))
xs = np.arange(compiled.num_states) * 2.0
for s in range(compiled.num_states):
    ax.add_patch(plt.Circle((xs[s], 0), 0.35, fill=False, lw=2 if compiled.final[s] else 1))
    ax.text(xs[s], 0, str(s), ha="center", va="center")
    for e in range(compiled.edge_start[s], compiled.edge_start[s + 1]):
        t = compiled.edge_target[e]
        label = "{" + ",".join(VOCAB[k] for k in sets.members(int(compiled.edge_set[e]))) + "}"
        bend = 0.9 if t <= s else 0.0
        ax.annotate("", (xs[t], 0.35 if t <= s else 0), (xs[s], 0.35 if t <= s else 0),
                    arrowprops=dict(arrowstyle="->", connectionstyle=f"arc3,rad={-bend}"))
        ax.text((xs[s] + xs[t]) / 2, 0.55 + (0.6 if t <= s else 0), label, ha="center", fontsize=8)
ax.set_xlim(-1, xs[-1] + 1)
ax.set_ylim(-1, 2)
ax.axis("off")
plt.show()

# %% [markdown]
# ## 2. The executor against Earley and the oracle
#
# `lower_to_ir` writes the same language with xg2ref's grammar IR (Token sets, written from the
# operators, not from the machine). Earley over it and the brute-force oracle must give the
# executor's masks at every step.

# %%
ir = lower_to_ir(program, sets)
ops = OperatorMatcher(compiled)
earley = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(xgr.Grammar.from_ir(ir)))
recognizer, read = Recognizer(ir), []


def oracle_mask():
    """The oracle's mask after the tokens in `read` (each marked as read whole, at its position)."""
    prefix, marks = b"", {}
    for t in read:
        marks[len(prefix)] = (t, len(VOCAB[t]))
        prefix += VOCAB[t].encode()
    return brute_force_mask(recognizer, prefix, [v.encode() for v in VOCAB], stop_token_ids=[12],
                            special_token_ids=[13], prefix_marks=marks)


for t in [0, 2, 5, 3, 7, 10, 8, 1, 12]:
    want = oracle_mask()
    assert (ops.compute_bool_mask() == want).all() and (earley.compute_bool_mask() == want).all()
    print(f"{VOCAB[t]!r:6} from {shown(want)}")
    assert ops.accept_token(t) and earley.accept_token(t)
    read.append(t)
assert ops.is_terminated()

# %% [markdown]
# Accept is a scan of the current position's edges, one bit test each: time per token does not
# grow with the output. Rollback is the position n steps back.

# %%
ops.rollback(3)
print("after rollback(3):", shown(ops.compute_bool_mask()))

# %% [markdown]
# ## 3. Templates and requests
#
# The template is EBNF with `$name` parameters, compiled once into a factory (literals tokenized,
# each rule an operator tree). A request names a structure and gives its arguments; instantiating
# it is one pass over the structure and the request.

# %%
template = '''doc ::= $items
item ::= "<s>" $key ":" [a-z ]* "<e>"
'''
factory = Factory.from_text(template, info)
print({name: s.params for name, s in factory.structures.items()})
request = {"structure": "doc", "args": {"items": [{"structure": "item", "args": {"key": {"one_of": ["1", "12", "x"]}}},
                                                  {"structure": "item", "args": {"key": "2"}}]}}
start = time.perf_counter()
m = OperatorMatcher(factory.compile(request))
print(f"instantiated and compiled in {(time.perf_counter() - start) * 1e3:.2f} ms")
print("the same constraint for a byte-level engine:\n" + str(xgr.Grammar.from_ir(factory.written_out(request))))
for t in [0, 2]:
    print(f"{VOCAB[t]!r:6} from {shown(m.compute_bool_mask())}")
    assert m.accept_token(t)
print("then:", shown(m.compute_bool_mask()), "('12' is a token of its own, so '1' ends the key)")

# %% [markdown]
# ## 4. The global cache
#
# A position's mask is keyed by its edges' set ids, and set ids are interned by content for the
# whole vocabulary: every request that reaches the same sets hits. The hit rate climbs as
# requests accumulate.

# %%
cache = GlobalMaskCache.for_vocabulary(sets)
cache.clear()
rates, rng = [], np.random.default_rng(0)
for n in range(20):
    keys = [str(k) for k in rng.choice(["1", "2", "12", "x"], size=rng.integers(1, 4), replace=False)]
    req = {"structure": "doc", "args": {"items": [{"structure": "item", "args": {"key": {"one_of": keys}}}]}}
    m = OperatorMatcher(factory.compile(req))
    for t in [0, int(sets.literal(keys[0])[0])]:
        m.compute_bool_mask()
        m.accept_token(t)
    rates.append(cache.hit_rate)
plt.figure(figsize=(5, 2.5))
plt.plot(range(1, 21), rates, marker="o")
plt.xlabel("requests so far")
plt.ylabel("global cache hit rate")
plt.tight_layout()
plt.show()
print(cache.stats())

# %% [markdown]
# ## 5. The price of token-level semantics, and the online path
#
# Operators read tokens, so a text has one tokenization the program takes: the literal's own,
# and free text made of whole tokens of the class. A canonical tokenization that merges a
# literal with what follows it (`a b` as one token where the template reads `a`, ` `, `b`, or
# `1.` for `1` then `.`) is refused. WGrammar's online path translates a regex at request time;
# its loops end at the first token that what follows can read (non-greedy), which loses some
# matches.

# %%
m = OperatorMatcher(compiled)
assert m.accept_token(0)
print("after <s>, '1.' as one token:", m.accept_token(6), "  '1' then '.':", m.accept_token(2) and m.accept_token(5))
online = compile_regex("a*a(b|1)", info)
ids = {v: i for i, v in enumerate(VOCAB)}
print("a a b taken:", coverage(online, [[ids["a"], ids["a"], ids["b"]]]), "  a b taken:",
      coverage(online, [[ids["a"], ids["b"]]]))

# %% [markdown]
# ## 6. Beside XGrammar-2's linking
#
# XGrammar-2 answers the same problem at the byte level: each request's grammar is compiled, and
# what repeats across requests (rule machines, mask-cache entries) is found again by the
# cross-grammar cache. WGrammar's instantiation does less work per request (no grammar, no
# automaton: a tree copied with its arguments), so it wins the time to first mask; XGrammar-2
# keeps byte semantics (every tokenization of a valid text is allowed) and any grammar. Here the
# same requests both ways, on this small vocabulary:

# %%
compiler = xgr.GrammarCompiler(info)
times = {"WGrammar instantiate + compile": [], "xg2ref compile (one compiler, its caches)": []}
for keys in (["1"], ["2", "x"], ["12"], ["1", "2"]):
    req = {"structure": "doc", "args": {"items": [{"structure": "item", "args": {"key": {"one_of": keys}}}]}}
    a = time.perf_counter()
    factory.compile(req)
    b = time.perf_counter()
    compiler.compile_grammar(xgr.Grammar.from_ir(factory.written_out(req)))
    c = time.perf_counter()
    times["WGrammar instantiate + compile"].append((b - a) * 1e3)
    times["xg2ref compile (one compiler, its caches)"].append((c - b) * 1e3)
for name, values in times.items():
    print(f"{name:42} {np.round(values, 2)} ms")

# %% [markdown]
# The measured comparison on real vocabularies and the three workloads is notebook 22
# (`xg2ref bench wgrammar`).
#
# Actual code: `xg2ref.baselines.wgrammar.tokensets.TokenSets`, `xg2ref.baselines.wgrammar.operators.compile_program`,
# `xg2ref.baselines.wgrammar.operators.lower_to_ir`, `xg2ref.baselines.wgrammar.templates.Factory`,
# `xg2ref.baselines.wgrammar.cache.GlobalMaskCache`, `xg2ref.baselines.wgrammar.matcher.OperatorMatcher`,
# `xg2ref.baselines.wgrammar.regex_online.compile_regex`; specs/10-templates-and-operators.md.
