"""Views of TagDispatch (XGrammar-2 §3.2, Fig. 3 and Table 2): the Aho-Corasick automaton, drawn,
and its size beside plain EBNF; and a plain-text table printer the notebooks share."""

from __future__ import annotations

import random
from typing import Optional, Sequence as Seq

import numpy as np

# The engine's modules this view reads (it is the one place outside the engine that may).
from ...tools.bench.tagdispatch import plain_ebnf
from ...intrinsics.tag_dispatch import AhoCorasick
from .grammar_fsm import _draw_graph, _layers


# ---- TagDispatch (XGrammar-2 §3.2) -------------------------------------------------------------


def _text(data: bytes) -> str:
    return data.decode("utf-8", "backslashreplace")


def aho_corasick(tags: Seq, excludes: Seq = ()) -> dict:
    """The Aho-Corasick automaton TagDispatch runs over free text (intrinsics/tag_dispatch.py), as
    plain data: nodes (id, prefix spelled by the trie path, tag or exclude ending there, fail
    link, blocked: some exclude ends there or at a suffix), goto edges (src, character, dst) and
    the counts Table 2 reports (states; transitions = goto edges + failure links).

    Example: aho_corasick(["he", "she"])["states"] == 6  (the root, h, he, s, sh, she)
    """
    tags = [t.encode() if isinstance(t, str) else bytes(t) for t in tags]
    excludes = [t.encode() if isinstance(t, str) else bytes(t) for t in excludes]
    ac = AhoCorasick(tags + excludes, first_exclude=len(tags))
    prefix = {0: b""}
    for node in range(ac.num_states):
        for b, child in ac.goto[node].items():
            prefix[child] = prefix[node] + bytes((b,))
    nodes = []
    for node in range(ac.num_states):
        own = ac.own[node]
        nodes.append({"id": node, "prefix": _text(prefix[node]), "fail": ac.fail[node],
                      "tag": _text(tags[own]) if 0 <= own < len(tags) else None,
                      "exclude": _text(excludes[own - len(tags)]) if own >= len(tags) else None,
                      "blocked": bool(ac.blocked[node])})
    goto = sorted((n, _text(bytes((b,))), d) for n in range(ac.num_states) for b, d in ac.goto[n].items())
    return {"nodes": nodes, "goto": goto, "states": ac.num_states, "transitions": ac.num_transitions()}


def draw_aho_corasick(view: dict, ax=None, title: Optional[str] = None, dispatch: Optional[dict] = None):
    """Draw an `aho_corasick` view: the trie left to right (black goto edges), failure links to
    nodes other than the root dashed red, double circles where a tag ends, grey where an exclude
    blocks. `dispatch` (tag -> rule name) adds, from each tag's node, a blue edge `<rule>` back to
    the root: the dispatched sub-grammar, then free text again (XGrammar-2 Figure 3). Returns
    the axes.

    Example: draw_aho_corasick(aho_corasick(["he", "she", "his", "hers"]))
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle

    n = view["states"]
    edges = [(s, f'"{c}"', d, "goto") for s, c, d in view["goto"]]
    edges += [(v["id"], "fail", v["fail"], "fail") for v in view["nodes"] if v["id"] and v["fail"]]
    edges += [(v["id"], f"<{dispatch[v['tag']]}>", 0, "rule") for v in view["nodes"]
              if dispatch and v["tag"] in dispatch]
    if ax is None:
        longest = max(len(v["prefix"]) for v in view["nodes"])
        _, ax = plt.subplots(figsize=(1.3 * max(3, longest + 1), 0.9 * n ** 0.75 + 1))
    pos = _layers(n, 0, [e for e in edges if e[3] == "goto"])
    finals = {v["id"] for v in view["nodes"] if v["tag"]}
    _draw_graph(ax, pos, finals, 0, edges, title, dashed_kinds=("fail",))
    for v in view["nodes"]:
        x, y = pos[v["id"]]
        if v["blocked"]:
            ax.add_patch(Circle((x, y), 0.18, fc="lightgrey", ec="black", zorder=3.5))
            ax.text(x, y, str(v["id"]), ha="center", va="center", fontsize=8, zorder=5)
        label = v["tag"] or v["exclude"]
        if label:
            ax.text(x, y - 0.3, ("tag " if v["tag"] else "exclude ") + repr(label), ha="center", va="top",
                    fontsize=7, color="tab:green" if v["tag"] else "tab:gray")
    return ax


def plain_tag_dispatch(tags: Seq[str], rules: Seq[str], loop: bool = True) -> str:
    """The rules of a TagDispatch over ASCII `tags` written in plain EBNF, one rule per automaton
    state (`td_0` is the dispatch itself); the language is the intrinsic's (xg2ref/tools/bench/tagdispatch.py).

    Example: plain_tag_dispatch(["<a>"], ["a"]).count("::=") == 4
    """
    return plain_ebnf(list(tags), list(rules), loop)


def tag_dispatch_sizes(tags: Seq[str]) -> dict:
    """XGrammar-2 Table 2 for one tag set: number and total length of the tags, automaton states
    and transitions, and the size of the grammar with the intrinsic against plain EBNF (rules and
    bytes of `root` plus the dispatch rules, each tag dispatching to one rule `args`).

    Example: tag_dispatch_sizes(["<a>", "<b>"])["ac_states"] == 6  (the root, "<", "<a", "<a>", "<b", "<b>")
    """
    tags = list(tags)
    ac = AhoCorasick([t.encode() for t in tags])
    pairs = ", ".join(f'("{t}", args)' for t in tags)
    with_td = f"root ::= TagDispatch({pairs})\n"
    plain = "root ::= td_0\n" + plain_ebnf(tags, ["args"] * len(tags))
    return {"tags": len(tags), "total_length": sum(len(t) for t in tags), "ac_states": ac.num_states,
            "ac_transitions": ac.num_transitions(), "td_rules": with_td.count("::="),
            "td_bytes": len(with_td.encode()), "ebnf_rules": plain.count("::="), "ebnf_bytes": len(plain.encode())}


def tag_dispatch_table(tag_sets: Seq[Seq[str]], tokenizer_info, args: str = 'args ::= "{" [^}]* "}"') -> list[dict]:
    """XGrammar-2 Table 2 with compile times: for each tag set, `tag_dispatch_sizes` plus the
    milliseconds to compile the grammar with the intrinsic (`td_ms`) and in plain EBNF
    (`ebnf_ms`) against `tokenizer_info` (no grammar cache; every tag dispatches to `args`).
    xg2ref/tools/bench/tagdispatch.py runs the same on the BFCL tool names and Llama-3.

    Example: tag_dispatch_table([random_tags(5)], xgr.TokenizerInfo([b"a", b"{"]))[0]["ebnf_rules"]
    """
    import time

    from ...compiler import GrammarCompiler

    compiler = GrammarCompiler(tokenizer_info, cache_enabled=False)
    compiler.compile_grammar(f'root ::= TagDispatch(("<w>", args))\n{args}\n')  # warm-up, not timed
    rows = []
    for tags in tag_sets:
        tags = list(tags)
        row = tag_dispatch_sizes(tags)
        pairs = ", ".join(f'("{t}", args)' for t in tags)
        for key, text in (("td_ms", f"root ::= TagDispatch({pairs})\n{args}\n"),
                          ("ebnf_ms", "root ::= td_0\n" + plain_ebnf(tags, ["args"] * len(tags)) + args + "\n")):
            start = time.perf_counter()
            compiler.compile_grammar(text)
            row[key] = round((time.perf_counter() - start) * 1e3, 1)
        rows.append(row)
    return rows


def random_tags(n: int, length: int = 10, seed: int = 0) -> list[str]:
    """`n` distinct random lowercase tags of `length` letters (seeded), the shape Table 2 uses
    (total length = 10 x number of tags).

    Example: random_tags(2, 4, seed=1) == ["eszy", "cidp"]
    """
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        tag = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(length))
        if tag not in out:
            out.append(tag)
    return out


# ---- printing -----------------------------------------------------------------------------------


def format_table(rows: Seq[dict], columns: Optional[Seq[str]] = None, max_width: int = 60) -> str:
    """Rows of dicts as an aligned text table (lists print as their length, long cells cut).

    Example: format_table([{"a": 1, "b": "x"}]) == 'a  b\\n-  -\\n1  x'
    """
    if not rows:
        return "(no rows)"
    columns = list(columns or rows[0].keys())

    def cell(v) -> str:
        if isinstance(v, (list, tuple)):
            v = ", ".join(map(str, v)) if v and all(isinstance(x, str) for x in v) else len(v)
        text = str(v)
        return text if len(text) <= max_width else text[:max_width - 1] + "…"

    body = [[cell(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(line[i]) for line in body)) for i, c in enumerate(columns)]
    numeric = [all(isinstance(r.get(c), (int, float, np.integer)) for r in rows) for c in columns]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for line in body:
        lines.append("  ".join(v.rjust(w) if num else v.ljust(w)
                               for v, w, num in zip(line, widths, numeric)).rstrip())
    return "\n".join(lines)
