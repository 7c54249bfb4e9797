"""`train-compile argocd`: what it writes renders with kustomize, installs into an Argo CD
base as a Component, carries health scripts that run in Lua, and ignores exactly what
Kueue changes (checked with a real jq, the language Argo CD evaluates
`jqPathExpressions` in)."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import jq
import pytest
import yaml
from gitops_tools import FIXTURES, by_kind, kustomize, run, tool
from gitops_statuses import condition, job

from foundation.frameworks import BY_KIND
from compiler.gitops import argocd, health
from health_eval import run_lua
from compiler.pipeline import compile_sources
from schemas.upstream import QUEUE_LABEL

REPO = "https://git.example.com/ml/training.git"

ARGOCD_BASE = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: argocd}
data: {url: https://argocd.example.com}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: argocd-repo-server, namespace: argocd}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: argocd-repo-server}}
  template:
    metadata: {labels: {app.kubernetes.io/name: argocd-repo-server}}
    spec:
      containers:
      - {name: argocd-repo-server, image: quay.io/argoproj/argocd:v2.13.0}
      volumes:
      - {name: var-files, emptyDir: {}}
      - {name: plugins, emptyDir: {}}
"""


def generate(tmp_path: Path, *extra: str, name: str = "argocd") -> Path:
    out = tmp_path / name
    run(tool("train-compile"), "argocd", str(FIXTURES / "project"), "-o", str(out),
        "--repo-url", REPO, "--path", "deploy", *extra)
    return out


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    return generate(tmp_path_factory.mktemp("gen"))


@pytest.fixture(scope="module")
def installed(tmp_path_factory, generated) -> list[dict]:
    return _install(tmp_path_factory.mktemp("install"), generated)


def test_one_application_per_environment_renders_with_kustomize(generated):
    apps = {a["metadata"]["name"]: a for a in kustomize(generated)}
    assert sorted(apps) == ["trainforge-dev", "trainforge-prod"]
    for env in ("dev", "prod"):
        app = apps[f"trainforge-{env}"]
        assert app["apiVersion"] == "argoproj.io/v1alpha1" and app["metadata"]["namespace"] == "argocd"
        assert app["spec"]["source"] == {"repoURL": REPO, "targetRevision": "HEAD", "path": f"deploy/{env}"}
        # the project's default namespace, which CreateNamespace=true makes Argo CD create
        assert app["spec"]["destination"] == {"server": "https://kubernetes.default.svc", "namespace": "ml"}
        assert {"CreateNamespace=true", "RespectIgnoreDifferences=true"} <= set(
            app["spec"]["syncPolicy"]["syncOptions"])
        assert app["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": False}
        assert {d["kind"] for d in app["spec"]["ignoreDifferences"]} == {*BY_KIND, "TrainJob"}


def test_pruning_and_deleting_the_application_delete_jobs_in_the_background(generated, tmp_path):
    """Foreground propagation leaves a pruned job with a deletionTimestamp until its pods are
    gone, and Trainer v2.3.0 re-creates a failed TrainJob's JobSet meanwhile (kubeflow/trainer#3737):
    the spellings are Argo CD v3.2's own (controller/sync.go, application_defaults.go)."""
    (appset,) = kustomize(generate(tmp_path, "--appset", name="appset"))
    for app in [*kustomize(generated), appset["spec"]["template"]]:
        assert "PrunePropagationPolicy=background" in app["spec"]["syncPolicy"]["syncOptions"]
        # an ApplicationSet adds the foreground "resources-finalizer.argocd.argoproj.io" to a
        # template without finalizers (applicationset/utils RenderTemplateParams)
        assert app["metadata"]["finalizers"] == ["resources-finalizer.argocd.argoproj.io/background"]


def test_the_application_path_is_a_tree_kustomize_renders(generated, project_tree):
    app = yaml.safe_load((generated / "applications" / "prod.yaml").read_text())
    rendered = kustomize(project_tree.parent / app["spec"]["source"]["path"])
    assert {o["kind"] for o in rendered} >= {"PyTorchJob", "MPIJob", "ServiceAccount", "PersistentVolumeClaim"}


def test_the_applicationset_stamps_out_the_same_applications(tmp_path, generated):
    (appset,) = kustomize(generate(tmp_path, "--appset", name="appset"))
    assert appset["kind"] == "ApplicationSet" and appset["spec"]["goTemplate"] is True
    elements = appset["spec"]["generators"][0]["list"]["elements"]
    assert elements == [{"env": "dev", "namespace": "ml"}, {"env": "prod", "namespace": "ml"}]
    apps = {a["metadata"]["name"]: a for a in kustomize(generated)}
    for element in elements:  # what the list generator + Go template produce
        text = yaml.safe_dump(appset["spec"]["template"]).replace("{{.env}}", element["env"])
        text = text.replace("{{.namespace}}", element["namespace"])
        stamped = yaml.safe_load(text)
        app = apps[stamped["metadata"]["name"]]
        assert stamped["spec"] == app["spec"]
        assert stamped["metadata"]["labels"] == app["metadata"]["labels"]


def _install(tmp_path: Path, generated: Path) -> list[dict]:
    base = tmp_path / "argocd-install"
    base.mkdir()
    generated = generated.resolve()
    (base / "base.yaml").write_text(ARGOCD_BASE)
    rel = Path(os.path.relpath(generated / "install", base))
    (base / "kustomization.yaml").write_text(
        f"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources: [base.yaml]\ncomponents: [{rel}]\n")
    return kustomize(base)


@pytest.mark.parametrize("kind", list(BY_KIND))
def test_the_installed_argocd_cm_health_scripts_run_in_lua(installed, kind):
    (cm,) = [o for o in installed if o["metadata"]["name"] == "argocd-cm"]
    assert cm["data"]["url"] == "https://argocd.example.com"  # the patch merges, it does not replace
    script = cm["data"][f"resource.customizations.health.kubeflow.org_{kind}"]
    failed = job(kind, [condition(kind, "Created"), condition(kind, "Running", "False"), condition(kind, "Failed")])
    assert run_lua(script, failed)["status"] == "Degraded"
    running = job(kind, [condition(kind, "Created"), condition(kind, "Running")])
    assert run_lua(script, running) == {"status": "Progressing", "message": f"{kind} train is running."}


def test_the_plugin_install_adds_the_sidecar_and_its_config(tmp_path):
    out = generate(tmp_path, "--source", "plugin", "--cmp-image", "registry.example.com/train-compile:0.1.0")
    objects = _install(tmp_path, out)
    (deploy,) = by_kind(objects, "Deployment")
    containers = {c["name"]: c for c in deploy["spec"]["template"]["spec"]["containers"]}
    assert set(containers) == {"argocd-repo-server", argocd.SIDECAR}
    sidecar = containers[argocd.SIDECAR]
    assert sidecar["command"] == ["/var/run/argocd/argocd-cmp-server"]
    assert sidecar["securityContext"] == {"runAsNonRoot": True, "runAsUser": 999}
    volumes = {v["name"] for v in deploy["spec"]["template"]["spec"]["volumes"]}
    assert {m["name"] for m in sidecar["volumeMounts"]} <= volumes
    (cmp_cm,) = [o for o in by_kind(objects, "ConfigMap") if o["metadata"]["name"] == argocd.PLUGIN_CONFIGMAP]
    plugin = yaml.safe_load(cmp_cm["data"]["plugin.yaml"])
    assert plugin["kind"] == "ConfigManagementPlugin" and plugin["spec"]["version"] == "v1"
    assert set(plugin["spec"]) >= {"discover", "generate"}
    app = yaml.safe_load((out / "applications" / "dev.yaml").read_text())
    assert app["spec"]["source"]["plugin"] == {"name": "trainforge-v1", "env": [{"name": "TRAINFORGE_ENV", "value": "dev"}]}
    assert app["spec"]["source"]["path"] == "deploy"


def test_the_plugin_source_needs_an_image(tmp_path):
    proc = run(tool("train-compile"), "argocd", str(FIXTURES / "project"), "-o", str(tmp_path / "x"),
               "--repo-url", REPO, "--path", ".", "--source", "plugin", ok=False)
    assert proc.returncode == 2 and "--cmp-image" in proc.stderr


# --- Kueue: what ignoreDifferences hides, on queued jobs only -------------------------------

@pytest.fixture(scope="module")
def compiled_jobs() -> dict[str, dict]:
    result = compile_sources([FIXTURES / "kinds"])
    assert result.ok, result.diagnostics
    return {b.kind: b.rendered_job() for b in result.bundles["default"]}


def queued(desired: dict, queue: str | None = "team-queue") -> dict:
    """The job with (or, given None, without) the queue label `scheduling.queue` writes."""
    out = copy.deepcopy(desired)
    labels = out["metadata"].setdefault("labels", {})
    labels.pop(QUEUE_LABEL, None)
    if queue:
        labels[QUEUE_LABEL] = queue
    return out


def kueue_admits(desired: dict, *, multikueue: bool = False) -> dict:
    """The live object after Kueue's webhook and admission (kueue podset.Merge)."""
    live = copy.deepcopy(desired)
    live.setdefault("metadata", {})["generation"] = 2
    live["spec"].setdefault("runPolicy", {})["suspend"] = False  # webhook: true; admission: false
    if multikueue:
        live["spec"]["runPolicy"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    specs = BY_KIND[desired["kind"]].facts.replica_specs
    for replica in live["spec"][specs].values():
        meta = replica["template"].setdefault("metadata", {})
        meta.setdefault("labels", {})["kueue.x-k8s.io/tas"] = "true"
        meta.setdefault("annotations", {})["kueue.x-k8s.io/workload"] = "pytorchjob-x-1a2b3"
        pod = replica["template"]["spec"]
        pod.setdefault("nodeSelector", {})["cloud.google.com/gke-nodepool"] = "a3-highgpu"
        pod.setdefault("tolerations", []).append({"key": "spot", "operator": "Exists", "effect": "NoSchedule"})
        pod.setdefault("schedulingGates", []).append({"name": "kueue.x-k8s.io/topology"})
    return live


def normalize(obj: dict, entry: dict) -> dict:
    """Argo CD's normalization: drop every jsonPointer, then `del(expr)` every jq path."""
    out = copy.deepcopy(obj)
    for pointer in entry.get("jsonPointers", []):
        *parents, last = pointer.strip("/").split("/")
        node = out
        for key in parents:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.pop(last, None)
    for expr in entry["jqPathExpressions"]:
        out = jq.compile(f"del({expr})").input_value(out).first()
    return out


def _entry(kind: str) -> dict:
    (entry,) = [e for e in argocd.ignore_differences() if e["kind"] == kind]
    return entry


def drift(config, live) -> list[str]:
    """Argo CD's three-way diff for a custom resource (JSON merge patch, last-applied ==
    config): a field drifts when git sets it and the cluster differs; maps merge key by
    key, lists and scalars compare whole; what only the cluster has is not drift."""
    if isinstance(config, dict) and isinstance(live, dict):
        return [f"{k}.{d}".rstrip(".") for k, v in config.items()
                for d in (drift(v, live[k]) if k in live else [""])]
    return [] if config == live else [""]


def user_suspended(desired: dict) -> dict:
    out = copy.deepcopy(desired)
    out["spec"].setdefault("runPolicy", {})["suspend"] = True  # spec.policy.suspend: true
    return out


def placed(desired: dict) -> dict:
    """The job with git's own placement on every pod template (gpuType, tolerations)."""
    out = copy.deepcopy(desired)
    for replica in out["spec"][BY_KIND[desired["kind"]].facts.replica_specs].values():
        pod = replica["template"]["spec"]
        pod["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
        pod["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    return out


@pytest.mark.parametrize("kind", list(BY_KIND))
def test_kueue_admission_drifts_without_ignore_differences(compiled_jobs, kind):
    desired = user_suspended(queued(compiled_jobs[kind]))
    paths = drift(desired, kueue_admits(desired, multikueue=True))
    specs = BY_KIND[kind].facts.replica_specs
    assert "spec.runPolicy.suspend" in paths
    assert any(p.startswith(f"spec.{specs}.") and p.endswith("spec.tolerations") for p in paths)


@pytest.mark.parametrize("kind", list(BY_KIND))
def test_kueue_admission_of_a_queued_job_is_no_drift_once_normalized(compiled_jobs, kind):
    entry = _entry(kind)
    for desired in (queued(compiled_jobs[kind]), user_suspended(queued(compiled_jobs[kind]))):
        live = kueue_admits(desired, multikueue=True)
        assert drift(normalize(desired, entry), normalize(live, entry)) == []


@pytest.mark.parametrize("kind", list(BY_KIND))
def test_suspend_and_placement_of_a_job_without_a_queue_are_gits(compiled_jobs, kind):
    """Kueue manages no job without a queue label: suspend and the pod templates' placement
    are git's there, so git's change of them is drift Argo CD syncs (tests/e2e suspends and
    resumes such a job for real)."""
    entry = _entry(kind)
    desired = placed(user_suspended(queued(compiled_jobs[kind], None)))
    live = placed(queued(compiled_jobs[kind], None))  # the job as it runs, before the commit
    live["spec"].setdefault("runPolicy", {})["suspend"] = False
    for replica in live["spec"][BY_KIND[kind].facts.replica_specs].values():
        replica["template"]["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}
        replica["template"]["spec"]["tolerations"] = []
    specs, rtypes = BY_KIND[kind].facts.replica_specs, sorted(live["spec"][BY_KIND[kind].facts.replica_specs])
    assert sorted(drift(normalize(desired, entry), normalize(live, entry))) == sorted([
        "spec.runPolicy.suspend",
        *(f"spec.{specs}.{r}.template.spec.{field}" for r in rtypes
          for field in ("nodeSelector.nvidia.com/gpu.product", "tolerations"))])


@pytest.mark.parametrize("kind", list(BY_KIND))
def test_a_real_change_is_still_drift(compiled_jobs, kind):
    desired = queued(compiled_jobs[kind])
    live = kueue_admits(desired)
    specs = BY_KIND[kind].facts.replica_specs
    rtype, first = next(iter(live["spec"][specs].items()))
    first["template"]["spec"]["containers"][0]["image"] = "ghcr.io/acme/other:2"
    entry = _entry(kind)
    assert drift(normalize(desired, entry), normalize(live, entry)) == [
        f"spec.{specs}.{rtype}.template.spec.containers"]


def test_the_expressions_tolerate_templates_without_those_fields():
    bare = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"},
            "spec": {"pytorchReplicaSpecs": {"Worker": {"template": {"spec": {"containers": []}}}}}}
    assert normalize(bare, _entry("PyTorchJob")) == bare
    labelled = queued(bare)
    assert normalize(labelled, _entry("PyTorchJob")) == labelled
