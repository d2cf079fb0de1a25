"""XGrammar-2 §2.1 and XGrammar §2.2: `GrammarIR` back to EBNF text in xgrammar's dialect.

The contract is the round trip

    parse_ebnf(print_grammar(ir), root_rule_name=ir.root) == ir

for every IR in the shape `parse_ebnf` gives back: Sequence and Choice nodes with at least two
children, char-class ranges with low <= high, byte strings that are UTF-8 (surrogates in the
generic 3-byte pattern allowed), lookaheads that are neither a Choice nor `EPSILON`, rule
names that are identifiers other than an intrinsic's name or true/false. The root rule's
name is not written in the text: when it is not "root", pass it to `parse_ebnf`.

Layout: one rule per line, `name ::= body`, then ` (= lookahead)` when the rule has one (a
body that is a Choice is then parenthesized, which parses to the same tree).
Parentheses go exactly where the tree needs them: around a Choice inside a Choice or a
Sequence, around a Sequence inside a Sequence, and around a Sequence, Choice or Repeat under
a quantifier. Literals and classes print printable characters raw (non-ASCII included), the
usual C escapes for \\n \\r \\t \\" \\\\, and \\uHHHH / \\UHHHHHHHH (lowercase hex) for the
rest: controls, separators other than the space, surrogates, unassigned codepoints and
combining marks (never \\x, whose digit run has no end). Repeat bounds print as * + ? {m}
{m,} {m,n}.

What it leaves out: IR outside that shape still prints (an empty Sequence as `""`, an empty
Choice as `[]`, one child as the child itself) but does not parse back to the same tree;
byte strings that are not UTF-8 cannot be written in the dialect and raise ValueError.
Printing walks the tree with an explicit stack, so deep trees do not hit Python's recursion
limit.
"""

from __future__ import annotations

import unicodedata
from typing import Optional, Union

from .intrinsic import Intrinsic
from .ir import MARKER_RULE_KEYS, ByteString, CharClass, Choice, Expr, GrammarIR, Repeat, Rule, RuleRef, Sequence

# Where an expression is printed, from loosest to tightest binding.
TOP, ALTERNATIVE, ITEM, REPEATED = range(4)

_STRING_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CLASS_ESCAPES = {"]": "\\]", "\\": "\\\\", "^": "\\^", "-": "\\-", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def print_grammar(ir: GrammarIR) -> str:
    """The EBNF text of `ir`: one line per rule, in order, ending with a newline.

    Example: print_grammar(parse_ebnf('root ::= "a" ("b" | c)*\\nc ::= [x-z]'))
             == 'root ::= "a" ("b" | c)*\\nc ::= [x-z]\\n'
    """
    index = {r.name: k for k, r in enumerate(ir.rules)}
    return "".join(print_rule(rule, index) + "\n" for rule in ir.rules)


def print_rule(rule: Rule, index: Optional[dict] = None) -> str:
    """`name[options] ::= body`, with ` (= lookahead)` when the rule carries one; `index` (rule
    name -> its place in the printed grammar) writes the rules a marker names as xgrammar's ids."""
    name = rule.name + (f"[{', '.join(_option(k, v, index) for k, v in rule.options)}]" if rule.options else "")
    if rule.lookahead is None:
        return f"{name} ::= {print_expr(rule.body)}"
    # `a | b (= x)` reads as if the assertion belonged to b; `(a | b) (= x)` parses the same.
    body = print_expr(rule.body, ITEM if isinstance(rule.body, Choice) else TOP)
    return f"{name} ::= {body} (= {print_expr(rule.lookahead, ALTERNATIVE)})"


def _option(key: str, value, index: Optional[dict] = None) -> str:
    if key in ("lazy", "unordered", "required"):
        return key if value else f"{key}=false"
    if key == "capture":
        return "capture" if value == "" else f'capture="{value}"'
    if key == "stop_capture":
        return f'stop_capture="{value}"'
    if key in MARKER_RULE_KEYS:
        return f"{key}_id={index[value] if index is not None and value in index else value}"
    if key == "temperature":  # a float32 printed as xgrammar prints it: 9 significant digits
        return f"temperature={float(value):.9g}"
    return f"{key}={value!r}" if isinstance(value, float) else f"{key}={value}"


def print_expr(expr: Expr, context: int = TOP) -> str:
    """The EBNF text of one expression, parenthesized as `context` requires.

    Example: print_expr(Repeat(Sequence((ByteString(b"a"), RuleRef("b"))), 2, None)) == '("a" b){2,}'
    """
    out: list[str] = []
    stack: list[Union[str, tuple[Expr, int]]] = [(expr, context)]
    while stack:
        top = stack.pop()
        if isinstance(top, str):
            out.append(top)
            continue
        node, ctx = top
        if isinstance(node, (Sequence, Choice)):
            parts = node.items if isinstance(node, Sequence) else node.alternatives
            if len(parts) == 1:
                stack.append((parts[0], ctx))
                continue
            if not parts:
                out.append('""' if isinstance(node, Sequence) else "[]")
                continue
            is_sequence = isinstance(node, Sequence)
            wrap = ctx >= ITEM or (ctx == ALTERNATIVE and not is_sequence)
            separator, child_ctx = (" ", ITEM) if is_sequence else (" | ", ALTERNATIVE)
            pieces: list[Union[str, tuple[Expr, int]]] = ["("] if wrap else []
            for k, part in enumerate(parts):
                if k:
                    pieces.append(separator)
                pieces.append((part, child_ctx))
            if wrap:
                pieces.append(")")
            stack.extend(reversed(pieces))
        elif isinstance(node, Repeat):
            # Under a quantifier, Sequence, Choice and Repeat each wrap themselves.
            pieces = ["(", (node.body, REPEATED), _quantifier(node.min, node.max), ")"]
            stack.extend(reversed(pieces if ctx == REPEATED else pieces[1:3]))
        else:
            out.append(_leaf(node))
    return "".join(out)


def _quantifier(low: int, high) -> str:
    if high is None:
        return {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    if (low, high) == (0, 1):
        return "?"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


def _leaf(node: Expr) -> str:
    if isinstance(node, ByteString):
        try:
            text = node.value.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as err:
            raise ValueError(f"cannot print {node!r}: the EBNF dialect only writes UTF-8 text ({err})") from None
        return '"' + "".join(_escape(ch, _STRING_ESCAPES) for ch in text) + '"'
    if isinstance(node, CharClass):
        body = []
        for low, high in node.ranges:
            body.append(_escape(chr(low), _CLASS_ESCAPES))
            if high != low:
                body.append("-" + _escape(chr(high), _CLASS_ESCAPES))
        return "[" + ("^" if node.negated else "") + "".join(body) + "]"
    if isinstance(node, RuleRef):
        return node.name
    if isinstance(node, Intrinsic):
        return node.to_ebnf(lambda data: _leaf(ByteString(data)))
    raise TypeError(f"not a grammar expression: {node!r}")


def _escape(ch: str, table: dict[str, str]) -> str:
    """One codepoint as it is written inside a literal (`table` = _STRING_ESCAPES) or a class."""
    if ch in table:
        return table[ch]
    if ch.isprintable() and not unicodedata.category(ch).startswith("M"):
        return ch
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
