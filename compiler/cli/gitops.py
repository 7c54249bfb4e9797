"""`train-compile argocd` and `train-compile flux`: the GitOps objects for a repository.

Both read the same sources as `build` (the project file decides the environments; an
invalid spec fails the run with the usual diagnostics) and write a small folder of YAML
to commit next to the compiled tree. `register(main)` adds the commands to the
`train-compile` group; it runs at import time of `compiler.cli.main`, so only `click` and
`compiler.diagnostics` (two standard-library imports) are loaded here and everything
else is imported inside the commands, keeping `train-compile --help` fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import click

from compiler.cli.common import (
    compile_or_usage_error,
    fail_if_invalid,
    report,
    sources_argument,
)

if TYPE_CHECKING:
    from compiler.pipeline import Result

_out = click.option(
    "-o", "--output", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
    help="Folder to write the generated objects into.",
)
_env = click.option("--env", "env", default=None, help="Only this environment.")
_prefix = click.option("--prefix", default="trainforge", show_default=True,
                       help="Name prefix of the generated objects (<prefix>-<env>).")


def _compile(sources: tuple[Path, ...], env: Optional[str]) -> "Result":
    """Compile valid sources without lowering (diagnostics printed; an invalid spec ends the run)."""
    result = compile_or_usage_error(sources, env, lower_jobs=False)
    report(result, "text")
    fail_if_invalid(result)
    return result


def _environments(result: "Result") -> dict[str, str]:
    """Each environment to compile -> the namespace its jobs land in when they name none."""
    from compiler.reading.resolve import DEFAULT_NAMESPACE

    project = result.project
    return {name: project.environment(name).namespace or project.defaults.namespace or DEFAULT_NAMESPACE
            for name in result.environments}


def _write(out: Path, files: dict[str, str], *, owned: tuple[str, ...]) -> None:
    """Write `files` under `out`; drop stale YAML only inside the folders we own."""
    for folder in owned:
        for old in sorted((out / folder).glob("*.yaml")) if (out / folder).is_dir() else []:
            if str(old.relative_to(out)) not in files:
                old.unlink()
    for rel, text in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        click.echo(f"train-compile: wrote {path}", err=True)


def _origin_url() -> Optional[str]:
    import subprocess

    try:
        proc = subprocess.run(["git", "config", "--get", "remote.origin.url"],
                              capture_output=True, text=True, check=False)
    except OSError:
        return None
    return proc.stdout.strip() or None


@click.command()
@sources_argument
@_out
@_env
@click.option("--repo-url", default=None, help="Git repository Argo CD reads [default: remote.origin.url].")
@click.option("--path", "repo_path", required=True,
              help="Repo-relative folder: the build output (kustomize source) or the TrainJob sources (plugin).")
@click.option("--revision", default="HEAD", show_default=True, help="Branch, tag or commit to sync.")
@click.option("--source", "source", type=click.Choice(("kustomize", "plugin")), default="kustomize",
              show_default=True, help="Committed kustomize tree, or the Config Management Plugin.")
@click.option("--cmp-image", default=None, help="Sidecar image with train-compile (plugin source).")
@click.option("--appset", is_flag=True, help="One ApplicationSet instead of one Application per environment.")
@click.option("--project", default="default", show_default=True, help="Argo CD project.")
@click.option("--server", default="https://kubernetes.default.svc", show_default=True,
              help="Destination cluster API server.")
@click.option("--namespace", default="argocd", show_default=True, help="Namespace Argo CD runs in.")
@click.option("--self-heal", is_flag=True,
              help="Re-create jobs deleted in the cluster (they run again); off by default.")
@_prefix
def argocd(sources: tuple[Path, ...], out: Path, env: Optional[str], repo_url: Optional[str],
           repo_path: str, revision: str, source: str, cmp_image: Optional[str], appset: bool,
           project: str, server: str, namespace: str, self_heal: bool, prefix: str) -> None:
    """Argo CD Applications per environment, health checks and the plugin, into OUT."""
    from compiler.gitops import argocd as gen

    envs = _environments(_compile(sources, env))
    repo_url = repo_url or _origin_url()
    if not repo_url:
        raise click.UsageError("no --repo-url given and no git remote 'origin' to take it from")
    if source == "plugin" and not cmp_image:
        raise click.UsageError("--source plugin needs --cmp-image (an image with train-compile installed)")
    target = gen.Target(repo_url=repo_url, path=repo_path, revision=revision, source=source,
                        project=project, server=server, namespace=namespace, prefix=prefix,
                        self_heal=self_heal, namespaces=tuple(envs.items()))
    _write(out, gen.files(target, list(envs), appset=appset, cmp_image=cmp_image),
           owned=("applications", "install"))


@click.command()
@sources_argument
@_out
@_env
@click.option("--path", "repo_path", required=True, help="Repo-relative folder of the build output.")
@click.option("--source-kind", default="GitRepository", show_default=True, help="Kind of the Flux source.")
@click.option("--source-name", default="flux-system", show_default=True, help="Name of the Flux source.")
@click.option("--namespace", default="flux-system", show_default=True, help="Namespace of the Kustomizations.")
@click.option("--interval", default="10m", show_default=True, help="Reconcile interval.")
@click.option("--timeout", default="5m", show_default=True, help="How long one reconciliation waits for health.")
@click.option("--create-only/--apply-updates", default=False, show_default=True,
              help="Create jobs and never update them (ssa: IfNotPresent) instead of applying git's changes "
                   "with Kueue's fields ignored (.spec.ignore, kustomize-controller >= 1.9).")
@_prefix
def flux(sources: tuple[Path, ...], out: Path, env: Optional[str], repo_path: str, source_kind: str,
         source_name: str, namespace: str, interval: str, timeout: str, create_only: bool,
         prefix: str) -> None:
    """Flux Kustomizations per environment with health checks for the job kinds, into OUT."""
    from compiler.gitops import flux as gen

    result = _compile(sources, env)
    envs = result.environments
    target = gen.Target(path=repo_path, source_kind=source_kind, source_name=source_name,
                        namespace=namespace, prefix=prefix, interval=interval, timeout=timeout,
                        create_only=create_only)
    _write(out, gen.files(target, envs, runtimes=gen.job_runtimes(result.project, envs)), owned=(".",))


def register(main: click.Group) -> None:
    main.add_command(argocd)
    main.add_command(flux)
