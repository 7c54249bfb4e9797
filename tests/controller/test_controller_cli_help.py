"""`train-controller --help` is read by people installing it: it answers without importing
the controller (a fresh interpreter, no kubernetes client or pydantic loaded), lists the
frameworks the kind table knows, shows the log levels it takes and where the install is.
Pure CLI checks, no cluster."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("kubernetes", "pydantic", "prometheus_client", "orjson", "urllib3")


def _help() -> str:
    from controller.__main__ import main

    result = CliRunner().invoke(main, ["--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


def test_help_imports_nothing_heavy() -> None:
    statement = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from controller.__main__ import main\n"
        "result = CliRunner().invoke(main, ['--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", statement], cwd=REPO, timeout=60, check=True)


def test_the_frameworks_in_the_help_are_the_kind_table() -> None:
    from controller.__main__ import FRAMEWORKS_HELP
    from controller.jobs import kinds

    assert FRAMEWORKS_HELP.split(", ") == [kind.adapter.name for kind in kinds.KINDS.values()]
    assert f"({FRAMEWORKS_HELP})" in " ".join(_help().split())


def test_help_shows_the_log_levels_and_the_install() -> None:
    text = " ".join(_help().split())

    assert "--log-level [debug|info|warning|error]" in text and "[default: INFO]" in text
    assert "kubectl apply --server-side -k controller/install" in text


def test_an_unknown_log_level_is_a_usage_error() -> None:
    from controller.__main__ import main

    result = CliRunner().invoke(main, ["--log-level", "LOUD"])

    assert result.exit_code == 2
    assert "'LOUD' is not one of" in result.output
