"""WGrammar's constraint decomposition (WGrammar §1, §3.1): templates compiled offline into a
structure factory, instantiated per request with the request's arguments.

A template file is EBNF in xgrammar's dialect whose rule bodies may name parameters `$name`.
Offline (`Factory.from_text`, `Factory.from_file`) each rule becomes a *structure*: an operator
tree (operators.py) with `Param` leaves, its literals already tokenized, and the parameter names
it takes. It is parsed by xg2ref's EBNF front end, as WGrammar parses templates with a general
parser once at setup. Online (`Factory.instantiate`) a request names a structure and gives its
arguments; every `Param` is replaced by the operators of its value, in one pass over the
structure and the request (linear), and `compile_program` builds the machine.

The template subset and its token-level reading (the price of WGrammar's token semantics: a
literal is read as its greedy tokenization, a character class as tokens made of its characters):

    "text"                   Write(its tokens: each literal tokenized as written, so a
                             template and its written-out form read the same tokens)
    [C]                      one token that is one character of C
    [C]* / [C]+              tokens made only of characters of C, any number / at least one
                             ([C]? is one such one-character token or none; other counts of a
                             class are refused: tokens cannot count characters)
    x y, x | y, x*, x+, x?   Sequence, Choice, Star, x Star(x), Choice(x, nothing)
    x{m,n}                   x m times, then up to n - m optional (n <= MAX_COUNT)
    Token(..)/ExcludeToken(..), Write/Wait/IfElse/DoWhile calls   their token sets
    a rule name              the rule inlined, its parameters with it (it may not be
                             recursive: operators have no stack)
    $name                    the argument `name` of the request

An alternative's leading tokens are factored (alternatives that start with the same token share
it), so enumerations of literals that begin alike ("\\"a\\"" | "\\"b\\"") stay deterministic.

Request (a dict or its JSON text): {"structure": name, "args": {param: value}}, a value being
a string (its literal), {"one_of": [strings]} (one of them), another request (that structure's
instance) or a list of values (one after the other).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Union

from .operators import (Choice, CompiledProgram, DoWhile, End, IfElse, Sequence, Star, Wait, Write,
                        compile_program)
from .tokensets import OperatorProgramError, TokenSets

PARAM_PREFIX = "__param_"
MAX_COUNT = 64


@dataclass(frozen=True)
class Param:
    name: str


@dataclass(frozen=True)
class Structure:
    name: str
    operator: object
    params: tuple


def _mark_params(text: str) -> tuple:
    """The text with each `$name` outside strings and classes made a rule reference, and the names."""
    out, names, i = [], [], 0
    while i < len(text):
        c = text[i]
        if c in "\"'[":
            close = "]" if c == "[" else c
            j = i + 1
            while j < len(text) and text[j] != close:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif c == "$":
            m = re.match(r"\$([A-Za-z_]\w*)", text[i:])
            if not m:
                raise OperatorProgramError(f"a '$' not followed by a parameter name at character {i}")
            names.append(m.group(1))
            out.append(PARAM_PREFIX + m.group(1))
            i += m.end()
        else:
            out.append(c)
            i += 1
    names = list(dict.fromkeys(names))
    return "".join(out) + "".join(f'\n{PARAM_PREFIX}{n} ::= ""' for n in names), names


class Translator:
    """IR -> operators (module docstring), over one vocabulary's token sets."""

    def __init__(self, ir, sets: TokenSets, merge_literals: bool = False):
        self.rules = {r.name: r for r in ir.rules}
        self.sets = sets
        self.merge_literals = merge_literals  # a regex's adjacent characters are one text
        self._empty = sets.ids()

    def one_of(self, set_id: int) -> Wait:
        return Wait(set_id, allow=self._empty)

    def rule(self, name: str, stack=()) -> object:
        if name in stack:
            raise OperatorProgramError(f"rule {name} is recursive ({' -> '.join(stack + (name,))}): operators have no stack")
        return self.expr(self.rules[name].body, stack + (name,))

    def chars(self, cls, single: bool) -> int:
        """The tokens made of characters of `cls` (`single`: of exactly one)."""
        tokens = self.sets.chars(tuple(cls.codepoint_ranges()))
        if not single:
            return tokens
        return self.sets.intern([t for t in self.sets.members(tokens) if len(self.sets.token_text(t)) == 1])

    def expr(self, e, stack: tuple):
        from ...grammar import ir as I
        from ...intrinsics.token_sets import TokenSet

        if isinstance(e, I.ByteString):
            return Write(self.sets.literal(e.value)) if e.value else None
        if isinstance(e, I.CharClass):
            return self.one_of(self.chars(e, single=True))
        if isinstance(e, I.Sequence):
            items: list = []
            for x in e.items:
                if (self.merge_literals and isinstance(x, I.ByteString) and items
                        and isinstance(items[-1], I.ByteString)):
                    items[-1] = I.ByteString(items[-1].value + x.value)
                else:
                    items.append(x)
            parts = [p for p in (self.expr(x, stack) for x in items) if p is not None]
            return None if not parts else parts[0] if len(parts) == 1 else Sequence(tuple(parts))
        if isinstance(e, I.Choice):
            return factor([self.expr(a, stack) for a in e.alternatives])
        if isinstance(e, I.Repeat):
            if isinstance(e.body, I.CharClass) and (e.min, e.max) in ((0, None), (1, None)):
                tokens = self.one_of(self.chars(e.body, single=False))
                return Star(tokens) if e.min == 0 else Sequence((tokens, Star(tokens)))
            if isinstance(e.body, I.CharClass) and (e.max is None or e.max > 1):
                raise OperatorProgramError("a counted character class (x{m,n}) is not in the template subset: "
                                           "tokens cannot count characters")
            body = self.expr(e.body, stack)
            if body is None:
                return None
            if e.max is None:
                return Star(body) if e.min == 0 else Sequence((body,) * e.min + (Star(body),))
            if e.max > MAX_COUNT:
                raise OperatorProgramError(f"a repetition up to {e.max} (more than {MAX_COUNT}) is not in the template subset")
            tail = None
            for _ in range(e.max - e.min):
                tail = Choice((body if tail is None else Sequence((body, tail)), None))
            parts = (body,) * e.min + ((tail,) if tail is not None else ())
            return None if not parts else parts[0] if len(parts) == 1 else Sequence(parts)
        if isinstance(e, I.RuleRef):
            if e.name.startswith(PARAM_PREFIX):
                return Param(e.name[len(PARAM_PREFIX):])
            return self.rule(e.name, stack)
        if isinstance(e, TokenSet):
            ids = [t for t in e.ids if t < self.sets.vocab_size and self.sets.regular[t]]
            set_id = self.sets.intern(ids)
            return self.one_of(self.sets.complement(set_id) if e.exclude else set_id)
        raise OperatorProgramError(f"{type(e).__name__} is not in the template subset")


def _head(op):
    """(first token, the rest) when `op` starts with a Write, else None."""
    if isinstance(op, Write):
        return op.tokens[0], (Write(op.tokens[1:]) if len(op.tokens) > 1 else None)
    if isinstance(op, Sequence) and op.parts:
        h = _head(op.parts[0])
        if h is not None:
            rest = ((h[1],) if h[1] is not None else ()) + tuple(op.parts[1:])
            return h[0], (None if not rest else rest[0] if len(rest) == 1 else Sequence(rest))
    return None


def factor(alternatives: list):
    """The choice of `alternatives`, those that start with one token sharing it (module docstring)."""
    groups: dict = {}
    out: list = []
    for a in alternatives:
        h = _head(a)
        if h is None:
            out.append(a)
        else:
            if h[0] not in groups:
                groups[h[0]] = []
                out.append(("group", h[0]))
            groups[h[0]].append(h[1])
    for i, a in enumerate(out):
        if isinstance(a, tuple) and a[0] == "group":
            rests = groups[a[1]]
            rest = rests[0] if len(rests) == 1 else factor(rests)
            out[i] = Write((a[1],)) if rest is None else Sequence((Write((a[1],)), rest))
    unique = list(dict.fromkeys(out))
    return unique[0] if len(unique) == 1 else Choice(tuple(unique))


def substitute(op, args: dict, convert):
    """`op` with each Param replaced by `convert(args[name])` (one pass)."""
    if isinstance(op, Param):
        if op.name not in args:
            raise OperatorProgramError(f"the request gives no argument {op.name!r}")
        return convert(args[op.name])
    if op is None or isinstance(op, (Write, End)):
        return op
    if isinstance(op, Sequence):
        return Sequence(tuple(substitute(p, args, convert) for p in op.parts))
    if isinstance(op, Choice):
        return Choice(tuple(substitute(a, args, convert) for a in op.alternatives))
    if isinstance(op, Star):
        return Star(substitute(op.body, args, convert))
    if isinstance(op, Wait):
        return Wait(op.wait, op.allow, op.deny, substitute(op.body, args, convert))
    if isinstance(op, IfElse):
        return IfElse(op.then_set, op.else_set, substitute(op.then, args, convert), substitute(op.else_, args, convert))
    if isinstance(op, DoWhile):
        return DoWhile(substitute(op.body, args, convert), op.cont)
    raise OperatorProgramError(f"{type(op).__name__} is not an operator")


class Factory:
    """WGrammar's structure factory for one template and one vocabulary (module docstring)."""

    def __init__(self, structures: dict, sets: TokenSets, ir=None) -> None:
        self.structures = structures
        self.sets = sets
        self.ir = ir  # the parsed template (its parameters as rules PARAM_PREFIX + name)

    @classmethod
    def from_text(cls, text: str, tokenizer_info) -> "Factory":
        """The offline step: parse the template, translate every rule, tokenize its literals."""
        from ...frontends.ebnf.parser import parse_ebnf

        marked, _ = _mark_params(text)
        ir = parse_ebnf(marked, root_rule_name=_first_rule(marked))
        sets = TokenSets.for_vocabulary(tokenizer_info)
        translate = Translator(ir, sets)
        structures = {}
        for rule in ir.rules:
            if rule.name.startswith(PARAM_PREFIX):
                continue
            op = translate.rule(rule.name)
            params = tuple(dict.fromkeys(p.name for p in _params(op)))
            structures[rule.name] = Structure(rule.name, op, params)
        return cls(structures, sets, ir)

    @classmethod
    def from_file(cls, path: str, tokenizer_info) -> "Factory":
        with open(path, encoding="utf-8") as f:
            return cls.from_text(f.read(), tokenizer_info)

    def instantiate(self, request: Union[str, dict]):
        """The online step: the request's operator program (module docstring)."""
        if isinstance(request, str):
            try:
                request = json.loads(request)
            except json.JSONDecodeError as err:
                raise OperatorProgramError(f"the request is not JSON: {err}") from None
        return self._value(request)

    def compile(self, request: Union[str, dict]) -> CompiledProgram:
        return compile_program(self.instantiate(request), self.sets)

    def written_out(self, request: Union[str, dict]):
        """The request's constraint at the byte level: a GrammarIR with the template's rules
        inlined and every parameter replaced by its value (a literal, a choice of literals, an
        instance, a sequence). What a byte-level engine compiles for the same request, and
        the text `regex_of` prints for the online path."""
        from ...grammar.ir import ByteString, GrammarIR, Rule, RuleRef
        from ...grammar.ir import Choice as IRChoice
        from ...grammar.ir import Sequence as IRSequence
        from ...grammar.passes import map_expr

        if isinstance(request, str):
            request = json.loads(request)
        rules = {r.name: r for r in self.ir.rules}

        def value(v):
            if isinstance(v, str):
                return ByteString(v.encode("utf-8"))
            if isinstance(v, list):
                return IRSequence(tuple(value(x) for x in v))
            if isinstance(v, dict) and "one_of" in v:
                return IRChoice(tuple(ByteString(x.encode("utf-8")) for x in v["one_of"]))
            self._value(v)  # (the same checks as instantiate: raises on a bad request)
            return body(v["structure"], v.get("args", {}))

        def body(name: str, args: dict, stack=()):
            def put(node):
                if isinstance(node, RuleRef) and node.name.startswith(PARAM_PREFIX):
                    return value(args[node.name[len(PARAM_PREFIX):]])
                if isinstance(node, RuleRef):
                    return body(node.name, args, stack + (name,))
                return node
            return map_expr(rules[name].body, put)

        return GrammarIR((Rule("root", value(request)),), "root")

    def _value(self, value):
        if isinstance(value, str):
            return Write(self.sets.literal(value)) if value else None
        if isinstance(value, list):
            parts = tuple(p for p in (self._value(v) for v in value) if p is not None)
            return None if not parts else parts[0] if len(parts) == 1 else Sequence(parts)
        if isinstance(value, dict) and set(value) == {"one_of"} and isinstance(value["one_of"], list) and value["one_of"]:
            if not all(isinstance(v, str) for v in value["one_of"]):
                raise OperatorProgramError("one_of takes a list of strings")
            return factor([self._value(v) for v in value["one_of"]])
        if isinstance(value, dict) and "structure" in value and set(value) <= {"structure", "args"}:
            s = self.structures.get(value["structure"])
            if s is None:
                raise OperatorProgramError(f"no structure {value['structure']!r} in the template "
                                           f"(it has {sorted(self.structures)})")
            args = value.get("args", {})
            if not isinstance(args, dict):
                raise OperatorProgramError(f"the args of {s.name} must be an object")
            extra = sorted(set(args) - set(s.params))
            if extra:
                raise OperatorProgramError(f"structure {s.name} takes {list(s.params)}, not {extra}")
            return substitute(s.operator, args, self._value)
        raise OperatorProgramError(f"a request value is a string, a list, {{\"one_of\": [...]}} or "
                                   f"{{\"structure\": ..., \"args\": {{...}}}}; got {json.dumps(value)[:80]}")


def _first_rule(text: str) -> str:
    m = re.search(r"^\s*([A-Za-z_][\w.-]*)\s*(?:\[[^\]]*\])?\s*::=", text, re.M)
    if not m:
        raise OperatorProgramError("the template defines no rule")
    return m.group(1)


def _params(op):
    if isinstance(op, Param):
        yield op
    elif isinstance(op, Sequence):
        for p in op.parts:
            yield from _params(p)
    elif isinstance(op, Choice):
        for a in op.alternatives:
            yield from _params(a)
    elif isinstance(op, (Star, DoWhile)):
        yield from _params(op.body)
    elif isinstance(op, Wait):
        yield from _params(op.body)
    elif isinstance(op, IfElse):
        yield from _params(op.then)
        yield from _params(op.else_)


def regex_of(ir) -> str:
    """A GrammarIR without recursion, token sets or intrinsics printed as a regex (xg2ref's
    dialect, which the online path reads back): rules inlined, literals escaped."""
    from ...grammar import ir as I

    rules = {r.name: r for r in ir.rules}

    def lit(text: str) -> str:
        return "".join("\\" + c if c in ".^$*+?()[]{}|\\/" else c for c in text)

    def cls(e) -> str:
        def ch(c: int) -> str:
            t = chr(c)
            return "\\" + t if t in "]\\^-[" else t if c >= 0x20 else f"\\x{c:02x}"
        return "[" + ("^" if e.negated else "") + "".join(ch(lo) if lo == hi else f"{ch(lo)}-{ch(hi)}"
                                                           for lo, hi in e.ranges) + "]"

    def go(e, stack=()) -> str:
        if isinstance(e, I.ByteString):
            return lit(e.value.decode("utf-8"))
        if isinstance(e, I.CharClass):
            return cls(e)
        if isinstance(e, I.Sequence):
            return "".join(go(x, stack) for x in e.items)
        if isinstance(e, I.Choice):
            return "(" + "|".join(go(a, stack) for a in e.alternatives) + ")"
        if isinstance(e, I.Repeat):
            q = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((e.min, e.max))
            q = q or "{%d,%s}" % (e.min, "" if e.max is None else e.max)
            return "(" + go(e.body, stack) + ")" + q
        if isinstance(e, I.RuleRef):
            if e.name in stack:
                raise OperatorProgramError(f"rule {e.name} is recursive: no regex for it")
            return go(rules[e.name].body, stack + (e.name,))
        raise OperatorProgramError(f"{type(e).__name__} has no regex")

    return go(rules[ir.root].body)
