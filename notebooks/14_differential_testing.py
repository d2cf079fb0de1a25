# %% [markdown]
# # 14 — Differential testing against xgrammar
#
# **For engine engineers: xg2ref as the oracle beside a production engine.**
#
# xg2ref computes exact masks, and below it sits a brute-force oracle that shares no code with
# the engine (`xg2ref.oracle`: an independent recognizer asked about one token at a time).
# `xg2ref diff FILE... --against ENGINE` puts a user's own grammars, schemas, regexes or
# structural tags through the same questions in xg2ref, the oracle and another engine
# (xgrammar 0.2.8 here; also llguidance and outlines-core):
#
# - *string verdicts*: sentences the oracle generates from the grammar, and mutations of them,
#   asked byte by byte (is this a viable prefix? a complete sentence?);
# - *token traces*: sentences tokenized and replayed, with the engines' full masks compared at
#   every step;
# - every difference between two engines is put to the oracle, which decides who is right;
# - each disagreement is then *shrunk* (the input by delta debugging, then the case: a schema's
#   keywords, a grammar's rules) to a smaller case that still disagrees, and *classed*: some
#   differences are deliberate and known (xgrammar's string escapes, its refusal of `-0`, ...).
#
# This notebook runs it on one JSON schema, reads the report, replays the smallest reproducer,
# and asks `xg2ref explain` why a token is allowed.

# %%
import json
import os
import shlex
import shutil
import tempfile
import warnings

import xg2ref as xgr
from xg2ref.oracle import brute_force_mask
from xg2ref.views import runtime as rt

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm's notice about Jupyter widgets

# %% [markdown]
# ## 1. One user file, one vocabulary, one run
#
# The schema: an object with a bounded integer and a short string. The vocabulary: twenty
# pieces that can spell its documents (a JSON list of token strings; a real run would name
# `llama3` or a `tokenizer.json`). `rt.run_cli` runs the command in this process
# (`xg2ref.tools.cli.main`) and returns its exit status and output; a shell runs the same line.

# %%
workdir = tempfile.mkdtemp(prefix="xg2ref-diff-")
schema = {"type": "object",
          "properties": {"n": {"type": "integer", "minimum": -5, "maximum": 5}, "s": {"type": "string", "maxLength": 3}},
          "required": ["n", "s"], "additionalProperties": False}
pieces = ["{", "}", '"', ":", ",", " ", "-", "0", "1", "5", "9", "-0", "n", "s", "a", "\\", "\\n", '\\"',
          '"n": ', '"s": ']
with open(os.path.join(workdir, "user.json"), "w", encoding="utf-8") as f:
    json.dump(schema, f)
with open(os.path.join(workdir, "vocab.json"), "w", encoding="utf-8") as f:
    json.dump(pieces, f)

command = ["diff", "user.json", "--against", "xgrammar", "--vocab", "vocab.json", "--quick", "--jobs", "1",
           "--no-progress", "--report", "report.json", "--shrink-seconds", "3"]
print("$ xg2ref " + " ".join(shlex.quote(c) for c in command))
run = rt.run_cli(command, cwd=workdir)
print(run["stdout"])
print("exit status", run["exit"])

# %% [markdown]
# The table counts the questions: verdicts compared with the oracle and with xgrammar, trace
# steps, mask ids. `xg2ref vs oracle: 0` is the line that must hold (xg2ref is exact); exit
# status 0 says so. xgrammar differs on a few mask ids; each reproducer names the step and the
# token, and who said what.
#
# ## 2. Reading the report
#
# `--report` writes every disagreement with the oracle as JSON, one entry per engine that
# answered otherwise:

# %%
with open(os.path.join(workdir, "report.json"), encoding="utf-8") as f:
    report = json.load(f)
print("report keys:", sorted(report))
print(f"{'engine':<9}{'kind':<8}{'question':<9}{'input':<22}{'token':<8}{'oracle':<8}{'xg2ref':<8}{'engine':<8}by design")
for d in report["disagreements"]:
    token = bytes.fromhex(d["token_hex"]).decode() if d["token_hex"] else ""
    print(f"{d['engine']:<9}{d['kind']:<8}{d['question']:<9}{bytes.fromhex(d['input_hex']).decode()!r:<22}"
          f"{token!r:<8}{d['oracle']!s:<8}{d['xg2ref']!s:<8}{d['engine_says']!s:<8}{d['by_design']}")
first = next(d for d in report["disagreements"] if d.get("shrunk"))
print(json.dumps({k: v for k, v in first.items() if k != "shrunk"}, indent=1))

# %% [markdown]
# Each entry: the case and engine; `kind` (a string `verdict`, or a token's place in a `mask`)
# and the `question`; the bytes before the question (`input_hex`) and the token asked about;
# the answers of the oracle, xg2ref and the engine; `by_design`, the class of a known
# deliberate difference, or null.
#
# - The backslash inside the string is allowed by the oracle and xg2ref and refused by
#   xgrammar: xgrammar takes no escapes in a string with `maxLength` (and takes raw control
#   characters instead). It is classed `escapes`, specs/05's difference 3.
# - The token `-0` after `"n": ` is refused by xgrammar. `-0` is the number 0 and lies within
#   `[-5, 5]`; xgrammar 0.2.8 refuses it (specs/05's difference 9). These entries are left
#   unclassified: the class rule for `-0` asks for a numeric bound, and the shrunk case below
#   has none, so a person reads them.
#
# The `shrunk` part of an entry holds the smallest case and question that still disagree:

# %%
print(json.dumps({k: first["shrunk"][k] for k in ("class", "source", "question", "input_hex", "token_hex", "oracle",
                                                  "engine_says", "by_design", "replay")}, indent=1))

# %% [markdown]
# Shrinking removed the bounds, `required`, the string member and even `"type": "object"`: the
# smallest schema on which xgrammar still refuses `-0` is `{"properties": {"n": {"type": "integer"}}}`.
#
# ## 3. Replaying the reproducer
#
# The `replay` line is an `xg2ref replay` command over files written beside the report
# (`report.json.cases/`): the shrunk schema and the token log of the question. It asks xg2ref,
# the oracle and xgrammar at every step of the log:

# %%
replay_line = first["shrunk"]["replay"]
print("$", replay_line)
replayed = rt.run_cli(shlex.split(replay_line)[1:], cwd=workdir)
print(replayed["stdout"])
print("exit status", replayed["exit"])

# %% [markdown]
# Two differences show up on the shrunk schema. At step 5 xgrammar refuses `-0`, the one we
# came for. At step 0 it also differs on eight ids: with no `"type"`, JSON Schema allows any
# value (a string, a number, ...), while xgrammar reads a schema with `properties` as an object
# (specs/05's difference 2). A shrunk case can show more than the difference it was shrunk for:
# the first step where an engine leaves the oracle is reported, and the refusal asked about.
#
# ## 4. Why is a token allowed? `xg2ref explain`
#
# `xg2ref explain` answers for one prefix and one continuation (text, or a token of a
# vocabulary): allowed (exit 0) or rejected (exit 1), the Earley items alive at that point in
# the grammar's own rule names, and what each expected. (An item is printed as the shortest path
# of symbols into its FSM state, a dot, and what may follow; the path is not always the bytes
# read, so `-0` appears as `[0-5]`.)

# %%
for args in (["--prefix", '{"n": -', "--text", "0"],
             ["--prefix", '{"n": -', "--text", "6"],
             ["--prefix", '{"n": 0, "s": "', "--token", str(pieces.index("\\")), "--vocab", "vocab.json"]):
    line = ["explain", "user.json", "--kind", "json_schema"] + args
    print("$ xg2ref " + " ".join(shlex.quote(c) for c in line))
    answer = rt.run_cli(line, cwd=workdir)
    print(answer["stdout"], f"(exit status {answer['exit']})\n")

# %% [markdown]
# ## 5. Known deliberate differences
#
# `xg2ref/tools/diff/classes.py` names the differences that are deliberate, so that a report counts
# them apart and `--strict` (exit 1 on any engine's disagreement) does not fail on them:
#
# | engine | class | the engine ... |
# |---|---|---|
# | xgrammar | escapes (specs/05 §3) | refuses escapes in a bounded string, takes raw control characters |
# | xgrammar | surrogates (specs/05 §8) | takes `\u` escapes of lone surrogates |
# | xgrammar | dead ends (specs/01 §4) | keeps tokens that lead into an unproductive rule or an empty class |
# | xgrammar | -0 (specs/05 §9) | refuses `-0` under a numeric bound |
# | llguidance | forced text, greedy lexemes, U+007F | lexes greedily; refuses a prefix of text it would force |
# | outlines | recursion depth, whitespace, string characters, exponent sign | bounds recursion; other lexical choices |
# | llguidance, outlines | property order, additional properties | with `any_order`, or additional members |
#
# Everything else is a finding: a bug in the engine, in its front end, or in xg2ref (then
# `xg2ref vs oracle` is not 0 and the exit status is 1).
#
# ## 6. Check against the brute-force oracle
#
# The oracle settles each question by brute force. Here it is asked directly, on the user's
# schema and the twenty-piece vocabulary: after `{"n": ` the token `-0` is allowed (xg2ref
# agrees, xgrammar does not), and xg2ref's mask equals the oracle's at every prefix the report
# names.

# %%
info = xgr.TokenizerInfo(pieces)
vocab = [p.encode() for p in pieces]
compiled = xgr.GrammarCompiler(info).compile_json_schema(schema)
ir = compiled.grammar.ir
want = brute_force_mask(ir, b'{"n": ', vocab)
assert want[pieces.index("-0")]
for d in report["disagreements"]:
    prefix = bytes.fromhex(d["input_hex"])
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string(prefix)
    want = brute_force_mask(ir, prefix, vocab)
    assert (m.compute_bool_mask() == want).all(), prefix
    if d["kind"] == "mask":
        assert want[d["tokens"][0]] == d["oracle"]
    print(f"at {prefix!r}: xg2ref's mask is the oracle's")
shutil.rmtree(workdir)  # the report and its reproducers

# %% [markdown]
# Actual code: `xg2ref.tools.diff.user.run_user_diff`, `xg2ref.tools.fuzz.case.shrink_disagreements`,
# `xg2ref.tools.diff.classes.classify`, `xg2ref.tools.diff.classes.by_design`, `xg2ref.tools.fuzz.case.CaseChecker.finding`
# (shrinking), `xg2ref.tools.replay.replay`, `xg2ref.tools.explain`.
