"""Which exits of a training pod are retried and which are final: upstream's split, once.

The Training Operator decides a failed pod's fate by its replica's `restartPolicy` (semantics
§6): `OnFailure` and `Always` retry any failure, `Never` none, and `ExitCode` splits the exit
codes: 1-127 are the program's own verdict (a bug, bad input: running it again gives the same
answer), so the job fails; 128 and above are a signal (`128 + n`: an OOM kill, a preemption, a
node going away) or upstream's "unknown" sentinel 0xbeef, so the pod is retried.

Where it sits: foundation, below both products. train-controller applies it to every failed
pod (controller.jobs.diff under restart scope pod, controller.jobs.restarts under scope job),
and the compiler writes the same split into Trainer v2's JobSet failure policy for
`policy.restartScope: job` (compiler.targets.trainer_v2_restarts).
"""

from __future__ import annotations

from typing import Optional

PERMANENT = range(1, 128)  # under restartPolicy ExitCode: the job fails
RETRY_ANY = ("OnFailure", "Always")
EXIT_CODE = "ExitCode"


def retryable_code(code: int) -> bool:
    """Under `ExitCode`: a signal or the unknown sentinel, not the program's own exit (0 and
    1-127 fail the job, as upstream's check `exitCode >= 128` has it)."""
    return code >= 128


def retries(policy: Optional[str], code: Optional[int]) -> bool:
    """Whether a pod of a replica with restart policy `policy` that ended with `code` (None: no
    code known, e.g. the pod was deleted) is run again rather than failing the job."""
    if policy in RETRY_ANY:
        return True
    return policy == EXIT_CODE and (code is None or retryable_code(code))
