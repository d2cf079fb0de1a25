"""`xg2ref bench mask`: correctness is checked before timings are reported."""

import pytest

from xg2ref.bench import Row, bench_mask, format_table


def test_table_has_ratios():
    row = Row("x", tokens=2, ours_us=[2.0, 4.0], theirs_us=[1.0, 2.0], ours_compile_ms=3.0, theirs_compile_ms=1.0,
              ours_memory=2048, theirs_memory=1024, counts=(1, 2, 3))
    text = format_table([row])
    assert "x " in text and "3.0" in text and "2.00" in text and "1 / 2 / 3" in text


@pytest.mark.jit_only
@pytest.mark.xgrammar
def test_bench_runs_on_suite_cases():
    pytest.importorskip("xgrammar")
    lines = []
    status = bench_mask(cases=["recursion", "classes"], out=lines.append)
    text = "\n".join(lines)
    assert status == 0, text
    assert "recursion" in text and "classes" in text
    assert "documented xgrammar inexactness" in text  # the `[]` alternative of `classes`


def test_missing_data_is_a_clear_error(tmp_path):
    from xg2ref.bench import json_mode_eval_texts

    with pytest.raises(FileNotFoundError, match="--data"):
        json_mode_eval_texts(str(tmp_path))
