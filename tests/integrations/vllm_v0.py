"""vLLM v0's xgrammar logits processor, replayed (vllm/model_executor/guided_decoding/
xgrammar_decoding.py, 0.7-0.8).

    config       the vocabulary as a list ordered by id, the backend tokenizer's JSON text,
                 TokenizerInfo._detect_metadata_from_hf(that text) for vocab_type and
                 add_prefix_space, then TokenizerInfo(encoded_vocab, vocab_type, vocab_size,
                 stop_token_ids=[eos], add_prefix_space); GrammarCompiler(info, max_threads=8)
    context      compile_json_schema(json text, any_whitespace=...) / compile_grammar(EBNF) /
                 compile_regex / compile_builtin_json_grammar (a json_object request)
    __call__     (token ids generated so far: a list, scores of one sequence: 1-D): on the first
                 call GrammarMatcher(ctx) and allocate_token_bitmask(1, vocab_size); later calls
                 accept the last token unless the matcher has terminated; fill row 0 unless
                 terminated; on CPU the scores go float32 and get a batch axis,
                 apply_token_bitmask_inplace(scores, bitmask), and come back
    sampling     the sequence's token is the argmax of the masked scores; a request with n=2
                 clones the processor (fresh matchers) for its second sequence

What is left out: pickling the processor to the workers (its state is the config; the replay
builds the context in the same process, as the worker does).
"""

from __future__ import annotations

import json
from typing import Any

import torch

from . import common as c
from .driver import Run


class Processor:
    """XGrammarLogitsProcessor: one compiled context, one matcher per batch row (one here)."""

    def __init__(self, run: Run, compiler: Any, kind: str, spec: str, vocab_size: int, name: str):
        self.run, self.xgr, self.vocab_size, self.name = run, run.xgr, vocab_size, name
        label = f"{name}: "
        if kind == "json":
            self.ctx = run.call(label + "compile_json_schema(json, any_whitespace=False)", compiler.compile_json_schema,
                                spec, any_whitespace=False)
        elif kind == "grammar":
            self.ctx = run.call(label + "compile_grammar", compiler.compile_grammar, spec)
        elif kind == "regex":
            self.ctx = run.call(label + "compile_regex", compiler.compile_regex, spec)
        else:
            self.ctx = run.call(label + "compile_builtin_json_grammar", compiler.compile_builtin_json_grammar)
        self.matchers: list = []
        self.bitmask = None
        self.prefilled = False

    def clone(self, name: str) -> "Processor":
        twin = object.__new__(Processor)
        twin.__dict__.update(self.__dict__, name=name, matchers=[], bitmask=None, prefilled=False)
        return twin

    def __call__(self, input_ids: list, scores: torch.Tensor) -> torch.Tensor:
        run, xgr = self.run, self.xgr
        if not self.matchers:
            self.matchers = [run.call(f"{self.name}: GrammarMatcher(ctx)", xgr.GrammarMatcher, self.ctx)]
            self.bitmask = xgr.allocate_token_bitmask(1, self.vocab_size)
        if self.prefilled:
            for matcher in self.matchers:
                if not matcher.is_terminated():
                    ok = run.call(f"{self.name}.accept_token({input_ids[-1]})", matcher.accept_token, input_ids[-1])
                    run.expect(bool(ok), f"{self.name}: the sampled token {input_ids[-1]} was rejected")
        self.prefilled = True
        for i, matcher in enumerate(self.matchers):
            if not matcher.is_terminated():
                run.call(f"{self.name}.fill_next_token_bitmask(bitmask, {i})", matcher.fill_next_token_bitmask,
                         self.bitmask, i)
        run.mask(f"{self.name}.mask", self.bitmask, 0, self.vocab_size)
        dtype = scores.dtype
        scores = scores.to("cpu").float().unsqueeze(0)
        run.call(f"{self.name}: apply_token_bitmask_inplace(scores[None], bitmask)", xgr.apply_token_bitmask_inplace,
                 scores, self.bitmask.to(scores.device))
        return scores.to(dtype).squeeze()


def generate(run: Run, processor: Processor, seed: int, max_tokens: int, eos: int) -> list:
    """Greedy decoding of random scores under the processor, until eos or max_tokens."""
    gen = torch.Generator().manual_seed(seed)
    out: list = []
    for _ in range(max_tokens):
        scores = processor(out, torch.randn(processor.vocab_size, generator=gen, dtype=torch.bfloat16))
        run.logits(f"{processor.name}: scores still finite", scores[None])
        token = int(torch.argmax(scores))
        run.expect(torch.isfinite(scores[token]).item(), f"{processor.name}: every token masked")
        run.record(f"{processor.name}: sampled", token)
        out.append(token)
        if token == eos:  # the sequence ends: the processor is not called again
            break
    return out


def config(run: Run, tokenizer: Any, vocab_size: int) -> Any:
    xgr = run.xgr
    vocab = [piece for piece, _ in sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])]
    backend_str = tokenizer.backend_tokenizer.to_str()
    meta = run.call("TokenizerInfo._detect_metadata_from_hf(backend_str)", xgr.TokenizerInfo._detect_metadata_from_hf,
                    backend_str)
    info = run.call("TokenizerInfo(encoded_vocab, vocab_type, vocab_size, stop_token_ids, add_prefix_space)",
                    xgr.TokenizerInfo, encoded_vocab=vocab, vocab_type=meta["vocab_type"], vocab_size=vocab_size,
                    stop_token_ids=[tokenizer.eos_token_id], add_prefix_space=meta["add_prefix_space"])
    c.record_info(run, "info", info)
    return run.call("GrammarCompiler(info, max_threads=8)", xgr.GrammarCompiler, info, max_threads=8)


def sampled_requests(run: Run, env: Any) -> None:
    """Four request types, each decoded greedily from random scores; the json_object request
    has two sequences (a cloned processor)."""
    compiler = config(run, env.byte_level, env.vocab_size)
    eos = env.byte_level.eos_token_id
    requests = [("person", "json", json.dumps(c.PERSON)), ("sql", "grammar", c.SQL_EBNF),
                ("date", "regex", c.DATE), ("object", "json_object", "")]
    for seed, (name, kind, spec) in enumerate(requests):
        processor = Processor(run, compiler, kind, spec, env.vocab_size, name)
        outputs = [generate(run, processor, seed, 14, eos)]
        if kind == "json_object":
            outputs.append(generate(run, processor.clone(name + "#2"), seed + 10, 14, eos))
        for out in outputs:
            text = env.byte_level.decode([t for t in out if t != eos])
            if kind == "regex" and out[-1] == eos:
                run.expect(len(text) == 10 and text[4] == "-" and text[7] == "-", f"date: {text!r} is no date")
            if kind == "grammar":
                run.expect("SELECT ".startswith(text[:7]), f"sql: {text!r} does not start with SELECT")


def forced_request(run: Run, env: Any) -> None:
    """A valid output fed to the processor token by token: the masks along it, then the stop."""
    compiler = config(run, env.byte_level, env.vocab_size)
    processor = Processor(run, compiler, "json", json.dumps(c.PERSON), env.vocab_size, "person")
    tokens = c.encode(env.byte_level, c.PERSON_OUT)
    for k in range(len(tokens) + 1):
        scores = processor(tokens[:k], torch.zeros(env.vocab_size))
        finite = run.logits("person: scores still finite", scores[None])[0].allowed
        if k < len(tokens):
            run.expect(tokens[k] in finite, f"person: token {env.describe(tokens[k])} of the output was masked")
    run.expect(processor.matchers[0].is_terminated(), "person: not terminated after the output and eos")


SCENARIOS = {"vllm_v0/sampled_requests": sampled_requests, "vllm_v0/forced_request": forced_request}
