"""SGLang's xgrammar grammar backend, replayed (python/sglang/srt/constrained/
xgrammar_backend.py).

    imports      from xgrammar import CompiledGrammar, GrammarCompiler, GrammarMatcher,
                 StructuralTag, StructuralTagItem, TokenizerInfo, bitmask_dtype,
                 get_bitmask_shape, apply_token_bitmask_inplace
    backend      TokenizerInfo.from_huggingface(tokenizer, vocab_size=..., stop_token_ids=
                 [model eos ids]); GrammarCompiler(tokenizer_info=info)
    dispatch     "$$ANY$$" -> compile_builtin_json_grammar; json -> compile_json_schema(
                 schema=..., any_whitespace=...); ebnf -> compile_grammar; regex ->
                 compile_regex; structural tag: legacy structures -> StructuralTag.
                 from_legacy_structural_tag(items, triggers), format.at_least_one set, then
                 compile_structural_tag(tag); otherwise compile_structural_tag(json text).
                 A RuntimeError marks the request invalid (any other exception escapes)
    grammar      GrammarMatcher(ctx, max_rollback_tokens=200, override_stop_tokens=...);
                 copy() makes a fresh matcher on the same context (a cache hit); accept_token
                 raises ValueError when the matcher refuses; rollback(k); is_terminated()
    masks        torch.full(get_bitmask_shape(batch, vocab), -1, dtype=bitmask_dtype), one
                 row per request (fill_next_token_bitmask(mask, idx)), applied to CPU logits
                 with apply_token_bitmask_inplace(logits, mask) (backend="cpu" on the MLX path)
    jump forward find_jump_forward_string(); the scheduler decodes the output, appends the
                 string, re-encodes, and jump_and_retokenize rolls back to the common prefix
                 of old and new ids and accepts the new ones
"""

from __future__ import annotations

import json
from typing import Any

import torch

from . import common as c
from .driver import Raised, Run, Session

MAX_ROLLBACK_TOKENS = 200


class Invalid:
    """InvalidGrammarObject: the request is answered with an error."""

    def __init__(self, message: str):
        self.message = message


class Backend:
    def __init__(self, run: Run, tokenizer: Any, vocab_size: int, any_whitespace: bool = True):
        xgr = self.xgr = run.xgr
        self.run, self.tokenizer, self.vocab_size, self.any_whitespace = run, tokenizer, vocab_size, any_whitespace
        names = ("CompiledGrammar", "GrammarCompiler", "GrammarMatcher", "StructuralTag", "StructuralTagItem",
                 "TokenizerInfo", "bitmask_dtype", "get_bitmask_shape", "apply_token_bitmask_inplace")
        run.record("from xgrammar import ...: missing", tuple(n for n in names if not hasattr(xgr, n)))
        info = run.call("TokenizerInfo.from_huggingface(tokenizer, vocab_size, stop_token_ids)",
                        xgr.TokenizerInfo.from_huggingface, tokenizer, vocab_size=vocab_size,
                        stop_token_ids=[tokenizer.eos_token_id])
        self.compiler = run.call("GrammarCompiler(tokenizer_info=info)", xgr.GrammarCompiler, tokenizer_info=info)
        self.override_stop_tokens = None

    def _compile(self, key: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """A compile call as the dispatcher makes it: a RuntimeError makes the request invalid."""
        try:
            ctx = fn(*args, **kwargs)
        except RuntimeError as exc:
            self.run.record(f"{key}: invalid", Raised.of(exc))
            return Invalid(str(exc))
        self.run.record(f"{key}: compiled", ctx)
        return ctx

    def dispatch(self, key_type: str, key: str) -> Any:
        compiler = self.compiler
        if key_type == "json":
            if key == "$$ANY$$":
                ctx = self._compile("json $$ANY$$", compiler.compile_builtin_json_grammar)
            else:
                ctx = self._compile(f"json {key[:40]}", compiler.compile_json_schema, schema=key,
                                    any_whitespace=self.any_whitespace)
        elif key_type == "ebnf":
            ctx = self._compile(f"ebnf {key[:40]}", compiler.compile_grammar, key)
        elif key_type == "regex":
            ctx = self._compile(f"regex {key[:40]}", compiler.compile_regex, key)
        else:
            ctx = self._structural_tag(key)
        return ctx if isinstance(ctx, Invalid) else Grammar(self, ctx)

    def _structural_tag(self, key: str) -> Any:
        """Legacy structures+triggers go through StructuralTag.from_legacy_structural_tag; an
        exception other than RuntimeError (or bad JSON) escapes, as in SGLang."""
        xgr, tag = self.xgr, json.loads(key)
        try:
            if "structures" in tag and "triggers" in tag:
                items = [xgr.StructuralTagItem(begin=s["begin"], schema=json.dumps(s.get("schema") or {}),
                                               end=s["end"]) for s in tag["structures"]]
                new_tag = xgr.StructuralTag.from_legacy_structural_tag(items, tag["triggers"])
                new_tag.format.at_least_one = tag.get("at_least_one", False)
                ctx = self.compiler.compile_structural_tag(new_tag)
            else:
                ctx = self.compiler.compile_structural_tag(key)
        except (RuntimeError, json.JSONDecodeError) as exc:
            self.run.record("structural tag: invalid", Raised.of(exc))
            return Invalid(str(exc))
        self.run.record("structural tag: compiled", ctx)
        return ctx


class Grammar:
    """XGrammarGrammar: a matcher, its context, the tokens accepted so far."""

    def __init__(self, backend: Backend, ctx: Any, name: str = "grammar"):
        self.backend, self.ctx, self.name = backend, ctx, name
        run = backend.run
        matcher = run.call(f"{name}: GrammarMatcher(ctx, max_rollback_tokens=200, override_stop_tokens)",
                           backend.xgr.GrammarMatcher, ctx, max_rollback_tokens=MAX_ROLLBACK_TOKENS,
                           override_stop_tokens=backend.override_stop_tokens)
        stops = tuple(backend.override_stop_tokens or (backend.tokenizer.eos_token_id,))
        self.session = Session(run, name, matcher, backend.vocab_size, stops)
        self.accepted: list = []

    def copy(self, name: str) -> "Grammar":
        return Grammar(self.backend, self.ctx, name)

    def accept_token(self, token: int) -> None:
        if not self.session.matcher.is_terminated():
            if not self.session.accept(token):
                raise ValueError(f"Tokens not accepted: {token}")
            self.accepted.append(token)

    def rollback(self, k: int) -> None:
        self.session.rollback(k)
        self.accepted = self.accepted[:-k]

    def try_jump_forward(self) -> Any:
        s = self.session.jump_forward()
        return ([], s) if s else None

    def jump_and_retokenize(self, old_ids: list, new_ids: list) -> None:
        k = 0
        for i, old in enumerate(old_ids):
            if i < len(new_ids) and old == new_ids[i]:
                k = i + 1
            else:
                break
        if k < len(old_ids):
            self.rollback(len(old_ids) - k)
        for token in new_ids[k:]:
            self.accept_token(token)


def allocate(run: Run, batch: int, vocab_size: int) -> torch.Tensor:
    xgr = run.xgr
    shape = run.call("get_bitmask_shape(batch, vocab)", xgr.get_bitmask_shape, batch, vocab_size)
    run.record("bitmask_dtype", str(xgr.bitmask_dtype))
    return torch.full(shape, -1, dtype=xgr.bitmask_dtype)


def decode_batch(run: Run, grammars: list, outputs: list, vocab_size: int, cpu_backend: bool) -> None:
    """Decode steps: fill every live row, apply to random logits, accept each request's next
    token of its output (teacher forcing)."""
    mask = allocate(run, len(grammars), vocab_size)
    gen = torch.Generator().manual_seed(1)
    positions = [0] * len(grammars)
    for _ in range(max(map(len, outputs)) + 1):
        live = [i for i, g in enumerate(grammars) if not g.session.matcher.is_terminated()]
        if not live:
            return
        for i in live:
            grammars[i].session.fill(mask, i)
        logits = torch.randn(len(grammars), vocab_size, generator=gen)
        kwargs = {"backend": "cpu"} if cpu_backend else {}
        run.call(f"apply_token_bitmask_inplace(logits, mask{', backend=cpu' if cpu_backend else ''})",
                 run.xgr.apply_token_bitmask_inplace, logits, mask, **kwargs)
        run.logits("logits still finite", logits)
        for i in live:
            if positions[i] < len(outputs[i]):
                grammars[i].accept_token(outputs[i][positions[i]])
                positions[i] += 1
    for g in grammars:
        run.expect(g.session.is_terminated(), f"{g.name}: not terminated after its output")


# ---- scenarios -----------------------------------------------------------------------------------

def dispatch_and_decode(run: Run, env: Any) -> None:
    """Every dispatch type, invalid requests included, then a batch decoded with teacher forcing
    (copies of a grammar share its context, as on a cache hit)."""
    tok = env.byte_level
    backend = Backend(run, tok, env.vocab_size, any_whitespace=False)
    anything = backend.dispatch("json", "$$ANY$$")
    person = backend.dispatch("json", json.dumps(c.PERSON))
    sql = backend.dispatch("ebnf", c.SQL_EBNF)
    phone = backend.dispatch("regex", c.PHONE)
    triggered = backend.dispatch("structural_tag", json.dumps(c.TRIGGERED_TAG))
    for key_type, key in (("json", '{"type": "objectx"}'), ("ebnf", 'root ::= "a" |'), ("regex", "(ab"),
                          ("structural_tag", '{"type": "structural_tag", "format": {"type": "nope"}}')):
        run.expect(isinstance(backend.dispatch(key_type, key), Invalid), f"{key_type} {key!r} was not made invalid")
    grammars = [anything, person, sql, phone, triggered]
    for g, name in zip(grammars, ("any", "person", "sql", "phone", "triggered")):
        run.expect(isinstance(g, Grammar), f"{name}: no grammar")
        g.name = g.session.name = name
    twin = person.copy("person-copy")
    texts = [c.ANY_OBJECT_OUT, c.PERSON_OUT, c.SQL_OUT, c.PHONE_OUT, c.TRIGGERED_OUT, c.PERSON_OUT]
    decode_batch(run, grammars + [twin], [c.encode(tok, t) for t in texts], env.vocab_size, cpu_backend=False)
    run.expect(person.accepted == twin.accepted, "a copy decoded differently from its original")
    run.call("reset(): GrammarCompiler.clear_cache()", backend.compiler.clear_cache)
    again = backend.dispatch("json", json.dumps(c.PERSON))
    again.name = again.session.name = "person-after-clear"
    first = again.session.fill(allocate(run, 1, env.vocab_size), 0)
    run.expect((first == person.session.history[0]).all(), "the schema compiled after clear_cache masks differently")


def legacy_structural_tag(run: Run, env: Any) -> None:
    """A legacy structures+triggers request, converted by StructuralTag.from_legacy_structural_tag
    with at_least_one set, decoded with teacher forcing."""
    tok = env.byte_level
    backend = Backend(run, tok, env.vocab_size)
    for at_least_one, text in ((False, c.LEGACY_OUT), (True, c.TRIGGERED_OUT)):
        grammar = backend.dispatch("structural_tag", json.dumps({**c.LEGACY_TAGS, "at_least_one": at_least_one}))
        run.expect(isinstance(grammar, Grammar), "legacy structural tag: no grammar")
        grammar.name = grammar.session.name = f"legacy(at_least_one={at_least_one})"
        decode_batch(run, [grammar], [c.encode(tok, text)], env.vocab_size, cpu_backend=False)
        if at_least_one:
            run.expect(not grammar.session.history[0][tok.eos_token_id], "at_least_one: eos allowed before any tag")


def jump_forward(run: Run, env: Any) -> None:
    """Jump-forward decoding on a JSON schema: after each sampled token the forced string is
    appended, the text re-encoded and the matcher moved to the new ids."""
    tok = env.byte_level
    backend = Backend(run, tok, env.vocab_size, any_whitespace=False)
    grammar = backend.dispatch("json", json.dumps(c.WEATHER))
    grammar.name = grammar.session.name = "weather"
    target = c.encode(tok, c.WEATHER_ARGS)
    mask = allocate(run, 1, env.vocab_size)
    output: list = []
    jumped = []
    for _ in range(len(target) + 4):
        if grammar.session.matcher.is_terminated():
            break
        helper = grammar.try_jump_forward()
        if helper is not None:
            text = tok.decode(output) + helper[1]
            new = tok.encode(text, add_special_tokens=False)
            run.record("retokenized", tuple(new))
            grammar.jump_and_retokenize(output, new)
            output = new
            jumped.append(helper[1])
        bits = grammar.session.fill(mask, 0)
        text = tok.decode(output)
        # the sampler: the longest allowed token that keeps the output a prefix of the target text
        want = c.WEATHER_ARGS
        choices = [t for t, piece in enumerate(env.texts) if bits[t] and piece and want.startswith(text + piece)]
        token = max(choices, key=lambda t: len(env.texts[t])) if choices else tok.eos_token_id
        run.record("sampled", token)
        grammar.accept_token(token)
        output.append(token)
    run.expect(grammar.session.is_terminated(), "weather: not terminated")
    run.expect(tok.decode([t for t in output if t != tok.eos_token_id]) == c.WEATHER_ARGS,
               f"weather: the output is {tok.decode(output)!r}")
    run.expect(jumped[:1] == ['{"city": "'] and any(s.endswith('"unit": "') for s in jumped),
               f"weather: the forced keys were not jumped over: {jumped}")


def rollback_after_the_end(run: Run, env: Any) -> None:
    """SGLang's own check: a regex request terminated by eos, then the eos rolled back; MLX's
    CPU masking path (backend="cpu"); then a tokenizer that brings its own stop token
    (`init_xgrammar`: override_stop_tokens)."""
    tok = env.byte_level
    backend = Backend(run, tok, env.vocab_size)
    grammar = backend.dispatch("regex", r"hello (world|there)")
    grammar.name = grammar.session.name = "hello"
    decode_batch(run, [grammar], [c.encode(tok, "hello world")], env.vocab_size, cpu_backend=True)
    grammar.rollback(1)
    run.expect(not grammar.session.is_terminated(), "hello: still terminated after rolling eos back")
    mask = allocate(run, 1, env.vocab_size)
    bits = grammar.session.fill(mask, 0)
    run.expect(bool(bits[tok.eos_token_id]) and bits.sum() == 1, "hello: after 'hello world' only eos")

    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    backend.override_stop_tokens = [im_end]
    grammar = backend.dispatch("regex", r"hello (world|there)")
    grammar.name = grammar.session.name = "hello-im_end"
    output = c.encode(tok, "hello there", eos=False) + [im_end]
    decode_batch(run, [grammar], [output], env.vocab_size, cpu_backend=True)
    end = grammar.session.history[len(output) - 1]
    run.expect(end.nonzero()[0].tolist() == [im_end], "hello-im_end: the end offers other than <|im_end|>")


SCENARIOS = {"sglang/dispatch_and_decode": dispatch_and_decode, "sglang/legacy_structural_tag": legacy_structural_tag,
             "sglang/jump_forward": jump_forward,
             "sglang/rollback_after_the_end": rollback_after_the_end}
