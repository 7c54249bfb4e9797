"""Pairing base and head jobs of one environment: create, delete, rename, update, unchanged.

As the contract says: jobs are matched by namespace and name first; the same namespace and
name under another kind, or another apiVersion of it, is a rename by kind (a framework or
`target` switch, kubeflow-v1 to mpi-operator's MPIJob too: the old job is deleted and a new
one created). Of what is left, an old job and a new job from the same spec
document (the same file, the same position among that file's unmatched documents) are a
rename; the rest are deletes and creates. `update` and `unchanged` are judged on the job's
compiled objects; a head job that is the base's own object (its file did not change) is
unchanged without a look.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from compiler.plan.sides import Job


@dataclass(frozen=True)
class Pair:
    change: str
    old: Optional[Job]
    new: Optional[Job]


def _by_file(jobs: list[Job]) -> dict[str, list[Job]]:
    out: dict[str, list[Job]] = {}
    for job in sorted(jobs, key=lambda j: (j.origin, j.doc.index)):
        out.setdefault(job.origin, []).append(job)
    return out


def pairs(base: dict[tuple[str, str], Job], head: dict[tuple[str, str], Job]) -> list[Pair]:
    """Every job of either side once, in the head's order, then the deletes."""
    out: list[Pair] = []
    gone = {k: j for k, j in base.items() if k not in head}
    new = {k: j for k, j in head.items() if k not in base}
    old_by_file, new_by_file = _by_file(list(gone.values())), _by_file(list(new.values()))
    renamed: dict[tuple[str, str], Job] = {}  # head key -> the old job it renames
    for origin, olds in old_by_file.items():
        for old, fresh in zip(olds, new_by_file.get(origin, [])):
            renamed[(fresh.namespace, fresh.name)] = old
            del gone[(old.namespace, old.name)]
    for key, job in head.items():
        if key in renamed:
            out.append(Pair("rename", renamed[key], job))
        elif key not in base:
            out.append(Pair("create", None, job))
        else:
            old = base[key]
            if (old.bundle.job["apiVersion"], old.kind) != (job.bundle.job["apiVersion"], job.kind):
                out.append(Pair("rename", old, job))
            elif old is job or old.objects == job.objects:
                out.append(Pair("unchanged", old, job))
            else:
                out.append(Pair("update", old, job))
    out.extend(Pair("delete", job, None) for job in gone.values())
    return out
