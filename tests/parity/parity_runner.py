"""Runs every case on both sides at once and collects, per case, every difference found.

One thread per case: apply to both sides, compare the created objects, then walk the
case's lifecycle step by step (pods ended through kwok, a suspend, a scale, a pod deleted
behind the operator's back: each done to both sides at once), comparing the job's status
after each step and the objects where a step changes them. A comparison ends as soon as
every difference left is a documented one (parity_deviations), so a passing run waits
only for the operators; a real difference waits until both sides have been quiet for a
while. Cases whose pods cannot be scheduled here are compared as created. Cases run
concurrently, so the whole table costs about as long as its longest lifecycle.
"""

from __future__ import annotations

import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import parity_views as pv
from parity_cases import DECIDERS, EXIT, RUN, Case, replica_specs
from parity_harness import Harness

from controller.jobs.kinds import KINDS, job_resource
from foundation.cluster.kube import PODS
from schemas.upstream import TYPE_LABEL


@dataclass
class Difference:
    step: str
    path: str
    up: Any
    ours: Any

    def __str__(self) -> str:
        return f"{self.step}: {self.path}: upstream {self.up!r} / ours {self.ours!r}"


@dataclass
class Result:
    case: Case
    differences: list[Difference] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # the steps compared, in order
    error: str = ""
    seconds: float = 0.0
    stuck: str = ""  # why the pod lifecycle was not played
    last_status: Any = None


Explain = Callable[[Case, Difference], Any]
REPORT = Path(tempfile.gettempdir()) / "trainforge-parity-report.txt"  # every case of the last run


class Runner:
    """`explain(case, difference)` says whether a difference is a documented deviation:
    a comparison is done once every difference left is one (or none is left)."""

    def __init__(self, harness: Harness, explain: Explain) -> None:
        self.h = harness
        self.sides = harness.sides
        self.explain = explain

    def keys(self, case: Case) -> list[tuple[str, str, str]]:
        return [(self.sides.up_for(case.kind), case.kind, case.name), (self.sides.ours, case.kind, case.name)]

    def run_all(self, cases: list[Case]) -> dict[str, Result]:
        results = {c.id: Result(c) for c in cases}
        threads = [threading.Thread(target=self._run, args=(results[c.id],), name=c.id, daemon=True) for c in cases]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results

    def _run(self, result: Result) -> None:
        began = time.monotonic()
        try:
            self.case(result)
        except Exception:  # noqa: BLE001 - a case's crash is its result, the other cases go on
            result.error = traceback.format_exc()
        result.seconds = time.monotonic() - began

    # ------------------------------------------------------------------ one case
    def case(self, r: Result) -> None:
        case = r.case
        self.h.apply(case.docs, self.up_ns(case))
        self.h.apply(case.docs, self.sides.ours)
        self.compare_children(r, "created", created=True)
        self.compare_status(r, "created", expect_change=True)
        for n, step in enumerate(case.steps, 1):
            if r.stuck and step[0] not in ("objects",):
                continue  # no pod lifecycle without a node: only the objects are compared
            getattr(self, "step_" + step[0].replace("-", "_"))(r, f"step {n} {' '.join(map(str, step))}", *step[1:])
        self.compare_history(r)

    def up_ns(self, case: Case) -> str:
        return self.sides.up_for(case.kind)

    def both(self, case: Case) -> list[str]:
        return [self.up_ns(case), self.sides.ours]

    def step_running(self, r: Result, step: str) -> None:
        case = r.case

        def phases() -> tuple[Any, Any]:
            return tuple(self.phases(ns, case) for ns in self.both(case))  # type: ignore[return-value]

        if (case.job["spec"].get("runPolicy") or {}).get("suspend") and not any(s[0] == "suspend" for s in case.steps):
            r.stuck = "the job is suspended (runPolicy.suspend, as Kueue keeps it until admitted)"
            return
        want = self.expected_pods(case)  # not fewer: a pod being replaced is not running yet
        # and no pod created or deleted for 5 s: kwok v0.8.0 deletes a recreated pod by its name a
        # few more times after its predecessor's deletion, which the operators then recreate
        up, _ = self.h.settle(phases, self.keys(case), done=lambda a, b: len(a) == want and a == b and
                              all(p in ("Running", STUCK) and not gone for _, p, gone in a), min_quiet=5.0,
                              quiet=60.0)
        stuck = [name for name, p, _ in up if p == STUCK]
        if stuck:  # e.g. a PersistentVolumeClaim the example expects, or a gang scheduler that is not here
            r.stuck = f"pods that cannot be scheduled here: {', '.join(stuck)}"
            return
        running = sum(1 for _, p, gone in up if p == "Running" and not gone)

        def counted(view: dict[str, Any]) -> bool:  # the status has seen every running pod
            return sum((s or {}).get("active", 0) for s in (view["replicaStatuses"] or {}).values()) == running

        self.compare_status(r, step, expect_change=False, need=counted)

    def step_exit(self, r: Result, step: str, selector: str, code: str) -> None:
        case = r.case

        def chosen() -> tuple[Any, Any]:
            return tuple(sorted(p["metadata"]["name"] for p in self.select(ns, case, selector))
                         for ns in self.both(case))  # type: ignore[return-value]

        # The same pods on both sides, or the step is moot. They are chosen once both sides
        # offer the same ones and have been quiet for 2 s: kwok v0.8.0 may still be deleting a
        # pod re-created under its old name (after a resume), and the operators re-creating it;
        # chosen mid-way, the two sides once offered [worker-0] / [] in a full make test at load ~2.
        ended = self.h.settle(chosen, self.keys(case), done=lambda a, b: a == b, min_quiet=2.0)
        for ns, names in zip(self.both(case), ended):
            for name in names:
                self.h.client.patch(PODS, ns, name, {"metadata": {"annotations": {RUN: "0", EXIT: code}}})
        self.record(r, f"{step}: pods ended", ended[0], ended[1])
        self.compare_status(r, step, expect_change=bool(ended[0]))

    def step_terminal(self, r: Result, step: str) -> None:
        self.compare_status(r, step, expect_change=False, need=terminal)

    def step_past_deadline(self, r: Result, step: str) -> None:
        """Wait until both jobs are 2 s past activeDeadlineSeconds (from their own startTime),
        then touch both with an annotation. Upstream v1.9.4 acts on a deadline only at the next
        event after it: its delayed requeue goes to a FakeWorkQueue whose AddAfter does nothing,
        so a job whose pods keep running is never failed. Ours requeues itself at the deadline
        (kubeflow-v1-semantics.md); the touch is the event upstream needs, a no-op for ours."""
        case = r.case
        seconds = int(case.job["spec"]["runPolicy"]["activeDeadlineSeconds"])
        for ns in self.both(case):
            started = self.h.wait(lambda ns=ns: ((self.h.job(ns, case.kind, case.name) or {}).get("status") or {})
                                  .get("startTime"), what=f"{ns}/{case.name} status.startTime")
            due = datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp() + seconds + 2
            time.sleep(max(0.0, due - time.time()))
        for ns in self.both(case):
            self.h.client.patch(job_resource(KINDS[case.kind]), ns, case.name,
                                {"metadata": {"annotations": {"parity.trainforge.dev/nudge": "past-deadline"}}})
        self.compare_status(r, step, expect_change=True)

    def step_objects(self, r: Result, step: str) -> None:
        self.compare_children(r, step)

    def step_suspend(self, r: Result, step: str, value: bool) -> None:
        case = r.case
        for ns in self.both(case):
            self.h.client.patch(job_resource(KINDS[case.kind]), ns, case.name,
                                {"spec": {"runPolicy": {"suspend": value}}})
        self.compare_status(r, step, expect_change=True)

    def step_resume_while_terminating(self, r: Result, step: str) -> None:
        """Suspend both jobs, and resume them as soon as each side shows `Suspended` with every
        pod Terminating (kwok keeps them for the case's terminate-seconds); then let each
        side go its own way: upstream v1.9.4 counts the terminating pods as failed replicas and
        fails the job; ours waits until they are gone, re-creates them and runs the job to
        Succeeded (the pods are ended as FINISH ends them). What is compared is each side's
        outcome and whether any status after the resume counted a failed replica."""
        case = r.case
        up_ns, ours_ns = self.both(case)
        want = self.expected_pods(case)
        old = {}
        for ns in (up_ns, ours_ns):
            self.h.client.patch(job_resource(KINDS[case.kind]), ns, case.name, {"spec": {"runPolicy": {"suspend": True}}})
        for ns in (up_ns, ours_ns):
            def held(ns: str = ns) -> list[dict[str, Any]] | None:
                pods = self.h.pods(ns, case.kind, case.name)
                suspended = any(c["type"] == "Suspended" and c["status"] == "True"
                                for c in pv.status_view(self.h.job(ns, case.kind, case.name) or {}, ns)["conditions"])
                return pods if suspended and len(pods) == want and all(
                    p["metadata"].get("deletionTimestamp") for p in pods) else None
            try:
                # each side may take a while to act on the suspend with the whole table running (upstream
                # took over 15 s once, in the fresh-clone make test of 0cb059d); once it has, its pods stay
                # Terminating for the case's 20 s, which this poll sees
                pods = self.h.wait(held, timeout=60.0, what=f"{ns}/{case.name}: Suspended, every pod terminating")
            except AssertionError as exc:
                r.error = f"{exc}: the suspended pods were not all terminating at the resume, the case shows nothing"
                return
            old[ns] = {p["metadata"]["uid"] for p in pods}
        with self.h.cond:
            since = {ns: len(self.h._track(ns, case.kind, case.name).history) for ns in (up_ns, ours_ns)}
        for ns in (up_ns, ours_ns):
            self.h.client.patch(job_resource(KINDS[case.kind]), ns, case.name, {"spec": {"runPolicy": {"suspend": False}}})

        def status(ns: str) -> dict[str, Any]:
            return pv.status_view(self.h.job(ns, case.kind, case.name) or {}, ns)

        self.h.wait(lambda: terminal(status(up_ns)), what=f"{up_ns}/{case.name} finished")

        def rerun() -> bool:
            pods = self.h.pods(ours_ns, case.kind, case.name)
            return len(pods) == want and all(p["metadata"]["uid"] not in old[ours_ns] and not p["metadata"].get(
                "deletionTimestamp") and (p.get("status") or {}).get("phase") == "Running" for p in pods)

        self.h.wait(rerun, timeout=150.0, what=f"{ours_ns}/{case.name} running again on new pods")
        for selector in ("followers", "all"):
            for pod in self.select(ours_ns, case, selector):
                self.h.client.patch(PODS, ours_ns, pod["metadata"]["name"], {"metadata": {"annotations": {RUN: "0", EXIT: "0"}}})
        self.h.wait(lambda: terminal(status(ours_ns)), what=f"{ours_ns}/{case.name} finished")
        views = []
        for ns in (up_ns, ours_ns):
            with self.h.cond:
                after = self.h._track(ns, case.kind, case.name).history[since[ns]:]
            final = status(ns)
            views.append({
                "outcome": next(c["type"] for c in final["conditions"] if c["type"] in ("Succeeded", "Failed")
                                and c["status"] == "True"),
                "old pods counted": any((s or {}).get("failed", 0) for v in after
                                        for s in (v["replicaStatuses"] or {}).values()),
            })
        if views[1] != {"outcome": "Succeeded", "old pods counted": False}:
            r.error = f"ours did not re-run the resumed job cleanly: {views[1]}"
        self.record(r, f"{step}: outcome", views[0], views[1])

    def step_edit_while_running(self, r: Result, step: str) -> None:
        """One more Worker and a new image on both running jobs (a merge patch, as a GitOps sync of
        the edit), then worker-0 exits 137 on both sides and is re-created. Upstream v1.9.4 creates
        the new worker from the new spec beside pods of the old (`WORLD_SIZE` 4 beside 3) and
        re-creates worker-0 from the new image; ours keeps the run's spec (foundation.runs.spec):
        no new worker, worker-0 as it was. Compared: each side's live pods and the shapes among
        them; then each side is played to its end, as FINISH ends pods."""
        case = r.case
        up_ns, ours_ns = self.both(case)
        want = self.expected_pods(case)
        self.sync_new_image_and_worker(case)

        def live(ns: str) -> list[dict[str, Any]]:
            return [p for p in self.h.pods(ns, case.kind, case.name) if not p["metadata"].get("deletionTimestamp")
                    and (p.get("status") or {}).get("phase") in ("Pending", "Running")]

        # upstream's new worker running, and ours quiet (it creates nothing)
        self.h.settle(lambda: (len(live(up_ns)), len(live(ours_ns))), self.keys(case),
                      done=lambda a, b: a == want + 1, min_quiet=3.0)
        old = {}
        for ns in (up_ns, ours_ns):
            pod = next(p for p in live(ns) if p["metadata"]["name"] == f"{case.name}-worker-0")
            old[ns] = pod["metadata"]["uid"]
            self.h.client.patch(PODS, ns, pod["metadata"]["name"], {"metadata": {"annotations": {RUN: "0", EXIT: "137"}}})
        for ns in (up_ns, ours_ns):
            self.h.wait(lambda ns=ns: any(p["metadata"]["name"] == f"{case.name}-worker-0" and p["metadata"]["uid"] !=
                                          old[ns] and p["status"].get("phase") == "Running" for p in live(ns)),
                        what=f"{ns}/{case.name}-worker-0 re-created and running")

        def view(ns: str) -> dict[str, Any]:
            pods = live(ns)
            return {"pods": sorted(p["metadata"]["name"] for p in pods), "shapes": sorted(
                {(p["spec"]["containers"][0]["image"], next((e.get("value") for e in p["spec"]["containers"][0].get(
                    "env") or [] if e["name"] == "WORLD_SIZE"), None)) for p in pods})}

        views = self.h.settle(lambda: (view(up_ns), view(ours_ns)), self.keys(case), done=lambda a, b: True,
                              min_quiet=3.0)
        original = replica_specs(case.job)["Worker"]["template"]["spec"]["containers"][0]["image"]
        if views[1]["shapes"] != [(original, str(want))] or len(views[1]["pods"]) != want:
            r.error = f"ours mixed the edit into the running job: {views[1]}"
        self.record(r, f"{step}: live pods", views[0], views[1])
        outcomes = []
        for ns in (up_ns, ours_ns):
            for selector in ("followers", "all"):
                for pod in self.select(ns, case, selector):
                    self.h.client.patch(PODS, ns, pod["metadata"]["name"], {"metadata": {"annotations": {RUN: "0", EXIT: "0"}}})
            final = self.h.wait(lambda ns=ns: (lambda v: v if terminal(v) else None)(
                pv.status_view(self.h.job(ns, case.kind, case.name) or {}, ns)), what=f"{ns}/{case.name} finished")
            outcomes.append(next(c["type"] for c in final["conditions"] if c["status"] == "True"
                                 and c["type"] in ("Succeeded", "Failed")))
        self.record(r, f"{step}: outcome", outcomes[0], outcomes[1])

    def sync_new_image_and_worker(self, case: Case) -> None:
        """One more Worker and EDITED_IMAGE in every template, on both jobs (a merge patch, as a
        GitOps sync of the edit)."""
        specs = replica_specs(case.job)
        edit = {rtype: {"template": {"spec": {"containers": [
            {**c, "image": EDITED_IMAGE} for c in spec["template"]["spec"]["containers"]]}}} for rtype, spec in specs.items()}
        edit["Worker"]["replicas"] = int(specs["Worker"]["replicas"]) + 1
        field = KINDS[case.kind].facts.replica_specs
        for ns in self.both(case):
            self.h.client.patch(job_resource(KINDS[case.kind]), ns, case.name, {"spec": {field: edit}})

    def step_fix_before_start(self, r: Result, step: str) -> None:
        """Both jobs' pods fail to pull their image; the fixed image and one more Worker are synced
        (a merge patch). Upstream v1.9.4 leaves the stuck pods as they are and creates the new worker
        from the new spec beside them; ours, whose run never started, creates every pod again from the
        new spec (controller.jobs.run_records). Compared: each side's live pods, their shapes and phases."""
        case = r.case
        up_ns, ours_ns = self.both(case)
        want = self.expected_pods(case)

        def live(ns: str) -> list[dict[str, Any]]:
            return [p for p in self.h.pods(ns, case.kind, case.name) if not p["metadata"].get("deletionTimestamp")
                    and (p.get("status") or {}).get("phase") in ("Pending", "Running")]

        def pulling(ns: str) -> bool:
            pods = live(ns)
            return len(pods) == want and all(
                ((c.get("state") or {}).get("waiting") or {}).get("reason") in ("ErrImagePull", "ImagePullBackOff")
                for p in pods for c in (p.get("status") or {}).get("containerStatuses") or [{}])
        for ns in (up_ns, ours_ns):
            self.h.wait(lambda ns=ns: pulling(ns), what=f"{ns}/{case.name}'s pods failing to pull")
        self.sync_new_image_and_worker(case)

        def view(ns: str) -> dict[str, Any]:
            pods = live(ns)
            return {"pods": sorted(p["metadata"]["name"] for p in pods), "shapes": sorted(
                {(p["spec"]["containers"][0]["image"], next((e.get("value") for e in p["spec"]["containers"][0].get(
                    "env") or [] if e["name"] == "WORLD_SIZE"), None), p["status"].get("phase")) for p in pods})}

        views = self.h.settle(lambda: (view(up_ns), view(ours_ns)), self.keys(case), done=lambda a, b: len(
            a["pods"]) == want + 1 and b["shapes"] == [(EDITED_IMAGE, str(want + 1), "Running")] and len(
            b["pods"]) == want + 1, min_quiet=3.0)
        if views[1]["shapes"] != [(EDITED_IMAGE, str(want + 1), "Running")] or len(views[1]["pods"]) != want + 1:
            r.error = f"ours did not take the fix of a run that never started: {views[1]}"
        self.record(r, f"{step}: live pods", views[0], views[1])

    def step_delete_pod(self, r: Result, step: str, selector: str) -> None:
        case = r.case
        for ns in self.both(case):
            for pod in self.select(ns, case, selector):
                # at once (kubectl delete --force): kwok v0.8.0 would otherwise keep deleting the
                # pod's same-named replacement for a few seconds, differently on each side
                self.h.client.call("DELETE", PODS, verb="delete", namespace=ns, name=pod["metadata"]["name"],
                                   body={"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
        self.compare_children(r, step)

    def step_scale(self, r: Result, step: str, replicas: int) -> None:
        case = r.case
        for ns in self.both(case):
            self.h.client.patch(job_resource(KINDS[case.kind]), ns, case.name, {"spec": {"replicas": replicas}},
                                sub="scale")
        self.compare_children(r, step)

    def step_gone(self, r: Result, step: str) -> None:
        case = r.case
        keys = self.keys(case)
        with self.h.cond:
            self.h.settle(lambda: tuple(self.h._track(*k).deleted for k in keys), keys,  # type: ignore[arg-type]
                          done=lambda a, b: a and b, quiet=15.0, timeout=60.0)
            gone = [self.h._track(*k).deleted for k in keys]
        self.record(r, step, {"deleted": gone[0]}, {"deleted": gone[1]})

    # ------------------------------------------------------------------ helpers
    def phases(self, ns: str, case: Case) -> list[tuple[str, str, bool]]:
        return sorted((p["metadata"]["name"], STUCK if unschedulable(p) else (p.get("status") or {}).get("phase", ""),
                       bool(p["metadata"].get("deletionTimestamp"))) for p in self.h.pods(ns, case.kind, case.name))

    def expected_pods(self, case: Case) -> int:
        """How many pods the job's spec asks for now (upstream's defaults: 1 replica, MPI workers 0)."""
        job = self.h.job(self.up_ns(case), case.kind, case.name) or case.job
        return sum(int(spec["replicas"]) if spec.get("replicas") is not None else
                   (0 if case.kind == "MPIJob" and rtype == "Worker" else 1)
                   for rtype, spec in replica_specs(job).items())

    def select(self, ns: str, case: Case, selector: str) -> list[dict[str, Any]]:
        # a pod already told to end is not ended again (kwok may not have got to it yet)
        pods = [p for p in self.h.pods(ns, case.kind, case.name) if not p["metadata"].get("deletionTimestamp")
                and (p.get("status") or {}).get("phase") in ("Pending", "Running")
                and (p["metadata"].get("annotations") or {}).get(RUN) != "0"]
        if selector == "all":
            return pods
        if selector == "master":
            return [p for p in pods if p["metadata"]["name"] in (f"{case.name}-master-0", f"{case.name}-launcher")]
        if selector == "followers":  # every pod but those whose end decides the job's success
            deciders = DECIDERS[case.kind]
            types = {p["metadata"]["labels"].get(TYPE_LABEL) for p in self.h.pods(ns, case.kind, case.name)}
            if not types & set(deciders):
                return []
            return [p for p in pods if p["metadata"]["labels"].get(TYPE_LABEL) not in deciders]
        if selector == "worker":
            return [p for p in pods if p["metadata"]["name"].startswith(f"{case.name}-worker-")]
        return [p for p in pods if p["metadata"]["name"] == f"{case.name}-{selector}"]

    def agree(self, r: Result, step: str, up: Any, ours: Any) -> bool:
        return all(self.explain(r.case, Difference(step, path, a, b)) for path, a, b in pv.diff(up, ours))

    def compare_children(self, r: Result, step: str, *, created: bool = False) -> None:
        """After creation: once both made the same objects. Later: once they agree and both
        have done nothing for 3 s (a cleanup or a recreate is over)."""
        case = r.case
        up_ns, ours_ns = self.both(case)
        step = f"{step}: objects"

        def views() -> tuple[Any, Any]:
            return self.h.children(up_ns, case.kind, case.name), self.h.children(ours_ns, case.kind, case.name)

        # At creation a side that has made nothing yet is behind, not different: with the whole
        # table applied at once, upstream's queue once left two jobs without pods for over 30 s
        # (a full make test at load ~2); so there the comparison waits for up to 120 s of quiet.
        up, ours = self.h.settle(views, self.keys(case), min_quiet=0.0 if created else 3.0,
                                 quiet=120.0 if created else 30.0,
                                 done=lambda a, b: (bool(a) or not created) and self.agree(r, step, a, b))
        self.record(r, step, up, ours)

    def compare_status(self, r: Result, step: str, *, expect_change: bool, need: Any = None) -> None:
        """Once both statuses agree (and differ from the last step's, or meet `need`)."""
        case = r.case
        up_ns, ours_ns = self.both(case)
        before = r.last_status
        step = f"{step}: status"

        def views() -> tuple[Any, Any]:
            a, b = self.h.job(up_ns, case.kind, case.name), self.h.job(ours_ns, case.kind, case.name)
            return pv.status_view(a or {}, up_ns), pv.status_view(b or {}, ours_ns)

        def settled(a: Any, b: Any) -> bool:
            if not a["conditions"] or (expect_change and a == before) or (need is not None and not need(a)):
                return False
            return self.agree(r, step, a, b)

        up, ours = self.h.settle(views, self.keys(case), done=settled)
        r.last_status = up
        self.record(r, step, up, ours)

    def compare_history(self, r: Result) -> None:
        """The condition lists both sides went through, in the order each first appeared."""
        case = r.case
        seqs = []
        for ns in self.both(case):
            with self.h.cond:
                history = list(self.h._track(ns, case.kind, case.name).history)
            seq: list[Any] = []
            for view in history:
                conds = [(c["type"], c["status"], c["reason"]) for c in view["conditions"]]
                if conds and conds not in seq:
                    seq.append(conds)
            seqs.append(seq)
        # Each list in the order it first appeared. Ours may skip a state upstream passed
        # through (a write that came a little later, when the pods had moved on) or pass
        # through one again (kwok v0.8.0 sometimes deletes a replacement pod once more, and a
        # Restarting/Running cycle repeats), but must show nothing upstream never showed.
        if not is_subsequence(seqs[1], seqs[0]):
            self.record(r, "condition history", seqs[0], seqs[1])
        else:
            r.steps.append("condition history")

    def record(self, r: Result, step: str, up: Any, ours: Any) -> None:
        r.steps.append(step)
        for path, a, b in pv.diff(up, ours):
            r.differences.append(Difference(step, path, a, b))


STUCK = "<unschedulable>"
EDITED_IMAGE = "registry.example/train:2"  # edit-while-running: the new image


def unschedulable(pod: dict[str, Any]) -> bool:
    """kube-scheduler said no, or the pod asks for a scheduler that does not run here."""
    status = pod.get("status") or {}
    if status.get("phase") != "Pending" or pod["spec"].get("nodeName"):
        return False
    if pod["spec"].get("schedulerName", "default-scheduler") != "default-scheduler":
        return True
    # not for want of room (the nodes free up as pods end) but for good: a claim nobody created
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False" and "Insufficient" not in c.get("message", "")
               and "persistentvolumeclaim" in c.get("message", "") for c in status.get("conditions") or [])


def is_subsequence(short: list[Any], long: list[Any]) -> bool:
    rest = iter(long)
    return all(any(item == other for other in rest) for item in short)


def terminal(view: dict[str, Any]) -> bool:
    return any(c["type"] in ("Succeeded", "Failed") and c["status"] == "True" for c in view["conditions"])


def report(results: dict[str, Result], explain: Explain) -> str:
    """Every case, its time, the steps compared and each difference (explained or not)."""
    lines = []
    for cid, r in results.items():
        lines.append(f"== {cid} ({r.seconds:.1f} s, {len(r.steps)} comparisons){'  ' + r.case.note if r.case.note else ''}")
        if r.stuck:
            lines.append(f"   lifecycle not played: {r.stuck}")
        if r.error:
            lines.append(r.error)
        for d in r.differences:
            why = explain(r.case, d)
            lines.append(f"   {'known: ' + why.name if why else 'UNEXPLAINED'}: {d}")
    return "\n".join(lines) + "\n"
