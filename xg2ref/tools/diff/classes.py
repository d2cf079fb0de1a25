"""Known classes of disagreement: which of an engine's answers differ from the oracle by design.

A differential run against production engines finds the same few deliberate differences over
and over (specs/05's list for xgrammar 0.2.8; `BY_DESIGN` in oracle/other_engines.py for
llguidance and outlines-core). Two kinds of rule set them apart, so that a report can count
them separately and `--strict` does not fail on them.

Rules on the question alone (`classify`: the bytes before it, the token asked about, who
allowed it):

    engine      class                 the token asked about ...
    xgrammar    escapes (specs/05 3)  holds a backslash and only xg2ref allows it, or holds a byte
                                      below 0x20 and only xgrammar allows it
    xgrammar    surrogates (5/8)      follows `\\u`, starts a lone surrogate (d800-dfff), xgrammar
                                      allows it
    llguidance  string_del            holds U+007F and llguidance refuses it
    outlines    string_chars          holds U+007F..U+009F, or starts with `u` after a backslash,
                                      and outlines refuses it
    outlines    exponent_sign         starts with a digit right after a number's `e`/`E`, and
                                      outlines refuses it
    outlines    whitespace            starts with JSON whitespace and outlines refuses it

Rules that ask again (`by_design`, given an `Asker` of xg2ref/tools/fuzz/shrink.py, best on a shrunk
question). A difference is of the class when it vanishes under the one change the class names:

    xgrammar    dead ends (specs/01 4)  over-accepts in an EBNF grammar with an unproductive rule
                                        or an empty character class (no re-ask: read off the grammar)
    xgrammar    -0 (specs/05 9)         refuses `-`, `0` after `-`, or what follows `-0`, under a
                                        numeric bound or an integer type (no re-ask)
    outlines    whitespace              refuses `,` `]` `}` after whitespace in a JSON schema
    llguidance  forced_text             refuses a token that is a prefix of the bytes it reports
                                        forced (or holds them whole)
    llguidance  greedy_lexemes          refuses, in an EBNF or Lark grammar, what it accepts once
                                        every lexeme is one character (`char_lexed_lark`)
    outlines    recursion_depth         refuses what it accepts when recursion is unrolled deeper
    llguidance, property_order          (with any_order) the oracle of the same schema without
      outlines                          any_order answers as the engine does
    xgrammar    pattern_properties      (structural tags, tool calls) vanishes once every
                (specs/05, XML styles)  `patternProperties` pattern is anchored at both ends
                                        (xgrammar matches a pattern against the whole name)
    llguidance, additional_properties   an over-acceptance vanishes once every object of the schema
      outlines                          says additionalProperties: false; an under-acceptance once
                                        it says true, or (with strict_mode off) the oracle of the
                                        schema in strict mode answers as the engine does

An entry no rule recognizes is unclassified: a finding to look at.
"""

from __future__ import annotations

import json
from typing import Callable, Optional

WHITESPACE = b" \t\n\r"


def _escapes(prefix: bytes, token: bytes, says: bool) -> bool:
    return (b"\\" in token and not says) or (says and any(c < 0x20 for c in token))


def _surrogates(prefix: bytes, token: bytes, says: bool) -> bool:
    return says and prefix.endswith(b"\\u") and token[:1] in (b"d", b"D") and \
        (len(token) < 2 or token[1:2] in b"89abcdefABCDEF")


def _string_del(prefix: bytes, token: bytes, says: bool) -> bool:
    return not says and b"\x7f" in token


def _string_chars(prefix: bytes, token: bytes, says: bool) -> bool:
    c1 = any(token[i] == 0xC2 and 0x80 <= token[i + 1] <= 0x9F for i in range(len(token) - 1))
    return not says and (b"\x7f" in token or c1 or (prefix.endswith(b"\\") and token[:1] == b"u"))


def _exponent_sign(prefix: bytes, token: bytes, says: bool) -> bool:
    return (not says and len(prefix) >= 2 and prefix[-1:] in (b"e", b"E") and prefix[-2:-1].isdigit()
            and token[:1].isdigit())


def _whitespace(prefix: bytes, token: bytes, says: bool) -> bool:
    return not says and token[:1] != b"" and token[0] in WHITESPACE


RULES: dict[str, list[tuple[str, Callable[[bytes, bytes, bool], bool]]]] = {
    "xgrammar": [("escapes (specs/05 difference 3)", _escapes),
                 ("lone surrogates (specs/05 difference 8)", _surrogates)],
    "llguidance": [("string_del", _string_del)],
    "outlines": [("string_chars", _string_chars), ("exponent_sign", _exponent_sign), ("whitespace", _whitespace)],
}


def classify(engine: str, prefix: bytes, token: Optional[bytes], says: Optional[bool]) -> Optional[str]:
    """The by-design class of an engine's answer `says` on `token` after `prefix`, or None."""
    if token is None or says is None:
        return None
    for name, rule in RULES.get(engine, ()):
        if rule(prefix, token, says):
            return name
    return None


# ---- rules that ask again ----------------------------------------------------------------


def by_design(engine: str, kind: str, spec, q, says: bool, asker, token: bytes) -> Optional[str]:
    """The known class of a deliberate difference (module docstring), or None. `q` is a
    fuzz_shrink.Question, `asker` an Asker for `engine` (None: the question-only rules),
    `token` the bytes of the token asked about (b"" for a stop token or a verdict)."""
    masked = q.kind in ("token", "accept")
    if masked:
        named = classify(engine, q.data, token, says)
    elif q.kind in ("prefix", "whole") and q.data:
        named = classify(engine, q.data[:-1], q.data[-1:], says)
    else:
        named = None
    if named:
        return named
    before, asked = (q.data, token) if masked else (q.data[:-1], q.data[-1:])
    if engine == "xgrammar" and kind == "ebnf" and says and has_dead_ends(spec):
        return "dead ends (specs/01 difference 4)"
    found = set(keywords(spec)) if kind == "json_schema" else set()
    bounds = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} & found
    # A lone `-` refused is the -0 difference only where a bound leaves 0 as the one number after
    # it; `-0` itself (and what follows it) is refused under any bound and for every integer.
    if engine == "xgrammar" and not says and \
            (bounds and asked[:1] == b"-" or (bounds or "type=integer" in found) and
             (before.endswith(b"-") and asked[:1] == b"0" or before.endswith(b"-0"))):
        return "-0 (specs/05 difference 9)"
    if engine == "outlines" and kind == "json_schema" and not says and before[-1:].isspace() and asked[:1] in b",]}":
        return "whitespace"
    if engine == "xgrammar" and kind in ("structural_tag", "tool_calls") and asker is not None:
        variant = whole_patterns(spec)
        if variant != spec and not asker.differs(kind, variant, q, says):
            return "pattern_properties (specs/05, XML styles)"
    if asker is None or says:
        return _additional_properties(engine, kind, spec, q, says, asker)
    if engine == "llguidance" and q.kind == "token" and token:
        m = asker.matcher(kind, spec)
        forced = b""
        if m is not None and hasattr(m, "forced_bytes"):
            m.reset()
            forced = m.forced_bytes() if m.accept_bytes(q.data) else b""
        if forced and (forced.startswith(token) or token.startswith(forced)):
            return "forced_text"
    if engine == "llguidance" and kind in ("ebnf", "lark"):
        lark = char_lexed_lark(asker.oracle_grammar(kind, spec))
        try:
            m = asker.engine.compile_front_end("lark", lark) if lark is not None else None
        except Exception:  # llguidance cannot read it: no class
            m = None
        if asker.ask(m, q) is True:
            return "greedy_lexemes"
    if engine == "outlines" and kind == "json_schema":
        deeper = asker.deeper()
        if deeper is not None and deeper.engine_says(kind, spec, q) is True:
            return "recursion_depth"
    if engine in ("llguidance", "outlines") and kind == "json_schema" and asker.options.get("any_order"):
        if asker.with_options(any_order=False).oracle_says(kind, spec, q) is False:
            return "property_order"
    return _additional_properties(engine, kind, spec, q, says, asker)


def _additional_properties(engine: str, kind: str, spec, q, says: bool, asker) -> Optional[str]:
    from ...oracle.other_engines import BY_DESIGN

    if kind != "json_schema" or asker is None or "additional_properties" not in BY_DESIGN.get(engine, {}):
        return None
    variant = closed(spec) if says else opened(spec)
    if variant != spec and not asker.differs(kind, variant, q, says):
        return "additional_properties"
    if not says and asker.options.get("strict_mode") is False and \
            asker.with_options(strict_mode=True).oracle_says(kind, spec, q) is False:
        return "additional_properties"
    return None


def whole_patterns(spec):
    """`spec` (a JSON value, or its text) with every `patternProperties` pattern anchored at both
    ends: what xgrammar 0.2.8 reads a pattern of an XML style as.

    Example: whole_patterns({"patternProperties": {"^a": {}}}) == {"patternProperties": {"^(?:a)$": {}}}
    """
    if isinstance(spec, str):
        try:
            return json.dumps(whole_patterns(json.loads(spec)))
        except ValueError:
            return spec
    if isinstance(spec, list):
        return [whole_patterns(v) for v in spec]
    if not isinstance(spec, dict):
        return spec
    out = {}
    for key, value in spec.items():
        if key == "patternProperties" and isinstance(value, dict):
            value = {f"^(?:{p.removeprefix('^').removesuffix('$')})$": whole_patterns(v) for p, v in value.items()}
        else:
            value = whole_patterns(value)
        out[key] = value
    return out


def has_dead_ends(text: str) -> bool:
    """The EBNF grammar has an unproductive rule or an empty character class."""
    from ...grammar.grammar import Grammar
    from ...grammar.ir import CharClass, walk
    from ...grammar.passes import unproductive_rules

    try:
        ir = Grammar.from_ebnf(text).ir
    except Exception:
        return False
    empty = any(isinstance(n, CharClass) and not n.codepoint_ranges() for r in ir.rules for n in walk(r.body))
    return empty or bool(unproductive_rules(ir))


def _objects(node, value: bool):
    """`node` with additionalProperties: `value` on every object schema that does not set it."""
    if isinstance(node, list):
        return [_objects(v, value) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: (_objects(v, value) if k != "properties" else {p: _objects(s, value) for p, s in v.items()}
               if isinstance(v, dict) else v) for k, v in node.items()}
    if (out.get("type") == "object" or "properties" in out) and "additionalProperties" not in out:
        out["additionalProperties"] = value
    return out


def closed(schema):
    """Every object of `schema` closed: additionalProperties false where it says nothing.

    Example: closed({"properties": {}}) == {"properties": {}, "additionalProperties": False}
    """
    return _objects(schema, False)


def opened(schema):
    """Every object of `schema` open: additionalProperties true where it says nothing."""
    return _objects(schema, True)


# JSON Schema keywords that name a constraint (structure: properties, items, required, left out)
_KEYWORDS = {"enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
             "minLength", "maxLength", "pattern", "format", "minItems", "maxItems", "uniqueItems", "prefixItems",
             "additionalItems", "contains", "minProperties", "maxProperties", "additionalProperties",
             "patternProperties", "propertyNames", "dependentRequired", "anyOf", "oneOf", "allOf", "not", "if",
             "then", "else", "$ref", "unevaluatedProperties", "unevaluatedItems"}
_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}  # name -> schema
_SUBSCHEMAS = {"items", "prefixItems", "additionalProperties", "additionalItems", "contains", "propertyNames", "not",
               "if", "then", "else", "unevaluatedProperties", "unevaluatedItems", "anyOf", "oneOf", "allOf"}


def keywords(schema) -> list:
    """The constraint keywords (and scalar types) of a JSON schema and its subschemas, sorted.

    Example: keywords({"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}})
             == ["minimum", "type=integer"]
    """
    found: set = set()

    def visit(node):
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            if key in _KEYWORDS:
                found.add(key)
            elif key == "type":
                found.update(f"type={t}" for t in (value if isinstance(value, list) else [value])
                             if t not in ("object", "array"))
            if key in _MAPS and isinstance(value, dict):
                for sub in value.values():
                    visit(sub)
            elif key in _SUBSCHEMAS:
                for sub in value if isinstance(value, list) else [value]:
                    visit(sub)

    visit(schema)
    return sorted(found)


# ---- llguidance without its lexer: one lexeme per character ---------------------------------

_MAX_UNROLL = 64  # a bounded repetition is written out; longer bounds are not classified


def char_lexed_lark(ir) -> Optional[str]:
    """A Lark grammar (llguidance's dialect) of the same language as the GrammarIR `ir` in which
    every lexeme is one character: literals are spelled out character by character, classes are
    one-character regexes, and every rule is a grammar rule. Greedy lexing then cannot cut
    anything short. None for what it cannot write: lookahead, tag dispatch, token sets, bytes
    that are not UTF-8, empty classes, repetitions bounded above `_MAX_UNROLL`.

    Example: char_lexed_lark(Grammar.from_ebnf('root ::= "ab"').ir) ==
             'start: r0\nr0: "a" "b"\neps: \n'
    """
    from ...grammar.ir import ByteString, CharClass, Choice, Repeat, RuleRef, Sequence

    names = {rule.name: f"r{i}" for i, rule in enumerate(ir.rules)}

    def expr(e) -> Optional[str]:
        if isinstance(e, ByteString):
            try:
                text = e.value.decode("utf-8")
            except UnicodeDecodeError:
                return None
            return " ".join(json.dumps(c, ensure_ascii=False) for c in text) if text else "eps"
        if isinstance(e, CharClass):
            ranges = e.codepoint_ranges()
            if not ranges:
                return None
            return "/[" + "".join(f"\\x{{{lo:x}}}-\\x{{{hi:x}}}" for lo, hi in ranges) + "]/"
        if isinstance(e, RuleRef):
            return names.get(e.name)
        if isinstance(e, (Sequence, Choice)):
            kids = [expr(k) for k in (e.items if isinstance(e, Sequence) else e.alternatives)]
            if any(k is None for k in kids):
                return None
            return "(" + (" " if isinstance(e, Sequence) else " | ").join(kids or ["eps"]) + ")"
        if isinstance(e, Repeat):
            body = expr(e.body)
            if body is None or (e.max or e.min) > _MAX_UNROLL:
                return None
            if e.max is None:
                return f"({body})*" if e.min == 0 else f"({body}){{{e.min},}}" if e.min > 1 else f"({body})+"
            return f"({body}){{{e.min},{e.max}}}"
        return None

    lines = [f"start: {names[ir.root]}"]
    for rule in ir.rules:
        if rule.lookahead is not None:
            return None
        body = expr(rule.body)
        if body is None:
            return None
        lines.append(f"{names[rule.name]}: {body}")
    return "\n".join(lines + ["eps: ", ""])
