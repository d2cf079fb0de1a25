"""The intrinsic seam: how a construct with a language of its own joins every stage of the
pipeline (XGrammar-2 §3.2 is the model: TagDispatch is a leaf of the grammar with its own
automaton). docs/adding-an-intrinsic.md walks through writing one.

Two tiers, because most constructs are macros:

    Macro       an EBNF call that lowers to nodes the pipeline already knows
                (Substring, Regex, TokenTagDispatch, Token, ExcludeToken):
                    from_call(call) -> Expr
    Intrinsic   a leaf of the IR, a frozen dataclass subclassing `Intrinsic`, that every stage
                asks through the methods below and nothing else (TagDispatch, TokenSet)

Every stage that walks the IR has exactly one branch for intrinsics,
`if isinstance(node, Intrinsic): node.<method>(...)`:

    stage                        method                      contract
    EBNF parser (xg2ref/frontends/ebnf/parser.py)        REGISTRY[name].from_call    arguments checked; SourceError at the
                                                             offending value; rule names recorded
    printer                      to_ebnf()                   parse(print(node)) == node
    references, inlining         rule_names()                every rule the node reads
    embedding, shapes            renamed(rename)             the node reading renamed rules
    signature, shapes            key()                       hashable; equal nodes, equal keys
    nullability                  nullable(nullable rules)    no default: the empty string decided
    productivity                 productive(productive)      some string is read
    FSM builder (fsm/build.py)   fragment(nfa, src) -> exit  through the NFA builder's public edges
    oracle (oracle/recognizer)   oracle_reach / oracle_pre   written apart from `fragment`: the
                                                             brute-force reading of the construct
    property tests (strategies)  shortest / sample           a sentence part the oracle accepts

`level` says what the node reads: "byte" (bytes, like a literal) or "token" (a whole token,
never bytes; such nodes reach the FSM as token symbols, see TokenSet).

The oracle asks an intrinsic through an `OracleReader` (oracle/recognizer.py): `reach(k, p)`,
the ends j with d[p:j] in L(rule_names()[k]); `pre(k, p)`, whether d[p:n] starts a word of
that rule; `reach_self(p)` / `pre_self(p)`, the same for the node itself (for loops); `data`;
`marks` (token reads, for token-level nodes).

The registry maps each EBNF call name to its Macro or Intrinsic class; `register` adds one (a
name may not be taken twice). The built-ins live in xg2ref/intrinsics/ and register when that
package is imported (the EBNF front end imports it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import AbstractSet, Callable, ClassVar, Container, Iterator, Optional

from .source_error import SourceError


class Value:
    """An argument of an EBNF call: kind ("string", "integer", "boolean", "rule name", "tuple"),
    value (a list of Values for a tuple) and source offset (-1: a default)."""

    __slots__ = ("kind", "value", "pos")

    def __init__(self, kind: str, value, pos: int):
        self.kind, self.value, self.pos = kind, value, pos


class Names:
    """The names in any of `groups` (sets, or dicts by their keys), asked without a union: a
    grammar's rules and the helpers its earlier macro calls defined, for each call of a
    grammar that makes thousands of them."""

    def __init__(self, *groups):
        self.groups = groups

    def __contains__(self, name) -> bool:
        return any(name in group for group in self.groups)


@dataclass
class Call:
    """One EBNF call `Name(value, ..., key=value)` as the parser read it.

    Example: Call("Token", 7, [Value("integer", 5, 13)], {}) is `Token(5)` at offset 7
    """

    name: str
    pos: int
    positional: list
    named: dict
    references: list = field(default_factory=list)  # (rule name, offset) the parser checks
    rules: dict = field(default_factory=dict)  # helper rules the macro defines: name -> body
    taken: Container[str] = frozenset()  # rule names of the grammar, which a helper avoids
    # base -> the next suffix to try; the parser shares one dict between a grammar's calls, so a
    # thousand calls that each name helpers from one base do not each try the names before
    counters: dict = field(default_factory=dict, repr=False)

    def fresh(self, base: str) -> str:
        """A name for a helper rule (`define`): `base`, or `base_k`, taken by no rule."""
        name, k = base, self.counters.get(base, 0)
        if k:
            name = f"{base}_{k}"
        while name in self.taken or name in self.rules:
            k += 1
            name = f"{base}_{k}"
        self.counters[base] = k + 1
        self.rules[name] = None
        return name

    def define(self, name: str, body) -> None:
        """The body of the helper rule `name` (from `fresh`)."""
        self.rules[name] = body

    def refer(self, value: Value) -> str:
        """A rule-name argument: recorded so that the parser checks the rule is defined."""
        self.references.append((value.value, value.pos))
        return value.value

    def fail(self, message: str, value: Optional[Value] = None) -> SourceError:
        """The error to raise, at `value` (or at the call's name)."""
        return SourceError(f"{self.name}: {message}" if not message.startswith(self.name) else message,
                           value.pos if value is not None and value.pos >= 0 else self.pos)

    def no_named(self) -> None:
        if self.named:
            raise SourceError(f"{self.name} takes no named arguments, got {next(iter(self.named))}", self.pos)

    def only_named(self, *allowed: str) -> None:
        unknown = sorted(set(self.named) - set(allowed))
        if unknown:
            raise self.fail(f"unknown argument {unknown[0]} ({', '.join(allowed)})", self.named[unknown[0]])

    def boolean(self, key: str, default: bool) -> bool:
        value = self.named.get(key, Value("boolean", default, -1))
        if value.kind != "boolean":
            raise self.fail(f"{key} must be true or false", value)
        return value.value


class Macro:
    """An EBNF call that lowers to existing nodes. Subclasses set `ebnf_name` and `from_call`."""

    ebnf_name: ClassVar[str]

    @classmethod
    def from_call(cls, call: Call):
        raise NotImplementedError


class Intrinsic:
    """A leaf of the IR with a language of its own. Subclasses are frozen, slotted dataclasses
    that implement every method (the module docstring gives the contract of each)."""

    __slots__ = ()
    ebnf_name: ClassVar[str]
    level: ClassVar[str] = "byte"

    @property
    def title(self) -> str:
        """How messages name the construct (its EBNF calls)."""
        return self.ebnf_name

    @classmethod
    def from_call(cls, call: Call):
        raise NotImplementedError

    def to_ebnf(self, literal: Callable[[bytes], str]) -> str:
        """The call that reads back as this node; `literal(b)` prints a byte string."""
        raise NotImplementedError

    def rule_names(self) -> tuple:
        return ()

    def renamed(self, rename: Callable[[str], str]) -> "Intrinsic":
        return self

    def key(self) -> tuple:
        raise NotImplementedError

    def nullable(self, nullable: AbstractSet[str]) -> bool:
        raise NotImplementedError

    def productive(self, productive: AbstractSet[str]) -> bool:
        raise NotImplementedError

    def fragment(self, nfa, src: int) -> int:
        raise NotImplementedError

    def oracle_reach(self, reader, i: int) -> set:
        raise NotImplementedError

    def oracle_pre(self, reader, i: int) -> bool:
        raise NotImplementedError

    def shortest(self, shortest_rule: Callable[[str], tuple]) -> tuple:
        """(bytes, depth) of the shortest sentence part, given each rule's; INF when none."""
        raise NotImplementedError

    def sample(self, rng, depth: int, usable: Callable[[str], bool], sample_rule: Callable[[str], None],
               out: bytearray) -> None:
        """Append to `out` a random sentence part (a rule's via `sample_rule(name)`)."""
        raise NotImplementedError


REGISTRY: dict = {}  # EBNF call name -> Macro or Intrinsic class


def register(cls):
    """Class decorator: make `cls.ebnf_name` an EBNF call (a name may be registered once)."""
    name = cls.ebnf_name
    if not name.isidentifier():
        raise ValueError(f"an intrinsic's name must be an identifier, got {name!r}")
    if REGISTRY.get(name, cls) is not cls:
        raise ValueError(f"the intrinsic {name} is already registered ({REGISTRY[name].__qualname__})")
    REGISTRY[name] = cls
    return cls


def unregister(name: str) -> None:
    """Remove a registered call (for tests and examples that register their own)."""
    REGISTRY.pop(name, None)


def call_names() -> Iterator[str]:
    """The registered EBNF call names, longest first (what the lexer's INTRINSIC token tries)."""
    return iter(sorted(REGISTRY, key=lambda n: (-len(n), n)))
