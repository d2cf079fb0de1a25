"""The built-in intrinsics of xgrammar's EBNF dialect, each through the seam of
xg2ref/grammar/intrinsic.py (docs/adding-an-intrinsic.md):

    tag_dispatch.py   TagDispatch: a leaf with its own Aho–Corasick automaton (XGrammar-2 §3.2)
    token_sets.py     TokenSet, a leaf reading one whole token: Token, ExcludeToken, and the
                      macro TokenTagDispatch
    substring.py      Substring: a macro (runs of whole chunks)
    regex_call.py     Regex: a macro (the pattern's language inline)

Importing this package registers them all; the EBNF front end does so.
"""

from .regex_call import Regex
from .substring import Substring
from .tag_dispatch import AhoCorasick, TagDispatch
from .token_sets import ExcludeToken, TokenSet, TokenTagDispatch, token_dispatch_expr

__all__ = ["AhoCorasick", "ExcludeToken", "Regex", "Substring", "TagDispatch", "TokenSet", "TokenTagDispatch",
           "token_dispatch_expr"]
