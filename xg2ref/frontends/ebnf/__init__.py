"""The EBNF front end (XGrammar-2 §2.1, XGrammar §2.2): xgrammar 0.2.8's dialect into `GrammarIR`.

    rule_option_syntax.py  `name[max_tokens=8, lazy] ::= ...`, parsed into `Rule.options`
    parser.py              the grammar text (a Lark grammar of the dialect), intrinsic calls
                           resolved through the registry (xg2ref/grammar/intrinsic.py)
"""
