"""`xg2ref fuzz` and the public strategies (xg2ref/tools/fuzz/: runner.py, case.py, shrink.py; xg2ref/strategies.py)."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xg2ref.tools.fuzz.runner import OPTIONS, run_fuzz
from xg2ref.tools.fuzz.case import CaseChecker, default_vocabulary, draw_case, mutate_schema
from xg2ref.tools.fuzz.shrink import Question, schema_deletions, shrink_bytes
from xg2ref.grammar.grammar import Grammar
from xg2ref.oracle.engines import XG2RefEngine
from xg2ref.oracle.recognizer import Recognizer
from xg2ref.strategies import (json_instances, json_schemas, random_grammar, random_json_schema, regexes,
                               strings_inside, strings_outside)

SOME = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                       HealthCheck.too_slow])


@SOME
@given(regexes())
def test_regexes_compile_in_xg2ref(pattern):
    ir = Grammar.from_regex(pattern).ir
    assert not Recognizer(ir).language_is_empty


@SOME
@given(st.data())
def test_json_instances_are_valid(data):
    jsonschema = pytest.importorskip("jsonschema")
    schema = data.draw(json_schemas())
    Grammar.from_json_schema(schema)  # xg2ref reads every drawn schema
    for _ in range(3):
        jsonschema.validate(data.draw(json_instances(schema)), schema)


GRAMMARS = [random_grammar(random.Random(k)) for k in range(6)]


@SOME
@given(st.data())
def test_strings_inside_and_outside(data):
    ir = GRAMMARS[data.draw(st.integers(0, len(GRAMMARS) - 1))]
    recognizer = Recognizer(ir)
    assert recognizer.is_sentence(data.draw(strings_inside(ir)))
    assert not recognizer.is_sentence(data.draw(strings_outside(ir)))


def test_drawing_is_seeded():
    assert draw_case(3, 5) == draw_case(3, 5)
    assert [draw_case(3, k)[0] for k in range(3)] == ["ebnf", "regex", "json_schema"]
    schema = random_json_schema(random.Random(0))
    mutated, how = mutate_schema(schema, random.Random(1))
    assert mutated != schema and how.startswith(("dropped", "altered"))


def test_shrink_bytes_is_one_minimal():
    def test(s):
        return b"a" in s and s.count(b"b") >= 2

    small = shrink_bytes(b"xxbyyayybzzb", test)
    assert test(small) and len(small) == 3
    assert not any(test(small[:i] + small[i + 1:]) for i in range(len(small)))


# ---- shrinking with a deliberately wrong engine ------------------------------------------------

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 1},
                                           "b": {"type": "string", "maxLength": 3}, "c": {"type": "boolean"}},
          "required": ["a", "b", "c"], "additionalProperties": False}


class _Flipped(XG2RefEngine):
    """xg2ref, but token `-` is allowed where `1` is and none of `,` `}` `]` is (where a number
    starts): an engine that forgets `minimum: 1` there."""

    name = "flipped"

    def _wrap(self, matcher):
        vocab = self.tokenizer_info.decoded_vocab
        dash, one = vocab.index(b"-"), vocab.index(b"1")
        ends = [vocab.index(c) for c in (b",", b"}", b"]")]
        inner = matcher.bool_mask

        def bool_mask():
            mask = inner().copy()
            if mask[one] and not mask[ends].any():
                mask[dash] = True
            return mask

        matcher.bool_mask = bool_mask
        return matcher

    def compile(self, text, root="root"):
        return self._wrap(super().compile(text, root))

    def compile_front_end(self, kind, spec, **options):
        return self._wrap(super().compile_front_end(kind, spec, **options))


@pytest.fixture()
def flipped(monkeypatch):
    import xg2ref.oracle.other_engines as other

    real = other.make_engine
    monkeypatch.setattr(other, "make_engine", lambda name, info: _Flipped(info) if name == "flipped"
                        else real(name, info))


def test_a_wrong_mask_shrinks_to_the_keyword_that_matters(flipped):
    info = default_vocabulary()
    checker = CaseChecker(["flipped"], info, seed=0, options=OPTIONS, shrink_seconds=30)
    out = checker.run(0, "json_schema", json.dumps(SCHEMA), set(), set())
    assert out["error"] is None and out["disagreements"] >= 1
    [finding] = [f for f in out["findings"] if f["engine"] == "flipped"]
    assert finding["shrunk"] and finding["question"] == "token" and finding["engine_says"] is True
    assert finding["oracle"] is False and finding["token_hex"] == b"-".hex()
    data, schema = bytes.fromhex(finding["input_hex"]), json.loads(finding["source"])
    assert data == b'{"a":'
    assert schema["properties"]["a"]["minimum"] == 1 and set(schema["properties"]) == {"a"}
    assert "minimum" in finding["class"] and not finding["by_design"]
    # 1-minimal: one byte or one keyword fewer, and the engine agrees with the oracle
    asker = checker.asker("flipped")
    q = Question("token", data, finding["tokens"][0])
    assert asker.differs("json_schema", schema, q, True)
    assert not any(asker.differs("json_schema", schema, Question("token", data[:i] + data[i + 1:], q.token_id), True)
                   for i in range(len(data)))
    assert not any(asker.differs("json_schema", smaller, q, True) for smaller in schema_deletions(schema))


# ---- a real run --------------------------------------------------------------------------------


@pytest.mark.xgrammar
@pytest.mark.jit_only  # (a time budget's orchestration)
def test_a_fuzz_run_against_xgrammar_resumes(tmp_path):
    pytest.importorskip("xgrammar")
    results = tmp_path / "fuzz.jsonl"
    first = run_fuzz(["xgrammar"], 20, seed=1, results_path=str(results), progress=False)
    assert first.cases_tried + first.skipped >= 3
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    tried = [(e["seed"], e["index"]) for e in lines if e["type"] == "progress"]
    assert len(tried) == first.cases_tried + first.skipped and len(set(tried)) == len(tried)
    assert not [f for f in first.findings if f["engine"] == "xg2ref"], first.format()
    assert (tmp_path / "fuzz.jsonl.cases" / "vocab.json").exists()
    for f in first.findings:
        assert f["replay"].startswith(("xg2ref replay", "xg2ref explain")) and f["class"]

    second = run_fuzz(["xgrammar"], 4, seed=1, results_path=str(results), progress=False)
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    again = [(e["seed"], e["index"]) for e in lines if e["type"] == "progress"][len(tried):]
    assert again and not set(again) & set(tried)  # no case is tried twice
    classes = [e["class"] for e in lines if e["type"] == "finding"]
    assert len(classes) == len(set(classes))  # no finding is repeated
    assert len(second.earlier_findings) == len(first.findings)
    assert "cases" in second.format()


def test_the_command_line(tmp_path, capsys):
    import argparse

    from xg2ref.tools.fuzz.runner import add_arguments, main

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    results = tmp_path / "r.jsonl"
    args = parser.parse_args(["--against", "none", "--budget", "3", "--kind", "regex", "--results", str(results),
                              "--no-progress", "--seed", "4"])
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "the oracle only" in out and "OK" in out and results.exists()
    assert main(parser.parse_args(["--budget", "1", "--kind", "lark", "--against", "none"])) == 2
    assert "unknown case kinds" in capsys.readouterr().err


class _Crashy(XG2RefEngine):
    """xg2ref, but compiling a grammar with the literal "b" kills the process."""

    name = "crashy"

    def compile(self, text, root="root"):
        if '"b"' in text:
            import os

            os.abort()
        return super().compile(text, root)


def test_a_crash_is_pinned_on_its_engine_and_shrunk(tmp_path, monkeypatch):
    import xg2ref.oracle.other_engines as other

    real = other.make_engine
    monkeypatch.setattr(other, "make_engine", lambda name, info: _Crashy(info) if name == "crashy"
                        else real(name, info))
    result = run_fuzz(["crashy"], 3, seed=2, kinds=("ebnf",), results_path=str(tmp_path / "r.jsonl"),
                      progress=False, shrink_seconds=10)
    [crash] = [f for f in result.findings if f["question"] == "crash"]
    assert crash["engine"] == "crashy" and crash["class"] == "crashy: ebnf crash"
    assert '"b"' in crash["source"] and crash["replay"].startswith("xg2ref diff")
    if crash["original_source"]:
        assert len(crash["source"]) < len(crash["original_source"])
    assert result.exit_status() == 0  # the crash is not xg2ref's
