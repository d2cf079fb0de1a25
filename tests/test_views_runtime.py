"""xg2ref.views.runtime: each view against the behaviour it reports (XGrammar-2 §3.3-§3.6, §4)."""

import json
import os

import numpy as np
import pytest

import xg2ref as xgr
from xg2ref.oracle import brute_force_mask
from xg2ref.views import runtime as V

VOCAB = ["a", "b", "ab", "!", "]", "}", "a!", "!]", "!}", "!a", "[", "{", "<", "</s>"]
BODY = '[a-z]+ "!" [a-z]* "!"'
TRIPLE = (f'root ::= "[" s "]"\ns ::= {BODY} (= "]")',  # s with lookahead "]"
          f'root ::= "{{" t "}}"\nt ::= {BODY} (= "}}")',  # the same machine, lookahead "}"
          f'root ::= "<" u "]"\nu ::= {BODY} (= "]")')  # the same machine and lookahead as s


def info():
    return xgr.TokenizerInfo(VOCAB, stop_token_ids=[len(VOCAB) - 1])


def test_rule_hashes_are_equal_for_equal_machines_under_other_names():
    compiler = xgr.GrammarCompiler(info())
    # (a lookahead keeps a small rule from being inlined; it is no part of the hash)
    a = compiler.compile_grammar('root ::= "x" num "z"\nnum ::= [0-9]+ "." [0-9]+ (= "z")')
    b = compiler.compile_grammar('root ::= "y" n2 ";"\nn2 ::= [0-9]+ "." [0-9]+ (= ";")')
    ha = {r["rule"]: r for r in V.rule_hashes(a)}
    hb = {r["rule"]: r for r in V.rule_hashes(b)}
    assert ha["num"]["hash"] == hb["n2"]["hash"] and ha["num"]["kind"] == "leaf"
    assert ha["root"]["hash"] != hb["root"]["hash"] and ha["root"]["kind"] == "acyclic"
    assert sorted(ha["num"]["canonical"]) == list(range(ha["num"]["states"]))
    assert V.same_structure(a, "num", b, "n2") and not V.same_structure(a, "root", b, "root")


def test_cycles_get_distinct_hashes_and_the_json_grammar_has_unhashed_rules():
    compiler = xgr.GrammarCompiler(info())
    cyc = compiler.compile_grammar('root ::= a\na ::= "(" b ")" | "x"\nb ::= "[" a "]" | "y"')
    kinds = {r["rule"]: (r["kind"], r["hash"]) for r in V.rule_hashes(cyc)}
    assert kinds["a"][0] == kinds["b"][0] == "cycle" and kinds["a"][1] != kinds["b"][1]
    json_kinds = {r["kind"] for r in V.rule_hashes(compiler.compile_builtin_json_grammar())}
    assert "unhashed" in json_kinds


def test_pool_lookups_show_miss_partial_perfect_on_the_designed_triple():
    compiler = xgr.GrammarCompiler(info(), jit=False)
    with V.pool_lookups(compiler) as log:
        compiled = [compiler.compile_grammar(text) for text in TRIPLE]
    body = {g: {r["outcome"] for r in log if r["grammar"] == g and r["rule"] in ("s", "t", "u")} for g in range(3)}
    assert body == {0: {"miss"}, 1: {"partial"}, 2: {"perfect"}}
    for r in log:
        assert 0 <= r["candidates"] <= r["vocab"] and (r["outcome"] != "miss" or r["candidates"] == r["vocab"])
    counters = V.cache_counters(compiler)
    assert counters["perfect"] == sum(r["outcome"] == "perfect" for r in log)
    assert counters["partial"] == sum(r["outcome"] == "partial" for r in log)
    assert counters["misses"] == sum(r["outcome"] in ("miss", "collision") for r in log)
    assert counters["rules_seen"] == 6 and counters["rules_known"] == 2
    # outside the block nothing is recorded, and the grammars' masks are the oracle's
    compiler.compile_grammar('root ::= "(" s ")"\ns ::= [ab]+')
    assert max(r["grammar"] for r in log) == 2
    vocab = [t.encode() for t in VOCAB]
    for text, c in zip(TRIPLE, compiled):
        m = xgr.GrammarMatcher(c)
        assert m.accept_string(text.split('"')[1] + "a!")
        want = brute_force_mask(xgr.Grammar.from_ebnf(text).ir, (text.split('"')[1] + "a!").encode(), vocab,
                                stop_token_ids=[len(VOCAB) - 1])
        assert m.compute_bool_mask().tolist() == want.tolist()


def test_pool_lookups_nest_and_leave_the_pool_as_it_was():
    compiler = xgr.GrammarCompiler(info(), jit=False)
    with V.pool_lookups(compiler) as outer:
        with V.pool_lookups(compiler) as inner:
            compiler.compile_grammar(TRIPLE[0])
        compiler.compile_grammar(TRIPLE[2])
    assert len(inner) > 0 and len(outer) > len(inner)
    assert "view" not in compiler.pool.__dict__  # the class's method again


def test_pool_lookups_needs_a_pool():
    with pytest.raises(ValueError):
        with V.pool_lookups(xgr.GrammarCompiler(info(), cross_grammar_cache=False)):
            pass


def test_jit_builds_entries_on_first_use_and_the_cost_model_ranks_them():
    text = 'root ::= "[" item ("," item)* "]"\nitem ::= [a-z]+'
    vocab = ["[", "]", ",", "a", "ab", "b,", "a]", "</s>"]
    ti = xgr.TokenizerInfo(vocab, stop_token_ids=[7])
    eager = xgr.GrammarCompiler(ti, jit=False).compile_grammar(text)
    jit = xgr.GrammarCompiler(ti, jit_eager_entries=0, background_builds=False).compile_grammar(text)
    assert V.entry_summary(eager)["built"] == V.entry_summary(eager)["classes"]
    assert V.entry_summary(jit)["built"] == 0
    costs = V.entry_costs(jit)
    assert len(costs) == V.entry_summary(jit)["classes"]
    assert [c["cost"] for c in costs] == sorted((c["cost"] for c in costs), reverse=True)
    assert not any(c["built"] for c in costs)
    steps = V.mask_steps(jit, [0, 3, 2, 4, 1])
    assert steps[0]["built"] >= 1 and sum(s["built"] for s in steps) >= 1
    assert steps[-1]["unbuilt"] == V.entry_summary(jit)["classes"] - V.entry_summary(jit)["built"]
    assert [s["allowed"] for s in steps] == [s["allowed"] for s in V.mask_steps(eager, [0, 3, 2, 4, 1])]
    k1 = xgr.GrammarCompiler(ti, jit_eager_entries=1).compile_grammar(text)
    assert V.entry_summary(k1)["built"] == 1
    assert [c["built"] for c in V.entry_costs(k1)][0]  # the costliest class is the one built
    with pytest.raises(ValueError):
        V.mask_steps(jit, [1])  # "]" cannot start


def test_repetition_compression_sizes_zones_and_counts():
    ti = xgr.TokenizerInfo(["a", "b", "ab", "aab", "[", "]", "</s>"], stop_token_ids=[6])
    text = 'root ::= "[" [ab]{2,200} "]"'
    counted = xgr.GrammarCompiler(ti).compile_grammar(text)
    unrolled = xgr.GrammarCompiler(ti, repetition_compression=False).compile_grammar(text)
    size = V.grammar_size(counted)
    assert size["counted"] and size["counted"][0]["min"] == 2 and size["counted"][0]["max"] == 200
    assert size["states"] < 10 < V.grammar_size(unrolled)["states"] and not V.grammar_size(unrolled)["counted"]
    assert V.count_zones(0, 100, 4, [0, 94, 95, 99]) == ["FREE", "FREE", "exact", "exact"]
    assert V.count_zones(50, None, 3, [0, 45, 46, 49, 1000]) == ["NOEXIT", "NOEXIT", "exact", "FREE", "FREE"]
    m = xgr.GrammarMatcher(counted)
    assert m.accept_string("[" + "ab" * 5)
    counts = {item["count"] for item in V.counted_items(m)}
    assert 10 in counts or 9 in counts
    assert all(item["zone"] == "FREE" for item in V.counted_items(m))


def test_run_cli_captures_the_output_and_status():
    ok = V.run_cli(["check", 'root ::= "a"', "a"])
    bad = V.run_cli(["check", 'root ::= "a"', "b"])
    assert ok["exit"] == 0 and "accepted" in ok["stdout"]
    assert bad["exit"] == 1 and "rejected" in bad["stdout"]


def test_sub_vocabulary_and_data_dir():
    ti = V.sub_vocabulary(300)
    assert ti.vocab_size == 301 and list(ti.stop_token_ids) == [300]
    assert ti.decoded_vocab[300] == b"<|eot_id|>" and len({bytes(t) for t in ti.decoded_vocab[:256]}) == 256
    more = V.sub_vocabulary(300, extra=[b"!]", b"ab!}"])
    assert more.decoded_vocab[300:] == [b"!]", b"ab!}", b"<|eot_id|>"] and list(more.stop_token_ids) == [302]
    assert os.path.isdir(os.path.join(V.data_dir(), "bfcl"))


@pytest.mark.jit_only
def test_dynamic_workload_reuse():
    ti = V.sub_vocabulary(300)
    tools = V.load_tools(6)
    static = V.dynamic_workload(ti, "static", 2, 3, tools=tools)
    dynamic = V.dynamic_workload(ti, "dynamic", 2, 3, tools=tools)
    assert static["structure_reuse"] == pytest.approx(2 / 3) and dynamic["structure_reuse"] < 2 / 3
    assert len(static["compile_ms"]) == 3 and static["substructure_reuse"] > 0.5
    if static["xgrammar_compile_ms"] is not None:
        assert len(static["xgrammar_compile_ms"]) == 3


@pytest.mark.jit_only
def test_ablation_checks_every_configuration_against_the_baseline():
    ti = xgr.TokenizerInfo(["a", "b", '"', "ab", 'a"', "</s>"], stop_token_ids=[5])
    out = V.ablation([("s", {"type": "string", "maxLength": 40})], ti, max_tokens=6)
    names = [r["name"] for r in out["rows"]]
    assert names == ["Baseline", "+JIT", "+cross-grammar cache", "+repetition compression"]
    assert len({r["masks"] for r in out["rows"]}) == 1 and out["rows"][0]["masks"] >= 2


@pytest.mark.jit_only
def test_jsonschemabench_views():
    sample = V.jsonschemabench_sample(1, ["Kubernetes", "Glaiveai2K"])
    assert [s[0] for s in sample] == ["Kubernetes", "Glaiveai2K"] and all(isinstance(s[2], dict) for s in sample)
    records = V.jsonschemabench_run(sample, V.sub_vocabulary(300), against_xgrammar=False)
    assert all(r["ours"] and r["theirs"] is None for r in records)
    for r in records:
        assert r["valid"] is (None if not r["finished"] else r["why"] is None)
    rows = V.jsonschemabench_summary(records)
    assert [r["subset"] for r in rows] == ["Glaiveai2K", "Kubernetes", "total"]
    assert rows[-1]["schemas"] == 2 and rows[-1]["compile_rate"] == 1.0 and rows[-1]["xgrammar"] is None


def test_jsonschemabench_records_keep_the_last_line(tmp_path):
    path = tmp_path / "r.jsonl"
    base = {"subset": "Kubernetes", "uid": "x", "theirs": True, "timed_out": False, "finished": True}
    path.write_text("\n".join([json.dumps({**base, "ours": False, "valid": None}),
                               json.dumps({**base, "ours": True, "valid": True}), '{"cut']) + "\n")
    records = V.jsonschemabench_records(str(path))
    assert len(records) == 1 and records[0]["ours"] is True
    total = V.jsonschemabench_summary(records)[-1]
    assert total["compile_rate"] == 1.0 and total["validity"] == 1.0 and total["xgrammar"] == 1


def test_encode_json_mode_eval_and_random_walk_against_the_oracle():
    ti = V.sub_vocabulary(300)
    item = V.json_mode_eval(1)[0]
    assert set(item) == {"id", "schema", "completion"} and json.loads(item["completion"])
    ids = V.encode(ti, item["completion"])
    assert b"".join(ti.decoded_vocab[t] for t in ids) == item["completion"].encode()
    with pytest.raises(ValueError):
        V.encode(xgr.TokenizerInfo(["a"]), "ab")
    compiled = xgr.GrammarCompiler(ti).compile_json_schema({"type": "array", "items": {"type": "integer"}},
                                                             any_whitespace=False)
    steps = V.random_walk(compiled, 4, seed=3)
    assert len(steps) == 5 and steps[-1]["token"] is None
    vocab = [bytes(t) for t in ti.decoded_vocab]
    for a, b in zip(steps, steps[1:]):
        assert b["prefix"] == a["prefix"] + vocab[a["token"]] and a["mask"][a["token"]]
    for step in steps:
        want = brute_force_mask(compiled.grammar.ir, step["prefix"], vocab, stop_token_ids=ti.stop_token_ids)
        assert step["mask"].tolist() == want.tolist()


def test_jsonschemabench_sample_bounds_the_size():
    small = V.jsonschemabench_sample(None, ["Kubernetes"], max_chars=400)
    assert small and all(len(json.dumps(s)) <= 400 for _, _, s in small)
    assert len(V.jsonschemabench_sample(None, ["Kubernetes"])) == 20
    assert os.path.isfile(os.path.join(V.benchmarks_dir(), "dynamic", "figure6.json"))
