"""Small builders for compiler tests: spec text, spec documents, CLI runs, example sets.

Tests describe a job by what differs from the smallest valid one, so a case reads as the
one field it is about. Two shapes exist on purpose: `job_text` keeps exact line numbers
visible (the invalid-spec table pins `file:line:col`), `job_doc` builds plain data for
semantic tests that never look at positions. `run_cli` goes through the real click
entry point and refuses to let a Python exception pass for an exit code.

(The module has a distinctive name because pytest puts every test folder on sys.path.)
"""

from __future__ import annotations

import json
import os
import textwrap
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
API_VERSION = "trainforge.dev/v1alpha1"

# The first line of `spec` in job_text() output is line 8 (without metadata extras).
FIRST_SPEC_LINE = 8


def shared_dir() -> Path:
    """The read-only shared folder: $TRAINFORGE_SHARED or <repo>/../shared."""
    return Path(os.environ.get("TRAINFORGE_SHARED") or REPO.parent / "shared")


def job_text(spec: str = "", *, name: str = "demo", framework: str = "pytorch", metadata: str = "") -> str:
    """The smallest valid TrainJob as text plus `spec` (and `metadata`) lines, dedented.

    Line 1 apiVersion, 2 kind, 3 metadata, 4 name, then the metadata extras, then
    `spec:`, framework and image; the spec extras start on FIRST_SPEC_LINE (8) when there
    are no metadata extras.
    """
    meta = textwrap.indent(textwrap.dedent(metadata), "  ") if metadata else ""
    extra = textwrap.indent(textwrap.dedent(spec), "  ") if spec else ""
    return (
        f"apiVersion: {API_VERSION}\n"
        "kind: TrainJob\n"
        "metadata:\n"
        f"  name: {name}\n"
        f"{meta}"
        "spec:\n"
        f"  framework: {framework}\n"
        "  image: ghcr.io/acme/train:1\n"
        f"{extra}"
    )


def job_doc(
    framework: str = "pytorch",
    *,
    name: str = "demo",
    namespace: str | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A TrainJob document as data; keyword arguments are spec fields."""
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": API_VERSION,
        "kind": "TrainJob",
        "metadata": metadata,
        "spec": {"framework": framework, "image": "ghcr.io/acme/train:1", **spec},
    }


def project_doc(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "Project", **fields}


def write_docs(path: Path, *docs: dict[str, Any]) -> Path:
    """Write documents as JSON, which is YAML 1.2: key order kept, every string quoted
    (PyYAML's safe_dump would leave `3e-5` bare, which a YAML 1.2 reader takes for a number)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"---\n{json.dumps(doc, indent=1)}\n" for doc in docs), encoding="utf-8")
    return path


def compile_docs(folder: Path, *docs: dict[str, Any], project: dict[str, Any] | None = None):
    """Compile jobs (and an optional project file) from `folder`; returns the pipeline Result."""
    from compiler.pipeline import compile_sources

    write_docs(folder / "jobs.yaml", *docs)
    if project is not None:
        write_docs(folder / "trainforge.yaml", project)
    return compile_sources([folder])


def lowered(folder: Path, *docs: dict[str, Any], env: str = "default", project: dict[str, Any] | None = None) -> list[dict]:
    """The kubeflow.org jobs (after overlays) for `env`; fails on any error diagnostic."""
    result = compile_docs(folder, *docs, project=project)
    errors = [d.text() for d in result.diagnostics if d.severity == "error"]
    assert not errors, "\n".join(errors)
    return [bundle.rendered_job() for bundle in result.bundles[env]]


def only_job(folder: Path, doc: dict[str, Any], **kwargs: Any) -> dict:
    (job,) = lowered(folder, doc, **kwargs)
    return job


@dataclass(frozen=True)
class Run:
    exit_code: int
    stdout: str
    stderr: str

    def errors(self) -> list[str]:
        """The `error:` lines of text-format diagnostics, in printed order."""
        return [line for line in self.stderr.splitlines() if ": error: " in line]

    def notices(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if ": notice: " in line]


def job_errors(folder: Path, project: dict[str, Any], spec: str, *, framework: str) -> list[str]:
    """`validate` of one job (`job_text(spec)`) beside `project`: its errors as "L:C: <path>: ..."."""
    write_docs(folder / "trainforge.yaml", project)
    (folder / "job.yaml").write_text(job_text(spec, framework=framework))
    out = []
    for line in run_cli("validate", folder).errors():  # "<file>:L:C: error: <path>: ..." -> "L:C: <path>: ..."
        where, message = line.split(": error: ", 1)
        assert where.rsplit(":", 2)[0].endswith("job.yaml"), line
        out.append(":".join(where.rsplit(":", 2)[1:]) + ": " + message)
    return out


def run_cli(*args: str | Path) -> Run:
    """`train-compile ARGS` in-process; a Python exception fails the test with its traceback."""
    from click.testing import CliRunner

    from compiler.cli.main import main

    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(
            "train-compile raised instead of reporting:\n" + "".join(traceback.format_exception(*result.exc_info))
        )
    for stream in (result.stdout, result.stderr):
        assert "Traceback (most recent call last)" not in stream
    return Run(result.exit_code, result.stdout, result.stderr)


def example_files() -> list[Path]:
    """Top-level examples: one source set without a project file (environment `default`)."""
    return sorted(p for p in EXAMPLES.glob("*.yaml") if p.is_file())


def example_sets() -> list[tuple[str, list[Path]]]:
    """Every set of sources `make demo` compiles: the top-level files, each project folder."""
    sets = [("top-level examples", example_files())]
    for folder in sorted(p for p in EXAMPLES.iterdir() if (p / "trainforge.yaml").is_file()):
        sets.append((f"project example {folder.name}", [folder]))
    return sets


def pruned_fields(obj: Any, schema: dict[str, Any], path: str = "") -> Iterator[str]:
    """Paths in `obj` that the API server would drop under this structural schema.

    A mapping key survives when the schema lists it in `properties`, or the schema has
    `additionalProperties` (a schema or true), or `x-kubernetes-preserve-unknown-fields`.
    An object's `apiVersion`, `kind` and `metadata` survive at the root and in embedded
    resources.
    """
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        return
    if isinstance(obj, dict):
        properties = schema.get("properties", {})
        additional = schema.get("additionalProperties")
        keep = {"apiVersion", "kind", "metadata"} if (not path or schema.get("x-kubernetes-embedded-resource")) else set()
        for key, value in obj.items():
            child = f"{path}.{key}" if path else str(key)
            if key in keep:  # ObjectMeta is the server's own, not the CRD's, to prune
                continue
            if key in properties:
                yield from pruned_fields(value, properties[key], child)
            elif isinstance(additional, dict):
                yield from pruned_fields(value, additional, child)
            elif additional is True or schema.get("x-kubernetes-preserve-unknown-fields"):
                continue
            else:
                yield child
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(obj):
            yield from pruned_fields(item, schema["items"], f"{path}[{i}]")
