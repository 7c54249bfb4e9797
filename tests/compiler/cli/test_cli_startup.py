"""`train-compile --help` stays fast because the CLI module imports nothing heavy.

A behaviour check, not a timing one: in a fresh interpreter, `import compiler.cli.main` must
not pull in pydantic, ruamel, PyYAML, jsonschema or the kubernetes client (each costs
tens to hundreds of milliseconds). `-X importtime` lists every module imported.
"""

from __future__ import annotations

import functools
import subprocess
import sys

import pytest
from compiler_builders import REPO

HEAVY = ("pydantic", "pydantic_core", "ruamel", "yaml", "jsonschema", "kubernetes", "jsonpatch")


@functools.cache
def imported_modules(statement: str) -> frozenset[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=True,
    )
    lines = [line for line in proc.stderr.splitlines() if line.startswith("import time:")]
    return frozenset(line.rsplit("|", 1)[-1].strip() for line in lines[1:])  # first line: header


def test_importtime_lists_what_it_imports():
    """The probe itself works: importing the pipeline does pull pydantic in."""
    assert "pydantic" in imported_modules("import compiler.pipeline")


@pytest.mark.parametrize("module", HEAVY)
def test_the_cli_module_does_not_import(module):
    names = imported_modules("import compiler.cli.main")

    assert "compiler.cli.main" in names
    assert not {n for n in names if n == module or n.startswith(module + ".")}


def test_help_runs_without_importing_the_pipeline():
    statement = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from compiler.cli.main import main\n"
        "result = CliRunner().invoke(main, ['--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in %r)\n"
        "assert not heavy, heavy\n" % (HEAVY,)
    )
    subprocess.run([sys.executable, "-c", statement], cwd=REPO, timeout=60, check=True)
