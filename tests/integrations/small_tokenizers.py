"""Small Hugging Face tokenizers built in-process (nothing downloaded), shaped like the ones the
integrations load: a byte-level BPE (GPT-2 / Llama-3 / Qwen style, chat specials added) and a
SentencePiece-style byte-fallback BPE (`▁` for spaces, `<0x00>`..`<0xFF>` byte tokens).

Both are trained on a few lines of JSON, tool calls and prose, so their vocabularies hold the
multi-byte tokens (`{"`, `":`, ` "`, digits, words) that make grammar masks interesting.

Example: `tok = byte_level_tokenizer(); tok.encode('{"a": 1}')`.
"""

import json

import pytest

CORPUS = [
    '{"name": "Ada Lovelace", "age": 36, "tags": ["math", "poetry"], "active": true}',
    '{"city": "Paris", "population": 2148000, "coords": [48.85, 2.35], "capital": null}',
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}</tool_call>',
    '<function=search>{"query": "structured generation", "limit": 10}</function>',
    "The answer is yes. The answer is no. Maybe the answer is maybe.",
    "Call 555-0199 or 555-0142 between 9 and 17; dates like 2024-05-17 are fine.",
    "SELECT name, age FROM people WHERE age > 30 ORDER BY name;",
    'print("hello world")  # a comment\n\tindented line\n',
] * 3
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def _tk():
    return pytest.importorskip("tokenizers")


def _fast(tok, **kwargs):
    transformers = pytest.importorskip("transformers")
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


def byte_level_tokenizer(vocab_size: int = 420):
    """A GPT-2 style byte-level BPE behind PreTrainedTokenizerFast; eos `<|endoftext|>` (id 0)."""
    tk = _tk()
    tok = tk.Tokenizer(tk.models.BPE())
    tok.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(),
                                     special_tokens=SPECIALS, show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    return _fast(tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>")


def byte_fallback_tokenizer(vocab_size: int = 360):
    """A Llama-2 / Mistral style BPE: <unk> <s> </s>, then the 256 byte tokens, then merges; the
    decoder replaces ▁ by a space, falls back to bytes and strips the leading space."""
    tk = _tk()
    tok = tk.Tokenizer(tk.models.BPE(unk_token="<unk>"))
    tok.normalizer = tk.normalizers.Sequence([tk.normalizers.Prepend("▁"), tk.normalizers.Replace(" ", "▁")])
    trainer = tk.trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<unk>", "<s>", "</s>"],
                                     show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    spec = json.loads(tok.to_str())
    learned = spec["model"]["vocab"]
    vocab = {k: v for k, v in learned.items() if v < 3}
    vocab.update({f"<0x{b:02X}>": 3 + b for b in range(256)})
    for _, piece in sorted((v, k) for k, v in learned.items() if v >= 3):
        vocab.setdefault(piece, len(vocab))
    spec["model"].update(vocab=vocab, byte_fallback=True)
    spec["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
        {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    return _fast(tk.Tokenizer.from_str(json.dumps(spec)), bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def padded(n: int, multiple: int = 64) -> int:
    """A model's embedding rows: the tokenizer's size rounded up (vLLM reads it from the config)."""
    return -(-n // multiple) * multiple
