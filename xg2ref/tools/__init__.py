"""What is built on the engine, not the engine: the command line, the differential runner, the
fuzzer and the benchmarks. Nothing under xg2ref/ outside tools/ (and the teaching views)
imports from here.

    cli.py          `xg2ref ...`: every command's arguments, dispatched to the modules below
    user_cases.py   a user's file (EBNF, Lark, regex, JSON Schema, structural tag) as a case
    explain.py      `xg2ref explain`: why a continuation is allowed, as dotted Earley items
    replay.py       `xg2ref replay`: a generation log checked step by step
    intrinsic_contract.py  `check_intrinsic`: a new grammar construct against the oracle
    diff/           `xg2ref diff`: xg2ref, its brute-force oracle and other engines compared
    fuzz/           `xg2ref fuzz`: generated cases through diff/, disagreements shrunk and classed
    bench/          `xg2ref bench ...`: the paper's tables and figures, beside xgrammar 0.2.8
"""
