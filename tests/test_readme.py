"""README's decoding example runs as written: a forced tool call, generated through the logits
processor, starts with the call's prefix in every row and reports the masks' time."""

import contextlib
import io
import os
import re

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


@pytest.mark.slow
@pytest.mark.jit_only
def test_the_decoding_example_runs_as_written():
    text = open(README, encoding="utf-8").read()
    block = re.search(r"<!-- hf-example[^>]*-->\n```python\n(.*?)```", text, re.S)
    assert block, "README lost its hf-example block"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block.group(1), "README.md", "exec"), {})
    lines = printed.getvalue().rstrip("\n").split("\n")  # (the random text may hold U+2028)
    assert len(lines) == 5
    assert all(line.startswith('{"name": "get_weather", "parameters": {') for line in lines[:4])
    assert re.fullmatch(r"masks: \d+ ms of \d+ ms decoding \(\d+%\)", lines[4])


def _alias_block() -> str:
    text = open(README, encoding="utf-8").read()
    block = re.search(r"<!-- alias-example[^>]*-->\n```python\n(.*?)```", text, re.S)
    assert block, "README lost its alias-example block"
    return block.group(1)


def _run(code: str) -> str:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          cwd=os.path.dirname(README))
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_the_alias_example_runs_on_xg2ref_as_written():
    """README's vLLM/SGLang section: with the alias installed, `import xgrammar` is xg2ref and the
    engine-style calls run; the output is what the README says."""
    assert _run(_alias_block()) == "xg2ref [0]"
    assert "It prints `xg2ref [0]`" in open(README, encoding="utf-8").read()


@pytest.mark.xgrammar
def test_the_alias_example_means_the_same_under_xgrammar():
    """The same script without the alias lines runs on the real xgrammar 0.2.8 and allows the
    same tokens."""
    pytest.importorskip("xgrammar")
    code = "\n".join(line for line in _alias_block().splitlines() if "alias" not in line)
    assert _run(code) == "xgrammar [0]"
