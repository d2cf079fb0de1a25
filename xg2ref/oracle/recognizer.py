"""The oracle's recognizer: sentences and viable prefixes of a grammar, straight from the IR.

DESIGN.md, "Semantics an oracle must get exactly right": a token is allowed iff the bytes so
far followed by the token's bytes are a *prefix* of some sentence, and a stop token iff the
bytes so far are a *sentence*. This module answers those two questions for a `GrammarIR` and
shares no code with the engine (no FSMs, no Earley items): it is a CYK-style table over
(expression node, byte position), filled to a least fixpoint, so that the two can check each
other.

Semantics (byte level). `ByteString` matches its bytes. `CharClass` matches the UTF-8 bytes of
one codepoint of `codepoint_ranges()`, surrogates U+D800-U+DFFF included as the generic
three-byte pattern ED A0-BF 80-BF (Python's "surrogatepass"); overlong forms never match.
`RuleRef` matches its rule's body, `Repeat(b, m, M)` matches b m..M times (M None: unbounded),
and a rule's lookahead assertion is ignored: it never changes the language.

For input d of length n, every expression node e gets three facts (L(e) is its language):

    nonempty(e)     L(e) is not empty                      (once per grammar)
    reach(e, i)     { j : d[i:j] in L(e) }                 (a set of end positions, j <= n)
    pre(e, i)       some w in L(e) starts with d[i:n]      (d[i:n] may be a whole word)

and the answers are  is_sentence(d) = n in reach(root, 0)  and  is_prefix(d) = pre(root, 0).
Each fact is the least solution of the inference rules written above the code that performs
them, so left recursion, nullable rules and unproductive rules need no special case: a fact
holds iff a finite derivation proves it. reach(e, i) and pre(e, i) only read facts at
positions >= i, so positions are filled from n down to 0, each by iterating all nodes at that
position until nothing changes (positions > i are final by then). A node none of whose
non-empty words starts with the byte at i gets its facts there at once and stays out of that
iteration (DEAD, `_dead_at`): in a grammar of many rules most nodes are dead at most positions.

What it leaves out: speed. Every call rebuilds the table (the last one is kept, so asking both
questions about one input costs one table). The work grows like nodes * n^2 for unambiguous
grammars and up to nodes * n^3 for ambiguous ones: 1,024 bytes take about 0.07 s for an
expression grammar and about 10 s for ("a"* "a"*). Inputs longer than MAX_INPUT_BYTES raise
ValueError; it is an oracle for short strings, not a matcher. Intrinsics are read by their own
oracle readings (grammar/intrinsic.py `oracle_reach` / `oracle_pre`, given the facts of the rules
they name): `TagDispatch` with `tag_scan`, on strings (no automaton). Lazy rules (`name[lazy] ::= ...`) are first rewritten
into plain rules of the same language by `grammar/lazy.py`, a front-end step like `Regex(...)`.
Unordered rules (`name[unordered]`, JSON Schema's `any_order`) are rewritten into plain rules
by `oracle/unordered.py`, one per set of members seen.

Token sets (`Token(...)`, `ExcludeToken(...)`) match a whole token, never bytes: the input may
come with `marks`, a mapping from byte position p to (token id, length) for each regular token
of the input read as a token (the caller leaves out stop, special and empty tokens, which no
token set matches). Then

    TOKEN   marks[i] = (t, k), t in the set      ⊢ i+k in reach(T, i)     pre(T, i) iff i+k = n
    nonempty(T)  always (as in xgrammar, a set with no regular token still counts as one)
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from ..grammar.ir import (
    MAX_CODEPOINT,
    ByteString,
    CharClass,
    Choice,
    Expr,
    GrammarIR,
    Repeat,
    RuleRef,
    Sequence,
)
from ..grammar.intrinsic import Intrinsic
from ..grammar.lazy import lower_lazy_rules
from .unordered import lower_unordered_rules

# Longest input accepted by is_sentence / is_prefix; longer inputs raise ValueError.
MAX_INPUT_BYTES = 1024

# Node kinds of the oracle's own flattened tree.
_BYTES, _CLASS, _SEQ, _CHOICE, _REPEAT, _REF, _INTRINSIC = range(7)

_NOTHING: frozenset[int] = frozenset()

# Smallest and largest codepoint written with 1, 2, 3 and 4 UTF-8 bytes.
_CODEPOINTS_OF_LENGTH = {1: (0, 0x7F), 2: (0x80, 0x7FF), 3: (0x800, 0xFFFF), 4: (0x10000, MAX_CODEPOINT)}


def utf8_length(lead: int) -> Optional[int]:
    """Number of bytes of a UTF-8 sequence starting with byte `lead` (None: cannot start one).

    Example: utf8_length(0xC3) == 2; utf8_length(0xA9) is None
    """
    if lead < 0x80:
        return 1
    if 0xC0 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF7:
        return 4
    return None


def _decode(seq: bytes) -> int:
    """The value of a full-length UTF-8 shaped sequence (no range check)."""
    k = len(seq)
    cp = seq[0] & (0x7F if k == 1 else 0xFF >> (k + 1))
    for c in seq[1:]:
        cp = cp << 6 | c & 0x3F
    return cp


def codepoints_starting_with(seq: bytes) -> Optional[tuple[int, int]]:
    """The codepoints whose UTF-8 encoding starts with `seq` (1 to 4 bytes), as (lo, hi).

    UTF-8 keeps codepoint order within one length, so the set is the interval between the
    shortest and the longest completion, clipped to the codepoints of that length (which
    drops overlong forms and values above U+10FFFF). None when no codepoint qualifies.

    Example: codepoints_starting_with(b"\\xc3") == (0xC0, 0xFF)
    """
    if not seq:
        raise ValueError("an empty byte sequence starts every codepoint")
    k = utf8_length(seq[0])
    if k is None or len(seq) > k or any(not 0x80 <= c <= 0xBF for c in seq[1:]):
        return None
    pad = k - len(seq)
    lo = max(_decode(seq + b"\x80" * pad), _CODEPOINTS_OF_LENGTH[k][0])
    hi = min(_decode(seq + b"\xbf" * pad), _CODEPOINTS_OF_LENGTH[k][1])
    return (lo, hi) if lo <= hi else None


_starting_with = lru_cache(maxsize=1 << 16)(codepoints_starting_with)  # the same few byte runs recur


@lru_cache(maxsize=1 << 12)
def _lead_bytes(ranges: tuple[tuple[int, int], ...]) -> int:
    """The first bytes of the UTF-8 of the class's codepoints, as a 256-bit int."""
    return sum(1 << b for b in range(256) if _meets(ranges, _starting_with(bytes((b,)))))


def _meets(ranges: tuple[tuple[int, int], ...], interval: Optional[tuple[int, int]]) -> bool:
    if interval is None:
        return False
    lo, hi = interval
    return any(a <= hi and lo <= b for a, b in ranges)


class _Reader:
    """What an intrinsic's oracle reading may ask (grammar/intrinsic.py): the facts of the rules
    it names (`reach(k, p)`, `pre(k, p)` for the k-th of its rule_names()), its own facts at
    other positions (`reach_self`, `pre_self`), the input `data` and the token `marks`."""

    __slots__ = ("data", "marks", "_v", "_kids", "_reach", "_pre")

    def __init__(self, data: bytes, marks: dict, v: int, kids: tuple, reach: list, pre: Optional[list]):
        self.data, self.marks, self._v, self._kids, self._reach, self._pre = data, marks, v, kids, reach, pre

    def reach(self, k: int, p: int) -> frozenset:
        return self._reach[p][self._kids[k]]

    def reach_self(self, p: int) -> frozenset:
        return self._reach[p][self._v]

    def pre(self, k: int, p: int) -> bool:
        return self._pre[p][self._kids[k]]

    def pre_self(self, p: int) -> bool:
        return self._pre[p][self._v]


class Recognizer:
    """Decides `is_sentence` and `is_prefix` for the root rule of `ir`, with no engine code.

    Example: Recognizer(ir).is_prefix(b'{"a": ') is True for a JSON grammar
    """

    def __init__(self, ir: GrammarIR):
        ir = lower_lazy_rules(ir)  # a lazy rule's language (grammar/lazy.py), before anything else
        ir = lower_unordered_rules(ir)  # unordered rules as plain ones (oracle/unordered.py)
        self.ir = ir
        names = ir.rule_names()
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate rule names in {names}")
        if ir.root not in names:
            raise ValueError(f"root rule {ir.root!r} is not defined")
        # Flattened tree, children before parents:
        # kind[v], arg[v] (bytes / merged ranges / (min, max) / target node), kids[v].
        self._kind: list[int] = []
        self._arg: list[object] = []
        self._kids: list[tuple[int, ...]] = []
        body_node: dict[str, int] = {}
        refs: list[tuple[int, str]] = []
        for rule in ir.rules:
            body_node[rule.name] = self._add(rule.body, refs)
        for v, name in refs:
            if name not in body_node:
                raise ValueError(f"reference to undefined rule {name!r}")
            self._arg[v] = body_node[name]
        self._root = body_node[ir.root]
        self.has_token_sets = any(kind == _INTRINSIC and arg.level == "token"
                                  for kind, arg in zip(self._kind, self._arg))
        self._nonempty = self._productive()
        # rest_nonempty[v][t]: items t+1.. of sequence v all have non-empty languages.
        self._rest_nonempty: dict[int, list[bool]] = {}
        for v, kind in enumerate(self._kind):
            if kind == _SEQ:
                kids = self._kids[v]
                self._rest_nonempty[v] = [all(self._nonempty[k] for k in kids[t + 1:]) for t in range(len(kids))]
        self._last: Optional[tuple] = None  # (input key, chart) of the last input
        self._marks: dict = {}
        self._first, self._nullable, self._plain = self._first_bytes()
        self._dead: dict = {}  # byte -> dead[v] (see _dead_at)

    def _add(self, expr: Expr, refs: list[tuple[int, str]]) -> int:
        if isinstance(expr, ByteString):
            return self._node(_BYTES, bytes(expr.value), ())
        if isinstance(expr, CharClass):
            for lo, hi in expr.ranges:
                if not 0 <= lo <= hi <= MAX_CODEPOINT:
                    raise ValueError(f"bad codepoint range ({lo:#x}, {hi:#x}) in {expr}")
            return self._node(_CLASS, tuple(expr.codepoint_ranges()), ())
        if isinstance(expr, Sequence):
            return self._node(_SEQ, None, tuple(self._add(e, refs) for e in expr.items))
        if isinstance(expr, Choice):
            if not expr.alternatives:
                raise ValueError("a choice needs at least one alternative")
            return self._node(_CHOICE, None, tuple(self._add(e, refs) for e in expr.alternatives))
        if isinstance(expr, Repeat):
            if expr.min < 0 or (expr.max is not None and expr.max < expr.min):
                raise ValueError(f"bad repetition bounds {{{expr.min},{expr.max}}}")
            return self._node(_REPEAT, (expr.min, expr.max), (self._add(expr.body, refs),))
        if isinstance(expr, RuleRef):
            v = self._node(_REF, -1, ())
            refs.append((v, expr.name))
            return v
        if isinstance(expr, Intrinsic):  # its kids: the rules it names, in order
            return self._node(_INTRINSIC, expr, tuple(self._add(RuleRef(name), refs) for name in expr.rule_names()))
        raise TypeError(f"not a grammar expression: {expr!r}")

    def _node(self, kind: int, arg: object, kids: tuple[int, ...]) -> int:
        self._kind.append(kind)
        self._arg.append(arg)
        self._kids.append(kids)
        return len(self._kind) - 1

    @property
    def language_is_empty(self) -> bool:
        """True iff the root rule derives no string at all (then nothing is a prefix)."""
        return not self._nonempty[self._root]

    def _productive(self) -> list[bool]:
        """nonempty(e) for every node, as a least fixpoint (unproductive recursion stays False).

            nonempty("s")          always            nonempty([...])   iff the class has a codepoint
            nonempty(e1 ... ek)    iff all ei         nonempty(e1 | ... | ek)   iff some ei
            nonempty(b{m,M})       iff m = 0 or nonempty(b)
            nonempty(A)            iff nonempty(body of A)
        """
        def nonempty_of(v: int, ne: list) -> bool:
            kind, kids = self._kind[v], self._kids[v]
            if kind == _BYTES:
                return True
            if kind == _INTRINSIC:
                arg = self._arg[v]
                return arg.productive({name for name, k in zip(arg.rule_names(), kids) if ne[k]})
            if kind == _CLASS:
                return bool(self._arg[v])
            if kind == _SEQ:
                return all(ne[k] for k in kids)
            if kind == _CHOICE:
                return any(ne[k] for k in kids)
            if kind == _REPEAT:
                return self._arg[v][0] == 0 or ne[kids[0]]
            return ne[self._arg[v]]

        return self._fixpoint(nonempty_of, False)

    def _first_bytes(self) -> tuple[list[int], list[bool], list[bool]]:
        """(first, nullable, plain) per node, which let the table skip the nodes that cannot
        start at a position (_chart):

            first(e)     the bytes a non-empty word of L(e) may start with (a 256-bit int)
            nullable(e)  the empty word is in L(e)
            plain(e)     no intrinsic below e, through references too: first and nullable are
                         then facts of L(e) alone (an intrinsic's reading may depend on the
                         input's token marks, so a node that reads one is never skipped)

        Least fixpoints, like nonempty:

            first("s") = {s[0]}                          nullable("s") iff s = ""
            first([...]) = the lead bytes of its codepoints   never nullable
            first(e1 ... ek) = first(e1) U ... U first(et), et the first non-nullable item
            first(e1 | ... | ek) = first(e1) U ... U first(ek)
            first(b{m,M}) = first(b) (M > 0)             nullable iff m = 0, M = 0 or nullable(b)
            first(A) = first(body of A)                  nullable(A) iff nullable(body of A)

        (an intrinsic: every byte, and nullable, so that the nodes above it over-approximate)"""
        size, readers = len(self._kind), self._readers()
        plain = [True] * size
        stack = [v for v, kind in enumerate(self._kind) if kind == _INTRINSIC]
        while stack:
            v = stack.pop()
            if plain[v]:
                plain[v] = False
                stack.extend(readers[v])

        def nullable_of(v: int, nl: list) -> bool:
            kind, arg, kids = self._kind[v], self._arg[v], self._kids[v]
            if kind == _BYTES:
                return not arg
            if kind == _CLASS:
                return False
            if kind == _SEQ:
                return all(nl[k] for k in kids)
            if kind == _CHOICE:
                return any(nl[k] for k in kids)
            if kind == _REPEAT:
                return arg[0] == 0 or arg[1] == 0 or nl[kids[0]]
            if kind == _INTRINSIC:
                return True
            return nl[arg]

        def first_of(v: int, fs: list) -> int:
            kind, arg, kids = self._kind[v], self._arg[v], self._kids[v]
            if kind == _BYTES:
                return 1 << arg[0] if arg else 0
            if kind == _CLASS:
                return _lead_bytes(arg)
            if kind == _SEQ:
                out = 0
                for k in kids:
                    out |= fs[k]
                    if not nullable[k]:
                        break
                return out
            if kind == _CHOICE:
                out = 0
                for k in kids:
                    out |= fs[k]
                return out
            if kind == _REPEAT:
                return 0 if arg[1] == 0 else fs[kids[0]]
            if kind == _INTRINSIC:
                return (1 << 256) - 1
            return fs[arg]

        nullable = self._fixpoint(nullable_of, False)
        first = self._fixpoint(first_of, 0)
        return first, nullable, plain

    def _fixpoint(self, step, bottom) -> list:
        """The least solution of fact[v] = step(v, fact) over every node (monotone steps)."""
        readers = self._readers()
        fact = [bottom] * len(self._kind)
        pending = list(range(len(self._kind)))
        while pending:
            v = pending.pop()
            new = step(v, fact)
            if new != fact[v]:
                fact[v] = new
                pending.extend(readers[v])
        return fact

    def _dead_at(self, byte: Optional[int]) -> list[bool]:
        """dead[v]: v is plain and no non-empty word of L(v) starts with `byte` (None: at the
        end of the input, where every plain node is). Then, at a position i holding that byte,

            DEAD   reach(v, i) = {i} if nullable(v) else {}      pre(v, i) = False (i < n)

        since a word of L(v) that starts at i and is not empty starts with d[i]: such nodes
        get their facts at once and are left out of the fixpoint."""
        if byte not in self._dead:
            if byte is None:
                self._dead[byte] = list(self._plain)
            else:
                bit = 1 << byte
                self._dead[byte] = [p and not f & bit for p, f in zip(self._plain, self._first)]
        return self._dead[byte]

    def is_sentence(self, data: bytes, marks: Optional[dict] = None) -> bool:
        """True iff `data` is in the language of the root rule (`marks`: see the module
        docstring)."""
        data, reach, _ = self._chart(data, marks)
        return len(data) in reach[0][self._root]

    def is_prefix(self, data: bytes, marks: Optional[dict] = None) -> bool:
        """True iff some sentence starts with `data` (sentences included; b"" iff non-empty)."""
        _, _, pre = self._chart(data, marks)
        return pre[0][self._root]

    def _chart(self, data: bytes, marks: Optional[dict] = None) -> tuple[bytes, list[list[frozenset[int]]], list[list[bool]]]:
        data = bytes(data)
        if len(data) > MAX_INPUT_BYTES:
            raise ValueError(f"input of {len(data)} bytes is longer than MAX_INPUT_BYTES={MAX_INPUT_BYTES}")
        key = (data, tuple(sorted((marks or {}).items())))
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        self._marks = marks or {}
        n, size = len(data), len(self._kind)
        reach: list[list[frozenset[int]]] = [[] for _ in range(n + 1)]
        pre: list[list[bool]] = [[] for _ in range(n + 1)]
        readers = self._readers()
        nullable = [v for v in range(size) if self._nullable[v] and self._plain[v]]
        for i in range(n, -1, -1):
            # Chaotic iteration to the least fixpoint: one sweep over every node but the dead
            # ones (_dead_at: their facts are set at once and never queued), then only the
            # nodes that read (at position i) a fact that changed.
            dead = self._dead_at(data[i] if i < n else None)
            reach[i] = [_NOTHING] * size
            here = frozenset((i,))
            for v in nullable:
                if dead[v]:
                    reach[i][v] = here
            todo = [v for v in range(size - 1, -1, -1) if not dead[v]]
            queued = [True] * size
            while todo:
                v = todo.pop()
                queued[v] = False
                new = self._reach(v, i, data, reach)
                if new != reach[i][v]:
                    reach[i][v] = new
                    for u in readers[v]:
                        if not queued[u]:
                            queued[u] = True
                            todo.append(u)
            # PRE at the end of the input: d[n:n] = b"" starts every word, so pre(e, n) = nonempty(e).
            if i == n:
                pre[i] = list(self._nonempty)
                continue
            pre[i] = [False] * size
            todo = [v for v in range(size - 1, -1, -1) if not dead[v]]
            queued = [True] * size
            while todo:
                v = todo.pop()
                queued[v] = False
                if not pre[i][v] and self._pre(v, i, data, reach, pre):
                    pre[i][v] = True
                    for u in readers[v]:
                        if not queued[u] and not pre[i][u]:
                            queued[u] = True
                            todo.append(u)
        self._last = (key, (data, reach, pre))
        return self._last[1]

    def _readers(self) -> list[list[int]]:
        """readers[v]: the nodes whose facts at a position read v's facts at that same position
        (parents, and references to a rule body); a change of v is passed on to them."""
        if getattr(self, "_readers_list", None) is None:
            readers: list[list[int]] = [[] for _ in self._kind]
            for u, kids in enumerate(self._kids):
                for k in kids:
                    readers[k].append(u)
                if self._kind[u] == _REF:
                    readers[self._arg[u]].append(u)
            self._readers_list = readers
        return self._readers_list

    def _copies(self, body: int, i: int, lo: int, hi: Optional[int], reach: list[list[frozenset[int]]]) -> set[int]:
        """Union over c in lo..hi (hi None: unbounded) of S_c, the ends of exactly c copies of body.

            S_0 = {i}        S_c+1 = step(S_c) = { j : p in S_c, j in reach(body, p) }

        S_c+1 depends on S_c alone. So below lo, step(S_c) = S_c means every later layer is
        S_c; from lo on, a layer seen before means every later layer is already in the union;
        and with no upper bound the union is S_lo closed under `reach(body, .)`.
        """
        s: frozenset[int] = frozenset((i,))
        for _ in range(lo):
            nxt = frozenset(j for p in s for j in reach[p][body])
            if nxt == s:
                break
            s = nxt
        if hi is None:
            out, stack = set(s), list(s)
            while stack:
                for j in reach[stack.pop()][body]:
                    if j not in out:
                        out.add(j)
                        stack.append(j)
            return out
        out = set()
        seen: set[frozenset[int]] = set()
        for _ in range(lo, hi + 1):
            if s in seen:
                break
            seen.add(s)
            out |= s
            s = frozenset(j for p in s for j in reach[p][body])
        return out

    def _reach(self, v: int, i: int, data: bytes, reach: list[list[frozenset[int]]]) -> frozenset[int]:
        kind, arg, kids = self._kind[v], self._arg[v], self._kids[v]
        if kind == _BYTES:
            # BYTES   d[i:i+|s|] = s                          ⊢ i+|s| in reach("s", i)
            return frozenset((i + len(arg),)) if data.startswith(arg, i) else _NOTHING
        if kind == _CLASS:
            # CLASS   d[i:i+k] is the UTF-8 of a codepoint c, c in the class  ⊢ i+k in reach([...], i)
            if i == len(data):
                return _NOTHING
            k = utf8_length(data[i])
            if k is None or i + k > len(data) or not _meets(arg, _starting_with(data[i:i + k])):
                return _NOTHING
            return frozenset((i + k,))
        if kind == _SEQ:
            # SEQ     p0 = i, p_t in reach(e_t, p_t-1) for t = 1..k   ⊢ p_k in reach(e1 ... ek, i)
            ends: frozenset[int] = frozenset((i,))
            for kid in kids:
                ends = frozenset(j for p in ends for j in reach[p][kid])
            return ends
        if kind == _CHOICE:
            # CHOICE  j in reach(e_t, i) for some t               ⊢ j in reach(e1 | ... | ek, i)
            return frozenset(j for kid in kids for j in reach[i][kid])
        if kind == _REPEAT:
            # REPEAT  j in S_c (see _copies), m <= c <= M         ⊢ j in reach(b{m,M}, i)
            return frozenset(self._copies(kids[0], i, arg[0], arg[1], reach))
        if kind == _INTRINSIC:
            # INTRINSIC  the construct's own reading (grammar/intrinsic.py), given the facts
            #            of the rules it names and its own facts at later positions
            return frozenset(arg.oracle_reach(_Reader(data, self._marks, v, kids, reach, None), i))
        # REF     j in reach(body of A, i)                        ⊢ j in reach(A, i)
        return reach[i][arg]

    def _pre(self, v: int, i: int, data: bytes, reach: list[list[frozenset[int]]], pre: list[list[bool]]) -> bool:
        """pre(v, i) for i < n, from facts at positions >= i."""
        kind, arg, kids = self._kind[v], self._arg[v], self._kids[v]
        if kind == _BYTES:
            # BYTES   s starts with d[i:n]                            ⊢ pre("s", i)
            return arg.startswith(data[i:])
        if kind == _CLASS:
            # CLASS   the UTF-8 of some c in the class starts with d[i:n]  ⊢ pre([...], i)
            return _meets(arg, _starting_with(data[i:i + 5]))
        if kind == _SEQ:
            # SEQ     p in S_t-1, pre(e_t, p), nonempty(e_t+1 ... ek) ⊢ pre(e1 ... ek, i)
            #         (S_t-1: ends of e1 ... e_t-1 from i; d[i:n] ends inside or at the end of e_t)
            ends: frozenset[int] = frozenset((i,))
            rest_nonempty = self._rest_nonempty[v]
            for t, kid in enumerate(kids):
                if rest_nonempty[t] and any(pre[p][kid] for p in ends):
                    return True
                ends = frozenset(j for p in ends for j in reach[p][kid])
            return False
        if kind == _CHOICE:
            # CHOICE  pre(e_t, i) for some t                          ⊢ pre(e1 | ... | ek, i)
            return any(pre[i][kid] for kid in kids)
        if kind == _REPEAT:
            # REPEAT  p in S_c, c < M, pre(b, p)                      ⊢ pre(b{m,M}, i)
            #         (d[i:n] ends inside copy c+1; more copies pad the count up to m, as
            #         L(b) is non-empty since pre(b, p); b{0,0} has no such c)
            hi = arg[1]
            return any(pre[p][kids[0]] for p in self._copies(kids[0], i, 0, None if hi is None else hi - 1, reach))
        if kind == _INTRINSIC:
            # INTRINSIC  the construct's own reading, as in _reach
            return arg.oracle_pre(_Reader(data, self._marks, v, kids, reach, pre), i)
        # REF     pre(body of A, i)                                   ⊢ pre(A, i)
        return pre[i][arg]
