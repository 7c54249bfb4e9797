"""kube-controller-manager v1.32.4 with only the garbage collector and the namespace controller.

Why it is shaped so: with only kube-apiserver and etcd nothing acts on ownerReferences
or on a deleted namespace, so a deleted job leaves its pods and services behind and a
namespace stays Terminating for ever, unlike any cluster. These two controllers (and
nothing else: no node lifecycle, no service-account tokens, no Jobs or ReplicaSets that
could fight the code under test) make cascading deletion and namespace deletion real.
It runs with the world's admin kubeconfig (the three kubeconfig flags), no leader
election, HTTPS on a free loopback port; ready when ``/healthz`` answers 200.

A world that runs JobSet (the ``trainer`` part) needs more: JobSet makes batch/v1 Jobs,
and only kube-controller-manager's ``job-controller`` turns those into pods and marks
them Complete or Failed; ``persistentvolume-binder-controller`` binds claims to
volumes, so pods whose claims a test backs with PersistentVolumes are scheduled; and, since
the Trainer's TrainJobStatus gives every trainer pod a projected ServiceAccount token, which
the API server refuses for a pod that names no account unless its ServiceAccount admission
fills in `default` (as in any cluster), such a world runs that admission (``World`` turns it on
for a part with ``service_accounts``) and the two controllers it relies on: the
``serviceaccount-controller`` (each namespace's `default` account) and the
``root-ca-certificate-publisher-controller`` (`kube-root-ca.crt`, which the admitted pods
mount). ``TRAINER_CONTROLLERS`` adds all four; the default stays without them.

API: ``ControllerManager(controllers=("garbage-collector-controller",
"namespace-controller"))`` is a ``Part`` named ``gc`` (``World(parts=["gc"])``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .part import LOOPBACK, ProcessPart, component_flags, free_port, http_ok

if TYPE_CHECKING:
    from .world import World

DEFAULT_CONTROLLERS = ("garbage-collector-controller", "namespace-controller")
JOB_CONTROLLER, PV_BINDER = "job-controller", "persistentvolume-binder-controller"
# every namespace's `default` ServiceAccount and its `kube-root-ca.crt` ConfigMap, which the
# API server's ServiceAccount admission (on in a Trainer world) needs for every pod
ACCOUNTS = ("serviceaccount-controller", "root-ca-certificate-publisher-controller")
TRAINER_CONTROLLERS = (*DEFAULT_CONTROLLERS, JOB_CONTROLLER, PV_BINDER, *ACCOUNTS)


class ControllerManager(ProcessPart):
    name = "gc"
    builds = ("kube-controller-manager",)

    def __init__(self, *, controllers: Sequence[str] = DEFAULT_CONTROLLERS, verbosity: int = 1) -> None:
        super().__init__()
        self.controllers = tuple(controllers)
        self.verbosity = verbosity
        self.port = 0

    def argv(self, world: World) -> list[str]:
        self.port = free_port()
        return [self.binary("kube-controller-manager"), *component_flags(world, self.port),
                f"--controllers={','.join(self.controllers)}", "--concurrent-gc-syncs=5", f"--v={self.verbosity}"]

    def ready(self) -> bool:
        return http_ok(f"https://{LOOPBACK}:{self.port}/healthz")
