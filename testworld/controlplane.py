"""A real kube-apiserver + etcd on loopback, the envtest way (no kubelet, no controllers).

Why it is shaped so: the controller must be tested against real server
behaviour (OpenAPI validation of CRDs, status subresources, resourceVersion
conflicts, RBAC, server-side apply), which fakes get subtly wrong, while this
machine has no container runtime. So, like controller-runtime's envtest, we run
the two binaries directly in a private temp dir with a throw-away PKI, free
127.0.0.1 ports, ``--authorization-mode=RBAC`` and a Metadata-level audit log.
The admin identity is a client cert in ``system:masters``; other identities can
be minted with :meth:`ControlPlane.add_user` so RBAC is exercised for real.

Lifecycle guarantees (tests depend on them): :meth:`stop` always stops both
processes (SIGTERM, then SIGKILL after ``stop_timeout``) and removes the temp
dir, and :meth:`start` calls it itself when any step fails, so a half-started
control plane never leaks etcd. Children also get ``PR_SET_PDEATHSIG`` so they
die with the Python process even if it is SIGKILLed. Logs of a failed start are
copied to a kept ``trainforge-cp-failed-*`` dir, because the temp dir is removed.

``USE_EXISTING_CLUSTER=true`` starts nothing and uses the current kubeconfig.
"""

from __future__ import annotations

import atexit
import base64
import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from .assets import Assets, find_assets, kubectl_path
from .certs import KeyPair, TinyCA, service_account_keys

LOOPBACK = "127.0.0.1"
SERVICE_CIDR = "10.0.0.0/24"
ADMIN_USER = "trainforge-admin"
ADMIN_GROUPS = ("system:masters",)

# Metadata for every request; RequestReceived is omitted so each request is
# recorded once (at ResponseComplete, or ResponseStarted for watches).
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
"""


class ControlPlaneError(RuntimeError):
    """Starting, stopping or talking to the control plane failed."""


class KubectlError(ControlPlaneError):
    """kubectl exited non-zero; ``stderr`` holds the server's message."""

    def __init__(self, args: Sequence[str], returncode: int, stdout: str, stderr: str) -> None:
        self.args_ = list(args)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        super().__init__(f"kubectl {' '.join(args)} exited {returncode}: {stderr.strip()}")


def env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def free_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago (the usual small race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass  # not Linux/glibc: stop() still cleans up on orderly exits


# Safety net for callers that forget stop(): every live plane is stopped at exit.
_LIVE: weakref.WeakSet[ControlPlane] = weakref.WeakSet()


@atexit.register
def _stop_forgotten_planes() -> None:
    for plane in list(_LIVE):
        plane.stop()


class ManagedProcess:
    """One child process with its log file and a reliable stop."""

    def __init__(self, name: str, argv: list[str], log_path: Path, cwd: Path,
                 env: dict[str, str] | None = None) -> None:
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.cwd = cwd
        self.env = None if env is None else {**os.environ, **env}  # extra variables over ours
        self.popen: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen is not None else None

    def start(self) -> None:
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        try:
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                cwd=self.cwd,
                env=self.env,
                start_new_session=True,  # Ctrl-C reaches us, not them: we stop them in order
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - single-threaded at start
            )
        except OSError as err:
            self._close_log()
            raise ControlPlaneError(f"failed to start {self.name}: cannot exec {self.argv[0]}: {err}") from err

    def exited(self) -> int | None:
        return None if self.popen is None else self.popen.poll()

    def stop(self, timeout: float) -> None:
        popen = self.popen
        if popen is not None and popen.poll() is None:
            popen.send_signal(signal.SIGTERM)
            try:
                popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait(timeout=timeout)
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def tail(self, lines: int = 25) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


class ControlPlane:
    """etcd + kube-apiserver on loopback, or the current cluster with USE_EXISTING_CLUSTER.

    Use as a context manager or call :meth:`start` / :meth:`stop`. Public
    attributes after start: ``kubeconfig``, ``server``, ``audit_log``
    (None for an existing cluster), ``dir``, ``ca_file``, ``etcd_url``,
    ``apiserver_pid``, ``etcd_pid``.

    ``service_account_admission=True`` runs the API server's default admission plugins
    as a cluster does, ServiceAccount included (a pod that names no account gets
    ``default``, and its token mounted, before validation); off by default, as in
    envtest, since no controller here creates the accounts a pod then needs: a test
    that turns it on creates them.
    """

    def __init__(
        self,
        *,
        assets: Assets | None = None,
        apiserver_port: int | None = None,
        etcd_port: int | None = None,
        extra_apiserver_args: Sequence[str] = (),
        start_timeout: float = 90.0,
        stop_timeout: float = 15.0,
        use_existing: bool | None = None,
        keep_dir: bool | None = None,
        service_account_admission: bool = False,
    ) -> None:
        self.use_existing = env_true("USE_EXISTING_CLUSTER") if use_existing is None else use_existing
        self.keep_dir = env_true("TRAINFORGE_KEEP_CONTROLPLANE") if keep_dir is None else keep_dir
        self.assets = assets
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self._apiserver_port = apiserver_port
        self._etcd_port = etcd_port
        self._extra_apiserver_args = list(extra_apiserver_args)
        self._service_account_admission = service_account_admission

        self.dir: Path | None = None
        self.kubeconfig: Path | None = None
        self.server: str | None = None
        self.audit_log: Path | None = None
        self.ca_file: Path | None = None
        self.etcd_url: str | None = None
        self.failed_logs_dir: Path | None = None
        self._ca: TinyCA | None = None
        self._admin: KeyPair | None = None
        self._etcd: ManagedProcess | None = None
        self._apiserver: ManagedProcess | None = None
        self._kubectl: Path | None = None
        self._ssl: ssl.SSLContext | None = None
        self._clients: dict[str, Any] = {}
        self._started = False

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def etcd_pid(self) -> int | None:
        return self._etcd.pid if self._etcd else None

    @property
    def apiserver_pid(self) -> int | None:
        return self._apiserver.pid if self._apiserver else None

    def start(self) -> ControlPlane:
        if self._started:
            raise ControlPlaneError("control plane already started")
        self._started = True
        _LIVE.add(self)
        if self.use_existing:
            self._use_existing_cluster()
            return self
        try:
            if self.assets is None:
                self.assets = find_assets()
            self._kubectl = kubectl_path(self.assets)
            self.dir = Path(tempfile.mkdtemp(prefix="trainforge-cp-"))
            self._write_pki()
            self._start_etcd()
            self._start_apiserver()
            self._write_kubeconfig()
            self._wait_default_namespace()
        except BaseException:
            self._preserve_logs()
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop kube-apiserver, then etcd, then remove the temp dir. Idempotent."""
        _LIVE.discard(self)
        self.close_clients()
        try:
            if self._apiserver is not None:
                self._apiserver.stop(self.stop_timeout)
        finally:
            try:
                if self._etcd is not None:
                    self._etcd.stop(self.stop_timeout)
            finally:
                if self.dir is not None and not self.keep_dir:
                    shutil.rmtree(self.dir, ignore_errors=True)

    def dead_process(self) -> str | None:
        """A description of a child that exited on its own, or None while both run."""
        for proc in (self._etcd, self._apiserver):
            if proc is not None and (code := proc.exited()) is not None:
                return f"{proc.name} exited unexpectedly with code {code}; see {proc.log_path}"
        return None

    def restart_apiserver(self, downtime: float = 0.0) -> None:
        """Stop and start kube-apiserver only (same port, certs, etcd); wait for /readyz."""
        if self._apiserver is None:
            raise ControlPlaneError("restart_apiserver needs a control plane started here (not USE_EXISTING_CLUSTER)")
        self._apiserver.stop(self.stop_timeout)
        if downtime > 0:
            time.sleep(downtime)
        self._launch(self._apiserver, self._apiserver_ready)

    # ------------------------------------------------------------------ start steps
    def _use_existing_cluster(self) -> None:
        paths = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
        self.kubeconfig = Path(paths[0]) if paths else Path.home() / ".kube" / "config"
        if not paths and not self.kubeconfig.exists():
            raise ControlPlaneError(f"USE_EXISTING_CLUSTER=true but no KUBECONFIG and no {self.kubeconfig}")
        self._kubectl = kubectl_path(None)
        self.server = self.kubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}").stdout
        self.kubectl("get", "--raw", "/readyz")

    def _write_pki(self) -> None:
        assert self.dir is not None
        pki = self.dir / "pki"
        pki.mkdir()
        self._ca = TinyCA()
        self.ca_file = self._ca.write(pki).cert
        self._serving = self._ca.serving_pair(
            pki,
            "apiserver",
            [
                "localhost", LOOPBACK, "10.0.0.1", "kubernetes", "kubernetes.default",
                "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
            ],
        )
        self._admin = self._ca.client_pair(pki, "admin", ADMIN_USER, list(ADMIN_GROUPS))
        self._sa = service_account_keys(pki)
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        ctx.load_cert_chain(str(self._admin.cert), str(self._admin.key))
        self._ssl = ctx

    def _start_etcd(self) -> None:
        assert self.dir is not None and self.assets is not None
        client_port = self._etcd_port or free_port()
        peer_url = f"http://{LOOPBACK}:{free_port()}"
        self.etcd_url = f"http://{LOOPBACK}:{client_port}"
        argv = [
            str(self.assets.etcd),
            "--name=trainforge",
            f"--data-dir={self.dir / 'etcd-data'}",
            f"--listen-client-urls={self.etcd_url}",
            f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=trainforge={peer_url}",
            "--unsafe-no-fsync=true",  # test data only: no fsync makes writes ~10x cheaper
            # etcd's default 2 GiB quota turns every write into "database space exceeded" once the
            # history between the API server's compactions (5 min) outgrows it: 1,000 jobs x 8 pods
            # grew the file to 197 MB in 5 min, and the benchmarks go to 10 times that
            "--quota-backend-bytes=8589934592",
            "--log-level=warn",
        ]
        self._etcd = ManagedProcess("etcd", argv, self.dir / "etcd.log", self.dir)
        self._launch(self._etcd, self._etcd_ready)

    def _start_apiserver(self) -> None:
        assert self.dir is not None and self.assets is not None and self.etcd_url is not None
        port = self._apiserver_port or free_port()
        self.server = f"https://{LOOPBACK}:{port}"
        self.audit_log = self.dir / "audit.log"
        policy = self.dir / "audit-policy.yaml"
        policy.write_text(AUDIT_POLICY)
        argv = [
            str(self.assets.kube_apiserver),
            f"--etcd-servers={self.etcd_url}",
            f"--bind-address={LOOPBACK}",
            f"--advertise-address={LOOPBACK}",
            f"--secure-port={port}",
            f"--cert-dir={self.dir / 'pki'}",
            f"--tls-cert-file={self._serving.cert}",
            f"--tls-private-key-file={self._serving.key}",
            f"--client-ca-file={self.ca_file}",
            f"--service-account-issuer={self.server}",
            f"--service-account-key-file={self._sa.cert}",
            f"--service-account-signing-key-file={self._sa.key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=RBAC",
            # as envtest: nothing creates the 'default' ServiceAccount without a
            # controller-manager, so the admission plugin would reject every Pod
            *([] if self._service_account_admission else ["--disable-admission-plugins=ServiceAccount"]),
            "--allow-privileged=true",
            # the lease reconciler would publish 127.0.0.1 endpoints, which validation rejects
            "--endpoint-reconciler-type=none",
            f"--audit-policy-file={policy}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-mode=blocking",  # event written before the response: tests read it at once
            "--audit-log-maxbackup=1",
            "--audit-log-maxsize=200",
            "--profiling=false",
            *self._extra_apiserver_args,
        ]
        self._apiserver = ManagedProcess("kube-apiserver", argv, self.dir / "kube-apiserver.log", self.dir)
        self._launch(self._apiserver, self._apiserver_ready)

    def _launch(self, proc: ManagedProcess, ready: Callable[[], bool]) -> None:
        proc.start()
        deadline = time.monotonic() + self.start_timeout
        delay = 0.05
        while True:
            code = proc.exited()
            if code is not None:
                raise ControlPlaneError(
                    f"failed to start {proc.name}: exited with code {code}; "
                    f"last log lines:\n{proc.tail()}\nsee {self._log_hint(proc)}"
                )
            if ready():
                return
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"failed to start {proc.name}: not ready within {self.start_timeout:.0f}s; "
                    f"last log lines:\n{proc.tail()}\nsee {self._log_hint(proc)}"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    def _log_hint(self, proc: ManagedProcess) -> Path:
        if self.keep_dir:
            return proc.log_path
        # the temp dir is about to be removed: point at the copy _preserve_logs makes
        return self._failure_dir() / proc.log_path.name

    def _failure_dir(self) -> Path:
        if self.failed_logs_dir is None:
            self.failed_logs_dir = Path(tempfile.mkdtemp(prefix="trainforge-cp-failed-"))
        return self.failed_logs_dir

    def _preserve_logs(self) -> None:
        if self.dir is None or self.keep_dir or not self.dir.exists():
            return
        logs = [p for p in self.dir.glob("*.log") if p.is_file()]
        if logs:
            target = self._failure_dir()
            for log in logs:
                shutil.copy2(log, target / log.name)

    def _etcd_ready(self) -> bool:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(f"{self.etcd_url}/health", timeout=2) as resp:
                return bool(json.loads(resp.read()).get("health") == "true")
        except (OSError, ValueError):
            return False

    def _apiserver_ready(self) -> bool:
        status, _ = self.raw_get("/readyz", timeout=3)
        return status == 200

    def _wait_default_namespace(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while self.raw_get("/api/v1/namespaces/default")[0] != 200:
            if time.monotonic() > deadline:
                raise ControlPlaneError("kube-apiserver is ready but never created the 'default' namespace")
            time.sleep(0.1)

    def raw_get(self, path: str, timeout: float = 10) -> tuple[int, bytes]:
        """GET ``path`` on our API server as admin; (status, body), status 0 if unreachable."""
        if self._ssl is None or self.server is None:
            raise ControlPlaneError("raw_get needs a control plane started here")
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=self._ssl)
        )
        try:
            with opener.open(f"{self.server}{path}", timeout=timeout) as resp:
                return int(resp.status), resp.read()
        except urllib.error.HTTPError as err:
            return int(err.code), err.read()
        except OSError:
            return 0, b""

    # ------------------------------------------------------------------ kubeconfig & users
    def _kubeconfig_doc(self, user: str, pair: KeyPair) -> dict[str, Any]:
        assert self._ca is not None and self.server is not None

        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "trainforge-envtest", "cluster": {
                "server": self.server,
                "certificate-authority-data": b64(self._ca.cert_pem),
            }}],
            "users": [{"name": user, "user": {
                "client-certificate-data": b64(pair.cert.read_bytes()),
                "client-key-data": b64(pair.key.read_bytes()),
            }}],
            "contexts": [{"name": f"{user}@trainforge-envtest", "context": {
                "cluster": "trainforge-envtest", "user": user, "namespace": "default",
            }}],
            "current-context": f"{user}@trainforge-envtest",
            "preferences": {},
        }

    def _write_kubeconfig(self) -> None:
        assert self.dir is not None and self._admin is not None
        self.kubeconfig = self.dir / "kubeconfig"
        # JSON is valid YAML: kubectl and the kubernetes client both read it
        self.kubeconfig.write_text(json.dumps(self._kubeconfig_doc(ADMIN_USER, self._admin), indent=2))
        self.kubeconfig.chmod(0o600)

    def add_user(self, user: str, groups: Iterable[str] = ()) -> Path:
        """Mint a client cert for ``user`` (groups from O=) and return its kubeconfig path.

        The identity has no rights until RBAC grants them: use it to prove a
        ClusterRole is sufficient (and minimal).
        """
        if self._ca is None or self.dir is None:
            raise ControlPlaneError("add_user needs a control plane started here (not USE_EXISTING_CLUSTER)")
        stem = "user-" + "".join(c if c.isalnum() else "-" for c in user)
        pair = self._ca.client_pair(self.dir / "pki", stem, user, list(groups))
        path = self.dir / f"{stem}.kubeconfig"
        path.write_text(json.dumps(self._kubeconfig_doc(user, pair), indent=2))
        path.chmod(0o600)
        return path

    def serving_pair(self, directory: Path, stem: str, hosts: Iterable[str] = (LOOPBACK, "localhost")) -> KeyPair:
        """A serving certificate for ``hosts`` signed by this plane's CA (``ca_file``): what a
        webhook server on loopback presents to the API server, which trusts it through a
        ``caBundle`` holding ``ca_file``."""
        if self._ca is None:
            raise ControlPlaneError("serving_pair needs a control plane started here (not USE_EXISTING_CLUSTER)")
        return self._ca.serving_pair(directory, stem, list(hosts))

    # ------------------------------------------------------------------ clients
    def _kubectl_env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.dir is not None:
            env["KUBECACHEDIR"] = str(self.dir / "kubectl-cache")  # keep ~/.kube/cache clean
        return env

    def kubectl(
        self,
        *args: str,
        check: bool = True,
        input: str | None = None,  # noqa: A002 - mirrors subprocess.run
        timeout: float = 120,
        kubeconfig: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this control plane; raise KubectlError on failure if ``check``."""
        if self._kubectl is None or self.kubeconfig is None:
            raise ControlPlaneError("control plane not started")
        argv = [str(self._kubectl)]
        if not (self.use_existing and kubeconfig is None):  # existing: honour KUBECONFIG lists as is
            argv.append(f"--kubeconfig={kubeconfig or self.kubeconfig}")
        argv += list(args)
        proc = subprocess.run(
            argv, input=input, capture_output=True, text=True, timeout=timeout,
            env=self._kubectl_env(), check=False,
        )
        if check and proc.returncode != 0:
            raise KubectlError(list(args), proc.returncode, proc.stdout, proc.stderr)
        return proc

    def api_client(self, kubeconfig: Path | None = None) -> Any:
        """A ``kubernetes.client.ApiClient`` for this control plane (admin unless ``kubeconfig``)."""
        from kubernetes import (  # lazy: only controller/ imports kubernetes
            client,
            config,
        )

        cfg = client.Configuration()
        path = kubeconfig or self.kubeconfig
        if path is None:
            raise ControlPlaneError("control plane not started")
        config.load_kube_config(config_file=str(path), client_configuration=cfg)
        return client.ApiClient(cfg)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        kubeconfig: Path | None = None,
    ) -> tuple[int, Any]:
        """One raw API call; returns (HTTP status, decoded JSON body) and never raises on 4xx/5xx.

        For asserting exactly what the server answers (422 + its message, 409, 403)
        without the caller importing ``kubernetes``. ``body`` is a JSON-able object
        (also for ``application/apply-patch+yaml``: JSON is YAML). ``kubeconfig``
        selects another identity (see :meth:`add_user`).
        """
        # the controller's own connection (foundation.cluster.connection): every kubeconfig credential,
        # and no generated-client internals, whose signatures change between kubernetes releases
        from foundation.cluster.connection import Connection
        from foundation.cluster.kube import config_loader

        key = str(kubeconfig or self.kubeconfig)
        conn = self._clients.get(key)
        if conn is None:
            conn = self._clients[key] = Connection(config_loader(key), pool_size=4)
        headers = {"Accept": "application/json", "Content-Type": content_type, **conn.auth()}
        resp = conn.urlopen(method.upper(), path, body=None if body is None else json.dumps(body).encode(),
                            headers=headers, timeout=60)
        try:
            status, raw = int(resp.status), resp.read()
        finally:
            resp.release_conn()
        if isinstance(raw, bytes):
            raw = raw.decode(errors="replace")
        try:
            return status, json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return status, raw

    def close_clients(self) -> None:
        for api in self._clients.values():
            api.close()
        self._clients.clear()

    # ------------------------------------------------------------------ CRDs & audit
    def install_crds(self, paths: Iterable[Path | str], timeout: float = 60) -> list[str]:
        """Server-side apply CRD files (or dirs of them); wait until Established and served.

        Returns the CRD names. Server-side apply because the Kubeflow CRDs are
        larger than client-side apply's last-applied annotation allows.
        """
        files: list[Path] = []
        for raw in paths:
            path = Path(raw)
            if path.is_dir():
                files += sorted(p for p in path.iterdir() if p.suffix in {".yaml", ".yml", ".json"})
            elif path.is_file():
                files.append(path)
            else:
                raise ControlPlaneError(f"install_crds: {path} does not exist")
        if not files:
            return []
        args = ["apply", "--server-side", "--force-conflicts", "--field-manager=trainforge-envtest", "-o", "name"]
        for f in files:
            args += ["-f", str(f)]
        out = self.kubectl(*args).stdout.split()
        names = [n.split("/", 1)[1] for n in out if n.startswith("customresourcedefinition")]
        if not names:
            return []
        # `wait -o jsonpath` prints, per CRD once Established: group plural served-versions...
        fmt = '{.spec.group} {.spec.names.plural} {.spec.versions[?(@.served==true)].name}{"\\n"}'
        established = self.kubectl(
            "wait", "--for=condition=Established", f"--timeout={int(timeout)}s",
            *[f"crd/{n}" for n in names], "-o", f"jsonpath={fmt}",
        ).stdout
        wanted: dict[str, set[str]] = {}
        for line in established.splitlines():
            group, plural, *versions = line.split()
            for version in versions:
                wanted.setdefault(f"/apis/{group}/{version}", set()).add(plural)
        self._wait_discovery(wanted, timeout)
        return names

    def _wait_discovery(self, wanted: dict[str, set[str]], timeout: float) -> None:
        """Established is not yet served: poll discovery until every plural is listed."""
        deadline = time.monotonic() + timeout
        for path, plurals in wanted.items():
            while True:
                if self._ssl is not None:  # our own server: a plain GET, not a kubectl process per poll
                    status, body = self.raw_get(path)
                    ok, text = status == 200, body.decode(errors="replace")
                else:
                    proc = self.kubectl("get", "--raw", path, check=False)
                    ok, text = proc.returncode == 0, proc.stdout
                if ok:
                    served = {r["name"] for r in json.loads(text).get("resources", [])}
                    if plurals <= served:
                        break
                if time.monotonic() > deadline:
                    raise ControlPlaneError(f"CRDs {sorted(plurals)} not served at {path} within {timeout}s")
                time.sleep(0.2)

    def audit_events(self) -> list[dict[str, Any]]:
        """Parsed audit log events (one JSON object per line), oldest first."""
        if self.audit_log is None:
            raise ControlPlaneError("no audit log: USE_EXISTING_CLUSTER or not started")
        events: list[dict[str, Any]] = []
        try:
            text = self.audit_log.read_text()
        except FileNotFoundError:
            return events
        for line in text.splitlines():
            line = line.strip()
            if line:
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a line being written right now
        return events
