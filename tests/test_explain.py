"""`xg2ref explain`: verdicts, the failing byte, the items in the user's rule names, stop and
special tokens, token budgets (xg2ref/tools/explain.py)."""

from __future__ import annotations

import json

import pytest

from xg2ref.tools.cli import main
from xg2ref.tools.explain import explain_bytes
from xg2ref.grammar.grammar import Grammar
from xg2ref.oracle.recognizer import Recognizer

GRAMMAR = '''root ::= "{" ws pair (ws "," ws pair)* ws "}"
pair ::= key ws ":" ws value
key ::= "\\"" [a-z]+ "\\""
value ::= number | "true" | "false"
number ::= [0-9]+
ws ::= [ ]*
'''


@pytest.fixture()
def files(tmp_path):
    grammar = tmp_path / "g.ebnf"
    grammar.write_text(GRAMMAR)
    vocab = tmp_path / "vocab.json"
    vocab.write_text(json.dumps(["{", "}", '"a"', ": ", "1", "</s>", "tru", "e,"]))
    return str(grammar), str(vocab)


def test_a_rejected_byte_is_shown_with_the_items_in_the_users_rule_names(files, capsys):
    grammar, _ = files
    assert main(["explain", grammar, "--prefix", '{"ab": ', "--text", "tru,"]) == 1
    out = capsys.readouterr().out
    assert "rejected at byte 3 of the continuation (byte 10 of the input): ','" in out
    # `value` is small enough to be inlined by the compiler; explain keeps the user's rule
    assert 'value ::= "tru" • "e"  @7' in out


def test_an_allowed_continuation_exits_0(files, capsys):
    grammar, _ = files
    assert main(["explain", grammar, "--prefix", '{"ab": 1', "--text", "}"]) == 0
    assert "is a complete sentence" in capsys.readouterr().out


def test_stop_and_special_tokens(files, capsys):
    grammar, vocab = files
    assert main(["explain", grammar, "--prefix", '{"a": 1', "--token", "5", "--vocab", vocab]) == 1
    out = capsys.readouterr().out
    assert "not a complete sentence" in out and "root ::=" in out
    assert main(["explain", grammar, "--prefix", '{"a": 1}', "--token", "5", "--vocab", vocab]) == 0
    assert main(["explain", grammar, "--prefix", '{"a": ', "--token", "6", "--vocab", vocab]) == 0
    assert main(["explain", grammar, "--prefix", '{"a": ', "--token", "7", "--vocab", vocab]) == 1


def test_a_used_up_token_budget_is_named(tmp_path, capsys):
    grammar = tmp_path / "budget.ebnf"
    grammar.write_text('root ::= word "x"\nword[max_tokens=1] ::= [a-z]+\n')
    vocab = tmp_path / "v.json"
    vocab.write_text(json.dumps(["a", "x", "</s>"]))
    assert main(["explain", str(grammar), "--token", "0", "--vocab", str(vocab)]) == 0
    assert main(["explain", str(grammar), "--prefix", "a", "--token", "0", "--vocab", str(vocab)]) == 1
    out = capsys.readouterr().out
    assert "a token budget decides" in out and "word (max_tokens=1)" in out and "used up" in out


def test_bad_input_is_a_usage_error(files, capsys):
    grammar, vocab = files
    assert main(["explain", grammar, "--token", "3"]) == 2  # no --vocab
    assert main(["explain", grammar, "--token", "99", "--vocab", vocab]) == 2
    assert main(["explain", grammar, "--text", "zz", "--hex"]) == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("prefix, text", [(b'{"a": 1', b", "), (b'{', b'"b":2 }'), (b'{"q"', b" :tr"),
                                          (b"", b"{}"), (b'{"a":1}', b" "), (b'{"', b'A"')])
def test_verdicts_equal_the_oracle(prefix, text):
    grammar = Grammar.from_ebnf(GRAMMAR)
    assert explain_bytes(grammar, prefix, text).allowed == Recognizer(grammar.ir).is_prefix(prefix + text)


def test_a_schema_file_is_explained_through_its_conversion(tmp_path, capsys):
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}},
                                  "required": ["name"]}))
    assert main(["explain", str(schema), "--prefix", '{"name": "abc', "--text", '"}']) == 0
    assert main(["explain", str(schema), "--prefix", '{"name": "abc', "--text", 'd']) == 1
    assert "rejected at byte 0 of the continuation (byte 13 of the input): 'd'" in capsys.readouterr().out
