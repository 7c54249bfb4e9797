"""Layering stays as the style guide draws it: schemas at the bottom, overlays free of
compiler (which calls them), controller on top, only the controller talks to the kubernetes
client, and nothing that ships imports the test world (testworld/). The compiler's stages
are layered as its data flows; inside the controller, its plumbing (runtime) sits under its
job behaviour (jobs); neither has import cycles. Checked by
import-linter, which reads every import (including lazy ones inside functions)."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint, "import-linter is part of the test extras; run make test to install it"
    proc = subprocess.run([lint, "--config", str(ROOT / ".importlinter")], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    contracts = (ROOT / ".importlinter").read_text().count("[importlinter:contract:")
    assert f"{contracts} kept, 0 broken" in proc.stdout


def test_no_shipped_module_is_over_400_lines():
    """A module past 400 lines holds more than one idea (the style guide's small modules)."""
    long = {str(p.relative_to(ROOT)): n for package in ("schemas", "foundation", "compiler", "overlays", "controller")
            for p in (ROOT / package).rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 400}
    assert not long, long
