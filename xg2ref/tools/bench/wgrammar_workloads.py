"""The workloads of `xg2ref bench wgrammar` (WGrammar §4; ../shared/SEED_SYSTEMS.md §4.3): each a
list of `Instance`s, one request each, with its constraint for every engine and its output text.

    W1 json-mode-eval (real)   the 100 schemas and their gold completions. WGrammar's JSON
                               factory (`JSON_TEMPLATE`) takes a schema of its subset as a request
                               (`json_request`: objects with their properties in order, strings,
                               integers, numbers, booleans, null, enums, consts, arrays); the
                               byte-level engines get the schema itself.
    W2 outline (synthetic)     WGrammar's Outline-Generation stand-in: seeded section trees
                               (depth <= 3, 3-12 sections, ids section_2_1), and per section
                               <sec>id: title<pad>outline</sec>, title and outline free text of
                               sentences of our own (`SENTENCES`, a few hundred tokens per output).
                               quicktok's qwen3 table has no <|vision_*|> tags as text tokens (they
                               are special), so three literal markers of our own stand for them.
    W3 lookup (synthetic)      WGrammar's Reference-Lookup stand-in: an outline of ids like 2.1.1
                               and topics 1..T; the output a JSON array of {"topic": [ints],
                               "reference": [ids]}, topics and ids enumerations given per request.

For every instance: the template request (WGrammar), the regex of the written-out request (its
online path), the byte-level constraint (a JSON schema or the written-out EBNF) and the text.
Texts are tokenized twice: canonically (the vocabulary's own tokenizer, for the byte-level
engines) and WGrammar-compatibly (`wg_tokenize`: at each step the longest token that the
program allows and that the text starts with), as WGrammar's engine would have to be fed.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Optional

from ...baselines.wgrammar import Factory, OperatorMatcher, OperatorProgramError, TokenSets
from ...baselines.wgrammar.templates import regex_of
from ...grammar.printer import print_grammar

JSON_TEMPLATE = r'''object ::= "{" $members "}"
member ::= $key ": " $value
next_member ::= ", " $key ": " $value
string ::= "\"" [^"\\\x00-\x1f]* "\""
integer ::= "-"? [0-9]+
number ::= "-"? [0-9]+ ("." [0-9]+)?
boolean ::= "true" | "false"
null ::= "null"
array ::= "[" ($item (", " $item)*)? "]"
'''
MARKERS = ("<sec>", "<pad>", "</sec>")
OUTLINE_TEMPLATE = r'''document ::= $sections
section ::= "<sec>" $id ": " [^<]* "<pad>" [^<]* "</sec>\n"
'''
LOOKUP_TEMPLATE = r'''lookup ::= "[" $entry (", " $entry)* "]"
entry ::= "{\"topic\": [" $topic (", " $topic)* "], \"reference\": [" $ref (", " $ref)* "]}"
'''
SENTENCES = (
    "The survey covers three regions and two seasons.", "Costs rose by a fifth over the period.",
    "Most respondents preferred the second design.", "A pilot run found no major faults.",
    "The committee asked for a shorter timeline.", "Storage needs double every two years.",
    "Two of the sites lacked reliable power.", "The new method halves the review time.",
    "Feedback from the field teams was mixed.", "A later phase adds the northern routes.",
    "Training took longer than planned.", "The budget leaves room for one more hire.",
    "Results are within the expected range.", "Several steps can run in parallel.",
    "The archive keeps every version of the plan.", "Demand peaks in the first quarter.",
)
WORDS = ("Overview", "Budget", "Scope", "Methods", "Results", "Risks", "Timeline", "Staff", "Sites", "Data",
         "Review", "Outlook", "Design", "Costs", "Training", "Appendix")


@dataclass
class Instance:
    workload: str
    label: str
    request: Optional[dict]  # the template request (None: outside the factory)
    text: str
    schema: Optional[dict] = None  # W1: the byte-level engines' constraint
    ebnf: str = ""  # W2, W3: the written-out template
    regex: str = ""  # the online path's pattern
    refused: str = ""  # why the factory refused it
    extra: dict = field(default_factory=dict)


class OutsideFactory(ValueError):
    """A schema outside the JSON factory's subset."""


def json_request(schema: dict) -> dict:
    """The JSON factory's request for `schema` (module docstring); OutsideFactory otherwise."""
    if "enum" in schema:
        return {"one_of": [json.dumps(v) for v in schema["enum"]]}
    if "const" in schema:
        return json.dumps(schema["const"])
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties")
        if not props:
            raise OutsideFactory("an object without properties")
        members = [{"structure": "member" if k == 0 else "next_member",
                    "args": {"key": json.dumps(name), "value": json_request(sub)}}
                   for k, (name, sub) in enumerate(props.items())]
        return {"structure": "object", "args": {"members": members}}
    if kind == "array":
        if "items" not in schema or not isinstance(schema["items"], dict):
            raise OutsideFactory("an array without one items schema")
        return {"structure": "array", "args": {"item": json_request(schema["items"])}}
    if kind in ("string", "integer", "number", "boolean", "null"):
        return {"structure": kind}
    raise OutsideFactory(f"type {kind!r}" if kind else f"no type ({sorted(schema)[:3]})")


def json_mode_eval(data_dir: str, limit: Optional[int] = None) -> list:
    from .token_classes_grammars import json_mode_eval_schemas

    out = []
    for index, schema, completion in json_mode_eval_schemas(data_dir)[:limit]:
        schema = schema if isinstance(schema, dict) else json.loads(schema)
        try:
            request, refused = json_request(schema), ""
        except OutsideFactory as err:
            request, refused = None, str(err)
        out.append(Instance("json", str(index), request, completion, schema=schema, refused=refused))
    return out


def outline(n: int, seed: int = 0) -> list:
    """W2: `n` documents (module docstring)."""
    rng = random.Random(seed)
    out = []
    for d in range(n):
        ids: list = []

        def grow(prefix: str, depth: int) -> None:
            for k in range(1, rng.randint(1, 3) + 1):
                if len(ids) >= 12:
                    return
                ids.append(f"{prefix}_{k}")
                if depth < 3 and rng.random() < 0.4:
                    grow(f"{prefix}_{k}", depth + 1)
        while len(ids) < 3:
            ids.clear()
            grow("section", 1)
        text, sections = "", []
        for sid in ids:
            title = " ".join(rng.sample(WORDS, rng.randint(1, 3)))
            body = " ".join(rng.choice(SENTENCES) for _ in range(rng.randint(1, 3)))
            text += f"<sec>{sid}: {title}<pad>{body}</sec>\n"
            sections.append({"structure": "section", "args": {"id": sid}})
        out.append(Instance("outline", f"doc{d}", {"structure": "document", "args": {"sections": sections}}, text))
    return out


def lookup(n: int, seed: int = 0) -> list:
    """W3: `n` lookups (module docstring)."""
    rng = random.Random(seed)
    out = []
    for d in range(n):
        ids = [f"{a}" for a in range(1, rng.randint(2, 5) + 1)]
        ids += [f"{i}.{b}" for i in list(ids) for b in range(1, rng.randint(1, 3) + 1)]
        ids += [f"{i}.{c}" for i in ids if i.count(".") == 1 and rng.random() < 0.5 for c in range(1, 3)]
        topics = [str(t) for t in range(1, rng.randint(3, 12) + 1)]
        entries = [{"topic": sorted(rng.sample([int(t) for t in topics], rng.randint(1, 2))),
                    "reference": rng.sample(ids, rng.randint(1, 4))} for _ in range(rng.randint(1, 5))]
        text = json.dumps(entries)
        request = {"structure": "lookup", "args": {"entry": {"structure": "entry", "args": {
            "topic": {"one_of": topics}, "ref": {"one_of": [json.dumps(i) for i in ids]}}}}}
        out.append(Instance("lookup", f"lookup{d}", request, text))
    return out


def factories(info) -> dict:
    """The three templates' factories over `info` (the offline step, timed by the bench)."""
    return {"json": Factory.from_text(JSON_TEMPLATE, info), "outline": Factory.from_text(OUTLINE_TEMPLATE, info),
            "lookup": Factory.from_text(LOOKUP_TEMPLATE, info)}


def complete(instances: list, factory: Factory) -> None:
    """Fill each instance's regex (and, for W2 and W3, its written-out EBNF)."""
    for inst in instances:
        if inst.request is None:
            continue
        try:
            ir = factory.written_out(inst.request)
        except OperatorProgramError as err:
            inst.request, inst.refused = None, str(err)
            continue
        inst.regex = regex_of(ir)
        if inst.schema is None:
            inst.ebnf = print_grammar(ir)


FREE_SECTION = 'root ::= [^<]* "<pad>" [^<]* "</sec>\\n"'


def structural_tag(inst: "Instance") -> dict:
    """The request as an xgrammar structural tag, for XGrammar-2's linking: what repeats across
    requests is a sub-grammar compiled once (xg2ref/linking.py). W2: per section its head as a
    constant and the free text as one grammar every section of every request shares; W1 the
    schema, W3 the written-out grammar (a part each)."""
    if inst.schema is not None:
        body = {"type": "json_schema", "json_schema": inst.schema}
    elif inst.workload == "outline":
        body = {"type": "sequence", "elements": [
            e for section in inst.request["args"]["sections"]
            for e in ({"type": "const_string", "value": f"<sec>{section['args']['id']}: "},
                      {"type": "grammar", "grammar": FREE_SECTION})]}
    else:
        body = {"type": "grammar", "grammar": inst.ebnf}
    return {"type": "structural_tag", "format": body}


def token_index(sets: TokenSets) -> dict:
    """bytes -> the regular token ids that spell them."""
    out: dict = {}
    for t in sets.regular_ids:
        out.setdefault(sets.info.token_bytes(int(t)), []).append(int(t))
    return out


def wg_tokenize(matcher: OperatorMatcher, text: bytes, index: dict, longest: int) -> Optional[list]:
    """The WGrammar-compatible tokenization of `text` along `matcher`'s program (module
    docstring), the stop token last; None where no allowed token continues the text or the
    program cannot stop at its end. The matcher is reset first and left at the end."""
    matcher.reset()
    out, i = [], 0
    while i < len(text):
        for k in range(min(longest, len(text) - i), 0, -1):
            taken = next((t for t in index.get(text[i:i + k], ()) if matcher.accept_token(t)), None)
            if taken is not None:
                out.append(taken)
                i += k
                break
        else:
            return None
    stops = [int(t) for t in matcher.program.sets.stop_ids]
    if not stops or not matcher.accept_token(stops[0]):
        return None
    return out + [stops[0]]
