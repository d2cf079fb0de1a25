"""vLLM v1's xgrammar structured-output backend, replayed (vllm/v1/structured_output/
backend_xgrammar.py, utils.py, and the scheduler and model-runner code that drive it).

    backend      TokenizerInfo.from_huggingface(tokenizer, vocab_size=<model rows>), or for a
                 Mistral tokenizer TokenizerInfo(vocab, BYTE_FALLBACK, vocab_size=...,
                 stop_token_ids=[eos], add_prefix_space=True); GrammarCompiler(info,
                 max_threads=8, cache_enabled=True, cache_limit_bytes=512 MiB);
                 info.serialize_json() for the regex worker
    request      compile by type (json_schema / json_object / EBNF or Lark / regex through the
                 worker: TokenizerInfo.deserialize_json, GrammarCompiler(max_threads=1),
                 compile_regex(...).serialize_json(), CompiledGrammar.deserialize_json /
                 structural tag, legacy or new), then GrammarMatcher(ctx,
                 override_stop_tokens=..., max_rollback_tokens=num_speculative_tokens)
    step         validate the draft tokens (accept each until one is rejected, roll back);
                 fill one bitmask row per position (the next token, then after each draft),
                 advancing over the drafts and rolling them back; the model runner copies the
                 rows to the logits' batch order and calls apply_token_bitmask_inplace(logits,
                 bitmask, indices=...) on CPU (float32, or bfloat16 through a float32 copy);
                 the verified tokens are accepted until the matcher terminates
    validation   Grammar.from_json_schema / from_ebnf / from_regex / from_lark /
                 from_structural_tag on each request before it is scheduled
    parallel     past 128 structured requests, the rows filled from a thread pool in batches
                 of 16 (requests sharing a schema share its CompiledGrammar)

What is left out: the multiprocess plumbing, the reasoning parser, the grammar cache of compiled
contexts across requests (xgrammar's own compiler cache is exercised).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from . import common as c
from .driver import Raised, Run, Session, mask_bits

CACHE_MB = 512
MAX_NUM_SEQS = 4


def kind_of(value: Any) -> str:
    return type(value).__name__


@dataclass
class Request:
    name: str
    kind: str  # json | json_object | grammar | regex | structural_tag
    spec: str
    text: str
    any_whitespace: bool = True
    stop_token_ids: tuple = ()  # the request's own stop tokens (override_stop_tokens); () for the tokenizer's
    tokens: list = field(default_factory=list)  # a valid output and its stop token
    session: Any = None
    pos: int = 0
    done: bool = False
    drafts: list = field(default_factory=list)


class Backend:
    """XgrammarBackend: the tokenizer info, the compiler, and one matcher per request."""

    def __init__(self, run: Run, tokenizer: Any, vocab_size: int, num_spec: int = 0, mistral: bool = False):
        xgr = self.xgr = run.xgr
        self.run, self.tokenizer, self.num_spec = run, tokenizer, num_spec
        if mistral:  # vLLM builds the info itself: `tokenizer.vocab`, a list, and the eos token as the stop
            vocab = [piece for piece, _ in sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])]
            self.vocab_size = len(vocab)
            self.info = run.call("TokenizerInfo(vocab, BYTE_FALLBACK, vocab_size, stop_token_ids, add_prefix_space)",
                                 xgr.TokenizerInfo, encoded_vocab=vocab, vocab_type=xgr.VocabType.BYTE_FALLBACK,
                                 vocab_size=self.vocab_size, stop_token_ids=[tokenizer.eos_token_id],
                                 add_prefix_space=True)
        else:
            self.vocab_size = vocab_size
            self.info = run.call("TokenizerInfo.from_huggingface(tokenizer, vocab_size)",
                                 xgr.TokenizerInfo.from_huggingface, tokenizer, vocab_size=vocab_size)
        self.compiler = run.call("GrammarCompiler(info, max_threads=8, cache_enabled=True, cache_limit_bytes)",
                                 xgr.GrammarCompiler, self.info, max_threads=8, cache_enabled=True,
                                 cache_limit_bytes=CACHE_MB * 1024 * 1024)
        self.info_json = run.call_as("info.serialize_json()", kind_of, self.info.serialize_json)

    def one_row(self) -> Any:
        return self.xgr.allocate_token_bitmask(1, self.vocab_size)

    def compile(self, req: Request) -> Any:
        run, xgr, compiler = self.run, self.xgr, self.compiler
        label = f"{req.name}: "
        if req.kind == "json":
            return run.call(label + f"compile_json_schema(any_whitespace={req.any_whitespace})",
                            compiler.compile_json_schema, req.spec, any_whitespace=req.any_whitespace)
        if req.kind == "json_object":
            return run.call(label + "compile_json_schema('{\"type\": \"object\"}')", compiler.compile_json_schema,
                            '{"type": "object"}', any_whitespace=req.any_whitespace)
        if req.kind == "grammar":
            if c.looks_like_lark(req.spec):
                return run.call(label + "compile_lark", compiler.compile_lark, req.spec)
            return run.call(label + "compile_grammar", compiler.compile_grammar, req.spec)
        if req.kind == "regex":  # the worker process: a compiler of its own, the result as JSON
            info = run.call(label + "TokenizerInfo.deserialize_json", xgr.TokenizerInfo.deserialize_json,
                            self.info_json)
            worker = run.call(label + "GrammarCompiler(info, max_threads=1)", xgr.GrammarCompiler, info,
                              max_threads=1)
            serialized = run.call_as(label + "compile_regex(...).serialize_json()", kind_of,
                                     lambda: worker.compile_regex(req.spec).serialize_json())
            return run.call(label + "CompiledGrammar.deserialize_json", xgr.CompiledGrammar.deserialize_json,
                            serialized, self.info)
        if req.kind == "structural_tag":
            tag = json.loads(req.spec)
            if "structures" in tag:  # the deprecated (tags, triggers) form
                items = [xgr.StructuralTagItem(begin=s["begin"], schema=json.dumps(s["schema"]), end=s["end"])
                         for s in tag["structures"]]
                return run.call(label + "compile_structural_tag(tags, triggers)", compiler.compile_structural_tag,
                                items, tag["triggers"])
            return run.call(label + "compile_structural_tag(json)", compiler.compile_structural_tag, req.spec)
        raise ValueError(req.kind)

    def start(self, req: Request) -> None:
        ctx = self.compile(req)
        stop = list(req.stop_token_ids) or None
        matcher = self.run.call(f"{req.name}: GrammarMatcher(ctx, override_stop_tokens, max_rollback_tokens)",
                                self.xgr.GrammarMatcher, ctx, override_stop_tokens=stop,
                                max_rollback_tokens=self.num_spec)
        if matcher is None:
            raise RuntimeError(f"{req.name}: no matcher")
        stops = tuple(req.stop_token_ids) or (self.tokenizer.eos_token_id,)
        req.session = Session(self.run, req.name, matcher, self.vocab_size, stops)
        if not req.tokens:
            req.tokens = c.encode(self.tokenizer, req.text, eos=False) + [stops[-1]]


def validate_tokens(run: Run, req: Request, drafts: list) -> list:
    """The scheduler's check of draft tokens: the accepted prefix; the matcher is left unmoved."""
    if req.session.matcher.is_terminated():
        return []
    accepted = []
    for token in drafts:
        if not req.session.accept(token):
            break
        accepted.append(token)
        if req.session.is_terminated():
            break
    if accepted:
        req.session.rollback(len(accepted))
    run.record(f"{req.name}: validate_tokens({drafts}) accepted", len(accepted))
    return accepted


def propose(req: Request, step: int, k: int, bad_token: int) -> list:
    """A drafter's guess: the true continuation, its last token spoiled on every third step."""
    drafts = req.tokens[req.pos:req.pos + k]
    if drafts and step % 3 == 1 and drafts[-1] != bad_token:
        drafts = drafts[:-1] + [bad_token]
    return drafts


def serve(run: Run, backend: Backend, requests: list, bad_token: int, plain_request: bool = True,
          max_steps: int = 60) -> None:
    """Decode steps until every request has ended (see the module docstring)."""
    xgr, k, vocab_size = run.xgr, backend.num_spec, backend.vocab_size
    for req in requests:
        backend.start(req)
    bitmask = run.call_as("allocate_token_bitmask(max_num_seqs * (1 + k), vocab_size)", lambda b: tuple(b.shape),
                          xgr.allocate_token_bitmask, MAX_NUM_SEQS * (1 + k), vocab_size)
    gen = torch.Generator().manual_seed(0)
    for step in range(max_steps):
        live = [r for r in requests if not r.done]
        if not live:
            return
        rows = []  # (request, bitmask row)
        row = 0
        for req in live:
            req.drafts = validate_tokens(run, req, propose(req, step, k, bad_token)) if k else []
            advanced = 0
            for token in req.drafts + [None]:
                if req.session.matcher.is_terminated():
                    bitmask[row].fill_(-1)
                else:
                    req.session.fill(bitmask, row)
                rows.append((req, row))
                row += 1
                if token is not None and not req.session.matcher.is_terminated():
                    run.expect(req.session.accept(token), f"{req.name}: a validated draft {token} was rejected")
                    advanced += 1
            if advanced:
                req.session.rollback(advanced)
        apply_to_logits(run, bitmask, rows, vocab_size, gen, bfloat16=step % 2 == 1, plain_request=plain_request)
        for req in live:
            accept_verified(run, req)
    run.expect(False, f"requests still running after {max_steps} steps")


def apply_to_logits(run: Run, bitmask: Any, rows: list, vocab_size: int, gen: Any, bfloat16: bool,
                    plain_request: bool) -> None:
    """The model runner: a request without structured output first (its row stays -1), the
    structured rows copied to their logits rows, apply_token_bitmask_inplace with `indices`."""
    first = 1 if plain_request else 0
    n = first + len(rows)
    ordered = torch.full((n, bitmask.shape[1]), -1, dtype=torch.int32)
    out_indices = []
    for k, (_, row) in enumerate(rows):
        ordered[first + k] = bitmask[row]
        out_indices.append(first + k)
    indices = None if len(out_indices) == n else out_indices
    logits = torch.randn(n, vocab_size, generator=gen)
    label = f"apply_token_bitmask_inplace({'bfloat16 via float32' if bfloat16 else 'float32'}, indices={indices})"
    if bfloat16:
        half = logits.to(torch.bfloat16)
        full = half.to(torch.float32)
        run.call(label, run.xgr.apply_token_bitmask_inplace, full, ordered, indices=indices)
        half.copy_(full.to(torch.bfloat16))
        logits = half
    else:
        run.call(label, run.xgr.apply_token_bitmask_inplace, logits, ordered, indices=indices)
    finite = run.logits("logits still finite", logits)
    if plain_request:
        run.expect(len(finite[0].allowed) == vocab_size, "the row without structured output was masked")
    for k, (req, row) in enumerate(rows):
        want = tuple(int(i) for i in np.flatnonzero(mask_bits(bitmask, row, vocab_size)))
        run.expect(finite[first + k].allowed == want, f"{req.name}: logits row {first + k} is not masked by its "
                   "bitmask row")


def accept_verified(run: Run, req: Request) -> None:
    """The drafts the target model confirmed and its own next token, accepted until the end."""
    confirmed = 0
    while confirmed < len(req.drafts) and req.drafts[confirmed] == req.tokens[req.pos + confirmed]:
        confirmed += 1
    new = req.tokens[req.pos:req.pos + confirmed + 1]
    for token in new:
        if req.session.matcher.is_terminated():
            break
        run.expect(req.session.accept(token), f"{req.name}: the sampled token {token} was rejected")
    req.pos += len(new)
    if req.session.is_terminated() or req.pos >= len(req.tokens):
        req.done = True
        run.expect(req.session.is_terminated(), f"{req.name}: output ended but the matcher did not terminate")


def after_the_end(run: Run, req: Request, bitmask: Any) -> None:
    """Roll the stop token back (the matcher runs again and offers the stop token), then reset."""
    req.session.rollback(1)
    run.expect(not req.session.is_terminated(), f"{req.name}: still terminated after rolling the stop token back")
    bits = req.session.fill(bitmask, 0)
    run.expect(bool(bits[req.tokens[-1]]), f"{req.name}: the stop token is not offered again after the rollback")
    req.session.reset()
    req.session.fill(bitmask, 0)


# ---- scenarios -----------------------------------------------------------------------------------

def tokenizer_info(run: Run, env: Any) -> None:
    """The backend's TokenizerInfo, both ways of building it, and its JSON round trip (the regex
    worker rebuilds it from `serialize_json`)."""
    xgr = run.xgr
    for name, mistral, tok in (("hf", False, env.byte_level), ("mistral", True, env.byte_fallback)):
        backend = Backend(run, tok, env.vocab_size, mistral=mistral)
        c.record_info(run, name, backend.info)
        again = run.call(f"{name}: TokenizerInfo.deserialize_json", xgr.TokenizerInfo.deserialize_json,
                         backend.info_json)
        c.record_info(run, f"{name} (round trip)", again)
        for prop in ("vocab_type", "vocab_size", "add_prefix_space", "stop_token_ids", "special_token_ids",
                     "decoded_vocab"):
            run.expect(again is not None and getattr(again, prop) == getattr(backend.info, prop),
                       f"{name}: {prop} changed in the JSON round trip")
    hf = xgr.TokenizerInfo.from_huggingface(env.byte_level, vocab_size=env.vocab_size)
    run.expect(hf.vocab_type == xgr.VocabType.BYTE_LEVEL, "a byte-level BPE is not BYTE_LEVEL")
    run.expect(list(hf.stop_token_ids) == [env.byte_level.eos_token_id], "the stop token is not the eos token")
    pad = set(range(len(env.byte_level.get_vocab()), env.vocab_size))
    run.expect(pad <= set(hf.special_token_ids), "the padding ids past the tokenizer are not special")
    space = env.byte_level.convert_tokens_to_ids("Ġ")
    run.expect(bytes(hf.decoded_vocab[space]) == b" ", "Ġ does not decode to a space")
    mistral = Backend(run, env.byte_fallback, 0, mistral=True).info
    byte_a = env.byte_fallback.convert_tokens_to_ids("<0x41>")
    run.expect(bytes(mistral.decoded_vocab[byte_a]) == b"A", "<0x41> does not decode to b'A'")
    run.expect(mistral.add_prefix_space is True, "add_prefix_space was not kept")


def validation(run: Run, env: Any) -> None:
    """validate_xgrammar_grammar: each request type parsed before it is scheduled; a bad one
    must raise (vLLM turns any exception into a 400 answer; SGLang catches RuntimeError)."""
    xgr = run.xgr

    def must_raise(label: str, fn: Any, *args: Any) -> None:
        out = run.call(label, fn, *args)
        raised = run.steps[-1][1]
        run.expect(out is None and isinstance(raised, Raised) and "RuntimeError" in raised.mro,
                   f"{label}: should raise a RuntimeError")

    def must_parse(label: str, fn: Any, *args: Any) -> None:
        run.expect(type(run.call(label, fn, *args)).__name__ == "Grammar", f"{label}: no Grammar")

    must_parse("Grammar.from_json_schema(person)", xgr.Grammar.from_json_schema, c.PERSON)
    must_parse("Grammar.from_json_schema(json text)", xgr.Grammar.from_json_schema, json.dumps(c.WEATHER))
    must_raise("Grammar.from_json_schema(bad type)", xgr.Grammar.from_json_schema, '{"type": "objectx"}')
    must_raise("Grammar.from_json_schema(not json)", xgr.Grammar.from_json_schema, '{"type": ')
    must_parse("Grammar.from_ebnf(choice)", xgr.Grammar.from_ebnf, c.choice_as_grammar(c.CHOICES))
    must_parse("Grammar.from_ebnf(control characters)", xgr.Grammar.from_ebnf, c.choice_as_grammar(["a\x01b", "\x7f"]))
    must_raise("Grammar.from_ebnf(unfinished)", xgr.Grammar.from_ebnf, 'root ::= "a" |')
    run.call_as("Grammar.from_regex(phone).serialize_json()", kind_of,
                lambda: xgr.Grammar.from_regex(c.PHONE).serialize_json())
    must_raise("Grammar.from_regex(unclosed)", xgr.Grammar.from_regex, "(ab")
    run.expect(c.looks_like_lark(c.SQL_LARK) and not c.looks_like_lark(c.SQL_EBNF), "Lark detection")
    must_parse("Grammar.from_lark(sql)", xgr.Grammar.from_lark, c.SQL_LARK)
    must_raise("Grammar.from_lark(undefined rule)", xgr.Grammar.from_lark, "start: foo")
    items = [xgr.StructuralTagItem(begin=s["begin"], schema=json.dumps(s["schema"]), end=s["end"])
             for s in c.LEGACY_TAGS["structures"]]
    must_parse("Grammar.from_structural_tag(tags, triggers)", xgr.Grammar.from_structural_tag, items,
               c.LEGACY_TAGS["triggers"])
    must_parse("Grammar.from_structural_tag(json)", xgr.Grammar.from_structural_tag, json.dumps(c.TRIGGERED_TAG))
    must_raise("Grammar.from_structural_tag(unknown format)", xgr.Grammar.from_structural_tag,
               '{"type": "structural_tag", "format": {"type": "nope"}}')


def json_requests(run: Run, env: Any) -> None:
    """A JSON-schema request (compact, with two draft tokens a step) and a json_object request
    (any whitespace) next to a request without structured output."""
    backend = Backend(run, env.byte_level, env.vocab_size, num_spec=2)
    person = Request("person", "json", json.dumps(c.PERSON), c.PERSON_OUT, any_whitespace=False)
    anything = Request("object", "json_object", "", c.ANY_OBJECT_OUT, any_whitespace=True)
    serve(run, backend, [person, anything], env.bad_token)
    first = person.session.history[0]
    c.expect_mask(run, first, c.prefix_oracle(env.texts, env.vocab_size, '{"name": "'.startswith),
                  "person: the first mask", env.texts)
    after_the_end(run, person, backend.one_row())
    repeat = Request("person-again", "json", json.dumps(c.PERSON), c.PERSON_OUT, any_whitespace=False)
    backend.start(repeat)  # the compiler's cache answers
    bits = repeat.session.fill(backend.one_row(), 0)
    run.expect((bits == first).all(), "a schema compiled again (from the cache) masks differently")


def regex_and_choice(run: Run, env: Any) -> None:
    """Regex requests through the worker path and a choice request with its own stop tokens;
    every logits row is structured (apply without `indices`)."""
    backend = Backend(run, env.byte_level, env.vocab_size, num_spec=3)
    phone = Request("phone", "regex", c.PHONE, c.PHONE_OUT)
    date = Request("date", "regex", c.DATE, c.DATE_OUT)
    im_end = env.byte_level.convert_tokens_to_ids("<|im_end|>")
    stops = (env.byte_level.eos_token_id, im_end)
    choice = Request("choice", "grammar", c.choice_as_grammar(c.CHOICES), "maybe", stop_token_ids=stops)
    serve(run, backend, [phone, date, choice], env.bad_token, plain_request=False)
    c.expect_mask(run, phone.session.history[0],
                  c.prefix_oracle(env.texts, env.vocab_size, lambda t: re.fullmatch(r"\d{1,3}(-\d{0,4})?", t)),
                  "phone: the first mask", env.texts)
    c.expect_mask(run, choice.session.history[0],
                  c.prefix_oracle(env.texts, env.vocab_size, lambda t: any(s.startswith(t) for s in c.CHOICES)),
                  "choice: the first mask", env.texts)
    end = choice.session.history[len(choice.tokens) - 1]
    run.expect(set(np.flatnonzero(end).tolist()) == set(stops), "choice: after 'maybe' only its stop tokens")


def grammar_requests(run: Run, env: Any) -> None:
    """EBNF and Lark grammar requests (Lark recognised the way vLLM does, compiled with
    compile_lark), one draft token a step."""
    backend = Backend(run, env.byte_level, env.vocab_size, num_spec=1)
    sql = Request("sql-ebnf", "grammar", c.SQL_EBNF, c.SQL_OUT)
    lark = Request("sql-lark", "grammar", c.SQL_LARK, c.SQL_OUT)
    pairs = Request("pairs-lark", "grammar", c.PAIRS_LARK, c.PAIRS_OUT)
    serve(run, backend, [sql, lark, pairs], env.bad_token)
    want = c.prefix_oracle(env.texts, env.vocab_size, "SELECT ".startswith)
    for req in (sql, lark):
        c.expect_mask(run, req.session.history[0], want, f"{req.name}: the first mask", env.texts)
    for k in range(len(sql.tokens)):
        run.expect(np.array_equal(sql.session.history[k], lark.session.history[k]),
                   f"the EBNF and Lark SQL grammars differ at position {k}")


def structural_tags(run: Run, env: Any) -> None:
    """Structural tags: the legacy structures+triggers form (StructuralTagItem), a
    triggered_tags format and a sequence format as JSON text."""
    backend = Backend(run, env.byte_level, env.vocab_size, num_spec=2)
    legacy = Request("legacy-tags", "structural_tag", json.dumps(c.LEGACY_TAGS), c.LEGACY_OUT)
    triggered = Request("triggered-tags", "structural_tag", json.dumps(c.TRIGGERED_TAG), c.TRIGGERED_OUT)
    sequence = Request("sequence", "structural_tag", json.dumps(c.SEQUENCE_TAG), c.SEQUENCE_OUT)
    serve(run, backend, [legacy, triggered, sequence], env.bad_token)
    c.expect_mask(run, sequence.session.history[0], c.prefix_oracle(env.texts, env.vocab_size, "Answer: ".startswith),
                  "sequence: the first mask", env.texts)
    free = legacy.session.history[0]
    run.expect(free.sum() > len(env.byte_level.get_vocab()) // 2, "legacy tags: free text is not free before a trigger")


# vLLM v1 fills the bitmask from a thread pool once a batch holds more structured requests than
# this, a task per batch of rows; the compiled grammars come from the compiler's cache, so
# requests with one schema share one CompiledGrammar
PARALLEL_THRESHOLD = 128
PARALLEL_BATCH = 16
PARALLEL_WORKERS = 4


def parallel_fill(run: Run, env: Any) -> None:
    """vLLM v1's parallel fill: 136 structured requests (three JSON schemas and json_object, each
    shared by 34 requests: one CompiledGrammar each, from the compiler's cache), every step's rows
    filled from a thread pool in batches of 16, then recorded in row order and checked against a
    fill of the same matcher alone; then each request's next token is accepted."""
    from concurrent.futures import ThreadPoolExecutor

    backend = Backend(run, env.byte_level, env.vocab_size)
    kinds = [("person", "json", json.dumps(c.PERSON), c.PERSON_OUT),
             ("weather", "json", json.dumps(c.WEATHER), c.WEATHER_ARGS),
             ("search", "json", json.dumps(c.SEARCH), '{"query": "xg2ref", "limit": 3}'),
             ("object", "json_object", "", c.ANY_OBJECT_OUT)]
    requests = [Request(f"{name}-{k}", kind, spec, text, any_whitespace=False)
                for k in range(34) for name, kind, spec, text in kinds]
    run.expect(len(requests) > PARALLEL_THRESHOLD, "the batch is not past vLLM's parallel threshold")
    for req in requests:
        backend.start(req)
    alone = backend.one_row()
    with ThreadPoolExecutor(PARALLEL_WORKERS) as pool:
        for step in range(60):
            live = [r for r in requests if not r.done]
            if not live:
                return
            bitmask = run.xgr.allocate_token_bitmask(len(live), backend.vocab_size)

            def fill(batch: list) -> None:
                for row, req in batch:
                    req.session.matcher.fill_next_token_bitmask(bitmask, row)

            rows = list(enumerate(live))
            list(pool.map(fill, [rows[i:i + PARALLEL_BATCH] for i in range(0, len(rows), PARALLEL_BATCH)]))
            for row, req in rows:
                bits = run.mask(f"{req.name}.parallel mask@{req.session.pos}", bitmask, row, backend.vocab_size)
                run.expect(np.array_equal(bits, req.session.fill(alone, 0)),
                           f"{req.name}: the row filled in the pool differs from a fill alone (step {step})")
            for req in live:
                run.expect(req.session.accept(req.tokens[req.pos]), f"{req.name}: token {req.pos} was rejected")
                req.pos += 1
                if req.session.is_terminated() or req.pos >= len(req.tokens):
                    req.done = True
                    run.expect(req.session.is_terminated(), f"{req.name}: output ended but the matcher did not "
                               "terminate")
    run.expect(False, "requests still running after 60 steps")


SCENARIOS = {
    "vllm_v1/parallel_fill": parallel_fill,
    "vllm_v1/tokenizer_info": tokenizer_info,
    "vllm_v1/validation": validation,
    "vllm_v1/json_requests": json_requests,
    "vllm_v1/regex_and_choice": regex_and_choice,
    "vllm_v1/grammar_requests": grammar_requests,
    "vllm_v1/structural_tags": structural_tags,
}
