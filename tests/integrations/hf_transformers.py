"""The transformers logits processor, `xgr.contrib.hf.LogitsProcessor(compiled_grammar)`, called
the way `generate()` calls it: (input_ids: LongTensor (batch, length), scores: FloatTensor
(batch, vocab)) once per step, the sampled tokens appended to input_ids. A row that sampled its
stop token is padded (with the eos id) until every row has finished.

The engine's own processor is used, so this checks xg2ref's processor class against xgrammar's.
"""

from __future__ import annotations

import json
from typing import Any

import torch

from . import common as c
from .driver import Run, finite_ids


def compiler_for(run: Run, env: Any) -> Any:
    xgr = run.xgr
    info = run.call("TokenizerInfo.from_huggingface(tokenizer, vocab_size)", xgr.TokenizerInfo.from_huggingface,
                    env.byte_level, vocab_size=env.vocab_size)
    return run.call("GrammarCompiler(info)", xgr.GrammarCompiler, info)


def generate(run: Run, processor: Any, env: Any, choose: Any, rows: int, max_steps: int) -> list:
    """generate(): scores from a seeded generator, the processor, then `choose(step, row, scores)`."""
    eos = env.byte_level.eos_token_id
    ids = torch.full((rows, 1), eos, dtype=torch.long)
    finished = [False] * rows
    gen = torch.Generator().manual_seed(3)
    for step in range(max_steps):
        scores = torch.randn(rows, env.vocab_size, generator=gen)
        out = run.call(f"processor(input_ids {tuple(ids.shape)}, scores)", processor, ids, scores)
        if out is None:
            return ids[:, 1:].tolist()
        finite = [finite_ids(row) for row in out]
        # a finished row is padded whatever its scores; recorded apart, so a difference there reads as one
        run.record("scores still finite, unfinished rows", tuple(finite[r] for r in range(rows) if not finished[r]))
        run.record("scores still finite, finished rows", tuple(finite[r] for r in range(rows) if finished[r]))
        nxt = []
        for r in range(rows):
            token = eos if finished[r] else choose(step, r, out[r])
            run.expect(finished[r] or bool(torch.isfinite(out[r, token])), f"row {r}: token {token} was masked")
            finished[r] = finished[r] or token == eos
            nxt.append(token)
        run.record("next tokens", tuple(nxt))
        ids = torch.cat([ids, torch.tensor(nxt)[:, None]], dim=1)
        if all(finished):
            break
    return ids[:, 1:].tolist()


def forced(texts: list, env: Any) -> Any:
    rows = [c.encode(env.byte_level, t) for t in texts]
    return lambda step, r, scores: rows[r][step]


def one_grammar(run: Run, env: Any) -> None:
    """One JSON-schema grammar for a batch of two rows with different outputs (teacher forcing);
    the shorter row finishes first and is padded."""
    compiled = compiler_for(run, env).compile_json_schema(json.dumps(c.PERSON), any_whitespace=False)
    processor = run.call("contrib.hf.LogitsProcessor(compiled)", run.xgr.contrib.hf.LogitsProcessor, compiled)
    texts = [c.PERSON_OUT, '{"name": "Grace Hopper", "age": 85}']
    out = generate(run, processor, env, forced(texts, env), 2, 30)
    for row, text in zip(out, texts):
        run.expect(env.byte_level.decode([t for t in row if t != env.byte_level.eos_token_id]) == text,
                   f"the row decodes to {env.byte_level.decode(row)!r}")


def grammar_per_row(run: Run, env: Any) -> None:
    """A list of grammars, one per row (regex, EBNF choice, builtin JSON), sampled greedily."""
    compiler = compiler_for(run, env)
    grammars = [compiler.compile_regex(c.DATE), compiler.compile_grammar(c.choice_as_grammar(c.CHOICES)),
                compiler.compile_builtin_json_grammar()]
    processor = run.call("contrib.hf.LogitsProcessor([compiled, ...])", run.xgr.contrib.hf.LogitsProcessor, grammars)
    out = generate(run, processor, env, lambda step, r, scores: int(torch.argmax(scores)), 3, 12)
    date = env.byte_level.decode(out[0])
    run.expect(date[:4].isdigit(), f"row 0 is no date: {date!r}")
    choice = env.byte_level.decode([t for t in out[1] if t != env.byte_level.eos_token_id])
    run.expect(choice in c.CHOICES, f"row 1 is no choice: {choice!r}")


def rejected_token(run: Run, env: Any) -> None:
    """Scores changed after the processor ran: the next call gets a token the grammar forbids."""
    compiled = compiler_for(run, env).compile_regex(c.PHONE)
    processor = run.call("contrib.hf.LogitsProcessor(compiled)", run.xgr.contrib.hf.LogitsProcessor, compiled)
    ids = torch.full((1, 1), env.byte_level.eos_token_id, dtype=torch.long)
    run.call("processor(prompt)", processor, ids, torch.zeros(1, env.vocab_size))
    letter = env.byte_level.convert_tokens_to_ids("a")
    out = run.call("processor(prompt + 'a')", processor, torch.cat([ids, torch.tensor([[letter]])], dim=1),
                   torch.zeros(1, env.vocab_size))
    run.expect(out is None, "a token the grammar forbids went through")


SCENARIOS = {"hf/one_grammar": one_grammar, "hf/grammar_per_row": grammar_per_row, "hf/rejected_token": rejected_token}
