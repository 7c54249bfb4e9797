"""`train-compile import`, end to end and in memory: manifests in, spec texts and verdicts out.

For each job: the server's fields are dropped (`clean`), its shape and first-class fields read
(`shapes`, `lifting`), the spec compiled as `train-compile render` would and compared with the
manifest (`sameness`); what differs inside the pod templates becomes `podTemplate`, common
to all roles or a role's own (`residual`), and the spec is compiled and compared once more.
A job still different after that, or different outside its pod templates (a field the spec
has no way to say), is refused at the manifest field that differs. The spec that is compiled
is the text that will be written, read back through the project's loader, so what `--check`
shows is what `render` of the written folder gives.

The project settings the jobs need (`project`) are gathered before the jobs are compiled: the
target of their kinds, the GPU resource they name, the pod security level their pods need,
and `namespaces: {create: false}` (a namespace the jobs already ran in is someone else's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from compiler.diagnostics import Diagnostic, has_errors, ordered
from compiler.importing import kinds, lifting, manifests, project, residual, sameness, shapes, trainer, writing
from compiler.importing.kinds import JobKind
from compiler.importing.manifests import Input, Manifest
from compiler.importing.compiling import Settings, compile_specs, review_targets, validated
from compiler.importing.sameness import Difference
from foundation import jsondata, poddefaults

Obj = dict[str, Any]


@dataclass(eq=False)  # a job is itself: compared by identity, not field by field
class Job:
    """One job of the input and what became of it."""

    manifest: Manifest
    kind: JobKind
    original: Obj = field(default_factory=dict)  # the manifest without the server's fields
    canon: Obj = field(default_factory=dict)  # `original` in sameness.canonical form (read, never changed)
    spec: Optional[Obj] = None  # the TrainJob document
    text: str = ""
    path: str = ""  # the spec's file, relative to the output folder
    roles: dict[str, str] = field(default_factory=dict)  # replica type -> its spec.roles name (the kinds with roles)
    kept: list[str] = field(default_factory=list)  # fields kept in podTemplate
    told: set[str] = field(default_factory=set)  # replica types refused already for their own podTemplate
    differences: list[Difference] = field(default_factory=list)  # what the round trip changes
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.spec is not None and not self.differences and not has_errors(self.diagnostics)

    @property
    def name(self) -> str:
        meta = self.original.get("metadata") or {}
        return str(meta.get("name") or meta.get("generateName") or "")

    @property
    def namespace(self) -> str:
        return str((self.original.get("metadata") or {}).get("namespace") or sameness.DEFAULT_NAMESPACE)


def shipped_runtime(manifest: Manifest) -> Obj:
    """A runtime a TrainJob of the input names, as it is written beside the specs: without what
    the cluster wrote (the tree then ships it, and compiles the jobs against it)."""
    data = jsondata.copy(manifest.data)
    data.pop("status", None)
    if isinstance(data.get("metadata"), dict):
        sameness.clean_metadata(data["metadata"])
    return data


@dataclass
class Outcome:
    jobs: list[Job]
    project: Optional[Obj]
    files: dict[str, str]
    diagnostics: list[Diagnostic]
    left_out: list[Manifest]

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def import_sources(sources: list[str], *, existing_project: Optional[Obj] = None) -> Outcome:
    return import_input(manifests.read(sources), existing_project=existing_project)


def import_input(found: Input, *, existing_project: Optional[Obj] = None) -> Outcome:
    diagnostics = list(found.diagnostics)
    jobs = [prepare(m, kinds.kind_of(m.data)) for m in found.jobs]  # type: ignore[arg-type]
    given = [m for m in found.trainer if m.data.get("kind") in trainer.RUNTIME_KINDS]
    runtimes = {(r.kind, r.name): r for r in (trainer.runtime_of(m) for m in given)}
    for manifest in found.trainer:
        api_version, kind = manifest.data.get("apiVersion"), manifest.data.get("kind")
        if (api_version, kind) == (trainer.VERSION, trainer.JOB_KIND):
            jobs.append(prepare_trainjob(manifest, runtimes))
        elif kind not in trainer.RUNTIME_KINDS or api_version != trainer.VERSION:
            diagnostics.append(manifest.error(("kind",), f"{api_version} {kind} is no object train-compile import"
                                              f" reads (it reads {trainer.VERSION} {trainer.JOB_KIND}s and their"
                                              " runtimes)", prefer_key=False))
    live = [j for j in jobs if j.spec is not None and not has_errors(j.diagnostics)]
    settings, problems = project.settings([(j.manifest, j.kind, j.canon) for j in live])
    diagnostics += problems
    chosen = existing_project if existing_project is not None else settings
    named = {trainer.ref(j.original) for j in live if isinstance(j.kind, trainer.TrainerKind)}
    shipped = [m for m in given if (m.data.get("kind"), (m.data.get("metadata") or {}).get("name")) in named]
    found.left_out += [m for m in given if m not in shipped]
    if not problems:
        compiled_with = Settings(chosen, validated(chosen), tuple(shipped_runtime(m) for m in shipped))
        finish_all(live, compiled_with)
    for job in jobs:
        diagnostics += job.diagnostics
    if not jobs and not has_errors(diagnostics):
        where = f" in {found.files} file(s)" if found.files else ""
        if runtimes:
            where += f" (only {len(runtimes)} runtime(s): a runtime is imported with the TrainJobs that name it)"
        diagnostics.append(Diagnostic(
            found.diagnostics[0].file if found.diagnostics else found.first or "-", 1, 1, "",
            f"found no training job{where}", f"give import the manifests of Kubeflow jobs ({kinds.known()})"
            " or what kubectl get -o yaml prints for them"))
    files = layout(jobs, settings if existing_project is None else None, shipped if not problems else [])
    return Outcome(jobs, chosen, files, ordered(diagnostics), found.left_out)


# --- one job ---------------------------------------------------------------------------------


def prepare(manifest: Manifest, kind: JobKind) -> Job:
    """Clean the manifest and read its first-class fields (`spec` None when it cannot be)."""
    job = Job(manifest, kind)
    job.original, problems = clean(manifest, kind)
    job.diagnostics += problems
    if has_errors(problems):
        return job
    canon = job.canon = sameness.canonical(job.original, kind)
    replicas = kind.replicas(canon)
    counts = {t: int(r.get("replicas", 1)) for t, r in replicas.items()}
    found = shapes.shape(kind.adapter, counts, kind.extra(canon))
    if found is None:
        shown = ", ".join(f"{t} x{n}" for t, n in counts.items())
        job.diagnostics.append(manifest.error(
            ("spec", kind.replica_specs), f"the replicas ({shown}) are no shape a {kind.adapter.name} spec can say"
            f" with nodes and roles", "see docs/import.md, 'What is refused'"))
        return job
    templates = {t: r.get("template") or {} for t, r in replicas.items()}
    job.spec = lifting.lift(job.original, canon, kind, found, templates, replicas)
    job.roles = {p.replica_type: p.role for p in found.plans}
    return job


def prepare_trainjob(manifest: Manifest, runtimes: dict[tuple[str, str], "trainer.Runtime"]) -> Job:
    """A Trainer v2 TrainJob: its runtime (beside it in the sources, or a stock one) says its framework."""
    runtime_kind, name = trainer.ref(manifest.data)
    runtime = runtimes.get((runtime_kind, name)) or (
        trainer.stock(name) if runtime_kind == trainer.DEFAULT_RUNTIME_KIND else None)
    adapter = trainer.framework_of(runtime) if runtime is not None else None
    kind = trainer.TrainerKind(trainer.VERSION, adapter or next(iter(kinds.KINDS.values())).adapter, "trainer-v2",
                               runtime=runtime)
    job = Job(manifest, kind)
    at = ("spec", "runtimeRef", "name")
    if runtime is None:
        job.diagnostics.append(manifest.error(at, f"{runtime_kind} {name} is no stock runtime and not among the"
                                              " sources, so the job's framework cannot be told",
                                              "import the runtime's manifest together with the job", prefer_key=False))
        return job
    if adapter is None:
        able = ", ".join(sorted({a.trainer_v2.ml_policy for a in kinds_adapters() if a.trainer_v2 is not None}))
        job.diagnostics.append(manifest.error(at, f"{runtime_kind} {name} runs mlPolicy {runtime.ml_policy}, which"
                                              f" no trainforge framework runs ({able})",
                                              "see docs/import.md, 'What is refused'", prefer_key=False))
        return job
    job.original, problems = clean(manifest, kind)
    job.diagnostics += problems
    if not has_errors(problems):
        job.canon = sameness.canonical(job.original, kind)
        job.spec = trainer.lift(job.original, job.canon, kind)
    return job


def kinds_adapters() -> list[Any]:
    from foundation.frameworks import ADAPTERS

    return list(ADAPTERS.values())


def clean(manifest: Manifest, kind: JobKind) -> tuple[Obj, list[Diagnostic]]:
    """The manifest without what the API server wrote or would drop; a notice for each."""
    job = jsondata.copy(manifest.data)
    problems: list[Diagnostic] = []
    meta = job.get("metadata")
    if not isinstance(meta, dict) or not isinstance(job.get("spec"), dict):
        return job, [manifest.error((), f"{kind.kind} without metadata or spec", "add them")]
    server = ["status"] if "status" in job else []
    job.pop("status", None)
    dropped = sameness.clean_metadata(meta)
    own = [d for d in dropped if sameness.OWN_PREFIX in d]
    engines = [d for d in dropped if d.split(".", 1)[-1] in sameness.ENGINE_MARKS.get(d.split(".", 1)[0], ())]
    server += [d for d in dropped if d not in own and d not in engines]
    if server:
        problems.append(manifest.error((), f"left out what the cluster wrote: {', '.join(server)}",
                                       severity="notice"))
    if own:
        problems.append(manifest.error((), f"left out trainforge's own marks: {', '.join(own)}", severity="notice"))
    if engines:
        problems.append(manifest.error((), f"left out the marks of the GitOps engine that synced it: {', '.join(engines)}",
                                       severity="notice"))
    if not meta.get("name"):
        at = ("metadata", "generateName") if "generateName" in meta else ("metadata",)
        problems.append(manifest.error(at, "the job has no name (generateName asks the API server for a new one"
                                       " at every create); a job kept in git needs a fixed name",
                                       "write metadata.name"))
    elif "generateName" in meta:
        del meta["generateName"]
    if meta.get("ownerReferences"):
        owner = meta["ownerReferences"][0]
        problems.append(manifest.error(("metadata", "ownerReferences"), f"the job is owned by {owner.get('kind')}"
                                       f" {owner.get('name')}, which manages it; from git it would have two owners",
                                       "import the owner's manifest, or the job's own without ownerReferences"))
    for loc in kind.unknown_fields(job):
        problems.append(manifest.error(loc, f"{kind.kind} has no field {loc[-1]} (the API server drops it); left out",
                                       severity="warning"))
        sameness.drop(job, loc)
    return job, problems


def finish_all(jobs: list[Job], settings: "Settings") -> None:
    """Lower each lifted spec, move what differs into podTemplate, and compile and compare the
    final specs. The first lowering is not reviewed: half the specs change after it, and the
    review of the final spec (a full compile, or the rules alone on the probe's targets when
    nothing changed) is what counts, as `build` would run it. The jobs compile together, as `build` compiles a folder
    (one job at a time when that refuses anything, so each refusal is its own job's)."""
    probes = compile_specs(jobs, settings, review=False)
    for job in jobs:
        probe, errors, _ = probes[id(job)]
        if probe is None:
            job.diagnostics += errors
            job.spec = None
    live = [j for j in jobs if j.spec is not None]
    probed = {id(j): sameness.canonical(probes[id(j)][0], j.kind, owned=True) for j in live}  # ours to change
    changed = {id(j) for j in live if patch_spec(j, probed[id(j)])}
    finals = compile_specs([j for j in live if id(j) in changed], settings)
    for job in live:
        if id(job) in changed:
            compiled, errors, _ = finals[id(job)]
            compare(job, sameness.canonical(compiled, job.kind, owned=True) if compiled is not None else probed[id(job)],
                    errors)
        else:  # the spec is the probe's: its targets reviewed, the probe's job the final one
            compare(job, probed[id(job)], review_targets(job, probes[id(job)][2]))


def patch_spec(job: Job, probed: Obj) -> bool:
    """Write into the spec the podTemplate (the job's and each role's) that turns the pod
    templates of `probed` (the job the lifted spec renders, canonical) into the manifest's;
    whether the spec changed."""
    assert job.spec is not None
    canon = job.canon
    patches = {rtype: _patch(template, _template(canon, job.kind, rtype)) for rtype, template in job.kind.templates(probed)}
    shared = residual.common(list(patches.values()))
    own = {rtype: residual.without(p, shared) for rtype, p in patches.items()}
    if shared:
        job.spec["spec"]["podTemplate"] = shared
    for rtype, rest in own.items():
        if rest and rtype in job.roles:  # the role's own patch, after the job's
            job.spec["spec"].setdefault("roles", {}).setdefault(job.roles[rtype], {})["podTemplate"] = rest
        elif rest:
            job.diagnostics.append(job.manifest.error(
                ("spec", job.kind.replica_specs, rtype, "template"),
                f"the {rtype} pods differ from the others in what the spec has no field for"
                f" ({', '.join(kept_fields(rest))}), and {job.kind.target} takes no per-role podTemplate",
                "see docs/import.md, 'What is refused'"))
    kept = [*kept_fields(shared), *(f for rest in own.values() for f in kept_fields(rest))]
    job.kept = sorted(set(kept), key=kept.index)
    job.told = {rtype for rtype, rest in own.items() if rest and rtype not in job.roles}  # refused above
    return bool(shared) or any(own.values())


def compare(job: Job, final: Obj, errors: list[Diagnostic]) -> None:
    """The round trip of the final spec (`final`: the job it renders, canonical): each
    difference from the manifest refuses the job at the field that differs."""
    if errors:
        job.diagnostics += errors
        job.spec = None
        return
    job.differences = list(sameness.diff(job.canon, final))
    job.text = writing.dump(job.spec)
    for difference in job.differences:
        loc = difference.loc
        if not (len(loc) > 2 and loc[1] == job.kind.replica_specs and loc[2] in job.told):
            job.diagnostics.append(refusal(job, difference))


def _patch(compiled: Obj, manifest: Obj) -> Obj:
    """The podTemplate that turns a compiled template into the manifest's ({} when they are equal:
    most roles of most jobs, where the manifest's template need not be copied to be written)."""
    if compiled == manifest:
        return {}
    return residual.patch(compiled, manifest, poddefaults.strip(jsondata.copy(manifest)))


def _template(canon: Obj, kind: JobKind, rtype: str) -> Obj:
    return dict(kind.templates(canon)).get(rtype) or {}


def refusal(job: Job, difference: Difference) -> Diagnostic:
    """A difference the spec cannot take away, at the manifest field it is about."""
    loc = raw_loc(job.manifest.data, difference.loc)
    original, back = sameness.show(difference.original), sameness.show(difference.roundtripped)
    known = job.kind.why(difference.loc)
    if known is not None:
        what = known
    elif difference.roundtripped is sameness.ABSENT:
        what = f"the round trip leaves out {original}"
    elif difference.original is sameness.ABSENT:
        what = f"the round trip adds {back}, which the manifest does not have"
    else:
        what = f"the round trip gives {back} where the manifest has {original}"
    return job.manifest.error(loc, f"the spec cannot say this: {what}", "see docs/import.md, 'What is refused'")


def raw_loc(data: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """`loc` of a canonical form as a path into the manifest as written (a keyed list item by
    its index there); as far as it goes."""
    out: list[Any] = []
    node = data
    for part in loc:
        if isinstance(part, sameness.Item) and isinstance(node, list):
            index = next((i for i, item in enumerate(node) if isinstance(item, dict)
                          and str(item.get(part.key)) == str(part)), None)
            if index is None:
                break
            out.append(index)
            node = node[index]
        elif isinstance(node, dict) and part in node:
            out.append(part)
            node = node[part]
        else:
            break
    return tuple(out)


def kept_fields(patch: Obj, prefix: str = "") -> list[str]:
    """The fields a podTemplate writes, as `import` lists them: pod fields by name, container
    fields as `containers[name].field`, labels and annotations by key."""
    out: list[str] = []
    for part in ("metadata", "spec"):
        value = patch.get(part)
        if not isinstance(value, dict):
            continue
        for key, item in value.items():
            if part == "metadata":
                out += [f"{key}.{k}" for k in (item or {})] if isinstance(item, dict) else [str(key)]
            elif key in ("containers", "initContainers") and isinstance(item, list) and any(
                    isinstance(i, dict) and "$patch" not in i and len(i) > 1 and "image" not in i for i in item):
                for container in item:
                    if isinstance(container, dict) and container.get("name") is not None:
                        out += [f"{key}[{container['name']}].{k}" for k in container if k != "name"] \
                            if "image" not in container else [f"{key}[{container['name']}]"]
            else:
                out.append(str(key))
    return out


def layout(jobs: list[Job], settings: Optional[Obj], runtimes: list[Manifest]) -> dict[str, str]:
    """Relative path -> text of every file to write: one spec per job, in namespace folders
    when the jobs use more than one namespace, the runtimes the TrainJobs name (`runtime-<name>.yaml`)
    and the project file when one is needed."""
    done = [j for j in jobs if j.ok]
    spaces = {j.namespace for j in done}
    files: dict[str, str] = {}
    for job in done:
        folder = f"{job.namespace}/" if len(spaces) > 1 else ""
        job.path = f"{folder}{job.name}.yaml"
        files[job.path] = job.text
    for manifest in runtimes if done else []:
        data = shipped_runtime(manifest)
        files[f"runtime-{data['metadata']['name']}.yaml"] = writing.dump(data)
    if settings is not None and done:
        files[project.PROJECT_FILE] = writing.dump(settings)
    return files
