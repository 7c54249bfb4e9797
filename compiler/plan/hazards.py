"""The hazard table: what the named controller and engine really do with each kind of change.

One table, keyed by the environment's setting (its `target` and `controller`; where the
target fixes who makes the pods, `PlanFacts.pod_maker`, that one: the Trainer under
`trainer-v2`, the mpi-operator under `mpi-operator`) and the aspect of the change
(`compiler.plan.aspects`), gives the hazards and the sentence a reviewer reads. An effect
about some run-policy fields or replica types only names them (`Effect.only`). Each entry was observed on
the real engines (tests/e2e/test_plan_engines.py and test_plan_kueue.py prove them; where an engine disagreed
with the issue or the contract, the entry follows the engine). The engine settings are the
ones `train-compile argocd` and `flux` write (prune on, Argo CD's self-heal off, Kueue's
fields ignored on queued jobs): `ENGINE_ASSUMPTIONS` says so in every plan.

`when` says in which states of the job the effect holds: `ACTIVE` (may be running: the
offline default whenever the old job exists), `SUSPENDED`, `FINISHED`, or every state;
`--live` drops what the job's state rules out (`compiler.plan.judge`).
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.gitops import argocd, flux
from compiler.targets import api, kubeflow_v1, mpi_operator, trainer_v2
from foundation.frameworks import mpi_operator as mpi_facts

ACTIVE = frozenset({"unknown", "Created", "Running", "Restarting"})
SUSPENDED = frozenset({"unknown", "Suspended"})
FINISHED = frozenset({"Succeeded", "Failed"})
PRESENT = ACTIVE | SUSPENDED  # the job exists and has not finished
ANY = frozenset({"unknown", "absent", "Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed"})

FLUX_INTERVAL = flux.Target(path=".").interval  # what `train-compile flux` writes unless told otherwise
ARGOCD_SELF_HEAL = argocd.Target(repo_url="", path=".").self_heal

V1, V2, MPI = kubeflow_v1.API.name, trainer_v2.API.name, mpi_operator.API.name  # a row per (target, controller)
UPSTREAM, OURS = "training-operator", "train-controller"
TRAINER, MPI_OPERATOR = trainer_v2.API.plan.pod_maker, mpi_operator.API.plan.pod_maker


@dataclass(frozen=True)
class Effect:
    hazards: tuple[str, ...]
    says: str  # a clause; {placeholders} are filled by compiler.plan.judge
    when: frozenset[str] = ANY
    only: frozenset[str] = frozenset()  # the run-policy fields or replica types it is about (empty: all)


_MIXED = Effect(("mixed-run",), "the upstream operator adds pods from the new spec beside the running ones, deletes"
                " pods past the new count and re-creates failed pods from the new template: one run, pods of two"
                " specs", ACTIVE)
# a change deferred to the next run (the sentence's "holds" and "shape" are the words the
# plan has always printed: the run spec, foundation.runs.spec)
_DEFERRED = Effect(("ignored-until-next-run",), "train-controller holds the change while the run lasts (its pods,"
               " re-created ones too, keep the run's shape); a suspend and resume, or a delete and create, starts"
               " a new run from the new spec", ACTIVE)
# the same change to a run that has not started (`plan --live`: no container of its pods ran yet,
# foundation.runs.started): nothing is held, as nothing of the run would be lost
_NOT_STARTED = Effect((), "its run has not started (no container of its pods has run): train-controller creates"
                      " its pods again from the new spec", ACTIVE)
_SCALE = Effect((), "the elastic run scales to {workers} workers (minNodes..maxNodes) and torchrun re-forms its"
                " rendezvous", ACTIVE)
_SUSPEND = Effect(("suspends-run",), "{controller} deletes its pods: the run stops; removing suspend later starts"
                  " it again from the beginning", ACTIVE)
_RESUME = Effect(("restarts-run",), "a resume: {controller} creates its pods from the head spec, the run starts"
                 " again from the beginning", SUSPENDED)
_SUSPENDED = Effect((), "it is suspended: the change applies when it resumes", SUSPENDED)
_RUN_POLICY = Effect((), "{controller} reads the run policy live: the run in progress uses the new {fields}")
_TTL = Effect(("reruns-finished",), "ttlAfterFinished: {controller} deletes the job {ttl} after it finishes and the"
              " engine creates it again, so it runs again (Flux at its next interval, every " + FLUX_INTERVAL + " by default;"
              " Argo CD at the environment's next sync); use cleanPods: All to free the pods and keep the job")
_METADATA = Effect((), "only the job's labels or annotations change: nothing that runs")
_MOVED = Effect((), "the spec moved from {moved}: only the job's source annotation changes")
_OTHERS = Effect((), "{others}: applied as written")
_CLAIM = Effect(("sync-refused",), "the API server refuses to change claim {claims} (a claim's spec is immutable but for"
                " a larger size of a bound claim whose StorageClass allows expansion): the engine's sync fails until"
                " the change is reverted or the claim deleted")
_QUEUE = Effect(("sync-refused",), "Kueue's webhook refuses a new queue-name on a job that is not suspended: the sync"
                " fails until the job is suspended or deleted", ACTIVE)
_KUEUE_RESHAPE = Effect(("restarts-run",), "Kueue stops the job (its pods are deleted) because its pod sets no longer"
                        " match the admitted Workload, re-queues it and starts it again from the beginning with the"
                        " new spec when admitted", ACTIVE)
_KUEUE_SUSPEND = Effect((), "Kueue owns the suspend of a queued job (the engines leave runPolicy.suspend to it): the"
                        " change does not reach the job")
_FINISHED = Effect(("ignored-until-next-run",), "it has finished ({state}): the change is stored and changes nothing"
                   " that runs; a new run needs a new name", FINISHED)
_SCOPE_OURS = Effect((), "from its next run a failed pod {scope_does}")

RULES: dict[tuple[str, str], dict[str, Effect]] = {
    (V1, UPSTREAM): {
        "pod-spec": _MIXED, "elastic-scale": _SCALE, "suspend": _SUSPEND, "resume": _RESUME,
        "suspended": _SUSPENDED, "run-policy": _RUN_POLICY, "ttl": _TTL, "metadata": _METADATA,
        "moved": _MOVED, "others": _OTHERS, "claim": _CLAIM, "queue": _QUEUE, "kueue-reshape": _KUEUE_RESHAPE,
        "kueue-suspend": _KUEUE_SUSPEND, "finished": _FINISHED,
    },
    (V1, OURS): {
        "pod-spec": _DEFERRED, "elastic-scale": _SCALE, "suspend": _SUSPEND, "resume": _RESUME,
        "suspended": _SUSPENDED, "run-policy": _RUN_POLICY, "ttl": _TTL, "metadata": _METADATA,
        "moved": _MOVED, "others": _OTHERS, "claim": _CLAIM, "queue": _QUEUE, "kueue-reshape": _KUEUE_RESHAPE,
        "kueue-suspend": _KUEUE_SUSPEND, "finished": _FINISHED, "restart-scope": _SCOPE_OURS,
        "not-started": _NOT_STARTED,
    },
    (V2, TRAINER): {
        "immutable": Effect(("sync-refused",), "Trainer v2.3 holds spec.{immutable} immutable: the API server refuses"
                            " the update and the engine's sync fails until the TrainJob is deleted (or renamed)"),
        "runtime-patches": Effect(("sync-refused",), "Trainer's webhook refuses a change of spec.runtimePatches (the"
                                  " pods' labels, annotations, placement) unless the TrainJob was suspended: the"
                                  " engine's sync fails until it is suspended first or deleted", ACTIVE | FINISHED),
        "suspend": Effect(("suspends-run",), "the Trainer suspends its JobSet: the pods are deleted and the run stops",
                          ACTIVE),
        "resume": Effect(("restarts-run",), "a resume: the Trainer lets its JobSet run again, the run starts again"
                         " from the beginning", SUSPENDED),
        "suspended": _SUSPENDED, "metadata": _METADATA, "moved": _MOVED, "others": _OTHERS, "claim": _CLAIM,
        "queue": _QUEUE, "kueue-suspend": _KUEUE_SUSPEND, "finished": _FINISHED,
        # restartScope: job's own runtime: the Trainer builds a job's JobSet from it once, at the start
        # (keeping a <job>-runtime-snapshot ConfigMap), so a run in progress keeps the old one
        "runtime": Effect(("ignored-until-next-run",), "the Trainer built the running job's JobSet from its"
                          " TrainingRuntime {runtime} when the run started: the new runtime (its restart limit,"
                          " its pods) is stored and does not reach the run in progress", ACTIVE),
    },
}

# The mpi-operator v0.8.0 (testworld/FACTS-mpi-operator.md, proven by tests/e2e): it makes
# workers once, never updates them, makes a deleted one again from the current spec; its
# launcher is a batch Job made once from the launcher's template and runPolicy, never updated.
_MPI_LAUNCHER_JOB = "the mpi-operator made the launcher Job once"
RULES[(MPI, MPI_OPERATOR)] = {
    "pod-spec": Effect(("mixed-run",), "the mpi-operator makes added workers, and any worker it makes again, from the"
                       " new spec beside the running ones (a running mpirun does not use added hosts), deletes the"
                       " highest-indexed workers on a scale-down (the run loses their ranks) and rewrites the"
                       " hostfile; running workers keep their old pods: one run, pods of two specs", ACTIVE),
    "pod-spec-held": Effect(("ignored-until-next-run",), f"{_MPI_LAUNCHER_JOB}, from the launcher's template, and"
                            " never updates it, not even on a resume (which brings only its labels, annotations, node"
                            f" selector, tolerations and scheduling gates): this {mpi_facts.KIND}'s launcher keeps its"
                            " old pod template; a new name runs the new one", PRESENT, frozenset({mpi_facts.LAUNCHER})),
    "suspend": Effect(("suspends-run",), "the mpi-operator deletes the workers and suspends the launcher Job, whose pod"
                      " is deleted: the run stops; removing suspend later starts it again from the beginning", ACTIVE),
    "resume": Effect(("restarts-run",), "a resume: the mpi-operator makes the workers from the head spec and lets the"
                     " launcher Job run again: the run starts again from the beginning", SUSPENDED),
    "run-policy": Effect((), f"the mpi-operator reads {{fields}} from the {mpi_facts.KIND} itself, as it goes"),
    "run-policy-held": Effect(("ignored-until-next-run",), f"{_MPI_LAUNCHER_JOB} with {{fields}} and never updates"
                              f" it: no run of this {mpi_facts.KIND} uses the change (a new name does)", PRESENT,
                              frozenset(mpi_facts.LAUNCHER_JOB_POLICY)),
    "ttl": Effect((), "ttlAfterFinished is the launcher Job's: {ttl} after the run it and its pod (and the log) are"
                  f" deleted and the {mpi_facts.KIND} stays, so nothing runs again"),
    "suspended": _SUSPENDED, "metadata": _METADATA, "moved": _MOVED, "others": _OTHERS, "claim": _CLAIM,
    "queue": _QUEUE, "kueue-reshape": _KUEUE_RESHAPE, "kueue-suspend": _KUEUE_SUSPEND, "finished": _FINISHED,
}

KILLS = Effect(("kills-run",), "the engine prunes {old} with its pods: a run in progress is killed", PRESENT)
RESTARTS = Effect(("restarts-run",), "{new} starts a new run from the beginning")
CONTROLLER_NAMES = {UPSTREAM: "the upstream operator", OURS: "train-controller", TRAINER: "the Trainer",
                    MPI_OPERATOR: "the mpi-operator"}

ENGINE_ASSUMPTIONS = (
    "engines as train-compile argocd and flux configure them: prune on, Argo CD's self-heal "
    + ("on" if ARGOCD_SELF_HEAL else "off") + ", Kueue's fields (suspend, flavor) ignored on queued jobs only",
    "Flux re-applies git at every interval; Argo CD syncs an environment when a commit changes it",
    "other settings change the outcome: with train-compile flux --create-only no update reaches an existing"
    " job (only creates and deletes do); with train-compile argocd --self-heal a job deleted by its TTL is created"
    " again at once",
)
# What one refused object does to the rest of its environment's sync (observed on both engines).
REFUSED_SYNC = ("a refused object fails the environment's sync. Flux: its server-side dry run of the whole"
                " environment fails first, so none of this commit's changes to the environment are applied and"
                " nothing is pruned, nor of any later commit, until the refused change is reverted or its object"
                " deleted. Argo CD: the sync operation fails on that object; the rest of the environment is"
                " applied and pruned as usual, and the Application stays OutOfSync")


def setting(target: str, controller: str) -> tuple[str, str]:
    """The row of `RULES` for an environment: its target, and the controller that makes the
    pods (the target's own when it fixes one, compiler.targets PlanFacts.pod_maker)."""
    return (target, api(target).plan.pod_maker or controller)
