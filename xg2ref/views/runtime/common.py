"""What the runtime views share: sub-vocabularies, encoding, the data and benchmark folders, the
command line in-process, random walks for checks against the oracle."""

from __future__ import annotations

import contextlib
import functools
import io
import os
import random
from typing import Optional, Sequence

import numpy as np

# The engine's modules this view reads (it is one of the places outside the engine that may).
from ...compiler import CompiledGrammar
from ...kernels import mask_fill as MF
from ...matcher import GrammarMatcher
from ...tokenizer_info import TokenizerInfo


ZONE_NAMES = {MF.ZONE_FREE: "FREE", MF.ZONE_NOEXIT: "NOEXIT"}  # other zones: "exact"


# ---- vocabularies, data, the command line --------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _quicktok(name: str) -> TokenizerInfo:
    return TokenizerInfo.from_quicktok(name)


def sub_vocabulary(n: int = 2000, name: str = "llama3", extra: Sequence[bytes] = (),
                   stop: bytes = b"<|eot_id|>") -> TokenizerInfo:
    """The first `n` tokens of a bundled vocabulary (BPE order: bytes and the commonest pieces
    first; llama3's first 256 hold every byte), then the `extra` tokens, then one stop token
    `stop`.

    Example: info = sub_vocabulary(500, extra=[b"!]"]); info.vocab_size == 502 and info.stop_token_ids == [501]
    """
    full = _quicktok(name)
    regular = [bytes(t) for t in full.decoded_vocab[:n]] + [bytes(t) for t in extra]
    return TokenizerInfo(regular + [bytes(stop)], stop_token_ids=[len(regular)])


_ENCODERS: dict = {}  # id(info) -> (info, its greedy encoder)


def encode(info: TokenizerInfo, text) -> list:
    """Token ids for `text` (str or bytes) by greedy longest match over `info`'s regular tokens
    (not the model's own tokenizer, but a tokenization whose bytes are the text's); ValueError
    when some byte has no token.

    Example: encode(xgr.TokenizerInfo(["a", "ab", "b"]), "abb") == [1, 2]
    """
    from ...tools.diff.checks import greedy_encoder

    held = _ENCODERS.get(id(info))
    if held is None or held[0] is not info:
        held = _ENCODERS[id(info)] = (info, greedy_encoder(info))
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    ids = held[1](data)
    if ids is None:
        raise ValueError(f"{data[:40]!r}... has a byte no token covers")
    return ids


def benchmarks_dir() -> str:
    """The repository's benchmarks/ folder, where the benchmark commands keep their records.

    Example: os.path.join(benchmarks_dir(), "dynamic", "figure6.json")
    """
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return os.path.join(repo, "benchmarks")


def data_dir() -> str:
    """The folder holding the shared data (bfcl/, jsonschemabench/): $XG2REF_DATA, else the
    `shared/data` folder beside the repository.

    Example: os.path.isdir(os.path.join(data_dir(), "bfcl"))
    """
    env = os.environ.get("XG2REF_DATA")
    if env:
        return env
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return os.path.normpath(os.path.join(repo, "..", "shared", "data"))


def run_cli(argv: Sequence[str], cwd: Optional[str] = None) -> dict:
    """Run one `xg2ref ...` command in this process (`xg2ref.tools.cli.main`), in folder `cwd`:
    {"exit": its status, "stdout": what it printed}.

    Example: run_cli(["check", "root ::= \\"a\\"", "a"])["exit"] == 0
    """
    from ...tools.cli import main

    out = io.StringIO()
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out):
            status = main(list(argv))
    finally:
        os.chdir(here)
    return {"exit": status, "stdout": out.getvalue()}


# ---- walks, for checks against the oracle ------------------------------------------------------------


def random_walk(compiled: CompiledGrammar, steps: int, seed: int = 0, matcher: Optional[GrammarMatcher] = None) -> list:
    """A seeded walk of at most `steps` tokens over the compiled grammar's own masks (stop
    tokens are not taken): per step, the bytes accepted so far ("prefix"), the bool mask there
    ("mask") and the token taken next ("token", None at the last step).

    Example: [s["mask"].sum() for s in random_walk(compiled, 5)]
    """
    info = compiled.tokenizer_info
    m = matcher if matcher is not None else GrammarMatcher(compiled)
    stops = np.zeros(info.vocab_size, dtype=np.bool_)
    stops[list(info.stop_token_ids)] = True
    rng = random.Random(seed)
    prefix = b""
    out = []
    for step in range(steps + 1):
        mask = m.compute_bool_mask().copy()
        allowed = np.flatnonzero(mask & ~stops)
        token = int(allowed[rng.randrange(len(allowed))]) if step < steps and len(allowed) else None
        out.append({"prefix": prefix, "mask": mask, "token": token})
        if token is None:
            break
        if not m.accept_token(token):
            raise AssertionError(f"the matcher refused token {token}, which its own mask allowed")
        prefix += bytes(info.decoded_vocab[token])
    return out
