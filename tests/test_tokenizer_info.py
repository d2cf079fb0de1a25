"""TokenizerInfo: decoding, stop/special tokens, loaders and flat arrays, checked by hand and
against xgrammar 0.2.8 when it is installed."""

import json
import random
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xg2ref.exceptions import TokenizerError
from xg2ref.tokenizer_info import DETECTION_STOP_TOKENS, TokenizerInfo, VocabType

RAW, BF, BL = VocabType.RAW, VocabType.BYTE_FALLBACK, VocabType.BYTE_LEVEL

# (vocab type, encoded token, decoded bytes); the last rows are xgrammar quirks we mirror.
DECODE_CASES = [
    (RAW, "abc", b"abc"),
    (RAW, "é", b"\xc3\xa9"),
    (RAW, b"\xff\x00", b"\xff\x00"),
    (RAW, "▁a", "▁a".encode()),
    (BF, "<0x41>", b"A"),
    (BF, "<0x0A>", b"\n"),
    (BF, "<0xFF>", b"\xff"),
    (BF, "<0x00>", b"\x00"),
    (BF, "▁hello▁", b" hello "),
    (BF, "<0x41", b"<0x41"),
    (BF, "<0x410>", b"<0x410>"),
    (BF, "<0X41>", b"<0X41>"),
    (BF, b"\xe2\x96\x81\xe2\x96", b" \xe2\x96"),
    (BF, "<0x0a>", b"*"),          # quirk: lower-case digits read as c - 'A' + 10
    (BF, "<0x0G>", b"\x10"),       # quirk: no digit check
    (BL, "Ġhello", b" hello"),
    (BL, "Ċ", b"\n"),
    (BL, "Ā", b"\x00"),
    (BL, "ġ", b"\x7f"),
    (BL, "Ń", b"\xad"),
    (BL, "ÃŃ", b"\xc3\xad"),
    (BL, "a b", b"a b"),           # a space is not in the table: kept
    (BL, "日本", "日本".encode()),
    (BL, "▁", "▁".encode()),
    (BL, b"\xff\xfe", b"\xff\xfe"),  # invalid UTF-8: kept
    (BL, "", b""),
    (BL, "Ā\x00Ā", b"\x00"),       # quirk: parsed up to the first NUL
    (BL, "a\x00b", b"a"),
    (BL, "日\x00b", "日\x00b".encode()),
    (BL, b"\xc0\xa1", b"!"),       # quirk: overlong UTF-8 accepted
    (BL, b"\xe0\x84\x80", b"\x00"),
    (BL, b"\xf4\x90\x80\x80", b"\xf4\x90\x80\x80"),
]

# (encoded vocab, constructor keywords, stop ids, special ids)
STOP_SPECIAL_CASES = [
    (["a", "", "<eos>", "b"], dict(stop_token_ids=[1, 2]), [1, 2], []),
    (["a", "b", "ab", "c", "<eos>", "", "cd"], dict(vocab_size=10), [4], [5, 7, 8, 9]),
    (["a", "b", "c"], dict(stop_token_ids=[2, 0, 2]), [0, 2], []),
    (["a", "b", "c"], dict(stop_token_ids=1), [1], []),
    (["a", "", "</s>"], dict(stop_token_ids=[]), [], [1]),
    (["</s>", "<|im_end|>", "<|end|>", ""], {}, [0], [3]),
    ([], {}, [], []),
    ([], dict(vocab_size=3), [], [0, 1, 2]),
]

BAD_INPUTS = [
    (dict(encoded_vocab=["a", "b", "c"], vocab_size=2),
     "vocab_size (2) must be an integer at least the number of tokens in encoded_vocab (3)"),
    (dict(encoded_vocab=["a", "b"], stop_token_ids=[5]), "stop token id 5 is out of range for a vocabulary of 2 tokens"),
    (dict(encoded_vocab=["a", "b"], stop_token_ids=[-1]), "stop token id -1 is out of range for a vocabulary of 2 tokens"),
    (dict(encoded_vocab=["a", "b"], stop_token_ids=[3], vocab_size=5),
     "stop token id 3 is out of range for a vocabulary of 2 tokens; ids 2..4 are padding"),
    (dict(encoded_vocab=["a", "b"], stop_token_ids=["a"]), "stop token ids must be integers, got 'a'"),
    (dict(encoded_vocab=["a", 1]), "encoded_vocab[1] must be str or bytes, got int"),
    (dict(encoded_vocab="ab"), "encoded_vocab must be a list of str or bytes, got str"),
    (dict(encoded_vocab=["a"], vocab_type=7),
     "vocab_type must be RAW (0), BYTE_FALLBACK (1) or BYTE_LEVEL (2), got 7"),
    (dict(encoded_vocab=["\ud800"]), "encoded_vocab[0] is not encodable as UTF-8"),
    (dict(encoded_vocab=["\ud800"], vocab_type=BL), "encoded_vocab[0] is not encodable as UTF-8"),
    (dict(encoded_vocab=["<0xab>"], vocab_type=BF), "byte-fallback token b'<0xab>' does not name a byte"),
]

QUICKTOK = [  # name, vocab size, stop tokens
    ("llama3", 128256, [128001, 128008, 128009]),
    ("qwen3", 151669, [151643, 151645]),
    ("o200k_harmony", 201088, [199999, 200002, 200012]),
    ("cl100k_base", 100277, [100257]),
    ("o200k_base", 200019, [199999]),
]


def xgrammar_info(*args, **kwargs):
    xgr = pytest.importorskip("xgrammar")
    if len(args) > 1:
        args = (args[0], xgr.VocabType(int(args[1])))
    return xgr.TokenizerInfo(*args, **kwargs)


# ---- constructor ----------------------------------------------------------------------------

@pytest.mark.parametrize("vocab_type,token,want", DECODE_CASES)
def test_decode_by_hand(vocab_type, token, want):
    assert TokenizerInfo([token], vocab_type).decoded_vocab == [want]


@pytest.mark.xgrammar
@pytest.mark.parametrize("vocab_type", [RAW, BF, BL])
def test_decode_matches_xgrammar(vocab_type):
    tokens = [t for vt, t, _ in DECODE_CASES if vt == vocab_type] + ["<0x41>", "Ġ▁x", "</s>", "", "abc"]
    want = xgrammar_info(tokens, vocab_type)
    have = TokenizerInfo(tokens, vocab_type)
    assert have.decoded_vocab == want.decoded_vocab
    assert have.stop_token_ids == want.stop_token_ids
    assert have.special_token_ids == want.special_token_ids


TOKEN_PIECES = st.one_of(st.binary(max_size=4), st.sampled_from(["Ġ", "Ā", "▁", "\x00", "<0x41>", "日", "é"]),
                        st.text(alphabet="aĠĊÃŃ ▁é\x00", max_size=4))


@pytest.mark.xgrammar
@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(TOKEN_PIECES, max_size=3), max_size=12), st.sampled_from([RAW, BF, BL]))
def test_random_tokens_decode_as_xgrammar(pieces, vocab_type):
    tokens = [b"".join(p.encode() if isinstance(p, str) else p for p in token) for token in pieces]
    want = xgrammar_info(tokens, vocab_type)
    have = TokenizerInfo(tokens, vocab_type)
    assert have.decoded_vocab == want.decoded_vocab
    assert (have.stop_token_ids, have.special_token_ids) == (want.stop_token_ids, want.special_token_ids)


@pytest.mark.parametrize("vocab,kwargs,stop,special", STOP_SPECIAL_CASES)
def test_stop_and_special(vocab, kwargs, stop, special):
    info = TokenizerInfo(vocab, **kwargs)
    assert info.stop_token_ids == stop
    assert info.special_token_ids == special
    assert info.vocab_size == kwargs.get("vocab_size", len(vocab))
    assert len(info.decoded_vocab) == len(vocab)


@pytest.mark.xgrammar
@pytest.mark.parametrize("vocab,kwargs,stop,special", STOP_SPECIAL_CASES)
def test_stop_and_special_match_xgrammar(vocab, kwargs, stop, special):
    want = xgrammar_info(vocab, **kwargs)
    assert (want.stop_token_ids, want.special_token_ids) == (stop, special)


@pytest.mark.xgrammar
def test_stop_auto_detection_matches_xgrammar():
    names = sorted(t.decode() for t in DETECTION_STOP_TOKENS)
    others = ["<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|eom_id|>", "<|END_OF_TURN_TOKEN|>"]
    for vocab_type in (RAW, BF, BL):
        vocab = ["a"] + names + others
        want = xgrammar_info(vocab, vocab_type)
        have = TokenizerInfo(vocab, vocab_type)
        assert have.stop_token_ids == want.stop_token_ids
    assert TokenizerInfo(vocab).stop_token_ids == list(range(1, len(names) + 1))


@pytest.mark.parametrize("kwargs,message", BAD_INPUTS)
def test_bad_inputs(kwargs, message):
    with pytest.raises(TokenizerError, match=re.escape(message)):
        TokenizerInfo(**kwargs)


def test_errors_are_value_errors():
    with pytest.raises(ValueError):
        TokenizerInfo(["a"], stop_token_ids=[1])


def test_properties_and_metadata():
    info = TokenizerInfo(("a", b"b", "</s>"), BL, vocab_size=5, add_prefix_space=True)
    assert (info.vocab_type, info.vocab_size, info.add_prefix_space) == (BL, 5, True)
    assert info.prepend_space_in_tokenization and info.name is None
    assert info.token_bytes(1) == b"b" and info.token_bytes(4) == b""
    meta = info.dump_metadata()
    assert meta == '{"vocab_type":2,"vocab_size":5,"add_prefix_space":true,"stop_token_ids":[2]}'
    again = TokenizerInfo.from_vocab_and_metadata(["a", "b", "</s>"], meta)
    assert (again.stop_token_ids, again.special_token_ids, again.vocab_size) == ([2], [3, 4], 5)
    with pytest.raises(TokenizerError, match="invalid tokenizer metadata"):
        TokenizerInfo.from_vocab_and_metadata(["a"], "{")


@pytest.mark.xgrammar
def test_metadata_and_enum_interoperate_with_xgrammar():
    xgr = pytest.importorskip("xgrammar")
    want = xgr.TokenizerInfo(["a", "b", "</s>"], xgr.VocabType.BYTE_LEVEL, vocab_size=5, add_prefix_space=True)
    have = TokenizerInfo(["a", "b", "</s>"], xgr.VocabType.BYTE_LEVEL, vocab_size=5, add_prefix_space=True)
    assert have.vocab_type == BL
    assert have.dump_metadata() == want.dump_metadata()


# ---- vocab_arrays -------------------------------------------------------------------------

def check_arrays(info):
    """Every VocabArrays invariant, by brute force over the decoded vocabulary."""
    v = info.vocab_arrays()
    n = info.vocab_size
    assert v.token_offsets.dtype == np.int64 and v.token_offsets.shape == (n + 1,)
    assert v.token_bytes.dtype == np.uint8 and v.token_bytes.shape == (v.token_offsets[-1],)
    assert v.sorted_ids.dtype == np.int32 and v.sorted_lcp.dtype == np.int32
    assert v.is_special.dtype == np.bool_ and v.is_stop.shape == (n,)
    decoded = info.decoded_vocab + [b""] * (n - len(info.decoded_vocab))
    assert all(v.token_bytes[v.token_offsets[i]:v.token_offsets[i + 1]].tobytes() == decoded[i] for i in range(n))
    regular = {i for i in range(n) if decoded[i] and i not in set(info.stop_token_ids)}
    assert set(v.sorted_ids.tolist()) == regular and len(v.sorted_ids) == len(regular)
    assert np.flatnonzero(v.is_special).tolist() == info.special_token_ids
    assert np.flatnonzero(v.is_stop).tolist() == info.stop_token_ids
    assert not (v.is_special & v.is_stop).any()
    assert regular | set(info.special_token_ids) | set(info.stop_token_ids) == set(range(n))
    toks = [decoded[i] for i in v.sorted_ids]
    assert toks == sorted(toks)
    return v, toks


def lcp(a, b):
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return k


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=6), max_size=40), st.integers(0, 5))
def test_vocab_arrays_invariants(tokens, padding):
    info = TokenizerInfo(tokens, vocab_size=len(tokens) + padding, stop_token_ids=[0] if tokens else [])
    v, toks = check_arrays(info)
    assert v.sorted_lcp.tolist() == [0, *(lcp(a, b) for a, b in zip(toks, toks[1:]))][:len(toks)]


@pytest.mark.xgrammar
@settings(max_examples=30, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=5), unique=True, max_size=30))
def test_sorted_ids_match_xgrammar(tokens):
    want = json.loads(xgrammar_info(tokens, stop_token_ids=[]).serialize_json())["sorted_decoded_vocab"]
    assert TokenizerInfo(tokens, stop_token_ids=[]).vocab_arrays().sorted_ids.tolist() == [i for i, _ in want]


def test_vocab_arrays_cached():
    info = TokenizerInfo(["b", "a", "ab"])
    assert info.vocab_arrays() is info.vocab_arrays()
    assert info.vocab_arrays().sorted_ids.tolist() == [1, 2, 0]
    assert info.vocab_arrays().sorted_lcp.tolist() == [0, 1, 0]


# ---- quicktok ------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name,size,stops", QUICKTOK)
def test_from_quicktok(name, size, stops):
    quicktok = pytest.importorskip("quicktok")
    enc = quicktok.get_encoding(name)
    info = TokenizerInfo.from_quicktok(name)
    assert info is TokenizerInfo.from_quicktok(name)
    assert (info.name, info.vocab_size, info.vocab_type, info.stop_token_ids) == (name, size, RAW, stops)
    decoded = info.decoded_vocab
    assert decoded[0] == b"!" and len(decoded) == size
    for t in enc.special_tokens_set:
        assert decoded[enc.encode_single_token(t)] == b""
    for i in random.Random(0).sample(range(size), 500):
        if not enc.is_special_token(i) and decoded[i]:
            assert decoded[i] == enc.decode_single_token_bytes(i)
    assert set(info.special_token_ids) == {i for i in range(size) if not decoded[i]} - set(stops)
    v, toks = check_arrays(info)
    for k in random.Random(1).sample(range(1, len(toks)), 2000):
        assert v.sorted_lcp[k] == lcp(toks[k - 1], toks[k])


@pytest.mark.slow
@pytest.mark.xgrammar
def test_real_vocabulary_spellings_match_xgrammar():
    """qwen3's bytes spelled as GPT-2 characters and as SentencePiece pieces decode back, as in xgrammar."""
    from xg2ref.vocab import BYTE_TO_CHAR

    xgr = pytest.importorskip("xgrammar")
    decoded = TokenizerInfo.from_quicktok("qwen3").decoded_vocab
    spellings = {
        BL: ["".join(BYTE_TO_CHAR[b] for b in t) for t in decoded],
        BF: [f"<0x{t[0]:02X}>" if len(t) == 1 else t.replace(b" ", "▁".encode()) for t in decoded],
    }
    for vocab_type, encoded in spellings.items():
        have = TokenizerInfo(encoded, vocab_type)
        want = xgr.TokenizerInfo(encoded, xgr.VocabType(int(vocab_type)))
        assert have.decoded_vocab == want.decoded_vocab
        assert (have.stop_token_ids, have.special_token_ids) == (want.stop_token_ids, want.special_token_ids)
    assert TokenizerInfo(spellings[BL], BL).decoded_vocab == decoded


def test_from_quicktok_padding_and_errors():
    info = TokenizerInfo.from_quicktok("qwen3", vocab_size=151936)
    assert info.vocab_size == 151936 and info.special_token_ids[-1] == 151935
    assert info.stop_token_ids == [151643, 151645]
    with pytest.raises(TokenizerError, match="unknown quicktok encoding 'gpt2'"):
        TokenizerInfo.from_quicktok("gpt2")
    with pytest.raises(TokenizerError, match=r"vocab_size \(10\) must be at least 151669 for qwen3"):
        TokenizerInfo.from_quicktok("qwen3", vocab_size=10)


# ---- Hugging Face tokenizer.json -------------------------------------------------------------

SENTENCES = ["The quick brown fox jumps over the lazy dog.", 'Grammar-guided decoding: {"a": [1, 2, 3]}',
             "naïve café — 日本語 テキスト 🙂", "tabs\tand\nnewlines  and   spaces", "print('hello world')"] * 3


def build_byte_level(path):
    tk = pytest.importorskip("tokenizers")
    tok = tk.Tokenizer(tk.models.BPE())
    tok.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(vocab_size=400, initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(),
                                     special_tokens=["<|endoftext|>", "<|im_start|>"], show_progress=False)
    tok.train_from_iterator(SENTENCES, trainer)
    tok.save(str(path))


def build_byte_fallback(path):
    """A SentencePiece-style BPE: ▁ for spaces, <0x00>..<0xFF> in model.vocab, byte_fallback."""
    tk = pytest.importorskip("tokenizers")
    tok = tk.Tokenizer(tk.models.BPE(unk_token="<unk>"))
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
    obj["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
        {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    tk.Tokenizer.from_str(json.dumps(obj)).save(str(path))


@pytest.fixture(scope="module")
def hf_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("hf")
    build_byte_level(d / "byte_level.json")
    build_byte_fallback(d / "byte_fallback.json")
    obj = json.loads((d / "byte_level.json").read_text())
    obj["decoder"] = None  # the vocabulary alone says BYTE_LEVEL
    (d / "no_decoder.json").write_text(json.dumps(obj))
    return d


HF_CASES = [  # file, eos token, vocab type, add_prefix_space
    ("byte_level.json", "<|endoftext|>", BL, False),
    ("byte_fallback.json", "</s>", BF, True),
    ("no_decoder.json", "<|endoftext|>", BL, False),
]


@pytest.mark.parametrize("file,eos,vocab_type,prefix_space", HF_CASES)
def test_huggingface_file(hf_files, file, eos, vocab_type, prefix_space):
    info = TokenizerInfo.from_huggingface_file(hf_files / file)
    raw = json.loads((hf_files / file).read_text())
    vocab = raw["model"]["vocab"]
    assert (info.vocab_type, info.add_prefix_space) == (vocab_type, prefix_space)
    assert info.stop_token_ids == [vocab[eos]]
    special = sorted(a["id"] for a in raw["added_tokens"] if a["content"] != eos)
    assert info.special_token_ids == special
    assert info.decoded_vocab[vocab[eos]] == b"" and info.name == str(hf_files / file)
    spellings = {BL: {"Ġ": b" ", "Ċ": b"\n", "ĉ": b"\t", "Ã": b"\xc3", "!": b"!"},
                 BF: {"▁": b" ", "<0x41>": b"A", "<0x0A>": b"\n", "<0xE2>": b"\xe2"}}[vocab_type]
    for token, want in spellings.items():
        assert info.decoded_vocab[vocab[token]] == want
    check_arrays(info)


@pytest.mark.xgrammar
@pytest.mark.parametrize("file,eos,vocab_type,prefix_space", HF_CASES)
def test_huggingface_matches_xgrammar(hf_files, file, eos, vocab_type, prefix_space):
    xgr = pytest.importorskip("xgrammar")
    transformers = pytest.importorskip("transformers")
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(hf_files / file), eos_token=eos)
    want = xgr.TokenizerInfo.from_huggingface(tok)
    have = TokenizerInfo.from_huggingface(tok)
    assert int(want.vocab_type.value) == have.vocab_type == vocab_type
    assert want.add_prefix_space == have.add_prefix_space == prefix_space
    assert want.stop_token_ids == have.stop_token_ids
    assert want.decoded_vocab == have.decoded_vocab and want.special_token_ids == have.special_token_ids
    special = set(tok.all_special_ids) | {a["id"] for a in json.loads(tok.backend_tokenizer.to_str())["added_tokens"]}
    from_file = TokenizerInfo.from_huggingface_file(hf_files / file).decoded_vocab  # blanks added specials
    assert from_file == [b"" if i in special else t for i, t in enumerate(have.decoded_vocab)]


def test_huggingface_stop_names_prefer_special_tokens(tmp_path):
    vocab = {"a": 0, "</s>": 1, "<|im_end|>": 2, "<|endoftext|>": 3}
    obj = {"model": {"type": "BPE", "vocab": vocab, "merges": []},
           "added_tokens": [{"id": 2, "content": "<|im_end|>", "special": True}]}
    (tmp_path / "t.json").write_text(json.dumps(obj))
    info = TokenizerInfo.from_huggingface_file(tmp_path / "t.json")
    assert (info.vocab_type, info.stop_token_ids, info.special_token_ids) == (RAW, [2], [])
    assert info.decoded_vocab == [b"a", b"</s>", b"", b"<|endoftext|>"]
    obj["added_tokens"] = []
    (tmp_path / "t.json").write_text(json.dumps(obj))
    assert TokenizerInfo.from_huggingface_file(tmp_path / "t.json").stop_token_ids == [1, 2, 3]


def test_huggingface_vocab_size_and_stop_override(hf_files):
    path = hf_files / "byte_level.json"
    base = TokenizerInfo.from_huggingface_file(path)
    n = base.vocab_size
    padded = TokenizerInfo.from_huggingface_file(path, vocab_size=n + 7, stop_token_ids=[5])
    assert padded.vocab_size == n + 7 and padded.stop_token_ids == [5]
    assert padded.special_token_ids == [0] + base.special_token_ids + list(range(n, n + 7))
    cut = TokenizerInfo.from_huggingface_file(path, vocab_size=n - 3)
    assert cut.decoded_vocab == base.decoded_vocab[:n - 3]
    with pytest.raises(TokenizerError, match="stop_token_ids cannot be empty"):
        TokenizerInfo.from_huggingface_file(path, stop_token_ids=[])


def test_huggingface_tokenizers_object(hf_files):
    tk = pytest.importorskip("tokenizers")
    path = hf_files / "byte_fallback.json"
    with pytest.warns(UserWarning, match="stop_token_ids is neither provided"):  # no eos: found by name
        have = TokenizerInfo.from_huggingface(tk.Tokenizer.from_file(str(path)))
    from_file = TokenizerInfo.from_huggingface_file(path)
    assert [b"" if i in from_file.special_token_ids + from_file.stop_token_ids else t
            for i, t in enumerate(have.decoded_vocab)] == from_file.decoded_vocab
    assert have.decoded_vocab[:3] == [b"<unk>", b"<s>", b"</s>"] and have.stop_token_ids == [2]
    with pytest.raises(TokenizerError, match="cannot get the vocabulary of object"):
        TokenizerInfo.from_huggingface(object())


def test_huggingface_file_errors(tmp_path):
    tk = pytest.importorskip("tokenizers")
    with pytest.raises(TokenizerError, match="tokenizer file not found"):
        TokenizerInfo.from_huggingface_file(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(TokenizerError, match="cannot read tokenizer file"):
        TokenizerInfo.from_huggingface_file(tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(TokenizerError, match="must hold a JSON object"):
        TokenizerInfo.from_huggingface_file(tmp_path / "list.json")
    wordpiece = tk.Tokenizer(tk.models.WordPiece(unk_token="[UNK]"))
    wordpiece.train_from_iterator(SENTENCES, tk.trainers.WordPieceTrainer(vocab_size=100, show_progress=False))
    wordpiece.save(str(tmp_path / "wp.json"))
    with pytest.raises(TokenizerError, match="the WordPiece model is not supported"):
        TokenizerInfo.from_huggingface_file(tmp_path / "wp.json")
    unigram = tk.Tokenizer(tk.models.Unigram())
    unigram.train_from_iterator(SENTENCES, tk.trainers.UnigramTrainer(vocab_size=60, show_progress=False))
    unigram.save(str(tmp_path / "uni.json"))
    with pytest.raises(TokenizerError, match="the Unigram model without byte_fallback is not supported"):
        TokenizerInfo.from_huggingface_file(tmp_path / "uni.json")


def test_a_pickled_vocabulary_builds_its_arrays_where_it_is_unpickled():
    """A pickle (how Ray hands a TokenizerInfo to its actors, read-only arrays out of band) holds
    the tokens, not the derived arrays: unpickled, they are built again, writable like any
    built here, and a mask from the copy is the original's."""
    import pickle

    import xg2ref as xgr

    info = TokenizerInfo(["a", "b", "ab", "{", "}", '"', "</s>"], stop_token_ids=[6])
    arrays = info.vocab_arrays()
    frames: list = []
    copy = pickle.loads(pickle.dumps(info, protocol=5, buffer_callback=frames.append), buffers=frames)
    assert not frames  # nothing went out of band: no array was pickled
    again = copy.vocab_arrays()
    assert all(np.array_equal(a, b) and a.flags.writeable == b.flags.writeable for a, b in zip(arrays, again))
    masks = []
    for vocab in (info, copy):
        compiled = xgr.GrammarCompiler(vocab).compile_grammar('root ::= "a" ("b" | "ab")*')
        matcher = xgr.GrammarMatcher(compiled)
        assert matcher.accept_string("ab")
        bitmask = xgr.allocate_token_bitmask(1, vocab.vocab_size)
        matcher.fill_next_token_bitmask(bitmask)
        masks.append(np.asarray(bitmask).copy())
    assert np.array_equal(*masks)
