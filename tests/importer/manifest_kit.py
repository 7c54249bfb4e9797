"""A PyTorchJob manifest as people write one (tests of `train-compile import` and of `plan --live`
adopting what it imports): a Master and Workers of one pod template."""

from __future__ import annotations


def pytorchjob(name: str, namespace: str, *, image: str, workers: int, limits: str, labels: str = "") -> str:
    """The manifest's text; `limits` and `labels` are flow maps (`{nvidia.com/gpu: 8}`)."""
    meta = f"  labels: {labels}\n" if labels else ""
    pod = ("      template:\n        spec:\n          containers:\n            - name: pytorch\n"
           f"              image: {image}\n              command: [torchrun, train.py]\n"
           f"              resources:\n                limits: {limits}\n")
    return (f"apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: {name}\n  namespace: {namespace}\n"
            f"{meta}spec:\n  pytorchReplicaSpecs:\n"
            f"    Master:\n      replicas: 1\n      restartPolicy: OnFailure\n{pod}"
            f"    Worker:\n      replicas: {workers}\n      restartPolicy: OnFailure\n{pod}")
