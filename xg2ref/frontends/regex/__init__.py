"""The regex front end (XGrammar-2 §2.1): a pattern becomes a rule body, so a regex goes through
the same FSM construction as any rule.

    anchors.py            `^`, `$` and leading lookaheads rewritten into what a grammar can say
    parser.py             patterns read by the standards (JSON Schema `pattern`, structural tags, Lark)
    to_ebnf.py            `Grammar.from_regex` in xgrammar 0.2.8's dialect, via EBNF text
    intrinsic_dialect.py  the `Regex("...")` EBNF intrinsic's reading of a pattern
"""
