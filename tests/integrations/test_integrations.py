"""Integration call sequences (vLLM v1 and v0, SGLang, TensorRT-LLM, Outlines, transformers,
Lark and serialization round trips) replayed on xg2ref, and on xgrammar 0.2.8 for parity.

Each scenario runs on an engine module and records every observable (driver.py). On xg2ref
alone it must meet its engine-free expectations: masks agree with accept_token, rollback and
reset restore masks, named tokens allowed or forbidden, valid outputs accepted to the end. With
xgrammar installed the same scenario runs on both engines and the records must agree step by
step: xgrammar's is `want`, xg2ref's is `have`.
"""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import xg2ref  # noqa: E402

from . import (hf_transformers, lark_and_serialization, outlines, sglang, tensorrt_llm, vllm_v0,  # noqa: E402
               vllm_v1)
from .common import Env  # noqa: E402
from .driver import differences, run_scenario  # noqa: E402

SCENARIOS = {}
for _module in (vllm_v1, vllm_v0, sglang, tensorrt_llm, outlines, hf_transformers, lark_and_serialization):
    SCENARIOS.update(_module.SCENARIOS)


@pytest.fixture(scope="module")
def env():
    return Env()


@pytest.fixture(scope="module")
def on_xg2ref(env):
    """xg2ref's run of a scenario, made once and shared by both tests."""
    runs = {}

    def get(name):
        if name not in runs:
            runs[name] = run_scenario(xg2ref, SCENARIOS[name], env)
        return runs[name]

    return get


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_xg2ref_meets_the_expectations(on_xg2ref, name):
    have = on_xg2ref(name)
    assert have.aborted is None, f"{name} stopped: {have.aborted}"
    assert have.unmet == []


@pytest.mark.xgrammar
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_xg2ref_matches_xgrammar(on_xg2ref, env, name):
    xgrammar = pytest.importorskip("xgrammar")
    want = run_scenario(xgrammar, SCENARIOS[name], env)
    assert want.aborted is None and want.unmet == [], "the scenario fails on xgrammar itself"
    assert differences(want, on_xg2ref(name), env.describe) == []
