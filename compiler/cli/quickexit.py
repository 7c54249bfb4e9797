"""Ending a `train-compile` process without tearing the interpreter down.

A run is over when its command returns: every output file is written and closed
(`compiler.emit.tree`), and whatever is left to print sits in `sys.stdout`/`sys.stderr`.
Python's shutdown would then free every module and object one by one and run a last garbage
collection over them, a share of a small build's time that grows with the build (pydantic,
click and PyYAML are large; bench/README.md, "Figures the compiler's code cites"). So when
`train-compile` is the process's own command line (the console script or `python -m
compiler.cli.main`: click reads `sys.argv`, standalone), the group flushes both streams and
leaves through `os._exit` with click's exit code, as large Python services do to skip the
final collection.

Anything that could make skipping the shutdown visible takes the normal way out: a
caller that passes its own arguments or runs click outside standalone mode (tests,
`CliRunner`, in-process use), an exit status that is not a number, a stream that cannot
be flushed, exit handlers registered with `atexit`, or another thread still running. (A
program that calls `main()` bare and catches its SystemExit to go on would be ended:
it passes `sys.argv[1:]` instead.)
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any, Optional, Sequence

import click

_own_process = False
_kept: list[Any] = []


def own_process() -> bool:
    """Whether this run ends the process (then nothing needs restoring afterwards)."""
    return _own_process


def keep(value: Any) -> None:
    """Hold `value` to the end when this run ends the process: the kernel takes the
    memory back at once, where freeing a build's objects one by one takes time in
    proportion to the specs (bench/README.md). In-process runs free it as usual."""
    if _own_process:
        _kept.append(value)


class QuickExitGroup(click.Group):
    """A click group whose standalone, `sys.argv` runs end with `os._exit`."""

    def main(  # type: ignore[override]
        self,
        args: Optional[Sequence[str]] = None,
        prog_name: Optional[str] = None,
        complete_var: Optional[str] = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        global _own_process
        if args is not None or not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        _own_process = True
        try:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        except SystemExit as exc:
            _exit_now(exc)  # returns only when the normal way out is needed
            raise


def _exit_now(exc: SystemExit) -> None:
    code = 0 if exc.code is None else exc.code
    if not isinstance(code, int) or _exit_handlers() or _other_threads():
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):  # let Python report it at shutdown, as it always has
        return
    os._exit(code)


def _exit_handlers() -> int:
    # CPython's own count; an interpreter without it is assumed to have handlers
    return getattr(atexit, "_ncallbacks", lambda: 1)()


def _other_threads() -> bool:
    threading = sys.modules.get("threading")
    return threading is not None and threading.active_count() > 1
