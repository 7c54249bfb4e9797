"""What `status` and `logs` share on the command line: where the cluster is, which
environment it runs, and the one way a cluster problem ends a run (one line, exit 1).

Only `click` is imported here (the commands register when `train-compile` starts); the
reader is imported when a command connects.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, NoReturn, Optional

import click

if TYPE_CHECKING:
    from compiler.cli.cluster import Reader
    from compiler.pipeline import Result

kubeconfig_option = click.option(
    "--kubeconfig", default=None, metavar="PATH",
    help="The kubeconfig to read [default: $KUBECONFIG, else ~/.kube/config, else the pod's service account].")
context_option = click.option("--context", default=None, help="The kubeconfig context [default: its current one].")
env_option = click.option("--env", "env", default=None,
                          help="The environment this cluster runs (needed when the project declares several).")


def connect(kubeconfig: Optional[str], context: Optional[str], *, pool_size: int = 4) -> "Reader":
    from compiler.cli import cluster

    try:
        return cluster.connect(kubeconfig, context=context, pool_size=pool_size)
    except cluster.ClusterError as exc:
        cluster_failed(exc)


def cluster_failed(exc: Exception) -> NoReturn:
    click.echo(f"train-compile: {exc}", err=True)
    sys.exit(1)


def one_environment(result: "Result", env: Optional[str]) -> str:
    """The environment to read: a cluster runs one, so a project with several needs --env."""
    if env is not None:
        return env
    if len(result.environments) > 1:
        names = ", ".join(result.environments)
        raise click.UsageError(f"the project has {len(result.environments)} environments ({names}) and a cluster "
                               f"runs one of them; pass --env NAME, e.g. --env {result.environments[0]}")
    return result.environments[0]


def specs_or_exit(result: "Result") -> None:
    """Bad specs: their diagnostics (already printed) and exit 1, before any cluster read."""
    if not result.ok:
        errors = sum(1 for d in result.diagnostics if d.severity == "error")
        click.echo(f"train-compile: {errors} error(s) in the specs; the cluster was not read", err=True)
        sys.exit(1)
