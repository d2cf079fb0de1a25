"""Front ends: text formats into grammar IR (XGrammar-2 §2.1; structural tags §3.2).

Each front end reads one input format and returns a `GrammarIR` (xg2ref/grammar/ir.py); nothing
below them knows which format a grammar came from. They import the grammar package (the IR, its
passes, the code-point sets of grammar/charsets.py, the intrinsic registry), never the reverse:
`Grammar.from_*` (xg2ref/grammar/grammar.py), the public facade, calls them.

In the order in which they build on one another:

    regex/           patterns as IR, read by the standards (parser.py, anchors.py); xgrammar's
                     dialect for `Grammar.from_regex` (to_ebnf.py) and for the `Regex(...)`
                     intrinsic (intrinsic_dialect.py, read by xg2ref/intrinsics/regex_call.py)
    ebnf/            xgrammar's EBNF dialect (parser.py), its rule options (rule_option_syntax.py);
                     intrinsic calls are looked up in the registry (xg2ref/grammar/intrinsic.py)
    json_schema/     JSON Schema (converter.py and the modules it calls: keywords, lexical,
                     strings, objects, values, merge, formats)
    structural_tag/  tool calling and reasoning formats (converter.py; excludes.py,
                     xml_styles.py, xml_parameters.py for the json_schema format's options;
                     builders.py and models.py for `get_builtin_structural_tag`)
    lark/            xgrammar's Lark dialect with llguidance's extensions (reader.py, lazy.py,
                     converter.py)
"""
