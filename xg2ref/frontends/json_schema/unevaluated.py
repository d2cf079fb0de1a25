"""`unevaluatedItems` and `unevaluatedProperties` for the JSON Schema front end (XGrammar-2 §2.1;
specs/05, the keyword table): where the items (members) left unevaluated are fixed by the
schema, the keyword becomes `items` (`additionalProperties`) of a merged schema.

    no in-place subschema evaluates items (members)     |-  U takes the place of items /
                                                            additionalProperties (an item
                                                            `contains` matches is evaluated)
    those that do are unconditional ($ref, a fixed       |-  their members are declared here too
    $dynamicRef, allOf)                                       (`true`), then as above
    a conditional one (anyOf, oneOf, if, ...) or an      |-  not enforced (which members are left
    unfollowed $dynamicRef evaluates some                     depends on the branch that holds)
"""

from __future__ import annotations

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


def fold_unevaluated(conv, node: dict, own: dict, path: str) -> dict:
    """`own` (the keywords of `node` without combinators) with `unevaluatedItems` /
    `unevaluatedProperties` turned into `items` / `additionalProperties` where that is exact,
    and dropped (not enforced) where it is not (module docstring)."""
    if "unevaluatedItems" not in own and "unevaluatedProperties" not in own:
        return own
    out = {k: v for k, v in own.items() if k not in ("unevaluatedItems", "unevaluatedProperties")}
    if "unevaluatedItems" in own:
        rest = own["unevaluatedItems"]
        if _evaluates(conv, node, EVALUATES_ITEMS, path):
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
        elif static is None:
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


