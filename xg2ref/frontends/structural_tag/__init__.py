"""The structural-tag front end (XGrammar-2 §3.2): tool-calling and reasoning formats as grammars.

The formats themselves are the pydantic models of xg2ref/structural_tag.py (xgrammar's public
module); the builtin per-model tags are served by xg2ref/builtin_structural_tag.py. In order:

    builders.py        format-node constructors, OpenAI-style tools and `tool_choice` (a leaf)
    models.py          each model family's tool-call and reasoning syntax, built with builders.py
    excludes.py        JSON values that never hold an excluded string
    xml_styles.py      the markup of each XML parameter style
    xml_parameters.py  tool-call parameters in those styles
    converter.py       `structural_tag_to_ir`: a format tree into grammar IR (TagDispatch for
                       triggered tags, xg2ref/intrinsics/tag_dispatch.py)
"""
