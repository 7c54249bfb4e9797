"""trainforge's own annotations: written by the compiler into git, read in the cluster.

Below every layer so the compiler (which writes them), the controller (which acts on them)
and the CLI's cluster reader (`plan --live`, `status`, `logs`, which match live objects to
specs through them) spell each key once. Upstream's names are in `schemas.upstream`; the
controller's marks on the children it owns (pods of a previous run, the run's revision)
stay in `controller/`, since nothing else writes or reads them.
"""

from __future__ import annotations

# The spec a compiled object came from: its path from the git repository's root (the path
# given, outside a repository). On the objects' own metadata only, never on pod templates,
# so moving a file restarts no pod; no line number, so an edit elsewhere in the file is no drift.
SOURCE = "trainforge.dev/source"

# `policy.restartScope: job` of a kubeflow-v1 job under train-controller: a retryable exit of
# any pod restarts every pod of the job as one new attempt. Absent means `pod` (upstream's).
RESTART_SCOPE = "trainforge.dev/restart-scope"
RESTART_SCOPE_JOB = "job"
