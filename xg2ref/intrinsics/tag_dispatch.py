"""XGrammar-2 §3.2: TagDispatch, an intrinsic whose Aho–Corasick automaton is compiled into a rule's FSM.

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

Through the intrinsic seam (xg2ref/grammar/intrinsic.py), the node gives every stage what it
needs: `from_call` checks the EBNF call's arguments, `fragment` writes the automaton above into
the rule's NFA, and `oracle_reach` / `oracle_pre` read the construct on strings with no
automaton (`tag_scan`), which is what the brute-force oracle compares the FSM against.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import AbstractSet, Callable, Optional

from ..grammar.intrinsic import Call, Intrinsic, Value, register


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



@register
@dataclass(frozen=True, slots=True)
class TagDispatch(Intrinsic):
    """Free text until a whole tag (trigger) appears, then the tag's rule, then free text again
    (`loop`) or the end. Free text never holds an `excludes` string. `tags` pairs each tag's
    bytes with a rule name; rules are referenced by name.

    Example: TagDispatch(((b"<call>", "call"),), loop=False, excludes=(b"</s>",))
    """

    tags: tuple
    loop: bool = True
    excludes: tuple = ()
    ebnf_name = "TagDispatch"

    # ---- the grammar side ---------------------------------------------------------------

    @classmethod
    def from_call(cls, call: Call) -> "TagDispatch":
        """`TagDispatch(("tag", rule), ..., loop_after_dispatch=true, excludes=("s", ...))`."""
        tags = []
        for value in call.positional:
            items = value.value if value.kind == "tuple" else None
            if not items or len(items) != 2 or items[0].kind != "string" or items[1].kind != "rule name":
                raise call.fail("each positional argument is a pair (\"tag\", rule_name)", value)
            if not items[0].value:
                raise call.fail("a tag must not be empty", items[0])
            tags.append((items[0].value.encode("utf-8", "surrogatepass"), call.refer(items[1])))
        call.only_named("loop_after_dispatch", "excludes")
        loop = call.boolean("loop_after_dispatch", True)
        excludes_value = call.named.get("excludes", Value("tuple", [], -1))
        if excludes_value.kind != "tuple" or any(v.kind != "string" or not v.value for v in excludes_value.value):
            raise call.fail("excludes must be a tuple of non-empty strings", excludes_value)
        excludes = tuple(v.value.encode("utf-8", "surrogatepass") for v in excludes_value.value)
        for e, value in zip(excludes, excludes_value.value):
            for tag, _ in tags:
                if tag.startswith(e):
                    raise call.fail(f"exclude {value.value!r} is a prefix of tag "
                                    f"{tag.decode('utf-8', 'surrogatepass')!r}", value)
        return cls(tuple(tags), loop, excludes)

    def to_ebnf(self, literal: Callable[[bytes], str]) -> str:
        parts = [f"({literal(tag)}, {name})" for tag, name in self.tags]
        parts.append(f"loop_after_dispatch={'true' if self.loop else 'false'}")
        excludes = "".join(literal(e) + ", " for e in self.excludes)
        parts.append(f"excludes=({excludes.rstrip()})")
        return "TagDispatch(" + ", ".join(parts) + ")"

    def rule_names(self) -> tuple:
        return tuple(name for _, name in self.tags)

    def renamed(self, rename: Callable[[str], str]) -> "TagDispatch":
        return TagDispatch(tuple((t, rename(n)) for t, n in self.tags), self.loop, self.excludes)

    def key(self) -> tuple:
        return (self.tags, self.loop, self.excludes)

    def nullable(self, nullable: AbstractSet[str]) -> bool:
        return True  # the free text may end at once (tags are never empty)

    def productive(self, productive: AbstractSet[str]) -> bool:
        return True  # the empty free text

    # ---- the FSM side (the automaton of the module docstring) -----------------------------

    def fragment(self, nfa, src: int) -> int:
        ac = AhoCorasick([t for t, _ in self.tags] + list(self.excludes), first_exclude=len(self.tags))
        exit_ = nfa.new_state()
        state = {0: nfa.new_state()}  # trie node -> FSM state
        root = state[0]
        nfa.eps(src, root)
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
                    state[nxt] = nfa.new_state()
                    todo.append(nxt)
                targets.append(state[nxt])
            if own >= 0:  # a tag ends here: its rule, then the root or the end
                nfa.rule_edge(q, self.tags[own][1], root if self.loop else exit_)
            else:
                nfa.eps(q, exit_)
            lo = 0
            for b in range(1, 257):  # one edge per run of bytes with the same target
                if b == 256 or targets[b] != targets[lo]:
                    if targets[lo] is not None:
                        nfa.byte_edge(q, lo, b - 1, targets[lo])
                    lo = b
        return exit_

    # ---- the oracle side: on strings, with no automaton -----------------------------------

    def oracle_reach(self, reader, i: int) -> set:
        # TAG     free text may end at j (tag_scan)               ⊢ j in reach(TD, i)
        #         tag t read at p, k in reach(rule of t, p)       ⊢ k (no loop) or
        #                                  reach(TD, k) (loop) in reach(TD, i)
        free, dispatch, _ = tag_scan(reader.data, i, self)
        out = set(free)
        for p, tag in dispatch:
            for k in reader.reach(tag, p):
                out.update(reader.reach_self(k) if self.loop else (k,))
        return out

    def oracle_pre(self, reader, i: int) -> bool:
        # TAG     the scan reads all of d[i:n]                    ⊢ pre(TD, i)
        #         (ending in free text, or on a tag whose rule can start or that
        #         reads on through a trie child: tag_reads_on)
        #         tag t read at p, pre(rule of t, p)              ⊢ pre(TD, i)
        #         ... k in reach(rule, p), pre(TD, k) (loop) or k = n ⊢ pre(TD, i)
        free, dispatch, last = tag_scan(reader.data, i, self)
        n = len(reader.data)
        for p, tag in dispatch:
            if reader.pre(tag, p) or any(reader.pre_self(k) if self.loop else k == n for k in reader.reach(tag, p)):
                return True
        if last is None:
            return False
        if last not in {t for t, _ in self.tags}:
            return True
        return tag_reads_on(self, last, lambda tag: reader.pre(tag, n))

    # ---- property tests ---------------------------------------------------------------------

    def shortest(self, shortest_rule: Callable[[str], tuple]) -> tuple:
        return (0, 0)  # the empty free text

    def sample(self, rng, depth: int, usable: Callable[[str], bool], sample_rule: Callable[[str], None],
               out: bytearray) -> None:
        # no free text (it might spell a tag or an exclude): only tags and their rules
        tags = [(tag, name) for tag, name in self.tags if usable(name)]
        count = 0 if depth <= 0 or not tags else rng.randint(0, 2 if self.loop else 1)
        for _ in range(count):
            tag, name = rng.choice(tags)
            out += tag
            sample_rule(name)


def tag_scan(data: bytes, start: int, td: TagDispatch) -> tuple[list[int], list[tuple[int, int]], Optional[bytes]]:
    """The oracle's reading of TagDispatch's free text from `start`, on strings, without an
    automaton. The state is p, the current match: a prefix of some tag or exclude.

        p ends no pattern:           p' = the longest suffix of p + b that is a prefix of a pattern
        p is a tag:                  p' = p + b if that is a prefix of a pattern, else the text dies
        some exclude ends p':        the text dies (an exclude that is a suffix of p' counts too)

    Returns (the positions where free text may end, the (position, tag index) where a tag has
    just been read, the state at the end of the data or None when the text died).
    """
    prefixes = _pattern_prefixes(td)
    tags = {t: k for k, (t, _) in reversed(list(enumerate(td.tags)))}
    p, free, dispatch = b"", [start], []
    for j in range(start, len(data)):
        grown = p + data[j:j + 1]
        if p in tags:
            nxt = grown if grown in prefixes else None
        else:
            nxt = next(grown[k:] for k in range(len(grown) + 1) if grown[k:] in prefixes)
        if nxt is None or _holds_exclude_end(nxt, td):
            return free, dispatch, None
        p = nxt
        if p in tags:
            dispatch.append((j + 1, tags[p]))
        else:
            free.append(j + 1)
    return free, dispatch, p


def _pattern_prefixes(td: TagDispatch) -> set:
    return {b""} | {pat[:k] for pat in [t for t, _ in td.tags] + list(td.excludes) for k in range(len(pat) + 1)}


def _holds_exclude_end(text: bytes, td: TagDispatch) -> bool:
    return any(text.endswith(e) for e in td.excludes)


def tag_reads_on(td: TagDispatch, tag: bytes, rule_nonempty) -> bool:
    """Whether the scan, stopped on the tag `tag` at the end of the data, can go on without
    dispatching it: some trie child that no exclude ends is free text (the text may end
    there), or a tag whose rule matches something (`rule_nonempty(tag index)`) or that reads
    on in turn."""
    prefixes = _pattern_prefixes(td)
    tags = {t: k for k, (t, _) in reversed(list(enumerate(td.tags)))}
    for child in {q for q in prefixes if len(q) == len(tag) + 1 and q.startswith(tag)}:
        if _holds_exclude_end(child, td):
            continue
        if child not in tags or rule_nonempty(tags[child]) or tag_reads_on(td, child, rule_nonempty):
            return True
    return False
