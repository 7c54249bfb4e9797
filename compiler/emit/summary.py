"""The jobs table `build` and `make demo` print: what each environment's tree holds, at a glance.

One row per job: kind, pods per role as the target lays them out (replica specs or
numNodes), GPUs in all, memory per node, each volume (a new PVC's size or the claim it
mounts) and the overlay components; each column as wide as its widest cell; and a line
naming the Kueue integrations the queued jobs need (`kueue_note`). Text for a
terminal, on stderr beside the command's other messages, so a CI log shows what a build
wrote without anyone opening the tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from compiler.pipeline import Result
    from schemas.bundle import Bundle

COLUMNS = ("JOB", "KIND", "PODS", "GPUS", "MEMORY/NODE", "STORAGE", "COMPONENTS")


def job_row(bundle: "Bundle") -> tuple[str, ...]:
    """One job as the table shows it."""
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


def environment_lines(result: "Result", *, name: str = "", note: dict[str, str] | None = None) -> list[str]:
    """Per environment of `result`: a heading (`name/env: N job(s)`, plus `note[env]`) and its table;
    then, when queued jobs need Kueue integrations its v0.19 leaves out, the line that names them."""
    from compiler.emit import kueue_note

    lines = []
    for env, bundles in result.bundles.items():
        heading = f"{name}/{env}" if name else env
        lines.append(f"  {heading}: {len(bundles)} job(s){(note or {}).get(env, '')}")
        if bundles:
            lines.extend(table([job_row(bundle) for bundle in bundles]))
    kueue = kueue_note.line([b for bundles in result.bundles.values() for b in bundles])
    return lines + ([kueue] if kueue else [])
