"""xg2ref: a reference implementation of the XGrammar-2 structured-generation engine.

The public API mirrors xgrammar 0.2.8, so that a script written for xgrammar runs with
``import xg2ref as xgr``::

    info = xgr.TokenizerInfo.from_quicktok("llama3")
    compiled = xgr.GrammarCompiler(info).compile_builtin_json_grammar()
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)

The packages, in the order a grammar goes through them (each package's docstring lists its
modules in order; specs/00-overview.md has the paper section of each):

    frontends/     regex, EBNF, JSON Schema, structural tags, Lark -> grammar IR (XGrammar-2 §2.1, §3.2)
    grammar/       the IR, the intrinsic seam, passes, repetition compression (§3.6, Alg. 3)
    intrinsics/    TagDispatch (§3.2), Token / ExcludeToken / TokenTagDispatch, Substring, Regex
    fsm/           per-rule byte FSMs, their arrays and hashes (§3.3, Alg. 1-2)
    analysis.py, lookahead.py, linking.py
                   FIRST / FOLLOW, lookahead assertions (XGrammar §3.2), sub-grammars linked
    earley.py      the Earley parser (§3.4, App. D), over kernels/earley.py
    mask/          the adaptive token-mask cache: state classes, classification with context
                   expansion, the cross-grammar cache (§3.3), storage (XGrammar §3.1), JIT (§3.5),
                   counted repetitions (§3.6)
    kernels/       the Numba kernels of the two above, one module per mechanism
    compiler.py    GrammarCompiler;  matcher.py  GrammarMatcher, BatchGrammarMatcher
    apply_mask.py, bitmask.py      the mask on the logits (XGrammar §3.5)

Beside the engine: oracle/ (the brute-force oracle and engine adapters), views/ (public views
for the notebooks), tools/ (command line, differential runner, fuzzer, benchmarks).
"""

from typing import Any

from .apply_mask import apply_token_bitmask_inplace
from .bitmask import allocate_token_bitmask, get_bitmask_shape, reset_token_bitmask
from .builtin_structural_tag import (StructuralTag, get_builtin_structural_tag, get_model_structural_tag,
                                     normalize_tool_choice, register_model_structural_tag)
from .compiler import CompiledGrammar, GrammarCompiler
from .config import (get_max_recursion_depth, get_serialization_version, max_recursion_depth,
                     set_json_schema_approximate, set_json_schema_exact_formats, set_max_recursion_depth)
from .exceptions import (DeserializeFormatError, DeserializeVersionError, EBNFError, GrammarLimitError,
                         InvalidJSONError, InvalidStructuralTagError, JSONSchemaNotExactError, MatcherError,
                         TokenizerError, XG2RefError)
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
    "JSONSchemaNotExactError",
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
    "schema_report",
    "set_json_schema_approximate",
    "set_json_schema_exact_formats",
    "set_max_recursion_depth",
    "testing",
]


def __getattr__(name: str) -> Any:
    """`bitmask_dtype`, `contrib` and `hf` are resolved on first use, so that importing xg2ref never
    imports torch; `schema_report` (xg2ref/tools/schema_report.py) likewise, so that it never
    imports the tools."""
    if name == "schema_report":
        import importlib

        return importlib.import_module(".tools.schema_report", __name__).schema_report
    if name == "bitmask_dtype":
        from . import bitmask

        return bitmask.bitmask_dtype
    if name in ("contrib", "hf"):  # xgr.contrib.hf / xgr.hf, as in xgrammar (torch loads only then)
        import importlib

        return importlib.import_module(".contrib" if name == "contrib" else ".contrib.hf", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


from . import config, exception, openai_tool_call_schema, structural_tag, testing  # noqa: E402,F401  (xgrammar's module attributes)
