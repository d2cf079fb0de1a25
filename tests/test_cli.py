"""The `xg2ref` command line: exit statuses and messages of check, mask, trace, fsm, cases, diff."""

import json

import pytest

from xg2ref.tools.cli import main

TINY = 'root ::= "ab" | "ac" | "b"'
# id:        0     1     2      3      4     5        6
TINY_VOCAB = ["a", "b", "ab", "ac", "c", "</s>", "abc"]


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def vocab_file(tmp_path):
    path = tmp_path / "vocab.json"
    path.write_text(json.dumps(TINY_VOCAB))
    return str(path)


@pytest.mark.parametrize("grammar, string, status, message", [
    ("json", '{"a": [1, 2]}', 0, "accepted: a complete sentence"),
    ("json", '{"a": [1, 2', 1, "only a prefix"),
    ("json", '{"a": [1, 2}', 1, "rejected at byte 11"),
    ("arithmetic", "1+2=3\n", 0, "accepted"),
    ("recursion", "<aa>;[a,b]", 0, "accepted"),
    ("recursion", "[a,,b]", 1, "rejected at byte 3"),
    ('root ::= "a"+ [0-9]', "aa7", 0, "accepted"),
    ('root ::= "中" "b"', "中", 1, "only a prefix"),
])
def test_check_status_and_message(capsys, grammar, string, status, message):
    have, out, _ = run(capsys, "check", grammar, string)
    assert have == status
    assert message in out


def test_check_rejection_says_what_was_expected(capsys):
    status, out, _ = run(capsys, "check", 'root ::= "x" [0-9a-c]+ ";"', "x12z;")
    assert status == 1
    assert "rejected at byte 3 (line 1, column 4): 'z'" in out
    assert "read so far: 'x12'" in out
    assert "expected:    [0-9] [;] [a-c]" in out


def test_check_partial_accepts_a_viable_prefix(capsys):
    assert run(capsys, "check", "json", '{"a":')[0] == 1
    status, out, _ = run(capsys, "check", "--partial", "json", '{"a":')
    assert status == 0
    assert "expected next:" in out


def test_check_hex_input_and_multibyte_expectation(capsys):
    status, out, _ = run(capsys, "check", "--hex", 'root ::= "\\u00e9"', "c3")
    assert status == 1 and "only a prefix" in out and "[\\xa9]" in out
    status, out, _ = run(capsys, "check", "--hex", 'root ::= "\\u00e9"', "c3a9")
    assert status == 0


def test_check_grammar_file_and_root(capsys, tmp_path):
    path = tmp_path / "g.ebnf"
    path.write_text('start ::= "a" other\nother ::= [0-9]\n')
    assert run(capsys, "check", str(path), "a1", "--root", "start")[0] == 0
    assert run(capsys, "check", str(path), "a1", "--root", "other")[0] == 1


@pytest.mark.parametrize("prefix, allowed", [
    ("", [0, 1, 2, 3]),  # a, b, ab, ac; not c, abc, </s>
    ("a", [1, 4]),  # b, c
    ("ab", [5]),  # complete: only the stop token
])
def test_mask_on_a_small_vocabulary(capsys, vocab_file, prefix, allowed):
    status, out, _ = run(capsys, "mask", TINY, "--prefix", prefix, "--vocab", vocab_file)
    assert status == 0
    assert out.startswith(f"{len(allowed)} of 7 tokens allowed")
    listed = [int(line.split()[0]) for line in out.splitlines()[1:]]
    assert listed == allowed


def test_mask_limit_token_and_stop_marks(capsys, vocab_file):
    status, out, _ = run(capsys, "mask", TINY, "--prefix", "ab", "--vocab", vocab_file, "--token", "6",
                         "--token", "5")
    assert status == 0
    assert "5  b'</s>'  <stop>" in out
    assert "token 6 b'abc': rejected" in out
    assert "token 5 b'</s>' <stop>: allowed" in out
    status, out, _ = run(capsys, "mask", TINY, "--vocab", vocab_file, "--limit", "1")
    assert "... 3 more (--limit)" in out


def test_mask_with_a_dead_prefix(capsys, vocab_file):
    status, out, _ = run(capsys, "mask", TINY, "--prefix", "c", "--vocab", vocab_file)
    assert status == 1
    assert "the prefix is not viable" in out and "rejected at byte 0" in out


@pytest.mark.jit_only
def test_mask_prefix_hex_on_llama3(capsys):
    status, out, _ = run(capsys, "mask", 'root ::= "ab" [0-9]', "--prefix-hex", "6162", "--limit", "3")
    assert status == 0
    assert out.startswith("10 of 128,256 tokens allowed after 'ab'")


def test_trace_prints_dotted_items_per_byte(capsys):
    status, out, _ = run(capsys, "trace", 'root ::= "(" root ")" | ""', "(()")
    assert status == 0
    assert "set 0: nothing read" in out
    assert "set 3: after byte 2 ')' (0x29)" in out
    assert "•" in out and "@1" in out
    assert out.rstrip().endswith("3 bytes read, a prefix, not a complete sentence")


def test_trace_stops_at_a_rejected_byte(capsys):
    status, out, _ = run(capsys, "trace", 'root ::= "ab"', "ax")
    assert status == 1
    assert "set 1: after byte 0 'a'" in out and "rejected at byte 1" in out


def test_fsm_of_one_rule_and_of_all(capsys):
    grammar = 'root ::= item ("," item)*\nitem ::= [a-z]+ | "(" root ")"'
    status, out, _ = run(capsys, "fsm", grammar, "item")
    assert status == 0
    assert out.startswith("rule item\n    start 0")
    assert "[a-z] ->" in out and "<root> ->" in out
    status, out, _ = run(capsys, "fsm", grammar)
    assert "rule root (root)" in out and "rule item" in out
    status, _, err = run(capsys, "fsm", grammar, "nothing")
    assert status == 2 and "no rule 'nothing'" in err


@pytest.mark.parametrize("command", ["check", "trace", "mask", "fsm"])
def test_grammar_errors_exit_2_with_a_caret(capsys, command):
    argv = [command, 'root ::= "a" | ', "a"] if command in ("check", "trace") else [command, 'root ::= "a" | ']
    status, out, err = run(capsys, *argv)
    assert status == 2
    assert "EBNF parser error at line 1, column 16" in err
    assert err.splitlines()[-1].endswith("^") and "Traceback" not in err + out


def test_unknown_grammar_and_vocab_exit_2(capsys):
    status, _, err = run(capsys, "check", "no-such-case", "x")
    assert status == 2 and "cases: json" in err
    status, _, err = run(capsys, "mask", "json", "--vocab", "no-such-vocab")
    assert status == 2 and "unknown vocabulary" in err


def test_cases_lists_the_suite(capsys):
    status, out, _ = run(capsys, "cases")
    assert status == 0
    names = [line.split()[0] for line in out.splitlines()]
    assert names[:2] == ["json", "arithmetic"] and "recursion" in names


@pytest.mark.jit_only
def test_diff_oracle_only_writes_a_report(capsys, tmp_path):
    report = tmp_path / "report.json"
    status, out, _ = run(capsys, "diff", "--against", "none", "--cases", "list", "--quick", "--no-progress",
                         "--report", str(report))
    assert status == 0
    assert out.splitlines()[1].split()[0] == "case" and "\nlist " in out and out.rstrip().endswith(str(report))
    data = json.loads(report.read_text())
    assert data["exit_status"] == 0 and data["reference"] is None
    assert data["cases"][0]["name"] == "list" and data["cases"][0]["strings"] > 0


def test_diff_unknown_case_exits_2(capsys):
    status, _, err = run(capsys, "diff", "--against", "none", "--cases", "nope", "--no-progress")
    assert status == 2 and "unknown suite case" in err


def test_explain_refuses_an_inexact_schema_unless_asked_to_approximate(capsys, tmp_path):
    """A schema with a keyword xg2ref cannot enforce is refused by name and path (exit 2);
    `--approximate` reads it as the superset, for this command only."""
    import os

    path = tmp_path / "tags.json"
    path.write_text(json.dumps({"type": "array", "items": {"type": "string"}, "uniqueItems": True}))
    status, _, err = run(capsys, "explain", str(path), "--prefix", "[", "--text", '"a"')
    assert status == 2 and "$.uniqueItems: uniqueItems not enforced" in err
    status, out, _ = run(capsys, "explain", str(path), "--prefix", "[", "--text", '"a"', "--approximate")
    assert status == 0, out
    assert "XG2REF_JSON_SCHEMA_APPROXIMATE" not in os.environ


def test_classes_saves_the_token_classes_of_a_grammar(capsys, tmp_path, vocab_file):
    """`xg2ref classes`: under [a-c]+ every token of letters is congruent (one class); "</s>" is
    valid nowhere; the saved file loads, and --max-frontier 0 is bad input."""
    from xg2ref.token_classes import TokenClasses

    out_dir = tmp_path / "out"
    status, out, _ = run(capsys, "classes", "root ::= [a-c]+", "--vocab", vocab_file, "-o", str(out_dir),
                         "--no-progress")
    assert status == 0 and out.startswith("displacement: 1 regular classes") and "written to" in out
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["regular_classes"] == 1 and summary["fallback_tokens"] == 0
    classes = TokenClasses.load(out_dir / "classes.npz")
    assert len({int(classes.class_of[t]) for t in (0, 1, 2, 3, 4, 6)}) == 1
    assert classes.class_of[5] != classes.class_of[0]
    status, _, err = run(capsys, "classes", "root ::= [a-c]+", "--vocab", vocab_file, "-o", str(out_dir),
                         "--max-frontier", "0")
    assert status == 2 and "--max-frontier" in err


@pytest.mark.jit_only
def test_diff_against_engines_run_over_token_classes(capsys):
    """`--against classes:xg2ref,classes:xgrammar` on the bundled suite: each engine run over its
    token classes answers as the oracle does."""
    pytest.importorskip("xgrammar")
    status, out, _ = run(capsys, "diff", "--cases", "arithmetic", "list", "--against", "classes:xg2ref,classes:xgrammar",
                         "--quick", "--no-progress", "--shrink-seconds", "0", "--jobs", "1")
    assert status == 0, out
    assert "== against classes:xg2ref" in out and "== against classes:xgrammar" in out
    assert "xg2ref vs classes:xgrammar: 0 verdicts" in out


def test_diff_unknown_engine_exits_2(capsys):
    status, _, err = run(capsys, "diff", "--against", "bogus", "--quick", "--no-progress")
    assert status == 2 and "unknown engine 'bogus'" in err and "classes:xgrammar" in err
