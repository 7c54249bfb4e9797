"""Kubeflow Trainer v2.3.0 and JobSet v0.12.0 as one part of the test world (``trainer``), TrainJobStatus on.

Why it is shaped so: the trainer-v2 target's TrainJobs only mean something when the real
Trainer admits them (its mutating and validating webhooks), turns them into a JobSet,
JobSet into batch/v1 Jobs (kube-controller-manager's ``job-controller``, see
``controller_manager``) and those into pods kwok runs. Both controller managers are Go
binaries built from the module proxy (``gobuild``): Trainer with ``go install`` (no
replace directives, Go 1.26); JobSet through a wrapper module requiring
``sigs.k8s.io/jobset v0.12.0`` (the version Trainer v2.3.0's go.mod requires), since the
proxy serves that version but refuses to list the module's versions, which ``go install
...@v0.12.0`` needs. Each build copies what starting needs from the module into the
cache: the CRDs, the webhook kustomizations and Trainer's stock ClusterTrainingRuntimes
(``manifests/``), so a warm start runs no ``go``.

Running against the world's API server (admin kubeconfig, so no RBAC to install): each
manager gets a config file with leader election off, its own certificate management
off, metrics off (``bindAddress: "0"``), health probes and the webhook server on free
127.0.0.1 ports. The webhook servers present a certificate signed by the world's CA
(``testworld.webhooks``): JobSet reads it from the ``certDir`` of its config, Trainer
from controller-runtime's default dir under ``$TMPDIR`` (its config has no cert dir),
so ``TMPDIR`` points into the world's dir. The webhook configurations are the modules'
own, rendered by ``kubectl kustomize`` (JobSet's pod webhooks keep their objectSelector
on the JobSet label, so no other pod reaches them) and rewritten to ``clientConfig.url``
+ ``caBundle`` with 30 s timeouts; JobSet's generic names get a ``jobset-`` prefix.

The ``TrainJobStatus`` feature gate is on, so pods report progress to the Trainer's status
server (``trainer.status_port`` on all interfaces; what it needs: ``status_server_inputs``).

Start order: CRDs, JobSet (ready when a server-side dry run of a JobSet passes its
webhooks), Trainer, the stock runtimes (their validating webhook is Trainer's, so they
are applied once it serves), then a dry-run TrainJob that must come back with the
``runtimePatches[].time`` the mutating webhook stamps. Logs: ``<world dir>/jobset.log``,
``trainer.log``.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import gobuild, webhooks
from .composite import Composite
from .controlplane import KubectlError
from .flux import install_crds
from .part import LOOPBACK, ProcessPart, free_port, http_ok

if TYPE_CHECKING:
    from .world import World

TRAINER_VERSION = "v2.3.0"
JOBSET_VERSION = "v0.12.0"  # what Trainer v2.3.0's go.mod requires
TRAINER_MODULE = "github.com/kubeflow/trainer/v2"
JOBSET_MODULE = "sigs.k8s.io/jobset"
PROBE = "testworld-webhook-probe"

# Module folders copied into the cache beside the binary, under manifests/.
TRAINER_CRDS, TRAINER_WEBHOOK, RUNTIMES = "manifests/base/crds", "manifests/base/webhook", "manifests/base/runtimes"
JOBSET_CRDS, JOBSET_WEBHOOK = "config/components/crd/bases", "config/components/webhook"


def _copy_manifests(entry: gobuild.Build, work: Path, out: Path, env: dict[str, str], dirs: tuple[str, ...]) -> None:
    info = gobuild.module_info(entry.module, entry.version, work, env, gobuild.build_log(work))
    for rel in dirs:
        src = Path(info["Dir"]) / rel
        if not src.is_dir():
            raise gobuild.BuildError(f"{entry.module}@{entry.version} has no {rel}/")
        shutil.copytree(src, out / "manifests" / rel)
    for path in (out / "manifests").rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)  # copies of the read-only module cache


def _trainer(entry: gobuild.Build, work: Path, out: Path, env: dict[str, str]) -> None:
    gobuild.RECIPES["install"](entry, work, out, env)
    _copy_manifests(entry, work, out, env, (TRAINER_CRDS, TRAINER_WEBHOOK, RUNTIMES))


def _jobset(entry: gobuild.Build, work: Path, out: Path, env: dict[str, str]) -> None:
    gobuild.RECIPES["wrapper"](entry, work, out, env)
    _copy_manifests(entry, work, out, env, (JOBSET_CRDS, JOBSET_WEBHOOK))


TRAINER = gobuild.register(gobuild.Build(
    "trainer", TRAINER_MODULE, TRAINER_VERSION, (f"{TRAINER_MODULE}/cmd/trainer-controller-manager",),
    smoke=("--help",), gcflags=gobuild.UNOPTIMIZED, cold="8 min 41 s measured at load ~14, after jobset (shared modules warm)", custom=_trainer))
JOBSET = gobuild.register(gobuild.Build(
    "jobset", JOBSET_MODULE, JOBSET_VERSION, (JOBSET_MODULE,), recipe="wrapper",
    smoke=("--help",), gcflags=gobuild.UNOPTIMIZED, cold="11 min 50 s measured at load ~14 with cold modules", custom=_jobset))


def manifests(entry: gobuild.Build, rel: str) -> Path:
    return gobuild.build(entry) / "manifests" / rel


class _Manager(ProcessPart):
    """One controller manager run from a config file, its webhook server on loopback."""

    start_timeout = 180.0

    def __init__(self, name: str, entry: gobuild.Build, cert_dir: str) -> None:
        super().__init__()
        self.name, self.builds, self.entry = name, (entry.name,), entry
        self.cert_dir = cert_dir  # relative to the world's dir
        self.port = self.health = 0

    def config(self, world: World) -> dict[str, Any]:
        raise NotImplementedError

    def before(self, world: World) -> None:
        """Ports and certificates, once: the webhook configurations name them before the start."""
        if not self.port:
            self.port, self.health = free_port(), free_port()
            webhooks.serving_certs(world, world.dir / self.cert_dir)

    def argv(self, world: World) -> list[str]:
        path = world.dir / f"{self.name}-config.json"
        path.write_text(json.dumps(self.config(world), indent=2))  # JSON is YAML
        return [self.binary(self.entry.name), f"--config={path}", *self.flags()]

    def flags(self) -> list[str]:
        return []

    def env(self, world: World) -> dict[str, str]:
        tmp = world.dir / f"{self.name}-tmp"
        tmp.mkdir(exist_ok=True)
        return {"KUBECONFIG": str(world.kubeconfig), "TMPDIR": str(tmp)}

    def ready(self) -> bool:
        return http_ok(f"http://{LOOPBACK}:{self.health}/readyz")


class _JobSet(_Manager):
    def __init__(self) -> None:
        super().__init__("jobset", JOBSET, "jobset-certs")

    def config(self, world: World) -> dict[str, Any]:
        certs = str(world.dir / self.cert_dir)
        return {"apiVersion": "config.jobset.x-k8s.io/v1alpha1", "kind": "Configuration",
                "leaderElection": {"leaderElect": False}, "internalCertManagement": {"enable": False},
                "webhook": {"host": LOOPBACK, "port": self.port, "certDir": certs},
                "health": {"healthProbeBindAddress": f"{LOOPBACK}:{self.health}"},
                "metrics": {"bindAddress": "0", "certDir": certs}}

    def flags(self) -> list[str]:
        return ["--metrics-bind-address=0"]  # the flag wins over the config's default ":8443"


class _Trainer(_Manager):
    def __init__(self) -> None:
        # controller-runtime's default cert dir: $TMPDIR/k8s-webhook-server/serving-certs
        super().__init__("trainer", TRAINER, "trainer-tmp/k8s-webhook-server/serving-certs")
        self.status_port = 0

    def config(self, world: World) -> dict[str, Any]:
        return {"apiVersion": "config.trainer.kubeflow.org/v1alpha1", "kind": "Configuration",
                "health": {"healthProbeBindAddress": f"{LOOPBACK}:{self.health}",
                           "readinessEndpointName": "readyz", "livenessEndpointName": "healthz"},
                "metrics": {"bindAddress": "0"},
                "webhook": {"host": LOOPBACK, "port": self.port},
                "leaderElection": {"leaderElect": False},
                "certManagement": {"enable": False},
                "featureGates": {STATUS_GATE: True},
                "statusServer": {"port": self.status_port}}

    def before(self, world: World) -> None:
        first = not self.port
        super().before(world)
        if first:
            self.status_port = free_port()
            status_server_inputs(world)

    def argv(self, world: World) -> list[str]:
        """In a mount namespace of its own: the status server reads two paths it hard-codes
        (see ``status_server_inputs``), each bind-mounted from the world's dir."""
        argv = super().argv(world)
        certs, account = world.dir / self.cert_dir, world.dir / SA_DIR
        FIXED_CERT_DIR.mkdir(parents=True, exist_ok=True)  # a mount point, empty outside (as testworld.upstream's)
        # The account's folder must not exist outside: the Kubeflow SDK (and other clients) take
        # /var/run/secrets/kubernetes.io/serviceaccount for being in a pod. So inside the namespace
        # a tmpfs covers /run (the Trainer uses nothing there) and the folder is made in it.
        script = (f'mount --bind "$0" {FIXED_CERT_DIR} && mount -t tmpfs tmpfs /run && mkdir -p {FIXED_SA_DIR} '
                  f'&& mount --bind "$1" {FIXED_SA_DIR} && shift && exec "$@"')
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(certs), str(account), *argv]


# TrainJobStatus (the progress endpoint, issue 49) is on. Its status server, unlike the webhook
# server, takes its certificate from a fixed /tmp/k8s-webhook-server/serving-certs, finds the
# token issuer (for OIDC discovery of the keys it verifies tokens with) and its own namespace
# in the in-cluster ServiceAccount files, and copies the CA for each TrainJob's pods from the
# Secret kubeflow-trainer-webhook-cert of that namespace. So the world gives it a token the
# API server issued (a ServiceAccount of the Trainer's namespace), the namespace's name, the
# webhook's certificate (which names 127.0.0.1) and that Secret with the world's CA.
STATUS_GATE = "TrainJobStatus"
FIXED_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
FIXED_SA_DIR = Path("/run/secrets/kubernetes.io/serviceaccount")  # /var/run is /run
SA_DIR = "trainer-serviceaccount"
TRAINER_NAMESPACE = "kubeflow-system"  # the Trainer's default operator namespace
TRAINER_ACCOUNT = "kubeflow-trainer-controller-manager"
CA_SECRET = "kubeflow-trainer-webhook-cert"


def status_server_inputs(world: World) -> None:
    world.kubectl("create", "namespace", TRAINER_NAMESPACE, check=False)
    world.kubectl("create", "serviceaccount", TRAINER_ACCOUNT, "-n", TRAINER_NAMESPACE, check=False)
    world.kubectl("create", "secret", "generic", CA_SECRET, "-n", TRAINER_NAMESPACE,
                  f"--from-file=ca.crt={world.plane.ca_file}", check=False)
    token = world.kubectl("create", "token", TRAINER_ACCOUNT, "-n", TRAINER_NAMESPACE, "--duration=24h").stdout.strip()
    folder = world.dir / SA_DIR
    folder.mkdir(exist_ok=True)
    (folder / "token").write_text(token)
    (folder / "namespace").write_text(TRAINER_NAMESPACE)


def status_url(trainer: Any, url: str) -> str:
    """The URL a TrainJob's pod was given, as this machine reaches it (127.0.0.1, the status port)."""
    from urllib.parse import urlsplit

    return f"https://{LOOPBACK}:{trainer.status_port}{urlsplit(url).path}"


def _dry_run(world: World, body: dict[str, Any]) -> dict[str, Any] | None:
    """The object a server-side dry-run create returns (webhooks included), or None when
    the API server refused it (a webhook not serving yet answers with an error)."""
    try:
        out = world.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(body))
    except KubectlError:
        return None
    return json.loads(out.stdout)


JOBSET_PROBE = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": PROBE, "namespace": "default"},
    "spec": {"replicatedJobs": [{"name": "probe", "template": {"spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "probe", "image": "example.com/probe:1"}]}}}}}]}}
TRAINJOB_PROBE = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": PROBE, "namespace": "default"},
    "spec": {"runtimeRef": {"name": "torch-distributed"}, "runtimePatches": [{"manager": "testworld.trainforge.dev/probe"}]}}


class Trainer(Composite):
    """JobSet and Trainer's controller manager, webhooks served on loopback: a ``Part``
    named ``trainer`` (``World(["gc", ..., "trainer"])`` with the job controller in gc)."""

    name = "trainer"
    builds = (JOBSET, TRAINER)
    # TrainJobStatus gives each trainer pod a projected token: the world runs ServiceAccount admission
    service_accounts = True

    def __init__(self) -> None:
        super().__init__()
        self.world: World | None = None
        self.status_port = 0  # the status server's (TrainJobStatus), on all interfaces

    @staticmethod
    def crd_files() -> list[Path]:
        return [*sorted(manifests(JOBSET, JOBSET_CRDS).glob("*.yaml")),
                *sorted(p for p in manifests(TRAINER, TRAINER_CRDS).glob("*.yaml") if p.name.startswith("trainer."))]

    def start(self, world: World) -> None:
        self.world = world
        install_crds(world, self.crd_files())
        ca = webhooks.ca_bundle(world)
        jobset, trainer = _JobSet(), _Trainer()
        for proc, folder, prefix in ((jobset, manifests(JOBSET, JOBSET_WEBHOOK), "jobset-"),
                                     (trainer, manifests(TRAINER, TRAINER_WEBHOOK), "")):
            proc.before(world)
            configs = [webhooks.on_loopback(d, proc.port, ca, name=prefix + d["metadata"]["name"])
                       for d in webhooks.rendered(world, folder) if d.get("kind") in webhooks.KINDS]
            webhooks.apply(world, configs)
            self.procs.append(proc)
            proc.start(world)
            if proc is jobset:
                proc.wait(lambda: _dry_run(world, JOBSET_PROBE) is not None, "JobSet's webhooks serving", timeout=120)
        runtimes = webhooks.rendered(world, manifests(TRAINER, RUNTIMES))
        trainer.wait(lambda: self._applied(runtimes), "the stock ClusterTrainingRuntimes admitted", timeout=120)
        trainer.wait(self._stamped, "Trainer's TrainJob webhooks serving", timeout=120)
        self.status_port = trainer.status_port

    def _applied(self, docs: list[dict[str, Any]]) -> bool:
        assert self.world is not None
        try:
            webhooks.apply(self.world, docs)
        except KubectlError:
            time.sleep(0.5)
            return False
        return True

    def _stamped(self) -> bool:
        assert self.world is not None
        job = _dry_run(self.world, TRAINJOB_PROBE)
        return bool(job and all(p.get("time") for p in job["spec"].get("runtimePatches") or [{}]))
