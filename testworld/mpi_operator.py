"""The mpi-operator v0.8.0 (kubeflow/mpi-operator, ``kubeflow.org/v2beta1`` MPIJob) as a part of the test world.

Where it sits: the Kubeflow MPIJob users run today is the mpi-operator's v2beta1, not the
Training Operator's v1; tests/testworld/engines runs it on kwok, alone and under both
Kueue releases, so what trainforge generates for it is checked against the real operator.
testworld/FACTS-mpi-operator.md says what it was seen doing, in prose, for the compiler.

How it is built (``gobuild`` row ``mpi-operator``): the module has no replace directives,
but its health server listens on ``:8080``, a port hard-coded in ``cmd/mpi-operator/app``
(no flag), so two operators on one machine (two worlds side by side) would collide and
the second would exit. The row therefore builds the operator's own ``cmd/mpi-operator``
in a writable copy of the module with one file of ours added to that package
(``go/mpi-operator-health/``: ``TRAINFORGE_MPI_OPERATOR_HEALTH_PORT`` chooses the port);
nothing else changes. Like Argo CD's metrics server it still listens on every interface,
on a free port. The build copies the CRD (``manifests/base/kubeflow.org_mpijobs.yaml``)
beside the binary.

How it runs: off-cluster with ``--kubeConfig`` (the world's admin, so no RBAC), every
namespace watched (or ``namespace``), metrics off (``--monitoring-port=0``). Leader
election cannot be turned off: it takes a Lease in ``--lock-namespace`` (a namespace of
its own, ``mpi-operator``, created first). It exits at start when the v2beta1 MPIJob is not
served, and is ready when it logs ``Started workers`` (its caches synced) and its health
server answers. Its launcher is a batch/v1 Job, so the world's ``gc`` part must run
kube-controller-manager's ``job-controller``; the part refuses to start otherwise.

One CRD name, two APIs: the Training Operator's ``kubeflow.org/v1`` MPIJob and the
mpi-operator's ``kubeflow.org/v2beta1`` MPIJob are both ``mpijobs.kubeflow.org``, each CRD
with its one version and no conversion. A cluster has one of the two: applying either
over the other is refused (``status.storedVersions[0]: Invalid value: "v1": must appear in
spec.versions``), and the upstream advice for running both operators is the mpi-operator's
CRD plus the Training Operator started with ``--enable-scheme`` naming every kind but
``mpijob``. A World installs the upstream v1 CRDs by default, so this part deletes a
``mpijobs.kubeflow.org`` that does not serve v2beta1 (and every v1 MPIJob with it) and
installs the v2beta1 one before the operator starts: the other ``kubeflow.org/v1`` kinds
stay served. Do not run the ``training-operator`` part with its ``mpijob`` scheme in the
same world. Beside Kueue, list this part first: a Kueue that starts while v2beta1 is not
served defers its ``kubeflow.org/mpijob`` controller and polls for the API with a backoff
growing to two minutes (both releases).

What it makes for an MPIJob ``NAME`` (all owned by the MPIJob, labelled ``app: NAME``):
a headless Service ``NAME`` selecting the job's pods; a ConfigMap ``NAME-config`` with
``hostfile`` (``NAME-worker-i.NAME.NS.svc slots=S`` per worker) and ``discover_hosts.sh``
(the Running workers only); a Secret ``NAME-ssh`` (``kubernetes.io/ssh-auth``: an ECDSA
``ssh-privatekey`` and ``ssh-publickey``) mounted at ``sshAuthMountPath``; the workers as
bare pods ``NAME-worker-i`` (labels ``training.kubeflow.org/job-name``, ``job-role``,
``operator-name: mpi-operator``, ``replica-index``; command ``/usr/sbin/sshd -De`` when none
is given), and the launcher as a batch/v1 Job ``NAME-launcher`` whose pod gets the OpenMPI
environment (``OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile``,
``OMPI_MCA_orte_set_default_slots``) and ``backoffLimit``, ``activeDeadlineSeconds``,
``ttlSecondsAfterFinished`` from ``runPolicy``. Conditions: Created, Running, then Succeeded
or Failed (Running turns False), and Suspended.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from . import gobuild
from .controller_manager import JOB_CONTROLLER
from .flux import install_crds
from .part import LOOPBACK, PartError, ProcessPart, free_port, http_ok

if TYPE_CHECKING:
    from .world import World

VERSION = "v0.8.0"
MODULE = "github.com/kubeflow/mpi-operator"
CRD_NAME = "mpijobs.kubeflow.org"
API_VERSION = "v2beta1"
CRD_FILE = "manifests/base/kubeflow.org_mpijobs.yaml"
LOCK_NAMESPACE = "mpi-operator"  # --lock-namespace: the Lease its (always on) leader election takes
HEALTH_FILE = Path(__file__).with_name("go") / "mpi-operator-health" / "zz_trainforge_health_port.go"
HEALTH_ENV = "TRAINFORGE_MPI_OPERATOR_HEALTH_PORT"
STARTED = b"Started workers"  # logged once the informer caches synced and the workers run


def _mpi_operator(entry: gobuild.Build, work: Path, out: Path, env: dict[str, str]) -> None:
    """The operator's own main, built in a copy of the module with our health-port file in
    its ``app`` package; its v2beta1 CRD copied beside the binary."""
    src = gobuild.copy_module(entry, work, env)
    shutil.copyfile(HEALTH_FILE, src / "cmd" / "mpi-operator" / "app" / HEALTH_FILE.name)
    gobuild.build_in_copy(entry, src, out, env, gobuild.build_log(work))
    (out / "crds").mkdir()
    shutil.copyfile(src / CRD_FILE, out / "crds" / Path(CRD_FILE).name)


BUILD = gobuild.register(gobuild.Build(
    "mpi-operator", MODULE, VERSION, (f"{MODULE}/cmd/mpi-operator",), recipe="module-copy",
    gcflags=gobuild.UNOPTIMIZED, cold="4 min 27 s measured at load ~8 beside a kube-apiserver build, its modules cold",
    custom=_mpi_operator))


def crd_file() -> Path:
    return gobuild.build(BUILD) / "crds" / Path(CRD_FILE).name


def served_versions(world: World) -> list[str] | None:
    """The versions the world serves ``mpijobs.kubeflow.org`` in, or None without that CRD."""
    done = world.kubectl("get", "crd", CRD_NAME, "-o", "json", check=False)
    if done.returncode != 0:
        return None
    return [v["name"] for v in json.loads(done.stdout)["spec"]["versions"] if v.get("served")]


def serve_v2beta1(world: World) -> None:
    """Make ``mpijobs.kubeflow.org`` the mpi-operator's v2beta1 CRD. One that serves only
    the Training Operator's v1 (a World's upstream CRDs) cannot be updated into it (its
    stored version v1 would leave spec.versions), so it is deleted first, with every v1
    MPIJob in it, as a cluster admin switching operators does."""
    versions = served_versions(world)
    if versions is not None and API_VERSION not in versions:
        world.kubectl("delete", "crd", CRD_NAME, "--wait=true", "--timeout=60s")
    install_crds(world, [crd_file()])


class MPIOperator(ProcessPart):
    """The mpi-operator watching every namespace (or ``namespace``): a ``Part`` named
    ``mpi-operator``. Its launcher is a batch/v1 Job: the world's ``gc`` part must run
    kube-controller-manager's job controller for launcher pods to exist."""

    name = "mpi-operator"
    builds = (BUILD.name,)
    start_timeout = 120.0

    def __init__(self, namespace: str | None = None, *, threads: int = 2) -> None:
        super().__init__()
        self.namespace = namespace
        self.threads = threads
        self.health = 0

    def before(self, world: World) -> None:
        require_job_controller(world)
        serve_v2beta1(world)
        world.kubectl("create", "namespace", LOCK_NAMESPACE, check=False)
        self.health = free_port()

    def argv(self, world: World) -> list[str]:
        # client QPS 50 (default 5, burst 10): several jobs at once would queue on its own limiter
        watch = [f"--namespace={self.namespace}"] if self.namespace else []
        return [self.binary(BUILD.name), f"--kubeConfig={world.kubeconfig}", f"--lock-namespace={LOCK_NAMESPACE}",
                f"--threadiness={self.threads}", "--monitoring-port=0", "--kube-api-qps=50", "--kube-api-burst=100",
                *watch]

    def env(self, world: World) -> dict[str, str]:
        return {"KUBECONFIG": str(world.kubeconfig), HEALTH_ENV: str(self.health)}

    def ready(self) -> bool:
        text = self.log_path.read_bytes() if self.log_path and self.log_path.exists() else b""
        return STARTED in text and http_ok(f"http://{LOOPBACK}:{self.health}/healthz")


def require_job_controller(world: World) -> None:
    """Fail early when no job controller runs: the launcher Job would never get a pod."""
    gc = world.parts.get("gc")
    if gc is None or JOB_CONTROLLER not in getattr(gc, "controllers", ()):
        raise PartError("mpi-operator: its launcher is a batch/v1 Job; run the gc part with the job "
                        "controller (ControllerManager(controllers=(*DEFAULT_CONTROLLERS, JOB_CONTROLLER)))")
