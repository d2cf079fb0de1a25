"""TensorRT-LLM's xgrammar use, replayed (tensorrt_llm/_torch/pyexecutor/grammar_matcher.py and
guided_decoder.py).

    factory      TokenizerInfo._detect_metadata_from_hf(tokenizer JSON text) for vocab_type and
                 add_prefix_space; TokenizerInfo(encoded_vocab, vocab_type=..., vocab_size=
                 <padded vocab>, stop_token_ids=..., add_prefix_space=...);
                 GrammarCompiler(info, cache_enabled=True, cache_limit_bytes=1 GiB)
    create       JSON -> compile_builtin_json_grammar, JSON_SCHEMA -> compile_json_schema(text),
                 REGEX -> compile_regex, EBNF_GRAMMAR -> compile_grammar, STRUCTURAL_TAG ->
                 compile_structural_tag(text); GrammarMatcher(compiled, max_rollback_tokens=
                 max_num_draft_tokens)
    build        per iteration and request slot: accept the new token (the matcher advances),
                 fill the bitmask row at the slot's offset, then for each draft token accept it
                 and fill the next row (stop at a rejected draft or at termination)
    rollback     after verification, roll back what the matcher advanced beyond the accepted
                 tokens: num_advanced - (1 + num_accepted_drafts)

The bitmask is host memory, (max_num_sequences * (1 + max_num_draft_tokens), ceil(vocab/32))
int32, set to -1 before each build; applying it is a TensorRT-LLM CUDA op, left out here.
"""

from __future__ import annotations

import json
import math
from typing import Any

import torch

from . import common as c
from .driver import Run, Session

MAX_DRAFT = 2


class Slot:
    """A request in its sequence slot: its matcher and where it is in its output."""

    def __init__(self, name: str, kind: str, guide: str, text: str):
        self.name, self.kind, self.guide, self.text = name, kind, guide, text
        self.session: Any = None
        self.tokens: list = []  # the output the target model produces, ending with eos
        self.pos = 0  # output tokens the matcher holds once the rejected drafts are rolled back
        self.new_token: Any = None  # the token sampled last iteration, not yet accepted
        self.advanced = 0
        self.drafts: list = []
        self.done = False


def factory(run: Run, tokenizer: Any, vocab_size: int) -> Any:
    xgr = run.xgr
    vocab = [piece for piece, _ in sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])]
    meta = run.call("TokenizerInfo._detect_metadata_from_hf(tokenizer_str)", xgr.TokenizerInfo._detect_metadata_from_hf,
                    tokenizer.backend_tokenizer.to_str())
    info = run.call("TokenizerInfo(encoded_vocab, vocab_type, vocab_size, stop_token_ids, add_prefix_space)",
                    xgr.TokenizerInfo, vocab, vocab_type=meta["vocab_type"], vocab_size=vocab_size,
                    stop_token_ids=[tokenizer.eos_token_id], add_prefix_space=meta["add_prefix_space"])
    return run.call("GrammarCompiler(info, cache_enabled=True, cache_limit_bytes=1 GiB)", xgr.GrammarCompiler, info,
                    cache_enabled=True, cache_limit_bytes=1024 ** 3)


def create(run: Run, compiler: Any, slot: Slot) -> Any:
    compile_by_kind = {"json": lambda g: compiler.compile_builtin_json_grammar(),
                       "json_schema": compiler.compile_json_schema, "regex": compiler.compile_regex,
                       "ebnf": compiler.compile_grammar, "structural_tag": compiler.compile_structural_tag}
    compiled = run.call(f"{slot.name}: compile {slot.kind}", compile_by_kind[slot.kind], slot.guide)
    return run.call(f"{slot.name}: GrammarMatcher(compiled, max_rollback_tokens={MAX_DRAFT})", run.xgr.GrammarMatcher,
                    compiled, max_rollback_tokens=MAX_DRAFT)


def build(run: Run, slots: list, bitmask: torch.Tensor, step: int, bad_token: int) -> None:
    """One iteration's build: accept the new token, fill its row, then each draft and its row."""
    bitmask.fill_(-1)
    for k, slot in enumerate(slots):
        if slot.done:
            continue
        offset = k * (1 + MAX_DRAFT)
        matcher = slot.session.matcher
        slot.advanced, slot.drafts = 0, []
        if slot.new_token is not None:  # a generation step; the first (context) step only fills
            if matcher.is_terminated():
                continue
            run.expect(slot.session.accept(slot.new_token), f"{slot.name}: the new token was rejected")
            slot.pos += 1
        slot.advanced += 1
        if matcher.is_terminated():
            continue
        slot.session.fill(bitmask, offset)
        if slot.new_token is None:
            continue
        drafts = slot.tokens[slot.pos:slot.pos + MAX_DRAFT]
        if step % 2 == 1 and drafts:
            drafts = drafts[:1] + [bad_token]
        for i, token in enumerate(drafts, 1):
            if not slot.session.accept(token):
                break
            slot.drafts.append(token)
            slot.advanced += 1
            if matcher.is_terminated():
                break
            slot.session.fill(bitmask, offset + i)


def verify_and_roll_back(run: Run, slots: list, eos: int) -> None:
    """The target model confirms the drafts that match its output and samples one more token;
    the matcher is rolled back to the confirmed tokens. Sampling eos ends the request."""
    for slot in slots:
        if slot.done:
            continue
        confirmed = 0
        while confirmed < len(slot.drafts) and slot.drafts[confirmed] == slot.tokens[slot.pos + confirmed]:
            confirmed += 1
        rollback = slot.advanced - (1 + confirmed)
        if rollback > 0:
            slot.session.rollback(rollback)
        slot.pos += confirmed
        slot.new_token = slot.tokens[slot.pos] if slot.pos < len(slot.tokens) else None
        if slot.new_token is None or slot.new_token == eos:
            slot.done = True
            mask = slot.session.history.get(slot.session.pos)
            run.expect(slot.new_token is None or (mask is not None and bool(mask[eos])),
                       f"{slot.name}: eos sampled where the mask forbids it")


def batch_with_drafts(run: Run, env: Any) -> None:
    """Five guide types in one batch, two draft tokens a step, every other step with a bad draft."""
    tok = env.byte_level
    compiler = factory(run, tok, env.vocab_size)
    slots = [Slot("json", "json", "", c.ANY_OBJECT_OUT),
             Slot("schema", "json_schema", json.dumps(c.PERSON), c.PERSON_OUT),
             Slot("regex", "regex", c.DATE, c.DATE_OUT),
             Slot("ebnf", "ebnf", c.SQL_EBNF, c.SQL_OUT),
             Slot("tag", "structural_tag", json.dumps(c.TRIGGERED_TAG), c.TRIGGERED_OUT)]
    for slot in slots:
        slot.session = Session(run, slot.name, create(run, compiler, slot), env.vocab_size, (tok.eos_token_id,))
        slot.tokens = c.encode(tok, slot.text)
    bitmask = torch.empty(len(slots) * (1 + MAX_DRAFT), math.ceil(env.vocab_size / 32), dtype=torch.int32)
    for step in range(40):
        if all(s.done for s in slots):
            break
        build(run, slots, bitmask, step, env.bad_token)
        verify_and_roll_back(run, slots, tok.eos_token_id)
    run.expect(all(s.done for s in slots), "requests still running after 40 steps")
    for slot in slots:
        run.expect(slot.session.pos == len(slot.tokens) - 1 or slot.session.matcher.is_terminated(),
                   f"{slot.name}: the matcher holds {slot.session.pos} tokens, the output {len(slot.tokens) - 1}")


SCENARIOS = {"tensorrt_llm/batch_with_drafts": batch_with_drafts}
