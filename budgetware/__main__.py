"""``python -m budgetware``: the command line."""

from __future__ import annotations

import sys

from budgetware.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
