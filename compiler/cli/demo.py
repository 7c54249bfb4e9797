"""`make demo`: compile the examples the way a user would and show what came out.

Top-level `examples/*.yaml` compile as one source (no project file, environment
`default`) into `build/examples/`; every sub-folder with a `trainforge.yaml` compiles
as its own project into `build/<folder>/`. Each tree is then rendered with `kubectl
kustomize` when kubectl is installed, the step Argo CD runs, and a table summarises
each job: kind, pods per role, GPUs, memory per node, storage and overlay components,
each column as wide as its widest cell.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from compiler.diagnostics import format_text
from compiler.emit import tree
from compiler.pipeline import Result, compile_sources
from compiler.reading.sources import PROJECT_FILE
from schemas.bundle import Bundle


def _sources(examples: Path) -> list[tuple[str, list[Path]]]:
    runs = []
    top = sorted(p for p in examples.glob("*.y*ml") if p.is_file())
    if top:
        runs.append(("examples", top))
    for folder in sorted(p for p in examples.iterdir() if (p / PROJECT_FILE).is_file()):
        runs.append((folder.name, [folder]))
    return runs


COLUMNS = ("JOB", "KIND", "PODS", "GPUS", "MEMORY/NODE", "STORAGE", "COMPONENTS")


def job_row(bundle: Bundle) -> tuple[str, ...]:
    """One job as the table shows it: pods per role as the target lays them out (replica
    specs or numNodes), GPUs in all, memory per node, each volume (a new PVC's size or the
    claim it mounts) and the overlay components."""
    t = bundle.target
    pods = bundle.api.pods(bundle)
    spec = t.spec
    storage = ", ".join(f"{v.name} {v.size}" if v.size is not None else f"{v.name} (claim {v.claim})"
                        for v in spec.storage)
    return (
        f"{t.namespace}/{t.name}",
        bundle.kind,
        ", ".join(f"{count} {role}" for role, count, _ in pods),
        str(sum(count * each for _, count, each in pods)),
        str(spec.resources.memory) if spec.resources.memory is not None else "-",
        storage or "-",
        ", ".join(c.name for c in bundle.components) or "-",
    )


def table(rows: list[tuple[str, ...]], indent: str = "    ") -> list[str]:
    """Rows under COLUMNS, each column as wide as its widest cell (two spaces between)."""
    widths = [max(len(row[i]) for row in [COLUMNS, *rows]) for i in range(len(COLUMNS))]
    return [indent + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
            for row in [COLUMNS, *rows]]


def _summary(name: str, result: Result, out: Path) -> list[str]:
    lines = []
    for env, bundles in result.bundles.items():
        rendered = _kustomize(out / env)
        lines.append(f"  {name}/{env}: {len(bundles)} job(s){rendered}")
        lines.extend(table([job_row(bundle) for bundle in bundles]))
    return lines


def _kustomize(folder: Path) -> str:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return ""
    proc = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True)
    if proc.returncode != 0:
        return f" (kubectl kustomize FAILED: {proc.stderr.strip()})"
    return f", kubectl kustomize renders {proc.stdout.count('apiVersion:')} object(s)"


def main(argv: list[str]) -> int:
    examples, build = Path(argv[0]), Path(argv[1])
    lines = [f"trainforge demo: compiling {examples}/ into {build}/"]
    failed = False
    for name, paths in _sources(examples):
        result = compile_sources(paths)
        sys.stderr.write(format_text(result.diagnostics))
        if not result.ok:
            failed = True
            lines.append(f"  {name}: invalid, nothing written")
            continue
        out = build / name
        tree.write(tree.files(result), out, envs=result.environments, keep_other_envs=False)
        lines.extend(_summary(name, result, out))
    print("\n".join(lines))
    print(f"Output trees are in {build}/; try: kubectl kustomize {build}/examples/default")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
