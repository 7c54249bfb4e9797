"""Build (once) or find the test world's Go binaries: one table of pinned builds, one cache.

Why it is shaped so: this machine reaches only the Go module proxy, so every engine the
tests run (kube-scheduler, kwok, Flux, Argo CD, the upstream operator, ...) is built from
a pinned module version and cached OUTSIDE the repo, the way ``build-assets.sh`` caches
kube-apiserver. One mechanism for all of them:

* ``BUILDS`` is the one table: name, module, version, main packages, recipe.
* ``build(name)`` returns ``${TRAINFORGE_CACHE:-~/.cache/trainforge}/<name>/<version>/``
  holding the binaries. A warm cache is a stamp file whose text equals the entry's
  stamp plus one stat per binary: no ``go`` call. A cold one is built under a file lock
  (a second caller waits, then finds it), in a temp dir next to the cache that is renamed
  into place only after every binary ran ``--version``/``--help``: an interrupted build
  leaves the old cache (or none), never half of one. Go's output goes to
  ``<root>/<name>/build.log``.
* Go runs with ``GOTOOLCHAIN=local``, ``GOFLAGS=-mod=mod -buildvcs=false``,
  ``CGO_ENABLED=0`` and ``GOPROXY`` without ``,direct`` (only the proxy is reachable).

Recipes (``Build.recipe``):
  ``install``     ``go install PKG@VERSION`` (modules without replace directives);
  ``wrapper``     a throw-away module requiring MODULE@VERSION that copies the module's
                  non-directory ``replace`` lines (plus ``Build.replaces``), then
                  ``go build PKG`` (what ``go install`` refuses: Flux controllers);
  ``module-copy`` a writable copy of the downloaded module dir, ``go build ./REL`` inside it
                  (a module that must be its own main module: Argo CD);
  ``kubernetes``  ``build-assets.sh --components NAME`` (the kube-apiserver wrapper,
                  staging replaces and version stamps, reused rather than repeated);
  ``controlplane`` ``build-assets.sh`` itself (kube-apiserver + etcd, its own cache).
A ``Build`` may instead carry ``custom``: a function ``(build, workdir, outdir, env)``.

API: ``BUILDS``, ``register(Build(...))`` (a module that does so at import is listed in
``ROW_MODULES``; ``load_rows()`` imports them all), ``build(name) -> Path``, ``find(name) -> Path | None``,
``binary(name, exe=None) -> Path``, ``cache_dir(name) -> Path``; errors are ``BuildError``
with a one-line message (``GoMissing`` when there is no toolchain).
"""

from __future__ import annotations

import fcntl
import importlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .paths import cache_root

Recipe = Callable[["Build", Path, Path, dict[str, str]], None]
BUILD_SCRIPT = Path(__file__).with_name("build-assets.sh")
GO_FALLBACK = Path("/usr/local/go/bin")  # where Go's tarball installs, often not on PATH


class BuildError(RuntimeError):
    """A binary is missing and could not be built (one line, says what to do)."""


class GoMissing(BuildError):
    """No ``go`` toolchain to build with."""


@dataclass(frozen=True)
class Build:
    """One pinned Go build. ``binaries`` defaults to each package's last path element."""

    name: str
    module: str
    version: str
    packages: tuple[str, ...]
    recipe: str = "install"
    binaries: tuple[str, ...] = ()
    replaces: tuple[str, ...] = ()  # extra wrapper replace lines, "old/mod => new/mod v1.2.3"
    ldflags: str = "-s -w"
    gcflags: str = ""  # e.g. UNOPTIMIZED for an engine only the end-to-end tests run
    smoke: tuple[str, ...] = ("--version",)  # argv that must exit 0 for each built binary
    cold: str = ""  # measured cold build time, shown while building
    custom: Recipe | None = field(default=None, compare=False)

    @property
    def exes(self) -> tuple[str, ...]:
        return self.binaries or tuple(p.rstrip("/").rsplit("/", 1)[-1] for p in self.packages)

    @property
    def stamp(self) -> str:
        parts = [self.name, self.module, self.version, self.recipe, *self.packages, *self.exes,
                 *self.replaces, self.ldflags, *([f"gcflags={self.gcflags}"] if self.gcflags else []), "build=1"]
        return " ".join(parts)

    @property
    def flags(self) -> list[str]:
        """The flags every recipe gives ``go build``/``go install``."""
        return ["-trimpath", *(["-gcflags", self.gcflags] if self.gcflags else []), "-ldflags", self.ldflags]


BUILDS: dict[str, Build] = {}

# Go's optimizer and inliner off for every package: a cold build of kwok v0.8.0 on an idle
# 2-core machine took 2 min 29 s instead of 3 min 22 s (user CPU -27 %). Only for the engines
# nothing times or benchmarks (Flux, Argo CD, JobSet, Trainer, Kueue: the end-to-end loops,
# which wait on each other, not on CPU), to keep a cold `make test` inside its budget; the
# control plane, kwok, the scheduler and the upstream operator (bench-scale's baseline) stay optimized.
UNOPTIMIZED = "all=-N -l"
# builds that testworld.suite's background child makes while the tests that set this run (comma-separated)
DEFERRED_ENV = "TRAINFORGE_DEFERRED_BUILDS"


def register(entry: Build) -> Build:
    """Add (or replace) a row of the table; returns it."""
    BUILDS[entry.name] = entry
    return entry


# Modules that add rows of their own (a recipe lives beside the part that runs it). They
# import this module, so they are loaded on demand (load_rows), not from here.
ROW_MODULES = ("testworld.upstream", "testworld.flux", "testworld.argocd", "testworld.trainer", "testworld.kueue",
               "testworld.mpi_operator")


def load_rows() -> dict[str, Build]:
    """Import every module of ROW_MODULES (one not in this checkout is skipped) and return
    the whole table."""
    for module in ROW_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name != module:
                raise
    return BUILDS


for _row in (
    Build("k8s", "k8s.io/kubernetes", "v1.32.4", ("k8s.io/kubernetes/cmd/kube-apiserver",),
          recipe="controlplane", binaries=("kube-apiserver", "etcd"), cold="3.5-10 min"),
    Build("kube-scheduler", "k8s.io/kubernetes", "v1.32.4", ("k8s.io/kubernetes/cmd/kube-scheduler",),
          recipe="kubernetes", cold="~1 min after k8s"),
    Build("kube-controller-manager", "k8s.io/kubernetes", "v1.32.4",
          ("k8s.io/kubernetes/cmd/kube-controller-manager",), recipe="kubernetes", cold="~2 min after k8s"),
    Build("kwok", "sigs.k8s.io/kwok", "v0.8.0", ("sigs.k8s.io/kwok/cmd/kwok",), cold="~2 min"),
    Build("kustomize", "sigs.k8s.io/kustomize/kustomize/v5", "v5.8.1", ("sigs.k8s.io/kustomize/kustomize/v5",),
          binaries=("kustomize",), smoke=("version",), cold="~1 min"),
):
    register(_row)


# ---------------------------------------------------------------------------------- paths
def _entry(name: str | Build) -> Build:
    if isinstance(name, Build):
        return name
    if name not in BUILDS:
        load_rows()
    try:
        return BUILDS[name]
    except KeyError:
        raise BuildError(f"unknown build {name!r}; known: {', '.join(sorted(BUILDS))}") from None


def cache_dir(name: str | Build) -> Path:
    entry = _entry(name)
    return cache_root() / entry.name / entry.version


def _is_exe(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find(name: str | Build) -> Path | None:
    """The cache dir if it is complete (stamp + every binary), else None. No ``go`` call."""
    entry = _entry(name)
    if entry.recipe == "controlplane":
        from .assets import AssetsError, asset_dir

        try:
            return asset_dir(build=False)
        except AssetsError:
            return None
    target = cache_dir(entry)
    try:
        if (target / ".complete").read_text() != entry.stamp:
            return None
    except OSError:
        return None
    return target if all(_is_exe(target / exe) for exe in entry.exes) else None


def binary(name: str | Build, exe: str | None = None) -> Path:
    """Path of one binary of a build (its first by default), building it if needed."""
    entry = _entry(name)
    return build(entry) / (exe or entry.exes[0])


# ---------------------------------------------------------------------------------- go
def go_env() -> dict[str, str]:
    """The environment every build runs with; raises GoMissing without a toolchain."""
    env = dict(os.environ)
    path = env.get("PATH", "")
    if shutil.which("go", path=path) is None and _is_exe(GO_FALLBACK / "go"):
        path = f"{GO_FALLBACK}:{path}"
    if shutil.which("go", path=path) is None:
        raise GoMissing(f"no 'go' toolchain on PATH (or {GO_FALLBACK}): install Go >= 1.23 to build "
                        "the test world's binaries")
    proxies = [p for p in re.split(r"[,|]", env.get("GOPROXY", "")) if p and p not in {"direct", "off"}]
    env.update(
        PATH=path,
        GOTOOLCHAIN="local",  # never download another toolchain
        GOFLAGS="-mod=mod -buildvcs=false",
        GOPROXY=",".join(proxies) or "https://proxy.golang.org",  # no ",direct": VCS hosts are unreachable
        CGO_ENABLED="0",
    )
    return env


_SUMDB_404 = re.compile(r"/sumdb/[^ ]*/lookup/([^@ ]+)@[^ ]*: 404 Not Found")


def build_log(work: Path) -> Path:
    """Where a recipe writes go's output: beside the temp dir, so it outlives a failure."""
    return work.parent / "build.log"


def run_go(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> None:
    """Run a go command, appending its output to ``log``. A failure caused only by the
    checksum database having no record of some modules (404) exempts exactly those
    (GONOSUMDB) and retries, as build-assets.sh does; any other failure raises."""
    for _ in range(6):
        with open(log, "a") as out:
            out.write(f"$ {' '.join(argv)}\n")
            out.flush()
            start = log.stat().st_size
            proc = subprocess.run(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
        if proc.returncode == 0:
            return
        with open(log, errors="replace") as text:
            text.seek(start)
            missing = sorted(set(_SUMDB_404.findall(text.read())))
        if not missing:
            raise BuildError(f"{' '.join(argv[:3])} ... exited {proc.returncode}; see {log}")
        env["GONOSUMDB"] = ",".join(filter(None, [env.get("GONOSUMDB", ""), *missing]))
    raise BuildError(f"{' '.join(argv[:3])} ... kept failing on checksum lookups; see {log}")


def module_info(module: str, version: str, workdir: Path, env: dict[str, str], log: Path) -> dict[str, str]:
    """``go mod download -json`` of one module: its Dir and GoMod paths."""
    out = workdir / "download.json"
    with open(out, "w") as sink, open(log, "a") as err:
        proc = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"], cwd=workdir, env=env,
                              stdout=sink, stderr=err, check=False)
    info = json.loads(out.read_text() or "{}")
    if proc.returncode != 0 or "Dir" not in info:
        raise BuildError(f"go mod download {module}@{version} failed: {info.get('Error', 'see ' + str(log))}")
    return {k: str(v) for k, v in info.items()}


# ---------------------------------------------------------------------------------- recipes
def _install(entry: Build, work: Path, out: Path, env: dict[str, str]) -> None:
    env = dict(env, GOBIN=str(out))
    for pkg in entry.packages:
        run_go(["go", "install", *entry.flags, f"{pkg}@{entry.version}"],
               work, env, build_log(work))


def _replace_lines(gomod: str) -> list[str]:
    """The module's replace directives that point at other modules (not ./dirs)."""
    lines: list[str] = []
    in_block = False
    for raw in gomod.splitlines():
        line = raw.split("//", 1)[0].strip()
        if line.startswith("replace ("):
            in_block = True
            continue
        if in_block and line == ")":
            in_block = False
            continue
        body = line[len("replace "):] if line.startswith("replace ") else line if in_block else ""
        if "=>" in body and not body.split("=>", 1)[1].strip().startswith((".", "/")):
            lines.append(body)
    return lines


def _wrapper(entry: Build, work: Path, out: Path, env: dict[str, str]) -> None:
    log = build_log(work)
    info = module_info(entry.module, entry.version, work, env, log)
    gomod = Path(info["GoMod"]).read_text()
    godebug = [line for line in gomod.splitlines() if line.startswith("godebug ")]
    overridden = {r.split("=>")[0].split()[0] for r in entry.replaces}
    replaces = [r for r in _replace_lines(gomod) if r.split()[0] not in overridden] + list(entry.replaces)
    src = work / "wrapper"
    src.mkdir()
    (src / "go.mod").write_text("\n".join([
        f"module trainforge.local/testworld/{entry.name}", "", "go 1.23.0", "", *godebug, "",
        f"require {entry.module} {entry.version}", "", "replace (", *[f"\t{r}" for r in replaces], ")", "",
    ]))
    for pkg, exe in zip(entry.packages, entry.exes, strict=True):
        run_go(["go", "build", *entry.flags, "-o", str(out / exe), pkg], src, env, log)


def copy_module(entry: Build, work: Path, env: dict[str, str]) -> Path:
    """A writable copy of the downloaded module, ``work/module`` (the module cache is read-only)."""
    info = module_info(entry.module, entry.version, work, env, build_log(work))
    src = work / "module"
    shutil.copytree(info["Dir"], src)
    for path in [src, *src.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)
    return src


def build_in_copy(entry: Build, src: Path, out: Path, env: dict[str, str], log: Path) -> None:
    """``go build`` each of the entry's packages inside the module copy ``src``."""
    for pkg, exe in zip(entry.packages, entry.exes, strict=True):
        rel = "./" + pkg[len(entry.module):].lstrip("/") if pkg.startswith(entry.module) else pkg
        run_go(["go", "build", *entry.flags, "-o", str(out / exe), rel], src, env, log)


def _module_copy(entry: Build, work: Path, out: Path, env: dict[str, str]) -> None:
    build_in_copy(entry, copy_module(entry, work, env), out, env, build_log(work))


def _kubernetes(entry: Build, work: Path, out: Path, env: dict[str, str]) -> None:
    names = " ".join(p.rsplit("/", 1)[-1] for p in entry.packages)
    with open(build_log(work), "a") as log:
        proc = subprocess.run(["bash", str(BUILD_SCRIPT), "--components", names, "--out", str(out)],
                              env=env, stdout=subprocess.DEVNULL, stderr=log, check=False)
    if proc.returncode != 0:
        raise BuildError(f"{BUILD_SCRIPT.name} --components {names} exited {proc.returncode}; see {build_log(work)}")


RECIPES: Mapping[str, Recipe] = {
    "install": _install, "wrapper": _wrapper, "module-copy": _module_copy, "kubernetes": _kubernetes,
}


# ---------------------------------------------------------------------------------- build
def build(name: str | Build, *, say: Callable[[str], None] | None = None) -> Path:
    """The dir holding the build's binaries: found in the cache or built now (under a lock)."""
    entry = _entry(name)
    if entry.recipe == "controlplane":
        from .assets import AssetsError, asset_dir

        try:
            return asset_dir(build=True, quiet=True)
        except AssetsError as err:
            raise BuildError(str(err)) from err
    if entry.name in os.environ.get(DEFERRED_ENV, "").split(","):  # testworld.suite: a child builds it while these tests run
        raise BuildError(f"{entry.name} is built in the background while this phase of `make test` runs: "
                         "a test that needs it belongs in one of testworld.suite.LATE_DIRS")
    found = find(entry)
    if found is not None:
        return found
    recipe = entry.custom or RECIPES.get(entry.recipe)
    if recipe is None:
        raise BuildError(f"build {entry.name}: unknown recipe {entry.recipe!r}; known: {', '.join(RECIPES)}")
    env = go_env()
    root = cache_root() / entry.name
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if say:
                say(f"{entry.name}: another build holds {root / '.lock'}; waiting")
            fcntl.flock(lock, fcntl.LOCK_EX)
        found = find(entry)  # built by whoever held the lock
        if found is not None:
            return found
        for stale in root.glob(".build.*"):  # we hold the lock: leftovers of a killed build
            shutil.rmtree(stale, ignore_errors=True)
        return _build_locked(entry, recipe, env, root, say)


def _build_locked(entry: Build, recipe: Recipe, env: dict[str, str], root: Path,
                  say: Callable[[str], None] | None) -> Path:
    work = Path(tempfile.mkdtemp(prefix=".build.", dir=root))
    log = build_log(work)
    log.write_text(f"# {entry.stamp}\n")
    try:
        out = work / "out"
        started = time.monotonic()
        recipe(entry, work, out, env)
        for exe in entry.exes:
            path = out / exe
            if not _is_exe(path):
                raise BuildError(f"build {entry.name}: no {exe} was produced; see {log}")
            smoke = subprocess.run([str(path), *entry.smoke], capture_output=True, timeout=60, check=False)
            if smoke.returncode != 0:
                raise BuildError(f"build {entry.name}: {exe} {' '.join(entry.smoke)} exited {smoke.returncode}")
        seconds = time.monotonic() - started
        (out / "BUILD_INFO").write_text(f"{entry.stamp}\nbuild_seconds={seconds:.0f}\n")
        (out / ".complete").write_text(entry.stamp)
        target = cache_dir(entry)
        if target.exists():
            target.rename(work / "stale")  # replaced as a whole
        out.rename(target)
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)
