"""Entry point for ``python -m testworld``; all logic lives in :mod:`.cli`."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
