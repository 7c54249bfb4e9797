"""The plan's rows of `make bench-compiler`: a project-level change across every job.

A pull request that changes the project file (a label in `defaults`) changes every job: the
plan compiles both sides in full and compares every job (issue 47's case; its figures are in
bench/README.md). The row runs `plan --format markdown --output FILE`
(the CI recipe's command) against one `build` of the same head, interleaved repeat by
repeat, each a fresh process (target: the plan's CPU at most 2x the build's), and notes the
comment's size against GitHub's limit.

The plan's own share (all but compiling the two sides, which is the compiler's shared
machinery: loading, validating, lowering) is measured in one more process of the project's
venv (`python -m bench.plan_bench share REPO`), which times `compile_sources` inside the plan
by the process's CPU clock: what the plan's own modules (`compiler/plan`) cost, apart from
what a faster compiler makes faster for both.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from bench import report
from bench.measure import Run, median, run

GIT = ("git", "-c", "user.name=bench", "-c", "user.email=bench@example.com")
LABEL = ("labels: {owner: bench}", "labels: {owner: ml-platform}")  # bench.specs.PROJECT's defaults


@dataclass
class ProjectPlan:
    n: int
    plan: Run  # the plan
    build: Run  # and one build of the same head
    comment_bytes: int
    full_bytes: int
    own: Optional[float] = None  # CPU seconds of the plan's own work (all but compiling the two sides)
    compiling: Optional[float] = None  # CPU seconds compiling the two sides, in the same process


def project_repository(src: Path, work: Path, n: int) -> Path:
    """A git repository holding `src` as its base commit, its project file's label changed in the
    working tree: every job changes."""
    repo = work / f"plan-project-{n}"
    shutil.copytree(src, repo / "jobs")
    subprocess.run([*GIT, "init", "-q", str(repo)], check=True)
    subprocess.run([*GIT, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(repo), "commit", "-q", "-m", "base"], check=True)
    project = repo / "jobs" / "trainforge.yaml"
    project.write_text(project.read_text().replace(*LABEL))
    return repo


def measure(n: int, work: Path, *, tc: list[str], repeat: int, cpu: Optional[int], share: bool) -> ProjectPlan:
    """`plan` of a project-level change against one `build` of that head; `share`: also the plan's
    own share (this checkout's venv only)."""
    repo = project_repository(work / f"src-{n}", work, n)
    plans, builds = [], []
    for r in range(repeat):
        out = work / f"plan-project-out-{r}"
        builds.append(run([*tc, "build", str(repo / "jobs"), "-o", str(out)], cpu=cpu))
        plans.append(run([*tc, "plan", str(repo / "jobs"), "--base", "HEAD", "--format", "markdown", "--output",
                          str(work / "plan-full.md")], stdout=work / "plan-comment.md", cpu=cpu))
        shutil.rmtree(out, ignore_errors=True)
    found = ProjectPlan(n, median(plans), median(builds), (work / "plan-comment.md").stat().st_size,
                        (work / "plan-full.md").stat().st_size)
    if share:
        done = subprocess.run([sys.executable, "-m", "bench.plan_bench", "share", str(repo / "jobs")],
                              capture_output=True, text=True, check=True)
        measured = json.loads(done.stdout)
        found.own, found.compiling = measured["total"] - measured["compiling"], measured["compiling"]
    return found


def rows(found: ProjectPlan) -> list[report.Row]:
    R = report.Row
    out = [R(f"plan CPU, N={found.n}, a project-level label change: every job (s; baseline: one build of that"
             " head)", found.plan.cpu, found.build.cpu, "s", "<= 2.0x"),
           R(f"plan wall, N={found.n}, a project-level label change (s)", found.plan.wall, found.build.wall, "s")]
    if found.own is not None:
        out.append(R(f"plan's own CPU, N={found.n}, project-level (s; baseline: compiling both sides in it)",
                     found.own, found.compiling, "s"))
    out.append(R(f"plan comment, N={found.n}, project-level (bytes; baseline: the full plan, --output)",
                 found.comment_bytes, found.full_bytes, "B", "<= 65,536 B"))
    return out


def share(jobs: Path) -> dict[str, float]:
    """The plan of `jobs` against HEAD, in this process: its CPU, and the part spent compiling."""
    from datetime import datetime, timezone

    from compiler.plan import build, markdown
    from compiler.plan import sides

    compiling = [0.0]
    compile_sources = sides.compile_sources

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return compile_sources(*args, **kwargs)
        finally:
            compiling[0] += time.process_time() - start

    sides.compile_sources = timed  # type: ignore[assignment]
    start = time.process_time()
    plans = build.make([jobs], base="HEAD", env=None, accepts=[], read_live=None, now=datetime.now(timezone.utc))
    markdown.markdown(plans)
    return {"total": time.process_time() - start, "compiling": compiling[0]}


if __name__ == "__main__":
    if sys.argv[1:2] != ["share"] or len(sys.argv) != 3:
        sys.exit("usage: python -m bench.plan_bench share JOBS")
    print(json.dumps(share(Path(sys.argv[2]))))
