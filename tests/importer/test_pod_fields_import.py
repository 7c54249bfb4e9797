"""`train-compile import` reads the spec's pod fields back (compiler/importing/podfields.py).

A PyTorchJob whose Master and Workers both pull Always, run as user 1000, carry a pod label and an
annotation and mount a ConfigMap, a Secret and the node's /dev/infiniband becomes a spec with
those first-class fields (and an env value from the pod's name) and no podTemplate, and renders the same job; what is only the API
server's default (IfNotPresent on a tagged image) is left out; what one role alone has is that
role's own field.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from compiler_builders import run_cli
from manifest_kit import pytorchjob

from compiler.importing.sameness import differences

POD = """\
      template:
        metadata:
          labels: {app: mnist}
          annotations: {sidecar.istio.io/inject: "false"}
        spec:
          containers:
            - name: pytorch
              image: ghcr.io/acme/mnist:1.0
              imagePullPolicy: Always
              securityContext: {runAsUser: 1000}
              env:
                - name: POD_NAME
                  valueFrom: {fieldRef: {fieldPath: metadata.name}}
              volumeMounts:
                - {name: code, mountPath: /code}
                - {name: sa, mountPath: /secret, readOnly: true}
                - {name: ib, mountPath: /dev/infiniband}
          volumes:
            - {name: code, configMap: {name: scripts}}
            - {name: sa, secret: {secretName: gcp-sa}}
            - {name: ib, hostPath: {path: /dev/infiniband}}
"""
JOB = ("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: mnist\n  namespace: ml\nspec:\n"
       "  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n      restartPolicy: OnFailure\n" + POD
       + "    Worker:\n      replicas: 2\n      restartPolicy: OnFailure\n" + POD)


def imported(tmp_path: Path, text: str) -> tuple[dict, list[dict]]:
    source = tmp_path / "job.yaml"
    source.write_text(text)
    run = run_cli("import", source, "-o", tmp_path / "jobs")
    assert run.exit_code == 0, run.stderr
    spec = yaml.safe_load(next(p for p in (tmp_path / "jobs").iterdir() if p.name != "trainforge.yaml").read_text())
    render = run_cli("render", tmp_path / "jobs")
    assert render.exit_code == 0, render.stderr
    return spec, [d for d in yaml.safe_load_all(render.stdout) if d and d["kind"] != "Namespace"]


def test_the_pod_fields_are_first_class_and_the_job_renders_the_same(tmp_path):
    spec, (job,) = imported(tmp_path, JOB)

    assert spec["spec"]["imagePullPolicy"] == "Always"
    assert spec["spec"]["securityContext"] == {"runAsUser": 1000}
    assert spec["spec"]["env"] == {"POD_NAME": {"field": "metadata.name"}}
    assert spec["spec"]["podLabels"] == {"app": "mnist"}
    assert spec["spec"]["podAnnotations"] == {"sidecar.istio.io/inject": "false"}
    assert sorted(spec["spec"]["storage"], key=lambda v: v["name"]) == [  # volumes are keyed by name: any order
        {"name": "code", "mountPath": "/code", "configMap": "scripts"},
        {"name": "ib", "mountPath": "/dev/infiniband", "hostPath": "/dev/infiniband"},
        {"name": "sa", "mountPath": "/secret", "secret": "gcp-sa", "readOnly": True}]
    assert "podTemplate" not in spec["spec"]
    assert differences(yaml.safe_load(JOB), job) == []


def test_a_pull_policy_that_is_the_images_default_is_left_out(tmp_path):
    text = pytorchjob("bert", "nlp", image="ghcr.io/acme/bert:1.4.2", workers=1, limits="{cpu: 1}").replace(
        "              command:", "              imagePullPolicy: IfNotPresent\n              command:")

    spec, (job,) = imported(tmp_path, text)

    assert "imagePullPolicy" not in spec["spec"]
    assert differences(yaml.safe_load(text), job) == []


def test_one_roles_own_label_and_security_context_are_that_roles_fields(tmp_path):
    worker = POD.replace("labels: {app: mnist}", "labels: {app: mnist, tier: worker}").replace(
        "runAsUser: 1000", "runAsUser: 2000")
    text = JOB.replace("    Worker:\n      replicas: 2\n      restartPolicy: OnFailure\n" + POD,
                       "    Worker:\n      replicas: 2\n      restartPolicy: OnFailure\n" + worker)

    spec, (job,) = imported(tmp_path, text)

    assert spec["spec"]["podLabels"] == {"app": "mnist"}
    assert spec["spec"]["roles"]["worker"] == {"securityContext": {"runAsUser": 2000}, "podLabels": {"tier": "worker"}}
    assert "podTemplate" not in spec["spec"]
    assert differences(yaml.safe_load(text), job) == []
