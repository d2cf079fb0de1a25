"""JSON Schema in-place applicators for `converter.py` (XGrammar-2 §2.1, the JSON Schema front
end): `allOf`, and `$ref` / `anyOf` / `oneOf` beside other keywords, as a choice of merged
schemas.

Every schema object N contributes an *atom*, its own keywords without the four combinators, and
stands for

    N  =  atom(N)  and  target($ref)  and  P_1 and ... and P_m  and  (B_1 or ... or B_n)
                                          (allOf)                   (anyOf; oneOf read the same way)

which `Clauses.expand` writes in disjunctive normal form: a list of *clauses*, each a set of
atoms that must all hold (kept in the order the schema writes them), merged into one schema by
`merge`:

    clauses(true) = {{}}       clauses(false) = {}       clauses({}) = {{}}
    clauses(N)    = {{atom(N)}} x clauses(target) x clauses(P_1) x ... x (clauses(B_1) + ...)
    A x B         = {a + b : a in A, b in B}, less every clause that holds another one
                    (a clause with more atoms allows fewer values)

A `$ref` that reaches its own schema through these combinators, with no object or array between
(`a = anyOf[integer, a]`), makes these equations recursive. Their meaning is the least solution,
the one a grammar's rules give and xgrammar 0.2.8's rules give: Kleene iteration from "no
clause" over the schemas reachable that way, which ends because clauses are sets of the
finitely many atoms. So `a = anyOf[integer, a]` is the integers, `a = {$ref: a}` is nothing,
`a = allOf[{$ref: a}, X]` is nothing, `a = {type: integer, anyOf: [{minimum: 3}, {$ref: a}]}`
is the integers from 3.

`merge` joins two schemas keyword by keyword (bounds tightened, types intersected, patterns and
formats all kept, ...). Subschemas below a merge stay lazy, `{"allOf": [x, y]}`, and are
expanded when visited, so recursive definitions meet the same clause again and end at its rule.
Arrays are merged index by index: with prefixes P, Q and rests r, s (`items` after
`prefixItems`, or `additionalItems` after a list `items`), item i must meet P_i (or r past P)
and Q_i (or s past Q).

`unevaluatedItems` / `unevaluatedProperties` of a schema whose in-place subschemas
(allOf/anyOf/oneOf/$ref/if/then/else/dependentSchemas) evaluate no item (member) are the
schema's own `items` (`additionalProperties`) when it has none: the same items answer to them
(with `contains`, an item it matches is evaluated too: `anyOf[U, contains]`). Otherwise which
items are left unevaluated depends on which branches hold, and each clause of the schema takes
an atom of its own for them (unevaluated.py; the clause algebra is clause_sets.py).
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from ...exceptions import InvalidJSONError
from .clause_sets import ANYTHING, MAX_BRANCH_PRODUCT, NOTHING_AT_ALL, TooManyBranches, as_sets, product, subsets, union_of
from .keywords import (ANNOTATIONS, COMPLEMENTS, FRACTIONAL, MEMBERS, PRESENT, MORE_CONTAINS, MORE_FORMATS,
                       MORE_PATTERNS, constrains, decimal_parts)
from .negation import Inexact, Negations, disjoint_branches
from .unevaluated import dynamic_target, evaluation_atom, fold_unevaluated, in_place_subtree
from .values import json_equal

# the validation keywords `merge` must not silently drop
ASSERTIONS = frozenset({"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
                        "exclusiveMinimum", "maxLength", "minLength", "pattern", "format", "items", "prefixItems",
                        "additionalItems", "maxItems", "minItems", "uniqueItems", "contains", "minContains",
                        "maxContains", "maxProperties",
                        "minProperties", "required", "properties", "patternProperties", "additionalProperties",
                        "propertyNames", "dependentRequired", "dependentSchemas", "dependencies", "if", "then",
                        "else", "not", "$ref", "allOf", "anyOf", "oneOf"})
# validation keywords the grammar does not enforce (specs/05, "Not enforced")
NOT_ENFORCED = frozenset({"unevaluatedProperties", "unevaluatedItems"})
COMBINATORS = ("$ref", "$dynamicRef", "allOf", "anyOf", "oneOf")
# the in-place applicators a clause expands (an atom keeps none of them): COMBINATORS, the
# complements of negation.py and the dependencies (each a choice, `Clauses.dependency`)
DEPENDENCIES = ("dependentRequired", "dependentSchemas", "dependencies")
APPLICATORS = COMBINATORS + ("not", "if", "then", "else") + DEPENDENCIES
# dependencies past this many in one schema multiply into too many clauses: not enforced
MAX_DEPENDENCIES = 4
# complements (negation.py) are written while they multiply the clauses of what they replace
# at most this many times (or make at most MIN_COMPLEMENT_CLAUSES): each clause is a schema of
# its own in the grammar, and a oneOf inside a large object would copy the object per clause
COMPLEMENT_GROWTH = 4
MIN_COMPLEMENT_CLAUSES = 16
COMPLEMENT_TEXT_BUDGET = 20000
ARRAY_KEYS = ("prefixItems", "items", "additionalItems")
# the keywords an atom keeps: annotations and words outside the vocabulary (`x-...`,
# `javaType`) change no language, and would only tell equal atoms apart
VOCABULARY = ASSERTIONS | NOT_ENFORCED | {MORE_PATTERNS, MORE_FORMATS, MORE_CONTAINS} | set(COMPLEMENTS)


def trivial(schema: Any) -> bool:
    """`true`, or an object without a constraining keyword (any value)."""
    return schema is True or (isinstance(schema, dict) and not constrains(schema))


# ---- merging two schemas ------------------------------------------------------------------------


def merge_below(a: Any, b: Any) -> Any:
    """Both `a` and `b`, for the subschemas of two merged schemas: `{"allOf": [a, b]}`, expanded
    when it is visited (merging eagerly would unroll definitions that refer to themselves)."""
    if a is False or b is False:
        return False
    if trivial(a):
        return b
    if trivial(b) or a is b:
        return a
    return {"allOf": [a, b]}


def _array_form(schema: dict):
    """(prefix, rest) of an array schema: `prefixItems` and `items`, or a list `items` and
    `additionalItems` (rest None: not constrained by this schema)."""
    items = schema.get("items")
    if isinstance(items, list):
        return list(items), schema.get("additionalItems")
    return list(schema.get("prefixItems") or []), items


def _merge_arrays(a: dict, b: dict, out: dict) -> None:
    """Item i of `out` meets item i of both (module docstring)."""
    pa, ra = _array_form(a)
    pb, rb = _array_form(b)

    def both(x, y):
        return y if x is None else x if y is None else merge_below(x, y)

    prefix = [both(pa[i] if i < len(pa) else ra, pb[i] if i < len(pb) else rb) for i in range(max(len(pa), len(pb)))]
    rest = both(ra, rb)
    for key in ARRAY_KEYS:
        out.pop(key, None)
    if prefix:
        out["prefixItems"] = prefix
    if rest is not None:
        out["items"] = rest


def merge(conv, a: Any, b: Any, path: str) -> Any:
    """allOf of two schemas as one schema (both must hold)."""
    if a is False or b is False:
        return False
    if a is True or not a:
        return b
    if b is True or not b:
        return a
    if not isinstance(a, dict) or not isinstance(b, dict):
        raise InvalidJSONError(f"{path}: a schema must be an object or a boolean")
    if "$ref" in b:
        b = deref(conv, b, path) if set(b) - ANNOTATIONS == {"$ref"} else b
        if not isinstance(b, dict):
            return merge(conv, a, b, path)
    out = dict(a)
    if any(k in b for k in CONTAINS_KEYS):
        _merge_contains(a, b, out)
    arrays = any(k in a for k in ARRAY_KEYS) and any(k in b for k in ARRAY_KEYS)
    if arrays:
        _merge_arrays(a, b, out)
    for key, value in b.items():
        if (arrays and key in ARRAY_KEYS) or key in CONTAINS_KEYS:
            continue  # (merged above)
        if key not in out or key in ANNOTATIONS:
            out[key] = value
        elif key in ("properties", "patternProperties"):  # a name in both: its schemas merged
            if not isinstance(out[key], dict) or not isinstance(value, dict):
                raise InvalidJSONError(f"{path}.{key}: must be an object")
            props = dict(out[key])
            for name, sub in value.items():
                props[name] = merge_below(props[name], sub) if name in props else sub
            out[key] = props
        elif key == "required":
            out[key] = list(dict.fromkeys(list(out[key]) + list(value)))
        elif key == "type":
            ta = [out[key]] if isinstance(out[key], str) else list(out[key])
            tb = [value] if isinstance(value, str) else list(value)
            common = [t for t in ta if t in tb or (t == "integer" and "number" in tb)]
            common += [t for t in tb if t == "integer" and "number" in ta and t not in common]
            out[key] = common
        elif key in ("minimum", "minLength", "minItems", "minProperties", "exclusiveMinimum"):
            out[key] = max(out[key], value) if not isinstance(value, bool) else out[key] or value
        elif key in ("maximum", "maxLength", "maxItems", "maxProperties", "exclusiveMaximum"):
            out[key] = min(out[key], value) if not isinstance(value, bool) else out[key] or value
        elif key == "enum":
            out[key] = [v for v in out[key] if any(json_equal(v, w) for w in value)]
        elif key == "const":
            if not json_equal(out[key], value):
                return False  # two different constants: no value meets both
        elif key == "pattern" and out[key] != value:
            out[MORE_PATTERNS] = list(out.get(MORE_PATTERNS, [])) + [value]  # both must match
        elif key == "format" and out[key] != value:
            out[MORE_FORMATS] = list(out.get(MORE_FORMATS, [])) + [value]  # a string meets both
        elif key == MEMBERS:
            out[key] = {**out[key], **{n: merge_below(out[key][n], v) if n in out[key] else v for n, v in value.items()}}
        elif key in (MORE_PATTERNS, MORE_FORMATS) or (key in COMPLEMENTS and key != FRACTIONAL):
            out[key] = list(out[key]) + list(value)
        elif key == "multipleOf" and _integral(out[key]) and _integral(value):
            out[key] = math.lcm(int(out[key]), int(value))  # multiples of both: of their lcm
        elif key == "multipleOf" and _positive(out[key]) and _positive(value):
            out[key] = _decimal_lcm(out[key], value)
        elif key == "uniqueItems":
            out[key] = out[key] is True or value is True  # both hold: distinct items if either says so
        elif key in ("items", "additionalProperties"):
            out[key] = merge_below(out[key], value)
        elif key == "propertyNames":  # kept eager: the key languages read its keywords (objects.py)
            out[key] = merge(conv, deref(conv, out[key], path), deref(conv, value, path), f"{path}.{key}")
        elif key == "allOf":
            out[key] = list(out[key]) + list(value)
        elif key in ("anyOf", "oneOf"):
            # (x1 | x2) and (y1 | y2)  =  (x1 and y1) | (x1 and y2) | ...  (oneOf is read as anyOf)
            if not isinstance(out[key], list) or not isinstance(value, list):
                raise InvalidJSONError(f"{path}.{key}: must be a list")
            if json_equal(out[key], value):
                continue  # (x1 | x2) and (x1 | x2) = x1 | x2: each cross term lies in a branch
            if len(out[key]) * len(value) > MAX_BRANCH_PRODUCT:
                raise InvalidJSONError(f"{path}.{key}: allOf of two {key} lists makes more than "
                                       f"{MAX_BRANCH_PRODUCT} branches")
            out[key] = [{"allOf": [x, y]} for x in out[key] for y in value]
        elif key not in ASSERTIONS or key in NOT_ENFORCED:
            continue  # not a validation keyword, or one never enforced (specs/05): the first value stays
        elif out[key] != value:
            raise InvalidJSONError(f"{path}.{key}: allOf with two different {key} values is not supported")
    if "properties" in a or "properties" in b:
        _closed_members(a, b, out)
    return out


def _closed_members(a: dict, b: dict, out: dict) -> None:
    """A member that one schema declares and the other leaves to its `additionalProperties`
    meets both: its schema in `out` is merged with that `additionalProperties` (so `false`
    there forbids it, as the standard reads `allOf` of a closed object and another)."""
    from .values import value_meets

    props = out.get("properties")
    if not isinstance(props, dict):
        return
    for own, other in ((a, b), (b, a)):
        extra = other.get("additionalProperties", True)
        names = own.get("properties")
        if extra is True or extra == {} or not isinstance(names, dict):
            continue
        declared = other.get("properties") if isinstance(other.get("properties"), dict) else {}
        patterns = other.get("patternProperties") if isinstance(other.get("patternProperties"), dict) else {}
        for name in names:
            if name in declared or any(value_meets(name, {"pattern": p}) for p in patterns):
                continue
            props[name] = merge_below(props[name], extra)


CONTAINS_KEYS = ("contains", "minContains", "maxContains", MORE_CONTAINS)


# Each `contains` counts its own hits between its own minContains (default 1) and maxContains,
# so an allOf of two keeps both: the first as `contains`, the others as MORE_CONTAINS triples
# (C, lo, hi); equal schemas C meet in one range (the larger minimum, the smaller maximum).
def _merge_contains(a: dict, b: dict, out: dict) -> None:
    ranges = contains_ranges(a)
    for c, lo, hi in contains_ranges(b):
        for k, (d, lo2, hi2) in enumerate(ranges):
            if json_equal(c, d):
                ranges[k] = (d, max(lo, lo2), hi2 if hi is None else hi if hi2 is None else min(hi, hi2))
                break
        else:
            ranges.append((c, lo, hi))
    for key in CONTAINS_KEYS:
        out.pop(key, None)
    if ranges:
        (c, lo, hi), rest = ranges[0], ranges[1:]
        out.update({"contains": c, "minContains": lo})
        if hi is not None:
            out["maxContains"] = hi
        if rest:
            out[MORE_CONTAINS] = rest


def contains_ranges(schema: dict) -> list:
    """[(C, minContains, maxContains or None)] of every `contains` of a (merged) schema."""
    out = []
    if "contains" in schema:
        lo, hi = schema.get("minContains", 1), schema.get("maxContains")
        out.append((schema["contains"], lo if isinstance(lo, int) else 1, hi if isinstance(hi, int) else None))
    return out + [tuple(r) for r in schema.get(MORE_CONTAINS) or []]


def _positive(k: Any) -> bool:
    return isinstance(k, (int, float)) and not isinstance(k, bool) and k > 0


def _decimal_lcm(a: Any, b: Any) -> Any:
    """The least common multiple of two positive decimals (as written): with s fraction digits
    at most, lcm(a 10^s, b 10^s) / 10^s, a float (an int when integral)."""
    (p, s), (q, t) = (decimal_parts(Decimal(repr(v)) if isinstance(v, float) else Decimal(v)) for v in (a, b))
    n = math.lcm(p * 10 ** (max(s, t) - s), q * 10 ** (max(s, t) - t))
    value = Decimal(n).scaleb(-max(s, t))
    return int(value) if value == value.to_integral_value() else float(value)


def _integral(k: Any) -> bool:
    return (isinstance(k, int) and not isinstance(k, bool) and k > 0) or (isinstance(k, float) and k.is_integer()
                                                                           and k > 0)


def deref(conv, schema: Any, path: str) -> Any:
    """Follow the `$ref`s at the top of a schema (for merging). References that go round
    without anything else (`a = {$ref: b}, b = {$ref: a}`) allow nothing: `false` (the least
    solution, module docstring)."""
    seen = set()
    while isinstance(schema, dict) and set(schema) - ANNOTATIONS == {"$ref"}:
        ref = schema["$ref"]
        if not isinstance(ref, str):
            raise InvalidJSONError(f"{path}.$ref: must be a string")
        if ref in seen:
            return False
        seen.add(ref)
        schema = conv.resolve(ref, path, schema)
    return schema


# ---- clauses ---------------------------------------------------------------------------------------


class Clauses:
    """The clauses of the schemas one conversion meets (module docstring), memoized per schema
    object. Atoms (validation keywords only) are keyed by their JSON text, so equal keywords
    met twice are one atom; a clause lists its atoms in the order the schema writes them (own
    keywords, $ref, allOf, anyOf, oneOf), which is the order their properties take (a set of
    atoms met again in another order keeps the rule of its first order, converter.py)."""

    def __init__(self, conv):
        self.conv = conv
        self.atoms: dict[str, dict] = {}  # key -> keywords
        self.memo: dict[tuple, tuple] = {}  # (exact, id(schema)) -> its clauses
        self.via_ref: dict[tuple, bool] = {}  # (exact, id(schema)) -> whether its expansion followed a `$ref`
        self.atom_of: dict[int, Any] = {}  # id(schema) -> its atom key, or None
        self.keep: list = []  # every schema whose id is a key above stays alive
        self.negations = Negations(conv)
        self.exact = True  # whether complements are written (off while a schema is expanded again)
        # unevaluated keywords decided per clause (unevaluated.py): id(node) -> {"properties"/"items": U}
        self.pending: dict[int, dict] = {}
        self.keep_all: set = set()  # ids of schemas in place under such a node: no clause subsumed
        self.silent: set = set()  # ids of complements (and their parts): they evaluate nothing
        self.evaluating: set = set()  # keys of atoms met outside complements

    def atom(self, node: dict, path: str):
        """The key of the atom of `node`, or None when its own keywords constrain nothing."""
        if id(node) in self.atom_of:
            key = self.atom_of[id(node)]
            if key is not None and id(node) not in self.silent:
                self.evaluating.add(key)
            return key
        own = {k: v for k, v in node.items() if k in VOCABULARY and k not in APPLICATORS}
        if self.conv.ref_alone and "$ref" in node:
            own = {}  # drafts up to 7: a $ref's neighbours are ignored
        pending: dict = {}
        own = fold_unevaluated(self.conv, node, own, path, pending)
        if pending:
            self.pending[id(node)] = pending
            self.keep_all |= in_place_subtree(self.conv, node, path)
        key = json.dumps(own, sort_keys=True, default=repr) if constrains(own) else None
        if key is not None:
            self.atoms.setdefault(key, own)
            if id(node) not in self.silent:
                self.evaluating.add(key)
        self.atom_of[id(node)] = key
        self.keep.append(node)
        return key

    def _parts(self, node: dict, path: str) -> list:
        """(kind, subschemas) of `node`'s combinators: "all" (each must hold), "any" (one) or "some" (an anyOf: one or more)."""
        parts = []
        if "$ref" in node:
            ref = node["$ref"]
            if not isinstance(ref, str):
                raise InvalidJSONError(f"{path}.$ref: must be a string")
            parts.append(("all", [self.conv.resolve(ref, path, node)], [ref]))
            if self.conv.ref_alone:
                return parts
        if isinstance(node.get("$dynamicRef"), str):
            target = dynamic_target(self.conv, node, path)
            if target is None:  # the dynamic scope decides: not followed, and said so
                self.conv.approximations.append((f"{path}.$dynamicRef", "$dynamicRef",
                                                 "not enforced: its target depends on the path taken"))
            else:
                parts.append(("all", [target], [node["$dynamicRef"]]))
        for key, kind in (("allOf", "all"), ("anyOf", "some"), ("oneOf", "any")):
            if key in node:
                if not isinstance(node[key], list):
                    raise InvalidJSONError(f"{path}.{key}: must be a list")
                branches = node[key]
                if key == "oneOf" and self.exact:
                    branches = self.exactly_one(branches, path)
                elif key == "oneOf" and len(branches) > 1:  # (expanded again without complements)
                    self.conv.oneof_as_anyof.add(id(branches))
                parts.append((kind, branches, [f"{path}.{key}[{i}]" for i in range(len(branches))]))
        if not self.exact:
            return parts  # (`not`, `if`, the dependencies: left out, as the caller records)
        if "not" in node:
            try:
                pieces = self.negations.pieces(node["not"], f"{path}.not")
            except Inexact as err:  # the superset it was before: not enforced, and said so
                self.conv.approximations.append((f"{path}.not", "not", f"not enforced: {err}"))
            else:
                self.keep.append(pieces)
                self.silent.update(id(p) for p in pieces)
                why = self.unaffordable(pieces, [True], path, node)
                if why:
                    self.conv.approximations.append((f"{path}.not", "not", f"not enforced: {why}"))
                else:
                    parts.append(("any", pieces, [f"{path}.not[{i}]" for i in range(len(pieces))]))
        if "if" in node and ("then" in node or "else" in node or id(node) in self.keep_all):  # (`if` evaluates)
            parts.append(self._kept(("any", self.conditional(node, path), [f"{path}.then", f"{path}.else"])))
        deps = [(key, name, then) for key in DEPENDENCIES if isinstance(node.get(key), dict)
                for name, then in node[key].items()]
        if len(deps) > MAX_DEPENDENCIES:
            self.conv.approximations.append((f"{path}.{deps[0][0]}", deps[0][0],
                                             f"not enforced: more than {MAX_DEPENDENCIES} dependencies"))
        elif deps:
            each = [{"anyOf": self.dependency(name, then)} for _, name, then in deps]
            self.keep.append(each)
            why = self.unaffordable([{"allOf": each}], [True], path, node)
            if why:
                self.conv.approximations.append((f"{path}.{deps[0][0]}", deps[0][0], f"not enforced: {why}"))
            else:
                parts += [("all", each, [f"{path}.{key}.{name}" for key, name, _ in deps])]
        return parts

    @staticmethod
    def dependency(name: str, then) -> list:
        """An object with member `name` meets `then` (a schema, or a list of names it requires):
        the values that are no object, or lack the member, or meet it."""
        if isinstance(then, list):
            then = {PRESENT: then}  # (where the object takes them: a closed object is not opened)
        others = ["array", "string", "number", "boolean", "null"]
        if not isinstance(then, dict) or PRESENT not in then:  # (with the member: then evaluates)
            then = {"allOf": [{"type": "object", PRESENT: [name]}, then]}
        return [{"type": others}, {"type": "object", MEMBERS: {name: False}}, then]

    def _kept(self, part: tuple) -> tuple:
        self.keep.append(part[1])  # synthesized schemas: their ids key the memos while they live
        return part

    def conditional(self, node: dict, path: str) -> list:
        """if I then T else E = (I and T) or (not I and E) (negation.py); without an exact
        complement of I, the superset (I and T) or E, recorded."""
        cond, then, else_ = node["if"], node.get("then", True), node.get("else", True)
        superset = [{"allOf": [cond, then]}, else_]
        self.keep.append(superset)
        try:
            negated = {"anyOf": self.negations.pieces(cond, f"{path}.if")}
            self.silent.add(id(negated))
        except Inexact as err:
            self.conv.approximations.append((f"{path}.if", "if", f"else-branch also taken where `if` holds: {err}"))
            return superset
        exact = [superset[0], {"allOf": [negated, else_]}]
        self.keep.append(exact)
        why = self.unaffordable(exact, superset, path, node)
        if why:
            self.conv.approximations.append((f"{path}.if", "if", f"else-branch also taken where `if` holds: {why}"))
            return superset
        return exact

    def exactly_one(self, branches: list, path: str) -> list:
        """oneOf's branches, each beside the complements of the others (negation.py), unless
        they are pairwise disjoint; without exact complements (or past MAX_BRANCH_PRODUCT
        pieces), the branches as anyOf reads them, recorded."""
        if len(branches) < 2 or disjoint_branches(self.conv, branches, path):
            return branches
        try:
            negated = [self.negations.pieces(b, f"{path}.oneOf[{i}]") for i, b in enumerate(branches)]
        except Inexact as err:
            self.conv.approximations.append((f"{path}.oneOf", "oneOf", f"read as anyOf: {err}"))
            self.conv.oneof_as_anyof.add(id(branches))
            return branches
        if sum(len(p) for p in negated) * len(branches) > MAX_BRANCH_PRODUCT:
            self.conv.approximations.append((f"{path}.oneOf", "oneOf", "read as anyOf: too many complements"))
            self.conv.oneof_as_anyof.add(id(branches))
            return branches
        out = [{"allOf": [b] + [{"anyOf": negated[j]} for j in range(len(branches)) if j != i]}
               for i, b in enumerate(branches)]
        self.silent.update(id(c) for o in out for c in o["allOf"][1:])
        self.keep.append(out)
        why = self.unaffordable(out, branches, path, branches)
        if why:
            self.conv.approximations.append((f"{path}.oneOf", "oneOf", f"read as anyOf: {why}"))
            self.conv.oneof_as_anyof.add(id(branches))
            return branches
        return out

    def unaffordable(self, exact: list, plain: list, path: str, node=None):
        """Why the clauses of the `exact` schemas (complements written) cost too much beside
        those of `plain` (the superset), or None: past MAX_BRANCH_PRODUCT in a product, or more
        than COMPLEMENT_GROWTH times as many clauses (each clause is a merged schema of its own
        in the grammar) when the copies of `node` they make pass COMPLEMENT_TEXT_BUDGET
        characters of schema."""
        def clauses(subs: list) -> int:
            return sum(1 if isinstance(sub, bool) else len(self._expand(sub, path)[0]) for sub in subs)
        try:
            many = clauses(exact)  # (memoized: visiting them later costs nothing)
        except TooManyBranches as err:
            return str(err)
        few = clauses(plain)
        if many > max(COMPLEMENT_GROWTH * few, MIN_COMPLEMENT_CLAUSES):
            size = len(json.dumps(node if node is not None else exact, default=repr))
            if many * size > COMPLEMENT_TEXT_BUDGET:
                return f"{many} clauses with the complements against {few} without"
        return None

    def expand(self, schema: Any, path: str) -> tuple[list, bool]:
        """(clauses in a fixed order, whether a `$ref` was followed on the way). When the
        complements multiply past MAX_BRANCH_PRODUCT clauses, the schema is expanded again
        without them (`not`, `if`'s complement, `oneOf`'s exclusivity and the dependencies
        left out, recorded): the superset it was before they were enforced."""
        try:
            return self._expand(schema, path)
        except TooManyBranches as err:
            if not self.exact:
                raise
            self.exact = False
            self.conv.approximations.append((path, "not / if / oneOf / dependencies",
                                             f"left out: their complements make too many branches ({err})"))
            try:
                return self._expand(schema, path)
            finally:
                self.exact = True

    def _expand(self, schema: Any, path: str) -> tuple[list, bool]:
        order, index, via_ref = [], {}, False
        stack = [(schema, path)]
        while stack:  # the schemas reachable through combinators (atoms made on the way)
            node, where = stack.pop()
            if isinstance(node, bool) or id(node) in index:
                continue
            if (self.exact, id(node)) in self.memo:
                via_ref = via_ref or self.via_ref[(self.exact, id(node))]
                continue
            if not isinstance(node, dict):
                raise InvalidJSONError(f"{where}: a schema must be an object or a boolean, got {type(node).__name__}")
            index[id(node)] = len(order)
            atom = self.atom(node, where)
            parts = self._parts(node, where)
            order.append((node, where, atom, parts))
            via_ref = via_ref or "$ref" in node
            for _, subs, paths in parts:
                stack.extend(zip(subs, paths))
                for mark in (self.silent, self.keep_all):  # (a complement's parts are silent too)
                    if id(node) in mark:
                        mark.update(id(x) for x in subs if isinstance(x, dict))
        values = {id(node): NOTHING_AT_ALL for node, _, _, _ in order}

        def value(s: Any) -> tuple:
            if s is True:
                return ANYTHING
            if s is False:
                return NOTHING_AT_ALL
            return self.memo[(self.exact, id(s))] if (self.exact, id(s)) in self.memo else values[id(s)]

        changed = True
        while changed:  # Kleene iteration from "no clause" up to the least solution
            changed = False
            for node, where, atom, parts in reversed(order):
                got = ((atom,),) if atom is not None else ANYTHING
                subsume = id(node) not in self.keep_all
                for kind, subs, paths in parts:
                    if kind == "all":
                        for s, at in zip(subs, paths):
                            got = product(got, value(s), at, subsume)
                    elif kind == "some" and not subsume:  # one or more hold (unevaluated.py)
                        got = product(got, subsets([value(s) for s in subs], where), where, subsume)
                    else:
                        got = product(got, union_of((c for s in subs for c in value(s)), subsume), where, subsume)
                if id(node) in self.pending:
                    got = tuple(self._evaluated(c, self.pending[id(node)]) for c in got)
                if as_sets(got) != as_sets(values[id(node)]):  # (the same clauses in another order: no change)
                    values[id(node)] = got
                    changed = True
        for node, _, _, _ in order:  # (a schema met later reaches at most these: `via_ref` holds for it too)
            self.memo[(self.exact, id(node))] = values[id(node)]
            self.via_ref[(self.exact, id(node))] = via_ref
            self.keep.append(node)
        return list(value(schema)), via_ref

    def _evaluated(self, clause: tuple, pending: dict) -> tuple:
        """`clause` with the atom its node's unevaluated keywords ask of it (unevaluated.py)."""
        extra = evaluation_atom([self.atoms[k] for k in clause if k in self.evaluating], pending)
        if extra is None:
            return clause
        key = json.dumps(extra, sort_keys=True, default=repr)
        self.atoms.setdefault(key, extra)
        self.evaluating.add(key)
        return clause + (key,) if key not in clause else clause

    def merged(self, clause: tuple, path: str) -> Any:
        """The atoms of `clause` merged into one schema (False when no value meets them all)."""
        out: Any = {}
        for key in clause:
            out = merge(self.conv, out, self.atoms[key], path)
            if out is False:
                return False
        return out
