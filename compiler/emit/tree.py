"""The output: a kustomize tree per environment, built as a file map, written atomically.

`files(result)` is pure: it returns `{relative path: text}` for the whole output, so
`build`, `check` and the tests all agree on one definition of "what build writes".
`write(files, out, envs)` puts it on disk through a temporary folder beside the target
and a rename, so a failed or interrupted run leaves the previous output untouched and
never a half-written tree.

What `build` owns in OUT: the YAML files inside the environment folders (each holds a
kustomization.yaml). Everything else there (a README.md, a .gitkeep, OWNERS, a root
kustomization of the user's own) is kept byte for byte by `build` and ignored by `check`;
a top-level folder holding YAML without a kustomization.yaml is refused by name, since
replacing it would lose someone's files.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from compiler.emit import namespaces, prerequisites, serialize
from compiler.emit.source import source_of, stamped
from compiler.pipeline import Result
from schemas import patching
from schemas.bundle import Bundle, Component

KUSTOMIZE_API = "kustomize.config.k8s.io/v1beta1"
COMPONENT_API = "kustomize.config.k8s.io/v1alpha1"
PATCH_FILE = "job-patch.yaml"


class UnsafeOutput(ValueError):
    """The output folder holds something that is not a trainforge tree."""


def resource_file(obj: dict) -> str:
    return f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"


def job_dir(bundle: Bundle) -> str:
    t = bundle.target
    return f"{t.namespace}/{t.name}"


def source_header(bundle: Bundle) -> str:
    """The comment that opens every object and patch file of a job: the spec it came from,
    as a path from the git repository's root (the same from any working folder) and the
    document's line, so a reviewer of the compiled diff finds what to edit. A comment,
    not an annotation: kustomize drops it, so the cluster's objects do not change when
    an edit elsewhere in the file moves the line."""
    doc = bundle.target.doc
    return (f"# From {source_of(bundle)}:{doc.start[0]} (TrainJob {bundle.target.name}); "
            "compiled by train-compile: edit the spec, not this file\n")


def _component_files(bundle: Bundle, component: Component, header: str) -> dict[str, str]:
    base = f"{job_dir(bundle)}/{component.name}"
    source = source_of(bundle)
    out = {f"{base}/{resource_file(r)}": header + serialize.dump(stamped(r, source)) for r in component.resources}
    kustomization: dict = {"apiVersion": COMPONENT_API, "kind": "Component"}
    if component.resources:
        kustomization["resources"] = sorted(resource_file(r) for r in component.resources)
    if component.patches:
        group, _, version = bundle.job["apiVersion"].rpartition("/")
        kustomization["patches"] = [
            {
                "path": PATCH_FILE,
                "target": {
                    "group": group,
                    "version": version,
                    "kind": bundle.kind,
                    "name": bundle.target.name,
                    "namespace": bundle.target.namespace,
                },
            }
        ]
        out[f"{base}/{PATCH_FILE}"] = header + serialize.dump(patching.guarded(bundle.job, component.patches))
    out[f"{base}/kustomization.yaml"] = serialize.dump(kustomization)
    return out


def bundle_files(bundle: Bundle) -> dict[str, str]:
    base = job_dir(bundle)
    job_file = f"{bundle.kind.lower()}.yaml"
    kustomization: dict = {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization", "resources": [job_file]}
    if bundle.components:
        kustomization["components"] = [c.name for c in bundle.components]
    header = source_header(bundle)
    out = {
        f"{base}/kustomization.yaml": serialize.dump(kustomization),
        f"{base}/{job_file}": header + serialize.dump(stamped(bundle.job, source_of(bundle))),
    }
    for component in bundle.components:
        out.update(_component_files(bundle, component, header))
    return out


def files(result: Result) -> dict[str, str]:
    """Every file of the output tree, keyed by path relative to the output folder."""
    out: dict[str, str] = {}
    for env, bundles in result.bundles.items():
        dirs = [job_dir(b) for b in bundles]
        spaces = namespaces.for_environment(result, env)
        root = {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization",
                "resources": sorted(dirs + [namespaces.path(n) for n in spaces])}
        out[f"{env}/kustomization.yaml"] = serialize.dump(root)
        out.update({f"{env}/{namespaces.path(n)}": serialize.dump(n) for n in spaces})
        for bundle in bundles:
            out.update({f"{env}/{path}": text for path, text in bundle_files(bundle).items()})
        for path, lists in prerequisites.kustomizations(result, env, bundles, spaces).items():  # Flux's, not listed
            out[f"{env}/{path}"] = serialize.dump({"apiVersion": KUSTOMIZE_API, "kind": "Kustomization", **lists})
    return dict(sorted(out.items()))


YAML_SUFFIXES = (".yaml", ".yml")


def _is_yaml(name: str) -> bool:
    return name.endswith(YAML_SUFFIXES)


def read(out: Path) -> dict[str, str]:
    """The part of the tree on disk that `build` owns (for `check`): the YAML files inside
    the environment folders. Anything else in OUT (a README.md, a .gitkeep, a kustomization
    of the user's own at the root) is not train-compile's and is neither compared nor touched."""
    if not out.is_dir():
        return {}
    return {
        str(p.relative_to(out)): p.read_text(encoding="utf-8")
        for folder in sorted(out.iterdir()) if folder.is_dir()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and _is_yaml(p.name)
    }


def _kept_files(out: Path) -> list[str]:
    """Files in OUT that `build` keeps as they are: every file that is not YAML inside an
    environment folder (an environment folder is one `build` wrote: it holds a
    kustomization.yaml). A folder at the top of OUT that holds YAML but no
    kustomization.yaml is someone else's: replacing it would lose their files, so that is
    refused, naming the first one."""
    kept: list[str] = []
    for entry in sorted(out.iterdir()):
        if not entry.is_dir():
            kept.append(entry.name)
            continue
        ours = (entry / "kustomization.yaml").is_file()
        for path in sorted(entry.rglob("*")):
            if not path.is_file():
                continue
            rel = str(path.relative_to(out))
            if not _is_yaml(path.name):
                kept.append(rel)
            elif not ours:
                raise UnsafeOutput(
                    f"{out / rel} was not written by train-compile (the folder {out / entry.name} has no"
                    f" kustomization.yaml), and building into {out} would replace it; move it out of"
                    f" {out}, or build into another folder"
                )
    return kept


def _write(path: str, text: str) -> None:
    """`path.write_text(text)` without a text-file object per file (their cost: bench/README.md)."""
    data = memoryview(text.encode("utf-8"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def _make_folder(staging: str, folder: str, made: set[str]) -> None:
    """mkdir `folder` (relative to `staging`) and its parents, each once per run: the tree
    is written in path order, so a parent is nearly always made already (no stat to ask)."""
    if folder in made or not folder:
        return
    _make_folder(staging, folder.rpartition("/")[0], made)
    try:
        os.mkdir(f"{staging}/{folder}")
    except FileExistsError:  # copied over from a kept environment, or a parent made above
        pass
    made.add(folder)


def write(tree: dict[str, str], out: Path, *, envs: list[str], keep_other_envs: bool) -> None:
    """Replace `out` (or only `out/<env>` for `envs`, with `keep_other_envs`) atomically."""
    out = out.resolve()
    if out.exists() and not out.is_dir():
        raise UnsafeOutput(f"{out} is a file, not a folder; name a folder to build into")
    kept = _kept_files(out) if out.exists() else []
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        if out.exists() and keep_other_envs:  # --env limits the run to one environment
            for entry in out.iterdir():
                if entry.name not in envs:
                    shutil.copytree(entry, staging / entry.name)
        # one mkdir per folder, not per file (9,000 files for 1,000 jobs), and text paths:
        # a pathlib join per file was a good part of writing the tree (bench/README.md)
        made: set[str] = set()
        root = str(staging)
        for rel, text in tree.items():
            folder = rel.rpartition("/")[0]
            if folder not in made:
                _make_folder(root, folder, made)
            _write(f"{root}/{rel}", text)
        for rel in kept:  # README.md, .gitkeep, ...: not ours, carried over byte for byte
            target = staging / rel
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(out / rel, target)
        old = None
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.rename(out, old / "tree")
        os.rename(staging, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
