"""Cached masks on real vocabularies: every bundled grammar x llama3, qwen3 and o200k_harmony.

Along gold traces (the suite's samples, tokenized by the vocabulary's own tokenizer) and seeded
random walks over xg2ref's masks, at every step:

    the cached mask == the every-token mask (each regular token through the parser)
                    == xgrammar 0.2.8's mask (when xgrammar is installed)

The last comparison skips the tokens xgrammar keeps by design: the `classes` case's dead
alternative `nothing ::= "#" []` (specs/01-ebnf.md, "Differences", item 4), where the oracle
sides with xg2ref (tests/test_ebnf.py pins it).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import xg2ref as xgr
from xg2ref.tools.diff.checks import quicktok_encoder
from xg2ref.suite import load_cases

VOCABS = ("llama3", "qwen3", "o200k_harmony")
CASES = load_cases()
RANDOM_WALKS = 2
WALK_STEPS = 12
GOLD_STEPS = 24
# xgrammar keeps tokens that enter a dead alternative (specs/01-ebnf.md, Differences 4): the
# ones that read this byte string
KNOWN_XGRAMMAR_EXTRA = {"classes": b"#"}

pytestmark = pytest.mark.jit_only


@pytest.fixture(scope="module", params=VOCABS)
def vocab(request):
    info = xgr.TokenizerInfo.from_quicktok(request.param)
    compiler = xgr.GrammarCompiler(info)
    try:
        from xg2ref.oracle.engines import XGrammarEngine

        reference = XGrammarEngine.from_tokenizer_info(info)
    except Exception:
        reference = None
    return request.param, info, compiler, reference


def _xgrammar_extra_ok(case_name: str, info, extra: np.ndarray) -> bool:
    """Tokens xgrammar allows and xg2ref rejects are all explained by a documented difference."""
    lead = KNOWN_XGRAMMAR_EXTRA.get(case_name)
    return lead is not None and all(lead in info.decoded_vocab[t] for t in np.flatnonzero(extra))


def _check_step(case, info, matcher, ref, where: str) -> np.ndarray:
    cached = matcher.compute_bool_mask()
    every = matcher._every_token_bool_mask()
    assert np.array_equal(cached, every), (
        f"{where}: cached mask differs from the every-token mask at ids "
        f"{np.flatnonzero(cached != every)[:10].tolist()}")
    if ref is not None:
        theirs = ref.bool_mask()
        if not np.array_equal(cached, theirs):
            missing = cached & ~theirs
            extra = theirs & ~cached
            assert not missing.any(), f"{where}: xgrammar rejects ids {np.flatnonzero(missing)[:10].tolist()}"
            assert _xgrammar_extra_ok(case.name, info, extra), (
                f"{where}: xgrammar also allows ids {np.flatnonzero(extra)[:10].tolist()}")
    return cached


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_cached_equals_every_token_equals_xgrammar(case, vocab):
    name, info, compiler, reference = vocab
    compiled = compiler.compile_grammar(case.text, root_rule_name=case.root)
    encode = quicktok_encoder(name)
    traces = []
    for sample in case.samples:
        ids = encode(sample.encode("utf-8"))
        if ids is not None:
            traces.append(("gold", ids[:GOLD_STEPS]))
    rng = random.Random(f"{case.name}/{name}")
    traces += [("random", None)] * RANDOM_WALKS
    steps = 0
    for kind, ids in traces:
        matcher = xgr.GrammarMatcher(compiled)
        ref = reference.compile(case.text, case.root) if reference is not None else None
        for step in range(len(ids) if ids is not None else WALK_STEPS):
            where = f"{case.name}/{name} {kind} step {step}"
            mask = _check_step(case, info, matcher, ref, where)
            steps += 1
            if ids is not None:
                token = ids[step]
            else:
                stops = set(info.stop_token_ids)
                allowed = [t for t in np.flatnonzero(mask) if t not in stops]
                if not allowed:
                    break
                token = int(rng.choice(allowed))
            ok = matcher.accept_token(token)
            assert ok == bool(mask[token]), f"{where}: accept_token({token}) = {ok} against the mask"
            if not ok:
                break
            if ref is not None:
                assert ref.accept_token(token), f"{where}: xgrammar refuses token {token}"
    assert steps > 0
