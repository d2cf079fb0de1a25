"""`xg2ref diff FILE...`: the user's files against several engines (xg2ref/diff_user.py)."""

from __future__ import annotations

import json

import pytest

from xg2ref.cli import main
from xg2ref.oracle.engines import XG2RefEngine

GRAMMAR = 'root ::= "[" (item ("," item)*)? "]"\nitem ::= [a-c]+ | "x" [0-9]\n'
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"enum": ["x", "y"]}}, "required": ["a"]}
VOCAB = ["[", "]", ","] + [chr(c) for c in range(0x7F) if chr(c) not in "[],"] + \
    ["ab", "x1", '"a"', '"b"', ": ", '"x"', '"y"', "</s>"]  # every ASCII character: ASCII sentences tokenize


@pytest.fixture()
def files(tmp_path):
    grammar = tmp_path / "list.gbnf"
    grammar.write_text(GRAMMAR)
    schema = tmp_path / "obj.json"
    schema.write_text(json.dumps(SCHEMA))
    vocab = tmp_path / "vocab.json"
    vocab.write_text(json.dumps(VOCAB))
    return tmp_path, str(grammar), str(schema), str(vocab)


def _run(args, tmp_path):
    report = tmp_path / "report.json"
    status = main(["diff", *args, "--strings", "2", "--traces", "1", "--jobs", "1", "--no-progress",
                   "--report", str(report)])
    return status, json.loads(report.read_text())


def test_files_against_the_oracle_only(files):
    tmp, grammar, schema, vocab = files
    status, report = _run([grammar, schema, "--vocab", vocab, "--against", "none"], tmp)
    assert status == 0
    assert report["engines"] == [] and [c["name"] for c in report["cases"]] == ["list.gbnf", "obj.json"]
    assert report["disagreements"] == []
    assert all(c["verdicts_oracle"] > 0 and c["steps"] > 0 for c in report["cases"])


class _Flipped(XG2RefEngine):
    """xg2ref with token `,` always allowed: an over-accepting engine."""

    name = "flipped"

    def compile(self, text, root="root"):
        matcher = super().compile(text, root)
        inner = matcher.bool_mask

        def bool_mask():
            mask = inner().copy()
            mask[2] = True
            return mask
        matcher.bool_mask = bool_mask
        return matcher


def test_an_engine_that_disagrees_with_the_oracle_is_reported(files, monkeypatch):
    import xg2ref.oracle.other_engines as other

    tmp, grammar, _, vocab = files
    real = other.make_engine
    monkeypatch.setattr(other, "make_engine", lambda name, info: _Flipped(info) if name == "flipped"
                        else real(name, info))
    status, report = _run([grammar, "--vocab", vocab, "--against", "flipped"], tmp)
    assert status == 0  # xg2ref agrees with its oracle
    wrong = [d for d in report["disagreements"] if d["engine"] == "flipped"]
    assert wrong and all(d["kind"] == "mask" and d["tokens"] == [2] and d["engine_says"] is True and not d["by_design"]
                         and d["oracle"] is False for d in wrong)
    assert all(d["replay"].startswith("xg2ref mask") for d in wrong)
    status, _ = _run([grammar, "--vocab", vocab, "--against", "flipped", "--strict"], tmp)
    assert status == 1


def test_front_end_options_reach_the_engines(files):
    tmp, _, schema, vocab = files
    status, report = _run([schema, "--vocab", vocab, "--against", "none", "--no-any-whitespace"], tmp)
    assert status == 0 and report["cases"][0]["name"] == "obj.json"


def test_bad_files_are_usage_errors(tmp_path, capsys):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    assert main(["diff", str(bad), "--against", "none", "--no-progress"]) == 2
    assert "pass --kind" in capsys.readouterr().err


@pytest.mark.xgrammar
def test_files_against_xgrammar(files):
    pytest.importorskip("xgrammar")
    tmp, grammar, schema, vocab = files
    status, report = _run([grammar, schema, "--vocab", vocab, "--against", "xgrammar"], tmp)
    assert status == 0 and report["engines"] == ["xgrammar"]
    assert not [d for d in report["disagreements"] if d["engine"] == "xg2ref"]


def test_known_classes_of_difference():
    from xg2ref.diff_classes import classify

    assert classify("xgrammar", b'{"a": "', b"\\n", False) == "escapes (specs/05 difference 3)"
    assert classify("xgrammar", b'{"a": "', b"\x01", True) == "escapes (specs/05 difference 3)"
    assert classify("xgrammar", b'"\\u', b"d83d", True) == "lone surrogates (specs/05 difference 8)"
    assert classify("xgrammar", b'"\\u', b"0041", True) is None
    assert classify("llguidance", b'"', b"\x7f", False) == "string_del"
    assert classify("llguidance", b'"', b"\x7f", True) is None
    assert classify("outlines", b'"', "\u0085".encode(), False) == "string_chars"
    assert classify("outlines", b'"\\', b"u00e9", False) == "string_chars"
    assert classify("outlines", b"[1e", b"5", False) == "exponent_sign"
    assert classify("outlines", b"[1", b" ,", False) == "whitespace"
    assert classify("outlines", b"[1", b"x", False) is None and classify("outlines", b"[1", b" ", True) is None
    assert classify("llguidance", b"[1", b",", False) is None  # nothing known: a finding


def test_a_steered_trace_walks_where_the_engine_leads(files, monkeypatch):
    """With no sentence traces at all, the trace that follows the flipped engine's own mask meets
    its over-acceptance (its `,` where the list has just opened)."""
    import xg2ref.oracle.other_engines as other

    tmp, grammar, _, vocab = files
    monkeypatch.setattr(other, "make_engine", lambda name, info: _Flipped(info))
    report = tmp / "steered.json"
    assert main(["diff", grammar, "--vocab", vocab, "--against", "flipped", "--strings", "0", "--traces", "0",
                 "--jobs", "1", "--no-progress", "--report", str(report)]) == 0
    data = json.loads(report.read_text())
    assert data["per_engine"]["flipped"][0]["traces"] == 1 and data["per_engine"]["flipped"][0]["steps"] >= 1
    assert any(d["engine"] == "flipped" and d["tokens"] == [2] for d in data["disagreements"])
