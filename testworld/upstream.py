"""The upstream Go operator (kubeflow/training-operator) as a part of the test world.

Where it sits: the parity test (tests/parity), the controller benchmarks and the admission
tests run it beside `train-controller` on one API server, so "drop-in" is checked against
the real thing rather than against our reading of its source. Two releases: v1.9.4, the
one `../shared/docs/kubeflow-v1-semantics.md` follows, for every kind it has, and v1.8.1
for MXJob only (v1.9 dropped MXJob). Both are built from the Go module proxy with
`go install MODULE@VERSION` (testworld.gobuild rows `training-operator` and
`training-operator-mxjob`, cached in `~/.cache/trainforge/<row>/<version>/`).

Why it is shaped so:
- Its webhook certificate rotator holds the job controllers back until it has filled its
  Secret and its ValidatingWebhookConfiguration and seen the certificate on disk. So both
  objects are created empty first (no webhook in the configuration: none is ever called)
  and the certificate is copied out of the Secret as a kubelet would mount it.
- The rotator's cert dir is a constant, `/tmp/k8s-webhook-server/serving-certs`: two
  operators running at once (the parity test, the admission test, a benchmark, two
  releases in one world) would overwrite each other's certificates there. Each operator
  therefore runs in a private mount namespace (`unshare --mount`, we are root) in which a
  directory of its own is bind-mounted over that path; `unshare` execs the operator, so
  its pid, /proc figures and signals are the operator's own.
- Each operator keeps its Secret in a namespace of its own (`MY_POD_NAMESPACE`), so two
  releases on one API server never share a certificate.
- Subclasses (a webhook-serving mode) extend it through `extra_args`, `extra_env`, and
  the `prepare` / `provide_certs` hooks; `cert_dir` is the host side of the bind mount.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from foundation.cluster import errors
from foundation.cluster.kube import Client, Resource

from . import gobuild
from .part import PartError, ProcessPart, free_port

if TYPE_CHECKING:
    from .world import World

MODULE = "github.com/kubeflow/training-operator/cmd/training-operator.v1"
BINARY = "training-operator.v1"
PRIMARY = "v1.9.4"  # every kind it has; the release kubeflow-v1-semantics.md follows
MXJOB = "v1.8.1"    # MXJob only: the last release that has it


@dataclass(frozen=True)
class Release:
    version: str
    schemes: tuple[str, ...]  # values of --enable-scheme, each also the controller's name prefix


RELEASES = {
    PRIMARY: Release(PRIMARY, ("pytorchjob", "tfjob", "mpijob", "xgboostjob", "paddlejob", "jaxjob")),
    MXJOB: Release(MXJOB, ("mxjob",)),
}

CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")  # a constant in the operator (pkg/cert)
CERT_SECRET = "training-operator-webhook-cert"  # --webhook-secret-name default
WEBHOOK_CONFIG = "validator.training-operator.kubeflow.org"  # a constant in the operator's main.go
SECRETS = Resource("", "v1", "secrets", "Secret")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
WEBHOOKS = Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                    "ValidatingWebhookConfiguration", namespaced=False)


def isolated(argv: Sequence[str], own_dir: Path, fixed_dir: Path) -> list[str]:
    """``argv`` run in a private mount namespace in which ``own_dir`` is bind-mounted over
    ``fixed_dir`` (a path the binary hard-codes; it must exist outside, empty). unshare
    execs sh, sh execs the binary ($0 = our dir, "$@" = argv): the pid is the binary's own."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f'mount --bind "$0" {fixed_dir} && exec "$@"', str(own_dir), *argv]


# The two pinned builds (testworld.gobuild): `python -m testworld build training-operator
# training-operator-mxjob`, cached in ~/.cache/trainforge/<name>/<version>/.
BUILD = gobuild.register(gobuild.Build(
    "training-operator", "github.com/kubeflow/training-operator", PRIMARY, (MODULE,), binaries=(BINARY,),
    smoke=("--help",), cold="7.5 min measured on 2 busy cores"))
BUILD_MXJOB = gobuild.register(gobuild.Build(
    "training-operator-mxjob", "github.com/kubeflow/training-operator", MXJOB, (MODULE,), binaries=(BINARY,),
    smoke=("--help",), cold="11 min measured on 2 busy cores"))
BUILD_OF = {PRIMARY: BUILD, MXJOB: BUILD_MXJOB}


def build(version: str = PRIMARY) -> Path:
    """The operator binary of `version`, built from the Go module proxy unless cached."""
    return gobuild.binary(BUILD_OF[version])


def find(version: str = PRIMARY) -> Path | None:
    """The cached binary of `version`, or None (no build, no `go` call)."""
    found = gobuild.find(BUILD_OF[version])
    return found / BINARY if found else None


def isolation_problem() -> str | None:
    """Why a private mount namespace cannot be made here, or None when it can."""
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True, check=False)
    if done.returncode != 0:
        return f"unshare --mount failed (needs root or CAP_SYS_ADMIN): {done.stderr.decode().strip()}"
    return None


def _create(client: Client, res: Resource, namespace: str | None, body: dict) -> None:
    try:
        client.create(res, namespace, body)
    except errors.AlreadyExists:
        pass


@dataclass(frozen=True)
class Host:
    """Where an operator runs without a World (a benchmark's own control plane): what
    `Operator.start` reads from a World."""
    kubeconfig: Path
    dir: Path


class Operator(ProcessPart):
    """One upstream operator watching `namespace` with its release's schemes (or `schemes`),
    a testworld part: `World(parts=[Operator(ns), ...])`, or `Operator(ns).start(Host(...))`.

    `start` returns once every enabled job controller has started its workers. `threads` is
    `--controller-threads` (give it our workers). Extend it through `extra_args`,
    `extra_env`, `prepare` and `provide_certs` (a webhook-serving mode puts its own
    certificate in `cert_dir` and its webhooks in the configuration)."""

    start_timeout = 180.0
    stop_timeout = 20.0

    def __init__(self, namespace: str | None = None, *, version: str = PRIMARY, schemes: Sequence[str] | None = None,
                 threads: int = 4, system_namespace: str | None = None, extra_args: Sequence[str] = (),
                 extra_env: Mapping[str, str] | None = None, kubeconfig: Path | None = None) -> None:
        super().__init__()
        self.release = RELEASES[version]
        self.name = f"training-operator-{version}"
        self.builds = (BUILD_OF[version].name,)
        self.namespace = namespace
        self.schemes = tuple(schemes or self.release.schemes)
        self.threads = threads
        self.system_namespace = system_namespace or "training-operator-" + version.replace(".", "-")
        self.extra_args, self.extra_env = list(extra_args), dict(extra_env or {})
        self.kubeconfig = kubeconfig  # another identity than the world's admin (e.g. to count its requests)
        self.cert_dir = Path(tempfile.gettempdir())  # set by before(): our dir, CERT_DIR inside its namespace
        self.client: Client | None = None
        self.idle_rss_mb = 0.0
        self._mounted = False
        self._ready = {s: re.compile(rb"Starting workers[^\n]*" + re.escape(f"{s}-controller".encode()))
                       for s in self.schemes}

    @property
    def log(self) -> Path | None:
        return self.log_path

    # ------------------------------------------------------------------ hooks
    def operator_args(self) -> list[str]:
        watch = [f"--namespace={self.namespace}"] if self.namespace else []  # none: every namespace
        return [*watch, *(f"--enable-scheme={s}" for s in self.schemes),
                f"--controller-threads={self.threads}", "--metrics-bind-address=0", "--health-probe-bind-address=0",
                f"--webhook-server-port={free_port()}", *self.extra_args]

    def argv(self, world: World | Host) -> list[str]:
        return isolated([self.binary(BUILD_OF[self.release.version].name, BINARY), *self.operator_args()],
                        self.cert_dir, CERT_DIR)

    def env(self, world: World | Host) -> dict[str, str]:
        return {"KUBECONFIG": str(self.kubeconfig or world.kubeconfig), "MY_POD_NAMESPACE": self.system_namespace, **self.extra_env}

    def prepare(self) -> None:
        """The objects its cert rotator waits for, created empty (no webhook: none is called)."""
        assert self.client is not None
        _create(self.client, NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": self.system_namespace}})
        _create(self.client, SECRETS, self.system_namespace,
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": CERT_SECRET}})
        _create(self.client, WEBHOOKS, None, {"apiVersion": "admissionregistration.k8s.io/v1",
                                              "kind": "ValidatingWebhookConfiguration",
                                              "metadata": {"name": WEBHOOK_CONFIG}})

    def provide_certs(self) -> bool:
        """Play the kubelet's secret volume; True once the files are in place."""
        assert self.client is not None
        data = self.client.get(SECRETS, self.system_namespace, CERT_SECRET).get("data") or {}
        if "tls.crt" not in data or "tls.key" not in data:
            return False
        for name in ("tls.key", "tls.crt"):  # the certificate last: its presence is the rotator's signal
            (self.cert_dir / name).write_bytes(base64.b64decode(data[name]))
        return True

    # ------------------------------------------------------------------ lifecycle
    def before(self, world: World | Host) -> None:
        problem = isolation_problem()
        if problem:
            raise PartError(f"{self.name}: cannot isolate its fixed cert dir {CERT_DIR}: {problem}")
        self.cert_dir = Path(tempfile.mkdtemp(prefix=f"trainforge-{self.name}-certs-"))
        self.client = Client.connect(str(world.kubeconfig))  # the admin: prepare() may create anything
        self.prepare()
        CERT_DIR.mkdir(parents=True, exist_ok=True)  # the mount point; stays empty outside

    def ready(self) -> bool:
        text = self.log_path.read_bytes() if self.log_path and self.log_path.exists() else b""
        if all(r.search(text) for r in self._ready.values()):
            return True
        if not self._mounted:
            self._mounted = self.provide_certs()
        return False

    def after(self, world: World | Host) -> None:
        self.idle_rss_mb = self.stats()[1]

    def start(self, world: World | Host) -> Operator:  # type: ignore[override]
        super().start(world)  # type: ignore[arg-type]
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None and self.proc.pid is not None
        return self.proc.pid

    def stop(self) -> None:
        super().stop()
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.cert_dir.name.startswith("trainforge-"):
            shutil.rmtree(self.cert_dir, ignore_errors=True)
