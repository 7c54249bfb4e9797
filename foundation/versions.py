"""`--version` for both commands: the package's version and those of the libraries whose
behaviour a bug report depends on (the controller and the compiler each name their own).

Read from the installed distributions' metadata (importlib.metadata), not by importing
the libraries, and only when `--version` is given, so the CLIs' start-up stays as small as
tests/compiler/cli/test_cli_startup.py pins it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

COMPILER_DEPS = ("pydantic", "ruamel.yaml", "click", "jsonschema", "jsonpatch", "PyYAML")
CONTROLLER_DEPS = ("pydantic", "kubernetes", "orjson", "urllib3", "click", "prometheus-client")


def report(prog: str, deps: Sequence[str]) -> str:
    """`prog <version>`, then one `name version` line per dependency and Python's version."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    def installed(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "not installed"

    lines = [f"{prog} {installed('trainforge')}"]
    lines += [f"  {dist} {installed(dist)}" for dist in deps]
    lines.append(f"  python {platform.python_version()} ({platform.system().lower()}-{platform.machine()})")
    return "\n".join(lines)


def version_option(prog: str, deps: Sequence[str]) -> Any:
    """A click `--version` option printing `report(prog, deps)`."""
    def show(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        if value and not ctx.resilient_parsing:
            click.echo(report(prog, deps))
            ctx.exit()

    return click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=show,
                        help="Show the version, the key libraries' versions, and exit.")
