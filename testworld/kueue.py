"""Kueue as a part of the test world, the real queue manager off-cluster: v0.17.0 (``kueue``) or v0.19.2 (``kueue-0.19``).

Where it sits: tests/e2e/test_kueue_e2e.py queues compiled jobs through each release in
turn (ClusterQueue quota, preemption by WorkloadPriorityClass, the suspend flip and flavor
injection the GitOps engines must not fight); tests/testworld/engines checks both releases
admit queued Kubeflow jobs. Each release is a row of ``gobuild`` (``go install
sigs.k8s.io/kueue/cmd/kueue@VERSION``; neither go.mod has replace directives, v0.19.2's
needs Go 1.26), cached in ``~/.cache/trainforge/<row>/<version>/``; one class runs both,
``Kueue(version=...)``, since everything below holds for both.

Why it is shaped so:
- Kueue runs beside the World's API server, not in it, so whatever a cluster install
  wires through a Service is wired to 127.0.0.1 instead (``testworld.webhooks``): its
  webhook server listens on a free loopback port with a serving pair the World's CA
  signed, and its webhook configurations and the CRDs' conversion webhook (``/convert``)
  are the release's own (``kubectl kustomize`` of its config/components/webhook and
  config/components/crd, read from the Go module cache) with each ``clientConfig``
  turned into that URL plus the CA, timeouts raised. Internal cert management (the
  rotator that wants a Service and a Secret) and leader election are off.
- With internal cert management off, both releases read their metrics serving pair from
  the fixed path ``/etc/kueue/metrics/certs`` and exit if it is missing (even with the
  metrics server off). It runs in a private mount namespace with a dir of ours bound over
  that path (``upstream.isolated``), as the upstream operator does for its cert dir.
- Only Kueue's own webhooks and those of the integrations enabled here are installed:
  the module's manifests also name Pods, Deployments, Jobs and others, whose webhooks this
  process does not serve and which would then refuse every such object in the world.
- ``namespaces`` (optional) confines Kueue to those namespaces: the job webhooks get a
  namespaceSelector and the manager ``managedJobsNamespaceSelector``, which both releases
  respect for jobs with a queue label too (``ManagedJobsNamespaceSelectorAlwaysRespected``:
  beta and on in v0.17, GA and locked on in v0.19, so the part sets no gate for it), so
  in a World shared with other tests Kueue never touches their queued jobs.
- The visibility API server (``VisibilityOnDemand``, beta and on in both) is off: it wants
  the in-cluster aggregation setup and nothing here reads it.
- ``frameworks`` is exactly the integrations enabled (``integrations.frameworks``), with
  one exception: the TrainJob integration is dropped unless JobSet's CRD is served (the
  trainer part runs): Kueue's TrainJob controller watches JobSets, and without their CRD
  its cache never syncs and the manager exits about two minutes after start.
  ``kubeflow.org/mpijob`` is the mpi-operator's ``kubeflow.org/v2beta1`` MPIJob in both
  releases (the ``mpi-operator`` part serves it); neither integrates the Training
  Operator's ``kubeflow.org/v1`` MPIJob.

What v0.19.2 changes for this setup (read in its source and seen running):
- The same APIs: the Configuration is ``config.kueue.x-k8s.io/v1beta2`` (v1beta1 still
  read), the CRDs serve ``kueue.x-k8s.io/v1beta2`` (storage) and the deprecated v1beta1,
  as in v0.17; the webhook paths and the metrics cert path are unchanged.
- WaitForPodsReady is on by default (30 min timeout and recovery timeout, admission not
  blocked): an admitted Workload gets a ``PodsReady`` condition, and one whose pods are
  not ready within 30 min is evicted and requeued. ``DisableWaitForPodsReady`` turns it off.
- The release's own config (config/components/manager) no longer lists the
  ``kubeflow.org/v1`` kinds (PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob): they are
  commented out there, while v0.17.0's listed them; an empty ``frameworks`` means
  ``batch/job`` only in both. The integrations themselves are still built in, and enabled
  here when asked for. Kueue's own notes call the Trainer v1 integration deprecated.
- The default client QPS/burst rose from 20/30 to 300/500 (the part sets 50/100 for both).

API: ``Kueue(namespaces=None, frameworks=FRAMEWORKS, version=VERSION)`` is a ``Part`` named
after its build row (``kueue`` for v0.17.0, ``kueue-0.19`` for v0.19.2; ``kueue_0_19()`` is
the latter's factory); ``stop()`` also deletes its webhook configurations (a stopped Kueue
must not leave the world refusing jobs). ``FRAMEWORKS``: the integrations enabled by default.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from . import gobuild
from .flux import install_crds
from .part import LOOPBACK, PartError, ProcessPart, free_port, http_ok
from .upstream import isolated, isolation_problem

if TYPE_CHECKING:
    from .world import World

VERSION = "v0.17.0"  # the default; V0_19 beside it
V0_19 = "v0.19.2"
MODULE = "sigs.k8s.io/kueue"
SYSTEM_NAMESPACE = "kueue-system"  # the Configuration's namespace default
METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")  # a constant in cmd/kueue/main.go
# The job integrations enabled (Configuration.integrations.frameworks). kubeflow.org/mpijob
# is the mpi-operator's kubeflow.org/v2beta1 MPIJob: enabled as a user would, it never
# sees a kubeflow.org/v1 MPIJob (a world serves v1 unless the mpi-operator part runs;
# then Kueue logs that it defers the integration).
FRAMEWORKS = (
    "kubeflow.org/pytorchjob", "kubeflow.org/tfjob", "kubeflow.org/xgboostjob", "kubeflow.org/paddlejob",
    "kubeflow.org/jaxjob", "kubeflow.org/mpijob", "trainer.kubeflow.org/trainjob",
)  # the TrainJob only where JobSet's CRD is served (see Kueue.before)
TRAINJOB = "trainer.kubeflow.org/trainjob"
JOBSET_CRD = "jobsets.jobset.x-k8s.io"
# Webhooks kept from the module's manifests: Kueue's own objects and the jobs of the
# enabled integrations, by API group (a webhook's rules name one group each).
KUEUE_GROUP = "kueue.x-k8s.io"
JOB_GROUPS = ("kubeflow.org", "trainer.kubeflow.org")
CONFIG_NAMES = {"MutatingWebhookConfiguration": "kueue-mutating-webhook-configuration",
                "ValidatingWebhookConfiguration": "kueue-validating-webhook-configuration"}

BUILD = gobuild.register(gobuild.Build(
    "kueue", MODULE, VERSION, (f"{MODULE}/cmd/kueue",), smoke=("--help",), gcflags=gobuild.UNOPTIMIZED,
    cold="25 min measured at load 6-14, its modules cold"))
BUILD_0_19 = gobuild.register(gobuild.Build(
    "kueue-0.19", MODULE, V0_19, (f"{MODULE}/cmd/kueue",), smoke=("--help",), gcflags=gobuild.UNOPTIMIZED,
    cold="7 min 11 s measured at load ~10 beside other builds, its modules cold"))
BUILDS = {VERSION: BUILD, V0_19: BUILD_0_19}  # version -> row; the row's name is the part's


def module_dir(version: str = VERSION) -> Path:
    """The module's source in the Go module cache (downloaded if absent: ``go mod download``)."""
    work = Path(tempfile.mkdtemp(prefix="trainforge-kueue-module-"))
    try:
        return Path(gobuild.module_info(MODULE, version, work, gobuild.go_env(), work / "download.log")["Dir"])
    except gobuild.BuildError as err:  # GoMissing included
        raise PartError(f"kueue manifests: {err}") from err
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _groups(hook: dict[str, Any]) -> set[str]:
    return {g for rule in hook.get("rules") or [] for g in rule.get("apiGroups") or []}


def webhook_configurations(rendered: list[dict[str, Any]], port: int, ca: bytes,
                           namespaces: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The module's two webhook configurations (as rendered from config/components/webhook),
    kept to Kueue's own and the job groups' webhooks, called at 127.0.0.1:`port`; the job
    webhooks limited to `namespaces` if given."""
    from . import webhooks  # on use: the build row registers without the part's helpers

    selector = ({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                       "values": sorted(namespaces)}]} if namespaces is not None else None)
    out = []
    for doc in rendered:
        if doc.get("kind") not in CONFIG_NAMES:
            continue
        kept = []
        for hook in doc.get("webhooks") or []:
            groups = _groups(hook)
            own = groups == {KUEUE_GROUP}
            if own or (groups and groups <= set(JOB_GROUPS)):
                kept.append((own, hook))
        config = webhooks.on_loopback(dict(doc, webhooks=[h for _, h in kept]), port, ca,
                                      name=CONFIG_NAMES[doc["kind"]])
        if selector is not None:
            for (own, _), hook in zip(kept, config["webhooks"], strict=True):
                if not own:
                    hook["namespaceSelector"] = selector
        out.append(config)
    return out


def crds(rendered: list[dict[str, Any]], port: int, ca: bytes, out: Path) -> list[Path]:
    """The module's CRDs (as rendered from config/components/crd, whose patches give some a
    conversion webhook) written to `out`, converting at 127.0.0.1:`port`."""
    from . import webhooks

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for crd in rendered:
        if crd.get("kind") != "CustomResourceDefinition":
            continue
        webhook = ((crd["spec"].get("conversion") or {}).get("webhook")) or {}
        if "clientConfig" in webhook:  # the same rewrite as a webhook configuration's
            as_config = {"metadata": {"name": "conversion"}, "webhooks": [webhook]}
            webhook["clientConfig"] = webhooks.on_loopback(as_config, port, ca)["webhooks"][0]["clientConfig"]
        paths.append(out / f"{crd['metadata']['name']}.json")
        paths[-1].write_text(json.dumps(crd))
    if not paths:
        raise PartError("kueue: its config/components/crd renders no CRDs")
    return paths


class Kueue(ProcessPart):
    name = "kueue"  # the default release's; an instance takes its build row's name
    start_timeout = 180.0
    stop_timeout = 20.0

    def __init__(self, namespaces: Iterable[str] | None = None, frameworks: Iterable[str] = FRAMEWORKS, *,
                 version: str = VERSION) -> None:
        super().__init__()
        if version not in BUILDS:
            raise PartError(f"kueue: no build of {version}; known: {', '.join(BUILDS)}")
        self.version, self.entry = version, BUILDS[version]
        self.name, self.builds = self.entry.name, (self.entry.name,)
        self.namespaces = None if namespaces is None else tuple(namespaces)
        self.frameworks = tuple(frameworks)
        self.health = self.port = 0
        self.dir = Path(tempfile.gettempdir())
        self.world: World | None = None

    def configuration(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "namespace": SYSTEM_NAMESPACE,
            "health": {"healthProbeBindAddress": f"{LOOPBACK}:{self.health}"},
            "metrics": {"bindAddress": "0"},  # off; its certificate is still read (see above)
            "webhook": {"port": self.port, "host": LOOPBACK, "certDir": str(self.dir / "webhook")},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "clientConnection": {"qps": 50, "burst": 100},
            "integrations": {"frameworks": list(self.frameworks)},
            "featureGates": {"VisibilityOnDemand": False},
        }
        if self.namespaces is not None:
            config["managedJobsNamespaceSelector"] = {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": sorted(self.namespaces)}]}
        return config

    # ------------------------------------------------------------------ lifecycle
    def before(self, world: World) -> None:
        from . import webhooks

        problem = isolation_problem()
        if problem:
            raise PartError(f"kueue: cannot isolate its fixed metrics cert dir {METRICS_CERT_DIR}: {problem}")
        self.world = world
        self.health, self.port = free_port(), free_port()
        if TRAINJOB in self.frameworks and world.kubectl("get", "crd", JOBSET_CRD, check=False).returncode != 0:
            # Kueue v0.17's TrainJob controller watches JobSets: without their CRD its cache
            # never syncs and the whole manager exits (~2 min after start)
            self.frameworks = tuple(f for f in self.frameworks if f != TRAINJOB)
        self.dir = Path(tempfile.mkdtemp(prefix="kueue-", dir=world.dir))
        for sub in ("webhook", "metrics"):
            webhooks.serving_certs(world, self.dir / sub)
        (self.dir / "config.yaml").write_text(yaml.safe_dump(self.configuration()))
        METRICS_CERT_DIR.mkdir(parents=True, exist_ok=True)  # the mount point; stays empty outside
        source, ca = module_dir(self.version) / "config" / "components", webhooks.ca_bundle(world)
        install_crds(world, crds(webhooks.rendered(world, source / "crd"), self.port, ca, self.dir / "crds"))
        world.kubectl("create", "namespace", SYSTEM_NAMESPACE, check=False)
        webhooks.apply(world, webhook_configurations(webhooks.rendered(world, source / "webhook"), self.port, ca,
                                                     self.namespaces))

    def argv(self, world: World) -> list[str]:
        return isolated([self.binary(self.entry.name), f"--config={self.dir / 'config.yaml'}"],
                        self.dir / "metrics", METRICS_CERT_DIR)

    def env(self, world: World) -> dict[str, str]:
        return {"KUBECONFIG": str(world.kubeconfig)}

    def ready(self) -> bool:
        return http_ok(f"http://{LOOPBACK}:{self.health}/readyz")  # includes the webhook server started

    def after(self, world: World) -> None:
        self.wait(self._served, "its webhooks called by the API server", timeout=60)

    def _served(self) -> bool:
        """The API server reaches the webhooks: a server-side dry run of a ResourceFlavor
        passes Kueue's mutating and validating webhooks (failurePolicy Fail)."""
        assert self.world is not None
        probe = {"apiVersion": f"{KUEUE_GROUP}/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "probe"}}
        done = self.world.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(probe), check=False)
        if done.returncode == 0:
            return True
        time.sleep(0.5)
        return False

    def stop(self) -> None:
        super().stop()
        if self.world is not None and self.world.plane.kubeconfig is not None:
            for kind, name in CONFIG_NAMES.items():
                self.world.kubectl("delete", kind.lower(), name, "--ignore-not-found", check=False)
            self.world = None


def kueue_0_19() -> Kueue:
    """The ``kueue-0.19`` part: Kueue v0.19.2 with the default frameworks."""
    return Kueue(version=V0_19)
