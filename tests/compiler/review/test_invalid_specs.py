"""Invalid specs through the real CLI: exit code, exact position, field path and text.

Each case is the smallest valid job (see `job_text`: spec extras start on line 8) plus
the one mistake it is about, so the expected `job.yaml:LINE:COL` can be checked by
counting lines in the case itself. Every case must produce exactly the one diagnostic
shown, as `validate` prints it, and exit 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from compiler_builders import EXAMPLES, job_text, run_cli

LONG_NAME = "a" * 64
PT = "podTemplate:\n  spec:\n"  # lines 8-9: a podTemplate case's own lines start at 10


def bomb() -> str:
    """A 'billion laughs' document: nine levels of ten aliases each (10**9 nodes)."""
    lines = ['    l0: &l0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for level in range(1, 9):
        refs = ", ".join([f"*l{level - 1}"] * 10)
        lines.append(f"    l{level}: &l{level} [{refs}]")
    return job_text(metadata="annotations:\n" + "\n".join(line[2:] for line in lines) + "\n")


def deep() -> str:
    return job_text("args: " + "[" * 400 + "]" * 400 + "\n")


def two_jobs_named_alike() -> str:
    return job_text() + "---\n" + job_text(framework="jax")


def two_jobs_creating_one_account() -> str:
    account = "serviceAccount: {name: trainer, create: true, rules: [{resources: [pods], verbs: [get]}]}\n"
    return job_text(account) + "---\n" + job_text(account, name="other") + "---\n" + job_text(
        "serviceAccount: {name: trainer}\n", name="user")  # only uses it: fine


def not_ours(api_version: str = "trainforge.dev/v1alpha1", kind: str = "TrainJob") -> str:
    return job_text().replace("apiVersion: trainforge.dev/v1alpha1", f"apiVersion: {api_version}").replace(
        "kind: TrainJob", f"kind: {kind}"
    )


def without(line: str) -> str:
    return job_text().replace(line + "\n", "")


# (id, spec text, expected diagnostic without the leading "job.yaml:")
CASES = [
    # --- YAML itself
    ("a YAML syntax error points at the offending character",
     job_text("command: python train.py: --lr\n"),
     "8:27: error: mapping values are not allowed here; fix the YAML syntax"),
    ("an unclosed flow list is reported where the stream ends",
     job_text("args: [--lr, 3e-5\n"),
     "9:1: error: expected ',' or ']', but got '<stream end>', while parsing a flow sequence at 8:9;"
     " fix the YAML syntax"),
    ("a duplicate key is rejected at the second occurrence",
     job_text("image: ghcr.io/acme/other:2\n"),
     '8:3: error: duplicate key "image", first at 7:3; keep one of them: YAML takes each key once per mapping'),
    ("an alias bomb stops at the node limit",
     bomb(),
     "1:1: error: document expands to more than 200000 nodes (YAML aliases);"
     " write the values out or use fewer nested aliases"),
    ("a document nested hundreds of levels deep is refused, not a crash",
     deep(),
     "1:1: error: YAML nests too deeply to parse; flatten the nested lists or mappings"),
    # --- document identity
    ("an unknown kind in our group is a typo, not someone else's document",
     not_ours(kind="TrainJobs"),
     "2:7: error: kind: unknown kind 'TrainJobs' in trainforge.dev; use TrainJob or Project"),
    ("our kind with another group's apiVersion is an error",
     not_ours(api_version="kubeflow.org/v1"),
     "1:13: error: apiVersion: TrainJob needs apiVersion trainforge.dev/v1alpha1, got 'kubeflow.org/v1';"
     " write apiVersion: trainforge.dev/v1alpha1"),
    ("our kind with an unknown version is an error",
     not_ours(api_version="trainforge.dev/v1"),
     "1:13: error: apiVersion: TrainJob needs apiVersion trainforge.dev/v1alpha1, got 'trainforge.dev/v1';"
     " write apiVersion: trainforge.dev/v1alpha1"),
    # --- required fields
    ("a job without image names the missing field at its parent",
     without("  image: ghcr.io/acme/train:1"),
     "5:1: error: spec.image: is required: the master pods of a kubeflow.org/v1 job run the image the spec names"
     " (only a Trainer v2 runtime brings its own); add 'image'"),
    ("a job without framework names the missing field at its parent",
     without("  framework: pytorch"),
     "5:1: error: spec.framework: is required; add 'framework'"),
    ("a misspelled required field is one error, the unknown key's, whose did-you-mean names the field",
     job_text().replace("  framework:", "  framwork:"),
     "6:3: error: spec.framwork: unknown field 'framwork'; did you mean 'framework'? allowed here: args, command,"
     " elastic, env, environments, framework, image, initializer, mpi, nodes, podTemplate, policy, processesPerNode,"
     " resources, roles, runtime, scheduling, serviceAccount, storage, workingDir"),
    ("a misspelled key of a secret reference is one error, at the misspelling",
     job_text("env:\n  HF_TOKEN: {secret: hf, kee: token}\n"),
     "9:28: error: spec.env.HF_TOKEN.kee: unknown field 'kee'; did you mean 'key'? allowed here: key, secret"),
    ("a job without metadata.name names the missing field at metadata",
     job_text().replace("  name: demo\n", "  namespace: nlp\n"),
     "3:1: error: metadata.name: is required; add 'name'"),
    # --- unknown fields and choices
    ("an unknown spec field suggests the closest one and lists the allowed ones",
     job_text("nodez: 3\n"),
     "8:3: error: spec.nodez: unknown field 'nodez'; did you mean 'nodes'? allowed here: args, command,"
     " elastic, env, environments, framework, image, initializer, mpi, nodes, podTemplate, policy, processesPerNode,"
     " resources, roles, runtime, scheduling, serviceAccount, storage, workingDir"),
    ("a field written one level too high suggests the object it belongs in",
     job_text("queue: team-a\n"),
     "8:3: error: spec.queue: unknown field 'queue'; did you mean 'scheduling.queue'? allowed here: args, command,"
     " elastic, env, environments, framework, image, initializer, mpi, nodes, podTemplate, policy, processesPerNode,"
     " resources, roles, runtime, scheduling, serviceAccount, storage, workingDir"),
    ("an unknown nested field suggests the closest one",
     job_text("resources: {gpus: 2}\n"),
     "8:15: error: spec.resources.gpus: unknown field 'gpus'; did you mean 'gpu'?"
     " allowed here: cpu, devices, gpu, gpuType, limits, memory, sharedMemory"),
    ("an unknown field inside a role suggests the closest one",
     job_text("roles: {ps: {replicaz: 2}}\n", framework="tensorflow"),
     "8:16: error: spec.roles.ps.replicaz: unknown field 'replicaz'; did you mean 'replicas'?"
     " allowed here: args, command, container, env, image, podTemplate, replicas, resources, restart, scheduling"),
    ("a container name for a framework whose operator finds its container by name is refused",
     job_text("roles: {worker: {container: trainer}}\n"),
     "8:31: error: spec.roles.worker.container: the operator of PyTorchJob finds the program container by its"
     " name, pytorch; remove container (only an MPI job's operator runs its first container whatever its name)"),
    ("an unknown framework suggests the closest one",
     job_text(framework="pytorc"),
     "6:14: error: spec.framework: the string 'pytorc' is not allowed; did you mean 'pytorch'?"
     " use one of pytorch, tensorflow, mpi, xgboost, paddle, jax, mxnet"),
    ("a misspelled restart policy suggests the right one",
     job_text("policy: {restart: OnFailur}\n"),
     "8:21: error: spec.policy.restart: the string 'OnFailur' is not allowed; did you mean 'OnFailure'?"
     " use one of OnFailure, Never, ExitCode, Always"),
    ("a misspelled restart scope suggests the right one",
     job_text("policy: {restartScope: jobs}\n"),
     "8:26: error: spec.policy.restartScope: the string 'jobs' is not allowed; did you mean 'job'?"
     " use one of pod, job"),
    ("whole-job restarts under the Training Operator name train-controller",
     job_text("policy: {restartScope: job, backoffLimit: 3}\n"),
     "8:12: error: spec.policy.restartScope: the Training Operator (controller: training-operator in environment"
     " 'default') restarts only the failed pod and ignores restartScope: job, so the other pods wait for it in"
     " the rendezvous; set controller: train-controller (defaults or environments.default in trainforge.yaml),"
     " which restarts the whole job, or remove restartScope"),
    ("a hand-written restart-scope annotation is refused as the compiler's",
     job_text(metadata="annotations: {trainforge.dev/restart-scope: job}\n"),
     "5:17: error: metadata.annotations.trainforge.dev/restart-scope: trainforge.dev/restart-scope is written"
     " by the compiler from spec.policy.restartScope; remove the annotation and set spec.policy.restartScope: job"),
    # --- strict types
    ("nodes given as a boolean is not coerced to a number",
     job_text("nodes: true\n"),
     "8:10: error: spec.nodes: expected a whole number, got the boolean true;"
     " write a number without quotes, e.g. 4"),
    ("nodes given as a quoted string is not coerced to a number",
     job_text('nodes: "4"\n'),
     "8:10: error: spec.nodes: expected a whole number, got the string '4'; write a number without quotes, e.g. 4"),
    ("zero nodes is below the minimum",
     job_text("nodes: 0\n"),
     "8:10: error: spec.nodes: 0 is too small; use a value >= 1"),
    ("a fractional GPU count is rejected",
     job_text("resources: {gpu: 2.5}\n"),
     "8:20: error: spec.resources.gpu: expected a whole number, got the number 2.5;"
     " write a number without quotes, e.g. 4"),
    ("a memory size with a space is not a quantity",
     job_text("resources:\n  memory: 16 GB\n"),
     "9:13: error: spec.resources.memory: '16 GB' is not a Kubernetes quantity; write e.g. 4, \"500m\", 16Gi or 1.5"),
    ("an unquoted fractional cpu asks to be quoted",
     job_text("resources: {cpu: 1.5}\n"),
     '8:20: error: spec.resources.cpu: 1.5 is read as a YAML float, not a Kubernetes quantity; write "1.5" (the same amount)'),
    ("a cpu with a final line break (a YAML block scalar keeps one) is refused with what to write",
     job_text('resources: {cpu: "4\\n"}\n'),
     "8:20: error: spec.resources.cpu: '4\\n' has white space around it (a YAML block scalar keeps its last"
     " line break), which the API server refuses; write 4"),
    ("a negative memory size is refused",
     job_text('resources: {memory: "-1Gi"}\n'),
     "8:23: error: spec.resources.memory: -1Gi is negative; resources are amounts, use 0 or more"),
    ("a duration in words is not a duration",
     job_text("policy:\n  activeDeadline: 2 days\n"),
     "9:21: error: spec.policy.activeDeadline: '2 days' is not a duration; write 90s, 30m, 24h, 7d or whole seconds"),
    ("an env value that is a number must be quoted",
     job_text("env:\n  LR: 0.001\n"),
     "9:9: error: spec.env.LR: an env value is a string, {secret: NAME, key: KEY} or {configMap: NAME, key: KEY},"
     " not the number 0.001; quote numbers and booleans"),
    ("a secret reference without key names the missing key",
     job_text("env:\n  HF_TOKEN: {secret: hf}\n"),
     "9:5: error: spec.env.HF_TOKEN.key: is required; add 'key'"),
    ("an environment variable name starting with a digit is rejected at the key",
     job_text("env:\n  1WORKERS: '4'\n"),
     "9:5: error: spec.env.1WORKERS: '1WORKERS' is not a valid environment variable name; use letters,"
     " digits, '_', '-' or '.', not starting with a digit"),
    ("a gang value that is neither a switch nor an object says what it got",
     job_text('scheduling: {gang: "yes"}\n'),
     "8:22: error: spec.scheduling.gang: gang is true, false or {scheduler: volcano | coscheduling,"
     " timeoutSeconds: N}, not the string 'yes'"),
    # --- names
    ("a job name that is not a DNS-1035 label is rejected",
     job_text(name="Demo_Job"),
     "4:9: error: metadata.name: 'Demo_Job' is not a DNS-1035 label; use lower-case letters, digits and '-',"
     " starting with a letter and ending with a letter or digit"),
    ("a job name longer than 63 characters is rejected",
     job_text(name=LONG_NAME),
     f"4:9: error: metadata.name: '{LONG_NAME}' is 64 characters; use at most 63"),
    ("a job name whose worker pod names would pass 63 characters says the limit",
     job_text("nodes: 12\n", name="a" * 55),
     f"4:9: error: metadata.name: generated name '{'a' * 55}-worker-10' is 65 characters;"
     " Kubernetes allows 63; shorten the job name to at most 53 characters"),
    ("an invalid label value is rejected",
     job_text(metadata='labels: {team: "NLP team"}\n'),
     "5:18: error: metadata.labels.team: 'NLP team' is not a valid label value; use at most 63 letters,"
     " digits, '-', '_' or '.', starting and ending with a letter or digit"),
    ("a nodeSelector value the API server would refuse is caught at compile time",
     job_text("scheduling:\n  nodeSelector: {pool: a100 nodes}\n"),
     "9:26: error: spec.scheduling.nodeSelector.pool: 'a100 nodes' is not a valid label value; use at most 63"
     " letters, digits, '-', '_' or '.', starting and ending with a letter or digit"),
    ("two jobs creating the same ServiceAccount are refused at the second one's name for it",
     two_jobs_creating_one_account(),
     "17:26: error: spec.serviceAccount.name: job default/other creates ServiceAccount, Role and RoleBinding"
     " default/trainer, which job"
     " demo (job.yaml:1) creates too; give it a name of its own, or create it in one job and have the other use it"
     " (serviceAccount: {name: ..., create: false})"),
    ("two jobs with the same name in one namespace are refused",
     two_jobs_named_alike(),
     "12:9: error: metadata.name: job default/demo is also defined in job.yaml:1;"
     " give each job a unique name within its namespace"),
    # --- cross-field rules
    ("a role pytorch does not have is rejected",
     job_text("roles:\n  ps: {replicas: 2}\n"),
     "9:5: error: spec.roles.ps: pytorch has no role 'ps'; roles of pytorch: master, worker"),
    ("a role tensorflow does not have lists the ones it has",
     job_text("roles:\n  server: {replicas: 2}\n", framework="tensorflow"),
     "9:5: error: spec.roles.server: tensorflow has no role 'server'; roles of tensorflow: chief, worker, ps,"
     " evaluator"),
    ("the MPI launcher role takes no replicas",
     job_text("roles:\n  launcher: {replicas: 2}\n", framework="mpi"),
     "9:26: error: spec.roles.launcher.replicas: the MPI launcher is one pod of every MPIJob, so it takes no"
     " replicas; remove replicas"),
    ("a main role takes no replicas: nodes counts it",
     job_text("roles:\n  worker: {replicas: 3}\n"),
     "9:24: error: spec.roles.worker.replicas: worker is a role nodes counts, so it takes no replicas; remove"
     " replicas and set nodes"),
    ("a tensorflow chief takes replicas 0 only",
     job_text("roles:\n  chief: {replicas: 2}\n", framework="tensorflow"),
     "9:23: error: spec.roles.chief.replicas: chief is a role nodes counts, so it takes no replicas; remove"
     " replicas (replicas: 0 leaves the chief out), or set nodes"),
    ("settings for a role the job never has are refused",
     job_text("elastic: {minNodes: 1, maxNodes: 2}\nroles:\n  master: {image: ghcr.io/acme/master:1}\n"),
     "10:5: error: spec.roles.master: this PyTorchJob has no master pods, so these settings would apply to none;"
     " remove roles.master, or set them under roles.worker"),
    ("a role's podTemplate takes metadata and spec only, named at the role",
     job_text("roles:\n  worker:\n    podTemplate: {containers: []}\n"),
     "10:21: error: spec.roles.worker.podTemplate.containers: roles.worker.podTemplate is a pod template "
     "patch; 'containers' is not one of its fields; put pod fields under roles.worker.podTemplate.spec and "
     "labels under roles.worker.podTemplate.metadata"),
    ("a role's podTemplate is checked against Kubernetes' schema at its own line",
     job_text("roles:\n  worker:\n    podTemplate:\n      spec: {hostNetwrk: true}\n"),
     "11:16: error: spec.roles.worker.podTemplate.spec.hostNetwrk: unknown field 'hostNetwrk'; did you mean "
     "'hostNetwork'? see `kubectl explain pod.spec` for the fields"),
    ("a role's affinity is checked as Kubernetes' Affinity",
     job_text("roles:\n  worker:\n    scheduling:\n      affinity: {nodeAffinty: {}}\n"),
     "11:20: error: spec.roles.worker.scheduling.affinity.nodeAffinty: unknown field 'nodeAffinty'; did you "
     "mean 'nodeAffinity'? allowed here: nodeAffinity, podAffinity, podAntiAffinity"),
    ("the job's affinity is checked as Kubernetes' Affinity",
     job_text("scheduling:\n  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
              "        - {labelSelector: {matchLabels: {app: x}}}\n"),
     "12:13: error: "
     "spec.scheduling.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: "
     "is required (the API server refuses a requiredDuringSchedulingIgnoredDuringExecution item without it); "
     "add topologyKey"),
    ("a pod restartPolicy in a role's podTemplate points at the role's restart",
     job_text("roles:\n  worker:\n    restart: OnFailure\n    podTemplate:\n      spec: {restartPolicy: Never}\n"),
     "12:31: error: spec.roles.worker.podTemplate.spec.restartPolicy: pod restartPolicy Never conflicts with "
     "roles.worker.restart OnFailure, which the Training Operator writes into every pod (ExitCode as Never); "
     "remove it from podTemplate and set roles.worker.restart (OnFailure, Never, ExitCode or Always)"),
    ("a role toleration without a key needs operator Exists",
     job_text("roles:\n  worker:\n    scheduling:\n      tolerations: [{value: x}]\n"),
     "11:23: error: spec.roles.worker.scheduling.tolerations[0]: a toleration without a key must have "
     "operator: Exists; add key: <taint key>, or operator: Exists to tolerate every taint"),
    ("a role's podTemplate breaking baseline names the role's line",
     job_text("nodes: 2\nroles:\n  worker:\n    podTemplate:\n      spec: {hostNetwork: true}\n"),
     "12:16: error: spec.roles.worker.podTemplate.spec.hostNetwork: pod security level 'baseline' forbids "
     "hostNetwork: true (Host Namespaces); remove hostNetwork, or ask for policy.podSecurity: privileged in "
     "trainforge.yaml"),
    ("elastic training on tensorflow is rejected",
     job_text("elastic: {minNodes: 1, maxNodes: 4}\n", framework="tensorflow"),
     "8:3: error: spec.elastic: elastic training is pytorch only, not tensorflow;"
     " remove elastic or use framework: pytorch"),
    ("nodes outside the elastic range is rejected",
     job_text("nodes: 10\nelastic: {minNodes: 1, maxNodes: 4}\n"),
     "8:10: error: spec.nodes: nodes (10) is outside elastic minNodes..maxNodes (1..4);"
     " set nodes to the starting size, between minNodes and maxNodes"),
    ("an elastic maximum below the minimum is rejected",
     job_text("elastic: {minNodes: 4, maxNodes: 2}\n"),
     "8:12: error: spec.elastic: maxNodes (2) is below minNodes (4); set maxNodes >= minNodes"),
    ("processesPerNode on tensorflow is rejected",
     job_text("processesPerNode: 4\n", framework="tensorflow"),
     "8:21: error: spec.processesPerNode: processesPerNode only applies to pytorch and mpi, not tensorflow;"
     " remove it; start several processes from your command instead"),
    ("a gpuType without a project file is rejected",
     job_text("resources: {gpu: 1, gpuType: h100}\n"),
     "8:32: error: spec.resources.gpuType: gpuType 'h100' needs a gpuTypes table in environment 'default';"
     " declare gpuTypes for this environment in trainforge.yaml, or remove gpuType"),
    ("a volume with both an existing claim and a size is rejected",
     job_text("storage:\n  - {name: data, mountPath: /data, claim: imagenet, size: 1Ti}\n"),
     "9:7: error: spec.storage[0]: has both claim and size;"
     " keep claim to mount an existing PVC or size to create one"),
    ("a volume with neither claim nor size is rejected",
     job_text("storage:\n  - {name: data, mountPath: /data}\n"),
     "9:7: error: spec.storage[0]: has neither claim nor size;"
     " add claim: <existing PVC> or size: <e.g. 100Gi>"),
    ("two volumes on one mount path are rejected",
     job_text("storage:\n  - {name: data, mountPath: /data, claim: a}\n  - {name: more, mountPath: /data, claim: b}\n"),
     "10:31: error: spec.storage[1].mountPath: mountPath '/data' is used twice; mount each volume at its own path"),
    ("a volume on /dev/shm is reserved for sharedMemory",
     job_text("storage:\n  - {name: shm, mountPath: /dev/shm, size: 1Gi}\n"),
     "9:14: error: spec.storage[0].name: dshm and /dev/shm are reserved; use resources.sharedMemory for /dev/shm"),
    ("rbac rules without create are rejected",
     job_text("serviceAccount: {rules: [{resources: [pods], verbs: [get]}]}\n"),
     "8:19: error: spec.serviceAccount: rules and imagePullSecrets need create: true; add it or drop them"),
    ("a podTemplate with an unknown top-level key is rejected",
     job_text("podTemplate:\n  containers: []\n"),
     "9:5: error: spec.podTemplate.containers: podTemplate is a pod template patch; 'containers' is not one of"
     " its fields; put pod fields under podTemplate.spec and labels under podTemplate.metadata"),
    ("an empty podTemplate spec would delete the pod spec and is refused",
     job_text("podTemplate:\n  spec:\n"),
     "9:5: error: spec.podTemplate.spec: podTemplate.spec must be a mapping, not empty (null);"
     " write fields under podTemplate.spec or remove it"),
    ("podTemplate containers that are not a list are refused",
     job_text("podTemplate:\n  spec: {containers: {name: pytorch}}\n"),
     "9:24: error: spec.podTemplate.spec.containers: expected a list, got a mapping;"
     " write it as a list: - name: pytorch (the items merge by name)"),
    ("a podTemplate request that is no quantity is named, not a crash of the gang overlay summing it",
     job_text("scheduling: {gang: true}\nnodes: 2\npodTemplate:\n  spec:\n    containers:\n      - name: pytorch\n"
              "        resources: {requests: {cpu: abc}}\n"),
     "14:39: error: spec.podTemplate.spec.containers[0].resources.requests.cpu: cpu request 'abc' is not a"
     " Kubernetes quantity; write an amount such as 4, 500m or 16Gi"),
    ("a request with a final line break (a YAML block scalar keeps one) is refused, in one line",
     job_text("podTemplate:\n  spec:\n    containers:\n      - name: pytorch\n"
              '        resources: {requests: {cpu: "4\\n"}}\n'),
     "12:39: error: spec.podTemplate.spec.containers[0].resources.requests.cpu: cpu request '4\\n' is not a"
     " Kubernetes quantity; write an amount such as 4, 500m or 16Gi"),
    ("a negative podTemplate limit is refused; a fractional number is a quantity",
     job_text("podTemplate:\n  spec:\n    initContainers:\n      - name: warm\n        image: busybox\n"
              "        resources: {limits: {memory: -1Gi, cpu: 0.5}}\n"),
     "13:40: error: spec.podTemplate.spec.initContainers[0].resources.limits.memory: memory limit '-1Gi' is not"
     " a Kubernetes quantity; write an amount such as 4, 500m or 16Gi"),
    # --- podTemplate's strategic-merge directives that would not act as written: compiler/strategic.py
    ("an unknown directive is refused, not written into the job",
     job_text(PT + "    containers:\n      - name: pytorch\n        $replace: true\n"),
     "12:11: error: spec.podTemplate.spec.containers[0].$replace: unknown directive '$replace' (no pod field"
     " starts with $); use $patch: delete, $patch: replace or $retainKeys"),
    ("an unknown $patch value is refused",
     job_text(PT + "    securityContext:\n      $patch: merge\n"),
     "11:9: error: spec.podTemplate.spec.securityContext.$patch: unknown $patch value 'merge'; maps and keyed"
     " lists merge by default; remove it"),
    ("a delete in a list that is replaced as a whole is refused",
     job_text(PT + "    tolerations:\n      - key: a\n        $patch: delete\n"),
     "12:11: error: spec.podTemplate.spec.tolerations[0].$patch: $patch is not applied inside tolerations,"
     " which podTemplate replaces as a whole; write it as it should be, without directives: it replaces what"
     " was there"),
    ("a delete without the merge key is refused",
     job_text(PT + "    containers:\n      - $patch: delete\n"),
     "11:11: error: spec.podTemplate.spec.containers[0].$patch: $patch: delete in containers needs the item's"
     " name; add name: <the item to delete>"),
    ("fields beside a delete are refused, as they would be ignored",
     job_text(PT + "    containers:\n      - name: debug\n        image: busybox\n        $patch: delete\n"),
     "12:11: error: spec.podTemplate.spec.containers[0].image: $patch: delete removes this item, so 'image'"
     " beside it would be ignored; keep only name and $patch"),
    ("deleting and setting one name in a list is refused, as neither engine applies them in order",
     job_text(PT + "    containers:\n      - {name: debug, image: busybox}\n      - {name: debug, $patch: delete}\n"),
     "11:12: error: spec.podTemplate.spec.containers[0].name: containers deletes and sets name 'debug' in one"
     " patch, which kustomize and the API server do not apply in order (a delete after the item keeps it); keep"
     " one of them; to swap an item's fields, set the old ones to null beside the new (e.g. emptyDir: null)"),
    ("a $patch map written where a list belongs is refused, as kustomize refuses it",
     job_text(PT + "    tolerations: {$patch: delete}\n"),
     "10:21: error: spec.podTemplate.spec.tolerations.$patch: tolerations is a list, and kustomize refuses a"
     " $patch map in its place; write tolerations: null to remove it, or tolerations: [] to empty it"),
    ("replacing one item of a keyed list is refused",
     job_text(PT + "    volumes:\n      - name: data\n        $patch: replace\n        emptyDir: {}\n"),
     "12:11: error: spec.podTemplate.spec.volumes[0].$patch: $patch: replace on one item of a keyed list is not"
     " applied alike (kustomize ignores the item, the API server empties the whole list); set the fields the"
     " item must lose to null beside the new ones (e.g. emptyDir: null), or replace the whole list with a"
     " `- $patch: replace` item"),
    ("a directive inside a replaced map is refused",
     job_text(PT + "    securityContext:\n      $patch: replace\n      seLinuxOptions: {$patch: delete}\n"),
     "12:26: error: spec.podTemplate.spec.securityContext.seLinuxOptions.$patch: $patch is not applied inside a"
     " map with $patch: replace; write it as it should be, without directives: it replaces what was there"),
    ("a $setElementOrder is refused with the way to order a list",
     job_text(PT + "    containers:\n      - name: pytorch\n        $setElementOrder/env: [{name: B}, {name: A}]\n"),
     "12:11: error: spec.podTemplate.spec.containers[0].$setElementOrder/env: $setElementOrder is not supported:"
     " the compiler keeps the template's order and appends new items (kustomize writes the directive out as a"
     " field); to set the order of env, list all of it in that order with a `- $patch: replace` item"),
    ("a $deleteFromPrimitiveList on args is refused, as podTemplate replaces args whole",
     job_text(PT + "    containers:\n      - name: pytorch\n        $deleteFromPrimitiveList/args: [--a]\n"),
     "12:11: error: spec.podTemplate.spec.containers[0].$deleteFromPrimitiveList/args: $deleteFromPrimitiveList"
     " is only for metadata.finalizers: podTemplate replaces args as a whole; write args as it should be"),
    ("a $retainKeys must list every field the map sets",
     job_text(PT + "    securityContext:\n      $retainKeys: [fsGroup]\n      runAsUser: 1000\n"),
     "12:9: error: spec.podTemplate.spec.securityContext.runAsUser: 'runAsUser' is set here but not listed in"
     " $retainKeys, which clears every field it does not list; add runAsUser to $retainKeys"),
    ("a directive on the whole pod spec is refused",
     job_text(PT + "    $retainKeys: [containers]\n    containers: [{name: pytorch}]\n"),
     "10:7: error: spec.podTemplate.spec.$retainKeys: $retainKeys on podTemplate.spec would drop the pod template lowering"
     " writes (the framework container, its image, ports and env); put it on the field it is about, e.g."
     " spec.securityContext or a container"),
    # --- what upstream's admission (or MPI/MXJob reconciler) would refuse at sync: compiler/review/admission_review.py
    ("an emptied image of the framework's container is refused as the Training Operator's webhook would",
     job_text('podTemplate:\n  spec:\n    containers:\n      - name: pytorch\n        image: ""\n'),
     "12:18: error: spec.podTemplate.spec.containers[0].image: the PyTorchJob this compiles to is refused by the"
     " Training Operator: spec.pytorchReplicaSpecs[Master].template.spec.containers[0].image: Required value: must"
     " be required; keep the 'pytorch' container and its image (spec.image sets it); drop image from podTemplate"),
    ("an image deleted by a null in the podTemplate is refused as MPIJob's reconciler would",
     job_text("podTemplate:\n  spec:\n    containers:\n      - name: mpi\n        image: null\n", framework="mpi"),
     "12:18: error: spec.podTemplate.spec.containers[0].image: the MPIJob this compiles to is refused by the"
     " Training Operator: MPIReplicaSpec is not valid: Image is undefined in the container of Launcher; keep the"
     " 'mpi' container and its image (spec.image sets it); drop image from podTemplate"),
    # --- what the API server or the kubelet would refuse late
    ("a relative storage mountPath is refused before the container runtime refuses it",
     job_text("storage:\n  - {name: data, mountPath: data, claim: imagenet}\n"),
     "9:31: error: spec.storage[0].mountPath: mountPath 'data' is relative (the API server takes it; the container"
     " runtime refuses it when the pod starts); write an absolute path without ':', e.g. /data"),
    ("a storage mountPath holding a colon is refused",
     job_text("storage:\n  - {name: data, mountPath: '/data:ro', claim: imagenet}\n"),
     "9:31: error: spec.storage[0].mountPath: mountPath '/data:ro' contains ':' (the API server takes it; the"
     " container runtime refuses it when the pod starts); write an absolute path without ':', e.g. /data"),
    ("a podTemplate mount at a relative path is refused",
     job_text("podTemplate:\n  spec:\n    containers:\n      - name: pytorch\n"
              "        volumeMounts: [{name: cache, mountPath: cache}]\n    volumes: [{name: cache, emptyDir: {}}]\n"),
     "12:51: error: spec.podTemplate.spec.containers[0].volumeMounts[0].mountPath: mountPath 'cache' is relative"
     " (the API server takes it; the container runtime refuses it when the pod starts); write an absolute path"
     " without ':', e.g. /data"),
    ("a storage volume named like a podTemplate volume would make two volumes of one name",
     job_text("storage:\n  - {name: cache, mountPath: /data, claim: imagenet}\npodTemplate:\n  spec:\n"
              "    volumes: [{name: cache, emptyDir: {}}]\n"),
     "9:14: error: spec.storage[0].name: podTemplate also adds a volume named 'cache';"
     " give the storage volume another name"),
    ("a storage volume mounted where the podTemplate mounts one would be two mounts at one path",
     job_text("storage:\n  - {name: data, mountPath: /data, claim: imagenet}\npodTemplate:\n  spec:\n"
              "    containers:\n      - name: pytorch\n        volumeMounts: [{name: cache, mountPath: /data}]\n"
              "    volumes: [{name: cache, emptyDir: {}}]\n"),
     "9:31: error: spec.storage[0].mountPath: podTemplate also mounts a volume at '/data' in container 'pytorch';"
     " mount each volume at its own path"),
    ("ephemeral containers in a pod template are refused as the API server refuses them on create",
     job_text("podTemplate:\n  spec:\n    ephemeralContainers:\n      - {name: debug, image: busybox}\n"),
     "10:7: error: spec.podTemplate.spec.ephemeralContainers: the API server refuses every pod created with"
     " ephemeral containers; remove them; add one to a running pod with kubectl debug"),
    ("a container named other than the framework's, without an image, is told to rename it or add one",
     job_text("podTemplate:\n  spec:\n    containers:\n      - name: main\n        command: [sleep, infinity]\n"),
     "11:11: error: spec.podTemplate.spec.containers[0]: container 'main' is not the framework's container 'pytorch'"
     " and has no image; rename it pytorch to patch that container (spec.image sets its image), or add image: <image>"
     " to run it as an extra container"),
    ("an init container without an image is told to add one",
     job_text("podTemplate:\n  spec:\n    initContainers:\n      - name: warm\n        command: [sync]\n",
              framework="tensorflow"),
     "11:11: error: spec.podTemplate.spec.initContainers[0]: container 'warm' has no image;"
     " add image: <image> (only the tensorflow container gets spec.image)"),
    ("a container name that is not a DNS label is refused",
     job_text("podTemplate:\n  spec:\n    initContainers:\n      - {name: Warm_Up, image: busybox}\n"),
     "11:18: error: spec.podTemplate.spec.initContainers[0].name: 'Warm_Up' is not a DNS label; use at most 63"
     " lower-case letters, digits and '-', starting and ending with a letter or digit"),
    ("an init container and a container of one name are refused",
     job_text("podTemplate:\n  spec:\n    initContainers:\n      - {name: warm, image: busybox}\n"
              "    containers:\n      - {name: warm, image: busybox}\n"),
     "13:18: error: spec.podTemplate.spec.containers[0].name: container name 'warm' is used twice;"
     " give each container and init container its own name"),
    ("a podTemplate pod label that is no label value is refused",
     job_text("podTemplate:\n  metadata:\n    labels: {tier: gold tier}\n"),
     "10:22: error: spec.podTemplate.metadata.labels.tier: 'gold tier' is not a valid label value; use at most 63"
     " letters, digits, '-', '_' or '.', starting and ending with a letter or digit"),
    ("a podTemplate nodeSelector value that is a number is refused",
     job_text("podTemplate:\n  spec:\n    nodeSelector: {zone: 3}\n"),
     '10:28: error: spec.podTemplate.spec.nodeSelector.zone: expected a string, got the number 3; quote it: "3"'),
    ("a queue name that cannot be the Kueue queue-name label is refused",
     job_text("scheduling: {queue: team/queue}\n"),
     "8:23: error: spec.scheduling.queue: 'team/queue' becomes a label value and is not a valid one; use at most 63"
     " letters, digits, '-', '_' or '.', starting and ending with a letter or digit"),
    ("a seccomp annotation is refused in favour of seccompProfile",
     job_text("podTemplate:\n  metadata:\n    annotations:\n      seccomp.security.alpha.kubernetes.io/pod: unconfined\n"),
     "11:9: error: spec.podTemplate.metadata.annotations.seccomp.security.alpha.kubernetes.io/pod: seccomp"
     " annotations are ignored since Kubernetes 1.27, and the API server refuses a pod whose annotation differs"
     " from its seccompProfile; set securityContext.seccompProfile instead"),
    ("a toleration key that is no label key is refused",
     job_text("scheduling:\n  tolerations: [{key: gpu type, operator: Exists}]\n"),
     "9:25: error: spec.scheduling.tolerations[0].key: 'gpu type' is not a valid toleration key;"
     " use a label key such as nvidia.com/gpu"),
    ("a toleration without a key must tolerate every taint with Exists",
     job_text("scheduling:\n  tolerations: [{operator: Equal, value: 'true'}]\n"),
     "9:19: error: spec.scheduling.tolerations[0]: a toleration without a key must have operator: Exists;"
     " add key: <taint key>, or operator: Exists to tolerate every taint"),
    ("a toleration with operator Exists and a value is refused",
     job_text("scheduling:\n  tolerations: [{key: spot, operator: Exists, value: 'true'}]\n"),
     "9:56: error: spec.scheduling.tolerations[0].value: operator Exists takes no value;"
     " remove value, or use operator: Equal"),
    ("tolerationSeconds outside NoExecute is refused",
     job_text("scheduling:\n  tolerations: [{key: spot, operator: Exists, effect: NoSchedule, tolerationSeconds: 60}]\n"),
     "9:88: error: spec.scheduling.tolerations[0].tolerationSeconds: tolerationSeconds only applies to effect"
     " NoExecute; set effect: NoExecute or remove tolerationSeconds"),
    ("a relative working directory is refused before the container runtime refuses it",
     job_text("workingDir: src\n"),
     "8:15: error: spec.workingDir: workingDir 'src' is relative, which the container runtime refuses when the pod"
     " starts; write an absolute path, e.g. /workspace"),
    ("a podTemplate limit below the request lowering writes is refused",
     job_text("resources: {memory: 16Gi}\npodTemplate:\n  spec:\n    containers:\n      - name: pytorch\n"
              "        resources: {limits: {memory: 8Gi}}\n"),
     "13:40: error: spec.podTemplate.spec.containers[0].resources.limits.memory: memory request 16Gi and limit 8Gi in"
     " container 'pytorch' leave the request above the limit; set the podTemplate's request and limit together (or"
     " change resources instead)"),
    ("a podTemplate GPU limit that differs from the GPU request is refused",
     job_text("resources: {gpu: 8}\npodTemplate:\n  spec:\n    containers:\n      - name: pytorch\n"
              "        resources: {limits: {nvidia.com/gpu: 4}}\n"),
     "13:48: error: spec.podTemplate.spec.containers[0].resources.limits.nvidia.com/gpu: nvidia.com/gpu request 8 and"
     " limit 4 in container 'pytorch' differ, and an extended resource's request must equal its limit; set the"
     " podTemplate's request and limit together (or change resources instead)"),
    # --- pod security at the default level, baseline (every rule: tests/compiler/review/test_pod_security_admission.py)
    ("a podTemplate adding SYS_ADMIN is refused at the default baseline level",
     job_text("podTemplate:\n  spec:\n    containers:\n      - name: pytorch\n        securityContext:\n"
              "          capabilities: {add: [SYS_ADMIN]}\n"),
     "13:34: error: spec.podTemplate.spec.containers[0].securityContext.capabilities.add[0]: pod security level"
     " 'baseline' forbids adding capability SYS_ADMIN in container 'pytorch' (Capabilities); add only capabilities"
     " of the runtime's default set (e.g. CHOWN, NET_BIND_SERVICE, SETUID), or ask for policy.podSecurity:"
     " privileged in trainforge.yaml"),
    ("hostIPC is refused at the default baseline level",
     job_text("podTemplate:\n  spec:\n    hostIPC: true\n"),
     "10:7: error: spec.podTemplate.spec.hostIPC: pod security level 'baseline' forbids hostIPC: true"
     " (Host Namespaces); remove hostIPC, or ask for policy.podSecurity: privileged in trainforge.yaml"),
    ("a hostPort is refused at the default baseline level",
     job_text("podTemplate:\n  spec:\n    containers:\n      - name: pytorch\n"
              "        ports: [{containerPort: 8080, hostPort: 8080}]\n"),
     "12:41: error: spec.podTemplate.spec.containers[0].ports[0].hostPort: pod security level 'baseline' forbids"
     " hostPort 8080 in container 'pytorch' (Host Ports); remove hostPort (reach the pods through a Service), or"
     " ask for policy.podSecurity: privileged in trainforge.yaml"),
    ("an unconfined AppArmor annotation is refused at the default baseline level",
     job_text("podTemplate:\n  metadata:\n    annotations:\n"
              "      container.apparmor.security.beta.kubernetes.io/pytorch: unconfined\n"),
     "11:9: error: spec.podTemplate.metadata.annotations.container.apparmor.security.beta.kubernetes.io/pytorch:"
     " pod security level 'baseline' forbids AppArmor profile unconfined (AppArmor); use runtime/default or"
     " localhost/<profile>, or ask for policy.podSecurity: privileged in trainforge.yaml"),
    ("an unsafe sysctl is refused at the default baseline level",
     job_text("podTemplate:\n  spec:\n    securityContext:\n      sysctls: [{name: kernel.msgmax, value: '65536'}]\n"),
     "11:20: error: spec.podTemplate.spec.securityContext.sysctls[0].name: pod security level 'baseline' forbids"
     " sysctl kernel.msgmax (Sysctls); set only namespaced safe sysctls (e.g. net.ipv4.ip_local_port_range), or"
     " ask for policy.podSecurity: privileged in trainforge.yaml"),
    ("a privileged container set through a YAML merge key is refused at the mapping that merges it",
     job_text("podTemplate:\n  spec:\n    containers:\n      - name: pytorch\n        securityContext:\n"
              "          <<: {privileged: true}\n"),
     "12:11: error: spec.podTemplate.spec.containers[0].securityContext.privileged: pod security level 'baseline'"
     " forbids privileged: true in container 'pytorch' (Privileged Containers); remove securityContext.privileged,"
     " or ask for policy.podSecurity: privileged in trainforge.yaml"),
    ("host networking asked for by an environment override is refused in the override",
     job_text("environments:\n  default:\n    podTemplate:\n      spec:\n        hostNetwork: true\n"),
     "12:11: error: spec.environments.default.podTemplate.spec.hostNetwork: pod security level 'baseline' forbids"
     " hostNetwork: true (Host Namespaces); remove hostNetwork, or ask for policy.podSecurity: privileged in"
     " trainforge.yaml"),
    # --- resources: requests and limits apart, devices, /dev/shm (compiler/review/resources.py)
    ("a limit below its request is refused at the limit",
     job_text("resources: {cpu: '8', limits: {cpu: '4'}}\n"),
     "8:39: error: spec.resources.limits.cpu: the cpu limit 4 is below the request 8, which the API server "
     "refuses; raise limits.cpu to at least 8, or lower cpu"),
    ("a memory limit below the memory request is refused",
     job_text("resources: {memory: 64Gi, limits: {memory: 32Gi}}\n"),
     "8:46: error: spec.resources.limits.memory: the memory limit 32Gi is below the request 64Gi, which the "
     "API server refuses; raise limits.memory to at least 64Gi, or lower memory"),
    ("an unknown limit names the two a spec can set",
     job_text("resources: {limits: {gpu: 2}}\n"),
     "8:24: error: spec.resources.limits.gpu: unknown field 'gpu'; did you mean 'cpu'? allowed here: cpu, "
     "memory"),
    ("cpu under devices points at its own field",
     job_text("resources: {devices: {cpu: 2}}\n"),
     "8:25: error: spec.resources.devices.cpu: cpu has its own field; write resources.cpu (and "
     "resources.limits.cpu for a limit that differs)"),
    ("a device name without a domain is not a container resource",
     job_text("resources: {devices: {efa: 2}}\n"),
     "8:25: error: spec.resources.devices.efa: 'efa' is not a resource a container can ask for; write "
     "ephemeral-storage, hugepages-<size> or an extended resource such as vpc.amazonaws.com/efa"),
    ("a device in the kubernetes.io domain is refused",
     job_text("resources: {devices: {kubernetes.io/efa: 2}}\n"),
     "8:25: error: spec.resources.devices.kubernetes.io/efa: 'kubernetes.io/efa' is in the kubernetes.io "
     "domain, which no extended resource may use; write the device plugin's own name, e.g. "
     "vpc.amazonaws.com/efa"),
    ("a hugepages resource without a page size is refused",
     job_text("resources: {memory: 1Gi, devices: {hugepages-big: 2Mi}}\n"),
     "8:38: error: spec.resources.devices.hugepages-big: 'hugepages-big' names no page size; write "
     "hugepages-2Mi or hugepages-1Gi"),
    ("an extended resource that is not a whole number is refused",
     job_text("resources: {devices: {vpc.amazonaws.com/efa: 500m}}\n"),
     "8:48: error: spec.resources.devices.vpc.amazonaws.com/efa: vpc.amazonaws.com/efa is an extended "
     "resource, which the API server counts in whole units; 500m is not one; write a whole number, e.g. 1"),
    ("hugepages that are not whole pages are refused with a rounded-up amount",
     job_text("resources: {memory: 1Gi, devices: {hugepages-2Mi: 5M}}\n"),
     "8:53: error: spec.resources.devices.hugepages-2Mi: 5M of hugepages-2Mi is not a whole number of 2Mi "
     "pages, which the API server refuses; write a multiple of 2Mi, e.g. 6Mi"),
    ("hugepages without cpu or memory are refused as the API server does",
     job_text("resources: {devices: {hugepages-2Mi: 4Mi}}\n"),
     "8:25: error: spec.resources.devices.hugepages-2Mi: a container with hugepages-2Mi must also ask for cpu "
     'or memory (the API server refuses it: "HugePages require cpu or memory"); set memory (the memory the '
     "program uses beside the huge pages) in the same resources"),
    ("the environment's gpu resource under devices points at gpu",
     job_text("resources: {devices: {nvidia.com/gpu: 2}}\n"),
     "8:25: error: spec.resources.devices.nvidia.com/gpu: nvidia.com/gpu is the GPU resource of environment "
     "'default'; write gpu: 2 instead (it asks for nvidia.com/gpu and places the pods by gpuType)"),
    ("a shared memory that is neither a size nor a choice lists both",
     job_text("resources: {sharedMemory: big}\n"),
     "8:29: error: spec.resources.sharedMemory: 'big' is not a size; write a quantity such as 64Gi, unsized "
     "(memory-backed, no size limit) or host (the node's /dev/shm)"),
    ("the node's dev shm is refused at baseline and names the level that lifts it",
     job_text("resources: {sharedMemory: host}\n"),
     "8:29: error: spec.resources.sharedMemory: pod security level 'baseline' forbids a hostPath volume "
     "(HostPath Volumes): sharedMemory: host mounts the node's /dev/shm; write sharedMemory: unsized "
     "(memory-backed, no size limit) or a size such as 64Gi, or ask for policy.podSecurity: privileged in "
     "trainforge.yaml"),
    # --- elastic rendezvous and metrics (schemas/elastic.py: the HPA's own rules on a MetricSpec)
    ("an etcd rendezvous without a host is refused: worker 0 is no etcd server",
     job_text("elastic:\n  minNodes: 1\n  maxNodes: 4\n  rendezvous: {backend: etcd}\n"),
     "11:17: error: spec.elastic.rendezvous: the etcd backend meets at an etcd server, and worker 0 (the "
     "default host) is none; add host (and port) of your etcd service"),
    ("an unknown rendezvous backend lists torchrun's",
     job_text("elastic:\n  minNodes: 1\n  maxNodes: 4\n  rendezvous: {backend: zookeeper}\n"),
     "11:27: error: spec.elastic.rendezvous.backend: the string 'zookeeper' is not allowed; use one of c10d, "
     "etcd, etcd-v2, static"),
    ("a rendezvous port beyond 65535 is refused",
     job_text("elastic:\n  minNodes: 1\n  maxNodes: 4\n  rendezvous: {port: 70000}\n"),
     "11:24: error: spec.elastic.rendezvous.port: 70000 is too large; use a value <= 65535"),
    ("a resource metric with a Value target is refused as the HPA does",
     job_text("elastic:\n  minNodes: 1\n  maxNodes: 4\n  metrics:\n    - {type: Resource, resource: {name: cpu, target: {type: Value, value: 2}}}\n"),
     "12:9: error: spec.elastic.metrics[0]: a Resource metric's target is Utilization or AverageValue (the HPA "
     "refuses Value); write target.type: Utilization or AverageValue"),
    ("a metric target without its value is refused",
     job_text("elastic:\n  minNodes: 1\n  maxNodes: 4\n  metrics:\n    - {type: Resource, resource: {name: cpu, target: {type: Utilization}}}\n"),
     "12:56: error: spec.elastic.metrics[0].resource.target: a target of type Utilization needs "
     "averageUtilization; add averageUtilization, which the HPA scales to"),
    ("a metric whose type names another source is refused",
     job_text("elastic:\n  minNodes: 1\n  maxNodes: 4\n  metrics:\n    - {type: Pods, resource: {name: cpu, target: {type: AverageValue, averageValue: 1}}}\n"),
     "12:9: error: spec.elastic.metrics[0]: a Pods metric takes pods and no other source (resource given); "
     "write pods: {...} only"),
    ("a zero metric target is refused",
     job_text("elastic:\n  minNodes: 1\n  maxNodes: 4\n  metrics:\n    - {type: External, external: {metric: {name: q}, target: {type: Value, value: 0}}}\n"),
     "12:64: error: spec.elastic.metrics[0].external.target: value 0 is not above 0, which the HPA refuses; "
     "give a positive amount"),
    # --- trainer-v2 fields (the runtime-dependent ones: tests/compiler/targets/test_trainer_v2_runtimes.py)
    ("an initializer storageUri without a scheme is refused as Trainer's CRD does",
     job_text("initializer: {dataset: {storageUri: tatsu-lab/alpaca}}\n"),
     "8:39: error: spec.initializer.dataset.storageUri: 'tatsu-lab/alpaca' is not a URI Trainer takes; write "
     "scheme://..., e.g. hf://tatsu-lab/alpaca or s3://bucket/path"),
    ("an initializer under kubeflow-v1 says where the download goes instead",
     job_text("initializer: {dataset: {storageUri: 'hf://tatsu-lab/alpaca'}}\n"),
     "8:3: error: spec.initializer: a kubeflow.org/v1 job has no initializer step (environment 'default' "
     "targets kubeflow-v1); only a Trainer v2 runtime's dataset and model initializers read it; download in an "
     "init container (podTemplate.spec.initContainers) and unset initializer for this environment with "
     "environments.default.initializer: null, or set environments.default.target: trainer-v2"),
    # --- environments
    ("environments naming an undeclared environment are rejected",
     job_text("environments:\n  staging: {nodes: 2}\n"),
     "9:5: error: spec.environments.staging: environment 'staging' is not declared by the project;"
     " declared environments: default; rename it or add it under environments in trainforge.yaml"),
    ("leaving an environment the project does not declare is an error too",
     job_text("environments:\n  staging: null\n"),
     "9:5: error: spec.environments.staging: environment 'staging' is not declared by the project;"
     " declared environments: default; rename it or add it under environments in trainforge.yaml"),
    ("an environment override that is neither a mapping nor null says what it got",
     job_text("environments:\n  default: []\n"),
     "9:14: error: spec.environments.default: expected a mapping, got a list; write key: value pairs under it"),
    ("a wrong type inside an environment override points into the override",
     job_text('environments:\n  default: {nodes: "2"}\n'),
     "9:22: error: spec.environments.default.nodes: expected a whole number, got the string '2';"
     " write a number without quotes, e.g. 4"),
    ("an override that breaks a cross-field rule points into the override",
     job_text("environments:\n  default: {processesPerNode: 4}\n", framework="jax"),
     "9:33: error: spec.environments.default.processesPerNode: processesPerNode only applies to pytorch and mpi,"
     " not jax; remove it; start several processes from your command instead"),
    ("an override cannot change the framework",
     job_text("environments:\n  default: {framework: jax}\n"),
     "9:15: error: spec.environments.default.framework: unknown field 'framework'; allowed here: args, command,"
     " elastic, env, image, initializer, mpi, nodes, podTemplate, policy, processesPerNode, resources, roles, runtime,"
     " scheduling, serviceAccount, storage, workingDir"),
    # --- the pod template as Kubernetes reviews it: compiler/review/podschema.py, compiler/review/podcheck.py
    ("an env written as a map is refused with the list it should be",
     job_text(PT + "    containers:\n      - name: pytorch\n        env: {WANDB_MODE: offline}\n"),
     "12:16: error: spec.podTemplate.spec.containers[0].env: expected a list, got a mapping; write it as a list"
     " of items with a name, e.g. - {name: WANDB_MODE, value: offline}"),
    ("an unknown pod field gets a did-you-mean",
     job_text(PT + "    containers:\n      - name: pytorch\n        resourcez: {limits: {cpu: '2'}}\n"),
     "12:11: error: spec.podTemplate.spec.containers[0].resourcez: unknown field 'resourcez'; did you mean"
     " 'resources'? see `kubectl explain pod.spec.containers` for the fields"),
    ("an imagePullPolicy Kubernetes does not know is refused with its values",
     job_text(PT + "    containers:\n      - name: pytorch\n        imagePullPolicy: Sometimes\n"),
     "12:28: error: spec.podTemplate.spec.containers[0].imagePullPolicy: the string 'Sometimes' is not one of the"
     " values Kubernetes allows here; use one of Always, IfNotPresent, Never"),
    ("a port name longer than 15 characters is refused",
     job_text(PT + "    containers:\n      - name: pytorch\n        ports: [{containerPort: 8080, name: metrics-exporter}]\n"),
     "12:47: error: spec.podTemplate.spec.containers[0].ports[0].name: 'metrics-exporter' is not an IANA service"
     " name (what a port name must be); use at most 15 lower-case letters, digits and '-', with at least one"
     " letter and no '--', e.g. metrics"),
    ("memory: null deletes the limit and is no quantity error; a sidecar port named like the framework's is",
     job_text("resources: {memory: 4Gi}\n" + PT[:-1].replace("8", "9") + "\n" + "    containers:\n"
              "      - {name: pytorch, resources: {limits: {memory: null}}}\n"
              "      - {name: metrics, image: busybox, ports: [{containerPort: 9090, name: pytorchjob-port}]}\n"),
     "13:79: error: spec.podTemplate.spec.containers[1].ports[0].name: port name 'pytorchjob-port' is also used"
     " by container 'pytorch' (the port the Training Operator finds PyTorchJob replicas by); port names must be"
     " unique in a pod; give the port another name, or leave it unnamed"),
    ("a mount of a volume the pod does not have is refused",
     job_text(PT + "    containers:\n      - name: pytorch\n        volumeMounts: [{name: cache, mountPath: /cache}]\n"),
     "12:33: error: spec.podTemplate.spec.containers[0].volumeMounts[0].name: container 'pytorch' mounts volume"
     " 'cache', which the pod does not have (its volumes: none); add a volume named cache under"
     " podTemplate.spec.volumes, or mount one the pod has"),
    ("a volume at /dev/shm beside resources.sharedMemory is refused",
     job_text("resources: {sharedMemory: 1Gi}\n" + PT + "    volumes: [{name: scratch, emptyDir: {}}]\n"
              "    containers:\n      - name: pytorch\n        volumeMounts: [{name: scratch, mountPath: /dev/shm}]\n"),
     "14:53: error: spec.podTemplate.spec.containers[0].volumeMounts[0].mountPath: container 'pytorch' mounts volume"
     " 'scratch' at /dev/shm, where resources.sharedMemory mounts its own; the shared-memory size would be lost;"
     " remove this mount (resources.sharedMemory sizes /dev/shm), or remove resources.sharedMemory"),
    ("a pod restartPolicy beside policy.restart is refused",
     job_text("policy: {restart: OnFailure}\n" + PT + "    restartPolicy: Never\n"),
     "11:22: error: spec.podTemplate.spec.restartPolicy: pod restartPolicy Never conflicts with policy.restart"
     " OnFailure, which the Training Operator writes into every pod (ExitCode as Never); remove it from"
     " podTemplate and set policy.restart (OnFailure, Never, ExitCode or Always)"),
    ("an activeDeadline of 0 is refused: the job would fail as it starts",
     job_text("policy: {activeDeadline: 0}\n"),
     "8:28: error: spec.policy.activeDeadline: a deadline of 0 seconds fails the job as soon as it starts (the"
     " Training Operator ends a job past its activeDeadlineSeconds; Kubernetes' own deadlines are at least 1"
     " second); write e.g. 90s, 30m or 24h, or remove it for no deadline"),
    ("a podTemplate error written by an environment override points into the override",
     job_text("environments:\n  default:\n    podTemplate:\n      spec: {dnsPolicy: ClusterFirstt}\n"),
     "11:27: error: spec.environments.default.podTemplate.spec.dnsPolicy: the string 'ClusterFirstt' is not one of"
     " the values Kubernetes allows here; did you mean 'ClusterFirst'? use one of ClusterFirst,"
     " ClusterFirstWithHostNet, Default, None"),
]


@pytest.mark.parametrize(("text", "expected"), [pytest.param(t, e, id=i) for i, t, e in CASES])
def test_invalid_spec_is_reported_with_position_path_and_fix(tmp_path, monkeypatch, text, expected):
    monkeypatch.chdir(tmp_path)
    Path("job.yaml").write_text(text, encoding="utf-8")

    run = run_cli("validate", "job.yaml")

    assert run.exit_code == 1
    assert run.errors() == [f"job.yaml:{expected}"]
    assert "nothing was written" in run.stderr


def test_the_table_is_large_enough_and_every_id_is_a_sentence():
    assert len(CASES) >= 30
    assert len({case[0] for case in CASES}) == len(CASES)
    assert all(len(case[0].split()) >= 5 and case[0][0].islower() for case in CASES)


@pytest.mark.timeout(120)  # the guard against a hang: a bomb expanded in full would not end
def test_an_alias_bomb_is_refused_at_the_expansion_limit(tmp_path):
    """Refused by the limit (the error names it), not by a clock: a wall-clock bound here only
    measured the machine's load (speed is bench/'s job)."""
    (tmp_path / "bomb.yaml").write_text(bomb(), encoding="utf-8")

    run = run_cli("validate", tmp_path / "bomb.yaml")

    assert run.exit_code == 1
    assert "document expands to more than 200000 nodes" in run.stderr


# --- the run as a whole ---------------------------------------------------------------


def _two_broken_files(folder: Path) -> None:
    (folder / "b.yaml").write_text(job_text("nodes: 0\nresources: {gpu: true}\n", name="bee"), encoding="utf-8")
    (folder / "a.yaml").write_text(
        job_text("workingDir: ''\nenv:\n  LR: 0.1\n", name="ay")
        + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n",
        encoding="utf-8",
    )


def test_every_problem_of_a_run_is_reported_sorted_errors_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _two_broken_files(Path("."))

    run = run_cli("validate", ".")

    assert run.exit_code == 1
    assert [line.split(": error: ")[0] for line in run.errors()] == [
        "a.yaml:8:15", "a.yaml:10:9", "b.yaml:8:10", "b.yaml:9:20",
    ]
    assert run.notices() == ["a.yaml:12:1: notice: skipped ConfigMap (v1); only TrainJob and Project documents are compiled"]
    assert run.stderr.index(": error: ") < run.stderr.index(": notice: ")
    assert "train-compile: 4 error(s); nothing was written" in run.stderr


def test_json_format_is_a_list_of_positioned_objects_on_stdout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _two_broken_files(Path("."))

    run = run_cli("validate", ".", "--format", "json")

    assert run.exit_code == 1
    problems = json.loads(run.stdout)
    assert isinstance(problems, list) and len(problems) == 5
    assert all({"file", "line", "col", "path", "message", "fix"} <= set(p) for p in problems)
    assert problems[0] == {
        "file": "a.yaml", "line": 8, "col": 15, "path": "spec.workingDir",
        "message": "must not be empty", "fix": "give a value", "severity": "error",
    }
    assert problems[-1]["severity"] == "notice"


def test_github_format_prints_workflow_annotations(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _two_broken_files(Path("."))

    run = run_cli("validate", ".", "--format", "github")

    lines = run.stdout.splitlines()
    assert run.exit_code == 1
    assert len(lines) == 5
    assert all(line.startswith(("::error file=", "::notice file=")) for line in lines)
    # GitHub shows ten annotations per step: files take turns so every broken file shows
    assert [line.split(",")[0] for line in lines[:2]] == ["::error file=a.yaml", "::error file=b.yaml"]
    assert lines[1] == (
        "::error file=b.yaml,line=8,col=10,title=spec.nodes::0 is too small; use a value >= 1"
    )


def test_other_documents_beside_the_jobs_are_skipped_with_a_notice(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("job.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n---\n" + job_text(),
        encoding="utf-8",
    )

    run = run_cli("render", "job.yaml")

    assert run.exit_code == 0
    assert run.notices() == ["job.yaml:1:1: notice: skipped ConfigMap (v1); only TrainJob and Project documents are compiled"]
    assert "kind: PyTorchJob" in run.stdout and "ConfigMap" not in run.stdout


def test_empty_documents_are_skipped_silently(tmp_path):
    (tmp_path / "job.yaml").write_text("---\n---\n" + job_text() + "---\n", encoding="utf-8")

    run = run_cli("validate", tmp_path / "job.yaml")

    assert run.exit_code == 0
    assert run.errors() == [] and run.notices() == []


# --- usage errors exit 2 ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(("validate", "{job}", "--env", "staging"),
                     "unknown environment 'staging'; the project declares default",
                     id="an unknown environment is a usage error"),
        pytest.param(("build", "{job}"), "Missing option '-o'", id="build without an output folder"),
        pytest.param(("validate",), "Missing argument 'SOURCES...'", id="validate without sources"),
        pytest.param(("validate", "{missing}"), "does not exist", id="a source path that does not exist"),
        pytest.param(("validate", "{job}", "--format", "xml"), "'xml' is not one of",
                     id="an unknown output format"),
        pytest.param(("compile", "{job}"), "No such command 'compile'", id="an unknown command"),
    ],
)
def test_usage_errors_exit_2(tmp_path, args, message):
    paths = {"job": EXAMPLES / "pytorch-bert-finetune.yaml", "missing": tmp_path / "no-such-job.yaml"}

    run = run_cli(*(arg.format(**paths) for arg in args))

    assert run.exit_code == 2
    assert message in run.stderr


def test_help_lists_every_command():
    run = run_cli("--help")

    assert run.exit_code == 0
    for command in ("build", "validate", "check", "render", "schema"):
        assert f"  {command} " in run.stdout


# --- robustness: no input makes the CLI crash ------------------------------------------


def _truncations(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    return ["".join(lines[:n]) for n in range(1, len(lines))] + [text[:n] for n in range(0, len(text), 97)]


def test_no_prefix_of_the_kitchen_sink_makes_the_cli_crash(tmp_path):
    """Every truncation of a real spec is either valid or reported, never a traceback."""
    text = (EXAMPLES / "kitchen-sink.yaml").read_text(encoding="utf-8")
    job = tmp_path / "job.yaml"
    codes = set()
    for prefix in _truncations(text):
        job.write_text(prefix, encoding="utf-8")
        run = run_cli("validate", job)  # raises on any Python exception
        codes.add(run.exit_code)
        assert run.exit_code in (0, 1), prefix
        assert run.exit_code == 0 or run.errors(), prefix
    assert codes == {0, 1}


# --- the project file ---------------------------------------------------------------------

PROJECT_HEAD = "apiVersion: trainforge.dev/v1alpha1\nkind: Project\n"

PROJECT_CASES = [
    ("an invalid default namespace in the project is positioned in trainforge.yaml",
     "defaults: {namespace: ML}\n",
     "trainforge.yaml:3:23: error: defaults.namespace: 'ML' is not a valid namespace; use at most 63 lower-case"
     " letters, digits and '-', starting and ending with a letter or digit"),
    ("a misspelled field deep in an environment suggests the right one",
     "environments:\n  dev:\n    gpuTypes: {h100: {nodeSelecter: {a: b}}}\n",
     "trainforge.yaml:5:23: error: environments.dev.gpuTypes.h100.nodeSelecter: unknown field 'nodeSelecter';"
     " did you mean 'nodeSelector'? allowed here: affinity, nodeSelector, tolerations"),
    ("a queue written directly under an environment suggests its place under scheduling",
     "environments:\n  dev:\n    queue: team-a\n",
     "trainforge.yaml:5:5: error: environments.dev.queue: unknown field 'queue'; did you mean 'scheduling.queue'?"
     " allowed here: controller, gpuResource, gpuTypes, namespace, namespaces, policy, scheduling, target"),
    ("an unknown gang scheduler lists the known ones",
     "environments:\n  dev:\n    scheduling: {gangScheduler: kube}\n",
     "trainforge.yaml:5:33: error: environments.dev.scheduling.gangScheduler: the string 'kube' is not allowed;"
     " use one of volcano, coscheduling"),
    ("a gpuType the environment does not declare lists the declared ones",
     "environments:\n  dev:\n    gpuTypes: {a100: {}, h100: {}}\n",
     "job.yaml:8:32: error: spec.resources.gpuType: environment 'dev' has no GPU type 'b200'; use one of a100, h100"),
]


@pytest.mark.parametrize(("project", "expected"), [pytest.param(p, e, id=i) for i, p, e in PROJECT_CASES])
def test_project_file_problems_are_reported_where_they_are(tmp_path, monkeypatch, project, expected):
    monkeypatch.chdir(tmp_path)
    Path("trainforge.yaml").write_text(PROJECT_HEAD + project, encoding="utf-8")
    Path("job.yaml").write_text(job_text("resources: {gpu: 1, gpuType: b200}\n"), encoding="utf-8")

    run = run_cli("validate", ".")

    assert run.exit_code == 1
    assert run.errors() == [expected]


def test_a_project_outside_the_source_root_is_an_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("team").mkdir()
    Path("team/trainforge.yaml").write_text(PROJECT_HEAD, encoding="utf-8")
    Path("job.yaml").write_text(job_text(), encoding="utf-8")

    run = run_cli("validate", ".")

    assert run.exit_code == 1
    assert run.errors() == [
        "team/trainforge.yaml:1:1: error: kind: a Project document only counts as the trainforge.yaml at the root"
        " of a source folder; compile team as a source of its own (train-compile build team ...)"
    ]
