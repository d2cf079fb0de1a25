"""Hypothesis strategies and samplers for property tests against the oracle.

DESIGN.md, "Semantics an oracle must get exactly right", is checked by comparing the engine
with the recognizer on many small random cases. This module makes those cases:

    grammars()        random GrammarIR values: recursive (left recursion included), nullable,
                      sometimes unproductive, over a small alphabet so random strings hit them
    byte_strings()    random short inputs over the same alphabet
    vocabularies()    random small vocabularies, with a stop token and an empty special token
    sentences()       a random sentence of a grammar, by expanding its IR (None: empty language)
    mutate()          a near miss: one byte inserted, deleted or replaced

Generated trees are canonical, the shape a parser gives back: every Sequence and Choice has
at least two children, no Sequence sits directly in a Sequence nor a Choice in a Choice, the
empty string appears only as an alternative of a Choice, and repetitions never read {1,1}.

What it leaves out: intrinsics, and grammars that are large enough to be slow for the
oracle. hypothesis is a test dependency, so `xg2ref.oracle` does not import this module.
"""

from __future__ import annotations

import random
from typing import Optional

from hypothesis import strategies as st

from ..grammar.ir import (
    ByteString,
    CharClass,
    Choice,
    Expr,
    GrammarIR,
    Repeat,
    Rule,
    RuleRef,
    Sequence,
    walk,
)
from ..grammar.intrinsic import Intrinsic
from ..intrinsics.token_sets import TokenSet

INF = float("inf")

# Repetition bounds drawn by grammars(): ?, *, +, and a few explicit ones.
_REPEAT_BOUNDS = ((0, 1), (0, None), (0, None), (1, None), (0, 0), (2, 3), (0, 2), (2, None))
# Classes drawn now and then besides those over the alphabet: multi-byte UTF-8 and negations.
_EXTRA_CLASSES = (
    CharClass(((0xE0, 0xE9),)),
    CharClass(((0x3B1, 0x3B3), (0x4E00, 0x4E00))),
    CharClass(((0x1F600, 0x1F601),)),
)


def _check_alphabet(alphabet: bytes) -> bytes:
    alphabet = bytes(alphabet)
    if not alphabet or any(b >= 0x80 for b in alphabet):
        raise ValueError("the alphabet must be a non-empty run of ASCII bytes")
    return alphabet


def byte_strings(alphabet: bytes = b"abc", max_size: int = 6) -> st.SearchStrategy[bytes]:
    """Byte strings of length 0..max_size over `alphabet` (plus, rarely, any byte).

    Example: byte_strings(b"ab", 3) may draw b"aba"
    """
    letters = st.sampled_from(sorted(set(_check_alphabet(alphabet))))
    any_byte = st.integers(0, 255)
    return st.lists(st.one_of(letters, letters, letters, any_byte), max_size=max_size).map(bytes)


@st.composite
def _class(draw, alphabet: bytes) -> CharClass:
    kind = draw(st.integers(0, 7))
    if kind == 7:
        return draw(st.sampled_from(_EXTRA_CLASSES))
    letters = sorted(set(alphabet))
    lo = draw(st.sampled_from(letters))
    hi = draw(st.sampled_from([c for c in letters if c >= lo]))
    return CharClass(((lo, hi),), negated=kind >= 5)


@st.composite
def _expr(draw, names: tuple[str, ...], alphabet: bytes, depth: int, parent: str, token_ids: tuple = ()) -> Expr:
    """One expression; `parent` is "seq", "choice" or "" so that no node repeats its parent."""
    kinds = ["bytes", "ref", "class"] if names else ["bytes", "class"]
    if token_ids:
        kinds.append("tokens")
    if depth > 0:
        # repetitions inside sequences weigh more: adjacent loops (`x* y*`) are where
        # FSM construction goes wrong
        kinds += ["seq", "choice", "repeat"] + ["repeat"] * (2 if parent == "seq" else 0)
    kinds = [k for k in kinds if k != parent]
    kind = draw(st.sampled_from(kinds))
    if kind == "bytes":
        letters = st.sampled_from(sorted(set(alphabet)))
        return ByteString(bytes(draw(st.lists(letters, min_size=1, max_size=2))))
    if kind == "ref":
        return RuleRef(draw(st.sampled_from(names)))
    if kind == "class":
        return draw(_class(alphabet))
    if kind == "tokens":
        ids = draw(st.lists(st.sampled_from(token_ids), min_size=1, max_size=3, unique=True))
        return TokenSet(tuple(ids), exclude=draw(st.booleans()))
    if kind == "repeat":
        lo, hi = draw(st.sampled_from(_REPEAT_BOUNDS))
        return Repeat(draw(_expr(names, alphabet, depth - 1, "", token_ids)), lo, hi)
    count = draw(st.integers(2, 3))
    items = [draw(_expr(names, alphabet, depth - 1, kind, token_ids)) for _ in range(count)]
    if kind == "seq":
        return Sequence(tuple(items))
    if draw(st.integers(0, 3)) == 0:
        items.insert(draw(st.integers(0, len(items))), ByteString(b""))
    return Choice(tuple(items))


@st.composite
def grammars(draw, max_rules: int = 4, max_depth: int = 3, alphabet: bytes = b"abc",
             lookaheads: bool = False, refs: bool = True, token_ids: tuple = ()) -> GrammarIR:
    """Random valid grammars: root "root", rules r1, r2, ..., every reference defined.

    With `lookaheads`, non-root rules sometimes carry a lookahead assertion (which never
    changes the language). Without `refs`, rule bodies reference no rule (regular languages,
    which exercise the FSM construction alone). With `token_ids`, leaves may be token sets
    (`Token(...)` / `ExcludeToken(...)`) over those ids.

    Example: grammars(max_rules=2) may draw  root ::= root "a" | r1 ;  r1 ::= ("b" | "") [^c]?
    """
    alphabet = _check_alphabet(alphabet)
    count = draw(st.integers(1, max_rules))
    names = ("root",) + tuple(f"r{k}" for k in range(1, count))
    rules = []
    for name in names:
        body = draw(_expr(names if refs else (), alphabet, draw(st.integers(0, max_depth)), "", tuple(token_ids)))
        lookahead = None
        if lookaheads and name != "root" and draw(st.integers(0, 2)) == 0:
            lookahead = draw(_expr(names, alphabet, 1, ""))
        rules.append(Rule(name, body, lookahead))
    return GrammarIR(tuple(rules), root="root")


@st.composite
def vocabularies(draw, alphabet: bytes = b"abc", max_tokens: int = 12):
    """A shuffled vocabulary and its token ids: (vocab, stop_ids, special_ids).

    `vocab` holds distinct non-empty byte strings over `alphabet` (lengths 1..3) and, when
    drawn, a stop token b"</s>" (its id in `stop_ids`) and an empty special token (its id in
    `special_ids`). Ids are sorted lists.

    Example: ([b"ab", b"", b"c", b"</s>"], [3], [1])
    """
    letters = st.sampled_from(sorted(set(_check_alphabet(alphabet))))
    words = draw(st.lists(st.lists(letters, min_size=1, max_size=3).map(bytes),
                          min_size=1, max_size=max_tokens, unique=True))
    with_stop, with_special = draw(st.booleans()), draw(st.booleans())
    tokens = words + [b"</s>"] * with_stop + [b""] * with_special
    vocab = draw(st.permutations(tokens))
    stop_ids = [t for t, tok in enumerate(vocab) if tok == b"</s>"]
    special_ids = [t for t, tok in enumerate(vocab) if tok == b""]
    return vocab, stop_ids, special_ids


def mutate(data: bytes, rng: random.Random, alphabet: bytes = b"abc") -> bytes:
    """`data` with one byte inserted, deleted or replaced (a byte of `alphabet`, or any byte).

    Example: mutate(b"ab", random.Random(0)) might be b"acb"
    """
    data = bytes(data)
    byte = rng.choice(alphabet) if rng.random() < 0.8 else rng.randrange(256)
    op = rng.randrange(3) if data else 0
    pos = rng.randrange(len(data) + (op == 0))
    if op == 0:
        return data[:pos] + bytes((byte,)) + data[pos:]
    if op == 1:
        return data[:pos] + data[pos + 1:]
    return data[:pos] + bytes((byte,)) + data[pos + 1:]


def _encode(cp: int) -> bytes:
    return chr(cp).encode("utf-8", "surrogatepass")


def _shortest(ir: GrammarIR) -> dict[int, tuple[float, float]]:
    """(length, height) of a shortest, then lowest, derivation of every node, keyed by id().

    Least values of (lexicographic order; inf = no derivation):

        "s" -> (|s|, 0)    [...] -> (shortest UTF-8 length, 0) or inf if empty
        e1 ... ek -> (sum of lengths, 1 + max of heights)    e1 | ... | ek -> min of (l, h + 1)
        b{m,M} -> (m * l(b), h(b) + 1), or (0, 0) when m = 0     A -> (l, h + 1) of A's body

    Heights strictly drop from a node to the children a shortest derivation uses, so
    following them terminates.
    """
    nodes = [n for r in ir.rules for n in walk(r.body)]
    body = {r.name: r.body for r in ir.rules}
    best: dict[int, tuple[float, float]] = {id(n): (INF, INF) for n in nodes}
    changed = True
    while changed:
        changed = False
        for n in nodes:
            new = _shortest_step(n, best, body)
            if new < best[id(n)]:
                best[id(n)] = new
                changed = True
    return best


def _shortest_step(n: Expr, best, body) -> tuple[float, float]:
    if isinstance(n, ByteString):
        return (len(n.value), 0)
    if isinstance(n, Intrinsic):  # its own (TagDispatch: the empty free text; a token set: none)
        return n.shortest(lambda name: best[id(body[name])])
    if isinstance(n, CharClass):
        ranges = n.codepoint_ranges()
        return (len(_encode(ranges[0][0])), 0) if ranges else (INF, INF)
    if isinstance(n, Sequence):
        kids = [best[id(k)] for k in n.items]
        return (sum(k[0] for k in kids), 1 + max(k[1] for k in kids))
    if isinstance(n, Choice):
        return min((l, h + 1) for l, h in (best[id(k)] for k in n.alternatives))
    if isinstance(n, Repeat):
        if n.min == 0:
            return (0, 0)
        l, h = best[id(n.body)]
        return (n.min * l, h + 1)
    l, h = best[id(body[n.name])]
    return (l, h + 1)


def sentences(ir: GrammarIR, rng: random.Random, max_depth: int = 6, max_bytes: int = 256) -> Optional[bytes]:
    """A random sentence of `ir`'s root rule, or None when the language is empty.

    Expands the IR with random choices (productive alternatives only, repetitions up to three
    extra copies) for `max_depth` levels of nesting, or until the sentence holds `max_bytes`
    bytes (repetitions with large minimums under recursion grow exponentially), then completes
    every open node by its shortest derivation.

    Example: sentences(ir_of('root ::= "a" root | "b"'), random.Random(1)) might be b"aab"
    """
    best = _shortest(ir)
    body = {r.name: r.body for r in ir.rules}
    if best[id(body[ir.root])][0] == INF:
        return None
    out = bytearray()
    _sample(body[ir.root], rng, max_depth, best, body, out, max_bytes)
    return bytes(out)


def _sample(n: Expr, rng: random.Random, depth: int, best, body, out: bytearray, budget: int) -> None:
    if len(out) >= budget:
        depth = 0  # long enough: complete by shortest derivations
    if isinstance(n, ByteString):
        out += n.value
    elif isinstance(n, CharClass):
        ranges = n.codepoint_ranges()
        if depth <= 0:
            out += _encode(ranges[0][0])
            return
        lo, hi = rng.choice(ranges)
        cp = lo + rng.randrange(min(hi - lo, 3) + 1) if rng.random() < 0.7 else rng.randint(lo, hi)
        out += _encode(cp)
    elif isinstance(n, Sequence):
        for kid in n.items:
            _sample(kid, rng, depth - 1, best, body, out, budget)
    elif isinstance(n, Choice):
        if depth <= 0:
            kid = min(n.alternatives, key=lambda e: best[id(e)])
        else:
            kid = rng.choice([e for e in n.alternatives if best[id(e)][0] != INF])
        _sample(kid, rng, depth - 1, best, body, out, budget)
    elif isinstance(n, Repeat):
        count = n.min
        if depth > 0 and best[id(n.body)][0] != INF:
            top = n.min + 3 if n.max is None else min(n.max, n.min + 3)
            count = rng.randint(n.min, top)
        for _ in range(count):
            _sample(n.body, rng, depth - 1, best, body, out, budget)
    elif isinstance(n, Intrinsic):
        n.sample(rng, depth, lambda name: best[id(body[name])][0] != INF,
                 lambda name: _sample(body[name], rng, depth - 1, best, body, out, budget), out)
    else:
        _sample(body[n.name], rng, depth - 1, best, body, out, budget)
