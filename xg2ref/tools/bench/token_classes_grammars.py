"""The grammars of `xg2ref bench token-classes` (CFGzip Table 1 and 3; ../shared/SEED_SYSTEMS.md
§3.5): json-mode-eval's schemas, a C++ grammar converted to EBNF, XML 1.0 translated.

**C++** (`cpp_ebnf`): `<data>/grammars/cpp/cpp_full.cfg` with its terminal map `cpp_lexmap.json`
(Mündler et al.'s C++ subset, the upstream of CFGzip's grammar), converted to xgrammar EBNF:

- each production `A -> x y | z` becomes `A ::= x y | z`, `$` the empty string;
- a terminal is a literal symbol, a keyword (a whole word), a regex of the map, or `identifier`;
  each is preceded by optional whitespace `[ \\t\\n]*`, as CFGzip's published grammars do;
- the map's `\\x02` / `\\x03` sentinels (markers its pre-lexer puts around identifiers and
  numbers) are stripped from the regexes;
- `identifier` is `[a-zA-Z_][a-zA-Z0-9_]*`, a plain superset: keywords are not removed from it
  (the map says they are; a complement would be a second automaton, and the superset only makes
  more texts sentences);
- the word operators (`binop_word`: and, or, xor; `unop_word`: not) need whitespace on both
  sides. Upstream, the sentinels keep words apart; without them and with optional whitespace,
  ` world` would also read as `w or ld`, and every word holding `or`, `and` or `xor` would be
  an expression (with llama3 that alone doubles the displacement classes, 7,172 against 3,689).

The grammar is left-recursive (`Expression -> Expression binop Expression`, `Type -> Type *`),
which the Greibach normal form removes (token_classes/gnf.py).

**XML** (`xml_ebnf`): benchmarks/token_classes/xml10.ebnf, a hand translation of W3C XML 1.0 (5th
ed., `<data>/grammars/xml/xml10_w3c.ebnf`) with its set differences rewritten as regular
constructs; its header lists them. CFGzip used an XML 1.1 grammar, so counts differ by grammar.
"""

from __future__ import annotations

import json
import os

WHITESPACE = "ws"
WORD_OPERATORS = ("binop_word", "unop_word")  # keywords between expressions: whitespace on both sides
XML_GRAMMAR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks", "token_classes", "xml10.ebnf")


def _regex_literal(text: str) -> str:
    """An EBNF string literal of `text`."""
    return '"' + "".join(c if c.isalnum() or c in " _-+*/%<>=!&|^?:;.,#{}[]()~'" else
                         {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}.get(c, f"\\u{ord(c):04x}")
                         for c in text) + '"'


def cpp_ebnf(data_dir: str, cfg: str = "cpp_full.cfg") -> tuple:
    """(EBNF text, root rule name) of the C++ grammar (module docstring)."""
    base = os.path.join(data_dir, "grammars", "cpp")
    with open(os.path.join(base, "cpp_lexmap.json"), encoding="utf-8") as f:
        lexmap = json.load(f)
    with open(os.path.join(base, cfg), encoding="utf-8") as f:
        lines = [line.strip() for line in f if "->" in line]
    productions = []
    for line in lines:
        head, body = (part.strip() for part in line.split("->", 1))
        productions.append((head, [alt.split() for alt in body.split("|")]))
    nonterminals = {head for head, _ in productions}
    literals = set(lexmap["literal_symbols"])
    regexes = {name: rx.replace("\\x02", "").replace("\\x03", "").replace("\x02", "").replace("\x03", "")
               for name, rx in lexmap["regex_tokens"].items()}
    keywords = dict(lexmap["keywords"])
    terminals: dict = {}  # symbol -> its rule name

    def terminal(symbol: str) -> str:
        if symbol not in terminals:
            name = "t_" + ("".join(c if c.isalnum() else f"_{ord(c):x}" for c in symbol))
            if symbol in regexes:
                body = f"Regex({_regex_literal(regexes[symbol])})"
            elif symbol in WORD_OPERATORS:  # (its own whitespace: no `ws` before it)
                body = f"Regex({_regex_literal(keywords[symbol])}) [ \\t\\n]"
            elif symbol in keywords and keywords[symbol] != symbol:
                body = f"Regex({_regex_literal(keywords[symbol])})"
            elif symbol == "identifier":
                body = "[a-zA-Z_] [a-zA-Z0-9_]*"
            elif symbol in literals or symbol in keywords or symbol.isidentifier():
                body = _regex_literal(symbol)
            else:
                raise ValueError(f"C++ grammar: no terminal for {symbol!r}")
            terminals[symbol] = name
            lead = "[ \\t\\n]+" if symbol in WORD_OPERATORS else WHITESPACE
            rules.append(f"{name} ::= {lead} {body}")
        return terminals[symbol]

    rules: list = []
    out = []
    for head, alts in productions:
        bodies = []
        for alt in alts:
            items = [s if s in nonterminals else terminal(s) for s in alt if s != "$"]
            bodies.append(" ".join(items) if items else '""')
        out.append(f"{head} ::= " + " | ".join(bodies))
    out += rules + [f'{WHITESPACE} ::= [ \\t\\n]*']
    return "\n".join(out) + "\n", productions[0][0]


def xml_ebnf() -> tuple:
    """(EBNF text, root rule name) of XML 1.0 (module docstring)."""
    with open(XML_GRAMMAR, encoding="utf-8") as f:
        return f.read(), "document"


def json_mode_eval_schemas(data_dir: str) -> list:
    """[(index, schema, gold completion as JSON text)] of json-mode-eval's 100 items."""
    path = os.path.join(data_dir, "json_mode_eval", "json_mode_eval_from_maskbench.jsonl")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"json-mode-eval not found at {path}; pass --data DIR (the folder that holds "
                                "json_mode_eval/)")
    with open(path, encoding="utf-8") as f:
        items = [json.loads(line) for line in f if line.strip()]
    return [(int(item["index"]), item["schema"], json.dumps(item["completion"])) for item in items]

