"""The Lark front end: `Grammar.from_lark` and `GrammarCompiler.compile_lark`, xgrammar 0.2.8's
Lark dialect (Lark's grammar language read scannerless, with llguidance's extensions) lowered to
grammar IR. `reader.py` reads the text (the lexical rules are there), this module lowers
the tree, `lazy.py` lowers lazy rules and the dispatching start rule.

Every definition becomes one rule; `start` becomes the root rule `root`. How each construct is
lowered (skip = the `%ignore` rule, `(i1 | i2 | ...)*`, absent without `%ignore`):

    rule  a: b C "x"               a ::= b C skip "x" skip: skip follows every terminal occurrence
                                   in a rule (a string, a terminal name, a regex, a range, a token,
                                   %json, %regex, @name, %lark), never one inside a terminal
    terminal  C: "c" D /re/        C ::= "c" D <re>  (terminals only name terminals; no cycles)
    ?a / !a, `-> alias`            a (tree shaping only)
    "ab"i   "a".."z"   "\\u00e9"    [aA] [bB] (ASCII only)   [a-z]   the code point
    /re/flags                      flags i s u; `.` is [^\\n] without s; with i, the regex as xgrammar's
                                   `Regex` intrinsic reads it behind (?i) (regex/intrinsic_dialect.py), else
                                   as Grammar.from_regex does (regex/to_ebnf.py); in llguidance's dialect,
                                   the standard reading (regex/parser.py)
    x? x* x+ x~n..m x{n,m} [x]     Repeat(x, lo, hi)
    T: A & B,  T: ~A  (terminals)  (llguidance's dialect) intersection and complement, code point automata
                                   written back as rules (`set_operation`); `&` binds tighter than
                                   `|`, a sequence is one side of it
    %import common.INT [-> N]      a terminal N with Lark's `common` definition (`COMMON`)
    %json {schema}                 the JSON Schema front end's grammar (default options)
    %regex {"substring_chunks": [...]} / {"substring_chars": "..."}   xgrammar's Substring
    %lark { grammar }, @name       the nested / named grammar's rules under fresh names, its
                                   own `%ignore` inside, the outer skip after it
    <|tok|> <[1,3-5]> <[^7]> <[*]> TokenSet (named tokens: the ids whose bytes are the name)
    %grammar_options {"allow_initial_skip": true}   root ::= skip body
    name[max_tokens=N, max_chars=N, capture="c"]    rule options (budgets: specs/05)
    name[temperature=F]            a terminal-like rule: read as a terminal, skip follows its
                                   occurrences; lazy, stop and suffix are dropped
    name[lazy] / [stop=S] / [suffix=S]   terminal-like, ends at its first chance (lazy.py):
                                   a dispatch, or the rule option `lazy` (grammar/lazy.py)

In llguidance's dialect (`dialect.py`) parametric rules become one rule per instance reached
(`parametric.py`), `%llguidance` options set the skip, and `stop=""` is checked to end the output.

Capture names become the rule option `capture` (`GrammarMatcher.get_captures` reports them,
specs/03-earley.md). A `stop=M` / `suffix=M` rule gets xgrammar's marker options
(`capture_hidden_stop_bytes` / `capture_hidden_suffix_bytes`, helper rules `<name>_stop_body`
and `<name>_stop_marker` that split its spans, `stop_capture`; xg2ref/rule_options.py reads
them). A rule with options is
kept as a rule. Errors are `LarkError`s (an `EBNFError`) at
the offending place; a nested or named grammar's error is wrapped with the place that embeds it.
"""

from __future__ import annotations

import warnings
from typing import Optional

from ...exceptions import XG2RefError
from ...util import deep_recursion
from ...intrinsics.substring import substring_rules
from ...intrinsics.token_sets import TokenSet
from ...grammar.ir import EPSILON, ByteString, CharClass, Choice, Expr, GrammarIR, Repeat, Rule, RuleRef, Sequence
from .lazy import LazyRules
from . import parametric as P
from .dialect import DIALECTS, chunk_words, lark_dialect, read_options
from .reader import MAX_DOCUMENTS, NAME_CHARS, Definition, Document, LarkError, Node, parse_lark
from ...grammar.passes import remove_dead_rules, renamed_rules
from ...grammar.regular import TooLarge, bounded_length, complement_automaton, intersection_automaton
from ..regex.intrinsic_dialect import intrinsic_regex_to_expr
from ..regex.parser import regex_to_expr
from ..regex.to_ebnf import converted_regex_ir

# Lark's `common.lark` terminals, as regexes (escapes written out, as a Lark file writes them)
COMMON = {
    "DIGIT": "[0-9]", "HEXDIGIT": "[a-fA-F0-9]", "INT": "[0-9]+", "SIGNED_INT": "[+-]?[0-9]+",
    "DECIMAL": r"[0-9]+\.[0-9]*|\.[0-9]+", "_EXP": "[eE][+-]?[0-9]+",
    "FLOAT": r"([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+",
    "SIGNED_FLOAT": r"[+-]?(([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)",
    "NUMBER": r"[0-9]+|([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+",
    "SIGNED_NUMBER": r"[+-]?([0-9]+|([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)",
    "ESCAPED_STRING": r'"([^"\\]|\\.)*"', "LCASE_LETTER": "[a-z]", "UCASE_LETTER": "[A-Z]",
    "LETTER": "[A-Za-z]", "WORD": "[A-Za-z]+", "CNAME": "[_A-Za-z][_A-Za-z0-9]*", "WS_INLINE": r"[ \t]+",
    "WS": r"[ \t\f\r\n]+", "CR": r"\r", "LF": r"\n", "NEWLINE": r"(\r?\n)+", "SH_COMMENT": r"#[^\n]*",
    "CPP_COMMENT": r"//[^\n]*", "C_COMMENT": r"/\*[^*]*\*+([^/*][^*]*\*+)*/", "SQL_COMMENT": r"--[^\n]*",
}
RESERVED = ("true", "false")


class _Context:
    """What every grammar lowered for one call shares: the rules, the vocabulary, the named
    grammars (`named`: name -> Grammar or Lark text; `embedded`: name -> its root rule)."""

    def __init__(self, tokenizer_info, named: dict, dialect: str = "xgrammar"):
        self.rules: dict[str, Optional[Rule]] = {}
        self._next: dict[str, int] = {}  # base name -> the next suffix fresh() tries
        self.tokenizer_info, self.named, self.dialect = tokenizer_info, named, dialect
        self.instances = P.Instances(self.fresh)  # parametric rules' instances (parametric.py)
        self.embedded: dict[str, str] = {}
        self.active: list[str] = []
        self.lazy_end: Optional[str] = None

    def fresh(self, base: str) -> str:
        name, k = base, self._next.get(base, 0)
        if k:
            name = f"{base}_{k}"
        while name in self.rules or name in RESERVED:
            k += 1
            name = f"{base}_{k}"
        self._next[base] = k + 1
        self.rules[name] = None
        return name

    def define(self, name: str, body: Expr, options: tuple = ()) -> RuleRef:
        self.rules[name] = Rule(name, body, None, options)
        return RuleRef(name)

    def embed(self, ir: GrammarIR) -> str:
        """Copy a grammar's rules under fresh names; the name of its root."""
        names = {r.name: self.fresh("root" if r.name == ir.root else r.name) for r in ir.rules}
        for r in renamed_rules(ir, names):
            self.rules[r.name] = r
        return names[ir.root]


class _Lowering(LazyRules):
    """One Lark document (the top one, a `%lark { }` or a named grammar) lowered into a context."""

    def __init__(self, source: str, doc: Document, ctx: _Context):
        self.src, self.doc, self.ctx = source, doc, ctx
        self.defs: dict[str, Definition] = {}
        self.names: dict[str, str] = {}
        self.skip: Optional[RuleRef] = None
        self.initial_skip = False
        self.consumed: set[str] = set()
        self.in_stop = False
        self.param: Optional[int] = None  # the parameter of the parametric instance being lowered
        self.instances = P.Instances(ctx.fresh)
        self.ignore_once = False

    def fail(self, message: str, where) -> LarkError:
        return LarkError(message, where.line, where.col, self.src)

    # ---- the document ---------------------------------------------------------------------------

    def lower(self) -> str:
        """Lower the document; the name of its root rule."""
        definitions = list(self.doc.definitions)
        for path, local, line, col in self.doc.imports:
            pattern = COMMON.get(path[len("common."):]) if path.startswith("common.") else None
            if pattern is None:
                raise LarkError(f"unknown common import '{path}'", line, col, self.src)
            definitions.append(Definition(local, True, Node("regex", line, col, pattern), line, col))
        self.read_options()
        for d in definitions:
            if d.name in self.defs:
                raise self.fail(f"duplicate rule or terminal '{d.name}'", d)
            self.defs[d.name] = d
        start = self.defs.get("start")
        if start is None:
            raise LarkError("no start rule found", 1, 1, self.src)
        if start.is_terminal:
            raise self.fail("start must be a rule", start)
        self.check_terminals()
        self.check_parametric(definitions, start)
        self.end_of_output_stops(definitions, start)
        kind = self.kind(start)
        wrap_start = kind == "temperature" and bool(self.doc.ignores)
        root = self.ctx.fresh("root")
        self.names["start"] = self.ctx.fresh("start") if wrap_start else root
        for d in definitions:
            self.names.setdefault(d.name, self.ctx.fresh(d.name))
        for d in definitions:
            if d.is_terminal:
                self.ctx.define(self.names[d.name], self.compile(d.body, True))
        if self.doc.ignores:
            parts = [self.compile(n, True) for n in self.doc.ignores]
            item = parts[0] if len(parts) == 1 else Choice(tuple(parts))
            self.skip = self.ctx.define(self.ctx.fresh("lark_ignore"), Repeat(item, 0, 1 if self.ignore_once else None))
        dynamic = self.dynamic_start(start) if kind == "rule" else None
        for d in definitions:
            if not d.is_terminal and d is not start and not d.parametric:
                self.lower_rule(d)
        initial = self.skip if self.initial_skip else None
        if dynamic is not None:
            if "max_tokens" in start.attrs:
                raise self.fail("max_tokens is not supported on a dynamic dispatch start rule",
                                self.at(start, "max_tokens"))
            if "max_chars" in start.attrs:  # (xgrammar drops it too, with a warning)
                warnings.warn(f"Ignoring max_chars on dynamic dispatch start rule {start.name!r}.", stacklevel=2)
            body, options = dynamic, self.options(start, ("capture",))
        elif wrap_start:
            self.lower_rule(start)
            body, options = Sequence((RuleRef(self.names["start"]), self.skip)), ()
        elif kind == "lazy":  # the skip before the body is part of the lazy language
            body, lazy = self.lazy_body(start, initial)
            options, initial = self.options(start) + self.marker_options(start, "start") + lazy, None
        else:
            body, options = self.rule_body(start), self.options(start)
        self.ctx.define(root, body if initial is None else Sequence((initial, body)), options)
        while self.instances.pending:  # parametric rules: each instance reached (parametric.py)
            rule, self.param, name = self.instances.pending.pop()
            d = self.defs[rule]
            self.ctx.define(name, self.compile(d.body, False), self.options(d))
        self.param = None
        return root

    def read_options(self) -> None:
        def fail(message: str, line: int, col: int):
            raise LarkError(message, line, col, self.src)

        options = read_options(self.doc.llguidance, fail)  # (llguidance's dialect only: dialect.py)
        self.initial_skip, self.ignore_once = options["allow_initial_skip"], options["ignore_once"]
        for value, line, col in self.doc.options:
            if not isinstance(value, dict):
                raise LarkError("%grammar_options value must be an object", line, col, self.src)
            for key, option in value.items():
                if key not in ("allow_initial_skip", "no_forcing", "allow_invalid_utf8"):
                    raise LarkError(f"unknown %grammar_options option '{key}'", line, col, self.src)
                if not isinstance(option, bool):
                    raise LarkError(f"{key} must be a boolean", line, col, self.src)
                if key != "allow_initial_skip" and option:
                    raise LarkError(f"%grammar_options option '{key}' is not supported", line, col, self.src)
                self.initial_skip = self.initial_skip or (key == "allow_initial_skip" and option)

    def check_terminals(self) -> None:
        """Terminals name only terminals that exist, and none refers to itself."""
        state: dict[str, int] = {}  # 1 while visiting, 2 when done

        def visit(d: Definition) -> None:
            state[d.name] = 1
            stack, names = [d.body], []
            while stack:
                node = stack.pop()
                names += [node.text] if node.kind == "name" else []
                stack.extend(node.children)
            for name in names:
                ref = self.defs.get(name)
                if ref is None:
                    raise self.fail(f"unknown name '{name}'", d)
                if not ref.is_terminal:
                    raise self.fail(f"terminal '{d.name}' cannot reference rule '{name}'", d)
                if state.get(name) == 1:
                    raise self.fail(f"circular reference in terminal '{name}'", d)
                if name not in state:
                    visit(ref)
            state[d.name] = 2

        for d in self.doc.definitions:
            if d.is_terminal and d.name not in state:
                visit(d)

    def check_parametric(self, definitions: list, start: Definition) -> None:
        """llguidance's rules for parametric rules (parametric.py's docstring)."""
        if start.parametric:
            raise self.fail("the start rule cannot be parametric", start)
        for d in definitions:
            if d.is_terminal:
                for node in d.body.walk():
                    if node.kind == "when":
                        raise self.fail("'%if' is not supported in terminals", node)
                continue
            for key in ("stop", "suffix", "lazy", "temperature", "max_tokens"):
                if d.parametric and key in d.attrs:
                    raise self.fail(f"{key} is not supported on parametric rules", self.at(d, key))
            if d.parametric and not P.uses_parameter(d.body):
                raise self.fail(f"rule '{d.name}' is parametric, but its body doesn't use its parameter", d)
            for node in d.body.walk():
                if node.kind == "when" and not d.parametric:
                    raise self.fail(f"%if in rule '{d.name}', which is not parametric", node)
                target = self.defs.get(node.text) if node.kind == "name" else None
                if target is None or target.is_terminal and node.value is None:
                    continue
                if target.parametric != (node.value is not None):
                    raise self.fail(f"parametric rule '{node.text}' is referenced as {node.text}::<parameter>"
                                    if target.parametric else f"rule '{node.text}' is not parametric", node)
                if not d.parametric and node.value is not None and node.value[0] != "const":
                    raise self.fail(f"rule '{d.name}' is not parametric, but its body requires parameters", node)

    def end_of_output_stops(self, definitions: list, start: Definition) -> None:
        """llguidance's `stop=""` (the end of the output as the stop): on a rule that only ever
        ends the output (every reference to it last in a rule that ends the output, `start`
        ending it), it is the rule itself, its body read greedily; elsewhere it is refused."""
        stops = [d for d in definitions if not d.is_terminal and "stop" in d.attrs and not d.attr("stop").text
                 and d.attr("stop").kind == "string"]
        if not stops:
            return
        refs: dict[str, list] = {}  # rule -> (referencing rule, whether last)
        for d in definitions:
            if not d.is_terminal:
                for name, last in _references(d.body, True):
                    refs.setdefault(name, []).append((d.name, last))
        ends = {d.name for d in definitions if not d.is_terminal}
        changed = True
        while changed:  # the greatest set: a rule leaves it when one of its references does not end
            changed = False
            for name in list(ends):
                if name != "start" and not all(last and caller in ends for caller, last in refs.get(name, [(0, 0)])):
                    ends.discard(name)
                    changed = True
        for d in stops:
            if d.name not in ends:
                raise self.fail('stop="" (the end of the output as the stop) is supported only on a rule that '
                                "nothing can follow", self.at(d, "stop"))
            del d.attrs["stop"]
            d.attrs.pop("stop_capture", None)

    # ---- rules ----------------------------------------------------------------------------------

    @staticmethod
    def kind(d: Definition) -> str:
        if d.is_terminal:
            return "terminal"
        if "temperature" in d.attrs:
            return "temperature"
        return "lazy" if {"lazy", "stop", "suffix"} & d.attrs.keys() else "rule"

    def at(self, d: Definition, key: str) -> Node:
        _, line, col = d.attrs[key]
        return Node("", line, col)

    def options(self, d: Definition, keys=("max_tokens", "max_chars", "capture", "temperature")) -> tuple:
        return tuple((k, d.attr(k)) for k in keys if k in d.attrs)

    def lower_rule(self, d: Definition) -> None:
        name = self.names[d.name]
        if d.name in self.consumed:
            for key in ("max_tokens", "capture"):
                if key in d.attrs:
                    raise self.fail(f"{key} is not supported on rules consumed by dynamic dispatch", self.at(d, key))
            if "max_chars" in d.attrs:
                warnings.warn(f"Ignoring max_chars on rule {d.name!r} because it is consumed by dynamic dispatch.",
                              stacklevel=2)
            self.ctx.define(name, EPSILON)
        elif self.kind(d) == "lazy":
            body, lazy = self.lazy_body(d)
            self.ctx.define(name, body, self.options(d) + self.marker_options(d, name) + lazy)
        else:
            self.ctx.define(name, self.rule_body(d), self.options(d))

    def rule_body(self, d: Definition) -> Expr:
        """The IR of a plain or temperature rule's body. A temperature rule's body is a terminal
        or a subgrammar (`%json`, `%lark`, `@name`, alone), as xgrammar reads it; any other body
        is refused with what reading it as a terminal found."""
        if self.kind(d) != "temperature":
            return self.compile(d.body, False)
        node = d.body
        while node.kind in ("seq", "choice") and len(node.children) == 1:
            node = node.children[0]
        if node.kind in ("json", "lark", "gref"):  # (the skip follows the rule's occurrences)
            return {"json": self.json_schema, "lark": self.nested, "gref": self.named_grammar}[node.kind](node)
        try:
            return self.compile(d.body, True)
        except LarkError as err:
            raise LarkError(f"{err}; temperature is only supported on terminals and subgrammars", d.line, 1,
                            self.src) from None

    def skipped(self, expr: Expr) -> Expr:
        return expr if self.skip is None else Sequence((expr, self.skip))

    # ---- expressions ----------------------------------------------------------------------------

    def compile(self, node: Node, terminal: bool) -> Expr:
        """The IR of `node`; in a terminal (`terminal`) no rule may be named and nothing skipped."""
        kind = node.kind
        if kind in ("seq", "choice"):
            parts = [self.compile(child, terminal) for child in node.children]
            if not parts:
                return EPSILON
            return parts[0] if len(parts) == 1 else (Sequence if kind == "seq" else Choice)(tuple(parts))
        if kind == "repeat":
            return Repeat(self.compile(node.children[0], terminal), node.lo, None if node.hi == -1 else node.hi)
        if kind == "when":  # an alternative of a parametric rule, there when its condition holds
            return self.compile(node.children[0], terminal) if P.holds(node.value, self.param) else CharClass(())
        if kind == "name" and node.value is not None:  # a parametric rule's instance
            return RuleRef(self.instances.name(node.text, P.evaluate(node.value, self.param or 0)))
        if kind == "name":
            d = self.defs.get(node.text)
            if d is None:
                raise self.fail(f"unknown name '{node.text}'", node)
            if terminal and not d.is_terminal:
                raise self.fail(f"terminal cannot reference rule '{node.text}'", node)
            if self.in_stop and d.is_terminal:
                self.check_stop_part(d.body)
            ref = RuleRef(self.names[node.text])
            return ref if terminal or self.kind(d) == "rule" else self.skipped(ref)
        if kind in ("and", "not"):
            return self.set_operation(node, terminal)
        if kind in ("json", "lark", "special", "gref") and terminal:
            what = {"json": "%json cannot", "lark": "nested %lark cannot", "special": "special tokens cannot",
                    "gref": "named grammars cannot"}[kind]
            raise self.fail(f"{what} be used in terminals", node)
        expr = {"string": self.literal, "range": self.char_range, "regex": self.regex, "json": self.json_schema,
                "regex_ext": self.substring, "lark": self.nested, "special": self.special,
                "gref": self.named_grammar}[kind](node)
        empty_string = kind == "string" and not node.text
        return expr if terminal or empty_string else self.skipped(expr)

    def literal(self, node: Node) -> Expr:
        if node.flags != "i":
            return ByteString(node.text.encode("utf-8"))
        parts: list[Expr] = []
        for c in node.text:
            if ord(c) > 0x7F:
                raise self.fail("case-insensitive string literals currently support ASCII characters only", node)
            if c.lower() != c.upper():
                lo, up = ord(c.lower()), ord(c.upper())
                parts.append(CharClass(((lo, lo), (up, up))))
            elif parts and isinstance(parts[-1], ByteString):
                parts[-1] = ByteString(parts[-1].value + c.encode())
            else:
                parts.append(ByteString(c.encode()))
        return EPSILON if not parts else parts[0] if len(parts) == 1 else Sequence(tuple(parts))

    def char_range(self, node: Node) -> Expr:
        if len(node.text) != 1 or len(node.text2) != 1:
            raise self.fail("character range endpoints must be one character", node)
        if node.text > node.text2:
            raise self.fail("character range start must not exceed end", node)
        return CharClass(((ord(node.text), ord(node.text2)),))

    def regex(self, node: Node) -> Expr:
        for flag in node.flags:
            if flag not in "isu":
                raise self.fail(f"regular-expression flag '{flag}' is not supported", node)
        if self.in_stop and "i" in node.flags:
            raise self.fail("regular-expression flag 'i' is not supported with suffix or stop attributes", node)
        flags = "".join(sorted(set(node.flags)))
        try:
            if self.ctx.dialect == "llguidance":  # Rust's syntax: `(?s:...)` groups; `.` is [^\n] there
                return regex_to_expr(node.text, flags=flags, scoped_flags=True)
            # xgrammar 0.2.8: `.` becomes [^\n] unless `s`; then with `i`, the pattern behind `(?i)` is
            # read by its `Regex` intrinsic's automaton builder (lookaheads and anchors ignored,
            # ASCII \s: intrinsic_dialect.py), and without `i` as `Grammar.from_regex` reads it
            # (anchors ignored, lookaheads refused, \s with U+00A0: to_ebnf.py)
            pattern = node.text if "s" in flags else _dot_without_newline(node.text)
            if "i" in flags:
                return intrinsic_regex_to_expr("(?i)" + pattern)
            ir = converted_regex_ir(pattern)[0]
            return ir.rules[0].body if len(ir.rules) == 1 else RuleRef(self.ctx.embed(ir))
        except XG2RefError as err:
            raise self.fail(f"failed to compile regular expression: {err}", node) from None

    # llguidance's `A & B` (intersection) and `~A` (complement) in terminals: the regular-language
    # operations JSON Schema's `not` and `allOf` use (grammar/regular.py), over code points
    #     L(A & B) = L(A) ∩ L(B)        L(~A) = Σ* \ L(A)   (Σ: every code point)
    # written back as rules, one per state of the product / complement automaton
    def set_operation(self, node: Node, terminal: bool) -> Expr:
        if not terminal:
            what = "intersection '&'" if node.kind == "and" else "complement '~'"
            raise self.fail(f"{what} can only be used in terminals", node)
        parts = [self.language(child) for child in node.children]
        try:
            languages = parts if node.kind == "and" else [complement_automaton(parts)]
            return bounded_length(languages, 0, None, lambda ranges: CharClass(tuple(ranges)),
                                  lambda hint: self.ctx.fresh(f"lark_{hint}"), self.ctx.define)
        except TooLarge as err:
            raise self.fail(f"'{'&' if node.kind == 'and' else '~'}': {err}", node) from None

    def language(self, node: Node):
        """The regular language of a terminal expression for the set operations: regex IR with
        the terminals it names written in, or an automaton where `&` / `~` stand."""
        kind = node.kind
        if kind == "name":
            d = self.defs.get(node.text)
            if d is None:
                raise self.fail(f"unknown name '{node.text}'", node)
            if not d.is_terminal:
                raise self.fail(f"terminal cannot reference rule '{node.text}'", node)
            return self.language(d.body)
        if kind in ("and", "not"):
            parts = [self.language(child) for child in node.children]
            return intersection_automaton(parts) if kind == "and" else complement_automaton(parts)
        if kind in ("seq", "choice", "repeat"):
            parts = [self.language(child) for child in node.children]
            if kind != "repeat" and len(parts) == 1:
                return parts[0]
            if any(isinstance(p, tuple) for p in parts):
                raise self.fail("'&' and '~' inside a sequence, choice or repetition under another '&' or '~' "
                                "are not supported; name that part as a terminal of its own", node)
            if kind == "repeat":
                return Repeat(parts[0], node.lo, None if node.hi == -1 else node.hi)
            if not parts:
                return EPSILON
            return parts[0] if len(parts) == 1 else (Sequence if kind == "seq" else Choice)(tuple(parts))
        return self.compile(node, True)

    def json_schema(self, node: Node) -> Expr:
        from ..json_schema.converter import json_schema_to_ir

        try:
            ir = json_schema_to_ir(node.value, any_whitespace=True, indent=None, separators=None, strict_mode=True,
                                   max_whitespace_cnt=None, any_order=False)
        except (XG2RefError, RecursionError) as err:
            raise self.fail(f"failed to compile inline JSON schema: {err}", node) from None
        return RuleRef(self.ctx.embed(ir))

    def substring(self, node: Node) -> Expr:
        value = node.value
        if self.in_stop:
            raise self.fail("structured %regex cannot be used with suffix or stop", node)
        if not isinstance(value, dict):
            raise self.fail("%regex value must be an object", node)
        for key in value:
            if key not in ("substring_chunks", "substring_chars", "substring_words"):
                raise self.fail(f"unknown field '{key}' in %regex", node)
        if len(value) != 1:
            raise self.fail("no fields set on %regex" if not value else "only one field can be set on %regex", node)
        (key, chunks), = value.items()
        if key == "substring_words":
            if not isinstance(chunks, str):
                raise self.fail("substring_words must be a string", node)
            if self.ctx.dialect != "llguidance":
                raise self.fail("substring_words is not supported yet", node)
            chunks = chunk_words(chunks)
        if key == "substring_chars":
            if not isinstance(chunks, str):
                raise self.fail("substring_chars must be a string", node)
            chunks = list(chunks)
        elif not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
            raise self.fail("substring_chunks must be an array of strings", node)
        return substring_rules([c.encode("utf-8", "surrogatepass") for c in chunks], self.ctx.fresh, self.ctx.define,
                               "lark_substring")

    def nested(self, node: Node) -> Expr:
        try:
            return RuleRef(_Lowering(self.src, node.value, self.ctx).lower())
        except LarkError as err:
            raise self.fail(f"failed to compile nested Lark grammar: {_first_line(err)}", node) from None

    def named_grammar(self, node: Node) -> Expr:
        name = node.text
        if name in self.ctx.embedded:
            return RuleRef(self.ctx.embedded[name])
        if name not in self.ctx.named:
            raise self.fail(f"unknown named grammar '@{name}'", node)
        value = self.ctx.named[name]
        if not isinstance(value, str):
            self.ctx.embedded[name] = self.ctx.embed(value.ir)
            return RuleRef(self.ctx.embedded[name])
        if len(self.ctx.active) >= MAX_DOCUMENTS:
            raise self.fail(f"named grammars are nested deeper than {MAX_DOCUMENTS} levels", node)
        if name in self.ctx.active:
            cycle = " -> ".join("@" + n for n in self.ctx.active[self.ctx.active.index(name):] + [name])
            raise self.fail(f"circular named grammar reference: {cycle}", node)
        self.ctx.active.append(name)
        try:
            root = _Lowering(value, parse_lark(value), self.ctx).lower()
        except LarkError as err:
            raise self.fail(f"failed to compile named grammar '@{name}': {_first_line(err)}", node) from None
        finally:
            self.ctx.active.pop()
        self.ctx.embedded[name] = root
        return RuleRef(root)

    def special(self, node: Node) -> Expr:
        ids, exclude = self.special_ids(node)
        return TokenSet(ids, exclude)

    def special_ids(self, node: Node) -> tuple[tuple[int, ...], bool]:
        """`<[1,3-5]>`, `<[^2]>`, `<[*]>` (all ids) or `<name>` (ids whose bytes are the name)."""
        info, text = self.ctx.tokenizer_info, node.text
        if len(text) >= 4 and text.startswith("<[") and text.endswith("]>"):
            body = text[2:-2]
            exclude = body.startswith("^")
            body = body[exclude:]
            if body == "*":
                if exclude:
                    raise self.fail("negated wildcard special token is not supported", node)
                if info is None:
                    raise self.fail("wildcard special token requires tokenizer_info", node)
                return tuple(range(info.vocab_size)), False
            if "*" in body:
                raise self.fail("wildcard cannot be mixed with token ranges", node)
            ids: set[int] = set()
            for part in filter(None, (p.strip() for p in body.split(","))):
                ends = [e.strip() for e in part.split("-")]
                if len(ends) > 2 or not all(e.lstrip("+").isdigit() and e.isascii() for e in ends):
                    raise self.fail(f"invalid numeric special-token range '{part}'", node)
                first, last = int(ends[0]), int(ends[-1])
                if last < first or last > 2**31 - 1:
                    raise self.fail(f"invalid numeric special-token range '{part}'", node)
                if last - first > 1_000_000:
                    raise self.fail("special-token range is too large", node)
                ids.update(range(first, last + 1))
            if not ids:
                raise self.fail("empty numeric special-token range", node)
            return tuple(sorted(ids)), exclude
        if info is None:
            raise self.fail(f"named special token {text} requires tokenizer_info", node)
        want = text.encode("utf-8")
        ids_found = tuple(i for i, b in enumerate(info.decoded_vocab) if b == want)
        if not ids_found:
            raise self.fail(f"unknown special token {text}", node)
        return ids_found, False


def _dot_without_newline(pattern: str) -> str:
    """`pattern` with every `.` outside a class and not escaped written `[^\\n]` (a `]` ends a
    class only inside one, as xgrammar rewrites it)."""
    out, escaped, in_class = [], False, False
    for c in pattern:
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == "[":
            in_class = True
        elif c == "]":
            in_class = False
        elif c == "." and not in_class:
            c = "[^\\n]"
        out.append(c)
    return "".join(out)


def _references(node: Node, last: bool):
    """(name, whether nothing follows it in the body) for each name in a rule body: the last
    item of a sequence and an optional group inherit `last`, other items and repetitions not."""
    if node.kind == "name":
        yield node.text, last
    elif node.kind == "seq":
        for k, child in enumerate(node.children):
            yield from _references(child, last and k == len(node.children) - 1)
    elif node.kind in ("choice", "when"):
        for child in node.children:
            yield from _references(child, last)
    elif node.kind == "repeat":
        yield from _references(node.children[0], last and node.hi == 1)
    else:
        for child in node.children:
            yield from _references(child, False)


def _first_line(err: LarkError) -> str:
    return str(err).splitlines()[0]


def lower_document(source: str, doc: Document, tokenizer_info, named: dict, dialect: str = "xgrammar") -> GrammarIR:
    """The IR of a read Lark document (root rule "root"), unreachable rules dropped."""
    ctx = _Context(tokenizer_info, named, dialect)
    root = _Lowering(source, doc, ctx).lower()
    return remove_dead_rules(GrammarIR(tuple(r for r in ctx.rules.values() if r is not None), root))


def check_named_grammars(named_grammars, grammar_type: Optional[type] = None) -> dict:
    """`named_grammars` as a dict of name -> Grammar or Lark text, checked as xgrammar checks it
    (TypeError for wrong kinds, LarkError for bad names). `grammar_type` is the class `Grammar`
    (xg2ref/grammar/grammar.py hands it in: this front end does not import it); None accepts
    Lark text only."""
    kinds = (str,) if grammar_type is None else (grammar_type, str)
    if named_grammars is None:
        return {}
    if not isinstance(named_grammars, dict):
        raise TypeError("named_grammars must be a dictionary")
    for name, value in named_grammars.items():
        if not isinstance(name, str):
            raise TypeError("named grammar names must be strings")
        if not isinstance(value, kinds):
            raise TypeError("named grammar values must be Grammar instances or Lark strings")
    for name in named_grammars:
        if not name:
            raise LarkError("Named grammar names must not be empty")
        if not set(name) <= NAME_CHARS:
            raise LarkError(f"Invalid named grammar name '{name}': names may contain only letters, digits, "
                            "underscores, and hyphens")
    return dict(named_grammars)


def lark_to_ir(source: str, tokenizer_info=None, named_grammars=None,
               grammar_type: Optional[type] = None, dialect: Optional[str] = None) -> GrammarIR:
    """The GrammarIR of a Lark grammar (root rule "root"); see the module docstring.
    `grammar_type`: the class whose instances `named_grammars` may hold (`Grammar`); `dialect`:
    "xgrammar" or "llguidance" (dialect.py; None: from the grammar's first item)."""
    if not isinstance(source, str):
        raise TypeError(f"from_lark needs the Lark grammar as a str, got {type(source).__name__}")
    if dialect is None:
        dialect = lark_dialect(source)
    elif dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {', '.join(map(repr, DIALECTS))}, got {dialect!r}")
    named = check_named_grammars(named_grammars, grammar_type)
    with deep_recursion():
        return lower_document(source, parse_lark(source, dialect), tokenizer_info, named, dialect)


def lark_cache_key(source: str, named_grammars, grammar_type: type) -> Optional[tuple]:
    """A grammar-cache key for `compile_lark`: the text and the named grammars (a Grammar, an
    instance of `grammar_type`, by its printed form); None when the input is not what
    `from_lark` takes (it then raises)."""
    if not isinstance(source, str) or not isinstance(named_grammars, (dict, type(None))):
        return None
    named = []
    for name, value in (named_grammars or {}).items():
        if not isinstance(name, str) or not isinstance(value, (grammar_type, str)):
            return None
        named.append((name, value) if isinstance(value, str) else (name, "grammar", str(value), value.ir.root))
    return ("lark", source, tuple(sorted(named)))
