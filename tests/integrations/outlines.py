"""Outlines' xgrammar backend, replayed (outlines/backends/xgrammar.py).

    backend      TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer.get_vocab()));
                 GrammarCompiler(info)
    processors   compile_json_schema(json text) / compile_regex(regex) / compile_grammar(EBNF)
    process      first call: one GrammarMatcher per batch row and allocate_token_bitmask(batch,
                 logits.shape[1]); later calls: accept each live row's last token; then fill
                 each live row and apply_token_bitmask_inplace(logits, bitmask)
    pickling     __getstate__ keeps compiled.serialize_json() and
                 compiled.tokenizer_info.serialize_json(); __setstate__ rebuilds them with
                 TokenizerInfo.deserialize_json and CompiledGrammar.deserialize_json
"""

from __future__ import annotations

import json
from typing import Any

import torch

from . import common as c
from .driver import Run


class Processor:
    """XGrammarLogitsProcessor for torch tensors."""

    def __init__(self, run: Run, compiled: Any, name: str):
        self.run, self.compiled, self.name = run, compiled, name
        self.reset()

    def reset(self) -> None:
        self.first = True
        self.matchers: list = []
        self.bitmask = None

    def __call__(self, input_ids: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        run, xgr = self.run, self.run.xgr
        batch, vocab = input_ids.shape[0], logits.shape[1]
        if self.first:
            self.matchers = [run.call(f"{self.name}: GrammarMatcher(compiled)", xgr.GrammarMatcher, self.compiled)
                             for _ in range(batch)]
            self.bitmask = xgr.allocate_token_bitmask(batch, vocab)
            self.first = False
        else:
            for i in range(batch):
                if not self.matchers[i].is_terminated():
                    token = int(input_ids[i][-1])
                    ok = run.call(f"{self.name}[{i}].accept_token({token})", self.matchers[i].accept_token, token)
                    run.expect(bool(ok), f"{self.name}[{i}]: the sampled token {token} was rejected")
        for i in range(batch):
            if not self.matchers[i].is_terminated():
                run.call(f"{self.name}[{i}].fill_next_token_bitmask(bitmask, {i})",
                         self.matchers[i].fill_next_token_bitmask, self.bitmask, i)
        run.call(f"{self.name}: apply_token_bitmask_inplace(logits, bitmask)", xgr.apply_token_bitmask_inplace,
                 logits, self.bitmask)
        return logits

    def pickled(self) -> "Processor":
        """__getstate__ then __setstate__: the grammar and its tokenizer info through JSON."""
        run, xgr = self.run, self.run.xgr
        grammar_json = run.call_as(f"{self.name}: compiled.serialize_json()", lambda s: type(s).__name__,
                                   self.compiled.serialize_json)
        info_json = run.call_as(f"{self.name}: compiled.tokenizer_info.serialize_json()", lambda s: type(s).__name__,
                                lambda: self.compiled.tokenizer_info.serialize_json())
        info = run.call(f"{self.name}: TokenizerInfo.deserialize_json", xgr.TokenizerInfo.deserialize_json, info_json)
        compiled = run.call(f"{self.name}: CompiledGrammar.deserialize_json", xgr.CompiledGrammar.deserialize_json,
                            grammar_json, info)
        return Processor(run, compiled, self.name + " (unpickled)")


def generate(run: Run, processor: Processor, rows: list, vocab: int, eos: int) -> list:
    """Batch decoding: each row follows its own output (teacher forcing), a finished row pads
    with eos; every step's masked logits recorded and checked against the output."""
    prompt = torch.full((len(rows), 1), eos, dtype=torch.long)
    ids = prompt
    finite_per_step = []
    for step in range(max(map(len, rows))):
        logits = torch.zeros(len(rows), vocab)
        processor(ids, logits)
        finite = run.logits(f"{processor.name}: logits still finite", logits)
        finite_per_step.append(finite)
        nxt = [row[step] if step < len(row) else eos for row in rows]
        for i, token in enumerate(nxt):
            if step < len(rows[i]):
                run.expect(token in finite[i].allowed, f"{processor.name}[{i}]: the output's token {token} was masked")
        ids = torch.cat([ids, torch.tensor(nxt)[:, None]], dim=1)
    return finite_per_step


def json_regex_cfg(run: Run, env: Any) -> None:
    """The three processor kinds on a batch of two rows, then the JSON one pickled and reused:
    its masks after the round trip are the same."""
    tok = env.byte_level
    xgr = run.xgr
    vocab = len(tok.get_vocab())
    info = run.call("TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(get_vocab()))",
                    xgr.TokenizerInfo.from_huggingface, tok, vocab_size=vocab)
    compiler = run.call("GrammarCompiler(info)", xgr.GrammarCompiler, info)
    eos = tok.eos_token_id
    cases = [("json", compiler.compile_json_schema, json.dumps(c.PERSON), [c.PERSON_OUT, '{"name":"Bo","age":7}']),
             ("regex", compiler.compile_regex, c.DATE, [c.DATE_OUT, "1999-12-31"]),
             ("cfg", compiler.compile_grammar, c.SQL_EBNF, [c.SQL_OUT, "SELECT city FROM cities;"])]
    for name, compile_fn, spec, texts in cases:
        compiled = run.call(f"{name}: compile", compile_fn, spec)
        processor = Processor(run, compiled, name)
        rows = [c.encode(tok, t) for t in texts]
        before = generate(run, processor, rows, vocab, eos)
        if name == "json":
            again = generate(run, processor.pickled(), rows, vocab, eos)
            run.expect(again == before, "json: the unpickled processor masks differently")


SCENARIOS = {"outlines/json_regex_cfg": json_regex_cfg}
