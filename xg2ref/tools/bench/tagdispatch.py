"""`xg2ref bench tagdispatch`: XGrammar-2 Table 2, TagDispatch against the same language in
plain EBNF.

For 5, 20, 50 and 100 tags (`<function=NAME>` for the first tool names of
../shared/data/bfcl/tool_pool_100.json), the size of the Aho–Corasick automaton (states; goto
edges plus failure links) and the size of the equivalent grammar without the intrinsic
(`plain_ebnf`: one rule per automaton state, over characters), with the time to compile each
against the Llama-3 vocabulary.

`plain_ebnf` writes the automaton of `tag_dispatch.py` as right-linear rules. For an ASCII tag
set and UTF-8 text it accepts exactly the strings TagDispatch accepts (tests/test_tag_dispatch.py
checks this on random strings):

    state n, ends no tag     s_n ::= "" | "c" s_m (one per character c with step(n, c) = m
                                                  not the root) | [^c1 c2 ...] s_root
    state n, ends tag t      s_n ::= rule_t s_root (or rule_t without the loop)
                                     | "c" s_m (one per trie child)
"""

from __future__ import annotations

import json
import os
import time
from typing import Callable

from ...grammar.printer import print_expr
from ...intrinsics.tag_dispatch import AhoCorasick
from ...grammar.ir import ByteString

TAG_COUNTS = (5, 20, 50, 100)


def plain_ebnf(tags: list[str], rules: list[str], loop: bool = True, prefix: str = "td") -> str:
    """The rules of a TagDispatch over `tags` (ASCII) dispatching to `rules`, as plain EBNF;
    the first rule, `{prefix}_0`, is the TagDispatch's own."""
    if any(not t.isascii() for t in tags):
        raise ValueError("plain_ebnf takes ASCII tags")
    ac = AhoCorasick([t.encode() for t in tags])
    alphabet = sorted({b for t in tags for b in t.encode()})
    lines = []
    for node in range(ac.num_states):
        alts = []
        own = ac.own[node]
        if own >= 0:
            alts.append(f"{rules[own]} {prefix}_0" if loop else rules[own])
            moves = {b: ac.goto[node][b] for b in sorted(ac.goto[node])}
        else:
            alts.append('""')
            moves = {b: ac.step(node, b) for b in alphabet}
            moves = {b: m for b, m in moves.items() if m != 0}
            others = "".join(_class_char(b) for b in sorted(moves))
            alts.append(f"[^{others}] {prefix}_0" if others else f"[^] {prefix}_0")
        for b, m in moves.items():
            alts.append(f"{print_expr(ByteString(bytes([b])))} {prefix}_{m}")
        lines.append(f"{prefix}_{node} ::= " + " | ".join(alts))
    return "\n".join(lines) + "\n"


def _class_char(b: int) -> str:
    c = chr(b)
    return "\\" + c if c in "]\\^-" else c


def tool_tags(data_dir: str, n: int) -> list[str]:
    path = os.path.join(data_dir, "bfcl", "tool_pool_100.json")
    with open(path, encoding="utf-8") as f:
        tools = json.load(f)
    names = [t["name"] if "name" in t else t["function"]["name"] for t in tools]
    if n > len(names):
        raise ValueError(f"{path} has {len(names)} tools, fewer than {n}")
    return [f"<function={name}>" for name in names[:n]]


def bench_tagdispatch(data_dir: str, vocab: str = "llama3", out: Callable[[str], None] = print) -> int:
    from ...compiler import GrammarCompiler
    from ...tokenizer_info import TokenizerInfo

    info = TokenizerInfo.from_quicktok(vocab)
    compiler = GrammarCompiler(info, cache_enabled=False)
    head = (f"{'tags':>5}{'AC states':>11}{'AC trans.':>11}{'TD rules':>10}{'TD bytes':>10}{'TD ms':>9}"
            f"{'EBNF rules':>12}{'EBNF bytes':>12}{'EBNF ms':>10}")
    out(head)
    out("-" * len(head))
    for n in TAG_COUNTS:
        tags = tool_tags(data_dir, n)
        body = 'args ::= "{" [^}]* "}" "</function>"\n'
        pairs = ", ".join(f'("{t}", args)' for t in tags)
        with_td = f"root ::= TagDispatch({pairs})\n" + body
        plain = "root ::= td_0\n" + plain_ebnf(tags, ["args"] * n) + body
        ac = AhoCorasick([t.encode() for t in tags])
        start = time.perf_counter()
        compiler.compile_grammar(with_td)
        td_ms = (time.perf_counter() - start) * 1e3
        start = time.perf_counter()
        compiler.compile_grammar(plain)
        plain_ms = (time.perf_counter() - start) * 1e3
        out(f"{n:>5}{ac.num_states:>11}{ac.num_transitions():>11}{with_td.count('::='):>10}"
            f"{len(with_td.encode()):>10}{td_ms:>9.1f}{plain.count('::='):>12}{len(plain.encode()):>12}"
            f"{plain_ms:>10.1f}")
    out("(TD = with the TagDispatch intrinsic, EBNF = the same language in plain EBNF; "
        "compile times with the Llama-3 vocabulary, one thread)")
    return 0
