"""JSON Schema to grammar IR: `Grammar.from_json_schema` / `compile_json_schema` (XGrammar-2 §2.1
front ends; xgrammar's `JSONSchemaConverter`).

A schema becomes rules whose language is the set of JSON texts that validate, written in the
layout the options ask for and in the canonical lexical forms of `lexical.py`. The
converter walks the schema once, top down, with the JSON path of each part for errors:

    true, {}                 any JSON value              false        nothing
    {"$ref": p}              the rule of the target (one rule per target and nesting level,
                             so recursive schemas give recursive rules)
    anyOf, oneOf             a choice over the branches
    allOf, or $ref / anyOf   one merged schema per clause of the disjunctive normal form
    / oneOf beside other     (`merge.py`); a $ref reaching itself with no object or
    keywords                 array between is the equations' least solution
    enum, const              the values' serializations
    type (one or a list)     a choice over the types; without `type`, every type, each under
                             the keywords that apply to it (the standard's reading)

Objects list their properties in schema order (required ones always, optional ones maybe), then
the additional members `additionalProperties`/`patternProperties` allow; with `any_order` the
declared properties come in any order, the others anywhere between them. Arrays: `prefixItems`
(or a list `items`), then `items`, counted against `minItems`/`maxItems`; `unevaluatedItems` /
`unevaluatedProperties` take the place of `items` / `additionalProperties` where that is exact
(`json_merge.fold_unevaluated`). Strings: `minLength`/`maxLength` count code points, `pattern`
is searched (not anchored unless it says `^`/`$`), `format` is one of the formats of
`formats.py` and constrains strings only. Numbers and integers: the bounds, exclusive or
not (draft-4 booleans too).

Options (xgrammar's): `any_whitespace` (JSON whitespace between tokens, at most
`max_whitespace_cnt` of it), else the fixed layout of `json.dumps(indent=, separators=)`;
`strict_mode` (objects and arrays take no members beyond those the schema names unless it
allows them); `any_order`. What the converter does not enforce is listed in
specs/05-front-ends.md ("JSON Schema", "Not enforced").
"""

from __future__ import annotations

import json
import itertools
import math
import re
from decimal import Decimal
from typing import Any, Optional

from ...config import check_json_depth, get_json_schema_approximate, get_json_schema_exact_formats
from ...exceptions import GrammarLimitError, InvalidJSONError, JSONSchemaNotExactError
from ...grammar.ir import EPSILON, ByteString, CharClass, Expr, GrammarIR, Repeat, Rule, RuleRef, walk
from .lexical import NOTHING, choice, integer_range, json_string_literal, number_range, seq
from .keywords import ANNOTATIONS, FRACTIONAL, NOT_MULTIPLE_OF, TYPES, bounds, constrains, count, decimal_parts, number
from .negation import fractional_numbers, non_multiples, product_rule
from .members import members_in_any_order
from .references import References
from .arrays import bracketed, counted_items, unique_items
from .merge import APPLICATORS, Clauses, deref, fold_unevaluated, merge, merge_below
from .strings import string_content, string_expr
from .values import value_meets
from ...grammar.regular import TooLarge, decimal_multiple_numerals, divisible_numerals

WHITESPACE = CharClass(((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)))
# nesting levels that get their own indentation (deeper levels reuse the last one)
MAX_INDENT_LEVELS = 16


class Layout:
    """Where whitespace goes: `any_whitespace`, or json.dumps's fixed layout."""

    def __init__(self, any_whitespace: bool, indent: Optional[int], separators, max_whitespace_cnt: Optional[int]):
        if indent is not None and (not isinstance(indent, int) or isinstance(indent, bool) or indent < 0):
            raise InvalidJSONError(f"indent must be a non-negative integer or None, got {indent!r}")
        if max_whitespace_cnt is not None and (not isinstance(max_whitespace_cnt, int) or max_whitespace_cnt < 0):
            raise InvalidJSONError(f"max_whitespace_cnt must be a non-negative integer or None, got "
                                   f"{max_whitespace_cnt!r}")
        self.any = any_whitespace
        self.indent = indent
        if separators is None:
            separators = (",", ": ") if indent is not None else (", ", ": ")
        if len(separators) != 2 or not all(isinstance(s, str) for s in separators):
            raise InvalidJSONError(f"separators must be a pair of strings, got {separators!r}")
        self.item, self.key = separators
        self.ws = Repeat(WHITESPACE, 0, max_whitespace_cnt)
        self.by_level = indent is not None and not any_whitespace

    def _lit(self, text: str) -> Expr:
        return ByteString(text.encode()) if text else EPSILON

    def open(self, level: int) -> Expr:
        if self.any:
            return self.ws
        return self._lit("\n" + " " * (self.indent * (level + 1)) if self.by_level else "")

    def item_sep(self, level: int) -> Expr:
        if self.any:
            return seq(self.ws, ByteString(b","), self.ws)
        return self._lit(self.item + ("\n" + " " * (self.indent * (level + 1)) if self.by_level else ""))

    def close(self, level: int) -> Expr:
        if self.any:
            return self.ws
        return self._lit("\n" + " " * (self.indent * level) if self.by_level else "")

    def key_sep(self) -> Expr:
        return seq(self.ws, ByteString(b":"), self.ws) if self.any else self._lit(self.key)

    def empty(self) -> Expr:
        return self.ws if self.any else EPSILON


# An array's item expression appears twice in the array's (first item, then each later one); one
# with more nodes than this becomes a rule of its own, so nested arrays grow linearly.
SHARED_ITEM_NODES = 24


class SchemaConverter:
    """One conversion: the rules built so far, memoized by (what, nesting level)."""

    def __init__(self, schema: Any, *, any_whitespace: bool = True, indent: Optional[int] = None,
                 separators=None, strict_mode: bool = True, max_whitespace_cnt: Optional[int] = None,
                 any_order: bool = False, approximate: Optional[bool] = None,
                 exact_formats: Optional[bool] = None):
        self.root = schema
        self.approximate = get_json_schema_approximate(approximate)
        self.exact_formats = get_json_schema_exact_formats(exact_formats)  # (formats.py)
        self.layout = Layout(any_whitespace, indent, separators, max_whitespace_cnt)
        self.strict = strict_mode
        self.any_order = any_order
        self.rules: dict[str, Expr] = {}
        self.options: dict[str, tuple] = {}  # rule options by rule name (any_order's unordered objects)
        self.next_suffix: dict[str, int] = {}  # base name -> the next suffix to try
        self.memo: dict[tuple, str] = {}
        self.serial = itertools.count()  # numbers the objects of this conversion (rule names)
        self.clauses = Clauses(self)  # allOf and combinators beside other keywords (merge.py)
        self.ref_alone = reads_ref_alone(schema)
        self.refs = References(schema, self.ref_alone)
        # (JSON path, keyword, how) of every keyword read as a superset of its language (negation.py)
        self.approximations: list[tuple] = []
        self.oneof_as_anyof: set = set()  # id() of the `oneOf` lists read as anyOf (among the above)
        self.witness_objects = 0  # objects the witnesses of complements copied so far (objects.py's budget)

    # ---- rules --------------------------------------------------------------------------

    def level(self, level: int) -> int:
        return min(level, MAX_INDENT_LEVELS) if self.layout.by_level else 0

    def rule(self, key: tuple, hint: str, build) -> Expr:
        """The rule for `key`, built once by `build()` (a reference is handed out first, so
        recursion ends at the rule)."""
        name = self.memo.get(key)
        if name is None:
            name = self.memo[key] = self.new_rule(hint)
            self.rules[name] = build()
        return RuleRef(name)

    def new_rule(self, hint: str) -> str:
        """A fresh rule name (its body set later with `set_rule`)."""
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint)[:60] or "r"
        name = base
        if name in self.rules:  # base, base_2, base_3, ... (the next suffix is remembered)
            k = self.next_suffix.get(base, 2)
            while f"{base}_{k}" in self.rules:
                k += 1
            name, self.next_suffix[base] = f"{base}_{k}", k + 1
        self.rules[name] = NOTHING
        return name

    def set_rule(self, name: str, body: Expr) -> None:
        self.rules[name] = body

    # A keyword met that the grammar cannot enforce is an approximation (path, keyword, how); the
    # conversion refuses the schema unless the caller opted into the superset (xg2ref/config.py):
    #
    #     approximations = []                       |-  the grammar, exact
    #     approximations != [], approximate         |-  the grammar, a superset (they are listed)
    #     approximations != [], not approximate     |-  JSONSchemaNotExactError naming them
    def convert(self) -> GrammarIR:
        body = self.visit(self.root, 0, "$")
        self.approximations = list(dict.fromkeys(self.approximations))
        if self.approximations and not self.approximate:
            raise JSONSchemaNotExactError(self.approximations)
        rules = [Rule("root", body)] + [Rule(n, e, None, self.options.get(n, ())) for n, e in self.rules.items()]
        return GrammarIR(tuple(rules), root="root")

    # ---- schemas ------------------------------------------------------------------------

    def visit(self, schema: Any, level: int, path: str) -> Expr:
        if schema is True:
            return self.any_value(level)
        if schema is False:
            return NOTHING
        if not isinstance(schema, dict):
            raise InvalidJSONError(f"{path}: a schema must be an object or a boolean, got {type(schema).__name__}")
        if self.ref_alone and "$ref" in schema and len(schema) > 1:
            schema = {"$ref": schema["$ref"]}  # drafts up to 7: the keywords beside a $ref are ignored
        combinators = [k for k in APPLICATORS if k in schema]
        if not combinators:
            return self.visit_plain(schema, level, path)
        alone = not any(k not in ANNOTATIONS and k not in APPLICATORS for k in schema) and len(combinators) == 1
        if alone and combinators[0] == "$ref":  # one rule per target and level (recursion ends there)
            ref = schema["$ref"]
            if not isinstance(ref, str):
                raise InvalidJSONError(f"{path}.$ref: must be a string")
            target = self.resolve(ref, path, schema)
            return self.rule(("ref", id(target), self.level(level)), "ref_" + ref.rsplit("/", 1)[-1],
                             lambda: self.visit(target, level, ref))
        if alone and combinators[0] in ("anyOf", "oneOf"):  # a choice (a grammar's union)
            key = combinators[0]
            if not isinstance(schema[key], list):
                raise InvalidJSONError(f"{path}.{key}: must be a list")
            branches = schema[key] if key == "anyOf" else self.clauses.exactly_one(schema[key], path)
            return choice(*(self.visit(b, level, f"{path}.{key}[{i}]") for i, b in enumerate(branches)))
        # allOf, or a combinator beside other keywords: one merged schema per clause (merge.py)
        clauses, via_ref = self.clauses.expand(schema, path)
        alternatives = []  # (loops, not generators: each nesting level of a schema costs fewer frames)
        for clause in clauses:
            alternatives.append(self.visit_clause(clause, level, path, via_ref))
        return choice(*alternatives)

    def visit_clause(self, clause: tuple, level: int, path: str, as_rule: bool) -> Expr:
        """The merged schema of one clause; as a rule per (set of atoms, level) when `$ref`s
        were followed to find it, so that definitions reaching each other end at its rule (the
        same atoms met again in another order take that rule, with its order of members)."""
        if not clause:
            return self.any_value(level)
        key = ("clause", frozenset(clause), self.level(level))
        if as_rule and key in self.memo:
            return RuleRef(self.memo[key])
        name = None
        if as_rule:
            name = self.memo[key] = self.new_rule("all")  # named before it is built: recursion ends here
        merged = self.clauses.merged(clause, path)
        body = NOTHING if merged is False else self.visit_plain(merged, level, path)
        if name is None:
            return body
        self.set_rule(name, body)
        return RuleRef(name)

    def visit_plain(self, schema: dict, level: int, path: str) -> Expr:
        """A schema without `$ref`, `allOf`, `anyOf`, `oneOf`: its listed values or its types."""
        schema = fold_unevaluated(self, schema, schema, path)
        if "const" in schema:  # the listed values that the schema's other keywords allow
            return self.literal(schema["const"], level) if value_meets(schema["const"], schema, self.exact_formats) else NOTHING
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list):
                raise InvalidJSONError(f"{path}.enum: must be a list")
            others = {k: w for k, w in schema.items() if k != "enum"}  # (each value is listed: O(n), not O(n^2))
            return choice(*(self.literal(v, level) for v in values if value_meets(v, others, self.exact_formats)))
        types = schema.get("type")
        if types is None:
            if not constrains(schema):
                return self.any_value(level)
            types = list(TYPES)
        if isinstance(types, str):
            types = [types]
        if not isinstance(types, list) or any(t not in TYPES for t in types):
            raise InvalidJSONError(f"{path}.type: must be one of {', '.join(TYPES)} or a list of them, got {types!r}")
        if "integer" in types and "number" in types:
            types = [t for t in types if t != "integer"]
        alternatives = []
        for t in types:
            alternatives.append(getattr(self, "t_" + t)(schema, level, path))
        return choice(*alternatives)

    def deref(self, schema: Any, path: str) -> Any:
        """Follow `$ref`s at the top of a schema (json_merge.deref)."""
        return deref(self, schema, path)

    def resolve(self, ref: str, path: str, node: Any = None) -> Any:
        """The subschema `ref` names, read at `node` (its base URI: references.py); True for a
        reference into another document (never fetched: recorded as an approximation)."""
        before = len(self.refs.unfetched)
        target = self.refs.resolve(ref, path, node)
        if len(self.refs.unfetched) > before:
            self.approximations.append((f"{path}.$ref", "$ref", f"not enforced: {ref} is in another document, "
                                        "never fetched (any value)"))
        return target

    def merge_below(self, a: Any, b: Any, path: str = "$") -> Any:
        """Both subschemas, lazily (json_merge.merge_below)."""
        return merge_below(a, b)

    def merge(self, a: Any, b: Any, path: str) -> Any:
        """allOf of two schemas as one schema (json_merge.merge)."""
        return merge(self, a, b, path)

    # ---- values -------------------------------------------------------------------------

    def any_value(self, level: int) -> Expr:
        return self.visit_any(self.level(level))

    def visit_any(self, level: int) -> Expr:
        def build():
            return choice(self.t_object({}, level, "$", loose=True), self.t_array({}, level, "$", loose=True),
                          self.t_string({}, level, "$"), self.t_number({}, level, "$"), ByteString(b"true"),
                          ByteString(b"false"), ByteString(b"null"))
        return self.rule(("any", level), f"json_value_{level}" if self.layout.by_level else "json_value", build)

    def literal(self, value: Any, level: int) -> Expr:
        """One JSON value, serialized in the layout."""
        if isinstance(value, dict):
            if not value:
                return seq(ByteString(b"{"), self.layout.empty(), ByteString(b"}"))
            members = [seq(ByteString(json_string_literal(k)), self.layout.key_sep(), self.literal(v, level + 1))
                       for k, v in value.items()]
            if self.any_order and len(members) > 1:  # an object's members in any order, each once
                lv = self.level(level)
                body = members_in_any_order(self, next(self.serial), members, [True] * len(members),
                                            self.layout.item_sep(lv), None, extra=NOTHING)
                return seq(ByteString(b"{"), self.layout.open(lv), body, self.layout.close(lv), ByteString(b"}"))
            return self.container(b"{", b"}", members, level)
        if isinstance(value, list):
            if not value:
                return seq(ByteString(b"["), self.layout.empty(), ByteString(b"]"))
            return self.container(b"[", b"]", [self.literal(v, level + 1) for v in value], level)
        if isinstance(value, str):
            return ByteString(json_string_literal(value))
        written = json.dumps(value)
        if isinstance(value, float) and value == value and abs(value) != float("inf"):
            # a number is its value: 2.0 is also written 2, and 1e-05 also 0.00001 (the canonical forms)
            canonical = str(int(value)) if value.is_integer() else format(Decimal(repr(value)), "f")
            if canonical != written:
                return choice(ByteString(canonical.encode()), ByteString(written.encode()))
        return ByteString(written.encode())

    def container(self, open_: bytes, close: bytes, members: list, level: int) -> Expr:
        lv = self.level(level)
        parts = [ByteString(open_), self.layout.open(lv)]
        for i, m in enumerate(members):
            if i:
                parts.append(self.layout.item_sep(lv))
            parts.append(m)
        return seq(*parts, self.layout.close(lv), ByteString(close))

    # ---- types --------------------------------------------------------------------------

    def t_null(self, schema, level, path) -> Expr:
        return ByteString(b"null")

    def t_boolean(self, schema, level, path) -> Expr:
        return choice(ByteString(b"true"), ByteString(b"false"))

    def t_integer(self, schema, level, path) -> Expr:
        if schema.get(FRACTIONAL):
            return NOTHING
        lo, lo_x, hi, hi_x = bounds(schema, path)
        ilo = None if lo is None else int(lo) + 1 if lo_x and lo == int(lo) else _ceil(lo)
        ihi = None if hi is None else int(hi) - 1 if hi_x and hi == int(hi) else _floor(hi)
        if schema.get(NOT_MULTIPLE_OF):
            return non_multiples(self, schema.get("multipleOf"), schema[NOT_MULTIPLE_OF], ilo, ihi, path)
        if "multipleOf" in schema:
            return _multiples(self, _integer_factor(schema["multipleOf"], path), ilo, ihi, path)
        return integer_range(ilo, ihi)

    def t_number(self, schema, level, path) -> Expr:
        if "multipleOf" in schema:
            k = schema["multipleOf"]
            if isinstance(k, int) or (isinstance(k, float) and k.is_integer()):
                return self.t_integer(schema, level, path)
        lo, lo_x, hi, hi_x = bounds(schema, path)
        if "multipleOf" in schema and not schema.get(FRACTIONAL) and not schema.get(NOT_MULTIPLE_OF):
            return _decimal_multiples(self, schema["multipleOf"], lo, lo_x, hi, hi_x, path)
        if schema.get(FRACTIONAL):
            return fractional_numbers(self, lo, lo_x, hi, hi_x, path)
        if schema.get(NOT_MULTIPLE_OF):  # integers that are no multiple, and every number with a fraction
            return choice(self.t_integer(schema, level, path), fractional_numbers(self, lo, lo_x, hi, hi_x, path))
        return number_range(lo, lo_x, hi, hi_x)

    def t_string(self, schema, level, path) -> Expr:
        return string_expr(self, schema, path)

    def string_content(self, schema, path) -> Expr:
        """What the quotes of a string valid under `schema` hold (strings.py)."""
        return string_content(self, schema, path)

    def t_array(self, schema, level, path, loose: bool = False) -> Expr:
        lv = self.level(level)
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(items, list):  # draft 2019 and earlier: a tuple, then additionalItems
            prefix, items = items, schema.get("additionalItems")
        prefix = prefix or []
        if items is None:
            items = False if (prefix and self.strict and not loose) else True
        lo = count(schema, "minItems", path, 0)
        hi = count(schema, "maxItems", path, None)
        if hi is not None and hi < lo:
            return NOTHING
        sep = self.layout.item_sep(lv)
        if schema.get("uniqueItems") is True:  # distinct items over finite domains (arrays.py)
            unique = unique_items(self, schema, prefix, items, lo, hi, level, path, sep)
            if unique is not None:
                return bracketed(self, unique[1], lv, unique[0])
        if "contains" in schema:  # the items a schema matches, counted (arrays.py)
            counted = counted_items(self, schema, prefix, items, lo, hi, level, path, sep)
            if counted is not None:
                return bracketed(self, counted[1], lv, counted[0])
        elems = [self.visit(s, level + 1, f"{path}.prefixItems[{i}]") for i, s in enumerate(prefix)]
        rest = self.visit(items, level + 1, f"{path}.items")
        if _larger_than(rest, SHARED_ITEM_NODES):  # written twice below: a rule, or nesting doubles it
            name = self.new_rule("items")
            self.set_rule(name, rest)
            rest = RuleRef(name)

        def tail(i: int) -> Expr:
            """Items from index i on, i items written (a separator before each when i > 0)."""
            if hi is not None and i >= hi:
                return EPSILON
            if i < len(elems):
                more = seq(sep if i else EPSILON, elems[i], tail(i + 1))
                return choice(EPSILON, more) if i >= lo else more
            if rest == NOTHING:
                return EPSILON if i >= lo else NOTHING
            need = max(lo - i, 0)
            top = None if hi is None else hi - i
            if i == 0:
                first = seq(rest, Repeat(seq(sep, rest), max(need - 1, 0), None if top is None else top - 1))
                return first if need else choice(EPSILON, first)
            return Repeat(seq(sep, rest), need, top)

        body = tail(0)
        empty = seq(ByteString(b"["), self.layout.empty(), ByteString(b"]"))
        if body == NOTHING or body == EPSILON:
            return NOTHING if body == NOTHING else empty
        full = seq(ByteString(b"["), self.layout.open(lv), _without_empty(body), self.layout.close(lv),
                   ByteString(b"]"))
        return full if lo > 0 else choice(empty, full)

    def t_object(self, schema, level, path, loose: bool = False) -> Expr:
        from .objects import object_expr

        return object_expr(self, schema, level, path, loose)


# ---- helpers ---------------------------------------------------------------------------------


OLD_DRAFTS = ("draft-07", "draft-06", "draft-05", "draft-04", "draft-03")


def reads_ref_alone(root: Any) -> bool:
    """Whether the root's `$schema` names draft 7 or older, where a `$ref` replaces the keywords
    beside it (2019-09 and later apply them all)."""
    uri = root.get("$schema") if isinstance(root, dict) else None
    return isinstance(uri, str) and any(d in uri for d in OLD_DRAFTS)


def _larger_than(expr: Expr, n: int) -> bool:
    """`expr` has more than n nodes (the walk stops after n + 1)."""
    return next(itertools.islice(walk(expr), n, None), None) is not None


def _ceil(d: Decimal) -> int:
    return int(d.to_integral_value(rounding="ROUND_CEILING"))


def _floor(d: Decimal) -> int:
    return int(d.to_integral_value(rounding="ROUND_FLOOR"))


MAX_ENUMERATED_MULTIPLES = 64


# A multiple of m = p / 10^s (p, s >= 1 in lowest terms) is a number x with x * 10^s an integer
# divisible by p. Over the integers that is a multiple of p / gcd(p, 10^s); over the numbers
# the numerals of the range meet the automaton of regular.decimal_multiple_numerals (no
# exponent: a narrowing, as for every bounded number).
def _decimal_parts(m: Any, path: str) -> tuple:
    """(p, s) with m = p / 10^s, s >= 0, p >= 1 and not divisible by 10 when s > 0."""
    value = number(m, f"{path}.multipleOf")
    if value <= 0:
        raise InvalidJSONError(f"{path}.multipleOf: must be a positive number, got {m!r}")
    return decimal_parts(value)


def _integer_factor(m: Any, path: str) -> int:
    """The k whose multiples are the integers that are multiples of m."""
    if isinstance(m, int) and not isinstance(m, bool):
        return m  # (checked by _multiples)
    p, s = _decimal_parts(m, path)
    return p // math.gcd(p, 10 ** s)


def _decimal_multiples(conv, m: Any, lo, lo_x: bool, hi, hi_x: bool, path: str) -> Expr:
    """Numbers in the bounds that are multiples of a non-integer m (above)."""
    p, s = _decimal_parts(m, path)
    try:
        automaton = decimal_multiple_numerals(p, s)
    except TooLarge as err:  # (past the size limit: the range alone, recorded)
        conv.approximations.append((f"{path}.multipleOf", "multipleOf", f"not enforced: {m} over this range: {err}"))
        return number_range(lo, lo_x, hi, hi_x)
    return product_rule(conv, ("decimal multiples", p, s, lo, lo_x, hi, hi_x),
                        [number_range(lo, lo_x, hi, hi_x), automaton], f"{m} over this range", f"{path}.multipleOf")


def _multiples(conv, k: Any, lo: Optional[int], hi: Optional[int], path: str) -> Expr:
    """Integers in lo..hi divisible by k (k a positive integer): a few are listed; otherwise
    the range's numerals meet the remainder automaton of k (regular.divisible_numerals), one
    rule per state of the product. Without bounds, k = c * 10^z (z >= 1) is exact at any size:

        multiples of c * 10^z  =  0 | -0 | -? (positive multiples of c) 0^z

    Past the automaton's size limit otherwise: the range alone, recorded as an approximation
    (refused unless the caller opts in), naming the limit."""
    if isinstance(k, float) and k.is_integer():
        k = int(Decimal(repr(k)))  # the decimal as written: 1e30 is 10^30, not the nearest double
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise InvalidJSONError(f"{path}.multipleOf: only a positive integer is supported, got {k!r}")
    if k == 1:
        return integer_range(lo, hi)
    if lo is None and hi is None and k % 10 == 0:
        digits = str(k)
        c, z = int(digits.rstrip("0")), len(digits) - len(digits.rstrip("0"))
        positive = _multiples(conv, c, 1, None, path)
        return choice(ByteString(b"0"), ByteString(b"-0"),
                      seq(Repeat(ByteString(b"-"), 0, 1), positive, ByteString(b"0" * z)))
    if lo is not None and hi is not None and (hi - lo) // k <= MAX_ENUMERATED_MULTIPLES:
        first = -(-lo // k) * k
        return choice(*(ByteString(str(v).encode()) for v in range(first, hi + 1, k)))
    try:
        automaton = divisible_numerals(k)
    except TooLarge as err:
        conv.approximations.append((f"{path}.multipleOf", "multipleOf", f"not enforced: {k} over this range: {err}"))
        return integer_range(lo, hi)
    return product_rule(conv, ("multiples", k, lo, hi), [integer_range(lo, hi), automaton], f"{k} over this range",
                        f"{path}.multipleOf")


def _without_empty(body: Expr) -> Expr:
    """`body` minus the empty alternative that `tail(0)` adds when no item is required."""
    from ...grammar.ir import Choice

    if isinstance(body, Choice) and body.alternatives[0] == EPSILON:
        rest = body.alternatives[1:]
        return rest[0] if len(rest) == 1 else Choice(rest)
    return body


def json_schema_to_ir(schema: Any, **options) -> GrammarIR:
    """Convert a schema (dict, bool, JSON text or a pydantic model class) to grammar IR."""
    return convert_json_schema(schema, **options)[0]


def convert_json_schema(schema: Any, **options) -> tuple:
    """(grammar IR, approximations) of a schema (dict, bool, JSON text or a pydantic model
    class): the approximations are empty unless `approximate` allowed some."""
    if isinstance(schema, (str, bytes)):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as err:
            raise InvalidJSONError(f"$: the schema is not valid JSON: {err}") from None
        except RecursionError:
            raise InvalidJSONError("$: the schema nests too deeply to be read") from None
    elif hasattr(schema, "model_json_schema"):
        schema = schema.model_json_schema()
    check_json_depth(schema, InvalidJSONError, "$: the schema")
    try:
        conv = SchemaConverter(schema, **options)
        return conv.convert(), tuple(conv.approximations)
    except RecursionError:
        raise GrammarLimitError("$: the schema nests too deeply to convert (each level of nesting is a "
                                "level of the converter's recursion)") from None
