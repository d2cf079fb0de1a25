"""`contains`, `minContains` and `maxContains` for the JSON Schema front end (XGrammar-2 §2.1;
specs/05, "Counted items"): arrays in which the number of items a schema C matches lies in a
range, as a grammar.

Each item either meets C (a *hit*: the item's schema and C) or breaks it (a *miss*: the item's
schema and the complement of C, negation.py). The array is read left to right with two numbers
in its rule name, the items written i and the hits h:

    R(i, h)  ::=  ""                        when lo <= i and minContains <= h (<= maxContains)
               |  sep_i  hit_i   R(i + 1, h + 1)      (while h < maxContains)
               |  sep_i  miss_i  R(i + 1, h)          (while i < maxItems)

where item i is prefix item i or, past the prefix, the `items` schema, and sep_0 is empty. The
numbers stop growing where they stop mattering: without `maxItems`, i stays at max(prefix, lo)
(the rule then reads further items in a loop); without `maxContains`, h stays at `minContains`.
So a schema gets at most (i's values) x (h's values) rules; past `MAX_COUNTED_STATES` the
keyword is recorded as an approximation and left out (not enforced), as is a `contains` whose
complement negation.py cannot write.
"""

from __future__ import annotations

from typing import Optional

from ...grammar.ir import EPSILON, ByteString, Expr, RuleRef
from .keywords import count
from .lexical import NOTHING, choice, seq
from .negation import Inexact

MAX_COUNTED_STATES = 2000


def contains_range(conv, schema: dict, path: str) -> Optional[tuple]:
    """(C, minContains, maxContains) when `contains` constrains the array, else None."""
    if "contains" not in schema:
        return None
    lo = count(schema, "minContains", path, 1)
    hi = count(schema, "maxContains", path, None)
    if lo == 0 and hi is None:
        return None
    return schema["contains"], lo, hi


def counted_items(conv, schema: dict, prefix: list, items, lo: int, hi: Optional[int], level: int, path: str,
                  sep: Expr) -> Optional[tuple]:
    """(whether the empty array is valid, what the brackets of a non-empty one hold) under
    `schema` with its `contains` range enforced (module docstring); None when the keyword is
    left out (recorded in `conv.approximations`)."""
    found = contains_range(conv, schema, path)
    if found is None:
        return None
    target, c_lo, c_hi = found
    if c_hi is not None and c_hi < c_lo:
        return False, NOTHING
    try:
        negated = {"anyOf": conv.clauses.negations.pieces(target, f"{path}.contains")}
    except Inexact as err:
        conv.approximations.append((f"{path}.contains", "contains", f"not enforced: {err}"))
        return None
    i_cap = hi if hi is not None else max(len(prefix), lo, 1)  # (item 0, without separator, is read once)
    h_cap = c_hi + 1 if c_hi is not None else c_lo
    if (i_cap + 1) * (h_cap + 1) > MAX_COUNTED_STATES:
        conv.approximations.append((f"{path}.contains", "contains", "not enforced: too many counted states"))
        return None
    conv.clauses.keep.append(negated)
    serial = next(conv.serial)
    names: dict = {}
    kinds: dict = {}

    def item(i: int, hit: bool) -> Expr:
        key = (min(i, len(prefix)), hit)
        if key not in kinds:
            base = prefix[i] if i < len(prefix) else items
            sub = {"allOf": [base, target if hit else negated]}
            conv.clauses.keep.append(sub)
            kinds[key] = conv.visit(sub, level + 1, f"{path}.{'prefixItems' if i < len(prefix) else 'items'}")
        return kinds[key]

    def items_from(i: int, h: int) -> list:
        """The alternatives that read item i next (i items and h hits so far)."""
        if (hi is not None and i >= hi) or (i >= len(prefix) and items is False):
            return []
        lead = sep if i else EPSILON
        parts = [seq(lead, item(i, True), rule(i + 1, h + 1))] if c_hi is None or h < c_hi else []
        return parts + [seq(lead, item(i, False), rule(i + 1, h))]

    def rule(i: int, h: int) -> Expr:
        i = min(i, i_cap) if hi is None else i
        h = min(h, c_lo) if c_hi is None else h
        if (i, h) in names:
            return RuleRef(names[(i, h)])
        name = names[(i, h)] = conv.new_rule(f"arr{serial}_c{i}_{h}")
        parts = ([EPSILON] if i >= lo and h >= c_lo else []) + items_from(i, h)
        conv.set_rule(name, choice(*parts) if parts else NOTHING)
        return RuleRef(name)

    first = items_from(0, 0)
    return lo == 0 and c_lo == 0, choice(*first) if first else NOTHING


def bracketed(conv, body: Expr, lv: int, empty_ok: bool) -> Expr:
    """`[` body `]` in the layout, and `[]` when the array may be empty."""
    empty = seq(ByteString(b"["), conv.layout.empty(), ByteString(b"]"))
    if body == NOTHING:
        return empty if empty_ok else NOTHING
    full = seq(ByteString(b"["), conv.layout.open(lv), body, conv.layout.close(lv), ByteString(b"]"))
    return choice(empty, full) if empty_ok else full
