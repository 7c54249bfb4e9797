"""`train-compile` as its own process ends through `os._exit` (compiler/cli/quickexit.py).

Skipping the interpreter's shutdown must not be visible: every exit status, every byte
of stdout and stderr and every output file is what the in-process run (which takes the
normal way out) gives; and an in-process run gets the garbage collector back.
"""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest
from compiler_builders import EXAMPLES, REPO, job_text, run_cli


def _process(*args: str | Path) -> subprocess.CompletedProcess:
    """The console script's way in (click reads sys.argv), named as CliRunner names it."""
    entry = "import sys; sys.argv[0] = 'main'; from compiler.cli.main import main; main()"
    return subprocess.run(
        [sys.executable, "-c", entry, *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=120,
    )


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


CASES = {
    "a valid build": lambda tmp: ("build", EXAMPLES / "project", "-o", tmp / "out"),
    "a render to stdout": lambda tmp: ("render", EXAMPLES / "project"),
    "invalid input (exit 1)": lambda tmp: ("validate", tmp / "bad.yaml"),
    "invalid input as json on stdout": lambda tmp: ("validate", tmp / "bad.yaml", "--format", "json"),
    "a usage error (exit 2)": lambda tmp: ("build", EXAMPLES / "project"),
    "a stale tree (exit 1, a diff on stdout)": lambda tmp: ("check", EXAMPLES / "project", "-o", tmp / "none"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_process_run_prints_and_exits_as_the_in_process_run(tmp_path: Path, case) -> None:
    (tmp_path / "bad.yaml").write_text(job_text("nodez: 2\nresources: {gpu: 2.5}\n"))
    process_tmp, inline_tmp = tmp_path / "process", tmp_path / "inline"
    process_tmp.mkdir()
    inline_tmp.mkdir()
    for folder in (process_tmp, inline_tmp):
        (folder / "bad.yaml").write_text((tmp_path / "bad.yaml").read_text())

    proc = _process(*case(process_tmp))
    inline = run_cli(*case(inline_tmp))

    assert proc.returncode == inline.exit_code
    assert proc.stdout.replace(str(process_tmp), "TMP") == inline.stdout.replace(str(inline_tmp), "TMP")
    assert proc.stderr.replace(str(process_tmp), "TMP") == inline.stderr.replace(str(inline_tmp), "TMP")
    assert _tree(process_tmp / "out") == _tree(inline_tmp / "out")


def test_help_is_printed_whole() -> None:
    proc = _process("--help")  # wrapped to the terminal's width, unlike CliRunner's fixed 80
    assert proc.returncode == 0
    assert proc.stdout.startswith("Usage: main [OPTIONS] COMMAND [ARGS]...")
    assert all(f"\n  {name} " in proc.stdout for name in ("build", "check", "render", "schema", "validate"))


def test_a_large_stream_is_flushed_whole(tmp_path: Path) -> None:
    from bench import specs

    src = specs.write(tmp_path / "src", 60)
    proc = _process("render", src)
    assert proc.returncode == 0
    assert proc.stdout == run_cli("render", src).stdout
    assert proc.stdout.count("\n---\n") > 200


def test_an_in_process_run_gets_the_garbage_collector_back() -> None:
    assert gc.isenabled()
    run = run_cli("validate", EXAMPLES / "project")
    assert run.exit_code == 0
    assert gc.isenabled()


def test_the_process_does_skip_the_shutdown(tmp_path: Path) -> None:
    """A module-level object's finalizer runs at interpreter shutdown, so only without it
    is the message missing."""
    entry = (
        "import sys\n"
        "class Probe:\n"
        "    def __del__(self): sys.stderr.write('shut down\\n')\n"
        "probe = Probe()\n"
        "sys.argv[0] = 'main'\n"
        "from compiler.cli.main import main\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", entry, "validate", str(EXAMPLES / "project")],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert proc.stderr == "train-compile: all specs are valid\n"
