"""The fuzzer (`xg2ref fuzz`):

    shrink.py    a disagreement as a question (`Asker`), delta debugging of its input, greedy
                 deletion in its case, its class
    case.py      one drawn case through diff/ and its disagreements made findings
                 (`CaseChecker`); shrinking a user diff's disagreements (`shrink_disagreements`)
    runner.py    cases in forked workers for a time budget, resumable results (`run_fuzz`)
"""
