"""Locate the control plane binaries (kube-apiserver, etcd, kubectl).

Why it is shaped so: the only source of truth for *where* the binaries live is
``build-assets.sh`` (it honours ``KUBEBUILDER_ASSETS`` like envtest, or builds
once into ``${TRAINFORGE_CACHE:-~/.cache/trainforge}/k8s/<version>/``). Python
never re-implements that logic: it runs the script and reads the one line it
prints on stdout. With ``KUBEBUILDER_ASSETS`` set the script is not even run, so
environments that bring their own binaries need no bash/Go at all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BUILD_SCRIPT = Path(__file__).with_name("build-assets.sh")
REQUIRED = ("kube-apiserver", "etcd")


class AssetsError(RuntimeError):
    """The binaries are missing and could not be built."""


@dataclass(frozen=True)
class Assets:
    """Absolute paths of the binaries one control plane needs."""

    directory: Path
    kube_apiserver: Path
    etcd: Path
    kubectl: Path | None  # None: no kubectl in the asset dir nor on PATH


def _is_exe(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _from_dir(directory: Path) -> Assets:
    missing = [name for name in REQUIRED if not _is_exe(directory / name)]
    if missing:
        raise AssetsError(f"asset dir {directory} has no executable {', '.join(missing)}")
    kubectl = directory / "kubectl"
    if not _is_exe(kubectl):
        found = shutil.which("kubectl")
        kubectl = Path(found) if found else None  # type: ignore[assignment]
    return Assets(
        directory=directory,
        kube_apiserver=directory / "kube-apiserver",
        etcd=directory / "etcd",
        kubectl=kubectl,
    )


def asset_dir(build: bool = True, quiet: bool = False) -> Path:
    """Return the directory holding kube-apiserver and etcd.

    ``KUBEBUILDER_ASSETS`` wins. Otherwise run ``build-assets.sh``, which answers
    at once from its cache or builds (4-10 minutes cold). With ``build=False``
    a missing cache is an error instead of a build.
    """
    env_dir = os.environ.get("KUBEBUILDER_ASSETS")
    if env_dir:
        return _from_dir(Path(env_dir)).directory
    if not build:
        from_cache = default_cache_dir()
        try:
            _from_dir(from_cache)
        except AssetsError as err:
            raise AssetsError(f"{err}; build them with `make k8s-assets` (bash {BUILD_SCRIPT})") from err
        return from_cache
    if shutil.which("bash") is None:
        raise AssetsError("bash is needed to run build-assets.sh; or set KUBEBUILDER_ASSETS")
    proc = subprocess.run(
        ["bash", str(BUILD_SCRIPT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if quiet else None,  # progress goes to our stderr
        text=True,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        raise AssetsError(
            f"{BUILD_SCRIPT} failed (exit {proc.returncode}); its stderr above says why. "
            "Set KUBEBUILDER_ASSETS to a dir with kube-apiserver and etcd to skip the build."
        )
    return Path(lines[-1])


def default_cache_dir() -> Path:
    """The cache dir build-assets.sh uses (version read from the script itself)."""
    version = "v1.32.4"
    for line in BUILD_SCRIPT.read_text().splitlines():
        if line.startswith("K8S_VERSION="):
            version = line.split("=", 1)[1].strip()
            break
    root = os.environ.get("TRAINFORGE_CACHE") or str(Path.home() / ".cache" / "trainforge")
    return Path(root) / "k8s" / version


def find_assets(build: bool = True, quiet: bool = False) -> Assets:
    """Asset paths, building the binaries first if needed."""
    return _from_dir(asset_dir(build=build, quiet=quiet))


def kubectl_path(assets: Assets | None = None) -> Path:
    """The kubectl the tests run: the assets' own (``$KUBEBUILDER_ASSETS``, else the cache
    `make k8s-assets` fills, where build-assets.sh puts one when PATH has none), else PATH's.
    None anywhere is an error, never a reason to skip: `make test` builds one."""
    if assets is not None and assets.kubectl is not None:
        return assets.kubectl
    for directory in (os.environ.get("KUBEBUILDER_ASSETS"), str(default_cache_dir())):
        if directory and _is_exe(Path(directory) / "kubectl"):
            return Path(directory) / "kubectl"
    found = shutil.which("kubectl")
    if found is None:
        raise AssetsError(f"no kubectl: run `make k8s-assets` (bash {BUILD_SCRIPT}), or put one on PATH")
    return Path(found)


if __name__ == "__main__":  # pragma: no cover - convenience
    print(asset_dir())
    sys.exit(0)
