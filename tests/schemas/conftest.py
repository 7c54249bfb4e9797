"""Import paths for the schema tests.

`tests/schemas` shares its name with the `schemas` package; with `tests/` on sys.path
and the repository root not on it, `import schemas` could find this folder as a
namespace package. A regular package anywhere on sys.path wins, so the repository root
goes on it and a namespace stand-in already imported is dropped.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) in sys.path:
    sys.path.remove(str(REPO))
sys.path.insert(0, str(REPO))
for _name in ("compiler", "overlays", "schemas"):
    if getattr(sys.modules.get(_name), "__file__", "") is None:
        del sys.modules[_name]
