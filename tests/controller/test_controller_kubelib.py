"""The controller loads the kubernetes package's config loaders only, not its generated
classes (foundation.cluster.kubelib), and code that wants the whole package still gets it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
import controller.__main__
import controller.manager, controller.preflight, controller.runtime.leader, controller.runtime.metrics, controller.runtime.health  # what main() imports
from foundation.cluster.kube import Client
light = sorted(m for m in sys.modules if m.startswith("kubernetes"))
from kubernetes.client import V1Pod, CoreV1Api  # another user in the same process
import kubernetes
namespace = {}
exec("from kubernetes.client import *", namespace)  # as the Kubeflow SDK's models do
print(json.dumps({"light": light, "pod": V1Pod.__name__, "api": CoreV1Api.__name__,
                  "version": kubernetes.__version__, "watch": hasattr(kubernetes.watch, "Watch"),
                  "star": "V1VolumeMount" in namespace}))
"""


def test_the_controller_imports_no_generated_kubernetes_classes_and_others_still_can() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, check=True)
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not [m for m in seen["light"] if m.startswith(("kubernetes.client.models.", "kubernetes.client.api.",
                                                           "kubernetes.dynamic", "kubernetes.watch"))], seen["light"]
    assert {"kubernetes.config.kube_config", "kubernetes.config.incluster_config"} <= set(seen["light"])
    assert seen["pod"] == "V1Pod" and seen["api"] == "CoreV1Api" and seen["watch"] and seen["star"]
    assert seen["version"]
