"""Lark grammars (compile_lark, Grammar.from_lark + compile_grammar) and the JSON round trips
engines rely on (TokenizerInfo, Grammar, CompiledGrammar): serialized and read back by the same
engine, then used. A round-tripped object must mask exactly as the original.
"""

from __future__ import annotations

import json
from typing import Any

from . import common as c
from .driver import Run, Session

GREETING_LARK = r"""start: greeting " " NAME
greeting: "hello"i | "hi"
NAME: /[A-Z][a-z]+/
"""
GREETING_OUT = "Hello Ada"


def masks_along(run: Run, env: Any, name: str, compiled: Any, text: str) -> list:
    """The masks of a fresh matcher along `text` and its stop token (teacher forcing)."""
    xgr = run.xgr
    matcher = run.call(f"{name}: GrammarMatcher", xgr.GrammarMatcher, compiled)
    if matcher is None:
        return []
    session = Session(run, name, matcher, env.vocab_size, (env.byte_level.eos_token_id,))
    bitmask = xgr.allocate_token_bitmask(1, env.vocab_size)
    c.serve_to_end(run, session, c.encode(env.byte_level, text), bitmask)
    return [session.history[k] for k in sorted(session.history)]


def same_masks(run: Run, a: list, b: list, what: str) -> None:
    run.expect(len(a) == len(b) and all((x == y).all() for x, y in zip(a, b)), f"{what}: the masks differ")


def lark(run: Run, env: Any) -> None:
    """compile_lark and Grammar.from_lark give the same masks; a case-insensitive literal, a
    regex terminal, %ignore."""
    xgr = run.xgr
    info = run.call("TokenizerInfo.from_huggingface", xgr.TokenizerInfo.from_huggingface, env.byte_level,
                    vocab_size=env.vocab_size)
    compiler = run.call("GrammarCompiler(info)", xgr.GrammarCompiler, info)
    compiled = run.call("compile_lark(sql)", compiler.compile_lark, c.SQL_LARK)
    direct = masks_along(run, env, "compile_lark(sql)", compiled, c.SQL_OUT)
    grammar = run.call("Grammar.from_lark(sql)", xgr.Grammar.from_lark, c.SQL_LARK)
    via = masks_along(run, env, "compile_grammar(Grammar.from_lark(sql))",
                      run.call("compile_grammar(Grammar.from_lark(sql))", compiler.compile_grammar, grammar), c.SQL_OUT)
    same_masks(run, direct, via, "compile_lark vs Grammar.from_lark")
    ebnf = masks_along(run, env, "compile_grammar(sql ebnf)", compiler.compile_grammar(c.SQL_EBNF), c.SQL_OUT)
    same_masks(run, direct, ebnf, "the Lark and EBNF SQL grammars")
    masks_along(run, env, "compile_lark(pairs)", run.call("compile_lark(pairs)", compiler.compile_lark, c.PAIRS_LARK),
                c.PAIRS_OUT)
    greet = masks_along(run, env, "compile_lark(greeting)",
                        run.call("compile_lark(greeting)", compiler.compile_lark, GREETING_LARK), GREETING_OUT)
    if greet:
        run.expect(bool(greet[0][env.byte_level.convert_tokens_to_ids("H")]), "greeting: 'H' of \"hello\"i forbidden")
    run.call("compile_lark(undefined rule)", compiler.compile_lark, "start: foo")


def round_trips(run: Run, env: Any) -> None:
    """TokenizerInfo, Grammar and CompiledGrammar through serialize_json / deserialize_json."""
    xgr = run.xgr
    kind = lambda s: type(s).__name__  # noqa: E731  (the JSON text itself is the engine's own)
    info = xgr.TokenizerInfo.from_huggingface(env.byte_level, vocab_size=env.vocab_size)
    compiler = xgr.GrammarCompiler(info)
    schema = json.dumps(c.PERSON)
    original = masks_along(run, env, "original", compiler.compile_json_schema(schema), c.PERSON_OUT)

    info_json = run.call_as("TokenizerInfo.serialize_json", kind, info.serialize_json)
    info2 = run.call("TokenizerInfo.deserialize_json", xgr.TokenizerInfo.deserialize_json, info_json)
    compiler2 = run.call("GrammarCompiler(round-tripped info)", xgr.GrammarCompiler, info2)
    via_info = masks_along(run, env, "info round trip", compiler2.compile_json_schema(schema), c.PERSON_OUT)
    same_masks(run, original, via_info, "TokenizerInfo round trip")

    grammar_json = run.call_as("Grammar.serialize_json", kind, xgr.Grammar.from_json_schema(schema).serialize_json)
    grammar = run.call("Grammar.deserialize_json", xgr.Grammar.deserialize_json, grammar_json)
    via_grammar = masks_along(run, env, "grammar round trip",
                              run.call("compile_grammar(round-tripped grammar)", compiler.compile_grammar, grammar),
                              c.PERSON_OUT)
    same_masks(run, original, via_grammar, "Grammar round trip")

    compiled_json = run.call_as("CompiledGrammar.serialize_json", kind,
                                compiler.compile_json_schema(schema).serialize_json)
    compiled = run.call("CompiledGrammar.deserialize_json", xgr.CompiledGrammar.deserialize_json, compiled_json, info)
    via_compiled = masks_along(run, env, "compiled round trip", compiled, c.PERSON_OUT)
    same_masks(run, original, via_compiled, "CompiledGrammar round trip")

    lark_json = run.call_as("Grammar.from_lark(sql).serialize_json", kind,
                            lambda: xgr.Grammar.from_lark(c.SQL_LARK).serialize_json())
    masks_along(run, env, "lark grammar round trip",
                compiler.compile_grammar(xgr.Grammar.deserialize_json(lark_json)), c.SQL_OUT)

    for label, fn, arg in (("Grammar.deserialize_json(not json)", xgr.Grammar.deserialize_json, "{not json"),
                           ("Grammar.deserialize_json({})", xgr.Grammar.deserialize_json, "{}"),
                           ("TokenizerInfo.deserialize_json({})", xgr.TokenizerInfo.deserialize_json, "{}")):
        run.call(label, fn, arg)
        run.expect(type(run.steps[-1][1]).__name__ == "Raised", f"{label} did not raise")


SCENARIOS = {"lark/grammars": lark, "serialization/round_trips": round_trips}
