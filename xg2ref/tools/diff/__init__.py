"""The differential runner (`xg2ref diff`), in the order a run goes:

    checks.py    one case's checks: string verdicts and token traces, every difference put to
                 the brute-force oracle (`CaseRun`)
    report.py    reproducers, counts per case, the JSON report, the progress bar
    runner.py    the bundled suite or given cases, in worker processes (`run_diff`)
    user.py      the user's files against several engines (`run_user_diff`)
    classes.py   which disagreements an engine makes by design (`classify`, `by_design`)
"""
