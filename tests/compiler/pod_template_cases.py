"""The pod template table: what the compiler, the editor schema and the API server are held to.

Each case is a podTemplate (and maybe other spec fields) with a sentence for an id and a
category. `MAIN` stands for the framework's own container and `PORT` for its port name
(`pytorchjob-port`, `tfjob-port`, ...), so one case runs for several frameworks. Categories:

- field level (`FIELD`): a field alone is wrong (type, unknown field, enum, quantity, name,
  required field) or, in `KEYS`, two items of a keyed list share their key. The compiler
  refuses them through compiler/review/podschema.py; the editor schema refuses all but `KEYS`
  (JSON Schema has no unique-by-key).
- `CROSS`: only the pod as created is wrong (a mount of a volume it lacks, a port name used
  twice, a container named like the operator's own init container).
- `CONFLICT`: the server takes the pods, but a setting would be lost or the job refused
  later (`beyond_server` says by whom); the compiler refuses them on purpose.
- `VALID`: unusual templates that must pass everything.

(The module has a distinctive name because pytest puts every test folder on sys.path.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

MAIN, PORT = "<main>", "<port>"
TYPES, UNKNOWN, ENUMS, QUANTITIES, NAMES, REQUIRED, KEYS = (
    "wrong types", "unknown fields", "enum values", "quantities", "names", "required fields", "unique keys")
CROSS, CONFLICT, VALID = "cross-field rules", "conflicts", "valid"
FIELD = (TYPES, UNKNOWN, ENUMS, QUANTITIES, NAMES, REQUIRED, KEYS)
FRAMEWORKS = ("pytorch", "tensorflow", "mpi", "xgboost", "paddle", "jax", "mxnet")
BUSYBOX = "busybox:1.36"


@dataclass(frozen=True)
class Case:
    category: str
    pod: dict[str, Any]  # the podTemplate
    spec: dict[str, Any] = field(default_factory=dict)  # other spec fields
    frameworks: Optional[tuple[str, ...]] = None  # None: pytorch and one more, by position in the table
    beyond_server: str = ""  # CONFLICT: who refuses (or what is lost) when the server takes the pods

    @property
    def invalid(self) -> bool:
        return self.category != VALID


def main(**fields: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": MAIN, **fields}]}}


def sidecar(**fields: Any) -> dict[str, Any]:
    return {"name": "sidecar", "image": BUSYBOX, "command": ["sleep", "infinity"], **fields}


def pod(**fields: Any) -> dict[str, Any]:
    return {"spec": fields}


def volume_and_mount(volume: dict[str, Any], path: str = "/extra") -> dict[str, Any]:
    return pod(volumes=[{"name": "extra", **volume}],
               containers=[{"name": MAIN, "volumeMounts": [{"name": "extra", "mountPath": path}]}])


AFFINITY = {
    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["H100"]}]}]}},
    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": {
        "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"team": "nlp"}}}}]},
}
SPREAD = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
          "labelSelector": {"matchLabels": {"team": "nlp"}}}

PER_CONTAINER = ("the API server checks port names per container only; Kubernetes documents them as unique in a"
                 " pod, and a Service's named targetPort would take whichever container comes first")
CASES: dict[str, Case] = {
    # --- wrong types
    "env written as a map is refused": Case(TYPES, main(env={"WANDB_MODE": "offline"})),
    "containers written as one map is refused": Case(TYPES, {"spec": {"containers": {"name": MAIN, "stdin": True}}}),
    "a command written as one string is refused": Case(TYPES, main(command="python train.py")),
    "an unquoted number among args is refused": Case(TYPES, main(args=["--epochs", 3])),
    "hostIPC as a quoted string is refused": Case(TYPES, pod(hostIPC="false")),
    "a quoted terminationGracePeriodSeconds is refused": Case(TYPES, pod(terminationGracePeriodSeconds="30")),
    "a quoted containerPort is refused": Case(TYPES, main(ports=[{"containerPort": "8080", "name": "metrics"}])),
    "a nodeSelector value that is a number is refused": Case(TYPES, pod(nodeSelector={"zone": 3})),
    "a pod label that is a boolean is refused": Case(TYPES, {"metadata": {"labels": {"spot": True}}}),
    "a quoted runAsUser is refused": Case(TYPES, pod(securityContext={"runAsUser": "1000"})),
    "tolerations written as a map are refused": Case(TYPES, pod(tolerations={"key": "spot", "operator": "Exists"})),
    "limits written as a list are refused": Case(TYPES, main(resources={"limits": ["cpu"]})),
    "an emptyDir written as a string is refused": Case(TYPES, volume_and_mount({"emptyDir": "Memory"})),
    "a probe port that is a boolean is refused": Case(TYPES, main(readinessProbe={"httpGet": {"port": True}})),
    "stdin as a word is refused": Case(TYPES, main(stdin="yes")),
    # --- unknown fields
    "a misspelled resources is refused": Case(UNKNOWN, main(resourcez={"limits": {"cpu": "2"}})),
    "nodeselector in lower case is refused": Case(UNKNOWN, pod(nodeselector={"zone": "a"})),
    "envfrom in lower case is refused": Case(UNKNOWN, main(envfrom=[{"configMapRef": {"name": "settings"}}])),
    "readonly on a mount is refused": Case(UNKNOWN, pod(
        volumes=[{"name": "cache", "emptyDir": {}}],
        containers=[{"name": MAIN, "volumeMounts": [{"name": "cache", "mountPath": "/cache", "readonly": True}]}])),
    "runAsNonroot is refused": Case(UNKNOWN, pod(securityContext={"runAsNonroot": True})),
    "metadata.label is refused": Case(UNKNOWN, {"metadata": {"label": {"team": "nlp"}}},
                                      beyond_server="the operator's pods keep only the template's labels and"
                                      " annotations: the field would be dropped silently"),
    "nodeAfinity is refused": Case(UNKNOWN, pod(affinity={"nodeAfinity": {}})),
    "claimname on a claim volume is refused": Case(UNKNOWN, volume_and_mount({"persistentVolumeClaim": {"claimname": "x"}})),
    # --- enum values
    "imagePullPolicy Sometimes is refused": Case(ENUMS, main(imagePullPolicy="Sometimes")),
    "dnsPolicy ClusterFirstt is refused": Case(ENUMS, pod(dnsPolicy="ClusterFirstt")),
    "a lower-case port protocol is refused": Case(ENUMS, main(ports=[{"containerPort": 8080, "protocol": "tcp"}])),
    "toleration operator Equals is refused": Case(ENUMS, pod(tolerations=[{"key": "spot", "operator": "Equals", "value": "x"}])),
    "toleration effect NoSchedules is refused": Case(ENUMS, pod(tolerations=[{"key": "spot", "operator": "Exists",
                                                                              "effect": "NoSchedules"}])),
    "seccomp type runtime/default is refused": Case(ENUMS, pod(securityContext={"seccompProfile": {"type": "runtime/default"}})),
    "whenUnsatisfiable DontSchedule is refused": Case(ENUMS, pod(topologySpreadConstraints=[
        {**SPREAD, "whenUnsatisfiable": "DontSchedule"}])),
    "terminationMessagePolicy OnError is refused": Case(ENUMS, main(terminationMessagePolicy="OnError")),
    "a lower-case probe scheme is refused": Case(ENUMS, main(readinessProbe={"httpGet": {"port": 8080, "scheme": "https"}})),
    "a node selector operator Contains is refused": Case(ENUMS, pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "Contains", "values": ["a"]}]}]}}})),
    # --- quantities
    "a cpu request of abc is refused": Case(QUANTITIES, main(resources={"requests": {"cpu": "abc"}})),
    "a memory limit in GB is refused": Case(QUANTITIES, main(resources={"limits": {"memory": "1.5GB"}})),
    "a negative ephemeral-storage request is refused": Case(QUANTITIES, main(resources={"requests": {
        "ephemeral-storage": "-1Gi"}})),
    "an emptyDir sizeLimit of lots is refused": Case(QUANTITIES, volume_and_mount({"emptyDir": {"sizeLimit": "lots"}})),
    "a request with a final line break is refused": Case(QUANTITIES, main(resources={"requests": {"cpu": "4\n"}})),
    # --- names
    "a sidecar named Side_Car is refused": Case(NAMES, pod(containers=[sidecar(name="Side_Car")])),
    "a volume named Cache is refused": Case(NAMES, pod(volumes=[{"name": "Cache", "emptyDir": {}}])),
    "a port name of 16 characters is refused": Case(NAMES, main(ports=[{"containerPort": 8080, "name": "metrics-exporter"}])),
    "a port name with -- is refused": Case(NAMES, main(ports=[{"containerPort": 8080, "name": "my--port"}])),
    "a port name of digits only is refused": Case(NAMES, main(ports=[{"containerPort": 8080, "name": "8080"}])),
    "a container name of 64 characters is refused": Case(NAMES, pod(containers=[sidecar(name="s" * 64)])),
    # --- required fields
    "a sidecar without a name is refused": Case(REQUIRED, pod(containers=[{"image": BUSYBOX}])),
    "a seccompProfile without type is refused": Case(REQUIRED, pod(securityContext={"seccompProfile": {
        "localhostProfile": "train.json"}})),
    "a match expression without operator is refused": Case(REQUIRED, pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "values": ["a"]}]}]}}})),
    "a spread constraint without maxSkew is refused": Case(REQUIRED, pod(topologySpreadConstraints=[
        {"topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}])),
    # --- unique keys of keyed lists
    "two volumes of one name are refused": Case(KEYS, pod(volumes=[{"name": "a", "emptyDir": {}},
                                                                   {"name": "a", "configMap": {"name": "x"}}])),
    "two sidecars of one name are refused": Case(KEYS, pod(containers=[sidecar(), sidecar(command=["true"])]),
                                                 beyond_server="strategic merge folds the second item into the first: the pod is not what the patch says"),
    "one env var twice is refused": Case(KEYS, main(env=[{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]),
                                         beyond_server="strategic merge folds the second item into the first: the pod is not what the patch says"),
    "one port twice is refused": Case(KEYS, main(ports=[{"containerPort": 8080, "name": "a"},
                                                        {"containerPort": 8080, "protocol": "TCP", "name": "b"}]),
                                      beyond_server="strategic merge folds the second item into the first: the pod is not what the patch says"),
    # --- the pod as created
    "two containers with one port name are refused": Case(CROSS, pod(containers=[
        {"name": MAIN, "ports": [{"containerPort": 8080, "name": "metrics"}]},
        sidecar(ports=[{"containerPort": 9090, "name": "metrics"}])]), beyond_server=PER_CONTAINER),
    "a sidecar port named like the framework's is refused": Case(CROSS, pod(containers=[
        sidecar(ports=[{"containerPort": 9090, "name": PORT}])]), frameworks=("pytorch", "xgboost", "jax"),
        beyond_server=PER_CONTAINER),
    "a framework-container port named like the framework's is refused": Case(CROSS, main(
        ports=[{"containerPort": 8080, "name": PORT}]), frameworks=("pytorch", "tensorflow", "paddle")),
    "a mount of a volume the pod does not have is refused": Case(CROSS, main(
        volumeMounts=[{"name": "cache", "mountPath": "/cache"}])),
    "a sidecar mount of a volume the pod does not have is refused": Case(CROSS, pod(containers=[
        sidecar(volumeMounts=[{"name": "data", "mountPath": "/data"}])])),
    "an init container named like the operator's is refused": Case(CROSS, pod(initContainers=[
        {"name": "init-pytorch", "image": BUSYBOX}]), spec={"nodes": 2}, frameworks=("pytorch",)),
    "an init container and a sidecar of one name are refused": Case(CROSS, pod(
        initContainers=[{"name": "warm", "image": BUSYBOX}], containers=[sidecar(name="warm")])),
    # --- resources the spec asks for (compiler/review/resources.py), judged on the pods as created
    "hugepages in a container without cpu or memory are refused": Case(
        CROSS, {}, spec={"resources": {"devices": {"hugepages-2Mi": "4Mi"}}}),
    "hugepages that are not whole pages are refused": Case(
        CROSS, {}, spec={"resources": {"memory": "1Gi", "devices": {"hugepages-2Mi": "3Mi"}}}),
    "an extended resource in thousandths is refused": Case(
        CROSS, {}, spec={"resources": {"devices": {"vpc.amazonaws.com/efa": "500m"}}}),
    "a cpu limit below the cpu request is refused": Case(
        CROSS, {}, spec={"resources": {"cpu": "2", "limits": {"cpu": "1"}}}),
    "a memory limit below the memory request is refused": Case(
        CROSS, {}, spec={"resources": {"memory": "2Gi", "limits": {"memory": "1Gi"}}}),
    "a mount in a role's podTemplate of a volume only the job's other role has is refused": Case(
        CROSS, {}, spec={"nodes": 2, "roles": {
            "master": {"podTemplate": pod(volumes=[{"name": "cache", "emptyDir": {}}])},
            "worker": {"podTemplate": main(volumeMounts=[{"name": "cache", "mountPath": "/cache"}])}}},
        frameworks=("pytorch", "xgboost")),
    "a role's affinity without a topologyKey is refused": Case(
        CROSS, {}, spec={"nodes": 2, "roles": {"worker": {"scheduling": {"affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"a": "b"}}}]}}}}}},
        frameworks=("pytorch", "jax")),
    # --- conflicts the server takes
    "a volume at /dev/shm beside resources.sharedMemory is refused": Case(
        CONFLICT, pod(volumes=[{"name": "scratch", "emptyDir": {}}],
                      containers=[{"name": MAIN, "volumeMounts": [{"name": "scratch", "mountPath": "/dev/shm"}]}]),
        spec={"resources": {"sharedMemory": "1Gi"}}, beyond_server="the sharedMemory volume is left unmounted"),
    "a pod restartPolicy beside policy.restart is refused": Case(
        CONFLICT, pod(restartPolicy="Never"), spec={"policy": {"restart": "OnFailure"}},
        beyond_server="the operator overwrites the pod's restartPolicy with the replica's"),
    "renaming the framework's port is refused": Case(
        CONFLICT, main(ports=[{"containerPort": "<port number>", "name": "rendezvous"}]),
        frameworks=("pytorch", "tensorflow"), beyond_server="the operator finds no port by its name and fails the job"),
    # --- valid, unusual
    "a sidecar with ports and probes is valid": Case(VALID, pod(containers=[sidecar(
        ports=[{"containerPort": 9090, "name": "metrics"}],
        readinessProbe={"httpGet": {"port": "metrics", "path": "/ready"}, "periodSeconds": 5})])),
    "a native sidecar (an init container with restartPolicy Always) is valid": Case(VALID, pod(initContainers=[
        {"name": "log-shipper", "image": BUSYBOX, "restartPolicy": "Always", "command": ["sleep", "infinity"]}])),
    "requests and limits apart with devices, hugepages and an unsized /dev/shm are valid": Case(VALID, {}, spec={
        "resources": {"cpu": "1", "memory": "1Gi", "limits": {"cpu": "2", "memory": None}, "sharedMemory": "unsized",
                      "devices": {"rdma/hca_shared_devices_a": 1, "hugepages-2Mi": "4Mi", "ephemeral-storage": "1Gi"}}}),
    "a role's own podTemplate, placement and a job affinity are valid": Case(VALID, {}, spec={
        "nodes": 2, "scheduling": {"affinity": AFFINITY},
        "roles": {"worker": {"podTemplate": pod(volumes=[{"name": "cache", "emptyDir": {}}], containers=[
            {"name": MAIN, "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]}]),
            "scheduling": {"nodeSelector": {"pool": "gpu"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}}}},
        frameworks=("pytorch", "jax")),
    "an init container is valid": Case(VALID, pod(initContainers=[{"name": "warm", "image": BUSYBOX, "command": ["true"]}])),
    "a projected volume with a token of the job's account is valid": Case(VALID, volume_and_mount({"projected": {
        "sources": [{"configMap": {"name": "settings"}}, {"serviceAccountToken": {"path": "token",
                                                                                 "expirationSeconds": 3600}}]}}),
        spec={"serviceAccount": {"name": "trainer"}}),
    # validation alone refuses it, but ServiceAccount admission names `default` before validation runs
    "a projected token on a pod without a service account is valid (it runs as default)": Case(
        VALID, volume_and_mount({"projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}),
        frameworks=("pytorch", "tensorflow")),
    "a downward API volume and env are valid": Case(VALID, pod(
        volumes=[{"name": "podinfo", "downwardAPI": {"items": [
            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
            {"path": "cpu", "resourceFieldRef": {"containerName": MAIN, "resource": "limits.cpu", "divisor": "1m"}}]}}],
        containers=[{"name": MAIN, "volumeMounts": [{"name": "podinfo", "mountPath": "/etc/podinfo"}],
                     "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}])),
    "node affinity and pod anti-affinity are valid": Case(VALID, pod(affinity=AFFINITY)),
    "topology spread constraints are valid": Case(VALID, pod(topologySpreadConstraints=[SPREAD])),
    "RuntimeDefault and Localhost seccomp profiles are valid": Case(VALID, pod(
        securityContext={"seccompProfile": {"type": "RuntimeDefault"}},
        containers=[{"name": MAIN, "securityContext": {"seccompProfile": {"type": "Localhost",
                                                                           "localhostProfile": "train.json"}}}])),
    "a sidecar an environment deletes with $patch: delete is valid": Case(
        VALID, pod(containers=[sidecar()]),
        spec={"environments": {"default": {"podTemplate": pod(containers=[{"name": "sidecar", "$patch": "delete"}])}}}),
    "memory: null deleting the memory limit is valid": Case(VALID, main(resources={"limits": {"memory": None}}),
                                                             spec={"resources": {"memory": "4Gi"}}),
    "$retainKeys on the pod securityContext is valid": Case(VALID, pod(securityContext={
        "$retainKeys": ["runAsUser"], "runAsUser": 1000})),
    "$patch: replace on a container securityContext is valid": Case(VALID, main(securityContext={
        "$patch": "replace", "runAsNonRoot": True})),
    "tolerations, a nodeSelector and host aliases are valid": Case(VALID, pod(
        tolerations=[{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}], nodeSelector={"pool": "a100"},
        hostAliases=[{"ip": "10.0.0.1", "hostnames": ["data.local"]}], dnsConfig={"options": [{"name": "ndots", "value": "2"}]})),
    "an ephemeral volume and a sized emptyDir are valid": Case(VALID, pod(
        volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}}}},
                 {"name": "tmp", "emptyDir": {"sizeLimit": "1.5Gi"}}],
        containers=[{"name": MAIN, "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"},
                                                     {"name": "tmp", "mountPath": "/tmp"}]}])),
    "a second port on the framework container is valid": Case(VALID, main(ports=[{"containerPort": 8080, "name": "metrics"},
                                                                                {"containerPort": 8080, "protocol": "UDP"}])),
    "a sidecar mounting a storage volume is valid": Case(VALID, pod(containers=[sidecar(
        volumeMounts=[{"name": "data", "mountPath": "/data", "readOnly": True}])]),
        spec={"storage": [{"name": "data", "mountPath": "/data", "claim": "imagenet"}]}),
    "a fractional cpu number and an extended resource are valid": Case(VALID, main(resources={
        "requests": {"cpu": 0.5, "example.com/fpga": 1}, "limits": {"example.com/fpga": 1}})),
    "pod labels, annotations and imagePullSecrets are valid": Case(VALID, {
        "metadata": {"labels": {"tier": "gold"}, "annotations": {"example.com/note": "x"}},
        "spec": {"imagePullSecrets": [{"name": "registry"}], "terminationGracePeriodSeconds": 60}}),
    "the framework container's port kept, with a probe on it, is valid": Case(VALID, main(
        livenessProbe={"tcpSocket": {"port": PORT}, "initialDelaySeconds": 30}), frameworks=("pytorch", "mxnet")),
}


def frameworks_of(position: int, case: Case) -> tuple[str, ...]:
    """pytorch and one more framework in turn, unless the case names its own."""
    if case.frameworks is not None:
        return case.frameworks
    return ("pytorch", FRAMEWORKS[1 + position % (len(FRAMEWORKS) - 1)])


def job_for(case: Case, framework: str) -> dict[str, Any]:
    """The case's TrainJob document for one framework."""
    from compiler_builders import job_doc

    from foundation.frameworks import adapter

    facts = adapter(framework).facts
    fill = dict(container=facts.container, port=facts.port_name, port_number=facts.port)
    spec = instantiate(case.spec, **fill)
    return job_doc(framework, name="oracle", podTemplate=instantiate(case.pod, **fill), **spec)


def compiler_errors(folder: Any, doc: dict[str, Any]) -> list[str]:
    """The compiler's error lines for one job document (review only, no lowering)."""
    from compiler_builders import write_docs

    from compiler.pipeline import compile_sources

    write_docs(folder / "job.yaml", doc)
    result = compile_sources([folder], lower_jobs=False)
    return [d.text() for d in result.diagnostics if d.severity == "error"]


def params() -> list[tuple[str, str]]:
    """(case, framework) for every run of the table."""
    return [(name, framework) for position, (name, case) in enumerate(CASES.items())
            for framework in frameworks_of(position, case)]


def instantiate(value: Any, *, container: str, port: Optional[str], port_number: Optional[int]) -> Any:
    """The case for one framework: MAIN, PORT and the port number filled in."""
    if isinstance(value, dict):
        return {k: instantiate(v, container=container, port=port, port_number=port_number) for k, v in value.items()}
    if isinstance(value, list):
        return [instantiate(v, container=container, port=port, port_number=port_number) for v in value]
    if value == MAIN:
        return container
    if value == PORT:
        return port
    if value == "<port number>":
        return port_number
    return value
