"""The Lark front end (XGrammar-2 §2.1): xgrammar 0.2.8's Lark dialect, read scannerless, with
llguidance's extensions.

    reader.py     the dialect's text into a tree of definitions
    lazy.py       llguidance's lazy rules (`name[lazy]`, `stop=`, `suffix=`) and the dispatching start rule
    converter.py  the tree lowered to grammar IR (`lark_to_ir`)
"""
