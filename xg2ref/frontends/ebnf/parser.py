"""XGrammar-2 §2.1 and XGrammar §2.2: the EBNF front end, from grammar text to `GrammarIR`.

The dialect is xgrammar 0.2.8's (sections 1-4 of its EBNF documentation), itself GBNF
(llama.cpp) with extensions. The front end is a lark LALR(1) grammar with a contextual lexer:

    rule       : RULE_NAME "::=" choices lookahead?
    lookahead  : "(=" choices ")"                   only at the end of a rule
    choices    : sequence ("|" sequence)*
    sequence   : item+
    item       : atom quantifier?                   * + ? {m} {m,} {m,n} {m,-1}, at most one
    atom       : STRING | CLASS | NAME | "(" choices ")" | "(" ")"

A rule name is an identifier followed by `::=` (comments and newlines may come between), which
the lexer sees with a regex lookahead; so a sequence ends where the next rule begins, and
"the rule name is the first token on its line" is checked on the token stream. Escapes,
character classes, integer bounds, nesting depth and rule count are checked on tokens too.

Tree shape (what `parse_ebnf` gives back): parentheses around a single element vanish
(`(("a"))` is `ByteString(b"a")`), but every group of two or more elements stays a node of
its own: `"a" ("b" "c")` is `Sequence(a, Sequence(b, c))` and `"a" | ("b" | "c")` is
`Choice(a, Choice(b, c))`; the normalization passes flatten them. `( )` and `""` are both
`EPSILON`; `x?` is `Repeat(x, 0, 1)`, `x*` is `Repeat(x, 0, None)`, `x+` is
`Repeat(x, 1, None)` and `x{0}` is `Repeat(x, 0, 0)`.

Limits (GrammarLimitError): `MAX_GRAMMAR_CHARS` characters of text, `MAX_RULES` rules,
`MAX_NESTING` nested groups (xgrammar's "Nest layer exceeded"), integers up to
`MAX_INTEGER` (xgrammar's lexer bound).

Intrinsics are parsed as calls, `Name(value, ..., key=value)` with values that are strings,
integers, `true`/`false`, rule names or parenthesized tuples. `Regex(...)` becomes the IR of
its pattern, read in xgrammar's intrinsic dialect (xg2ref/frontends/regex/intrinsic_dialect.py).

Each call is built by the construct registered under its name (xg2ref/grammar/intrinsic.py;
the built-ins are in xg2ref/intrinsics/): `TagDispatch(...)` becomes a `TagDispatch` node,
`Substring(...)` the choice of its runs of whole chunks, `Token(...)` and `ExcludeToken(...)`
`TokenSet` nodes and `TokenTagDispatch(...)` their loop. The lexer's INTRINSIC token lists the
names registered when the text is parsed. Rule options `name[max_tokens=3, lazy] ::=` are
parsed into `Rule.options` (xg2ref/frontends/ebnf/rule_option_syntax.py); a lazy rule's body must be regular (xg2ref/grammar/lazy.py,
checked here, lowered when the grammar is compiled).

What it leaves out: escapes beyond U+10FFFF are rejected (xgrammar wraps them around).
"""

from __future__ import annotations

import re
from typing import Optional

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.lark import PostLex

from ... import intrinsics  # noqa: F401  (registers the built-in intrinsics)
from ...exceptions import EBNFError, GrammarLimitError
from ...grammar.intrinsic import REGISTRY, Call, Names, Value, call_names
from ...grammar.lazy import lazy_rule_problem
from .rule_option_syntax import MARKER_RULE_IDS, MARKER_RULE_KEYS, parse_rule_options
from ...grammar.source_error import SourceError
from ...grammar.ir import (EPSILON, MAX_CODEPOINT, ByteString, CharClass, Choice, Expr, GrammarIR, Repeat, Rule, RuleRef,
                 Sequence, referenced_rules)

MAX_GRAMMAR_CHARS = 10_000_000
MAX_RULES = 100_000
MAX_NESTING = 1000
MAX_INTEGER = 10**15

RESERVED_WORDS = ("true", "false")
NAME_PATTERN = r"[A-Za-z_.\-][A-Za-z0-9_.\-]*"

_NOT_NAME_CHAR = r"(?![A-Za-z0-9_.\-])"
# Blanks and whole-line comments; `(?![^\r\n])` pins a comment to its line end, so the
# lookahead never backtracks through a comment that holds several '#'.
_SPACE = r"(?:[ \t\r\n]|#[^\r\n]*(?![^\r\n]))*"

_LARK_GRAMMAR = r"""
start: rule*
rule: (RULE_NAME | RULE_OPTIONS) _ASSIGN choices lookahead?
lookahead: LOOKAHEAD choices _RPAR
choices: sequence (_VBAR sequence)*
sequence: item+
item: atom quantifier?
atom: STRING                  -> string
    | CLASS                   -> char_class
    | NAME                    -> ref
    | INTRINSIC _LPAR [arguments] _RPAR  -> macro
    | _LPAR choices _RPAR     -> group
    | _LPAR _RPAR             -> empty_group
arguments: argument (_COMMA argument)*
argument: value
    | NAME _EQUAL value       -> named_argument
value: STRING                 -> v_string
    | INT                     -> v_int
    | NAME                    -> v_name
    | _LPAR [value (_COMMA value)* _COMMA?] _RPAR  -> v_tuple
quantifier: STAR | PLUS | QMARK
    | _LBRACE INT _RBRACE                   -> exact
    | _LBRACE INT _COMMA _RBRACE            -> at_least
    | _LBRACE INT _COMMA UNBOUNDED _RBRACE  -> at_least
    | _LBRACE INT _COMMA INT _RBRACE        -> between

RULE_OPTIONS.5: /@NAME_PATTERN\[[^\]\r\n]*\](?=[ \t]*::=)/
RULE_NAME.4: /@NAME_PATTERN(?=@SPACE::=)/
INTRINSIC.3: /(?:@INTRINSIC_NAMES)@NOT_NAME_CHAR/
UNBOUNDED.2: /-1@NOT_NAME_CHAR/
NAME: /@NAME_PATTERN/
STRING: /"(?:[^"\\\r\n]|\\[^\r\n])*"/
CLASS: /\[(?:[^\]\\\r\n]|\\[^\r\n])*\]/
INT: /[0-9]+/
LOOKAHEAD: "(="
_ASSIGN: "::="
_EQUAL: "="
_LPAR: "("
_RPAR: ")"
_VBAR: "|"
_LBRACE: "{"
_RBRACE: "}"
_COMMA: ","
STAR: "*"
PLUS: "+"
QMARK: "?"
COMMENT: /#[^\r\n]*/
BLANK: /[ \t\r\n]+/
%ignore BLANK
%ignore COMMENT
"""


class _TokenChecks(PostLex):
    """Checks that need one token of context; xgrammar makes them in its lexer.

    Like xgrammar's lexer, an identifier followed by `::=` is a rule name in every parser
    state, so a misplaced definition is reported as one.
    """

    always_accept = ("RULE_NAME",)

    def process(self, stream):
        previous: Optional[Token] = None
        opens: list[bool] = []  # one entry per open '(' (True) or '(=' (False)
        macro_depth: list[int] = []  # the depth of each open intrinsic call's '('
        depth = rules = 0
        for tok in stream:
            kind = tok.type
            if kind in ("RULE_NAME", "RULE_OPTIONS"):
                rules += 1
                if rules > MAX_RULES:
                    raise SourceError(f"Too many rules: more than {MAX_RULES}", tok.start_pos, limit=True)
                if previous is not None and previous.end_line == tok.line:
                    raise SourceError(f'The rule name "{tok}" should be at the beginning of the line',
                                   tok.start_pos, "lexer")
            if previous is not None and previous.type == "INTRINSIC" and kind != "_LPAR":
                raise SourceError(f"{previous} is an intrinsic: call it as {previous}(...)", previous.start_pos)
            if kind == "INTRINSIC":
                macro_depth.append(depth + 1)
            if kind == "_EQUAL" and not macro_depth:  # '=' only names an intrinsic's argument
                raise SourceError("Unexpected character: '='", tok.start_pos, "lexer")
            if kind in ("RULE_NAME", "NAME") and tok in RESERVED_WORDS and not macro_depth:
                raise SourceError(f"{tok} is a reserved word (a boolean in intrinsic arguments) and cannot "
                               "name a rule", tok.start_pos, "lexer")
            if kind == "_LPAR":
                opens.append(True)
                depth += 1
                if depth > MAX_NESTING:
                    raise SourceError(f"Nest layer exceeded the maximum limit of {MAX_NESTING} nested groups",
                                   tok.start_pos, limit=True)
            elif kind == "LOOKAHEAD":
                opens.append(False)
            elif kind == "_RPAR" and opens:
                if macro_depth and macro_depth[-1] == depth and opens[-1]:
                    macro_depth.pop()
                depth -= opens.pop()
            elif kind == "INT" and int(tok) > MAX_INTEGER:
                raise SourceError(f"Integer is too large: {tok}, max allowed is {MAX_INTEGER}",
                               tok.start_pos, "lexer", limit=True)
            previous = tok
            yield tok
        if previous is not None and previous.type == "INTRINSIC":
            raise SourceError(f"{previous} is an intrinsic: call it as {previous}(...)", previous.start_pos)


_PARSERS: dict = {}  # the intrinsic names (the registry's state) -> parser


def _lark_parser() -> Lark:
    """The parser for the intrinsics registered now (xg2ref/grammar/intrinsic.py): the INTRINSIC
    token lists their names, so a call registered later gets a parser of its own."""
    names = tuple(call_names())
    if names not in _PARSERS:
        grammar = (_LARK_GRAMMAR.replace("@NAME_PATTERN", NAME_PATTERN).replace("@SPACE", _SPACE)
                   .replace("@INTRINSIC_NAMES", "|".join(re.escape(n) for n in names))
                   .replace("@NOT_NAME_CHAR", _NOT_NAME_CHAR))
        _PARSERS[names] = Lark(grammar, parser="lalr", lexer="contextual", postlex=_TokenChecks(),
                               maybe_placeholders=False)
    return _PARSERS[names]


def _marker_rules_named(rule: Rule, rules: list, token) -> Rule:
    """`rule` with its `capture_hidden_*_rule_id` options (indices into `rules`, in the order of
    the text) as rule names (`capture_hidden_*_rule`), which the IR's passes keep."""
    if not any(k in MARKER_RULE_IDS for k, _ in rule.options):
        return rule
    options = []
    for key, value in rule.options:
        if key in MARKER_RULE_IDS:
            if not value < len(rules):
                raise SourceError(f"Rule option {key}={value}: the grammar has {len(rules)} rules", token.start_pos)
            key, value = MARKER_RULE_KEYS[MARKER_RULE_IDS.index(key)], rules[value].name
        options.append((key, value))
    return Rule(rule.name, rule.body, rule.lookahead, tuple(options))


def parse_ebnf(text: str, root_rule_name: str = "root") -> GrammarIR:
    """Parse EBNF text in xgrammar's dialect into a `GrammarIR` whose root is `root_rule_name`.

    Raises EBNFError (with 1-based line, column and a caret excerpt) for invalid text and
    GrammarLimitError past a documented limit.

    Example: parse_ebnf('root ::= "a" b*\\nb ::= [0-9]').rule("root").body
             == Sequence((ByteString(b"a"), Repeat(RuleRef("b"), 0, None)))
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_ebnf needs the grammar as str, got {type(text).__name__}")
    if len(text) > MAX_GRAMMAR_CHARS:
        raise GrammarLimitError(f"Grammar text too large: {len(text)} characters, max allowed is {MAX_GRAMMAR_CHARS}")
    # A lone '\r' ends a line for xgrammar; make it '\n' so lark counts lines the same way.
    source = re.sub(r"\r(?!\n)", "\n", text)
    try:
        nul = source.find("\x00")
        if nul >= 0:
            raise SourceError("Unexpected NUL character", nul, "lexer")
        try:
            tree = _lark_parser().parse(source)
        except UnexpectedInput as err:
            raise _translate(err, source) from None
        return _Builder(source).build(tree, root_rule_name)
    except SourceError as err:
        line, column = _line_column(source, err.pos)
        if err.limit:
            raise GrammarLimitError(f"EBNF limit exceeded at line {line}, column {column}: {err.message}") from None
        raise EBNFError(err.message, line, column, _excerpt_source(source), err.kind) from None


def _line_column(source: str, pos: int) -> tuple[int, int]:
    line = source.count("\n", 0, pos) + 1
    return line, pos - (source.rfind("\n", 0, pos) + 1) + 1


def _excerpt_source(source: str) -> str:
    """`source` with the line breaks `str.splitlines` knows beyond \\n and \\r made blanks."""
    return source.translate({c: " " for c in (0x0B, 0x0C, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029)})


# ---------------------------------------------------------------------------------------------
# Literals and character classes (xgrammar's ParseStringToken, ParseCharClassToken,
# ParseNextEscaped).

_SIMPLE_ESCAPES = {"'": 0x27, '"': 0x22, "?": 0x3F, "\\": 0x5C, "/": 0x2F, "a": 0x07, "b": 0x08,
                   "f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B, "0": 0x00, "e": 0x1B}
_CLASS_ESCAPES = frozenset("^$\\.*+?()[]{}|/-")  # escaped, these stand for themselves in a class
_CLASS_SHORTHANDS = frozenset("dDsSwW")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _read_escape(source: str, i: int, in_class: bool) -> tuple[int, int]:
    """The codepoint of the escape starting at `source[i] == '\\\\'` and the offset after it."""
    nxt = source[i + 1] if i + 1 < len(source) else ""
    if in_class and nxt in _CLASS_ESCAPES:
        return ord(nxt), i + 2
    if nxt in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[nxt], i + 2
    if nxt == "x":
        end = i + 2
        while end < len(source) and source[end] in _HEX_DIGITS:
            end += 1
        digits = source[i + 2:end]
    elif nxt in ("u", "U"):
        end = i + 2 + (4 if nxt == "u" else 8)
        digits = source[i + 2:end]
        if len(digits) != end - i - 2 or not _HEX_DIGITS.issuperset(digits):
            digits = ""
    else:
        digits = ""
    if not digits:
        shown = nxt if nxt not in ("", "\n", "\r") else "<end of line>"
        hint = {"x": " (\\x needs hex digits)", "u": " (\\u needs 4 hex digits)",
                "U": " (\\U needs 8 hex digits)"}.get(nxt, "")
        raise SourceError(f"Invalid escape sequence \\{shown}{hint}", i, "lexer")
    codepoint = int(digits, 16)
    if codepoint > MAX_CODEPOINT:
        raise SourceError(f"Invalid escape sequence \\{nxt}{digits}: beyond U+10FFFF", i, "lexer")
    return codepoint, end


def decode_string(source: str, start: int) -> tuple[bytes, int]:
    """The bytes of the literal whose opening quote is `source[start]`, and the offset after it.

    Codepoints are re-encoded as UTF-8; surrogates get the generic 3-byte pattern.
    Example: decode_string('"\\\\xff"', 0) == (b"\\xc3\\xbf", 6)
    """
    i, codepoints = start + 1, []
    while True:
        if i >= len(source) or source[i] in "\r\n":
            raise SourceError('Expect " in string literal (a literal ends on its line; write \\n for a newline)',
                           i, "lexer")
        char = source[i]
        if char == '"':
            break
        if char == "\\":
            codepoint, i = _read_escape(source, i, in_class=False)
            codepoints.append(codepoint)
        else:
            codepoints.append(ord(char))
            i += 1
    return "".join(map(chr, codepoints)).encode("utf-8", "surrogatepass"), i + 1


def decode_char_class(source: str, start: int) -> tuple[CharClass, int]:
    """The class whose '[' is `source[start]`, ranges as written, and the offset after it.

    A '-' between two members makes a range; at either end, or escaped, it is literal.
    Example: decode_char_class("[^a-c-]", 0) == (CharClass(((97, 99), (45, 45)), True), 7)
    """
    i, negated = start + 1, False
    if source[i:i + 1] == "^":
        negated, i = True, i + 1
    members: list[tuple[bool, int, int]] = []  # (is a bare dash, codepoint, offset)
    while True:
        if i >= len(source):
            raise SourceError("Unterminated character class", i, "lexer")
        char = source[i]
        if char == "]":
            break
        if char in "\r\n":
            raise SourceError("Character class should not contain newline (write \\n)", i, "lexer")
        if char == "-":
            members.append((True, 0x2D, i))
            i += 1
        elif char == "\\":
            if source[i + 1:i + 2] in _CLASS_SHORTHANDS:
                raise SourceError("Character class escape is not supported yet in EBNF", i)
            codepoint, j = _read_escape(source, i, in_class=True)
            members.append((False, codepoint, i))
            i = j
        else:
            members.append((False, ord(char), i))
            i += 1
    ranges, k = [], 0
    while k < len(members):
        _, low, pos = members[k]
        if k + 2 < len(members) and members[k + 1][0]:
            high = members[k + 2][1]
            if low > high:
                raise SourceError("Invalid character class: lower bound is larger than upper bound", pos)
            ranges.append((low, high))
            k += 3
        else:
            ranges.append((low, low))
            k += 1
    return CharClass(tuple(ranges), negated), i + 1


# ---------------------------------------------------------------------------------------------
# Parse tree to IR, bottom-up and without recursion (groups may nest MAX_NESTING deep).


_QUANTIFIERS = {"*": (0, None), "+": (1, None), "?": (0, 1)}


class _Builder:
    def __init__(self, source: str):
        self.source = source
        self.references: list[Token] = []
        self.helpers: dict[str, Expr] = {}  # helper rules macros define (Call.define), by name
        self.helper_counters: dict = {}  # Call.counters, shared by the calls of this grammar
        self.names: frozenset[str] = frozenset()  # the rules the text defines
        self.substring_starts: set[str] = set()  # the helper rules a Substring call's expression names

    def build(self, tree: Tree, root_rule_name: str) -> GrammarIR:
        self.names = frozenset(str(rule.children[0]).split("[")[0] for rule in tree.children
                               if isinstance(rule, Tree) and rule.data == "rule")
        values: dict[int, object] = {}
        for node in tree.iter_subtrees():
            args = [values.pop(id(c)) if isinstance(c, Tree) else c for c in node.children]
            values[id(node)] = getattr(self, node.data)(*args)
        rules = [rule for rule, _ in values[id(tree)]]
        seen: set[str] = set()
        for rule, name_token in values[id(tree)]:
            if rule.name in seen:
                raise SourceError(f'Rule "{rule.name}" is defined multiple times', name_token.start_pos)
            seen.add(rule.name)
        if root_rule_name not in seen:
            raise SourceError(f'The root rule with name "{root_rule_name}" is not found', 0)
        for ref in sorted(self.references, key=lambda t: t.start_pos):
            if ref not in seen:
                raise SourceError(f'Rule "{ref}" is not defined', ref.start_pos)
        rules = [_marker_rules_named(rule, rules, token) for rule, token in values[id(tree)]]
        rules += [Rule(name, body) for name, body in self.helpers.items()]
        ir = GrammarIR(tuple(rules), root_rule_name)
        for rule, name_token in values[id(tree)]:
            problem = lazy_rule_problem(ir, rule.name) if rule.option("lazy") else None
            if problem:
                raise SourceError(problem, name_token.start_pos)
        return ir

    def start(self, *rules):
        return rules

    def rule(self, name: Token, body: Expr, lookahead: Optional[Expr] = None):
        options: tuple = ()
        if name.type == "RULE_OPTIONS":
            bracket = name.index("[")
            options = parse_rule_options(self.source, name.start_pos + bracket + 1, name.end_pos - 1, name[:bracket])
            name = Token("RULE_NAME", name[:bracket], start_pos=name.start_pos)
        return Rule(str(name), body, lookahead, options), name

    def lookahead(self, opener: Token, body: Expr) -> Expr:
        if isinstance(body, Choice) and any(isinstance(e, RuleRef) and e.name in self.substring_starts
                                            for e in body.alternatives):  # a Substring call, the whole assertion
            raise SourceError("Substring should not be in lookahead assertion", opener.start_pos)
        if isinstance(body, Choice):
            raise SourceError("Choices in lookahead assertion are not supported yet", opener.start_pos)
        if body == EPSILON:
            raise SourceError("Empty string should not be in lookahead assertion", opener.start_pos)
        return body

    def choices(self, *alternatives: Expr) -> Expr:
        return alternatives[0] if len(alternatives) == 1 else Choice(alternatives)

    def sequence(self, *items: Expr) -> Expr:
        return items[0] if len(items) == 1 else Sequence(items)

    def item(self, atom: Expr, bounds: Optional[tuple[int, Optional[int]]] = None) -> Expr:
        return atom if bounds is None else Repeat(atom, *bounds)

    def string(self, tok: Token) -> Expr:
        return ByteString(decode_string(self.source, tok.start_pos)[0])

    def char_class(self, tok: Token) -> Expr:
        return decode_char_class(self.source, tok.start_pos)[0]

    def ref(self, tok: Token) -> Expr:
        self.references.append(tok)
        return RuleRef(str(tok))

    def group(self, body: Expr) -> Expr:
        return body

    def empty_group(self) -> Expr:
        return EPSILON

    def quantifier(self, tok: Token):
        return _QUANTIFIERS[tok]

    def exact(self, count: Token):
        return int(count), int(count)

    def at_least(self, low: Token, _unbounded: Optional[Token] = None):
        return int(low), None

    def between(self, low: Token, high: Token):
        if int(low) > int(high):
            raise SourceError(f"Lower bound is larger than upper bound: {int(low)} > {int(high)}", high.start_pos)
        return int(low), int(high)

    # ---- intrinsics: Name(value, ..., key=value), built by the registry (grammar/intrinsic.py) --

    def arguments(self, *args):
        return list(args)

    def argument(self, value):
        return (None, value)

    def named_argument(self, name: Token, value):
        return (name, value)

    def v_string(self, tok: Token):  # intrinsic argument values (grammar/intrinsic.py)
        return Value("string", decode_string(self.source, tok.start_pos)[0].decode("utf-8", "surrogatepass"),
                      tok.start_pos)

    def v_int(self, tok: Token):
        return Value("integer", int(tok), tok.start_pos)

    def v_name(self, tok: Token):
        if tok in RESERVED_WORDS:
            return Value("boolean", tok == "true", tok.start_pos)
        return Value("rule name", str(tok), tok.start_pos)

    def v_tuple(self, *items):
        return Value("tuple", list(items), items[0].pos if items else -1)

    def macro(self, name: Token, args=None) -> Expr:
        positional: list[Value] = []
        named: dict[str, Value] = {}
        for key, value in args or ():
            if key is None:
                if named:
                    raise SourceError(f"{name}: a positional argument follows a named one", value.pos)
                positional.append(value)
            elif str(key) in named:
                raise SourceError(f"{name}: argument {key} is given twice", key.start_pos)
            else:
                named[str(key)] = value
        construct = REGISTRY.get(str(name))
        if construct is None:
            raise SourceError(f"{name}(...) is an intrinsic that xg2ref does not support yet", name.start_pos)
        call = Call(str(name), name.start_pos, positional, named, taken=Names(self.names, self.helpers),
                    counters=self.helper_counters)
        expr = construct.from_call(call)
        if call.name == "Substring":
            self.substring_starts.update(referenced_rules(expr))
        self.references += [Token("NAME", ref, start_pos=pos) for ref, pos in call.references]
        self.helpers.update(call.rules)
        return expr

# ---------------------------------------------------------------------------------------------
# lark's errors, in the words of the dialect.

_ELEMENT_STARTS = frozenset({"STRING", "CLASS", "NAME", "INTRINSIC", "_LPAR"})
_QUANTIFIER_STARTS = frozenset({"STAR", "PLUS", "QMARK", "_LBRACE"})
_EXPECTED_ORDER = (  # (terminals, how to say them), in the order a message lists them
    (_ELEMENT_STARTS, "element"), (_QUANTIFIER_STARTS, "a quantifier"), (frozenset({"_VBAR"}), "'|'"),
    (frozenset({"_RPAR"}), "')'"), (frozenset({"LOOKAHEAD"}), "a lookahead '(='"),
    (frozenset({"_ASSIGN"}), "'::='"), (frozenset({"INT"}), "integer"), (frozenset({"_COMMA"}), "','"),
    (frozenset({"UNBOUNDED"}), "-1"), (frozenset({"_RBRACE"}), "'}'"),
    (frozenset({"RULE_NAME", "RULE_OPTIONS"}), "a rule definition (name ::= ...)"),
    (frozenset({"$END"}), "end of input"),
)


def _describe(tok: Token) -> str:
    if tok.type == "$END":
        return "end of input"
    return {"STRING": f"string literal {tok}", "CLASS": f"character class {tok}", "NAME": f"identifier {tok}",
            "RULE_NAME": f"the definition of rule {tok}", "INT": f"integer {tok}"}.get(tok.type, f"'{tok}'")


def _expected(names: set[str]) -> str:
    parts = [said for terminals, said in _EXPECTED_ORDER if names & terminals]
    if not parts:
        return "nothing more"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def _hint(found: str, expected: set[str], at_start: bool) -> str:
    if found == "_ASSIGN":
        return " ('::=' must follow a rule name at the beginning of a line)"
    if found in _QUANTIFIER_STARTS and "_VBAR" in expected:
        return " (only one quantifier per element; group to repeat a repetition, e.g. (\"a\"+)+)"
    if found in _QUANTIFIER_STARTS:
        return " (a quantifier must follow an element)"
    if found == "_RPAR" and "_RPAR" not in expected:
        return " (no group is open)"
    if expected <= {"RULE_NAME", "RULE_OPTIONS", "$END"} and not at_start:
        return " (a lookahead assertion (= ...) must end its rule)"
    if (expected & _ELEMENT_STARTS and expected <= _ELEMENT_STARTS | {"_RPAR"}
            and found in ("_VBAR", "_RPAR", "$END", "RULE_NAME", "LOOKAHEAD")):
        return ' (an empty body or alternative must be written "")'
    return ""


def _parser_expects(err: UnexpectedInput) -> set[str]:
    """The terminals the parser could take where `err` happened.

    An error the contextual lexer raises lists what that state's lexer knows, which includes
    the always-accepted RULE_NAME; the parse table says what the parser would take.
    """
    state = err.state
    try:
        names = set(state.parse_conf.states[state.position])
    except AttributeError:
        names = set(getattr(err, "expected", None) or getattr(err, "allowed", None) or ())
    return {name for name in names if name.isupper()} - {"BLANK", "COMMENT"}


def _translate(err: UnexpectedInput, source: str) -> SourceError:
    if isinstance(err, UnexpectedToken) and err.token.type == "_EQUAL":
        return SourceError("Unexpected character: '='", err.token.start_pos, "lexer")
    if isinstance(err, UnexpectedToken):
        tok = err.token
        expected = _parser_expects(err)
        pos = len(source) if tok.type == "$END" else tok.start_pos
        at_start = not getattr(err.state, "value_stack", True)
        hint = _hint(tok.type, expected, at_start)
        return SourceError(f"Expect {_expected(expected)}, but got {_describe(tok)}{hint}", pos)
    if isinstance(err, UnexpectedCharacters):
        pos = err.pos_in_stream
        char = source[pos]
        if char in '"[':  # the literal or class regex failed: find out where
            try:
                (decode_string if char == '"' else decode_char_class)(source, pos)
            except SourceError as located:
                return located
        if char == "'":
            return SourceError("Unexpected character: ' (string literals use double quotes)", pos, "lexer")
        if char == ":":
            return SourceError("Unexpected character: ':' (the rule operator is '::=')", pos, "lexer")
        return SourceError(f"Unexpected character: {char!r}; expect {_expected(_parser_expects(err))}", pos, "lexer")
    return SourceError(str(err), 0)
