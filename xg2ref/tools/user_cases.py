"""A user's own grammar files as cases of the differential runner (`xg2ref diff FILE`, `replay`).

A file becomes a `suite.Case` of one of the kinds every engine adapter reads
(xg2ref/oracle/engines.py): each engine converts the source with its own front end, and the
oracle reads xg2ref's conversion. The kind comes from `--kind`, or with `auto` from the file:

    .ebnf .gbnf .bnf              ebnf             (xgrammar's EBNF dialect)
    .lark                         lark
    .regex .re                    regex            (the file's text, one trailing newline dropped)
    .json                         structural_tag   when the object has "type": "structural_tag"
                                                   (or "format"), else json_schema
    other                         by content: "::=" is EBNF, a JSON object as above,
                                  "start:" or "%import" Lark, else an error

A suite case name (`xg2ref cases`) or inline EBNF text (holding `::=`) is accepted too.
Front-end options (`any_whitespace`, `strict_mode`, ... for JSON Schema) travel in the case's
`options` and reach every engine that takes them.

Also here, for the command line (xg2ref/tools/cli.py) and `xg2ref fuzz --vocab` (xg2ref/tools/fuzz/runner.py):
`load_vocab`, the user's vocabulary (a quicktok name, a tokenizer.json, a JSON list of tokens),
and `UsageError`, bad command-line input.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Optional

from ..suite import Case, case_names, load_cases

KINDS = ("auto", "ebnf", "lark", "regex", "json_schema", "structural_tag")
_EXTENSIONS = {".ebnf": "ebnf", ".gbnf": "ebnf", ".bnf": "ebnf", ".lark": "lark", ".regex": "regex",
               ".re": "regex"}


class CaseError(ValueError):
    """A file that cannot be read as a case (unknown kind, bad JSON): the message says why."""


class UsageError(Exception):
    """Bad command-line input: printed and exit status 2."""


def guess_kind(path: str, text: str) -> str:
    """The kind of a file by extension, then by content (module docstring)."""
    ext = os.path.splitext(path)[1].lower()
    if ext in _EXTENSIONS:
        return _EXTENSIONS[ext]
    stripped = text.lstrip()
    if ext == ".json" or stripped.startswith(("{", "true", "false")):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            raise CaseError(f"{path}: not JSON ({err})") from None
        if isinstance(value, dict) and (value.get("type") == "structural_tag" or "format" in value):
            return "structural_tag"
        return "json_schema"
    if "::=" in text:
        return "ebnf"
    if "start:" in text or "%import" in text:
        return "lark"
    raise CaseError(f"{path}: cannot tell its kind; pass --kind ({', '.join(KINDS[1:])})")


def case_from_text(name: str, text: str, kind: str, options: Optional[dict] = None, root: str = "root") -> Case:
    """A case of `kind` from source text (no samples: strings come from the generators);
    `root` is an EBNF grammar's root rule."""
    options = dict(options or {})
    dialect = options.pop("dialect", None)  # (Lark's: the only option a Lark case takes)
    if kind == "lark":
        options = {"dialect": dialect} if dialect else {}
    if kind == "ebnf":
        case = Case(name=name, text=text, root=root, samples=(), source=name, license="the user's")
    else:
        if kind in ("json_schema", "structural_tag"):
            try:
                spec = json.loads(text)
            except json.JSONDecodeError as err:
                raise CaseError(f"{name}: not JSON ({err})") from None
        elif kind == "regex":
            spec = text[:-1] if text.endswith("\n") else text
        elif kind == "lark":
            spec = text
        else:
            raise CaseError(f"{name}: unknown kind {kind!r} ({', '.join(KINDS[1:])})")
        case = Case(name=name, text="", root="root", samples=(), source=name, license="the user's", kind=kind,
                    spec=spec, options=options)
        object.__setattr__(case, "text", str(case.grammar()))
    return case


_FLAGS = (("any_whitespace", "--any-whitespace"), ("strict_mode", "--strict-mode"), ("any_order", "--any-order"),
          ("max_whitespace_cnt", "--max-whitespace-cnt"), ("dialect", "--dialect"))


def front_end_flags(options: dict) -> str:
    """The command-line flags that give a case these front-end options (leading space, or "").

    Example: front_end_flags({"strict_mode": False, "max_whitespace_cnt": 2})
             == " --no-strict-mode --max-whitespace-cnt 2"
    """
    out = []
    for name, flag in _FLAGS:
        value = options.get(name)
        if name == "dialect":
            out += [f"{flag} {value}"] if value else []
        elif isinstance(value, bool):
            out.append(flag if value else "--no-" + flag[2:])
        elif value is not None:
            out.append(f"{flag} {int(value)}")
    return "".join(" " + f for f in out)


def replay_flags(case) -> str:
    """`--kind K` and the front-end flags that read `case` again from its file."""
    return f" --kind {case.kind or 'ebnf'}{front_end_flags(case.options or {})}"


def load_user_case(spec: str, kind: str = "auto", options: Optional[dict] = None) -> Case:
    """A file path, a suite case name or inline EBNF text, as a case."""
    if kind not in KINDS:
        raise CaseError(f"unknown kind {kind!r} ({', '.join(KINDS)})")
    if os.path.isfile(spec):
        with open(spec, encoding="utf-8") as f:
            text = f.read()
        case = case_from_text(os.path.basename(spec), text, guess_kind(spec, text) if kind == "auto" else kind, options)
        return dataclasses.replace(case, source=spec)  # the path: replay commands name it
    if spec in case_names() or "-" in spec:
        try:
            return load_cases([spec])[0]
        except KeyError:
            pass
    if "::=" in spec:
        return case_from_text("<inline grammar>", spec, "ebnf" if kind == "auto" else kind, options)
    raise CaseError(f"no file or suite case named {spec!r}")


def load_vocab(spec: str):
    """A quicktok name, a tokenizer.json path, or a JSON list of token strings (RAW)."""
    from ..tokenizer_info import QUICKTOK_STOP_TOKENS, TokenizerInfo

    if spec in QUICKTOK_STOP_TOKENS:
        return TokenizerInfo.from_quicktok(spec)
    if not os.path.isfile(spec):
        raise UsageError(f"unknown vocabulary {spec!r}: a quicktok name ({', '.join(QUICKTOK_STOP_TOKENS)}), "
                         "a tokenizer.json path or a JSON list of tokens")
    with open(spec, encoding="utf-8") as f:
        data = json.load(f)
    if isinstance(data, list):
        return TokenizerInfo(data)
    return TokenizerInfo.from_huggingface_file(spec)
