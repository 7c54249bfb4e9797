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

With `--also CHECKOUT` (repeatable), another commit's train-compile runs on the largest size
beside this checkout's, interleaved repeat by repeat (`bench.against`): its ratios to the same
kustomize run, this checkout's CPU against it, and whether the two wrote the same tree and
render stream byte for byte. Before/after figures come from one such run, never from two.

After the table, the guarded ratios (`GUARDED`) are compared with the project's recorded
ones (`bench/recorded/compiler.json`, `bench.baseline`, shared with `make bench-scale`), and
a line says WORSE where one moved the wrong way by more than its noise. `--record` makes
this run the record, with the noise it measured: each ratio's spread within the run (the
(max - min) / median of ours' repeats plus the baseline's).

Work files go to /dev/shm when it exists: the benchmark measures the compiler and
kustomize, not the disk, which other jobs on a shared machine make very noisy. The
compiler's bytecode and that of the interpreter's site-packages are written once before
the first run (`compileall`), as installing a wheel does: with PYTHONDONTWRITEBYTECODE set,
every run would otherwise compile each module without a current `.pyc` again (a uv-made venv
has none for pydantic, click or PyYAML).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from bench import against, baseline, report, specs
from bench.measure import Run, cold_start, count_instructions, median, run, spread

ENV = "prod"  # the one environment of the synthetic project
PACKAGES = ("schemas", "foundation", "compiler", "overlays")  # what train-compile runs, beside bench/


def compile_bytecode(python: str) -> None:
    """Write the `.pyc` of the compiler's packages and of the site-packages of `python` (the
    interpreter train-compile runs on), as installing a wheel does (compileall writes even
    under PYTHONDONTWRITEBYTECODE): a venv that uv made holds no `.pyc` of its packages, and
    without them every run compiled pydantic, click and PyYAML from source again."""
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(root / p) for p in PACKAGES)], check=True)
    probe = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([python, "-m", "compileall", "-q", "-j0", purelib], check=True, stdout=subprocess.DEVNULL)


def train_compile() -> list[str]:
    script = Path(sys.executable).parent / "train-compile"
    return [str(script)] if script.exists() else [sys.executable, "-m", "compiler.cli.main"]


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
    refs: list[against.Reference] = field(default_factory=list)  # --also, measured on the largest size
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
    interleaved repeat by repeat (the target: plan CPU at most 2x build's); each `--also`
    commit's plan and build beside them."""
    repo = plan_repository(work / f"src-{size.n}", work, size.n)
    sides = [(None, tc, None), *((ref, ref.argv, ref.env) for ref in size.refs if against.has_command(ref, "plan"))]
    plans: dict[int, list[Run]] = {i: [] for i in range(len(sides))}
    builds: dict[int, list[Run]] = {i: [] for i in range(len(sides))}
    for r in range(repeat):
        for i, (_, argv, env) in enumerate(sides):
            out = work / f"plan-out-{i}-{r}"
            builds[i].append(run([*argv, "build", str(repo / "jobs"), "-o", str(out)], cpu=cpu, env=env))
            plans[i].append(run([*argv, "plan", str(repo / "jobs"), "--base", "HEAD", "--format", "json"],
                                stdout=work / f"plan-{i}.json", cpu=cpu, env=env))
            shutil.rmtree(out, ignore_errors=True)
    size.plan, size.plan_build = median(plans[0]), median(builds[0])
    for i, (ref, _, _) in enumerate(sides[1:], start=1):
        ref.plan, ref.plan_build = median(plans[i]), median(builds[i])


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
    size.imported, size.imported_build = median(imports), median(builds)


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


def python_of(tc: list[str]) -> str:
    """The interpreter of a train-compile command (its script's venv, or `python -m`'s)."""
    return str(Path(tc[0]).parent / "python") if len(tc) == 1 else tc[0]


def interpreter(tc: list[str]) -> str:
    """The Python a train-compile command runs on (version and path)."""
    probe = "import sys; print(sys.version.split()[0], sys.executable, sep=' at ')"
    return subprocess.run([python_of(tc), "-c", probe], capture_output=True, text=True, check=True).stdout.strip()


def measure_size(n: int, work: Path, *, tc: list[str], repeat: int, kustomize_repeat: int, cpu: Optional[int],
                 kubectl: Optional[str], reference: bool, refs: Sequence[against.Reference] = ()) -> Size:
    """Build, render and kustomize at size `n`, interleaved repeat by repeat, and each of `refs`
    (`--also`) the same way, its output compared with this checkout's byte for byte."""
    src = specs.write(work / f"src-{n}", n)
    builds, renders, kusts = [], [], []
    theirs: dict[str, tuple[list[Run], list[Run]]] = {ref.ref: ([], []) for ref in refs}
    before = None
    for r in range(repeat):
        out = work / f"out-{n}-{r}"
        builds.append(run([*tc, "build", str(src), "-o", str(out)], cpu=cpu))
        renders.append(run([*tc, "render", str(src)], stdout=work / f"render-{n}.yaml", cpu=cpu))
        if kubectl and r < kustomize_repeat:
            kusts.append(run([kubectl, "kustomize", str(out / ENV)], stdout=work / f"kustomize-{n}.yaml", cpu=cpu))
        for i, ref in enumerate(refs):
            their_out = work / f"out-{n}-{r}-against-{i}"
            theirs[ref.ref][0].append(run([*ref.argv, "build", str(src), "-o", str(their_out)], cpu=cpu, env=ref.env))
            theirs[ref.ref][1].append(run([*ref.argv, "render", str(src)], stdout=work / f"render-{n}-against-{i}.yaml",
                                          cpu=cpu, env=ref.env))
            if r == 0:
                ref.differing = against.same_tree(out, their_out)
                ref.same_render = against.same_file(work / f"render-{n}.yaml", work / f"render-{n}-against-{i}.yaml")
            shutil.rmtree(their_out, ignore_errors=True)
        if r:
            shutil.rmtree(out, ignore_errors=True)
    for ref in refs:
        ref.build, ref.render = median(theirs[ref.ref][0]), median(theirs[ref.ref][1])
    if reference:
        before = run([sys.executable, "-m", "bench.reference", "build", str(src), "-o", str(work / f"ref-{n}")], cpu=cpu)
    same = _same_objects(work / f"render-{n}.yaml", work / f"kustomize-{n}.yaml") if kusts else None
    return Size(n, median(builds), median(renders), median(kusts) if kusts else None, same, before, refs=list(refs))


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
    out.append(R(f"build CPU, N={big.n} (s)", big.build.cpu, k.cpu if k else None, "s", "<= 0.05x",
                 spread=spread(big.build, k)))
    out.append(R(f"render CPU, N={big.n} (s)", big.render.cpu, k.cpu if k else None, "s", "<= 0.05x",
                 spread=spread(big.render, k)))
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
                     big.plan.cpu, big.plan_build.cpu, "s", "<= 2.0x", spread=spread(big.plan, big.plan_build)))
        out.append(R(f"plan wall, N={big.n} with {PLAN_CHANGED} changed specs (s)", big.plan.wall,
                     big.plan_build.wall, "s"))
    for ref in big.refs:
        out.extend(against.rows(ref, big.build, big.render, big.plan, big.kustomize, n=big.n, plan_changed=PLAN_CHANGED))
    if big.imported and big.imported_build:
        out.append(R(f"import CPU, {IMPORTED} published manifests (s; baseline: one build of the specs it wrote)",
                     big.imported.cpu, big.imported_build.cpu, "s", "<= 2.0x",
                     spread=spread(big.imported, big.imported_build)))
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
    parser.add_argument("--also", action="append", type=Path, default=[], metavar="CHECKOUT",
                        help="also run train-compile from this checkout (`git worktree add --detach DIR COMMIT`) on "
                             "the largest size, interleaved, its output compared byte for byte (repeatable)")
    parser.add_argument("--record", action="store_true",
                        help="write this run's ratios and their noise as the project's recorded figures "
                             "(bench/recorded/compiler.json)")
    parser.add_argument("--recorded", type=Path, default=baseline.RECORDED, help=argparse.SUPPRESS)  # tests
    args = parser.parse_args(argv)

    sizes = sorted(int(s) for s in args.sizes.split(","))
    cpu = None if args.cpu < 0 or not hasattr(os, "sched_setaffinity") else args.cpu
    kubectl = shutil.which("kubectl")
    base = args.workdir or (Path("/dev/shm") if Path("/dev/shm").is_dir() else None)
    work = Path(tempfile.mkdtemp(prefix="trainforge-bench-", dir=base))
    kubectl_version = report.tool_version([kubectl, "version", "--client"]) if kubectl else "missing"
    try:
        tc = installed_train_compile(args.python, work) if args.python else train_compile()
        compile_bytecode(python_of(tc))
        refs = []
        for checkout in args.also:
            argv_, env = against.command(checkout)
            refs.append(against.Reference(baseline.commit(checkout), argv_, env))
        machine = report.machine([f"train-compile on Python {interpreter(tc)}", f"kubectl {kubectl_version}",
                                  f"pinned to CPU {cpu}" if cpu is not None else "not pinned"])
        measured = []
        for n in sizes:
            k_repeat = args.kustomize_repeat if args.kustomize_repeat is not None else (1 if n >= 1000 else args.repeat)
            print(f"compiler bench: N={n} ...", file=sys.stderr, flush=True)
            # the before/after row runs the project venv's Python: only comparable on it
            measured.append(measure_size(n, work, tc=tc, repeat=args.repeat, kustomize_repeat=k_repeat, cpu=cpu,
                                         kubectl=kubectl,
                                         reference=not args.no_reference and not args.python and n == sizes[-1],
                                         refs=refs if n == sizes[-1] else ()))
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
        help_ours = cold_start([*tc, "--help"], times=5, cpu=cpu)
        help_kubectl = cold_start([kubectl, "kustomize", "--help"], times=5, cpu=cpu) if kubectl else None
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    notes = [f"{len(set(specs.FRAMEWORKS))} frameworks, 4 nodes per job, overlays: storage (1/2 of the jobs), "
             "serviceAccount + RBAC rules (1/2), gang (all), Kueue queue (3/4), podTemplate (1/4); one environment; "
             "one file per job",
             "ratio = ours / baseline; wall = median of the repeats, each command a fresh process",
             *(f"N={s.n}: train-compile render {'equals' if s.same_stream else 'DIFFERS FROM'} kubectl kustomize "
               "(same objects)" for s in measured if s.same_stream is not None)]
    for ref in measured[-1].refs:
        same = not ref.differing and ref.same_render
        notes.append(f"N={measured[-1].n}: this checkout's build tree and render stream are "
                     + ("byte-identical to" if same else "NOT byte-identical to")
                     + f" {ref.ref}'s" + ("" if same else f" ({len(ref.differing or [])} tree file(s) differ"
                                          f"{'' if ref.same_render else ', and the render stream'})"))
    if not kubectl:
        notes.append("kubectl not found: no baseline")
    if args.instructions and not valgrind:
        notes.append("valgrind not found (Debian package valgrind): no instruction count")
    table = rows(measured, help_ours=help_ours, help_kubectl=help_kubectl)
    report.emit("trainforge compiler benchmark", table, machine_line=machine, notes=notes, markdown=args.markdown)
    figures = guarded(table)
    for line in baseline.compare(figures, baseline.load("compiler", args.recorded)):
        print(line)
    if args.record:
        noise = {f.key: round(_spread_of(table, f), 3) for f in figures}
        path = baseline.record("compiler", figures, machine=machine, directory=args.recorded, noise=noise,
                               noise_how=f"each ratio's spread within the recorded run ({args.repeat} repeats): "
                                         "(max - min) / median of ours' CPU plus the baseline's")
        print(f"recorded as the new figures: {path}")
    return 0


GUARDED = (  # (key, how its row's figure opens, what the guard's line calls it): all lower is better
    ("build-cpu", "build CPU, N={n} (s)", "build CPU / kustomize's, N={n}"),
    ("render-cpu", "render CPU, N={n} (s)", "render CPU / kustomize's, N={n}"),
    ("plan-cpu", "plan CPU, N={n} with", "plan CPU / one build's, N={n}"),
    ("import-cpu", "import CPU,", "import CPU / one build's"),
)


def guarded(table: list[report.Row]) -> list[baseline.Guarded]:
    """The guarded ratios of this run's table, keyed by the largest size (`1000:build-cpu`)."""
    n = next(int(r.figure.split("N=")[1].split(" ")[0]) for r in table if r.figure.startswith("build CPU, N="))
    out = []
    for key, opening, label in GUARDED:
        row = next((r for r in table if r.figure.startswith(opening.format(n=n)) and r.ratio is not None), None)
        if row is not None and row.ratio is not None:
            out.append(baseline.Guarded(f"{n}:{key}", label.format(n=n), row.ratio))
    return out


def _spread_of(table: list[report.Row], figure: baseline.Guarded) -> float:
    key = figure.key.split(":", 1)[1]
    n = int(figure.key.split(":", 1)[0])
    opening = next(o for k, o, _ in GUARDED if k == key).format(n=n)
    return next(r.spread for r in table if r.figure.startswith(opening) and r.ratio is not None)


if __name__ == "__main__":
    sys.exit(main())
