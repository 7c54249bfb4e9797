"""A git repository served over HTTP on 127.0.0.1, the way Flux and Argo CD fetch one.

Why it is shaped so: both engines only fetch over http(s) or ssh (a Flux GitRepository
refuses a file:// URL), and this machine has no git hosting. Git ships the server side
itself: ``git http-backend`` is a CGI program speaking the smart HTTP protocol (v0 to
v2). So the server is a small threaded ``http.server`` that hands every request to that
CGI program (headers in, CGI headers out) and nothing else; Python's own CGI handler is
deprecated and would not pass ``Git-Protocol`` through. The engines only read, so the
server refuses pushes; tests write through :class:`Workdir`, a clone that commits and
pushes over the local path (no HTTP needed, and a push is then visible to the next
fetch at once).

One server serves every bare repository under its root, so several worlds (each with
its own root and free port) never share state. ``GitPart`` is the server as a World part
named ``git`` (root ``<world dir>/git``).
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

LOOPBACK = "127.0.0.1"
BACKEND = Path("/usr/lib/git-core/git-http-backend")
IDENTITY = {"GIT_AUTHOR_NAME": "trainforge-testworld", "GIT_AUTHOR_EMAIL": "testworld@trainforge.invalid",
            "GIT_COMMITTER_NAME": "trainforge-testworld", "GIT_COMMITTER_EMAIL": "testworld@trainforge.invalid"}


class GitError(RuntimeError):
    """A git command failed; the message carries its stderr."""


def git(*args: str, cwd: Path) -> str:
    """Run git with a fixed identity and no user or system config; its stdout."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", **IDENTITY}
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args)} in {cwd} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def backend_path() -> Path:
    found = BACKEND if BACKEND.is_file() else None
    if found is None:
        exec_path = subprocess.run(["git", "--exec-path"], capture_output=True, text=True, check=False).stdout.strip()
        candidate = Path(exec_path) / "git-http-backend"
        found = candidate if candidate.is_file() else None
    if found is None:
        raise GitError("git-http-backend not found: install git (Debian: apt-get install git)")
    return found


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._cgi()

    def do_POST(self) -> None:  # noqa: N802
        self._cgi()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - base signature
        with open(self.server.log_path, "a") as log:
            log.write(f"{self.address_string()} {format % args}\n")

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _cgi(self) -> None:
        path, _, query = self.path.partition("?")
        if "git-receive-pack" in path or "git-receive-pack" in query:
            self.send_error(403, "read-only: push through testworld.gitserver.Workdir")
            return
        env = {
            "GIT_PROJECT_ROOT": str(self.server.root), "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""), "REMOTE_ADDR": self.client_address[0],
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""), "PATH": "/usr/bin:/bin",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": str(self.server.root),
        }
        body = self._body() if self.command == "POST" else b""
        if self.headers.get("Content-Encoding", "") == "gzip":
            env["HTTP_CONTENT_ENCODING"] = "gzip"
        env["CONTENT_LENGTH"] = str(len(body))
        proc = subprocess.run([str(self.server.backend)], input=body, env=env, capture_output=True, check=False)
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = proc.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        if proc.returncode != 0 and status == 200:
            status = 500
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path, log_path: Path) -> None:
        self.root, self.log_path, self.backend = root, log_path, backend_path()
        super().__init__((LOOPBACK, 0), _Handler)


class GitServer:
    """Bare repositories under ``root``, served read-only at ``http://127.0.0.1:PORT/<name>.git``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise GitError("git server not started")
        return int(self._server.server_address[1])

    def start(self) -> GitServer:
        self.root.mkdir(parents=True, exist_ok=True)
        self._server = _Server(self.root, self.root / "http.log")
        self._thread = threading.Thread(target=self._server.serve_forever, name="testworld-git", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def url(self, name: str) -> str:
        return f"http://{LOOPBACK}:{self.port}/{name}.git"

    def create(self, name: str, branch: str = "main") -> Workdir:
        """A new bare repository ``name`` and a working clone of it to commit into."""
        bare = self.root / f"{name}.git"
        git("init", "--bare", "--quiet", f"--initial-branch={branch}", str(bare), cwd=self.root)
        work = self.root / "work" / name
        work.mkdir(parents=True)
        git("init", "--quiet", f"--initial-branch={branch}", cwd=work)
        git("remote", "add", "origin", str(bare), cwd=work)
        return Workdir(work, branch, self.url(name))


class Workdir:
    """A clone to change files in; :meth:`commit` commits everything and pushes."""

    def __init__(self, path: Path, branch: str, url: str) -> None:
        self.path, self.branch, self.url = path, branch, url

    def write(self, rel: str, text: str) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def remove(self, rel: str) -> None:
        target = self.path / rel
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()

    def commit(self, message: str) -> str:
        """Commit every change (additions and removals) and push; the new commit's SHA."""
        git("add", "--all", ".", cwd=self.path)
        git("commit", "--quiet", "--allow-empty", "-m", message, cwd=self.path)
        git("push", "--quiet", "origin", f"HEAD:{self.branch}", cwd=self.path)
        return self.head()

    def head(self) -> str:
        return git("rev-parse", "HEAD", cwd=self.path).strip()


class GitPart(GitServer):
    """The git server as a ``Part`` of a World: ``World([..., GitPart(), ...])``."""

    name = "git"

    def __init__(self) -> None:
        super().__init__(Path("."))

    def build(self) -> None:
        from .part import PartError

        try:
            backend_path()  # a clear error now rather than a 500 at the first fetch
        except GitError as err:
            raise PartError(f"git: {err}") from err

    def start(self, world: Any = None) -> GitPart:  # type: ignore[override]
        if world is not None:
            self.root = Path(world.dir) / "git"
        super().start()
        return self
