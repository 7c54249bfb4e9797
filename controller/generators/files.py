"""The files the project generates into `controller/install/` (CRDs, admission policies): write
them, or with `--check` (CI, the tests) exit 1 naming every file that differs, so a stale
committed file fails loudly instead of shipping. One helper for every generator's CLI."""

from __future__ import annotations

import sys
from pathlib import Path

import click


def write_or_check(files: dict[str, str], output: Path, *, check: bool, command: str) -> None:
    """Write `files` (name -> text) into `output`, or check them; `command` regenerates them."""
    stale = []
    for name, text in files.items():
        path = output / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
            continue
        output.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if stale:
        click.echo(f"out of date (run {command}): " + ", ".join(stale), err=True)
        sys.exit(1)
