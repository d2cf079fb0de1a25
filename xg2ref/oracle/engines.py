"""Engine adapters: one small interface over xg2ref, xgrammar 0.2.8, the brute-force oracle and
XGrammar-1's pushdown automaton (`PDAEngine`, xg2ref/baselines/pda/).

The differential runner (`xg2ref/tools/diff/runner.py`) compares engines question by question, so each
engine is wrapped to answer the same questions in the same words:

    Engine          name: str
                    compile(ebnf_text, root) -> EngineMatcher
    EngineMatcher   accept_token(token_id) -> bool
                    accept_bytes(data) -> bool     prefix semantics, all or nothing: True iff the
                                                   bytes so far + data are a prefix of a sentence
                    is_completed() -> bool         the bytes so far are a sentence
                    bool_mask() -> np.bool_[vocab_size]
                    rollback(n)                    undo the last n accept_token / accept_bytes calls
                    reset()

Every engine sees the same decoded vocabulary: `XGrammarEngine` is built from xg2ref's
`TokenizerInfo.decoded_vocab` as a RAW vocabulary with the same stop ids and vocab size, so a
token id means the same bytes in both. xgrammar is optional; it is imported when an
`XGrammarEngine` is made, and `EngineUnavailable` says how to install it when it is missing.

The oracle is slow (one recognizer run per token, see `brute_force.py`), so `OracleMatcher`
answers masks on demand and on a given subset of token ids (`mask_on`); `bool_mask()` asks
about every token and is meant for small vocabularies.

What it leaves out: llguidance, batched masks, jump-forward strings and forks.
"""

from __future__ import annotations

import importlib
import json
from typing import Iterable, Optional, Protocol, Sequence

import numpy as np

from ..bitmask import unpack_bitmask
from ..grammar.ir import GrammarIR
from ..tokenizer_info import TokenizerInfo
from .recognizer import Recognizer

__all__ = ["Engine", "EngineMatcher", "EngineUnavailable", "XG2RefEngine", "PDAEngine", "XGrammarEngine", "OracleEngine",
           "OracleMatcher", "unpack_bitmask"]


class EngineUnavailable(RuntimeError):
    """An engine whose package is not installed."""


class EngineMatcher(Protocol):
    def accept_token(self, token_id: int) -> bool: ...
    def accept_bytes(self, data: bytes) -> bool: ...
    def is_completed(self) -> bool: ...
    def bool_mask(self) -> np.ndarray: ...
    def rollback(self, num_steps: int) -> None: ...
    def reset(self) -> None: ...


class Engine(Protocol):
    name: str

    def compile(self, ebnf_text: str, root: str = "root") -> EngineMatcher: ...


class _GrammarMatcherAdapter:
    """The common interface over an object with xgrammar's `GrammarMatcher` API (`self.matcher`);
    subclasses add `bool_mask`."""

    matcher = None

    def accept_token(self, token_id: int) -> bool:
        return bool(self.matcher.accept_token(int(token_id)))

    def accept_bytes(self, data: bytes) -> bool:
        return bool(self.matcher.accept_string(bytes(data)))

    def is_completed(self) -> bool:
        return bool(self.matcher.is_completed())

    def rollback(self, num_steps: int) -> None:
        self.matcher.rollback(num_steps)

    def reset(self) -> None:
        self.matcher.reset()

    def captures(self) -> list:
        """`get_captures()`: (label, bytes) pairs, the longest span of each occurrence."""
        return [(str(label), bytes(span)) for label, span in self.matcher.get_captures()]


# ---- xg2ref ---------------------------------------------------------------------------------


class XG2RefMatcher(_GrammarMatcherAdapter):
    """xg2ref's `GrammarMatcher` behind the common interface."""

    def __init__(self, matcher):
        self.matcher = matcher

    def bool_mask(self) -> np.ndarray:
        return self.matcher.compute_bool_mask()


class XG2RefEngine:
    """xg2ref: `GrammarCompiler(tokenizer_info)` and `GrammarMatcher`."""

    name = "xg2ref"

    def __init__(self, tokenizer_info: TokenizerInfo):
        from ..compiler import GrammarCompiler

        self.tokenizer_info = tokenizer_info
        self.compiler = GrammarCompiler(tokenizer_info)

    def compile(self, ebnf_text: str, root: str = "root") -> XG2RefMatcher:
        from ..matcher import GrammarMatcher

        compiled = self.compiler.compile_grammar(ebnf_text, root_rule_name=root)
        return XG2RefMatcher(GrammarMatcher(compiled))

    def compile_front_end(self, kind: str, spec, **options) -> XG2RefMatcher:
        """A regex, JSON schema (with its `options`), Lark grammar, structural tag or tool-calling
        format (`{"model", "tools"}`), through xg2ref's own front end."""
        from ..builtin_structural_tag import get_model_structural_tag
        from ..matcher import GrammarMatcher

        if kind == "tool_calls":
            kind, spec = "structural_tag", get_model_structural_tag(spec["model"], tools=spec["tools"])
        if kind == "json_schema":
            return XG2RefMatcher(GrammarMatcher(self.compiler.compile_json_schema(spec, **options)))
        if kind == "lark":  # (options: the dialect)
            return XG2RefMatcher(GrammarMatcher(self.compiler.compile_lark(spec, **options)))
        compile_ = {"regex": self.compiler.compile_regex, "lark": self.compiler.compile_lark,
                    "structural_tag": self.compiler.compile_structural_tag}[kind]
        return XG2RefMatcher(GrammarMatcher(compile_(spec)))


class PDAEngine:
    """XGrammar-1's pushdown automaton (xg2ref/baselines/pda/) with its defaults: a second
    executor over xg2ref's machines, so that a disagreement with the Earley engine locates a
    parser bug. A grammar it refuses (left recursion, budgets, ...) raises UnsupportedByBaseline."""

    name = "pda"

    def __init__(self, tokenizer_info: TokenizerInfo, **options):
        from ..baselines.pda import PDACompiler

        self.tokenizer_info = tokenizer_info
        self.compiler = PDACompiler(tokenizer_info, **options)

    def compile(self, ebnf_text: str, root: str = "root") -> XG2RefMatcher:
        from ..baselines.pda import PDAMatcher

        return XG2RefMatcher(PDAMatcher(self.compiler.compile_grammar(ebnf_text, root_rule_name=root)))

    def compile_front_end(self, kind: str, spec, **options) -> XG2RefMatcher:
        """A front-end case through xg2ref's own front end, then the PDA."""
        from ..baselines.pda import PDAMatcher
        from ..builtin_structural_tag import get_model_structural_tag
        from ..grammar.grammar import Grammar

        if kind == "tool_calls":
            kind, spec = "structural_tag", get_model_structural_tag(spec["model"], tools=spec["tools"])
        grammar = {"json_schema": lambda: Grammar.from_json_schema(spec, **options),
                   "regex": lambda: Grammar.from_regex(spec), "lark": lambda: Grammar.from_lark(spec, **options),
                   "structural_tag": lambda: Grammar.from_structural_tag(spec)}[kind]()
        return XG2RefMatcher(PDAMatcher(self.compiler.compile_grammar(grammar)))


# ---- xgrammar -------------------------------------------------------------------------------


def import_xgrammar():
    """The xgrammar module, or EngineUnavailable with the command that installs it."""
    try:
        return importlib.import_module("xgrammar")
    except ImportError as err:
        raise EngineUnavailable(
            f"xgrammar is not installed ({err}); install it with `pip install 'xgrammar==0.2.8'` "
            "or `pip install -e '.[oracle]'`") from None


def xgrammar_version() -> Optional[str]:
    """The installed xgrammar version, None when it is not installed."""
    try:
        from importlib.metadata import version

        return version("xgrammar")
    except Exception:
        return None


class XGrammarMatcher(_GrammarMatcherAdapter):
    """xgrammar's `GrammarMatcher` behind the common interface (masks unpacked from its bitmask)."""

    def __init__(self, xgr, matcher, vocab_size: int):
        self.matcher = matcher
        self.vocab_size = vocab_size
        self._bitmask = xgr.allocate_token_bitmask(1, vocab_size)

    def bool_mask(self) -> np.ndarray:
        self.matcher.fill_next_token_bitmask(self._bitmask)
        return unpack_bitmask(self._bitmask.numpy()[0], self.vocab_size)


class XGrammarEngine:
    """xgrammar 0.2.8 over a RAW vocabulary of decoded bytes (the same one xg2ref uses).

    Example: XGrammarEngine(info.decoded_vocab, info.stop_token_ids, info.vocab_size)
    """

    name = "xgrammar"

    def __init__(self, encoded_vocab: Sequence[bytes], stop_token_ids: Iterable[int], vocab_size: int):
        self.xgr = import_xgrammar()
        self.version = xgrammar_version()
        self.vocab_size = int(vocab_size)
        self.tokenizer_info = self.xgr.TokenizerInfo(list(encoded_vocab), self.xgr.VocabType.RAW,
                                                     vocab_size=self.vocab_size,
                                                     stop_token_ids=list(stop_token_ids))
        self.compiler = self.xgr.GrammarCompiler(self.tokenizer_info, cache_enabled=False)

    @classmethod
    def from_tokenizer_info(cls, info: TokenizerInfo) -> "XGrammarEngine":
        return cls(info.decoded_vocab, info.stop_token_ids, info.vocab_size)

    def compile(self, ebnf_text: str, root: str = "root") -> XGrammarMatcher:
        grammar = self.xgr.Grammar.from_ebnf(ebnf_text, root_rule_name=root)
        compiled = self.compiler.compile_grammar(grammar)
        return XGrammarMatcher(self.xgr, self.xgr.GrammarMatcher(compiled), self.vocab_size)

    def compile_front_end(self, kind: str, spec, **options) -> XGrammarMatcher:
        """A regex, JSON schema (with its `options`), Lark grammar, structural tag or tool-calling
        format, through xgrammar's own front end (its own `get_model_structural_tag` for tool
        calls)."""
        if kind == "regex":
            compiled = self.compiler.compile_regex(spec)
        elif kind == "json_schema":
            compiled = self.compiler.compile_json_schema(json.dumps(spec), **options)
        elif kind == "lark":
            if options.get("dialect", "xgrammar") != "xgrammar":
                raise ValueError("xgrammar reads Lark in its own dialect only (the case is read in "
                                 f"{options['dialect']}'s)")
            compiled = self.compiler.compile_lark(spec)
        elif kind == "tool_calls":
            tag = self.xgr.get_model_structural_tag(spec["model"], tools=spec["tools"])
            compiled = self.compiler.compile_structural_tag(tag)
        else:
            compiled = self.compiler.compile_structural_tag(json.dumps(spec))
        return XGrammarMatcher(self.xgr, self.xgr.GrammarMatcher(compiled), self.vocab_size)


# ---- the brute-force oracle -----------------------------------------------------------------

_STOP_STEP = -1
_MAX_REMEMBERED = 100_000


class OracleMatcher:
    """The brute-force oracle as a matcher: the bytes so far, and a recognizer to ask.

    Token verdicts follow `brute_force_mask`: a stop token iff the bytes so far are a sentence,
    a special or empty token never, any other token iff prefix + its bytes is a viable prefix
    (with the grammar's token sets, the token may also be read whole: `marks`).
    """

    def __init__(self, ir: GrammarIR, vocab: TokenizerInfo):
        self.recognizer = Recognizer(ir)
        self.vocab = vocab.decoded_vocab
        self.vocab_size = vocab.vocab_size
        self.stop_token_ids = frozenset(vocab.stop_token_ids)
        self.special_token_ids = frozenset(vocab.special_token_ids)
        self._viable: dict[bytes, bool] = {}  # input -> is a viable prefix (answers never change)
        self.reset()

    @property
    def prefix(self) -> bytes:
        """The bytes accepted so far."""
        return bytes(self._prefix)

    def reset(self) -> None:
        self._prefix = bytearray()
        self._marks: dict[int, tuple[int, int]] = {}  # tokens read whole: position -> (id, length)
        self._steps: list[int] = []
        self._stopped = False

    def _mark(self, token_id: Optional[int], data: bytes) -> dict:
        marks = dict(self._marks)
        if token_id is not None and self.recognizer.has_token_sets:
            marks[len(self._prefix)] = (token_id, len(data))
        return marks

    def is_prefix(self, data: bytes, token_id: Optional[int] = None) -> bool:
        """prefix + data is a prefix of a sentence, `data` being token `token_id` when given
        (answers are remembered)."""
        marks = self._mark(token_id, data)
        key = (bytes(self._prefix) + bytes(data), tuple(sorted(marks.items())))
        verdict = self._viable.get(key)
        if verdict is None:
            if len(self._viable) >= _MAX_REMEMBERED:
                self._viable.clear()
            verdict = self._viable[key] = self.recognizer.is_prefix(key[0], marks)
        return verdict

    def accept_bytes(self, data: bytes, token_id: Optional[int] = None) -> bool:
        if self._stopped or not self.is_prefix(data, token_id):
            return False
        self._marks = self._mark(token_id, data)
        self._prefix += data
        self._steps.append(len(data))
        return True

    def accept_token(self, token_id: int) -> bool:
        if self._stopped or not 0 <= token_id < self.vocab_size:
            return False
        if token_id in self.stop_token_ids:
            if not self.is_completed():
                return False
            self._stopped = True
            self._steps.append(_STOP_STEP)
            return True
        token = self.vocab[token_id] if token_id < len(self.vocab) else b""
        if token_id in self.special_token_ids or not token:
            return False
        return self.accept_bytes(token, token_id)

    def is_completed(self) -> bool:
        return self._stopped or self.recognizer.is_sentence(bytes(self._prefix), self._marks)

    def token_allowed(self, token_id: int) -> bool:
        """Whether token `token_id` is allowed next (one recognizer run at most)."""
        token_id = int(token_id)
        if self._stopped or not 0 <= token_id < self.vocab_size:
            return False
        if token_id in self.stop_token_ids:
            return self.recognizer.is_sentence(bytes(self._prefix), self._marks)
        token = self.vocab[token_id] if token_id < len(self.vocab) else b""
        if token_id in self.special_token_ids or not token:
            return False
        return self.is_prefix(token, token_id)

    def mask_on(self, token_ids: Iterable[int]) -> np.ndarray:
        """bool[len(token_ids)]: the oracle's verdict on each of `token_ids`, in order."""
        return np.array([self.token_allowed(t) for t in token_ids], dtype=np.bool_)

    def bool_mask(self) -> np.ndarray:
        """The whole mask: one recognizer run per token (small vocabularies only)."""
        mask = np.zeros(self.vocab_size, dtype=np.bool_)
        mask[:] = self.mask_on(range(self.vocab_size))
        return mask

    def rollback(self, num_steps: int) -> None:
        if not 0 <= num_steps <= len(self._steps):
            raise ValueError(f"cannot roll back {num_steps} steps: only {len(self._steps)} were taken")
        for _ in range(num_steps):
            step = self._steps.pop()
            if step == _STOP_STEP:
                self._stopped = False
            elif step:
                del self._prefix[-step:]
                self._marks.pop(len(self._prefix), None)


class OracleEngine:
    """The brute-force oracle over `tokenizer_info`'s vocabulary (see `OracleMatcher`)."""

    name = "oracle"

    def __init__(self, tokenizer_info: TokenizerInfo):
        self.tokenizer_info = tokenizer_info

    def compile(self, ebnf_text: str, root: str = "root") -> OracleMatcher:
        from ..grammar.grammar import Grammar

        return OracleMatcher(Grammar.from_ebnf(ebnf_text, root_rule_name=root).ir, self.tokenizer_info)

    def from_ir(self, ir: GrammarIR) -> OracleMatcher:
        return OracleMatcher(ir, self.tokenizer_info)
