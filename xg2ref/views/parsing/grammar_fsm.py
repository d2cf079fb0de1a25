"""Views of the grammar IR and its normalization (XGrammar §3.4) and of the per-rule byte FSMs
and their stages, drawn (XGrammar-2 §3.3)."""

from __future__ import annotations

from collections import deque
from typing import Optional, Sequence as Seq


# The engine's modules this view reads (it is the one place outside the engine that may).
from ...fsm.build import build_grammar_fsms, rule_fsm
from ...fsm.fsm import FSM, TOKEN_SYMBOL_BASE, format_byte_range
from ...fsm.utf8 import utf8_sequences
from ...grammar.grammar import Grammar
from ...grammar.ir import ByteString, CharClass, Repeat, RuleRef, children
from ...grammar.lazy import lower_lazy_rules
from ...grammar.passes import flatten, fuse_byte_strings, inline_small_rules, normalize, remove_dead_rules
from ...grammar.printer import print_expr, print_grammar
from ...grammar.repetition import REPETITION_THRESHOLD, compress_repetitions


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
