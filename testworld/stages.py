"""kwok stages of the test world: nodes become Ready, pods run, exit and restart like the kubelet.

Why our own stages: bare kwok has none, and its stock pod stages finish only pods owned by
a batch Job, so Kubeflow pods would run forever. These are written for this project from
kwok's documented Stage API (v1alpha1; selectors are jq over the object, templates are Go
templates with sprig, patches are strategic merges of ``status``, in which
``containerStatuses`` is atomic and ``conditions`` merge by type).

What a pod on a kwok node does (annotations on the pod, e.g. from the job's pod template):

``testworld.trainforge.dev/run-seconds``
    how long each run of the containers lasts (a number of seconds, default from
    ``Kwok(run_seconds=...)``, 1); ``forever`` keeps it Running until deleted.
``testworld.trainforge.dev/exit-code``
    the exit code of every container (default 0). A comma list gives one code per run:
    run n (restartCount n) exits with item n, the last item repeating; ``"1,1,0"`` fails
    twice, then succeeds.
``testworld.trainforge.dev/exit-reason``
    ``state.terminated.reason`` (default ``Completed`` for 0, ``Error`` otherwise, as the
    kubelet writes; e.g. ``OOMKilled``).
``testworld.trainforge.dev/restart-delay-seconds``
    back-off before a restart (default 1; the kubelet's is 10 s doubling, too slow for tests).

Lifecycle, as the kubelet reports it:
  scheduled, Pending -> Running: containers ``running``, ready, ``startTime``, ``podIP``
  (kwok's allocator), conditions Initialized/ContainersReady/Ready True; init containers
  ``terminated`` with 0.
  after run-seconds -> each running container ``terminated`` (exitCode, reason, startedAt,
  finishedAt, containerID). restartPolicy Never, or OnFailure with 0: the pod is Succeeded
  (all 0) or Failed, Ready False with reason PodCompleted. Always, or OnFailure with a
  non-zero code: the pod stays Running, Ready False (ContainersNotReady) ...
  after restart-delay -> the container runs again: ``restartCount`` + 1, ``lastState.terminated``
  holds the previous exit, ready again.
  a pod with a deletionTimestamp is deleted (kwok's stock pod-delete behaviour).
"""

from __future__ import annotations

ANNOTATION_PREFIX = "testworld.trainforge.dev/"
RUN_SECONDS = ANNOTATION_PREFIX + "run-seconds"
EXIT_CODE = ANNOTATION_PREFIX + "exit-code"
EXIT_REASON = ANNOTATION_PREFIX + "exit-reason"
RESTART_DELAY = ANNOTATION_PREFIX + "restart-delay-seconds"
NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")

# jq: does any container wait for the kubelet to restart it?
_AWAITING_RESTART = (
    '.spec.restartPolicy as $p | [(.status.containerStatuses // [])[] | select(.state.terminated != null) '
    '| select($p == "Always" or ($p == "OnFailure" and .state.terminated.exitCode != 0))] | length > 0'
)
_ANY_RUNNING = '[(.status.containerStatuses // [])[] | select(.state.running != null)] | length > 0'
# jq: an annotation in seconds as a Go duration ("1.5" -> "1.5s"); null falls back to the default
_SECONDS_FROM = '.metadata.annotations["{key}"] | if . == null then null else (tostring + "s") end'

NODE_READY = """apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: testworld-node-ready
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ["True"]
  next:
    statusTemplate: |
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

POD_START = """apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: testworld-pod-start
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .status.phase, operator: In, values: [Pending]}
    - {key: '(.status.containerStatuses // []) | length', operator: In, values: ["0"]}
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $uid := .metadata.uid }}
      conditions:
      - {type: PodReadyToStartContainers, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: ContainersReady, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: Ready, status: "True", lastTransitionTime: {{ $now | Quote }}}
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
      {{ with PodIPWith .spec.nodeName (or .spec.hostNetwork false) (or .metadata.uid "") (or .metadata.name "") (or .metadata.namespace "") }}
      podIP: {{ . | Quote }}
      podIPs: [{ip: {{ . | Quote }}}]
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
"""

POD_EXIT = """apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: testworld-pod-exit
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .status.phase, operator: In, values: [Running]}
    - {key: '.metadata.annotations["%(run)s"]', operator: NotIn, values: [forever]}
    - {key: '%(any_running)s', operator: In, values: ["true"]}
    - {key: '%(awaiting)s', operator: In, values: ["false"]}
  delay:
    durationMilliseconds: %(run_ms)d
    durationFrom: {expressionFrom: '%(run_from)s'}
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $ann := or .metadata.annotations dict }}
      {{ $policy := .spec.restartPolicy }}
      {{ $codes := splitList "," (toString (or (index $ann "%(code)s") "%(default_code)d")) }}
      {{ $reason := or (index $ann "%(reason)s") "" }}
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
      {{ $p = dict "name" .name "image" .image "imageID" (dig "imageID" "" $p) "containerID" (dig "containerID" "" $p) "ready" false "started" false "restartCount" $n "state" (dict "terminated" $t) "lastState" (dig "lastState" dict $p) }}
      {{ end }}
      {{ if $p }}
      {{ $out = append $out $p }}
      {{ $term := dig "state" "terminated" "" $p }}
      {{ if not $term }}{{ $live = true }}{{ else }}
      {{ $unready = append $unready .name }}
      {{ if or (eq $policy "Always") (and (eq $policy "OnFailure") (ne (int $term.exitCode) 0)) }}{{ $live = true }}
      {{ else if ne (int $term.exitCode) 0 }}{{ $failed = true }}{{ end }}
      {{ end }}
      {{ end }}
      {{ end }}
      containerStatuses: {{ toJson $out }}
      {{ if $live }}
      conditions:
      - {type: ContainersReady, status: "False", reason: ContainersNotReady, message: {{ printf "containers with unready status: [%%s]" (join " " $unready) | Quote }}, lastTransitionTime: {{ $now | Quote }}}
      - {type: Ready, status: "False", reason: ContainersNotReady, message: {{ printf "containers with unready status: [%%s]" (join " " $unready) | Quote }}, lastTransitionTime: {{ $now | Quote }}}
      phase: Running
      {{ else }}
      conditions:
      - {type: PodReadyToStartContainers, status: "False", lastTransitionTime: {{ $now | Quote }}}
      - {type: ContainersReady, status: "False", reason: PodCompleted, message: null, lastTransitionTime: {{ $now | Quote }}}
      - {type: Ready, status: "False", reason: PodCompleted, message: null, lastTransitionTime: {{ $now | Quote }}}
      phase: {{ ternary "Failed" "Succeeded" $failed }}
      {{ end }}
"""

POD_RESTART = """apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: testworld-pod-restart
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .status.phase, operator: In, values: [Running]}
    - {key: '%(awaiting)s', operator: In, values: ["true"]}
  delay:
    durationMilliseconds: %(restart_ms)d
    durationFrom: {expressionFrom: '%(restart_from)s'}
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $uid := .metadata.uid }}
      {{ $policy := .spec.restartPolicy }}
      {{ $out := list }}
      {{ $ready := true }}
      {{ range (or .status.containerStatuses list) }}
      {{ $p := . }}
      {{ $term := dig "state" "terminated" "" $p }}
      {{ if and $term (or (eq $policy "Always") (and (eq $policy "OnFailure") (ne (int $term.exitCode) 0))) }}
      {{ $n := add1 (int (dig "restartCount" 0 $p)) }}
      {{ $p = dict "name" .name "image" .image "imageID" (dig "imageID" "" $p) "containerID" (printf "containerd://%%s" (printf "%%s/%%s/%%d" $uid .name $n | sha256sum)) "ready" true "started" true "restartCount" $n "state" (dict "running" (dict "startedAt" $now)) "lastState" (dict "terminated" $term) }}
      {{ else if $term }}{{ $ready = false }}
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

POD_DELETE = """apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: testworld-pod-delete
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: Exists}
  next:
    delete: true
"""


def stages(*, run_seconds: float = 1.0, exit_code: int = 0, restart_delay: float = 1.0) -> str:
    """All stages as one multi-document YAML for ``kwok --config``; the defaults apply to
    pods without the annotations."""
    values = {
        "run": RUN_SECONDS, "code": EXIT_CODE, "reason": EXIT_REASON, "default_code": exit_code,
        "any_running": _ANY_RUNNING, "awaiting": _AWAITING_RESTART,
        "run_ms": round(run_seconds * 1000), "run_from": _SECONDS_FROM.format(key=RUN_SECONDS),
        "restart_ms": round(restart_delay * 1000), "restart_from": _SECONDS_FROM.format(key=RESTART_DELAY),
    }
    docs = [NODE_READY, POD_START, POD_EXIT % values, POD_RESTART % values, POD_DELETE]
    return "---\n".join(docs)
