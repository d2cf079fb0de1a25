"""JSON Schema objects as grammar IR, for `converter.py` (xgrammar's object conversion).

The members of an object, written `m_0 .. m_{n-1}` in the order of `properties` (then the
`required` names that `properties` does not list, with any value), then the additional members
(`patternProperties` and `additionalProperties`) after them, or in any order (`any_order`): the
rules of those shapes are in `members.py`; this module says what each member is.

An additional member's key is any string but the declared names (a trie of the names: at a
node the next character either follows a name, or leaves every name behind), unless
`propertyNames` says what keys look like; a pattern member's key is searched by its regex.
With `patternProperties`, an additional key also contains no match of any pattern (the value
of such a key answers to the pattern's schema): the complement of the union of the names and
the patterns' search languages, by subset construction (`regular.complement_of`).
"""

from __future__ import annotations

import itertools

from ...exceptions import InvalidJSONError
from ...grammar.ir import EPSILON, ByteString, CharClass, Choice, Expr, Repeat
from .lexical import (NOTHING, any_string_char, choice, encoded_char, json_encode_regex, json_string_literal,
                           seq)
from .keywords import ANNOTATIONS, MEMBERS, MORE_FORMATS, MORE_PATTERNS, PRESENT, WITNESS, count
from .members import _counted_member_rules, _member_rules, members_in_any_order
from .merge import merge_below
from .strings import pattern_languages, string_checks, string_regexes
from ...grammar.charsets import complement
from ..regex.parser import RegexError
from ...grammar.regular import (TooLarge, automaton, bounded_length, complement_automaton, complement_of,
                      intersection_automaton, language_is_empty, matches)



def _key_excluding(conv, names: list[str]) -> Expr:
    """The content of a JSON string key that decodes to none of `names`.

    Keys are written in canonical characters (raw, or the escapes JSON requires), so that a
    key's bytes decide which name it spells. Where no name holds a character that has an
    escaped form, the escapes are one shared rule; otherwise every character class is written
    out with its escapes.
    """
    from .lexical import RAW_FORBIDDEN
    from ...grammar.charsets import intersect, subtract

    key_char = conv.rule(("key_char",), "json_key_char", lambda: encoded_char([(0, 0x10FFFF)]))
    if not names:
        return Repeat(key_char, 0, None)
    anything = Repeat(key_char, 0, None)
    special = RAW_FORBIDDEN + ((0x2F, 0x2F),)
    plain = not any(intersect([(ord(c), ord(c)) for n in names for c in n], special))
    escaped = conv.rule(("key_escape",), "json_key_escape", lambda: encoded_char(list(special))) if plain else None

    def chars(ranges) -> Expr:
        if not plain:
            return encoded_char(ranges)
        raw = subtract(ranges, special)
        return choice(*([CharClass(tuple(raw))] if raw else []), escaped)

    def node(prefix: str) -> Expr:
        longer = sorted({n[len(prefix)] for n in names if len(n) > len(prefix) and n.startswith(prefix)})
        parts = [] if prefix in names else [EPSILON]
        others = complement([(ord(c), ord(c)) for c in longer])
        if others:
            parts.append(seq(chars(others), anything))
        for c in longer:
            parts.append(seq(encoded_char([(ord(c), ord(c))]), node(prefix + c)))
        return choice(*parts)

    return node("")


# WITNESS (negation.py: the complement of `additionalProperties` beside names N and patterns Q,
# or of one `patternProperties` entry p: S): the object has a member whose key K allows (outside
# N, no match of Q, a match of each `inside` pattern) and whose value meets V (the complement of
# the additional or pattern schema; true for `additionalProperties: false`). Either a member
# the object declares, its name in K, is there with a value in V as well, or one of its
# additional or pattern members has a key in K and a value in V too:
#
#     object with WITNESS  =  union over declared names d in K of  (object with d present, in V)
#                             | (object whose extra members include one with key in K, value in V)
#
# The second reads the extras as E* W E* (W: an extra member whose key is also in K and whose
# value is also in V): in schema order after the declared members, or with `any_order` as one
# more required member. Several witnesses W_1..W_k in one clause (at most MAX_WITNESSES, those no
# other implies): each is met by a declared member (the rest asked again of that object) or all
# the rest by extras, where one extra may meet several: for each partition of them into groups,
# a member per group whose key and value meet the whole group, E* G_1 E* G_2 E* in each order of
# the groups (with `any_order`: one more required member per group).
MAX_WITNESSES = 3
MAX_WITNESS_OBJECTS = 32  # copies of the object that several witnesses may take (past that: one fewer)
MAX_WITNESS_OBJECTS_PER_SCHEMA = 64  # copies all the witnesses of one conversion may take (past that: none)


def _copies(witnesses: list, names: list, witness_key) -> int:
    """How many objects `_with_witness` writes for `witnesses` beside the declared `names`."""
    if not witnesses:
        return 1
    extras = len(_partitions(list(range(len(witnesses)))))
    return extras + sum(_copies(witnesses[:i] + witnesses[i + 1:], names, witness_key)
                        for i, w in enumerate(witnesses) for d in names if witness_key(d, w))


def _with_witness(conv, schema: dict, level: int, path: str, loose: bool) -> Expr:
    from .values import witness_key
    witnesses = _strongest(schema[WITNESS])
    base = {k: v for k, v in schema.items() if k != WITNESS}
    if len(witnesses) > MAX_WITNESSES:
        conv.approximations.append((f"{path}.additionalProperties", "not additionalProperties",
                                    f"more than {MAX_WITNESSES} complements of additionalProperties or "
                                    f"patternProperties in one clause: {MAX_WITNESSES} are enforced"))
        witnesses = witnesses[:MAX_WITNESSES]
    names = list(base.get("properties") or {}) + list(base.get("required") or []) + list(base.get(PRESENT) or [])
    names = [d for d in dict.fromkeys(names) if isinstance(d, str)]
    while len(witnesses) > 1 and _copies(witnesses, names, witness_key) > MAX_WITNESS_OBJECTS:
        conv.approximations.append((f"{path}.additionalProperties", "not additionalProperties",
                                    f"{len(witnesses)} complements of additionalProperties or patternProperties in "
                                    f"one clause would copy the object more than {MAX_WITNESS_OBJECTS} times: one "
                                    f"fewer is enforced"))
        witnesses = witnesses[:-1]
    conv.witness_objects += _copies(witnesses, names, witness_key)
    if conv.witness_objects > MAX_WITNESS_OBJECTS_PER_SCHEMA:  # (a superset: the object without them)
        conv.approximations.append((f"{path}.additionalProperties", "not additionalProperties",
                                    f"not enforced: complements of additionalProperties or patternProperties would "
                                    f"write more than {MAX_WITNESS_OBJECTS_PER_SCHEMA} copies of objects"))
        return object_expr(conv, base, level, path, loose)
    members = base.get(MEMBERS) if isinstance(base.get(MEMBERS), dict) else {}

    def present(name: str, witness: dict, rest: list) -> dict:
        out = {**base, PRESENT: list(base.get(PRESENT) or []) + [name], **({WITNESS: rest} if rest else {})}
        if witness.get("value", True) is not True:
            out[MEMBERS] = {**members, name: merge_below(members.get(name, True), witness["value"])}
            conv.clauses.keep.append(out[MEMBERS][name])  # (a synthesized schema: its id keys the memos)
        return out
    alternatives = [object_expr(conv, present(d, w, witnesses[:i] + witnesses[i + 1:]), level, path, loose)
                    for i, w in enumerate(witnesses) for d in names if witness_key(d, w)]
    try:
        parts = [([pattern_search(p) for p in w.get("patterns", ())]
                  + [ByteString(n.encode("utf-8", "surrogatepass")) for n in w.get("names", ())],
                  [pattern_search(p) for p in w.get("inside", ())], w.get("value", True)) for w in witnesses]
    except (RegexError, TooLarge) as err:
        raise InvalidJSONError(f"{path}.patternProperties: {err}") from None
    for groups in _partitions(list(range(len(parts)))):
        alternatives.append(object_expr(conv, base, level, path, loose, witness=[_together(parts, g) for g in groups]))
    return choice(*alternatives)


def _partitions(items: list) -> list:
    """The partitions of `items` into groups, in each order of the groups."""
    def unordered(items: list) -> list:
        if not items:
            return [[]]
        out = []
        for rest in unordered(items[1:]):  # the first item joins a group, or is one alone
            out += [rest[:i] + [[items[0]] + rest[i]] + rest[i + 1:] for i in range(len(rest))] + [rest + [[items[0]]]]
        return out
    return [list(p) for groups in unordered(items) for p in itertools.permutations(groups)]


def _together(parts: list, group: list) -> tuple:
    """One witness for a member that meets every witness of `group`: (keys avoided, keys it is
    in, its value)."""
    value = True
    for i in group:
        value = merge_below(value, parts[i][2])
    return [x for i in group for x in parts[i][0]], [x for i in group for x in parts[i][1]], value


def _strongest(witnesses: list) -> list:
    """The witnesses no other one implies: a member with any value whose key avoids fewer
    names and patterns, and must match fewer, is there whenever the other's member is."""
    def implies(a: dict, b: dict) -> bool:
        return (b.get("value", True) is True
                and all(set(b.get(k, ())) <= set(a.get(k, ())) for k in ("names", "patterns", "inside")))
    kept: list = []
    for i, w in enumerate(witnesses):
        if not any(implies(v, w) and (not implies(w, v) or j < i) for j, v in enumerate(witnesses) if j != i):
            kept.append(w)
    return kept


def _witness_value(conv, sub, witness: tuple, level: int, path: str) -> Expr:
    """The value of a witness member whose schema in the object is `sub`: in both."""
    if witness[2] is True:
        return conv.visit(sub, level + 1, path)
    both = merge_below(sub, witness[2])
    conv.clauses.keep.append(both)
    return conv.visit(both, level + 1, path)


def pattern_search(pattern: str):
    """The regex IR (or automaton) of the strings in which `pattern` finds a match."""
    languages = pattern_languages(pattern)
    return languages[0] if len(languages) == 1 else intersection_automaton(languages)


def pattern_searches(patterns, path: str) -> list:
    """The search language of each pattern of a `patternProperties` map (InvalidJSONError at the
    offending pattern)."""
    out = []
    for pattern in patterns:
        try:
            out.append(pattern_search(pattern))
        except RegexError as err:
            raise InvalidJSONError(f"{path}.patternProperties.{pattern}: {err.message}") from None
        except TooLarge as err:
            raise InvalidJSONError(f"{path}.patternProperties.{pattern}: {err}") from None
    return out


def object_expr(conv, schema: dict, level: int, path: str, loose: bool = False, witness=None) -> Expr:
    """An object valid under `schema` (with `witness`, a list of (languages a key avoids,
    languages it is in, a value schema): for each, one of its extra members has such a key and
    value, in that order, above)."""
    if schema.get(WITNESS):
        return _with_witness(conv, schema, level, path, loose)
    lv = conv.level(level)
    layout = conv.layout
    props = schema.get("properties") or {}
    required = schema.get("required") or []
    patterns = schema.get("patternProperties") or {}
    if not isinstance(props, dict):
        raise InvalidJSONError(f"{path}.properties: must be an object")
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise InvalidJSONError(f"{path}.required: must be a list of strings")
    if not isinstance(patterns, dict):
        raise InvalidJSONError(f"{path}.patternProperties: must be an object")
    additional = schema.get("additionalProperties")
    if additional is None:
        # strict mode: none, unless the object has no `properties` keyword (as xgrammar: an empty
        # `properties` map is a declaration, `{}` only; `patternProperties` alone declares none)
        additional = loose or not conv.strict or "properties" not in schema
    searches = pattern_searches(patterns, path)
    runnable = [automaton(search) for search in searches]  # built once, run on every declared name
    regions = _pattern_regions(conv, list(patterns.items()), searches, path)
    props = _constrained_members(schema, props, additional, runnable)
    for name in schema.get(PRESENT) or []:  # members a complement asks for (negation.py)
        if name not in props and not any(matches(run, name) for run in runnable):
            if additional is False:
                return NOTHING  # the object does not take it: no object has it
            props = {**props, name: additional if isinstance(additional, dict) else True}
        required = list(required) + [name]
    declared = [(n, _member_schema(conv, n, s, patterns, runnable, schema, path), n in required)
                for n, s in props.items()]
    declared += [(n, _member_schema(conv, n, None, patterns, runnable, schema, path), True)
                 for n in dict.fromkeys(required) if n not in props]
    sep, key_sep = layout.item_sep(lv), layout.key_sep()
    members = []  # (a loop, not a comprehension: one frame less per nesting level of the schema)
    for n, s, _ in declared:
        value = conv.visit(s, level + 1, f"{path}.properties.{n}")
        members.append(seq(ByteString(json_string_literal(n)), key_sep, value))
    extras, witnesses = [], [[] for _ in witness or ()]  # (per witness: the extra members that meet it)
    names = _names_languages(conv, schema, path) if patterns else None
    if patterns and names is None and schema.get("propertyNames") not in (None, True):
        conv.approximations.append((f"{path}.propertyNames", "propertyNames",
                                    "not enforced on patternProperties' keys (only a pattern, format or enum is)"))
    for pattern, inside, outside, sub in regions:
        # a declared name the pattern matches is a member above (its schema merged with the
        # pattern's), so the pattern's own keys leave it out
        taken = [ByteString(n.encode("utf-8", "surrogatepass")) for n, _, _ in declared
                 if any(matches(runnable[i], n) for i in inside)]
        search, others = searches[inside[0]], [searches[j] for j in outside] + taken
        if len(inside) == 1 and not outside and not isinstance(search, tuple) and not taken and names is None:
            key = json_encode_regex(search)
        else:  # a lookahead, a declared name, propertyNames or a region: the key's automaton, a rule per state
            try:
                key = bounded_length([searches[i] for i in inside] + ([complement_automaton(others)] if others else [])
                                     + (names or []), 0, None, encoded_char, conv.new_rule, conv.set_rule)
            except TooLarge as err:
                raise InvalidJSONError(f"{path}.patternProperties.{pattern}: {err}") from None
        value = conv.visit(sub, level + 1, f"{path}.patternProperties.{pattern}")
        if value != NOTHING:
            extras.append(seq(ByteString(b'"'), key, ByteString(b'"'), key_sep, value))
            for w, found in zip(witness or (), witnesses):  # the same member, its key and value also w's
                avoided = w[0] + others
                inputs = ([searches[i] for i in inside] + ([complement_automaton(avoided)] if avoided else [])
                          + w[1] + (names or []))
                found.append(seq(ByteString(b'"'), _key_of(conv, inputs, path), ByteString(b'"'), key_sep,
                                 _witness_value(conv, sub, w, level, f"{path}.patternProperties.{pattern}")))
    if additional is not False:
        value = conv.visit(additional, level + 1, f"{path}.additionalProperties")
        if value != NOTHING:
            extras.append(seq(ByteString(b'"'), _additional_key(conv, schema, declared, path, searches),
                              ByteString(b'"'), key_sep, value))
            for w, found in zip(witness or (), witnesses):
                taken = searches + [ByteString(n.encode("utf-8", "surrogatepass")) for n, _, _ in declared] + w[0]
                key = _key_of(conv, ([complement_automaton(taken)] if taken else []) + w[1]
                              + _names_or_any(conv, schema, path), path)
                found.append(seq(ByteString(b'"'), key, ByteString(b'"'), key_sep,
                                 _witness_value(conv, additional, w, level, f"{path}.additionalProperties")))
    extra = choice(*extras)
    serial = next(conv.serial)
    open_, close = layout.open(lv), layout.close(lv)

    def tail(first: bool) -> Expr:
        if extra == NOTHING:
            return EPSILON if not first else NOTHING
        more = Repeat(seq(sep, extra), 0, None)
        return seq(extra, more) if first else more

    empty = seq(ByteString(b"{"), layout.empty(), ByteString(b"}"))
    counts = _member_counts(conv, schema, declared, path)
    if witness is not None and counts is not None and not conv.any_order:
        conv.approximations.append((f"{path}.additionalProperties", "not additionalProperties",
                                    "not enforced beside minProperties / maxProperties"))
        witness = None
    if witness is not None:  # E* W E* (above): the witness is one more required member, or in the tail
        found, plain = [choice(*ws) for ws in witnesses], tail
        if NOTHING in found:
            return NOTHING
        if conv.any_order and (declared or counts is not None):  # (counted with the others)
            members, declared = members + found, declared + [("", None, True)] * len(found)
        else:
            def tail(first: bool) -> Expr:  # noqa: F811  (the extras with the witnesses among them, in order)
                more = Repeat(seq(sep, extra), 0, None)
                lead = [choice(EPSILON, seq(plain(True), sep))] if first else [more, sep]
                return seq(*lead, *[x for i, f in enumerate(found) for x in ([sep] if i else []) + [f, more]])
            if not declared:
                return seq(ByteString(b"{"), open_, tail(True), close, ByteString(b"}"))
    unordered = conv.any_order and declared and (len(declared) > 1 or extra != NOTHING)
    if counts is not None and not unordered:  # minProperties / maxProperties counted in the rules
        empty_ok, body = _counted_member_rules(conv, serial, members, [r for _, _, r in declared], sep, extra, *counts)
        filled = seq(ByteString(b"{"), open_, body, close, ByteString(b"}")) if body != NOTHING else NOTHING
        return choice(*([empty] if empty_ok else []), *([filled] if filled != NOTHING else []))
    if unordered:
        body = members_in_any_order(conv, serial, members, [r for _, _, r in declared], sep, tail, extra=extra,
                                    counts=counts)
    else:
        body = _member_rules(conv, serial, members, [r for _, _, r in declared], sep, tail)
    filled = seq(ByteString(b"{"), open_, body, close, ByteString(b"}"))
    if counts is not None:  # (any_order: the repetition counted the members, at least one)
        lo, hi = counts
        if hi is not None and hi < lo:
            return NOTHING
        empty_ok = lo == 0 and not any(r for _, _, r in declared)
        return choice(*([empty] if empty_ok else []), *([filled] if body != NOTHING else []))
    # minProperties >= 1 drops the empty object and maxProperties 0 keeps only it; other counts
    # are not enforced (specs/05-front-ends.md)
    if schema.get("maxProperties") == 0:
        return NOTHING if any(r for _, _, r in declared) or witness is not None else empty
    if any(r for _, _, r in declared) or (schema.get("minProperties") or 0) >= 1 or witness is not None:
        return filled
    return choice(empty, filled)


def _constrained_members(schema: dict, props: dict, additional, runnable: list) -> dict:
    """`props` with the members a complement constrains (MEMBERS, negation.py): a declared one
    meets both schemas; another becomes a declared member with that schema where the object
    would take it (as an additional or a pattern member: its schema is met too, as for the
    others), and is left out where it would not. So a complement never opens a closed object."""
    constrained = schema.get(MEMBERS)
    if not isinstance(constrained, dict) or not constrained:
        return props
    out = dict(props)
    for name, sub in constrained.items():
        if name in out:
            out[name] = merge_below(out[name], sub)
        elif any(matches(run, name) for run in runnable):
            out[name] = sub  # (the pattern schemas join it in _member_schema)
        elif additional is not False:
            out[name] = merge_below(additional if isinstance(additional, dict) else True, sub)
    return out


def _member_schema(conv, name: str, own, patterns: dict, searches: list, schema: dict, path: str):
    """The schema the value of member `name` must meet: its `properties` schema (`own`; None
    for a required name that `properties` lacks) with every `patternProperties` schema whose
    pattern the name matches (merged, as allOf); a required name matched by no pattern and
    held by no `properties` takes an `additionalProperties` schema when one is given (when it
    is `false`, no object is valid; the member then takes any value, specs/05). A merge that is
    not supported leaves that pattern's schema unenforced on the member (specs/05)."""
    matched = [sub for sub, search in zip(patterns.values(), searches) if matches(search, name)]
    if own is None:
        extra = schema.get("additionalProperties")
        own = extra if isinstance(extra, dict) and not matched else True
    for sub in matched:
        try:
            own = conv.merge(conv.deref(own, path), conv.deref(sub, path), f"{path}.patternProperties")
        except InvalidJSONError:
            pass
    return own


# A key two or more patterns match answers to all their schemas. When patterns with different
# schemas overlap, the keys are split into regions, one per non-empty set T of patterns: the keys every
# pattern of T matches and no other does, whose value meets allOf of T's schemas (at most
# MAX_PATTERN_REGIONS patterns; past that, recorded as an approximation: a key meets one).
MAX_PATTERN_REGIONS = 4


def _pattern_regions(conv, patterns: list, searches: list, path: str) -> list:
    """[(label, indexes inside, indexes outside, schema)]: the members of `patternProperties`
    (above)."""
    plain = [(p, [i], [], sub) for i, (p, sub) in enumerate(patterns)]
    if not _overlapping(patterns, searches):
        return plain
    if len(patterns) > MAX_PATTERN_REGIONS:
        conv.approximations.append((f"{path}.patternProperties", "patternProperties",
                                    f"a key two of its {len(patterns)} overlapping patterns match meets only one "
                                    f"of their schemas (regions are written for at most {MAX_PATTERN_REGIONS})"))
        return plain
    regions = []
    for mask in range(1, 1 << len(patterns)):
        inside = [i for i in range(len(patterns)) if mask >> i & 1]
        outside = [j for j in range(len(patterns)) if not mask >> j & 1]
        try:
            exprs = [searches[i] for i in inside] + ([complement_automaton([searches[j] for j in outside])]
                                                     if outside else [])
            if language_is_empty(intersection_automaton(exprs)):
                continue
        except TooLarge as err:
            raise InvalidJSONError(f"{path}.patternProperties: overlapping patterns: {err}") from None
        subs = [patterns[i][1] for i in inside]
        sub = subs[0] if len(subs) == 1 else {"allOf": subs}
        conv.clauses.keep.append(sub)  # (a synthesized schema: its id keys the converter's memos)
        regions.append((" & ".join(patterns[i][0] for i in inside), inside, outside, sub))
    return regions


def _overlapping(patterns: list, searches: list) -> bool:
    """Whether two patterns with different schemas match a common key (`true` and `{}` are one
    schema: with two of them, a key meets both whichever it answers to)."""
    def same(a, b) -> bool:
        return a == b or (a in (True, {}) and b in (True, {}))
    for i in range(len(patterns)):
        for j in range(i + 1, len(patterns)):
            if same(patterns[i][1], patterns[j][1]):
                continue  # (the same schema: either one is both)
            try:
                if not language_is_empty(intersection_automaton([searches[i], searches[j]])):
                    return True
            except TooLarge:
                return True
    return False


def _names_languages(conv, schema: dict, path: str):
    """The languages (regex IR) every key must be in under `propertyNames`, for intersecting
    with a pattern member's key: an `enum`/`const` of names, or a `pattern`/`format` and length
    bounds. None when it says nothing, or says what is not intersected here (lookbehind...): the
    pattern members' keys then do not meet it (specs/05)."""
    names = schema.get("propertyNames")
    if names is None or names is True:
        return None
    names = conv.deref(names, f"{path}.propertyNames")
    if names is False:
        return [CharClass(())]
    if not isinstance(names, dict):
        raise InvalidJSONError(f"{path}.propertyNames: must be a schema")
    if "enum" in names or "const" in names:
        values = names["enum"] if "enum" in names else [names["const"]]
        if not isinstance(values, list):
            raise InvalidJSONError(f"{path}.propertyNames.enum: must be a list")
        from .values import value_meets
        strings = [ByteString(v.encode("utf-8", "surrogatepass")) for v in values
                   if isinstance(v, str) and value_meets(v, names, conv.exact_formats)]
        return [Choice(tuple(strings)) if len(strings) > 1 else strings[0] if strings else CharClass(())]
    string_only = not set(names) - ANNOTATIONS - {"type", "pattern", "format", MORE_PATTERNS, MORE_FORMATS,
                                                  "minLength", "maxLength"}
    if string_only and names.get("type", "string") == "string":
        languages = string_regexes(string_checks(names, conv.exact_formats), f"{path}.propertyNames")
        if languages is None:
            return None
        lo, hi = count(names, "minLength", path, 0), count(names, "maxLength", path, None)
        if lo or hi is not None:  # (any code point, lo..hi times)
            languages = languages + [Repeat(CharClass(((0, 0x10FFFF),)), lo, hi)]
        return languages or None
    return None


def _key_of(conv, languages: list, path: str) -> Expr:
    """What the quotes of a key in every one of `languages` (regex IR or automata) hold (any
    key for none)."""
    if not languages:
        return Repeat(conv.rule(("char",), "json_char", any_string_char), 0, None)
    try:
        return bounded_length(languages, 0, None, encoded_char, conv.new_rule, conv.set_rule)
    except TooLarge as err:
        raise InvalidJSONError(f"{path}: a key of a complement of additionalProperties: {err}") from None


def _names_or_any(conv, schema: dict, path: str) -> list:
    """`propertyNames` as languages a witness key must be in ([] for none; one this front end
    does not intersect is recorded as an approximation, and left out)."""
    if schema.get("propertyNames") in (None, True):
        return []
    names = _names_languages(conv, schema, path)
    if names is None:
        conv.approximations.append((f"{path}.propertyNames", "propertyNames",
                                    "not enforced on a complement's witness key (only a pattern, format, enum or "
                                    "lengths are)"))
        return []
    return names


def _additional_key(conv, schema: dict, declared: list, path: str, patterns: list) -> Expr:
    """What the quotes of an additional member's key hold: a key that is no declared name and
    contains no match of a `patternProperties` regex (`patterns`, as search IR)."""
    names_schema = schema.get("propertyNames")
    if patterns:
        taken = patterns + [ByteString(n.encode("utf-8", "surrogatepass")) for n, _, _ in declared]
        names = [] if names_schema is None or names_schema is True else _names_languages(conv, schema, path)
        if names is None:
            conv.approximations.append((f"{path}.propertyNames", "propertyNames",
                                        "not enforced on additional keys beside patternProperties (only a pattern, "
                                        "format, enum or lengths are)"))
            names = []
        try:
            if not names:
                return complement_of(taken, encoded_char, conv.new_rule, conv.set_rule)
            return bounded_length([complement_automaton(taken)] + names, 0, None, encoded_char, conv.new_rule,
                                  conv.set_rule)
        except TooLarge:
            return NOTHING  # narrower than the standard (specs/05-front-ends.md)
    if names_schema is None or names_schema is True:
        if not declared:
            return Repeat(conv.rule(("char",), "json_char", any_string_char), 0, None)
        return _key_excluding(conv, [n for n, _, _ in declared])
    names_schema = conv.deref(names_schema, f"{path}.propertyNames")
    if names_schema is False:
        return NOTHING
    if not isinstance(names_schema, dict):
        raise InvalidJSONError(f"{path}.propertyNames: must be a schema")
    if "enum" in names_schema or "const" in names_schema:
        values = names_schema["enum"] if "enum" in names_schema else [names_schema["const"]]
        return choice(*(ByteString(json_string_literal(v)[1:-1]) for v in values if isinstance(v, str)))
    return conv.string_content(names_schema, f"{path}.propertyNames")


MAX_COUNTED_MEMBERS = 4000  # rules (member index x members so far) for minProperties / maxProperties


def _member_counts(conv, schema: dict, declared: list, path: str):
    """(lo, hi) members when minProperties / maxProperties say more than "not empty" or "empty"
    and the rules can count them (in schema order as `_counted_member_rules`, with `any_order`
    as the bounded repetition of `members_in_any_order`); None otherwise (recorded in
    conv.approximations when a count is left out)."""
    lo = count(schema, "minProperties", path, 0)
    hi = count(schema, "maxProperties", path, None)
    if lo <= 1 and (hi is None or hi == 0):
        return None  # (the empty object dropped or kept alone: below)
    cap = (hi + 1) if hi is not None else lo
    if (len(declared) + 1) * (cap + 1) > MAX_COUNTED_MEMBERS:
        conv.approximations.append((f"{path}.minProperties", "minProperties / maxProperties",
                                    "not enforced: too many counted states"))
        return None
    return lo, hi
