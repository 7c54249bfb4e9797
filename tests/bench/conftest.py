"""Make `bench` the repository's package even under a bare `pytest`.

Without the repository root on `sys.path` (as `python -m pytest` puts it), this very
folder, `tests/bench`, would be imported as a namespace package called `bench`.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
if getattr(sys.modules.get("bench"), "__file__", "") is None:
    del sys.modules["bench"]
