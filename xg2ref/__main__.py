"""`python -m xg2ref ...`: the same command line as `xg2ref ...` (xg2ref/cli.py)."""

import sys

from .cli import main

sys.exit(main())
