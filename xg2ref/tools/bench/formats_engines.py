"""The engines of `xg2ref bench formats` (XGrammar-2 §4.2, Figures 7 and 8), each behind one call:
`Engine.run(turn, tokens, warm)` compiles the turn's constraint, makes a matcher, fills the first
mask, then per token times `accept_token` + `fill_next_token_bitmask` together and keeps the words
of every mask to compare.

    xg2ref        GrammarCompiler(info) with its defaults, get_model_structural_tag(format, tools)
    xgrammar      0.2.8, the same structural tag, GrammarCompiler(max_threads=1)
    llguidance    1.9.1, the same constraint written in its Lark dialect (`lark_grammar`)
    pda           XGrammar-1's pushdown automaton of xg2ref/baselines/pda, defaults, over the same
                  structural tag (its TagDispatch is one rule machine like any other); no cache
                  across grammars, so warm and cold are one measurement
    xgrammar 0.1.19   the real XGrammar-1 in its side environment (`make peers`), through its
                  legacy `compile_structural_tag(tags, triggers)` (`legacy_tags`): its free text is
                  any text without a trigger, so its language is larger than the others'; timed in
                  its worker process, compiles uncached

The Harmony sensitivity run ("harmony-tokens") needs a vocabulary in which the message markers are
one token each, as a serving stack sees them: `marker_vocabulary` gives o200k_harmony with the
seven markers decoding to their text (ordinary tokens; <|endoftext|> the only stop token) and an
encoder that emits a marker's id for its text.
"""

from __future__ import annotations

import json
import time
from typing import Optional

import numpy as np

HARMONY_MARKERS = ("<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>", "<|call|>")
ENGINES = ("xg2ref", "xgrammar", "llguidance", "pda", "xgrammar 0.1.19")


class Engine:
    """An in-process engine with xgrammar's API (`lib`: the module or an adapter of it)."""

    stateless = False  # True: its compiler keeps nothing across grammars, so a cold run repeats a warm one
    slow = False  # True: it compiles a turn in seconds, and reads the first `slow_turns` turns only
    warm_up = True  # False: nothing in this process to load before timing

    def __init__(self, name: str, info, lib, xinfo=None):
        self.name, self.info, self.lib = name, info, lib
        self.xinfo = xinfo if xinfo is not None else info
        self.kept = self.compiler()

    def compiler(self):
        if self.name == "xgrammar":
            return self.lib.GrammarCompiler(self.xinfo, max_threads=1)
        return self.lib.GrammarCompiler(self.info)

    def compile(self, compiler, fmt: str, tools: list):
        return compiler.compile_structural_tag(self.lib.get_model_structural_tag(fmt, tools=tools))

    def run(self, fmt: str, tools: list, tokens: list, warm: bool) -> dict:
        compiler = self.kept if warm else self.compiler()
        start = time.perf_counter()
        compiled = self.compile(compiler, fmt, tools)
        compiled_at = time.perf_counter()
        matcher = self.lib.GrammarMatcher(compiled)
        bitmask = self.lib.allocate_token_bitmask(1, self.info.vocab_size)
        matcher.fill_next_token_bitmask(bitmask)
        first = time.perf_counter()
        words = [_words(bitmask)]
        us = np.zeros(len(tokens))
        rejected = None
        for k, t in enumerate(tokens):
            t0 = time.perf_counter()
            ok = matcher.accept_token(t)
            matcher.fill_next_token_bitmask(bitmask)
            us[k] = (time.perf_counter() - t0) * 1e6
            if not ok:
                rejected = k
                break
            words.append(_words(bitmask))
        return dict(compile_ms=(compiled_at - start) * 1e3, ttfm_ms=(first - start) * 1e3, us=us, words=words,
                    rejected=rejected, completed=rejected is None and matcher.is_completed())


def _words(bitmask) -> np.ndarray:
    return np.array(bitmask.numpy()[0] if hasattr(bitmask, "numpy") else bitmask[0])


# ---- XGrammar-1's pushdown automaton (xg2ref/baselines/pda) ----------------------------------------


class PDAEngine(Engine):
    stateless = slow = True

    def __init__(self, info):
        import xg2ref

        from ...baselines.pda import PDAMatcher

        super().__init__("pda", info, _PDALib(xg2ref, PDAMatcher))

    def compiler(self):
        from ...baselines.pda import PDACompiler

        return PDACompiler(self.info)


class _PDALib:
    """xg2ref's structural tags and bitmasks, the pushdown automaton's matcher."""

    def __init__(self, lib, matcher):
        self.get_model_structural_tag = lib.get_model_structural_tag
        self.allocate_token_bitmask = lib.allocate_token_bitmask
        self.GrammarMatcher = matcher  # noqa: N815  (the library's name)


# ---- llguidance: the same constraint in its Lark dialect ------------------------------------------------


def _lark_string(text: str) -> str:
    return json.dumps(text)


def _lark_json(tool: dict) -> str:
    schema = dict(tool["function"].get("parameters") or {"type": "object"})
    schema["x-guidance"] = {"whitespace_flexible": True}
    return "%json " + json.dumps(schema)


def lark_grammar(fmt: str, tools: list) -> str:
    """The turn's constraint for llguidance (its Lark dialect, docs/syntax.md of llguidance):
    llama, free text with calls after the trigger, the text before a trigger a lazy lexeme;
    harmony, messages separated by <|start|>assistant, each a final or analysis message (text up
    to its end marker, lazy) or a call in one of the header orders. Markers are spelled as text,
    as the byte-level structural tag reads them."""
    from ...frontends.structural_tag.models import HARMONY_FUNCTION_HEADERS

    lines: list = []
    if fmt == "llama":
        calls = [f"call_{k}" for k in range(len(tools))]
        lines.append(f"start: ({' | '.join(calls)})* TEXT" if calls else "start: TEXT")
        lines.append("TEXT: /(.|\\n)*/")
        lines.append('head[lazy]: TEXT "{\\"name\\": "')
        for k, tool in enumerate(tools):
            name = tool["function"]["name"]
            lines.append(f'call_{k}: head {_lark_string(f"{chr(34)}{name}{chr(34)}, {chr(34)}parameters{chr(34)}: ")} '
                         f'args_{k} "}}"')
            lines.append(f"args_{k}: {_lark_json(tool)}")
    elif fmt == "harmony":
        msgs = ["final", "analysis"] + [f"call_{k}" for k in range(len(tools))]
        lines.append(f"start: (message ({_lark_string('<|start|>assistant')} message)*)?")
        lines.append(f"message: {' | '.join(msgs)}")
        lines.append('final: "<|channel|>final<|message|>" body')
        lines.append('analysis: "<|channel|>analysis<|message|>" body')
        lines.append("body[lazy]: /(.|\\n)*(<\\|end\\|>|<\\|return\\|>)/")
        for k, tool in enumerate(tools):
            name = tool["function"]["name"]
            heads = " | ".join(_lark_string(h.replace("{name}", name)) for h in HARMONY_FUNCTION_HEADERS)
            lines.append(f'call_{k}: ({heads}) args_{k} "<|call|>"')
            lines.append(f"args_{k}: {_lark_json(tool)}")
    else:
        raise ValueError(f"format must be llama or harmony, got {fmt!r}")
    return "\n".join(lines) + "\n"


class LLGuidanceLib:
    """llguidance 1.9.1 behind the calls `Engine.run` makes: a "compiler" that builds the Lark
    grammar (llguidance compiles per matcher), matchers, bitmasks."""

    def __init__(self, info, encode):
        import llguidance
        import llguidance.numpy as lnp

        from ...oracle.other_engines import LLGuidanceEngine

        self.llg, self.lnp = llguidance, lnp
        self.engine = LLGuidanceEngine.from_tokenizer_info(info, encoder=encode)

    def GrammarCompiler(self, *args, **kwargs):  # noqa: N802  (the library's name)
        return self

    def get_model_structural_tag(self, fmt: str, tools: list) -> str:
        return lark_grammar(fmt, tools)

    def compile_structural_tag(self, lark: str):
        return self.llg.LLMatcher.grammar_from_lark(lark)

    def GrammarMatcher(self, grammar):  # noqa: N802
        return _LLGuidanceMatcher(self, grammar)

    def allocate_token_bitmask(self, batch: int, vocab_size: int):
        return self.lnp.allocate_token_bitmask(batch, vocab_size)


class _LLGuidanceMatcher:
    def __init__(self, lib: LLGuidanceLib, grammar):
        self.lib = lib
        self.matcher = lib.llg.LLMatcher(lib.engine.tokenizer, grammar, log_level=0)
        if self.matcher.is_error():
            raise ValueError(f"llguidance rejects the grammar: {self.matcher.get_error()}")

    def accept_token(self, token: int) -> bool:
        return self.matcher.validate_tokens([token]) == 1 and self.matcher.consume_token(token)

    def fill_next_token_bitmask(self, bitmask) -> None:
        self.lib.lnp.fill_next_token_bitmask(self.matcher, bitmask, 0)

    def is_completed(self) -> bool:
        return bool(self.matcher.is_accepting())


# ---- xgrammar 0.1.19 in its side environment -------------------------------------------------------------


def legacy_tags(fmt: str, tools: list) -> tuple:
    """The turn's constraint as xgrammar 0.1.19's `compile_structural_tag(tags, triggers)` read it:
    (tags as (begin, schema JSON, end), triggers). One tag per tool (Harmony: per header order);
    the triggers are the begins' common prefix, as that version's documentation advises."""
    from ...frontends.structural_tag.models import HARMONY_FUNCTION_HEADERS

    tags = []
    for tool in tools:
        name = tool["function"]["name"]
        schema = json.dumps(tool["function"].get("parameters") or {"type": "object"})
        if fmt == "llama":
            tags.append((f'{{"name": "{name}", "parameters": ', schema, "}"))
        elif fmt == "harmony":
            tags += [(h.replace("{name}", name), schema, "<|call|>") for h in HARMONY_FUNCTION_HEADERS]
        else:
            raise ValueError(f"format must be llama or harmony, got {fmt!r}")
    if fmt == "llama":
        triggers = ['{"name": ']
    else:
        triggers = sorted({h.split("functions.")[0] + "functions." for h in HARMONY_FUNCTION_HEADERS})
    return tags, triggers


class XG1PeerEngine:
    """xgrammar 0.1.19 through xg2ref/tools/bench/xg1_peer.py; `run` as `Engine.run`, its times
    taken inside the worker (accept + fill per token; the first mask after the compile)."""

    name = "xgrammar 0.1.19"
    stateless = slow = True
    warm_up = False

    def __init__(self, info, timeout: Optional[float] = None):
        from .xg1_peer import XG1Peer

        self.info, self.timeout = info, timeout
        self.peer = XG1Peer(info)

    def run(self, fmt: str, tools: list, tokens: list, warm: bool) -> dict:
        """As `Engine.run`; a compile past `timeout` seconds gives {"timed_out": True, ...}."""
        tags, triggers = legacy_tags(fmt, tools)
        try:
            compile_ms = self.peer.compile("structural_tag", json.dumps({"tags": tags, "triggers": triggers}),
                                           self.timeout)
        except TimeoutError:
            return dict(timed_out=True, completed=False)
        reply = self.peer.steps(tokens)
        n = len(tokens)
        accepted = reply["accepted"]
        us = np.array([reply["accept_us"][k] + reply["us"][k + 1] for k in range(accepted)]
                      + ([reply["accept_us"][accepted]] if accepted < n else []))
        return dict(compile_ms=compile_ms, ttfm_ms=compile_ms + reply["matcher_ms"] + reply["us"][0] / 1e3, us=us,
                    words=reply["words"], rejected=None if accepted == n else accepted,
                    completed=accepted == n and reply["completed"])

    def close(self) -> None:
        self.peer.close()


# ---- the Harmony sensitivity run: markers as single tokens ----------------------------------------------


def marker_vocabulary() -> tuple:
    """(TokenizerInfo, encoder) for o200k_harmony with HARMONY_MARKERS as ordinary tokens decoding
    to their text (module docstring). The encoder emits a marker's id wherever its text appears."""
    import re

    import quicktok

    from ...tokenizer_info import TokenizerInfo, _load_quicktok

    enc = quicktok.get_encoding("o200k_harmony")
    decoded, _ = _load_quicktok("o200k_harmony")
    decoded = list(decoded)
    ids = {m: enc.encode_single_token(m) for m in HARMONY_MARKERS}
    for marker, i in ids.items():
        decoded[i] = marker.encode("utf-8")
    info = TokenizerInfo(decoded, stop_token_ids=[enc.encode_single_token("<|endoftext|>")])
    split = re.compile("(" + "|".join(re.escape(m) for m in HARMONY_MARKERS) + ")")

    def encode(data: bytes) -> Optional[list]:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        out: list = []
        for piece in split.split(text):
            if piece in ids:
                out.append(ids[piece])
            elif piece:
                out += enc.encode_ordinary(piece)
        return out

    return info, encode
