"""The JSON Schema front end (XGrammar-2 §2.1; xgrammar's `JSONSchemaConverter`).

`converter.py` walks a schema and calls the others; none of them imports the converter (it is
passed in where a sub-schema must be converted):

    keywords.py   keyword sets, bounds and counts (a leaf)
    formats.py    `format` values as regexes
    lexical.py    numbers in a range, string characters, literal values
    strings.py    lengths, `pattern` and `format` (with xg2ref/grammar/regular.py)
    values.py     `enum` and `const` against the other keywords
    objects.py    properties, required, additional and pattern properties, property order
    merge.py      `allOf`, `$ref` / `anyOf` / `oneOf` beside other keywords
    converter.py  `json_schema_to_ir`: the schema as a whole
"""
