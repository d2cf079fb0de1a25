"""`unevaluatedItems` and `unevaluatedProperties` for the JSON Schema front end (XGrammar-2 §2.1;
specs/05, the keyword table): where the items (members) left unevaluated are fixed by the
schema, the keyword becomes `items` (`additionalProperties`) of a merged schema.

    no in-place subschema evaluates items (members)     |-  U takes the place of items /
                                                            additionalProperties (an item
                                                            `contains` matches is evaluated)
    those that do are unconditional ($ref, a fixed       |-  their members are declared here too
    $dynamicRef, allOf)                                       (`true`), then as above
    a conditional one (anyOf, oneOf, if, ...)            |-  per clause (below)
    an unfollowed $dynamicRef evaluates some             |-  not enforced (recorded)

Per clause. The converter reads a schema as a union of clauses, each a conjunction of the
atoms of the subschemas that hold together (merge.py). Within one clause the members (items)
the in-place subschemas evaluate are fixed: the names and patterns of its atoms' `properties`
and `patternProperties` (every member when one has `additionalProperties` or its own
unevaluated keyword), the longest `prefixItems` and the items a `contains` matches. So the
clause takes one more atom, `evaluation_atom`, that declares those members `true` and leaves the
others to U. A failing subschema evaluates nothing: complements (negation.py) are silent
atoms. Where several branches of an `anyOf` may hold at once, every member of each branch
that holds is evaluated; the clauses are then each non-empty subset of branches together
(and no clause is dropped for holding another):

    anyOf[B1..Bn] under U  =  union over S != {} of  (and of B_i, i in S) with ev = union of ev(B_i)

This is exact: an instance whose passing branches are P meets the clause of P, whose ev is
the largest, and a clause of S within P asks no less of it, since U binds fewer members the
more are evaluated.

For a complement (negation.py), `as_clauses` writes the same union as a schema without U, when
the in-place subschemas are unconditional but for one `anyOf` of unconditional branches:

    {anyOf: [B_1..B_n], unevaluatedProperties: U, rest}
        =  {allOf: [rest, {anyOf: [{allOf: [B_i for i in S] + [E(S)]} for S != {}]}]}
    E(S) = {properties: {m: true}, patternProperties: {p: true}, additionalProperties: U}
           for the names m and patterns p that rest and the B_i, i in S, evaluate
"""

from __future__ import annotations

import itertools
from typing import Optional

from .clause_sets import MAX_SUBSET_BRANCHES

EVALUATES_ITEMS = ("prefixItems", "items", "additionalItems", "contains", "unevaluatedItems")
EVALUATES_MEMBERS = ("properties", "patternProperties", "additionalProperties", "unevaluatedProperties")


def _in_place(conv, node: dict, path: str) -> list:
    """The subschemas `node` applies to the value itself (not to its items or members)."""
    out = []
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            out.extend(node[key])
    if isinstance(node.get("$ref"), str):
        out.append(conv.resolve(node["$ref"], path, node))
    if dynamic_target(conv, node, path) is not None:
        out.append(dynamic_target(conv, node, path))
    out.extend(node[k] for k in ("if", "then", "else") if k in node)
    if isinstance(node.get("dependentSchemas"), dict):
        out.extend(node["dependentSchemas"].values())
    return out


def dynamic_target(conv, node: dict, path: str):
    """Where the node's `$dynamicRef` lands when that is fixed (references.py), else None."""
    ref = node.get("$dynamicRef")
    return conv.refs.resolve_dynamic(ref, path, node) if isinstance(ref, str) else None


def _evaluates(conv, node: dict, keys: tuple, path: str) -> bool:
    """Whether a subschema `node` applies in place (transitively) uses one of `keys`."""
    if "$dynamicRef" in node and dynamic_target(conv, node, path) is None:
        return True  # (a dynamic reference this conversion cannot follow: what it evaluates is unknown)
    seen, stack = set(), _in_place(conv, node, path)
    while stack:
        sub = stack.pop()
        if not isinstance(sub, dict) or id(sub) in seen:
            continue
        seen.add(id(sub))
        if any(k in sub for k in keys) or ("$dynamicRef" in sub and dynamic_target(conv, sub, path) is None):
            return True
        stack.extend(_in_place(conv, sub, path))
    return False


def fold_unevaluated(conv, node: dict, own: dict, path: str, pending: Optional[dict] = None) -> dict:
    """`own` (the keywords of `node` without combinators) with `unevaluatedItems` /
    `unevaluatedProperties` turned into `items` / `additionalProperties` where that is exact,
    left to each clause (set in `pending` as "items" / "properties", when given) where the
    in-place subschemas decide, and dropped (not enforced, recorded) where neither is
    (module docstring)."""
    if "unevaluatedItems" not in own and "unevaluatedProperties" not in own:
        return own
    out = {k: v for k, v in own.items() if k not in ("unevaluatedItems", "unevaluatedProperties")}
    per_clause = pending is not None and not _unfollowed(conv, node, path)
    if "unevaluatedItems" in own:
        rest = own["unevaluatedItems"]
        if _evaluates(conv, node, EVALUATES_ITEMS, path) and per_clause:
            pending["items"], rest = rest, None
        elif _evaluates(conv, node, EVALUATES_ITEMS, path):
            if rest is not True:
                conv.approximations.append((f"{path}.unevaluatedItems", "unevaluatedItems",
                                            "not enforced: in-place subschemas evaluate items"))
            rest = None if rest is False else True  # not enforced: strict mode must not forbid what it allows
        elif "contains" in own and rest is not True:
            rest = {"anyOf": [rest, own["contains"]]}  # an item `contains` matches is evaluated
        if rest is not None:
            out.setdefault("additionalItems" if isinstance(own.get("items"), list) else "items", rest)
    if "unevaluatedProperties" in own:
        rest = own["unevaluatedProperties"]
        static = _evaluates(conv, node, EVALUATES_MEMBERS, path) and _static_members(conv, node, path)
        if static is not False and static is not None:  # the members the in-place schemas declare, always
            names, patterns, everything = static
            if everything or "additionalProperties" in own:
                rest = None  # every member is evaluated already
            else:
                out["properties"] = {**{n: True for n in names}, **(own.get("properties") or {})}
                if patterns:
                    out["patternProperties"] = {**{p: True for p in patterns}, **(own.get("patternProperties") or {})}
        elif static is None and per_clause:
            pending["properties"], rest = rest, None
        elif static is None:
            if rest is not True:
                conv.approximations.append((f"{path}.unevaluatedProperties", "unevaluatedProperties",
                                            "not enforced: which members are evaluated depends on the branches taken"))
            rest = None if rest is False else True  # not enforced: which members are evaluated depends on branches
        if rest is not None:
            out.setdefault("additionalProperties", rest)
    return out


# in-place applicators whose evaluation depends on which branch holds
CONDITIONAL = ("anyOf", "oneOf", "if", "then", "else", "dependentSchemas", "dependencies")


def _static_members(conv, node: dict, path: str):
    """(names, patterns, everything) of the members the in-place subschemas of `node` evaluate
    when they are unconditional (`$ref`, `$dynamicRef` with a fixed target, `allOf`; `not`
    evaluates nothing), or None when a conditional applicator (CONDITIONAL) is among them."""
    names, patterns, everything = [], [], False
    seen, stack = {id(node)}, [node]
    while stack:
        sub = stack.pop()
        if any(k in sub for k in CONDITIONAL) or ("$dynamicRef" in sub and dynamic_target(conv, sub, path) is None):
            return None
        children = list(sub.get("allOf") or []) if isinstance(sub.get("allOf"), list) else []
        if isinstance(sub.get("$ref"), str):
            children.append(conv.resolve(sub["$ref"], path, sub))
        if "$dynamicRef" in sub:
            children.append(dynamic_target(conv, sub, path))
        for child in children:
            if child is True or id(child) in seen:
                continue
            if not isinstance(child, dict):
                continue
            seen.add(id(child))
            names += list((child.get("properties") or {}).keys())
            patterns += list((child.get("patternProperties") or {}).keys())
            everything = everything or "additionalProperties" in child or "unevaluatedProperties" in child
            stack.append(child)
    return names, patterns, everything




def _unfollowed(conv, node: dict, path: str) -> bool:
    """Whether a `$dynamicRef` this conversion cannot follow is among the in-place subschemas."""
    return bool(in_place_subtree(conv, node, path, dynamic_unknown=True))


def in_place_subtree(conv, node: dict, path: str, dynamic_unknown: bool = False) -> set:
    """The ids of the schemas `node` applies in place, transitively (itself included); with
    `dynamic_unknown`, only those holding a `$dynamicRef` that is not followed."""
    seen, out, stack = set(), set(), [node]
    while stack:
        sub = stack.pop()
        if not isinstance(sub, dict) or id(sub) in seen:
            continue
        seen.add(id(sub))
        unknown = "$dynamicRef" in sub and dynamic_target(conv, sub, path) is None
        if unknown or not dynamic_unknown:
            out.add(id(sub))
        stack.extend(_in_place(conv, sub, path))
    return out


def evaluation_atom(atoms: list, pending: dict) -> Optional[dict]:
    """The atom a clause takes for its node's unevaluated keywords (`pending`), given the
    keywords of the clause's evaluating atoms (module docstring); None when every member and
    item is evaluated already."""
    out = {}
    if "properties" in pending:
        names, patterns, everything = [], [], False
        for a in atoms:
            names += list(a["properties"]) if isinstance(a.get("properties"), dict) else []
            patterns += list(a["patternProperties"]) if isinstance(a.get("patternProperties"), dict) else []
            everything = everything or "additionalProperties" in a
        if not everything:
            out["properties"] = {n: True for n in dict.fromkeys(names)}
            if patterns:
                out["patternProperties"] = {p: True for p in dict.fromkeys(patterns)}
            out["additionalProperties"] = pending["properties"]
    if "items" in pending:
        longest, everything, hits = 0, False, []
        for a in atoms:
            items = a.get("items")
            if isinstance(items, list):
                longest, everything = max(longest, len(items)), everything or "additionalItems" in a
            elif "items" in a:
                everything = True
            if isinstance(a.get("prefixItems"), list):
                longest = max(longest, len(a["prefixItems"]))
            if "contains" in a:
                hits.append(a["contains"])
        if not everything:
            rest = pending["items"]
            if hits and rest is not True:
                rest = {"anyOf": [rest] + hits}  # an item a `contains` matches is evaluated
            if longest:
                out["prefixItems"] = [True] * longest
            out["items"] = rest
    return out or None


def as_clauses(conv, schema: dict, path: str) -> Optional[dict]:
    """`schema`, whose `unevaluatedProperties` is not true, as a schema without that keyword
    (module docstring), or None where its evaluation is not of that form."""
    rest = {k: v for k, v in schema.items() if k not in ("unevaluatedProperties", "anyOf")}
    branches = schema.get("anyOf", [True])
    if not isinstance(branches, list) or not branches or len(branches) > MAX_SUBSET_BRANCHES:
        return None
    evaluated = [_evaluated_members(conv, b, path) for b in [rest] + branches]
    if any(e is None for e in evaluated):
        return None
    clauses = []
    for size in range(1, len(branches) + 1):
        for chosen in itertools.combinations(range(len(branches)), size):
            if any(branches[i] is False for i in chosen):
                continue
            names, patterns, everything = evaluated[0]
            for i in chosen:
                names, patterns, everything = (names + evaluated[i + 1][0], patterns + evaluated[i + 1][1],
                                               everything or evaluated[i + 1][2])
            atom = True if everything else {
                "properties": {n: True for n in dict.fromkeys(names)},
                **({"patternProperties": {p: True for p in dict.fromkeys(patterns)}} if patterns else {}),
                "additionalProperties": schema["unevaluatedProperties"]}
            clauses.append({"allOf": [branches[i] for i in chosen] + [atom]})
    return {"allOf": [rest, {"anyOf": clauses}]}


def _evaluated_members(conv, node, path: str):
    """(names, patterns, everything) that an unconditional `node` evaluates, itself and in
    place; None where a conditional applicator or an unfollowed reference decides."""
    if node is True or node is False:
        return [], [], False
    if not isinstance(node, dict):
        return None
    found = _static_members(conv, node, path)
    if found is None:
        return None
    names, patterns, everything = found
    own_names = list(node["properties"]) if isinstance(node.get("properties"), dict) else []
    own_patterns = list(node["patternProperties"]) if isinstance(node.get("patternProperties"), dict) else []
    return (own_names + names, own_patterns + patterns,
            everything or "additionalProperties" in node or "unevaluatedProperties" in node)
