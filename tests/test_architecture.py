"""Layering stays as the style guide draws it: schemas at the bottom, overlays free of
compiler (which calls them), controller on top, only the controller talks to the kubernetes
client, and nothing that ships imports the test world (testworld/). Inside the controller,
its plumbing (runtime) sits under its job behaviour (jobs), with no cycles. Checked by
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
