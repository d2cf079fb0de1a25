"""Unicode property escapes for the standards' regexes (XGrammar-2 §2.1 front ends: JSON Schema
`pattern`, which ECMA-262 reads with its `u` flag): `\\p{...}` and its complement `\\P{...}`
as sets of code points.

    \\p{Lu}  \\p{Uppercase_Letter}  \\p{gc=Lu}  \\p{General_Category=Lu}    one general category
    \\p{L}   \\p{Letter}                                                   a group (L = Lu Ll Lt Lm Lo)
    \\p{Any}  \\p{ASCII}  \\p{Assigned}                                     the three binary properties
                                                                        ECMA-262 lists beside them

The categories are Python's `unicodedata` (its Unicode version), read once per process in
one pass over the code points. Scripts (`\\p{Script=Greek}`) and the other binary properties
are not in `unicodedata`: `unicode_property` raises KeyError for them, and the parser names
the escape in its error.
"""

from __future__ import annotations

import functools
import sys
import unicodedata

from ...grammar.ir import MAX_CODEPOINT

# ECMA-262's General_Category values: the short name, then the long one
CATEGORIES = {
    "Lu": "Uppercase_Letter", "Ll": "Lowercase_Letter", "Lt": "Titlecase_Letter", "Lm": "Modifier_Letter",
    "Lo": "Other_Letter", "Mn": "Nonspacing_Mark", "Mc": "Spacing_Mark", "Me": "Enclosing_Mark",
    "Nd": "Decimal_Number", "Nl": "Letter_Number", "No": "Other_Number", "Pc": "Connector_Punctuation",
    "Pd": "Dash_Punctuation", "Ps": "Open_Punctuation", "Pe": "Close_Punctuation", "Pi": "Initial_Punctuation",
    "Pf": "Final_Punctuation", "Po": "Other_Punctuation", "Sm": "Math_Symbol", "Sc": "Currency_Symbol",
    "Sk": "Modifier_Symbol", "So": "Other_Symbol", "Zs": "Space_Separator", "Zl": "Line_Separator",
    "Zp": "Paragraph_Separator", "Cc": "Control", "Cf": "Format", "Cs": "Surrogate", "Co": "Private_Use",
    "Cn": "Unassigned",
}
GROUPS = {"L": "Letter", "LC": "Cased_Letter", "M": "Mark", "N": "Number", "P": "Punctuation", "S": "Symbol",
          "Z": "Separator", "C": "Other"}
_GROUP_MEMBERS = {"LC": ("Lu", "Ll", "Lt")}


@functools.lru_cache(maxsize=1)
def _category_ranges() -> dict:
    """{two-letter category: [(lo, hi)]} over every code point (one pass)."""
    out: dict = {}
    start, current = 0, unicodedata.category("\0")
    for cp in range(1, MAX_CODEPOINT + 2):
        cat = unicodedata.category(chr(cp)) if cp <= MAX_CODEPOINT else None
        if cat != current:
            out.setdefault(current, []).append((start, cp - 1))
            start, current = cp, cat
    return out


def _names() -> dict:
    """{any accepted name: the categories it stands for}."""
    names = {}
    for short, long in CATEGORIES.items():
        names[short] = names[long] = (short,)
    for short, long in GROUPS.items():
        members = _GROUP_MEMBERS.get(short) or tuple(c for c in CATEGORIES if c[0] == short)
        names[short] = names[long] = members
    names["punct"] = names["P"]  # (ECMA-262's alias of Punctuation)
    names["digit"] = names["Nd"]
    names["Combining_Mark"] = names["M"]
    return names


@functools.lru_cache(maxsize=None)
def unicode_property(text: str) -> tuple:
    """The code point ranges of the property `text` names (what stands between the braces of
    `\\p{...}`); KeyError for a property this module does not know."""
    key, _, value = text.partition("=")
    if value:
        if key not in ("gc", "General_Category"):
            raise KeyError(text)
        text = value
    if text == "Any":
        return ((0, MAX_CODEPOINT),)
    if text == "ASCII":
        return ((0, 0x7F),)
    names = _names()
    if text == "Assigned":
        cats = tuple(c for c in CATEGORIES if c != "Cn")
    elif text in names:
        cats = names[text]
    else:
        raise KeyError(text)
    table = _category_ranges()
    return tuple(sorted(r for c in cats for r in table.get(c, ())))


def unicode_version() -> str:
    """The Unicode version the categories come from."""
    return f"{unicodedata.unidata_version} (Python {sys.version_info.major}.{sys.version_info.minor})"
