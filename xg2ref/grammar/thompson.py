"""XGrammar-2 §3.3 (per-rule FSMs): Thompson's construction, from an IR expression to an ε-NFA.

This is the one walk over the IR that builds automata. Each node kind becomes a fragment: a
piece of NFA entered at a given state s and left at the state f the walk returns. Fragments
are glued by ε-edges:

    "ab"        s -a-> . -b-> f           one edge per letter (`letters`)
    [a-c]       s -[a-c]-> f              one path of fresh states per spelling of the class
                                          (`class_paths`), all ending on one fresh exit
    x y         frag(x) then frag(y)      x's exit is y's entry
    x | y       s -eps-> frag(x), s -eps-> frag(y), both -eps-> f
    x{m,n}      m copies of x, then n-m optional copies, each able to skip to a fresh exit
    x{m,}       m copies of x, then a loop on a fresh state (two shapes: `repeat`)
    value       `rule_ref`                (rule FSMs: one edge reading a word of that rule)
    intrinsic   `intrinsic`               (rule FSMs: the node's own `fragment`, intrinsic.py)

A fragment never adds an edge into its own entry: the entry may have other edges, which must
not become part of a loop (`("a"* "aa")?` must not become `a*`). The one exception is lazy.py's
reference inside a group of recursive rules, an ε-edge back to that rule's entry, allowed only
where the reference ends its rule.

What a letter is, and so what an edge is labelled with, is the subclass's business:

    fsm/build.py        `_NFABuilder`, the rule FSMs: bytes; a literal byte by byte, a class
                        as the byte-range sequences of its UTF-8 encodings (fsm/utf8.py); rule
                        references and intrinsics are edges and fragments of their own
    grammar/regular.py  `_NFA`: code points; a literal one edge per character, a class one
                        edge labelled with all its ranges; references and intrinsics are not
                        regular (`unsupported`)
    grammar/lazy.py     `_RuleNFA`, regular.py's NFA building the rules a lazy body refers
                        to in place (`rule_ref`)

States are numbered in the order the walk makes them, and edges are emitted in the order the
walk writes them; downstream (FSM hashes, the rules regular.py names after automaton states)
reads both, so the order below is part of the contract.
"""

from __future__ import annotations

from typing import ClassVar, Iterable, Sequence as Seq

from .intrinsic import Intrinsic
from .ir import ByteString, CharClass, Choice, Expr, Repeat, RuleRef, Sequence


class Thompson:
    """Thompson's construction over the IR; subclasses say what states and edges are.

    A subclass provides
        new_state() -> int                a fresh state
        eps(src, dst)                     an ε-edge
        edge(src, label, dst)             an edge reading one letter labelled `label`
        letters(literal) -> labels        a ByteString's letters, in order
        class_paths(cls) -> label paths   a CharClass as paths of letters (none: it is empty)
    and may override `rule_ref`, `intrinsic` and `unsupported` (whose defaults refuse the node).

    `fresh_loop_ends` picks the loop of `x{m,}` (see `repeat`)."""

    fresh_loop_ends: ClassVar[bool] = True

    def new_state(self) -> int:
        raise NotImplementedError

    def eps(self, src: int, dst: int) -> None:
        raise NotImplementedError

    def edge(self, src: int, label, dst: int) -> None:
        raise NotImplementedError

    def letters(self, expr: ByteString) -> Iterable:
        raise NotImplementedError

    def class_paths(self, expr: CharClass) -> Iterable[Seq]:
        raise NotImplementedError

    def rule_ref(self, expr: RuleRef, src: int) -> int:
        """The fragment of a rule reference (default: refused)."""
        raise self.unsupported(expr)

    def intrinsic(self, expr: Intrinsic, src: int) -> int:
        """The fragment of an intrinsic node (default: refused)."""
        raise self.unsupported(expr)

    def unsupported(self, expr) -> Exception:
        """The error for a node this automaton cannot hold."""
        return TypeError(f"unknown grammar node {expr!r}")

    def fragment(self, expr: Expr, src: int) -> int:
        """Add a fragment for `expr` starting at `src`; return its exit state."""
        # "ab": s -a-> . -b-> f, a fresh state after each letter (b"" is s itself)
        if isinstance(expr, ByteString):
            for label in self.letters(expr):
                dst = self.new_state()
                self.edge(src, label, dst)
                src = dst
            return src
        # [..]: a fresh exit f first; then, per path l1 l2 .. lk spelling part of the class,
        # s -l1-> . -l2-> ... -lk-> f through fresh states (an empty class: f unreachable)
        if isinstance(expr, CharClass):
            end = self.new_state()
            for path in self.class_paths(expr):
                cur = src
                for k, label in enumerate(path):
                    dst = end if k == len(path) - 1 else self.new_state()
                    self.edge(cur, label, dst)
                    cur = dst
            return end
        # value: the subclass's (rule FSMs: s -<value>-> f, f fresh)
        if isinstance(expr, RuleRef):
            return self.rule_ref(expr, src)
        # x y: frag(x) from s, frag(y) from x's exit; y's exit is f
        if isinstance(expr, Sequence):
            for item in expr.items:
                src = self.fragment(item, src)
            return src
        # x | y: a fresh exit f; per alternative a fresh entry e, s -eps-> e, frag(x) from e,
        # its exit -eps-> f
        if isinstance(expr, Choice):
            end = self.new_state()
            for alt in expr.alternatives:
                start = self.new_state()
                self.eps(src, start)
                self.eps(self.fragment(alt, start), end)
            return end
        # x{m,n}, x{m,}: `repeat`
        if isinstance(expr, Repeat):
            return self.repeat(expr, src)
        # an intrinsic: the subclass's (rule FSMs: the node writes its own fragment)
        if isinstance(expr, Intrinsic):
            return self.intrinsic(expr, src)
        raise self.unsupported(expr)

    def repeat(self, expr: Repeat, src: int) -> int:
        """The fragment of `x{m,n}` or `x{m,}` from `src`; return its exit state."""
        # x{m,n} and x{m,}: m mandatory copies, each from the previous one's exit ...
        for _ in range(expr.min):
            src = self.fragment(expr.body, src)
        if expr.max is None:
            # x{m,}: ... then a loop on a fresh state l: s -eps-> l, and one more copy whose exit
            # -eps-> l. With `fresh_loop_ends` (the rule FSMs) the copy starts on a fresh entry,
            # l -eps-> e, and the fragment ends on a fresh exit, l -eps-> f: the next fragment
            # does not start on the loop (`a* b*` must not become `(a | b)*` whatever a
            # fragment does at its entry, intrinsics included). Without it (the code-point
            # automata) the copy starts on l and l is the exit: two states fewer. Each shape's
            # numbering is pinned (tests/test_thompson.py).
            loop = self.new_state()
            if not self.fresh_loop_ends:
                self.eps(src, loop)
                self.eps(self.fragment(expr.body, loop), loop)
                return loop
            start, end = self.new_state(), self.new_state()
            self.eps(src, loop)
            self.eps(loop, start)
            self.eps(self.fragment(expr.body, start), loop)
            self.eps(loop, end)
            return end
        # x{m,n}: ... then a fresh exit f, s -eps-> f, and n-m optional copies, each from the
        # previous one's exit, each exit -eps-> f
        end = self.new_state()
        self.eps(src, end)
        for _ in range(expr.max - expr.min):
            src = self.fragment(expr.body, src)
            self.eps(src, end)
        return end
