"""Engine adapters for llguidance 1.9.1 and outlines-core 0.2.14, and a registry of all engines.

The differential runner asks every engine the same questions (`engines.py`: accept_token,
accept_bytes with prefix semantics and all or nothing, is_completed, bool_mask, rollback(n),
reset). This module puts two more engines behind that interface:

    LLGuidanceEngine(encoded_vocab, stop_token_ids, vocab_size)      name "llguidance"
        compile(ebnf_text, root)         xgrammar-style EBNF through llguidance's GBNF-to-Lark
                                         converter (`llguidance.gbnf_to_lark`)
        compile_front_end(kind, spec, **options)    kind "regex", "json_schema" or "lark"
    OutlinesEngine(encoded_vocab, stop_token_ids, vocab_size)        name "outlines"
        compile_front_end(kind, spec, **options)    kind "regex" or "json_schema"
    ClassEngine(tokenizer_info, inner)                               name "classes:xg2ref", "classes:xgrammar"
        compile / compile_front_end      xg2ref's grammar, its token classes (displacement,
                                         specs/09), and the inner engine run over one
                                         representative per class (token_classes.ClassMatcher)
    available_engines() -> {name: installed}
    make_engine(name, tokenizer_info) -> Engine     "xg2ref", "xgrammar", "llguidance", "outlines",
                                                    "classes:xg2ref", "classes:xgrammar"

Both adapters are built from the decoded vocabulary of xg2ref's `TokenizerInfo` (token id ->
bytes, stop ids, vocab size), so a token id means the same bytes in every engine. Stop tokens
and xg2ref's special tokens (empty tokens, padding ids) are special to llguidance and absent
from outlines' vocabulary: neither engine ever allows them as text. Neither library consumes
raw bytes, so `accept_bytes` tokenizes the bytes with the adapter's encoder (default
`longest_match_encoder`: longest token first, backtracking when that leaves bytes no token
spells) and accepts those tokens as one step; bytes the vocabulary cannot spell are refused.

JSON-schema options are xg2ref's (`compile_json_schema`), mapped onto each engine's own:

    option                      llguidance                          outlines
    any_whitespace=True         whitespace_flexible                 whitespace_pattern OUTLINES_WHITESPACE
      max_whitespace_cnt=n      whitespace_pattern [ \t\n\r]{1,n}    [ \t\n\r]{0,n}
    any_whitespace=False        item/key separators (", " ": ")     whitespace_pattern "" (only with
                                                                    separators (",", ":"))
    indent                      -                                   -
    strict_mode, any_order      nothing to set: the differences are BY_DESIGN (additional_properties,
                                property_order)

An option an engine cannot express raises `UnsupportedByEngine`.

Masks follow xgrammar: the stop tokens are allowed iff the text so far is complete. The adapters
keep the stop themselves (see `_TokenMatcher`); after one, their mask allows the stop tokens only
(xg2ref raises there). `BY_DESIGN` lists the deliberate differences from xg2ref seen so far, with
the reason for each; `KNOWN_DEFECTS` the library bugs seen.

What it leaves out: structural tags and tool-call formats (neither library has xgrammar's),
outlines' EBNF (it has none: `compile` raises `UnsupportedByEngine`), llguidance's fast-forward
tokens and captures, batched masks. Regexes are handed over as written: llguidance and outlines
read Rust `regex` syntax, xg2ref reads xgrammar's, so a regex should keep to their common part.
llguidance 1.9.1 can spin on a few lexeme layouts (a lexeme /a+/ followed by a lexeme "ab" never
returns a mask); the adapter does not guard against that.
"""

from __future__ import annotations

import importlib.util
import json
from typing import Callable, Iterable, List, Optional, Sequence

import numpy as np

from ..bitmask import unpack_bitmask
from ..tokenizer_info import TokenizerInfo
from .engines import EngineUnavailable, PDAEngine, XG2RefEngine, XGrammarEngine

__all__ = ["BY_DESIGN", "CLASS_ENGINES", "ClassEngine", "ENGINE_NAMES", "KNOWN_DEFECTS", "LLGuidanceEngine",
           "LLGuidanceMatcher", "OUTLINES_WHITESPACE", "OutlinesEngine", "OutlinesMatcher", "UnsupportedByEngine", "available_engines",
           "llguidance_json_options", "longest_match_encoder", "make_engine", "outlines_whitespace"]

ENGINE_NAMES = ("xg2ref", "xgrammar", "llguidance", "outlines")
CLASS_ENGINES = ("classes:xg2ref", "classes:xgrammar")  # an engine over token classes (specs/09)
_PACKAGES = {"xg2ref": ("xg2ref", None), "xgrammar": ("xgrammar", "xgrammar==0.2.8"),
             "llguidance": ("llguidance", "llguidance==1.9.1"),
             "outlines": ("outlines_core", "outlines-core==0.2.14")}

# xg2ref's any_whitespace layout allows [ \t\n\r]* around every structural character; outlines
# takes one pattern for all of its whitespace slots, so this is the same class, unbounded.
OUTLINES_WHITESPACE = r"[\n\t\r ]*"
# outlines unrolls recursion ($ref cycles, values of any type) this many levels deep.
OUTLINES_MAX_RECURSION_DEPTH = 3

# Deliberate differences from xg2ref, observed on small vocabularies (tests/test_other_engines.py
# asserts each one that is marked there) or stated by the library's documentation.
BY_DESIGN = {
    "llguidance": {
        "forced_text": "where the grammar forces the next bytes, llguidance's mask holds only the first token "
                       "of the vocabulary's tokenization of them, not the shorter tokens that also fit",
        "greedy_lexemes": "Lark terminals (and GBNF rules made only of terminals) are lexed greedily: a lexeme "
                          "that could go on is never cut short for what follows ([a-z]+ \"s\" takes no \"cats\")",
        "additional_properties": "JSON schemas follow the standard: an object without additionalProperties "
                                 "takes unlisted properties (xg2ref's strict_mode forbids them)",
        "string_del": "JSON strings take no unescaped U+007F (DEL), which JSON and xg2ref allow",
        "property_order": "properties come in schema order (as xg2ref without any_order)",
    },
    "outlines": {
        "whitespace": "JSON whitespace is OUTLINES_WHITESPACE in outlines' own slots: none before the comma "
                      "between array items, where xg2ref allows any",
        "recursion_depth": "recursive schemas and values of any type are unrolled "
                           f"{OUTLINES_MAX_RECURSION_DEPTH} levels deep, then cut off",
        "property_order": "properties come in schema order (as xg2ref without any_order)",
        "additional_properties": "an object with properties takes no others whatever additionalProperties says "
                                 "(as xg2ref's strict_mode); one without takes any (as the standard)",
        "exponent_sign": "a number's exponent needs a sign (1e+5, not 1e5)",
        "string_chars": "strings take no \\uXXXX escape and no unescaped U+007F..U+009F",
    },
}

# Library bugs seen (not by design), so that a differential run can name them.
KNOWN_DEFECTS = {
    "outlines": {
        "accepting_state": "tokens are lost around accepting states (its index walks a leftmost-first DFA): "
                           "(ab)+ after \"ab\" takes \"ab\" but not \"a\", a(bc)* takes no \"ab\" first",
        "eos_advance": "Guide.advance refuses the eos id its own get_tokens offers (outlines-core issue 227); "
                       "the adapter keeps the stop itself",
    },
    "llguidance": {
        "lexeme_spin": "a lexeme /a+/ followed by a lexeme \"ab\" makes the mask computation spin",
    },
}


class UnsupportedByEngine(ValueError):
    """The engine cannot express this grammar (a conversion failed or the engine rejected it)."""


def _import(name: str):
    module, pin = _PACKAGES[name]
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise EngineUnavailable(f"{name} is not installed ({err}); install it with `pip install '{pin}'` "
                                "or `pip install -e '.[oracle]'`") from None


def longest_match_encoder(vocab: Sequence[bytes], excluded: Iterable[int] = ()) -> Callable[[bytes], Optional[list]]:
    """bytes -> token ids spelling them, longest token first (backtracking where the longest
    leaves a suffix no token spells), None when the vocabulary cannot spell them. Empty tokens
    and the ids in `excluded` are never used; of equal tokens the lowest id is."""
    excluded = set(excluded)
    table: dict[bytes, int] = {}
    for token_id, token in enumerate(vocab):
        if token and token_id not in excluded:
            table.setdefault(bytes(token), token_id)
    lengths = sorted({len(t) for t in table}, reverse=True)

    def encode(data: bytes) -> Optional[list]:
        data = bytes(data)
        n = len(data)
        step = [0] * (n + 1)  # step[i]: length of the token chosen at i (0: no spelling of data[i:])
        step[n] = -1
        for i in range(n - 1, -1, -1):
            for length in lengths:
                if i + length <= n and step[i + length] and data[i:i + length] in table:
                    step[i] = length
                    break
        if not step[0]:
            return None
        out, i = [], 0
        while i < n:
            out.append(table[data[i:i + step[i]]])
            i += step[i]
        return out

    return encode


_STOP = -1  # a rollback step that accepted a stop token


class _TokenMatcher:
    """What both matchers share: the stop kept by the adapter, the rollback log, bytes as tokens.

    Neither library consumes a stop token the way xgrammar does (outlines will not advance on
    its eos id; llguidance, once nothing can follow, validates no eos yet consumes it), so a
    stop token (any of the vocabulary's) is accepted here iff the text so far is complete, and
    the engine is not told. Subclasses give `_complete()`, `_mask()` (regular tokens and stop
    tokens), `_consume(tokens) -> bool` (all or nothing), `_undo(num_tokens)` and `_reset()`.
    """

    def __init__(self, engine):
        self.engine = engine
        self.vocab_size = engine.vocab_size
        self._stop_ids = engine.stop_token_ids
        self._steps: List[int] = []  # per accept call: tokens consumed, or _STOP
        self._stopped = False

    def accept_token(self, token_id: int) -> bool:
        token_id = int(token_id)
        if self._stopped or not 0 <= token_id < self.vocab_size:
            return False
        if token_id in self.engine.stop_set:
            if not self._complete():
                return False
            self._stopped = True
            self._steps.append(_STOP)
            return True
        return self._accept([token_id])

    def accept_bytes(self, data: bytes) -> bool:
        tokens = self.engine.encode(bytes(data))
        return tokens is not None and not self._stopped and self._accept(tokens)

    def _accept(self, tokens: list) -> bool:
        if not self._consume(tokens):
            return False
        self._steps.append(len(tokens))
        return True

    def is_completed(self) -> bool:
        return self._stopped or self._complete()

    def bool_mask(self) -> np.ndarray:
        if self._stopped:
            mask = np.zeros(self.vocab_size, dtype=np.bool_)
            mask[self._stop_ids] = True
            return mask
        return self._mask()

    def rollback(self, num_steps: int) -> None:
        if not isinstance(num_steps, (int, np.integer)) or not 0 <= num_steps <= len(self._steps):
            raise ValueError(f"cannot roll back {num_steps!r} steps: only {len(self._steps)} were taken")
        popped = self._steps[len(self._steps) - num_steps:]
        del self._steps[len(self._steps) - num_steps:]
        if _STOP in popped:
            self._stopped = False
        tokens = sum(n for n in popped if n != _STOP)
        if tokens:
            self._undo(tokens)

    def reset(self) -> None:
        self._reset()
        self._steps.clear()
        self._stopped = False


# ---- llguidance -----------------------------------------------------------------------------


class LLGuidanceMatcher(_TokenMatcher):
    """llguidance's `LLMatcher` behind the common interface. Tokens are checked with
    `validate_tokens` before `consume_tokens`, so a refused token leaves the matcher as it was
    (llguidance would otherwise enter its error state for good)."""

    def __init__(self, engine: "LLGuidanceEngine", grammar: str):
        super().__init__(engine)
        self.matcher = engine.llg.LLMatcher(engine.tokenizer, grammar, log_level=0)
        if self.matcher.is_error():
            raise UnsupportedByEngine(f"llguidance rejects the grammar: {self.matcher.get_error()}")
        self._bitmask = engine.llg_numpy.allocate_token_bitmask(1, self.vocab_size)

    def _consume(self, tokens: list) -> bool:
        return self.matcher.validate_tokens(tokens) == len(tokens) and self.matcher.consume_tokens(tokens)

    def _complete(self) -> bool:
        return bool(self.matcher.is_accepting())

    def _mask(self) -> np.ndarray:
        self.engine.llg_numpy.fill_next_token_bitmask(self.matcher, self._bitmask, 0)
        return unpack_bitmask(self._bitmask[0], self.vocab_size)

    def forced_bytes(self) -> bytes:
        """The bytes the grammar forces next (llguidance's `compute_ff_bytes`)."""
        return bytes(self.matcher.compute_ff_bytes())

    def _undo(self, num_tokens: int) -> None:
        if not self.matcher.rollback(num_tokens):
            raise RuntimeError(f"llguidance could not roll back {num_tokens} tokens: {self.matcher.get_error()}")

    def _reset(self) -> None:
        self.matcher.reset()


class LLGuidanceEngine:
    """llguidance 1.9.1 over the decoded vocabulary (an `LLTokenizer` built from it).

    Example: LLGuidanceEngine(info.decoded_vocab, info.stop_token_ids, info.vocab_size)
    `encoder` (bytes -> token ids or None) is what llguidance tokenizes forced text with and
    what `accept_bytes` uses; it defaults to `longest_match_encoder` over the vocabulary.
    """

    name = "llguidance"

    def __init__(self, encoded_vocab: Sequence[bytes], stop_token_ids: Iterable[int], vocab_size: int,
                 encoder: Optional[Callable[[bytes], Optional[list]]] = None):
        self.llg = _import("llguidance")
        self.llg_numpy = importlib.import_module("llguidance.numpy")
        self.vocab_size = int(vocab_size)
        tokens = [bytes(t) for t in encoded_vocab]
        stops = sorted(set(int(t) for t in stop_token_ids))
        # xg2ref's special tokens: empty ones and padding ids; stop tokens are special here too,
        # so that llguidance never reads their spelling as text
        special = sorted(set(i for i, t in enumerate(tokens) if not t) | set(stops)
                         | set(range(len(tokens), self.vocab_size)))
        all_tokens = tokens + [b""] * (self.vocab_size - len(tokens))
        self.stop_token_ids = stops
        self.stop_set = frozenset(stops)
        self.encode = encoder or longest_match_encoder(all_tokens, special)
        encode = self.encode

        class _Vocabulary:  # what llguidance.TokenizerWrapper reads
            eos_token_id = stops[0] if stops else None
            bos_token_id = None
            special_token_ids = special
            tokens = list(all_tokens)

            def __call__(self, data: bytes) -> list:
                return encode(data) or []

        self.tokenizer = self.llg.LLTokenizer(self.llg.TokenizerWrapper(_Vocabulary()), n_vocab=self.vocab_size,
                                              eos_token=stops or None)

    @classmethod
    def from_tokenizer_info(cls, info: TokenizerInfo, **kwargs) -> "LLGuidanceEngine":
        return cls(info.decoded_vocab, info.stop_token_ids, info.vocab_size, **kwargs)

    def compile(self, ebnf_text: str, root: str = "root") -> LLGuidanceMatcher:
        """xgrammar-style EBNF through llguidance's GBNF converter; what it cannot read (lookahead,
        tag dispatch, other xgrammar extensions) raises `UnsupportedByEngine`."""
        from llguidance.gbnf_to_lark import gbnf_to_lark

        text = ebnf_text
        if root != "root":
            if any(line.split("::=")[0].strip() == "root" for line in text.splitlines() if "::=" in line):
                raise UnsupportedByEngine(f"llguidance's GBNF converter starts at rule `root`; this grammar has "
                                          f"a rule of that name that is not its root `{root}`")
            text = f"root ::= {root}\n{text}"
        try:
            lark = gbnf_to_lark(text)
        except Exception as err:
            raise UnsupportedByEngine(f"llguidance's GBNF converter cannot read this grammar: {err}") from None
        return LLGuidanceMatcher(self, self.llg.LLMatcher.grammar_from_lark(lark))

    def compile_front_end(self, kind: str, spec, **options) -> LLGuidanceMatcher:
        """A regex, a JSON schema (dict or text; `options` as xg2ref's, module docstring) or a
        Lark grammar."""
        matcher_cls = self.llg.LLMatcher
        if kind == "lark" and options.get("dialect", "llguidance") != "llguidance":
            raise UnsupportedByEngine("llguidance reads Lark in its own dialect only (the case is read in "
                                      f"{options['dialect']}'s)")
        if options and kind not in ("json_schema", "lark"):
            raise UnsupportedByEngine(f"llguidance adapter takes no options for {kind!r}: {sorted(options)}")
        if kind == "regex":
            grammar = matcher_cls.grammar_from_regex(spec)
        elif kind == "json_schema":
            text = spec if isinstance(spec, str) else json.dumps(spec)
            _check_json_options(options, "llguidance")
            try:
                grammar = matcher_cls.grammar_from_json_schema(text, defaults=llguidance_json_options(**options))
            except ValueError as err:
                raise UnsupportedByEngine(f"llguidance rejects the schema: {err}") from None
        elif kind == "lark":
            grammar = matcher_cls.grammar_from_lark(spec)
        else:
            raise UnsupportedByEngine(f"llguidance adapter has no front end {kind!r} (regex, json_schema, lark)")
        return LLGuidanceMatcher(self, grammar)


_JSON_OPTIONS = {"any_whitespace", "indent", "separators", "strict_mode", "max_whitespace_cnt", "any_order"}


def _check_json_options(options: dict, engine: str) -> None:
    unknown = set(options) - _JSON_OPTIONS
    if unknown:
        raise UnsupportedByEngine(f"{engine} adapter: unknown JSON-schema options {sorted(unknown)}")


def llguidance_json_options(any_whitespace: bool = True, indent=None, separators=None, strict_mode: bool = True,
                            max_whitespace_cnt=None, any_order: bool = False) -> dict:
    """llguidance's JSON compile options for xg2ref's (module docstring).

    Example: llguidance_json_options(any_whitespace=False) ==
             {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
    """
    if indent is not None:
        raise UnsupportedByEngine(f"llguidance has no fixed indented layout (indent={indent})")
    if any_whitespace:
        out = {"whitespace_flexible": True}
        if max_whitespace_cnt is not None:
            out["whitespace_pattern"] = f"[\\x20\\x0A\\x0D\\x09]{{1,{int(max_whitespace_cnt)}}}"
        return out
    item, key = separators or (", ", ": ")
    return {"whitespace_flexible": False, "item_separator": item, "key_separator": key}


def outlines_whitespace(any_whitespace: bool = True, indent=None, separators=None, strict_mode: bool = True,
                        max_whitespace_cnt=None, any_order: bool = False) -> str:
    """outlines' one whitespace pattern for xg2ref's options (module docstring)."""
    if indent is not None:
        raise UnsupportedByEngine(f"outlines has no fixed indented layout (indent={indent})")
    if any_whitespace:
        return OUTLINES_WHITESPACE if max_whitespace_cnt is None else f"[\\n\\t\\r ]{{0,{int(max_whitespace_cnt)}}}"
    if tuple(separators or ()) != (",", ":"):
        raise UnsupportedByEngine("outlines has one whitespace pattern for every slot: without any_whitespace "
                                  "it can say only the compact separators (',', ':')")
    return ""


# ---- outlines-core --------------------------------------------------------------------------


class OutlinesMatcher(_TokenMatcher):
    """outlines-core's `Guide` behind the common interface. Every stop id is allowed where
    outlines allows its eos id. Rollback uses the Guide's `rollback_state` while it remembers
    enough states, else replays the tokens kept since the start."""

    def __init__(self, engine: "OutlinesEngine", index):
        super().__init__(engine)
        self.guide = engine.oc.Guide(index, max_rollback=engine.max_rollback)
        self._tokens: List[int] = []

    def _consume(self, tokens: list) -> bool:
        if any(t not in self.engine.regular for t in tokens) or not self.guide.accepts_tokens(tokens):
            return False
        for token_id in tokens:
            self.guide.advance(token_id, return_tokens=False)
        self._tokens += tokens
        return True

    def _complete(self) -> bool:
        return bool(self.guide.is_finished())

    def _mask(self) -> np.ndarray:
        mask = np.zeros(self.vocab_size, dtype=np.bool_)
        allowed = np.asarray(self.guide.get_tokens(), dtype=np.int64)
        mask[allowed[allowed < self.vocab_size]] = True
        mask[self._stop_ids] = self._complete()
        return mask

    def _undo(self, num_tokens: int) -> None:
        kept = self._tokens[:len(self._tokens) - num_tokens]
        if num_tokens <= self.guide.get_allowed_rollback():
            self.guide.rollback_state(num_tokens)
        else:
            self.guide.reset()
            for token_id in kept:
                self.guide.advance(token_id, return_tokens=False)
        self._tokens = kept

    def _reset(self) -> None:
        self.guide.reset()
        self._tokens.clear()


class OutlinesEngine:
    """outlines-core 0.2.14 over the decoded vocabulary (regexes and JSON schemas only).

    Example: OutlinesEngine(info.decoded_vocab, info.stop_token_ids, info.vocab_size)
    outlines' `Vocabulary` gets every regular token (non-empty, not a stop token, below
    vocab_size) by its bytes; its eos id is the first stop id (vocab_size when there is none).
    """

    name = "outlines"

    def __init__(self, encoded_vocab: Sequence[bytes], stop_token_ids: Iterable[int], vocab_size: int,
                 encoder: Optional[Callable[[bytes], Optional[list]]] = None, max_rollback: int = 4096,
                 max_recursion_depth: int = OUTLINES_MAX_RECURSION_DEPTH):
        self.oc = _import("outlines")
        self.max_recursion_depth = int(max_recursion_depth)
        self.vocab_size = int(vocab_size)
        self.max_rollback = int(max_rollback)
        self.stop_token_ids = sorted(set(int(t) for t in stop_token_ids))
        self.stop_set = frozenset(self.stop_token_ids)
        tokens = [bytes(t) for t in encoded_vocab][:self.vocab_size]
        by_bytes: dict = {}
        for token_id, token in enumerate(tokens):
            if token and token_id not in self.stop_set:
                by_bytes.setdefault(token, []).append(token_id)
        self.regular = frozenset(i for ids in by_bytes.values() for i in ids)
        self.encode = encoder or longest_match_encoder(tokens, set(range(len(tokens))) - self.regular)
        eos = self.stop_token_ids[0] if self.stop_token_ids else self.vocab_size
        self.vocabulary = self.oc.Vocabulary(eos, by_bytes)

    @classmethod
    def from_tokenizer_info(cls, info: TokenizerInfo, **kwargs) -> "OutlinesEngine":
        return cls(info.decoded_vocab, info.stop_token_ids, info.vocab_size, **kwargs)

    def compile(self, ebnf_text: str, root: str = "root") -> OutlinesMatcher:
        raise UnsupportedByEngine("outlines-core reads regexes and JSON schemas only, not EBNF")

    def json_schema_regex(self, schema, **options) -> str:
        """The regex outlines builds for a JSON schema (dict or text) with xg2ref's `options`
        (module docstring), unrolling recursion `max_recursion_depth` levels."""
        _check_json_options(options, "outlines")
        whitespace = outlines_whitespace(**options)
        text = schema if isinstance(schema, str) else json.dumps(schema)
        try:
            return self.oc.json_schema.build_regex_from_schema(text, whitespace_pattern=whitespace,
                                                               max_recursion_depth=self.max_recursion_depth)
        except Exception as err:
            raise UnsupportedByEngine(f"outlines cannot turn the schema into a regex: {err}") from None

    def compile_front_end(self, kind: str, spec, **options) -> OutlinesMatcher:
        """A regex or a JSON schema (`options` as xg2ref's, module docstring)."""
        if kind == "json_schema":
            regex = self.json_schema_regex(spec, **options)
        elif kind == "regex" and not options:
            regex = spec
        else:
            raise UnsupportedByEngine(f"outlines adapter has no front end {kind!r} with options {sorted(options)} "
                                      "(regex, json_schema)")
        try:
            index = self.oc.Index(regex, self.vocabulary)
        except Exception as err:
            raise UnsupportedByEngine(f"outlines cannot index the regex: {err}") from None
        return OutlinesMatcher(self, index)


# ---- token classes (CFGzip) -----------------------------------------------------------------


class ClassEngine:
    """An engine run over token classes (xg2ref/token_classes/): for each grammar, xg2ref's
    grammar (its own front end for front-end cases), its `displacement` classes over the
    vocabulary, and `inner` ("xg2ref" or "xgrammar") compiled over the representatives. Its masks
    must be the full vocabulary's: a difference is a class that is not a refinement of the
    congruence, or an inner engine that reads the representatives differently."""

    def __init__(self, tokenizer_info: TokenizerInfo, inner: str = "xg2ref", relation: str = "displacement"):
        from ..compiler import GrammarCompiler
        from .engines import import_xgrammar

        if inner not in ("xg2ref", "xgrammar"):
            raise ValueError(f"unknown inner engine {inner!r} for token classes (xg2ref or xgrammar)")
        if inner == "xgrammar":
            import_xgrammar()
        self.name = f"classes:{inner}"
        self.inner, self.relation = inner, relation
        self.tokenizer_info = tokenizer_info
        self.compiler = GrammarCompiler(tokenizer_info)

    def _matcher(self, grammar):
        from ..token_classes import ClassMatcher, compute_token_classes
        from .engines import XG2RefMatcher

        classes = compute_token_classes(self.compiler.compile_grammar(grammar), self.relation)
        make = ClassMatcher.from_grammar if self.inner == "xg2ref" else ClassMatcher.for_xgrammar
        return XG2RefMatcher(make(grammar, self.tokenizer_info, classes))

    def compile(self, ebnf_text: str, root: str = "root"):
        from ..grammar.grammar import Grammar

        return self._matcher(Grammar.from_ebnf(ebnf_text, root_rule_name=root))

    def compile_front_end(self, kind: str, spec, **options):
        from ..builtin_structural_tag import get_model_structural_tag
        from ..grammar.grammar import Grammar

        if kind == "tool_calls":
            kind, spec = "structural_tag", get_model_structural_tag(spec["model"], tools=spec["tools"])
        grammar = {"json_schema": lambda: Grammar.from_json_schema(spec, **options),
                   "regex": lambda: Grammar.from_regex(spec), "lark": lambda: Grammar.from_lark(spec),
                   "structural_tag": lambda: Grammar.from_structural_tag(spec)}[kind]()
        return self._matcher(grammar)


# ---- the registry ---------------------------------------------------------------------------


def available_engines() -> dict:
    """{engine name: whether its package can be imported}."""
    return {name: importlib.util.find_spec(_PACKAGES[name][0]) is not None for name in ENGINE_NAMES}


def make_engine(name: str, info: TokenizerInfo):
    """The adapter for engine `name` over `info`'s vocabulary; EngineUnavailable (with the command
    that installs it) when its package is missing."""
    makers = {"xg2ref": XG2RefEngine, "pda": PDAEngine, "xgrammar": XGrammarEngine.from_tokenizer_info,
              "llguidance": LLGuidanceEngine.from_tokenizer_info, "outlines": OutlinesEngine.from_tokenizer_info,
              "classes:xg2ref": lambda i: ClassEngine(i, "xg2ref"), "classes:xgrammar": lambda i: ClassEngine(i, "xgrammar")}
    if name not in makers:
        raise ValueError(f"unknown engine {name!r}; known: {', '.join(ENGINE_NAMES + CLASS_ENGINES + ('pda',))}")
    return makers[name](info)
