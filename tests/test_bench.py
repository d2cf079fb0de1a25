"""`xg2ref bench mask`: correctness is checked before timings are reported."""

import json
import re

import pytest

import xg2ref as xgr
from xg2ref.tools.bench.mask import Row, bench_mask, format_table

# compiled only: the benches' checks and tables are what is tested here; the kernels' Python
# reading is checked by the kernel and property tests of the plain-Python run
pytestmark = pytest.mark.jit_only


def test_table_has_ratios():
    row = Row("x", tokens=2, ours_us=[2.0, 4.0], theirs_us=[1.0, 2.0], ours_compile_ms=3.0, theirs_compile_ms=1.0,
              ours_memory=2048, theirs_memory=1024, counts=(1, 2, 3))
    text = format_table([row])
    assert "x " in text and "3.0" in text and "2.00" in text and "1 / 2 / 3" in text


@pytest.mark.jit_only
@pytest.mark.xgrammar
def test_bench_runs_on_suite_cases():
    pytest.importorskip("xgrammar")
    lines = []
    status = bench_mask(cases=["recursion", "classes"], out=lines.append)
    text = "\n".join(lines)
    assert status == 0, text
    assert "recursion" in text and "classes" in text
    assert "documented xgrammar inexactness" in text  # the `[]` alternative of `classes`


def test_missing_data_is_a_clear_error(tmp_path):
    from xg2ref.tools.bench.mask import json_mode_eval_texts

    with pytest.raises(FileNotFoundError, match="--data"):
        json_mode_eval_texts(str(tmp_path))


# ---- bench jsonschemabench -------------------------------------------------------------------


def _bench_data(tmp_path, schemas):
    import gzip
    import json

    folder = tmp_path / "jsonschemabench"
    folder.mkdir()
    with gzip.open(folder / "Glaiveai2K.jsonl.gz", "wt", encoding="utf-8") as f:
        for uid, schema in schemas.items():
            f.write(json.dumps({"unique_id": uid, "json_schema": json.dumps(schema)}) + "\n")
    return str(tmp_path)


def test_validation_error_names_the_problem():
    from xg2ref.tools.bench.jsonschemabench import validation_error

    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}, "required": ["n"]}
    assert validation_error(schema, b'{"n": 2}') is None
    assert "4" in validation_error(schema, b'{"n": 4}')
    assert validation_error(schema, b'{"n": ') is not None  # not JSON at all
    # a number beyond float range under multipleOf is read exactly instead of crashing
    assert validation_error({"type": "number", "multipleOf": 0.5}, b"1e400") is None
    assert "multiple" in validation_error({"type": "number", "multipleOf": 3}, b"1e400")


def test_summary_counts_each_record_once():
    from xg2ref.tools.bench.jsonschemabench import summarize

    base = {"subset": "A", "theirs": True, "ours": True, "timed_out": False, "failure": None, "finished": True,
            "valid": True, "text": None, "why": None, "seconds": 1.0}
    records = [dict(base, uid="1"), dict(base, uid="2", valid=False, text="{}", why="bad"),
               dict(base, uid="3", ours=False, finished=False, valid=None, failure="ValueError: x"),
               dict(base, uid="4", subset="B", theirs=False, ours=False, timed_out=True, finished=False, valid=None)]
    a, b = summarize(records, ["A", "B"])
    assert (a.schemas, a.theirs, a.ours, a.finished, a.valid, a.invalid) == (3, 3, 2, 2, 1, 1)
    assert a.failures == {"ValueError: x": 1} and a.bad_outputs == [("2", "{}", "bad")]
    assert (b.schemas, b.theirs, b.ours, b.timed_out) == (1, 0, 0, 1)


@pytest.mark.jit_only
def test_jsonschemabench_records_and_resumes(tmp_path, monkeypatch):
    import json

    from xg2ref.tools.bench import jsonschemabench as bj

    schemas = {"small": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
               "enum": {"enum": ["red", "green"]},
               "bad": {"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}, "required": ["x"]}}
    data = _bench_data(tmp_path, schemas)
    results = tmp_path / "results.jsonl"
    lines = []
    assert bj.bench_jsonschemabench(data, subsets=["Glaiveai2K"], out=lines.append, progress=False,
                                    results=str(results)) == 0
    records = {r["uid"]: r for r in map(json.loads, results.read_text().splitlines())}
    assert set(records) == set(schemas)
    assert records["small"]["ours"] and records["small"]["finished"] and records["small"]["valid"]
    assert records["enum"]["valid"] and not records["bad"]["ours"] and "InvalidJSONError" in records["bad"]["failure"]
    table = "\n".join(lines)
    assert "Glaiveai2K" in table and "compile failures by class" in table
    assert all(r["peak_mib"] > 0 for r in records.values())
    # the per-schema peak memory is traced during the run only: tracing left on slows every
    # allocation of the process after it
    import tracemalloc

    assert not tracemalloc.is_tracing()

    def refuse(*args):
        raise AssertionError("a schema with a record was run again")

    with open(results, "a", encoding="utf-8") as f:
        f.write('{"subset": "Glaiveai2K", "uid": "cut sh')  # a line a stopped run left half written
    monkeypatch.setattr(bj._Worker, "run", refuse)
    again = []
    assert bj.bench_jsonschemabench(data, subsets=["Glaiveai2K"], out=again.append, progress=False,
                                    results=str(results)) == 0
    assert again == [line for line in lines if not line.startswith("xgrammar not installed")]
    # --rerun failures: only the recorded compile failure runs again, and its new record counts
    ran = []

    def fixed(self, subset, uid, schema):
        ran.append(uid)
        return dict(records[uid], ours=True, failure=None, finished=True, valid=True)

    monkeypatch.setattr(bj._Worker, "run", fixed)
    third = []
    assert bj.bench_jsonschemabench(data, subsets=["Glaiveai2K"], out=third.append, progress=False,
                                    results=str(results), rerun="failures") == 0
    assert ran == ["bad"] and "compile failures by class" not in "\n".join(third)
    final = {}
    for line in results.read_text().splitlines():
        if line.startswith("{") and line.endswith("}"):
            final[json.loads(line)["uid"]] = json.loads(line)
    assert final["bad"]["ours"] and final["bad"]["valid"]


def test_multiple_of_is_checked_exactly_at_any_size():
    from xg2ref.tools.bench.jsonschemabench import is_exact_multiple, validation_error

    assert validation_error({"type": "number", "multipleOf": 0.01}, b"8752344473888e30083039") is None
    assert validation_error({"type": "number", "multipleOf": 3}, b"3e400") is None
    assert "multiple" in validation_error({"type": "number", "multipleOf": 0.5}, b"1.25")
    assert is_exact_multiple(0.3, 0.1) and not is_exact_multiple(1, 0.3) and is_exact_multiple(0, 7)
    assert not is_exact_multiple("1e-900", 1) and is_exact_multiple("-12e-1", "0.4")


# ---- bench dynamic and bench ablation (XGrammar-2 Table 1, Figure 6, Table 4) ------------------


@pytest.mark.jit_only
@pytest.mark.xgrammar
def test_dynamic_bench_reports_reuse_and_writes_the_figure(tmp_path):
    pytest.importorskip("xgrammar")
    pytest.importorskip("matplotlib")
    import json

    from xg2ref.tools.bench.dynamic import bench_dynamic

    lines = []
    plot = tmp_path / "fig6.png"
    assert bench_dynamic("../shared/data", requests=3, tool_counts=(2,), plot=str(plot), out=lines.append) == 0
    text = "\n".join(lines)
    assert "static" in text and "dynamic" in text
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = {r["workload"]: r for r in json.loads((tmp_path / "fig6.json").read_text())["rows"]}
    # static: the same tools every time, so the grammar is compiled once and found twice
    assert rows["static"]["structure_reuse"] == pytest.approx(2 / 3)
    assert rows["static"]["substructure_reuse"] >= 2 / 3 - 1e-9
    assert rows["dynamic"]["structure_reuse"] <= rows["static"]["structure_reuse"]


def test_dynamic_workloads_draw_their_tools():
    from xg2ref.tools.bench.dynamic import request_tools

    pool = [{"function": {"name": f"t{i}"}} for i in range(10)]
    static = request_tools(pool, "static", 3, 4)
    dynamic = request_tools(pool, "dynamic", 3, 4)
    assert all(s == static[0] for s in static) and len(static[0]) == 3
    assert len({tuple(t["function"]["name"] for t in d) for d in dynamic}) > 1
    assert request_tools(pool, "dynamic", 3, 4) == dynamic  # seeded


@pytest.mark.jit_only
def test_ablation_bench_checks_every_configuration_against_the_baseline(tmp_path):
    from xg2ref.tools.bench.ablation import CONFIGS, bench_ablation

    schemas = {"s": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 200},
                                                      "tags": {"type": "array", "items": {"type": "integer"},
                                                               "maxItems": 150}}, "required": ["name"]},
               "t": {"type": "string", "minLength": 2, "maxLength": 300}}
    data = _bench_data(tmp_path, schemas)
    lines = []
    # no time limit: the test checks the configurations, and a cold, loaded machine can take more
    # than the bench's 60 s on schema "t" in one of them (it is then left out, by design)
    assert bench_ablation(data, sample=2, subsets=["Glaiveai2K"], max_tokens=12, timeout=None,
                          out=lines.append) == 0
    table = "\n".join(lines)
    for name, _ in CONFIGS:
        assert name in table
    assert "2 schemas" in table and "0 left out" in table


def test_ablation_table_gives_changes_against_the_row_above():
    from xg2ref.tools.bench.ablation import AblationRow, format_table

    rows = [AblationRow("Baseline", 100.0, 10.0, 3, 30), AblationRow("+JIT", 10.0, 40.0, 3, 30)]
    text = format_table(rows)
    assert "(10.0x ↓)" in text and "(4.0x ↑)" in text


@pytest.mark.jit_only
@pytest.mark.xgrammar
def test_targets_bench_reports_every_row_on_the_default_path():
    pytest.importorskip("xgrammar")
    from xg2ref.tools.bench.targets import bench_targets

    lines = []
    assert bench_targets("../shared/data", requests=2, items=2, cliff_tokens=120, forward_ms=0.5, chain_rules=40,
                         out=lines.append) == 0
    text = "\n".join(lines)
    for row in ("50 tools: mean time to first mask", "50 tools: the first request",
                "json-mode-eval schema: median time to first mask",
                "json-mode-eval schema, cache_enabled=False: median time to first mask",
                "builtin JSON grammar: time to first mask",
                "builtin JSON along gold completions: time between masks p99", "schema along gold completions",
                "schema, cache_enabled=False along gold completions: time between masks p90",
                "forward pass: mask on the critical path p99",
                "builtin JSON, every entry at compile: compile time", "llama.cpp c, every entry at compile",
                "llama.cpp arithmetic, every entry at compile", "json-mode-eval schemas, every entry at compile",
                "string maxLength 100: time to first mask", "string maxLength 100000", "string minLength 200",
                "text without X then X", "must not grow", "cache_enabled=False / xg2ref defaults",
                "40 rules each referencing the next twice, xg2ref", "40-rule chain: compile to first mask"):
        assert row in text, row
    assert "GrammarCompiler(info)" in text


# ---- bench kernels ----------------------------------------------------------------------------


def test_kernels_bench_checks_every_backend_then_times_it(monkeypatch):
    pytest.importorskip("torch")
    import numpy as np

    from xg2ref.tools.bench import kernels as BK

    lines = []
    assert BK.bench_kernels(out=lines.append, batches=(2,), vocabs=(1000,), repeats=5) == 0
    text = "\n".join(lines)
    assert "xg2ref cpu us" in text or "xg2ref cuda us" in text
    assert "\n    2    1000 " in text and "WRONG" not in text

    # a backend that writes the wrong logits is reported, and the run fails
    real = BK._inputs
    monkeypatch.setattr(BK, "_inputs", lambda *a, **k: (lambda L, B, W: (L, B, np.zeros_like(W)))(*real(*a, **k)))
    lines.clear()
    assert BK.bench_kernels(out=lines.append, batches=(1,), vocabs=(64,), repeats=3) == 1
    assert "WRONG" in "\n".join(lines)


# ---- bench maskbench --------------------------------------------------------------------------


@pytest.mark.jit_only
@pytest.mark.xgrammar
def test_maskbench_compares_masks_then_times_every_engine(tmp_path):
    pytest.importorskip("xgrammar")
    import json

    from xg2ref.tools.bench.maskbench import ENGINES, JSON_MODE_EVAL, bench_maskbench

    lines = []
    records_path, plot = tmp_path / "records.jsonl", tmp_path / "cdf.png"
    subsets = ("Github_trivial", "Github_easy", JSON_MODE_EVAL)
    status = bench_maskbench("../shared/data", sample=1, subsets=subsets, results=str(records_path), plot=str(plot),
                             timeout=30, progress=False, out=lines.append)
    text = "\n".join(lines)
    records = [json.loads(line) for line in records_path.read_text().splitlines()]
    assert {r["subset"] for r in records} == set(subsets) and len(records) == 3
    undocumented = [r for r in records if r["mask_check"] and r["mask_check"].get("undocumented")]
    assert status == (1 if undocumented else 0)
    checked = [r for r in records if r["mask_check"] and "steps" in r["mask_check"]]
    assert checked and all(r["mask_check"]["steps"] >= 1 for r in checked)
    for engine in ENGINES:
        assert any(line.startswith(engine) for line in text.splitlines()), engine
        timed = [r["timing"][engine] for r in records if r["timing"][engine]["ttfm"] is not None]
        assert timed and all(0 < t["compile"] <= t["ttfm"] for t in timed), engine
    assert "compile p50" in text and "<= 1 ms" in text and "p99.9" in text and plot.stat().st_size > 0
    for subset in subsets:  # a table per subset
        assert subset in text.splitlines()
    # the run resumes: nothing is left to run, and the report is the same
    again = []
    assert bench_maskbench("../shared/data", sample=1, subsets=subsets, results=str(records_path), plot=None,
                           progress=False, out=again.append) == status
    assert len(records_path.read_text().splitlines()) == 3
    assert again[-1] == lines[-2]


def test_mask_differences_are_told_apart_by_specs_05():
    import numpy as np

    from xg2ref.tools.bench.maskbench import difference_kind, documented_keywords
    from xg2ref.bitmask import allocate_token_bitmask

    info = xgr.TokenizerInfo([b"a", b"\\n", b"\x01", b"d8", b"q"])

    def mask(*ids):
        words = np.asarray(allocate_token_bitmask(1, info.vocab_size)).copy()
        words[:] = 0
        for t in ids:
            words[0, 0] |= 1 << t
        return words

    assert difference_kind(mask(0, 1), mask(0, 1), info, [], b"") == (None, [])
    # difference 3: an escape only xg2ref takes, a raw control character only xgrammar takes
    assert difference_kind(mask(0, 1), mask(0, 2), info, [], b'"')[0] == "documented"
    # difference 8: after \u, a lone surrogate only xgrammar takes
    assert difference_kind(mask(0), mask(0, 3), info, [], b'"\\u')[0] == "documented"
    assert difference_kind(mask(0), mask(0, 3), info, [], b'"')[0] == "undocumented"
    # another token: attributed when the schema uses a listed keyword, else undocumented
    kind, only = difference_kind(mask(0, 4), mask(0), info, ["pattern"], b"")
    assert kind == "attributed" and only == [("xg2ref", "q")]
    assert difference_kind(mask(0, 4), mask(0), info, [], b"")[0] == "undocumented"
    assert documented_keywords({"properties": {"a": {"type": "string", "format": "date"}}}) == \
        {"format", "properties without type"}


@pytest.mark.jit_only
@pytest.mark.xgrammar
def test_earley_vs_pda_compares_masks_validates_instances_and_resumes(tmp_path, monkeypatch):
    import json

    from xg2ref.tools.bench import earley_vs_pda as ep

    schemas = {"small": {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer"}},
                         "required": ["ok"]},
               "enum": {"enum": ["red", "green"]},
               "bad": {"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}, "required": ["x"]}}
    data = _bench_data(tmp_path, schemas)
    results = tmp_path / "records.jsonl"
    lines = []
    assert ep.bench_earley_vs_pda(data, sample=None, subsets=["Glaiveai2K"], results=str(results),
                                  out_dir=str(tmp_path / "fig"), progress=False, peer=False,
                                  out=lines.append) == 0
    records = {r["id"]: r for r in map(json.loads, results.read_text().splitlines())}
    assert set(records) == set(schemas)
    for uid in ("small", "enum"):
        r = records[uid]
        assert r["P"]["ms"] > 0 and r["E"]["ms"] > 0 and r["valid"] is True and "mismatch" not in r
        assert len(r["P"]["mask_us"]) == len(r["E"]["mask_us"]) == len(r["E+"]["mask_us"]) >= 2
        assert len(r["xgrammar"]["mask_us"]) == len(r["E"]["mask_us"]) and r["xgrammar"]["differs_at"] is None
        assert r["P"]["entries"] > 0 and r["E"]["entries"] > 0
    assert all(records["bad"][e]["failed"].startswith("error: ") for e in ("P", "E", "E+"))
    table = "\n".join(lines)
    assert "compiled by both P and E: 2" in table and "masks of P and E equal at every step" in table
    assert "instances: 2 walks finished, 2 valid under jsonschema" in table and "P failed: error: " in table
    assert "xgrammar 0.2.8's masks against E's: equal along 2 of 2 walks" in table
    assert (tmp_path / "fig" / "fig10.png").stat().st_size > 0

    def refuse(*args):
        raise AssertionError("a schema with a record was run again")

    with open(results, "a", encoding="utf-8") as f:
        f.write('{"subset": "Glaiveai2K", "id": "cut sh')  # a line a stopped run left half written
    monkeypatch.setattr(ep._Worker, "__init__", refuse)
    again = []
    assert ep.bench_earley_vs_pda(data, sample=None, subsets=["Glaiveai2K"], results=str(results), out_dir=None,
                                  progress=False, peer=False, out=again.append) == 0
    assert again == [line for line in lines if not line.startswith(("wrote", "xgrammar 0.1.19"))]


def test_earley_vs_pda_table_counts_wins_refusals_and_differences():
    from xg2ref.tools.bench.earley_vs_pda import format_table

    def rec(uid, p, e, **extra):
        return dict(subset="s", id=uid, P=p, E=e, **{"E+": dict(ms=1.0), "xgrammar": dict(ms=1.0)}, **extra)

    records = [rec("a", dict(ms=10.0, mask_us=[5.0, 5.0], uncertain=7), dict(ms=2.0, mask_us=[1.0, 1.0], uncertain=3),
                   valid=True),
               rec("b", dict(ms=1.0, mask_us=[1.0], uncertain=1), dict(ms=4.0, mask_us=[2.0], uncertain=1),
                   valid=False, mismatch=0),
               rec("c", dict(failed="timeout"), dict(ms=3.0)),
               rec("d", dict(failed="refused: rule 'x' is left-recursive"), dict(ms=3.0))]
    text = format_table(records)
    assert "compiled by both P and E: 2; E compiles faster on 1 (50%), P on 1" in text
    assert "walked by both: 2; E's mean time per mask is lower on 1 (50%), P's on 1" in text
    assert "P failed: timeout x1" in text and "P failed: refused: rule 'x' is left-recursive x1" in text
    assert "uncertain tokens summed over the entries: P 8, E 4" in text
    assert "instances: 2 walks finished, 1 valid" in text and "1 schemas differ" in text


@pytest.mark.jit_only
@pytest.mark.xgrammar
def test_xg1_ablation_checks_every_row_then_times_it(tmp_path):
    import json

    from xg2ref.tools.bench.xg1_ablation import ROWS, bench_xg1_ablation

    lines = []
    assert bench_xg1_ablation(texts=1, slow_texts=1, slow_steps=3, out_dir=str(tmp_path), peer=False,
                              out=lines.append) == 0
    text = "\n".join(lines)
    assert "masks: every row equals the Earley engine's at every step" in text
    for name, _, paper in ROWS:
        assert name in text and f"{paper:.3f}" in text
    record = json.loads((tmp_path / "table3.json").read_text())
    assert [r["name"] for r in record][:len(ROWS)] == [name for name, _, _ in ROWS]
    assert record[0]["masks"] == 4 and all(r["mean_ms"] > 0 for r in record)
    assert record[-1]["name"] == "xgrammar 0.2.8" and (tmp_path / "table3.png").stat().st_size > 0


def test_formats_render_marks_the_argument_spans():
    from xg2ref.tools.bench.formats import render

    text, spans = render("llama", "Sure.", [("f", '{"a": 1}'), ("g", "{}")])
    assert text == 'Sure. {"name": "f", "parameters": {"a": 1}}{"name": "g", "parameters": {}}'
    assert [text.encode()[lo:hi] for lo, hi in spans] == [b'{"a": 1}', b"{}"]
    text, spans = render("harmony", "Let me think.", [("f", '{"é": 1}')])
    assert text.startswith("<|channel|>analysis<|message|>Let me think.<|end|><|start|>assistant<|channel|>commentary")
    assert [text.encode()[lo:hi] for lo, hi in spans] == ['{"é": 1}'.encode()] and text.endswith("<|call|>")
    assert render("harmony", "Hi.", [])[0] == "<|channel|>final<|message|>Hi.<|return|>"
    with pytest.raises(ValueError, match="format"):
        render("chatml", "Hi.", [])


@pytest.mark.jit_only
@pytest.mark.xgrammar
def test_formats_bench_times_every_engine_on_sentences_of_every_grammar(tmp_path):
    import json

    from xg2ref.tools.bench.formats import bench_formats

    lines = []
    records = tmp_path / "records.jsonl"
    options = dict(runs=("llama",), turns=2, tool_counts=(3,), slow_turns=1, results=str(records), progress=False,
                   engines=("xg2ref", "xgrammar", "llguidance", "pda"))
    assert bench_formats("../shared/data", out_dir=str(tmp_path), out=lines.append, **options) == 0
    assert len(records.read_text().splitlines()) == 2 * 3 + 1  # a line per turn and engine; the PDA on turn 0 only
    rows = {r["engine"]: r for r in json.loads((tmp_path / "formats.json").read_text())}
    assert set(rows) == {"xg2ref", "xgrammar", "llguidance", "pda"}
    for r in rows.values():
        assert r["refused"] == 0 and r["timeouts"] == 0 and r["tokens"] > 0 and r["mean_us"] > 0
        assert r["compile_warm_ms"] > 0 and r["ttfm_cold_ms"] >= r["compile_cold_ms"]
    assert rows["xg2ref"]["turns"] == 2 and rows["pda"]["turns"] == 1  # the slow engine reads the first turn only
    assert rows["xgrammar"]["differ"] == 0 and rows["pda"]["differ"] == 0  # the same structural tag, exact masks
    assert rows["pda"]["compile_cold_ms"] == rows["pda"]["compile_warm_ms"]  # no cache: one measurement for both
    assert rows["xg2ref"]["token_vs_xgrammar"] > 0 and rows["xg2ref"]["ttfm_vs_llguidance"] > 0
    assert (tmp_path / "fig7.png").stat().st_size > 0 and (tmp_path / "fig8.png").stat().st_size > 0
    table = "\n".join(lines)
    assert "÷ xgrammar" in table and "÷ llguidance" in table
    # a second run reads every turn from the records: nothing runs again, the same table
    again = []
    assert bench_formats("../shared/data", out_dir=None, out=again.append, **options) == 0
    assert len(records.read_text().splitlines()) == 7 and again[0] == lines[0]


def test_formats_sensitivity_vocabulary_makes_each_harmony_marker_one_token():
    from xg2ref.tools.bench.formats_engines import HARMONY_MARKERS, marker_vocabulary

    info, encode = marker_vocabulary()
    tokens = encode("<|channel|>final<|message|>Hi.<|return|>".encode())
    decoded = info.decoded_vocab
    assert [decoded[t] for t in tokens][0] == b"<|channel|>" and decoded[tokens[-1]] == b"<|return|>"
    assert b"".join(decoded[t] for t in tokens) == b"<|channel|>final<|message|>Hi.<|return|>"
    assert len(tokens) <= 6 and all(len(encode(m.encode())) == 1 for m in HARMONY_MARKERS)
    assert tokens[-1] not in info.stop_token_ids and len(info.stop_token_ids) == 1


def test_formats_legacy_tags_are_xgrammar_0_1s_tags_and_triggers():
    from xg2ref.frontends.structural_tag.models import HARMONY_FUNCTION_HEADERS
    from xg2ref.tools.bench.formats_engines import legacy_tags

    tools = [{"function": {"name": "f", "parameters": {"type": "object"}}}, {"function": {"name": "g"}}]
    tags, triggers = legacy_tags("llama", tools)
    assert tags == [('{"name": "f", "parameters": ', '{"type": "object"}', "}"),
                    ('{"name": "g", "parameters": ', '{"type": "object"}', "}")] and triggers == ['{"name": ']
    tags, triggers = legacy_tags("harmony", tools)
    assert len(tags) == 2 * len(HARMONY_FUNCTION_HEADERS) and all(t[2] == "<|call|>" for t in tags)
    assert all(any(begin.startswith(trigger) for trigger in triggers) for begin, _, _ in tags)


def test_formats_classifies_the_differences_specs_05_documents():
    from xg2ref.tools.bench.formats import classify_difference

    assert classify_difference(b'{"years": -', [b"0"], []) == "-0 (specs/05 JSON 9)"
    assert classify_difference(b'{"c": "\\', [], [b"ude", b"uda"]) == "lone surrogate (specs/05 JSON 8)"
    assert classify_difference(b'{"c": "\\u', [], [b"d8"]) == "lone surrogate (specs/05 JSON 8)"
    assert classify_difference(b'{"date": "8233-09-', [], [b"31"]) == "day of month (specs/05 JSON 7)"
    assert classify_difference(b'{"s": "', [b"\\n"], [b"\x01"]) == "escape / control (specs/05 JSON 3)"
    # anything else is told as such, to be looked into
    assert classify_difference(b'{"years": -', [b"1"], []) == "other"
    assert classify_difference(b'{"c": "\\', [], [b"uae"]) == "other"
    assert classify_difference(b"Sure. ", [b"{"], [b"x"]) == "other"


@pytest.mark.jit_only
def test_token_classes_bench_checks_masks_then_tables(tmp_path, capsys):
    """`xg2ref bench token-classes --mask` on two json-mode-eval schemas: displacement classes far
    fewer than byte_blocks classes, every class mask equal to the full vocabulary's (exit 0), and
    the per-token rows filled for each inner engine installed, with a time per instance."""
    import json
    import os

    from xg2ref.tools.bench.token_classes import bench_token_classes

    data = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
    if not os.path.isdir(os.path.join(data, "json_mode_eval")):
        pytest.skip("json-mode-eval is not here")
    results = tmp_path / "results.json"
    status = bench_token_classes(data, vocabs=("llama3",), grammars=("json",), json_limit=2, mask=True,
                                 results=str(results))
    out = capsys.readouterr().out
    assert status == 0, out
    record = json.loads(results.read_text())
    row = record["table1"][0]
    assert len(row["classes"]) == 2 and all(c < b / 50 for c, b in zip(row["classes"], row["blocks"]))
    for mask_row in record["table3"]:
        assert mask_row["tokens"] > 10 and not mask_row["mismatches"]
        assert len(mask_row["instances"]) == 2 and all(full > 0 and by_class > 0
                                                       for full, by_class in mask_row["instances"])
    assert "CFGzip Table 1" in out and "| llama3 | json | mean" in out


def test_wgrammar_bench_checks_then_tables(tmp_path, capsys):
    """`xg2ref bench wgrammar` on two requests of each workload: every engine accepts its
    tokenization, xg2ref's masks equal xgrammar's on the EBNF workloads (exit 0), and the record
    holds the runs, the global cache's hits and the price of token-level semantics."""
    import json
    import os

    pytest.importorskip("xgrammar")
    from xg2ref.tools.bench.wgrammar import bench_wgrammar

    data = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
    if not os.path.isdir(os.path.join(data, "json_mode_eval")):
        pytest.skip("json-mode-eval is not here")
    results, plot = tmp_path / "results.json", tmp_path / "figure6.png"
    status = bench_wgrammar(data, requests=2, json_limit=2,
                            engines=("wgrammar", "wgrammar-online", "xg2ref", "xg2ref-linked", "xgrammar"),
                            results=str(results), plot=str(plot), progress=False)
    out = capsys.readouterr().out
    assert status == 0, out
    record = json.loads(results.read_text())
    engines = {(r["workload"], r["engine"]) for r in record["runs"] if not r["error"]}
    assert {("outline", e) for e in ("wgrammar", "wgrammar-online", "xg2ref", "xg2ref-linked", "xgrammar")} <= engines
    assert sum(r["hits"] + r["misses"] for r in record["runs"] if r["engine"] == "wgrammar") > 0
    assert record["price"]["lookup"]["instances"] == 2 and plot.stat().st_size > 0
    assert "WGrammar Fig. 6" in out and "| outline | wgrammar |" in out


@pytest.mark.jit_only
@pytest.mark.xgrammar
def test_long_bench_reads_whole_documents_in_both_engines_and_rolls_back(tmp_path):
    """`xg2ref bench long` on small documents: every mask equal in both engines, every token
    accepted, the rollback's replayed masks equal to the first pass's, memory measured, the plot
    and its numbers written."""
    pytest.importorskip("xgrammar")
    pytest.importorskip("matplotlib")
    from xg2ref.tools.bench.long import WORKLOADS, bench_long, document
    from xg2ref.tools.diff.checks import quicktok_encoder

    text, ids = document("gbnf-mutual", quicktok_encoder("llama3"), 400)
    assert len(ids) >= 400 and text.startswith("[") and text.endswith("]")
    lines = []
    plot = tmp_path / "long.png"
    status = bench_long(tokens=400, cases=["json-nested", "gbnf-mutual", "lark-list"], plot_path=str(plot),
                        progress=False, out=lines.append)
    text = "\n".join(lines)
    assert status == 0, text
    for name in ("json-nested", "gbnf-mutual", "lark-list"):
        row = next(line for line in text.splitlines() if line.startswith(name))
        assert "FAILED" not in row, row
    assert plot.exists() and (tmp_path / "long.json").exists()
    assert set(WORKLOADS) >= {"json-numbers", "json-strings", "json-arrays", "json-object", "json-nested",
                              "schema-objects", "gbnf-list", "lark-list"}
    with pytest.raises(ValueError, match="unknown workload"):
        bench_long(tokens=10, cases=["nope"], out=lines.append)


def test_memory_bench_measures_both_engines_and_compares_first_masks(tmp_path, capsys):
    from xg2ref.tools.bench.memory import bench_memory

    plot = tmp_path / "memory.png"
    assert bench_memory("../shared/data", n=6, limit_mb=1.0, matchers=50, plot_path=str(plot), progress=False) == 0
    out = capsys.readouterr().out
    same, both = map(int, re.search(r"first masks: (\d+) of (\d+) equal", out).groups())
    assert both >= 5 and same >= both - 1  # (an untyped schema is every type to xg2ref: specs/05)
    rows = re.findall(r"^\| (default|limit 1 MB) \| (\d+) \| (\d+) \| (\d+) \|", out, re.M)
    assert len(rows) >= 2 * 5 and {r[0] for r in rows} == {"default", "limit 1 MB"}
    assert re.search(r"50 live matchers, 30 tokens each: xg2ref [\d.]+ KB, xgrammar [\d.]+ KB", out)
    assert plot.exists() and (tmp_path / "memory.json").exists()
    runs = json.loads((tmp_path / "memory.json").read_text())
    # the limited compiler keeps at most its limit beyond its vocabulary's tables, which it reports too
    for point in runs["xg2ref/limit 1 MB"]["points"]:
        assert 0 < point["reported_mb"] - point["vocabulary_mb"] <= 1.0
