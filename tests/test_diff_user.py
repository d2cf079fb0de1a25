"""`xg2ref diff FILE...`: the user's files against several engines (xg2ref/tools/diff/user.py)."""

from __future__ import annotations

import json

import pytest

from xg2ref.tools.cli import main
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
    for d in wrong[:3]:  # each replay line asks xg2ref the same question of the user's file
        import shlex

        argv = shlex.split(d["replay"])
        assert argv[:2] == ["xg2ref", "explain"] and grammar in argv
        assert main(argv[1:]) == (0 if d["oracle"] else 1)
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
    from xg2ref.tools.diff.classes import classify

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


def test_char_lexed_lark_keeps_the_language():
    """One lexeme per character: the same language as the grammar (checked by xg2ref's own
    Lark reader on a few strings), written so that no lexeme can run greedily past another."""
    from xg2ref.tools.diff.classes import char_lexed_lark
    from xg2ref.grammar.grammar import Grammar

    ir = Grammar.from_ebnf('root ::= "ab" r{1,2} | [^a-c]*\nr ::= "é" | [x-z]+\n').ir
    lark = char_lexed_lark(ir)
    assert lark.splitlines()[:3] == ['start: r0', 'r0: (("a" "b" (r1){1,2}) | (/[\\x{0}-\\x{60}\\x{64}-\\x{10ffff}]/)*)',
                                     'r1: ("é" | (/[\\x{78}-\\x{7a}]/)+)']
    assert char_lexed_lark(Grammar.from_ebnf('root ::= "a"{1,100}').ir) is None  # too long to write out
    assert char_lexed_lark(Grammar.from_ebnf('root ::= [] | "a"').ir) is None


def test_front_end_flags_round_trip():
    from xg2ref.tools.cli import build_parser, front_end_options
    from xg2ref.tools.user_cases import front_end_flags

    options = {"any_whitespace": False, "strict_mode": True, "any_order": True, "max_whitespace_cnt": 3,
               "dialect": "llguidance"}
    flags = front_end_flags(options)
    args = build_parser().parse_args(["explain", "s.json", "--text", "x", *flags.split()])
    assert front_end_options(args) == options and front_end_flags({}) == ""


def test_disagreements_are_shrunk(files, monkeypatch):
    """Each disagreement of the flipped engine comes with a smaller grammar and input on which
    it still differs from the oracle, and a replay command over files written beside the report."""
    import xg2ref.oracle.other_engines as other
    from xg2ref.tools.fuzz.shrink import Asker, Question

    tmp, grammar, _, vocab = files
    real = other.make_engine
    monkeypatch.setattr(other, "make_engine", lambda name, info: _Flipped(info) if name == "flipped"
                        else real(name, info))
    status, report = _run([grammar, "--vocab", vocab, "--against", "flipped", "--shrink-seconds", "20"], tmp)
    assert status == 0
    wrong = [d for d in report["disagreements"] if d["engine"] == "flipped"]
    assert wrong and all(d["shrunk"] for d in wrong)
    from xg2ref.tools.cli import load_vocab

    info = load_vocab(vocab)
    asker = Asker(_Flipped(info), info)
    for d in wrong:
        f = d["shrunk"]
        assert len(f["source"]) < len(GRAMMAR) and len(f["input_hex"]) <= len(d["input_hex"])
        assert f["engine_says"] is True and f["oracle"] is False and f["token_hex"] == b",".hex()
        q = Question(f["question"], bytes.fromhex(f["input_hex"]), f["tokens"][0])
        assert asker.differs("ebnf", f["source"], q, True)
        assert f["replay"].startswith("xg2ref ") and str(tmp / "report.json.cases") in f["replay"]
    status, report = _run([grammar, "--vocab", vocab, "--against", "flipped", "--shrink-seconds", "0"], tmp)
    assert not any(d.get("shrunk") for d in report["disagreements"])


@pytest.mark.xgrammar
def test_a_json_verdict_is_shrunk_and_judged_by_jsonschema():
    """xgrammar reads a schema with object keywords and no type as an object schema (specs/05,
    difference 2): the array it refuses loses its spaces, the member's name and the schema's
    other keywords, and jsonschema accepts it before and after."""
    pytest.importorskip("xgrammar")
    pytest.importorskip("jsonschema")
    from xg2ref.tools.diff.user import UserDiff
    from xg2ref.tools.fuzz.case import default_vocabulary, shrink_disagreements
    from xg2ref.tools.user_cases import case_from_text

    schema = {"properties": {"a": {"type": "integer"}}, "title": "untyped"}
    case = case_from_text("untyped.json", json.dumps(schema), "json_schema")
    data = b'[1, {"a": 2}]'
    diff = UserDiff(engines=["xgrammar"], reports={})
    diff.disagreements.append({"case": case.name, "engine": "xgrammar", "kind": "verdict", "question": "sentence",
                               "by_design": None, "input_hex": data.hex(), "token_hex": None, "tokens": [],
                               "oracle": True, "xg2ref": True, "engine_says": False})
    shrink_disagreements(diff, [case], default_vocabulary(), "fuzz", seconds=30, progress=False)
    f = diff.disagreements[0]["shrunk"]
    assert f["jsonschema_valid_original"] is True and f["jsonschema_valid"] is True and f["oracle"] is True
    assert bytes.fromhex(f["input_hex"]) == b'[1,{"":2}]' and json.loads(f["source"]) == {"properties": {}}


class _Lax(XG2RefEngine):
    """xg2ref whose accept_bytes says yes to bytes it refuses (and stays where it was): it
    over-accepts every string that leaves the language, and agrees on the others."""

    name = "lax"

    def compile(self, text, root="root"):
        matcher = super().compile(text, root)
        real = matcher.accept_bytes
        matcher.accept_bytes = lambda data: real(data) or True
        return matcher


def test_the_oracle_is_asked_about_the_byte_in_question(files, monkeypatch):
    """Where the lax engine reads on past xg2ref's last viable byte, the question is whether
    that next byte is viable: the oracle says no, as xg2ref does (not whether the bytes before
    it are, which it had already answered yes)."""
    import xg2ref.oracle.other_engines as other

    tmp, grammar, _, vocab = files
    real = other.make_engine
    monkeypatch.setattr(other, "make_engine", lambda name, info: _Lax(info) if name == "lax" else real(name, info))
    report_path = tmp / "lax.json"
    status = main(["diff", grammar, "--vocab", vocab, "--against", "lax", "--shrink-seconds", "0", "--strings", "12",
                   "--traces", "0", "--jobs", "1", "--no-progress", "--report", str(report_path)])
    report = json.loads(report_path.read_text())
    assert status == 0
    lax = [d for d in report["disagreements"] if d["engine"] == "lax" and d["kind"] == "verdict"]
    assert not [d for d in report["disagreements"] if d["engine"] == "xg2ref"]
    assert all(d["oracle"] == d["xg2ref"] for d in lax)
    read_on = [d for d in lax if d["question"] in ("prefix", "whole")]
    assert read_on and all(d["engine_says"] is True and d["oracle"] is False for d in read_on)
    import shlex

    for d in lax[:4]:  # the replay line asks xg2ref the same question: exit 0 iff the oracle says yes
        assert main(shlex.split(d["replay"])[1:]) == (0 if d["oracle"] else 1), d["replay"]


def test_minus_zero_is_by_design_for_integers_too():
    from xg2ref.tools.diff.classes import by_design
    from xg2ref.tools.fuzz.shrink import Question

    integer = {"properties": {"b": {"type": "integer"}}}
    assert by_design("xgrammar", "json_schema", integer, Question("prefix", b'{"b":-0'), False, None, b"") \
        == "-0 (specs/05 difference 9)"
    plain = {"properties": {"b": {"type": "number"}}}
    assert by_design("xgrammar", "json_schema", plain, Question("prefix", b'{"b":-0'), False, None, b"") is None


def test_a_lone_minus_refused_is_the_minus_zero_difference_only_under_a_bound():
    from xg2ref.tools.diff.classes import by_design
    from xg2ref.tools.fuzz.shrink import Question

    # unbounded integer: `-1` is fine for xgrammar, so refusing `-` is not the -0 difference
    integer = {"properties": {"b": {"type": "integer"}}}
    assert by_design("xgrammar", "json_schema", integer, Question("prefix", b'{"b":-'), False, None, b"") is None
    # minimum 0: after `-` only `-0` is left, which xgrammar refuses
    at_least_zero = {"properties": {"b": {"type": "integer", "minimum": 0}}}
    assert by_design("xgrammar", "json_schema", at_least_zero, Question("prefix", b'{"b":-'), False, None, b"") \
        == "-0 (specs/05 difference 9)"


PERMUTATION_LARK = """start    :  "[" perm::0x0 "]"
perm::_  :  ""                        %if is_ones([0:2])
         |  "a" sep::set_bit(0)       %if bit_clear(0)
         |  "b" sep::set_bit(1)       %if bit_clear(1)
sep::_   :  ""                        %if is_ones([0:2])
         |  "," perm::_               %if not(is_ones([0:2]))
"""


def test_a_lark_file_in_llguidances_dialect_is_judged_against_llguidance_only(files):
    """`--dialect llguidance`: xg2ref and its oracle read the file as llguidance does and llguidance
    is compared with it (its differences are by design: forced text); the replay commands keep
    the dialect. Read in xgrammar's dialect, the file is refused."""
    pytest.importorskip("llguidance")
    tmp, _, _, vocab = files
    lark = tmp / "perm.lark"
    lark.write_text(PERMUTATION_LARK)
    status, report = _run([str(lark), "--vocab", vocab, "--against", "llguidance", "--dialect", "llguidance"], tmp)
    assert status == 0 and report["cases"][0]["verdicts_oracle"] > 0
    assert not [d for d in report["disagreements"] if d["engine"] == "xg2ref"]
    assert all(d["by_design"] for d in report["disagreements"] if d["engine"] == "llguidance")
    assert all("--dialect llguidance" in d["replay"] for d in report["disagreements"])
    assert main(["diff", str(lark), "--vocab", vocab, "--against", "none", "--no-progress"]) == 2
