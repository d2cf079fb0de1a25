"""`contains`, `minContains`, `maxContains` and `uniqueItems` for the JSON Schema front end
(XGrammar-2 §2.1; specs/05, the keyword table): arrays in which the number of items a schema C
matches lies in a range, and arrays of distinct items over finite domains, as grammars.

Each item either meets C (a *hit*: the item's schema and C) or breaks it (a *miss*: the item's
schema and the complement of C, negation.py). The array is read left to right with two numbers
in its rule name, the items written i and the hits h:

    R(i, h)  ::=  ""                        when lo <= i and minContains <= h (<= maxContains)
               |  sep_i  hit_i   R(i + 1, h + 1)      (while h < maxContains)
               |  sep_i  miss_i  R(i + 1, h)          (while i < maxItems)

where item i is prefix item i or, past the prefix, the `items` schema, and sep_0 is empty. The
numbers stop growing where they stop mattering: without `maxItems`, i stays at max(prefix, lo)
(the rule then reads further items in a loop); without `maxContains`, h stays at `minContains`.
An allOf of several `contains` (merge.py keeps each) makes h a vector, one count per
`contains`, and each item one of 2^k kinds (a hit or a miss of each).
So a schema gets at most (i's values) x (h's values) rules; past `MAX_COUNTED_STATES` the
keyword is recorded as an approximation and left out (not enforced), as is a `contains` whose
complement negation.py cannot write.
"""

from __future__ import annotations

import itertools
from typing import Optional

from ...grammar.ir import EPSILON, ByteString, Expr, RuleRef
from .keywords import MORE_CONTAINS, count
from .lexical import NOTHING, choice, seq
from .negation import Inexact
from .members import members_in_any_order

MAX_COUNTED_STATES = 2000
MAX_CONTAINS = 3  # `contains` counted at once in one array (each item is one of 2^k kinds)


def contains_range(conv, schema: dict, path: str) -> list:
    """[(C, minContains, maxContains)] of the `contains` that constrain the array (an allOf
    of several keeps each: merge.py's MORE_CONTAINS)."""
    if "contains" not in schema:
        return []
    lo = count(schema, "minContains", path, 1)
    hi = count(schema, "maxContains", path, None)
    ranges = [(schema["contains"], lo, hi)] + [tuple(r) for r in schema.get(MORE_CONTAINS) or []]
    return [(c, lo, hi) for c, lo, hi in ranges if not (lo == 0 and hi is None)]


def counted_items(conv, schema: dict, prefix: list, items, lo: int, hi: Optional[int], level: int, path: str,
                  sep: Expr) -> Optional[tuple]:
    """(whether the empty array is valid, what the brackets of a non-empty one hold) under
    `schema` with its `contains` ranges enforced (module docstring; with k of them, h is a
    vector and each item one of 2^k kinds: hit or miss of each); None when the keyword is left
    out (recorded in `conv.approximations`)."""
    ranges = contains_range(conv, schema, path)
    if not ranges:
        return None
    if any(c_hi is not None and c_hi < c_lo for _, c_lo, c_hi in ranges):
        return False, NOTHING
    if len(ranges) > MAX_CONTAINS:
        conv.approximations.append((f"{path}.contains", "contains", f"not enforced: more than {MAX_CONTAINS} "
                                    "contains in one allOf"))
        return None
    try:
        negated = [{"anyOf": conv.clauses.negations.pieces(c, f"{path}.contains")} for c, _, _ in ranges]
    except Inexact as err:
        conv.approximations.append((f"{path}.contains", "contains", f"not enforced: {err}"))
        return None
    i_cap = hi if hi is not None else max(len(prefix), lo, 1)  # (item 0, without separator, is read once)
    states = i_cap + 1
    for _, c_lo, c_hi in ranges:
        states *= (c_hi + 1 if c_hi is not None else c_lo) + 1
    if states > MAX_COUNTED_STATES:
        conv.approximations.append((f"{path}.contains", "contains", "not enforced: too many counted states"))
        return None
    conv.clauses.keep.append(negated)
    serial = next(conv.serial)
    names: dict = {}
    kinds: dict = {}
    hits_of = list(itertools.product((True, False), repeat=len(ranges)))  # the kinds of an item

    def item(i: int, hits: tuple) -> Expr:
        key = (min(i, len(prefix)), hits)
        if key not in kinds:
            base = prefix[i] if i < len(prefix) else items
            sub = {"allOf": [base] + [c if hit else n for (c, _, _), n, hit in zip(ranges, negated, hits)]}
            conv.clauses.keep.append(sub)
            kinds[key] = conv.visit(sub, level + 1, f"{path}.{'prefixItems' if i < len(prefix) else 'items'}")
        return kinds[key]

    def items_from(i: int, h: tuple) -> list:
        """The alternatives that read item i next (i items and h hits of each so far)."""
        if (hi is not None and i >= hi) or (i >= len(prefix) and items is False):
            return []
        lead = sep if i else EPSILON
        parts = []
        for hits in hits_of:
            if all(not hit or c_hi is None or n < c_hi for (_, _, c_hi), n, hit in zip(ranges, h, hits)):
                parts.append(seq(lead, item(i, hits), rule(i + 1, tuple(n + hit for n, hit in zip(h, hits)))))
        return parts

    def rule(i: int, h: tuple) -> Expr:
        i = min(i, i_cap) if hi is None else i
        h = tuple(min(n, c_lo) if c_hi is None else n for (_, c_lo, c_hi), n in zip(ranges, h))
        if (i, h) in names:
            return RuleRef(names[(i, h)])
        name = names[(i, h)] = conv.new_rule(f"arr{serial}_c{i}_{'_'.join(map(str, h))}")
        done = i >= lo and all(n >= c_lo for (_, c_lo, _), n in zip(ranges, h))
        parts = ([EPSILON] if done else []) + items_from(i, h)
        conv.set_rule(name, choice(*parts) if parts else NOTHING)
        return RuleRef(name)

    first = items_from(0, (0,) * len(ranges))
    return lo == 0 and all(c_lo == 0 for _, c_lo, _ in ranges), choice(*first) if first else NOTHING


# ---- uniqueItems over finite item domains ---------------------------------------------------------
#
# When every item's schema allows finitely many values (booleans, null, `enum`, `const`, integers
# in a short range), "no two items equal" is a condition on a finite set:
#
#     a tuple (prefixItems, no further items)   |-  every tuple of distinct values, listed (at most
#                                                   MAX_UNIQUE_ARRAYS arrays)
#     no prefix, items over a domain D          |-  the values of D in any order, each at most once:
#                                                   an unordered rule (members.members_in_any_order)
#                                                   with D's values as its members
#
# Over an unbounded domain (strings, numbers, objects) the keyword is recorded as an
# approximation and left out (not enforced).

MAX_UNIQUE_ARRAYS = 256
MAX_DOMAIN = 64  # values of an item schema listed as its finite domain


def finite_domain(conv, schema, path: str) -> Optional[list]:
    """The values `schema` allows when they are few (MAX_DOMAIN), else None."""
    from .values import json_equal, value_meets

    schema = conv.deref(schema, path)
    if schema is False:
        return []
    if not isinstance(schema, dict) or any(k in schema for k in ("anyOf", "oneOf", "allOf", "not", "if", "$ref")):
        return None
    if "const" in schema:
        values = [schema["const"]]
    elif isinstance(schema.get("enum"), list):
        values = list(schema["enum"])
    else:
        types = schema.get("type")
        types = [types] if isinstance(types, str) else types
        if not isinstance(types, list) or not types:
            return None
        values = []
        for t in types:
            if t == "boolean":
                values += [False, True]
            elif t == "null":
                values.append(None)
            elif t == "integer" and isinstance(schema.get("minimum"), int) and isinstance(schema.get("maximum"), int) \
                    and schema["maximum"] - schema["minimum"] < MAX_DOMAIN:
                values += list(range(schema["minimum"], schema["maximum"] + 1))
            else:
                return None
    kept = []
    for v in values:
        if value_meets(v, schema, conv.exact_formats) and not any(json_equal(v, w) for w in kept):
            kept.append(v)
    return kept if len(kept) <= MAX_DOMAIN else None


def unique_items(conv, schema: dict, prefix: list, items, lo: int, hi: Optional[int], level: int, path: str,
                 sep: Expr) -> Optional[tuple]:
    """(whether `[]` is valid, the non-empty arrays) of distinct items over finite domains
    (above); None when the domains are not finite (recorded)."""

    from .values import json_equal

    if "contains" in schema:
        conv.approximations.append((f"{path}.uniqueItems", "uniqueItems", "not enforced beside contains"))
        return None
    if prefix and items is False:
        domains = [finite_domain(conv, p, f"{path}.prefixItems[{i}]") for i, p in enumerate(prefix)]
        if all(d is not None for d in domains) and _tuples(domains) <= MAX_UNIQUE_ARRAYS:
            arrays = []
            for n in range(max(lo, 1), min(len(prefix), hi if hi is not None else len(prefix)) + 1):
                for combo in itertools.product(*domains[:n]):
                    if all(not json_equal(a, b) for i, a in enumerate(combo) for b in combo[i + 1:]):
                        arrays.append(combo)
            bodies = [seq(*[x for j, v in enumerate(combo) for x in ((sep,) if j else ()) + (conv.literal(v, level + 1),)])
                      for combo in arrays]
            return lo == 0, choice(*bodies) if bodies else NOTHING
    elif not prefix and items is not False:
        domain = finite_domain(conv, items, f"{path}.items")
        if domain is not None and lo <= 1 and (hi is None or hi >= len(domain)):
            if not domain:
                return lo == 0, NOTHING
            members = [conv.literal(v, level + 1) for v in domain]
            body = members_in_any_order(conv, next(conv.serial), members, [False] * len(members), sep, None,
                                        extra=NOTHING)
            return lo == 0, body
    conv.approximations.append((f"{path}.uniqueItems", "uniqueItems",
                                "not enforced: an item domain that is not finite (or counted beside it)"))
    return None


def _tuples(domains: list) -> int:
    total = 1
    for d in domains:
        total *= max(len(d), 1)
    return total


def bracketed(conv, body: Expr, lv: int, empty_ok: bool) -> Expr:
    """`[` body `]` in the layout, and `[]` when the array may be empty."""
    empty = seq(ByteString(b"["), conv.layout.empty(), ByteString(b"]"))
    if body == NOTHING:
        return empty if empty_ok else NOTHING
    full = seq(ByteString(b"["), conv.layout.open(lv), body, conv.layout.close(lv), ByteString(b"]"))
    return choice(empty, full) if empty_ok else full
