"""`make demo`: compile the examples the way a user would and show what came out.

Top-level `examples/*.yaml` compile as one source (no project file, environment
`default`) into `build/examples/`; every sub-folder with a `trainforge.yaml` compiles
as its own project into `build/<folder>/`. Each tree is then rendered with `kubectl
kustomize` when kubectl is installed, the step Argo CD runs, and a table summarises
each job (`compiler.emit.summary`, the table `build` prints too): kind, pods per role,
GPUs, memory per node, storage and overlay components.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from compiler.diagnostics import format_text
from compiler.emit import tree
from compiler.emit.summary import environment_lines
from compiler.pipeline import Result, compile_sources
from compiler.reading.sources import PROJECT_FILE


def _sources(examples: Path) -> list[tuple[str, list[Path]]]:
    runs = []
    top = sorted(p for p in examples.glob("*.y*ml") if p.is_file())
    if top:
        runs.append(("examples", top))
    for folder in sorted(p for p in examples.iterdir() if (p / PROJECT_FILE).is_file()):
        runs.append((folder.name, [folder]))
    return runs


def _summary(name: str, result: Result, out: Path) -> list[str]:
    return environment_lines(result, name=name, note={env: _kustomize(out / env) for env in result.bundles})


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
