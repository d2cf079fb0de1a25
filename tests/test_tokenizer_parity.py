"""TokenizerInfo from Hugging Face tokenizers, field by field against xgrammar 0.2.8, and its JSON
(de)serialization.

Every tokenizer is built here from a few sentences (nothing is downloaded): byte-level BPE
(GPT-2 and Llama-3 style), SentencePiece byte-fallback BPE (fast: `tokenizers`-based, and slow:
a `sentencepiece` model behind transformers' `SentencePieceBackend` or a wrapper), and
tiktoken `Encoding`s behind Qwen- and Kimi-style wrappers.
"""

import json
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xg2ref.exceptions import (DeserializeFormatError, DeserializeVersionError, InvalidJSONError,
                               TokenizerError, XG2RefError)
from xg2ref.tokenizer_info import SERIALIZATION_VERSION, TokenizerInfo, VocabType
from xg2ref.tokenizer_json import trie_subtree_ranges

from hypothesis_budget import examples

RAW, BF, BL = VocabType.RAW, VocabType.BYTE_FALLBACK, VocabType.BYTE_LEVEL

SENTENCES = ["The quick brown fox jumps over the lazy dog.", 'Grammar-guided decoding: {"a": [1, 2, 3]}',
             "naïve café — 日本語 テキスト 🙂", "tabs\tand\nnewlines  and   spaces", "print('hello world')"] * 4
CHAT_TOKENS = ["<|im_start|>", "<|im_end|>"]
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")


# ---- tokenizers built here ------------------------------------------------------------------------

def fast(tok, **kwargs):
    transformers = pytest.importorskip("transformers")
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


def gpt2_style(specials=("<|endoftext|>", *CHAT_TOKENS), llama3=False):
    """A byte-level BPE; Llama-3 style splits with a regex first and adds its specials afterwards."""
    tk = pytest.importorskip("tokenizers")
    tok = tk.Tokenizer(tk.models.BPE())
    byte_level = tk.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=not llama3)
    tok.pre_tokenizer = (tk.pre_tokenizers.Sequence([tk.pre_tokenizers.Split(tk.Regex(LLAMA3_SPLIT), "isolated"),
                                                     byte_level]) if llama3 else byte_level)
    tok.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(vocab_size=400, initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(),
                                     special_tokens=[] if llama3 else list(specials), show_progress=False)
    tok.train_from_iterator(SENTENCES, trainer)
    if llama3:
        tok.add_special_tokens(list(specials))
    return tok


def byte_fallback_style(decoder="sequence", metaspace=False):
    """A SentencePiece-style BPE: ▁ for spaces, <0x00>..<0xFF> after <unk> <s> </s>, byte_fallback.

    decoder: "sequence" (Replace, ByteFallback, Fuse, Strip), None, or "byte_level" (a decoder
    that contradicts the vocabulary). metaspace: a Metaspace pre-tokenizer instead of a Prepend.
    """
    tk = pytest.importorskip("tokenizers")
    tok = tk.Tokenizer(tk.models.BPE(unk_token="<unk>"))
    if metaspace:
        tok.pre_tokenizer = tk.pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    else:
        tok.normalizer = tk.normalizers.Sequence([tk.normalizers.Prepend("▁"), tk.normalizers.Replace(" ", "▁")])
    trainer = tk.trainers.BpeTrainer(vocab_size=200, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False)
    tok.train_from_iterator(SENTENCES, trainer)
    obj = json.loads(tok.to_str())
    old = obj["model"]["vocab"]
    vocab = {k: v for k, v in old.items() if v < 3}
    vocab.update({f"<0x{b:02X}>": 3 + b for b in range(256)})
    for _, k in sorted((v, k) for k, v in old.items() if v >= 3):
        vocab[k] = len(vocab)
    obj["model"].update(vocab=vocab, byte_fallback=True)
    obj["decoder"] = {"sequence": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
        {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        None: None, "byte_level": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                                   "use_regex": False}}[decoder]
    out = tk.Tokenizer.from_str(json.dumps(obj))
    out.add_special_tokens(CHAT_TOKENS)
    return out


def train_sentencepiece(path, byte_fallback=True):
    spm = pytest.importorskip("sentencepiece")
    spm.SentencePieceTrainer.train(sentence_iterator=iter(SENTENCES * 5), model_prefix=str(path), vocab_size=400,
                                   model_type="bpe", byte_fallback=byte_fallback, character_coverage=1.0,
                                   hard_vocab_limit=False, user_defined_symbols=CHAT_TOKENS, minloglevel=2)
    return f"{path}.model"


class SentencePieceWrapper:
    """A remote-code-style slow tokenizer: the processor at `.tokenizer.sp_model` (ChatGLM) or
    at `.tok` (Teuken); no eos token of its own."""

    def __init__(self, model_file, nested=True):
        spm = pytest.importorskip("sentencepiece")
        sp = spm.SentencePieceProcessor(model_file=model_file)
        if nested:
            self.tokenizer = type("Inner", (), {"sp_model": sp})()
        else:
            self.tok = sp
        self._sp = sp

    def get_vocab(self):
        return {self._sp.id_to_piece(i): i for i in range(self._sp.get_piece_size())}


def tiktoken_parts():
    """(Encoding, mergeable ranks, special tokens): the 256 bytes, every prefix of a few words."""
    tiktoken = pytest.importorskip("tiktoken")
    ranks = {bytes([b]): b for b in range(256)}
    for word in [b" the", b" quick", b"hello", b" world", "日本語".encode(), b"\n\n", b"  ", b"{\"", b"\xff\xfe"]:
        for k in range(2, len(word) + 1):
            ranks.setdefault(word[:k], len(ranks))
    specials = {t: len(ranks) + k for k, t in enumerate(["<|endoftext|>", *CHAT_TOKENS])}
    enc = tiktoken.Encoding("tiny", pat_str=r" ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
                            mergeable_ranks=ranks, special_tokens=specials)
    return enc, ranks, specials


class QwenStyle:
    """A tiktoken tokenizer whose vocabulary maps raw bytes (and special names) to ids."""

    vocab_files_names = {"vocab_file": "qwen.tiktoken"}

    def __init__(self):
        self.tokenizer, self._ranks, self._specials = tiktoken_parts()
        self._tokens = {i: t for t, i in {**self._ranks, **self._specials}.items()}
        self.eos_token_id = self._specials["<|endoftext|>"]

    def get_vocab(self):
        return {**self._ranks, **self._specials}

    def encode(self, text):
        return self.tokenizer.encode(text, allowed_special="all")

    def convert_ids_to_tokens(self, ids):
        return [self._tokens[i] for i in ids]


class KimiStyle(QwenStyle):
    """A tiktoken tokenizer (known by its vocab file's name) whose tokens are spelled as GPT-2
    characters; it names no eos token."""

    vocab_files_names = {"vocab_file": "tiktoken.model"}

    def __init__(self):
        from xg2ref.vocab import BYTE_TO_CHAR

        super().__init__()
        self.model = self.tokenizer
        del self.tokenizer
        self.eos_token_id = None
        spell = {t: "".join(BYTE_TO_CHAR[b] for b in t) for t in self._ranks}
        self._tokens = {i: spell[t] for t, i in self._ranks.items()} | {i: t for t, i in self._specials.items()}

    def get_vocab(self):
        return {t: i for i, t in self._tokens.items()}

    def encode(self, text):
        return self.model.encode(text, allowed_special="all")


@pytest.fixture(scope="module")
def sp_model(tmp_path_factory):
    """A function giving the path of a SentencePiece model, trained on first use."""
    trained = []

    def path():
        if not trained:
            trained.append(train_sentencepiece(tmp_path_factory.mktemp("sp") / "sp"))
        return trained[0]
    return path


def build(name, sp_model):
    """The tokenizer of a `CASES` row (`sp_model` as the fixture)."""
    if name == "gpt2":
        return fast(gpt2_style(), eos_token="<|endoftext|>")
    if name == "llama3":
        return fast(gpt2_style(["<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>"], llama3=True),
                    eos_token="<|eot_id|>", bos_token="<|begin_of_text|>")
    if name.startswith("sp_fast"):
        decoder = {"sp_fast": "sequence", "sp_fast_metaspace": "sequence", "sp_fast_no_decoder": None,
                   "sp_fast_wrong_decoder": "byte_level"}[name]
        return fast(byte_fallback_style(decoder, metaspace=name.endswith("metaspace")), eos_token="</s>")
    if name == "sp_llama_from_model":
        pytest.importorskip("google.protobuf")
        import os
        import shutil

        transformers = pytest.importorskip("transformers")
        folder = os.path.dirname(sp_model())
        shutil.copy(sp_model(), os.path.join(folder, "tokenizer.model"))
        return transformers.LlamaTokenizer.from_pretrained(folder)
    if name == "sp_slow":
        backend = pytest.importorskip("transformers.tokenization_utils_sentencepiece")
        return backend.SentencePieceBackend(vocab_file=sp_model())
    if name in ("sp_nested", "sp_tok"):
        return SentencePieceWrapper(sp_model(), nested=name == "sp_nested")
    return {"tiktoken_qwen": QwenStyle, "tiktoken_kimi": KimiStyle}[name]()


CASES = [  # name, vocab type, add_prefix_space
    ("gpt2", BL, False),
    ("llama3", BL, False),
    ("sp_fast", BF, True),
    ("sp_fast_metaspace", BF, True),
    ("sp_fast_no_decoder", BF, True),      # the vocabulary overrules the missing decoder
    ("sp_fast_wrong_decoder", BF, True),   # ... and a contradicting one
    ("sp_llama_from_model", BF, True),     # transformers converts the .model to a fast tokenizer
    ("sp_slow", BF, True),
    ("sp_nested", BF, True),
    ("sp_tok", BF, True),
    ("tiktoken_qwen", RAW, False),
    ("tiktoken_kimi", BL, False),
]


def load(loader, tokenizer, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "stop_token_ids ... will be automatically detected"
        return loader(tokenizer, **kwargs)


def assert_same(have, want):
    assert len(have.decoded_vocab) == len(want.decoded_vocab)
    for i, (h, w) in enumerate(zip(have.decoded_vocab, want.decoded_vocab)):
        assert h == w, (i, h, w)
    assert int(have.vocab_type) == want.vocab_type.value
    assert (have.vocab_size, have.add_prefix_space) == (want.vocab_size, want.add_prefix_space)
    assert (have.stop_token_ids, have.special_token_ids) == (want.stop_token_ids, want.special_token_ids)


# ---- from_huggingface against xgrammar ------------------------------------------------------------

@pytest.mark.xgrammar
@pytest.mark.parametrize("name,vocab_type,prefix_space", CASES)
def test_from_huggingface_matches_xgrammar(sp_model, name, vocab_type, prefix_space):
    xgr = pytest.importorskip("xgrammar")
    tokenizer = build(name, sp_model)
    want = load(xgr.TokenizerInfo.from_huggingface, tokenizer)
    have = load(TokenizerInfo.from_huggingface, tokenizer)
    assert_same(have, want)
    assert (have.vocab_type, have.add_prefix_space) == (vocab_type, prefix_space)
    serialized = {k: v for k, v in json.loads(have.serialize_json()).items() if k != "name"}
    theirs = json.loads(want.serialize_json())
    for data in (serialized, theirs):  # ties (" " from "▁" and from "<0x20>") may come in either order
        data["sorted_decoded_vocab"].sort(key=lambda pair: (pair[1].encode("latin-1"), pair[0]))
    assert serialized == theirs


@pytest.mark.xgrammar
@pytest.mark.parametrize("name", ["gpt2", "sp_fast", "sp_slow", "tiktoken_qwen"])
@pytest.mark.parametrize("kwargs", [dict(vocab_size=512), dict(vocab_size=300), dict(stop_token_ids=5),
                                    dict(stop_token_ids=[3, 1, 3])])
def test_vocab_size_and_stop_ids_match_xgrammar(sp_model, name, kwargs):
    xgr = pytest.importorskip("xgrammar")
    tokenizer = build(name, sp_model)
    assert_same(load(TokenizerInfo.from_huggingface, tokenizer, **kwargs),
                load(xgr.TokenizerInfo.from_huggingface, tokenizer, **kwargs))


@pytest.mark.xgrammar
def test_json_string_masks_match_xgrammar_with_chat_tokens(sp_model):
    """Inside a JSON string every token with printable text is allowed, <|im_start|> included."""
    xgr = pytest.importorskip("xgrammar")
    pytest.importorskip("torch")
    from xg2ref.compiler import GrammarCompiler
    from xg2ref.matcher import GrammarMatcher

    tokenizer = build("gpt2", sp_model)
    have_info = TokenizerInfo.from_huggingface(tokenizer)
    want_info = xgr.TokenizerInfo.from_huggingface(tokenizer)
    matcher = GrammarMatcher(GrammarCompiler(have_info).compile_builtin_json_grammar())
    theirs = xgr.GrammarMatcher(xgr.GrammarCompiler(want_info).compile_builtin_json_grammar())
    assert matcher.accept_string('{"a": "') and theirs.accept_string('{"a": "')
    have = np.flatnonzero(matcher.compute_bool_mask()).tolist()
    bitmask = xgr.allocate_token_bitmask(1, want_info.vocab_size)
    theirs.fill_next_token_bitmask(bitmask)
    rejected = set(xgr.testing._get_masked_tokens_from_bitmask(bitmask, want_info.vocab_size))
    assert have == [i for i in range(want_info.vocab_size) if i not in rejected]
    assert tokenizer.convert_tokens_to_ids("<|im_start|>") in have


@pytest.mark.xgrammar
@pytest.mark.parametrize("name", ["gpt2", "sp_fast_metaspace", "sp_fast_no_decoder", "sp_llama_from_model"])
def test_detect_metadata_from_a_tokenizer_matches_xgrammar(sp_model, name):
    xgr = pytest.importorskip("xgrammar")
    backend_str = build(name, sp_model).backend_tokenizer.to_str()
    want = xgr.TokenizerInfo._detect_metadata_from_hf(backend_str)
    have = TokenizerInfo._detect_metadata_from_hf(backend_str)
    assert have == {"vocab_type": VocabType(want["vocab_type"].value), "add_prefix_space": want["add_prefix_space"]}


# ---- from_huggingface by hand ---------------------------------------------------------------------

def test_added_special_tokens_keep_their_text(sp_model):
    tokenizer = build("gpt2", sp_model)
    info = TokenizerInfo.from_huggingface(tokenizer)
    vocab = tokenizer.get_vocab()
    assert info.decoded_vocab[vocab["<|im_start|>"]] == b"<|im_start|>"
    assert info.decoded_vocab[vocab["Ġ"]] == b" " and info.decoded_vocab[vocab["Ċ"]] == b"\n"
    assert (info.stop_token_ids, info.special_token_ids) == ([vocab["<|endoftext|>"]], [])
    assert info.vocab_size == len(vocab) and info.name == "huggingface"


def test_slow_sentencepiece_tokenizers(sp_model):
    spm = pytest.importorskip("sentencepiece")
    sp = spm.SentencePieceProcessor(model_file=sp_model())
    for name in ("sp_nested", "sp_tok"):
        info = TokenizerInfo.from_huggingface(build(name, sp_model))
        assert (info.vocab_type, info.add_prefix_space, info.stop_token_ids) == (BF, True, [sp.eos_id()])
        assert info.decoded_vocab[sp.piece_to_id("<0x0A>")] == b"\n"
        assert info.decoded_vocab[sp.piece_to_id("▁")] == b" "
        assert info.decoded_vocab[sp.piece_to_id("<|im_end|>")] == b"<|im_end|>"


def test_sentencepiece_without_byte_fallback_is_raw(tmp_path):
    model = train_sentencepiece(tmp_path / "raw", byte_fallback=False)
    info = TokenizerInfo.from_huggingface(SentencePieceWrapper(model))
    assert (info.vocab_type, info.add_prefix_space) == (RAW, True)
    assert "▁".encode() in info.decoded_vocab  # RAW keeps the metaspace as its UTF-8 bytes


def test_tiktoken_tokenizers():
    enc, ranks, specials = tiktoken_parts()
    qwen = TokenizerInfo.from_huggingface(QwenStyle())
    assert (qwen.vocab_type, qwen.add_prefix_space) == (RAW, False)
    assert qwen.stop_token_ids == [specials["<|endoftext|>"]] and qwen.special_token_ids == []
    assert qwen.decoded_vocab[ranks[b"\xff\xfe"]] == b"\xff\xfe"
    assert qwen.decoded_vocab[specials["<|im_start|>"]] == b"<|im_start|>"
    with pytest.warns(UserWarning, match="stop_token_ids is neither provided"):
        kimi = TokenizerInfo.from_huggingface(KimiStyle())
    assert qwen.decoded_vocab == kimi.decoded_vocab and kimi.vocab_type == BL
    assert kimi.stop_token_ids == [specials["<|endoftext|>"]]  # found by name


def test_the_vocabulary_overrules_the_decoder(sp_model):
    for name in ("sp_fast_no_decoder", "sp_fast_wrong_decoder"):
        tokenizer = build(name, sp_model)
        meta = TokenizerInfo._detect_metadata_from_hf(tokenizer)
        assert meta["vocab_type"] == (RAW if name == "sp_fast_no_decoder" else BL)
        info = TokenizerInfo.from_huggingface(tokenizer)
        assert info.vocab_type == BF and info.decoded_vocab[tokenizer.get_vocab()["<0x41>"]] == b"A"


class NoVocab:
    pass


class Unknown:
    def get_vocab(self):
        return {"a": 0}


class BadIds(Unknown):
    def get_vocab(self):
        return {"a": 0, "b": -1}


BAD_TOKENIZERS = [  # tokenizer, keywords, message
    (NoVocab(), {}, "cannot get the vocabulary of NoVocab"),
    (Unknown(), {}, "unsupported tokenizer type Unknown"),
    (BadIds(), {}, "maps a token to -1, not a token id"),
    (type("Empty", (Unknown,), {"get_vocab": lambda self: {}})(), {}, "vocabulary (get_vocab()) is empty"),
    (Unknown(), dict(stop_token_ids=[]), "stop_token_ids cannot be empty"),
    (Unknown(), dict(vocab_size=2.5), "vocab_size must be a non-negative integer, got 2.5"),
    (Unknown(), dict(stop_token_ids=1.5), "stop_token_ids must be an integer or a list of integers, got 1.5"),
    (type("Sparse", (Unknown,), {"get_vocab": lambda self: {"a": 2 ** 40}})(), {}, "maps a token to 1099511627776"),
]


@pytest.mark.parametrize("tokenizer,kwargs,message", BAD_TOKENIZERS)
def test_bad_tokenizers(tokenizer, kwargs, message):
    with pytest.raises(TokenizerError, match=re.escape(message)):
        TokenizerInfo.from_huggingface(tokenizer, **kwargs)


# ---- _detect_metadata_from_hf ---------------------------------------------------------------------

METASPACE = {"type": "Metaspace", "prepend_scheme": "first"}
METADATA_CASES = [  # tokenizer.json fields, vocab type, add_prefix_space
    ({}, RAW, False),
    ({"decoder": None}, RAW, False),
    ({"decoder": "ByteLevel"}, RAW, False),
    ({"decoder": {"type": "ByteLevel"}}, BL, False),
    ({"decoder": {"type": "ByteFallback"}}, BF, False),
    ({"decoder": {"type": "Sequence", "decoders": [{"type": "Replace"}, {"type": "ByteFallback"}]}}, BF, False),
    ({"decoder": {"type": "Sequence", "decoders": [1, {"type": "ByteFallback"}]}}, RAW, False),
    ({"decoder": {"type": "Sequence", "decoders": [{"x": 1}, {"type": "ByteLevel"}]}}, RAW, False),
    ({"decoder": {"type": "Sequence"}}, RAW, False),
    ({"decoder": {"type": "Sequence", "decoders": [{"type": "Sequence", "decoders": [{"type": "ByteLevel"}]}]}},
     RAW, False),
    ({"normalizer": {"type": "Prepend", "prepend": "▁"}}, RAW, True),
    ({"normalizer": {"type": "Prepend", "prepend": " "}}, RAW, False),
    ({"normalizer": {"type": "Sequence", "normalizers": [1, {"type": "Prepend", "prepend": "▁"}]}}, RAW, True),
    ({"pre_tokenizer": METASPACE}, RAW, True),
    ({"pre_tokenizer": {**METASPACE, "prepend_scheme": "always"}}, RAW, True),
    ({"pre_tokenizer": {**METASPACE, "prepend_scheme": "never"}}, RAW, False),
    ({"pre_tokenizer": {"type": "Metaspace", "add_prefix_space": True}}, RAW, False),
    ({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [METASPACE]}}, RAW, False),
]


@pytest.mark.parametrize("fields,vocab_type,prefix_space", METADATA_CASES)
def test_detect_metadata(fields, vocab_type, prefix_space):
    meta = TokenizerInfo._detect_metadata_from_hf(json.dumps(fields))
    assert meta == {"vocab_type": vocab_type, "add_prefix_space": prefix_space}
    assert type(meta["vocab_type"]) is VocabType


@pytest.mark.xgrammar
def test_detect_metadata_matches_xgrammar():
    xgr = pytest.importorskip("xgrammar")
    for fields, _, _ in METADATA_CASES:
        want = xgr.TokenizerInfo._detect_metadata_from_hf(json.dumps(fields))
        have = TokenizerInfo._detect_metadata_from_hf(json.dumps(fields))
        assert (int(have["vocab_type"]), have["add_prefix_space"]) == (want["vocab_type"].value,
                                                                       want["add_prefix_space"]), fields


@pytest.mark.parametrize("text", ["[]", "{", "3", ""])
def test_detect_metadata_needs_a_json_object(text):
    with pytest.raises(TokenizerError, match="backend tokenizer JSON"):
        TokenizerInfo._detect_metadata_from_hf(text)


# ---- serialize_json / deserialize_json ------------------------------------------------------------

def round_trip(info):
    again = TokenizerInfo.deserialize_json(info.serialize_json())
    for key in ("decoded_vocab", "vocab_type", "vocab_size", "add_prefix_space", "stop_token_ids",
                "special_token_ids", "name"):
        assert getattr(again, key) == getattr(info, key), key
    assert again.vocab_arrays().sorted_ids.tolist() == info.vocab_arrays().sorted_ids.tolist()
    assert again.serialize_json() == info.serialize_json()
    return again


TOKENS = st.lists(st.one_of(st.binary(max_size=4), st.sampled_from(["</s>", "", "▁a", "<0x41>", "Ġb", "\x7f"])),
                  max_size=16)


@settings(max_examples=examples(80), deadline=None)
@given(TOKENS, st.sampled_from([RAW, BF, BL]), st.integers(0, 3), st.booleans())
def test_serialization_round_trips(tokens, vocab_type, padding, prefix_space):
    round_trip(TokenizerInfo(tokens, vocab_type, vocab_size=len(tokens) + padding, add_prefix_space=prefix_space))


@pytest.mark.xgrammar
@settings(max_examples=examples(80), deadline=None)
@given(TOKENS, st.sampled_from([RAW, BF, BL]), st.integers(0, 3), st.booleans())
def test_serialization_is_xgrammars_text(tokens, vocab_type, padding, prefix_space):
    """With no two regular tokens equal (xgrammar may order ties either way), the texts are equal."""
    xgr = pytest.importorskip("xgrammar")
    kwargs = dict(vocab_size=len(tokens) + padding, add_prefix_space=prefix_space)
    have = TokenizerInfo(tokens, vocab_type, **kwargs)
    want = xgr.TokenizerInfo(tokens, xgr.VocabType(int(vocab_type)), **kwargs)
    regular = [have.decoded_vocab[i] for i in have.vocab_arrays().sorted_ids]
    if len(set(regular)) == len(regular):
        assert have.serialize_json() == want.serialize_json()
    assert_same(TokenizerInfo.deserialize_json(want.serialize_json()), want)
    assert_same(have, xgr.TokenizerInfo.deserialize_json(have.serialize_json()))


@pytest.mark.xgrammar
def test_serialization_version_is_xgrammars():
    xgr = pytest.importorskip("xgrammar")
    assert SERIALIZATION_VERSION == xgr.config.get_serialization_version()


def test_serialized_layout_and_name(sp_model):
    info = TokenizerInfo(["a", "<0x41>", "", "</s>", "b▁c", "\x7f"], BF, vocab_size=8, add_prefix_space=True)
    assert info.serialize_json() == (
        '{"vocab_type":1,"vocab_size":8,"add_prefix_space":true,"stop_token_ids":[3],'
        '"special_token_ids":[2,6,7],"decoded_vocab":["a","A","","</s>","b c","\\u007f"],'
        '"sorted_decoded_vocab":[[1,"A"],[0,"a"],[4,"b c"],[5,"\\u007f"]],'
        '"trie_subtree_nodes_range":[1,2,3,4],"__VERSION__":"v16"}')
    tokenizer = build("sp_fast", sp_model)
    tokenizer.name_or_path = "tiny-sp"
    again = round_trip(TokenizerInfo.from_huggingface(tokenizer))
    assert again.name == "tiny-sp" and json.loads(again.serialize_json())["name"] == "tiny-sp"


@pytest.mark.parametrize("tokens,ranges", [
    ([b"a", b"ba"], [2, 2]),  # "a" occurs in "ba" (not as a prefix): xgrammar keeps it open
    ([b"ab", b"abc", b"b", b"bc", b"c"], [2, 2, 4, 4, 5]),
    ([b"a", b"a", b"b"], [2, 2, 3]),
    ([b"ax", b"axy", b"x", b"xa"], [2, 2, 4, 4]),
    ([], []),
])
def test_trie_subtree_ranges(tokens, ranges):
    assert trie_subtree_ranges(tokens) == ranges


GOOD = json.loads(TokenizerInfo(["a", "b", "</s>", ""], vocab_size=5).serialize_json())


def edited(**fields):
    return json.dumps({k: v for k, v in {**GOOD, **fields}.items() if v is not None})


BAD_JSON = [  # text, error class, message
    ("{", InvalidJSONError, "$: not valid JSON"),
    ("[" * 100000, InvalidJSONError, "$: not valid JSON"),
    ("[]", DeserializeFormatError, "is a JSON object, got list"),
    ("{}", DeserializeVersionError, "has no __VERSION__ field"),
    (edited(__VERSION__=None), DeserializeVersionError, "has no __VERSION__ field"),
    (edited(__VERSION__="v0"), DeserializeVersionError, "has version 'v0'; this code reads 'v16'"),
    (edited(extra=1), DeserializeFormatError, "unknown field 'extra'"),
    (edited(vocab_size=None), DeserializeFormatError, "has no 'vocab_size' field"),
    (edited(vocab_type="x"), DeserializeFormatError, "'vocab_type' must be an integer"),
    (edited(vocab_type=True), DeserializeFormatError, "'vocab_type' must be an integer"),
    (edited(vocab_type=9), DeserializeFormatError, "'vocab_type' must be 0, 1 or 2"),
    (edited(add_prefix_space=1), DeserializeFormatError, "'add_prefix_space' must be a boolean"),
    (edited(decoded_vocab=[1]), DeserializeFormatError, "'decoded_vocab' must be a list of strings"),
    (edited(decoded_vocab=["a", "日", "</s>", ""]), DeserializeFormatError, "decoded_vocab[1] holds a character"),
    (edited(sorted_decoded_vocab=[[0, "a", 1]]), DeserializeFormatError, "must be a list of [integer, string]"),
    (edited(name=3), DeserializeFormatError, "'name' must be a string"),
    (edited(vocab_size=3), DeserializeFormatError, "'vocab_size' (3) is less than the 4 decoded tokens"),
    (edited(vocab_size=10 ** 12), DeserializeFormatError, "must list the 999999999996 padding ids"),
    (edited(stop_token_ids=[7]), DeserializeFormatError, "'stop_token_ids' must be increasing ids in [0, 4)"),
    (edited(stop_token_ids=[2, 2]), DeserializeFormatError, "'stop_token_ids' must be increasing ids"),
    (edited(special_token_ids=[4, 3]), DeserializeFormatError, "'special_token_ids' must be the ids"),
    (edited(sorted_decoded_vocab=[[1, "b"], [0, "a"]]), DeserializeFormatError, "sorted by bytes"),
    (edited(sorted_decoded_vocab=[[0, "a"], [1, "a"]]), DeserializeFormatError, "sorted by bytes"),
    (edited(sorted_decoded_vocab=[[0, "a"]]), DeserializeFormatError, "sorted by bytes"),
    (edited(trie_subtree_nodes_range=[2, 2]), DeserializeFormatError, "'trie_subtree_nodes_range' does not match"),
]


@pytest.mark.parametrize("text,error,message", BAD_JSON)
def test_deserialize_rejects(text, error, message):
    with pytest.raises(error, match=re.escape(message)):
        TokenizerInfo.deserialize_json(text)


def test_deserialize_errors_are_xg2ref_errors():
    assert issubclass(DeserializeFormatError, XG2RefError) and issubclass(DeserializeVersionError, RuntimeError)
    with pytest.raises(DeserializeFormatError, match="takes a str, got bytes"):
        TokenizerInfo.deserialize_json(b"{}")


@pytest.mark.xgrammar
def test_xgrammar_agrees_on_the_error_class():
    xgr = pytest.importorskip("xgrammar")
    shared = [row for row in BAD_JSON if row[0] == "{" or row[1] is DeserializeVersionError
              or "must be an integer" in row[2] or "must be a list" in row[2]]  # xgrammar checks these too
    assert len(shared) == 8
    for text, error, _ in shared:
        with pytest.raises(getattr(xgr, error.__name__)):
            xgr.TokenizerInfo.deserialize_json(text)


def test_from_vocab_and_metadata_checks_types():
    info = TokenizerInfo.from_vocab_and_metadata(
        ["a", "</s>"], '{"vocab_type":0,"vocab_size":3,"add_prefix_space":false,"stop_token_ids":[1]}')
    assert (info.stop_token_ids, info.special_token_ids) == ([1], [2])
    for bad, key in [('{"vocab_type":true,"vocab_size":3,"add_prefix_space":false,"stop_token_ids":[]}', "vocab_type"),
                     ('{"vocab_type":0,"vocab_size":3,"add_prefix_space":0,"stop_token_ids":[]}', "add_prefix_space"),
                     ('{"vocab_type":0,"vocab_size":3,"add_prefix_space":false}', "stop_token_ids"),
                     ("[]", "vocab_type")]:
        with pytest.raises(TokenizerError, match=f"'{key}' must be"):
            TokenizerInfo.from_vocab_and_metadata(["a", "</s>"], bad)


@pytest.mark.xgrammar
def test_metadata_round_trips_between_the_libraries(sp_model):
    xgr = pytest.importorskip("xgrammar")
    tokenizer = build("sp_fast", sp_model)
    want = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=512)
    encoded = [""] * 512  # as from_huggingface lays the vocabulary out
    for token, i in tokenizer.get_vocab().items():
        encoded[i] = token
    have = TokenizerInfo.from_vocab_and_metadata(encoded, want.dump_metadata())
    assert_same(have, want)
    assert_same(have, xgr.TokenizerInfo.from_vocab_and_metadata(encoded, have.dump_metadata()))
