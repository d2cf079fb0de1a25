"""Reading xgrammar 0.2.8's Lark dialect into a tree (for `converter.py`, which lowers it).

A hand-written lexer and recursive-descent parser, following xgrammar's own reading token for
token (Lark's meta-grammar does not fit: the dialect adds inline JSON values of any depth,
nested `%lark { ... }` documents, `<special>` tokens, `@name` references and rule attributes,
and reads strings as JSON strings and `//` as a comment). The lexical rules:

- blanks are spaces, tabs and form feeds; a newline (LF, CRLF or CR) is a token; comments run
  from `#` or `//` to the end of the line;
- names are `[A-Za-z_][A-Za-z0-9_-]*`, optionally after `?` or `!` (dropped); a name is a
  terminal when its first letter after one `_` is uppercase;
- `"..."` is a JSON string, `"..."i` the same without case; `/.../flags` a regex whose pattern
  runs to the next unescaped `/` (newlines included); `<...>` a special token; `@name` a
  named grammar; `%json`, `%regex` and `%grammar_options` are followed by one JSON value;
- a definition ends at a newline, unless the next non-blank line starts with `|` (or the
  newlines close a group); `( ... )` and `[ ... ]` nest at most `MAX_NESTING` deep in one
  document, `%lark { }` documents at most `MAX_DOCUMENTS`.

Tree: a `Document` holds `Definition`s (name, terminal or rule, attributes, body), `%ignore`
bodies, imports and `%grammar_options` values; bodies are `Node`s (see its docstring). Errors
are `LarkError`s at the offending token.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Optional

from ...exceptions import EBNFError
from . import parametric as P
from .dialect import HEX_DIGITS as _HEX_DIGITS, hex_escapes

MAX_NESTING, MAX_DOCUMENTS = 200, 1000  # groups in one document; nested %lark / @name grammars
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGITS = frozenset("0123456789")
NAME_CHARS = _LETTERS | _DIGITS | {"_", "-"}
_PUNCT = frozenset(":,=()[]{}|&~*")
_JSON_DIRECTIVES = ("%json", "%regex", "%grammar_options")
_KEYWORD_DIRECTIVES = ("%import", "%ignore", "%lark", "%if")
_FLOAT32_MIN, _FLOAT32_MAX = 1.1754943508222875e-38, 3.4028234663852886e38  # normal float32 values
_SEQUENCE_END = {"NL", "|", ")", "]", "}", "END", "->", "&", "%if"}


class LarkError(EBNFError):
    """A Lark grammar xg2ref cannot read or lower. `str(err)` reads
    "Lark error at line 2, column 7: <message>" and the offending line with a caret."""

    def __init__(self, message: str, line: int = 0, column: int = 0, source: str = ""):
        super().__init__(message, line, column, source)
        text = f"Lark error at line {line}, column {column}: {message}" if line else f"Lark error: {message}"
        self.args = (text + ("\n" + self.excerpt if self.excerpt else ""),)


@dataclass(slots=True)
class Tok:
    kind: str  # NAME STRING REGEX NUMBER SPECIAL GREF NL END, a %directive, or the punctuation itself
    text: str
    line: int
    col: int
    flags: str = ""
    value: Any = None  # the parsed JSON value of %json / %regex / %grammar_options


@dataclass(slots=True)
class Node:
    """A grammar expression: kind is seq, choice, repeat (lo, hi; hi -1 = unbounded), string
    (text, flags), range (text..text2), regex (text = pattern, flags), name, json, regex_ext
    (value), lark (value = nested Document), special (`<...>`), gref (`@name`) or not (`~x`)."""

    kind: str
    line: int
    col: int
    text: str = ""
    text2: str = ""
    flags: str = ""
    lo: int = 0
    hi: int = 0
    children: list = field(default_factory=list)
    value: Any = None

    def walk(self):
        """This node and every node under it (depth first, without recursion)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(node.children)


@dataclass(slots=True)
class Definition:
    name: str
    is_terminal: bool
    body: Node
    line: int
    col: int
    attrs: dict = field(default_factory=dict)  # key -> (value, line, col)
    parametric: bool = False  # llguidance's `name::_` (parametric.py)

    def attr(self, key: str, default=None):
        entry = self.attrs.get(key)
        return default if entry is None else entry[0]


@dataclass(slots=True)
class Document:
    definitions: list = field(default_factory=list)
    ignores: list = field(default_factory=list)
    imports: list = field(default_factory=list)  # (path, local name, line, col)
    options: list = field(default_factory=list)  # (JSON value, line, col)
    llguidance: list = field(default_factory=list)  # the `%llguidance` values (JSON value, line, col)


def is_terminal_name(name: str) -> bool:
    """Lark's rule: a terminal's name starts (after `!`/`?` and one `_`) with an uppercase letter."""
    k = 1 if name[:1] in ("!", "?") else 0
    k += name[k:k + 1] == "_"
    return k < len(name) and "A" <= name[k] <= "Z"


def plain_name(name: str) -> str:
    return name[1:] if name[:1] in ("!", "?") else name


# ---- lexer ---------------------------------------------------------------------------------------

class _Lexer:
    def __init__(self, source: str, dialect: str = "xgrammar"):
        self.src, self.pos, self.line, self.col = source, 0, 1, 1
        self.dialect = dialect

    def fail(self, message: str, line: int, col: int):
        raise LarkError(message, line, col, self.src)

    def peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.src[i] if i < len(self.src) else ""

    def advance(self, n: int = 1) -> None:
        for _ in range(n):
            if self.pos >= len(self.src):
                return
            if self.src[self.pos] == "\n":
                self.line, self.col = self.line + 1, 1
            else:
                self.col += 1
            self.pos += 1

    def tokens(self) -> list[Tok]:
        out = []
        while self.pos < len(self.src):
            c, line, col = self.peek(), self.line, self.col
            if c in " \t\f":
                self.advance()
            elif c in "\r\n":
                self.advance(2 if self.src.startswith("\r\n", self.pos) else 1)
                if c == "\r" and self.peek(-1) == "\r":
                    self.line, self.col = self.line + 1, 1  # a lone CR ends a line too
                out.append(Tok("NL", "\n", line, col))
            elif c == "#" or (c == "/" and self.peek(1) == "/"):
                while self.pos < len(self.src) and self.peek() not in "\r\n":
                    self.advance()
            else:
                out.append(self.token(c, line, col))
        out.append(Tok("END", "", self.line, self.col))
        return out

    def simple(self, kind: str, n: int, line: int, col: int) -> Tok:
        text = self.src[self.pos:self.pos + n]
        self.advance(n)
        return Tok(kind, text, line, col)

    def token(self, c: str, line: int, col: int) -> Tok:
        nxt = self.peek(1)
        if c in _PUNCT:
            if c == ":" and nxt == ":":
                return self.simple("::", 2, line, col)
            return self.simple(c, 1, line, col)
        if c == ".":
            return self.simple("..", 2, line, col) if nxt == "." else self.simple(".", 1, line, col)
        if c == "-":
            if nxt == ">":
                return self.simple("->", 2, line, col)
            if nxt in _DIGITS:
                return self.number(line, col)
            self.fail("unexpected '-' character", line, col)
        if c == "+":
            return self.number(line, col) if nxt in _DIGITS else self.simple("+", 1, line, col)
        if c in "?!":
            if nxt in _LETTERS or nxt == "_":
                return self.name(line, col)
            if c == "!":
                self.fail("unexpected '!' character", line, col)
            return self.simple("?", 1, line, col)
        if c == '"':
            return self.string(line, col)
        if c == "/":
            return self.regex(line, col)
        if c == "<":
            return self.special(line, col)
        if c == "@":
            start = self.pos
            self.advance()
            while self.peek() in NAME_CHARS and self.peek():
                self.advance()
            if self.pos == start + 1:
                self.fail("empty grammar reference", line, col)
            return Tok("GREF", self.src[start:self.pos], line, col)
        if c == "%":
            return self.directive(line, col)
        if c in _LETTERS or c == "_":
            return self.name(line, col)
        if c == "0" and nxt in "xX" and self.dialect == "llguidance":  # a parameter value (parametric.py)
            start = self.pos
            self.advance(2)
            while self.peek() and self.peek() in _HEX_DIGITS:
                self.advance()
            return Tok("NUMBER", self.src[start:self.pos], line, col)
        if c in _DIGITS:
            return self.number(line, col)
        self.fail(f"unexpected character {c!r}", line, col)

    def name(self, line: int, col: int) -> Tok:
        start = self.pos
        if self.peek() in "!?":
            self.advance()
        while self.peek() and self.peek() in NAME_CHARS:
            self.advance()
        return Tok("NAME", self.src[start:self.pos], line, col)

    def digits(self) -> None:
        while self.peek() and self.peek() in _DIGITS:
            self.advance()

    def number(self, line: int, col: int) -> Tok:
        start = self.pos
        if self.peek() in "+-":
            self.advance()
        self.digits()
        if self.peek() == "." and self.peek(1) != ".":
            self.advance()
            self.digits()
        if self.peek() and self.peek() in "eE":
            self.advance()
            if self.peek() and self.peek() in "+-":
                self.advance()
            self.digits()
        return Tok("NUMBER", self.src[start:self.pos], line, col)

    def delimited(self, close: str, line: int, col: int, what: str, stop_at_newline: bool) -> str:
        """The text from the opening character to the unescaped `close` (both included)."""
        start, escaped = self.pos, False
        self.advance()
        while self.pos < len(self.src):
            c = self.peek()
            if c == close and not escaped:
                self.advance()
                return self.src[start:self.pos]
            if stop_at_newline and c in "\r\n":
                break
            escaped = c == "\\" and not escaped
            self.advance()
        self.fail(f"unterminated {what}", line, col)

    def string(self, line: int, col: int) -> Tok:
        text = self.delimited('"', line, col, "string literal", True)
        flags = ""
        if self.peek() == "i":
            self.advance()
            flags = "i"
        return Tok("STRING", text, line, col, flags)

    def regex(self, line: int, col: int) -> Tok:
        text = self.delimited("/", line, col, "regular expression", False)
        start = self.pos
        while self.peek() and self.peek() in _LETTERS:
            self.advance()
        return Tok("REGEX", text[1:-1], line, col, self.src[start:self.pos])

    def special(self, line: int, col: int) -> Tok:
        start = self.pos
        self.advance()
        while self.pos < len(self.src) and self.peek() != ">":
            if self.peek().isspace() or self.peek() == "<":
                self.fail("invalid special token", line, col)
            self.advance()
        if self.pos >= len(self.src):
            self.fail("unterminated special token", line, col)
        self.advance()
        return Tok("SPECIAL", self.src[start:self.pos], line, col)

    def directive(self, line: int, col: int) -> Tok:
        start = self.pos
        self.advance()
        while self.peek() and (self.peek() in _LETTERS or self.peek() == "_"):
            self.advance()
        word = self.src[start:self.pos]
        if word in _KEYWORD_DIRECTIVES:
            return Tok(word, word, line, col)
        if word not in _JSON_DIRECTIVES and not (word == "%llguidance" and self.dialect == "llguidance"):
            return Tok("%unsupported", word, line, col)
        while self.peek() and self.peek().isspace():
            self.advance()
        try:
            value, end = json.JSONDecoder(parse_constant=_no_constant).raw_decode(self.src, self.pos)
        except (ValueError, RecursionError) as err:
            self.fail(f"failed to parse JSON value after {word}: {err}", line, col)
        self.advance(end - self.pos)
        return Tok(word, word, line, col, value=value)


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


# ---- parser --------------------------------------------------------------------------------------

class _Parser:
    """Recursive descent over the tokens; each method is named after the construct it reads."""

    def __init__(self, source: str, tokens: list[Tok], dialect: str = "xgrammar"):
        self.src, self.toks, self.i, self.depth, self.documents = source, tokens, 0, 0, 0
        self.llguidance = dialect == "llguidance"

    def fail(self, message: str, tok: Optional[Tok] = None):
        tok = tok or self.peek()
        raise LarkError(message, tok.line, tok.col, self.src)

    def peek(self, k: int = 0) -> Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def match(self, kind: str) -> Optional[Tok]:
        if self.peek().kind != kind:
            return None
        self.i += 1
        return self.toks[self.i - 1]

    def expect(self, kind: str, message: str) -> Tok:
        tok = self.match(kind)
        if tok is None:
            self.fail(message)
        return tok

    def newlines(self) -> None:
        while self.match("NL"):
            pass

    def document(self, nested: bool = False) -> Document:
        doc = Document()
        self.newlines()
        while self.peek().kind != "END" and not (nested and self.peek().kind == "}"):
            kind = self.peek().kind
            if kind == "%import":
                self.import_(doc)
            elif kind == "%ignore":
                self.i += 1
                doc.ignores.append(self.choice())
            elif kind == "%grammar_options":
                tok = self.match(kind)
                doc.options.append((tok.value, tok.line, tok.col))
            elif kind == "%llguidance":
                tok = self.match(kind)
                doc.llguidance.append((tok.value, tok.line, tok.col))
            elif kind == "%unsupported":
                self.fail(f"directive {self.peek().text} is not supported")
            else:
                doc.definitions.append(self.definition())
            if self.peek().kind not in ("NL", "END") and not (nested and self.peek().kind == "}"):
                self.fail("expected end of grammar item")
            self.newlines()
        return doc

    def import_(self, doc: Document) -> None:
        at = self.match("%import")
        path = self.expect("NAME", "expected import path").text
        while self.match("."):
            path += "." + self.expect("NAME", "expected name after '.'").text
        if self.match("("):
            while True:
                name = self.expect("NAME", "expected imported terminal name").text
                doc.imports.append((f"{path}.{name}", name, at.line, at.col))
                if not self.match(","):
                    break
            self.expect(")", "expected ')' after import list")
            return
        local = path.rsplit(".", 1)[-1]
        if self.match("->"):
            local = self.expect("NAME", "expected import alias").text
        doc.imports.append((path, local, at.line, at.col))

    def definition(self) -> Definition:
        tok = self.expect("NAME", "expected rule or terminal name")
        d = Definition(plain_name(tok.text), is_terminal_name(tok.text), Node("seq", tok.line, tok.col),
                       tok.line, tok.col)
        self.parameter(d)
        if self.peek().kind == "[":
            if d.is_terminal:
                self.fail("attributes are only supported on rules")
            self.attributes(d)
        self.parameter(d)
        for kind, message in ((".", "rule and terminal priorities are not supported"),
                              ("::", "parametric grammar is not supported"), ("{", "Lark templates are not supported")):
            if self.peek().kind == kind:
                self.fail(message)
        self.expect(":", "expected ':' after rule name")
        d.body = self.choice()
        return d

    def parameter(self, d: Definition) -> None:
        """llguidance's `name::_`: a parametric rule (parametric.py)."""
        if not self.llguidance or d.parametric or not self.match("::"):
            return
        if d.is_terminal:
            self.fail("terminals cannot be parametric")
        if not (self.peek().kind == "NAME" and self.peek().text == "_"):
            self.fail("expected '_' after '::' in a parametric rule's name")
        self.i += 1
        d.parametric = True

    def attributes(self, d: Definition) -> None:
        self.match("[")
        while self.peek().kind != "]":
            key = self.expect("NAME", "expected rule attribute")
            name = key.text
            if name == "lazy" and self.peek().kind != "=":
                value, at = True, key
            elif name in ("max_tokens", "max_chars"):
                self.expect("=", f"expected '=' after {name} attribute")
                at = self.peek()
                value = self.integer()
                if name == "max_tokens" and not 0 < value <= 1_000_000:
                    self.fail("max_tokens must be positive" if value <= 0 else "max_tokens is too large", at)
            elif name in ("capture", "stop_capture"):
                value, at = self.capture_name(name, key, d.name)
            elif name in ("stop", "suffix"):
                other = "suffix" if name == "stop" else "stop"
                if other in d.attrs:
                    self.fail(f"{name} cannot be combined with {other}", key)
                self.expect("=", f"expected '=' after {name} attribute")
                value, at = self.stop_value(name), self.peek(-1)
            elif name == "temperature":
                self.expect("=", "expected '=' after temperature attribute")
                at = self.expect("NUMBER", "expected number after temperature=")
                try:
                    value = float(at.text)
                except ValueError:
                    value = math.nan
                if not (value == 0 or _FLOAT32_MIN <= value <= _FLOAT32_MAX):  # read as a float32
                    self.fail("temperature must be a finite non-negative number", at)
            else:
                self.fail(f"rule attribute '{name}' is not supported by XGrammar Lark", key)
            if name in d.attrs:
                self.fail(f"{name} attribute is specified more than once", key)
            d.attrs[name] = (value, at.line, at.col)
            if not self.match(","):
                break
        self.expect("]", "expected ']' after rule attributes")
        if "stop_capture" in d.attrs and not ({"stop", "suffix"} & d.attrs.keys()):
            _, line, col = d.attrs["stop_capture"]
            raise LarkError("stop_capture requires stop or suffix", line, col, self.src)

    def capture_name(self, name: str, key: Tok, default: str) -> tuple[str, Tok]:
        """The name of `capture[="name"]` (default: the rule's) or `stop_capture="name"`."""
        value, at = default, key
        if name == "stop_capture":
            self.expect("=", "expected '=' after stop_capture attribute")
        if name == "stop_capture" or self.match("="):
            at = self.expect("STRING", f"expected string literal after {name}=")
            if at.flags:
                self.fail(f"case-insensitive flags are not supported on {name}", at)
            value = self.string_value(at)
        what = name.replace("_", " ")
        if not value:
            self.fail(f"{what} name must not be empty", at)
        if not set(value) <= NAME_CHARS | {"."}:
            self.fail(f"{what} name must only contain letters, digits, '_', '-' and '.'", at)
        return value, at

    def stop_value(self, name: str) -> Node:
        tok = self.peek()
        self.i += tok.kind in ("STRING", "REGEX", "NAME")
        if tok.kind == "STRING":
            node = self.string_node(tok)
            if not node.text and not (self.llguidance and name == "stop"):  # (llguidance: the EOS token)
                self.fail(f"{name} must not be empty", tok)
            return node
        if tok.kind == "REGEX":
            return Node("regex", tok.line, tok.col, tok.text, flags=tok.flags)
        if tok.kind == "NAME":
            if not is_terminal_name(tok.text):
                self.fail(f"{name} terminal name must be uppercase", tok)
            return Node("name", tok.line, tok.col, plain_name(tok.text))
        self.fail(f"expected string literal, regular expression, or uppercase terminal name after {name}=")

    def integer(self) -> int:
        tok = self.expect("NUMBER", "expected integer")
        digits = tok.text[1:] if tok.text[:1] in "+-" else tok.text
        if not digits.isdigit() or not 0 <= int(tok.text) <= 2**31 - 1:
            self.fail("invalid repetition count", tok)
        return int(tok.text)

    def choice(self) -> Node:
        first = self.peek()
        alternatives = [self.sequence()]
        while self.separator():
            alternatives.append(self.sequence())
        if len(alternatives) == 1:
            return alternatives[0]
        return Node("choice", first.line, first.col, children=alternatives)

    def separator(self) -> bool:
        """`|`, also at the start of a following line; blank lines before a closing bracket
        are skipped as well (xgrammar's reading)."""
        if self.match("|"):
            return True
        saved = self.i
        self.newlines()
        if self.match("|"):
            return True
        if self.peek().kind not in (")", "]", "}"):
            self.i = saved
        return False

    def sequence(self) -> Node:
        first = self.peek()
        items = []
        while self.peek().kind not in _SEQUENCE_END:
            items.append(self.expr())
        node = Node("seq", first.line, first.col, children=items)
        if self.peek().kind == "&":  # llguidance's intersection: `A B & C` is (A B) & C, tighter than `|`
            if not self.llguidance:
                self.fail("intersection '&' is not supported")
            parts = [node]
            while self.match("&"):
                start, more = self.peek(), []
                while self.peek().kind not in _SEQUENCE_END:
                    more.append(self.expr())
                parts.append(Node("seq", start.line, start.col, children=more))
            node = Node("and", first.line, first.col, children=parts)
        if self.match("->"):
            self.expect("NAME", "expected alias name after '->'")
        if self.peek().kind == "%if":
            at = self.peek()
            if not self.llguidance:
                self.fail("parametric %if conditions are not supported")
            self.i += 1
            node = Node("when", at.line, at.col, value=P.parse_cond(self), children=[node])
        return node

    def expr(self) -> Node:
        first = self.peek()
        atom = self.atom()
        if first.kind == "~":
            atom = Node("not", first.line, first.col, children=[atom])
        lo = hi = None
        if self.match("?"):
            lo, hi = 0, 1
        elif self.match("*"):
            lo, hi = 0, -1
        elif self.match("+"):
            lo, hi = 1, -1
        elif self.match("~"):
            lo = hi = self.integer()
            if self.match(".."):
                hi = self.integer()
        elif self.match("{"):
            lo = 0 if self.peek().kind == "," else self.integer()
            hi = lo
            if self.match(","):
                hi = -1 if self.peek().kind == "}" else self.integer()
            self.expect("}", "expected '}' after repetition range")
        if lo is None:
            return atom
        if hi != -1 and hi < lo:
            self.fail("repetition end must be greater than or equal to start", first)
        return Node("repeat", first.line, first.col, lo=lo, hi=hi, children=[atom])

    def atom(self) -> Node:
        if self.peek().kind == "~":  # llguidance's complement
            if not self.llguidance:
                self.fail("complement '~' is not supported")
            self.i += 1
        tok = self.peek()
        self.i += 1
        if tok.kind in ("(", "["):
            self.depth += 1
            if self.depth > MAX_NESTING:
                self.fail(f"groups are nested deeper than {MAX_NESTING} levels", tok)
            inner = self.choice()
            self.depth -= 1
            if tok.kind == "(":
                self.expect(")", "expected ')' after group")
                return inner
            self.expect("]", "expected ']' after optional group")
            return Node("repeat", tok.line, tok.col, lo=0, hi=1, children=[inner])
        if tok.kind == "STRING":
            node = self.string_node(tok)
            if not self.match(".."):
                return node
            end = self.expect("STRING", "expected string after '..'")
            last = self.string_node(end)
            if node.flags or last.flags:
                self.fail("flags are not allowed on character ranges", tok if node.flags else end)
            return Node("range", tok.line, tok.col, node.text, last.text)
        if tok.kind == "REGEX":
            return Node("regex", tok.line, tok.col, tok.text, flags=tok.flags)
        if tok.kind == "NAME":
            if self.peek().kind == "::":
                if not self.llguidance:
                    self.fail("parametric grammar is not supported")
                self.i += 1
                return Node("name", tok.line, tok.col, plain_name(tok.text), value=P.parse_expr(self))
            if self.peek().kind == "{" and self.peek(1).kind not in (",", "NUMBER"):
                self.fail("Lark templates are not supported")
            return Node("name", tok.line, tok.col, plain_name(tok.text))
        if tok.kind in ("%json", "%regex"):
            return Node("json" if tok.kind == "%json" else "regex_ext", tok.line, tok.col, value=tok.value)
        if tok.kind == "SPECIAL":
            return Node("special", tok.line, tok.col, tok.text)
        if tok.kind == "GREF":
            return Node("gref", tok.line, tok.col, tok.text[1:])
        if tok.kind == "%lark":
            self.expect("{", "expected '{' after %lark")
            self.documents += 1
            if self.documents > MAX_DOCUMENTS:
                self.fail(f"%lark grammars are nested deeper than {MAX_DOCUMENTS} levels", tok)
            depth, self.depth = self.depth, 0
            nested = self.document(nested=True)
            self.depth, self.documents = depth, self.documents - 1
            self.expect("}", "expected '}' after nested Lark grammar")
            return Node("lark", tok.line, tok.col, value=nested)
        self.i -= 1
        if tok.kind == "%unsupported":
            self.fail(f"directive {tok.text} is not supported")
        self.fail("expected grammar expression")

    def string_value(self, tok: Tok) -> str:
        text = tok.text
        if self.llguidance and "\\x" in text:  # llguidance's lexer takes \xHH: read as \u00HH
            text = hex_escapes(text, lambda: self.fail("invalid string literal: \\x takes two hex digits", tok))
        try:
            value = json.loads(text)
        except ValueError as err:
            self.fail(f"invalid string literal: {err}", tok)
        if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
            self.fail("invalid string literal: a \\u escape names a lone surrogate", tok)
        return value

    def string_node(self, tok: Tok) -> Node:
        return Node("string", tok.line, tok.col, self.string_value(tok), flags=tok.flags)


def parse_lark(source: str, dialect: str = "xgrammar") -> Document:
    """The tree of a Lark grammar text in `dialect` ("xgrammar" or "llguidance"; raises
    LarkError at the first offending token)."""
    return _Parser(source, _Lexer(source, dialect).tokens(), dialect).document()
