"""kwok stages of the test world: nodes become Ready, pods run, exit and restart like the kubelet.

Why our own stages: bare kwok has none, and its stock pod stages finish only pods owned by
a batch Job, so Kubeflow pods would run forever. These are written for this project from
kwok's documented Stage API (v1alpha1; selectors are jq over the object, templates are Go
templates with sprig, patches are strategic merges of ``status``, in which
``containerStatuses`` is atomic and ``conditions`` merge by type).

What a pod on a kwok node does (annotations on the pod, e.g. from the job's pod template):

``testworld.trainforge.dev/run-seconds``
    how long each run of the containers lasts (a number of seconds, default from
    ``Kwok(run_seconds=...)``, 1); ``forever`` keeps it Running until deleted, and so does
    a missing annotation under ``Kwok(run_seconds=None)``.
``testworld.trainforge.dev/exit-code``
    the exit code of every container (default 0). A comma list gives one code per run:
    run n (restartCount n) exits with item n, the last item repeating; ``"1,1,0"`` fails
    twice, then succeeds.
``testworld.trainforge.dev/exit-reason``
    ``state.terminated.reason`` (default ``Completed`` for 0, ``Error`` otherwise, as the
    kubelet writes; e.g. ``OOMKilled``).
``testworld.trainforge.dev/restart-delay-seconds``
    back-off before a restart (default 1; the kubelet's is 10 s doubling, too slow for tests).
``testworld.trainforge.dev/waiting-reason``
    the kubelet cannot start the containers: the pod stays Pending, each container
    ``waiting`` with this reason (``ImagePullBackOff``, ``ErrImagePull``,
    ``CreateContainerConfigError`` ...), until deleted; nothing of the above applies. The
    real causes need no annotation: an image the world's ``bad_images`` pattern matches, a
    Secret or ConfigMap that does not exist (``testworld.kubelet``); this is for a reason
    the world has no cause for, or a pod that must wait whatever it names.
``testworld.trainforge.dev/waiting-message``
    that waiting state's message (default: the kubelet's for the reason: ``Back-off pulling
    image "IMAGE"``; ``secret "NAME" not found`` naming the first Secret the container's env
    reads).
``testworld.trainforge.dev/terminate-seconds``
    how long a deleted pod stays Terminating (deletionTimestamp set, still Running) before it
    is gone (default 0). A kubelet keeps a pod for its grace period while the containers stop
    (30 s by default); a controller that acts on a terminating pod is tested with this.

Lifecycle, as the kubelet reports it:
  scheduled, Pending -> (under ``testworld.kubelet``: once its condition ``PREPARED`` is True,
  set when the pod's images, volumes and environment would let a kubelet start it; until
  then that process writes why it waits) -> Running: containers ``running``, ready, ``startTime``, ``podIP``
  (kwok's allocator; one the pod has already is kept: under load kwok may play this stage
  again before its watch shows the first patch, and a second IP merged into ``podIPs`` is
  refused, "may specify no more than one IP for each IP family", as 24,595 of 40,000 pods
  were at 5,000 jobs), conditions Initialized/ContainersReady/Ready True; init containers
  ``terminated`` with 0.
  after run-seconds -> each running container ``terminated`` (exitCode, reason, startedAt,
  finishedAt, containerID). restartPolicy Never, or OnFailure with 0: the pod is Succeeded
  (all 0) or Failed, Ready False with reason PodCompleted. Always, or OnFailure with a
  non-zero code: the pod stays Running, Ready False (ContainersNotReady), the container
  ``waiting`` in ``CrashLoopBackOff`` with the exit in ``lastState.terminated`` ...
  after restart-delay -> the container runs again: ``restartCount`` + 1, ``lastState.terminated``
  still holds the previous exit, ready again.
  a pod with a deletionTimestamp is deleted (kwok's stock pod-delete behaviour), after
  terminate-seconds.
"""

from __future__ import annotations

from typing import Any

import yaml

ANNOTATION_PREFIX = "testworld.trainforge.dev/"
RUN_SECONDS = ANNOTATION_PREFIX + "run-seconds"
EXIT_CODE = ANNOTATION_PREFIX + "exit-code"
EXIT_REASON = ANNOTATION_PREFIX + "exit-reason"
RESTART_DELAY = ANNOTATION_PREFIX + "restart-delay-seconds"
TERMINATE_SECONDS = ANNOTATION_PREFIX + "terminate-seconds"
WAITING_REASON = ANNOTATION_PREFIX + "waiting-reason"
WAITING_MESSAGE = ANNOTATION_PREFIX + "waiting-message"
PREPARED = ANNOTATION_PREFIX + "Prepared"  # the pod condition testworld.kubelet sets once the pod may start
NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")

# jq selectors (each must yield "true"/"false", a string or a number, compared as text)
NOT_DELETED = (".metadata.deletionTimestamp", "DoesNotExist")
AWAITING_RESTART = (  # any container in the kubelet's back-off, waiting to be restarted?
    '[(.status.containerStatuses // [])[] | select(.state.waiting.reason == "CrashLoopBackOff")] | length > 0'
)
ANY_RUNNING = "[(.status.containerStatuses // [])[] | select(.state.running != null)] | length > 0"
# no container ran yet (those the kubelet could not start are waiting)
NONE_STARTED = "[(.status.containerStatuses // [])[] | select(.state.waiting == null)] | length == 0"
IS_PREPARED = f'[(.status.conditions // [])[] | select(.type == "{PREPARED}" and .status == "True")] | length > 0'
# jq for a delay: an annotation in seconds as a Go duration ("1.5" -> "1.5s"); null: the stage's default
SECONDS_FROM = '.metadata.annotations["{key}"] | if . == null then null else (tostring + "s") end'

NODE_READY = """\
{{ $now := Now }}
conditions:
{{ range NodeConditions }}
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $now | Quote }}
  message: {{ .message | Quote }}
  reason: {{ .reason | Quote }}
  status: {{ .status | Quote }}
  type: {{ .type | Quote }}
{{ end }}
addresses:
- {address: {{ NodeIP | Quote }}, type: InternalIP}
- {address: {{ NodeName | Quote }}, type: Hostname}
{{ with NodePort }}
daemonEndpoints: {kubeletEndpoint: {Port: {{ . }}}}
{{ end }}
allocatable: {{ or .status.allocatable .status.capacity (dict "cpu" "32" "memory" "256Gi" "pods" "110") | toJson }}
capacity: {{ or .status.capacity (dict "cpu" "32" "memory" "256Gi" "pods" "110") | toJson }}
nodeInfo:
  architecture: amd64
  operatingSystem: linux
  containerRuntimeVersion: {{ printf "kwok-%s" Version | Quote }}
  kubeletVersion: {{ printf "kwok-%s" Version | Quote }}
  kubeProxyVersion: {{ printf "kwok-%s" Version | Quote }}
  kernelVersion: {{ printf "kwok-%s" Version | Quote }}
  bootID: ""
  machineID: ""
  osImage: ""
  systemUUID: ""
phase: Running
"""

# init containers done, the node's and the pod's addresses: every pod the kubelet started has them
INIT_AND_ADDRESSES = """\
{{ with .spec.initContainers }}
initContainerStatuses:
{{ range . }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: true
  restartCount: 0
  state: {terminated: {exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}}
{{ end }}
{{ end }}
{{ with NodeIPWith .spec.nodeName }}
hostIP: {{ . | Quote }}
hostIPs: [{ip: {{ . | Quote }}}]
{{ end }}
{{ with or .status.podIP (PodIPWith .spec.nodeName (or .spec.hostNetwork false) (or .metadata.uid "") (or .metadata.name "") (or .metadata.namespace "")) }}
podIP: {{ . | Quote }}
podIPs: [{ip: {{ . | Quote }}}]
{{ end }}
"""

POD_START = """\
{{ $now := Now }}
{{ $uid := .metadata.uid }}
conditions:
- {type: PodReadyToStartContainers, status: "True", reason: null, message: null, lastTransitionTime: {{ $now | Quote }}}
- {type: Initialized, status: "True", reason: null, message: null, lastTransitionTime: {{ $now | Quote }}}
- {type: ContainersReady, status: "True", reason: null, message: null, lastTransitionTime: {{ $now | Quote }}}
- {type: Ready, status: "True", reason: null, message: null, lastTransitionTime: {{ $now | Quote }}}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  imageID: {{ printf "docker-pullable://%s" .image | Quote }}
  containerID: {{ printf "containerd://%s" (printf "%s/%s/0" $uid .name | sha256sum) | Quote }}
  ready: true
  started: true
  restartCount: 0
  state: {running: {startedAt: {{ $now | Quote }}}}
{{ end }}
INIT_AND_ADDRESSES
phase: Running
startTime: {{ or .status.startTime $now | Quote }}
""".replace("INIT_AND_ADDRESSES\n", INIT_AND_ADDRESSES)

# A pod whose containers the kubelet cannot start: Pending, every container waiting for the
# annotation's reason. The message is the annotation's, else what the kubelet writes for the
# reason: the image for a pull, the first Secret the container's env names for a config error.
# WAITING_REASON and WAITING_MESSAGE are filled in by all_stages().
POD_WAITING = """\
{{ $now := Now }}
{{ $ann := or .metadata.annotations dict }}
{{ $reason := index $ann "WAITING_REASON" }}
{{ $given := or (index $ann "WAITING_MESSAGE") "" }}
{{ $names := list }}
{{ range .spec.containers }}{{ $names = append $names .name }}{{ end }}
conditions:
- {type: PodReadyToStartContainers, status: "True", lastTransitionTime: {{ $now | Quote }}}
- {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
- {type: ContainersReady, status: "False", reason: ContainersNotReady, message: {{ printf "containers with unready status: [%s]" (join " " $names) | Quote }}, lastTransitionTime: {{ $now | Quote }}}
- {type: Ready, status: "False", reason: ContainersNotReady, message: {{ printf "containers with unready status: [%s]" (join " " $names) | Quote }}, lastTransitionTime: {{ $now | Quote }}}
containerStatuses:
{{ range .spec.containers }}
{{ $secret := "" }}
{{ range (or .env list) }}{{ with .valueFrom }}{{ with .secretKeyRef }}{{ if not $secret }}{{ $secret = .name }}{{ end }}{{ end }}{{ end }}{{ end }}
{{ range (or .envFrom list) }}{{ with .secretRef }}{{ if not $secret }}{{ $secret = .name }}{{ end }}{{ end }}{{ end }}
{{ $message := $given }}
{{ if not $message }}
{{ if eq $reason "ImagePullBackOff" }}{{ $message = printf "Back-off pulling image %q" .image }}
{{ else if eq $reason "ErrImagePull" }}{{ $message = printf "failed to pull and unpack image %q" .image }}
{{ else if and (eq $reason "CreateContainerConfigError") $secret }}{{ $message = printf "secret %q not found" $secret }}
{{ end }}
{{ end }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  imageID: ""
  ready: false
  started: false
  restartCount: 0
  state: {waiting: {reason: {{ $reason | Quote }}, message: {{ $message | Quote }}}}
{{ end }}
INIT_AND_ADDRESSES
phase: Pending
startTime: {{ $now | Quote }}
""".replace("INIT_AND_ADDRESSES\n", INIT_AND_ADDRESSES)

# DEFAULT_CODE, EXIT_CODE and EXIT_REASON are filled in by stages()
POD_EXIT = """\
{{ $now := Now }}
{{ $pod := printf "%s_%s(%s)" .metadata.name .metadata.namespace .metadata.uid }}
{{ $ann := or .metadata.annotations dict }}
{{ $policy := .spec.restartPolicy }}
{{ $codes := splitList "," (toString (or (index $ann "EXIT_CODE") "DEFAULT_CODE")) }}
{{ $reason := or (index $ann "EXIT_REASON") "" }}
{{ $prev := dict }}
{{ range (or .status.containerStatuses list) }}{{ $_ := set $prev .name . }}{{ end }}
{{ $out := list }}
{{ $live := false }}
{{ $failed := false }}
{{ $unready := list }}
{{ range .spec.containers }}
{{ $p := get $prev .name }}
{{ if and $p (dig "state" "running" "" $p) }}
{{ $n := int (dig "restartCount" 0 $p) }}
{{ $code := index $codes (min $n (sub (len $codes) 1)) | trim | atoi }}
{{ $why := ternary "Completed" "Error" (eq $code 0) }}
{{ if $reason }}{{ $why = $reason }}{{ end }}
{{ $t := dict "exitCode" $code "reason" $why "startedAt" (dig "state" "running" "startedAt" $now $p) "finishedAt" $now "containerID" (dig "containerID" "" $p) }}
{{ $state := dict "terminated" $t }}
{{ $last := dig "lastState" dict $p }}
{{ if or (eq $policy "Always") (and (eq $policy "OnFailure") (ne $code 0)) }}
{{ $state = dict "waiting" (dict "reason" "CrashLoopBackOff" "message" (printf "back-off 10s restarting failed container=%s pod=%s" .name $pod)) }}
{{ $last = dict "terminated" $t }}
{{ end }}
{{ $p = dict "name" .name "image" .image "imageID" (dig "imageID" "" $p) "containerID" (dig "containerID" "" $p) "ready" false "started" false "restartCount" $n "state" $state "lastState" $last }}
{{ end }}
{{ if $p }}
{{ $out = append $out $p }}
{{ $term := dig "state" "terminated" "" $p }}
{{ if $term }}
{{ $unready = append $unready .name }}
{{ if ne (int $term.exitCode) 0 }}{{ $failed = true }}{{ end }}
{{ else }}
{{ $live = true }}
{{ if dig "state" "waiting" "" $p }}{{ $unready = append $unready .name }}{{ end }}
{{ end }}
{{ end }}
{{ end }}
containerStatuses: {{ toJson $out }}
{{ if $live }}
conditions:
- {type: ContainersReady, status: "False", reason: ContainersNotReady, message: {{ printf "containers with unready status: [%s]" (join " " $unready) | Quote }}, lastTransitionTime: {{ $now | Quote }}}
- {type: Ready, status: "False", reason: ContainersNotReady, message: {{ printf "containers with unready status: [%s]" (join " " $unready) | Quote }}, lastTransitionTime: {{ $now | Quote }}}
phase: Running
{{ else }}
conditions:
- {type: PodReadyToStartContainers, status: "False", lastTransitionTime: {{ $now | Quote }}}
- {type: ContainersReady, status: "False", reason: PodCompleted, message: null, lastTransitionTime: {{ $now | Quote }}}
- {type: Ready, status: "False", reason: PodCompleted, message: null, lastTransitionTime: {{ $now | Quote }}}
phase: {{ ternary "Failed" "Succeeded" $failed }}
{{ end }}
"""

POD_RESTART = """\
{{ $now := Now }}
{{ $uid := .metadata.uid }}
{{ $out := list }}
{{ $ready := true }}
{{ range (or .status.containerStatuses list) }}
{{ $p := . }}
{{ if eq (dig "state" "waiting" "reason" "" $p) "CrashLoopBackOff" }}
{{ $n := add1 (int (dig "restartCount" 0 $p)) }}
{{ $p = dict "name" .name "image" .image "imageID" (dig "imageID" "" $p) "containerID" (printf "containerd://%s" (printf "%s/%s/%d" $uid .name $n | sha256sum)) "ready" true "started" true "restartCount" $n "state" (dict "running" (dict "startedAt" $now)) "lastState" (dig "lastState" dict $p) }}
{{ else if dig "state" "terminated" "" $p }}{{ $ready = false }}
{{ end }}
{{ $out = append $out $p }}
{{ end }}
containerStatuses: {{ toJson $out }}
{{ if $ready }}
conditions:
- {type: ContainersReady, status: "True", reason: null, message: null, lastTransitionTime: {{ $now | Quote }}}
- {type: Ready, status: "True", reason: null, message: null, lastTransitionTime: {{ $now | Quote }}}
{{ end }}
phase: Running
"""


def stage(name: str, kind: str, match: list[tuple[str, ...]], *, template: str | None = None,
          delay: tuple[float, str] | None = None, delete: bool = False) -> dict[str, Any]:
    """One kwok Stage: ``match`` holds (jq key, operator, *values); ``delay`` is (default
    seconds, jq giving a duration); ``template`` patches ``status``; ``delete`` removes."""
    spec: dict[str, Any] = {
        "resourceRef": {"apiGroup": "v1", "kind": kind},
        "selector": {"matchExpressions": [
            {"key": key, "operator": op, **({"values": list(values)} if values else {})} for key, op, *values in match]},
        "next": {"delete": True} if delete else {"statusTemplate": template},
    }
    if delay is not None:
        spec["delay"] = {"durationMilliseconds": round(delay[0] * 1000), "durationFrom": {"expressionFrom": delay[1]}}
    return {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": name}, "spec": spec}


def all_stages(*, run_seconds: float | None = 1.0, exit_code: int = 0, restart_delay: float = 1.0,
               prepared: bool = False) -> list[dict[str, Any]]:
    """Every stage; the defaults apply to pods without the annotations (``run_seconds=None``:
    such pods run until deleted). ``prepared``: a pod starts only once ``testworld.kubelet``
    set its ``PREPARED`` condition (it may have waited, its containers ``waiting``, before)."""
    running = [NOT_DELETED, (".status.phase", "In", "Running")]
    fresh = [NOT_DELETED, (".status.phase", "In", "Pending"), ("(.status.containerStatuses // []) | length", "In", "0")]
    startable = [NOT_DELETED, (".status.phase", "In", "Pending"), (NONE_STARTED, "In", "true"),
                 (IS_PREPARED, "In", "true")] if prepared else fresh
    timed = [(f'.metadata.annotations["{RUN_SECONDS}"]', "NotIn", "forever")]
    if run_seconds is None:
        timed.append((f'.metadata.annotations["{RUN_SECONDS}"]', "Exists"))
    exit_template = (POD_EXIT.replace('"EXIT_CODE"', f'"{EXIT_CODE}"').replace('"EXIT_REASON"', f'"{EXIT_REASON}"')
                     .replace('"DEFAULT_CODE"', f'"{int(exit_code)}"'))
    return [
        stage("testworld-node-ready", "Node",
              [('.status.conditions.[] | select( .type == "Ready" ) | .status', "NotIn", "True")], template=NODE_READY),
        stage("testworld-pod-start", "Pod", [*startable, (f'.metadata.annotations["{WAITING_REASON}"]', "DoesNotExist")],
              template=POD_START),
        stage("testworld-pod-waiting", "Pod", [*fresh, (f'.metadata.annotations["{WAITING_REASON}"]', "Exists")],
              template=POD_WAITING.replace('"WAITING_REASON"', f'"{WAITING_REASON}"')
              .replace('"WAITING_MESSAGE"', f'"{WAITING_MESSAGE}"')),
        stage("testworld-pod-exit", "Pod",
              [*running, *timed, (ANY_RUNNING, "In", "true"), (AWAITING_RESTART, "In", "false")],
              template=exit_template, delay=(run_seconds or 0.0, SECONDS_FROM.format(key=RUN_SECONDS))),
        stage("testworld-pod-restart", "Pod", [*running, (AWAITING_RESTART, "In", "true")],
              template=POD_RESTART, delay=(restart_delay, SECONDS_FROM.format(key=RESTART_DELAY))),
        stage("testworld-pod-delete", "Pod", [(".metadata.deletionTimestamp", "Exists")], delete=True,
              delay=(0.0, SECONDS_FROM.format(key=TERMINATE_SECONDS))),
    ]


class _Literal(yaml.SafeDumper):
    """Multi-line strings as ``|`` blocks, so the written config reads like kwok's own."""


_Literal.add_representer(str, lambda dumper, text: dumper.represent_scalar(
    "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None))


def stages(*, run_seconds: float | None = 1.0, exit_code: int = 0, restart_delay: float = 1.0,
           prepared: bool = False) -> str:
    """All stages as one multi-document YAML for ``kwok --config``."""
    docs = all_stages(run_seconds=run_seconds, exit_code=exit_code, restart_delay=restart_delay, prepared=prepared)
    return yaml.dump_all(docs, Dumper=_Literal, sort_keys=False, width=1000)
