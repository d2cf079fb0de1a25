"""XGrammar-2 §3.2 (structural tags): tool-calling and reasoning formats as grammars.

A structural tag is JSON, `{"type": "structural_tag", "format": F}`, where F is a tree of
formats in xgrammar 0.2.8's shape (field names, defaults and meanings are its own). Each format
becomes an IR expression; `tag` and the dispatching formats become TagDispatch / TokenSet
machinery (xg2ref/intrinsics/tag_dispatch.py, xg2ref/intrinsics/token_sets.py):

    const_string{value}                      "value"
    json_schema{json_schema, style="json"}   the schema's grammar, embedded (xg2ref/frontends/json_schema/converter.py; with excludes
                                             excludes.py; XML styles xml_parameters.py)
    qwen_xml_parameter{json_schema}          deprecated: json_schema with style "qwen_xml"
    grammar{grammar} / regex{pattern}        the EBNF / regex grammar, embedded
    any_text{excludes}                       [^]* , or TagDispatch((), loop=false, excludes)
    sequence{elements} / or{elements}        e1 e2 ... / e1 | e2 | ...
    optional / star / plus{content}          c? / c* / c+        repeat{min, max, content}: c{min,max}
    tag{begin, content, end}                 begin content end (end: a string, a list = choice, or a token)
    triggered_tags{triggers, tags, excludes, at_least_one, stop_after_first}
        group(t) = ( tag.begin minus t  tag.content  tag.end  | ... over tags whose begin starts with t )
        neither flag:      TagDispatch((t, group(t)) ..., loop=true, excludes)
        stop_after_first:  the same with loop=false
        at_least_one:      (tag | ...) TagDispatch(..., loop=true)   (a first tag at once)
        both:              (tag | ...)
    tags_with_separator{tags, separator, at_least_one, stop_after_first}
        T = (tag | ...);   ("" |) T (separator T)*   or, stopping after the first, ("" |) T
    dispatch{rules: [[trigger, F]], loop, excludes}        TagDispatch over the triggers
    token{token} / exclude_token{exclude_tokens}            Token(id) / ExcludeToken(ids)
    any_tokens{exclude_tokens, max_tokens}                  ExcludeToken(ids)*
    token_triggered_tags / token_dispatch                   as above, with TokenTagDispatch

End detection (the content of a tag may be "unlimited": any_text, the dispatching formats,
any_tokens, and sequences ending in / choices holding / repetitions of such): the tag's
non-empty end strings are added to that content's excludes, so free text stops before the end
(with a token end, any_tokens excludes the end token). An unlimited content whose end strings
are all empty is an error, as in xgrammar. Token strings (`"token": "<|call|>"`) are resolved
against the vocabulary, so they need a tokenizer (`compile_structural_tag`).

For a compiler that links (xg2ref/linking.py), `structural_tag_parts` gives the same grammar as a
top IR with a stub rule per embedded sub-grammar, converted only when the compiler does not hold
it yet; a tool's tag (literal begin, sub-grammar, literal end) is one such sub-grammar.

Every error is an InvalidStructuralTagError naming the offending part by its JSON path
(`format.elements[1].tags[0].begin`). `any_text` keeps `max_tokens` / `max_chars` as options
of its rule.

What it leaves out: a format object without a "type" (xgrammar 0.2.8 then tries each format in
turn); unknown fields, which xgrammar's parser ignores, are errors here.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

from ...config import check_json_depth
from .builders import legacy_structural_tag  # noqa: F401  (the old form, read here too)
from ...exceptions import InvalidStructuralTagError, XG2RefError
from ...intrinsics.tag_dispatch import TagDispatch
from ...intrinsics.token_sets import TokenSet, token_dispatch_expr
from ...grammar.ir import (EPSILON, ByteString, CharClass, Choice, Expr, GrammarIR, Repeat, Rule, RuleRef, Sequence,
                 SubGrammar)
from ...grammar.passes import renamed_rules

_ANY_CODEPOINT_STAR = Repeat(CharClass((), negated=True), 0, None)

# Each format's fields: name -> (kind, required). Kinds are checked by `_check`.
FORMATS: dict[str, dict[str, tuple[str, bool]]] = {
    "const_string": {"value": ("str", True)},
    "json_schema": {"json_schema": ("schema", True), "style": ("str", False), "any_order": ("bool", False),
                    "max_whitespace_cnt": ("opt_int", False), "excludes": ("strs", False)},
    "any_text": {"excludes": ("strs", False), "max_tokens": ("opt_int", False), "max_chars": ("opt_int", False)},
    "grammar": {"grammar": ("str", True)},
    "regex": {"pattern": ("str", True), "excludes": ("strs", False)},
    "sequence": {"elements": ("formats", True)},
    "or": {"elements": ("formats", True)},
    "tag": {"begin": ("begin", True), "content": ("format", True), "end": ("end", True)},
    "triggered_tags": {"triggers": ("strs", True), "tags": ("tags", True), "at_least_one": ("bool", False),
                       "stop_after_first": ("bool", False), "excludes": ("strs", False)},
    "tags_with_separator": {"tags": ("tags", True), "separator": ("str", True), "at_least_one": ("bool", False),
                            "stop_after_first": ("bool", False)},
    "optional": {"content": ("format", True)},
    "plus": {"content": ("format", True)},
    "star": {"content": ("format", True)},
    "repeat": {"min": ("int", True), "max": ("int", True), "content": ("format", True)},
    "dispatch": {"rules": ("rules", True), "loop": ("bool", False), "excludes": ("strs", False)},
    "token": {"token": ("token", True)},
    "exclude_token": {"exclude_tokens": ("tokens", False)},
    "any_tokens": {"exclude_tokens": ("tokens", False), "max_tokens": ("opt_int", False)},
    "token_triggered_tags": {"trigger_tokens": ("tokens", True), "tags": ("tags", True),
                             "exclude_tokens": ("tokens", False), "at_least_one": ("bool", False),
                             "stop_after_first": ("bool", False)},
    "token_dispatch": {"rules": ("token_rules", True), "loop": ("bool", False), "exclude_tokens": ("tokens", False)},
}
FORMATS["qwen_xml_parameter"] = dict(FORMATS["json_schema"], style=("any", False))  # (style ignored)
_DEFAULTS = {("json_schema", "style"): "json", ("dispatch", "loop"): True, ("token_dispatch", "loop"): True}
_UNLIMITED = {"any_text", "triggered_tags", "dispatch", "any_tokens", "token_triggered_tags", "token_dispatch",
              "tags_with_separator", "star", "plus"}
# formats that end themselves where one of their excludes would begin (their exclude list is
# not empty): a tag whose content is one of them needs no end string
_EXCLUDES_FIELD = {"any_text": "excludes", "triggered_tags": "excludes", "dispatch": "excludes",
                   "any_tokens": "exclude_tokens", "token_triggered_tags": "exclude_tokens",
                   "token_dispatch": "exclude_tokens"}


def _fail(path: str, message: str) -> InvalidStructuralTagError:
    return InvalidStructuralTagError(f"{path}: {message}")


def load_structural_tag(structural_tag: Any) -> dict:
    """The structural tag as a dict: from JSON text, a dict, or an object with `model_dump`
    (xgrammar's pydantic StructuralTag, or xg2ref's)."""
    if hasattr(structural_tag, "model_dump"):
        structural_tag = structural_tag.model_dump(by_alias=True)
    if isinstance(structural_tag, (str, bytes)):
        try:
            structural_tag = json.loads(structural_tag)
        except json.JSONDecodeError as err:
            raise InvalidStructuralTagError(f"structural tag is not valid JSON: {err}") from None
        except RecursionError:
            raise InvalidStructuralTagError("structural tag nests too deeply to be read") from None
    check_json_depth(structural_tag, InvalidStructuralTagError, "structural tag")
    if not isinstance(structural_tag, dict):
        raise InvalidStructuralTagError(f"a structural tag is a JSON object, got {type(structural_tag).__name__}")
    if structural_tag.get("type", "structural_tag") != "structural_tag":
        raise _fail("type", f'expected "structural_tag", got {structural_tag.get("type")!r}')
    if "format" not in structural_tag:
        raise _fail("format", "missing (a structural tag is {\"type\": \"structural_tag\", \"format\": ...})")
    return structural_tag


_KIND_TESTS = {
    "any": lambda v: True,
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "opt_int": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31),
    "strs": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "schema": lambda v: isinstance(v, (bool, dict, str)),
    "format": lambda v: isinstance(v, dict),
    "formats": lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v),
    "tags": lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v),
    "begin": lambda v: isinstance(v, (str, dict)),
    "end": lambda v: isinstance(v, (str, dict)) or (isinstance(v, list) and all(isinstance(x, str) for x in v)),
    "token": lambda v: isinstance(v, (int, str)) and not isinstance(v, bool),
    "tokens": lambda v: isinstance(v, list) and all(isinstance(x, (int, str)) and not isinstance(x, bool) for x in v),
    "rules": lambda v: isinstance(v, list) and all(isinstance(x, (list, tuple)) and len(x) == 2
                                                   and isinstance(x[0], str) and isinstance(x[1], dict) for x in v),
    "token_rules": lambda v: isinstance(v, list) and all(isinstance(x, (list, tuple)) and len(x) == 2
                                                         and isinstance(x[0], (int, str)) and isinstance(x[1], dict)
                                                         for x in v),
}


def _check(value: Any, kind: str, path: str) -> None:
    """Raise unless `value` has the field kind `kind` (formats themselves are checked when
    converted)."""
    if not _KIND_TESTS[kind](value):
        raise _fail(path, f"expected {_KIND_WORDS[kind]}, got {json.dumps(value)[:80]}")


_KIND_WORDS = {
    "any": "any value",
    "str": "a string", "bool": "true or false", "int": "an integer", "opt_int": "null or an integer in 0..2^31-1",
    "strs": "a list of strings", "schema": "a JSON schema (object or boolean)", "format": "a format object",
    "formats": "a list of format objects", "tags": "a list of tag formats", "begin": "a string or a token format",
    "end": "a string, a list of strings or a token format", "token": "a token id or a token string",
    "tokens": "a list of token ids or token strings", "rules": "a list of [trigger string, format] pairs",
    "token_rules": "a list of [token, format] pairs",
}


def is_excluded(fmt: dict) -> bool:
    """Whether `fmt` is a free-text format with excludes (`_EXCLUDES_FIELD`)."""
    field = _EXCLUDES_FIELD.get(fmt.get("type"))
    return field is not None and bool(fmt.get(field))


def is_unlimited(fmt: dict) -> bool:
    """Whether `fmt` can go on forever, so that an enclosing tag must end it: xgrammar 0.2.8's
    analysis, rule for rule. The free-text formats, `tags_with_separator`, `star` and `plus`
    are; a sequence or a choice is when one of its elements is and has no excludes; `optional`
    when its content is; `repeat` when unbounded, or bounded above 0 with unlimited content."""
    kind = fmt.get("type")
    if kind in _UNLIMITED:
        return True
    if kind in ("sequence", "or"):
        return any(is_unlimited(e) and not is_excluded(e) for e in fmt.get("elements") or ())
    content = fmt.get("content")
    if kind == "optional":
        return isinstance(content, dict) and is_unlimited(content)
    if kind == "repeat":
        high = fmt.get("max", -1)
        return high == -1 or (high != 0 and isinstance(content, dict) and is_unlimited(content))
    return False


class StructuralTagConverter:
    """Turns one structural tag into a GrammarIR (root rule "root")."""

    def __init__(self, tokenizer_info=None, link: bool = False):
        self.tokenizer_info = tokenizer_info
        self.rules: dict[str, Rule] = {}
        self._vocab_index: Optional[dict[bytes, int]] = None
        # link: embedded sub-grammars become stub rules listed in `subgrammars`, and each tag
        # alternative of a triggered group is a rule of its own that is never inlined (`keep`),
        # so a request's new tool set reuses the machines of tools seen before (linking.py)
        self.link = link
        self.subgrammars: list[SubGrammar] = []

    def convert(self, structural_tag: Any) -> GrammarIR:
        tag = load_structural_tag(structural_tag)
        self.rules["root"] = Rule("root", EPSILON)  # placeholder keeps the name taken
        body = self.visit(tag["format"], "format", None)
        self.rules["root"] = Rule("root", body)
        return GrammarIR(tuple(self.rules.values()), "root")

    # ---- helpers --------------------------------------------------------------------------

    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.rules:
            k += 1
            name = f"{base}_{k}"
        self.rules[name] = Rule(name, EPSILON)
        return name

    def rule(self, base: str, body: Expr, options: tuple = ()) -> RuleRef:
        name = self.fresh(base)
        self.rules[name] = Rule(name, body, None, options)
        return RuleRef(name)

    def embed(self, ir: GrammarIR, base: str) -> RuleRef:
        """Add the rules of a sub-grammar under fresh names; a reference to its root."""
        names = {r.name: self.fresh(base if r.name == ir.root else r.name) for r in ir.rules}
        for r in renamed_rules(ir, names):
            self.rules[r.name] = r
        return RuleRef(names[ir.root])

    def embed_subgrammar(self, key: Optional[tuple], make: Callable[[], GrammarIR]) -> RuleRef:
        """`embed(make())`, or when linking, a stub rule the compiler links (`SubGrammar`)."""
        if not self.link:
            return self.embed(make(), "root")
        name = self.fresh("root")
        self.subgrammars.append(SubGrammar(name, key, make))
        return RuleRef(name)

    def linked_tag(self, begin: Expr, content: Expr, end: Expr) -> RuleRef:
        """`begin content end` when linking: when the content is the sub-grammar embedded last
        and begin and end are literals, that sub-grammar grows to the whole tag (one cached part
        per tool, name and arguments together); otherwise a rule that is never inlined."""
        sub = self.subgrammars[-1] if self.subgrammars else None
        if (sub is None or not isinstance(content, RuleRef) or content.name != sub.name
                or not all(isinstance(e, (ByteString, TokenSet)) for e in (begin, end))):
            return self.rule("triggered_tags_alt", Sequence((begin, content, end)), (("keep", True),))

        self.subgrammars[-1] = SubGrammar(sub.name, ("tag", begin, end, sub.key) if sub.key is not None else None,
                                          _Deferred(_tag_ir, begin, sub.make, end))
        return content

    def rule_name(self, expr: Expr, base: str) -> str:
        """The name of a rule matching `expr` (TagDispatch names its rules)."""
        return expr.name if isinstance(expr, RuleRef) else self.rule(base, expr).name

    def token_id(self, token: Any, path: str) -> int:
        if isinstance(token, int):
            if token < 0:
                raise _fail(path, f"token id {token} is negative")
            return token
        if self.tokenizer_info is None:
            raise _fail(path, f"token string {token!r} needs a tokenizer to be resolved (use "
                              "GrammarCompiler.compile_structural_tag, or give token ids)")
        if self._vocab_index is None:
            self._vocab_index = {}
            for t, data in enumerate(self.tokenizer_info.decoded_vocab):
                self._vocab_index.setdefault(bytes(data), t)
        found = self._vocab_index.get(token.encode("utf-8"))
        if found is None:
            raise _fail(path, f"token string {token!r} is not a token of the vocabulary")
        return found

    def fields(self, fmt: dict, path: str) -> dict:
        """The format's fields with defaults filled in, after checking names and kinds."""
        kind = fmt.get("type")
        if kind not in FORMATS:
            raise _fail(f"{path}.type", f"format type not recognized: {kind!r} (one of {', '.join(FORMATS)})")
        spec = FORMATS[kind]
        for key in fmt:
            if key != "type" and key not in spec:
                raise _fail(f"{path}.{key}", f"unknown field of a {kind} format (fields: {', '.join(spec)})")
        out = {}
        for key, (field_kind, required) in spec.items():
            if key not in fmt:
                if required:
                    raise _fail(f"{path}.{key}", f"missing (a {kind} format needs it)")
                out[key] = _DEFAULTS.get((kind, key), {"bool": False, "strs": [], "tokens": [], "opt_int": None}.get(field_kind))
                continue
            _check(fmt[key], field_kind, f"{path}.{key}")
            out[key] = fmt[key]
        return out

    # ---- formats --------------------------------------------------------------------------

    def visit(self, fmt: Any, path: str, ends: Optional[list]) -> Expr:
        """The expression of `fmt`; `ends` are the end strings (or [token id]) of the nearest
        enclosing tag (None outside every tag): every free-text format inside that tag's content
        and not inside a nested tag excludes them, wherever it stands (xgrammar 0.2.8)."""
        if not isinstance(fmt, dict):
            raise _fail(path, f"expected a format object, got {json.dumps(fmt)[:80]}")
        f = self.fields(fmt, path)
        kind = fmt["type"]
        return getattr(self, "_" + kind)(f, path, ends)

    def _const_string(self, f, path, ends):
        return self.rule("const_string", ByteString(f["value"].encode("utf-8")))

    def _json_schema(self, f, path, ends):
        from .xml_parameters import excludes_problem
        from .xml_styles import STYLES

        style = f["style"]
        if style != "json" and style not in STYLES:
            raise _fail(f"{path}.style", f"unknown JSON schema style {style!r} (one of json, {', '.join(STYLES)})")
        problem = excludes_problem(style, f["excludes"])
        if problem:
            raise _fail(f"{path}.excludes", problem)
        schema, options = f["json_schema"], (f["any_order"], f["max_whitespace_cnt"], tuple(f["excludes"]))
        text = _json_text(schema)
        return self.embed_subgrammar(("json_schema", text, style) + options if text is not None else None,
                                     _Deferred(_schema_ir, schema, style, options, path))

    def _qwen_xml_parameter(self, f, path, ends):
        """Deprecated: json_schema with style qwen_xml, its own `style` ignored (as xgrammar 0.2.8)."""
        return self._json_schema(dict(f, style="qwen_xml"), path, ends)

    def _grammar(self, f, path, ends):
        return self.embed_subgrammar(("grammar", f["grammar"]), _Deferred(_ebnf_ir, f["grammar"], path))

    def _regex(self, f, path, ends):
        return self.embed_subgrammar(("regex", f["pattern"]), _Deferred(_regex_ir, f["pattern"], path))

    def _any_text(self, f, path, ends):
        excludes = list(dict.fromkeys(f["excludes"] + [e for e in (ends or []) if isinstance(e, str) and e]))
        options = tuple((k, f[k]) for k in ("max_tokens", "max_chars") if f[k] is not None)
        if excludes:
            body: Expr = TagDispatch((), False, tuple(e.encode("utf-8") for e in excludes))
        else:
            body = _ANY_CODEPOINT_STAR
        return self.rule("any_text", body, options)

    def _sequence(self, f, path, ends):
        elements = f["elements"]
        if not elements:
            raise _fail(f"{path}.elements", "a sequence needs at least one element")
        items = [self.visit(e, f"{path}.elements[{k}]", ends) for k, e in enumerate(elements)]
        return self.rule("sequence", Sequence(tuple(items)) if len(items) > 1 else items[0])

    def _or(self, f, path, ends):
        elements = f["elements"]
        if not elements:
            raise _fail(f"{path}.elements", "an or needs at least one element")
        alts = [self.visit(e, f"{path}.elements[{k}]", ends) for k, e in enumerate(elements)]
        return self.rule("or", Choice(tuple(alts)) if len(alts) > 1 else alts[0])

    def _optional(self, f, path, ends):
        return self.rule("optional", Repeat(self.visit(f["content"], f"{path}.content", ends), 0, 1))

    def _star(self, f, path, ends):
        return self.rule("star", Repeat(self.visit(f["content"], f"{path}.content", ends), 0, None))

    def _plus(self, f, path, ends):
        return self.rule("plus", Repeat(self.visit(f["content"], f"{path}.content", ends), 1, None))

    def _repeat(self, f, path, ends):
        low, high = f["min"], f["max"]
        if low < 0 or (high != -1 and high < low):
            raise _fail(path, f"repeat needs 0 <= min <= max (max -1: unbounded), got min={low}, max={high}")
        body = self.visit(f["content"], f"{path}.content", ends)
        return self.rule("repeat", Repeat(body, low, None if high == -1 else high))

    # ---- tags -----------------------------------------------------------------------------

    def tag_parts(self, fmt: dict, path: str) -> tuple[Expr, Expr, Expr, dict]:
        """(begin, content, end) expressions of a tag format, and its checked fields."""
        if not isinstance(fmt, dict) or fmt.get("type", "tag") != "tag":
            raise _fail(path, "expected a tag format ({\"type\": \"tag\", \"begin\", \"content\", \"end\"})")
        f = self.fields(dict(fmt, type="tag"), path)
        begin = (ByteString(f["begin"].encode("utf-8")) if isinstance(f["begin"], str)
                 else TokenSet((self.token_format(f["begin"], f"{path}.begin"),)))
        end_value = f["end"]
        if isinstance(end_value, dict):
            end_token = self.token_format(end_value, f"{path}.end")
            end: Expr = TokenSet((end_token,))
            content_ends: list = [end_token]
        else:
            strings = [end_value] if isinstance(end_value, str) else list(end_value)
            if not strings:
                raise _fail(f"{path}.end", "a tag needs at least one end string")
            content_ends = [s for s in strings if s]
            if not content_ends and is_unlimited(f["content"]) and not is_excluded(f["content"]):
                raise _fail(f"{path}.end", "when the content is unlimited, at least one end string must be non-empty")
            alts = [ByteString(s.encode("utf-8")) for s in strings]
            end = alts[0] if len(alts) == 1 else self.rule("tag_end", Choice(tuple(alts)))
        content = self.visit(f["content"], f"{path}.content", content_ends)
        return begin, content, end, f

    def token_format(self, fmt: dict, path: str) -> int:
        if fmt.get("type") != "token":
            raise _fail(path, "expected a token format ({\"type\": \"token\", \"token\": ...})")
        return self.token_id(self.fields(fmt, path)["token"], f"{path}.token")

    def _tag(self, f, path, ends):
        begin, content, end, _ = self.tag_parts(dict(f, type="tag"), path)
        return self.rule("tag", Sequence((begin, content, end)))

    def _tags_with_separator(self, f, path, ends):
        if not f["tags"]:
            raise _fail(f"{path}.tags", "tags_with_separator needs at least one tag")
        tags = [self.rule("tag", Sequence(self.tag_parts(t, f"{path}.tags[{k}]")[:3])) for k, t in enumerate(f["tags"])]
        one = self.rule("tags_with_separator_tags", Choice(tuple(tags)) if len(tags) > 1 else tags[0])
        if f["stop_after_first"]:
            body: Expr = one
        else:
            sep = ByteString(f["separator"].encode("utf-8"))
            body = Sequence((one, Repeat(Sequence((sep, one)), 0, None)))
        if not f["at_least_one"]:
            body = Choice((EPSILON, body))
        return self.rule("tags_with_separator", body)

    def _triggered(self, f, path, ends, token_level: bool) -> Expr:
        """triggered_tags and token_triggered_tags (module docstring)."""
        triggers_key = "trigger_tokens" if token_level else "triggers"
        if not f["tags"]:
            raise _fail(f"{path}.tags", "a triggered tags format needs at least one tag")
        if not f[triggers_key]:
            raise _fail(f"{path}.{triggers_key}", "a triggered tags format needs at least one trigger")
        if not token_level and "" in f["triggers"]:  # (a dispatch on "" reads nothing: refused, as by xgrammar)
            k = f["triggers"].index("")
            raise _fail(f"{path}.triggers[{k}]", "a trigger must be a non-empty string")
        triggers = ([self.token_id(t, f"{path}.trigger_tokens[{k}]") for k, t in enumerate(f["trigger_tokens"])]
                    if token_level else [t.encode("utf-8") for t in f["triggers"]])
        groups: dict = {t: [] for t in triggers}
        wholes = []
        for k, tag in enumerate(f["tags"]):
            tpath = f"{path}.tags[{k}]"
            begin, content, end, tf = self.tag_parts(tag, tpath)
            wholes.append(Sequence((begin, content, end)))
            if token_level:
                key = begin.ids[0] if isinstance(begin, TokenSet) else None
                rest: Expr = EPSILON
            else:
                text = begin.value if isinstance(begin, ByteString) else None
                key = next((t for t in triggers if text is not None and text.startswith(t)), None)
                rest = ByteString(text[len(key):]) if key is not None else EPSILON
            if key not in groups:
                raise _fail(f"{tpath}.begin", "one tag does not match any trigger in a triggered tags format")
            alternative: Expr = Sequence((rest, content, end))
            if self.link and not f["at_least_one"]:  # (with at_least_one, `content` is in `first` too)
                alternative = self.linked_tag(rest, content, end)
            groups[key].append(alternative)
        first = Choice(tuple(wholes)) if len(wholes) > 1 else wholes[0]
        if f["at_least_one"] and f["stop_after_first"]:
            return first
        pairs = [(t, self.rule(f"{'token_' if token_level else ''}triggered_tags_group",
                               Choice(tuple(alts)) if len(alts) > 1 else alts[0]).name)
                 for t, alts in groups.items() if alts]
        loop = not f["stop_after_first"]
        if token_level:
            excludes = [self.token_id(t, f"{path}.exclude_tokens[{k}]") for k, t in enumerate(f["exclude_tokens"])]
            excludes += [e for e in (ends or []) if isinstance(e, int)]
            dispatch: Expr = token_dispatch_expr(pairs, loop, excludes)
        else:
            excludes = list(dict.fromkeys(f["excludes"] + [e for e in (ends or []) if isinstance(e, str) and e]))
            dispatch = TagDispatch(tuple(pairs), loop, tuple(e.encode("utf-8") for e in excludes))
        if f["at_least_one"]:
            return Sequence((first, self.rule("triggered_tags_sub", dispatch)))
        return dispatch

    def _triggered_tags(self, f, path, ends):
        return self.rule("triggered_tags", self._triggered(f, path, ends, token_level=False))

    def _token_triggered_tags(self, f, path, ends):
        return self.rule("token_triggered_tags", self._triggered(f, path, ends, token_level=True))

    def _dispatch(self, f, path, ends):
        pairs = []
        for k, (trigger, fmt) in enumerate(f["rules"]):
            if not trigger:
                raise _fail(f"{path}.rules[{k}][0]", "a dispatch trigger must not be empty")
            pairs.append((trigger.encode("utf-8"), self.rule_name(self.visit(fmt, f"{path}.rules[{k}][1]", ends), "dispatch_rule")))
        excludes = list(dict.fromkeys(f["excludes"] + [e for e in (ends or []) if isinstance(e, str) and e]))
        return self.rule("tag_dispatch", TagDispatch(tuple(pairs), f["loop"], tuple(e.encode("utf-8") for e in excludes)))

    def _token_dispatch(self, f, path, ends):
        pairs = [(self.token_id(t, f"{path}.rules[{k}][0]"),
                  self.rule_name(self.visit(fmt, f"{path}.rules[{k}][1]", ends), "dispatch_rule"))
                 for k, (t, fmt) in enumerate(f["rules"])]
        excludes = [self.token_id(t, f"{path}.exclude_tokens[{k}]") for k, t in enumerate(f["exclude_tokens"])]
        excludes += [e for e in (ends or []) if isinstance(e, int)]
        if set(excludes) & {t for t, _ in pairs}:
            raise _fail(f"{path}.exclude_tokens", "a token is both a trigger and an exclude")
        return self.rule("token_tag_dispatch", token_dispatch_expr(pairs, f["loop"], excludes))

    def _token(self, f, path, ends):
        return TokenSet((self.token_id(f["token"], f"{path}.token"),))

    def _exclude_token(self, f, path, ends):
        ids = [self.token_id(t, f"{path}.exclude_tokens[{k}]") for k, t in enumerate(f["exclude_tokens"])]
        ids += [e for e in (ends or []) if isinstance(e, int)]  # a tag's end token (xgrammar 0.2.8)
        return TokenSet(tuple(dict.fromkeys(ids)), exclude=True)

    def _any_tokens(self, f, path, ends):
        ids = [self.token_id(t, f"{path}.exclude_tokens[{k}]") for k, t in enumerate(f["exclude_tokens"])]
        ids += [e for e in (ends or []) if isinstance(e, int)]
        options = (("max_tokens", f["max_tokens"]),) if f["max_tokens"] is not None else ()
        return self.rule("any_tokens", Repeat(TokenSet(tuple(dict.fromkeys(ids)), exclude=True), 0, None), options)


class _Deferred:
    """`fn(*args)` later: the `make` of an embedded sub-grammar. A compiler keeps one per cached
    grammar and tool, so it is one small object (closures and functools.partial hold several for
    the collector to walk)."""

    __slots__ = ("fn", "args")

    def __init__(self, fn: Callable, *args):
        self.fn, self.args = fn, args

    def __call__(self):
        return self.fn(*self.args)


# The IR builders of embedded sub-grammars (`SubGrammar.make`).

def _schema_ir(schema: Any, style: str, options: tuple, path: str) -> GrammarIR:
    from .excludes import filtered_json_schema_to_ir
    from ..json_schema.converter import json_schema_to_ir
    from .xml_parameters import xml_schema_to_ir

    any_order, max_whitespace_cnt, excludes = options
    try:
        if style == "json" and excludes:
            return filtered_json_schema_to_ir(schema, list(excludes), any_order=any_order,
                                              max_whitespace_cnt=max_whitespace_cnt)
        if style == "json":
            return json_schema_to_ir(schema, any_order=any_order, max_whitespace_cnt=max_whitespace_cnt)
        return xml_schema_to_ir(schema, style, any_order=any_order, max_whitespace_cnt=max_whitespace_cnt,
                                excludes=list(excludes))
    except XG2RefError as err:
        raise _fail(f"{path}.json_schema", str(err)) from None


def _ebnf_ir(text: str, path: str) -> GrammarIR:
    from ..ebnf.parser import parse_ebnf

    try:
        return parse_ebnf(text)
    except XG2RefError as err:
        raise _fail(f"{path}.grammar", str(err)) from None


def _regex_ir(pattern: str, path: str) -> GrammarIR:
    """A regex format reads its pattern as `Grammar.from_regex` does, in xgrammar 0.2.8's
    dialect (`.` matches a newline too: xg2ref/frontends/regex/to_ebnf.py)."""
    from ..regex.parser import RegexError
    from ..regex.to_ebnf import converted_regex_ir

    try:
        return converted_regex_ir(pattern)[0]
    except (RegexError, XG2RefError) as err:
        raise _fail(f"{path}.pattern", str(err)) from None


def _tag_ir(begin: Expr, make: Callable[[], GrammarIR], end: Expr) -> GrammarIR:
    """`begin inner end` as the root of the sub-grammar `make()` (`linked_tag`)."""
    inner = make()
    name = next(n for n in (f"tag_{k}" for k in range(len(inner.rules) + 1)) if n not in inner.rule_names())
    return GrammarIR((Rule(name, Sequence((begin, RuleRef(inner.root), end))),) + inner.rules, name)


def structural_tag_to_ir(structural_tag: Any, tokenizer_info=None) -> GrammarIR:
    """The grammar of a structural tag (JSON text, dict or StructuralTag object)."""
    return StructuralTagConverter(tokenizer_info).convert(structural_tag)


def structural_tag_parts(structural_tag: Any, tokenizer_info=None) -> tuple[GrammarIR, tuple[SubGrammar, ...]]:
    """The same grammar as a top IR whose stub rules stand for the embedded sub-grammars
    (JSON schemas, regexes, EBNF), for the compiler to link (xg2ref/linking.py). The
    sub-grammars are not converted here: a compiler that holds one already never converts it."""
    converter = StructuralTagConverter(tokenizer_info, link=True)
    return converter.convert(structural_tag), tuple(converter.subgrammars)


def _json_text(value: Any) -> Optional[str]:
    """`value` as canonical JSON text, None when it is not plain JSON data."""
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return None
