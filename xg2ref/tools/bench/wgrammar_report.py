"""The tables, the record and the figure of `xg2ref bench wgrammar` (wgrammar.py): WGrammar's
Fig. 6 breakdown, its Table 1 components beside the paper's overheads, the global cache's hit rate
as requests accumulate, and the price of token-level semantics."""

from __future__ import annotations

import json
import os
from typing import Optional

import numpy as np

ENGINES = ("wgrammar", "wgrammar-online", "xg2ref", "xg2ref-linked", "xgrammar", "llguidance", "pda")
WORKLOADS = ("json", "outline", "lookup")
# WGrammar Table 1: overhead over unstructured decoding, ms (TTFT, TPOT), XGrammar 0.1.18 and WGrammar
PAPER = {"outline": {"xgrammar": (2747.83, 1.61), "wgrammar-online": (64.25, 0.93), "wgrammar": (10.93, 0.69)},
         "lookup": {"xgrammar": (116.89, 0.51), "wgrammar-online": (4.17, 0.42), "wgrammar": (4.70, 0.50)},
         "json": {"xgrammar": (137.68, 0.89), "wgrammar-online": (7.56, 0.70), "wgrammar": (1.38, 0.67)}}


# checks whose failure fails the bench: the exact engines and WGrammar on its own tokenization
STRICT = ("xg2ref", "xg2ref-linked", "xgrammar", "wgrammar")


def _mean(values) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def _pct(values, q) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


def summarize(runs: list) -> dict:
    """(workload, engine) -> the figures of its timed requests (those without an error)."""
    out = {}
    for workload in WORKLOADS:
        for engine in ENGINES:
            done = [r for r in runs if r.workload == workload and r.engine == engine and not r.error]
            if not done:
                continue
            accept = [x for r in done for x in r.accept_us]
            fill = [x for r in done for x in r.fill_us]
            step = [a + f for r in done for a, f in zip(r.accept_us, r.fill_us)]
            out[(workload, engine)] = {
                "requests": len(done), "tokens": len(accept),
                "compile_ms": _mean([r.compile_ms for r in done]), "compile_p50": _pct([r.compile_ms for r in done], 50),
                "first_ms": _mean([r.first_ms for r in done]), "first_p99": _pct([r.first_ms for r in done], 99),
                "accept_us": _mean(accept), "fill_us": _mean(fill),
                "step_us": _mean(step), "step_p50": _pct(step, 50), "step_p99": _pct(step, 99)}
    return out


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}x" if a == a and b == b and b > 0 else "-"


def fig6_table(summary: dict) -> str:
    lines = ["| workload | engine | requests | compile or instantiate ms mean (p50) | accept us/token | fill us/token | "
             "xgrammar / engine: compile, accept, fill | pda / engine: compile, accept, fill |",
             "|---|---|---|---|---|---|---|---|"]
    for (workload, engine), s in summary.items():
        ref = [summary.get((workload, e)) for e in ("xgrammar", "pda")]
        vs = [", ".join(_ratio(r[k], s[k]) for k in ("compile_ms", "accept_us", "fill_us")) if r else "-" for r in ref]
        lines.append(f"| {workload} | {engine} | {s['requests']} | {s['compile_ms']:.2f} ({s['compile_p50']:.2f}) | "
                     f"{s['accept_us']:.1f} | {s['fill_us']:.1f} | {vs[0]} | {vs[1]} |")
    return "\n".join(lines)


def table1(summary: dict) -> str:
    lines = ["| workload | engine | TTFT component ms mean (p99) | TPOT component us mean / p50 / p99 | "
             "xgrammar / engine (TTFT, TPOT) | paper overhead ms (TTFT, TPOT) | paper XGrammar 0.1.18 / engine |",
             "|---|---|---|---|---|---|---|"]
    for (workload, engine), s in summary.items():
        x = summary.get((workload, "xgrammar"))
        ours = f"{_ratio(x['first_ms'], s['first_ms'])}, {_ratio(x['step_us'], s['step_us'])}" if x else "-"
        paper = PAPER[workload].get(engine)
        xg1 = PAPER[workload]["xgrammar"]
        theirs = f"{paper[0]}, {paper[1]}" if paper else "-"
        paper_ratio = (f"{xg1[0] / paper[0]:.0f}x, {xg1[1] / paper[1]:.2f}x" if paper and engine != "xgrammar" else "-")
        lines.append(f"| {workload} | {engine} | {s['first_ms']:.2f} ({s['first_p99']:.2f}) | "
                     f"{s['step_us']:.1f} / {s['step_p50']:.1f} / {s['step_p99']:.1f} | {ours} | {theirs} | {paper_ratio} |")
    lines.append("\n(the paper's xgrammar row is XGrammar 0.1.18, a pushdown automaton: compare it with the pda row; "
                 "its overheads are end to end in vLLM on an A100, ours the CPU components alone)")
    return "\n".join(lines)


def hit_rates(runs: list) -> str:
    lines = ["| workload | requests | hit rate, request 1 | requests 2-10 | requests 11 on | all |", "|---|---|---|---|---|---|"]
    for workload in WORKLOADS:
        done = [r for r in runs if r.workload == workload and r.engine == "wgrammar" and not r.error]
        if not done:
            continue

        def rate(part):
            hits, asked = sum(r.hits for r in part), sum(r.hits + r.misses for r in part)
            return f"{hits / asked:.3f}" if asked else "-"
        lines.append(f"| {workload} | {len(done)} | {rate(done[:1])} | {rate(done[1:10])} | {rate(done[10:])} | "
                     f"{rate(done)} |")
    return "\n".join(lines)


def price_table(price: dict) -> str:
    lines = ["| workload | instances | outside the factory | not writable as WGrammar tokens | canonical tokenizations "
             "taken | WGrammar tokens / canonical | online path covers |", "|---|---|---|---|---|---|---|"]
    for workload, p in price.items():
        inside = p["instances"] - len(p["outside"])
        lines.append(f"| {workload} | {p['instances']} | {len(p['outside'])} | {len(p['wg_untokenizable'])} | "
                     f"{p['canonical_taken']} of {inside} | {_mean(p['token_ratio']):.3f} | "
                     f"{p['online_covered']} of {inside - len(p['wg_untokenizable'])} |")
    return "\n".join(lines)


def _rounded(run: dict) -> dict:
    """A run for the record: times to 0.1 µs (the record stays small; the clock is not finer)."""
    return {k: ([round(x, 1) for x in v] if k in ("accept_us", "fill_us") else
                round(v, 4) if isinstance(v, float) else v) for k, v in run.items()}


def draw(summary: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, (key, title) in zip(axes, (("compile_ms", "compile or instantiate (ms)"),
                                       ("accept_us", "state tracking: accept (us/token)"),
                                       ("fill_us", "mask creation: fill (us/token)"))):
        for k, engine in enumerate(ENGINES):
            values = [summary.get((w, engine), {}).get(key, np.nan) for w in WORKLOADS]
            ax.bar(np.arange(len(WORKLOADS)) + (k - 3) * 0.12, values, 0.12, label=engine)
        ax.set_xticks(np.arange(len(WORKLOADS)), WORKLOADS)
        ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
    axes[0].legend(fontsize=7)
    fig.suptitle("WGrammar Fig. 6 on this machine: the overhead's parts per engine (one core, log scale)")
    plt.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(runs: list, checks: list, price: dict, factory_s: float, vocab: str, results: Optional[str] = None,
           plot: Optional[str] = None) -> int:
    """Print every table; write the record and the figure; 1 when a strict check failed."""
    summary = summarize(runs)
    print(f"\nvocabulary {vocab}; the three template factories built offline in {factory_s:.2f} s\n")
    print("WGrammar Fig. 6: the overhead's parts per request\n")
    print(fig6_table(summary))
    print("\nWGrammar Table 1, CPU components: time to first mask and per token\n")
    print(table1(summary))
    print("\nThe global mask cache as requests accumulate (WGrammar, templates)\n")
    print(hit_rates(runs))
    print("\nThe price of token-level semantics\n")
    print(price_table(price))
    failed = [c for c in checks if any(f" {e}:" in c for e in STRICT) or "masks differ" in c]
    others = [c for c in checks if c not in failed]
    for c in failed[:20]:
        print("CHECK FAILED", c)
    if others:
        print(f"\nrequests an engine refused ({len(others)}; not timed): " + "; ".join(others[:12]))
    if results:
        os.makedirs(os.path.dirname(results) or ".", exist_ok=True)
        with open(results, "w", encoding="utf-8") as f:
            json.dump({"vocab": vocab, "factory_seconds": factory_s, "runs": [_rounded(r.__dict__) for r in runs],
                       "checks": checks, "price": price}, f)
    if plot:
        draw(summary, plot)
        print(f"\nfigure: {plot}")
    return 1 if failed else 0
