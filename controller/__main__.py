"""`train-controller` / `python -m controller`: run the slim controller until SIGTERM.

Flags mirror the upstream operator's where they exist (semantics §10) so manifests
translate one to one; `--frameworks` replaces `--enable-scheme`. High availability uses
controller-runtime's flag names (`--leader-elect`, `--leader-election-namespace`,
`--leader-election-id`, `--metrics-bind-address`, `--health-probe-bind-address`) and
kube-controller-manager's for the Lease timings. With `--leader-elect` the process
serves probes at once, waits for the Lease, and only then lists, watches and reconciles.
SIGTERM: stop taking keys, close the watches, finish in-flight reconciles, release the
Lease, exit 0. Losing the Lease exits 1 at once (another replica may already lead).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

from foundation.frameworks import ADAPTERS
from foundation.runs.stuck import STUCK_AFTER
from foundation.versions import CONTROLLER_DEPS, version_option
from schemas import durations

if TYPE_CHECKING:
    from controller.manager import Manager
    from controller.progress.certs import ServingCert
    from controller.progress.service import ProgressOptions
    from foundation.cluster.kube import Client
    from controller.runtime.leader import LeaderElector
    from controller.runtime.metrics import Metrics

# The controller's own modules (the kubernetes client, prometheus) are imported inside main():
# at module level they made `train-controller --help` take seconds (bench/README.md), mostly
# importing what --help never uses. The framework table is plain data (the adapters import no pydantic), so the help
# lists its names.
log = logging.getLogger("controller")
FRAMEWORKS_HELP = ", ".join(ADAPTERS)
SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def duration(value: str | float) -> float:
    """Seconds from a Go duration (`15s`, `1.5s`, `300ms`, `1m30s`) or a plain number (`schemas.durations.FLAG`)."""
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return durations.flag(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


UPSTREAM_INIT_TEMPLATE_FILE = Path("/etc/config/initContainer.yaml")  # upstream's default, read when present


def _init_template(flag: str | None) -> str | None:
    """The text of the PyTorch init container template: the flag's file (which must be there),
    else upstream's default path when it exists (as upstream), else None (the built-in one)."""
    path = Path(flag) if flag else UPSTREAM_INIT_TEMPLATE_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        if flag:
            raise click.BadParameter(f"cannot read {flag}: {exc.strerror}",
                                     param_hint="--pytorch-init-container-template-file") from None
        return None
    log.info("PyTorch init containers from the template %s", path)
    return text


def _bind(value: str, flag: str) -> tuple[str, int] | None:
    from controller.runtime.health import parse_bind_address

    try:
        return parse_bind_address(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=flag) from exc


def _lease_namespace(flag: str | None) -> str:
    """As controller-runtime: the flag, else the namespace we run in (in-cluster)."""
    if flag:
        return flag
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        return SA_NAMESPACE.read_text().strip()
    except OSError:
        raise click.BadParameter("not running in-cluster: give the namespace of the Lease",
                                 param_hint="--leader-election-namespace") from None


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120},
               epilog="Deploy it with the manifests in controller/install: "
                      "kubectl apply --server-side -k controller/install (see controller/README.md).")
@version_option("train-controller", CONTROLLER_DEPS)
@click.option("--kubeconfig", envvar="KUBECONFIG", default=None, help="Path to a kubeconfig (default: in-cluster, then ~/.kube/config).")
@click.option("--context", default=None, help="kubeconfig context to use.")
@click.option("--frameworks", "--enable-scheme", "frameworks", default="",
              help=f"Comma list of frameworks or kinds to manage ({FRAMEWORKS_HELP}); default all.")
@click.option("--namespace", envvar="KUBEFLOW_NAMESPACE", default=None, help="Watch one namespace only (default: all).")
@click.option("--workers", default=4, show_default=True, help="Concurrent reconciles.")
@click.option("--watch-timeout", default=300, show_default=True,
              help="Seconds after which the API server ends a watch (randomized up to 2x).")
@click.option("--pytorch-init-container-image", default="alpine:3.10", show_default=True,
              help="Image of the init container that waits for the master's Service (multi-node PyTorch).")
@click.option("--pytorch-init-container-max-tries", default=100, show_default=True,
              help="How often that init container looks up the master before it fails.")
@click.option("--pytorch-init-container-template-file", default=None,
              help=f"A YAML list of init containers for the pods that wait for the master, as upstream's: "
                   f"{{{{.MasterAddr}}}}, "
                   f"{{{{.InitContainerImage}}}} and {{{{.MaxTries}}}} are filled in (default: "
                   f"{UPSTREAM_INIT_TEMPLATE_FILE} if present, else the built-in template). A container that sets "
                   "no securityContext gets the restricted one (see --upstream-init-containers).")
@click.option("--mpi-kubectl-delivery-image", default="ghcr.io/kubeflow/training-v1/kubectl-delivery:latest",
              show_default=True, help="Image of the MPI launcher's init container that delivers kubectl.")
@click.option("--upstream-init-containers", is_flag=True,
              help="Add init-pytorch and kubectl-delivery exactly as the Training Operator does, without a "
                   "securityContext. Default: they run as user 65532 with runAsNonRoot, no privilege escalation, "
                   "all capabilities dropped and the RuntimeDefault seccomp profile, which Pod Security "
                   "'restricted' admits (the compiler's controller: train-controller).")
@click.option("--gang-scheduler-name", default="", show_default=True,
              help="Gang scheduling: 'volcano', or the schedulerName of a scheduler-plugins (coscheduling) scheduler; empty: off.")
@click.option("--pods-first/--no-pods-first", default=True, show_default=True,
              help="During a burst of pod creates, send the headless Services, plain status writes and Events once "
                   "it is over (pods sooner on a busy API server, figures in bench/README.md; those land up "
                   "to one burst later). "
                   "--no-pods-first: upstream's order, each pass's Services and status beside its pods.")
@click.option("--stuck-pod-threshold", "stuck_pod_threshold", default=durations.go(STUCK_AFTER), show_default=True,
              type=duration,
              help="How long a pod of a running job may wait for a reason it cannot get past without help (image "
                   "pull, config error, unschedulable, crash loop) before a Warning Event on the job says so; 0: never. "
                   "train-compile status calls a pod stuck after the same time.")
@click.option("--log-level", envvar="LOG_LEVEL", default="INFO", show_default=True,
              type=click.Choice(("DEBUG", "INFO", "WARNING", "ERROR"), case_sensitive=False),
              help="Log verbosity (also $LOG_LEVEL).")
@click.option("--leader-elect", is_flag=True, help="Hold a coordination.k8s.io Lease before reconciling (run 2 replicas).")
@click.option("--leader-election-namespace", default=None, help="Namespace of the Lease (default: the one we run in).")
@click.option("--leader-election-id", default="train-controller.trainforge.io", show_default=True, help="Name of the Lease.")
@click.option("--leader-elect-lease-duration", "lease_duration", default="15s", show_default=True, type=duration,
              help="How long a standby waits after the last renewal it saw before taking over.")
@click.option("--leader-elect-renew-deadline", "renew_deadline", default="10s", show_default=True, type=duration,
              help="How long the leader keeps trying to renew before it gives up (and exits).")
@click.option("--leader-elect-retry-period", "retry_period", default="2s", show_default=True, type=duration,
              help="Interval between attempts to acquire or renew.")
@click.option("--metrics-bind-address", default="0", show_default=True,
              help="host:port for Prometheus /metrics (':8080' all interfaces; '0' disables).")
@click.option("--health-probe-bind-address", default="0", show_default=True,
              help="host:port for /healthz and /readyz (':8081' all interfaces; '0' disables).")
@click.option("--progress-bind-address", default="0", show_default=True,
              help="host:port of the HTTPS endpoint where training pods report progress, ETA and metrics "
                   "(Kubeflow Trainer's protocol; ':10443' all interfaces; '0' disables). Stored in the job's "
                   "status.trainerStatus.")
@click.option("--progress-interval", "progress_interval", default="30s", show_default=True, type=duration,
              help="At most one progress write per job per this interval, whatever its pods send (later reports "
                   "within it are coalesced).")
@click.option("--progress-cert-dir", default="", show_default=True,
              help="Directory with tls.crt, tls.key (and ca.crt) for the progress endpoint; default: a CA and "
                   "certificate the controller keeps in the Secret train-controller-progress-certs of its namespace.")
def main(kubeconfig: str | None, context: str | None, frameworks: str, namespace: str | None, workers: int,
         watch_timeout: int, pytorch_init_container_image: str, pytorch_init_container_max_tries: int,
         pytorch_init_container_template_file: str | None, mpi_kubectl_delivery_image: str,
         upstream_init_containers: bool, log_level: str, leader_elect: bool, leader_election_namespace: str | None,
         leader_election_id: str, lease_duration: float, renew_deadline: float, retry_period: float,
         metrics_bind_address: str, health_probe_bind_address: str, gang_scheduler_name: str,
         pods_first: bool, stuck_pod_threshold: float, progress_bind_address: str, progress_interval: float,
         progress_cert_dir: str) -> None:
    """Reconcile kubeflow.org/v1 training jobs into pods and services, like the Training Operator."""
    from controller import preflight
    from controller.jobs import kinds as kind_table
    from controller.jobs.desired import Options, TemplateError, render_init_template
    from controller.jobs.gang import scheduler_for
    from controller.manager import Manager, connection_pool_size
    from foundation.cluster import errors
    from foundation.cluster.kube import Client
    from foundation.cluster.kubelib import LOAD_ERRORS
    from controller.runtime.leader import LeaderConfig, LeaderElector, default_identity
    from controller.runtime.metrics import Metrics

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        enabled = kind_table.select(frameworks)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--frameworks") from exc
    options = Options(
        pytorch_init_image=pytorch_init_container_image,
        pytorch_init_max_tries=pytorch_init_container_max_tries,
        mpi_kubectl_delivery_image=mpi_kubectl_delivery_image,
        pytorch_init_template=_init_template(pytorch_init_container_template_file),
        upstream_init_containers=upstream_init_containers,
    )
    if options.pytorch_init_template is not None:
        try:  # a template that cannot make a pod is refused now, not at the first multi-node job
            render_init_template(options.pytorch_init_template, master="job-master-0", options=options)
        except TemplateError as exc:
            raise click.BadParameter(str(exc), param_hint="--pytorch-init-container-template-file") from exc
    metrics_at = _bind(metrics_bind_address, "--metrics-bind-address")
    probes_at = _bind(health_probe_bind_address, "--health-probe-bind-address")
    progress_at = _bind(progress_bind_address, "--progress-bind-address")
    lease = None
    if leader_elect:
        try:
            lease = LeaderConfig(_lease_namespace(leader_election_namespace), leader_election_id, default_identity(),
                                 lease_duration=lease_duration, renew_deadline=renew_deadline, retry_period=retry_period)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--leader-elect-*") from exc
    try:
        client = Client.connect(kubeconfig, context=context,
                                pool_size=connection_pool_size(workers=workers, kinds=len(enabled), pods_first=pods_first))
    except LOAD_ERRORS as exc:  # no kubeconfig, a broken one, a failing exec plugin
        raise click.ClickException("cannot load the cluster config: " + " ".join(str(exc).split())) from exc
    try:
        preflight.check(client, enabled, scheduler_for(gang_scheduler_name), namespace)
    except preflight.MissingAPI as exc:
        client.close()
        raise click.ClickException(str(exc)) from exc
    except errors.ApiError as exc:  # unreachable or refused: the watches retry and say more
        log.warning("could not check which APIs are served (%s); starting anyway", exc)
    metrics = Metrics(process=True)
    client.observer = metrics.api_request
    cert = None
    if progress_at is not None:
        cert = _progress_cert(client, progress_cert_dir, leader_election_namespace)
    manager = Manager(client, enabled, namespace=namespace, workers=workers, options=options, watch_timeout=watch_timeout,
                      gang_scheduler_name=gang_scheduler_name, pods_first=pods_first,
                      metrics=metrics, stuck_after=stuck_pod_threshold,
                      progress=_progress_options(cert, progress_interval))
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    elector = None
    if lease is not None:
        elector = LeaderElector(client, lease, on_lost=_exit_lost,
                                on_change=lambda leading: metrics.leading(lease.name, leading))
        metrics.leading(lease.name, False)
    try:
        closers = _serve(metrics, manager, elector, stop, metrics_at=metrics_at, probes_at=probes_at)
        if progress_at is not None and cert is not None and manager.progress is not None:
            from controller.progress.server import serve as serve_progress

            server, bound = serve_progress(manager.progress.endpoint, progress_at, cert.context())
            log.info("serving progress reports on https://%s:%d", *bound)
            closers.append(server.shutdown)
    except OSError as exc:
        raise click.ClickException(f"cannot serve metrics, probes or progress: {exc}") from exc
    started = False
    try:
        if elector is not None:
            elector.start()
            if not elector.wait_leading(stop):
                return  # stopped while standing by: nothing to release
        started = True
        try:
            manager.start(abort=stop)
        except TimeoutError as exc:
            log.error("%s; giving up (and the Lease)", exc)
            raise SystemExit(1) from exc
        stop.wait()
    finally:
        if started:
            manager.stop()  # stop watches, finish in-flight reconciles ...
        if elector is not None:
            elector.stop(release=True)  # ... and only then let a standby take over
        for close in closers:
            close()
        client.close()


def _serve(metrics: Metrics, manager: Manager, elector: LeaderElector | None, stop: threading.Event, *,
           metrics_at: tuple[str, int] | None, probes_at: tuple[str, int] | None) -> list[Callable[[], None]]:
    """Start the metrics and probe servers; returns how to close them."""
    from controller.runtime.health import Probes, serve_metrics

    closers: list[Callable[[], None]] = []
    if metrics_at is not None:
        server = serve_metrics(metrics_at, metrics.registry)[0]
        closers.append(server.shutdown)
    if probes_at is not None:
        def ready() -> bool:
            if stop.is_set():
                return False
            if elector is not None and not elector.is_leader:
                return True  # a standby is ready: it is waiting for the Lease as it should
            return manager.ready()

        probes = Probes(healthz={"ping": lambda: True, "leader-election": lambda: elector is None or elector.healthy()},
                        readyz={"ping": lambda: True, "informers-synced-or-standby": ready})
        probes.serve(probes_at)
        closers.append(probes.close)
    return closers


def _progress_cert(client: Client, cert_dir: str, lease_namespace: str | None) -> ServingCert:
    """The progress endpoint's certificate: the directory's, else the self-managed Secret's."""
    from controller.progress import certs
    from foundation.cluster import errors

    if cert_dir:
        found = certs.from_dir(Path(cert_dir))
        if found is None:
            raise click.BadParameter(f"{cert_dir} has no tls.crt and tls.key", param_hint="--progress-cert-dir")
        return found
    try:
        own = _lease_namespace(lease_namespace)
    except click.BadParameter:
        raise click.BadParameter("not running in-cluster: give --progress-cert-dir, or the namespace of the "
                                 "certificate Secret with --leader-election-namespace", param_hint="--progress-cert-dir") from None
    try:
        return certs.self_managed(client, own)
    except errors.ApiError as exc:
        raise click.ClickException(f"cannot read or create the progress certificate Secret: {exc}") from exc


def _progress_options(cert: ServingCert | None, interval: float) -> ProgressOptions | None:
    from controller.progress.service import ProgressOptions

    return None if cert is None else ProgressOptions(interval=interval, ca_pem=cert.ca_pem)


def _exit_lost() -> None:
    """client-go's OnStoppedLeading: another replica may lead already, so stop now,
    without finishing anything (no in-flight write may land under the new leader)."""
    log.error("leader election lost; exiting")
    logging.shutdown()
    os._exit(1)


if __name__ == "__main__":
    main()
