"""`ClassMatcher`: the matcher API over an inner engine that runs over one representative per
token class (CFGzip §3.1, "online"; ../shared/SEED_SYSTEMS.md §3.4).

The inner engine is compiled over the *compressed vocabulary* (`compressed_tokenizer_info`): a
RAW vocabulary whose token k is the bytes of class k's representative, for each regular class k,
then one stop entry (id n_regular = the stop class). So class ids are the inner engine's token
ids, and

    accept_token(t)              inner.accept_token(class_of[t]); a NEVER token is refused
    fill_next_token_bitmask      the inner bitmask over classes, gathered to tokens by
                                 kernels/class_mask.py (NEVER tokens 0)
    accept_string, rollback, reset, is_terminated     passed through

By Theorem 1 the inner engine's state after the representatives is the state after the tokens
themselves (their bytes are congruent one by one), so every mask is the full vocabulary's.
A grammar's token sets name token ids; the inner engine's grammar names classes instead
(`class_grammar`): a class lies wholly inside or outside each set (classes.py), so

    Token(ids)          -> Token(the classes of the regular tokens in ids)
    ExcludeToken(ids)   -> ExcludeToken(the same classes)
`ClassMatcher.from_grammar` compiles with xg2ref; `ClassMatcher.for_xgrammar` with xgrammar 0.2.8,
over the same compressed vocabulary and the same grammar (xg2ref's, printed as EBNF: classes are
exact for the grammar they were computed on). Any inner matcher with xgrammar's matcher API fits
the constructor.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..bitmask import bitmask_row_view, unpack_bitmask
from ..kernels.class_mask import expand_class_bitmask
from .classes import TokenClasses, check_vocabulary, representative_vocabulary


def compressed_tokenizer_info(classes: TokenClasses, tokenizer_info):
    """The RAW TokenizerInfo of the representatives, then the stop entry (module docstring)."""
    from ..tokenizer_info import TokenizerInfo

    check_vocabulary(classes, tokenizer_info)
    return TokenizerInfo(representative_vocabulary(classes, tokenizer_info), stop_token_ids=[classes.stop_class])


def class_grammar(grammar, classes: TokenClasses):
    """`grammar` with each token set over class ids (module docstring); itself when it has none."""
    from ..grammar.grammar import Grammar
    from ..grammar.ir import GrammarIR, Rule
    from ..grammar.passes import map_expr
    from ..intrinsics.token_sets import TokenSet

    def over_classes(node):
        if not isinstance(node, TokenSet):
            return node
        ids = sorted({int(classes.class_of[t]) for t in node.ids
                      if 0 <= t < classes.vocab_size and classes.class_of[t] < classes.n_regular})
        return TokenSet(tuple(ids), exclude=node.exclude)

    ir = grammar.ir
    rules = tuple(Rule(r.name, map_expr(r.body, over_classes),
                       None if r.lookahead is None else map_expr(r.lookahead, over_classes), r.options)
                  for r in ir.rules)
    return grammar if rules == ir.rules else Grammar.from_ir(GrammarIR(rules, ir.root))


class ClassMatcher:
    """A matcher over the full vocabulary, driving `inner` (a matcher over the compressed
    vocabulary) with class ids (module docstring)."""

    def __init__(self, inner, classes: TokenClasses, torch_bitmask: bool = False):
        self.inner = inner
        self.classes = classes
        self._class_of = np.ascontiguousarray(classes.class_of, dtype=np.int32)
        self._n_inner = classes.n_regular + 1  # the regular classes and the stop entry
        inner_words = (self._n_inner + 31) // 32
        # one word more than the inner engine fills, so that the never class's bit (n_inner) is
        # always there and always 0 (kernels/class_mask.py reads it without a test)
        self._class_words = np.zeros(inner_words + 1, dtype=np.int32)
        self._words = np.zeros((classes.vocab_size + 31) // 32, dtype=np.int32)
        self._inner_bitmask = self._class_words[:inner_words].reshape(1, -1)
        if torch_bitmask:  # (an inner engine that fills torch tensors only: one sharing the words)
            import torch

            self._inner_bitmask = torch.from_numpy(self._inner_bitmask)

    @classmethod
    def from_grammar(cls, grammar, tokenizer_info, classes: TokenClasses, **matcher_options) -> "ClassMatcher":
        """xg2ref compiled over `classes`' compressed vocabulary, wrapped."""
        from ..compiler import GrammarCompiler
        from ..matcher import GrammarMatcher

        compressed = compressed_tokenizer_info(classes, tokenizer_info)
        compiled = GrammarCompiler(compressed, cache_enabled=False).compile_grammar(class_grammar(grammar, classes))
        return cls(GrammarMatcher(compiled, **matcher_options), classes)

    @classmethod
    def for_xgrammar(cls, grammar, tokenizer_info, classes: TokenClasses) -> "ClassMatcher":
        """xgrammar 0.2.8 compiled over `classes`' compressed vocabulary (RAW, the stop entry its
        stop token) and xg2ref's grammar printed as EBNF, wrapped."""
        from ..grammar.printer import print_grammar
        from ..oracle.engines import import_xgrammar

        xgr = import_xgrammar()
        check_vocabulary(classes, tokenizer_info)
        reps = representative_vocabulary(classes, tokenizer_info)
        info = xgr.TokenizerInfo(reps, xgr.VocabType.RAW, vocab_size=len(reps), stop_token_ids=[classes.stop_class])
        ir = class_grammar(grammar, classes).ir
        compiled = xgr.GrammarCompiler(info, cache_enabled=False).compile_grammar(
            xgr.Grammar.from_ebnf(print_grammar(ir), root_rule_name=ir.root))
        return cls(xgr.GrammarMatcher(compiled), classes, torch_bitmask=True)

    @property
    def vocab_size(self) -> int:
        return self.classes.vocab_size

    def accept_token(self, token_id: int) -> bool:
        """The inner engine accepts the token's class; a token never allowed is refused."""
        if not 0 <= token_id < self.vocab_size:
            return False
        cls = int(self._class_of[token_id])
        return cls < self._n_inner and bool(self.inner.accept_token(cls))

    def accept_string(self, input_str) -> bool:
        return bool(self.inner.accept_string(input_str))

    def rollback(self, num_tokens: int = 1) -> None:
        self.inner.rollback(num_tokens)

    def reset(self) -> None:
        self.inner.reset()

    def is_terminated(self) -> bool:
        return bool(self.inner.is_terminated())

    def is_completed(self) -> bool:
        return bool(self.inner.is_completed()) if hasattr(self.inner, "is_completed") else self.is_terminated()

    def fill_next_class_bitmask(self) -> np.ndarray:
        """The inner engine's next mask over classes: int32 words, bit c for class c (the stop
        class last); the array is reused by the next call. On a GPU this is all the engine hands
        over: kernels/class_mask_cuda.py gathers it into the logits mask."""
        self._class_words[:] = 0
        self.inner.fill_next_token_bitmask(self._inner_bitmask, 0)
        if self._n_inner & 31:  # (bits past the inner vocabulary: 0 whatever the engine wrote)
            self._class_words[self._n_inner >> 5] &= (1 << (self._n_inner & 31)) - 1
        return self._class_words

    def expand(self, words: np.ndarray) -> int:
        """The class mask of the last `fill_next_class_bitmask` gathered into `words` (int32,
        one row over the vocabulary; kernels/class_mask.py); the number of tokens allowed."""
        return int(expand_class_bitmask(self._class_words.view(np.uint32), self._class_of, self._n_inner,
                                        words.view(np.uint32)))

    def _fill(self) -> int:
        self.fill_next_class_bitmask()
        return self.expand(self._words)

    def fill_next_token_bitmask(self, bitmask, index: int = 0) -> bool:
        """Row `index` of an int32 bitmask over the full vocabulary; True when some token is
        masked out."""
        self.fill_next_class_bitmask()
        row = bitmask_row_view(bitmask, index, self.vocab_size)  # (an int32 numpy view of the row)
        row[len(self._words):] = 0
        return self.expand(row[:len(self._words)]) < self.vocab_size

    def compute_bool_mask(self) -> np.ndarray:
        """bool[vocab_size]: the allowed tokens now."""
        self._fill()
        return unpack_bitmask(self._words, self.vocab_size)

    def class_mask(self) -> Optional[np.ndarray]:
        """bool[n_regular + 1]: the inner engine's mask over classes (the last: the stop class)."""
        self.fill_next_class_bitmask()
        return unpack_bitmask(self._class_words, self._n_inner)
