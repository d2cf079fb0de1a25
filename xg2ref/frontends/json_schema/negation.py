"""`not`, `if`/`then`/`else` and `oneOf`'s exclusivity for the JSON Schema front end, as unions of
schemas (XGrammar-2 §2.1's front end; specs/05, "Complements").

A schema is a conjunction: its own keywords, its `$ref` target, its `allOf` parts, one `anyOf`
branch, ... (merge.py). So its complement is a union, one *piece* per conjunct:

    not (k_1 and ... and k_n and target and P_1 ... and (B_1 or ... or B_m))
        =  not k_1  or ... or  not k_n  or  not target  or  not P_1 ...  or  (not B_1 and ... and not B_m)

and a keyword k that applies to one JSON type (`minimum` to numbers, `minLength` to strings) is
violated only by a value of that type:

    not {type: T}           {type: every other type}  (and, when T has integer without number,
                            the numbers with a fraction: {type: number, FRACTIONAL})
    not {minimum: m}        {type: number, exclusiveMaximum: m}        (and the three others)
    not {multipleOf: k}     {type: integer, NOT_MULTIPLE_OF: [k]}, {type: number, FRACTIONAL}
    not {minLength: n}      {type: string, maxLength: n - 1}           (maxLength likewise)
    not {pattern: p}        {type: string, NOT_PATTERNS: [p]}          (no match of p anywhere)
    not {format: f}         {type: string, NOT_FORMATS: [f]}
    not {const: v}          every other type, and within v's type: for a number, below or above
                            it; a string, NOT_STRINGS [v]; a boolean, the other; null: nothing
    not {enum: V}           the same for the whole list
    not {required: R}       {type: object, MEMBERS: {r: false}} for each r in R
    not {properties: {p: S}} {type: object, PRESENT: [p], MEMBERS: {p: {not: S}}}
    not {minItems: n}       {type: array, maxItems: n - 1}            (maxItems likewise)
    not {prefixItems: Ps}   {type: array, minItems: i + 1, prefixItems: [true,...,{not: P_i}]}
    not {contains: C}       {type: array, items: {not: C}}
    not {additionalProperties: S}   {type: object, WITNESS: a member outside the names and
                            patterns beside it, its value in {not: S} (any value for false)}
    not {patternProperties: {p: S}} {type: object, WITNESS: a member whose key matches p, its
                            value in {not: S}}, one piece per pattern

The FRACTIONAL, NOT_*, MEMBERS and PRESENT keywords (keywords.py) are the converter's own: the
regular complements of number and string languages (strings.py, converter.py), and members a
piece constrains, or asks for, without declaring them (so `strict_mode`, which closes objects that declare
`properties`, reads a piece as the user's schema reads: objects.py). `not` of a member or item schema
stays lazy (`{not: S}` below an object), so a recursive structure is negated one level at a
time. A keyword whose complement is not one of these (uniqueItems, propertyNames, `not` of a schema reaching itself with no object or array between, ...) raises
`Inexact`: the caller keeps the superset it had before (specs/05, "Not enforced") and records
the keyword and its path in `conv.approximations`.

    if I then T else E    =  (I and T) or (not I and E)           (T, E default: true)
    oneOf [B_1 ... B_n]    =  or_i (B_i and and_{j != i} not B_j)  (as anyOf when the branches
                                                                    are pairwise of disjoint types)
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, List, Optional

from ...exceptions import InvalidJSONError
from ...grammar.ir import CharClass, RuleRef
from ...grammar.regular import TooLarge, bounded_length, divisible_numerals
from ..regex.parser import regex_to_expr
from .lexical import integer_range, number_range
from .values import json_kind
from .keywords import (ANNOTATIONS, FRACTIONAL, MEMBERS, PRESENT, NOT_FORMATS, NOT_MULTIPLE_OF, NOT_PATTERNS, NOT_STRINGS,
                       STANDARD, TYPES, WITNESS, bounds)


class Inexact(Exception):
    """A complement this module cannot write exactly (the message names the keyword)."""


NUMERIC = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
# keywords that change nothing when negated on their own: they say nothing alone
INERT = frozenset({"then", "else", "contentSchema", "minContains", "maxContains"}) | ANNOTATIONS
OTHER_TYPES = {t: [u for u in TYPES if u != t and not (t == "number" and u == "integer")] for t in TYPES}


def _types_of(schema_type) -> List[str]:
    types = [schema_type] if isinstance(schema_type, str) else list(schema_type)
    if "number" in types and "integer" not in types:
        types.append("integer")
    return types


class Negations:
    """The complements one conversion needs, memoized by schema object (a complement met twice
    is the same object, so the clause expansion of merge.py meets it again and ends)."""

    def __init__(self, conv):
        self.conv = conv
        self.memo: dict = {}  # id(schema) -> its complement as a list of pieces, or the Inexact raised
        self.keep: list = []  # the schemas whose ids are keys above stay alive
        self.in_progress: set = set()

    def lazy(self, schema: Any) -> Any:
        """`{not: schema}`, one object per schema (for subschemas below a member or an item)."""
        key = ("lazy", id(schema))
        if key not in self.memo:
            self.memo[key] = {"not": schema}
            self.keep.append(schema)
        return self.memo[key]

    def pieces(self, schema: Any, path: str) -> List[Any]:
        """The complement of `schema` as a list of schemas (their union); raises Inexact."""
        if schema is True:
            return []
        if schema is False:
            return [True]
        if not isinstance(schema, dict):
            raise Inexact(f"{path}: not a schema")
        key = id(schema)
        if key in self.memo:
            found = self.memo[key]
            if isinstance(found, Inexact):
                raise found
            return found
        if key in self.in_progress:
            raise Inexact(f"{path}: `not` of a schema that reaches itself with no object or array between")
        self.in_progress.add(key)
        try:
            if self._reaches_itself(schema, path):
                raise Inexact(f"{path}: `not` of a schema that reaches itself with no object or array between")
            out = self._pieces(schema, path)
        except Inexact as err:
            self.memo[key] = err
            raise
        finally:
            self.in_progress.discard(key)
        self.memo[key] = out
        self.keep.append(schema)
        return out

    def _reaches_itself(self, schema: dict, path: str) -> bool:
        """Whether `schema` meets itself again through in-place applicators alone (its
        complement would be defined by itself: no least solution to take)."""
        seen, stack = set(), [schema]
        while stack:
            node = stack.pop()
            children = []
            for key in ("allOf", "anyOf", "oneOf"):
                if isinstance(node.get(key), list):
                    children += node[key]
            children += [node[k] for k in ("not", "if", "then", "else") if k in node]
            if isinstance(node.get("$ref"), str):
                children.append(self.conv.resolve(node["$ref"], path, node))
            for child in children:
                if child is schema:
                    return True
                if isinstance(child, dict) and id(child) not in seen:
                    seen.add(id(child))
                    stack.append(child)
        return False

    def _pieces(self, schema: dict, path: str) -> List[Any]:
        conv = self.conv
        if schema.get("unevaluatedProperties", True) is not True:  # (as a union of clauses without it)
            from .unevaluated import as_clauses
            rewritten = as_clauses(conv, schema, path)
            if rewritten is not None:
                self.keep.append(rewritten)
                return self.pieces(rewritten, path)
        if "$ref" in schema and isinstance(schema["$ref"], str):
            target = conv.resolve(schema["$ref"], path, schema)
            if conv.ref_alone:
                return self.pieces(target, f"{path}.$ref")
        else:
            target = True
        out = list(self.pieces(target, f"{path}.$ref")) if target is not True else []
        for i, part in enumerate(schema.get("allOf") or []):
            out += self.pieces(part, f"{path}.allOf[{i}]")
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list):
                negated = [self.pieces(b, f"{path}.{key}[{i}]") for i, b in enumerate(branches)]
                out.append({"allOf": [{"anyOf": p} for p in negated]})
                if key == "oneOf" and len(branches) > 1:  # or two of them hold
                    out += [{"allOf": [a, b]} for i, a in enumerate(branches) for b in branches[i + 1:]]
        if "not" in schema:
            out.append(schema["not"])
        if "if" in schema:  # not ((I and T) or (not I and E)) = (I and not T) or (not I and not E)
            then, else_ = schema.get("then", True), schema.get("else", True)
            if then is not True:
                out.append({"allOf": [schema["if"], {"anyOf": self.pieces(then, f"{path}.then")}]})
            if else_ is not True:
                out.append({"allOf": [{"anyOf": self.pieces(schema["if"], f"{path}.if")},
                                      {"anyOf": self.pieces(else_, f"{path}.else")}]})
        out += self.keywords(schema, path)
        return out

    def keywords(self, schema: dict, path: str) -> List[Any]:
        """The complement of the schema's own keywords (module docstring's table)."""
        out: List[Any] = []
        applicators = ("$ref", "allOf", "anyOf", "oneOf", "not", "if")
        for key, value in schema.items():
            if key in INERT or key in applicators or key in NUMERIC or key.startswith("x-"):
                continue  # (the four bounds at once, below)
            if _says_nothing(key, value):
                continue
            handler = getattr(self, "not_" + key, None)
            if handler is None and key not in STANDARD and not key.startswith("$xg2ref:"):
                continue  # a word outside the vocabularies: it constrains nothing
            if handler is None:
                raise Inexact(f"{path}.{key}: its complement is not written (specs/05)")
            out += handler(value, schema, f"{path}.{key}")
        if any(k in schema for k in NUMERIC):
            out += self.not_bounds(schema, path)
        return out

    # ---- one keyword each: the values that break it -------------------------------------------

    def not_type(self, value, schema, path) -> list:
        types = _types_of(value)  # (number brings integer)
        others = [t for t in TYPES if t not in types and t != "number" or (t == "number" and "number" not in types
                                                                               and "integer" not in types)]
        out = [{"type": others}] if others else []
        if "integer" in types and "number" not in _types_of_raw(value):  # the numbers with a fraction
            out.append({"type": "number", FRACTIONAL: True})
        return out

    def not_bounds(self, schema, path) -> list:
        lo, lo_x, hi, hi_x = bounds(schema, path)
        out = []
        if lo is not None:  # below lo (at lo too when lo is exclusive)
            out.append({"type": "number", ("maximum" if lo_x else "exclusiveMaximum"): _plain(lo)})
        if hi is not None:
            out.append({"type": "number", ("minimum" if hi_x else "exclusiveMinimum"): _plain(hi)})
        return out

    def not_multipleOf(self, k, schema, path) -> list:
        if isinstance(k, float) and k.is_integer():
            k = int(Decimal(repr(k)))
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            raise Inexact(f"{path}: the complement of multipleOf {k!r} (only positive integers)")
        return [{"type": "integer", NOT_MULTIPLE_OF: [k]}, {"type": "number", FRACTIONAL: True}]

    def not_minLength(self, n, schema, path) -> list:
        return [{"type": "string", "maxLength": n - 1}] if isinstance(n, int) and n > 0 else []

    def not_maxLength(self, n, schema, path) -> list:
        return [{"type": "string", "minLength": n + 1}] if isinstance(n, int) and not isinstance(n, bool) else []

    def not_pattern(self, p, schema, path) -> list:
        _complement_or_inexact("not_pattern", p, path)
        return [{"type": "string", NOT_PATTERNS: [p]}]

    def not_format(self, f, schema, path) -> list:
        from .formats import format_regexes

        regexes = format_regexes(f, self.conv.exact_formats)
        if not regexes:
            return []  # an annotation: every string meets it
        if not isinstance(regexes[0], str):  # (an automaton over Unicode classes: its complement
            # takes a minute to determinize; a grammar format has none)
            raise Inexact(f"{path}: the complement of format {f} is not written")
        if len(regexes) > 1:  # not (A and B) = not A or not B: one piece per regex, each a whole match
            return [piece for r in regexes for piece in self.not_pattern(f"^(?:{r})$", schema, path)]
        _complement_or_inexact("not_format", regexes[0], path)
        return [{"type": "string", NOT_FORMATS: [f]}]

    def not_const(self, v, schema, path) -> list:
        return self.not_enum([v], schema, path)

    def not_enum(self, values, schema, path) -> list:
        if not isinstance(values, list):
            raise Inexact(f"{path}: must be a list")
        by_type: dict = {}
        for v in values:
            by_type.setdefault(json_kind(v), []).append(v)
        out = [{"type": [t for t in TYPES if t not in by_type and not (t == "integer" and "number" in by_type)]}]
        if "boolean" in by_type:
            rest = [b for b in (True, False) if b not in by_type["boolean"]]
            out += [{"const": b} for b in rest]
        if "number" in by_type:
            points = sorted({Decimal(repr(v)) if isinstance(v, float) else Decimal(v) for v in by_type["number"]})
            out.append({"type": "number", "exclusiveMaximum": _plain(points[0])})
            out += [{"type": "number", "exclusiveMinimum": _plain(a), "exclusiveMaximum": _plain(b)}
                    for a, b in zip(points, points[1:])]
            out.append({"type": "number", "exclusiveMinimum": _plain(points[-1])})
        if "string" in by_type:
            out.append({"type": "string", NOT_STRINGS: sorted(set(by_type["string"]))})
        if "object" in by_type or "array" in by_type:
            raise Inexact(f"{path}: the complement of a listed object or array")
        return [p for p in out if p.get("type") != []]

    def not_required(self, names, schema, path) -> list:
        if not isinstance(names, list):
            raise Inexact(f"{path}: must be a list")
        return [{"type": "object", MEMBERS: {n: False}} for n in names]

    def not_properties(self, props, schema, path) -> list:
        if not isinstance(props, dict):
            raise Inexact(f"{path}: must be an object")
        return [{"type": "object", PRESENT: [name], MEMBERS: {name: self.lazy(sub)}}
                for name, sub in props.items() if not self.anything(sub, path)]

    def anything(self, sub, path: str) -> bool:
        """Whether `sub` (its `$ref`s followed) takes every value: its complement is empty."""
        try:
            sub = self.conv.deref(sub, path)
        except InvalidJSONError:
            return False  # (reported where the schema is compiled)
        return sub is True or (isinstance(sub, dict) and all(k in ANNOTATIONS or _says_nothing(k, v)
                                                             for k, v in sub.items()))

    def not_additionalProperties(self, extra, schema, path) -> list:
        """`additionalProperties: S` breaks where a member neither declared nor matched by a
        pattern has a value outside S (any value, for `false`): a witness (WITNESS, objects.py)."""
        if extra is True or extra == {}:
            return []
        props, patterns = schema.get("properties") or {}, schema.get("patternProperties") or {}
        if not isinstance(props, dict) or not isinstance(patterns, dict):
            raise Inexact(f"{path}: properties and patternProperties must be objects")
        if extra is not False and self.anything(extra, path):
            return []
        witness = {"names": list(props), "patterns": list(patterns)}
        if extra is not False:
            witness["value"] = self.lazy(extra)
        return [{"type": "object", WITNESS: [witness]}]

    def not_patternProperties(self, patterns, schema, path) -> list:
        """`patternProperties` breaks where a member whose key matches a pattern has a value
        outside that pattern's schema: a witness per pattern (WITNESS, objects.py)."""
        if not isinstance(patterns, dict):
            raise Inexact(f"{path}: must be an object")
        return [{"type": "object", WITNESS: [{"inside": [p], "value": self.lazy(sub)}]}
                for p, sub in patterns.items() if not self.anything(sub, path)]

    def not_propertyNames(self, names, schema, path) -> list:
        """`propertyNames: P` breaks where a key is outside P's language: a witness whose key
        is outside it (WITNESS, objects.py), one per keyword of P (a pattern: no match; an enum
        or const: none of the names; lengths: a match, or none, of that many characters)."""
        if names is True or names == {}:
            return []
        if names is False or (isinstance(names, dict) and "type" in names
                               and "string" not in _types_of_raw(names["type"])):
            return [{"type": "object", "minProperties": 1}]  # (no key is in P)
        if not isinstance(names, dict):
            raise Inexact(f"{path}: must be a schema")
        out = []
        for key, value in names.items():
            if key in ANNOTATIONS or key == "type" or key.startswith("x-") or _says_nothing(key, value):
                continue
            if key == "pattern" and isinstance(value, str):
                _complement_or_inexact("not_pattern", value, path)
                witness = {"patterns": [value]}
            elif key in ("enum", "const"):
                listed = value if key == "enum" else [value]
                if not isinstance(listed, list):
                    raise Inexact(f"{path}.enum: must be a list")
                witness = {"names": [v for v in listed if isinstance(v, str)]}
            elif key in ("minLength", "maxLength") and isinstance(value, int) and not isinstance(value, bool):
                run = rf"^[\s\S]{{{value if key == 'minLength' else value + 1}}}"
                witness = {"patterns": [run]} if key == "minLength" else {"inside": [run]}
            else:
                raise Inexact(f"{path}.{key}: the complement of propertyNames with {key} is not written (specs/05)")
            out.append({"type": "object", WITNESS: [witness]})
        return out

    def not_minProperties(self, n, schema, path) -> list:
        return [{"type": "object", "maxProperties": n - 1}] if isinstance(n, int) and n > 0 else []

    def not_maxProperties(self, n, schema, path) -> list:
        return [{"type": "object", "minProperties": n + 1}] if isinstance(n, int) and not isinstance(n, bool) else []

    def not_dependentRequired(self, deps, schema, path) -> list:
        """An object with k and without one of the names k needs."""
        if not isinstance(deps, dict):
            raise Inexact(f"{path}: must be an object")
        return [{"type": "object", PRESENT: [k], MEMBERS: {d: False}} for k, names in deps.items()
                for d in (names if isinstance(names, list) else [])]

    def not_dependentSchemas(self, deps, schema, path) -> list:
        """An object with k that breaks k's schema."""
        if not isinstance(deps, dict):
            raise Inexact(f"{path}: must be an object")
        return [{"allOf": [{"type": "object", PRESENT: [k]}, {"anyOf": self.pieces(sub, f"{path}.{k}")}]}
                for k, sub in deps.items()]

    def not_dependencies(self, deps, schema, path) -> list:
        if not isinstance(deps, dict):
            raise Inexact(f"{path}: must be an object")
        names = {k: v for k, v in deps.items() if isinstance(v, list)}
        subs = {k: v for k, v in deps.items() if not isinstance(v, list)}
        return self.not_dependentRequired(names, schema, path) + self.not_dependentSchemas(subs, schema, path)

    def not_minItems(self, n, schema, path) -> list:
        return [{"type": "array", "maxItems": n - 1}] if isinstance(n, int) and n > 0 else []

    def not_maxItems(self, n, schema, path) -> list:
        return [{"type": "array", "minItems": n + 1}] if isinstance(n, int) and not isinstance(n, bool) else []

    def not_prefixItems(self, prefix, schema, path) -> list:
        if not isinstance(prefix, list):
            raise Inexact(f"{path}: must be a list")
        return [{"type": "array", "minItems": i + 1, "prefixItems": [True] * i + [self.lazy(p)]}
                for i, p in enumerate(prefix) if p is not True and p != {}]

    def not_items(self, items, schema, path) -> list:
        if isinstance(items, list):  # drafts up to 2019-09: a tuple
            return self.not_prefixItems(items, schema, path)
        if items is True or items == {}:
            return []
        if "prefixItems" in schema:
            raise Inexact(f"{path}: the complement of items after prefixItems (an item past the prefix breaks it)")
        return [{"type": "array", "contains": self.lazy(items)}]  # some item breaks it

    def not_contains(self, sub, schema, path) -> list:
        """Fewer hits than minContains (default 1), or more than maxContains."""
        lo, hi = schema.get("minContains", 1), schema.get("maxContains")
        if not isinstance(lo, int) or isinstance(lo, bool) or (hi is not None and not isinstance(hi, int)):
            raise Inexact(f"{path}: minContains / maxContains must be integers")
        out = [{"type": "array", "contains": sub, "minContains": 0, "maxContains": lo - 1}] if lo > 0 else []
        if hi is not None:
            out.append({"type": "array", "contains": sub, "minContains": hi + 1})
        return out


def _complement_or_inexact(key: str, value, path: str) -> None:
    """Build (and cache) the complement automaton now, so that one past the size limit, or of a
    pattern beyond a grammar, is an approximation here rather than an error later."""
    from .strings import complement_of_check

    if not isinstance(value, str) and not (key == "not_format" and hasattr(value, "automaton")):
        raise Inexact(f"{path}: must be a string")
    try:
        complement_of_check(key, value, path)
    except InvalidJSONError as err:
        raise Inexact(str(err)) from None


def disjoint_branches(conv, branches: list, path: str) -> bool:
    """Whether no value meets two of `branches`: their types are pairwise disjoint, or their
    listed values are, or, for objects, one required member's listed values are (a
    discriminator). Then `oneOf` is `anyOf`."""
    summaries = []
    for i, b in enumerate(branches):
        b = conv.deref(b, f"{path}.oneOf[{i}]")
        if b is False:
            continue
        if not isinstance(b, dict):
            return False
        summaries.append(_summary(conv, b))
    for i, a in enumerate(summaries):
        for b in summaries[i + 1:]:
            if not _apart(a, b):
                return False
    return True


def _summary(conv, b: dict) -> tuple:
    """(types or None, listed values or None, {required member: its listed values})."""
    types = set(_types_of(b["type"])) if isinstance(b.get("type"), (str, list)) else None
    values = [b["const"]] if "const" in b else list(b["enum"]) if isinstance(b.get("enum"), list) else None
    if values is not None:
        listed = {json_kind(v) for v in values} | ({"integer"} if any(json_kind(v) == "number" for v in values) else set())
        types = listed if types is None else types & listed
    tags = {}
    props = b.get("properties") if isinstance(b.get("properties"), dict) else {}
    for name in b.get("required") or []:
        sub = props.get(name)
        if isinstance(sub, dict) and "$ref" in sub and isinstance(sub["$ref"], str):
            sub = conv.deref(sub, "$")
        if isinstance(sub, dict) and ("const" in sub or isinstance(sub.get("enum"), list)):
            tags[name] = [sub["const"]] if "const" in sub else list(sub["enum"])
    return types, values, tags


def _apart(a: tuple, b: tuple) -> bool:
    from .values import json_equal

    (ta, va, ga), (tb, vb, gb) = a, b
    if ta is not None and tb is not None and not (ta & tb):
        return True
    if va is not None and vb is not None and not any(json_equal(x, y) for x in va for y in vb):
        return True
    if ta == {"object"} and tb == {"object"}:  # (a value of another type meets neither's members)
        for name in set(ga) & set(gb):
            if not any(json_equal(x, y) for x in ga[name] for y in gb[name]):
                return True
    return False


def _types_of_raw(value) -> List[str]:
    return [value] if isinstance(value, str) else list(value)


def _plain(d: Decimal):
    """A Decimal bound as the int or float a schema holds (exact: ints stay ints)."""
    return int(d) if d == d.to_integral_value() else float(d) if Decimal(repr(float(d))) == d else d


# ---- the number languages the complements ask for (FRACTIONAL, NOT_MULTIPLE_OF) ---------------
#
#     fractional_numbers(lo..hi)      the numerals of the range (lexical.number_range) with a
#                                     fraction that has a non-zero digit, `-?D+ . D* [1-9] D*`:
#                                     their automata intersected. Such a value is no integer,
#                                     and every non-integer of the range written without
#                                     exponent is one (exponent forms: specs/05, narrower)
#     non_multiples(k, ms, lo..hi)    the integer numerals of the range that are multiples of k
#                                     (when given) and of no m in ms: the range's numerals
#                                     intersected with the remainder automata of k and each m
#                                     (regular.divisible_numerals, remainder 0 or not)
#
# Both become right-linear rules, one per product state (regular.bounded_length); a product
# past the size limit is an InvalidJSONError naming the keywords, never a cut.

FRACTION = r"^-?[0-9]+\.[0-9]*[1-9][0-9]*$"


def product_rule(conv, key: tuple, parts: list, what: str, path: str):
    """The strings in every one of `parts` (regex IR or automata) as one rule per product state,
    memoized under `key`; past the size limits, InvalidJSONError "{path}: {what}: ..."."""
    if key in conv.memo:
        return RuleRef(conv.memo[key])
    try:
        start = bounded_length(parts, 0, None, lambda ranges: CharClass(tuple(ranges)), conv.new_rule, conv.set_rule)
    except TooLarge as err:
        raise InvalidJSONError(f"{path}: {what}: {err}") from None
    if isinstance(start, RuleRef):
        conv.memo[key] = start.name
    return start


def fractional_numbers(conv, lo: Optional[Decimal], lo_x: bool, hi: Optional[Decimal], hi_x: bool, path: str):
    """Numbers in the range whose value is not an integer (module docstring)."""
    key = ("fractional", lo, lo_x, hi, hi_x)
    return product_rule(conv, key, [number_range(lo, lo_x, hi, hi_x), regex_to_expr(FRACTION)],
                    "the numbers with a fraction", path)


# keywords whose every subschema is `true` hold of every value: nothing breaks them
_EACH_TRUE = ("properties", "patternProperties", "dependentSchemas")
_TRUE = ("additionalProperties", "items", "additionalItems", "unevaluatedProperties", "unevaluatedItems",
         "propertyNames")


def _says_nothing(key: str, value) -> bool:
    if key in _EACH_TRUE:
        return isinstance(value, dict) and all(v is True for v in value.values())
    return key in _TRUE and value is True


def non_multiples(conv, k, ms, lo: Optional[int], hi: Optional[int], path: str):
    """Integers in lo..hi that are multiples of k (None: any) and of no m in `ms`."""
    factors = sorted({_factor(m, path) for m in ms})
    if 1 in factors:
        return CharClass(())  # every integer is a multiple of 1
    parts = [integer_range(lo, hi)] + [divisible_numerals(m, divisible=False) for m in factors]
    if k is not None:
        parts.append(divisible_numerals(_factor(k, path)))
    key = ("non-multiples", k, tuple(factors), lo, hi)
    return product_rule(conv, key, parts, f"integers that are no multiple of {', '.join(map(str, factors))}", path)


def _factor(k, path: str) -> int:
    if isinstance(k, float) and k.is_integer():
        k = int(Decimal(repr(k)))
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise InvalidJSONError(f"{path}.multipleOf: only a positive integer is supported, got {k!r}")
    return k
