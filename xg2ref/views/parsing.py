"""Views of the parsing half of the engine, as plain data for people and notebooks.

Each function looks inside one mechanism and returns lists, dicts, strings or numpy arrays:

    the grammar IR and its passes (XGrammar §3.4)        ir_outline, normalization_steps
    per-rule byte FSMs (XGrammar-2 §3.3)                  fsm_stages, stage_accepts, rule_fsms, fsm_text,
                                                          draw_fsm, utf8_pieces
    the Earley chart (XGrammar-2 §3.4, App. D Table 6,    earley_trace, chart_sets
      left half; rollback, XGrammar §3.3)
    the adaptive token-mask cache (Table 6, right half;   mask_cache_entries, entry_forms, entry_tokens,
      XGrammar §3.1, Figures 4 and 5, Algorithm 1)        mask_from_cache, every_token_mask
    context expansion and lookahead (XGrammar §3.2)       context_expansion, lookahead_assertions
    TagDispatch (XGrammar-2 §3.2, Figure 3, Table 2)      aho_corasick, draw_aho_corasick,
                                                          plain_tag_dispatch, tag_dispatch_sizes,
                                                          tag_dispatch_table, random_tags
    printing                                              format_table

Rule names are the grammar's own: `inline=False` views read the grammar normalized without
rule inlining (as `xg2ref explain` does), so no small rule disappears into its callers;
`inline=True` views, and every view of a compiled grammar or a matcher, read what the compiler
built. Items print as dotted rules (`xg2ref/earley.py`, `ItemPrinter`): the shortest path of
symbols into the item's FSM state, a dot, what may follow, and `@origin`.

What it leaves out: the views are for small grammars and vocabularies (they run in Python,
state by state); views of the mask cache ignore the per-count entries of counted repetitions
(§3.6; `xg2ref.views.runtime` shows their counts and zones) and the member sets of unordered
rules.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from typing import Iterable, Optional, Sequence as Seq

import numpy as np

# The engine's modules this view reads (it is the one place outside the engine that may).
from ..tools.bench.tagdispatch import plain_ebnf
from ..compiler import CompiledGrammar
from ..earley import EarleyParser, Item, ItemPrinter
from ..tools.explain import user_parser
from ..fsm.build import build_grammar_fsms, rule_fsm
from ..fsm.fsm import FSM, TOKEN_SYMBOL_BASE, format_byte_range
from ..fsm.utf8 import utf8_sequences
from ..grammar.grammar import Grammar
from ..grammar.ir import ByteString, CharClass, Repeat, RuleRef, children
from ..grammar.lazy import lower_lazy_rules
from ..grammar.passes import flatten, fuse_byte_strings, inline_small_rules, normalize, remove_dead_rules
from ..grammar.printer import print_expr, print_grammar
from ..grammar.repetition import REPETITION_THRESHOLD, compress_repetitions
from ..intrinsics.tag_dispatch import AhoCorasick
from ..kernels import mask_cache as MK
from ..mask_cache import KIND_BITSET, KIND_NAMES, UNBUILT, _Classifier
from ..matcher import GrammarMatcher

__all__ = [
    "ir_outline", "normalization_steps",
    "fsm_stages", "stage_accepts", "rule_fsms", "fsm_text", "draw_fsm", "utf8_pieces",
    "earley_trace", "chart_sets",
    "mask_cache_entries", "entry_forms", "entry_tokens", "mask_from_cache", "every_token_mask",
    "context_expansion", "lookahead_assertions",
    "aho_corasick", "draw_aho_corasick", "plain_tag_dispatch", "tag_dispatch_sizes", "tag_dispatch_table",
    "random_tags",
    "format_table",
]


def _grammar(grammar) -> Grammar:
    return Grammar.from_ebnf(grammar) if isinstance(grammar, str) else grammar


def _ir(grammar, inline: bool):
    """The IR the FSMs are built from: normalized (with or without inlining), repetitions
    over the compiler's threshold counted (§3.6)."""
    return compress_repetitions(normalize(_grammar(grammar).ir, inline=inline), REPETITION_THRESHOLD)


# ---- the grammar IR (XGrammar §3.4) ----------------------------------------------------------


def _node_label(node) -> str:
    if isinstance(node, ByteString):
        return f"ByteString {node.value!r}"
    if isinstance(node, CharClass):
        return f"CharClass {print_expr(node)}"
    if isinstance(node, RuleRef):
        return f"RuleRef {node.name}"
    if isinstance(node, Repeat):
        return f"Repeat {{{node.min},{'' if node.max is None else node.max}}}"
    if children(node):  # Sequence, Choice
        return type(node).__name__
    text = print_expr(node)  # an intrinsic (TagDispatch, TokenSet)
    return text if text.startswith(type(node).__name__) else f"{type(node).__name__} {text}"


def ir_outline(grammar) -> list[str]:
    """The IR tree of every rule as indented lines, one node per line.

    Example: ir_outline('root ::= "a" b\\nb ::= [0-9]')
             == ['root ::=', '  Sequence', "    ByteString b'a'", '    RuleRef b', 'b ::=', '  CharClass [0-9]']
    """
    lines = []
    for rule in _grammar(grammar).ir.rules:
        lines.append(f"{rule.name} ::=")
        stack = [(rule.body, 1)]
        while stack:
            node, depth = stack.pop()
            lines.append("  " * depth + _node_label(node))
            stack.extend((kid, depth + 1) for kid in reversed(children(node)))
    return lines


def normalization_steps(grammar) -> list[tuple[str, str]]:
    """(pass, EBNF after it) for each pass the compiler runs before building FSMs, in order:
    the parsed grammar, lower_lazy_rules, flatten, fuse_byte_strings, inline_small_rules,
    flatten, fuse_byte_strings, remove_dead_rules (`normalize`), then compress_repetitions.

    Example: normalization_steps('root ::= a "b"\\na ::= "x"')[-1] == ("compress_repetitions", 'root ::= "xb"\\n')
    """
    ir = _grammar(grammar).ir
    steps = [("parsed", print_grammar(ir))]
    for name, step in (("lower_lazy_rules", lower_lazy_rules), ("flatten", flatten),
                       ("fuse_byte_strings", fuse_byte_strings), ("inline_small_rules", inline_small_rules),
                       ("flatten", flatten), ("fuse_byte_strings", fuse_byte_strings),
                       ("remove_dead_rules", remove_dead_rules),
                       ("compress_repetitions", lambda x: compress_repetitions(x, REPETITION_THRESHOLD))):
        ir = step(ir)
        steps.append((name, print_grammar(ir)))
    return steps


# ---- per-rule byte FSMs (XGrammar-2 §3.3) -------------------------------------------------------


def _symbol(lo: int, hi: int) -> str:
    if lo == hi and 0x20 <= lo < 0x7F and lo not in (0x22, 0x5C):
        return f'"{chr(lo)}"'
    return format_byte_range(lo, hi)


def _fsm_view(fsm: FSM, rule_names: Seq[str], token_sets: Seq = ()) -> dict:
    """An FSM as plain data: states, start, finals, and (src, label, dst, kind) edges."""
    edges = []
    for s, lo, hi, d in fsm.byte_edges:
        if lo >= TOKEN_SYMBOL_BASE:
            k = lo - TOKEN_SYMBOL_BASE
            edges.append((s, str(token_sets[k]) if k < len(token_sets) else f"token set {k}", d, "token"))
        else:
            edges.append((s, _symbol(lo, hi), d, "byte"))
    edges += [(s, f"<{rule_names[r]}>", d, "rule") for s, r, d in fsm.rule_edges]
    edges += [(s, "ε", d, "epsilon") for s, d in fsm.eps_edges]
    return {"states": fsm.num_states, "start": fsm.start, "finals": sorted(fsm.finals), "edges": sorted(edges)}


def _stages(grammar, rule: str, inline: bool) -> tuple[list[tuple[str, FSM]], list[str], list]:
    ir = _ir(grammar, inline)
    names = [r.name for r in ir.rules]
    if rule not in names:
        raise ValueError(f"no rule {rule!r} after normalization; rules: {', '.join(names)}")
    r = names.index(rule)
    spec = ir.rules[r]
    counted = bool(spec.option("counted"))
    body = spec.body.body if counted else spec.body
    token_sets: dict = {}
    raw = rule_fsm(body, {n: i for i, n in enumerate(names)}, rule, token_sets)
    stages = [("Thompson ε-NFA", raw)]
    loops = (spec.option("max_tokens") is None and spec.option("max_chars") is None and not counted
             and spec.option("capture") is None)
    machine = raw
    if loops:
        looped = raw.with_tail_calls_as_loops(r)
        if looped != raw.without_epsilon():
            stages.append(("tail self-calls as loops", looped))
            machine = looped
    plain = machine.without_epsilon()
    if plain != machine:
        stages.append(("ε removed, trimmed", plain))
    dfa = plain.determinize()
    if dfa is not None:
        stages.append(("determinized", dfa))
        stages.append(("minimized", dfa.minimize()))
    return stages, names, list(token_sets)


def fsm_stages(grammar, rule: str, inline: bool = False) -> list[tuple[str, dict]]:
    """The machine of one rule after each step of its construction (fsm/build.py, fsm/fsm.py):
    Thompson's ε-NFA, tail self-calls turned into loops (only when the rule has some), ε removed
    and trimmed, determinized (subset construction), minimized (Hopcroft). The last stage is the
    rule's machine in `rule_fsms` when no rule it references is unproductive.

    Example: [name for name, _ in fsm_stages('root ::= "a"+', "root")]
             == ["Thompson ε-NFA", "ε removed, trimmed", "determinized", "minimized"]
    """
    stages, names, sets = _stages(grammar, rule, inline)
    return [(name, _fsm_view(f, names, sets)) for name, f in stages]


def stage_accepts(grammar, rule: str, data, inline: bool = False):
    """Whether the machine of each stage of `fsm_stages` spells `data` (bytes only: a path
    through a rule edge spells no bytes), stage name -> verdict; for a list of strings, a list
    of such dicts (the stages are built once).

    Example: stage_accepts('root ::= "a"+', "root", "aa") == {"Thompson ε-NFA": True, ...}
    """
    stages = _stages(grammar, rule, inline)[0]

    def one(d) -> dict[str, bool]:
        d = d.encode() if isinstance(d, str) else bytes(d)
        return {name: _runs(f, d) for name, f in stages}

    return [one(d) for d in data] if isinstance(data, list) else one(data)


def _runs(fsm: FSM, data: bytes) -> bool:
    """Run the machine as an NFA with ε-closures (no edge is rewritten first)."""
    bytes_out, _, eps_out = fsm.out_edges()

    def closure(states: set) -> set:
        stack = list(states)
        while stack:
            for d in eps_out[stack.pop()]:
                if d not in states:
                    states.add(d)
                    stack.append(d)
        return states

    current = closure({fsm.start})
    for b in data:
        current = closure({d for s in current for lo, hi, d in bytes_out[s] if lo <= b <= hi})
    return bool(current & fsm.finals)


def rule_fsms(grammar, inline: bool = True) -> dict[str, dict]:
    """Every rule's machine as the compiler builds it (with `inline`) or over the grammar as
    written (`inline=False`), keyed by rule name; each view also says `nullable` and `root`.

    Example: rule_fsms('root ::= "ab" | "ac"')["root"]["states"] == 3
    """
    fsms = build_grammar_fsms(_ir(grammar, inline))
    out = {}
    for r, (name, fsm) in enumerate(zip(fsms.rule_names, fsms.fsms)):
        view = _fsm_view(fsm, fsms.rule_names, fsms.token_sets)
        view["nullable"] = bool(fsms.nullable[r])
        view["root"] = r == fsms.root
        out[name] = view
    return out


def fsm_text(view: dict) -> str:
    """A machine view as text, one line per state (`*` marks a final state).

    Example: fsm_text(rule_fsms('root ::= "a"')["root"]) == 'start 0, 2 states\\n0: "a" -> 1\\n1*:'
    """
    lines = [f"start {view['start']}, {view['states']} states"]
    out: dict[int, list[str]] = {s: [] for s in range(view["states"])}
    for s, label, d, _ in view["edges"]:
        out[s].append(f"{label} -> {d}")
    for s in range(view["states"]):
        mark = "*" if s in view["finals"] else ""
        lines.append(f"{s}{mark}: {', '.join(out[s])}".rstrip())
    return "\n".join(lines)


def _layers(n: int, start: int, edges: list) -> dict[int, tuple[float, float]]:
    """Positions for drawing: x = BFS depth from start; within a depth, states ordered by the
    mean height of their predecessors (fewer crossings), centred on 0."""
    succ: dict[int, list[int]] = {s: [] for s in range(n)}
    pred: dict[int, list[int]] = {s: [] for s in range(n)}
    for s, _, d, _ in edges:
        succ[s].append(d)
        pred[d].append(s)
    depth = {start: 0}
    queue = deque([start])
    while queue:
        s = queue.popleft()
        for d in succ[s]:
            if d not in depth:
                depth[d] = depth[s] + 1
                queue.append(d)
    for s in range(n):
        depth.setdefault(s, max(depth.values(), default=0) + 1)
    by_depth: dict[int, list[int]] = {}
    for s in sorted(range(n), key=lambda q: (depth[q], q)):
        by_depth.setdefault(depth[s], []).append(s)
    pos: dict[int, tuple[float, float]] = {}
    for x in sorted(by_depth):
        states = by_depth[x]
        placed = [(sum(pos[p][1] for p in pred[s] if p in pos) / max(1, sum(p in pos for p in pred[s])), s)
                  for s in states]
        states = [s for _, s in sorted(placed, key=lambda t: (-t[0], t[1]))]
        for i, s in enumerate(states):
            pos[s] = (1.3 * x, (len(states) - 1) / 2.0 - i)
    return pos


def _draw_graph(ax, pos, finals, start, edges, title, dashed_kinds=("epsilon",), colors=None):
    """Circles for states, arrows for edges (merged labels for parallel edges)."""
    from matplotlib.patches import Circle, FancyArrowPatch

    colors = colors or {"byte": "black", "rule": "tab:blue", "epsilon": "tab:gray", "token": "tab:purple",
                        "goto": "black", "fail": "tab:red"}
    radius = 0.18
    merged: dict[tuple, list[str]] = {}
    for s, label, d, kind in edges:
        merged.setdefault((s, d, kind), []).append(label)
    for (s, d, kind), labels in merged.items():
        text = labels[0] if len(labels) == 1 else " | ".join(labels[:3]) + (" …" if len(labels) > 3 else "")
        (x0, y0), (x1, y1) = pos[s], pos[d]
        color = colors.get(kind, "black")
        style = "--" if kind in dashed_kinds else "-"
        if s == d:
            ax.add_patch(FancyArrowPatch((x0 - 0.08, y0 + radius), (x0 + 0.08, y0 + radius),
                                         connectionstyle="arc3,rad=-2.2", arrowstyle="-|>", mutation_scale=9,
                                         color=color, linestyle=style, lw=0.9))
            ax.text(x0, y0 + radius + 0.3, text, ha="center", va="bottom", fontsize=7, color=color)
            continue
        rad = 0.0 if 0 < x1 - x0 <= 1.3 + 1e-9 else (0.3 if x1 >= x0 else -0.3)
        ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), connectionstyle=f"arc3,rad={rad}", arrowstyle="-|>",
                                     mutation_scale=9, color=color, linestyle=style, lw=0.9,
                                     shrinkA=radius * 60, shrinkB=radius * 60))
        mx, my = (x0 + x1) / 2, (y0 + y1) / 2
        if rad:
            mx, my = mx + rad * (y1 - y0) / 2, my - rad * (x1 - x0) / 2
        ax.text(mx, my + 0.06, text, ha="center", va="bottom", fontsize=7, color=color,
                bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.8))
    for s, (x, y) in pos.items():
        ax.add_patch(Circle((x, y), radius, fill=True, fc="white", ec="black", lw=1.0, zorder=3))
        if s in finals:
            ax.add_patch(Circle((x, y), radius * 0.78, fill=False, ec="black", lw=0.8, zorder=4))
        ax.text(x, y, str(s), ha="center", va="center", fontsize=8, zorder=5)
    if start in pos:
        x, y = pos[start]
        ax.annotate("", xy=(x - radius, y), xytext=(x - radius - 0.35, y),
                    arrowprops=dict(arrowstyle="-|>", color="black", lw=0.9))
    xs = [p[0] for p in pos.values()] or [0.0]
    ys = [p[1] for p in pos.values()] or [0.0]
    ax.set_xlim(min(xs) - 0.8, max(xs) + 0.8)
    ax.set_ylim(min(ys) - 0.8, max(ys) + 0.9)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=9)
    return ax


def draw_fsm(view: dict, ax=None, title: Optional[str] = None, hide_returns: bool = False):
    """Draw a machine view with matplotlib: states left to right by distance from the start,
    double circles for final states, blue rule edges, dashed grey ε edges. With `hide_returns`,
    byte edges back into the start state are left out (a TagDispatch's free text: every byte
    not drawn returns there). Returns the axes.

    Example: draw_fsm(rule_fsms('root ::= "a" "b"*')["root"])
    """
    import matplotlib.pyplot as plt

    edges = view["edges"]
    if hide_returns:
        edges = [e for e in edges if not (e[2] == view["start"] and e[3] == "byte")]
    if ax is None:
        _, ax = plt.subplots(figsize=(1.6 * (max(2, view["states"])) ** 0.8 + 1, 2.4))
    pos = _layers(view["states"], view["start"], edges)
    return _draw_graph(ax, pos, set(view["finals"]), view["start"], edges, title)


def utf8_pieces(lo: int, hi: int) -> list[list[str]]:
    """The byte-range paths that spell the UTF-8 encodings of code points lo..hi (fsm/utf8.py).

    Example: utf8_pieces(0xE0, 0xE9) == [["[\\\\xc3]", "[\\\\xa0-\\\\xa9]"]]
    """
    return [[format_byte_range(a, b) for a, b in seq] for seq in utf8_sequences(lo, hi)]


# ---- the Earley chart (XGrammar-2 §3.4, App. D Table 6, left half) ------------------------------


def _set_items(parser: EarleyParser, k: int) -> list[Item]:
    return parser.items(k)


def _justify(parser: EarleyParser, printer: ItemPrinter, data: bytes, k: int, item: Item,
             finals_at: dict) -> list[tuple[str, str]]:
    """Which of Table 6's rules put `item` into set k, each with its premise(s), read off the
    chart: ("init" | "scan" | "predict" | "predict (nullable)" | "complete", premise text)."""
    a, fsms = parser.arrays, parser.fsms
    names = fsms.rule_names
    out = []
    s, i = item.state, item.origin
    if k == 0 and item.rule == fsms.root and s == int(a.rule_start[item.rule]) and i == 0:
        out.append(("init", f"[0, 0, {names[fsms.root]}' → • {names[fsms.root]}]"))
    if k > 0:
        x = data[k - 1]
        for p in _set_items(parser, k - 1):
            if p.origin != i:
                continue
            for e in range(a.byte_indptr[p.state], a.byte_indptr[p.state + 1]):
                if a.byte_dst[e] == s and a.byte_lo[e] <= x <= a.byte_hi[e]:
                    out.append(("scan", f"{printer.format(p)} in set {k - 1}, reads {_symbol(x, x)}"))
    here = _set_items(parser, k)
    if i == k and s == int(a.rule_start[item.rule]):
        for p in here:
            for e in range(a.ref_indptr[p.state], a.ref_indptr[p.state + 1]):
                if a.ref_rule[e] == item.rule:
                    out.append(("predict", printer.format(p)))
                    break
    for p in here:
        if p.origin != i:
            continue
        for e in range(a.ref_indptr[p.state], a.ref_indptr[p.state + 1]):
            if a.ref_dst[e] == s and fsms.nullable[a.ref_rule[e]]:
                out.append(("predict (nullable)", f"{printer.format(p)}, {names[a.ref_rule[e]]} may be empty"))
    for f in finals_at.get(k, []):
        if f.origin >= k:
            continue
        for p in _set_items(parser, f.origin):
            if p.origin != i:
                continue
            for e in range(a.ref_indptr[p.state], a.ref_indptr[p.state + 1]):
                if a.ref_rule[e] == f.rule and a.ref_dst[e] == s:
                    out.append(("complete", f"{printer.format(f)} ends; {printer.format(p)} in set {f.origin}"))
    return out


def _parser(grammar, inline: bool) -> EarleyParser:
    if inline:
        return EarleyParser(build_grammar_fsms(_ir(grammar, True)))
    return user_parser(_grammar(grammar))


def earley_trace(grammar, data, inline: bool = False) -> list[dict]:
    """The Earley chart after reading `data` byte by byte, one row per item, each with the
    rules of Table 6 (left half) that put it there and their premises.

    Row keys: set (k), item (dotted rule, `@origin`), rule, origin, final (the rule may end
    here), how (the rules that derive it: "init", "scan", "predict", "predict (nullable)" for
    the Aycock-Horspool advance over a nullable rule, "complete"; "other" for items of
    counted or unordered rules), premises (one line per derivation), next_bytes (the bytes the
    item may scan next). Stops at the first byte the grammar rejects (the rows then end with
    the last set reached).

    Example: [r["how"] for r in earley_trace('root ::= "a" b\\nb ::= "c"', "ac") if r["set"] == 1]
             == [["scan"], ["predict"]]
    """
    data = data.encode() if isinstance(data, str) else bytes(data)
    parser = _parser(grammar, inline)
    printer = ItemPrinter(parser.fsms)
    read = 0
    for b in data:
        if not parser.advance(bytes((b,))):
            break
        read += 1
    a, names = parser.arrays, parser.fsms.rule_names
    finals_at: dict[int, list[Item]] = {}
    for k in range(read + 1):
        finals_at[k] = [it for it in _set_items(parser, k) if a.is_final[it.state]]
    rows = []
    for k in range(read + 1):
        for it in _set_items(parser, k):
            why = _justify(parser, printer, data, k, it, finals_at)
            how = sorted({w for w, _ in why}, key=["init", "scan", "predict", "predict (nullable)",
                                                    "complete"].index) or ["other"]
            reads = sorted({b for e in range(a.byte_indptr[it.state], a.byte_indptr[it.state + 1])
                            for b in range(int(a.byte_lo[e]), int(a.byte_hi[e]) + 1)})
            rows.append({"set": k, "item": printer.format(it), "rule": names[it.rule], "origin": it.origin,
                         "final": bool(a.is_final[it.state]), "how": how, "premises": [p for _, p in why],
                         "next_bytes": reads})
    return rows


def chart_sets(matcher: GrammarMatcher) -> list[list[str]]:
    """The Earley sets a matcher holds now, set 0 first, items as dotted rules in the compiled
    grammar's rule names. Rolling back drops the last sets and leaves the others as they were.

    Example: m.accept_string("ab"); len(chart_sets(m)) == 3
    """
    parser = matcher._parser
    printer = ItemPrinter(parser.fsms)
    return [[printer.format(it) for it in parser.items(k)] for k in range(parser.position + 1)]


# ---- the adaptive token-mask cache (Table 6 right half; XGrammar §3.1) --------------------------


def _state_item(compiled: CompiledGrammar, state: int, printer: Optional[ItemPrinter] = None) -> str:
    """The dotted rule of a global FSM state, without an origin."""
    fsms = compiled.fsms
    rule = int(compiled.arrays.state_rule[state])
    local = state - int(fsms.state_offsets()[rule])
    text = (printer or ItemPrinter(fsms)).format(Item(rule, state, local, 0))
    return text.rsplit("  @", 1)[0]


def _all_entries(compiled: CompiledGrammar):
    """The cache's flat arrays with every entry built (JIT builds them on first use)."""
    cache = compiled.mask_cache
    states = np.flatnonzero(cache.arrays.state_entry == UNBUILT).astype(np.int32)
    if len(states):
        cache.ensure_entries(states)
    return cache.arrays


def _entry_sets(compiled: CompiledGrammar, e: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(accepted, rejected, uncertain) regular token ids of entry e, each sorted."""
    cache = compiled.mask_cache
    arr, vocab = cache.arrays, cache.vocab
    regular = np.sort(vocab.sorted_ids)
    uncertain = np.sort(vocab.sorted_ids[arr.unc_sorted[arr.unc_indptr[e]:arr.unc_indptr[e + 1]]])
    listed = arr.list_ids[arr.list_indptr[e]:arr.list_indptr[e + 1]]
    kind = int(arr.entry_kind[e])
    if kind == KIND_BITSET:
        words = arr.bitset_words[arr.bitset_offset[e]:arr.bitset_offset[e] + (cache.vocab_size + 31) // 32]
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:cache.vocab_size].astype(bool)
        accepted = np.flatnonzero(bits)
    elif KIND_NAMES[kind] == "accepted list":
        accepted = np.sort(listed)
    else:
        accepted = np.setdiff1d(np.setdiff1d(regular, listed), uncertain)
    rejected = np.setdiff1d(np.setdiff1d(regular, accepted), uncertain)
    return accepted.astype(np.int64), rejected.astype(np.int64), uncertain.astype(np.int64)


def mask_cache_entries(compiled: CompiledGrammar) -> list[dict]:
    """One row per entry of the compiled grammar's token-mask cache (building any entry JIT has
    not built yet): the FSM state it was built for, that state as a dotted rule, its storage form
    ("accepted list", "rejected list" or "bitset", the smallest, XGrammar §3.1 Figure 5), the
    numbers of accepted, rejected and uncertain tokens, the states that share it and its bytes.

    Example: rows = mask_cache_entries(compiled); sum(r["uncertain"] for r in rows)
    """
    arr = _all_entries(compiled)
    printer = ItemPrinter(compiled.fsms)
    words = (compiled.mask_cache.vocab_size + 31) // 32
    sharing = Counter(int(e) for e in arr.state_entry if e >= 0)
    rows = []
    for e in range(len(arr.entry_state)):
        kind = int(arr.entry_kind[e])
        listed = int(arr.list_indptr[e + 1] - arr.list_indptr[e])
        n_unc = int(arr.unc_indptr[e + 1] - arr.unc_indptr[e])
        acc, rej, unc = (int(c) for c in arr.counts[e])
        state = int(arr.entry_state[e])
        rows.append({"entry": e, "state": state, "item": _state_item(compiled, state, printer),
                     "form": KIND_NAMES[kind], "accepted": acc, "rejected": rej, "uncertain": unc,
                     "states": sharing.get(e, 0),
                     "bytes": 4 * (listed + n_unc) + (4 * words if kind == KIND_BITSET else 0)})
    return rows


def entry_forms(compiled: CompiledGrammar) -> dict[str, int]:
    """How many entries take each storage form (XGrammar Figure 5's three cases).

    Example: sum(entry_forms(compiled).values()) == len(mask_cache_entries(compiled))
    """
    counts = Counter(r["form"] for r in mask_cache_entries(compiled))
    return {name: counts.get(name, 0) for name in KIND_NAMES}


def entry_tokens(compiled: CompiledGrammar, state: int) -> dict[str, list[int]]:
    """The accepted, rejected and uncertain regular token ids of the entry of FSM state `state`
    (XGrammar Figure 4; Table 6's (A, R, U)). Stop and special tokens are in none of them.

    Example: entry_tokens(compiled, mask_cache_entries(compiled)[0]["state"])["uncertain"]
    """
    arr = _all_entries(compiled)
    e = int(arr.state_entry[state])
    if e < 0:
        raise ValueError(f"state {state} reads no byte: it has no entry")
    acc, rej, unc = _entry_sets(compiled, e)
    return {"accepted": acc.tolist(), "rejected": rej.tolist(), "uncertain": unc.tolist()}


def mask_from_cache(matcher: GrammarMatcher) -> dict:
    """Table 6 (right half) at the matcher's current position, step by step:

        1. retrieve    the entry (A, R, U) of every scannable item of the current set
        2. check       the uncertain tokens no entry accepts, run through the full chart:
                       U_A (they may follow) and U_R (they may not)
        3. output      A' = the union of the A's with U_A (and the stop tokens when the input
                       is a sentence)

    Returns a dict: items (one row per scannable item: item, accepted, rejected, uncertain
    counts), accepted (ids in some A), uncertain (the candidates checked), uncertain_accepted
    (U_A), uncertain_rejected (U_R), stop (stop ids allowed), mask (bool[vocab_size], A').
    For grammars without token sets, token budgets or counted repetitions (the matcher adds
    what those allow or forbid on top).

    Example: steps = mask_from_cache(m); (steps["mask"] == m.compute_bool_mask()).all()
    """
    compiled = matcher.compiled_grammar
    parser = matcher._parser
    c, k = parser.chart, parser.position
    states = c.item_state[c.set_start[k]:c.set_start[k + 1]]
    arr = compiled.mask_cache.arrays
    if (arr.state_entry[states] == UNBUILT).any():
        compiled.mask_cache.ensure_entries(states.astype(np.int32), c.item_count[c.set_start[k]:c.set_start[k + 1]])
        arr = compiled.mask_cache.arrays
    printer = ItemPrinter(parser.fsms)
    items, accepted, uncertain = [], set(), set()
    for it in parser.items(k):
        e = int(arr.state_entry[it.state])
        if e < 0:
            continue
        acc, rej, unc = _entry_sets(compiled, e)
        items.append({"item": printer.format(it), "accepted": len(acc), "rejected": len(rej), "uncertain": len(unc)})
        accepted.update(acc.tolist())
        uncertain.update(unc.tolist())
    candidates = sorted(uncertain - accepted)
    info = compiled.tokenizer_info
    u_a, u_r = [], []
    for t in candidates:
        data = info.token_bytes(t)
        if parser.advance(data):
            parser.rollback(len(data))
            u_a.append(t)
        else:
            u_r.append(t)
    mask = np.zeros(info.vocab_size, dtype=bool)
    mask[sorted(accepted)] = True
    mask[u_a] = True
    stop = list(matcher.stop_token_ids) if parser.is_completed() else []
    mask[stop] = True
    return {"items": items, "accepted": sorted(accepted), "uncertain": candidates, "uncertain_accepted": u_a,
            "uncertain_rejected": u_r, "stop": stop, "mask": mask}


def every_token_mask(matcher: GrammarMatcher) -> np.ndarray:
    """bool[vocab_size]: the mask without the cache, every regular token run through the Earley
    chart (in byte order, sharing prefixes), stop tokens allowed at a sentence.

    Example: (every_token_mask(m) == m.compute_bool_mask()).all()
    """
    return matcher._every_token_bool_mask()


# ---- context expansion and lookahead (XGrammar §3.2) -----------------------------------------


def lookahead_assertions(compiled: CompiledGrammar) -> dict[str, dict[str, str]]:
    """The lookahead assertions the cache uses, by kind: "inferred" (xgrammar's inference),
    "verified" (written in the grammar and proved), "unverified" (written, not provable: not
    used), each rule name -> the assertion's text.

    Example: "characters_and_embrace" in lookahead_assertions(compiled_builtin_json)["unverified"]
    """
    report = compiled.lookahead_report
    return {"inferred": dict(report.inferred), "verified": dict(report.verified),
            "unverified": dict(report.unverified)}


def context_expansion(compiled: CompiledGrammar, states: Optional[Iterable[int]] = None) -> list[dict]:
    """What each refinement of XGrammar §3.2 leaves uncertain, state by state (default: the
    state each cache entry was built for; counted and unordered rules are skipped).

    For the entry of FSM state s of rule A, lists of regular token ids:

        ends_inside   A may end inside the token (read from s, the token is not read inside A
                      but A reaches a final state before it dies): XGrammar §3.1's
                      context-dependent tokens, uncertain without context
        after_lookahead   those whose rest agrees with A's lookahead assertion (all of them
                      when A has none)
        after_context     those that context expansion (CONTEXT, Algorithm 2: some occurrence
                      of A, or of a rule that ends with A, reads the rest) keeps
        uncertain         those that ACCEPT-CTX (every occurrence of A reads the rest: accepted
                      in every context) does not accept: the entry's uncertain tokens
        accepted_by_context   after_context less uncertain

    plus `state`, `item` (dotted rule), `lookahead` (A has an assertion) and `same_entry`
    (the classes with and without the assertion agree with the cache's entry: assertions only
    save work).

    Example: sum(len(r["ends_inside"]) for r in rows), sum(len(r["uncertain"]) for r in rows)
    """
    cache = compiled.mask_cache
    fsm, vocab = compiled.arrays, cache.vocab
    arr = _all_entries(compiled)
    if states is None:
        states = [int(s) for s in arr.entry_state]
    lookahead = cache._classifier.lookahead
    plain = _Classifier(fsm, vocab)  # no assertion, no FOLLOW table: every question by expansion
    asserted = _Classifier(fsm, vocab, lookahead)
    printer = ItemPrinter(compiled.fsms)
    ids = vocab.sorted_ids.astype(np.int64)
    rows = []
    for s in states:
        rule = int(fsm.state_rule[s])
        if fsm.rule_rep_lo[rule] >= 0 or fsm.rule_required[rule] >= 0 or arr.state_entry[s] < 0:
            continue
        out0 = plain.classify(s, record=True).copy()
        d0 = plain.detail.copy()
        out1 = asserted.classify(s, record=True).copy()
        d1 = asserted.detail.copy()
        ends = d0 >= MK.D_ENDS_LOOKAHEAD_REJECTS
        agree = d1 == MK.D_ENDS
        kept = agree & (out1 != MK.REJECTED)
        unc = out1 == MK.UNCERTAIN
        acc, _, unc_cached = _entry_sets(compiled, int(arr.state_entry[s]))
        same = (np.array_equal(out0, out1) and np.array_equal(np.sort(ids[unc]), unc_cached)
                and np.array_equal(np.sort(ids[out1 == MK.ACCEPTED]), acc))
        rows.append({"state": int(s), "item": _state_item(compiled, int(s), printer),
                     "lookahead": bool(lookahead.la_start[rule] >= 0),
                     "ends_inside": np.sort(ids[ends]).tolist(), "after_lookahead": np.sort(ids[agree]).tolist(),
                     "after_context": np.sort(ids[kept]).tolist(), "uncertain": np.sort(ids[unc]).tolist(),
                     "accepted_by_context": np.sort(ids[kept & ~unc]).tolist(), "same_entry": bool(same)})
    return rows


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

    from ..compiler import GrammarCompiler

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

