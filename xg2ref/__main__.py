"""`python -m xg2ref ...`: the same command line as `xg2ref ...` (xg2ref/tools/cli.py)."""

import sys

from .tools.cli import main

sys.exit(main())
