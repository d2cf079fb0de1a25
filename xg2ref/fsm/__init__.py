"""Per-rule byte FSMs (XGrammar-2 §3.3): every rule body becomes a small automaton over bytes,
and the whole grammar becomes flat CSR arrays the kernels read. In pipeline order:

    utf8.py     code-point classes as UTF-8 byte-range sequences
    fsm.py      the FSM value: trim, determinize, minimize; REPEAT_UNBOUNDED
    build.py    rule body -> NFA -> FSM (`rule_fsm`), the grammar's FSMs -> `FSMArrays`
                (`build_grammar_fsms`), nullable and productive rules
    unordered.py  unordered rules' members (any_order): the kernel's table, the no-dead-end check
    shapes.py   a rule's FSM built once per shape and reused across grammars
    hashing.py  FSM hashes for the cross-grammar cache (Alg. 1-2, App. C)
"""
