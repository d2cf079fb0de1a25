"""llguidance's lazy rules in the Lark front end (`converter.py`): `name[lazy]`,
`name[stop=S]`, `name[suffix=S]`, and the dispatching start rule built from them.

A lazy rule ends at its first chance. Two readings, both xgrammar 0.2.8's:

- **Dispatch.** A body of any text (`/(.|\\n)*/`, `/[\\s\\S]*/`, `/.*/s`, ... `ANY_TEXT`) then a
  literal or a token, or stop/suffix "lit" on an any-text body, becomes
  `TagDispatch(("lit", end), loop=false)` (a token: its TokenTagDispatch), `end ::= ""`: free
  text up to the first "lit". TagDispatch free text may also end without it, so the rule may
  too (xgrammar's reading, kept).
- **Shortest match.** Otherwise the body (then S) is read as a terminal, a regular language L,
  and the rule gets the rule option `lazy`: it matches {w in L : no proper prefix of w is in
  L}, lowered to right-linear rules by `lazy.py` when the grammar is compiled.

**Dispatching start** (xgrammar's "structural tool call" pattern):

    start: (tool_1 | ... | tool_n)* tail      tail: any text
    tool_i: head_i rest_i                     head_i lazy with a literal trigger T_i
        (or tool_i: any-text <token> rest_i, a token trigger)
    -->  root ::= TagDispatch((T_1, r_1), ..., loop=true)    r_i ::= rest_i (| rest_j ...)

tools sharing a trigger share one rule (the choice of their rests); string and token triggers
may not be mixed. The tools, heads and tail are consumed: budgets and captures on them are
refused, their bodies are not read.
"""

from __future__ import annotations

from typing import Optional

from ...intrinsics.token_sets import token_dispatch_expr
from ...intrinsics.tag_dispatch import TagDispatch
from ...grammar.ir import EPSILON, MARKER_RULE_KEYS, ByteString, Choice, Expr, Sequence
from .reader import Definition, Node

# regexes read as "any text" (blanks dropped first; other flags ignored); with flag s, only `.*`
ANY_TEXT = ("(.|\\n)*", "(\\n|.)*", "(?s:.*)", "(?:.|\\n)*", "(?:\\n|.)*", "[\\s\\S]*")
_LITERAL_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "v": "\v", "0": "\0"}


def unwrap(node: Node) -> Node:
    while node.kind == "seq" and len(node.children) == 1:
        node = node.children[0]
    return node


def items(node: Node) -> list:
    return list(node.children) if node.kind == "seq" else [node]


class LazyRules:
    """The lazy-rule part of the Lark lowering (`lark_grammar._Lowering` inherits it): uses its
    `defs`, `names`, `ctx`, `skip`, `in_stop`, `compile`, `special_ids`, `regex`, `substring`."""

    # ---- lazy rules -----------------------------------------------------------------------------

    def is_any_text(self, node: Node, visiting: frozenset = frozenset()) -> bool:
        if node.kind == "seq" and len(node.children) == 1:
            return self.is_any_text(node.children[0], visiting)
        if node.kind == "regex":
            pattern = "".join(c for c in node.text if c not in " \t\r")
            return pattern == ".*" if "s" in node.flags else pattern in ANY_TEXT
        if node.kind == "name" and node.text in self.defs and node.text not in visiting:
            return self.is_any_text(self.defs[node.text].body, visiting | {node.text})
        return False

    def lazy_dispatch(self, d: Definition):
        """The trigger of a lazy rule read as a dispatch: ("string", text) or ("token", ids)."""
        stop = d.attr("stop") or d.attr("suffix")
        if stop is not None:
            plain = stop.kind == "string" and not stop.flags
            return ("string", stop.text) if plain and self.is_any_text(d.body) else None
        if not d.attr("lazy") or d.body.kind != "seq" or len(d.body.children) != 2:
            return None
        head, trigger = d.body.children
        if not self.is_any_text(head):
            return None
        if trigger.kind == "string" and trigger.text and not trigger.flags:
            return "string", trigger.text
        if trigger.kind == "special":
            ids, exclude = self.special_ids(trigger)
            if exclude:
                raise self.fail("lazy special-token trigger cannot be negated", trigger)
            return "token", ids
        return None

    def regex_trigger(self, d: Definition):
        """`/(.|\\n)*LITERAL/` (or another any-text prefix): ("string", LITERAL), else None."""
        body = unwrap(d.body)
        if not d.attr("lazy") or "stop" in d.attrs or "suffix" in d.attrs or body.kind != "regex" or "i" in body.flags:
            return None
        prefixes = (".*",) if "s" in body.flags else ANY_TEXT
        for prefix in prefixes:
            if len(body.text) > len(prefix) and body.text.startswith(prefix):
                literal = fixed_literal(body.text[len(prefix):])
                if literal:
                    return "string", literal
        return None

    def dispatch(self, trigger, loop: bool, rule: str) -> Expr:
        if trigger[0] == "string":
            return TagDispatch(((trigger[1].encode("utf-8"), rule),), loop=loop)
        return token_dispatch_expr([(t, rule) for t in trigger[1]], loop, [])

    def lazy_body(self, d: Definition, prefix: Optional[Expr] = None) -> tuple[Expr, tuple]:
        """The body of a lazy rule (after `prefix`) and the options it adds: a dispatch, or the
        body (then the stop) read as a terminal, with option `lazy` (lowered by lazy.py)."""
        if self.regex_trigger(d) is not None:
            raise self.fail("lazy regex suffix is only supported on a head used by dynamic dispatch", d)
        trigger = self.lazy_dispatch(d)
        if trigger is not None:
            if self.ctx.lazy_end is None:
                self.ctx.lazy_end = self.ctx.define(self.ctx.fresh("lark_lazy_end"), EPSILON).name
            body = self.skipped(self.dispatch(trigger, False, self.ctx.lazy_end))
            return (body if prefix is None else Sequence((prefix, body))), ()
        stop = d.attr("stop") or d.attr("suffix")
        self.in_stop = stop is not None
        try:
            parts = [prefix] if prefix is not None else []
            parts += [self.compile(d.body, True)] + ([self.compile(stop, True)] if stop is not None else [])
        finally:
            self.in_stop = False
        return (parts[0] if len(parts) == 1 else Sequence(tuple(parts))), (("lazy", True),)

    def marker_options(self, d: Definition, name: str) -> tuple:
        """The marker options of a stop/suffix rule (xgrammar's names and order): the hidden
        bytes (the marker's length when it is a plain string, else 1), the helper rules for
        its body and its marker (xg2ref/rule_options.py splits spans with them), stop_capture."""
        stop = d.attr("stop") if "stop" in d.attrs else d.attr("suffix")
        if stop is None:
            return ()
        plain = stop.kind == "string" and not stop.flags
        self.in_stop = True
        try:
            body = self.ctx.define(self.ctx.fresh(f"{name}_stop_body"), self.compile(d.body, True)).name
            marker = self.ctx.define(self.ctx.fresh(f"{name}_stop_marker"), self.compile(stop, True)).name
        finally:
            self.in_stop = False
        return _marker_options(d, len(stop.text.encode("utf-8")) if plain else 1, body, marker)

    def check_stop_part(self, node: Node) -> None:
        """The regexes of a terminal read into a stop/suffix rule have no flag i, no %regex."""
        stack = [node]
        while stack:
            n = stack.pop()
            if n.kind == "regex":
                self.regex(n)
            elif n.kind == "regex_ext":
                self.substring(n)
            elif n.kind == "name" and n.text in self.defs:
                stack.append(self.defs[n.text].body)
            stack.extend(n.children)

    def dynamic_start(self, start: Definition) -> Optional[Expr]:
        """`start: (t1 | ...)* tail` as a TagDispatch loop (module docstring), else None."""
        elements = items(start.body)
        loop = unwrap(elements[0]) if len(elements) == 2 else None
        if loop is None or loop.kind != "repeat" or (loop.lo, loop.hi) != (0, -1):
            return None
        body = unwrap(loop.children[0])
        tools = [unwrap(a) for a in body.children] if body.kind == "choice" else [body]
        tail = unwrap(elements[1])
        if any(t.kind != "name" for t in tools) or tail.kind != "name" or tail.text not in self.defs:
            return None
        if not self.is_any_text(self.defs[tail.text].body):
            return None
        consumed, found = {tail.text}, []
        for tool in (self.defs.get(t.text) for t in tools):
            if tool is None or tool.is_terminal or not items(tool.body):
                return None
            consumed.add(tool.name)
            parts, trigger, marked = items(tool.body), None, None
            head = unwrap(parts[0])
            if head.kind == "name" and head.text in self.defs:
                trigger = self.regex_trigger(self.defs[head.text]) or self.lazy_dispatch(self.defs[head.text])
                consumed |= {head.text} if trigger else set()
                if trigger and {"stop", "suffix"} & self.defs[head.text].attrs.keys():
                    marked = self.defs[head.text]
            rest = 1
            token = unwrap(parts[1]) if len(parts) >= 2 else None
            if trigger is None and token is not None and token.kind == "special" and self.is_any_text(parts[0]):
                ids, exclude = self.special_ids(token)
                if exclude:
                    raise self.fail("dynamic special-token trigger cannot be negated", token)
                trigger, rest = ("token", ids), 2
            if trigger is None:
                return None
            found.append((trigger, Node("seq", tool.line, tool.col, children=parts[rest:]), marked))
        if len({t[0] for t, _, _ in found}) > 1:
            raise self.fail("a dynamic Lark start rule cannot mix string and token triggers", start)
        self.consumed = consumed
        groups: dict = {}  # trigger string or token id -> (remainder, its head's marker rule), in first-seen order
        for (level, value), rest, marked in found:
            mark = self.trigger_marker(marked, value) if marked is not None else None
            for key in ([value] if level == "string" else value):
                groups.setdefault(key, []).append((rest, mark))
        tags = []
        for key, rests in groups.items():
            parts = [self.compile(r, False) if mark is None else Sequence((mark, self.compile(r, False)))
                     for r, mark in rests]
            name = self.ctx.fresh("lark_dynamic_body")
            self.ctx.define(name, parts[0] if len(parts) == 1 else Choice(tuple(parts)))
            tags.append((key, name))
        if found[0][0][0] == "string":
            return TagDispatch(tuple((k.encode("utf-8"), n) for k, n in tags), loop=True)
        return token_dispatch_expr(tags, True, [])


    def trigger_marker(self, head: Definition, trigger: str) -> Expr:
        """The mark of a stop/suffix head's trigger, read by the dispatch before the tool's rest:
        an empty rule whose marker is the trigger just read (xgrammar's shape: its marker options,
        itself as the body rule, `<head>_dynamic_marker_text` as the marker rule)."""
        name = self.ctx.fresh(f"{self.names[head.name]}_dynamic_marker")
        text = self.ctx.define(self.ctx.fresh(f"{name}_text"), ByteString(trigger.encode("utf-8"))).name
        return self.ctx.define(name, EPSILON, _marker_options(head, len(trigger.encode("utf-8")), name, text))


def _marker_options(d: Definition, hidden_bytes: int, body: str, marker: str) -> tuple:
    """The rule options of stop/suffix definition `d`'s marker, in xgrammar's order: the hidden
    bytes, the helper rules' names, then `stop_capture`."""
    key = "capture_hidden_stop_bytes" if "stop" in d.attrs else "capture_hidden_suffix_bytes"
    out = ((key, hidden_bytes),) + tuple(zip(MARKER_RULE_KEYS, (body, marker)))
    return out + ((("stop_capture", d.attr("stop_capture")),) if "stop_capture" in d.attrs else ())


def fixed_literal(pattern: str) -> Optional[str]:
    """The text a regex of plain characters and escapes matches, None for any other regex."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        i += 1
        if c != "\\":
            if c in ".^$*+?()[]{}|":
                return None
            out.append(c)
            continue
        if i == len(pattern):
            return None
        c = pattern[i]
        i += 1
        if c in _LITERAL_ESCAPES:
            out.append(_LITERAL_ESCAPES[c])
        elif c in "^$.*+?()[]{}|\\/-":
            out.append(c)
        elif c in "xu":
            braced = c == "u" and pattern[i:i + 1] == "{"
            end = pattern.find("}", i) if braced else i + (2 if c == "x" else 4)
            digits = pattern[i + braced:end]
            size_ok = 0 < len(digits) <= 6 if braced else len(digits) == end - i
            if end < 0 or not size_ok or not all(h in "0123456789abcdefABCDEF" for h in digits):
                return None
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                return None
            out.append(chr(code))
            i = end + braced
        else:
            return None
    return "".join(out)
