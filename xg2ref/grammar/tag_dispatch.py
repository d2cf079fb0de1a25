"""XGrammar-2 §3.2: TagDispatch, an Aho–Corasick automaton compiled into a rule's FSM.

`TagDispatch(("<a>", a), ("<b>", b), loop_after_dispatch=true, excludes=("</s>",))` reads free
text (any bytes) until a whole tag appears, then the tag's rule, then free text again (or, when
`loop_after_dispatch` is false, nothing). Free text may end anywhere, even inside a tag that
has begun, but never holds a whole `excludes` string. Recognizing "a tag has just appeared"
over a stream of bytes is string matching against a dictionary: the Aho–Corasick automaton
over the tags and the excludes (a trie; each node's failure link goes to its longest proper
suffix that is also a trie node; `step` follows goto edges, else failure links, so every byte
costs amortized O(1) and the full transition table is a DFA).

The automaton is xgrammar's: every trie node is a state, and n -b-> step(n, b) for a node that
ends no pattern:

    some exclude ends at step(n, b)   |-  no edge (free text may not hold it)
    n ends no pattern                 |-  n -b-> step(n, b), and the text may end at n
    n ends a tag t                    |-  n -<rule of t>-> root (loop) or exit; the text may
                                          not end at n; n keeps only its trie children
                                          (a longer tag may still be read)

"Some exclude ends at m" follows m's output links, not only m's own pattern: with excludes
`abc` and `xabcq`, reading `xabc` lands on the node of `xabc` (on the way to `xabcq`), and
`abc`, a suffix of it, ends there too. `AhoCorasick.blocked` marks those nodes: a node ending an
exclude, and every node whose failure link is marked (its failure target is a suffix of it).
An exclude that is a suffix of a tag, or equal to one, blocks that tag (xgrammar 0.2.8 agrees).

Consequences, as in xgrammar 0.2.8: a tag is seen only when it is the longest suffix of the
text that is a trie path, so a tag inside a longer partial match (tag "b" while reading
"ab" toward tag "abc") passes as free text; a tag that is a prefix of another either
dispatches or reads on. An exclude must not be a prefix of a tag (the parser checks this).
"""

from __future__ import annotations

from collections import deque
from typing import Optional

from .ir import TagDispatch


class AhoCorasick:
    """The automaton over `patterns` (non-empty byte strings).

    Attributes: `goto` (per node, byte -> child), `fail` (failure link), `own` (index of the
    pattern that ends exactly at the node, or -1), `outputs` (indices of every pattern that
    ends at the node: its own, then its failure chain's), `blocked` (some pattern of index
    >= `first_exclude`, an exclude, ends at the node: its own, or through the failure chain a
    suffix of it).

    Example: AhoCorasick([b"abc", b"xabcq"], first_exclude=0).blocked at the node of b"xabc" is True
    """

    def __init__(self, patterns: list[bytes], first_exclude: Optional[int] = None):
        self.patterns = list(patterns)
        first_exclude = len(self.patterns) if first_exclude is None else first_exclude
        self.goto: list[dict[int, int]] = [{}]
        self.own: list[int] = [-1]
        for k, pattern in enumerate(self.patterns):
            node = 0
            for b in pattern:
                nxt = self.goto[node].get(b)
                if nxt is None:
                    nxt = len(self.goto)
                    self.goto.append({})
                    self.own.append(-1)
                    self.goto[node][b] = nxt
                node = nxt
            if self.own[node] < 0:
                self.own[node] = k
        ends_exclude = [False] * len(self.goto)
        for pattern in self.patterns[first_exclude:]:  # (an exclude equal to a tag has the tag's node)
            ends_exclude[self.node_of(pattern)] = True
        self.fail = [0] * len(self.goto)
        self.outputs: list[list[int]] = [[] for _ in self.goto]
        self.blocked = [False] * len(self.goto)
        queue = deque(self.goto[0].values())
        while queue:  # breadth first: a node's failure target is shallower, so it is done
            node = queue.popleft()
            self.outputs[node] = ([self.own[node]] if self.own[node] >= 0 else []) + self.outputs[self.fail[node]]
            # output link: what ends at the failure target (a suffix) ends here too
            self.blocked[node] = ends_exclude[node] or self.blocked[self.fail[node]]
            for b, child in self.goto[node].items():
                f = self.fail[node]
                while f and b not in self.goto[f]:
                    f = self.fail[f]
                self.fail[child] = self.goto[f].get(b, 0) if self.goto[f].get(b, 0) != child else 0
                queue.append(child)

    def node_of(self, pattern: bytes) -> int:
        """The trie node spelling `pattern` (one of the patterns, or a prefix of one)."""
        node = 0
        for b in pattern:
            node = self.goto[node][b]
        return node

    @property
    def num_states(self) -> int:
        return len(self.goto)

    def step(self, node: int, b: int) -> int:
        while node and b not in self.goto[node]:
            node = self.fail[node]
        return self.goto[node].get(b, 0)

    def num_transitions(self) -> int:
        """Goto edges plus failure links (the automaton as stored, not the full DFA table)."""
        return sum(len(g) for g in self.goto) + len(self.goto) - 1


def add_fragment(builder, td: TagDispatch, src: int) -> int:
    """Add the FSM fragment of `td` to an `_NFABuilder` from state `src`; return its exit."""
    tags = [t for t, _ in td.tags]
    ac = AhoCorasick(tags + list(td.excludes), first_exclude=len(tags))
    exit_ = builder.new_state()
    state = {0: builder.new_state()}  # trie node -> FSM state
    root = state[0]
    builder.eps_edges.append((src, root))
    todo = [0]
    while todo:
        node = todo.pop()
        q = state[node]
        own = ac.own[node]
        targets: list = []
        for b in range(256):
            nxt = ac.goto[node].get(b) if own >= 0 else ac.step(node, b)
            if nxt is None or ac.blocked[nxt]:  # no trie child, or some exclude ends there
                targets.append(None)
                continue
            if nxt not in state:
                state[nxt] = builder.new_state()
                todo.append(nxt)
            targets.append(state[nxt])
        if own >= 0:  # a tag ends here: its rule, then the root or the end
            builder.rule_edges.append((q, builder.rule_ids[td.tags[own][1]], root if td.loop else exit_))
        else:
            builder.eps_edges.append((q, exit_))
        lo = 0
        for b in range(1, 257):  # one edge per run of bytes with the same target
            if b == 256 or targets[b] != targets[lo]:
                if targets[lo] is not None:
                    builder.byte_edges.append((q, lo, b - 1, targets[lo]))
                lo = b
    return exit_
