"""XGrammar §3.3, Figure 3: the persistent execution stack of XGrammar-1's pushdown automaton
(xg2ref/baselines/pda/), as plain data and as a drawing.

    pda_stacks(matcher)          the configurations now: each a top state and the frames below it
    stack_history(grammar, data) record after record, byte by byte: the configurations, the frames
                                 made for the record, the frames shared with earlier records
    draw_stack_tree(matcher)     the tree of frames that every stack shares (Figure 3): one node
                                 per frame, an edge to the frame below, each configuration's top
                                 hanging from its frame

A state prints as `rule:k`, k its number inside its rule's machine; a frame prints as the state it
returns to. The bottom of the root rule is `⊥`.

What it leaves out: the views read the matcher's arrays in Python, so they are for small
grammars and short inputs.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...baselines.pda import PDACompiler, PDAMatcher
from ...tokenizer_info import TokenizerInfo


def _namer(matcher: PDAMatcher):
    fsms = matcher.compiled_grammar.machines.fsms
    arrays = matcher.compiled_grammar.machines.arrays
    offsets = fsms.state_offsets()

    def name(state: int) -> str:
        rule = int(arrays.state_rule[state])
        return f"{fsms.rule_names[rule]}:{state - int(offsets[rule])}"

    return name


def pda_stacks(matcher: PDAMatcher, record: int = -1) -> list[dict]:
    """The configurations of a record (default the last): {"top": state name, "stack": return
    states from the top frame down, "frames": their node numbers}."""
    name = _namer(matcher)
    stack = matcher.stack
    k = stack.records + record if record < 0 else record
    st = stack.st
    out = []
    for i in range(int(st.hist_tops[k]), int(st.hist_tops[k + 1])):
        frames, node = [], int(st.tops_parent[i])
        while node >= 0:
            frames.append(node)
            node = int(st.node_parent[node])
        out.append(dict(top=name(int(st.tops_state[i])), stack=[name(int(st.node_state[f])) for f in frames],
                        frames=frames))
    return out


def stack_history(grammar, data, *, stage: str = "dfa") -> list[dict]:
    """Read `data` (str or bytes) byte by byte through the PDA of `grammar` (EBNF text or a
    Grammar): per record, {"read": the bytes so far, "configurations": `pda_stacks`, "made":
    frames made for it, "shared": frames its stacks use that earlier records made}; the list
    ends at the first byte that no configuration reads."""
    data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    compiled = PDACompiler(TokenizerInfo([b"\x00"]), stage=stage, mask_cache=False).compile_grammar(grammar)
    matcher = PDAMatcher(compiled)
    out = []
    for n in range(len(data) + 1):
        if n and not matcher.accept_string(data[n - 1:n]):
            break
        st, k = matcher.stack.st, matcher.stack.records - 1
        made = list(range(int(st.hist_nodes[k]), int(st.hist_nodes[k + 1])))
        configs = pda_stacks(matcher)
        used = sorted({f for c in configs for f in c["frames"]})
        out.append(dict(read=data[:n], configurations=configs, made=made,
                        shared=[f for f in used if f < int(st.hist_nodes[k])]))
    return out


def draw_stack_tree(matcher: PDAMatcher, ax=None, title: Optional[str] = None):
    """Figure 3: the frames every stack of the last record uses, as a tree growing down from
    the bottom ⊥, and each configuration's top state under its frame. Returns the axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4))
    name = _namer(matcher)
    st = matcher.stack.st
    configs = pda_stacks(matcher)
    frames = sorted({f for c in configs for f in c["frames"]})
    depth = {-1: 0}

    def level(node: int) -> int:
        if node not in depth:
            depth[node] = level(int(st.node_parent[node])) + 1
        return depth[node]

    for f in frames:
        level(f)
    columns: dict[int, int] = {}
    pos = {-1: (0.0, 0.0)}
    for f in sorted(frames, key=lambda f: (depth[f], f)):
        columns[depth[f]] = columns.get(depth[f], -1) + 1
        pos[f] = (float(columns[depth[f]]), -float(depth[f]))
    for f in frames:
        parent = int(st.node_parent[f])
        ax.plot(*zip(pos[f], pos[parent]), color="0.5", zorder=1)
        ax.text(*pos[f], name(int(st.node_state[f])), ha="center", va="center", fontsize=8,
                bbox=dict(boxstyle="round", fc="white", ec="0.3"), zorder=2)
    ax.text(*pos[-1], "⊥", ha="center", va="center", fontsize=10, bbox=dict(boxstyle="round", fc="0.9"), zorder=2)
    groups: dict[int, list[str]] = {}
    for c in configs:
        groups.setdefault(c["frames"][0] if c["frames"] else -1, []).append(c["top"])
    for frame, tops in groups.items():
        anchor = pos[frame]
        for j, top in enumerate(tops):
            at = (anchor[0] + 0.3 * (j - (len(tops) - 1) / 2), anchor[1] - 0.9 - 0.25 * (j % 2))
            ax.annotate(top, xy=anchor, xytext=at, ha="center", va="top", fontsize=7, color="tab:red",
                        arrowprops=dict(arrowstyle="->", color="tab:red", lw=0.8))
    ax.set_title(title or f"{len(configs)} stacks sharing {len(frames)} frames")
    ax.axis("off")
    xs = [p[0] for p in pos.values()] or [0.0]
    ax.set_xlim(min(xs) - 1, max(xs) + 1)
    ax.set_ylim(-max(depth.values(), default=0) - 1.5, 0.8)
    return ax


__all__ = ["pda_stacks", "stack_history", "draw_stack_tree"]
