"""podTemplate's strategic-merge directives, held to the engines users check a patch with.

`kubectl kustomize` is the oracle for `$patch: delete` and `$patch: replace`: every case
is applied once by `compiler.strategic.merge` and once by kustomize, as a `patches:`
strategic-merge entry onto a v1 PodTemplate holding the same base template (a built-in
kind, so kustomize knows which lists merge by which key). The results must be equal,
except for the order inside keyed lists: kustomize puts the patch's items first, the
compiler keeps the template's items first and appends new ones (so a podTemplate env var
can use `$(VAR)` from spec.env), so keyed lists are compared by key. `$retainKeys`
kustomize writes out as a field, and a `- $patch: replace` list that an existing item does
not have yet it writes as the marker itself (dropping the items); the API server applies
both, so those cases are held to `kubectl patch --local --type strategic`, which runs the
API server's strategic merge.
Directives neither engine applies alike are refused at their position (the cases are in
test_invalid_specs.py), and the pod security checks judge the merged template.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler import strategic
from compiler_builders import compile_docs, job_doc, job_text, project_doc, run_cli
from test_examples_render import KUBECTL


BASE: dict[str, Any] = {
    "metadata": {"labels": {"team": "nlp"}, "annotations": {"a": "1", "b": "2"}, "finalizers": ["x.io/a", "x.io/b"]},
    "spec": {
        "initContainers": [{"name": "warm", "image": "busybox"}],
        "containers": [
            {"name": "pytorch", "image": "train:1", "args": ["--a"],
             "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C", "value": "3"}],
             "ports": [{"name": "pytorchjob-port", "containerPort": 23456}, {"name": "metrics", "containerPort": 9090}],
             "securityContext": {"privileged": True, "runAsUser": 0, "capabilities": {"add": ["SYS_ADMIN"]}},
             "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "data", "mountPath": "/data"}]},
            {"name": "debug", "image": "busybox", "securityContext": {"privileged": True}},
        ],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}, {"name": "data", "emptyDir": {}}],
        "imagePullSecrets": [{"name": "reg-a"}, {"name": "reg-b"}],
        "tolerations": [{"key": "a", "operator": "Exists"}],
        "nodeSelector": {"pool": "gpu", "zone": "a"},
        "securityContext": {"runAsUser": 0, "fsGroup": 2, "seLinuxOptions": {"type": "spc_t"}},
    },
}


def pod(**spec: Any) -> dict[str, Any]:
    return {"spec": spec}


def container(**fields: Any) -> dict[str, Any]:
    return pod(containers=[{"name": "pytorch", **fields}])


DELETE = {"$patch": "delete"}
REPLACE = {"$patch": "replace"}

# (id, patch): applied by the compiler and by kustomize onto BASE
KUSTOMIZE_CASES = [
    ("a container is deleted by name", pod(containers=[{"name": "debug", **DELETE}])),
    ("an init container is deleted by name", pod(initContainers=[{"name": "warm", **DELETE}])),
    ("an env var is deleted by name", container(env=[{"name": "B", **DELETE}])),
    ("a volume and its mount are deleted, the mount by mountPath",
     {"spec": {"volumes": [{"name": "data", **DELETE}],
               "containers": [{"name": "pytorch", "volumeMounts": [{"mountPath": "/data", **DELETE}]}]}}),
    ("a port is deleted by containerPort", container(ports=[{"containerPort": 9090, **DELETE}])),
    ("a volume's source is swapped by setting the old one to null",
     pod(volumes=[{"name": "data", "emptyDir": None, "persistentVolumeClaim": {"claimName": "shared"}}])),
    ("an image pull secret is deleted by name", pod(imagePullSecrets=[{"name": "reg-a", **DELETE}])),
    ("deleting a name the template does not have changes nothing", pod(containers=[{"name": "nope", **DELETE}])),
    ("one list deletes an item, merges another and adds a third",
     container(env=[{"name": "A", **DELETE}, {"name": "C", "value": "9"}, {"name": "D", "value": "4"}])),
    ("a container's securityContext map is deleted", container(securityContext=DELETE)),
    ("the pod's securityContext map is deleted", pod(securityContext=DELETE)),
    ("a nested map is deleted", pod(securityContext={"seLinuxOptions": DELETE})),
    ("annotations are deleted, labels kept", {"metadata": {"annotations": DELETE}}),
    ("finalizers merge as a set", {"metadata": {"finalizers": ["x.io/b", "x.io/c"]}}),
    ("deleting a map the template does not have changes nothing", pod(affinity=DELETE)),
    ("a container's securityContext is replaced, not merged",
     container(securityContext={**REPLACE, "runAsNonRoot": True, "allowPrivilegeEscalation": False})),
    ("the pod's securityContext is replaced", pod(securityContext={**REPLACE, "runAsNonRoot": True})),
    ("nodeSelector is replaced", pod(nodeSelector={**REPLACE, "pool": "cpu"})),
    ("labels are replaced", {"metadata": {"labels": {**REPLACE, "only": "this"}}}),
    ("a replaced map the template does not have is written as given", pod(dnsConfig={**REPLACE, "searches": ["x"]})),
    ("an env list is replaced by a `- $patch: replace` item",
     container(env=[REPLACE, {"name": "Z", "value": "26"}])),
    ("the volumes list is replaced", pod(volumes=[{"name": "fresh", "emptyDir": {}}, REPLACE])),
    ("the containers list is replaced", pod(containers=[REPLACE, {"name": "pytorch", "image": "other:2"}])),
    ("a keyed list replaced by the marker alone is emptied", pod(imagePullSecrets=[REPLACE])),
    ("directives work inside a container the patch adds",
     pod(containers=[{"name": "side", "image": "s:1", "env": [{"name": "X", **DELETE}, {"name": "Y", "value": "y"}],
                      "securityContext": DELETE}])),
    ("delete and replace in one patch, at several depths",
     {"metadata": {"annotations": {"b": None, "c": "3"}},
      "spec": {"containers": [{"name": "debug", **DELETE},
                              {"name": "pytorch", "securityContext": {**REPLACE, "runAsNonRoot": True},
                               "env": [{"name": "A", **DELETE}]}],
               "securityContext": {"seLinuxOptions": DELETE, "fsGroup": 3},
               "tolerations": [{"key": "b", "operator": "Exists"}]}}),
    ("a null inside a map the template does not have is dropped", pod(dnsConfig={"searches": None, "options": []})),
    ("a null inside a container the patch adds is dropped",
     pod(containers=[{"name": "side", "image": "s:1", "args": None, "securityContext": {"runAsUser": None}}])),
    ("a null inside a replaced map is dropped", pod(securityContext={**REPLACE, "runAsUser": None, "fsGroup": 1})),
    ("a null inside a replaced list's item is dropped", container(env=[REPLACE, {"name": "Z", "value": None}])),
    ("an empty replaced map is written empty", container(securityContext=REPLACE)),
    ("a replaced map inside a container the patch adds is written as given",
     pod(containers=[{"name": "side", "image": "s:1", "securityContext": {**REPLACE, "runAsUser": 5}}])),
    ("without directives maps merge, keyed lists merge and other lists are replaced",
     {"spec": {"containers": [{"name": "pytorch", "args": ["--b"], "env": [{"name": "B", "value": "x"}]}],
               "tolerations": [{"key": "b", "operator": "Exists"}], "nodeSelector": {"zone": None}}}),
]

# (id, patch): applied by the compiler and by the API server's strategic merge (kubectl patch --local)
API_SERVER_CASES = [
    ("$retainKeys clears the pod securityContext fields it does not list",
     pod(securityContext={"$retainKeys": ["fsGroup", "runAsNonRoot"], "fsGroup": 7, "runAsNonRoot": True})),
    ("$retainKeys swaps a volume's source (emptyDir for a PVC)",
     pod(volumes=[{"name": "data", "$retainKeys": ["name", "persistentVolumeClaim"],
                   "persistentVolumeClaim": {"claimName": "shared"}}])),
    ("a `- $patch: replace` list a container does not have yet is written as its items (kustomize writes the"
     " marker into the object instead)",
     pod(containers=[{"name": "debug", "volumeMounts": [REPLACE, {"name": "data", "mountPath": "/data"}]}])),
    ("$deleteFromPrimitiveList removes finalizers, and new ones are added",
     {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x.io/a"], "finalizers": ["x.io/c"]}}),
    ("$retainKeys beside a delete in one container",
     container(securityContext={"$retainKeys": ["runAsUser"], "runAsUser": 1000}, env=[{"name": "C", **DELETE}])),
]


def normalized(value: Any, field: str = "") -> Any:
    """Keyed lists as {key: item}, sets sorted: their order is the one thing the engines may differ on."""
    if isinstance(value, dict):
        return {k: normalized(v, k) for k, v in value.items()}
    if isinstance(value, list) and field in strategic.SETS:
        return sorted(value)  # a set: kustomize puts the patch's values first, the API server last
    if isinstance(value, list):
        items = [normalized(item) for item in value]
        key = strategic.MERGE_KEYS.get(field)
        if key and all(isinstance(item, dict) and key in item for item in items):
            return {"keyed by " + key: {str(item[key]): item for item in items}}
        return items
    return value


def _pod_templates(patches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": f"case-{i}"}, "template": patch}
            for i, patch in enumerate(patches)]


@pytest.fixture(scope="module")
def kustomized(tmp_path_factory) -> dict[str, Any]:
    """Every KUSTOMIZE_CASES patch applied by one `kubectl kustomize` run: {case id: template}."""
    folder = tmp_path_factory.mktemp("kustomize")
    patches = [patch for _, patch in KUSTOMIZE_CASES]
    (folder / "base.yaml").write_text("".join(f"---\n{json.dumps(t)}\n" for t in _pod_templates([BASE] * len(patches))))
    entries = []
    for i, template in enumerate(_pod_templates(patches)):
        (folder / f"patch-{i}.yaml").write_text(json.dumps(template))
        entries.append(f"- path: patch-{i}.yaml\n")
    (folder / "kustomization.yaml").write_text("resources: [base.yaml]\npatches:\n" + "".join(entries))

    proc = subprocess.run([KUBECTL, "kustomize", str(folder)], capture_output=True, text=True, timeout=120)

    assert proc.returncode == 0, proc.stderr
    out = {doc["metadata"]["name"]: doc["template"] for doc in yaml.safe_load_all(proc.stdout) if doc}
    return {case_id: out[f"case-{i}"] for i, (case_id, _) in enumerate(KUSTOMIZE_CASES)}


@pytest.mark.parametrize("case_id", [case_id for case_id, _ in KUSTOMIZE_CASES])
def test_the_compiler_merges_as_kubectl_kustomize_does(kustomized, case_id):
    patch = dict(KUSTOMIZE_CASES)[case_id]

    ours = strategic.merge(BASE, patch)

    assert list(strategic.problems(patch)) == []
    assert "$patch" not in json.dumps(ours)
    assert normalized(ours) == normalized(kustomized[case_id])


@pytest.mark.parametrize("case_id", [case_id for case_id, _ in API_SERVER_CASES])
def test_what_kustomize_cannot_judge_merges_as_the_api_servers_strategic_merge_does(tmp_path, case_id):
    patch = dict(API_SERVER_CASES)[case_id]
    (tmp_path / "base.json").write_text(json.dumps(_pod_templates([BASE])[0]))

    proc = subprocess.run([KUBECTL, "patch", "--local", "-f", str(tmp_path / "base.json"), "--type", "strategic",
                           "-p", json.dumps({"template": patch}), "-o", "json"],
                          capture_output=True, text=True, timeout=60)

    assert proc.returncode == 0, proc.stderr
    ours = strategic.merge(BASE, patch)
    assert list(strategic.problems(patch)) == []
    assert "$" not in json.dumps(ours)
    assert normalized(ours) == normalized(json.loads(proc.stdout)["template"])


def test_new_items_of_a_keyed_list_follow_the_templates_own():
    out = strategic.merge(BASE, container(env=[{"name": "D", "value": "$(A)/d"}, {"name": "B", **DELETE}]))

    assert [e["name"] for e in out["spec"]["containers"][0]["env"]] == ["A", "C", "D"]


def test_the_compiled_job_is_what_kustomize_makes_of_the_lowered_template(tmp_path):
    """End to end: the job's Worker template with the podTemplate, against kustomize applying the
    same podTemplate to the template the job compiles to without one."""
    patch = {"metadata": {"labels": {**REPLACE, "team": "nlp", "tier": "batch"}},
             "spec": {"volumes": [{"name": "dshm", **DELETE}],
                      "containers": [{"name": "pytorch", "volumeMounts": [{"mountPath": "/dev/shm", **DELETE}],
                                      "env": [{"name": "SEED", **DELETE}],
                                      "securityContext": {**REPLACE, "runAsUser": 1000}}]}}
    spec = {"nodes": 2, "env": {"LR": "3e-5", "SEED": "1"}, "resources": {"gpu": 1, "sharedMemory": "1Gi"}}
    worker = lambda job: job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]  # noqa: E731
    base = worker(_job(tmp_path / "plain", job_doc("pytorch", labels={"team": "nlp"}, **spec)))
    compiled = worker(_job(tmp_path / "patched", job_doc("pytorch", labels={"team": "nlp"}, podTemplate=patch, **spec)))
    folder = tmp_path / "kustomize"
    folder.mkdir()
    base_doc, patch_doc = _pod_templates([base])[0], _pod_templates([patch])[0]
    (folder / "base.json").write_text(json.dumps(base_doc))
    (folder / "patch.json").write_text(json.dumps(patch_doc))
    (folder / "kustomization.yaml").write_text("resources: [base.json]\npatches:\n- path: patch.json\n")

    proc = subprocess.run([KUBECTL, "kustomize", str(folder)], capture_output=True, text=True, timeout=60)

    assert proc.returncode == 0, proc.stderr
    # kustomize, like the compiler, leaves a keyed list whose last item is deleted empty
    assert compiled["spec"]["volumes"] == [] and compiled["metadata"]["labels"] == {"team": "nlp", "tier": "batch"}
    assert normalized(compiled) == normalized(yaml.safe_load(proc.stdout)["template"])


def _job(folder: Path, doc: dict[str, Any]) -> dict[str, Any]:
    result = compile_docs(folder, doc)
    assert not [d.text() for d in result.diagnostics if d.severity == "error"]
    (bundle,) = result.bundles["default"]
    return bundle.rendered_job()


# --- the pod security checks judge the merged template -------------------------------------


def test_a_privileged_container_an_environment_deletes_is_not_flagged_there(tmp_path):
    debug = {"name": "debug", "image": "busybox", "securityContext": {"privileged": True}}
    doc = job_doc("pytorch", podTemplate=pod(containers=[debug]),
                  environments={"prod": {"podTemplate": pod(containers=[{"name": "debug", **DELETE}])}})
    project = project_doc(policy={"podSecurity": "baseline"},
                          environments={"dev": {"policy": {"podSecurity": "privileged"}}, "prod": {}})

    result = compile_docs(tmp_path, doc, project=project)

    assert [d.text() for d in result.diagnostics if d.severity == "error"] == []
    names = {env: [c["name"] for c in bundle.rendered_job()["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
                   ["spec"]["containers"]] for env, (bundle,) in result.bundles.items()}
    assert names == {"dev": ["pytorch", "debug"], "prod": ["pytorch"]}


def _environments(tmp_path: Path, level: str, base: dict[str, Any], prod: dict[str, Any]) -> list[Any]:
    """Errors of a job whose podTemplate sets the container's securityContext to `base`, and whose
    prod environment replaces it with `prod` (dev keeps `base`)."""
    replace = {"spec": {"containers": [{"name": "pytorch", "securityContext": {**REPLACE, **prod}}]}}
    doc = job_doc("pytorch", podTemplate={"spec": {
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}, "runAsNonRoot": True},
        "containers": [{"name": "pytorch", "securityContext": base}]}},
        environments={"prod": {"podTemplate": replace}})
    project = project_doc(policy={"podSecurity": level}, environments={"dev": {}, "prod": {}})
    return [d for d in compile_docs(tmp_path, doc, project=project).diagnostics if d.severity == "error"]


def test_an_environments_retain_keys_clears_the_jobs_own_fields_too(tmp_path):
    doc = job_doc("pytorch", podTemplate=pod(securityContext={"runAsUser": 0, "fsGroup": 2}),
                  environments={"prod": {"podTemplate": pod(securityContext={"$retainKeys": ["fsGroup"], "fsGroup": 3})}})
    project = project_doc(policy={"podSecurity": "privileged"}, environments={"dev": {}, "prod": {}})

    result = compile_docs(tmp_path, doc, project=project)

    assert [d.text() for d in result.diagnostics if d.severity == "error"] == []
    contexts = {env: bundle.rendered_job()["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
                ["securityContext"] for env, (bundle,) in result.bundles.items()}
    assert contexts == {"dev": {"runAsUser": 0, "fsGroup": 2}, "prod": {"fsGroup": 3}}


def _last_line(folder: Path, key: str) -> int:
    return max(n for n, line in enumerate((folder / "jobs.yaml").read_text().splitlines(), 1) if f'"{key}"' in line)


def test_a_security_context_an_environment_replaces_is_judged_as_replaced(tmp_path):
    errors = _environments(tmp_path, "baseline", {"privileged": True}, {"runAsUser": 1000})

    # dev keeps privileged: true; prod's replaced securityContext has none of it
    assert [(d.path, d.message) for d in errors] == [
        ("spec.podTemplate.spec.containers[0].securityContext.privileged",
         "pod security level 'baseline' forbids privileged: true in container 'pytorch' (Privileged Containers)")]


def test_a_replaced_security_context_loses_what_restricted_needed_and_is_named_at_the_replace(tmp_path):
    hardened = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}

    errors = _environments(tmp_path, "restricted", hardened, {"runAsUser": 1000})

    at = "spec.environments.prod.podTemplate.spec.containers[0].securityContext"
    assert sorted((d.path, d.line, d.message) for d in errors) == [
        (at, _last_line(tmp_path, "securityContext"), "pod security level 'restricted' forbids keeping the default"
         " capabilities (no drop: [ALL]) in container 'pytorch' (Capabilities)"),
        (at, _last_line(tmp_path, "securityContext"), "pod security level 'restricted' forbids leaving"
         " allowPrivilegeEscalation unset in container 'pytorch' (Privilege Escalation)"),
    ]


# --- what a directive adds to the built job ---------------------------------------------------

PT = "podTemplate:\n  spec:\n"


def test_deleting_the_framework_container_is_refused_as_the_operators_webhook_would(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("job.yaml").write_text(job_text(PT + "    containers:\n      - name: pytorch\n        $patch: delete\n"))

    run = run_cli("validate", "job.yaml")

    refused = ("job.yaml:11:11: error: spec.podTemplate.spec.containers[0]: the PyTorchJob this compiles to is"
               " refused by the Training Operator: spec.pytorchReplicaSpecs[Master].template.spec.containers:"
               " Required value: {}; remove the $patch: delete of the 'pytorch' container")
    assert run.exit_code == 1
    assert run.errors() == [refused.format("must be specified"),
                            refused.format("must have at least one container with name pytorch")]


def test_a_pod_template_with_directives_builds_without_any_directive_in_the_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("job.yaml").write_text(job_text(
        "resources: {sharedMemory: 1Gi}\n" + PT + "    volumes: [{name: dshm, $patch: delete}]\n"
        "    containers:\n      - name: pytorch\n        volumeMounts: [{mountPath: /dev/shm, $patch: delete}]\n"
        "        securityContext: {$patch: replace, runAsNonRoot: true}\n"), encoding="utf-8")

    run = run_cli("build", "job.yaml", "-o", "out")

    assert run.exit_code == 0, run.stderr
    written = "".join(p.read_text() for p in sorted(Path("out").rglob("*.yaml")))
    assert "$patch" not in written and "dshm" not in written and "runAsNonRoot: true" in written
