"""XGrammar-2 §3.2, structural tags: the markup of each XML parameter style (xgrammar 0.2.8's
`json_schema` format with `style` other than "json").

`xml_parameters.py` turns a schema into parameters; this module says how one parameter, one array
item and one key are written. A value arrives as alternatives `(kind, expr)`, kind one of

    plain    free text that never holds the style's closing string (a TagDispatch rule)
    text     any other string written raw: a pattern, a length bound, an enum/const string
    json     a number, integer, boolean or null, or a non-string enum/const value, as JSON
    object   an object (JSON, or the style's own markup in the recursive styles)
    array    an array (likewise)

and `pad(e)` is `ws e ws` (ws: JSON whitespace, at most `max_whitespace_cnt` in a row). The
styles, with N the parameter's name and B the value's body (`plain` alternatives as they are,
the others padded):

    qwen_xml            <parameter=N>B</parameter>
    minimax_xml         <parameter name="N">B</parameter>
    glm_xml             <arg_key>N</arg_key> ws <arg_value>B</arg_value>
    kimi_k3_xml         <|open|>argument key="N" type="T"<|sep|>B<|close|>argument<|sep|>
                        T: the schema's one JSON type when it has one (a `type` string, or
                        enum/const values of one kind; integer is "number"), else any of
                        string|number|integer|boolean|object|array|null; " and & escaped in N
    deepseek_xml        <｜DSML｜parameter name="N" string="true">S</｜DSML｜parameter>
                      | <｜DSML｜parameter name="N" string="false">pad(J)</｜DSML｜parameter>
                        S: the plain/text alternatives unpadded, J: the others
    deepseek_v4_1_xml   the same with "｜DSML｜ parameter" (a space before "parameter")
    cohere_xml          <cofl:value name="N" type="K">B_K</cofl:value>  per kind: raw (plain,
                        unpadded | text, padded), json, dict, list (padded); & < > " escaped
                        in N. Objects are dicts of such values, arrays are lists of unnamed
                        items <cofl:value type="K">B_K</cofl:value> written back to back
                        (every prefix item, then the rest counted against min/maxItems)
    minimax_m3_xml      M<N>V M</N>  (M = "]<]minimax[>[", no space), V unpadded; objects are
                        such parameters, arrays are items M<item>V M</item> with ws between

In every style but cohere_xml, a key the schema does not name is `[a-zA-Z_][a-zA-Z0-9_]*`;
cohere_xml takes `([^\\0"&<>] | &amp; | &lt; | &gt; | &quot;)+` minus the declared names.

What it leaves out: markup of styles xgrammar 0.2.8 does not define.
"""

from __future__ import annotations

from typing import Optional

from ...grammar.ir import EPSILON, ByteString, CharClass, Expr, Repeat
from ..json_schema.lexical import NOTHING, choice, seq
from ..json_schema.values import json_kind

KIMI_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")
IDENT_FIRST = ((0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
IDENT_REST = ((0x30, 0x39),) + IDENT_FIRST


def _b(text: str) -> ByteString:
    return ByteString(text.encode("utf-8"))


def _escape(name: str, table: dict) -> str:
    return "".join(table.get(c, c) for c in name)


class Style:
    """One XML style. `close` is the string free-text values may not hold; `recursive` styles
    write nested objects and arrays in their own markup; `fixed_names` styles take no keys
    beyond the declared ones; `ws_empty`: an object without parameters may be whitespace;
    `object_literals`: an object enum/const value at the top level is written as parameters
    (else as compact JSON)."""

    close = ""
    recursive = False
    fixed_names = False
    ws_empty = True
    object_literals = True
    takes_excludes = True
    escapes: dict = {}

    def name(self, name: str) -> Expr:
        return _b(_escape(name, self.escapes))

    def body(self, x, alts) -> Expr:
        return choice(*(e if kind == "plain" else x.pad(e) for kind, e in alts))

    def param(self, x, name: Expr, schema, alts) -> Expr:
        raise NotImplementedError


class Wrapped(Style):
    """open N mid B close: qwen_xml, minimax_xml, glm_xml."""

    def __init__(self, open_: str, mid: str, close: str, ws_after_mid: bool = False, mid2: str = ""):
        self.open, self.mid, self.close, self.ws_after_mid, self.mid2 = open_, mid, close, ws_after_mid, mid2

    def param(self, x, name, schema, alts):
        gap = seq(x.ws, _b(self.mid2)) if self.ws_after_mid else EPSILON
        return seq(_b(self.open), name, _b(self.mid), gap, self.body(x, alts), _b(self.close))


class Kimi(Style):
    close = "<|close|>argument<|sep|>"
    escapes = {"&": "&amp;", '"': "&quot;"}

    def param(self, x, name, schema, alts):
        return seq(_b('<|open|>argument key="'), name, _b('" type="'), kimi_type(schema), _b('"<|sep|>'),
                   self.body(x, alts), _b(self.close))


def kimi_type(schema) -> Expr:
    """The type attribute: one name when the schema pins one JSON type, else any of seven."""
    one: Optional[str] = None
    if isinstance(schema, dict):
        if "enum" in schema or "const" in schema:
            values = schema["enum"] if "enum" in schema else [schema["const"]]
            kinds = {json_kind(v) for v in values} if isinstance(values, list) else set()
            one = kinds.pop() if len(kinds) == 1 else None
        elif isinstance(schema.get("type"), str) and schema["type"] in KIMI_TYPES:
            one = "number" if schema["type"] == "integer" else schema["type"]
    return _b(one) if one else choice(*(_b(t) for t in KIMI_TYPES))


class DeepSeek(Style):
    def __init__(self, tag: str):
        self.open, self.close = f'<{tag}parameter name="', f"</{tag}parameter>"

    def param(self, x, name, schema, alts):
        raw = choice(*(e for kind, e in alts if kind in ("plain", "text")))
        other = choice(*(e for kind, e in alts if kind not in ("plain", "text")))
        parts = []
        if raw != NOTHING:
            parts.append(seq(_b('" string="true">'), raw, _b(self.close)))
        if other != NOTHING:
            parts.append(seq(_b('" string="false">'), x.pad(other), _b(self.close)))
        return seq(_b(self.open), name, choice(*parts))


class Cohere(Style):
    close = "</cofl:value>"
    recursive = True
    object_literals = False
    takes_excludes = False
    escapes = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}
    KINDS = {"plain": "raw", "text": "raw", "json": "json", "object": "dict", "array": "list"}

    def typed(self, x, alts) -> Expr:
        """` type="K">B</cofl:value>` for each alternative."""
        return choice(*(seq(_b(f' type="{self.KINDS[kind]}">'), e if kind == "plain" else x.pad(e), _b(self.close))
                        for kind, e in alts))

    def param(self, x, name, schema, alts):
        return seq(_b('<cofl:value name="'), name, _b('"'), self.typed(x, alts))

    def array(self, x, prefix: list, rest: list, lo: int, hi: Optional[int]) -> Expr:
        items = [seq(_b("<cofl:value"), self.typed(x, alts)) for alts in prefix]
        n = len(items)
        if hi is not None and hi < n:
            return NOTHING
        more = seq(_b("<cofl:value"), self.typed(x, rest)) if rest else NOTHING
        low, high = max(lo - n, 0), None if hi is None else hi - n
        if more == NOTHING:
            return seq(*items) if low == 0 else NOTHING
        return seq(*items, Repeat(more, low, high))

    def key(self, x, declared: list) -> Expr:
        """A cohere key (escaped units, one or more) spelling none of the declared names."""
        ents = ["&amp;", "&lt;", "&gt;", "&quot;"]
        raw = [(1, 0x21), (0x23, 0x25), (0x27, 0x3B), (0x3D, 0x3D), (0x3F, 0x10FFFF)]
        unit = choice(CharClass(tuple(raw)), *(_b(e) for e in ents))
        anything = Repeat(x.rule(("cohere_unit",), "cohere_key_unit", lambda: unit), 0, None)
        names = [_units(self.name(n).value.decode("utf-8")) for n in declared]

        def node(prefix: tuple) -> Expr:
            nxt = sorted({u[len(prefix)] for u in names if len(u) > len(prefix) and u[:len(prefix)] == prefix})
            parts = [] if not prefix or prefix in names else [EPSILON]
            chars = [(ord(u), ord(u)) for u in nxt if len(u) == 1]
            others = [r for r in _minus(raw, chars)]
            if others:
                parts.append(seq(CharClass(tuple(others)), anything))
            parts += [seq(_b(e), anything) for e in ents if e not in nxt]
            parts += [seq(_b(u), node(prefix + (u,))) for u in nxt]
            return choice(*parts)

        return node(())


def _units(text: str) -> tuple:
    out, i = [], 0
    while i < len(text):
        ent = next((e for e in ("&amp;", "&lt;", "&gt;", "&quot;") if text.startswith(e, i)), None)
        out.append(ent or text[i])
        i += len(ent) if ent else 1
    return tuple(out)


def _minus(ranges, removed) -> list:
    from ...grammar.charsets import subtract

    return subtract(list(ranges), removed)


class MiniMaxM3(Style):
    MARK = "]<]minimax[>["
    close = MARK
    recursive = True
    fixed_names = True
    ws_empty = False
    takes_excludes = False

    def param(self, x, name, schema, alts):
        tag = name.value.decode("utf-8")
        return seq(_b(f"{self.MARK}<{tag}>"), choice(*(e for _, e in alts)), _b(f"{self.MARK}</{tag}>"))

    def item(self, value: Expr) -> Expr:
        return seq(_b(f"{self.MARK}<item>"), value, _b(f"{self.MARK}</item>"))

    def array(self, x, prefix: list, rest: list, lo: int, hi: Optional[int]) -> Expr:
        """Items with ws before each and after the last; prefix items optional from the end
        (down to minItems); the empty array is ""."""
        elems = [self.item(choice(*(e for _, e in alts))) for alts in prefix]
        more = self.item(choice(*(e for _, e in rest))) if rest else NOTHING

        def tail(i: int, need: bool) -> Expr:
            """Items from i on; `need`: at least one more (the first of an array that may be empty)."""
            free = i >= lo and not need
            if hi is not None and i >= hi:
                return EPSILON if free else NOTHING
            if i < len(elems):
                step = seq(x.ws, elems[i], tail(i + 1, False))
                return choice(EPSILON, step) if free else step
            if more == NOTHING:
                return EPSILON if free else NOTHING
            return Repeat(seq(x.ws, more), max(lo - i, int(need)), None if hi is None else hi - i)

        body = seq(tail(0, lo == 0), x.ws)
        return choice(EPSILON, body) if lo == 0 else body

    def literal(self, value) -> Expr:
        """An enum/const value in the markup: objects and arrays as nested tags, no space."""
        if isinstance(value, dict):
            return seq(*(seq(_b(f"{self.MARK}<{k}>"), self.literal(v), _b(f"{self.MARK}</{k}>"))
                         for k, v in value.items()))
        if isinstance(value, list):
            return seq(*(self.item(self.literal(v)) for v in value))
        return _b(value if isinstance(value, str) else compact_json(value))


def _g17(x: float) -> str:
    text = format(x, ".17g")
    return "0" if text == "-0" else text


_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def compact_json(value) -> str:
    """A non-string enum/const value as xgrammar writes it: no spaces, keys in order, numbers
    as doubles (`%.17g`, integers beyond 64 bits too), strings raw but for the required
    escapes and \\u007f."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return str(value) if -2**63 <= value < 2**63 else _g17(float(value))
    if isinstance(value, float):
        return _g17(value)
    if isinstance(value, str):
        return '"' + "".join(_SHORT.get(c) or (f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else c)
                             for c in value) + '"'
    if isinstance(value, list):
        return "[" + ",".join(compact_json(v) for v in value) + "]"
    return "{" + ",".join(f"{compact_json(str(k))}:{compact_json(v)}" for k, v in value.items()) + "}"


STYLES: dict[str, Style] = {
    "qwen_xml": Wrapped("<parameter=", ">", "</parameter>"),
    "minimax_xml": Wrapped('<parameter name="', '">', "</parameter>"),
    "glm_xml": Wrapped("<arg_key>", "</arg_key>", "</arg_value>", ws_after_mid=True, mid2="<arg_value>"),
    "kimi_k3_xml": Kimi(),
    "deepseek_xml": DeepSeek("\uff5cDSML\uff5c"),
    "deepseek_v4_1_xml": DeepSeek("\uff5cDSML\uff5c "),
    "cohere_xml": Cohere(),
    "minimax_m3_xml": MiniMaxM3(),
}
