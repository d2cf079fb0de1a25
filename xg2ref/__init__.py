"""xg2ref: a reference implementation of the XGrammar-2 structured-generation engine.

The public API mirrors xgrammar 0.2.8, so that a script written for xgrammar runs with
``import xg2ref as xgr``::

    info = xgr.TokenizerInfo.from_quicktok("llama3")
    compiled = xgr.GrammarCompiler(info).compile_builtin_json_grammar()
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)

The pipeline (EBNF -> grammar IR -> per-rule byte FSMs -> Earley parser -> token mask) is laid
out in specs/00-overview.md, with the paper section each module implements.
"""

from typing import Any

from .apply_mask import apply_token_bitmask_inplace
from .bitmask import allocate_token_bitmask, get_bitmask_shape, reset_token_bitmask
from .builtin_structural_tag import (StructuralTag, get_builtin_structural_tag, get_model_structural_tag,
                                     normalize_tool_choice, register_model_structural_tag)
from .compiler import CompiledGrammar, GrammarCompiler
from .config import get_max_recursion_depth, get_serialization_version, max_recursion_depth, set_max_recursion_depth
from .exceptions import (DeserializeFormatError, DeserializeVersionError, EBNFError, GrammarLimitError,
                         InvalidJSONError, InvalidStructuralTagError, MatcherError, TokenizerError, XG2RefError)
from .grammar.grammar import Grammar
from .frontends.regex.parser import RegexError
from .matcher import BatchGrammarMatcher, GrammarMatcher
from .structural_tag import StructuralTagItem
from .tokenizer_info import TokenizerInfo, VocabType

__version__ = "0.1.0"

__all__ = [
    "BatchGrammarMatcher",
    "CompiledGrammar",
    "DeserializeFormatError",
    "DeserializeVersionError",
    "EBNFError",
    "Grammar",
    "GrammarCompiler",
    "GrammarLimitError",
    "GrammarMatcher",
    "InvalidJSONError",
    "InvalidStructuralTagError",
    "MatcherError",
    "RegexError",
    "StructuralTag",
    "StructuralTagItem",
    "TokenizerError",
    "TokenizerInfo",
    "VocabType",
    "XG2RefError",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "bitmask_dtype",
    "get_bitmask_shape",
    "get_builtin_structural_tag",
    "get_max_recursion_depth",
    "get_model_structural_tag",
    "get_serialization_version",
    "max_recursion_depth",
    "normalize_tool_choice",
    "register_model_structural_tag",
    "reset_token_bitmask",
    "set_max_recursion_depth",
    "testing",
]


def __getattr__(name: str) -> Any:
    """`bitmask_dtype`, `contrib` and `hf` are resolved on first use, so that importing xg2ref never
    imports torch."""
    if name == "bitmask_dtype":
        from . import bitmask

        return bitmask.bitmask_dtype
    if name in ("contrib", "hf"):  # xgr.contrib.hf / xgr.hf, as in xgrammar (torch loads only then)
        import importlib

        return importlib.import_module(".contrib" if name == "contrib" else ".contrib.hf", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


from . import config, exception, openai_tool_call_schema, structural_tag, testing  # noqa: E402,F401  (xgrammar's module attributes)
