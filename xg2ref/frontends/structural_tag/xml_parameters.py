"""XGrammar-2 §3.2, structural tags: tool-call parameters in XML styles (the `json_schema`
format with `style` qwen_xml, minimax_xml, minimax_m3_xml, deepseek_xml, deepseek_v4_1_xml,
glm_xml, cohere_xml or kimi_k3_xml, in xgrammar 0.2.8's shapes).

The schema describes a tool's arguments. Its top-level object becomes a run of parameters in
the style's markup (`xml_styles.py`); each parameter's value is split into alternatives
by kind, and the style writes each kind its own way:

    top level            an object schema (also one with `properties`/`required` but no
                         `type`, and `true`/`{}`: any parameters) -> parameters; any other
                         schema -> its alternatives, unpadded
    parameters           ws P_0 ws P_1 ... ws     in `properties` order, required ones always,
                         optional ones maybe, then the additional ones (`additionalProperties`;
                         by default only when `properties` is absent); the empty object is ws
                         ("" in minimax_m3_xml). `any_order`: the declared ones in any order,
                         each at most once (exact, as for JSON). `required` names missing
                         from `properties` are required parameters of any value.
    value alternatives   true/{}               plain | number | boolean | null | array | object
                         $ref, allOf           the target / the merged schema (as for JSON)
                         anyOf, oneOf          the union of the branches' alternatives
                         enum, const           strings raw (text), the rest as compact JSON;
                                               an object at the top level: parameters, one
                                               per key in order, each value this literal
                                               (not in cohere_xml and minimax_m3_xml)
                         type string           plain, or with pattern/format/length: text
                         type object / array   JSON (depth 1), or the style's markup
                                               (top level, and every level of the recursive
                                               styles cohere_xml and minimax_m3_xml)
                         other types           JSON
    JSON values          xg2ref's JSON Schema converter (`xg2ref/frontends/json_schema/converter.py`), any whitespace,
                         strict mode; its rules are shared with the parameters'.
    raw strings          plain: free text without the style's closing string (and without
                         `excludes`), a TagDispatch rule; text: the pattern/format regex over
                         raw characters (pattern searched, as the standard says), length
                         bounds counting code points, or `[^]{min,max}`
    arrays               an array whose `items` is absent takes no items beyond its
                         `prefixItems` (so `{"type": "array"}` is only the empty array)

`excludes` (not in cohere_xml and minimax_m3_xml; none may start or end with whitespace):
plain strings never hold them (a string with them and only length bounds drops the bounds),
enum/const values with one in a string are dropped (a raw string as it is, a JSON value's
strings as written), and so are declared parameters whose name holds one; additional names
avoid them; JSON-valued parameters are filtered as `excludes.py` says.

`patternProperties`: after the declared parameters (in the tail with the additional ones), a
parameter whose name a pattern finds (JSON Schema's search, `^`/`$` anchors as written; where
patterns overlap, one member per region, objects.py `_pattern_regions`) takes that pattern's
schema, and a declared name a pattern finds answers to both; such a name holds no exclude, no
declared name and none of `"&<>` or a control character (the styles escape or end names with
them). An additional name then matches no pattern, and with patterns, as with `properties`, no
additional parameter is allowed unless `additionalProperties` says so (xgrammar's default).

What it leaves out: `propertyNames` (an error); the departures of xgrammar
0.2.8 from JSON Schema that xg2ref does not copy (loose `any_order`, `allOf` read as any
value, `pattern` with length bounds ignoring the bounds, `required` names outside
`properties` ignored, unknown `format`s as any text).
"""

from __future__ import annotations

import json
from typing import Any

from ...exceptions import InvalidJSONError
from ...intrinsics.tag_dispatch import TagDispatch
from ...grammar.ir import EPSILON, ByteString, CharClass, Expr, GrammarIR, Repeat, Rule, Sequence
from ..json_schema.lexical import NOTHING, choice, seq
from .excludes import FilteringConverter, avoiding, literal_holds
from ..json_schema.keywords import ANNOTATIONS, TYPES, constrains, count
from ..json_schema.members import members_in_any_order
from ..json_schema.formats import format_regexes
from ..json_schema.strings import string_regexes
from .xml_styles import IDENT_FIRST, IDENT_REST, STYLES, Style, compact_json
from ...grammar.regular import (LARGE_CLASS_RANGES, TooLarge, automaton, bounded_length, complement_automaton,
                                intersection_automaton)
from ..json_schema.objects import _member_schema, _pattern_regions, pattern_searches

ANY_CHAR = CharClass((), negated=True)
OBJECT_KEYWORDS = ("properties", "required", "additionalProperties")
SPACE = " \t\n\r"


class XmlSchemaConverter:
    """One conversion: the JSON converter (whose rule table holds every rule) and the style."""

    def __init__(self, schema: Any, style: str, *, any_order: bool = False, max_whitespace_cnt=None,
                 excludes=()):
        if style not in STYLES:
            raise InvalidJSONError(f"style {style!r} is not an XML style ({', '.join(STYLES)})")
        self.style: Style = STYLES[style]
        self.style_name = style
        self.excludes = list(dict.fromkeys(excludes))
        problem = excludes_problem(style, self.excludes)
        if problem:
            raise InvalidJSONError(f"excludes: {problem}")
        if isinstance(schema, (str, bytes)):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError as err:
                raise InvalidJSONError(f"$: the schema is not valid JSON: {err}") from None
        self.conv = FilteringConverter(schema, any_whitespace=True, max_whitespace_cnt=max_whitespace_cnt,
                                       any_order=any_order)
        self.conv.words = self.excludes
        self.ws = self.conv.layout.ws
        self.active: set = set()

    def convert(self) -> GrammarIR:
        body = self.top(self.conv.root, "$")
        rules = [Rule("root", body)] + [Rule(n, e, None, self.conv.options.get(n, ()))
                                        for n, e in self.conv.rules.items()]
        return GrammarIR(tuple(rules), root="root")

    # ---- helpers ----------------------------------------------------------------------------

    def rule(self, key: tuple, hint: str, build) -> Expr:
        return self.conv.rule(("xml",) + key, hint, build)

    def pad(self, expr: Expr) -> Expr:
        return seq(self.ws, expr, self.ws)

    def plain(self) -> Expr:
        """Free text without the closing string or an exclude."""
        stops = tuple(e.encode("utf-8") for e in dict.fromkeys(self.excludes + [self.style.close]))
        return self.rule(("plain",), "xml_string", lambda: TagDispatch((), False, stops))

    def excluded(self, text: str) -> bool:
        return any(e in text for e in self.excludes)

    # ---- top level and objects --------------------------------------------------------------

    def top(self, schema: Any, path: str) -> Expr:
        if schema is True or (isinstance(schema, dict) and not constrains(schema)):
            self.check_constrained(path)
            return self.parameters({"type": "object"}, path)
        if isinstance(schema, dict) and "type" not in schema and any(k in schema for k in OBJECT_KEYWORDS) \
                and not any(k in schema for k in ("$ref", "allOf", "anyOf", "oneOf", "enum", "const")):
            schema = dict(schema, type="object")
        return choice(*(e for _, e in self.alternatives(schema, path, top=True)))

    def check_constrained(self, path: str) -> None:
        if self.style.fixed_names:
            raise InvalidJSONError(f"{path}: {self.style_name} does not support unconstrained schemas")

    def parameters(self, schema: dict, path: str) -> Expr:
        """The object's parameters (one rule per distinct object schema, so recursion ends)."""
        key = ("object", json.dumps(schema, sort_keys=True, default=str))
        return self.rule(key, "xml_object", lambda: self.fresh(self.build_parameters, schema, path))

    def fresh(self, build, *args) -> Expr:
        """`build(*args)` inside a rule of its own: a $ref met again below it is no cycle."""
        saved, self.active = self.active, set()
        try:
            return build(*args)
        finally:
            self.active = saved

    def build_parameters(self, schema: dict, path: str) -> Expr:
        props = schema.get("properties") or {}
        required = schema.get("required") or []
        if not isinstance(props, dict):
            raise InvalidJSONError(f"{path}.properties: must be an object")
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise InvalidJSONError(f"{path}.required: must be a list of strings")
        if schema.get("propertyNames"):
            raise InvalidJSONError(f"{path}.propertyNames: not supported with style {self.style_name}")
        patterns = schema.get("patternProperties") or {}
        if not isinstance(patterns, dict):
            raise InvalidJSONError(f"{path}.patternProperties: must be an object")
        additional = schema.get("additionalProperties")
        if self.style.fixed_names:
            for key, value in (("patternProperties", patterns), ("additionalProperties", additional)):
                if value not in (None, False, {}):
                    raise InvalidJSONError(f"{path}.{key}: {self.style_name} needs fixed parameter names")
            additional = False
        elif additional is None:  # (as xgrammar: none when the schema declares names or patterns)
            additional = "properties" not in schema and not patterns
        searches = pattern_searches(patterns, path)
        declared = [(n, s, n in required) for n, s in props.items()]
        declared += [(n, True, True) for n in dict.fromkeys(required) if n not in props]
        if patterns:  # a declared name a pattern matches answers to both schemas
            runnable = [automaton(x) for x in searches]
            declared = [(n, _member_schema(self.conv, n, s if n in props else None, patterns, runnable, schema, path), r)
                        for n, s, r in declared]
        members = [NOTHING if self.excluded(n) else self.member(self.style.name(n), s, f"{path}.properties.{n}")
                   for n, s, _ in declared]
        extras = [self.pattern_member(pattern, [searches[i] for i in inside], [searches[j] for j in outside],
                                      [n for n, _, _ in declared], sub, f"{path}.patternProperties.{pattern}")
                  for pattern, inside, outside, sub in _pattern_regions(self.conv, list(patterns.items()), searches, path)]
        if additional is not False:
            name = (self.names_in([self.identifiers(path), complement_automaton(searches)], path) if searches
                    else self.extra_name([n for n, _, _ in declared]))  # (an additional name matches no pattern)
            extras.append(self.member(name, additional, f"{path}.additionalProperties"))
        extra = choice(*extras)
        lead = [seq(self.ws, m) for m in members]
        serial = next(self.conv.serial)

        def tail(first: bool) -> Expr:
            if extra == NOTHING:
                return NOTHING if first else EPSILON
            more = Repeat(seq(self.ws, extra), 0, None)
            return seq(self.ws, extra, more) if first else more

        if self.conv.any_order and len(declared) > 1:
            body = members_in_any_order(self.conv, serial, lead, [r for _, _, r in declared], EPSILON, tail)
        else:
            def rest(i: int, first: bool) -> Expr:
                """Members i.. (non-empty when `first`: nothing written yet)."""
                def build():
                    if i == len(lead):
                        return tail(first)
                    with_m = seq(lead[i], rest(i + 1, False))
                    return with_m if declared[i][2] else choice(with_m, rest(i + 1, first))
                return self.rule(("members", serial, i, first), f"xml_obj{serial}_m{i}", build)
            body = rest(0, True)
        filled = seq(body, self.ws)
        empty = self.ws if self.style.ws_empty else EPSILON
        if schema.get("maxProperties") == 0:
            return NOTHING if any(r for _, _, r in declared) else empty
        if any(r for _, _, r in declared) or (schema.get("minProperties") or 0) >= 1:
            return filled
        return choice(empty, filled)

    def member(self, name: Expr, schema: Any, path: str) -> Expr:
        alts = self.alternatives(schema, path)
        return self.style.param(self, name, schema, alts) if alts else NOTHING

    # ---- patternProperties (JSON Schema's reading: a pattern is searched in the name) -----------

    def names_in(self, languages: list, path: str) -> Expr:
        """The parameter names in every language of `languages` (regex IR or automata), written
        raw, one rule per automaton state."""
        try:
            return bounded_length(languages, 0, None, lambda ranges: CharClass(tuple(ranges)), self.conv.new_rule,
                                  self.conv.set_rule)
        except TooLarge as err:
            raise InvalidJSONError(f"{path}.patternProperties: {err}") from None

    def identifiers(self, path: str):
        """`extra_name`'s language as an automaton: the identifiers that avoid the excludes."""
        if hasattr(self.style, "key"):
            raise InvalidJSONError(f"{path}.additionalProperties: {self.style_name} takes no additional "
                                   "parameters beside patternProperties")
        words = [_holding(w) for w in self.excludes]
        return automaton(IDENTIFIER_IR) if not words else intersection_automaton(
            [IDENTIFIER_IR, complement_automaton(words)])

    def pattern_member(self, pattern: str, inside: list, outside: list, declared: list, sub, path: str) -> Expr:
        """One region of the patterns (objects.py `_pattern_regions`): a parameter whose name
        every pattern of `inside` finds and none of `outside` does, that is no declared name,
        holds no exclude and none of the characters the styles escape or end a name with
        (`"&<>`, controls), and whose value meets `sub`."""
        avoided = outside + [ByteString(n.encode("utf-8", "surrogatepass")) for n in declared] + \
            [_holding(w) for w in self.excludes]
        name = self.names_in(inside + [Repeat(NAME_CHAR, 1, None)] + ([complement_automaton(avoided)] if avoided else []),
                             path)
        return self.member(name, sub, path)

    def extra_name(self, declared: list) -> Expr:
        if hasattr(self.style, "key"):
            return self.rule(("key", tuple(declared)), "xml_key", lambda: self.style.key(self, declared))
        return self.rule(("name",), "xml_variable_name",
                         lambda: avoiding(self.conv, self.excludes, IDENTIFIER, 0, {1}, "xml_name"))

    # ---- values -----------------------------------------------------------------------------

    def alternatives(self, schema: Any, path: str, top: bool = False) -> list:
        """(kind, expr) pairs whose union is the values valid under `schema`."""
        conv = self.conv
        if schema is True:
            return self.any_value(path)
        if schema is False:
            return []
        if not isinstance(schema, dict):
            raise InvalidJSONError(f"{path}: a schema must be an object or a boolean, got {type(schema).__name__}")
        if "$ref" in schema:
            ref = schema["$ref"]
            rest = {k: v for k, v in schema.items() if k != "$ref" and k not in ANNOTATIONS}
            if not isinstance(ref, str):
                raise InvalidJSONError(f"{path}.$ref: must be a string")
            if rest:
                return self.alternatives({"allOf": [{"$ref": ref}, rest]}, path, top)
            if ref in self.active:
                # Reached again with no object or array between: the least solution of the
                # equations adds nothing here (a union of the other branches is already it).
                return []
            self.active.add(ref)
            try:
                return self.alternatives(conv.resolve(ref, path, schema), ref, top)
            finally:
                self.active.discard(ref)
        if "allOf" in schema:
            if not isinstance(schema["allOf"], list):
                raise InvalidJSONError(f"{path}.allOf: must be a list")
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for i, part in enumerate(schema["allOf"]):
                merged = conv.merge(merged, conv.deref(part, f"{path}.allOf[{i}]"), f"{path}.allOf[{i}]")
            return self.alternatives(merged, path, top)
        for key in ("anyOf", "oneOf"):
            if key in schema:
                if not isinstance(schema[key], list):
                    raise InvalidJSONError(f"{path}.{key}: must be a list")
                rest = {k: v for k, v in schema.items() if k != key}
                out = []
                for i, b in enumerate(schema[key]):
                    sub = conv.merge(rest, conv.deref(b, f"{path}.{key}[{i}]"), f"{path}.{key}[{i}]") \
                        if constrains(rest) else b
                    out += self.alternatives(sub, f"{path}.{key}[{i}]", top)
                return out
        if "const" in schema or "enum" in schema:
            values = schema["enum"] if "enum" in schema else [schema["const"]]
            if not isinstance(values, list):
                raise InvalidJSONError(f"{path}.enum: must be a list")
            return [a for a in (self.literal(v, top) for v in values) if a is not None]
        types = schema.get("type")
        if types is None:
            if not constrains(schema):
                return self.any_value(path)
            types = list(TYPES)
        types = [types] if isinstance(types, str) else types
        if not isinstance(types, list) or any(t not in TYPES for t in types):
            raise InvalidJSONError(f"{path}.type: must be one of {', '.join(TYPES)} or a list of them, got {types!r}")
        if "integer" in types and "number" in types:
            types = [t for t in types if t != "integer"]
        out = []
        for t in types:
            if t == "string":
                out.append(self.string(schema, path))
            elif t == "object":
                obj = dict(schema, type="object")
                out.append(("object", self.parameters(obj, path) if top or self.style.recursive
                            else conv.visit(obj, 1, path)))
            elif t == "array":
                out.append(("array", self.array(dict(schema, type="array"), path)))
            else:
                out.append(("json", conv.visit(dict(schema, type=t), 1, path)))
        return [a for a in out if a[1] != NOTHING]

    def any_value(self, path: str) -> list:
        self.check_constrained(path)
        conv = self.conv
        scalars = [("json", conv.visit({"type": t}, 1, path)) for t in ("number", "boolean", "null")]
        if self.style.recursive:
            obj = self.parameters({"type": "object"}, path)
            arr = self.rule(("any_array",), "xml_any_array", lambda: self.style.array(self, [], self.any_value(path),
                                                                                      0, None))
        else:
            obj, arr = conv.visit({"type": "object"}, 1, path), conv.visit({"type": "array"}, 1, path)
        return [("plain", self.plain())] + scalars + [("array", arr), ("object", obj)]

    def literal(self, value: Any, top: bool = False):
        """An enum/const value: a string raw, anything else compact JSON (a top-level object:
        parameters); None when a string of it holds an exclude (raw at this level, as written
        inside JSON below)."""
        if top and isinstance(value, dict) and self.style.object_literals and not hasattr(self.style, "literal"):
            params = self.literal_parameters(value)
            return None if params == NOTHING else ("object", params)
        if self.excluded(value) if isinstance(value, str) else literal_holds(value, self.excludes, compact_json):
            return None
        if hasattr(self.style, "literal"):
            return ("text", self.style.literal(value))
        text = value if isinstance(value, str) else compact_json(value)
        return ("text" if isinstance(value, str) else "json", ByteString(text.encode("utf-8")))

    def literal_parameters(self, value: dict) -> Expr:
        """A top-level object literal as the style's parameters: each key in order, its value
        the literal (`ws P_0 ws P_1 ... ws`; the empty object is the empty parameter list)."""
        members = [self.member(self.style.name(k), {"const": v}, f"$.const.{k}") for k, v in value.items()]
        if NOTHING in members or any(self.excluded(k) for k in value):
            return NOTHING
        if not members:
            return self.ws if self.style.ws_empty else EPSILON
        return seq(*(seq(self.ws, m) for m in members), self.ws)

    def string(self, schema: dict, path: str) -> tuple:
        """A string value written raw: plain text, or text under its pattern/format/lengths."""
        lo = count(schema, "minLength", path, 0)
        hi = count(schema, "maxLength", path, None)
        checks = [("pattern", schema["pattern"])] if "pattern" in schema else []
        checks += [("format", r) for r in format_regexes(schema.get("format"))]
        if not checks and ((lo == 0 and hi is None) or self.excludes):
            return ("plain", self.plain())
        if self.style.fixed_names:
            raise InvalidJSONError(f"{path}: {self.style_name} supports no pattern, format or length on strings")
        if hi is not None and hi < lo:
            return ("text", NOTHING)
        exprs = string_regexes(checks, path)
        if exprs is None:
            return self.string({k: v for k, v in schema.items() if k != "pattern"}, path)
        if not exprs:
            return ("text", Repeat(ANY_CHAR, lo, hi))
        if len(exprs) == 1 and lo == 0 and hi is None and not isinstance(exprs[0], tuple):  # (a tuple: an automaton)
            return ("text", exprs[0])

        def encode(ranges) -> Expr:  # (a large class is one shared rule: regular.LARGE_CLASS_RANGES)
            if len(ranges) <= LARGE_CLASS_RANGES:
                return CharClass(tuple(ranges))
            return self.conv.rule(("raw class", tuple(map(tuple, ranges))), "xml_class", lambda: CharClass(tuple(ranges)))
        try:
            return ("text", bounded_length(exprs, lo, hi, encode, self.conv.new_rule, self.conv.set_rule))
        except TooLarge as err:
            raise InvalidJSONError(f"{path}: pattern/format with the length bounds: {err}") from None

    def array(self, schema: dict, path: str) -> Expr:
        """An array value; without `items`, no items beyond `prefixItems`."""
        if "items" not in schema:
            schema = dict(schema, items=False)
        if not self.style.recursive:
            return self.conv.visit(schema, 1, path)
        key = ("array", json.dumps(schema, sort_keys=True, default=str))
        return self.rule(key, "xml_array", lambda: self.fresh(self.build_array, schema, path))

    def build_array(self, schema: dict, path: str) -> Expr:
        prefix, items = schema.get("prefixItems") or [], schema["items"]
        if isinstance(items, list):
            prefix, items = items, schema.get("additionalItems", False)
        lo = count(schema, "minItems", path, 0)
        hi = count(schema, "maxItems", path, None)
        firsts = [self.alternatives(s, f"{path}.prefixItems[{i}]") for i, s in enumerate(prefix)]
        if any(not alts for alts in firsts):
            return NOTHING
        rest = self.alternatives(items, f"{path}.items")
        return self.style.array(self, firsts, rest, lo, hi)


# a name the schema does not declare: state -> [(code point ranges, next state)]
IDENTIFIER = {0: [(IDENT_FIRST, 1)], 1: [(IDENT_REST, 1)]}
IDENTIFIER_IR = Sequence((CharClass(IDENT_FIRST), Repeat(CharClass(IDENT_REST), 0, None)))
# what a name of a pattern member may hold: no control character and none of `"&<>`
NAME_CHAR = CharClass(((0x00, 0x1F), (0x22, 0x22), (0x26, 0x26), (0x3C, 0x3C), (0x3E, 0x3E)), negated=True)


def _holding(word: str) -> Expr:
    """The strings that hold `word` (regex IR)."""
    return Sequence((Repeat(ANY_CHAR, 0, None), ByteString(word.encode("utf-8")), Repeat(ANY_CHAR, 0, None)))


def excludes_problem(style: str, excludes: list):
    """Why `excludes` cannot go with style `style` (XML, or "json"), or None."""
    if style == "json":
        return "an exclude must be a non-empty string" if "" in excludes else None
    if excludes and not STYLES[style].takes_excludes:
        return f"not supported with style {style}"
    for e in excludes:
        if not e or e[0] in SPACE or e[-1] in SPACE:
            return f"an exclude of an XML style must be non-empty and not start or end with whitespace, got {e!r}"
    return None


def xml_schema_to_ir(schema: Any, style: str, *, any_order: bool = False, max_whitespace_cnt=None,
                     excludes=()) -> GrammarIR:
    """The grammar of a tool's arguments under `schema`, written in XML style `style`."""
    return XmlSchemaConverter(schema, style, any_order=any_order, max_whitespace_cnt=max_whitespace_cnt,
                              excludes=excludes).convert()
