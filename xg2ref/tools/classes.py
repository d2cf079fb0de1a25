"""`xg2ref classes`: CFGzip's offline step (§3.1) for one grammar and one vocabulary, the token
classes computed, summed up and saved (specs/09-token-classes.md).

    xg2ref classes FILE --vocab llama3 [--relation displacement] -o DIR

writes DIR/classes.npz (`TokenClasses.save`: the class of each token, the representatives, the
fingerprints of grammar, vocabulary, stops and relation) and DIR/summary.json (the statistics),
and prints one line per figure: classes, largest classes, tokens never allowed, signatures past
the frontier's limit (classes of their own), seconds. A progress bar follows the displacement
walk on a terminal.
"""

from __future__ import annotations

import json
import os
import time

from ..compiler import GrammarCompiler
from ..token_classes import compute_token_classes
from ..token_classes.classes import class_summary
from .diff.report import ProgressBar


def compute_and_save(case, info, relation: str, out_dir: str, max_frontier=None, progress: bool = True) -> dict:
    """Compile `case` (a suite Case) over `info` with the compiler's defaults, compute its classes
    under `relation`, save them in `out_dir`; the summary written beside them."""
    start = time.perf_counter()
    compiled = GrammarCompiler(info).compile_grammar(case.grammar())
    compile_seconds = time.perf_counter() - start
    bar = ProgressBar(1, enabled=progress)

    def report(done: int, total: int) -> None:
        bar.total = max(total, 1)
        bar.update(done, "signatures walked")

    try:
        classes = compute_token_classes(compiled, relation, max_frontier=max_frontier, progress=report)
    finally:
        bar.close()
    os.makedirs(out_dir, exist_ok=True)
    classes.save(os.path.join(out_dir, "classes.npz"))
    summary = {"grammar": case.name, "relation": relation, "vocab_size": info.vocab_size,
               "compile_seconds": round(compile_seconds, 3), **classes.stats,
               "summary": class_summary(classes), "fingerprints": classes.fingerprints}
    with open(os.path.join(out_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    return summary


def format_summary(summary: dict, out_dir: str) -> str:
    """The lines `xg2ref classes` prints."""
    lines = [summary["summary"],
             f"  tokens never allowed (special, padding, valid nowhere): {summary.get('never_tokens', 0):,}"]
    if summary["relation"] == "displacement":
        lines.append(f"  signatures walked: {summary['signatures']:,}; past the frontier's limit "
                     f"({summary['max_frontier']:,}): {summary['fallback_signatures']:,} signatures, "
                     f"{summary['fallback_tokens']:,} tokens (a class per signature)")
        lines.append(f"  Greibach normal form: {summary['gnf_symbols']:,} symbols, "
                     f"{summary['gnf_productions']:,} productions over {summary['byte_blocks']} byte blocks")
    lines.append(f"  {summary['seconds']:.2f} s (compile {summary['compile_seconds']:.2f} s); written to "
                 f"{os.path.join(out_dir, 'classes.npz')}")
    return "\n".join(lines)


def add_arguments(p) -> None:
    """The arguments of `xg2ref classes` (the JSON Schema options are the shared ones)."""
    p.add_argument("grammar", metavar="GRAMMAR",
                   help="an .ebnf/.gbnf/.lark/.regex/.json file (schema or structural tag), a suite case or EBNF text")
    p.add_argument("--kind", default="auto", help="auto (default), ebnf, lark, regex, json_schema, structural_tag")
    p.add_argument("--vocab", default="llama3", help="a quicktok name, a tokenizer.json or a JSON list of tokens")
    p.add_argument("--relation", default="displacement", choices=("displacement", "byte_blocks", "identity"),
                   help="displacement (default: CFGzip's), byte_blocks (cheap) or identity")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="where classes.npz and summary.json go")
    p.add_argument("--max-frontier", type=int, help="the displacement walk's limit per trie node (default 16384)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def run_command(args, options: dict) -> int:
    """`xg2ref classes` (`options`: the JSON Schema options given): exit 0; UsageError for bad
    input."""
    from .user_cases import CaseError, UsageError, load_user_case, load_vocab

    info = load_vocab(args.vocab)
    try:
        case = load_user_case(args.grammar, args.kind, options)
    except CaseError as err:
        raise UsageError(str(err)) from None
    if args.max_frontier is not None and args.max_frontier < 1:
        raise UsageError("--max-frontier must be at least 1")
    summary = compute_and_save(case, info, args.relation, args.output, args.max_frontier, not args.no_progress)
    print(format_summary(summary, args.output))
    return 0
