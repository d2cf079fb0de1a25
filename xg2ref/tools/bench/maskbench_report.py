"""The report of `xg2ref bench maskbench` (XGrammar-2 App. E, Figure 11), from its records: per
engine and per subset, the compile time (p50, p99, the share of schemas compiled within 1 ms and
within 10 ms), the time to first mask and the time between masks, with ratios to xgrammar 0.2.8;
and the CDFs of compile time and time between masks (PNG).

Shares are over every schema of the records: a schema an engine refused, failed or timed out on
counts as not compiled within either bound. Times between masks are over the instances every
engine read to the end, so that each engine is timed on the same tokens.
"""

from __future__ import annotations

import os
from typing import Optional

import numpy as np

ENGINES = ("xg2ref", "xgrammar", "llguidance", "outlines", "pda")  # the bench's engines, in its order
BOUNDS_MS = (1.0, 10.0)
PERCENTILES = (50, 90, 99, 99.9)


def engines_of(records: list) -> list:
    return sorted({e for r in records for e in r["timing"]}, key=ENGINES.index)


def summarize(records: list) -> dict:
    """Per engine: schemas compiled, compile p50 / p99 and the shares within BOUNDS_MS, time to first
    mask p50 / p99, time between masks avg and percentiles, failures (timeouts apart)."""
    engines = engines_of(records)
    common = [r for r in records if r["tokens"] and all(e in r["timing"] and r["timing"][e]["ttfm"] is not None
                                                       and not r["timing"][e]["error"] for e in engines)]
    out = {}
    for e in engines:
        rows = [r["timing"][e] for r in records if e in r["timing"]]
        compile_s = np.array([t["compile"] for t in rows if t.get("compile") is not None and t["ttfm"] is not None])
        ttfm = np.array([t["ttfm"] for t in rows if t["ttfm"] is not None])
        steps = np.array([s for r in common for s in r["timing"][e]["steps"]])
        row = {"schemas": len(rows), "compiled": int(len(ttfm)),
               "compile_p50": _pct(compile_s, 50), "compile_p99": _pct(compile_s, 99),
               "ttfm_p50": _pct(ttfm, 50), "ttfm_p99": _pct(ttfm, 99),
               "tokens": int(len(steps)), "tbm_avg": float(steps.mean()) if len(steps) else None,
               "tbm_max": float(steps.max()) if len(steps) else None}
        for bound in BOUNDS_MS:
            row[f"within_{bound:g}ms"] = float(np.sum(compile_s <= bound / 1e3) / len(rows)) if rows else None
        for p in PERCENTILES:
            row[f"tbm_p{p}"] = _pct(steps, p)
        row["timeouts"] = sum(1 for t in rows if t["error"] == "timeout")
        row["failed"] = sum(1 for t in rows if t["error"] and t["error"] != "timeout")
        out[e] = row
    return out


def _pct(a: np.ndarray, p: float) -> Optional[float]:
    return float(np.percentile(a, p)) if len(a) else None


def _cell(key: str, value, ref) -> str:
    if value is None:
        return "-"
    if key.startswith("within"):
        return f"{100 * value:.1f}%"
    text = f"{value * 1e3:.2f} ms" if key.startswith(("ttfm", "compile")) else f"{value * 1e6:.0f} us"
    return text + (f" {value / ref:.2f}x" if ref else "")


def _table(summary: dict, cols: list, first: str = "engine") -> list:
    head = f"{first:<12}{'schemas':>8}{'compiled':>9}{'tokens':>8}" + "".join(f"{name:>19}" for _, name in cols)
    lines = [head, "-" * len(head)]
    ref = summary.get("xgrammar", {})
    for engine, row in summary.items():
        cells = [_cell(key, row[key], ref.get(key) if engine != "xgrammar" and not key.startswith("within") else None)
                 for key, _ in cols]
        lines.append(f"{engine:<12}{row['schemas']:>8}{row['compiled']:>9}{row['tokens']:>8}"
                     + "".join(f"{c:>19}" for c in cells))
    return lines


def format_report(records: list) -> str:
    """The whole sample's table, then one per subset (compile, first mask, mean time between masks)."""
    cols = [("compile_p50", "compile p50"), ("compile_p99", "compile p99")] + \
        [(f"within_{b:g}ms", f"<= {b:g} ms") for b in BOUNDS_MS] + \
        [("ttfm_p50", "ttfm p50"), ("ttfm_p99", "ttfm p99"), ("tbm_avg", "tbm avg")] + \
        [(f"tbm_p{p}", f"p{p}") for p in PERCENTILES] + [("tbm_max", "max")]
    summary = summarize(records)
    lines = ["all schemas"] + _table(summary, cols)
    for engine, row in summary.items():
        if row["failed"] or row["timeouts"]:
            lines.append(f"  {engine}: {row['failed']} schemas refused or failed, {row['timeouts']} past the time "
                         "limit (records say why)")
    short = cols[:5] + [("tbm_avg", "tbm avg")]
    for subset in sorted({r["subset"] for r in records}):
        lines += ["", subset] + _table(summarize([r for r in records if r["subset"] == subset]), short)
    lines.append("(compile: the engine's compile call alone; ttfm: compile + matcher + first mask, cold first "
                 "requests included; <= 1 ms / 10 ms: share of all schemas compiled within the bound; tbm: accept a "
                 "token and fill the next mask, over the instances every engine read; ratios to xgrammar 0.2.8 in "
                 "the same run)")
    return "\n".join(lines)


def plot_cdf(records: list, path: str) -> None:
    """Two panels: compile time and time between masks, each engine's CDF, log time axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for e in engines_of(records):
        rows = [r["timing"][e] for r in records if e in r["timing"]]
        compiled = np.sort([t["compile"] for t in rows if t.get("compile") is not None and t["ttfm"] is not None])
        if len(compiled):  # the share of all schemas: refusals and timeouts keep the curve below 1
            left.step(compiled * 1e3, np.arange(1, len(compiled) + 1) / len(rows), where="post", label=e)
        steps = np.sort([s for t in rows for s in t.get("steps", [])])
        if len(steps):
            right.plot(steps * 1e6, np.arange(1, len(steps) + 1) / len(steps), label=e)
    for bound in BOUNDS_MS:
        left.axvline(bound, color="grey", lw=0.8, ls="--")
    left.set_xlabel("compile time (ms, log scale)")
    left.set_ylabel("share of schemas")
    left.set_title("XGrammar-2 Fig. 11: compile time per schema")
    right.set_xlabel("time between masks (µs, log scale)")
    right.set_ylabel("share of tokens")
    right.set_title("time between masks, defaults on every engine")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
