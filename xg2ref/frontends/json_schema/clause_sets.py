"""Sets of clauses for the JSON Schema front end's in-place applicators (XGrammar-2 §2.1; merge.py
reads a schema as a union of clauses, each a conjunction of atoms): their product, union and
the subsets an `anyOf` under unevaluated keywords becomes.

A clause is a tuple of atom keys, in the order their keywords merge; as a language it is the
set of its atoms. A union of clauses may drop every clause that holds another one (a clause
with more atoms allows fewer values), unless what the clauses evaluate matters
(unevaluated.py): there a clause with more atoms may evaluate more members, so it stays.

    A x B                   {a + b : a in A, b in B}  (at most MAX_BRANCH_PRODUCT clauses when
                                                       both sides are choices)
    subsets(V_1, ..., V_n)  union over S != {} of the product of V_i, i in S  (n <= MAX_SUBSET_BRANCHES)
"""

from __future__ import annotations

from ...exceptions import InvalidJSONError

# an allOf of anyOf / oneOf lists becomes their product; at most this many clauses
MAX_BRANCH_PRODUCT = 256
# an anyOf under unevaluated keywords past this many branches: each subset would be a clause
MAX_SUBSET_BRANCHES = 6

ANYTHING = ((),)  # one clause without atoms: any value
NOTHING_AT_ALL = ()  # no clause: no value


def minimal(clauses) -> tuple:
    """`clauses` in their order, less repeats and every clause that holds another one (a clause
    is a tuple of atom keys, in the order their keywords merge; as a language it is a set).
    Only smaller clauses can be held, so each is compared with the kept ones of smaller size."""
    items = list(clauses)
    sets = [frozenset(c) for c in items]
    kept_by_size: dict[int, list] = {}
    keep = [False] * len(items)
    seen = set()
    for i in sorted(range(len(items)), key=lambda i: len(sets[i])):
        atoms = sets[i]
        if atoms in seen:
            continue
        seen.add(atoms)
        if any(other < atoms for size, kept in kept_by_size.items() if size < len(atoms) for other in kept):
            continue
        kept_by_size.setdefault(len(atoms), []).append(atoms)
        keep[i] = True
    return tuple(c for c, k in zip(items, keep) if k)


def product(a: tuple, b: tuple, path: str, subsume: bool = True) -> tuple:
    """a x b (module docstring). Only a product of two choices is bounded: a union of many
    branches stays as long as it is written. Without `subsume`, a clause holding another
    stays (unevaluated.py: it may evaluate more)."""
    if len(a) > 1 and len(b) > 1 and len(a) * len(b) > MAX_BRANCH_PRODUCT:
        raise TooManyBranches(f"{path}: allOf of anyOf / oneOf lists makes more than {MAX_BRANCH_PRODUCT} branches")
    return union_of((x + tuple(k for k in y if k not in x) for x in a for y in b), subsume)


def union_of(clauses, subsume: bool) -> tuple:
    if subsume:
        return minimal(clauses)
    out, seen = [], set()
    for c in clauses:
        if frozenset(c) not in seen:
            seen.add(frozenset(c))
            out.append(c)
    return tuple(out)


def subsets(values: list, path: str) -> tuple:
    """The clauses of "one or more of these hold, each evaluating": every non-empty subset of
    the branches (their clauses multiplied), unevaluated.py."""
    if len(values) > MAX_SUBSET_BRANCHES:
        raise TooManyBranches(f"{path}: anyOf of {len(values)} branches under unevaluated keywords "
                              f"(each subset is a clause: at most {MAX_SUBSET_BRANCHES})")
    out: list = []
    for mask in range(1, 1 << len(values)):
        got = ANYTHING
        for i, v in enumerate(values):
            if mask >> i & 1:
                got = product(got, v, path, subsume=False)
        out.extend(got)
    return union_of(out, False)


class TooManyBranches(InvalidJSONError):
    pass


def as_sets(clauses: tuple) -> frozenset:
    return frozenset(frozenset(c) for c in clauses)
