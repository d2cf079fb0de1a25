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
