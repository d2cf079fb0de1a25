"""XGrammar-1's engine as a baseline: compile a grammar to pushdown-automaton machines (with the
switches of XGrammar §4.3's ablation) and match tokens through the persistent stack, with
xgrammar's matcher API.

    PDACompiler(info, stage="dfa", mask_cache=True, inline="xg1", context_expansion=True,
                prefix_reuse=True, max_stacks=100_000)
        .compile_grammar / compile_json_schema / compile_regex / compile_builtin_json_grammar
    PDAMatcher(compiled)
        accept_token, accept_string, fill_next_token_bitmask, compute_bool_mask, rollback, reset,
        is_completed, is_terminated

The switches, one per row of XGrammar's Table 3:

    stage              "nfa" (the PDA baseline), "merged" (+ node merging), "dfa" (the Earley engine's machines)
    mask_cache         the adaptive token mask cache (§3.1); off, every token is read per mask
    inline             "none", "xg1" (rules that reference no rule), "xg2ref" (the default pass)
    context_expansion  Alg. 2 prunes uncertain tokens at build time (§3.2)
    lookahead          the rules' lookahead assertions prune them too (§3.2, as xgrammar 0.1 did)
    prefix_reuse       the byte-sorted walk shares the records of common prefixes (§3.3)

Stop tokens are allowed when the input so far is a sentence; special tokens never. Rollback is
unlimited (records of every step are kept).
"""

from __future__ import annotations

import time
from typing import Optional, Sequence, Union

import numpy as np

from ...bitmask import bitmask_row_view, pack_bool_mask, unpack_bitmask
from ...exceptions import MatcherError
from ...fsm.build import build_grammar_fsms
from ...grammar.grammar import Grammar
from ...kernels import pda_cache as C
from ...kernels.mask_fill import all_allowed
from ...lookahead import LookaheadArrays, first_bytes, lookahead_arrays
from ...matcher import STOP_STEP, pop_history
from ...tokenizer_info import TokenizerInfo, stop_token_list
from .cache import PDATokenMaskCache, context_arrays, vocabulary_trie, walk_every_token
from .machines import INLINE_MODES, STAGES, PDAMachines, build_machines, prepare_ir
from .stack import DEFAULT_MAX_STACKS, PersistentStack


class PDACompiledGrammar:
    """A grammar compiled for the pushdown automaton: its machines at one stage, the options it
    was compiled with, and the mask cache (None with mask_cache=False)."""

    def __init__(self, grammar: Grammar, tokenizer_info: TokenizerInfo, machines: PDAMachines,
                 cache: Optional[PDATokenMaskCache], options: dict, compile_seconds: float):
        self.grammar = grammar
        self.tokenizer_info = tokenizer_info
        self.machines = machines
        self.mask_cache = cache
        self.options = options
        self.compile_seconds = compile_seconds

    @property
    def memory_size_bytes(self) -> int:
        held = int(sum(a.nbytes for a in self.machines.arrays))
        return held + (self.mask_cache.memory_size_bytes if self.mask_cache is not None else 0)

    def __repr__(self) -> str:
        f = self.machines.fsms
        return (f"PDACompiledGrammar({len(f.rule_names)} rules, {f.num_states} states, stage={self.machines.stage!r}, "
                f"mask_cache={self.mask_cache is not None})")


class PDACompiler:
    """Compiles grammars for XGrammar-1's executor (module docstring); no grammar cache."""

    def __init__(self, tokenizer_info: TokenizerInfo, *, stage: str = "dfa", mask_cache: bool = True,
                 inline: str = "xg1", context_expansion: bool = True, prefix_reuse: bool = True,
                 lookahead: bool = False, max_stacks: int = DEFAULT_MAX_STACKS, progress=None):
        if not isinstance(tokenizer_info, TokenizerInfo):
            raise TypeError(f"PDACompiler needs a TokenizerInfo, got {type(tokenizer_info).__name__}")
        self.tokenizer_info = tokenizer_info
        self.options = dict(stage=stage, mask_cache=bool(mask_cache), inline=inline,
                            context_expansion=bool(context_expansion), prefix_reuse=bool(prefix_reuse),
                            lookahead=bool(lookahead), max_stacks=int(max_stacks))
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
        if inline not in INLINE_MODES:
            raise ValueError(f"inline must be one of {INLINE_MODES}, got {inline!r}")
        self.progress = progress

    def compile_grammar(self, grammar: Union[str, Grammar], *, root_rule_name: str = "root") -> PDACompiledGrammar:
        if isinstance(grammar, str):
            grammar = Grammar.from_ebnf(grammar, root_rule_name=root_rule_name)
        start = time.perf_counter()
        o = self.options
        ir = prepare_ir(grammar.ir, o["inline"])
        machines = build_machines(ir, o["stage"])
        cache = None
        if o["mask_cache"]:
            cache = PDATokenMaskCache(machines.arrays, self.tokenizer_info.vocab_arrays(),
                                      context_expansion=o["context_expansion"], prefix_reuse=o["prefix_reuse"],
                                      max_stacks=o["max_stacks"], lookahead=lookahead_filters(ir) if o["lookahead"]
                                      else None, progress=self.progress)
        return PDACompiledGrammar(grammar, self.tokenizer_info, machines, cache, dict(o),
                                  time.perf_counter() - start)

    def compile_builtin_json_grammar(self) -> PDACompiledGrammar:
        return self.compile_grammar(Grammar.builtin_json_grammar())

    def compile_json_schema(self, schema, **options) -> PDACompiledGrammar:
        return self.compile_grammar(Grammar.from_json_schema(schema, **options))

    def compile_regex(self, regex: str) -> PDACompiledGrammar:
        return self.compile_grammar(Grammar.from_regex(regex))

    def compile_structural_tag(self, structural_tag, triggers=None) -> PDACompiledGrammar:
        """A structural tag (xgrammar 0.2.8's format, or the legacy tags and triggers xgrammar
        0.1.19 read) through xg2ref's converter; its TagDispatch is one rule machine like any other."""
        from ...frontends.structural_tag.converter import legacy_structural_tag, structural_tag_to_ir

        tag = legacy_structural_tag(structural_tag, triggers) if triggers is not None else structural_tag
        return self.compile_grammar(Grammar.from_ir(structural_tag_to_ir(tag, self.tokenizer_info)))


def lookahead_filters(ir) -> LookaheadArrays:
    """The rules' lookahead filters (xg2ref/lookahead.py), computed on the Earley engine's
    machines of the same normalized grammar: a filter is about the bytes after a rule, the same
    at every stage, and the rules are numbered alike."""
    fsms = build_grammar_fsms(ir)
    return lookahead_arrays(ir, fsms, first_bytes(fsms))[0]


class PDAMatcher:
    """Matches one token sequence through the persistent stack (xgrammar's matcher API)."""

    def __init__(self, compiled_grammar: PDACompiledGrammar, *,
                 override_stop_tokens: Union[None, int, Sequence[int]] = None,
                 terminate_without_stop_token: bool = False):
        if not isinstance(compiled_grammar, PDACompiledGrammar):
            raise TypeError(f"PDAMatcher needs a PDACompiledGrammar, got {type(compiled_grammar).__name__}")
        self.compiled_grammar = compiled_grammar
        info = compiled_grammar.tokenizer_info
        self._vocab_size = info.vocab_size
        self._vocab = info.vocab_arrays()
        self._stops = np.array(stop_token_list(info, override_stop_tokens, self._vocab_size), dtype=np.int64)
        self._stop_word = self._stops >> 5
        self._stop_bit = (np.uint32(1) << (self._stops & 31).astype(np.uint32)).astype(np.uint32)
        self._is_stop = np.zeros(self._vocab_size, np.bool_)
        self._is_stop[self._stops] = True
        self._terminate_without_stop_token = terminate_without_stop_token
        opts = compiled_grammar.options
        arrays = compiled_grammar.machines.arrays
        self._stack = PersistentStack(arrays, opts["max_stacks"])
        self._cache = compiled_grammar.mask_cache
        self._prefix_reuse = opts["prefix_reuse"]
        if self._cache is None:
            self._trie, self._context = vocabulary_trie(self._vocab), context_arrays(arrays)
            self._out = np.zeros(len(self._vocab.sorted_ids), np.int8)
            self._pops = np.zeros(int(np.diff(self._vocab.token_offsets).max(initial=0)) + 2, np.bool_)
        self._mask = np.zeros(self._vocab_size, np.bool_)
        self._words = np.zeros((self._vocab_size + 31) // 32, np.int32)
        self._history: list[int] = []
        self._stop_accepted = False
        fsms = compiled_grammar.machines.fsms
        self._empty = not fsms.productive[fsms.root]  # the grammar has no sentence: nothing is a prefix
        self.bytes_read = 0  # bytes read by the masks' walks (no cache), for the ablation

    @property
    def stack(self) -> PersistentStack:
        """The persistent stack (for the teaching views)."""
        return self._stack

    def is_completed(self) -> bool:
        return self._stop_accepted or self._stack.can_end()

    def is_terminated(self) -> bool:
        if self._terminate_without_stop_token:
            return self._stack.can_end()
        return self._stop_accepted

    def reset(self) -> None:
        self._stack.reset()
        self._history.clear()
        self._stop_accepted = False

    def accept_token(self, token_id: int, *, debug_print: bool = False) -> bool:
        """Accept one token; False (state unchanged) when it is rejected, out of range, special,
        or the matcher has terminated."""
        if isinstance(token_id, bool) or not isinstance(token_id, (int, np.integer)):
            raise TypeError(f"token_id must be an integer, got {type(token_id).__name__}")
        if self._stop_accepted or self._empty or not 0 <= token_id < self._vocab_size:
            return False
        if self._is_stop[token_id]:
            if self._terminate_without_stop_token or not self._stack.can_end():
                return False
            self._stop_accepted = True
            self._history.append(STOP_STEP)
            return True
        v = self._vocab
        begin, end = v.token_offsets[token_id], v.token_offsets[token_id + 1]
        if begin == end or v.is_special[token_id] or v.is_stop[token_id]:
            return False
        if not self._stack.read(v.token_bytes[begin:end]):
            return False
        self._history.append(int(end - begin))
        return True

    def accept_string(self, input_str: Union[str, bytes], *, debug_print: bool = False) -> bool:
        """Accept a whole string (one rollback step); all or nothing."""
        if self._stop_accepted or self._empty:
            return False
        data = input_str.encode("utf-8") if isinstance(input_str, str) else bytes(input_str)
        if not self._stack.read(np.frombuffer(data, dtype=np.uint8)):
            return False
        self._history.append(len(data))
        return True

    def rollback(self, num_tokens: int = 1) -> None:
        for step in pop_history(self._history, num_tokens):
            if step == STOP_STEP:
                self._stop_accepted = False
            elif step:
                self._stack.rollback(step)

    def _fill_words(self) -> np.ndarray:
        """The allowed tokens now, as int32 bitmask words (`self._words`)."""
        if self._stop_accepted:
            raise MatcherError("the matcher has terminated after accepting a stop token; "
                               "there is no next-token mask (roll back or reset first)")
        bits = self._words.view(np.uint32)
        if self._cache is not None:
            self._cache.fill(self._stack, bits)
        else:
            self.bytes_read += walk_every_token(self._stack, self._trie, self._context, self._pops, self._out,
                                                self._prefix_reuse)
            mask = self._mask
            mask[:] = False
            mask[self._vocab.sorted_ids[self._out == C.ACCEPTED]] = True
            pack_bool_mask(mask, self._words)
        if len(self._stops):
            np.bitwise_and.at(bits, self._stop_word, ~self._stop_bit)
            if self._stack.can_end() and not self._terminate_without_stop_token:
                np.bitwise_or.at(bits, self._stop_word, self._stop_bit)
        return self._words

    def compute_bool_mask(self) -> np.ndarray:
        """bool[vocab_size]: the allowed tokens now (a fresh array)."""
        return unpack_bitmask(self._fill_words(), self._vocab_size)

    def fill_next_token_bitmask(self, bitmask, index: int = 0, *, debug_print: bool = False) -> bool:
        """Row `index` of an int32 bitmask (bit 1 = allowed); True when some token is masked."""
        row = bitmask_row_view(bitmask, index, self._vocab_size)
        words = self._fill_words()
        n = len(words)
        row[:n] = words
        if len(row) > n:
            row[n:] = 0
        return not bool(all_allowed(words, self._vocab_size))

    @property
    def num_stacks(self) -> int:
        return self._stack.num_stacks


__all__ = ["PDACompiler", "PDACompiledGrammar", "PDAMatcher"]
