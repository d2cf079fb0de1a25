"""XGrammar-2 §2.1: `Grammar`, the public grammar object (xgrammar's `xgrammar.Grammar`).

A thin immutable wrapper around a `GrammarIR`: built from EBNF text (`parse_ebnf`), from an
IR, or as the builtin JSON grammar; printed with `print_grammar`; compared and hashed by its
IR. Compiling against a vocabulary lives in `xg2ref.compiler`.

Equality and hashing walk the IR iteratively (a pre-order list of node signatures determines
a tree), so grammars nested as deep as the parser allows still compare; the IR dataclasses'
own `==` recurses and stops a few hundred levels down.

`union` and `concat` rename each grammar's rules apart under a new root; `serialize_json`
writes the IR as versioned JSON (xg2ref/serialization.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from ..frontends.ebnf.parser import parse_ebnf
from .intrinsic import Intrinsic
from .ir import EPSILON, ByteString, CharClass, Choice, GrammarIR, Repeat, Rule, RuleRef, Sequence, walk
from .passes import renamed_rules
from .printer import print_grammar

BUILTIN_JSON_PATH = Path(__file__).with_name("builtin_json.ebnf")


class Grammar:
    """A grammar: named rules and a root rule.

    Example: str(Grammar.from_ebnf('root ::= "a" | [b-c]+')) == 'root ::= "a" | [b-c]+\\n'
    """

    __slots__ = ("_ir", "_make_ir", "_signature", "parts", "approximations")
    _builtin_json: Optional["Grammar"] = None

    def __init__(self, ir: GrammarIR):
        if not isinstance(ir, GrammarIR):
            raise TypeError(f"Grammar needs a GrammarIR, got {type(ir).__name__}")
        self._ir: Optional[GrammarIR] = ir
        self._make_ir = None
        self._signature: Optional[tuple] = None
        # (top IR, SubGrammar stubs) when the grammar was assembled from sub-grammars the
        # compiler may take from its cache (xg2ref/linking.py); None otherwise
        self.parts: Optional[tuple] = None
        # (JSON path, keyword, how) of each JSON Schema keyword read as a superset (from_json_schema)
        self.approximations: tuple = ()

    @classmethod
    def _assembled(cls, make_ir: Callable[[], GrammarIR], top: GrammarIR, subgrammars: tuple) -> "Grammar":
        """A grammar given as a top IR whose stub rules stand for closed sub-grammars
        (`SubGrammar`, linked by the compiler: xg2ref/linking.py); `make_ir()` builds the same
        grammar as one IR, on first use of `.ir`."""
        grammar = cls(top)
        grammar._ir, grammar._make_ir, grammar.parts = None, make_ir, (top, subgrammars)
        return grammar

    @property
    def ir(self) -> GrammarIR:
        """The grammar as one IR."""
        if self._ir is None:
            self._ir = self._make_ir()
        return self._ir

    @classmethod
    def from_ebnf(cls, ebnf_string: str, *, root_rule_name: str = "root") -> "Grammar":
        """Parse EBNF text in xgrammar's dialect (raises EBNFError or GrammarLimitError)."""
        return cls(parse_ebnf(ebnf_string, root_rule_name=root_rule_name))

    @classmethod
    def from_regex(cls, regex_string: str, *, print_converted_ebnf: bool = False) -> "Grammar":
        """The grammar of the strings `regex_string` matches as a whole, in xgrammar's regex
        dialect: the pattern is rewritten as EBNF text and parsed (xg2ref/frontends/regex/to_ebnf.py;
        raises RegexError naming an unsupported construct). `print_converted_ebnf` prints
        that text."""
        from ..frontends.regex.to_ebnf import converted_regex_ir

        ir, text = converted_regex_ir(regex_string)
        if print_converted_ebnf:
            print(f"Converted EBNF: {text}", end="")
        return cls(ir)

    @classmethod
    def from_json_schema(cls, schema, *, any_whitespace: bool = True, indent: Optional[int] = None,
                         separators: Optional[tuple] = None, strict_mode: bool = True,
                         max_whitespace_cnt: Optional[int] = None, print_converted_ebnf: bool = False,
                         any_order: bool = False, approximate: Optional[bool] = None,
                         exact_formats: Optional[bool] = None) -> "Grammar":
        """The grammar of the JSON texts valid under `schema` (a dict, a bool, JSON text or a
        pydantic model class), in the layout the options ask for (xg2ref/frontends/json_schema/converter.py;
        raises InvalidJSONError naming the offending part by its JSON path). A keyword the grammar
        cannot enforce exactly raises JSONSchemaNotExactError (a subclass) unless `approximate`
        (or the process-wide setting, xg2ref/config.py) accepts a superset; the grammar's
        `approximations` then lists each (JSON path, keyword, how). `exact_formats` (or the
        process-wide setting) builds the formats' costly exact grammars (xg2ref/config.py)."""
        from ..frontends.json_schema.converter import convert_json_schema

        ir, approximations = convert_json_schema(
            schema, any_whitespace=any_whitespace, indent=indent, separators=separators, strict_mode=strict_mode,
            max_whitespace_cnt=max_whitespace_cnt, any_order=any_order, approximate=approximate,
            exact_formats=exact_formats)
        grammar = cls(ir)
        grammar.approximations = approximations
        if print_converted_ebnf:
            print(grammar)
        return grammar

    @classmethod
    def from_structural_tag(cls, structural_tag, triggers=None) -> "Grammar":
        """The grammar of a structural tag (xgrammar 0.2.8's JSON format, as text, a dict or a
        StructuralTag; xg2ref/frontends/structural_tag/converter.py). Raises InvalidStructuralTagError
        naming the offending part. Token strings need a tokenizer: use
        `GrammarCompiler.compile_structural_tag`. The legacy form (a list of
        `StructuralTagItem`s and a list of triggers) is accepted too."""
        from ..frontends.structural_tag.converter import legacy_structural_tag, structural_tag_to_ir

        if triggers is not None:
            structural_tag = legacy_structural_tag(structural_tag, triggers)
        return cls(structural_tag_to_ir(structural_tag))

    @staticmethod
    def from_lark(lark_string: str, *, tokenizer_info=None, named_grammars=None,
                  dialect: Optional[str] = None) -> "Grammar":
        """The grammar of a Lark grammar text with a `start` rule, in xgrammar 0.2.8's dialect
        (xg2ref/frontends/lark/converter.py) or llguidance's (`dialect="llguidance"`, also
        taken when the text starts with `%llguidance {...}`; frontends/lark/dialect.py).
        `tokenizer_info` resolves named special tokens (`<|eot|>`, `<[*]>`); `named_grammars`
        maps a name (no `@`) to the Grammar or Lark text `@name` stands for. Raises LarkError
        (an EBNFError) naming the offending place."""
        from ..frontends.lark.converter import lark_to_ir

        return Grammar(lark_to_ir(lark_string, tokenizer_info, named_grammars, grammar_type=Grammar,
                                  dialect=dialect))

    @classmethod
    def from_ir(cls, ir: GrammarIR) -> "Grammar":
        """Wrap an IR built in code (tests, passes); it is not re-validated."""
        return cls(ir)

    @classmethod
    def builtin_json_grammar(cls) -> "Grammar":
        """xgrammar 0.2.8's JSON grammar (`builtin_json.ebnf`), parsed once per process."""
        if Grammar._builtin_json is None:
            Grammar._builtin_json = cls.from_ebnf(BUILTIN_JSON_PATH.read_text(encoding="utf-8"))
        return Grammar._builtin_json

    @staticmethod
    def union(*grammars: "Grammar") -> "Grammar":
        """The grammar of the strings any of `grammars` matches (`root ::= root_1 | root_2 ...`,
        each grammar's rules renamed apart: see `_combined`)."""
        return _combined(grammars, Choice, "union")

    @staticmethod
    def concat(*grammars: "Grammar") -> "Grammar":
        """The grammar of the concatenations of one string of each of `grammars`, in order
        (`root ::= root_1 root_2 ...`)."""
        return _combined(grammars, Sequence, "concat")

    def serialize_json(self) -> str:
        """The grammar as versioned JSON text (xg2ref/serialization.py)."""
        from ..serialization import serialize_grammar

        return serialize_grammar(self)

    @staticmethod
    def deserialize_json(json_string: str) -> "Grammar":
        """The grammar `serialize_json` wrote. Raises InvalidJSONError (not JSON),
        DeserializeVersionError (no or another `__VERSION__`) or DeserializeFormatError."""
        from ..serialization import deserialize_grammar_ir

        return Grammar(deserialize_grammar_ir(json_string, ir_signature))

    @property
    def root_rule_name(self) -> str:
        return self.ir.root

    def __str__(self) -> str:
        return print_grammar(self.ir)

    def __repr__(self) -> str:
        return f"Grammar({len(self.ir.rules)} rules, root={self.ir.root!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Grammar):
            return NotImplemented
        return self.ir is other.ir or self.signature() == other.signature()

    def __hash__(self) -> int:
        return hash(self.signature())

    def signature(self) -> tuple:
        """A flat tuple equal for two grammars exactly when their IRs are equal."""
        if self._signature is None:
            self._signature = ir_signature(self.ir)
        return self._signature


def _combined(grammars: tuple, node, what: str) -> Grammar:
    """A root over the roots of `grammars` (a Choice for union, a Sequence for concat), with
    every grammar's rules renamed apart. Names are kept when free; a taken name `n` becomes the
    first free `n_1`, `n_2`, ... ("root" is taken by the new root, so roots become `root_k`).
    xgrammar 0.2.8 names them the same way."""
    for g in grammars:
        if not isinstance(g, Grammar):
            raise TypeError(f"Grammar.{what} takes Grammars, got {type(g).__name__}")
    used = {"root"}
    rules, roots = [], []
    for g in grammars:
        ir = g.ir
        rename = {}
        for rule in ir.rules:
            name, k = rule.name, 0
            while name in used:
                k += 1
                name = f"{rule.name}_{k}"
            used.add(name)
            rename[rule.name] = name
        rules += renamed_rules(ir, rename)
        roots.append(RuleRef(rename[ir.root]))
    if not roots:
        body = EPSILON
    else:
        body = roots[0] if len(roots) == 1 else node(tuple(roots))
    return Grammar(GrammarIR((Rule("root", body),) + tuple(rules), root="root"))


def ir_signature(ir: GrammarIR) -> tuple:
    """The root name, then per rule its name and the pre-order of its body and lookahead,
    each node as (kind, payload, number of children).

    Example: ir_signature(GrammarIR((Rule("root", Repeat(RuleRef("x"), 0, None)),)))
             == ("root", 1, "root", ("Repeat", (0, None), 1), ("RuleRef", "x", 0), 0)
    """
    out: list = [ir.root, len(ir.rules)]
    for rule in ir.rules:
        out.append(rule.name)
        out.append(rule.options)
        out += map(_node_signature, walk(rule.body))
        if rule.lookahead is None:
            out.append(0)
        else:
            out.append(1)
            out += map(_node_signature, walk(rule.lookahead))
    return tuple(out)


def _node_signature(node) -> tuple:
    if isinstance(node, ByteString):
        return ("ByteString", node.value, 0)
    if isinstance(node, CharClass):
        return ("CharClass", (node.ranges, node.negated), 0)
    if isinstance(node, RuleRef):
        return ("RuleRef", node.name, 0)
    if isinstance(node, Sequence):
        return ("Sequence", None, len(node.items))
    if isinstance(node, Choice):
        return ("Choice", None, len(node.alternatives))
    if isinstance(node, Repeat):
        return ("Repeat", (node.min, node.max), 1)
    if isinstance(node, Intrinsic):
        return (type(node).__name__, node.key(), 0)
    raise TypeError(f"not a grammar expression: {node!r}")
