"""Synthetic TrainJob sources for the compiler benchmark: a monorepo of N jobs.

The mix follows what a real repository holds: every framework, 4 nodes per job (the
issue's "four-pod" jobs), env with literals and secret refs, and the overlays a team
turns on (storage with an existing claim and a new PVC, `serviceAccount.create`,
Kueue queue and gang scheduling) and, for a quarter of the jobs, a `podTemplate` (a
sidecar, a port), so whatever overlays and review rules the compiler has get exercised.
One file per job under `<team>/`, plus a `trainforge.yaml` with one environment, so
`specs/s` means jobs per second. The content is deterministic in N.
"""

from __future__ import annotations

from pathlib import Path

FRAMEWORKS = ("pytorch", "pytorch", "tensorflow", "mpi", "xgboost", "paddle", "jax", "mxnet")
TEAMS = ("nlp", "vision", "speech", "recsys")

PROJECT = """\
apiVersion: trainforge.dev/v1alpha1
kind: Project
defaults:
  namespace: ml
  labels: {owner: bench}
environments:
  prod:
    gpuTypes:
      h100:
        nodeSelector: {cloud.google.com/gke-accelerator: nvidia-h100-80gb}
        tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
    scheduling: {gangScheduler: volcano}
"""


def _roles(framework: str) -> str:
    if framework == "tensorflow":
        return "  roles:\n    ps: {replicas: 2, resources: {cpu: \"4\", memory: 8Gi}}\n"
    if framework == "mxnet":
        return "  roles:\n    server: {replicas: 1}\n"
    if framework == "mpi":
        return "  roles:\n    launcher: {resources: {cpu: \"1\"}}\n"
    return ""


def job_yaml(i: int) -> str:
    """The i-th job: framework and overlays rotate so N=10 already covers the mix."""
    framework = FRAMEWORKS[i % len(FRAMEWORKS)]
    team = TEAMS[i % len(TEAMS)]
    lines = [
        "apiVersion: trainforge.dev/v1alpha1",
        "kind: TrainJob",
        "metadata:",
        f"  name: job-{i:05d}",
        f"  namespace: {team}",
        f"  labels: {{team: {team}, run: r{i % 17}}}",
        "spec:",
        f"  framework: {framework}",
        f"  image: ghcr.io/acme/{framework}-train:1.{i % 9}.0",
        "  command: [python, train.py]",
        f"  args: [--epochs, \"{1 + i % 5}\", --lr, \"3e-5\"]",
        "  workingDir: /workspace",
        "  env:",
        "    LR: \"3e-5\"",
        "    WANDB_PROJECT: bench",
        "    HF_TOKEN: {secret: hf, key: token}",
        "  nodes: 4",
        "  resources:",
        "    gpu: 8",
        "    gpuType: h100",
        "    cpu: \"32\"",
        "    memory: 256Gi",
        "    sharedMemory: 64Gi",
    ]
    text = "\n".join(lines) + "\n" + _roles(framework)
    if i % 2 == 0:
        text += (
            "  storage:\n"
            "    - {name: data, mountPath: /data, claim: imagenet, readOnly: true}\n"
            "    - {name: ckpt, mountPath: /ckpt, size: 500Gi, storageClass: fast-rwx, accessMode: ReadWriteMany}\n"
        )
    gang = "true" if i % 3 else "{scheduler: volcano, timeoutSeconds: 600}"
    from foundation.frameworks import adapter

    # no queue where Kueue would ignore it (the compiler refuses that: MPIJob, MXJob)
    queue = f"    queue: {team}-queue\n" if adapter(framework).facts.kueue_unmanaged is None else ""
    text += f"  scheduling:\n{queue}    priority: high\n    gang: {gang}\n"
    text += (
        "  policy: {restart: OnFailure, backoffLimit: 3, activeDeadline: 24h, ttlAfterFinished: 7d,"
        " cleanPods: Running}\n"
    )
    if i % 4 in (0, 1):
        text += "  serviceAccount:\n    create: true\n    rules: [{resources: [configmaps], verbs: [get, list]}]\n"
    if i % 4 == 3:
        text += _pod_template(framework)
    return text


def _pod_template(framework: str) -> str:
    """A quarter of the jobs patch their pods, as teams past the examples do: a sidecar, a metrics
    port and a pull policy on the framework container, a toleration, an annotation."""
    from foundation.frameworks import adapter

    return (
        "  podTemplate:\n"
        "    metadata: {annotations: {example.com/owner: bench}}\n"
        "    spec:\n"
        "      tolerations: [{key: spot, operator: Exists, effect: NoSchedule}]\n"
        "      containers:\n"
        f"        - name: {adapter(framework).facts.container}\n"
        "          imagePullPolicy: IfNotPresent\n"
        "          ports: [{containerPort: 9090, name: metrics}]\n"
        "        - name: log-shipper\n"
        "          image: busybox:1.36\n"
        "          args: [--follow, /var/log/train]\n"
        "          resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 64Mi}}\n"
    )


def write(root: Path, n: int) -> Path:
    """Write N jobs and the project file under `root` (created); returns `root`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "trainforge.yaml").write_text(PROJECT, encoding="utf-8")
    for i in range(n):
        folder = root / TEAMS[i % len(TEAMS)]
        folder.mkdir(exist_ok=True)
        (folder / f"job-{i:05d}.yaml").write_text(job_yaml(i), encoding="utf-8")
    return root
