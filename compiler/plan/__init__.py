"""`train-compile plan`: what a merge will do to the runs, said before it is merged.

Where it sits: above the GitOps generators (it reads the engine settings they write, one
fact in one place) and below the CLI, which reads the cluster for `--live` (only
`compiler/cli/cluster.py` may): `build.make` hands the CLI's reader the lists it needs and
gets plain objects back, so everything here is pure but for `revision` (git, read-only).
The flow, one module each:

    revision  the base: a git revision's files, only those the head changed (with the project file)
    sides     both sides compiled by the head's compiler; per environment, one `Job` per namespace/name
    matching  base and head jobs paired: create, delete, rename, update, unchanged
    fields    the spec leaves that changed, with their position in the head spec
    aspects   what changed in the compiled objects (replica counts, templates, suspend, TTL ...),
              read as the job's target says (compiler.targets PlanFacts); whether the run
              spec changed is train-controller's own rule (foundation.runs.spec)
    hazards   the table: per target, controller and aspect, what the named controller and engine do
    live      a job's state as the cluster has it (foundation.runs.state, status' too); the
              hazards its state rules out
    gpus      GPUs and GPU-hours per environment, namespace and queue
    build     the plan (`model`) from all of the above: `make`, the one entry
    render_*  text, markdown, json and GitHub annotations
"""
