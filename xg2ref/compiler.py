"""xgrammar's compile step: a grammar plus a vocabulary become a `CompiledGrammar`.

Compiling runs the normalization passes (`xg2ref/grammar/passes.py`), builds one byte FSM
per rule (XGrammar-2 §3.3, `xg2ref/fsm/build.py`) with the facts read from them (both in
`xg2ref/analysis.py`, shared with the linker) and flattens them into the arrays the Earley
kernels read, then builds the adaptive token-mask cache (XGrammar-2 §3.4,
`xg2ref/mask/cache.py`): one entry per class of scannable FSM states, eagerly, or on first use
with JIT (§3.5). `GrammarCompiler` keeps a grammar-level cache keyed by the printed grammar, as
xgrammar does, and the cross-grammar cache of entries (§3.3, `xg2ref/mask/cross_grammar.py`),
keyed by FSM hashes (`xg2ref/fsm/hashing.py`). A structural tag is compiled from parts: each
embedded sub-grammar once per compiler, linked into the grammars that embed it
(`compile_linked_grammar`, `xg2ref/linking.py`).

What it leaves out: `max_threads` is accepted and ignored (one thread).
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from typing import Optional, Union

import numpy as np

from .analysis import AnalysedGrammar, analyse
from .mask.background import background_default, foreground
from .mask.cross_grammar import CrossGrammarCache
from .config import get_json_schema_approximate, get_json_schema_exact_formats
from .exceptions import GrammarLimitError
from .fsm.build import FSMArrays, GrammarFSMs
from .grammar.grammar import Grammar, ir_signature
from .grammar.ir import GrammarIR
from .grammar.repetition import REPETITION_THRESHOLD
from .linking import PartCache, link, stub_rule
from .lookahead import LookaheadReport
from .memory import CacheBound
from .mask.cache import AdaptiveTokenMaskCache, BuildPlan, GrammarFacts
from .tokenizer_info import TokenizerInfo


# The default bound on one compiled grammar's memory (GrammarCompiler's max_grammar_bytes).
DEFAULT_MAX_GRAMMAR_BYTES = 2 << 30


class CompiledGrammar:
    """A grammar compiled against one tokenizer: what `GrammarMatcher` runs on.

    Attributes: `grammar` (the source `Grammar`), `tokenizer_info`, `fsms` (per-rule FSMs),
    `arrays` (their flat form), `mask_cache` (the adaptive token-mask cache),
    `lookahead_report` (which lookahead assertions the cache used: xg2ref/lookahead.py),
    `memory_size_bytes`.
    """

    def __init__(self, grammar: Grammar, tokenizer_info: TokenizerInfo, fsms: GrammarFSMs, arrays: FSMArrays,
                 mask_cache: AdaptiveTokenMaskCache, lookahead_report: Optional[LookaheadReport] = None):
        self.grammar = grammar
        self.tokenizer_info = tokenizer_info
        self.fsms = fsms
        self.arrays = arrays
        self.mask_cache = mask_cache
        self.lookahead_report = lookahead_report if lookahead_report is not None else LookaheadReport()
        self.rule_hashes = None  # the FSM hashes (fsm/hashing.py), when compiled with a cross-grammar cache

    @property
    def memory_size_bytes(self) -> int:
        """Bytes held by the FSM arrays and the mask cache."""
        return int(sum(a.nbytes for a in self.arrays)) + self.mask_cache.memory_size_bytes

    def serialize_json(self) -> str:
        """The grammar and its tokenizer's metadata as versioned JSON text, without the tokenizer
        itself (xg2ref/serialization.py: deserializing compiles again, with the same masks)."""
        from .serialization import serialize_compiled

        return serialize_compiled(self)

    @staticmethod
    def deserialize_json(json_str: str, tokenizer_info: TokenizerInfo) -> "CompiledGrammar":
        """The compiled grammar `serialize_json` wrote, for `tokenizer_info`, whose metadata must
        be the one it was compiled with (else DeserializeFormatError)."""
        from .serialization import deserialize_compiled_ir

        ir = deserialize_compiled_ir(json_str, tokenizer_info, ir_signature)
        return GrammarCompiler(tokenizer_info, cache_enabled=False).compile_grammar(Grammar(ir))

    def __repr__(self) -> str:
        return (f"CompiledGrammar({len(self.fsms.rule_names)} rules, {self.fsms.num_states} FSM states, "
                f"vocab_size={self.tokenizer_info.vocab_size})")


def compile_ir_grammar(grammar: Grammar, tokenizer_info: TokenizerInfo, *, jit: bool = False,
                       eager_entries: Optional[int] = 0, pool: Optional[CrossGrammarCache] = None,
                       repetition_threshold: Optional[int] = REPETITION_THRESHOLD,
                       max_bytes: int = -1, share_entries: bool = True, leo_items: bool = True) -> CompiledGrammar:
    """Normalize, build the FSMs, flatten: no grammar-level caching. With `jit`, mask-cache
    entries are built when a mask first needs them, except the `eager_entries` estimated to
    cost most (XGrammar-2 §3.5; None: as many as the cost model chooses, mask/jit.py auto_eager);
    with `pool`, entries go through the cross-grammar cache (§3.3);
    repetitions of more than `repetition_threshold` copies are counted, not unrolled (§3.6;
    None: every repetition is unrolled); past `max_bytes` of FSM arrays and entries (negative: no
    limit), GrammarLimitError; without `share_entries`, one entry per scannable state (no state
    classes: XGrammar's cache, for the parser-only comparisons of the benches); `leo_items=False`
    completes right recursion item by item (kernels/earley.py, "Leo items": the ablation)."""
    start = time.perf_counter()
    a = analyse(grammar.ir, shapes=pool.shapes if pool is not None else None,
                repetition_threshold=repetition_threshold, hashed=pool is not None)
    return _assemble(grammar, tokenizer_info, a.analysed(), jit, eager_entries, pool, max_bytes, start,
                     share_entries, leo_items)


def compile_linked_grammar(grammar: Grammar, tokenizer_info: TokenizerInfo, parts: PartCache, *, jit: bool = False,
                           eager_entries: Optional[int] = 0, pool: Optional[CrossGrammarCache] = None,
                           repetition_threshold: Optional[int] = REPETITION_THRESHOLD,
                           max_bytes: int = -1, leo_items: bool = True) -> CompiledGrammar:
    """`compile_ir_grammar` for a grammar assembled from sub-grammars (`grammar.parts`): each
    sub-grammar compiled once into `parts`, the top grammar compiled around stand-ins for them,
    then linked (xg2ref/linking.py)."""
    start = time.perf_counter()
    top, subgrammars = grammar.parts
    shapes = pool.shapes if pool is not None else None
    compiled = {sub.name: (k, parts.get(sub.key, sub.make, shapes, repetition_threshold))
                for k, sub in enumerate(subgrammars)}
    rules = tuple(stub_rule(r.name, *compiled[r.name]) if r.name in compiled else r for r in top.rules)
    a = analyse(GrammarIR(rules, top.root), shapes=shapes, repetition_threshold=repetition_threshold,
                hashed=pool is not None,
                stand_ins={name: (p.hashes.hashes[p.root], p.hashes.kinds[p.root]) for name, (_, p) in compiled.items()})
    stubs = {r: compiled[name][1] for r, name in enumerate(a.fsms.rule_names) if name in compiled}
    linked = link(a.fsms, a.first, a.follow, a.lookahead, a.report, a.hashes, stubs)
    return _assemble(grammar, tokenizer_info, linked, jit, eager_entries, pool, max_bytes, start,
                     leo_items=leo_items)


def _assemble(grammar: Grammar, tokenizer_info: TokenizerInfo, analysed: AnalysedGrammar, jit: bool,
              eager_entries: Optional[int], pool: Optional[CrossGrammarCache], max_bytes: int = -1,
              start: Optional[float] = None, share_entries: bool = True, leo_items: bool = True) -> CompiledGrammar:
    """The mask cache over the analysed machines, and the compiled grammar holding both
    (`start`: when compiling began, for the cost model's budget)."""
    fsms, arrays, hashes, lookahead = analysed.fsms, analysed.arrays, analysed.hashes, analysed.lookahead
    if not leo_items:
        arrays = arrays._replace(rule_leo=np.zeros_like(arrays.rule_leo))
    for token_set in fsms.token_sets:
        for t in token_set.ids:
            if t >= tokenizer_info.vocab_size:
                raise ValueError(f"Token id {t} in the grammar is out of the vocabulary range "
                                 f"[0, {tokenizer_info.vocab_size})")
    fsm_bytes = int(sum(a.nbytes for a in arrays))
    if 0 <= max_bytes < fsm_bytes:
        raise GrammarLimitError(f"the grammar's FSM arrays need {fsm_bytes:,} bytes, more than {max_bytes:,} "
                                f"(GrammarCompiler's max_grammar_bytes)")
    view = None
    if pool is not None:
        pool.note_rules(hashes)
        view = pool.view(fsms, hashes, lookahead, len(tokenizer_info.vocab_arrays().sorted_ids))
    facts = GrammarFacts(lookahead, analysed.follow, analysed.first, analysed.state_classes)
    plan = BuildPlan(jit, eager_entries, share_entries, max_bytes=max_bytes - fsm_bytes if max_bytes >= 0 else -1,
                     compile_seconds=time.perf_counter() - start if start is not None else 0.0)
    cache = AdaptiveTokenMaskCache(arrays, tokenizer_info.vocab_arrays(), tokenizer_info.vocab_size, facts, plan,
                                   pool=view)
    compiled = CompiledGrammar(grammar, tokenizer_info, fsms, arrays, cache, analysed.report)
    compiled.rule_hashes = hashes
    return compiled


class GrammarCompiler:
    """Compiles grammars for one tokenizer, caching results (xgrammar's `GrammarCompiler`).

    The defaults are XGrammar-2's, every mechanism on: mask entries built just in time (§3.5),
    the few whose first visit would cost most built at compile time as the cost model chooses
    (`mask/jit.py auto_eager`), the cross-grammar cache (§3.3) with linked sub-grammars, and
    repetition compression (§3.6). Two caches, as in xgrammar: whole grammars keyed by their
    printed form (or a front end's input), and the cross-grammar cache of mask entries, shared by
    all grammars this compiler compiles. `cache_limit_bytes` (negative: no limit) bounds all the
    compiler keeps (`memory_account`: grammars, the pool, the shape cache, linked parts and its
    vocabulary's tables), checked at each compile and each reading of the account: least
    recently used grammars go first, and the
    pool, shapes and parts while they hold more than a third of it (xg2ref/memory.py, LIMIT).

    Switches, for the ablation (XGrammar-2 Table 4; masks are the same in every configuration):
    `jit=False` builds every entry at compile time; `background_builds=False` keeps JIT entries
    to the fills that need them (by default a builder thread builds them beside decoding, nearest
    to the matchers' positions first: mask/background.py); `jit_eager_entries=K` builds the K estimated
    to cost most instead of the cost model's choice; `cross_grammar_cache=False` keeps entries per
    grammar (it follows `cache_enabled` otherwise); `repetition_compression=False` unrolls every
    repetition instead of counting those of more than `repetition_threshold` copies;
    `leo_items=False` completes right recursion item by item instead of through Leo items
    (kernels/earley.py), quadratic in the length of a right-recursive list.

    Memory: `max_grammar_bytes` bounds one compiled grammar, its FSM arrays and its mask-cache
    entries (DEFAULT_MAX_GRAMMAR_BYTES, 2 GiB; negative: no limit). Past it, compiling, or with
    JIT the fill that builds the entry, raises GrammarLimitError; the FSM builder's own limits
    (specs/02-fsm.md) bound the machines before they are built.
    """

    def __init__(self, tokenizer_info: TokenizerInfo, *, max_threads: int = 8, cache_enabled: bool = True,
                 cache_limit_bytes: int = -1, jit: bool = True, jit_eager_entries: Optional[int] = None,
                 cross_grammar_cache: Optional[bool] = None, repetition_compression: bool = True,
                 repetition_threshold: int = REPETITION_THRESHOLD, max_grammar_bytes: Optional[int] = None,
                 background_builds: Optional[bool] = None, leo_items: bool = True):
        if max_grammar_bytes is None:
            max_grammar_bytes = DEFAULT_MAX_GRAMMAR_BYTES
        if not isinstance(tokenizer_info, TokenizerInfo):
            raise TypeError(f"GrammarCompiler needs a TokenizerInfo, got {type(tokenizer_info).__name__}")
        if jit_eager_entries is not None and jit_eager_entries < 0:
            raise ValueError(f"jit_eager_entries must be >= 0 or None (the cost model), got {jit_eager_entries}")
        if repetition_threshold < 1:
            raise ValueError(f"repetition_threshold must be >= 1, got {repetition_threshold}")
        self.tokenizer_info = tokenizer_info
        self.max_threads = max_threads
        self.cache_enabled = cache_enabled
        self.cache_limit_bytes = cache_limit_bytes
        self.jit = jit  # build mask-cache entries on first use (XGrammar-2 §3.5)
        # ... and on the builder thread beside decoding (mask/background.py)
        self.background_builds = background_default() if background_builds is None else bool(background_builds)
        self.jit_eager_entries = jit_eager_entries
        self.repetition_threshold = repetition_threshold if repetition_compression else None
        self.max_grammar_bytes = max_grammar_bytes
        self.leo_items = leo_items  # right recursion completed through Leo items (kernels/earley.py)
        # compiles from several threads take turns: the two caches, the shape cache and the linked
        # parts are the compiler's, shared by every grammar it compiles (fills of compiled grammars
        # do not wait for it; they take their grammar's lock, then the pool's)
        self._lock = threading.RLock()
        self._cache: "OrderedDict[str, CompiledGrammar]" = OrderedDict()
        self.grammar_cache_lookups = 0  # compile calls that consulted the grammar-level cache
        self.grammar_cache_hits = 0  # ... and found the whole grammar there
        use_pool = cache_enabled if cross_grammar_cache is None else cross_grammar_cache
        self.pool = CrossGrammarCache(cache_limit_bytes // 3 if cache_limit_bytes >= 0 else -1) if use_pool else None
        # sub-grammars compiled once and linked into the grammars that embed them (linking.py)
        self.parts = PartCache() if use_pool else None
        self._bound = CacheBound(self)  # the memory account and the limit on it (memory.py)

    def _compile(self, grammar: Grammar) -> CompiledGrammar:
        with self._lock, foreground():  # (the builder thread waits for a gap in the foreground's work)
            compiled = self._compile_now(grammar)
            if self.jit and self.background_builds:
                compiled.mask_cache.build_in_background()
        return compiled

    def _compile_now(self, grammar: Grammar) -> CompiledGrammar:
        if grammar.parts is not None and self.parts is not None:
            return compile_linked_grammar(grammar, self.tokenizer_info, self.parts, jit=self.jit,
                                          eager_entries=self.jit_eager_entries, pool=self.pool,
                                          repetition_threshold=self.repetition_threshold,
                                          max_bytes=self.max_grammar_bytes, leo_items=self.leo_items)
        return compile_ir_grammar(grammar, self.tokenizer_info, jit=self.jit, eager_entries=self.jit_eager_entries,
                                  pool=self.pool, repetition_threshold=self.repetition_threshold,
                                  max_bytes=self.max_grammar_bytes, leo_items=self.leo_items)

    def compile_grammar(self, grammar: Union[str, Grammar], *, root_rule_name: str = "root") -> CompiledGrammar:
        """Compile EBNF text or a `Grammar`."""
        if isinstance(grammar, str):
            grammar = Grammar.from_ebnf(grammar, root_rule_name=root_rule_name)
        elif not isinstance(grammar, Grammar):
            raise TypeError(f"compile_grammar needs EBNF text or a Grammar, got {type(grammar).__name__}")
        if not self.cache_enabled:
            return self._compile(grammar)
        return self._cached(("grammar", str(grammar), grammar.ir.root), lambda: grammar)

    def _cached(self, key: tuple, make_grammar) -> CompiledGrammar:
        """The grammar-level cache: what was compiled under `key`, else `make_grammar()` compiled.
        Front ends key by their input (a schema, a structural tag), as xgrammar does, so a hit
        costs no conversion; EBNF text and `Grammar` objects key by the printed grammar. Two
        threads asking for one key get one compiled grammar."""
        with self._lock:
            return self._cached_locked(key, make_grammar)

    def _cached_locked(self, key: tuple, make_grammar) -> CompiledGrammar:
        hit = self._cache.get(key)
        self.grammar_cache_lookups += 1
        if hit is not None:
            self._cache.move_to_end(key)
            self.grammar_cache_hits += 1
            if self.pool is not None and hit.rule_hashes is not None:
                self.pool.note_rules(hit.rule_hashes)  # a whole structure reused: each rule of it too
            return hit
        compiled = self._compile(make_grammar())
        self._cache[key] = compiled
        if self.cache_limit_bytes >= 0:
            self._bound.note(compiled)
            self._bound.enforce(self.cache_limit_bytes)
        return compiled

    def _input_key(self, kind: str, value, *options) -> Optional[tuple]:
        """A cache key for a front end's input, None when it is not plain JSON data."""
        if not self.cache_enabled or isinstance(value, type):
            return None
        if hasattr(value, "model_dump"):
            value = value.model_dump(exclude_none=True)
        try:
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        except (TypeError, ValueError):
            return None
        return (kind, text) + options

    def compile_json_schema(self, schema, *, any_whitespace: bool = True, indent: Optional[int] = None,
                            separators: Optional[tuple] = None, strict_mode: bool = True,
                            max_whitespace_cnt: Optional[int] = None, any_order: bool = False,
                            approximate: Optional[bool] = None,
                            exact_formats: Optional[bool] = None) -> CompiledGrammar:
        """`Grammar.from_json_schema` with the same options, compiled."""
        approximate = get_json_schema_approximate(approximate)
        exact_formats = get_json_schema_exact_formats(exact_formats)

        def make():
            return Grammar.from_json_schema(schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
                                            strict_mode=strict_mode, max_whitespace_cnt=max_whitespace_cnt,
                                            any_order=any_order, approximate=approximate,
                                            exact_formats=exact_formats)

        key = self._input_key("schema", schema, any_whitespace, indent, tuple(separators or ()), strict_mode,
                              max_whitespace_cnt, any_order, approximate, exact_formats)
        return self._cached(key, make) if key is not None else self.compile_grammar(make())

    def compile_regex(self, regex: str) -> CompiledGrammar:
        """The grammar of the strings `regex` matches as a whole (`Grammar.from_regex`)."""
        return self.compile_grammar(Grammar.from_regex(regex))

    def compile_lark(self, lark_string: str, *, named_grammars=None, dialect: Optional[str] = None) -> CompiledGrammar:
        """`Grammar.from_lark` with this compiler's vocabulary for named special tokens,
        compiled; cached by the text, the named grammars and the dialect."""
        from .frontends.lark.converter import lark_cache_key

        def make():
            return Grammar.from_lark(lark_string, tokenizer_info=self.tokenizer_info, named_grammars=named_grammars,
                                     dialect=dialect)

        key = lark_cache_key(lark_string, named_grammars, Grammar) if self.cache_enabled else None
        key = key if key is None or dialect is None else key + (dialect,)
        return self._cached(key, make) if key is not None else self.compile_grammar(make())

    def compile_structural_tag(self, structural_tag, triggers=None) -> CompiledGrammar:
        """`Grammar.from_structural_tag`, with token strings resolved against this compiler's
        vocabulary, compiled."""
        from .frontends.structural_tag.converter import legacy_structural_tag, structural_tag_parts, structural_tag_to_ir

        def make():
            tag = legacy_structural_tag(structural_tag, triggers) if triggers is not None else structural_tag
            if self.parts is None:
                return Grammar.from_ir(structural_tag_to_ir(tag, self.tokenizer_info))
            top, subgrammars = structural_tag_parts(tag, self.tokenizer_info)
            return Grammar._assembled(lambda: structural_tag_to_ir(tag, self.tokenizer_info), top, subgrammars)

        key = self._input_key("structural_tag", structural_tag) if triggers is None else None
        return self._cached(key, make) if key is not None else self.compile_grammar(make())

    def compile_builtin_json_grammar(self) -> CompiledGrammar:
        """The builtin JSON grammar (`Grammar.builtin_json_grammar()`)."""
        return self.compile_grammar(Grammar.builtin_json_grammar())

    def memory_account(self) -> dict:
        """Bytes this compiler keeps, by part: "vocabulary" (its tokenizer's tables, shared with
        every compiler over it), "grammars", "pool" (the cross-grammar cache), "shapes" and
        "parts" (linked sub-grammars); each object counted once (xg2ref/memory.py, ACCOUNT). Entries
        built since the last compile may have passed `cache_limit_bytes`: it is enforced first."""
        with self._lock:
            lines = self._bound.walk()
            if 0 <= self.cache_limit_bytes < sum(lines.values()) - lines["vocabulary"]:
                self._bound.enforce(self.cache_limit_bytes)  # (entries built since the last compile)
                self._bound.enforce(self.cache_limit_bytes, walked=True)
                lines = self._bound.walk()
            return lines

    def get_cache_size_bytes(self) -> int:
        """Bytes this compiler keeps: the sum of `memory_account()`."""
        return sum(self.memory_account().values())

    def clear_cache(self) -> None:
        """Empty both caches (statistics are kept)."""
        with self._lock:
            self._cache.clear()
            if self.pool is not None:
                self.pool.clear()
                self.parts.clear()

    @property
    def cache_stats(self):
        """The cross-grammar cache's `PoolStats` (None when it is off)."""
        return self.pool.stats if self.pool is not None else None
