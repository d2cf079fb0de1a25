"""The `xg2ref` command line: check strings, list masks, trace the Earley chart, print FSMs, diff.

    xg2ref check GRAMMAR STRING [--partial] [--hex]   is STRING a sentence? if not, where it fails
    xg2ref mask GRAMMAR [--prefix P] [--vocab V]      the tokens allowed after a prefix
    xg2ref explain GRAMMAR --prefix P (--text T | --token ID [--vocab V])
                                                      why a continuation is allowed or rejected
    xg2ref replay GRAMMAR --tokens FILE [--against E] a generation log step by step: oracle and engines
    xg2ref fuzz --budget SECONDS [--against E,...]    generated inputs against other engines, findings shrunk
    xg2ref classes GRAMMAR --vocab V -o DIR           token classes (CFGzip's offline step), saved
    xg2ref trace GRAMMAR STRING                       the Earley sets byte by byte, as dotted rules
    xg2ref fsm GRAMMAR [RULE]                         the byte-level FSM of a rule, or of all
    xg2ref diff [FILE...] [--against E[,E...]] ...    xg2ref vs its oracle vs other engines: your files, or the suite
    xg2ref bench mask [--vocab V] [--limit N]         mask time, compile time, cache size vs xgrammar
    xg2ref bench jsonschemabench [--sample N]         compile rate and output validity per subset
    xg2ref bench tagdispatch                          Aho-Corasick sizes and plain-EBNF sizes (Table 2)
    xg2ref bench dynamic [--requests N]               static vs dynamic tool sets: reuse, compile time (Table 1, Fig. 6)
    xg2ref bench ablation [--sample N]                Baseline, +JIT, +cross-grammar cache, +repetition compression (Table 4)
    xg2ref bench targets [--requests N]               the default path vs xgrammar: first masks, masks p50-max, cliffs
    xg2ref bench xg1-ablation [--limit N]             XGrammar's Table 3 on XGrammar-1's pushdown automaton
    xg2ref bench earley-vs-pda [--sample N]           Earley against the pushdown automaton on JSONSchemaBench (Fig. 10)
    xg2ref bench formats [--tools N ...]              per-token overhead and compile time, llama and harmony (Figs. 7, 8)
    xg2ref bench kernels                              bitmask applied to logits: each backend vs xgrammar's, GPU when present
    xg2ref bench maskbench [--sample N]               compile, first mask, between masks on JSON schemas (Fig. 11)
    xg2ref schema-report FILE [--engines E ...]       each keyword of a JSON Schema: exact, approximated, refused, ...
    xg2ref cases                                      the bundled suite

GRAMMAR is a path to an EBNF (.ebnf, .gbnf) file, the name of a bundled case (`json`,
`arithmetic`, ...: see `xg2ref cases`), or EBNF text itself when it contains `::=`.

Exit status: 0 accepted / agreed, 1 rejected / disagreed (see each command), 2 bad input
(a grammar error prints its message with a caret under the column, never a traceback).

What it leaves out: JSON Schema, regex and structural-tag grammars given on the command line
(they reach the commands as bundled suite cases: `regex-date`, `schemas-...`, `bfcl-llama`),
and batched masks.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Optional, Sequence

import numpy as np

from ..config import APPROXIMATE_ENV, EXACT_FORMATS_ENV
from ..exceptions import XG2RefError
from ..oracle.engines import EngineUnavailable
from .bench.dispatch import DYNAMIC_PLOT
from .cluster import RaySpec, add_arguments as add_ray_arguments, start as cluster_start
from .messages import count, describe_expected, feed, rejection, show
from .user_cases import UsageError, load_vocab  # noqa: F401  (load_vocab: also xg2ref.tools.cli's)



# ---- grammars and vocabularies ----------------------------------------------------------------


def load_grammar_text(spec: str, root: Optional[str]) -> tuple[str, str, str]:
    """(label, EBNF text, root rule) for a file path, a suite case name or inline EBNF text."""
    from ..suite import case_names, load_cases

    if os.path.isfile(spec):
        with open(spec, encoding="utf-8") as f:
            return spec, f.read(), root or "root"
    try:
        case = load_cases([spec])[0]
    except KeyError:
        case = None
    if case is not None:
        return spec, case.text, root or case.root
    if "::=" in spec:
        return "<inline grammar>", spec, root or "root"
    raise UsageError(f"no grammar file or suite case named {spec!r} (cases: {', '.join(case_names())})")


def compile_grammar(spec: str, root: Optional[str], info=None):
    """Parse and compile GRAMMAR (EBNFError propagates); `info` defaults to an empty vocabulary."""
    from ..compiler import GrammarCompiler
    from ..grammar.grammar import Grammar
    from ..tokenizer_info import TokenizerInfo

    _, text, root = load_grammar_text(spec, root)
    grammar = Grammar.from_ebnf(text, root_rule_name=root)
    return GrammarCompiler(info if info is not None else TokenizerInfo([])).compile_grammar(grammar)


def input_bytes(text: str, as_hex: bool) -> bytes:
    if not as_hex:
        return text.encode("utf-8", "surrogateescape")
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise UsageError(f"not a hex string: {text!r}") from None


# ---- commands ---------------------------------------------------------------------------------


def cmd_check(args) -> int:
    from ..earley import EarleyParser

    compiled = compile_grammar(args.grammar, args.root)
    data = input_bytes(args.string, args.hex)
    parser = EarleyParser(compiled.fsms, compiled.arrays)
    read = feed(parser, data)
    if read < len(data):
        print(rejection(parser, data, read))
        return 1
    if args.captures:
        from ..matcher import GrammarMatcher

        matcher = GrammarMatcher(compiled)
        matcher.accept_string(data)
        for label, span in matcher.get_captures():
            print(f"capture {label}: {span!r}")
    if parser.is_completed():
        print(f"accepted: a complete sentence ({count(len(data), 'byte')})")
        return 0
    print(f"only a prefix: {count(len(data), 'byte')} read, not a complete sentence\n"
          f"  expected next: {describe_expected(parser)}")
    return 0 if args.partial else 1


def cmd_mask(args) -> int:
    from ..earley import EarleyParser
    from ..matcher import GrammarMatcher

    info = load_vocab(args.vocab)
    compiled = compile_grammar(args.grammar, args.root, info)
    prefix = input_bytes(args.prefix_hex, True) if args.prefix_hex is not None else input_bytes(args.prefix, False)
    parser = EarleyParser(compiled.fsms, compiled.arrays)
    read = feed(parser, prefix)
    if read < len(prefix):
        print("the prefix is not viable: " + rejection(parser, prefix, read))
        return 1
    matcher = GrammarMatcher(compiled)
    matcher.accept_string(prefix)
    mask = matcher.compute_bool_mask()
    allowed = np.flatnonzero(mask)
    stops = set(info.stop_token_ids)
    complete = "a complete sentence, stop tokens allowed" if matcher.is_completed() else "not a complete sentence"
    print(f"{len(allowed):,} of {info.vocab_size:,} tokens allowed after {show(prefix)} ({complete})")
    for t in allowed[:args.limit]:
        print(f"{t:>8}  {info.token_bytes(int(t))!r}{'  <stop>' if t in stops else ''}")
    if len(allowed) > args.limit:
        print(f"     ... {len(allowed) - args.limit:,} more (--limit)")
    for t in args.token or ():
        if not 0 <= t < info.vocab_size:
            raise UsageError(f"token id {t} is outside the vocabulary [0, {info.vocab_size})")
        verdict = "allowed" if mask[t] else "rejected"
        print(f"token {t} {info.token_bytes(t)!r}{' <stop>' if t in stops else ''}: {verdict}")
    return 0


def cmd_trace(args) -> int:
    from ..earley import EarleyParser, ItemPrinter

    compiled = compile_grammar(args.grammar, args.root)
    data = input_bytes(args.string, args.hex)
    parser = EarleyParser(compiled.fsms, compiled.arrays)
    printer = ItemPrinter(compiled.fsms)

    def dump(k: int, title: str) -> None:
        print(title)
        for line in parser.format_set(k, printer).splitlines():
            print("    " + line)

    dump(0, "set 0: nothing read")
    for i, b in enumerate(data):
        if not parser.advance(bytes((b,))):
            print(rejection(parser, data, i))
            return 1
        dump(i + 1, f"set {i + 1}: after byte {i} {show(bytes((b,)))} (0x{b:02X})")
    state = "a complete sentence" if parser.is_completed() else "a prefix, not a complete sentence"
    print(f"end: {count(len(data), 'byte')} read, {state}")
    return 0


def cmd_fsm(args) -> int:
    compiled = compile_grammar(args.grammar, args.root)
    fsms = compiled.fsms
    names = list(fsms.rule_names)
    if args.rule is not None and args.rule not in names:
        raise UsageError(f"no rule {args.rule!r} after normalization (small rules are inlined); "
                         f"rules: {', '.join(names)}")
    for r, name in enumerate(names):
        if args.rule is None or name == args.rule:
            marks = [m for m, on in (("root", r == fsms.root), ("nullable", fsms.nullable[r])) if on]
            print(f"rule {name}{' (' + ', '.join(marks) + ')' if marks else ''}")
            print("    " + fsms.fsms[r].to_text(names).replace("\n", "\n    "))
    return 0


def add_front_end_arguments(p: argparse.ArgumentParser) -> None:
    """The JSON-schema options of `compile_json_schema`, for commands that read a user's case."""
    bool_flag = argparse.BooleanOptionalAction
    p.add_argument("--any-whitespace", action=bool_flag, help="JSON Schema: any whitespace (default: on)")
    p.add_argument("--strict-mode", action=bool_flag, help="JSON Schema: strict mode (default: on)")
    p.add_argument("--any-order", action=bool_flag, help="JSON Schema: members in any order (default: off)")
    p.add_argument("--max-whitespace-cnt", type=int, help="JSON Schema: longest whitespace run")
    p.add_argument("--dialect", choices=("xgrammar", "llguidance"),
                   help="Lark: the dialect the files are read in (default: llguidance's for a file that starts "
                        "with %%llguidance, else xgrammar's); each engine reads its own, and an engine whose "
                        "dialect is not the case's is left out")
    add_approximate_argument(p)


def add_approximate_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--approximate", action="store_true",
                   help="JSON Schema: read the keywords xg2ref cannot enforce exactly as supersets, as xgrammar "
                        "does, instead of refusing the schema (specs/05; sets XG2REF_JSON_SCHEMA_APPROXIMATE=1 "
                        "for this process and its workers)")
    p.add_argument("--exact-formats", action="store_true",
                   help="JSON Schema: build the formats' costly exact grammars (leap seconds, IPv6 literals in "
                        "email and URI hosts, a host name's 253 characters: seconds each; specs/05; sets "
                        "XG2REF_JSON_SCHEMA_EXACT_FORMATS=1 for this process and its workers)")


def front_end_options(args) -> dict:
    """The options `add_front_end_arguments` read that were given."""
    return {k: getattr(args, k) for k in ("any_whitespace", "strict_mode", "any_order", "max_whitespace_cnt",
                                           "dialect") if getattr(args, k, None) is not None}


def cmd_explain(args) -> int:
    from .explain import explain_bytes, explain_token
    from ..grammar.grammar import Grammar
    from .user_cases import CaseError, load_user_case

    if args.kind == "auto" and not args.grammar.endswith((".json", ".lark", ".regex", ".re")):
        _, text, root = load_grammar_text(args.grammar, args.root)
        grammar = Grammar.from_ebnf(text, root_rule_name=root)
    else:  # a schema, structural tag, Lark grammar or regex: xg2ref's conversion, in its rule names
        try:
            grammar = load_user_case(args.grammar, args.kind, front_end_options(args)).grammar()
        except CaseError as err:
            raise UsageError(str(err)) from None
    prefix = input_bytes(args.prefix, args.hex)
    if args.token is not None:
        if args.vocab is None:
            raise UsageError("--token needs --vocab (a quicktok name, a tokenizer.json or a JSON list of tokens)")
        info = load_vocab(args.vocab)
        try:
            why = explain_token(grammar, info, prefix, args.token)
        except ValueError as err:
            raise UsageError(str(err)) from None
    else:
        why = explain_bytes(grammar, prefix, input_bytes(args.text, args.hex))
    print(why.text())
    return 0 if why.allowed else 1


def against_engines(spec: str, info) -> dict:
    """xg2ref's engine, then those --against names (comma-separated; "none" for none)."""
    from ..oracle.engines import XG2RefEngine

    engines = {"xg2ref": XG2RefEngine(info)}
    for name in [n.strip() for n in spec.split(",") if n.strip() and n.strip() != "none"]:
        from ..oracle.other_engines import make_engine

        engines[name] = make_engine(name, info)
    return engines


def cmd_replay(args) -> int:
    from .replay import format_replay, read_log, replay
    from .user_cases import CaseError, load_user_case

    info = load_vocab(args.vocab)
    try:
        case = load_user_case(args.grammar, args.kind, front_end_options(args))
        with open(args.tokens, encoding="utf-8") as f:
            tokens = read_log(f.read())
    except (CaseError, OSError, ValueError) as err:
        raise UsageError(str(err)) from None
    try:
        result = replay(case, info, tokens, against_engines(args.against, info), args.oracle_sample, args.seed)
    except ValueError as err:
        raise UsageError(str(err)) from None
    print(format_replay(result, info))
    return result.exit_status()


def cmd_fuzz(args) -> int:
    from .fuzz.runner import main as fuzz_main

    return fuzz_main(args)


def cmd_schema_report(args) -> int:
    """Exit 0 when xg2ref converts the schema exactly, 1 when it approximates or refuses a keyword
    (the default conversion refuses the schema then)."""
    from .schema_report import ENGINES, schema_report

    try:
        text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
        schema = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(f"{args.file} is not a JSON file: {err}") from None
    engines = [e.strip() for spec in args.engines for e in spec.split(",") if e.strip() and e.strip() != "none"]
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        raise UsageError(f"unknown engine {unknown[0]!r} (engines: {', '.join(ENGINES)}, or none)")
    options = {k: v for k, v in front_end_options(args).items() if k != "dialect"}  # (a schema: no Lark dialect)
    report = schema_report(schema, engines=engines, **options)
    if args.json:
        print(report.to_json())
    else:
        print(report.to_markdown())
        print()
        for engine, counts in report.summary().items():
            print(f"{engine}: " + ", ".join(f"{n} {kind}" for kind, n in counts.items()))
    return 0 if report.exact() else 1


def cmd_classes(args) -> int:
    from .classes import run_command

    return run_command(args, front_end_options(args))


def cmd_cases(args) -> int:
    from ..suite import load_cases

    for case in load_cases():
        origin = case.file or (f"builtin {case.builtin}" if case.builtin else case.kind)
        print(f"{case.name:<15} {origin:<16} {case.license:<32} {case.note}".rstrip())
    return 0


def cmd_diff(args) -> int:
    from .diff.runner import QUICK, DiffOptions, run_diff
    from ..oracle.engines import import_xgrammar

    engines = [n.strip() for n in args.against.split(",") if n.strip() and n.strip() != "none"]
    base = QUICK if args.quick else DiffOptions()
    overrides = {k: v for k, v in (("n_strings", args.strings), ("n_traces", args.traces),
                                   ("max_trace_tokens", args.trace_tokens),
                                   ("oracle_sample", args.oracle_sample)) if v is not None}
    options = DiffOptions(**{**base.__dict__, **overrides})
    spec = RaySpec.from_args(args)
    ray, started = cluster_start(spec) if spec else (None, False)  # one Ray for every engine's pass
    try:
        if args.files or engines not in ([], ["xgrammar"], ["pda"]):  # (other engines: the suite's cases as files)
            report = _diff_files(args, engines, options, spec or args.jobs)
        else:
            if engines == ["xgrammar"]:
                import_xgrammar()
            try:
                report = run_diff(args.cases or None, against=engines[0] if engines else None, vocab=args.vocab,
                                  seed=args.seed, options=options, progress=not args.no_progress,
                                  jobs=spec or args.jobs)
            except KeyError as err:
                raise UsageError(err.args[0]) from None
    finally:
        if started:
            ray.shutdown()
    print(report.format(strict=args.strict))
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            json.dump(report.to_json(strict=args.strict), f, indent=2)
        print(f"report written to {args.report}")
    return report.exit_status(strict=args.strict)


def _diff_files(args, engines: list, options, jobs):
    """`xg2ref diff FILE...`: the user's files against each engine (xg2ref/tools/diff/user.py)."""
    from ..suite import load_cases
    from .diff.user import run_user_diff
    from .fuzz.case import shrink_disagreements
    from .user_cases import CaseError, load_user_case

    front = front_end_options(args)
    try:
        cases = [load_user_case(f, args.kind, front) for f in args.files] if args.files else load_cases(args.cases)
    except CaseError as err:
        raise UsageError(str(err)) from None
    except XG2RefError as err:
        raise UsageError(f"{type(err).__name__}: {err}") from None
    info = load_vocab(args.vocab)
    try:
        diff = run_user_diff(cases, engines, info, args.vocab, seed=args.seed, options=options, jobs=jobs,
                             progress=not args.no_progress)
    except ValueError as err:
        if str(err).startswith("unknown engine"):  # (other_engines.make_engine: a name it does not know)
            raise UsageError(str(err)) from None
        raise
    if args.shrink_seconds > 0:
        shrink_disagreements(diff, cases, info, args.vocab, args.shrink_seconds,
                             cases_dir=args.report + ".cases" if args.report else None, progress=not args.no_progress)
    return diff


def cmd_bench(args) -> int:
    from .bench.dispatch import run_bench

    return run_bench(args)


# ---- the parser -------------------------------------------------------------------------------




def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="xg2ref", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, func) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(func=func)
        return p

    def grammar_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("grammar", metavar="GRAMMAR", help="an .ebnf/.gbnf file, a suite case name, or EBNF text")
        p.add_argument("--root", help="root rule (default: root, or the case's root)")

    p = command("check", "is STRING a sentence of GRAMMAR? exit 0 yes, 1 no", cmd_check)
    grammar_args(p)
    p.add_argument("string", metavar="STRING")
    p.add_argument("--hex", action="store_true", help="STRING is hex bytes")
    p.add_argument("--partial", action="store_true", help="exit 0 also for a viable prefix")
    p.add_argument("--captures", action="store_true", help="also print get_captures() after STRING")

    p = command("explain", "why a text or token is allowed or rejected after a prefix: exit 0 allowed, 1 not",
                cmd_explain)
    grammar_args(p)
    p.add_argument("--prefix", default="", help="the input so far (default: empty)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--text", help="the continuation asked about")
    what.add_argument("--token", type=int, help="a token id of --vocab (a stop token asks: is the prefix complete?)")
    p.add_argument("--vocab", help="a quicktok name, a tokenizer.json or a JSON list of tokens (with --token)")
    p.add_argument("--kind", default="auto",
                   help="auto (default: by the file's extension), ebnf, lark, regex, json_schema, structural_tag")
    p.add_argument("--hex", action="store_true", help="--prefix and --text are hex bytes")
    add_front_end_arguments(p)

    p = command("replay", "a generation log (token ids) checked step by step by the oracle and each engine: "
                          "exit 0 when it stays in the language and every engine agrees with the oracle",
                cmd_replay)
    p.add_argument("grammar", metavar="GRAMMAR",
                   help="an .ebnf/.gbnf/.lark/.regex/.json file (schema or structural tag), a suite case or EBNF text")
    p.add_argument("--kind", default="auto", help="auto (default), ebnf, lark, regex, json_schema, structural_tag")
    p.add_argument("--tokens", required=True, metavar="FILE", help="token ids: a JSON list or one per line")
    p.add_argument("--vocab", default="llama3", help="a quicktok name, a tokenizer.json or a JSON list of tokens")
    p.add_argument("--against", default="xgrammar",
                   help="engines beside xg2ref, comma-separated: xgrammar, llguidance, outlines, or none")
    p.add_argument("--oracle-sample", type=int, default=8, help="random ids of each side the oracle judges per step")
    p.add_argument("--seed", type=int, default=0)
    add_front_end_arguments(p)

    p = command("fuzz", "generated and mutated grammars, regexes and schemas against other engines, for a time "
                        "budget: disagreements with the oracle shrunk and classed (exit 1 when one is xg2ref's)",
                cmd_fuzz)
    from .fuzz.runner import add_arguments as fuzz_arguments

    fuzz_arguments(p)

    p = command("mask", "the tokens GRAMMAR allows after a prefix", cmd_mask)
    grammar_args(p)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--prefix", default="", help="the text read so far (default: empty)")
    group.add_argument("--prefix-hex", help="the bytes read so far, as hex")
    p.add_argument("--vocab", default="llama3", help="quicktok name, tokenizer.json, or a JSON list of tokens")
    p.add_argument("--limit", type=int, default=20, help="allowed tokens listed (default 20)")
    p.add_argument("--token", type=int, action="append", help="also print this token's verdict (repeatable)")

    p = command("classes", "token classes of GRAMMAR over a vocabulary (CFGzip's offline step), saved in a "
                           "directory", cmd_classes)
    from .classes import add_arguments as classes_arguments

    classes_arguments(p)
    add_front_end_arguments(p)

    p = command("trace", "the Earley chart byte by byte, items as dotted rules", cmd_trace)
    grammar_args(p)
    p.add_argument("string", metavar="STRING")
    p.add_argument("--hex", action="store_true", help="STRING is hex bytes")

    p = command("fsm", "the byte-level FSM of RULE (default: every rule)", cmd_fsm)
    grammar_args(p)
    p.add_argument("rule", metavar="RULE", nargs="?")

    command("cases", "list the bundled grammar suite", cmd_cases)

    p = command("schema-report", "each keyword of a JSON Schema with what xg2ref does with it (exact, approximated, "
                                 "refused, annotation, unknown), beside the other engines: exit 0 when xg2ref's "
                                 "conversion is exact, 1 when it approximates or refuses a keyword", cmd_schema_report)
    p.add_argument("file", metavar="FILE", help="a JSON Schema file; - reads standard input")
    p.add_argument("--engines", nargs="+", default=["xgrammar", "llguidance", "outlines"], metavar="E",
                   help="columns beside xg2ref: xgrammar, llguidance, outlines (default: all three), or none")
    p.add_argument("--json", action="store_true", help="the report as JSON (rows, summary, refusals)")
    add_front_end_arguments(p)

    p = command("diff", "xg2ref vs its brute-force oracle vs other engines, on your files or the bundled suite",
                cmd_diff)
    p.add_argument("files", nargs="*", metavar="FILE",
                   help=".ebnf/.gbnf/.lark/.regex/.json files (schemas, structural tags); none: the bundled suite")
    p.add_argument("--kind", default="auto", help="auto (default), ebnf, lark, regex, json_schema, structural_tag")
    p.add_argument("--against", default="xgrammar",
                   help="engines compared, comma-separated: xgrammar (default), llguidance, outlines, pda "
                        "(XGrammar-1's pushdown automaton), classes:xg2ref, classes:xgrammar (each run over "
                        "its token classes, specs/09); or none")
    add_front_end_arguments(p)
    p.add_argument("--cases", nargs="+", metavar="NAME", help="suite cases (default: all)")
    p.add_argument("--vocab", default="llama3", help="quicktok name or tokenizer.json (default llama3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="fewer strings and traces")
    p.add_argument("--strings", type=int, help="sentences drawn per case, besides the samples")
    p.add_argument("--traces", type=int, help="token traces per case")
    p.add_argument("--trace-tokens", type=int, help="tokens per trace at most")
    p.add_argument("--oracle-sample", type=int, help="random allowed and rejected ids the oracle judges per step")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    add_ray_arguments(p, "the cases")
    p.add_argument("--report", metavar="PATH", help="write a JSON report with every reproducer (with FILEs: the "
                                                    "shrunk cases go to PATH.cases/)")
    p.add_argument("--shrink-seconds", type=float, default=10.0, metavar="S",
                   help="with FILEs: time limit to shrink each disagreement (default 10; 0: no shrinking)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 also when a compared engine disagrees (with the oracle, or on the suite with xg2ref)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    p = command("bench", "benchmarks beside xgrammar 0.2.8 (correctness checked first)", cmd_bench)
    p.add_argument("what", choices=("mask", "jsonschemabench", "tagdispatch", "dynamic", "ablation", "targets",
                                    "kernels", "maskbench", "xg1-ablation", "earley-vs-pda", "formats", "schema-suite",
                                    "token-classes", "wgrammar", "concurrency", "long", "memory"),
                   help="mask: per-token mask time, compile time, cache size; jsonschemabench: compile rate and "
                        "output validity per JSONSchemaBench subset; tagdispatch: XGrammar-2 Table 2; dynamic: "
                        "Table 1 and Figure 6; ablation: Table 4; targets: the default path's time to first mask and "
                        "between masks (p50 to max, cache on and off, a simulated forward pass), compile with "
                        "every entry, and the cliffs, as ratios to xgrammar; kernels: the bitmask applied to "
                        "logits by each backend, beside xgrammar's and the bandwidth bound on a GPU; maskbench: "
                        "XGrammar-2 Fig. 11, compile time, time to first mask and between masks on a JSONSchemaBench "
                        "and json-mode-eval sample, beside xgrammar, llguidance, outlines and the pushdown "
                        "automaton, a table per subset; xg1-ablation: XGrammar's Table 3 on XGrammar-1's pushdown "
                        "automaton, with xg2ref's Earley engine and xgrammar as two more rows; earley-vs-pda: XGrammar-2 "
                        "Fig. 10, compile time and time per mask of the Earley engine against the pushdown "
                        "automaton on JSONSchemaBench; formats: XGrammar-2 Figs. 7 and 8, per-token overhead and "
                        "compile time of tool calling in the llama and harmony formats beside xgrammar, "
                        "llguidance and the pushdown automata; schema-suite: the JSON-Schema-Test-Suite (2020-12 and "
                        "draft-07) per keyword group, valid instances accepted and invalid ones refused, beside "
                        "xgrammar and llguidance, checked against xg2ref's ratchet; token-classes: CFGzip Table 1 "
                        "(classes, precompute time) and with --mask its Table 3's engine side, for JSON, C++ and XML "
                        "(--cases; --vocab takes a comma-separated list); wgrammar: WGrammar's Fig. 6 and Table 1 "
                        "components on json-mode-eval and two synthetic workloads (--requests each), templates and "
                        "the online path beside xg2ref, xgrammar, llguidance and the pushdown automaton (qwen3); "
                        "concurrency: the thread-safety contract under load (shared grammars, compiles, batches), "
                        "every mask against a serial run, beside xgrammar; long: 100,000-token generations (JSON, "
                        "a JSON Schema, GBNF and Lark lists) token by token, p50 over the first and last 10%%, "
                        "memory, rollback, beside xgrammar, with a plot of time per token against position; memory: RSS "
                        "and get_cache_size_bytes() of one kept compiler against the schemas compiled (--sample, "
                        "default 300; default compiler and --cache-limit-mb), and bytes per live matcher "
                        "(--matchers), beside xgrammar, with a plot")
    p.add_argument("--threads", type=int, default=8, help="concurrency: threads (default 8)")
    p.add_argument("--seconds", type=float, default=10.0, help="concurrency: seconds per pattern and engine "
                                                              "(default 10); long: an engine's time budget per "
                                                              "workload (default 300)")
    p.add_argument("--cache-limit-mb", type=float, default=200.0, metavar="MB",
                   help="memory: the cache_limit_bytes of the limited runs, in MB (default 200)")
    p.add_argument("--matchers", type=int, default=2000, help="memory: live matchers of one schema (default 2000)")
    p.add_argument("--mask", action="store_true", help="token-classes: also per-token time with and without classes")
    p.add_argument("--vocab", default="llama3", help="quicktok name (default llama3)")
    p.add_argument("--data", default=os.path.join("..", "shared", "data"),
                   help="folder holding json_mode_eval/ (default ../shared/data)")
    p.add_argument("--cases", nargs="+", metavar="NAME", help="workloads: json and suite case names (default: all)")
    p.add_argument("--limit", type=int, help="json-mode-eval completions used (default: all 100)")
    p.add_argument("--sample", type=_sample, metavar="N",
                   help="jsonschemabench: N seeded schemas per subset, or `all` (default: all; ablation: 3; "
                        "maskbench: 5; earley-vs-pda: 20)")
    p.add_argument("--subsets", nargs="+", metavar="NAME",
                   help="jsonschemabench, ablation, earley-vs-pda: subsets (default: all ten); maskbench: these and "
                        "json-mode-eval")
    p.add_argument("--timeout", type=float, default=60.0, metavar="S",
                   help="jsonschemabench: stop an xg2ref compile after S seconds; earley-vs-pda, maskbench: an "
                        "engine's work on a schema (default 60)")
    p.add_argument("--eager", action="store_true",
                   help="jsonschemabench: build every mask-cache entry at compile time (default: JIT, on first use)")
    p.add_argument("--jobs", type=int, default=1,
                   help="jsonschemabench, earley-vs-pda, maskbench: worker processes, each one thread (default 1)")
    add_ray_arguments(p, "jsonschemabench, earley-vs-pda, maskbench: the jobs")
    p.add_argument("--results", metavar="PATH",
                   help="jsonschemabench, earley-vs-pda, maskbench: one JSON line per schema; schemas already there "
                        "are not run again (maskbench's default: benchmarks/maskbench/records.jsonl); formats: one "
                        "per turn and engine, likewise (default benchmarks/formats/records.jsonl)")
    p.add_argument("--rerun", choices=("failures", "invalid", "both"),
                   help="jsonschemabench: run again the schemas --results records as xg2ref compile failures "
                        "or timeouts, as invalid outputs, or both (the new record replaces the old)")
    p.add_argument("--report-only", action="store_true",
                   help="jsonschemabench: run nothing, print the table of the schemas --results holds")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--requests", type=int, default=100,
                   help="dynamic, wgrammar: requests per (synthetic) workload; formats: turns per format (default 100)")
    p.add_argument("--tools", type=int, nargs="+", metavar="N",
                   help="dynamic: tools per request, one workload pair each (default 5 20 50); formats: tools per "
                        "turn, one run each (default 20)")
    p.add_argument("--slow-turns", type=int, default=5, metavar="N",
                   help="formats: turns read by the pushdown automata, which compile in seconds; wgrammar: "
                        "requests per workload the pushdown automaton reads (default 5)")
    p.add_argument("--slow-timeout", type=float, default=120.0, metavar="S",
                   help="formats: xgrammar 0.1.19's compiles past S seconds are counted, not waited for (default 120)")
    p.add_argument("--format", default="llama", help="dynamic: the model format of the tool-calling structural tag")
    p.add_argument("--plot", default=DYNAMIC_PLOT, metavar="PATH",
                   help="dynamic: where Figure 6 goes, as PNG (the numbers beside it as .json); maskbench: the "
                        "per-token CDF (default benchmarks/maskbench/cdf.png)")
    p.add_argument("--engines", nargs="+", metavar="NAME",
                   help="schema-suite: engines (default xg2ref xgrammar llguidance); wgrammar: of wgrammar, "
                        "wgrammar-online, xg2ref, xg2ref-linked, xgrammar, llguidance, pda (default all)")
    p.add_argument("--update-ratchet", action="store_true",
                   help="schema-suite: record xg2ref's right answers as the ratchet the tests hold (when none is lost)")
    p.add_argument("--table", metavar="PATH", help="schema-suite: also write the table there (Markdown)")
    add_approximate_argument(p)
    p.add_argument("--tokens", type=int, help="ablation: tokens replayed per schema (default 40); long: tokens "
                                              "per generation (default 100,000)")
    p.add_argument("--slow-texts", type=int, default=10, metavar="N",
                   help="xg1-ablation: completions for the two rows without a cache (default 10)")
    p.add_argument("--slow-steps", type=int, default=64, metavar="N",
                   help="xg1-ablation: tokens per completion for the rows without a cache (default 64)")
    return parser


def _sample(text: str):
    """`--sample`: a positive count, or `all`."""
    if text == "all":
        return text
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive count or `all`, got {text!r}")
    return n


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    flags = {APPROXIMATE_ENV: getattr(args, "approximate", False),
             EXACT_FORMATS_ENV: getattr(args, "exact_formats", False)}
    before = {name: os.environ.get(name) for name in flags}
    for name, on in flags.items():
        if on:  # (the environment reaches the worker processes too)
            os.environ[name] = "1"
    try:
        return args.func(args)
    except (XG2RefError, UsageError, EngineUnavailable, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


if __name__ == "__main__":
    sys.exit(main())
