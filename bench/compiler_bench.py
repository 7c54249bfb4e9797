"""`make bench-compiler`: train-compile against `kubectl kustomize`, in one run.

For each size N (10, 100, 1,000 by default) a synthetic monorepo (`bench.specs`) is
compiled with `train-compile build`, printed with `train-compile render`, and the
built tree rendered with `kubectl kustomize` (the step Argo CD runs anyway): the
baseline. Every command is a fresh process, as in CI, pinned to one CPU (the targets
are per core, and a pinned process is less disturbed by a busy machine), and the three
are interleaved repeat by repeat so load changes hit them alike. Wall time is the
median of the repeats; CPU time and peak RSS come from the kernel's accounting of that
child (`wait4`). The render stream is checked against kustomize's (same objects).
`train-compile --help` is timed cold, and a before/after row runs `bench.reference`
(the ruamel loader and PyYAML representer this work replaced) on the largest size.

With `--python PYTHON`, train-compile runs as users install it on that interpreter: the
built wheel in a venv of PYTHON with uv.lock's runtime pins (the Dockerfile's two steps,
`testworld.pyenvs`), not the project's editable venv. How the interpreter was built
matters: this machine's pyenv Python 3.11 (no PGO or LTO, libpython shared) ran the same
build 1.46x slower than Debian's `/usr/bin/python3.11` (bench/README.md); the image's
`python:3.11-slim` is built with PGO and LTO too.

With `--instructions`, one more build of the largest size runs under valgrind's callgrind,
which counts the instructions the process executes: the same count for the same code and
input whatever else the machine is doing, where a CPU second here has bought from ~1.9 to
~5.7 billion of them on different days (bench/README.md). Dividing by the build's CPU time
gives what a CPU second bought in this run, so figures from different days can be compared.

Work files go to /dev/shm when it exists: the benchmark measures the compiler and
kustomize, not the disk, which other jobs on a shared machine make very noisy. The
compiler's bytecode is written once before the first run (`compileall`), as installing
a wheel does: with PYTHONDONTWRITEBYTECODE set, every run would otherwise compile each
module changed since its last `.pyc` again (tens of milliseconds per run).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from bench import report, specs

ENV = "prod"  # the one environment of the synthetic project
PACKAGES = ("schemas", "foundation", "compiler", "overlays")  # what train-compile runs, beside bench/


@dataclass(frozen=True)
class Run:
    wall: float  # seconds
    cpu: float  # user + system seconds of the child
    rss_mb: float  # peak resident set of the child


def run(argv: list[str], *, stdout: Optional[Path] = None, cpu: Optional[int] = None) -> Run:
    """Run one command to the end; raise with its stderr if it fails."""
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL
    err = tempfile.TemporaryFile()
    pin = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, preexec_fn=pin)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if stdout:
            out.close()  # type: ignore[union-attr]
    if proc.returncode != 0:
        err.seek(0)
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {err.read().decode()[-2000:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def compile_bytecode() -> None:
    """Write the `.pyc` of the compiler's packages (compileall writes even under
    PYTHONDONTWRITEBYTECODE), so every timed run starts as an installed program does."""
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(root / p) for p in PACKAGES)], check=True)


def train_compile() -> list[str]:
    script = Path(sys.executable).parent / "train-compile"
    return [str(script)] if script.exists() else [sys.executable, "-m", "compiler.cli.main"]


def _median(runs: list[Run]) -> Run:
    return Run(
        statistics.median(r.wall for r in runs),
        statistics.median(r.cpu for r in runs),
        max(r.rss_mb for r in runs),
    )


@dataclass
class Size:
    n: int
    build: Run
    render: Run
    kustomize: Optional[Run]
    same_stream: Optional[bool]
    reference: Optional[Run] = None
    instructions: Optional[int] = None  # executed by one build, counted by callgrind
    plan: Optional[Run] = None  # `plan --base HEAD` of the tree with PLAN_CHANGED specs edited
    plan_build: Optional[Run] = None  # one build of that head, measured beside it
    imported: Optional[Run] = None  # `import` of IMPORTED manifests
    imported_build: Optional[Run] = None  # one build of the specs it wrote, measured beside it


PLAN_CHANGED = 50  # specs a pull request changes in the plan row (the 1,000-spec repository)
GIT = ("git", "-c", "user.name=bench", "-c", "user.email=bench@example.com")


def plan_repository(src: Path, work: Path, n: int, changed: int = PLAN_CHANGED) -> Path:
    """A git repository holding `src` as its base commit, with `changed` specs edited in the
    working tree (every n/changed-th: one more node, a new image), as a pull request is."""
    repo = work / f"plan-{n}"
    shutil.copytree(src, repo / "jobs")
    subprocess.run([*GIT, "init", "-q", str(repo)], check=True)
    subprocess.run([*GIT, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(repo), "commit", "-q", "-m", "base"], check=True)
    for i in range(0, n, max(1, n // changed)):
        (path,) = (repo / "jobs").glob(f"*/job-{i:05d}.yaml")
        text = path.read_text().replace("  nodes: 4\n", "  nodes: 5\n").replace(":1.", ":2.", 1)
        path.write_text(text)
    return repo


def measure_plan(size: "Size", work: Path, *, tc: list[str], repeat: int, cpu: Optional[int]) -> None:
    """`train-compile plan` of PLAN_CHANGED changed specs against one `build` of the same head,
    interleaved repeat by repeat (the target: plan CPU at most 2x build's)."""
    repo = plan_repository(work / f"src-{size.n}", work, size.n)
    plans, builds = [], []
    for r in range(repeat):
        builds.append(run([*tc, "build", str(repo / "jobs"), "-o", str(work / f"plan-out-{r}")], cpu=cpu))
        plans.append(run([*tc, "plan", str(repo / "jobs"), "--base", "HEAD", "--format", "json"],
                         stdout=work / "plan.json", cpu=cpu))
    size.plan, size.plan_build = _median(plans), _median(builds)


IMPORTED = 1000  # manifests the import row imports


def import_manifests(root: Path, n: int) -> Path:
    """`n` job manifests, one file each, cycling through the corpus's published jobs that import
    under target kubeflow-v1 (tests/importer/corpus: real manifests, not ours), each renamed
    job-NNNNN; what a team bringing its jobs in has."""
    import yaml

    from compiler.importing import run as importing

    corpus = Path(__file__).resolve().parents[1] / "tests" / "importer" / "corpus"
    found = []
    for path in sorted(corpus.glob("[0-9]*.yaml")):
        outcome = importing.import_sources([str(path)])
        project = outcome.project or {}
        if outcome.ok and "target" not in project.get("defaults", {}) and "environments" not in project:
            found += [job.manifest.data for job in outcome.jobs if job.ok]
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        doc = {**found[i % len(found)]}
        doc["metadata"] = {**doc["metadata"], "name": f"job-{i:05d}"}
        (root / f"job-{i:05d}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return root


def measure_import(size: "Size", work: Path, *, tc: list[str], repeat: int, cpu: Optional[int]) -> None:
    """`train-compile import` of IMPORTED manifests against one `build` of the specs it wrote,
    interleaved repeat by repeat (the target: import CPU at most 2x build's)."""
    manifests = import_manifests(work / "manifests", IMPORTED)
    imports, builds = [], []
    for r in range(repeat):
        imported = work / f"imported-{r}"
        imports.append(run([*tc, "import", str(manifests), "-o", str(imported)], cpu=cpu))
        builds.append(run([*tc, "build", str(imported), "-o", str(work / f"imported-out-{r}")], cpu=cpu))
    size.imported, size.imported_build = _median(imports), _median(builds)


def _same_objects(ours: Path, theirs: Path) -> bool:
    import yaml

    def load(path: Path) -> list:
        with open(path, encoding="utf-8") as f:
            return [d for d in yaml.load_all(f, Loader=yaml.CSafeLoader) if d is not None]

    return load(ours) == load(theirs)


def installed_train_compile(python: str, work: Path) -> list[str]:
    """train-compile from the wheel, in a venv of `python` holding uv.lock's runtime pins."""
    from testworld import pyenvs

    root = pyenvs.locked_install(pyenvs.build_wheel(work / "wheel"), pyenvs.locked_requirements(), python=python)
    return [str(root / "bin" / "train-compile")]


def interpreter(tc: list[str]) -> str:
    """The Python a train-compile command runs on (version and path)."""
    python = Path(tc[0]).parent / "python" if len(tc) == 1 else Path(tc[0])
    probe = "import sys; print(sys.version.split()[0], sys.executable, sep=' at ')"
    return subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=True).stdout.strip()


def measure_size(n: int, work: Path, *, tc: list[str], repeat: int, kustomize_repeat: int, cpu: Optional[int],
                 kubectl: Optional[str], reference: bool) -> Size:
    src = specs.write(work / f"src-{n}", n)
    builds, renders, kusts = [], [], []
    ref = None
    for r in range(repeat):
        out = work / f"out-{n}-{r}"
        builds.append(run([*tc, "build", str(src), "-o", str(out)], cpu=cpu))
        renders.append(run([*tc, "render", str(src)], stdout=work / f"render-{n}.yaml", cpu=cpu))
        if kubectl and r < kustomize_repeat:
            kusts.append(run([kubectl, "kustomize", str(out / ENV)], stdout=work / f"kustomize-{n}.yaml", cpu=cpu))
        if r:
            shutil.rmtree(out, ignore_errors=True)
    if reference:
        ref = run([sys.executable, "-m", "bench.reference", "build", str(src), "-o", str(work / f"ref-{n}")], cpu=cpu)
    same = _same_objects(work / f"render-{n}.yaml", work / f"kustomize-{n}.yaml") if kusts else None
    return Size(n, _median(builds), _median(renders), _median(kusts) if kusts else None, same, ref)


def count_instructions(argv: list[str], valgrind: str) -> int:
    """Instructions `argv` executes to its end, as callgrind counts them (~50x slower than
    the program alone). A program that leaves through `os._exit` is counted too."""
    done = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"valgrind {' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    for line in done.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].replace(",", ""))
    raise RuntimeError(f"callgrind printed no count: {done.stderr[-2000:]}")


def _cold_start(argv: list[str], *, times: int, cpu: Optional[int]) -> float:
    return statistics.median(run(argv, cpu=cpu).wall for _ in range(times))


def rows(sizes: list[Size], *, help_ours: float, help_kubectl: Optional[float]) -> list[report.Row]:
    R = report.Row
    out: list[R] = []
    big = sizes[-1]
    k = big.kustomize
    out.append(R(f"build throughput, N={big.n} (specs/s, higher is better)", big.n / big.build.wall,
                 big.n / k.wall if k else None, "/s", ">= 1,000/s"))
    # the same per second of CPU time: what one core gives when others share the machine
    out.append(R(f"build throughput, N={big.n}, per CPU second (specs/s)", big.n / big.build.cpu,
                 big.n / k.cpu if k else None, "/s", ">= 1,000/s"))
    for s in sizes:
        kw = s.kustomize.wall if s.kustomize else None
        out.append(R(f"build wall, N={s.n} (s)", s.build.wall, kw, "s", "<= 0.10x"))
        out.append(R(f"render wall, N={s.n} (s)", s.render.wall, kw, "s", "<= 0.10x"))
    out.append(R(f"build CPU, N={big.n} (s)", big.build.cpu, k.cpu if k else None, "s"))
    out.append(R(f"render CPU, N={big.n} (s)", big.render.cpu, k.cpu if k else None, "s"))
    for s in sizes:
        out.append(R(f"peak RSS of build, N={s.n} (MB)", s.build.rss_mb,
                     s.kustomize.rss_mb if s.kustomize else None, "MB"))
    if len(sizes) > 1:
        small = sizes[0]
        span = (big.n - small.n) / 1000

        def growth(a: Optional[Run], b: Optional[Run]) -> Optional[float]:
            return (b.rss_mb - a.rss_mb) / span if a and b else None

        out.append(R(f"RSS growth per 1,000 specs, N={small.n}->{big.n} (MB)", growth(small.build, big.build),
                     growth(small.kustomize, big.kustomize), "MB", "linear or better"))
    out.append(R("train-compile --help cold start (s; baseline kubectl kustomize --help)", help_ours,
                 help_kubectl, "s", "< 0.3 s"))
    if big.reference:
        out.append(R(f"build wall, N={big.n}, vs before (ruamel loader + PyYAML representer)",
                     big.build.wall, big.reference.wall, "s"))
        out.append(R(f"build CPU, N={big.n}, vs before", big.build.cpu, big.reference.cpu, "s"))
    if big.plan and big.plan_build:
        out.append(R(f"plan CPU, N={big.n} with {PLAN_CHANGED} changed specs (s; baseline: one build of that head)",
                     big.plan.cpu, big.plan_build.cpu, "s", "<= 2.0x"))
        out.append(R(f"plan wall, N={big.n} with {PLAN_CHANGED} changed specs (s)", big.plan.wall,
                     big.plan_build.wall, "s"))
    if big.imported and big.imported_build:
        out.append(R(f"import CPU, {IMPORTED} published manifests (s; baseline: one build of the specs it wrote)",
                     big.imported.cpu, big.imported_build.cpu, "s", "<= 2.0x"))
        out.append(R(f"import wall, {IMPORTED} published manifests (s)", big.imported.wall, big.imported_build.wall, "s"))
    if big.instructions:
        out.append(R(f"build instructions per spec, N={big.n} (callgrind; the same on any load)",
                     big.instructions / big.n / 1e6, None, "M"))
        # what a CPU second bought in this run: read the per-CPU-second figures with it
        out.append(R("instructions per CPU second of that build (what a CPU second bought here)",
                     big.instructions / big.build.cpu / 1e9, None, "G"))
    return out


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.compiler_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100,1000", help="comma-separated job counts (default 10,100,1000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each train-compile command per size")
    parser.add_argument("--kustomize-repeat", type=int, default=None,
                        help="runs of kubectl kustomize per size (default: --repeat, 1 from N=1000: it is slow)")
    parser.add_argument("--cpu", type=int, default=0, help="CPU to pin every command to; -1 to not pin")
    parser.add_argument("--no-reference", action="store_true", help="skip the before/after row")
    parser.add_argument("--no-plan", action="store_true", help="skip the plan row")
    parser.add_argument("--no-import", action="store_true", help="skip the import row")
    parser.add_argument("--workdir", type=Path, default=None, help="where specs and trees go (default /dev/shm)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--python", default=None,
                        help="run train-compile from the built wheel in a venv of this interpreter (path or name)")
    parser.add_argument("--instructions", action="store_true",
                        help="count one build's instructions of the largest size with valgrind (~3 min at N=1000)")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table as markdown here")
    args = parser.parse_args(argv)

    sizes = sorted(int(s) for s in args.sizes.split(","))
    cpu = None if args.cpu < 0 or not hasattr(os, "sched_setaffinity") else args.cpu
    kubectl = shutil.which("kubectl")
    base = args.workdir or (Path("/dev/shm") if Path("/dev/shm").is_dir() else None)
    work = Path(tempfile.mkdtemp(prefix="trainforge-bench-", dir=base))
    kubectl_version = report.tool_version([kubectl, "version", "--client"]) if kubectl else "missing"
    try:
        if args.python:
            tc = installed_train_compile(args.python, work)
        else:
            compile_bytecode()
            tc = train_compile()
        machine = report.machine([f"train-compile on Python {interpreter(tc)}", f"kubectl {kubectl_version}",
                                  f"pinned to CPU {cpu}" if cpu is not None else "not pinned"])
        measured = []
        for n in sizes:
            k_repeat = args.kustomize_repeat if args.kustomize_repeat is not None else (1 if n >= 1000 else args.repeat)
            print(f"compiler bench: N={n} ...", file=sys.stderr, flush=True)
            # the before/after row runs the project venv's Python: only comparable on it
            measured.append(measure_size(n, work, tc=tc, repeat=args.repeat, kustomize_repeat=k_repeat, cpu=cpu,
                                         kubectl=kubectl,
                                         reference=not args.no_reference and not args.python and n == sizes[-1]))
        if not args.no_plan:
            print(f"compiler bench: plan, N={measured[-1].n} with {PLAN_CHANGED} changed specs ...",
                  file=sys.stderr, flush=True)
            measure_plan(measured[-1], work, tc=tc, repeat=args.repeat, cpu=cpu)
        if not args.no_import:
            print(f"compiler bench: import of {IMPORTED} manifests ...", file=sys.stderr, flush=True)
            measure_import(measured[-1], work, tc=tc, repeat=args.repeat, cpu=cpu)
        valgrind = shutil.which("valgrind") if args.instructions else None
        if valgrind:
            big = measured[-1]
            print(f"compiler bench: N={big.n} under callgrind ...", file=sys.stderr, flush=True)
            big.instructions = count_instructions(
                [*tc, "build", str(work / f"src-{big.n}"), "-o", str(work / f"count-{big.n}")], valgrind)
        help_ours = _cold_start([*tc, "--help"], times=5, cpu=cpu)
        help_kubectl = _cold_start([kubectl, "kustomize", "--help"], times=5, cpu=cpu) if kubectl else None
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    notes = [f"{len(set(specs.FRAMEWORKS))} frameworks, 4 nodes per job, overlays: storage (1/2 of the jobs), "
             "serviceAccount + RBAC rules (1/2), gang (all), Kueue queue (3/4), podTemplate (1/4); one environment; "
             "one file per job",
             "ratio = ours / baseline; wall = median of the repeats, each command a fresh process",
             *(f"N={s.n}: train-compile render {'equals' if s.same_stream else 'DIFFERS FROM'} kubectl kustomize "
               "(same objects)" for s in measured if s.same_stream is not None)]
    if not kubectl:
        notes.append("kubectl not found: no baseline")
    if args.instructions and not valgrind:
        notes.append("valgrind not found (Debian package valgrind): no instruction count")
    report.emit("trainforge compiler benchmark", rows(measured, help_ours=help_ours, help_kubectl=help_kubectl),
                machine_line=machine, notes=notes, markdown=args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
