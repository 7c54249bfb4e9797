"""Entry point for ``python -m testworld``; all logic lives in :mod:`.cli`."""

from __future__ import annotations

import sys

from .cli import main
from .gobuild import load_rows

if __name__ == "__main__":
    load_rows()  # `build` lists every row, including those the part modules add
    sys.exit(main())
