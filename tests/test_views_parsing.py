"""xg2ref.views.parsing: each view against what it claims (the oracle where it can speak)."""

import matplotlib

matplotlib.use("Agg")

import pytest

import xg2ref as xgr
from xg2ref.oracle import brute_force_accepts, brute_force_mask, brute_force_next_bytes
from xg2ref.views import parsing as V

LEFT = 'root ::= expr\nexpr ::= expr "+" term | term\nterm ::= [0-9]+ | "(" expr ")"'
RIGHT = 'root ::= "a" t\nt ::= root | "b"'
NULLABLE = 'root ::= a b "c"\na ::= "x"?\nb ::= "y"*'
AMBIGUOUS = 'root ::= s\ns ::= s s | "a" | ""'
BRACKETS = 'root ::= "[" item ("," item)* "]"\nitem ::= [a-z] item | [a-z]'  # recursive: never inlined


# ---- IR and passes -----------------------------------------------------------------------------


def test_ir_outline_example():
    assert V.ir_outline('root ::= "a" b\nb ::= [0-9]') == [
        "root ::=", "  Sequence", "    ByteString b'a'", "    RuleRef b", "b ::=", "  CharClass [0-9]"]


@pytest.mark.parametrize("ebnf", [LEFT, NULLABLE, BRACKETS,
                                  'root ::= "[" ws x (ws "," ws x)* ws "]"\nx ::= "-"? [0-9]+\nws ::= [ ]*'])
def test_normalization_steps_keep_the_language(ebnf):
    steps = V.normalization_steps(ebnf)
    assert [name for name, _ in steps][:2] == ["parsed", "lower_lazy_rules"]
    assert steps[-1][0] == "compress_repetitions"
    original = xgr.Grammar.from_ebnf(ebnf).ir
    for _, text in steps:
        ir = xgr.Grammar.from_ebnf(text).ir
        assert str(xgr.Grammar.from_ebnf(text)) == text  # every stage prints and parses back
        for s in [b"", b"[a]", b"[ab,c]", b"[1, -2]", b"1+2", b"(1+2)+3", b"xc", b"yyc", b"xyc", b"c"]:
            assert brute_force_accepts(ir, s) == brute_force_accepts(original, s), (text, s)


def test_normalization_inlines_small_rules():
    steps = dict(V.normalization_steps('root ::= a "b"\na ::= "x"'))
    assert steps["parsed"] == 'root ::= a "b"\na ::= "x"\n'
    assert steps["compress_repetitions"] == 'root ::= "xb"\n'


# ---- FSMs --------------------------------------------------------------------------------------


@pytest.mark.parametrize("ebnf,rule", [('root ::= "a"+', "root"), (LEFT, "term"), ('root ::= "a" root | "b"', "root"),
                                       ('root ::= [à-é] | "-"? ("0" | [1-9] [0-9]*)', "root")])
def test_fsm_stages_end_in_the_rule_machine(ebnf, rule):
    stages = V.fsm_stages(ebnf, rule)
    assert stages[0][0] == "Thompson ε-NFA" and stages[-1][0] == "minimized"
    assert any(kind == "epsilon" for *_, kind in stages[0][1]["edges"]) or len(stages[0][1]["edges"]) == 0
    last = dict(stages[-1][1])
    built = {k: v for k, v in V.rule_fsms(ebnf, inline=False)[rule].items() if k not in ("nullable", "root")}
    assert last == built
    minimal = stages[-1][1]
    assert minimal["states"] <= stages[-2][1]["states"]
    labels = [(s, label) for s, label, _, _ in minimal["edges"]]
    assert len(labels) == len(set(labels))  # deterministic


@pytest.mark.parametrize("ebnf", ['root ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)?', 'root ::= [à-é]+ | "a"{2,3}',
                                  'root ::= ("ab" | "a")* "b"'])
def test_every_stage_reads_the_language(ebnf):
    ir = xgr.Grammar.from_ebnf(ebnf).ir
    for s in [b"", b"-", b"0", b"-0.5", b"12.", b"1.25", b"01", b"\xc3\xa0", b"\xc3\xa9\xc3\xa0", b"\xc3", b"aa",
              b"aaa", b"aaaa", b"b", b"ab", b"aab", b"ba"]:
        verdicts = V.stage_accepts(ebnf, "root", s)
        assert set(verdicts.values()) == {brute_force_accepts(ir, s)}, (s, verdicts)


def test_tail_self_calls_become_loops():
    names = [name for name, _ in V.fsm_stages('root ::= "a" root | "b"', "root")]
    assert "tail self-calls as loops" in names
    assert V.rule_fsms('root ::= "a" root | "b"')["root"]["edges"] == [(0, '"a"', 0, "byte"), (0, '"b"', 1, "byte")]


def test_rule_fsms_and_text():
    fsms = V.rule_fsms(NULLABLE, inline=False)
    assert fsms["a"]["nullable"] and fsms["b"]["nullable"] and not fsms["root"]["nullable"]
    assert fsms["root"]["root"] and not fsms["a"]["root"]
    assert V.fsm_text(V.rule_fsms('root ::= "a"')["root"]) == 'start 0, 2 states\n0: "a" -> 1\n1*:'
    assert V.rule_fsms('root ::= "ab" | "ac"')["root"]["states"] == 3


def test_utf8_pieces():
    assert V.utf8_pieces(0xE0, 0xE9) == [["[\\xc3]", "[\\xa0-\\xa9]"]]
    assert V.utf8_pieces(0x41, 0x41) == [["[A]"]]
    assert V.utf8_pieces(0x80, 0xFFFF) == [["[\\xc2-\\xdf]", "[\\x80-\\xbf]"],
                                          ["[\\xe0]", "[\\xa0-\\xbf]", "[\\x80-\\xbf]"],
                                          ["[\\xe1-\\xef]", "[\\x80-\\xbf]", "[\\x80-\\xbf]"]]


def test_drawings_draw_every_state():
    view = V.rule_fsms(BRACKETS)["root"]
    ax = V.draw_fsm(view, title="root")
    assert sum(1 for p in ax.patches if type(p).__name__ == "Circle") >= view["states"]
    ac = V.aho_corasick(["he", "she", "his", "hers"], excludes=["sh"])
    ax = V.draw_aho_corasick(ac)
    assert sum(1 for p in ax.patches if type(p).__name__ == "Circle") >= ac["states"]


# ---- the Earley chart --------------------------------------------------------------------------


@pytest.mark.parametrize("ebnf,data", [(LEFT, b"(1+23)+4"), (RIGHT, b"aaab"), (NULLABLE, b"xyyc"), (NULLABLE, b"c"),
                                       (AMBIGUOUS, b"aaa"), (BRACKETS, b"[ab,c]")])
def test_earley_trace_against_the_oracle(ebnf, data):
    """Every item is derived by one of Table 6's rules; the bytes the items of set k may scan
    are exactly the bytes the oracle lets follow data[:k]; the root ends at set k iff data[:k]
    is a sentence."""
    rows = V.earley_trace(ebnf, data)
    ir = xgr.Grammar.from_ebnf(ebnf).ir
    assert all(r["how"] != ["other"] and r["premises"] for r in rows)
    for k in range(len(data) + 1):
        here = [r for r in rows if r["set"] == k]
        assert here
        assert set().union(*(r["next_bytes"] for r in here)) == brute_force_next_bytes(ir, data[:k]), k
        ends = any(r["final"] and r["rule"] == "root" and r["origin"] == 0 for r in here)
        assert ends == brute_force_accepts(ir, data[:k]), k


def test_earley_trace_names_the_rules():
    assert [r["how"] for r in V.earley_trace('root ::= "a" b\nb ::= "c"', "ac") if r["set"] == 1] == \
        [["scan"], ["predict"]]
    rows = V.earley_trace(NULLABLE, "c")
    assert ["predict (nullable)"] in [r["how"] for r in rows if r["set"] == 0]
    rows = V.earley_trace(RIGHT, "aab", leo=False)
    assert sum(r["how"] == ["complete"] for r in rows if r["set"] == 3) == 3  # the right-recursive cascade
    rows = V.earley_trace(RIGHT, "aab")  # ... completed in one step: LEO adds the chain's last item
    assert [r["how"] for r in rows if r["set"] == 3] == [["scan"], ["leo"], ["complete"]]
    assert max(r["set"] for r in V.earley_trace(BRACKETS, "[a)b")) == 2  # stops at the rejected byte


def test_earley_trace_with_inlining_has_fewer_items():
    ebnf = 'root ::= "[" ws num (ws "," ws num)* ws "]"\nnum ::= sign? [0-9]+\nsign ::= "-"\nws ::= [ ]*'
    assert len(V.earley_trace(ebnf, "[1, -2]", inline=True)) < len(V.earley_trace(ebnf, "[1, -2]"))


def test_chart_sets_and_rollback():
    info = xgr.TokenizerInfo([b"(", b"1", b"+", b"2", b")", b"</s>"], stop_token_ids=[5])
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(LEFT))
    for t in (0, 1, 2, 3):
        assert m.accept_token(t)
    before = V.chart_sets(m)
    assert len(before) == 5
    m.rollback(2)
    after = V.chart_sets(m)
    assert after == before[:3]


# ---- the token-mask cache ----------------------------------------------------------------------

VOCAB = [b"[", b"]", b",", b"a", b"b", b"ab", b"a,", b"a]", b"a)", b"1", b",a", b"],", b"[a", b"ab,", b"</s>"]


@pytest.fixture(scope="module")
def brackets():
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[len(VOCAB) - 1])
    return info, xgr.GrammarCompiler(info, cross_grammar_cache=False).compile_grammar(BRACKETS)


def test_mask_cache_entries_partition_the_vocabulary(brackets):
    info, compiled = brackets
    rows = V.mask_cache_entries(compiled)
    regular = len(VOCAB) - 1
    assert rows and all(r["accepted"] + r["rejected"] + r["uncertain"] == regular for r in rows)
    forms = V.entry_forms(compiled)
    assert sum(forms.values()) == len(rows)
    for r in rows:
        sets = V.entry_tokens(compiled, r["state"])
        assert [len(sets[k]) for k in ("accepted", "rejected", "uncertain")] == \
            [r["accepted"], r["rejected"], r["uncertain"]]
        assert sorted(sets["accepted"] + sets["rejected"] + sets["uncertain"]) == list(range(regular))
        # the stored form is the smallest of the three (XGrammar Figure 5)
        words = (info.vocab_size + 31) // 32
        sizes = {"accepted list": r["accepted"], "rejected list": r["rejected"], "bitset": words}
        assert sizes[r["form"]] == min(sizes.values())


def test_entry_of_an_item_state(brackets):
    """In `item` after a letter, "ab" is accepted, "1" and "a)" rejected (no parent of item reads
    ")"), "a," and "a]" accepted (every parent of item reads them: ACCEPT-CTX)."""
    _, compiled = brackets
    row = next(r for r in V.mask_cache_entries(compiled) if r["item"].startswith("item ::= [a-z] •"))
    sets = V.entry_tokens(compiled, row["state"])
    ids = {tok: i for i, tok in enumerate(VOCAB)}
    assert ids[b"ab"] in sets["accepted"]
    assert ids[b"1"] in sets["rejected"] and ids[b"a)"] in sets["rejected"]
    assert ids[b"a,"] in sets["accepted"] and ids[b"a]"] in sets["accepted"]


@pytest.mark.parametrize("prefix", [b"", b"[", b"[a", b"[ab,", b"[a,b]"])
def test_mask_from_cache_every_token_and_oracle_agree(brackets, prefix):
    info, compiled = brackets
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string(prefix)
    steps = V.mask_from_cache(m)
    have = m.compute_bool_mask()
    want = brute_force_mask(xgr.Grammar.from_ebnf(BRACKETS).ir, prefix, VOCAB, stop_token_ids=[len(VOCAB) - 1])
    assert (steps["mask"] == have).all() and (V.every_token_mask(m) == have).all() and (want == have).all()
    assert set(steps["uncertain_accepted"]) | set(steps["uncertain_rejected"]) == set(steps["uncertain"])
    assert not set(steps["uncertain"]) & set(steps["accepted"])


def test_context_expansion_stages_nest(brackets):
    _, compiled = brackets
    rows = V.context_expansion(compiled)
    assert rows and all(r["same_entry"] for r in rows)
    for r in rows:
        assert set(r["uncertain"]) <= set(r["after_context"]) <= set(r["after_lookahead"]) <= set(r["ends_inside"])
        assert set(r["accepted_by_context"]) == set(r["after_context"]) - set(r["uncertain"])
        sets = V.entry_tokens(compiled, r["state"])
        assert set(r["uncertain"]) == set(sets["uncertain"])
        assert set(r["accepted_by_context"]) <= set(sets["accepted"])
        assert not (set(r["ends_inside"]) - set(r["after_context"])) & set(sets["accepted"])
    item = next(r for r in rows if r["item"].startswith("item ::= [a-z] •"))
    ids = {tok: i for i, tok in enumerate(VOCAB)}
    assert ids[b"a)"] in item["ends_inside"] and ids[b"a)"] not in item["after_context"]
    assert ids[b"a,"] in item["accepted_by_context"]


def test_lookahead_assertions_of_the_builtin_json_grammar():
    info = xgr.TokenizerInfo([b"{", b"}", b'"', b"a", b'"}]', b"</s>"], stop_token_ids=[5])
    compiled = xgr.GrammarCompiler(info).compile_builtin_json_grammar()
    la = V.lookahead_assertions(compiled)
    assert "characters_and_embrace" in la["unverified"]  # xgrammar's wrong assertion (specs/04)
    assert la["verified"]


# ---- TagDispatch -------------------------------------------------------------------------------


def test_aho_corasick_classic_example():
    ac = V.aho_corasick(["he", "she", "his", "hers"])
    assert ac["states"] == 10 and ac["transitions"] == 9 + 9
    by_prefix = {n["prefix"]: n for n in ac["nodes"]}
    assert by_prefix["she"]["tag"] == "she"
    assert ac["nodes"][by_prefix["she"]["fail"]]["prefix"] == "he"
    assert ac["nodes"][by_prefix["hers"]["fail"]]["prefix"] == "s"
    blocked = V.aho_corasick([], excludes=["abc", "xabcq"])
    assert {n["prefix"] for n in blocked["nodes"] if n["blocked"]} == {"abc", "xabc", "xabcq"}


def test_plain_tag_dispatch_reads_the_same_language():
    tags = ["<a>", "<ab>", "b>"]
    body = 'args ::= "{" [a-z]* "}"\n'
    td = xgr.Grammar.from_ebnf("root ::= TagDispatch(" + ", ".join(f'("{t}", args)' for t in tags) + ")\n" + body).ir
    plain = xgr.Grammar.from_ebnf("root ::= td_0\n" + V.plain_tag_dispatch(tags, ["args"] * 3) + body).ir
    for s in [b"", b"x", b"<a>{}", b"<a>", b"<ab>{x}y", b"<a{", b"b>{}", b"ab>{}", b"<<a>{}<", b"<a>{}<ab>{}"]:
        assert brute_force_accepts(td, s) == brute_force_accepts(plain, s), s


def test_tag_dispatch_sizes_and_random_tags():
    assert V.random_tags(2, 4, seed=1) == V.random_tags(2, 4, seed=1)
    assert all(len(t) == 10 for t in V.random_tags(5))
    row = V.tag_dispatch_sizes(["<a>", "<b>"])
    assert row["ac_states"] == 6 and row["ac_transitions"] == 10 and row["td_rules"] == 1
    assert row["ebnf_rules"] == 1 + 6


def test_format_table():
    assert V.format_table([{"a": 1, "b": "x"}]) == "a  b\n-  -\n1  x"
    assert V.format_table([]) == "(no rows)"
    assert V.format_table([{"a": [1, 2, 3]}]) == "a\n-\n3"
