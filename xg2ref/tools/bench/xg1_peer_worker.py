"""The real XGrammar-1 (xgrammar 0.1.19, a pushdown automaton) as a peer of the benches, run in its
own environment (`make peers`: benchmarks/peers/.venv-xg1) and spoken to in JSON lines on
stdin/stdout by xg2ref/tools/bench/xg1_peer.py. This file imports nothing of xg2ref: it runs
where only xgrammar 0.1.19 and its dependencies are installed.

    {"op": "init", "vocab": [hex, ...], "stop_ids": [...], "vocab_size": n}   -> {"ok": true, "version": ...}
    {"op": "compile", "kind": "ebnf" | "json_schema" | "builtin_json" | "structural_tag", "text": ...}
                                        -> {"ms": ...}   (structural_tag: JSON of {"tags": [[begin, schema, end]],
                                        "triggers": [...]}, the legacy compile_structural_tag)
    {"op": "masks", "tokens": [...]}    a mask before each token and after the last, one matcher of the
                                        last grammar: -> {"us": [...], "masks": [hex of int32 words], "accepted": k}
    {"op": "steps", "tokens": [...]}    as "masks", with the matcher's construction timed ("matcher_ms") and
                                        each accept_token ("accept_us"): per token, accept then fill
"""

import json
import sys
import time


def main() -> None:
    import numpy as np
    import xgrammar as xgr

    info = compiler = compiled = None
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req["op"] == "init":
                vocab = [bytes.fromhex(t) for t in req["vocab"]]
                info = xgr.TokenizerInfo(vocab, vocab_type=xgr.VocabType.RAW, vocab_size=req["vocab_size"],
                                         stop_token_ids=req["stop_ids"])
                compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
                from importlib.metadata import version

                reply = {"ok": True, "version": version("xgrammar")}
            elif req["op"] == "compile":
                start = time.perf_counter()
                if req["kind"] == "builtin_json":
                    compiled = compiler.compile_builtin_json_grammar()
                elif req["kind"] == "json_schema":
                    compiled = compiler.compile_json_schema(req["text"])
                elif req["kind"] == "structural_tag":
                    spec = json.loads(req["text"])
                    tags = [xgr.StructuralTagItem(begin=b, schema=schema, end=e) for b, schema, e in spec["tags"]]
                    compiled = compiler.compile_structural_tag(tags, spec["triggers"])
                else:
                    compiled = compiler.compile_grammar(req["text"])
                reply = {"ms": (time.perf_counter() - start) * 1e3}
            elif req["op"] == "steps":
                t0 = time.perf_counter()
                matcher = xgr.GrammarMatcher(compiled)
                bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
                matcher_ms = (time.perf_counter() - t0) * 1e3
                t0 = time.perf_counter()
                matcher.fill_next_token_bitmask(bitmask)
                us, accept_us = [(time.perf_counter() - t0) * 1e6], []
                masks, accepted = [np.ascontiguousarray(bitmask.numpy()[0]).tobytes().hex()], 0
                for token in req["tokens"]:
                    t0 = time.perf_counter()
                    ok = matcher.accept_token(token)
                    accept_us.append((time.perf_counter() - t0) * 1e6)
                    if not ok:
                        break
                    accepted += 1
                    t0 = time.perf_counter()
                    matcher.fill_next_token_bitmask(bitmask)
                    us.append((time.perf_counter() - t0) * 1e6)
                    masks.append(np.ascontiguousarray(bitmask.numpy()[0]).tobytes().hex())
                reply = {"us": us, "accept_us": accept_us, "masks": masks, "accepted": accepted,
                         "matcher_ms": matcher_ms}
            else:
                matcher = xgr.GrammarMatcher(compiled)
                bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
                us, masks, accepted = [], [], 0
                tokens = req["tokens"]
                for k in range(len(tokens) + 1):
                    t0 = time.perf_counter()
                    matcher.fill_next_token_bitmask(bitmask)
                    us.append((time.perf_counter() - t0) * 1e6)
                    masks.append(np.ascontiguousarray(bitmask.numpy()[0]).tobytes().hex())
                    if k == len(tokens) or not matcher.accept_token(tokens[k]):
                        break
                    accepted += 1
                reply = {"us": us, "masks": masks, "accepted": accepted}
        except Exception as err:  # the client raises it
            reply = {"error": f"{type(err).__name__}: {err}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
