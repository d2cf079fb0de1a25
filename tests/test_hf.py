"""The Hugging Face logits processor (xg2ref/contrib/hf.py) in a real decoding loop: a Llama
model architecture with random weights built from a small config (nothing downloaded), the
Llama-3 vocabulary, sampling with a seed. Every finished output parses and validates; every
unfinished one is a prefix xgrammar 0.2.8 accepts token by token."""

import json
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
jsonschema = pytest.importorskip("jsonschema")

import xg2ref as xgr  # noqa: E402
from xg2ref.contrib.hf import LogitsProcessor  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.jit_only]

SCHEMAS = [
    {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False},
    {"type": "object", "properties": {"name": {"type": "string"}, "x": {"type": "number"}},
     "required": ["name", "x"], "additionalProperties": False},
    {"type": "array", "items": {"enum": ["a", "b", 1, None]}, "maxItems": 3},
]  # (none meets specs/05's differences from xgrammar: bounded strings, integers, patterns)
BATCH, NEW_TOKENS = 3, 40


@pytest.fixture(scope="module")
def setup():
    info = xgr.TokenizerInfo.from_quicktok("llama3")
    config = transformers.LlamaConfig(vocab_size=info.vocab_size, hidden_size=16, intermediate_size=32,
                                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                                      max_position_embeddings=128, tie_word_embeddings=True,
                                      bos_token_id=128000, eos_token_id=info.stop_token_ids, pad_token_id=128001)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    return info, model, xgr.GrammarCompiler(info)


def generate(model, info, processor, seed: int) -> list:
    """The new tokens of each row, cut at the first stop token (kept)."""
    torch.manual_seed(seed)
    prompt = torch.full((BATCH, 1), 128000, dtype=torch.long)
    out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=NEW_TOKENS, do_sample=True,
                         top_k=0, top_p=1.0, temperature=1.0, logits_processor=[processor],
                         eos_token_id=info.stop_token_ids, pad_token_id=128001)
    rows = []
    for row in out[:, 1:].tolist():
        stop = next((k for k, t in enumerate(row) if t in info.stop_token_ids), None)
        rows.append(row if stop is None else row[:stop + 1])
    return rows


def check_outputs(rows: list, info, xgrammar_compiled, schema) -> int:
    """Finished rows parse (and validate against `schema`); unfinished ones are prefixes xgrammar
    accepts. Returns how many finished."""
    import xgrammar

    finished = 0
    for row in rows:
        if row and row[-1] in info.stop_token_ids:
            finished += 1
            text = b"".join(bytes(info.decoded_vocab[t]) for t in row[:-1]).decode("utf-8")
            value = json.loads(text)
            if schema is not None:
                jsonschema.validate(value, schema)
        else:
            matcher = xgrammar.GrammarMatcher(xgrammar_compiled)
            assert all(matcher.accept_token(t) for t in row), row
    return finished


@pytest.mark.xgrammar
def test_generate_with_the_logits_processor_stays_in_the_grammar(setup):
    xgrammar = pytest.importorskip("xgrammar")
    from xg2ref.tools.bench.mask import _xgrammar_info

    info, model, compiler = setup
    theirs = xgrammar.GrammarCompiler(_xgrammar_info(xgrammar, info), max_threads=1)
    finished = 0
    cases = [(None, compiler.compile_builtin_json_grammar(), theirs.compile_builtin_json_grammar())]
    cases += [(s, compiler.compile_json_schema(s, any_whitespace=False),
               theirs.compile_json_schema(json.dumps(s), any_whitespace=False)) for s in SCHEMAS]
    for seed, (schema, ours, their) in enumerate(cases):
        processor = LogitsProcessor(ours)
        start = time.perf_counter()
        rows = generate(model, info, processor, seed)
        assert 0 < processor.mask_seconds < time.perf_counter() - start
        finished += check_outputs(rows, info, their, schema)
    assert finished >= BATCH  # the small schemas end within the budget: the finished path is exercised


def test_one_grammar_per_row_and_bad_batches(setup):
    info, model, compiler = setup
    grammars = [compiler.compile_json_schema(s, any_whitespace=False) for s in SCHEMAS]
    processor = LogitsProcessor(grammars)
    rows = generate(model, info, processor, seed=7)
    for row, grammar, schema in zip(rows, grammars, SCHEMAS):
        if row[-1] in info.stop_token_ids:  # finished: valid for its own row's schema
            jsonschema.validate(json.loads(b"".join(bytes(info.decoded_vocab[t]) for t in row[:-1])), schema)
        matcher = xgr.GrammarMatcher(grammar)
        assert all(matcher.accept_token(t) for t in row)
    with pytest.raises(ValueError, match="2 compiled grammars for a batch of 3 rows"):
        generate(model, info, LogitsProcessor(grammars[:2]), seed=0)
    used = LogitsProcessor(grammars[0])
    used(torch.zeros((3, 1), dtype=torch.long), torch.zeros((3, info.vocab_size)))
    with pytest.raises(RuntimeError, match="use a new LogitsProcessor for each generate"):
        used(torch.zeros((2, 1), dtype=torch.long), torch.zeros((2, info.vocab_size)))
    with pytest.raises(TypeError, match="needs a CompiledGrammar"):
        LogitsProcessor([])


def test_scores_wider_than_the_vocabulary_are_masked_past_it(setup):
    info, _, compiler = setup
    processor = LogitsProcessor(compiler.compile_json_schema(SCHEMAS[0], any_whitespace=False))
    scores = torch.zeros((1, info.vocab_size + 64))
    processor(torch.zeros((1, 1), dtype=torch.long), scores)
    allowed = np.flatnonzero(~torch.isinf(scores[0]).numpy())
    assert len(allowed) and allowed.max() < info.vocab_size
    assert all(bytes(info.decoded_vocab[t]).startswith(b"{") for t in allowed)


def test_the_processor_is_reached_as_in_xgrammar():
    assert xgr.contrib.hf.LogitsProcessor is LogitsProcessor


def test_a_vocabulary_that_is_no_multiple_of_32_masks_its_last_word():
    info = xgr.TokenizerInfo(["a", "b", "{", "}", "</s>", "c"], stop_token_ids=[4])
    processor = LogitsProcessor(xgr.GrammarCompiler(info).compile_grammar('root ::= "{" [ab]* "}"'))
    scores = torch.zeros((2, 40))  # wider than the vocabulary and than its bitmask's 32 bits
    processor(torch.zeros((2, 1), dtype=torch.long), scores)
    assert (~torch.isinf(scores)).nonzero().tolist() == [[0, 2], [1, 2]]  # "{" only
    processor(torch.tensor([[0, 2], [0, 2]]), scores.zero_())
    assert (~torch.isinf(scores[0])).nonzero().flatten().tolist() == [0, 1, 3]
