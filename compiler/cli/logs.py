"""`train-compile logs JOB|SPEC`: a job's pod logs through the API server (`pods/log`).

JOB is `namespace/name` or `name` (in `--namespace`, else the kubeconfig context's); its
kind is found by reading each kind trainforge writes. SPEC is a spec file or folder: it
is compiled offline (bad specs: the usual diagnostics, exit 1) and its jobs are read.
`--replica` and `--index` narrow the pods, `--container` picks another container than
the program's, `--tail N` keeps each log's last N lines.

Without `--follow` each selected pod's log is printed once, pod after pod in replica
order; a pod whose container never started says why on stderr (exit 1 when no pod had
a log). With `--follow` (`compiler.cli.live.follow`) the job and its pods are waited for,
every pod is followed at once, and the command ends when the jobs have finished. Lines
carry a `[pod] ` prefix when several pods can show up. Read-only, like `status`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

import click

from compiler.cli.common import compile_or_usage_error, report
from compiler.cli.live.logsource import Refused
from compiler.cli.live.options import (
    cluster_failed,
    connect,
    context_option,
    env_option,
    kubeconfig_option,
    one_environment,
    specs_or_exit,
)

if TYPE_CHECKING:
    from compiler.cli.cluster import Reader
    from compiler.cli.live.logsource import JobRef, Pick


@click.command()
@click.argument("target", metavar="JOB|SPEC")
@env_option
@click.option("-n", "--namespace", default=None,
              help="JOB's namespace [default: the project's, from the trainforge.yaml around the working folder; "
                   "outside a project the kubeconfig context's].")
@click.option("--replica", default=None, metavar="TYPE", help="Only this replica type, in any case (a TrainJob's: one of its replicated jobs).")
@click.option("--index", type=click.IntRange(min=0), default=None, help="Only the pod of this index.")
@click.option("-c", "--container", default=None, help="Another container than the program's.")
@click.option("-f", "--follow", is_flag=True, help="Wait for the pods and follow every one until the job ends.")
@click.option("--tail", type=click.IntRange(min=0), default=None, metavar="N", help="Only each log's last N lines.")
@kubeconfig_option
@context_option
def logs(target: str, env: Optional[str], namespace: Optional[str], replica: Optional[str], index: Optional[int],
         container: Optional[str], follow: bool, tail: Optional[int], kubeconfig: Optional[str],
         context: Optional[str]) -> None:
    """Print the logs of a job's pods (JOB: [namespace/]name; SPEC: a spec file or folder)."""
    from compiler.cli import cluster
    from compiler.cli.live.logsource import Pick

    pick = Pick(replica, index, container)
    path = Path(target)
    if not path.exists() and _looks_like_a_path(target):
        click.echo(f"train-compile: no spec file or folder {target}; give JOB as [namespace/]name, or an existing "
                   "spec file or folder", err=True)
        sys.exit(1)
    specs = _spec_refs(path, env) if path.exists() else None
    chosen = (namespace, "-n") if namespace else (None, "")
    if specs is None and namespace is None and "/" not in target:
        chosen = _project_namespace(env)
    with connect(kubeconfig, context, pool_size=16) as reader:
        try:
            refs = specs if specs is not None else [_job_ref(reader, target, namespace=chosen, wait=follow)]
            code = (_follow if follow else _print)(reader, refs, pick=pick, tail=tail)
        except cluster.ClusterError as exc:
            cluster_failed(exc)
        except Refused as exc:
            click.echo(f"train-compile: {exc}", err=True)
            code = 1
        except KeyboardInterrupt:
            code = 130
    sys.exit(code)


def _looks_like_a_path(target: str) -> bool:
    """A JOB is `[namespace/]name`; more slashes, a leading `.` or `/`, or a YAML suffix is a path."""
    return (target.count("/") > 1 or target.startswith((".", "/", "~"))
            or target.endswith((".yaml", ".yml", ".json")))


def _project_namespace(env: Optional[str]) -> tuple[Optional[str], str]:
    """The namespace of the project around the working folder (its environment's, else its
    defaults') and where it comes from; None outside a project (then the kubeconfig context's,
    as kubectl's)."""
    from compiler.reading.sources import project_file_for
    from schemas.loader import load_file
    from schemas.project import Project

    found = project_file_for(Path.cwd())
    if not found.is_file():  # a project in a folder of the repository: the one below, if one
        below = sorted(Path.cwd().glob(f"*/{found.name}"))
        if len(below) != 1:
            return None, ""
        found = below[0]
    docs, problems = load_file(found)
    try:
        project = Project.model_validate(docs[0].data) if docs and not problems else None
    except ValueError:
        project = None
    if project is None:
        return None, ""
    names = [env] if env else project.environment_names()
    own = {project.environment(n).namespace or project.defaults.namespace for n in names}
    chosen = own.pop() if len(own) == 1 and None not in own else project.defaults.namespace
    return chosen, f"the project's, {os.path.relpath(found)}" if chosen else ""


def _refused(reader: "Reader", ref: "JobRef", job: dict[str, Any], pods: list[dict[str, Any]], pick: "Pick") -> None:
    """Refuse (exit 1) a selection the job can never have; the run's record, when train-controller
    keeps one, says how many pods the run has (a change of replicas may be held for the next run)."""
    from compiler.cli import cluster
    from compiler.cli.live.logsource import refusal
    from foundation.runs.current import current
    from foundation.cluster.resource import CONTROLLERREVISIONS
    from foundation.runs.record import record_of

    shown = job
    if any(record_of(p) for p in pods):
        try:
            records = reader.list(CONTROLLERREVISIONS, namespace=ref.namespace, label_selector=ref.selector) or []
        except cluster.ClusterForbidden:
            records = []
        data = current(job, pods, records).data
        if data is not None:
            shown = {**job, "spec": data["spec"]}
    facts = {"replica_types": _replica_types(ref.kind.kind), "replica_specs": _replica_specs(ref.kind.kind),
             "pods": pods, "labels": ref.labels}
    refused = refusal(shown, pick, **facts)
    if refused and shown is not job and refusal(job, pick, **facts) != refused:
        refused += " in its run (the job object's change of replicas is held for its next run)"
    if refused:
        raise Refused(refused)


def _spec_refs(path: Path, env: Optional[str]) -> list[Callable[[], Optional["JobRef"]]]:
    from compiler.cli.live.logsource import JobRef
    from compiler.cli.live.specs import kind_of, spec_jobs

    result = compile_or_usage_error((path,), env)
    report(result, "text")
    specs_or_exit(result)
    jobs = spec_jobs(result, one_environment(result, env))
    return [(lambda ref=JobRef(s.namespace, s.name, kind_of(s.api_version, s.kind)): ref) for s in jobs]


def _job_ref(reader: "Reader", target: str, *, namespace: tuple[Optional[str], str],
             wait: bool) -> Callable[[], Optional["JobRef"]]:
    """JOB as a job of whichever kind the cluster has by that name (looked up until found), in
    the namespace JOB names, else `namespace` (the value, and where it came from)."""
    from compiler.cli.live.logsource import JobRef
    from compiler.cli.live.specs import job_kinds

    ns, _, name = target.rpartition("/")
    origin = "" if ns else namespace[1] or "the kubeconfig context's"
    ns = ns or namespace[0] or reader.namespace
    known: list[JobRef] = []

    def resolve() -> Optional[JobRef]:
        if not known:
            kind = next((k for k in job_kinds() if reader.get(k, ns, name) is not None), None)
            if kind is not None:
                known.append(JobRef(ns, name, kind))
        return known[0] if known else None

    if not wait and resolve() is None:
        kinds = ", ".join(k.kind for k in job_kinds())
        where = f"; the namespace is {origin}" if origin else ""
        click.echo(f"train-compile: no job {ns}/{name} in the cluster at {reader.server} (read {kinds}{where}); "
                   "pass namespace/name, or a spec file", err=True)
        sys.exit(1)
    return resolve


def _print(reader: "Reader", refs: list[Callable[[], Optional["JobRef"]]], *, pick: "Pick", tail: Optional[int]) -> int:
    from compiler.cli import cluster
    from compiler.cli.live.logsource import Lines, instance
    from compiler.cli.live.pods import pod_view
    from foundation.runs.state import job_state

    chosen: list[tuple[Any, JobRef, dict[str, Any]]] = []
    for resolve in refs:
        ref = resolve()
        job = reader.get(ref.kind, ref.namespace, ref.name) if ref else None
        if ref is None or job is None:
            if ref is not None:
                click.echo(f"train-compile: no live job {ref.namespace}/{ref.name}; --follow waits for it", err=True)
            continue
        types = _replica_types(ref.kind.kind)
        order = {rt.lower(): i for i, rt in enumerate(types)}
        every = reader.list(cluster.PODS, namespace=ref.namespace, label_selector=ref.selector) or []
        _refused(reader, ref, job, every, pick)
        pods = [p for p in every if pick.wants(p, ref.labels)]
        if not pods:
            click.echo(f"train-compile: {ref.namespace}/{ref.name} ({job_state(job).state}) has no pods"
                       f"{' of that selection' if pick.replica or pick.index is not None else ''} yet; "
                       "--follow waits for them", err=True)
        for pod in pods:
            view = pod_view(pod, ref.labels, replica_types=types)
            chosen.append(((order.get(view.replica.lower(), len(order)), view.replica, view.index or 0, view.name),
                           ref, pod))
    printed = 0
    for _, ref, pod in sorted(chosen, key=lambda c: c[0]):
        name, container = pod["metadata"]["name"], pick.container_of(pod, ref.kind.kind)
        if instance(pod, container) is None:
            view = pod_view(pod, ref.labels)
            why = f"{view.reason}: {view.message}" if view.reason else view.phase
            click.echo(f"train-compile: {name} has no log yet ({container} has not started): {why}", err=True)
            continue
        lines = Lines(f"[{name}] " if len(chosen) > 1 else "", sys.stdout.write)
        for chunk in reader.stream(cluster.PODS, ref.namespace, name, sub="log",
                                   query={"container": container, "tailLines": tail}):
            lines.feed(chunk)
        lines.close()
        printed += 1
    return 0 if printed else 1


def _follow(reader: "Reader", refs: list[Callable[[], Optional["JobRef"]]], *, pick: "Pick",
            tail: Optional[int]) -> int:
    from compiler.cli.live.follow import Follower, stdout_write
    from compiler.cli.live.logsource import expected_pods

    def several(found: list[tuple[JobRef, Optional[dict[str, Any]]]]) -> bool:
        counts = [expected_pods(job, pick, replica_specs=_replica_specs(ref.kind.kind)) for ref, job in found]
        return None in counts or sum(c or 0 for c in counts) != 1

    Follower(reader, refs, pick=pick, tail=tail, prefix=several, write=stdout_write,
             note=lambda text: click.echo(f"train-compile: {text}", err=True),
             check=lambda ref, job, pods: _refused(reader, ref, job, pods, pick)).run()
    return 0


def _replica_types(kind: str) -> tuple[str, ...]:
    from foundation.frameworks import BY_KIND

    adapter = BY_KIND.get(kind)
    return adapter.facts.replica_types if adapter else ()


def _replica_specs(kind: str) -> Optional[str]:
    from foundation.frameworks import BY_KIND

    adapter = BY_KIND.get(kind)
    return adapter.facts.replica_specs if adapter else None
