"""The trainer-v2 target: what each spec field becomes in a Kubeflow Trainer v2 TrainJob.

Semantic facts first (runtime, trainer, run policy, overlays through runtimePatches),
then the positioned errors for what v2 cannot express, then the stock-runtime table held
to the Trainer v2.3.0 release files. Jobs are compiled through the real pipeline from a
project whose `prod` environment targets trainer-v2 (and `dev` stays on kubeflow-v1).
"""

from __future__ import annotations

import json

from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler_builders import compile_docs, job_doc, job_errors, project_doc, run_cli, shared_dir

RUNTIMES = shared_dir() / "reference" / "crds" / "trainer-v2.3.0" / "runtimes"
PATCH_PATH = ("runtimePatches", 0, "trainingRuntimeSpec", "template", "spec", "replicatedJobs")


def project(**prod: Any) -> dict[str, Any]:
    """dev on kubeflow-v1, prod on trainer-v2 with `prod` settings (gpuTypes go to both)."""
    dev = {"gpuTypes": prod["gpuTypes"]} if "gpuTypes" in prod else {}
    return project_doc(environments={"dev": dev, "prod": {"target": "trainer-v2", **prod}})


def v2_job(folder: Path, doc: dict[str, Any], **prod: Any) -> dict[str, Any]:
    """The rendered TrainJob of `doc` in prod; fails on any error."""
    result = compile_docs(folder, doc, project=project(**prod))
    errors = [d.text() for d in result.diagnostics if d.severity == "error"]
    assert not errors, "\n".join(errors)
    (bundle,) = result.bundles["prod"]
    return bundle.rendered_job()


def replicated_jobs(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    node: Any = job["spec"]
    for part in PATCH_PATH:
        node = node[part]
    return {entry["name"]: entry["template"]["spec"]["template"] for entry in node}


def errors_of(tmp_path: Path, spec: str, *, framework: str = "pytorch", **prod: Any) -> list[str]:
    return job_errors(tmp_path, project(**prod), spec, framework=framework)


# --- what the TrainJob says --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("framework", "runtime"),
    [("pytorch", "torch-distributed"), ("mpi", "deepspeed-distributed"),
     ("jax", "jax-distributed"), ("xgboost", "xgboost-distributed")],
)
def test_each_framework_runs_on_its_stock_cluster_training_runtime(tmp_path, framework, runtime):
    job = v2_job(tmp_path, job_doc(framework))

    assert (job["apiVersion"], job["kind"]) == ("trainer.kubeflow.org/v1alpha1", "TrainJob")
    assert job["spec"]["runtimeRef"] == {"name": runtime, "kind": "ClusterTrainingRuntime"}


def test_the_same_file_is_a_pytorchjob_in_dev_and_a_trainjob_in_prod(tmp_path):
    result = compile_docs(tmp_path, job_doc("pytorch", nodes=2), project=project())

    assert [b.kind for b in result.bundles["dev"]] == ["PyTorchJob"]
    assert [b.kind for b in result.bundles["prod"]] == ["TrainJob"]


def test_the_trainer_carries_image_command_args_env_nodes_processes_and_resources(tmp_path):
    doc = job_doc(
        "pytorch", image="ghcr.io/acme/llm:2", command=["torchrun", "train.py"], args=["--lr", "3e-5"],
        env={"MODE": "fast", "TOKEN": {"secret": "hf", "key": "token"}, "URL": {"configMap": "cfg", "key": "url"}},
        nodes=4, processesPerNode=8, resources={"gpu": 8, "cpu": "32", "memory": "256Gi"},
    )

    trainer = v2_job(tmp_path, doc, gpuResource="amd.com/gpu")["spec"]["trainer"]

    assert trainer == {
        "image": "ghcr.io/acme/llm:2",
        "command": ["torchrun", "train.py"],
        "args": ["--lr", "3e-5"],
        "env": [
            {"name": "MODE", "value": "fast"},
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
            {"name": "URL", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "url"}}},
        ],
        "numNodes": 4,
        "numProcPerNode": 8,
        "resourcesPerNode": {
            "limits": {"memory": "256Gi", "amd.com/gpu": "8"},
            "requests": {"cpu": "32", "memory": "256Gi", "amd.com/gpu": "8"},
        },
    }


def test_quantities_are_written_as_trainers_admission_stores_them(tmp_path):
    """Trainer's mutating webhook answers with every Go-typed quantity as its String() and
    spec.trainer is immutable: what the compiler writes must already be that, or the next
    apply is refused. (canonical_text is held to the API server's Go types in
    test_trainer_v2_server.py, and the whole loop to the real Trainer in tests/e2e.)"""
    doc = job_doc("pytorch", nodes=2, resources={"gpu": 1, "cpu": "0.5", "memory": "1.5Gi", "sharedMemory": "1.5Gi"},
                  podTemplate={"spec": {"volumes": [
                      {"name": "scratch", "emptyDir": {"sizeLimit": "2048Mi"}},
                      {"name": "tmp", "ephemeral": {"volumeClaimTemplate": {"spec": {
                          "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1000Gi"}}}}}}]}})

    job = v2_job(tmp_path, doc)

    assert job["spec"]["trainer"]["resourcesPerNode"] == {
        "limits": {"memory": "1536Mi", "nvidia.com/gpu": "1"},
        "requests": {"cpu": "500m", "memory": "1536Mi", "nvidia.com/gpu": "1"},
    }
    volumes = {v["name"]: v for v in replicated_jobs(job)["node"]["spec"]["volumes"]}
    assert volumes["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "1536Mi"}
    assert volumes["scratch"]["emptyDir"] == {"sizeLimit": "2Gi"}
    assert volumes["tmp"]["ephemeral"]["volumeClaimTemplate"]["spec"]["resources"] == {"requests": {"storage": "1000Gi"}}


def test_processes_per_node_auto_is_left_to_the_torch_runtime(tmp_path):
    trainer = v2_job(tmp_path, job_doc("pytorch", resources={"gpu": 4}))["spec"]["trainer"]

    assert "numProcPerNode" not in trainer  # torch-distributed defaults to auto


@pytest.mark.parametrize(("resources", "processes", "slots"), [({"gpu": 4}, "auto", 4), ({}, "auto", 1), ({"gpu": 4}, 2, 2)])
def test_mpi_slots_per_node_follow_processes_per_node_as_in_v1(tmp_path, resources, processes, slots):
    doc = job_doc("mpi", resources=resources, processesPerNode=processes)

    assert v2_job(tmp_path, doc)["spec"]["trainer"]["numProcPerNode"] == slots


def test_mpi_patches_the_launcher_and_the_nodes_since_the_launcher_runs_as_a_node(tmp_path):
    doc = job_doc("mpi", storage=[{"name": "code", "mountPath": "/code", "claim": "code"}])

    jobs = replicated_jobs(v2_job(tmp_path, doc))

    assert list(jobs) == ["launcher", "node"]
    for template in jobs.values():
        assert template["spec"]["containers"] == [{"name": "node", "volumeMounts": [{"name": "code", "mountPath": "/code"}]}]


def test_run_policy_maps_deadline_and_suspend_only(tmp_path):
    spec = v2_job(tmp_path, job_doc("jax", policy={"activeDeadline": "2h", "suspend": True}))["spec"]

    assert spec["activeDeadlineSeconds"] == 7200
    assert spec["suspend"] is True
    assert "runPolicy" not in spec and "managedBy" not in spec


def test_suspend_false_is_not_written_so_nothing_in_git_fights_kueue(tmp_path):
    assert "suspend" not in v2_job(tmp_path, job_doc("jax", policy={"suspend": False}))["spec"]


def test_labels_go_on_the_trainjob_and_every_pod_annotations_on_the_trainjob(tmp_path):
    doc = job_doc("xgboost", labels={"team": "risk"})
    doc["metadata"]["annotations"] = {"acme.dev/owner": "risk"}

    job = v2_job(tmp_path, doc)

    assert job["metadata"]["labels"] == {"team": "risk"}
    assert job["metadata"]["annotations"] == {"acme.dev/owner": "risk"}
    assert replicated_jobs(job)["node"]["metadata"] == {"labels": {"team": "risk"}}


def test_a_named_runtime_overrides_the_stock_one_and_a_training_runtime_is_namespaced(tmp_path):
    cluster = v2_job(tmp_path / "a", job_doc("pytorch", runtime="torch-gang"))
    namespaced = v2_job(
        tmp_path / "b", job_doc("pytorch", namespace="nlp", runtime={"name": "torch-nlp", "kind": "TrainingRuntime"})
    )

    assert cluster["spec"]["runtimeRef"] == {"name": "torch-gang", "kind": "ClusterTrainingRuntime"}
    # runtimeRef has no namespace: a TrainingRuntime is looked up in the TrainJob's own
    assert namespaced["spec"]["runtimeRef"] == {"name": "torch-nlp", "kind": "TrainingRuntime"}
    assert namespaced["metadata"]["namespace"] == "nlp"


def test_runtime_has_no_effect_under_kubeflow_v1(tmp_path):
    result = compile_docs(tmp_path, job_doc("pytorch", runtime="torch-gang"), project=project())

    assert "runtime" not in str(result.bundles["dev"][0].rendered_job())


# --- overlays through runtimePatches --------------------------------------------------------------


def test_overlays_patch_the_compilers_runtime_patch_entry(tmp_path):
    doc = job_doc(
        "pytorch",
        resources={"gpu": 8, "gpuType": "h100", "sharedMemory": "16Gi"},
        storage=[{"name": "data", "mountPath": "/data", "claim": "imagenet", "readOnly": True},
                 {"name": "ckpt", "mountPath": "/ckpt", "size": "100Gi"}],
        serviceAccount={"create": True, "imagePullSecrets": ["ghcr"]},
        scheduling={"queue": "team-a", "nodeSelector": {"pool": "train"},
                    "tolerations": [{"key": "spot", "operator": "Exists"}]},
    )
    gpu_types = {"h100": {"nodeSelector": {"gpu": "h100"}, "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}}

    job = v2_job(tmp_path, doc, gpuTypes=gpu_types)

    (patch,) = job["spec"]["runtimePatches"]
    assert patch["manager"] == "trainforge.dev/compiler"
    pod = replicated_jobs(job)["node"]["spec"]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    assert pod["serviceAccountName"] == "demo"
    assert pod["imagePullSecrets"] == [{"name": "ghcr"}]
    assert pod["nodeSelector"] == {"gpu": "h100", "pool": "train"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}, {"key": "spot", "operator": "Exists"}]
    assert [v["name"] for v in pod["volumes"]] == ["dshm", "data", "ckpt"]
    assert pod["volumes"][1]["persistentVolumeClaim"] == {"claimName": "imagenet", "readOnly": True}
    assert pod["containers"] == [{"name": "node", "volumeMounts": [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "data", "mountPath": "/data", "readOnly": True},
        {"name": "ckpt", "mountPath": "/ckpt"},
    ]}]
    assert "schedulerName" not in pod and "priorityClassName" not in pod


def test_rbac_and_pvc_components_stay_as_in_v1(tmp_path):
    doc = job_doc("pytorch", storage=[{"name": "ckpt", "mountPath": "/ckpt", "size": "1Ti"}],
                  serviceAccount={"create": True, "rules": [{"resources": ["configmaps"], "verbs": ["get"]}]})
    result = compile_docs(tmp_path, doc, project=project())

    def objects(env: str) -> list[tuple[str, str]]:
        (bundle,) = result.bundles[env]
        return sorted((r["kind"], r["metadata"]["name"]) for c in bundle.components for r in c.resources)

    assert objects("prod") == objects("dev") == [
        ("PersistentVolumeClaim", "demo-ckpt"), ("Role", "demo"), ("RoleBinding", "demo"), ("ServiceAccount", "demo"),
    ]


def test_the_kueue_priority_label_is_how_v2_jobs_get_a_priority(tmp_path):
    job = v2_job(tmp_path, job_doc("jax", scheduling={"priority": "high"}), scheduling={"kueuePriority": True})

    assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "high"


def test_pod_template_fields_the_runtime_patch_allows_are_carried_with_the_container_renamed(tmp_path):
    doc = job_doc("pytorch", podTemplate={
        "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}},
        "spec": {"securityContext": {"runAsNonRoot": True},
                 "containers": [{"name": "pytorch", "securityContext": {"allowPrivilegeEscalation": False}}]},
    })

    template = replicated_jobs(v2_job(tmp_path, doc))["node"]

    assert template["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
    assert template["spec"]["securityContext"] == {"runAsNonRoot": True}
    assert template["spec"]["containers"] == [{"name": "node", "securityContext": {"allowPrivilegeEscalation": False}}]


def test_gang_on_a_custom_runtime_is_the_runtimes_business_and_reported_as_a_notice(tmp_path):
    result = compile_docs(tmp_path, job_doc("pytorch", runtime="torch-gang", scheduling={"gang": True}), project=project())

    assert [d.severity for d in result.diagnostics] == ["notice"]
    assert "podGroupPolicy of runtime torch-gang" in result.diagnostics[0].message
    (bundle,) = result.bundles["prod"]
    assert [c.name for c in bundle.components] == []  # no PodGroup, no scheduler: the runtime does it


# --- what v2 cannot express -------------------------------------------------------------------------

FIX_OWN = "or move it into a runtime of your own and name it with spec.runtime"


@pytest.mark.parametrize(
    ("framework", "spec", "expected"),
    [
        pytest.param("tensorflow", "", [
            "6:3: spec.framework: tensorflow has no Kubeflow Trainer v2 runtime, and environment 'prod' targets"
            " trainer-v2; tensorflow compiles for target kubeflow-v1: set environments.prod.target to it in trainforge.yaml"],
            id="tensorflow is refused at spec.framework naming the targets that run it"),
        pytest.param("paddle", "", ["6:3: spec.framework: paddle has no Kubeflow Trainer v2 runtime"],
                     id="paddle too"),
        pytest.param("mxnet", "", ["6:3: spec.framework: mxnet has no Kubeflow Trainer v2 runtime"], id="mxnet too"),
        pytest.param("pytorch", "elastic: {minNodes: 1, maxNodes: 4}\n", [
            "8:3: spec.elastic: Trainer v2.3 cannot express elastic training"],
            id="elastic pytorch cannot be expressed"),
        pytest.param("pytorch", "policy: {restart: ExitCode}\n", [
            "8:12: spec.policy.restart: a Trainer v2.3 TrainJob cannot choose how a pod restarts: runtimePatches set"
            " neither the pods' restartPolicy nor the Jobs' backoffLimit; remove it, or unset it for this"
            " environment with environments.prod.policy.restart: null, or set restartScope: job with a backoffLimit"
            " (the whole job restarts, up to backoffLimit times)"],
            id="a per-pod restart policy is an error whose fix is whole-job restarts"),
        pytest.param("jax", "policy: {backoffLimit: 3}\n", [
            "8:12: spec.policy.backoffLimit: a Trainer v2.3 TrainJob cannot limit the restarts of a pod"],
            id="backoffLimit without restartScope job"),
        pytest.param("jax", "policy: {ttlAfterFinished: 1d}\n", ["8:12: spec.policy.ttlAfterFinished: a Trainer v2 TrainJob cannot set ttlAfterFinished"],
                     id="ttlAfterFinished"),
        pytest.param("jax", "policy: {cleanPods: All}\n", ["8:12: spec.policy.cleanPods: a Trainer v2 TrainJob cannot set cleanPods"],
                     id="cleanPods"),
        pytest.param("jax", "policy: {activeDeadline: 0}\n", [
            "8:12: spec.policy.activeDeadline: a Trainer v2 TrainJob's activeDeadlineSeconds must be at least 1",
            "8:28: spec.policy.activeDeadline: a deadline of 0 seconds fails the job as soon as it starts"],  # dev: v1
            id="a zero deadline, below the TrainJob CRD's minimum"),
        pytest.param("pytorch", "env: {PET_NNODES: \"2\"}\n", [
            "8:9: spec.env.PET_NNODES: the pytorch runtime sets PET_NNODES itself and the Trainer refuses it in trainer.env"],
            id="a variable the torch runtime reserves"),
        pytest.param("mpi", "roles: {launcher: {resources: {cpu: 1}}}\n", [
            "8:11: spec.roles.launcher: a Trainer v2 TrainJob has no extra roles"], id="an extra role such as the MPI launcher"),
        pytest.param("pytorch", "roles: {worker: {restart: ExitCode, image: w}}\n", [
            "8:20: spec.roles.worker.restart: a Trainer v2 TrainJob cannot give a restart policy (runtimePatches set no"
            " restartPolicy) to its worker pods alone: every node runs one trainer from one replicated job",
            "8:39: spec.roles.worker.image: a Trainer v2 TrainJob cannot give an image to its worker pods alone"],
            id="settings for one main role, each at its field"),
        pytest.param("pytorch", "workingDir: /w\n", ["8:3: spec.workingDir: a Trainer v2 TrainJob cannot set the working directory"],
                     id="workingDir"),
        pytest.param("pytorch", "scheduling: {priority: high}\n", [
            "8:16: spec.scheduling.priority: a Trainer v2 TrainJob cannot set a PriorityClass"], id="a PriorityClass"),
        pytest.param("pytorch", "scheduling: {gang: true}\n", [
            "8:16: spec.scheduling.gang: gang scheduling in Trainer v2 is the runtime's podGroupPolicy, and the stock"
            " runtime torch-distributed has none; name a runtime with podGroupPolicy (volcano or coscheduling) in"
            " spec.runtime, or turn it off for this environment with environments.prod.scheduling.gang: false"],
            id="gang on a stock runtime, which has no podGroupPolicy"),
        pytest.param("pytorch", "runtime: torch-gang\nscheduling: {gang: {timeoutSeconds: 60}}\n", [
            "9:23: spec.scheduling.gang.timeoutSeconds: in Trainer v2 the gang timeout is the runtime's"
            " podGroupPolicy.coscheduling.scheduleTimeoutSeconds"], id="a gang timeout"),
        pytest.param("jax", "runtime: torch-distributed\n", [
            "8:3: spec.runtime: the stock runtime torch-distributed runs mlPolicy torch, not jax (jax); use"
            " jax-distributed, or remove runtime for the default jax-distributed"],
            id="a stock runtime of another framework"),
        pytest.param("pytorch", "podTemplate: {spec: {hostIPC: false}}\n", [
            "8:24: spec.podTemplate.spec.hostIPC: runtimePatches cannot set spec.hostIPC in a Trainer v2 pod"],
            id="a podTemplate field runtimePatches cannot carry"),
        pytest.param("pytorch", "podTemplate: {spec: {containers: [{name: pytorch, env: [{name: A, value: b}]}]}}\n", [
            "8:53: spec.podTemplate.spec.containers[0].env: Trainer v2 takes the program container's environment"
            " from trainer.env only; move these variables to spec.env"],
            id="podTemplate env on the program container"),
        pytest.param("pytorch", "podTemplate: {spec: {containers: [{name: sidecar, image: busybox}]}}\n", [
            "8:38: spec.podTemplate.spec.containers[0].name: runtimePatches can only patch containers the runtime"
            " has, and the stock runtime's jobs have one container, node"],
            id="a sidecar the stock runtime does not have"),
        pytest.param("pytorch", "podTemplate: {spec: {securityContext: {$patch: delete}}}\n", [
            "8:42: spec.podTemplate.spec.securityContext.$patch: runtimePatches reach Trainer as plain fields (its CRD"
            " has no place for a strategic-merge directive), so a directive would change only what trainforge"
            " writes, never the runtime's pod template"],
            id="a strategic-merge directive, which never reaches the runtime"),
    ],
)
def test_what_v2_cannot_express_is_a_positioned_error(tmp_path, framework, spec, expected):
    errors = errors_of(tmp_path, spec, framework=framework)

    assert len(errors) == len(expected), errors
    for got, want in zip(errors, expected):
        position, message = want.split(": ", 1)
        assert got.startswith(f"{position}: "), got
        assert message in got


def test_errors_point_into_the_environment_override_that_sets_the_field(tmp_path):
    errors = errors_of(tmp_path, "environments:\n  prod: {policy: {backoffLimit: 2}}\n")

    assert errors[0].startswith("9:21: spec.environments.prod.policy.backoffLimit:"), errors


def test_a_v1_only_field_unset_for_the_v2_environment_compiles_for_both(tmp_path):
    doc = job_doc("pytorch", policy={"restart": "OnFailure", "backoffLimit": 3},
                  environments={"prod": {"policy": {"restart": None, "backoffLimit": None}}})
    result = compile_docs(tmp_path, doc, project=project())

    assert result.ok, [d.text() for d in result.diagnostics]
    assert result.bundles["dev"][0].job["spec"]["runPolicy"] == {"backoffLimit": 3}
    assert "backoffLimit" not in str(result.bundles["prod"][0].job)


def test_an_environment_default_gang_is_reported_as_the_environments(tmp_path):
    errors = errors_of(tmp_path, "", scheduling={"gang": True})

    assert len(errors) == 1
    assert "(the default of environment 'prod' in trainforge.yaml)" in errors[0]


def test_mpi_on_the_stock_runtime_warns_that_nodes_run_the_runtimes_image(tmp_path):
    result = compile_docs(tmp_path, job_doc("mpi"), project=project())

    (warning,) = [d for d in result.diagnostics if d.severity == "warning"]
    assert warning.path == "spec.image"
    assert "nodes run the runtime's image ghcr.io/kubeflow/trainer/deepspeed-runtime" in warning.message


# --- the stock runtimes are the release's ------------------------------------------------------------


def _release_runtimes() -> dict[str, dict[str, Any]]:
    docs = [yaml.safe_load(p.read_text()) for p in sorted(RUNTIMES.glob("*.yaml"))]
    return {d["metadata"]["name"]: d for d in docs}


def test_the_trainers_api_facts_are_what_its_v2_3_0_trainjob_crd_serves():
    from foundation.frameworks import stock_runtimes as trainer

    crd = yaml.safe_load((RUNTIMES.parent / f"{trainer.GROUP}_{trainer.TRAINJOBS}.yaml").read_text())
    spec = crd["spec"]
    served = [v["name"] for v in spec["versions"] if v["served"] and v["storage"]]
    assert (spec["group"], served, spec["names"]["kind"], spec["names"]["plural"]) == (
        trainer.GROUP, [trainer.VERSION], trainer.TRAINJOB, trainer.TRAINJOBS)
    assert trainer.API_VERSION == f"{trainer.GROUP}/{trainer.VERSION}"


def test_the_stock_runtime_table_matches_the_v2_3_0_release_files():
    from foundation.frameworks.stock_runtimes import STOCK_RUNTIMES

    release = _release_runtimes()
    assert set(STOCK_RUNTIMES) == set(release)
    for name, facts in STOCK_RUNTIMES.items():
        spec = release[name]["spec"]
        policies = set(spec["mlPolicy"]) - {"numNodes"}
        assert policies == {facts.ml_policy}, name
        assert ("podGroupPolicy" in spec) is facts.pod_group_policy, name
        jobs = {j["name"]: j for j in spec["template"]["spec"]["replicatedJobs"]}
        node = jobs["node"]["template"]["spec"]["template"]["spec"]["containers"]
        assert [c["name"] for c in node] == ["node"], name
        assert node[0]["image"] == facts.node_image, name


def test_each_v2_framework_patches_only_replicated_jobs_its_stock_runtime_has():
    from foundation.frameworks import ADAPTERS

    release = _release_runtimes()
    for adapter in ADAPTERS.values():
        capability = adapter.trainer_v2
        if capability is None:
            continue
        spec = release[capability.runtime]["spec"]
        assert capability.ml_policy in spec["mlPolicy"], adapter.name
        jobs = {j["name"] for j in spec["template"]["spec"]["replicatedJobs"]}
        assert set(capability.program_jobs) <= jobs, adapter.name


def test_the_target_table_names_which_targets_run_each_framework():
    from compiler.targets import supporting

    assert supporting("pytorch") == ["kubeflow-v1", "trainer-v2"]
    assert supporting("tensorflow") == supporting("paddle") == supporting("mxnet") == ["kubeflow-v1"]


# --- the CLI over a project with a trainer-v2 environment --------------------------------------------


def test_check_finds_a_hand_edited_trainjob_and_shows_the_diff(tmp_path):
    from compiler_builders import EXAMPLES

    out = tmp_path / "deploy"
    assert run_cli("build", EXAMPLES / "project-v2", "-o", out).exit_code == 0
    job = out / "prod/ml/llm-finetune/trainjob.yaml"
    job.write_text(job.read_text().replace("numNodes: 4", "numNodes: 8"))

    run = run_cli("check", EXAMPLES / "project-v2", "-o", out)

    assert run.exit_code == 1
    assert "-    numNodes: 8\n+    numNodes: 4\n" in run.stdout


def test_render_of_the_v2_environment_prints_trainjobs_and_the_v1_one_kubeflow_jobs():
    from compiler_builders import EXAMPLES

    kinds = {env: {d["kind"] for d in yaml.safe_load_all(run_cli("render", EXAMPLES / "project-v2", "--env", env).stdout)}
             for env in ("dev", "prod")}

    assert kinds["prod"] >= {"TrainJob"} and not kinds["prod"] & {"PyTorchJob", "MPIJob", "JAXJob", "XGBoostJob"}
    assert kinds["dev"] >= {"PyTorchJob", "MPIJob", "JAXJob", "XGBoostJob"} and "TrainJob" not in kinds["dev"]


def test_names_are_held_to_63_characters_as_jobset_derives_them(tmp_path):
    name = "m" * 51  # v1: m...-launcher (60); JobSet's launcher pod hostname m...-launcher-0-1 (64)
    doc = job_doc("mpi", name=name, nodes=2)

    result = compile_docs(tmp_path, doc, project=project())

    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert [(d.path, d.message) for d in errors] == [
        ("metadata.name", f"generated name '{name}-launcher-0-1' is 64 characters; Kubernetes allows 63")]
    assert "shorten the job name to at most 50 characters" in errors[0].fix


def test_pod_security_defaults_reach_the_node_container_through_the_runtime_patch(tmp_path):
    doc = job_doc("pytorch")
    proj = project()
    proj["policy"] = {"podSecurityDefaults": True}
    result = compile_docs(tmp_path, doc, project=proj)
    assert result.ok, [d.text() for d in result.diagnostics]

    pod = replicated_jobs(result.bundles["prod"][0].rendered_job())["node"]["spec"]

    assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert pod["containers"] == [{"name": "node", "securityContext": {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}]


def test_canonical_quantities_walks_every_path_once_and_leaves_the_rest_shared():
    """One walk for all paths (a trie): `*` and a named key under the same parent both apply,
    lists are entered only through `*`, what is not a quantity stays as written, the input is
    not changed and what lies off the paths is the same object."""
    from schemas.quantity import canonical_quantities

    off = {"keep": ["1000"]}
    obj = {"spec": {"containers": [{"resources": {"limits": {"cpu": "1000", "memory": "1.5Gi", "x": "abc"},
                                                  "requests": [{"cpu": "0.5"}]}, "other": off}],
                    "overhead": {"cpu": 0.5, "memory": 2048}}}
    before = json.dumps(obj, sort_keys=True)
    paths = (("spec", "containers", "*", "resources", "limits", "*"),
             ("spec", "containers", "*", "resources", "limits", "cpu"),
             ("spec", "containers", "*", "resources", "requests", "cpu"),
             ("spec", "overhead", "*"))
    out = canonical_quantities(obj, paths)
    assert out["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "1k", "memory": "1536Mi", "x": "abc"}, "requests": [{"cpu": "0.5"}]}
    assert out["spec"]["overhead"] == {"cpu": "500m", "memory": "2048"}
    assert json.dumps(obj, sort_keys=True) == before
    assert out["spec"]["containers"][0]["other"] is off
