"""`xg2ref replay` (xg2ref/tools/replay.py) and the user's files as cases (xg2ref/tools/user_cases.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import xg2ref as xgr
from xg2ref.tools.cli import main
from xg2ref.oracle.engines import XG2RefEngine
from xg2ref.tools.replay import read_log, replay
from xg2ref.tools.user_cases import CaseError, guess_kind, load_user_case

GRAMMAR = '''root ::= "{" ws pair (ws "," ws pair)* ws "}"
pair ::= key ws ":" ws value
key ::= "\\"" [a-z]+ "\\""
value ::= number | "true" | "false"
number ::= [0-9]+
ws ::= [ ]*
'''
VOCAB = ["{", "}", '"a"', ": ", "1", "</s>", "tru", "e,", "2", ","]


@pytest.fixture()
def files(tmp_path):
    grammar = tmp_path / "g.ebnf"
    grammar.write_text(GRAMMAR)
    vocab = tmp_path / "vocab.json"
    vocab.write_text(json.dumps(VOCAB))
    return tmp_path, str(grammar), str(vocab)


def _log(tmp_path, ids, name="log.txt", as_json=False):
    path = tmp_path / name
    path.write_text(json.dumps(ids) if as_json else "\n".join(map(str, ids)) + "\n")
    return str(path)


def test_a_log_inside_the_language(files, capsys):
    tmp, grammar, vocab = files
    log = _log(tmp, [0, 2, 3, 4, 8, 1, 5], as_json=True)
    assert main(["replay", grammar, "--tokens", log, "--vocab", vocab, "--against", "none"]) == 0
    out = capsys.readouterr().out
    assert "stays in the language; it ends with a complete sentence" in out


def test_the_step_that_leaves_the_language(files, capsys):
    tmp, grammar, vocab = files
    log = _log(tmp, [0, 2, 3, 6, 7, 1])  # {"a": tru e, }  -- a member must follow ","
    assert main(["replay", grammar, "--tokens", log, "--vocab", vocab, "--against", "none"]) == 1
    assert "leaves the language at step 5 (token 1)" in capsys.readouterr().out


class _Flipped:
    """xg2ref with one token's bit flipped from step `at` on: a wrong engine."""

    name = "flipped"

    def __init__(self, info, token, at):
        self.inner, self.token, self.at = XG2RefEngine(info), token, at

    def compile(self, text, root="root"):
        matcher = self.inner.compile(text, root)
        outer = self

        class M:
            steps = 0

            def bool_mask(self):
                mask = matcher.bool_mask().copy()
                if self.steps >= outer.at:
                    mask[outer.token] = not mask[outer.token]
                return mask

            def accept_token(self, t):
                self.steps += 1
                return matcher.accept_token(t)

            def is_completed(self):
                return matcher.is_completed()

        return M()


def test_a_wrong_engine_is_caught_at_its_first_wrong_step():
    info = xgr.TokenizerInfo([v.encode() for v in VOCAB], stop_token_ids=[5])
    case = load_user_case(GRAMMAR)
    engines = {"xg2ref": XG2RefEngine(info), "flipped": _Flipped(info, token=9, at=2)}
    result = replay(case, info, [0, 2, 3, 4, 9, 2, 3, 8, 1], engines)
    assert result.first_wrong == {"flipped": 2}
    assert result.steps[2].wrong["flipped"] == [9]
    assert "xg2ref" not in result.first_wrong and result.left_at is None and result.complete
    assert result.exit_status() == 1


def test_log_formats_and_bad_logs(files, capsys):
    assert read_log("[1, 2, 3]") == [1, 2, 3]
    assert read_log("1\n2  # a comment\n\n3\n") == [1, 2, 3]
    with pytest.raises(ValueError):
        read_log("1\nx\n")
    tmp, grammar, vocab = files
    assert main(["replay", grammar, "--tokens", _log(tmp, [99]), "--vocab", vocab, "--against", "none"]) == 2
    assert main(["replay", grammar, "--tokens", str(tmp / "missing"), "--vocab", vocab]) == 2


def test_kinds_are_guessed_from_the_file(tmp_path):
    assert guess_kind("a.gbnf", "") == "ebnf" and guess_kind("a.lark", "") == "lark"
    assert guess_kind("x.json", '{"type": "object"}') == "json_schema"
    assert guess_kind("x.json", '{"type": "structural_tag", "format": {}}') == "structural_tag"
    assert guess_kind("x.txt", 'root ::= "a"') == "ebnf" and guess_kind("x", "start: A\nA: \"a\"") == "lark"
    with pytest.raises(CaseError, match="pass --kind"):
        guess_kind("x.txt", "hello")
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}))
    case = load_user_case(str(schema), options={"any_whitespace": False})
    assert case.kind == "json_schema" and case.options == {"any_whitespace": False}
    assert xgr.testing._is_grammar_accept_string(case.grammar(), '{"a": 1}')
    assert not xgr.testing._is_grammar_accept_string(case.grammar(), '{ "a": 1}')
    regex = tmp_path / "r.regex"
    regex.write_text("[0-9]{2}\n")
    assert load_user_case(str(regex)).spec == "[0-9]{2}"


@pytest.mark.xgrammar
def test_xgrammar_agrees_on_a_schema_log(tmp_path, capsys):
    pytest.importorskip("xgrammar")
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}))
    vocab = tmp_path / "v.json"
    vocab.write_text(json.dumps(['{"', "a", '": ', "1", "2", "}", "</s>"]))
    log = _log(tmp_path, [0, 1, 2, 3, 4, 5, 6])
    assert main(["replay", str(schema), "--tokens", log, "--vocab", str(vocab), "--against", "xgrammar"]) == 0
    out = capsys.readouterr().out
    assert "xgrammar" in out and "first disagrees" not in out
